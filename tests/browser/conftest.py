"""Real-browser harness: one `streamlit run app/Home.py` per test session, Debian Chromium via Playwright.

Fixtures:
    app_url   base URL of the running app (session scope); pages are at ``{app_url}/<Page_name>``.
    browser   a headless Chromium (session scope).
    page      a fresh Playwright page in a new browser context (per test).
    shot      ``shot(page, name)`` saves ``test-output/screenshots/<name>.png`` and returns the path.
    wait_idle ``wait_idle(page)`` waits until Streamlit has finished running the script.

Everything here is skipped cleanly when Playwright's Python package or /usr/bin/chromium is missing.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None


def _skip_reason() -> str | None:
    if sync_playwright is None:
        return "playwright is not installed"
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _skip_reason()
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"streamlit did not become healthy at {url} within {timeout:.0f} s")


@contextlib.contextmanager
def streamlit_server(script: str | Path, log: Path, extra_env: dict[str, str] | None = None,
                     app_args: tuple[str, ...] = (), drop_env: tuple[str, ...] = ()):
    """``streamlit run script [-- app_args]`` on a free loopback port, from the repo root (so the repo's own
    ``.streamlit/config.toml`` applies), with this checkout's code first on the path and the variables in
    ``drop_env`` removed; yields the URL."""
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port),
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    if app_args:
        cmd += ["--", *app_args]
    # this checkout's code first (not another checkout's editable install): test configuration only
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", None)  # the app's own setting: no tracebacks in browsers
    env.update(extra_env or {})
    for name in drop_env:
        env.pop(name, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_health(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def start_streamlit():
    """``start_streamlit(script, log, extra_env)``: a context manager serving another script (see
    :func:`streamlit_server`), for tests that need a server of their own."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    return streamlit_server


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with streamlit_server("app/Home.py", log) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


def _wait_idle(pg, timeout: float = 30.0) -> None:
    """Wait until the app has rendered and no script run is in progress."""
    pg.wait_for_selector('[data-testid="stApp"]', timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        # the status widget is hidden in presentation mode: the app's own script state says it too
        running = pg.evaluate("""() => { const a = document.querySelector('[data-testid="stApp"]');
                                         const s = a && a.getAttribute('data-test-script-state');
                                         return Boolean(s) && s !== 'notRunning'; }""") or (
            pg.locator('[data-testid="stStatusWidget"]').count() > 0 and
            pg.locator('[data-testid="stStatusWidget"]').first.is_visible())
        stale = pg.locator('[data-stale="true"], [data-testid="stSkeleton"]').count() > 0
        if not running and not stale:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 0.6:  # stays quiet: no rerun queued right after
                return
        else:
            quiet_since = None
        pg.wait_for_timeout(100)
    raise TimeoutError("Streamlit kept running for %.0f s" % timeout)


@pytest.fixture
def wait_idle():
    return _wait_idle


@pytest.fixture
def shot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def _shot(pg, name: str) -> Path:
        """Screenshot of the whole page: Streamlit scrolls inside its own container, so the viewport is
        grown to the content's height for the picture and then restored."""
        path = SCREENSHOTS / f"{name}.png"
        size = pg.viewport_size or {"width": 1400, "height": 1000}
        height = pg.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
                                        return Math.max(m ? m.scrollHeight : 0, document.body.scrollHeight); }""")
        tall = min(max(int(height), size["height"]), 8000)
        if tall > size["height"]:
            pg.set_viewport_size({"width": size["width"], "height": tall})
            pg.wait_for_timeout(400)  # let charts re-layout
        try:
            pg.screenshot(path=str(path), full_page=True)
        finally:
            if tall > size["height"]:
                pg.set_viewport_size(size)
        return path

    return _shot
