"""DOT export of a forward or gradient graph via pydot (for ``st.graphviz_chart`` or graphviz)."""
from __future__ import annotations

from collections import defaultdict

import pydot

from .frames import Frame, FrameSet, node_heads
from .labels import adjoint_label, adjoint_names, short_value
from explorer.explain.graph import Graph
from explorer.explain.trace import Trace


_FILL = {"input": "#dbeafe", "constant": "#f3f4f6", "op": "#ffffff", "group": "#fef3c7",
         "forward": "#e5e7eb", "gradient": "#fed7aa", "seed": "#fdba74"}
_STATE_FILL = {"active": "#fde047", "waiting": "#fecaca", "complete": "#bbf7d0", "leaf": "#86efac",
               "lost": "#f87171"}


def _q(s: str) -> str:
    # pydot writes attribute values verbatim; quote them and escape what DOT needs
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, trace: Trace | None = None, frame: Frame | None = None,
           frameset: FrameSet | None = None, rankdir: str = "LR", title: str | None = None) -> str:
    """DOT text of ``graph``.

    Node labels carry name, op and value, plus the adjoint (final, from ``trace``; or as shown in
    ``frame`` of ``frameset``). Edge labels carry the VJP contribution that flowed back along the
    edge (from ``trace``'s 'send' events).
    """
    g = pydot.Dot("autodiff", graph_type="digraph", rankdir=rankdir, bgcolor="white")
    if title:
        g.set("label", _q(title))
    g.set_node_defaults(shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11")
    g.set_edge_defaults(fontname="Helvetica", fontsize="9")
    shown = {}
    if frame is not None and frameset is not None:
        adj = frame.node_adjoint or ["" for _ in frame.node_text]
        for nid, txt, a, st in zip(frameset.node_ids, frame.node_text, adj, frame.node_state):
            shown[nid] = (txt, a, st)
    heads = node_heads(graph, trace.graph if trace is not None else None)
    adjoint_of = adjoint_names(trace.graph) if trace is not None else {}
    for n in graph.nodes:
        head = heads.get(n.id, n.name) if n.op != "group" else n.name
        label = f"{head}\n= {short_value(n.value)}"
        fill = _FILL.get(n.kind, "#ffffff")
        if n.id in shown:
            txt, a, st = shown[n.id]
            label = "\n".join(t for t in (head, txt, a) if t)
            fill = _STATE_FILL.get(st, fill)
        elif trace is not None and n.id in trace.adjoints:
            label += f"\n{adjoint_label(adjoint_of, n.id, n.name)} = {short_value(trace.adjoints[n.id])}"
        g.add_node(pydot.Node(f"n{n.id}", label=_q(label), fillcolor=_q(fill)))
    contributions: dict[tuple[int, int], list] = defaultdict(list)
    if trace is not None:
        for e in trace.backward:
            if e.kind == "send":
                contributions[(e.parent, e.node)].append(e.value)
    active = set(frame.active_edges) if frame is not None else set()
    for e in graph.edges:
        attrs = {}
        vals = contributions.get((e.src, e.dst))
        if vals:
            attrs["label"] = _q(short_value(vals.pop(0)))
            attrs["fontcolor"] = _q("#c2410c")
        if (e.src, e.dst) in active:
            attrs["color"] = _q("#ea580c")
            attrs["penwidth"] = "2.5"
        g.add_edge(pydot.Edge(f"n{e.src}", f"n{e.dst}", **attrs))
    return g.to_string()
