"""Gradient check (page 6): finite differences against autodiff, and the error versus h.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from engine import explain as ex
from engine.explain import ExpressionError, costs

from .kit.budget import check_program, finite_difference_checks
from .kit.formatting import check_difference, fmt_check, fmt_value
from .kit.labels import num
from .kit.presentation import Look
from .kit.programs import InputProblem, parse
from .kit.reference import ReferenceFailed, in_reference_process

SCHEME_LABELS = {"central": "central (f(x+h) − f(x−h)) / 2h", "forward": "forward (f(x+h) − f(x)) / h"}


@dataclass
class GradcheckModel:
    program: Any
    inputs: dict
    sweep: Any
    autodiff: dict
    table: list[dict]


def gradcheck_model(program_text: str, inputs_text: str, wrt: str, h: float, index: int = 0) -> GradcheckModel:
    """h sweep for element ``index`` of one input (float32 and float64, central and forward differences)
    and the per-input table at ``h``."""
    program, inputs = parse(program_text, inputs_text)
    if wrt not in program.input_names:
        wrt = program.input_names[0]
    index = min(max(int(index), 0), int(np.size(inputs[wrt])) - 1)
    try:
        # the sweep: 45 step sizes x 2 dtypes x 3 runs, the third derivative by nested grad (~15 runs),
        # then the table's central differences in two dtypes
        checks = finite_difference_checks({n: np.shape(v) for n, v in inputs.items()})
        check_program(program, inputs, 300 + 4 * checks,
                      what=f"the gradient check (an h sweep of about 290 runs and {checks} central differences "
                           "in two dtypes)")
        trace = ex.record_execution(program, inputs)
        sweep = costs.h_sweep(program, inputs, wrt, index=index)
        fd64 = costs.central_differences(program, inputs, h=h, dtype="float64")
        fd32 = costs.central_differences(program, inputs, h=h, dtype="float32")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    table = []
    for name in program.input_names:
        auto = trace.grads.get(name)
        d64, d32 = check_difference(auto, fd64.get(name)), check_difference(auto, fd32.get(name))
        table.append({"input": name, "value": fmt_value(inputs[name]), "autodiff": fmt_value(auto, 10),
                      f"central diff. float64 (h={h:g})": fmt_check(fd64.get(name), 10),
                      "|diff| float64": "" if d64 is None else f"{d64:.2e}",
                      f"central diff. float32 (h={h:g})": fmt_check(fd32.get(name), 10),
                      "|diff| float32": "" if d32 is None else f"{d32:.2e}"})
    return GradcheckModel(program, inputs, sweep, trace.grads, table)


def sweep_series(sweep, dtype: str | None = None) -> tuple[dict, list]:
    """h-sweep rows as plot series ``label -> (hs, errors)`` and star markers at each best h.

    Labels are ``dtype`` for the central scheme and ``"dtype forward"`` for forward differences;
    ``dtype`` limits both to one dtype. A best-h star sits on the error model's curve (the best h is
    the model's minimiser, usually between two swept h).
    """
    series: dict[str, tuple[list, list]] = {}
    for row in sweep.rows:
        if dtype is not None and row.dtype != dtype:
            continue
        label = str(row.dtype) if row.scheme == "central" else f"{row.dtype} {row.scheme}"
        xs, ys = series.setdefault(label, ([], []))
        xs.append(float(row.h))
        ys.append(max(float(row.abs_error), 1e-300))  # log axis: an exact hit is drawn at the floor
    markers = []
    for dt, h in sweep.best_h.items():
        if dtype is not None and dt != dtype:
            continue
        m = sweep.model("central", dt)
        if m is not None and m.best_h is not None:
            y = m.error(h)
        else:  # no truncation term: the best h is the sweep's lowest point
            xs, ys = series[str(dt)]
            y = ys[xs.index(float(h))] if float(h) in xs else min(ys)
        markers.append((f"best h ({dt})", float(h), y, f"best h = {float(h):.1e}"))
    return series, markers


def best_h_text(sweep, dtype: str) -> str:
    """One sentence: the best h of ``dtype``, how it was found, and where the sweep's lowest point fell."""
    m = sweep.model("central", dtype)
    best, lowest = sweep.best_h.get(dtype), sweep.lowest_h.get(dtype)
    if best is None:
        return ""
    if m is None or m.best_h is None:
        return (f"**{dtype}**: best h = {best:.1e}, the lowest point of the sweep (f''' = 0 here, so central "
                "differences have no truncation error: only rounding is left).")
    f, _, _, d3 = sweep.derivatives
    text = (f"**{dtype}**: best h = (3ε|f| / |f'''|)^(1/3) = **{best:.1e}**, with ε = {num(m.eps, 2)}, "
            f"|f| = {num(abs(f))}, f''' = {num(d3)} (the engine's third derivative, nested grad).")
    if lowest is not None and not (best / 3 <= lowest <= best * 3):
        text += (f" The sweep's lowest point, h = {lowest:.1e}, is a lucky cancellation of rounding errors, "
                 "not a better step.")
    return text


_COLOURS = {"central": "#2563eb", "forward": "#ea580c"}


def sweep_figure(sweep, dtype: str, look: Look, title: str | None = None) -> go.Figure:
    """Log-log error vs h for one dtype: central and forward differences over the error model's terms
    (truncation h² |f'''|/6 and h |f''|/2, rounding ε|f|/h, drawn as wide pale bands underneath), and
    the best h as a star (its value in the legend).
    """
    fig = go.Figure()
    data = []
    for scheme in ("central", "forward"):
        hs, errs = sweep.series(scheme, dtype)
        if hs:
            data.append((scheme, hs, [max(float(e), 1e-300) for e in errs]))
    ys_all = [e for _, _, errs in data for e in errs if e > 1e-300]
    if not ys_all:
        return fig
    lo, hi = min(ys_all) / 3, max(ys_all) * 3
    hs_all = sorted({h for _, hs, _ in data for h in hs})

    def guide(fn, name, colour):
        pts = [(h, fn(h)) for h in hs_all]
        pts = [(h, y) for h, y in pts if lo <= y <= hi and math.isfinite(y)]
        if len(pts) >= 2:  # under the data: a pale band the measured error runs along
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=name,
                                     line=dict(width=look.edge_width * 5, color=colour), opacity=0.3,
                                     hoverinfo="name"))

    for scheme, term in (("central", "h²|f'''|/6"), ("forward", "h|f''|/2")):
        m = sweep.model(scheme, dtype)
        if m is not None and m.truncation_coefficient > 0:
            guide(m.truncation, f"model: truncation {term}", _COLOURS[scheme])
    m = sweep.model("central", dtype)
    if m is not None:
        guide(m.rounding, "model: rounding ε|f|/h", "#6b7280")
    for scheme, hs, errs in data:
        fig.add_trace(go.Scatter(x=hs, y=errs, mode="lines+markers", name=SCHEME_LABELS[scheme],
                                 line=dict(width=look.edge_width + 1, color=_COLOURS[scheme]),
                                 marker=dict(size=max(5, look.node_size // 5))))
    _, markers = sweep_series(sweep, dtype)
    for name, x, y, _text in markers:
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"{name} = {x:.1e}",
                                 marker=dict(symbol="star", size=look.node_size * 0.8, color="#16a34a",
                                             line=dict(width=1, color="#14532d"))))
    fig.update_layout(title=title or f"|finite difference − autodiff|, {dtype}", xaxis_title="h (log scale)",
                      yaxis_title="absolute error (log scale)", font=dict(size=look.figure_font),
                      height=int(look.figure_height * 0.9), legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=10, r=10, t=60, b=10))
    # decades only: Plotly's 2 / 5 minor labels on a log axis crowd a projector
    fig.update_xaxes(type="log", exponentformat="power", dtick=2 if len(hs_all) > 1 else None, automargin=True)
    fig.update_yaxes(type="log", exponentformat="power", range=[math.log10(lo), math.log10(hi)], dtick=2,
                     automargin=True)
    return fig


# --- the notes' numeric checks, computed now ---------------------------------------------------------------

@dataclass
class NotesCheck:
    """One of the notes' checks: what is compared, the notes' figure, and the engine's, measured now."""

    check: str
    compared: str
    notes: str
    engine: float | None         # max |difference|; None when skipped
    skipped: str = ""            # why, when skipped (PyTorch not installed)

    def row(self) -> dict:
        return {"check": self.check, "what is compared": self.compared, "the notes": self.notes,
                "this engine, now": self.skipped if self.engine is None else f"{self.engine:.1e}"}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


NO_TORCH = "skipped: PyTorch is not installed"


def ops_against_pytorch(seed: int = 0) -> float | None:
    """max |engine − PyTorch| over a set of ops' outputs and their gradients (float64, same inputs)."""
    import engine
    from engine import functional as F
    torch = _torch()
    if torch is None:
        return None
    rng = np.random.default_rng(seed)
    a, b, m = rng.standard_normal((4, 5)), rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    r = rng.standard_normal((4, 5))
    cases = [  # (ours, PyTorch's), both of (x, y)
        (lambda x, y: x.exp(), lambda x, y: torch.exp(x)),
        (lambda x, y: (x * x + 1.0).log(), lambda x, y: torch.log(x * x + 1.0)),
        (lambda x, y: x.sigmoid(), lambda x, y: torch.sigmoid(x)), (lambda x, y: x.tanh(), lambda x, y: torch.tanh(x)),
        (lambda x, y: x * y, lambda x, y: x * y), (lambda x, y: x / (y * y + 1.0), lambda x, y: x / (y * y + 1.0)),
        (lambda x, y: F.softmax(x, -1), lambda x, y: torch.softmax(x, -1)),
        (lambda x, y: F.log_softmax(x, -1), lambda x, y: torch.log_softmax(x, -1)),
        (lambda x, y: x.relu(), lambda x, y: torch.relu(x)),
    ]
    worst = 0.0
    for ours, theirs in cases:
        x, y = engine.tensor(a, requires_grad=True), engine.tensor(b, requires_grad=True)
        tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out = ours(x, y)
        tout = theirs(tx, ty)
        (out * engine.tensor(r)).sum().backward()
        (tout * torch.tensor(r)).sum().backward()
        worst = max(worst, float(np.max(np.abs(out.numpy() - tout.detach().numpy()))),
                    float(np.max(np.abs(x.grad.numpy() - tx.grad.numpy()))))
        if y.grad is not None and ty.grad is not None:
            worst = max(worst, float(np.max(np.abs(y.grad.numpy() - ty.grad.numpy()))))
    x, W = engine.tensor(a, requires_grad=True), engine.tensor(m, requires_grad=True)
    tx, tW = torch.tensor(a, requires_grad=True), torch.tensor(m, requires_grad=True)
    (x @ W).sum().backward()
    (tx @ tW).sum().backward()
    return max(worst, float(np.max(np.abs(W.grad.numpy() - tW.grad.numpy()))))


def _mlp_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((8, 5)), (rng.random(8) < 0.5).astype(float), rng.standard_normal((5, 4)) * 0.5,
            rng.standard_normal(4) * 0.1, rng.standard_normal((4, 1)) * 0.5, rng.standard_normal(1) * 0.1)


def _engine_mlp_grads(seed: int = 0) -> list[np.ndarray]:
    import engine
    from engine import functional as F
    X, y, W1, b1, W2, b2 = _mlp_data(seed)
    ps = [engine.tensor(p, requires_grad=True) for p in (W1, b1, W2, b2)]
    h = (engine.tensor(X) @ ps[0] + ps[1]).relu()
    p = engine.sigmoid(h @ ps[2] + ps[3]).reshape(8)
    F.binary_cross_entropy(p, engine.tensor(y)).backward()
    return [t.grad.numpy() for t in ps]


def mlp_against_pytorch(seed: int = 0) -> float | None:
    """max |engine − PyTorch| over the gradients of a two-layer MLP's BCE loss."""
    torch = _torch()
    if torch is None:
        return None
    X, y, W1, b1, W2, b2 = _mlp_data(seed)
    ps = [torch.tensor(p, requires_grad=True) for p in (W1, b1, W2, b2)]
    h = torch.relu(torch.tensor(X) @ ps[0] + ps[1])
    p = torch.sigmoid(h @ ps[2] + ps[3]).reshape(8)
    torch.nn.functional.binary_cross_entropy(p, torch.tensor(y)).backward()
    return max(float(np.max(np.abs(a - t.grad.numpy()))) for a, t in zip(_engine_mlp_grads(seed), ps))


def hand_written_backward(seed: int = 0) -> float:
    """max |autodiff − the backward pass written by hand in NumPy| for the same MLP (chain rule by hand:
    BCE through the sigmoid gives p − y, then each layer's VJPs)."""
    X, y, W1, b1, W2, b2 = _mlp_data(seed)
    z1 = X @ W1 + b1
    h = np.maximum(z1, 0.0)
    p = 1.0 / (1.0 + np.exp(-(h @ W2 + b2)))
    g2 = (p[:, 0] - y)[:, None] / len(y)          # d mean BCE / d logit
    gW2, gb2 = h.T @ g2, g2.sum(axis=0)
    g1 = (g2 @ W2.T) * (z1 > 0)
    gW1, gb1 = X.T @ g1, g1.sum(axis=0)
    return max(float(np.max(np.abs(a - b))) for a, b in zip(_engine_mlp_grads(seed), (gW1, gb1, gW2, gb2)))


def hw2_hand_written_backward(seed: int = 0, batch: int = 10, tokens: int = 20, hidden: int = 32) -> float:
    """max |autodiff − hand-written NumPy backward| for HW2's network in float64: the padding-excluded mean of
    50-d word vectors → Linear(50, hidden) → ReLU → Linear(hidden, 1) → sigmoid → BCE (no dropout)."""
    import engine
    from engine import functional as F
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, tokens + 1, batch)
    mask = (np.arange(tokens)[None, :] < lengths[:, None]).astype(float)
    X = rng.standard_normal((batch, tokens, 50)) * mask[:, :, None]
    y = (rng.random(batch) < 0.5).astype(float)
    W1, b1 = rng.standard_normal((50, hidden)) / np.sqrt(50), rng.standard_normal(hidden) * 0.1
    W2, b2 = rng.standard_normal((hidden, 1)) / np.sqrt(hidden), rng.standard_normal(1) * 0.1
    ps = [engine.tensor(p, requires_grad=True) for p in (W1, b1, W2, b2)]
    m = engine.tensor(mask)
    pooled = (engine.tensor(X) * m.unsqueeze(-1)).sum(dim=1) / m.sum(dim=1, keepdim=True)
    h = (pooled @ ps[0] + ps[1]).relu()
    F.binary_cross_entropy(engine.sigmoid(h @ ps[2] + ps[3]).reshape(batch), engine.tensor(y)).backward()
    # by hand
    pooled_np = (X * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    z1 = pooled_np @ W1 + b1
    hn = np.maximum(z1, 0.0)
    p = 1.0 / (1.0 + np.exp(-(hn @ W2 + b2)))
    g2 = (p[:, 0] - y)[:, None] / batch
    g1 = (g2 @ W2.T) * (z1 > 0)
    hand = (pooled_np.T @ g1, g1.sum(axis=0), hn.T @ g2, g2.sum(axis=0))
    return max(float(np.max(np.abs(t.grad.numpy() - h_))) for t, h_ in zip(ps, hand))


def explicit_jacobian_checks(seed: int = 0) -> tuple[float, float]:
    """(y = Wx, elementwise sigmoid): max |VJP − Jᵀȳ| with J built explicitly, one forward-mode column per
    input (``engine.jvp`` with eⱼ): the m × n matrix Jᵢⱼ = ∂yᵢ/∂xⱼ."""
    import engine
    rng = np.random.default_rng(seed)
    W, x, ybar = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    s_in, sbar = rng.standard_normal(5), rng.standard_normal(5)
    out = []
    for f, at, cot in ((lambda v: engine.tensor(W) @ v, x, ybar), (engine.sigmoid, s_in, sbar)):
        n = at.size
        columns = [engine.jvp(f, [engine.tensor(at)], [engine.tensor(np.eye(n)[j])])[1].numpy() for j in range(n)]
        J = np.stack(columns, axis=1)                       # m × n
        _, vjp_fn = engine.vjp(f, engine.tensor(at))
        (xbar,) = vjp_fn(engine.tensor(cot))
        out.append(float(np.max(np.abs(xbar.numpy() - J.T @ cot))))
    return out[0], out[1]


def symbolic_against_tape(seed: int = 0) -> float:
    """max |static gradients() − eager backward()| on the same logistic regression (the notes: 1.1e-16)."""
    from engine import static as tf
    from engine import functional as F
    import engine
    rng = np.random.default_rng(seed)
    X, y, w0 = rng.standard_normal((6, 3)), (rng.random((6, 1)) < 0.5).astype(float), rng.standard_normal((3, 1))
    g = tf.Graph(name="check")
    with g.as_default():
        x, t = tf.placeholder((6, 3), name="x"), tf.placeholder((6, 1), name="y")
        w = tf.Variable(w0, name="w")
        loss = F.binary_cross_entropy(tf.sigmoid(x @ w), t)
        (gw,) = tf.gradients(loss, [w])
    static = tf.Session(g).run(gw, {x: X, t: y})
    we = engine.tensor(w0, requires_grad=True)
    F.binary_cross_entropy(engine.sigmoid(engine.tensor(X) @ we), engine.tensor(y)).backward()
    return float(np.max(np.abs(np.asarray(static) - we.grad.numpy())))


def random_graph_check(n_graphs: int = 50, n_ops: int = 8, h: float = 1e-6) -> tuple[float, float]:
    """(mean nodes per graph, max |autodiff − central difference|) over ``n_graphs`` random scalar graphs
    (``engine.explain.harness.random_dag_program``, seeds 0…n−1; 8 ops make 22.9 nodes on average, the size
    of the notes' graphs)."""
    from engine.explain import harness
    nodes, worst = [], 0.0
    for seed in range(n_graphs):
        text, inputs = harness.random_dag_program(n_ops, seed)
        tr = ex.record_execution(text, inputs)
        nodes.append(len(tr.graph.nodes))
        fd = costs.central_differences(text, inputs, h=h)
        for name, g in tr.grads.items():
            worst = max(worst, abs(float(g) - float(fd[name])))
    return float(np.mean(nodes)), worst


def notes_checks() -> list[NotesCheck]:
    """The lecture notes' numeric checks, each computed on the engine now (PyTorch ones only when installed)."""
    # computed in a child process: importing PyTorch would cost this server 165 MB for good
    skipped = NO_TORCH
    try:
        ops_t = in_reference_process("explorer.gradient_check:ops_against_pytorch")
        mlp_t = in_reference_process("explorer.gradient_check:mlp_against_pytorch")
    except ReferenceFailed as e:
        ops_t = mlp_t = None
        skipped = f"skipped: {e}"
    wx, sig = explicit_jacobian_checks()
    mean_nodes, fd = random_graph_check()
    return [
        NotesCheck("ops against PyTorch", "9 elementwise / softmax ops and a matmul: outputs and gradients, float64",
                   "8.9e-16", ops_t, "" if ops_t is not None else skipped),
        NotesCheck("a network's gradients against PyTorch", "two-layer ReLU MLP, sigmoid, BCE: every parameter's "
                   "gradient", "3.5e-17", mlp_t, "" if mlp_t is not None else skipped),
        NotesCheck("symbolic against tape", "static graph's gradients() against eager backward(), logistic "
                   "regression", "1.1e-16", symbolic_against_tape()),
        NotesCheck("VJP against the explicit Jacobian: y = Wx", "x̄ = VJP(ȳ) against Jᵀȳ, J built column by column "
                   "with forward mode", "0", wx),
        NotesCheck("VJP against the explicit Jacobian: sigmoid", "s̄ ⊙ σ(1 − σ) against Jᵀs̄, J (diagonal) built by forward mode",
                   "2.8e-17", sig),
        NotesCheck("autodiff against a hand-written backward", "the same MLP's gradients, chain rule written by hand "
                   "in NumPy", "2.1e-17", hand_written_backward()),
        NotesCheck("… on HW2's network", "padding-excluded mean of 50-d vectors, Linear(50, 32), ReLU, Linear(32, 1), "
                   "sigmoid, BCE (batch 10, float64): every parameter's gradient against NumPy by hand", "9.0e-15",
                   hw2_hand_written_backward()),
        NotesCheck("random graphs against finite differences", f"50 random graphs ({mean_nodes:.1f} nodes on "
                   "average; the notes' 22.8), central differences at h = 1e-6", "3.7e-10", fd),
    ]
