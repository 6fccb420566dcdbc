"""The forward graph as plain data (ids, names, ops, values), built from what the engine ran."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from engine.tensor import Tensor, value_kept
from .numbers import DIGITS, fmt_value, plain

VALUE_LIMIT = 64  # tensors with more elements keep a summary instead of every value


def plain_value(x: Any, limit: int = VALUE_LIMIT):
    """A JSON-friendly value: float for one element, nested list up to ``limit`` elements, else None."""
    if x is None:
        return None
    arr = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    if arr.size == 1:
        return _finite_or_str(float(arr.reshape(())))
    if arr.size > limit:
        return None
    arr = arr.astype(float)
    # whole arrays at once, not element by element (that was half of a 148-op Backprop orders request)
    if np.isfinite(arr).all():
        return arr.tolist()
    kept = arr.astype(object)   # Python floats, and JSON's missing inf/nan as strings (see _finite_or_str)
    kept[np.isnan(arr)] = "nan"
    kept[arr == np.inf] = "inf"
    kept[arr == -np.inf] = "-inf"
    return kept.tolist()


def _finite_or_str(v: float):
    # JSON has no inf/nan: keep them as strings so json.dumps never fails and the app can flag them
    return v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))


def summary(x: Any, digits: int = DIGITS) -> str:
    """Short text for a value too large to keep (over :data:`VALUE_LIMIT` elements, :func:`plain_value` gives
    None): its first four numbers and its shape, ``[0.1, 0.2, 0.3, 0.4, …] (10×10)``."""
    return fmt_value(x.numpy() if isinstance(x, Tensor) else np.asarray(x), digits, max_items=4)


def is_finite(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return False
    if isinstance(value, (int, float)):
        return bool(np.isfinite(value))
    return all(is_finite(v) for v in value)


@dataclass
class GraphNode:
    id: int
    name: str
    op: str                      # 'leaf' for inputs/constants, else the engine op name (or 'group')
    kind: str                    # 'input' | 'constant' | 'op' | 'group' | 'forward' | 'gradient' | 'seed'
    shape: list[int]
    value: Any = None
    group: str | None = None
    expr: str = ""
    ref: int | None = None       # gradient graph: the forward node this node is
    count: int = 1               # collapsed group: how many nodes it stands for
    uid: int = 0                 # the engine Tensor.unique_id (0 for synthetic nodes)
    composite: int | None = None  # index into Graph.composites when a composite op (tanh, ...) made it

    @property
    def label(self) -> str:
        return self.name if self.kind != "op" else f"{self.name} ({self.op})"


@dataclass
class GraphEdge:
    src: int
    dst: int
    arg: int = 0


@dataclass
class Composite:
    """A typed operation that ran as several primitives: ``name`` (tanh, softmax, sub, ...), its
    member nodes (the last is its result) and its operands (node ids, or numbers)."""
    name: str
    members: list[int]
    args: list[Any]

    @property
    def output(self) -> int:
        return self.members[-1]


@dataclass
class Graph:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    output: int
    _parents: dict = field(default=None, repr=False, compare=False)
    _children: dict = field(default=None, repr=False, compare=False)
    composites: list[Composite] = field(default_factory=list)

    def node(self, node_id: int) -> GraphNode:
        return self.nodes[self._index()[node_id]]

    def _index(self) -> dict[int, int]:
        idx = getattr(self, "_idx", None)
        if idx is None or len(idx) != len(self.nodes):
            idx = {n.id: i for i, n in enumerate(self.nodes)}
            object.__setattr__(self, "_idx", idx)
        return idx

    def _adj(self):
        if self._parents is None:
            p: dict[int, list[int]] = {n.id: [] for n in self.nodes}
            c: dict[int, list[int]] = {n.id: [] for n in self.nodes}
            for e in self.edges:
                p[e.dst].append(e.src)
                c[e.src].append(e.dst)
            self._parents, self._children = p, c
        return self._parents, self._children

    def parents(self, node_id: int) -> list[int]:
        return self._adj()[0][node_id]

    def children(self, node_id: int) -> list[int]:
        return self._adj()[1][node_id]

    def by_name(self, name: str) -> GraphNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def without_constants(self) -> "Graph":
        """The graph without constant nodes (the slides fold numbers into the op label)."""
        keep = {n.id for n in self.nodes if n.kind != "constant" or n.id == self.output}
        return Graph([n for n in self.nodes if n.id in keep],
                     [e for e in self.edges if e.src in keep and e.dst in keep], self.output,
                     composites=self.composites)

    def to_dict(self) -> dict:
        return {"nodes": [asdict(n) for n in self.nodes], "edges": [asdict(e) for e in self.edges],
                "output": self.output, "composites": [asdict(c) for c in self.composites]}


MACRON = "\u0304"   # combining macron: x5 -> x̄5
_NUMBERED = re.compile(r"([A-Za-z])(\d+)")


OVERLINE = "\u0305"   # combining overline: joins from letter to letter, one bar over a whole name
_INDEXED = re.compile(r"[^\W\d_](_?\d+)?")   # a letter and its index: x, x5, W1, h_2


def bar(name: str) -> str:
    """The lecture's adjoint notation of a name. A letter with its index keeps the slides' x̄i (x5 -> x̄5: a
    combining macron over the letter alone); a longer name is barred whole (loss -> l̅o̅s̅s̅, fc1.weight under one
    line), never over its first letter alone (l̄oss read as the adjoint of l)."""
    if not name:
        return name
    if _INDEXED.fullmatch(name):
        return name[:1] + MACRON + name[1:]
    return "".join(ch + OVERLINE if not ch.isspace() else ch for ch in name)


def adjoint_label(adjoints: Mapping[int, str], nid: int, name: str) -> str:
    """The adjoint of node ``nid`` as every page writes it: its lecture name from ``adjoints`` (as
    :func:`adjoint_names` gives them: the output's ``x̄7`` where the program called it f), else :func:`bar` of
    ``name`` (a node the graph does not hold, such as a composite's box)."""
    return adjoints.get(nid) or bar(name)


def output_number(graph: Graph) -> str:
    """The name the slides give the output where the program named it otherwise: ``x7`` for the slide
    example's ``f`` (x3..x6 numbered, the output is x7 = f). Empty when the output is already numbered, or
    when the program named an intermediate itself (``lse``, ``m``): then no numbering is the slides'.

    The prefix is the one the intermediates carry (``x`` when the inputs are x1, x2, ..., else ``v``), or the
    inputs' own when there are no intermediates; the number follows the largest one in use.
    """
    out = next((n for n in graph.nodes if n.id == graph.output), None)
    if out is None or _NUMBERED.fullmatch(out.name):
        return ""
    others = [n for n in graph.nodes if n.id != graph.output and n.kind != "constant" and "." not in n.name]
    inner = [n for n in others if n.kind != "input"]
    numbered = [_NUMBERED.fullmatch(n.name) for n in (inner or others)]
    if not numbered or not all(numbered) or len({m.group(1) for m in numbered}) != 1:
        return ""
    prefix = numbered[0].group(1)
    used = [int(m.group(2)) for m in (_NUMBERED.fullmatch(n.name) for n in others) if m and m.group(1) == prefix]
    return f"{prefix}{max(used) + 1}"


def lecture_names(graph: Graph) -> dict[int, str]:
    """node id -> its name as the slides number it: the graph's own names, the output's ``x7`` where the program
    called it ``f`` (:func:`output_number`)."""
    out = {n.id: n.name for n in graph.nodes}
    alias = output_number(graph)
    if alias:
        out[graph.output] = alias
    return out


def marked_names(graph: Graph, mark: Callable[[str], str]) -> dict[int, str]:
    """node id -> its lecture name under ``mark``: the adjoint ``x̄3`` (``bar``) or forward mode's tangent
    ``ẋ3``; the output's ``x̄7`` / ``ẋ7`` even where the program called it ``f`` (:func:`output_number`)."""
    return {nid: mark(name) for nid, name in lecture_names(graph).items()}


def adjoint_names(graph: Graph) -> dict[int, str]:
    """node id -> its adjoint as every page writes it: ``x̄3``, the output's ``x̄7`` (so one page never says f̄
    where another says x̄7)."""
    return marked_names(graph, bar)


def output_alias_note(graph: Graph, mark: Callable[[str], str] = bar) -> str:
    """What the output's adjoint (or tangent, under ``mark``) is also called, for the sentence that seeds it:
    `` (= f̄)`` beside ``x̄7`` where the program named the output ``f``, and where it numbered the output itself
    (``x7 = x1 + x6``: the slides' x7 = f, so the seed reads ``x̄7 (= f̄) = 1`` on every page, whichever way the
    program was typed); empty otherwise (an input, or an output with a name of its own such as ``loss``)."""
    out = next((n for n in graph.nodes if n.id == graph.output), None)
    if out is None:
        return ""
    if output_number(graph):
        return f" (= {mark(out.name)})"
    if out.kind not in ("input", "constant") and _NUMBERED.fullmatch(out.name):
        return f" (= {mark('f')})"
    return ""


def output_adjoint_note(graph: Graph) -> str:
    """`` (= f̄)`` beside the output's ``x̄7`` where the program named it ``f`` (:func:`output_alias_note`)."""
    return output_alias_note(graph, bar)


def _shape(t: Tensor) -> list[int]:
    return [int(s) for s in t.shape]


def graph_from_records(records: Iterable, names: dict[int, str], groups: dict[int, str] | None = None,
                       exprs: dict[int, str] | None = None, leaves: Iterable[Tensor] = (),
                       output: Tensor | None = None, composites: Iterable = ()
                       ) -> tuple[Graph, dict[int, int], dict[int, Tensor]]:
    """Graph from traced op records (``op, inputs, out`` attributes), in execution order.

    ``composites``: the parser's ``CompositeCall`` list (typed ops that ran as several primitives).

    Returns the graph, a map Tensor.unique_id -> node id, and node id -> Tensor.
    """
    groups = groups or {}
    exprs = exprs or {}
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    id_of: dict[int, int] = {}
    tensor_of: dict[int, Tensor] = {}
    const_count = [0]

    def add(t: Tensor, op: str, kind: str) -> int:
        nid = len(nodes)
        name = names.get(t.unique_id)
        if name is None:
            if kind == "constant" and t.numel() == 1:
                name = plain(float(t.item()))
            else:
                const_count[0] += 1
                name = f"c{const_count[0]}"
        value = plain_value(t) if value_kept(t) else None   # a value no VJP reads may be gone: "(not recorded)"
        nodes.append(GraphNode(nid, name, op, kind, _shape(t), value, groups.get(t.unique_id),
                               exprs.get(t.unique_id, ""), uid=t.unique_id))
        id_of[t.unique_id] = nid
        tensor_of[nid] = t
        return nid

    for leaf in leaves:
        if leaf.unique_id not in id_of:
            add(leaf, "leaf", "input" if leaf.requires_grad else "constant")
    for r in records:
        for t in r.inputs:
            if t.unique_id not in id_of:
                add(t, "leaf", "input" if (t.requires_grad and t.is_leaf()) else "constant")
        out = r.out
        nid = add(out, r.op, "op" if out.requires_grad else "constant")
        for k, t in enumerate(r.inputs):
            edges.append(GraphEdge(id_of[t.unique_id], nid, k))
    out_id = id_of[output.unique_id] if output is not None and output.unique_id in id_of else len(nodes) - 1
    comps: list[Composite] = []
    for call in composites:
        members = [id_of[u] for u in call.outputs if u in id_of]
        if len(members) < 2:
            continue
        args = [id_of.get(a.unique_id, plain_value(a)) if isinstance(a, Tensor) else float(a) for a in call.args]
        for m in members:
            nodes[m].composite = len(comps)
        comps.append(Composite(call.name, members, args))
    return Graph(nodes, edges, out_id, composites=comps), id_of, tensor_of


class _Rec:
    __slots__ = ("op", "inputs", "out")

    def __init__(self, op, inputs, out):
        self.op, self.inputs, self.out = op, inputs, out


def graph_from_output(out: Tensor, names: dict[int, str] | None = None, groups: dict[int, str] | None = None,
                      include_constants: bool = False) -> Graph:
    """The graph behind any engine tensor, from its recorded history.

    Args:
        out: a tensor computed with ``requires_grad`` inputs.
        names: Tensor.unique_id -> display name (defaults: ``Tensor.name`` or ``v<k>``).
        groups: Tensor.unique_id -> group label (for :func:`collapse_groups`, e.g. "Linear 1").
        include_constants: keep constant inputs (numbers, data) as nodes.
    """
    from engine.autodiff import topological_sort
    names = dict(names or {})
    order = topological_sort(out)[::-1]  # inputs first
    recs = []
    k = 0
    for t in order:
        if t.unique_id not in names:
            if t.name:
                names[t.unique_id] = t.name
            elif not t.is_leaf():
                k += 1
                names[t.unique_id] = f"v{k}"
        if t.is_leaf():
            continue
        recs.append(_Rec(t.op_name, tuple(t.history.inputs), t))
    leaves = [t for t in order if t.is_leaf()]
    g, _, _ = graph_from_records(recs, names, groups, None, leaves, out)
    return g if include_constants else g.without_constants()
