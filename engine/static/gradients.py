"""Symbolic gradients: ``gradients(ys, xs)`` adds the backward pass to the graph as nodes.

It runs the *same* reverse walk as eager mode (``engine.autodiff.topological_sort`` and
``propagate``, and the ops' own VJP rules, written with engine ops), where "takes a gradient" means
"lies on a path from an x". Because the graph's tensors live on a symbolic backend, every VJP op
becomes a gradient node instead of a number. ``GradientDescentOptimizer(lr).minimize(loss)`` adds
one update node per variable and returns the training op.
"""
from __future__ import annotations

import weakref
from typing import Sequence

from .. import autodiff, ops
from ..tensor import History, Tensor
from .graph import Graph, Node, tensor_to_node
from .session import TrainOp


def _graph_of(t: Tensor) -> Graph:
    return tensor_to_node(t).graph


def gradients(ys, xs, grad_ys=None) -> list[Tensor | None]:
    """Add nodes computing d(sum of ys)/d x for every x in ``xs`` (placeholders, variables or intermediate
    results of the ys' graph); ``grad_ys`` are the ys' upstream gradients (default: ones).

    Returns:
        One gradient tensor per x (a list even for a single x, as TensorFlow does), or None
        for an x that no y depends on.
    """
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    if not ys:
        raise ValueError("gradients() needs at least one y")
    graph = _graph_of(ys[0])
    for t in ys + xs:
        if _graph_of(t) is not graph:
            raise ValueError("gradients(): all tensors must belong to the same graph")
    if grad_ys is not None:
        grad_ys = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
        if len(grad_ys) != len(ys):
            raise ValueError("gradients(): grad_ys needs one entry per y")

    # the tensors the ys depend on, and which of them lie on a path from some x
    ancestors: dict[int, Tensor] = {}
    stack = list(ys)
    while stack:
        t = stack.pop()
        if t.unique_id in ancestors:
            continue
        ancestors[t.unique_id] = t
        if t._history is not None:
            stack.extend(t._history.inputs)
    x_ids = {x.unique_id for x in xs}
    on_path: dict[int, bool] = {}
    for t in sorted(ancestors.values(), key=lambda t: tensor_to_node(t).id):
        h = t._history
        on_path[t.unique_id] = t.unique_id in x_ids or (
            h is not None and h.op.differentiable and t.dtype.is_floating
            and any(on_path.get(i.unique_id, False) for i in h.inputs))

    walk = _PathWalk(on_path)
    seeds: dict[int, Tensor] = {}
    roots = []
    with graph._building("gradient"):
        for i, y in enumerate(ys):
            if not on_path[y.unique_id]:
                continue
            seed = grad_ys[i] if grad_ys is not None else \
                Tensor._make(graph.symbolic.full(y.shape, 1.0, y.dtype), graph.symbolic)
            graph.node_of(seed)
            prev = seeds.get(y.unique_id)
            seeds[y.unique_id] = seed if prev is None else prev + seed
            roots.append(walk.node(y))
        # eager mode's own order and reverse walk, over the graph seen through "on a path from an x"
        results = autodiff.propagate(autodiff.topological_sort(roots), seeds, targets=x_ids, accumulate=False)
        for x in xs:  # a mixed-dtype op promotes the adjoint; each gradient keeps its x's dtype (as eager)
            r = results.get(x.unique_id)
            if r is not None and r.dtype is not x.dtype and x.dtype.is_floating:
                results[x.unique_id] = ops.cast(r, x.dtype)
    return [results.get(x.unique_id) for x in xs]


def _handle(t: Tensor, on_path: bool) -> Tensor:
    """``t`` itself, or another handle on its node that takes a gradient exactly when on the path."""
    if t.requires_grad == on_path:
        return t
    h = Tensor._make(t._data, t.backend, on_path)
    h._history, h.unique_id, h.name = t._history, t.unique_id, t.name
    return h


class _PathWalk:
    """The graph's tensors as autodiff-protocol nodes for ``gradients()``: a tensor takes a gradient
    when it lies on a path from an x (placeholders and variables carry no ``requires_grad``)."""

    def __init__(self, on_path: dict[int, bool]):
        self.on_path = on_path
        self._nodes: dict[int, _PathNode] = {}

    def node(self, t: Tensor) -> "_PathNode":
        n = self._nodes.get(t.unique_id)
        if n is None:
            n = self._nodes[t.unique_id] = _PathNode(t, self)
        return n


class _PathNode:
    __slots__ = ("tensor", "unique_id", "walk")

    def __init__(self, t: Tensor, walk: _PathWalk):
        self.tensor, self.unique_id, self.walk = t, t.unique_id, walk

    @property
    def parents(self) -> list["_PathNode"]:
        h = self.tensor._history
        return [self.walk.node(t) for t in h.inputs] if h is not None else []

    def is_leaf(self) -> bool:
        return self.tensor._history is None

    def is_constant(self) -> bool:
        return not self.walk.on_path.get(self.unique_id, False)

    def chain_rule(self, d: Tensor) -> list[tuple["_PathNode", Tensor | None]]:
        h = self.tensor._history
        on_path = self.walk.on_path
        # the VJP sees handles on the same nodes (same data, history and unique id) whose
        # requires_grad says "on a path from an x": it skips the rest, the graph stays as it is
        ctx = History(h.op, tuple(_handle(t, on_path.get(t.unique_id, False)) for t in h.inputs), h.params,
                      h.backend)
        ctx._out = weakref.ref(h) if h.op.needs_output else None  # the node is its own output
        return [(self.walk.node(t), g) for t, g in zip(h.inputs, h.op.vjp(ctx, d))]

    def accumulate_derivative(self, d: Tensor) -> None:
        raise RuntimeError("gradients() returns the adjoints of its xs; it accumulates into no .grad")


class GradientDescentOptimizer:
    """``var <- var - learning_rate * d loss / d var`` as a training op (the lecture's SGD)."""

    def __init__(self, learning_rate: float):
        if not learning_rate > 0:
            raise ValueError(f"learning rate must be positive, got {learning_rate}")
        self.learning_rate = float(learning_rate)

    def compute_gradients(self, loss: Tensor, var_list: Sequence[Tensor] | None = None) -> list[tuple]:
        """``[(gradient tensor, variable tensor)]`` for the variables the loss depends on."""
        graph = _graph_of(loss)
        if var_list is None:
            var_list = [n.tensor for n in graph.variables(trainable_only=True)]
        if not var_list:
            raise ValueError("minimize(): the graph has no trainable variables")
        for v in var_list:
            if tensor_to_node(v).kind != "variable":
                raise TypeError(f"{tensor_to_node(v).name!r} is not a variable")
        grads = gradients(loss, list(var_list))
        return [(g, v) for g, v in zip(grads, var_list) if g is not None]

    def apply_gradients(self, grads_and_vars: list[tuple], name: str = "train") -> TrainOp:
        """One update node per (gradient, variable) pair; run the returned op to apply them."""
        if not grads_and_vars:
            raise ValueError("apply_gradients(): no variable receives a gradient from this loss")
        graph = _graph_of(grads_and_vars[0][1])
        updates: list[Node] = []
        for g, v in grads_and_vars:
            var, grad = tensor_to_node(v), graph.node_of(g)
            node = Node(graph, "update", graph._unique(f"update_{var.name}"), var.shape, var.dtype,
                        [var, grad], role="update")
            node.lr = graph.backend.array(self.learning_rate, var.dtype)  # as engine.optim.SGD's constant
            updates.append(graph._append(node))
        return TrainOp(graph, updates, graph._unique(name))

    def minimize(self, loss: Tensor, var_list: Sequence[Tensor] | None = None) -> TrainOp:
        """Gradients of ``loss`` for the (trainable) variables, and the op that applies them."""
        return self.apply_gradients(self.compute_gradients(loss, var_list))
