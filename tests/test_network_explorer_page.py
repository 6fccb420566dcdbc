"""Headless tests of the Network explorer page (streamlit.testing.v1.AppTest) on the real engine."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.kit.plotly_figure import barred_text
from explorer.network_explorer.explore import explore, moment
from explorer.network_explorer.frames import n_frames
from explorer.network_explorer.presets import OPTIONS

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "10_Network_explorer.py")
TIMEOUT = 120


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    parts += [s.value for s in at.success] + [w.value for w in at.warning] + [i.value for i in at.info]
    return "\n".join(map(str, parts))


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


BUTTON_KEYS = {"start": "network_step_first", "back": "network_step_back", "step": "network_step_fwd",
               "end": "network_step_last"}


def button(at: AppTest, name: str):
    """The stepping buttons (explorer.kit.widgets.stepper), found by key: their labels may change."""
    return at.button(key=BUTTON_KEYS[name])


def node_texts(at: AppTest) -> str:
    """Every text drawn in the page's graph figures (node labels with their shapes)."""
    out = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        for tr in spec.get("data", []):
            t = tr.get("text")
            if isinstance(t, list) and t and isinstance(t[0], str):
                out.extend(t)
    return "\n".join(out)


def test_default_page_mlp_forward_and_backward():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    assert at.selectbox(key="network_net").value == "mlp"
    body = texts(at)
    assert "Two-layer MLP" in body and "Step 1 of" in body
    drawn = node_texts(at)
    assert "fc1.weight" in drawn and "5×3" in drawn
    ok(button(at, "end").click().run())
    assert "Done: loss" in texts(at)
    # the memory tab and gradient-check tab are filled from the real run
    assert "tensors kept" in texts(at) and "Worst relative error" in texts(at)


def test_residual_fan_out_sum_is_shown():
    ex = explore("residual", {})
    x = ex.rec.node_by_label("x")
    last = ex.rec.contributions_to(x.id)[-1]
    frame = len(ex.rec.forward_order) + 1 + last.step          # the backward step completing x's sum
    assert [f.label for f in moment(ex, frame).fan_out] == ["x"]
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "residual"
    at.query_params["level"] = "op"
    at.query_params["step"] = str(frame)                       # 1-based: frame index frame - 1
    ok(at.run())
    ok(button(at, "step").click().run())
    body = texts(at)
    assert f"Step {frame + 1} of {n_frames(ex.rec)}" in body
    assert "Fan-out sum at x: 2 contributions" in body
    drawn = node_texts(at)
    assert "3×4" in drawn and "adjoint 2 of 2" in drawn       # shapes and x's fan-out drawn in the op view


def test_switch_preset_and_level_keeps_step():
    at = ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    at.selectbox(key="network_net").set_value("rnn")
    ok(at.run())
    assert at.number_input(key="network_steps").value == OPTIONS["rnn"][0].default
    for _ in range(3):
        ok(button(at, "step").click().run())
    assert at.session_state["network_step"] == 4  # 1-based
    at.radio(key="network_level_radio").set_value("layer")
    ok(at.run())
    assert at.session_state["network_step"] == 4
    assert "step 1" in node_texts(at)
    at.radio(key="network_level_radio").set_value("op")
    ok(at.run())
    assert at.session_state["network_step"] == 4 and "matmul" in node_texts(at)


def test_sentiment_repeated_word_and_bad_custom_layers():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "sentiment"
    at.query_params["sentence"] = "a good good movie"
    ok(at.run())
    body = texts(at)
    assert "Repeated word(s) ['good']" in body
    assert "GloVe" in body or "SEEDED RANDOM" in body
    at.selectbox(key="network_net").set_value("custom")
    ok(at.run())
    at.text_input(key="network_layers").set_value("linear 4, conv 3")
    ok(at.run())
    assert "cannot be built" in texts(at) and "conv 3" in texts(at)


def test_moment_shows_matmul_products():
    ex = explore("mlp", {})
    f = len(ex.rec.forward_order) + 1
    frames = [moment(ex, k) for k in range(f, ex.n_frames - 1)]
    mm = [m for m in frames if m.detail is not None and m.detail.op in ("matmul", "matmul_t", "linear")]   # a Linear's: linear
    assert mm and all(m.detail.products for m in mm)
    for m in mm:
        for _, (a, b), out in [p for p in m.detail.products if p[0] == "matmul"]:
            np.testing.assert_allclose(a @ b, out, rtol=1e-13)


@pytest.mark.parametrize("key", list(OPTIONS))
def test_every_preset_renders(key):
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = key
    at.query_params["step"] = "10"
    ok(at.run())
    assert "Step 10 of" in texts(at)  # step= is 1-based, as the header


def test_big_network_opens_in_layer_view_and_dot_download():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "rnn"
    at.query_params["steps"] = "30"
    ok(at.run())
    assert at.radio(key="network_level_radio").value == "layer"
    assert "step 30" in node_texts(at)
    assert any(b.proto.label.startswith("Download graph (DOT)") for b in at.get("download_button"))


def test_presentation_mode_link():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "attention"
    at.query_params["present"] = "1"
    at.query_params["step"] = "5"
    ok(at.run())
    assert at.session_state["presenting"] is True
    assert "Step 5 of" in texts(at) and "Single attention head" in texts(at)


def heatmap_specs(at: AppTest) -> list[dict]:
    """The page's tensor heatmaps: {title, zmin, zmax}."""
    out = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        data = spec.get("data", [])
        if data and data[0].get("type") == "heatmap":
            out.append({"title": spec["layout"]["title"]["text"], "zmin": data[0]["zmin"], "zmax": data[0]["zmax"]})
    return out


def test_lecture_order_network_on_the_page():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "sentiment"
    at.query_params["level"] = "layer"
    ok(at.run())
    body = texts(at)
    assert "per word, then average" in body and "Because ReLU is not linear" in body
    assert "Same weights, two orders: per word then average gives P(positive) = " in body
    drawn = node_texts(at)
    for layer in ("Linear 1 (each word)", "ReLU (each word)", "Linear 2 (each word)", "average pooling"):
        assert layer in drawn
    assert "5×50" in drawn          # the table: one GloVe row per word of "it is a good movie"
    at.selectbox(key="network_net").set_value("hw2")
    ok(at.run())
    assert "averages the word vectors first" in texts(at) and "sentiment.model.SentimentNet" in texts(at)


def test_rnn_fan_out_row_one_scale_and_the_zero_from_h0():
    ex = explore("rnn", {})
    wh = ex.rec.node_by_label("Wh")
    frame = len(ex.rec.forward_order) + 1 + ex.rec.contributions_to(wh.id)[-1].step
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "rnn"
    at.query_params["step"] = str(frame + 1)        # the link's step is 1-based, as the header
    ok(at.run())
    body = texts(at)
    assert "Fan-out sum at Wh: 3 contributions" in body
    assert "0: the other factor h0 is all zeros" in body          # the zero contribution, explained
    assert "h0 = 0, so only steps 2 to 3 move Wh" in body
    row = [h for h in heatmap_specs(at) if "· step" in h["title"] or h["title"].startswith("= sum")]
    assert len(row) == 4 and len({(h["zmin"], h["zmax"]) for h in row}) == 1   # one colour scale for the row
    # the sum drawn in the row and Wh's final adjoint in "Inspect a node" share it too
    at.selectbox(key=f"network_inspect_{frame}").set_value(wh.id)
    ok(at.run())
    final = next(h for h in heatmap_specs(at) if h["title"].startswith("final adjoint"))
    assert (final["zmin"], final["zmax"]) == (row[0]["zmin"], row[0]["zmax"])


def test_rnn_tanh_reads_as_one_function_in_the_op_view():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "rnn"
    at.query_params["level"] = "op"
    ok(at.run())
    drawn = node_texts(at)
    assert "tanh#" in drawn and "= tanh(add#" in drawn
    assert "2·sigmoid(2a) − 1" in texts(at)


def test_empty_layer_between_commas_is_rejected_on_the_page():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["net"] = "custom"
    at.query_params["layers"] = "linear 4,, relu"
    ok(at.run())
    assert "cannot be built" in texts(at) and "layer 2 is empty" in texts(at)


# --- the attack link, the largest allowed network, text beyond its limit --------------------------------------

def test_the_attack_link_is_a_typed_refusal_not_a_run():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"net": "custom", "layers": ", ".join(["linear 256"] * 60), "batch": "64",
                            "features": "16"})
    ok(at.run())
    err = " ".join(e.value for e in at.error)
    assert "This network cannot be built" in err and "3,886,080 weights and biases" in err


def test_the_largest_allowed_network_steps_with_statistics_for_large_tensors():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"net": "custom", "layers": "linear 256, relu, linear 256, relu, linear 256",
                            "batch": "64", "features": "16", "step": "15"})   # a Linear's VJP
    ok(at.run())
    assert not at.error
    assert "too large for a heatmap" in texts(at)          # a (64, 256) value: its statistics (kept compactly)
    assert at.text_input(key="network_layers").max_chars == 1000
    assert "At most 60 layers" in at.text_input(key="network_layers").help


def test_text_beyond_its_limit_is_refused_and_not_kept():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"net": "sentiment", "sentence": "good " * 100})   # 500: the link allows 4,000
    ok(at.run())
    assert at.session_state["network_sentence"] == "it is a good movie"
    assert "more than the limit of 400" in texts(at)


def test_a_projectors_step_panel_is_compact_for_small_tensors():
    """Presentation mode's "This step" panel (a third of the width, beside the graph): a VJP rule is written on
    its own line and its note after the sent lines (together they wrapped to three lines); a tensor of a few rows
    gets a heatmap as tall as its rows need; a column's value and adjoint stand side by side. At HW2's second
    Linear (a (3, 1) output) that brings the first "sent to" line onto the first screen at 1366 x 768."""
    from explorer.kit.presentation import PRESENTING
    from explorer.network_explorer.explore import (COMPACT_COLUMNS, COMPACT_ROWS, compact_heatmap_height,
                                                   formula_parts, side_by_side)
    rule, note = formula_parts("x̄ = Ȳ W,  W̄ = Ȳᵀ x,  b̄ = Σ_rows Ȳ   (y = x Wᵀ + b; x's leading dims flattened "
                               "into the rows)")
    assert rule == "x̄ = Ȳ W,  W̄ = Ȳᵀ x,  b̄ = Σ_rows Ȳ"
    assert note == "y = x Wᵀ + b; x's leading dims flattened into the rows"
    assert formula_parts("x̄ = ȳ ⊙ 1[y > 0]") == ("x̄ = ȳ ⊙ 1[y > 0]", "")
    font = PRESENTING.figure_font
    small, column, wide, tall = np.ones((3, 5)), np.ones((3, 1)), np.ones((2, 7)), np.ones((COMPACT_ROWS + 1, 2))
    assert compact_heatmap_height(column, font) == compact_heatmap_height(small, font) < 220
    assert compact_heatmap_height(np.ones((1, 5)), font) < compact_heatmap_height(small, font)
    assert compact_heatmap_height(tall, font) == 220
    assert compact_heatmap_height(column, font) >= 2 * font + 40 + 3 * 1.6 * font - 1   # a row per 1.6 lines
    assert side_by_side(column, column) and side_by_side(column, None)
    assert not side_by_side(small, column) and not side_by_side(wide) and not side_by_side(tall)
    assert not side_by_side(np.ones((3, COMPACT_COLUMNS + 1)))
    # the real step: HW2's second Linear, op view, step 18
    ex = explore("hw2", {})
    m = moment(ex, 18 - 1)
    assert ex.rec.node(m.node).label == "linear#15"
    assert m.node is not None and formula_parts(m.formula)[1] and side_by_side(m.value, m.adjoint)


# --- the backward pass drawn as the slides draw it ------------------------------------------------------------

def _figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _graph_figures(at: AppTest) -> list[dict]:
    """The page's graph figures (those with node boxes), in page order: forward, then backward."""
    return [f for f in _figures(at) if any(tr.get("name") == "node" for tr in f["data"])]


def _named(fig: dict, name: str) -> dict:
    return next(tr for tr in fig["data"] if tr.get("name") == name)


def _boxes(fig: dict) -> list[tuple[float, float, float, float]]:
    """Every node's box (x0, x1, y0, y1), from the box outline traces (closed polygons separated by None)."""
    out = []
    for tr in fig["data"]:
        if not str(tr.get("name") or "").startswith("box:"):
            continue
        pts: list = []
        for x, y in zip(tr["x"] + [None], tr["y"] + [None]):
            if x is None:
                if pts:
                    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                    out.append((min(xs), max(xs), min(ys), max(ys)))
                pts = []
            else:
                pts.append((x, y))
    return out


def arrow_targets(fig: dict) -> list[str]:
    """The head (name) of the node each arrowhead of ``fig`` points at: its tip's nearest node box."""
    heads = _named(fig, "node")
    boxes = _boxes(fig)

    def head_of(box) -> str:   # the node whose head text lies in the box
        x0, x1, y0, y1 = box
        return next(t for t, x, y in zip(heads["text"], heads["x"], heads["y"]) if x0 <= x <= x1 and y0 <= y <= y1)

    def gap(box, x, y) -> float:
        x0, x1, y0, y1 = box
        return max(x0 - x, 0, x - x1) + max(y0 - y, 0, y - y1)

    tr = _named(fig, "arrowheads")
    tips = [(x, y) for k, (x, y) in enumerate(zip(tr["x"], tr["y"]))
            if x is not None and (k == 0 or tr["x"][k - 1] is None)]
    return [head_of(min(boxes, key=lambda b: gap(b, x, y))) for x, y in tips]


def test_the_backward_graph_reverses_every_edge_and_names_adjoints_with_bars():
    """At a backward step the page draws a second graph, the backward pass as the slides draw it: the
    adjoint nodes named with the lecture's bar (x̄, f̄c.weight), every arrow pointing from a consumer back to its
    input (the leaves receive arrows; the loss's adjoint sends only), the contributions in the backward colour.
    The old page drew one forward graph whose arrows point at the loss."""
    from explorer.kit.plotly_figure import ADJOINT
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"net": "logreg", "level": "op"})
    ok(at.run())
    assert len(_graph_figures(at)) == 1   # forward steps: the forward graph only
    button(at, "end").click().run()
    ok(at)
    forward, backward = _graph_figures(at)
    heads = [barred_text(t) for t in _named(backward, "node")["text"]]
    from explorer.explain.graph import bar
    # a tensor's adjoint headed by its norm (‖f̄c.weight‖, its number under it), a one-element one's by its name
    assert {bar(n) for n in ("x", "fc.weight", "fc.bias", "linear#3", "sigmoid#4")} <= {h.strip("‖") for h in heads}
    assert f"‖{bar('fc.weight')}‖" in heads
    assert not any("\u0304" in h.split(" = ")[0] for h in _named(forward, "node")["text"])
    # arrow directions, read from the arrowheads' tips: forward into the consumers, backward into the inputs
    fwd_to, back_to = arrow_targets(forward), [barred_text(t).strip("‖") for t in arrow_targets(backward)]
    loss = next(h for h in _named(forward, "node")["text"] if h.startswith("binary_cross_entropy"))
    assert loss in fwd_to and not {"x", "fc.weight", "fc.bias"} & set(fwd_to)
    assert {bar("x"), bar("fc.weight"), bar("fc.bias")} <= set(back_to) and bar("binary_cross_entropy#6") not in back_to
    assert len(back_to) == len(fwd_to)
    assert _named(backward, "sent edges")["line"]["color"] == ADJOINT
    # each adjoint in numbers (a one-element tensor's value, a larger one's norm), the loss's the seed
    values = _named(backward, "value")["text"]
    assert "= 1 (the seed)" in values and not any("‖" in v for v in values)
    assert "Backward pass: every edge reversed" in texts(at)
    # the adjoint heatmap's title names the node's adjoint with its bar, not ȳ or ḡ
    titles = [f["layout"].get("title", {}).get("text", "") for f in _figures(at)]
    assert not any("ḡ" in t or "adjoint ȳ" in t for t in titles)


def test_a_fan_out_sum_is_written_symbolically_then_in_numbers():
    """The residual block's input x is used twice (the skip and the branch): its adjoint in the backward graph is
    the slides' sum, x̄ = ādd#8·∂add#8/∂x + l̄inear#3·∂linear#3/∂x, then its size, the norm of x̄ (‖x̄‖ = …: norms do
    not add: each term's norm is on its edge)."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({"net": "residual", "level": "op"})
    ok(at.run())
    button(at, "end").click().run()
    ok(at)
    backward = _graph_figures(at)[1]
    heads, values = ([barred_text(t) for t in _named(backward, name)["text"]] for name in ("node", "value"))
    adjoints = [barred_text(t) for t in _named(backward, "adjoint")["text"]]
    symbolic = [v for v in values if "·∂" in v and " + " in v]
    from explorer.explain.graph import bar
    expected = f"= {bar('add#8')}·∂add#8/∂x + {bar('linear#3')}·∂linear#3/∂x"   # the consumers in arrival order
    assert expected in symbolic, symbolic
    assert any(a.startswith(f"‖{bar('x')}‖ = ") and "+" not in a for a in adjoints), adjoints
    assert bar("x") in heads


def test_the_backward_frames_follow_the_recording():
    """Unit level (no page): the kit's mirrored frames, texts from the recording: nothing before the backward pass,
    a fan-out node's partial sum while it waits (k of n), every contribution on its reversed edge at the end."""
    from explorer.explain.graph import bar
    from explorer.network_explorer.backward import amount, backward_frames
    ex = explore("residual", {})
    v = ex.views["op"]
    bfs = backward_frames(ex.rec, v)
    assert bfs.edges == [(d, s) for s, d in v.frames.edges] and len(bfs.frames) == len(v.frames.frames)
    # only what takes a gradient is named as an adjoint: HW2's labels and dropout mask keep their names
    hw2 = explore("hw2", {})
    hw2_heads = backward_frames(hw2.rec, hw2.views["op"]).heads
    assert "labels" in hw2_heads and bar("labels") not in hw2_heads and bar("fc2.bias") in hw2_heads
    first_backward = len(ex.rec.forward_order) + 1
    assert all(t == "" for f in bfs.frames[:first_backward] for t in f.node_text + f.edge_text)
    x = next(i for i, h in enumerate(bfs.heads) if h == bar("x"))
    texts_of_x = [f.node_text[x] for f in bfs.frames]
    assert any("(1 of 2)" in t for t in texts_of_x)   # one contribution arrived, the other still to come
    last = bfs.frames[-1]
    for c in (c for s in ex.rec.backward for c in s.contributions):
        k = bfs.edges.index((c.source, c.target)) if (c.source, c.target) in bfs.edges else None
        if k is not None and sum(1 for d in ex.rec.backward for e in d.contributions
                                 if (e.source, e.target) == (c.source, c.target)) == 1:
            assert last.edge_text[k] == amount(c.value)


def test_a_layer_that_reads_its_input_twice_is_one_term_not_a_fan_out():
    """The layer view of the two-layer MLP: the cross-entropy box reads the logits with two of its ops, one edge of
    the drawing. L̄inear 2 (logits) is that box's one contribution (its recorded total), not the fan-out sum
    "c̄ross-entropy·∂cross-entropy/∂Linear 2 (logits) + c̄ross-entropy·∂…" (138 characters: on a projector the box
    spread over the graph's width and was left blank). A real fan-out keeps its sum (the residual block's x)."""
    from explorer.explain.graph import bar
    import unicodedata
    from explorer.network_explorer.backward import amount, backward_frames
    ex = explore("mlp", {})
    v = ex.views["layer"]
    bfs = backward_frames(ex.rec, v)
    logits = next(i for i, h in enumerate(bfs.heads) if h.strip("‖").startswith(bar("Linear 2")))
    texts = [f.node_text[logits] for f in bfs.frames if f.node_text[logits]]
    # while the box's second op has not sent yet: "= 0.5 so far" under ‖L̅i̅n̅e̅a̅r̅ 2̅ (̅l̅o̅g̅i̅t̅s̅)̅‖, what it holds now
    assert texts and all("∂" not in t and t.count(" + ") <= 1 for t in texts), texts
    assert " + " not in texts[-1] and any(t.endswith(" so far") for t in texts)
    target = next(layer.output for layer in ex.rec.layers if layer.name.startswith("Linear 2"))
    assert texts[-1] == f"= {amount(ex.rec.contributions_to(target)[-1].total)}"

    def width(text: str) -> int:   # characters drawn (a bar's combining marks take no room)
        return sum(1 for ch in text if not unicodedata.combining(ch))
    assert all(width(t) + width(a) < 40 for f in bfs.frames for t, a in zip(f.node_text, f.node_adjoint or [""] * 99))
    res = explore("residual", {})
    rbfs = backward_frames(res.rec, res.views["op"])
    x = rbfs.heads.index(bar("x"))
    assert any(" + " in f.node_text[x] and "∂" in f.node_text[x] for f in rbfs.frames)
