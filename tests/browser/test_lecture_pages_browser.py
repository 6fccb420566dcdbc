"""Real-browser tests of the lecture pages 8-11 (Learning problem, Topological sort, Tensors and storage,
Exercises), each also shot at 1400x900 and in presentation mode at 1920x1080."""
from __future__ import annotations

import re

import pytest
from browser_kit import TIMEOUT_MS

pytestmark = pytest.mark.browser

NORMAL = {"width": 1400, "height": 900}
PROJECTOR = {"width": 1920, "height": 1080}


def _open(page, url, wait_idle, size, first: str = "Presentation mode"):
    page.set_default_timeout(TIMEOUT_MS)
    page.set_viewport_size(size)
    page.goto(url)
    page.get_by_text(first).first.wait_for()
    wait_idle(page)
    return page.locator('[data-testid="stMain"]')


def _min_text_px(page) -> float:
    """The smallest font size of visible paragraph / table / label text in the main area."""
    return page.evaluate("""() => {
        const els = document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p, '
            + '[data-testid="stMain"] td, [data-testid="stMain"] th, [data-testid="stMain"] label p');
        let m = 1e9;
        for (const e of els) { if (e.offsetParent === null || !e.innerText.trim()) continue;
            m = Math.min(m, parseFloat(getComputedStyle(e).fontSize)); }
        return m; }""")


def _click(page, wait_idle, name):
    # a button's accessible name carries its icon and shortcut after the label ("Step chevron_right →")
    page.get_by_role("button", name=re.compile(rf"^{re.escape(name)}\b")).first.click()
    wait_idle(page)


def test_learning_problem_steps_and_diverges(page, app_url, wait_idle, shot):
    main = _open(page, f"{app_url}/Learning_problem", wait_idle, NORMAL)
    page.locator(".js-plotly-plot").first.wait_for()
    assert "Step 1 of 40: w₀ = (3, −2.5)" in main.inner_text()
    _click(page, wait_idle, "Step")
    assert "Step 2 of 40: w₁ =" in main.inner_text() and "step=2" in page.url
    assert page.locator(".js-plotly-plot .contour").count() >= 1
    shot(page, "lecture_learning_1400")
    page.get_by_role("button", name=re.compile(r"^divergent")).click()
    wait_idle(page)
    assert "divergent" in main.inner_text() and "lr=32" in page.url
    _open(page, f"{app_url}/Learning_problem?present=1&step=5", wait_idle, PROJECTOR)
    page.locator(".js-plotly-plot").first.wait_for()
    assert _min_text_px(page) >= 18
    shot(page, "lecture_learning_present_1920")


def test_topological_sort_queue_and_clicked_order(page, app_url, wait_idle, shot):
    main = _open(page, f"{app_url}/Topological_sort", wait_idle, NORMAL)
    graphs = page.locator(".js-plotly-plot")  # both graphs come from the shared renderer
    graphs.first.wait_for()
    assert "Step 1 of 7" in main.inner_text()
    _click(page, wait_idle, "Step")
    assert "Step 2 of 7" in main.inner_text()
    assert "= 0.5" in graphs.nth(0).inner_text()   # the values computed so far, in the nodes
    for name in ("x1", "x3", "x5"):
        _click(page, wait_idle, name)
    assert "x4 → x5" in main.inner_text() and "order=x1%2Cx3%2Cx5" in page.url
    # the badges are in the nodes, and the violated edge is drawn thick and red in the student's graph
    order_graph = graphs.nth(1)
    assert "#3 ✗ before x4" in order_graph.inner_text() and "#1" in order_graph.inner_text()
    red = order_graph.locator('path.js-line[style*="rgb(185, 28, 28)"]')   # the edge and its arrowhead
    widths = [float(re.search(r"stroke-width: ([\d.]+)px", red.nth(k).get_attribute("style"))[1])
              for k in range(red.count())]
    assert len(widths) == 2 and max(widths) >= 3
    shot(page, "lecture_topo_1400")
    _open(page, f"{app_url}/Topological_sort?present=1&step=3&order=x2,x4,x1", wait_idle, PROJECTOR)
    graphs.first.wait_for()
    assert "3 of 7 placed" in main.inner_text()
    assert _min_text_px(page) >= 18
    sizes = [float(x) for x in re.findall(r"font-size: ([\d.]+)px", graphs.nth(1).inner_html())]
    assert sizes and min(sizes) >= 18   # the node texts too
    shot(page, "lecture_topo_present_1920")


def test_tensors_and_storage_view_error_and_backends(page, app_url, wait_idle, shot):
    main = _open(page, f"{app_url}/Tensors_and_storage?chain=x.permute(1,%200).view(12)", wait_idle, NORMAL)
    page.locator(".js-plotly-plot").first.wait_for()
    text = main.inner_text()
    assert "ViewError" in text and "contiguous" in text and "[9, 12]" in text and "scatter_add" in text
    page.get_by_role("button", name="Run on every backend").click()
    page.get_by_text(re.compile(r"× numpy's time")).first.wait_for(timeout=TIMEOUT_MS)
    wait_idle(page)
    shot(page, "lecture_tensors_1400")
    _open(page, f"{app_url}/Tensors_and_storage?present=1&chain=x%5B1%3A%2C%20%3A%3A2%5D", wait_idle, PROJECTOR)
    page.locator(".js-plotly-plot").nth(1).wait_for()
    assert "(4, 2)" in main.inner_text()
    assert _min_text_px(page) >= 18
    shot(page, "lecture_tensors_present_1920")


def test_exercises_check_and_reveal(page, app_url, wait_idle, shot):
    main = _open(page, f"{app_url}/Exercises?ex=fan_out", wait_idle, NORMAL, first="Exercise 2")
    assert "Exercise 2" in main.inner_text()
    page.get_by_label("∂f/∂x1 =").fill("4e")
    page.get_by_label("∂f/∂x2 =").fill("3")
    page.get_by_role("button", name="Check my answers").click()
    wait_idle(page)
    text = main.inner_text()
    assert "∂f/∂x1: correct: the engine gets 10.87" in text and "∂f/∂x2: not quite" in text
    page.get_by_text("Reveal the worked steps", exact=True).click()
    wait_idle(page)
    link = page.get_by_role("link", name=re.compile("Open Expression explorer"))
    assert "Expression_explorer?expr=" in link.get_attribute("href") and "reveal=1" in page.url
    shot(page, "lecture_exercises_1400")
    _open(page, f"{app_url}/Exercises?present=1&ex=memory&reveal=1", wait_idle, PROJECTOR, first="159.4 MB")
    assert "159.4 MB" in main.inner_text()
    assert _min_text_px(page) >= 18
    shot(page, "lecture_exercises_present_1920")


HEADERS_JS = """(needle) => {
  const table = Array.from(document.querySelectorAll('[data-testid="stMain"] table'))
      .find(t => t.innerText.includes(needle));
  if (!table) return null;
  const main = document.querySelector('[data-testid="stMain"] [data-testid="stMainBlockContainer"]')
      || document.querySelector('[data-testid="stMain"]');
  const m = main.getBoundingClientRect();
  return Array.from(table.querySelectorAll('th')).filter(th => th.innerText.trim()).map(th => {
      const r = th.getBoundingClientRect();
      return {text: th.innerText.trim(), left: r.left, right: r.right, fits: th.scrollWidth <= th.clientWidth + 1,
              main_left: m.left, main_right: m.right}; });
}"""


def test_the_checkpointing_table_shows_every_header_whole(page, app_url, wait_idle, shot):
    """At 1400 x 900 the checkpointing table's headers were cut ("peak during for…"): it now spans the page,
    every header inside the main column and none of its text clipped."""
    _open(page, f"{app_url}/Forward_vs_reverse", wait_idle, NORMAL)
    page.get_by_text("Trading time for memory").first.scroll_into_view_if_needed()
    page.get_by_text("max |Δ gradient| vs keep all").first.wait_for(timeout=TIMEOUT_MS)
    heads = page.evaluate(HEADERS_JS, "max |Δ gradient| vs keep all")
    assert heads and {"policy", "peak during forward + backward (MB)", "max |Δ gradient| vs keep all"} <= \
        {h["text"].replace("\n", " ") for h in heads}, heads
    for h in heads:
        assert h["main_left"] - 1 <= h["left"] and h["right"] <= h["main_right"] + 1 and h["fits"], h
    page.get_by_text("Trading time for memory").first.scroll_into_view_if_needed()
    shot(page, "forward_vs_reverse_checkpointing_1400")
