"""Node positions and edge curves from Graphviz ``dot`` (or a plain layered layout where it is missing).

Graphviz's ``dot`` is the layered layout the lecture's pictures are drawn with: it separates parallel
edges, routes edges around nodes, and reserves room for edge labels. We ask it for boxes of the exact
size our labels need (``fixedsize``) and read back, with ``-Tjson0``, each node's centre and each
edge's cubic Bézier control points, arrow tip and label position. All coordinates are in points,
which the figure uses as pixels at scale 1.

This module is the one way the project reaches Graphviz (layouts, SVG pictures, downloads):
:func:`find_dot` finds the program and :func:`run_dot` runs it; nothing else starts a Graphviz program.
Two programs are accepted, in this order: ``graphviz-pure`` (a self-contained ``dot`` from PyPI,
installed by ``requirements.txt``) and Debian's ``dot``. They are looked for first beside the running
interpreter (its environment's scripts folder: a virtual environment started as ``.venv/bin/python``
without being activated has its programs there, not on PATH), then on PATH. Results are cached by the
DOT text in a cache bounded by bytes. Without either program :func:`place` falls back to the explorer's
own layered layout (straight edges, parallel edges bent apart) and says so in ``Placement.note``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Sequence

from explorer.explain.parser import seconds_left

from .budget import ByteLRU
from explorer.explain.numbers import count, plain

DOT_PROGRAMS = ("graphviz-pure", "dot")
DOT_TIMEOUT_S = 20.0
DOT_NODE_LIMIT = 200      # dot's layout grows fast (a 640-node random DAG: 8 to 18 s): bigger graphs
                          # get the plain layout; the pages collapse them into groups before that
DOT_WORK_LIMIT = 1200     # nodes + the virtual nodes long edges need (dot's own cost measure)
# A picture Graphviz draws whole (every value and contribution written on it, ``dot -Tsvg``) runs once per request:
# its dot_work, estimated before dot starts, is bounded so the drawing stays within the request's 2 s. Measured
# (graphviz-pure, the chain programs of benchmarks/request_bounds.py): work 2,993 (111 nodes) 0.3 s, 4,161 (131)
# 0.6 s, 5,521 (151) 1.3 s, 9,761 (201) 5.6 s, 21,841 (301) over 30 s; a 496-op program took dot's whole 20 s.
SVG_WORK_LIMIT = 3000
TOO_BIG_NOTE = ("This graph has {n} nodes, too many to lay out with Graphviz on every page view, so this is a "
                "plainer layout; the collapsed view (groups of nodes) is drawn with Graphviz.")
CACHE_BYTES = 32 * 2 ** 20
NO_DOT_NOTE = ("Graphviz was not found, so this is a plainer layout (edges may cross nodes). "
               "`pip install -r requirements.txt` installs graphviz-pure.")

Point = tuple[float, float]


@dataclass(frozen=True)
class Box:
    """A node to place: its id and the size (px at scale 1) its label needs."""
    id: int
    width: float
    height: float


@dataclass(frozen=True)
class Link:
    """An edge to route; ``label`` is the size of the label box to reserve beside it (or None)."""
    src: int
    dst: int
    label: tuple[float, float] | None = None


@dataclass
class EdgePath:
    """One routed edge: cubic Bézier control points (3k+1, tail to head), the arrow tip on the head
    node's border, and the centre of its label box (when one was reserved)."""
    src: int
    dst: int
    points: list[Point]
    tip: Point
    label_at: Point | None = None


@dataclass
class Placement:
    """Where everything goes. y grows upwards (as in Graphviz and Plotly)."""
    centers: dict[int, Point]
    sizes: dict[int, tuple[float, float]]
    edges: list[EdgePath]          # aligned with the links given to :func:`place`
    width: float
    height: float
    engine: str                    # the program used, or "fallback"
    rankdir: str
    note: str = ""
    clusters: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)

    def nbytes(self) -> int:
        """Rough size in memory (for the byte-bounded cache)."""
        pts = sum(len(e.points) + 2 for e in self.edges)
        return 200 + 120 * len(self.centers) + 56 * pts + 100 * len(self.edges)


class GraphvizUnavailable(RuntimeError):
    """No Graphviz program was found (see :func:`find_dot`)."""


class GraphvizFailed(RuntimeError):
    """A Graphviz program ran but gave no usable output (its message, shortened)."""


class GraphvizTimedOut(GraphvizFailed):
    """A Graphviz program ran past its time and was stopped."""


class PictureTooBig(RuntimeError):
    """A picture whose estimated Graphviz work exceeds the request's budget (:data:`SVG_WORK_LIMIT`); nothing ran."""


def draw_svg(source: str, boxes: Sequence[Box], links: Sequence[Link], seconds: float) -> bytes:
    """``dot -Tsvg`` of ``source`` (the graph of ``boxes`` and ``links``), its cost estimated before it runs.

    Args:
        seconds: the most dot may run (its CPU is the child's, which no deadline of the request sees).
    Raises:
        PictureTooBig: :func:`dot_work` of the graph is over :data:`SVG_WORK_LIMIT` (dot is not started).
        GraphvizUnavailable, GraphvizFailed, GraphvizTimedOut: as :func:`run_dot`.
    """
    work = dot_work(boxes, links)
    if work > SVG_WORK_LIMIT:
        raise PictureTooBig(f"{len(boxes)} nodes and {len(links)} edges; Graphviz's work {count(work)}, at most "
                            f"{count(SVG_WORK_LIMIT)}")
    return run_dot(source, "svg", timeout=seconds)


def _interpreter_dirs() -> list[str]:
    """Folders where the running interpreter's environment installs programs, in order.

    ``sys.executable``'s own folder is taken as it is (not resolved: a virtual environment's ``python``
    is a link into the base interpreter's folder), then the scripts folders of the install schemes.
    """
    found: list[str] = []
    candidates = [os.path.dirname(sys.executable) if sys.executable else ""]
    for scheme in (None, f"{os.name}_user"):
        try:
            candidates.append(sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts"))
        except KeyError:
            continue
    for d in candidates:
        if d and os.path.isdir(d) and d not in found:
            found.append(d)
    return found


def find_dot() -> str | None:
    """Path of the first Graphviz program found, or None.

    Order: ``AUTODIFF_DOT`` (a program name or path; ``none`` disables Graphviz), then each of
    :data:`DOT_PROGRAMS` beside the running interpreter, then each on PATH.
    """
    forced = os.environ.get("AUTODIFF_DOT")
    if forced:
        return None if forced.lower() == "none" else shutil.which(forced)
    for directory in _interpreter_dirs():
        for prog in DOT_PROGRAMS:
            path = os.path.join(directory, prog)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    for prog in DOT_PROGRAMS:
        path = shutil.which(prog)
        if path:
            return path
    return None


def run_dot(source: str, fmt: str = "svg", timeout: float | None = None) -> bytes:
    """Run Graphviz on DOT text and return its output in ``fmt`` (``svg``, ``json0``, ``plain``, ...).

    Args:
        timeout: seconds dot may run; default: what is left of the request's deadline (dot's CPU is not the
            request thread's, so the deadline cannot see it), at least 0.5 s and at most ``DOT_TIMEOUT_S``.
    Raises:
        GraphvizUnavailable: no Graphviz program was found.
        GraphvizFailed: the program failed or could not be started (GraphvizTimedOut: ran past ``timeout``).
    """
    if timeout is None:
        left = seconds_left()
        timeout = DOT_TIMEOUT_S if left is None else max(0.5, min(DOT_TIMEOUT_S, left))
    prog = find_dot()
    if prog is None:
        raise GraphvizUnavailable("Graphviz was not found")
    try:
        run = subprocess.run([prog, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise GraphvizTimedOut(f"{os.path.basename(prog)} ran past {plain(timeout)} s and was stopped") from e
    except (OSError, subprocess.SubprocessError) as e:
        raise GraphvizFailed(f"{os.path.basename(prog)} could not run ({type(e).__name__})") from e
    if run.returncode != 0 or not run.stdout:
        raise GraphvizFailed(run.stderr.decode(errors="replace")[:300] or f"exit code {run.returncode}")
    return run.stdout


# a memo of a pure function (same DOT text, same answer); the app's one byte-bounded LRU class
_CACHE = ByteLRU(CACHE_BYTES)


def cache() -> ByteLRU:
    """The layout cache (for tests and benchmarks)."""
    return _CACHE


def _inch(px: float) -> str:
    return f"{px / 72.0:.4f}"


def dot_source(boxes: Sequence[Box], links: Sequence[Link], rankdir: str = "LR", nodesep: float = 18,
               ranksep: float = 30, clusters: dict[str, list[int]] | None = None) -> str:
    """The DOT text :func:`place` runs (sizes in px = points)."""
    lines = ["digraph G {",
             f'  graph [rankdir={rankdir}, nodesep={_inch(nodesep)}, ranksep={_inch(ranksep)}, '
             'splines=spline, outputorder=edgesfirst, pad=0.05];',
             '  node [shape=box, fixedsize=true, label="", margin=0];',
             "  edge [arrowsize=1.0];"]
    in_cluster = set()
    for k, (name, members) in enumerate((clusters or {}).items()):
        lines.append(f"  subgraph cluster_{k} {{ margin=12;")
        for m in members:
            in_cluster.add(m)
        lines.extend(f"    n{b.id} [width={_inch(b.width)}, height={_inch(b.height)}];"
                     for b in boxes if b.id in set(members))
        lines.append("  }")
    for b in boxes:
        if b.id not in in_cluster:
            lines.append(f"  n{b.id} [width={_inch(b.width)}, height={_inch(b.height)}];")
    for e in links:
        if e.label is None:
            lines.append(f"  n{e.src} -> n{e.dst};")
        else:
            w, h = e.label
            lines.append(f'  n{e.src} -> n{e.dst} [label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" '
                         f'CELLPADDING="0"><TR><TD FIXEDSIZE="TRUE" WIDTH="{int(w + 1)}" HEIGHT="{int(h + 1)}">'
                         f'</TD></TR></TABLE>>];')
    lines.append("}")
    return "\n".join(lines)


def _pt(s: str) -> Point:
    x, y = s.split(",")[:2]
    return float(x), float(y)


def _parse(text: str, boxes: Sequence[Box], links: Sequence[Link], engine: str, rankdir: str,
           cluster_names: list[str]) -> Placement:
    d = json.loads(text)
    bb = [float(v) for v in d["bb"].split(",")]
    by_gvid: dict[int, int] = {}
    centers: dict[int, Point] = {}
    sizes = {b.id: (b.width, b.height) for b in boxes}
    clusters: dict[str, tuple[float, float, float, float]] = {}
    for o in d.get("objects", []):
        name = o.get("name", "")
        if name.startswith("cluster_") and "bb" in o:
            k = int(name.split("_", 1)[1])
            clusters[cluster_names[k]] = tuple(float(v) for v in o["bb"].split(","))  # type: ignore[assignment]
            continue
        if "pos" not in o or not name.startswith("n"):
            continue
        nid = int(name[1:])
        by_gvid[o["_gvid"]] = nid
        centers[nid] = _pt(o["pos"])
    raw = sorted(d.get("edges", []), key=lambda e: e["_gvid"])
    if len(raw) != len(links):
        raise RuntimeError(f"dot returned {len(raw)} edges for {len(links)}")
    # dot numbers edges in its own order: match them to ours by (tail, head), keeping the order of
    # parallel edges among themselves
    pending: dict[tuple[int, int], list[dict]] = {}
    for e in raw:
        pending.setdefault((by_gvid[e["tail"]], by_gvid[e["head"]]), []).append(e)
    edges: list[EdgePath] = []
    for link in links:
        queue = pending.get((link.src, link.dst))
        if not queue:
            raise RuntimeError(f"dot lost the edge {link.src} -> {link.dst}")
        e = queue.pop(0)
        tip = None
        pts: list[Point] = []
        for tok in e["pos"].split():
            if tok.startswith("e,"):
                tip = _pt(tok[2:])
            elif tok.startswith("s,"):
                continue
            else:
                pts.append(_pt(tok))
        if tip is None:
            tip = pts[-1]
        lp = _pt(e["lp"]) if "lp" in e else None
        edges.append(EdgePath(link.src, link.dst, pts, tip, lp))
    return Placement(centers, sizes, edges, bb[2] - bb[0], bb[3] - bb[1], engine, rankdir, clusters=clusters)


def place(boxes: Sequence[Box], links: Sequence[Link], rankdir: str = "LR", nodesep: float = 18,
          ranksep: float = 30, clusters: dict[str, list[int]] | None = None, use_dot: bool = True) -> Placement:
    """Lay the graph out with Graphviz ``dot`` (cached), or with the plain fallback.

    Args:
        boxes: nodes with the size their label needs (px).
        links: edges in drawing order; parallel edges are allowed and come back as distinct curves.
        rankdir: "LR" (left to right) or "BT" (bottom-up, as the slides draw networks).
        nodesep, ranksep: gaps between nodes of a rank and between ranks (px).
        clusters: optional named groups of node ids drawn inside a frame.
        use_dot: False forces the fallback (for tests of the page without Graphviz).

    Returns:
        a :class:`Placement`; ``engine == "fallback"`` and ``note`` set when dot was not used.
    """
    if len(boxes) > DOT_NODE_LIMIT or dot_work(boxes, links) > DOT_WORK_LIMIT:
        return fallback_place(boxes, links, rankdir, nodesep, ranksep, TOO_BIG_NOTE.format(n=len(boxes)))
    src = dot_source(boxes, links, rankdir, nodesep, ranksep, clusters)
    prog = find_dot() if use_dot else None
    if prog is None:
        return fallback_place(boxes, links, rankdir, nodesep, ranksep, NO_DOT_NOTE)
    key = os.path.basename(prog) + "\n" + src
    found, hit = _CACHE.get(key)
    if found:
        return hit
    try:
        out = run_dot(src, "json0")
        placed = _parse(out.decode(), boxes, links, os.path.basename(prog), rankdir, list(clusters or {}))
    except (GraphvizUnavailable, GraphvizFailed, RuntimeError, ValueError, KeyError) as e:
        return fallback_place(boxes, links, rankdir, nodesep, ranksep,
                              f"Graphviz failed ({type(e).__name__}), so this is a plainer layout.")
    _CACHE.put(key, placed, placed.nbytes() + len(key))
    return placed


def dot_work(boxes: Sequence[Box], links: Sequence[Link]) -> int:
    """Nodes plus, per edge, the ranks it skips: dot routes a long edge through one virtual node per
    rank, and its run time grows with that total (an RNN's shared weight feeding 45 steps costs ~1000)."""
    ids = [b.id for b in boxes]
    indeg = {i: 0 for i in ids}
    kids: dict[int, list[int]] = {i: [] for i in ids}
    for e in links:
        if e.src in kids and e.dst in indeg:
            kids[e.src].append(e.dst)
            indeg[e.dst] += 1
    rank = {i: 0 for i in ids}
    ready = [i for i in ids if indeg[i] == 0]
    while ready:
        i = ready.pop()
        for c in kids[i]:
            rank[c] = max(rank[c], rank[i] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    return len(ids) + sum(max(rank.get(e.dst, 0) - rank.get(e.src, 0) - 1, 0) for e in links)


def fallback_place(boxes: Sequence[Box], links: Sequence[Link], rankdir: str = "LR", nodesep: float = 18,
                   ranksep: float = 30, note: str = NO_DOT_NOTE) -> Placement:
    """Layers by longest path, barycentre order, straight edges (parallel ones bent apart)."""
    from explorer.explain.graph import Graph, GraphEdge, GraphNode

    from .layout import layout
    ids = [b.id for b in boxes]
    g = Graph([GraphNode(i, str(i), "op", "op", []) for i in ids],
              [GraphEdge(e.src, e.dst) for e in links], ids[-1] if ids else 0)
    grid = layout(g)
    size = {b.id: (b.width, b.height) for b in boxes}
    horizontal = rankdir in ("LR", "RL")
    # rank extent: the widest box of the rank (along the rank axis); slot: the biggest box across
    along = max((size[i][0] if horizontal else size[i][1]) for i in ids) if ids else 0
    across = max((size[i][1] if horizontal else size[i][0]) for i in ids) if ids else 0
    centers: dict[int, Point] = {}
    for i, (layer, slot) in grid.items():
        a = layer * (along + ranksep) + along / 2
        c = -slot * (across + nodesep)
        centers[i] = (a, c) if horizontal else (c, a)
    xs = [c[0] for c in centers.values()] or [0.0]
    ys = [c[1] for c in centers.values()] or [0.0]
    pad_x = max((size[i][0] for i in ids), default=0) / 2 + 4
    pad_y = max((size[i][1] for i in ids), default=0) / 2 + 4
    x0, y0 = min(xs) - pad_x, min(ys) - pad_y
    centers = {i: (x - x0, y - y0) for i, (x, y) in centers.items()}
    width, height = max(xs) + pad_x - x0, max(ys) + pad_y - y0
    seen: dict[tuple[int, int], int] = {}
    total: dict[tuple[int, int], int] = {}
    for e in links:
        total[(e.src, e.dst)] = total.get((e.src, e.dst), 0) + 1
    edges = []
    for e in links:
        k = seen.get((e.src, e.dst), 0)
        seen[(e.src, e.dst)] = k + 1
        (x0_, y0_), (x1_, y1_) = centers[e.src], centers[e.dst]
        start = _border(centers[e.src], size[e.src], (x1_, y1_))
        end = _border(centers[e.dst], size[e.dst], (x0_, y0_))
        dx, dy = end[0] - start[0], end[1] - start[1]
        length = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        bend = (k - (total[(e.src, e.dst)] - 1) / 2) * 24   # parallel edges bent apart, symmetrically
        nx, ny = -dy / length * bend, dx / length * bend
        ux, uy = dx / length, dy / length
        tail_end = (end[0] - 10 * ux, end[1] - 10 * uy)
        c1 = (start[0] + dx / 3 + nx, start[1] + dy / 3 + ny)
        c2 = (start[0] + 2 * dx / 3 + nx, start[1] + 2 * dy / 3 + ny)
        mid = (start[0] + dx / 2 + nx, start[1] + dy / 2 + ny)
        edges.append(EdgePath(e.src, e.dst, [start, c1, c2, tail_end], end,
                              mid if e.label is not None else None))
    return Placement(centers, size, edges, width, height, "fallback", rankdir, note)


def _border(center: Point, size: tuple[float, float], toward: Point) -> Point:
    """Where the segment from a box's centre toward a point leaves the box."""
    cx, cy = center
    dx, dy = toward[0] - cx, toward[1] - cy
    if dx == 0 and dy == 0:
        return center
    w, h = size[0] / 2, size[1] / 2
    t = min(w / abs(dx) if dx else float("inf"), h / abs(dy) if dy else float("inf"))
    return cx + dx * t, cy + dy * t
