"""Granularity (explorer/granularity.py): a fused sigmoid against its four-op decomposition, measured on the engine
(nodes, tensors kept for backward, kernel calls, stability at x = −800), and as Static vs dynamic renders it."""
from __future__ import annotations

import math

import pytest

from explorer import granularity as G


@pytest.fixture(scope="module")
def g():
    return G.compare(n=20_000, repeats=3)


def test_the_fused_op_records_and_keeps_less_and_agrees_in_value(g):
    fused, dec = g.rows
    assert (fused.forward_ops, dec.forward_ops) == (1, 4)            # sigmoid | neg, exp, add, div
    assert fused.kept_tensors == 1 and fused.kept_bytes == 20_000 * 8  # its own output
    assert dec.kept_tensors == 3 and dec.kept_bytes == 3 * 20_000 * 8  # exp's output, the denominator, ...
    assert fused.forward_ops + fused.backward_ops < dec.forward_ops + dec.backward_ops
    assert g.max_value_difference <= 1e-15 and g.max_grad_difference <= 1e-15


def test_far_left_the_decomposition_loses_the_gradient_and_the_fused_rule_does_not(g):
    fused, dec = g.rows
    assert fused.value_at_far_left == 0.0 == dec.value_at_far_left
    assert fused.grad_at_far_left == 0.0
    assert math.isnan(dec.grad_at_far_left)


def test_the_summary_reads_its_numbers_from_the_measurement(g):
    text = G.summary(g)
    fused, dec = g.rows
    assert f"keeps {fused.kept_bytes / 1e6:.1f} MB for backward against {dec.kept_bytes / 1e6:.1f} MB" in text
    assert f"{fused.forward_ops + fused.backward_ops} kernel calls against {dec.forward_ops + dec.backward_ops}" in text
    assert "0·∞ = nan" in text


def test_static_vs_dynamic_shows_the_comparison():
    from tests.test_app_pages import no_exceptions, page, texts
    at = page("9_Static_vs_dynamic.py").run()
    no_exceptions(at)
    assert any(s.value.startswith("Granularity") for s in at.subheader)
    assert any("kept for backward" in t.value.columns for t in at.table)
    assert "0·∞ = nan" in texts(at)
