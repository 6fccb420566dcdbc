"""The Your HW2 code page in Chromium: a broken solution's first wrong node marked beside the engine's order.

The shared server (``app_url``) runs without the opt-in and must refuse; a second server is started here with
``-- --student-code`` naming the project's own breadth-first solution (tests/student_solutions/).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from explorer.student_code import view as V
from explorer.student_code.report import report_for

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "tests" / "student_solutions" / "bfs_first_touch.py"


@pytest.fixture(scope="module")
def student_app_url(tmp_path_factory, browser, start_streamlit):   # ``browser``: skipped where the harness skips
    log = tmp_path_factory.mktemp("streamlit-student") / "server.log"
    with start_streamlit("app/Home.py", log, app_args=("--student-code", str(SOLUTION)),
                         drop_env=("AUTODIFF_CLASS_SERVER",)) as url:
        yield url


def test_without_the_opt_in_the_page_runs_nothing(page, app_url, wait_idle):
    page.goto(f"{app_url}/Your_HW2_code")
    wait_idle(page, 60)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Running your own code is off" in main and "--student-code" in main
    assert page.locator(".js-plotly-plot").count() == 0


def _wrong_step() -> int:
    gv = V.graph_view(report_for(str(SOLUTION), keys=["slide"]), "slide")
    return gv.wrong_frame + 1


def test_the_first_wrong_node_is_marked_beside_the_correct_order(browser, student_app_url, wait_idle, shot):
    step = _wrong_step()
    for (w, h), present, name in (((1400, 900), False, "hw2_code_wrong_node"),
                                  ((1920, 1080), True, "hw2_code_wrong_node_present"),
                                  ((1366, 768), True, "hw2_code_wrong_node_present_1366"),
                                  ((1280, 720), True, "hw2_code_wrong_node_present_1280")):
        context = browser.new_context(viewport={"width": w, "height": h})
        pg = context.new_page()
        pg.set_default_timeout(120_000)
        try:
            pg.goto(f"{student_app_url}/Your_HW2_code?graph=slide&step={step}" + ("&present=1" if present else ""))
            wait_idle(pg, 180)
            main = pg.locator('[data-testid="stMain"]')
            (ROOT / "test-output" / "screenshots").mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(ROOT / "test-output" / "screenshots" / f"{name}_first_screen.png"))
            text = main.inner_text()
            assert "The engine (topological order) · Step" in text and f"Your code · Step {step} of" in text
            assert "Your first wrong node: x1" in text and "lost contribution" in text
            assert V.SIDES_NOTE in text                      # which graph is which, on the first screen
            plots = pg.locator(".js-plotly-plot")
            plots.first.wait_for()
            assert plots.count() >= 2
            engine_text, student_text = plots.nth(0).inner_text(), plots.nth(1).inner_text()
            assert "✘" in student_text and "✘" not in engine_text
            # the two graphs side by side on the first screen, the marked one wholly visible
            a, b = plots.nth(0).bounding_box(), plots.nth(1).bounding_box()
            assert abs(a["y"] - b["y"]) < 2 and a["x"] + a["width"] <= b["x"] + 1
            assert b["y"] + b["height"] <= h + 1 and b["x"] + b["width"] <= w, (b, w, h)
            shot(pg, name)
        finally:
            context.close()
