"""nn modules and optimisers (PyTorch as an oracle where installed)."""
import numpy as np
import pytest

import engine
from engine import functional as F
from engine import nn, optim, tensor


def test_parameters_are_discovered_recursively():
    model = nn.Sequential(nn.Linear(4, 3, seed=0), nn.ReLU(), nn.Dropout(0.5), nn.Linear(3, 1, seed=1))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.3.weight", "layers.3.bias"]
    assert model.num_parameters() == 4 * 3 + 3 + 3 + 1
    model.eval()
    assert not model[2].training
    model.train()
    assert model[2].training


def test_dropout_train_and_eval(backend):
    engine.manual_seed(0)
    x = engine.ones(1000, backend=backend)
    d = nn.Dropout(0.5)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), np.ones(1000))


def test_embedding_rows_used_twice_get_both_contributions(backend):
    emb = nn.Embedding(5, 3, seed=0, backend=backend)
    out = emb(np.array([1, 3, 1]))
    (out * tensor([[1.0], [2.0], [3.0]], backend=backend)).sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_allclose(g[1], [4.0, 4.0, 4.0])  # 1 + 3
    np.testing.assert_allclose(g[3], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(g[[0, 2, 4]], 0.0)


def test_module_to_moves_a_frozen_embedding_table_too():
    emb = nn.Embedding(4, 2, weight=np.arange(8.0).reshape(4, 2), trainable=False)
    assert emb.parameters() == []
    emb.to("python", dtype="float32")
    out = emb(np.array([3, 1]))
    assert (out.backend.name, out.dtype) == ("python", engine.float32)
    np.testing.assert_array_equal(out.numpy(), [[6.0, 7.0], [2.0, 3.0]])


def test_mean_over_an_empty_dim_is_nan_not_an_error(backend):
    x = tensor(np.zeros((0, 3)), requires_grad=True, backend=backend)
    assert np.isnan(x.mean().item())
    m = x.mean(0)
    assert m.shape == (3,) and np.all(np.isnan(m.numpy()))
    np.testing.assert_array_equal(x.sum(1).mean(0, keepdim=True).numpy(), [np.nan])
    m.sum().backward()
    assert x.grad.shape == (0, 3)


def test_hw2_model_gradients_by_gradcheck():
    rng = np.random.default_rng(0)
    x = tensor(rng.standard_normal((4, 6, 5)))
    y = tensor((rng.random((4, 1)) < 0.5).astype(float))
    l1, l2 = nn.Linear(5, 3, seed=1), nn.Linear(3, 1, seed=2)

    def loss(w1, b1, w2, b2):
        h = F.linear(x.mean(1), w1, b1).relu()
        return F.binary_cross_entropy(F.sigmoid(F.linear(h, w2, b2)), y)

    assert engine.gradcheck(loss, [l1.weight, l1.bias, l2.weight, l2.bias]).ok


def test_bce_is_finite_at_zero_and_one():
    p = tensor([0.0, 1.0, 0.0, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy(p, [0.0, 1.0, 1.0, 0.0])
    loss.backward()
    assert loss.item() == pytest.approx(50.0)  # two terms clamped at 100, mean over 4
    assert np.all(np.isfinite(p.grad.numpy()))


def test_logsumexp_is_stable_at_large_logits():
    z = tensor([[1000.0, -1000.0, 999.0]], requires_grad=True)
    out = z.logsumexp(1)
    assert out.item() == pytest.approx(1000.0 + np.log1p(np.exp(-1.0)))
    F.cross_entropy(z, [0]).backward()
    assert np.all(np.isfinite(z.grad.numpy()))
    np.testing.assert_allclose(z.softmax(-1).numpy().sum(), 1.0)


@pytest.mark.parametrize("target", [[3, 0], [-1, 0]])
def test_cross_entropy_rejects_out_of_range_classes(target):
    # logp is flattened for the pick: class 3 of row 0 would otherwise be logp[1, 0]
    z = tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        F.cross_entropy(z, target)


def test_cross_entropy_rejects_bad_shapes():
    with pytest.raises(ValueError, match="targets of shape"):
        F.cross_entropy(tensor(np.zeros((2, 3))), [0, 1, 2])
    with pytest.raises(ValueError, match=r"logits of shape \(N, C\)"):
        F.cross_entropy(tensor(np.zeros(3)), [0])


def test_sgd_step():
    p = nn.Parameter([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.numpy(), [0.8, 1.6])
    opt.zero_grad()
    assert p.grad is None




def _torch():
    return pytest.importorskip("torch", reason="PyTorch (optional oracle) not installed")


@pytest.mark.parametrize("opt_name", ["adam", "sgd_momentum"])
def test_optimisers_match_pytorch(opt_name):
    torch = _torch()
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 2))
    x = rng.standard_normal((5, 2))
    ours = nn.Parameter(w0.copy())
    theirs = torch.tensor(w0.copy(), requires_grad=True)
    if opt_name == "adam":
        o1, o2 = optim.Adam([ours], lr=0.05), torch.optim.Adam([theirs], lr=0.05)
    else:
        o1, o2 = optim.SGD([ours], lr=0.05, momentum=0.9), torch.optim.SGD([theirs], lr=0.05, momentum=0.9)
    for _ in range(20):
        o1.zero_grad()
        ((tensor(x) @ ours.T).tanh() ** 2).sum().backward()
        o1.step()
        o2.zero_grad()
        ((torch.tensor(x) @ theirs.T).tanh() ** 2).sum().backward()
        o2.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_masks_are_independent_per_thread():
    """Two trainings in two threads (two browser sessions) each get their own, reproducible masks."""
    import threading
    from engine.backends import get_backend

    def masks(seed, out, key):
        get_backend("numpy").seed(seed)
        x = engine.ones(200)
        out[key] = [F.dropout(x, 0.5).numpy() for _ in range(20)]

    alone: dict = {}
    masks(7, alone, "a")
    together: dict = {}
    threads = [threading.Thread(target=masks, args=(7, together, k)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in ("a", "b"):
        for m1, m2 in zip(alone["a"], together[k]):
            np.testing.assert_array_equal(m1, m2)


def test_embedding_takes_python_integer_indices_as_pytorch_does(backend):
    emb = engine.nn.Embedding(5, 2, backend=backend, seed=0)
    out = emb(tensor([[3, 1, 3]], backend=backend))
    assert out.shape == (1, 3, 2)
    table = emb.weight.numpy()
    np.testing.assert_array_equal(out.numpy()[0], table[[3, 1, 3]])
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [0, 1, 0, 2, 0])


def test_binary_cross_entropy_refuses_a_target_of_another_shape():
    """Probabilities (B,) against labels (B, 1) would broadcast to a (B, B) loss; PyTorch refuses it too."""
    p = engine.tensor([0.2, 0.7, 0.9], requires_grad=True)
    with pytest.raises(ValueError, match=r"input \(3,\), target \(3, 1\)"):
        F.binary_cross_entropy(p, [[0.0], [1.0], [1.0]])
    assert F.binary_cross_entropy(p, [0.0, 1.0, 1.0]).shape == ()


def _sparse_adam_reference(table, steps, lr, b1=0.9, b2=0.999, eps=1e-8):
    """SparseAdam's rule in plain NumPy, row by row."""
    p, m, v = table.copy(), np.zeros_like(table), np.zeros_like(table)
    for t, (rows, g) in enumerate(steps, start=1):
        for r, gr in zip(rows, g):
            m[r] = b1 * m[r] + (1 - b1) * gr
            v[r] = b2 * v[r] + (1 - b2) * gr * gr
            p[r] -= lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m[r] / (np.sqrt(v[r]) + eps)
    return p


def _sparse_steps(n_rows=20, dim=3, n_steps=6, seed=0):
    rng = np.random.default_rng(seed)
    return [(np.sort(rng.choice(n_rows, size=int(rng.integers(1, 5)), replace=False)),
             rng.standard_normal((0, dim))) for _ in range(n_steps)]


def test_sparse_adam_updates_only_the_named_rows(backend):
    rng = np.random.default_rng(1)
    table0 = rng.standard_normal((20, 3))
    steps = [(rows, rng.standard_normal((len(rows), 3))) for rows, _ in _sparse_steps()]
    w = tensor(table0.copy(), requires_grad=True, backend=backend)
    opt = optim.SparseAdam([w], lr=0.05)
    for rows, g in steps:
        opt.step_rows(w, rows, g)
    np.testing.assert_allclose(w.numpy(), _sparse_adam_reference(table0, steps, 0.05), rtol=1e-12, atol=1e-14)
    never = np.setdiff1d(np.arange(20), np.concatenate([r for r, _ in steps]))
    assert len(never) and np.array_equal(w.numpy()[never], table0[never])  # rows never named never move
    with pytest.raises(ValueError, match="values of shape"):
        opt.step_rows(w, [1, 2], np.zeros((3, 3)))
    with pytest.raises(TypeError, match="step_rows"):
        opt.step()


def test_sparse_adam_matches_pytorch():
    torch = _torch()
    rng = np.random.default_rng(2)
    table0 = rng.standard_normal((20, 3))
    steps = [(rows, rng.standard_normal((len(rows), 3))) for rows, _ in _sparse_steps(seed=3)]
    ours = tensor(table0.copy(), requires_grad=True)
    o1 = optim.SparseAdam([ours], lr=0.05)
    theirs = torch.tensor(table0.copy(), requires_grad=True)
    o2 = torch.optim.SparseAdam([theirs], lr=0.05)
    for rows, g in steps:
        o1.step_rows(ours, rows, g)
        theirs.grad = torch.sparse_coo_tensor(torch.tensor(rows)[None], torch.tensor(g), (20, 3))
        o2.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)


# --- what PyTorch refuses, the engine refuses: no silent wrong answer ----------------------------------------


@pytest.mark.parametrize("ids", [[-1], [5], [[0, 7]]])
def test_embedding_refuses_out_of_range_ids(backend, ids):
    """Id -1 used to return the last row (NumPy's negative indexing); PyTorch raises IndexError."""
    emb = nn.Embedding(5, 2, backend=backend, seed=0)
    with pytest.raises(IndexError, match=r"embedding ids must be in \[0, 5\)"):
        emb(ids)
    with pytest.raises(IndexError, match=r"\[0, 5\)"):
        emb(tensor(np.asarray(ids, dtype=np.int64), backend=backend))


@pytest.mark.parametrize("ids", [[1.5], [1.0, 2.0], np.array([0.9])])
def test_embedding_refuses_non_integer_ids(ids):
    """Float ids used to be truncated (1.5 -> row 1); PyTorch needs an integer tensor."""
    emb = nn.Embedding(5, 2, seed=0)
    with pytest.raises(TypeError, match="integer"):
        emb(ids)


@pytest.mark.parametrize("p", [1.5, -0.25, float("inf"), 1.0 + 1e-12])
def test_binary_cross_entropy_refuses_probabilities_outside_0_1(p):
    """p > 1 used to give nan silently; PyTorch raises 'all elements of input should be between 0 and 1'."""
    with pytest.raises(ValueError, match=r"between 0 and 1"):
        F.binary_cross_entropy(tensor([0.5, p], requires_grad=True), [1.0, 0.0])
    assert np.isfinite(F.binary_cross_entropy(tensor([0.0, 1.0]), [1.0, 0.0]).item())   # the ends are fine


def test_binary_cross_entropy_passes_nan_on_for_the_trainer_to_report():
    """NaN comes from upstream (a NaN weight): the loss is NaN and the trainer's check says where it began."""
    assert np.isnan(F.binary_cross_entropy(tensor([0.5, float("nan")]), [1.0, 0.0]).item())


def test_binary_cross_entropy_finds_a_bad_value_beside_nan():
    """NaN passes, but it does not hide a value outside [0, 1] elsewhere in the tensor."""
    with pytest.raises(ValueError, match=r"input.*got -0.5"):
        F.binary_cross_entropy(tensor([float("nan"), -0.5, 0.5]), [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"target.*got 3.0"):
        F.binary_cross_entropy(tensor([0.5, 0.5]), [float("nan"), 3.0])


def test_binary_cross_entropy_of_a_sigmoid_matches_pytorch_at_the_extremes():
    """A sigmoid's output is not checked again (it lies in [0, 1]); the loss still clamps its logs at -100."""
    z = tensor([-200.0, 0.0, 200.0], dtype="float32", requires_grad=True)
    loss = F.binary_cross_entropy(F.sigmoid(z), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(loss.item(), (100.0 + np.log(2.0) + 100.0) / 3, rtol=1e-6)


def test_binary_cross_entropy_refuses_targets_outside_0_1():
    with pytest.raises(ValueError, match=r"target.*between 0 and 1"):
        F.binary_cross_entropy(tensor([0.5, 0.5]), [2.0, 0.0])


@pytest.mark.parametrize("opt", ["sgd", "adam", "sparse_adam"])
@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -0.1, -float("inf")])
def test_every_optimiser_refuses_a_non_finite_or_negative_learning_rate(opt, lr):
    """Adam(lr=nan) used to be accepted (and turned every weight into nan at the first step)."""
    w = nn.Parameter(np.ones(3))
    with pytest.raises(ValueError, match="learning rate"):
        {"sgd": optim.SGD, "adam": optim.Adam, "sparse_adam": optim.SparseAdam}[opt]([w], lr=lr)


@pytest.mark.parametrize("opt", ["adam", "sparse_adam"])
@pytest.mark.parametrize("betas, eps", [((1.0, 0.999), 1e-8), ((0.9, float("nan")), 1e-8), ((0.9, 0.999), -1e-8)])
def test_adams_refuse_betas_outside_0_1_and_a_negative_eps(opt, betas, eps):
    w = nn.Parameter(np.ones(3))
    with pytest.raises(ValueError, match="beta|eps"):
        {"adam": optim.Adam, "sparse_adam": optim.SparseAdam}[opt]([w], lr=0.1, betas=betas, eps=eps)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_optimisers_refuse_non_finite_hyperparameters(opt):
    w = nn.Parameter(np.ones(3))
    with pytest.raises(ValueError, match="weight decay"):
        {"sgd": optim.SGD, "adam": optim.Adam}[opt]([w], lr=0.1, weight_decay=float("nan"))


@pytest.mark.parametrize("shape", [(2**32, 2**32), (2**62, 4), (2**40, 2**40, 2**40)])
def test_shapes_whose_size_overflows_int64_are_refused(shape):
    """A shape's element count must fit int64 (NumPy's np.prod would wrap: 2**32 * 2**32 -> 0)."""
    with pytest.raises(ValueError, match="int64"):
        tensor([[1.0]]).expand(*shape)
    with pytest.raises(ValueError, match="int64"):
        tensor([1.0]).view(*shape, -1)
    with pytest.raises(ValueError, match="int64"):
        engine.zeros(*shape)


def _adam_reference(params_grads_steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    """Adam's rule per parameter in NumPy, in the engine's operation order and with its constants in each
    parameter's dtype (its bits): a list of steps, the first the initial values, each later one a dict
    name -> gradient (a parameter missing from a step has no grad then and is not updated)."""
    import math
    p, m, v, t = {k: a.copy() for k, a in params_grads_steps[0].items()}, {}, {}, 0
    out = []
    for grads in params_grads_steps[1:]:
        t += 1
        for k, g in grads.items():
            c = p[k].dtype.type
            bc2, step = c(math.sqrt(1.0 - b2 ** t)), c(lr / (1.0 - b1 ** t))
            if wd:
                g = g + p[k] * c(wd)
            gm, gg = g * c(1 - b1), (g * g) * c(1 - b2)
            m[k] = gm if k not in m else m[k] * c(b1) + gm
            v[k] = gg if k not in v else v[k] * c(b2) + gg
            p[k] = p[k] - (m[k] / (np.sqrt(v[k]) / bc2 + c(eps))) * step
        out.append({k: a.copy() for k, a in p.items()})
    return out


@pytest.mark.parametrize("backend", ["numpy", "python"])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_adam_updates_all_parameters_at_once_with_the_per_parameter_bits(backend, wd):
    """Adam updates the parameters of one dtype and backend together (one flat update instead of one per
    parameter: the HW2 step's 4 parameters cost 44 small kernel calls otherwise), with exactly the bits of
    the per-parameter rule, also when a parameter has no gradient on some steps (the group changes) and
    with parameters of two dtypes (each dtype its own group)."""
    rng = np.random.default_rng(0)
    shapes = {"w1": (5, 3), "b1": (3,), "w2": (3, 1), "b2": (1,), "h": (2, 2)}
    init = {k: rng.normal(size=s) for k, s in shapes.items()}
    init["h"] = init["h"].astype(np.float32)
    plan = [set(shapes), set(shapes), {"w1", "w2", "h"}, set(shapes), {"b2"}, set(shapes) - {"h"}, set(shapes)]
    steps = [init] + [{k: rng.normal(size=shapes[k]).astype(init[k].dtype) for k in sorted(names)}
                      for names in plan]
    ps = {k: tensor(a, requires_grad=True, backend=backend) for k, a in init.items()}
    opt = optim.Adam(list(ps.values()), lr=0.01, weight_decay=wd)
    want = _adam_reference(steps, wd=wd)
    for n, (grads, expect) in enumerate(zip(steps[1:], want)):
        for k, p in ps.items():
            p.grad = tensor(grads[k], backend=backend) if k in grads else None
        opt.step()
        for k, p in ps.items():
            np.testing.assert_array_equal(p.numpy(), expect[k], err_msg=f"{k} on {backend}, step {n + 1}")
            assert p.shape == shapes[k] and p.numpy().dtype == init[k].dtype
    # the parameters still work as ordinary tensors after their data became part of one update
    ps["w1"].grad = None
    (ps["w1"].sum() * 2.0).backward()
    np.testing.assert_array_equal(ps["w1"].grad.numpy(), np.full(shapes["w1"], 2.0))
