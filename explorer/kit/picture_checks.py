"""A picture tested like code: read a graph figure's data and count what a class could not read.

Works on the plain figure dict of :mod:`explorer.kit.plotly_figure` (after ``at_frame`` /
``style_graph_figure``, so it checks exactly what is sent to the browser). Texts are measured
conservatively: a character is ``char_w`` font sizes wide (combining marks are free), a line is
``line_h`` font sizes high; figure units are converted to pixels with ``layout.meta.scale``.

Counted:
- label-label overlaps (node texts, edge labels);
- label-node overlaps (a text leaving its own box, or touching another box; an edge label on a box);
- labels on edges (an edge passing through an edge label or through a node's text);
- edge labels astray (nearer another edge than their own, which the label's ``customdata`` names, unless that
  edge carries the same number);
- edges crossing a node they do not touch;
- edges without an arrowhead at a node border;
- parallel edges drawn on top of each other;
- text colour against its background below WCAG AA (4.5:1);
- the smallest font in px.
"""
from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass, field

from .geometry import Point, Rect, polyline_rect_distance, segment_meets_rect


@dataclass
class Report:
    label_label: list[str] = field(default_factory=list)
    label_node: list[str] = field(default_factory=list)
    label_edge: list[str] = field(default_factory=list)
    label_astray: list[str] = field(default_factory=list)
    edge_node: list[str] = field(default_factory=list)
    arrowheads_missing: list[str] = field(default_factory=list)
    parallel_coincide: list[str] = field(default_factory=list)
    low_contrast: list[str] = field(default_factory=list)
    min_font_px: float = math.inf
    n_nodes: int = 0
    n_edges: int = 0
    n_labels: int = 0

    @property
    def problems(self) -> dict[str, list[str]]:
        return {"label-label overlaps": self.label_label, "label-node overlaps": self.label_node,
                "labels on edges": self.label_edge, "edge labels astray": self.label_astray,
                "edges through nodes": self.edge_node,
                "edges without arrowhead": self.arrowheads_missing,
                "parallel edges coinciding": self.parallel_coincide, "low contrast texts": self.low_contrast}

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    def summary(self) -> str:
        bad = {k: len(v) for k, v in self.problems.items() if v}
        head = (f"{self.n_nodes} nodes, {self.n_edges} edges, {self.n_labels} texts, "
                f"smallest font {self.min_font_px:.1f} px")
        return head + (": OK" if not bad else ": " + ", ".join(f"{v} {k}" for k, v in bad.items()))


def _segments(xs: list, ys: list) -> list[list[Point]]:
    out: list[list[Point]] = []
    cur: list[Point] = []
    for x, y in zip(xs, ys):
        if x is None or y is None:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append((float(x), float(y)))
    if cur:
        out.append(cur)
    return out


def _bbox(poly: list[Point]) -> Rect:
    xs = [p[0] for p in poly]
    ys = [p[1] for p in poly]
    return min(xs), min(ys), max(xs), max(ys)


def _inter(a: Rect, b: Rect, tol: float = 0.0) -> bool:
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol


def _inside(a: Rect, b: Rect, tol: float = 0.5) -> bool:
    return a[0] >= b[0] - tol and a[1] >= b[1] - tol and a[2] <= b[2] + tol and a[3] <= b[3] + tol


def _shrink(r: Rect, d: float) -> Rect:
    return r[0] + d, r[1] + d, r[2] - d, r[3] - d


def _chars(text: str) -> int:
    return sum(1 for ch in text if not unicodedata.combining(ch))


def _plain_lines(text: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.split(r"<br\s*/?>", text or "")]


def luminance(color: str) -> float:
    c = color.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    rgb = [int(c[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours (1 to 21)."""
    la, lb = luminance(a), luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def _point_in_poly(pt: Point, poly: list[Point]) -> bool:
    x, y = pt
    inside = False
    for (x1, y1), (x2, y2) in zip(poly, poly[1:] + poly[:1]):
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
    return inside


def _mid(poly: list[Point]) -> Point:
    lengths = [math.dist(a, b) for a, b in zip(poly, poly[1:])]
    half = sum(lengths) / 2
    for (a, b), ln in zip(zip(poly, poly[1:]), lengths):
        if half <= ln and ln > 0:
            t = half / ln
            return a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])
        half -= ln
    return poly[-1]


def check_figure(fig: dict) -> Report:
    """Check what the figure shows now (its ``data``; frames are checked by calling this per frame
    after ``at_frame``)."""
    lay = fig.get("layout", {})
    meta = lay.get("meta") or {}
    if meta.get("renderer") != "graph":
        raise ValueError("not a figure of explorer.kit.plotly_figure (layout.meta.renderer != 'graph')")
    scale = float(meta["scale"])
    char_w, line_h = float(meta.get("char_w", 0.6)), float(meta.get("line_h", 1.3))
    data = fig["data"]
    by_name: dict[str, list[dict]] = {}
    for tr in data:
        by_name.setdefault(tr.get("name", ""), []).append(tr)
    rep = Report()
    boxes: list[Rect] = []
    polys: list[list[Point]] = []
    for tr in data:
        if str(tr.get("name", "")).startswith("box:"):
            for poly in _segments(tr["x"], tr["y"]):
                polys.append(poly)
                boxes.append(_bbox(poly))
    rep.n_nodes = len(boxes)
    fills: list[tuple[str, list[Point]]] = []
    for tr in data:
        if str(tr.get("name", "")).startswith("fill:"):
            for poly in _segments(tr["x"], tr["y"]):
                fills.append((tr["fillcolor"], poly))
    bg = lay.get("plot_bgcolor", "#ffffff")

    def background(pt: Point) -> str:
        for color, poly in fills:
            if _point_in_poly(pt, poly):
                return color
        return bg

    # --- texts
    labels: list[tuple[str, Rect, str, Point]] = []   # (kind, rect, text, centre)
    owners: list[tuple[int, Rect, str]] = []           # an edge label's edge, its rect and text
    for tr in data:
        kind = tr.get("name", "")
        if kind not in ("node", "value", "adjoint", "edge label") or "text" not in tr:
            continue
        size_px = float(tr.get("textfont", {}).get("size", 12))
        color = tr.get("textfont", {}).get("color", "#000000")
        for k, (x, y, t) in enumerate(zip(tr["x"], tr["y"], tr["text"])):
            lines = [ln for ln in _plain_lines(t)]
            if not any(ln.strip() for ln in lines):
                continue
            rep.min_font_px = min(rep.min_font_px, size_px)
            w = max(_chars(ln) for ln in lines) * char_w * size_px / scale
            h = line_h * size_px * len(lines) / scale
            rect = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            labels.append((kind, rect, " / ".join(lines), (x, y)))
            if kind == "edge label" and tr.get("customdata") is not None:
                owners.append((int(tr["customdata"][k]), rect, " / ".join(lines)))
            c = contrast(color if isinstance(color, str) else color[k], background((x, y)))
            if c < 4.5:
                rep.low_contrast.append(f"{' / '.join(lines)!r}: {c:.2f}")
    rep.n_labels = len(labels)
    tol = 0.5 / scale
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if _inter(labels[i][1], labels[j][1], tol):
                rep.label_label.append(f"{labels[i][2]!r} and {labels[j][2]!r}")
    for kind, rect, text, centre in labels:
        own = None
        if kind != "edge label":
            own = next((b for b in boxes if b[0] <= centre[0] <= b[2] and b[1] <= centre[1] <= b[3]), None)
            if own is None or not _inside(rect, own, tol):
                rep.label_node.append(f"{text!r} leaves its node")
        for b in boxes:
            if b is not own and _inter(rect, b, tol):
                rep.label_node.append(f"{text!r} on another node")
                break
    # --- edges and arrowheads
    edges = [seg for tr in by_name.get("edges", []) for seg in _segments(tr["x"], tr["y"])]
    arrows = [seg for tr in by_name.get("arrowheads", []) for seg in _segments(tr["x"], tr["y"])]
    rep.n_edges = len(edges)

    def nearest_box(pt: Point) -> int:
        def dist(b: Rect) -> float:
            dx = max(b[0] - pt[0], 0, pt[0] - b[2])
            dy = max(b[1] - pt[1], 0, pt[1] - b[3])
            return math.hypot(dx, dy)
        return min(range(len(boxes)), key=lambda k: dist(boxes[k])) if boxes else -1

    ends: list[tuple[int, int]] = []
    for k, line in enumerate(edges):
        arrow = arrows[k] if k < len(arrows) else None
        tip = arrow[0] if arrow else line[-1]
        src, dst = nearest_box(line[0]), nearest_box(tip)
        ends.append((src, dst))
        if arrow is None or len(arrow) < 3:
            rep.arrowheads_missing.append(f"edge {k}")
        else:
            b = boxes[dst]
            gap = math.hypot(max(b[0] - tip[0], 0, tip[0] - b[2]), max(b[1] - tip[1], 0, tip[1] - b[3]))
            on_border = gap <= 3 / scale and not (b[0] + 3 < tip[0] < b[2] - 3 and b[1] + 3 < tip[1] < b[3] - 3)
            base = ((arrow[1][0] + arrow[2][0]) / 2, (arrow[1][1] + arrow[2][1]) / 2)
            if not on_border or math.dist(base, line[-1]) > 12 / scale:
                rep.arrowheads_missing.append(f"edge {k}: arrow not at the head node's border")
        path = line + ([tip] if arrow else [])
        for j, b in enumerate(boxes):
            if j in (src, dst):
                continue
            inner = _shrink(b, 1.5 / scale)
            if any(segment_meets_rect(p, q, inner) for p, q in zip(path, path[1:])):
                rep.edge_node.append(f"edge {k} crosses node {j}")
        for kind, rect, text, centre in labels:
            inner = _shrink(rect, 1.0 / scale)
            if inner[0] < inner[2] and any(segment_meets_rect(p, q, inner) for p, q in zip(path, path[1:])):
                rep.label_edge.append(f"edge {k} through {text!r}")
    paths = [line + ([arrows[k][0]] if k < len(arrows) and arrows[k] else []) for k, line in enumerate(edges)]
    said = {k: text for k, _, text in owners}
    # read as belonging to the nearest edge: one joining the same nodes is as good, and so is one that carries the
    # same number (a fan's equal contributions: whichever edge the eye pairs it with, it reads right)
    for k, rect, text in owners:
        if k >= len(paths):
            continue
        own = polyline_rect_distance(paths[k], rect)
        near = [j for j, path in enumerate(paths) if j != k and ends[j] != ends[k] and said.get(j) != text
                and polyline_rect_distance(path, rect) <= own]
        if near:
            rep.label_astray.append(f"{text!r} (edge {k}) is as near edge {near[0]}")
    seen: dict[tuple[int, int], list[int]] = {}
    for k, key in enumerate(ends):
        seen.setdefault(key, []).append(k)
    for key, ks in seen.items():
        for a in range(len(ks)):
            for b in range(a + 1, len(ks)):
                if math.dist(_mid(edges[ks[a]]), _mid(edges[ks[b]])) * scale < 6:
                    rep.parallel_coincide.append(f"edges {ks[a]} and {ks[b]}")
    return rep


def check_all_frames(fig: dict, every: int = 1) -> Report:
    """:func:`check_figure` on every ``every``-th frame (as ``at_frame`` shows it); problems are merged."""
    from .figures import at_frame
    frames = fig.get("frames") or []
    if not frames:
        return check_figure(fig)
    total = Report()
    for k in list(range(0, len(frames), every)) + [len(frames) - 1]:
        r = check_figure(at_frame(fig, k))
        for key, items in r.problems.items():
            getattr(total, {"label-label overlaps": "label_label", "label-node overlaps": "label_node",
                            "labels on edges": "label_edge", "edge labels astray": "label_astray",
                            "edges through nodes": "edge_node",
                            "edges without arrowhead": "arrowheads_missing",
                            "parallel edges coinciding": "parallel_coincide",
                            "low contrast texts": "low_contrast"}[key]).extend(f"frame {k}: {i}" for i in items)
        total.min_font_px = min(total.min_font_px, r.min_font_px)
        total.n_nodes, total.n_edges, total.n_labels = r.n_nodes, r.n_edges, max(total.n_labels, r.n_labels)
    return total


def edge_label_gaps(fig: dict) -> list[tuple[str, int, float]]:
    """``(text, edge, gap)`` of each edge label the figure shows now: ``gap`` is how far (figure units, px at scale
    1) its box lies from its own edge (the ``customdata`` names it), measured as :func:`check_figure` measures texts.
    :func:`check_figure` lets a label sit anywhere nearer its own edge than another (or by another edge carrying the
    same number); a label read from the back row sits beside its edge, a few units from it."""
    meta = (fig.get("layout") or {}).get("meta") or {}
    if meta.get("renderer") != "graph":
        raise ValueError("not a figure of explorer.kit.plotly_figure (layout.meta.renderer != 'graph')")
    scale = float(meta["scale"])
    char_w, line_h = float(meta.get("char_w", 0.6)), float(meta.get("line_h", 1.3))
    edges = [seg for tr in fig["data"] if tr.get("name") == "edges" for seg in _segments(tr["x"], tr["y"])]
    out = []
    for tr in fig["data"]:
        if tr.get("name") != "edge label" or tr.get("customdata") is None:
            continue
        size = float(tr.get("textfont", {}).get("size", 12))
        for x, y, t, k in zip(tr["x"], tr["y"], tr["text"], tr["customdata"]):
            lines = [ln for ln in _plain_lines(t)]
            if not any(ln.strip() for ln in lines):
                continue
            w = max(_chars(ln) for ln in lines) * char_w * size / scale
            h = line_h * size * len(lines) / scale
            rect = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            out.append((" / ".join(lines), int(k), polyline_rect_distance(edges[int(k)], rect)))
    return out
