"""Real-browser harness: one `streamlit run app/Home.py` per test session, Debian Chromium via Playwright.

Fixtures:
    app_url   base URL of the running app (session scope: one server for the whole run, started once);
              pages are at ``{app_url}/<Page_name>``.
    browser   a headless Chromium (session scope).
    page      a fresh Playwright page in a new browser context (per test); ``new_page(**context_args)``
              opens more (the same timeout, closed after the test, photographed if it fails).
    shot      ``shot(page, name)`` saves ``test-output/screenshots/<name>.png`` and returns the path.
    wait_idle ``wait_idle(page)`` waits until Streamlit has finished running the script.

Tests wait for conditions, never for the clock (under a class's load, fixed waits failed 8 of 9
tests): Playwright's ``expect(...)`` and locators auto-wait, :func:`wait_idle` waits until the app is idle
and stays so, :func:`wait_stable` until a value read in the page has stopped changing, :func:`wait_until`
until a condition read in Python holds. Each waits up to one generous overall timeout,
``$AUTODIFF_BROWSER_TIMEOUT_S`` (default :data:`DEFAULT_TIMEOUT_S`); on a quiet machine none of them waits
longer than its condition takes. A test that fails leaves a screenshot of each of its pages in
``test-output/failures/``.

Everything here is skipped cleanly when Playwright's Python package or /usr/bin/chromium is missing.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from browser_kit import TIMEOUT_MS, TIMEOUT_S, wait_idle as _wait_idle, wait_stable   # tests/browser is on the path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "test-output" / "screenshots"
FAILURES = ROOT / "test-output" / "failures"
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


def _wait_serving(url: str, proc: subprocess.Popen, log: Path, timeout: float = TIMEOUT_S) -> None:
    """Wait until Streamlit says it serves (its output, copied to ``log`` line by line as it comes), then check
    its health endpoint once; no polling."""
    serving, lines = threading.Event(), []

    def copy() -> None:
        with open(log, "ab") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                lines.append(line)
                if b"URL: http" in line or b"can now view" in line:
                    serving.set()
        serving.set()   # the output ended: the server exited (checked below)

    threading.Thread(target=copy, daemon=True).start()
    if not serving.wait(timeout):
        raise TimeoutError(f"streamlit did not start serving at {url} within {timeout:.0f} s")
    if proc.poll() is not None:
        raise RuntimeError(f"streamlit exited early with code {proc.returncode}: {b''.join(lines[-20:])!r}")
    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as r:
        assert r.status == 200, r.status


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
    log.write_bytes(b"")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_serving(url, proc, log)
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so that fixtures can tell a failed test when they close."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def _photograph_failure(request, pages) -> None:
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.failed:
        return
    FAILURES.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.nodeid.split("::", 1)[-1])[:150]
    for i, pg in enumerate(pages):
        with contextlib.suppress(Exception):   # a page that crashed has no picture to give; the test failed anyway
            pg.screenshot(path=str(FAILURES / f"{name}{'_' + str(i) if i else ''}.png"), full_page=True,
                          timeout=30_000)


@pytest.fixture
def new_page(browser, request):
    """``new_page(**context_args)``: a page in a new browser context with the overall timeout; every page opened
    is closed after the test and photographed into ``test-output/failures/`` when the test failed."""
    opened: list = []

    def open_one(**context_args):
        context_args.setdefault("viewport", {"width": 1400, "height": 1000})
        context = browser.new_context(**context_args)
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        opened.append((context, pg))
        return pg

    try:
        yield open_one
    finally:
        _photograph_failure(request, [pg for _, pg in opened])
        for context, _ in opened:
            context.close()


@pytest.fixture
def page(new_page):
    return new_page()


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
            wait_stable(pg)  # the charts re-laid out at the new size
        try:
            pg.screenshot(path=str(path), full_page=True)
        finally:
            if tall > size["height"]:
                pg.set_viewport_size(size)
        return path

    return _shot
