"""The network's backward pass as the slides draw it: its own graph, edges reversed, adjoints named with bars.

The kit's :func:`explorer.kit.backward_view.backward_frameset` mirrors a view's frames (same node ids and frame
indices, every edge reversed, each node headed by its adjoint's name, ``x̄``, ``f̄c1.weight``); the text in the
nodes and on the edges is written here from the recording, because the network's values are tensors: a node's
adjoint in numbers (a one-element tensor's value, a larger one's norm ‖·‖), and where a node fans out, its sum as
the slides write it, symbolically (``h̄ = ā·∂a/∂h + b̄·∂b/∂h``: one term per consumer, in the order the
contributions arrived) and then in numbers; each reversed edge carries the contribution it sent. Nothing is recomputed: every number is the recording's.
"""
from __future__ import annotations

from explorer.explain.graph import bar, lecture_names
from explorer.kit.backward_view import backward_frameset
from explorer.kit.frames import FrameSet
from explorer.kit.labels import num

from . import analysis
from .frames import NetworkView, frame_span
from .recording import Recording

#: the rankdir of a view's backward graph: the mirror of the forward one (the loss's adjoint where the loss is)
BACKWARD_RANKDIR = {"op": "auto-reversed", "layer": "TB"}


def amount(value) -> str:
    """A contribution or an adjoint in numbers: a one-element tensor's value, a larger one's norm (``‖·‖ 0.31``)."""
    lk = analysis.look(value)
    if lk is None:
        return "?"
    size = 1
    for d in lk.shape:
        size *= int(d)
    if size == 1 and lk.matrix is not None:
        return num(float(lk.matrix.ravel()[0]))
    return f"‖·‖ {num(lk.stats['norm'])}"


def _adjoint_node(rec: Recording, view: NetworkView, nid: int) -> int:
    """The recording's node whose adjoint a view node shows: itself, or a layer box's output."""
    if view.level == "layer":
        group = next((n.group for n in view.graph.nodes if n.id == nid and n.kind == "group"), None)
        if group is not None:
            return next(layer.output for layer in rec.layers if layer.name == group)
    return nid


def backward_frames(rec: Recording, view: NetworkView) -> FrameSet:
    """The backward graph's frames for ``view`` (aligned with its forward frames): reversed edges, adjoint names
    with bars, each node's adjoint as the slides write it (symbols, then numbers), each edge's contribution."""
    bfs = backward_frameset(view.frames, view.graph)
    names = lecture_names(view.graph)
    # a constant (the labels, a dropout mask) takes no gradient: it keeps its own name, drawn dotted, never an adjoint
    constant = {n.id for n in view.graph.nodes if n.kind == "constant"}
    bfs.heads = [names.get(nid, h) if nid in constant else h for nid, h in zip(bfs.node_ids, bfs.heads)]
    box_of = view.box_of
    slot_of = {nid: i for i, nid in enumerate(bfs.node_ids)}
    # the forward edges (parent, consumer) of the view; bfs.edges are these reversed, in the same order
    edge_of = {(dst, src): k for k, (src, dst) in enumerate(view.frames.edges or [])} if view.frames.edges else \
        {(e.dst, e.src): k for k, e in enumerate(view.graph.edges)}
    seed_step = next((s.index for s in rec.backward if s.node == rec.loss_node), None)
    # per view node: the contributions its adjoint sums (from consumers outside its own box), arrival order
    arrivals: dict[int, list] = {}
    for nid in bfs.node_ids:
        target = _adjoint_node(rec, view, nid)
        arrivals[nid] = [c for c in rec.contributions_to(target) if box_of.get(c.source, c.source) != nid]
    per = (view.frames.forward_per_frame, view.frames.backward_per_frame)
    for k, frame in enumerate(bfs.frames):
        phase, _start, stop = frame_span(rec, k, *per)
        last = (len(rec.backward) - 1 if phase == "done" else stop - 1 if phase == "backward" else -1)
        text = [""] * len(bfs.node_ids)
        totals = [""] * len(bfs.node_ids)
        edge_text = [""] * len(bfs.edges)
        for nid, parts in arrivals.items():
            i = slot_of[nid]
            x = names.get(nid, str(nid))
            if nid == box_of.get(rec.loss_node, rec.loss_node) and not parts:
                if seed_step is not None and seed_step <= last:
                    text[i] = "= 1 (the seed)"
                continue
            got = [c for c in parts if c.step <= last]
            if not got:
                continue
            # one term per consumer box: in the layer view a layer may read its input with several of its ops
            # (cross-entropy reads the logits twice), which is one edge of the drawing, not a fan-out
            boxes = list(dict.fromkeys(box_of.get(c.source, c.source) for c in parts))
            by_box = {b: [c for c in got if box_of.get(c.source, c.source) == b] for b in boxes}
            arrived = [b for b in boxes if by_box[b]]
            if len(boxes) == 1:   # one consumer: its contribution is the adjoint (the reversed edge says whose)
                text[i] = f"= {amount(got[-1].total)}" + ("" if len(got) == len(parts) else " + …")
                e = edge_of.get((boxes[0], nid))
                if e is not None:
                    edge_text[e] = amount(got[-1].total)
                continue

            def number(b) -> str:   # what consumer box b sent: one contribution, or its parts in brackets
                cs = by_box[b]
                return amount(cs[0].value) if len(cs) == 1 else f"({' + '.join(amount(c.value) for c in cs)})"
            consumers = [names.get(b, "?") for b in arrived]
            terms = [f"{bar(c)}·∂{c}/∂{x}" for c in consumers]
            numbers = [number(b) for b in arrived]
            if len(got) < len(parts):
                text[i] = f"= {' + '.join(terms)} + … ({len(arrived)} of {len(boxes)})"
                totals[i] = f"= {' + '.join(numbers)} + …"
            else:   # a fan-out sum: the slides' symbols, then the numbers and their total
                # (one-element tensors add up exactly: "="; larger ones are written by their norms: "→")
                sign = "→" if any("‖" in n for n in numbers) else "="
                text[i] = f"= {' + '.join(terms)}"
                totals[i] = f"= {' + '.join(numbers)} {sign} {amount(got[-1].total)}"
            for b in arrived:
                e = edge_of.get((b, nid))
                if e is not None:
                    edge_text[e] = number(b)
        frame.node_text, frame.node_adjoint, frame.edge_text = text, totals, edge_text
    return bfs
