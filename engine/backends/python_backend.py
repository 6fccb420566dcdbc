"""Pure-Python backend: plain loops over strided storage (the teaching reference).

Every kernel walks multi-indices and turns them into storage positions with the index maths of
:mod:`engine.tensor_data`. It is slow; its worth is that it proves strides, broadcasting and views
right, because the NumPy backend must give the same numbers. NumPy only converts data in and out.
"""
from __future__ import annotations

import array
import math
import random

import numpy as np

from ..dtypes import DType, bool_, float32, float64, int64, result_dtype
from ..tensor_data import (IndexingError, TensorData, all_indices, broadcast_shape, matmul_shape, prod,
                           strides_from_shape)
from .base import COMPARISONS, INT_UNARY_OPS, Backend, ThreadRandom

_TYPECODE_DTYPE = {"d": float64, "f": float32, "q": int64, "b": bool_}


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x):
    if x > 0:
        return math.log(x)
    if x == 0:
        return -math.inf
    return math.nan


def _div(x, y):
    try:
        return x / y
    except ZeroDivisionError:
        if x == 0 or x != x:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _pow(x, y):
    try:
        r = x ** y
    except (ZeroDivisionError, OverflowError):
        return math.inf
    return math.nan if isinstance(r, complex) else r


def _periodic(f):
    return lambda x: f(x) if math.isfinite(x) else math.nan  # math.sin(inf) raises; NumPy gives nan


def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _sqrt(x):
    return math.sqrt(x) if x >= 0 else math.nan


def _maximum(x, y):
    if x != x or y != y:
        return math.nan
    return x if x >= y else y


_UNARY = {
    "neg": lambda x: -x, "exp": _exp, "log": _log, "reciprocal": lambda x: _div(1.0, x),
    "relu": lambda x: x if x > 0 else 0.0 * x if x == x else x, "step": lambda x: 1.0 if x > 0 else 0.0,
    "sqrt": _sqrt, "sigmoid": _sigmoid,
    "sin": _periodic(math.sin), "cos": _periodic(math.cos), "tan": _periodic(math.tan),
}
_BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": _div,
    "pow": _pow, "maximum": _maximum,
    "lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y,
}


def _promoted(a: TensorData, b: TensorData) -> str:
    return result_dtype(_TYPECODE_DTYPE[a.typecode], _TYPECODE_DTYPE[b.typecode]).typecode


def _new(values, shape, typecode) -> TensorData:
    if typecode == "q":
        values = [int(v) for v in values]
    elif typecode == "b":
        values = [1 if v else 0 for v in values]
    return TensorData(array.array(typecode, values), tuple(shape))


class PythonBackend(Backend):
    name = "python"

    def __init__(self) -> None:
        self._random = ThreadRandom(random.Random)

    @property
    def rng(self) -> random.Random:
        """This thread's generator."""
        return self._random.generator

    # --- creation / conversion ------------------------------------------
    def array(self, data, dtype: DType):
        if isinstance(data, TensorData):
            return _new(data.values(), data.shape, dtype.typecode)
        arr = np.asarray(data, dtype=dtype.numpy)
        return _new(arr.reshape(-1).tolist(), arr.shape, dtype.typecode)

    def to_numpy(self, a: TensorData):
        dt = _TYPECODE_DTYPE[a.typecode].numpy
        return np.array(a.values(), dtype=dt).reshape(a.shape)

    def shape(self, a):
        return a.shape

    def dtype(self, a):
        return _TYPECODE_DTYPE[a.typecode]

    def full(self, shape, value, dtype):
        return _new([value] * prod(shape), shape, dtype.typecode)

    def uniform(self, shape, dtype):
        return _new([self.rng.random() for _ in range(prod(shape))], shape, dtype.typecode)

    def seed(self, seed):
        self._random.seed(seed)

    def astype(self, a, dtype):
        if a.typecode == dtype.typecode:
            return a
        return _new(a.values(), a.shape, dtype.typecode)

    def item(self, a):
        if a.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {a.shape}")
        v = a.storage[next(a.positions())]
        return bool(v) if a.typecode == "b" else v

    # --- kernels -----------------------------------------------------------
    def unary(self, op, a):
        f = _UNARY[op]
        st = a.storage
        # integers stay integers under the kernels declared keeps_int (as on NumPy and CUDA)
        tc = a.typecode if a.typecode in "df" else "q" if op in INT_UNARY_OPS else "d"
        return _new([f(st[p]) for p in a.positions()], a.shape, tc)

    def binary(self, op, a, b):
        f = _BINARY[op]
        shape = broadcast_shape(a.shape, b.shape)
        ea, eb = a.expand(shape), b.expand(shape)  # stride-0 views: broadcasting is index maths
        sa, sb = ea.storage, eb.storage
        vals = [f(sa[p], sb[q]) for p, q in zip(ea.positions(), eb.positions())]
        tc = "b" if op in COMPARISONS else _promoted(a, b)
        if op == "div" and tc in "bq":
            tc = "d"
        return _new(vals, shape, tc)

    def where(self, cond, a, b):
        shape = broadcast_shape(cond.shape, a.shape, b.shape)
        ec, ea, eb = cond.expand(shape), a.expand(shape), b.expand(shape)
        vals = [ea.storage[p] if ec.storage[c] else eb.storage[q]
                for c, p, q in zip(ec.positions(), ea.positions(), eb.positions())]
        return _new(vals, shape, _promoted(a, b))

    def reduce(self, op, a, axes, keepdim):
        axes = tuple(sorted(ax % len(a.shape) for ax in axes)) if a.shape else ()
        kept_shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        n_out = prod(kept_shape)
        if op == "sum":
            acc = [0.0 if a.typecode in "df" else 0] * n_out
            combine = lambda x, y: x + y  # noqa: E731
        elif op == "max":
            if any(a.shape[i] == 0 for i in axes):
                raise ValueError("max of an empty dimension")
            acc = [None] * n_out
            combine = lambda x, y: y if x is None or y > x or y != y else x  # noqa: E731
        else:
            raise ValueError(f"unknown reduction {op!r}")
        # the output's strides with 0 on the reduced axes send every element to its output slot
        out_strides = [0 if i in axes else s for i, s in enumerate(strides_from_shape(kept_shape))]
        st = a.storage
        for index, pos in zip(all_indices(a.shape), a.positions()):
            o = sum(ix * s for ix, s in zip(index, out_strides))
            acc[o] = combine(acc[o], st[pos])
        tc = a.typecode if a.typecode in "df" else "q"
        res = _new(acc, kept_shape, tc)
        if not keepdim:
            res = res.view(tuple(s for i, s in enumerate(a.shape) if i not in axes))
        return res

    def matmul(self, a, b):
        batch, m, k, n, out_shape = matmul_shape(a.shape, b.shape)
        # a vector operand is a (1, k) row or a (k, 1) column here; out_shape drops that dim again
        ea = (self.reshape(a, (m, k)) if a.ndim == 1 else a).expand(batch + (m, k))
        eb = (self.reshape(b, (k, n)) if b.ndim == 1 else b).expand(batch + (k, n))
        vals = []
        for bi in all_indices(batch):
            for i in range(m):
                for j in range(n):
                    s = 0.0
                    for t in range(k):
                        s += ea.get(bi + (i, t)) * eb.get(bi + (t, j))
                    vals.append(s)
        return _new(vals, batch + (m, n), _promoted(a, b)).view(out_shape)

    def gather(self, table, indices):
        n = table.shape[0]
        vals = []
        for r in (int(v) for v in indices.values()):
            if not -n <= r < n:
                raise IndexingError(f"index {r} out of range for {n} rows")
            vals.extend(table.basic_index(r).values())
        return _new(vals, indices.shape + table.shape[1:], table.typecode)

    def scatter_add(self, shape, indices, src):
        out = _new([0] * prod(shape), shape, src.typecode)
        row = prod(shape[1:])
        src_vals = src.values()
        for i, r in enumerate(int(v) for v in indices.values()):
            r %= shape[0]
            for j in range(row):
                out.storage[r * row + j] += src_vals[i * row + j]
        return out

    # --- layout ----------------------------------------------------------------
    def buffer(self, a):
        return id(a.storage), len(a.storage) * a.storage.itemsize

    def permute(self, a, order):
        return a.permute(order)

    def view(self, a, shape):
        return a.view(tuple(shape))

    def reshape(self, a, shape):
        if prod(shape) != a.size:
            raise IndexingError(f"cannot reshape {a.shape} to {tuple(shape)}")
        return (a if a.is_contiguous() else a.contiguous()).view(tuple(shape))

    def expand(self, a, shape):
        return a.expand(tuple(shape))

    def contiguous(self, a):
        return a.contiguous()

    def is_contiguous(self, a):
        return a.is_contiguous()

    def strides(self, a):
        return a.strides

    def index(self, a, key):
        return a.basic_index(key)

    def index_add(self, shape, key, src):
        out = _new([0] * prod(shape), shape, src.typecode)
        target = out.basic_index(key)
        if target.shape != src.shape:
            src = src.expand(target.shape)
        for p, v in zip(target.positions(), src.values()):
            out.storage[p] += v
        return out
