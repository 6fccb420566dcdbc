"""The notebook widget in a real JupyterLab: examples/stepper.ipynb run from the Run menu, the slide example's widget
stepped with its buttons, the keys and the slider, and the kernel told each step the browser shows.

JupyterLab is not part of the notebook extra (a reader brings their own Jupyter, Colab or VS Code): this test runs
where it is installed (``python3 -m pip install jupyterlab``) and skips elsewhere; CI checks the widget's Python side
and its saved state (tests/test_notebook.py, tests/test_notebook_run.py), and the shared stepper script in the
exported file (test_export_browser.py)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_kit import TIMEOUT_S
from playwright.sync_api import expect

pytest.importorskip("jupyterlab")
pytest.importorskip("anywidget")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "stepper-test"


@pytest.fixture
def lab_url(tmp_path):
    for name in ("stepper.ipynb", "hw2_scalar.py"):
        shutil.copy(ROOT / "examples" / name, tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p))
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
                             f"--port={port}", "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
                             f"--ServerApp.root_dir={tmp_path}"], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:   # until the server answers (each try bounded; the whole wait by the browser tests' timeout)
            try:
                with urllib.request.urlopen(f"{url}/api?token={TOKEN}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(tmp_path / 'server.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


def test_the_widget_steps_in_jupyterlab_and_the_kernel_follows(browser, lab_url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{lab_url}/lab/tree/stepper.ipynb?token={TOKEN}")
        expect(page.locator(".jp-Notebook")).to_be_visible()
        expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible()   # its kernel started
        page.keyboard.press("Escape")
        page.locator("text=Run").first.click()
        page.locator("text=Run All Cells").first.click()
        slide = page.locator(".adx-stepper").first
        count = slide.get_by_test_id("step-count")
        expect(count).to_have_text("Step 10 of 14")                    # the notebook set slide.step = 9
        expect(slide.get_by_test_id("step")).to_contain_text("244.69·1.5 + 1 = 368.04 (2 of 2 received)")
        expect(slide.get_by_test_id("source")).to_have_text("f = x1 + exp(1.5*x1 + 2*x2)\nat x1 = 3.0, x2 = 0.5")
        slide.locator(".adx-next").click()
        expect(count).to_have_text("Step 11 of 14")
        slide.get_by_test_id("source").click()                         # the widget takes the keys once focused
        for key, shown in [("ArrowLeft", 10), ("PageDown", 11), ("PageDown", 12), ("PageUp", 11), ("Home", 1),
                           ("End", 14)]:
            page.keyboard.press(key)
            expect(count).to_have_text(f"Step {shown} of 14")
        slide.locator(".adx-back").click()
        expect(count).to_have_text("Step 13 of 14")
        slide.locator(".adx-slider").fill("3")
        expect(count).to_have_text("Step 3 of 14")
        slide.locator(".adx-play").click()                             # plays on to the last step and stops
        expect(count).to_have_text("Step 14 of 14")
        expect(slide.locator(".adx-play")).to_have_text("▶ Play")
        assert slide.locator("svg.adx-graph").count() == 2
        slide.locator(".adx-slider").fill("6")
        expect(count).to_have_text("Step 6 of 14")
        # the kernel's slide.step is the step the browser shows (0-based)
        page.locator(".jp-Cell").last.click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        page.keyboard.press("Enter")
        page.keyboard.type('print("kernel step", slide.step)')
        page.keyboard.press("Shift+Enter")
        expect(page.locator(".jp-OutputArea-output", has_text="kernel step ").last).to_have_text("kernel step 5")
        assert not errors, errors
    finally:
        page.close()
