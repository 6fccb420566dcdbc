"""The backward pass as the slides draw it: a graph of its own, stepping with the forward one.

Each node of the forward graph has an adjoint node named as the lecture names it (``x̄3``; the output's ``x̄7`` = f̄);
each edge is reversed (the adjoint flows from a consumer back to its input), drawn in the backward
colour and labelled with the contribution it carried; a node used more than once (fan-out) writes
its adjoint as the slides do, symbolically then in numbers (the frames' ``node_sum``, from
:func:`explorer.kit.labels.fan_out_sum`): ``x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04``.
Built from the forward animation's frames (themselves built from the engine's recorded events):
nothing is recomputed here.
"""
from __future__ import annotations

import html

from explorer.explain.graph import Graph

from .frames import Frame, FrameSet
from .labels import adjoint_label, adjoint_names
from .plotly_figure import ADJOINT, figure_dict, plan

# the backward graph mirrors the forward one: its sources (the output's adjoint) where the output is
MIRROR = {"LR": "RL", "RL": "LR", "BT": "TB", "TB": "BT"}


def _fan_out_line(terms: list[str], expected: int, total: str) -> str:
    """The adjoint of a node with ``expected`` consumers, as the slides write it."""
    if expected <= 1:
        return f"= {total}" if total else ""
    if len(terms) < expected:
        return f"= {' + '.join(terms)} + … ({len(terms)} of {expected})"
    return f"= {' + '.join(terms)} = {total}"


def values_only(fs: FrameSet) -> FrameSet:
    """The forward animation without adjoints or contributions (the backward graph beside it carries them)."""
    frames = [Frame(f.index, f.phase, f.caption, list(f.active_nodes), list(f.active_edges), list(f.node_text),
                    list(f.node_state), [], [], f.warning) for f in fs.frames]
    return FrameSet(list(fs.node_ids), frames, fs.truncated, fs.forward_per_frame, fs.backward_per_frame,
                    list(fs.heads), list(fs.edges), list(fs.hover))


#: what follows a node's adjoint text when the node is marked wrong (page 13's first wrong node)
WRONG_MARK = " ✘"


def backward_frameset(fs: FrameSet, graph: Graph) -> FrameSet:
    """The frames of the backward graph for the forward animation ``fs`` over ``graph``.

    Node ``i`` of the result is the adjoint of node ``i`` of ``fs`` (same ids, so one frame index
    shows the same moment in both); edge ``k`` is edge ``k`` of ``fs`` reversed. In forward frames
    the backward graph is empty (its nodes 'idle'); in backward frames a node holds its running sum.
    """
    names = {n.id: n.name for n in graph.nodes}
    ids = fs.node_ids
    edges = fs.edges or [(e.src, e.dst) for e in graph.edges]
    out_edges: dict[int, list[int]] = {}
    for k, (src, _dst) in enumerate(edges):
        out_edges.setdefault(src, []).append(k)
    adjoint_of = adjoint_names(graph)   # the output's x̄7 where the program called it f
    # the output's node reads x̄7; the caption that seeds the backward pass introduces it as "x̄7 (= f̄)" on every
    # page (in the node, "x̄7 (= f̄)" widened the drawings of Backprop orders and Your HW2 code past their columns
    # on a 1366 x 768 projector at the 16 px floor)
    heads = [adjoint_label(adjoint_of, i, names.get(i, str(i))) for i in ids]
    arrived: dict[int, int] = {}  # edge -> the frame its contribution arrived (the terms' order)
    frames: list[Frame] = []
    memo: dict[int, tuple] = {}   # node -> (what its text was made from, (text, total)) at its last change
    for f in fs.frames:
        backward = f.phase != "forward"
        edge_text = list(f.edge_text) if backward and f.edge_text else [""] * len(edges)
        for k, t in enumerate(edge_text):
            if t and k not in arrived:
                arrived[k] = f.index
        text = []
        totals = [""] * len(ids)   # a fan-out sum's total (or how many arrived), on a line of its own
        for i, nid in enumerate(ids):
            adj = f.node_adjoint[i] if backward and f.node_adjoint else ""
            if not adj:   # not reached yet (every node of a forward frame): nothing to write
                text.append("")
                continue
            slide = f.node_sum[i] if backward and f.node_sum and i < len(f.node_sum) else ""
            outs = out_edges.get(nid, [])
            state = f.node_state[i] if i < len(f.node_state) else ""
            key = (adj, slide, tuple(edge_text[k] for k in outs), state)
            if memo.get(nid, (None,))[0] != key:   # a node's text changes only when its adjoint, edges or state do
                memo[nid] = (key, _node_text(adj, slide, outs, edge_text, arrived, state))
            line, totals[i] = memo[nid][1]
            text.append(line)
        states = ["idle" if (not backward or s == "computed") else s for s in f.node_state]
        frames.append(Frame(f.index, f.phase, f.caption, list(f.active_nodes) if backward else [],
                            [(d, s) for s, d in f.active_edges] if backward else [], text, states, totals,
                            edge_text, f.warning))
    return FrameSet(list(ids), frames, fs.truncated, fs.forward_per_frame, fs.backward_per_frame, heads,
                    [(d, s) for s, d in edges], [f"adjoint of {names.get(i, i)}" for i in ids])


def _node_text(adj: str, slide: str, outs: list[int], edge_text: list[str], arrived: dict[int, int],
               state: str = "") -> tuple[str, str]:
    """(the line in an adjoint node, its total on a line of its own) from the forward frame's adjoint text
    ``adj``, the slides' fan-out sum ``slide``, the contributions on the node's reversed edges ``outs`` and the
    node's ``state`` (``early``: a broken order finalised it before all its contributions arrived)."""
    # a node marked wrong (page 13's first wrong node: " ✘" after its adjoint) keeps the mark, at the end
    # of its line, not only its colour
    wrong = WRONG_MARK if adj.endswith(WRONG_MARK) else ""
    adj = adj.removesuffix(WRONG_MARK)
    total = adj.split(" = ", 1)[1].split(" (", 1)[0] if " = " in adj else ""
    if ", lost " in total:  # a broken order: what arrived too late is never added: wrong on every page (✘), what
        # was lost on the line under it (on one line, "= 1, 367.04 lost ✘" made the orders' shared drawing smaller)
        kept, lost = total.split(", lost ", 1)
        return f"= {kept}{WRONG_MARK}", f"({lost} lost)"
    if state == "early" and slide.endswith(" received)"):
        # finalised with only some of its contributions: its adjoint is final as it is (the caption says so), the
        # rest has not arrived (and will be lost), so no "+ …" still to come
        got = slide.rsplit(" (", 1)[1].removesuffix(" received)")
        return f"= {total} (final){wrong}", f"(only {got})"
    total_line = ""
    if slide:   # the slides' sum in numbers, each term adjoint · local derivative (the symbols' order), its total under it
        # (the symbols are in the step's caption above the graphs: in the node they pushed the graph off a
        # projector)
        numbers = slide.replace(" received)", ")").split(" = ")[2]
        line, total_line = (f"= {numbers.rsplit(' (', 1)[0]}", f"({numbers.rsplit(' (', 1)[1]}"
                            ) if " (" in numbers else (f"= {numbers}", "= " + slide.split(" = ")[3])
    else:
        ks = sorted((k for k in outs if edge_text[k]), key=lambda k: (arrived[k], k))
        line = _fan_out_line([edge_text[k] for k in ks], len(outs), total)
    return (line + wrong).strip(), total_line


def backward_figure(fs: FrameSet, graph: Graph, forward_figure: dict, **figure_options) -> dict:
    """The backward graph's figure: laid out as the mirror of ``forward_figure`` (its rankdir reversed),
    every edge in the backward colour (:data:`explorer.kit.plotly_figure.ADJOINT`)."""
    rankdir = MIRROR.get(((forward_figure.get("layout") or {}).get("meta") or {}).get("rankdir"), "auto-reversed")
    bfs = backward_frameset(fs, graph)
    width = figure_options.pop("width", None) or ((forward_figure.get("layout") or {}).get("meta") or {}).get(
        "design_width", 460)
    max_height = figure_options.pop("max_height", 620)
    drawing = plan(bfs, graph, width, rankdir, max_height=max_height)

    def better(d) -> tuple:
        # never a window that hides nodes; then every contribution on its edge (a label with no free spot is
        # left out: the slide example's x̄5 → x̄3 lost its 244.69 on a projector); then the larger drawing
        return d.viewport is None, sum(d.edge_labels), d.scale

    # too big for its place: the contributions beside their edges instead of room made for them between the
    # ranks, then the other direction (a long chain on a projector)
    for rd, room in ((rankdir, False), ("auto-reversed", False)):
        if drawing.viewport is None and drawing.scale >= 0.9:
            break
        candidate = plan(bfs, graph, width, rd, max_height=max_height, label_room=room, label_gap=True)
        if better(candidate) > better(drawing):
            drawing = candidate
    return figure_dict(bfs, graph, drawing, edge_color=ADJOINT, pending_edges=True, **figure_options)


def shared_backward_figures(framesets: list[FrameSet], graph: Graph, width: int, max_height: int,
                            frames_on_read: bool = False) -> list[dict]:
    """The backward graphs of several animations of one graph (orders, or the engine's and a student's), on one
    placement so that a node stays put between them: right to left (the output's adjoint at the right, under
    where the output is) when that fits ``width`` without shrinking much, short, so a caption and a verdict
    stay beside it; else the direction that fits. Contributions sit beside their edges. ``frames_on_read``: as
    :func:`~explorer.kit.plotly_figure.figure_dict`'s."""
    backs = [backward_frameset(fs, graph) for fs in framesets]
    union = FrameSet(backs[0].node_ids, [f for b in backs for f in b.frames], heads=backs[0].heads,
                     edges=backs[0].edges)
    # the ranks as far apart as the longest contribution is wide (``label_gap``): each one sits beside its own edge
    # (packed 30 px apart, x̄5 → x̄3's 244.69 on the slide example floated under x̄5, beside no edge)
    drawing = plan(union, graph, width, "RL", max_height=max_height, label_room=False, label_gap=True)
    if drawing.viewport is not None or drawing.scale < 0.9:
        drawing = plan(union, graph, width, "auto-reversed", max_height=max_height, label_room=False, label_gap=True)
    return [figure_dict(b, graph, drawing, edge_color=ADJOINT, pending_edges=True, frames_on_read=frames_on_read)
            for b in backs]


def shared_forward_figures(framesets: list[FrameSet], graph: Graph, width: int, max_height: int,
                           frames_on_read: bool = False) -> list[dict]:
    """The forward graphs, values only (:func:`values_only`), of several animations of one graph (orders, or the
    engine's and a student's: every one runs the same forward pass), on one placement planned from their forward
    frames: left to right within ``width`` x ``max_height``, the output at the right where its adjoint is drawn in
    the backward graph. What a projector shows in the backward graph's place while the forward pass runs, when the
    adjoints are all still empty. Without edge labels its ranks go 16 px apart (it fits a column at a larger scale).
    ``frames_on_read``: as :func:`~explorer.kit.plotly_figure.figure_dict`'s."""
    fronts = [values_only(fs) for fs in framesets]
    forward = FrameSet(fronts[0].node_ids, [f for fs in fronts for f in fs.frames if f.phase == "forward"],
                       heads=fronts[0].heads, edges=fronts[0].edges)
    drawing = plan(forward, graph, width, "LR", max_height=max_height, rank_gap=16)
    return [figure_dict(fs, graph, drawing, frames_on_read=frames_on_read) for fs in fronts]


def legend_html(sent: str = "contribution sent (written on its edge)") -> str:
    """What the backward graph's edges say: sent (the backward colour, its contribution written on it: ``sent``
    says how), not sent yet (grey, dashed) and sent in this step (the highlight colour)."""
    from .plotly_figure import HOT, PENDING

    def line(colour: str, dash: str = "") -> str:
        # a CSS border, not an SVG (Streamlit's HTML element drops SVG)
        return (f"<span style='display:inline-block;width:2em;vertical-align:middle;"
                f"border-top:3px {'dashed' if dash else 'solid'} {colour}'></span>")

    items = [(line(ADJOINT), html.escape(sent)), (line(PENDING, "dash"), "not sent yet"),
             (line(HOT), "this step")]
    return ("<div data-testid='backward-legend' style='line-height:1.6'>" + "".join(
        f"<span style='display:inline-block;white-space:nowrap;margin-right:1.2em'>{svg} {text}</span>"
        for svg, text in items) + "</div>")
