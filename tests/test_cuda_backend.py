"""The CUDA backend without a GPU: clear unavailability, and the host-side index maths.

Kernel results are checked in tests/test_cuda_emulated.py (emulator, and GPU when present).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import BackendUnavailable, tensor
from engine.backends import known
from engine.backends.cuda_backend import (CudaBackend, collapse_dims, contiguous_strides, elementwise_meta,
                                          kernel_names, offset_of, reduce_meta)

HAS_GPU = CudaBackend.is_available()


def test_cuda_is_a_known_backend():
    assert "cuda" in known()


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present: the unavailable path cannot be seen here")
def test_without_a_gpu_cuda_is_unavailable_with_a_reason():
    reason = CudaBackend.unavailable_reason()
    assert reason and ("CuPy" in reason)
    assert "cuda" not in engine.available_backends()
    assert "numpy" in engine.available_backends()
    with pytest.raises(BackendUnavailable, match=r"backend 'cuda' is not available on this machine: .*CuPy"):
        tensor([1.0, 2.0], backend="cuda")
    with pytest.raises(BackendUnavailable):
        CudaBackend()


def test_missing_cupy_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    assert not CudaBackend.is_available()
    reason = CudaBackend.unavailable_reason()
    assert "pip install cupy-cuda12x" in reason and "cupy-cuda13x" in reason


@pytest.mark.skipif(not HAS_GPU, reason="no GPU: " + CudaBackend.unavailable_reason())
def test_with_a_gpu_cuda_is_listed_and_runs():
    assert "cuda" in engine.available_backends()
    x = tensor([1.0, 2.0, 3.0], requires_grad=True, backend="cuda")
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_kernel_names_cover_every_op():
    names = [n for ns in kernel_names().values() for n in ns]
    assert len(names) == len(set(names))
    for functor in ("OpExp", "OpSigmoid", "OpMaximum", "OpLt", "OpIdentity"):
        assert any(functor in n for n in names)


# --- index maths: what the kernels are told must walk NumPy's elements -------------

def _view_offset(view: np.ndarray, base: np.ndarray) -> int:
    return (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize


@st.composite
def strided_views(draw):
    """(base, view): a view of a flat base made by reshaping, permuting, slicing, broadcasting."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=4)))
    base = np.arange(int(np.prod(shape)) * 4, dtype=np.float64)
    v = base[: int(np.prod(shape)) * 4].reshape(shape + (4,))[..., draw(st.integers(0, 3))] if shape else base[:1].reshape(())
    if len(shape) > 1:
        v = v.transpose(draw(st.permutations(range(len(shape)))))
    if v.ndim and draw(st.booleans()):
        d = draw(st.integers(0, v.ndim - 1))
        v = v[(slice(None),) * d + (slice(None, None, draw(st.sampled_from([-1, 2, -2]))),)]
    if v.ndim and draw(st.booleans()):
        d = draw(st.integers(0, v.ndim - 1))
        v = v[(slice(None),) * d + (slice(0, 1),)]
        v = np.broadcast_to(v, v.shape[:d] + (3,) + v.shape[d + 1:])
    return base, v


@settings(max_examples=150, deadline=None)
@given(strided_views())
def test_collapsed_strides_walk_the_same_elements(bv):
    base, v = bv
    strides = tuple(s // v.itemsize for s in v.strides)
    cshape, (cstr,) = collapse_dims(v.shape, strides)
    start = _view_offset(v, base)
    walked = [base[start + offset_of(i, cshape, cstr)] for i in range(v.size)]
    np.testing.assert_array_equal(walked, v.reshape(-1))
    assert len(cshape) <= max(v.ndim, 0)


@settings(max_examples=100, deadline=None)
@given(strided_views(), st.data())
def test_reduce_meta_rows_and_lengths(bv, data):
    base, v = bv
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(v.ndim - 1, 0)), max_size=v.ndim)))) if v.ndim else ()
    strides = tuple(s // v.itemsize for s in v.strides)
    meta, rows, length = reduce_meta(v.shape, strides, axes)
    nk = meta[0]
    kshape, kstr = meta[1:1 + nk], meta[1 + nk:1 + 2 * nk]
    nr = meta[1 + 2 * nk]
    rshape, rstr = meta[2 + 2 * nk:2 + 2 * nk + nr], meta[2 + 2 * nk + nr:]
    start = _view_offset(v, base)
    sums = [sum(base[start + offset_of(r, kshape, kstr) + offset_of(j, rshape, rstr)] for j in range(length))
            for r in range(rows)]
    np.testing.assert_allclose(sums, np.sum(v, axis=axes).reshape(-1) if v.ndim else [float(v)])


def test_elementwise_meta_broadcast_scalar_collapses_to_one_dim():
    shape = (4, 5, 6)
    meta = elementwise_meta(shape, contiguous_strides(shape), (0, 0, 0), contiguous_strides(shape))
    assert meta == [1, 120, 1, 0, 1]
    with pytest.raises(ValueError, match="at most"):
        elementwise_meta((2,) * 17, tuple(3 ** d for d in range(17)))  # nothing collapses
