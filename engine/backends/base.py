"""The narrow interface every backend implements.

A backend owns an opaque array type (``numpy.ndarray``, ``TensorData``, ``cupy.ndarray``) and a
small set of kernels. Engine code only calls these methods on the backend a tensor carries; it
never picks a backend itself. Elementwise kernels are named by the declarations in ``engine.ops``,
which fill :data:`UNARY_OPS` / :data:`BINARY_OPS`; ``tests/test_ops.py`` checks that every backend
has exactly the declared kernels.
"""
from __future__ import annotations

import functools
import math
import threading
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from ..dtypes import DType

# filled by engine.ops through declare_kernel
UNARY_OPS: set[str] = set()
BINARY_OPS: set[str] = set()
COMPARISONS: set[str] = set()     # binary kernels giving bool
INT_UNARY_OPS: set[str] = set()   # unary kernels that keep an integer input's dtype (the rest give float64)


def declare_kernel(kind: str, name: str, *, keeps_int: bool = False, comparison: bool = False) -> None:
    """Declare an elementwise kernel every backend must provide under ``name``.

    Args:
        kind: ``"unary"`` or ``"binary"`` (broadcasting).
        keeps_int: (unary) an integer input gives an integer result (neg, relu, step).
        comparison: (binary) the result is bool.
    Raises:
        ValueError: an unknown kind, or a name declared under the other kind.
    """
    if kind not in ("unary", "binary"):
        raise ValueError(f"kernel kind must be 'unary' or 'binary', got {kind!r}")
    other = BINARY_OPS if kind == "unary" else UNARY_OPS
    if name in other:
        raise ValueError(f"kernel {name!r} is declared both unary and binary")
    (UNARY_OPS if kind == "unary" else BINARY_OPS).add(name)
    if keeps_int:
        INT_UNARY_OPS.add(name)
    if comparison:
        COMPARISONS.add(name)


class KernelSet:
    """One backend's kernels for operands of one dtype, by name (``k.add(a, b)``, ``k.log(a)``), and
    cached scalar constants of that dtype (``k.const(1.0)``).

    ``raw=True`` binds the backend's own functions where it has them (:meth:`Backend.kernel`: the same
    bits without dispatch; a 0-d result may be a NumPy scalar), for code that runs many kernels on
    operands of one dtype (a captured step's replay, the optimisers); else the backend's methods.
    """

    def __init__(self, backend: "Backend", dtype: DType, raw: bool):
        self.backend, self.dtype, self.raw = backend, dtype, raw
        self._consts: dict[float, Any] = {}

    def __getattr__(self, name: str) -> Callable:  # the first use of a kernel name binds it
        if name in UNARY_OPS:
            method, dtypes = "unary", (self.dtype,)
        elif name in BINARY_OPS:
            method, dtypes = "binary", (self.dtype, self.dtype)
        else:
            raise AttributeError(f"no kernel named {name!r}")
        fn = self.backend.kernel(method, name, dtypes=dtypes) if self.raw else None
        if fn is None:
            fn = functools.partial(getattr(self.backend, method), name)
        setattr(self, name, fn)
        return fn

    def const(self, value: float):
        arr = self._consts.get(value)
        if arr is None:
            arr = self._consts[value] = self.backend.array(value, self.dtype)
        return arr


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine (e.g. no GPU)."""


class ThreadRandom:
    """One random generator per thread (dropout masks), so that two trainings in two browser sessions
    stay reproducible. ``seed(s)`` reseeds this thread's generator and seeds threads that first draw later.
    """

    def __init__(self, factory: Callable[[int], Any], seed: int = 0):
        self._factory = factory
        self._base_seed = seed
        self._local = threading.local()

    @property
    def generator(self):
        gen = getattr(self._local, "gen", None)
        if gen is None:
            gen = self._local.gen = self._factory(self._base_seed)
        return gen

    def seed(self, seed: int) -> None:
        self._base_seed = seed
        self._local.gen = self._factory(seed)


class Backend(ABC):
    """Array storage plus map / zip / reduce / matmul / gather / scatter-add kernels."""

    name: str = "?"
    deferred: bool = False  # True for a static graph's symbolic backend: ``apply`` records ops there

    @classmethod
    def is_available(cls) -> bool:
        return cls.unavailable_reason() == ""

    @classmethod
    def unavailable_reason(cls) -> str:
        return ""

    # creation and conversion
    @abstractmethod
    def array(self, data: Any, dtype: DType) -> Any: ...
    @abstractmethod
    def to_numpy(self, a: Any): ...
    @abstractmethod
    def shape(self, a: Any) -> tuple[int, ...]: ...
    @abstractmethod
    def dtype(self, a: Any) -> DType: ...
    @abstractmethod
    def full(self, shape: Sequence[int], value: float, dtype: DType) -> Any: ...
    @abstractmethod
    def uniform(self, shape: Sequence[int], dtype: DType) -> Any: ...
    @abstractmethod
    def seed(self, seed: int) -> None: ...
    @abstractmethod
    def astype(self, a: Any, dtype: DType) -> Any: ...
    @abstractmethod
    def item(self, a: Any) -> float: ...

    # kernels
    @abstractmethod
    def unary(self, op: str, a: Any) -> Any: ...
    @abstractmethod
    def binary(self, op: str, a: Any, b: Any) -> Any: ...
    @abstractmethod
    def where(self, cond: Any, a: Any, b: Any) -> Any: ...
    @abstractmethod
    def reduce(self, op: str, a: Any, axes: tuple[int, ...], keepdim: bool) -> Any: ...
    @abstractmethod
    def matmul(self, a: Any, b: Any) -> Any: ...
    @abstractmethod
    def gather(self, table: Any, indices: Any) -> Any:
        """Rows of ``table`` picked by integer ``indices``: shape indices.shape + table.shape[1:]."""
    @abstractmethod
    def scatter_add(self, shape: Sequence[int], indices: Any, src: Any) -> Any:
        """Zeros of ``shape`` with each ``src`` row added into row ``indices[...]`` (repeats add up)."""

    def kernel(self, method: str, *args, dtypes: Sequence[DType] = ()) -> Callable | None:
        """The raw function behind one kernel call (``"binary", "add"``; ``"reduce", "sum", axes, keepdim``;
        ``"permute", order``), taking only the array operands (of ``dtypes``) and giving the method's bits.
        None (the default) when the backend has no such shortcut: callers then use the method.
        """
        return None

    def kernels(self, dtype: DType, raw: bool = False) -> KernelSet:
        """This backend's :class:`KernelSet` for ``dtype`` (made once)."""
        sets = self.__dict__.setdefault("_kernel_sets", {})
        k = sets.get((dtype, raw))
        if k is None:
            k = sets[dtype, raw] = KernelSet(self, dtype, raw)
        return k

    def buffer(self, a: Any) -> tuple[int, int]:
        """(identity, bytes) of the storage behind ``a``: views of one buffer share the identity."""
        return id(a), math.prod(self.shape(a)) * np.dtype(self.dtype(a).numpy).itemsize

    # layout (views share storage where the strides allow)
    @abstractmethod
    def permute(self, a: Any, order: Sequence[int]) -> Any: ...
    @abstractmethod
    def view(self, a: Any, shape: Sequence[int]) -> Any: ...
    @abstractmethod
    def reshape(self, a: Any, shape: Sequence[int]) -> Any: ...
    @abstractmethod
    def expand(self, a: Any, shape: Sequence[int]) -> Any: ...
    @abstractmethod
    def contiguous(self, a: Any) -> Any: ...
    @abstractmethod
    def is_contiguous(self, a: Any) -> bool: ...
    @abstractmethod
    def strides(self, a: Any) -> tuple[int, ...]:
        """Strides in elements (not bytes)."""
    @abstractmethod
    def index(self, a: Any, key: Any) -> Any:
        """Basic (int / slice) indexing as a view."""
    @abstractmethod
    def index_add(self, shape: Sequence[int], key: Any, src: Any) -> Any:
        """Zeros of ``shape`` with ``src`` added at basic index ``key``."""

    def __repr__(self) -> str:
        return f"<backend {self.name}>"
