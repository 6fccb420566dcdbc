"""Lecturer presentation mode: larger fonts and nodes, minimal chrome, readable on a projector."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Look:
    """Sizes every page uses when it draws (figures, tables, buttons)."""
    presenting: bool
    font_px: int          # base text size of the page
    figure_font: int      # text inside Plotly figures
    node_size: int        # marker size of a graph node (px)
    edge_width: float
    figure_height: int    # px
    table_font_px: int
    button_font_px: int

    @property
    def label_chars(self) -> int:
        """How many characters a node label may use before it is shortened."""
        return 10 if self.presenting else 16


NORMAL = Look(False, font_px=16, figure_font=13, node_size=26, edge_width=1.6, figure_height=520,
              table_font_px=14, button_font_px=16)
PRESENTING = Look(True, font_px=24, figure_font=20, node_size=44, edge_width=3.0, figure_height=720,
                  table_font_px=22, button_font_px=30)


def look(presenting: bool) -> Look:
    return PRESENTING if presenting else NORMAL


MIN_PRESENT_PX = 18  # no text a class reads is smaller than this in presentation mode (at 1920 x 1080)
ROOT_PRESENT_PX = 24  # the page's root font size in presentation mode: Streamlit sizes its text in rem


def readable_figure(spec: dict, lk: Look) -> dict:
    """A Plotly figure dict whose every text is at least ``lk.figure_font`` px in presentation mode.

    Plotly draws ticks, legends, axis titles, annotations, slider and button labels from
    ``layout.font`` unless a part sets its own ``font`` / ``tickfont`` / ``textfont``; both are raised
    here (never lowered), in the layout, the traces and the frames. Outside presentation mode the
    figure is returned as it is. Only what changes is copied: the caller's dict is never modified.
    """
    if not lk.presenting:
        return spec
    if ((spec.get("layout") or {}).get("meta") or {}).get("renderer") == "graph":
        return _readable_graph(spec)
    floor = max(lk.figure_font, MIN_PRESENT_PX)
    out = dict(spec)
    layout = _lift_fonts(spec.get("layout") or {}, floor)
    layout["font"] = {**(layout.get("font") or {}), "size": max(_num((layout.get("font") or {}).get("size")), floor)}
    out["layout"] = layout
    # sizes written out, not inherited: a theme's template (Streamlit's) may set its own for ticks, legends
    # and colour bars, and those beat the layout's font
    for name, axis in list(layout.items()):
        if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            tick = max(_num((axis.get("tickfont") or {}).get("size")), floor)
            extra = {}
            if axis.get("type") == "log":  # 2s and 5s between the decades come at 3/4 of the tick size
                tick = max(tick, -(-floor * 4 // 3))
                if "dtick" not in axis:
                    extra["dtick"] = log_dtick(spec, name, tick)
            layout[name] = {**axis, "tickfont": {**(axis.get("tickfont") or {}), "size": tick},
                            "title": _sized_title(axis.get("title"), floor), **extra}
    if layout.get("title") is not None:
        layout["title"] = _sized_title(layout["title"], floor)
    layout["legend"] = {**(layout.get("legend") or {}),
                        "font": {**((layout.get("legend") or {}).get("font") or {}),
                                 "size": max(_num(((layout.get("legend") or {}).get("font") or {}).get("size")),
                                             floor)}}
    if not any(k.startswith("xaxis") for k in layout):
        layout["xaxis"] = {"tickfont": {"size": floor}}
    if not any(k.startswith("yaxis") for k in layout):
        layout["yaxis"] = {"tickfont": {"size": floor}}
    out["data"] = [_colorbar_font(_lift_fonts(tr, floor), floor) for tr in spec.get("data") or []]
    if spec.get("frames"):
        out["frames"] = [_lift_fonts(f, floor) for f in spec["frames"]]
    return out


def log_dtick(spec: dict, axis_name: str, tick_px: float, across_px: float | None = None) -> Any:
    """Plotly's ``dtick`` for a log axis whose labels must not touch at ``tick_px``: every digit between
    the decades ("D1") where a decade is tall enough for nine labels, 1, 2 and 5 ("D2") where it holds three,
    else the decades alone (1), or every k-th decade (k) where even those would touch. ``across_px``: the axis's length (default: the figure's height less its
    margins for a y axis, 800 px for an x axis, what a column of the presentation page gives)."""
    import math
    lay = spec.get("layout") or {}
    letter = axis_name[0]
    values = [v for tr in spec.get("data") or [] for v in (tr.get(letter) or [])
              if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]
    if across_px is None:
        if letter == "y":
            m = lay.get("margin") or {}
            # less the x axis's labels and title under the plot (inside the bottom margin only when it is large)
            across_px = (float(lay.get("height") or 450) - float(m.get("t", 100)) - float(m.get("b", 120))
                         - max(0.0, 2.5 * tick_px - float(m.get("b", 120))))
        else:
            across_px = 800.0
    decades = max(math.log10(max(values) / min(values)), 0.5) + 0.2 if values else 3.0
    per_decade = max(across_px, 50.0) / decades
    if per_decade >= 9 * tick_px * 1.3:
        return "D1"
    if per_decade >= 3 * tick_px * 1.6:
        return "D2"
    return max(1, math.ceil(tick_px * 1.6 / per_decade))  # every k-th decade (10⁻⁶ is taller than 10)


def _sized_title(title, floor: float) -> dict:
    """A plot or axis title (text or dict) with its font written out at least ``floor`` px (a theme's
    template sets title sizes of its own, which beat the layout's font)."""
    t = {"text": title} if isinstance(title, str) else dict(title or {})
    t["font"] = {**(t.get("font") or {}), "size": max(_num((t.get("font") or {}).get("size")), floor)}
    return t


PRESENT_DOT_PT = 14  # Graphviz text in presentation mode: 14 pt = 18.7 px at the chart's natural size
_FONTSIZE = re.compile(r'\bfontsize\s*=\s*"?([0-9]*\.?[0-9]+)"?')


def readable_dot(dot: str, lk: Look) -> str:
    """DOT text whose every ``fontsize`` is at least ``PRESENT_DOT_PT`` in presentation mode.

    Graphviz lays the boxes out around the larger text (nothing is scaled afterwards), and presentation
    mode shows the chart at its natural size. A graph without any ``fontsize`` uses Graphviz's default,
    14 pt, already. Outside presentation mode the text is returned as it is.
    """
    if not lk.presenting:
        return dot

    def lift(m: re.Match) -> str:
        return f'fontsize="{max(float(m.group(1)), PRESENT_DOT_PT):g}"'

    return _FONTSIZE.sub(lift, dot)


def _readable_graph(spec: dict) -> dict:
    """A figure of the graph renderer, whose boxes are sized for its texts: grown as a whole (fonts, boxes,
    lines, height together) until its smallest text reaches ``MIN_PRESENT_PX``, never one font alone."""
    from .figures import _grow_renderer_figure  # the renderer's own scaling (figures imports this module)

    sizes = [float(v) for tr in spec.get("data") or [] for v in _as_list((tr.get("textfont") or {}).get("size"))]
    smallest = min(sizes, default=MIN_PRESENT_PX)
    if smallest >= MIN_PRESENT_PX - 1e-9:
        return spec
    return _grow_renderer_figure(spec, MIN_PRESENT_PX / smallest * 1.001)


def _as_list(v) -> list:
    if isinstance(v, list):
        return [x for x in v if isinstance(x, (int, float))]
    return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


COLOR_SCALED = ("heatmap", "contour", "histogram2d", "histogram2dcontour", "surface")


def _colorbar_font(trace: dict, floor: float) -> dict:
    """A trace with a colour bar gets its tick size written out (a template's default would win)."""
    if trace.get("type") not in COLOR_SCALED and "colorbar" not in trace:
        return trace
    bar = dict(trace.get("colorbar") or {})
    bar["tickfont"] = {**(bar.get("tickfont") or {}), "size": max(_num((bar.get("tickfont") or {}).get("size")),
                                                                   floor)}
    return {**trace, "colorbar": bar}


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _lift_fonts(node, floor: float):
    """Copy of ``node`` with every ``size`` under a ``*font`` key raised to ``floor`` (lists element-wise)."""
    if isinstance(node, list):
        return [_lift_fonts(v, floor) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k.endswith("font") and isinstance(v, dict):
            v = dict(v)
            size = v.get("size")
            if isinstance(size, list):
                v["size"] = [max(_num(x), floor) for x in size]
            elif size is not None:
                v["size"] = max(_num(size), floor)
            out[k] = v
        elif isinstance(v, (dict, list)):
            out[k] = _lift_fonts(v, floor)
        else:
            out[k] = v
    return out


DESIGN_SCREEN = (1920, 1080)  # presentation mode is laid out for this screen (CSS px)


def fit_screen_rules(design: tuple[int, int] = DESIGN_SCREEN) -> list[str]:
    """CSS that shows the page laid out for the ``design`` screen on a smaller one, scaled as a whole.

    A projector's picture is as large at 1280 x 720 as at 1920 x 1080: what the back row reads is a
    text's share of the screen, not its CSS px. So a smaller projector gets the 1920 x 1080 page
    (the same lines, the same first screen) scaled down by ``z = min(1, width / 1920, height / 1080)``
    (0.711 at 1366 x 768, 0.667 at 1280 x 720): every text keeps its share of the screen and what
    fits the first 1080 px at 1920 x 1080 fits the first screen there too. The app's root is laid out
    ``1 / z`` times the window and drawn ``z`` times smaller (a transform, not ``zoom``: charts measure
    their containers' layout size, and Plotly measures text outside the scaled element, so every
    chart draws as it does at 1920 x 1080).
    """
    w, h = design
    z = f"min(1, calc(100vw / {w}px), calc(100vh / {h}px))"
    return [
        f'[data-testid="stApp"] {{ --fit: {z}; transform: scale(var(--fit)); transform-origin: 0 0; '
        'width: calc(100vw / var(--fit)) !important; height: calc(100vh / var(--fit)) !important; }',
        '[data-testid="stAppViewContainer"], [data-testid="stAppViewContainer"] > div, [data-testid="stMain"] '
        '{ height: calc(100vh / var(--fit)) !important; max-height: none !important; }',
        # charts size themselves to the width (and Plotly's to the height) they measure on screen: the element
        # holding one is drawn at full size (1 / z), so they measure their layout size, and the chart inside it
        # is scaled back with the page
        '[data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] '
        ':is([data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"])) '
        '{ transform: scale(calc(1 / var(--fit))); transform-origin: 0 0; pointer-events: none; }',
        '[data-testid="stPlotlyChart"] .js-plotly-plot, [data-testid="stVegaLiteChart"] > :is(svg, canvas) '
        '{ transform: scale(var(--fit)); transform-origin: 0 0; pointer-events: auto; }',
    ]


SMALL_SCREEN = (1366, 768)   # the smallest projector a lecture is given on
SMALL_SCREEN_MIN_PX = 16     # the smallest text the back row reads there, in px on that screen


def fit_factor(screen: tuple[int, int], design: tuple[int, int] = DESIGN_SCREEN) -> float:
    """How much smaller than laid out a presentation page is drawn on ``screen`` (as :func:`fit_screen_rules`)."""
    return min(1.0, screen[0] / design[0], screen[1] / design[1])


def small_screen_floor_px(screen: tuple[int, int] = SMALL_SCREEN, on_screen_px: float = SMALL_SCREEN_MIN_PX) -> int:
    """The smallest font size (px of the 1920 x 1080 layout) that is still ``on_screen_px`` once the page is
    scaled down to ``screen``: 23 px for 16 px at 1366 x 768 (scaled by 0.711)."""
    return math.ceil(on_screen_px / fit_factor(screen) - 1e-9)


def small_screen_css(floor_px: int | None = None) -> str:
    """A <style> block for a presentation page whose every text must stay readable on a 1366 x 768 projector:
    captions, widget labels, radio and select texts, code blocks and tables (19-22 px in the 1920 x 1080 layout,
    13.5-15.6 px once scaled to 1366 x 768) raised to ``floor_px`` (:func:`small_screen_floor_px` by default).
    Only for the pages that ask for it: their first screens were checked with these sizes."""
    px = floor_px or small_screen_floor_px()
    main = '[data-testid="stMain"]'
    rules = [
        f'{main} [data-testid="stCaptionContainer"], {main} [data-testid="stCaptionContainer"] p, '
        f'{main} [data-testid="stCaptionContainer"] code',
        f'{main} [data-testid="stWidgetLabel"] p, {main} [data-testid="stCheckbox"] p, '
        f'{main} label [data-testid="stMarkdownContainer"] p',
        f'{main} [data-baseweb="select"] div, {main} [role="radiogroup"] p, {main} [data-baseweb="tag"] *, {main} [data-tag] *, '
        f'{main} [data-testid="stMultiSelectTagsContainer"] :is(span, div)',
        f'{main} [data-testid="stCode"] code, {main} [data-testid="stCode"] code span, {main} pre code',
        f'{main} [data-testid="stTable"] td, {main} [data-testid="stTable"] th',
    ]
    return "<style>\n" + "\n".join(f"{r} {{ font-size: max({px}px, 1em) !important; }}" for r in rules) + "\n</style>"


def small_screen_look(lk: Look) -> Look:
    """``lk`` with its figures' and tables' text at :func:`small_screen_floor_px` in presentation mode (for the pages
    that :func:`small_screen_css` styles; a graph of the renderer keeps ``lk`` and asks for ``floor_px`` instead, as
    its drawing is scaled by ``figure_font``). Outside presentation mode ``lk`` itself."""
    if not lk.presenting:
        return lk
    from dataclasses import replace
    px = small_screen_floor_px()
    return replace(lk, figure_font=max(lk.figure_font, px), table_font_px=max(lk.table_font_px, px))


def css(lk: Look) -> str:
    """A <style> block for st.html: in presentation mode hide Streamlit's chrome and enlarge all text.

    Streamlit sizes its text in rem (captions 0.875rem, widget labels 0.875rem, small print 0.75rem), so
    presentation mode sets the root font size to ``ROOT_PRESENT_PX``: every caption, label, table, code
    block and button grows together and the smallest (0.75rem) is 18 px. Plotly and Graphviz draw in
    px and get their sizes from :class:`Look` and :func:`readable_figure`.
    """
    rules = [
        f'[data-testid="stButton"] button {{ font-size: {lk.button_font_px}px; min-height: {lk.button_font_px * 2}px; }}',
        f'[data-testid="stButton"] button p {{ font-size: {lk.button_font_px}px; }}',
        # Streamlit sets one small CSS font size on everything inside a Graphviz chart, which overrides
        # the sizes Graphviz laid the boxes out for; give the SVG's own font-size attributes back
        '[data-testid="stGraphVizChart"] svg text { font-size: revert-layer !important; }',
    ]
    if lk.presenting:
        rules += [
            f'html {{ font-size: {ROOT_PRESENT_PX}px !important; }}',
            f'[data-testid="stAppViewContainer"] {{ font-size: {lk.font_px}px; }}',
            f'[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li '
            f'{{ font-size: {lk.font_px}px; line-height: 1.35; }}',
            f'textarea, input {{ font-size: {lk.font_px}px !important; }}',
            # captions and metrics stayed at their desktop size (14 px captions on a projector)
            f'[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p '
            f'{{ font-size: {round(lk.font_px * 0.8)}px; }}',
            f'[data-testid="stMetricValue"] {{ font-size: {lk.font_px * 2}px; }}',
            f'[data-testid="stMetricLabel"] p {{ font-size: {lk.font_px}px; }}',
            f'[data-testid="stCode"] code {{ font-size: {round(lk.font_px * 0.85)}px; }}',
            f'[data-testid="stMarkdownContainer"] h5 {{ font-size: {round(lk.font_px * 1.1)}px; }}',
            f'[data-testid="stTable"] td, [data-testid="stTable"] th {{ font-size: {lk.table_font_px}px; }}',
            # a button's key hint (Streamlit's <kbd>, "→" on Step) is for the one at the keyboard, not the class: 21 px
            # in the 1920 layout is 14.9 px on a 1366 x 768 projector, and it narrows the label; the lecturer's
            # clicker and keys still work
            '[data-testid="stButton"] button kbd { display: none !important; }',
            '[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"], '
            '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], footer '
            '{ display: none !important; }',
            '.block-container, [data-testid="stMainBlockContainer"] '
            '{ padding-top: 0 !important; padding-bottom: 2rem !important; '
            'padding-left: 1.5rem !important; padding-right: 1.5rem !important; max-width: 100% !important; }',
            # inline code is 0.75em in Streamlit: never below the floor
            f':not(pre) > code {{ font-size: max(1em, {MIN_PRESENT_PX}px) !important; }}',
            # a Graphviz chart keeps its natural size (14 pt text = 18.7 px) and scrolls sideways when it
            # is wider than the page, instead of shrinking its text below what the back row can read
            '[data-testid="stGraphVizChart"] { overflow-x: auto !important; }',
            '[data-testid="stGraphVizChart"] svg { max-width: none !important; width: auto !important; '
            'height: auto !important; }',
            # the title is a label, not the lesson: it gives its room to the graph
            f'h1 {{ font-size: {int(lk.font_px * 1.5)}px !important; padding: 0 0 0.25rem 0 !important; }}',
            *fit_screen_rules(),
        ]
    return "<style>\n" + "\n".join(rules) + "\n</style>"


# --- a lecture's navigation on the projector ------------------------------------------------------------------

NAV_KEY = "adx_present_nav"   # the container of the Previous / Home / Next links (its class: st-key-adx_present_nav)


def lecture_order(app_dir) -> list[tuple[str, str]]:
    """The pages in a lecture's order, ``(page name, script path relative to the app's folder)``: Home, then the
    pages by their number (``app/pages/N_Name.py``)."""
    from pathlib import Path

    from .pages import discover_pages
    app_dir = Path(app_dir)
    out = [("Home", "Home.py")] if (app_dir / "Home.py").is_file() else []
    return out + [(p.url_path, p.relative_to_app(app_dir)) for p in discover_pages(app_dir / "pages")]


def neighbours(app_dir, page: str) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
    """The pages before and after ``page`` in :func:`lecture_order` (None at either end, or for an unknown page)."""
    order = lecture_order(app_dir)
    names = [name for name, _ in order]
    if page not in names:
        return None, None
    i = names.index(page)
    return (order[i - 1] if i > 0 else None), (order[i + 1] if i + 1 < len(order) else None)


# the box sits in the title's row, at its right end, and scrolls away with it: pinned to the screen (position: fixed)
# it covered the text and figures scrolled beneath it. The clicker's keys reach its links wherever the page is scrolled.
NAV_CSS = (f"<style>[data-testid='stMainBlockContainer'] {{ position: relative; }}"
           f".st-key-{NAV_KEY} {{ position: absolute; right: 1.5rem; top: 0.4rem; z-index: 999990; width: auto; "
           "background: rgba(255,255,255,0.92); border: 1px solid #d1d5db; border-radius: 8px; padding: 0.2rem 0.5rem; "
           f"gap: 0.2rem; flex-direction: row; align-items: center; }}"
           # the links' own boxes are shorter than their text at the projector's font size: the border cut it
           f".st-key-{NAV_KEY} [data-testid='stPageLink'] a {{ min-height: 2.6rem; align-items: center; }}</style>")

# The keys a presentation clicker sends: PageDown / space / → step the page's stepper, or, on its last step (or on a
# page without one), open the next page; PageUp / ← step back, or open the previous page from the first step. A page
# of numbered parts without a stepper (the Exercises: "Next exercise" / "Previous exercise") moves through them the
# same way, and on past the last one.
# A page whose steps are a slider rather than a stepper (Static vs dynamic's evaluation order) keys that slider with
# PACED_SLIDER in its key: the keys then move it one step, as its own arrow keys would, and leave the page at either
# end. Arrows on a stepper are Streamlit's own shortcuts of Step and Back (the script adds only the move to another
# page at either end). Keys typed into a box, a slider or a menu are theirs; installed once per browser tab.
PACED_SLIDER = "adx_paced"
CLICKER_SCRIPT = f"""<script>(() => {{ if (window.__adxClicker) return; window.__adxClicker = true;
  const mine = t => t && t.closest && t.closest('input, textarea, select, [contenteditable="true"], [role="slider"], [role="listbox"], [role="combobox"]');
  // a button's text holds its icon's name too ("chevron_left Back ←"): the label is a word of it
  const button = name => [...document.querySelectorAll('[data-testid="stMain"] button')].find(
      b => (' ' + (b.innerText || '').replace(/\\s+/g, ' ') + ' ').includes(' ' + name + ' ') && !b.disabled);
  const slider = () => document.querySelector('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]');
  const atEnd = forward => {{ const s = slider(); if (!s || !button('Step')) return true;
    const now = +s.value;
    return forward ? now >= +s.getAttribute('max') : now <= +s.getAttribute('min'); }};
  const paced = () => document.querySelector('[data-testid="stMain"] [class*="st-key-"][class*="{PACED_SLIDER}"] input[type="range"]');
  const nudge = (s, forward) => {{ const key = forward ? 'ArrowRight' : 'ArrowLeft';   // the slider's own keys
    s.focus(); for (const type of ['keydown', 'keyup']) s.dispatchEvent(new KeyboardEvent(type, {{key, bubbles: true, cancelable: true}}));
    s.blur(); }};   // the focus back on the page: the clicker's next key is the script's again
  const go = forward => {{ const a = [...document.querySelectorAll('.st-key-{NAV_KEY} a')].find(
      x => x.innerText.includes(forward ? 'Next' : 'Previous')); if (a) a.click(); }};
  document.addEventListener('keydown', e => {{
    if (e.altKey || e.ctrlKey || e.metaKey || mine(e.target) || !document.querySelector('.st-key-{NAV_KEY}')) return;
    const forward = ['PageDown', ' ', 'ArrowRight'].includes(e.key), back = ['PageUp', 'ArrowLeft'].includes(e.key);
    if (!forward && !back) return;
    if (e.key === ' ' && e.target && e.target.closest && e.target.closest('button, a')) return;  // its own click
    const arrow = e.key.startsWith('Arrow');
    const part = !button('Step') && button(forward ? 'Next exercise' : 'Previous exercise');
    if (part) {{ e.preventDefault(); part.click(); return; }}
    const s = !button('Step') && paced();
    if (s && (forward ? +s.value < +s.max : +s.value > +s.min)) {{ e.preventDefault(); nudge(s, forward); return; }}
    if (atEnd(forward)) {{ e.preventDefault(); go(forward); return; }}
    if (arrow) return;   // Streamlit's shortcut steps
    e.preventDefault(); const b = button(forward ? 'Step' : 'Back'); if (b) b.click();
  }}, true); }})();</script>"""
