"""Layered layout (fallback), composites and group collapsing, frames and their texts, DOT export and the
Plotly figure of the graph renderer."""
import json

import numpy as np
import pydot
import pytest

from explorer.explain import random_dag_tensors, record_execution, record_tensor
from explorer.kit.dot import to_dot
from explorer.kit.frames import build_frames
from explorer.kit.layout import collapse_composites, collapse_groups, layout
from explorer.explain.graph import Graph, GraphEdge, GraphNode
from explorer.kit.plotly_figure import build_figure, figure_dict

SLIDE = "f = x1 + exp(1.5*x1 + 2*x2)"
X = {"x1": 3.0, "x2": 0.5}


def _graph(edges, n):
    return Graph([GraphNode(i, f"n{i}", "op", "op", []) for i in range(n)], [GraphEdge(s, d) for s, d in edges], n - 1)


def test_layers_are_longest_paths_from_inputs():
    tr = record_execution(SLIDE, X)
    g = tr.graph.without_constants()
    pos = layout(g)
    x = {g.node(i).name: p[0] for i, p in pos.items()}
    assert x == {"x1": 0, "x2": 0, "x3": 1, "x4": 1, "x5": 2, "x6": 3, "f": 4}
    assert pos == layout(g)  # deterministic


def test_every_edge_points_to_a_later_layer_and_positions_are_distinct():
    out, leaves = random_dag_tensors(120, seed=4)
    g = record_tensor(out, leaves).graph
    pos = layout(g)
    for e in g.edges:
        assert pos[e.src][0] < pos[e.dst][0]
    assert len(set(pos.values())) == len(g.nodes)


def test_barycenter_untangles_a_crossing():
    # inputs 0,1; layer 1: 2 (uses 1), 3 (uses 0): in execution order the edges cross
    g = _graph([(1, 2), (0, 3), (2, 4), (3, 4)], 5)
    pos = layout(g)
    assert (pos[2][1] > pos[3][1]) == (pos[1][1] > pos[0][1])


def test_collapse_groups_boxes_statements_of_a_big_graph():
    text = "\n".join([f"h{i} = tanh({'x1' if i == 0 else f'h{i - 1}'} * 0.5 + 1)" for i in range(30)]) + "\nf = h29"
    tr = record_execution(text, {"x1": 0.3})
    g = tr.graph
    small = collapse_groups(g, max_nodes=len(g.nodes))
    assert small is g
    boxed = collapse_groups(g, max_nodes=20)
    assert len(boxed.nodes) < 40 and any(n.kind == "group" for n in boxed.nodes)
    box = next(n for n in boxed.nodes if n.group == "h3")
    assert box.name.startswith("h3 (") and box.count > 1
    assert box.value == pytest.approx(g.by_name("h3").value)
    pos = layout(boxed)
    for e in boxed.edges:
        assert pos[e.src][0] < pos[e.dst][0]


def test_frames_follow_the_trace():
    tr = record_execution(SLIDE, X)
    fs = build_frames(tr)
    g = tr.graph.without_constants()
    assert fs.node_ids == [n.id for n in g.nodes]
    phases = [f.phase for f in fs.frames]
    assert phases.count("forward") == 1 + 5 and phases[-1] == "done"
    assert phases.count("backward") == len(tr.steps())
    idx = {nid: i for i, nid in enumerate(fs.node_ids)}
    x1 = idx[g.by_name("x1").id]
    # after f is processed, x1 holds 1 of 2 contributions
    first_back = fs.frames[phases.index("backward")]
    assert first_back.node_adjoint[x1] == "x̄1 = 1 (1 of 2)" and first_back.node_state[x1] == "waiting"
    assert "x̄1 = 1 (1 of 2 received)" in first_back.caption
    assert first_back.active_nodes == [g.by_name("f").id]
    assert (g.by_name("x1").id, g.by_name("f").id) in first_back.active_edges
    assert fs.frames[-1].node_state[x1] == "leaf" and "∂f/∂x1 = 368.04" in fs.frames[-1].caption
    json.dumps(fs.to_dict())


def test_nodes_say_what_they_compute_in_five_digits():
    tr = record_execution(SLIDE, X)
    fs = build_frames(tr)
    head = dict(zip(fs.node_ids, fs.heads))
    g = tr.graph
    assert head[g.by_name("x3").id] == "x3 = 1.5·x1" and head[g.by_name("x6").id] == "x6 = exp(x5)"
    assert head[g.by_name("f").id] == "x7 = x1 + x6" and head[g.by_name("x1").id] == "x1"   # the notes: x7 = f
    k = fs.node_ids.index(g.by_name("x6").id)
    assert fs.frames[-1].node_text[k] == "= 244.69" and fs.frames[-1].node_adjoint[k] == "x̄6 = 1"
    assert "368.0378983963" in fs.hover[fs.node_ids.index(g.by_name("x1").id)]  # full precision on hover


def _local_derivative(op, wrt: str, at: dict) -> float:
    """∂op(**at)/∂wrt by the engine's own backward pass, on its own (no trace, no frames)."""
    import engine
    leaves = {k: engine.tensor(v, requires_grad=True) for k, v in at.items()}
    op(**leaves).backward()
    return float(leaves[wrt].grad.numpy())


def test_fan_out_sum_is_written_symbolically_then_in_numbers_as_the_slides_do():
    from explorer.kit.labels import num
    tr = record_execution(SLIDE, X)
    fs = build_frames(tr)
    g = tr.graph
    x3_bar = tr.adjoints[g.by_name("x3").id]
    # the slide's numbers, from the engine: ∂x3/∂x1 of x3 = 1.5·x1 and ∂x7/∂x1 of x7 = x1 + x6, and x̄1 itself
    d3 = _local_derivative(lambda x1: 1.5 * x1, "x1", {"x1": 3.0})
    d7 = _local_derivative(lambda x1, x6: x1 + x6, "x1", {"x1": 3.0, "x6": float(g.by_name("x6").value)})
    want = (f"x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = {num(x3_bar)}·{num(d3)} + {num(d7)} = "
            f"{num(tr.grads['x1'])}")
    assert want == "x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04"   # the slide's own line
    assert any(f"{want} (2 of 2 received)" in f.caption for f in fs.frames)
    k = fs.node_ids.index(g.by_name("x1").id)
    assert fs.frames[-1].node_sum[k] == want
    partial = next(f.node_sum[k] for f in fs.frames if f.node_sum and f.node_sum[k])
    assert partial == f"x̄1 = x̄7·∂x7/∂x1 + … = {num(d7)} + … (1 of 2 received)"   # x7 is taken first
    # x·x·x: v1 = x·x uses x twice: one term, ∂v1/∂x = 2x the whole derivative; then the output v2 = v1·x
    xxx_trace = record_execution("f = x * x * x", {"x": 2.0})
    xxx = build_frames(xxx_trace)
    dv1 = _local_derivative(lambda x: x * x, "x", {"x": 2.0})
    v1_bar = xxx_trace.adjoints[xxx_trace.graph.by_name("v1").id]
    dv2 = _local_derivative(lambda v1, x: v1 * x, "x", {"v1": float(xxx_trace.graph.by_name("v1").value), "x": 2.0})
    want = f"x̄ = v̄1·∂v1/∂x + v̄2·∂v2/∂x = {num(v1_bar)}·{num(dv1)} + {num(dv2)} = {num(xxx_trace.grads['x'])}"
    assert any(f"{want} (3 of 3 received)" in f.caption for f in xxx.frames), [f.caption for f in xxx.frames]
    # the two x -> v1 edges each carry their own contribution
    last = xxx.frames[-1]
    assert sorted(t for (s, d), t in zip(xxx.edges, last.edge_text)) == ["2", "4", "4", "4"][:len(xxx.edges)] \
        or sorted(last.edge_text) == ["1", "4", "4", "4"]


def test_constants_are_literals_and_no_typed_name_is_reused():
    tr = record_execution("f = x1 - 5", {"x1": 3.0, "x2": 0.5})
    fs = build_frames(tr)
    assert fs.heads == ["x1", "f = x1 − 5"]
    assert all("x2" not in f.caption for f in fs.frames)
    assert not any(n.name == "x2" for n in tr.graph.nodes)
    assert "f = x1 − 5 = -2" in fs.frames[1].caption


def test_composites_are_one_node_until_expanded():
    prog = "y = W @ x + b\nf = sum(tanh(y))"
    at = {"W": [[1, 2, 0.5], [-1, 0, 3]], "x": [0.5, -1, 2], "b": [0.1, -0.2]}
    tr = record_execution(prog, at)
    assert [c.name for c in tr.graph.composites] == ["tanh"]
    small = collapse_composites(tr)
    shown = small.graph.without_constants()
    assert [n.name for n in shown.nodes] == ["W", "x", "b", "v1", "y", "v2", "f"]
    fs = build_frames(small, shown)
    head = dict(zip(fs.node_ids, fs.heads))
    assert head[shown.by_name("v2").id] == "v2 = tanh(y)" and head[shown.by_name("f").id] == "f = sum(v2)"
    assert not any("v5" in f.caption or "v2.1" in f.caption for f in fs.frames)
    # the gradient arriving at y is the one the engine computed through the primitives
    y = fs.node_ids.index(shown.by_name("y").id)
    want = 1 - np.tanh(np.array([-0.4, 5.3])) ** 2
    assert fs.frames[-1].node_adjoint[y] == "y\u0304" + f" = [{want[0]:.5g}, {want[1]:.4e}]".replace("e-05", "e-5")
    expanded = build_frames(tr)
    assert len(expanded.node_ids) > len(fs.node_ids)
    assert any(h.startswith("v2.2 = sigmoid(") for h in expanded.heads)
    assert fs.frames[-1].caption == expanded.frames[-1].caption


def test_bfs_frames_mark_the_lost_contribution():
    tr = record_execution(SLIDE, X, strategy="bfs_first_touch")
    fs = build_frames(tr)
    x1 = fs.node_ids.index(tr.graph.by_name("x1").id)
    assert any(f.node_state[x1] == "lost" for f in fs.frames)
    assert any("LOST" in f.caption for f in fs.frames)
    # the step where x1 passes on an incomplete adjoint is marked
    marked = [f for f in fs.frames if f.warning]
    assert marked and "x1 passes on its adjoint with only 1 of 2" in marked[0].warning
    assert "too late" not in marked[0].warning   # no forecast: the loss is named at the step it happens


def test_path_recursion_frames_sum_leaf_gradients_over_paths():
    tr = record_execution(SLIDE, X, strategy="path_recursion")
    fs = build_frames(tr)
    x1 = fs.node_ids.index(tr.graph.by_name("x1").id)
    assert fs.frames[-1].node_adjoint[x1] == "x̄1 = 368.04 (+367.04, path 2)"
    x5 = fs.node_ids.index(tr.graph.by_name("x5").id)
    assert fs.frames[-1].node_adjoint[x5] == "x̄5 = 244.69"


def test_frames_report_a_caught_recursion_error():
    from explorer.explain import recursion_demo
    _, rec = recursion_demo(1500, strategies=("topological", "recursive_dfs"))
    fs = build_frames(rec, max_frames=50)
    assert "RecursionError" in fs.frames[-1].caption


def test_max_frames_merges_steps_without_dropping_any():
    out, leaves = random_dag_tensors(100, seed=1)
    tr = record_tensor(out, leaves)
    full = build_frames(tr)
    fs = build_frames(tr, max_frames=30)
    assert len(fs.frames) <= 30 and fs.forward_per_frame > 1 and fs.backward_per_frame > 1
    assert fs.frames[-1].node_state == full.frames[-1].node_state
    assert fs.frames[-1].node_text == full.frames[-1].node_text
    assert fs.frames[-1].node_adjoint == full.frames[-1].node_adjoint
    shown = {n for f in fs.frames if f.phase == "backward" for n in f.active_nodes}
    assert shown == {n for f in full.frames if f.phase == "backward" for n in f.active_nodes}


def test_layout_and_frames_cover_a_500_node_graph():
    # its time is measured by benchmarks/explain_frames.py (goal: under a second), never asserted here
    out, leaves = random_dag_tensors(500, seed=1)
    tr = record_tensor(out, leaves)
    g = tr.graph
    assert len(g.nodes) >= 500
    pos = layout(g)
    fs = build_frames(tr, g)
    assert len(pos) == len(g.nodes) and len(fs.frames) > 500


def test_dot_export_parses_and_carries_values_adjoints_and_contributions():
    tr = record_execution(SLIDE, X)
    g = tr.graph.without_constants()
    dot = to_dot(g, tr)
    parsed = pydot.graph_from_dot_data(dot)[0]
    assert len(parsed.get_nodes()) >= len(g.nodes) and len(parsed.get_edges()) == len(g.edges)
    assert "x3 = 1.5·x1" in dot and "x̄1 = 368.04" in dot and "244.69" in dot
    assert 'label="367.04"' in dot  # the contribution x3 sends back to x1
    fs = build_frames(tr)
    mid = fs.frames[7]
    dot2 = to_dot(g, tr, frame=mid, frameset=fs, title="step 7")
    assert pydot.graph_from_dot_data(dot2) and "#fde047" in dot2  # the active node is highlighted


def test_dot_escapes_quotes_in_names():
    g = Graph([GraphNode(0, 'a"b', "leaf", "input", [], 1.0)], [], 0)
    assert pydot.graph_from_dot_data(to_dot(g))


def test_plotly_figure_has_one_frame_per_step_and_does_not_move_nodes():
    tr = record_execution(SLIDE, X)
    g = tr.graph.without_constants()
    fs = build_frames(tr, g)
    d = figure_dict(fs, g)
    assert len(d["frames"]) == len(fs.frames)
    assert all("x" not in tr_ for fr in d["frames"] for tr_ in fr["data"] if tr_.get("mode") == "text")
    fig = build_figure(fs, g)
    assert len(fig.frames) == len(fs.frames)
    assert fig.layout.updatemenus[0].buttons[0].label == "▶ Play"
    assert [s_["label"] for s_ in d["layout"]["sliders"][0]["steps"]][:2] == ["1", "2"]  # 1-based steps
    json.loads(fig.to_json())


def test_a_long_fan_out_sum_writes_its_first_terms_and_how_many_more():
    """A weight used 148 times: the line names the first terms, says how many more, and ends with the engine's sum
    (writing all 148 at every arrival was quadratic: 11k terms per order on Backprop orders' worst request)."""
    from explorer.kit.labels import MAX_SUM_TERMS, fan_out_sum
    terms = [(f"v{k}", 2.0, 3.0) for k in range(1, 11)]
    line = fan_out_sum("W", terms, 10, 10, 30.0)
    assert line.startswith("W̄ = v̄1·∂v1/∂W + ") and f"v̄{MAX_SUM_TERMS}·∂v{MAX_SUM_TERMS}/∂W" in line
    assert f"v̄{MAX_SUM_TERMS + 1}" not in line and f"… ({10 - MAX_SUM_TERMS} more terms)" in line
    assert line.endswith("= 30")
    short = fan_out_sum("W", terms[:3], 3, 3, 9.0)
    assert "more terms" not in short and short.endswith("= 2·1.5 + 2·1.5 + 2·1.5 = 9")   # adjoint·derivative, as the symbols
