"""The "Static vs dynamic" page: its logic module (explorer.static_vs_dynamic) and the page headless (AppTest)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import static_vs_dynamic as M

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "7_Static_vs_dynamic.py")
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
    eager = [r["eager ops per run (forward)"] for r in rows]
    static = [r["static graph nodes (forward)"] for r in rows]
    assert eager == [4 * t for t in (3, 6, 12)]  # getitem, mul, add, sigmoid per step
    assert static == [3 + 4 * t for t in (3, 6, 12)]  # + placeholder x, variable w, constant h0
    assert all(r["h_T static = eager"] and r["dh_T/dw static = eager"] for r in rows)


def test_folding_demo_shrinks_the_graph_and_keeps_values():
    fd = M.folding_demo()
    assert fd.same_values and fd.rows[1]["total"] < fd.rows[0]["total"]
    assert {"exp", "div"} <= set(fd.folded)


def test_counts_over_steps():
    ex = M.build_example("mlp")
    rows = M.counts_over_steps(ex, (1, 10))
    assert rows[1]["static: nodes built"] == rows[0]["static: nodes built"] == len(ex.graph.nodes)
    assert rows[1]["eager: nodes recorded"] == 10 * rows[0]["eager: nodes recorded"]


def test_compile_demo_is_bit_identical():
    d = M.compile_demo(steps=3, tokens=5)
    assert d["identical"] and len(d["losses"]) == 4 and d["replayed_ops"] <= d["traced_ops"]
    assert d["distinct_losses"] == 4          # dropout draws a fresh mask every replayed step
    c = d["graph_counts"]
    # word vectors, padding mask, labels; fc1 / fc2 weights and biases
    assert c["placeholder"] == 3 and c["variable"] == 4 and c["op"] == d["replayed_ops"] and 0 < c["gradient"] < c["op"]


# --- the page, headless --------------------------------------------------------------------------------

def test_page_default_runs_the_lecture_graph():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    # the lecture: sess.run(h, feed) evaluates 6 (x, W, b, matmul, add, relu): the fed placeholder counts
    assert "Evaluated **6 of" in texts(at) and "5 computed + 1 fed" in texts(at)
    assert len(graphs(at)) == 4  # run graph, unrolled loop, folding before / after
    assert M.LIT in graphs(at)[0]
    assert "matmul → add → relu" in texts(at)
    table = at.dataframe[1].value  # the unrolled-loop table
    assert list(table["length T"]) == [3, 6, 12]


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
