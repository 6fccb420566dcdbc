"""PyTorch's conventions where HW2's protocol says nothing else: ``size()``,
``tensor(True)`` as bool, ``max(dim)`` with values and indices, ``retain_graph``, ``SGD(params, lr)``.

Each convention is checked on the engine alone, and against PyTorch CPU where it is installed (the
``torch`` fixture skips those checks cleanly without it). ``is_leaf()`` stays a method: HW2's protocol.
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import GraphReleasedError, optim, tensor
from explorer.explain import record_execution
from engine.strategies import PathRecursion
from explorer.expression_explorer import accumulation_rows


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch (optional oracle) not installed")


def _kind(dtype_name: str) -> str:
    """The dtype family both libraries agree on (PyTorch's float default is float32, ours float64)."""
    return "float" if dtype_name.startswith("float") else dtype_name


# --- size() ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)])
def test_size_is_the_shape_and_size_dim_an_int(shape, backend, torch):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x, t = tensor(a, backend=backend), torch.tensor(a)
    assert x.size() == tuple(t.size()) == x.shape
    assert isinstance(x.size(), tuple)
    assert x.numel() == t.numel()
    for d in range(-len(shape), len(shape)):
        assert x.size(d) == t.size(d) and type(x.size(d)) is int
    for d in (len(shape), -len(shape) - 1):
        with pytest.raises(IndexError):
            t.size(d)
        with pytest.raises(IndexError, match="out of range"):
            x.size(d)


def test_size_is_a_method_not_a_number():
    x = tensor(np.zeros((2, 5)))
    assert callable(x.size) and x.size() == (2, 5) and x.size(-1) == 5 and x.numel() == 10
    with pytest.raises(TypeError):
        x.size("1")


# --- tensor(True) is bool ------------------------------------------------------------------------

@pytest.mark.parametrize("data", [True, False, [True, False, True], [[True], [False]], np.array([1, 0, 1]) > 0])
def test_bool_data_makes_a_bool_tensor(data, backend, torch):
    x, t = tensor(data, backend=backend), torch.tensor(data)
    assert t.dtype == torch.bool and x.dtype is engine.bool_
    assert x.numpy().dtype == np.bool_
    assert x.tolist() == t.tolist() and x.size() == tuple(t.size())


def test_a_bool_tensor_cannot_require_grad(torch):
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([True, False], requires_grad=True)
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients.*bool"):
        tensor([True, False], requires_grad=True)
    with pytest.raises(TypeError, match="floating-point"):
        tensor(True).requires_grad_()


@pytest.mark.parametrize("expr", ["b + 1", "1 + b", "b * 2.5", "b + b", "b.sum()", "b * x", "b + i", "i * b",
                                  "(x > 0.5) * 1.0", "b == (x > 0.5)"])
def test_bool_arithmetic_promotes_as_pytorch_does(expr, backend, torch):
    bv, xv, iv = [True, False, True], [0.25, 0.75, 1.5], [3, 4, 5]
    ours = eval(expr, {"b": tensor(bv, backend=backend), "x": tensor(xv, backend=backend),  # noqa: S307 (test text)
                       "i": tensor(iv, backend=backend)})
    theirs = eval(expr, {"b": torch.tensor(bv), "x": torch.tensor(xv, dtype=torch.float64),  # noqa: S307
                         "i": torch.tensor(iv)})
    assert _kind(ours.dtype.name) == _kind(str(theirs.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_comparisons_give_bool_and_where_takes_a_bool_condition(backend, torch):
    rng = np.random.default_rng(3)
    a, b, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x, y = tensor(a, requires_grad=True, backend=backend), tensor(b, requires_grad=True, backend=backend)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    cond, tcond = x > y, tx > ty
    assert cond.dtype is engine.bool_ and tcond.dtype == torch.bool
    assert not cond.requires_grad and cond.grad is None
    out, tout = engine.where(cond, x * 2.0, y), torch.where(tcond, tx * 2.0, ty)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    (out * tensor(g, backend=backend)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)
    assert cond.grad is None  # a bool input takes no gradient
    # a bool leaf made by the user is a condition too
    mask = tensor(a > 0, backend=backend)
    np.testing.assert_array_equal(engine.where(mask, x, 0.0).numpy(), np.where(a > 0, a, 0.0))


# --- max(dim): values and indices ----------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_dim_returns_values_and_indices_as_pytorch(dim, keepdim, backend, torch):
    rng = np.random.default_rng(dim + 7)
    a = rng.permutation(12).reshape(3, 4) + rng.uniform(0, 0.5, (3, 4))  # distinct values
    x, t = tensor(a, requires_grad=True, backend=backend), torch.tensor(a, requires_grad=True)
    res, tres = x.max(dim, keepdim=keepdim), t.max(dim, keepdim=keepdim)
    values, indices = res                                       # unpacks as a pair, as torch.return_types.max
    assert values is res.values and indices is res.indices and res[0] is values and res[1] is indices
    np.testing.assert_array_equal(values.numpy(), tres.values.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), tres.indices.numpy())
    assert indices.dtype is engine.int64 and not indices.requires_grad and values.requires_grad
    g = rng.standard_normal(values.shape)                      # along a random direction, not only sum()
    (values * tensor(g, backend=backend)).sum().backward()
    (tres.values * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    fv, fi = engine.max(x, dim, keepdim)                       # the function form is the same
    np.testing.assert_array_equal(fv.numpy(), values.numpy())
    np.testing.assert_array_equal(fi.numpy(), indices.numpy())


def test_max_without_dim_is_one_value(backend, torch):
    a = np.array([[1.0, 5.0, 3.0], [4.0, -2.0, 0.5]])
    x, t = tensor(a, requires_grad=True, backend=backend), torch.tensor(a, requires_grad=True)
    m, tm = x.max(), t.max()
    assert m.shape == tuple(tm.shape) == () and m.item() == tm.item()
    m.backward()
    tm.backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_max_takes_one_dim_and_amax_several(torch):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 4))
    x, t = tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    with pytest.raises(TypeError):
        t.max((0, 2))
    with pytest.raises(TypeError, match="amax"):
        x.max((0, 2))
    m, tm = x.amax((0, 2)), t.amax((0, 2))
    np.testing.assert_array_equal(m.numpy(), tm.detach().numpy())
    g = rng.standard_normal(m.shape)
    (m * tensor(g)).sum().backward()
    (tm * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_max_dim_and_size_in_a_static_graph():
    """A static graph's tensors answer size() and max(dim) too (the indices abstractly evaluated as int64)."""
    from engine import static
    a = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    g = static.Graph()
    with g.as_default():
        x = static.placeholder((2, 3), name="x")
        values, indices = engine.max(x, 1)
        _, kept = x.max(0, keepdim=True)
        (gx,) = static.gradients(values.sum(), [x])
    assert x.size() == (2, 3) and x.size(-1) == 3 and indices.dtype is engine.int64 and kept.size() == (1, 3)
    v, i, k, d = static.Session(g).run([values, indices, kept, gx], {x: a})
    np.testing.assert_array_equal(v, a.max(1))
    np.testing.assert_array_equal(i, a.argmax(1))
    np.testing.assert_array_equal(k, a.argmax(0)[None])
    np.testing.assert_array_equal(d, a == a.max(1, keepdims=True))


def test_amax_splits_ties_as_pytorch(torch):
    """Tied maxima share the gradient evenly, as torch.amax; max(dim)'s values are amax's values."""
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    x, t = tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    x.amax(1).sum().backward()
    t.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    assert x.max(1).indices.tolist() == t.max(1).indices.tolist() == [1, 0]  # the first of the ties


# --- retain_graph ------------------------------------------------------------------------------

def _graph(lib, a):
    x = lib.tensor(a, requires_grad=True)
    return x, ((x * 2.0).exp() * x).sum()


def test_a_second_backward_through_a_released_graph_raises_as_pytorch(torch):
    a = np.array([0.1, -0.3, 0.7])
    x, y = _graph(engine, a)
    tx, ty = _graph(torch, a)
    y.backward()
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="second time"):
        ty.backward()
    with pytest.raises(GraphReleasedError, match=r"second time.*retain_graph=True") as err:
        y.backward()
    assert isinstance(err.value, RuntimeError)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)  # the failed call added nothing


def test_retain_graph_keeps_the_graph_for_another_backward(torch):
    a = np.array([0.1, -0.3, 0.7])
    x, y = _graph(engine, a)
    tx, ty = _graph(torch, a)
    y.backward(retain_graph=True)
    ty.backward(retain_graph=True)
    y.backward()                      # the last one may release
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)  # accumulated: twice one pass
    with pytest.raises(GraphReleasedError):
        y.backward()


def test_a_released_graph_still_answers_everything_but_another_backward():
    """Release frees what the nodes saved for backward, nothing else: the graph's structure stays (the
    same nodes, ops and shapes), and every value the caller holds; a picture that reads the graph's
    inner values after backward passes retain_graph=True."""
    x, y = _graph(engine, np.array([0.5, 1.0]))
    order = [(t.unique_id, t.op_name, t.shape) for t in engine.topological_sort(y)]
    y.backward()
    assert [(t.unique_id, t.op_name, t.shape) for t in engine.topological_sort(y)] == order
    assert y.op_name == "sum" and y.item() == y.item()
    assert not y.is_leaf() and x.is_leaf()               # HW2's protocol: is_leaf() stays a method
    h = x * 3.0                                          # a new graph from the same leaves is fresh
    h.sum().backward()
    x2, y2 = _graph(engine, np.array([0.5, 1.0]))
    z = y2 * 2.0
    z.backward()
    with pytest.raises(GraphReleasedError):
        (y2 + 1.0).backward()                            # a new node on top of a released graph reaches it


def test_create_graph_retains_as_pytorch():
    x, y = _graph(engine, np.array([0.2, 0.4]))
    y.backward(create_graph=True)
    y.backward()
    x3, y3 = _graph(engine, np.array([0.2, 0.4]))
    y3.backward(create_graph=True, retain_graph=False)
    with pytest.raises(GraphReleasedError):
        y3.backward()


def test_observers_and_strategies_see_every_step_before_release():
    """An observed backward and a strategy that calls a node's VJP more than once (path recursion)
    run whole; only a later backward through the same graph is refused."""
    events: list = []
    x, y = _graph(engine, np.array([0.2, 0.4]))
    y.backward(observer=events.append, retain_graph=True)
    first = len(events)
    y.backward(observer=events.append)
    assert first > 0 and len(events) == 2 * first
    a = tensor(0.3, requires_grad=True)
    h = a * a
    out = (h * h) * (h + h)           # fan-out: path recursion runs h's VJP once per path
    out.backward(strategy=PathRecursion())
    with pytest.raises(GraphReleasedError):
        out.backward(strategy=PathRecursion())


def test_functional_gradients_and_the_explain_tools_do_not_release():
    f = lambda t: (t * t).exp().sum()  # noqa: E731
    x = tensor([0.1, 0.2])
    out, vjp_fn = engine.vjp(f, x)
    (g1,) = vjp_fn(tensor(1.0))
    (g2,) = vjp_fn(tensor(1.0))       # JAX's convention: a vjp function may be called again
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    tr = record_execution("f = x * exp(y)", "x = 2.0\ny = 0.5")
    assert tr.error is None and tr.grads["x"] == pytest.approx(np.exp(0.5))


def test_the_accumulation_demo_runs_backward_again_with_retain_graph():
    rows = accumulation_rows("f = x * y", "x = 2.0\ny = 10.0", ["backward", "backward", "zero_grad", "backward"])
    assert [r["x.grad"] for r in rows] == ["None", "10", "20", "None", "10"]
    assert "retain_graph=True" in rows[1]["call"]


# --- SGD(params, lr) -------------------------------------------------------------------------------

def test_sgd_needs_a_learning_rate():
    p = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="lr"):
        optim.SGD([p])


@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"weight_decay": 0.01}])
def test_sgd_steps_as_pytorch(kwargs, torch):
    rng = np.random.default_rng(2)
    a, g = rng.standard_normal(4), rng.standard_normal(4)
    p, tp = tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    opt, topt = optim.SGD([p], 0.05, **kwargs), torch.optim.SGD([tp], 0.05, **kwargs)  # lr positional too
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        (p * tensor(g) * p).sum().backward()
        (tp * torch.tensor(g) * tp).sum().backward()
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12)


def test_an_unknown_strategy_leaves_no_pass_releasing():
    x, y = _graph(engine, np.array([0.2, 0.4]))
    with pytest.raises(ValueError, match="unknown traversal strategy"):
        y.backward(strategy="sideways")
    f = lambda t: (t * t).exp().sum()  # noqa: E731
    _, vjp_fn = engine.vjp(f, tensor([0.1, 0.2]))
    vjp_fn(tensor(1.0))
    vjp_fn(tensor(1.0))               # engine.vjp releases nothing, also after a refused backward()
    y.backward()
