"""A recording as the explain layer's data: Graph + Trace, then its layout, frames and figure.

The explain layer (``engine.explain``) owns layout, frames, DOT and the Plotly figure. Here the
tensor-level recording is only *translated* into its plain data (``Graph``, ``ForwardStep``,
``BackwardEvent``), for two views over the same frame indices:

* op view: one node per primitive (scalar constants folded away);
* layer view: one box per layer (``collapse_groups``), leaves that take a gradient kept apart.

Frame ``k`` is the same moment of the execution in both views, so switching keeps the step.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.explain.frames import FrameSet, build_frames
from engine.explain.graph import Graph, GraphEdge, GraphNode, fmt, plain_value
from engine.explain.layout import collapse_groups, layout
from engine.explain.trace import BackwardEvent, ForwardStep, Trace, bar

from .analysis import format_shape
from .recording import Recording

LAYER_VIEW_THRESHOLD = 300   # op nodes above which the page opens in layer view


def _name(rec: Recording, nid: int) -> str:
    n = rec.node(nid)
    return f"{n.label} {format_shape(n.shape)}"


def _kind(rec: Recording, nid: int) -> str:
    n = rec.node(nid)
    if n.kind in ("param", "input") and n.requires_grad:
        return "input"
    if n.kind == "op" and n.requires_grad:
        return "op"
    return "constant"


def to_graph(rec: Recording) -> Graph:
    """Every recorded tensor except scalar constants (the slides fold numbers into the op)."""
    keep = [n for n in rec.nodes if not (n.kind == "constant" and n.op == "constant")]
    kept = {n.id for n in keep}
    nodes = [GraphNode(n.id, _name(rec, n.id), n.op if n.kind == "op" else "leaf", _kind(rec, n.id),
                       list(n.shape), plain_value(n.value), n.layer,
                       f"{n.label} = {n.op}({', '.join(rec.node(p).label for p in n.parents)})"
                       if n.kind == "op" else n.label)
             for n in keep]
    edges = [GraphEdge(p, n.id, k) for n in keep for k, p in enumerate(n.parents) if p in kept]
    return Graph(nodes, edges, rec.loss_node)


def to_trace(rec: Recording, graph: Graph) -> Trace:
    """The recording's forward op list and backward events as the explain layer's ``Trace``."""
    forward = []
    for i, nid in enumerate(rec.forward_order):
        n = rec.node(nid)
        args = ", ".join(rec.node(p).label for p in n.parents)
        forward.append(ForwardStep(i, nid, n.op, list(n.parents), plain_value(n.value), list(n.shape),
                                   f"{n.label} = {n.op}({args}) → {format_shape(n.shape)}"))
    events: list[BackwardEvent] = []

    def add(kind, step, node, parent, value, received, expected, text):
        events.append(BackwardEvent(len(events), kind, step, node, parent, plain_value(value), received,
                                    expected, text))

    grads = {}
    for s in rec.backward:
        name = _name(rec, s.node)
        add("visit", s.index, s.node, None, s.adjoint, None, None,
            f"take {name}: adjoint {bar(rec.node(s.node).label)} = {fmt(plain_value(s.adjoint))}")
        for c in s.contributions:
            add("send", s.index, s.node, c.target, c.value, None, None,
                f"{rec.node(s.node).label} → {rec.node(c.target).label}: VJP contribution "
                f"{format_shape(c.value.shape)}")
            add("accumulate", s.index, c.target, None, c.total, c.received, c.expected,
                f"{bar(rec.node(c.target).label)} ({c.received} of {c.expected} received)")
        if s.leaf_grad is not None:
            grads[rec.node(s.node).label] = plain_value(s.leaf_grad)
            add("leaf", s.index, s.node, None, s.leaf_grad, None, None,
                f"{rec.node(s.node).label}.grad += {format_shape(s.leaf_grad.shape)}")
    return Trace("topological", graph, forward, events, grads,
                 {s.node: plain_value(s.adjoint) for s in rec.backward},
                 sum(1 for s in rec.backward if s.leaf_grad is None), 0, len(forward), len(events))


@dataclass
class NetworkView:
    """A drawn view: graph, node positions and frames (aligned with every other view's frames)."""

    level: str                       # "op" | "layer"
    graph: Graph
    positions: dict[int, tuple[float, float]]
    frames: FrameSet
    box_of: dict[int, int]           # recording node id -> node id in this view's graph


def frame_moment(rec: Recording, frame: int) -> tuple[str, int | None]:
    """What frame ``frame`` shows: ("inputs", None), ("forward", op index), ("backward", step), ("done", None)."""
    f = len(rec.forward_order)
    b = len(rec.backward)
    if frame <= 0:
        return "inputs", None
    if frame <= f:
        return "forward", frame - 1
    if frame <= f + b:
        return "backward", frame - f - 1
    return "done", None


def n_frames(rec: Recording) -> int:
    return len(rec.forward_order) + len(rec.backward) + 2


def build_view(rec: Recording, level: str = "op") -> NetworkView:
    """Layout and frames for the op view or the collapsed layer view.

    Raises:
        ValueError: unknown level.
    """
    graph = to_graph(rec)
    if level == "op":
        box_of = {n.id: n.id for n in graph.nodes}
        view_graph = graph
        trace = to_trace(rec, graph)
    elif level == "layer":
        def group_of(n: GraphNode):
            return None if n.kind == "input" else n.group
        view_graph = collapse_groups(graph, group_of, max_nodes=0)
        box_by_group = {n.group: n.id for n in view_graph.nodes if n.kind == "group"}
        box_of = {n.id: (box_by_group[n.group] if group_of(n) is not None else n.id) for n in graph.nodes}
        for n in view_graph.nodes:
            if n.kind == "group":
                out = rec.layers[[layer.name for layer in rec.layers].index(n.group)].output
                n.name = f"{n.group} {format_shape(rec.node(out).shape)}"
                n.expr = f"{n.group}: {n.count} ops"
        trace = _remap(to_trace(rec, graph), box_of, view_graph)
    else:
        raise ValueError(f"level must be 'op' or 'layer', got {level!r}")
    positions = layout(view_graph)
    frames = build_frames(trace, view_graph)
    if level == "layer":
        _layer_texts(rec, view_graph, frames)
    return NetworkView(level, view_graph, positions, frames, box_of)


def _layer_texts(rec: Recording, graph: Graph, frames: FrameSet) -> None:
    """A layer box shows its *output's* value and adjoint (not whichever member moved last)."""
    fw_pos = {nid: i for i, nid in enumerate(rec.forward_order)}
    bw_pos = {s.node: s.index for s in rec.backward}
    out_of = {layer.name: layer.output for layer in rec.layers}
    slots = [(frames.node_ids.index(n.id), n, out_of[n.group]) for n in graph.nodes if n.kind == "group"]
    for k, frame in enumerate(frames.frames):
        phase, i = frame_moment(rec, k)
        for slot, box, out in slots:
            node = rec.node(out)
            lines = [box.name]
            if phase in ("backward", "done") or (phase == "forward" and fw_pos.get(out, len(fw_pos)) <= i):
                lines.append(f"= {fmt(plain_value(node.value))}")
            if (phase == "backward" and bw_pos.get(out, len(rec.backward)) <= i) or \
                    (phase == "done" and out in bw_pos):
                lines.append(f"adjoint = {fmt(plain_value(node.adjoint))}")
            frame.node_text[slot] = "\n".join(lines)


def _remap(trace: Trace, box_of: dict[int, int], graph: Graph) -> Trace:
    """The same events with member nodes replaced by their layer box (edges inside a box dropped)."""
    fwd = [ForwardStep(s.index, box_of.get(s.node, s.node), s.op,
                       [box_of.get(p, p) for p in s.inputs if box_of.get(p, p) != box_of.get(s.node, s.node)],
                       s.value, s.shape, s.text) for s in trace.forward]
    bwd = []
    for e in trace.backward:
        node = box_of.get(e.node, e.node)
        parent = None if e.parent is None else box_of.get(e.parent, e.parent)
        bwd.append(BackwardEvent(e.index, e.kind, e.step, node, parent, e.value, e.received, e.expected, e.text))
    return Trace(trace.strategy, graph, fwd, bwd, trace.grads, {}, trace.vjp_calls, trace.backward_ops,
                 trace.forward_ops, trace.n_events)


def default_level(rec: Recording) -> str:
    """Layer view for big networks (many primitives), op view otherwise."""
    return "layer" if len(rec.forward_order) > LAYER_VIEW_THRESHOLD else "op"
