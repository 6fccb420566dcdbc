"""Layered layout of a DAG (layers by longest path from the inputs, barycenter order within a
layer) and collapsing of node groups into boxes for big graphs."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from engine.explain.graph import Graph, GraphEdge, GraphNode


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
