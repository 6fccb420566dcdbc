"""Presentation mode in a real browser (headless Debian Chromium at 1920 x 1080, the app served by `streamlit run`).

What a class reads must be readable from the back row: every visible text on every page is at least
18 px, measured as Chromium's computed font size (times the on-screen scale of an SVG text, so a
Graphviz chart shrunk to fit its column counts at the size it is drawn); and the graph, the step's
caption and the step buttons fit the first 1080 px without scrolling.
"""
from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from browser_kit import wait_drawn, wait_stable

pytestmark = pytest.mark.browser

MIN_PX = 18
WIDTH, HEIGHT = 1920, 1080

# every visible text under the floor ``minPx``: its element's computed font size, scaled by the SVG transform where
# there is one. ``onScreen``: only the first screen's texts in the page's main part, in px as drawn on the screen
# (the computed size times the scale the presentation page is drawn at: 1366 / 1920 on a 1366 x 768 projector),
# else every text of the page at its computed size
TEXT_SIZES_JS = """([minPx, onScreen]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const fit = onScreen ? app.getBoundingClientRect().width / app.offsetWidth : 1;
  const root = onScreen ? document.querySelector('[data-testid="stMain"]') : document.body;
  const skip = 'style,script,noscript,title,.hoverlayer';
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    const text = walker.currentNode.textContent.trim();
    if (!text || !el || seen.has(el)) continue;
    seen.add(el);
    if (el.closest(skip)) continue;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || (onScreen && (r.top >= innerHeight || r.bottom <= 0))) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement && el.getScreenCTM && el.getScreenCTM()) {
      const m = el.getScreenCTM();
      px *= Math.sqrt(m.a * m.a + m.b * m.b);
    } else {
      px *= fit;
    }
    if (px < minPx - 0.05) {
      const host = el.closest('[data-testid]');
      out.push({text: text.slice(0, 50), px: Math.round(px * 10) / 10,
                where: host ? host.getAttribute('data-testid') : el.tagName});
    }
  }
  return out;
}"""


def texts_under(pg, min_px: float, on_screen: bool = False) -> list[dict]:
    """:data:`TEXT_SIZES_JS`'s reading, once it has stopped changing (a chart redrawn as its tab or column is laid
    out can show Plotly's defaults for a moment)."""
    args = [min_px, on_screen]
    small = pg.evaluate(TEXT_SIZES_JS, args)
    if small:
        wait_stable(pg, f"({TEXT_SIZES_JS})({json.dumps(args)})", quiet_ms=1000)
        small = pg.evaluate(TEXT_SIZES_JS, args)
    return small


# what must be on the first screen: the whole graph, the step's caption, the step buttons (where the page
# steps); "graph_top": the graph starts on the first screen (a page without steps, its graph beside code)
STEPPED = ("graph", "caption", "buttons")
PAGES = {
    "": (),
    "Expression_explorer": STEPPED,
    "Backprop_orders": STEPPED,
    "Gradient_check": ("graph",),
    "Forward_vs_reverse": STEPPED,
    "Network_explorer": STEPPED,
    "Sentiment_training": (),
    "Static_vs_dynamic": ("graph_top",),
    "Learning_problem": (),
    "Topological_sort": (),
    "Tensors_and_storage": (),
    "Exercises": (),
    "Cross_entropy_on_logits": (),
}
STEP_BUTTONS = ("Start", "Back", "Play", "Step", "End")


@pytest.fixture
def big_page(new_page):
    return new_page(viewport={"width": WIDTH, "height": HEIGHT})


def open_presenting(pg, url: str, wait_idle) -> None:
    pg.goto(url)
    wait_drawn(pg)  # charts draw after the script run ends
    wait_idle(pg)


def small_texts(pg, wait_idle) -> list[dict]:
    """Texts below the floor once the page has settled (a chart redrawn as its tab or column is laid out
    can show Plotly's defaults for a moment: the reading must have stopped changing before it counts)."""
    if pg.evaluate(TEXT_SIZES_JS, [MIN_PX, False]):
        wait_idle(pg)
    return texts_under(pg, MIN_PX)


def first_screen_boxes(pg, wants: tuple[str, ...]) -> dict[str, dict]:
    main = pg.locator('[data-testid="stMain"]')
    boxes = {}
    if "graph" in wants or "graph_top" in wants:
        graph = main.locator('.js-plotly-plot, [data-testid="stGraphVizChart"]').first
        box = graph.bounding_box()
        if box is not None and "graph_top" in wants:  # its first 200 px
            box = {**box, "height": min(box["height"], 200)}
        boxes["graph"] = box
    if "caption" in wants:
        boxes["caption"] = main.get_by_text(re.compile(r"^Step \d+ of \d+")).first.bounding_box()
    if "buttons" in wants:
        for name in STEP_BUTTONS:
            boxes[name] = main.get_by_role("button", name=re.compile(rf"^\W*{name}\b")).first.bounding_box()
    return boxes


@pytest.mark.parametrize("path", list(PAGES))
def test_presentation_text_is_large_and_the_stepper_fits_one_screen(big_page, app_url, wait_idle, shot, path):
    open_presenting(big_page, f"{app_url}/{path}?present=1", wait_idle)
    assert big_page.locator('[data-testid="stException"]').count() == 0
    small = small_texts(big_page, wait_idle)
    fonts = big_page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                              ".map(el => el.layout && el.layout.font && el.layout.font.size)")
    assert small == [], f"{len(small)} texts below {MIN_PX} px on /{path}: {small[:10]} (chart fonts {fonts})"
    boxes = first_screen_boxes(big_page, PAGES[path])
    for what, box in boxes.items():
        assert box is not None, f"{what} not drawn on /{path}"
        assert box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT + 0.5, \
            f"{what} of /{path} is not within the first {HEIGHT} px: {box}"
    shot(big_page, f"presentation_1920_{path or 'Home'}")


def test_presentation_stepped_moments_keep_large_text(big_page, app_url, wait_idle):
    """Later steps add tables and verdicts: they obey the floor too."""
    for url in ("Expression_explorer?step=10&present=1", "Backprop_orders?step=11&present=1",
                "Forward_vs_reverse?step=7&present=1",
                "Expression_explorer?expr=f+%3D+relu(x1+-+3)&at=x1+%3D+3&step=7&present=1"):   # its last step
        open_presenting(big_page, f"{app_url}/{url}", wait_idle)
        if "relu" in url:
            big_page.get_by_role("tab", name="Table of nodes").click()
            wait_drawn(big_page)
        small = small_texts(big_page, wait_idle)
        assert small == [], f"{url}: {small[:10]}"


def test_keyboard_steps_right_after_a_preset_is_chosen(big_page, app_url, wait_idle):
    open_presenting(big_page, f"{app_url}/Expression_explorer?present=1", wait_idle)
    combo = big_page.get_by_role("combobox", name=re.compile("Preset"))
    combo.click()
    big_page.get_by_role("option", name=re.compile(r"^x·x·x")).click()
    wait_idle(big_page)
    focus = "document.activeElement === document.body || document.activeElement === null"
    wait_stable(big_page, focus, quiet_ms=300)   # the preset's run has given the focus back, and keeps it there
    assert big_page.evaluate(focus)
    header = big_page.get_by_text(re.compile(r"^Step \d+ of \d+")).first
    assert header.inner_text().startswith("Step 1 of")
    big_page.keyboard.press("ArrowRight")  # no click on the page first
    wait_idle(big_page)
    assert big_page.get_by_text(re.compile(r"^Step \d+ of \d+")).first.inner_text().startswith("Step 2 of")
    assert "step=2" in big_page.url


def test_the_exercise_answer_labels_are_text_sized(big_page, app_url, wait_idle):
    """Exercises on a projector: each answer box's label is a part of the exercise ("f′(x0) =", "x1 =") and the
    reveal switch says what it shows; they are the page's text size (24 px at 1920 x 1080), not Streamlit's widget
    label (18 px, 13 px once a 1366 x 768 screen scales the page)."""
    open_presenting(big_page, f"{app_url}/Exercises?present=1", wait_idle)
    main = big_page.locator('[data-testid="stMain"]')
    for text in ("f′(x0) =", "x1 =", "Reveal the worked steps"):
        el = main.get_by_text(text, exact=True).first
        px = el.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert px >= 24 - 0.05, (text, px)


SMALL_SCREEN_PAGES = ("Cross_entropy_on_logits?present=1", "Exercises?present=1",
                      "Exercises?present=1&ex=fan_out&reveal=1", "Exercises?present=1&ex=static_counts&reveal=1",
                      "Your_HW2_code?present=1", "Your_HW2_code?present=1&step=7", "Your_HW2_code?present=1&step=14",
                      "?present=1", "Learning_problem?present=1", "Learning_problem?present=1&step=12",
                      "Learning_problem?present=1&lr=32&step=6",
                      "Expression_explorer?present=1", "Expression_explorer?present=1&step=5",
                      "Expression_explorer?present=1&step=7", "Expression_explorer?present=1&step=10",
                      "Expression_explorer?present=1&step=9&" + urlencode({"expr": "f = 1 / (1 + exp(-(w * x)))",
                                                                          "at": "w = 0.5, x = 2"}),
                      "Topological_sort?present=1", "Topological_sort?present=1&step=4",
                      "Topological_sort?present=1&step=7",
                      "Gradient_check?present=1")


@pytest.mark.parametrize("url", SMALL_SCREEN_PAGES)
def test_the_first_screen_reads_16_px_on_a_1366_projector(new_page, app_url, wait_idle, shot, url):
    """Cross-entropy, Exercises and Your HW2 code on a 1366 x 768 projector: the page is the 1920 x 1080 layout
    drawn 0.711 times as large, so every text the class reads on the first screen (graphs, code, captions,
    labels, tables) is laid out at 23 px or more and reaches 16 px on that screen."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    open_presenting(pg, f"{app_url}/{url}", wait_idle)
    assert pg.locator('[data-testid="stException"]').count() == 0
    small = texts_under(pg, 16, on_screen=True)
    shot(pg, "presentation_1366_" + re.sub(r"\W+", "_", url))   # the picture of a failure too
    assert small == [], f"{len(small)} texts under 16 px on screen at /{url}: {small[:10]}"


# every visible text's glyph boxes (a Range over each text node, not its element's box: a heading's element spans the
# row its text leaves empty) and every chart's box in the main part, that the Previous / Home / Next box overlaps
NAV_OVER_JS = """() => {
  const nav = document.querySelector('[class*="st-key-adx_present_nav"]');
  if (!nav) return null;
  const n = nav.getBoundingClientRect();
  const hit = r => r.width > 0 && r.height > 0 && r.left < n.right && r.right > n.left && r.top < n.bottom
                   && r.bottom > n.top;
  const out = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || !el || nav.contains(el) || el.closest('style,script,noscript')) continue;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (hit(r)) { out.push(node.textContent.trim().slice(0, 40)); break; }
    }
  }
  for (const c of main.querySelectorAll('[data-testid="stPlotlyChart"], [data-testid="stGraphVizChart"], img')) {
    if (hit(c.getBoundingClientRect())) out.push('chart ' + (c.getAttribute('data-testid') || c.tagName));
  }
  return {nav: [n.left, n.top, n.right, n.bottom], over: out};
}"""


MAIN_JS = "document.querySelector('[data-testid=\"stMain\"]')"


@pytest.mark.parametrize("path", ["Expression_explorer", "Learning_problem", "Gradient_check"])
@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])
def test_the_page_links_never_cover_text_or_figures(new_page, app_url, wait_idle, path, size):
    """Presentation mode's Previous / Home / Next box: on the first screen and with the page scrolled to its end
    (where the box, pinned to the screen, lay over the text scrolled beneath it), no text and no figure under it."""
    pg = new_page(viewport={"width": size[0], "height": size[1]})
    open_presenting(pg, f"{app_url}/{path}?present=1", wait_idle)
    for where in ("top", "bottom"):
        if where == "bottom":
            pg.evaluate(f"() => {{ const m = {MAIN_JS}; m.scrollTop = m.scrollHeight; }}")
            wait_stable(pg, f"{MAIN_JS}.scrollTop", quiet_ms=300)
            assert pg.evaluate(f"{MAIN_JS}.scrollTop") > 0, f"/{path} did not scroll"
        seen = pg.evaluate(NAV_OVER_JS)
        assert seen is not None, f"no page links on /{path}"
        assert seen["over"] == [], f"/{path} at {size}, scrolled to the {where}: the page links {seen['nav']} " \
                                   f"cover {seen['over'][:10]}"
