"""Functional transforms (``grad``, ``vjp``, ``jvp``), gradient checking and constructors."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .autodiff import derivatives_at
from .backends import get_backend, seed_all
from .dtypes import as_dtype, float64
from .ops import cast, ones_like, zeros_like
from .tensor_data import check_size
from .tensor import Tensor, _dims_arg, _state, as_tensor_like, no_grad, set_grad_enabled, tensor


# --- constructors

def zeros(*shape, dtype=float64, backend="numpy", requires_grad=False) -> Tensor:
    return full(_dims_arg(shape), 0.0, dtype=dtype, backend=backend, requires_grad=requires_grad)


def ones(*shape, dtype=float64, backend="numpy", requires_grad=False) -> Tensor:
    return full(_dims_arg(shape), 1.0, dtype=dtype, backend=backend, requires_grad=requires_grad)


def full(shape, value: float, dtype=float64, backend="numpy", requires_grad=False) -> Tensor:
    be = get_backend(backend)
    check_size(shape)
    t = Tensor._make(be.full(tuple(shape), value, as_dtype(dtype)), be)
    return t.requires_grad_(requires_grad) if requires_grad else t


_seed_rng = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Seed every backend's generator (dropout) and the generator behind ``randn``."""
    global _seed_rng
    _seed_rng = np.random.default_rng(seed)
    seed_all(seed)


def randn(*shape, dtype=float64, backend="numpy", requires_grad=False, rng: np.random.Generator | None = None):
    """Standard normal samples (drawn with NumPy, then moved to the backend)."""
    r = rng if rng is not None else _seed_rng
    return tensor(r.standard_normal(_dims_arg(shape)), requires_grad=requires_grad, dtype=dtype, backend=backend)


# --- functional transforms

def _leaf(x, requires_grad: bool = True) -> Tensor:
    if isinstance(x, Tensor):
        t = Tensor._make(x._data, x.backend)
        t.tangent = x.tangent  # inside jvp, the fresh leaf keeps carrying its forward-mode tangent
    else:
        t = tensor(x)
        if not t.dtype.is_floating:  # grad(f)(3): the number is a point on the real line
            t = tensor(x, dtype=float64)
    t.requires_grad = requires_grad
    return t


def _differentiable_inputs(args) -> tuple[list[Tensor], bool]:
    """Inputs to differentiate with respect to, and whether we are nested inside another transform.

    A tensor that already requires grad is used as it is (so ``grad(grad(f))`` stays
    connected to the outer graph); anything else becomes a fresh leaf.
    """
    nested = any(isinstance(a, Tensor) and a.requires_grad for a in args)
    return [a if isinstance(a, Tensor) and a.requires_grad else _leaf(a) for a in args], nested


def _derivatives(out: Tensor, inputs: Sequence[Tensor], cotangent: Tensor, create_graph: bool) -> tuple:
    if not out.requires_grad:
        return tuple(zeros_like(x) for x in inputs)
    with set_grad_enabled(create_graph):
        found = derivatives_at(out, cotangent, inputs)
        # a mixed-dtype op promotes the adjoint; each derivative keeps its input's dtype
        return tuple(zeros_like(x) if found.get(x.unique_id) is None else cast(found[x.unique_id], x.dtype)
                     for x in inputs)


def grad(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The gradient function of ``f`` (which must return a one-element tensor).

    ``grad(f)(x, y)`` returns d f / d x as a Tensor; with ``argnums=(0, 1)`` a tuple.
    Unused inputs get zeros. Nests: ``grad(grad(f))`` is the second derivative.
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def grad_f(*args):
        args = list(args)
        leaves, nested = _differentiable_inputs([args[i] for i in nums])
        for i, leaf in zip(nums, leaves):
            args[i] = leaf
        with set_grad_enabled(True):  # also under no_grad / inside jvp: f's graph is what we differentiate
            out = f(*args)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise TypeError("grad(f) needs f to return a one-element Tensor")
        one = ones_like(out)
        grads = _derivatives(out, leaves, one, create_graph=nested)
        return grads[0] if single else grads

    return grad_f


def vjp(f: Callable, *primals):
    """``(out, vjp_fn)``: ``vjp_fn(cotangent)`` returns x̄ = Jᵀ ȳ for every primal (the slides' make_vjp).

    ``vjp_fn`` raises ValueError when the cotangent's shape is not the output's.
    """
    leaves, nested = _differentiable_inputs(primals)
    with set_grad_enabled(True):  # also under no_grad / inside jvp: f's graph is what we differentiate
        out = f(*leaves)

    def vjp_fn(cotangent):
        cotangent = as_tensor_like(cotangent, out)
        if cotangent.shape != out.shape:  # else it would broadcast into a silently wrong x̄, or fail deep in a VJP
            raise ValueError(f"cotangent of shape {cotangent.shape} does not match the output's shape {out.shape}")
        return _derivatives(out, leaves, cotangent, create_graph=nested)

    return (out if nested else out.detach()), vjp_fn


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """Forward mode with dual numbers: ``(f(primals), J @ tangents)`` in one forward pass.

    Every primitive carries (value, tangent) forward with its JVP rule. Both results are
    constants (no reverse-mode history): for a Hessian-vector product use ``jvp(grad(f), ...)``.

    Raises:
        ValueError: a tangent per primal is missing, or a tangent's shape differs from its primal's.
        NotImplementedError: when called inside another ``jvp`` (a tensor carries one tangent,
            so nested forward mode would mix the two perturbations up).
    """
    if _state.forward_mode > 0:
        raise NotImplementedError("engine.jvp does not nest: a tensor carries one tangent, so jvp inside jvp "
                                  "would confuse the two perturbations; use jvp(grad(f), ...) or grad(grad(f))")
    if len(primals) != len(tangents):
        raise ValueError("jvp needs one tangent per primal")
    leaves = []
    for p, t in zip(primals, tangents):
        leaf = _leaf(p, requires_grad=False)
        tt = _leaf(t, requires_grad=False)
        if tt.backend is not leaf.backend or tt.dtype != leaf.dtype:
            tt = tt.to(leaf.backend, leaf.dtype)
        if tt.shape != leaf.shape:
            raise ValueError(f"tangent shape {tt.shape} does not match primal shape {leaf.shape}")
        leaf.tangent = tt
        leaves.append(leaf)
    _state.forward_mode += 1
    try:
        with no_grad():
            out = f(*leaves)
    finally:
        _state.forward_mode -= 1
    tangent = out.tangent if out.tangent is not None else zeros_like(out)
    out.tangent = None
    return out, tangent


# --- gradient checking

class GradcheckError(AssertionError):
    """Autodiff and central differences disagree; the message is the report."""


@dataclass
class GradcheckResult:
    input_index: int
    analytic: float
    numeric: float

    @property
    def abs_error(self) -> float:
        return abs(self.analytic - self.numeric)

    def rel_error(self) -> float:
        return self.abs_error / max(abs(self.numeric), abs(self.analytic), 1e-300)


@dataclass
class GradcheckReport:
    ok: bool
    eps: float
    atol: float
    rtol: float
    results: list[GradcheckResult] = field(default_factory=list)

    @property
    def worst(self) -> GradcheckResult | None:
        if not self.results:
            return None
        return max(self.results, key=lambda r: r.abs_error - self.rtol * abs(r.numeric))

    def __str__(self) -> str:
        w = self.worst
        if w is None:
            return "gradcheck: no input requires grad"
        status = "passed" if self.ok else "FAILED"
        return (f"gradcheck {status} ({len(self.results)} directional checks, eps={self.eps:g}); worst: input "
                f"{w.input_index}: autodiff {w.analytic:.12g} vs central difference {w.numeric:.12g} "
                f"(abs err {w.abs_error:.3g}, rel err {w.rel_error():.3g}; atol={self.atol:g}, rtol={self.rtol:g})")


def gradcheck(f: Callable, inputs: Sequence, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-4,
              n_directions: int = 2, seed: int = 0, raise_exception: bool = True) -> GradcheckReport:
    """Compare autodiff with central differences in float64 along random directions.

    The output is contracted with a random cotangent r (so a wrong upstream gradient
    cannot hide behind ``sum()``), giving L(x) = <r, f(x)>. For each input i and each of
    ``n_directions`` random directions v (drawn, like r, from ``seed``): autodiff's <dL/dx_i, v>
    vs (L(x + eps v) - L(x - eps v)) / 2 eps, passing when |a - n| <= atol + rtol |n|.

    The inputs with ``requires_grad`` (all, if none has it) are checked, cast to float64 on their
    own backend. Returns a :class:`GradcheckReport` (``ok``, every comparison, ``worst``); a
    mismatch raises :class:`GradcheckError` unless ``raise_exception`` is False.
    """
    rng = np.random.default_rng(seed)
    base = [x if isinstance(x, Tensor) else tensor(x, dtype=float64) for x in inputs]
    check = [i for i, x in enumerate(base) if x.requires_grad] or list(range(len(base)))
    values = [x.numpy().astype(np.float64) for x in base]

    def make(vals, grad_on=()):
        return [Tensor(v, requires_grad=(i in grad_on), dtype="float64", backend=base[i].backend)
                if base[i].dtype.is_floating else base[i] for i, v in enumerate(vals)]

    leaves = make(values, set(check))
    out = f(*leaves)
    r = rng.standard_normal(out.shape)
    rt = Tensor(r, dtype="float64", backend=out.backend)
    loss = (out * rt).sum()
    if loss.requires_grad:
        loss.backward()

    def scalar(vals):
        with no_grad():
            y = f(*make(vals))
            return float(np.sum(y.numpy().astype(np.float64) * r))

    report = GradcheckReport(ok=True, eps=eps, atol=atol, rtol=rtol)
    for i in check:
        g = leaves[i].grad.numpy() if leaves[i].grad is not None else np.zeros_like(values[i])
        for _ in range(n_directions):
            v = rng.standard_normal(values[i].shape)
            plus, minus = list(values), list(values)
            plus[i], minus[i] = values[i] + eps * v, values[i] - eps * v
            numeric = (scalar(plus) - scalar(minus)) / (2 * eps)
            analytic = float(np.sum(g * v))
            res = GradcheckResult(i, analytic, numeric)
            report.results.append(res)
            if not (res.abs_error <= atol + rtol * abs(numeric)):
                report.ok = False
    if not report.ok and raise_exception:
        raise GradcheckError(str(report))
    return report
