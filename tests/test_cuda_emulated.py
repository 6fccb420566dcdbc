"""The CUDA backend's kernels against NumPy, on two runtimes.

``emulator``: ``CudaBackend(EmulatedRuntime())`` stores arrays in NumPy and runs every
launch of engine/kernels/*.cu through g++ and CPU threads (tests/cuda_emulator), with
tiny grids so every grid-stride loop, row loop and edge tile is exercised. It runs
wherever g++ is, GPU or not. ``gpu``: the real backend (CuPy + NVRTC) on an NVIDIA GPU;
skipped with the reason when there is none. What neither covers here (speed) is
benchmarks/gpu_check.py's job.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
import test_ops
from engine import nn, optim, tensor
from engine.backends import get_backend
from engine.backends.cuda_backend import CudaBackend
from engine.dtypes import bool_, float32, float64, int64
from engine.tensor_data import IndexingError, ViewError
from op_table import OP_TABLE
from tests.cuda_emulator import emulator

_RUNTIMES = [
    pytest.param("emulator", id="emulator", marks=pytest.mark.skipif(
        emulator.compiler() is None, reason="no g++: the CUDA kernel emulator cannot be built")),
    pytest.param("gpu", id="gpu", marks=pytest.mark.skipif(
        not CudaBackend.is_available(), reason=f"no GPU: {CudaBackend.unavailable_reason()}")),
]


@pytest.fixture(scope="module", params=_RUNTIMES)
def emu(request):
    if request.param == "gpu":
        return get_backend("cuda")
    return CudaBackend(emulator.EmulatedRuntime(max_blocks=3, threads=32, reduce_threads=16))


def np_of(be, a):
    return np.asarray(be.to_numpy(a))


# --- the lead's op table, on the emulated CUDA backend -------------------------------

@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_op_table_forward(case, emu):
    test_ops.test_forward_matches_numpy(case, emu)
    test_ops.test_float32_forward(case, emu)


@pytest.mark.parametrize("case", OP_TABLE, ids=lambda c: c.name)
def test_op_table_gradients(case, emu):
    test_ops.test_gradient_matches_central_differences(case, emu)
    test_ops.test_jvp_matches_vjp(case, emu)


def test_kernels_really_ran(emu):
    if not hasattr(emu.rt, "launches"):
        pytest.skip("only the emulator records launches")
    emu.rt.launches.clear()
    x = tensor(np.ones((3, 4)), backend=emu, requires_grad=True)
    (x * 2.0).sum().backward()
    assert any(n.startswith("zip_") for n in emu.rt.launches)
    assert any(n.startswith("reduce_rows") for n in emu.rt.launches)


# --- elementwise over strided, broadcast, permuted layouts ------------------------

def _layout(draw, shape):
    """A NumPy array of ``shape`` as a permuted, sliced or broadcast view."""
    kind = draw(st.sampled_from(["contig", "permuted", "sliced", "broadcast"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "permuted" and len(shape) > 1:
        order = draw(st.permutations(range(len(shape))))
        inv = np.argsort(order)
        return rng.standard_normal(tuple(shape[i] for i in inv)).transpose(order)
    if kind == "sliced":
        big = rng.standard_normal(tuple(2 * s + 1 for s in shape))
        return big[tuple(slice(1, 1 + 2 * s, 2) for s in shape)][tuple(slice(None, None, -1) if i == 0 else slice(None)
                                                                       for i in range(len(shape)))]
    if kind == "broadcast" and shape:
        small = rng.standard_normal((1,) + tuple(shape[1:]))
        return np.broadcast_to(small, tuple(shape))
    return rng.standard_normal(tuple(shape))


def _to_backend_view(be, arr, dtype):
    """The same layout on the backend: contiguous base + the same view ops."""
    if arr.strides and 0 in arr.strides:
        base = be.array(np.ascontiguousarray(arr[tuple(slice(0, 1) if s == 0 else slice(None) for s in arr.strides)]), dtype)
        return be.expand(base, arr.shape)
    return be.array(arr, dtype)  # copied: layouts are covered by the permute/slice cases below


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_binary_broadcast_on_strided_views(emu, data):
    ndim = data.draw(st.integers(0, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    bshape = tuple(s if data.draw(st.booleans()) else 1 for s in shape)[data.draw(st.integers(0, ndim)):]
    a, b = _layout(data.draw, shape), _layout(data.draw, bshape)
    op = data.draw(st.sampled_from(["add", "sub", "mul", "maximum", "gt", "eq"]))
    dt = data.draw(st.sampled_from([float32, float64]))
    ta = emu.array(a, dt)
    # build a permuted / sliced view on the device from a contiguous copy of its base
    if a.ndim > 1:
        order = data.draw(st.permutations(range(a.ndim)))
        ta = emu.permute(emu.array(np.ascontiguousarray(a.transpose(np.argsort(order))), dt), order)
        assert np_of(emu, ta).shape == a.shape
    if a.ndim >= 1 and a.shape[0] > 1 and data.draw(st.booleans()):
        ta = emu.index(emu.array(np.concatenate([a, a], 0)[::-1], dt), slice(None, None, -2))
        a = np.concatenate([a, a], 0)[::-1][::-2]
    tb = _to_backend_view(emu, b, dt)
    ref = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "maximum": "maximum",
                       "gt": "greater", "eq": "equal"}[op])(a.astype(dt.numpy), b.astype(dt.numpy))
    out = emu.binary(op, ta, tb)
    assert emu.dtype(out) == (bool_ if op in ("gt", "eq") else dt)
    np.testing.assert_array_equal(np_of(emu, out), ref)


@pytest.mark.parametrize("n", [1, 95, 96, 383, 384, 385, 1000, 4099])
def test_contiguous_fast_path_rounds_and_tails(emu, n):
    """Around multiples of the grid stride (96 threads in the emulator) and of 4 strides."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ta, tb = emu.array(a, float32), emu.array(b, float32)
    np.testing.assert_array_equal(np_of(emu, emu.binary("add", ta, tb)), a + b)
    np.testing.assert_array_equal(np_of(emu, emu.binary("lt", ta, tb)), a < b)
    np.testing.assert_array_equal(np_of(emu, emu.unary("neg", ta)), -a)
    np.testing.assert_array_equal(np_of(emu, emu.astype(ta, float64)), a.astype(np.float64))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_unary_and_contiguous_on_permuted_views(emu, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    order = data.draw(st.permutations(range(len(shape))))
    x = np.random.default_rng(data.draw(st.integers(0, 999))).standard_normal(shape)
    t = emu.permute(emu.array(x, float64), order)
    ref = x.transpose(order)
    np.testing.assert_array_equal(np_of(emu, emu.contiguous(t)), ref)
    assert emu.is_contiguous(emu.contiguous(t))
    np.testing.assert_allclose(np_of(emu, emu.unary("sigmoid", t)), 1 / (1 + np.exp(-ref)), rtol=1e-14)
    np.testing.assert_array_equal(np_of(emu, emu.unary("relu", t)), np.maximum(ref, 0))


def test_special_values_match_numpy(emu):
    """Every declared kernel (engine.ops declares them; a new op's kernel is checked here unasked) gives
    the NumPy backend's values on zeros, infinities, NaN and overflowing inputs."""
    from engine.backends.base import BINARY_OPS, UNARY_OPS
    from engine.backends.numpy_backend import NumpyBackend
    ref_be = NumpyBackend()
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 800.0, -800.0])
    t, y = emu.array(x, float64), emu.array(x[::-1].copy(), float64)
    with np.errstate(all="ignore"):
        for op in sorted(UNARY_OPS):
            np.testing.assert_allclose(np_of(emu, emu.unary(op, t)), ref_be.unary(op, x), rtol=1e-15, atol=0,
                                       err_msg=op)
        for op in sorted(BINARY_OPS):
            np.testing.assert_array_equal(np_of(emu, emu.binary(op, t, y)), ref_be.binary(op, x, x[::-1].copy()),
                                          err_msg=op)


def test_dtype_rules(emu):
    i = emu.array([3, -2, 5], int64)
    f = emu.array([0.5, 1.0, 2.0], float32)
    assert emu.dtype(emu.binary("add", i, f)) == float32          # engine.dtypes.result_dtype
    assert emu.dtype(emu.binary("div", i, i)) == float64
    np.testing.assert_array_equal(np_of(emu, emu.binary("div", i, i)), [1.0, 1.0, 1.0])
    assert emu.dtype(emu.unary("neg", i)) == int64
    assert emu.dtype(emu.unary("exp", i)) == float64
    np.testing.assert_array_equal(np_of(emu, emu.astype(f, int64)), [0, 1, 2])
    np.testing.assert_array_equal(np_of(emu, emu.astype(emu.array([0.0, 2.0, -1.0], float64), bool_)),
                                  [False, True, True])
    assert emu.dtype(emu.reduce("sum", emu.array([True, True, False], bool_), (0,), False)) == int64
    np.testing.assert_array_equal(np_of(emu, emu.binary("pow", i, emu.array(2, int64))), [9, 4, 25])


def test_bool_tensors_and_max_dim_as_pytorch(emu):
    """tensor(True) is bool on this backend too; numbers join it as in PyTorch; a bool condition selects;
    max(dim) gives values with a gradient and int64 indices without one (tests/test_torch_conventions.py)."""
    b = tensor([True, False, True], backend=emu)
    assert b.dtype is bool_ and tensor(True, backend=emu).dtype is bool_
    assert (b + 1).dtype is int64 and (b + 1).tolist() == [2, 1, 2]
    assert (b * 2.5).dtype is float64 and (b + b).dtype is bool_ and b.sum().dtype is int64
    x = tensor([[1.0, 5.0, 2.0], [7.0, -1.0, 3.0]], backend=emu, requires_grad=True)
    np.testing.assert_array_equal(engine.where(x > 2.0, x, 0.0).numpy(), [[0, 5, 0], [7, 0, 3]])
    values, indices = x.max(1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0] and indices.dtype is int64
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


# --- reductions -------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reduce_any_dims_any_layout(emu, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=0, max_size=4)))
    x = np.random.default_rng(data.draw(st.integers(0, 999))).standard_normal(shape)
    t = emu.array(x, float64)
    if len(shape) > 1:
        order = data.draw(st.permutations(range(len(shape))))
        t, x = emu.permute(t, order), x.transpose(order)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)), max_size=len(shape)))))
    axes = axes if shape else ()
    keep = data.draw(st.booleans())
    np.testing.assert_allclose(np_of(emu, emu.reduce("sum", t, axes, keep)), np.sum(x, axis=axes, keepdims=keep),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np_of(emu, emu.reduce("max", t, axes, keep)), np.max(x, axis=axes, keepdims=keep))


@pytest.mark.parametrize("length", [1, 15, 16, 17, 33, 1000])
def test_reduce_row_lengths_around_the_block_size(emu, length):
    x = np.random.default_rng(length).standard_normal((5, length)).astype(np.float32)
    t = emu.array(x, float32)
    np.testing.assert_allclose(np_of(emu, emu.reduce("sum", t, (1,), False)), x.astype(np.float64).sum(1), rtol=1e-6)
    np.testing.assert_array_equal(np_of(emu, emu.reduce("max", t, (1,), False)), x.max(1))
    # the transposed layout: the reduced dim is the strided one
    tt = emu.permute(emu.array(np.ascontiguousarray(x.T), float32), (1, 0))
    np.testing.assert_allclose(np_of(emu, emu.reduce("sum", tt, (1,), False)), x.astype(np.float64).sum(1), rtol=1e-6)


def test_reduce_nan_and_empty(emu):
    x = emu.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], float64)
    np.testing.assert_array_equal(np_of(emu, emu.reduce("max", x, (1,), False)), [np.nan, 5.0])
    e = emu.array(np.zeros((3, 0)), float64)
    np.testing.assert_array_equal(np_of(emu, emu.reduce("sum", e, (1,), False)), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="empty"):
        emu.reduce("max", e, (1,), False)


# --- matmul -------------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 2), (127, 9, 129), (128, 8, 128), (130, 17, 1), (1, 300, 257)])
@pytest.mark.parametrize("dtype", [float32, float64])
def test_matmul_edge_tiles(emu, m, k, n, dtype):
    rng = np.random.default_rng(m * 1000 + n)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    out = np_of(emu, emu.matmul(emu.array(a, dtype), emu.array(b, dtype)))
    tol = 1e-4 if dtype == float32 else 1e-12
    np.testing.assert_allclose(out, a @ b, rtol=tol, atol=tol)
    assert out.dtype == dtype.numpy


@pytest.mark.parametrize("min_blocks", [1, 2])
def test_matmul_float32_both_register_budgets(emu, min_blocks):
    """Both compiled MIN_BLOCKS variants of matmul_tiled<float> give the same product."""
    rng = np.random.default_rng(min_blocks)
    a, b = rng.standard_normal((2, 129, 20)), rng.standard_normal((20, 131))
    saved = emu.matmul_min_blocks["float32"]
    emu.matmul_min_blocks["float32"] = min_blocks
    try:
        out = np_of(emu, emu.matmul(emu.array(a, float32), emu.array(b, float32)))
    finally:
        emu.matmul_min_blocks["float32"] = saved
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_batched_broadcast_transposed(emu):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 20, 6))
    b = rng.standard_normal((3, 9, 6))         # used transposed: (3, 6, 9) with strides, no copy
    ta = emu.array(a, float64)
    tb = emu.permute(emu.array(b, float64), (0, 2, 1))
    assert not emu.is_contiguous(tb)
    np.testing.assert_allclose(np_of(emu, emu.matmul(ta, tb)), a @ b.transpose(0, 2, 1), rtol=1e-12)
    v = rng.standard_normal(6)
    np.testing.assert_allclose(np_of(emu, emu.matmul(ta, emu.array(v, float64))), a @ v, rtol=1e-12)
    np.testing.assert_allclose(np_of(emu, emu.matmul(emu.array(v, float64), tb)), v @ b.transpose(0, 2, 1),
                               rtol=1e-12)
    i = rng.integers(-5, 5, (4, 3))
    np.testing.assert_array_equal(np_of(emu, emu.matmul(emu.array(i, int64), emu.array(i.T, int64))), i @ i.T)
    z = emu.matmul(emu.array(np.zeros((2, 0)), float64), emu.array(np.zeros((0, 3)), float64))
    np.testing.assert_array_equal(np_of(emu, z), np.zeros((2, 3)))


# --- gather / scatter-add -------------------------------------------------------

def test_gather_and_scatter_add_with_repeats(emu):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((7, 2, 3))
    idx = np.array([[0, 6, 6, -1], [3, 0, 0, 0]])
    out = emu.gather(emu.array(table, float32), emu.array(idx, int64))
    np.testing.assert_array_equal(np_of(emu, out), table.astype(np.float32)[idx])
    src = rng.standard_normal((2, 4, 2, 3))
    ref = np.zeros((7, 2, 3))
    np.add.at(ref, idx.reshape(-1), src.reshape(-1, 2, 3))
    res = emu.scatter_add((7, 2, 3), emu.array(idx, int64), emu.array(src, float64))
    np.testing.assert_allclose(np_of(emu, res), ref, rtol=1e-12)   # row 0: four contributions, row 6: three


def test_out_of_range_rows_raise(emu):
    table = emu.array(np.ones((3, 2)), float64)
    with pytest.raises(IndexingError, match="out of range"):
        emu.gather(table, emu.array([0, 3], int64))
    with pytest.raises(IndexingError, match="out of range"):
        emu.scatter_add((3, 2), emu.array([-4], int64), emu.array(np.ones((1, 2)), float64))


# --- layout ---------------------------------------------------------------------

def test_layout_ops(emu):
    x = np.arange(24.0).reshape(2, 3, 4)
    t = emu.array(x, float64)
    p = emu.permute(t, (2, 0, 1))
    assert emu.strides(p) == (1, 12, 4)
    with pytest.raises(ViewError):
        emu.view(p, (24,))
    np.testing.assert_array_equal(np_of(emu, emu.reshape(p, (4, 6))), x.transpose(2, 0, 1).reshape(4, 6))
    np.testing.assert_array_equal(np_of(emu, emu.index(t, (1, slice(None, None, -1), 2))), x[1, ::-1, 2])
    assert np_of(emu, emu.index(t, (1, 2, 3))).shape == ()
    got = emu.index_add((2, 3, 4), (slice(None), 1), emu.array(np.ones(4), float64))
    ref = np.zeros((2, 3, 4))
    ref[:, 1] += 1.0
    np.testing.assert_array_equal(np_of(emu, got), ref)
    with pytest.raises(IndexingError):
        emu.expand(t, (5, 3, 4))


# --- the engine, nn and optimisers run unchanged ----------------------------------

def test_training_steps_match_the_numpy_backend(emu):
    """Embedding-bag + Linear + BCE with Adam: same losses and weights on both backends."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 20, (8, 5))
    labels = rng.integers(0, 2, 8).astype(np.float64)

    def run(backend):
        engine.manual_seed(0)
        emb = nn.Embedding(20, 6, backend="numpy")
        lin = nn.Linear(6, 1, backend="numpy", seed=1)
        emb.to(backend), lin.to(backend)
        opt = optim.Adam(list(emb.parameters()) + list(lin.parameters()), lr=0.05)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            h = emb(tensor(tokens, dtype="int64", backend=backend)).mean(1).relu()
            logits = lin(h).reshape(-1)
            loss = engine.binary_cross_entropy_with_logits(logits, tensor(labels, backend=backend))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.numpy() for p in list(emb.parameters()) + list(lin.parameters())]

    ref_losses, ref_params = run("numpy")
    losses, params = run(emu)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p, r, rtol=1e-9, atol=1e-12)


def test_sentiment_trainer_matches_the_numpy_backend(emu, monkeypatch):
    """sentiment/trainer.py's HW2 training, selected by name ``backend="cuda"``, unchanged."""
    from sentiment.data import load_sst2
    from sentiment.embeddings import load_glove
    from sentiment.trainer import EpochEnd, SentimentTrainer, TrainConfig
    try:
        train, dev = load_sst2()
        glove = load_glove()
    except (FileNotFoundError, OSError) as e:
        pytest.skip(f"SST-2 / GloVe not on this machine: {e}")
    import engine.backends as backends
    monkeypatch.setitem(backends._INSTANCES, "cuda", emu)  # "cuda" resolves to this runtime's backend

    def epochs(backend):
        trainer = SentimentTrainer(train[:30], dev[:20], glove, TrainConfig(epochs=2, backend=backend))
        return [(e.train_loss, e.train_accuracy, e.val_accuracy) for e in trainer.events() if isinstance(e, EpochEnd)]

    ours, ref = epochs("cuda"), epochs("numpy")
    assert len(ours) == 2
    for (loss, acc, val), (rloss, racc, rval) in zip(ours, ref):
        assert loss == pytest.approx(rloss, rel=1e-10)
        assert (acc, val) == (racc, rval)
