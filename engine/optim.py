"""Optimisers: SGD (with momentum) and Adam with PyTorch's update rules.

Updates work on the parameters' raw backend arrays through the backend's own raw
kernels (``Backend.kernels(dtype, raw=True)``: no autodiff history, no Tensor objects,
no dispatch per call).
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from .tensor import Tensor


def _checked(name: str, value, positive: bool = False, below_one: bool = False) -> float:
    """``value`` as a float when it is finite and non-negative (positive, below 1 when asked).

    Raises:
        ValueError: NaN, an infinity or a negative number (``Adam(lr=nan)`` used to turn every weight into
            NaN at the first step; PyTorch refuses a negative or NaN rate too).
    """
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0) or (below_one and v >= 1):
        need = "a positive" if positive else "a non-negative"
        raise ValueError(f"{name} must be {need} finite number{' below 1' if below_one else ''}, got {value}")
    return v


class Optimizer:
    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self.lr = _checked("learning rate", lr, positive=True)

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
    """p <- p - lr * (g + weight_decay p), with optional (PyTorch-style) momentum. ``lr`` has no
    default: a learning rate is the one choice every training run makes on purpose."""

    def __init__(self, params, lr: float, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.momentum, self.weight_decay = _checked("momentum", momentum), _checked("weight decay", weight_decay)
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
        self.b1, self.b2 = (_checked(f"beta {i + 1}", b, below_one=True) for i, b in enumerate(betas))
        self.eps, self.weight_decay = _checked("eps", eps), _checked("weight decay", weight_decay)
        self.t = 0
        self.m: dict[int, object] = {}
        self.v: dict[int, object] = {}
        self._flat: dict[int, tuple] = {}  # per kernel set: (parameter ids, flat m, flat v, value views, values)
        self._fixed: dict[tuple, tuple] = {}  # per kernel set and (b1, b2, eps): those constants in its dtype

    def step(self) -> None:
        self.t += 1
        bc2_sqrt = math.sqrt(1.0 - self.b2 ** self.t)
        step_size = self.lr / (1.0 - self.b1 ** self.t)
        per_step: dict[int, tuple] = {}  # per kernel set: this step's constants in its dtype
        groups: dict[int, tuple] = {}    # per kernel set on NumPy: the parameters updated as one flat array
        for p in self.params:
            if p.grad is None:
                continue
            k = self._kernels(p)
            consts = per_step.get(id(k))
            if consts is None:
                # betas and eps as the kernels' constants, made once per kernel set (and again if one is
                # changed); the bias corrections change every step
                fixed_key = (id(k), self.b1, self.b2, self.eps)
                fixed = self._fixed.get(fixed_key)
                if fixed is None:
                    c = k.const
                    fixed = self._fixed[fixed_key] = (c(1.0 - self.b1), c(1.0 - self.b2), c(self.b1), c(self.b2),
                                                      c(self.eps))
                be, dt = k.backend, k.dtype
                consts = per_step[id(k)] = fixed + (be.array(bc2_sqrt, dt), be.array(step_size, dt))
            if isinstance(p._data, np.ndarray) and isinstance(p.grad._data, np.ndarray):
                groups.setdefault(id(k), (k, consts, []))[2].append(p)
            else:
                self._update_one(p, k, consts)
        for k, consts, members in groups.values():
            self._update_flat(members, k, consts)

    def _rule(self, k, consts, data, g, m, v):
        """Adam's update of one array (a parameter's, or several parameters' raveled end to end: every
        operation is elementwise, so each number gets the same operations in the same order either way)."""
        one_b1, one_b2, b1, b2, eps, bc2, lr_t = consts
        mul, add = k.mul, k.add
        if self.weight_decay:
            g = add(g, mul(data, k.const(self.weight_decay)))
        gm = mul(g, one_b1)
        gg = mul(mul(g, g), one_b2)
        m = gm if m is None else add(mul(m, b1), gm)
        v = gg if v is None else add(mul(v, b2), gg)
        denom = add(k.div(k.sqrt(v), bc2), eps)
        return k.sub(data, mul(k.div(m, denom), lr_t)), m, v

    def _update_one(self, p: Tensor, k, consts) -> None:
        key = id(p)
        p._data, self.m[key], self.v[key] = self._rule(k, consts, p._data, p.grad._data, self.m.get(key),
                                                       self.v.get(key))

    def _update_flat(self, members: list[Tensor], k, consts) -> None:
        """One update for the NumPy parameters of one dtype: their gradients, moments and values raveled end to
        end (11 ufunc calls for the lot instead of 11 per parameter; HW2's step has 4 parameters), the new
        values handed back as views of one array. The moments stay flat while the same parameters have
        gradients; when the set changes they go back to the parameters (``self.m`` / ``self.v``)."""
        ids = tuple(id(p) for p in members)
        flat = self._flat.pop(id(k), None)
        if flat is not None and flat[0] != ids:
            self._unflatten(flat)
            flat = None
        if flat is None:
            ms, vs = [self.m.get(i) for i in ids], [self.v.get(i) for i in ids]
            if any(x is None for x in ms) and not all(x is None for x in ms):
                for p in members:  # some have moments, some not (a parameter's first gradient): one by one
                    self._update_one(p, k, consts)
                return
            for i in ids:
                self.m.pop(i, None)
                self.v.pop(i, None)
            m = None if ms[0] is None else np.concatenate([x.ravel() for x in ms])
            v = None if vs[0] is None else np.concatenate([x.ravel() for x in vs])
            views, data = None, None
        else:
            _, m, v, views, data = flat
        if views is None or any(p._data is not w for p, w in zip(members, views)):
            data = np.concatenate([p._data.ravel() for p in members])  # a value set elsewhere since
        g = np.concatenate([p.grad._data.ravel() for p in members])
        data, m, v = self._rule(k, consts, data, g, m, v)
        views, start = [], 0
        for p in members:
            n = p._data.size
            view = data[start:start + n].reshape(p._data.shape)
            views.append(view)
            p._data = view
            start += n
        self._flat[id(k)] = (ids, m, v, views, data)

    def _unflatten(self, flat) -> None:
        ids, m, v, views, _ = flat
        start = 0
        for i, w in zip(ids, views):
            n = w.size
            if m is not None:
                self.m[i], self.v[i] = m[start:start + n].reshape(w.shape), v[start:start + n].reshape(w.shape)
            start += n


class SparseAdam(Optimizer):
    """Adam for a table of which each step touches a few rows (word vectors): PyTorch's
    ``torch.optim.SparseAdam`` rule. Only the rows a step's gradient names are updated, their moments
    too (the others keep their values and do not decay: a "lazy" Adam); with every row named each
    step it equals :class:`Adam` up to where eps is added:

    m_r += (1 - b1)(g_r - m_r);  v_r += (1 - b2)(g_r² - v_r)
    p_r -= lr sqrt(1 - b2^t) / (1 - b1^t) · m_r / (sqrt(v_r) + eps)

    The gradient comes as rows and their values (:meth:`step_rows`), not as ``.grad`` (a dense
    gradient of a 15,000-row table costs more to fill and to update than the rest of the step).
    The moments live in NumPy arrays; on the NumPy backend the table is updated in place, on others
    through a host copy.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr)
        self.b1, self.b2 = (_checked(f"beta {i + 1}", b, below_one=True) for i, b in enumerate(betas))
        self.eps = _checked("eps", eps)
        self.t = 0
        self.m: dict[int, np.ndarray] = {}
        self.v: dict[int, np.ndarray] = {}

    def step(self) -> None:
        raise TypeError("SparseAdam takes its gradient as rows: call step_rows(param, rows, values)")

    def step_rows(self, param: Tensor, rows, values) -> None:
        """One update of ``param``'s rows ``rows`` (distinct ints) with gradient rows ``values`` (len(rows), ...).

        Raises:
            ValueError: ``param`` is not one of this optimizer's parameters, or the shapes disagree.
        """
        if not any(p is param for p in self.params):
            raise ValueError("step_rows: param is not one of this optimizer's parameters")
        rows = np.asarray(rows, dtype=np.int64)
        values = np.asarray(values)
        if values.shape != (len(rows),) + tuple(param.shape[1:]):
            raise ValueError(f"step_rows: values of shape {values.shape} for {len(rows)} rows of a "
                             f"{tuple(param.shape)} parameter")
        self.t += 1
        key = id(param)
        on_numpy = isinstance(param._data, np.ndarray) and param.backend.name == "numpy"
        table = param._data if on_numpy else param.numpy().copy()
        m = self.m.get(key)
        if m is None:
            m = self.m[key] = np.zeros(table.shape, table.dtype)
            self.v[key] = np.zeros(table.shape, table.dtype)
        v = self.v[key]
        g = values.astype(table.dtype, copy=False)
        # in place on the gathered rows: a step touches ~1,000 rows, where temporaries cost as much as the sums
        m_r, v_r = np.take(m, rows, axis=0), np.take(v, rows, axis=0)  # np.take: half a fancy index's time
        d = g - m_r
        d *= 1.0 - self.b1
        m_r += d
        np.multiply(g, g, out=d)
        d -= v_r
        d *= 1.0 - self.b2
        v_r += d
        m[rows], v[rows] = m_r, v_r
        step_size = self.lr * math.sqrt(1.0 - self.b2 ** self.t) / (1.0 - self.b1 ** self.t)
        np.sqrt(v_r, out=d)
        d += self.eps
        np.divide(m_r, d, out=d)
        d *= step_size
        table[rows] -= d
        if not on_numpy:
            param._data = param.backend.array(table, param.dtype)
