"""This engine against PyTorch, trained side by side (the notes' §5.2; explorer.gradient_check) and the Gradient
check page showing it (headless). PyTorch runs in a child process; without it the comparison says it was skipped."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer import gradient_check as G
from explorer.kit.reference import torch_installed

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "6_Gradient_check.py")


def test_setup_is_320_steps_of_shared_batches_and_masks_drawn_from_the_seed():
    s, again, other = G.side_by_side_setup(0), G.side_by_side_setup(0), G.side_by_side_setup(1)
    cfg = G.SIDE_BY_SIDE
    assert len(s.batches) == len(s.keep) == 320 == cfg["epochs"] * cfg["sentences"] // cfg["batch"]
    # every epoch visits every sentence once, in its own order
    per_epoch = len(s.batches) // cfg["epochs"]
    for e in range(cfg["epochs"]):
        assert sorted(np.concatenate(s.batches[e * per_epoch:(e + 1) * per_epoch])) == list(range(cfg["sentences"]))
    assert set(np.unique(np.concatenate(s.keep))) == {0.0, 1 / (1 - cfg["dropout"])}
    assert all(np.array_equal(a, b) for a, b in zip(s.keep, again.keep))
    assert not all(np.array_equal(a, b) for a, b in zip(s.keep, other.keep))
    assert np.array_equal(s.mask.sum(1) > 0, np.ones(len(s.y), bool)) and (s.x[s.mask == 0] == 0).all()


def test_the_engine_trains_hw2s_network():
    losses = G.engine_side_by_side(0)
    assert len(losses) == 320 and all(np.isfinite(losses))
    assert np.mean(losses[-40:]) < np.mean(losses[:40])           # the last epoch's loss is below the first's


@pytest.mark.skipif(not torch_installed(), reason="PyTorch is not installed")
def test_engine_and_pytorch_agree_to_rounding_at_every_step():
    result = G.side_by_side(0)
    assert result.torch is not None and len(result.torch) == len(result.engine) == 320
    assert result.largest < 1e-12 and result.largest == max(abs(a - b) for a, b in zip(result.engine, result.torch))
    assert f"**{result.largest:.1e}**" in result.text() and "The notes report 9.0e-15" in result.text()
    # the comparison can tell: another seed's PyTorch run is far from this engine run
    other = G.in_reference_process("explorer.gradient_check:torch_side_by_side", 1)
    assert max(abs(a - b) for a, b in zip(result.engine, other)) > 1e-3


def test_without_pytorch_only_the_engine_curve_and_the_reason():
    result = G.SideBySide(G.engine_side_by_side(0), None, G.NO_TORCH)
    assert result.largest is None and "PyTorch is not installed" in result.text()
    fig = G.side_by_side_figure(result, _look())
    assert [t.name for t in fig.data] == ["this engine"]


def _look():
    from explorer.kit.presentation import NORMAL
    return NORMAL


def test_page_trains_both_on_click():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("side by side" in str(m.value) and "Largest loss" in str(m.value) for m in at.markdown)
    next(b for b in at.button if b.key == "gradcheck_side_by_side").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    result = G.side_by_side(0)
    text = "\n".join(str(m.value) for m in at.markdown)
    assert result.text() in text
    chart = next(c for c in at.get("plotly_chart") if "HW2's network trained side by side" in c.proto.spec)
    names = ["this engine", "PyTorch", "|difference|"] if result.torch is not None else ["this engine"]
    spec = json.loads(chart.proto.spec)
    assert [t["name"] for t in spec["data"]] == names
    assert spec["data"][0]["y"] == pytest.approx(result.engine, rel=0, abs=0)
