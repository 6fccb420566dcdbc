"""Cross-entropy on logits (page 1): the lecture's opening example, computed by the engine (no Streamlit here).

Slide 7 opens with ``loss = CrossEntropyLoss()(logits, labels); loss.backward()`` and asks two questions:
how is backward implemented, and in what order? This module builds that loss from the engine's own ops
(``log_softmax`` = z − logsumexp(z), then the negative log-likelihood of the label), checks its gradient
(softmax − one-hot, over the batch) against the formula and against PyTorch when it is installed, shows why
the loss takes logits (the naive softmax-then-log overflows where log_softmax does not), and gives the
program that the Expression explorer steps through like any other graph.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import engine
from engine import functional as F

from .exercises import page_link
from .kit import presets
from explorer.explain.numbers import nested, num, plain
from .kit.reference import ReferenceFailed, in_reference_process

# one example, three classes: logits z (a model's output), the label is class 1 (one-hot y);
# the Expression explorer offers the same text as a preset
_PRESET = next(p for p in presets.PRESETS if p.label.startswith("Cross-entropy on logits"))
STEP_PROGRAM, STEP_INPUTS = _PRESET.program, _PRESET.inputs

SLIDE_CODE = ("logits = model(x)         # (batch, classes)\n"
              "loss = CrossEntropyLoss()(logits, labels)\n"
              "loss.backward()            # how? in what order?")
ENGINE_CODE = ("logits = x @ W + b         # W, b require grad\n"
               "loss = engine.cross_entropy(logits, labels)\n"
               "loss.backward()")
ENGINE_FORMULA = ("`engine.cross_entropy` is the mean over the batch of −log_softmax(logits)[i, labels[i]] (the "
                  "label's negative log-likelihood), with log_softmax(z) = z − logsumexp(z): engine ops, no rule of "
                  "its own.")

# (question, answer in one sentence, [(page link, label)])
QUESTIONS = [
    ("How is backward implemented?",
     "Each op has a vector–Jacobian product (VJP) rule; backward seeds the loss's adjoint with 1 and sends each "
     "node's adjoint through its op's VJP to its inputs, summing at a fan-out.",
     [(page_link("Expression_explorer", {"expr": STEP_PROGRAM, "at": STEP_INPUTS}),
       "Expression explorer: this loss's graph, step by step, with the engine's code"),
      ("Network_explorer", "Network explorer: each layer's VJP as matrices")]),
    ("In what order?",
     "In reverse topological order: a node sends its adjoint on only when every node that uses it has sent "
     "its contribution; any other order loses or double-counts contributions.",
     [("Topological_sort", "Topological sort: the order, built step by step"),
      ("Backprop_orders", "Backprop orders: correct and broken orders side by side")]),
]


@dataclass
class BatchExample:
    """A batch of logits from a linear layer, its cross-entropy and its gradient, all from the engine."""

    x: np.ndarray
    labels: np.ndarray
    logits: np.ndarray
    probs: np.ndarray
    loss: float
    grad_logits: np.ndarray        # d loss / d logits by the engine's backward
    formula_difference: float      # max |engine − (softmax − onehot)/B|
    torch_loss_difference: float | None     # None: PyTorch not installed
    torch_grad_difference: float | None
    grad_W: np.ndarray


def batch_example(seed: int = 0, batch: int = 4, features: int = 3, classes: int = 4) -> BatchExample:
    """``cross_entropy(x @ W + b, labels)`` on a small batch, backward through the engine, checked."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal((batch, features)), 2)
    labels = rng.integers(0, classes, batch)
    W0, b0 = np.round(rng.standard_normal((features, classes)), 2), np.round(rng.standard_normal(classes) * 0.1, 2)
    W, b = engine.tensor(W0, requires_grad=True), engine.tensor(b0, requires_grad=True)
    logits = engine.tensor(x) @ W + b
    z = engine.tensor(logits.numpy(), requires_grad=True)   # a leaf copy, to read d loss / d logits
    loss = F.cross_entropy(z, labels)
    loss.backward()
    F.cross_entropy(engine.tensor(x) @ W + b, labels).backward()
    zv = z.numpy()
    p = np.exp(zv - zv.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    onehot = np.eye(classes)[labels]
    formula = (p - onehot) / batch
    tl = tg = None
    # PyTorch's loss and gradient, computed in a child process (importing PyTorch would cost this server
    # 165 MB for good); None without PyTorch
    try:
        ref = in_reference_process("explorer.cross_entropy:torch_cross_entropy", zv.tolist(), labels.tolist())
    except ReferenceFailed:
        ref = None
    if ref is not None:
        tl = abs(float(ref[0]) - loss.item())
        tg = float(np.max(np.abs(np.asarray(ref[1]) - z.grad.numpy())))
    return BatchExample(x, labels, zv, p, loss.item(), z.grad.numpy(),
                        float(np.max(np.abs(z.grad.numpy() - formula))), tl, tg, W.grad.numpy())


TABLE_DECIMALS = 4


def batch_tables(b: BatchExample):
    """The batch's two tables as pandas Stylers with every number to ``TABLE_DECIMALS`` places: the labels,
    logits z and p = softmax(z) per example, and the engine's ∂loss/∂z. (Rounded floats showed as -0.296
    beside -0.2960 and 0.05 beside 0.0316: the browser's table drops trailing zeros.)"""
    import pandas as pd
    classes = b.logits.shape[1]
    inputs = pd.DataFrame({"label": np.asarray(b.labels).astype(int)})
    for k in range(classes):
        inputs[f"z{k}"] = np.asarray(b.logits, dtype=float)[:, k]
    for k in range(classes):
        inputs[f"p{k}"] = np.asarray(b.probs, dtype=float)[:, k]
    grads = pd.DataFrame(np.asarray(b.grad_logits, dtype=float), columns=[f"∂loss/∂z{k}" for k in range(classes)])
    fmt = f"{{:.{TABLE_DECIMALS}f}}"
    return (inputs.style.format(fmt, subset=[c for c in inputs.columns if c != "label"]), grads.style.format(fmt))


def torch_cross_entropy(logits: list, labels: list) -> list:
    """PyTorch's ``cross_entropy(logits, labels)`` and its gradient with respect to the logits (float64), as
    lists; run by :func:`explorer.kit.reference.in_reference_process` in a child process."""
    import torch
    tz = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tz, torch.tensor(labels))
    tloss.backward()
    return [float(tloss.item()), tz.grad.numpy().tolist()]


def naive_log_softmax(z: engine.Tensor) -> engine.Tensor:
    """log(exp(z) / sum(exp(z))): softmax first, then log, as written on paper (overflows for large logits)."""
    e = z.exp()
    return (e / e.sum(dim=-1, keepdim=True)).log()


SCALES = (1.0, 10.0, 50.0, 100.0, 1000.0)
BASE_LOGITS = (2.0, 1.0, -1.0)


def stability_rows(scales=SCALES, label: int = 2, dtype: str = "float64") -> list[dict]:
    """The loss −log p(label) and its gradient for logits ``s · (2, 1, −1)``, naive (softmax then log) against
    the engine's log_softmax (z − logsumexp(z), which subtracts max z before exp), in ``dtype``."""
    rows = []
    limit = float(np.log(np.finfo(dtype).max))   # exp overflows above this: 709.8 (float64), 88.7 (float32)
    for s in scales:
        out = {}
        for name, fn in (("naive", naive_log_softmax), ("stable", F.log_softmax)):
            z = engine.tensor(np.array(BASE_LOGITS, dtype=dtype) * s, requires_grad=True)
            with np.errstate(all="ignore"):
                loss = -fn(z)[label]
                loss.backward()
            out[name] = (loss.item(), z.grad.numpy())
        rows.append({"logits": "(" + ", ".join(plain(v * s) for v in BASE_LOGITS) + ")",
                     "exp(max z)": num(np.exp(np.float64(max(BASE_LOGITS) * s)))
                     if max(BASE_LOGITS) * s < limit else f"inf (overflow in {dtype})",
                     "naive: −log(softmax(z)[2])": num(out["naive"][0]),
                     "naive: ∂loss/∂z": nested(out["naive"][1]),
                     "log_softmax: −log_softmax(z)[2]": num(out["stable"][0]),
                     "log_softmax: ∂loss/∂z": nested(out["stable"][1])})
    return rows


def step_program_checks() -> dict[str, float]:
    """The Expression explorer's program (written out with max, exp, sum and log) against
    ``engine.cross_entropy`` on the same logits: same loss, same gradient z̄ = softmax(z) − y."""
    from explorer import explain as ex
    from .kit.programs import parse
    program, inputs = parse(STEP_PROGRAM, STEP_INPUTS)
    z = engine.tensor(np.asarray(inputs["z"], dtype=float).reshape(1, -1), requires_grad=True)
    y = np.asarray(inputs["y"], dtype=float)
    loss = F.cross_entropy(z, [int(np.argmax(y))])
    loss.backward()
    run = ex.record_execution(program, inputs)
    return {"loss (program)": float(run.graph.nodes[run.order[0]].value), "loss (engine.cross_entropy)": loss.item(),
            "max |Δz̄|": float(np.max(np.abs(np.asarray(run.grads["z"]) - z.grad.numpy()[0]))),
            "z̄": [float(v) for v in run.grads["z"]]}
