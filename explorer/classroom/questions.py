"""Questions a lecturer can ask at the current step, read from the engine's own recorded execution.

Nothing here re-computes the maths: the next node taken, the contribution it sends and the adjoint it
holds are the recorded backward events (:class:`explorer.explain.trace.BackwardEvent`) of the step after
the one on screen; "is this order right?" runs the engine with that traversal strategy and compares its
gradients with the topological order's. Numbers are checked to :data:`QUESTION_RTOL` (relative), the
Exercises page's default tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

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


def _scalar(value: Any) -> float | None:
    a = np.asarray(value, dtype=float) if value is not None else None
    if a is None or a.size != 1 or not np.isfinite(a).all():
        return None
    return float(a.reshape(()))


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
    value = _scalar(node.value)
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
    if len(candidates) > MAX_NODE_CHOICES:
        keep = [c for c in candidates if c != right][:MAX_NODE_CHOICES - 1]
        candidates = [c for c in candidates if c in keep or c == right]
    if len(candidates) > 1:
        out.append(Proposal("Which node is taken next?", "Which node does the backward pass take next?",
                            "choice", right, 0.0, tuple(candidates)))
    adj = _scalar(visit.value)
    if adj is not None:
        ask = f"{right} is taken next. What is its adjoint {adjoint_names(g)[visit.node]}?"
        out.append(Proposal(f"The adjoint of {right}", ask, "number", num(adj), QUESTION_RTOL))
    send = next((e for e in groups[k] if e.kind == "send"), None)
    if send is not None and _scalar(send.value) is not None:
        src, dst = name[send.node], name[send.parent]
        out.append(Proposal(f"The contribution {src} → {dst}",
                            f"When {src} is taken, what contribution does it send to {dst}?",
                            "number", num(_scalar(send.value)), QUESTION_RTOL))
    return out


def order_is_right(reference_grads: Mapping[str, Any], grads: Mapping[str, Any], error: str | None = None) -> bool:
    """Whether an order's gradients are the topological order's (to 1e-9 relative), as the Backprop orders
    page judges them; a run that failed is not right."""
    if error is not None:
        return False
    for name, want in reference_grads.items():
        got = grads.get(name)
        if got is None:
            return False
        w, g = np.asarray(want, dtype=float), np.asarray(got, dtype=float)
        if w.shape != g.shape or not np.all(np.abs(g - w) <= 1e-9 * max(1.0, float(np.max(np.abs(w), initial=0)))):
            return False
    return True


def order_questions(program_text: str, inputs_text: str, orders: tuple[str, ...]) -> list[Proposal]:
    """"Is this order right?" for each order on the Backprop orders page (the engine runs each one)."""
    from explorer.explain import trace as ex
    from .. import backprop_orders as bo

    try:    # the page's own budget (one run per order), estimated before anything runs
        program, inputs = parse(program_text, inputs_text)
        check_program(program, inputs, 3 * (len(orders) + 1), "backprop orders", max_ops=bo.MAX_SIDE_BY_SIDE_OPS)
        reference = ex.record_execution(program, inputs, strategy="topological")
    except (ExpressionError, InputProblem):
        return []
    out = []
    for s in orders:
        strategy = bo.PAGE_PATH_RECURSION if s == "path_recursion" else s
        try:
            tr = reference if s == "topological" else ex.record_execution(program, inputs, strategy=strategy)
        except ExpressionError:
            continue
        right = order_is_right(reference.grads, tr.grads, tr.error)
        label = bo.STRATEGY_LABELS.get(s, s)   # what the order is, not whether it is right
        out.append(Proposal(f"Is “{label}” right?", f"Does the order “{label}” give the right gradients here?",
                            "choice", YES if right else NO, 0.0, (YES, NO)))
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


def queue_questions(model, step: int) -> list[Proposal]:
    """The Topological sort page's queue method after 1-based ``step``: which node the queue method takes next
    (the front of the queue) and the value the engine computed for it (a
    :class:`explorer.topological_sort.SortModel`'s recorded steps)."""
    steps = model.queue_steps
    if not 1 <= step < len(steps):
        return []
    nxt = steps[step]
    done = set(nxt.processed)
    candidates = [model.name(i) for i in model.node_ids if i not in done]
    right = model.name(nxt.taken)
    out = []
    if len(candidates) > 1:
        out.append(Proposal("Which node is taken next?", "The queue method takes the front of the queue. "
                            "Which node is taken next?", "choice", right, 0.0, tuple(candidates[:MAX_NODE_CHOICES])
                            if right in candidates[:MAX_NODE_CHOICES] else (*candidates[:MAX_NODE_CHOICES - 1], right)))
    value = _scalar(nxt.value)
    if value is not None:
        out.append(Proposal(f"The value of {right}", f"{right} is taken next. What value does the engine compute "
                            "for it?", "number", num(value), QUESTION_RTOL))
    return out


def page_questions(page: str, params: Mapping[str, str], defaults: Mapping[str, str]) -> list[Proposal]:
    """The questions for a followed page from its link parameters (``defaults`` fill the ones left out:
    a link leaves out default values). Pages without a checkable step give none."""
    p = {**defaults, **params}
    if page == "Topological_sort":
        from .. import topological_sort as T
        try:
            return queue_questions(T.sort_model(str(p.get("preset"))), int(p.get("step", 1)))
        except (KeyError, ValueError, InputProblem):
            return []
    expr, at = p.get("expr"), p.get("at")
    if expr is None or at is None:
        return []
    try:
        step = int(p.get("step", 1))
    except ValueError:
        step = 1
    out: list[Proposal] = []
    if page in ("Expression_explorer", "Backprop_orders"):
        out += expression_questions(expr, at, max(step, 1))
    if page == "Backprop_orders":
        orders = tuple(o for o in str(p.get("orders", "")).split(",") if o)
        out += order_questions(expr, at, orders)
    return out
