"""A class across replicas: 1 lecturer and N students over Streamlit's websocket, through HAProxy, to two replicas
sharing Redis; follow latency, answers counted, and a Redis restart in the middle.

    python benchmarks/class_load.py                                   # 50 students, 20 questions
    python benchmarks/class_load.py --students 5 --questions 3        # a short run

It starts redis-server, two ``streamlit run app/Home.py`` replicas (``AUTODIFF_CLASS_BROKER`` = that Redis) and
HAProxy with deploy/haproxy.cfg, all on loopback (:mod:`benchmarks.class_stack`). Sessions speak Streamlit's own
protocol (``BackMsg`` / ``ForwardMsg``, as in benchmarks/load_test.py) through the proxy, half of them with the
``explorer_replica=app1`` cookie and half with ``app2``; each one sends the automatic fragment reruns a browser
sends (the follow timer every 0.5 s).

* The lecturer opens the Expression explorer (slide example), starts a class, and for each question moves one step
  (between steps 7 and 11, the backward pass); **follow latency** runs from sending that click to each student's
  page showing the new step's header (measured per student, p50 / p95 / max; goal p95 <= 1 s).
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
from benchmarks.load_test import read_run, rerun_msg  # noqa: E402

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


@dataclass
class Figures:
    latencies: list[float] = field(default_factory=list)
    missed: int = 0
    answers: list[int] = field(default_factory=list)
    restart_recovery_s: float | None = None
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
        timers = [asyncio.create_task(s.timers(stop)) for s in students]
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
            t0 = time.monotonic()
            res = await lec.run(rerun_msg(PAGE, triggers=(buttons[label],)))
            buttons = res.buttons or buttons
            step += direction
            deadline = t0 + FOLLOW_WAIT_S
            while time.monotonic() < deadline and not all(step in s.seen for s in students):
                await asyncio.sleep(0.02)
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
                    r = await s.run(rerun_msg(PAGE), timeout=60)
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
        await asyncio.gather(lec_timer, *timers, return_exceptions=True)
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
        "answers_per_question": figs.answers,
        "all_answers_counted": all(a == args.students for a in figs.answers),
        "redis_restarted": bool(args.restart),
        "after_restart_every_student_followed": figs.after_restart_followed,
        "restart_to_followed_s": round(figs.restart_recovery_s, 2) if figs.restart_recovery_s else None,
        "errors": figs.errors[:10],
        "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=50)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--no-restart", dest="restart", action="store_false", help="leave Redis running throughout")
    ap.add_argument("--down", type=float, default=1.0, help="seconds Redis is down in the restart")
    ap.add_argument("--seed", type=int, default=0)
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
