"""The "Topological sort" page: its logic (explorer.topological_sort) and the page headless (AppTest)."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import engine
from explorer import explain as ex
from explorer import topological_sort as T

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "4_Topological_sort.py")


def _respects_edges(model, order) -> bool:
    pos = {nid: k for k, nid in enumerate(order)}
    return all(pos[e.src] < pos[e.dst] for e in model.graph.edges)


@pytest.mark.parametrize("key", list(T.PRESETS))
def test_both_orders_are_topological_and_the_dfs_is_the_engines(key):
    model = T.sort_model(key)
    queue, post = model.queue_order(), model.post_order()
    assert sorted(queue) == sorted(model.node_ids) == sorted(post)
    assert _respects_edges(model, queue) and _respects_edges(model, post)
    assert T.check_order(model, queue).valid and T.check_order(model, post).valid
    # the engine's order, recomputed here on the engine's own tensors
    preset = T.PRESETS[key]
    run = ex.run_forward(preset.program, preset.inputs)
    assert model.engine_order == [run.id_of[t.unique_id] for t in engine.topological_sort(run.output)]
    assert model.engine_order[0] == model.graph.output
    # the DFS read every node's inputs exactly once, starting at the output
    assert sorted(model.dfs_reads) == sorted(model.node_ids) and model.dfs_reads[0] == model.graph.output


@pytest.mark.parametrize("key", list(T.PRESETS))
def test_queue_steps_take_only_ready_nodes(key):
    model = T.sort_model(key)
    for step in model.queue_steps:
        assert step.taken == step.ready[0]
        for nid in step.ready:  # every input of a ready node is processed, and it is not processed itself
            assert nid not in step.processed
            assert all(p in step.processed for p in model.graph.parents(nid))
        # and no unprocessed node outside the queue is ready
        rest = set(model.node_ids) - set(step.processed) - set(step.ready)
        assert all(any(p not in step.processed for p in model.graph.parents(n)) for n in rest)


def test_slide_example_queue_values_are_the_lectures():
    model = T.sort_model("slide")
    taken = {model.name(s.taken): s.value for s in model.queue_steps}
    assert taken["x3"] == pytest.approx(4.5) and taken["x4"] == pytest.approx(1.0)
    assert taken["x5"] == pytest.approx(5.5) and taken["x6"] == pytest.approx(244.69193226)
    assert taken["x7"] == pytest.approx(247.69193226)
    rows = T.queue_table(model, 1)
    assert rows[0]["ready (queue)"] == "x1, x2" and rows[0]["taken"] == "x1"
    assert rows[1]["ready (queue)"] == "x2, x3"
    # the slides' notation, as the Expression explorer and Backprop orders write the same node
    assert model.computes[model.id_of("x3")] == "1.5·x1" and model.computes[model.id_of("x7")] == "x1 + x6"


def test_check_order_agrees_with_brute_force_on_every_permutation():
    model = T.sort_model("slide")
    for perm in itertools.permutations(model.node_ids):
        check = T.check_order(model, list(perm))
        assert check.valid == _respects_edges(model, perm)
        if not check.valid:
            src, dst = check.violated
            assert dst == perm[check.position] and src in model.graph.parents(dst)
            assert src not in perm[:check.position]


def test_check_order_messages_and_partial_orders():
    model = T.sort_model("slide")
    ids = lambda *names: [model.id_of(n) for n in names]  # noqa: E731
    c = T.check_order(model, ids("x1", "x3", "x5"))
    assert not c.valid and c.violated == (model.id_of("x4"), model.id_of("x5"))
    assert "x4 → x5" in c.message
    c = T.check_order(model, ids("x2", "x1", "x4"))
    assert c.valid and not c.complete and "3 of 7" in c.message
    empty = T.check_order(model, [])
    assert empty.valid and not empty.complete and "So far so good" not in empty.message
    assert "Nothing placed yet" in empty.message
    got, dropped = T.names_to_ids(model, ["x1", "zz", "x1", "<b>"])
    assert got == ids("x1") and dropped == ["zz", "x1", "<b>"]


def _fills(fig) -> dict[str, int]:
    """state -> how many node boxes the figure fills with it (one closed outline each)."""
    return {tr["name"][5:]: tr["x"].count(None) if tr["x"] != [None] else 0
            for tr in fig["data"] if str(tr.get("name", "")).startswith("fill:")}


def _texts(fig, name) -> list[str]:
    return [t for tr in fig["data"] if tr.get("name") == name for t in tr["text"]]


def test_graph_figure_marks_states_and_the_violated_edge():
    model = T.sort_model("cube")  # v1 * v1: a repeated input is drawn as one arrow
    step = model.queue_steps[1]
    fig = T.graph_figure(model, T.queue_states(model, 1), T.queue_notes(model, 1), taken=step.taken)
    assert len(model.graph.edges) == 4 and fig["layout"]["meta"]["renderer"] == "graph"
    edges = next(tr for tr in fig["data"] if tr.get("name") == "edges")
    assert edges["x"].count(None) == 3                          # 3 distinct arrows
    assert _fills(fig)["processed"] == 1 and _fills(fig)["taken"] == 1 and _fills(fig)["waiting"] == 1
    fill = {tr["name"][5:]: tr["fillcolor"] for tr in fig["data"] if str(tr.get("name", "")).startswith("fill:")}
    assert fill["taken"] == T.COLOURS["taken"] and fill["processed"] == T.COLOURS["processed"]
    assert "v2 = v1·v1" in _texts(fig, "node") and "= 2" in _texts(fig, "value") and "= 4" in _texts(fig, "value")
    assert _texts(fig, "value").count("= ?") == 1                 # v3 is not computed yet
    outline = fig["data"][2 + 2 + len(T.COLOURS) + 1]             # hot edge x2, fills, lost outline, active outline
    assert outline["x"] != [None] and outline["line"]["width"] >= 3   # the taken node's thick outline
    hot = fig["data"][2]
    assert hot["x"] == []                                         # no edge violated in the queue method

    check = T.check_order(model, [model.id_of("v2")])
    states, badges = T.click_states(model, [model.id_of("v2")], check)
    assert badges == {model.id_of("v2"): "#1 ✗ before v1"}
    fig2 = T.graph_figure(model, states, badges, check.violated)
    assert _fills(fig2)["violated"] == 1 and "#1 ✗ before v1" in _texts(fig2, "value")
    hot, hot_arrow = fig2["data"][2], fig2["data"][3]
    assert hot["x"] and hot["line"]["color"] == T.VIOLATED_EDGE and hot_arrow["fillcolor"] == T.VIOLATED_EDGE
    assert hot["line"]["width"] > 2 * edges["line"]["width"]      # thicker than an ordinary edge
    # the nodes stay where they were: the placement reserves room for values and badges
    centres = lambda f: next(tr for tr in f["data"] if tr.get("name") == "hover")["x"]
    assert centres(fig) == centres(fig2)


def test_legend_names_every_state_in_its_colour():
    html = T.legend_html(T.ORDER_LEGEND, 22)
    assert T.COLOURS["violated"] in html and T.VIOLATED_EDGE in html and "font-size:22px" in html
    assert all(T.COLOURS[k] in T.legend_html(T.QUEUE_LEGEND) for k, _ in T.QUEUE_LEGEND)


# --- the page ----------------------------------------------------------------------------------------------

def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _click(at, label):
    next(b for b in at.button if b.label == label).click().run()
    return _ok(at)


def test_page_queue_steps_and_student_order():
    at = _ok(AppTest.from_file(PAGE, default_timeout=90).run())
    md = "\n".join(m.value for m in at.markdown)
    assert "Step 1 of 7" in md and "x7 → x6 → x5" in md
    _click(at, "Step")
    assert at.session_state["topo_step"] == 2 and at.query_params["step"] == "2"  # 1-based, as the header
    for name in ("x1", "x3", "x5"):
        _click(at, name)
    assert at.query_params["order"] == "x1,x3,x5"
    assert "x4 → x5" in at.error[0].value
    _click(at, "Undo")
    assert at.query_params["order"] == "x1,x3" and not at.error
    _click(at, "Clear")
    for name in ("x2", "x4", "x1", "x3", "x5", "x6", "x7"):
        _click(at, name)
    assert "valid topological order" in at.success[0].value
    assert all(b.disabled for b in at.button if b.label.startswith("x"))


def test_a_click_whose_callback_runs_twice_acts_once():
    """The same click's callback run twice (Streamlit does when the click's run is interrupted before the script
    reaches the buttons): Undo took two nodes off, a node's button placed it twice."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=90).run())
    for name in ("x1", "x2", "x3"):
        _click(at, name)
    at.session_state["topo_order"] = ["x1", "x2"]     # the first run of Undo's callback
    _click(at, "Undo")                                 # the same click again: the buttons drawn with x1, x2, x3
    assert at.query_params["order"] == "x1,x2"
    at.session_state["topo_order"] = ["x1", "x2", "x4"]   # the first run of x4's callback
    _click(at, "x4")
    assert at.query_params["order"] == "x1,x2,x4" and not at.warning


def test_page_deep_link_restores_preset_step_and_order():
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.query_params.update({"preset": "sigmoid", "step": "4", "order": "v2,v1,v3,v9", "present": "1"})
    _ok(at.run())
    assert at.session_state["topo_preset"] == "sigmoid" and at.session_state["topo_step"] == 4
    assert at.session_state["topo_order"] == ["v2", "v1", "v3"]
    assert any("v9" in w.value for w in at.warning)
    at.selectbox(key="topo_preset").set_value("cube").run()
    _ok(at)
    assert at.session_state["topo_step"] == 1 and at.session_state["topo_order"] == []


def test_the_step_header_names_the_ready_nodes_as_the_legend_does():
    """Step 4 of the slide example: x4 alone is ready; the header says "ready", the word of the legend and the
    table ("no unprocessed inputs: x4" read as if x4 were an unprocessed input)."""
    m = T.sort_model(T.DEFAULT_PRESET)
    head = T.step_header(m, 3)
    assert head.replace("\\", "").startswith("#### Step 4 of 7 · ready: **x4** → take **x4** = 2·x2 = 1")
    assert "no unprocessed inputs:" not in head
    assert any(label.startswith("ready (queue)") for _, label in T.QUEUE_LEGEND)
    assert "ready (queue)" in T.queue_table(m, 3)[0]


def test_the_inputs_show_their_given_values_from_the_first_step():
    """Step 1 of the slide example: x2 waits in the queue, but it is an input (``# at x1 = 3, x2 = 0.5``): its node
    reads "= 0.5", as in the slides' trace, not "= ?" as if unknown; the nodes not computed yet still read "= ?"."""
    m = T.sort_model(T.DEFAULT_PRESET)
    notes = {m.name(i): t for i, t in T.queue_notes(m, 0).items()}
    assert notes["x1"] == "= 3" and notes["x2"] == "= 0.5"
    assert all(notes[x] == "= ?" for x in ("x3", "x4", "x5", "x6", "x7"))
    assert {m.name(i): t for i, t in T.queue_notes(m, 6).items()}["x7"] == "= 247.69"


def test_the_engines_own_sort_in_one_paragraph():
    m = T.sort_model(T.DEFAULT_PRESET)
    text = T.engine_order_text(m).replace("\u00a0", " ")
    assert text.startswith("`topological_sort(x7)` returns **x7, x6, x5, x3, x1, x4, x2**: output first")
    assert "Read backwards (x2, x4, x1, x3, x5, x6, x7) it is a valid forward order too, not the queue's." in text
    assert "x4,\u00a0x2" in T.engine_order_text(m)          # a list does not break across lines
    assert T.engine_order_text(T.sort_model("cube")).endswith("it is the queue's order.")


def test_the_engines_own_sort_heads_the_page_on_a_projector():
    """Presentation mode: the engine's order in the row with the program and the queue method's rule, over the steps
    (the engine's section under the steps was a scroll away); outside it, in its section only."""
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.query_params.update({"present": "1"})
    _ok(at.run())
    assert [s.value for s in at.subheader][:2] == ["The queue method (slides)", "The engine's own sort"]
    md = [m.value for m in at.markdown]
    engine_at = next(k for k, v in enumerate(md) if v.startswith("`topological_sort(x7)` returns"))
    step_at = next(k for k, v in enumerate(md) if v.startswith("#### Step 1 of 7"))
    assert engine_at < step_at
    normal = _ok(AppTest.from_file(PAGE, default_timeout=90).run())
    assert not any(m.value.startswith("`topological_sort(") for m in normal.markdown)
