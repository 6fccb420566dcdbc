"""Random DAGs and a harness that runs every traversal strategy on them.

Programs are generated as text and go through the same parser as a user's program, so the
harness measures exactly what the explorer shows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from engine import autodiff, ops
from engine.autodiff import NodeVisited
from engine.strategies import STRATEGY_NAMES, PathRecursion, WorkLimitExceeded
from engine.tensor import Tensor, tensor, trace_ops
from .parser import parse_inputs, parse_program
from .trace import Trace, record_execution, record_tensor
from .numbers import count

_UNARY = ("sigmoid({a})", "tanh({a})", "0.5 * {a}", "exp(-0.5 * {a} * {a})")
_BINARY = ("{a} + {b}", "{a} * {b}", "{a} - {b}")


def random_dag_program(n_ops: int, seed: int, n_inputs: int = 2) -> tuple[str, dict[str, float]]:
    """A random DAG as a program: each line uses one or two earlier values (recent ones more often,
    so values are reused along paths of different lengths); ``f`` sums the values nobody used."""
    rng = np.random.default_rng(seed)
    names = [f"x{i + 1}" for i in range(n_inputs)]
    inputs = {n: round(float(rng.uniform(-1, 1)), 3) for n in names}
    used: set[str] = set()
    lines = []
    for k in range(n_ops):
        def pick():
            # favour recent values, but any earlier one may be reused
            w = np.arange(1, len(names) + 1, dtype=float) ** 1.5
            return names[int(rng.choice(len(names), p=w / w.sum()))]
        if rng.random() < 0.6:
            a, b = pick(), pick()
            expr = _BINARY[int(rng.integers(len(_BINARY)))].format(a=a, b=b)
            used.update((a, b))
        else:
            a = pick()
            expr = _UNARY[int(rng.integers(len(_UNARY)))].format(a=a)
            used.add(a)
        name = f"v{k + 1}"
        lines.append(f"{name} = {expr}")
        names.append(name)
    sinks = [n for n in names if n not in used] or [names[-1]]
    lines.append("f = " + " + ".join(sinks))
    return "\n".join(lines), inputs


def random_dag_tensors(n_nodes: int, seed: int, n_inputs: int = 2) -> tuple[Tensor, dict[str, Tensor]]:
    """A random DAG of about ``n_nodes`` primitive engine ops (add, mul, sigmoid), built directly
    (no parser limits); the output adds up the values nobody used. For big-graph benchmarks."""
    rng = np.random.default_rng(seed)
    leaves = {f"x{i + 1}": tensor(float(rng.uniform(-1, 1)), requires_grad=True, name=f"x{i + 1}")
              for i in range(n_inputs)}
    values = list(leaves.values())
    used: set[int] = set()
    w_all = np.arange(1, n_nodes + n_inputs + 1, dtype=float) ** 1.5
    for _ in range(max(1, n_nodes - 1)):
        w = w_all[:len(values)]
        a = values[int(rng.choice(len(values), p=w / w.sum()))]
        r = rng.random()
        if r < 0.35:
            b = values[int(rng.choice(len(values), p=w / w.sum()))]
            v, used_now = ops.add(a, b), (a, b)
        elif r < 0.6:
            b = values[int(rng.choice(len(values), p=w / w.sum()))]
            v, used_now = ops.mul(a, b), (a, b)
        else:
            v, used_now = ops.sigmoid(a), (a,)
        used.update(id(t) for t in used_now)
        values.append(v)
    sinks = [t for t in values[n_inputs:] if id(t) not in used] or [values[-1]]
    out = sinks[0]
    for t in sinks[1:]:
        out = ops.add(out, t)
    return out, leaves


def random_tree_program(n_ops: int, seed: int) -> tuple[str, dict[str, float]]:
    """A random expression tree: every value (inputs included) is used exactly once."""
    rng = np.random.default_rng(seed)
    pool = [f"x{i + 1}" for i in range(n_ops + 1)]
    inputs = {n: round(float(rng.uniform(-1, 1)), 3) for n in pool}
    lines = []
    k = 0
    while len(pool) > 1:
        k += 1
        if rng.random() < 0.75:
            i, j = sorted(rng.choice(len(pool), size=2, replace=False), reverse=True)
            b, a = pool.pop(int(i)), pool.pop(int(j))
            expr = _BINARY[int(rng.integers(len(_BINARY)))].format(a=a, b=b)
        else:
            a = pool.pop(int(rng.integers(len(pool))))
            expr = ("sigmoid({a})", "tanh({a})", "0.5 * {a}")[int(rng.integers(3))].format(a=a)
        name = f"v{k}"
        lines.append(f"{name} = {expr}")
        pool.append(name)
    lines.append(f"f = {pool[0]}")
    return "\n".join(lines), inputs


def doubling_chain_program(depth: int) -> tuple[str, dict[str, float]]:
    """``v_k = v_{k-1} * v_{k-1}``: each layer uses the previous one twice (2^depth paths)."""
    lines = []
    prev = "x1"
    for k in range(1, depth + 1):
        name = "f" if k == depth else f"v{k}"
        lines.append(f"{name} = {prev} * {prev}")
        prev = name
    return "\n".join(lines), {"x1": 1.0001}


CHAIN_FACTOR = 1.0002  # the notes' deep chain: h <- h * 1.0002


def deep_chain(depth: int, factor: float = CHAIN_FACTOR) -> tuple[Tensor, Tensor]:
    """The notes' chain ``h <- h * 1.0002`` repeated ``depth`` times from a leaf x = 1, built directly
    with the engine (beyond the parser's limits): d h / d x = 1.0002 ** depth (1.8220094911 at 3000)."""
    x = tensor(1.0, requires_grad=True, name="x1")
    v = x
    for _ in range(depth):
        v = ops.mul(v, factor)
    return v, x


@dataclass
class StrategyRow:
    strategy: str
    graphs: int
    wrong: int
    errors: int
    mean_vjp_calls: float
    mean_backward_ops: float
    max_abs_error: float

    def to_dict(self) -> dict:
        return asdict(self)


# The random graphs the lecture's statistic runs (Backprop orders' defaults; `python -m explorer.student_code`
# runs the same ones): graph i is random_dag_program(RANDOM_OPS, seed i).
RANDOM_GRAPHS = 200
RANDOM_OPS = 12
GRADIENT_RTOL = 1e-9
# the one criterion by which a graph counts as wrong, in the words every count that uses it prints
WRONG_GRADIENTS = ("a graph counts as wrong when an input's gradient differs from the topological order's by more "
                   "than 1e-9 × the largest input gradient (at least 1)")   # GRADIENT_RTOL, as people write it


def gradients_wrong(grads: dict, reference: dict) -> bool:
    """Whether ``grads`` (each input's gradient by name or node; None: never computed, read as zeros) are
    wrong against ``reference`` (the topological order's), by :data:`WRONG_GRADIENTS`: some input's gradient
    differs by more than ``GRADIENT_RTOL * max(1, largest |reference|)``. A value that is not a number (or a
    shape that does not match) is wrong. Backprop orders' statistics and the student-code report both count
    with this function."""
    ref = {k: np.zeros(()) if v is None else np.asarray(v, dtype=float) for k, v in reference.items()}
    scale = max([1.0] + [float(np.max(np.abs(v))) for v in ref.values() if v.size])
    for k in set(ref) | set(grads):
        want = ref.get(k, np.zeros(()))
        got = grads.get(k)
        try:
            got = np.zeros_like(want) if got is None else np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return True
        if got.size != want.size or not np.all(np.abs(got.reshape(want.shape) - want) <= GRADIENT_RTOL * scale):
            return True
    return False


def _max_err(a, b) -> float:
    worst = 0.0
    for k in a:
        x, y = np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float)
        worst = max(worst, float(np.max(np.abs(x - y))))
    return worst


STATS_MAX_VJP_CALLS = 5_000    # per graph and strategy: path recursion gives up beyond (counted in errors)
STATS_MAX_GRAPHS = 500
STATS_MAX_OPS = 60
STATS_MAX_TOTAL_OPS = 6_000    # graphs x ops per graph: 200 graphs of 30 ops


class _Count:
    """Observer and op hook that only count (the statistics need no per-event records)."""

    def __init__(self) -> None:
        self.vjp_calls = 0
        self.ops = 0

    def __call__(self, event) -> None:
        if isinstance(event, NodeVisited) and not event.node.is_leaf():
            self.vjp_calls += 1

    def op(self, op, inputs, params, out) -> None:
        self.ops += 1


def _gradients(out: Tensor, leaves: dict[str, Tensor], strategy) -> tuple[dict, int, int, str | None]:
    """Backward from ``out`` with ``strategy`` into fresh ``.grad``s: (grads, VJP calls, backward ops,
    caught error). The same engine calls as :func:`record_execution`, counted only. The forward
    graph is only read, so every strategy can run on the same one."""
    for t in leaves.values():
        t.grad = None
    count = _Count()
    error = None
    if out.requires_grad:
        seed = ops.ones_like(out)
        try:
            with np.errstate(all="ignore"), trace_ops(count.op):
                autodiff.backpropagate(out, seed, strategy, count)
        except RecursionError:
            error = "RecursionError"
        except WorkLimitExceeded as e:
            error = f"WorkLimitExceeded: {e}"
    grads = {n: (t.grad.numpy() if t.grad is not None else np.zeros(t.shape)) for n, t in leaves.items()}
    return grads, count.vjp_calls, count.ops, error


def strategy_comparison(n_graphs: int = 50, n_ops: int = 12, seed: int = 0, strategies=STRATEGY_NAMES,
                        programs: list[tuple[str, dict]] | None = None, tree: bool = False,
                        max_vjp_calls: int = STATS_MAX_VJP_CALLS) -> list[StrategyRow]:
    """Run every strategy on many random graphs; compare gradients with the topological pass.

    A strategy is *wrong* on a graph by :func:`gradients_wrong` (:data:`WRONG_GRADIENTS`); *errors* counts
    caught failures (RecursionError, or path recursion giving up after ``max_vjp_calls`` VJP calls on one
    graph). Each program is parsed and run forward once;
    every strategy then runs the real backward pass on that graph with an observer that only
    counts (no event records), so 200 graphs of 12 ops take about a second.

    Raises:
        ValueError: more than 500 graphs, more than 60 ops per graph, or graphs x ops > 6000
            (the request is bounded).
    """
    if programs is None:
        if not 1 <= n_graphs <= STATS_MAX_GRAPHS or not 1 <= n_ops <= STATS_MAX_OPS \
                or n_graphs * n_ops > STATS_MAX_TOTAL_OPS:
            raise ValueError(f"at most {STATS_MAX_GRAPHS} graphs of at most {STATS_MAX_OPS} ops and "
                             f"{count(STATS_MAX_TOTAL_OPS)} ops in all (asked for {n_graphs} of {n_ops})")
        gen = random_tree_program if tree else random_dag_program
        programs = [gen(n_ops, seed + i) for i in range(n_graphs)]
    runners = {s: (PathRecursion(max_vjp_calls) if s == "path_recursion" else autodiff.get_strategy(s))
               for s in strategies}
    totals = {s: {"wrong": 0, "errors": 0, "calls": 0, "ops": 0, "worst": 0.0} for s in strategies}
    for text, inputs in programs:
        inputs = parse_inputs(inputs) if isinstance(inputs, str) else dict(inputs)
        program = parse_program(text, inputs) if isinstance(text, str) else text
        leaves = {n: tensor(inputs[n], requires_grad=True, name=n) for n in program.input_names}
        out = program.evaluate(leaves).output
        ref = _gradients(out, leaves, "topological")[0]
        for s in strategies:
            grads, n_calls, n_ops_run, error = _gradients(out, leaves, runners[s])
            t = totals[s]
            t["calls"] += n_calls
            t["ops"] += n_ops_run
            if error:
                t["errors"] += 1
                continue
            t["worst"] = max(t["worst"], _max_err(grads, ref))
            if gradients_wrong(grads, ref):
                t["wrong"] += 1
    n = max(1, len(programs))
    return [StrategyRow(s, len(programs), t["wrong"], t["errors"], t["calls"] / n, t["ops"] / n, t["worst"])
            for s, t in totals.items()]


def doubling_chain_costs(depths=(2, 4, 6, 8, 10), strategies=("topological", "path_recursion")) -> list[dict]:
    """VJP calls per strategy on doubling chains: linear for topological, 2^depth - 1 for path recursion.

    The real backward pass runs with an observer that only counts (as :func:`strategy_comparison`), not
    the event recorder of :func:`record_execution`: depth 14 (16,383 VJP calls) takes a fraction of a
    second instead of seconds."""
    rows = []
    for d in depths:
        text, inputs = doubling_chain_program(d)
        inputs = parse_inputs(inputs) if isinstance(inputs, str) else dict(inputs)
        program = parse_program(text, inputs)
        for s in strategies:
            leaves = {n: tensor(inputs[n], requires_grad=True, name=n) for n in program.input_names}
            out = program.evaluate(leaves).output
            grads, n_calls, n_ops_run, error = _gradients(out, leaves, s)
            rows.append({"depth": d, "strategy": s, "vjp_calls": n_calls, "backward_ops": n_ops_run,
                         "grad": float(np.asarray(grads["x1"]).reshape(-1)[0]) if "x1" in grads else None,
                         "error": error})
    return rows


def recursion_demo(depth: int = 3000, strategies=("topological", "recursive_dfs")) -> list[Trace]:
    """Backward through a ``depth``-long chain with each strategy; recursive_dfs reports the real
    RecursionError (caught), topological (explicit stack) succeeds."""
    out = []
    for s in strategies:
        y, x = deep_chain(depth)
        out.append(record_tensor(y, {"x1": x}, strategy=s))
    return out
