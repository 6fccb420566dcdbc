"""Optimisers: SGD (with momentum) and Adam with PyTorch's update rules.

Updates work on the parameters' raw backend arrays through the backend's own
kernels (no autodiff history, no Tensor objects per step).
"""
from __future__ import annotations

import math
from typing import Iterable

from .tensor import Tensor


class _Kernels:
    """The raw kernels and constants one (backend, dtype) pair of parameters is updated with: the
    backend's own functions where it has them (NumPy's ufuncs: no dispatch per call), the same bits."""

    __slots__ = ("backend", "dtype", "add", "sub", "mul", "div", "sqrt", "_consts")

    def __init__(self, backend, dtype):
        self.backend, self.dtype = backend, dtype
        dts = (dtype, dtype)
        for name, method, op, n in (("add", "binary", "add", 2), ("sub", "binary", "sub", 2),
                                    ("mul", "binary", "mul", 2), ("div", "binary", "div", 2),
                                    ("sqrt", "unary", "sqrt", 1)):
            fn = backend.kernel(method, op, dtypes=dts[:n])
            if fn is None:
                fn = getattr(backend, method)
                fn = (lambda a, b, f=fn, o=op: f(o, a, b)) if n == 2 else (lambda a, f=fn, o=op: f(o, a))
            setattr(self, name, fn)
        self._consts: dict[float, object] = {}

    def const(self, value: float):
        """A scalar array of this dtype (kept: the hyperparameters)."""
        arr = self._consts.get(value)
        if arr is None:
            arr = self._consts[value] = self.backend.array(value, self.dtype)
        return arr

    def scalar(self, value: float):
        """A scalar array of this dtype made for one step (bias corrections change every step)."""
        return self.backend.array(value, self.dtype)


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        if lr <= 0:
            raise ValueError(f"learning rate must be positive, got {lr}")
        self.lr = lr
        self._kernel_sets: dict[tuple, _Kernels] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _kernels(self, p: Tensor) -> _Kernels:
        key = (p.backend, p.dtype)  # a parameter may move (Module.to): looked up per step
        k = self._kernel_sets.get(key)
        if k is None:
            k = self._kernel_sets[key] = _Kernels(*key)
        return k

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
        per_step: dict[int, tuple] = {}
        for p in self.params:
            if p.grad is None:
                continue
            k = self._kernels(p)
            mul, add, c = k.mul, k.add, k.const
            corr = per_step.get(id(k))
            if corr is None:
                corr = per_step[id(k)] = (k.scalar(bc2_sqrt), k.scalar(step_size))
            g = p.grad._data
            if self.weight_decay:
                g = add(g, mul(p._data, c(self.weight_decay)))
            key = id(p)
            m, v = self.m.get(key), self.v.get(key)
            gm = mul(g, c(1.0 - self.b1))
            gg = mul(mul(g, g), c(1.0 - self.b2))
            m = gm if m is None else add(mul(m, c(self.b1)), gm)
            v = gg if v is None else add(mul(v, c(self.b2)), gg)
            self.m[key], self.v[key] = m, v
            denom = add(k.div(k.sqrt(v), corr[0]), c(self.eps))
            p._data = k.sub(p._data, mul(k.div(m, denom), corr[1]))
