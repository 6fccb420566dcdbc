"""What each page shows, computed from the engine's explain layer (no Streamlit here).

Pages call these through a cache; each function takes plain text/values and returns plain results,
so the same calls are used by the unit tests and the rerun benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


from engine import explain as ex
from engine.explain.dot import to_dot
from engine.explain.frames import build_frames
from engine.explain.layout import layout
from engine.explain.plotly_figure import figure_dict as build_figure
from engine.explain import ExpressionError

from .formatting import fmt_value, max_abs_difference


def _costs():
    from engine.explain import costs
    return costs


def _harness():
    from engine.explain import harness
    return harness


class InputProblem(Exception):
    """The program or the input text was rejected by the engine's parser.

    ``where`` is ``"program"`` or ``"inputs"`` (which text box the message belongs under); ``error``
    is the parser's :class:`ExpressionError` (line, col, message).
    """

    def __init__(self, where: str, error: ExpressionError):
        self.where = where
        self.error = error
        super().__init__(f"{where}: {error}")

    def caret(self, text: str) -> str | None:
        """The offending line with a ^ under the column (None without a position)."""
        e = self.error
        if e.line is None:
            return None
        lines = text.splitlines() or [""]
        if not 1 <= e.line <= len(lines):
            return None
        line = lines[e.line - 1]
        col = max((e.col or 1) - 1, 0)
        return f"{line}\n{' ' * min(col, len(line))}^"


def parse(program_text: str, inputs_text: str):
    """(Program, inputs dict) or InputProblem naming the box at fault."""
    try:
        inputs = ex.parse_inputs(inputs_text)
    except ExpressionError as e:
        raise InputProblem("inputs", e) from None
    try:
        program = ex.parse_program(program_text, inputs)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    if not program.input_names:  # e.g. "f = 2": pages index input_names[0] (seed, wrt), so reject it here
        raise InputProblem("program", ExpressionError(
            "the output does not depend on any input (it is a plain number)",
            program.statements[-1].line, kind="undefined"))
    return program, inputs


@dataclass
class ExplorerModel:
    program: Any
    inputs: dict
    trace: Any
    positions: dict
    frameset: Any
    figure: dict                # engine.explain.plotly_figure.figure_dict (plain dict, with frames)
    table: list[dict]
    central: dict
    gradient_graph: Any = None
    dot_cache: dict = field(default_factory=dict)

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames)

    def caption(self, step: int) -> str:
        fr = self.frameset.frames[min(max(step, 0), self.n_frames - 1)]
        return fr.caption

    def phase(self, step: int) -> str:
        return self.frameset.frames[min(max(step, 0), self.n_frames - 1)].phase

    def contributions(self, step: int) -> list[dict]:
        """What the backward pass sent at frame ``step``: one row per edge, from the recorded events.

        ``local derivative`` is contribution / adjoint, shown for scalars only (for tensors the VJP is a
        product with a Jacobian, not one number).
        """
        frames = self.frameset.frames
        step = min(max(step, 0), self.n_frames - 1)
        first = next((f.index for f in frames if f.phase == "backward"), None)
        if first is None or frames[step].phase != "backward":
            return []
        groups = self.trace.steps()
        k = step - first
        if not 0 <= k < len(groups):
            return []
        name = {n.id: n.name for n in self.trace.graph.nodes}
        adjoint = next((e.value for e in groups[k] if e.kind == "visit"), None)
        rows = []
        for e in groups[k]:
            if e.kind != "send":
                continue
            local = ""
            if isinstance(adjoint, (int, float)) and isinstance(e.value, (int, float)) and adjoint != 0:
                local = fmt_value(e.value / adjoint)
            rows.append({"edge (backward)": f"{name.get(e.node, e.node)} → {name.get(e.parent, e.parent)}",
                         f"adjoint of {name.get(e.node, e.node)}": fmt_value(adjoint),
                         "local derivative": local, "contribution sent (VJP)": fmt_value(e.value)})
        return rows

    def forward_dot(self, step: int | None = None) -> str:
        """DOT of the forward graph (with values and adjoints; the frame's highlight when ``step``)."""
        key = ("fwd", step)
        if key not in self.dot_cache:
            frame = None if step is None else self.frameset.frames[min(max(step, 0), self.n_frames - 1)]
            self.dot_cache[key] = to_dot(self.trace.graph, self.trace, frame, self.frameset)
        return self.dot_cache[key]

    def gradient_dot(self) -> str | None:
        if self.gradient_graph is None:
            return None
        if "grad" not in self.dot_cache:
            self.dot_cache["grad"] = to_dot(self.gradient_graph)
        return self.dot_cache["grad"]


def explorer_model(program_text: str, inputs_text: str, dtype: str = "float64") -> ExplorerModel:
    """Run the program on the engine (forward + backward with events, gradient graph, central differences)."""
    program, inputs = parse(program_text, inputs_text)
    try:
        trace = ex.record_execution(program, inputs, strategy="topological", create_graph=True, dtype=dtype)
        central = _costs().central_differences(program, inputs, dtype=dtype)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    shown = trace.graph.without_constants()  # constants are folded into the ops' labels
    positions = layout(shown)
    frameset = build_frames(trace, shown)
    figure = build_figure(frameset, shown, positions)
    return ExplorerModel(program=program, inputs=inputs, trace=trace, positions=positions, frameset=frameset,
                         figure=figure, table=node_table(trace, central), central=central,
                         gradient_graph=getattr(trace, "gradient_graph", None))


def node_table(trace, central: dict) -> list[dict]:
    """One row per graph node: value and adjoint; inputs also get the central difference and the gap."""
    rows = []
    computes = {st.node: st.text.rsplit(" = ", 1)[0].split(" = ", 1)[-1] for st in trace.forward}
    for node in trace.graph.without_constants().nodes:
        adjoint = trace.adjoints.get(node.id)
        row = {"node": node.name, "op": node.op, "computes": computes.get(node.id, "input"),
               "value": fmt_value(node.value),
               "adjoint": fmt_value(adjoint)}
        if node.kind == "input" and node.name in trace.grads:
            auto = trace.grads[node.name]
            fd = central.get(node.name)
            row["autodiff ∂f/∂node"] = fmt_value(auto)
            row["central difference"] = fmt_value(fd)
            diff = max_abs_difference(auto, fd)
            row["|difference|"] = "" if diff is None else f"{diff:.2e}"
        else:
            row["autodiff ∂f/∂node"] = row["central difference"] = row["|difference|"] = ""
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# Backprop orders

STRATEGY_LABELS = {
    "topological": "Topological (correct)",
    "bfs_first_touch": "BFS, first touch (broken)",
    "path_recursion": "Path recursion (correct, exponential)",
    "recursive_dfs": "Recursive DFS (correct, recursion limit)",
}


@dataclass
class OrderView:
    strategy: str
    trace: Any
    frameset: Any
    figure: dict                # engine.explain.plotly_figure.figure_dict (plain dict, with frames)
    wrong: list[dict]          # inputs whose gradient differs from the topological one
    dropped: list[str]         # why: the contributions that were lost (event texts)
    error: str | None
    lost_step: int | None = None   # first frame where a contribution is lost (the wrong gradient starts)

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames) if self.frameset is not None else 0


@dataclass
class OrdersModel:
    program: Any
    inputs: dict
    positions: dict
    correct: dict
    views: dict[str, OrderView]

    @property
    def n_frames(self) -> int:
        return max((v.n_frames for v in self.views.values()), default=1)


def orders_model(program_text: str, inputs_text: str, strategies: tuple[str, ...]) -> OrdersModel:
    """The same program backpropagated with each strategy (the real engine each time)."""
    program, inputs = parse(program_text, inputs_text)
    try:
        reference = ex.record_execution(program, inputs, strategy="topological")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    shown = reference.graph.without_constants()
    positions = layout(shown)
    views: dict[str, OrderView] = {}
    for s in strategies:
        trace = reference if s == "topological" else ex.record_execution(program, inputs, strategy=s)
        frameset = build_frames(trace, shown)
        figure = build_figure(frameset, shown, positions)
        wrong = []
        for name, correct in reference.grads.items():
            got = trace.grads.get(name)
            diff = max_abs_difference(got, correct)
            scale = max(1.0, float(max_abs_difference(correct, 0 * _as_array(correct)) or 0.0))
            if got is None or diff is None or diff > 1e-9 * scale:
                wrong.append({"input": name, "this order gives": fmt_value(got), "correct": fmt_value(correct)})
        dropped = [e.text for e in trace.backward if e.kind == "lost"]
        lost_step = next((f.index for f in frameset.frames if "lost" in f.node_state), None)
        views[s] = OrderView(s, trace, frameset, figure, wrong, dropped, getattr(trace, "error", None), lost_step)
    return OrdersModel(program, inputs, positions, reference.grads, views)


def _as_array(v):
    import numpy as np
    return np.asarray(v, dtype=float)


def path_recursion_costs(max_depth: int) -> dict[str, tuple[list[int], list[int]]]:
    """VJP calls per strategy on the doubling chain, depth 1..max_depth: ``strategy -> (depths, calls)``."""
    rows = _harness().doubling_chain_costs(list(range(1, max_depth + 1)))
    series: dict[str, tuple[list[int], list[int]]] = {}
    for r in rows:
        xs, ys = series.setdefault(STRATEGY_LABELS.get(r["strategy"], r["strategy"]), ([], []))
        xs.append(r["depth"])
        ys.append(r["vjp_calls"])
    return series


def random_graph_table(n_graphs: int, n_ops: int, seed: int) -> list[dict]:
    """Random-DAG statistics per strategy: how often wrong, errors, mean VJP calls and backward ops."""
    rows = _harness().strategy_comparison(n_graphs=n_graphs, n_ops=n_ops, seed=seed)
    return [{"order": STRATEGY_LABELS.get(r.strategy, r.strategy), "graphs": r.graphs,
             "wrong gradients": r.wrong, "errors": r.errors, "mean VJP calls": f"{r.mean_vjp_calls:.1f}",
             "mean backward ops": f"{r.mean_backward_ops:.1f}"} for r in rows]


def deep_chain_results(depth: int) -> list[dict]:
    """Backprop a ``depth``-deep chain with recursive DFS and with the topological order (never raises:
    the RecursionError of the recursive sort is caught by the explain layer and reported as text)."""
    traces = _harness().recursion_demo(depth, strategies=("recursive_dfs", "topological"))
    return [{"strategy": tr.strategy, "depth": depth, "error": tr.error,
             "grads": {k: fmt_value(v) for k, v in tr.grads.items()}} for tr in traces]


# ---------------------------------------------------------------------------
# Gradient check

@dataclass
class GradcheckModel:
    program: Any
    inputs: dict
    sweep: Any
    autodiff: dict
    table: list[dict]


def gradcheck_model(program_text: str, inputs_text: str, wrt: str, h: float, index: int = 0) -> GradcheckModel:
    """h sweep for element ``index`` of one input (float32 and float64) and the per-input table at ``h``."""
    import numpy as np
    program, inputs = parse(program_text, inputs_text)
    if wrt not in program.input_names:
        wrt = program.input_names[0]
    index = min(max(int(index), 0), int(np.size(inputs[wrt])) - 1)
    try:
        trace = ex.record_execution(program, inputs)
        sweep = _costs().h_sweep(program, inputs, wrt, index=index)
        fd64 = _costs().central_differences(program, inputs, h=h, dtype="float64")
        fd32 = _costs().central_differences(program, inputs, h=h, dtype="float32")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    table = []
    for name in program.input_names:
        auto = trace.grads.get(name)
        d64, d32 = max_abs_difference(auto, fd64.get(name)), max_abs_difference(auto, fd32.get(name))
        table.append({"input": name, "value": fmt_value(inputs[name]), "autodiff": fmt_value(auto, 10),
                      f"central diff. float64 (h={h:g})": fmt_value(fd64.get(name), 10),
                      "|diff| float64": "" if d64 is None else f"{d64:.2e}",
                      f"central diff. float32 (h={h:g})": fmt_value(fd32.get(name), 10),
                      "|diff| float32": "" if d32 is None else f"{d32:.2e}"})
    return GradcheckModel(program, inputs, sweep, trace.grads, table)


def sweep_series(sweep) -> tuple[dict, list]:
    """h-sweep rows as plot series ``dtype -> (hs, errors)`` and star markers at each best h."""
    series: dict[str, tuple[list, list]] = {}
    for row in sweep.rows:
        xs, ys = series.setdefault(str(row.dtype), ([], []))
        xs.append(float(row.h))
        ys.append(max(float(row.abs_error), 1e-300))  # log axis: an exact hit is drawn at the floor
    markers = []
    for dtype, h in sweep.best_h.items():
        xs, ys = series[str(dtype)]
        y = ys[xs.index(float(h))] if float(h) in xs else min(ys)
        markers.append((f"best h ({dtype})", float(h), y, f"best h={float(h):.0e}"))
    return series, markers


# ---------------------------------------------------------------------------
# Forward vs reverse

@dataclass
class DualModel:
    program: Any
    inputs: dict
    run: Any
    frameset: Any
    figure: dict                # engine.explain.plotly_figure.figure_dict (plain dict, with frames)
    reverse_grads: dict
    table: list[dict]

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames)


def dual_model(program_text: str, inputs_text: str, seed: str) -> DualModel:
    """Forward mode seeded on input ``seed`` (dual numbers through the graph) beside reverse mode."""
    from engine.explain.dual import dual_frames, dual_number_steps
    program, inputs = parse(program_text, inputs_text)
    if seed not in program.input_names:
        seed = program.input_names[0]
    try:
        run = dual_number_steps(program, inputs, seed)
        reverse = ex.record_execution(program, inputs)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    frameset = dual_frames(run)
    shown = run.graph.without_constants()
    positions = layout(shown)
    figure = build_figure(frameset, shown, positions)
    table = [{"node": run.graph.nodes[s.node].name, "computes": s.text.split(" = ")[1] if " = " in s.text else s.op,
              "value": fmt_value(s.value), f"tangent d·/d{seed}": fmt_value(s.tangent)} for s in run.steps]
    return DualModel(program, inputs, run, frameset, figure, reverse.grads, table)


def jacobian_cost_series(max_n: int, fixed: int) -> dict[str, dict[str, tuple[list, list]]]:
    """Passes and engine ops for the full Jacobian of tanh(A x) with n (then m) from 1 to ``max_n``.

    Returns ``{"vary_n": {line: (xs, ys)}, "vary_m": {...}}`` with lines for passes and ops of each mode.
    """
    from engine.explain.dual import network_jacobian_costs
    out: dict[str, dict[str, tuple[list, list]]] = {}
    for which in ("vary_n", "vary_m"):
        lines: dict[str, tuple[list, list]] = {}
        for k in range(1, max_n + 1):
            c = network_jacobian_costs(k, fixed) if which == "vary_n" else network_jacobian_costs(fixed, k)
            for label, v in (("forward mode: passes", c.forward_passes), ("reverse mode: passes", c.reverse_passes),
                             ("forward mode: engine ops", c.forward_ops),
                             ("reverse mode: engine ops", c.reverse_ops)):
                xs, ys = lines.setdefault(label, ([], []))
                xs.append(k)
                ys.append(v)
        out[which] = lines
    return out


BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def memory_series(depth: int, batch: int, width: int) -> dict[str, dict[str, tuple[list, list]]]:
    """Bytes the engine's graph keeps for backward (measured) and the analytic minimum, versus batch
    (at ``depth``) and versus depth (at ``batch``), for a ReLU MLP of ``width`` in float32."""
    costs = _costs()
    out: dict[str, dict[str, tuple[list, list]]] = {}
    for which, xs_all in (("vs_batch", list(BATCHES)),
                          ("vs_depth", list(range(1, depth + 1)))):
        lines: dict[str, tuple[list, list]] = {"kept by the engine (measured)": ([], []),
                                               "what the VJPs strictly need": ([], []),
                                               "parameters (for comparison)": ([], [])}
        for x in xs_all:
            rep = costs.activation_memory(depth if which == "vs_batch" else x, width,
                                          x if which == "vs_batch" else batch)
            for label, v in zip(lines, (rep.kept_total, rep.minimum_total, rep.parameter_bytes)):
                lines[label][0].append(x)
                lines[label][1].append(v)
        out[which] = lines
    return out
