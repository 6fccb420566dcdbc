"""Activation recomputation (checkpointing): trade forward work for the memory the backward pass keeps.

Reverse mode keeps every value a VJP will read until the backward pass reaches it (the notes' 2L − 1
buffers for an MLP). :func:`checkpoint` runs a segment without recording it and keeps only the
segment's inputs; its backward recomputes the segment (recording it this time) and backpropagates
through the copy. :func:`run_layers` applies the three policies the lecture compares:

* ``keep_all``: the ordinary graph (L layer calls, every activation kept);
* ``every`` / ``sqrt``: a checkpoint every k layers (k = round(√L) for ``sqrt``): the k-layer segments'
  inputs are kept, one segment at a time is recomputed in backward (2L layer calls);
* ``recompute_all``: keep only the network's input; the backward of layer i recomputes layers 1..i−1
  from it (L + L(L+1)/2 layer calls, one activation alive at a time).

A segment may use tensors that require grad through its closure (a layer's weights): they are found
while the segment runs and become inputs of the recorded op, so their gradients flow as usual.
A segment holding random ops (dropout) is refused: its recomputation would draw another mask.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

from .autodiff import derivatives_at
from .tensor import Op, Tensor, apply, is_grad_enabled, no_grad, releasing, set_grad_enabled, tensor, trace_ops

MODES = ("keep_all", "every", "sqrt", "recompute_all")


class _Segment:
    """A recorded checkpoint's parameters: what to recompute, and how many of the op's inputs are the
    segment's arguments (the rest are tensors its closure reads)."""

    __slots__ = ("fns", "n_args", "result", "chain")

    def __init__(self, fns: Sequence[Callable], n_args: int, result, chain: bool):
        self.fns, self.n_args, self.result, self.chain = list(fns), n_args, result, chain


def _chain(fns: Sequence[Callable], *args):
    """``fns[-1](...fns[1](fns[0](*args)))``; the first argument alone when there are no fns."""
    out = fns[0](*args) if fns else args[0]
    for f in fns[1:]:
        out = f(out)
    return out


def _fresh(x: Tensor, requires_grad: bool) -> Tensor:
    t = Tensor._make(x._data, x.backend)
    t.requires_grad = requires_grad
    return t


def _run_unrecorded(fns: Sequence[Callable], args: Sequence[Tensor]):
    """Run the segment under ``no_grad``; return its output and the tensors requiring grad it read from
    outside (its closure's parameters), refusing random ops and closure tensors that have a history."""
    arg_ids = {a.unique_id for a in args}
    captured: dict[int, Tensor] = {}
    random_ops: list[str] = []

    def hook(op, inputs, params, out):
        if op.random:
            random_ops.append(op.name)
        for t in inputs:
            if isinstance(t, Tensor) and t.requires_grad and t.unique_id not in arg_ids:
                captured.setdefault(t.unique_id, t)

    with no_grad(), trace_ops(hook):
        out = _chain(fns, *[_fresh(a, False) for a in args])
    if random_ops:
        raise ValueError(f"checkpoint: the segment runs random op(s) {sorted(set(random_ops))}; recomputing it "
                         "in backward would draw other random numbers, so it cannot be checkpointed")
    for t in captured.values():
        if t._history is not None:
            raise ValueError("checkpoint: the segment reads a tensor computed outside it that requires grad; "
                             "pass that tensor as an argument of checkpoint(fn, ...)")
    return out, list(captured.values())


class Checkpoint(Op):
    """A recorded segment: forward ran unrecorded; the VJP recomputes it with a graph and walks that graph.

    ``params`` is a :class:`_Segment`. With ``chain`` (recompute-all) the segment is a chain of layers and
    the VJP recomputes each layer's input from the segment's input, one layer at a time, last first.
    """

    name = "checkpoint"
    formula = "recompute the segment from its kept inputs, then run its VJPs"

    @staticmethod
    def forward(ctx, *arrays):
        seg = ctx.params
        out, seg.result = seg.result, None   # computed while the parameters were found
        return out

    @classmethod
    def vjp(cls, ctx, g):
        if is_grad_enabled():
            raise NotImplementedError("checkpoint: backward(create_graph=True) through a recomputed segment is "
                                      "not supported")
        seg = ctx.params
        inputs = ctx.inputs
        args, captured = inputs[:seg.n_args], list(inputs[seg.n_args:])
        if not seg.chain:
            leaves = [_fresh(a, a.requires_grad) for a in args]
            with set_grad_enabled(True):
                out = seg.fns[0](*leaves)
            with releasing():  # the recomputed graph is walked once: free it as it goes, as backward() does
                found = derivatives_at(out, g, leaves + captured)
            return tuple(found.get(t.unique_id) for t in leaves + captured)
        totals: dict[int, Tensor] = {}
        for i in range(len(seg.fns) - 1, -1, -1):
            with no_grad():                      # layer i's input, recomputed from the kept one
                leaf = _fresh(_chain(seg.fns[:i], args[0]), True)
            with set_grad_enabled(True):
                out = seg.fns[i](leaf)
            with releasing():
                found = derivatives_at(out, g, [leaf] + captured)
            for t in captured:
                d = found.get(t.unique_id)
                if d is not None:
                    prev = totals.get(t.unique_id)
                    totals[t.unique_id] = d if prev is None else prev + d
            g = found[leaf.unique_id]
        return (g if args[0].requires_grad else None,) + tuple(totals.get(t.unique_id) for t in captured)


def checkpoint(fn: Callable[..., Tensor], *args) -> Tensor:
    """``fn(*args)`` keeping only ``args`` for the backward pass, which recomputes ``fn`` (PyTorch's
    ``torch.utils.checkpoint``). Tensors requiring grad that ``fn`` reads from its closure get gradients.

    Raises:
        ValueError: ``fn`` runs a random op, or reads a non-leaf tensor requiring grad from its closure.
    """
    args = tuple(a if isinstance(a, Tensor) else tensor(a) for a in args)
    return _record([fn], args, chain=False)


def _record(fns, args, chain: bool) -> Tensor:
    if not is_grad_enabled() or args[0].backend.deferred:
        return _chain(fns, *args)
    out, captured = _run_unrecorded(fns, args)
    if not (captured or any(a.requires_grad for a in args)):
        return out
    return apply(Checkpoint, tuple(args) + tuple(captured), _Segment(fns, len(args), out._data, chain))


def recompute_all(fns: Sequence[Callable[[Tensor], Tensor]], x: Tensor) -> Tensor:
    """The chain ``fns`` applied to ``x`` keeping only ``x``: the backward of layer i recomputes its input from
    ``x`` (quadratic forward work, one activation alive at a time)."""
    return _record(list(fns), (x,), chain=True) if fns else x


def run_layers(fns: Sequence[Callable[[Tensor], Tensor]], x: Tensor, mode: str = "keep_all",
               every: int | None = None) -> Tensor:
    """Apply the layers ``fns`` to ``x`` under a memory policy ``mode`` (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {MODES}")
    fns = list(fns)
    if mode == "keep_all":
        return _chain(fns, x)
    if mode == "recompute_all":
        return recompute_all(fns, x)
    k = sqrt_segment(len(fns)) if mode == "sqrt" else int(every or 0)
    if k < 1:
        raise ValueError(f"every must be at least 1, got {every!r}")
    for s in range(0, len(fns), k):
        x = _record([functools.partial(_chain, fns[s:s + k])], (x,), chain=False)
    return x


def sqrt_segment(depth: int) -> int:
    """Layers per segment for "a checkpoint every √L layers"."""
    return max(1, round(math.sqrt(depth)))
