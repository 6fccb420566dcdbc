"""Forward vs reverse mode costs, finite differences and the h sweep, activation memory."""
import math

import numpy as np
import pytest

import engine
from explorer.explain import (ExpressionError, activation_memory, central_differences, h_sweep, jacobian_costs,
                            op_counts)
from explorer.explain.costs import directional_derivatives, error_model, jacobian_sizes, memory_at_scale

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
    assert {(r.dtype, r.scheme) for r in sw.rows} == {(d, s) for d in ("float32", "float64")
                                                     for s in ("central", "forward")}
    e32 = dict(zip(*sw.series("central", "float32")))
    e64 = dict(zip(*sw.series("central", "float64")))
    assert len(e64) == 45 and 1e-1 in e64 and 1e-12 in e64  # four points per decade, powers of ten included
    # truncation: big h is bad in both; rounding: tiny h ruins float32 long before float64
    assert e64[1e-1] > 100 * e64[1e-5]
    assert e32[1e-7] > 100 * e32[1e-3]
    assert sw.best_h["float32"] > sw.best_h["float64"]
    assert min(e64.values()) < 1e-6 * sw.exact


def test_best_h_is_the_minimiser_of_the_error_model_with_the_engines_third_derivative():
    sw = h_sweep(SLIDE, X, wrt="x1")
    e55 = math.exp(5.5)
    f, d1, d2, d3 = sw.derivatives  # nested engine.grad
    assert f == pytest.approx(3 + e55, rel=1e-14) and d1 == pytest.approx(1 + 1.5 * e55, rel=1e-14)
    assert d2 == pytest.approx(1.5 ** 2 * e55, rel=1e-12) and d3 == pytest.approx(1.5 ** 3 * e55, rel=1e-12)
    eps64, eps32 = 2.0 ** -53, 2.0 ** -24
    assert sw.best_h["float64"] == pytest.approx((3 * eps64 * f / d3) ** (1 / 3), rel=1e-9)
    assert sw.best_h["float32"] == pytest.approx((3 * eps32 * f / d3) ** (1 / 3), rel=1e-9)
    # the notes: about 5e-6 in float64 and 4e-3 in float32 (exercise 7); a band around them
    assert 1e-6 <= sw.best_h["float64"] <= 3e-5 and 1e-3 <= sw.best_h["float32"] <= 1e-2
    # the model is the measured error's envelope: no measured error exceeds it by more than a small
    # factor, for either scheme (rounding noise can fall far below it: the sweep's lucky dips)
    for scheme in ("central", "forward"):
        m = sw.model(scheme, "float64")
        assert all(e <= 10 * m.error(h) for h, e in zip(*sw.series(scheme, "float64")))
    m = sw.model("central", "float64")
    e64 = dict(zip(*sw.series("central", "float64")))
    assert e64[1e-2] == pytest.approx(m.truncation(1e-2), rel=0.05)   # h^2 |f'''| / 6
    assert e64[1e-12] < 20 * m.rounding(1e-12)


def test_forward_difference_is_first_order_central_second_order():
    sw = h_sweep(SLIDE, X, wrt="x1", dtypes=("float64",))
    fwd = dict(zip(*sw.series("forward", "float64")))
    cen = dict(zip(*sw.series("central", "float64")))

    def slope(e):  # error ratio over one decade of h
        return math.log10(e[1e-2] / e[1e-3])

    assert slope(fwd) == pytest.approx(1.0, abs=0.05) and slope(cen) == pytest.approx(2.0, abs=0.05)
    assert fwd[1e-3] > 1000 * cen[1e-3]
    assert fwd[1e-2] == pytest.approx(sw.model("forward", "float64").truncation(1e-2), rel=0.05)
    best_fwd = sw.model("forward", "float64").best_h
    assert best_fwd == pytest.approx(2 * (2.0 ** -53 * sw.derivatives[0] / sw.derivatives[2]) ** 0.5, rel=1e-9)
    assert best_fwd < sw.best_h["float64"]


def test_best_h_falls_back_to_the_lowest_point_without_truncation_error():
    sw = h_sweep("f = x * x", "x = 3")  # central differences are exact for a quadratic: the third derivative is 0
    assert sw.derivatives[3] == 0 and sw.model("central", "float64").best_h is None
    assert sw.best_h == sw.lowest_h
    with pytest.raises(ValueError, match="scheme"):
        error_model("backward", "float64", 1.0, 1.0, 1.0)


def test_directional_derivatives_of_a_tensor_element():
    inputs = {"W": [[1.0, 2.0], [0.5, -1.0]], "x": [0.3, -0.2]}
    f, d1, d2, d3 = directional_derivatives("f = sum(tanh(W @ x))", inputs, "W", index=2)
    W, x = np.array(inputs["W"]), np.array(inputs["x"])
    z = W[1] @ x  # W[1, 0] (flat index 2) only moves the second output, with slope x[0]
    t = np.tanh(z)
    assert f == pytest.approx(np.tanh(W @ x).sum(), rel=1e-14)
    assert d1 == pytest.approx((1 - t ** 2) * x[0], rel=1e-12)
    assert d2 == pytest.approx(-2 * t * (1 - t ** 2) * x[0] ** 2, rel=1e-12)
    assert d3 == pytest.approx((-2 + 6 * t ** 2) * (1 - t ** 2) * x[0] ** 3, rel=1e-10)


def test_h_sweep_bad_input_name():
    with pytest.raises(ExpressionError, match="not an input"):
        h_sweep(SLIDE, X, wrt="x9")


def test_activation_memory_measured_on_the_engine_and_scaling():
    m = activation_memory(depth=3, width=16, batch=8, dtype="float32")
    buf = 8 * 16 * 4
    assert len(m.layers) == 3
    # read from the graph: layer 1 saves ReLU's output, later layers also their Linear's input (the previous
    # ReLU's output): 2L - 1 saved tensors, the notes' rule, in L buffers
    assert [layer.saved_tensors for layer in m.layers] == [1, 2, 2] and m.saved_total == 2 * 3 - 1
    assert [layer.kept_bytes for layer in m.layers] == [buf, buf, buf]
    assert m.notes_total == (2 * 3 - 1) * buf
    m2 = activation_memory(depth=3, width=16, batch=16, dtype="float32")
    assert m2.kept_total == 2 * m.kept_total            # linear in batch
    m3 = activation_memory(depth=6, width=16, batch=8, dtype="float32")
    assert m3.kept_total - m.kept_total == 3 * m.layers[1].kept_bytes  # linear in depth
    assert m3.saved_total == 2 * 6 - 1
    m64 = activation_memory(depth=3, width=16, batch=8, dtype="float64")
    assert m64.kept_total == 2 * m.kept_total
    assert m.parameter_bytes == 3 * (16 * 16 + 16) * 4


def test_memory_at_scale_is_the_measurement_scaled_and_gives_the_notes_exercise_9():
    for depth, width, batch, dtype in ((4, 64, 32, "float32"), (2, 24, 5, "float64")):
        s = memory_at_scale(depth, width, batch, dtype)
        m = activation_memory(depth, width, batch, dtype)
        assert s.engine_bytes == m.kept_total and s.notes_bytes == m.notes_total
        assert s.engine_saved == m.saved_total and s.parameter_bytes == m.parameter_bytes
    ex9 = memory_at_scale(10, 4096, 512, "float32")  # the notes: (2*10 - 1) * 512 * 4096 * 4 bytes
    assert ex9.notes_buffers == 19 and ex9.notes_bytes == 159_383_552
    rows = {r["count"]: r for r in ex9.rows()}
    assert rows["the notes' rule"]["MB"] == 159.4 and rows["the notes' rule"]["MiB"] == 152.0
    assert ex9.engine_saved == 19 == ex9.notes_buffers and ex9.engine_buffers == 10
    assert rows["this engine (measured)"]["tensors saved"] == rows["the notes' rule"]["tensors saved"] == 19
    with pytest.raises(ValueError, match="depth"):
        memory_at_scale(5000, 4, 4)
    with pytest.raises(ValueError, match="positive"):
        memory_at_scale(3, 0, 4)


def test_jacobian_sizes_reproduce_the_notes_and_follow_the_sizes():
    j = jacobian_sizes()  # width 4096, batch 2048, float64
    sizes = [r["size"] for r in j.rows()]
    assert sizes == ["0.134 GB", "5.6e5 GB", "67.1 MB"]
    assert j.rows()[0]["bytes"] == 4096 * 4096 * 8 and j.rows()[2]["bytes"] == 2048 * 4096 * 8
    assert j.forward_passes == j.reverse_passes == 2048 * 4096
    small = jacobian_sizes(784, 10, 64, "float32")
    assert small.whole_batch_elements == (64 * 10) * (64 * 784) and small.itemsize == 4
    assert (small.forward_passes, small.reverse_passes) == (64 * 784, 64 * 10)
    with pytest.raises(ValueError):
        jacobian_sizes(0, 3, 3)


def test_activation_memory_rejects_bad_sizes():
    with pytest.raises(ValueError):
        activation_memory(depth=0, width=4, batch=4)
    with pytest.raises(ValueError, match="too large"):
        activation_memory(depth=100, width=4096, batch=4096)
