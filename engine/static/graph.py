"""TensorFlow-1-style static graphs: placeholders, variables, constants and op nodes (an example in
:mod:`engine.static`). The tensors a graph hands out are ordinary ``engine.Tensor`` objects on the
graph's symbolic backend (:mod:`engine.static.symbolic`). Nodes are kept in creation order, which is
a topological order (an op's inputs always exist before it).
"""
from __future__ import annotations

import itertools
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ..backends import Backend, get_backend
from ..dtypes import DType, as_dtype, float32, float64, int64
from ..tensor import History, Tensor
from .symbolic import Abstract, SymbolicBackend

#: node kinds, in the order the app's legend lists them
KINDS = ("placeholder", "variable", "constant", "op", "update")


class VariableState:
    """The value a variable holds between runs (shared by a graph and its optimised copies)."""

    __slots__ = ("value", "initial")

    def __init__(self, value) -> None:
        self.value = self.initial = value


class Node:
    """One node of a static graph: a placeholder, variable, constant, op or update (one of :data:`KINDS`)."""

    __slots__ = ("graph", "id", "kind", "name", "op", "params", "inputs", "shape", "dtype", "role", "tensor",
                 "value", "state", "run_ctx", "trainable", "lr", "note")

    def __init__(self, graph: "Graph", kind: str, name: str, shape, dtype: DType, inputs=(), op=None,
                 params=None, role: str = "forward"):
        self.graph = graph
        self.id = -1                 # position in creation order (a topological order)
        self.kind = kind
        self.name = name             # unique in the graph: matmul, matmul_1, ...
        self.op = op                 # op nodes: the engine.ops primitive, with its params as in eager mode
        self.params = params
        self.inputs: list[Node] = list(inputs)  # in the op's argument order
        self.shape = tuple(shape)
        self.dtype = dtype
        self.role = role             # forward, gradient (added by gradients()) or update (a training op)
        self.tensor: Tensor | None = None  # the symbolic tensor users build with (None: made by a pass)
        self.value = None            # constants: the backend array
        self.state: VariableState | None = None
        self.run_ctx: History | None = None  # op nodes: what the op's forward needs (backend, params)
        self.trainable = False
        self.lr = None               # update nodes: learning rate array
        self.note = ""               # e.g. "folded: mul(Const, Const)" after constant folding

    @property
    def label(self) -> str:
        """What the node computes, for drawings (the op's name, or the node's own name)."""
        if self.kind == "op":
            return self.op.name
        if self.kind == "update":
            return "apply_gradient_descent"
        return self.name

    def __repr__(self) -> str:
        ins = ", ".join(n.name for n in self.inputs)
        return f"<Node {self.id} {self.kind} {self.name!r} shape={self.shape} ({ins})>"


class _Thread(threading.local):
    def __init__(self) -> None:
        self.stack: list[Graph] = []
        self.default: Graph | None = None


_thread = _Thread()
_graph_ids = itertools.count(1)


class Graph:
    """A static computation graph (nodes in creation order)."""

    def __init__(self, backend: "str | Backend" = "numpy", name: str | None = None):
        """``backend``: the real backend a Session runs the graph on; ``name`` defaults to ``graph1``, ..."""
        self.name = name or f"graph{next(_graph_ids)}"
        self.backend = get_backend(backend)
        self.symbolic = SymbolicBackend(self)
        self.nodes: list[Node] = []
        self._names: Counter = Counter()
        self._role = "forward"
        self.outputs: list[Node] = []          # set for captured programs (engine.static.compile)
        self.gradients: dict[int, Node] = {}

    # --- context
    @contextmanager
    def as_default(self) -> Iterator["Graph"]:
        """Make this the graph that ``placeholder`` / ``Variable`` / ``constant`` add to."""
        _thread.stack.append(self)
        try:
            yield self
        finally:
            _thread.stack.pop()

    @contextmanager
    def _building(self, role: str) -> Iterator[None]:
        prev, self._role = self._role, role
        try:
            yield
        finally:
            self._role = prev

    # --- node creation
    def _unique(self, base: str) -> str:
        k = self._names[base]
        self._names[base] += 1
        return base if k == 0 else f"{base}_{k}"

    def _append(self, node: Node) -> Node:
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    def _leaf(self, kind: str, name: str, shape: tuple, dtype: DType, value=None) -> tuple[Node, Tensor]:
        """A new placeholder / variable / constant node and the tensor users build with."""
        node = self._append(Node(self, kind, self._unique(name), shape, dtype))
        abstract = Abstract(shape, dtype, value=value)
        abstract.node = node
        t = node.tensor = Tensor._make(abstract, self.symbolic)
        t.name = node.name
        return node, t

    def _add_op(self, op, params, inputs: tuple, out: Tensor) -> Node:
        in_nodes = [self.node_of(t) for t in inputs]
        a = out._data
        node = Node(self, "op", self._unique(op.name), a.shape, a.dtype, in_nodes, op, params, self._role)
        node.run_ctx = History(op, (), params, self.backend)
        node.tensor = out
        a.node = node
        return self._append(node)

    def node_of(self, t: "Tensor | Node") -> Node:
        """The node that computes a tensor of this graph (constants made on the fly become nodes);
        ValueError for a tensor of another graph or of eager mode."""
        if isinstance(t, Node):
            if t.graph is not self:
                raise ValueError(f"node {t.name!r} belongs to graph '{t.graph.name}', not '{self.name}'")
            return t
        if not isinstance(t, Tensor) or not isinstance(t._data, Abstract):
            raise ValueError(f"expected a tensor of static graph '{self.name}', got "
                             f"{'an eager tensor' if isinstance(t, Tensor) else type(t).__name__}")
        if t.backend is not self.symbolic:
            raise ValueError(f"tensor belongs to {t.backend.name}, not to graph '{self.name}'")
        return self._node_of_abstract(t._data)

    def _node_of_abstract(self, a: Abstract) -> Node:
        if a.node is not None:
            return a.node
        if a.value is None:
            raise RuntimeError("a value of this graph was computed by a backend kernel outside any op (a VJP "
                               "or composite reaching into raw arrays): write it with engine ops")
        # a constant made by as_tensor_like / zeros_like inside an op
        node = Node(self, "constant", self._unique("Const"), a.shape, a.dtype, role=self._role)
        node.value = self.backend.array(a.value, a.dtype)
        a.node = node
        return self._append(node)

    # --- queries
    def get(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"graph '{self.name}' has no node named {name!r}")

    def variables(self, trainable_only: bool = False) -> list[Node]:
        return [n for n in self.nodes if n.kind == "variable" and (n.trainable or not trainable_only)]

    def counts(self, nodes: Sequence[Node] | None = None) -> "NodeCounts":
        """How many nodes of each kind (and how many were added by ``gradients()``)."""
        nodes = self.nodes if nodes is None else nodes
        by_kind = Counter(n.kind for n in nodes)
        return NodeCounts(total=len(nodes), gradient=sum(1 for n in nodes if n.role == "gradient"),
                          **{k: by_kind.get(k, 0) for k in KINDS})

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<Graph '{self.name}' with {len(self.nodes)} nodes>"


@dataclass(frozen=True)
class NodeCounts:
    """Node counts of a graph or a subset of it."""

    total: int
    gradient: int
    placeholder: int
    variable: int
    constant: int
    op: int
    update: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def get_default_graph() -> Graph:
    """The innermost ``as_default()`` graph, else this thread's global default graph."""
    if _thread.stack:
        return _thread.stack[-1]
    if _thread.default is None:
        _thread.default = Graph(name="default")
    return _thread.default


def reset_default_graph() -> Graph:
    """Start a fresh global default graph (for this thread) and return it."""
    if _thread.stack:
        raise RuntimeError("reset_default_graph() inside a `with graph.as_default()` block")
    _thread.default = Graph(name="default")
    return _thread.default


def _dtype_of(value, dtype) -> DType:
    if dtype is not None:
        return as_dtype(dtype)
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return float32
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return int64
    return float64


def placeholder(shape: Sequence[int] | None = None, dtype="float64", name: str | None = None,
                graph: Graph | None = None) -> Tensor:
    """An input fed at run time through ``feed_dict``, in ``graph`` (default: :func:`get_default_graph`).

    Raises:
        ValueError: the shape is missing or has an unknown (None / negative) dimension: the engine's
            composites and VJP rules are shape-specialised, as in XLA, so every dimension must be known.
    """
    if shape is None or any(s is None or int(s) < 0 for s in shape):
        raise ValueError(f"placeholder {name or ''} needs a full static shape, got {shape!r}: "
                         "the graph's shapes are fixed when it is built")
    g = graph if graph is not None else get_default_graph()
    return g._leaf("placeholder", name or "Placeholder", tuple(shape), as_dtype(dtype))[1]


def Variable(initial, name: str | None = None, trainable: bool = True, dtype=None,  # noqa: N802 (TF's name)
             graph: Graph | None = None) -> Tensor:
    """A stateful node: its value (``initial``: a number, list, array or eager Tensor) is kept across
    ``Session.run`` calls and updated by training ops; ``minimize`` updates the ``trainable`` ones."""
    if isinstance(initial, Tensor):
        initial = initial.numpy()
    g = graph if graph is not None else get_default_graph()
    dt = _dtype_of(initial, dtype)
    value = g.backend.array(np.asarray(initial), dt)
    node, t = g._leaf("variable", name or "Variable", tuple(g.backend.shape(value)), dt)
    node.state = VariableState(value)
    node.trainable = bool(trainable) and dt.is_floating
    return t


def constant(value, dtype=None, name: str | None = None, graph: Graph | None = None) -> Tensor:
    """A node with a fixed value (it is never recomputed, and constant folding may absorb it)."""
    if isinstance(value, Tensor):
        value = value.numpy()
    g = graph if graph is not None else get_default_graph()
    dt = _dtype_of(value, dtype)
    arr = np.array(value, dtype=dt.numpy)
    node, t = g._leaf("constant", name or "Const", arr.shape, dt, value=arr)
    node.value = g.backend.array(arr, dt)
    return t


def tensor_to_node(t) -> Node:
    """The node of a static tensor (whatever graph it is in)."""
    if isinstance(t, Node):
        return t
    if isinstance(t, Tensor) and isinstance(t._data, Abstract):
        return t.backend.graph.node_of(t)
    raise TypeError(f"expected a static-graph tensor or node, got {type(t).__name__}"
                    + (" (an eager tensor: build it from placeholders/variables/constants)"
                       if isinstance(t, Tensor) else ""))
