"""A recording as the explain layer's data (``Graph`` + ``Trace``), then its layout, frames and figure.

The page kit (``explorer.kit``: layout, frames, Plotly figure) draws every graph of the app; here the
tensor-level recording becomes its ``Graph`` (the backward events already are ``explorer.explain``'s
``BackwardEvent``), for two views over the same frame indices:

* op view: one node per primitive (scalar constants folded away);
* layer view: one box per layer (``collapse_groups``), leaves that take a gradient kept apart.

Frame ``k`` is the same moment of the execution in both views, so switching keeps the step.
"""
from __future__ import annotations

from dataclasses import dataclass

from explorer.kit.frames import MAX_FRAMES, FrameSet, build_frames
from explorer.explain.graph import Graph, GraphEdge, GraphNode, plain_value
from explorer.kit.labels import formula, heading, num, shape_text
from explorer.kit.layout import collapse_groups
from explorer.kit.plotly_figure import Drawing, plan
from explorer.explain.trace import BackwardEvent, ForwardStep, Trace

from .analysis import format_shape
from .recording import Recording

LAYER_VIEW_THRESHOLD = 300   # op nodes above which the page opens in layer view
VIEW_WIDTH = 940             # px: the graph spans the main column of a 1400 px window
#: presentation mode: the graph's share of the page's width, the current op beside it (at 0.62 HW2's second Linear
#: and its three inputs, the dropout's wide box among them, were 17 px wider than the op view's window; drawn at the
#: small projector's text floor, the op view's window needs 0.74 of the page to hold them)
PRESENT_GRAPH_SHARE = 0.74
# on a projector the backward graph's legend stands on a line over it: the graph is that many px shorter
PRESENT_LEGEND_PX = 40


def _name(rec: Recording, nid: int) -> str:
    return rec.node(nid).label


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
    """The recording's forward op list and its backward trace (``rec.events``) as a ``Trace``."""
    forward = []
    for i, nid in enumerate(rec.forward_order):
        n = rec.node(nid)
        args = ", ".join(rec.node(p).label for p in n.parents)
        forward.append(ForwardStep(i, nid, n.op, list(n.parents), None, list(n.shape),
                                   f"{n.label} = {n.op}({args}) → {format_shape(n.shape)}"))
    grads = {rec.node(s.node).label: plain_value(s.leaf_grad) for s in rec.backward if s.leaf_grad is not None}
    return Trace("topological", graph, forward, list(rec.events), grads, {},
                 sum(1 for s in rec.backward if s.leaf_grad is None), 0, len(forward), len(rec.events))


@dataclass
class NetworkView:
    """A drawn view: graph, its drawing (boxes, curves, scale) and frames (aligned with every other
    view's frames)."""

    level: str                       # "op" | "layer"
    graph: Graph
    drawing: Drawing
    frames: FrameSet
    box_of: dict[int, int]           # recording node id -> node id in this view's graph


def frame_span(rec: Recording, frame: int, per_f: int = 1, per_b: int = 1) -> tuple[str, int | None, int | None]:
    """Which part of the execution frame ``frame`` shows: (phase, start, stop) over the forward op
    list or the backward steps. Big networks share a frame between ``per_f`` forward ops /
    ``per_b`` backward steps (the explain layer merges frames above its ``MAX_FRAMES``)."""
    f, b = len(rec.forward_order), len(rec.backward)
    nf, nb = -(-f // per_f), -(-b // per_b)
    if frame <= 0:
        return "inputs", None, None
    if frame <= nf:
        j = frame - 1
        return "forward", j * per_f, min(f, (j + 1) * per_f)
    if frame <= nf + nb:
        j = frame - nf - 1
        return "backward", j * per_b, min(b, (j + 1) * per_b)
    return "done", None, None


def frame_moment(rec: Recording, frame: int, per_f: int = 1, per_b: int = 1) -> tuple[str, int | None]:
    """What frame ``frame`` shows: ("inputs", None), ("forward", op index), ("backward", step), ("done", None).

    When frames are merged, the index is the last op / step of the frame."""
    phase, start, stop = frame_span(rec, frame, per_f, per_b)
    return phase, (stop - 1 if stop is not None else None)


def n_frames(rec: Recording, per_f: int = 1, per_b: int = 1) -> int:
    return -(-len(rec.forward_order) // per_f) + -(-len(rec.backward) // per_b) + 2


def _heads(rec: Recording, graph: Graph) -> dict[int, str]:
    """``mul#5 = sum#3·0.2`` for an op (its parents by label, numbers as literals); a layer box reads
    its layer's name."""
    out = {}
    for n in graph.nodes:
        if n.kind == "group":
            out[n.id] = n.name
        elif n.op == "leaf":
            out[n.id] = n.name
        else:
            node = rec.node(n.id)
            out[n.id] = heading(n.name, node.composite_call or
                                formula(node.op, [_literal(rec.node(p).label) for p in node.parents]))
    return out


def _literal(label: str) -> str:
    """A number's label in the app's one precision (0.254439 -> 0.25444); other labels as they are."""
    try:
        return num(float(label))
    except ValueError:
        return label


def build_view(rec: Recording, level: str = "op", max_frames: int = MAX_FRAMES,
               width: int = VIEW_WIDTH) -> NetworkView:
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
        def group_of(n: GraphNode):   # leaves taking a gradient and the data input x stand outside the boxes
            return None if n.kind == "input" or (n.op == "leaf" and n.name == "x") else n.group
        view_graph = collapse_groups(graph, group_of, max_nodes=0)
        box_by_group = {n.group: n.id for n in view_graph.nodes if n.kind == "group"}
        box_of = {n.id: (box_by_group[n.group] if group_of(n) is not None else n.id) for n in graph.nodes}
        for n in view_graph.nodes:
            if n.kind == "group":
                n.name = n.group
                n.expr = f"{n.group}: {n.count} ops"
        trace = _remap(to_trace(rec, graph), box_of, view_graph)
    else:
        raise ValueError(f"level must be 'op' or 'layer', got {level!r}")
    frames = build_frames(trace, view_graph, max_frames=max_frames, heads=_heads(rec, view_graph))
    if level == "layer":
        _layer_texts(rec, view_graph, frames)
    group_ids = {n.id for n in view_graph.nodes if n.kind == "group"}
    _op_texts(rec, frames, [(slot, nid) for slot, nid in enumerate(frames.node_ids) if nid not in group_ids])
    drawing = plan(frames, view_graph, width, rankdir="BT" if level == "layer" else "auto", edge_labels=False)
    return NetworkView(level, view_graph, drawing, frames, box_of)


def _op_texts(rec: Recording, frames: FrameSet, slots: list[tuple[int, int]]) -> None:
    """Node lines: the output shape once computed, then (second colour) where its adjoint stands
    (k of n contributions received, ✓ when processed). Values are in the page's panels.

    Built incrementally frame by frame (O(frames x nodes) list copies)."""
    slot_of = {nid: slot for slot, nid in slots}
    shape = {nid: shape_text(rec.node(nid).shape) for _, nid in slots}
    texts = list(frames.frames[0].node_text) if frames.frames else []
    adjoints = ["" for _ in texts]
    for nid in slot_of:
        texts[slot_of[nid]] = "" if rec.node(nid).kind == "op" else shape[nid]
    received: dict[int, int] = {}
    others = [i for i in range(len(texts)) if frames.node_ids[i] not in slot_of]   # layer boxes
    per = (frames.forward_per_frame, frames.backward_per_frame)
    for k, frame in enumerate(frames.frames):
        phase, start, stop = frame_span(rec, k, *per)
        for nid in rec.forward_order[start:stop] if phase == "forward" else ():
            if nid in slot_of:
                texts[slot_of[nid]] = shape[nid]
        for s in rec.backward[start:stop] if phase == "backward" else ():
            for c in s.contributions:
                received[c.target] = received.get(c.target, 0) + 1
                if c.target in slot_of:
                    adjoints[slot_of[c.target]] = f"adjoint {received[c.target]} of {c.expected}"
            if s.node in slot_of:
                adjoints[slot_of[s.node]] = "gradient ✓" if s.leaf_grad is not None else "adjoint ✓"
        row, arow = list(texts), list(adjoints)
        for j in others:
            row[j] = frame.node_text[j]
            arow[j] = frame.node_adjoint[j] if frame.node_adjoint else ""
        frame.node_text = row
        frame.node_adjoint = arow


def _layer_texts(rec: Recording, graph: Graph, frames: FrameSet) -> None:
    """A layer box shows its *output's* shape once computed, then whether that output's adjoint is
    complete (not whichever member moved last). Values are drawn in the page's panels."""
    fw_pos = {nid: i for i, nid in enumerate(rec.forward_order)}
    bw_pos = {s.node: s.index for s in rec.backward}
    out_of = {layer.name: layer.output for layer in rec.layers}
    slot_of = {nid: i for i, nid in enumerate(frames.node_ids)}
    boxes = []
    for n in graph.nodes:
        if n.kind != "group":
            continue
        node = rec.node(out_of[n.group])
        boxes.append((slot_of[n.id], fw_pos.get(node.id, len(fw_pos)), bw_pos.get(node.id),
                      shape_text(node.shape)))
    per = (frames.forward_per_frame, frames.backward_per_frame)
    for k, frame in enumerate(frames.frames):
        phase, i = frame_moment(rec, k, *per)
        if not frame.node_adjoint:
            frame.node_adjoint = ["" for _ in frame.node_text]
        for slot, fw, bw, shape in boxes:
            computed = phase in ("backward", "done") or (phase == "forward" and fw <= i)
            visited = bw is not None and (phase == "done" or (phase == "backward" and bw <= i))
            frame.node_text[slot] = shape if computed else ""
            frame.node_adjoint[slot] = "adjoint ✓" if visited else ""


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
