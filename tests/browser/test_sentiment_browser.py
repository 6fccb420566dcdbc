"""Real-browser test of the Sentiment training page: live curves grow, stop works, two sessions at once."""
from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def needs_glove():
    from sentiment.embeddings import load_glove
    try:
        load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors: {e}")

PROGRESS = '[data-testid="stProgress"]'
MAIN = '[data-testid="stMain"]'
# the loss figure is the first Plotly chart; its first trace holds one point per (averaged) batch
LOSS_POINTS = """() => {
  const el = document.querySelectorAll('.js-plotly-plot')[0];
  if (!el || !el.data || !el.data[0] || !el.data[0].x) return -1;
  const x = el.data[0].x;                      // an array, or a typed array spec {bdata, dtype}
  if (x.length !== undefined) return x.length;
  const size = {f8: 8, f4: 4, i4: 4, i2: 2, i1: 1, u1: 1}[x.dtype] || 8;
  return atob(x.bdata).length / size;
}"""


def open_page(page, app_url, wait_idle):
    page.goto(f"{app_url}/Sentiment_training")
    wait_idle(page)
    page.locator(MAIN).get_by_role("button", name=re.compile("Start training$")).wait_for()


def press(page, name: str) -> None:
    """Click a button of the page (not the toolbar's Stop).

    Pause / Resume / Stop live in a fragment that the page re-renders every second while training;
    Playwright's actionability wait ("stable", "receives events") can then keep missing its window on a
    loaded machine, so the click is dispatched to the element directly (the same React click a user makes).
    """
    button = page.locator(MAIN).get_by_role("button", name=re.compile(f"{name}$"))
    button.wait_for()
    button.dispatch_event("click")


def set_number(page, label: str, value, wait_idle) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page)


def progress_text(page) -> str:
    loc = page.locator(PROGRESS)
    return loc.first.inner_text() if loc.count() else ""


def wait_until(page, cond, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"timed out waiting for {what}; progress: {progress_text(page)!r}")


def loss_points(page) -> int:
    return page.evaluate(LOSS_POINTS)


def epoch_shown(page) -> int:
    m = re.match(r"Epoch (\d+)/", progress_text(page))
    return int(m.group(1)) if m else -1


def test_start_watch_the_curve_grow_and_stop(page, app_url, wait_idle, shot):
    open_page(page, app_url, wait_idle)
    set_number(page, "Epochs", 3000, wait_idle)
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Epoch"), what="training to start")
    wait_until(page, lambda: loss_points(page) > 0, what="a loss curve")
    first, first_epoch = loss_points(page), epoch_shown(page)
    wait_until(page, lambda: loss_points(page) > first and epoch_shown(page) > first_epoch + 2,
               what="the loss curve to grow")
    assert re.search(r"examples/s", progress_text(page))
    # the page stays responsive while training: the Pause button answers at once
    press(page, "Pause")
    wait_until(page, lambda: "paused" in progress_text(page), timeout=20, what="pause")
    held = epoch_shown(page)
    page.wait_for_timeout(2000)
    assert epoch_shown(page) == held and "paused" in progress_text(page)  # nothing trains while paused
    shot(page, "sentiment_paused")
    press(page, "Resume")
    wait_until(page, lambda: "paused" not in progress_text(page), timeout=20, what="resume")
    press(page, "Stop")
    wait_until(page, lambda: progress_text(page).startswith("Stopped after"), timeout=30, what="stop")
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert "Validation sentences" in main.inner_text()
    assert "What an averaged bag of words cannot do" in main.inner_text()
    shot(page, "sentiment_stopped")


def test_two_browser_sessions_train_at_once(browser, app_url, wait_idle, shot):
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        pages = [c.new_page() for c in contexts]
        for pg in pages:
            pg.set_default_timeout(30_000)
            open_page(pg, app_url, wait_idle)
            set_number(pg, "Epochs", 3000, wait_idle)
        set_number(pages[1], "Seed", 7, wait_idle)
        for pg in pages:
            press(pg, "Start training")
        for pg in pages:
            wait_until(pg, lambda pg=pg: loss_points(pg) > 5, what="both sessions to train")
        # stopping one session's training leaves the other running
        press(pages[0], "Stop")
        wait_until(pages[0], lambda: progress_text(pages[0]).startswith("Stopped after"), timeout=30, what="stop A")
        stopped_at = progress_text(pages[0])
        before = epoch_shown(pages[1])
        wait_until(pages[1], lambda: epoch_shown(pages[1]) > before + 2, what="B to keep training")
        assert progress_text(pages[0]) == stopped_at  # A stays stopped
        assert progress_text(pages[1]).startswith("Epoch")
        shot(pages[1], "sentiment_second_session")
        press(pages[1], "Stop")
        wait_until(pages[1], lambda: progress_text(pages[1]).startswith("Stopped after"), timeout=30, what="stop B")
    finally:
        for c in contexts:
            c.close()
