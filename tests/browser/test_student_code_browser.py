"""The Your HW2 code page in Chromium: a broken solution's first wrong node marked beside the engine's order.

The shared server (``app_url``) runs without the opt-in: it runs no student's file and shows the project's own
samples instead; a second server is started here with ``-- --student-code`` naming the breadth-first sample
(explorer/student_code/samples/) as if it were a student's file.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_kit import TIMEOUT_MS, wait_drawn, wait_stable, wait_until

from explorer.student_code import view as V
from explorer.student_code.report import report_for

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "explorer" / "student_code" / "samples" / "bfs_first_touch.py"


@pytest.fixture(scope="module")
def student_app_url(tmp_path_factory, browser, start_streamlit):   # ``browser``: skipped where the harness skips
    log = tmp_path_factory.mktemp("streamlit-student") / "server.log"
    with start_streamlit("app/Home.py", log, app_args=("--student-code", str(SOLUTION)),
                         drop_env=("AUTODIFF_CLASS_SERVER",)) as url:
        yield url


SIZES = (((1400, 900), False, ""), ((1920, 1080), True, "_present"), ((1366, 768), True, "_present_1366"),
         ((1280, 720), True, "_present_1280"))


def _at_every_size(browser, wait_idle, url: str, name: str):
    """``(page, width, height, presenting, screenshot name)`` at 1400x900 and presenting at the three projector
    sizes, each page on ``url`` (``&present=1`` added when presenting), idle, its first screen saved."""
    for (w, h), present, suffix in SIZES:
        context = browser.new_context(viewport={"width": w, "height": h})
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        try:
            pg.goto(url + ("&present=1" if present else ""))
            wait_idle(pg)
            (ROOT / "test-output" / "screenshots").mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(ROOT / "test-output" / "screenshots" / f"{name}{suffix}_first_screen.png"))
            yield pg, w, h, present, name + suffix
        finally:
            context.close()


def _both_orders(main, w: int, h: int, present: bool):
    """The engine's graph and the other side's, wholly on the first screen: side by side on a laptop, one above
    the other on a projector (the code beside them); the other side's carries the ✘ of its first wrong node, the
    engine's none. Returns both bounding boxes."""
    plots = main.locator(".js-plotly-plot")
    plots.first.wait_for()
    assert plots.count() >= 2
    assert "✘" in plots.nth(1).inner_text() and "✘" not in plots.nth(0).inner_text()
    a, b = plots.nth(0).bounding_box(), plots.nth(1).bounding_box()
    if present:
        assert abs(a["x"] - b["x"]) < 2 and a["y"] + a["height"] <= b["y"] + 1
    else:
        assert abs(a["y"] - b["y"]) < 2 and a["x"] + a["width"] <= b["x"] + 1
    for box in (a, b):
        assert box["y"] >= 0 and box["y"] + box["height"] <= h + 1 and box["x"] + box["width"] <= w, (box, w, h)
    return a, b


def _lit_line_beside(main, test_id: str, text: str, a: dict, b: dict, h: int, present: bool) -> None:
    """The code's lit line (one, holding ``text``): on a projector right of both graphs and on the first screen
    (the panel scrolls to it); on a laptop under the engine's graph, left of the other side's."""
    lit = main.locator(f'[data-testid="{test_id}"] .l.hl')
    assert lit.count() == 1 and text in lit.first.inner_text()
    box = lit.first.bounding_box()
    if present:
        assert box["x"] >= max(a["x"] + a["width"], b["x"] + b["width"]) - 1, (box, a, b)
        assert box["y"] >= 0 and box["y"] + box["height"] <= h + 1, (box, h)
    else:
        assert box["y"] >= a["y"] + a["height"] and box["x"] + box["width"] <= b["x"] + 1, (box, a, b)


def test_without_the_opt_in_the_page_demos_the_projects_sample(browser, app_url, wait_idle, shot):
    """No student's file runs; the breadth-first sample does, labelled as the project's, its first wrong node
    marked at its step, both graphs side by side on the first screen; its code below; how to run one's own
    code folded at the end."""
    step = _wrong_step()
    for pg, w, h, present, name in _at_every_size(
            browser, wait_idle, f"{app_url}/Your_HW2_code?sample=bfs_first_touch&graph=slide&step={step}",
            "hw2_code_sample"):
        main = pg.locator('[data-testid="stMain"]')
        text = main.inner_text()
        assert "Sample: Breadth-first, passes a gradient on first touch · Step" in text
        assert "Your code ·" not in text and (present or V.SAMPLE_SIDES_NOTE in text)   # presenting: named over each
        # x1 is marked at this step (its ✘ in the graph); the reason waits for the step the lost contribution
        # arrives (the class watches it happen first)
        assert "The sample's first wrong node" not in text and "Why: lost contribution" not in text
        assert "def backpropagate(variable, deriv):" in text            # the sample's code, below
        assert "Run your own HW2 code on this page" in text and "Running your own code is off" not in text  # folded
        a, b = _both_orders(main, w, h, present)
        # the sample's backpropagate, its accumulation lit (x1 is a leaf taken at this step): beside the graphs on
        # a projector, under the engine's on a laptop
        _lit_line_beside(main, "code-sample", "node.accumulate_derivative(d)", a, b, h, present)
        shot(pg, name)
        pg.goto(f"{app_url}/Your_HW2_code?sample=bfs_first_touch&graph=slide&step={_verdict_step()}"
                + ("&present=1" if present else ""))
        wait_idle(pg)
        text = pg.locator('[data-testid="stMain"]').inner_text()
        assert "The sample's first wrong node: x1" in text and "lost contribution" in text
        _both_orders(pg.locator('[data-testid="stMain"]'), w, h, present)
    # the folded box opens on the reason and the commands
    pg = browser.new_page()
    try:
        pg.goto(f"{app_url}/Your_HW2_code")
        wait_idle(pg)
        pg.get_by_text("Run your own HW2 code on this page").click()
        main = pg.locator('[data-testid="stMain"]')
        main.get_by_text("Running your own code is off").wait_for()
        assert "--student-code" in main.inner_text()
    finally:
        pg.close()


def _wrong_step() -> int:
    gv = V.graph_view(report_for(str(SOLUTION), keys=["slide"]), "slide")
    return gv.wrong_frame + 1


def _verdict_step() -> int:
    """The step where the breadth-first sample's lost contribution arrives and its verdict is written (11)."""
    gv = V.graph_view(report_for(str(SOLUTION), keys=["slide"]), "slide")
    return gv.verdict_frame + 1


def test_the_first_wrong_node_is_marked_beside_the_correct_order(browser, student_app_url, wait_idle, shot):
    step = _wrong_step()
    for pg, w, h, present, name in _at_every_size(
            browser, wait_idle, f"{student_app_url}/Your_HW2_code?graph=slide&step={step}", "hw2_code_wrong_node"):
        main = pg.locator('[data-testid="stMain"]')
        text = main.inner_text()
        assert "The engine (topological order) · Step" in text and f"Your code · Step {step} of" in text
        assert "Your first wrong node: x1" in text and "lost contribution" in text
        assert (V.STACKED_SIDES_NOTE if present else V.SIDES_NOTE) in text   # which graph is which
        a, b = _both_orders(main, w, h, present)         # the marked one wholly visible
        # the student's own backpropagate beside the graphs, its accumulation lit at this step
        _lit_line_beside(main, "code-student", "node.accumulate_derivative(d)", a, b, h, present)
        shot(pg, name)


def test_a_missing_student_code_folder_is_said_in_the_servers_output_and_first_on_the_page(
        browser, start_streamlit, tmp_path, wait_idle):
    """``streamlit run app/Home.py -- --student-code FOLDER`` with no such folder: the server's output says so,
    naming the path, once, when its first page runs (Streamlit runs no app code before that); page 13 says it
    first, under its title, with the folder's name only."""
    missing = tmp_path / "not_here" / "llmsys_hw2"
    log = tmp_path / "server.log"
    with start_streamlit("app/Home.py", log, app_args=("--student-code", str(missing)),
                         drop_env=("AUTODIFF_CLASS_SERVER",)) as url:
        assert "--student-code" not in log.read_text(errors="replace")    # nothing before a page runs
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        pg.set_default_timeout(TIMEOUT_MS)
        try:
            pg.goto(f"{url}/Your_HW2_code")
            wait_idle(pg)
            wait_until(pg, lambda: "no such file or folder" in log.read_text(errors="replace"),
                       what="the server's output to name the missing folder")
            said = [ln for ln in log.read_text(errors="replace").splitlines() if "no such file or folder" in ln]
            assert len(said) == 1 and f"--student-code {missing}: no such file or folder" in said[0], said
            assert "page 13 (Your HW2 code) runs the project's samples instead" in said[0]
            main = pg.locator('[data-testid="stMain"]')
            alert = main.locator('[data-testid="stAlert"]').first
            assert "llmsys_hw2" in alert.inner_text() and "does not exist" in alert.inner_text()
            assert str(tmp_path) not in main.inner_text()                 # no path of the server's machine
            title = main.locator("h1").first.bounding_box()
            box, picker = alert.bounding_box(), main.locator('[data-testid="stSelectbox"]').first.bounding_box()
            assert title["y"] < box["y"] < picker["y"] and box["y"] + box["height"] <= 900   # first, on screen
            pg.goto(url)                                                   # another page: said once only
            wait_idle(pg)
            assert sum("no such file or folder" in ln for ln in log.read_text(errors="replace").splitlines()) == 1
        finally:
            pg.close()



def test_the_lit_code_keeps_a_margin_over_a_projectors_bottom_edge(new_page, app_url, wait_idle):
    """Step 11 at 1366 x 768: the sample's lit line 29 (three wrapped rows) ended at 752 of 768 px, on the edge
    for the back row: the panel ends 16 px or more over the bottom edge, every lit row whole inside it."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    pg.goto(f"{app_url}/Your_HW2_code?present=1&step=11")
    wait_drawn(pg)
    wait_idle(pg)
    pg.locator(".adx-scroll .l.hl").first.wait_for()
    wait_stable(pg, "[...document.querySelectorAll('.adx-scroll')].map(b => b.style.maxHeight + b.scrollTop).join()",
                quiet_ms=1500)
    panel = pg.locator(".adx-scroll").first.bounding_box()
    assert panel["y"] + panel["height"] <= 768 - 16, panel
    rows = pg.locator(".adx-scroll .l.hl").evaluate_all(
        "rs => rs.filter(r => r.offsetHeight > 0).map(r => [r.dataset.line, r.getBoundingClientRect().bottom])")
    assert [n for n, _ in rows] == ["25", "29"] and all(b <= 768 - 16 for _, b in rows), rows
