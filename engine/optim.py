"""Optimisers: SGD (with momentum) and Adam with PyTorch's update rules.

Updates work on the parameters' raw backend arrays through the backend's own
kernels (no autodiff history, no Tensor objects per step).
"""
from __future__ import annotations

import math
from typing import Iterable

from .tensor import Tensor


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        if lr <= 0:
            raise ValueError(f"learning rate must be positive, got {lr}")
        self.lr = lr
        self._consts: dict = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _c(self, p: Tensor, value: float):
        """A scalar array on p's backend and dtype (cached)."""
        key = (p.backend.name, p.dtype.name, value)
        arr = self._consts.get(key)
        if arr is None:
            arr = self._consts[key] = p.backend.array(value, p.dtype)
        return arr

    def step(self) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """p <- p - lr * (g + weight_decay p), with optional (PyTorch-style) momentum."""

    def __init__(self, params, lr: float = 0.1, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.momentum, self.weight_decay = momentum, weight_decay
        self.velocity: dict[int, object] = {}

    def step(self) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            be = p.backend
            g = p.grad._data
            if self.weight_decay:
                g = be.binary("add", g, be.binary("mul", p._data, self._c(p, self.weight_decay)))
            if self.momentum:
                v = self.velocity.get(id(p))
                v = g if v is None else be.binary("add", be.binary("mul", v, self._c(p, self.momentum)), g)
                self.velocity[id(p)] = v
                g = v
            p._data = be.binary("sub", p._data, be.binary("mul", g, self._c(p, self.lr)))


class Adam(Optimizer):
    """Adam (Kingma & Ba), bias-corrected, exactly as ``torch.optim.Adam``:

    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
    p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.b1, self.b2 = betas
        self.eps, self.weight_decay = eps, weight_decay
        self.t = 0
        self.m: dict[int, object] = {}
        self.v: dict[int, object] = {}

    def step(self) -> None:
        self.t += 1
        bc1 = 1.0 - self.b1 ** self.t
        bc2_sqrt = math.sqrt(1.0 - self.b2 ** self.t)
        step_size = self.lr / bc1
        for p in self.params:
            if p.grad is None:
                continue
            be, c = p.backend, self._c
            g = p.grad._data
            if self.weight_decay:
                g = be.binary("add", g, be.binary("mul", p._data, c(p, self.weight_decay)))
            key = id(p)
            m, v = self.m.get(key), self.v.get(key)
            gm = be.binary("mul", g, c(p, 1.0 - self.b1))
            gg = be.binary("mul", be.binary("mul", g, g), c(p, 1.0 - self.b2))
            m = gm if m is None else be.binary("add", be.binary("mul", m, c(p, self.b1)), gm)
            v = gg if v is None else be.binary("add", be.binary("mul", v, c(p, self.b2)), gg)
            self.m[key], self.v[key] = m, v
            denom = be.binary("add", be.binary("div", be.unary("sqrt", v), c(p, bc2_sqrt)), c(p, self.eps))
            update = be.binary("mul", be.binary("div", m, denom), c(p, step_size))
            p._data = be.binary("sub", p._data, update)
