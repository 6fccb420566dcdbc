"""NumPy backend (the default): NumPy arrays are storage + strides already."""
from __future__ import annotations

import functools
import operator
import warnings
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype, bool_, float32, float64, int64
from ..tensor_data import IndexingError, ViewError, broadcast_shape
from .base import Backend, ThreadRandom


def _relu(a):
    out = np.maximum(a, 0)
    return out if out.dtype == a.dtype else out.astype(a.dtype)  # a bool input comes back as int64


def _step(a):
    return (a > 0).astype(a.dtype)


def _broadcast_view(a, shape: tuple):
    """``np.broadcast_to(a, shape)`` for a C-contiguous, non-empty array, built by one ndarray constructor
    (broadcast_to's Python wrapper builds an nditer per call: microseconds on every small training step).
    None otherwise: broadcast_to's case."""
    if type(a) is not np.ndarray or not a.flags.c_contiguous or not a.size or 0 in shape:
        return None
    lead = len(shape) - a.ndim
    if lead < 0:
        return None
    strides = [0] * lead
    for have, want, stride in zip(a.shape, shape[lead:], a.strides):
        if have == 1:
            strides.append(0)
        elif have == want:
            strides.append(stride)
        else:
            return None
    out = np.ndarray(shape, a.dtype, a, 0, tuple(strides))
    out.flags.writeable = False
    return out


def _matmul(a, b):
    # an inner dimension of 1 is an outer product: a broadcast multiply gives the same bits, faster than BLAS
    if a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1 and b.shape[-2] == 1:
        return np.multiply(a, b)
    return np.matmul(a, b)


def _sigmoid(a):
    # 1 / (1 + exp(-a)) overflows harmlessly to 0 for a << 0
    out = 1.0 / (1.0 + np.exp(-a))
    return out if out.dtype == a.dtype else out.astype(a.dtype)


_UNARY = {
    "relu": _relu, "step": _step, "sigmoid": _sigmoid, "neg": np.negative, "exp": np.exp, "log": np.log,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "reciprocal": np.reciprocal, "sqrt": np.sqrt,
}
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "pow": np.power, "maximum": np.maximum,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}
# Overflow / division by zero give inf / nan, which *are* the answers (the explorer flags them): NumPy's
# warnings are silenced in the engine's modules only (np.errstate would cost on every call, np.seterr
# would change the user's NumPy).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"engine(\.|$)")
_DTYPES = {np.dtype(d.numpy): d for d in (float64, float32, int64, bool_)}
_SCALARS = (float, int, np.float64)  # Python numbers (not bool) that become a float64 NumPy scalar


def _engine_promotion(out, a, b):
    """NumPy promotes float32 with int64 to float64; the engine's rule (``dtypes.result_dtype``) keeps float32."""
    if out.dtype == np.float64 and a.dtype != b.dtype and np.float64 not in (a.dtype, b.dtype) \
            and np.float32 in (a.dtype, b.dtype):
        return out.astype(np.float32)
    return out


class NdarrayLayout:
    """Layout methods shared by the backends whose arrays are NumPy-like (``xp``: NumPy or CuPy)."""

    xp: Any = np

    def buffer(self, a):
        root = a
        while isinstance(root.base, self.xp.ndarray):
            root = root.base
        return id(root), root.nbytes

    def permute(self, a, order):
        return a.transpose(order)

    def is_contiguous(self, a):
        return bool(a.flags.c_contiguous)

    def strides(self, a):
        return tuple(s // a.itemsize for s in a.strides)

    def _check_view(self, a) -> None:
        if not (a.flags.c_contiguous or a.size <= 1):
            raise ViewError(
                f"view of a non-contiguous tensor (shape {tuple(a.shape)}) is not possible: "
                "call .contiguous() first, or use reshape (which copies)")


class NumpyBackend(NdarrayLayout, Backend):
    name = "numpy"

    def __init__(self) -> None:
        self._random = ThreadRandom(np.random.default_rng)

    @property
    def rng(self) -> np.random.Generator:
        """This thread's generator."""
        return self._random.generator

    def array(self, data, dtype: DType):
        if dtype is float64 and type(data) in _SCALARS:
            return np.float64(data)  # a 0-d float64 value is a NumPy scalar (the scalar fast path)
        return np.array(data, dtype=dtype.numpy)

    def to_numpy(self, a):
        return a

    def shape(self, a):
        return a.shape

    def dtype(self, a) -> DType:
        d = _DTYPES.get(a.dtype)
        return d if d is not None else as_dtype(a.dtype)

    def full(self, shape, value, dtype: DType):
        if not shape:   # 0-d (a backward pass's seed): float64 is the scalar fast path's NumPy scalar
            return np.float64(value) if dtype is float64 else np.array(value, dtype=dtype.numpy)
        return np.full(tuple(shape), value, dtype=dtype.numpy)

    def uniform(self, shape, dtype: DType):
        return self.rng.random(tuple(shape), dtype=np.float64 if dtype.name == "float64" else np.float32)

    def seed(self, seed: int) -> None:
        self._random.seed(seed)

    def astype(self, a, dtype: DType):
        return a.astype(dtype.numpy, copy=False)

    def item(self, a):
        return a.item()

    def unary(self, op, a):
        return np.asarray(_UNARY[op](a))

    def binary(self, op, a, b):
        try:
            out = np.asarray(_BINARY[op](a, b))
        except ValueError:
            broadcast_shape(np.shape(a), np.shape(b))  # raises the engine's BroadcastError
            raise
        return out if a.dtype is b.dtype else _engine_promotion(out, a, b)

    def where(self, cond, a, b):
        try:
            out = np.where(cond, a, b)
        except ValueError:
            broadcast_shape(np.shape(cond), np.shape(a), np.shape(b))
            raise
        return out if a.dtype is b.dtype else _engine_promotion(out, a, b)

    def reduce(self, op, a, axes, keepdim):
        # the ufuncs' reductions: what np.sum / np.max call, without their Python wrappers
        if op == "sum":
            return np.asarray(np.add.reduce(a, axis=axes, keepdims=keepdim))
        if op == "max":
            return np.asarray(np.maximum.reduce(a, axis=axes, keepdims=keepdim))
        raise ValueError(f"unknown reduction {op!r}")

    def matmul(self, a, b):
        try:
            out = _matmul(a, b)
        except ValueError:
            broadcast_shape(a.shape[:-2], b.shape[:-2])  # batch dims (ops.matmul checks the inner ones)
            raise
        return out if a.dtype is b.dtype else _engine_promotion(out, a, b)

    def gather(self, table, indices):
        return table[indices]

    def scatter_add(self, shape, indices, src):
        out = np.zeros(tuple(shape), dtype=src.dtype)
        np.add.at(out, indices.reshape(-1), src.reshape((-1,) + tuple(shape[1:])))
        return out

    def kernel(self, method, *args, dtypes=()):
        if len(set(dtypes)) > 1:  # mixed operands follow the engine's promotion rule, not the ufunc's
            return None
        if method == "binary":
            return _BINARY[args[0]]
        if method == "unary":
            return _UNARY[args[0]]
        if method == "matmul":
            return _matmul
        # partial / methodcaller: C-level calls, no Python frame per kernel
        if method == "reduce" and args[0] == "sum":
            return functools.partial(np.add.reduce, axis=args[1], keepdims=args[2])
        if method == "permute":
            return operator.methodcaller("transpose", tuple(args[0]))
        if method == "reshape":
            return operator.methodcaller("reshape", tuple(args[0]))
        if method == "expand":
            shape = tuple(args[0])
            return lambda a: np.broadcast_to(a, shape)
        if method == "astype":
            dt = args[0].numpy
            return lambda a: a.astype(dt, copy=False)
        return None

    def view(self, a, shape):
        self._check_view(a)
        try:
            return a.reshape(tuple(shape))
        except ValueError as e:
            raise IndexingError(f"cannot view shape {a.shape} as {tuple(shape)}: {e}") from None

    def reshape(self, a, shape):
        try:
            return a.reshape(tuple(shape))
        except ValueError as e:
            raise IndexingError(f"cannot reshape {a.shape} to {tuple(shape)}: {e}") from None

    def expand(self, a, shape):
        shape = tuple(shape)
        out = _broadcast_view(a, shape)
        if out is not None:
            return out
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise IndexingError(f"cannot expand shape {a.shape} to {shape}") from None

    def contiguous(self, a):
        return np.ascontiguousarray(a)

    def index(self, a, key):
        try:
            return a[key]
        except IndexError as e:
            raise IndexingError(str(e)) from None

    def index_add(self, shape, key, src):
        out = np.zeros(tuple(shape), dtype=src.dtype)
        out[key] += src
        return out
