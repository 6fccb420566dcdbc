"""The engine's own code beside the animation: events carry their source line, the panel reads the source
with inspect, marks what each frame ran, and renders it as escaped HTML."""
from __future__ import annotations

import inspect
import json
import re
from html import unescape as html_unescape

import pytest

from engine import autodiff, ops, strategies
from engine.autodiff import ContributionSent, FanOutAccumulated, LeafAccumulated, NodeVisited
from explorer.explain import record_execution
from explorer.explain.trace import run_forward
from engine.tensor import Tensor
from explorer.kit.code_panel import (CodeBlock, block, failed_code, frame_code, gap_text, protocol_blocks,
                                     source_lines, to_html)
from explorer.kit.frames import build_frames

SLIDE, AT = "f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5"


def _line(where) -> str:
    """The source text of an event's location, read from the file as Python has it."""
    lines = open(where.file if hasattr(where, "file") else where[1]).read().splitlines()
    return lines[(where.line if hasattr(where, "line") else where[2]) - 1]


@pytest.mark.parametrize("strategy", ["topological", "bfs_first_touch", "path_recursion", "recursive_dfs"])
def test_every_event_carries_the_line_that_emitted_it(strategy):
    fw = run_forward(SLIDE, AT)
    events = []
    fw.output.backward(strategy=strategy, observer=events.append)
    assert events
    for e in events:
        assert e.where is not None
        assert f"{type(e).__name__}(" in _line(e.where)  # the line that built this very event
    functions = {e.where.function for e in events}
    expected = {"topological": {"propagate"}, "recursive_dfs": {"propagate"},
                "bfs_first_touch": {"BfsFirstTouch.run"},
                "path_recursion": {"PathRecursion.run.<locals>.visit"}}[strategy]
    assert functions == expected


def test_recorded_events_keep_the_location_as_plain_data():
    tr = record_execution(SLIDE, AT)
    json.dumps(tr.to_dict())
    kinds = {e.kind: e.where for e in tr.backward}
    assert kinds["visit"][0] == "propagate" and "NodeVisited(" in _line(kinds["visit"])
    assert "ContributionSent(" in _line(kinds["send"]) and "FanOutAccumulated(" in _line(kinds["accumulate"])
    assert "LeafAccumulated(" in _line(kinds["leaf"])
    lost = next(e for e in record_execution(SLIDE, AT, strategy="bfs_first_touch").backward if e.kind == "lost")
    assert lost.where[0] == "BfsFirstTouch.run" and "ContributionLost(" in _line(lost.where)


def test_events_compare_and_print_without_their_location():
    a = NodeVisited("n", 1.0, 0)
    b = NodeVisited("n", 1.0, 0)
    assert a == b and a.where.line != b.where.line and "where" not in repr(a)
    assert {ContributionSent, FanOutAccumulated, LeafAccumulated} <= set(autodiff.Event.__subclasses__())


def test_source_is_read_from_the_running_engine_without_the_docstring():
    path, lines = source_lines(autodiff.propagate)
    real, start = inspect.getsourcelines(autodiff.propagate)
    assert path == inspect.getsourcefile(autodiff.propagate)
    assert lines[0] == (start, real[0].rstrip("\n")) and lines[-1][1] == real[-1].rstrip("\n")
    text = "\n".join(t for _, t in lines)
    assert autodiff.propagate.__doc__.strip().splitlines()[0] not in text
    assert "for parent, contribution in node.chain_rule(adjoint):" in text
    b = block(ops.primitive("exp").vjp)
    assert b.path == "engine/ops.py" and b.title.endswith("Exp.vjp")


def _slide():
    tr = record_execution(SLIDE, AT)
    return tr, build_frames(tr, tr.graph.without_constants())


def _frame_of(fs, tr, phase, name):
    nid = tr.graph.by_name(name).id
    return next(f.index for f in fs.frames if f.phase == phase and nid in f.active_nodes)


def test_forward_frames_show_the_ops_forward():
    tr, fs = _slide()
    view = frame_code(tr, fs, _frame_of(fs, tr, "forward", "x6"))
    (fwd,) = view.blocks
    assert fwd.title.endswith("Exp.forward  (op 'exp')")
    marked = [t for n, t in fwd.lines if n in fwd.marks]
    assert marked == ['        return ctx.backend.unary(cls.kernel_name, a)']
    assert frame_code(tr, fs, 0).highlighted == []  # the inputs: nothing ran yet


def test_backward_frames_mark_what_the_step_ran_and_the_ops_vjp():
    tr, fs = _slide()
    view = frame_code(tr, fs, _frame_of(fs, tr, "backward", "f"))  # f = x1 + x6 sends to both parents
    walk, chain, vjp = view.blocks
    assert walk.title == "engine.autodiff.propagate" and chain.title == "engine.tensor.Tensor.chain_rule"
    assert vjp.title.startswith("engine.ops.Add.vjp")
    text = dict(walk.lines)
    by_text = {text[n].strip(): k for n, k in walk.marks.items()}
    # the lines that do the step's work, never an observer call: the VJP call (once: one call sends both
    # contributions), the addition to each input's running total (x2)
    assert by_text == {"for parent, contribution in node.chain_rule(adjoint):": 1,
                       "total = add(adjoints.get(pid), contribution)": 2}
    assert any("vjp(" in t for n, t in chain.lines if n in chain.marks)
    assert all(t.strip().startswith("return") for n, t in vjp.lines if n in vjp.marks) and vjp.marks
    leaf = frame_code(tr, fs, _frame_of(fs, tr, "backward", "x2"))
    walk, acc = leaf.blocks
    assert acc.title == "engine.tensor.Tensor.accumulate_derivative"
    assert [dict(acc.lines)[n].strip().startswith("self.grad =") for n in acc.marks] == [True]
    lit = [dict(walk.lines)[n].strip() for n in walk.marks]
    assert "node.accumulate_derivative(adjoint)" in lit and not any("observer" in t for t in lit)
    assert "x2" in leaf.caption


def test_the_highlight_moves_from_frame_to_frame():
    tr, fs = _slide()
    back = [f.index for f in fs.frames if f.phase == "backward"]
    seen = [frame_code(tr, fs, i).highlighted for i in back]
    assert all(seen) and all(a != b for a, b in zip(seen, seen[1:]))  # every Step moves the highlight
    exp_step = frame_code(tr, fs, _frame_of(fs, tr, "backward", "x6")).blocks[-1]
    assert exp_step.title.startswith("engine.ops.Exp.vjp")
    done = frame_code(tr, fs, len(fs.frames) - 1)
    assert done.highlighted == [] and "done" in done.caption


@pytest.mark.parametrize("strategy, walk", [("bfs_first_touch", "engine.strategies.BfsFirstTouch.run"),
                                            ("path_recursion", "engine.strategies.PathRecursion.run"),
                                            ("recursive_dfs", "engine.autodiff.propagate")])
def test_broken_orders_show_their_own_code(strategy, walk):
    tr = record_execution(SLIDE, AT, strategy=strategy)
    fs = build_frames(tr, tr.graph.without_constants())
    marked_blocks = set()
    for i in range(len(fs.frames)):
        for b in frame_code(tr, fs, i).blocks:
            if b.role == "walk" and b.marks:
                marked_blocks.add(b.title)
    assert marked_blocks == {walk}
    if strategy == "recursive_dfs":  # its own recursive sort is shown above the walk it hands the order to
        assert frame_code(tr, fs, 8).blocks[0].title == "engine.strategies.RecursiveDfs.run"
    if strategy == "bfs_first_touch":  # the step where a contribution is lost marks the ContributionLost line
        lost_frame = next(f.index for f in fs.frames if "lost" in f.node_state)
        b = frame_code(tr, fs, lost_frame).blocks[0]
        assert any("ContributionLost(" in dict(b.lines)[n] for n in b.marks)


def test_a_failed_order_shows_its_code_unmarked():
    view = failed_code("recursive_dfs", "RecursionError: maximum recursion depth exceeded")
    assert [b.title for b in view.blocks] == ["engine.strategies.RecursiveDfs.run", "engine.autodiff.propagate"]
    assert view.highlighted == [] and "RecursionError" in view.caption


def test_protocol_blocks_are_the_hw2_contract():
    titles = [b.title for b in protocol_blocks("topological")]
    assert titles[0] == "engine.autodiff.backpropagate" and "engine.autodiff.topological_sort" in titles
    for name in ("is_leaf", "is_constant", "chain_rule", "accumulate_derivative"):
        assert f"engine.tensor.Tensor.{name}" in titles
    assert getattr(Tensor, "chain_rule") and strategies.STRATEGY_NAMES[0] == "topological"


def test_html_escapes_code_and_marks_highlighted_lines():
    b = CodeBlock("t <b>", "x.py", [(10, "    if a < b and c > d:"), (11, "        s = '<script>alert(1)</script>'")],
                  {11: 3})
    out = to_html([b], 15)
    assert "<script>" not in out and "&lt;script&gt;" in out and "t &lt;b&gt;" in out
    assert "a &lt; b and c &gt; d" in out  # the shared indentation is dropped, the rest kept
    hl = re.findall(r'<div class="l hl[^"]*" data-line="(\d+)">', out)
    assert hl == ["11"] and "×3" in out and "font-size: 15px" in out
    tr, fs = _slide()
    page = to_html(frame_code(tr, fs, _frame_of(fs, tr, "backward", "x6")))
    assert 'data-testid="code-panel"' in page and page.count(' hl') >= 4


def test_a_jump_in_the_line_numbers_is_marked_where_the_docstring_was():
    """propagate's docstring is left out: the panel says so between its signature and its body (146 went on at
    166 with nothing in between), and only where numbers jump."""
    from engine import autodiff
    b = block(autodiff.propagate)
    nums = [n for n, _ in b.lines]
    jumps = [(a + 1, c - 1) for a, c in zip(nums, nums[1:]) if c > a + 1]
    assert jumps, "propagate's docstring is no longer left out: this test lost its subject"
    out = to_html([b])
    gaps = re.findall(r'<div class="l gap" data-gap="(\d+)-(\d+)">', out)
    assert [(int(a), int(c)) for a, c in gaps] == jumps
    assert gap_text(*jumps[0]) in out and "the docstring" in gap_text(*jumps[0])
    plain = CodeBlock("t", "x.py", [(1, "a = 1"), (2, "b = 2")])
    assert "gap" not in to_html([plain]).split("</style>", 1)[1]


def test_a_projector_panel_indents_by_two_so_the_lit_lines_fit_unwrapped():
    b = CodeBlock("t", "x.py", [(1, "def f():"), (2, "    for a in b:"), (3, "        total = prev + contribution")],
                  {3: 1})
    narrow = to_html([b], 18, max_height_px=300)
    wide = to_html([b], 13)
    assert ">    total = prev + contribution<" in narrow and ">        total = prev + contribution<" in wide
    assert 'class="adx-scroll"' in narrow and "adx-scroll" not in wide
    # the engine's lines a step lights (the VJP call, the running total, the leaf's .grad) fit a projector's code
    # column: 70 characters at 18 px (tests/browser/test_first_screen.py checks that none wraps)
    from engine import autodiff
    walk = block(autodiff.propagate)
    lit = {n: t for n, t in walk.lines if any(k in t for k in (".chain_rule(", "add(adjoints", ".accumulate_derivative("))}
    assert len(lit) == 3
    shown = re.findall(r'data-line="(\d+)"><span class="n">\d+</span><span class="m"></span><span class="c">([^<]*)<',
                       to_html([walk], 18, max_height_px=300).replace("<wbr>", ""))
    assert all(len(html_unescape(t)) <= 70 for n, t in shown if int(n) in lit), shown


def test_slide_27s_backward_pass_lights_each_steps_work_counted_from_the_engines_events():
    from explorer.kit.code_panel import ENGINE_HEADING, SLIDE_SOURCE, lecture_block, step_events
    tr, fs = _slide()
    lecture = lecture_block()
    code = "\n".join(t for _, t in lecture.lines)
    for name in ("outgrads", "toposort(end_node)", "node.recipe", "primitive_vjps[fun][argnum]", "add_outgrads"):
        assert name in code
    assert lecture.marks == {} and "slide 27" in SLIDE_SOURCE

    def lit(node: str) -> dict[str, int]:
        events = step_events(tr, fs, _frame_of(fs, tr, "backward", node))
        b = lecture_block(events, tr.graph.output)
        return {dict(b.lines)[n].strip().split(" = ")[0]: k for n, k in b.marks.items()}, events

    # the output's step: outgrads = {end_node: g}, its adjoint popped, one VJP per parent and one sum per parent
    marks, events = lit("f")
    sends = sum(e.kind == "send" for e in events)
    assert sends == 2
    assert marks == {"outgrads": 1, "outgrad": 1, "vjp": sends, "parent_grad": sends, "outgrads[parent]": sends}
    marks, _ = lit("x5")   # x5 = x3 + x4: not the output, two parents
    assert marks == {"outgrad": 1, "vjp": 2, "parent_grad": 2, "outgrads[parent]": 2}
    marks, _ = lit("x2")   # a leaf: its gradient is the adjoint it pops, nothing else runs
    assert marks == {"outgrad": 1}
    html = to_html([lecture_block()], 13, test_id="code-lecture")
    assert "backward_pass" in html and "lecture 5, slide 27" in html
    panel = to_html(frame_code(tr, fs, _frame_of(fs, tr, "backward", "f")), 13, heading=ENGINE_HEADING)
    assert 'data-testid="code-panel-heading"' in panel and "not the slide&#x27;s" in panel


def test_a_scrolling_panel_keeps_its_blocks_title_row_on_screen():
    """A projector's scrolling panel sticks each block's title row (the function's name) to the box's top, so lit
    lines deep in a long function still say whose they are, with no line added above the panel (that pushed
    Backprop orders' panel off the first screen); the scroll script leaves the stuck row room over the lit lines.
    A panel that does not scroll keeps its titles in the flow."""
    import re
    from explorer.kit.code_panel import SCROLL_TO_HIGHLIGHT, protocol_blocks, to_html
    blocks = protocol_blocks()
    scrolling, flowing = to_html(blocks, 18, max_height_px=300), to_html(blocks, 18)
    css = re.search(r"<style>(.*?)</style>", scrolling, re.S).group(1)
    assert re.search(r"\.adx-scroll \.adx-code \.t \{[^}]*position: sticky; top: 0", css)
    assert re.search(r"\.adx-scroll \.adx-code \{[^}]*overflow: visible", css)   # else it sticks inside its block
    assert "adx-scroll" not in flowing and "sticky" not in flowing
    assert scrolling.split("</style>", 1)[1].count('<div class="t">') == len(blocks)
    assert "start - title.offsetHeight" in SCROLL_TO_HIGHLIGHT and "span() + 2 * rowH > room" in SCROLL_TO_HIGHLIGHT
    # lit rows that do not fit even folded (wrapped lines) make the window taller, never past the screen's edge
    assert "max = Math.min(limit, max + span() - room + 1)" in SCROLL_TO_HIGHLIGHT


def test_a_scrolling_panel_is_laid_out_again_whenever_the_window_changes():
    """The window on a panel's rows is measured in the page: after the quick watch of the first seconds (every frame),
    a resize (a projector plugged in, full screen: the page laid out wider, its lines wrapped anew) or a late move
    re-lays it out, checked twice a second and at every resize while the page is open, by one watch per page (a
    window measured before the change sliced a wrapped row at its bottom edge)."""
    from explorer.kit.code_panel import SCROLL_TO_HIGHLIGHT, scroll_to_highlight
    script = SCROLL_TO_HIGHLIGHT
    assert "window.__adxCodeWatch = setInterval(" in script and "addEventListener('resize'" in script
    assert "if (!window.__adxCodeWatch)" in script        # installed once, whatever the number of Steps
    assert "window.__adxCodeCheck = check" in script      # the newest step's panels are the ones checked
    assert "box.clientWidth" in script and "window.innerWidth" in script   # a wider layout is a change
    assert scroll_to_highlight(3).count("setInterval(") == 1


def test_code_wraps_at_spaces_and_punctuation_never_inside_a_name_that_fits():
    """A projector's code column holds ~25 characters: "node.accumulate_derivative(adjoint)" wrapped as
    "…(adjoin|t)" (overflow-wrap: anywhere). Lines wrap at spaces, after a dot between names and after an opening
    bracket (a <wbr>, no text); a number's point is no such place; a name wider than the column alone breaks inside."""
    from explorer.kit.code_panel import _CSS, code_line_html
    assert code_line_html("node.accumulate_derivative(adjoint)") == "node.<wbr>accumulate_derivative(<wbr>adjoint)"
    assert code_line_html("x = 1.5 * a[0] < g( y )") == "x = 1.5 * a[<wbr>0] &lt; g( y )"
    css = re.search(r"\.adx-code \.c \{\{([^}]*)\}\}", _CSS).group(1)
    assert "overflow-wrap: break-word" in css and "word-break: normal" in css and "anywhere" not in _CSS
    out = to_html([block(autodiff.propagate)], 18, max_height_px=300)
    assert "accumulate_derivative(<wbr>adjoint)" in out
    assert html_unescape(out.replace("<wbr>", "")).count("node.accumulate_derivative(adjoint)") == 1
