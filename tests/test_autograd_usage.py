"""Slides 27-28 on the engine (explorer/autograd_usage.py): make_vjp / grad as the slides write them, beside the
notes' use of grad (a tanh network's log-posterior with logsumexp and an L2 prior) run by engine.vjp / engine.grad,
checked by central differences, against PyTorch where installed, and as the Expression explorer renders it."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from explorer import autograd_usage as A


@pytest.fixture(scope="module")
def check():
    return A.usage_check()


def test_grad_matches_central_differences_on_every_entry_and_vjp_with_a_one_is_grad(check):
    assert check.n_entries == 4 * 5 + 5 + 5 * 3 + 3
    assert [r.name for r in check.rows] == ["W1", "b1", "W2", "b2"]
    assert [r.shape for r in check.rows] == [(4, 5), (5,), (5, 3), (3,)]
    # float64 central differences at h = 1e-6 on |objective| ~ 17: truncation ~h², rounding ~ε|f|/h ~ 2e-9
    assert check.max_abs_error < 1e-7
    assert all(r.grad_norm > 0.1 for r in check.rows)      # a real gradient, not zeros
    assert check.vjp_equals_grad


def test_a_wrong_gradient_would_be_caught(monkeypatch):
    """The check is not vacuous: a network whose tanh has the wrong derivative fails it."""
    import engine

    def wrong_tanh(x):
        return engine.sigmoid(2 * x) * 2 - 1 + 0.01 * (x - x.detach())   # value tanh, derivative off by 0.01
    monkeypatch.setattr(A.engine, "tanh", wrong_tanh)
    assert A.usage_check().max_abs_error > 1e-4


def test_the_shown_code_is_the_code_that_runs():
    for f in (A.neural_net_predict, A.l2_norm, A.log_posterior, A.make_objective):
        assert inspect.getsource(f).rstrip() in A.ENGINE_CODE
    for name in ("engine.grad(objective", "engine.vjp(objective", "logsumexp", "engine.tanh", "l2_reg"):
        assert name in A.ENGINE_CODE
    for name in ("def make_vjp(fun, x):", "backward_pass(g, end_node)", "def grad(fun, argnum=0):",
                 "vjp(vspace(ans).ones())"):
        assert name in A.SLIDE_MAKE_VJP


def test_the_same_objective_in_pytorch_gives_the_same_gradient(check):
    torch = pytest.importorskip("torch")
    flat_np, inputs_np, targets_np = A.init_problem()
    flat = [torch.tensor(p, requires_grad=True) for p in flat_np]
    inputs, targets = torch.tensor(inputs_np), torch.tensor(targets_np)
    h = inputs
    for k in range(0, len(flat), 2):
        out = h @ flat[k] + flat[k + 1]
        h = torch.tanh(out)
    logp = out - torch.logsumexp(out, dim=1, keepdim=True)
    l2 = sum((p * p).sum() for p in flat)
    objective = -(-A.L2_REG * l2 + (logp * targets).sum())
    objective.backward()
    assert abs(objective.item() - check.objective) < 1e-12
    import engine
    ours = A.usage_check()
    flat_e = [engine.tensor(p) for p in flat_np]
    grads = engine.grad(A.make_objective(engine.tensor(inputs_np), engine.tensor(targets_np)),
                        argnums=(0, 1, 2, 3))(*flat_e)
    for g, p in zip(grads, flat):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=0, atol=1e-13)
    assert ours.objective == check.objective


def test_the_expression_explorer_shows_the_slides_code_the_engine_code_and_the_check(check):
    from tests.test_app_pages import EXPLORER, no_exceptions, page, texts
    at = page(EXPLORER).run()
    no_exceptions(at)
    assert any(s.value.startswith("Slides 27–28") for s in at.subheader)
    codes = [c.value for c in at.code]
    assert A.SLIDE_MAKE_VJP in codes and A.ENGINE_CODE in codes
    assert A.summary(check) in texts(at)
    assert f"{check.max_abs_error:.1e}" in A.summary(check)
    tables = [t for t in at.table if "max |grad − central difference|" in t.value.columns]
    assert len(tables) == 1
    assert list(tables[0].value["parameter"]) == ["W1", "b1", "W2", "b2"]
