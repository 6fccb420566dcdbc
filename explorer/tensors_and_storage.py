"""Tensors, storage and views (page 8): what a tensor really is, from the engine's own objects.

* :func:`run_chain` runs a typed chain of layout calls (``x.permute(1, 0).contiguous().view(12)``) on
  an engine tensor of the pure-Python backend and records, after every call, the ``TensorData`` the
  engine holds: its flat storage (and whether it is the very same object as ``x``'s), shape, strides and
  offset. An illegal call stops the chain with the engine's own exception (``ViewError`` ...).
  The text is read with ``ast`` and a whitelist; nothing is evaluated.
* :func:`broadcast_backward` runs y = x + b backward on the engine (the lecture's exercise 8).
* :func:`embedding_backward` runs an ``nn.Embedding`` lookup backward (exercise 12): a scatter-add.
* :func:`time_backends` runs one op on every backend on this machine and times it (bounded sizes).
* :func:`declaration_source` reads an op's declaration (its forward and VJP) from the engine with
  ``inspect.getsource``; :func:`check_custom_op` runs an op of your own, declared here the engine's way
  (a fixed menu, never typed code) but kept out of the engine's registry, against central differences
  and PyTorch.

No Streamlit here.
"""
from __future__ import annotations

import ast
import html
import inspect
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

import engine
from engine import ops as engine_ops
from explorer.explain.parser import parse_python
from engine.ops import RECORDED
from engine.tensor import Op, apply
from engine.tensor_data import IndexingError, TensorData, ViewError

from .kit.notes import NOTES
from .kit.reference import ReferenceFailed, in_reference_process
from .kit.presentation import Look
from .lecture_kit import readable
from explorer.explain.numbers import num, plain, sci

MAX_CHAIN_CHARS = 160
MAX_CALLS = 8
MAX_ELEMENTS = 48           # any view in a chain (expand can grow a tensor)
BASE_SHAPES = {"3x4": (3, 4), "2x3x2": (2, 3, 2), "4x3": (4, 3), "2x6": (2, 6), "12": (12,)}
METHODS = {"permute", "transpose", "view", "reshape", "expand", "contiguous", "unsqueeze", "squeeze", "flatten"}

CHAIN_PRESETS: dict[str, str] = {
    "x.permute(1, 0)": "permute: new strides, the same storage",
    "x.permute(1, 0).view(12)": "view of a non-contiguous tensor: the engine refuses",
    "x.permute(1, 0).contiguous().view(12)": "contiguous() copies, then view works",
    "x[1:, ::2]": "slicing: an offset and larger strides",
    "x[:, 1]": "one column: stride 4, offset 1",
    "x[:, :1].expand(3, 4)": "expand (broadcasting): stride 0 repeats an element",
    "x.view(2, 6)": "view of contiguous data: the same storage, new shape",
    "x.T.reshape(12)": "reshape copies when a view is impossible",
}
DEFAULT_CHAIN = "x.permute(1, 0)"


class ChainError(ValueError):
    """The chain text is not one the page runs (the message says why and where)."""


@dataclass
class Layout:
    """One tensor as the engine holds it (python backend: a ``TensorData``)."""
    expr: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    storage: list[float]           # the whole flat buffer
    storage_id: int                # id() of the storage object (to tell shared from copied)
    positions: list[int]           # storage position of each element, in row-major (logical) order
    values: list[float]            # the elements in logical order
    contiguous: bool
    shares_base: bool              # the storage is the very object x's data lives in
    op: str                        # the engine op that made it ("leaf" for x)


@dataclass
class ChainRun:
    base: Layout
    steps: list[Layout]
    error: str | None = None        # "ViewError: …" raised by the engine at call ``error_at``
    error_type: str | None = None
    error_at: str | None = None     # the call that raised

    @property
    def last(self) -> Layout:
        return self.steps[-1] if self.steps else self.base


def _layout(t: engine.Tensor, expr: str, base_storage) -> Layout:
    d: TensorData = t.data
    return Layout(expr, tuple(d.shape), tuple(d.strides), int(d.offset), list(d.storage), id(d.storage),
                  list(d.positions()), d.values(), d.is_contiguous(), d.storage is base_storage, t.op_name)


def _int(node: ast.AST, where: str) -> int:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_int(node.operand, where)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        if abs(node.value) > 64:
            raise ChainError(f"{where}: {node.value} is larger than this page allows (64)")
        return int(node.value)
    raise ChainError(f"{where}: only whole numbers are allowed here")


def _index_part(node: ast.AST, where: str):
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _int(p, where) for p in (node.lower, node.upper, node.step)]
        if parts[2] == 0:
            raise ChainError(f"{where}: a slice step cannot be 0")
        return slice(*parts)
    return _int(node, where)


def parse_chain(text: str) -> list[tuple[str, Any, str]]:
    """``"x.permute(1, 0)[0]"`` -> ``[("permute", (1, 0), ".permute(1, 0)"), ("index", 0, "[0]")]``.

    Raises:
        ChainError: anything but ``x`` followed by whitelisted calls with whole-number arguments,
            ``.T`` and integer / slice indexing; longer than the limits.
    """
    text = str(text).strip()
    if not text:
        raise ChainError("type a chain that starts with x, e.g. x.permute(1, 0)")
    if len(text) > MAX_CHAIN_CHARS:
        raise ChainError(f"at most {MAX_CHAIN_CHARS} characters")
    try:
        tree = parse_python(text, mode="eval")
    except SyntaxError as e:
        raise ChainError(f"not Python syntax (column {e.offset}): {e.msg}") from None
    calls: list[tuple[str, Any, str]] = []
    node = tree.body
    while True:
        where = f"column {getattr(node, 'col_offset', 0) + 1}"
        if isinstance(node, ast.Name):
            if node.id != "x":
                raise ChainError(f"{where}: the chain must start with x (got {node.id!r})")
            break
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute) or node.func.attr not in METHODS:
                name = node.func.attr if isinstance(node.func, ast.Attribute) else "a call"
                raise ChainError(f"{where}: {name!r} is not allowed; use {', '.join(sorted(METHODS))}")
            if node.keywords:
                raise ChainError(f"{where}: write the arguments without names")
            args = node.args
            if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
                args = args[0].elts
            values = tuple(_int(a, where) for a in args)
            calls.append((node.func.attr, values, f".{node.func.attr}({', '.join(map(str, values))})"))
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr != "T":
                raise ChainError(f"{where}: {node.attr!r} is not allowed (only .T and the calls listed)")
            calls.append(("T", (), ".T"))
            node = node.value
        elif isinstance(node, ast.Subscript):
            sl = node.slice
            parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            key = tuple(_index_part(p, where) for p in parts)
            shown = ", ".join(ast.unparse(p) for p in parts)  # (unparse of a tuple of slices adds brackets)
            calls.append(("index", key if len(key) > 1 else key[0], f"[{shown}]"))
            node = node.value
        else:
            raise ChainError(f"{where}: only x, method calls, .T and indexing are allowed")
        if len(calls) > MAX_CALLS:
            raise ChainError(f"at most {MAX_CALLS} calls")
    return calls[::-1]


def _apply(t: engine.Tensor, method: str, args) -> engine.Tensor:
    if method == "T":
        return t.T
    if method == "index":
        return t[args]
    if method == "contiguous":
        if args:
            raise ChainError("contiguous() takes no arguments")
        return t.contiguous()
    if method == "flatten":
        return t.flatten()
    if method == "squeeze":
        return t.squeeze(*args) if args else t.squeeze()
    if method in ("transpose", "unsqueeze"):
        return getattr(t, method)(*args)
    return getattr(t, method)(*args)


def run_chain(text: str, base_shape: tuple[int, ...] = (3, 4)) -> ChainRun:
    """Run the chain on ``x = arange(n).view(base_shape)`` (python backend) and record every layout.

    Raises:
        ChainError: the text is not accepted (nothing is run then).
    """
    if tuple(base_shape) not in BASE_SHAPES.values():
        raise ChainError(f"x has one of the shapes {', '.join(map(str, BASE_SHAPES.values()))}")
    calls = parse_chain(text)
    n = math.prod(base_shape)
    # requires_grad: every call is then recorded as an engine op (its name is shown)
    x = engine.tensor(np.arange(n, dtype=float), backend="python", requires_grad=True).view(*base_shape)
    storage = x.data.storage
    base = _layout(x, f"x = arange({n}).view{tuple(base_shape)}", storage)
    run = ChainRun(base, [])
    t, expr = x, "x"
    for method, args, shown in calls:
        expr += shown
        try:
            if method == "expand" and math.prod(args) > MAX_ELEMENTS:   # exact (np.prod wraps past int64)
                raise ChainError(f"expand to at most {MAX_ELEMENTS} elements on this page")
            t = _apply(t, method, args)
        except ChainError:
            raise
        except (ViewError, IndexingError, IndexError, ValueError, TypeError, RuntimeError) as e:
            run.error, run.error_type, run.error_at = str(e), type(e).__name__, expr
            break
        if t.numel() > MAX_ELEMENTS:
            raise ChainError(f"{expr} has {t.numel()} elements; this page draws at most {MAX_ELEMENTS}")
        run.steps.append(_layout(t, expr, storage))
    return run


def storage_labels(run: ChainRun) -> dict[int, str]:
    """A name for each distinct storage buffer of the chain: "x's storage", "copy 1", "copy 2" …"""
    labels: dict[int, str] = {}
    for lay in [run.base, *run.steps]:
        if lay.storage_id not in labels:
            labels[lay.storage_id] = "x's storage" if lay.shares_base else f"copy {len(labels)}"
    return labels


def chain_rows(run: ChainRun) -> list[dict]:
    """One row per tensor of the chain: shape, strides, offset, contiguity, which storage buffer."""
    labels = storage_labels(run)
    rows = []
    for lay in [run.base, *run.steps]:
        rows.append({"tensor": lay.expr, "engine op": lay.op, "shape": str(lay.shape), "strides": str(lay.strides),
                     "offset": str(lay.offset), "contiguous": "yes" if lay.contiguous else "no",
                     "storage": f"{labels[lay.storage_id]} ({len(lay.storage)} numbers)"})
    if run.error:
        rows.append({"tensor": run.error_at, "engine op": "—", "shape": "—", "strides": "—", "offset": "—",
                     "contiguous": "—", "storage": f"raised {run.error_type}"})
    return rows


# --- drawing ------------------------------------------------------------------------------------------------

COLOURED_POSITIONS = 12   # x's storage: one colour per position up to this many
UNREAD = "#e5e7eb"          # a storage box no element of the tensor reads
ONE_COLOUR = "#bae6fd"      # every read box of a longer storage (a copy after expand): the @labels identify them
INDEX_COLOUR = "#0f172a"    # position numbers and @labels: dark, not a faint grey, on a projector


def _hex(h: float, light: float, sat: float) -> str:
    import colorsys
    r, g, b = colorsys.hls_to_rgb(h, light, sat)
    return "#" + "".join(f"{round(255 * c):02x}" for c in (r, g, b))


# twelve hues 30 degrees apart, neighbours also apart in lightness and saturation: no two positions look alike
# (the old palette painted position 10 like position 0); the lightnesses and saturations are the ones whose closest
# pair (and the unread grey) lie furthest apart in CIELAB (ΔE ≈ 21) while the dark text keeps a contrast >= 5.5
_PALETTE = tuple(_hex(k / COLOURED_POSITIONS, *((0.76, 0.90) if k % 2 == 0 else (0.70, 0.50)))
                 for k in range(COLOURED_POSITIONS))


def storage_colours(n: int) -> list[str]:
    """The fill of each of ``n`` storage positions: a colour of its own for up to :data:`COLOURED_POSITIONS`
    (x's storage is 12 numbers), one colour for all in a longer storage (a copy of an expanded tensor, up to
    :data:`MAX_ELEMENTS`), where no palette stays readable and the ``@position`` labels say which box is which."""
    if n <= COLOURED_POSITIONS:
        return list(_PALETTE[:n])
    return [ONE_COLOUR] * n


#: the picture's tensor row, with the key to its cells' "@k" (the caption that explained it, under the pictures,
#: started at a projector's fold)
TENSOR_LABEL = "tensor (each cell: value, @k = storage position k)"


def picture_caption(run: ChainRun) -> str:
    """The line under the pictures: what the rows and the colours mean (one colour where the storage is longer
    than the palette)."""
    longest = max(len(lay.storage) for lay in [run.base, *run.steps])
    colour = ("each coloured like the storage box it reads" if longest <= COLOURED_POSITIONS else
              f"each coloured like the storage box it reads (a storage longer than {COLOURED_POSITIONS} numbers "
              "is drawn in one colour)")
    return ("Top row: the flat storage (position under each box; grey dotted boxes are not read by this tensor). "
            f"Below: the tensor's elements in row-major order, {colour}, with @position.")


def layout_figure(lay: Layout, look: Look, title: str | None = None) -> go.Figure:
    """Storage as a row of boxes (position under each) and the tensor's elements as a grid below.

    Each element box has the colour of the storage box it reads (:func:`storage_colours`: no two positions of
    x's storage alike) and says which position that is, so the strides can be read off the picture. Storage
    boxes no element reads are grey. In presentation mode the position numbers are as large as the values.
    """
    fig = go.Figure()
    used = set(lay.positions)
    n = len(lay.storage)
    colours = storage_colours(n)
    box = 1.0
    font = look.figure_font
    small = font if look.presenting else max(font - 3, 10)   # >= 14 px once a 1366 x 768 screen scales the page
    shapes, ann = [], []

    def rect(x0, y0, fill, dash=False):
        shapes.append(dict(type="rect", x0=x0, y0=y0, x1=x0 + box * 0.92, y1=y0 + box * 0.92,
                           line=dict(color="#334155", width=2 if not dash else 1, dash="dot" if dash else "solid"),
                           fillcolor=fill))

    def text(x, y, s, size, color="#0f172a", **where):
        ann.append(dict(x=x, y=y, text=s, showarrow=False, font=dict(size=size, color=color), **where))

    # storage row at the top
    top = 0.0
    # each row's name above its first box, left-aligned (beside the box, centred, it ran into the box)
    text(-0.04, top + 1.15, "storage", font, "#334155", xanchor="left")
    for p in range(n):
        rect(p, top, colours[p] if p in used else UNREAD, dash=p not in used)
        text(p + 0.46, top + 0.46, plain(lay.storage[p]), font)
        text(p + 0.46, top - 0.3, str(p), small, INDEX_COLOUR)
    # the tensor's elements: rows of the last dim; leading dims stacked (blocks for 3-D)
    shape = lay.shape or (1,)
    cols = shape[-1] if len(shape) >= 1 else 1
    rows_total = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    y0 = -2.4
    text(-0.04, y0 + 1.15, TENSOR_LABEL, font, "#334155", xanchor="left")
    k = 0
    for r in range(rows_total):
        gap = 0.35 * (r // shape[-2]) if len(shape) >= 3 else 0.0  # a gap between 2-D blocks
        y = y0 - r * box - gap
        for cidx in range(cols):
            p = lay.positions[k]
            rect(cidx, y, colours[p])
            text(cidx + 0.46, y + 0.64, plain(lay.values[k]), font)
            text(cidx + 0.46, y + 0.24, f"@{p}", small, INDEX_COLOUR)
            k += 1
    # the picture keeps boxes square: its height follows the width it will get (half a page) and the rows
    x_span = max(n, cols) + 0.6
    # the last row's boxes end at y0 - (rows - 1) (each row is drawn upwards from its y): a small margin under
    # them, not a row's worth of blank (that pushed the picture under a projector's first screen)
    y_lo, y_hi = y0 - (rows_total - 1) * box - 0.3 - (0.35 * ((rows_total - 1) // shape[-2]) if len(shape) >= 3
                                                       else 0), 1.6
    # px per unit as before the row names moved above their rows (the picture keeps its size on a projector)
    unit_px = (1920 * 0.47 if look.presenting else 1100 * 0.45) / (x_span + 1.0)  # (no sidebar when presenting)
    height = int(min(max((y_hi - y_lo) * unit_px + (60 if title else 20), 220), look.figure_height))
    fig.update_layout(shapes=shapes, annotations=ann, showlegend=False,
                      xaxis=dict(visible=False, range=[-0.3, x_span - 0.3], fixedrange=True),
                      yaxis=dict(visible=False, range=[y_lo, y_hi], scaleanchor="x", fixedrange=True),
                      height=height, margin=dict(l=5, r=5, t=50 if title else 10, b=5),
                      title=dict(text=title or "", font=dict(size=font + 1)), plot_bgcolor="white")
    return fig


def axes_words(axes) -> str:
    """``(0,)`` -> ``"axis 0"``, ``(0, 1)`` -> ``"axes 0 and 1"``: a lecture's words for the axes a sum runs over."""
    axes = [int(a) for a in axes]
    if not axes:
        return "no axis"
    if len(axes) == 1:
        return f"axis {axes[0]}"
    return "axes " + ", ".join(map(str, axes[:-1])) + f" and {axes[-1]}"


def storage_sentence(last: "Layout") -> str:
    """What the last view of a chain reads, in one sentence (Markdown): the same storage as x or a copy, and
    whether its elements are in storage order (``view`` works) or not (``view`` refuses, ``contiguous()`` copies)."""
    same = "the same storage object as x" if last.shares_base else "a storage of its own (copied)"
    order = ("" if last.contiguous else " — **not contiguous**: its elements are not in storage order, so `view` "
             "refuses it; `contiguous()` copies them into order.")
    return f"`{last.expr}` reads **{same}**{order}"


def matrix_frame(v):
    """A number, vector or matrix as a DataFrame of short strings (one row per matrix row)."""
    import pandas as pd
    arr = np.asarray(v, dtype=float)
    arr = arr.reshape(1, -1) if arr.ndim < 2 else arr
    return pd.DataFrame([[plain(x) for x in row] for row in arr])


# --- broadcasting's backward (exercise 8) ---------------------------------------------------------------

B_SHAPES = {"(2,)": (2,), "(1, 2)": (1, 2), "(3, 1)": (3, 1), "() scalar": ()}
EX8_X = [[0.5, -1.0], [2.0, 0.0], [1.5, 3.0]]
EX8_G = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


@dataclass
class BroadcastResult:
    b_shape: tuple[int, ...]
    b: Any
    y: Any
    g: Any
    x_grad: Any
    b_grad: Any
    summed_axes: tuple[int, ...]     # axes of y that b's gradient was summed over
    backward_ops: list[str] = field(default_factory=list)


def broadcast_backward(b_shape=(2,), g=EX8_G) -> BroadcastResult:
    """y = x + b with x of shape (3, 2) and b of ``b_shape``; ``y.backward(G)`` on the engine."""
    b_shape = tuple(b_shape)
    if b_shape not in B_SHAPES.values():
        raise ValueError(f"b's shape is one of {', '.join(B_SHAPES)}")
    b0 = np.arange(1, int(np.prod(b_shape)) + 1, dtype=float).reshape(b_shape) * 0.1
    x = engine.tensor(EX8_X, requires_grad=True, name="x")
    b = engine.tensor(b0, requires_grad=True, name="b")
    y = x + b
    with engine.recording() as ran:
        y.backward(engine.tensor(g))
    ops = ran.names
    # the axes where b was stretched: missing in front, or of size 1 where y's is not
    pad = (1,) * (y.ndim - len(b_shape)) + b_shape
    axes = tuple(i for i, (s, t) in enumerate(zip(pad, y.shape)) if s == 1 and t != 1)
    return BroadcastResult(b_shape, b0.tolist(), y.numpy().tolist(), np.asarray(g).tolist(), x.grad.numpy().tolist(),
                           b.grad.numpy().tolist(), axes, ops)


# --- embedding's backward (exercise 12) -----------------------------------------------------------------

VOCAB = 6
DIM = 2
MAX_IDS = 12


@dataclass
class EmbeddingResult:
    ids: list[int]
    upstream: list[list[float]]      # g_k, one row per looked-up position
    grad: list[list[float]]          # the table's gradient, VOCAB rows
    sources: dict[int, list[int]]    # row -> the positions k whose g_k landed there
    forward_op: str
    backward_ops: list[str]


def parse_ids(text: str) -> list[int]:
    """``"3, 1, 3"`` or ``"[[3, 1, 3]]"`` -> ``[3, 1, 3]``: word ids in range (no eval).

    Raises:
        ValueError: not whole numbers, out of range, or too many.
    """
    cleaned = str(text).replace("[", " ").replace("]", " ").replace(",", " ").split()
    if not cleaned:
        raise ValueError("type some word ids, e.g. 3, 1, 3")
    if len(cleaned) > MAX_IDS:
        raise ValueError(f"at most {MAX_IDS} ids")
    ids = []
    for tok in cleaned:
        if not tok.lstrip("-").isdigit():
            raise ValueError(f"{tok[:20]!r} is not a whole number")
        v = int(tok)
        if not 0 <= v < VOCAB:
            raise ValueError(f"id {v} is outside the table's rows 0..{VOCAB - 1}")
        ids.append(v)
    return ids


def embedding_backward(ids: list[int]) -> EmbeddingResult:
    """``nn.Embedding(VOCAB, DIM)`` looks up ``[ids]``; backward with g_k = [2k + 1, 2k + 2]."""
    emb = engine.nn.Embedding(VOCAB, DIM, seed=0)
    out = emb(np.array([ids]))                          # shape (1, len(ids), DIM): one sentence
    g = np.array([[[2 * k + 1, 2 * k + 2] for k in range(len(ids))]], dtype=float)
    with engine.recording() as ran:
        out.backward(engine.tensor(g))
    ops = ran.names
    sources: dict[int, list[int]] = {}
    for k, i in enumerate(ids):
        sources.setdefault(i, []).append(k)
    return EmbeddingResult(list(ids), g[0].tolist(), emb.weight.grad.numpy().tolist(), sources, out.op_name, ops)


def embedding_rows(res: EmbeddingResult) -> list[dict]:
    rows = []
    for r in range(VOCAB):
        src = res.sources.get(r, [])
        rows.append({"row": r, "gradient (engine)": "[" + ", ".join(plain(v) for v in res.grad[r]) + "]",
                     "= sum of": " + ".join(f"g{k}" for k in src) if src else "0 (not looked up)"})
    return rows


# --- one op on every backend -----------------------------------------------------------------------------

BENCH_OPS = {
    "matmul": ("A @ B, both n×n (the matmul kernel)", (8, 16, 32, 48)),
    "map_reduce": ("exp(x).sum() over n elements (map + reduce)", (1000, 10000, 50000)),
    "broadcast_backward": ("(x + b).sum().backward(), x of n×16 and b of 16 (zip + sum over the broadcast axis)",
                           (16, 64, 256)),
}
TIME_BUDGET_S = 3.0   # per backend: repeats stop once this is spent


@dataclass
class BackendTiming:
    backend: str
    seconds: float           # best of the repeats
    repeats: int
    max_diff: float          # max |result − numpy's result|
    note: str = ""


def _bench_fn(op: str, n: int, backend: str, rng: np.random.Generator):
    if op == "matmul":
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        ta, tb = engine.tensor(a, backend=backend), engine.tensor(b, backend=backend)
        return lambda: (ta @ tb).numpy()
    if op == "map_reduce":
        x = rng.standard_normal(n) * 0.1
        tx = engine.tensor(x, backend=backend)
        return lambda: tx.exp().sum().numpy()
    if op == "broadcast_backward":
        x, b = rng.standard_normal((n, 16)), rng.standard_normal(16)

        def run():
            tx = engine.tensor(x, backend=backend, requires_grad=True)
            tb = engine.tensor(b, backend=backend, requires_grad=True)
            (tx + tb).sum().backward()
            return tb.grad.numpy()
        return run
    raise KeyError(f"unknown op {op!r}; known: {sorted(BENCH_OPS)}")


def time_backends(op: str, n: int, backends: list[str] | None = None, repeats: int = 3) -> list[BackendTiming]:
    """Time ``op`` at size ``n`` on each available backend (same data), best of ``repeats``.

    The result is copied back to NumPy inside the timed call on every backend (on a GPU that waits for
    the kernel to finish). Each backend's result is compared with NumPy's.

    Raises:
        ValueError: a size that is not offered for the op.
    """
    if op not in BENCH_OPS:
        raise KeyError(f"unknown op {op!r}")
    if n not in BENCH_OPS[op][1]:
        raise ValueError(f"size {n} is not offered for {op}; choose from {BENCH_OPS[op][1]}")
    names = backends if backends is not None else engine.available_backends()
    results: list[BackendTiming] = []
    reference = None
    for name in ["numpy", *[b for b in names if b != "numpy"]]:
        fn = _bench_fn(op, n, name, np.random.default_rng(0))
        value = fn()  # warm-up (CUDA compiles its kernels on first use)
        best, done, spent = float("inf"), 0, 0.0
        while done < repeats and spent < TIME_BUDGET_S:
            t0 = time.perf_counter()
            value = fn()
            dt = time.perf_counter() - t0
            best, done, spent = min(best, dt), done + 1, spent + dt
        value = np.asarray(value, dtype=float)
        if reference is None:
            reference = value
        results.append(BackendTiming(name, best, done, float(np.max(np.abs(value - reference)))))
    return results


def timing_rows(timings: list[BackendTiming]) -> list[dict]:
    ref = next(t.seconds for t in timings if t.backend == "numpy")
    return [{"backend": t.backend, "time": f"{num(t.seconds * 1e3, 3)} ms", "× numpy's time": num(t.seconds / ref, 3),
             "max |difference| from numpy": sci(t.max_diff), "runs": t.repeats} for t in timings]


def backend_agreement(n: int = 1000, seed: int = 0, backends: list[str] | None = None) -> list[dict]:
    """Each kernel kind on every other backend against NumPy's, same data: bit for bit, or the largest
    difference (map: exp, zip: multiply, reduce: sum, matmul: 32 × 32)."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n) * 0.5, rng.standard_normal(n)
    A, B = rng.standard_normal((32, 32)), rng.standard_normal((32, 32))
    kernels = {"map: exp(x)": lambda b: engine.tensor(x, backend=b).exp(),
               "zip: x * y": lambda b: engine.tensor(x, backend=b) * engine.tensor(y, backend=b),
               "reduce: sum(y)": lambda b: engine.tensor(y, backend=b).sum(),
               "matmul: A @ B": lambda b: engine.tensor(A, backend=b) @ engine.tensor(B, backend=b)}
    names = [b for b in (backends if backends is not None else engine.available_backends()) if b != "numpy"]
    rows = []
    for kernel, run in kernels.items():
        ref = run("numpy").numpy()
        for b in names:
            got = run(b).numpy()
            same = bool(np.array_equal(got, ref))
            rows.append({"kernel": kernel, "backend": b, "bit for bit equal to numpy": "yes" if same else "no",
                         "max |difference|": sci(float(np.max(np.abs(got - ref))))})
    return rows


def backend_note(rows: list[dict]) -> str:
    """The sentence under :func:`backend_agreement`'s table, its claims read from that table: which kernels are
    bit for bit equal to NumPy's here and which differ, beside the notes' three backends."""
    differ = [k for k in KERNEL_KINDS if any(r["kernel"].startswith(k) and r["bit for bit equal to numpy"] != "yes"
                                             for r in rows)]   # on some backend
    equal = [k for k in KERNEL_KINDS if k not in differ and any(r["kernel"].startswith(k) for r in rows)]
    text = (f"The notes' three backends agree bit for bit on map / zip / reduce (matmul: "
            f"{sci(NOTES['backends_matmul'].value)}). Here ")
    if equal:
        text += f"{' / '.join(equal)} {'is' if len(equal) == 1 else 'are'} bit for bit equal to numpy"
    if differ:
        text += ("; " if equal else "") + (f"{' / '.join(differ)} differ{'s' if len(differ) == 1 else ''} at "
                                           "rounding level")
    why = {"map": "the `python` backend computes exp with Python's `math.exp`, which may differ from NumPy's "
                  "vectorised exp in the last bit",
           "reduce": "`python` sums left to right where NumPy sums pairwise",
           "matmul": "`python` accumulates each dot product left to right where NumPy's BLAS blocks and reorders it"}
    reasons = [why[k] for k in differ if k in why]
    return text + (" (" + "; ".join(reasons) + ")" if reasons else "") + "."


KERNEL_KINDS = ("map", "zip", "reduce", "matmul")


def timing_caption(timings: list[BackendTiming], op: str, n: int) -> str:
    """Under the timing table: the slowdown depends on the size (a per-element loop against a call's fixed cost),
    so a ratio here is for this op and this n, not the notes' figure at their sizes."""
    ref = next(t.seconds for t in timings if t.backend == "numpy")
    py = next((t for t in timings if t.backend == "python"), None)
    if py is None:
        return ""
    return (f"`python` took ×{num(py.seconds / ref, 2)} numpy's time for {op} at n = {n}. The ratio grows with n: "
            "python's loops cost per element while numpy's cost is mostly the call's fixed overhead at these sizes, "
            "so it is a figure for this op and size only, not comparable with the notes' slowdown of their backend "
            "measured at their own sizes.")


# --- the layer stack: one Linear call, followed down through the engine's layers --------------------------------

LAYERS = (   # (layer, the engine's module, what lives there) — top to bottom, as HW1/HW2's MiniTorch stacks them
    ("nn / optim", "engine/nn.py, engine/optim.py", "Module, Linear, Adam: parameters and the training loop's parts"),
    ("Tensor", "engine/tensor.py", "Tensor: a value, its history (op, inputs), backward()"),
    ("Function (ops)", "engine/ops.py", "Op: each primitive's forward and its VJP rule"),
    ("backend ops", "engine/backends/", "Backend: unary / binary / reduce / matmul kernels (python, numpy, cuda)"),
    ("TensorData", "engine/tensor_data.py", "TensorData: flat storage, shape, strides, offset"),
)
KERNEL_METHODS = ("unary", "binary", "where", "reduce", "matmul", "permute", "view", "reshape", "expand",
                  "contiguous", "gather", "scatter_add", "index", "index_add", "full")


@dataclass(frozen=True)
class LayerWalk:
    """What one ``nn.Linear(3, 2)`` call on a (4, 3) input did at each layer (pure-Python backend)."""
    module_call: str
    tensors_made: int                 # Tensors the forward pass created (the output and any intermediates)
    ops: tuple[str, ...]              # primitives applied (engine.trace_ops)
    kernel_calls: dict[str, int]      # backend methods called, by name
    out_shape: tuple[int, ...]
    out_strides: tuple[int, ...]
    out_storage: int                  # elements in the output's flat storage

    def per_layer(self) -> list[str]:
        kernels = ", ".join(f"{k} ×{n}" for k, n in sorted(self.kernel_calls.items()))
        return [self.module_call,
                f"{self.tensors_made} Tensor{'s' if self.tensors_made != 1 else ''} made, holding its op and inputs "
                "(the history backward() walks)",
                "ops applied: " + ", ".join(self.ops),
                "backend calls: " + kernels,
                f"the result's TensorData: shape {self.out_shape}, strides {self.out_strides}, "
                f"{self.out_storage} floats of storage"]


def layer_walk() -> LayerWalk:
    """Run ``nn.Linear(3, 2)(x)`` on a backend that counts its kernel calls, tracing the ops, and read the result's
    TensorData."""
    from engine.backends.python_backend import PythonBackend
    from engine.tensor import recording

    calls: dict[str, int] = {}

    def counted(name):
        method = getattr(PythonBackend, name)

        def call(self, *args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return method(self, *args, **kwargs)
        return call

    Counting = type("CountingPythonBackend", (PythonBackend,), {n: counted(n) for n in KERNEL_METHODS})
    be = Counting()
    layer = engine.nn.Linear(3, 2, backend=be, seed=0)
    x = engine.tensor(np.arange(12.0).reshape(4, 3), backend=be)
    calls.clear()                                     # count the call only, not the set-up
    with recording() as ran:
        y = layer(x)
    ops, made = ran.names, [r.out.unique_id for r in ran]
    data: TensorData = y._data
    return LayerWalk(f"nn.Linear(3, 2) called on x of shape {tuple(x.shape)}: Module.__call__ → forward → "
                     "F.linear", len(set(made)), tuple(ops), dict(calls), tuple(data.shape), tuple(data.strides),
                     len(data.storage))


def layer_stack_figure(walk: LayerWalk, look: Look) -> go.Figure:
    """The five layers as stacked boxes, top to bottom, each with its module and what the Linear call did there."""
    fig = go.Figure()
    n = len(LAYERS)
    font = look.figure_font
    for i, ((layer, module, what), did) in enumerate(zip(LAYERS, walk.per_layer())):
        y0 = n - 1 - i
        fig.add_shape(type="rect", x0=0, x1=10, y0=y0 + 0.08, y1=y0 + 0.92, line={"color": "#4a6fa5", "width": 2},
                      fillcolor="#eef3fb")
        fig.add_annotation(x=0.15, y=y0 + 0.5, xanchor="left", showarrow=False, align="left",
                           text=f"<b>{html.escape(layer)}</b><br>{html.escape(module)}", font={"size": font})
        fig.add_annotation(x=3.2, y=y0 + 0.5, xanchor="left", showarrow=False, align="left",
                           text=f"{html.escape(what)}<br><i>{html.escape(did)}</i>", font={"size": font - 1})
        if i:
            fig.add_annotation(x=1.4, y=y0 + 0.92, ax=1.4, ay=y0 + 1.08, xref="x", yref="y", axref="x", ayref="y",
                               showarrow=True, arrowhead=2, arrowwidth=2, arrowcolor="#4a6fa5", text="")
    fig.update_xaxes(visible=False, range=[0, 10])
    fig.update_yaxes(visible=False, range=[0, n])
    fig.update_layout(height=int(n * 4.2 * font), margin={"l": 4, "r": 4, "t": 4, "b": 4}, plot_bgcolor="white",
                      paper_bgcolor="white", showlegend=False)
    return fig


# --- how an op is defined (slide 42): the engine's own declarations, and one of your own --------------------

#: the engine declarations the page shows: one binary and one unary op (the classes themselves, not copies)
SHOWN_DECLARATIONS = {"add": engine_ops.Add, "mul": engine_ops.Mul, "exp": engine_ops.Exp, "tan": engine_ops.Tan}


@dataclass(frozen=True)
class DeclarationSource:
    """An op's declaration as the engine holds it, read with ``inspect.getsource``."""
    name: str
    whole: str          # the class
    forward: str        # the ``forward`` it runs (its own, or the one its base declares: Binary / Unary)
    forward_owner: str  # the class whose ``forward`` that is
    backward: str       # its ``vjp``


def declaration_source(op: type[Op]) -> DeclarationSource:
    """The source of ``op``'s declaration, its forward and its VJP, read from the engine's objects."""
    owner = next(c for c in op.__mro__ if "forward" in vars(c))
    return DeclarationSource(op.name, inspect.getsource(op), inspect.getsource(vars(owner)["forward"]),
                             owner.__name__, inspect.getsource(vars(op)["vjp"]))


def _unregistered(name: str):
    """Give an op declared here its name after the class statement: ``Op.__init_subclass__`` registers
    only a name written in the class body, so these ops never enter the engine's registry (another
    session never sees them) and are applied as objects with ``engine.tensor.apply``."""
    def named(cls: type[Op]) -> type[Op]:
        cls.name = name
        return cls
    return named


# forwards run on the backend's kernels (ctx.backend), like every primitive; VJPs use the interpreter k


@_unregistered("softplus")
class Softplus(Op):
    saves = (0,)
    formula = "x̄ = ȳ ⊙ σ(x) = ȳ / (1 + exp(−x))"

    @staticmethod
    def forward(ctx, a):
        be = ctx.backend
        one = be.array(1.0, be.dtype(a))
        return be.unary("log", be.binary("add", one, be.unary("exp", a)))

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        x = k.value(ctx.operands[0])
        return (k.div(g, k.add(k.const(1.0, x), k.exp(k.neg(x)))),)


@_unregistered("cube")
class Cube(Op):
    saves = (0,)
    formula = "x̄ = ȳ ⊙ 3x²"

    @staticmethod
    def forward(ctx, a):
        be = ctx.backend
        return be.binary("mul", be.binary("mul", a, a), a)

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        x = k.value(ctx.operands[0])
        return (k.mul(g, k.scale(k.mul(x, x), 3.0)),)


@_unregistered("softplus")
class SoftplusWrongBackward(Softplus):
    formula = "x̄ = ȳ ⊙ exp(x)   (wrong: the derivative of exp, not of softplus)"

    @classmethod
    def vjp(cls, ctx, g, k=RECORDED):
        return (k.mul(g, k.exp(k.value(ctx.operands[0]))),)


#: the menu of your own ops: key -> (the op, what it is)
CUSTOM_OPS: dict[str, tuple[type[Op], str]] = {
    "softplus": (Softplus, "softplus(x) = log(1 + exp x)"),
    "cube": (Cube, "cube(x) = x³"),
    "softplus_wrong": (SoftplusWrongBackward, "softplus with a wrong backward (exp x instead of σ(x))"),
}
CUSTOM_X = (-2.0, -0.5, 0.3, 1.2, 2.5)


@dataclass(frozen=True)
class CustomOpCheck:
    """One custom op checked against central differences (and PyTorch when installed)."""
    key: str
    source: str                 # inspect.getsource of the op class
    x: list[float]
    y: list[float]              # forward, on the engine
    grad: list[float]           # autodiff's gradient of <r, f(x)>
    central: list[float]        # the same by central differences, float64
    max_error: float            # max |autodiff − central difference|
    ok: bool
    torch_grad: list[float] | None = None
    torch_error: float | None = None
    torch_note: str = ""


def _apply_op(op: type[Op]):
    return lambda t: apply(op, (t,))


def check_custom_op(key: str, h: float = 1e-6, tol: float = 1e-6, with_torch: bool = True) -> CustomOpCheck:
    """Run op ``key`` of :data:`CUSTOM_OPS` forward and backward on the engine (float64) and compare its
    gradient of L = <r, f(x)> (r a fixed random cotangent, so a squared upstream gradient cannot pass)
    with central differences (L(x + h eᵢ) − L(x − h eᵢ)) / 2h; with PyTorch installed, with torch too.

    Raises:
        KeyError: unknown op.
    """
    op, _ = CUSTOM_OPS[key]
    f = _apply_op(op)
    x0 = np.array(CUSTOM_X, dtype=np.float64)
    r = np.random.default_rng(0).standard_normal(x0.shape)
    x = engine.tensor(x0, dtype="float64", requires_grad=True)
    y = f(x)
    (y * engine.tensor(r, dtype="float64")).sum().backward()
    grad = x.grad.numpy()

    def loss(v: np.ndarray) -> float:
        with engine.no_grad():
            return float(np.sum(f(engine.tensor(v, dtype="float64")).numpy() * r))

    central = np.empty_like(x0)
    for i in range(x0.size):
        e = np.zeros_like(x0)
        e[i] = h
        central[i] = (loss(x0 + e) - loss(x0 - e)) / (2 * h)
    err = float(np.max(np.abs(grad - central)))
    torch_grad = torch_error = None
    note = ""
    if with_torch:
        try:
            ref = in_reference_process("explorer.tensors_and_storage:torch_custom_op_grad", key, x0.tolist(), r.tolist())
        except ReferenceFailed as e:
            ref, note = None, f"PyTorch reference failed: {e}"
        if ref is None and not note:
            note = "PyTorch is not installed here: checked by central differences only."
        elif ref is not None:
            torch_grad = ref
            torch_error = float(np.max(np.abs(grad - np.array(ref))))
    return CustomOpCheck(key, inspect.getsource(op), x0.tolist(), y.numpy().tolist(), grad.tolist(),
                         central.tolist(), err, err <= tol, torch_grad, torch_error, note)


def torch_custom_op_grad(key: str, x: list[float], r: list[float]) -> list[float]:
    """The gradient of <r, f(x)> by PyTorch for the op the menu item ``key`` means (the right maths, even
    for the wrong-backward item); run in a child process by ``in_reference_process``."""
    import torch
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = xt ** 3 if key == "cube" else torch.nn.functional.softplus(xt)
    (y * torch.tensor(r, dtype=torch.float64)).sum().backward()
    return xt.grad.tolist()


def custom_op_rows(c: CustomOpCheck) -> list[dict[str, Any]]:
    """One row per element: x, f(x), autodiff, central difference, |difference| (and PyTorch's)."""
    rows = []
    for i, xi in enumerate(c.x):
        row = {"x": xi, "f(x)": c.y[i], "autodiff x̄": c.grad[i], "central difference": c.central[i],
               "|autodiff − central|": abs(c.grad[i] - c.central[i])}
        if c.torch_grad is not None:
            row["PyTorch x̄"] = c.torch_grad[i]
        rows.append(row)
    return rows
