"""Forward vs reverse mode costs, finite differences and the h sweep, activation memory."""
import math

import numpy as np
import pytest

import engine
from engine.explain import (ExpressionError, activation_memory, central_differences, h_sweep, jacobian_costs,
                            op_counts)

SLIDE = "f = x1 + exp(1.5*x1 + 2*x2)"
X = {"x1": 3.0, "x2": 0.5}
NET = "y = sigmoid(W @ x + b)"
NET_IN = {"W": [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], "x": [0.1, 0.2, 0.3], "b": [0.0, 1.0]}


def test_jacobian_both_ways_agrees_with_numpy_and_counts_passes():
    jc = jacobian_costs(NET, NET_IN)
    assert (jc.n_inputs, jc.n_outputs) == (11, 2)
    assert jc.forward.passes == 11 and jc.reverse.passes == 2
    assert jc.agree and jc.max_difference < 1e-12
    W, x, b = (np.array(NET_IN[k]) for k in ("W", "x", "b"))
    s = 1 / (1 + np.exp(-(W @ x + b)))
    ds = s * (1 - s)
    J = np.asarray(jc.reverse.jacobian)
    np.testing.assert_allclose(J[:, 6:9], ds[:, None] * W, rtol=1e-12)   # d y / d x
    np.testing.assert_allclose(J[:, 9:], np.diag(ds), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(J[0, 0:3], ds[0] * x, rtol=1e-12)           # d y0 / d W[0]
    # one JVP pass and one backward pass cost a few ops each: totals scale with n and m
    assert jc.forward.forward_ops > jc.reverse.total_ops
    rows = jc.rows()
    assert [r["passes"] for r in rows] == [11, 2]


def test_scalar_output_reverse_mode_needs_one_backward_pass():
    jc = jacobian_costs(SLIDE, X)
    assert jc.reverse.passes == 1 and jc.forward.passes == 2
    assert jc.reverse.jacobian[0] == pytest.approx([1 + 1.5 * math.exp(5.5), 2 * math.exp(5.5)], rel=1e-12)
    assert jc.forward.jacobian[0] == pytest.approx(jc.reverse.jacobian[0], rel=1e-12)


def test_op_counts_are_what_the_engine_ran():
    c = op_counts(SLIDE, X)
    assert c["forward_ops"] == 5
    counted = []
    with engine.trace_ops(lambda op, i, p, o: counted.append(op.name)):
        x1, x2 = engine.tensor(3.0, requires_grad=True), engine.tensor(0.5, requires_grad=True)
        f = x1 + (1.5 * x1 + 2.0 * x2).exp()
        n_fwd = len(counted)
        f.backward()
    assert n_fwd == 5 and c["backward_ops"] == len(counted) - n_fwd


def test_central_differences_per_input_and_float32():
    fd = central_differences(NET.replace("y =", "y = sum(") + ")", NET_IN)
    assert np.asarray(fd["W"]).shape == (2, 3)
    fd32 = central_differences(SLIDE, X, h=1e-2, dtype="float32")
    assert fd32["x1"] == pytest.approx(1 + 1.5 * math.exp(5.5), rel=1e-3)


def test_h_sweep_shows_truncation_and_rounding_and_dtype_dependent_best_h():
    sw = h_sweep(SLIDE, X, wrt="x1")
    assert sw.exact == pytest.approx(1 + 1.5 * math.exp(5.5), rel=1e-14)
    assert len(sw.rows) == 24 and {r.dtype for r in sw.rows} == {"float32", "float64"}
    e32 = {r.h: r.abs_error for r in sw.rows if r.dtype == "float32"}
    e64 = {r.h: r.abs_error for r in sw.rows if r.dtype == "float64"}
    # truncation: big h is bad in both; rounding: tiny h ruins float32 long before float64
    assert e64[1e-1] > 100 * e64[sw.best_h["float64"]]
    assert e32[1e-7] > 100 * e32[sw.best_h["float32"]]
    assert sw.best_h["float32"] > sw.best_h["float64"]
    assert 1e-4 <= sw.best_h["float32"] <= 1e-1 and 1e-9 <= sw.best_h["float64"] <= 1e-4
    assert min(e64.values()) < 1e-6 * sw.exact


def test_h_sweep_bad_input_name():
    with pytest.raises(ExpressionError, match="not an input"):
        h_sweep(SLIDE, X, wrt="x9")


def test_activation_memory_measured_on_the_engine_and_scaling():
    m = activation_memory(depth=3, width=16, batch=8, dtype="float32")
    assert len(m.layers) == 3
    assert all(layer.kept_bytes >= layer.minimum_bytes > 0 for layer in m.layers)
    # our engine keeps matmul output, bias-add output and the layer input: 3 buffers of batch x width
    assert m.layers[1].kept_bytes == 3 * 8 * 16 * 4
    assert m.minimum_total == 8 * (16 + 3 * 16) * 4
    m2 = activation_memory(depth=3, width=16, batch=16, dtype="float32")
    assert m2.kept_total == 2 * m.kept_total            # linear in batch
    m3 = activation_memory(depth=6, width=16, batch=8, dtype="float32")
    assert m3.kept_total - m.kept_total == 3 * m.layers[1].kept_bytes  # linear in depth
    m64 = activation_memory(depth=3, width=16, batch=8, dtype="float64")
    assert m64.kept_total == 2 * m.kept_total
    assert m.parameter_bytes == 3 * (16 * 16 + 16) * 4


def test_activation_memory_rejects_bad_sizes():
    with pytest.raises(ValueError):
        activation_memory(depth=0, width=4, batch=4)
    with pytest.raises(ValueError, match="too large"):
        activation_memory(depth=100, width=4096, batch=4096)
