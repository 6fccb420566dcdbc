"""Real-browser tests of the explorer pages (headless Debian Chromium, the app served by `streamlit run`)."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the harness skips these tests
    expect = None

from browser_kit import wait_stable

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


def test_explorer_step_keys_type_and_table(page, app_url, wait_idle, shot):
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
    assert "step=3" in page.url  # the deep link follows the page, with the header's (1-based) number

    # keyboard: Right arrow steps (st.button shortcut), with the focus outside any text box
    page.locator("h1").first.click()
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    assert step_header(page).startswith("Step 4 of 14")

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
    svg_nodes = page.locator('[data-testid="stGraphVizChart"] svg g.node')
    svg_nodes.first.wait_for()
    assert svg_nodes.count() >= 4
    shot(page, "explorer_graphviz")


def test_explorer_deep_link_and_presentation(page, app_url, wait_idle, shot):
    params = {"expr": "f = (x1 + x2) * exp(x1)", "at": "x1 = 1, x2 = 2", "step": "7", "present": "1"}
    goto(page, f"{app_url}/Expression_explorer?{urlencode(params)}", wait_idle)
    assert step_header(page).startswith("Step 7 of")  # step= is 1-based, as the header
    shot(page, "explorer_presentation")
    # presentation mode folds the boxes into an expander titled with the program and its inputs
    expect(page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary').first).to_contain_text(params["expr"])
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
        assert "step=2" in page.url
    shot(page, name)


# a step after ``last`` is on screen and its run has ended
LATER_STEP_JS = """(last) => {
  const head = [...document.querySelectorAll('[data-testid="stMain"] h4')].find(h => /^Step \\d+ of \\d+/.test(h.innerText));
  const app = document.querySelector('[data-testid="stApp"]');
  return Boolean(head) && parseInt(head.innerText.match(/^Step (\\d+)/)[1]) > last
         && app.getAttribute('data-test-script-state') === 'notRunning' && !document.querySelector('[data-stale="true"]');
}"""


# one consistent reading of header, caption, the graph's texts, contribution table, slider and URL
SNAPSHOT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const head = [...main.querySelectorAll('h4')].find(h => /^Step \\d+ of \\d+/.test(h.innerText));
  const caption = head ? head.closest('[data-testid="stMarkdownContainer"]').innerText : '';
  const plot = main.querySelector('.js-plotly-plot');
  const graph = plot ? [...plot.querySelectorAll('text')].map(t => t.textContent) : [];
  const table = main.querySelector('[data-testid="stTable"]');
  const thumb = main.querySelector('[data-testid="stSliderThumbValue"]');
  return {header: head ? head.innerText : '', caption, graph,
          table: table ? table.innerText : '', slider: thumb ? thumb.innerText.trim() : null,
          url: location.search,
          running: document.querySelector('[data-testid="stApp"]').getAttribute('data-test-script-state')};
}"""


def test_play_moves_header_table_graph_and_link_together(page, app_url, wait_idle, shot):
    goto(page, f"{app_url}/Expression_explorer?step=9", wait_idle)
    page.locator(".js-plotly-plot").first.wait_for()
    # slow (2 s a step): time for each step to be drawn and read while the next one waits
    page.get_by_role("combobox", name="Speed").click()
    page.get_by_role("option", name=re.compile(r"^slow")).click()
    wait_idle(page)
    page.get_by_role("button", name=re.compile(r"\bPlay\b")).click()
    seen, last = {}, 9
    while last < 14:
        # a later step's run has ended; then the browser finishes drawing it (Plotly, the slider's thumb):
        # everything on screen must show the same step
        page.wait_for_function(LATER_STEP_JS, arg=last, polling=50)
        wait_stable(page, f"({SNAPSHOT_JS})()", quiet_ms=300)
        snap = page.evaluate(SNAPSHOT_JS)
        if snap["running"] != "notRunning":
            continue
        m = re.match(r"Step (\d+) of 14", snap["header"])
        assert m, snap
        k = int(m.group(1))
        caption = snap["caption"].split("\n", 1)[1].strip()
        # the graph shows the header's step: the adjoint the caption reports is drawn on its node
        if k < 14:
            taken = re.match(r"take (\w+): (\S+ = [-\d.e]+)", caption)
            assert taken and any(t.startswith(taken.group(2)) for t in snap["graph"]), snap
        else:
            assert "x̄1 = 368.04" in snap["graph"] and "x̄2 = 489.38" in snap["graph"], snap
        assert snap["slider"] == str(k) and f"step={k}" in snap["url"], snap
        if k < 14:  # a backward step: the table lists exactly the contributions the caption describes
            rows = {ln.split("\t")[0].strip() for ln in snap["table"].splitlines()[1:] if "→" in ln}
            assert rows == set(re.findall(r"\w+ → \w+", caption)), snap
        seen[k], last = snap, max(last, k)
    # it played on, through the backward pass (under load Play may skip a step to keep its pace)
    assert len(seen) >= 2 and max(seen) == 14, sorted(seen)
    expect(page.get_by_role("button", name=re.compile(r"\bPlay\b"))).to_be_visible()   # it stopped by itself
    wait_idle(page)
    assert step_header(page).startswith("Step 14 of 14")  # Play stopped at the last step and stays there
    assert "step=14" in page.url and page.get_by_role("button", name=re.compile(r"\bPlay\b")).count() == 1
    shot(page, "explorer_after_play")


def test_pause_keeps_the_step_play_reached(page, app_url, wait_idle):
    goto(page, f"{app_url}/Expression_explorer", wait_idle)
    page.get_by_role("button", name=re.compile(r"\bPlay\b")).click()
    page.wait_for_function(LATER_STEP_JS, arg=2, polling=50)      # Play has moved on past step 2
    page.get_by_role("button", name=re.compile(r"\bPause\b")).click()
    expect(page.get_by_role("button", name=re.compile(r"\bPlay\b"))).to_be_visible()   # the timer is gone
    wait_idle(page)
    reached = step_header(page)
    k = int(re.match(r"Step (\d+)", reached).group(1))
    assert 3 <= k < 14
    # nothing moves it on: the header and the link keep the step while the page stays idle (2 s)
    wait_stable(page, "[document.querySelector('[data-testid=\"stMain\"] h4')?.innerText, location.search]",
                quiet_ms=2000)
    wait_idle(page)
    assert step_header(page) == reached and f"step={k}" in page.url
