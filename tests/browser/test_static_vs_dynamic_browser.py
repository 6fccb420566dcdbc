"""Real-browser test of the "Static vs dynamic" page."""
from __future__ import annotations

import re

import pytest
from browser_kit import wait_drawn, wait_stable

pytestmark = pytest.mark.browser

# fills of the static graph's node kinds (explorer.static_vs_dynamic.COLOURS) as the browser reports them
PLACEHOLDER, VARIABLE = "rgb(191, 219, 254)", "rgb(187, 247, 208)"
FILLS = """(i) => { const el = document.querySelectorAll('[data-testid="stPlotlyChart"]')[i];
  const out = {}; if (!el) return out;
  el.querySelectorAll('path, rect').forEach(p => { const f = p.style.fill || p.getAttribute('fill');
    if (f) out[f] = (out[f] || 0) + 1; });
  return out; }"""


def test_static_page_runs_feeds_and_draws(page, app_url, wait_idle, shot):
    page.goto(f"{app_url}/Static_vs_dynamic")
    # the first run imports and lays out four graphs: wait for its result, not only for a quiet moment
    page.get_by_text(re.compile(r"Evaluated \d+ of")).first.wait_for()
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert "Evaluated 6 of" in main.inner_text()
    # the graph renderer's figures: the graph, the loop, folding before / after
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.filter(has_text="step 6: h6").first.locator(".main-svg").first.wait_for()   # the loop, drawn
    first = charts.first
    assert first.locator("g.textpoint").count() >= 10     # node texts drawn
    assert "matmul = x @ W" in first.inner_text()
    shot(page, "static_default")

    # leave x out of the feed dict: the run fails and names the placeholder
    page.locator('[data-testid="stMultiSelect"]').first.get_by_role("button", name=re.compile("Remove|Clear")).first.click()
    wait_idle(page)
    assert "placeholder 'x'" in main.inner_text()
    shot(page, "static_unfed")

    # the unrolled-loop table and the constant-folding section are there
    text = main.inner_text()
    assert "Control flow: a recurrent step unrolled" in text and "Constant folding" in text
    charts = page.locator('[data-testid="stPlotlyChart"]')
    # the eager run's recorded graph, and the data-dependent branch: one graph per input, each its own branch
    assert "The graph the eager run recorded" in text and "A branch that depends on the data" in text
    # (found by what they draw: a section added above them must not move what this test reads)
    assert charts.filter(has_text="relu(v1)").count() >= 1 and charts.filter(has_text="v2 = −v1").count() >= 1
    assert "if h.sum() > 0" in text and "control flow" in text
    for chart, name in ((charts.nth(1), "static_eager_graph"), (charts.filter(has_text="relu(v1)").first, "static_branch_pos"),
                        (charts.filter(has_text="step 6: h6").first, "static_loop"),
                        (charts.nth(-2), "static_folding_before"), (charts.nth(-1), "static_folding_after")):
        chart.screenshot(path=str(shot(page, name)))  # element shots scroll the chart into view
    page.get_by_role("button", name="Trace the HW2 step and replay it 20 times").click()
    page.get_by_text(re.compile(r"identical to eager mode, bit for bit")).wait_for()
    wait_idle(page)
    assert "bit for bit: True" in main.inner_text()
    shot(page, "static_compiled")
    page.get_by_text(re.compile(r"^The captured step as a static graph")).click()
    wait_idle(page)
    page.locator('[data-testid="stExpander"] [data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    assert page.locator('[data-testid="stExpander"] [data-testid="stPlotlyChart"] g.textpoint').count() >= 40
    page.locator('[data-testid="stMain"] [data-testid="stExpander"]').first.screenshot(path=str(shot(page, "static_compiled")))


def _open(page, url, wait_idle):
    page.goto(url)
    page.get_by_text(re.compile(r"Evaluated \d+ of")).first.wait_for()
    wait_idle(page)
    page.locator('[data-testid="stPlotlyChart"]').first.locator(".main-svg").first.wait_for()
    wait_drawn(page)


def test_switching_program_keeps_the_node_kinds(page, app_url, wait_idle, shot):
    """After switching Program the graph is drawn exactly as a fresh load of that program draws it (the kinds'
    fills were lost until a reload); gradients() nodes not needed by the run stay visible, pale orange."""
    fresh = {}
    for key in ("logreg", "mlp"):
        _open(page, f"{app_url}/Static_vs_dynamic?example={key}&grads=1", wait_idle)
        fresh[key] = page.evaluate(FILLS, 0)
        assert fresh[key].get(PLACEHOLDER, 0) >= 1, fresh[key]          # y is fed, not evaluated: its own blue
    _open(page, f"{app_url}/Static_vs_dynamic?grads=1", wait_idle)    # gradients() added (off by default)
    assert page.evaluate(FILLS, 0).get("rgb(254, 231, 204)", 0) >= 1     # the lecture's gradient nodes, pale orange
    for key, program in (("logreg", "Logistic regression"), ("mlp", "Two-layer network")):
        page.get_by_label("Program").click()
        page.get_by_role("option", name=re.compile("^" + re.escape(program))).click()
        wait_drawn(page)
        assert page.evaluate(FILLS, 0) == fresh[key], program
    shot(page, "static_after_switching")


def test_the_unrolled_loop_fits_one_projector_screen_under_its_heading(new_page, app_url, wait_idle):
    """Presentation mode at 1366 x 768: with the control-flow section's heading at the top of the screen, the
    T = 6 graph is whole on screen beside the loop's code (it sat below the fold, under the table)."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    pg.goto(f"{app_url}/Static_vs_dynamic?present=1")
    pg.get_by_text(re.compile(r"^So far: 0 of \d+ computed")).first.wait_for()   # the lecture's run starts dark
    wait_idle(pg)
    loop = pg.locator('[data-testid="stPlotlyChart"]').filter(has_text="step 6: h6").first
    loop.locator(".main-svg").first.wait_for()
    heading = pg.get_by_text(re.compile(r"^Control flow: a recurrent step unrolled")).first
    heading.evaluate("e => e.scrollIntoView({block: 'start'})")
    wait_stable(pg)   # scrolled, and the charts still
    top = heading.bounding_box()
    graph = loop
    box = graph.bounding_box()
    code = pg.get_by_text(re.compile(r"^for t in range\(T\)")).first.bounding_box()
    assert top["y"] <= box["y"] and box["y"] + box["height"] <= 768 + 0.5, (top, box)
    assert code["x"] + code["width"] <= box["x"] and code["y"] + code["height"] <= 768   # side by side
