"""Forward vs reverse (page 4): dual numbers through the graph, Jacobian costs, memory kept for backward.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import explain as ex
from engine.explain import ExpressionError, costs
from engine.explain.costs import MAX_SCALE_DEPTH, RELU_SAVED  # noqa: F401 - the page shows them
from engine.explain.dual import DualRun, dual_number_steps, network_jacobian_costs

from .kit.budget import check_program
from .kit.formatting import fmt_value
from .kit.frames import Frame, FrameSet, node_heads, value_line
from .kit.labels import dot_name, num, short_value
from .kit.layout import composite_graph
from .kit.plotly_figure import figure_dict
from .kit.programs import InputProblem, parse

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
    table = [{"node": run.graph.nodes[s.node].name, "computes": s.text.split(" = ")[1] if " = " in s.text else s.op,
              "value": fmt_value(s.value), f"tangent d·/d{seed}": fmt_value(s.tangent)} for s in run.steps]
    return DualModel(program, inputs, run, frameset, figure, reverse.grads, table)


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
                "strict minimum: ReLU output shared", "parameters (for comparison)")


def memory_series(depth: int, batch: int, width: int) -> dict[str, dict[str, tuple[list, list]]]:
    """Bytes kept for backward by a ReLU MLP of ``width`` in float32, versus batch (at ``depth``) and
    versus depth (at ``batch``): measured on the engine, the notes' rule, the strict minimum, and
    the parameters (the network's input is not counted; see ``engine.explain.costs``)."""
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
                                  [costs.LayerMemory(lay.layer, lay.kept_bytes // batch * b,
                                                     lay.minimum_bytes // batch * b, lay.notes_bytes // batch * b)
                                   for lay in full.layers], full.parameter_bytes)

    for which, xs_all in (("vs_batch", list(BATCHES)),
                          ("vs_depth", list(range(1, depth + 1)))):
        lines: dict[str, tuple[list, list]] = {label: ([], []) for label in MEMORY_LINES}
        for x in xs_all:
            rep = at_batch(x) if which == "vs_batch" else prefix(x)
            for label, v in zip(MEMORY_LINES, (rep.kept_total, rep.notes_total, rep.minimum_total,
                                               rep.parameter_bytes)):
                lines[label][0].append(x)
                lines[label][1].append(v)
        out[which] = lines
    return out


def memory_table(depth: int, width: int, batch: int, dtype: str = "float32") -> list[dict]:
    """The three counts of memory kept for backward at any size (the notes' exercise 9: 10, 4096, 512),
    from the engine measured on a small copy of the network and scaled (``costs.memory_at_scale``)."""
    s = costs.memory_at_scale(depth, width, batch, dtype)
    return [{"count": r["count"], "what is kept": r["what is kept"], "buffers of batch × width": r["buffers"],
             "bytes": f"{r['bytes']:,}", "MB": f"{r['MB']:,.1f}", "MiB": f"{r['MiB']:,.1f}"} for r in s.rows()]


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
    text = ["" for _ in node_ids]
    tangent = ["" for _ in node_ids]
    state = ["idle" for _ in node_ids]
    frames = []
    leaf_texts = []
    for nid, (val, tan) in run.leaves.items():
        if nid in index:
            n = g.node(nid)
            text[index[nid]] = value_line(val, n.shape)
            tangent[index[nid]] = f"{dot_name(n.name)} = {_tangent(tan)}"
            state[index[nid]] = "leaf" if np.any(np.asarray(tan, dtype=float) != 0) else "computed"
            leaf_texts.append(f"{n.name} = {short_value(val)} + {short_value(tan)}ε")
    frames.append(Frame(0, "forward", "Seed: " + ", ".join(leaf_texts), list(run.leaves), [], list(text),
                        list(state), list(tangent)))
    prev = None
    for s in run.steps:
        if s.node in inside or s.node not in index:
            continue
        if prev is not None and state[index[prev]] == "active":
            state[index[prev]] = "complete"
        n = g.node(s.node)
        text[index[s.node]] = value_line(s.value, n.shape)
        tangent[index[s.node]] = f"{dot_name(n.name)} = {_tangent(s.tangent)}"
        state[index[s.node]] = "active"
        prev = s.node
        parents = [e.src for e in full.edges if e.dst == s.node and e.src in index]
        caption = f"{heads[s.node]} = {short_value(s.value)}, {dot_name(n.name)} = {_tangent(s.tangent)}"
        frames.append(Frame(len(frames), "forward", caption, [s.node], [(p, s.node) for p in parents],
                            list(text), list(state), list(tangent)))
    if prev is not None:
        state[index[prev]] = "complete"
    frames.append(Frame(len(frames), "done", f"One forward pass: output {short_value(run.output_value)}, "
                        f"directional derivative {short_value(run.output_tangent)}", [], [], list(text),
                        list(state), list(tangent)))
    return FrameSet(node_ids, frames, heads=[heads[i] for i in node_ids], edges=[(e.src, e.dst) for e in g.edges])
