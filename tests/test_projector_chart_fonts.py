"""Charts on a 1366 x 768 projector: the page is the 1920 x 1080 layout drawn 0.711 times as large, so a chart's
every text the class reads is laid out at ``small_screen_floor_px()`` (23 px) or more to reach 16 px on that screen.
Read from the figures as the pages send them in presentation mode (Gradient check's sweep titles, Learning problem's
legend and tick labels)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.kit.presentation import fit_factor, small_screen_floor_px, SMALL_SCREEN

PAGES = Path(__file__).resolve().parents[1] / "app" / "pages"
FLOOR = small_screen_floor_px()


def _figures(page: str, params: dict[str, str]) -> list[dict]:
    at = AppTest.from_file(str(PAGES / page), default_timeout=180)
    at.query_params.update({"present": "1", **params})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _size(font: dict | None, default: float) -> float:
    return float((font or {}).get("size") or default)


def test_the_floor_is_16_px_on_a_1366_screen():
    assert FLOOR * fit_factor(SMALL_SCREEN) >= 16 - 1e-9


@pytest.mark.parametrize("best", ["0", "1"])
def test_gradient_checks_sweep_titles_reach_16_px_on_a_1366_projector(best):
    """Both h sweeps' titles ("|finite difference − autodiff| for ∂f/∂x1, float64"), legends and axis titles at the
    floor or more (a title at 21 px in the layout is 15 px on the projector)."""
    figs = _figures("6_Gradient_check.py", {"show_best": best})[:2]
    assert len(figs) == 2
    for fig in figs:
        lay = fig["layout"]
        base = _size(lay.get("font"), 0)
        assert base >= FLOOR
        title = lay.get("title") or {}
        assert title.get("text") and _size(title.get("font"), base) >= FLOOR, title
        assert _size((lay.get("legend") or {}).get("font"), base) >= FLOOR
        for name in ("xaxis", "yaxis"):
            axis = lay[name]
            assert _size(axis.get("tickfont"), base) >= FLOOR and _size((axis.get("title") or {}).get("font"), base) >= FLOOR


@pytest.mark.parametrize("params", [{}, {"step": "12"}, {"lr": "32", "step": "6"}])
def test_learning_problems_legend_and_ticks_reach_16_px_on_a_1366_projector(params):
    """The contour plot's legend ("w₀ … wₖ", the minimum) and tick labels, and those of the distance plot beside it,
    at the floor or more (13-14 px on the projector at the figures' 19-20 px)."""
    figs = _figures("2_Learning_problem.py", params)
    assert figs
    for fig in figs:
        lay = fig["layout"]
        base = _size(lay.get("font"), 0)
        assert base >= FLOOR
        if lay.get("showlegend", True) is not False:
            assert _size((lay.get("legend") or {}).get("font"), base) >= FLOOR
        for name, axis in lay.items():
            if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                assert _size(axis.get("tickfont"), base) >= FLOOR, (name, axis.get("tickfont"))
        for tr in fig.get("data") or []:
            for key in ("textfont",):
                sizes = (tr.get(key) or {}).get("size")
                for s in sizes if isinstance(sizes, list) else [sizes] if sizes is not None else []:
                    assert s >= FLOOR, (tr.get("name"), key, s)
