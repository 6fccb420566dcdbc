"""Lecture 5 / HW2 items whose page tests read only part of what the page renders: each test below opens the page
headless (AppTest), reads the rendered tables, figures and text, and compares them with the number the engine (or
the explorer function the page calls) computes now. Notes' figures are read from explorer.kit.notes, never typed."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.kit import fixed
from explorer.kit.notes import NOTES

PAGES = Path(__file__).resolve().parents[1] / "app" / "pages"
TIMEOUT = 120
FIXED_TIMEOUT = 600   # the fixed figures are computed one after another in the background: minutes on a busy machine


def wait_fixed(name: str):
    """The process's fixed figure ``name``, waited for (the page reads the same object)."""
    value = fixed.figures().wait(name, FIXED_TIMEOUT)
    assert not isinstance(value, fixed.Pending), name
    return value


def run_page(name: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / name), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    parts += [s.value for s in at.success] + [w.value for w in at.warning] + [i.value for i in at.info]
    return "\n".join(map(str, parts))


def table_with(at: AppTest, column: str):
    """The first st.table / st.dataframe of the page that has ``column``."""
    for t in list(at.table) + list(at.dataframe):
        if column in t.value.columns:
            return t.value
    raise AssertionError(f"no table with a column {column!r}")


def same_cells(shown, rows: list[dict]) -> None:
    """The rendered table holds exactly ``rows`` (cells compared as text: st.table sends strings and numbers)."""
    assert list(shown.columns) == list(rows[0]), (list(shown.columns), list(rows[0]))
    assert len(shown) == len(rows)
    for i, row in enumerate(rows):
        for col, want in row.items():
            assert str(shown.iloc[i][col]) == str(want), (i, col, shown.iloc[i][col], want)


# --- Gradient check (page 6): random graphs, relative error and shared values beside the notes' -----------------

def test_random_graphs_relative_error_and_shared_values_beside_the_notes():
    from explorer.gradient_check import random_graph_check, shared_values
    wait_fixed("gradient_check.notes_checks")
    at = run_page("6_Gradient_check.py")
    table = table_with(at, "the notes").set_index("check")
    row = table.loc["random graphs against finite differences"]
    mean_nodes, worst, mean_shared = random_graph_check(NOTES["random_graphs"].value)
    assert row["this engine, now"] == f"{worst:.1e}" and row["the notes"] == f"{NOTES['random_graph_error'].value:.1e}"
    assert f"{mean_nodes:.1f} nodes on average; the notes' {NOTES['random_graph_nodes'].value}" in row["what is compared"]
    from explorer.gradient_check import shared_text
    assert shared_text(mean_shared) in row["what is compared"] and f"{mean_shared:.1f} shared values" in row["what is compared"]
    assert f"the notes' {NOTES['random_graph_shared'].value}" in shared_text(mean_shared)
    if round(mean_shared, 1) != NOTES["random_graph_shared"].value:     # a different count says why it differs
        assert "this engine's generator" in shared_text(mean_shared)
    assert "relative" in row["what is compared"]
    # how the figures differ is said under the table: the engine's own random graphs, not the notes'
    assert "not the notes' own" in texts(at)
    # the count is the graph's: x·x reads x twice (its adjoint is a sum), a value read once is not shared
    from explorer import explain as ex
    assert shared_values(ex.record_execution("y = x * x\nf = y + 1", {"x": 2.0}).graph) == 1
    assert shared_values(ex.record_execution("y = exp(x)\nf = y + 1", {"x": 2.0}).graph) == 0


# --- Forward vs reverse (page 7): the notes' cost table beside the same table, measured -------------------------

def test_cost_table_is_the_engines_counts_beside_the_notes_n_over_2():
    from explorer import forward_vs_reverse as M
    rows = wait_fixed("forward_vs_reverse.pass_costs")
    logreg = wait_fixed("forward_vs_reverse.logreg_costs")
    at = run_page("7_Forward_vs_reverse.py")
    measured = M.pass_costs(depth=4, width=256, batch=128)            # counted again, now: counts do not vary
    same_cells(table_with(at, "× forward (multiply-adds)"), measured)
    same_cells(table_with(at, "the notes: ratio n/2"), M.gradient_cost_rows(measured))
    reverse, _ = M.pass_ratios(measured)
    assert f"hence {reverse:g} rather than 3" in texts(at)
    assert f"about {NOTES['reverse_passes'].value}" in M.pass_costs_caption(rows) and M.pass_costs_caption(rows) in texts(at)
    # the notes' own case, logistic regression on 8 samples: the table is the engine's counts, counted again now
    same_cells(table_with(at, "features n"), M.logreg_rows(logreg))
    again = M.logreg_gradient_costs()
    assert [(r.n, r.forward_macs, r.reverse_passes, r.forward_passes) for r in again] == \
        [(r.n, r.forward_macs, r.reverse_passes, r.forward_passes) for r in logreg]
    assert [r.n for r in logreg] == list(M.LOGREG_FEATURES) and [r.jvp_passes for r in logreg] == [r.n for r in logreg]
    assert all(r.forward_macs == M.LOGREG_SAMPLES * r.n for r in logreg)       # X·w: 8 samples × n weights
    assert all(r.gradients_agree < 1e-12 for r in logreg)                    # both ways give one gradient
    assert M.logreg_caption(logreg) in texts(at)
    assert f"the notes' {NOTES['reverse_passes'].value}" in M.logreg_caption(logreg)


# --- Tensors and storage (page 8): the layer stack and slide 42's op definition ---------------------------------

def test_layer_stack_draws_what_one_linear_call_did_measured_on_the_engine():
    from explorer import tensors_and_storage as M
    at = run_page("8_Tensors_and_storage.py")
    walk = M.layer_walk()
    specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    notes = next(texts_ for texts_ in ([a.get("text") or "" for a in s["layout"].get("annotations", [])] for s in specs)
                 if any("engine/tensor_data.py" in t for t in texts_))
    for (layer, module, _), did in zip(M.LAYERS, walk.per_layer()):
        assert any(f"<b>{html.escape(layer)}</b>" in t and html.escape(module) in t for t in notes), layer
        assert any(f"<i>{html.escape(did)}</i>" in t for t in notes), did
    # the numbers in those lines are the engine's: one op applied, the kernel calls counted, the result's TensorData
    assert walk.ops and walk.kernel_calls and walk.out_shape == (4, 2)


@pytest.mark.parametrize("myop", ["softplus", "cube", "softplus_wrong"])
def test_add_your_own_op_is_checked_by_central_differences(myop):
    from explorer import tensors_and_storage as M
    at = run_page("8_Tensors_and_storage.py")
    at.selectbox(key="tensors_myop").set_value(myop).run()
    assert not at.exception, [e.value for e in at.exception]
    check = M.check_custom_op(myop)
    assert any(c.value == check.source.rstrip("\n") or c.value == check.source for c in at.code)
    verdict = f"max |autodiff − central difference| = {check.max_error:.3g}"
    shown = [s.value for s in at.success] if check.ok else [e.value for e in at.error]
    assert any(verdict in v for v in shown), (verdict, shown)
    assert check.ok == (myop != "softplus_wrong")
    same_cells(table_with(at, "|autodiff − central|"), M.custom_op_rows(check))


def test_slide_42_add_forward_and_backward_side_by_side_from_the_engine():
    import inspect

    from engine import ops
    from explorer import tensors_and_storage as M
    at = run_page("8_Tensors_and_storage.py")
    assert at.radio(key="tensors_decl").value == "add"
    src = M.declaration_source(ops.Add)
    codes = [c.value for c in at.code]
    assert src.forward.rstrip("\n") in codes and src.backward.rstrip("\n") in codes
    assert inspect.getsource(ops.Add.vjp.__func__).rstrip("\n") == src.backward.rstrip("\n")
    assert any(s.value.startswith("How an op is defined") and "slide 42" in s.value for s in at.subheader)


# --- Static vs dynamic (page 9): granularity, the framework map, framework overhead ----------------------------

def test_granularity_table_is_the_engines_measurement():
    from explorer import granularity as G
    g = wait_fixed("granularity.sigmoid")
    at = run_page("9_Static_vs_dynamic.py")
    same_cells(table_with(at, "ops run backward"), G.rows(g))
    assert G.summary(g) in texts(at)
    # the counts (not the times) are the engine's, whatever the size: measured again on a small x
    small = G.compare(n=1000, repeats=1)
    for a, b in zip(small.rows, g.rows):
        assert (a.forward_ops, a.backward_ops, a.kept_tensors) == (b.forward_ops, b.backward_ops, b.kept_tensors)
    fused, decomposed = g.rows
    assert fused.forward_ops == 1 and decomposed.forward_ops == 4
    assert fused.kept_bytes < decomposed.kept_bytes
    assert fused.grad_at_far_left == 0.0 and decomposed.grad_at_far_left != decomposed.grad_at_far_left   # nan


def test_framework_goals_in_the_notes_words_and_the_maps_rows():
    from explorer import static_vs_dynamic as M
    at = run_page("9_Static_vs_dynamic.py")
    goals = table_with(at, "goal")
    same_cells(goals, [{"goal": g, "means": m, "in this engine": e} for g, m, e in M.FRAMEWORK_GOALS])
    assert list(goals["goal"]) == ["expressive", "productive", "efficient"]
    means = " ".join(goals["means"])
    for words in ("no CUDA needed", "scale", "hardware acceleration"):
        assert words in means
    same_cells(table_with(at, "framework"), M.FRAMEWORKS)
    criteria = next(t.value for t in at.table if {"PyTorch", "JAX", "this engine"} <= set(t.value.columns))
    assert list(criteria[""]) == ["hardware", "ease of use", "ecosystem", "parallelism"]
    same_cells(criteria, M.FRAMEWORK_CRITERIA)


def test_framework_overhead_beside_the_notes_3_to_4x_says_why_they_differ():
    from explorer import static_vs_dynamic as M
    at = run_page("9_Static_vs_dynamic.py")
    next(b for b in at.button if b.key == "static_compile").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    demo = at.session_state["static_compiled"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["ops traced"] == str(demo["traced_ops"]) and metrics["ops replayed"] == str(demo["replayed_ops"])
    assert metrics["eager µs / step"] == f"{demo['eager_us']:.0f}"
    assert metrics["replayed µs / step"] == f"{demo['compiled_us']:.0f}"
    text = texts(at)
    assert f"bit for bit: **{demo['identical']}**" in text and demo["identical"]
    try:
        import torch  # noqa: F401
    except ImportError:
        assert M.overhead_text(demo, None) in text or "PyTorch's time for the same step" in text
        return
    line = next(t for t in text.split("\n") if t.startswith("The same step in PyTorch's eager mode"))
    torch_us = float(re.search(r"one thread\): (\d+) µs", line).group(1))
    eager_ratio = float(re.search(r"eager step takes ([\d.]+)×", line).group(1))
    # the ratio is the page's own eager time over PyTorch's (the µs shown rounded to 1)
    assert eager_ratio == pytest.approx(demo["eager_us"] / torch_us, rel=0.02, abs=0.01)
    assert M.NOTES_OVERHEAD in line and "the notes' NumPy framework" in line
    assert f"{demo['traced_ops']} ops a step" in line and "capture and replay removes" in line


# --- Sentiment training (page 11): HW2's FAQ where a student trains HW2's network -----------------------------

def test_hw2_setting_on_the_sentiment_page_carries_the_handouts_training_faq():
    from explorer.student_code import handout as H
    at = run_page("11_Sentiment_training.py")
    assert H.training_faq_text() not in texts(at)           # the built-in corpus is not HW2's setting
    at.selectbox(key="sentiment_dataset").set_value("subset").run()
    assert not at.exception, [e.value for e in at.exception]
    caption = next(c.value for c in at.caption if c.value.startswith("HW2's setting"))
    assert caption.endswith(H.training_faq_text())
    # the handout's own answers, as the Your HW2 code page's FAQ table shows them
    for row in (H.faq_rows()[0], H.faq_rows()[2]):
        assert row["question"] in caption and row["the handout's answer"] in caption
    assert "75 %" in caption and "30 minutes" in caption and "SGD" in caption
