"""The symbolic backend: the array type of a static graph is a shape and a dtype, not numbers.

A static graph's tensors are ordinary :class:`engine.Tensor` objects whose backend is a
:class:`SymbolicBackend` (one per :class:`~engine.static.Graph`). ``engine.tensor.apply`` sees
``backend.deferred`` and hands the op to :meth:`SymbolicBackend.record` instead of running it, so
``engine.ops`` and ``engine.functional`` build graph nodes with the very definitions that compute
numbers in eager mode. Recording runs the op's own ``forward`` over :class:`Abstract` arrays: the
kernels below only infer shapes and dtypes (abstract evaluation, as in JAX).

Every value in a graph is made by an op (VJP rules too), so a node is a leaf (placeholder,
variable, constant) or an op; a backend kernel called outside an op is refused.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..backends.base import COMPARISONS, INT_UNARY_OPS, Backend
from ..dtypes import DType, bool_, float64, result_dtype
from ..tensor import History, Tensor
from ..tensor_data import broadcast_shape, matmul_shape, strides_from_shape


class SymbolicValueError(RuntimeError):
    """A static-graph tensor was asked for a number before a Session ran it."""


class Abstract:
    """Shape + dtype of a value that does not exist yet (or a known constant ``value``)."""

    __slots__ = ("shape", "dtype", "value", "node", "__weakref__")

    def __init__(self, shape: tuple[int, ...], dtype: DType, value: Any = None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.value = value      # a NumPy array for constants
        self.node = None        # the graph node this array is the output of

    def __repr__(self) -> str:
        return f"Abstract(shape={self.shape}, dtype={self.dtype.name})"


class SymbolicBackend(Backend):
    """Shape-and-dtype-only kernels plus op recording for one graph."""

    deferred = True

    def __init__(self, graph) -> None:
        self._graph = weakref.ref(graph)
        self.name = f"static graph '{graph.name}'"

    @property
    def graph(self):
        g = self._graph()
        if g is None:
            raise RuntimeError("this static graph no longer exists")
        return g

    # --- recording --------------------------------------------------------------------------
    def record(self, op, inputs: tuple, params: Any) -> Tensor:
        """Add one op node to the graph (called by ``engine.tensor.apply``) and return its tensor."""
        ctx = History(op, inputs, params, self)
        data = op.forward(ctx, *[t._data for t in inputs])  # abstract evaluation: shapes only
        requires_grad = op.differentiable and any(t.requires_grad for t in inputs)
        # a static graph always keeps the history: the graph *is* the program
        out = Tensor._make(data, self, requires_grad)
        out._history = ctx
        if op.needs_output:
            ctx._out = weakref.ref(out)
        self.graph._add_op(op, params, inputs, out)
        return out

    def describe(self, t: Tensor) -> str:
        a = t._data
        node = a.node
        label = node.name if node is not None else ("constant" if a.value is not None else "pending")
        return f"<static tensor '{label}' shape={a.shape} dtype={a.dtype.name} (no value until Session.run)>"

    # --- creation ----------------------------------------------------------------------------
    def array(self, data, dtype: DType):
        if isinstance(data, Abstract):
            return data
        value = np.array(data, dtype=dtype.numpy)
        return Abstract(value.shape, dtype, value=value)

    def to_numpy(self, a):
        if a.value is not None:
            return a.value
        raise SymbolicValueError(
            "a static-graph tensor has no value until it is run: use Session().run(tensor, feed_dict) "
            "(Python control flow such as `if` on a graph tensor cannot work in graph mode)")

    def shape(self, a):
        return a.shape

    def dtype(self, a) -> DType:
        return a.dtype

    def full(self, shape, value, dtype: DType):
        return Abstract(tuple(shape), dtype, value=np.full(tuple(shape), value, dtype=dtype.numpy))

    def uniform(self, shape, dtype: DType):
        return Abstract(tuple(shape), dtype)

    def seed(self, seed: int) -> None:
        pass

    def astype(self, a, dtype: DType):
        return Abstract(a.shape, dtype)

    def item(self, a):
        return np.asarray(self.to_numpy(a)).item()

    # --- kernels: shape and dtype inference only ----------------------------------------------
    def unary(self, op, a):
        # integers stay integers only under the kernels declared keeps_int
        dt = a.dtype if a.dtype.is_floating or op in INT_UNARY_OPS else float64
        return Abstract(a.shape, dt)

    def binary(self, op, a, b):
        # the engine's promotion rule (float32 op int64 is float32), which every backend follows; not NumPy's
        dt = bool_ if op in COMPARISONS else result_dtype(a.dtype, b.dtype)
        if op == "div" and not dt.is_floating:  # true division, as every backend
            dt = float64
        return Abstract(broadcast_shape(a.shape, b.shape), dt)

    def where(self, cond, a, b):
        return Abstract(broadcast_shape(cond.shape, a.shape, b.shape), result_dtype(a.dtype, b.dtype))

    def reduce(self, op, a, axes, keepdim):
        axes = tuple(axes)
        shape = tuple((1 if i in axes else s) for i, s in enumerate(a.shape) if keepdim or i not in axes)
        return Abstract(shape, a.dtype)

    def matmul(self, a, b):
        return Abstract(matmul_shape(a.shape, b.shape)[-1], result_dtype(a.dtype, b.dtype))

    def gather(self, table, indices):
        return Abstract(indices.shape + table.shape[1:], table.dtype)

    def scatter_add(self, shape, indices, src):
        return Abstract(tuple(shape), src.dtype)

    def permute(self, a, order):
        return Abstract(tuple(a.shape[i] for i in order), a.dtype)

    def view(self, a, shape):
        return Abstract(tuple(shape), a.dtype)

    def reshape(self, a, shape):
        return Abstract(tuple(shape), a.dtype)

    def expand(self, a, shape):
        broadcast_shape(a.shape, tuple(shape))
        return Abstract(tuple(shape), a.dtype)

    def contiguous(self, a):
        return Abstract(a.shape, a.dtype)

    def is_contiguous(self, a):
        return True  # layout is decided when the graph runs

    def strides(self, a):
        return strides_from_shape(a.shape)

    def index(self, a, key):
        # indexing a stride-0 array of the shape (no memory) lets NumPy infer the result's shape
        zeros = np.broadcast_to(np.zeros((), dtype=a.dtype.numpy), a.shape)
        return Abstract(zeros[key].shape, a.dtype)

    def index_add(self, shape, key, src):
        return Abstract(tuple(shape), src.dtype)
