"""Expression explorer (page 3): one program run on the engine, stepped forward and backward.

No Streamlit here: the page calls :func:`explorer_model` through its cache.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from explorer import explain as ex
from explorer.classroom import questions as q
from engine import ops
from explorer.explain import ExpressionError, costs

from .kit.budget import REQUEST_SECONDS, check_program, finite_difference_checks
from .kit.code_panel import ENGINE_HEADING, frame_code, lecture_block, protocol_blocks, step_events, to_html
from .kit.dot import to_dot
from .kit.formatting import check_difference, fmt_check, fmt_value
from .kit.backward_view import backward_figure, values_only
from .kit.graph_view import TracePicture, trace_picture
from .kit.graphviz_layout import (Box, GraphvizFailed, GraphvizTimedOut, GraphvizUnavailable, Link, PictureTooBig,
                                  draw_svg)
from .kit.plotly_figure import figure_dict
from .kit.plotly_figure import HALF_WIDTH, MAX_HEIGHT
from .kit.programs import InputProblem, parse
from explorer.explain.numbers import plain, sci

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
    backward_figure: dict | None = None   # the backward pass in the slides' notation (kit/backward_view)
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

    def forward_svg(self) -> tuple[bytes | None, str]:
        """The forward graph as SVG for download, drawn once per model by Graphviz's ``dot``: ``(svg, "")``, or
        ``(None, why not)`` (Graphviz missing, the graph too large to draw within a request, dot failed).

        Once, not per rerun: parsing the DOT back with pydot and starting ``dot`` took about a second,
        and every click of Step reran it. Its cost is estimated before dot starts and dot runs at most
        :data:`~explorer.kit.budget.REQUEST_SECONDS` (a 496-op program ran it for 20 s of CPU).
        """
        if "svg" not in self.dot_cache:
            g = self.shown_trace.graph.without_constants()
            boxes, links = [Box(n.id, 1, 1) for n in g.nodes], [Link(e.src, e.dst) for e in g.edges]
            svg, why = None, ""
            try:
                svg = draw_svg(self.forward_dot(), boxes, links, REQUEST_SECONDS)
            except GraphvizUnavailable:
                why = "SVG download needs Graphviz (`dot`), which is not installed here."
            except PictureTooBig as e:
                why = (f"No SVG download: this graph is too large for Graphviz to draw within a request ({e}). "
                       "Download the DOT and run `dot -Tsvg graph.dot` on your machine.")
            except GraphvizTimedOut:
                why = (f"No SVG download: Graphviz took more than {plain(REQUEST_SECONDS)} s to draw this graph. "
                       "Download the DOT and run `dot -Tsvg graph.dot` on your machine.")
            except GraphvizFailed:
                why = "No SVG download: Graphviz could not draw this graph. The DOT download has the same graph."
            self.dot_cache["svg"] = (svg, why)
        return self.dot_cache["svg"]

    def gradient_dot(self) -> str | None:
        if self.gradient_graph is None:
            return None
        if "grad" not in self.dot_cache:
            self.dot_cache["grad"] = to_dot(self.gradient_graph)
        return self.dot_cache["grad"]


def explorer_model(program_text: str, inputs_text: str, dtype: str = "float64", expand_composites: bool = False,
                   width: int = HALF_WIDTH, max_height: int = MAX_HEIGHT, presenting: bool = False) -> ExplorerModel:
    """Run the program on the engine (forward + backward with events, gradient graph, central differences).

    Args:
        expand_composites: draw tanh, softmax, ... as the primitives the engine ran (default: one node each).
        width: px the graph figure may use (default: half of a 1400 px window, beside the code panel);
            px at normal size: for presentation mode pass the px available / ``figures.graph_scale(look)``.
        max_height: px the drawing may take (same scale) before it is shrunk or shown through a window.
        presenting: the projector's pair of graphs: the forward graph with values only (left to right) and
            the backward graph under it; otherwise the forward graph carries the adjoints too.
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
    if presenting:  # the forward graph carries values, the backward graph under it the adjoints
        pic = TracePicture(pic.trace, pic.graph, pic.frameset,
                           figure_dict(values_only(pic.frameset), pic.graph, width=width, max_height=max_height))
    back = backward_figure(pic.frameset, pic.graph, pic.figure, width=width, max_height=max_height)
    return ExplorerModel(program=program, inputs=inputs, trace=trace, shown_trace=pic.trace, frameset=pic.frameset,
                         figure=pic.figure, table=node_table(trace, central), central=central,
                         gradient_graph=getattr(trace, "gradient_graph", None), backward_figure=back)


# --- the gradient check of each input, and why it fails ---------------------------------------------

CHECK_RTOL = 1e-5   # central differences (h = 1e-6, float64) agree with autodiff far closer than this
FAILED = "failed"   # row status: this input's check failed
CAUSE = "cause"     # row status: the node where the failure starts
OK = "ok"


@dataclass(frozen=True)
class GradientCheck:
    """One input's autodiff gradient against its central difference: agreed or not, and why not."""
    ok: bool
    reason: str = ""        # "kink of relu at 0: autodiff 0 vs central difference 0.5"
    cause_node: int | None = None   # graph node id where the trouble starts (None: no cause found)
    cause: str = ""         # "kink of relu at 0: f = relu(x3) with x3 = 0" (where, without the numbers)


def _floats(value: Any) -> np.ndarray | None:
    """A stored value (float, "nan"/"inf" text, nested list) as a float array; None when not kept."""
    if value is None:
        return None
    try:
        return np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None


def _cause_at(step, values: dict[int, np.ndarray | None], names: dict[int, str]) -> tuple[str, str] | None:
    """What makes finite differences and the chain rule part ways at this op, if anything:
    ``(short reason, where)``, e.g. ``("kink of relu at 0", "f = relu(x3) with x3 = 0")``."""
    ins = [values.get(i) for i in step.inputs]
    out = _floats(step.value)
    node = names[step.node]
    arg = names.get(step.inputs[0], "its input") if step.inputs else "its input"
    x = ins[0] if ins else None
    if step.op == "relu" and x is not None and np.any(x == 0):
        return "kink of relu at 0", f"{node} = relu({arg}) with {arg} = 0"
    if step.op == "step" and x is not None and np.any(x == 0):
        return "jump of step at 0", f"{node} = step({arg}) with {arg} = 0"
    if step.op == "max" and x is not None and x.size > 1 and np.sum(x == np.max(x)) > 1:
        return "kink of max at a tie", f"{node} = max({arg}): its largest value occurs twice"
    if step.op == "log" and x is not None:
        if np.any(x < 0):
            return "outside log's domain", f"{node} = log({arg}) with {arg} < 0"
        if np.any(x == 0):
            return "pole of log at 0", f"{node} = log({arg}) with {arg} = 0"
    if step.op == "div" and len(ins) > 1 and ins[1] is not None and np.any(ins[1] == 0):
        den = names.get(step.inputs[1], "the divisor")
        return "pole (division by zero)", f"{node} = {names.get(step.inputs[0], '…')} / {den} with {den} = 0"
    if step.op == "reciprocal" and x is not None and np.any(x == 0):
        return "pole (division by zero)", f"{node} = 1 / {arg} with {arg} = 0"
    if step.op == "pow" and x is not None and out is not None:
        if np.any(np.isnan(out) & (x < 0)):
            return "outside the domain of a root", f"{node} = pow({arg}) with {arg} < 0"
        if np.any(np.isinf(out) & (x == 0)):
            return "pole of a negative power at 0", f"{node} = pow({arg}) with {arg} = 0"
        if np.any(x == 0):
            return "infinite slope of a root at 0", f"{node} = pow({arg}) with {arg} = 0"
    if out is not None and not np.all(np.isfinite(out)) and all(v is not None and np.all(np.isfinite(v))
                                                                for v in ins):
        return f"overflow in {step.op}", f"{node} = {step.op}({', '.join(names.get(i, '…') for i in step.inputs)}) " \
            "is not finite"
    return None


def check_gradient(trace, input_name: str, autodiff: Any, central: Any) -> GradientCheck:
    """Compare one input's autodiff gradient with its central difference and say why they differ.

    The check fails when either is not finite or when they differ by more than ``CHECK_RTOL`` relative to
    the larger of 1 and their magnitudes. The reason names the first op, in execution order and among the
    ops that depend on the input, where the function is not differentiable: a kink (relu at 0, a tie in
    max), a point outside an op's domain (log of a negative number: nan), a pole (division by zero,
    log at 0), or an overflow. With none of these, the two simply disagree (a wrong VJP would do that).
    """
    numbers = f"autodiff {fmt_value(autodiff)} vs central difference {fmt_check(central)}"
    if hasattr(central, "autodiff"):  # a large input, checked along random directions v: compare <grad, v>
        a, c = _floats(central.autodiff(autodiff)) if autodiff is not None else None, _floats(central.estimates)
    else:
        a, c = _floats(autodiff), _floats(central)
    if a is None or c is None or a.shape != c.shape:
        return GradientCheck(False, f"no comparison possible: {numbers}")
    finite = bool(np.all(np.isfinite(a)) and np.all(np.isfinite(c)))
    if finite:
        scale = max(1.0, float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(c), initial=0.0)))
        if float(np.max(np.abs(a - c), initial=0.0)) <= CHECK_RTOL * scale:
            return GradientCheck(True)
    names = {n.id: n.name for n in trace.graph.nodes}
    values = {n.id: _floats(n.value) for n in trace.graph.nodes}
    start = next((n.id for n in trace.graph.nodes if n.name == input_name and n.kind == "input"), None)
    reached = {start}
    for step in trace.forward:  # the ops that depend on this input, in execution order
        if not reached.intersection(step.inputs):
            continue
        reached.add(step.node)
        found = _cause_at(step, values, names)
        if found is not None:
            return GradientCheck(False, f"{found[0]}: {numbers}", step.node, f"{found[0]}: {found[1]}")
    if not finite:  # e.g. f = exp(x1) * x2 at x1 = 800: x2's gradient is exp(800), an overflow elsewhere
        for step in trace.forward:
            found = _cause_at(step, values, names)
            if found is not None:
                return GradientCheck(False, f"{found[0]} ({found[1]}): {numbers}")
        return GradientCheck(False, f"not finite: {numbers}")
    return GradientCheck(False, f"autodiff and central difference disagree: {numbers}")


def node_table(trace, central: dict) -> list[dict]:
    """One row per graph node: value and adjoint; inputs also get the central difference, the gap and
    the check (``check``: "✓ agrees" or "✗ " and the reason). ``status`` is ``ok``, ``failed`` (this
    input's check failed) or ``cause`` (the op where a failed check starts), for colouring the row."""
    rows = []
    computes = {st.node: st.text.rsplit(" = ", 1)[0].split(" = ", 1)[-1] for st in trace.forward}
    checks = {name: check_gradient(trace, name, auto, central.get(name)) for name, auto in trace.grads.items()}
    causes: dict[int, list[str]] = {}
    for name, chk in checks.items():
        if chk.cause_node is not None:
            causes.setdefault(chk.cause_node, []).append(name)
    for node in trace.graph.without_constants().nodes:
        adjoint = trace.adjoints.get(node.id)
        row = {"node": node.name, "op": node.op, "computes": computes.get(node.id, "input"),
               "value": fmt_value(node.value),
               "adjoint": fmt_value(adjoint)}
        status, check = OK, ""
        if node.kind == "input" and node.name in trace.grads:
            auto = trace.grads[node.name]
            fd = central.get(node.name)
            row["autodiff ∂f/∂node"] = fmt_value(auto)
            row["central difference"] = fmt_check(fd)
            diff = check_difference(auto, fd)
            row["|difference|"] = "" if diff is None else sci(diff, 3)
            chk = checks[node.name]
            status, check = (OK, "✓ agrees") if chk.ok else (FAILED, "✗ " + chk.reason)
        else:
            row["autodiff ∂f/∂node"] = row["central difference"] = row["|difference|"] = ""
        if node.id in causes:
            chk = checks[causes[node.id][0]]
            status = FAILED if status == FAILED else CAUSE
            check = (check + "; " if check else "") + f"⚠ here: {chk.cause} — breaks the check of " \
                f"{', '.join(causes[node.id])}"
        row["check"] = check
        row["status"] = status
        rows.append(row)
    return rows


def table_data(rows: list[dict]):
    """Rows as the ``pyarrow.Table`` that ``st.table`` would make of ``pd.DataFrame(rows)`` (the same
    bytes reach the browser), built once and kept in the page's cache: a pandas DataFrame is converted
    to Arrow again at every rerun (about 1 ms a table, three tables per Step)."""
    import pandas as pd
    import pyarrow as pa

    return pa.Table.from_pandas(pd.DataFrame(rows))


def node_table_data(rows: list[dict]):
    """The node table for ``st.table``: a ``pyarrow.Table`` (:func:`table_data`, cacheable) when no row
    is coloured, else ``None``: the page then shows :func:`node_table_styler` (a Styler is marshalled
    at every rerun, about 8 ms, and is not shared between sessions: marshalling mutates it)."""
    if any(r.get("status", OK) != OK for r in rows):
        return None
    return table_data([{k: v for k, v in r.items() if k != "status"} for r in rows])


@dataclass(frozen=True)
class StepView:
    """What one step shows beside the graph, ready to send: built once per (program, step, font) and
    shared by every session stepping through the same program (a class on the slide example)."""
    header: str                 # Markdown: "#### Step k of n · phase" and the caption (engine text, no user input)
    contributions: Any          # pyarrow.Table of :meth:`ExplorerModel.contributions`, None when nothing was sent
    code_html: str              # the code panel (:func:`explorer.kit.code_panel.to_html`: every line escaped)
    code_caption: str
    lecture_html: str = ""      # slide 27's backward_pass with the same step's work lit


def step_view(model: ExplorerModel, frame: int, font_px: int, code_height_px: int | None = None,
              lecture_height_px: int | None = None) -> StepView:
    """The header, contributions table and code panel of the 0-based ``frame`` (code at ``font_px``; the
    engine's panel scrolls beyond ``code_height_px``, the slide's ``backward_pass`` beyond ``lecture_height_px``:
    a window on the lines the step lights)."""
    frame = min(max(int(frame), 0), model.n_frames - 1)
    sent = model.contributions(frame)
    view = model.code(frame)
    lecture = lecture_block(step_events(model.shown_trace, model.frameset, frame), model.shown_trace.graph.output)
    return StepView(f"#### Step {frame + 1} of {model.n_frames} · {model.phase(frame)}\n{model.caption(frame)}",
                    table_data(sent) if sent else None,
                    to_html(view, font_px, test_id="code-panel", max_height_px=code_height_px, heading=ENGINE_HEADING),
                    view.caption,
                    to_html([lecture], font_px, test_id="code-lecture", max_height_px=lecture_height_px,
                            narrow=code_height_px is not None))


def protocol_html(font_px: int, strategy: str = "topological") -> str:
    """``backpropagate``, ``topological_sort`` and the HW2 protocol as the code panel's HTML (the same for
    every program: the page keeps it)."""
    return to_html(protocol_blocks(strategy), font_px, test_id="code-reference")


ROW_STYLE = {FAILED: "background-color: #fee2e2; color: #7f1d1d; font-weight: 600",
             CAUSE: "background-color: #fef3c7; color: #78350f"}


def node_table_styler(rows: list[dict]):
    """The node table as a pandas Styler for ``st.table``: failed checks red, the op that causes one amber.

    The ``status`` column only drives the colours and is not shown. (Dark text on a pale fill: both
    pass WCAG AA contrast.)
    """
    import pandas as pd

    df = pd.DataFrame(rows)
    status = list(df.pop("status")) if "status" in df else [OK] * len(df)

    def colour(row):
        css = ROW_STYLE.get(status[row.name], "")
        return [css] * len(row)

    return df.style.apply(colour, axis=1)


# ---------------------------------------------------------------------------
# gradient accumulation: .grad += on every backward pass until zero_grad

ACCUMULATION_ACTIONS = ("backward", "zero_grad")
MAX_ACCUMULATION_ACTIONS = 20


def accumulation_rows(program_text: str, inputs_text: str, actions: list[str]) -> list[dict]:
    """Each input's and constant's ``.grad`` after a sequence of real engine calls on one forward graph.

    The program runs forward once on fresh leaves; then, in order, ``"backward"`` calls
    ``output.backward(retain_graph=True)`` (no zeroing: ``accumulate_derivative`` adds into ``.grad``;
    ``retain_graph`` keeps the graph for the next call, as PyTorch needs it too) and
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

    out = fw.output
    name = fw.graph.nodes[fw.id_of[out.unique_id]].name
    rows = [row(0, f"{name} = … (forward pass)")]
    # backward() needs a scalar (PyTorch's rule); a vector output is seeded with ones, as the graph above
    # is: the gradient of sum(output), and the call says so
    seed = None if out.numel() == 1 else ops.ones_like(out)
    call = ("backward(retain_graph=True)" if seed is None else
            f"backward(ones, retain_graph=True): {name} has {out.numel()} elements, so, as in the "
            f"graph above, the gradient of sum({name})")
    for k, action in enumerate(actions, start=1):
        if action == "backward":
            if out.requires_grad:
                out.backward(seed, retain_graph=True)  # the same graph again: keep it, as PyTorch must
            rows.append(row(k, call))
        else:
            for leaf in fw.leaves.values():
                leaf.zero_grad()
            rows.append(row(k, "zero_grad() on every input"))
    return rows


def class_view(shown: StepView, graphs: list[dict]):
    """What a class's students see of this step (:class:`explorer.classroom.views.ClassView`), rendered once by
    the lecturer's run: the step's header and contributions, ``graphs`` (the forward graph and the backward
    graph, Plotly figure dicts as the page draws them) beside the lecture's ``backward_pass`` with the step's
    lines lit and the engine's code with its caption."""
    from explorer.classroom.views import ClassView, markdown_html
    from .kit.backward_view import legend_html
    view = ClassView("Expression_explorer", "Expression explorer", markdown_html(shown.header))
    if shown.contributions is not None:
        view.add_html(shown.contributions.to_pandas().to_html(index=False, border=0, classes="adx-table"))
    forward, backward = graphs
    left = [{"kind": "plot", "figure": forward},
            {"kind": "html", "html": "<b>The backward graph</b> as the slides draw it: x̄ nodes, each edge reversed "
                                     "carrying its contribution, the sum at a fan-out"},
            {"kind": "plot", "figure": backward}, {"kind": "html", "html": legend_html()}]
    right = [{"kind": "html", "html": "<b>Slide 27's backward_pass</b> — the line this step executes is lit"},
             {"kind": "html", "html": shown.lecture_html},
             {"kind": "html", "html": shown.code_html},   # headed: the engine's own code, not the slide's
             {"kind": "html", "html": f"<div class='adx-caption'>{markdown_html(shown.code_caption)}</div>"}]
    view.add_row([{"kind": "column", "blocks": left}, {"kind": "column", "blocks": right}], [1, 1])
    return view


def relayed_view(model: ExplorerModel, shown: StepView, frame: int):
    """The 0-based ``frame`` as a class's students see it (drawn by their browsers), and as an exported
    walk-through shows it: :func:`class_view` with the forward and backward graphs at a laptop's sizes."""
    from .kit.figures import laptop_still
    return class_view(shown, [laptop_still(fig, frame) for fig in (model.figure, model.backward_figure)])


def walkthrough_views(model: ExplorerModel) -> list:
    """Every step of ``model`` as the view a following student sees (:func:`relayed_view`), at a laptop's code
    size: what the exported file and the notebook widget (:mod:`explorer.notebook`) show."""
    from .kit.code_panel import font_px
    font = font_px(False)
    return [relayed_view(model, step_view(model, k, font), k) for k in range(model.n_frames)]


def walkthrough(model: ExplorerModel, program_text: str, inputs_text: str) -> str:
    """Every step of ``model`` as one self-contained HTML file (:func:`explorer.kit.export_html.walkthrough_html`):
    each step the view a following student sees (:func:`walkthrough_views`).

    Raises:
        explorer.kit.export_html.ExportTooBig: the file would be too large to email.
    """
    from .kit.export_html import walkthrough_html
    return walkthrough_html("Expression explorer: a walk-through", walkthrough_views(model),
                            source=f"{program_text.strip()}\nat {inputs_text.strip()}")


MAX_TENSOR_NODES = 400   # ops in a graph built outside the app (a notebook): more is boxed and would not teach


def tensor_model(output: Any, names: dict[str, Any] | None = None, width: int = HALF_WIDTH,
                 max_height: int = MAX_HEIGHT) -> ExplorerModel:
    """The Expression explorer's model of a graph built with the engine outside the app (a notebook's ``loss``):
    the same recorded backward pass (:func:`explorer.explain.record_tensor`), frames and figures as a typed
    program's, without the page's central differences and gradient graph.

    Args:
        output: an engine Tensor computed from leaves with ``requires_grad``.
        names: display name -> leaf tensor, listed in this order (other leaves: the tensor's ``name``, else
            ``x1``, ``x2``, ... in the order the graph reaches them).

    Every leaf's ``.grad`` is as it was afterwards (recording runs a backward pass of its own).

    Raises:
        TypeError: ``output`` is not an engine Tensor.
        ValueError: nothing in its graph requires a gradient, or the graph has more than
            :data:`MAX_TENSOR_NODES` ops.
    """
    from engine import autodiff
    from engine.tensor import Tensor
    if not isinstance(output, Tensor):
        raise TypeError(f"expected an engine Tensor, got {type(output).__name__}")
    if not output.requires_grad:
        raise ValueError("this tensor does not depend on any input with requires_grad=True: there is no "
                         "backward pass to step through")
    order = autodiff.topological_sort(output)
    if sum(1 for t in order if not t.is_leaf()) > MAX_TENSOR_NODES:
        raise ValueError(f"this graph has more than {MAX_TENSOR_NODES} ops; step through a smaller one")
    # the named leaves in the order given, then the others as the graph reaches them (inputs first)
    leaves: dict[str, Any] = {n: t for n, t in (names or {}).items() if t.requires_grad}
    named = {id(t) for t in leaves.values()}
    for t in reversed(order):
        if t.is_leaf() and t.requires_grad and id(t) not in named:
            name = t.name or f"x{len(leaves) + 1}"
            while name in leaves:
                name += "'"
            leaves[name] = t
    kept = {n: t.grad for n, t in leaves.items()}
    try:
        trace = ex.record_tensor(output, leaves)
    finally:
        for n, t in leaves.items():
            t.grad = kept[n]
    return _drawn(trace, dict(leaves), width, max_height)


def protocol_model(output: Any, names: dict[str, Any] | None = None, width: int = HALF_WIDTH,
                   max_height: int = MAX_HEIGHT) -> ExplorerModel:
    """The Expression explorer's model of a HW2-protocol graph (a student's MiniTorch ``Scalar``s): the engine's
    own backward pass walking it and calling its ``chain_rule`` (:func:`explorer.explain.protocol.record_protocol`),
    drawn as a typed program's. The student's ``.derivative`` values stay as they were.

    Raises:
        TypeError: ``output`` does not offer HW2's protocol.
        ValueError: nothing in the graph takes a gradient, or it is too large to step through.
    """
    from explorer.explain.protocol import record_protocol
    return _drawn(record_protocol(output, names), dict(names or {}), width, max_height)


def _drawn(trace: Any, inputs: dict, width: int, max_height: int) -> ExplorerModel:
    """A recorded graph's frames and figures, as :func:`explorer_model` draws a program's."""
    pic = trace_picture(trace, width=width, max_height=max_height)
    back = backward_figure(pic.frameset, pic.graph, pic.figure, width=width, max_height=max_height)
    return ExplorerModel(program=None, inputs=inputs, trace=trace, shown_trace=pic.trace, frameset=pic.frameset,
                         figure=pic.figure, table=[], central={}, backward_figure=back)


@q.register_questions("Expression_explorer")
def class_questions(params: Mapping[str, str]) -> list[q.Proposal]:
    """The page's questions from its link parameters: the next step of the program's walk, frames as the page
    draws them (:func:`explorer.classroom.questions.program_questions`)."""
    return q.program_questions(params)
