"""Optimisers: SGD (with momentum) and Adam with PyTorch's update rules.

Updates work on the parameters' raw backend arrays through the backend's own raw
kernels (``Backend.kernels(dtype, raw=True)``: no autodiff history, no Tensor objects,
no dispatch per call).
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

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @staticmethod
    def _kernels(p: Tensor):
        # the backend's raw kernels for p's dtype (NumPy: the ufuncs, no dispatch per call; the
        # gradient has p's dtype); looked up per step, as a parameter may move (Module.to)
        return p.backend.kernels(p.dtype, raw=True)

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
            k = self._kernels(p)
            g = p.grad._data
            if self.weight_decay:
                g = k.add(g, k.mul(p._data, k.const(self.weight_decay)))
            if self.momentum:
                v = self.velocity.get(id(p))
                v = g if v is None else k.add(k.mul(v, k.const(self.momentum)), g)
                self.velocity[id(p)] = v
                g = v
            p._data = k.sub(p._data, k.mul(g, k.const(self.lr)))


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
        bc2_sqrt = math.sqrt(1.0 - self.b2 ** self.t)
        step_size = self.lr / (1.0 - self.b1 ** self.t)
        per_step: dict[int, tuple] = {}  # per kernel set: this step's constants in its dtype
        for p in self.params:
            if p.grad is None:
                continue
            k = self._kernels(p)
            mul, add = k.mul, k.add
            consts = per_step.get(id(k))
            if consts is None:
                c, be, dt = k.const, k.backend, k.dtype  # the bias corrections change every step: not kept
                consts = per_step[id(k)] = (c(1.0 - self.b1), c(1.0 - self.b2), c(self.b1), c(self.b2),
                                            c(self.eps), be.array(bc2_sqrt, dt), be.array(step_size, dt))
            one_b1, one_b2, b1, b2, eps, bc2, lr_t = consts
            g = p.grad._data
            if self.weight_decay:
                g = add(g, mul(p._data, k.const(self.weight_decay)))
            key = id(p)
            m, v = self.m.get(key), self.v.get(key)
            gm = mul(g, one_b1)
            gg = mul(mul(g, g), one_b2)
            m = gm if m is None else add(mul(m, b1), gm)
            v = gg if v is None else add(mul(v, b2), gg)
            self.m[key], self.v[key] = m, v
            denom = add(k.div(k.sqrt(v), bc2), eps)
            p._data = k.sub(p._data, mul(k.div(m, denom), lr_t))
