"""Real browser: the engine's code beside the Expression explorer's graph, its highlighted line moving with Step."""
from __future__ import annotations

import re

import pytest
from browser_kit import wait_drawn, wait_stable

pytestmark = pytest.mark.browser


def _state(page) -> tuple[list[str], list[str]]:
    """(highlighted line numbers, block titles) of the code panel as the browser shows it."""
    panel = page.locator('[data-testid="code-panel"]').first
    panel.wait_for()
    lines = panel.locator(".l.hl").evaluate_all("els => els.map(e => e.getAttribute('data-line'))")
    titles = panel.locator(".adx-code .t").all_inner_texts()
    return lines, titles


def test_code_panel_highlight_moves_as_step_is_pressed(page, app_url, wait_idle, shot):
    page.goto(f"{app_url}/Expression_explorer?step=7")  # step 7 (links count from 1): the backward pass takes f = x1 + x6
    wait_idle(page)
    lines0, titles0 = _state(page)
    assert titles0[0].startswith("engine.autodiff.propagate") and any("Add.vjp" in t for t in titles0)
    assert len(lines0) >= 4
    # the highlighted lines are the engine's source as the file has it, and the ones doing the work: the VJP
    # call and the addition to the running total (twice: f sends to x1 and to x6), never an observer call
    texts = page.locator('[data-testid="code-panel"] .l.hl').all_inner_texts()
    assert any("node.chain_rule(adjoint)" in t for t in texts)
    assert any("add(adjoints.get(pid), contribution)" in t and "×2" in t for t in texts)
    assert not any("observer" in t for t in texts)
    # slide 27's backward_pass: the output's step starts from outgrads = {end_node: g}; f sends to x1 and x6
    lecture = page.locator('[data-testid="code-lecture"] .l.hl').all_inner_texts()
    assert any("outgrads = {end_node: g}" in t for t in lecture)
    assert any("add_outgrads(" in t and "×2" in t for t in lecture)
    assert page.get_by_test_id("code-panel-heading").inner_text() == "The engine's own code (what ran), not the slide's"
    shot(page, "code_panel_step7")

    page.get_by_role("button", name="Step").click()
    wait_idle(page)
    lines1, titles1 = _state(page)
    assert any("Exp.vjp" in t for t in titles1) and lines1 != lines0  # x6 = exp(x5): its VJP, other lines
    assert re.search(r"step=8", page.url)

    for _ in range(3):  # on to x1, a leaf: accumulate_derivative instead of a VJP
        page.get_by_role("button", name="Step").click()
        wait_idle(page)
    lines2, titles2 = _state(page)
    assert any("accumulate_derivative" in t for t in titles2) and lines2 != lines1
    highlighted = page.locator('[data-testid="code-panel"] .l.hl').all_inner_texts()
    assert any("self.grad =" in t for t in highlighted)
    assert any("node.accumulate_derivative(adjoint)" in t for t in highlighted)  # the walk's own line
    lecture = page.locator('[data-testid="code-lecture"] .l.hl').all_inner_texts()
    assert len(lecture) == 1 and "outgrad = outgrads.pop(node)" in lecture[0]  # a leaf: its gradient is what it pops


def test_a_narrow_code_panel_wraps_its_title_instead_of_cutting_it(new_page, app_url, wait_idle):
    """Backprop orders on a 1280 x 720 laptop (not presenting): two orders side by side, each code panel about 400 px
    wide; the title row ("engine.strategies.BfsFirstTouch.run · engine/strategies.py") wraps inside its panel, where
    it ran out of the panel and scrolled sideways, its file name cut ("engine/strat")."""
    pg = new_page(viewport={"width": 1280, "height": 720})
    pg.goto(f"{app_url}/Backprop_orders?step=11")
    wait_idle(pg)
    pg.locator(".adx-code .t").first.wait_for()
    js = """() => [...document.querySelectorAll('.adx-code')].filter(b => b.offsetWidth > 0)
        .map(b => [b.querySelector('.t') ? b.querySelector('.t').innerText : '', b.scrollWidth - b.clientWidth])"""
    try:   # both orders' panels drawn and laid out (a loaded machine draws the second one later)
        pg.wait_for_function(f"() => {{ const v = ({js})(); return v.length >= 2 && v.every(x => x[1] <= 1); }}",
                             timeout=120_000)
    except Exception:  # noqa: BLE001 - the assertion below says what overflowed
        pass
    overflow = pg.evaluate(js)
    assert overflow and all(extra <= 1 for _, extra in overflow), overflow
    titles = pg.locator(".adx-code .t").all_inner_texts()
    assert any("engine/strategies.py" in t for t in titles), titles


# every row of a scrolling code panel whole or out of view (tests/browser/test_first_screen.py's check)
from test_first_screen import ROWS_WHOLE_JS  # noqa: E402

PANELS_JS = """() => [...document.querySelectorAll('.adx-scroll')].map(b => [b.getAttribute('data-testid'),
    b.style.maxHeight, b.getBoundingClientRect().top])"""
# the panel's own quick watch (every frame) ends after 300 frames in which nothing moved: 400 frames later it has
FRAMES_JS = """(n) => new Promise(r => { let k = 0; const f = () => (++k >= n ? r(true) : requestAnimationFrame(f));
                                        requestAnimationFrame(f); })"""


@pytest.mark.parametrize("url", ["Expression_explorer?present=1&step=1", "Expression_explorer?present=1&step=14"])
def test_a_code_panels_window_ends_on_a_whole_row_after_the_window_changes(new_page, app_url, wait_idle, url):
    """Steps 1 and 14 on a projector (no lit row: the window shows the walk from its top), then the browser window
    resized after the page has settled (1366 x 768 to 1366 x 657, a window with the browser's bars: the page is laid
    out wider, its rows wrap anew): the panels' windows are measured again and end on a whole row. Measured once,
    the slide's panel sliced a row in half at its bottom edge."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    pg.goto(f"{app_url}/{url}")
    wait_drawn(pg)
    wait_idle(pg)
    wait_stable(pg, f"({PANELS_JS})()", quiet_ms=1000)
    assert pg.evaluate(ROWS_WHOLE_JS) == []
    pg.evaluate(FRAMES_JS, 400)   # past the quick watch: the change below is seen by the lasting one
    for w, h in ((1366, 657), (1366, 768)):
        pg.set_viewport_size({"width": w, "height": h})
        try:
            pg.wait_for_function(f"() => ({ROWS_WHOLE_JS})().length === 0", timeout=20_000)
        except Exception:  # noqa: BLE001 - the assertion says which row was cut
            pass
        assert pg.evaluate(ROWS_WHOLE_JS) == [], f"{url} at {w} x {h}"


# every place a code line wraps between two letters of one name: [the two characters, the name, whether that name
# alone is wider than its column (then it must break inside)]
MID_WORD_JS = r"""() => { const out = [];
  const cells = [...document.querySelectorAll('.adx-code .c')].filter(c => c.offsetWidth > 0);
  for (const c of cells) {
    const text = c.textContent; const walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
    let node, prev = null, at = 0;
    while ((node = walker.nextNode())) {
      for (let i = 0; i < node.data.length; i++, at++) {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        const box = r.getClientRects()[0]; if (!box) continue;
        if (prev && box.top > prev.top + 2 && /\w/.test(node.data[i]) && /\w/.test(prev.ch)) {
          const word = text.slice(0, at).match(/[\w.()\[\]]*$/)[0] + text.slice(at).match(/^[\w.()\[\]]*/)[0];
          const probe = document.createElement('span'); probe.textContent = word; probe.style.whiteSpace = 'pre';
          c.appendChild(probe); const wide = probe.getBoundingClientRect().width > c.clientWidth; probe.remove();
          out.push([prev.ch + '|' + node.data[i], word, wide]);
        }
        prev = {top: box.top, ch: node.data[i]};
      } } }
  return out; }"""


@pytest.mark.parametrize("url", ["Backprop_orders?present=1&step=8", "Your_HW2_code?present=1&step=11"])
def test_code_lines_wrap_at_spaces_and_punctuation_not_inside_a_name(new_page, app_url, wait_idle, url):
    """A projector at 1366 x 768: Backprop orders' code columns hold about 25 characters at 23 px, and
    "node.accumulate_derivative(adjoint)" wrapped as "…(adjoin|t)" (overflow-wrap: anywhere). A line wraps at its
    spaces, after a dot between names or an opening bracket; inside a name only where that name is wider than
    the whole column."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    pg.goto(f"{app_url}/{url}")
    wait_drawn(pg)
    wait_idle(pg)
    pg.locator(".adx-code .c").first.wait_for()
    wait_stable(pg, "document.querySelectorAll('.adx-code .c').length", quiet_ms=1000)
    broken = [b for b in pg.evaluate(MID_WORD_JS) if not b[2]]
    assert broken == [], broken
