"""Everything the "Static vs dynamic" page shows, computed on the real engine (no Streamlit here).

* :func:`build_example` builds one of a few small programs as a static graph (optionally with the
  gradient nodes ``gradients()`` adds and a training op) and, for comparison, runs the same code
  eagerly.
* :func:`run_fetch` runs a fetch with a feed dict through ``Session.run`` and reports which nodes
  were evaluated, in order (or the unfed-placeholder error).
* :func:`graph_dot` draws a static graph (placeholders / variables / constants / ops / gradient
  nodes coloured differently; evaluated nodes lit up, the rest dimmed).
* :func:`unrolled_rnn_rows` counts nodes of h_{t+1} = sigmoid(h_t * w + x_t) unrolled for several
  lengths: the eager (dynamic) graph per run vs one static graph per length.
* :func:`folding_demo` constant-folds a graph and reports before / after.
* :func:`session_order_exercise` and :func:`check_session_order`: the notes' mini-TensorFlow exercise as a
  fill-in: the student writes the order in which ``Session.run`` evaluates the nodes a fetch needs; the answer
  (node names, read with ``ast`` and a whitelist, never evaluated) is checked against the engine's own run.
* :func:`mini_tf_code` and :func:`check_mini_tf`: the same exercise as code, the mini-TensorFlow's
  ``topological_sort`` and ``Session.run`` with blanks filled from offered lines; the completed code is run by a
  small interpreter on the lecture's real static graph and set beside the engine's ``Session.run``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pydot

import engine
from engine import functional as F
from engine import static as tf
from explorer.explain.graph import graph_from_output
from explorer.explain.numbers import fixed, num
from engine.static import Graph, Node, Session

from .kit.formatting import fmt_value
from .kit.notes import NOTES

# fill colours by node kind / role (legend order)
COLOURS = {
    "placeholder": "#bfdbfe",  # blue: fed at run time
    "variable": "#bbf7d0",     # green: state kept across runs
    "constant": "#e5e7eb",     # grey: fixed values
    "op": "#ffffff",           # white: forward operations
    "gradient": "#fed7aa",     # orange: nodes added by gradients()
    "update": "#e9d5ff",       # purple: the training op's assignments
}
LIT = "#facc15"                # evaluated in the shown run
def _tint(colour: str, keep: float = 0.6) -> str:
    """``colour`` mixed with white (``keep`` of the colour): a pale version that still says the kind."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * keep):02x}" for c in (r, g, b))


# not needed by the shown run: pale, but still the colour of its kind (a gradient node stays orange)
FADED = {k: _tint(v) for k, v in COLOURS.items()}
STATIC_WIDTH = 940             # px: the graph spans the main column of a 1400 px window
RNN_WIDTH = 700                # px: the unrolled loop is drawn in 3/4 of the column
HALF_WIDTH = 460               # px: two graphs side by side
FOLD_BEFORE_WIDTH = 600        # px: constant folding, before (its graph is ~560 px wide) ...
FOLD_AFTER_WIDTH = 260         # ... and after (~240 px), side by side in a 1400 px window
# presentation mode: code and run controls on the left, the run's graph on the right, in this share of the page
# width; the drawing's height (px at 1920 x 1080) is what the first screen has left under the page's top row and
# the one-line count over the graph (the slider and the legend go under it), so the loss a training step skips
# is on the first screen (under a 2-line callout, the slider and the legend it started at y = 650)
PRESENT_STAGE_SHARE = 0.6
PRESENT_GRAPH_PX = 640
LEGEND = [("placeholder", "placeholder (fed)"), ("variable", "Variable (state)"), ("constant", "constant"),
          ("op", "operation"), ("gradient", "gradient node (from gradients())"), ("update", "training update")]
# the border the graph renderer draws around each kind of node (explorer.kit.plotly_figure.KIND_BORDER): a
# legend chip wears its node's border, so the dotted one is explained where it is drawn
_BORDER_KIND = {"placeholder": "input", "variable": "input", "constant": "constant"}
# each chip on one line (a narrow row moves a whole chip down instead of breaking it in two)
_CHIP = "display:inline-block;white-space:nowrap;padding:1px 6px;border-radius:4px;margin:0 6px 4px 0"


def _chip(fill: str, kind: str, label: str) -> str:
    """A legend chip: ``label`` on ``fill`` inside the border the renderer gives a node of ``kind``."""
    import html
    from .kit.plotly_figure import KIND_BORDER
    width, style = ("2px", "solid") if kind == "input" else ("1px", "dotted" if kind == "constant" else "solid")
    return (f"<span style='background:{fill};border:{width} {style} {KIND_BORDER.get(kind, KIND_BORDER['op'])};"
            f"{_CHIP}'>{html.escape(label)}</span>")


def legend_html() -> str:
    """The static graph's legend: one chip per kind (its fill and border as drawn), and the run's colour."""
    chips = [_chip(COLOURS[k], _BORDER_KIND.get(k, "op"), label) for k, label in LEGEND]
    return " ".join(chips + [_chip(LIT, "op", "evaluated by the run")])


# the graph an eager run records: each fill and border as drawn (the dotted border: no gradient flows there)
EAGER_LEGEND = [("variable", "input", "parameter (requires_grad=True)"),
                ("placeholder", "constant", "data (requires_grad=False)"),
                ("constant", "constant", "constant (a number in the code)"), ("op", "op", "op it ran")]


def eager_legend_html() -> str:
    """The legend of :func:`eager_figure`: fills and borders as the renderer draws them, and what a dotted
    border means."""
    chips = " ".join(_chip(COLOURS[fill], kind, label) for fill, kind, label in EAGER_LEGEND)
    return chips + " <span style='white-space:nowrap'>dotted border: no gradient flows to it</span>"


@dataclass
class Example:
    """One program built as a static graph, plus what the page needs to run and compare it."""

    key: str
    title: str
    static_code: str
    eager_code: str
    graph: Graph
    fetches: dict[str, Any]                 # label -> tensor / TrainOp
    feeds: dict[str, tuple[Any, np.ndarray]]  # placeholder name -> (tensor, value)
    eager: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    eager_ops_per_step: int                 # ops one eager call records (forward [+ backward])
    forward_nodes: int = 0
    gradient_nodes: int = 0
    notes: list[str] = field(default_factory=list)
    eager_graph: Any = None                 # the graph the eager run recorded (explorer.explain Graph)
    eager_forward_ops: int = 0              # of eager_ops_per_step, those run before backward()
    prediction: str | None = None           # the fetch that is the model's output (the loss's input)
    with_gradients: bool = False
    with_train: bool = False
    gradients_added: int = 0                # nodes gradients() added (the sum it differentiates included)

    @property
    def eager_backward_ops(self) -> int:
        return self.eager_ops_per_step - self.eager_forward_ops


EAGER_OUTPUT = "__output__"   # key of an eager function's result: (output tensor, its named leaf tensors)


def _recorded(out, leaves) -> Any:
    """The graph behind ``out`` as the eager run recorded it, leaves under their own names (data included)."""
    return graph_from_output(out, names={t.unique_id: t.name for t in leaves}, include_constants=True)


EXAMPLES = {
    "lecture": "The lecture's hidden layer: h = relu(x @ W + b)",
    "logreg": "Logistic regression: loss = BCE(sigmoid(x @ w + b), y)",
    "mlp": "Two-layer network: loss = mean((relu(x @ W1 + b1) @ W2 - y)²)",
}


def _values(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": np.round(rng.standard_normal((4, 3)), 2), "y": (rng.random((4, 1)) > 0.5).astype(float),
            "W": np.round(rng.standard_normal((3, 2)) * 0.5, 2), "b": np.array([0.1, -0.2]),
            "w": np.round(rng.standard_normal((3, 1)) * 0.5, 2), "b1": np.array([0.05]),
            "W1": np.round(rng.standard_normal((3, 4)) * 0.5, 2), "c1": np.zeros(4),
            "W2": np.round(rng.standard_normal((4, 1)) * 0.5, 2)}


def build_example(key: str, with_gradients: bool = True, with_train: bool = False, lr: float = 0.1) -> Example:
    """Build example ``key`` as a static graph; ``with_gradients`` adds ``gradients()`` nodes.

    Raises:
        KeyError: unknown example.
    """
    if key not in EXAMPLES:
        raise KeyError(f"unknown example {key!r}; known: {sorted(EXAMPLES)}")
    v = _values()
    g = Graph(name=key)
    fetches: dict[str, Any] = {}
    with g.as_default():
        x = tf.placeholder((4, 3), name="x")
        feeds = {"x": (x, v["x"])}
        if key == "lecture":
            W, b = tf.Variable(v["W"], name="W"), tf.Variable(v["b"], name="b")
            xw = x @ W
            h = tf.relu(xw + b)
            out, params = h, [W, b]
            fetches.update({"h": h, "x @ W": xw, "W (a variable)": W})
            static_code = ("x = placeholder((4, 3), name='x')\nW = Variable(W0, name='W')\n"
                           "b = Variable(b0, name='b')\nh = relu(x @ W + b)        # builds nodes only\n")
            static_grad = "dW, db = gradients(sum(h), [W, b])\n"
            static_run = "Session().run(h, {x: x_value})"
            eager_code = "x = tensor(x_value)\nW = tensor(W0, requires_grad=True)\nb = tensor(b0, requires_grad=True)\n" \
                         "h = relu(x @ W + b)        # computes now"
            eager_grad = "\nsum(h).backward()"
            prediction = None

            def eager_fn(vals, W0=v["W"], b0=v["b"], before_backward=lambda: None, backward=True):
                xt = engine.tensor(vals["x"], name="x")
                Wt, bt = engine.tensor(W0, requires_grad=True, name="W"), engine.tensor(b0, requires_grad=True, name="b")
                xwt = xt @ Wt
                ht = engine.relu(xwt + bt)
                if not backward:   # the forward program only: its graph is what the code builds
                    return {"h": ht.numpy(), "x @ W": xwt.numpy(), "W (a variable)": W0, EAGER_OUTPUT: (ht, [xt, Wt, bt])}
                total = ht.sum()
                before_backward()
                total.backward(retain_graph=True)  # the page draws this graph, values included, afterwards
                return {"h": ht.numpy(), "x @ W": xwt.numpy(), "W (a variable)": W0, "d sum(h) / d W": Wt.grad.numpy(),
                        EAGER_OUTPUT: (total, [xt, Wt, bt])}
            loss_for_grad = None   # gradients(sum(h), ...) builds the sum: only with gradients()
            grad_label_of = {"W": "d sum(h) / d W"}
        elif key == "logreg":
            y = tf.placeholder((4, 1), name="y")
            feeds["y"] = (y, v["y"])
            w, b = tf.Variable(v["w"], name="w"), tf.Variable(v["b1"], name="b")
            p = tf.sigmoid(x @ w + b)
            loss = F.binary_cross_entropy(p, y)
            params = [w, b]
            fetches.update({"loss": loss, "p = sigmoid(x @ w + b)": p})
            static_code = ("x = placeholder((4, 3)); y = placeholder((4, 1))\nw = Variable(w0); b = Variable(b0)\n"
                           "loss = binary_cross_entropy(sigmoid(x @ w + b), y)\n")
            static_grad = "gw, gb = gradients(loss, [w, b])\n"
            static_run = "Session().run(loss, {x: ..., y: ...})"
            eager_code = ("w = tensor(w0, requires_grad=True)\nb = tensor(b0, requires_grad=True)\n"
                          "loss = binary_cross_entropy(sigmoid(tensor(x) @ w + b), tensor(y))")
            eager_grad = "\nloss.backward()"
            prediction = "p = sigmoid(x @ w + b)"

            def eager_fn(vals, w0=v["w"], b0=v["b1"], before_backward=lambda: None, backward=True):
                wt, bt = engine.tensor(w0, requires_grad=True, name="w"), engine.tensor(b0, requires_grad=True, name="b")
                xt, yt = engine.tensor(vals["x"], name="x"), engine.tensor(vals["y"], name="y")
                pt = engine.sigmoid(xt @ wt + bt)
                lt = F.binary_cross_entropy(pt, yt)
                before_backward()
                if backward:
                    lt.backward(retain_graph=True)  # the page draws this graph, values included, afterwards
                return {"loss": lt.numpy(), "p = sigmoid(x @ w + b)": pt.numpy(),
                        "d loss / d w": wt.grad.numpy() if backward else None,
                        EAGER_OUTPUT: (lt, [xt, yt, wt, bt])}
            loss_for_grad = loss
            grad_label_of = {"w": "d loss / d w"}
        else:
            y = tf.placeholder((4, 1), name="y")
            feeds["y"] = (y, v["y"])
            W1, c1 = tf.Variable(v["W1"], name="W1"), tf.Variable(v["c1"], name="b1")
            W2 = tf.Variable(v["W2"], name="W2")
            hid = tf.relu(x @ W1 + c1)
            pred = hid @ W2
            loss = F.mse_loss(pred, y)
            params = [W1, c1, W2]
            fetches.update({"loss": loss, "hidden": hid, "prediction": pred})
            static_code = ("x = placeholder((4, 3)); y = placeholder((4, 1))\nW1, b1, W2 = Variable(...), ...\n"
                           "loss = mse_loss(relu(x @ W1 + b1) @ W2, y)\n")
            static_grad = "gradients(loss, [W1, b1, W2])\n"
            static_run = "Session().run(loss, {x: ..., y: ...})"
            eager_code = "loss = mse_loss(relu(x @ W1 + b1) @ W2, y)   # W1, b1, W2 require grad"
            eager_grad = "\nloss.backward()"
            prediction = "prediction"

            def eager_fn(vals, W10=v["W1"], c10=v["c1"], W20=v["W2"], before_backward=lambda: None, backward=True):
                W1t, c1t, W2t = (engine.tensor(a, requires_grad=True, name=nm)
                                 for a, nm in ((W10, "W1"), (c10, "b1"), (W20, "W2")))
                xt, yt = engine.tensor(vals["x"], name="x"), engine.tensor(vals["y"], name="y")
                ht = engine.relu(xt @ W1t + c1t)
                pt = ht @ W2t
                lt = F.mse_loss(pt, yt)
                before_backward()
                if backward:
                    lt.backward(retain_graph=True)  # the page draws this graph, values included, afterwards
                return {"loss": lt.numpy(), "hidden": ht.numpy(), "prediction": pt.numpy(),
                        "d loss / d W1": W1t.grad.numpy() if backward else None, EAGER_OUTPUT: (lt, [xt, yt, W1t, c1t, W2t])}
            loss_for_grad = loss
            grad_label_of = {"W1": "d loss / d W1"}
    forward_nodes = len(g.nodes)
    if with_gradients or (with_train and key != "lecture"):
        if loss_for_grad is None:
            with g.as_default():
                loss_for_grad = out.sum()
    if with_gradients:
        static_code += static_grad
        grads = tf.gradients(loss_for_grad, params)
        gradients_added = len(g.nodes) - forward_nodes
        for p_, gr in zip(params, grads):
            label = grad_label_of.get(tf.tensor_to_node(p_).name)
            if label is not None and gr is not None:
                fetches[label] = gr
    else:
        gradients_added = 0
    if with_train and key != "lecture":
        static_code += f"train = GradientDescentOptimizer({lr}).minimize(loss)\n"
        static_run = "Session().run(train, {x: ..., y: ...})"
        fetches["train step (SGD)"] = tf.GradientDescentOptimizer(lr).minimize(loss_for_grad, params)
    static_code += static_run
    if with_gradients or with_train:
        eager_code += eager_grad + "   # runs backward ops, records none"
    forward: list[int] = []
    runs_backward = with_gradients or (with_train and key != "lecture")
    # every result stays alive (in the recording) until the eager graph is drawn with its values
    with engine.recording() as counted:
        ran = eager_fn({k: val for k, (_, val) in feeds.items()}, before_backward=lambda: forward.append(len(counted)),
                       backward=runs_backward)
    forward.append(len(counted))    # no backward: every op ran forward
    return Example(key, EXAMPLES[key], static_code, eager_code, g, fetches, feeds, eager_fn, len(counted),
                   forward_nodes, sum(1 for n in g.nodes if n.role in ("gradient", "update")), eager_graph=_recorded(*ran[EAGER_OUTPUT]),
                   eager_forward_ops=forward[0], prediction=prediction, with_gradients=with_gradients,
                   with_train=with_train and key != "lecture", gradients_added=gradients_added)


BREAKDOWN = ("placeholders", "variables", "constants", "forward ops", "gradient nodes", "updates")


def node_breakdown(graph: Graph) -> dict[str, int]:
    """The graph's nodes in disjoint groups that add up to ``total``: placeholders, Variables, constants,
    forward ops, gradient nodes (every node ``gradients()`` or a captured backward pass added: its ops
    and its constants), training updates.

    ``Graph.counts()`` counts gradient nodes *among* ops and constants, so its columns overlap.
    """
    out = dict.fromkeys(BREAKDOWN, 0)
    for n in graph.nodes:
        if n.role == "gradient":
            out["gradient nodes"] += 1
        else:
            out[{"placeholder": "placeholders", "variable": "variables", "constant": "constants",
                 "update": "updates"}.get(n.kind, "forward ops")] += 1
    out["total"] = len(graph.nodes)
    assert sum(out[k] for k in BREAKDOWN) == out["total"]
    return out


def breakdown_text(parts: dict[str, int]) -> str:
    """``50 nodes = 2 placeholders + 4 variables + 4 constants + 15 forward ops + 25 gradient nodes``."""
    terms = [f"{v} {k[:-1] if v == 1 else k}" for k, v in parts.items() if k != "total" and v]
    return f"{parts['total']} nodes = " + " + ".join(terms)


@dataclass
class RunResult:
    """One ``Session.run`` as the page shows it."""

    fetch: str
    evaluated: list[int]            # node ids, in evaluation order
    value: np.ndarray | None
    error: str | None
    needed_total: int               # nodes in the graph
    eager_value: np.ndarray | None = None
    fed: list[int] = field(default_factory=list)  # node ids given by the feed dict
    fed_used: list[int] = field(default_factory=list)  # fed placeholders this fetch reads

    @property
    def counted(self) -> int:
        """Nodes the run took part in as the lecture counts them: those evaluated plus the fed placeholders
        the fetch reads (``sess.run(h, feed)`` on h = relu(x @ W + b) counts 6: x, W, b, matmul, add, relu)."""
        return len(self.evaluated) + len(self.fed_used)

    def count_text(self, short: bool = False, upto: int | None = None) -> str:
        """"Evaluated k of N", k counting fed placeholders as the lecture does, with the split (Markdown).
        ``short``: one line over a projector's graph ("Evaluated 25 of 26 nodes: 23 computed + 2 fed").
        ``upto``: the evaluation order's step shown (the slider's first ``upto`` computed nodes lit); before its
        last, what has been evaluated so far ("So far: 2 of 5 computed + 1 fed"), never the run's whole count."""
        k, n = self.counted, self.needed_total
        if upto is not None and upto < len(self.evaluated):
            fed = f" + {len(self.fed_used)} fed" if self.fed_used else ""
            return f"So far: **{max(upto, 0)} of {len(self.evaluated)} computed**{fed}"
        if short:
            split = f": {len(self.evaluated)} computed + {len(self.fed_used)} fed" if self.fed_used else ""
            return f"Evaluated **{k} of {n}** nodes{split}"
        if not self.fed_used:
            return f"Evaluated **{k} of {n}** nodes (the rest are not needed for this fetch)."
        fed = len(self.fed_used)
        return (f"Evaluated **{k} of {n}** nodes, counting the fed placeholder{'s' if fed > 1 else ''} as the "
                f"lecture does: {len(self.evaluated)} computed + {fed} fed. The rest are not needed for this fetch.")

    @property
    def matches_eager(self) -> bool | None:
        if self.value is None or self.eager_value is None:
            return None
        return bool(np.array_equal(np.asarray(self.value), np.asarray(self.eager_value)))


def run_fetch(ex: Example, fetch: str, fed: list[str]) -> RunResult:
    """Run ``ex.fetches[fetch]`` feeding the placeholders named in ``fed`` (fresh Session each time)."""
    target = ex.fetches[fetch]
    feed = {ex.feeds[n][0]: ex.feeds[n][1] for n in fed}
    sess = Session(ex.graph)
    try:
        value = sess.run(target, feed)
    except tf.UnfedPlaceholderError as e:
        return RunResult(fetch, [], None, str(e), len(ex.graph.nodes))
    eager = ex.eager({k: val for k, (_, val) in ex.feeds.items()}).get(fetch)
    fed_ids = [tf.tensor_to_node(ex.feeds[n][0]).id for n in fed]
    reads = {n.id for n in sess.needed_nodes(target)}  # without a feed: every node the fetch depends on
    fed_used = [i for i in fed_ids if i in reads]
    return RunResult(fetch, list(sess.last_evaluated), value, None, len(ex.graph.nodes), eager, fed_ids, fed_used)


def _fill(n: Node) -> str:
    if n.role == "gradient" and n.kind in ("op", "constant"):
        return COLOURS["gradient"]
    return COLOURS.get(n.kind, "#ffffff")


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape) -> str:
    return "scalar" if shape == () else "×".join(str(s) for s in shape)


def graph_dot(graph: Graph, evaluated: list[int] | None = None, upto: int | None = None,
              rankdir: str = "LR", fed: list[int] | None = None) -> str:
    """DOT text of a static graph; with ``evaluated``, the first ``upto`` evaluated nodes are lit
    (numbered in evaluation order), fed placeholders get a thick border, and the nodes the run did
    not need are faded (keeping their colour, so gradient nodes stay recognisable)."""
    fed_ids = set(fed or [])
    d = pydot.Dot("static", graph_type="digraph", rankdir=rankdir, bgcolor="white")
    d.set_node_defaults(style="filled", fontname="Helvetica", fontsize="11")
    d.set_edge_defaults(color="#6b7280", arrowsize="0.7")
    order = {nid: i for i, nid in enumerate(evaluated or [])}
    lit = set((evaluated or [])[: (len(evaluated or []) if upto is None else upto)])
    for n in graph.nodes:
        shape = {"placeholder": "invhouse", "variable": "cylinder", "constant": "note"}.get(n.kind, "box")
        head = n.name if n.kind in ("placeholder", "variable", "constant") or n.label == n.name \
            else f"{n.name}" if n.kind == "update" else f"{n.label}"
        label = f"{head}\n{_shape(n.shape)}"
        if n.kind == "constant" and n.value is not None and n.shape == ():
            label = f"{head} = {num(np.asarray(graph.backend.to_numpy(n.value)))}"
        if n.note:
            label += f"\n({n.note.split(':')[0]})"
        attrs = {"label": _q(label), "shape": shape, "fillcolor": _q(_fill(n))}
        if n.role == "gradient":
            attrs["color"] = _q("#ea580c")
        if evaluated is not None:
            if n.id in lit:
                attrs.update(fillcolor=_q(LIT), penwidth="2.5", label=_q(f"#{order[n.id] + 1} {label}"))
            elif n.id in order:
                attrs.update(penwidth="1.5", style="\"filled,dashed\"")
            elif n.id in fed_ids:
                attrs.update(penwidth="3", label=_q(f"{label}\n(fed)"))
            else:  # not needed by this run: faded, colour kept
                attrs.update(fontcolor=_q("#9ca3af"), color=_q("#d1d5db"), fillcolor=_q(_fill(n) + "59"))
        d.add_node(pydot.Node(f"n{n.id}", **attrs))
    for n in graph.nodes:
        for i in n.inputs:
            attrs = {}
            if n.role == "gradient" or n.kind == "update":
                attrs["color"] = _q("#f97316")
            used = n.id in order and (i.id in order or i.id in fed_ids)
            if evaluated is not None and not used:
                attrs["color"] = _q("#e5e7eb")
            d.add_edge(pydot.Edge(f"n{i.id}", f"n{n.id}", **attrs))
    return d.to_string()


def _role(n: Node) -> str:
    return "gradient" if n.role == "gradient" and n.kind in ("op", "constant", "kernel") else n.kind


def static_picture(graph: Graph, evaluated: list[int] | None = None, upto: int | None = None,
                   fed: list[int] | None = None, width: int = STATIC_WIDTH,
                   groups: dict[int, str] | None = None, focus: list[int] | None = None):
    """A static graph as the graph renderer draws it (one still frame): ``(FrameSet, explain Graph)``.

    Fills by kind (placeholder, Variable, constant, op, gradient node, update: :data:`COLOURS`); with
    ``evaluated``, the first ``upto`` nodes of the run are lit and numbered in evaluation order (the rest it
    needs say only that, never their place in the order), fed
    placeholders say so, and nodes the run did not need are pale. ``groups`` boxes nodes together
    (node id -> box label), e.g. the repeated steps of an unrolled loop. ``focus``: the nodes a graph too
    big for the page is windowed on (see :func:`window_focus`).
    """
    from .kit.frames import Frame, FrameSet
    from .kit.labels import formula, heading, shape_text
    from explorer.explain.graph import Graph as Drawn, GraphEdge, GraphNode

    order = {nid: i for i, nid in enumerate(evaluated or [])}
    lit = set((evaluated or [])[: (len(evaluated or []) if upto is None else upto)])
    fed_ids = set(fed or [])
    groups = groups or {}
    box_id: dict[str, int] = {}
    nodes: list[GraphNode] = []
    heads, texts, notes, states = {}, {}, {}, {}
    members: dict[str, list[Node]] = {}
    for n in graph.nodes:
        if n.id in groups:
            members.setdefault(groups[n.id], []).append(n)
    first_member = {ms[0].id: label for label, ms in members.items()}
    next_id = len(graph.nodes)
    for n in graph.nodes:
        if n.id in groups:
            if n.id not in first_member:
                continue
            label = groups[n.id]
            box_id[label] = nid = next_id
            next_id += 1
            ms = members[label]
            out = ms[-1]
            nodes.append(GraphNode(nid, label, "group", "group", list(out.shape), None, label,
                                   f"{label}: {len(ms)} ops", count=len(ms)))
            heads[nid] = label
            texts[nid] = f"{len(ms)} ops → {shape_text(out.shape)}"
            states[nid] = "op"
            continue
        kind = {"placeholder": "input", "variable": "input", "constant": "constant"}.get(n.kind, "op")
        nodes.append(GraphNode(n.id, n.name, n.label if n.kind in ("op", "kernel", "update") else "leaf", kind,
                               list(n.shape)))
        if n.kind in ("op", "kernel"):
            form = formula(n.op.name if n.op else n.label, [i.name for i in n.inputs])
            # a node named after its op reads its name in its formula: "binary_cross_entropy(sigmoid, y)", not
            # "binary_cross_entropy = binary_cross_entropy(sigmoid, y)" (a box as wide as a projector's window)
            heads[n.id] = form if form.startswith(n.name + "(") else heading(n.name, form)
        elif n.kind == "update":
            heads[n.id] = f"{n.name}: {n.inputs[0].name} −= lr·{n.inputs[1].name}"
        else:
            heads[n.id] = n.name
        value = ""
        if n.kind == "constant" and n.value is not None and n.shape == ():
            value = "= " + num(np.asarray(graph.backend.to_numpy(n.value)))
        texts[n.id] = value or shape_text(n.shape)
        state = _role(n)
        if evaluated is not None:
            if n.id in lit:
                state, notes[n.id] = "lit", f"evaluated #{order[n.id] + 1}"
            elif n.id in order:
                notes[n.id] = "needed"   # no number: the order is the in-class exercise's answer until it is lit
            elif n.id in fed_ids:
                notes[n.id] = "fed"
            else:
                state = "faded_" + state
        states[n.id] = state
    to = {n.id: (box_id[groups[n.id]] if n.id in groups else n.id) for n in graph.nodes}
    edges, seen = [], set()
    for n in graph.nodes:
        for k, i in enumerate(n.inputs):
            a, b = to[i.id], to[n.id]
            if a == b or (n.id in groups and (a, b) in seen):
                continue
            seen.add((a, b))
            edges.append(GraphEdge(a, b, k))
    drawn = Drawn(nodes, edges, nodes[-1].id if nodes else 0)
    ids = [n.id for n in nodes]
    box_ids = set(ids)
    frame = Frame(0, "static", "", [], [], [texts[i] for i in ids], [states[i] for i in ids],
                  [notes.get(i, "") for i in ids], focus=[to[i] for i in focus or [] if to.get(i) in box_ids])
    return FrameSet(ids, [frame], heads=[heads[i] for i in ids], edges=[(e.src, e.dst) for e in edges],
                    hover=[heads[i] for i in ids]), drawn


def graph_figure(graph: Graph, evaluated: list[int] | None = None, upto: int | None = None,
                 fed: list[int] | None = None, width: int = STATIC_WIDTH,
                 groups: dict[int, str] | None = None, focus: list[int] | None = None,
                 max_height: int | None = None, whole_text_only: bool = False) -> dict:
    """The static graph as a Plotly figure of the graph renderer (see :func:`static_picture`).

    ``max_height``: px the drawing may take (default the renderer's); ``whole_text_only``: a windowed graph
    leaves out the text of boxes its window cuts (a projector: nobody pans to read "…= sigmoid·add_1")."""
    from .kit.plotly_figure import MAX_HEIGHT, figure_dict
    frames, drawn = static_picture(graph, evaluated, upto, fed, width, groups, focus)
    palette = {**COLOURS, "lit": LIT, **{f"faded_{k}": v for k, v in FADED.items()}}
    return figure_dict(frames, drawn, width=width, title=False, edge_labels=False, palette=palette,
                       max_height=max_height or MAX_HEIGHT, whole_text_only=whole_text_only)


# --- the graph an eager run records --------------------------------------------------------------------

EAGER_FILL = {"data": COLOURS["placeholder"], "param": COLOURS["variable"], "constant": COLOURS["constant"],
              "op": COLOURS["op"]}


def eager_figure(graph, width: int = STATIC_WIDTH, caption: str = "") -> dict:
    """A graph recorded by an eager run (``explorer.explain.graph_from_output``), drawn by the graph renderer:
    data tensors in the placeholders' blue, parameters (requires_grad leaves) in the Variables' green,
    numbers as grey constants, ops white with their formula."""
    from .kit.labels import node_formulas, heading, shape_text
    from .kit.plotly_figure import still_figure
    forms = node_formulas(graph)
    heads, values, states = {}, {}, {}
    for n in graph.nodes:
        heads[n.id] = heading(n.name, forms.get(n.id, ""))
        values[n.id] = shape_text(n.shape)
        if n.op == "leaf":
            states[n.id] = "param" if n.kind == "input" else ("constant" if not n.shape else "data")
        else:
            states[n.id] = "op"
    return still_figure(graph, heads, values, {}, states, palette=EAGER_FILL, caption=caption, width=width)


BRANCH_CODE = ("def f(x):\n"
               "    h = x * w\n"
               "    # a value decides:\n"
               "    if h.sum() > 0:\n"
               "        return relu(h)\n"
               "    return -h")


@dataclass
class BranchDemo:
    """``f`` above run eagerly on two inputs (two different recorded graphs) and built as a static graph."""

    inputs: list[np.ndarray]
    branches: list[str]              # which branch each eager run took
    graphs: list[Any]                # the graph each eager run recorded
    outputs: list[np.ndarray]
    static_error: str                # what building f on a placeholder raises


def branch_demo(w0: float = 0.5) -> BranchDemo:
    """A data-dependent branch: eagerly each input records the graph of the branch it took; building a
    static graph fails, because the branch needs a value the graph does not have yet."""
    inputs = [np.array([1.0, 2.0, -0.5]), np.array([-1.0, -2.0, 0.5])]
    branches, graphs, outputs = [], [], []
    for xv in inputs:
        x = engine.tensor(xv, name="x")
        w = engine.tensor(w0, requires_grad=True, name="w")
        h = x * w
        if h.sum().item() > 0:
            out, took = engine.relu(h), "relu(h)"
        else:
            out, took = -h, "−h"
        branches.append(took)
        outputs.append(out.numpy())
        graphs.append(_recorded(out, [x, w]))
    g = Graph(name="branch")
    with g.as_default():
        xs = tf.placeholder((3,), name="x")
        w = tf.Variable(w0, name="w")
        h = xs * w
        try:
            if h.sum() > 0:  # the static graph has no value here: this raises
                pass
            error = "no error"  # pragma: no cover
        except tf.SymbolicValueError as e:
            error = str(e)
    return BranchDemo(inputs, branches, graphs, outputs, error)


# --- control flow: an unrolled recurrent step ----------------------------------------------------------

def rnn_static(length: int, w0: float = 0.8) -> tuple[Graph, Any, Any, Any]:
    """h_{t+1} = sigmoid(h_t * w + x_t) for ``length`` steps as one static graph: (graph, xs, w, h_T)."""
    g = Graph(name=f"rnn{length}")
    with g.as_default():
        xs = tf.placeholder((length,), name="x")
        w = tf.Variable(w0, name="w")
        h = tf.constant(0.0, name="h0")
        for t in range(length):  # Python unrolls the loop while *building*: one graph per length
            h = tf.sigmoid(h * w + xs[t])
    return g, xs, w, h


def rnn_steps(length: int, merge_middle: bool = True) -> tuple[Graph, dict[int, str]]:
    """The unrolled loop and, per node it adds, the box it is drawn in: ``step t`` (its 4 ops); with
    ``merge_middle`` the repeated steps between the second and the last share one box
    (``steps 3–11 (9 × 4 ops)``), so a long loop reads h0 → step 1 → step 2 → … → step T."""
    g, xs, w, h = rnn_static(length)
    groups: dict[int, str] = {}
    base = 3  # x, w, h0
    per = (len(g.nodes) - base) // max(length, 1)
    middle = merge_middle and length > 4
    for n in g.nodes[base:]:
        t = (n.id - base) // per + 1
        if middle and 3 <= t < length:
            groups[n.id] = f"steps 3–{length - 1} ({length - 3} × {per} ops)"
        else:
            groups[n.id] = f"step {t}: h{t} = σ(h{t - 1}·w + x[{t - 1}])"
    return g, groups


def rnn_figure(length: int, expand: bool = False, width: int = RNN_WIDTH) -> dict:
    """The static graph of the unrolled loop, each step one box ``step t`` (4 ops) unless ``expand``."""
    g, groups = rnn_steps(length)
    return graph_figure(g, width=width, groups=None if expand else groups)


def rnn_eager(xs: np.ndarray, w0: float = 0.8) -> tuple[float, float, int, int]:
    """The same recurrence eagerly: (h_T, dh_T/dw, forward ops recorded, ops incl. backward)."""
    with engine.recording() as ops:
        w = engine.tensor(w0, requires_grad=True)
        x = engine.tensor(xs)
        h = engine.tensor(0.0)
        for t in range(len(xs)):  # the graph grows as the loop runs
            h = engine.sigmoid(h * w + x[t])
        n_forward = len(ops)
        h.backward()
    return h.item(), w.grad.item(), n_forward, len(ops)


def unrolled_rnn_rows(lengths=(3, 6, 12), seed: int = 0) -> list[dict]:
    """One row per length: eager ops per run vs static graph nodes (built once per length)."""
    rows = []
    rng = np.random.default_rng(seed)
    for T in lengths:
        xs = rng.standard_normal(T)
        g, x, w, h = rnn_static(T)
        forward_nodes = len(g.nodes)
        (gw,) = tf.gradients(h, [w])
        hv, gwv = Session(g).run([h, gw], {x: xs})
        he, gwe, n_fwd, n_all = rnn_eager(xs)
        rows.append({"length T": T, "eager ops (forward)": n_fwd,
                     "eager ops (+ backward)": n_all,
                     "static nodes (forward)": forward_nodes,
                     "static nodes (+ gradients)": len(g.nodes),
                     "static graphs": 1,
                     "h_T equal": bool(np.array_equal(hv, he)),
                     "dh_T/dw equal": bool(np.isclose(gwv, gwe, rtol=1e-12, atol=0))})
    return rows


# --- constant folding --------------------------------------------------------------------------------

FOLDING_CODE = ("x = placeholder((3,), name='x')\nscale = exp(constant(2.0) * constant(3.0)) / (1.0 + 3.0)\n"
                "y = x * scale + 2.0 * 0.5\ngradients(y.sum(), [x])")


@dataclass
class FoldingDemo:
    before: Graph
    after: Graph
    rows: list[dict]
    folded: list[str]
    same_values: bool
    fetch_before: Any
    fetch_after: Any


def folding_demo(with_gradients: bool = True) -> FoldingDemo:
    """Fold the constants of a small graph (and of its gradient graph) and compare."""
    g = Graph(name="folding")
    with g.as_default():
        x = tf.placeholder((3,), name="x")
        two, three = tf.constant(2.0, name="two"), tf.constant(3.0, name="three")
        scale = tf.exp(two * three) / (1.0 + three)
        y = x * scale + 2.0 * 0.5
        total = y.sum()
    fetch = total
    if with_gradients:
        (gx,) = tf.gradients(total, [x])
        fetch = [total, gx]
    res = tf.fold_constants(g, fetch)
    xv = np.array([0.5, -1.0, 2.0])
    before_vals = Session(g).run(fetch, {x: xv})
    after_fetch = [res[f] for f in fetch] if isinstance(fetch, list) else res[fetch]
    after_vals = Session(res.graph).run(after_fetch, {res[x]: xv})
    same = all(np.array_equal(a, b) for a, b in zip(np.atleast_1d(before_vals), np.atleast_1d(after_vals))) \
        if not isinstance(fetch, list) else all(np.array_equal(a, b) for a, b in zip(before_vals, after_vals))
    rows = [{"graph": "before folding", **node_breakdown(g)}, {"graph": "after folding", **node_breakdown(res.graph)}]
    return FoldingDemo(g, res.graph, rows, res.folded, same, fetch, after_fetch)


# --- node counts: graph once vs rebuilt every step ------------------------------------------------------

def counts_over_steps(ex: Example, steps=(1, 10, 50)) -> list[dict]:
    """Nodes created over k training steps: static builds once; eager records a new graph each step (its
    nodes, leaves included) and runs its forward and backward ops each step."""
    static_total = len(ex.graph.nodes)
    return [{"steps": k, "static: nodes": static_total, "static: graphs": 1,
             "eager: nodes recorded": len(ex.eager_graph.nodes) * k,
             "eager: ops run": ex.eager_ops_per_step * k, "eager: graphs": k}
            for k in steps]


def eager_count_text(ex: Example) -> str:
    """What one eager step does, in counts that add up (Markdown): ops run forward (the recorded graph: its
    leaves + the ops it recorded), ops run by backward() (recording nothing)."""
    g = ex.eager_graph
    leaves = sum(1 for n in g.nodes if n.op == "leaf")
    recorded = len(g.nodes) - leaves
    unrecorded = ex.eager_forward_ops - recorded
    text = (f"Eagerly, one step runs **{ex.eager_forward_ops} ops forward**, recording the graph below: "
            f"{len(g.nodes)} nodes = {leaves} leaves + {recorded} ops")
    if unrecorded:
        text += (f" ({unrecorded} op{'s' if unrecorded > 1 else ''} on tensors that need no gradient ran but "
                 "{'were' if unrecorded > 1 else 'was'} not recorded)").replace("{'were' if unrecorded > 1 else 'was'}",
                                                                              "were" if unrecorded > 1 else "was")
    if ex.eager_backward_ops:
        text += (f"; `backward()` runs **{ex.eager_backward_ops} more** (the VJPs, the fan-out sums and the "
                 f"accumulation into .grad), recording nothing: {ex.eager_ops_per_step} ops per step, anew each step")
    return text + "."


def window_focus(ex: Example, evaluated: list[int], upto: int) -> list[int]:
    """The node a static graph too big for the page is windowed on: the last one lit while the evaluation-order
    slider is part way (the window follows it); else the loss and its inputs (the loss is what a training step
    or a gradient skips, or the fetch itself), or the graph's last node when the example has no loss.

    A window on the graph's last node (the last update) showed one box of the training graph and empty space."""
    if 0 < upto < len(evaluated):
        return [evaluated[upto - 1]]
    loss = ex.fetches.get("loss")
    if loss is not None:   # the loss with its inputs, whole: the prediction beside it
        node = tf.tensor_to_node(loss)
        return [node.id, *(i.id for i in node.inputs)]
    return [ex.graph.nodes[-1].id] if ex.graph.nodes else []


def loss_nodes(ex: Example) -> list[Node]:
    """The loss's own ops: those the loss needs beyond what the model's prediction needs (here one, the BCE
    with its mean). A training step does not evaluate them: the gradient starts from the constant 1."""
    loss = ex.fetches["loss"]
    sess = Session(ex.graph)
    pred = {n.id for n in sess.needed_nodes(ex.fetches[ex.prediction])}
    return [n for n in sess.needed_nodes(loss) if n.id not in pred and n.kind == "op"]


def _groups(nodes) -> str:
    parts = dict.fromkeys(BREAKDOWN, 0)
    for n in nodes:
        if n.role == "gradient":
            parts["gradient nodes"] += 1
        else:
            parts[{"placeholder": "placeholders", "variable": "variables", "constant": "constants",
                   "update": "updates"}.get(n.kind, "forward ops")] += 1
    return " + ".join(f"{v} {k[:-1] if v == 1 else k}" for k, v in parts.items() if v)


def builders(ex: Example) -> list[tuple[str, list[Node]]]:
    """The graph's nodes by what built them, in build order, adding up to the whole graph: the forward graph,
    ``gradients()`` (the sum it differentiates included, for a fetch without a loss), the training op
    (``minimize``: its own gradient nodes and the updates)."""
    nodes = list(ex.graph.nodes)
    fwd, added = ex.forward_nodes, ex.gradients_added if ex.with_gradients else 0
    out = [("the forward graph", nodes[:fwd])]
    if added:
        out.append(("gradients()", nodes[fwd:fwd + added]))
    if nodes[fwd + added:]:
        out.append(("the training op", nodes[fwd + added:]))
    return out


def node_count_text(ex: Example) -> str:
    """``17 nodes, built once: the forward graph's 6 (…) + gradients()'s 11 (…)`` (Markdown): every part named
    once, so that the parts add up to the total (the page said 4 forward ops + 10 gradient nodes, then 'the
    forward graph is 6 of them; gradients() added 11')."""
    parts = [(who, ns) for who, ns in builders(ex) if ns]
    assert sum(len(ns) for _, ns in parts) == len(ex.graph.nodes)
    return (f"**{len(ex.graph.nodes)} nodes**, built once = " +
            " + ".join(f"{len(ns)} by {who} ({_groups(ns)})" for who, ns in parts) + ".")


def skipped_text(ex: Example, result: "RunResult") -> str:
    """Why a run evaluated k of N nodes, in counts that add up: N = k + the nodes not evaluated, those split by
    what built them (Markdown, one sentence)."""
    ran = set(result.evaluated) | set(result.fed_used)
    total = len(ex.graph.nodes)
    skipped = [(who, [n for n in ns if n.id not in ran]) for who, ns in builders(ex)]
    skipped = [(who, ns) for who, ns in skipped if ns]
    k = len(ran)
    if not skipped:
        return f"{total} built = {k} evaluated: nothing skipped."
    differentiates = result.fetch.startswith("d ") or "train" in result.fetch
    own = "its gradient nodes for placeholders and constants, which nothing reads"
    why = {"the forward graph": ("the loss's own: the gradient starts from a constant 1" if differentiates
                                 else "what this fetch does not read"),
           "gradients()": own if result.fetch.startswith("d ") else "not needed by this fetch",
           "the training op": own if "train" in result.fetch else "not needed by this fetch"}
    return (f"{total} built = {k} evaluated + {total - k} not: " +
            " + ".join(f"{len(ns)} built by {who} ({why[who]})" for who, ns in skipped) + ".")


# --- the notes' counts beside ours: the difference said where it appears ----------------------------------------

NOTES_GRADIENTS = NOTES["gradients_example"].value   # the notes' gradients() example: forward nodes, nodes added
NOTES_TRAINING = NOTES["training_graph"].value       # built, evaluated per step, eager ops per step
NOTES_RNN_EAGER = NOTES["rnn_eager"].value           # T = 3, 6, 12
NOTES_RNN_STATIC = NOTES["rnn_static"].value         # with gradients
NOTES_FOLDING = NOTES["folding"].value               # ops folded, of the example's ops


def gradients_note(ex: Example) -> str:
    """One sentence: the notes' gradients() count beside this graph's."""
    fwd, added = NOTES_GRADIENTS
    ours_fwd, ours_added = ex.forward_nodes, ex.gradients_added
    return (f"The notes' gradients() example adds {added} nodes to {fwd} ({fixed(added / fwd)} per forward node); here "
            f"gradients() adds {ours_added} to {ours_fwd} ({fixed(ours_added / ours_fwd)} per forward node): another, "
            "smaller graph, and the same rule, a few nodes per VJP plus one add per fan-out.")


def training_note(ex: Example, evaluated: int) -> str:
    """One sentence: the notes' training-graph counts beside this one's (``evaluated``: counted by a train run)."""
    built, ev, eager = NOTES_TRAINING
    return (f"The notes' training graph: {built} nodes built once, {ev} evaluated per step, {eager} eager ops per "
            f"step ({eager * 50} over 50 steps). This model's: {len(ex.graph.nodes)} built, {evaluated} evaluated, "
            f"{ex.eager_ops_per_step} eager ops per step ({ex.eager_ops_per_step * 50} over 50): another model, the "
            "same pattern; exercise 11 asks which nodes a step skips and why.")


def linear_fit(lengths, counts) -> tuple[int, int]:
    """(a, b) with count = a·T + b for every (T, count), read from the first two and checked on all.

    Raises:
        ValueError: the counts do not grow linearly.
    """
    (t0, c0), (t1, c1) = list(zip(lengths, counts))[:2]
    a = (c1 - c0) // (t1 - t0)
    b = c0 - a * t0
    if any(a * t + b != c for t, c in zip(lengths, counts)):
        raise ValueError(f"counts {counts} do not grow linearly with {lengths}")
    return a, b


def _formula(a: int, b: int) -> str:
    return f"{a}T" + (f" + {b}" if b > 0 else f" − {-b}" if b < 0 else "")


def rnn_note(rows: list[dict]) -> str:
    """One sentence: the notes' unrolled-loop counts beside ours, as formulas in T fitted to the measured rows."""
    T = [r["length T"] for r in rows]
    eager = linear_fit(T, [r["eager ops (forward)"] for r in rows])
    static = linear_fit(T, [r["static nodes (+ gradients)"] for r in rows])
    ne = linear_fit((3, 6, 12), NOTES_RNN_EAGER)
    ns = linear_fit((3, 6, 12), NOTES_RNN_STATIC)
    return (f"The notes count {' / '.join(map(str, NOTES_RNN_EAGER))} eager ops ({_formula(*ne)}) and "
            f"{' / '.join(map(str, NOTES_RNN_STATIC))} static nodes with gradients ({_formula(*ns)}) for their own "
            f"recurrence; here {_formula(*eager)} and {_formula(*static)}, because each of our steps has "
            f"{eager[0]} ops (x[t] is an indexing op where the notes feed each x_t) and our gradients() builds "
            "fewer nodes per step: both grow linearly with T, one static graph per length.")


def folding_note(fd: "FoldingDemo") -> str:
    """One sentence: the notes' folding count beside this program's."""
    folded, total = NOTES_FOLDING
    fwd = [n for n in fd.before.nodes if n.kind == "op" and n.role != "gradient"]
    fwd_folded = [n for n in fwd if n.name in set(fd.folded)]
    return (f"The notes fold {folded} of their example's {total} ops; this program is another: {len(fwd_folded)} of "
            f"its {len(fwd)} forward ops fold (every op whose inputs are all constants), and "
            f"{len(fd.folded) - len(fwd_folded)} of its gradient ops.")


# --- where the engine sits among the frameworks (slide 34) ---------------------------------------------------

FRAMEWORK_GOALS = [
    ("expressive", "any Python program over tensors: loops, branches, recursion",
     "eager mode records whatever runs (the data-dependent branch above)"),
    ("productive", "gradients without writing them, and no CUDA needed: the framework brings the kernels; debug "
                   "with print and the Python debugger",
     "`loss.backward()`, `engine.grad(f)`: VJP rules per op, never a hand-written backward; the `numpy` and "
     "`python` backends need no GPU"),
    ("efficient", "scale to large models and data, with hardware acceleration (GPUs, TPUs); a fixed graph can be "
                  "optimised once and replayed without Python",
     "the `cuda` backend (CuPy and our kernels) where a GPU exists; `engine.static`: pruning and constant folding; "
     "`engine.compile`: a traced step replayed on raw arrays"),
]

# The map's other rows: how the frameworks compare beyond their graphs (slide 34's comparison), and this engine.
FRAMEWORK_CRITERIA = [
    {"": "hardware", "PyTorch": "CPU, NVIDIA (CUDA) and AMD (ROCm) GPUs, Apple GPUs (MPS)",
     "TensorFlow": "CPU, GPU, TPU", "JAX": "CPU, GPU, TPU (through XLA)",
     "this engine": "CPU (`numpy`, `python`); NVIDIA GPUs through CuPy and the kernels in `engine/kernels/`"},
    {"": "ease of use", "PyTorch": "eager Python, errors where they happen",
     "TensorFlow": "TF1: build, then Session.run (errors at run time, far from the code); TF2: eager by default",
     "JAX": "pure functions and explicit random keys; transformations compose",
     "this engine": "PyTorch's API on a small code base a student can read"},
    {"": "ecosystem", "PyTorch": "most research code, Hugging Face, torchvision",
     "TensorFlow": "Keras, TF Serving, TF Lite for phones", "JAX": "Flax, Optax, research at scale",
     "this engine": "none: a teaching engine, checked against PyTorch and NumPy"},
    {"": "parallelism", "PyTorch": "DistributedDataParallel, FSDP, tensor parallelism",
     "TensorFlow": "tf.distribute strategies", "JAX": "pmap, sharding (jit over a device mesh)",
     "this engine": "one device, one process"},
]

FRAMEWORKS = [
    {"framework": "NumPy", "style": "eager arrays, no autodiff", "gradients": "written by hand",
     "compiles with": "—", "in this engine": "the `numpy` backend runs every kernel; a hand-written backward is the "
                                             "Gradient check page's reference"},
    {"framework": "PyTorch", "style": "eager (define by run)", "gradients": "tape: loss.backward(), torch.autograd.grad",
     "compiles with": "torch.compile (traces the eager code)",
     "in this engine": "`Tensor.backward()` and `engine.grad` on the recorded graph; `engine.compile` traces a step"},
    {"framework": "TensorFlow 1", "style": "static graph, Session.run(fetch, feed_dict)",
     "gradients": "symbolic: tf.gradients adds nodes", "compiles with": "the graph itself (Grappler, XLA)",
     "in this engine": "`engine.static`: placeholder, Variable, Session, gradients(), constant folding (this page)"},
    {"framework": "TensorFlow 2", "style": "eager by default", "gradients": "tape: tf.GradientTape",
     "compiles with": "tf.function (traces Python into a graph)",
     "in this engine": "eager tape as `backward()`; tracing into a graph as `engine.compile`"},
    {"framework": "JAX", "style": "functional: pure functions of arrays",
     "gradients": "transformations: jax.grad, jax.vjp, jax.jvp", "compiles with": "jax.jit (traces to XLA)",
     "in this engine": "`engine.grad`, `engine.vjp`, `engine.jvp` (forward mode); `engine.compile` for the trace"},
]


# --- capture and replay ----------------------------------------------------------------------------------

def _demo_batch(batch: int, tokens: int, hidden: int):
    """The capture demo's batch (padded word vectors, their mask, labels) and HW2's initial weights, float32."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, tokens, 50)).astype(np.float32)
    lengths = rng.integers(3, tokens + 1, batch)
    mask = (np.arange(tokens)[None, :] < lengths[:, None]).astype(np.float32)
    x *= mask[:, :, None]                                   # padding slots hold zero vectors
    y = (rng.random(batch) < 0.5).astype(np.float32)
    b1, b2 = 1 / np.sqrt(50), 1 / np.sqrt(hidden)
    params = [rng.uniform(-b1, b1, (hidden, 50)).astype(np.float32), rng.uniform(-b1, b1, hidden).astype(np.float32),
              rng.uniform(-b2, b2, (1, hidden)).astype(np.float32), rng.uniform(-b2, b2, 1).astype(np.float32)]
    return x, mask, y, params, lengths


def torch_step_us(steps: int = 20, batch: int = 10, tokens: int = 20, hidden: int = 32) -> float:
    """The capture demo's step (same batch, weights, padding-excluded mean, dropout, BCE, Adam) in PyTorch's eager
    mode on one thread: microseconds per step after three warm-up steps. Runs in a child process
    (:func:`overhead_against_pytorch`): the server never imports PyTorch."""
    import time

    import torch
    torch.set_num_threads(1)
    torch.manual_seed(42)
    x, mask, y, params, _ = _demo_batch(batch, tokens, hidden)
    X, M, Y = torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(y)
    l1, l2 = torch.nn.Linear(50, hidden), torch.nn.Linear(hidden, 1)
    with torch.no_grad():
        for t, p in zip((l1.weight, l1.bias, l2.weight, l2.bias), params):
            t.copy_(torch.from_numpy(p))
    drop = torch.nn.Dropout(0.5)
    opt = torch.optim.Adam(list(l1.parameters()) + list(l2.parameters()), lr=1e-3)

    def step():
        opt.zero_grad()
        h = (X * M[:, :, None]).sum(1) / M.sum(1, keepdim=True)
        p = torch.sigmoid(l2(drop(torch.relu(l1(h))))).squeeze(1)
        loss = torch.nn.functional.binary_cross_entropy(p, Y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1e6


NOTES_OVERHEAD = "3–4×"   # the notes: their NumPy framework trains HW2's network 3–4× slower than PyTorch


def overhead_against_pytorch(demo: dict, steps: int = 20) -> dict | None:
    """PyTorch's time for the demo's step (:func:`torch_step_us`, in a child process), beside the engine's eager
    and replayed times from ``demo``; None without PyTorch. Raises ReferenceFailed when the child fails."""
    from explorer.kit.reference import in_reference_process
    torch_us = in_reference_process("explorer.static_vs_dynamic:torch_step_us", steps, 10, demo["tokens"], 32)
    if torch_us is None:
        return None
    return {"torch_us": torch_us, "eager_ratio": demo["eager_us"] / torch_us,
            "replay_ratio": demo["compiled_us"] / torch_us}


def overhead_text(demo: dict, over: dict | None) -> str:
    """The framework-overhead sentence: the notes' figure beside this engine's measurement, and why they differ."""
    if over is None:
        return (f"The notes' NumPy framework trains HW2's network {NOTES_OVERHEAD} slower than PyTorch; PyTorch is "
                "not installed on this server, so the same step is not timed in PyTorch here "
                "(`pip install -r requirements-reference.txt` adds it).")
    return (f"The same step in PyTorch's eager mode (a child process, one thread): {fixed(over['torch_us'], 0)} µs. This "
            f"engine's eager step takes {fixed(over['eager_ratio'], 2)}× PyTorch's time and its replay "
            f"{fixed(over['replay_ratio'], 2)}×, where the notes' NumPy framework trains {NOTES_OVERHEAD} slower than "
            f"PyTorch. At this size (a batch of 10 sentences, 32 hidden units) each op's arithmetic takes a few "
            f"microseconds, so a step costs what dispatching its ops costs: this engine records "
            f"{demo['traced_ops']} ops a step (Linear and BCE fused, one node each) and runs its backward on raw "
            "arrays without building Tensors, where PyTorch pays its dispatcher and autograd engine for every op; "
            "capture and replay removes the engine's remaining per-op work. Timings are this server's, now.")


def compile_demo(steps: int = 20, batch: int = 10, tokens: int = 20, hidden: int = 32) -> dict:
    """Trace HW2's training step once, replay it ``steps`` times next to eager mode; report equality and timing.

    The step is the project's one HW2 step (``sentiment.model.training_step`` on ``SentimentNet``):
    padded sentences of random lengths with the padding-excluded mean, dropout on (fresh masks from
    the backend's generator every step, in both modes), BCE, backward, Adam.
    """
    import time

    from sentiment.model import hw2_step
    x, mask, y, params, lengths = _demo_batch(batch, tokens, hidden)
    xt, mt, yt = engine.tensor(x), engine.tensor(mask), engine.tensor(y)
    out = {}
    for name in ("eager", "compiled"):
        engine.manual_seed(42)
        step = hw2_step(params, compiled=name == "compiled")[0]
        losses = [step(xt, mt, yt)[0].item()]
        t0 = time.perf_counter()
        for _ in range(steps):
            losses.append(step(xt, mt, yt)[0].item())
        out[name] = {"losses": losses, "us_per_step": (time.perf_counter() - t0) / steps * 1e6, "step": step}
    compiled = out["compiled"]["step"]
    stats = compiled.stats
    captured = compiled.to_graph()
    losses = out["compiled"]["losses"]
    return {"identical": out["eager"]["losses"] == losses,
            "graph_dot": graph_dot(captured), "graph_figure": graph_figure(captured),
            "graph_counts": captured.counts().as_dict(), "breakdown": node_breakdown(captured),
            "losses": losses, "distinct_losses": len(set(losses)), "traced_ops": stats.traced_ops,
            "replayed_ops": stats.replayed_ops, "eager_us": out["eager"]["us_per_step"],
            "compiled_us": out["compiled"]["us_per_step"], "lengths": lengths.tolist(), "tokens": tokens}


# --- TensorFlow 1's two phases: build, then run in a Session on a device -----------------------------------------

TF1_CODE = ("import tensorflow as tf                 # TensorFlow 1.x\n"
            "a = tf.constant(15, name=\"a\")\n"
            "b = tf.constant(5, name=\"b\")\n"
            "prod = tf.multiply(a, b, name=\"Multiply\")\n"
            "total = tf.add(a, b, name=\"Add\")\n"
            "res = tf.divide(prod, total, name=\"Divide\")   # phase 1: a graph, no numbers yet\n"
            "with tf.Session() as sess:                   # phase 2: run it\n"
            "    with tf.device(\"/cpu:0\"):                # on a device\n"
            "        out = sess.run(res)\n"
            "print(out)")


def two_phase_code(device: str) -> str:
    """The TF1 example written for ``engine.static``, with the graph bound to backend ``device``."""
    return ("from engine import static as tf\n"
            f"g = tf.Graph(backend={device!r})   # the device: every node runs on this backend\n"
            "with g.as_default():              # phase 1: build (nodes only)\n"
            "    a = tf.constant(15, name=\"a\")\n"
            "    b = tf.constant(5, name=\"b\")\n"
            "    prod = tf.mul(a, b)\n"
            "    total = tf.add(a, b)\n"
            "    res = tf.div(prod, total)\n"
            "with tf.Session(g) as sess:       # phase 2: run what res needs\n"
            "    out = sess.run(res)")


@dataclass
class TwoPhaseDemo:
    """TensorFlow 1's two-phase example run on the engine's static graph (see :func:`two_phase_demo`)."""

    device: str
    available: bool                 # the backend runs on this machine
    unavailable_reason: str = ""    # the engine's own BackendUnavailable message, when it does not
    graph: Graph | None = None
    built: list[str] = field(default_factory=list)      # nodes after phase 1, in creation order
    before_run: str = ""            # what asking for res's value in phase 1 gives (the engine's error)
    value: float | None = None      # sess.run(res)
    dtype: str = ""
    evaluated: list[int] = field(default_factory=list)  # node ids the run evaluated, in order
    eager_value: float | None = None  # the same arithmetic eagerly (computed at once)
    backend_kernels: str = ""       # the backend class that ran the nodes' kernels

    def run_text(self) -> str:
        """One sentence on phase 2: what ran, in which order, on which backend, and the result."""
        if not self.available:
            return f"No run on `{self.device}`: {self.unavailable_reason}"
        names = " → ".join(self.graph.nodes[i].name for i in self.evaluated)
        return (f"`sess.run(res)` evaluated {len(self.evaluated)} of {len(self.graph.nodes)} nodes ({names}) on the "
                f"`{self.device}` backend ({self.backend_kernels}): **res = {num(self.value)}** ({self.dtype}); "
                f"eagerly, the same three ops give {num(self.eager_value)} the moment each line runs.")


def two_phase_demo(device: str = "numpy") -> TwoPhaseDemo:
    """Build TF1's example (15 and 5; multiply, add, divide) as a static graph on backend ``device`` and run it.

    Phase 1 only adds nodes (asking for a value raises the engine's SymbolicValueError, shown as is);
    phase 2 is ``Session(g).run(res)``. A backend this machine cannot run (``cuda`` without CuPy and a
    GPU) is reported with the engine's own reason instead of a result.

    Raises:
        ValueError: ``device`` is not a backend the engine knows.
    """
    from engine.backends import BackendUnavailable, known
    if device not in known():
        raise ValueError(f"unknown backend {device!r}; known: {known()}")
    try:
        g = Graph(backend=device, name="tf1_two_phase")
    except BackendUnavailable as e:
        return TwoPhaseDemo(device, False, str(e))
    with g.as_default():
        a = tf.constant(15, name="a")
        b = tf.constant(5, name="b")
        res = tf.div(tf.mul(a, b), tf.add(a, b))
    demo = TwoPhaseDemo(device, True, graph=g, built=[n.name for n in g.nodes])
    try:
        res.numpy()
    except tf.SymbolicValueError as e:
        demo.before_run = f"{type(e).__name__}: {e}"
    with Session(g) as sess:
        out = sess.run(res)
        demo.evaluated = list(sess.last_evaluated)
    demo.value, demo.dtype = float(out), str(out.dtype)
    demo.backend_kernels = type(g.backend).__name__
    ea, eb = engine.tensor(15.0), engine.tensor(5.0)
    demo.eager_value = float((ea * eb / (ea + eb)).item())
    return demo


def device_choices() -> list[str]:
    """Every backend the engine knows (a graph can be bound to any; the unavailable ones say why)."""
    from engine.backends import known
    return known()


def device_label(device: str) -> str:
    """A backend's name for the device picker, marked when this machine cannot run it."""
    return device if device in engine.available_backends() else f"{device} (not available here)"


TWO_PHASE_NOTE = ("TensorFlow 1 places each op on a device (`tf.device`) and the Session runs the graph there; "
                  "in this engine the device is the graph's backend, chosen once when the graph is built, and "
                  "`Session.run` runs every needed node's forward kernel on it. `cuda` is the engine's CuPy backend "
                  "(its kernels in `engine/kernels/*.cu`): it runs where CuPy and an NVIDIA GPU exist.")


# --- the mini-TensorFlow exercise: in which order does Session.run evaluate? -----------------------------------

#: the fetches the exercise asks about, on the lecture's example (x fed): label -> what the page writes
SESSION_EXERCISE_FETCHES = {"h": "sess.run(h, {x: x_value})", "x @ W": "sess.run(x @ W, {x: x_value})"}
MAX_ORDER_CHARS = 300


@dataclass(frozen=True)
class SessionOrderExercise:
    """One fetch of the exercise with the engine's answer."""
    fetch: str
    call: str                          # ``sess.run(h, {x: x_value})``
    node_names: tuple[str, ...]        # every node of the graph, in creation order
    inputs: dict[str, tuple[str, ...]]  # node -> its input nodes
    engine_order: tuple[str, ...]      # fed placeholders the fetch reads, then Session.run's evaluations in order


@dataclass(frozen=True)
class OrderVerdict:
    correct: bool
    message: str        # plain text (the page escapes it)


def session_order_exercise(fetch: str) -> SessionOrderExercise:
    """The engine's answer for ``fetch`` (a key of :data:`SESSION_EXERCISE_FETCHES`): a fresh lecture graph run
    with ``Session.run`` feeding x; its order counts the fed placeholder first, as the lecture does.

    Raises:
        KeyError: unknown fetch.
    """
    call = SESSION_EXERCISE_FETCHES[fetch]
    ex = build_example("lecture", with_gradients=False)
    r = run_fetch(ex, fetch, ["x"])
    names = {n.id: n.name for n in ex.graph.nodes}
    return SessionOrderExercise(fetch, call, tuple(names.values()),
                                {n.name: tuple(i.name for i in n.inputs) for n in ex.graph.nodes},
                                tuple(names[i] for i in list(r.fed_used) + list(r.evaluated)))


def parse_order(text: str, allowed: tuple[str, ...]) -> list[str]:
    """Node names written as ``x, W, b`` (or a list ``[x, W]``, or quoted names), read with ``ast``: only names
    and strings are accepted, nothing is evaluated.

    Raises:
        ValueError: too long, not a list of names, or a name that is not a node of the graph.
    """
    text = text.strip()
    if not text:
        raise ValueError("no answer yet: write node names separated by commas, e.g. x, W, ...")
    if len(text) > MAX_ORDER_CHARS:
        raise ValueError(f"the answer is longer than {MAX_ORDER_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ValueError("write node names separated by commas, e.g. x, W, ...") from None
    items = tree.elts if isinstance(tree, (ast.Tuple, ast.List)) else [tree]
    out = []
    for item in items:
        if isinstance(item, ast.Name):
            out.append(item.id)
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value.strip())
        else:
            raise ValueError(f"{ast.get_source_segment(text, item) or 'an item'!s} is not a node name; "
                             f"the graph's nodes are {', '.join(allowed)}")
    unknown = [n for n in out if n not in allowed]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a node of this graph; its nodes are {', '.join(allowed)}")
    return out


def check_session_order(ex: SessionOrderExercise, text: str) -> OrderVerdict:
    """Check a student's evaluation order for ``ex.fetch``: exactly the nodes the fetch needs, each once, each
    after its inputs (any such topological order is one Session.run could use); says what is wrong first."""
    try:
        order = parse_order(text, ex.node_names)
    except ValueError as e:
        return OrderVerdict(False, str(e))
    needed = set(ex.engine_order)
    seen: set[str] = set()
    for name in order:
        if name in seen:
            return OrderVerdict(False, f"{name} is listed twice: Session.run evaluates each node once per run.")
        seen.add(name)
    extra = [n for n in order if n not in needed]
    if extra:
        return OrderVerdict(False, f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not needed for "
                                   f"{ex.call}: Session.run evaluates only the nodes the fetch depends on.")
    missing = [n for n in ex.engine_order if n not in seen]
    if missing:
        return OrderVerdict(False, f"missing: {', '.join(missing)} (the fetch needs {len(needed)} nodes, "
                                   f"you listed {len(order)}).")
    for i, name in enumerate(order):
        late = [p for p in ex.inputs[name] if p in needed and p not in order[:i]]
        if late:
            return OrderVerdict(False, f"{name} comes before its input {late[0]}: a node can be evaluated only "
                                       f"after its inputs (a topological order).")
    engine_order = ", ".join(ex.engine_order)
    if tuple(order) == ex.engine_order:
        return OrderVerdict(True, f"Right: {len(order)} nodes, in the very order the engine's Session.run "
                                  f"evaluated them ({engine_order}).")
    return OrderVerdict(True, f"Right: {len(order)} nodes, each after its inputs, so Session.run could evaluate "
                              f"them in this order; the engine's Session went in the graph's creation order: "
                              f"{engine_order}.")


# --- the mini-TensorFlow exercise as code: topological_sort and Session.run, with blanks ---------------------
#
# The student fills each blank by choosing one of a few lines (no typed text at all). The chosen lines are read
# with ``ast`` and run by the small interpreter below, on the engine's real static Graph / Node objects, next to
# the engine's own ``Session.run``: the verdict is what that run did, never a stored answer.

MINI_TF_CODE = '''\
def topological_sort(fetches):
    order, visited = [], set()
    def visit(node):
        ____(1)____
        visited.add(node)
        ____(2)____
    for f in fetches:
        visit(f)
    return order

class Session:
    def run(self, fetches, feed_dict):
        values = {}
        for node in topological_sort(fetches):
            if node.kind == "placeholder":
                values[node] = ____(3)____
            elif node.kind == "variable":
                values[node] = node.state.value
            elif node.kind == "constant":
                values[node] = node.value
            else:  # an op: its own forward kernel
                args = [____(4)____ for inp in node.inputs]
                values[node] = node.op.forward(node.run_ctx, *args)
        return [values[f] for f in fetches]'''
_VISIT_FIXED = "visited.add(node)"   # the line between blanks 1 and 2, run by the interpreter too


@dataclass(frozen=True)
class MiniChoice:
    """One line (or lines) a blank may be filled with, and what it does, in one line."""
    code: str
    why: str


@dataclass(frozen=True)
class MiniBlank:
    """One blank of :data:`MINI_TF_CODE`: the lines offered for it (the right one not always first)."""
    number: int
    what: str                       # what the blank is for (the form's label)
    choices: tuple[MiniChoice, ...]
    right: str                      # the code of the right choice
    kind: str                       # "statements" (in visit's body) or "expression"


_IN_ORDER = "for inp in node.inputs:\n    visit(inp)\norder.append(node)"
MINI_TF_BLANKS: tuple[MiniBlank, ...] = (
    MiniBlank(1, "visit: skip a node seen before", (
        MiniChoice("if node not in visited: return", "the test is inverted: every node not yet seen, the fetch "
                                                     "first, returns at once, so nothing is ever sorted"),
        MiniChoice("if node in visited: return", "a node reached a second time (matmul, by h and by x @ W) is "
                                                 "skipped, so it is sorted once"),
        MiniChoice("pass", "no visited check: a node reached along two paths is sorted, and evaluated, twice"),
    ), "if node in visited: return", "statements"),
    MiniBlank(2, "visit: the inputs, and the node", (
        MiniChoice("order.append(node)\nfor inp in node.inputs:\n    visit(inp)",
                   "the node is appended before its inputs are visited, so it comes before them in the order"),
        MiniChoice(_IN_ORDER, "every input is sorted before the node that reads it (depth first, post-order)"),
        MiniChoice("for inp in node.inputs:\n    visit(node)\norder.append(node)",
                   "visit(node) calls visit on the node itself, not on its inputs: the inputs are never reached"),
    ), _IN_ORDER, "statements"),
    MiniBlank(3, "a placeholder's value", (
        MiniChoice("node.value", "a placeholder holds no value in the graph (None): it gets one only from the "
                                 "feed, at run time"),
        MiniChoice("feed_dict[node.name]", "feed_dict is keyed by the placeholder nodes, not by their names"),
        MiniChoice("feed_dict[node]", "a placeholder's value is the one fed for that node"),
    ), "feed_dict[node]", "expression"),
    MiniBlank(4, "an op's argument", (
        MiniChoice("feed_dict[inp]", "the feed holds only placeholders: a Variable's or an op's value is in values"),
        MiniChoice("values[node]", "the node's own value, which is what it is about to compute: not there yet"),
        MiniChoice("values[inp]", "each input's value, computed earlier in this run"),
    ), "values[inp]", "expression"),
)
_BLANK = {b.number: b for b in MINI_TF_BLANKS}

#: the runs the check makes on the lecture's graph (x fed): what the page writes -> the fetches, by label
MINI_TF_RUNS = {"sess.run([h], {x: x_value})": ("h",),
                "sess.run([h, x @ W], {x: x_value})": ("h", "x @ W")}
MAX_VISIT_DEPTH = 100   # nested visit calls before the interpreter calls it infinite recursion


def choice_label(code: str) -> str:
    """A choice's lines on one line for a selectbox (``⏎`` between lines)."""
    return "  ⏎  ".join(line.strip() for line in code.splitlines())


def mini_tf_code(fills: dict[int, str | None] | None = None) -> str:
    """The mini-TensorFlow code with its blanks (``____(1)____``), or with ``fills`` written into them (each
    line of a fill at the blank's indentation; a blank not in ``fills`` stays blank)."""
    out = []
    for line in MINI_TF_CODE.splitlines():
        for number, blank in _BLANK.items():
            mark = f"____({number})____"
            fill = (fills or {}).get(number)
            if mark in line and fill:
                indent = line[:len(line) - len(line.lstrip())]
                first, *rest = fill.splitlines()
                line = line.replace(mark, first) + "".join("\n" + indent + r for r in rest)
        out.append(line)
    return "\n".join(out)


class _Stop(Exception):
    """Infinite recursion caught at a bounded depth (Python itself would raise RecursionError)."""


def _node_text(v: Any) -> str:
    return v.name if isinstance(v, Node) else repr(v)


class _MiniInterpreter:
    """Runs the chosen lines (read with ``ast``) inside the fixed code of :data:`MINI_TF_CODE`, on real Nodes.

    Only the few constructs the choices use are understood: names, ``.inputs`` / ``.name`` / ``.value``,
    ``d[k]``, ``in`` / ``not in``, ``pass``, ``if ...: return``, ``for ... in ...:``, and the calls
    ``visit(...)`` / ``order.append(...)``; anything else is refused before running.
    """

    ATTRIBUTES = ("inputs", "name", "value")

    def __init__(self, fills: dict[int, str]):
        self.visit_body = (self._parse(fills[1], 1) + ast.parse(_VISIT_FIXED).body + self._parse(fills[2], 2))
        self.placeholder_value = self._parse(fills[3], 3)
        self.argument = self._parse(fills[4], 4)
        self.visit_calls: list[str] = []

    @staticmethod
    def _parse(code: str, number: int):
        blank = _BLANK[number]
        if code not in {c.code for c in blank.choices}:
            raise ValueError(f"blank ({number}) takes one of the offered lines")
        if blank.kind == "expression":
            return ast.parse(code, mode="eval").body
        return ast.parse(code).body

    # --- expressions ----------------------------------------------------------------------------------
    def expr(self, e: ast.AST, env: dict) -> Any:
        if isinstance(e, ast.Name):
            return env[e.id]
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Attribute) and e.attr in self.ATTRIBUTES:
            return getattr(self.expr(e.value, env), e.attr)
        if isinstance(e, ast.Subscript):
            return self.expr(e.value, env)[self.expr(e.slice, env)]     # a real dict lookup: KeyError included
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], (ast.In, ast.NotIn)):
            found = self.expr(e.left, env) in self.expr(e.comparators[0], env)
            return found if isinstance(e.ops[0], ast.In) else not found
        raise ValueError(f"not understood: {ast.unparse(e)}")

    # --- statements (visit's body) ------------------------------------------------------------------------
    def block(self, stmts: list, env: dict) -> bool:
        """Run statements; True when one of them returned."""
        for s in stmts:
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.Return) and s.value is None:
                return True
            if isinstance(s, ast.If) and not s.orelse:
                if self.expr(s.test, env) and self.block(s.body, env):
                    return True
                continue
            if isinstance(s, ast.For) and isinstance(s.target, ast.Name) and not s.orelse:
                for item in list(self.expr(s.iter, env)):
                    if self.block(s.body, {**env, s.target.id: item}):
                        return True
                continue
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and len(s.value.args) == 1:
                fn, arg = s.value.func, self.expr(s.value.args[0], env)
                if isinstance(fn, ast.Name) and fn.id == "visit":
                    self.visit(arg, env["order"], env["visited"], env["depth"] + 1)
                    continue
                if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
                        (fn.value.id, fn.attr) in (("order", "append"), ("visited", "add")):
                    getattr(env[fn.value.id], fn.attr)(arg)
                    continue
            raise ValueError(f"not understood: {ast.unparse(s)}")
        return False

    def visit(self, node: Node, order: list, visited: set, depth: int) -> None:
        self.visit_calls.append(node.name)
        if depth > MAX_VISIT_DEPTH:
            raise _Stop(node.name)
        self.block(self.visit_body, {"node": node, "order": order, "visited": visited, "depth": depth})

    def topological_sort(self, fetches: list[Node]) -> list[Node]:
        order: list[Node] = []
        visited: set[Node] = set()
        for f in fetches:
            self.visit(f, order, visited, 0)
        return order


@dataclass(frozen=True)
class MiniRun:
    """One run of the filled-in mini-TensorFlow beside the engine's ``Session.run`` of the same fetches."""
    call: str                            # sess.run([h, x @ W], {x: x_value})
    fetches: tuple[str, ...]             # fetch labels (h, x @ W)
    order: tuple[str, ...] | None        # what topological_sort returned (None: it did not return)
    evaluated: tuple[str, ...]           # nodes Session.run gave a value, in order (up to an error)
    values: tuple[np.ndarray, ...] | None
    error: str | None                    # "KeyError: add while evaluating relu"
    engine_order: tuple[str, ...]        # the fed x the fetches read, then the engine's evaluations in order
    engine_values: tuple[np.ndarray, ...]
    problem: str | None                  # the first way this run differs from the engine's (None: it does not)

    def summary(self) -> str:
        """What the run did, in one sentence (plain text)."""
        if self.order is None:
            return f"{self.error}"
        sorted_ = f"topological_sort returned {', '.join(self.order) if self.order else 'nothing'}"
        if self.error:
            return f"{sorted_}; then {self.error}"
        if self.problem:
            return f"{sorted_}; {self.problem}"
        same = ("in the engine's order" if self.evaluated == self.engine_order else
                f"each once and after its inputs (the engine went {', '.join(self.engine_order)}, its creation "
                "order)")
        fetched = " and ".join(f"{lab} = {fmt_value(v)}" for lab, v in zip(self.fetches, self.values))
        return (f"evaluated {', '.join(self.evaluated)}: the engine's {len(self.engine_order)} nodes, {same}; "
                f"{fetched}, equal to the engine's Session.run bit for bit")


def _lecture_graph() -> Example:
    return build_example("lecture", with_gradients=False)


def run_mini_tf(fills: dict[int, str], call: str, ex: Example | None = None) -> MiniRun:
    """Run the mini-TensorFlow completed with ``fills`` (blank number -> the chosen choice's code) for one of
    :data:`MINI_TF_RUNS` on the lecture's graph, and the engine's ``Session.run`` of the same fetches.

    Raises:
        ValueError: a fill that is not one of its blank's choices (or a blank left out).
    """
    ex = ex or _lecture_graph()
    labels = MINI_TF_RUNS[call]
    targets = [ex.fetches[lab] for lab in labels]
    x, x_value = ex.feeds["x"]
    x_node = tf.tensor_to_node(x)
    # the engine's own run
    sess = Session(ex.graph)
    engine_values = tuple(sess.run(targets, {x: x_value}))
    reads = {n.id for n in sess.needed_nodes(targets)}
    engine_order = tuple(([x_node.name] if x_node.id in reads else []) + tf.evaluated_names(sess))
    # the student's code, run by the interpreter on the same graph's nodes
    missing = [b.number for b in MINI_TF_BLANKS if not fills.get(b.number)]
    if missing:
        raise ValueError(f"blank ({missing[0]}) is not filled")
    interp = _MiniInterpreter(fills)
    be = ex.graph.backend
    fetches = [tf.tensor_to_node(t) for t in targets]
    feed_dict = {x_node: be.array(np.asarray(x_value), x_node.dtype)}   # as Session.run converts a fed value
    values: dict[Node, Any] = {}
    evaluated: list[str] = []
    order: list[Node] | None = None
    error = None

    def result(values_out=None) -> MiniRun:
        problem = error
        if problem is None:
            seen, twice = set(), []
            for name in evaluated:
                if name in seen and name not in twice:
                    twice.append(name)
                seen.add(name)
            if twice:
                problem = (f"so Session.run evaluated {', '.join(twice)} twice (the engine's Session evaluates "
                           "each node once per run)")
            elif set(evaluated) != set(engine_order):
                problem = (f"evaluated {', '.join(evaluated)}, the engine {', '.join(engine_order)}")
            else:
                for lab, mine, theirs in zip(labels, values_out, engine_values):
                    if not np.array_equal(mine, theirs):
                        problem = f"{lab} differs from the engine's (max |difference| " \
                                  f"{num(float(np.max(np.abs(np.asarray(mine, float) - theirs))))})"
                        break
        return MiniRun(call, labels, None if order is None else tuple(n.name for n in order), tuple(evaluated),
                       values_out, error, engine_order, engine_values, problem)

    try:
        order = interp.topological_sort(fetches)
    except _Stop as e:
        error = (f"RecursionError: visit({interp.visit_calls[0]}) never returned, visit({e.args[0]}) calling "
                 f"itself {MAX_VISIT_DEPTH} levels deep (stopped there; Python stops at its recursion limit)")
        return result()
    where = "topological_sort"
    try:
        for node in order:
            if node.kind == "placeholder":
                where = f"reading placeholder {node.name}"
                values[node] = interp.expr(interp.placeholder_value, {"node": node, "feed_dict": feed_dict,
                                                                      "values": values})
            elif node.kind == "variable":
                values[node] = node.state.value
            elif node.kind == "constant":
                values[node] = node.value
            else:
                where = f"evaluating {node.name}"
                args = [interp.expr(interp.argument, {"inp": inp, "node": node, "feed_dict": feed_dict,
                                                      "values": values}) for inp in node.inputs]
                values[node] = node.op.forward(node.run_ctx, *args)
            evaluated.append(node.name)
        where = "returning the fetches"
        out = tuple(np.array(be.to_numpy(values[f])) for f in fetches)
    except KeyError as e:
        error = f"KeyError: {_node_text(e.args[0])} while {where}"
        return result()
    except Exception as e:  # noqa: BLE001 -- a kernel given None: the real error, named, without a traceback
        error = f"{type(e).__name__}: {e} while {where}"
        return result()
    return result(out)


@dataclass(frozen=True)
class BlankVerdict:
    number: int
    fill: str | None
    right: bool
    message: str          # plain text (the page escapes it)


@dataclass(frozen=True)
class MiniTFVerdict:
    blanks: tuple[BlankVerdict, ...]
    runs: tuple[MiniRun, ...]          # the whole filled-in program (empty when a blank is not filled)

    @property
    def correct(self) -> bool:
        return bool(self.runs) and all(b.right for b in self.blanks) and all(r.problem is None for r in self.runs)


def check_mini_tf(fills: dict[int, str | None]) -> MiniTFVerdict:
    """Check the student's fills: each blank by running the code with that blank as chosen and the others
    right (so its message says what *that* line does), then the whole program as filled in; every run is set
    beside the engine's ``Session.run`` of the same fetches on the lecture's graph.

    Raises:
        ValueError: a fill that is not one of its blank's choices.
    """
    ex = _lecture_graph()
    right = {b.number: b.right for b in MINI_TF_BLANKS}
    blanks = []
    for b in MINI_TF_BLANKS:
        fill = fills.get(b.number)
        if not fill:
            blanks.append(BlankVerdict(b.number, None, False, "not filled: choose a line"))
            continue
        why = next((c.why for c in b.choices if c.code == fill), None)
        if why is None:
            raise ValueError(f"blank ({b.number}) takes one of the offered lines")
        runs = [run_mini_tf({**right, b.number: fill}, call, ex) for call in MINI_TF_RUNS]
        bad = next((r for r in runs if r.problem), None)
        if bad is None:
            blanks.append(BlankVerdict(b.number, fill, True, f"right: {why}."))
        else:
            blanks.append(BlankVerdict(b.number, fill, False, f"{bad.call}: {bad.summary()}. Why: {why}."))
    if any(not b.fill for b in blanks):
        return MiniTFVerdict(tuple(blanks), ())
    return MiniTFVerdict(tuple(blanks), tuple(run_mini_tf(dict(fills), call, ex) for call in MINI_TF_RUNS))
