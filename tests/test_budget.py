"""Every request bounded: cost estimated from shapes before running (the attack programs are
refused or finish fast, every preset fits with room to spare), central differences along random directions,
deadlines, path recursion's work budget, caches bounded by bytes that keep nothing of a failed run, and
MemoryError / RecursionError as typed errors."""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

import engine
from explorer import explain as ex
from explorer.explain import ExpressionError, costs, deadline, estimate_cost
from explorer.explain.costs import DirectionalDifferences, central_differences
from explorer.explain.harness import doubling_chain_program
from explorer.explain.parser import MAX_KEPT_ELEMENTS, MAX_WORK, parse_inputs, parse_program
from engine.strategies import PathRecursion, WorkLimitExceeded
from explorer.backprop_orders import orders_model
from explorer.expression_explorer import explorer_model
from explorer.forward_vs_reverse import dual_model
from explorer.gradient_check import gradcheck_model
from explorer.kit import presets
from explorer.kit.budget import (ByteLRU, RequestRefused, bounded_cache, estimate_bytes,
                                 finite_difference_checks)
from explorer.kit.programs import InputProblem, program_refused

ROOT = Path(__file__).resolve().parents[1]
ALL_ORDERS = ("topological", "bfs_first_touch", "path_recursion", "recursive_dfs")


def values_text(values: dict) -> str:
    return ", ".join(f"{k} = {np.asarray(v).tolist()}" for k, v in values.items())


# --- the attack programs ---------------------------------------------------------------------------------------

SIX_AXES_PROGRAM = ("c = p*q*r*s*t*u\n" + "\n".join(f"d{k} = c*c*c*c*c" for k in range(97)) + "\nf = d96*c")
SIX_AXES_INPUTS = values_text({n: np.full([10 if i == j else 1 for j in range(6)], 0.5)
                               for i, n in enumerate("pqrstu")})
OUTER_INPUTS = values_text({"a": np.full((1000, 1), 0.5), "b": np.full((1, 1000), 0.5)})
OUTER_LONG = "c = a*b\n" + "\n".join(f"d{k} = c*c*c*c*c*c" for k in range(98))
OUTER_SHORT = "c = a*b\nf = sum(c*c*c*c)"
MODELS = {
    "explorer": lambda p, i: explorer_model(p, i),
    "orders": lambda p, i: orders_model(p, i, ALL_ORDERS),
    "gradcheck": lambda p, i: gradcheck_model(p, i, "", 1e-6, 0),
    "dual": lambda p, i: dual_model(p, i, ""),
}


@pytest.mark.parametrize("page", list(MODELS))
@pytest.mark.parametrize("program, inputs", [(SIX_AXES_PROGRAM, SIX_AXES_INPUTS), (OUTER_LONG, OUTER_INPUTS),
                                             (OUTER_SHORT, OUTER_INPUTS)], ids=["six-axes", "outer-98", "outer-4"])
def test_attack_programs_are_refused_before_running(page, program, inputs):
    t0 = time.perf_counter()
    with pytest.raises(InputProblem) as info:
        MODELS[page](program, inputs)
    assert time.perf_counter() - t0 < 5.0  # parsing the 4,000-character inputs is most of it
    problem = info.value
    assert problem.where == "program" and problem.error.kind == "limit"
    assert problem.error.line == 2  # the first line whose values pass the budget: shown under the box
    assert f"at most {MAX_KEPT_ELEMENTS:,} per run" in str(problem.error)


def test_the_estimate_is_what_the_engine_runs():
    """The abstract evaluation counts the same ops and numbers as an eager run (composites included)."""
    cases = [(p.program, p.inputs) for p in presets.PRESETS]
    cases.append(("y = softmax(W @ x, dim=0)\nz = logsumexp(W, dim=1) + max(transpose(W) @ W)\nf = mean(y) * "
                  "sum(z) + sum(maximum(x, 0.5) * sqrt(abs(x)))", "W = [[1, 2, 3], [4, 5, 6]], x = [1, -2, 3]"))
    for program, inputs in cases:
        est = estimate_cost(program, inputs)
        run = ex.run_forward(program, inputs)
        assert est.complete and est.ops == len(run.steps), program
        assert est.elements == sum(int(np.prod(s.shape)) for s in run.steps), program
    matmul = estimate_cost("f = sum(A @ B)", {"A": np.ones((30, 40)).tolist(), "B": np.ones((40, 20)).tolist()})
    assert matmul.work >= 30 * 40 * 20  # a matmul counts its multiply-adds


def test_every_preset_and_lecture_example_fits_comfortably():
    examples = [(p.program, p.inputs) for p in presets.PRESETS]
    examples += [("f = (x - 3) ** 2", "x = 0"), ("v2 = v1 * v1\nf = v2 * v1", "v1 = 2")]
    text, values = doubling_chain_program(12)  # page 2's doubling chain at its largest
    examples.append((text, values_text(values)))
    for program, inputs in examples:
        est = estimate_cost(program, inputs)
        shapes = {k: np.shape(v) for k, v in parse_inputs(inputs).items()}
        runs = 300 + 4 * finite_difference_checks(shapes)  # the gradient check, the costliest page
        assert runs * est.work * 10 <= MAX_WORK, program


def test_the_work_budget_names_itself_and_what_exceeded_it():
    program = "\n".join(["y1 = x * x"] + [f"y{k + 1} = y{k} * x" for k in range(1, 99)])
    inputs = "x = " + str([0.5] * 5000)
    explorer_model(program, inputs)  # 99 ops on 5,000 numbers: fine for one forward + backward
    with pytest.raises(InputProblem) as info:
        gradcheck_model(program, inputs, "x", 1e-6, 0)  # ~300 runs of it: not
    msg = str(info.value.error)
    assert "too much work" in msg and f"the budget is {MAX_WORK:,}" in msg and "the gradient check" in msg
    assert "99 operations on 495,000 numbers" in msg


def test_the_run_time_guard_stops_a_run_the_estimate_did_not_see():
    program = parse_program(OUTER_SHORT)
    a, b = engine.tensor(np.ones((1000, 1))), engine.tensor(np.ones((1, 1000)))
    with pytest.raises(ExpressionError, match="at most 2,000,000 per run") as info:
        program.evaluate({"a": a, "b": b})
    assert info.value.kind == "limit" and info.value.line == 2


def test_a_deadline_stops_long_work():
    program = parse_program("f = sum(x * x)")
    x = engine.tensor(np.ones(10))
    with deadline(0.0):
        time.sleep(0.001)
        with pytest.raises(ExpressionError, match="more than the 0 s of computing"):
            program.evaluate({"x": x})
        with pytest.raises(ExpressionError, match="more than the 0 s"):
            central_differences("f = sum(x * x)", {"x": [1.0] * 20})
    program.evaluate({"x": x})  # outside the block: no deadline


def test_deadlines_are_per_thread():
    import threading
    out = {}

    def other():
        try:
            parse_program("f = x * x").evaluate({"x": engine.tensor(2.0)})
            out["ok"] = True
        except ExpressionError as e:
            out["ok"] = e

    with deadline(0.0):
        time.sleep(0.001)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert out["ok"] is True


# --- central differences -----------------------------------------------------------------------------


def test_central_differences_on_a_tensor_take_a_few_directions_not_every_element():
    x = np.linspace(-1, 1, 1000)
    runs = {"n": 0}

    def count(op, inputs, params, out):
        if op.name == "sum":
            runs["n"] += 1  # one sum per run of f = sum(...)

    with engine.trace_ops(count):
        fd = central_differences("f = sum(x * x * w)", {"x": x.tolist(), "w": 2.0})
    assert runs["n"] == 2 * 3 + 2  # three directions for x, one element for w
    assert isinstance(fd["x"], DirectionalDifferences) and len(fd["x"].estimates) == 3
    grad = 4 * x  # d/dx sum(2 x^2)
    np.testing.assert_allclose(fd["x"].estimates, fd["x"].autodiff(grad), rtol=1e-7, atol=1e-6)
    assert fd["x"].max_difference(grad) < 1e-5
    assert fd["x"].max_difference(grad + 1e-3 * np.sign(x)) > 1e-4  # a slightly wrong gradient is caught
    assert fd["w"] == pytest.approx(np.sum(x * x), rel=1e-8)


def test_small_inputs_keep_their_per_element_check():
    fd = central_differences("f = sum(W @ x)", {"W": [[1.0, 2.0], [3.0, 4.0]], "x": [0.5, -1.0]})
    np.testing.assert_allclose(fd["W"], [[0.5, -1.0], [0.5, -1.0]], atol=1e-8)
    np.testing.assert_allclose(fd["x"], [4.0, 6.0], atol=1e-8)


def test_the_explorer_table_compares_along_the_directions():
    inputs = "x = " + str([0.1 * k for k in range(20)])
    model = explorer_model("f = sum(exp(x))", inputs)
    row = next(r for r in model.table if r["node"] == "x")
    assert row["central difference"].startswith("along 3 random directions v: ")
    assert float(row["|difference|"]) < 1e-6


# --- path recursion --------------------------------------------------------------------------------

DOUBLING_ADDS = "\n".join(f"x{k + 1} = x{k} + x{k}" for k in range(1, 31))


def test_path_recursion_checks_its_work_as_it_goes():
    x = engine.tensor(np.ones(1000), requires_grad=True)
    y = x
    for _ in range(30):
        y = y + y
    t0 = time.perf_counter()
    with pytest.raises(WorkLimitExceeded, match="its budget is 2,000,000"):
        y.backward(engine.tensor(np.ones(1000)), strategy=PathRecursion())
    assert time.perf_counter() - t0 < 5.0


def test_a_failed_order_keeps_nothing_but_its_message():
    t0 = time.perf_counter()
    model = orders_model(DOUBLING_ADDS, "x1 = " + str([0.5] * 1000), ("topological", "path_recursion"))
    assert time.perf_counter() - t0 < 10.0
    view = model.views["path_recursion"]
    assert view.error.startswith("WorkLimitExceeded") and view.trace is None and view.frameset is None
    assert view.n_frames == 0 and estimate_bytes(view) < 10_000
    assert model.views["topological"].error is None


def test_page_path_recursion_stops_on_a_long_scalar_chain():
    text = "\n".join(["x2 = x1 * x1"] + [f"x{k + 1} = x{k} * x{k}" for k in range(2, 17)])  # 65,535 paths
    t0 = time.perf_counter()
    model = orders_model(text, "x1 = 1.0001", ("topological", "path_recursion"))
    assert time.perf_counter() - t0 < 10.0
    assert "after 1024 VJP calls" in model.views["path_recursion"].error


# --- sizes and caches --------------------------------------------------------------------------------


def test_estimate_bytes_counts_buffers_once():
    a = np.zeros(1000)
    assert 8000 <= estimate_bytes(a) < 8500
    assert 8000 <= estimate_bytes([a, a[:10], a.reshape(10, 100)]) < 9000  # views share the buffer
    assert estimate_bytes({"k": [1.0] * 1000}) > 8000
    assert estimate_bytes([np.zeros(10**6)], limit=1000) > 1000


def test_byte_lru_evicts_least_recently_used_and_refuses_giants():
    lru = ByteLRU(max_bytes=30_000, max_entry_bytes=12_000)
    for k in "abc":
        assert lru.put(k, np.zeros(1000))  # ~8 KB each
    assert lru.get("a")[0]                 # a is now the most recent
    assert lru.put("d", np.zeros(1000))    # evicts b
    assert lru.bytes <= 30_000 and [lru.get(k)[0] for k in "abcd"] == [True, False, True, True]
    assert not lru.put("big", np.zeros(2000)) and not lru.get("big")[0]


def test_bounded_cache_keeps_results_within_bytes_and_nothing_of_a_failure():
    stores: dict = {}
    calls = []

    @bounded_cache(40_000, seconds=None, stores=lambda: stores)
    def compute(n: int):
        calls.append(n)
        if n < 0:
            raise ValueError("bad")
        return np.zeros(n)

    compute(1000)
    compute(1000)
    assert calls == [1000]                      # a hit
    with pytest.raises(ValueError):
        compute(-1)
    with pytest.raises(ValueError):
        compute(-1)
    assert calls == [1000, -1, -1]              # a failure is never kept
    for n in range(1001, 1010):
        compute(n)
    (store,) = stores.values()
    assert store.bytes <= 40_000 and len(store) <= 4


def test_memory_and_recursion_errors_become_the_pages_typed_error():
    stores: dict = {}

    @bounded_cache(1 << 20, seconds=None, stores=lambda: stores, refuse=program_refused)
    def hungry():
        raise MemoryError()

    @bounded_cache(1 << 20, seconds=None, stores=lambda: stores)
    def deep(n=0):
        return deep(n + 1)

    with pytest.raises(InputProblem) as info:
        hungry()
    assert info.value.where == "program" and "not enough memory" in str(info.value.error)
    with pytest.raises(RequestRefused, match="nested too deeply"):
        deep()


def test_the_pages_use_no_unbounded_streamlit_cache():
    for path in sorted((ROOT / "app").rglob("*.py")):
        text = path.read_text()
        assert "st.cache_resource" not in text and "st.cache_data" not in text, path.name


def test_the_attack_link_is_an_error_under_the_box_not_a_crash():
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app" / "pages" / "3_Expression_explorer.py"), default_timeout=60)
    at.query_params["expr"] = SIX_AXES_PROGRAM
    at.query_params["at"] = SIX_AXES_INPUTS
    at.run()
    assert not at.exception
    assert any("Program not accepted" in e.value and "at most 2,000,000" in e.value for e in at.error)


def test_side_by_side_orders_refuse_graphs_too_big_to_draw():
    names = [a + b for a in "ABCDEFGHIJ" for b in "ABCDEFGHIJ"]
    program = "\n".join(["AA=exp(x)*x+x-x/x"] + [f"{c}=exp({p})*x+x-{p}/x" for p, c in zip(names, names[1:40])])
    inputs = "x = [0.01, 0.02]"  # 40 lines of 6 ops: 240 operations, under the parser's 500
    t0 = time.perf_counter()
    with pytest.raises(InputProblem, match="at most 150 operations; this program has 240"):
        MODELS["orders"](program, inputs)
    assert time.perf_counter() - t0 < 2.0
    model = explorer_model(program, inputs)  # one graph at a time: drawn
    assert model.n_frames > 40  # (the renderer groups a long program by statement)


def test_a_long_backward_pass_stops_at_the_deadline():
    text, values = doubling_chain_program(14)  # 16,383 paths for path recursion
    args = _forward(text, values)  # the forward pass outside the deadline
    with deadline(0.0):
        time.sleep(0.001)
        with pytest.raises(ExpressionError, match="more than the 0 s"):
            ex.record_backward(*args, strategy=PathRecursion(max_vjp_calls=10**6))


def _forward(text, values):
    fw = ex.run_forward(text, values)
    names = {n.id: n.name for n in fw.graph.nodes}
    return fw.output, dict(fw.id_of), names, fw.leaves


def test_parsing_is_safe_from_many_threads():
    """CPython 3.11's ast builder keeps its recursion depth in shared state: two threads building ASTs at
    once, with a garbage collection running a finaliser in between, raised SystemError under a class's
    load (and in CI: ``inspect.getsource`` of a class in one thread while another parsed). Every builder
    of ASTs in the process is covered: the app's parser, a bare ``ast.parse`` (as Streamlit's magic and
    pytest call it) and ``inspect.getsource`` of a class."""
    import ast
    import gc
    import inspect
    import threading
    import explorer
    from explorer.explain.parser import parse_python
    from explorer.kit import ast_guard

    assert explorer and ast_guard.install() == ast_guard.NEEDED

    class Junk:  # cyclic garbage whose finaliser lets the GIL change hands inside a parse
        def __init__(self):
            self.me = self

        def __del__(self):
            time.sleep(0)

    source = "f = " + "(" * 40 + "x" + ")" * 40 + "\n" + "\n".join(
        f"y{i} = exp(1.5*x{i} + 2*x2) * sum(W @ x)" for i in range(30))
    big = inspect.getsource(inspect)
    errors = []

    def work(parse, n):
        for _ in range(n):
            Junk()
            Junk()
            try:
                parse()
            except SystemError as e:  # pragma: no cover - the failure this guards against
                errors.append(e)

    jobs = [(lambda: parse_python(source), 300), (lambda: ast.parse(source), 300),
            (lambda: ast.parse(big), 8), (lambda: inspect.getsource(ex.ExpressionError), 300)]
    old = gc.get_threshold()
    gc.set_threshold(50, 1, 1)
    try:
        threads = [threading.Thread(target=work, args=job) for job in jobs + jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*old)
    assert errors == []


# --- the deadline is CPU time; the server-wide memory guard; no failure kept -----------------------------------

def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_deadline_counts_cpu_time_not_waiting():
    """Under load a valid request waits for a core: waiting must not spend its budget (a wall-clock deadline
    refused valid requests while 30 students stepped)."""
    from explorer.explain import check_deadline
    with deadline(0.2):
        time.sleep(0.3)          # waiting (another session holds the core): still within the budget
        check_deadline()
        _spin(0.25)              # computing: stopped
        with pytest.raises(ExpressionError, match="more than the 0.2 s of computing"):
            check_deadline()


def test_the_deadline_is_checked_while_frames_are_built():
    """Frame building and figure layout check the deadline too (not only engine ops)."""
    model = explorer_model("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5")
    from explorer.kit.frames import build_frames
    with deadline(0.0):
        time.sleep(0.001)
        with pytest.raises(ExpressionError, match="more than the 0 s"):
            build_frames(model.trace)


def test_the_memory_guard_refuses_new_work_above_its_fraction(monkeypatch):
    from explorer.kit import budget
    calls = []

    @bounded_cache(1 << 20, stores=lambda: {}, spinner=None)
    def compute(n):
        calls.append(n)
        return n

    monkeypatch.setenv(budget.MEMORY_LIMIT_ENV, "1")      # a 1 MB replica: this process is far above 75% of it
    with pytest.raises(RequestRefused, match="the server is busy, try again"):
        compute(1)
    with pytest.raises(budget.ServerBusy):
        budget.check_server_memory("a training start")
    assert calls == []                                      # nothing ran
    monkeypatch.setenv(budget.MEMORY_LIMIT_ENV, str(64 * 1024))   # 64 GB: room again
    assert compute(1) == 1 and calls == [1]


def test_the_memory_limit_is_the_cgroups_when_there_is_one(monkeypatch, tmp_path):
    from explorer.kit import budget
    monkeypatch.delenv(budget.MEMORY_LIMIT_ENV, raising=False)
    limit = tmp_path / "memory.max"
    limit.write_text("536870912\n")
    monkeypatch.setattr(budget, "_CGROUP_LIMITS", (str(tmp_path / "absent"), str(limit)))
    assert budget.memory_limit_bytes() == 512 * 2**20
    limit.write_text("max\n")                                # no limit: the machine's memory
    assert budget.memory_limit_bytes() > 512 * 2**20
    assert budget.resident_bytes() > 10 * 2**20


def test_a_request_that_hit_its_deadline_is_not_cached_and_succeeds_when_cheap_again():
    """On a loaded server the Gradient-check page met its deadline and the failure was kept, so the page
    stayed broken after the load went away. The same request (same arguments, same store) must compute again."""
    from explorer.explain import check_deadline
    cost = {"seconds": 0.3}   # what the request costs this time: more than its deadline, then less
    calls = []

    @bounded_cache(1 << 20, stores=lambda: registry, spinner=None, seconds=0.1)
    def request(n):
        calls.append(n)
        end = time.thread_time() + cost["seconds"]
        while time.thread_time() < end:
            check_deadline()
        return n * 2

    registry: dict = {}
    for _ in range(2):   # the same click again while it is still too expensive: computed again, not answered
        with pytest.raises(ExpressionError, match="more than the 0.1 s"):
            request(21)
    assert calls == [21, 21]
    (store,) = registry.values()
    assert len(store) == 0                                   # nothing of the failure in the store
    cost["seconds"] = 0.0                                    # the load went away
    assert request(21) == 42 and calls == [21, 21, 21]
    assert request(21) == 42 and calls == [21, 21, 21]       # the success is what is kept


def test_backprop_orders_at_its_limit_fits_the_pages_cache():
    """At its op limit the four orders' result was 16-27 MB, over the store's per-entry cap: every Step
    recomputed it (1.7-2.4 s of CPU). Its figures' frames are built when a Step reads one (building
    and packing every frame was most of the request), so it stays cacheable and a Step reads one frame."""
    from explorer.kit.budget import MAX_SIDE_BY_SIDE_OPS
    from explorer.kit.plotly_figure import FramesOnRead
    from explorer.kit.widgets import still_graph
    program = "\n".join(["y1 = x * x"] + [f"y{k + 1} = y{k} * y{k} * x" for k in range(1, 75)])   # fan-out
    model = orders_model(program, "x = 1.0001", ALL_ORDERS)
    assert MAX_SIDE_BY_SIDE_OPS - 5 <= estimate_cost(program, "x = 1.0001").ops <= MAX_SIDE_BY_SIDE_OPS
    assert estimate_bytes(model) < ByteLRU(64 << 20).max_entry_bytes       # the page's store keeps it
    view = model.views["topological"]
    assert isinstance(view.figure["frames"], FramesOnRead) and len(view.figure["frames"]) == view.n_frames
    assert isinstance(view.backward_figure["frames"], FramesOnRead)
    k = model.n_frames // 2
    still = still_graph(view.figure, k, title=False)
    assert still["frames"] == [] and still["data"] != view.figure["data"]    # frame k's colours, built on read
    assert view.figure["frames"][k] == view.figure["frames"][k]              # the same frame each time
    assert view.figure["frames"][k] != view.figure["frames"][k + 1]
    with pytest.raises(IndexError):
        view.figure["frames"][view.n_frames]


def test_at_most_a_few_computations_run_at_once_and_nested_calls_do_not_deadlock():
    """Eight worst-in-budget requests at once took +437 MB: the others wait for a slot."""
    import threading

    from explorer.kit import budget
    registry: dict = {}
    running, most, lock = [0], [0], threading.Lock()

    @bounded_cache(1 << 20, stores=lambda: registry, spinner=None, seconds=None)
    def inner(n):
        return n

    @bounded_cache(1 << 20, stores=lambda: registry, spinner=None, seconds=None)
    def compute(n):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        value = inner(n)            # a cached call inside a cached call: the same slot
        with lock:
            running[0] -= 1
        return value

    threads = [threading.Thread(target=compute, args=(i,)) for i in range(3 * budget.MAX_CONCURRENT)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert 1 < most[0] <= budget.MAX_CONCURRENT


def test_sessions_asking_for_the_same_arguments_at_once_share_one_computation():
    """Fifty students opening page 13's sample at once: one child-process run per replica, not one each (and
    other arguments are not held up by it)."""
    import threading

    registry: dict = {}
    calls: list = []
    started, release = threading.Event(), threading.Event()

    @bounded_cache(1 << 20, stores=lambda: registry, spinner=None, seconds=None)
    def slow(n):
        calls.append(n)
        if n == "sample":
            started.set()
            release.wait(10)
        return [n] * 3

    first = threading.Thread(target=slow, args=("sample",))
    first.start()
    assert started.wait(10)
    waiting = [threading.Thread(target=slow, args=("sample",)) for _ in range(8)]
    for t in waiting:
        t.start()
    assert slow("other") == ["other"] * 3          # another key computes while "sample" is still running
    release.set()
    for t in [first, *waiting]:
        t.join(30)
    assert not any(t.is_alive() for t in [first, *waiting])
    assert sorted(calls) == ["other", "sample"]     # the eight waiters read the first one's result
    assert registry and not any(s._computing for s in registry.values())   # nothing left behind


def test_a_deadline_in_a_page_is_one_line_not_an_exception_box_and_the_next_run_tries_again():
    """A cached computation whose page has no message of its own met its deadline under load; the page
    showed Streamlit's exception box. Now one line says what was too expensive, and the next run computes again."""
    from streamlit.testing.v1 import AppTest

    def script():
        import time

        import streamlit as st

        from explorer.explain import check_deadline
        from explorer.kit.budget import bounded_cache

        @bounded_cache(1 << 20, spinner="Summing the series on the engine…", seconds=0.1)
        def series(n: int) -> int:
            end = time.thread_time() + st.session_state["cost"]
            while time.thread_time() < end:
                check_deadline()
            return n * 2

        st.write(f"value {series(21)}")

    at = AppTest.from_function(script, default_timeout=60)
    at.session_state["cost"] = 0.5           # a loaded server: more than the deadline
    at.run()
    assert not at.exception and not at.error
    (line,) = [w.value.replace("\\", "") for w in at.warning]   # the Markdown escapes aside
    assert "Summing the series on the engine" in line and "more than the 0.1 s" in line and "tries again" in line
    assert not any("value 42" in m.value for m in at.markdown)
    at.session_state["cost"] = 0.0           # the load went away: the same request succeeds
    at.run()
    assert not at.exception and not at.warning
    assert any("value 42" in m.value for m in at.markdown)
