"""A class on one server: N students step through the slide example while K of them train, measured.

    python3 benchmarks/load_test.py                       # N = 10, 25, 50 x K = 0, 5; 40 s each
    python3 benchmarks/load_test.py --students 50 --trainers 5 --seconds 60
    python3 benchmarks/load_test.py --students 50 --trainers 5 --replicas 2   # two servers, sticky split

For each configuration the script starts a fresh ``streamlit run app/Home.py`` on 127.0.0.1 (a free
port), opens N + K real sessions over Streamlit's own websocket protocol (``BackMsg`` / ``ForwardMsg``
protobufs, as a browser sends them, without the browser) and then, for ``--seconds``:

* each student session sits on the Expression explorer (the slide example) and clicks **Step** every
  2-4 s at random (a student following the lecture), back to **Start** at the last step; the click
  reruns the stepper's fragment (the buttons' own fragment id, as a browser sends it); a Step's
  latency runs from sending the click to the server's ``script_finished`` for that rerun;
* each trainer session opens Sentiment training with a long run (``?epochs=3000``), clicks **Start
  training** and polls its progress once a second, as the page's fragment makes a browser do;
* ``/_stcore/health`` is fetched every 0.5 s; the server's CPU and memory (and its training
  processes') are read from ``/proc`` every 0.5 s.

It reports p50 / p95 / max Step latency, steps and errors (exceptions shown on a page, failed runs,
dropped connections, Steps without an answer within 30 s), health-check latency, server CPU and peak
memory. Everything is loopback only, bounded in count (at most 200 sessions) and time (each
configuration stops after ``--seconds`` plus a fixed ramp-up; the whole run has a hard deadline), and
the server and its children are stopped at the end of each configuration.

The client runs on the same machine as the server, so its own CPU (parsing ~32 KB of protobufs per
Step) is part of the load: the figures are an upper bound of what a server with remote browsers sees.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import websockets

from explorer.kit.streamlit_private import private

BackMsg, ForwardMsg = private("BackMsg"), private("ForwardMsg")   # the websocket's messages

ROOT = Path(__file__).resolve().parents[1]
MAX_SESSIONS = 200
STEP_TIMEOUT_S = 30.0
RAMP_S = 8.0               # sessions connect over this many seconds before the measured window opens
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------
# the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int | None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if workers:
        env["AUTODIFF_TRAINING_WORKERS"] = str(workers)
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "Home.py"), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    # the server's log goes to a file: a pipe nobody reads would fill up and stall the server's logging
    log = tempfile.NamedTemporaryFile("w+b", prefix="load_test_server_", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log_path = log.name
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited: {Path(proc.log_path).read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    stop_server(proc)
    raise RuntimeError("streamlit did not answer /_stcore/health within 90 s")


def descendants(pid: int) -> list[int]:
    """Processes below ``pid`` (the fork server and the training processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


def stop_server(proc: subprocess.Popen) -> None:
    kids = descendants(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for pid in kids:  # only the processes this server started
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cpu_and_rss(pid: int) -> tuple[float, int]:
    """(CPU seconds used so far, resident bytes) of one process; (0, 0) once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
        rss = int(fields[21]) * PAGE_SIZE
        return cpu, rss
    except (OSError, IndexError, ValueError):
        return 0.0, 0


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all processes, every core), from ``/proc/stat``."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


def run_delay(pid: int) -> float:
    """Seconds the process's threads have spent runnable but waiting for a CPU (``/proc/.../schedstat``):
    how much the machine, not the server's own work, held the server back."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                    total += int(fh.read().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    except OSError:
        return 0.0
    return total / 1e9


# ---------------------------------------------------------------------------
# the protocol


# page name -> its script hash, as the server's new_session message lists them (read_run fills it in)
PAGE_HASHES: dict[str, str] = {}


def rerun_msg(page: str, query: str = "", triggers: tuple[str, ...] = (), fragment_id: str = "",
              auto: bool = False) -> bytes:
    """A rerun request as a browser sends it: the page by name, and by its hash once the server has named it
    (without the hash, a run takes the main script's hash as its own, and an ``st.rerun()`` in it, a fixed
    figure's poll finding its figure ready, then runs the home page in that session)."""
    msg = BackMsg()
    cs = msg.rerun_script
    cs.query_string = query
    cs.page_name = page
    cs.page_script_hash = PAGE_HASHES.get(page, "")
    cs.fragment_id = fragment_id
    cs.is_auto_rerun = auto
    cs.context_info.timezone = "UTC"
    cs.context_info.locale = "en-US"
    for wid in triggers:
        w = cs.widget_states.widgets.add()
        w.id = wid
        w.trigger_value = True
    return msg.SerializeToString()


@dataclass
class Reply:
    """What one script run sent, read until its ``script_finished``."""
    ok: bool                         # finished successfully, with no exception element
    buttons: dict[str, str]          # label -> widget id
    button_ids: list[str]            # every button's id, in order (widget keys are in them)
    fragments: dict[str, str]        # label -> the fragment its button is in ("": the page's body)
    exceptions: list[str]
    texts: list[str]                 # markdown and alert bodies
    autos: dict[str, float]          # fragment id -> auto-rerun interval (s)


async def read_run(ws, timeout: float, on_text: Callable[[str], None] | None = None) -> Reply:
    """Read one script run's messages (a rerun message already sent) until it finishes; a run cut short by a
    newer one (a fragment's poll) is waited through. ``on_text`` sees each text as it arrives."""
    buttons: dict[str, str] = {}
    fragments: dict[str, str] = {}
    ids: list[str] = []
    exceptions: list[str] = []
    texts: list[str] = []
    autos: dict[str, float] = {}
    end = time.monotonic() + timeout
    while True:
        raw = await asyncio.wait_for(ws.recv(), max(0.01, end - time.monotonic()))
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        kind = fm.WhichOneof("type")
        if kind == "new_session":   # the app's pages (a first list names only the page asked for, by the main hash)
            ns = fm.new_session
            PAGE_HASHES.update({p.url_pathname.replace(" ", "_"): p.page_script_hash for p in ns.app_pages
                                if p.page_script_hash != ns.main_script_hash})
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            etype = el.WhichOneof("type")
            if etype == "button":
                buttons[el.button.label] = el.button.id
                fragments[el.button.label] = fm.delta.fragment_id
                ids.append(el.button.id)
            elif etype == "exception":
                exceptions.append(el.exception.message[:200])
            elif etype in ("markdown", "alert"):
                body = el.markdown.body if etype == "markdown" else el.alert.body
                texts.append(body)
                if on_text is not None:
                    on_text(body)
        elif kind == "auto_rerun":
            autos[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
        elif kind == "script_finished":
            status = fm.script_finished
            if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                continue  # a newer run (a fragment's poll) took over; wait for it
            ok = status in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
            return Reply(ok and not exceptions, buttons, ids, fragments, exceptions, texts, autos)


@dataclass
class RunResult:
    ok: bool
    buttons: dict[str, str]
    fragments: dict[str, str]        # label -> the fragment its button is in: a browser's click reruns that
    exceptions: list[str]
    auto_rerun: tuple[float, str] | None
    texts: list[str]


class Session:
    """One browser tab: a websocket, and script runs awaited one at a time."""

    def __init__(self, url: str, stats: "Stats"):
        self.url, self.stats = url, stats
        self.ws = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                           open_timeout=30, ping_interval=None)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, payload: bytes, timeout: float = STEP_TIMEOUT_S) -> RunResult:
        """Send one rerun and read until its ``script_finished``."""
        async with self._lock:
            await self.ws.send(payload)
            r = await read_run(self.ws, timeout)
            auto = next(((interval, fid) for fid, interval in reversed(r.autos.items())), None)
            return RunResult(r.ok, r.buttons, r.fragments, r.exceptions, auto, r.texts)


@dataclass
class Stats:
    window: tuple[float, float] = (0.0, 0.0)
    steps: list[float] = field(default_factory=list)          # latencies (s) inside the window
    loads: list[float] = field(default_factory=list)          # first page run of each student
    polls: list[float] = field(default_factory=list)          # trainers' progress polls inside the window
    health: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    training_started: int = 0

    def error(self, kind: str, detail: str = "") -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if detail and len(self.examples) < 5:
            self.examples.append(f"{kind}: {detail}")

    def inside(self, t: float) -> bool:
        return self.window[0] <= t <= self.window[1]


async def student(url: str, stats: Stats, delay: float, stop_at: float, rng: random.Random,
                  pace: tuple[float, float]) -> None:
    await asyncio.sleep(delay)
    s = Session(url, stats)
    try:
        await s.open()
        t0 = time.monotonic()
        first = await s.run(rerun_msg("Expression_explorer"), timeout=90)
        stats.loads.append(time.monotonic() - t0)
        if not first.ok:
            stats.error("page failed", "; ".join(first.exceptions))
            return
        step_id, start_id = first.buttons["Step"], first.buttons["Start"]
        # a browser's click on a button inside a fragment (the stepper) reruns only that fragment
        fragment = first.fragments["Step"]
        at_step, n_steps = 0, 14  # the slide example: 14 steps (forward, backward, done)
        while True:
            await asyncio.sleep(rng.uniform(*pace))
            if time.monotonic() >= stop_at:
                return
            click = start_id if at_step >= n_steps - 1 else step_id
            t0 = time.monotonic()
            try:
                res = await s.run(rerun_msg("Expression_explorer", triggers=(click,), fragment_id=fragment))
            except asyncio.TimeoutError:
                stats.error("step timeout")
                continue
            t1 = time.monotonic()
            if stats.inside(t0):
                stats.steps.append(t1 - t0)
            at_step = 0 if click == start_id else at_step + 1
            if not res.ok:
                stats.error("step failed", "; ".join(res.exceptions))
    except (websockets.ConnectionClosed, OSError) as e:
        stats.error("connection", repr(e))
    except asyncio.TimeoutError:
        stats.error("page load timeout")
    finally:
        await s.close()


async def trainer(url: str, stats: Stats, delay: float, stop_at: float, epochs: int) -> None:
    await asyncio.sleep(delay)
    s = Session(url, stats)
    query = f"epochs={epochs}"
    try:
        await s.open()
        first = await s.run(rerun_msg("Sentiment_training", query=query), timeout=90)
        if not first.ok:
            stats.error("training page failed", "; ".join(first.exceptions))
            return
        started = await s.run(rerun_msg("Sentiment_training", query=query,
                                        triggers=(first.buttons["Start training"],)), timeout=90)
        if not started.ok or any("refused" in t for t in started.texts):
            stats.error("training refused", "; ".join(started.exceptions + started.texts)[:200])
        else:
            stats.training_started += 1
        interval, fragment = started.auto_rerun or (1.0, "")
        while time.monotonic() < stop_at:
            await asyncio.sleep(interval or 1.0)
            t0 = time.monotonic()
            try:
                res = await s.run(rerun_msg("Sentiment_training", query=query, fragment_id=fragment, auto=True))
            except asyncio.TimeoutError:
                stats.error("poll timeout")
                continue
            if stats.inside(t0):
                stats.polls.append(time.monotonic() - t0)
            if not res.ok:
                stats.error("poll failed", "; ".join(res.exceptions))
            if not res.auto_rerun:   # the run ended (short --epochs): the page polls no more, nor do we
                break
            interval, fragment = res.auto_rerun
    except (websockets.ConnectionClosed, OSError) as e:
        stats.error("connection", repr(e))
    except asyncio.TimeoutError:
        stats.error("training page timeout")
    finally:
        await s.close()


async def health_probe(port: int, stats: Stats, stop_at: float) -> None:
    def get() -> float:
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
                r.read()
        except OSError:
            stats.error("health failed")
        return time.monotonic() - t0

    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        latency = await asyncio.to_thread(get)
        if stats.inside(t0):
            stats.health.append(latency)
        await asyncio.sleep(0.5)


async def sampler(pids: list[int], stop_at: float, stats: Stats, out: dict) -> None:
    """Servers' and training processes' CPU over the window, and peak memory (summed over replicas)."""
    marks: dict[str, tuple[float, float]] = {}
    peak_server = peak_workers = 0
    while time.monotonic() < stop_at:
        now = time.monotonic()
        kids = [k for pid in pids for k in descendants(pid)]
        server_stats = [cpu_and_rss(pid) for pid in pids]
        cpu_s, rss_s = sum(c for c, _ in server_stats), sum(r for _, r in server_stats)
        kid_stats = [cpu_and_rss(k) for k in kids]
        cpu_w, rss_w = sum(c for c, _ in kid_stats), sum(r for _, r in kid_stats)
        peak_server, peak_workers = max(peak_server, rss_s), max(peak_workers, rss_w)
        if stats.inside(now):
            mine = time.process_time()  # this client's own CPU: it shares the machine with the server
            delay = sum(run_delay(pid) for pid in pids)
            marks.setdefault("start", (now, cpu_s, cpu_w, mine, delay, machine_busy()))
            marks["end"] = (now, cpu_s, cpu_w, mine, delay, machine_busy())
        await asyncio.sleep(0.5)
    if "start" in marks and marks["end"][0] > marks["start"][0]:
        (t0, s0, w0, c0, d0, m0), (t1, s1, w1, c1, d1, m1) = marks["start"], marks["end"]
        out["server_wait"] = (d1 - d0) / (t1 - t0)
        # everything else on the machine (other users' processes): busy minus this test's own processes
        out["others_cpu"] = max(0.0, ((m1 - m0) - (s1 - s0) - (w1 - w0) - (c1 - c0)) / (t1 - t0))
        out["server_cpu"] = (s1 - s0) / (t1 - t0)
        out["client_cpu"] = (c1 - c0) / (t1 - t0)
        out["workers_cpu"] = max(0.0, (w1 - w0) / (t1 - t0))  # workers that ended drop out: a lower bound
    out["server_rss"], out["workers_rss"] = peak_server, peak_workers


async def one_configuration(n: int, k: int, seconds: float, pace: tuple[float, float], epochs: int,
                            workers: int | None, seed: int, replicas: int = 1) -> dict:
    """One class: ``n`` students and ``k`` trainers over ``replicas`` servers (session i on replica i mod R,
    as a sticky proxy spreads new browsers)."""
    procs = []
    try:
        for _ in range(replicas):
            port = free_port()
            procs.append((port, start_server(port, workers)))
        urls = [f"ws://127.0.0.1:{port}/_stcore/stream" for port, _ in procs]
        for url in urls:
            warm = Session(url, Stats())  # the first run imports the pages' modules and fills the model cache
            await warm.open()
            await warm.run(rerun_msg("Expression_explorer"), timeout=120)
            await warm.run(rerun_msg("Sentiment_training"), timeout=120)
            await warm.close()
        idle_rss = sum(cpu_and_rss(proc.pid)[1] for _, proc in procs)
        stats = Stats()
        rng = random.Random(seed)
        t0 = time.monotonic()
        stats.window = (t0 + RAMP_S, t0 + RAMP_S + seconds)
        stop_at = stats.window[1]
        resources: dict = {}
        tasks = [student(urls[i % replicas], stats, RAMP_S * 0.7 * i / max(n, 1), stop_at,
                         random.Random(rng.random()), pace) for i in range(n)]
        tasks += [trainer(urls[(n + i) % replicas], stats, RAMP_S * 0.5 * i / max(k, 1), stop_at, epochs)
                  for i in range(k)]
        tasks += [health_probe(port, stats, stop_at) for port, _ in procs]
        tasks.append(sampler([proc.pid for _, proc in procs], stop_at, stats, resources))
        await asyncio.wait_for(asyncio.gather(*tasks), RAMP_S + seconds + 120)
        row = summarise(n, k, seconds, stats, resources, idle_rss)
        row["replicas"] = replicas
        row["server_tracebacks"] = [t for _, proc in procs for t in server_tracebacks(proc.log_path)]
        return row
    finally:
        for _, proc in procs:
            stop_server(proc)
            Path(proc.log_path).unlink(missing_ok=True)


def server_tracebacks(path: str, keep: int = 3) -> list[str]:
    """The last lines of the first few tracebacks the server logged (what a page's exception was)."""
    text = Path(path).read_text(errors="replace")
    out = []
    for chunk in text.split("Traceback (most recent call last):")[1:keep + 1]:
        lines = [ln for ln in chunk.splitlines() if ln.strip()]
        out.append(" | ".join(ln.strip() for ln in lines[-12:])[:1500])
    return out


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def summarise(n: int, k: int, seconds: float, stats: Stats, res: dict, idle_rss: int) -> dict:
    ms = lambda v: None if v is None else round(1000 * v)  # noqa: E731
    return {
        "students": n, "trainers": k, "seconds": seconds, "steps": len(stats.steps),
        "steps_per_s": round(len(stats.steps) / seconds, 1),
        "step_p50_ms": ms(pct(stats.steps, 50)), "step_p95_ms": ms(pct(stats.steps, 95)),
        "step_max_ms": ms(max(stats.steps) if stats.steps else None),
        "load_p95_ms": ms(pct(stats.loads, 95)),
        "poll_p95_ms": ms(pct(stats.polls, 95)), "trainings_started": stats.training_started,
        "health_p50_ms": ms(pct(stats.health, 50)), "health_p95_ms": ms(pct(stats.health, 95)),
        "health_max_ms": ms(max(stats.health) if stats.health else None),
        "server_cpu_pct": round(100 * res.get("server_cpu", 0.0)),
        "client_cpu_pct": round(100 * res.get("client_cpu", 0.0)),
        "server_cpu_wait_pct": round(100 * res.get("server_wait", 0.0)),
        "others_cpu_pct": round(100 * res.get("others_cpu", 0.0)),
        "load_average": round(os.getloadavg()[0], 1),
        "workers_cpu_pct": round(100 * res.get("workers_cpu", 0.0)),
        "server_rss_mb": round(res.get("server_rss", 0) / 2**20), "idle_rss_mb": round(idle_rss / 2**20),
        "workers_rss_mb": round(res.get("workers_rss", 0) / 2**20),
        "errors": dict(stats.errors), "error_examples": stats.examples,
    }


def markdown_table(rows: list[dict]) -> str:
    head = ("| replicas | students | training | Step p50 / p95 / max (ms) | Steps/s | health p50 / p95 / max (ms) | "
            "server CPU (waiting for a CPU) | training CPU | client CPU | other processes' CPU | "
            "server RSS peak (idle) | training RSS | errors |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        errors = sum(r["errors"].values())
        lines.append(
            f"| {r.get('replicas', 1)} | {r['students']} | {r['trainers']} ({r['trainings_started']} started) | "
            f"{r['step_p50_ms']} / {r['step_p95_ms']} / {r['step_max_ms']} | {r['steps_per_s']} | "
            f"{r['health_p50_ms']} / {r['health_p95_ms']} / {r['health_max_ms']} | {r['server_cpu_pct']}% "
            f"({r['server_cpu_wait_pct']}%) | "
            f"{r['workers_cpu_pct']}% | {r['client_cpu_pct']}% | {r['others_cpu_pct']}% | "
            f"{r['server_rss_mb']} MB ({r['idle_rss_mb']}) | {r['workers_rss_mb']} MB | "
            f"{errors}{' ' + json.dumps(r['errors']) if errors else ''} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, nargs="+", default=[10, 25, 50])
    ap.add_argument("--trainers", type=int, nargs="+", default=[0, 5])
    ap.add_argument("--seconds", type=float, default=40.0, help="measured window per configuration (<= 300)")
    ap.add_argument("--pace", type=float, nargs=2, default=[2.0, 4.0], metavar=("MIN_S", "MAX_S"),
                    help="seconds between a student's clicks (uniform)")
    ap.add_argument("--epochs", type=int, default=3000, help="epochs of each training run (long enough to last)")
    ap.add_argument("--workers", type=int, default=None,
                    help="training processes at once (default: the server's own default)")
    ap.add_argument("--replicas", type=int, default=1,
                    help="servers on this machine, sessions spread over them as a sticky proxy would (<= 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    if not 0 < args.seconds <= 300:
        ap.error("--seconds must be in (0, 300]")
    if not 1 <= args.replicas <= 4:
        ap.error("--replicas must be 1 to 4")
    if max(args.students) + max(args.trainers) > MAX_SESSIONS or min(args.students + args.trainers) < 0:
        ap.error(f"at most {MAX_SESSIONS} sessions")
    rows = []
    for k in args.trainers:
        for n in args.students:
            print(f"# {n} students, {k} training, {args.replicas} replica(s): {args.seconds:.0f} s ...",
                  file=sys.stderr, flush=True)
            row = asyncio.run(one_configuration(n, k, args.seconds, tuple(args.pace), args.epochs, args.workers,
                                                args.seed, args.replicas))
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return exit_status(rows)


def exit_status(rows: list[dict]) -> int:
    """1 when any request of any configuration failed (said on stderr), else 0."""
    failed = sum(sum(r["errors"].values()) for r in rows)
    if failed:
        print(f"load_test: {failed} request(s) failed (see the errors column); exit status 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
