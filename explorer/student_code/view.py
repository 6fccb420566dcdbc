"""Page 13 (Your HW2 code): the student's backward order animated beside the engine's, first wrong node marked.

The student's recorded protocol calls become the same plain events the engine's observer gives
(``visit``, ``send``, ``accumulate``, ``leaf``, ``lost``), so the page kit draws both orders with one
renderer on one placement, as the Backprop orders page does. Nothing here runs the student's code.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from engine import autodiff
from explorer.explain import record_execution
from explorer.explain.graph import adjoint_label, adjoint_names, plain_value
from explorer.explain.numbers import fmt
from explorer.explain.trace import BackwardEvent, Trace

from ..kit.backward_view import WRONG_MARK, shared_backward_figures, shared_forward_figures
from ..kit.code_panel import CodeBlock, step_events
from ..kit.frames import FrameSet, build_frames
from ..kit.layout import collapse_big, collapse_composites
from ..kit.plotly_figure import figure_dict, plan
from .diagnose import Reference, Verdict, _num
from .graphs import LECTURE_GRAPHS, spec_for
from .optin import (CLASS_SERVER_ENV, OPTION, PAGE_PURPOSE, START_COMMANDS, START_HINT, OptIn,  # noqa: F401
                    missing_notice, opt_in, server_notes)
from .report import StudentReport
from .samples import BY_KEY as SAMPLES_BY_KEY, DEFAULT as DEFAULT_SAMPLE, SAMPLES, Sample

ORDER_WIDTH = 460      # px per graph: the two orders side by side in a 1400 px window (as Backprop orders)
# px a graph may be tall before it shrinks (at most to the renderer's MIN_SCALE): both graphs, whole, on the first
# screen under the step buttons (measured in Chromium: 1400x900 normal; presenting at 1920x1080, 1366x768 and
# 1280x720, where a graph too tall to shrink legibly is shown through the renderer's window that follows the step).
# Presenting, the two graphs stand one above the other in the left PRESENT_GRAPH_SHARE of the page (the slide
# example is 3 times wider than tall: so its texts can be 23 px, 16 px on a 1366 x 768 projector, its backward graph's
# ranks as far apart as a contribution is wide, as on Backprop orders) and the step's captions, the code that ran and
# the verdict fill the rest beside them.
GRAPH_HEIGHT, PRESENT_GRAPH_HEIGHT = 510, 380
PRESENT_GRAPH_SHARE = 0.68


def graph_height(presenting: bool) -> int:
    """The tallest the graphs may be drawn (px on screen, after presentation mode's enlargement)."""
    return PRESENT_GRAPH_HEIGHT if presenting else GRAPH_HEIGHT
# px the lit backpropagate may take in presentation mode before it scrolls (its lit lines kept in view): beside
# the two graphs, with the verdict under it, on the first screen at 1920x1080, 1366x768 and 1280x720
PRESENT_CODE_PX = 380
STUDENT_LABEL = "Your code"
SIDES_NOTE = "Left: the engine; right: yours."
STACKED_SIDES_NOTE = "Top: the engine; below it: yours."   # presenting, the graphs stand one above the other
SAMPLE_SIDES_NOTE = "Left: the engine; right: the sample."
ENGINE_LABEL = "The engine (topological order)"
# the page's own solutions, run like a student's file (a class server runs them: they are our code)
SAMPLE_NOTE = ("The project's own sample solution, not yours: it runs in the same sandboxed process a student's "
               "file would.")
SAMPLE_STORE_BYTES = 64 << 20   # every sample's page report at once (4.5-11.2 MB each, 36 MB together): none evicted


def sample_label(key: str, neutral: bool = False) -> str:
    """How the page names a bundled sample's side of the comparison ("Sample: ...", never "Your code");
    ``neutral`` (on a projector): by its approach only, no verdict ("Correct: ...", "Forgets is_constant()")."""
    s = SAMPLES_BY_KEY[key]
    return f"Sample: {s.shown_label if neutral else s.label}"


def sample_choices() -> list[str]:
    """The samples' keys in the picker's order (the default, breadth-first first touch, first)."""
    return [s.key for s in SAMPLES]


def wrong_prefix(label: str) -> str:
    """The first-wrong-node line's opening for this side: the student's own code, or a sample."""
    return "Your first wrong node: " if label == STUDENT_LABEL else "The sample's first wrong node: "


@dataclass
class Side:
    label: str
    trace: Trace
    frameset: FrameSet
    figure: dict
    # the backward graph in the slides' notation (x̄ nodes, reversed edges carrying the contributions), on one
    # placement with the other side's: what presentation mode shows, as Backprop orders does
    backward_figure: dict | None = None
    # the forward graph with values only, on one placement with the other side's (the forward pass is the
    # engine's for both): what presentation mode shows in the backward graph's place while the forward pass runs,
    # when the adjoints are all still empty (as Backprop orders does)
    forward_figure: dict | None = None

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames)


@dataclass
class GraphView:
    """One graph of the report, ready to step: the engine's order and the student's on one placement,
    the verdict, and the frame (0-based, of the student's side) where the first wrong node is marked."""
    key: str
    title: str
    verdict: Verdict
    engine: Side
    student: Side | None
    wrong_frame: int | None = None
    wrong_text: str = ""
    # the frame from which the verdict is written out (the red note, the ✘ line): the wrong frame, or, where the
    # reason is a contribution lost, the frame where that contribution arrives; before it the graph marks the node
    # (✘) but no text names the reason or the engine's value (the class sees the loss happen first)
    verdict_frame: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n_frames(self) -> int:
        return max(self.engine.n_frames, self.student.n_frames if self.student else 0)


def consumers(ref: Reference) -> dict[int, int]:
    """How many contributions each node should receive (its consumers that take a gradient)."""
    counts: dict[int, int] = {}
    kinds = ref.built.kinds
    for c, ps in ref.built.parents.items():
        if kinds.get(c) != "op":
            continue
        for p in ps:
            if kinds.get(p) != "constant":
                counts[p] = counts.get(p, 0) + 1
    return counts


def student_events(events: list[list], ref: Reference) -> list[BackwardEvent]:
    """The student's protocol calls as the page kit's backward events: each ``chain_rule`` call is a step
    (``visit`` with the derivative passed in, then a ``send`` per contribution handed back, each followed by
    the receiving node's running sum, or ``lost`` when that node had already passed its adjoint on for good);
    each ``accumulate_derivative`` is a step of its own (``visit`` + ``leaf``)."""
    names, kinds = ref.built.names, ref.built.kinds
    # the adjoints named as every page names them (the output's x̄7 where the program called it f)
    adjoint_of = adjoint_names(ref.built.forward.graph) if ref.built.forward is not None else {}
    expected = consumers(ref)
    last_take: dict[int, int] = {}
    for i, (kind, node, _, _) in enumerate(events):
        if kind in ("vjp", "acc"):
            last_take[node] = i
    taken: set[int] = set()
    received: dict[int, int] = {}
    total: dict[int, Any] = {}
    out: list[BackwardEvent] = []
    step = -1

    def add(kind, node, parent, value, rec=None, exp=None, text=""):
        out.append(BackwardEvent(len(out), kind, step, node, parent, _shown(value), rec, exp, text))

    for i, (kind, node, parent, value) in enumerate(events):
        nm = names.get(node, f"#{node}")
        if kind == "vjp":
            step += 1
            taken.add(node)
            add("visit", node, None, value, text=f"your code: chain_rule({nm}) with {adjoint_label(adjoint_of, node, nm)} = {_f(value)}")
        elif kind == "acc":
            step += 1
            taken.add(node)
            add("visit", node, None, value, text=f"your code: {nm}.accumulate_derivative({_f(value)})")
            add("leaf", node, None, value, text=f"{nm}.grad += {_f(value)}")
        elif kind == "send" and parent is not None:
            pn = names.get(parent, f"#{parent}")
            add("send", node, parent, value, text=f"{nm} → {pn}: VJP contribution {_f(value)}")
            if kinds.get(parent) == "constant":
                continue
            received[parent] = received.get(parent, 0) + 1
            want = expected.get(parent, 1)
            if parent in taken and last_take.get(parent, -1) < i:
                add("lost", parent, None, value, received[parent], want,
                    f"LOST: {_f(value)} reached {pn} after {pn} was taken: it is never added")
                continue
            v = _num(value)
            total[parent] = v if parent not in total or v is None or total[parent] is None else total[parent] + v
            add("accumulate", parent, None, total[parent], received[parent], want,
                f"{adjoint_label(adjoint_of, parent, pn)} = {_f(total[parent])} ({received[parent]} of {want} received)")
    return out


def _shown(value):
    a = _num(value)
    return None if a is None else plain_value(a)


def _f(value) -> str:
    a = _num(value)
    return "?" if a is None else fmt(plain_value(a))


def student_trace(engine_trace: Trace, verdict: Verdict, events: list[list], ref: Reference,
                  label: str = STUDENT_LABEL) -> Trace:
    """The student's backward pass as a :class:`Trace` over the engine's graph (the forward pass is the
    engine's own: the student's code only runs backward); ``label`` names it (a sample's label for a sample)."""
    bw = student_events(events, ref)
    names = ref.built.names
    grads = {}
    for name, leaf in ref.built.leaves.items():
        nid = ref.built.node_of[leaf.unique_id]
        a = _num(verdict.adjoints.get(nid))
        grads[name] = plain_value(a) if a is not None else None
    adjoints = {n: plain_value(_num(a)) for n, a in verdict.adjoints.items() if _num(a) is not None}
    error = verdict.headline if verdict.error is not None else None
    vjp = sum(1 for e in events if e[0] == "vjp")
    return Trace(label, engine_trace.graph, engine_trace.forward, bw, grads, adjoints, vjp, 0,
                 engine_trace.forward_ops, len(bw), error, None, [], [n for n in verdict.adjoints if n in names])


def done_caption(grads: Mapping[str, Any]) -> str:
    """The last frame's caption for the student's side: the gradients its code accumulated, and the inputs it
    never accumulated into (the engine's frames would say every input holds its gradient)."""
    have = {k: v for k, v in grads.items() if v is not None}
    missing = [k for k, v in grads.items() if v is None]
    text = "Gradients: " + ", ".join(f"∂f/∂{k} = {fmt(v)}" for k, v in have.items()) if have else \
        "Done: no input holds a gradient"
    if missing:
        text += ("; " if have else " (") + "accumulate_derivative never called on " + ", ".join(missing) + \
            ("" if have else ")")
    return text


def _frame_of_step(frameset: FrameSet, trace: Trace, step: int) -> int:
    first = next((f.index for f in frameset.frames if f.phase == "backward"), len(frameset.frames) - 1)
    per = max(1, int(frameset.backward_per_frame or 1))
    groups = [g[0].step for g in trace.steps()]
    g = groups.index(step) if step in groups else len(groups) - 1
    return min(first + max(g, 0) // per, len(frameset.frames) - 1)


def mark_wrong(frameset: FrameSet, trace: Trace, node: int, text: str) -> int | None:
    """Mark ``node`` as the first wrong node (red outline, "✘" after its adjoint) in every frame from the one
    where it passed its wrong adjoint on (its last visit or accumulation; the last frame when it never got
    one). Returns that frame (0-based), or None when the node is not drawn."""
    if node not in frameset.node_ids:
        return None
    takes = [e for e in trace.backward if e.node == node and e.kind in ("visit", "leaf")]
    start = _frame_of_step(frameset, trace, takes[-1].step) if takes else len(frameset.frames) - 1
    i = frameset.node_ids.index(node)
    for f in frameset.frames[start:]:
        f.node_state[i] = "lost"
        if f.node_adjoint and not f.node_adjoint[i].endswith(WRONG_MARK):
            f.node_adjoint[i] = (f.node_adjoint[i] or "no adjoint") + WRONG_MARK
    frameset.frames[start].warning = text
    return start


def graph_view(report: StudentReport, key: str, width: int = ORDER_WIDTH,
               max_height: int = GRAPH_HEIGHT, label: str = STUDENT_LABEL, forward_graphs: bool = False) -> GraphView:
    """The engine's and the student's backward passes on graph ``key`` (a lecture graph or a random one),
    stepping together on one placement; ``label`` names the student's side (:func:`sample_label` for a
    bundled sample). ``forward_graphs``: also each side's forward graph with values only
    (:func:`~explorer.kit.backward_view.shared_forward_figures`, as Backprop orders on a projector), what
    presentation mode shows during the forward steps."""
    spec = spec_for(key)
    verdict = report.verdicts[key]
    ref = report.references[key]
    engine_trace = record_execution(spec.program, spec.inputs, strategy="topological")
    raw = report.run.graphs.get(key) if report.run is not None else None
    full = collapse_composites(engine_trace).graph.without_constants()

    def drawn(tr: Trace) -> Trace:
        return collapse_big(collapse_composites(tr), full)[0]

    shown = collapse_big(collapse_composites(engine_trace), full)[1]
    eng_shown = drawn(engine_trace)
    eng_fs = build_frames(eng_shown, shown)
    stu_shown = stu_fs = None
    if raw is not None:
        stu_shown = drawn(student_trace(engine_trace, verdict, raw["backprop"]["events"], ref, label))
        stu_fs = build_frames(stu_shown, shown)
        if stu_fs.frames and stu_fs.frames[-1].phase == "done" and stu_shown.error is None:
            stu_fs.frames[-1].caption = done_caption(stu_shown.grads)
    wrong_frame, verdict_frame, wrong_text = None, None, ""
    if stu_fs is not None and verdict.node is not None:
        why = verdict.details[0] if verdict.details else ""
        wrong_text = wrong_prefix(label) + verdict.headline.split("first wrong node ", 1)[-1] + (
            f". Why: {why}" if why else "")
        wrong_frame = verdict_frame = mark_wrong(stu_fs, stu_shown, verdict.node, wrong_text)
        lost = [e for e in stu_shown.backward if e.kind == "lost" and e.node == verdict.node]
        if wrong_frame is not None and lost and "lost" in why:
            verdict_frame = max(wrong_frame, _frame_of_step(stu_fs, stu_shown, lost[0].step))
    frames = eng_fs.frames + (stu_fs.frames if stu_fs is not None else [])
    union = FrameSet(eng_fs.node_ids, frames, heads=eng_fs.heads, edges=eng_fs.edges)
    drawing = plan(union, shown, width, max_height=max_height)
    engine = Side(ENGINE_LABEL, eng_shown, eng_fs, figure_dict(eng_fs, shown, drawing))
    student = Side(label, stu_shown, stu_fs, figure_dict(stu_fs, shown, drawing)) if stu_fs else None
    sides = [side for side in (engine, student) if side is not None]
    for side, back in zip(sides, shared_backward_figures([side.frameset for side in sides], shown, width,
                                                         max_height)):
        side.backward_figure = back
    if forward_graphs:
        for side, front in zip(sides, shared_forward_figures([side.frameset for side in sides], shown, width,
                                                             max_height)):
            side.forward_figure = front
    return GraphView(key, spec.title, verdict, engine, student, wrong_frame, wrong_text, verdict_frame=verdict_frame)


def work_lines(source: str, function: str = "backpropagate") -> dict[str, list[int]]:
    """The lines of ``function`` in ``source`` (read with :mod:`ast`, never run) that do a backward step's work.

    Returns ``{"vjp": [...], "leaf": [...]}`` (1-based lines of ``source``): ``vjp`` the ``chain_rule`` call and
    the lines of the loop over what it hands back that use the contribution (add it to the running total, or
    pass it on); ``leaf`` the ``accumulate_derivative`` call. Empty lists when the function is not there.

    Raises:
        SyntaxError: ``source`` is not Python.
    """
    out: dict[str, set[int]] = {"vjp": set(), "leaf": set()}
    fn = next((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == function),
              None)
    if fn is None:
        return {k: [] for k in out}

    def calls(node: ast.AST, attr: str) -> list[ast.Call]:
        return [c for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                and c.func.attr == attr]

    for c in calls(fn, "accumulate_derivative"):
        out["leaf"].add(c.lineno)
    for c in calls(fn, "chain_rule"):
        out["vjp"].add(c.lineno)
    for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For) and calls(n.iter, "chain_rule")):
        # the names the loop binds from chain_rule's pairs, the parent's left out: what carries the contribution
        bound = [t for t in (loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target])]
        carried = {t.id for t in bound[1:] if isinstance(t, ast.Name)} or \
            {t.id for t in bound if isinstance(t, ast.Name)}
        for stmt in (n for n in ast.walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign, ast.Expr))):
            if any(isinstance(x, ast.Name) and x.id in carried for x in ast.walk(stmt)):
                out["vjp"].add(stmt.lineno)
    return {k: sorted(v) for k, v in out.items()}


def sample_code_block(key: str, side: Side, index: int, neutral: bool = False) -> CodeBlock:
    """The bundled sample ``key``'s ``backpropagate`` as a code-panel block, the lines that did frame ``index``'s
    work (of ``side``, the sample's side) lit: its ``chain_rule`` call and what it does with each contribution
    at a node's step, its ``accumulate_derivative`` call at a leaf's; nothing in a forward frame. Line numbers are
    those of the sample's full listing (:func:`samples.source`). ``neutral`` (on a projector): the panel is not
    titled with the file's name, which names the bug (``visits_constants.py``)."""
    path = SAMPLES_BY_KEY[key].path
    return _code_block(path, "the sample" if neutral else f"{path.name} (the sample)", side, index, sample=key)


def student_code_block(report: StudentReport, side: Side, index: int) -> CodeBlock | None:
    """The student's own ``backpropagate`` (the file the sandbox loaded) as :func:`sample_code_block` shows a
    sample's, its lines numbered as in the file and the lines that did frame ``index``'s work lit; None when the
    file cannot be read or parsed again, or has no ``backpropagate``. The file is read with :mod:`ast`, never run
    here (the sandboxed child ran it)."""
    f = Path(report.file or report.path or "")
    if not f.is_file():
        return None
    try:
        return _code_block(f, shown_name(report), side, index)
    # SystemError: CPython 3.11's ast.parse once failed under a loaded test run ("AST constructor recursion depth
    # mismatch"); the page then shows the graphs without the panel rather than an exception
    except (OSError, SyntaxError, UnicodeDecodeError, StopIteration, SystemError):
        return None


def _code_block(path: Path, note: str, side: Side, index: int, sample: str | None = None) -> CodeBlock:
    rows, work = _listing(str(path), path.stat().st_mtime_ns, sample)
    kinds = {e.kind for e in step_events(side.trace, side.frameset, index)}
    lit = work["leaf"] if "leaf" in kinds else work["vjp"] if "visit" in kinds else []
    return CodeBlock("backpropagate", note, list(rows), {n: 1 for n in lit}, role="walk")


@functools.lru_cache(maxsize=2 * len(SAMPLES) + 4)
def _listing(path: str, mtime_ns: int, sample: str | None = None) -> tuple[tuple[tuple[int, str], ...],
                                                                          dict[str, list[int]]]:
    """A file's ``backpropagate`` as (line, text) rows, and its work lines (:func:`work_lines`): read and parsed
    once per file and version, not at every Step. A bundled ``sample`` is read as the page lists it
    (:func:`samples.source`, its docstring naming the bug left out), so the numbers match that listing.

    Raises:
        StopIteration: the file has no top-level ``backpropagate``.
    """
    from . import samples
    text = samples.source(sample) if sample else Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    fn = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "backpropagate")
    return tuple((n, lines[n - 1]) for n in range(fn.lineno, fn.end_lineno + 1)), work_lines(text)


def file_version(path: str) -> tuple[int, int]:
    """(modification time in ns, size) of the student's file or folder: a new version reruns the code."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(p.rglob("*.py"))[:500]
    stats = [f.stat() for f in files if f.exists()]
    return (max((s.st_mtime_ns for s in stats), default=0), sum(s.st_size for s in stats))


def shown_name(report: StudentReport) -> str:
    """The student's file as the page names it: folder and file name, never the machine's full path."""
    f = Path(report.file or report.path)
    return f"{f.parent.name}/{f.name}" if f.name == "autodiff.py" and f.parent.name else f.name


def page_report(path: str) -> StudentReport:
    """The report the page shows: every graph run (in the sandboxed child), references kept only for the
    graphs the page animates (the rest are verdicts and numbers)."""
    from .report import report_for
    rep = report_for(path)
    keep = set(graph_choices(rep))
    rep.references = {k: r for k, r in rep.references.items() if k in keep}
    return rep


def sample_report(key: str) -> StudentReport:
    """:func:`page_report` of the bundled sample ``key`` (run in the sandboxed child, like a student's file).

    Raises:
        KeyError: ``key`` is not a sample.
    """
    return page_report(str(SAMPLES_BY_KEY[key].path))


def graph_choices(report: StudentReport) -> list[str]:
    """The graphs the page can animate: the lecture's, then the first random graph the code gets wrong."""
    keys = [s.key for s in LECTURE_GRAPHS if s.key in report.verdicts]
    bad = next((v.key for v in report.random() if v.kind not in ("right", "not_run")), None)
    return keys + ([bad] if bad else [])


def summary_rows(report: StudentReport) -> list[dict]:
    """One row per graph family for the page's table: graph, verdict, first wrong node."""
    rows = []
    for v in report.lecture():
        rows.append({"graph": v.title, "verdict": _short(v), "first wrong node": v.node_name or ""})
    rnd, count = report.random(), report.random_count()
    if count is not None:
        first = next((v for v in rnd if not v.right), None)
        rows.append({"graph": f"{count.graphs} random graphs",
                     "verdict": f"{count.counted()}; {count.rest()} ({count.criterion})" + (
                         f"; first: {first.title}: {_short(first)}" if first else ""),
                     "first wrong node": first.node_name or "" if first else ""})
    deep = report.verdicts.get("deep")
    if deep is not None:
        rows.append({"graph": deep.title, "verdict": _short(deep), "first wrong node": deep.node_name or ""})
    if report.scaling is not None:
        rows.append({"graph": "Doubling chains (VJP calls against depth)", "verdict": report.scaling.text,
                     "first wrong node": ""})
    return rows


def _short(v: Verdict) -> str:
    return ("✔ " if v.right else "~ " if v.kind == "warning" else "✘ ") + v.headline


def scaling_series(report: StudentReport, label: str = STUDENT_LABEL) -> dict[str, tuple[list[int], list[int]]]:
    """VJP calls against depth on the doubling chains: the student's code (named ``label``) and the engine's."""
    s = report.scaling
    if s is None:
        return {}
    known = [(d, c) for d, c in zip(s.depths, s.calls) if c is not None]
    return {label: ([d for d, _ in known], [c for _, c in known]),
            "The engine": (list(s.depths), list(s.engine_calls))}


__all__ = ["OptIn", "opt_in", "GraphView", "graph_view", "graph_choices", "summary_rows", "scaling_series",
           "Sample", "SAMPLES", "DEFAULT_SAMPLE", "sample_label", "sample_choices", "sample_report", "wrong_prefix",
           "student_events", "student_trace", "done_caption", "work_lines", "sample_code_block", "mark_wrong", "autodiff", "replace"]


# --- every step as plain data: the walk-through file --------------------------------------------------------

def step_class_view(gv: GraphView, step: int, label: str, sample: str | None = None, neutral: bool = False):
    """The 1-based ``step`` of both orders as the page draws it on a laptop (:class:`explorer.classroom.views.
    ClassView`): the engine's and the other side's graphs, their captions, the sample's code with the step's lines
    lit (``sample``: its key; None for a student's own file, whose code is not shown), and the verdict as the page
    reveals it (a sample's at the step where it goes wrong or at the end). No path of the machine is in it.
    ``neutral`` (the lecture is presenting): the sample's code is not titled with its file's name, as on the page."""
    import html

    from explorer.classroom.views import ClassView
    from ..kit.code_panel import font_px, to_html
    from ..kit.figures import laptop_still
    own = sample is None
    esc = html.escape
    view = ClassView("Your_HW2_code", "Your HW2 code", f"<h4>{esc(gv.title)} · step {int(step)} of {gv.n_frames}</h4>")
    sides = (gv.engine, gv.student)
    ks = [min(step, side.n_frames) - 1 if side else 0 for side in sides]
    graphs = [{"kind": "plot", "figure": laptop_still(side.figure, k)} if side is not None else
              {"kind": "html", "html": f"<p><b>{esc(label)}</b></p><p class='adx-error'>{esc(gv.verdict.headline)}</p>"}
              for side, k in zip(sides, ks)]
    view.add_row(graphs, [1, 1])
    view.add_row([{"kind": "html", "html": "" if side is None else (
        f"<p><b>{esc(side.label)}</b> · Step {k + 1} of {side.n_frames} · {esc(side.frameset.frames[k].phase)}: "
        f"{esc(side.frameset.frames[k].caption)}</p>")} for side, k in zip(sides, ks)], [1, 1])
    aside: list[dict] = []
    notes: list[str] = []
    k = ks[1]
    if not own:
        if gv.student is not None:
            aside.append({"kind": "html", "html": "<p><b>The sample's code at this step</b> — the lines that did its "
                                                  "work are lit</p>"})
            block = sample_code_block(sample, gv.student, k, neutral)
            aside.append({"kind": "html", "html": to_html([block], font_px(False),
                                                          test_id="code-sample")})
        aside.append({"kind": "html", "html": f"<p class='adx-caption'>{esc(SAMPLE_SIDES_NOTE)} {esc(SAMPLE_NOTE)}</p>"})
    if gv.student is not None:
        last = k == gv.student.n_frames - 1
        reveal = gv.wrong_frame if own else gv.verdict_frame   # a sample's reason at the step it happens
        said = ""   # as on the page: what the red note says is not said again under it
        if reveal is not None and k >= reveal:
            said = gv.wrong_text
            notes.append(f"<p class='adx-error'><b>{esc(gv.wrong_text)}</b></p>")
        elif gv.wrong_frame is not None and own:
            notes.append(f"<p class='adx-caption'>Watch step {gv.wrong_frame + 1}: your first wrong node is marked "
                         "there.</p>")
        if own or last or (reveal is not None and k >= reveal):
            mark = "✔ " if gv.verdict.right else "~ " if gv.verdict.kind == "warning" else "✘ "
            headline = gv.verdict.headline.split(": first wrong node ", 1)[0] if said else gv.verdict.headline
            notes.append(f"<p>{esc(mark + headline)}</p>")
        details = [d for d in gv.verdict.details if f"Why: {d}" not in said]
        if last and details:
            notes.append("<ul>" + "".join(f"<li>{esc(d)}</li>" for d in details) + "</ul>")
    view.add_row([{"kind": "column", "blocks": aside}, {"kind": "html", "html": "".join(notes)}], [1, 1])
    return view


def walkthrough(gv: GraphView, label: str, sample: str | None = None, neutral: bool = False) -> str:
    """Both orders' steps on one graph in one self-contained HTML file (:func:`explorer.kit.export_html.
    walkthrough_html`); ``sample`` and ``neutral`` as in :func:`step_class_view`."""
    from ..kit.export_html import walkthrough_html
    views = [step_class_view(gv, k, label, sample, neutral) for k in range(1, max(gv.n_frames, 1) + 1)]
    return walkthrough_html(f"Your HW2 code: {label} on {gv.title}", views)
