"""A stepped page's walk-through as one self-contained HTML file: every step's view, the controls, no network.

The steps are the class relay's views (:class:`explorer.classroom.views.ClassView`): the page builds the view a
following student's browser draws, and this module writes the same views into a file. A follower's browser
draws a view's graphs with Plotly; a file must open without a network and stay small enough to email, so each
graph figure (the graph renderer's still frame, :func:`explorer.kit.figures.still_graph`) is drawn here as the
SVG Plotly would draw: the same traces, coordinates, colours and texts, without Plotly's 3 MB of script; a
tensor's heatmap (Network explorer) likewise, one rectangle per cell in the figure's colour scale.

Size: a step repeats most of the step before it (the same edges, boxes, code), so the file keeps each distinct
piece of HTML once and every step as a list of piece numbers; the slide example is about 0.13 MB. A file over
:data:`MAX_EXPORT_BYTES` is refused (:class:`ExportTooBig`) rather than written.

Text is escaped: a figure's texts are HTML as Plotly reads it (escaped by the renderer, ``<br>`` between
lines) and are unescaped and escaped again for SVG; the views' HTML is already escaped by the page kit
(:func:`~explorer.classroom.views.markdown_html`, :func:`~explorer.kit.code_panel.to_html`); the title and
the program are user text and escaped here.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from typing import Any

from explorer.classroom.views import ClassView
from explorer.explain.numbers import megabytes, num

MAX_EXPORT_BYTES = 8 << 20   # a file nobody would email; refused before it is written out
MAX_EXPORT_STEPS = 600       # more steps than anyone steps through; the page offers no download beyond this


class ExportTooBig(ValueError):
    """The walk-through would be larger than :data:`MAX_EXPORT_BYTES`."""


# --- a graph figure as SVG -------------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]*>")
_BR = re.compile(r"<br\s*/?>", re.I)


def _lines(plotly_text: Any) -> list[str]:
    """A Plotly text (escaped HTML with ``<br>`` line breaks, maybe ``<span>`` styling) as plain lines."""
    return [html.unescape(_TAG.sub("", part)) for part in _BR.split(str(plotly_text or ""))]


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if v == v else "0"


def _dash(dash: str | None, width: float) -> str:
    # Plotly's dash lengths: proportional to the line width, at least 3 px
    unit = max(width, 3.0)
    if dash == "dot":
        return f' stroke-dasharray="{_n(unit)},{_n(unit)}"'
    if dash == "dash":
        return f' stroke-dasharray="{_n(3 * unit)},{_n(3 * unit)}"'
    return ""


class _Axes:
    """Figure coordinates to SVG pixels, as Plotly maps them: equal scales (``scaleanchor``), y up."""

    def __init__(self, layout: dict):
        m = layout.get("margin") or {}
        self.left, self.top = float(m.get("l", 80)), float(m.get("t", 100))
        right, bottom = float(m.get("r", 80)), float(m.get("b", 80))
        (self.x0, x1), (self.y0, self.y1) = layout["xaxis"]["range"], layout["yaxis"]["range"]
        height = float(layout.get("height") or 450)
        plot_h = max(1.0, height - self.top - bottom)
        self.k = plot_h / max(1e-9, self.y1 - self.y0)
        self.plot_w, self.plot_h = (x1 - self.x0) * self.k, plot_h
        self.width, self.height = self.left + self.plot_w + right, height

    def x(self, v: float) -> float:
        return self.left + (v - self.x0) * self.k

    def y(self, v: float) -> float:
        return self.top + (self.y1 - v) * self.k


def _runs(xs: list, ys: list) -> list[list[tuple[float, float]]]:
    """A trace's points split at its ``None`` gaps."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(xs, ys):
        if x is None or y is None:
            runs.append([])
        else:
            runs[-1].append((float(x), float(y)))
    return [r for r in runs if r]


def _trace_svg(tr: dict, ax: _Axes) -> str:
    mode = tr.get("mode", "")
    xs, ys = list(tr.get("x") or []), list(tr.get("y") or [])
    if "lines" in mode:
        line = tr.get("line") or {}
        width = float(line.get("width", 2))
        filled = tr.get("fill") == "toself"
        d = "".join("M" + "L".join(f"{_n(ax.x(x))} {_n(ax.y(y))}" for x, y in run) + ("Z" if filled else "")
                    for run in _runs(xs, ys))
        if not d:
            return ""
        fill = html.escape(str(tr.get("fillcolor", "none"))) if filled else "none"
        stroke = (f' stroke="{html.escape(str(line.get("color", "#444")))}" stroke-width="{_n(width)}"'
                  f'{_dash(line.get("dash"), width)}') if width > 0 else ""
        return f'<path d="{d}" fill="{fill}"{stroke} stroke-linejoin="round"/>'
    if "text" in mode:
        font = tr.get("textfont") or {}
        size = float(font.get("size", 12))
        out = []
        for x, y, t in zip(xs, ys, tr.get("text") or []):
            lines = [ln for ln in _lines(t)]
            if x is None or y is None or not any(lines):
                continue
            # middle centre: the block of lines centred on the point (Plotly's line height 1.3 em)
            first = ax.y(float(y)) - (len(lines) - 1) * 1.3 * size / 2
            spans = "".join(f'<tspan x="{_n(ax.x(float(x)))}" y="{_n(first + j * 1.3 * size)}">'
                            f"{html.escape(ln, quote=False)}</tspan>" for j, ln in enumerate(lines))
            out.append(spans)
        if not out:
            return ""
        return (f'<g font-size="{_n(size)}" fill="{html.escape(str(font.get("color", "#111827")))}" '
                f'text-anchor="middle" dominant-baseline="central"><text>'
                + "</text><text>".join(out) + "</text></g>")
    if "markers" in mode and tr.get("hovertext"):
        # the hover boxes (invisible squares): a tooltip per node, as Plotly's hover shows it
        sizes = (tr.get("marker") or {}).get("size", 10)
        sizes = sizes if isinstance(sizes, list) else [sizes] * len(xs)
        out = []
        for x, y, s, t in zip(xs, ys, sizes, tr["hovertext"]):
            if x is None or y is None:
                continue
            h = float(s)
            out.append(f'<rect x="{_n(ax.x(float(x)) - h / 2)}" y="{_n(ax.y(float(y)) - h / 2)}" width="{_n(h)}" '
                       f'height="{_n(h)}" fill="transparent"><title>'
                       f'{html.escape(chr(10).join(_lines(t)), quote=False)}</title></rect>')
        return "<g>" + "".join(out) + "</g>"
    return ""


def _colours(colorscale: Any, ts: list[float]) -> list[str]:
    from plotly.colors import get_colorscale, sample_colorscale
    scale = get_colorscale(colorscale) if isinstance(colorscale, str) else [list(c) for c in colorscale]
    return sample_colorscale(scale, [min(1.0, max(0.0, t)) for t in ts]) if ts else []


def heatmap_svg(fig: dict, test_id: str = "heatmap", width: float = 300.0) -> list[str]:
    """A one-trace heatmap figure (``z``, ``colorscale``, ``zmin``/``zmax``, cell ``text``, a title; rows top
    down as ``autorange="reversed"`` draws them) as SVG pieces ``width`` px wide, as :func:`figure_svg`."""
    import numpy as np

    layout = fig.get("layout") or {}
    tr = (fig.get("data") or [{}])[0]
    z = np.asarray(tr.get("z"), dtype=float)
    z = z.reshape(1, -1) if z.ndim < 2 else z
    rows, cols = z.shape
    lo, hi = float(tr.get("zmin", np.nanmin(z))), float(tr.get("zmax", np.nanmax(z)))
    title = (layout.get("title") or {}).get("text", "") if isinstance(layout.get("title"), dict) else ""
    font = float((layout.get("font") or {}).get("size", 12))
    top = 1.6 * font + 6
    height = max(float(layout.get("height") or 220), top + 8 * rows)
    cw, ch = width / cols, (height - top - 4) / rows
    text = tr.get("text")
    tsize = float((tr.get("textfont") or {}).get("size", max(font - 2, 9)))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" data-testid="{html.escape(test_id)}" class="adx-heatmap" '
           f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" font-family="Arial, sans-serif">'
           f'<text x="0" y="{_n(1.1 * font)}" font-size="{_n(font)}" fill="#111827">'
           f"{html.escape(' '.join(_lines(title)), quote=False)}</text>"]
    cells = []
    fills = _colours(tr.get("colorscale", "RdBu"), [(v - lo) / (hi - lo) if hi > lo and v == v else 0.5
                                                    for v in z.reshape(-1).tolist()])
    for i in range(rows):
        for j in range(cols):
            v = z[i, j]
            fill = fills[i * cols + j]
            cells.append(f'<rect x="{_n(j * cw)}" y="{_n(top + i * ch)}" width="{_n(cw + 0.3)}" height="{_n(ch + 0.3)}" '
                         f'fill="{fill}"><title>[{i}, {j}] {num(v, 6)}</title></rect>')
            if text is not None:   # dark text on a light cell, white on a dark one (as Plotly picks it)
                rgb = [float(c) for c in re.findall(r"[\d.]+", fill)[:3]] or [255.0, 255.0, 255.0]
                ink = "#111827" if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 128 else "#ffffff"
                cells.append(f'<text x="{_n((j + 0.5) * cw)}" y="{_n(top + (i + 0.5) * ch)}" font-size="{_n(tsize)}" '
                             f'text-anchor="middle" dominant-baseline="central" fill="{ink}">'
                             f"{html.escape(str(text[i][j]), quote=False)}</text>")
    out.append("".join(cells))
    out.append("</svg>")
    return out


def figure_svg(fig: dict, test_id: str = "graph", memo: dict | None = None) -> list[str]:
    """A graph figure (a still frame of the graph renderer: ``data`` and ``layout``, no frames) as SVG pieces:
    the ``<svg>`` tag, one piece per trace in Plotly's drawing order, the annotations (a layout note) and
    the closing tag. Joined, they are one SVG element; apart, pieces that several steps share are kept once.

    Texts are unescaped from Plotly's HTML and escaped for SVG; data outside the axes' ranges is clipped
    (``cliponaxis``), as a drawing shown through a window is. ``memo``: traces already drawn in this walk-through
    (every step's still frame shares the figure's edges, boxes and names: drawn once, not once a step).
    """
    layout = fig.get("layout") or {}
    ax = _Axes(layout)
    clip = f"clip-{test_id}"
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" data-testid="{html.escape(test_id)}" class="adx-graph" '
            f'viewBox="0 0 {_n(ax.width)} {_n(ax.height)}" width="{_n(ax.width)}" '
            f'font-family="{html.escape(str((layout.get("font") or {}).get("family", "sans-serif")))}">'
            f'<rect width="100%" height="100%" fill="{html.escape(str(layout.get("paper_bgcolor", "#fff")))}"/>'
            f'<clipPath id="{clip}"><rect x="{_n(ax.left)}" y="{_n(ax.top)}" width="{_n(ax.plot_w)}" '
            f'height="{_n(ax.plot_h)}"/></clipPath><g clip-path="url(#{clip})">')
    pieces = [head]
    place = (ax.left, ax.top, ax.x0, ax.y1, ax.k)
    for tr in fig.get("data") or []:
        if memo is None:
            svg = _trace_svg(tr, ax)
        else:
            # keyed by the trace object, which the memo keeps alive (so its id is never reused by another)
            kept = memo.get((id(tr), place))
            if kept is None or kept[0] is not tr:
                kept = memo[(id(tr), place)] = (tr, _trace_svg(tr, ax))
            svg = kept[1]
        if svg:
            pieces.append(svg)
    pieces.append("</g>")
    for a in layout.get("annotations") or []:
        if a.get("xref") == "paper" and a.get("yref") == "paper":
            size = float((a.get("font") or {}).get("size", 15))
            lines = _lines(a.get("text"))
            base = ax.top - float(a.get("yshift", 0)) - (len(lines) - 1) * 1.3 * size
            pieces.append(f'<text font-size="{_n(size)}" fill="#92400e">' + "".join(
                f'<tspan x="{_n(ax.left)}" y="{_n(base + j * 1.3 * size)}">{html.escape(ln, quote=False)}</tspan>'
                for j, ln in enumerate(lines)) + "</text>")
    pieces.append("</svg>")
    return pieces


# --- a view as HTML pieces -------------------------------------------------------------------------------

def _block_pieces(block: dict, plots: list[int], memo: dict | None) -> list[str]:
    kind = block.get("kind")
    if kind == "html":
        return [block["html"]]
    if kind == "plot":
        fig = block["figure"]
        if any((tr or {}).get("type") == "heatmap" for tr in fig.get("data") or []):
            plots[1] += 1
            return ['<div class="adx-plot">', *heatmap_svg(fig, f"heatmap-{plots[1]}"), "</div>"]
        plots[0] += 1
        return ['<div class="adx-plot">', *figure_svg(fig, f"graph-{plots[0]}", memo), "</div>"]
    if kind in ("row", "column"):
        widths = block.get("widths") or []
        out = ['<div class="adx-row">' if kind == "row" else "<div>"]
        for i, b in enumerate(block.get("blocks") or []):
            flex = float(widths[i]) if i < len(widths) else 1.0
            out.append(f'<div style="flex:{_n(flex)};min-width:0">' if kind == "row" else "<div>")
            out += _block_pieces(b, plots, memo)
            out.append("</div>")
        out.append("</div>")
        return out
    return []


def view_pieces(view: ClassView, memo: dict | None = None) -> list[str]:
    """One step's view (header, then its blocks in the page's order) as HTML pieces; joined, the step's HTML.
    ``memo``: as :func:`figure_svg`'s, shared by the steps of one walk-through."""
    plots = [0, 0]   # graphs, heatmaps: numbered in the page's order
    out = ['<div class="adx-header">', view.header_html, "</div>"]
    for b in view.blocks:
        out += _block_pieces(b, plots, memo)
    return out


# --- the file ---------------------------------------------------------------------------------------------

# the stepper's own rules: every selector under an adx- class, so that a notebook page that shows the widget keeps
# its own look; the file adds the page's (body, title)
STEPPER_CSS = """
.adx-source{white-space:pre-wrap;background:#f3f4f6;padding:6px 10px;border-radius:4px;font-family:monospace;
margin:.4rem 0}
.adx-controls{position:sticky;top:0;background:#fff;padding:8px 0;display:flex;gap:8px;align-items:center;
flex-wrap:wrap;z-index:2;border-bottom:1px solid #e5e7eb}
.adx-controls button{font-size:1rem;padding:4px 12px}.adx-controls input[type=range]{flex:1;min-width:160px}
.adx-row{display:flex;gap:1rem;align-items:flex-start;flex-wrap:wrap}.adx-plot svg{max-width:100%;height:auto}
.adx-table{border-collapse:collapse;margin:.4rem 0}.adx-table td,.adx-table th{border:1px solid #d1d5db;
padding:2px 8px;text-align:left}.adx-header h4{margin:.6rem 0 .2rem}.adx-caption{color:#4b5563;font-size:.9rem}
.adx-warning{background:#fef3c7;color:#78350f;padding:6px 10px;border-radius:4px}
.adx-error{background:#fee2e2;color:#7f1d1d;padding:6px 10px;border-radius:4px}
.adx-stepper{font-family:Arial,'Liberation Sans',Helvetica,sans-serif;color:#111827}
.adx-stepper:focus{outline:2px solid #93c5fd;outline-offset:2px}
"""
_PAGE_CSS = """
body{font-family:Arial,'Liberation Sans',Helvetica,sans-serif;color:#111827;margin:0 auto;max-width:1400px;
padding:12px 16px}
h1{font-size:1.4rem;margin:.2rem 0}
"""

# The controls and the step, found by class under the element the stepper is given (a file's body, or one
# notebook widget of several on a page)
STEPPER_CONTROLS = (
    '<div class="adx-controls"><button class="adx-back" title="Back (left arrow, PageUp)">◀ Back</button>'
    '<button class="adx-play" title="Play or pause (P)">▶ Play</button>'
    '<button class="adx-next" title="Step (right arrow, PageDown)">Step ▶</button>'
    '<input class="adx-slider" type="range" min="1" value="1" aria-label="step">'
    '<span class="adx-count" data-testid="step-count"></span></div>'
    '<div class="adx-step" data-testid="step"></div>')

# One stepper for both front ends, the file and the notebook widget (explorer/notebook.py): adxStepper(root, data,
# keys, onStep) draws step k from data (pieces, steps, ms) under root and wires Step, Back, Play and the slider; keys
# (the document in a file, the focused widget in a notebook): right arrow / PageDown one step on, left arrow / PageUp
# one back, Home and End the first and last step, P play or pause. onStep(k) is told each step shown (0-based).
STEPPER_JS = """
function adxStepper(root,data,keys,onStep){"use strict";
const q=c=>root.querySelector("."+c);
const n=data.steps.length, out=q("adx-step"), slider=q("adx-slider"), label=q("adx-count"), play=q("adx-play");
let k=0, timer=null;
function show(i){k=Math.max(0,Math.min(n-1,i));out.innerHTML=data.steps[k].map(j=>data.pieces[j]).join("");
 slider.value=String(k+1);label.textContent="Step "+(k+1)+" of "+n;if(onStep)onStep(k);}
function stop(){if(timer){clearInterval(timer);timer=null;}play.textContent="\\u25B6 Play";}
function toggle(){if(timer){stop();return;}if(k>=n-1)show(0);play.textContent="\\u275A\\u275A Pause";
 timer=setInterval(()=>{if(k>=n-1){stop();return;}show(k+1);},data.ms);}
q("adx-next").onclick=()=>{stop();show(k+1);};
q("adx-back").onclick=()=>{stop();show(k-1);};
play.onclick=toggle;slider.max=String(n);slider.oninput=()=>{stop();show(parseInt(slider.value,10)-1);};
function onKey(e){if(e.altKey||e.ctrlKey||e.metaKey)return;
 const move={ArrowRight:1,PageDown:1,ArrowLeft:-1,PageUp:-1}[e.key];
 if(move){e.preventDefault();e.stopPropagation();stop();show(k+move);}
 else if(e.key==="Home"){e.preventDefault();e.stopPropagation();stop();show(0);}
 else if(e.key==="End"){e.preventDefault();e.stopPropagation();stop();show(n-1);}
 else if(e.key==="p"||e.key==="P"){e.stopPropagation();toggle();}}
keys.addEventListener("keydown",onKey);
return {show:show,step:()=>k,close:()=>{stop();keys.removeEventListener("keydown",onKey);}};
}
"""

# The file: the step is kept in the address (#step=k) to link to it, where the browser lets a file rewrite its own
# address (else it is simply not kept).
_FILE_SCRIPT = STEPPER_JS + """
(function(){"use strict";
const data=JSON.parse(document.getElementById("adx-data").textContent);
const s=adxStepper(document.body,data,document,k=>{document.body.dataset.step=String(k+1);
 try{history.replaceState(null,"","#step="+(k+1));}catch(e){}});
const m=/step=(\\d+)/.exec(location.hash);s.show(m?parseInt(m[1],10)-1:0);
})();
"""


def script_json(obj: Any) -> str:
    """``obj`` as JSON that can stand inside a ``<script>`` element: no ``</`` (it would end the element) and no
    ``<!--`` (a script-data escape); both stay valid JSON written this way."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/").replace("<!", "<\\u0021")


def walkthrough_data(views: Sequence[ClassView], step_ms: int = 1200, max_bytes: int = MAX_EXPORT_BYTES) -> dict:
    """Every step's view as the stepper's data (:data:`STEPPER_JS`): ``{"pieces": [html, ...], "steps": [[piece
    number, ...] per step], "ms": Play's pace}``; a step's HTML is its pieces joined. A piece that several steps
    show is kept once.

    Raises:
        ExportTooBig: the pieces would be larger than ``max_bytes``.
        ValueError: no views.
    """
    if not views:
        raise ValueError("a walk-through needs at least one step")
    index: dict[str, int] = {}
    pieces: list[str] = []
    steps: list[list[int]] = []
    size = 0
    memo: dict = {}
    for view in views:
        ids = []
        for p in view_pieces(view, memo):
            if p not in index:
                index[p] = len(pieces)
                pieces.append(p)
                size += len(p.encode())
                if size > max_bytes:
                    raise ExportTooBig(f"this walk-through would be over {megabytes(max_bytes, 0)} MB "
                                       f"({len(views)} steps); a smaller program exports")
            ids.append(index[p])
        steps.append(ids)
    return {"pieces": pieces, "steps": steps, "ms": int(step_ms)}


def step_html(data: dict, k: int) -> str:
    """Step ``k``'s (0-based) HTML from :func:`walkthrough_data`'s data, as the stepper puts it together."""
    return "".join(data["pieces"][j] for j in data["steps"][k])


class _Visible(HTMLParser):
    BLOCKS = {"div", "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "td", "th", "br", "table"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.parts.append(" ")
        if tag in ("style", "script", "svg"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.parts.append(" ")
        if tag in ("style", "script", "svg") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def visible_text(step: str) -> str:
    """The text a reader sees of a step's HTML outside its pictures (the header, captions, tables, code), on one
    line with single spaces."""
    p = _Visible()
    p.feed(step)
    p.close()
    return " ".join("".join(p.parts).split())


def walkthrough_html(title: str, views: Sequence[ClassView], source: str = "", step_ms: int = 1200,
                     max_bytes: int = MAX_EXPORT_BYTES) -> str:
    """One HTML file holding every step's view and the controls to step through them, opened without a network.

    Args:
        title: the page's name and what it shows (user text allowed: escaped).
        views: one :class:`~explorer.classroom.views.ClassView` per step, in order (the page's own views).
        source: the program and inputs as typed, shown above the steps (user text: escaped).
        step_ms: Play's pace.
        max_bytes: the largest file written.

    Returns:
        The file's text (UTF-8).

    Raises:
        ExportTooBig: the file would be larger than ``max_bytes``.
        ValueError: no views.
    """
    return data_html(title, walkthrough_data(views, step_ms, max_bytes), source, max_bytes)


def data_html(title: str, data: dict, source: str = "", max_bytes: int = MAX_EXPORT_BYTES) -> str:
    """The file of :func:`walkthrough_html` from the stepper's data (:func:`walkthrough_data`): what a notebook
    widget saves is the file the page's button downloads.

    Raises:
        ExportTooBig: the file would be larger than ``max_bytes``.
    """
    name = html.escape(title)
    text = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # nothing is fetched: no network needed, and a saved file can reach none
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{name}</title><style>{_PAGE_CSS}{STEPPER_CSS}</style></head><body class=\"adx-stepper\">"
        f"<h1>{name}</h1>" + (f'<div class="adx-source" data-testid="source">{html.escape(source)}</div>'
                              if source else "") + STEPPER_CONTROLS +
        f'<script type="application/json" id="adx-data">{script_json(data)}</script>'
        f"<script>{_FILE_SCRIPT}</script></body></html>")
    if len(text.encode()) > max_bytes:
        raise ExportTooBig(f"this walk-through would be {megabytes(len(text.encode()))} MB "
                           f"(at most {megabytes(max_bytes, 0)} MB)")
    return text


def file_or_note(build: Callable[[], str]) -> str:
    """``build()``'s walk-through, or, when it is too big (:class:`ExportTooBig`), a small HTML file that says so:
    a download button runs ``build`` when clicked, after the page has drawn, and must hand over a file."""
    try:
        return build()
    except ExportTooBig as e:
        return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>No walk-through</title></head>'
                f"<body><p>No walk-through was written: {html.escape(str(e))}.</p></body></html>")
