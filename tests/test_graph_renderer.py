"""Every page's graph picture, read from the figure data (not pixels): no label on a label, a node or an
edge, no edge through a node it does not touch, an arrowhead on every edge, parallel edges apart,
WCAG AA contrast. Texts are measured conservatively (font size x characters, see picture_checks)."""
from __future__ import annotations

import copy
import math

import pytest

from explorer.explain import random_dag_tensors, record_execution, record_tensor
from explorer.kit import graphviz_layout as gl
from explorer.kit.figures import at_frame, style_graph_figure
from explorer.kit.frames import build_frames
from explorer.kit.graph_view import trace_picture
from explorer.kit.picture_checks import check_all_frames, check_figure, contrast
from explorer.kit.plotly_figure import ADJOINT, STATE_FILL, TEXT, figure_dict, plan
from explorer.kit.presentation import NORMAL, PRESENTING
from explorer.kit.presets import PRESETS

needs_dot = pytest.mark.skipif(gl.find_dot() is None, reason="Graphviz (graphviz-pure or dot) is not installed")


def assert_clean(fig: dict, every: int = 1) -> None:
    rep = check_all_frames(fig, every=every)
    assert rep.ok, {k: v[:4] for k, v in rep.problems.items() if v}
    assert rep.n_nodes > 0


def _both_looks(fig: dict, every: int = 1) -> None:
    assert_clean(fig, every)
    big = style_graph_figure(fig, PRESENTING).to_dict()
    assert_clean(big, max(every, len(big["frames"]) // 6 or 1))
    assert check_figure(at_frame(big, 0)).min_font_px >= 18  # what a back row reads on a projector


# --- the done-when list: every page's graph ------------------------------------------------------------

@needs_dot
@pytest.mark.parametrize("preset", PRESETS, ids=[p.label[:24] for p in PRESETS])
def test_expression_explorer_presets(preset):
    from explorer.expression_explorer import explorer_model
    _both_looks(explorer_model(preset.program, preset.inputs).figure)
    _both_looks(explorer_model(preset.program, preset.inputs, expand_composites=True).figure, every=3)


@needs_dot
@pytest.mark.parametrize("preset", PRESETS, ids=[p.label[:24] for p in PRESETS])
def test_backprop_orders_presets(preset):
    from explorer.backprop_orders import STRATEGY_LABELS, orders_model
    m = orders_model(preset.program, preset.inputs, tuple(STRATEGY_LABELS))
    for view in m.views.values():
        assert_clean(view.figure, every=2)


@needs_dot
@pytest.mark.parametrize("preset", PRESETS, ids=[p.label[:24] for p in PRESETS])
def test_forward_vs_reverse_presets(preset):
    from explorer.forward_vs_reverse import dual_model
    m = dual_model(preset.program, preset.inputs, "")
    _both_looks(m.figure)


@needs_dot
@pytest.mark.parametrize("key", ["logreg", "mlp", "sentiment", "hw2", "residual", "attention", "rnn", "custom"])
def test_network_explorer_presets_in_both_views(key):
    from explorer.network_explorer.explore import explore
    ex = explore(key)
    for level in ("op", "layer"):
        fig = ex.figure(level, 0, animate=True)
        assert_clean(fig, every=max(1, len(fig["frames"]) // 12))


@needs_dot
def test_static_page_graphs():
    from explorer import static_vs_dynamic as M
    for key in M.EXAMPLES:
        ex = M.build_example(key, True, key != "lecture")
        for fetch in ex.fetches:
            run = M.run_fetch(ex, fetch, list(ex.feeds))
            assert_clean(M.graph_figure(ex.graph, run.evaluated or None, None, fed=run.fed))
    fd = M.folding_demo()
    assert_clean(M.graph_figure(fd.before, width=M.HALF_WIDTH))
    assert_clean(M.graph_figure(fd.after, width=M.HALF_WIDTH))
    for T in (3, 6, 12):
        assert_clean(M.rnn_figure(T))
        assert_clean(M.rnn_figure(T, expand=True))


@needs_dot
@pytest.mark.parametrize("key", ["slide", "sigmoid", "cube", "fanout", "neuron"])
def test_topological_sort_page_graphs(key):
    from explorer import topological_sort as T
    m = T.sort_model(key)
    for step in range(len(m.queue_steps)):  # the queue method, every step
        _both_looks(T.graph_figure(m, T.queue_states(m, step), T.queue_notes(m, step), taken=m.queue_steps[step].taken))
    for order in (m.queue_order()[:3], m.queue_order()[::-1], m.queue_order()):  # partial, wrong, right
        check = T.check_order(m, order)
        states, badges = T.click_states(m, order, check)
        fig = T.graph_figure(m, states, badges, check.violated)
        _both_looks(fig)
        assert (fig["data"][2]["x"] != []) == (check.violated is not None)   # the violated edge is drawn


@needs_dot
def test_unrolled_loop_at_t12_is_a_few_boxes_of_repeated_steps():
    from explorer import static_vs_dynamic as M
    fig = M.rnn_figure(12)
    heads = next(t for t in fig["data"] if t.get("name") == "node")["text"]
    assert "steps 3–11 (9 × 4 ops)" in heads and any(h.startswith("step 12: h12 = σ(h11·w") for h in heads)
    assert len(heads) == 7 and not fig["layout"]["meta"]["window"]   # fits without a window
    _both_looks(fig)


@needs_dot
def test_sentiment_page_network():
    from explorer.sentiment_training.views import network_figure
    from sentiment.model import SentimentNet
    _both_looks(network_figure(SentimentNet()))


@needs_dot
def test_50_node_expression():
    from benchmarks.app_rerun import program_with_nodes
    from explorer.expression_explorer import explorer_model
    text, inputs, nodes = program_with_nodes(50)
    assert nodes >= 45
    m = explorer_model(text, inputs)
    assert_clean(m.figure, every=4)


@needs_dot
def test_500_node_expression_is_boxed_into_blocks():
    out, leaves = random_dag_tensors(500, seed=1)
    tr = record_tensor(out, leaves)
    assert len(tr.graph.without_constants().nodes) >= 500
    pic = trace_picture(tr)
    assert len(pic.graph.nodes) <= 40 and any(n.kind == "group" for n in pic.graph.nodes)
    assert pic.figure["layout"]["meta"]["engine"] != "fallback"
    assert_clean(pic.figure, every=max(1, len(pic.figure["frames"]) // 10))
    # nothing is lost: every backward step of the engine is shown in some frame
    assert pic.frameset.frames[-1].phase == "done" and "∂f/∂x1" in pic.frameset.frames[-1].caption


@pytest.mark.parametrize("width, height", [(940, 3000), (200, 200)], ids=["whole", "through a window"])
def test_frames_built_on_read_are_the_frames_built_at_once(width, height):
    """Backprop orders builds each frame when a Step reads it; every frame, the window's axes included,
    is the one the eager figure holds, and the figure around the frames is the same."""
    from explorer.kit.plotly_figure import FramesOnRead
    tr = record_execution("a = x * y\nb = exp(a) + a * x\nf = b * b + sin(y)", {"x": 0.5, "y": 1.5})
    g = tr.graph.without_constants()
    fs = build_frames(tr, g)
    d = plan(fs, g, width, max_height=height)
    assert (d.viewport is None) == (width == 940)
    eager, lazy = figure_dict(fs, g, d), figure_dict(fs, g, d, frames_on_read=True)
    assert isinstance(lazy["frames"], FramesOnRead) and not isinstance(eager["frames"], FramesOnRead)
    assert len(lazy["frames"]) == len(eager["frames"]) == len(fs.frames) > 10
    assert list(lazy["frames"]) == eager["frames"] and lazy["frames"][-1] == eager["frames"][-1]
    assert {k: v for k, v in lazy.items() if k != "frames"} == {k: v for k, v in eager.items() if k != "frames"}
    k = len(fs.frames) // 2
    assert at_frame(lazy, k, max_frames=1) == at_frame(eager, k, max_frames=1)


# --- what the checks mean --------------------------------------------------------------------------------

@needs_dot
def test_parallel_edges_are_distinct_curves_and_x_to_f_goes_around_v1():
    tr = record_execution("f = x * x * x", {"x": 2.0})
    g = tr.graph.without_constants()
    fs = build_frames(tr, g)
    d = plan(fs, g)
    x, v1, f = (g.by_name(n).id for n in ("x", "v1", "f"))
    both = [e for e in d.placement.edges if (e.src, e.dst) == (x, v1)]
    assert len(both) == 2
    mid = [e.points[len(e.points) // 2] for e in both]
    assert math.dist(*mid) >= 6 * d.scale
    rep = check_figure(at_frame(figure_dict(fs, g, d), len(fs.frames) - 1))
    assert rep.ok and rep.n_edges == 3 + 1 and not rep.edge_node  # x -> f does not cross v1


def test_checks_catch_what_they_claim():
    """The checks can fail: break a clean figure four ways and see each counted."""
    tr = record_execution("f = x1 + exp(1.5*x1 + 2*x2)", {"x1": 3.0, "x2": 0.5})
    g = tr.graph.without_constants()
    fs = build_frames(tr, g)
    fig = at_frame(figure_dict(fs, g, use_dot=gl.find_dot() is not None), len(fs.frames) - 1)
    assert check_figure(fig).ok
    idx = {t.get("name"): i for i, t in enumerate(fig["data"])}

    moved = copy.deepcopy(fig)  # a node's name onto another node's name
    heads = moved["data"][idx["node"]]
    heads["x"][1], heads["y"][1] = heads["x"][0], heads["y"][0]
    assert check_figure(moved).label_label
    out = copy.deepcopy(fig)  # a name pushed out of its box
    out["data"][idx["node"]]["x"][0] += 400
    assert check_figure(out).label_node

    no_arrow = copy.deepcopy(fig)
    arr = no_arrow["data"][idx["arrowheads"]]
    cut = arr["x"].index(None) + 1
    arr["x"], arr["y"] = arr["x"][cut:], arr["y"][cut:]
    assert check_figure(no_arrow).arrowheads_missing

    through = copy.deepcopy(fig)  # a new edge straight across the middle of a node it does not touch
    box = next(t for t in through["data"] if t.get("name") == "box:op")
    bx, by = [v for v in box["x"][:5]], [v for v in box["y"][:5]]
    mid_y = (min(by) + max(by)) / 2
    e = through["data"][idx["edges"]]
    e["x"] += [min(bx) - 300, max(bx) + 300, None]
    e["y"] += [mid_y, mid_y, None]
    arrows = through["data"][idx["arrowheads"]]
    arrows["x"] += arrows["x"][:5]
    arrows["y"] += arrows["y"][:5]
    assert check_figure(through).edge_node

    pale = copy.deepcopy(fig)
    pale["data"][idx["adjoint"]]["textfont"]["color"] = "#fbbf24"
    assert check_figure(pale).low_contrast


def test_an_edge_label_nearer_another_edge_is_counted_astray():
    """A backward edge's number beside the middle of its own edge passes; the same number moved beside another
    edge (the drift a projector showed) is counted, by the one distance the renderer places labels with."""
    from explorer.kit.backward_view import backward_figure
    from explorer.kit.geometry import polyline_rect_distance
    from explorer.kit.picture_checks import _segments
    tr = record_execution("f = x1 + exp(1.5*x1 + 2*x2)", {"x1": 3.0, "x2": 0.5})
    g = tr.graph.without_constants()
    fs = build_frames(tr, g)
    back = backward_figure(fs, g, figure_dict(fs, g))
    fig = at_frame(back, len(back["frames"]) - 1)
    assert check_figure(fig).ok
    lab = next(t for t in fig["data"] if t.get("name") == "edge label")
    edges = _segments(*(lambda t: (t["x"], t["y"]))(next(t for t in fig["data"] if t.get("name") == "edges")))
    assert sorted(lab["customdata"]) == sorted(set(lab["customdata"])) and len(lab["customdata"]) == len(lab["text"])
    k0, k1 = lab["customdata"][0], next(k for k in lab["customdata"][1:])
    stray = copy.deepcopy(fig)   # the first label put at the middle of the second label's edge, a little aside
    other = edges[k1][len(edges[k1]) // 2]
    stray_lab = next(t for t in stray["data"] if t.get("name") == "edge label")
    stray_lab["x"][0], stray_lab["y"][0] = other[0] + 1.0, other[1]
    assert check_figure(stray).label_astray
    assert polyline_rect_distance([(0.0, 0.0), (10.0, 0.0)], (2.0, 3.0, 4.0, 5.0)) == 3.0
    assert polyline_rect_distance([(0.0, 0.0), (10.0, 10.0)], (2.0, 1.0, 4.0, 5.0)) == 0.0
    assert math.isclose(polyline_rect_distance([(0.0, 0.0)], (3.0, 4.0, 5.0, 6.0)), 5.0)


def test_one_segment_rectangle_test_for_the_renderer_and_the_checker():
    """The renderer (which edge labels an edge passes through) and the picture checker (edges through nodes)
    ask one function, so the check is as strict as the drawing: a segment that only touches a box (along its
    border, or ending on it) meets it; one just outside does not."""
    from explorer.kit import picture_checks, plotly_figure
    from explorer.kit.geometry import segment_meets_rect
    assert picture_checks.segment_meets_rect is segment_meets_rect is plotly_figure.segment_meets_rect
    box = (10.0, 10.0, 20.0, 20.0)
    touching = [((0, 10), (30, 10)),      # along the top border
                ((20, 0), (20, 30)),      # along the right border
                ((0, 0), (10, 10)),       # ending on a corner
                ((15, 0), (15, 10)),      # ending on the border
                ((15, 15), (15, 15)),     # a point inside
                ((0, 15), (30, 15)),      # straight through
                ((14, 12), (16, 18))]     # wholly inside
    apart = [((0, 9.9), (30, 9.9)), ((20.1, 0), (20.1, 30)), ((0, 0), (9.9, 9.9)), ((15, 0), (15, 9.9)),
             ((0, 0), (0, 0)),            # a point outside
             ((15, 30), (30, 15))]        # past the corner (20, 20): its bounding box overlaps, x + y = 45 misses
    for p, q in touching:
        assert segment_meets_rect(p, q, box) and segment_meets_rect(q, p, box), (p, q)
    for p, q in apart:
        assert not segment_meets_rect(p, q, box) and not segment_meets_rect(q, p, box), (p, q)


def test_every_fill_keeps_both_text_colours_readable():
    from explorer import static_vs_dynamic as M
    from explorer import topological_sort as T
    fills = list(STATE_FILL.values()) + list(M.COLOURS.values()) + [M.LIT, "#ffffff"] + list(T.COLOURS.values())
    for fill in fills:
        assert contrast(TEXT, fill) >= 4.5, fill
        assert contrast(ADJOINT, fill) >= 4.5, fill
    assert contrast(ADJOINT, TEXT) > 1.5 and ADJOINT != TEXT   # a second, distinct colour


def test_presentation_grows_fonts_and_boxes_together():
    tr = record_execution("f = x1 + exp(1.5*x1 + 2*x2)", {"x1": 3.0, "x2": 0.5})
    g = tr.graph.without_constants()
    fig = figure_dict(build_frames(tr, g), g, use_dot=gl.find_dot() is not None)
    small = check_figure(at_frame(fig, 5))
    big = check_figure(at_frame(style_graph_figure(fig, PRESENTING).to_dict(), 5))
    assert big.min_font_px == pytest.approx(small.min_font_px * PRESENTING.figure_font / NORMAL.figure_font,
                                            rel=1e-3)
    assert big.ok and small.ok


# --- without Graphviz, and big graphs ----------------------------------------------------------------------

def test_without_graphviz_the_page_still_draws_and_says_so(monkeypatch):
    monkeypatch.setenv("AUTODIFF_DOT", "none")
    assert gl.find_dot() is None
    tr = record_execution("f = x * x * x", {"x": 2.0})
    pic = trace_picture(tr)
    lay = pic.figure["layout"]
    assert lay["meta"]["engine"] == "fallback"
    assert any("Graphviz was not found" in a["text"] for a in lay.get("annotations", []))
    rep = check_figure(at_frame(pic.figure, 0))
    # plainer: x -> f may cross v1 here, but texts still fit and parallel edges are still apart
    assert not rep.label_label and not rep.label_node and not rep.arrowheads_missing and not rep.parallel_coincide


def test_layout_cache_is_bounded_by_bytes():
    """The layout memo is the app's one byte-bounded LRU (budget.ByteLRU), sized by the layouts' own bytes."""
    from explorer.kit.budget import ByteLRU
    assert isinstance(gl.cache(), ByteLRU) and gl.cache().max_bytes == gl.CACHE_BYTES
    gl.cache().clear()
    boxes = [gl.Box(i, 40, 20) for i in range(4)]
    links = [gl.Link(i, i + 1) for i in range(3)]
    placed = gl.place(boxes, links)
    if placed.engine == "fallback":
        pytest.skip("no Graphviz: nothing is cached")
    assert len(gl.cache()) == 1 and 0 < gl.cache().bytes <= gl.CACHE_BYTES
    assert gl.place(boxes, links) is placed          # a hit: the same layout object


def test_dot_work_sends_huge_layouts_to_the_plain_layout():
    boxes = [gl.Box(i, 40, 20) for i in range(60)]
    chain = [gl.Link(i, i + 1) for i in range(59)]
    fan = [gl.Link(0, i) for i in range(2, 60)]   # one node feeding every later one: long edges
    assert gl.dot_work(boxes, chain) == 60
    assert gl.dot_work(boxes, chain + fan) > gl.DOT_WORK_LIMIT
    p = gl.place(boxes, chain + fan)
    assert p.engine == "fallback" and "too many" in p.note


@needs_dot
def test_your_hw2_codes_projector_graphs_keep_16_px_on_a_1366_projector():
    """Your HW2 code lays its two graphs out ``floor_growth`` smaller and draws them that much larger: every text
    is 23 px of the 1920 x 1080 layout (16 px on a 1366 x 768 projector), the drawing still fits the column it is
    laid out for, and the grown picture stays clean (no label on a label, a node or an edge)."""
    from explorer.kit.figures import floor_growth, graph_scale, graph_text_sizes, still_graph
    from explorer.kit.presentation import fit_factor, small_screen_floor_px
    from explorer.kit.widgets import graph_px
    from explorer.student_code import view as V
    floor = small_screen_floor_px()
    assert floor == 23 and floor * fit_factor((1366, 768)) >= 16 > (floor - 1) * fit_factor((1366, 768))
    grow = floor_growth(PRESENTING, floor)
    width = graph_px(PRESENTING, V.ORDER_WIDTH, V.PRESENT_GRAPH_SHARE)
    gv = V.graph_view(V.sample_report("bfs_first_touch"), "slide", int(width / grow),
                      int(V.graph_height(True) / graph_scale(PRESENTING) / grow))
    for side in (gv.engine, gv.student):
        for k in (0, side.n_frames // 2, side.n_frames - 1):
            fig = style_graph_figure(still_graph(side.backward_figure, k, title=False), PRESENTING,
                                     floor_px=floor).to_dict()
            assert min(graph_text_sizes(fig)) >= floor
            assert not fig["layout"]["meta"].get("window")            # whole, not a window that follows the step
            x0, x1 = fig["layout"]["xaxis"]["range"]
            assert (x1 - x0) * fig["layout"]["meta"]["scale"] <= width * graph_scale(PRESENTING) + 1   # screen px
            assert fig["layout"]["height"] <= V.graph_height(True) + 1
            assert_clean(fig)
    # without a floor the figure is the page kit's usual size
    plain = style_graph_figure(still_graph(gv.engine.backward_figure, 0), PRESENTING).to_dict()
    assert min(graph_text_sizes(plain)) < floor


@pytest.mark.parametrize("label", ["Slide example: f", "Sigmoid neuron", "Sigmoid quiz", "x·x·x"])
@pytest.mark.parametrize("presenting", [True, False], ids=["projector", "laptop"])
def test_the_expression_explorers_backward_numbers_sit_by_their_own_edges(label, presenting):
    """Every frame of the Expression explorer's animated backward graph: each contribution nearer its own edge than
    any other (the sigmoids' first two numbers sat as near the neighbouring edge), and the picture otherwise clean."""
    from explorer.expression_explorer import explorer_model
    from explorer.kit.figures import graph_scale
    from explorer.kit.plotly_figure import HALF_WIDTH, MAX_HEIGHT
    from explorer.kit.presentation import PRESENTING
    from explorer.kit.presets import PRESETS
    from explorer.kit.widgets import graph_px
    preset = next(p for p in PRESETS if p.label.startswith(label))
    size = ({"width": graph_px(PRESENTING, HALF_WIDTH, 0.54), "max_height": int(300 / graph_scale(PRESENTING))}
            if presenting else {"width": HALF_WIDTH, "max_height": MAX_HEIGHT})   # the page's sizes
    fig = explorer_model(preset.program, preset.inputs, presenting=presenting, **size).backward_figure
    shown = 0
    for k in range(len(fig["frames"])):
        rep = check_figure(at_frame(fig, k))
        assert rep.ok, (k, rep.problems)
        shown = max(shown, sum(1 for t in next(d for d in at_frame(fig, k)["data"]
                                               if d.get("name") == "edge label")["text"] if t))
    assert shown >= 3


@needs_dot
def test_backprop_orders_projector_draws_the_forward_pass_while_it_runs():
    """On a projector each order shows one graph: during the forward steps the values being computed (left to
    right, the output at the right where its adjoint is drawn later), not the backward graph's empty adjoints;
    the forward graph fits the order's column whole (no window), at the scale the page keeps for its text."""
    from explorer.backprop_orders import orders_model
    from explorer.kit.figures import graph_scale, still_graph
    width, height = _orders_projector_size()
    m = orders_model(PRESETS[0].program, PRESETS[0].inputs, ("topological", "bfs_first_touch"), width, height,
                     forward_graphs=True)
    assert not orders_model(PRESETS[0].program, PRESETS[0].inputs, ("topological",)).views["topological"].forward_figure
    for view in m.views.values():
        forward = [f.index for f in view.frameset.frames if f.phase == "forward"]
        assert forward == list(range(len(forward))) and len(forward) >= 3
        meta = view.forward_figure["layout"]["meta"]
        assert meta["rankdir"] == "LR" and not meta.get("window") and meta["scale"] >= 0.9
        for k in forward:
            fig = style_graph_figure(still_graph(view.forward_figure, k, title=False), PRESENTING).to_dict()
            texts = [t for tr in fig["data"] for t in (tr.get("text") or []) if isinstance(t, str)]
            values = [v for v in view.frameset.frames[k].node_text if v]   # every value computed so far is drawn
            assert values and all(v in texts for v in values), (k, values, texts)
            assert not any("x̄" in t or "\u0304" in t for t in texts)      # values only: no adjoint yet
            x0, x1 = fig["layout"]["xaxis"]["range"]
            assert (x1 - x0) * meta["scale"] <= width * graph_scale(PRESENTING) + 1
            assert_clean(fig)


def _orders_projector_size() -> tuple[int, int]:
    """The width and height Backprop orders lays each order's graphs out at on a projector (its page's sizes: the
    graph's share of the page, laid out smaller by the growth that brings its texts to the 1366 x 768 floor)."""
    from explorer.backprop_orders import ORDER_WIDTH, PRESENT_BACK_PX, PRESENT_GRAPH_SHARE
    from explorer.kit.figures import floor_growth, graph_scale
    from explorer.kit.presentation import small_screen_floor_px
    from explorer.kit.widgets import graph_px
    grow = floor_growth(PRESENTING, small_screen_floor_px())
    return (int(graph_px(PRESENTING, ORDER_WIDTH, PRESENT_GRAPH_SHARE) / grow),
            int(PRESENT_BACK_PX / graph_scale(PRESENTING) / grow))


def _hw2_projector_size() -> tuple[int, int]:
    """The same for Your HW2 code's two graphs on a projector."""
    from explorer.kit.figures import floor_growth, graph_scale
    from explorer.kit.presentation import small_screen_floor_px
    from explorer.kit.widgets import graph_px
    from explorer.student_code import view as V
    grow = floor_growth(PRESENTING, small_screen_floor_px())
    return (int(graph_px(PRESENTING, V.ORDER_WIDTH, V.PRESENT_GRAPH_SHARE) / grow),
            int(V.graph_height(True) / graph_scale(PRESENTING) / grow))


LABEL_GAP_MAX = 8.0   # figure units (px at scale 1) between a contribution's label and its own edge, at most


def _backward_figures(where: str) -> list[dict]:
    from explorer.backprop_orders import orders_model
    if where.startswith("orders"):
        size = _orders_projector_size() if where == "orders projector" else (460, 620)
        m = orders_model(PRESETS[0].program, PRESETS[0].inputs, ("topological", "bfs_first_touch"), *size)
        return [v.backward_figure for v in m.views.values()]
    from explorer.student_code import view as V
    size = _hw2_projector_size() if where == "hw2 projector" else (V.ORDER_WIDTH, V.GRAPH_HEIGHT)
    gv = V.graph_view(V.sample_report("bfs_first_touch"), "slide", *size)
    return [gv.engine.backward_figure, gv.student.backward_figure]


@needs_dot
@pytest.mark.parametrize("where", ["orders projector", "orders laptop", "hw2 projector", "hw2 laptop"])
def test_each_contribution_sits_beside_its_own_edge_in_the_backward_graphs(where):
    """Backprop orders and Your HW2 code, the slide example's backward graphs at every step, at the sizes each page
    lays them out at: each contribution's label lies beside its own edge (at most LABEL_GAP_MAX units from it), no
    two labels overlap, and the picture is otherwise clean. On a projector the x̄5 → x̄3 edge was 30 px long for
    its 47 px "244.69": that label floated 36 px under x̄5, by no edge, and x̄5's other two stacked beside it."""
    from explorer.kit.picture_checks import edge_label_gaps
    for fig in _backward_figures(where):
        labelled = 0
        for k in range(len(fig["frames"])):
            shown = at_frame(fig, k)
            gaps = edge_label_gaps(shown)
            far = [(t, e, round(g, 1)) for t, e, g in gaps if g > LABEL_GAP_MAX]
            assert not far, (where, k, far)
            rep = check_figure(shown)
            assert rep.ok, (where, k, rep.problems)
            labelled = max(labelled, len(gaps))
        assert labelled == len(fig["layout"]["meta"].get("edges_left_out", [])) + 7   # every edge's number shown
