"""Exercises (page 12): the lecture notes' exercises, each answered by the engine and checked with a tolerance.

Every answer here is computed when the exercise is built, by running the engine (``engine.grad``,
``engine.vjp``, traces of the backward pass, ``jacobian_costs``, the static graph's ``Session`` ...):
none is typed in. The worked steps quote the engine's own numbers, and where another page shows the
computation, :attr:`Exercise.link` is a deep link to that page at that step. Answers are parsed by
:func:`explorer.lecture_kit.parse_answer` (``ast`` + whitelist, never ``eval``). No Streamlit here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode

import numpy as np

import engine
from explorer import explain as ex
from explorer.explain import harness
from explorer.explain.graph import adjoint_names, lecture_names, output_adjoint_note
from explorer.explain.numbers import DIGITS, count, fixed, megabytes, nested, num, percent, plain, sci

from .lecture_kit import AnswerError, parse_answer


@dataclass(frozen=True)
class Tolerance:
    """``|a − b| ≤ abs + rel·|b|`` elementwise, or within a factor ``factor`` when set (for orders of magnitude)."""
    rel: float = 1e-3
    abs: float = 1e-9
    factor: float | None = None

    def describe(self) -> str:
        if self.factor is not None:
            return f"within a factor {plain(self.factor)}"
        return f"to {percent(self.rel, 1)} (relative)" if self.rel >= 1e-4 else "to rounding"


@dataclass
class Part:
    key: str
    prompt: str                  # Markdown
    answer: Any                  # float or nested list, computed by the engine
    tolerance: Tolerance = field(default_factory=Tolerance)
    unit: str = ""
    hints: list[tuple[Any, str]] = field(default_factory=list)   # (a value, what it means) for a near miss
    choices: tuple[str, ...] = ()   # a choice question: the answer is one of these strings

    def shown(self) -> str:
        """The engine's answer as the app prints it."""
        if self.choices:
            return str(self.answer)
        digits = 2 if self.tolerance.factor is not None else DIGITS  # an order of magnitude: two digits say it
        return nested(self.answer, digits) + (f" {self.unit}" if self.unit else "")

    def label(self) -> str:
        """The answer box's label: the prompt, with its unit unless the prompt already names it ("wrong on (%) ="
        read "wrong on (%) = (%)")."""
        return self.prompt + (f" ({self.unit})" if self.unit and f"({self.unit})" not in self.prompt else "")


@dataclass
class Exercise:
    number: int
    key: str
    title: str
    question: str                # Markdown
    parts: list[Part]
    steps: list[str]             # worked steps (Markdown), quoting the engine's numbers
    link: str | None = None      # "Page_name?param=…" (relative URL of another page of the app)
    link_label: str = ""


@dataclass
class Verdict:
    correct: bool
    message: str


def check(part: Part, text: str) -> Verdict:
    """The student's ``text`` against the engine's answer (never evaluated: see ``parse_answer``)."""
    if part.choices:
        ok = str(text) == str(part.answer)
        return Verdict(ok, "Correct." if ok else "Not this one: reveal the steps to see why.")
    try:
        given = parse_answer(text)
    except AnswerError as e:
        return Verdict(False, f"Could not read the answer: {e}.")
    want = part.answer
    g = np.asarray(given, dtype=float) if _shape_ok(given) else None
    w = np.asarray(want, dtype=float)
    if g is None:
        return Verdict(False, "Could not read the answer: rows of different lengths.")
    if g.size != w.size:
        what = "one number" if w.size == 1 else f"{w.size} numbers"
        return Verdict(False, f"The answer has {what}; you gave {g.size}.")
    g, w = g.reshape(w.shape), w
    tol = part.tolerance
    if tol.factor is not None:
        ok = bool(np.all(g > 0) and np.all(np.abs(np.log(g / w)) <= math.log(tol.factor)))
    else:
        ok = bool(np.all(np.abs(g - w) <= tol.abs + tol.rel * np.abs(w)))
    if ok:
        return Verdict(True, f"Correct: the engine gets {part.shown()}.")
    for value, meaning in part.hints:
        if np.allclose(g, np.asarray(value, dtype=float), rtol=max(tol.rel, 1e-3), atol=tol.abs):
            return Verdict(False, f"Not quite: {meaning}")
    return Verdict(False, "Not quite. Try again, or reveal the worked steps.")


def feedback_line(part: Part, verdict: Verdict) -> str:
    """The line shown under a checked answer, a sentence of its own after the answer's name ("f′(x0): not quite.
    Try again…", never "f′(x0) = Not quite."); plain text (the page escapes it)."""
    name = part.prompt.rstrip().rstrip("=:≈").rstrip()
    message = verdict.message[:1].lower() + verdict.message[1:] if verdict.message else ""
    return f"{name}: {message}" if name else verdict.message


def _shape_ok(v) -> bool:
    try:
        np.asarray(v, dtype=float)
        return True
    except ValueError:
        return False


def page_link(page: str, params: dict[str, Any]) -> str:
    """``"Expression_explorer?expr=…"``: a deep link to another page (query escaped)."""
    clean = {k: str(v) for k, v in params.items() if v is not None}
    return page + ("?" + urlencode(clean) if clean else "")


# --- helpers that read the engine's traces -------------------------------------------------------------

def contributions_to(trace, name: str) -> list[tuple[str, Any]]:
    """(sender, value) of every contribution the backward pass sent to node ``name`` (sender as "x3 = add(…)")."""
    nid = trace.graph.by_name(name).id
    names = {n.id: n.name if n.op == "leaf" else f"{n.name} = {n.op}(…)" for n in trace.graph.nodes}
    return [(names[e.node], e.value) for e in trace.backward if e.kind == "send" and e.parent == nid]


def fan_out_sum(trace, name: str) -> str:
    """The adjoint of input ``name`` as the graphs write a fan-out sum (:func:`explorer.kit.labels.fan_out_sum`,
    the slides' form): symbolic, then each consumer's adjoint times its local derivative, then the total in bold,
    e.g. ``x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = **368.04**``. Read from the engine's backward pass:
    the adjoint each consumer held when it was taken, and what it sent (a consumer using the input twice, ``v1·v1``,
    sent the sum of its two contributions: one term)."""
    from explorer.kit.frames import consumer_terms
    from explorer.kit.labels import fan_out_sum as slide_sum, total_text
    g = trace.graph
    nid = g.by_name(name).id
    names = lecture_names(g)
    held: dict[int, Any] = {}
    sent: list[tuple[int, Any, Any]] = []
    for e in trace.backward:
        if e.kind == "visit":
            held[e.node] = e.value
        elif e.kind == "send" and e.parent == nid:
            sent.append((e.node, held.get(e.node), e.value))
    terms = consumer_terms(sent, {n.id: i for i, n in enumerate(g.nodes)})
    return (slide_sum(names[nid], [(names[c], a, v) for c, a, v in terms], len(terms), len(terms))
            + f" = **{total_text(trace.grads[name])}**")


def explorer_step_of_leaf(program: str, inputs: str, name: str) -> int:
    """The Expression explorer's step (1-based, as its header and ``step=`` count) at which input ``name``
    receives its gradient."""
    from .expression_explorer import explorer_model
    model = explorer_model(program, inputs)
    idx = model.frameset.node_ids.index(model.trace.graph.by_name(name).id)
    return next(f.index for f in model.frameset.frames if f.node_state[idx] == "leaf") + 1


# --- the exercises -------------------------------------------------------------------------------------

SLIDE_PROGRAM, SLIDE_INPUTS = "f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5"


def _ex1() -> Exercise:
    from .learning_problem import exercise1
    r = exercise1(0.0, 0.1, 1)[0]
    return Exercise(
        1, "gradient_step", "One gradient-descent step",
        "f(x) = (x − 3)². Take one gradient-descent step from x0 = 0 with learning rate η = 0.1.",
        [Part("slope", "f′(x0) =", r.slope), Part("x1", "x1 =", r.x_next, hints=[(-r.x_next, "mind the sign: the "
                                                                                      "step goes against the slope")])],
        [f"`engine.grad(lambda x: (x - 3) ** 2)(0.0)` = **{nested(r.slope)}** (= 2·(0 − 3)).",
         f"x1 = x0 − η·f′(x0) = 0 − 0.1·({nested(r.slope)}) = **{nested(r.x_next)}**: a step towards "
         "the minimum at 3."],
        page_link("Learning_problem", {"x0": 0, "eta": 0.1}), "Learning problem: exercise 1 with its plot")


def _ex2() -> Exercise:
    prog, inp = "f = (x1 + x2) * exp(x1)", "x1 = 1, x2 = 2"
    tr = ex.record_execution(prog, inp)
    sent = contributions_to(tr, "x1")
    x3, x4 = tr.graph.by_name("x3"), tr.graph.by_name("x4")
    g1, g2 = tr.grads["x1"], tr.grads["x2"]
    return Exercise(
        2, "fan_out", "Fan-out: a variable with two users",
        "f = (x1 + x2)·exp(x1) at x1 = 1, x2 = 2. Compute ∂f/∂x1 and ∂f/∂x2 (numbers; a multiple of e may be "
        "typed as `k e`, e.g. `2e`).",
        [Part("dx1", "∂f/∂x1 =", g1, hints=[(math.e * 3, "that is only the path through exp(x1); x1 has a second "
                                              "user (x1 + x2)")]),
         Part("dx2", "∂f/∂x2 =", g2)],
        [f"x1 is used twice (by x3 = x1 + x2 and by x4 = exp(x1)), so its adjoint x̄1 is the sum of the "
         f"{len(sent)} contributions the engine's backward pass sent it (x̄5 = 1{output_adjoint_note(tr.graph)}, "
         f"x̄3 = x̄5·x4 = {nested(x4.value)}, x̄4 = x̄5·x3 = {nested(x3.value)}): {fan_out_sum(tr, 'x1')}.",
         f"∂f/∂x1 = x̄1 = **{nested(g1)}** = 4e (e·1 from the sum, (1 + 2)·e from exp).",
         f"∂f/∂x2 = exp(x1) = **{nested(g2)}** = e."],
        page_link("Expression_explorer", {"expr": prog, "at": inp,
                                          "step": explorer_step_of_leaf(prog, inp, "x1")}),
        "Expression explorer at the step where x1's sum is complete")


def _ex3() -> Exercise:
    # the notes' naming: v1 = x, v2 = v1·v1, v3 = v2·v1 (the output, f)
    prog, inp = "v2 = v1 * v1\nf = v2 * v1", "v1 = 2"
    tr = ex.record_execution(prog, inp)
    sent = contributions_to(tr, "v1")
    g = tr.grads["v1"]
    adj = adjoint_names(tr.graph)
    v2 = tr.graph.by_name("v2")
    v2bar = next(e.value for e in trace_accumulations(tr) if e.node == v2.id)
    return Exercise(
        3, "cube", "x·x·x: one variable, three uses",
        "f = x·x·x at x = 2, computed as v1 = x, v2 = v1·v1, v3 = v2·v1 (v1 is used three times). What is ∂f/∂x?",
        [Part("dx", "∂f/∂x =", g, hints=[(4.0, "that is one of the contributions; v1 is used three times")])],
        [f"{adj[tr.graph.output]} = 1{output_adjoint_note(tr.graph)}; {adj[v2.id]} = {adj[tr.graph.output]}·v1 = "
         f"{nested(v2bar)}.",
         f"v1 is used three times (twice by v2, once by v3), so {len(sent)} contributions reach it: "
         f"{fan_out_sum(tr, 'v1')}. v2 = v1·v1 sends the sum of its two, v̄2·v1 + v̄2·v1, so its local "
         f"derivative is ∂v2/∂v1 = 2·v1; the notes write the three contributions one by one: "
         f"{' + '.join(nested(v) for _, v in sent)} = {nested(g)}.",
         f"∂f/∂x = {adj[tr.graph.by_name('v1').id]} = **{nested(g)}** = 3x²."],
        page_link("Expression_explorer", {"expr": prog, "at": inp, "step": explorer_step_of_leaf(prog, inp, "v1")}),
        "Expression explorer at the step where v1's gradient lands")


def trace_accumulations(trace) -> list:
    """The backward pass's completed adjoints: its ``accumulate`` events whose node has every contribution."""
    return [e for e in trace.backward if e.kind == "accumulate" and e.received == e.expected]


def _ex4() -> Exercise:
    W, ybar = [[1.0, 2.0], [3.0, 4.0]], [1.0, -1.0]
    tW = engine.tensor(W)
    _, vjp_fn = engine.vjp(lambda x: tW @ x, engine.tensor([1.0, 1.0]))
    (xbar,) = vjp_fn(engine.tensor(ybar))
    xb = xbar.numpy().tolist()
    return Exercise(
        4, "vjp", "Vector–Jacobian product of y = Wx",
        "y = Wx with W = [[1, 2], [3, 4]] and upstream ȳ = [1, −1]. What is x̄? (a list, e.g. [a, b])",
        [Part("xbar", "x̄ =", xb, hints=[([-1.0, -1.0], "that is W·ȳ; the VJP multiplies by the transpose, Wᵀȳ")])],
        ["The Jacobian of Wx is W, so x̄ = ȳᵀW = Wᵀȳ; nobody builds the Jacobian, the VJP is one matmul.",
         f"Wᵀȳ = [1·1 + 3·(−1), 2·1 + 4·(−1)] = **{nested(xb)}** (`engine.vjp(lambda x: W @ x, x)` "
         "with cotangent ȳ)."],
        page_link("Expression_explorer", {"expr": "f = sum((W @ x) * ybar)",
                                          "at": "W = [[1, 2], [3, 4]], x = [1, 1], ybar = [1, -1]"}),
        "Expression explorer: sum((W @ x) · ȳ) has gradient Wᵀȳ for x")


def _ex5() -> Exercise:
    from explorer.explain import costs
    n = 1000
    f = costs.jacobian_costs("f = sum(x * x)", {"x": np.linspace(0.0, 1.0, n).tolist()})
    g = costs.jacobian_costs("y = t * c", {"t": 0.5, "c": np.linspace(0.0, 1.0, n).tolist()}, wrt=["t"])
    return Exercise(
        5, "passes", "Forward or reverse mode: how many passes?",
        f"The full Jacobian of f: R^{n} → R, and of g: R → R^{n}. How many passes does each mode need?",
        [Part("f_fwd", "f, forward mode:", f.forward.passes, Tolerance(0, 0)),
         Part("f_rev", "f, reverse mode:", f.reverse.passes, Tolerance(0, 0)),
         Part("g_fwd", "g, forward mode:", g.forward.passes, Tolerance(0, 0)),
         Part("g_rev", "g, reverse mode:", g.reverse.passes, Tolerance(0, 0))],
        ["A forward (JVP) pass gives one column of the Jacobian; a reverse (VJP) pass gives one row.",
         f"The engine built both Jacobians: f = sum(x·x) with {n} inputs took **{f.forward.passes}** JVP passes and "
         f"**{f.reverse.passes}** backward pass ({f.forward.forward_ops} vs {f.reverse.total_ops} ops); "
         f"g = t·c with {n} outputs took **{g.forward.passes}** JVP pass and **{g.reverse.passes}** backward passes. "
         f"Both ways agree (max difference {sci(max(f.max_difference, g.max_difference))}).",
         "A loss is R^n → R: reverse mode wins, which is why training uses backprop."],
        page_link("Forward_vs_reverse", {}), "Forward vs reverse: passes and ops as n and m vary")


def bfs_wrong_count(n_graphs: int = harness.RANDOM_GRAPHS):
    """Breadth-first first touch on Backprop orders' random graphs (``harness.RANDOM_OPS`` ops, seeds 0…n−1),
    counted by the one criterion (``harness.gradients_wrong``): the ``StrategyRow`` page 5's table shows."""
    rows = harness.strategy_comparison(n_graphs, harness.RANDOM_OPS, 0, strategies=("topological", "bfs_first_touch"))
    return next(r for r in rows if r.strategy == "bfs_first_touch")


def _ex6(n_graphs: int = harness.RANDOM_GRAPHS) -> Exercise:
    from .backprop_orders import NOTES_BFS_WRONG, orders_model
    bfs = ex.record_execution(SLIDE_PROGRAM, SLIDE_INPUTS, strategy="bfs_first_touch")
    right = ex.record_execution(SLIDE_PROGRAM, SLIDE_INPUTS)
    lost = [e for e in bfs.backward if e.kind == "lost"]
    wrong = bfs_wrong_count(n_graphs)
    notes_wrong, notes_total = NOTES_BFS_WRONG
    rate = 100.0 * wrong.wrong / wrong.graphs
    model = orders_model(SLIDE_PROGRAM, SLIDE_INPUTS, ("topological", "bfs_first_touch"))
    step = model.views["bfs_first_touch"].lost_step + 1  # the page's steps count from 1
    return Exercise(
        6, "bfs", "Breadth-first, pass on at first touch",
        "Backpropagate the slide example f = x1 + exp(1.5·x1 + 2·x2) at x1 = 3, x2 = 0.5 breadth-first from f, "
        "each node passing on its adjoint the first time it is taken. What does this give for ∂f/∂x1? "
        f"And on what percentage of {n_graphs} random graphs is some gradient wrong?",
        [Part("dx1", "∂f/∂x1 (breadth-first) =", bfs.grads["x1"],
              hints=[(right.grads["x1"], "that is the correct gradient; breadth-first loses a contribution")]),
         Part("rate", "wrong on (%) =", rate, Tolerance(rel=0.0, abs=2.5), unit="%")],
        [f"x1 is a direct input of f, so breadth-first reaches it first and passes on **{nested(bfs.grads['x1'])}**.",
         "Its other contribution arrives via x6 → x5 → x3 after x1 was already processed and is lost: "
         + "; ".join(f"{nested(e.value)} lost" for e in lost) + ". In topological order x1 waits for both (the slides' "
         f"fan-out): {fan_out_sum(right, 'x1').replace('**', '')} (= 1.5·e^5.5 + 1), the correct ∂f/∂x1.",
         f"Over {wrong.graphs} random graphs ({harness.RANDOM_OPS} ops each, seeds 0…{wrong.graphs - 1}) the engine's breadth-first "
         f"pass is wrong on **{wrong.wrong}** ({percent(wrong.wrong / wrong.graphs, 1)}), counted as Backprop orders counts them "
         f"({harness.WRONG_GRADIENTS}); the notes report {notes_wrong} of {notes_total} "
         f"({percent(notes_wrong / notes_total)}) on theirs."],
        page_link("Backprop_orders", {"orders": "topological,bfs_first_touch", "step": step}),
        "Backprop orders at the step where the contribution is lost")


def unit_roundoff(dtype: str) -> float:
    """Half the gap above 1 in ``dtype``, measured with the engine's own add: the largest power of two u
    for which 1 + u rounds back to 1 (round to nearest, ties to even)."""
    one = engine.tensor(1.0, dtype=dtype)
    u = 1.0
    while (one + engine.tensor(u, dtype=dtype)).item() != 1.0:
        u /= 2.0
    return u


def _ex7() -> Exercise:
    from .gradient_check import default_sweep, notes_best_h_text
    sweep = default_sweep()          # the figure Gradient check shows on its default, from the same function
    h64, h32 = sweep.best_h["float64"], sweep.best_h["float32"]
    m64, m32 = sweep.model("central", "float64"), sweep.model("central", "float32")
    f, _, _, d3 = sweep.derivatives
    return Exercise(
        7, "best_h", "The best step for central differences",
        "The central difference's error is about C·h² (truncation) + ε·|f|/h (rounding). Roughly which h is best "
        "in float64, and in float32, for ∂f/∂x1 of the slide example f = x1 + exp(1.5·x1 + 2·x2) at x1 = 3, "
        "x2 = 0.5? (an order of magnitude: within a factor 5 counts)",
        [Part("h64", "best h, float64 ≈", h64, Tolerance(factor=5.0)),
         Part("h32", "best h, float32 ≈", h32, Tolerance(factor=5.0))],
        [f"C = |f‴|/6 and the unit roundoff ε = {num(m64.eps, 3)} (float64), {num(m32.eps, 3)} (float32); "
         f"here |f| = {num(abs(f))} and f‴ = {num(d3)} (the engine's third derivative).",
         "d/dh (h²|f‴|/6 + ε|f|/h) = 0 gives h = (3ε|f| / |f‴|)^(1/3) ∝ ε^(1/3): "
         f"**{sci(h64)}** in float64, **{sci(h32)}** in float32, the best h Gradient check marks on its default.",
         notes_best_h_text(sweep)],
        page_link("Gradient_check", {}), "Gradient check: the error against h, both dtypes")


def _ex8() -> Exercise:
    from .tensors_and_storage import broadcast_backward
    r = broadcast_backward((2,))
    return Exercise(
        8, "broadcast", "Broadcasting's backward",
        "x has shape (3, 2), b has shape (2,), y = x + b. The upstream gradient is G = [[1, 2], [3, 4], [5, 6]]. "
        "What are b̄ and x̄?",
        [Part("bbar", "b̄ =", r.b_grad, hints=[([3.0, 7.0, 11.0], "that sums each row; b was copied down the rows, "
                                                                   "so sum over axis 0")]),
         Part("xbar", "x̄ =", r.x_grad)],
        [f"b was broadcast along axis {r.summed_axes[0]} (one copy per row of y); each copy sends its part of G back.",
         f"b̄ = G summed over axis 0 = **{nested(r.b_grad)}**; x̄ = G = {nested(r.x_grad)}. "
         f"(`y.backward(G)` on the engine; its backward ran {', '.join(r.backward_ops)}.)"],
        page_link("Tensors_and_storage", {}), "Tensors and storage: broadcasting's backward for other shapes of b")


def mlp_buffers_per_notes(depth: int) -> tuple[int, int]:
    """(tensors saved for backward, distinct buffers they fill) for a depth-``depth`` Linear + ReLU MLP,
    read from the engine's graph (``explorer.explain.costs.mlp_saved_counts``): every matmul keeps its input
    (for W̄ = xᵀȳ) and every ReLU its output (for the mask), minus the network's input, the data itself.
    """
    from explorer.explain.costs import mlp_saved_counts
    return mlp_saved_counts(depth)


def _ex9() -> Exercise:
    depth, width, batch = 10, 4096, 512
    kept, distinct = mlp_buffers_per_notes(depth)
    one = engine.zeros(batch, width, dtype="float32")        # one batch × width activation, as the engine stores it
    nbytes = one.numpy().nbytes
    total = kept * nbytes
    return Exercise(
        9, "memory", "Memory kept for the backward pass",
        f"A {depth}-layer MLP (each layer Linear({width}, {width}) + ReLU), batch {batch}, float32. Using the "
        "notes' rule (two batch × width buffers per layer are kept for backward, minus the input itself), how many "
        "MB (10⁶ bytes) of activations are kept?",
        [Part("mb", "memory ≈", total / 1e6, Tolerance(rel=0.02), unit="MB",
              hints=[(total / 2 ** 20, "that is in MiB (2²⁰ bytes); the question asks for MB (10⁶ bytes)"),
                     (2 * depth * nbytes / 1e6, "the network's input is the data itself: not counted")])],
        [f"The engine's graph of the network (built small) keeps for backward, per layer, the matmul's input (for "
         f"W̄ = xᵀȳ) and what the ReLU's mask needs: {kept + 1} saved tensors, minus the input x → "
         f"**{kept}** = 2·{depth} − 1.",
         f"One {batch} × {width} float32 buffer is {count(nbytes)} bytes "
         f"(`engine.zeros({batch}, {width}, dtype='float32')`).",
         f"{kept} × {count(nbytes)} = {count(total)} bytes ≈ **{megabytes(total)} MB** ({fixed(total / 2 ** 20, 0)} MiB).",
         f"The engine's graph itself holds {distinct} distinct buffers of that size here: its ReLU keeps its output "
         "(the notes keep the input z), which is also the next layer's saved input."],
        page_link("Forward_vs_reverse", {}), "Forward vs reverse: memory kept as batch and depth grow")


def _ex10() -> Exercise:
    from .static_vs_dynamic import NOTES_RNN_EAGER, unrolled_rnn_rows
    rows = unrolled_rnn_rows((3, 6, 12))
    key = next(k for k in rows[0] if k.startswith("eager"))
    counts = ", ".join(str(r[key]) for r in rows)
    choices = ("dynamic", "static (or compiled / exported)")
    return Exercise(
        10, "static_or_dynamic", "Static or dynamic graph?",
        "(a) A new research model whose loop runs a different number of times for each sample. "
        "(b) A fixed, trained model deployed to a phone.",
        [Part("a", "(a)", choices[0], choices=choices), Part("b", "(b)", choices[1], choices=choices)],
        [f"(a) **dynamic**: the graph is recorded as the Python code runs, so each sample gets its own. The engine "
         f"records {counts} ops for a recurrent step unrolled 3, 6 and 12 times (the notes count "
         f"{', '.join(map(str, NOTES_RNN_EAGER))} for their own recurrence: both grow with the loop count).",
         "(b) **static** (or compiled / exported): the graph is fixed, so it can be optimised once — constant folding, "
         "fusion, memory planning — and run without Python."],
        page_link("Static_vs_dynamic", {}), "Static vs dynamic: the unrolled loop and constant folding")


# the answer neither first nor the one worded with care: each choice a reason of the same length and detail
TRAINING_WHY_ANSWER = "the update needs the loss's gradient, which starts from 1, not the loss's value"
TRAINING_WHY = ("constant folding removes them: their inputs are the same at every step",
                TRAINING_WHY_ANSWER,
                "they wait for the next step: sess.run evaluates a node once its value is read")


def _ex11() -> Exercise:
    from .static_vs_dynamic import build_example, loss_nodes, run_fetch
    lr = build_example("logreg", with_gradients=False, with_train=True)
    train = run_fetch(lr, "train step (SGD)", list(lr.feeds))
    built, evaluated = len(lr.graph.nodes), train.counted
    skipped = [lr.graph.nodes[i] for i in sorted(set(range(built)) - set(train.evaluated) - set(train.fed))]
    own = loss_nodes(lr)
    names = ", ".join(n.name for n in skipped)
    whose = ("the loss's own node" if len(skipped) == len(own) == 1
             else f"all of them the loss's own nodes ({len(own)} of {len(own)})")
    return Exercise(
        11, "static_training", "A whole training graph: built once, partly evaluated",
        "Build logistic regression's whole training graph, TensorFlow-1 style: placeholders x, y; Variables w, b; "
        "loss = binary_cross_entropy(sigmoid(x·w + b), y); train = GradientDescentOptimizer(0.1).minimize(loss) "
        "(the gradient nodes and one update per Variable). How many nodes does the graph have? How many does one "
        "training step, sess.run(train, {x: …, y: …}), evaluate (count the fed placeholders, as the lecture does)? "
        "How many are not evaluated, and why?",
        [Part("built", "nodes built:", built, Tolerance(0, 0)),
         Part("evaluated", "evaluated per step:", evaluated, Tolerance(0, 0)),
         Part("skipped", "not evaluated:", built - evaluated, Tolerance(0, 0)),
         Part("why", "why:", TRAINING_WHY_ANSWER, choices=TRAINING_WHY)],
        [f"The engine's graph: {breakdown(lr)}: **{built}** nodes, built once.",
         f"sess.run(train) evaluates what the two updates need: **{evaluated}** ({len(train.evaluated)} computed + "
         f"{len(train.fed_used)} fed).",
         f"Not evaluated: **{built - evaluated}** ({names}), {whose}: the backward part starts from "
         "d loss / d loss = 1, a constant, so the update never needs the loss's value.",
         "The notes' mini TensorFlow trains another model and counts 68 built, 54 evaluated: its 14 others are "
         "its loss's own two nodes (scale by 1/n, negate), where this engine's loss is one node (its BCE takes "
         "the mean in the same node, as PyTorch's does), and 12 gradient nodes built for placeholders and "
         "constants that nothing uses. The engine's gradients() builds gradient nodes only on paths to the "
         "Variables, so it has none of those 12."],
        page_link("Static_vs_dynamic", {"example": "logreg", "grads": False, "train": True,
                                        "fetch": "train step (SGD)"}),
        "Static vs dynamic: the training graph, with the train step's nodes lit")


def breakdown(example) -> str:
    from .static_vs_dynamic import breakdown_text, node_breakdown
    return breakdown_text(node_breakdown(example.graph))


def _ex12() -> Exercise:
    from .tensors_and_storage import embedding_backward
    r = embedding_backward([3, 1, 3])
    others = sum(1 for i, row in enumerate(r.grad) if i not in (1, 3) and any(v != 0 for v in row))
    return Exercise(
        12, "embedding", "An embedding's backward",
        "An embedding table looks up ids = [[3, 1, 3]]; the upstream gradient rows are g0 = [1, 2], g1 = [3, 4], "
        "g2 = [5, 6]. What is the gradient of table row 3? Of row 1? How many other rows get a non-zero gradient?",
        [Part("row3", "row 3:", r.grad[3], hints=[([5.0, 6.0], "that is only g2: row 3 was read twice, so g0 is added "
                                                                "too")]),
         Part("row1", "row 1:", r.grad[1]),
         Part("others", "other non-zero rows:", others, Tolerance(0, 0))],
        [f"The forward op is {r.forward_op}; its backward is **{', '.join(r.backward_ops)}**: each g_k is added "
         "into the row it was read from.",
         f"Row 3 was read at positions 0 and 2: g0 + g2 = **{nested(r.grad[3])}**; row 1 at position 1: "
         f"**{nested(r.grad[1])}**; every other row: 0 (so **{others}** others)."],
        page_link("Tensors_and_storage", {"ids": "3, 1, 3"}), "Tensors and storage: the embedding's scatter-add")


def _ex13(depth: int = 10) -> Exercise:
    from explorer.explain import harness
    rows = harness.doubling_chain_costs([depth])
    calls = {r["strategy"]: r["vjp_calls"] for r in rows}
    text, _ = harness.doubling_chain_program(depth)
    return Exercise(
        13, "paths", "Counting paths (bonus)",
        f"A chain v_k = v_(k−1)·v_(k−1) of depth {depth} (each node uses the previous one twice). Backpropagating "
        "by sending every contribution straight on along every path, how many VJP calls happen? And in "
        "topological order?",
        [Part("paths", "path recursion, VJP calls:", calls["path_recursion"], Tolerance(0, 0),
              hints=[(2 ** depth, f"2^{depth} counts the paths to the leaf; the VJP calls happen at the "
                                  "non-leaf nodes of the recursion tree: 2^d − 1")]),
         Part("topo", "topological order, VJP calls:", calls["topological"], Tolerance(0, 0))],
        [f"There are 2^{depth} = {2 ** depth} paths from f to x1. Path recursion calls a VJP at every node of its "
         f"recursion tree that is not the leaf: the engine counted **{calls['path_recursion']}** = 2^{depth} − 1.",
         f"In topological order each node's VJP runs once, after its adjoint is complete: **{calls['topological']}**."],
        page_link("Backprop_orders", {"expr": text, "at": "x1 = 1.0001", "orders": "topological,path_recursion"}),
        "Backprop orders on the doubling chain")


def _ex14() -> Exercise:
    from engine import static as tf
    g = tf.Graph(name="lecture")
    with g.as_default():
        x = tf.placeholder((4, 3), name="x")
        W = tf.Variable(np.ones((3, 2)), name="W")
        b = tf.Variable(np.zeros(2), name="b")
        xw = x @ W
        h = tf.relu(xw + b)
    built = len(g.nodes)
    feed = {x: np.ones((4, 3))}
    sess = tf.Session(g)
    sess.run(h, feed)
    run_h = len(sess.last_evaluated) + len(feed)     # the lecture counts the fed placeholder as evaluated
    sess.run(xw, feed)
    run_xw = len(sess.last_evaluated) + len(feed)
    return Exercise(
        14, "static_counts", "A static graph: nodes built, nodes evaluated (bonus)",
        "In a TensorFlow-1-style graph, h = relu(x·W + b) with x a placeholder and W, b variables. How many nodes "
        "does building it create? How many does sess.run(h, {x: …}) evaluate, and sess.run(x·W, {x: …})? "
        "(count the fed placeholder, as the lecture does)",
        [Part("built", "nodes built:", built, Tolerance(0, 0)),
         Part("run_h", "evaluated for h:", run_h, Tolerance(0, 0)),
         Part("run_xw", "evaluated for x·W:", run_xw, Tolerance(0, 0))],
        [f"Building creates x, W, b, matmul, add, relu: **{built}** nodes and computes nothing.",
         f"sess.run(h) needs all of them: **{run_h}** (x is fed, the other {run_h - 1} computed); "
         f"sess.run(x·W) needs only x, W and the matmul: **{run_xw}**."],
        page_link("Static_vs_dynamic", {}), "Static vs dynamic: run fetches and watch the nodes light up")



BUILDERS: dict[str, Callable[[], Exercise]] = {
    "gradient_step": _ex1, "fan_out": _ex2, "cube": _ex3, "vjp": _ex4, "passes": _ex5, "bfs": _ex6,
    "best_h": _ex7, "broadcast": _ex8, "memory": _ex9, "static_or_dynamic": _ex10, "static_training": _ex11,
    "embedding": _ex12, "paths": _ex13, "static_counts": _ex14,
}
# the picker's names: each exercise's own number and title, exactly as its heading says them (built exercises
# run the engine; the picker must not) — tests/test_exercises.py checks they agree
TITLES = {
    "gradient_step": "1 · One gradient-descent step",
    "fan_out": "2 · Fan-out: a variable with two users",
    "cube": "3 · x·x·x: one variable, three uses",
    "vjp": "4 · Vector–Jacobian product of y = Wx",
    "passes": "5 · Forward or reverse mode: how many passes?",
    "bfs": "6 · Breadth-first, pass on at first touch",
    "best_h": "7 · The best step for central differences",
    "broadcast": "8 · Broadcasting's backward",
    "memory": "9 · Memory kept for the backward pass",
    "static_or_dynamic": "10 · Static or dynamic graph?",
    "static_training": "11 · A whole training graph: built once, partly evaluated",
    "embedding": "12 · An embedding's backward",
    "paths": "13 · Counting paths (bonus)",
    "static_counts": "14 · A static graph: nodes built, nodes evaluated (bonus)",
}


def build(key: str) -> Exercise:
    """Build exercise ``key`` (running the engine for its answers).

    Raises:
        KeyError: unknown exercise.
    """
    if key not in BUILDERS:
        raise KeyError(f"unknown exercise {key!r}; known: {', '.join(BUILDERS)}")
    return BUILDERS[key]()
