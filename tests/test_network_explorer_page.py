"""Headless tests of the Network explorer page (streamlit.testing.v1.AppTest) on the real engine."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

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


# --- issue 26: the attack link, the largest allowed network, text beyond its limit ----------------------------

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
