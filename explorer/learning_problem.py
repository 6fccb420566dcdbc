"""The learning problem (page 2): a loss over two parameters, and gradient descent on it, step by step.

Every number comes from the engine: the loss surface is the engine's cross-entropy evaluated on a grid
(one batched engine computation), each step's gradient is ``engine.grad`` of the loss, the curvature
(the Hessian, for the stable step size 2/λ) is ``engine.grad`` of ``engine.grad``, and the lecture's
exercise 1 is ``engine.grad`` of (x − 3)². No Streamlit here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

import engine
from engine import functional as F

from .explain.numbers import count, fixed
from .kit import geometry
from .kit.labels import num
from .kit.presentation import Look
from .lecture_kit import readable
from explorer.explain.numbers import percent, plain, sci

MAX_STEPS = 60
GRID = 81          # contour grid points per axis (81 x 81 losses in one engine call)
START_LIMIT = 6.0  # |w_i| of a start point


@dataclass(frozen=True)
class Surface:
    key: str
    label: str
    formula: str                         # shown above the picture (Markdown)
    extent: tuple[float, float, float, float]   # w1 min, w1 max, w2 min, w2 max of the picture
    start: tuple[float, float]
    lr_choices: tuple[float, ...]
    lr_default: float
    lr_examples: dict = field(default_factory=dict)   # "too small" / "about right" / "divergent" -> η


# A tiny 2-D dataset: two classes that a line through the origin separates, except two points, so the
# cross-entropy has a finite minimum (a separable set would push w to infinity).
POINTS = np.array([[1.0, 2.2], [2.0, 0.6], [1.6, 1.9], [0.4, 2.6], [-0.6, 0.9],
                   [-1.0, -1.8], [-2.1, -0.5], [-1.4, -2.2], [0.8, -0.4], [2.4, 1.0]]) * 1.5
LABELS = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=float)

BOWL_CENTRE = (1.0, -0.5)
BOWL_CURVATURES = (1.0, 10.0)  # ∂²L/∂w1², ∂²L/∂w2²: a long, narrow valley

SURFACES: dict[str, Surface] = {
    "logistic": Surface(
        "logistic", "Cross-entropy of a logistic-regression classifier (10 points in 2-D)",
        "p(y = 1 | x) = σ(w1·x1 + w2·x2),   L(w) = −(1/N) Σ [ y log p + (1 − y) log(1 − p) ]",
        (-4.0, 4.0, -3.0, 5.0), (3.0, -2.5), (0.1, 0.3, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0), 2.0,
        {"too small": 0.1, "about right": 2.0, "divergent": 32.0}),
    "bowl": Surface(
        "bowl", "A quadratic bowl with a narrow valley",
        "L(w) = ½·(w1 − 1)² + 5·(w2 + 0.5)²   (curvatures 1 and 10)",
        (-3.0, 4.0, -3.0, 2.5), (-2.5, 1.8), (0.01, 0.02, 0.05, 0.1, 0.15, 0.19, 0.21, 0.25), 0.1,
        {"too small": 0.01, "about right": 0.1, "divergent": 0.21}),
}
DEFAULT_SURFACE = "logistic"
BATCH_CHOICES = (0, 5, 2, 1)  # 0: the whole dataset (gradient descent)


def _data(idx=None):
    x, y = (POINTS, LABELS) if idx is None else (POINTS[list(idx)], LABELS[list(idx)])
    return engine.tensor(x), engine.tensor(y)


def loss(surface: str, w: engine.Tensor, batch: list[int] | None = None) -> engine.Tensor:
    """The surface's loss at parameters ``w`` (shape (2,)) as an engine graph; ``batch`` picks examples."""
    if surface == "logistic":
        x, y = _data(batch)
        return F.binary_cross_entropy_with_logits(x @ w, y)  # mean cross-entropy from the logits x·w
    if surface == "bowl":
        d = w - engine.tensor(list(BOWL_CENTRE))
        return 0.5 * (engine.tensor(list(BOWL_CURVATURES)) * d * d).sum()
    raise KeyError(f"unknown surface {surface!r}; known: {sorted(SURFACES)}")


def loss_grid(surface: str, n: int = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(w1s, w2s, L)`` with ``L[j, i]`` the loss at ``(w1s[i], w2s[j])``, from one batched engine call."""
    s = SURFACES[surface]
    w1s = np.linspace(s.extent[0], s.extent[1], n)
    w2s = np.linspace(s.extent[2], s.extent[3], n)
    W1, W2 = np.meshgrid(w1s, w2s)
    ws = engine.tensor(np.stack([W1.ravel(), W2.ravel()], axis=1))       # (n², 2): every grid point
    with engine.no_grad():
        if surface == "logistic":
            x, y = _data()
            logits = ws @ x.T                                               # (n², N)
            per = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
            values = per.mean(1)
        else:
            d = ws - engine.tensor(list(BOWL_CENTRE))
            values = 0.5 * (d * d * engine.tensor(list(BOWL_CURVATURES))).sum(1)
    return w1s, w2s, values.numpy().reshape(n, n)


@dataclass
class DescentStep:
    """One update w_next = w + Δw with Δw = −η ∇L_batch(w)."""
    k: int
    w: np.ndarray
    loss: float                 # full loss at w
    grad: np.ndarray            # the gradient used (mini-batch when batch > 0)
    delta: np.ndarray           # −η · grad
    w_next: np.ndarray
    loss_next: float
    predicted_change: float     # first-order Taylor: ∇L(w)·Δw with the full gradient
    batch: list[int]


def descend(surface: str, start, lr: float, steps: int = 40, batch: int = 0, seed: int = 0) -> list[DescentStep]:
    """Gradient descent (``batch`` = 0) or mini-batch SGD from ``start``, each gradient from ``engine.grad``.

    Raises:
        ValueError: a start outside ±6, a learning rate that is not positive, or too many steps.
    """
    if surface not in SURFACES:
        raise KeyError(f"unknown surface {surface!r}")
    w = np.array(start, dtype=float)
    if w.shape != (2,) or not np.all(np.isfinite(w)) or np.max(np.abs(w)) > START_LIMIT:
        raise ValueError(f"the start point must be two finite numbers within ±{plain(START_LIMIT)}")
    if not (lr > 0 and np.isfinite(lr)):
        raise ValueError("the learning rate must be a positive number")
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"between 1 and {MAX_STEPS} steps")
    n = len(POINTS)
    rng = np.random.default_rng(seed)
    perm: list[int] = []
    full_grad = engine.grad(lambda p: loss(surface, p))
    out = []
    cur = float(loss(surface, engine.tensor(w)).item())
    for k in range(steps):
        if batch and surface == "logistic" and batch < n:
            if len(perm) < batch:  # a new epoch: a fresh shuffle
                perm = perm + [int(i) for i in rng.permutation(n)]
            idx, perm = perm[:batch], perm[batch:]
        else:
            idx = []
        g_full = full_grad(engine.tensor(w)).numpy()
        g = engine.grad(lambda p, b=idx: loss(surface, p, b))(engine.tensor(w)).numpy() if idx else g_full
        delta = -lr * g
        w_next = w + delta
        with np.errstate(all="ignore"):
            nxt = float(loss(surface, engine.tensor(w_next)).item()) if np.all(np.isfinite(w_next)) else float("inf")
        out.append(DescentStep(k, w.copy(), cur, g, delta, w_next.copy(), nxt, float(g_full @ delta), list(idx)))
        w, cur = w_next, nxt
        if not np.isfinite(cur) or np.max(np.abs(w)) > 1e12:
            break
    return out


def hessian(surface: str, w) -> np.ndarray:
    """The 2×2 Hessian at ``w``: each row is ``engine.grad`` of one component of ``engine.grad``."""
    g = engine.grad(lambda p: loss(surface, p))
    rows = [engine.grad(lambda p, i=i: g(p)[i])(engine.tensor(np.asarray(w, dtype=float))).numpy() for i in range(2)]
    return np.array(rows)


def minimum(surface: str) -> tuple[np.ndarray, float]:
    """The minimiser and the minimal loss, by Newton's method on the engine's gradient and Hessian."""
    w = np.array([0.3, 0.7])  # not 0: there every logit is 0, where |z|'s derivative (sign) is 0
    g = engine.grad(lambda p: loss(surface, p))
    for _ in range(30):
        step = np.linalg.solve(hessian(surface, w), g(engine.tensor(w)).numpy())
        w = w - step
        if np.max(np.abs(step)) < 1e-13:
            break
    return w, float(loss(surface, engine.tensor(w)).item())


def stable_lr(surface: str) -> tuple[float, float]:
    """(λ_max of the Hessian at the minimum, 2/λ_max): near the minimum, steps with η > 2/λ_max grow."""
    w, _ = minimum(surface)
    lam = float(np.max(np.linalg.eigvalsh(hessian(surface, w))))
    return lam, 2.0 / lam


def _share_down(start: float, now: float, loss_min: float) -> float:
    """How much of the way from the starting loss down to the minimum's the run has gone (1 when it started there)."""
    gap = start - loss_min
    return (start - now) / gap if gap > 0 else 1.0


def _share_text(closed: float, gap: float) -> str:
    """How far down the run is, in words that agree with the number: a share that rounds to 100.0% while the run
    is still above the minimum reads "essentially at the minimum" with the gap left (never "100.0%" on the way)."""
    if round(closed * 1000) < 1000:
        return f"{percent(closed, 1)} of the way down"
    return f"essentially at the minimum (L − min L = {_math(sci(max(gap, 0.0)))})"


def regime(path: list[DescentStep], loss_min: float) -> tuple[str, str]:
    """What the run did: ``("divergent" | "too small" | "about right" | "noisy", one sentence why)``."""
    start, end = path[0].loss, path[-1].loss_next
    ups = sum(1 for s in path if s.loss_next > s.loss + 1e-12)
    stochastic = bool(path[0].batch)
    if not np.isfinite(end) or end > start or (ups > len(path) // 3 and not stochastic):
        return "divergent", (f"the loss went up in {ups} of {len(path)} steps: each step overshoots the valley "
                             "and lands higher on the other side")
    closed = _share_down(start, end, loss_min)
    if stochastic:
        return "noisy", (f"the loss went up in {ups} of {len(path)} steps (a mini-batch gradient only estimates "
                         f"the full one), yet {percent(closed)} of the way down overall")
    if closed < 0.99:
        return "too small", f"after {len(path)} steps only {percent(closed)} of the way down to the minimum"
    return "about right", f"{_share_text(closed, end - loss_min)} after {len(path)} steps"


def progress(path: list[DescentStep], upto: int, loss_min: float) -> tuple[str | None, str]:
    """What the run has done up to step ``upto`` (its update applied), with no word on how it ends: ``(None,
    sentence)`` before the last step, ``regime(path, loss_min)`` at the last one (the verdict is no spoiler then)."""
    if upto >= len(path) - 1:
        return regime(path, loss_min)
    start, now = path[0].loss, path[upto].loss_next
    done = f"after {upto + 1} of {len(path)} steps"
    if not np.isfinite(now) or now > start:
        return None, f"{done} the loss is {num(now)}, up from {num(start)} at w₀"
    closed = _share_down(start, now, loss_min)
    if round(closed * 1000) < 1000:
        return None, f"{done}: {percent(closed, 1)} of the way down to the minimum so far"
    return None, f"{done}: {_share_text(closed, now - loss_min)}"


# --- the lecture's exercise 1 ------------------------------------------------------------------------------

@dataclass
class Exercise1Row:
    k: int
    x: float
    f: float
    slope: float       # f'(x) from engine.grad
    x_next: float


def exercise1(x0: float = 0.0, lr: float = 0.1, steps: int = 5) -> list[Exercise1Row]:
    """Gradient descent on f(x) = (x − 3)² from ``x0`` with step ``lr``; f'(x) from ``engine.grad``."""
    if not (np.isfinite(x0) and abs(x0) <= 1e6 and np.isfinite(lr) and 0 < lr <= 10 and 1 <= steps <= 50):
        raise ValueError("x0 within ±1e6, 0 < η ≤ 10 and 1 to 50 steps")
    f = lambda x: (x - 3.0) ** 2  # noqa: E731  (engine ops: sub, pow)
    df = engine.grad(f)
    rows = []
    x = float(x0)
    for k in range(steps):
        t = engine.tensor(x)
        slope = float(df(t).item())
        rows.append(Exercise1Row(k, x, float(f(t).item()), slope, x - lr * slope))
        x = x - lr * slope
    return rows


# --- tables and figures ------------------------------------------------------------------------------------

#: the path's trace in the contour plot: Unicode subscripts, at the text's own size (a legend read "w_0 … w_k";
#: Plotly's <sub> drew the index at 70 % of it, under a projector's floor)
PATH_NAME = "w₀ … wₖ"
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def w_sub(k: int) -> str:
    """w with its index as a figure writes it (``w₃``, ``w₁₂``)."""
    return "w" + str(k).translate(_SUBSCRIPT)


def _v(a) -> str:
    return "(" + ", ".join(num(x) for x in np.asarray(a).ravel()) + ")"


def _math(text: str) -> str:
    """A formula's numbers with the minus sign of the formula around them (num writes "-0.07" beside "−η")."""
    return text.replace("-", "−")


def taylor_text(step: "DescentStep") -> str:
    """The step's first-order prediction beside what the engine measured (Markdown), minus signs as the step's line
    writes them: ``First-order Taylor predicted the change ∇L·Δw = **−4.0845**; the engine measured **−1.711**.``"""
    return (f"First-order Taylor predicted the change ∇L·Δw = **{_math(num(step.predicted_change))}**; "
            f"the engine measured **{_math(num(step.loss_next - step.loss))}**.")


CAPTION_DIGITS = 4   # significant digits in the step's line: one line on a projector at every step (5 wrapped it)


def step_caption(step: DescentStep, lr: float, total: int) -> str:
    """The step's line, numbered from 1 as every stepper of the app counts: step k + 1 moves w_k to w_k+1, and the
    line names both (the plot marks w_k with the update's arrow to w_k+1), out of the ``total`` steps as the other
    steppers' headers say, one minus sign throughout, short enough to stay one line (the gradient itself is in the
    table of steps): ``Step 1 of 40: w₀ = (3, −2.5), L = 3.505 → Δw = −2·∇L = (0.1467, 2.854) → w₁, L = 1.794``."""
    d = CAPTION_DIGITS
    v = lambda a: "(" + ", ".join(num(x, d) for x in np.asarray(a).ravel()) + ")"  # noqa: E731
    return _math(f"Step {step.k + 1} of {total}: {w_sub(step.k)} = {v(step.w)}, L = {num(step.loss, d)} → "
                 f"Δw = −{plain(lr)}·∇L = {v(step.delta)} → {w_sub(step.k + 1)}, L = {num(step.loss_next, d)}")


def step_rows(path: list[DescentStep], upto: int, lr: float) -> list[dict]:
    """Rows of the steps taken so far (the last one is the update about to be applied)."""
    rows = []
    for s in path[:upto + 1]:
        rows.append({"step": s.k + 1, "k": s.k, "wₖ": _v(s.w), "L(wₖ)": num(s.loss), "∇L": _v(s.grad),
                     f"Δw = −{plain(lr)}·∇L": _v(s.delta), "wₖ₊₁": _v(s.w_next), "L(wₖ₊₁)": num(s.loss_next),
                     **({"batch": ",".join(map(str, s.batch))} if s.batch else {})})
    return rows


#: presentation mode: the contour plot's height in px on the 1920 x 1080 design screen (the page is scaled as a whole
#: on smaller projectors). It ends within the first screen under the one row of controls (the loss, mini-batch and
#: start choices folded away beside the learning rate, whose slider has no label row), the stepper's row and the step's
#: line (tests/browser/test_first_screen.py); with no title (the step's line above says it) its square plot is
#: ~590 px (it was ~500 px under a row of folded choices and a labelled slider)
PRESENT_CONTOUR_PX = 700


def limit_phrase(lr: float, limit: float) -> str:
    """The chosen η against the stability limit 2/λ (Markdown): above it, or below it and by how much."""
    if lr > limit:
        return f"**η = {plain(lr)} is above it**"
    return f"η = {plain(lr)} is below it"


def clip_segment(a, b, box) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of the segment ``a`` → ``b`` inside ``box = (x0, x1, y0, y1)`` (the plot's ranges), None when it
    misses the box (:func:`explorer.kit.geometry.clip_segment`, which takes the box as x0, y0, x1, y1)."""
    return geometry.clip_segment(a, b, (box[0], box[2], box[1], box[3]))


def _inside(p, box) -> bool:
    return box[0] <= float(p[0]) <= box[1] and box[2] <= float(p[1]) <= box[3]


def _label_side(x: float, y: float, box, inside: bool) -> str:
    """Where a point's label goes so that it stays in the plot: left of it (under it near the bottom edge); for a
    point marked on the frame's edge, on the plot's side of that edge."""
    if inside:   # beside it: the update's arrow leaves it upwards or downwards
        return "middle left" if x > box[0] + 0.15 * (box[1] - box[0]) else "middle right"
    v = "bottom" if y >= box[3] else "top" if y <= box[2] else "middle"
    return f"{v} {'right' if x < (box[0] + box[1]) / 2 else 'left'}"


def _near(p, q, box, share: float = 0.12) -> bool:
    """Whether two points of the plot are within ``share`` of its width and height of each other (their markers
    and labels would meet)."""
    return (abs(float(p[0]) - float(q[0])) < share * (box[1] - box[0])
            and abs(float(p[1]) - float(q[1])) < share * (box[3] - box[2]))


def _apart_sides(here, w_min) -> tuple[str, str]:
    """Text positions for the current point's label and the minimum's when the two are close: on opposite sides,
    each away from the other (the current point's label covered the star's "min")."""
    right = float(here[0]) >= float(w_min[0])
    return (f"bottom {'right' if right else 'left'}", f"top {'left' if right else 'right'}")


def contour_figure(surface: str, grid, path: list[DescentStep], step: int, look: Look,
                   w_min: np.ndarray | None = None, limit: float | None = None, lr: float | None = None) -> go.Figure:
    """Contours of the loss with the path up to the 0-based ``step`` (the update path[step] as an arrow); in
    presentation mode :data:`PRESENT_CONTOUR_PX` tall, with no title (the page's step line says it).

    The plot keeps the loss's own frame: a step that leaves it is drawn up to the frame's edge, and a point off the
    plot is marked on the edge nearest to it with its coordinates, and a note over the plot says so (with ``lr`` above
    the stability limit ``limit`` = 2/λ: η against it, and at the last step, with the run's verdict, that the steps
    diverge; before it the page says how far down the run is, and the two must not disagree)."""
    s = SURFACES[surface]
    w1s, w2s, Z = grid
    fig = go.Figure()
    levels = np.log10(Z - Z.min() + 1e-3)  # log contours: the valley floor and the walls both show
    fig.add_trace(go.Contour(x=w1s, y=w2s, z=levels, colorscale="Blues", reversescale=True, showscale=False,
                             contours=dict(coloring="heatmap", showlines=True), ncontours=22,
                             line=dict(width=0.8, color="rgba(30,41,59,0.35)"), hoverinfo="skip",
                             name="loss"))
    pts = [p.w for p in path[:step + 1]] + [path[step].w_next]
    xs, ys = [float(p[0]) for p in pts], [float(p[1]) for p in pts]
    fig.add_trace(go.Scatter(x=xs[:-1], y=ys[:-1], mode="lines+markers", name=PATH_NAME,
                             line=dict(color="#ea580c", width=look.edge_width + 1),
                             marker=dict(size=look.node_size * 0.35, color="#ea580c")))
    cur = path[step]
    box = s.extent
    seen = clip_segment((xs[-2], ys[-2]), (xs[-1], ys[-1]), box)   # the update's arrow, cut at the plot's frame
    if seen is not None and seen[0] != seen[1]:
        (tx, ty), (hx, hy) = seen
        fig.add_annotation(x=hx, y=hy, ax=tx, ay=ty, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=3 if _inside((xs[-1], ys[-1]), box) else 0, arrowsize=1.4,
                           arrowwidth=look.edge_width + 1, arrowcolor="#b91c1c", text="")
    here_in = _inside((xs[-2], ys[-2]), box)
    # a point off the plot: marked on the frame's edge nearest to it, with where it is
    mx, my = float(np.clip(xs[-2], box[0], box[1])), float(np.clip(ys[-2], box[2], box[3]))
    near = w_min is not None and here_in and _near((mx, my), w_min, box)
    here_side, min_side = (_apart_sides((mx, my), w_min) if near else
                           (_label_side(mx, my, box, here_in), "top right"))
    fig.add_trace(go.Scatter(x=[mx], y=[my], mode="markers+text", name=w_sub(cur.k),
                             # beside the point, not under it (a start near the bottom edge had its label cut)
                             text=[w_sub(cur.k) if here_in else f"{w_sub(cur.k)} = {_v(cur.w)}, off the plot"],
                             textposition=here_side,
                             cliponaxis=False,
                             textfont=dict(size=look.figure_font + 2, color="#7c2d12"),
                             # by the minimum, a ring: the star drawn over it shows through
                             marker=dict(size=look.node_size * (0.8 if near else 0.55), color="#b91c1c",
                                         symbol="circle-open" if near else "circle" if here_in else "diamond",
                                         line=dict(width=3 if near else 2, color="#b91c1c" if near else "white"))))
    gone = [i for i, (x, y) in enumerate(zip(xs, ys)) if not _inside((x, y), box)]
    if gone:
        note = f"{w_sub(gone[0])} left the plot"
        if limit is not None and lr is not None and lr > limit:
            note += f": η = {plain(lr)} > 2/λ = {num(limit)}"
            if step >= len(path) - 1:   # the run's verdict is out: before it, the page says how far down it is
                note += ", the steps diverge"
        fig.add_annotation(x=0.01, y=0.01, xref="paper", yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                           text=note, font=dict(size=look.figure_font, color="#991b1b"),
                           bgcolor="rgba(255,255,255,0.9)", bordercolor="#991b1b", borderpad=4)
    if w_min is not None:
        fig.add_trace(go.Scatter(x=[float(w_min[0])], y=[float(w_min[1])], mode="markers+text", name="minimum",
                                 text=["min"], textposition=min_side,
                                 textfont=dict(size=look.figure_font, color="#14532d"),
                                 marker=dict(symbol="star", size=look.node_size * 0.6, color="#16a34a")))
    fig.update_layout(height=PRESENT_CONTOUR_PX if look.presenting else int(look.figure_height * 0.9),
                      font=dict(size=look.figure_font), margin=dict(l=10, r=10, t=10 if look.presenting else 40, b=10),
                      title=None if look.presenting else dict(text=f"{s.label.split(' (')[0]}: step {cur.k + 1} of "
                                                                   f"{len(path)}", font=dict(size=look.figure_font + 1)),
                      # the legend to the right of the square plot, top-aligned: under it, it sat on the w1 axis title
                      legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top",
                                  font=dict(size=look.figure_font)),
                      xaxis=dict(title="w1", range=[s.extent[0], s.extent[1]], constrain="domain"),
                      yaxis=dict(title="w2", range=[s.extent[2], s.extent[3]], scaleanchor="x", scaleratio=1, constrain="domain"))
    return readable(fig, look)


def loss_curve_figure(path: list[DescentStep], step: int, loss_min: float, look: Look) -> go.Figure:
    """L(w_k) − L_min against k (log scale) up to w_{step+1} (the step's update applied, as the caption says), the
    current step marked; the steps still to come are not drawn (no spoiler), the k axis spans the whole run."""
    ks = [s.k for s in path] + [path[-1].k + 1]
    ls = [s.loss for s in path] + [path[-1].loss_next]
    gaps = [max(v - loss_min, 1e-16) if np.isfinite(v) else None for v in ls]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ks[:step + 2], y=gaps[:step + 2], mode="lines+markers", name="L(wₖ) − min L",
                             line=dict(color="#2563eb", width=look.edge_width + 1)))
    fig.add_trace(go.Scatter(x=[step], y=[gaps[step]], mode="markers", name="now",
                             marker=dict(size=look.node_size * 0.55, color="#b91c1c")))
    fig.update_layout(height=int(look.figure_height * 0.55), font=dict(size=look.figure_font),
                      margin=dict(l=10, r=10, t=40, b=10), showlegend=False,
                      title=dict(text="distance to the minimum: L(wₖ) − min L", font=dict(size=look.figure_font + 1)),
                      xaxis=dict(title="step k", range=[-0.5, ks[-1] + 0.5]),
                      # the axis spans the steps drawn (the run's end is no spoiler)
                      yaxis=dict(title="L(wₖ) − min L (log)", type="log", **log_ticks([g for g in gaps[:step + 2] if g is not None])))
    return readable(fig, look)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_label(v: float) -> str:
    """A power of ten as 10ᵏ, at the text's own size (never Plotly's tiny superscript): 10⁻⁶, 10⁰, 10² (2·10⁻⁶ for
    a multiple of one)."""
    k = math.floor(math.log10(v) + 1e-9)
    m = round(v / 10.0 ** k)
    return ("" if m == 1 else f"{m}·") + "10" + str(k).translate(_SUPERSCRIPT)


def _tick_label(v: float) -> str:
    """A log axis's tick as the class reads it: 0.01, 1, 100 (10⁻⁶, 10⁸ far from 1), never a tiny superscript."""
    k = round(math.log10(v))
    if abs(v - 10.0 ** k) < 1e-9 * v and abs(k) > 4:
        return _power_label(v)
    return fixed(v, 10).rstrip("0").rstrip(".") if v < 1 else count(v)


def _tick_labels(ticks: list[float]) -> list[str]:
    """The axis's labels in one format: all plain (0.01, 1, 100), or, where one of them would need 10ᵏ (a power of
    ten far from 1), every one as 10ᵏ (an axis reading 1, 0.01, 0.0001, 10⁻⁶ mixed two)."""
    plain_labels = [_tick_label(t) for t in ticks]
    if any(label.startswith("10") and len(label) > 2 and not label[2:].isdigit() for label in plain_labels):
        return [_power_label(t) for t in ticks]
    return plain_labels


def log_ticks(values, most: int = 7) -> dict:
    """Plotly axis settings for a log axis over ``values``: ticks at 1, 2, 5 times the powers of ten when that
    gives a few (a range within a decade or two), else at powers of ten only (every second or third one when there
    are many), labelled in full (:func:`_tick_label`)."""
    vals = [float(v) for v in values if v is not None and np.isfinite(v) and v > 0]
    if not vals:
        return {}
    a, b = math.log10(min(vals)), math.log10(max(vals))
    pad = max(0.05 * (b - a), 0.1)
    a, b = a - pad, b + pad                      # the axis's range, set here: the ticks are the ones it shows
    lo, hi = 10.0 ** a, 10.0 ** b
    k0, k1 = math.floor(a), math.ceil(b)
    ticks = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in (1, 2, 3, 5) if lo <= m * 10.0 ** k <= hi]
    if len(ticks) > 4:
        ticks = [t for t in ticks if round(t / 10.0 ** math.floor(math.log10(t) + 1e-9)) != 3]   # 1, 2, 5
    if len(ticks) > most or len(ticks) < 2:
        stride = max(1, math.ceil((k1 - k0 + 1) / most))
        ticks = [10.0 ** k for k in range(k0, k1 + 1) if k % stride == 0 and lo <= 10.0 ** k <= hi]   # 1 among them
    return {"range": [a, b], "tickmode": "array", "tickvals": ticks, "ticktext": _tick_labels(ticks)}


def exercise1_figure(rows: list[Exercise1Row], look: Look) -> go.Figure:
    """f(x) = (x − 3)² with the iterates and the tangent at x0 (slope from the engine)."""
    xs_pts = [r.x for r in rows] + [rows[-1].x_next]
    lo, hi = min(min(xs_pts), 3.0) - 1.0, max(max(xs_pts), 3.0) + 1.0
    grid = np.linspace(lo, hi, 200)
    with engine.no_grad():
        fx = ((engine.tensor(grid) - 3.0) ** 2).numpy()
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=grid, y=fx, mode="lines", name="f(x) = (x − 3)²",
                             line=dict(color="#2563eb", width=look.edge_width + 1)))
    r0 = rows[0]
    tx = np.array([r0.x - 0.8, r0.x + 0.8])
    fig.add_trace(go.Scatter(x=tx, y=r0.f + r0.slope * (tx - r0.x), mode="lines",
                             name=f"tangent, slope {plain(r0.slope)}",
                             line=dict(color="#b91c1c", dash="dash", width=look.edge_width + 1)))
    fig.add_trace(go.Scatter(x=xs_pts, y=[(x - 3.0) ** 2 for x in xs_pts], mode="markers+text", name="x_k",
                             text=[f"x{k}" for k in range(len(xs_pts))], textposition="top right",
                             textfont=dict(size=look.figure_font),
                             marker=dict(size=look.node_size * 0.4, color="#ea580c")))
    fig.update_layout(height=int(look.figure_height * 0.6), font=dict(size=look.figure_font),
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.2),
                      xaxis=dict(title="x"), yaxis=dict(title="f(x)"))
    return readable(fig, look)


# --- gradient descent as the slides write it, beside the PyTorch-style loop ----------------------------------------

FORMS_STEPS = 20


def example_loss(w, x, y):
    """One example's cross-entropy, from its logit x·w."""
    return F.binary_cross_entropy_with_logits((engine.tensor(x) * w).sum(), engine.tensor(y))


def gd_slides_form(w0, lr, steps):
    """The slides' gradient descent: each example's gradient summed into total_g, divided by N."""
    w = np.array(w0, dtype=float)
    for t in range(steps):
        total_g = np.zeros_like(w)
        for x, y in zip(POINTS, LABELS):
            total_g += engine.grad(example_loss)(w, x, y).numpy()
        w = w - lr * total_g / len(POINTS)
    return w


def gd_pytorch_style(w0, lr, steps):
    """The same descent as a PyTorch-style loop: the mean loss over the batch, backward(), an optimizer's step."""
    w = engine.tensor(np.array(w0, dtype=float), requires_grad=True)
    opt = engine.optim.SGD([w], lr=lr)
    X, Y = engine.tensor(POINTS), engine.tensor(LABELS)
    for t in range(steps):
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(X @ w, Y)
        loss.backward()
        opt.step()
    return w.detach().numpy()


def _source(*fns) -> str:
    import inspect
    return "\n\n".join(inspect.getsource(f).rstrip() for f in fns)


SLIDES_FORM_CODE = _source(example_loss, gd_slides_form)
PYTORCH_STYLE_CODE = _source(gd_pytorch_style)


@dataclass(frozen=True)
class TwoForms:
    steps: int
    lr: float
    start: tuple[float, float]
    slides: tuple[float, float]
    loop: tuple[float, float]

    @property
    def max_difference(self) -> float:
        return float(np.abs(np.subtract(self.slides, self.loop)).max())


def two_forms(start=None, lr: float | None = None, steps: int = FORMS_STEPS) -> TwoForms:
    """Both forms on the logistic-regression problem from the same start: where each lands after ``steps``."""
    s = SURFACES["logistic"]
    start = tuple(map(float, start if start is not None else s.start))
    lr = float(lr if lr is not None else s.lr_default)
    a, b = gd_slides_form(start, lr, steps), gd_pytorch_style(start, lr, steps)
    return TwoForms(steps, lr, start, (float(a[0]), float(a[1])), (float(b[0]), float(b[1])))


def two_forms_text(r: TwoForms) -> str:
    return (f"Both run here on the 10-point logistic problem above, from w = ({num(r.start[0])}, {num(r.start[1])}) "
            f"with η = {plain(r.lr)} for {r.steps} steps: the slides' form lands at w = ({num(r.slides[0])}, "
            f"{num(r.slides[1])}), the loop at ({num(r.loop[0])}, {num(r.loop[1])}); largest difference "
            f"{sci(r.max_difference)} (float64 rounding: the mean's gradient is the sum of the examples' divided by N, "
            "added in another order).")
