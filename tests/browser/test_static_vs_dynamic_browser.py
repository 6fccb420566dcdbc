"""Real-browser test of the "Static vs dynamic" page."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


def test_static_page_runs_feeds_and_draws(page, app_url, wait_idle, shot):
    page.goto(f"{app_url}/Static_vs_dynamic")
    # the first run imports and lays out four graphs: wait for its result, not only for a quiet moment
    page.get_by_text(re.compile(r"Evaluated \d+ of")).first.wait_for(timeout=90_000)
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert "Evaluated 6 of" in main.inner_text()
    # the graph renderer's figures: the graph, the loop, folding before / after
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(3).locator(".main-svg").first.wait_for()
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
    for i, name in ((1, "static_loop"), (2, "static_folding_before"), (3, "static_folding_after")):
        charts.nth(i).screenshot(path=str(shot(page, name)))  # element shots scroll the chart into view
    page.get_by_role("button", name="Trace the HW2 step and replay it 20 times").click()
    page.get_by_text(re.compile(r"identical to eager mode, bit for bit")).wait_for(timeout=120_000)
    wait_idle(page, timeout=60)
    assert "bit for bit: True" in main.inner_text()
    shot(page, "static_compiled")
    page.get_by_text(re.compile(r"^The captured step as a static graph")).click()
    wait_idle(page)
    page.locator('[data-testid="stExpander"] [data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    assert page.locator('[data-testid="stExpander"] [data-testid="stPlotlyChart"] g.textpoint').count() >= 40
    page.locator('[data-testid="stExpander"]').first.screenshot(path=str(shot(page, "static_compiled")))
