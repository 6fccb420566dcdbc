"""PyTorch's ``torch.nn.functional``: mostly composites of ``engine.ops`` primitives, which need no
gradient rule of their own and get VJPs, JVPs, every backend and the static graph for free.
(``mean``, ``linear``, ``binary_cross_entropy`` and ``dropout`` call fused primitives.)
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from . import ops
from .dtypes import int64
from .ops import _norm_dims, exp, log, mean, relu, sigmoid, typed, where  # noqa: F401  (re-exported)
from .tensor import Tensor, as_tensor_like


@typed()
def abs(x: Tensor) -> Tensor:
    """|x| = relu(x) + relu(-x)."""
    return ops.relu(x) + ops.relu(ops.neg(x))


@typed(tensors=2)
def maximum(a: Tensor, b) -> Tensor:
    """Elementwise max (gradient to the larger input; ties go to ``a``)."""
    b = as_tensor_like(b, a)
    return ops.where(ops.compare("ge", a, b), a, b)


@typed(tensors=2)
def minimum(a: Tensor, b) -> Tensor:
    b = as_tensor_like(b, a)
    return ops.where(ops.compare("le", a, b), a, b)


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002  (PyTorch's names)
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


class MaxResult(NamedTuple):
    """What ``max(x, dim)`` returns, as ``torch.return_types.max``: a pair that unpacks
    (``values, indices = x.max(1)``) and names its parts."""

    values: Tensor
    indices: Tensor


def amax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The maximum over ``dim`` (one dim, several, or all when None): values only, as ``torch.amax``.
    Tied maxima share the gradient evenly."""
    return ops.max(x, dim, keepdim)


def max(x: Tensor, dim=None, keepdim: bool = False):  # noqa: A001  (PyTorch's name)
    """PyTorch's ``max``: with no ``dim``, the largest element (a 0-d tensor); with one ``dim``, a
    :class:`MaxResult` of ``values`` (differentiable) and ``indices`` (int64, the first of tied maxima).
    Tied maxima share the gradient evenly, as ``torch.amax`` (``torch.max(dim)`` gives it all to one).

    Raises:
        TypeError: ``dim`` is not one integer (several dims: :func:`amax`).
        IndexError: ``dim`` is out of range.
    """
    if dim is None:
        return ops.max(x, None, keepdim)
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"max(dim) takes one integer dim, got {dim!r}; for several dims use amax(x, dims)")
    dim = ops._norm_dim(int(dim), x.ndim)
    values = ops.max(x, dim, keepdim)
    indices = ops.argmax(x, dim)
    if keepdim and x.ndim:
        indices = ops.unsqueeze(indices, dim)
    return MaxResult(values, indices)


@typed()
def sqrt(x: Tensor) -> Tensor:
    """x ** 0.5."""
    return ops.pow(x, 0.5)


@typed()
def tanh(x: Tensor) -> Tensor:
    """tanh(x) = 2 sigmoid(2x) - 1 (stable for large |x|)."""
    return 2.0 * ops.sigmoid(2.0 * x) - 1.0


@typed(takes_dim=True)
def logsumexp(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) without overflow: the max is subtracted first (and added back).

    An infinite max is not subtracted (as PyTorch): all -inf gives -inf, a +inf gives +inf.
    """
    dims = _norm_dims(dim, x.ndim)
    m = ops.max(x, dims, keepdim=True).detach()
    m = ops.where(ops.compare("eq", m * 0.0, 0.0), m, 0.0)  # m * 0 is 0 exactly when m is finite
    out = ops.log(ops.sum(ops.exp(x - m), dims, keepdim=True)) + m
    return out if keepdim else ops.reshape(out, [s for i, s in enumerate(x.shape) if i not in dims])


@typed(takes_dim=True)
def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x - logsumexp(x, dim, keepdim=True)


@typed(takes_dim=True)
def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return ops.exp(log_softmax(x, dim))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weightᵀ + bias, ``weight`` of shape (out_features, in_features): the one op ``linear`` (as
    PyTorch's AddmmBackward); without a bias, or a bias of another shape, ``matmul_t`` and an add."""
    if bias is None:
        return ops.matmul_t(x, weight)
    if isinstance(bias, Tensor) and bias.shape == weight.shape[:1] and len(weight.shape) == 2:
        return ops.linear(x, weight, bias)
    return ops.matmul_t(x, weight) + bias


def embedding(indices, table: Tensor) -> Tensor:
    return ops.gather(table, indices)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1-p)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    if not training or p == 0.0:
        return x
    return ops.dropout(x, p)


def binary_cross_entropy(p: Tensor, target, reduction: str = "mean") -> Tensor:
    """-(y log p + (1 - y) log(1 - p)) with log clamped at -100 (PyTorch's rule): finite value and
    gradient at p = 0 or 1. A fused primitive (see ops.BinaryCrossEntropy).

    Raises:
        ValueError: ``target`` has another shape than ``p`` (as PyTorch: (B,) against (B, 1) would
            broadcast to a (B, B) loss).
    """
    y = as_tensor_like(target, p)
    if y.shape != p.shape:
        raise ValueError(f"binary_cross_entropy needs a target of the input's shape: input {tuple(p.shape)}, "
                         f"target {tuple(y.shape)} (reshape one of them; broadcasting would compare every "
                         f"prediction with every label)")
    return ops.binary_cross_entropy(p, y, reduction)


def binary_cross_entropy_with_logits(z: Tensor, target, reduction: str = "mean") -> Tensor:
    """BCE of sigmoid(z) computed from logits: max(z,0) - z y + log(1 + exp(-|z|)). Broadcasts, on
    purpose: the Learning problem page evaluates a grid of weights (G, N) against labels (N,)."""
    y = as_tensor_like(target, z)
    loss = ops.relu(z) - z * y + ops.log(1.0 + ops.exp(ops.neg(abs(z))))
    return _reduce(loss, reduction)


def cross_entropy(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Cross-entropy from logits (N, C) and integer class targets (N,)."""
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy needs logits of shape (N, C), got {logits.shape}")
    n, c = logits.shape
    be = logits.backend
    if not isinstance(target, Tensor):
        target = Tensor._make(be.array(np.asarray(target), int64), be)
    if target.shape != (n,):
        raise ValueError(f"cross_entropy needs targets of shape ({n},) for logits {logits.shape}, got {target.shape}")
    if not be.deferred and n:
        # an out-of-range class would silently pick a neighbouring row's entry below
        t = target.numpy()
        if t.min() < 0 or t.max() >= c:
            raise IndexError(f"cross_entropy target classes must be in [0, {c}), got {t.min()}..{t.max()}")
    logp = log_softmax(logits, dim=-1)
    # pick logp[i, target[i]]: gather rows i*C + target[i] of the flattened (N*C, 1) table
    offsets = Tensor._make(be.array(np.arange(n) * c, int64), be)
    picked = ops.gather(ops.reshape(logp, (n * c, 1)), ops.cast(ops.add(offsets, target), int64))
    loss = ops.neg(ops.reshape(picked, (n,)))
    return _reduce(loss, reduction)


def mse_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    d = pred - as_tensor_like(target, pred)
    return _reduce(d * d, reduction)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
