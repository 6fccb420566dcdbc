"""The HW2 training step (the benchmark's workload), eager and compiled.

Step: x (batch, tokens, 50) -> mean over tokens -> Linear(50, H) -> ReLU -> Dropout(0.5)
-> Linear(H, 1) -> sigmoid -> binary cross-entropy -> backward -> Adam, float32.

``compiled_hw2_step_fn(params)`` is what ``benchmarks/hw2_step.py`` times as
"engine compiled (replayed graph)": the eager step captured once with ``compile`` and replayed.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import functional as F
from .. import nn, optim
from .capture import CompiledStep, compile


class HW2Net(nn.Module):
    """mean over tokens -> Linear -> ReLU -> Dropout(0.5) -> Linear -> sigmoid."""

    def __init__(self, params: Sequence[np.ndarray], backend: str = "numpy"):
        super().__init__()
        hidden, dim = params[0].shape
        dtype = "float32" if params[0].dtype == np.float32 else "float64"
        self.l1 = nn.Linear(dim, hidden, dtype=dtype, backend=backend)
        self.l2 = nn.Linear(hidden, 1, dtype=dtype, backend=backend)
        self.drop = nn.Dropout(0.5)
        self.load_state_dict({"l1.weight": params[0], "l1.bias": params[1], "l2.weight": params[2],
                              "l2.bias": params[3]})

    def forward(self, x):
        h = self.drop(self.l1(x.mean(1)).relu())
        return F.sigmoid(self.l2(h))


def hw2_eager_step(params: Sequence[np.ndarray], backend: str = "numpy", lr: float = 1e-3):
    """``(step, model, optimizer)``: ``step(x, y)`` runs one eager training step and returns the loss."""
    model = HW2Net(params, backend)
    opt = optim.Adam(model.parameters(), lr=lr)

    def step(x, y):
        opt.zero_grad()
        loss = F.binary_cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, model, opt


def compiled_hw2_step_fn(params: Sequence[np.ndarray], backend: str = "numpy", lr: float = 1e-3) -> CompiledStep:
    """The HW2 step captured on its first call and replayed afterwards (same signature: ``step(x, y)``).

    Args:
        params: ``[W1 (H, 50), b1 (H,), W2 (1, H), b2 (1,)]`` NumPy arrays (their dtype is used).
        backend: engine backend name.
    """
    step, _, opt = hw2_eager_step(params, backend, lr)
    return compile(step, optimizer=opt)


def eager_hw2_step_fn(params: Sequence[np.ndarray], backend: str = "numpy", lr: float = 1e-3) -> Callable:
    """The same step, eager (for side-by-side comparisons)."""
    return hw2_eager_step(params, backend, lr)[0]
