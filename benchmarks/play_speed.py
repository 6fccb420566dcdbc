"""Play's speed in a real browser: how long 13 steps take at "normal (1 s / step)", and whether the slider keeps up.

    python3 benchmarks/play_speed.py              # the Expression explorer's slide example, 3 runs
    python3 benchmarks/play_speed.py --runs 1 --page Backprop_orders

Starts ``streamlit run app/Home.py`` on a free loopback port, opens the page in headless Debian Chromium
(Playwright, ``/usr/bin/chromium``), presses Play and records in the page, with a MutationObserver, the time
each new step's header ("Step k of n") is painted and the slider's value at that moment and 150 ms later.
Reports the time from the first step to the last (13 steps for the slide example's 14), each step's interval,
and the slider's lag (how many of the painted steps showed a slider behind the header). The goal:
13 steps in 13 +/- 1.5 s on a quiet machine, the slider in step. A measurement, not a test: run it on a quiet
machine, several times.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"

WATCH_JS = r"""() => {
  window.__steps = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const header = () => { const m = main.innerText.match(/Step (\d+) of (\d+)/); return m ? +m[1] : null; };
  const slider = () => { const s = main.querySelector('[role="slider"]');
                         return s ? +s.getAttribute('aria-valuenow') : null; };
  let last = header();
  new MutationObserver(() => {
    const k = header();
    if (k !== null && k !== last) {
      last = k;
      const rec = {k, t: performance.now(), slider: slider()};
      window.__steps.push(rec);
      setTimeout(() => { rec.slider150 = slider(); }, 150);
    }
  }).observe(main, {subtree: true, childList: true, characterData: true});
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "Home.py"),
                             "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise SystemExit("the server did not start within 90 s")


def wait_quiet(pg, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    quiet = None
    while time.monotonic() < deadline:
        running = pg.evaluate("""() => { const a = document.querySelector('[data-testid="stApp"]');
                                         return a && a.getAttribute('data-test-script-state') === 'running'; }""")
        if not running:
            quiet = quiet or time.monotonic()
            if time.monotonic() - quiet > 0.8:
                return
        else:
            quiet = None
        pg.wait_for_timeout(100)


def one_run(browser, url: str) -> dict:
    pg = browser.new_page(viewport={"width": 1920, "height": 1080})
    pg.goto(url)
    wait_quiet(pg)
    pg.wait_for_timeout(1000)
    pg.evaluate(WATCH_JS)
    play = pg.get_by_role("button", name=re.compile(r"^\W*Play\b")).first
    play.hover()
    pg.evaluate("window.__t0 = performance.now()")
    play.click()
    n = int(re.search(r"Step \d+ of (\d+)", pg.locator('[data-testid="stMain"]').inner_text()).group(1))
    deadline = time.monotonic() + 4 * n + 20
    while time.monotonic() < deadline:
        steps = pg.evaluate("window.__steps")
        if steps and steps[-1]["k"] == n:
            break
        pg.wait_for_timeout(200)
    pg.wait_for_timeout(400)
    steps = pg.evaluate("window.__steps")
    t0 = pg.evaluate("window.__t0")
    pg.close()
    if not steps or steps[-1]["k"] != n:
        return {"error": f"Play did not reach step {n}: {[s['k'] for s in steps]}"}
    # step 1 is shown when Play is pressed: n - 1 steps from the press to step n
    times = [t0] + [s["t"] for s in steps]
    intervals = [(b - a) / 1000 for a, b in zip(times, times[1:])]
    return {"steps": len(steps), "last": n, "intervals": intervals,
            "slider_behind_after_150ms": sum(1 for s in steps if s.get("slider150") not in (None, s["k"])),
            "slider_behind_at_paint": sum(1 for s in steps if s["slider"] not in (None, s["k"]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--page", default="Expression_explorer")
    args = ap.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("Playwright's Python package is not installed (pip install playwright)")
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    port = free_port()
    proc = start_server(port)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                                                        "--disable-gpu"])
            for r in range(args.runs):
                res = one_run(browser, f"http://127.0.0.1:{port}/{args.page}?step=1&present=1")
                if "error" in res:
                    print(f"run {r + 1}: {res['error']}")
                    continue
                iv = res["intervals"]
                print(f"run {r + 1}: {len(iv)} steps (Play pressed on step 1 .. step {res['last']}) in {sum(iv):.2f} s "
                      f"(per step: mean {statistics.mean(iv):.2f} s, min {min(iv):.2f}, "
                      f"max {max(iv):.2f}); slider behind the header at paint: {res['slider_behind_at_paint']} "
                      f"of {res['steps']}, 150 ms later: {res['slider_behind_after_150ms']}")
            browser.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)


if __name__ == "__main__":
    main()
