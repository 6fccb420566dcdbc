"""The engine's own code beside an animation, Python-Tutor style.

For a frame of an animation this module finds the engine functions that ran in it and the
lines they ran: the backward pass's events carry the line that emitted them
(:class:`engine.autodiff.CodeLocation`), and the source is read from the running engine
with :mod:`inspect` (never a copy in a string), so what is shown is what executed.

* :func:`frame_code` — the code blocks for one frame: the walk (``propagate`` for the
  topological order, each broken strategy's own ``run``) with the lines this step ran
  marked and counted, and the current node's VJP (``Tensor.chain_rule`` and the op's
  ``vjp``) or, for a leaf, ``accumulate_derivative``.
* :func:`protocol_blocks` — ``backpropagate``, the strategy's way of finding its order
  (``topological_sort``, the recursive DFS) and the HW2 protocol methods, for reference.
* :func:`to_html` — the blocks as HTML (code is text: every line is escaped).
"""
from __future__ import annotations

import ast
import html
import inspect
import os
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

from engine import autodiff, ops, strategies
from explorer.explain.parser import parse_python
from engine.tensor import Tensor

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class CodeBlock:
    """Source lines of one engine function; ``marks``: absolute line -> times it ran in this frame."""
    title: str
    path: str                  # file, relative to the repository
    lines: list[tuple[int, str]]  # (absolute line number, text), docstring left out
    marks: dict[int, int] = field(default_factory=dict)
    role: str = "walk"         # 'walk' | 'vjp' | 'forward' | 'reference'

    @property
    def highlighted(self) -> list[int]:
        return sorted(self.marks)


@dataclass
class CodeView:
    """What the code panel shows for one frame."""
    blocks: list[CodeBlock]
    caption: str

    @property
    def highlighted(self) -> list[tuple[str, int]]:
        """(function title, line) of every highlighted line, in display order."""
        return [(b.title, n) for b in self.blocks for n in b.highlighted]


def _function(obj: Any) -> Callable:
    return inspect.unwrap(getattr(obj, "__func__", obj))


def source_lines(obj: Any, docstring: bool = False) -> tuple[str, list[tuple[int, str]]]:
    """(file, [(line number, text)]) of a function or method as the running engine has it.

    The docstring is left out unless ``docstring``; line numbers stay the file's own.
    """
    fn = _function(obj)
    lines, start = inspect.getsourcelines(fn)
    numbered = [(start + i, text.rstrip("\n")) for i, text in enumerate(lines)]
    if not docstring:
        tree = parse_python(textwrap.dedent("".join(lines)))
        node = tree.body[0] if tree.body else None
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            first, last = start + body[0].lineno - 1, start + body[0].end_lineno - 1
            numbered = [(n, t) for n, t in numbered if not first <= n <= last]
    return inspect.getsourcefile(fn) or "", numbered


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path, _REPO)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def block(obj: Any, title: str | None = None, marks: dict[int, int] | None = None, role: str = "walk") -> CodeBlock:
    """A :class:`CodeBlock` of an engine function (read with :mod:`inspect`)."""
    fn = _function(obj)
    path, lines = source_lines(fn)
    return CodeBlock(title or f"{fn.__module__}.{fn.__qualname__}", _relative(path), lines, dict(marks or {}), role)


# the functions whose lines events may come from, and what each strategy shows as its walk
def _walks() -> dict[str, list]:
    return {
        "topological": [autodiff.propagate],
        "recursive_dfs": [strategies.RecursiveDfs.run, autodiff.propagate],
        "bfs_first_touch": [strategies.BfsFirstTouch.run],
        "path_recursion": [strategies.PathRecursion.run],
    }


def _order_functions(strategy: str) -> list:
    """How each strategy finds the order it walks (shown for reference)."""
    return {"topological": [autodiff.Topological.run, autodiff.topological_sort],
            "recursive_dfs": [],  # its run holds the recursive sort and is shown as part of the walk
            "bfs_first_touch": [],
            "path_recursion": []}.get(strategy, [])


def protocol_blocks(strategy: str = "topological") -> list[CodeBlock]:
    """``backpropagate``, how ``strategy`` finds its order, and the HW2 protocol methods of ``Tensor``."""
    out = [block(autodiff.backpropagate, role="reference")]
    out += [block(f, role="reference") for f in _order_functions(strategy)]
    out += [block(m, role="reference") for m in (Tensor.is_leaf, Tensor.is_constant, Tensor.chain_rule,
                                                 Tensor.accumulate_derivative)]
    return out


def _contains(b: CodeBlock, path: str, line: int) -> bool:
    if not b.lines:
        return False
    return _same_file(b.path, path) and b.lines[0][0] <= line <= b.lines[-1][0]


def _same_file(rel: str, path: str) -> bool:
    a = rel if os.path.isabs(rel) else os.path.join(_REPO, rel)
    try:
        return os.path.samefile(a, path)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(path)


def _op_class(op_name: str):
    try:
        return ops.primitive(op_name)
    except (KeyError, ValueError, LookupError):
        return None


def _return_lines(b: CodeBlock) -> dict[int, int]:
    """The ``return`` lines of a block (what a VJP or forward hands back), each marked once."""
    return {n: 1 for n, text in b.lines if text.strip().startswith("return")}


def _line_containing(b: CodeBlock, needle: str) -> dict[int, int]:
    return {n: 1 for n, text in b.lines if needle in text}


def vjp_blocks(op_name: str) -> list[CodeBlock]:
    """``Tensor.chain_rule`` (its VJP call marked) and the op's own ``vjp`` (its return marked)."""
    chain = block(Tensor.chain_rule, role="vjp")
    chain.marks = _line_containing(chain, ".vjp(")
    cls = _op_class(op_name)
    if cls is None or not hasattr(cls, "vjp"):
        return [chain]
    vjp = block(cls.vjp, title=f"{cls.__module__}.{cls.__qualname__}.vjp  (op '{op_name}')", role="vjp")
    vjp.marks = _return_lines(vjp)
    return [chain, vjp]


def leaf_blocks() -> list[CodeBlock]:
    """``Tensor.accumulate_derivative`` with its ``.grad`` update marked."""
    acc = block(Tensor.accumulate_derivative, role="vjp")
    acc.marks = _line_containing(acc, "self.grad =")
    return [acc]


def forward_blocks(op_name: str) -> list[CodeBlock]:
    """The op's ``forward`` (its return marked), or nothing for an unknown op."""
    cls = _op_class(op_name)
    if cls is None:
        return []
    fwd = block(cls.forward, title=f"{cls.__module__}.{cls.__qualname__}.forward  (op '{op_name}')", role="forward")
    fwd.marks = _return_lines(fwd)
    return [fwd]


def walk_blocks(strategy: str) -> list[CodeBlock]:
    """The functions that walk the graph for ``strategy`` (the lines its events come from)."""
    return [block(f) for f in _walks().get(strategy, [autodiff.propagate])]


# The line that does an event's work, found by what it says: the observer is told right after the work
# (events are emitted around the walk's lines, not instead of them), so the work is the nearest line at or
# above the one that built the event. A step lights the line that took the node's adjoint, the VJP call,
# the addition to the running total and the leaf's accumulation, never an observer call.
_WORK = {
    "send": re.compile(r"\.chain_rule\("),                       # the VJP call
    "accumulate": re.compile(r"\badd\(|\+ contribution"),                # the running total
    "leaf": re.compile(r"\.accumulate_derivative\("),            # a leaf's .grad += adjoint
}
_WORK_REACH = 8  # lines above the event's own line where its work may be


def work_line(b: CodeBlock, kind: str, line: int) -> int:
    """The line of ``b`` that did the work an event of ``kind`` built at ``line`` reports (``line`` itself
    when no such line is near: an event that is its own work, as a lost contribution)."""
    pattern = _WORK.get(kind)
    if pattern is None:
        return line
    for n, text in reversed(b.lines):
        if n > line:
            continue
        if n < line - _WORK_REACH:
            break
        code = text.split("#", 1)[0]
        if pattern.search(code):
            return n
    return line


def mark_events(blocks: list[CodeBlock], events: list) -> dict[int, list]:
    """Mark the line that did each event's work in the block that holds it, counted: a node's VJP call once
    per node (however many contributions it sent), every other work once per event.

    Returns block index -> the events placed there (events without a location, or from code no
    block shows, are left out).
    """
    placed: dict[int, list] = {}
    calls: set[tuple] = set()
    for e in events:
        where = getattr(e, "where", None)
        if not where:
            continue
        _, path, line = where
        for i, b in enumerate(blocks):
            if _contains(b, path, line):
                if e.kind == "visit":  # taking a node is no work of its own: its VJP call or accumulation is
                    placed.setdefault(i, []).append(e)
                    break
                n = work_line(b, e.kind, line)
                if e.kind == "send":
                    if (i, n, e.node, e.step) in calls:
                        break
                    calls.add((i, n, e.node, e.step))
                b.marks[n] = b.marks.get(n, 0) + 1
                placed.setdefault(i, []).append(e)
                break
    return placed


def _frame_parts(trace, frameset, index: int):
    """(phase, forward steps, backward events) shown by frame ``index`` (the frames' own grouping)."""
    frames = frameset.frames
    index = min(max(int(index), 0), len(frames) - 1)
    fr = frames[index]
    if fr.phase == "forward":
        if index == 0:
            return "inputs", [], []
        shown = set(frameset.node_ids)
        fsteps = [s for s in trace.forward if s.node in shown]
        per = max(1, getattr(frameset, "forward_per_frame", 1))
        k = index - 1
        return "forward", fsteps[k * per:(k + 1) * per], []
    if fr.phase == "backward":
        first = next(f.index for f in frames if f.phase == "backward")
        per = max(1, getattr(frameset, "backward_per_frame", 1))
        groups = trace.steps()
        k = index - first
        return "backward", [], [e for g in groups[k * per:(k + 1) * per] for e in g]
    return fr.phase, [], []


def frame_code(trace, frameset, index: int, strategy: str | None = None) -> CodeView:
    """The engine code that frame ``index`` of ``frameset`` (built from ``trace``) executed.

    Backward frames: the strategy's walk with the lines this step ran marked (from the events'
    own locations), then the node's VJP (``chain_rule`` and the op's ``vjp``) or, for a leaf,
    ``accumulate_derivative``. Forward frames: the op's ``forward``. Other frames: the walk, unmarked.
    """
    strategy = strategy or getattr(trace, "strategy", "topological")
    nodes = {n.id: n for n in trace.graph.nodes}
    phase, fsteps, events = _frame_parts(trace, frameset, index)
    if phase == "inputs":
        return CodeView(walk_blocks(strategy), "The inputs are leaves: tensors made by the user, no op, no history.")
    if phase == "forward":
        blocks: list[CodeBlock] = []
        seen: set[str] = set()
        for s in fsteps:
            if s.op not in seen:
                seen.add(s.op)
                blocks += forward_blocks(s.op)
        ops_run = ", ".join(s.text for s in fsteps)
        return CodeView(blocks, f"Forward: the program calls the op, whose forward computes the value ({ops_run}). "
                                "The backward pass has not started.")
    walk = walk_blocks(strategy)
    if phase != "backward":
        if getattr(trace, "error", None):
            return CodeView(walk, f"The backward pass failed: {trace.error}")
        return CodeView(walk, "The backward pass is done: every leaf's .grad holds its gradient.")
    mark_events(walk, events)
    visited = [e for e in events if e.kind == "visit"]
    extra: list[CodeBlock] = []
    done_ops: set[str] = set()
    leaf = False
    for e in visited:
        node = nodes.get(e.node)
        if node is None:
            continue
        if node.op == "leaf":
            leaf = True
        elif node.op not in done_ops:
            done_ops.add(node.op)
            extra += vjp_blocks(node.op)
    if leaf:
        extra += leaf_blocks()
    names = ", ".join(nodes[e.node].name for e in visited if e.node in nodes)
    caption = (f"Backward: taking {names}. Highlighted: the lines of the walk that ran in this step, "
               "then the VJP it called." if names else "Backward: a step without a node taken.")
    return CodeView(walk + extra, caption)


# Slide 27's own reverse mode (HIPS autograd's backward_pass, as the lecture shows it), beside the engine's: the
# same step lights the same work in both. toposort(end_node) lists the output first.
SLIDE_BACKWARD_PASS = (
    "def backward_pass(g, end_node):\n"
    "    outgrads = {end_node: g}\n"
    "    for node in toposort(end_node):\n"
    "        outgrad = outgrads.pop(node)\n"
    "        fun, value, args, kwargs, argnums = node.recipe\n"
    "        for argnum, parent in zip(argnums, node.parents):\n"
    "            vjp = primitive_vjps[fun][argnum]\n"
    "            parent_grad = vjp(outgrad, value, *args, **kwargs)\n"
    "            outgrads[parent] = add_outgrads(outgrads.get(parent), parent_grad)\n"
    "    return outgrad"
)
#: where the slide's code is from, and what the engine's panel is (each panel says which code is on screen)
SLIDE_SOURCE = "lecture 5, slide 27 (HIPS autograd)"
SLIDE_TITLE = "backward_pass — the slide's code"
ENGINE_HEADING = "The engine's own code (what ran), not the slide's"

# the slide's lines that do an event's work: taking a node's complete adjoint (outgrads.pop), a VJP looked up and
# called per parent, the sum into the parent's entry (add_outgrads); the output's step starts from outgrads = {end_node: g}
_SLIDE_WORK = {"seed": ("outgrads = {end_node: g}",),
               "visit": ("outgrad = outgrads.pop(node)",),
               "send": ("vjp = primitive_vjps[fun][argnum]", "parent_grad = vjp("),
               "accumulate": ("outgrads[parent] = add_outgrads(",)}


def lecture_block(events: list | None = None, output: int | None = None) -> CodeBlock:
    """Slide 27's ``backward_pass`` (numbered from 1), with the lines that do the work of ``events`` (the engine's
    events of one step) marked as the engine's own lines are, counted: the node taken (``outgrads.pop``), each
    contribution (the VJP looked up and called), each sum into a parent (``add_outgrads``); the step that takes
    ``output`` (the graph's output node id) also lights ``outgrads = {end_node: g}``. A leaf's gradient is what it
    pops (the slide has no separate accumulation line)."""
    lines = list(enumerate(SLIDE_BACKWARD_PASS.split("\n"), start=1))
    b = CodeBlock(SLIDE_TITLE, SLIDE_SOURCE, lines, {}, "reference")

    def mark(kind: str) -> None:
        for needle in _SLIDE_WORK.get(kind, ()):
            for n, text in lines:
                if needle in text:
                    b.marks[n] = b.marks.get(n, 0) + 1

    for e in events or []:
        kind = getattr(e, "kind", "")
        if kind == "visit" and output is not None and e.node == output:
            mark("seed")
        mark(kind)
    return b


def step_events(trace, frameset, index: int) -> list:
    """The backward events frame ``index`` shows (none for a forward frame)."""
    return _frame_parts(trace, frameset, index)[2]


# ---------------------------------------------------------------------------
# HTML

_CSS = """
.adx-code {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: {font}px;
             line-height: 1.35; margin: 0 0 0.6em 0; border: 1px solid #d1d5db; border-radius: 6px;
             overflow-x: auto; background: #fafafa; }}
.adx-code .t {{ font-family: inherit; font-weight: 600; padding: 0.25em 0.6em; background: #eef2f7;
               border-bottom: 1px solid #d1d5db; white-space: normal; overflow-wrap: break-word; word-break: normal; }}
.adx-code .t .p {{ font-weight: 400; color: #4b5563; }}
.adx-code .l {{ display: flex; }}
.adx-code .c {{ white-space: pre-wrap; overflow-wrap: break-word; word-break: normal; min-width: 0;
               padding-left: 2ch; text-indent: -2ch; }}
.adx-code .n {{ color: #6b7280; text-align: right; width: 2.1em; padding-right: 0.4em; flex: none; user-select: none; }}
.adx-code .m {{ color: #92400e; width: 1.5em; flex: none; font-weight: 700; }}
.adx-code .l.hl {{ background: #fde68a; }}
.adx-code .l.hl .n {{ color: #111827; font-weight: 700; }}
.adx-code .l.vjp.hl {{ background: #bfdbfe; }}
.adx-code .l.gap .c {{ color: #6b7280; font-style: italic; }}
.adx-heading {{ font-weight: 600; margin: 0.2em 0 0.3em 0; }}
"""
_STICKY_CSS = """
.adx-scroll .adx-code { overflow: visible; }
.adx-scroll .adx-code .t { position: sticky; top: 0; z-index: 1; box-shadow: 0 -8px 0 #fff; }
"""
# a scrolling panel (a projector's) keeps each block's title row stuck to its top while that block's lines are on
# screen: lit lines deep in a long function still say whose they are, at no cost in height (the block's own box
# no longer scrolls sideways there: its lines wrap); its white shadow above it covers the bottom of the row scrolled
# out over it, which Chromium paints a few pixels above the panel's top in a page scaled for a small projector


def gap_text(first: int, last: int) -> str:
    """The row shown where a block's line numbers jump: the lines left out (the docstring: :func:`source_lines`
    drops it and nothing else)."""
    return f"… lines {first}–{last}: the docstring" if last > first else f"… line {first}: the docstring"


# where a code line may wrap besides its spaces: after a dot between names (``node.|accumulate_derivative``) and
# after an opening bracket (``accumulate_derivative(|adjoint)``); a number's point (1.5) is no such place. A name
# wider than its column then wraps at its punctuation, not in the middle of a word ("adjoin|t" on a projector);
# only a single name wider than the whole column is still broken inside (the CSS's overflow-wrap: break-word).
_WRAP_AFTER = re.compile(r"(?<=[A-Za-z_)\]])\.(?=[A-Za-z_])|[(\[](?=[^\s)\]])")
WBR = "<wbr>"


def code_line_html(text: str) -> str:
    """A code line as HTML: escaped, with a break opportunity (``<wbr>``, no text) at :data:`_WRAP_AFTER`."""
    return _WRAP_AFTER.sub(lambda m: m.group(0) + WBR, html.escape(text))


def to_html(view: CodeView | list[CodeBlock], font_px: int = 13, test_id: str = "code-panel",
            max_height_px: int | None = None, heading: str = "", narrow: bool = False) -> str:
    """The blocks as an HTML fragment (one ``<style>`` and a ``div`` per block).

    Code is text: every line and title is escaped. Highlighted lines carry class ``hl`` and every
    line ``data-line`` (its number in the file), so a browser test can read where the highlight is.
    ``max_height_px``: the panel scrolls beyond this height (presentation mode: one screen);
    :data:`SCROLL_TO_HIGHLIGHT` brings its first highlighted line into view. Such a projector panel indents
    each level by 2 columns instead of 4 (the same code, narrower), so the lines a step lights fit its column
    without wrapping. ``heading``: a line over the blocks saying whose code this is (outside the scrolling box,
    so it stays on screen: ``ENGINE_HEADING`` where the engine's code stands beside the slide's). ``narrow``: indent
    by 2 as a projector panel does, without scrolling (slide 27's ten lines, whole, beside the graphs).
    """
    blocks = view.blocks if isinstance(view, CodeView) else view

    def indent(text: str) -> int:
        return len(text) - len(text.lstrip(" "))
    box = f' class="adx-scroll" style="max-height: {int(max_height_px)}px; overflow-y: auto"' if max_height_px else ""
    out = [f"<style>{_CSS.format(font=int(font_px))}{_STICKY_CSS if max_height_px else ''}</style>"]
    if heading:
        out.append(f'<div class="adx-heading" data-testid="{html.escape(test_id)}-heading">{html.escape(heading)}</div>')
    out.append(f'<div data-testid="{html.escape(test_id)}"{box}>')
    for b in blocks:
        out.append(f'<div class="adx-code" data-role="{html.escape(b.role)}">'
                   f'<div class="t">{html.escape(b.title)} <span class="p">· {html.escape(b.path)}</span></div>')
        # drop the indentation every shown line shares (a method's class level): narrow columns
        common = min((indent(t) for _, t in b.lines if t.strip()), default=0)
        prev = None
        for n, text in b.lines:
            if prev is not None and n > prev + 1:  # lines left out (a docstring): say so where the numbers jump
                out.append(f'<div class="l gap" data-gap="{prev + 1}-{n - 1}"><span class="n">⋮</span>'
                           f'<span class="m"></span><span class="c">{html.escape(gap_text(prev + 1, n - 1))}'
                           '</span></div>')
            prev = n
            text = text[common:]
            if max_height_px or narrow:
                text = " " * (indent(text) // 2) + text.lstrip(" ")
            count = b.marks.get(n)
            cls = "l" + (" hl" if count else "") + (" vjp" if b.role in ("vjp", "forward") else "")
            mark = f"×{count}" if count and count > 1 else ("▶" if count else "")
            out.append(f'<div class="{cls}" data-line="{n}"><span class="n">{n}</span>'
                       f'<span class="m">{mark}</span><span class="c">{code_line_html(text)}</span></div>')
        out.append("</div>")
    out.append("</div>")
    return "".join(out)


# a fixed script (no data in it): each scrolling code panel centres the highlighted lines of its first block
# that has any (the walk), so the lines a step ran are on screen however long the code is
def scroll_to_highlight(step: int) -> str:
    """:data:`SCROLL_TO_HIGHLIGHT` marked with the step it follows: Streamlit re-runs a script element only when
    its content changes, and a Step replaces the panels (the same script would leave them at the top)."""
    return SCROLL_TO_HIGHLIGHT.replace("<script>", f"<script>/* step {int(step)} */", 1)


# Whole rows only: the window starts at a row's top and ends at the last row that fits under its height (a
# half-cut line at the top or bottom of the panel reads as clipped code). The window ends at least 16 px over the
# screen's bottom edge when the panel starts on the screen (a 1366 x 768 projector shows the 1080-pixel page
# scaled: a 300-pixel panel under the graphs ran past the edge), and the first lit row sits one row from the
# window's top, so the lines a step ran are read top-down inside the first screen. When the lit rows are further
# apart than the window holds, the rows between them are folded into one "⋮ lines a–b folded" row (one row of
# context kept on each side, none where the window is too short for it), so every lit row is in view at once; lit
# rows that still do not fit (long lines wrapped in a narrow column: slide 27's output step at 23 px) make the window
# taller, as far as the screen's bottom edge allows (a panel under it moves down and shrinks to what is left); a
# block's title row sticks to the window's top (the function's name stays on screen), the rows get the rest; the
# page without presentation mode shows them.
# The script is the same on every run but for its step mark (no data in it).
SCROLL_TO_HIGHLIGHT = """<script>(() => { const go = box => {
  box.querySelectorAll('.jsgap').forEach(g => g.remove());
  box.querySelectorAll('[data-fold]').forEach(r => { r.style.display = ''; delete r.dataset.fold; });
  const max0 = parseFloat(box.dataset.max || box.style.maxHeight) || box.clientHeight; box.dataset.max = max0;
  box.style.maxHeight = max0 + 'px';
  const first = [...box.querySelectorAll('.adx-code')].find(b => b.querySelector('.l.hl'));
  const hl = () => first ? [...first.querySelectorAll('.l.hl')] : [];
  const k = box.getBoundingClientRect().height / (box.offsetHeight || 1) || 1;  // a scaled page (projector)
  const at = el => (el.getBoundingClientRect().top - box.getBoundingClientRect().top) / k + box.scrollTop;
  // one row's height: the shortest of the first rows (a long line wraps onto two)
  const heights = [...box.querySelectorAll('.adx-code .l')].slice(0, 12).map(r => r.offsetHeight).filter(v => v > 0);
  const rowH = heights.length ? Math.min(...heights) : 20;
  const top0 = box.getBoundingClientRect().top;
  const onScreen = (window.innerHeight - top0) / k;   // what is left of the first screen under the panel's top
  // the screen's bottom edge, less a margin of 16 screen px (a lit row ending 2 px over a projector's edge read as
  // cut off from the back row)
  const limit = (top0 >= 0 && onScreen >= 4 * rowH) ? onScreen - 16 / k : Infinity;
  let max = Math.min(max0, limit);
  const span = () => { const h = hl(); return h.length ? at(h[h.length - 1]) + h[h.length - 1].offsetHeight - at(h[0]) : 0; };
  // the block's title row stays at the window's top (stuck there once its block scrolls): the rows get the rest
  const title = first ? first.querySelector('.t') : null;
  const titleH = title ? title.offsetHeight : 0;
  let room = max - titleH;
  // rows between lit ones folded, one row of context kept on each side; none where even that leaves no room
  const fold = keep => {
    box.querySelectorAll('.jsgap').forEach(g => g.remove());
    box.querySelectorAll('[data-fold]').forEach(r => { r.style.display = ''; delete r.dataset.fold; });
    const lines = [...first.querySelectorAll('.l')];
    const lit = lines.map((r, i) => r.classList.contains('hl') ? i : -1).filter(i => i >= 0);
    for (let j = 0; j + 1 < lit.length; j++) {
      const a = lit[j] + 1 + keep, b = lit[j + 1] - 1 - keep;   // rows a..b folded
      if (b < a) continue;
      for (let i = a; i <= b; i++) { lines[i].style.display = 'none'; lines[i].dataset.fold = '1'; }
      const from = lines[a].dataset.line || '', to = lines[b].dataset.line || '';
      const gap = document.createElement('div'); gap.className = 'l gap jsgap';
      for (const [c, t] of [['n', '⋮'], ['m', ''], ['c', from === to ? `… line ${from} folded`
                                                      : `… lines ${from}–${to} folded`]]) {
        const span = document.createElement('span'); span.className = c; span.textContent = t; gap.append(span); }
      lines[a].before(gap);
    } };
  if (hl().length > 1 && span() + 2 * rowH > room) {
    fold(1);
    if (span() > room) fold(0);
  }
  // lit rows that still do not fit (long lines wrapped in a narrow column): the window grows to hold them, as far
  // as the screen's bottom edge allows
  if (span() > room && max < limit) { max = Math.min(limit, max + span() - room + 1); room = max - titleH; }
  const h = hl();
  // a title row is where its block starts (measured where it is stuck, it would sit wherever the box scrolled to)
  const rows = [...box.querySelectorAll('.adx-code .t, .adx-code .l')].filter(r => r.offsetHeight > 0)
    .map(r => { const y = r.classList.contains('t') ? at(r.parentElement) : at(r); return [y, y + r.offsetHeight]; });
  let want = 0;
  if (h.length) { const top = at(h[0]), bottom = at(h[h.length - 1]) + h[h.length - 1].offsetHeight;
                  want = (bottom - top) + 2 * rowH <= room ? top - rowH : top; }
  // the first row at or below the wanted top (at or above the first lit row: the lit rows stay whole in view)
  let start = Infinity; for (const [t] of rows) { if (t >= want - 0.5) start = Math.min(start, t); }
  if (!isFinite(start)) start = 0;
  // the title row sticks over the window's top once its block has scrolled: the window starts that much higher,
  // so the row chosen above is the first whole one under the title (the title's own row when it fits)
  if (title && start > at(first) + 0.5) start = Math.max(at(first), start - title.offsetHeight);
  let end = start; for (const [t, b] of rows) { if (t >= start - 0.5 && b <= start + max + 0.5) end = Math.max(end, b); }
  if (end > start) box.style.maxHeight = (end - start) + 'px';
  box.scrollTop = start; };
  // laid out again whenever a panel is new or moved (the charts above it draw later, more so on a loaded
  // machine) or the window changed (a projector plugged in, full screen: the page is laid out wider or narrower,
  // its lines wrap anew and a window measured before slices a row): checked every frame until nothing has moved
  // for about five seconds, then twice a second and at every resize for as long as the page is open (one watch
  // per page, whichever step's script installed it)
  const key = box => { const r = box.getBoundingClientRect();
    return [Math.round(r.top), box.scrollHeight, box.clientWidth, box.querySelectorAll('.l.hl').length,
            window.innerHeight, window.innerWidth].join(); };
  const check = () => { let moved = false;
    document.querySelectorAll('.adx-scroll').forEach(box => {
      if (box.dataset.key !== key(box)) { go(box); box.dataset.key = key(box); moved = true; } });
    return moved; };
  window.__adxCodeCheck = check;
  if (!window.__adxCodeWatch) {
    window.__adxCodeWatch = setInterval(() => window.__adxCodeCheck(), 500);
    window.addEventListener('resize', () => window.__adxCodeCheck());
  }
  let quiet = 0, frames = 0;
  const tick = () => { quiet = check() ? 0 : quiet + 1;
    if (quiet < 300 && ++frames < 7200) requestAnimationFrame(tick); };
  tick(); })();</script>"""


def failed_code(strategy: str, error: str) -> CodeView:
    """The walk of a strategy whose backward pass raised (no events: nothing is marked)."""
    return CodeView(walk_blocks(strategy), f"This order raised before any step ran: {error}")


def font_px(presenting: bool) -> int:
    """Code size: readable from the back row in presentation mode, compact otherwise."""
    return 18 if presenting else 13  # 18: the presentation floor (tests/browser/test_presentation.py)
