"""Waiting for conditions in the browser tests: one overall timeout, no fixed pauses.

``$AUTODIFF_BROWSER_TIMEOUT_S`` (default :data:`DEFAULT_TIMEOUT_S`) bounds every wait; each returns as soon as
its condition holds. Imported by ``conftest.py`` (its fixtures) and by the tests (``from browser_kit import
...``: pytest puts ``tests/browser`` on the path).
"""
from __future__ import annotations

import os
import time

TIMEOUT_ENV = "AUTODIFF_BROWSER_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 240.0   # generous: a loaded 2-core machine took 88 s to open a page
TIMEOUT_S = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S)
TIMEOUT_MS = int(TIMEOUT_S * 1000)
QUIET_MS = 600   # the app counts as idle once it has not run, nor shown a stale element, for this long

try:   # Playwright's expect(...) waits as long as everything else
    from playwright.sync_api import expect
    expect.set_options(timeout=TIMEOUT_MS)
except ImportError:  # pragma: no cover - conftest skips the browser tests then
    pass


IDLE_JS = """(quietMs) => {
    const a = document.querySelector('[data-testid="stApp"]');
    if (!a) return false;
    // the status widget is hidden in presentation mode: the app's own script state says it too
    const s = a.getAttribute('data-test-script-state');
    const w = document.querySelector('[data-testid="stStatusWidget"]');
    const running = (Boolean(s) && s !== 'notRunning') || Boolean(w && w.offsetParent !== null);
    const stale = document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]') !== null;
    const now = performance.now();
    if (running || stale) { window.__adQuietSince = null; return false; }
    if (window.__adQuietSince == null) window.__adQuietSince = now;
    return now - window.__adQuietSince >= quietMs;   // stays quiet: no rerun queued right after
}"""


def wait_idle(pg, timeout: float | None = None) -> None:
    """Wait until the app has rendered and no script run is in progress, and it stays so for ``QUIET_MS``
    (up to the overall timeout; a larger ``timeout`` in seconds is honoured, a smaller one is not: load
    decides how long a run takes)."""
    limit = max(TIMEOUT_S, timeout or 0) * 1000
    pg.evaluate("() => { window.__adQuietSince = null; }")
    pg.wait_for_function(IDLE_JS, arg=QUIET_MS, polling=100, timeout=limit)


STABLE_JS = """([expr, quietMs]) => {
    const value = JSON.stringify(new Function('return (' + expr + ');')());
    const now = performance.now();
    const seen = (window.__adStable = window.__adStable || {});
    const last = seen[expr];
    if (!last || last.value !== value) { seen[expr] = {value: value, since: now}; return false; }
    return now - last.since >= quietMs;
}"""

# what the eye sees of a page's drawings: each chart's box and its drawn layers (charts are drawn after the
# script run ends, and again when their column or tab is laid out)
LAYOUT_EXPR = """Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"],'
    + ' [data-testid="stGraphVizChart"], [data-testid="stTable"], [data-testid="stDataFrame"]'))
    .map(e => { const b = e.getBoundingClientRect();
                return [Math.round(b.x), Math.round(b.y), Math.round(b.width), Math.round(b.height),
                        e.querySelectorAll('svg, canvas, .main-svg').length]; })"""


def wait_stable(pg, expression: str = LAYOUT_EXPR, quiet_ms: int = 400, timeout: float | None = None) -> None:
    """Wait until the JavaScript ``expression`` (a JSON-able value read in the page) has kept one value for
    ``quiet_ms`` (default: the drawings' boxes, i.e. the charts have finished laying out)."""
    pg.evaluate("(e) => { if (window.__adStable) delete window.__adStable[e]; }", expression)
    pg.wait_for_function(STABLE_JS, arg=[expression, quiet_ms], polling=100,
                         timeout=(timeout or TIMEOUT_S) * 1000)


def wait_drawn(pg, timeout: float | None = None) -> None:
    """The app idle, then its drawings laid out and still."""
    wait_idle(pg, timeout)
    wait_stable(pg, timeout=timeout)


def wait_until(pg, condition, what: str = "condition", timeout: float | None = None) -> None:
    """Wait until ``condition()`` (read in Python, e.g. a server log or a page's text) holds, letting the page
    run between readings (the browser's event loop answers a cheap evaluate at once), up to the overall
    timeout."""
    deadline = time.monotonic() + (timeout or TIMEOUT_S)
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout or TIMEOUT_S:.0f} s waiting for {what}")
        # not a fixed pause: the page's next animation frame (or its polling, when it is hidden)
        pg.wait_for_function("() => new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 50)))",
                             timeout=TIMEOUT_MS)
