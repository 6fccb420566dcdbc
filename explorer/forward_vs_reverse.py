"""Forward vs reverse (page 7): dual numbers through the graph, Jacobian costs, memory kept for backward.
"""
from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any

import numpy as np

import engine
from engine import checkpoint as ck
from engine.tensor import kept_bytes

from explorer import explain as ex
from explorer.explain import ExpressionError, costs
from explorer.explain.costs import MAX_SCALE_DEPTH, RELU_SAVED  # noqa: F401 - the page shows them
from explorer.explain.dual import DualRun, dual_number_steps, network_jacobian_costs
from explorer.explain.graph import marked_names, output_alias_note

from .kit.notes import NOTES
from .kit.budget import check_program
from .kit.formatting import fmt_value
from .kit.frames import Frame, FrameSet, node_heads, value_line
from .kit.labels import dot_name, lecture_names, num, short_value
from .kit.layout import composite_graph
from .kit.plotly_figure import figure_dict
from .kit.programs import InputProblem, parse
from explorer.explain.numbers import count, fixed, megabytes, milliseconds, plain, sci

@dataclass
class DualModel:
    program: Any
    inputs: dict
    run: Any
    frameset: Any
    figure: dict                # explorer.kit.plotly_figure.figure_dict (plain dict, with frames)
    reverse_grads: dict
    table: list[dict]

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames)


DUAL_WIDTH = 550   # px: the graph takes 3/5 of the main column of a 1400 px window
PRESENT_GRAPH_SHARE = 0.7   # presentation mode: the graph's part of the page's width (drawn left to right at the small
#                              projector's text floor: narrower, it turned top to bottom and ran off the first screen)


def dual_model(program_text: str, inputs_text: str, seed: str, width: int = DUAL_WIDTH) -> DualModel:
    """Forward mode seeded on input ``seed`` (dual numbers through the graph) beside reverse mode."""
    program, inputs = parse(program_text, inputs_text)
    if seed not in program.input_names:
        seed = program.input_names[0]
    try:
        check_program(program, inputs, 6, "forward vs reverse (a forward-mode pass and a reverse-mode pass)")
        run = dual_number_steps(program, inputs, seed)
        reverse = ex.record_execution(program, inputs)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    frameset = dual_frames(run)
    shown = composite_graph(run.graph)[0].without_constants()
    figure = figure_dict(frameset, shown, width=width)
    table = dual_table(run, seed)
    return DualModel(program, inputs, run, frameset, figure, reverse.grads, table)


def tangent_column(seed: str) -> str:
    return f"tangent ẋi = ∂xi/∂{seed}"   # the lecture's dot: ẋi, the derivative of node i along the seed input


def dual_table(run: DualRun, seed: str) -> list[dict]:
    """The dual-number table: one row per input (its seed tangent: 1 for ``seed``, 0 for the others), then one
    row per op in the order forward mode computes them; every tangent written ``ẋ3 = 1.5``, as on the graph."""
    dots = marked_names(run.graph, dot_name)
    names = lecture_names(run.graph)   # the output as the graph and its tangent name it: x7 (ẋ7), not f
    rows = [{"node": names[nid], "computes": "seed (input)" if np.any(np.asarray(tan, dtype=float) != 0)
             else "input", "value": fmt_value(val), tangent_column(seed): f"{dots[nid]} = {_tangent(tan)}"}
            for nid, (val, tan) in run.leaves.items()]
    rows += [{"node": names[s.node],
              "computes": s.text.split(" = ")[1] if " = " in s.text else s.op,
              "value": fmt_value(s.value), tangent_column(seed): f"{dots[s.node]} = {_tangent(s.tangent)}"}
             for s in run.steps]
    return rows


def step_rows(model: DualModel, step: int) -> list[dict]:
    """The dual-number table at the 1-based ``step``: the inputs with their seed tangents (all step 1 shows), then
    the ops computed so far."""
    return model.table[:len(model.run.leaves) + step - 1]


def step_notes(model: DualModel, seed: str, step: int, short: bool = False) -> tuple[str, list[str]]:
    """What the page writes beside the table at the 1-based ``step`` (Markdown, names escaped): the paragraph on
    forward against reverse mode (the result only at the last step: no spoiler) and the captions under it.
    ``short`` (a projector): the sentence the lecturer says, no captions but a tensor input's."""
    from .kit.formatting import md_escape
    from explorer.explain.graph import bar
    graph = model.run.graph
    name = md_escape(seed)
    out = md_escape(lecture_names(graph)[graph.output])
    out_dot = md_escape(marked_names(graph, dot_name)[graph.output])
    if short:
        if step < model.n_frames:
            lead = (f"One forward pass gives one input's derivative, **{out_dot} = ∂{out}/∂{name}**; one reverse "
                    "pass gives every input's at once.")
        else:
            lead = (f"Forward, one pass per input: **{out_dot} = {fmt_value(model.run.output_tangent)}**.  \n"
                    "Reverse, one pass for all: "
                    + ", ".join(f"**{md_escape(bar(k))} = {fmt_value(v)}**" for k, v in model.reverse_grads.items()))
        tensor = isinstance(model.reverse_grads.get(seed), list)
        return lead, (["A tensor input's tangent is the derivative along all-ones."] if tensor else [])
    if step < model.n_frames:
        lead = (f"Forward mode, one pass: the output's tangent **{out_dot} = ∂{out}/∂{name}** is known at the last "
                f"step ({model.n_frames}); reverse mode gives every input's gradient in one backward pass.")
    else:
        lead = (f"Forward mode, one pass: **{out_dot} = ∂{out}/∂{name} = {fmt_value(model.run.output_tangent)}**  \n"
                "Reverse mode, one backward pass, every input at once: "
                + ", ".join(f"{md_escape(bar(k))} = ∂{out}/∂{md_escape(k)} = {fmt_value(v)}"
                            for k, v in model.reverse_grads.items()))
    captions = []
    if isinstance(model.reverse_grads.get(seed), list):  # a tensor input (scalars are plain floats)
        captions.append("For a tensor input the forward tangent is the derivative along all-ones, i.e. the sum of "
                        "the reverse-mode gradient's elements.")
    captions.append(f"Engine ops: {model.run.program_ops} for the values, {model.run.rule_ops} more inside the JVP "
                    "rules to carry the tangents.")
    return lead, captions


def step_class_view(model: DualModel, seed: str, step: int):
    """The 1-based ``step`` as the page draws it (:class:`explorer.classroom.views.ClassView`): the header and
    caption, the graph carrying values and tangents beside the table and :func:`step_notes`."""
    import pandas as pd

    from explorer.classroom.views import ClassView, markdown_html
    from .kit.figures import laptop_still
    fr = model.frameset.frames[step - 1]
    view = ClassView("Forward_vs_reverse", "Forward vs reverse",
                     markdown_html(f"#### Step {step} of {model.n_frames}\n{fr.caption}"))
    lead, captions = step_notes(model, seed, step)
    side = [{"kind": "html", "html": pd.DataFrame(step_rows(model, step)).to_html(index=False, border=0,
                                                                                  classes="adx-table")},
            {"kind": "html", "html": markdown_html(lead)}]
    side += [{"kind": "html", "html": f"<div class='adx-caption'>{markdown_html(c)}</div>"} for c in captions]
    view.add_row([{"kind": "plot", "figure": laptop_still(model.figure, step - 1)}, {"kind": "column", "blocks": side}],
                 [3, 2])
    return view


def walkthrough(model: DualModel, seed: str, program_text: str, inputs_text: str) -> str:
    """Every step of the forward-mode pass in one self-contained HTML file
    (:func:`explorer.kit.export_html.walkthrough_html`)."""
    from .kit.export_html import walkthrough_html
    views = [step_class_view(model, seed, k) for k in range(1, model.n_frames + 1)]
    return walkthrough_html("Forward vs reverse (dual numbers): a walk-through", views,
                            source=f"{program_text.strip()}\nat {inputs_text.strip()}\nseed: {seed}")


def jacobian_cost_series(max_n: int, fixed: int) -> dict[str, dict[str, tuple[list, list]]]:
    """Passes and engine ops for the full Jacobian of tanh(A x) with n (then m) from 1 to ``max_n``.

    Returns ``{"vary_n": {line: (xs, ys)}, "vary_m": {...}}`` with lines for passes and ops of each mode.
    """
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
MEMORY_LINES = ("kept by this engine (measured)", "the notes' rule: 2 buffers per layer",
                "parameters (for comparison)")


def memory_series(depth: int, batch: int, width: int) -> dict[str, dict[str, tuple[list, list]]]:
    """Bytes kept for backward by a ReLU MLP of ``width`` in float32, versus batch (at ``depth``) and
    versus depth (at ``batch``): measured on the engine, the notes' rule and the parameters (the network's input is not counted; see ``explorer.explain.costs``)."""
    out: dict[str, dict[str, tuple[list, list]]] = {}
    # versus depth: the network of x layers is the first x layers of the deepest one (same layers, same
    # seeds, each layer charged what it adds), so one run gives every depth (it was one run per depth)
    full = costs.activation_memory(depth, width, batch)

    def prefix(x: int) -> costs.MemoryReport:
        return costs.MemoryReport(x, full.width, full.batch, full.dtype, full.in_features, full.layers[:x],
                                  full.parameter_bytes // depth * x)  # every layer is width x width + width

    # versus batch: every buffer the graph keeps is one batch x width buffer (as costs.memory_at_scale
    # relies on), so each layer's measured count scales exactly with the batch (one run at width 256 per
    # batch took 2-11 s on a busy machine)
    unit = batch * width * np.dtype(full.dtype).itemsize
    for lay in full.layers:
        if lay.kept_bytes % unit:  # a kept buffer of another shape: the scaling would be wrong
            raise AssertionError(f"layer {lay.layer} kept {lay.kept_bytes} bytes, not whole {unit}-byte buffers")

    def at_batch(b: int) -> costs.MemoryReport:
        return costs.MemoryReport(depth, full.width, b, full.dtype, full.in_features,
                                  [costs.LayerMemory(lay.layer, lay.kept_bytes // batch * b, lay.saved_tensors,
                                                     lay.notes_bytes // batch * b)
                                   for lay in full.layers], full.parameter_bytes)

    for which, xs_all in (("vs_batch", list(BATCHES)),
                          ("vs_depth", list(range(1, depth + 1)))):
        lines: dict[str, tuple[list, list]] = {label: ([], []) for label in MEMORY_LINES}
        for x in xs_all:
            rep = at_batch(x) if which == "vs_batch" else prefix(x)
            for label, v in zip(MEMORY_LINES, (rep.kept_total, rep.notes_total, rep.parameter_bytes)):
                lines[label][0].append(x)
                lines[label][1].append(v)
        out[which] = lines
    return out


def memory_table(depth: int, width: int, batch: int, dtype: str = "float32") -> list[dict]:
    """Memory kept for backward at any size (the notes' exercise 9: 10, 4096, 512), the engine's (measured
    on a small copy of the network and scaled, ``costs.memory_at_scale``) beside the notes' rule."""
    s = costs.memory_at_scale(depth, width, batch, dtype)
    return [{"count": r["count"], "what is kept": r["what is kept"], "tensors saved": r["tensors saved"],
             "buffers of batch × width": r["buffers"], "bytes": count(r['bytes']), "MB": f"{r['MB']:,.1f}",
             "MiB": f"{r['MiB']:,.1f}"} for r in s.rows()]


def memory_sentence(depth: int, width: int, batch: int, dtype: str = "float32") -> tuple[str, str]:
    """The table's reading as (lead, details): the lead sets the notes' 2L − 1 beside the engine's measured count
    of saved tensors (one sentence, for the class); the details say why each layer keeps what it keeps and how the
    engine's count is measured."""
    s = costs.memory_at_scale(depth, width, batch, dtype)
    rule = 2 * s.depth - 1
    verdict = "exactly the rule" if s.engine_saved == rule else f"not the rule's {rule}"
    lead = (f"The notes count 2 tensors per layer minus the network's input: **2L − 1 = {rule}**; this engine's graph "
            f"saves **{s.engine_saved} tensors** ({verdict}), held in {s.engine_buffers} buffers.")
    details = ("Per layer, Linear keeps its input h (for W̄ = hᵀȳ) and ReLU keeps what its mask needs; the bias add "
               f"keeps nothing. {costs.RELU_SAVED} The engine's count is measured on a 4-wide copy of the network "
               "(same depth) and scaled: every buffer it keeps is one batch × width buffer.")
    return lead, details


def jacobian_size_table(width_in: int, width_out: int, batch: int, dtype: str) -> tuple[list[dict], dict]:
    """Rows (what, shape, size) of full Jacobians against a VJP's vector, and the pass counts that
    building the whole-batch Jacobian would take: ``{"forward": B·d_in JVPs, "reverse": B·d_out VJPs}``."""
    j = costs.jacobian_sizes(width_in, width_out, batch, dtype)
    rows = [{"what": r["what"], "shape": r["shape"], "elements": r["elements"], "size": r["size"]} for r in j.rows()]
    return rows, {"forward": j.forward_passes, "reverse": j.reverse_passes}


def _tangent(value) -> str:
    return num(value) if not isinstance(value, list) else short_value(value, 22)


def dual_frames(run: DualRun):
    """Animation frames for a forward-mode run: the inputs with their seed, then one frame per op.

    Same :class:`~explorer.kit.frames.FrameSet` as the reverse-mode frames, so the same renderer
    draws it; a node shows its value and, in the second colour, its tangent ``ẋ3 = 1.5`` (the dual
    number ``v + v̇ε``). Composite ops (tanh, ...) are one node, as in the other views.
    """
    full, box_of, inside = composite_graph(run.graph)
    g = full.without_constants()
    node_ids = [n.id for n in g.nodes]
    index = {nid: i for i, nid in enumerate(node_ids)}
    heads = node_heads(g, full)
    dots = marked_names(run.graph, dot_name)
    dots.update({n.id: dots.get(n.id, dot_name(n.name)) for n in g.nodes})
    out_note = output_alias_note(run.graph, dot_name)
    text = ["" for _ in node_ids]
    tangent = ["" for _ in node_ids]
    state = ["idle" for _ in node_ids]
    frames = []
    leaf_texts = []
    for nid, (val, tan) in run.leaves.items():
        if nid in index:
            n = g.node(nid)
            text[index[nid]] = value_line(val, n.shape)
            tangent[index[nid]] = f"{dots[nid]} = {_tangent(tan)}"
            state[index[nid]] = "leaf" if np.any(np.asarray(tan, dtype=float) != 0) else "computed"
            leaf_texts.append((f"{dots[nid]} = {_tangent(tan)}", f"{n.name} = {short_value(val)} + {short_value(tan)}ε"))
    # step 1 in the lecture's words: the seed, before any op runs
    frames.append(Frame(0, "forward", "Seed the tangents: " + ", ".join(t for t, _ in leaf_texts) + " (the dual numbers "
                        + ", ".join(d for _, d in leaf_texts) + "); no op computed yet", list(run.leaves), [], list(text),
                        list(state), list(tangent)))
    prev = None
    for s in run.steps:
        if s.node in inside or s.node not in index:
            continue
        if prev is not None and state[index[prev]] == "active":
            state[index[prev]] = "complete"
        n = g.node(s.node)
        text[index[s.node]] = value_line(s.value, n.shape)
        tangent[index[s.node]] = f"{dots[s.node]} = {_tangent(s.tangent)}"
        state[index[s.node]] = "active"
        prev = s.node
        parents = [e.src for e in full.edges if e.dst == s.node and e.src in index]
        note = out_note if s.node == run.graph.output else ""
        caption = f"{heads[s.node]} = {short_value(s.value)}, {dots[s.node]} = {_tangent(s.tangent)}{note}"
        frames.append(Frame(len(frames), "forward", caption, [s.node], [(p, s.node) for p in parents],
                            list(text), list(state), list(tangent)))
    if prev is not None:
        state[index[prev]] = "complete"
    out = run.graph.node(run.graph.output).name
    frames.append(Frame(len(frames), "done", f"One forward pass: output {out} = {short_value(run.output_value)}, "
                        f"directional derivative {dots[run.graph.output]} = {_tangent(run.output_tangent)}{out_note}",
                        [], [], list(text),
                        list(state), list(tangent)))
    return FrameSet(node_ids, frames, heads=[heads[i] for i in node_ids], edges=[(e.src, e.dst) for e in g.edges])


# --- the Jacobian, defined where the page first uses it ----------------------------------------------------

# the memory section's words: one lead sentence the class reads, then what the lines are (for whoever looks closer)
MEMORY_LEAD = ("**Reverse mode keeps every value its VJPs will need until the backward pass reaches them: memory grows "
               "with batch × depth.** Forward mode keeps no graph.")
MEMORY_DETAILS = (
    "**kept by this engine (measured)**: every buffer the engine's recorded graph holds for a ReLU MLP in float32 "
    "(its input x not counted);",
    "**the notes' rule**: two batch × width buffers per layer; **parameters**: for comparison;",
    "the most held at once, at the start of the backward pass: `backward()` frees each buffer once the last VJP "
    "that reads it has run (as PyTorch does).",
)


JACOBIAN_DEFINITION = ("For f: Rⁿ → Rᵐ the **Jacobian** J is the m × n matrix of partial derivatives, "
                       "Jᵢⱼ = ∂yᵢ/∂xⱼ: row i is the gradient of output yᵢ, column j is how every output moves with "
                       "input xⱼ. Forward mode computes J·v (one column per pass, v = eⱼ); reverse mode computes "
                       "ūᵀJ (one row per pass, ū = eᵢ): the vector–Jacobian product (VJP).")


# --- the notes' cost table: a gradient costs a small constant number of forward passes --------------------

def pass_costs(depth: int = 4, width: int = 64, batch: int = 32) -> list[dict]:
    """Forward pass alone, forward + backward (every parameter's gradient) and one forward-mode (JVP) pass
    along one direction of the input, of a ReLU MLP, counted on the engine: ops run and matmul multiply-adds,
    as a multiple of the forward pass (the notes: one reverse-mode gradient costs about two forward passes in
    total). Counts, not times: on a shared machine a time ratio says more about the neighbours' load."""
    import engine
    rng = np.random.default_rng(0)
    Ws = [engine.tensor(rng.standard_normal((width, width)) / np.sqrt(width), requires_grad=True)
          for _ in range(depth)]
    x = engine.tensor(rng.standard_normal((batch, width)))

    def net(h, *ws):
        for W in ws:
            h = (h @ W).relu()
        return h.sum()

    def measure(run):
        with engine.recording() as ops:
            run()
        return len(ops), ops.multiply_adds

    def forward():
        with engine.no_grad():
            net(x, *Ws)

    def reverse():
        net(x, *Ws).backward()

    direction = engine.tensor(rng.standard_normal((batch, width)))

    def forward_mode():          # the derivative along one direction of the input: value and tangent together
        engine.jvp(lambda h: net(h, *Ws), [x], [direction])

    rows = []
    base = None
    for what, run in (("forward pass (values only)", forward),
                      ("reverse mode: forward + backward (all gradients)", reverse),
                      ("forward mode: one JVP pass (one direction)", forward_mode)):
        n_ops, macs = measure(run)
        base = base or (n_ops, macs)
        rows.append({"pass": what, "ops run": n_ops, "matmul multiply-adds": count(macs),
                     "× forward (multiply-adds)": fixed(macs / base[1], 2)})
    return rows


PASS_RATIO = "× forward (multiply-adds)"


def pass_ratios(rows: list[dict]) -> tuple[float, float]:
    """(reverse mode's forward + backward, one forward-mode JVP pass), each × the forward pass, as
    :func:`pass_costs`'s table prints them (so that a figure derived from them is the one the table shows)."""
    return float(rows[1][PASS_RATIO]), float(rows[2][PASS_RATIO])


def gradient_cost_rows(rows: list[dict], ns=(1, 2, 10, 100, 1000)) -> list[dict]:
    """The notes' table of what a whole gradient of a scalar loss with n inputs costs, in forward passes: forward
    mode n passes (one JVP pass per input), reverse mode about two in total (the notes' figure,
    ``NOTES['reverse_passes']``), so reverse wins by n/2; beside it the same table from this engine's counts in
    :func:`pass_costs`'s ``rows`` (a JVP pass and a forward + backward, × the forward pass's multiply-adds)."""
    reverse, jvp = pass_ratios(rows)
    two = NOTES["reverse_passes"].value
    return [{"n inputs": n, "the notes: forward mode": n, "the notes: reverse mode": two,
             "the notes: ratio n/2": plain(n / two), "this engine: forward mode": plain(n * jvp),
             "this engine: reverse mode": plain(reverse), "this engine: ratio": num(n * jvp / reverse, 3)}
            for n in ns]


def pass_costs_caption(rows: list[dict]) -> str:
    """The caption under :func:`pass_costs`'s table, its figures read from the table."""
    reverse, jvp = pass_ratios(rows)
    return (f"The backward pass runs two matmuls per layer (x̄ = ȳWᵀ and W̄ = xᵀȳ) against the forward's one; the "
            f"first layer's input is data (no x̄), hence {plain(reverse)} rather than 3 forward passes in total (the notes "
            f"round it to about {NOTES['reverse_passes'].value}). Forward mode carries one tangent beside each value "
            f"(h·W and ḣ·W): {plain(jvp)} per pass, but for one direction only, so a whole gradient takes n of them. "
            "Counts, not times: on a shared server a time ratio measures the neighbours (the checkpointing section "
            "below times its runs in turn to be fair).")


# --- the notes' own case: logistic regression on 8 samples, a whole gradient both ways ---------------------------

LOGREG_SAMPLES = 8                  # the notes' logistic regression: 8 samples
LOGREG_FEATURES = (1, 2, 10, 100, 1000)   # n: the weights, the inputs the gradient is taken with respect to


@dataclass(frozen=True)
class LogregCost:
    """One size n of the notes' logistic regression, its whole gradient ∂loss/∂w computed both ways on the engine."""
    n: int
    forward_macs: int            # the forward pass's matmul multiply-adds (X @ w: 8·n)
    reverse_passes: float        # forward + backward, × the forward pass (multiply-adds)
    forward_passes: float        # n JVP passes (one per weight, along eᵢ), × the forward pass
    jvp_passes: int              # the JVP passes run: n
    gradients_agree: float       # max |reverse gradient − forward-mode gradient|


def logreg_gradient_costs(ns=LOGREG_FEATURES, samples: int = LOGREG_SAMPLES) -> list[LogregCost]:
    """The notes' cost table measured on their own case: the mean binary cross-entropy of logistic regression on
    ``samples`` examples with n features, its gradient with respect to the n weights by reverse mode (one forward
    + backward) and by forward mode (n JVP passes along the unit vectors, one column each), every pass run and its
    matmul multiply-adds counted with ``engine.recording``; the two gradients compared."""
    import engine
    from engine import functional as F
    rng = np.random.default_rng(0)
    out = []
    for n in ns:
        X = engine.tensor(rng.standard_normal((samples, n)))
        y = engine.tensor((rng.random((samples, 1)) < 0.5).astype(float))
        w0 = rng.standard_normal((n, 1)) / np.sqrt(n)

        def loss(w):
            return F.binary_cross_entropy((X @ w).sigmoid(), y)

        def counted(run):
            with engine.recording() as ops:
                result = run()
            return ops.multiply_adds, result

        forward, _ = counted(lambda: loss(engine.tensor(w0)))
        w = engine.tensor(w0, requires_grad=True)
        reverse, _ = counted(lambda: loss(w).backward())
        by_reverse = w.grad.numpy().ravel()

        def forward_mode():
            columns = []
            for i in range(n):
                e = np.zeros((n, 1))
                e[i, 0] = 1.0
                columns.append(float(engine.jvp(loss, [engine.tensor(w0)], [engine.tensor(e)])[1].item()))
            return np.array(columns)

        fwd, by_forward = counted(forward_mode)
        out.append(LogregCost(n, forward, reverse / forward, fwd / forward, n,
                              float(np.abs(by_reverse - by_forward).max())))
    return out


def fixed_logreg_costs() -> list[LogregCost]:
    """:func:`logreg_gradient_costs` at the page's sizes: its fixed figure (``explorer.kit.fixed``)."""
    return logreg_gradient_costs()


def logreg_rows(costs_: list[LogregCost]) -> list[dict]:
    """:func:`logreg_gradient_costs` as the page's table: the notes' figures beside this engine's, in forward passes."""
    two = NOTES["reverse_passes"].value
    return [{"features n": c.n, "forward pass (multiply-adds)": count(c.forward_macs),
             "the notes: reverse mode": two, "this engine: reverse mode": plain(c.reverse_passes),
             "the notes: forward mode": c.n, "this engine: forward mode (n JVP passes)": plain(c.forward_passes),
             "the notes: ratio (n/2)": plain(c.n / two),
             "this engine: ratio": num(c.forward_passes / c.reverse_passes, 3),
             "max |reverse − forward-mode gradient|": sci(c.gradients_agree)} for c in costs_]


def _times_n(r: float) -> str:
    return "n" if r == 1 else f"{plain(r)}·n"


def logreg_caption(costs_: list[LogregCost]) -> str:
    """What the logistic-regression table measured, and how its figures differ from the notes' (Markdown); every
    figure read from ``costs_`` (its largest n)."""
    c = costs_[-1]
    per = c.forward_passes / c.jvp_passes
    return (f"Logistic regression on {LOGREG_SAMPLES} samples, as in the notes: the mean binary cross-entropy of "
            f"sigmoid(X·w), its gradient with respect to the n weights, counted in the forward pass's matmul "
            f"multiply-adds. Reverse mode: one forward and one backward pass, {plain(c.reverse_passes)} forward passes "
            f"(the backward's w̄ = Xᵀ·r costs what the forward's X·w costs; X is data and gets no gradient), the "
            f"notes' {NOTES['reverse_passes'].value}. Forward mode: n JVP passes, one per weight, each run here; "
            f"one costs {plain(per)} forward passes (the value X·w and the tangent X·eᵢ) where the notes count it as one, "
            f"so this engine's ratio is {_times_n(per / c.reverse_passes)} where the notes' is n/2. The last column: the "
            "two gradients, computed both ways, agree.")


# --- activation recomputation (checkpointing), measured ---------------------------------------------------

@dataclass
class PolicyCost:
    """One memory policy of ``engine.checkpoint.run_layers`` measured on a ReLU MLP: what the forward pass
    leaves kept, the peak during forward + backward (both from NumPy's allocations, traced), the time of
    forward + backward, and the layer calls."""

    mode: str
    segment: int | None
    kept_bytes: int            # buffers the recorded graph holds after the forward pass (engine.tensor.kept_bytes)
    peak_bytes: int            # most bytes allocated at once during forward + backward, beyond the inputs
    seconds: float             # best of ``repeats`` forward + backward runs (untraced)
    layer_calls: int
    max_grad_difference: float  # against keep-all's gradients


def _policy_mlp(depth: int, width: int, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [(engine.tensor(rng.standard_normal((width, width)) * math.sqrt(2.0 / width), requires_grad=True),
               engine.tensor(np.zeros(width), requires_grad=True)) for _ in range(depth)]
    x = engine.tensor(rng.standard_normal((batch, width)))
    return params, x


def measure_policy(depth: int, width: int, batch: int, mode: str, every: int | None = None,
                   repeats: int = 3) -> PolicyCost:
    """Run forward + backward of a ``depth``-layer ReLU MLP (float64) under ``mode`` and measure it
    (``repeats`` = 0: no timed runs, ``seconds`` is NaN; see :func:`time_policy`)."""
    params, x = _policy_mlp(depth, width, batch)
    calls: list[int] = []

    def layers():
        return [lambda h, W=W, b=b: (calls.append(1), (h @ W + b).relu())[1] for W, b in params]

    def grads():
        return [p.grad.numpy() for pair in params for p in pair]

    def run():
        for pair in params:
            for p in pair:
                p.grad = None
        return ck.run_layers(layers(), x, mode=mode, every=every)

    out = ck.run_layers(layers(), x)                  # keep-all's gradients, the reference
    out.sum().backward()
    reference = grads()
    best = math.inf if repeats > 0 else math.nan
    for _ in range(repeats):
        t0 = time.perf_counter()
        run().sum().backward()
        best = min(best, time.perf_counter() - t0)
    calls.clear()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = run()
        kept = kept_bytes(out)
        out.sum().backward()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads(), reference))
    segment = ck.sqrt_segment(depth) if mode == "sqrt" else every
    return PolicyCost(mode, segment, kept, peak, best, len(calls), diff)


def time_policy(depth: int, width: int, batch: int, mode: str, every: int | None = None) -> float:
    """Seconds of one untraced forward + backward under ``mode`` (the network of :func:`measure_policy`)."""
    params, x = _policy_mlp(depth, width, batch)
    layers = [lambda h, W=W, b=b: (h @ W + b).relu() for W, b in params]
    t0 = time.perf_counter()
    ck.run_layers(layers, x, mode=mode, every=every).sum().backward()
    return time.perf_counter() - t0


CHECKPOINT_DEPTHS = (4, 9, 16)
CHECKPOINT_MODES = ("keep_all", "sqrt", "recompute_all")
MAX_CHECKPOINT_MACS = 4_000_000_000   # multiply-adds one request may run (a few seconds on a busy core)


def checkpoint_work(width: int, batch: int, depths=CHECKPOINT_DEPTHS, repeats: int = 5) -> int:
    """Multiply-adds :func:`checkpoint_runs` will run, estimated before it runs: per policy and depth, the
    layer calls (``L``, ``2L``, ``L + L(L+1)/2``) × (1 forward + 2 backward matmuls) × batch × width², for the
    reference run, ``repeats`` timed runs and one traced run."""
    calls = sum(L + 2 * L + L + L * (L + 1) // 2 for L in depths)   # keep-all, every √L, recompute-all
    return calls * 3 * batch * width * width * (repeats + 2)


def checkpoint_runs(width: int, batch: int, depths=CHECKPOINT_DEPTHS, repeats: int = 5):
    """Each policy (keep all, a checkpoint every √L layers, recompute all) measured at each depth on a ReLU
    MLP (float64): ``(series, rows)`` with series ``policy -> (ms, peak MB)`` over the depths for the plot and
    one table row per policy and depth. Time is the best of ``repeats`` rounds, each round timing every policy
    and depth once in turn, so a burst of load on the machine hits them alike.

    Raises:
        RequestRefused: the estimated work exceeds :data:`MAX_CHECKPOINT_MACS`.
    """
    from .kit.budget import RequestRefused
    work = checkpoint_work(width, batch, depths, repeats)
    if work > MAX_CHECKPOINT_MACS:
        raise RequestRefused(f"measuring every policy at width {width}, batch {batch} would run {count(work)} "
                             f"multiply-adds, more than this page's {count(MAX_CHECKPOINT_MACS)}; choose a smaller size")
    series: dict[str, tuple[list, list]] = {}
    rows = []
    cases = [(mode, L) for mode in CHECKPOINT_MODES for L in depths]
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(max(1, repeats)):
        for mode, L in cases:
            best[mode, L] = min(best[mode, L], time_policy(L, width, batch, mode))
    for mode, L in cases:
        c = measure_policy(L, width, batch, mode, repeats=0)
        c.seconds = best[mode, L]
        xs, ys = series.setdefault(_policy_name(mode), ([], []))
        xs.append(round(c.seconds * 1e3, 3))
        ys.append(round(c.peak_bytes / 1e6, 3))
        rows.append({"policy": _policy_name(mode), "layers L": L,
                     "segment (layers)": {"keep_all": "—", "recompute_all": "1 (from the input)"}.get(
                         mode, str(c.segment)),
                     "kept after forward (MB)": megabytes(c.kept_bytes, 2),
                     "peak during forward + backward (MB)": megabytes(c.peak_bytes, 2),
                     "layer calls": c.layer_calls, "time (ms)": milliseconds(c.seconds),
                     "max |Δ gradient| vs keep all": sci(c.max_grad_difference)})
    return series, rows


def _policy_name(mode: str) -> str:
    return {"keep_all": "keep all", "sqrt": "checkpoint every √L", "recompute_all": "recompute all"}[mode]


# --- gradient accumulation on purpose: micro-batches --------------------------------------------------------

def micro_batch_rows(batch: int = 64, width: int = 32, depth: int = 3, splits=(1, 2, 4, 8)) -> list[dict]:
    """One optimizer step's gradient from ``k`` micro-batches whose backward passes accumulate into ``.grad``
    (each loss the micro-batch mean scaled by 1/k), against the full batch's: same gradient, 1/k of the kept
    memory per backward. The effective batch size stays ``batch``."""
    import engine
    from engine.tensor import kept_bytes
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(depth)]
    X, Y = rng.standard_normal((batch, width)), rng.standard_normal((batch, width))
    rows, reference = [], None
    for k in splits:
        if batch % k:
            continue
        params = [engine.tensor(W, requires_grad=True) for W in Ws]
        size = batch // k
        kept = 0
        for i in range(k):
            h = engine.tensor(X[i * size:(i + 1) * size])
            for W in params:
                h = (h @ W).relu()
            loss = ((h - engine.tensor(Y[i * size:(i + 1) * size])) ** 2).mean() * (1.0 / k)
            kept = max(kept, kept_bytes(loss))
            loss.backward()       # no zero_grad between micro-batches: .grad sums them, on purpose
        grads = [p.grad.numpy() for p in params]
        reference = reference or grads
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads, reference))
        rows.append({"micro-batches k": k, "micro-batch size": size, "effective batch": size * k,
                     "backward calls before the step": k, "kept per backward (KB)": fixed(kept / 1e3),
                     "max |Δ gradient| vs one batch": sci(diff)})
    return rows


@dataclass(frozen=True)
class HW2Kept:
    """What the HW2 network's graph keeps for backward, read from the graph (``rows``), and the count the
    notes' rule predicts for its activations (``rule`` = 2L − 1 for its ``layers`` Linear layers)."""
    batch: int
    layers: int
    rule: int
    activations: int
    activation_bytes: int
    rows: list[dict]

    @property
    def sentence(self) -> str:
        verdict = "equal to the rule" if self.activations == self.rule else f"not the rule's {self.rule}"
        return (f"HW2's network has L = {self.layers} Linear layers, so the notes' rule predicts "
                f"**2L − 1 = {self.rule}** activations kept for backward. Its real graph (training mode, batch "
                f"{self.batch}, float64 as the trainer runs it) keeps **{self.activations} activations**: {verdict} "
                f"({count(self.activation_bytes)} bytes). The other rows are not activations: the network's input "
                "(the rule's 'minus the input'), the weights (they exist anyway), dropout's mask and the labels "
                "(the means keep nothing: their VJP needs only the shape).")


def hw2_kept_for_backward(batch: int = 10, seed: int = 0) -> HW2Kept:
    """Build HW2's network (:class:`sentiment.model.SentimentNet`: Linear(50, 32) → ReLU → Dropout(0.5) →
    Linear(32, 1) → sigmoid → BCE) on ``batch`` random sentence vectors, and read every tensor its graph
    keeps for backward (``engine.tensor.saved_for_backward``), each once, with the stages that keep it.

    Raises:
        ValueError: ``batch`` not a positive integer or over 10,000.
    """
    from contextlib import contextmanager

    from engine import tensor
    from engine.nn import Linear
    from engine.tensor import next_unique_id, saved_for_backward
    from sentiment.model import SentimentNet

    if not 1 <= int(batch) <= 10_000:
        raise ValueError(f"batch must be between 1 and 10,000, got {batch}")
    starts: list[tuple[int, str]] = []

    @contextmanager
    def scope(name: str):
        starts.append((next_unique_id(), name))
        yield

    def stage(t) -> str:
        return next((name for start, name in reversed(starts) if t.unique_id > start), "input")

    rng = np.random.default_rng(seed)
    net = SentimentNet(seed=seed)
    net.train()
    x = tensor(rng.normal(size=(int(batch), net.embedding_dim)), name="sentence vectors")
    labels = tensor((rng.random(int(batch)) < 0.5).astype(np.float64), name="labels")
    loss, _ = net.loss_of_pooled(x, labels, scope=scope)

    keepers: dict[int, tuple[object, list[str]]] = {}
    for node, saved in saved_for_backward(loss):
        kept = keepers.setdefault(saved.unique_id, (saved, []))
        if stage(node) not in kept[1]:
            kept[1].append(stage(node))

    def is_parameter(t) -> bool:
        while t.op is not None and t.op.name in ("permute", "reshape", "expand", "view"):
            t = t.inputs[0]
        return t.op is None and t.requires_grad

    rows, activations, act_bytes = [], 0, 0
    for saved, by in keepers.values():
        nbytes = int(saved.numpy().nbytes)
        if saved is x:
            what, desc = "network input (sentence vectors)", "x"
        elif saved is labels:
            what, desc = "labels (data)", "labels"
        elif is_parameter(saved):
            what, desc = "parameter", f"weight of {', '.join(sorted(by))}"   # the Linear that reads it
        elif saved.ndim == 0:
            what, desc = "scalar", f"scalars of {stage(saved)}"
        elif saved.op is None:
            what = "dropout's mask" if stage(saved) == "Dropout" else "constant"
            desc = ("mask" if what == "dropout's mask" else "constant") + f" drawn by {stage(saved)}"
        else:
            op_name = saved.op.name
            desc = f"output of {stage(saved)}" + ("" if op_name == stage(saved).lower() else f" ({op_name})")
            what = "activation"
        counted = what == "activation"
        if counted:
            activations += 1
            act_bytes += nbytes
        row = {"tensor": desc, "shape": "×".join(map(str, saved.shape)) or "scalar", "dtype": saved.dtype.name,
               "kept by": ", ".join(sorted(by)), "what": what, "counted by the rule": "yes" if counted else "no",
               "bytes": nbytes}
        same = next((r for r in rows if all(r[k] == row[k] for k in row if k not in ("bytes", "count"))), None)
        if same is None:  # several tensors alike (scalar constants, say): one row with their count
            rows.append({"count": 1, **row})
        else:
            same["count"] += 1
            same["bytes"] += nbytes
    rows.sort(key=lambda r: (r["counted by the rule"] != "yes", r["what"], r["tensor"]))
    layers = sum(isinstance(m, Linear) for m in net.modules())
    return HW2Kept(int(batch), layers, 2 * layers - 1, activations, act_bytes, rows)


def fixed_pass_costs() -> list[dict]:
    """:func:`pass_costs` of the page's MLP (4 layers, width 256, batch 128): its fixed figure
    (``explorer.kit.fixed``), computed once per server process in the background."""
    return pass_costs(depth=4, width=256, batch=128)
