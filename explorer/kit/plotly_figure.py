"""A Plotly figure with frames (play / pause / slider in the browser) from a FrameSet.

Plotly only, no Streamlit. ``figure_dict`` builds the plain figure dict (fast: no validation);
``build_figure`` wraps it in a ``plotly.graph_objects.Figure`` without re-validating every frame.
Frames carry only what changes (node colours/text and the highlighted edges); node positions
are set once, so nodes never move during the animation.
"""
from __future__ import annotations

import plotly.graph_objects as go

from .formatting import hover_escape
from .frames import Frame, FrameSet
from engine.explain.graph import Graph

STATE_COLOR = {"idle": "#e5e7eb", "computed": "#bfdbfe", "waiting": "#fecaca", "complete": "#86efac",
               "active": "#facc15", "leaf": "#22c55e", "lost": "#ef4444"}


def _edge_xy(edges, positions):
    xs, ys = [], []
    for s, d in edges:
        if s in positions and d in positions:
            (x0, y0), (x1, y1) = positions[s], positions[d]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
    return xs, ys


def figure_dict(frameset: FrameSet, graph: Graph, positions: dict[int, tuple[float, float]],
                height: int = 480, duration_ms: int = 700) -> dict:
    """The figure as a plain dict: traces 0 edges, 1 highlighted edges, 2 nodes, 3 node names."""
    ids = frameset.node_ids
    xs = [positions[i][0] for i in ids]
    ys = [positions[i][1] for i in ids]
    ex, ey = _edge_xy([(e.src, e.dst) for e in graph.edges], positions)
    # the statement's source, comments included: Plotly reads HTML in hover text, so escape it
    hover = [hover_escape(graph.node(i).expr or graph.node(i).name) for i in ids]

    def hot(f: Frame) -> dict:
        hx, hy = _edge_xy(f.active_edges, positions)
        return {"type": "scatter", "x": hx, "y": hy, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
                "line": {"color": "#ea580c", "width": 4}}

    def nodes(f: Frame) -> dict:
        active = set(f.active_nodes)
        return {"type": "scatter", "text": [t.replace("\n", "<br>") for t in f.node_text],
                "marker": {"size": 26, "color": [STATE_COLOR.get(s, "#ffffff") for s in f.node_state],
                           "line": {"width": [3 if i in active else 1 for i in ids], "color": "#111827"}}}

    first = frameset.frames[0]
    base_nodes = nodes(first)
    base_nodes.update({"x": xs, "y": ys, "mode": "markers+text", "textposition": "bottom center",
                       "hovertext": hover, "hoverinfo": "text", "showlegend": False, "cliponaxis": False})
    data = [
        {"type": "scatter", "x": ex, "y": ey, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
         "line": {"color": "#9ca3af", "width": 1.5}},
        hot(first), base_nodes,
        {"type": "scatter", "x": xs, "y": ys, "mode": "text", "text": [graph.node(i).name for i in ids],
         "hoverinfo": "skip", "showlegend": False, "textfont": {"size": 10}},
    ]
    frames = [{"name": str(f.index), "traces": [1, 2], "data": [hot(f), nodes(f)],
               "layout": {"title": {"text": f.caption[:160], "x": 0.01, "xanchor": "left", "font": {"size": 13}}}}
              for f in frameset.frames]
    steps = [{"method": "animate", "label": str(f.index),
              "args": [[str(f.index)], {"mode": "immediate", "frame": {"duration": 0, "redraw": True},
                                        "transition": {"duration": 0}}]} for f in frameset.frames]
    # room below the lowest node for its two-line label, and beside the outer nodes
    x_range = [min(xs, default=0) - 0.5, max(xs, default=0) + 0.5]
    y_range = [min(ys, default=0) - 0.8, max(ys, default=0) + 0.4]
    layout = {
        "height": height, "title": {"text": first.caption[:160], "x": 0.01, "xanchor": "left", "font": {"size": 13}},
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
        "xaxis": {"visible": False, "range": x_range}, "yaxis": {"visible": False, "range": y_range},
        "plot_bgcolor": "white",
        "updatemenus": [{"type": "buttons", "showactive": False, "x": 0, "y": -0.02, "xanchor": "left",
                         "yanchor": "top", "buttons": [
                             {"label": "Play", "method": "animate",
                              "args": [None, {"frame": {"duration": duration_ms, "redraw": True},
                                              "fromcurrent": True, "transition": {"duration": 0}}]},
                             {"label": "Pause", "method": "animate",
                              "args": [[None], {"mode": "immediate", "frame": {"duration": 0, "redraw": False}}]}]}],
        "sliders": [{"active": 0, "steps": steps, "x": 0.12, "len": 0.88, "currentvalue": {"prefix": "step "}}],
    }
    return {"data": data, "layout": layout, "frames": frames}


def build_figure(frameset: FrameSet, graph: Graph, positions: dict[int, tuple[float, float]],
                 height: int = 480, duration_ms: int = 700) -> go.Figure:
    """``figure_dict`` as a ``go.Figure`` (built without per-frame validation, which is slow)."""
    return go.Figure(figure_dict(frameset, graph, positions, height, duration_ms), _validate=False)
