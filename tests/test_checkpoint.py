"""Activation recomputation (checkpointing): a segment keeps only its inputs and is recomputed in backward.

Same gradients as keeping everything (checked against central differences in float64), less kept,
more forward work: the counts below are of ops the engine really ran.
"""
import math

import numpy as np
import pytest

import engine
from engine import checkpoint as ck
from engine import tensor
from engine.tensor import kept_bytes


def _layers(depth, width=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(tensor(rng.standard_normal((width, width)) / math.sqrt(width), requires_grad=True),
             tensor(rng.standard_normal(width) * 0.1, requires_grad=True)) for _ in range(depth)]


def _layer_fns(params):
    return [lambda h, W=W, b=b: engine.relu(h @ W + b) for W, b in params]


def _grads(mode, depth=6, every=None):
    params = _layers(depth)
    x = tensor(np.random.default_rng(1).standard_normal((3, 5)), requires_grad=True)
    r = tensor(np.random.default_rng(2).standard_normal((3, 5)))
    out = ck.run_layers(_layer_fns(params), x, mode=mode, every=every)
    (out * r).sum().backward()
    return [x.grad.numpy()] + [p.grad.numpy() for pair in params for p in pair]


def test_checkpoint_segment_matches_keep_all_and_central_differences():
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((4, 4)), rng.standard_normal((4, 2))

    def plain(x, A, B):
        return engine.tanh(x @ A) @ B

    def checkpointed(x, A, B):  # A and B reach the segment through its closure, as a module's weights do
        return ck.checkpoint(lambda h: engine.tanh(h @ A) @ B, x)

    x = rng.standard_normal((3, 4))
    engine.gradcheck(checkpointed, [tensor(x, requires_grad=True), tensor(W1, requires_grad=True),
                                    tensor(W2, requires_grad=True)], atol=1e-7, rtol=1e-6)
    grads = []
    for f in (plain, checkpointed):
        ts = [tensor(a, requires_grad=True) for a in (x, W1, W2)]
        f(*ts).sum().backward()
        grads.append([t.grad.numpy() for t in ts])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)


def test_checkpoint_keeps_only_the_segment_input_and_recomputes_in_backward():
    params = _layers(4)
    x = tensor(np.ones((3, 5)))
    fns = _layer_fns(params)
    kept_all = kept_bytes(ck.run_layers(fns, x, mode="keep_all"))
    kept_ck = kept_bytes(ck.run_layers(fns, x, mode="every", every=4))
    assert kept_ck < kept_all
    assert kept_ck == x.numpy().nbytes  # one segment of four layers: only its input (the data x) is kept
    matmuls = {}
    for mode in ("keep_all", "every"):
        ran = []
        out = ck.run_layers(fns, x, mode=mode, every=4)
        with engine.trace_ops(lambda op, *_: ran.append(op.name)):
            out.sum().backward()
        matmuls[mode] = ran.count("matmul")
    # backward: x̄ and W̄ per layer (no x̄ for the data x): 7 matmuls; the checkpoint first reruns 4 layers
    assert matmuls == {"keep_all": 7, "every": 7 + 4}


@pytest.mark.parametrize("mode,every", [("every", 1), ("every", 2), ("every", 3), ("recompute_all", None)])
def test_every_policy_gives_the_keep_all_gradients(mode, every):
    ref = _grads("keep_all")
    got = _grads(mode, every=every)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_recompute_all_matches_central_differences():
    params = _layers(3, width=3)

    def f(x, *flat):
        fns = [lambda h, W=flat[2 * i], b=flat[2 * i + 1]: engine.tanh(h @ W + b) for i in range(3)]
        return ck.run_layers(fns, x, mode="recompute_all")

    engine.gradcheck(f, [tensor(np.random.default_rng(3).standard_normal((2, 3)), requires_grad=True)]
                     + [p for pair in params for p in pair], atol=1e-7, rtol=1e-6)


def test_forward_work_per_policy():
    """Layer calls: keep-all L; a checkpoint every k layers 2L (each segment once more); recompute-all
    L + L(L+1)/2 (layer i's input recomputed from the network's input)."""
    L = 9
    for mode, every, expected in [("keep_all", None, L), ("every", 3, 2 * L), ("recompute_all", None, L + L * (L + 1) // 2)]:
        params = _layers(L)
        calls = []
        fns = [lambda h, W=W, b=b: (calls.append(1), engine.relu(h @ W + b))[1] for W, b in params]
        out = ck.run_layers(fns, tensor(np.ones((2, 5))), mode=mode, every=every)
        out.sum().backward()
        assert len(calls) == expected, mode


def test_random_ops_and_create_graph_are_refused():
    x = tensor(np.ones((2, 2)), requires_grad=True)
    with pytest.raises(ValueError, match="random"):
        ck.checkpoint(lambda h: engine.dropout(h, 0.5, training=True), x)
    y = ck.checkpoint(lambda h: h * h, x).sum()
    with pytest.raises(NotImplementedError, match="create_graph"):
        y.backward(create_graph=True)


def test_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        ck.run_layers([], tensor(1.0), mode="sometimes")
