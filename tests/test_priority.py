"""The process's priority gate: a class's steps never wait, page opens queue in arrival order and say
so, background work (the fixed figures, the start-up warm-up) waits for both and pauses at its checkpoints.

Every test waits for a state of the gate or an event, never for the clock (the timeouts only stop a broken test).
"""
from __future__ import annotations

import threading

import pytest

from explorer.explain.parser import check_deadline, yield_to
from explorer.kit import budget, priority, warmup
from explorer.kit.fixed import FixedFigures, Pending
from explorer.kit.priority import BACKGROUND, OPEN, STEP, PriorityGate, queued_text

T = 30.0   # a safety net only: each wait below ends when its condition holds


def hold(gate: PriorityGate, level: int, entered: threading.Event, release: threading.Event, log: list,
         name: str, on_wait=None) -> threading.Thread:
    def run():
        with gate.enter(level, on_wait=on_wait):
            log.append(name)
            entered.set()
            assert release.wait(T)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_page_opens_queue_in_arrival_order_and_are_told_their_place():
    gate, log, waits = PriorityGate(), [], {}
    first_in, first_out = threading.Event(), threading.Event()
    a = hold(gate, OPEN, first_in, first_out, log, "a")
    assert first_in.wait(T)
    events = {n: (threading.Event(), threading.Event()) for n in "bc"}
    b = hold(gate, OPEN, *events["b"], log, "b", on_wait=lambda ahead: waits.setdefault("b", ahead))
    assert gate.wait_until(lambda s: s["queued"] == 1, T)
    c = hold(gate, OPEN, *events["c"], log, "c", on_wait=lambda ahead: waits.setdefault("c", ahead))
    assert gate.wait_until(lambda s: s["queued"] == 2, T)
    assert log == ["a"] and waits == {"b": 1, "c": 2}   # each saw how many were ahead, nothing ran yet
    first_out.set()
    assert events["b"][0].wait(T)
    assert gate.snapshot() == {"steps": 0, "opens": 1, "queued": 1, "background": 0, "background_waiting": 0}   # one at a time
    events["b"][1].set()
    assert events["c"][0].wait(T)
    events["c"][1].set()
    for t in (a, b, c):
        t.join(T)
    assert log == ["a", "b", "c"]
    assert gate.snapshot() == {"steps": 0, "opens": 0, "queued": 0, "background": 0, "background_waiting": 0}


def test_a_step_never_waits_for_page_opens():
    gate, log = PriorityGate(), []
    open_in, open_out = threading.Event(), threading.Event()
    holder = hold(gate, OPEN, open_in, open_out, log, "open")
    assert open_in.wait(T)
    queued_in, queued_out = threading.Event(), threading.Event()
    queued = hold(gate, OPEN, queued_in, queued_out, log, "queued open")
    assert gate.wait_until(lambda s: s["queued"] == 1, T)
    called = []
    with gate.enter(STEP, on_wait=called.append) as level:   # in this thread, at once
        assert level == STEP and gate.snapshot()["steps"] == 1
    assert called == [] and log == ["open"]
    open_out.set()
    queued_out.set()
    holder.join(T)
    queued.join(T)
    assert log == ["open", "queued open"]


def test_background_waits_for_steps_and_opens_and_pauses_at_its_checkpoints():
    gate, log = PriorityGate(), []
    step_in, step_out = threading.Event(), threading.Event()
    stepping = hold(gate, STEP, step_in, step_out, log, "step")
    assert step_in.wait(T)
    told = []
    bg_in, bg_out = threading.Event(), threading.Event()
    background = hold(gate, BACKGROUND, bg_in, bg_out, log, "background", on_wait=told.append)
    assert gate.wait_until(lambda s: s["background_waiting"] == 1, T)   # it came, and waits
    assert not bg_in.is_set() and gate.snapshot()["background"] == 0
    step_out.set()
    assert bg_in.wait(T)
    assert told == [1] and log == ["step", "background"]
    bg_out.set()
    stepping.join(T)
    background.join(T)

    # a computation under way: its checkpoints pause it while a page open runs, and let it go on after
    started, go_on, finished = threading.Event(), threading.Event(), threading.Event()
    rounds = []

    def compute():
        with gate.enter(BACKGROUND), yield_to(gate.checkpoint):
            started.set()
            while not finished.is_set():
                check_deadline()   # the engine's checkpoint: pauses here while foreground work runs
                rounds.append(1)
                if go_on.is_set():
                    finished.set()

    worker = threading.Thread(target=compute, daemon=True)
    worker.start()
    assert started.wait(T)
    with gate.enter(OPEN):
        assert gate.wait_until(lambda s: s["background_waiting"] == 1, T)   # the worker paused at a checkpoint
        n = len(rounds)
        go_on.set()
        assert gate.snapshot()["background"] == 0 and len(rounds) == n   # and stays paused while the open runs
    worker.join(T)
    assert finished.is_set() and not worker.is_alive()


def test_nested_entries_never_wait_for_their_own_thread():
    gate = PriorityGate(open_slots=1)
    with gate.enter(OPEN) as outer:
        with gate.enter(OPEN) as inner:   # a cached computation calling another: no second place in the queue
            with gate.enter(BACKGROUND) as innermost:
                assert (outer, inner, innermost) == (OPEN, OPEN, OPEN)
                assert gate.current() == OPEN
    assert gate.current() is None
    with gate.enter(STEP):
        with gate.enter(OPEN) as level:
            assert level == STEP
    assert gate.snapshot() == {"steps": 0, "opens": 0, "queued": 0, "background": 0, "background_waiting": 0}


def test_an_error_inside_leaves_the_gate_open_for_the_next():
    gate = PriorityGate()
    with pytest.raises(ZeroDivisionError):
        with gate.enter(OPEN):
            1 / 0
    with gate.enter(OPEN) as level:   # would wait forever had the failed entry kept its slot
        assert level == OPEN and gate.snapshot()["opens"] == 1


def test_a_page_open_waits_at_most_its_limit_then_runs_anyway():
    gate, log = PriorityGate(open_max_wait_s=0.0), []
    held_in, held_out = threading.Event(), threading.Event()
    holder = hold(gate, OPEN, held_in, held_out, log, "stuck")
    assert held_in.wait(T)
    with gate.enter(OPEN):   # the one ahead never ends: the safety valve lets this one run beside it
        assert gate.snapshot()["opens"] == 2
    held_out.set()
    holder.join(T)


def test_bad_arguments_are_typed_errors():
    with pytest.raises(ValueError, match="open_slots"):
        PriorityGate(open_slots=0)
    with pytest.raises(ValueError, match="unknown priority"):
        with PriorityGate().enter(7):
            pass


def test_queued_text_says_how_many_are_ahead():
    assert "1 other page open is computing before the graph" in queued_text(1, "the graph")
    assert "3 other page opens are" in queued_text(3)
    assert queued_text(2).startswith("Queued")


def test_fixed_figures_are_background_work_of_their_gate():
    gate = PriorityGate()
    ran = threading.Event()
    figs = FixedFigures({"x": lambda: (ran.set(), 42)[1]}, gate=gate)
    with gate.enter(OPEN):   # a page open computes: the figure waits for it
        figs.start()
        assert gate.wait_until(lambda s: s["background_waiting"] == 1, T)
        assert isinstance(figs.get("x"), Pending) and not ran.is_set()
    assert figs.wait("x", T) == 42


def test_page_priority_outside_a_page_run_and_inside_a_step():
    assert budget.page_priority() is None   # tests and scripts are not queued
    with priority.gate().enter(STEP):
        assert budget.page_priority() == STEP


def test_warm_up_imports_the_pages_modules_as_background_work(tmp_path):
    root = tmp_path
    (root / "explorer").mkdir()
    (root / "explorer" / "__init__.py").write_text("")
    (root / "explorer" / "lesson.py").write_text("")
    pages = root / "app" / "pages"
    pages.mkdir(parents=True)
    (pages / "2_Second.py").write_text("import json\nfrom explorer import lesson\nfrom explorer.lesson import f\n")
    (pages / "1_First.py").write_text("from __future__ import annotations\nimport numpy as np\n"
                                      "def later():\n    import pandas\n")
    (pages / "10_Tenth.py").write_text("from explorer import lesson, missing\n")
    assert warmup.page_modules(pages) == ["numpy", "json", "explorer", "explorer.lesson"]
    with pytest.raises(FileNotFoundError):
        warmup.page_modules(root / "nowhere")

    gate, seen, levels = PriorityGate(), [], []

    def importer(name):
        levels.append(gate.current())
        if name == "broken":
            raise RuntimeError("a broken module")
        seen.append(name)

    after = threading.Event()
    with gate.enter(STEP):   # a step runs: the warm-up waits for it
        t = threading.Thread(target=warmup.warm, args=(["a", "broken", "b"], gate, importer, after.set), daemon=True)
        t.start()
        assert gate.wait_until(lambda s: s["background_waiting"] == 1, T)
        assert seen == []
    assert after.wait(T)
    t.join(T)
    assert seen == ["a", "b"] and levels == [BACKGROUND] * 3


# --- in a page run (Streamlit's AppTest runs the script on a script thread, as the server does) -----------------

def _page_with_a_computation():
    import streamlit as st

    from explorer.kit import budget, priority

    @budget.bounded_cache(1 << 20, spinner="Laying out the graph")
    def computed(n: int) -> int:
        return n * 2

    if st.session_state.get("as_class"):
        st.session_state[budget.RUN_PRIORITY] = priority.STEP
    st.write(f"priority {budget.page_priority()}")
    st.write(f"value {computed(st.session_state.get('n', 1))}")


def test_a_page_runs_computation_queues_behind_another_page_open():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_page_with_a_computation, default_timeout=T)
    at.session_state["n"] = 21
    gate = priority.gate()
    before = gate.snapshot()["queued"]
    held, release = threading.Event(), threading.Event()
    holder = hold(gate, OPEN, held, release, [], "another page open")
    assert held.wait(T)
    runner = threading.Thread(target=at.run, daemon=True)
    runner.start()
    assert gate.wait_until(lambda s: s["queued"] == before + 1, T)   # the page's computation waits its turn
    release.set()
    runner.join(T)
    holder.join(T)
    assert [m.value for m in at.markdown] == [f"priority {OPEN}", "value 42"]
    assert not at.exception


def test_a_class_page_run_computes_as_a_step_without_queueing():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_page_with_a_computation, default_timeout=T)
    at.session_state["as_class"] = True
    at.session_state["n"] = 5
    gate = priority.gate()
    held, release = threading.Event(), threading.Event()
    holder = hold(gate, OPEN, held, release, [], "another page open")
    assert held.wait(T)
    try:
        at.run()   # in this thread: it would wait for the open above were it queued
    finally:
        release.set()
        holder.join(T)
    assert [m.value for m in at.markdown] == [f"priority {STEP}", "value 10"]


def test_a_progress_poll_slows_on_a_loaded_machine_and_comes_back_without_flapping():
    from explorer.kit.priority import LOADED_PER_CORE, SLOW_FACTOR, UNLOADED_PER_CORE, poll_period
    assert poll_period(1.0, False, load_per_core=0.5) == (1.0, False)
    assert poll_period(1.0, False, load_per_core=LOADED_PER_CORE + 0.1) == (SLOW_FACTOR * 1.0, True)
    between = (LOADED_PER_CORE + UNLOADED_PER_CORE) / 2      # between the thresholds: the last period stays
    assert poll_period(1.0, True, load_per_core=between) == (SLOW_FACTOR * 1.0, True)
    assert poll_period(1.0, False, load_per_core=between) == (1.0, False)
    assert poll_period(1.0, True, load_per_core=UNLOADED_PER_CORE - 0.1) == (1.0, False)
    period, slowed = poll_period(2.0, False)                 # the machine's own load average
    assert slowed in (True, False) and period in (2.0, 2.0 * SLOW_FACTOR)
