"""Layered layout, group collapsing, frames, DOT export and the Plotly figure."""
import json
import time

import pydot
import pytest

from engine.explain import random_dag_tensors, record_execution, record_tensor
from explorer.kit.dot import to_dot
from explorer.kit.frames import build_frames
from explorer.kit.layout import collapse_groups, layout
from engine.explain.graph import Graph, GraphEdge, GraphNode
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
    assert "1 of 2 received" in first_back.node_text[x1] and first_back.node_state[x1] == "waiting"
    assert first_back.active_nodes == [g.by_name("f").id]
    assert (g.by_name("x1").id, g.by_name("f").id) in first_back.active_edges
    assert fs.frames[-1].node_state[x1] == "leaf" and "368" in fs.frames[-1].caption
    json.dumps(fs.to_dict())


def test_bfs_frames_mark_the_lost_contribution():
    tr = record_execution(SLIDE, X, strategy="bfs_first_touch")
    fs = build_frames(tr)
    x1 = fs.node_ids.index(tr.graph.by_name("x1").id)
    assert any(f.node_state[x1] == "lost" for f in fs.frames)
    assert any("LOST" in f.caption for f in fs.frames)


def test_path_recursion_frames_sum_leaf_gradients_over_paths():
    tr = record_execution(SLIDE, X, strategy="path_recursion")
    fs = build_frames(tr)
    x1 = fs.node_ids.index(tr.graph.by_name("x1").id)
    assert "grad = 368 (path 2: +367)" in fs.frames[-1].node_text[x1]
    x3 = fs.node_ids.index(tr.graph.by_name("x5").id)
    assert "x̄5 = 244.7" in fs.frames[-1].node_text[x3]


def test_frames_report_a_caught_recursion_error():
    from engine.explain import recursion_demo
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
    shown = {n for f in fs.frames if f.phase == "backward" for n in f.active_nodes}
    assert shown == {n for f in full.frames if f.phase == "backward" for n in f.active_nodes}


def test_layout_and_frames_for_500_nodes_under_a_second():
    out, leaves = random_dag_tensors(500, seed=1)
    tr = record_tensor(out, leaves)
    g = tr.graph
    assert len(g.nodes) >= 500
    t = time.perf_counter()
    pos = layout(g)
    fs = build_frames(tr, g)
    elapsed = time.perf_counter() - t
    assert len(pos) == len(g.nodes) and len(fs.frames) > 500
    assert elapsed < 1.0, elapsed


def test_dot_export_parses_and_carries_values_adjoints_and_contributions():
    tr = record_execution(SLIDE, X)
    g = tr.graph.without_constants()
    dot = to_dot(g, tr)
    parsed = pydot.graph_from_dot_data(dot)[0]
    assert len(parsed.get_nodes()) >= len(g.nodes) and len(parsed.get_edges()) == len(g.edges)
    assert "x3 = mul" in dot and "x̄1 = 368" in dot and "244.7" in dot
    assert 'label="367"' in dot  # the contribution x3 sends back to x1
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
    pos = layout(g)
    fs = build_frames(tr, g)
    d = figure_dict(fs, g, pos)
    assert len(d["frames"]) == len(fs.frames)
    assert all("x" not in fr["data"][1] for fr in d["frames"])  # positions only in the base trace
    fig = build_figure(fs, g, pos)
    assert len(fig.frames) == len(fs.frames)
    assert fig.layout.updatemenus[0].buttons[0].label == "Play"
    json.loads(fig.to_json())


def test_forward_and_gradient_graph_in_one_dot():
    from explorer.kit.dot import to_dot_with_gradients
    tr = record_execution(SLIDE, X, create_graph=True)
    dot = to_dot_with_gradients(tr)
    parsed = pydot.graph_from_dot_data(dot)[0]
    fwd = tr.graph.without_constants()
    x6 = fwd.by_name("x6").id
    # exp's VJP reads the forward value x6: a dashed edge from that forward node into the gradient graph
    assert any(e.get_source() == f"n{x6}" and e.get_destination().startswith("g") and e.get("style") == "dashed"
               for e in parsed.get_edges())
    assert "∂f/∂x1 = add\\n368" in dot
    with pytest.raises(ValueError, match="create_graph=True"):
        to_dot_with_gradients(record_execution(SLIDE, X))
