"""Save for backward: each op keeps only what its VJP reads (Op.saves, Op.needs_output).

An input no rule reads is reached by the graph through a graph-only edge: once the caller drops the
tensor its buffer is freed, as in PyTorch. Checked with weak references (the buffer really goes away),
with the gradients (still exact) and, for an L-layer MLP, with the notes' 2L - 1 count.
"""
from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import engine
from engine import nn, ops, tensor
from engine.tensor import Op, apply, kept_bytes, kept_for_backward, saved_for_backward

# op applied to a non-leaf input u (u = 1.5 * x, so u could be freed), whether the graph keeps u after
# the caller drops it, and the NumPy gradient of sum(op(u) * r) with respect to x
R = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.6]])
CASES = [
    ("add", lambda u, c: u + c, False, lambda u, c: 1.5 * R),
    ("sum", lambda u, c: u.sum(), False, lambda u, c: 1.5 * np.full_like(u, R.sum())),
    ("neg", lambda u, c: -u, False, lambda u, c: -1.5 * R),
    ("exp", lambda u, c: u.exp(), False, lambda u, c: 1.5 * np.exp(u) * R),
    ("sigmoid", lambda u, c: u.sigmoid(), False, lambda u, c: 1.5 * R / (1 + np.exp(-u)) * (1 - 1 / (1 + np.exp(-u)))),
    ("relu", lambda u, c: u.relu(), False, lambda u, c: 1.5 * R * (u > 0)),
    ("reshape", lambda u, c: u.reshape(3, 2).reshape(2, 3), False, lambda u, c: 1.5 * R),
    ("transpose", lambda u, c: u.T.T, False, lambda u, c: 1.5 * R),
    ("mul", lambda u, c: u * c, True, lambda u, c: 1.5 * c * R),
    ("log_of_exp", lambda u, c: u.exp().log(), False, lambda u, c: 1.5 * R),
    ("sin", lambda u, c: ops.sin(u), True, lambda u, c: 1.5 * np.cos(u) * R),
    ("div_numerator", lambda u, c: u / c, False, lambda u, c: 1.5 / c * R),
    ("div_denominator", lambda u, c: c / u, True, lambda u, c: -1.5 * c / u ** 2 * R),
]


@pytest.mark.parametrize("name, fn, keeps, grad", CASES, ids=[c[0] for c in CASES])
def test_an_op_keeps_an_input_only_when_its_vjp_reads_it(name, fn, keeps, grad, backend):
    xv = np.array([[0.5, -1.0, 2.0], [1.5, -0.3, 0.8]])
    cv = np.array([[1.2, 0.7, -0.9], [2.0, 1.1, -1.3]])
    x = tensor(xv, requires_grad=True, backend=backend)
    c = tensor(cv, backend=backend)
    u = x * 1.5
    alive = weakref.ref(u)
    out = fn(u, c)
    if out.shape != R.shape:
        out = out * tensor(np.ones(R.shape), backend=backend)
    del u
    gc.collect()
    assert (alive() is not None) == keeps, f"{name}: the graph {'dropped' if keeps else 'kept'} its input"
    (out * tensor(R, backend=backend)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), grad(1.5 * xv, cv), rtol=1e-12, atol=1e-12)


def test_each_op_says_what_it_saves():
    """The count per op, read from the graph: add nothing, mul both inputs, exp and relu their output,
    matmul its inputs, log its input."""
    x = tensor(np.ones((2, 3)), requires_grad=True)
    w = tensor(np.ones((3, 4)), requires_grad=True)
    u = x * 2.0
    assert len((u + u).saved) == 0
    assert [t is u for t in (u * u).saved] == [True, True]
    e = u.exp()
    assert len(e.saved) == 1 and e.saved[0] is e
    r = u.relu()
    assert len(r.saved) == 1 and r.saved[0] is r
    m = u @ w
    assert [t is s for t, s in zip(m.saved, (u, w))] == [True, True]
    lg = u.log()
    assert len(lg.saved) == 1 and lg.saved[0] is u


def test_a_value_dropped_by_the_graph_says_so_when_read():
    x = tensor(np.ones(3), requires_grad=True)
    y = (x * 2.0 + 1.0).exp()   # add keeps neither input: x * 2.0 is reached by a graph-only edge
    (edge,) = [p for p in y.parents[0].parents if p.op_name == "mul"]
    gc.collect()
    with pytest.raises(RuntimeError, match="not saved for backward"):
        edge.numpy()
    assert edge.shape == (3,) and edge.dtype == engine.float64   # shape and dtype stay known


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_an_mlp_keeps_the_notes_2l_minus_1_saved_tensors_in_l_buffers(depth):
    """L x (Linear + ReLU): each Linear saves its input h, each ReLU its output (the mask's source):
    2L - 1 saved tensors beside the input x and the weights, as the notes count; ReLU k's output is
    Linear k+1's input, so they are L buffers. The pre-activations z = hW + b and hW are freed."""
    batch, width = 4, 3
    x = tensor(np.random.default_rng(0).standard_normal((batch, width)))
    layers = [nn.Linear(width, width, seed=k) for k in range(depth)]
    h, pre = x, []
    for lay in layers:
        z = lay(h)
        pre.append(weakref.ref(z))
        h = z.relu()
        del z
    gc.collect()
    assert all(r() is None for r in pre)   # no pre-activation is kept
    weights = {p.backend.buffer(p.data)[0] for lay in layers for p in lay.parameters()}
    saved = [t for _, t in saved_for_backward(h) if t is not x and t.backend.buffer(t.data)[0] not in weights]
    assert len(saved) == 2 * depth - 1
    assert len({t.unique_id for t in saved}) == depth
    assert kept_bytes(h, exclude=[x]) == depth * batch * width * 8
    h.sum().backward()
    assert all(p.grad is not None for lay in layers for p in lay.parameters())


def test_a_second_backward_through_an_edge_that_keeps_no_value_raises():
    """backward() releases each node it ran (PyTorch's retain_graph rule); a node reached through an edge
    that keeps no value is the same node: a second pass raises there too, and retain_graph allows it."""
    from engine.tensor import GraphReleasedError
    x = tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    z = x * 2.0
    y = ((z + 1.0).exp() + z * z).sum()   # z: kept by the mul, reached without its value through the add
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * np.exp(2 * x.numpy() + 1) + 8 * x.numpy()), rtol=1e-12)
    with pytest.raises(GraphReleasedError):
        y.backward()
    del z
    gc.collect()
    with pytest.raises(GraphReleasedError):
        y.backward()


class _Probe(Op):
    """Identity whose VJP notes which of ``refs`` are alive when it runs (no ``name``: not registered)."""
    saves = ()

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @classmethod
    def vjp(cls, ctx, g):
        ctx.params["alive"] = [r() is not None for r in ctx.params["refs"]]
        return (g,)


@pytest.fixture(autouse=True)
def _free_every_buffer(monkeypatch):
    """These graphs are tiny: free their buffers too (backward() leaves ones under FREE_MIN_BYTES)."""
    monkeypatch.setattr(sys.modules["engine.tensor"], "FREE_MIN_BYTES", 0)


def _mlp_with_probe(depth: int):
    """L x (Linear + ReLU) over probe(x): the probe's VJP runs last, while the pass is still going."""
    rng = np.random.default_rng(3)
    x = tensor(rng.standard_normal((4, 3)), requires_grad=True)
    layers = [nn.Linear(3, 3, seed=k) for k in range(depth)]
    seen: dict = {"refs": []}
    h = apply(_Probe, (x,), seen)
    for lay in layers:
        h = lay(h).relu()
        seen["refs"].append(weakref.ref(h))   # each ReLU's output: saved by the ReLU and the next Linear
    loss = (h * h).sum()
    del h
    gc.collect()
    return x, loss, seen


def test_backward_frees_what_each_node_saved_during_the_pass():
    """As PyTorch: the saved activations are gone before the pass ends (the first layer's VJP sees none
    alive), not when backward() returns; with retain_graph=True every one stays for the next pass."""
    x, loss, seen = _mlp_with_probe(4)
    assert all(r() is not None for r in seen["refs"])       # kept for backward after the forward pass
    loss.backward(retain_graph=True)
    assert seen["alive"] == [True] * 4
    g_retained = x.grad.numpy().copy()
    x.grad = None
    nodes = [(t.unique_id, t.op_name) for t in engine.topological_sort(loss)]
    loss.backward()
    assert seen["alive"] == [False] * 4                       # freed during the pass
    np.testing.assert_array_equal(x.grad.numpy(), g_retained)  # the same bits either way
    assert kept_for_backward(loss) == [] and loss.saved == ()
    assert [(t.unique_id, t.op_name) for t in engine.topological_sort(loss)] == nodes  # the structure stays


def test_a_second_backward_after_freeing_raises_a_clear_error():
    from engine.tensor import GraphReleasedError
    x, loss, _ = _mlp_with_probe(2)
    loss.backward()
    with pytest.raises(GraphReleasedError, match=r"second time.*retain_graph=True"):
        loss.backward()
    relu = [t for t in engine.topological_sort(loss) if t.op_name == "relu"][0]
    with pytest.raises(RuntimeError, match="released it"):
        relu.numpy()                                          # a freed value says why when read


def test_values_the_caller_holds_stay_and_only_strategies_that_run_each_vjp_once_free():
    x = tensor(np.array([0.3, -0.4, 1.2]), requires_grad=True)
    u = (x * 2.0).exp()
    y = (u * u).sum()
    y.backward()
    np.testing.assert_allclose(u.numpy(), np.exp(2 * x.numpy()))   # held by the caller: still readable
    for strategy, observer in (("path_recursion", None), ("topological", [].append)):
        x, loss, seen = _mlp_with_probe(3)
        loss.backward(strategy=strategy, observer=observer)       # reruns VJPs / holds every event: only marks
        assert seen["alive"] == [True] * 3


def test_dropout_keeps_a_bool_mask_and_not_its_input():
    x = tensor(np.random.default_rng(4).standard_normal((6, 5)), requires_grad=True)
    u = x * 1.5
    alive = weakref.ref(u)
    out = engine.functional.dropout(u, 0.4)
    (mask,) = out.saved
    assert mask.dtype == engine.bool_ and mask.shape == (6, 5)
    del u
    gc.collect()
    assert alive() is None                    # dropout's VJP reads the mask only, as PyTorch's
    r = np.random.default_rng(5).standard_normal((6, 5))
    keep = mask.numpy()
    (out * tensor(r)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * r * keep / 0.6, rtol=1e-12)
    np.testing.assert_array_equal(out.numpy() == 0, ~keep | (x.numpy() == 0))
