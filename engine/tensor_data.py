"""Strided tensor storage: a flat buffer plus shape, strides and offset.

This is the index maths every tensor library hides. The pure-Python backend computes with it
directly; the NumPy and CuPy backends get the same behaviour from their own arrays (the tests check).

A position in the flat storage is ``offset + sum(index[i] * strides[i])``. Views (``permute``,
``view``, ``expand``, slicing) are new TensorData over the *same* storage with other strides.
"""
from __future__ import annotations

import array
import itertools
from math import prod
from typing import Iterator, Sequence

Shape = tuple[int, ...]
Strides = tuple[int, ...]


class IndexingError(IndexError):
    """An index or shape that does not fit the tensor."""


class BroadcastError(ValueError):
    """Shapes that cannot be broadcast together (the same error on every backend)."""


def broadcast_error(*shapes) -> BroadcastError:
    return BroadcastError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together")


class ViewError(RuntimeError):
    """A view was requested that the strides cannot express (as in PyTorch)."""


INT64_MAX = 2**63 - 1


def check_size(shape: Sequence[int]) -> int:
    """The element count of ``shape``, in Python's exact integers (``np.prod`` would wrap around);
    ValueError when it does not fit int64."""
    n = prod(int(s) for s in shape)
    if n > INT64_MAX:
        raise ValueError(f"shape {tuple(int(s) for s in shape)} has {n:,} elements, more than int64 can count "
                         f"(2**63 - 1)")
    return n


def strides_from_shape(shape: Sequence[int]) -> Strides:
    """Row-major (C-contiguous) strides for ``shape``."""
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def to_index(ordinal: int, shape: Shape) -> list[int]:
    """The multi-index of the ``ordinal``-th element in row-major order."""
    index = [0] * len(shape)
    for i in range(len(shape) - 1, -1, -1):
        s = shape[i]
        index[i] = ordinal % s
        ordinal //= s
    return index


def all_indices(shape: Shape) -> Iterator[tuple[int, ...]]:
    """Every multi-index of ``shape`` in row-major order (the last dim varies fastest)."""
    return itertools.product(*(range(s) for s in shape))


def broadcast_shape(*shapes: Shape) -> Shape:
    """NumPy broadcasting of shapes; BroadcastError when a dimension is neither 1 nor the others' size."""
    out = [1] * max(map(len, shapes), default=0)
    for shape in shapes:
        for i, s in enumerate(shape, len(out) - len(shape)):
            if out[i] == 1:
                out[i] = int(s)
            elif s != 1 and s != out[i]:
                raise broadcast_error(*shapes)
    return tuple(out)


def matmul_shape(a: Shape, b: Shape) -> tuple[Shape, int, int, int, Shape]:
    """(batch, m, k, n, result shape) of ``a @ b``: a 1-d ``a`` is a row, a 1-d ``b`` a column, and the
    result drops that dim again (NumPy's rule); the batch dims broadcast. ValueError for a 0-d operand
    or inner dimensions that differ."""
    if not a or not b:
        raise ValueError("matmul needs arrays with at least one dimension")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    m, k, k2, n = a2[-2], a2[-1], b2[-2], b2[-1]
    if k != k2:
        raise ValueError(f"matmul shape mismatch: {tuple(a)} @ {tuple(b)} ({k} != {k2})")
    batch = broadcast_shape(a2[:-2], b2[:-2])
    return batch, m, k, n, batch + ((m,) if len(a) > 1 else ()) + ((n,) if len(b) > 1 else ())


def broadcast_index(big_index: Sequence[int], big_shape: Shape, shape: Shape) -> list[int]:
    """Map an index of the broadcast (big) shape to an index of the smaller shape."""
    skip = len(big_shape) - len(shape)
    return [0 if shape[i] == 1 else big_index[i + skip] for i in range(len(shape))]


class TensorData:
    """Flat storage (``array.array``) viewed through shape, strides and offset."""

    __slots__ = ("storage", "shape", "strides", "offset", "typecode")

    def __init__(self, storage: array.array, shape: Shape, strides: Strides | None = None, offset: int = 0):
        self.storage = storage
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(strides) if strides is not None else strides_from_shape(self.shape)
        self.offset = offset
        self.typecode = storage.typecode
        if len(self.strides) != len(self.shape):
            raise IndexingError(f"strides {self.strides} do not match shape {self.shape}")

    # --- construction -------------------------------------------------
    @staticmethod
    def from_flat(values, shape: Shape, typecode: str) -> "TensorData":
        storage = array.array(typecode, values)
        if len(storage) != prod(shape):
            raise IndexingError(f"{len(storage)} values do not fill shape {tuple(shape)}")
        return TensorData(storage, tuple(shape))

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    # --- index maths --------------------------------------------------
    def index_to_position(self, index: Sequence[int]) -> int:
        """Storage position of a multi-index (negative indices allowed)."""
        if len(index) != len(self.shape):
            raise IndexingError(f"index {tuple(index)} has {len(index)} dims, tensor has {len(self.shape)}")
        pos = self.offset
        for i, s, st in zip(index, self.shape, self.strides):
            if i < 0:
                i += s
            if not 0 <= i < s:
                raise IndexingError(f"index {tuple(index)} out of range for shape {self.shape}")
            pos += i * st
        return pos

    def positions(self) -> Iterator[int]:
        """Storage positions of all elements in row-major (logical) order."""
        shape, strides, off = self.shape, self.strides, self.offset
        for index in all_indices(shape):
            pos = off
            for i, st in zip(index, strides):
                pos += i * st
            yield pos

    def get(self, index: Sequence[int]):
        return self.storage[self.index_to_position(index)]

    def values(self) -> list:
        """All elements in logical row-major order."""
        st = self.storage
        return [st[p] for p in self.positions()]

    def is_contiguous(self) -> bool:
        """True when the logical order is the storage order with no gaps."""
        expected = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s == 1:
                continue
            if st != expected:
                return False
            expected *= s
        return True

    # --- views (share storage) ----------------------------------------
    def permute(self, order: Sequence[int]) -> "TensorData":
        if sorted(order) != list(range(len(self.shape))):
            raise IndexingError(f"permute order {tuple(order)} is not a permutation of {len(self.shape)} dims")
        return TensorData(self.storage, tuple(self.shape[i] for i in order),
                          tuple(self.strides[i] for i in order), self.offset)

    def view(self, shape: Shape) -> "TensorData":
        if prod(shape) != self.size:
            raise IndexingError(f"cannot view shape {self.shape} ({self.size} elements) as {tuple(shape)}")
        if not self.is_contiguous():
            raise ViewError(
                f"view of a non-contiguous tensor (shape {self.shape}, strides {self.strides}) is not "
                "possible: call .contiguous() first, or use reshape (which copies)")
        return TensorData(self.storage, tuple(shape), strides_from_shape(shape), self.offset)

    def expand(self, shape: Shape) -> "TensorData":
        """Broadcast to ``shape`` by giving the repeated dims stride 0."""
        if broadcast_shape(self.shape, shape) != tuple(shape):
            raise IndexingError(f"cannot expand shape {self.shape} to {tuple(shape)}")
        skip = len(shape) - len(self.shape)
        strides = [0] * skip + [0 if s == 1 and want != 1 else st
                                for s, st, want in zip(self.shape, self.strides, shape[skip:])]
        return TensorData(self.storage, tuple(shape), tuple(strides), self.offset)

    def basic_index(self, key) -> "TensorData":
        """A view for integer / slice indexing (``x[1]``, ``x[:, 2:5]``, ``x[::2]``)."""
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > len(self.shape):
            raise IndexingError(f"too many indices ({len(key)}) for a tensor of {len(self.shape)} dims")
        offset = self.offset
        shape, strides = [], []
        for d, (s, st) in enumerate(zip(self.shape, self.strides)):
            k = key[d] if d < len(key) else slice(None)
            if isinstance(k, int):
                i = k + s if k < 0 else k
                if not 0 <= i < s:
                    raise IndexingError(f"index {k} out of range for dim {d} of size {s}")
                offset += i * st
            elif isinstance(k, slice):
                start, stop, step = k.indices(s)  # (a zero step raises ValueError, as in Python)
                offset += start * st
                shape.append(len(range(start, stop, step)))
                strides.append(st * step)             # a negative step walks backwards: a negative stride
            else:
                raise IndexingError(f"unsupported index {k!r}: use integers and slices")
        return TensorData(self.storage, tuple(shape), tuple(strides), offset)

    def contiguous(self) -> "TensorData":
        return TensorData(array.array(self.typecode, self.values()), self.shape)

    def __repr__(self) -> str:
        return f"TensorData(shape={self.shape}, strides={self.strides}, offset={self.offset})"
