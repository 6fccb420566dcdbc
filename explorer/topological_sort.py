"""Topological sort (page 4): the slides' queue method step by step beside the engine's own DFS order,
and a check of an order the student clicks together.

Everything starts from a program run on the engine (``explorer.explain.run_forward``): the graph is the
one the engine recorded, the values are the ones it computed, and the DFS order is what
``engine.topological_sort`` returns on the engine's own output tensor. To show *how* the engine's DFS
walked, the sort is also run on thin stand-ins for the tensors (the HW2 protocol: ``unique_id``,
``parents``, ``is_constant``, ``is_leaf``) that note each time the sort reads a node's inputs; the
order they produce is checked to be the engine's. No Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from engine import autodiff
from explorer import explain as ex
from explorer.classroom import questions as q
from explorer.explain.graph import Graph, GraphEdge
from explorer.explain.numbers import fmt, num

from .kit.frames import Frame, FrameSet
from .kit.labels import node_formulas
from .kit.plotly_figure import DESIGN_WIDTH, figure_dict, plan
from .kit.programs import InputProblem, parse


@dataclass(frozen=True)
class SortPreset:
    label: str
    program: str
    inputs: str


PRESETS: dict[str, SortPreset] = {
    "slide": SortPreset("Slide example: x3 = 1.5·x1 … x7 = x1 + x6",
                        "x3 = 1.5 * x1\nx4 = 2 * x2\nx5 = x3 + x4\nx6 = exp(x5)\nx7 = x1 + x6", "x1 = 3, x2 = 0.5"),
    "sigmoid": SortPreset("Sigmoid quiz: v7 = 1 / (1 + exp(−v1·v2))",
                          "v3 = v1 * v2\nv4 = -v3\nv5 = exp(v4)\nv6 = 1 + v5\nv7 = 1 / v6", "v1 = 0.8, v2 = -1.5"),
    "cube": SortPreset("x·x·x as v2 = v1·v1, v3 = v2·v1", "v2 = v1 * v1\nv3 = v2 * v1", "v1 = 2"),
    "fanout": SortPreset("(x1 + x2)·exp(x1): x1 has two users", "s = x1 + x2\ne = exp(x1)\nf = s * e",
                         "x1 = 1, x2 = 2"),
    "neuron": SortPreset("A neuron and its loss: p = σ(w·x + b), L = −log p",
                         "z = w * x\na = z + b\np = sigmoid(a)\nlp = log(p)\nL = -lp", "w = 0.5, x = 2, b = 0.3"),
}
DEFAULT_PRESET = "slide"

# node fill colours by state (the legend uses the same words); every fill keeps the renderer's text
# colours WCAG-AA readable (contrast >= 4.5)
COLOURS = {"waiting": "#ffffff", "ready": "#fef08a", "taken": "#fed7aa", "processed": "#bbf7d0",
           "clicked": "#bfdbfe", "violated": "#fecaca"}
VIOLATED_EDGE = "#b91c1c"   # the edge a student's order breaks: red, drawn thick


@dataclass
class QueueStep:
    """One step of the queue method: the nodes with no unprocessed input, and the one taken."""
    index: int
    ready: list[int]          # node ids with every input processed (the queue), in arrival order
    taken: int                # the node taken now (front of the queue)
    processed: list[int]      # processed before this step, in order
    value: Any                # the value the engine computed for the taken node


@dataclass
class SortModel:
    key: str
    preset: SortPreset
    graph: Graph              # the engine's graph without constant nodes (numbers fold into op labels)
    queue_steps: list[QueueStep]
    engine_order: list[int]   # engine.topological_sort(output): output first (the backward pass's order)
    dfs_reads: list[int]      # the order in which the engine's DFS read each node's inputs
    names: dict[int, str] = field(default_factory=dict)
    computes: dict[int, str] = field(default_factory=dict)   # "1.5 * x1" (what the node computes)

    @property
    def node_ids(self) -> list[int]:
        return [n.id for n in self.graph.nodes]

    def name(self, node_id: int) -> str:
        return self.names[node_id]

    def queue_order(self) -> list[int]:
        return [s.taken for s in self.queue_steps]

    def post_order(self) -> list[int]:
        """The DFS finishing order (inputs first): the engine's order reversed."""
        return self.engine_order[::-1]

    def id_of(self, name: str) -> int | None:
        return next((i for i, n in self.names.items() if n == name), None)


class _Watched:
    """A stand-in for one graph node that notes when the sort reads its inputs (HW2's protocol)."""

    __slots__ = ("unique_id", "_parents", "_leaf", "_log")

    def __init__(self, node_id: int, leaf: bool, log: list[int]):
        self.unique_id = node_id
        self._parents: list["_Watched"] = []
        self._leaf = leaf
        self._log = log

    @property
    def parents(self):
        self._log.append(self.unique_id)
        return list(self._parents)

    def is_leaf(self) -> bool:
        return self._leaf

    def is_constant(self) -> bool:
        return False


def engine_dfs(graph: Graph, parent_order: dict[int, list[int]]) -> tuple[list[int], list[int]]:
    """Run ``engine.topological_sort`` on stand-ins of ``graph``: (its order, output first; reads).

    ``parent_order`` gives each node's inputs in the order the engine's tensors list them (with
    repeats, e.g. ``v1 * v1``), so the walk is the one the engine makes on the real tensors.
    """
    log: list[int] = []
    stand_in = {n.id: _Watched(n.id, n.op == "leaf", log) for n in graph.nodes}
    for nid, parents in parent_order.items():
        stand_in[nid]._parents = [stand_in[p] for p in parents if p in stand_in]
    order = autodiff.topological_sort(stand_in[graph.output])
    return [v.unique_id for v in order], log


def queue_method(graph: Graph, values: dict[int, Any]) -> list[QueueStep]:
    """The slides' method: repeatedly take a node none of whose inputs is unprocessed.

    The nodes that become ready wait in a first-in-first-out queue (inputs in program order first);
    each step takes the front one.
    """
    remaining = {n.id: len(set(graph.parents(n.id))) for n in graph.nodes}
    queue = [n.id for n in graph.nodes if remaining[n.id] == 0]
    processed: list[int] = []
    steps = []
    while queue:
        taken = queue[0]
        steps.append(QueueStep(len(steps), list(queue), taken, list(processed), values.get(taken)))
        queue.pop(0)
        processed.append(taken)
        for child in dict.fromkeys(graph.children(taken)):
            remaining[child] -= 1
            if remaining[child] == 0:
                queue.append(child)
    if len(processed) != len(graph.nodes):  # cannot happen for a recorded computation (no cycles)
        raise ValueError("the graph has a cycle: no node is left without unprocessed inputs")
    return steps


def sort_model(key: str) -> SortModel:
    """Run preset ``key`` on the engine and prepare both orders.

    Raises:
        KeyError: unknown preset.
    """
    preset = PRESETS[key]
    program, inputs = parse(preset.program, preset.inputs)
    try:
        run = ex.run_forward(program, inputs)
    except ex.ExpressionError as e:  # the presets run; kept so a bad edit shows up as a message
        raise InputProblem("program", e) from None
    graph = run.graph.without_constants()
    shown = {n.id for n in graph.nodes}
    values = {n.id: n.value for n in graph.nodes}
    # the engine's own order, on the real tensors
    real = autodiff.topological_sort(run.output)
    engine_order = [run.id_of[t.unique_id] for t in real]
    parent_order = {nid: [run.id_of[p.unique_id] for p in run.tensor_of[nid].parents
                          if run.id_of.get(p.unique_id) in shown]
                    for nid in shown}
    watched_order, reads = engine_dfs(graph, parent_order)
    if watched_order != engine_order:  # the stand-ins must walk exactly as the engine did
        raise AssertionError(f"DFS on stand-ins gave {watched_order}, the engine {engine_order}")
    computes = {}
    slide = node_formulas(run.graph)   # the slides' notation, as every other page writes it: 1.5·x1, not 1.5 * x1
    for n in graph.nodes:
        if n.op == "leaf":
            computes[n.id] = "input"
        elif n.expr.startswith(n.name + " ="):  # its own line of the program
            computes[n.id] = slide.get(n.id) or n.expr.split("=", 1)[1].strip()
        else:  # a temporary inside a longer line: op(arguments), numbers included
            computes[n.id] = f"{n.op}({', '.join(run.graph.node(p).name for p in run.graph.parents(n.id))})"
    return SortModel(key, preset, graph, queue_method(graph, values), engine_order, reads,
                     {n.id: n.name for n in graph.nodes}, computes)


# --- the student's order -----------------------------------------------------------------------------

@dataclass
class OrderCheck:
    valid: bool                    # no edge violated so far
    complete: bool                 # every node placed
    violated: tuple[int, int] | None = None   # (input, node): node was placed before its input
    position: int | None = None    # where the violation happened (0-based)
    message: str = ""


def check_order(model: SortModel, order: list[int]) -> OrderCheck:
    """Is ``order`` (node ids, first computed first) a valid topological order so far?

    A node may come only after every one of its inputs; the first node placed before one of its
    inputs names the violated edge.
    """
    placed: set[int] = set()
    for pos, nid in enumerate(order):
        missing = [p for p in dict.fromkeys(model.graph.parents(nid)) if p not in placed]
        if missing:
            p = missing[0]
            return OrderCheck(False, len(order) == len(model.graph.nodes), (p, nid), pos,
                              f"Not a topological order: {model.name(nid)} is computed from {model.name(p)} "
                              f"(edge {model.name(p)} → {model.name(nid)}), but {model.name(p)} "
                              f"{'comes later' if p in order else 'has not been computed yet'}.")
        placed.add(nid)
    complete = len(order) == len(model.graph.nodes)
    if complete:
        return OrderCheck(True, True, message="A valid topological order: every node comes after all of its inputs.")
    if not order:   # nothing to praise yet: say where to start
        return OrderCheck(True, False, message="Nothing placed yet: click first a node that is computed from no "
                                               "other node.")
    return OrderCheck(True, False, message=f"So far so good: {len(order)} of {len(model.graph.nodes)} placed, "
                                           "each after all of its inputs.")


def names_to_ids(model: SortModel, names: list[str]) -> tuple[list[int], list[str]]:
    """Node ids for names from a link (unknown or repeated names dropped and reported)."""
    ids, dropped = [], []
    for nm in names:
        nid = model.id_of(nm)
        if nid is None or nid in ids:
            dropped.append(nm)
        else:
            ids.append(nid)
    return ids, dropped


# --- tables and pictures ------------------------------------------------------------------------------

def queue_table(model: SortModel, upto: int, computes: bool = True) -> list[dict]:
    """Rows of the queue method up to step ``upto`` (inclusive). ``computes`` False leaves out what the taken node
    computes (a projector: the graph's boxes and the step's header say it, the table stands beside the graph)."""
    rows = []
    for s in model.queue_steps[:upto + 1]:
        row = {"step": s.index + 1, "ready (queue)": ", ".join(model.name(i) for i in s.ready),
               "taken": model.name(s.taken), "computes": _computes(model, s.taken), "value": fmt(s.value)}
        if not computes:
            del row["computes"]
        rows.append(row)
    return rows


PRESENT_GRAPH_SHARE = 2.1 / 3.1   # of the presentation page's width: the graph; the table of steps beside it


def _computes(model: SortModel, nid: int) -> str:
    return model.computes.get(nid, "")


def step_header(model: SortModel, frame: int) -> str:
    """The header of the queue method's 0-based ``frame`` (Markdown, names escaped): the ready nodes, as the
    legend names them, and the one taken with what it computes ("ready: x4 → take x4 = 2 * x2 = 1"; it read
    "no unprocessed inputs: x4", as if x4 were an unprocessed input)."""
    from .kit.formatting import md_escape
    qs = model.queue_steps[frame]
    ready = ", ".join(model.name(i) for i in qs.ready)
    return (f"#### Step {frame + 1} of {len(model.queue_steps)} · ready: **{md_escape(ready)}** → take "
            f"**{md_escape(model.name(qs.taken))}** {md_escape(computes_text(model, qs.taken))}")


def computes_text(model: SortModel, nid: int) -> str:
    """ "(an input) = 3" or "= 1.5 * x1 = 4.5": what taking the node computes, with the engine's value."""
    value = fmt(model.graph.node(nid).value)
    if model.graph.node(nid).op == "leaf":
        return f"(an input) = {value}"
    return f"= {_computes(model, nid)} = {value}"


def engine_order_text(model: SortModel) -> str:
    """The engine's own sort in one short paragraph (Markdown, names escaped): what ``engine.topological_sort``
    returns on the output, output first, and the forward order it is read backwards (the queue's or another valid
    one), beside the queue method's steps on a projector ("topological_sort(x7) returns x7, x6, x5, ...")."""
    from .kit.formatting import md_escape
    out = model.name(model.graph.output)
    # no break inside a list (a narrow column wrapped "x7, x6, x5, x3, x1, x4, | x2")
    order = ",\u00a0".join(model.name(i) for i in model.engine_order)
    back = ",\u00a0".join(model.name(i) for i in model.post_order())
    same = model.post_order() == model.queue_order()
    return (f"`topological_sort({out})` returns **{md_escape(order)}**: output first, the order the backward "
            f"pass walks. Read backwards ({md_escape(back)}) it is "
            + ("the queue's order." if same else "a valid forward order too, not the queue's."))


def order_rows(model: SortModel) -> list[dict]:
    """The two orders side by side (forward order: first computed first)."""
    queue = model.queue_order()
    post = model.post_order()
    return [{"position": k + 1, "queue method (slides)": model.name(queue[k]),
             "DFS post-order (engine)": model.name(post[k]),
             "engine.topological_sort (backward walks this)": model.name(model.engine_order[k])}
            for k in range(len(queue))]


def _drawn_graph(model: SortModel) -> Graph:
    """The graph as drawn: a repeated input (``v1 * v1``) is one arrow, enough to show the dependency."""
    seen: dict[tuple[int, int], GraphEdge] = {}
    for e in model.graph.edges:
        seen.setdefault((e.src, e.dst), GraphEdge(e.src, e.dst, e.arg))
    return Graph(list(model.graph.nodes), list(seen.values()), model.graph.output)


def graph_figure(model: SortModel, states: dict[int, str], notes: dict[int, str] | None = None,
                 bad_edge: tuple[int, int] | None = None, taken: int | None = None,
                 width: int = DESIGN_WIDTH, rankdir: str = "auto") -> dict:
    """The graph drawn by the shared renderer (``explorer.kit.plotly_figure``), one still picture.

    Each node's first line is ``x3 = 1.5 * x1`` (what it computes), its second line ``notes[id]`` (the
    engine's value, or the student's "#2"); the fill is its state (:data:`COLOURS`), ``taken`` also gets
    a thick dark outline, and ``bad_edge`` is drawn thick in :data:`VIOLATED_EDGE`. The placement is
    measured with room for every node's second line, so the nodes stay put from step to step and click
    to click. ``rankdir``: as :func:`~explorer.kit.plotly_figure.plan`'s, or "wide": left to right (a graph a few
    rows high, the table of steps beside it on a projector) when that draws it whole, else "auto".
    """
    graph = _drawn_graph(model)
    notes = notes or {}
    ids = [n.id for n in graph.nodes]
    heads = [n.name if n.op == "leaf" else f"{n.name} = {_computes(model, n.id)}" for n in graph.nodes]
    edges = [(e.src, e.dst) for e in graph.edges]
    frame = Frame(0, "still", "", [taken] if taken is not None else [], [bad_edge] if bad_edge else [],
                  [notes.get(i, "") for i in ids], [states.get(i, "waiting") for i in ids])
    # the longest second line any node can show: its value, or a badge "#12 ✗ before x10"
    longest = max((len(n.name) for n in graph.nodes), default=2)
    room = Frame(1, "still", "", [], [], [max(f"= {fmt(graph.node(i).value)}",
                                             f"#{len(ids)} ✗ before {'m' * longest}", key=len) for i in ids],
                 ["waiting"] * len(ids))
    fs = FrameSet(ids, [frame], heads=heads, edges=edges, hover=heads)
    measured = FrameSet(ids, [frame, room], heads=heads, edges=edges)
    drawing = plan(measured, graph, width, "LR" if rankdir == "wide" else rankdir, edge_labels=False)
    if rankdir == "wide" and drawing.viewport is not None:   # too wide to draw left to right whole
        drawing = plan(measured, graph, width, "auto", edge_labels=False)
    fig = figure_dict(fs, graph, drawing, width=width, title=False, edge_labels=False, palette=COLOURS)
    for tr in fig["data"][2:4]:  # the highlighted edge's line and arrowhead (see figure_dict's trace order)
        tr["line"]["color"] = VIOLATED_EDGE
        if "fillcolor" in tr:
            tr["fillcolor"] = VIOLATED_EDGE
    return fig


QUEUE_LEGEND = [("processed", "processed"), ("taken", "taken now (thick outline)"),
                ("ready", "ready (queue): no unprocessed input"), ("waiting", "waiting for an input")]
ORDER_LEGEND = [("clicked", "placed (#k: its position)"), ("violated", "placed before one of its inputs"),
                ("waiting", "not placed yet")]


def legend_html(entries: list[tuple[str, str]], font_px: int = 16) -> str:
    """A row of colour swatches, ``(state, words)`` each (the fills of :func:`graph_figure`), plus the
    red violated edge when ``"violated"`` is among them. Static text only (nothing from the user)."""
    states = [k for k, _ in entries]
    sw = (f"display:inline-block;width:{font_px}px;height:{font_px}px;border:1.5px solid #374151;"
          "border-radius:3px;vertical-align:middle;margin-right:6px")
    items = [f"<span style='{sw};background:{COLOURS[k]}'></span>{words}" for k, words in entries]
    if "violated" in states:
        items.append(f"<span style='display:inline-block;width:{2 * font_px}px;height:4px;background:{VIOLATED_EDGE};"
                     f"vertical-align:middle;margin-right:6px'></span>the edge it breaks")
    return (f"<div data-testid='topo-legend' style='font-size:{font_px}px;color:#111827;display:flex;"
            "flex-wrap:wrap;gap:6px 22px'>" + "".join(f"<span>{i}</span>" for i in items) + "</div>")


def queue_notes(model: SortModel, step: int) -> dict[int, str]:
    """The engine's values of the inputs (given from the start, as the program's ``# at x1 = 3, x2 = 0.5`` and
    the slides' trace give them) and of the nodes computed so far (processed and the one taken now); "= ?" for
    the others (not computed yet). An input read "= ?" while it waited in the queue, as if its value were unknown."""
    s = model.queue_steps[step]
    done = {*s.processed, s.taken} | {n.id for n in model.graph.nodes if n.op == "leaf"}
    return {nid: f"= {fmt(model.graph.node(nid).value)}" if nid in done else "= ?" for nid in model.node_ids}


def queue_states(model: SortModel, step: int) -> dict[int, str]:
    s = model.queue_steps[step]
    states = {nid: "processed" for nid in s.processed}
    states.update({nid: "ready" for nid in s.ready})
    states[s.taken] = "taken"
    return states


def click_states(model: SortModel, order: list[int], check: OrderCheck) -> tuple[dict[int, str], dict[int, str]]:
    """States and "#k" badges for the student's order (the node placed too early: "#3 ✗ before x4")."""
    states = {nid: "clicked" for nid in order}
    badges = {nid: f"#{k + 1}" for k, nid in enumerate(order)}
    if check.violated is not None:
        src, dst = check.violated
        states[dst] = "violated"
        badges[dst] += f" ✗ before {model.name(src)}"
    return states, badges


# --- every step as plain data: the walk-through file --------------------------------------------------------

def step_class_view(model: SortModel, frame: int, legend_px: int = 15):
    """The queue method's 0-based ``frame`` as the page draws it (:class:`explorer.classroom.views.ClassView`): the
    step's header, the graph with the ready, taken and processed nodes, the legend and the table of steps."""
    import pandas as pd

    from explorer.classroom.views import ClassView, markdown_html
    qs = model.queue_steps[frame]
    view = ClassView("Topological_sort", "Topological sort", markdown_html(step_header(model, frame)))
    view.add_plot(graph_figure(model, queue_states(model, frame), queue_notes(model, frame), taken=qs.taken))
    view.add_html(legend_html(QUEUE_LEGEND, legend_px))
    view.add_html(pd.DataFrame(queue_table(model, frame)).to_html(index=False, border=0, classes="adx-table"))
    return view


def walkthrough(model: SortModel) -> str:
    """The queue method's steps on ``model``'s graph in one self-contained HTML file
    (:func:`explorer.kit.export_html.walkthrough_html`), under the program."""
    from .kit.export_html import walkthrough_html
    views = [step_class_view(model, k) for k in range(len(model.queue_steps))]
    return walkthrough_html("Topological sort (the slides' queue method): a walk-through", views,
                            source=f"{model.preset.program}\n# at {model.preset.inputs}")


# --- the class's questions ---------------------------------------------------------------------------

def queue_questions(model: SortModel, step: int) -> list[q.Proposal]:
    """After 1-based ``step`` of the queue method: which node it takes next (the front of the queue) and the value
    the engine computed for that node, read from ``model``'s recorded steps."""
    steps = model.queue_steps
    if not 1 <= step < len(steps):
        return []
    nxt = steps[step]
    done = set(nxt.processed)
    candidates = [model.name(i) for i in model.node_ids if i not in done]
    right = model.name(nxt.taken)
    out = []
    if len(candidates) > 1:
        out.append(q.Proposal("Which node is taken next?", "The queue method takes the front of the queue. "
                              "Which node is taken next?", "choice", right, 0.0, q.node_choices(candidates, right)))
    value = q.scalar(nxt.value)
    if value is not None:
        out.append(q.Proposal(f"The value of {right}", f"{right} is taken next. What value does the engine compute "
                              "for it?", "number", num(value), q.QUESTION_RTOL))
    return out


@q.register_questions("Topological_sort")
def class_questions(params: Mapping[str, str]) -> list[q.Proposal]:
    """The page's questions from its link parameters: :func:`queue_questions` on the linked preset and step."""
    try:
        return queue_questions(sort_model(str(params.get("preset"))), int(params.get("step", 1)))
    except (KeyError, ValueError, InputProblem):
        return []
