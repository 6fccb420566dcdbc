"""Server CPU per rerun of the two reruns a class makes most: a Step on the Expression explorer (the
slide example) and a training poll of Sentiment training (its live fragment, once a second per student).

    python3 benchmarks/step_cost.py                  # both, 30 reruns each
    python3 benchmarks/step_cost.py --page 3 --reruns 60      # page 3: the Expression explorer
    python3 benchmarks/step_cost.py --page 11 --profile 25    # page 11 (Sentiment training) + the 25 costliest functions
    python3 benchmarks/step_cost.py --page 11 --warm 40       # polls later in the run (longer curves)

Each page runs through streamlit's AppTest (the real page script, headless, on this machine).

* Page 3 (Expression explorer): the default preset (the slide example, 14 steps) is opened, then **Step** is pressed
  repeatedly (back to **Start** at the last step, as the load test's students do).
* Page 11 (Sentiment training): the built-in corpus with 3000 epochs is started (training runs in a worker process and is
  stopped at the end); then only the page's live fragment is rerun, as the browser's timer asks the
  server to once a second, with 0.25 s between polls so that each poll sees new progress.

Per rerun, two CPU times of this process (training processes excluded):

* ``script``: CPU time of the script thread (``time.thread_time`` around the script run): the page's
  own work, what holds the server's GIL while it runs;
* ``run``: CPU time of the whole process for the rerun, plus serialising its messages to bytes as the
  server does before sending them (AppTest also parses them back into its element tree: an upper bound).

Printed: median / p95 / max in ms of each; the lead's load test turns these into Step latency.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "app" / "pages"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


class ScriptClock:
    """CPU time of each script run, measured in the script thread; and the bytes of the messages sent."""

    def __init__(self):
        self.script_s: list[float] = []
        self.profile: cProfile.Profile | None = None
        self._lock = threading.Lock()

    def install(self) -> None:
        from explorer.kit.streamlit_private import private
        ScriptRunner, lsr = private("ScriptRunner"), private("local_script_runner")

        clock = self
        original = ScriptRunner._run_script

        def timed(runner, rerun_data):
            t0 = time.thread_time()
            prof = clock.profile
            if prof is not None:
                prof.enable()
            try:
                return original(runner, rerun_data)
            finally:
                if prof is not None:
                    prof.disable()
                clock.script_s.append(time.thread_time() - t0)

        ScriptRunner._run_script = timed

        # one script cache for every rerun, as a server has (AppTest makes a new one per run and so
        # compiles the page, magic and all, at every rerun: ~8 ms a server does not spend)
        app_test = private("app_test")
        shared = app_test.ScriptCache()
        app_test.ScriptCache = lsr.ScriptCache = lambda: shared

        # serialise what the script sent, as the server does for the websocket (AppTest never does)
        original_tree = lsr.parse_tree_from_messages

        def serialise_then_parse(msgs):
            for m in msgs:
                m.SerializeToString()
            return original_tree(msgs)

        lsr.parse_tree_from_messages = serialise_then_parse


def fragment_rerun(at, fragment_id: str, timeout: float):
    """Rerun only the fragment ``fragment_id`` (as the browser's fragment timer asks the server to)."""
    from explorer.kit.streamlit_private import private
    RerunData, lsr = private("RerunData"), private("local_script_runner")

    def scoped(*args, **kwargs):
        return RerunData(*args, **kwargs, fragment_id_queue=[fragment_id], is_auto_rerun=True)

    lsr.RerunData = scoped
    try:
        return at.run(timeout=timeout)
    finally:
        lsr.RerunData = RerunData


profile_filter = (str(ROOT) + "/|elements/|pandas|plotly|pyarrow|json|dataframe_util|pydot|subprocess") if not __import__("os").environ.get("PROFILE_FILTER") else __import__("os").environ["PROFILE_FILTER"]


def measure(label: str, clock: ScriptClock, rerun, n: int, profile: int) -> dict:
    runs, scripts = [], []
    if profile:
        clock.profile = cProfile.Profile(time.thread_time)  # CPU of the script thread, not wall time
    for _ in range(n):
        before = len(clock.script_s)
        t0 = time.process_time()
        rerun()
        runs.append(time.process_time() - t0)
        scripts.append(sum(clock.script_s[before:]))
    prof, clock.profile = clock.profile, None
    ms = lambda v: round(1000 * v, 1)  # noqa: E731
    row = {"rerun": label, "n": n,
           "script_median_ms": ms(statistics.median(scripts)), "script_p95_ms": ms(_pct(scripts, 95)),
           "run_median_ms": ms(statistics.median(runs)), "run_p95_ms": ms(_pct(runs, 95)),
           "run_max_ms": ms(max(runs))}
    print(f"{label:<34} script CPU median {row['script_median_ms']:6.1f} ms  p95 {row['script_p95_ms']:6.1f}"
          f"   |  whole rerun CPU median {row['run_median_ms']:6.1f} ms  p95 {row['run_p95_ms']:6.1f}"
          f"  max {row['run_max_ms']:6.1f}", flush=True)
    if prof is not None:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(profile_filter, profile)
        print(out.getvalue())
    return row


def explorer_step(clock: ScriptClock, n: int, profile: int, timeout: float) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(next(PAGES.glob("*_Expression_explorer.py"))), default_timeout=timeout).run()
    assert not at.exception, [e.value for e in at.exception]
    for _ in range(3):  # warm: the model and the step's pictures are cached after the first visit of each
        at.button(key="explorer_step_fwd").click().run()

    def step():
        step_now = at.session_state["explorer_step"]
        key = "explorer_step_first" if step_now >= 14 else "explorer_step_fwd"
        at.button(key=key).click().run()
        if at.exception:
            raise RuntimeError(at.exception[0].value)

    # a first pass over all 14 steps warms any per-step cache, as the 50 students of a class do for each other
    for _ in range(14):
        step()
    return measure("page 3 (Expression explorer): Step (slide example)", clock, step, n, profile)


def training_poll(clock: ScriptClock, n: int, profile: int, timeout: float, warm: float = 0.0) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(next(PAGES.glob("*_Sentiment_training.py"))), default_timeout=timeout)
    at.query_params["epochs"] = "3000"
    at.run()
    next(b for b in at.button if b.label == "Start training").click().run()
    run = at.session_state["sentiment_run"]
    if run is None:
        raise SystemExit("training did not start: " + "; ".join(e.value for e in at.error))
    try:
        deadline = time.monotonic() + 60
        while not run.snapshot().epochs and time.monotonic() < deadline:  # a first epoch: curves with data
            time.sleep(0.2)
        time.sleep(warm)  # later in a run: longer curves, more looks inside
        at.run()  # the page as it is while training (the fragment registered with its timer)
        storage = at._fragment_storage
        ids = list(storage._fragments)
        if not ids:
            raise SystemExit("no fragment registered on the training page")
        fid = ids[-1]

        def poll():
            time.sleep(0.25)
            fragment_rerun(at, fid, timeout)
            if at.exception:
                raise RuntimeError(at.exception[0].value)

        for _ in range(3):
            poll()
        snap = run.snapshot()
        row = measure(f"page 11 (Sentiment training): training poll (fragment), after {len(snap.epochs)} epochs", clock, poll, n, profile)
        snap = run.snapshot()
        print(f"    (the run had {len(snap.epochs)} epochs, {len(snap.batch_x)} loss points and "
              f"{len(snap.other_events)} looks inside at the end)")
        return row
    finally:
        run.stop()
        run.join(30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # the pages' numbers in app/pages (the lecture's order): 3 Expression explorer, 11 Sentiment training
    ap.add_argument("--page", type=int, choices=(3, 11), action="append", help="3, 11 or both (default)")
    ap.add_argument("--reruns", type=int, default=30)
    ap.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cumulative)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--warm", type=float, default=0.0,
                    help="page 11: let the run train this many seconds before polling (longer curves)")
    args = ap.parse_args(argv)
    clock = ScriptClock()
    clock.install()
    for p in args.page or [3, 11]:
        if p == 3:
            explorer_step(clock, args.reruns, args.profile, args.timeout)
        else:
            training_poll(clock, args.reruns, args.profile, args.timeout, args.warm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
