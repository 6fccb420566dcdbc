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
    series, rows = M.checkpoint_runs(16, 8, depths=(4, 9), repeats=1)
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
