"""Real-browser tests of the explorer pages (headless Debian Chromium, the app served by `streamlit run`)."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the harness skips these tests
    expect = None

pytestmark = pytest.mark.browser


def goto(page, url, wait_idle):
    page.goto(url)
    wait_idle(page)


def step_header(page) -> str:
    return page.get_by_text(re.compile(r"^Step \d+ of \d+")).first.inner_text()


def test_home_lists_pages(page, app_url, wait_idle, shot):
    goto(page, app_url, wait_idle)
    main = page.locator('[data-testid="stMain"]')
    for title in ("Expression explorer", "Backprop orders", "Gradient check", "Forward vs reverse"):
        assert main.get_by_role("link", name=title).count() >= 1
    assert "numpy" in main.inner_text()
    shot(page, "home")
    main.get_by_role("link", name="Expression explorer").first.click()
    page.wait_for_url(re.compile(r".*/Expression_explorer.*"))
    wait_idle(page)
    assert "Step 1 of 14" in step_header(page)


def test_explorer_step_play_type_and_table(page, app_url, wait_idle, shot):
    goto(page, f"{app_url}/Expression_explorer", wait_idle)
    plot = page.locator(".js-plotly-plot").first
    plot.wait_for()
    assert plot.locator(".scatterlayer .trace").count() >= 3  # edges, highlighted edges, nodes (+ labels)
    assert plot.locator(".scatterlayer .trace .point").count() >= 7  # one marker per node
    shot(page, "explorer_start")

    page.get_by_role("button", name="Step").click()
    wait_idle(page)
    page.get_by_role("button", name="Step").click()
    wait_idle(page)
    assert step_header(page).startswith("Step 3 of 14")
    assert "step=2" in page.url  # the deep link follows the page

    # keyboard: Right arrow steps (st.button shortcut), with the focus outside any text box
    page.locator("h1").first.click()
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    assert step_header(page).startswith("Step 4 of 14")

    # Play animates in the browser (Plotly frames): the figure's caption (an annotation) moves on without a rerun
    title_before = plot.locator(".annotation-text").first.text_content()
    plot.locator(".updatemenu-button").first.click()  # Play
    page.wait_for_timeout(1000)
    title_after = plot.locator(".annotation-text").first.text_content()
    assert title_after != title_before
    assert not title_after.startswith(("inputs", "x3 =", "x4 =")), title_after  # plays on from the page's step
    plot.locator(".updatemenu-button").nth(1).click()  # Pause

    # type a program; Ctrl+Enter commits the text area
    box = page.get_by_role("textbox", name=re.compile("^Program"))
    box.fill("f = x * x * x")
    box.press("Control+Enter")
    wait_idle(page)
    inputs = page.get_by_role("textbox", name="Inputs")
    inputs.fill("x = 2")
    inputs.press("Control+Enter")
    wait_idle(page)
    page.get_by_role("tab", name="Table of nodes").click()
    table = page.locator('[data-testid="stTable"]').first
    table.wait_for()
    text = table.inner_text()
    assert re.search(r"\bx\b.*\b12\b", text, re.S)  # adjoint of x: 3 x^2 = 12
    assert re.search(r"\bf\b.*\b8\b", text, re.S)
    shot(page, "explorer_table")

    page.get_by_role("tab", name="Graph and gradient graph").click()
    page.wait_for_timeout(500)
    svg_nodes = page.locator('[data-testid="stGraphVizChart"] svg g.node')
    svg_nodes.first.wait_for()
    assert svg_nodes.count() >= 4
    shot(page, "explorer_graphviz")


def test_explorer_deep_link_and_presentation(page, app_url, wait_idle, shot):
    params = {"expr": "f = (x1 + x2) * exp(x1)", "at": "x1 = 1, x2 = 2", "step": "6", "present": "1"}
    goto(page, f"{app_url}/Expression_explorer?{urlencode(params)}", wait_idle)
    assert step_header(page).startswith("Step 7 of")
    shot(page, "explorer_presentation")
    expect(page.get_by_role("textbox", name=re.compile("^Program"))).to_have_value(params["expr"])
    assert page.locator('[data-testid="stSidebar"]').is_hidden()  # presentation mode: no chrome
    shot(page, "explorer_presentation")


def test_explorer_bad_expression_shows_parser_message(page, app_url, wait_idle, shot):
    goto(page, f"{app_url}/Expression_explorer", wait_idle)
    box = page.get_by_role("textbox", name=re.compile("^Program"))
    box.fill("f = x1 + __import__('os')")
    box.press("Control+Enter")
    wait_idle(page)
    alert = page.locator('[data-testid="stAlert"]').first
    alert.wait_for()
    assert "Program not accepted" in alert.inner_text() and "line 1" in alert.inner_text()
    assert page.locator(".js-plotly-plot").count() == 0
    shot(page, "explorer_bad_expression")


@pytest.mark.parametrize("path,name,expect", [
    ("Backprop_orders", "backprop_orders", "Wrong gradient"),
    ("Gradient_check", "gradient_check", "best h"),
    ("Forward_vs_reverse", "forward_vs_reverse", "Dual numbers"),
])
def test_other_pages_draw(page, app_url, wait_idle, shot, path, name, expect):
    goto(page, f"{app_url}/{path}", wait_idle)
    page.locator(".js-plotly-plot").first.wait_for()
    assert expect in page.locator('[data-testid="stMain"]').inner_text() or \
        page.get_by_text(expect).count() > 0
    assert page.locator('[data-testid="stException"]').count() == 0
    if path == "Backprop_orders":
        page.get_by_role("button", name="Step").click()
        wait_idle(page)
        assert "step=1" in page.url
    shot(page, name)
