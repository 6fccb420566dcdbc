"""Gradient check (page 3): finite differences against autodiff, and the error versus h.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from engine import explain as ex
from engine.explain import ExpressionError, costs

from .kit.budget import check_program, finite_difference_checks
from .kit.formatting import check_difference, fmt_check, fmt_number, fmt_value
from .kit.presentation import Look
from .kit.programs import InputProblem, parse

SCHEME_LABELS = {"central": "central (f(x+h) − f(x−h)) / 2h", "forward": "forward (f(x+h) − f(x)) / h"}


@dataclass
class GradcheckModel:
    program: Any
    inputs: dict
    sweep: Any
    autodiff: dict
    table: list[dict]


def gradcheck_model(program_text: str, inputs_text: str, wrt: str, h: float, index: int = 0) -> GradcheckModel:
    """h sweep for element ``index`` of one input (float32 and float64, central and forward differences)
    and the per-input table at ``h``."""
    program, inputs = parse(program_text, inputs_text)
    if wrt not in program.input_names:
        wrt = program.input_names[0]
    index = min(max(int(index), 0), int(np.size(inputs[wrt])) - 1)
    try:
        # the sweep: 45 step sizes x 2 dtypes x 3 runs, the third derivative by nested grad (~15 runs),
        # then the table's central differences in two dtypes
        checks = finite_difference_checks({n: np.shape(v) for n, v in inputs.items()})
        check_program(program, inputs, 300 + 4 * checks,
                      what=f"the gradient check (an h sweep of about 290 runs and {checks} central differences "
                           "in two dtypes)")
        trace = ex.record_execution(program, inputs)
        sweep = costs.h_sweep(program, inputs, wrt, index=index)
        fd64 = costs.central_differences(program, inputs, h=h, dtype="float64")
        fd32 = costs.central_differences(program, inputs, h=h, dtype="float32")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    table = []
    for name in program.input_names:
        auto = trace.grads.get(name)
        d64, d32 = check_difference(auto, fd64.get(name)), check_difference(auto, fd32.get(name))
        table.append({"input": name, "value": fmt_value(inputs[name]), "autodiff": fmt_value(auto, 10),
                      f"central diff. float64 (h={h:g})": fmt_check(fd64.get(name), 10),
                      "|diff| float64": "" if d64 is None else f"{d64:.2e}",
                      f"central diff. float32 (h={h:g})": fmt_check(fd32.get(name), 10),
                      "|diff| float32": "" if d32 is None else f"{d32:.2e}"})
    return GradcheckModel(program, inputs, sweep, trace.grads, table)


def sweep_series(sweep, dtype: str | None = None) -> tuple[dict, list]:
    """h-sweep rows as plot series ``label -> (hs, errors)`` and star markers at each best h.

    Labels are ``dtype`` for the central scheme and ``"dtype forward"`` for forward differences;
    ``dtype`` limits both to one dtype. A best-h star sits on the error model's curve (the best h is
    the model's minimiser, usually between two swept h).
    """
    series: dict[str, tuple[list, list]] = {}
    for row in sweep.rows:
        if dtype is not None and row.dtype != dtype:
            continue
        label = str(row.dtype) if row.scheme == "central" else f"{row.dtype} {row.scheme}"
        xs, ys = series.setdefault(label, ([], []))
        xs.append(float(row.h))
        ys.append(max(float(row.abs_error), 1e-300))  # log axis: an exact hit is drawn at the floor
    markers = []
    for dt, h in sweep.best_h.items():
        if dtype is not None and dt != dtype:
            continue
        m = sweep.model("central", dt)
        if m is not None and m.best_h is not None:
            y = m.error(h)
        else:  # no truncation term: the best h is the sweep's lowest point
            xs, ys = series[str(dt)]
            y = ys[xs.index(float(h))] if float(h) in xs else min(ys)
        markers.append((f"best h ({dt})", float(h), y, f"best h = {float(h):.1e}"))
    return series, markers


def best_h_text(sweep, dtype: str) -> str:
    """One sentence: the best h of ``dtype``, how it was found, and where the sweep's lowest point fell."""
    m = sweep.model("central", dtype)
    best, lowest = sweep.best_h.get(dtype), sweep.lowest_h.get(dtype)
    if best is None:
        return ""
    if m is None or m.best_h is None:
        return (f"**{dtype}**: best h = {best:.1e}, the lowest point of the sweep (f''' = 0 here, so central "
                "differences have no truncation error: only rounding is left).")
    f, _, _, d3 = sweep.derivatives
    text = (f"**{dtype}**: best h = (3ε|f| / |f'''|)^(1/3) = **{best:.1e}**, with ε = {m.eps:.2g}, "
            f"|f| = {fmt_number(abs(f))}, f''' = {fmt_number(d3)} (the engine's third derivative, nested grad).")
    if lowest is not None and not (best / 3 <= lowest <= best * 3):
        text += (f" The sweep's lowest point, h = {lowest:.1e}, is a lucky cancellation of rounding errors, "
                 "not a better step.")
    return text


_COLOURS = {"central": "#2563eb", "forward": "#ea580c"}


def sweep_figure(sweep, dtype: str, look: Look, title: str | None = None) -> go.Figure:
    """Log-log error vs h for one dtype: central and forward differences over the error model's terms
    (truncation h² |f'''|/6 and h |f''|/2, rounding ε|f|/h, drawn as wide pale bands underneath), and
    the best h as a star (its value in the legend).
    """
    fig = go.Figure()
    data = []
    for scheme in ("central", "forward"):
        hs, errs = sweep.series(scheme, dtype)
        if hs:
            data.append((scheme, hs, [max(float(e), 1e-300) for e in errs]))
    ys_all = [e for _, _, errs in data for e in errs if e > 1e-300]
    if not ys_all:
        return fig
    lo, hi = min(ys_all) / 3, max(ys_all) * 3
    hs_all = sorted({h for _, hs, _ in data for h in hs})

    def guide(fn, name, colour):
        pts = [(h, fn(h)) for h in hs_all]
        pts = [(h, y) for h, y in pts if lo <= y <= hi and math.isfinite(y)]
        if len(pts) >= 2:  # under the data: a pale band the measured error runs along
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=name,
                                     line=dict(width=look.edge_width * 5, color=colour), opacity=0.3,
                                     hoverinfo="name"))

    for scheme, term in (("central", "h²|f'''|/6"), ("forward", "h|f''|/2")):
        m = sweep.model(scheme, dtype)
        if m is not None and m.truncation_coefficient > 0:
            guide(m.truncation, f"model: truncation {term}", _COLOURS[scheme])
    m = sweep.model("central", dtype)
    if m is not None:
        guide(m.rounding, "model: rounding ε|f|/h", "#6b7280")
    for scheme, hs, errs in data:
        fig.add_trace(go.Scatter(x=hs, y=errs, mode="lines+markers", name=SCHEME_LABELS[scheme],
                                 line=dict(width=look.edge_width + 1, color=_COLOURS[scheme]),
                                 marker=dict(size=max(5, look.node_size // 5))))
    _, markers = sweep_series(sweep, dtype)
    for name, x, y, _text in markers:
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"{name} = {x:.1e}",
                                 marker=dict(symbol="star", size=look.node_size * 0.8, color="#16a34a",
                                             line=dict(width=1, color="#14532d"))))
    fig.update_layout(title=title or f"|finite difference − autodiff|, {dtype}", xaxis_title="h (log scale)",
                      yaxis_title="absolute error (log scale)", font=dict(size=look.figure_font),
                      height=int(look.figure_height * 0.9), legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=10, r=10, t=60, b=10))
    # decades only: Plotly's 2 / 5 minor labels on a log axis crowd a projector
    fig.update_xaxes(type="log", exponentformat="power", dtick=2 if len(hs_all) > 1 else None, automargin=True)
    fig.update_yaxes(type="log", exponentformat="power", range=[math.log10(lo), math.log10(hi)], dtick=2,
                     automargin=True)
    return fig
