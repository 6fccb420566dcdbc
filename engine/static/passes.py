"""Graph passes: dead-node pruning for a fetch, constant folding, node-count reports.

A pass never edits its input graph: it returns a :class:`PassResult` with a new graph (whose
variables share their state with the original, so training either one trains both), the map
from old nodes to new ones, and the node counts before and after.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Graph, Node, NodeCounts, tensor_to_node
from .session import Session, TrainOp


@dataclass
class PassResult:
    """A transformed copy of a graph."""

    name: str
    graph: Graph
    mapping: dict[int, Node]          # old node id -> new node (absent: removed)
    before: NodeCounts
    after: NodeCounts
    folded: list[str] = field(default_factory=list)  # nodes computed at fold time (chains included)

    def __getitem__(self, fetch) -> "Node | TrainOp":
        """The new graph's counterpart of an old tensor / node / training op."""
        if isinstance(fetch, TrainOp):
            return TrainOp(self.graph, [self.mapping[u.id] for u in fetch.updates], fetch.name)
        node = tensor_to_node(fetch)
        try:
            return self.mapping[node.id]
        except KeyError:
            raise KeyError(f"node {node.name!r} was removed by {self.name}") from None


def _copy(new: Graph, n: Node, inputs: list[Node]) -> Node:
    c = Node(new, n.kind, n.name, n.shape, n.dtype, inputs, n.op, n.params, n.role)
    c.run_ctx, c.value, c.state = n.run_ctx, n.value, n.state
    c.trainable, c.lr, c.note = n.trainable, n.lr, n.note
    new._names[n.name] += 1
    return new._append(c)


def _subgraph(graph: Graph, keep: set[int], suffix: str) -> tuple[Graph, dict[int, Node]]:
    new = Graph(backend=graph.backend, name=f"{graph.name}/{suffix}")
    mapping: dict[int, Node] = {}
    for n in graph.nodes:
        if n.id in keep:
            mapping[n.id] = _copy(new, n, [mapping[i.id] for i in n.inputs])
    return new, mapping


def prune(graph: Graph, fetches) -> PassResult:
    """Keep only the nodes ``fetches`` depend on (dead-node elimination)."""
    keep = {n.id for n in Session(graph).needed_nodes(fetches)}
    new, mapping = _subgraph(graph, keep, "pruned")
    return PassResult("dead-node pruning", new, mapping, graph.counts(), new.counts())


def fold_constants(graph: Graph, fetches=None) -> PassResult:
    """Replace every op whose inputs are all constants by a constant holding its value.

    Folding repeats through chains (a folded node is a constant for its consumers); random ops
    are never folded. Constants left without consumers are then removed, and with ``fetches``
    the result is also pruned to what they need.
    """
    be = graph.backend
    staged = Graph(backend=be, name=f"{graph.name}/folded")
    mapping: dict[int, Node] = {}
    folded: list[str] = []
    for n in graph.nodes:
        ins = [mapping[i.id] for i in n.inputs]
        if n.kind == "op" and not n.op.random and ins and all(i.kind == "constant" for i in ins):
            c = Node(staged, "constant", n.name, n.shape, n.dtype, role=n.role)
            c.value = n.op.forward(n.run_ctx, *[i.value for i in ins])
            c.note = f"folded: {n.label}({', '.join(i.name for i in ins)})"
            staged._names[n.name] += 1
            mapping[n.id] = staged._append(c)
            folded.append(n.name)
        else:
            mapping[n.id] = _copy(staged, n, ins)
    # drop what nothing uses any more: keep the fetches (or the original sinks) and their inputs
    if fetches is not None:
        roots = [mapping[n.id] for n in Session(graph).fetched_nodes(fetches)]
    else:
        consumed = {i.id for n in graph.nodes for i in n.inputs}
        roots = [mapping[n.id] for n in graph.nodes if n.id not in consumed]
    live = {n.id for n in Session(staged).needed_nodes(roots)}
    final, remap = _subgraph(staged, live, "")
    final.name = f"{graph.name}/folded"
    composed = {old: remap[new.id] for old, new in mapping.items() if new.id in remap}
    return PassResult("constant folding", final, composed, graph.counts(), final.counts(), folded)


def node_count_report(graph: Graph, fetches=None) -> list[dict]:
    """Rows (stage, counts...) for the graph as built, pruned for ``fetches``, and constant-folded."""
    rows = [{"stage": "as built", **graph.counts().as_dict()}]
    if fetches is not None:
        rows.append({"stage": "pruned for the fetch", **prune(graph, fetches).after.as_dict()})
    rows.append({"stage": "constant-folded" + (" + pruned" if fetches is not None else ""),
                 **fold_constants(graph, fetches).after.as_dict()})
    return rows
