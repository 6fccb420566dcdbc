"""Record one real forward + backward pass of a network at tensor level.

The forward op list comes from ``engine.trace_ops`` (every primitive, in execution order,
with the layer its ``scope`` named). The backward pass is recorded by ``explorer.explain``'s trace
(``record_backward``: the app's one recorder of the observer's events), keeping whole arrays; its
events are grouped into one :class:`BackwardStep` per visited node. The ops the engine runs
*inside* each VJP come with the trace too, so a step can show the actual matrices that were
multiplied and which saved tensors the VJP read.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from explorer.explain.parser import check_deadline
from explorer.explain.trace import BackwardEvent, record_backward
from engine.tensor import Tensor, trace_ops
from explorer.kit.labels import shape_text

from .presets import Network, Scope
from explorer.explain.numbers import plain

COMPACT_CELLS = 400   # arrays up to this many numbers are kept whole (a heatmap shows at most this many)


@dataclass(frozen=True)
class Summary:
    """A large array, kept compactly once the recording has been measured: what the page shows of it
    (shape, statistics) and a digest that tells whether two arrays were the same."""

    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    stats: dict
    magnitude: float          # largest finite |x|
    nonzero: bool
    digest: bytes

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @classmethod
    def of(cls, arr: np.ndarray) -> "Summary":
        a = np.asarray(arr)
        f = a.astype(np.float64, copy=False)
        finite = f[np.isfinite(f)] if f.size else f
        return cls(tuple(a.shape), a.dtype.name, int(a.nbytes), statistics(a),
                   float(np.abs(finite).max()) if finite.size else 0.0, bool((a != 0).any()),
                   hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).digest())


def statistics(arr: np.ndarray) -> dict[str, float]:
    """What the page shows of a tensor too large for a heatmap: mean, std, min, max over its finite numbers
    (nan when there are none), the 2-norm and the element count."""
    f = np.asarray(arr).astype(np.float64, copy=False)
    finite = f[np.isfinite(f)] if f.size else f
    some = finite.size > 0
    return {"mean": float(finite.mean()) if some else float("nan"),
            "std": float(finite.std()) if some else float("nan"),
            "min": float(finite.min()) if some else float("nan"),
            "max": float(finite.max()) if some else float("nan"),
            "norm": float(np.sqrt((finite ** 2).sum())), "numel": float(f.size)}


def compacted(value):
    """``value`` itself when small (or None), else its :class:`Summary`."""
    if isinstance(value, np.ndarray) and value.size > COMPACT_CELLS:
        return Summary.of(value)
    return value


def same(a, b) -> bool:
    """Whether two recorded arrays (either may be a :class:`Summary`) hold the same numbers."""
    if a is None or b is None or tuple(a.shape) != tuple(b.shape):
        return False
    if isinstance(a, Summary) or isinstance(b, Summary):
        return isinstance(a, Summary) and isinstance(b, Summary) and a.digest == b.digest
    return bool(np.array_equal(a, b))


def is_zero(value) -> bool:
    """Whether every number of a recorded array (or :class:`Summary`) is 0."""
    if isinstance(value, Summary):
        return not value.nonzero
    return not (np.asarray(value) != 0).any()


@dataclass
class Node:
    """One tensor of the graph: a leaf (parameter / input / constant) or an op's output."""

    id: int
    label: str
    op: str                    # op name, or "param" / "input" / "constant" for leaves
    kind: str                  # "param" | "input" | "constant" | "op"
    shape: tuple[int, ...]
    dtype: str
    layer: str
    parents: list[int]
    requires_grad: bool
    value: np.ndarray
    params_text: str = ""
    adjoint: np.ndarray | None = None     # final adjoint (d loss / d node) after the backward pass
    composite: str = ""                   # the formula, on the last primitive of a composite (tanh)
    composite_call: str = ""              # ``tanh(add#20)``: the composite applied to its operand

    @property
    def nbytes(self) -> int:
        return int(self.value.nbytes)


@dataclass
class VjpOp:
    """An op the engine ran while computing one node's VJP (real inputs and output)."""

    op: str
    inputs: list[np.ndarray]
    output: np.ndarray
    reads: list[int | None]     # node id of each input when it is a graph tensor, else None


@dataclass
class Contribution:
    """What a node sent to one parent at one step, and that parent's running sum after it."""

    step: int
    source: int
    target: int
    value: np.ndarray
    received: int
    expected: int
    total: np.ndarray

    @property
    def complete(self) -> bool:
        return self.received >= self.expected


@dataclass
class BackwardStep:
    index: int
    node: int
    adjoint: np.ndarray
    contributions: list[Contribution] = field(default_factory=list)
    leaf_grad: np.ndarray | None = None
    vjp_ops: list[VjpOp] = field(default_factory=list)

    @property
    def reads(self) -> list[int]:
        """Graph tensors this VJP read (saved for backward), without repeats."""
        seen: dict[int, None] = {}
        for op in self.vjp_ops:
            for r in op.reads:
                if r is not None:
                    seen.setdefault(r, None)
        return list(seen)


@dataclass
class Layer:
    name: str
    nodes: list[int]
    output: int           # the last op output of the layer (what the next layer consumes)


@dataclass
class Recording:
    network: Network
    nodes: list[Node]
    forward_order: list[int]        # op nodes in execution order
    backward: list[BackwardStep]
    layers: list[Layer]
    loss: float
    loss_node: int
    events: list[BackwardEvent] = field(default_factory=list)   # explorer.explain's trace of the backward pass

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def contributions_to(self, node_id: int) -> list[Contribution]:
        """Every contribution a node received (one per consumer), in the order they arrived."""
        return [c for s in self.backward for c in s.contributions if c.target == node_id]

    def compact(self) -> "Recording":
        """Keep every array larger than ``COMPACT_CELLS`` as a :class:`Summary` (in place; returns self).

        Done once everything that needs the whole arrays (views, memory report, gradient check) is built:
        the pictures draw a heatmap only up to that size and statistics beyond it, so a cached exploration
        holds what the page shows, not every intermediate array (a two-layer 256-wide network: 18 MB -> 1 MB).
        """
        for n in self.nodes:
            n.value, n.adjoint = compacted(n.value), compacted(n.adjoint)
        for s in self.backward:
            s.adjoint, s.leaf_grad = compacted(s.adjoint), compacted(s.leaf_grad)
            for c in s.contributions:
                c.value, c.total = compacted(c.value), compacted(c.total)
            for op in s.vjp_ops:
                op.inputs, op.output = [compacted(a) for a in op.inputs], compacted(op.output)
        return self

    def node_by_label(self, label: str) -> Node:
        for n in self.nodes:
            if n.label == label:
                return n
        raise KeyError(f"no node labelled {label!r}")


def _params_text(params) -> str:
    if params is None:
        return ""
    if hasattr(params, "name") and not isinstance(params, (tuple, list)):
        return str(params.name)
    text = repr(params)
    return text if len(text) <= 60 else text[:57] + "..."


def record(network: Network) -> Recording:
    """Run ``network``'s forward and backward pass once and keep every event.

    Returns:
        A :class:`Recording`. The model's parameters hold ``.grad`` from this backward pass
        (previous gradients are cleared first, so they are exactly this pass's).
    """
    network.model.zero_grad()
    leaf_names = {id(t): name for name, t in network.leaves().items()}
    nodes: list[Node] = []
    ids: dict[int, int] = {}          # tensor unique_id -> node id
    tensors: list[Tensor] = []        # keeps every recorded tensor alive during recording
    forward_order: list[int] = []
    scope = Scope()

    def add_leaf(t: Tensor, layer: str) -> int:
        name = leaf_names.get(id(t))
        if name is not None:
            kind, label = ("input" if name == "x" else "param"), name
        elif t.requires_grad:
            kind, label = "param", t.name or f"leaf{len(nodes)}"
        else:
            kind = "constant" if t.numel() == 1 else "input"
            label = t.name or (plain(t.item()) if t.numel() == 1 else
                               ("indices" if not t.dtype.is_floating else "const") + f"#{len(nodes)}")
        nid = len(nodes)
        nodes.append(Node(nid, label, kind, kind, t.shape, t.dtype.name, layer, [], t.requires_grad,
                          t.numpy().copy()))
        ids[t.unique_id] = nid
        tensors.append(t)
        return nid

    def on_forward(op, inputs, params, out):
        check_deadline()   # the copies below are the request's work too
        layer = scope.current or "(outside layers)"
        parents = [ids[t.unique_id] if t.unique_id in ids else add_leaf(t, layer) for t in inputs]
        nid = len(nodes)
        nodes.append(Node(nid, f"{op.name}#{nid}", op.name, "op", out.shape, out.dtype.name, layer, parents,
                          out.requires_grad, out.numpy().copy(), _params_text(params)))
        ids[out.unique_id] = nid
        tensors.append(out)
        forward_order.append(nid)
        if scope.composite_op is not None:
            blocks.setdefault(scope.composite_op[0], (scope.composite_op[1], scope.composite_op[2], []))[2].append(nid)

    blocks: dict[int, tuple[str, str, list[int]]] = {}   # block -> (op name, formula, member op nodes)
    with trace_ops(on_forward):
        loss = network.loss(scope)
    for op_name, formula, members in blocks.values():   # the last member's output is the composite's value
        inside = set(members)
        operand = next((p for m in members for p in nodes[m].parents
                        if p not in inside and nodes[p].kind != "constant"), None)
        last = nodes[members[-1]]
        last.label, last.composite = f"{op_name}#{last.id}", formula
        last.composite_call = f"{op_name}({nodes[operand].label})" if operand is not None else op_name
    if loss.numel() != 1:
        raise ValueError(f"the network's loss must be a scalar, got shape {loss.shape}")
    loss_node = ids[loss.unique_id]

    names = {nid: n.label for nid, n in enumerate(nodes)}
    vjp_ops: dict[int, list[VjpOp]] = {}

    def on_op(r) -> None:   # copied as it runs: later ops may reuse the buffers
        check_deadline()
        if r.after == "visit":   # inside this step's VJP (before it sent anything)
            vjp_ops.setdefault(r.step, []).append(VjpOp(r.op, [t.numpy().copy() for t in r.inputs],
                                                        r.out.numpy().copy(), [ids.get(t.unique_id) for t in r.inputs]))

    recorder, error, _ = record_backward(loss, ids, names, network.leaves(), value_of=_array_copy,
                                         describe=_shape_words, on_op=on_op)
    if error is not None:
        raise RuntimeError(error)
    steps = _steps(recorder.events, vjp_ops)
    for s in steps:
        nodes[s.node].adjoint = s.adjoint

    layers: list[Layer] = []
    by_name: dict[str, Layer] = {}
    for n in nodes:
        layer = by_name.get(n.layer)
        if layer is None:
            layer = by_name[n.layer] = Layer(n.layer, [], n.id)
            layers.append(layer)
        layer.nodes.append(n.id)
        if n.kind == "op":
            layer.output = n.id
    # the events themselves stay as frames need them: who, when and how many (the arrays are in ``steps``)
    events = [replace(e, value=None) for e in recorder.events]
    return Recording(network, nodes, forward_order, steps, layers, float(loss.item()), loss_node, events)


def _shape_words(a: np.ndarray) -> str:
    return f"a {shape_text(a.shape)} array" if a.ndim else "a scalar"


def _array_copy(x) -> np.ndarray:
    return (x.numpy() if isinstance(x, Tensor) else np.asarray(x)).copy()


def _steps(events: list[BackwardEvent], vjp_ops: dict[int, list[VjpOp]]) -> list[BackwardStep]:
    """The recorded events grouped by step (one node processed per step), with their arrays."""
    steps: list[BackwardStep] = []
    for e in events:
        if e.kind == "visit":
            steps.append(BackwardStep(len(steps), e.node, e.value, vjp_ops=vjp_ops.get(e.step, [])))
        elif e.kind == "send":
            steps[-1].contributions.append(Contribution(len(steps) - 1, e.node, e.parent, e.value, 0, 0,
                                                        np.empty(0)))
        elif e.kind == "accumulate":
            c = steps[-1].contributions[-1]
            c.received, c.expected, c.total = e.received, e.expected, e.value
        elif e.kind == "leaf":
            steps[-1].leaf_grad = e.value
    return steps
