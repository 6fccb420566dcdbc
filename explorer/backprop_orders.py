"""Backprop orders (page 5): the same graph backpropagated by the correct and by broken strategies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from explorer import explain as ex
from explorer.classroom import questions as q
from explorer.explain import ExpressionError, harness
from engine.strategies import PathRecursion

from explorer.explain.graph import adjoint_label, adjoint_names

from .kit.notes import NOTES
from .kit.budget import MAX_SIDE_BY_SIDE_OPS, check_program
from .kit.code_panel import failed_code, frame_code
from .kit.formatting import fmt_value, md_escape
from .kit.frames import FrameSet, build_frames
from .kit.layout import collapse_big, collapse_composites
from .kit.backward_view import shared_backward_figures, shared_forward_figures
from .kit.plotly_figure import figure_dict, plan
from .kit.programs import InputProblem, parse
from explorer.explain.numbers import count, fixed, percent

# what each order is, never whether it is right: the class judges that, and each order's verdict line says it from
# the step where it goes wrong (a label "(broken)" gave the answer away before the first step)
STRATEGY_LABELS = {
    "topological": "Topological",
    "bfs_first_touch": "BFS, first touch",
    "path_recursion": "Path recursion",
    "recursive_dfs": "Recursive DFS",
}
REFERENCE = "topological"   # the order the others are checked against (the engine's own)


# Path recursion on the page: enough VJP calls for a doubling chain of depth 10 (1,023), beyond which every
# step would be a frame of the animation (a depth-16 chain: 65,535 calls and more than a minute to draw); 4,096
# calls on a 20-element vector took 2 s of CPU (each event's values are recorded), the whole request's budget
PAGE_PATH_RECURSION = PathRecursion(max_vjp_calls=1_024, max_work=200_000)


@dataclass(frozen=True)
class Moment:
    """A step where an order goes wrong: ``frame`` is the 0-based frame, ``text`` says what happened."""
    frame: int
    kind: str      # 'finalised' (a node passed its adjoint on before all contributions arrived) | 'lost'
    node: str
    text: str


@dataclass
class OrderView:
    strategy: str
    trace: Any
    frameset: Any
    figure: dict                # explorer.kit.plotly_figure.figure_dict (plain dict, with frames)
    wrong: list[dict]          # inputs whose gradient differs from the topological one
    dropped: list[str]         # why: the contributions that were lost (event texts)
    error: str | None
    lost_step: int | None = None   # first frame where a contribution is lost (the wrong gradient starts)

    moments: list[Moment] = field(default_factory=list)   # where this order goes wrong, in step order
    backward_figure: dict = field(default_factory=dict)  # the backward graph in the slides' notation
    # the forward graph with values only, left to right over the backward graph's width (the output at the right,
    # where its adjoint is): what a projector shows while the forward pass runs, when the adjoints are still empty
    forward_figure: dict = field(default_factory=dict)

    @property
    def n_frames(self) -> int:
        return len(self.frameset.frames) if self.frameset is not None else 0

    def verdict_line(self, frame: int) -> tuple[str, str]:
        """``(kind, Markdown)`` of the one line under the order's name at ``frame``: what has gone wrong so
        far and nothing about what is to come ('ok' | 'wrong' | 'right'), so that no step is given away."""
        shown = self.moments_until(frame)
        if self.error and frame >= self.n_frames - 1:
            return "wrong", f"✗ failed: {self.error}"
        if shown:
            m = shown[-1]  # the latest: the earlier ones were this line at their own steps
            return "wrong", f"✗ step {m.frame + 1}: {m.text}"
        if frame >= self.n_frames - 1:
            if self.wrong:
                return "wrong", "✗ wrong gradient for " + ", ".join(w["input"] for w in self.wrong)
            if self.strategy == REFERENCE:   # the order every other one is checked against: not against itself
                return "right", "✓ the reference: reverse topological order"
            return "right", "✓ every gradient matches the topological order's"
        first = next((f.index for f in self.frameset.frames if f.phase != "forward"), None) \
            if self.frameset is not None else None
        if first is not None and frame < first:   # nothing has been taken yet: the backward pass is still to come
            return "ok", f"forward pass: no node taken yet (the backward pass starts at step {first + 1})"
        return "ok", "so far every node was taken with all its contributions"

    @property
    def verdict_frame(self) -> int | None:
        """The first frame from which the verdict (wrong gradient) is shown: where the order first goes
        wrong, or the last frame for a wrong gradient without a recorded moment; None when it is right."""
        if self.moments:
            return self.moments[0].frame
        if self.wrong or self.error:
            return max(self.n_frames - 1, 0)
        return None

    def moments_until(self, frame: int) -> list[Moment]:
        """The moments on or before ``frame`` (what the page has shown so far)."""
        return [m for m in self.moments if m.frame <= frame]

    def code(self, step: int):
        """This strategy's own code at frame ``step``, the lines that ran marked (``explorer.kit.code_panel``)."""
        if self.trace is None or self.frameset is None:
            return failed_code(self.strategy, self.error or "no trace")
        return frame_code(self.trace, self.frameset, min(max(step, 0), self.n_frames - 1), self.strategy)


@dataclass
class OrdersModel:
    program: Any
    inputs: dict
    drawing: Any               # one placement shared by every order (explorer.kit.plotly_figure.Drawing)
    correct: dict
    views: dict[str, OrderView]

    @property
    def n_frames(self) -> int:
        return max((v.n_frames for v in self.views.values()), default=1)


ORDER_WIDTH = 460   # px per graph: two orders side by side in a 1400 px window (measured in Chromium)


def orders_model(program_text: str, inputs_text: str, strategies: tuple[str, ...],
                 width: int = ORDER_WIDTH, back_max_height: int = 620, forward_graphs: bool = False) -> OrdersModel:
    """The same program backpropagated with each strategy (the real engine each time).

    Every order is drawn on one placement (nodes stay put when comparing), planned for ``width`` px
    from the texts of all orders' frames; so is every order's backward graph (``kit/backward_view``:
    x̄ nodes, reversed edges with their contributions, fan-out sums), at most ``back_max_height`` px tall.
    A node finalised too early is drawn wrong (red) from the step it is finalised. ``forward_graphs``: also each
    order's forward graph with values only, left to right within ``width`` x ``back_max_height`` (the projector
    shows it in the backward graph's place during the forward steps).
    """
    program, inputs = parse(program_text, inputs_text)
    try:
        check_program(program, inputs, 3 * (len(strategies) + 1),
                      "backprop orders", max_ops=MAX_SIDE_BY_SIDE_OPS)
        reference = ex.record_execution(program, inputs, strategy="topological")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    traces = {}
    for s in strategies:
        strategy = PAGE_PATH_RECURSION if s == "path_recursion" else s
        try:
            traces[s] = reference if s == "topological" else ex.record_execution(program, inputs, strategy=strategy)
        except ExpressionError as e:
            raise InputProblem("program", e) from None
    full = collapse_composites(reference).graph.without_constants()

    def drawn(tr):
        return collapse_big(collapse_composites(tr), full)

    shown = drawn(reference)[1]
    shown_traces = {s: drawn(tr)[0] for s, tr in traces.items() if tr.error is None}
    framesets = {s: build_frames(tr, shown) for s, tr in shown_traces.items()}
    every = framesets.get("topological") or next(iter(framesets.values()), None) or build_frames(drawn(reference)[0], shown)
    union = FrameSet(every.node_ids, [f for fs in framesets.values() for f in fs.frames] or every.frames,
                     heads=every.heads, edges=every.edges)
    drawing = plan(union, shown, width)
    views: dict[str, OrderView] = {}
    for s in strategies:
        if traces[s].error is not None:  # a failed run keeps nothing but its message (no events, no frames)
            views[s] = OrderView(s, None, None, {}, [], [], traces[s].error)
            continue
        trace = shown_traces[s]     # the engine's events as drawn (composites as one node)
        frameset = framesets[s]
        wrong = []
        # whole arrays: the plain values stop at 64 elements (a 10x10 input's gradient was always "wrong")
        for name, correct in reference.grad_arrays.items():
            got = traces[s].grad_arrays.get(name)
            if not same_gradient(got, correct):
                wrong.append({"input": name, "this order gives": fmt_value(got), "correct": fmt_value(correct)})
        dropped = [e.text for e in trace.backward if e.kind == "lost"]
        lost_step = next((f.index for f in frameset.frames if "lost" in f.node_state), None)
        moments = wrong_moments(trace, frameset)
        mark_finalised_early(frameset, moments)
        # the page shows one frame per Step: each is built when read (building and keeping every frame of four
        # orders' figures, forward and backward, was most of the request's CPU and memory)
        views[s] = OrderView(s, trace, frameset, figure_dict(frameset, shown, drawing, frames_on_read=True), wrong,
                             dropped, getattr(trace, "error", None), lost_step, moments)
    drawn_orders = [s for s, v in views.items() if v.frameset is not None]
    if drawn_orders:  # one placement for every order's backward graph too
        backs = shared_backward_figures([views[s].frameset for s in drawn_orders], shown, width, back_max_height,
                                        frames_on_read=True)
        for s, b in zip(drawn_orders, backs):
            views[s].backward_figure = b
        if forward_graphs:   # every order runs the same forward pass: one placement, from the forward frames
            fronts = shared_forward_figures([views[s].frameset for s in drawn_orders], shown, width,
                                            back_max_height, frames_on_read=True)
            for s, front in zip(drawn_orders, fronts):
                views[s].forward_figure = front
    return OrdersModel(program, inputs, drawing, reference.grads, views)


def mark_finalised_early(frameset, moments: list[Moment]) -> None:
    """A node finalised before all its contributions arrived is drawn wrong ('early') from that step on."""
    for m in moments:
        if m.kind != "finalised":
            continue
        i = next((j for j, h in enumerate(frameset.heads) if h == m.node or h.startswith(m.node + " =")), None)
        if i is None:
            continue
        for f in frameset.frames[m.frame:]:
            if f.node_state[i] not in ("active", "lost"):  # being taken, or a contribution lost: shown as such
                f.node_state[i] = "early"


def _backward_frames(frameset) -> tuple[int | None, int]:
    """(index of the first backward frame, backward steps per frame)."""
    first = next((f.index for f in frameset.frames if f.phase == "backward"), None)
    return first, max(int(getattr(frameset, "backward_per_frame", 1) or 1), 1)


def wrong_moments(trace, frameset) -> list[Moment]:
    """Where a backward order goes wrong, read from the engine's recorded events.

    A node is *finalised early* at the step that takes it (``visit``) while its running sum holds fewer
    contributions than it has consumers (``k of n received``, k < n): from that step on its adjoint, and
    every gradient it feeds, is wrong. A contribution is *lost* when it reaches a node already taken.
    Returns the moments in step order, each with the frame that shows its step.
    """
    first, per = _backward_frames(frameset)
    if first is None:
        return []
    last_frame = len(frameset.frames) - 1
    name = {n.id: n.name for n in trace.graph.nodes}
    adjoint_of = adjoint_names(trace.graph)
    leaves = {n.id for n in trace.graph.nodes if n.op == "leaf"}
    held: dict[int, tuple[int, int]] = {}     # node -> (received, expected) of its running sum
    out: list[Moment] = []
    taken: set[int] = set()
    for g, events in enumerate(trace.steps()):
        frame = min(first + g // per, last_frame)
        for e in events:
            if e.kind == "accumulate" and e.received is not None and e.expected is not None:
                held[e.node] = (e.received, e.expected)
            elif e.kind == "visit" and e.node not in taken:
                taken.add(e.node)
                got, want = held.get(e.node, (0, 0))
                if want and got < want:
                    who = name.get(e.node, f"#{e.node}")
                    what = (f"its adjoint {adjoint_label(adjoint_of, e.node, who)} = {_shown(e)} is final "
                            f"({who}.grad)" if e.node in leaves else
                            f"its adjoint {adjoint_label(adjoint_of, e.node, who)} = {_shown(e)} is passed on incomplete")
                    out.append(Moment(frame, "finalised", who,
                                      f"{who} finalised with {got} of {want} contributions: {what}"))
            elif e.kind == "lost":
                who = name.get(e.node, f"#{e.node}")
                out.append(Moment(frame, "lost", who,
                                  f"LOST: the contribution {_shown(e)} reached {who} after {who} was "
                                  f"finalised — it is never added"))
    return out


def _shown(e) -> str:
    """An event's value as a verdict writes it (a tensor over 64 elements by its first numbers and shape)."""
    return fmt_value(e.value) if e.value is not None else (e.shown or "…")


def order_rows(strategies: tuple[str, ...], side_by_side: bool) -> list[list[str]]:
    """How the orders' graphs are arranged: rows of two side by side when a graph fits half the page
    (``side_by_side``: drawn at :data:`ORDER_WIDTH` without shrinking), else one per row, so that no
    label has to shrink or overlap."""
    per_row = 2 if side_by_side else 1
    items = list(strategies)
    return [items[i:i + per_row] for i in range(0, len(items), per_row)]


# presentation mode: each order in a row of its own, its verdict and the step's caption over its graph, its code beside
# the graph; the graph takes PRESENT_GRAPH_SHARE of the page's width (the slide example's backward graph, its texts at
# 23 px of the 1920 x 1080 layout, 16 px on a 1366 x 768 projector, its ranks as far apart as a contribution is wide)
# and at most PRESENT_BACK_PX of its height: two rows, the step buttons over them, on the first screen
PRESENT_GRAPH_SHARE = 0.68
PRESENT_BACK_PX = 340


def fits_half_width(model: "OrdersModel", zoom: float = 1.0, max_height: float | None = None) -> bool:
    """Whether the shared drawing fits the width it was laid out for at full size (no shrinking, no window) and,
    drawn ``zoom`` times larger (presentation mode), is at most ``max_height`` px tall."""
    d = model.drawing
    if d is None or d.viewport is not None or d.scale < 0.999:
        return False
    return max_height is None or zoom <= 1.0 or d.placement.height * d.scale * zoom <= max_height


def same_gradient(got: np.ndarray | None, correct: np.ndarray) -> bool:
    """Whether an order's gradient is the correct one: every element within 1e-9 of the largest finite |correct|
    (at least 1), an inf or a nan where the correct gradient has the same (the orders add in other orders)."""
    if got is None or np.shape(got) != np.shape(correct):
        return False
    finite = np.abs(correct[np.isfinite(correct)])
    scale = max(1.0, float(finite.max(initial=0.0)))
    return bool(np.allclose(got, correct, rtol=0.0, atol=1e-9 * scale, equal_nan=True))


_COST_ROWS: dict[int, list[dict]] = {}  # depth -> the harness's rows (deterministic; 14 depths at most)


def path_recursion_costs_within(max_depth: int, seconds: float) -> tuple[dict[str, tuple[list[int], list[int]]], int]:
    """:func:`path_recursion_costs` for the depths that fit in ``seconds`` (at least one new depth), each
    depth measured once per process: ``(series so far, deepest depth measured)``. Depth 14 alone makes
    16,383 VJP calls (1-4 s on a busy machine), so the page measures the depths across reruns."""
    import time
    t0, start = time.perf_counter(), len(_COST_ROWS)
    for d in range(1, max_depth + 1):
        if d not in _COST_ROWS:
            if len(_COST_ROWS) > start and time.perf_counter() - t0 >= seconds:
                break
            _COST_ROWS[d] = harness.doubling_chain_costs([d])
    done = next((d - 1 for d in range(1, max_depth + 1) if d not in _COST_ROWS), max_depth)
    return _series([r for d in range(1, done + 1) for r in _COST_ROWS[d]]), done


def path_recursion_costs(max_depth: int) -> dict[str, tuple[list[int], list[int]]]:
    """VJP calls per strategy on the doubling chain, depth 1..max_depth: ``strategy -> (depths, calls)``."""
    return _series(harness.doubling_chain_costs(list(range(1, max_depth + 1))))


def _series(rows) -> dict[str, tuple[list[int], list[int]]]:
    series: dict[str, tuple[list[int], list[int]]] = {}
    for r in rows:
        xs, ys = series.setdefault(STRATEGY_LABELS.get(r["strategy"], r["strategy"]), ([], []))
        xs.append(r["depth"])
        ys.append(r["vjp_calls"])
    return series


NOTES_BFS_WRONG = NOTES["bfs_wrong"].value  # the lecture notes: breadth-first first touch wrong on 189 of 200
# the random-graph statistic's defaults (graphs, ops per graph, first seed): the graphs `python -m
# explorer.student_code` runs too, counted wrong by the same criterion (harness.gradients_wrong)
RANDOM_DEFAULTS = (harness.RANDOM_GRAPHS, harness.RANDOM_OPS, 0)
RANDOM_CRITERION = harness.WRONG_GRADIENTS


def random_graph_table(n_graphs: int, n_ops: int, seed: int) -> list[dict]:
    """Random-DAG statistics per strategy: how often wrong (count and rate), errors, mean VJP calls and
    backward ops. Raises ValueError beyond the harness's bounds (500 graphs, 60 ops, 6000 ops in all)."""
    rows = harness.strategy_comparison(n_graphs=n_graphs, n_ops=n_ops, seed=seed)
    return _table(rows)


def _table(rows) -> list[dict]:
    return [{"order": STRATEGY_LABELS.get(r.strategy, r.strategy), "graphs": r.graphs,
             "wrong gradients": r.wrong, "wrong rate": percent(r.wrong / max(1, r.graphs)),
             "errors": r.errors, "mean VJP calls": fixed(r.mean_vjp_calls),
             "mean backward ops": fixed(r.mean_backward_ops)} for r in rows]


class RandomGraphRun:
    """The statistics of :func:`random_graph_table`, computed a slice of graphs at a time so that no rerun
    of the page waits for all of them (200 graphs of 30 ops take 3-10 s on a busy machine): the page calls
    :meth:`advance` with a time slice on each rerun (a fragment polls it) and shows a progress bar until
    :attr:`finished`. The same graphs (``random_dag_program(n_ops, seed + i)``) and the same engine runs as
    :func:`harness.strategy_comparison`, so the finished table equals :func:`random_graph_table`'s.

    Raises:
        ValueError: beyond the harness's bounds (as :func:`random_graph_table`).
    """

    def __init__(self, n_graphs: int, n_ops: int, seed: int) -> None:
        if not 1 <= n_graphs <= harness.STATS_MAX_GRAPHS or not 1 <= n_ops <= harness.STATS_MAX_OPS \
                or n_graphs * n_ops > harness.STATS_MAX_TOTAL_OPS:
            raise ValueError(f"at most {harness.STATS_MAX_GRAPHS} graphs of at most {harness.STATS_MAX_OPS} ops "
                             f"and {count(harness.STATS_MAX_TOTAL_OPS)} ops in all (asked for {n_graphs} of {n_ops})")
        self.key = (n_graphs, n_ops, seed)
        self.n_graphs, self.n_ops, self.seed = n_graphs, n_ops, seed
        self.done = 0
        self.cancelled = False
        self._sums: dict[str, dict] = {}

    @property
    def finished(self) -> bool:
        return self.done >= self.n_graphs

    def advance(self, seconds: float) -> bool:
        """Run graphs until ``seconds`` have passed (at least one graph); True when all are done."""
        import time
        t0, start = time.perf_counter(), self.done
        while not self.finished and (time.perf_counter() - t0 < seconds or self.done == start):
            prog = harness.random_dag_program(self.n_ops, self.seed + self.done)
            for r in harness.strategy_comparison(programs=[prog]):
                t = self._sums.setdefault(r.strategy, {"wrong": 0, "errors": 0, "calls": 0.0, "ops": 0.0,
                                                       "worst": 0.0})
                t["wrong"] += r.wrong
                t["errors"] += r.errors
                t["calls"] += r.mean_vjp_calls
                t["ops"] += r.mean_backward_ops
                t["worst"] = max(t["worst"], r.max_abs_error)
            self.done += 1
        return self.finished

    def table(self) -> list[dict]:
        """The table over the graphs done so far (all of them once :attr:`finished`)."""
        n = max(1, self.done)
        return _table([harness.StrategyRow(s, self.done, t["wrong"], t["errors"], t["calls"] / n, t["ops"] / n,
                                           t["worst"]) for s, t in self._sums.items()])


def bfs_rate_text(table: list[dict]) -> str:
    """The BFS error rate of a :func:`random_graph_table` beside the notes' (Markdown)."""
    row = next((r for r in table if r["order"] == STRATEGY_LABELS["bfs_first_touch"]), None)
    if row is None:
        return ""
    wrong, total = NOTES_BFS_WRONG
    return (f"Breadth-first, first touch: **wrong on {row['wrong gradients']} of {row['graphs']} graphs "
            f"({row['wrong rate']})**. The lecture notes report {wrong} of {total} "
            f"({percent(wrong / total)}) on their own random graphs.")


def deep_chain_results(depth: int) -> list[dict]:
    """Backprop the notes' chain h <- h * 1.0002, ``depth`` deep, with recursive DFS and with the topological
    order (never raises: the RecursionError of the recursive sort is caught by the explain layer and
    reported as text). ``exact`` is 1.0002 ** depth (1.8220094911 at 3000)."""
    import sys
    out = []
    for s in ("recursive_dfs", "topological"):
        # the real backward pass with an observer that only counts: recording every event of a 20,000-node
        # chain took 2-16 s on a busy machine (and hit the request's deadline)
        y, x = harness.deep_chain(depth)
        grads, _, _, error = harness._gradients(y, {"x1": x}, s)
        if error == "RecursionError":
            error = (f"RecursionError: maximum recursion depth exceeded (Python's limit is "
                     f"{sys.getrecursionlimit()} frames; the graph is deeper than that)")
        out.append({"strategy": s, "depth": depth, "error": error,
                    "grads": {} if error else {k: fmt_value(float(np.asarray(v).reshape(-1)[0]), 11)
                                               for k, v in grads.items()},
                    "exact": fmt_value(harness.CHAIN_FACTOR ** depth, 11)})
    return out


# --- one step of every order, as plain data: the walk-through file --------------------------------------------

# 'ok' in the text's own colour (a grey line was hard to read from the back row)
VERDICT_COLOUR = {"ok": "inherit", "wrong": "#b91c1c", "right": "#15803d"}
# the same in Streamlit Markdown's colour names ('' = the text colour)
VERDICT_MARKDOWN_COLOUR = {"ok": "", "wrong": "red", "right": "green"}


def verdict_markdown(kind: str, line: str) -> str:
    """The verdict line in bold, as Markdown: red when wrong, green when right, else in the text colour."""
    colour = VERDICT_MARKDOWN_COLOUR[kind]
    bold = f"**{md_escape(line)}**"
    return f":{colour}[{bold}]" if colour else bold


def _order_blocks(view: OrderView, step: int) -> list[dict]:
    """One order at the 1-based ``step`` as the page draws it: its name and verdict line, the step's caption, the
    forward graph over the backward graph, the moments so far, its failure or the wrong gradients at the end."""
    import html as _html

    import pandas as pd

    from .kit.figures import laptop_still
    name = f"<h5>{_html.escape(STRATEGY_LABELS[view.strategy])}</h5>"
    if not view.n_frames:
        return [{"kind": "html", "html": name + (f"<p class='adx-error'>This order failed: {_html.escape(view.error)}"
                                                 "</p>" if view.error else "")}]
    k = min(step, view.n_frames) - 1
    fr = view.frameset.frames[k]
    kind, line = view.verdict_line(k)
    blocks: list[dict] = [{"kind": "html", "html": (
        f"{name}<p style='color:{VERDICT_COLOUR[kind]}'><b>{_html.escape(line)}</b></p>"
        f"<p><b>Step {k + 1} of {view.n_frames}</b> · {_html.escape(fr.phase)}: {_html.escape(fr.caption)}</p>")},
        {"kind": "plot", "figure": laptop_still(view.figure, k)}]
    if view.backward_figure:
        blocks.append({"kind": "plot", "figure": laptop_still(view.backward_figure, k)})
    notes = "".join(f"<p class='adx-warning'><b>Step {m.frame + 1}: {_html.escape(m.text)}</b></p>"
                    for m in view.moments_until(k))
    if view.error:
        notes += f"<p class='adx-error'>This order failed: {_html.escape(view.error)}</p>"
    elif view.wrong and k == view.n_frames - 1:
        notes += pd.DataFrame(view.wrong).to_html(index=False, border=0, classes="adx-table")  # escapes cells
    if notes:
        blocks.append({"kind": "html", "html": notes})
    return blocks


def step_class_view(model: OrdersModel, orders: tuple[str, ...], step: int, side_by_side: bool):
    """The 1-based ``step`` of every order in ``orders`` as the page draws it, as plain data
    (:class:`explorer.classroom.views.ClassView`): the orders in the page's rows (:func:`order_rows`), the backward
    graphs' legend, then each order's own code with the step's lines lit."""
    from explorer.classroom.views import ClassView
    from .kit.backward_view import legend_html
    from .kit.code_panel import font_px, to_html
    view = ClassView("Backprop_orders", "Backprop orders", f"<h4>Step {int(step)} of {model.n_frames}</h4>")
    for row in order_rows(orders, side_by_side):
        view.add_row([{"kind": "column", "blocks": _order_blocks(model.views[s], step)} for s in row], [1] * len(row))
    view.add_html(legend_html())
    view.add_html("<p><b>Each order's own code at this step</b> — the lines that did the step's work are lit</p>")
    code = []
    for s in orders:
        c = model.views[s].code(step - 1)
        code.append({"kind": "column", "blocks": [
            {"kind": "html", "html": f"<p><b>{STRATEGY_LABELS[s]}</b> — {markdown_inline(c.caption)}</p>"},
            {"kind": "html", "html": to_html(c, font_px(False), test_id=f"code-panel-{s}")}]})
    view.add_row(code, [1] * len(code))
    return view


def markdown_inline(text: str) -> str:
    """A code caption (Markdown) as inline HTML: escaped, its ``**bold**`` and ``code`` kept."""
    from explorer.classroom.views import markdown_html
    return markdown_html(text).removeprefix("<p>").removesuffix("</p>")


def walkthrough(model: OrdersModel, orders: tuple[str, ...], side_by_side: bool, program_text: str,
                inputs_text: str) -> str:
    """Every step of the orders in one self-contained HTML file (:func:`explorer.kit.export_html.walkthrough_html`).

    Raises:
        explorer.kit.export_html.ExportTooBig: the file would be too large to email.
    """
    from .kit.export_html import walkthrough_html
    views = [step_class_view(model, orders, k, side_by_side) for k in range(1, model.n_frames + 1)]
    return walkthrough_html("Backprop orders: a walk-through", views,
                            source=f"{program_text.strip()}\nat {inputs_text.strip()}\norders: "
                                   + ", ".join(STRATEGY_LABELS[s] for s in orders))


# --- the class's questions ---------------------------------------------------------------------------

def order_questions(program_text: str, inputs_text: str, orders: tuple[str, ...]) -> list[q.Proposal]:
    """"Is this order right?" for each of ``orders``: the engine runs the program with each one, and the answer is
    the page's own verdict (:func:`same_gradient` on every input's gradient). None where the program is refused."""
    try:    # the page's own budget (one run per order), estimated before anything runs
        program, inputs = parse(program_text, inputs_text)
        check_program(program, inputs, 3 * (len(orders) + 1), "backprop orders", max_ops=MAX_SIDE_BY_SIDE_OPS)
        reference = ex.record_execution(program, inputs, strategy="topological")
    except (ExpressionError, InputProblem):
        return []
    out = []
    for s in orders:
        strategy = PAGE_PATH_RECURSION if s == "path_recursion" else s
        try:
            tr = reference if s == "topological" else ex.record_execution(program, inputs, strategy=strategy)
        except ExpressionError:
            continue
        right = tr.error is None and all(same_gradient(tr.grad_arrays.get(name), correct)
                                         for name, correct in reference.grad_arrays.items())
        label = STRATEGY_LABELS.get(s, s)   # what the order is, not whether it is right
        out.append(q.Proposal(f"Is “{label}” right?", f"Does the order “{label}” give the right gradients here?",
                              "choice", q.YES if right else q.NO, 0.0, (q.YES, q.NO)))
    return out


@q.register_questions("Backprop_orders")
def class_questions(params: Mapping[str, str]) -> list[q.Proposal]:
    """The page's questions from its link parameters: the next backward step of the program (as on the Expression
    explorer), then "is this order right?" for each order shown (``orders``, comma-separated)."""
    out = q.program_questions(params)
    expr, at = params.get("expr"), params.get("at")
    if expr is not None and at is not None:
        out += order_questions(expr, at, tuple(o for o in str(params.get("orders", "")).split(",") if o))
    return out
