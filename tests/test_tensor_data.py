"""Strided storage and index maths, checked against NumPy's own strides (Hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import tensor
from engine.tensor_data import (BroadcastError, IndexingError, TensorData, ViewError, broadcast_index, broadcast_shape,
                                strides_from_shape, to_index)

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@given(shapes)
def test_strides_match_numpy(shape):
    a = np.zeros(shape)
    assert strides_from_shape(shape) == tuple(s // 8 for s in a.strides)


@settings(max_examples=60, deadline=None)
@given(shapes, st.data())
def test_permuted_positions_match_numpy(shape, data):
    order = data.draw(st.permutations(range(len(shape))))
    values = np.arange(int(np.prod(shape)), dtype=np.float64)
    td = TensorData.from_flat(values.tolist(), shape, "d").permute(order)
    ref = values.reshape(shape).transpose(order)
    assert td.values() == ref.reshape(-1).tolist()
    assert td.is_contiguous() == (ref.flags.c_contiguous or ref.size <= 1)
    for ordinal in range(ref.size):
        idx = to_index(ordinal, ref.shape)
        assert td.get(idx) == ref[tuple(idx)]


@settings(max_examples=60, deadline=None)
@given(shapes, shapes)
def test_broadcast_shape_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(BroadcastError):
            broadcast_shape(a, b)
        return
    assert broadcast_shape(a, b) == expected
    big = np.arange(int(np.prod(a))).reshape(a)
    expanded = np.broadcast_to(big, expected)
    for ordinal in range(int(np.prod(expected))):
        idx = to_index(ordinal, expected)
        small = broadcast_index(idx, expected, a)
        assert big[tuple(small)] == expanded[tuple(idx)]


def test_views_share_storage():
    td = TensorData.from_flat([0.0, 1, 2, 3, 4, 5], (2, 3), "d")
    t = td.permute((1, 0))
    e = TensorData.from_flat([1.0, 2.0], (2, 1), "d").expand((2, 3))
    assert t.storage is td.storage and e.strides == (1, 0)
    td.storage[1] = 42.0
    assert t.get((1, 0)) == 42.0


def test_view_of_non_contiguous_is_an_error_on_every_backend():
    for backend in ("numpy", "python"):
        x = tensor(np.arange(6.0).reshape(2, 3), backend=backend)
        with pytest.raises(ViewError, match="contiguous"):
            x.T.view(6)
        np.testing.assert_array_equal(x.T.contiguous().view(6).numpy(), np.arange(6.0).reshape(2, 3).T.ravel())
        np.testing.assert_array_equal(x.T.reshape(6).numpy(), np.arange(6.0).reshape(2, 3).T.ravel())


def test_permute_is_a_view_in_both_backends():
    for backend in ("numpy", "python"):
        x = tensor(np.arange(24.0).reshape(2, 3, 4), backend=backend)
        p = x.permute(2, 0, 1)
        assert p.strides() == (1, 12, 4)
        assert not p.is_contiguous()


# --- broadcasting + non-contiguous layouts through the engine, both backends -------------------

@st.composite
def broadcast_pair(draw):
    out = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    def sub():
        n = draw(st.integers(0, len(out)))
        return tuple(1 if draw(st.booleans()) else s for s in out[len(out) - n:])
    return tuple(out), sub(), sub()


@settings(max_examples=25, deadline=None)
@given(broadcast_pair(), st.sampled_from(["numpy", "python"]), st.booleans(), st.integers(0, 10_000))
def test_broadcast_binary_ops_grad(pair, backend, permuted, seed):
    _, sa, sb = pair
    rng = np.random.default_rng(seed)
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)

    def make(x):
        if permuted and x.ndim >= 2:  # store transposed, then permute back: a non-contiguous input
            t = tensor(np.ascontiguousarray(x.T), requires_grad=True, backend=backend)
            return t, lambda v: v.permute(*reversed(range(x.ndim)))
        return tensor(x, requires_grad=True, backend=backend), lambda v: v

    (a, fa), (b, fb) = make(a_np), make(b_np)
    f = lambda u, v: fa(u) * fb(v) + fa(u).exp() - fb(v)  # noqa: E731
    np.testing.assert_allclose(f(a, b).numpy(), a_np * b_np + np.exp(a_np) - b_np, rtol=1e-12, atol=1e-12)
    assert engine.gradcheck(f, [a, b], atol=1e-7, rtol=1e-6).ok


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.sampled_from(["numpy", "python"]))
def test_matmul_of_transposed_views(m, k, n, backend):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = tensor(rng.standard_normal((k, m)), requires_grad=True, backend=backend)
    b = tensor(rng.standard_normal((n, k)), requires_grad=True, backend=backend)
    f = lambda x, y: x.T @ y.T  # noqa: E731
    np.testing.assert_allclose(f(a, b).numpy(), a.numpy().T @ b.numpy().T, rtol=1e-12)
    assert engine.gradcheck(f, [a, b], atol=1e-7, rtol=1e-6).ok


slices = st.builds(slice, st.none() | st.integers(-5, 5), st.none() | st.integers(-5, 5),
                   st.none() | st.integers(-3, 3).filter(lambda s: s != 0))


@settings(max_examples=80, deadline=None)
@given(st.lists(slices, min_size=1, max_size=2), st.sampled_from(["numpy", "python"]))
def test_slicing_with_any_step_matches_numpy(key, backend):
    # negative steps are views with negative strides (x[::-1]); the gradient lands back in place
    key = tuple(key)
    a = np.arange(20.0).reshape(4, 5)
    x = tensor(a, requires_grad=True, backend=backend)
    y = x[key]
    np.testing.assert_array_equal(y.numpy(), a[key])
    r = np.arange(1.0, a[key].size + 1).reshape(a[key].shape)
    (y * r).sum().backward()
    ref = np.zeros_like(a)
    ref[key] += r
    np.testing.assert_array_equal(x.grad.numpy(), ref)
