"""Capture and replay (engine.static.compile): bit-identical to eager, random ops re-drawn, no dispatch."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import functional as F
from engine import optim, static
from sentiment.model import hw2_step


def hw2_data(batch=10, tokens=7, dim=50, hidden=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, tokens, dim)).astype(np.float32)
    y = (rng.random(batch) < 0.5).astype(np.float32)
    b1, b2 = 1 / np.sqrt(dim), 1 / np.sqrt(hidden)
    params = [rng.uniform(-b1, b1, (hidden, dim)).astype(np.float32), rng.uniform(-b1, b1, hidden).astype(np.float32),
              rng.uniform(-b2, b2, (1, hidden)).astype(np.float32), rng.uniform(-b2, b2, 1).astype(np.float32)]
    return x, y, params


def hw2_eager_step(params):
    """HW2's step (sentiment.model, the project's one HW2 network) as ``step(x, y) -> loss``."""
    step, model, opt = hw2_step(params)
    return (lambda x, y: step(x, None, y)[0]), model, opt


def run_steps(make_step, params, batches, seed=5):
    engine.manual_seed(seed)
    step, model, opt = make_step(params)
    losses, grads = [], []
    for x, y in batches:
        losses.append(step(engine.tensor(x), engine.tensor(y)).numpy().copy())
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
    return losses, grads, [p.numpy().copy() for p in model.parameters()], step


def compiled_hw2(params):
    step, model, opt = hw2_eager_step(params)
    return static.compile(step, optimizer=opt), model, opt


def test_hw2_step_compiled_is_bit_identical_to_eager():
    x, y, params = hw2_data()
    rng = np.random.default_rng(1)
    batches = [(x, y)] + [(rng.standard_normal(x.shape).astype(np.float32), y[::-1].copy()) for _ in range(5)]
    le, ge, pe, _ = run_steps(hw2_eager_step, params, batches)
    lc, gc, pc, compiled = run_steps(compiled_hw2, params, batches)
    assert len(compiled._programs) == 1  # traced once, replayed five times
    for a, b in zip(le, lc):
        assert a.dtype == np.float32 and np.array_equal(a, b)
    for ga, gb in zip(ge, gc):
        assert all(np.array_equal(a, b) for a, b in zip(ga, gb))
    assert all(np.array_equal(a, b) for a, b in zip(pe, pc))
    assert len({float(v) for v in lc}) == len(lc)  # the parameters really moved
    s = compiled.stats
    assert s.replayed_ops <= s.traced_ops and s.replayed_ops > 20


def test_replay_does_not_dispatch_ops_or_build_tensors():
    x, y, params = hw2_data()
    compiled, _, _ = compiled_hw2(params)
    xt, yt = engine.tensor(x), engine.tensor(y)
    seen = []
    with engine.trace_ops(lambda *a: seen.append(a[0].name)):
        compiled(xt, yt)           # the capture call runs eagerly: ops are dispatched
        n_capture = len(seen)
        compiled(xt, yt)           # a replay: raw kernels only
    assert n_capture > 20 and len(seen) == n_capture


def test_dropout_is_redrawn_on_every_replay_like_eager():
    step = static.compile(lambda x: F.dropout(x, 0.5))
    x = engine.ones(2000)
    engine.manual_seed(3)
    compiled = [step(x).numpy() for _ in range(3)]
    engine.manual_seed(3)
    eager = [F.dropout(x, 0.5).numpy() for _ in range(3)]
    assert all(np.array_equal(a, b) for a, b in zip(compiled, eager))
    assert not np.array_equal(compiled[1], compiled[2])


def test_new_shapes_trigger_a_new_trace_and_dead_ops_are_dropped():
    def f(a):
        _unused = engine.exp(a) * 3.0  # dead: nothing returns or needs it
        return (a * a).sum()
    step = static.compile(f)
    assert step(engine.tensor([1.0, 2.0])).item() == 5.0
    assert step.stats.traced_ops == 4 and step.stats.replayed_ops == 2
    assert step(engine.tensor([3.0, 4.0])).item() == 25.0
    assert step(engine.tensor([1.0, 1.0, 1.0])).item() == 3.0
    assert len(step._programs) == 2
    unopt = static.compile(f, optimize=False)
    unopt(engine.tensor([1.0, 2.0]))
    assert unopt.stats.replayed_ops == 4 and unopt(engine.tensor([3.0, 4.0])).item() == 25.0


def test_sgd_step_matches_eager_and_numpy_inputs_are_accepted():
    rng = np.random.default_rng(2)
    X, Y = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))

    def make():
        w = engine.tensor(np.zeros((3, 1)), requires_grad=True)
        opt = optim.SGD([w], lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(x @ w, y)
            loss.backward()
            opt.step()
            return loss
        return step, w, opt

    step_e, we, _ = make()
    le = [step_e(engine.tensor(X), engine.tensor(Y)).item() for _ in range(10)]
    step_c, wc, opt_c = make()
    compiled = static.compile(step_c, optimizer=opt_c)
    lc = [compiled(X, Y).item() for _ in range(10)]
    assert le == lc and np.array_equal(we.numpy(), wc.numpy())


def test_capture_refuses_what_it_cannot_replay():
    w = engine.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (w * x).sum()
        loss.backward()
        opt.step()
        return loss
    with pytest.raises(static.CaptureError, match="optimizer="):
        static.compile(step)(engine.tensor([1.0, 1.0]))

    def no_step(x):
        opt.zero_grad()
        loss = (w * x).sum()
        loss.backward()
        return loss
    with pytest.raises(static.CaptureError, match="did not call optimizer.step"):
        static.compile(no_step, optimizer=opt)(engine.tensor([1.0, 1.0]))
    with pytest.raises(static.CaptureError, match="no engine ops"):
        static.compile(lambda x: None)(engine.tensor([1.0]))


def test_benchmark_entry_point_matches_its_eager_twin():
    x, y, params = hw2_data(tokens=52)
    xt, yt = engine.tensor(x), engine.tensor(y)
    engine.manual_seed(9)
    eager = hw2_step(params)[0]
    le = [eager(xt, None, yt)[0].item() for _ in range(4)]
    engine.manual_seed(9)
    compiled = hw2_step(params, compiled=True)[0]
    lc = [compiled(xt, None, yt)[0].item() for _ in range(4)]
    assert le == lc


def test_captured_program_as_a_static_graph_runs_in_a_session():
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((8, 3)), rng.standard_normal((8, 1))
    w = engine.tensor(rng.standard_normal((3, 1)), requires_grad=True)

    def step(x, y):
        w.grad = None
        loss = F.mse_loss(x @ w, y)
        loss.backward()
        return loss, w.grad

    compiled = static.compile(step)
    loss_c, grad_c = compiled(engine.tensor(X), engine.tensor(Y))
    g = compiled.to_graph()
    kinds = g.counts()
    assert kinds.placeholder == 2 and kinds.variable == 1 and kinds.op == compiled.stats.replayed_ops
    assert kinds.gradient > 0 and kinds.gradient < kinds.op  # the backward ops are marked
    loss_node, grad_node = g.outputs
    feed = {g.get("input0"): X, g.get("input1"): Y}
    loss_s, grad_s = static.Session(g).run([loss_node, grad_node], feed)
    assert np.array_equal(loss_s, loss_c.numpy()) and np.array_equal(grad_s, grad_c.numpy())
    # the graph passes apply to it like to any static graph
    assert static.prune(g, loss_node).after.total < kinds.total


def test_replay_of_mixed_dtype_ops_matches_eager():
    # float32 op int64 is float32 in eager mode (the engine's promotion rule); NumPy's ufuncs
    # alone would give float64, so such ops must not take the direct-ufunc shortcut on replay
    w = engine.tensor(np.array([0.5, 1.5], np.float32), requires_grad=True)
    k = engine.tensor(np.array([1, 2]), dtype="int64")

    def step(x):
        out = ((x * k) / k + x @ k) * w
        return out.sum(), out

    compiled = static.compile(step)
    x = engine.tensor(np.array([1.0, 2.0], np.float32))
    eager = step(x)
    first, replayed = compiled(x), compiled(x)
    for e, a, b in zip(eager, first, replayed):
        assert e.dtype == a.dtype == b.dtype == engine.float32
        np.testing.assert_array_equal(b.numpy(), e.numpy())


def test_a_step_through_max_compiles_and_replays_bit_identically():
    # max's VJP (ties share the gradient) is written with engine ops, so a trace captures it like any op
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 4))

    def make():
        w = engine.tensor(w0.copy(), requires_grad=True)
        opt = optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (engine.max(x * w, 1).values + engine.max(x.relu() + w * 0.0)).sum()  # relu gives ties
            loss.backward()
            opt.step()
            return loss, w.grad
        return step, opt

    xs = [rng.standard_normal((3, 4)) for _ in range(4)]
    step, _ = make()
    eager = [[t.numpy().copy() for t in step(engine.tensor(x))] for x in xs]
    step, opt = make()
    compiled = static.compile(step, optimizer=opt)
    replayed = [[t.numpy().copy() for t in compiled(engine.tensor(x))] for x in xs]
    assert len(compiled._programs) == 1
    for e, r in zip(eager, replayed):
        assert all(np.array_equal(a, b) for a, b in zip(e, r))


def test_a_detached_intermediate_is_replayed_not_frozen():
    # logsumexp subtracts a detached max: the replay must read this call's max, not the traced one
    def step(z):
        return F.cross_entropy(z, [0, 2]), engine.max(z).detach() * 2.0

    compiled = static.compile(step)
    rng = np.random.default_rng(3)
    for scale in (1.0, 50.0, 800.0):  # exp overflows at 800 unless this call's max is subtracted
        z = engine.tensor(rng.standard_normal((2, 3)) * scale)
        for e, c in zip(step(z), compiled(z)):
            assert np.array_equal(e.numpy(), c.numpy())


def test_replay_rewrites_change_no_bit():
    """The replay folds constants made by the step, drops a transpose that undoes a transpose and
    fuses a keepdim sum with its reshape: fewer kernels, the same bits as eager. (``x @ w.T`` written
    out: ``F.linear`` makes no transpose node, its ``matmul_t`` takes W as it is.)"""
    rng = np.random.default_rng(8)
    w = engine.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = engine.tensor(rng.standard_normal(4), requires_grad=True)

    def step(x):
        w.grad = b.grad = None
        loss = (x @ w.T + b).relu().mean()
        loss.backward()
        return loss, w.grad, b.grad

    compiled = static.compile(step)
    for _ in range(3):
        x = engine.tensor(rng.standard_normal((5, 3)))
        eager = [t.numpy().copy() for t in step(x)]
        replay = [t.numpy() for t in compiled(x)]
        assert all(np.array_equal(e, r) for e, r in zip(eager, replay))
    kept = compiled.last_program.kept
    producer = {out: op.name for op, _, _, out in kept}
    assert not any(op.name == "permute" and producer.get(ins[0]) == "permute" for op, _, ins, _ in kept)
    assert not any(op.name == "reshape" and producer.get(ins[0]) == "sum" for op, _, ins, _ in kept)
    s = compiled.stats
    assert s.traced_ops - s.replayed_ops >= 5, s
