"""Frames for an animation: what each node shows and what is highlighted, step by step.

Built only from a :class:`~explorer.explain.trace.Trace` (the recorded engine execution) — one frame
for the inputs, one per forward op, one per backward step (a node taken with all the contributions
it sends), and a final frame with the gradients. Every number is written in five significant
digits (:mod:`explorer.kit.labels`), and a fan-out sum is written as the slides write it, symbolically and then
in numbers (:func:`explorer.kit.labels.fan_out_sum`): ``x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from explorer.explain.graph import Graph, adjoint_names, output_adjoint_note, output_number
from explorer.explain.parser import check_deadline
from explorer.explain.trace import Trace

from .labels import (adjoint_label, fan_out_sum, heading, is_scalar, lecture_names, node_formulas, num, shape_text,
                     short_value)

MAX_FRAMES = 2000


@dataclass
class Frame:
    """One animation frame. Node lists are aligned with ``FrameSet.node_ids``, ``edge_text`` with
    ``FrameSet.edges``.

    node_text: the value line(s) a node shows ("= 4.5"); node_adjoint: its adjoint line, drawn in the
    second colour ("x̄3 = 244.69", "x̄1 = 1 (1 of 2)").
    node_state: 'idle' (not computed yet), 'computed' (forward value known), 'waiting' (holds part
    of its adjoint: k of n received), 'complete' (adjoint complete), 'active' (being processed),
    'leaf' (gradient accumulated), 'lost' (a contribution arrived too late: bfs_first_touch).
    active_edges: forward edges (src, dst); in the backward phase the contribution flows dst -> src.
    edge_text: the contribution last sent back along each edge ("" before).
    warning: set at the step where something goes wrong (a node passed on an incomplete adjoint).
    focus: nodes a window centres on when the frame highlights none (a still picture's point: no outline drawn).
    node_sum: a fan-out node's sum so far as the slides write it (:func:`explorer.kit.labels.fan_out_sum`), "" for
    a node used once or not reached yet.
    """
    index: int
    phase: str
    caption: str
    active_nodes: list[int]
    active_edges: list[tuple[int, int]]
    node_text: list[str]
    node_state: list[str]
    node_adjoint: list[str] = field(default_factory=list)
    edge_text: list[str] = field(default_factory=list)
    warning: str = ""
    focus: list[int] = field(default_factory=list)
    node_sum: list[str] = field(default_factory=list)


@dataclass
class FrameSet:
    node_ids: list[int]
    frames: list[Frame]
    truncated: int = 0             # kept for callers; frames are merged, never dropped (always 0)
    forward_per_frame: int = 1     # forward ops shown per frame (>1 when max_frames forced merging)
    backward_per_frame: int = 1    # backward steps shown per frame
    heads: list[str] = field(default_factory=list)        # first line of each node: "x3 = 1.5·x1"
    edges: list[tuple[int, int]] = field(default_factory=list)   # the graph's edges, in order
    hover: list[str] = field(default_factory=list)        # full-precision hover text per node

    def only(self, frame: int) -> "FrameSet":
        """This graph with its one frame ``frame`` (a still picture of a stepped page)."""
        return FrameSet(self.node_ids, [self.frames[frame]], heads=self.heads, edges=self.edges, hover=self.hover)

    def to_dict(self) -> dict:
        return {"node_ids": self.node_ids, "frames": [asdict(f) for f in self.frames], "truncated": self.truncated,
                "forward_per_frame": self.forward_per_frame, "backward_per_frame": self.backward_per_frame,
                "heads": self.heads, "edges": self.edges, "hover": self.hover}


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, str) or isinstance(b, str):  # "inf"/"nan" stored as text
        try:
            return float(a) + float(b)
        except (TypeError, ValueError):
            return a
    out = np.add(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return float(out) if out.ndim == 0 else out.tolist()


def _caption(texts: list[str], limit: int = 6) -> str:
    texts = [t for t in texts if t]
    if len(texts) <= limit:
        return "; ".join(texts)
    return "; ".join(texts[:limit]) + f"; … ({len(texts) - limit} more)"


def _v(value, width: int = 26) -> str:
    return short_value(value, width) if not is_scalar(value) else num(value)


def value_line(value, shape=None) -> str:
    """The value line of a node: ``= 4.5``, or for a tensor its shape and first values ``(2×3) [1, 2, …]``."""
    if shape:
        return f"({shape_text(shape)}) {_v(value, 22)}" if value is not None else shape_text(shape)
    return "= " + _v(value)


def consumer_terms(terms: list[tuple[int, Any, Any]], position: dict[int, int]) -> list[tuple[int, Any, Any]]:
    """A fan-out sum's terms, one per consumer: ``terms`` as received ``(consumer, its adjoint, what it sent)``; a
    consumer using the node twice (``x·x``) sent two contributions, added into one term; in the graph's order of
    the consumers (``position``: node id -> index; the slides' order, x3 before x7)."""
    by_consumer: dict[int, list] = {}
    for c, a, v in terms:
        if c in by_consumer:
            by_consumer[c][1] = _add(by_consumer[c][1], v)
        else:
            by_consumer[c] = [a, v]
    return [(c, a, v) for c, (a, v) in sorted(by_consumer.items(), key=lambda t: position.get(t[0], t[0]))]


def node_heads(graph: Graph, full: Graph | None = None) -> dict[int, str]:
    """``x3 = 1.5·x1`` for op nodes, the name for leaves; composites read ``v2 = tanh(y)``; an output the program
    named ``f`` is numbered as the notes number it, ``x7 = x1 + x6`` (the notes' x7 = f; its adjoint is ``x̄7`` on
    every page). "x7 = f = x1 + x6" was tried: five characters wider, Forward vs reverse's graph no longer fitted
    its column left to right and was drawn top to bottom, below the projector's first screen.

    ``full`` is the graph with its constant nodes (so numbers appear as literals); default ``graph``.
    """
    full = full if full is not None else graph
    formulas = node_formulas(full)
    alias = drawn_output_number(graph)
    return {n.id: heading(alias if alias and n.id == graph.output else n.name,
                          formulas.get(n.id, "")) for n in graph.nodes}


def drawn_output_number(graph: Graph) -> str:
    """The number the graphs give an output the program named otherwise (``x7`` for ``f``; see
    :func:`~explorer.explain.graph.output_number`), the same in the nodes' heads and in the steps' captions ("take
    x7: x̄7 (= f̄) = 1; x7 → x1"); empty where the output keeps its own name. Numbered after the intermediates, as
    the notes number x3..x7, not after the inputs alone (f = x1 − 5 stays f)."""
    inner = any(n.kind not in ("input", "constant") and n.id != graph.output for n in graph.nodes)
    return output_number(graph) if inner else ""


def build_frames(trace: Trace, graph: Graph | None = None, max_frames: int = MAX_FRAMES,
                 heads: dict[int, str] | None = None) -> FrameSet:
    """Frames for ``trace`` over ``graph`` (default: the trace's graph without constant nodes).

    Nodes of the trace that are not in ``graph`` (constants) are skipped. When there would be
    more than ``max_frames`` frames, consecutive forward ops / backward steps share a frame
    (``FrameSet.forward_per_frame`` / ``backward_per_frame``). Cost is O(frames x nodes) list
    copies, well under a second for 500 nodes.

    Args:
        heads: node id -> first label line (default: ``name = formula`` from the trace's graph).
    """
    g = graph if graph is not None else trace.graph.without_constants()
    node_ids = [n.id for n in g.nodes]
    index = {nid: i for i, nid in enumerate(node_ids)}
    name = {n.id: n.name for n in trace.graph.nodes}
    name.update({n.id: n.name for n in g.nodes})
    alias = drawn_output_number(trace.graph) if heads is None else ""
    if alias:   # the captions name the output as its node's head does
        name[trace.graph.output] = alias
    adj_name = adjoint_names(trace.graph)   # x̄3, and the output's x̄7 where the program called it f
    adj_name.update({n.id: adjoint_label(adj_name, n.id, n.name) for n in g.nodes})
    seed_note = output_adjoint_note(trace.graph)
    lname = lecture_names(trace.graph)
    position = {n.id: k for k, n in enumerate(trace.graph.nodes)}   # the graph's order: x3 before x7
    if heads is None:
        heads = node_heads(g, trace.graph)
    head_list = [heads.get(nid, name[nid]) for nid in node_ids]
    edges = [(e.src, e.dst) for e in g.edges]
    edge_slots: dict[tuple[int, int], list[int]] = {}
    for k, key in enumerate(edges):
        edge_slots.setdefault(key, []).append(k)
    text = ["" for _ in node_ids]
    adjoint = ["" for _ in node_ids]
    state = ["idle" for _ in node_ids]
    edge_text = ["" for _ in edges]
    node_sum = ["" for _ in node_ids]
    frames: list[Frame] = []
    count = {n.id: n.count for n in g.nodes if n.kind == "group"}   # boxes of several operations
    done_fwd: dict[int, int] = {}

    def snap(phase: str, caption: str, nodes: list[int], active_edges: list[tuple[int, int]],
             warning: str = "") -> None:
        frames.append(Frame(len(frames), phase, caption, nodes, active_edges, list(text), list(state),
                            list(adjoint), list(edge_text), warning, node_sum=list(node_sum)))

    inputs = []
    for n in g.nodes:
        if n.kind in ("input", "constant") and n.op == "leaf":
            i = index[n.id]
            text[i] = value_line(n.value, n.shape) if n.value is not None or n.shape else ""
            state[i] = "computed"
            inputs.append(n.id)
    described = [f"{name[i]} = {_v(g.node(i).value)}" for i in inputs if g.node(i).value is not None]
    snap("forward", ("Inputs: " + ", ".join(described)) if described else "Inputs and parameters (leaves)",
         inputs, [])
    fsteps = [st for st in trace.forward if st.node in index]
    steps = trace.steps()
    room = max(2, max_frames - 2)
    if len(fsteps) + len(steps) <= room:
        per_f = per_b = 1
    else:
        share = max(1, round(room * len(fsteps) / max(1, len(fsteps) + len(steps))))
        per_f = max(1, -(-len(fsteps) // share))
        per_b = max(1, -(-len(steps) // max(1, room - share)))
    for c in range(0, len(fsteps), per_f):
        check_deadline()   # a frame per step: building them is work the request's deadline counts
        chunk = fsteps[c:c + per_f]
        texts = []
        for st in chunk:
            i = index[st.node]
            if st.node in count:
                done_fwd[st.node] = done_fwd.get(st.node, 0) + 1
                text[i] = f"{done_fwd[st.node]} of {count[st.node]} ops computed"
                texts.append(f"{name[st.node]}: {st.text}")
            elif st.value is not None:
                text[i] = value_line(st.value, st.shape)
                texts.append(f"{heads.get(st.node, name[st.node])} = {_v(st.value)}")
            else:
                texts.append(st.text)
            state[i] = "computed"
        snap("forward", _caption(texts), [st.node for st in chunk],
             [(p, st.node) for st in chunk for p in st.inputs if p in index])

    sends: dict[tuple[int, int], int] = {}

    def slide_sum(nid: int, received: int, expected: int, total) -> str:
        """The node's fan-out sum so far (:func:`consumer_terms`)."""
        return fan_out_sum(lname.get(nid, name.get(nid, str(nid))),
                           [(lname.get(c, name.get(c, str(c))), a, v)
                            for c, a, v in consumer_terms(terms.get(nid, []), position)], received, expected, total)

    received: dict[int, list] = {}     # node -> contribution values received so far (in order)
    terms: dict[int, list] = {}        # node -> (consumer, the consumer's adjoint, contribution) received so far
    held: dict[int, object] = {}       # node -> the adjoint it held when taken (what its contributions multiply)
    expected: dict[int, int] = {}
    passed_on: set[int] = set()
    active_prev: list[int] = []
    visits: dict[int, int] = {}
    leaf_total: dict[int, object] = {}
    for c in range(0, len(steps), per_b):
        check_deadline()
        events = [e for group in steps[c:c + per_b] for e in group]
        for nid in active_prev:  # the previously active node is finished
            if nid in index and state[index[nid]] == "active":
                state[index[nid]] = "complete"
        active: list[int] = []
        hot: list[tuple[int, int]] = []
        texts: list[str] = []
        warning = ""
        for e in events:
            nid = e.node
            shown = nid in index
            nm = name.get(nid, f"#{nid}")
            nb = adjoint_label(adj_name, nid, nm)
            if e.kind == "visit":
                held[nid] = e.value
                visits[nid] = visits.get(nid, 0) + 1
                k = visits[nid]
                passed_on.add(nid)
                if nid in count:
                    texts.append(f"backward through {nm}: {k} of {count[nid]} ops")
                elif e.value is None:
                    texts.append(e.text)
                else:
                    note = seed_note if nid == trace.graph.output and k == 1 else ""
                    texts.append(f"take {nm}: {nb}{note} = {_v(e.value)}" + (f" (path {k})" if k > 1 else ""))
                got, want = len(received.get(nid, [])), expected.get(nid, 0)
                if want and got < want and nid not in count:
                    # what is true at this step, no forecast of the steps to come ("the rest will arrive too
                    # late" told the class what it is asked to find: the LOST line comes when it happens)
                    warning = f"{nm} passes on its adjoint with only {got} of {want} contributions received"
                    texts.append(warning)
                if shown:
                    if nid in count:
                        adjoint[index[nid]] = f"{min(k, count[nid])} of {count[nid]} ops backpropagated"
                    elif e.value is not None:
                        adjoint[index[nid]] = f"{nb} = {_v(e.value)}" + (f" (path {k})" if k > 1 else "")
                    state[index[nid]] = "active"
                    active.append(nid)
            elif e.kind == "send":
                p = e.parent
                received.setdefault(p, []).append(e.value)
                terms.setdefault(p, []).append((nid, held.get(nid), e.value))
                if e.value is None:
                    texts.append(e.text)
                else:
                    texts.append(f"{nm} → {name.get(p, p)}: contribution {_v(e.value)}")
                if shown and p in index:
                    hot.append((p, nid))
                    slots = edge_slots.get((p, nid), [])
                    if slots:  # parallel edges take their contributions in turn (across steps too)
                        j = sends.get((p, nid), 0)
                        sends[(p, nid)] = j + 1
                        if e.value is not None:
                            edge_text[slots[j % len(slots)]] = _v(e.value, 16)
            elif e.kind == "accumulate":
                expected[nid] = e.expected or 0
                parts = received.get(nid, [])
                if e.value is None:
                    texts.append(e.text)
                else:
                    r, m = e.received, e.expected
                    if m and m > 1 and r == m and len(parts) == m and all(v is not None for v in parts):
                        texts.append(f"{slide_sum(nid, r, m, e.value)} ({r} of {m} received)")
                    elif m and m > 1:
                        texts.append(f"{nb} = {_v(e.value)} ({r} of {m} received)")
                    else:
                        texts.append(f"{nb} = {_v(e.value)}")
                if shown:
                    if e.value is not None:
                        m = e.expected or 1
                        suffix = f" ({e.received} of {m})" if m > 1 else ""
                        adjoint[index[nid]] = f"{nb} = {_v(e.value)}{suffix}"
                        if m > 1 and len(terms.get(nid, [])) == (e.received or 0):
                            node_sum[index[nid]] = slide_sum(nid, e.received or 0, m, e.value)
                    elif e.expected and e.expected > 1:
                        adjoint[index[nid]] = f"adjoint {e.received} of {e.expected}"
                    if state[index[nid]] != "active":
                        state[index[nid]] = "complete" if (e.received or 0) >= (e.expected or 0) else "waiting"
            elif e.kind == "leaf":
                prev = leaf_total.get(nid)
                total = e.value if prev is None or e.value is None else _add(prev, e.value)
                leaf_total[nid] = total
                k = visits.get(nid, 1)
                if e.value is None:
                    texts.append(e.text)
                else:
                    texts.append(f"{nm} is an input: ∂f/∂{nm} = {_v(total)}" +
                                 (f" (+{_v(e.value)} along path {k})" if k > 1 else ""))
                if shown:
                    if e.value is not None:
                        adjoint[index[nid]] = f"{nb} = {_v(total)}" + (
                            f" (+{_v(e.value, 14)}, path {k})" if k > 1 else "")
                    state[index[nid]] = "leaf"
            elif e.kind == "lost":
                # taken already: an input's x̄ is final, an op's was sent on (its consumer count: e.received of expected)
                texts.append(f"LOST: {_v(e.value)} reached {nm} after {nm} was taken (contribution {e.received} of "
                             f"{e.expected}): it is never added to {nb}")
                if shown:
                    i = index[nid]
                    base = adjoint[i].split(", lost", 1)[0] or f"{nb} = ?"
                    adjoint[i] = f"{base}, lost {_v(e.value, 14)}"
                    state[i] = "lost"
        active_prev = active
        snap("backward", _caption(texts), active, hot, warning)
    for nid in active_prev:
        if nid in index and state[index[nid]] == "active":
            state[index[nid]] = "complete"
    if trace.error:
        caption = f"backward pass failed: {trace.error}"
    else:
        caption = "Gradients: " + ", ".join(f"∂f/∂{k} = {_v(v)}" for k, v in trace.grads.items() if v is not None)
        if all(v is None for v in trace.grads.values()):
            caption = "Done: every input holds its gradient"
    snap("done", caption, [], [])
    hover = [_hover(g, nid, heads.get(nid, name[nid]), trace) for nid in node_ids]
    return FrameSet(node_ids, frames, 0, per_f, per_b, head_list, edges, hover)


def _hover(g: Graph, nid: int, head: str, trace: Trace) -> str:
    from .labels import full_value, shape_text
    n = g.node(nid)
    lines = [head, f"value: {full_value(n.value)}", f"shape: {shape_text(n.shape)}"]
    adj = trace.adjoints.get(nid)
    if adj is not None:
        lines.append(f"adjoint after the backward pass: {full_value(adj)}")
    return "<br>".join(_esc(t) for t in lines)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
