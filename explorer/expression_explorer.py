"""Expression explorer (page 1): one program run on the engine, stepped forward and backward.

No Streamlit here: the page calls :func:`explorer_model` through its cache.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine import explain as ex
from engine.explain import ExpressionError, costs

from .kit.budget import check_program, finite_difference_checks
from .kit.code_panel import frame_code
from .kit.dot import to_dot
from .kit.formatting import check_difference, fmt_check, fmt_value
from .kit.graph_view import trace_picture
from .kit.graphviz_layout import find_dot
from .kit.plotly_figure import HALF_WIDTH, MAX_HEIGHT
from .kit.programs import InputProblem, parse

@dataclass
class ExplorerModel:
    program: Any
    inputs: dict
    trace: Any                  # the engine's trace, every primitive
    shown_trace: Any            # what is drawn: composites as one node unless expanded
    frameset: Any
    figure: dict                # explorer.kit.plotly_figure.figure_dict (plain dict, with frames)
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
        groups = self.shown_trace.steps()
        k = step - first
        if not 0 <= k < len(groups):
            return []
        name = {n.id: n.name for n in self.shown_trace.graph.nodes}
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

    def code(self, step: int):
        """The engine code frame ``step`` executed (:func:`explorer.kit.code_panel.frame_code`)."""
        return frame_code(self.shown_trace, self.frameset, min(max(step, 0), self.n_frames - 1), "topological")

    def forward_dot(self, step: int | None = None) -> str:
        """DOT of the forward graph (with values and adjoints; the frame's highlight when ``step``)."""
        key = ("fwd", step)
        if key not in self.dot_cache:
            frame = None if step is None else self.frameset.frames[min(max(step, 0), self.n_frames - 1)]
            self.dot_cache[key] = to_dot(self.shown_trace.graph.without_constants(), self.shown_trace, frame,
                                         self.frameset)
        return self.dot_cache[key]

    def forward_svg(self) -> bytes | None:
        """The forward graph as SVG for download, drawn once per model by Graphviz's ``dot`` (None without it).

        Once, not per rerun: parsing the DOT back with pydot and starting ``dot`` took about a second,
        and every click of Step reran it.
        """
        if "svg" not in self.dot_cache:
            svg = None
            prog = find_dot()
            if prog:
                try:
                    svg = subprocess.run([prog, "-Tsvg"], input=self.forward_dot().encode(), capture_output=True,
                                         timeout=20, check=True).stdout
                except (OSError, subprocess.SubprocessError):
                    svg = None
            self.dot_cache["svg"] = svg
        return self.dot_cache["svg"]

    def gradient_dot(self) -> str | None:
        if self.gradient_graph is None:
            return None
        if "grad" not in self.dot_cache:
            self.dot_cache["grad"] = to_dot(self.gradient_graph)
        return self.dot_cache["grad"]


def explorer_model(program_text: str, inputs_text: str, dtype: str = "float64", expand_composites: bool = False,
                   width: int = HALF_WIDTH, max_height: int = MAX_HEIGHT) -> ExplorerModel:
    """Run the program on the engine (forward + backward with events, gradient graph, central differences).

    Args:
        expand_composites: draw tanh, softmax, ... as the primitives the engine ran (default: one node each).
        width: px the graph figure may use (default: half of a 1400 px window, beside the code panel);
            px at normal size: for presentation mode pass the px available / ``figures.graph_scale(look)``.
        max_height: px the drawing may take (same scale) before it is shrunk or shown through a window.
    """
    program, inputs = parse(program_text, inputs_text)
    try:
        # forward, backward with its gradient graph (about 4 runs), two runs per central difference
        checks = finite_difference_checks({n: np.shape(v) for n, v in inputs.items()})
        check_program(program, inputs, 4 + 2 * checks, "the expression explorer (forward, backward, gradient "
                                                       f"graph and {checks} central differences)")
        trace = ex.record_execution(program, inputs, strategy="topological", create_graph=True, dtype=dtype)
        central = costs.central_differences(program, inputs, dtype=dtype)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    pic = trace_picture(trace, expand_composites=expand_composites, width=width, max_height=max_height)
    return ExplorerModel(program=program, inputs=inputs, trace=trace, shown_trace=pic.trace, frameset=pic.frameset,
                         figure=pic.figure, table=node_table(trace, central), central=central,
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
            row["central difference"] = fmt_check(fd)
            diff = check_difference(auto, fd)
            row["|difference|"] = "" if diff is None else f"{diff:.2e}"
        else:
            row["autodiff ∂f/∂node"] = row["central difference"] = row["|difference|"] = ""
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# gradient accumulation: .grad += on every backward pass until zero_grad

ACCUMULATION_ACTIONS = ("backward", "zero_grad")
MAX_ACCUMULATION_ACTIONS = 20


def accumulation_rows(program_text: str, inputs_text: str, actions: list[str]) -> list[dict]:
    """Each input's and constant's ``.grad`` after a sequence of real engine calls on one forward graph.

    The program runs forward once on fresh leaves; then, in order, ``"backward"`` calls
    ``output.backward()`` (no zeroing: ``accumulate_derivative`` adds into ``.grad``) and
    ``"zero_grad"`` calls ``zero_grad()`` on every input (``.grad`` becomes None). Constants
    (``is_constant``) are never visited by the backward pass, so their ``.grad`` stays None.
    Returns one row per state, the first one right after the forward pass.

    Raises:
        InputProblem: the program or inputs are rejected.
        ValueError: an unknown action, or more than ``MAX_ACCUMULATION_ACTIONS`` of them.
    """
    bad = [a for a in actions if a not in ACCUMULATION_ACTIONS]
    if bad:
        raise ValueError(f"unknown action {bad[0]!r}; known: {', '.join(ACCUMULATION_ACTIONS)}")
    if len(actions) > MAX_ACCUMULATION_ACTIONS:
        raise ValueError(f"at most {MAX_ACCUMULATION_ACTIONS} actions, got {len(actions)}")
    program, inputs = parse(program_text, inputs_text)
    try:
        fw = ex.run_forward(program, inputs)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    constants = [(fw.graph.nodes[nid].name, t) for nid, t in fw.tensor_of.items()
                 if fw.graph.nodes[nid].kind == "constant"]

    def row(n: int, call: str) -> dict:
        r = {"#": n, "call": call}
        for name, leaf in fw.leaves.items():
            r[f"{name}.grad"] = "None" if leaf.grad is None else fmt_value(leaf.grad.numpy())
        for name, t in constants:
            r[f"constant {name}: .grad"] = "None" if t.grad is None else fmt_value(t.grad.numpy())
        return r

    rows = [row(0, f"{fw.graph.nodes[fw.id_of[fw.output.unique_id]].name} = … (forward pass)")]
    for k, action in enumerate(actions, start=1):
        if action == "backward":
            if fw.output.requires_grad:
                fw.output.backward()
            rows.append(row(k, "backward()"))
        else:
            for leaf in fw.leaves.values():
                leaf.zero_grad()
            rows.append(row(k, "zero_grad() on every input"))
    return rows
