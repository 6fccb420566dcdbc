"""The lecture hall, without a browser: the backward graph in the slides' notation read from its
figure data, the orders' verdict lines that give nothing away, the log axes' labels, the projector scaling."""
from __future__ import annotations

import pytest

from explorer.backprop_orders import orders_model
from explorer.expression_explorer import explorer_model
from explorer.kit import presets
from explorer.kit.backward_view import backward_frameset, values_only
from explorer.kit.figures import at_frame
from explorer.kit.plotly_figure import ADJOINT, EDGE, PENDING
from explorer.kit.widgets import graph_px
from explorer.kit.presentation import PRESENTING, fit_screen_rules, log_dtick, readable_figure

SLIDE, AT = presets.DEFAULT.program, presets.DEFAULT.inputs


@pytest.fixture(scope="module")
def slide():
    return explorer_model(SLIDE, AT)


def _trace(fig: dict, name: str) -> dict:
    return next(tr for tr in fig["data"] if tr.get("name") == name)


def _frame_text(fig: dict, frame: int, name: str) -> list[str]:
    """The texts of trace ``name`` at ``frame`` (the frame's own copy when it has one)."""
    names = [tr.get("name") for tr in fig["data"]]
    fr = fig["frames"][frame]
    idx = names.index(name)
    if idx in fr["traces"]:
        return fr["data"][fr["traces"].index(idx)]["text"]
    return fig["data"][idx]["text"]


def test_backward_graph_names_adjoints_reverses_edges_and_writes_the_fan_out_sum(slide):
    fig = slide.backward_figure
    heads = _trace(fig, "node")["text"]
    assert sorted(heads) == sorted(["x̄1", "x̄2", "x̄3", "x̄4", "x̄5", "x̄6", "x̄7"])
    # every edge reversed; a sent contribution's edge in the backward colour, one still to come grey and dashed
    assert _trace(fig, "sent edges")["line"]["color"] == ADJOINT == _trace(fig, "sent arrowheads")["fillcolor"]
    assert _trace(fig, "edges")["line"]["color"] == PENDING and _trace(fig, "edges")["line"]["dash"] == "dash"
    assert slide.figure["data"][0]["line"]["color"] == EDGE  # the forward graph keeps its grey
    bfs = backward_frameset(slide.frameset, slide.shown_trace.graph.without_constants())
    assert bfs.edges == [(d, s) for s, d in slide.frameset.edges]
    # step 10 (frame 9): x3 sends 367.04 to x1, whose adjoint is the sum as the slides write it in numbers (each
    # term adjoint · local derivative, the order of its symbols x̄3·∂x3/∂x1, in the consumers' order), its total under it
    values = _frame_text(fig, 9, "value")
    assert "= 244.69·1.5 + 1" in values and "= 368.04" in _frame_text(fig, 9, "adjoint")
    assert "367.04" in _frame_text(fig, 9, "edge label")
    # step 7: x1 holds one of its two contributions; forward steps show no adjoint at all
    assert "= 1 + …" in _frame_text(fig, 6, "value") and "(1 of 2)" in _frame_text(fig, 6, "adjoint")
    assert all(t == "" for t in _frame_text(fig, 3, "value"))


def _sent_edges(fig: dict, frame: int) -> int:
    """How many edges frame ``frame`` draws in the backward colour (segments of the "sent edges" trace)."""
    xs = next(tr for tr in at_frame(fig, frame)["data"] if tr.get("name") == "sent edges")["x"]
    return sum(1 for a, b in zip(xs, xs[1:] + [None]) if a is not None and b is None)


def test_backward_edges_are_pending_until_their_contribution_is_sent(slide):
    fig = slide.backward_figure
    first_backward = next(f.index for f in slide.frameset.frames if f.phase != "forward")
    assert _sent_edges(fig, first_backward - 1) == 0         # forward steps: every backward edge still pending
    counts = [_sent_edges(fig, k) for k in range(first_backward, slide.n_frames)]
    assert counts == sorted(counts) and counts[-1] == len(slide.frameset.edges)   # one by one, all sent at the end
    # step 10: every edge but x̄4 → x̄2 carries its contribution; that one is still pending
    assert _sent_edges(fig, 9) == len(slide.frameset.edges) - 1
    assert [t for t in _frame_text(fig, 9, "edge label") if t] == [t for t in slide.frameset.frames[9].edge_text if t]


def test_every_contribution_is_written_on_its_edge_on_a_projector():
    """The presentation layout's backward graph places a label on every edge (x̄5 → x̄3 had none)."""
    from explorer.kit.figures import graph_scale
    m = explorer_model(SLIDE, AT, width=graph_px(PRESENTING, 460, 0.54),
                       max_height=int(300 / graph_scale(PRESENTING)), presenting=True)
    fig = m.backward_figure
    assert len(_trace(fig, "edge label")["x"]) == len(m.frameset.edges)
    assert fig["layout"]["meta"]["scale"] * 14 * graph_scale(PRESENTING) >= 18   # still readable from the back
    assert sorted(t for t in _frame_text(fig, m.n_frames - 1, "edge label")) == sorted(
        m.frameset.frames[-1].edge_text)


def test_the_projector_forward_graph_carries_values_only(slide):
    only = values_only(slide.frameset)
    assert all(not f.node_adjoint and not f.edge_text for f in only.frames)
    assert [f.node_text for f in only.frames] == [f.node_text for f in slide.frameset.frames]


def test_orders_verdict_lines_give_nothing_away():
    m = orders_model(SLIDE, AT, ("topological", "bfs_first_touch"))
    bfs, topo = m.views["bfs_first_touch"], m.views["topological"]
    for k in range(6):  # steps 1-6, the forward pass: nothing taken yet, the same neutral line for both orders
        assert bfs.verdict_line(k) == topo.verdict_line(k) == (
            "ok", "forward pass: no node taken yet (the backward pass starts at step 7)")
    # step 7, the first backward step: the same neutral line for both orders
    assert bfs.verdict_line(6) == topo.verdict_line(6) == ("ok", "so far every node was taken with all its contributions")
    kind, line = bfs.verdict_line(7)  # step 8: x1 is taken holding 1 of its 2 contributions
    assert kind == "wrong" and line.startswith("✗ step 8: x1 finalised with 1 of 2 contributions")
    assert bfs.verdict_line(10)[1].startswith("✗ step 11: LOST: the contribution 367.04 reached x1")
    # the reference order is not compared with itself
    assert topo.verdict_line(topo.n_frames - 1) == ("right", "✓ the reference: reverse topological order")
    # x1 is drawn wrong from step 8 on, never before; the topological order never draws one
    i = bfs.frameset.heads.index("x1")
    states = [f.node_state[i] for f in bfs.frameset.frames]
    assert "early" not in states[:7] and all(s in ("early", "lost", "active") for s in states[7:])
    assert not any("early" in f.node_state for f in topo.frameset.frames)
    back = bfs.backward_figure
    fill = [tr for tr in back["frames"][7]["data"] if tr.get("name") == "fill:early"]
    assert fill and fill[0]["x"] != [None]
    # the orders' backward graphs draw a contribution still to come as the Expression explorer does: pending
    for view in (bfs, topo):
        assert _trace(view.backward_figure, "edges")["line"]["color"] == PENDING
        assert _sent_edges(view.backward_figure, 3) == 0 < _sent_edges(view.backward_figure, 8)


@pytest.mark.parametrize("height, values, expected", [
    (480, [1, 100], "D2"),      # two decades in ~260 px: 1, 2 and 5 fit, every digit does not
    (480, [1e-4, 1], 1),        # four decades: the decades alone
    (480, [1e-12, 1], 2),       # twelve decades in 260 px: every other one
    (2000, [1, 10], "D1"),      # one decade across the screen: every digit
])
def test_log_axis_labels_fit_their_decades(height, values, expected):
    spec = {"data": [{"type": "scatter", "x": [1, 2], "y": values}],
            "layout": {"height": height, "yaxis": {"type": "log"}}}
    assert log_dtick(spec, "yaxis", 24) == expected
    lifted = readable_figure(spec, PRESENTING)["layout"]["yaxis"]
    assert lifted["dtick"] == log_dtick(spec, "yaxis", lifted["tickfont"]["size"])
    assert readable_figure({**spec, "layout": {**spec["layout"], "yaxis": {"type": "log", "dtick": 1}}},
                           PRESENTING)["layout"]["yaxis"]["dtick"] == 1  # a figure's own choice stays


def test_a_smaller_projector_shows_the_design_page_scaled():
    rules = "\n".join(fit_screen_rules())
    assert "calc(100vw / 1920px)" in rules and "calc(100vh / 1080px)" in rules and "scale(var(--fit))" in rules
    # charts measure their layout size: their element drawn at 1 / z, the chart inside scaled back
    assert "scale(calc(1 / var(--fit)))" in rules and "pointer-events: none" in rules


def test_the_orders_backward_graphs_label_every_edge_on_a_projector():
    """Backprop orders on a projector: every edge of the backward graph labelled, right to left (short: beside
    its code on the first screen), readable from the back row (at the page's sizes: laid out smaller by the growth
    that brings its texts to the 1366 x 768 floor)."""
    from explorer.backprop_orders import ORDER_WIDTH, PRESENT_BACK_PX, PRESENT_GRAPH_SHARE
    from explorer.kit.figures import floor_growth, graph_scale
    from explorer.kit.presentation import small_screen_floor_px
    grow = floor_growth(PRESENTING, small_screen_floor_px())
    m = orders_model(SLIDE, AT, ("topological", "bfs_first_touch"),
                     int(graph_px(PRESENTING, ORDER_WIDTH, PRESENT_GRAPH_SHARE) / grow),
                     int(PRESENT_BACK_PX / graph_scale(PRESENTING) / grow))
    fig = m.views["bfs_first_touch"].backward_figure
    assert len(_trace(fig, "edge label")["x"]) == len(m.views["bfs_first_touch"].frameset.edges)
    assert fig["layout"]["meta"]["scale"] * 14 * graph_scale(PRESENTING) * grow >= small_screen_floor_px()
    assert fig["layout"]["meta"]["rankdir"] == "RL" and not fig["layout"]["meta"]["window"]


def test_a_node_finalised_early_reads_final_and_a_lost_contribution_is_marked_wrong():
    """Backprop orders, BFS first touch on the slide example. Step 8: the caption says x̄1 = 1 is final, and the
    box said "= 1 + … (1 of 2)" as if the second contribution were still to be added: it says final, and how
    many arrived. Step 11 on: "= 1, 367.04 lost" gets the ✘ Your HW2 code gives the same node (what was lost on
    the line under it)."""
    from explorer.kit.backward_view import WRONG_MARK
    m = orders_model(SLIDE, AT, ("topological", "bfs_first_touch"))
    bfs, topo = m.views["bfs_first_touch"], m.views["topological"]
    i = bfs.frameset.heads.index("x1")
    assert "is final" in bfs.verdict_line(7)[1]
    for k in (7, 8, 9):   # steps 8-10: finalised, the lost contribution not arrived yet
        assert _frame_text(bfs.backward_figure, k, "value")[i] == "= 1 (final)", k
        assert _frame_text(bfs.backward_figure, k, "adjoint")[i] == "(only 1 of 2)", k
    for k in range(10, bfs.n_frames):   # step 11 on: lost, and marked wrong as on Your HW2 code
        assert _frame_text(bfs.backward_figure, k, "value")[i] == "= 1" + WRONG_MARK, k
        assert _frame_text(bfs.backward_figure, k, "adjoint")[i] == "(367.04 lost)", k
    # the topological order at step 8: x1 still waits for its second contribution
    assert _frame_text(topo.backward_figure, 7, "value")[i] == "= 1 + …"
    assert not any("(final)" in t or WRONG_MARK in t for k in range(topo.n_frames)
                   for t in _frame_text(topo.backward_figure, k, "value"))


def test_the_neutral_verdict_is_in_the_text_colour():
    from explorer.backprop_orders import VERDICT_COLOUR, verdict_markdown
    assert verdict_markdown("ok", "so far every node was taken") == "**so far every node was taken**"
    assert verdict_markdown("wrong", "✗ x") == ":red[**✗ x**]" and verdict_markdown("right", "✓ x") == ":green[**✓ x**]"
    assert VERDICT_COLOUR["ok"] == "inherit"
