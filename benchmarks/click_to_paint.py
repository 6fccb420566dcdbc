"""Click-to-paint of Step in a real browser while a class of 50 steps too, on the deployment for 50 on 2 cores.

    python3 benchmarks/click_to_paint.py                        # 2 replicas behind HAProxy, 50 students, 4 pages
    python3 benchmarks/click_to_paint.py --students 0           # the same clicks on a quiet deployment
    python3 benchmarks/click_to_paint.py --replicas 1           # one server, no proxy

The deployment benchmarks/README.md recommends for a class of 50 on this 2-core machine: two Streamlit
replicas behind HAProxy with sticky sessions (``deploy/haproxy.cfg``, as ``tests/test_proxy.py`` starts it).
``--students`` simulated students (``benchmarks/load_test.py``'s sessions: Streamlit's own websocket protocol,
a Step every 2-4 s on the Expression explorer) connect through the proxy; meanwhile headless Debian Chromium
(Playwright) opens each stepped page in presentation mode through the proxy and clicks **Step** ``--clicks``
times. Each click's time runs from the button's ``pointerdown`` to the frame painted after the header shows the
next step (a MutationObserver, then two animation frames). Reports p50 / p95 / max per page and over all
clicks (with 6 clicks a page the p95 is the slowest click: use ``--clicks 20`` or more), and per page the
median of where a click's time went: the app's script state turning "running" and "notRunning", the new
header in the DOM, the paint, and the main thread's long tasks in between. The goal: p95 <= 1 s.
A measurement, not a test; everything on loopback, bounded in time.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the sibling module below
    sys.path.insert(0, str(ROOT))

from benchmarks.load_test import Stats, free_port, pct, start_server, stop_server, student  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
PAGES = ("Expression_explorer", "Backprop_orders", "Network_explorer", "Topological_sort", "Forward_vs_reverse")

WATCH_JS = r"""() => {
  window.__paints = [];
  window.__long = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const app = document.querySelector('[data-testid="stApp"]');
  const header = () => { const m = main.innerText.match(/Step (\d+) of (\d+)/); return m ? +m[1] : null; };
  let shown = header();
  let click = null;   // {at, running, done}: the click being timed
  try {   // main-thread tasks over 50 ms (script, layout, Plotly): where the browser's time goes
    new PerformanceObserver(l => l.getEntries().forEach(e => window.__long.push([e.startTime, e.duration])))
      .observe({type: 'longtask', buffered: false});
  } catch (e) {}
  document.addEventListener('pointerdown', e => {
    const b = e.target.closest('button');
    if (b && /Step/.test(b.innerText)) click = {at: performance.now(), running: null, done: null};
  }, true);
  new MutationObserver(() => {
    if (!click) return;
    const state = app.getAttribute('data-test-script-state');
    const t = performance.now() - click.at;
    if (state === 'running' && click.running === null) click.running = t;
    if (state === 'notRunning' && click.running !== null && click.done === null) click.done = t;
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  new MutationObserver(() => {
    const k = header();
    if (k !== null && k !== shown) {
      shown = k;   // also when no Step was clicked (Start, or a rerun that set the step itself)
      if (!click) return;
      const c = click;
      click = null;
      const headerAt = performance.now() - c.at;
      requestAnimationFrame(() => requestAnimationFrame(() => {
        const ms = performance.now() - c.at;
        const busy = window.__long.filter(([s, d]) => s + d > c.at && s < c.at + ms)
                                  .reduce((a, [s, d]) => a + Math.min(s + d, c.at + ms) - Math.max(s, c.at), 0);
        window.__paints.push({k, ms, running: c.running, done: c.done, header: headerAt, busy});
      }));
    }
  }).observe(main, {subtree: true, childList: true, characterData: true});
}"""


def wait_http(url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} did not answer within {timeout:.0f} s")


def start_deployment(replicas: int) -> tuple[str, list]:
    """``replicas`` servers (behind HAProxy when more than one): (the URL a browser uses, what to stop)."""
    servers = []
    ports = []
    for _ in range(replicas):
        port = free_port()
        servers.append(start_server(port, None))
        ports.append(port)
    if replicas == 1:
        return f"127.0.0.1:{ports[0]}", servers
    if HAPROXY is None or replicas != 2:
        raise SystemExit("two replicas need Debian's haproxy (apt-get install haproxy) and deploy/haproxy.cfg")
    front = free_port()
    env = dict(os.environ, HAPROXY_BIND=f"127.0.0.1:{front}", APP1_ADDR=f"127.0.0.1:{ports[0]}",
               APP2_ADDR=f"127.0.0.1:{ports[1]}")
    hp = subprocess.Popen([HAPROXY, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_http(f"http://127.0.0.1:{front}/_stcore/health")
    return f"127.0.0.1:{front}", servers + [hp]


def class_in_background(host: str, n: int, seconds: float, stats: Stats) -> threading.Thread:
    """``n`` students stepping through the Expression explorer for ``seconds`` (their own event loop)."""
    async def run() -> None:
        rng = random.Random(0)
        stop_at = time.monotonic() + seconds
        stats.window = (time.monotonic() + 8.0, stop_at)
        await asyncio.gather(*(student(f"ws://{host}/_stcore/stream", stats, 8.0 * i / max(n, 1), stop_at,
                                       random.Random(rng.random()), (2.0, 4.0)) for i in range(n)))

    t = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    t.start()
    return t


def clicks_on(browser, url: str, clicks: int) -> list[dict]:
    pg = browser.new_page(viewport={"width": 1920, "height": 1080})
    pg.set_default_timeout(60_000)
    pg.goto(url)
    pg.get_by_text(re.compile(r"Step \d+ of \d+")).first.wait_for(timeout=90_000)
    pg.wait_for_timeout(1500)
    pg.evaluate(WATCH_JS)
    step = pg.get_by_role("button", name=re.compile(r"^\W*Step\b")).first
    start = pg.get_by_role("button", name=re.compile(r"^\W*Start\b")).first
    lost = 0
    for i in range(clicks):
        if at_last_step(pg):  # Step does nothing at the last step: back to the start (not timed), as a lecturer would
            start.click()
            pg.get_by_text(re.compile(r"^Step 1 of \d+")).first.wait_for(timeout=60_000)
            pg.wait_for_timeout(500)
        before = pg.evaluate("window.__paints.length")
        step.click()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and pg.evaluate("window.__paints.length") <= before:
            pg.wait_for_timeout(20)
        if pg.evaluate("window.__paints.length") <= before:  # never painted: said, not timed (and not
            lost += 1                                           # waited for again at every later click)
        pg.wait_for_timeout(random.uniform(400, 900))  # a lecturer reads before the next click
    paints = pg.evaluate("window.__paints")
    pg.close()
    if lost:
        print(f"  {lost} of {clicks} clicks on {url} never showed the next step within 30 s", flush=True)
    return paints


def at_last_step(pg) -> bool:
    """Whether the page's header says "Step n of n"."""
    m = re.search(r"Step (\d+) of (\d+)", pg.inner_text('[data-testid="stMain"]'))
    return bool(m) and m.group(1) == m.group(2)


def breakdown(paints: list[dict]) -> str:
    """Medians of where a click's time went: the script state turning "running" and "notRunning" (the
    server's run and its deltas arriving), the new header in the DOM, the paint; and the main thread's
    long tasks (over 50 ms) between the click and the paint."""
    def med(name: str) -> str:
        xs = [p[name] for p in paints if p.get(name) is not None]
        return f"{pct(xs, 50):.0f}" if xs else "-"
    return (f"median: running at {med('running')}, notRunning at {med('done')}, header at {med('header')}, "
            f"paint at {med('ms')} ms; main thread busy (long tasks) {med('busy')} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=50)
    ap.add_argument("--replicas", type=int, default=2, choices=(1, 2))
    ap.add_argument("--clicks", type=int, default=8, help="Step clicks per page")
    ap.add_argument("--page", action="append", choices=PAGES, help="pages to click through (default: all)")
    args = ap.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("Playwright's Python package is not installed")
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    pages = args.page or list(PAGES)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # a kill still stops the servers and the proxy
    host, procs = start_deployment(args.replicas)
    stats = Stats()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            for page in pages:  # warm both replicas' caches of each page once, as a lecturer's rehearsal would
                clicks_on(browser, f"http://{host}/{page}?present=1", 1)
            budget = 30 + len(pages) * args.clicks * 4.0
            if args.students:
                class_in_background(host, args.students, budget, stats)
                time.sleep(10)  # the class has connected
            every: list[float] = []
            for page in pages:
                paints = clicks_on(browser, f"http://{host}/{page}?present=1", args.clicks)
                ms = [p["ms"] for p in paints]
                every += ms
                print(f"{page:22s} {len(ms)} clicks: p50 {pct(ms, 50):.0f} ms, p95 {pct(ms, 95):.0f} ms, "
                      f"max {max(ms):.0f} ms", flush=True)
                print(f"{'':22s} {breakdown(paints)}", flush=True)
            browser.close()
        print(f"{'all pages':22s} {len(every)} clicks: p50 {pct(every, 50):.0f} ms, p95 {pct(every, 95):.0f} ms, "
              f"max {max(every):.0f} ms  ({args.students} students stepping, {args.replicas} replica(s)"
              f"{' behind HAProxy' if args.replicas > 1 else ''}; the students' own Steps: "
              f"{len(stats.steps)} measured, p95 {(pct(stats.steps, 95) or 0) * 1000:.0f} ms, errors {stats.errors})")
    finally:
        for p in reversed(procs):
            if isinstance(p, subprocess.Popen) and p.args and str(p.args[0]).endswith("haproxy"):
                p.terminate()
                p.wait(10)
            else:
                stop_server(p)


if __name__ == "__main__":
    main()
