"""Gradients of composite programs against PyTorch (skips cleanly when torch is not installed)."""
import numpy as np
import pytest

import engine
from engine import functional as F
from engine import tensor

torch = pytest.importorskip("torch", reason="PyTorch (optional oracle) not installed")
TF = torch.nn.functional

PROGRAMS = {
    "slide": (lambda m, a, b: a + (1.5 * a + 2.0 * b).exp(), [(), ()]),
    "mlp_softmax_ce": (
        lambda m, x, w1, b1, w2: (F.cross_entropy if m is engine else
                                  (lambda z, t: TF.cross_entropy(z, torch.tensor(t))))(
            (x @ w1 + b1).relu() @ w2, [0, 2, 1, 2]),
        [(4, 3), (3, 5), (5,), (5, 3)]),
    "attention": (
        lambda m, x, wq, wk: (((x @ wq) @ (x @ wk).transpose(0, 1)) * 0.5).softmax(-1).sum(0).log().sum(),
        [(3, 4), (4, 4), (4, 4)]),
    "bce_sigmoid": (
        lambda m, z: (F.binary_cross_entropy(F.sigmoid(z), [1.0, 0.0, 1.0]) if m is engine
                      else TF.binary_cross_entropy(torch.sigmoid(z), torch.tensor([1.0, 0.0, 1.0], dtype=z.dtype))),
        [(3,)]),
    "logsumexp_max": (lambda m, x: x.logsumexp(1).sum() + x.amax(1).sum() + x.max(1).values.sum(),
                      [(3, 4)]),
    "broadcast_div_tanh": (lambda m, a, b: (a / (b * b + 1.0)).tanh().mean(), [(2, 3), (3,)]),
    "rnn_shared_weight": (
        lambda m, w, x: _rnn(m, w, x), [(), (5,)]),
}


def _rnn(m, w, x):
    h = x[0] * 0.0
    for t in range(5):
        h = (h * w + x[t]).sigmoid()
    return h


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradients_match_pytorch(name):
    fn, shapes = PROGRAMS[name]
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s) for s in shapes]
    ours = [tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    out_ours, out_theirs = fn(engine, *ours), fn(torch, *theirs)
    np.testing.assert_allclose(out_ours.numpy(), out_theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    out_ours.sum().backward()
    out_theirs.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)
