"""sin and cos as PyTorch-shaped code and a paper's examples use them (Baydin et al. 2018, Tables 2-3):
``engine.sin(x)``, ``x.sin()``, ``x.cos()``, with gradients and second derivatives from the engine."""
from __future__ import annotations

import numpy as np
import pytest

import engine


def test_the_public_functions_and_methods_exist_and_agree():
    x = engine.tensor(np.linspace(-2.0, 2.0, 7), dtype=engine.float64, requires_grad=True)
    assert np.allclose(engine.sin(x).numpy(), np.sin(x.numpy()))
    assert np.allclose(x.sin().numpy(), np.sin(x.numpy()))
    assert np.allclose(engine.cos(x).numpy(), np.cos(x.numpy()))
    assert np.allclose(x.cos().numpy(), np.cos(x.numpy()))
    assert np.allclose(x.neg().numpy(), -x.numpy())


def test_baydins_example_its_gradient_and_second_derivative():
    """f(x1, x2) = ln(x1) + x1*x2 - sin(x2) at (2, 5), the survey's running example: f = 11.652,
    df/dx1 = 1/x1 + x2 = 5.5, df/dx2 = x1 - cos(x2) = 1.716."""
    def f(x1, x2):
        return x1.log() + x1 * x2 - x2.sin()

    x1 = engine.tensor(2.0, dtype=engine.float64)
    x2 = engine.tensor(5.0, dtype=engine.float64)
    assert f(x1, x2).item() == pytest.approx(np.log(2) + 10 - np.sin(5))
    g1, g2 = engine.grad(f, argnums=(0, 1))(x1, x2)
    assert g1.item() == pytest.approx(1 / 2 + 5) and g2.item() == pytest.approx(2 - np.cos(5))
    h22 = engine.grad(engine.grad(f, argnums=1), argnums=1)(x1, x2)      # d²f/dx2² = sin(x2)
    assert h22.item() == pytest.approx(np.sin(5))
    x = engine.tensor(0.3, dtype=engine.float64)
    d1 = engine.grad(lambda t: t.cos())(x)
    d2 = engine.grad(engine.grad(lambda t: engine.cos(t)))(x)
    assert d1.item() == pytest.approx(-np.sin(0.3)) and d2.item() == pytest.approx(-np.cos(0.3))
