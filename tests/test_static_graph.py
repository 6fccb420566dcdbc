"""Static (TensorFlow-1-style) graphs: build, run only what a fetch needs, symbolic gradients, passes."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import functional as F
from engine import static as tf
from engine.static import Session


@pytest.fixture
def lecture_graph():
    """The lecture's h = relu(x @ W + b)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((4, 3), name="x")
        W = tf.Variable(np.arange(6.0).reshape(3, 2) / 10 - 0.2, name="W")
        b = tf.Variable(np.array([0.1, -0.3]), name="b")
        xw = x @ W
        pre = xw + b
        h = tf.relu(pre)
    return g, x, W, b, xw, pre, h


X = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0], [-1.0, 0.5, 2.0], [3.0, 0.0, -1.0]])


def test_building_computes_nothing(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    assert [n.kind for n in g.nodes] == ["placeholder", "variable", "variable", "op", "op", "op"]
    assert [n.label for n in g.nodes[3:]] == ["matmul", "add", "relu"]
    assert h.shape == (4, 2)
    with pytest.raises(tf.SymbolicValueError, match="no value until it is run"):
        h.numpy()
    with pytest.raises(tf.SymbolicValueError):
        bool(h.sum() > 0)  # Python control flow cannot look at graph values
    assert "no value until Session.run" in repr(h)


def test_run_matches_eager_and_evaluates_only_dependencies(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    sess = Session(g)
    out = sess.run(h, {x: X})
    W0, b0 = g.get("W").state.value, g.get("b").state.value
    np.testing.assert_array_equal(out, np.maximum(X @ W0 + b0, 0))
    assert tf.evaluated_names(sess) == ["W", "b", "matmul", "add", "relu"]
    # a sub-expression: only its own dependencies run (no b, no add, no relu)
    np.testing.assert_array_equal(sess.run(xw, {x: X}), X @ W0)
    assert tf.evaluated_names(sess) == ["W", "matmul"]
    # fetching a variable alone needs no feed at all
    np.testing.assert_array_equal(sess.run(b), b0)
    assert tf.evaluated_names(sess) == ["b"]


def test_missing_feed_names_the_placeholder(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    with pytest.raises(tf.UnfedPlaceholderError, match=r"placeholder 'x' \(shape \(4, 3\), float64\)"):
        Session(g).run(h)
    with pytest.raises(ValueError, match="shape"):
        Session(g).run(h, {x: np.ones((2, 3))})


def test_fetch_structures_and_feeding_an_intermediate(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    sess = Session(g)
    res = sess.run({"h": h, "both": (xw, pre)}, {x: X})
    assert set(res) == {"h", "both"} and isinstance(res["both"], tuple)
    # feeding an intermediate cuts the graph there: x is not needed any more
    fed = np.ones((4, 2))
    np.testing.assert_array_equal(sess.run(h, {xw: fed}), np.maximum(fed + g.get("b").state.value, 0))
    assert "matmul" not in tf.evaluated_names(sess)


def test_same_op_registry_builds_composites():
    g = tf.Graph()
    with g.as_default():
        z = tf.placeholder((5,), name="z")
        y = tf.placeholder((5,), name="y")
        losses = [F.binary_cross_entropy(tf.sigmoid(z), y), F.mse_loss(z, y), F.softmax(z, dim=0).sum(),
                  F.tanh(z).mean(), F.logsumexp(z)]
    rng = np.random.default_rng(0)
    zv, yv = rng.standard_normal(5), (rng.random(5) > 0.5).astype(float)
    got = Session(g).run(losses, {z: zv, y: yv})
    zt, yt = engine.tensor(zv), engine.tensor(yv)
    want = [F.binary_cross_entropy(engine.sigmoid(zt), yt), F.mse_loss(zt, yt), F.softmax(zt, dim=0).sum(),
            F.tanh(zt).mean(), F.logsumexp(zt)]
    for a, b_ in zip(got, want):
        assert np.array_equal(a, b_.numpy())  # the same kernels in the same order: the same bits


def test_graphs_do_not_mix():
    g1, g2 = tf.Graph(), tf.Graph()
    a = tf.placeholder((2,), graph=g1)
    c = tf.constant([1.0, 2.0], graph=g2)
    with pytest.raises(RuntimeError, match="different backends"):
        a + c
    with pytest.raises(ValueError, match="belongs to graph"):
        Session(g2).run(a, {a: np.zeros(2)})
    with pytest.raises(ValueError, match="full static shape"):
        tf.placeholder(None, graph=g1)


def test_default_graph_and_as_default():
    g0 = tf.reset_default_graph()
    p = tf.placeholder((), name="p")
    assert tf.get_default_graph() is g0 and g0.nodes[0].name == "p"
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        q = tf.placeholder((), name="p")
    assert tf.get_default_graph() is g0
    assert tf.tensor_to_node(q).graph is g and tf.tensor_to_node(p).graph is g0


# --- gradients --------------------------------------------------------------------------------------

def test_gradients_match_eager_and_add_gradient_nodes(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    with g.as_default():
        loss = F.mean(h * h)
    before = len(g.nodes)
    gW, gb, gx = tf.gradients(loss, [W, b, x])
    added = g.nodes[before:]
    assert added and all(n.role == "gradient" for n in added)
    counts = g.counts()
    assert counts.gradient == len(added) and counts.total == len(g.nodes)
    # nothing ran yet; now run and compare with eager backward
    vals = Session(g).run([loss, gW, gb, gx], {x: X})
    Wt = engine.tensor(g.get("W").state.value, requires_grad=True)
    bt = engine.tensor(g.get("b").state.value, requires_grad=True)
    xt = engine.tensor(X, requires_grad=True)
    lt = F.mean(engine.relu(xt @ Wt + bt) * engine.relu(xt @ Wt + bt))
    lt.backward()
    for a, t in zip(vals, [lt, Wt.grad, bt.grad, xt.grad]):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-15, atol=1e-15)


def test_gradient_graph_node_counts():
    """The gradient graph of f = sigmoid(w * x + c) is built from the VJP rules: count its nodes."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((), name="x")
        w = tf.Variable(0.5, name="w")
        f = tf.sigmoid(w * x + 1.0)
    assert g.counts().as_dict() == {"total": 6, "gradient": 0, "placeholder": 1, "variable": 1,
                                    "constant": 1, "op": 3, "update": 0}
    (gw,) = tf.gradients(f, [w])
    c = g.counts()
    # seed 1; sigmoid VJP: g * (out * (1 - out)) -> 1-out is add(Const, neg(out)): neg, add, mul, mul (+ Const 1);
    # add VJP passes g through; mul VJP for w: g * x
    assert c.gradient == 7 and c.total == 13
    assert [n.name for n in g.nodes[6:]] == ["Const_1", "neg", "Const_2", "add_1", "mul_1", "mul_2", "mul_3"]
    assert [n.inputs for n in g.nodes[10:]] == [[g.nodes[5], g.nodes[9]], [g.nodes[6], g.nodes[10]],
                                                [g.nodes[11], g.nodes[0]]]  # s*(1-s), seed*that, *x
    s = 1 / (1 + np.exp(-(0.5 * 3.0 + 1.0)))
    np.testing.assert_allclose(Session(g).run(gw, {x: 3.0}), s * (1 - s) * 3.0, rtol=1e-15)
    # x does not influence w's gradient path upstream of w: asking for x too adds only x's branch
    (gx,) = tf.gradients(f, [x])
    np.testing.assert_allclose(Session(g).run(gx, {x: 3.0}), s * (1 - s) * 0.5, rtol=1e-15)
    assert tf.gradients(w * 2.0, [x]) == [None]


def test_second_derivative_by_gradients_of_gradients():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((), name="x")
        y = x * x * x
    (dy,) = tf.gradients(y, [x])
    (d2y,) = tf.gradients(dy, [x])
    d1, d2 = Session(g).run([dy, d2y], {x: 2.0})
    assert d1 == pytest.approx(12.0) and d2 == pytest.approx(12.0)


def test_max_gradient_is_built_from_op_nodes_and_splits_ties():
    """Max's VJP is written with engine ops: its gradient graph holds op nodes only (no raw kernels)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((4,), name="x")
        m = engine.max(x)
    (gx,) = tf.gradients(m, [x])
    assert {n.kind for n in g.nodes} == {"placeholder", "op", "constant"}
    assert {n.op.name for n in g.nodes if n.role == "gradient" and n.kind == "op"} >= {"compare", "cast", "sum"}
    np.testing.assert_array_equal(Session(g).run(gx, {x: np.array([1.0, 3.0, 3.0, 0.0])}), [0, 0.5, 0.5, 0])


# --- training -----------------------------------------------------------------------------------------

def _logreg_data():
    rng = np.random.default_rng(7)
    X_ = rng.standard_normal((32, 3))
    y_ = (X_ @ np.array([1.5, -2.0, 0.5]) + 0.3 > 0).astype(float).reshape(32, 1)
    return X_, y_


def test_logistic_regression_static_equals_eager_for_50_steps():
    X_, y_ = _logreg_data()
    W0, b0, lr = np.zeros((3, 1)), np.zeros(1), 0.5
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((32, 3), name="x")
        y = tf.placeholder((32, 1), name="y")
        W = tf.Variable(W0, name="W")
        b = tf.Variable(b0, name="b")
        loss = F.binary_cross_entropy(tf.sigmoid(x @ W + b), y)
    train = tf.GradientDescentOptimizer(lr).minimize(loss)
    n_nodes = len(g.nodes)
    sess = Session(g)
    static_losses = []
    for _ in range(50):
        lv, _ = sess.run([loss, train], {x: X_, y: y_})
        static_losses.append(float(lv))
    assert len(g.nodes) == n_nodes  # the graph was built once; running adds nothing

    Wt = engine.tensor(W0, requires_grad=True)
    bt = engine.tensor(b0, requires_grad=True)
    opt = engine.optim.SGD([Wt, bt], lr=lr)
    xt, yt = engine.tensor(X_), engine.tensor(y_)
    eager_losses = []
    for _ in range(50):
        opt.zero_grad()
        lt = F.binary_cross_entropy(engine.sigmoid(xt @ Wt + bt), yt)
        lt.backward()
        opt.step()
        eager_losses.append(lt.item())
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-14, atol=0)
    assert static_losses[-1] < 0.5 * static_losses[0]
    np.testing.assert_allclose(sess.run(W), Wt.numpy(), rtol=1e-14)


def test_train_op_updates_after_the_fetched_values():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(2.0, name="w")
        loss = w * w
    train = tf.GradientDescentOptimizer(0.25).minimize(loss)
    sess = Session(g)
    lv, _ = sess.run([loss, train])
    assert lv == 4.0 and sess.run(w) == 1.0  # 2 - 0.25 * 4
    with pytest.raises(ValueError, match="positive"):
        tf.GradientDescentOptimizer(0.0)


# --- passes ---------------------------------------------------------------------------------------------

def test_prune_keeps_only_the_fetch_dependencies(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    with g.as_default():
        unused = tf.exp(b) * 3.0  # dead for h
    res = tf.prune(g, h)
    assert res.before.total == len(g.nodes) == 9
    assert res.after.total == 6 and [n.name for n in res.graph.nodes] == ["x", "W", "b", "matmul", "add", "relu"]
    np.testing.assert_array_equal(Session(res.graph).run(res[h], {res[x]: X}), Session(g).run(h, {x: X}))
    with pytest.raises(KeyError, match="removed"):
        res[unused]


def test_constant_folding_before_and_after():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((3,), name="x")
        two = tf.constant(2.0, name="two")
        three = tf.constant(3.0, name="three")
        scale = tf.exp(two * three) / (1.0 + three)  # all constant: folds to one node
        y = x * scale + two * 0.5
    res = tf.fold_constants(g, y)
    assert res.before.op == 7 and res.after.op == 2  # only x * c and + c remain
    assert res.after.constant == 2 and res.after.total == 5
    assert res.folded == ["mul", "exp", "add", "div", "mul_2"]
    xv = np.array([1.0, -2.0, 0.5])
    np.testing.assert_array_equal(Session(res.graph).run(res[y], {res[x]: xv}), Session(g).run(y, {x: xv}))
    folded_scale = [n for n in res.graph.nodes if n.kind == "constant" and n.note.startswith("folded")]
    assert any(float(n.value) == pytest.approx(np.exp(6.0) / 4.0) for n in folded_scale)


def test_folding_never_folds_randomness():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(np.ones(1000))
        d = F.dropout(c, 0.5)
    res = tf.fold_constants(g, d)
    engine.manual_seed(0)
    a = Session(res.graph).run(res[d])
    b_ = Session(res.graph).run(res[d])
    assert not np.array_equal(a, b_)  # a fresh mask on every run
    assert set(np.unique(a)) <= {0.0, 2.0}


def test_node_count_report_rows(lecture_graph):
    g, x, W, b, xw, pre, h = lecture_graph
    with g.as_default():
        loss = F.mean(h * h)
    tf.gradients(loss, [W, b])
    rows = tf.node_count_report(g, loss)
    assert [r["stage"] for r in rows] == ["as built", "pruned for the fetch", "constant-folded + pruned"]
    assert rows[0]["total"] > rows[1]["total"] >= rows[2]["total"]


def test_building_runs_no_kernel_not_even_randomness():
    """Building dropout on a graph draws no random numbers; each run draws a fresh mask."""
    be = engine.backends.get_backend("numpy")
    engine.manual_seed(11)
    state = be.rng.bit_generator.state
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((500,), name="x")
        y = F.dropout(x, 0.5) * 2.0
    assert be.rng.bit_generator.state == state  # nothing ran while building
    sess = Session(g)
    a = sess.run(y, {x: np.ones(500)})
    b_ = sess.run(y, {x: np.ones(500)})
    assert be.rng.bit_generator.state != state and not np.array_equal(a, b_)
    engine.manual_seed(11)
    eager = (F.dropout(engine.ones(500), 0.5) * 2.0).numpy()
    assert np.array_equal(a, eager)  # the same generator stream as eager mode


def test_a_graph_runs_on_every_backend(backend):
    """The graph is built once on the symbolic backend; a Session runs it on the graph's real backend."""
    results = {}
    for be in ("numpy", backend):
        g = tf.Graph(backend=be)
        with g.as_default():
            x = tf.placeholder((4, 3), name="x")
            W = tf.Variable(np.full((3, 2), 0.3), name="W")
            b = tf.Variable(np.zeros(2), name="b")
            loss = F.mean(tf.relu(x @ W + b) * tf.relu(x @ W + b))
        train = tf.GradientDescentOptimizer(0.1).minimize(loss)
        sess = Session(g)
        losses = [float(sess.run([loss, train], {x: X})[0]) for _ in range(3)]
        results[be] = (losses, sess.run(W))
    np.testing.assert_allclose(results[backend][0], results["numpy"][0], rtol=1e-6)
    np.testing.assert_allclose(results[backend][1], results["numpy"][1], rtol=1e-6)


def test_mixed_dtypes_follow_the_engine_rule_and_gradients_keep_the_variable_dtype():
    # float32 op int64 is float32 when the graph runs (every backend's rule), so the graph says so;
    # and a float32 variable's gradient (and update) stays float32 next to a float64 placeholder
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder((3,), name="x")
        w = tf.Variable(np.ones(3, np.float32), name="w")
        k = tf.constant(np.array([1, 2, 3]), dtype="int64")
        y = w * k
        loss = tf.sum(x * w * w)
        (gw,) = tf.gradients(loss, [w])
        train = tf.GradientDescentOptimizer(0.1).minimize(loss)
    s = tf.Session(g)
    assert tf.tensor_to_node(y).dtype == engine.float32 and s.run(y).dtype == np.float32
    assert tf.tensor_to_node(gw).dtype == engine.float32
    np.testing.assert_allclose(s.run(gw, {x: np.array([1.0, 2.0, 3.0])}), [2.0, 4.0, 6.0])
    s.run(train, {x: np.array([1.0, 2.0, 3.0])})
    assert s.run(w).dtype == np.float32
    np.testing.assert_allclose(s.run(w), [0.8, 0.6, 0.4], rtol=1e-6)


def test_integer_nodes_have_the_dtype_the_session_computes():
    g = tf.Graph()
    with g.as_default():
        k = tf.constant(np.array([1, 2, 3]), dtype="int64")
        outs = [k / k, tf.exp(k), -k, tf.relu(k)]
    s = tf.Session(g)
    for t, want in zip(outs, [np.float64, np.float64, np.int64, np.int64]):
        assert tf.tensor_to_node(t).dtype.numpy == want and s.run(t).dtype == want
