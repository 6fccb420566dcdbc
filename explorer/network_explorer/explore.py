"""Everything the Network explorer page shows for one network, computed once (no Streamlit).

``explore(key, options)`` builds the preset, records its real forward/backward pass, lays out
both views, runs the gradient check and the memory measurements. ``moment(ex, frame)`` says
what one frame shows in words and arrays (the page only draws it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import re

import numpy as np
import plotly.graph_objects as go

from explorer.kit.frames import FrameSet
from explorer.kit.labels import adjoint_label, num
from explorer.kit.plotly_figure import figure_dict, figure_text, plan

from . import analysis, cost
from .frames import NetworkView, build_view, default_level, frame_span
from .presets import SWEEPS, Network, build, clean_options
from .recording import Recording, record

ANIMATION_LIMIT = 40_000    # frames x nodes above which the figure starts without browser animation


@dataclass
class Explored:
    network: Network
    rec: Recording
    views: dict[str, NetworkView]
    gradcheck: analysis.GradcheckTable
    memory: analysis.MemoryReport
    sweeps: dict[str, list[dict]]
    problems: list[str] = field(default_factory=list)
    figures: dict[str, dict] = field(default_factory=dict)
    drawings: dict[tuple, object] = field(default_factory=dict)   # views laid out again for another size
    backward: dict[str, FrameSet] = field(default_factory=dict)     # level -> the backward graph's frames

    @property
    def n_frames(self) -> int:
        """Frames of every view (both views share frame indices)."""
        return len(self.views["op"].frames.frames)

    @property
    def per_frame(self) -> tuple[int, int]:
        """Forward ops and backward steps shown per frame (1, 1 unless the network is very big)."""
        fs = self.views["op"].frames
        return fs.forward_per_frame, fs.backward_per_frame

    @property
    def default_level(self) -> str:
        return default_level(self.rec)

    def level_for(self, width: int | None = None, max_height: int | None = None) -> str:
        """The view "auto" opens at ``width`` x ``max_height`` px (a projector's graph): the default level, but
        the layer view when the op view would need a window there (a projector shows the whole network, or, where
        even the layer view needs a window, the most of it; the op view is one click away)."""
        level = self.default_level
        if level == "op" and (width or max_height) and self.drawing("op", width, max_height).viewport:
            return "layer"
        return level

    def animated(self, level: str) -> bool:
        v = self.views[level]
        return len(v.frames.frames) * len(v.graph.nodes) <= ANIMATION_LIMIT

    def figure(self, level: str, frame: int, animate: bool | None = None, width: int | None = None,
               max_height: int | None = None, whole_text_only: bool = False) -> dict:
        """The graph figure (a plain Plotly dict from the explain layer): with every frame (Play /
        slider in the browser) when ``animate`` (default: when small), else only frame ``frame``
        (stepping happens on the server; every frame of a big network is megabytes to send). ``whole_text_only``:
        see :func:`explorer.kit.plotly_figure.figure_dict` (presentation mode: nor an edge to a node the window does
        not show)."""
        v = self.views[level]
        if self.animated(level) if animate is None else animate:
            if level not in self.figures:
                self.figures[level] = figure_dict(v.frames, v.graph, v.drawing)
            return self.figures[level]
        frame = min(max(frame, 0), len(v.frames.frames) - 1)
        return figure_dict(v.frames.only(frame), v.graph, self.drawing(level, width, max_height), whole_text_only=whole_text_only,
                           shown_edges_only=whole_text_only)

    def backward_figure(self, level: str, frame: int, width: int | None = None, max_height: int | None = None,
                        whole_text_only: bool = False) -> dict:
        """The backward graph at ``frame`` (:mod:`explorer.network_explorer.backward`): the view's graph with every
        edge reversed and in the backward colour, its nodes the adjoints (``x̄``, ``f̄c1.weight``), fan-out sums
        written symbolically then in numbers. One frame only (the page steps on the server); laid out once per
        size, over every frame, so that a node stays put from step to step."""
        from explorer.kit.plotly_figure import ADJOINT
        from .backward import backward_frames, backward_rankdir
        v = self.views[level]
        if level not in self.backward:
            self.backward[level] = backward_frames(self.rec, v)
        bfs = self.backward[level]
        key = ("backward", level, width, max_height)
        if key not in self.drawings:
            kw = {} if max_height is None else {"max_height": max_height}
            # room made by dot for each contribution beside its edge, or the compact layout that writes each
            # where it finds a free spot (ranks far enough apart in the layer view): the one that shows more of the
            # graph, then more numbers, then the larger (the middle edge of a three-way fan found no free spot)
            rankdir = backward_rankdir(level, v.drawing.placement.rankdir)   # the mirror of the view's own
            candidates = [plan(bfs, v.graph, width or v.drawing.width, rankdir, label_room=room,
                               label_gap=level == "layer", group_labels=True, **kw) for room in (True, False)]
            self.drawings[key] = max(candidates, key=lambda d: (d.viewport is None, sum(d.edge_labels), d.scale))
        frame = min(max(frame, 0), len(bfs.frames) - 1)
        return figure_dict(bfs.only(frame), v.graph, self.drawings[key], edge_color=ADJOINT, pending_edges=True,
                           whole_text_only=whole_text_only, shown_edges_only=whole_text_only)

    def whole_figure(self, level: str, frame: int, width: int, max_height: int) -> dict | None:
        """The forward graph at ``frame`` drawn whole within ``width`` x ``max_height`` px at scale 1 (a projector:
        no text smaller than the page asked for), or None where it does not fit and a window must follow the step.
        The first step (inputs: nothing computed, each box one or two lines) is laid out on its own texts, close
        ranks, so that the class sees the whole network before the walk zooms in; the others on every frame's texts
        (a node stays put from step to step)."""
        v = self.views[level]
        frame = min(max(frame, 0), len(v.frames.frames) - 1)
        first = frame == 0
        key = ("whole", level, first, width, max_height)
        if key not in self.drawings:
            fs = v.frames.only(0) if first else v.frames
            d = plan(fs, v.graph, width, rankdir="BT" if level == "layer" else "auto", edge_labels=False,
                     max_height=max_height, rank_gap=16.0 if first else 30.0)
            self.drawings[key] = d if d.viewport is None and d.scale >= 0.999 else None
        d = self.drawings[key]
        if d is None:
            return None
        return figure_dict(v.frames.only(frame), v.graph, d)

    def drawing(self, level: str, width: int | None = None, max_height: int | None = None):
        """The view's drawing, or one laid out again for ``width`` x ``max_height`` px (presentation mode,
        where the graph is drawn larger and must leave the step's caption and buttons on screen)."""
        v = self.views[level]
        if width is None and max_height is None:
            return v.drawing
        key = (level, width, max_height)
        if key not in self.drawings:
            kw = {} if max_height is None else {"max_height": max_height}
            self.drawings[key] = plan(v.frames, v.graph, width or v.drawing.width,
                                      rankdir="BT" if level == "layer" else "auto", edge_labels=False, **kw)
        return self.drawings[key]


def explore(key: str, options: dict | None = None, coords: int = 3) -> Explored:
    """Build, run and measure one network (see module docstring); what is kept is compact (large arrays
    as summaries: see ``Recording.compact``), so that whatever the budget allows fits the page's cache.

    Raises:
        PresetError: unknown preset, options it cannot build, or a network beyond the request's budget
            (estimated by one probe run before the recording, the gradient check and the sweeps).
    """
    opts, problems = clean_options(key, options or {})
    net = build(key, **opts)
    cost.check(key, cost.probe(net), opts)
    table = analysis.gradient_check(net, coords=coords, max_leaves=cost.MAX_CHECKED_LEAVES)
    rec = record(net)
    views = {"op": build_view(rec, "op"), "layer": build_view(rec, "layer")}
    sweeps = {}
    for name, sizes in SWEEPS.get(key, []):
        base = {k: v for k, v in opts.items() if k != name}
        sweeps[name] = analysis.memory_sweep(key, sizes, name, **base)
    memory = analysis.memory_report(rec)
    net.model.zero_grad()   # the recording holds the gradients it shows
    return Explored(net, rec.compact(), views, table, memory, sweeps, problems)


@dataclass
class Moment:
    """What one frame shows, ready to draw."""

    phase: str                               # inputs | forward | backward | done
    title: str
    node: int | None = None
    formula: str = ""
    value: np.ndarray | None = None
    adjoint: np.ndarray | None = None
    detail: analysis.StepDetail | None = None
    fan_out: list[analysis.FanOutSum] = field(default_factory=list)   # fan-out sums completed at this step


_OP_ID = re.compile(r"#\d+$")   # a recorded op's id in its label (add#8): the op view's name, not the lecture's


def sent_status(sent: dict) -> str:
    """How far a contribution's target has got with its sum: "2 of 3 received", "1 of 1 received" where this is all it
    receives ("its only consumer" read as if the target consumed the sender; a longer phrase wrapped the line under
    the first screen)."""
    return f"{sent['received']} of {sent['expected']} received"


def shown_name(ex: Explored, node_id: int, level: str = "op") -> str:
    """A node as ``level``'s view names it. The op view: its recorded label (``add#8``, ``fc1.weight``). The layer
    view draws a box per layer and never an op id: a layer's output is its box (``Linear 1``), an op inside a layer
    is that layer's op (``cross-entropy's mul``), a leaf keeps its name (``x``, ``fc1.weight``), a constant
    is one (``the constant 0``; ``the labels`` for an integer tensor)."""
    node = ex.rec.node(node_id)
    if level != "layer":
        return node.label
    if node.kind == "op":
        box = next((layer.name for layer in ex.rec.layers if layer.output == node_id), None)
        return box or f"{node.layer}'s {node.op}"
    if not _OP_ID.search(node.label):
        return node.label if node.kind != "constant" else f"the constant {node.label}"
    return "the labels" if node.label.startswith("indices") else "a constant"


def moment(ex: Explored, frame: int, level: str = "op") -> Moment:
    """What ``frame`` shows, in words, as ``level``'s view names the nodes (:func:`shown_name`: no op ids in the
    layer view)."""
    rec = ex.rec
    phase, start, stop = frame_span(rec, frame, *ex.per_frame)
    i = stop - 1 if stop is not None else None
    merged = f" (this frame shows {stop - start} of them; the last is described)" if stop and stop - start > 1 else ""
    if phase == "inputs":
        return Moment(phase, "Inputs and parameters (leaves): nothing computed yet")
    if phase == "done":
        return Moment(phase, f"Done: loss = {num(rec.loss)}; every leaf holds its gradient")
    if phase == "forward":
        node = rec.node(rec.forward_order[i])
        args = ", ".join(shown_name(ex, p, level) for p in node.parents)
        whole = f" — the last primitive of {node.composite}" if node.composite else ""
        if level == "layer":
            name = shown_name(ex, node.id, level)
            said = f"{name} = {node.op}({args})" if name == node.layer else f"{name}({args})"
            return Moment(phase, f"Forward {i + 1}/{len(rec.forward_order)}{merged}: {said} → "
                                 f"{analysis.format_shape(node.shape)}{whole}",
                          node.id, analysis.vjp_formula(node.op), node.value)
        return Moment(phase, f"Forward {i + 1}/{len(rec.forward_order)}{merged}: {node.label} = {node.op}({args}) "
                             f"→ {analysis.format_shape(node.shape)}{whole}   [{node.layer}]",
                      node.id, analysis.vjp_formula(node.op), node.value)
    step = rec.backward[i]
    node = rec.node(step.node)
    detail = analysis.step_detail(rec, step)
    fans = [analysis.fan_out_sum(rec, c.target) for c in step.contributions if c.expected > 1 and c.complete]
    kind = "leaf: gradient accumulated" if step.leaf_grad is not None else "VJP"
    if level == "layer":   # the fan-out sums too: the node and each contribution's sender by the view's names
        fans = [analysis.FanOutSum(f.node, shown_name(ex, f.node, level),
                                   [(shown_name(ex, c.source, level), c.step, c.value)
                                    for c in rec.contributions_to(f.node)], f.total) for f in fans]
        return Moment(phase, f"Backward {i + 1}/{len(rec.backward)}{merged}: {shown_name(ex, node.id, level)}, "
                             f"shape {analysis.format_shape(node.shape)} — {kind}",
                      node.id, detail.formula, node.value, step.adjoint, detail, fans)
    return Moment(phase, f"Backward {i + 1}/{len(rec.backward)}{merged}: {node.label} ({node.op}, "
                         f"{analysis.format_shape(node.shape)}) — {kind}   [{node.layer}]",
                  node.id, detail.formula, node.value, step.adjoint, detail, fans)


@dataclass
class Held:
    """What the node inspector may show of one node at one frame: only what the walk has computed so far."""

    value: np.ndarray | None          # None: the forward pass has not reached the node yet
    value_note: str
    adjoint: np.ndarray | None        # None: nothing received yet (or the backward pass has not started)
    adjoint_note: str
    arrived: int                      # contributions received so far (the fan-out table's rows shown)


def data_input(rec: Recording) -> int | None:
    """The node of the network's data input ``x`` (what step 1 shows entering the graph), or None."""
    return next((n.id for n in rec.nodes if n.kind != "op" and n.label == "x"), None)


def held_at(ex: Explored, node_id: int, frame: int) -> Held:
    """The node's value and adjoint as the walk holds them at ``frame`` (0-based), never a later one's.

    Forward: an op's value once its op has run, a leaf's from the start; no adjoint yet. Backward: the running
    sum of the contributions received so far (the loss: the seed once it is taken); done: the final adjoint."""
    rec = ex.rec
    node = rec.node(node_id)
    phase, _start, stop = frame_span(rec, frame, *ex.per_frame)
    done_forward = phase in ("backward", "done") or (
        phase == "forward" and node_id in rec.forward_order[:stop])
    if node.kind != "op" or done_forward:
        value, value_note = node.value, "value"
    else:
        value, value_note = None, "not computed yet: the forward pass has not reached it"
    parts = rec.contributions_to(node_id)
    if phase == "done":
        return Held(value, value_note, node.adjoint, "final adjoint", len(parts))
    if phase != "backward":
        return Held(value, value_note, None, "adjoint: not yet (the backward pass has not started)", 0)
    last = stop - 1
    if node_id == rec.loss_node:
        seeded = any(s.node == node_id for s in rec.backward[:last + 1])
        return Held(value, value_note, node.adjoint if seeded else None,
                    "adjoint (the seed, 1)" if seeded else "adjoint: not seeded yet", 0)
    arrived = [c for c in parts if c.step <= last]
    if not arrived:
        return Held(value, value_note, None, f"adjoint: nothing received yet (0 of {len(parts)})", 0)
    c = arrived[-1]
    note = ("final adjoint" if len(arrived) == len(parts) else
            f"adjoint so far ({len(arrived)} of {len(parts)} contributions)")
    return Held(value, value_note, c.total, note, len(arrived))


def adjoint_name(ex: Explored, node_id: int, level: str = "op") -> str:
    """The adjoint of a recorded node as the backward graph names it, with the lecture's bar as every page writes
    it (the op view's ``l̅i̅n̅e̅a̅r̅#̅3̅``, ``f̅c̅1̅.̅w̅e̅i̅g̅h̅t̅``, x̄). In the layer view a layer's output is its box's
    adjoint (``L̅i̅n̅e̅a̅r̅ 1``) and an op inside a layer is said in words (``the adjoint of cross-entropy's mul``)."""
    from explorer.explain.graph import adjoint_names, bar
    if level == "layer":
        name = shown_name(ex, node_id, level)
        node = ex.rec.node(node_id)
        inside = node.kind == "op" and name != node.layer
        return f"of {name}" if inside else bar(name)
    return adjoint_label(adjoint_names(ex.views["op"].graph), node_id, ex.rec.node(node_id).label)


def graph_dot(ex: Explored, level: str) -> str:
    """Graphviz DOT text of one view (the explain layer's ``to_dot``), as of the last frame."""
    from explorer.kit.dot import to_dot
    v = ex.views[level]
    return to_dot(v.graph, frame=v.frames.frames[-1], frameset=v.frames,
                  title=f"{ex.network.title}: {level} view, loss = {num(ex.rec.loss)}")


def title_lines(title: str, chars: int | None) -> list[str]:
    """``title`` broken at spaces into lines of at most ``chars`` characters (a word longer than that keeps its
    own line); one line when ``chars`` is None. A combining mark (an adjoint's bar) takes no room."""
    if not chars:
        return [title]
    import unicodedata

    def width(text: str) -> int:
        return sum(1 for ch in text if not unicodedata.combining(ch))
    lines: list[str] = []
    for word in title.split(" "):
        if lines and width(lines[-1]) + 1 + width(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def colour_range(zmax: float) -> str:
    """The line under a heatmap that says what its colours mean: red -``zmax`` through white 0 to blue +``zmax``
    (``zmax``: the tensor's largest |entry|, or one scale shared by tensors drawn to be compared)."""
    m = num(zmax, 2)
    return f"colour −{m}…+{m}"   # short: one line in half a projector's panel ("colour: −0.72 / … +0.72" wrapped)


def title_chars(width_px: float, font: int) -> int:
    """How many characters of a ``font`` px title fit in ``width_px`` (a conservative 0.62 em per character)."""
    return max(8, int(width_px / (0.62 * font)))


def tick_margin(font: int) -> int:
    """The bottom margin a heatmap's column numbers take (a line of ``font`` px, its distance from the cells)."""
    return int(1.8 * font) + 4


def heatmap(value: np.ndarray, title: str, height: int = 220, font: int = 12, zmax: float | None = None,
            narrow: bool = False, chars: int | None = None, title_rows: int = 1) -> go.Figure:
    """A small heatmap of a tensor (folded to 2-D by :func:`analysis.look`); numbers printed when few.

    The colours run from -``zmax`` (red) to +``zmax`` (blue), ``zmax`` defaulting to the tensor's own
    largest magnitude: pass one ``zmax`` wherever the same tensor (or tensors that add up, like a fan-out
    sum and its contributions) is drawn, so a colour means one number on every panel. ``chars``: the title's
    line length (:func:`title_chars` of the column's width); a longer title wraps and the figure grows by its
    extra lines, so it is never cut at the column's edge. ``title_rows``: lines to leave for the title at least
    (the longest of two heatmaps side by side, so that their cells stand level).
    """
    lk = analysis.look(value)
    if lk is None or lk.matrix is None:
        raise ValueError("tensor too large for a heatmap; use analysis.look(...).stats")
    m = lk.matrix
    if zmax is None:
        zmax = analysis.magnitude(m)
    zmax = zmax if zmax > 0 else 1.0
    digits = 3 if m.shape[1] <= 4 and not narrow else 2   # a heatmap cell holds fewer digits (narrow: a third of a column)
    text = np.vectorize(lambda v: num(v, digits))(m) if m.size <= 60 else None
    fig = go.Figure(go.Heatmap(z=m, colorscale="RdBu", zmin=-zmax, zmax=zmax, text=text,
                               texttemplate="%{text}" if text is not None else None, showscale=False,
                               textfont=dict(size=max(font - 2, 9))))
    lines = title_lines(title, chars)
    # the column numbers under the cells get their own margin: left to Plotly's automargin, a one-row heatmap (a
    # projector's compact panel, 128 px) had no room to give them and cut them in half
    ticks = tick_margin(font) if m.shape[1] <= 12 else 10
    # what the colours mean, under the cells (it stood in the title as a bare "±1.2" that nobody could read)
    scale_lines = [colour_range(zmax)]   # one line always: its numbers never split from their word
    scale_px = int(len(scale_lines) * 1.3 * font) + 6
    extra = int((max(len(lines), title_rows) - 1) * 1.3 * font)
    # Plotly sets a title's first line in the middle of the top margin and the others under it: each extra line
    # takes twice its height of margin (with once, a third line reached into the cells: the adjoint's "±0.25" on
    # the Network explorer's step 30 on a projector)
    # an adjoint's name barred whole (l̅o̅s̅s̅) as one overline, as the graphs draw it (its combining marks, drawn by
    # Plotly's SVG text, broke into dashes through the letters)
    fig.update_layout(title=dict(text="<br>".join(figure_text(t) for t in lines), font=dict(size=font)),
                      # a title line needs twice its font of margin (at the small projector's 23 px, 40 px cut it)
                      height=height + 2 * extra + scale_px,
                      margin=dict(l=10, r=10, t=max(40, 2 * font) + 2 * extra, b=ticks + scale_px),
                      font=dict(size=font))
    fig.update_yaxes(autorange="reversed", showticklabels=m.shape[0] <= 12, dtick=1)
    fig.update_xaxes(showticklabels=m.shape[1] <= 12, dtick=1)
    # the range as a note at the figure's bottom edge (an axis title would move with Plotly's tick layout)
    # ending at the cells' right edge, reaching left over the row numbers' margin (from the cells' left edge it ran
    # past a half panel's right edge)
    fig.add_annotation(text="<br>".join(scale_lines), xref="paper", yref="paper", x=1, y=0, xanchor="right",
                       yanchor="top", yshift=-ticks, showarrow=False, align="right", name="colour range",
                       font=dict(size=font))
    return fig


# presentation mode's "This step" panel beside the graph (a third of the width): a tensor of at most this many rows
# gets a heatmap only as tall as its rows need, and the value and the adjoint of a column (at most this many
# columns) stand side by side, so the first "sent to" line is on the first screen under them
COMPACT_ROWS = 6
COMPACT_COLUMNS = 2


def compact_heatmap_height(value: np.ndarray, font: int, height: int = 220) -> int:
    """The height of a heatmap of ``value`` in presentation mode's narrow step panel: the title, the column
    numbers' margin (:func:`tick_margin`) and a row of at least 1.6 lines of ``font`` per tensor row, for a tensor
    of at most :data:`COMPACT_ROWS` rows; ``height`` (the usual one) otherwise."""
    lk = analysis.look(value)
    if lk is None or lk.matrix is None or lk.matrix.shape[0] > COMPACT_ROWS:
        return height
    return min(height, int(max(40, 2 * font) + tick_margin(font) + lk.matrix.shape[0] * 1.6 * font))


def side_by_side(*values) -> bool:
    """Whether heatmaps of ``values`` fit beside each other in the narrow step panel: each a few rows, at most
    :data:`COMPACT_COLUMNS` columns."""
    looks = [analysis.look(v) for v in values if v is not None]
    return bool(looks) and all(lk is not None and lk.matrix is not None and lk.matrix.shape[0] <= COMPACT_ROWS
                               and lk.matrix.shape[1] <= COMPACT_COLUMNS for lk in looks)


def formula_parts(formula: str) -> tuple[str, str]:
    """A VJP formula's rule and its trailing note: "x̄ = Ȳ W, … (y = x Wᵀ + b; …)" -> ("x̄ = Ȳ W, …",
    "y = x Wᵀ + b; …"). A projector's narrow panel writes the rule on its own line (with the note it wrapped to
    three) and the note after what the step sent. A formula with no note: (formula, "")."""
    m = re.match(r"^(.*?\S)\s{2,}\((.*)\)$", formula, flags=re.S)
    return (m.group(1), m.group(2)) if m else (formula, "")


def _top_level(text: str, sep: str) -> list[int]:
    """Where ``sep`` starts in ``text`` outside every bracket."""
    at, depth = [], 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and text.startswith(sep, i):
            at.append(i)
    return at


def formula_pieces(rule: str, max_chars: int = 24) -> list[str]:
    """A VJP rule cut where a line may break: at its top-level commas (one adjoint each: "x̄ = Ȳ W,", "b̄ = Σ_rows Ȳ"),
    and a piece longer than ``max_chars`` once more before the top-level operator nearest its middle ("p̄ = ℓ̄ ⊙ (p − y)",
    "/ max(p(1 − p), 1e-12)"). Nothing breaks inside a piece: the class never reads "b̄ =" alone at a line's end."""
    parts, start = [], 0
    for i in sorted(_top_level(rule, ",") + _top_level(rule, ":")):
        parts.append(rule[start:i + 1].strip())
        start = i + 1
    parts.append(rule[start:].strip())
    pieces = []
    for part in filter(None, parts):
        cuts = sorted(i for op in (" / ", " ⊙ ", " + ", " · ") for i in _top_level(part, op)) if len(part) > max_chars else []
        if not cuts and len(part) > LONG_PIECE:   # one long call (gather's scatter_add(…)): after an argument's comma
            cuts = [i + 1 for i, ch in enumerate(part) if ch == ","]
        if cuts:
            i = min(cuts, key=lambda c: abs(c - len(part) / 2))
            pieces += [part[:i].strip(), part[i:].strip()]
        else:
            pieces.append(part)
    return pieces


LONG_PIECE = 34   # characters: a piece longer than this ran past a projector's step panel (at 1366 x 768, 16 px)


def formula_html(rule: str) -> str:
    """The rule as inline code pieces (:func:`formula_pieces`) that a line never breaks inside."""
    import html
    return " ".join(f"<code style='white-space: nowrap'>{html.escape(p)}</code>" for p in formula_pieces(rule))


def sweep_figure(rows: list[dict], option: str, font: int = 12) -> go.Figure:
    xs = [r[option] for r in rows]
    fig = go.Figure([go.Scatter(x=xs, y=[r["bytes kept"] for r in rows], mode="lines+markers",
                                name="kept for backward"),
                     go.Scatter(x=xs, y=[r["bytes kept under no_grad"] for r in rows], mode="lines+markers",
                                name="under no_grad")])
    # the legend inside the plot's top-left corner, where the rising line leaves room (under the plot it sat on
    # the x axis's tick labels)
    fig.update_layout(title=f"bytes kept vs {option}", xaxis_title=option, yaxis_title="bytes", height=280 + 4 * font,
                      margin=dict(l=10, r=10, t=40 + font, b=10), font=dict(size=font),
                      legend=dict(x=0.01, y=0.99, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.85)"))
    return fig


# --- every step as plain data: the walk-through file --------------------------------------------------------

#: what the page writes under the graph
NODE_LABELS_NOTE = ("Node labels: name, output shape, and where its adjoint stands (k of n contributions received; ✓ "
                    "once processed). Colours: blue computed, red waiting for more contributions, green complete, "
                    "yellow active.")
#: what the page writes over the backward graph (normal mode: under the forward one)
BACKWARD_HEADING = ("Backward pass: every edge reversed, each node the adjoint (x̄) of the node above; a node used "
                    "more than once sums its contributions (symbols, then numbers: a value, or a tensor's norm, ‖x̄‖)")
#: the backward graph's legend for its sent edges: a tensor's contribution is written by its norm
SENT_LEGEND = "contribution sent (its value or norm on its edge)"
FAN_OUT_NOTE = ("One colour scale for the row: a contribution's colours read against the sum's.")
VJP_SYMBOL = {"matmul": "@", "mul": "⊙", "div": "/", "scatter_add": "scatter-add", "sum": "summed over rows"}


def _tensor_blocks(value, title: str, scale: float | None = None, narrow: bool = False,
                   drawn: dict | None = None) -> list[dict]:
    """A tensor as the page shows it: a heatmap when small, its statistics when large, a dash when absent.
    ``drawn``: heatmaps already made for this walk (a value shown at several steps is drawn once: a Plotly
    heatmap figure takes about 50 ms to build)."""
    key = (id(value), title, scale, narrow)
    if drawn is not None and key in drawn:
        return drawn[key]
    blocks = _tensor_blocks_of(value, title, scale, narrow)
    if drawn is not None:
        drawn[key] = blocks
    return blocks


def _tensor_blocks_of(value, title: str, scale: float | None, narrow: bool) -> list[dict]:
    import html

    import pandas as pd
    lk = analysis.look(value)
    if lk is None:
        return [{"kind": "html", "html": f"<p class='adx-caption'>{html.escape(title)}: —</p>"}]
    if lk.is_heatmap:
        zmax = analysis.magnitude(value) if scale is None else scale
        fig = heatmap(value, f"{title} {analysis.format_shape(lk.shape)}", zmax=zmax, narrow=narrow)
        spec = fig.to_plotly_json()
        hm = fig.data[0]   # its arrays as plain lists (Plotly's JSON may pack them as base64 typed arrays)
        spec["data"] = [{**spec["data"][0], "z": np.asarray(hm.z, dtype=float).tolist(),
                         "text": None if hm.text is None else [[str(t) for t in row] for row in hm.text]}]
        return [{"kind": "plot", "figure": spec}]
    return [{"kind": "html", "html": f"<p><b>{html.escape(title)}</b> {analysis.format_shape(lk.shape)} — too large "
                                     "for a heatmap</p>" + pd.DataFrame([lk.stats]).to_html(index=False, border=0,
                                                                                          classes="adx-table")}]


def step_class_view(ex: Explored, level: str, frame: int, drawn: dict | None = None):
    """The 0-based ``frame`` as the page draws it on a laptop (:class:`explorer.classroom.views.ClassView`): the
    header, the graph, this step's node with its value and adjoint, the VJP's products, where its contributions
    went, and the fan-out sums it completes. (The page's node inspector is a choice made in the browser: left
    out; by default it shows this step's node, which is here.) ``drawn``: as :func:`_tensor_blocks`'s."""
    import html

    from explorer.classroom.views import ClassView, markdown_html
    from explorer.kit.figures import laptop_still
    from .tables import fan_out_rows
    rec = ex.rec
    m = moment(ex, frame, level)
    esc = html.escape
    view = ClassView("Network_explorer", "Network explorer",
                     markdown_html(f"#### Step {frame + 1} of {ex.n_frames} · {m.phase}\n{m.title}"))
    view.add_plot(laptop_still(ex.figure(level, frame, animate=False), 0))
    if m.phase in ("backward", "done"):   # the backward graph under the forward one, as the page draws it
        from explorer.kit.backward_view import legend_html
        view.add_html(f"<h5>{esc(BACKWARD_HEADING)}</h5>")
        view.add_plot(laptop_still(ex.backward_figure(level, frame), 0))
        view.add_html(legend_html(SENT_LEGEND))
    view.add_html(f"<p class='adx-caption'>{esc(NODE_LABELS_NOTE)}</p>")
    here: list[dict] = [{"kind": "html", "html": "<h5>This step</h5>"}]
    if m.node is None:
        here.append({"kind": "html", "html": f"<p class='adx-caption'>{esc(m.title)}</p>"})
        x = data_input(rec) if m.phase == "inputs" else None
        if x is not None:
            here += _tensor_blocks(rec.node(x).value, "input x", analysis.value_scale(rec, x), drawn=drawn)
    else:
        node = rec.node(m.node)
        here.append({"kind": "html", "html": (
            f"<p><b>{esc(shown_name(ex, node.id, level))}</b> · op <code>{esc(node.op)}</code> · shape "
            f"<b>{analysis.format_shape(node.shape)}</b> · layer <i>{esc(str(node.layer))}</i></p>"
            f"<p>VJP: <code>{esc(m.formula)}</code></p>")})
        pair = [{"kind": "column",
                 "blocks": _tensor_blocks(m.value, "value", analysis.value_scale(rec, m.node), drawn=drawn)}]
        if m.adjoint is not None:
            pair.append({"kind": "column", "blocks": _tensor_blocks(m.adjoint, f"adjoint {adjoint_name(ex, m.node, level)} (held now)",
                                                                    analysis.adjoint_scale(rec, m.node), drawn=drawn)})
        here.append({"kind": "row", "blocks": pair, "widths": [1] * len(pair)})
    d = m.detail
    if d is not None and d.products:
        here.append({"kind": "html",
                     "html": "<p><b>The VJP's actual products</b> (engine ops run inside this VJP)</p>"})
        for (op, ins, out), (in_scales, out_scale) in zip(d.products[:3], d.product_scales):
            sym = VJP_SYMBOL.get(op, op)
            names = ["left", "right"] if len(ins) > 1 else ["Ȳ,"]   # a Linear's b̄ = Σ_rows Ȳ, as the page
            cells = [{"kind": "column", "blocks": _tensor_blocks(arr, f"{nm} {sym}" if c == 0 else nm, sc, narrow=True,
                                                                 drawn=drawn)}
                     for c, (arr, nm, sc) in enumerate(zip(ins, names, in_scales))]
            cells.append({"kind": "column",
                          "blocks": _tensor_blocks(out, "= result", out_scale, narrow=True, drawn=drawn)})
            here.append({"kind": "row", "blocks": cells, "widths": [1] * len(cells)})
    if d is not None:
        lines = []
        if d.leaf_grad is not None:
            lines.append(f"<p class='adx-success'>{esc(d.label)}.grad += adjoint (shape "
                         f"{analysis.format_shape(d.leaf_grad.shape)})</p>")
        for s in d.sent:
            status = sent_status(s)
            lines.append(f"<p>→ sent to <b>{esc(shown_name(ex, s['target'], level))}</b> {analysis.format_shape(s['value'].shape)} "
                         f"({status})</p>")
        here.append({"kind": "html", "html": "".join(lines)})
    view.add_row([{"kind": "column", "blocks": here}], [1])
    for fs in m.fan_out:
        view.add_html(f"<h5>Fan-out sum at {esc(fs.label)}: {len(fs.parts)} contributions</h5>")
        scale = analysis.adjoint_scale(rec, fs.node)
        shown = fs.parts[:4]
        reasons = {r["backward step"]: r["note"] for r in fan_out_rows(rec, fs.node)}   # by the step that sent it
        cells = []
        for j, (src, stp, val) in enumerate(shown):
            blocks = list(_tensor_blocks(val, f"{'+ ' if j else ''}{src} · step {stp + 1}", scale, drawn=drawn))
            why = reasons.get(str(stp + 1))
            if why:
                blocks.append({"kind": "html", "html": f"<p class='adx-caption'>{esc(why)}</p>"})
            cells.append({"kind": "column", "blocks": blocks})
        cells.append({"kind": "column", "blocks": _tensor_blocks(fs.total, "= sum", scale, drawn=drawn)})
        view.add_row(cells, [1] * len(cells))
        more = f" ({len(fs.parts) - len(shown)} more not drawn)" if len(fs.parts) > len(shown) else ""
        view.add_html(f"<p class='adx-caption'>Sum of the {len(fs.parts)} contributions, as the engine accumulated "
                      f"them (‖sum‖ = {num(analysis.look(fs.total).stats['norm'])}){esc(more)}. "
                      f"{esc(FAN_OUT_NOTE)}</p>")
    return view


def walkthrough(ex: Explored, level: str, title: str) -> str:
    """Every step of the network's walk at ``level`` ("op" or "layer") in one self-contained HTML file
    (:func:`explorer.kit.export_html.walkthrough_html`); ``title`` names the network (escaped there)."""
    from explorer.kit.export_html import walkthrough_html
    drawn: dict = {}
    return walkthrough_html(f"Network explorer: {title}",
                            [step_class_view(ex, level, k, drawn) for k in range(ex.n_frames)])


#: presentation mode's sizes box: each option's short word, so that the label stays on one line at 1366 x 768
SHORT_LABELS = {"batch size": "batch", "hidden width": "width", "dropout p": "dropout", "hidden layers": "layers",
                "head size d": "d", "time steps T": "T", "input features": "features"}
SIZES_TEXT_CHARS = 22   # a sentence or a layer list longer than this is cut (…) in the label; the box holds it whole


def sizes_label(options: list, chosen: dict) -> str:
    """The sizes box's one-line label on a projector: "batch 3 · width 5 · dropout 0.5"; a text option quoted
    ("“it is a good movie” · width 6"; unquoted, "sentence it is a good movie" read as one sentence)."""
    parts = []
    for o in options:
        v = o.default if chosen.get(o.name) is None else chosen[o.name]
        if isinstance(o.default, str):
            t = str(v)
            parts.append(f"“{t if len(t) <= SIZES_TEXT_CHARS else t[:SIZES_TEXT_CHARS - 1].rstrip() + '…'}”")
        else:
            parts.append(f"{SHORT_LABELS.get(o.label, o.label)} {v}")
    return " · ".join(parts)


def leaf_gradients(rec) -> list[str]:
    """The last step's lines: every trainable leaf and the gradient it holds, one line each
    ("‖fc1.weight.grad‖ = 0.153", "fc2.bias.grad = 0.187"), so that a projector, whose backward graph shows only the
    top of a tall network, still shows every leaf's gradient."""
    from .backward import is_number, norm_of
    out = []
    for n in rec.nodes:
        if n.kind != "param" or n.adjoint is None:
            continue
        name = f"{n.label}.grad"
        text = norm_of(name, n.adjoint)
        out.append(f"{name} = {text}" if is_number(n.adjoint) else text)
    return out
