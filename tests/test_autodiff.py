"""Reverse mode: topological order, fan-out sums, accumulation, higher order, deep chains, events."""
import math

import numpy as np
import pytest

import engine
from engine import autodiff, no_grad, tensor


def test_slide_example_exact():
    x1 = tensor(3.0, requires_grad=True)
    x2 = tensor(0.5, requires_grad=True)
    f = x1 + (1.5 * x1 + 2.0 * x2).exp()
    f.backward()
    assert f.item() == 3.0 + math.exp(5.5)
    assert x1.grad.item() == pytest.approx(1 + 1.5 * math.exp(5.5), rel=1e-15)
    assert x2.grad.item() == pytest.approx(2 * math.exp(5.5), rel=1e-15)


def test_readme_matrix_example():
    W = tensor([[1., 2.], [3., 4.]], requires_grad=True)
    y = (W @ tensor([1., 1.])).relu().sum()
    y.backward()
    np.testing.assert_array_equal(W.grad.numpy(), np.ones((2, 2)))


def test_fan_out_gets_the_sum(backend):
    x = tensor(2.0, requires_grad=True, backend=backend)
    y = x * x + x * 3.0 + x   # x used four times
    y.backward()
    assert x.grad.item() == pytest.approx(2 * 2.0 + 3.0 + 1.0)


def test_backward_twice_accumulates():
    x = tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.array([1.0, 2.0]))


def test_second_derivative_of_cube():
    x = tensor(1.7, requires_grad=True)
    y = x * x * x
    (dx,) = _grad(y, x, create_graph=True)
    assert dx.item() == pytest.approx(3 * 1.7 ** 2)
    assert dx.requires_grad
    x.grad = None
    dx.backward()
    assert x.grad.item() == pytest.approx(6 * 1.7)


def _grad(y, x, create_graph=False):
    x.grad = None
    y.backward(create_graph=create_graph)
    return (x.grad,)


def test_third_derivative_of_exp_through_output():
    """exp's VJP uses its output tensor: higher orders stay right."""
    g = engine.grad(engine.grad(engine.grad(lambda x: (2.0 * x).exp())))
    assert g(0.3).item() == pytest.approx(8 * math.exp(0.6))


def test_constants_and_no_grad_are_skipped():
    x = tensor(2.0, requires_grad=True)
    c = tensor(5.0)
    y = x * c
    assert y.requires_grad and not c.requires_grad
    y.backward()
    assert c.grad is None and x.grad.item() == 5.0
    with no_grad():
        z = x * c
    assert not z.requires_grad and z.is_leaf()
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.backward()


def test_nonscalar_backward_needs_grad():
    x = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="pass backward"):
        (x * 2.0).backward()
    (x * 2.0).backward(tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_topological_sort_orders_consumers_first():
    x = tensor(1.0, requires_grad=True)
    a = x * 2.0
    b = a.exp()
    c = a + b
    order = autodiff.topological_sort(c)
    pos = {n.unique_id: i for i, n in enumerate(order)}
    assert order[0] is c
    assert pos[c.unique_id] < pos[b.unique_id] < pos[a.unique_id] < pos[x.unique_id]
    assert len(order) == 4


def test_long_chain_has_no_recursion_error():
    x = tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_observer_reports_contributions_and_fan_out_sums():
    x1 = tensor(3.0, requires_grad=True, name="x1")
    x2 = tensor(0.5, requires_grad=True, name="x2")
    f = x1 + (1.5 * x1 + 2.0 * x2).exp()
    events = []
    f.backward(observer=events.append)
    sums = [e for e in events if isinstance(e, autodiff.FanOutAccumulated) and e.parent is x1]
    assert [(s.received, s.expected) for s in sums] == [(1, 2), (2, 2)]
    assert sums[-1].complete and sums[-1].total.item() == pytest.approx(x1.grad.item())
    sent = [e for e in events if isinstance(e, autodiff.ContributionSent) and e.parent is x1]
    assert sum(e.contribution.item() for e in sent) == pytest.approx(1 + 1.5 * math.exp(5.5))
    leaves = [e.node for e in events if isinstance(e, autodiff.LeafAccumulated)]
    assert set(id(n) for n in leaves) == {id(x1), id(x2)}


class _Scalar:
    """A minimal object following the HW2 protocol (no tensors): the core knows no ops."""
    _next = 0

    def __init__(self, value, parents=(), local=(), constant=False):
        _Scalar._next += 1
        self.unique_id = _Scalar._next
        self.value, self.parents, self.local = value, tuple(parents), tuple(local)
        self.constant, self.derivative = constant, 0.0

    def is_leaf(self):
        return not self.parents

    def is_constant(self):
        return self.constant

    def chain_rule(self, d):
        return [(p, d * l) for p, l in zip(self.parents, self.local)]

    def accumulate_derivative(self, d):
        self.derivative += d


def test_backpropagate_works_on_the_bare_protocol():
    x = _Scalar(2.0)
    c = _Scalar(7.0, constant=True)
    sq = _Scalar(4.0, (x, x), (2.0, 2.0))          # x*x: both local derivatives x
    out = _Scalar(11.0, (sq, x, c), (1.0, 3.0, 1.0))
    autodiff.backpropagate(out, 1.0)
    assert x.derivative == 2.0 + 2.0 + 3.0  # d(x*x)/dx = x + x, plus 3
    assert c.derivative == 0.0


def test_unknown_strategy_is_a_clear_error():
    x = tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match="unknown traversal strategy"):
        (x * 2.0).backward(strategy="sideways")


def test_mixed_backends_are_rejected():
    a = tensor(1.0, backend="numpy")
    b = tensor(1.0, backend="python")
    with pytest.raises(RuntimeError, match="different backends"):
        a + b


def test_functional_grad_vjp_jvp():
    f = lambda x, y: (x * y).exp().sum()  # noqa: E731
    gx, gy = engine.grad(f, argnums=(0, 1))(tensor([0.1, 0.2]), tensor([1.0, 2.0]))
    np.testing.assert_allclose(gx.numpy(), np.array([1.0, 2.0]) * np.exp([0.1, 0.4]))
    out, vjp_fn = engine.vjp(lambda x: x * 3.0, tensor([1.0, 2.0]))
    (g,) = vjp_fn(tensor([1.0, -1.0]))
    np.testing.assert_allclose(g.numpy(), [3.0, -3.0])
    out, t = engine.jvp(lambda x: x.exp(), [tensor(0.0)], [tensor(2.0)])
    assert t.item() == pytest.approx(2.0)


def test_grad_and_vjp_work_under_no_grad():
    # the transforms differentiate f's own graph, whatever the caller's grad mode
    f = lambda x: (x * x * x).sum()  # noqa: E731
    with no_grad():
        assert engine.grad(f)(tensor(2.0)).item() == pytest.approx(12.0)
        _, vjp_fn = engine.vjp(lambda x: x * x, tensor(3.0))
        assert vjp_fn(tensor(1.0))[0].item() == pytest.approx(6.0)


def test_jvp_of_grad_is_a_hessian_vector_product():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    x0, v = rng.standard_normal(3), rng.standard_normal(3)
    f = lambda x: ((x @ tensor(a)).exp() * x).sum() + x.sigmoid().sum()  # noqa: E731
    g, hv = engine.jvp(engine.grad(f), [tensor(x0)], [tensor(v)])
    eps = 1e-6
    numeric = (engine.grad(f)(tensor(x0 + eps * v)).numpy() - engine.grad(f)(tensor(x0 - eps * v)).numpy()) / (2 * eps)
    np.testing.assert_allclose(g.numpy(), engine.grad(f)(tensor(x0)).numpy())
    np.testing.assert_allclose(hv.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_nested_jvp_is_refused_not_wrong():
    # with one tangent slot per tensor the inner jvp would drop the outer perturbation
    f = lambda x: (x.exp() * x).sum()  # noqa: E731
    with pytest.raises(NotImplementedError, match="does not nest"):
        engine.jvp(lambda x: engine.jvp(f, [x], [tensor(1.0)])[1], [tensor(0.5)], [tensor(1.0)])
    out, t = engine.jvp(f, [tensor(0.5)], [tensor(1.0)])  # the refusal left forward mode off
    assert t.item() == pytest.approx(math.exp(0.5) * 1.5)
    from engine.tensor import in_forward_mode
    assert not in_forward_mode()


def test_gradients_keep_the_dtype_of_their_input(backend):
    # float32 * float64 promotes to float64; the float32 leaf's gradient must stay float32
    # (else an optimiser step silently turns a float32 parameter into float64)
    x = tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True, backend=backend)
    w = tensor([3.0, 4.0], requires_grad=True, backend=backend)
    (x * w).sum().backward()
    assert (x.grad.dtype, w.grad.dtype) == (engine.float32, engine.float64)
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    engine.optim.SGD([x], lr=0.1).step()
    assert x.dtype == engine.float32
    gx, gw = engine.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x.detach(), w.detach())
    assert (gx.dtype, gw.dtype) == (engine.float32, engine.float64)


@pytest.mark.parametrize("cotangent", [1.0, [[1.0, 1.0], [1.0, 1.0]], [1.0, 1.0, 1.0]])
def test_vjp_rejects_a_cotangent_of_the_wrong_shape(cotangent):
    _, vjp_fn = engine.vjp(lambda x: x * 2.0, tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="does not match the output's shape"):
        vjp_fn(cotangent)


def test_grad_mode_is_thread_local():
    import threading
    x = tensor(1.0, requires_grad=True)
    seen = {}

    def worker():
        seen["y"] = (x * 2.0).requires_grad

    with no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen["y"] is True


def test_every_strategy_works_in_a_fresh_process():
    """The traversal strategies are registered by ``import engine`` alone (no explain import needed)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    code = ("import engine\n"
            "for s in ('topological', 'bfs_first_touch', 'path_recursion', 'recursive_dfs'):\n"
            "    x = engine.tensor(2.0, requires_grad=True)\n"
            "    (x * x * 3.0).backward(strategy=s)\n"
            "    print(s, x.grad.item())\n")
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["topological", "12.0", "bfs_first_touch", "12.0", "path_recursion", "12.0",
                                  "recursive_dfs", "12.0"]


def test_one_reverse_walk_serves_every_correct_backward(monkeypatch):
    """backward (observed or not, any correct order), engine.grad / vjp and static gradients() all run
    autodiff.propagate: the reverse walk is written once."""
    from engine import static as tf
    calls = []
    real = autodiff.propagate

    def counting(*args, **kwargs):
        calls.append(kwargs.get("accumulate", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(autodiff, "propagate", counting)
    x = tensor(1.5, requires_grad=True)
    (x * x).backward()
    (x * x).backward(observer=lambda e: None)
    (x * x).backward(strategy="recursive_dfs")
    assert engine.grad(lambda t: t * t)(x.detach()).item() == 3.0
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder((), name="p")
        (gp,) = tf.gradients(p * p, [p])
    assert tf.Session(g).run(gp, {p: 1.5}) == 3.0
    assert calls == [True, True, True, False, False]
    assert x.grad.item() == 9.0


def test_static_gradients_leave_requires_grad_alone():
    """gradients() narrows 'takes a gradient' to the paths from its xs: the VJPs see handles on the
    nodes that say so, while the graph's own tensors keep their requires_grad (also while it runs)."""
    from engine import static as tf
    from engine.ops import Mul
    from engine.tensor import apply
    seen = []

    class Spy(Mul):
        name = "spy_mul"

        @classmethod
        def vjp(cls, ctx, g):
            seen.append((tuple(t.requires_grad for t in ctx.inputs), _flags(g_)))
            return super().vjp(ctx, g)

    g_ = tf.Graph()
    with g_.as_default():
        a, b = tf.placeholder((2,), name="a"), tf.placeholder((2,), name="b")
        y = apply(Spy, (a, b)).sum()
    before = _flags(g_)
    (ga,) = tf.gradients(y, [a])
    assert seen[0][0] == (True, False)
    assert seen[0][1][:len(before)] == before
    assert _flags(g_)[:len(before)] == before
    np.testing.assert_array_equal(tf.Session(g_).run(ga, {a: [1.0, 2.0], b: [3.0, 4.0]}), [3.0, 4.0])


def _flags(graph):
    return tuple(None if n.tensor is None else n.tensor.requires_grad for n in graph.nodes)


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_ones_and_zeros_like_are_constants_on_the_tensors_backend_and_seed_backward(backend):
    from engine.ops import ones_like, zeros_like
    x = tensor([[1.0, 2.0, 3.0]], requires_grad=True, dtype="float32", backend=backend)
    ones = ones_like(x)
    assert ones.shape == x.shape and ones.dtype == x.dtype and ones.backend is x.backend
    assert not ones.requires_grad and ones.grad is None
    np.testing.assert_array_equal(ones.numpy(), np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(zeros_like(x).numpy(), np.zeros((1, 3), np.float32))
    y = (x * x).sum()
    y.backward()                                  # seeded with ones_like(y)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy())


@pytest.mark.parametrize("program", ["slide", "hw2"])
def test_an_unwatched_backward_makes_a_tensor_only_for_the_seed_and_each_leafs_gradient(monkeypatch, program):
    """``backward()`` that nobody watches or records sends raw arrays between nodes (the scalar path's numbers
    on the slide's example): no Tensor per contribution; a Tensor for the seed and for each leaf's ``.grad``.
    The same pass watched (an observer) makes one per contribution and gives the same gradients, bit for bit."""
    import importlib
    T = importlib.import_module("engine.tensor")
    if program == "slide":
        x1, x2 = tensor(3.0, requires_grad=True), tensor(0.5, requires_grad=True)
        leaves = [x1, x2]

        def make():
            return x1 + (1.5 * x1 + 2.0 * x2).exp()
    else:
        from sentiment.model import SentimentNet
        net = SentimentNet(50, 8, dropout=0.0, dtype="float32", seed=0)
        x = tensor(np.random.default_rng(0).standard_normal((4, 6, 50)).astype(np.float32))
        y = tensor(np.array([1.0, 0.0, 1.0, 1.0], np.float32))
        leaves = net.parameters()

        def make():
            return net.loss(x, None, y)[0]
    made = []
    real = T.Tensor._make

    def counting(data, backend, requires_grad=False):
        made.append(data)
        return real(data, backend, requires_grad)

    grads = {}
    for watched in (True, False):
        for p in leaves:
            p.grad = None
        out = make()
        monkeypatch.setattr(T, "_make", counting)
        monkeypatch.setattr(T.Tensor, "_make", staticmethod(counting))
        made.clear()
        out.backward(observer=(lambda e: None) if watched else None)
        monkeypatch.undo()
        grads[watched] = [p.grad.numpy().copy() for p in leaves]
        if watched:
            assert len(made) > len(leaves) + 1
        else:
            assert len(made) == len(leaves) + 1, len(made)
    for a, b in zip(grads[True], grads[False]):
        np.testing.assert_array_equal(a, b)
