"""Questions a lecturer can ask at the current step, read from the engine's own recorded execution.

Nothing here re-computes the maths: the next node taken, the contribution it sends and the adjoint it
holds are the recorded backward events (:class:`explorer.explain.trace.BackwardEvent`) of the step after
the one on screen; a page adds its own (Backprop orders: "is this order right?", the engine run with that
traversal strategy). Numbers are checked to :data:`QUESTION_RTOL` (relative), the Exercises page's default
tolerance.

Each page says which questions it has: its explorer module registers a :data:`QuestionSource` under the page's
name (``@register_questions("Topological_sort")``) when it is imported, which the page's own script does before
it draws anything. This module knows no page: it holds the protocol, the shared question builders and
:func:`page_questions`, the lookup the class widgets call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from explorer.explain import ExpressionError
from explorer.explain.numbers import num
from explorer.explain.graph import adjoint_names
from explorer.kit.budget import check_program
from explorer.kit.programs import InputProblem, parse

QUESTION_RTOL = 1e-3            # as explorer.exercises.Tolerance's default: 3 significant digits are right
MAX_NODE_CHOICES = 12           # a choice question lists at most this many nodes (a phone screen's worth)
YES, NO = "yes", "no"


@dataclass(frozen=True)
class Proposal:
    """A question ready to ask: ``label`` names it for the lecturer; the rest goes to the broker's ``ask``."""
    label: str
    prompt: str
    kind: str                   # "number" or "choice"
    answer: str
    tolerance: float = 0.0
    choices: tuple[str, ...] = ()


def scalar(value: Any) -> float | None:
    """``value`` as one finite float, or None where it is missing, not one element or not finite (a number
    question needs one number to type)."""
    a = np.asarray(value, dtype=float) if value is not None else None
    if a is None or a.size != 1 or not np.isfinite(a).all():
        return None
    return float(a.reshape(()))


def node_choices(candidates: list[str], right: str) -> tuple[str, ...]:
    """At most :data:`MAX_NODE_CHOICES` of ``candidates``, in their order, ``right`` always among them."""
    if len(candidates) <= MAX_NODE_CHOICES:
        return tuple(candidates)
    keep = set([c for c in candidates if c != right][:MAX_NODE_CHOICES - 1])
    return tuple(c for c in candidates if c in keep or c == right)


def backward_step_index(frameset, frame: int) -> int:
    """Which backward step (0-based group of ``trace.steps()``) comes *after* frame ``frame`` (0-based).

    Before the backward pass that is step 0; on a backward frame showing steps up to k it is k + 1.
    """
    frames = frameset.frames
    frame = min(max(frame, 0), len(frames) - 1)
    first = next((f.index for f in frames if f.phase == "backward"), None)
    if first is None or frame < first:
        return 0
    if frames[frame].phase != "backward":
        return 1 << 30          # the walk is over
    per = max(int(getattr(frameset, "backward_per_frame", 1) or 1), 1)
    return (frame - first + 1) * per


def forward_questions(trace, frameset, step: int) -> list[Proposal]:
    """The question at 1-based ``step`` when the next frame is a forward one: the value of the node the forward
    pass computes next (a question about the backward pass there would ask about what the class has not met)."""
    frames = frameset.frames
    frame = step - 1
    if not 0 <= frame < len(frames) - 1 or frames[frame + 1].phase != "forward" or not frames[frame + 1].active_nodes:
        return []
    g = trace.graph
    nid = frames[frame + 1].active_nodes[-1]
    node = g.node(nid)
    value = scalar(node.value)
    fstep = next((s for s in trace.forward if s.node == nid), None)
    if value is None or fstep is None:
        return []
    args = ", ".join(g.node(i).name for i in fstep.inputs)
    return [Proposal(f"The value of {node.name}", f"The forward pass computes {node.name} = {fstep.op}({args}) next. "
                     "What is its value?", "number", num(value), QUESTION_RTOL)]


def step_questions(trace, frameset, step: int) -> list[Proposal]:
    """The questions at 1-based ``step``: before a forward frame, the value computed next
    (:func:`forward_questions`); before a backward step, which node is taken next, the adjoint it holds, and the
    value of the first contribution it sends (scalars only: one number to type)."""
    frames = frameset.frames
    if 0 <= step - 1 < len(frames) - 1 and frames[step].phase == "forward":
        return forward_questions(trace, frameset, step)
    groups = trace.steps()
    k = backward_step_index(frameset, step - 1)
    if k >= len(groups):
        return []
    g = trace.graph
    name = {n.id: n.name for n in g.nodes}
    visit = next((e for e in groups[k] if e.kind == "visit"), None)
    if visit is None:
        return []
    out: list[Proposal] = []
    # the nodes that could be taken: those the walk has not taken yet (and the right one), in graph order
    taken = {e.node for grp in groups[:k] for e in grp if e.kind == "visit"}
    candidates = [n.name for n in g.nodes if n.kind != "constant" and n.id not in taken]
    right = name[visit.node]
    if len(candidates) > 1:
        out.append(Proposal("Which node is taken next?", "Which node does the backward pass take next?",
                            "choice", right, 0.0, node_choices(candidates, right)))
    adj = scalar(visit.value)
    if adj is not None:
        ask = f"{right} is taken next. What is its adjoint {adjoint_names(g)[visit.node]}?"
        out.append(Proposal(f"The adjoint of {right}", ask, "number", num(adj), QUESTION_RTOL))
    send = next((e for e in groups[k] if e.kind == "send"), None)
    if send is not None and scalar(send.value) is not None:
        src, dst = name[send.node], name[send.parent]
        out.append(Proposal(f"The contribution {src} → {dst}",
                            f"When {src} is taken, what contribution does it send to {dst}?",
                            "number", num(scalar(send.value)), QUESTION_RTOL))
    return out


def expression_questions(program_text: str, inputs_text: str, step: int) -> list[Proposal]:
    """The step questions of the Expression explorer's program at 1-based ``step`` (frames as the page
    draws them: composites as one node)."""
    from explorer.explain import trace as ex
    from explorer.kit.frames import build_frames
    from explorer.kit.layout import collapse_composites

    try:    # one forward and one backward run, estimated before it runs
        program, inputs = parse(program_text, inputs_text)
        check_program(program, inputs, 2, "the class question")
        tr = collapse_composites(ex.record_execution(program, inputs, strategy="topological"))
    except (ExpressionError, InputProblem):
        return []
    return step_questions(tr, build_frames(tr, tr.graph.without_constants()), step)


QuestionSource = Callable[[Mapping[str, str]], list[Proposal]]
"""A page's questions from its link parameters (every parameter there: defaults filled in); none where the page
has no checkable step there."""

# page name -> its questions; written only by register_questions, when a page module is imported
_SOURCES: dict[str, QuestionSource] = {}


def register_questions(page: str) -> Callable[[QuestionSource], QuestionSource]:
    """A decorator: the decorated function is the questions of ``page`` (its name in links, the app's file name
    without its number: ``"Topological_sort"``). A page module uses it at import; importing it again (a reload)
    replaces its own entry.

    Raises:
        ValueError: when another module has registered ``page`` already.
    """
    def register(source: QuestionSource) -> QuestionSource:
        old = _SOURCES.get(page)
        if old is not None and old.__module__ != source.__module__:
            raise ValueError(f"page {page!r} has questions from {old.__module__} already")
        _SOURCES[page] = source
        return source
    return register


def registered_questions() -> dict[str, QuestionSource]:
    """Page name -> its question source, for the pages whose modules have been imported (a copy)."""
    return dict(_SOURCES)


def link_step(params: Mapping[str, str]) -> int:
    """The 1-based step in a page's link parameters (1 where it is missing or not a number)."""
    try:
        return max(int(params.get("step", 1)), 1)
    except ValueError:
        return 1


def program_questions(params: Mapping[str, str]) -> list[Proposal]:
    """:func:`expression_questions` for a page whose link holds a program (``expr``), its inputs (``at``) and a
    ``step``; none when the program or its inputs are missing."""
    expr, at = params.get("expr"), params.get("at")
    if expr is None or at is None:
        return []
    return expression_questions(expr, at, link_step(params))


def page_questions(page: str, params: Mapping[str, str], defaults: Mapping[str, str]) -> list[Proposal]:
    """The questions for a followed page from its link parameters (``defaults`` fill the ones left out:
    a link leaves out default values). Pages that registered no questions give none."""
    source = _SOURCES.get(page)
    return source({**defaults, **params}) if source is not None else []
