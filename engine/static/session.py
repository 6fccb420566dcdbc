"""Running a static graph: ``Session().run(fetches, feed_dict)``.

Only the nodes the fetches depend on are evaluated, in topological (creation) order:
placeholders take their value from the feed, variables and constants from their stored values,
op nodes run the op's own ``forward`` on the graph's real backend. Training ops (from
``GradientDescentOptimizer.minimize``) compute their new values during the run and assign them
at its end, so everything fetched in the same run sees the values from before the update.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .graph import Graph, Node, get_default_graph, tensor_to_node
from .symbolic import Abstract


def flatten(structure) -> tuple[list, Callable[[list], Any]]:
    """The leaves of nested lists / tuples / dicts, and a function that rebuilds the structure from
    new values of the leaves (given in the same order)."""
    leaves: list = []

    def build(f):  # a function taking the values of f's leaves from an iterator
        if isinstance(f, dict):
            parts = {k: build(v) for k, v in f.items()}
            return lambda it: {k: p(it) for k, p in parts.items()}
        if isinstance(f, (list, tuple)):
            parts = [build(x) for x in f]
            return lambda it: (tuple if type(f) is tuple else list)(p(it) for p in parts)
        leaves.append(f)
        return next

    rebuild = build(structure)
    return leaves, lambda vals: rebuild(iter(vals))


class UnfedPlaceholderError(KeyError):
    """A placeholder the fetches need was not given a value in ``feed_dict``."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class TrainOp:
    """An operation that, when run, assigns new values to variables (returned by ``minimize``)."""

    def __init__(self, graph: Graph, updates: list[Node], name: str):
        self.graph = graph
        self.updates = updates
        self.name = name

    def __repr__(self) -> str:
        return f"<TrainOp {self.name!r} updating {[u.inputs[0].name for u in self.updates]}>"


class Session:
    """Evaluates fetches of one graph (the default graph unless given)."""

    def __init__(self, graph: Graph | None = None):
        self.graph = graph if graph is not None else get_default_graph()
        self.last_evaluated: list[int] = []   # node ids evaluated by the last run, in order

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    # --- fetches
    def _node(self, f) -> Node:
        if isinstance(f, str):
            return self.graph.get(f)
        node = tensor_to_node(f)
        if node.graph is not self.graph:
            raise ValueError(f"fetch {node.name!r} belongs to graph '{node.graph.name}', "
                             f"not to this session's graph '{self.graph.name}'")
        return node

    def fetched_nodes(self, fetches) -> list[Node]:
        """The nodes ``fetches`` name (a training op's update nodes)."""
        roots: list[Node] = []
        for f in flatten(fetches)[0]:
            roots.extend(f.updates if isinstance(f, TrainOp) else [self._node(f)])
        return roots

    def needed_nodes(self, fetches, feed_dict: dict | None = None) -> list[Node]:
        """The nodes a run of ``fetches`` evaluates, in order (fed nodes are not evaluated)."""
        fed = {self._node(k).id for k in (feed_dict or {})}
        seen: set[int] = set()
        stack = self.fetched_nodes(fetches)
        while stack:
            n = stack.pop()
            if n.id not in seen:
                seen.add(n.id)
                if n.id not in fed:
                    stack.extend(n.inputs)
        return [n for n in self.graph.nodes if n.id in seen and n.id not in fed]

    # --- running
    def run(self, fetches, feed_dict: dict | None = None):
        """Evaluate ``fetches`` (a tensor, node, name or TrainOp, or a list / tuple / dict of them).

        Returns:
            NumPy arrays in the structure of ``fetches`` (None for a TrainOp).

        Raises:
            UnfedPlaceholderError: a placeholder that the fetches need is missing from ``feed_dict``.
            ValueError: a fed value has the wrong shape, or a fetch is from another graph.
        """
        be = self.graph.backend
        leaves, rebuild = flatten(fetches)
        values: dict[int, Any] = {}
        for key, val in (feed_dict or {}).items():
            node = self._node(key)
            values[node.id] = self._feed_value(node, val)
        order = self.needed_nodes(fetches, feed_dict)
        for node in order:
            if node.kind == "placeholder":
                wanted = ", ".join(repr(f.name if isinstance(f, (TrainOp, Node)) else
                                        f if isinstance(f, str) else self._node(f).name) for f in leaves)
                raise UnfedPlaceholderError(
                    f"placeholder {node.name!r} (shape {node.shape}, {node.dtype.name}) is needed to compute "
                    f"{wanted} but was not fed: pass it in feed_dict={{{node.name}: value}}")
        assignments = []
        for node in order:
            kind = node.kind
            if kind == "op":
                values[node.id] = node.op.forward(node.run_ctx, *[values[i.id] for i in node.inputs])
            elif kind == "variable":
                values[node.id] = node.state.value
            elif kind == "constant":
                values[node.id] = node.value
            elif kind == "update":
                var, grad = node.inputs
                new = be.binary("sub", values[var.id], be.binary("mul", values[grad.id], node.lr))
                values[node.id] = new
                assignments.append((var, new))
        for var, new in assignments:
            var.state.value = new
        self.last_evaluated = [n.id for n in order]
        return rebuild([None if isinstance(f, TrainOp) else np.array(be.to_numpy(values[self._node(f).id]))
                        for f in leaves])

    def _feed_value(self, node: Node, val):
        be = self.graph.backend
        if isinstance(val, Tensor):
            if isinstance(val._data, Abstract):
                raise ValueError(f"cannot feed {node.name!r} with a static-graph tensor; feed a value")
            val = val.numpy()
        arr = np.asarray(val)
        if tuple(arr.shape) != node.shape:
            raise ValueError(f"fed value for {node.name!r} has shape {tuple(arr.shape)}, "
                             f"but the node has shape {node.shape}")
        return be.array(arr, node.dtype)


def evaluated_names(session: Session) -> list[str]:
    """Names of the nodes the session's last run evaluated, in order."""
    return [session.graph.nodes[i].name for i in session.last_evaluated]
