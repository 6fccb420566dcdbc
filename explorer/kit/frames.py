"""Frames for an animation: what each node shows and what is highlighted, step by step.

Built only from a :class:`~engine.explain.trace.Trace` (the recorded engine execution) —
one frame for the inputs, one per forward op, one per backward step (a node taken with all
the contributions it sends), and a final frame with the gradients.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from engine.explain.graph import Graph, fmt
from engine.explain.trace import Trace, bar

MAX_FRAMES = 2000


@dataclass
class Frame:
    """One animation frame. ``node_text`` / ``node_state`` are aligned with ``FrameSet.node_ids``.

    node_state: 'idle' (not computed yet), 'computed' (forward value known), 'waiting' (holds part
    of its adjoint: k of n received), 'complete' (adjoint complete), 'active' (being processed),
    'leaf' (gradient accumulated), 'lost' (a contribution arrived too late: bfs_first_touch).
    ``active_edges`` are forward edges (src, dst); in the backward phase the contribution flows
    from dst to src.
    """
    index: int
    phase: str
    caption: str
    active_nodes: list[int]
    active_edges: list[tuple[int, int]]
    node_text: list[str]
    node_state: list[str]


@dataclass
class FrameSet:
    node_ids: list[int]
    frames: list[Frame]
    truncated: int = 0             # kept for callers; frames are merged, never dropped (always 0)
    forward_per_frame: int = 1     # forward ops shown per frame (>1 when max_frames forced merging)
    backward_per_frame: int = 1    # backward steps shown per frame

    def to_dict(self) -> dict:
        return {"node_ids": self.node_ids, "frames": [asdict(f) for f in self.frames], "truncated": self.truncated,
                "forward_per_frame": self.forward_per_frame, "backward_per_frame": self.backward_per_frame}


def _add(a, b):
    if isinstance(a, str) or isinstance(b, str):  # "inf"/"nan" stored as text
        return float(a) + float(b) if not isinstance(a, list) else a
    out = np.add(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return float(out) if out.ndim == 0 else out.tolist()


def _caption(texts: list[str], limit: int = 6) -> str:
    if len(texts) <= limit:
        return "; ".join(texts)
    return "; ".join(texts[:limit]) + f"; … ({len(texts) - limit} more)"


def build_frames(trace: Trace, graph: Graph | None = None, max_frames: int = MAX_FRAMES) -> FrameSet:
    """Frames for ``trace`` over ``graph`` (default: the trace's graph without constant nodes).

    Nodes of the trace that are not in ``graph`` (constants) are skipped. When there would be
    more than ``max_frames`` frames, consecutive forward ops / backward steps share a frame
    (``FrameSet.forward_per_frame`` / ``backward_per_frame``). Cost is O(frames x nodes) list
    copies, well under a second for 500 nodes.
    """
    g = graph if graph is not None else trace.graph.without_constants()
    node_ids = [n.id for n in g.nodes]
    index = {nid: i for i, nid in enumerate(node_ids)}
    name = {n.id: n.name for n in g.nodes}
    text = ["" for _ in node_ids]
    state = ["idle" for _ in node_ids]
    frames: list[Frame] = []

    def snap(phase: str, caption: str, nodes: list[int], edges: list[tuple[int, int]]) -> None:
        frames.append(Frame(len(frames), phase, caption, nodes, edges, list(text), list(state)))

    inputs = []
    for n in g.nodes:
        if n.kind in ("input", "constant") and n.op == "leaf":
            i = index[n.id]
            text[i] = f"{n.name} = {fmt(n.value)}"
            state[i] = "computed"
            inputs.append(n.id)
    snap("forward", "inputs: " + ", ".join(text[index[i]] for i in inputs), inputs, [])
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
        chunk = fsteps[c:c + per_f]
        for st in chunk:
            i = index[st.node]
            text[i] = f"{name[st.node]} = {fmt(st.value)}"
            state[i] = "computed"
        snap("forward", _caption([st.text for st in chunk]), [st.node for st in chunk],
             [(p, st.node) for st in chunk for p in st.inputs if p in index])

    forward_text = list(text)
    adjoint_line: dict[int, str] = {}

    def set_text(nid: int) -> None:
        i = index[nid]
        text[i] = forward_text[i] + ("\n" + adjoint_line[nid] if nid in adjoint_line else "")

    active_prev: list[int] = []
    visits: dict[int, int] = {}
    leaf_total: dict[int, object] = {}
    for c in range(0, len(steps), per_b):
        events = [e for group in steps[c:c + per_b] for e in group]
        for nid in active_prev:  # the previously active node is finished
            if nid in index and state[index[nid]] == "active":
                state[index[nid]] = "complete"
        active: list[int] = []
        edges: list[tuple[int, int]] = []
        texts: list[str] = []
        for e in events:
            texts.append(e.text)
            nid = e.node
            if nid not in index:
                continue
            if e.kind == "visit":
                visits[nid] = visits.get(nid, 0) + 1
                k = visits[nid]
                # path recursion takes a node once per path: say which path this adjoint came along
                adjoint_line[nid] = f"{bar(name[nid])} = {fmt(e.value)}" if k == 1 else \
                    f"{bar(name[nid])} (path {k}) = {fmt(e.value)}"
                state[index[nid]] = "active"
                active.append(nid)
            elif e.kind == "send":
                if e.parent in index:
                    edges.append((e.parent, nid))
            elif e.kind == "accumulate":
                adjoint_line[nid] = f"{bar(name[nid])} = {fmt(e.value)} ({e.received} of {e.expected} received)"
                if state[index[nid]] != "active":
                    state[index[nid]] = "complete" if e.received >= e.expected else "waiting"
            elif e.kind == "leaf":
                prev = leaf_total.get(nid)
                total = e.value if prev is None or e.value is None else _add(prev, e.value)
                leaf_total[nid] = total
                k = visits.get(nid, 1)
                adjoint_line[nid] = f"grad = {fmt(total)}" if k <= 1 else \
                    f"grad = {fmt(total)} (path {k}: +{fmt(e.value)})"
                state[index[nid]] = "leaf"
            elif e.kind == "lost":
                adjoint_line[nid] = adjoint_line.get(nid, "") + f" (lost {fmt(e.value)})"
                state[index[nid]] = "lost"
            set_text(nid)
        active_prev = active
        snap("backward", _caption(texts), active, edges)
    for nid in active_prev:
        if nid in index and state[index[nid]] == "active":
            state[index[nid]] = "complete"
    if trace.error:
        caption = f"backward pass failed: {trace.error}"
    else:
        caption = "gradients: " + ", ".join(f"∂f/∂{k} = {fmt(v)}" for k, v in trace.grads.items())
    snap("done", caption, [], [])
    return FrameSet(node_ids, frames, 0, per_f, per_b)
