"""The "Static vs dynamic" page: its logic module (explorer.static_vs_dynamic) and the page headless (AppTest)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
import engine.backends
from explorer.explain.numbers import num
from explorer import static_vs_dynamic as M
from explorer.kit.presentation import PACED_SLIDER

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "9_Static_vs_dynamic.py")
TIMEOUT = 120


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    parts += [s.value for s in at.success]
    return "\n".join(map(str, parts))


def graphs(at: AppTest) -> list[str]:
    """The graph figures of the page (the graph renderer's Plotly figures), as JSON text."""
    return [el.proto.spec for el in at.get("plotly_chart") if '"renderer": "graph"' in el.proto.spec
            or '"renderer":"graph"' in el.proto.spec]


# --- logic -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(M.EXAMPLES))
def test_every_fetch_runs_and_equals_eager(key):
    ex = M.build_example(key, with_gradients=True, with_train=key != "lecture")
    for fetch in ex.fetches:
        r = M.run_fetch(ex, fetch, list(ex.feeds))
        assert r.error is None and 0 < len(r.evaluated) <= r.needed_total
        assert r.matches_eager in (True, None)
    assert ex.gradient_nodes > 0 and ex.eager_ops_per_step > 0


def test_evaluated_count_includes_the_fed_placeholders_the_fetch_reads():
    ex = M.build_example("lecture", with_gradients=False)
    runs = {f: M.run_fetch(ex, f, ["x"]) for f in ("h", "x @ W", "W (a variable)")}
    assert {f: r.counted for f, r in runs.items()} == {"h": 6, "x @ W": 3, "W (a variable)": 1}  # the lecture's 6, 3
    assert "5 computed + 1 fed" in runs["h"].count_text() and "fed" not in runs["W (a variable)"].count_text()
    logreg = M.build_example("logreg", with_gradients=True)
    r = M.run_fetch(logreg, "loss", ["x", "y"])
    assert len(r.fed_used) == 2 and r.counted == len(r.evaluated) + 2 and "placeholders as the" in r.count_text()
    p = M.run_fetch(logreg, "p = sigmoid(x @ w + b)", ["x", "y"])  # y is fed but p does not read it
    assert len(p.fed_used) == 1


def test_sub_expression_lights_up_only_its_dependencies():
    ex = M.build_example("lecture", with_gradients=True)
    r = M.run_fetch(ex, "x @ W", ["x"])
    assert [ex.graph.nodes[i].name for i in r.evaluated] == ["W", "matmul"]
    dot = M.graph_dot(ex.graph, r.evaluated, upto=1)
    assert dot.count(M.LIT) == 1 and "#1 W" in dot  # one node lit so far, numbered in run order
    assert M.COLOURS["gradient"] in M.graph_dot(ex.graph)


def test_unfed_placeholder_is_reported_by_name():
    ex = M.build_example("logreg")
    r = M.run_fetch(ex, "loss", ["x"])
    assert r.value is None and "placeholder 'y'" in r.error


def test_unrolled_rnn_counts_grow_with_length():
    rows = M.unrolled_rnn_rows((3, 6, 12))
    assert [r["length T"] for r in rows] == [3, 6, 12]
    eager = [r["eager ops (forward)"] for r in rows]
    static = [r["static nodes (forward)"] for r in rows]
    assert eager == [4 * t for t in (3, 6, 12)]  # getitem, mul, add, sigmoid per step
    assert static == [3 + 4 * t for t in (3, 6, 12)]  # + placeholder x, variable w, constant h0
    assert all(r["h_T equal"] and r["dh_T/dw equal"] for r in rows)


def test_folding_demo_shrinks_the_graph_and_keeps_values():
    fd = M.folding_demo()
    assert fd.same_values and fd.rows[1]["total"] < fd.rows[0]["total"]
    assert {"exp", "div"} <= set(fd.folded)


@pytest.mark.parametrize("key", list(M.EXAMPLES))
def test_node_counts_add_up(key):
    ex = M.build_example(key, with_gradients=True, with_train=key != "lecture")
    parts = M.node_breakdown(ex.graph)
    assert sum(parts[k] for k in M.BREAKDOWN) == parts["total"] == len(ex.graph.nodes)
    assert parts["gradient nodes"] == ex.gradient_nodes - parts["updates"]
    text = M.breakdown_text(parts)
    assert text.startswith(f"{len(ex.graph.nodes)} nodes = ")
    assert sum(int(t.split()[0]) for t in text.split(" = ")[1].split(" + ")) == len(ex.graph.nodes)


def test_folding_table_columns_add_up():
    fd = M.folding_demo()
    for row in fd.rows:
        assert sum(row[k] for k in M.BREAKDOWN) == row["total"]
    assert fd.rows[0]["total"] == len(fd.before.nodes) and fd.rows[1]["total"] == len(fd.after.nodes)


def test_eager_run_records_the_forward_graph():
    for key in M.EXAMPLES:
        ex = M.build_example(key, with_gradients=False)
        names = {n.name for n in ex.eager_graph.nodes}
        # the static graph's forward part, recorded; the tape skips ops on tensors that need no gradient
        # (mlp: -y enters as a constant), the static graph builds them
        assert len(ex.eager_graph.nodes) == ex.forward_nodes - (key == "mlp")
        assert {"x"} <= names and ({"W", "b"} <= names or {"w", "b"} <= names or {"W1", "W2"} <= names)
    fig = M.eager_figure(M.build_example("lecture").eager_graph)
    drawn = json.dumps(fig)
    assert "v1 = x @ W" in drawn or "v1 = matmul(x, W)" in drawn or "x @ W" in drawn
    assert M.COLOURS["variable"] in drawn and M.COLOURS["placeholder"] in drawn


def test_data_dependent_branch_runs_eagerly_but_cannot_be_built():
    bd = M.branch_demo()
    assert bd.branches == ["relu(h)", "−h"]
    ops = [[n.op for n in g.nodes if n.op != "leaf"] for g in bd.graphs]
    assert ops == [["mul", "relu"], ["mul", "neg"]]          # each input records the branch it took
    np.testing.assert_allclose(bd.outputs[0], np.maximum(bd.inputs[0] * 0.5, 0))
    np.testing.assert_allclose(bd.outputs[1], -bd.inputs[1] * 0.5)
    assert "control flow" in bd.static_error


def test_unneeded_gradient_nodes_stay_orange():
    """The lecture graph with gradients(): fetching h leaves the gradient nodes unevaluated, drawn pale orange."""
    ex = M.build_example("lecture", with_gradients=True)
    r = M.run_fetch(ex, "h", ["x"])
    frames, _ = M.static_picture(ex.graph, r.evaluated, None, r.fed)
    states = dict(zip(frames.node_ids, frames.frames[0].node_state))
    grads = [n.id for n in ex.graph.nodes if n.role == "gradient"]
    assert grads and all(states[i] == "faded_gradient" for i in grads)
    red, _, blue = (int(M.FADED["gradient"][i:i + 2], 16) for i in (1, 3, 5))
    assert M.FADED["gradient"] != M.FADED["op"] and red - blue >= 40     # still orange, only paler
    assert all(states[n.id] in ("lit", "faded_variable") for n in ex.graph.nodes if n.kind == "variable")


def test_counts_over_steps():
    ex = M.build_example("mlp")
    rows = M.counts_over_steps(ex, (1, 10))
    assert rows[1]["static: nodes"] == rows[0]["static: nodes"] == len(ex.graph.nodes)
    assert rows[1]["eager: nodes recorded"] == 10 * rows[0]["eager: nodes recorded"] == 10 * 12
    assert rows[1]["eager: ops run"] == 10 * ex.eager_ops_per_step


def test_code_shown_builds_the_graph_drawn():
    """No gradient nodes unless the code calls gradients(); the lecture's 6 nodes by default."""
    plain = M.build_example("lecture", with_gradients=False)
    assert "gradients(" not in plain.static_code and len(plain.graph.nodes) == 6
    assert not any(n.role == "gradient" for n in plain.graph.nodes)
    assert "backward" not in plain.eager_code and len(plain.eager_graph.nodes) == 6
    grads = M.build_example("lecture", with_gradients=True)
    assert "gradients(sum(h), [W, b])" in grads.static_code and "sum(h).backward()" in grads.eager_code
    # sum(h) and 10 gradient nodes (ReLU's VJP is where(y > 0, ȳ, 0): the comparison and its constant 0)
    assert grads.gradients_added == len(grads.graph.nodes) - 6 == 11
    train = M.build_example("logreg", with_gradients=False, with_train=True)
    assert "minimize(loss)" in train.static_code and "gradients(" not in train.static_code


def test_eager_counts_add_up():
    for key in M.EXAMPLES:
        for grads in (False, True):
            ex = M.build_example(key, with_gradients=grads)
            text = M.eager_count_text(ex)
            leaves = sum(1 for n in ex.eager_graph.nodes if n.op == "leaf")
            ops = len(ex.eager_graph.nodes) - leaves
            assert f"{len(ex.eager_graph.nodes)} nodes = {leaves} leaves + {ops} ops" in text
            assert ex.eager_forward_ops + ex.eager_backward_ops == ex.eager_ops_per_step
            assert (f"{ex.eager_ops_per_step} ops per step" in text) == grads
    lecture = M.build_example("lecture", with_gradients=True)
    assert (lecture.eager_forward_ops, lecture.eager_backward_ops) == (4, 8)   # 12 ops beside a 7-node graph


def test_notes_counts_are_explained_with_ours():
    rows = M.unrolled_rnn_rows((3, 6, 12))
    note = M.rnn_note(rows)
    assert "10 / 19 / 37 eager ops (3T + 1)" in note and "(16T + 2)" in note and "here 4T and 12T + 2" in note
    with pytest.raises(ValueError):
        M.linear_fit((3, 6, 12), (1, 2, 5))
    logreg = M.build_example("logreg", with_gradients=True, with_train=True)
    assert "adds 16 to 8" in M.gradients_note(logreg) and "adds 39 nodes to 22" in M.gradients_note(logreg)
    train = M.run_fetch(logreg, "train step (SGD)", ["x", "y"])
    assert "68 nodes built once, 54 evaluated" in M.training_note(logreg, train.counted)
    assert "42 built, 25 evaluated" in M.training_note(logreg, train.counted)
    assert "fold 3 of their example's 6 ops" in M.folding_note(M.folding_demo())
    assert [n.name for n in M.loss_nodes(logreg)] == ["binary_cross_entropy"]   # with its mean: one node


def test_framework_map_ties_every_row_to_the_engine():
    assert [g for g, _, _ in M.FRAMEWORK_GOALS] == ["expressive", "productive", "efficient"]
    means = " ".join(m for _, m, _ in M.FRAMEWORK_GOALS)
    for words in ("no CUDA needed", "scale", "hardware acceleration"):     # the notes' own words for the goals
        assert words in means
    assert [r[""] for r in M.FRAMEWORK_CRITERIA] == ["hardware", "ease of use", "ecosystem", "parallelism"]
    assert all(set(r) == {"", "PyTorch", "TensorFlow", "JAX", "this engine"} and all(r.values())
               for r in M.FRAMEWORK_CRITERIA)
    names = [r["framework"] for r in M.FRAMEWORKS]
    assert {"NumPy", "PyTorch", "TensorFlow 1", "JAX"} <= set(names)
    text = " ".join(r["compiles with"] + r["in this engine"] for r in M.FRAMEWORKS)
    for word in ("torch.compile", "tf.function", "jax.jit", "engine.compile", "engine.grad", "backward()",
                 "engine.static"):
        assert word in text


def test_compile_demo_is_bit_identical():
    d = M.compile_demo(steps=3, tokens=5)
    assert d["identical"] and len(d["losses"]) == 4 and d["replayed_ops"] <= d["traced_ops"]
    assert d["distinct_losses"] == 4          # dropout draws a fresh mask every replayed step
    c = d["graph_counts"]
    # word vectors, padding mask, labels; fc1 / fc2 weights and biases
    assert c["placeholder"] == 3 and c["variable"] == 4 and c["op"] == d["replayed_ops"] and 0 < c["gradient"] < c["op"]
    b = d["breakdown"]
    assert sum(b[k] for k in M.BREAKDOWN) == b["total"] == c["total"]      # constants counted too


@pytest.mark.parametrize("device", ["numpy", "python"])
def test_tf1_two_phase_example_runs_on_the_engine(device):
    demo = M.two_phase_demo(device)
    assert demo.available and demo.built == ["a", "b", "mul", "add", "div"]
    assert demo.before_run.startswith("SymbolicValueError")          # phase 1 computed nothing
    assert demo.value == 15 * 5 / (15 + 5) == demo.eager_value       # phase 2: the Session's number
    assert [demo.graph.nodes[i].name for i in demo.evaluated] == demo.built
    assert demo.backend_kernels == type(engine.backends.get_backend(device)).__name__
    assert f"res = {num(demo.value)}" in demo.run_text() and f"`{device}` backend" in demo.run_text()
    assert f"Graph(backend={device!r})" in M.two_phase_code(device)


def test_tf1_two_phase_on_a_backend_this_machine_lacks_says_why():
    missing = [d for d in M.device_choices() if d not in engine.available_backends()]
    for d in missing:
        demo = M.two_phase_demo(d)
        assert not demo.available and demo.value is None and "not available" in demo.run_text()
        assert M.device_label(d).endswith("(not available here)")
    for d in engine.available_backends():
        assert M.two_phase_demo(d).available and M.device_label(d) == d
    with pytest.raises(ValueError):
        M.two_phase_demo("tpu")


# --- the page, headless --------------------------------------------------------------------------------

def test_page_default_runs_the_lecture_graph():
    from tests.test_app_pages import fixed_figures_ready
    fixed_figures_ready()       # the granularity table is a fixed figure: drawn once it is computed
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    # the lecture: sess.run(h, feed) evaluates 6 (x, W, b, matmul, add, relu): the fed placeholder counts
    assert "Evaluated **6 of" in texts(at) and "5 computed + 1 fed" in texts(at)
    # run graph, the eager run's graph, TF1's two-phase graph, the two branches, unrolled loop, folding before / after
    assert len(graphs(at)) == 8
    assert M.LIT in graphs(at)[0]
    assert "matmul → add → relu" in texts(at)
    table = at.dataframe[0].value  # the unrolled-loop table (the counts over steps are an HTML table)
    assert list(table["length T"]) == [3, 6, 12]
    assert set(table["h_T equal"]) == {"yes"}   # one convention for True in every table: no ticks beside "true"
    # the counts over steps, granularity, the framework map's three tables
    assert len(at.table) == 1 + 1 + 3 and list(at.table[0].value.columns)[-1] == "eager: graphs"  # whole, no cut column
    # the recurrent loop's section carries no note about `if` (the branch below is where it is explained, once)
    assert sum("control flow such as" in t for t in texts(at).split("\n")) == 1


def test_page_fetch_feed_and_error():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    at.selectbox(key="static_fetch").set_value("x @ W")
    ok(at.run())
    assert "Evaluated **3 of" in texts(at) and "W → matmul" in texts(at)  # the lecture: x @ W evaluates 3
    at.multiselect(key="static_fed").set_value([])
    ok(at.run())
    assert "placeholder 'x'" in texts(at)


def test_page_training_op_and_other_program():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    at.selectbox(key="static_example").set_value("logreg")
    ok(at.run())
    at.checkbox(key="static_train").check()
    ok(at.run())
    at.selectbox(key="static_fetch").set_value("train step (SGD)")
    ok(at.run())
    assert "training op ran" in texts(at)
    assert "update_w" in graphs(at)[0] and "update_b" in graphs(at)[0]


def test_page_compile_button():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    next(b for b in at.button if b.key == "static_compile").click()
    ok(at.run())
    assert "bit for bit: **True**" in texts(at)
    assert [m.label for m in at.metric][:2] == ["ops traced", "ops replayed"]


def test_page_deep_link_round_trip():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["example"] = "mlp"
    at.query_params["length"] = "12"
    ok(at.run())
    assert at.selectbox(key="static_example").value == "mlp"
    assert at.select_slider(key="static_length").value == 12
    assert "Static graph for T = 12: 51 nodes" in texts(at)


def test_page_deep_link_length_that_is_not_offered_is_reported():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["length"] = "5"  # the slider offers 3, 6, 12 only
    ok(at.run())
    assert at.select_slider(key="static_length").value == 6
    assert any("'length' ignored" in w.value for w in at.warning)


def test_presentation_mode_shows_small_tables_as_html_tables():
    """st.dataframe draws on a canvas at a fixed size; in presentation mode the small tables are HTML tables,
    whose text the presentation CSS enlarges."""
    from tests.test_app_pages import fixed_figures_ready
    fixed_figures_ready()       # the granularity table is a fixed figure: drawn once it is computed
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    ok(at.run())
    # counts over steps, unrolled loop, folding; granularity; the framework map's three tables
    assert len(at.table) == 7 and not at.dataframe
    assert any("stMetricValue" in h.proto.body for h in at.get("html"))


def test_no_graph_on_the_page_is_cut_to_a_window():
    """A graph wider than its width is drawn as a window onto part of it (its text never shrinks): every graph
    of the default page, and the RNN at its longest, fits whole."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["length"] = "12"
    ok(at.run())
    metas = [json.loads(g)["layout"]["meta"] for g in graphs(at)]
    assert len(metas) == 8 and not any(m.get("window") for m in metas), metas


def _whole_in_window(graph, fig, evaluated, upto, fed, focus):
    """Names of the nodes drawn whole inside the window of a windowed static-graph figure."""
    from explorer.kit.plotly_figure import plan
    frames, drawn = M.static_picture(graph, evaluated, upto, fed, M.STATIC_WIDTH, None, focus)
    p = plan(frames, drawn, M.STATIC_WIDTH, edge_labels=False).placement
    (x0, x1), (y0, y1) = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    names = {n.id: n.name for n in graph.nodes}
    return {names[i] for i, ((cx, cy), (w, h)) in ((i, (p.centers[i], p.sizes[i])) for i in p.centers)
            if x0 <= cx - w / 2 and cx + w / 2 <= x1 and y0 <= cy - h / 2 and cy + h / 2 <= y1}


def test_a_training_graph_too_big_for_the_page_is_windowed_on_its_loss():
    """Logistic regression's training graph (exercise 11's link) is wider than the page, so it is drawn through a
    window. With the whole train step lit, the window shows the loss the step skipped beside its lit inputs (the
    prediction and the fed labels); a window on the graph's last node showed one update box and empty space.
    Part way along the evaluation-order slider, the window follows the node lit last."""
    ex = M.build_example("logreg", with_gradients=False, with_train=True)
    r = M.run_fetch(ex, "train step (SGD)", ["x", "y"])
    n = len(r.evaluated)
    for upto in (n, 0):
        focus = M.window_focus(ex, r.evaluated, upto)
        fig = M.graph_figure(ex.graph, r.evaluated, upto, fed=r.fed, focus=focus)
        assert fig["layout"]["meta"]["window"]
        whole = _whole_in_window(ex.graph, fig, r.evaluated, upto, r.fed, focus)
        assert {"binary_cross_entropy", "sigmoid", "y"} <= whole, whole
    lit = {n.name: i for i, n in enumerate(ex.graph.nodes)}
    assert ex.graph.nodes[r.evaluated[-1]].name == "update_b" and lit["binary_cross_entropy"] not in r.evaluated
    for upto in (3, n // 2, n - 1):
        focus = M.window_focus(ex, r.evaluated, upto)
        assert focus == [r.evaluated[upto - 1]]
        fig = M.graph_figure(ex.graph, r.evaluated, upto, fed=r.fed, focus=focus)
        assert ex.graph.nodes[r.evaluated[upto - 1]].name in _whole_in_window(ex.graph, fig, r.evaluated, upto,
                                                                              r.fed, focus)
        # the window's point is no highlight: no node gets the active outline
        assert "#111827" not in {tr.get("line", {}).get("color") for tr in fig["data"]
                                 if tr.get("mode") == "lines" and any(v is not None for v in tr.get("x", []))}


def test_exercise_11_link_opens_the_training_step_lit():
    from urllib.parse import parse_qsl, urlsplit
    from explorer import exercises as E
    link = E.build("static_training").link
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    for k, v in parse_qsl(urlsplit(link).query):
        at.query_params[k] = v
    ok(at.run())
    assert at.selectbox(key="static_fetch").value == "train step (SGD)"
    assert "Evaluated **25 of 26**" in texts(at) and "68 nodes built once, 54 evaluated" in texts(at)


def test_legends_wear_the_borders_the_graphs_draw():
    """The dotted border the renderer draws around a node that takes no gradient (a constant, eager data) is in
    the legends: each chip has its node's fill and border, and the eager legend says what dotted means."""
    from explorer.kit.plotly_figure import KIND_BORDER
    static = M.legend_html()
    assert f"1px dotted {KIND_BORDER['constant']}" in static and f"2px solid {KIND_BORDER['input']}" in static
    assert static.count("<span") == len(M.LEGEND) + 1
    eager = M.eager_legend_html()
    assert "dotted border: no gradient flows to it" in eager
    fig = M.eager_figure(M.build_example("lecture").eager_graph)
    dotted = [tr for tr in fig["data"] if tr.get("name") == "box:constant"]
    assert dotted and dotted[0]["line"]["dash"] == "dot" and dotted[0]["x"] != [None]   # x is drawn dotted
    assert f"background:{M.COLOURS['placeholder']};border:1px dotted" in eager       # ... and its chip is


def test_branch_code_fits_its_box():
    """The branch example's code box is a third of the row at 1400 px: no line longer than 24 characters."""
    assert max(map(len, M.BRANCH_CODE.split("\n"))) <= 24


def test_tables_write_true_and_false_one_way():
    from explorer.kit.widgets import yes_no
    rows = yes_no([{"a": True, "b": np.bool_(False), "c": 1, "d": "x"}])
    assert rows == [{"a": "yes", "b": "no", "c": 1, "d": "x"}]


def test_on_a_projector_the_training_graph_window_shows_the_skipped_loss_whole_and_no_cut_text():
    """Exercise 11's link in presentation mode: the graph is laid out for the stage column's width and the first
    screen's remaining height (PRESENT_GRAPH_PX), so its window is narrower and lower than the laptop's. It still
    shows the loss the train step skips whole, beside its inputs (the prediction, the fed labels) and the gradient
    node that reads them; a box the window cuts keeps no text ("…= sigmoid·add_1" cut at the left read as
    clipped). A node named after its op is drawn by its formula alone (the loss's box was 482 px wide: it could
    not share a projector's window with its inputs)."""
    from explorer.kit.figures import graph_scale
    from explorer.kit.plotly_figure import plan
    from explorer.kit.presentation import PRESENTING
    from explorer.kit.widgets import graph_px
    ex = M.build_example("logreg", with_gradients=False, with_train=True)
    r = M.run_fetch(ex, "train step (SGD)", ["x", "y"])
    width = graph_px(PRESENTING, M.STATIC_WIDTH, M.PRESENT_STAGE_SHARE)
    height = int(M.PRESENT_GRAPH_PX / graph_scale(PRESENTING))
    assert width < M.STATIC_WIDTH and height < 620   # the projector's window is the smaller one
    focus = M.window_focus(ex, r.evaluated, len(r.evaluated))
    fig = M.graph_figure(ex.graph, r.evaluated, len(r.evaluated), fed=r.fed, focus=focus, width=width,
                         max_height=height, whole_text_only=True)
    assert fig["layout"]["meta"]["window"]
    frames, drawn = M.static_picture(ex.graph, r.evaluated, len(r.evaluated), r.fed, width, None, focus)
    p = plan(frames, drawn, width, edge_labels=False, max_height=height).placement
    (x0, x1), (y0, y1) = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    whole = {i for i, ((cx, cy), (w, h)) in ((i, (p.centers[i], p.sizes[i])) for i in p.centers)
             if x0 <= cx - w / 2 and cx + w / 2 <= x1 and y0 <= cy - h / 2 and cy + h / 2 <= y1}
    names = {n.id: n.name for n in ex.graph.nodes}
    assert {"binary_cross_entropy", "sigmoid", "y", "bce_grad"} <= {names[i] for i in whole}
    assert len(whole) < len(p.centers)   # the window does cut boxes: those keep no text
    heads = next(t for t in fig["data"] if t.get("name") == "node")["text"]
    shown = {h for h in heads if h}
    want = {frames.heads[frames.node_ids.index(i)] for i in whole}
    assert shown == want, shown ^ want
    assert "binary_cross_entropy(sigmoid, y)" in shown and "mul_1 = expand·bce_grad" in shown
    assert "Evaluated **25 of 26** nodes: 23 computed + 2 fed" == r.count_text(short=True)
    # the laptop's figure keeps cut text (there it is there to pan to)
    lap = M.graph_figure(ex.graph, r.evaluated, len(r.evaluated), fed=r.fed, focus=focus)
    assert sum(bool(h) for h in next(t for t in lap["data"] if t.get("name") == "node")["text"]) == len(p.centers)


def test_page_tf1_two_phase_example():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    assert any("tf.constant(15" in c.value and "sess.run(res)" in c.value for c in at.code)
    value = M.two_phase_demo("numpy").value
    assert f"res = {num(value)}" in texts(at) and "`numpy` backend" in texts(at)
    assert any(c.value.startswith("SymbolicValueError") for c in at.code)
    at.radio(key="static_device").set_value("python")
    ok(at.run())
    assert "`python` backend (PythonBackend)" in texts(at)
    for d in (d for d in M.device_choices() if d not in engine.available_backends()):
        at.radio(key="static_device").set_value(d)
        ok(at.run())
        assert f"No run on `{d}`" in "\n".join(w.value for w in at.warning)


def test_framework_overhead_sets_the_notes_figure_beside_pytorchs_time_for_the_same_step():
    d = M.compile_demo(steps=3, tokens=5)
    assert M.NOTES_OVERHEAD in M.overhead_text(d, None) and "not installed" in M.overhead_text(d, None)
    pytest.importorskip("torch")
    over = M.overhead_against_pytorch(d, steps=3)
    assert over["torch_us"] > 0
    assert over["eager_ratio"] == pytest.approx(d["eager_us"] / over["torch_us"])
    text = M.overhead_text(d, over)
    assert f"{over['torch_us']:.0f} µs" in text and f"{over['eager_ratio']:.2f}×" in text
    assert f"{d['traced_ops']} ops a step" in text and M.NOTES_OVERHEAD in text


def test_pytorchs_step_is_the_engines_step():
    """The step PyTorch times is the demo's: from the same weights and batch, without dropout, one step's loss
    is the engine's (float32)."""
    torch = pytest.importorskip("torch")
    x, mask, y, params, _ = M._demo_batch(10, 5, 32)
    X, Mk, Y = torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(y)
    h = (X * Mk[:, :, None]).sum(1) / Mk.sum(1, keepdim=True)
    W1, b1, W2, b2 = (torch.from_numpy(p) for p in params)
    p = torch.sigmoid(torch.relu(h @ W1.T + b1) @ W2.T + b2).squeeze(1)
    theirs = torch.nn.functional.binary_cross_entropy(p, Y).item()
    from sentiment.model import model_from_arrays
    net = model_from_arrays(params, dropout=0.0)
    ours, _ = net.loss(engine.tensor(x), engine.tensor(mask), engine.tensor(y))
    assert ours.item() == pytest.approx(theirs, rel=1e-5)


# --- the mini-TensorFlow exercise: Session.run's order ---------------------------------------------------------

def test_session_order_exercise_is_the_engines_run():
    h = M.session_order_exercise("h")
    assert h.engine_order == ("x", "W", "b", "matmul", "add", "relu")   # the lecture: 6 nodes, x fed
    assert M.session_order_exercise("x @ W").engine_order == ("x", "W", "matmul")   # and 3
    assert M.check_session_order(h, "x, W, b, matmul, add, relu").correct
    other = M.check_session_order(h, "[W, 'x', matmul, b, add, relu]")   # another topological order
    assert other.correct and "creation order" in other.message
    wrong = {"x, W, b, add, matmul, relu": "add comes before its input matmul",
             "x, W, matmul": "missing: b, add, relu",
             "x, W, W, b, matmul, add, relu": "W is listed twice",
             "x, W, b, matmul, add, relu, y": "'y' is not a node",
             "__import__('os').system('ls')": "is not a node name",
             "x W b": "separated by commas", "": "no answer yet"}
    for text, why in wrong.items():
        v = M.check_session_order(h, text)
        assert not v.correct and why in v.message, (text, v.message)
    v = M.check_session_order(M.session_order_exercise("x @ W"), "x, W, b, matmul, add, relu")
    assert not v.correct and v.message.startswith("b, add, relu are not needed")
    assert not M.check_session_order(h, "x, " * 200).correct   # too long: refused before parsing


def test_page_checks_a_right_and_a_wrong_session_order():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    at.text_input(key="static_order_answer").input("x, W, b, matmul, add, relu")
    next(b for b in at.button if b.label == "Check my order").click()
    ok(at.run())
    assert any("very order the engine" in s.value for s in at.success)
    at.radio(key="static_order_fetch").set_value("x @ W")
    at.text_input(key="static_order_answer").input("x, W, b, matmul")
    next(b for b in at.button if b.label == "Check my order").click()
    ok(at.run())
    assert any("b is not needed for" in e.value for e in at.error)
    at.text_input(key="static_order_answer").input("W, matmul, x")
    next(b for b in at.button if b.label == "Check my order").click()
    ok(at.run())
    assert any("matmul comes before its input x" in e.value for e in at.error)


# --- the mini-TensorFlow exercise as code: topological_sort and Session.run with blanks ------------------------

RIGHT = {b.number: b.right for b in M.MINI_TF_BLANKS}


def with_fill(number: int, fill: str) -> dict[int, str]:
    return {**RIGHT, number: fill}


def test_mini_tf_right_fill_reproduces_the_engines_session_run():
    """The completed code, run on the lecture's real static graph, evaluates exactly the nodes the engine's
    Session.run does, each once and after its inputs, and fetches the same arrays bit for bit."""
    v = M.check_mini_tf(RIGHT)
    assert v.correct and all(b.right for b in v.blanks)
    for run in v.runs:
        assert run.problem is None, run.summary()
        assert sorted(run.evaluated) == sorted(run.engine_order)        # the same nodes, each once
        assert len(set(run.evaluated)) == len(run.evaluated)
        assert len(run.values) == len(run.engine_values)
        for mine, theirs in zip(run.values, run.engine_values):
            assert np.array_equal(mine, theirs)
    h, both = v.runs
    assert h.engine_order == ("x", "W", "b", "matmul", "add", "relu")   # the engine: creation order
    assert h.evaluated == ("x", "W", "matmul", "b", "add", "relu")      # depth first: matmul before b
    assert both.evaluated == h.evaluated                                 # matmul reached twice, evaluated once
    # each node after its inputs: the order exercise's own checker accepts the order the code evaluated in
    assert M.check_session_order(M.session_order_exercise("h"), ", ".join(h.evaluated)).correct
    # the engine's own numbers, independently: Session.run on a fresh lecture graph
    ex = M.build_example("lecture", with_gradients=False)
    x, xv = ex.feeds["x"]
    hv, xwv = engine.static.Session(ex.graph).run([ex.fetches["h"], ex.fetches["x @ W"]], {x: xv})
    assert np.array_equal(both.values[0], hv) and np.array_equal(both.values[1], xwv)
    assert np.array_equal(h.values[0], hv)


WRONG_FILLS = {
    # blank: fill -> what the run of the otherwise right code shows (the first run that differs)
    (1, "if node not in visited: return"): "topological_sort returned nothing; then KeyError: relu",
    (1, "pass"): "so Session.run evaluated x, W, matmul twice",
    (2, "order.append(node)\nfor inp in node.inputs:\n    visit(inp)"): "KeyError: add while evaluating relu",
    (2, "for inp in node.inputs:\n    visit(node)\norder.append(node)"): "KeyError: add while evaluating relu",
    (3, "feed_dict[node.name]"): "KeyError: 'x' while reading placeholder x",
    (3, "node.value"): "AttributeError: 'NoneType' object has no attribute 'ndim' while evaluating matmul",
    (4, "feed_dict[inp]"): "KeyError: W while evaluating matmul",
    (4, "values[node]"): "KeyError: matmul while evaluating matmul",
}


@pytest.mark.parametrize("number, fill", list(WRONG_FILLS))
def test_mini_tf_each_wrong_fill_gives_its_own_outcome(number, fill):
    v = M.check_mini_tf(with_fill(number, fill))
    assert not v.correct
    verdict = next(b for b in v.blanks if b.number == number)
    assert not verdict.right and WRONG_FILLS[(number, fill)] in verdict.message, verdict.message
    assert all(b.right for b in v.blanks if b.number != number)
    assert "Traceback" not in verdict.message


def test_mini_tf_wrong_outcomes_are_all_different():
    messages = [next(b for b in M.check_mini_tf(with_fill(n, f)).blanks if b.number == n).message.split(" Why: ")[0]
                for n, f in WRONG_FILLS]   # what the runs did, without the line that explains it
    assert len(set(messages)) == len(messages)
    every = {(b.number, c.code) for b in M.MINI_TF_BLANKS for c in b.choices if c.code != b.right}
    assert every == set(WRONG_FILLS)        # every wrong choice offered is tested above


def test_mini_tf_infinite_recursion_is_stopped_and_reported():
    """No visited check and visit(node) instead of visit(inp): visit calls itself for ever; the interpreter
    stops it at a bounded depth and says so (Python would raise RecursionError)."""
    v = M.check_mini_tf({**RIGHT, 1: "pass", 2: "for inp in node.inputs:\n    visit(node)\norder.append(node)"})
    assert not v.correct
    assert all(r.error and "RecursionError" in r.error for r in v.runs), [r.error for r in v.runs]
    assert "visit(relu)" in v.runs[0].summary()


def test_mini_tf_code_shows_blanks_then_the_fill():
    blank = M.mini_tf_code()
    assert "def topological_sort(fetches):" in blank and "def run(self, fetches, feed_dict):" in blank
    assert all(f"____({b.number})____" in blank for b in M.MINI_TF_BLANKS)
    filled = M.mini_tf_code(RIGHT)
    assert "____" not in filled
    assert "        for inp in node.inputs:\n            visit(inp)\n        order.append(node)" in filled
    compile(filled, "<mini-tf>", "exec")          # the filled code is Python (compiled, never run)
    assert M.check_mini_tf({**RIGHT, 2: None}).blanks[1].message.startswith("not filled")
    with pytest.raises(ValueError):
        M.check_mini_tf({**RIGHT, 3: "__import__('os')"})     # only the offered lines are accepted


def test_page_checks_the_mini_tf_fill_in():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    assert any("____(1)____" in c.value for c in at.code)
    for b in M.MINI_TF_BLANKS:
        at.selectbox(key=f"static_mini_{b.number}").set_value(b.right)
    next(b for b in at.button if b.label == "Check my code").click()
    ok(at.run(timeout=TIMEOUT))
    assert sum(any(f"({b.number})" in s.value.replace("\\", "") for b in M.MINI_TF_BLANKS)
               for s in at.success) == 4
    assert any("bit for bit" in s.value and "x, W, matmul, b, add, relu" in s.value.replace("\\", "")
               for s in at.success)
    assert any("visit(inp)" in c.value and "____" not in c.value for c in at.code)
    at.selectbox(key="static_mini_4").set_value("feed_dict[inp]")
    next(b for b in at.button if b.label == "Check my code").click()
    ok(at.run(timeout=TIMEOUT))
    wrong = [e.value.replace("\\", "") for e in at.error]
    assert any("(4)" in e and "KeyError: W while evaluating matmul" in e for e in wrong), wrong
    assert not any("Traceback" in t for t in wrong)
    labels = [s.label.replace("\\", "") for s in at.selectbox if s.key and s.key.startswith("static_mini_")]
    assert labels and all(lab.startswith("____(") for lab in labels)   # the blank's mark, not Markdown bold


def test_on_a_projector_the_lectures_run_starts_dark_and_lights_up_with_the_slider():
    """The order Session.run evaluates the lecture's graph in is the in-class exercise's answer: in presentation
    mode the run opens with no node lit and no order written; the slider lights the nodes one at a time."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"present": "1"})
    at = ok(at.run())
    assert at.slider(key=f"static_{PACED_SLIDER}_upto").value == 0
    assert "matmul → add → relu" not in texts(at) and "move the slider" in texts(at)
    at.slider(key=f"static_{PACED_SLIDER}_upto").set_value(3)
    at = ok(at.run())
    assert "the first 3 of 5: W → b → matmul → …" in texts(at)    # x is fed, not evaluated
    at.slider(key=f"static_{PACED_SLIDER}_upto").set_value(5)
    at = ok(at.run())
    assert "W → b → matmul → add → relu" in texts(at)


def test_nodes_not_lit_yet_do_not_give_their_place_in_the_order():
    """At the slider's 0 the run's nodes read "#1, later" ... "#5, later": the evaluation order, the exercise's answer.
    A node is numbered when it is lit; before that it says only that the run needs it."""
    ex = M.build_example("lecture", False, False)
    r = M.run_fetch(ex, "h", list(ex.feeds))
    n = len(r.evaluated)
    for upto in (0, 2, n):
        frames, _ = M.static_picture(ex.graph, r.evaluated, upto, fed=r.fed)
        notes = [t for t in frames.frames[0].node_adjoint if t]   # the line under each box
        assert sum(t.startswith("evaluated #") for t in notes) == upto, (upto, notes)
        assert sum(t == "needed" for t in notes) == n - upto, (upto, notes)
        assert not any("later" in t for t in notes), notes


def test_the_count_says_what_the_slider_has_evaluated_so_far():
    """The count over the graph follows the evaluation order's slider: before its last step it says how many of the
    computed nodes are lit so far (a projector's lecture run starts dark: never 'Evaluated 6 of 6' at step 0), at its
    last step the whole run's count."""
    ex = M.build_example("lecture", False, False)
    r = M.run_fetch(ex, "h", list(ex.feeds))
    n = len(r.evaluated)
    assert r.count_text(short=True, upto=0) == f"So far: **0 of {n} computed** + 1 fed"
    assert r.count_text(short=True, upto=2) == f"So far: **2 of {n} computed** + 1 fed"
    assert "Evaluated" not in r.count_text(short=True, upto=n - 1)
    assert r.count_text(short=True, upto=n) == r.count_text(short=True) == "Evaluated **6 of 6** nodes: 5 computed + 1 fed"
    assert r.count_text(upto=n) == r.count_text()
