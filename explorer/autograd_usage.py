"""Slides 27-28: reverse mode packaged as a function, and the notes' use of it.

The lecture shows HIPS autograd's ``make_vjp`` (trace the function, hand back a closure that runs
``backward_pass`` from the output) and ``grad`` (``make_vjp``, then the closure applied to a one), and the notes
use ``grad`` on a tanh network's log-posterior: log-probabilities by ``logsumexp``, an L2 prior on the weights,
``grad(objective)``. Here the same program runs on the engine: :data:`ENGINE_CODE` is the source of the functions
below (the page shows it as it runs), ``engine.vjp`` plays ``make_vjp`` and ``engine.grad`` plays ``grad``.
:func:`usage_check` runs it and checks every entry of the gradient against central differences in float64.
No Streamlit here.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

import engine
from explorer.explain.numbers import fixed, num, plain, sci

# Slide 28 (HIPS autograd's core), as the lecture shows it: make_vjp traces, grad applies the vjp to a one.
SLIDE_MAKE_VJP = (
    "def make_vjp(fun, x):\n"
    "    start_node = VJPNode.new_root()\n"
    "    end_value, end_node = trace(start_node, fun, x)\n"
    "    if end_node is None:\n"
    "        def vjp(g): return vspace(x).zeros()\n"
    "    else:\n"
    "        def vjp(g): return backward_pass(g, end_node)\n"
    "    return vjp, end_value\n"
    "\n"
    "def grad(fun, argnum=0):\n"
    "    def gradfun(*args, **kwargs):\n"
    "        unary_fun = lambda x: fun(*subval(args, argnum, x), **kwargs)\n"
    "        vjp, ans = make_vjp(unary_fun, args[argnum])\n"
    "        return vjp(vspace(ans).ones())\n"
    "    return gradfun"
)
SLIDE_SOURCE = "lecture 5, slides 27-28 (HIPS autograd)"

LAYER_SIZES = (4, 5, 3)     # inputs -> tanh hidden layer -> 3 classes
N_EXAMPLES = 12
L2_REG = 0.1
SEED = 0
H = 1e-6                    # central differences in float64 (the notes' best h for float64 is near 1e-6)


def neural_net_predict(params, inputs):
    """Log-probabilities of a tanh network: each layer inputs @ W + b, tanh between layers, logsumexp last."""
    for W, b in params:
        outputs = inputs @ W + b
        inputs = engine.tanh(outputs)
    return outputs - engine.logsumexp(outputs, dim=1, keepdim=True)


def l2_norm(params):
    """The squared L2 norm of every weight and bias."""
    total = 0.0
    for W, b in params:
        total = total + (W * W).sum() + (b * b).sum()
    return total


def log_posterior(params, inputs, targets, l2_reg):
    """The log-likelihood of the one-hot targets plus the L2 prior's log-density (up to a constant)."""
    log_prior = -l2_reg * l2_norm(params)
    log_lik = (neural_net_predict(params, inputs) * targets).sum()
    return log_prior + log_lik


def make_objective(inputs, targets, l2_reg=L2_REG):
    """objective(W1, b1, W2, b2, ...): the negative log-posterior, one tensor argument per weight and bias
    (engine.grad differentiates with respect to positional arguments)."""
    def objective(*flat):
        params = list(zip(flat[0::2], flat[1::2]))
        return -log_posterior(params, inputs, targets, l2_reg)
    return objective


ENGINE_CODE = "\n\n".join(inspect.getsource(f).rstrip() for f in
                          (neural_net_predict, l2_norm, log_posterior, make_objective)) + (
    "\n\n"
    "objective = make_objective(inputs, targets)\n"
    "objective_grad = engine.grad(objective, argnums=tuple(range(len(flat))))   # grad(objective)\n"
    "grads = objective_grad(*flat)\n"
    "value, vjp = engine.vjp(objective, *flat)                                  # make_vjp\n"
    "same = vjp(1.0)                                                             # vjp(vspace(ans).ones())")


def init_problem(seed: int = SEED):
    """The flat parameters [W1, b1, W2, b2] (NumPy, float64), the inputs and the one-hot targets."""
    rng = np.random.default_rng(seed)
    flat = []
    for m, n in zip(LAYER_SIZES[:-1], LAYER_SIZES[1:]):
        flat += [rng.normal(0.0, 0.5, (m, n)), rng.normal(0.0, 0.5, (n,))]
    inputs = rng.normal(0.0, 1.0, (N_EXAMPLES, LAYER_SIZES[0]))
    labels = rng.integers(0, LAYER_SIZES[-1], N_EXAMPLES)
    targets = np.eye(LAYER_SIZES[-1])[labels]
    return flat, inputs, targets


@dataclass(frozen=True)
class ParamRow:
    name: str
    shape: tuple[int, ...]
    grad_norm: float
    max_abs_error: float     # max over the entries of |engine.grad − central difference|
    max_rel_error: float     # the same, divided by max(1, |central difference|)


@dataclass(frozen=True)
class UsageCheck:
    objective: float
    rows: tuple[ParamRow, ...]
    vjp_equals_grad: bool     # engine.vjp's closure applied to 1.0 gives grad's tensors bit for bit
    n_entries: int
    h: float

    @property
    def max_abs_error(self) -> float:
        return max(r.max_abs_error for r in self.rows)

    @property
    def max_rel_error(self) -> float:
        return max(r.max_rel_error for r in self.rows)


def usage_check(seed: int = SEED, h: float = H) -> UsageCheck:
    """Run :data:`ENGINE_CODE` on the engine and check each gradient entry against a central difference."""
    flat_np, inputs_np, targets_np = init_problem(seed)
    inputs, targets = engine.tensor(inputs_np), engine.tensor(targets_np)
    flat = [engine.tensor(p) for p in flat_np]
    objective = make_objective(inputs, targets)
    objective_grad = engine.grad(objective, argnums=tuple(range(len(flat))))
    grads = objective_grad(*flat)
    value, vjp = engine.vjp(objective, *flat)
    same = vjp(1.0)
    vjp_equals_grad = all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(grads, same))

    def f(arrays) -> float:
        with engine.no_grad():
            return float(objective(*[engine.tensor(a) for a in arrays]).item())

    rows = []
    for k, (p, g) in enumerate(zip(flat_np, grads)):
        g = g.numpy()
        numeric = np.empty_like(p)
        for idx in np.ndindex(p.shape):
            plus = [q.copy() for q in flat_np]
            minus = [q.copy() for q in flat_np]
            plus[k][idx] += h
            minus[k][idx] -= h
            numeric[idx] = (f(plus) - f(minus)) / (2 * h)
        err = np.abs(g - numeric)
        name = f"{'W' if k % 2 == 0 else 'b'}{k // 2 + 1}"
        rows.append(ParamRow(name, p.shape, float(np.linalg.norm(g)), float(err.max()),
                             float((err / np.maximum(1.0, np.abs(numeric))).max())))
    return UsageCheck(float(value.item()), tuple(rows), vjp_equals_grad,
                      sum(int(np.prod(p.shape)) for p in flat_np), h)


def rows_table(check: UsageCheck) -> list[dict]:
    """The page's table: one row per weight and bias."""
    return [{"parameter": r.name, "shape": " × ".join(map(str, r.shape)), "‖∂objective/∂p‖": num(r.grad_norm, 6),
             "max |grad − central difference|": sci(r.max_abs_error)} for r in check.rows]


def summary(check: UsageCheck) -> str:
    """One sentence under the table, every number from ``check``."""
    return (f"objective = −log posterior = {fixed(check.objective, 6)}; `engine.grad` checked on all {check.n_entries} "
            f"entries against central differences (h = {plain(check.h)}, float64): largest difference "
            f"{sci(check.max_abs_error)} (relative {sci(check.max_rel_error)}). `engine.vjp`'s closure applied to 1.0 "
            f"gives {'the same tensors as `engine.grad`, bit for bit' if check.vjp_equals_grad else 'other tensors than `engine.grad`'}"
            ": grad is make_vjp applied to a one, as slide 28 writes it.")
