"""Plotly helpers shared by the pages: show a given frame, apply presentation sizes, simple plots.

The animated graph itself is built by ``engine.explain.plotly_figure.build_figure``; here we only
choose which frame is shown first and how large things are drawn.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import plotly.graph_objects as go

from .presentation import Look


def at_frame(fig: go.Figure, step: int) -> go.Figure:
    """A copy of ``fig`` whose visible data (and slider position) is frame ``step``; frames kept for play."""
    out = go.Figure(fig)
    frames = out.frames or ()
    if not frames:
        return out
    step = min(max(int(step), 0), len(frames) - 1)
    fr = frames[step]
    idxs = list(fr.traces) if fr.traces is not None else list(range(len(fr.data)))
    for i, fdata in zip(idxs, fr.data):
        if i < len(out.data):
            out.data[i].update(fdata.to_plotly_json())
    if fr.layout is not None:
        out.layout.update(fr.layout.to_plotly_json())
    if out.layout.sliders:
        sliders = list(out.layout.sliders)
        sliders[0] = go.layout.Slider(sliders[0]).update(active=step)
        out.layout.sliders = sliders
    return out


def static_frame(fig: go.Figure, step: int) -> go.Figure:
    """Frame ``step`` as a still figure: no frames, no play button, no slider (for side-by-side views)."""
    out = at_frame(fig, step)
    out.frames = ()
    out.layout.updatemenus = ()
    out.layout.sliders = ()
    return out


def style_graph_figure(fig: go.Figure, look: Look, height: int | None = None) -> go.Figure:
    """Presentation sizes for a node-link figure: marker size of node traces, fonts, height."""
    fig.update_layout(font=dict(size=look.figure_font), height=height or look.figure_height,
                      margin=dict(l=10, r=10, t=50, b=10))
    def grow(tr):
        mode = getattr(tr, "mode", None) or ""
        if "markers" in mode:
            tr.marker.size = look.node_size
        if "text" in mode:
            tr.textfont.size = look.figure_font if "markers" in mode else look.figure_font - 2
    for tr in fig.data:
        grow(tr)
    for fr in fig.frames or ():
        for tr in fr.data:
            grow(tr)
    return fig


def line_plot(series: dict[str, tuple[Sequence[float], Sequence[float]]], *, title: str, x_title: str,
              y_title: str, look: Look, log_x: bool = False, log_y: bool = False,
              markers: Iterable[tuple[str, float, float, str]] = ()) -> go.Figure:
    """Lines ``name -> (xs, ys)``; ``markers`` adds labelled stars ``(name, x, y, text)``."""
    fig = go.Figure()
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines+markers", name=name,
                                 line=dict(width=look.edge_width + 1)))
    for name, x, y, text in markers:
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers+text", name=name, text=[text],
                                 textposition="top center",
                                 marker=dict(symbol="star", size=look.node_size * 0.6, line=dict(width=1))))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, font=dict(size=look.figure_font),
                      height=int(look.figure_height * 0.8), legend=dict(orientation="h", y=-0.2))
    if log_x:
        fig.update_xaxes(type="log")
    if log_y:
        fig.update_yaxes(type="log")
    return fig
