"""Expression explorer (page 1): one program run on the engine, stepped forward and backward.

No Streamlit here: the page calls :func:`explorer_model` through its cache.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine import explain as ex
from engine.explain import ExpressionError, costs

from .kit.dot import to_dot
from .kit.formatting import fmt_value, max_abs_difference
from .kit.frames import build_frames
from .kit.layout import layout
from .kit.plotly_figure import figure_dict as build_figure
from .kit.programs import InputProblem, parse

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
        central = costs.central_differences(program, inputs, dtype=dtype)
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
