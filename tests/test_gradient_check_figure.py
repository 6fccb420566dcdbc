"""Gradient check's h sweeps as the page draws them (the figure's data and layout, no browser): every model band,
curve and star inside the axes' ranges with room for its width (the float32 sweep's bands were cut at the frame),
and on a projector axis titles at least as large as the numbers Plotly draws on their axes, the legend at the
figure's foot."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from explorer.gradient_check import gradcheck_model, sweep_figure
from explorer.kit.presentation import NORMAL, PRESENTING, readable_figure, small_screen_floor_px

PRESENT_SWEEP_PX = 550        # app/pages/6_Gradient_check.py draws each sweep this tall on a projector
PRESENT_COLUMN_PX = 912       # a presentation column at 1920 x 1080 (the sweep's plot is narrower)
CHARTS = replace(PRESENTING, figure_font=small_screen_floor_px())   # the page's presentation sizes
SWEEPS = [("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5", "x1", 0),
          ("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5", "x2", 0),
          ("f = sum(W @ W)", "W = [[1, 2], [3, 4]]", "W", 3),      # f''' = 0: no central truncation band
          ("f = x * x", "x = 3", "x", 0),
          ("f = sin(x)", "x = 0", "x", 0)]    # exact hits: points (and the star) at the floor, 1e-300, off the plot


def drawn(spec: dict, look, height: int | None):
    """``spec`` as the page sends it (presentation sizes raised), and its plot's height in px at most."""
    out = readable_figure(spec, look)
    lay = out["layout"]
    m = lay.get("margin") or {}
    return out, (height or lay["height"]) - m.get("t", 0) - m.get("b", 0)


def reach_px(trace: dict) -> float:
    """How far past its points a trace is drawn: half a line's width, a marker's half size."""
    line = (trace.get("line") or {}).get("width") or 2
    marker = (trace.get("marker") or {}).get("size") or 0 if "markers" in (trace.get("mode") or "") else 0
    return max(line / 2, marker / 2)


@pytest.mark.parametrize("program,inputs,wrt,index", SWEEPS)
@pytest.mark.parametrize("presenting", [True, False])
@pytest.mark.parametrize("best", [True, False])
def test_every_band_curve_and_star_is_inside_the_axes_with_room_for_its_width(program, inputs, wrt, index,
                                                                              presenting, best):
    m = gradcheck_model(program, inputs, wrt, 1e-6, index)
    for dtype in ("float64", "float32"):
        height = PRESENT_SWEEP_PX if presenting else None
        fig = sweep_figure(m.sweep, dtype, CHARTS if presenting else NORMAL, best=best, height=height)
        spec, plot_px = drawn(fig.to_dict(), CHARTS if presenting else NORMAL, height)
        lay = spec["layout"]
        (y0, y1), (x0, x1) = lay["yaxis"]["range"], lay["xaxis"]["range"]
        # decades per px at least these (the plot is at most plot_px tall, at most a column wide)
        per_px_y, per_px_x = (y1 - y0) / plot_px, (x1 - x0) / PRESENT_COLUMN_PX
        assert any(t["name"].startswith("model") for t in spec["data"])
        ys = [y for t in spec["data"] for y in t["y"] if y > 1e-300]
        # the room around what is drawn costs a little of the axis, not decades
        assert y1 - y0 <= math.log10(max(ys) / min(ys)) + 2, (dtype, "the y range is stretched")
        for t in spec["data"]:
            r = reach_px(t)
            for x, y in zip(t["x"], t["y"]):
                ly, lx = math.log10(y), math.log10(x)
                # (an exact hit is drawn at the floor, 1e-300, under the plot: its h is in the plot all the same)
                assert y <= 1e-300 or ly - r * per_px_y >= y0 - 1e-9 and ly + r * per_px_y <= y1 + 1e-9, \
                    (dtype, t["name"], y, "cut at the frame", [10 ** y0, 10 ** y1])
                assert lx - r * per_px_x >= x0 - 1e-9 and lx + r * per_px_x <= x1 + 1e-9, \
                    (dtype, t["name"], x, "cut at the frame", [10 ** x0, 10 ** x1])


def tick_drawn_px(axis: dict) -> float:
    """The size Plotly draws an axis's numbers at: its tick font, 1.25 times that for decades in its own "power"
    format (10⁻⁶; labels given as ticktext are drawn at the tick font)."""
    size = axis["tickfont"]["size"]
    if axis.get("type") == "log" and axis.get("exponentformat") == "power" and not axis.get("ticktext"):
        return 1.25 * size
    return size


@pytest.mark.parametrize("program,inputs,wrt,index", SWEEPS)
def test_on_a_projector_axis_titles_are_as_large_as_their_numbers_and_the_legend_sits_at_the_foot(
        program, inputs, wrt, index):
    m = gradcheck_model(program, inputs, wrt, 1e-6, index)
    floor = small_screen_floor_px()    # 16 px once a 1366 x 768 projector scales the page
    for dtype in ("float64", "float32"):
        for best in (True, False):
            fig = sweep_figure(m.sweep, dtype, CHARTS, best=best, height=PRESENT_SWEEP_PX)
            spec, plot_px = drawn(fig.to_dict(), CHARTS, PRESENT_SWEEP_PX)
            lay = spec["layout"]
            for name in ("xaxis", "yaxis"):
                axis = lay[name]
                assert axis["title"]["font"]["size"] >= tick_drawn_px(axis), (dtype, name)
                assert axis["tickfont"]["size"] >= floor
                if any("<sup>" in t for t in axis.get("ticktext") or ()):   # an exponent: 70 % of the font
                    assert 0.7 * axis["tickfont"]["size"] >= floor - 1e-9, (dtype, name)
            # the legend under everything, at the figure's foot (in the plot's units its place moved with the
            # plot's height and met the h axis's title), two entries a row
            legend = lay["legend"]
            assert (legend["yref"], legend["y"], legend["yanchor"]) == ("container", 0, "bottom")
            rows = math.ceil(len(spec["data"]) / 2)
            assert legend["entrywidthmode"] == "fraction" and legend["entrywidth"] == 0.5
            below = lay["margin"]["b"]
            axis_px = lay["xaxis"]["tickfont"]["size"]
            # the h axis's numbers (a raised exponent) and title, then the legend's rows
            assert below >= 1.3 * axis_px + 1.1 * axis_px + rows * 1.3 * legend["font"]["size"], (dtype, best)
            assert plot_px >= 250, "a sweep too flat to read"
