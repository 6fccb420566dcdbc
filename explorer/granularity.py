"""Granularity: one fused sigmoid against its decomposition into primitive ops, measured on the engine.

The notes ask how large a framework's operations should be. ``engine.sigmoid`` is one op whose backward
rule reads its own output (x̄ = ȳ ⊙ y(1 − y)); ``1 / (1 + exp(−x))`` written with the primitives is four ops
(neg, exp, add, reciprocal), each recorded, each keeping what its own VJP reads, each a kernel call forward and
more backward. :func:`compare` runs both on the same input and measures the three things the notes name:
the intermediates kept for backward, the kernel calls, and numerical stability (at x = −800 the decomposed
backward multiplies 0 by ∞). No Streamlit here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

import engine
from engine.tensor import kept_bytes, kept_for_backward, recording
from explorer.explain.numbers import count, fixed, megabytes, plain, sci

N = 200_000          # elements of x (float64): 1.6 MB
REPEATS = 9          # the fastest run is reported (the least disturbed by other work on a busy server)
FAR_LEFT = -800.0    # exp(800) overflows float64: the decomposition's backward gives nan here


def fused(x):
    return engine.sigmoid(x)


def decomposed(x):
    return 1.0 / (1.0 + engine.exp(-x))


FORMS = (("fused: engine.sigmoid(x)", fused), ("decomposed: 1 / (1 + exp(−x))", decomposed))


@dataclass(frozen=True)
class FormRow:
    form: str
    forward_ops: int          # ops recorded by the forward pass (= forward kernel calls)
    backward_ops: int         # engine ops the backward pass runs (its VJP rules, recorded with a trace hook)
    kept_tensors: int         # tensors the graph keeps for backward (besides x)
    kept_bytes: int
    ms: float                 # forward + backward, fastest of REPEATS, no hooks
    value_at_far_left: float
    grad_at_far_left: float


@dataclass(frozen=True)
class Granularity:
    n: int
    rows: tuple[FormRow, ...]
    max_value_difference: float   # |fused − decomposed| over the random x
    max_grad_difference: float

    @property
    def speedup(self) -> float:
        return self.rows[1].ms / self.rows[0].ms


def _run(fn, x_np):
    x = engine.tensor(x_np, requires_grad=True)
    y = fn(x)
    y.backward(engine.tensor(np.ones_like(x_np)))     # ȳ = 1 everywhere: x̄ is σ'(x)
    return y.numpy(), x.grad.numpy()


def _measure(form: str, fn, x_np: np.ndarray, repeats: int) -> FormRow:
    x = engine.tensor(x_np, requires_grad=True)
    with recording() as forward_ops:
        y = fn(x)
    forward = forward_ops.names
    kept = [t for t in kept_for_backward(y) if t is not x]
    nbytes = kept_bytes(y, exclude=[x])
    with recording() as backward_ops:
        y.backward(engine.tensor(np.ones_like(x_np)))
    backward = backward_ops.names
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _run(fn, x_np)
        times.append(time.perf_counter() - t0)
    with np.errstate(all="ignore"):
        v, g = _run(fn, np.array([FAR_LEFT]))
    return FormRow(form, len(forward), len(backward), len(kept), nbytes, 1e3 * min(times),
                   float(v[0]), float(g[0]))


def compare(n: int = N, repeats: int = REPEATS, seed: int = 0) -> Granularity:
    """Both forms on the same x (normal, σ = 3), float64 on the NumPy backend."""
    x_np = np.random.default_rng(seed).normal(0.0, 3.0, n)
    rows = tuple(_measure(form, fn, x_np, repeats) for form, fn in FORMS)
    (v1, g1), (v2, g2) = (_run(fn, x_np) for _, fn in FORMS)
    return Granularity(n, rows, float(np.abs(v1 - v2).max()), float(np.abs(g1 - g2).max()))


def fixed_granularity() -> Granularity:
    """The page's fixed figure (computed once per server process, in the background)."""
    return compare()


def rows(g: Granularity) -> list[dict]:
    return [{"form": r.form, "ops recorded (forward kernels)": r.forward_ops,
             "ops run backward": r.backward_ops,
             "kept for backward": f"{r.kept_tensors} tensor{'s' if r.kept_tensors != 1 else ''}, {megabytes(r.kept_bytes)} MB",
             "forward + backward (ms)": fixed(r.ms),
             f"σ({plain(FAR_LEFT)}) and its gradient": f"{plain(r.value_at_far_left)}, {plain(r.grad_at_far_left)}"}
            for r in g.rows]


def summary(g: Granularity) -> str:
    f, d = g.rows
    return (f"On {count(g.n)} float64 values: the fused op records {f.forward_ops} node against {d.forward_ops}, keeps "
            f"{megabytes(f.kept_bytes)} MB for backward against {megabytes(d.kept_bytes)} MB, runs "
            f"{f.forward_ops + f.backward_ops} kernel calls against {d.forward_ops + d.backward_ops}, and is "
            f"{fixed(g.speedup)}× as fast (fastest of {REPEATS} runs each, on this server). Both agree to "
            f"{sci(g.max_value_difference)} in value and {sci(g.max_grad_difference)} in gradient — except far left: at "
            f"x = {plain(FAR_LEFT)} the decomposition's backward computes (−1/u²)·(−exp(800)) with u = ∞, 0·∞ = "
            f"{plain(d.grad_at_far_left)}, where the fused rule's y(1 − y) gives {plain(f.grad_at_far_left)}.")
