"""Layered layout of a DAG (layers by longest path from the inputs, barycenter order within a
layer; the fallback when Graphviz is missing), and what is drawn as one node: composite ops, node
groups of big graphs."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Callable

from explorer.explain.graph import Graph, GraphEdge, GraphNode
from explorer.explain.trace import Trace

from .labels import literal_name


def _layers(graph: Graph) -> dict[int, int]:
    """Longest path from a source, computed in Kahn order (cycles, which a bad grouping could
    create, are broken by placing the leftover nodes after everything else)."""
    indeg = {n.id: 0 for n in graph.nodes}
    for e in graph.edges:
        indeg[e.dst] += 1
    ready = [n.id for n in graph.nodes if indeg[n.id] == 0]
    layer = {nid: 0 for nid in ready}
    seen = 0
    i = 0
    while i < len(ready):
        nid = ready[i]
        i += 1
        seen += 1
        for c in graph.children(nid):
            layer[c] = max(layer.get(c, 0), layer[nid] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if seen < len(graph.nodes):
        top = max(layer.values(), default=0) + 1
        for n in graph.nodes:
            if indeg[n.id] > 0:
                layer[n.id] = top
    return layer


def layout(graph: Graph, sweeps: int = 4, layer_gap: float = 1.0, node_gap: float = 1.0
           ) -> dict[int, tuple[float, float]]:
    """x/y per node: x = layer (longest path from inputs), y = order within the layer.

    Deterministic (same graph, same picture), so frames of an animation never move nodes.
    The order within a layer starts from execution order and is refined by ``sweeps``
    barycenter passes (mean position of neighbours in other layers), which untangles edges.
    """
    if not graph.nodes:
        return {}
    layer = _layers(graph)
    by_layer: dict[int, list[int]] = defaultdict(list)
    for n in graph.nodes:
        by_layer[layer[n.id]].append(n.id)
    n_layers = max(by_layer) + 1
    pos: dict[int, float] = {}

    def place(ids: list[int]) -> None:
        mid = (len(ids) - 1) / 2
        for k, nid in enumerate(ids):
            pos[nid] = (k - mid) * node_gap

    for ids in by_layer.values():
        place(ids)
    for s in range(sweeps):
        down = s % 2 == 0
        rng = range(1, n_layers) if down else range(n_layers - 2, -1, -1)
        for li in rng:
            ids = by_layer.get(li)
            if not ids or len(ids) == 1:
                continue
            keyed = []
            for k, nid in enumerate(ids):
                nbrs = graph.parents(nid) if down else graph.children(nid)
                if not nbrs:
                    nbrs = graph.children(nid) if down else graph.parents(nid)
                bc = sum(pos[m] for m in nbrs) / len(nbrs) if nbrs else pos[nid]
                keyed.append((bc, k, nid))
            keyed.sort()
            ids[:] = [nid for _, _, nid in keyed]
            place(ids)
    return {n.id: (layer[n.id] * layer_gap, pos[n.id]) for n in graph.nodes}


def collapse_groups(graph: Graph, group_of: Callable[[GraphNode], str | None] | None = None,
                    max_nodes: int = 300) -> Graph:
    """Merge the nodes of each group into one box node when the graph has more than ``max_nodes``.

    Args:
        graph: the graph.
        group_of: node -> group label, or None to keep the node (default: ``node.group`` for op
            nodes, so a statement such as ``h = tanh(W @ x + b)`` becomes one box).
        max_nodes: graphs this small are returned unchanged.

    Returns:
        a new graph; box nodes have ``kind='group'``, ``op='group'``, ``count`` = merged nodes,
        and the value/shape of the group's last (output) node.
    """
    if len(graph.nodes) <= max_nodes:
        return graph
    if group_of is None:
        def group_of(n: GraphNode):
            if n.op != "leaf":
                return n.group
            if n.kind == "constant":  # a number joins the box of the op that uses it
                kids = graph.children(n.id)
                return graph.node(kids[0]).group if kids else None
            return None
    members: dict[str, list[GraphNode]] = defaultdict(list)
    for n in graph.nodes:
        g = group_of(n)
        if g is not None:
            members[g].append(n)
    new_id = max(n.id for n in graph.nodes) + 1
    mapping: dict[int, int] = {}
    nodes: list[GraphNode] = []
    emitted: set[int] = set()
    box_of: dict[str, GraphNode] = {}
    for g, ms in members.items():
        last = ms[-1]
        box = GraphNode(new_id, f"{g} ({len(ms)} ops)", "group", "group", last.shape, last.value, g,
                        last.expr, count=len(ms))
        box_of[g] = box
        for m in ms:
            mapping[m.id] = new_id
        new_id += 1
    for n in graph.nodes:
        if n.id in mapping:
            box = box_of[group_of(n)]
            if box.id not in emitted:
                emitted.add(box.id)
                nodes.append(box)
        else:
            mapping[n.id] = n.id
            nodes.append(n)
    edges: list[GraphEdge] = []
    seen: set[tuple[int, int]] = set()
    for e in graph.edges:
        s, d = mapping[e.src], mapping[e.dst]
        if s != d and (s, d) not in seen:
            seen.add((s, d))
            edges.append(GraphEdge(s, d, e.arg))
    return Graph(nodes, edges, mapping[graph.output])


def composite_graph(g: Graph) -> tuple[Graph, dict[int, int], set[int]]:
    """``g`` with each composite as one node (see :func:`collapse_composites`).

    Returns (graph, box_of: member id -> composite node id, inside: the hidden member ids).
    """
    box_of: dict[int, int] = {}
    for c in g.composites:
        for m in c.members:
            box_of[m] = c.output
    inside = {m for c in g.composites for m in c.members if m != c.output}
    nodes = []
    for n in g.nodes:
        if n.id in inside:
            continue
        if n.composite is not None and n.id == g.composites[n.composite].output:
            c = g.composites[n.composite]
            n = replace(n, op=c.name, composite=None)
        nodes.append(n)
    edges: list[GraphEdge] = [e for e in g.edges if e.dst not in box_of]  # operands' edges replace these
    for c in g.composites:
        for k, a in enumerate(c.args):
            if isinstance(a, int) and not isinstance(a, bool) and a not in inside:
                edges.append(GraphEdge(a, c.output, k))
            elif not isinstance(a, int):  # a number: shown as a literal operand
                lit = GraphNode(-(len(nodes) + 1), literal_name(a), "leaf", "constant", [], a)
                nodes.append(lit)
                edges.append(GraphEdge(lit.id, c.output, k))
    order = {n.id: i for i, n in enumerate(g.nodes)}
    edges.sort(key=lambda e: (order.get(e.dst, -1), e.arg))
    return Graph(nodes, edges, g.output), box_of, inside


def collapse_composites(trace: Trace) -> Trace:
    """The trace with each composite op (``tanh(y)``, ``softmax(x)``, ``a - b`` on tensors) drawn as one node.

    The engine records primitives; the parser notes which primitives one typed operation made
    (``Graph.composites``). Here they become one node that keeps the id, name and value of the
    composite's result and reads ``v2 = tanh(y)``; its operands are its parents. The events are the
    engine's own, renamed: forward steps inside a composite are dropped except its result's; in the
    backward pass the result's visit stays, a contribution sent from inside to an operand is sent by
    the composite node, and sends, sums and visits between the composite's own primitives are
    hidden (expand the composite to see them). Backward steps left empty disappear.
    """
    g = trace.graph
    if not g.composites:
        return trace
    graph, box_of, inside = composite_graph(g)
    outputs = {c.output for c in g.composites}
    forward = []
    for st in trace.forward:
        if st.node in inside:
            continue
        if st.node in outputs:
            c = g.composites[g.node(st.node).composite]
            ins = [a for a in c.args if isinstance(a, int) and not isinstance(a, bool)]
            st = replace(st, op=c.name, inputs=ins)
        forward.append(st)
    backward = []
    for e in trace.backward:
        if e.kind == "visit" and e.node in inside:
            continue
        if e.kind == "send":
            if e.parent in inside:
                continue
            e = replace(e, node=box_of.get(e.node, e.node))
        elif e.kind in ("accumulate",) and e.node in inside:
            continue
        elif e.kind == "lost" and e.node in inside:
            e = replace(e, node=box_of[e.node])
        backward.append(e)
    adjoints = {k: v for k, v in trace.adjoints.items() if k not in inside}
    return replace(trace, graph=graph, forward=forward, backward=backward, adjoints=adjoints)


MAX_DRAWN = 100  # nodes a graph figure shows before consecutive statements are boxed together


def collapse_big(trace: Trace, graph: Graph, max_nodes: int = MAX_DRAWN) -> tuple[Trace, Graph]:
    """Box consecutive operations of a big graph so that at most about ``max_nodes`` nodes are drawn.

    Operations are taken in execution order; those of one statement stay together (a statement is
    never split), and consecutive statements are boxed into blocks named after their first and last
    result (``v12 … v20 (23 ops)``). Inputs stay separate. The trace's events are renamed onto the
    boxes (a box is active whenever one of its operations is); edges inside a box disappear.

    Returns (trace, graph) unchanged when the graph is small enough.
    """
    if len(graph.nodes) <= max_nodes:
        return trace, graph
    drawn = {n.id for n in graph.nodes}
    ops = [st.node for st in trace.forward if st.node in drawn]
    units: list[list[int]] = []
    for nid in ops:
        grp = graph.node(nid).group
        if units and grp is not None and graph.node(units[-1][-1]).group == grp:
            units[-1].append(nid)
        else:
            units.append([nid])
    leaves = sum(1 for n in graph.nodes if n.op == "leaf")
    room = max(4, max_nodes - leaves)
    per_block = max(1, -(-len(units) // room))
    block_of: dict[int, str] = {}
    for b in range(0, len(units), per_block):
        members = [m for u in units[b:b + per_block] for m in u]
        if len(members) == 1:
            continue
        first, last = graph.node(members[0]), graph.node(members[-1])
        label = f"{first.name} … {last.name}"
        for m in members:
            block_of[m] = label
    boxed = collapse_groups(graph, lambda n: block_of.get(n.id), max_nodes=0)
    box_by_label = {n.group: n.id for n in boxed.nodes if n.kind == "group"}
    for n in boxed.nodes:
        if n.kind == "group":
            n.name = f"{n.group} ({n.count} ops)"
    box_of = {nid: box_by_label[label] for nid, label in block_of.items()}

    def to(nid):
        return box_of.get(nid, nid)

    forward = [replace(st, node=to(st.node), inputs=[to(p) for p in st.inputs if to(p) != to(st.node)])
               for st in trace.forward]
    backward = []
    for e in trace.backward:
        node, parent = to(e.node), (None if e.parent is None else to(e.parent))
        if e.kind == "send" and parent == node:
            continue  # a contribution inside a box
        if e.kind == "accumulate" and e.node in box_of:
            continue  # a sum inside a box
        backward.append(replace(e, node=node, parent=parent))
    return replace(trace, forward=forward, backward=backward, adjoints={}), boxed
