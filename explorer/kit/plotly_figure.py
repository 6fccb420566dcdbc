"""The graph renderer: a Plotly figure with frames (play / pause / slider in the browser) from a FrameSet.

Plotly only, no Streamlit. Every page that draws a graph goes through :func:`figure_dict`:

1. each node becomes a box just big enough for its lines (``x3 = 1.5·x1``, the value, the adjoint in a
   second colour), measured conservatively from font size x characters (:func:`text_width`);
2. Graphviz ``dot`` places the boxes and routes the edges (:mod:`explorer.kit.graphviz_layout`), with
   room reserved for edge labels (the contribution sent back along each edge);
3. the figure draws boxes, Bézier edges with arrowheads and the texts in figure coordinates equal to
   pixels at ``scale`` (``layout.meta``), so that fonts and boxes always agree; frames carry only what
   changes (fills, texts, highlighted edges, the caption).

The figure fits a width budget (``width``, px): if the layered drawing is wider than that, it is
tried bottom-up, and only then shrunk, never below :data:`MIN_SCALE`. A drawing that still does not
fit is shown through a window of the budget's size at a readable scale that follows the step (each
frame centres the window on the nodes it highlights); pan and zoom show the rest.
"""
from __future__ import annotations

import re

import math
import unicodedata
from dataclasses import dataclass
from collections.abc import Callable, Sequence

import plotly.graph_objects as go

from explorer.explain.graph import Graph
from explorer.explain.parser import check_deadline

from .frames import Frame, FrameSet
from .geometry import polyline_rect_distance, segment_meets_rect
from .graphviz_layout import Box, Link, Placement, place

FONT = 14                 # node text (px at scale 1)
EDGE_FONT = 13            # edge labels
TITLE_FONT = 15
CHAR_W = 0.6              # a character is at most this many font sizes wide (conservative for Arial)
LINE_H = 1.3              # Plotly's line spacing (em)
PAD_X, PAD_Y = 10, 6      # inside a node box, around its text
MIN_SCALE = 0.85          # below this the drawing is shown through a window instead of shrinking
VIEW_SCALE = 1.0          # the scale of that window
DESIGN_WIDTH = 940        # px of a graph across the main column of a 1400 px window (sidebar open)
HALF_WIDTH = 460          # px of a graph in half of that column (pages 1 and 2), measured in Chromium
# px a rank gap is wider than the longest edge label when labels sit beside their edges (``plan``'s label_gap): the
# label's own 2 px either side and room to centre it between the boxes (at 6 the x̄6 → x̄5 label of the slide example
# touched x̄6 and went 25 px up)
LABEL_SLACK = 12
MAX_LABELLED_EDGES = 60   # graphs with more edges get no edge labels (the caption carries the numbers)
MAX_HEIGHT = 620          # px of the drawing (without title and slider) before it is shrunk
FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"

TEXT = "#111827"          # names and values
ADJOINT = "#9a3412"       # adjoints / tangents / contributions: the second colour
EDGE = "#6b7280"
PENDING = "#9ca3af"       # a backward edge whose contribution has not been sent yet (dashed)
HOT = "#c026d3"           # this step's edges: magenta, far from the adjoints' burnt orange and the active node's yellow
STATE_FILL = {"idle": "#f3f4f6", "computed": "#dbeafe", "waiting": "#fef3c7", "complete": "#dcfce7",
              "active": "#fde047", "leaf": "#86efac", "lost": "#fee2e2", "early": "#fecaca"}
STATE_ORDER = ("idle", "computed", "waiting", "complete", "active", "leaf", "lost", "early")
KIND_BORDER = {"input": "#1e40af", "op": "#374151", "group": "#6d28d9", "constant": "#6b7280"}

Point = tuple[float, float]


def text_width(text: str, font: float) -> float:
    """A conservative width (px) of one line: characters x ``CHAR_W`` x font (combining marks are free)."""
    n = sum(1 for ch in text if not unicodedata.combining(ch))
    return n * CHAR_W * font


@dataclass
class NodeLines:
    """Which lines a node has (head always; value and adjoint when any frame fills them)."""
    head: str
    value_chars: int
    adjoint_chars: int

    @property
    def count(self) -> int:
        return 1 + (self.value_chars > 0) + (self.adjoint_chars > 0)


@dataclass
class Drawing:
    """A graph ready to draw: what each node shows, where everything goes, and the scale."""
    node_ids: list[int]
    lines: list[NodeLines]
    kinds: list[str]
    placement: Placement
    scale: float
    width: int
    edge_labels: list[bool]        # per edge: a label box was reserved
    viewport: tuple[float, float] | None = None   # window (figure units) when the drawing does not fit
    label_at: list[Point | None] | None = None     # per edge: where its label goes (checked free)

    def slots(self, i: int) -> list[tuple[str, float]]:
        """(line kind, y) of node i's text lines, top to bottom."""
        nl = self.lines[i]
        kinds = ["head"] + (["value"] if nl.value_chars else []) + (["adjoint"] if nl.adjoint_chars else [])
        cx, cy = self.placement.centers[self.node_ids[i]]
        step = LINE_H * FONT
        top = cy + step * (len(kinds) - 1) / 2
        return [(k, top - j * step) for j, k in enumerate(kinds)]


def _longest(texts) -> int:
    return max((sum(1 for ch in line if not unicodedata.combining(ch)) for t in texts for line in t.split("\n")),
               default=0)


def plan(frameset: FrameSet, graph: Graph, width: int = DESIGN_WIDTH, rankdir: str = "auto",
         edge_labels: bool = True, max_height: int = MAX_HEIGHT, use_dot: bool = True,
         label_room: bool = True, label_gap: bool = False, group_labels: bool = False, rank_gap: float = 30.0
         ) -> Drawing:
    """Measure every node's text over all frames, place the graph, and choose the scale.

    Args:
        width: px available for the figure (the page column it is drawn in).
        rankdir: "LR", "BT" or "auto" (left to right when it fits, else bottom-up, whichever is larger).
        edge_labels: reserve room for the contribution sent back along each edge.
        max_height: px the drawing may take before it is shrunk.
        label_room: lay the graph out with room for each edge label (dot places it); False: a compact
            layout, each label beside its edge's middle where it is free (a backward graph on a projector).
        label_gap: with ``label_room`` False, ranks far enough apart for the labels: left to right, as far as the
            longest label is wide; top to bottom, two labels' height. With ``label_room``: ranks close (the label
            boxes dot places between them keep them apart), a short drawing.
        group_labels: with ``label_room``, dot makes room for the labels of edges between boxes of statements
            (groups) too (a network's backward layer view: each edge carries one contribution).
        rank_gap: px between ranks when no label needs room there (a graph without edge labels may go closer).
    """
    ids = frameset.node_ids
    heads = frameset.heads or [graph.node(i).name for i in ids]
    n = len(ids)
    frames = frameset.frames
    # the longest line each node shows over the whole animation (distinct texts only: fast)
    value_chars = [_longest(set(col)) for col in zip(*(f.node_text for f in frames))] if frames else [0] * n
    adjoint_chars = ([_longest(set(col)) for col in zip(*(f.node_adjoint for f in frames))]
                     if frames and all(f.node_adjoint for f in frames) else [0] * n)
    lines = [NodeLines(heads[i], value_chars[i], adjoint_chars[i]) for i in range(n)]
    boxes = []
    for i, nid in enumerate(ids):
        chars = max(_longest([heads[i]]), value_chars[i], adjoint_chars[i])
        w = chars * CHAR_W * FONT + 2 * PAD_X
        h = lines[i].count * LINE_H * FONT + 2 * PAD_Y
        boxes.append(Box(nid, math.ceil(w), math.ceil(h)))
    edges = frameset.edges or [(e.src, e.dst) for e in graph.edges]
    label_chars = [0] * len(edges)
    # boxes of statements (groups) get no room for labels unless asked (an edge between two boxes of a boxed
    # expression stands for several); a compact layout (label_room False: a backward graph) writes each beside its
    # edge, so the layer view's backward edges carry their numbers too
    if len(edges) > MAX_LABELLED_EDGES or (label_room and not group_labels
                                          and any(graph.node(i).kind == "group" for i in ids)):
        edge_labels = False
    if edge_labels and frames and all(f.edge_text for f in frames):
        label_chars = [max(map(len, set(col))) for col in zip(*(f.edge_text for f in frames))]
    # edges joining the same two nodes (x·x) get the same room, else dot draws an unlabelled one over a labelled one
    pair_chars: dict[tuple[int, int], int] = {}
    for k, e in enumerate(edges):
        pair_chars[e] = max(pair_chars.get(e, 0), label_chars[k])
    links = []
    for k, (s, d) in enumerate(edges):
        if pair_chars[(s, d)] and label_room:
            links.append(Link(s, d, (pair_chars[(s, d)] * CHAR_W * EDGE_FONT + 16, LINE_H * EDGE_FONT + 8)))
        else:
            links.append(Link(s, d))
    kinds = [graph.node(i).kind for i in ids]

    def fit(p: Placement) -> float:
        return min(1.0, (width - 20) / max(p.width + 20, 1), max_height / max(p.height + 20, 1))

    # "auto-reversed": a backward graph, its edges reversed: output first, at the left or at the top
    order = {"auto": ["LR", "BT"], "auto-reversed": ["RL", "TB"]}.get(rankdir, [rankdir])
    best: tuple[float, Placement] | None = None
    for rd in order:
        # a compact layout writes each label beside its edge: left to right, a rank gap as wide as the longest
        # label, so a short edge between two ranks has room for its label (x̄5 → x̄3 on a projector had none)
        gap = rank_gap
        if label_gap and not label_room and any(label_chars) and rd in ("LR", "RL"):
            gap = max(gap, max(label_chars) * CHAR_W * EDGE_FONT + LABEL_SLACK)
        elif label_gap and not label_room and any(label_chars):   # top to bottom: two label lines' height
            gap = max(gap, 2 * LINE_H * EDGE_FONT + 12)
        elif label_gap and label_room and any(label_chars):   # dot's label boxes hold the ranks apart already
            gap = 8.0
        p = place(boxes, links, rd, ranksep=gap, use_dot=use_dot)
        s = fit(p)
        if best is None or s > best[0] + 1e-9:
            best = (s, p)
        if s >= 1.0:
            break
    scale, placement = best
    viewport = None
    if scale < MIN_SCALE:  # too big to shrink legibly: a window that follows the step
        scale = VIEW_SCALE
        viewport = ((width - 20) / scale - 20, max_height / scale - 20)
    label_at = _free_label_spots(placement, label_chars)
    return Drawing(ids, lines, kinds, placement, scale, width, [at is not None for at in label_at], viewport,
                   label_at)


def _free_label_spots(p: Placement, label_chars: list[int]) -> list[Point | None]:
    """Where each edge label goes: dot's spot, or the nearest spot around it that no edge, node or
    earlier label touches (dot keeps other edges only roughly clear of a label). A label with no
    free spot nearby is left out (the caption and the table still carry the number)."""
    polys = [edge_polyline(e.points, e.tip) + [e.tip] for e in p.edges]
    extents = [(min(x for x, _ in q), min(y for _, y in q), max(x for x, _ in q), max(y for _, y in q)) for q in polys]
    boxes = [(c[0] - p.sizes[i][0] / 2, c[1] - p.sizes[i][1] / 2, c[0] + p.sizes[i][0] / 2, c[1] + p.sizes[i][1] / 2)
             for i, c in p.centers.items()]
    ends = [(e.src, e.dst) for e in p.edges]
    taken: list[tuple[float, float, float, float]] = []
    out: list[Point | None] = []
    offsets = [(0.0, 0.0)] + [(dx * r, dy * r) for r in (6, 12, 18, 26, 34, 42) for dx, dy in
                              ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))]
    for k, e in enumerate(p.edges):
        if not k % 32:
            check_deadline()   # the search grows with edges x boxes: layout work counts against the deadline
        at = e.label_at
        if at is None and label_chars[k] and polys[k]:  # laid out without room for it: beside its middle
            at = polys[k][len(polys[k]) // 2]
        if not label_chars[k] or at is None:
            out.append(None)
            continue
        w = label_chars[k] * CHAR_W * EDGE_FONT / 2 + 2
        h = LINE_H * EDGE_FONT / 2 + 1
        spot, fallback, fallback_margin = None, None, -math.inf
        # then just clear of its edge, beside it (a long label on a short vertical edge between wide boxes: the
        # fixed offsets never left the edge's line) or above / below it
        beside = [(sx * (w + 4), dy) for dy in (0, -6, 6, -12, 12, -18, 18, -24, 24) for sx in (1, -1)]
        beside += [(dx, sy * (h + 4)) for dx in (0, -12, 12) for sy in (-1, 1)]
        # around dot's spot, then (it was nearer another edge, or taken) beside the edge's own middle
        # and, where neither had a spot that is clearly this edge's, beside its quarters
        q = polys[k]
        bases = [at] + ([q[len(q) // 2]] if e.label_at is not None and q else []) + \
            ([q[len(q) // 4], q[3 * len(q) // 4]] if len(q) > 2 else [])
        # first (a compact layout: no spot of dot's) just clear of the edge's middle, either side of it across the
        # edge's direction there: a label touching its own edge is read as its own (the fixed offsets above left a
        # long label on a steep edge 10-16 px off it)
        touching = [] if e.label_at is not None else _touching(q, w, h)
        for (bx, by), (dx, dy) in [((0.0, 0.0), o) for o in touching] + \
                [(b, o) for b in bases for o in offsets + beside]:
            x, y = bx + dx, by + dy
            r = (x - w, y - h, x + w, y + h)
            if any(_overlap(r, b) for b in boxes) or any(_overlap(r, t) for t in taken):
                continue
            if any(_overlap(r, ext) and _hits(poly, r) for poly, ext in zip(polys, extents)):
                continue
            margin = _own_margin(k, r, polys, extents, ends)
            if margin < STRAY_MARGIN:   # as near another edge as its own: kept in case no spot is clearly its own
                if margin > fallback_margin:
                    fallback, fallback_margin = (x, y), margin
                continue
            spot = (x, y)
            break
        spot = spot or fallback   # every edge keeps its number: where it is most nearly its own edge's
        if spot is not None:
            taken.append((spot[0] - w, spot[1] - h, spot[0] + w, spot[1] + h))
        out.append(spot)
    return out


def _touching(q: list[Point], w: float, h: float, gap: float = 2.0) -> list[Point]:
    """Centres of a ``2w`` x ``2h`` label ``gap`` units clear of polyline ``q`` at its middle, on either side of it
    (across its direction there)."""
    if len(q) < 2:
        return []
    i = max(1, len(q) // 2)
    (x0, y0), (x1, y1) = q[i - 1], q[i]
    d = math.hypot(x1 - x0, y1 - y0)
    if d < 1e-9:
        return []
    nx, ny = -(y1 - y0) / d, (x1 - x0) / d
    reach = abs(nx) * w + abs(ny) * h + gap   # the rectangle's half-extent across the edge, then the gap
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    return [(mx + sx * nx * reach, my + sy * ny * reach) for sx, sy in ((1, 1), (-1, -1))]


STRAY_MARGIN = 3.0   # figure units a label must sit nearer its own edge than any other (the eye pairs it so)


def _own_margin(k: int, r, polys: list[list[Point]], extents, ends: list[tuple[int, int]]) -> float:
    """How much nearer its own edge ``k`` a label in ``r`` sits than any other edge (an edge joining the same two
    nodes, x·x's second operand, names the same pair), capped at :data:`STRAY_MARGIN`: a label is read as
    belonging to the nearest edge, so its own must be clearly the nearest."""
    own = polyline_rect_distance(polys[k], r)
    reach = own + STRAY_MARGIN
    nearest = reach
    for j, (poly, ext) in enumerate(zip(polys, extents)):
        if j == k or ends[j] == ends[k] or ext[0] > r[2] + reach or ext[2] < r[0] - reach or ext[1] > r[3] + reach or ext[3] < r[1] - reach:
            continue
        nearest = min(nearest, polyline_rect_distance(poly, r))
    return nearest - own


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _hits(poly: list[Point], r) -> bool:
    # a segment touches the rectangle when it is not entirely on one side of it
    for (x0, y0), (x1, y1) in zip(poly, poly[1:]):
        if max(x0, x1) < r[0] or min(x0, x1) > r[2] or max(y0, y1) < r[1] or min(y0, y1) > r[3]:
            continue
        if segment_meets_rect((x0, y0), (x1, y1), r):
            return True
    return False


# --- geometry ---------------------------------------------------------------------------------------


def _bezier(points: list[Point], per_segment: int = 8) -> list[Point]:
    out = [points[0]]
    for k in range(0, len(points) - 3, 3):
        p0, p1, p2, p3 = points[k:k + 4]
        for j in range(1, per_segment + 1):
            t = j / per_segment
            a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3
            out.append((a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]))
    return out


def edge_polyline(points: list[Point], tip: Point) -> list[Point]:
    """The drawn edge: the sampled spline, then straight on to the arrow's base."""
    return _bezier(points) if len(points) >= 4 else list(points)


def arrowhead(points: list[Point], tip: Point, length: float = 10.0, half: float = 4.0) -> list[Point]:
    """A triangle from the end of the spline to the tip on the head node's border."""
    bx, by = points[-1]
    dx, dy = tip[0] - bx, tip[1] - by
    d = math.hypot(dx, dy)
    if d < 1e-6:  # no room was left for the arrow: point along the last control segment
        (ax, ay) = points[-2] if len(points) > 1 else (bx - 1, by)
        dx, dy = bx - ax, by - ay
        d = math.hypot(dx, dy) or 1.0
        bx, by = tip[0] - dx / d * length, tip[1] - dy / d * length
    ux, uy = dx / d, dy / d
    base = (tip[0] - ux * length, tip[1] - uy * length)
    nx, ny = -uy * half, ux * half
    return [tip, (base[0] + nx, base[1] + ny), (base[0] - nx, base[1] - ny), tip]


def _r(v: float) -> float:
    return round(v, 1)


def _path(polys: list[list[Point]], digits: int = 1) -> tuple[list, list]:
    xs: list = []
    ys: list = []
    for poly in polys:
        xs += [round(p[0], digits) for p in poly] + [None]
        ys += [round(p[1], digits) for p in poly] + [None]
    return xs, ys


def _rect(center: Point, size: tuple[float, float], inset: float = 0.0) -> list[Point]:
    # four corners (frames repeat every box's outline: a plain rectangle keeps them small)
    (cx, cy), (w, h) = center, size
    w2, h2 = w / 2 - inset, h / 2 - inset
    return [(cx - w2, cy + h2), (cx + w2, cy + h2), (cx + w2, cy - h2), (cx - w2, cy - h2), (cx - w2, cy + h2)]


# --- the figure -------------------------------------------------------------------------------------


def _wrap(text: str, chars: int, max_lines: int = 2) -> str:
    words = text.split(" ")
    lines: list[str] = []
    cur = ""
    for w in words:
        if len(cur) + len(w) + 1 > chars and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(chars - 1, 1)].rstrip() + "…"
    return "<br>".join(_esc(t) for t in lines)


# a run of characters, each with a combining overline (the spaces between them inside the run: "Linear 1")
_OVERLINED = re.compile("([^\u0305\\s]\u0305(?:[ ]*[^\u0305\\s]\u0305)*)")


_OVERLINE_OPEN = '<span style="text-decoration:overline">'   # what _esc writes for a run, barred_text reads back
_OVERLINE_SPAN = re.compile(re.escape(_OVERLINE_OPEN) + "([^<]*)</span>")


def barred_text(drawn: str) -> str:
    """A figure's text with each overlined name written back with combining overlines (what ``bar`` gave):
    for readers of figure data (tests, the exported walk-through's text)."""
    return _OVERLINE_SPAN.sub(lambda m: "".join(ch if ch.isspace() else ch + "\u0305" for ch in m.group(1)), drawn)


def figure_text(s: str) -> str:
    """Text for any Plotly figure's title or label, as the graphs write theirs (:func:`_esc`): a barred name drawn
    as one overline, not as combining marks that Plotly's SVG text draws through the letters."""
    return _esc(s)


def _esc(s: str) -> str:
    """Text for a figure: escaped for Plotly's markup, and a name barred whole (the adjoint of a longer name,
    ``explorer.explain.graph.bar``: a combining overline on each character) drawn as one overline; Plotly's SVG
    text drew the marks as a broken line through the letters."""
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if "\u0305" not in s:
        return s
    return _OVERLINED.sub(lambda m: _OVERLINE_OPEN + m.group(1).replace("\u0305", "") + "</span>", s)


def figure_dict(frameset: FrameSet, graph: Graph, drawing: Drawing | None = None, *, width: int = DESIGN_WIDTH,
                rankdir: str = "auto", edge_labels: bool = True, max_height: int = MAX_HEIGHT,
                duration_ms: int = 700, title: bool = True, use_dot: bool = True,
                palette: dict[str, str] | None = None, edge_color: str = EDGE, whole_text_only: bool = False,
                pending_edges: bool = False, frames_on_read: bool = False, shown_edges_only: bool = False) -> dict:
    """The figure as a plain dict (no validation, fast), with one Plotly frame per Frame.

    Pass ``drawing`` (from :func:`plan`) to reuse a placement (e.g. the same graph under several
    traversal orders); otherwise it is planned here with ``width``, ``rankdir``, ``edge_labels``.
    ``layout.meta`` records the scale and fonts, so tests and :func:`~explorer.kit.figures.style_graph_figure`
    can read sizes back. ``palette`` maps each node state used by the frames to its fill (default: the
    backpropagation states of :data:`STATE_FILL`); every fill must keep :data:`TEXT` and :data:`ADJOINT`
    readable (WCAG AA). ``edge_color``: the edges' colour (the backward graph's are :data:`ADJOINT`).
    ``whole_text_only``: a one-frame drawing shown through a window (too big to shrink legibly) leaves out the
    text lines the window would cut (a projector: nobody pans; elsewhere the cut text is there to pan to).
    ``shown_edges_only`` (with ``whole_text_only``): nor does it draw an edge to a node wholly outside the window
    (a stub of it ran from a box toward nothing, at the window's edge) nor that edge's label.
    ``pending_edges``: every edge is drawn dashed in :data:`PENDING` ("edges") and, frame by frame, those that
    carry a label (the contribution sent along them) again in ``edge_color`` ("sent edges"): a backward graph
    shows which contributions are still to come.
    ``frames_on_read``: the frames as :class:`FramesOnRead`, each built when it is read: for a page that shows
    one frame per Step (never Play in the browser), so that the request builds none of them.
    """
    fill_of = palette or STATE_FILL
    d = drawing or plan(frameset, graph, width, rankdir, edge_labels, max_height, use_dot)
    p, s = d.placement, d.scale
    ids = d.node_ids
    n = len(ids)
    edges = frameset.edges or [(e.src, e.dst) for e in graph.edges]
    lines_e = [edge_polyline(e.points, e.tip) for e in p.edges]
    arrows = [arrowhead(e.points, e.tip) for e in p.edges]
    unseen: set[int] = set()   # edges to a node the still window does not show (shown_edges_only)
    if shown_edges_only and whole_text_only and d.viewport and len(frameset.frames) == 1 \
            and p.rankdir in ("BT", "TB"):
        unseen = _edges_out_of(_still_window(frameset, d, ids), p, ids)
        lines_e = [[] if k in unseen else q for k, q in enumerate(lines_e)]
        arrows = [[] if k in unseen else q for k, q in enumerate(arrows)]
    rects = [_rect(p.centers[i], p.sizes[i]) for i in ids]
    slot_xy: dict[str, tuple[list[int], list, list]] = {"head": ([], [], []), "value": ([], [], []),
                                                         "adjoint": ([], [], [])}
    for i in range(n):
        cx = p.centers[ids[i]][0]
        for kind, y in d.slots(i):
            idx, xs, ys = slot_xy[kind]
            idx.append(i)
            xs.append(_r(cx))
            ys.append(_r(y))
    spots = d.label_at or [e.label_at for e in p.edges]
    label_edges = [k for k, on in enumerate(d.edge_labels) if on and spots[k] is not None and k not in unseen]
    font, efont = FONT * s, EDGE_FONT * s

    line_xy = [_path([q]) for q in lines_e]
    arrow_xy = [_path([q]) for q in arrows]
    edge_slots: dict[tuple[int, int], list[int]] = {}
    for k, e in enumerate(edges):
        edge_slots.setdefault(e, []).append(k)

    def hot(f: Frame) -> tuple[dict, dict]:
        ks = sorted({k for e in set(f.active_edges) for k in edge_slots.get(e, ())})
        hx: list = []
        hy: list = []
        ax: list = []
        ay: list = []
        for k in ks:
            hx += line_xy[k][0]
            hy += line_xy[k][1]
            ax += arrow_xy[k][0]
            ay += arrow_xy[k][1]
        return ({"type": "scatter", "x": hx, "y": hy, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
                 "line": {"color": HOT, "width": 4 * s}},
                {"type": "scatter", "x": ax, "y": ay, "mode": "lines", "fill": "toself", "fillcolor": HOT,
                 "hoverinfo": "skip", "showlegend": False, "line": {"color": HOT, "width": 1}})

    rect_xy = [_path([r], 0) for r in rects]
    fill_cache: dict[tuple, list[dict]] = {}

    def fills(f: Frame) -> list[dict]:
        key = tuple(f.node_state)
        if key in fill_cache:
            return fill_cache[key]
        out = []
        for st in (fill_of if palette else STATE_ORDER):
            xs: list = []
            ys: list = []
            for i in range(n):
                if f.node_state[i] == st:
                    xs += rect_xy[i][0]
                    ys += rect_xy[i][1]
            out.append({"type": "scatter", "x": xs or [None], "y": ys or [None], "mode": "lines", "fill": "toself",
                        "fillcolor": fill_of[st], "line": {"width": 0}, "hoverinfo": "skip",
                        "name": f"fill:{st}", "showlegend": False})
        if not frames_on_read:   # built on read: kept by nobody, so the cache would only grow with each Step
            fill_cache[key] = out
        return out

    inner_xy = [_path([_rect(p.centers[i], p.sizes[i], 1.0)], 0) for i in ids]

    def outline(f: Frame, states: set[str], color: str, width_px: float, only_active: bool) -> dict:
        act = set(f.active_nodes)
        xs: list = []
        ys: list = []
        for i in range(n):
            if ids[i] in act if only_active else f.node_state[i] in states:
                xs += inner_xy[i][0]
                ys += inner_xy[i][1]
        return {"type": "scatter", "x": xs or [None], "y": ys or [None], "mode": "lines", "hoverinfo": "skip",
                "showlegend": False, "line": {"color": color, "width": width_px}}

    def texts(f: Frame) -> tuple[dict, dict, dict]:
        vi = slot_xy["value"][0]
        ai = slot_xy["adjoint"][0]
        val = {"type": "scatter", "text": [_esc(f.node_text[i].split("\n")[0]) for i in vi]}
        adj = {"type": "scatter", "text": [_esc(f.node_adjoint[i]) if f.node_adjoint else "" for i in ai]}
        lab = {"type": "scatter", "text": [_esc(f.edge_text[k]) if f.edge_text else "" for k in label_edges]}
        return val, adj, lab

    def sent(f: Frame) -> list[dict]:
        if not pending_edges:
            return []
        ks = [k for k, t in enumerate(f.edge_text or []) if t and k < len(line_xy)]
        lx = [v for k in ks for v in line_xy[k][0]]
        ly = [v for k in ks for v in line_xy[k][1]]
        ax = [v for k in ks for v in arrow_xy[k][0]]
        ay = [v for k in ks for v in arrow_xy[k][1]]
        return [{"type": "scatter", "x": lx or [None], "y": ly or [None], "mode": "lines", "hoverinfo": "skip",
                 "showlegend": False, "name": "sent edges", "line": {"color": edge_color, "width": 2.4 * s}},
                {"type": "scatter", "x": ax or [None], "y": ay or [None], "mode": "lines", "fill": "toself",
                 "fillcolor": edge_color, "hoverinfo": "skip", "showlegend": False, "name": "sent arrowheads",
                 "line": {"color": edge_color, "width": 1}}]

    def frame_data(f: Frame) -> list[dict]:
        h1, h2 = hot(f)
        val, adj, lab = texts(f)
        return [*sent(f), h1, h2, *fills(f), outline(f, {"lost", "early"}, "#b91c1c", 3 * s, False),
                outline(f, set(), "#111827", 3.5 * s, True), val, adj, lab]

    first = frameset.frames[0]
    drawn = [k for k in range(len(lines_e)) if k not in unseen]   # the "edges" trace's edges, in order
    ex, ey = _path([lines_e[k] for k in drawn])
    ax, ay = _path([arrows[k] for k in drawn])
    base = PENDING if pending_edges else edge_color
    static_edges = [
        {"type": "scatter", "x": ex, "y": ey, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
         "line": {"color": base, "width": (1.6 if base in (EDGE, PENDING) else 2.4) * s,
                  **({"dash": "dash"} if pending_edges else {})}, "name": "edges"},
        {"type": "scatter", "x": ax, "y": ay, "mode": "lines", "fill": "toself", "fillcolor": base,
         "hoverinfo": "skip", "showlegend": False, "line": {"color": base, "width": 1}, "name": "arrowheads"},
    ]
    dynamic = frame_data(first)
    dyn_start = len(static_edges)
    borders = []
    for kind, color in KIND_BORDER.items():
        members = [rects[i] for i in range(n) if d.kinds[i] == kind or (kind == "op" and d.kinds[i] not in KIND_BORDER)]
        xs, ys = _path(members)
        borders.append({"type": "scatter", "x": xs or [None], "y": ys or [None], "mode": "lines",
                        "hoverinfo": "skip", "showlegend": False, "name": f"box:{kind}",
                        "line": {"color": color, "width": (2.2 if kind == "input" else 1.4) * s,
                                 "dash": "dot" if kind == "constant" else "solid"}})
    hi, hx, hy = slot_xy["head"]
    vi, vx, vy = slot_xy["value"]
    ai, axs, ays = slot_xy["adjoint"]
    lx = [_r(spots[k][0]) for k in label_edges]
    ly = [_r(spots[k][1]) for k in label_edges]
    text_common = {"mode": "text", "hoverinfo": "skip", "showlegend": False, "cliponaxis": True,
                   "textposition": "middle center"}
    heads_trace = {"type": "scatter", "x": hx, "y": hy, "text": [_esc(d.lines[i].head) for i in hi],
                   "textfont": {"size": font, "color": TEXT, "family": FONT_FAMILY}, "name": "node", **text_common}
    val, adj, lab = dynamic[-3:]
    val.update({"x": vx, "y": vy, "textfont": {"size": font, "color": TEXT, "family": FONT_FAMILY},
                "name": "value", **text_common})
    adj.update({"x": axs, "y": ays, "textfont": {"size": font, "color": ADJOINT, "family": FONT_FAMILY},
                "name": "adjoint", **text_common})
    # customdata: each label's edge (its index in the "edges" trace), so a check can tell whose label it is
    at = {k: j for j, k in enumerate(drawn)}
    lab.update({"x": lx, "y": ly, "textfont": {"size": efont, "color": ADJOINT, "family": FONT_FAMILY},
                "name": "edge label", "customdata": [at[k] for k in label_edges], **text_common})
    hover_text = frameset.hover or [d.lines[i].head for i in range(n)]
    hover = {"type": "scatter", "x": [_r(p.centers[i][0]) for i in ids], "y": [_r(p.centers[i][1]) for i in ids],
             "mode": "markers", "marker": {"size": [max(8, min(p.sizes[i]) * s * 0.9) for i in ids],
                                           "symbol": "square", "opacity": 0},
             "hovertext": hover_text, "hoverinfo": "text", "showlegend": False, "name": "hover"}
    # trace order: static edges, dynamic (hot edges, fills, outlines), kind borders, texts, hover
    data = static_edges + dynamic[:-3] + borders + [heads_trace, val, adj, lab, hover]
    n_dyn_shapes = len(dynamic) - 3
    text_start = dyn_start + n_dyn_shapes + len(borders) + 1
    frame_traces = list(range(dyn_start, dyn_start + n_dyn_shapes)) + [text_start, text_start + 1, text_start + 2]
    chars = max(20, int((d.width - 30) / (CHAR_W * TITLE_FONT)))

    note = (f"<span style='color:#92400e'>{_esc(p.note)}</span>" if p.note else "")
    note_lines = (_wrap(p.note, chars, 3).count("<br>") + 1) if p.note else 0
    if p.note:
        note = "<br>".join(f"<span style='color:#92400e'>{ln}</span>" for ln in _wrap(p.note, chars, 3).split("<br>"))

    def caption(f: Frame) -> list[dict]:
        # annotations above the drawing, growing upwards into the top margin (sized for their lines):
        # a multi-line Plotly *title* is placed too high or too low depending on its anchor. The layout
        # note (no Graphviz, too big for it) is its own annotation: a stepped page that drops the caption
        # (the header above says it) keeps the note.
        out = []
        text = _wrap(f.caption, chars) if title else ""
        if text:
            out.append({"text": text, "xref": "paper", "yref": "paper", "x": 0, "y": 1, "xanchor": "left",
                        "yanchor": "bottom", "yshift": 6 + (note_lines * LINE_H * TITLE_FONT if note else 0),
                        "align": "left", "showarrow": False, "name": "caption",
                        "font": {"size": TITLE_FONT, "color": TEXT}})
        if note:
            out.append({"text": note, "xref": "paper", "yref": "paper", "x": 0, "y": 1, "xanchor": "left",
                        "yanchor": "bottom", "yshift": 6, "align": "left", "showarrow": False,
                        "name": "layout note", "font": {"size": TITLE_FONT, "color": TEXT}})
        return out

    margin = 10
    x_range = [-margin, _r(p.width + margin)]
    y_range = [-margin, _r(p.height + margin)]
    plot_h = (p.height + 2 * margin) * s
    windows = _windows(frameset, d) if d.viewport else None
    spare_px = 0.0   # a projector's still window trimmed to whole ranks: the height it gave back (bottom margin)
    if d.viewport:
        plot_h = (d.viewport[1] + 2 * margin) * s
        if whole_text_only and len(frameset.frames) == 1 and p.rankdir in ("BT", "TB"):
            windows = [_still_window(frameset, d, ids)]
            spare_px = float(math.floor(plot_h - (windows[0][1][1] - windows[0][1][0]) * s))
            plot_h -= spare_px
        x_range, y_range = windows[0]

    def axes(k: int) -> dict:
        if not windows:
            return {}
        xr, yr = windows[k]
        return {"xaxis": {"visible": False, "range": xr, "constrain": "range"},
                "yaxis": {"visible": False, "range": yr, "scaleanchor": "x", "scaleratio": 1}}

    def frame(k: int) -> dict:
        f = frameset.frames[k]
        return {"name": str(f.index), "traces": frame_traces, "data": frame_data(f),
                "layout": {"annotations": caption(f), **axes(k)}}

    if frames_on_read:
        frames: Sequence[dict] = FramesOnRead(len(frameset.frames), frame,
                                              (frameset, d, line_xy, arrow_xy, rect_xy, inner_xy, windows))
    else:
        frames = []
        for k in range(len(frameset.frames)):
            check_deadline()
            frames.append(frame(k))
    top = int(((2 if title else 0) + note_lines) * LINE_H * TITLE_FONT + 16)
    animated = len(frameset.frames) > 1
    bottom = (130 if animated else 8) + int(round(spare_px))
    layout = {
        "height": int(math.ceil(plot_h + top + bottom)), "annotations": caption(first),
        "margin": {"l": 8, "r": 8, "t": top, "b": bottom, "pad": 0},
        "xaxis": {"visible": False, "range": x_range, "constrain": "range"},
        "yaxis": {"visible": False, "range": y_range, "scaleanchor": "x", "scaleratio": 1},
        "plot_bgcolor": "#ffffff", "paper_bgcolor": "#ffffff", "dragmode": "pan", "hovermode": "closest",
        "font": {"family": FONT_FAMILY, "size": TITLE_FONT, "color": TEXT},
        "meta": {"renderer": "graph", "scale": s, "window": bool(d.viewport), "font": FONT, "edge_font": EDGE_FONT, "title_font": TITLE_FONT,
                 "design_width": d.width, "engine": p.engine, "rankdir": p.rankdir, "char_w": CHAR_W,
                 "line_h": LINE_H, "spare_px": int(round(spare_px))},
    }
    if unseen:   # the frame set's edges the "edges" trace leaves out (shown_edges_only), for readers of the figure
        layout["meta"]["edges_left_out"] = sorted(unseen)
    if windows and not animated and whole_text_only:
        _blank_cut_text(windows[0], p, ids, slot_xy, heads_trace, val, adj, lab, label_edges, spots)
    if animated:
        steps = [{"method": "animate", "label": str(f.index + 1),
                  "args": [[str(f.index)], {"mode": "immediate", "frame": {"duration": 0, "redraw": True},
                                            "transition": {"duration": 0}}]} for f in frameset.frames]
        # the buttons on one row under the drawing, the slider under them (side by side they collide in
        # a half-width column)
        layout["updatemenus"] = [{"type": "buttons", "showactive": False, "x": 0, "y": 0, "xanchor": "left",
                                  "yanchor": "top", "pad": {"t": 8, "r": 8}, "font": {"size": TITLE_FONT},
                                  "direction": "left", "buttons": [
                                      {"label": "▶ Play", "method": "animate",
                                       "args": [None, {"frame": {"duration": duration_ms, "redraw": True},
                                                       "fromcurrent": True, "transition": {"duration": 0}}]},
                                      {"label": "❚❚ Pause", "method": "animate",
                                       "args": [[None], {"mode": "immediate",
                                                         "frame": {"duration": 0, "redraw": False}}]}]}]
        layout["sliders"] = [{"active": 0, "steps": steps, "x": 0, "len": 1.0, "y": 0, "yanchor": "top",
                              "pad": {"t": 56}, "font": {"size": TITLE_FONT},
                              "currentvalue": {"prefix": "step ", "font": {"size": TITLE_FONT}}}]
    return {"data": data, "layout": layout, "frames": frames if animated else []}


class FramesOnRead(Sequence):
    """A figure's frames, each built from the frame set when it is read (``figure_dict(frames_on_read=True)``).

    A side-by-side page shows one frame per Step; building every frame of four orders' figures, forward and
    backward, and packing them was most of a 148-op Backprop orders request (2-4 s of CPU); one frame costs
    well under a millisecond to build. ``holds`` is what the builder reads (the frame set, the drawing and its
    paths), kept here so that the cache's size estimate sees it.
    """

    __slots__ = ("_n", "_build", "holds")

    def __init__(self, n: int, build: Callable[[int], dict], holds: tuple):
        self._n, self._build, self.holds = n, build, holds

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return self._build(i % self._n)


def _blank_cut_text(window, p, ids, slot_xy, heads_trace, val, adj, lab, label_edges, spots) -> None:
    """A window that follows the step cuts the boxes at its edges. A projector shows each node whole or not at
    all: a box the window cuts keeps no text (no line of it, so no box reads "scalar / adjoint ✓" without its
    name, and nothing is cut mid-word); the box and its edges stay (the graph goes on). An edge label that would
    cross the window's edge is left out too."""
    (x0, x1), (y0, y1) = window

    def inside(cx: float, cy: float, half_w: float, half_h: float) -> bool:
        return x0 <= cx - half_w and cx + half_w <= x1 and y0 <= cy - half_h and cy + half_h <= y1

    whole = {i for i, nid in enumerate(ids) if inside(*p.centers[nid], p.sizes[nid][0] / 2, p.sizes[nid][1] / 2)}
    for trace, kind in ((heads_trace, "head"), (val, "value"), (adj, "adjoint")):
        trace["text"] = [t if i in whole else "" for t, i in zip(trace["text"], slot_xy[kind][0])]
    lab["text"] = [t if inside(spots[k][0], spots[k][1], _drawn_chars(t) * CHAR_W * EDGE_FONT / 2,
                               LINE_H * EDGE_FONT / 2)
                   else "" for t, k in zip(lab["text"], label_edges)]


def _drawn_chars(text: str) -> int:
    """How many characters a figure's text draws: without its markup (a barred name's overline span) and the
    combining marks that take no room."""
    plain = re.sub(r"<[^>]+>", "", text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return sum(1 for ch in plain if not unicodedata.combining(ch))


def _edges_out_of(window, p, ids) -> set[int]:
    """The edges (indices into ``p.edges``) with a node wholly outside ``window``: drawn, they would run from a box
    toward nothing."""
    out = {nid for nid in ids if _wholly_outside(window, p, nid)}
    return {k for k, e in enumerate(p.edges) if e.src in out or e.dst in out}


def _wholly_outside(window, p, i: int) -> bool:
    """Whether box ``i`` lies wholly outside ``window``."""
    (x0, x1), (y0, y1) = window
    (a, b), (c, d) = _box_span(p, i, 0), _box_span(p, i, 1)
    return b <= x0 or a >= x1 or d <= y0 or c >= y1


def _whole_in(window, p, i: int) -> bool:
    """Whether box ``i`` lies wholly inside ``window``."""
    (x0, x1), (y0, y1) = window
    (a, b), (c, d) = _box_span(p, i, 0), _box_span(p, i, 1)
    return x0 <= a and b <= x1 and y0 <= c and d <= y1


def _whole_ranks(window, p, ids) -> tuple[list[float], list[float]]:
    """The window's vertical range pulled in past the boxes its top and bottom edges cut (a bottom-up or
    top-down drawing: those are whole ranks), so that a projector shows every rank it shows whole."""
    (x0, x1), (y0, y1) = window
    lo, hi = y0, y1
    for nid in ids:
        cy, h = p.centers[nid][1], p.sizes[nid][1]
        a, b = cy - h / 2, cy + h / 2
        if a < y0 < b:
            lo = max(lo, b + 2)
        if a < y1 < b:
            hi = min(hi, a - 2)
    if hi - lo < (y1 - y0) / 2:   # a box taller than half the window: keep the window as it was
        return window
    return [x0, x1], [_r(lo), _r(hi)]


def _step_nodes(f: Frame) -> set[int]:
    """The nodes a frame works on and those it talks to (the ends of its highlighted edges)."""
    return set(f.active_nodes or f.focus) | {n for e in f.active_edges for n in e}


def _still_window(frameset: FrameSet, d: Drawing, ids) -> tuple[list[float], list[float]]:
    """A projector's window on the one frame of ``frameset``: whole ranks (:func:`_whole_ranks`), then without an
    end rank whose boxes would stand there with none of their edges drawn (:func:`_trim_lonely`)."""
    p, f = d.placement, frameset.frames[0]
    window = _whole_ranks(_windows(frameset, d)[0], p, ids)
    step = _step_nodes(f)
    # a step that works on a node keeps it and the nodes it talks to; the first step, which highlights every leaf,
    # keeps the leaves that would not stand alone: one whose consumer lies beyond the window goes rather than show
    # a box that belongs to nothing
    keep = step if len(f.active_nodes) <= 1 else step - _lonely(window, p, ids)
    return _trim_lonely(window, p, ids, keep)


def _box_span(p, i: int, ax: int) -> tuple[float, float]:
    c, size = p.centers[i][ax], p.sizes[i][ax]
    return c - size / 2, c + size / 2


def _lonely(window, p, ids) -> set[int]:
    """The boxes shown whole in ``window`` none of whose edges is drawn: each edge's other end lies wholly outside
    (where :func:`_edges_out_of` draws no edge)."""
    nodes = [i for i in ids if i in p.centers]
    ends: dict[int, list[int]] = {i: [] for i in nodes}
    for e in p.edges:
        if e.src in ends and e.dst in ends:
            ends[e.src].append(e.dst)
            ends[e.dst].append(e.src)
    return {i for i in nodes if ends[i] and _whole_in(window, p, i)
            and all(_wholly_outside(window, p, o) for o in ends[i])}


def _trim_lonely(window, p, ids, keep: set[int]) -> tuple[list[float], list[float]]:
    """``window`` pulled in past a rank at its top or bottom edge that holds a box shown whole with none of its
    edges drawn (:func:`_lonely`), while no box of ``keep`` (the step's nodes) lies in that rank: at step 1 of the
    lecture's sentiment network on a projector fc2.weight and fc2.bias stood at the window's top with no edge, their
    Linear above it, like boxes of no graph. The window keeps at least half its height."""
    (x0, x1), (y0, y1) = window
    lo, hi = y0, y1
    while True:
        cur = ([x0, x1], [lo, hi])
        lonely = _lonely(cur, p, ids)
        shown = [i for i in ids if i in p.centers and _whole_in(cur, p, i)]
        if not lonely or not shown:
            break
        highest = max(shown, key=lambda i: _box_span(p, i, 1)[1])
        lowest = min(shown, key=lambda i: _box_span(p, i, 1)[0])
        moved = False
        for at_top in (True, False):
            # that end's rank: the boxes shown beside its outermost one (their heights overlap)
            band = ([i for i in shown if _box_span(p, i, 1)[1] > _box_span(p, highest, 1)[0]] if at_top else
                    [i for i in shown if _box_span(p, i, 1)[0] < _box_span(p, lowest, 1)[1]])
            if not lonely & set(band) or keep & set(band):
                continue
            new_lo, new_hi = ((lo, min(_box_span(p, i, 1)[0] for i in band) - 2) if at_top else
                              (max(_box_span(p, i, 1)[1] for i in band) + 2, hi))
            if new_hi - new_lo < (y1 - y0) / 2:
                continue
            lo, hi, moved = new_lo, new_hi, True
            break
        if not moved:
            break
    return [x0, x1], [_r(lo), _r(hi)]


WINDOW_SEARCH_WORK = 300_000   # boxes² x frames above which a window is centred on the step without the search
#                                for fewer cut boxes (it costs up to ~ boxes² per frame: a few ms for 50 boxes)


def _start_side(rankdir: str) -> tuple[int, int]:
    """(axis, sign) of the side where the drawing's edges start (the graph's inputs): axis 0 = x, 1 = y;
    sign +1 when they sit at the low end of that axis."""
    return {"BT": (1, 1), "TB": (1, -1), "LR": (0, 1), "RL": (0, -1)}.get(rankdir, (1, 1))


def _cuts(lo: float, hi: float, spans: list[tuple[float, float]]) -> int:
    """How many of the intervals ``spans`` the window [lo, hi] cuts (neither wholly inside nor wholly outside)."""
    return sum(1 for a, b in spans if (a < lo < b) or (a < hi < b))


def _place_1d(want: float, size: float, total: float, margin: float, spans: list[tuple[float, float]],
              must: list[tuple[float, float]]) -> float:
    """The low edge of a window ``size`` long on one axis: near ``want`` (at most half a window away), inside
    the drawing, keeping the ``must`` intervals (the step's nodes) whole, cutting as few ``spans`` (boxes) as it
    can; ties go to the nearest."""
    lo_min, lo_max = -margin, total + margin - size
    if lo_min >= lo_max:
        return (total - size) / 2
    pad = 4.0
    near = (want - size, want + 2 * size)   # only boxes a candidate window could touch count
    spans = [(a, b) for a, b in spans if b > near[0] and a < near[1]]
    cands = {min(max(want, lo_min), lo_max)}
    for a, b in spans:
        cands.update((a - pad, b + pad, a - pad - size, b + pad - size))
    best = None
    for c in cands:
        if not lo_min <= c <= lo_max or abs(c - want) > size / 2:
            continue
        hi = c + size
        score = (sum(1 for a, b in must if a < c or b > hi), _cuts(c, hi, spans), abs(c - want))
        if best is None or score < best[0]:
            best = (score, c)
    return best[1] if best else min(max(want, lo_min), lo_max)


def _windows(frameset: FrameSet, d: Drawing) -> list[tuple[list[float], list[float]]]:
    """Per frame, the (x, y) ranges of a window of ``d.viewport`` on the highlighted nodes (or, highlighting none,
    on the frame's ``focus``; kept where the previous frame had it when neither), inside the drawing.

    When the highlighted nodes do not fit in the window (the first frame highlights every leaf), the window
    shows those where the drawing starts (its inputs: the bottom of a bottom-up drawing), as the walk does.
    Near that spot, the window is moved (by at most half its size) to cut as few boxes as it can while keeping
    the highlighted ones whole: a box cut at the window's edge is a box the class cannot read."""
    p = d.placement
    vw, vh = d.viewport
    margin = 10
    size = (vw + 2 * margin, vh + 2 * margin)
    axis, sign = _start_side(p.rankdir)
    boxes = {i: (p.centers[i], p.sizes[i]) for i in d.node_ids if i in p.centers}
    search = len(boxes) ** 2 * len(frameset.frames) <= WINDOW_SEARCH_WORK

    def span(i: int, ax: int) -> tuple[float, float]:
        (c, s) = boxes[i][0][ax], boxes[i][1][ax]
        return c - s / 2, c + s / 2

    center = boxes[d.node_ids[-1]][0] if d.node_ids and d.node_ids[-1] in boxes else (0.0, 0.0)
    out = []
    def fits(nodes: list[int]) -> bool:   # whole in one window, with the 4 px that _place_1d leaves either side
        return all(max(span(i, ax)[1] for i in nodes) - min(span(i, ax)[0] for i in nodes) <= size[ax] - 8
                   for ax in (0, 1))

    for f in frameset.frames:
        act = [i for i in (f.active_nodes or f.focus) if i in boxes]
        # the nodes the step talks to (the other ends of its edges: an op's inputs, the targets of what a backward
        # step sends) are kept whole with it where they fit one window together (the padding mask that HW2's
        # first sum reads lay under the window)
        talk = [i for i in dict.fromkeys(n for e in f.active_edges for n in e) if i in boxes and i not in act]
        if act and talk and fits(act):
            mid = [sum(boxes[i][0][ax] for i in act) / len(act) for ax in (0, 1)]
            for i in sorted(talk, key=lambda i: math.dist(boxes[i][0], mid)):   # the nearest first, while they fit
                if fits(act + [i]):
                    act = act + [i]
        if act:
            # keep those that fit one window from the start side (the first highlighted along the walk's direction)
            first = min(act, key=lambda i: sign * boxes[i][0][axis])
            edge = span(first, axis)[0 if sign > 0 else 1]
            reach = size[axis] - 2 * margin
            act = [i for i in act if (span(i, axis)[1] - edge if sign > 0 else edge - span(i, axis)[0]) <= reach]
            center = (sum(boxes[i][0][0] for i in act) / len(act), sum(boxes[i][0][1] for i in act) / len(act))
        totals = (p.width, p.height)
        lows = [0.0, 0.0]
        for ax in (axis, 1 - axis):
            want = center[ax] - size[ax] / 2
            if not search:
                lo_min, lo_max = -margin, totals[ax] + margin - size[ax]
                lows[ax] = min(max(want, lo_min), lo_max) if lo_min < lo_max else (totals[ax] - size[ax]) / 2
                continue
            other = 1 - ax
            if ax == axis:   # the rank axis first: every box counts
                pool = list(boxes)
            else:            # then across: the boxes in the chosen band
                lo, hi = lows[other], lows[other] + size[other]
                pool = [i for i in boxes if span(i, other)[1] > lo and span(i, other)[0] < hi]
            lows[ax] = _place_1d(want, size[ax], totals[ax], margin, [span(i, ax) for i in pool],
                                 [span(i, ax) for i in act])
        out.append(([_r(lows[0]), _r(lows[0] + size[0])], [_r(lows[1]), _r(lows[1] + size[1])]))
    return out


def build_figure(frameset: FrameSet, graph: Graph, drawing: Drawing | None = None, **kw) -> go.Figure:
    """``figure_dict`` as a ``go.Figure`` (built without per-frame validation, which is slow)."""
    return go.Figure(figure_dict(frameset, graph, drawing, **kw), _validate=False)


def still_figure(graph: Graph, heads: dict[int, str], values: dict[int, str] | None = None,
                 notes: dict[int, str] | None = None, states: dict[int, str] | None = None,
                 palette: dict[str, str] | None = None, caption: str = "", **options) -> dict:
    """A graph drawn once (no animation): each node's head line, a value line and a note line (the
    note in the second colour), filled by ``states`` (keys of ``palette``; default "computed")."""
    ids = [n.id for n in graph.nodes]
    values, notes, states = values or {}, notes or {}, states or {}
    frame = Frame(0, "still", caption, [], [], [values.get(i, "") for i in ids],
                  [states.get(i, "computed") for i in ids], [notes.get(i, "") for i in ids])
    fs = FrameSet(ids, [frame], heads=[heads.get(i, graph.node(i).name) for i in ids],
                  edges=[(e.src, e.dst) for e in graph.edges], hover=[heads.get(i, graph.node(i).name) for i in ids])
    options.setdefault("edge_labels", False)
    options.setdefault("title", bool(caption))
    return figure_dict(fs, graph, palette=palette, **options)
