"""Every page under a class's load, in a real browser: open time, Step click-to-paint, Play's pace.

    python benchmarks/under_load.py                                   # every page, N = 2 x cores, 5 trainings
    python benchmarks/under_load.py --quick --pages Topological_sort  # one page, one busy process, no training

Starts ``streamlit run app/Home.py`` on a free loopback port and measures Play on ``--play-pages`` while the
machine is quiet (the baseline). Then it loads the machine: ``--load`` busy processes (``while True: pass``,
default twice the cores) and ``--trainings`` browser sessions that each start a long Sentiment training
(``?epochs=3000``) and keep watching it (the server keeps answering their progress polls). Those sessions stand
for students' laptops: they run in a Chromium of their own, in a session of its own (Linux schedules each
session's processes as one group beside the others, as it does each busy process), so that redrawing their
curves every second is one more load on the machine rather than a queue inside the measured browser
(``--same-browser``: in the measured browser, as before). Under that load it opens every page (or ``--pages``) in a fresh headless Chromium
session (Debian's ``/usr/bin/chromium`` through Playwright) and reports, per page:

* **first paint**: from ``goto`` until the page's title is painted; **open**: until its first run has ended and
  nothing on it is stale (the page is usable);
* **Step p50 / p95**: where the page has a stepper, ``--steps`` clicks on **Step**, each from the click (a
  capture listener in the page) to the paint of the next step's header (a MutationObserver), in the page's
  own clock;
* **errors**: Streamlit exception boxes (``stException``: must be 0) and error alerts whose text says a request
  was stopped or failed (a deadline met under load: must be 0; a page's intended errors, such as the
  Backprop orders' RecursionError demonstration, are not counted);

and, for each ``--play-pages`` page, Play at "normal (1 s / step)" from ``--play-from`` to the last step:
its duration under load against the quiet baseline (the goal: within 20 %). Every process it starts (the
server, the busy processes, the browser) is stopped at the end, also on Ctrl-C. A measurement, not a test.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGES = [p.stem.split("_", 1)[1] for p in sorted((ROOT / "app" / "pages").glob("[0-9]*_*.py"),
                                                  key=lambda p: int(p.stem.split("_")[0]))]
# an alert that reports a request stopped or failed (not a page's own lesson, e.g. the RecursionError demo)
FAILED_RE = re.compile(r"stopped: this took more than|could not run|Too expensive just now|server is busy|"
                       r"failed \(|Traceback", re.I)

IDLE_JS = """() => { const a = document.querySelector('[data-testid="stApp"]');
  return Boolean(a) && a.getAttribute('data-test-script-state') === 'notRunning'
         && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]'); }"""
# the step header's changes and the clicks, timed in the page (performance.now(), ms)
WATCH_JS = r"""() => {
  window.__adPaints = []; window.__adClicks = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const header = () => { const m = main.innerText.match(/Step (\d+) of (\d+)/); return m ? [+m[1], +m[2]] : null; };
  let last = header(); window.__adHeader = last;
  document.addEventListener('click', () => window.__adClicks.push(performance.now()), true);
  new MutationObserver(() => {
    const h = header();
    if (h && (!last || h[0] !== last[0])) { last = h; window.__adHeader = h;
                                            window.__adPaints.push({k: h[0], t: performance.now()}); }
  }).observe(main, {subtree: true, childList: true, characterData: true});
  return last;
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, timeout: float) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "Home.py"),
                             "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    end = time.monotonic() + timeout
    for line in proc.stdout:   # Streamlit says when it serves; no polling
        if b"URL: http" in line or time.monotonic() > end:
            break
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()   # keep its pipe drained
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=timeout) as r:
        if r.status != 200:
            raise SystemExit(f"the server is not healthy: {r.status}")
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def busy_processes(n: int) -> list[subprocess.Popen]:
    """``n`` processes that each keep a core busy (what a class's other work does to the server)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(n)]


def wait_for(pg, what: str, expression: str, timeout_ms: float, polling: int = 20) -> None:
    """``pg.wait_for_function(expression)``; when it runs out, an error that says which wait it was, on which
    page, with the page's step header and its picture (test-output/under_load_timeout.png)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        pg.wait_for_function(expression, polling=polling, timeout=timeout_ms)
    except PlaywrightTimeout:
        shot = ROOT / "test-output" / "under_load_timeout.png"
        shot.parent.mkdir(exist_ok=True)
        try:
            pg.screenshot(path=str(shot), full_page=True)
            state = pg.evaluate("() => [window.__adHeader, document.querySelector('[data-testid=\"stApp\"]')"
                                "?.getAttribute('data-test-script-state'), "
                                "document.querySelectorAll('[data-stale=\"true\"], [data-testid=\"stSkeleton\"]').length]")
        except Exception as e:  # noqa: BLE001 - the page may be gone; the message still names the wait
            state = f"(page not readable: {e})"
        raise RuntimeError(f"{what}: not within {timeout_ms / 1000:.0f} s on {pg.url} "
                           f"(step header, script state, stale elements: {state}; picture: {shot})") from None


def wait_idle(pg, timeout_ms: float) -> None:
    wait_for(pg, "the page idle", IDLE_JS, timeout_ms, polling=50)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def open_page(browser, url: str, timeout_ms: float):
    """A fresh session on ``url``: (page, context, first paint s, open s)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(timeout_ms)
    t0 = time.monotonic()
    pg.goto(url)
    pg.locator("h1").first.wait_for()
    first = time.monotonic() - t0
    wait_idle(pg, timeout_ms)
    return pg, context, first, time.monotonic() - t0


def errors_on(pg) -> tuple[int, list[str]]:
    """(exception boxes, texts of the error alerts that report a failed or stopped request)."""
    exceptions = pg.locator('[data-testid="stException"]').count()
    alerts = pg.locator('[data-testid="stAlertContentError"], [data-testid="stAlertContentWarning"], '
                        '[data-testid="stAlertContentInfo"], [data-testid="stCaptionContainer"]').all_inner_texts()
    return exceptions, [a.strip()[:120] for a in alerts if FAILED_RE.search(a)]


def measure_steps(pg, steps: int, timeout_ms: float) -> list[float]:
    """Click Step ``steps`` times (each after the previous one has painted); each click-to-paint in seconds."""
    start = pg.evaluate(WATCH_JS)
    button = pg.get_by_role("button", name=re.compile(r"^\W*Step\b"))
    if start is None or button.count() == 0:
        return []
    out = []
    for _ in range(steps):
        k, n = pg.evaluate("window.__adHeader")
        if k >= n:
            break
        clicks = pg.evaluate("window.__adClicks.length")
        button.first.click()
        wait_for(pg, f"Step's paint after step {k}", f"() => window.__adHeader && window.__adHeader[0] > {k}",
                 timeout_ms)
        click = pg.evaluate(f"window.__adClicks[{clicks}]")
        paint = pg.evaluate(f"window.__adPaints.find(p => p.k > {k} && p.t >= {click}).t")
        out.append((paint - click) / 1000)
        wait_idle(pg, timeout_ms)
    return out


def measure_play(browser, url: str, timeout_ms: float) -> tuple[float, int, int]:
    """Press Play on ``url`` (its speed: the default, 1 s a step) and time it to the last step's paint:
    (seconds, steps advanced, steps painted)."""
    pg, context, _, _ = open_page(browser, url, timeout_ms)
    try:
        k0, n = pg.evaluate(WATCH_JS)
        pg.get_by_role("button", name=re.compile(r"\bPlay\b")).first.click()
        try:
            wait_for(pg, f"Play's last step ({n})", f"() => window.__adHeader && window.__adHeader[0] >= {n}",
                     timeout_ms)
        except RuntimeError as e:   # which way it stood: Play never started ("Play") or its timer stopped ("Pause")
            label = pg.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] button')]"
                                ".map(b => b.innerText).find(t => /\\b(Play|Pause)\\b/.test(t)) || '(none)'")
            raise RuntimeError(f"{e}; the Play/Pause button reads {label!r}") from None
        click, paints = pg.evaluate("window.__adClicks[0]"), pg.evaluate("window.__adPaints")
        last = next(p["t"] for p in paints if p["k"] >= n)
        return (last - click) / 1000, n - k0, len(paints)
    finally:
        context.close()


def own_session_chromium(folder: Path) -> Path:
    """A launcher for Debian's Chromium in a session of its own (``setsid``): the scheduler then shares the CPU
    between it and the measured browser as between two busy processes."""
    path = folder / "chromium-own-session"
    path.write_text(f'#!/bin/sh\nexec setsid {CHROMIUM} "$@"\n')
    path.chmod(0o755)
    return path


def start_trainings(browser, url: str, k: int, timeout_ms: float) -> list:
    """``k`` sessions, each training a long Sentiment run (their progress polls go on while the pages are measured)."""
    contexts = []
    for _ in range(k):
        pg, context, _, _ = open_page(browser, f"{url}/Sentiment_training?epochs=3000", timeout_ms)
        pg.get_by_role("button", name=re.compile(r"^\W*Start training")).first.click()
        contexts.append(context)
    return contexts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--load", type=int, default=None, help="busy processes (default: 2 x cores; --quick: 1)")
    ap.add_argument("--trainings", type=int, default=None, help="Sentiment trainings running (default 5; --quick: 0)")
    ap.add_argument("--pages", default="", help="comma-separated page names (default: every page), e.g. "
                    "Topological_sort,Gradient_check")
    ap.add_argument("--steps", type=int, default=None, help="Step clicks per stepper page (default 10; --quick: 2)")
    ap.add_argument("--play-pages", default="Expression_explorer", help="pages whose Play is timed ('' for none)")
    ap.add_argument("--play-from", type=int, default=None, help="the step Play starts from (default 1: the "
                    "slide example's 13 steps; --quick: 11)")
    ap.add_argument("--quick", action="store_true", help="a short run: one busy process, no training, 2 Steps, "
                    "Play over the last 3 steps (for CI's check of the documented commands)")
    ap.add_argument("--same-browser", action="store_true", help="the trainings' sessions in the measured browser "
                    "(default: a Chromium of their own, in a session of its own, as students' laptops would be)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds any one wait may take")
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 2
    load = args.load if args.load is not None else (1 if args.quick else 2 * cores)
    trainings = args.trainings if args.trainings is not None else (0 if args.quick else 5)
    steps = args.steps if args.steps is not None else (2 if args.quick else 10)
    play_from = args.play_from if args.play_from is not None else (11 if args.quick else 1)
    pages = [p for p in args.pages.split(",") if p] or PAGES
    unknown = [p for p in pages if p not in PAGES]
    if unknown:
        ap.error(f"unknown pages {unknown}; the pages are {', '.join(PAGES)}")
    play_pages = [p for p in args.play_pages.split(",") if p]
    timeout_ms = args.timeout * 1000

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("needs Playwright (pip install playwright) and Debian's Chromium at /usr/bin/chromium")
        return 2
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port, args.timeout)
    busy: list[subprocess.Popen] = []
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                quiet = {}
                for name in play_pages:   # the baseline, on a quiet machine (the server warmed by a first open)
                    _, ctx, _, _ = open_page(browser, f"{url}/{name}?step={play_from}", timeout_ms)
                    ctx.close()
                    quiet[name] = measure_play(browser, f"{url}/{name}?step={play_from}", timeout_ms)
                busy = busy_processes(load)
                watchers = browser if args.same_browser or not trainings else pw.chromium.launch(
                    executable_path=str(own_session_chromium(Path(tmp))), args=CHROMIUM_ARGS)
                training = start_trainings(watchers, url, trainings, timeout_ms)
                print(f"under load: {load} busy processes on {cores} cores, {len(training)} trainings; "
                      f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
                print("| page | first paint (s) | open (s) | Step p50 / p95 (s) | Steps | exception boxes | "
                      "failed-request lines |")
                print("|---|---|---|---|---|---|---|")
                worst = {"exceptions": 0, "failed": 0}
                for name in pages:
                    pg, ctx, first, opened = open_page(browser, f"{url}/{name}", timeout_ms)
                    try:
                        clicks = measure_steps(pg, steps, timeout_ms)
                        exceptions, failed = errors_on(pg)
                    finally:
                        ctx.close()
                    worst["exceptions"] += exceptions
                    worst["failed"] += len(failed)
                    step_txt = (f"{statistics.median(clicks):.2f} / {pct(clicks, 0.95):.2f}" if clicks else "—")
                    print(f"| {name} | {first:.1f} | {opened:.1f} | {step_txt} | {len(clicks)} | {exceptions} | "
                          f"{len(failed)}{': ' + '; '.join(failed) if failed else ''} |", flush=True)
                for name in play_pages:
                    loaded = measure_play(browser, f"{url}/{name}?step={play_from}", timeout_ms)
                    q = quiet[name]
                    print(f"Play on {name} from step {play_from}: {loaded[1]} steps at 1 s/step took {loaded[0]:.1f} s "
                          f"under load ({loaded[2]} painted), {q[0]:.1f} s quiet ({q[2]} painted): "
                          f"ratio {loaded[0] / q[0]:.2f}", flush=True)
                print(f"load average {os.getloadavg()[0]:.1f} at the end; exception boxes {worst['exceptions']}, "
                      f"failed-request lines {worst['failed']}")
                for ctx in training:
                    ctx.close()
                if watchers is not browser:
                    watchers.close()
            finally:
                browser.close()
    finally:
        for p in busy:
            stop(p)
        stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
