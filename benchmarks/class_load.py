"""A class across replicas: 1 lecturer and N students over Streamlit's websocket, through HAProxy, to two replicas
sharing Redis; follow latency, answers counted, and a Redis restart in the middle.

    python benchmarks/class_load.py                                   # 50 students, 20 questions
    python benchmarks/class_load.py --students 5 --questions 3        # a short run

It starts redis-server, two ``streamlit run app/Home.py`` replicas (``AUTODIFF_CLASS_BROKER`` = that Redis) and
HAProxy with deploy/haproxy.cfg, all on loopback (:mod:`benchmarks.class_stack`). Sessions speak Streamlit's own
protocol (``BackMsg`` / ``ForwardMsg``, as in benchmarks/load_test.py) through the proxy, half of them with the
``explorer_replica=app1`` cookie and half with ``app2``. Each student also does what its browser's ``follow.js``
does (explorer/classroom/static/follow.js): long-polls ``/class/api/CODE/state`` and fetches the relayed view of
each new version over one keep-alive HTTP connection through the proxy.

* The lecturer opens the Expression explorer (slide example), starts a class, and for each question moves one step
  (between steps 7 and 11, the backward pass); **follow latency** runs from sending that click to each student
  holding the new step's view (its header read from the relayed JSON; the browser's drawing of it is not
  counted), per student, p50 / p95 / max; goal p95 <= 1 s. **Server CPU per follower per step**: both replicas'
  CPU time from the click until every student holds the step (the lecturer's own run included), over the number
  of students.
* ``--trainings K`` (default 5) sessions train on the Sentiment page throughout (``?epochs=3000``, polled as
  the page's fragment makes a browser poll).
* Then it asks "Which node is taken next?"; every student answers once (a random choice); the lecturer reveals
  when Redis counts N answers (or after 20 s). **Answers counted** per question, read from Redis: exactly N
  each means none lost and none doubled.
* After half of the questions Redis is stopped and started again (it forgets everything); the lecturer's session
  brings its class back under the same code and the run goes on. Reported: whether every later step still reached
  every student, and how long the first one took.

Printed: the figures, the machine's load average, and (``--json``) the same as JSON.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import gzip
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402

from benchmarks.class_stack import ClassStack  # noqa: E402
from benchmarks.load_test import Stats, cpu_and_rss, read_run, rerun_msg, trainer  # noqa: E402

PAGE = "Expression_explorer"
STEP_RE = re.compile(r"Step (\d+) of (\d+)")
MAX_STUDENTS = 200
FOLLOW_WAIT_S = 30.0


@dataclass
class Run:
    ok: bool
    buttons: dict[str, str]          # label -> widget id
    ids: list[str]                   # every button id (keys are in them)
    texts: list[str]
    autos: dict[str, float]          # fragment id -> interval


class Tab:
    """One browser tab over the websocket; reruns awaited one at a time; watches the step header it is shown."""

    def __init__(self, url: str, replica: str):
        self.url, self.replica = url, replica
        self.ws = None
        self.lock = asyncio.Lock()
        self.step: int | None = None
        self.seen: dict[int, float] = {}        # step -> first time shown (monotonic) since reset
        self.autos: dict[str, float] = {}
        self.errors: list[str] = []

    async def open(self) -> None:
        ws_url = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self.ws = await websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=60,
                                           ping_interval=None,
                                           additional_headers={"Cookie": f"explorer_replica={self.replica}"})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, payload: bytes, timeout: float = 60.0, fragment: bool = False) -> Run:
        """One rerun (``fragment``: a fragment's own), read until it finishes."""
        async with self.lock:
            await self.ws.send(payload)
            r = await read_run(self.ws, timeout, on_text=self._saw)
            if fragment:
                self.autos.update(r.autos)
            else:                    # a full run names every timer on the page (gone ones are gone)
                self.autos = r.autos
            self.errors.extend(r.exceptions)
            self.ids = r.button_ids or getattr(self, "ids", [])
            return Run(r.ok, r.buttons, r.button_ids, r.texts, r.autos)

    def _saw(self, text: str) -> None:
        """A step header shown: the step, and when it was first seen (as it arrives, not when the run ends)."""
        m = STEP_RE.search(text)
        if m:
            self.step = int(m.group(1))
            self.seen.setdefault(self.step, time.monotonic())

    async def timers(self, stop: asyncio.Event, only: str | None = None) -> None:
        """Send the automatic fragment reruns a browser sends, each at its interval."""
        last: dict[str, float] = {}
        while not stop.is_set():
            now = time.monotonic()
            for fid, every in list(self.autos.items()):
                if only is not None and only not in fid:
                    continue
                if now - last.get(fid, 0.0) >= max(every, 0.2):
                    last[fid] = now
                    try:
                        await self.run(rerun_msg(PAGE, fragment_id=fid, auto=True), timeout=60, fragment=True)
                    except asyncio.TimeoutError:
                        self.errors.append("timer rerun timed out")
                    except websockets.ConnectionClosed as e:
                        self.errors.append(f"closed: {e!r}")
                        return
            await asyncio.sleep(0.05)


class Http:
    """One keep-alive HTTP/1.1 connection through the proxy (a browser's), for the class's long polls."""

    def __init__(self, url: str, replica: str):
        host, port = url.split("//", 1)[1].split(":")
        self.host, self.port, self.replica = host, int(port), replica
        self.reader = self.writer = None

    async def get(self, path: str, timeout: float = 40.0) -> tuple[int, bytes]:
        for attempt in range(2):              # a connection the proxy closed: open a new one, once
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
                self.writer.write((f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\nAccept-Encoding: gzip\r\n"
                                   f"Cookie: explorer_replica={self.replica}\r\n\r\n").encode())
                await self.writer.drain()
                return await asyncio.wait_for(self._response(), timeout)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt:
                    raise
        raise ConnectionError("unreachable")

    async def _response(self) -> tuple[int, bytes]:
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


async def follow(s: "Tab", code: str, stop: asyncio.Event) -> None:
    """What ``follow.js`` does in a student's browser: long-poll the state, fetch each new version's view."""
    http = Http(s.url, s.replica)
    since = -1
    try:
        while not stop.is_set():
            try:
                status, body = await http.get(f"/class/api/{code}/state?since={since}")
            except (OSError, asyncio.TimeoutError, ValueError):
                await asyncio.sleep(0.25)
                continue
            if status != 200:
                await asyncio.sleep(0.25)          # the class is being restored, or Redis is away
                continue
            msg = json.loads(body)
            if msg["version"] == since:
                continue
            if not msg["view"]:
                s.errors.append("a step without a relayed view")
                since = msg["version"]
                continue
            try:
                status, body = await http.get(f"/class/api/{code}/view/{msg['version']}")
            except (OSError, asyncio.TimeoutError, ValueError):
                continue
            if status == 200:
                s._saw(json.loads(body)["header"])
                since = msg["version"]
    finally:
        await http.close()


def replicas_cpu(stack: ClassStack) -> float:
    return sum(cpu_and_rss(proc.pid)[0] for _, proc in stack.apps.values())


@dataclass
class Figures:
    latencies: list[float] = field(default_factory=list)
    cpu_per_follower: list[float] = field(default_factory=list)
    missed: int = 0
    answers: list[int] = field(default_factory=list)
    restart_recovery_s: float | None = None
    trainings_started: int = 0
    after_restart_followed: bool | None = None
    errors: list[str] = field(default_factory=list)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))] if xs else float("nan")


async def main_async(args) -> dict:
    from explorer.classroom.broker import RedisBroker

    logs = Path(tempfile.mkdtemp(prefix="class_load_"))
    figs = Figures()
    with ClassStack(logs) as stack:
        probe = RedisBroker(stack.redis_url, subscribe=False)
        lec = Tab(stack.url, "app1")
        await lec.open()
        first = await lec.run(rerun_msg(PAGE), timeout=120)
        started = await lec.run(rerun_msg(PAGE, triggers=(first.buttons["Start a class"],)), timeout=60)
        code = next(m.group(1) for t in started.texts for m in [re.search(r"Class \*\*([A-Z0-9]{6})\*\*", t)] if m)
        # to step 7 (the first backward step) before anyone joins
        buttons = started.buttons
        for _ in range(6):
            buttons = (await lec.run(rerun_msg(PAGE, triggers=(buttons["Step"],)))).buttons
        stop = asyncio.Event()
        lec_timer = asyncio.create_task(lec.timers(stop))

        students = [Tab(stack.url, "app1" if i % 2 else "app2") for i in range(args.students)]

        async def join(s: Tab) -> None:
            await s.open()
            await s.run(rerun_msg(PAGE, query=f"join={code}"), timeout=180)

        for i in range(0, len(students), 10):     # join in waves of 10, as a room does
            await asyncio.gather(*(join(s) for s in students[i:i + 10]))
        timers = [asyncio.create_task(follow(s, code, stop)) for s in students]
        horizon = time.monotonic() + 3600
        train_stats = Stats(window=(0.0, horizon))

        async def training(k: int) -> None:
            try:
                await trainer(stack.url.replace("http://", "ws://") + "/_stcore/stream", train_stats, 0.5 * k, horizon,
                              3000)
            except asyncio.CancelledError:
                raise
            except Exception as e:   # noqa: BLE001 - a trainer that broke says how, in the figures
                train_stats.error("trainer broke", f"{type(e).__name__}: {e}"[:200])

        trainings = [asyncio.create_task(training(k)) for k in range(args.trainings)]
        # the trainings are running before the first step (the Sentiment page's first open loads GloVe: minutes
        # on a busy machine), or have failed and said why
        until = time.monotonic() + 300
        while time.monotonic() < until and \
                train_stats.training_started + sum(train_stats.errors.values()) < args.trainings:
            await asyncio.sleep(0.5)
        rng = random.Random(args.seed)
        step, direction = 7, 1
        restarted_at = None
        for qn in range(args.questions):
            if qn == args.questions // 2 and args.restart:
                stack.restart_redis(down_s=args.down)
                restarted_at = time.monotonic()
                await asyncio.sleep(0.5)
            # one step, followed
            if not (7 <= step + direction <= 11):    # steps whose next node has rivals (a choice to make)
                direction = -direction
            label = "Step" if direction > 0 else "Back"
            for s in students:
                s.seen.clear()
            cpu0 = replicas_cpu(stack)
            t0 = time.monotonic()
            res = await lec.run(rerun_msg(PAGE, triggers=(buttons[label],)))
            buttons = res.buttons or buttons
            step += direction
            deadline = t0 + FOLLOW_WAIT_S
            while time.monotonic() < deadline and not all(step in s.seen for s in students):
                await asyncio.sleep(0.02)
            if restarted_at is None:
                figs.cpu_per_follower.append((replicas_cpu(stack) - cpu0) / len(students))
            got = [s.seen[step] - t0 for s in students if step in s.seen]
            figs.missed += len(students) - len(got)
            if restarted_at is not None and figs.restart_recovery_s is None:
                figs.restart_recovery_s = max(got) + (t0 - restarted_at) if len(got) == len(students) else None
                figs.after_restart_followed = len(got) == len(students)
            else:
                figs.latencies += got
            # a question: the lecturer opens "Ask the class" (or "New question") and asks the first one
            opener = buttons.get("New question") or buttons.get("Ask the class")
            res = await lec.run(rerun_msg(PAGE, triggers=(opener,)))
            if "Ask" not in res.buttons:   # the dialog showed the last question: a new one
                res = await lec.run(rerun_msg(PAGE, triggers=(res.buttons["New question"],)))
            res = await lec.run(rerun_msg(PAGE, triggers=(res.buttons["Ask"],)))
            buttons = res.buttons or buttons
            q = probe.question(code)

            async def answer(s: Tab) -> None:
                end = time.monotonic() + 30
                while time.monotonic() < end:
                    # as follow.js does on a new question: a click of the page's hidden sync button (a run the
                    # lecturer asked for, not counted against the student's network's runs)
                    sync = next((i for i in getattr(s, "ids", []) if "class_sync" in i), None)
                    r = await s.run(rerun_msg(PAGE, triggers=(sync,) if sync else ()), timeout=60)
                    choices = [i for i in r.ids if f"class_choice_{q.qid}_" in i]
                    if choices:
                        await s.run(rerun_msg(PAGE, triggers=(rng.choice(choices),)), timeout=60)
                        return
                    await asyncio.sleep(0.3)
                figs.errors.append("a student never saw the question")

            await asyncio.gather(*(answer(s) for s in students))
            end = time.monotonic() + 20
            count = 0
            while time.monotonic() < end:
                count = probe.tally(code, q.qid).count
                if count >= len(students):
                    break
                await asyncio.sleep(0.2)
            await asyncio.sleep(0.3)
            figs.answers.append(probe.tally(code, q.qid).count)
            res = await lec.run(rerun_msg(PAGE, triggers=(res.buttons["Reveal"],)))
            buttons = res.buttons or buttons
        stop.set()
        for t in trainings:
            t.cancel()
        await asyncio.gather(lec_timer, *timers, *trainings, return_exceptions=True)
        figs.trainings_started = train_stats.training_started
        figs.errors += [f"training: {e}" for e in train_stats.examples[:3]]
        figs.errors += [f"training: {k} x{n}" for k, n in train_stats.errors.items() if not train_stats.examples]
        for t in [lec, *students]:
            figs.errors += t.errors[:3]
            await t.close()
        probe.stop()
    lat = figs.latencies
    return {
        "students": args.students, "questions": args.questions,
        "follow_p50_s": round(statistics.median(lat), 3) if lat else None,
        "follow_p95_s": round(pct(lat, 0.95), 3) if lat else None,
        "follow_max_s": round(max(lat), 3) if lat else None,
        "follow_samples": len(lat), "follow_missed": figs.missed,
        "server_cpu_ms_per_follower_per_step": round(1000 * statistics.median(figs.cpu_per_follower), 3)
        if figs.cpu_per_follower else None,
        "trainings_running": figs.trainings_started,
        "answers_per_question": figs.answers,
        "all_answers_counted": all(a == args.students for a in figs.answers),
        "redis_restarted": bool(args.restart),
        "after_restart_every_student_followed": figs.after_restart_followed,
        "restart_to_followed_s": round(figs.restart_recovery_s, 2) if figs.restart_recovery_s else None,
        "errors": figs.errors[:10],
        "error_counts": dict(collections.Counter(e.split(":")[0] for e in figs.errors)),
        "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=50)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--no-restart", dest="restart", action="store_false", help="leave Redis running throughout")
    ap.add_argument("--down", type=float, default=1.0, help="seconds Redis is down in the restart")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trainings", type=int, default=5, help="sessions training on the Sentiment page meanwhile")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not 1 <= args.students <= MAX_STUDENTS or not 1 <= args.questions <= 100:
        ap.error(f"--students 1..{MAX_STUDENTS}, --questions 1..100")
    before = round(os.getloadavg()[0], 2)
    out = asyncio.run(main_async(args))
    out["load_average_1m_before"] = before
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    ok = out["all_answers_counted"] and out["follow_missed"] == 0 and not out["errors"] and \
        (not args.restart or out["after_restart_every_student_followed"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
