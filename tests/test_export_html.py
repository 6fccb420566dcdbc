"""The exported walk-through (explorer/kit/export_html.py): each step of the file shows what the page's step
model gives for that step (caption, node values and adjoints, the backward graph's sums, the lit code lines,
the contributions), user text is escaped, and the file stays small. Without a browser: the file's data is
read back as the file's script reads it (tests/browser/test_export_browser.py opens it in Chromium)."""
from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from explorer.expression_explorer import explorer_model, walkthrough
from explorer.kit import presets
from explorer.kit.backward_view import backward_frameset
from explorer.kit.export_html import ExportTooBig, figure_svg, file_or_note, walkthrough_html

SVG = "{http://www.w3.org/2000/svg}"

# the lecture's examples (/work/shared/LECTURE.md): the slide example three ways, the sigmoid quiz, the notes'
# exercises 2 and 3 and the gradient-accumulation figure
LECTURE = [p for p in presets.PRESETS if p.label.startswith(("Slide example", "Sigmoid quiz", "x·x·x", "(x1 + x2)",
                                                             "Gradient accumulation"))]


def steps_of(text: str) -> list[str]:
    """Each step's HTML, put together from the file's data as its script does."""
    m = re.search(r'<script type="application/json" id="adx-data">(.*?)</script>', text, re.S)
    data = json.loads(m.group(1))
    return ["".join(data["pieces"][j] for j in ids) for ids in data["steps"]]


def svg_texts(step_html: str, test_id: str) -> list[str]:
    """The text lines of one graph of a step (every SVG must parse as XML)."""
    found = re.search(rf'<svg [^>]*data-testid="{test_id}".*?</svg>', step_html, re.S)
    root = ET.fromstring(found.group(0))
    return [t.text or "" for t in root.iter(f"{SVG}tspan")]


class _Text(HTMLParser):
    """Visible text of HTML (no style or script), and the text of the code panels' lit lines."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self.lit: list[str] = []
        self._skip = 0
        self._stack: list[bool] = []     # per open div: a lit code line
        self._line: list[str] | None = None
        self._in_code = 0

    BLOCKS = {"div", "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "td", "th", "br", "table"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in self.BLOCKS:
            self.parts.append(" ")     # text in separate blocks is separate words, as a browser lays it out
        if tag in ("style", "script", "svg"):
            self._skip += 1
        if tag == "div":
            lit = "hl" in (a.get("class") or "").split() and "l" in (a.get("class") or "").split()
            self._stack.append(lit)
            if lit:
                self._line = []
        if tag == "span" and self._line is not None and a.get("class") == "c":
            self._in_code += 1

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.parts.append(" ")
        if tag in ("style", "script", "svg"):
            self._skip -= 1
        if tag == "span" and self._in_code:
            self._in_code -= 1
        if tag == "div" and self._stack and self._stack.pop() and self._line is not None:
            self.lit.append("".join(self._line))
            self._line = None

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)
        if self._in_code and self._line is not None:
            self._line.append(data)


def parsed(step_html: str) -> _Text:
    p = _Text()
    p.feed(step_html)
    return p


def lit_lines(view) -> list[str]:
    return [text.strip() for b in view.blocks for n, text in b.lines if b.marks.get(n)]


@pytest.mark.parametrize("preset", LECTURE, ids=lambda p: p.label[:40])
def test_every_exported_step_shows_what_the_pages_step_model_gives(preset):
    model = explorer_model(preset.program, preset.inputs)
    steps = steps_of(walkthrough(model, preset.program, preset.inputs))
    assert len(steps) == model.n_frames
    back = backward_frameset(model.frameset, model.shown_trace.graph.without_constants())
    for k, step in enumerate(steps):
        frame, bframe = model.frameset.frames[k], back.frames[k]
        text = parsed(step)
        shown = " ".join("".join(text.parts).split())
        assert f"Step {k + 1} of {model.n_frames} · {model.phase(k)}" in shown
        assert " ".join(model.caption(k).split()) in shown
        # the forward graph: each node's value line and adjoint, as the page's frame has them
        forward = svg_texts(step, "graph-1")
        for line in [t.split("\n")[0] for t in frame.node_text] + list(frame.node_adjoint):
            if line:
                assert line in forward, (k, line)
        assert set(forward) >= set(model.frameset.heads)
        # the backward graph: each adjoint's running sum, and only contributions this frame has sent
        backward = svg_texts(step, "graph-2")
        for line in bframe.node_text:
            if line:
                assert line in backward, (k, line)
        labels = {t for t in bframe.edge_text if t}
        node_lines = {line for t in list(bframe.node_text) + list(bframe.node_adjoint) for line in t.split("\n")}
        assert {t for t in backward if t not in node_lines and t not in back.heads} <= labels
        # the engine's lines this step ran, and the lecture's
        code = model.code(k)
        assert lit_lines(code) or frame.phase != "backward"
        assert sorted(t.strip() for t in text.lit) == sorted(lit_lines(code) + _lecture_lit(model, k)), k
        for row in model.contributions(k):
            for value in row.values():
                assert str(value) in shown, (k, value)


def _lecture_lit(model, k: int) -> list[str]:
    from explorer.kit.code_panel import lecture_block, step_events
    b = lecture_block(step_events(model.shown_trace, model.frameset, k), model.shown_trace.graph.output)
    return [text.strip() for n, text in b.lines if b.marks.get(n)]


def test_the_slide_example_is_small_enough_to_email():
    p = presets.DEFAULT
    text = walkthrough(explorer_model(p.program, p.inputs), p.program, p.inputs)
    assert len(text.encode()) < 1_000_000
    # nothing is fetched: no URL the browser would load
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "@import" not in text and "url(http" not in text


def test_typed_text_is_escaped_in_the_file():
    program = "f = x1 + exp(1.5*x1 + 2*x2)  # </script><img src=x onerror=alert(1)> <!-- &amp;"
    model = explorer_model(program, "x1 = 3, x2 = 0.5")
    text = walkthrough(model, program, "x1 = 3, x2 = 0.5")
    assert "<img" not in text and "<!--" not in text
    assert text.count("</script>") == 2          # the data's and the controls' own
    source = re.search(r'data-testid="source">(.*?)</div>', text, re.S).group(1)
    assert html.unescape(source) == f"{program}\nat x1 = 3, x2 = 0.5"
    assert len(steps_of(text)) == model.n_frames   # the data still parses


def test_figure_text_is_unescaped_from_plotly_and_escaped_for_svg():
    fig = {"layout": {"height": 120, "margin": {"l": 0, "r": 0, "t": 10, "b": 10},
                      "xaxis": {"range": [0, 100]}, "yaxis": {"range": [0, 100]}},
           "data": [{"type": "scatter", "mode": "text", "x": [50], "y": [50], "text": ["a &lt;b&gt;<br>x̄1 = 1 &amp; 2"],
                     "textfont": {"size": 14}},
                    {"type": "scatter", "mode": "lines", "fill": "toself", "fillcolor": "#fde047",
                     "x": [0, 10, 10, None, 20, 30], "y": [0, 0, 10, None, 20, 30], "line": {"width": 0}}]}
    svg = "".join(figure_svg(fig))
    root = ET.fromstring(svg)
    assert [t.text for t in root.iter(f"{SVG}tspan")] == ["a <b>", "x̄1 = 1 & 2"]
    paths = [p.get("d") for p in root.iter(f"{SVG}path")]
    assert paths == ["M0 110L10 110L10 100ZM20 90L30 80Z"]     # y up, one subpath per run between gaps


def test_a_file_over_the_bound_is_refused_and_the_button_hands_over_a_note():
    p = presets.DEFAULT
    model = explorer_model(p.program, p.inputs)
    from explorer.expression_explorer import relayed_view, step_view
    views = [relayed_view(model, step_view(model, k, 13), k) for k in range(model.n_frames)]
    with pytest.raises(ExportTooBig):
        walkthrough_html("t", views, max_bytes=50_000)

    def too_big() -> str:
        return walkthrough_html("t", views, max_bytes=50_000)
    note = file_or_note(too_big)
    assert "No walk-through was written" in note and len(note) < 1000


ORDERS = ("topological", "bfs_first_touch", "path_recursion")


@pytest.mark.parametrize("preset", [p for p in LECTURE if p.label.startswith(("Slide example:", "(x1 + x2)", "x·x·x"))],
                         ids=lambda p: p.label[:40])
def test_every_exported_step_of_the_orders_shows_each_orders_step_model(preset):
    from explorer.backprop_orders import STRATEGY_LABELS, fits_half_width, orders_model
    from explorer.backprop_orders import walkthrough as orders_walkthrough
    model = orders_model(preset.program, preset.inputs, ORDERS)
    steps = steps_of(orders_walkthrough(model, ORDERS, fits_half_width(model), preset.program, preset.inputs))
    assert len(steps) == model.n_frames
    graph = model.views["topological"].trace.graph.without_constants()
    for step_no, step in enumerate(steps, start=1):
        text = parsed(step)
        shown = " ".join("".join(text.parts).split())
        lit = []
        for j, s in enumerate(ORDERS):
            view = model.views[s]
            k = min(step_no, view.n_frames) - 1
            frame = view.frameset.frames[k]
            assert f"{STRATEGY_LABELS[s]}" in shown and " ".join(view.verdict_line(k)[1].split()) in shown
            assert f"Step {k + 1} of {view.n_frames} · {frame.phase}: {' '.join(frame.caption.split())}" in shown
            forward = svg_texts(step, f"graph-{2 * j + 1}")
            for line in [t.split("\n")[0] for t in frame.node_text] + list(frame.node_adjoint):
                if line:
                    assert line in forward, (s, k, line)
            backward = svg_texts(step, f"graph-{2 * j + 2}")
            for line in backward_frameset(view.frameset, graph).frames[k].node_text:
                if line:
                    assert line in backward, (s, k, line)
            for m in view.moments_until(k):
                assert f"Step {m.frame + 1}: {' '.join(m.text.split())}" in shown
            lit += lit_lines(view.code(step_no - 1))
        assert sorted(t.strip() for t in text.lit) == sorted(lit), step_no
    # at the last step each wrong gradient is listed (BFS first touch on the slide example: x1's 1, not 368.04)
    last = " ".join("".join(parsed(steps[-1]).parts).split())
    wrong = [row for s in ORDERS for row in model.views[s].wrong]
    assert wrong or preset is not presets.DEFAULT
    for row in wrong:
        assert " ".join(str(v) for v in row.values()) in last


@pytest.mark.parametrize("key", ["slide", "sigmoid"])
def test_every_exported_queue_step_shows_the_topological_sort_pages_step(key):
    from explorer import topological_sort as T
    model = T.sort_model(key)
    steps = steps_of(T.walkthrough(model))
    assert len(steps) == len(model.queue_steps)
    names = {model.name(i) for i in model.node_ids}
    for k, step in enumerate(steps):
        shown = " ".join("".join(parsed(step).parts).split())
        qs = model.queue_steps[k]
        assert f"Step {k + 1} of {len(model.queue_steps)} · ready: {', '.join(model.name(i) for i in qs.ready)} " \
               f"→ take {model.name(qs.taken)}" in shown
        for row in T.queue_table(model, k):
            assert " ".join(str(v) for v in row.values()) in shown
        notes = T.queue_notes(model, k)
        drawn = svg_texts(step, "graph-1")
        assert set(drawn) >= {t for t in notes.values() if t}
        assert {t.split(" = ")[0] for t in drawn if not t.startswith("= ")} == names


@pytest.mark.parametrize("preset", [p for p in LECTURE if p.label.startswith(("Slide example:", "Sigmoid quiz"))],
                         ids=lambda p: p.label[:40])
def test_every_exported_forward_mode_step_shows_the_pages_step(preset):
    from explorer.forward_vs_reverse import dual_model, step_notes, step_rows
    from explorer.forward_vs_reverse import walkthrough as forward_walkthrough
    from explorer.kit.programs import parse
    seed = parse(preset.program, preset.inputs)[0].input_names[0]
    model = dual_model(preset.program, preset.inputs, seed)
    steps = steps_of(forward_walkthrough(model, seed, preset.program, preset.inputs))
    assert len(steps) == model.n_frames
    for step_no, step in enumerate(steps, start=1):
        frame = model.frameset.frames[step_no - 1]
        shown = " ".join("".join(parsed(step).parts).split())
        assert f"Step {step_no} of {model.n_frames} {' '.join(frame.caption.split())}" in shown
        for row in step_rows(model, step_no):
            assert " ".join(str(v) for v in row.values()) in shown
        lead, captions = step_notes(model, seed, step_no)
        for text in [lead.replace("**", "").replace("  \n", " "), *captions]:
            assert " ".join(text.split()) in shown
        drawn = svg_texts(step, "graph-1")
        for line in [t.split("\n")[0] for t in frame.node_text] + list(frame.node_adjoint):
            if line:
                assert line in drawn, (step_no, line)


def test_every_exported_step_of_a_hw2_sample_shows_both_sides_and_its_code():
    from explorer.student_code import view as V
    key = V.sample_choices()[0]
    report = V.sample_report(key)
    gv = V.graph_view(report, V.graph_choices(report)[0], label=V.sample_label(key))
    steps = steps_of(V.walkthrough(gv, V.sample_label(key), key))
    assert len(steps) == gv.n_frames
    for step_no, step in enumerate(steps, start=1):
        text = parsed(step)
        shown = " ".join("".join(text.parts).split())
        for j, side in enumerate((gv.engine, gv.student)):
            k = min(step_no, side.n_frames) - 1
            frame = side.frameset.frames[k]
            assert f"{side.label} · Step {k + 1} of {side.n_frames} · {frame.phase}: " \
                   f"{' '.join(frame.caption.split())}" in shown
            drawn = svg_texts(step, f"graph-{j + 1}")
            for line in [t.split("\n")[0] for t in frame.node_text] + list(frame.node_adjoint):
                if line:
                    assert line in drawn, (step_no, line)
        k = min(step_no, gv.student.n_frames) - 1
        block = V.sample_code_block(key, gv.student, k)
        assert sorted(t.strip() for t in text.lit) == sorted(t.strip() for n, t in block.lines if block.marks.get(n))
        # the sample's first wrong node is told from the step its reason happens on (a lost contribution: the step it
        # arrives), never before
        assert (gv.wrong_text in shown) == (gv.verdict_frame is not None and k >= gv.verdict_frame)
    assert str(V.SAMPLES_BY_KEY[key].path.parent) not in "".join(steps)     # no path of the server


def _heatmaps(step_html: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r'<svg [^>]*class="adx-heatmap".*?</svg>', step_html, re.S)]


@pytest.mark.parametrize("net,level", [("logreg", "op"), ("mlp", "layer")])
def test_every_exported_network_step_shows_the_pages_moment_and_its_tensors(net, level):
    import numpy as np

    from explorer.network_explorer import analysis
    from explorer.network_explorer.explore import explore, moment, shown_name
    from explorer.network_explorer.explore import walkthrough as network_walkthrough
    ex = explore(net)
    text = network_walkthrough(ex, level, "a <network> & more")
    assert "<h1>Network explorer: a &lt;network&gt; &amp; more</h1>" in text and "<network>" not in text
    steps = steps_of(text)
    assert len(steps) == ex.n_frames
    frames = ex.views[level].frames.frames
    for k, step in enumerate(steps):
        m = moment(ex, k, level)   # the layer view's names: no op ids
        shown = " ".join("".join(parsed(step).parts).split())
        assert level != "layer" or not re.search(r"[a-z_]+#\d+", shown), (k, shown[:200])
        assert f"Step {k + 1} of {ex.n_frames} · {m.phase} {' '.join(m.title.split())}" in shown
        drawn = svg_texts(step, "graph-1")
        for line in [t.split("\n")[0] for t in frames[k].node_text] + list(frames[k].node_adjoint):
            if line:
                assert line in drawn, (k, line)
        maps = _heatmaps(step)
        if m.node is not None:
            node = ex.rec.node(m.node)
            name = shown_name(ex, m.node, level)
            assert f"{name} · op {node.op} · shape {analysis.format_shape(node.shape)}" in shown
            assert f"VJP: {' '.join(m.formula.split())}" in shown
            lk = analysis.look(m.value)
            if lk is not None and lk.is_heatmap:
                title = maps[0].find(f"{SVG}text").text
                assert title.startswith(f"value {analysis.format_shape(lk.shape)}")
                cells = [c.find(f"{SVG}title").text.split("] ")[1] for c in maps[0].iter(f"{SVG}rect")]
                assert cells == [f"{v:.6g}" for v in np.asarray(lk.matrix, dtype=float).reshape(-1)]
        if m.detail is not None:
            for s in m.detail.sent:
                assert f"→ sent to {shown_name(ex, s['target'], level)} {analysis.format_shape(s['value'].shape)}" in shown
