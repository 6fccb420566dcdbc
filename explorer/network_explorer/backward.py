"""The network's backward pass as the slides draw it: its own graph, edges reversed, adjoints named with bars.

The kit's :func:`explorer.kit.backward_view.backward_frameset` mirrors a view's frames (same node ids and frame
indices, every edge reversed, each node headed by its adjoint's name, ``x̄``, ``f̄c1.weight``); the text in the
nodes and on the edges is written here from the recording, because the network's values are tensors: a node's
adjoint in numbers (a one-element tensor's value; a larger one's norm, as the lecture writes a tensor's size, the
norm of a named quantity: the box ``‖h̄‖`` over ``= 0.5``), and where a node fans out, its sum as the slides write
it, symbolically (``h̄ = ā·∂a/∂h + b̄·∂b/∂h``: one term per consumer, in the order the contributions arrived) and
then in numbers (a tensor's sum by the norm of h̄: norms do not add); each reversed edge carries the contribution it
sent in one number, its value or its norm (with each term's name in its label, three converging edges' labels found
no spot clearly their own). Nothing is recomputed: every number is the recording's.
"""
from __future__ import annotations

import math

from explorer.explain.graph import bar, lecture_names
from explorer.kit.backward_view import backward_frameset
from explorer.kit.frames import FrameSet
from explorer.kit.labels import num

from . import analysis
from .frames import NetworkView, frame_span
from .recording import Recording

#: significant digits of a tensor's norm: its size at a glance (a one-element tensor's value keeps the app's five,
#: so that a fan-out's values add up as written); with five, logistic regression's backward op view was laid out
#: too large for a projector's graph and shrunk (to 0.92)
NORM_DIGITS = 3

#: the rankdir of a view's backward graph: the mirror of the forward one (the loss's adjoint where the loss is)
BACKWARD_RANKDIR = {"op": "auto-reversed", "layer": "TB"}
MIRRORED = {"BT": "TB", "LR": "RL", "TB": "BT", "RL": "LR"}


def backward_rankdir(level: str, forward: str) -> str:
    """The backward graph's rankdir for a view laid out ``forward`` (its drawing's rankdir): the op view's mirrors it
    (left to right, right to left; bottom-up, top-down). Left to "auto-reversed", the op view's backward graph
    turned right to left on a projector where its forward graph stands bottom-up, once its boxes were narrower."""
    rd = BACKWARD_RANKDIR[level]
    return MIRRORED.get(forward, rd) if rd == "auto-reversed" else rd


def _is_one(lk) -> bool:
    """Whether a tensor's look (``analysis.look``) is of one element with its number kept: written as that number."""
    return lk is not None and lk.matrix is not None and math.prod(lk.shape) == 1


def _amount(lk) -> str:
    if lk is None:
        return "?"
    if _is_one(lk):
        return num(float(lk.matrix.ravel()[0]), NORM_DIGITS)   # one precision with the norms (0.18718 stood beside 0.192)
    return num(lk.stats["norm"], NORM_DIGITS)


def amount(value) -> str:
    """A tensor in one number: a one-element tensor's value, a larger one's norm (``0.31``; :func:`norm_of` says
    whose norm); "?" for a tensor not recorded."""
    return _amount(analysis.look(value))


def is_number(value) -> bool:
    """Whether ``value`` is written as a number (one element), not by its norm."""
    return _is_one(analysis.look(value))


def norm_of(name: str, value, so_far: bool = False) -> str:
    """A tensor's size as the lecture writes it, the norm of the named quantity: ``‖x̄5‖ = 0.5`` (``name`` in the
    adjoint notation, ``explorer.explain.graph.bar``); a one-element tensor is its value, ``0.5``. ``so_far``: a
    running sum that more contributions will join (``‖x̄5‖ = 0.5 so far``)."""
    lk = analysis.look(value)   # (its statistics: one look per tensor, not one per question asked of it)
    text = _amount(lk) if lk is None or _is_one(lk) else f"‖{name}‖ = {_amount(lk)}"
    return text + (" so far" if so_far else "")


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
    # a tensor's adjoint sent by one consumer: its box is headed by its norm, ‖x̄‖, the number under it (= 0.5), the
    # lecture's ‖x̄5‖ = 0.5 on two lines (the name again in a line of its own widened the layer view's boxes: the
    # lecture's sentiment network grew wider than a projector's graph); a fan-out keeps x̄, its sum under it
    normed = {nid for nid, parts in arrivals.items() if parts and not is_number(parts[-1].total)
              and len({box_of.get(c.source, c.source) for c in parts}) == 1}
    # a tensor no contribution reaches (HW2's mean over words: nothing under it takes a gradient) is headed as the
    # others are, ‖x̄‖ (a bar alone read as another notation beside its neighbours' ‖fc1.weight‖)
    loss_box = box_of.get(rec.loss_node, rec.loss_node)
    normed |= {nid for nid, parts in arrivals.items() if not parts and nid not in constant and nid != loss_box
               and not is_number(rec.node(_adjoint_node(rec, view, nid)).value)}
    bfs.heads = [f"‖{h}‖" if nid in normed else h for nid, h in zip(bfs.node_ids, bfs.heads)]
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
            complete = len(got) == len(parts)
            whole = got[-1].total   # x̄ as the engine holds it after the last contribution in
            named = bfs.heads[i]    # x̄: the adjoint's name, as the node is headed
            if len(boxes) == 1:   # one consumer: its contribution is the adjoint (the reversed edge says whose)
                # under x̄ its value, under ‖x̄‖ its norm (a running sum: what the box has sent so far)
                text[i] = f"= {amount(whole)}" + ("" if complete else " + …" if is_number(whole) else " so far")
                e = edge_of.get((boxes[0], nid))
                if e is not None:
                    edge_text[e] = amount(whole)
                continue

            def term(b) -> str:   # consumer box b's term of the sum, in the slides' symbols
                c = names.get(b, "?")
                return f"{bar(c)}·∂{c}/∂{x}"

            def number(b) -> str:   # what consumer box b sent: one contribution, or its parts in brackets
                cs = by_box[b]
                return amount(cs[0].value) if len(cs) == 1 else f"({' + '.join(amount(c.value) for c in cs)})"
            terms = [term(b) for b in arrived]
            numbers = [number(b) for b in arrived]
            scalar = is_number(whole) and all(is_number(c.value) for c in got)
            if not complete:
                text[i] = f"= {' + '.join(terms)} + … ({len(arrived)} of {len(boxes)})"
                totals[i] = f"= {' + '.join(numbers)} + …" if scalar else norm_of(named, whole, so_far=True)
            else:   # a fan-out sum: the slides' symbols, then the numbers and their total (one-element tensors add
                #     up exactly); a tensor's sum as the norm of x̄ (norms do not add: its terms' are on their edges)
                text[i] = f"= {' + '.join(terms)}"
                totals[i] = f"= {' + '.join(numbers)} = {amount(whole)}" if scalar else norm_of(named, whole)
            for b in arrived:
                e = edge_of.get((b, nid))
                if e is not None:
                    edge_text[e] = numbers[arrived.index(b)]
        frame.node_text, frame.node_adjoint, frame.edge_text = text, totals, edge_text
    return bfs
