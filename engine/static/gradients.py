"""Symbolic gradients: ``gradients(ys, xs)`` adds the backward pass to the graph as nodes.

It runs the *same* reverse-mode traversal as eager mode (``engine.autodiff.topological_sort``
and the ops' own VJP rules, which are written with engine ops). Because the graph's tensors live
on a symbolic backend, every VJP op becomes a gradient node instead of a number: nothing is
computed until a Session runs it. ``GradientDescentOptimizer(lr).minimize(loss)`` adds one
update node per variable and returns the training op.
"""
from __future__ import annotations

from typing import Sequence

from .. import autodiff, ops
from ..tensor import Tensor
from .graph import Graph, Node, tensor_to_node
from .session import TrainOp


def _graph_of(t: Tensor) -> Graph:
    return tensor_to_node(t).graph


def gradients(ys, xs, grad_ys=None) -> list[Tensor | None]:
    """Add nodes computing d(sum of ys)/d x for every x in ``xs``; return their tensors.

    Args:
        ys: a tensor or a list of tensors of one graph.
        xs: a tensor or a list of tensors (placeholders, variables or intermediate results).
        grad_ys: optional upstream gradients for ``ys`` (default: ones).

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

    # VJP rules and the traversal read requires_grad: make it mean "on a path from an x" for now
    saved = {uid: t.requires_grad for uid, t in ancestors.items()}
    results: dict[int, Tensor] = {}
    try:
        for uid, t in ancestors.items():
            t.requires_grad = on_path[uid]
        with graph._building("gradient"):
            derivs: dict[int, Tensor] = {}
            for i, y in enumerate(ys):
                if not on_path[y.unique_id]:
                    continue
                seed = grad_ys[i] if grad_ys is not None else \
                    Tensor._make(graph.symbolic.full(y.shape, 1.0, y.dtype), graph.symbolic)
                graph.node_of(seed)
                prev = derivs.get(y.unique_id)
                derivs[y.unique_id] = seed if prev is None else prev + seed
            if len(ys) == 1:
                order = autodiff.topological_sort(ys[0])  # exactly eager mode's order
            else:
                order = sorted((t for t in ancestors.values() if on_path[t.unique_id]),
                               key=lambda t: tensor_to_node(t).id, reverse=True)
            for node in order:
                d = derivs.pop(node.unique_id, None)
                if d is None:
                    continue
                if node.unique_id in x_ids:
                    results[node.unique_id] = d
                if node.is_leaf():
                    continue
                for parent, contribution in node.chain_rule(d):
                    pid = parent.unique_id
                    prev = derivs.get(pid)
                    derivs[pid] = contribution if prev is None else prev + contribution
            for x in xs:  # a mixed-dtype op promotes the adjoint; each gradient keeps its x's dtype (as eager)
                r = results.get(x.unique_id)
                if r is not None and r.dtype is not x.dtype and x.dtype.is_floating:
                    results[x.unique_id] = ops.cast(r, x.dtype)
    finally:
        for uid, t in ancestors.items():
            t.requires_grad = saved[uid]
    return [results.get(x.unique_id) for x in xs]


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
