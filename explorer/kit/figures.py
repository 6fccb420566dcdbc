"""Plotly helpers shared by the pages: show a given frame, apply presentation sizes, simple plots.

The animated graph itself is built by :func:`explorer.kit.plotly_figure.figure_dict`; here we only
choose which frame is shown first and how large things are drawn.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import plotly.graph_objects as go

from .plotly_figure import LINE_H
from .presentation import Look


MAX_BROWSER_FRAMES = 120  # frames sent per rerun: a 500-node graph has ~1000, ~20 MB of JSON


def frame_window(n_frames: int, step: int, max_frames: int = MAX_BROWSER_FRAMES) -> range:
    """The frames sent to the browser: ``max_frames`` of them starting at ``step`` (earlier near the end)."""
    if n_frames <= max_frames:
        return range(n_frames)
    start = min(max(step, 0), n_frames - max_frames)
    return range(start, start + max_frames)


def at_frame(fig: dict, step: int, max_frames: int = MAX_BROWSER_FRAMES, duration_ms: int | None = None) -> dict:
    """Figure dict whose visible data (and slider position) is frame ``step``; frames kept for Play.

    Works on the plain dict from ``explorer.kit.plotly_figure.figure_dict`` and copies only what it
    changes, so the cached figure is never modified. A long animation is cut to a window of
    ``max_frames`` frames from ``step`` on (Play and the slider cover that window; the page's step
    buttons move the window), so a rerun never ships megabytes of frames. ``duration_ms`` sets Play's
    time per frame (a speed control).
    """
    all_frames = fig.get("frames") or []
    out = dict(fig)
    if not all_frames:
        return out
    step = min(max(int(step), 0), len(all_frames) - 1)
    window = frame_window(len(all_frames), step, max_frames)
    frames = [all_frames[i] for i in window]
    out["frames"] = frames
    fr = all_frames[step]
    data = list(fig["data"])
    idxs = fr.get("traces") or list(range(len(fr["data"])))
    for i, fdata in zip(idxs, fr["data"]):
        if i < len(data):
            data[i] = {**data[i], **fdata}
    out["data"] = data
    lay = dict(fig.get("layout", {}))
    lay.update(fr.get("layout") or {})
    local = step - window.start
    if lay.get("sliders"):
        slider = lay["sliders"][0]
        steps = slider.get("steps") or []
        if len(steps) == len(all_frames):
            steps = [steps[i] for i in window]
        lay["sliders"] = [{**slider, "steps": steps, "active": local}, *lay["sliders"][1:]]
    # Play continues from the page's step (Plotly's own "current frame" would restart at 0)
    rest = [f["name"] for f in frames[local + 1:]] or [f["name"] for f in frames]
    menus = []
    for menu in lay.get("updatemenus") or []:
        buttons = []
        for b in menu.get("buttons", []):
            args = b.get("args") or []
            if b.get("method") == "animate" and args and args[0] is None:
                opts = dict(args[1]) if len(args) > 1 else {}
                if duration_ms is not None:
                    opts["frame"] = {**opts.get("frame", {}), "duration": int(duration_ms)}
                b = {**b, "args": [rest, opts, *args[2:]]}
            buttons.append(b)
        menus.append({**menu, "buttons": buttons})
    lay["updatemenus"] = menus
    out["layout"] = lay
    return out


def static_frame(fig: dict, step: int) -> dict:
    """Frame ``step`` as a still figure: no frames, no play button, no slider (for side-by-side views)."""
    out = at_frame(fig, step, max_frames=1)   # its frames are dropped: read only the one shown (packed frames
    out["frames"] = []                         # are unpacked when read)
    out["layout"] = {**out["layout"], "updatemenus": [], "sliders": []}
    return out


class PrebuiltFigure(go.Figure):
    """A finished figure dict that ``st.plotly_chart`` serialises as it is.

    ``st.plotly_chart`` turns a dict into ``go.Figure(**dict)`` (validating every frame) and a
    ``go.Figure`` into ``fig.to_dict()``. Building the Figure objects of a graph with one Plotly
    frame per step takes about a second for 50 nodes, far longer than a rerun may, so this
    subclass skips construction and hands back the dict (built by the engine's explain layer and
    the helpers here, which only produce valid Plotly attributes).
    """

    def __init__(self, spec: dict):  # noqa: D107 - deliberately no BaseFigure.__init__
        object.__setattr__(self, "_prebuilt_spec", spec)

    def to_dict(self) -> dict:
        return self._prebuilt_spec

    def to_plotly_json(self) -> dict:
        return self._prebuilt_spec

    @property
    def spec(self) -> dict:
        return self._prebuilt_spec


def graph_scale(look: Look) -> float:
    """How much larger than normal a graph is drawn in ``look`` (fonts, boxes, lines, height)."""
    from .presentation import NORMAL
    return look.figure_font / NORMAL.figure_font if look.presenting else 1.0


def _grow_renderer_figure(fig: dict, k: float) -> dict:
    """Scale a figure of :mod:`explorer.kit.plotly_figure` by ``k``: every font, line width, marker and
    the height, so boxes and texts keep agreeing (the axis ranges stay, so one unit = ``scale * k`` px)."""
    def grow(tr: dict) -> dict:
        tr = dict(tr)
        if "textfont" in tr:
            tr["textfont"] = {**tr["textfont"], "size": round(tr["textfont"]["size"] * k, 2)}
        if "line" in tr and "width" in tr["line"]:
            tr["line"] = {**tr["line"], "width": round(tr["line"]["width"] * k, 2)}
        if "marker" in tr and "size" in tr["marker"]:
            size = tr["marker"]["size"]
            tr["marker"] = {**tr["marker"], "size": [round(v * k, 1) for v in size] if isinstance(size, list)
                            else size * k}
        return tr

    def font(obj: dict | None) -> dict:
        obj = dict(obj or {})
        if "font" in obj:
            obj["font"] = {**obj["font"], "size": round(obj["font"].get("size", 14) * k, 1)}
        if "pad" in obj and isinstance(obj["pad"], dict):
            obj["pad"] = {side: int(v * k) for side, v in obj["pad"].items()}
        if "yshift" in obj:
            obj["yshift"] = obj["yshift"] * k
        return obj

    out = dict(fig)
    out["data"] = [grow(tr) for tr in fig["data"]]
    def frame_layout(fl: dict | None) -> dict:
        fl = dict(fl or {})
        if "title" in fl:
            fl["title"] = font(fl["title"])
        if "annotations" in fl:
            fl["annotations"] = [font(a) for a in fl["annotations"]]
        return fl

    out["frames"] = [{**f, "data": [grow(tr) for tr in f["data"]], "layout": frame_layout(f.get("layout"))}
                     for f in fig.get("frames") or []]
    lay = dict(fig["layout"])
    meta = dict(lay.get("meta") or {})
    meta["scale"] = meta.get("scale", 1.0) * k
    meta["design_width"] = int(meta.get("design_width", 1200) * k)
    for key in ("font", "edge_font", "title_font"):
        if key in meta:
            meta[f"{key}_px"] = meta[key] * meta["scale"] if key != "title_font" else meta[key] * k
    lay["meta"] = meta
    if "title" in lay:
        lay["title"] = font(lay["title"])
    lay["font"] = {**lay.get("font", {}), "size": round(lay.get("font", {}).get("size", 14) * k, 1)}
    m = lay.get("margin", {})
    lay["margin"] = {**m, **{side: int(m.get(side, 0) * k) for side in ("t", "b")}}
    lay["height"] = int(lay["height"] * k)
    lay["sliders"] = [font({**sl, "currentvalue": font(sl.get("currentvalue"))}) for sl in lay.get("sliders") or []]
    lay["updatemenus"] = [font(um) for um in lay.get("updatemenus") or []]
    lay["annotations"] = [font(a) for a in lay.get("annotations") or []]
    out["layout"] = lay
    return out


def graph_text_sizes(fig: dict) -> list[float]:
    """Every text size a figure of the graph renderer draws (its traces' ``textfont``), in px."""
    out = []
    for tr in fig.get("data") or []:
        size = (tr.get("textfont") or {}).get("size")
        out += [float(v) for v in (size if isinstance(size, list) else [size]) if isinstance(v, (int, float))]
    return out


def floor_growth(look: Look, floor_px: float) -> float:
    """How much larger than :func:`graph_scale` a graph must be drawn for its smallest text (an edge label, drawn
    at ``EDGE_FONT`` px at the renderer's scale 1) to reach ``floor_px``: 1.0 when it already does. A page lays
    its graph out this much narrower (and lower) and asks :func:`style_graph_figure` for ``floor_px``, so that the
    grown drawing still fits its column."""
    from .plotly_figure import EDGE_FONT, FONT
    return max(1.0, floor_px / (min(FONT, EDGE_FONT) * graph_scale(look)))


def tight_graph(fig: PrebuiltFigure, margin_px: int = 4, range_trim: float = 7) -> PrebuiltFigure:
    """A still graph of the renderer (after :func:`style_graph_figure`) with ``margin_px`` above and below its drawing
    instead of the renderer's margins, and ``range_trim`` units less room around its boxes (the drawing's scale
    stays as it was): a projector page that stacks graphs, captions and code on one screen."""
    lay = dict(fig.spec["layout"])
    if "height" not in lay:
        return fig
    m = dict(lay.get("margin") or {})
    cut = sum(max(0, int(m.get(side, 0)) - margin_px) for side in ("t", "b"))
    lay["margin"] = {**m, "t": min(m.get("t", 0), margin_px), "b": min(m.get("b", 0), margin_px)}
    meta = lay.get("meta") or {}
    y_range = (lay.get("yaxis") or {}).get("range")
    if not meta.get("window") and y_range and meta.get("scale"):   # a window's range follows the step: kept
        lay["yaxis"] = {**lay["yaxis"], "range": [y_range[0] + range_trim, y_range[1] - range_trim]}
        cut += int(2 * range_trim * meta["scale"])
    lay["height"] = lay["height"] - cut
    return PrebuiltFigure({**fig.spec, "layout": lay})


def style_graph_figure(fig: dict, look: Look, height: int | None = None,
                       floor_px: float | None = None) -> PrebuiltFigure:
    """The graph figure at ``look``'s sizes, ready for ``st.plotly_chart``.

    Figures of the graph renderer (``layout.meta.renderer == "graph"``) are scaled as a whole
    (:func:`graph_scale`); their height follows from the drawing, so ``height`` is ignored for them.
    ``floor_px`` (presentation mode, renderer figures): grown further, as a whole, until its smallest text is
    that large (a 1366 x 768 projector draws the page 0.711 times as large: 23 px there is 16 px on screen).
    """
    if (fig.get("layout", {}).get("meta") or {}).get("renderer") == "graph":
        k = graph_scale(look)
        if floor_px and look.presenting:
            smallest = min(graph_text_sizes(fig), default=0.0) * k
            if 0 < smallest < floor_px:
                k *= floor_px / smallest * 1.001
        return PrebuiltFigure(_grow_renderer_figure(fig, k) if k != 1.0 else fig)
    def grow(tr: dict) -> dict:
        mode = tr.get("mode", "")
        tr = dict(tr)
        if "marker" in tr:
            tr["marker"] = {**tr["marker"], "size": look.node_size}
        if "text" in mode or ("text" in tr and "mode" not in tr):
            size = look.figure_font if ("markers" in mode or "mode" not in tr) else look.figure_font - 2
            tr["textfont"] = {**tr.get("textfont", {}), "size": size}
        return tr

    out = dict(fig)
    out["data"] = [grow(tr) for tr in fig["data"]]
    lay = fig.get("layout", {})
    title = lay.get("title") or {}
    out["layout"] = {**lay, "font": {"size": look.figure_font},
                     "title": {**title, "font": {"size": look.figure_font + 1}},
                     "height": height or look.figure_height, "margin": {"l": 10, "r": 10, "t": 50, "b": 10}}
    return PrebuiltFigure(out)


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
    # a log axis labels its 2s and 5s in full (20, 50), not as bare digits: "100, 5, 2, 10" read as 5 > 10
    # (explicit ticks: plotly's own minorloglabels needs a newer plotly than requirements-min.txt's)
    if log_x:
        vals = log_ticks([v for tr in fig.data for v in (tr.x or ())])
        fig.update_xaxes(type="log", tickvals=vals, ticktext=[log_tick_text(v) for v in vals])
    if log_y:
        vals = log_ticks([v for tr in fig.data for v in (tr.y or ())])
        fig.update_yaxes(type="log", tickvals=vals, ticktext=[log_tick_text(v) for v in vals])
    return fig


def log_ticks(values: Iterable[float], most: int = 12) -> list[float]:
    """Tick positions for a log axis over ``values``' positive range: 1, 2 and 5 times each power of ten
    (only the powers of ten when that would make more than ``most`` ticks, every second or third of them when
    even those would), from the decade below the smallest value to the decade above the largest."""
    pos = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not pos:
        return []
    lo, hi = math.floor(math.log10(min(pos))), math.ceil(math.log10(max(pos)))
    decades = [10.0 ** k for k in range(lo, hi + 1)]
    fine = [m * d for d in decades for m in (1, 2, 5) if m * d <= 10.0 ** hi]
    if len(fine) <= most:
        return fine
    return decades[::math.ceil(len(decades) / most)]


def log_tick_text(v: float) -> str:
    """A log tick's label written whole: 20 and 50 (not 2 and 5), 0.002, 2e6 past four digits."""
    k = math.floor(math.log10(v) + 1e-9)
    if -3 <= k <= 4:
        return f"{v:.{max(0, -k)}f}"
    return f"{v / 10.0 ** k:g}e{k}"


def still_graph(fig: dict, frame: int, *, title: bool = True) -> dict:
    """Frame ``frame`` of a graph figure as a still picture for a stepped page (the page's own buttons
    step it): no Play button or slider, and the room they took below the drawing given back; without
    ``title`` (the caption stands beside or above the graph) the caption line and its room too."""
    out = static_frame(fig, frame)
    lay = dict(out["layout"])
    if not title and lay.get("annotations"):
        lay["annotations"] = [a for a in lay["annotations"] if a.get("name") != "caption"]
    if (lay.get("meta") or {}).get("renderer") == "graph":  # margins of the renderer's controls and title
        m = dict(lay.get("margin") or {})
        note = [a for a in lay.get("annotations") or [] if a.get("name") == "layout note"]
        note_px = sum((str(a.get("text", "")).count("<br>") + 1) * LINE_H * (a.get("font") or {}).get("size", 15)
                      for a in note)
        # a projector's window trimmed to whole ranks keeps the height it gave back (the figure keeps its size)
        top, bottom = (m.get("t", 0) if title else int(12 + note_px)), 12 + int(lay["meta"].get("spare_px", 0))
        if "height" in lay:
            lay["height"] = max(120, int(lay["height"] - (m.get("t", 0) - top) - (m.get("b", 0) - bottom)))
        lay["margin"] = {**m, "t": top, "b": bottom}
    if not title:
        lay["title"] = {**(lay.get("title") or {}), "text": ""}
    out["layout"] = lay
    return out


def laptop_still(fig: dict, frame: int) -> dict:
    """Frame ``frame`` of a graph figure as a laptop shows it on a stepped page (no title, the caption stands
    above): what a class's relayed view and an exported walk-through draw."""
    from .presentation import look, readable_figure
    laptop = look(False)
    return readable_figure(style_graph_figure(still_graph(fig, frame, title=False), laptop).spec, laptop)
