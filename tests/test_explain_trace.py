"""Execution as events: forward steps, backward events per strategy, the random-DAG harness,
the gradient graph."""
import json
import math

import numpy as np
import pytest

import engine
from engine import autodiff
from explorer.explain import (STRATEGY_NAMES, central_differences, doubling_chain_costs, doubling_chain_program,
                            gradient_graph, random_dag_program, random_dag_tensors, random_tree_program,
                            record_execution, record_tensor, recursion_demo, run_forward, strategy_comparison)
from engine.strategies import PathRecursion

SLIDE = "f = x1 + exp(1.5*x1 + 2*x2)"
X = {"x1": 3.0, "x2": 0.5}
EXACT = {"x1": 1 + 1.5 * math.exp(5.5), "x2": 2 * math.exp(5.5)}


def _slide(x1, x2):
    return x1 + (1.5 * x1 + 2.0 * x2).exp()


def test_strategies_are_registered_with_the_core():
    for name in STRATEGY_NAMES:
        assert autodiff.get_strategy(name).name == name
    assert autodiff.get_strategy("bfs_first_touch").correct is False


def test_slide_gradients_match_engine_grad_and_central_differences_to_1e_9():
    tr = record_execution(SLIDE, X)
    g1, g2 = engine.grad(_slide, argnums=(0, 1))(engine.tensor(3.0), engine.tensor(0.5))
    fd = central_differences(SLIDE, X)
    for name, ref in (("x1", g1.item()), ("x2", g2.item())):
        assert tr.grads[name] == pytest.approx(ref, rel=1e-12)
        assert tr.grads[name] == pytest.approx(EXACT[name], rel=1e-12)
        assert tr.grads[name] == pytest.approx(fd[name], rel=1e-9)


def test_topological_events_show_adjoints_contributions_and_fan_out_sums():
    tr = record_execution(SLIDE, X)
    names = {n.id: n.name for n in tr.graph.nodes}
    visits = [names[e.node] for e in tr.backward if e.kind == "visit"]
    assert visits[0] == "f" and set(visits) == {"f", "x1", "x2", "x3", "x4", "x5", "x6"}
    x1 = tr.graph.by_name("x1").id
    acc = [e for e in tr.backward if e.kind == "accumulate" and e.node == x1]
    assert [(e.received, e.expected) for e in acc] == [(1, 2), (2, 2)]
    assert acc[0].value == pytest.approx(1.0) and acc[1].value == pytest.approx(EXACT["x1"])
    # x1 is visited only after both contributions arrived (its adjoint is complete then)
    first_visit = next(e.index for e in tr.backward if e.kind == "visit" and e.node == x1)
    assert first_visit > acc[1].index
    sends = [(names[e.node], names[e.parent], e.value) for e in tr.backward if e.kind == "send"]
    assert ("x3", "x1", pytest.approx(1.5 * math.exp(5.5))) in sends
    assert ("x6", "x5", pytest.approx(math.exp(5.5))) in sends
    assert tr.vjp_calls == 5 and tr.error is None
    # topological visits follow the engine's own topological order (output first)
    assert [e.node for e in tr.backward if e.kind == "visit"] == tr.order
    assert [names[i] for i in tr.order][0] == "f"
    json.dumps(tr.to_dict())  # plain data


def test_forward_steps_are_the_engine_ops_in_execution_order():
    run = run_forward(SLIDE, X)
    order = {n.uid: n.id for n in run.graph.nodes}
    topo = [order[t.unique_id] for t in engine.topological_sort(run.output)[::-1] if t.unique_id in order]
    pos = {nid: i for i, nid in enumerate(topo)}
    for s in run.steps:  # every step comes after its inputs in the engine's topological order
        for p in s.inputs:
            if p in pos and s.node in pos:
                assert pos[p] < pos[s.node]
    assert run.steps[2].text == "x5 = add(x3, x4) = 5.5"


def test_bfs_first_touch_is_wrong_on_the_slide_example_and_says_what_was_lost():
    tr = record_execution(SLIDE, X, strategy="bfs_first_touch")
    assert tr.grads["x1"] == pytest.approx(1.0)          # only the short path's contribution
    assert tr.grads["x2"] == pytest.approx(EXACT["x2"])  # x2 lies on one path only
    lost = [e for e in tr.backward if e.kind == "lost"]
    assert len(lost) == 1 and lost[0].value == pytest.approx(1.5 * math.exp(5.5))
    assert lost[0].node == tr.graph.by_name("x1").id


@pytest.mark.parametrize("seed", range(8))
def test_bfs_first_touch_is_right_on_trees(seed):
    text, inputs = random_tree_program(10, seed)
    ref = record_execution(text, inputs).grads
    tr = record_execution(text, inputs, strategy="bfs_first_touch")
    for k in ref:
        assert tr.grads[k] == pytest.approx(ref[k], rel=1e-12, abs=1e-15)
    assert not [e for e in tr.backward if e.kind == "lost"]


def test_harness_bfs_often_wrong_on_dags_others_never():
    rows = {r.strategy: r for r in strategy_comparison(n_graphs=12, n_ops=10, seed=3)}
    assert rows["topological"].wrong == 0 and rows["recursive_dfs"].wrong == 0 and rows["path_recursion"].wrong == 0
    assert rows["bfs_first_touch"].wrong >= 3
    assert rows["path_recursion"].mean_vjp_calls >= rows["topological"].mean_vjp_calls
    tree_rows = {r.strategy: r for r in strategy_comparison(n_graphs=6, n_ops=8, seed=5, tree=True)}
    assert all(r.wrong == 0 for r in tree_rows.values())


def test_one_criterion_for_a_wrong_gradient():
    """harness.gradients_wrong: relative to the largest input gradient (at least 1); a missing gradient reads as
    zeros; a non-number, a NaN or another size is wrong."""
    from explorer.explain.harness import gradients_wrong
    ref = {"x1": 368.04, "x2": np.array([0.0, 2.0])}
    assert not gradients_wrong(dict(ref), ref)
    assert not gradients_wrong({"x1": 368.04 + 1e-8, "x2": [0.0, 2.0]}, ref)     # 1e-8 <= 1e-9 * 368.04
    assert gradients_wrong({"x1": 368.04 + 1e-6, "x2": [0.0, 2.0]}, ref)
    assert gradients_wrong({"x1": 1.0, "x2": [0.0, 2.0]}, ref)                     # x3's contribution lost
    assert not gradients_wrong({"x": None}, {"x": 0.0}) and gradients_wrong({"x": None}, {"x": 1.0})
    assert gradients_wrong({"x": {"type": "str"}}, {"x": 1.0}) and gradients_wrong({"x": float("nan")}, {"x": 1.0})
    assert gradients_wrong({"x": [1.0, 1.0]}, {"x": 1.0})
    assert not gradients_wrong({"x": 1e-10}, {"x": 0.0}) and gradients_wrong({"x": 1e-8}, {"x": 0.0})  # scale 1


def test_harness_counts_match_the_recorded_traces():
    """The statistics' counting path runs the same engine calls as record_execution."""
    programs = [random_dag_program(9, s) for s in range(4)]
    rows = {r.strategy: r for r in strategy_comparison(programs=programs)}
    ref = [record_execution(text, inputs).grads for text, inputs in programs]
    for s in STRATEGY_NAMES:
        traces = [record_execution(text, inputs, strategy=s) for text, inputs in programs]
        assert rows[s].mean_vjp_calls == pytest.approx(sum(t.vjp_calls for t in traces) / 4)
        assert rows[s].mean_backward_ops == pytest.approx(sum(t.backward_ops for t in traces) / 4)
        wrong = sum(any(abs(t.grads[k] - r[k]) > 1e-9 * max(1.0, abs(r[k])) for k in r) for t, r in zip(traces, ref))
        assert rows[s].wrong == wrong


def test_harness_is_bounded_and_path_recursion_gives_up_as_an_error():
    with pytest.raises(ValueError, match="at most"):
        strategy_comparison(n_graphs=10_000)
    rows = {r.strategy: r for r in strategy_comparison(programs=[doubling_chain_program(12)],
                                                       strategies=("topological", "path_recursion"),
                                                       max_vjp_calls=1000)}
    assert rows["path_recursion"].errors == 1 and rows["topological"].errors == 0


def test_random_dag_programs_are_seeded_and_reuse_values():
    a = random_dag_program(10, 7)
    assert a == random_dag_program(10, 7) and a != random_dag_program(10, 8)
    tr = record_execution(*a)
    assert any(e.expected and e.expected > 1 for e in tr.backward if e.kind == "accumulate")


def test_path_recursion_vjp_calls_grow_as_2_to_the_depth_topological_linearly():
    rows = doubling_chain_costs(depths=(2, 4, 6, 8))
    by = {(r["depth"], r["strategy"]): r for r in rows}
    for d in (2, 4, 6, 8):
        assert by[(d, "path_recursion")]["vjp_calls"] == 2 ** d - 1
        assert by[(d, "topological")]["vjp_calls"] == d
        assert by[(d, "path_recursion")]["grad"] == pytest.approx(by[(d, "topological")]["grad"], rel=1e-12)
        # the real VJPs ran: ops executed in the backward pass scale the same way
        assert by[(d, "path_recursion")]["backward_ops"] > by[(d, "topological")]["backward_ops"] * (2 ** d - 1) / d / 2


def test_path_recursion_adjoints_sum_over_paths_like_topological():
    for text, inputs in ((SLIDE, X), doubling_chain_program(5)):
        ref = record_execution(text, inputs).adjoints
        got = record_execution(text, inputs, strategy="path_recursion").adjoints
        assert set(got) == set(ref)
        for k in ref:
            assert got[k] == pytest.approx(ref[k], rel=1e-12)


def test_path_recursion_reports_its_work_limit():
    text, inputs = doubling_chain_program(8)
    autodiff.register_strategy(_Limited())
    try:
        tr = record_execution(text, inputs, strategy="path_recursion_limited")
    finally:
        autodiff.STRATEGIES.pop("path_recursion_limited", None)
    assert tr.error and "WorkLimitExceeded" in tr.error


class _Limited(PathRecursion):
    name = "path_recursion_limited"

    def __init__(self):
        super().__init__(max_vjp_calls=50)


def test_recursive_dfs_hits_a_real_recursion_error_on_a_3000_chain_topological_does_not():
    topo, rec = recursion_demo(3000)  # the notes' chain h <- h * 1.0002
    assert topo.error is None and round(topo.grads["x1"], 10) == 1.8220094911
    assert topo.grads["x1"] == pytest.approx(1.0002 ** 3000, rel=1e-12)
    assert rec.error is not None and rec.error.startswith("RecursionError")
    assert rec.grads["x1"] is None  # nothing was accumulated: the sort failed before any VJP
    # on a shallow graph the same strategy is right
    small = record_execution(SLIDE, X, strategy="recursive_dfs")
    assert small.error is None and small.grads["x1"] == pytest.approx(EXACT["x1"])


def test_all_strategies_run_the_real_vjps():
    for s in STRATEGY_NAMES:
        tr = record_execution(SLIDE, X, strategy=s)
        assert tr.backward_ops > 0 and tr.vjp_calls >= 5


def test_gradient_graph_is_built_from_engine_ops():
    g = gradient_graph(SLIDE, X)
    kinds = {n.kind for n in g.nodes}
    assert {"seed", "gradient", "forward"} <= kinds
    out_x1 = g.by_name("x̄1")  # the slides' names: an adjoint is x̄, one tensor handed on is every node's
    assert out_x1.value == pytest.approx(EXACT["x1"]) and out_x1.op == "add"
    assert g.by_name("x̄2").value == pytest.approx(EXACT["x2"])
    assert {"x̄7", "x̄5"} <= {n.name for n in g.nodes}  # x̄6 is x̄7 (= f̄) and x̄3, x̄4 are x̄5: one tensor handed on
    assert not any("seed" in n.name or n.name.startswith("∂") for n in g.nodes)
    # the VJP of exp uses the forward value x6: the gradient graph points at it
    fwd = [n for n in g.nodes if n.kind == "forward"]
    assert any(n.name == "x6" for n in fwd)
    json.dumps(g.to_dict())


def test_create_graph_allows_second_derivatives_through_the_recorded_backward():
    tr = record_execution("f = x1 * x1 * x1", {"x1": 2.0}, create_graph=True)
    assert tr.grads["x1"] == pytest.approx(12.0)
    assert tr.gradient_graph is not None and len(tr.gradient_graph.nodes) > 3


def test_non_scalar_output_is_seeded_with_ones():
    tr = record_execution("y = W @ x", {"W": [[1.0, 2.0], [3.0, 4.0]], "x": [1.0, -1.0]})
    assert tr.grads["x"] == pytest.approx([4.0, 6.0])
    assert tr.grads["W"] == [[1.0, -1.0], [1.0, -1.0]]


def test_record_tensor_traces_any_engine_graph():
    out, leaves = random_dag_tensors(60, seed=2)
    tr = record_tensor(out, leaves)
    assert len(tr.graph.nodes) >= 60 and tr.error is None
    out.backward()  # compare with a plain backward on the same graph
    for k, leaf in leaves.items():
        assert tr.grads[k] == pytest.approx(leaf.grad.item() / 2, rel=1e-12)  # grads accumulated twice now


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown traversal strategy"):
        record_execution(SLIDE, X, strategy="depth_first_guess")


def test_lists_as_json_values_and_flags():
    tr = record_execution("f = sum(exp(v))", {"v": [1.0, 2.0]})
    assert tr.grads["v"] == pytest.approx(np.exp([1.0, 2.0]).tolist())
    assert json.loads(json.dumps(tr.to_dict()))["grads"]["v"][0] == pytest.approx(math.e)
