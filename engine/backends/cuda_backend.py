"""CUDA backend: CuPy arrays as storage, our own kernels from ``engine/kernels/*.cu``.

CuPy supplies device memory, strided views, host transfers and the random generator. Every
computation runs one of our kernels, compiled by NVRTC through ``cupy.RawModule``:

    map / zip / where   elementwise.cu  one thread per output, grid-stride, contiguous fast path
    reduce              reduce.cu       one block per output row, shared-memory tree
    matmul              matmul.cu       batched, shared-memory tiles + register tiles
    gather / scatter    gather.cu       embedding rows; scatter-add with atomicAdd

The kernels see pointers, sizes and a ``meta`` vector of shapes and strides (in elements), built in
pure Python (:func:`collapse_dims`, the ``*_meta`` helpers) and tested without a GPU; the kernels
themselves are compiled by ``nvcc`` in CI and run by a host emulator (``tests/cuda_emulator``).
``CudaBackend(runtime)`` takes the object that owns memory and launches kernels (default
:class:`CupyRuntime`, the GPU).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..dtypes import DType, as_dtype, bool_, float32, float64, int64, result_dtype
from ..tensor_data import IndexingError, broadcast_shape, matmul_shape, strides_from_shape
from .base import BINARY_OPS, COMPARISONS, INT_UNARY_OPS, UNARY_OPS, Backend, BackendUnavailable, ThreadRandom
from .numpy_backend import NdarrayLayout

KERNEL_DIR = Path(__file__).resolve().parents[1] / "kernels"
KERNEL_FILES = ("elementwise.cu", "reduce.cu", "matmul.cu", "gather.cu")
MAX_DIMS = 16            # EK_MAX_DIMS in common.cuh
THREADS = 256            # threads per block for the grid-stride kernels
REDUCE_THREADS = 256     # EK_REDUCE_THREADS in reduce.cu
MATMUL_TILE = 128        # MM_BM == MM_BN in matmul.cu
MATMUL_THREADS = 256     # MM_THREADS in matmul.cu
MAX_GRID_Z = 65535

# C++ type of each engine dtype
CTYPE = {"float32": "float", "float64": "double", "int64": "long long", "bool": "bool"}


def functor_name(op: str) -> str:
    """The C++ functor in elementwise.cu of a declared kernel: ``exp`` -> ``OpExp``."""
    return "Op" + "".join(part.capitalize() for part in op.split("_"))


_LOGICAL = ("add", "mul", "maximum")  # on two bools: or, and, or
_FLOATS = ("float32", "float64")
_NUMERIC = ("float32", "float64", "int64")


# --- kernel names: the one list the backend, the nvcc test and the emulator use


def map_name(kind: str, tin: str, tout: str, functor: str) -> str:
    return f"map_{kind}<{CTYPE[tin]}, {CTYPE[tout]}, {functor}>"


def zip_name(kind: str, t: str, op: str) -> str:
    tout = "bool" if op in COMPARISONS else t
    return f"zip_{kind}<{CTYPE[t]}, {CTYPE[tout]}, {functor_name(op)}>"


def reduce_name(op: str, t: str) -> str:
    acc = "double" if (op == "sum" and t in _FLOATS) else CTYPE[t]
    return f"reduce_rows<{CTYPE[t]}, {acc}, {'ReduceSum' if op == 'sum' else 'ReduceMax'}>"


def matmul_name(t: str, min_blocks: int) -> str:
    return f"matmul_tiled<{CTYPE[t]}, {min_blocks}>"


def kernel_names() -> dict[str, list[str]]:
    """Every template instantiation the backend launches, per kernel file."""
    elementwise = []
    for kind in ("contig", "strided"):
        for op in sorted(UNARY_OPS):
            for t in (_NUMERIC if op in INT_UNARY_OPS else _FLOATS):
                elementwise.append(map_name(kind, t, t, functor_name(op)))
        for tin in CTYPE:  # casts (and copies) between every pair of dtypes
            for tout in CTYPE:
                elementwise.append(map_name(kind, tin, tout, "OpIdentity"))
        for op in sorted(BINARY_OPS):
            for t in (_FLOATS if op == "div" else _NUMERIC):
                elementwise.append(zip_name(kind, t, op))
    elementwise += [f"where_strided<{CTYPE[t]}>" for t in CTYPE]
    reduce = [reduce_name(op, t) for op in ("sum", "max") for t in _NUMERIC]
    matmul = [matmul_name(t, b) for t in _NUMERIC for b in (1, 2)]
    gather = [f"{k}<{CTYPE[t]}>" for k in ("gather_rows", "scatter_add_rows") for t in _NUMERIC]
    gather += ["gather_rows<bool>"]
    return {"elementwise.cu": elementwise, "reduce.cu": reduce, "matmul.cu": matmul, "gather.cu": gather}


def kernel_source(filename: str) -> str:
    """A kernel file with ``#include "common.cuh"`` inlined (NVRTC then needs no include path)."""
    common = (KERNEL_DIR / "common.cuh").read_text().replace("#pragma once", "")
    text = (KERNEL_DIR / filename).read_text()
    return re.sub(r'#include\s+"common\.cuh"', lambda _: common, text)


# --- index maths (pure Python; the kernels receive its results)


def collapse_dims(shape: Sequence[int], *strides: Sequence[int]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Fewest dims that walk the same elements in the same order for every operand.

    Size-1 dims are dropped; dim d merges into d+1 when, for every operand,
    ``stride[d] == stride[d+1] * shape[d+1]``. A contiguous tensor plus a
    broadcast scalar thus becomes one dim with strides (1, 0).
    """
    dims = [(s, tuple(st[i] for st in strides)) for i, s in enumerate(shape) if s != 1]
    out_shape: list[int] = []
    out_strides: list[tuple[int, ...]] = []
    for size, st in dims:
        if out_shape and all(prev == cur * size for prev, cur in zip(out_strides[-1], st)):
            out_shape[-1] *= size
            out_strides[-1] = st
        else:
            out_shape.append(size)
            out_strides.append(st)
    per_operand = [tuple(s[k] for s in out_strides) for k in range(len(strides))]
    return tuple(out_shape), per_operand


contiguous_strides = strides_from_shape


def offset_of(lin: int, shape: Sequence[int], strides: Sequence[int]) -> int:
    """Storage offset of row-major linear index ``lin``: the same loop as ``ek_offset`` in common.cuh."""
    off = 0
    for s, st in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        lin, ix = divmod(lin, s)
        off += ix * st
    return off


def _check_dims(ndim: int) -> None:
    if ndim > MAX_DIMS:
        raise ValueError(f"the cuda backend handles at most {MAX_DIMS} non-trivial dimensions, got {ndim}")


def elementwise_meta(shape: Sequence[int], *strides: Sequence[int]) -> list[int]:
    """[ndim, shape..., strides of each operand...] after collapsing dims."""
    cshape, cstrides = collapse_dims(shape, *strides)
    _check_dims(len(cshape))
    meta = [len(cshape), *cshape]
    for st in cstrides:
        meta += st
    return meta


def reduce_meta(shape: Sequence[int], strides: Sequence[int], axes: Sequence[int]) -> tuple[list[int], int, int]:
    """(meta, rows, row length) for reducing ``axes``: kept dims and reduced dims, each collapsed."""
    kept = [d for d in range(len(shape)) if d not in axes]
    red = sorted(axes)
    kshape, (kstr,) = collapse_dims([shape[d] for d in kept], [strides[d] for d in kept])
    rshape, (rstr,) = collapse_dims([shape[d] for d in red], [strides[d] for d in red])
    _check_dims(max(len(kshape), len(rshape)))
    meta = [len(kshape), *kshape, *kstr, len(rshape), *rshape, *rstr]
    return meta, math.prod(shape[d] for d in kept), math.prod(shape[d] for d in red)


def matmul_meta(batch: Sequence[int], a_strides: Sequence[int], b_strides: Sequence[int]) -> list[int]:
    """[nb, batch shape, a batch strides, b batch strides, a_rs, a_cs, b_rs, b_cs] for expanded operands."""
    nb = len(batch)
    bshape, (abs_, bbs) = collapse_dims(batch, a_strides[:nb], b_strides[:nb])
    _check_dims(len(bshape))
    return [len(bshape), *bshape, *abs_, *bbs, a_strides[nb], a_strides[nb + 1], b_strides[nb], b_strides[nb + 1]]


def _pow2_at_least(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p


# --- the GPU runtime


def _import_cupy():
    import cupy  # noqa: PLC0415 - optional dependency, imported only when asked for
    return cupy


class CupyRuntime:
    """Device memory, transfers and kernel launches through CuPy."""

    name = "cupy"

    def __init__(self) -> None:
        cp = _import_cupy()
        self.cp = self.xp = cp
        self._modules: dict[str, Any] = {}
        self._functions: dict[str, Any] = {}
        self._file_of = {n: f for f, names in kernel_names().items() for n in names}
        self.max_blocks = int(cp.cuda.Device().attributes["MultiProcessorCount"]) * 32
        self.threads = THREADS
        self.reduce_threads = REDUCE_THREADS
        self._random = ThreadRandom(cp.random.RandomState)

    def function(self, name: str):
        fn = self._functions.get(name)
        if fn is None:
            file = self._file_of[name]
            mod = self._modules.get(file)
            if mod is None:
                mod = self._modules[file] = self.cp.RawModule(
                    code=kernel_source(file), options=("--std=c++17",), name_expressions=kernel_names()[file])
            fn = self._functions[name] = mod.get_function(name)
        return fn

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], args: tuple) -> None:
        self.function(name)(grid, block, args)

    def to_device(self, host: np.ndarray):
        return self.cp.asarray(host)

    def to_host(self, a) -> np.ndarray:
        return self.cp.asnumpy(a)

    def uniform(self, shape, dtype: DType):
        return self._random.generator.random_sample(tuple(shape), dtype=dtype.numpy)

    def seed(self, seed: int) -> None:
        self._random.seed(seed)

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()


class CudaBackend(NdarrayLayout, Backend):
    """The engine's narrow backend interface on an NVIDIA GPU."""

    name = "cuda"

    @classmethod
    def unavailable_reason(cls) -> str:
        try:
            cp = _import_cupy()
        except Exception as e:  # ImportError, or a broken CUDA install raising at import
            return (f"CuPy is not installed or cannot be imported ({type(e).__name__}: {e}); "
                    "install it with `pip install cupy-cuda12x` or `pip install cupy-cuda13x`")
        try:
            ok = bool(cp.cuda.is_available())
        except Exception as e:
            return f"CuPy cannot query the CUDA driver ({type(e).__name__}: {e})"
        if not ok:
            return "CuPy is installed but no usable NVIDIA GPU / CUDA driver was found (cupy.cuda.is_available() is False)"
        return ""

    def __init__(self, runtime: Any = None) -> None:
        if runtime is None:
            reason = self.unavailable_reason()
            if reason:
                raise BackendUnavailable(f"backend 'cuda' is not available on this machine: {reason}")
            runtime = CupyRuntime()
        self.rt = runtime
        self.xp = runtime.xp
        self._meta_cache: dict[tuple[int, ...], Any] = {}
        # matmul_tiled's MIN_BLOCKS per dtype (see matmul.cu); not yet tuned on a GPU.
        self.matmul_min_blocks = {"float32": 2, "float64": 1, "int64": 1}

    # --- helpers -------------------------------------------------------------
    def _meta(self, meta: list[int]):
        key = tuple(meta)
        dev = self._meta_cache.get(key)
        if dev is None:
            if len(self._meta_cache) > 4096:
                self._meta_cache.clear()
            dev = self._meta_cache[key] = self.rt.to_device(np.asarray(meta, dtype=np.int64))
        return dev

    def _grid(self, n: int, threads: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        threads = threads or self.rt.threads
        return (max(1, min(-(-n // threads), self.rt.max_blocks)), 1, 1), (threads, 1, 1)

    def _empty(self, shape, dtype: DType):
        return self.xp.empty(tuple(shape), dtype=dtype.numpy)

    def _elementwise(self, kernel_name, operands: tuple, out, has_contig: bool = True) -> None:
        """One thread per element of ``out`` (operands already broadcast to its shape): the kernel
        ``kernel_name("contig")`` when every array is C-contiguous (and the kernel has that fast path), else
        ``kernel_name("strided")`` with the arrays' strides."""
        n = out.size
        if n == 0:
            return
        grid, block = self._grid(n)
        if has_contig and all(x.flags.c_contiguous for x in (*operands, out)):
            self.rt.launch(kernel_name("contig"), grid, block, (*operands, out, np.int64(n)))
        else:
            meta = elementwise_meta(out.shape, *[self.strides(x) for x in (*operands, out)])
            self.rt.launch(kernel_name("strided"), grid, block, (*operands, out, np.int64(n), self._meta(meta)))

    def _map_into(self, out, a, functor: str) -> None:
        """out[...] = functor(a) elementwise; ``a`` is already broadcast to out's shape."""
        tin, tout = as_dtype(a.dtype).name, as_dtype(out.dtype).name
        self._elementwise(lambda kind: map_name(kind, tin, tout, functor), (a,), out)

    def _map(self, a, functor: str, tout: DType):
        out = self._empty(a.shape, tout)
        self._map_into(out, a, functor)
        return out

    # --- creation and conversion --------------------------------------------
    def array(self, data, dtype: DType):
        dtype = as_dtype(dtype)
        if isinstance(data, self.xp.ndarray) and self.xp is not np:
            return self.astype(data, dtype) if data.dtype != dtype.numpy else data.copy()
        return self.rt.to_device(np.asarray(data, dtype=dtype.numpy, order="C"))  # (ascontiguousarray makes 0-d 1-d)

    def to_numpy(self, a):
        return self.rt.to_host(a)

    def shape(self, a):
        return tuple(a.shape)

    def dtype(self, a) -> DType:
        return as_dtype(a.dtype)

    def full(self, shape, value, dtype: DType):
        return self.xp.full(tuple(shape), value, dtype=as_dtype(dtype).numpy)

    def uniform(self, shape, dtype: DType):
        return self.rt.uniform(shape, as_dtype(dtype) if as_dtype(dtype) in (float32, float64) else float32)

    def seed(self, seed: int) -> None:
        self.rt.seed(seed)

    def astype(self, a, dtype: DType):
        dtype = as_dtype(dtype)
        if as_dtype(a.dtype) == dtype:
            return a
        return self._map(a, "OpIdentity", dtype)

    def item(self, a):
        if a.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {tuple(a.shape)}")
        return self.rt.to_host(a).reshape(()).item()

    # --- kernels -------------------------------------------------------------
    def unary(self, op, a):
        if op not in UNARY_OPS:
            raise ValueError(f"unknown unary kernel {op!r}")
        dt = as_dtype(a.dtype)
        if dt == bool_ or (not dt.is_floating and op not in INT_UNARY_OPS):
            a = self.astype(a, int64 if op in INT_UNARY_OPS else float64)
            dt = as_dtype(a.dtype)
        return self._map(a, functor_name(op), dt)

    def _promote(self, op: str, *arrays):
        dt = as_dtype(arrays[0].dtype)
        for x in arrays[1:]:
            dt = result_dtype(dt, as_dtype(x.dtype))
        if dt == bool_ or (op == "div" and not dt.is_floating):
            dt = float64 if op == "div" else int64
        return dt, [self.astype(x, dt) for x in arrays]

    def _broadcast(self, *arrays):
        shape = broadcast_shape(*[x.shape for x in arrays])
        return shape, [self.xp.broadcast_to(x, shape) for x in arrays]

    def binary(self, op, a, b):
        if op not in BINARY_OPS:
            raise ValueError(f"unknown binary kernel {op!r}")
        # bool with bool stays bool, as in NumPy and PyTorch (add: or, mul: and); computed in int64 here
        logical = op in _LOGICAL and as_dtype(a.dtype) is bool_ and as_dtype(b.dtype) is bool_
        dt, (a, b) = self._promote(op, a, b)
        shape, (ea, eb) = self._broadcast(a, b)
        out = self._empty(shape, bool_ if op in COMPARISONS else dt)
        self._elementwise(lambda kind: zip_name(kind, dt.name, op), (ea, eb), out)
        return self.astype(out, bool_) if logical else out

    def where(self, cond, a, b):
        cond = self.astype(cond, bool_)
        dt = result_dtype(as_dtype(a.dtype), as_dtype(b.dtype))
        a, b = self.astype(a, dt), self.astype(b, dt)
        shape, (ec, ea, eb) = self._broadcast(cond, a, b)
        out = self._empty(shape, dt)
        self._elementwise(lambda kind: f"where_{kind}<{CTYPE[dt.name]}>", (ec, ea, eb), out, has_contig=False)
        return out

    def reduce(self, op, a, axes, keepdim):
        if op not in ("sum", "max"):
            raise ValueError(f"unknown reduction {op!r}")
        nd = a.ndim
        axes = tuple(sorted({ax % nd for ax in axes})) if nd else ()
        dt = as_dtype(a.dtype)
        src = a if dt != bool_ else self.astype(a, int64)
        meta, rows, length = reduce_meta(tuple(a.shape), self.strides(src), axes)
        if op == "max" and length == 0:
            raise ValueError("max of an empty dimension")
        kept_shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        out = self._empty(kept_shape, as_dtype(src.dtype))
        if rows:
            cap = self.rt.reduce_threads
            threads = _pow2_at_least(length, min(32, cap), cap)
            grid = (max(1, min(rows, self.rt.max_blocks)), 1, 1)
            self.rt.launch(reduce_name(op, as_dtype(src.dtype).name), grid, (threads, 1, 1),
                           (src, out, np.int64(rows), np.int64(length), self._meta(meta)))
        if dt == bool_ and op == "max":
            out = self.astype(out, bool_)
        if not keepdim:
            out = out.reshape(tuple(s for i, s in enumerate(a.shape) if i not in axes))
        return out

    def matmul(self, a, b):
        batch, m, k, n, out_shape = matmul_shape(a.shape, b.shape)
        if -(-m // MATMUL_TILE) > 65535:  # gridDim.y limit
            raise ValueError(f"matmul: {m} rows exceed the cuda backend's limit of {65535 * MATMUL_TILE}")
        dt, (a, b) = self._promote("matmul", a, b)
        # a vector operand is a (1, k) row or a (k, 1) column here; out_shape drops that dim again
        ea = self.xp.broadcast_to(a.reshape((m, k)) if a.ndim == 1 else a, batch + (m, k))
        eb = self.xp.broadcast_to(b.reshape((k, n)) if b.ndim == 1 else b, batch + (k, n))
        out = self._empty(batch + (m, n), dt)
        nbatch = math.prod(batch)
        if out.size:
            meta = matmul_meta(batch, self.strides(ea), self.strides(eb))
            grid = (-(-n // MATMUL_TILE), -(-m // MATMUL_TILE), min(nbatch, MAX_GRID_Z))
            self.rt.launch(matmul_name(dt.name, self.matmul_min_blocks[dt.name]), grid, (MATMUL_THREADS, 1, 1),
                           (ea, eb, out, np.int64(m), np.int64(n), np.int64(k), np.int64(nbatch), self._meta(meta)))
        return out.reshape(out_shape)

    def _rows_args(self, table_shape, indices):
        if len(table_shape) == 0:
            raise IndexingError("cannot pick rows of a 0-d tensor")
        if as_dtype(indices.dtype).is_floating or as_dtype(indices.dtype) == bool_:
            raise IndexingError("row indices must be integers")
        idx = self.contiguous(self.astype(indices, int64))
        return idx, int(table_shape[0]), math.prod(table_shape[1:])

    def _launch_rows(self, what: str, dt: DType, src, idx, out, rows: int, row_len: int) -> None:
        """``{what}_rows`` (gather.cu): one thread per element of the picked rows; an index out of range
        sets ``bad``."""
        n = idx.size * row_len
        if n:
            bad = self.xp.zeros(1, dtype=np.int32)
            grid, block = self._grid(n)
            self.rt.launch(f"{what}_rows<{CTYPE[dt.name]}>", grid, block,
                           (src, idx, out, np.int64(idx.size), np.int64(rows), np.int64(row_len), bad))
            if int(self.rt.to_host(bad)[0]):
                raise IndexingError(f"{what}: an index is out of range for {rows} rows")

    def gather(self, table, indices):
        idx, rows, row_len = self._rows_args(tuple(table.shape), indices)
        table = self.contiguous(table)
        out = self._empty(tuple(indices.shape) + tuple(table.shape[1:]), as_dtype(table.dtype))
        self._launch_rows("gather", as_dtype(table.dtype), table, idx, out, rows, row_len)
        return out

    def scatter_add(self, shape, indices, src):
        shape = tuple(shape)
        idx, rows, row_len = self._rows_args(shape, indices)
        dt = as_dtype(src.dtype)
        if dt == bool_:
            src, dt = self.astype(src, int64), int64
        want = tuple(indices.shape) + shape[1:]
        if tuple(src.shape) != want:
            raise ValueError(f"scatter_add: src has shape {tuple(src.shape)}, expected {want}")
        src = self.contiguous(src)
        out = self.xp.zeros(shape, dtype=dt.numpy)
        self._launch_rows("scatter_add", dt, src, idx, out, rows, row_len)
        return out

    # --- layout (buffer, permute, strides: NdarrayLayout) ----------------------
    def view(self, a, shape):
        self._check_view(a)
        return self.reshape(a, shape)

    def reshape(self, a, shape):
        shape = tuple(shape)
        if math.prod(shape) != a.size or any(s < 0 for s in shape):
            raise IndexingError(f"cannot reshape {tuple(a.shape)} to {shape}")
        return self.contiguous(a).reshape(shape)

    def expand(self, a, shape):
        try:
            return self.xp.broadcast_to(a, tuple(shape))
        except ValueError:
            raise IndexingError(f"cannot expand shape {tuple(a.shape)} to {tuple(shape)}") from None

    def contiguous(self, a):
        if a.flags.c_contiguous:
            return a
        return self._map(a, "OpIdentity", as_dtype(a.dtype))

    def index(self, a, key):
        # a trailing Ellipsis keeps the result an array view even for all-integer keys
        key = (key if isinstance(key, tuple) else (key,)) + (Ellipsis,)
        try:
            return a[key]
        except IndexError as e:
            raise IndexingError(str(e)) from None

    def index_add(self, shape, key, src):
        out = self.xp.zeros(tuple(shape), dtype=src.dtype)
        target = self.index(out, key)
        try:
            src = self.xp.broadcast_to(src, target.shape)
        except ValueError:
            raise IndexingError(f"index_add: cannot add shape {tuple(src.shape)} into {tuple(target.shape)}") from None
        # basic indexing never selects an element twice and ``out`` is zeros: the sum is a copy into the view
        self._map_into(target, src, "OpIdentity")
        return out

    def synchronize(self) -> None:
        """Wait for every launched kernel (for timing)."""
        self.rt.synchronize()
