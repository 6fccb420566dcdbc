"""Gradient check (page 6): finite differences against autodiff, and the error versus h.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer import explain as ex
from explorer.explain import ExpressionError, costs

from .kit.budget import check_program, finite_difference_checks
from .kit.formatting import check_difference, fmt_check, fmt_value
from .kit.labels import num
from .kit.notes import NOTES
from .kit.presentation import MIN_PRESENT_PX, Look
from .kit.programs import InputProblem, parse
from .kit.reference import ReferenceFailed, in_reference_process
from explorer.explain.numbers import fixed, plain, sci

SCHEME_LABELS = {"central": "central (f(x+h) − f(x−h)) / 2h", "forward": "forward (f(x+h) − f(x)) / h"}


@dataclass
class GradcheckModel:
    program: Any
    inputs: dict
    sweep: Any
    autodiff: dict              # input name -> its gradient (an array of the input's shape)
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
        auto = trace.grad_arrays.get(name)   # whole: the plain values stop at 64 elements
        d64, d32 = check_difference(auto, fd64.get(name)), check_difference(auto, fd32.get(name))
        table.append({"input": name, "value": fmt_value(inputs[name]), "autodiff": fmt_value(auto, 10),
                      f"central diff. float64 (h={plain(h)})": fmt_check(fd64.get(name), 10),
                      "|diff| float64": "" if d64 is None else sci(d64, 3),
                      f"central diff. float32 (h={plain(h)})": fmt_check(fd32.get(name), 10),
                      "|diff| float32": "" if d32 is None else sci(d32, 3)})
    return GradcheckModel(program, inputs, sweep, trace.grad_arrays, table)


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
        markers.append((f"best h ({dt})", float(h), y, f"best h = {sci(float(h))}"))
    return series, markers


def best_h_text(sweep, dtype: str) -> str:
    """One sentence: the best h of ``dtype``, how it was found, and where the sweep's lowest point fell."""
    m = sweep.model("central", dtype)
    best, lowest = sweep.best_h.get(dtype), sweep.lowest_h.get(dtype)
    if best is None:
        return ""
    if m is None or m.best_h is None:   # the error model has no minimum: say which of its two terms vanished
        if m is not None and m.rounding_coefficient == 0:
            why = ("f = 0 here, so the model's rounding term ε|f|/h vanishes: nothing in it stops h from "
                   "shrinking, and the lowest point is where the sweep's own rounding noise is smallest")
        else:
            why = "f''' = 0 here, so central differences have no truncation error: only rounding is left"
        return f"**{dtype}**: best h = {sci(best)}, the lowest point of the sweep ({why})."
    f, _, _, d3 = sweep.derivatives
    text = (f"**{dtype}**: best h = (3ε|f| / |f'''|)^(1/3) = **{sci(best)}**, with ε = {num(m.eps, 2)}, "
            f"|f| = {num(abs(f))}, f''' = {num(d3)} (the engine's third derivative, nested grad).")
    if lowest is not None and not (best / 3 <= lowest <= best * 3):
        text += (f" The sweep's lowest point, h = {sci(lowest)}, is a lucky cancellation of rounding errors, "
                 "not a better step.")
    return text


def best_h_question(sweep, dtype: str) -> str:
    """What the page says under ``dtype``'s sweep before the best h is shown (a lecture asks first): the question
    that :func:`best_h_text` answers."""
    if sweep.best_h.get(dtype) is None:
        return ""
    return (f"**{dtype}**: best h = **?** Where is the error smallest, and why there rather than at the smallest h? "
            "(“Show the best h” marks it and says why.)")


def default_sweep():
    """The h sweep Gradient check opens on (the slide example, ∂f/∂x1): the one source of the best h that the
    page and exercise 7 quote (4.6e-6 in float64)."""
    from .kit import presets
    program, inputs = parse(presets.DEFAULT.program, presets.DEFAULT.inputs)
    return costs.h_sweep(program, inputs, program.input_names[0])


def _decade(h: float) -> str:
    """1e-05 as 1e-5."""
    mantissa, exponent = sci(h, 1).split("e")
    return f"{mantissa}e{int(exponent)}"


def notes_best_h_text(sweep) -> str:
    """Why the notes' table prints a power of ten where the error model's best h (``sweep.best_h``) is not one:
    their h steps by decades, and the error is nearly flat around its minimum (Markdown, one paragraph)."""
    table = NOTES["best_h_table"].value
    parts = []
    for dt in ("float64", "float32"):
        m, best = sweep.model("central", dt), sweep.best_h.get(dt)
        if m is None or m.best_h is None or best is None:
            continue
        below = 10.0 ** math.floor(math.log10(best))
        above = below * 10
        # as many digits as tell the two errors apart (float32's read "1.5e-02 and 1.5e-02": nearly tied, not equal)
        digits = next((d for d in (2, 3, 4) if sci(m.error(above), d) != sci(m.error(below), d)), 4)
        parts.append(f"{dt}: the best h, **{sci(best)}**, lies between the decades {_decade(above)} and "
                     f"{_decade(below)}, where the model's error is {sci(m.error(above), digits)} and "
                     f"{sci(m.error(below), digits)} (the "
                     f"notes print {' and '.join(_decade(h) for h in table[dt])})")
    if not parts:
        return ""
    return ("The notes' h table steps by powers of ten, so it can only print a decade: " + "; ".join(parts) + ". The "
            "error is flat near its minimum, so rounding noise decides which decade comes out lowest; the best h "
            "itself is (3ε|f| / |f‴|)^(1/3), about ε^(1/3) when |f| and |f‴| are of the same size.")


_COLOURS = {"central": "#2563eb", "forward": "#ea580c"}
SWEEP_BAND_PX = 5       # a model band is this many data lines wide (look.edge_width each)
SWEEP_CLEAR_PX = 4      # room left between anything drawn and the plot's frame


def _log_range(items: list[tuple[float, float]], across_px: float) -> list[float]:
    """A log axis's ``range`` (log10 of its ends) that holds every ``(value, reach_px)`` of ``items`` whole: the
    value in the plot with ``reach_px`` of room on each side (half a thick band's width, a marker's radius) on an
    axis ``across_px`` long. The room costs decades, and the decades shrink each pixel: a few passes settle it."""
    logs = [(math.log10(v), r) for v, r in items]
    a, b = min(v for v, _ in logs), max(v for v, _ in logs)
    for _ in range(30):
        per_px = max(b - a, 0.5) / across_px   # decades per pixel
        a2, b2 = min(v - r * per_px for v, r in logs), max(v + r * per_px for v, r in logs)
        if abs(a2 - a) < 1e-9 and abs(b2 - b) < 1e-9:
            break
        a, b = a2, b2
    return [a, b]


def _decade_ticks(log_range: list[float], across_px: float, label_px: float) -> tuple[list[float], list[str]]:
    """Tick values and labels (1, 10, 10⁻⁶ as HTML) at the decades of a log axis's ``range``, every k-th decade
    (exponents that k divides) so that labels ``label_px`` long along an axis ``across_px`` long never touch."""
    a, b = log_range
    step = max(1, math.ceil(label_px / (across_px / max(b - a, 1e-9))))
    exps = [k for k in range(math.ceil(a), math.floor(b) + 1) if k % step == 0]
    return [10.0 ** k for k in exps], ["1" if k == 0 else "10" if k == 1 else f"10<sup>{k}</sup>".replace("-", "−")
                                       for k in exps]


@dataclass(frozen=True)
class SweepLayout:
    """Where a presentation sweep puts its text (px of the figure): under the plot the h axis's decades, its
    title and the legend's rows, each clear of the next."""
    height: int
    text_px: int          # the plot's title and the legend
    axis_px: int          # the axes' numbers and titles
    legend_rows: int

    @property
    def legend_row_px(self) -> float:
        return self.text_px * 1.35

    @property
    def legend_px(self) -> float:
        return self.legend_rows * self.legend_row_px + 12

    @property
    def top(self) -> int:
        return int(self.text_px * 2.4)

    @property
    def bottom(self) -> int:
        # tick marks, the decades (10 with a raised exponent: 1.4 lines), the title's gap and line, the legend
        return int(8 + 1.4 * self.axis_px + 8 + 1.2 * self.axis_px + 10 + self.legend_px)

    @property
    def plot_px(self) -> int:
        return self.height - self.top - self.bottom


def sweep_figure(sweep, dtype: str, look: Look, title: str | None = None, best: bool = True,
                 height: int | None = None) -> go.Figure:
    """Log-log error vs h for one dtype: central and forward differences over the error model's terms
    (truncation h² |f'''|/6 and h |f''|/2, rounding ε|f|/h, drawn as wide pale bands underneath), and
    the best h as a star (its value in the legend); ``best=False``: no star (the class looks for it first).

    The axes' ranges hold every band, curve and star whole (a band is wide: its ends and edges need room inside
    the frame). In presentation mode the axis titles are as large as the axes' numbers and the legend sits under
    the h axis's title, two entries a row, at the figure's foot (``height`` px, the whole figure).
    """
    height = height or int(look.figure_height * 0.9)
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
    band_px = look.edge_width * SWEEP_BAND_PX
    marker_px = max(5, look.node_size // 5)
    star_px = look.node_size * 0.8
    # (x, y, reach px) of everything drawn: the ranges below hold each whole (the y range leaves out an exact hit,
    # drawn at the floor, 1e-300: its line falls off the plot; the x range holds every h swept)
    drawn = [(h, e, marker_px / 2 + 1) for _, hs, errs in data for h, e in zip(hs, errs)]

    def guide(fn, name, colour):
        pts = [(h, fn(h)) for h in hs_all]
        pts = [(h, y) for h, y in pts if lo <= y <= hi and math.isfinite(y)]
        if len(pts) >= 2:  # under the data: a pale band the measured error runs along
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=name,
                                     line=dict(width=band_px, color=colour), opacity=0.3,
                                     hoverinfo="name"))
            drawn.extend((h, y, band_px / 2) for h, y in pts)

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
                                 marker=dict(size=marker_px)))
    _, markers = sweep_series(sweep, dtype)
    for name, x, y, _text in (markers if best else ()):
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"{name} = {sci(x)}",
                                 marker=dict(symbol="star", size=star_px, color="#16a34a",
                                             line=dict(width=1, color="#14532d"))))
        drawn.append((x, y, star_px / 2 + 1))
    fig.update_layout(title=title or f"|finite difference − autodiff|, {dtype}", font=dict(size=look.figure_font),
                      height=height)
    x_title, y_title = "h (log scale)", "absolute error (log scale)"
    if look.presenting:
        floor = max(look.figure_font, MIN_PRESENT_PX)
        # the decades written out (Plotly's "power" format draws them at 1.25 times the axis's font, larger than
        # any title): 10 at the axis's size, its exponent (70 %) at the text floor, the titles as large as the 10s
        # (and at least the 4/3 of the floor that readable_figure gives a log axis's numbers)
        axis_px = max(math.ceil(floor / 0.7 - 1e-9), -(-floor * 4 // 3))
        lay = SweepLayout(height, floor, axis_px, legend_rows=-(-len(fig.data) // 2))
        axis_font = dict(size=lay.axis_px)
        # at the decades' size the y title runs along a plot under 300 px tall: the words that fit it (the
        # decades say that the scale is logarithmic)
        y_title = "absolute error"
        fig.update_layout(margin=dict(l=10, r=10, t=lay.top, b=lay.bottom),
                          legend=dict(orientation="h", xref="paper", x=0, xanchor="left", yref="container", y=0,
                                      yanchor="bottom", entrywidth=0.5, entrywidthmode="fraction",
                                      font=dict(size=lay.text_px)))
        ys_range = _log_range([(y, r + SWEEP_CLEAR_PX) for _, y, r in drawn if y > 1e-300], lay.plot_px)
        # the h axis: a presentation column less the y axis's labels is about 780 px (700 leaves room)
        xs_range = _log_range([(x, r + SWEEP_CLEAR_PX) for x, _, r in drawn], 700.0)
        xv, xt = _decade_ticks(xs_range, 700.0, 3.2 * lay.axis_px)          # "10⁻¹²" and a gap
        yv, yt = _decade_ticks(ys_range, lay.plot_px, 1.8 * lay.axis_px)    # a raised exponent and a gap
        fig.update_xaxes(tickfont=axis_font, title_font=axis_font, title_standoff=8, tickmode="array", tickvals=xv,
                         ticktext=xt)
        fig.update_yaxes(tickfont=axis_font, title_font=axis_font, tickmode="array", tickvals=yv, ticktext=yt)
    else:
        fig.update_layout(legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=60, b=10))
        ys_range = _log_range([(y, r + SWEEP_CLEAR_PX) for _, y, r in drawn if y > 1e-300], height * 0.45)
        xs_range = _log_range([(x, r + SWEEP_CLEAR_PX) for x, _, r in drawn], 400.0)
    # decades only: Plotly's 2 / 5 minor labels on a log axis crowd a projector
    fig.update_xaxes(type="log", exponentformat="power", dtick=2 if len(hs_all) > 1 else None, automargin=True,
                     range=xs_range, title_text=x_title)
    fig.update_yaxes(type="log", exponentformat="power", range=ys_range, dtick=2, automargin=True,
                     title_text=y_title)
    return fig


# --- the notes' numeric checks, computed now ---------------------------------------------------------------

@dataclass
class NotesCheck:
    """One check: what is compared, the engine's figure measured now, and the notes' figure for the same kind of
    check (``notes_key`` into :data:`explorer.kit.notes.NOTES`), or None where the notes print none for it."""

    check: str
    compared: str
    notes_key: str | None
    engine: float | None         # max difference (absolute, or relative where ``compared`` says so); None: skipped
    skipped: str = ""            # why, when skipped (PyTorch not installed)

    @property
    def notes(self) -> str:
        """The notes' figure as the table shows it ("—": the notes print none for this check)."""
        if self.notes_key is None:
            return "—"
        value = NOTES[self.notes_key].value
        return "0" if value == 0 else sci(value)

    def row(self) -> dict:
        return {"check": self.check, "what is compared": self.compared, "the notes": self.notes,
                "this engine, now": self.skipped if self.engine is None else sci(self.engine)}


# the notes' figures the table shows, in its order (a test checks that notes_checks() uses exactly these)
NOTES_IN_TABLE = ("ops_vs_pytorch", "symbolic_vs_pytorch", "vjp_wx", "vjp_sigmoid", "text_classifier_by_hand",
                  "random_graph_error")


def notes_checks_caption() -> str:
    """What each of the notes' figures in the table measured, read from the notes table (Markdown)."""
    def fig(key):
        value = NOTES[key].value
        return "0" if value == 0 else sci(value)
    parts = [f"{fig(k)}: {NOTES[k].measures}" for k in NOTES_IN_TABLE]
    return ("The notes' figures, each beside the check it belongs to: " + "; ".join(parts) + ". A dash: the notes "
            f"print no figure for that check. Their {fig('side_by_side_loss')} is a *loss* difference over "
            f"{NOTES['side_by_side_steps'].value} Adam steps: it sits beside the side-by-side training below.")


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


def relative_error(autodiff: np.ndarray, estimate: np.ndarray) -> float:
    """‖autodiff − estimate‖ relative to the larger of the two norms (0 when both are 0), over one graph's inputs:
    the notes' measure for the random graphs (their 3.7e-10 is relative, so the table compares this, not the
    absolute difference)."""
    a, e = np.asarray(autodiff, dtype=float).ravel(), np.asarray(estimate, dtype=float).ravel()
    scale = max(float(np.linalg.norm(a)), float(np.linalg.norm(e)))
    return 0.0 if scale == 0 else float(np.linalg.norm(a - e)) / scale


def shared_values(graph) -> int:
    """How many values of a recorded graph are shared: an input or an op's result read by two or more operands
    (``x·x`` reads x twice), so that its adjoint is a sum of contributions. Constants take no adjoint and are
    not counted."""
    uses: dict[int, int] = {}
    for e in graph.edges:
        uses[e.src] = uses.get(e.src, 0) + 1
    return sum(1 for n in graph.nodes if n.kind != "constant" and uses.get(n.id, 0) >= 2)


def shared_text(mean_shared: float) -> str:
    """This engine's shared values per random graph beside the notes' figure, and why they differ where they do."""
    notes = NOTES["random_graph_shared"].value
    text = (f"{fixed(mean_shared)} shared values on average, each read by two or more operands so that its adjoint is a "
            f"sum; the notes' {notes}")
    if round(mean_shared, 1) < notes:
        text += (": this engine's generator lets each op read one or two earlier values, favouring the latest, so "
                 "fewer values are read twice than in the notes' graphs")
    elif round(mean_shared, 1) > notes:
        text += ": this engine's generator reuses earlier values more often than the notes' graphs do"
    return text


def random_graph_check(n_graphs: int = 50, n_ops: int = 8, h: float = 1e-6) -> tuple[float, float, float]:
    """(mean nodes per graph, the largest :func:`relative_error` of a graph's input gradients, autodiff against
    central differences, mean :func:`shared_values` per graph) over ``n_graphs`` random scalar graphs
    (``explorer.explain.harness.random_dag_program``, seeds 0…n−1; 8 ops make 22.9 nodes on average, the size of the
    notes' graphs)."""
    from explorer.explain import harness
    nodes, shared, worst = [], [], 0.0
    for seed in range(n_graphs):
        text, inputs = harness.random_dag_program(n_ops, seed)
        tr = ex.record_execution(text, inputs)
        nodes.append(len(tr.graph.nodes))
        shared.append(shared_values(tr.graph))
        fd = costs.central_differences(text, inputs, h=h)
        names = list(tr.grads)
        worst = max(worst, relative_error([float(tr.grads[n]) for n in names], [float(fd[n]) for n in names]))
    return float(np.mean(nodes)), worst, float(np.mean(shared))


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
    mean_nodes, fd, mean_shared = random_graph_check(NOTES["random_graphs"].value)
    n_graphs = NOTES["random_graphs"].value
    return [
        NotesCheck("ops against PyTorch", "9 elementwise / softmax ops and a matmul: outputs and gradients, float64 "
                   "(the notes: 15 ops)", "ops_vs_pytorch", ops_t, "" if ops_t is not None else skipped),
        NotesCheck("a network's gradients against PyTorch", "two-layer ReLU MLP, sigmoid, BCE: every parameter's "
                   "gradient", None, mlp_t, "" if mlp_t is not None else skipped),
        NotesCheck("symbolic gradients against a tape", "static graph's gradients() against eager backward(), "
                   "logistic regression (the notes: against PyTorch's tape)", "symbolic_vs_pytorch",
                   symbolic_against_tape()),
        NotesCheck("VJP against the explicit Jacobian: y = Wx", "x̄ = VJP(ȳ) against Jᵀȳ, J built column by column "
                   "with forward mode", "vjp_wx", wx),
        NotesCheck("VJP against the explicit Jacobian: sigmoid", "s̄ ⊙ σ(1 − σ) against Jᵀs̄, J (diagonal) built by forward mode",
                   "vjp_sigmoid", sig),
        NotesCheck("autodiff against a hand-written backward", "the same MLP's gradients, chain rule written by hand "
                   "in NumPy", None, hand_written_backward()),
        NotesCheck("… on HW2's network (a text classifier)", "padding-excluded mean of 50-d vectors, Linear(50, 32), "
                   "ReLU, Linear(32, 1), sigmoid, BCE (batch 10, float64): every parameter's gradient against NumPy "
                   "by hand", "text_classifier_by_hand", hw2_hand_written_backward()),
        NotesCheck("random graphs against finite differences", f"{n_graphs} random graphs ({fixed(mean_nodes)} nodes on "
                   f"average; the notes' {NOTES['random_graph_nodes'].value}; {shared_text(mean_shared)}), central "
                   "differences at h = 1e-6: the "
                   "largest relative error ‖autodiff − estimate‖ / ‖larger‖ of a graph's gradient", "random_graph_error", fd),
    ]


# --- this engine against PyTorch, trained side by side (the notes' §5.2) ------------------------------------------

SIDE_BY_SIDE = {"sentences": 200, "batch": 5, "epochs": 8, "lr": 0.01, "hidden": 32, "dropout": 0.5}
NOTES_SIDE_BY_SIDE = NOTES["side_by_side_loss"].value   # the notes' largest loss difference over their 320 steps


@dataclass
class SideBySideSetup:
    """Everything both trainings share: data, initial weights, the batches and the dropout masks of every step."""

    x: np.ndarray          # (N, L, 50) padded word vectors (zeros past each sentence's end)
    mask: np.ndarray       # (N, L) 1 for a real word
    y: np.ndarray          # (N,) labels
    params: list           # W1 (H, 50), b1 (H,), W2 (1, H), b2 (1,)
    batches: list          # per step: the sentence indices of its batch
    keep: list             # per step: the (B, H) dropout multiplier (0 or 1 / (1 - p))


def side_by_side_setup(seed: int = 0) -> SideBySideSetup:
    """The shared inputs, drawn once from ``seed`` (both processes call this and get the same arrays).

    The first ``SIDE_BY_SIDE['sentences']`` sentences of the built-in corpus with the built-in GloVe vectors; a
    new order of them every epoch, cut into batches; HW2's initialisation bounds; a dropout mask per step."""
    from sentiment.data import builtin_split
    from sentiment.embeddings import load_glove
    cfg = SIDE_BY_SIDE
    rng = np.random.default_rng(seed)
    train, _ = builtin_split()
    glove = load_glove()
    sentences, labels = train.sentences[:cfg["sentences"]], train.labels[:cfg["sentences"]]
    vectors = [glove.encode_sentence(s)[0].astype(np.float64) for s in sentences]
    length = max(len(v) for v in vectors)
    x = np.zeros((len(vectors), length, glove.dim))
    mask = np.zeros((len(vectors), length))
    for i, v in enumerate(vectors):
        x[i, :len(v)], mask[i, :len(v)] = v, 1.0
    h, d = cfg["hidden"], glove.dim
    b1, b2 = 1 / np.sqrt(d), 1 / np.sqrt(h)
    params = [rng.uniform(-b1, b1, (h, d)), rng.uniform(-b1, b1, h), rng.uniform(-b2, b2, (1, h)),
              rng.uniform(-b2, b2, 1)]
    batches, keep = [], []
    for _ in range(cfg["epochs"]):
        order = rng.permutation(len(vectors))
        for start in range(0, len(order), cfg["batch"]):
            idx = order[start:start + cfg["batch"]]
            batches.append(idx)
            keep.append((rng.random((len(idx), h)) >= cfg["dropout"]) / (1 - cfg["dropout"]))
    return SideBySideSetup(x, mask, np.asarray(labels, dtype=np.float64), params, batches, keep)


def engine_side_by_side(seed: int = 0) -> list[float]:
    """HW2's network (the project's ``SentimentNet`` layers) trained on this engine with Adam: the loss of every step.

    Dropout is the setup's mask multiplied in after the ReLU, so that PyTorch can use the very same masks."""
    import engine
    from engine import functional as F
    from engine import optim
    from sentiment.model import model_from_arrays
    s = side_by_side_setup(seed)
    model = model_from_arrays(s.params, dropout=0.0)
    opt = optim.Adam(model.parameters(), lr=SIDE_BY_SIDE["lr"])
    losses = []
    for idx, keep in zip(s.batches, s.keep):
        opt.zero_grad()
        hidden = model.hidden_units(engine.tensor(s.x[idx]), engine.tensor(s.mask[idx])) * engine.tensor(keep)
        p = F.sigmoid(model.fc2(hidden).reshape(-1))
        loss = F.binary_cross_entropy(p, engine.tensor(s.y[idx]))
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


def torch_side_by_side(seed: int = 0) -> list[float] | None:
    """The same training in PyTorch (float64, ``torch.optim.Adam``), from the same setup: the loss of every step.
    Run in a child process (:func:`side_by_side`); None without PyTorch."""
    torch = _torch()
    if torch is None:
        return None
    s = side_by_side_setup(seed)
    ps = [torch.tensor(p, requires_grad=True) for p in s.params]
    opt = torch.optim.Adam(ps, lr=SIDE_BY_SIDE["lr"])
    x, mask, y = torch.tensor(s.x), torch.tensor(s.mask), torch.tensor(s.y)
    losses = []
    for idx, keep in zip(s.batches, s.keep):
        opt.zero_grad()
        i = torch.tensor(idx)
        pooled = (x[i] * mask[i].unsqueeze(-1)).sum(1) / mask[i].sum(1, keepdim=True)
        hidden = torch.relu(torch.nn.functional.linear(pooled, ps[0], ps[1])) * torch.tensor(keep)
        p = torch.sigmoid(torch.nn.functional.linear(hidden, ps[2], ps[3]).reshape(-1))
        loss = torch.nn.functional.binary_cross_entropy(p, y[i])
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


@dataclass
class SideBySide:
    """Both trainings' losses per step, and how far apart they are."""

    engine: list[float]
    torch: list[float] | None
    skipped: str = ""                  # why PyTorch did not run

    @property
    def differences(self) -> list[float]:
        return [] if self.torch is None else [abs(a - b) for a, b in zip(self.engine, self.torch)]

    @property
    def largest(self) -> float | None:
        return max(self.differences) if self.torch is not None else None

    def text(self) -> str:
        """One sentence: steps, the largest difference beside the notes' figure (or why PyTorch was skipped)."""
        cfg = SIDE_BY_SIDE
        steps = len(self.engine)
        setting = (f"{steps} steps ({cfg['epochs']} epochs of {steps // cfg['epochs']} batches of {cfg['batch']}) "
                   f"with Adam, lr {cfg['lr']}, float64")
        if self.torch is None:
            return f"This engine trained for {setting}; PyTorch {self.skipped.removeprefix('skipped: ')}."
        worst = int(np.argmax(self.differences))
        return (f"Both trained for {setting}, from the same weights, batches and dropout masks (losses from "
                f"{num(self.engine[0])} to {num(self.engine[-1])}). Largest loss difference: **{sci(self.largest)}** "
                f"(at step {worst + 1}). The notes report {sci(NOTES_SIDE_BY_SIDE)} on their own data and batches: "
                "both are float64 rounding (each framework orders its float operations its own way, and Adam carries "
                "the rounding from step to step), so the two figures agree in kind, not digit for digit.")


def side_by_side(seed: int = 0) -> SideBySide:
    """Train HW2's network on this engine here and in PyTorch in a child process (when installed), side by side."""
    ours = engine_side_by_side(seed)
    try:
        theirs = in_reference_process("explorer.gradient_check:torch_side_by_side", seed)
    except ReferenceFailed as e:
        return SideBySide(ours, None, f"skipped: {e}")
    return SideBySide(ours, theirs, "" if theirs is not None else NO_TORCH)


def side_by_side_figure(result: SideBySide, look: Look) -> go.Figure:
    """Both loss curves over the steps (top) and their absolute difference on a log scale (bottom)."""
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.08)
    steps = list(range(1, len(result.engine) + 1))
    fig.add_trace(go.Scatter(x=steps, y=result.engine, name="this engine", line={"width": 3}), row=1, col=1)
    if result.torch is not None:
        fig.add_trace(go.Scatter(x=steps, y=result.torch, name="PyTorch", line={"dash": "dash"}), row=1, col=1)
        fig.add_trace(go.Scatter(x=steps, y=[max(d, 1e-18) for d in result.differences], name="|difference|",
                                 line={"color": "#d62728"}), row=2, col=1)
        fig.update_yaxes(type="log", title_text="|engine − PyTorch|", row=2, col=1)
    fig.update_yaxes(title_text="batch loss (BCE)", row=1, col=1)
    fig.update_xaxes(title_text="training step", row=2, col=1)
    fig.update_layout(height=look.figure_height, font={"size": look.figure_font}, margin={"t": 30},
                      title={"text": "HW2's network trained side by side"})
    return fig


def notes_check_rows() -> list[dict]:
    """:func:`notes_checks` as table rows: the page's fixed figure (``explorer.kit.fixed``), computed once per
    server process in the background, never under a request's deadline."""
    return [c.row() for c in notes_checks()]
