"""Forward vs reverse (page 7): its additions: the Jacobian's definition, the notes' cost table, checkpointing measured, micro-batches."""
import pytest

from explorer import forward_vs_reverse as M
from explorer.kit.budget import RequestRefused


def test_jacobian_is_defined_as_m_by_n():
    assert "m × n" in M.JACOBIAN_DEFINITION and "Jᵢⱼ = ∂yᵢ/∂xⱼ" in M.JACOBIAN_DEFINITION


def test_pass_costs_count_the_backward_matmuls():
    rows = M.pass_costs(depth=4, width=8, batch=4)
    fwd, rev, jvp = rows
    assert fwd["× forward (multiply-adds)"] == "1.00"
    # backward: x̄ and W̄ per layer but no x̄ for the data: (4 + 2·4 − 1) / 4
    assert rev["× forward (multiply-adds)"] == "2.75"
    assert rev["ops run"] > fwd["ops run"]
    assert jvp["× forward (multiply-adds)"] == "2.00"      # each layer: h·W and the tangent ḣ·W


def test_micro_batches_give_the_full_batch_gradient_with_less_kept():
    rows = M.micro_batch_rows(batch=16, width=6, depth=2, splits=(1, 2, 4))
    assert [r["effective batch"] for r in rows] == [16, 16, 16]
    assert all(float(r["max |Δ gradient| vs one batch"]) < 1e-14 for r in rows)
    kept = [float(r["kept per backward (KB)"]) for r in rows]
    assert kept[0] > kept[1] > kept[2]


def test_checkpoint_runs_measure_every_policy_with_equal_gradients():
    # batch > width: activations outweigh the weights' gradients, which every policy's peak holds (backward frees)
    series, rows = M.checkpoint_runs(8, 64, depths=(4, 9), repeats=1)
    assert set(series) == {"keep all", "checkpoint every √L", "recompute all"}
    calls = {(r["policy"], r["layers L"]): r["layer calls"] for r in rows}
    assert calls[("keep all", 9)] == 9 and calls[("checkpoint every √L", 9)] == 18
    assert calls[("recompute all", 9)] == 9 + 45
    assert all(float(r["max |Δ gradient| vs keep all"]) < 1e-12 for r in rows)
    peak = {p: ys for p, (_, ys) in series.items()}
    assert peak["recompute all"][-1] < peak["keep all"][-1]


def test_checkpoint_work_is_estimated_and_refused_before_running():
    assert M.checkpoint_work(64, 64) <= M.MAX_CHECKPOINT_MACS
    with pytest.raises(RequestRefused, match="multiply-adds"):
        M.checkpoint_runs(128, 128)


def test_hw2_network_keeps_2L_minus_1_activations_measured_on_its_graph():
    """Page 7's HW2 table: every tensor the real HW2 graph (sentiment.model.SentimentNet, training mode)
    keeps for backward, each labelled; the activations among them are the notes' 2L - 1 (L = 2)."""
    from explorer.forward_vs_reverse import hw2_kept_for_backward
    k = hw2_kept_for_backward(batch=10)
    assert k.layers == 2 and k.rule == 3
    acts = [r for r in k.rows if r["counted by the rule"] == "yes"]
    assert len(acts) == k.activations == k.rule == 3
    by = {r["tensor"]: r["kept by"].split(", ") for r in acts}
    assert "ReLU" in by["output of ReLU"] and "Linear 2" in by["output of Dropout"]
    assert "sigmoid" in by["output of sigmoid"]
    assert sorted(r["tensor"] for r in acts) == ["output of Dropout", "output of ReLU", "output of sigmoid"]
    # tensors alike would share one row with their count, and each row says its dtype; the means (ops.Mean)
    # keep no scalar (their 1/n is a parameter of the op), and each weight is named by the Linear reading it
    assert len({(r["tensor"], r["shape"], r["kept by"]) for r in k.rows}) == len(k.rows)
    assert not [r for r in k.rows if r["what"] == "scalar"]
    assert sorted(r["tensor"] for r in k.rows if r["what"] == "parameter") == ["weight of Linear 1", "weight of Linear 2"]
    assert {r["dtype"] for r in acts} == {"float64"} and "float64" in k.sentence
    kinds = {r["what"] for r in k.rows}
    assert {"network input (sentence vectors)", "parameter"} <= kinds
    # every row is a real saved tensor of the graph: shapes follow the batch
    k20 = hw2_kept_for_backward(batch=20)
    assert k20.activations == 3 and k20.activation_bytes == 2 * k.activation_bytes
    assert "2L − 1 = 3" in k.sentence and "3 activations" in k.sentence


def test_hw2_count_fails_if_an_op_kept_an_extra_activation(monkeypatch):
    """The count reads the graph: declare that ReLU also keeps its input z₁ and the activations are 4."""
    from engine import ops
    from explorer.forward_vs_reverse import hw2_kept_for_backward
    relu = next(op for op in ops.PRIMITIVES if op.name == "relu")
    monkeypatch.setattr(relu, "saves", (0,))
    assert hw2_kept_for_backward(batch=10).activations == 4


def test_the_memory_section_leads_with_one_sentence_and_details_apart():
    """Above the memory sliders: one lead sentence the class reads (bold), the details as short lines under it
    (a dense paragraph stood there); and no claim that each op keeps only what its VJP reads (an op keeps what
    its VJP *may* read: the Network explorer's memory table shows kept tensors that no VJP read)."""
    from explorer.forward_vs_reverse import MEMORY_DETAILS, MEMORY_LEAD
    lead = MEMORY_LEAD.split("**")[1]
    assert MEMORY_LEAD.startswith("**") and lead.count(". ") == 0 and len(lead.split()) <= 25
    assert len(MEMORY_LEAD.split()) <= 35
    assert 2 <= len(MEMORY_DETAILS) <= 4 and all(len(line.split()) <= 30 for line in MEMORY_DETAILS)
    assert not any("only what its VJP reads" in t for t in (MEMORY_LEAD, *MEMORY_DETAILS))


def test_log_axes_label_their_minor_ticks_in_full():
    """A log axis's 2s and 5s read 20 and 50 ("100, 5, 2, 10" read as if 5 > 10)."""
    from explorer.kit.figures import line_plot
    from explorer.kit.presentation import NORMAL
    fig = line_plot({"a": ([1, 2, 4], [1, 30, 100])}, title="t", x_title="x", y_title="y", look=NORMAL, log_y=True)
    y = fig.layout.yaxis
    assert y.type == "log" and list(y.tickvals) == [1, 2, 5, 10, 20, 50, 100]
    assert list(y.ticktext) == ["1", "2", "5", "10", "20", "50", "100"]
    assert fig.layout.xaxis.tickvals is None                        # a linear axis keeps plotly's ticks
    plain = line_plot({"a": ([1, 2], [1, 2])}, title="t", x_title="x", y_title="y", look=NORMAL)
    assert plain.layout.yaxis.type is None and plain.layout.yaxis.tickvals is None
    wide = line_plot({"a": ([1, 2], [1e-6, 3e8])}, title="t", x_title="x", y_title="y", look=NORMAL, log_y=True)
    assert list(wide.layout.yaxis.ticktext) == ["1e-6", "1e-4", "0.01", "1", "100", "10000", "1e6", "1e8"]
    from explorer.kit.figures import log_tick_text
    assert [log_tick_text(v) for v in (0.002, 0.5, 20, 5000, 20000, 2e6)] == ["0.002", "0.5", "20", "5000", "20000", "2e6"]


def test_exercise_9s_reading_leads_with_the_two_counts():
    """Exercise 9's reading: one sentence with the rule's 2L − 1 and the engine's measured count (the class's
    numbers), the why and the how apart; no claim that an op keeps only what its VJP reads."""
    from explorer.forward_vs_reverse import memory_sentence
    lead, details = memory_sentence(10, 4096, 512, "float32")
    assert "**2L − 1 = 19**" in lead and "**19 tensors** (exactly the rule)" in lead and lead.count(". ") == 0
    assert "Linear keeps its input h" in details and "4-wide copy" in details
    assert "only what its VJP reads" not in lead + details


def test_peak_memory_ordering_is_measured():
    # backward() frees each node's saved values as it goes, so keep-all's peak holds the parameters' gradients
    # too: checkpointing pays when a layer's activations (batch x width) outweigh its weights (width^2)
    m = {mode: M.measure_policy(depth=16, width=32, batch=256, mode=mode, repeats=1)
         for mode in ("keep_all", "sqrt", "recompute_all")}
    assert m["recompute_all"].peak_bytes < m["sqrt"].peak_bytes < m["keep_all"].peak_bytes
    assert m["keep_all"].layer_calls == 16 and m["recompute_all"].layer_calls == 16 + 16 * 17 // 2
    assert m["sqrt"].max_grad_difference == 0.0 or m["sqrt"].max_grad_difference < 1e-12
    assert m["recompute_all"].max_grad_difference < 1e-12
