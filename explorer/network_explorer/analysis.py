"""What the page shows about a recording: VJP formulas, tensor looks, memory, gradient checks."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine import no_grad, ops
from explorer.explain.costs import RELU_SAVED  # noqa: F401 - one wording for every page that shows memory
from explorer.explain.parser import check_deadline
from engine.tensor import Tensor, kept_for_backward

from .presets import Network
from .recording import BackwardStep, Recording, Summary, same, statistics

def vjp_formula(op: str) -> str:
    """The VJP text of a primitive (its ``formula``); leaves and no-gradient ops say what happens to them.

    Raises:
        KeyError: no primitive of that name, or one that states no formula.
    """
    if op in ("param", "input"):
        return "leaf: .grad += adjoint (LeafAccumulated)"
    if op == "constant":
        return "no gradient flows here"
    try:
        prim = ops.primitive(op)
    except KeyError:
        raise KeyError(f"no VJP formula text for op '{op}'") from None
    if not prim.differentiable:
        return "no gradient flows here"
    if not prim.formula:
        raise KeyError(f"no VJP formula text for op '{op}'")
    return prim.formula


# ---------------------------------------------------------------------------
# looking at a tensor

HEATMAP_MAX_CELLS = 400


@dataclass
class TensorLook:
    """How to show one tensor: a matrix for a heatmap when small, else summary statistics."""

    shape: tuple[int, ...]
    matrix: np.ndarray | None          # 2-D (rows, cols) when small enough
    stats: dict[str, float]

    @property
    def is_heatmap(self) -> bool:
        return self.matrix is not None


def look(value: np.ndarray | None, max_cells: int = HEATMAP_MAX_CELLS) -> TensorLook | None:
    """A heatmap matrix (0-d/1-d as one row, n-d folded to rows × last dim) or statistics."""
    if value is None:
        return None
    if isinstance(value, Summary):   # a large tensor kept compactly: its statistics, never a heatmap
        return TensorLook(value.shape, None, dict(value.stats))
    arr = np.asarray(value, dtype=np.float64)
    stats = statistics(arr)
    matrix = None
    if arr.size <= max_cells:
        matrix = arr.reshape(1, -1) if arr.ndim <= 1 else arr.reshape(-1, arr.shape[-1])
    return TensorLook(tuple(arr.shape), matrix, stats)


def magnitude(value) -> float:
    """The largest finite |x| of a tensor (0 for an empty or all-NaN one)."""
    if isinstance(value, Summary):
        return value.magnitude
    arr = np.asarray(value, dtype=np.float64)
    finite = np.abs(arr[np.isfinite(arr)])
    return float(finite.max()) if finite.size else 0.0


def value_scale(rec: Recording, node_id: int) -> float:
    """The colour scale of a node's value: its own largest magnitude."""
    return magnitude(rec.node(node_id).value)


def adjoint_scale(rec: Recording, node_id: int) -> float:
    """One colour scale for everything that is (part of) a node's adjoint: what it held when processed,
    its final adjoint, every contribution it received and the running sums. Drawn with this scale, a
    contribution and the fan-out sum it belongs to are comparable, and the adjoint looks the same on
    every panel."""
    parts = [rec.node(node_id).adjoint]
    parts += [s.adjoint for s in rec.backward if s.node == node_id]
    for c in rec.contributions_to(node_id):
        parts += [c.value, c.total]
    return max((magnitude(p) for p in parts if p is not None), default=0.0)


def format_shape(shape: tuple[int, ...]) -> str:
    return "scalar" if not shape else "(" + ", ".join(str(s) for s in shape) + ")"


# ---------------------------------------------------------------------------
# one backward step, ready to show


@dataclass
class StepDetail:
    """A backward step: the op, its formula, the adjoint it holds, the VJP's real matrices, what it sent."""

    step: int
    node: int
    label: str
    op: str
    formula: str
    adjoint: np.ndarray
    products: list[tuple[str, list[np.ndarray], np.ndarray]]   # (op, inputs, output) of small VJP matmuls etc.
    sent: list[dict]          # per contribution: target label, value, received/expected, running total
    leaf_grad: np.ndarray | None
    product_scales: list[tuple[list[float], float]] = field(default_factory=list)  # colour scale per panel


def step_detail(rec: Recording, step: BackwardStep, max_cells: int = HEATMAP_MAX_CELLS) -> StepDetail:
    """Everything the page prints for one backward step (built from the recorded events)."""
    node = rec.node(step.node)
    products, scales = [], []

    def scale_of_input(arr, read):
        # a saved forward tensor: its value's scale; the adjoint this step holds: the node's adjoint scale
        if read is not None:
            return value_scale(rec, read)
        if same(arr, step.adjoint):
            return adjoint_scale(rec, step.node)
        return magnitude(arr)

    def scale_of_output(arr):
        for c in step.contributions:   # a contribution sent to a parent: that parent's adjoint scale
            if same(c.value, arr) or (c.value.size == arr.size and same(c.value, np.reshape(arr, c.value.shape))):
                return adjoint_scale(rec, c.target)
        return magnitude(arr)

    # a Linear's third contribution, b̄ = Σ_rows Ȳ, is a sum: shown beside its two matmuls
    shown = ("matmul", "mul", "scatter_add", "div") + (("sum",) if node.op == "linear" else ())
    for op in step.vjp_ops:
        if op.op in shown and op.output.size <= max_cells \
                and all(a.size <= max_cells for a in op.inputs):
            products.append((op.op, op.inputs, op.output))
            scales.append(([scale_of_input(a, r) for a, r in zip(op.inputs, op.reads)], scale_of_output(op.output)))
    sent = []
    for c in step.contributions:
        sent.append({"target": c.target, "label": rec.node(c.target).label, "value": c.value,
                     "received": c.received, "expected": c.expected, "total": c.total,
                     "fan_out": c.expected > 1, "complete": c.complete})
    return StepDetail(step.index, node.id, node.label, node.op, vjp_formula(node.op), step.adjoint, products,
                      sent, step.leaf_grad, scales)


@dataclass
class FanOutSum:
    """The contributions one node received from its consumers, and their sum."""

    node: int
    label: str
    parts: list[tuple[str, int, np.ndarray]]    # (from label, step, contribution)
    total: np.ndarray

    @property
    def parts_sum(self) -> np.ndarray:
        """The contributions added up again (on a recording not yet compacted: large ones are summaries)."""
        return np.sum([p[2] for p in self.parts], axis=0)


def fan_out_sum(rec: Recording, node_id: int) -> FanOutSum:
    """The contributions to ``node_id`` (one per consumer) and the running sum the engine reached."""
    contribs = rec.contributions_to(node_id)
    if not contribs:
        raise ValueError(f"node {rec.node(node_id).label} received no contribution")
    parts = [(rec.node(c.source).label, c.step, c.value) for c in contribs]
    return FanOutSum(node_id, rec.node(node_id).label, parts, contribs[-1].total)


# ---------------------------------------------------------------------------
# memory: what the graph keeps alive for backward


@dataclass
class MemoryRow:
    label: str
    kind: str
    shape: tuple[int, ...]
    nbytes: int
    read_by: list[str]       # ops whose VJP read it in the recorded backward pass
    kept_by: list[str] = field(default_factory=list)   # ops that saved it for their VJP
    unread_because: str = ""  # a kept tensor no VJP read: why (the gradient it was kept for was not wanted)


@dataclass
class MemoryReport:
    rows: list[MemoryRow] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(r.nbytes for r in self.rows)

    @property
    def read_bytes(self) -> int:
        return sum(r.nbytes for r in self.rows if r.read_by)

    @property
    def unread_bytes(self) -> int:
        return self.total_bytes - self.read_bytes


def kept_tensors(loss: Tensor) -> list[Tensor]:
    """Tensors the autodiff graph of ``loss`` holds for backward, excluding trainable leaves (they exist
    anyway); empty when ``loss`` was computed under ``no_grad``. The engine's own count
    (``engine.tensor.kept_for_backward``)."""
    return kept_for_backward(loss)


def _nbytes(t: Tensor) -> int:
    return t.numel() * np.dtype(t.dtype.name).itemsize


def kept_bytes(loss: Tensor) -> int:
    return sum(_nbytes(t) for t in kept_tensors(loss))


def memory_report(rec: Recording) -> MemoryReport:
    """Every non-trainable tensor the recorded graph keeps for backward (what each op declares it saves:
    ``Op.saves``, its output when ``Op.needs_output``), with the ops whose VJP actually read it (found by
    tracing the ops run inside each VJP)."""
    from engine.ops import primitive
    read_by: dict[int, list[str]] = {}
    for s in rec.backward:
        for r in s.reads:
            read_by.setdefault(r, []).append(rec.node(s.node).label)
    kept_by: dict[int, list[int]] = {}          # tensor -> the ops that saved it
    in_graph = {s.node for s in rec.backward}   # ops whose result fed the loss (a detached max did not)
    for n in rec.nodes:
        if n.kind == "op" and n.requires_grad and n.id in in_graph:
            op = primitive(n.op)
            saved = list(n.parents if op.saves is None else [n.parents[i] for i in op.saves])
            if op.needs_output:
                saved.append(n.id)
            for t in dict.fromkeys(saved):
                kept_by.setdefault(t, []).append(n.id)
    rows = []
    for nid in sorted(kept_by):
        n = rec.node(nid)
        if n.kind in ("param", "input") and n.requires_grad:
            continue
        readers = read_by.get(nid, [])
        rows.append(MemoryRow(n.label, n.kind, n.shape, n.nbytes, readers,
                              [rec.node(o).label for o in kept_by[nid]],
                              "" if readers else _unread_because(rec, nid, kept_by[nid])))
    return MemoryReport(rows)


def _unread_because(rec: Recording, tensor: int, savers: list[int]) -> str:
    """Why no VJP read a kept tensor: an op saves its inputs for one another's gradients (a product's VJP for
    one input multiplies by the other), so a tensor kept for the gradient of an input that takes none (data, a
    constant) is never read."""
    for o in savers:
        op = rec.node(o)
        others = [rec.node(p) for p in op.parents if p != tensor and not rec.node(p).requires_grad]
        if others:
            names = " and ".join(dict.fromkeys(p.label for p in others))
            return f"kept by {op.label} for the gradient of {names}, which takes none"
    return f"kept by {', '.join(rec.node(o).label for o in savers)}; this run's backward did not need it"


def memory_sweep(key: str, sizes: list[int], vary: str = "batch", **options) -> list[dict]:
    """Bytes kept for backward as one option (``batch`` or ``depth``) changes; also under no_grad.

    Each row is measured on a freshly built network's real graph.
    """
    from .presets import build
    rows = []
    for n in sizes:
        check_deadline()
        net = build(key, **{**options, vary: n})
        loss = net.loss()
        with no_grad():
            loss_ng = net.loss()
        rows.append({vary: n, "tensors kept": len(kept_tensors(loss)), "bytes kept": kept_bytes(loss),
                     "bytes kept under no_grad": kept_bytes(loss_ng)})
    return rows


# ---------------------------------------------------------------------------
# gradient check: engine gradients vs central differences at a few coordinates


@dataclass
class GradcheckRow:
    leaf: str
    index: tuple[int, ...]
    analytic: float
    numeric: float

    @property
    def abs_error(self) -> float:
        return abs(self.analytic - self.numeric)

    @property
    def rel_error(self) -> float:
        scale = max(abs(self.analytic), abs(self.numeric))
        return 0.0 if scale < 1e-12 else self.abs_error / scale


@dataclass
class GradcheckTable:
    rows: list[GradcheckRow]
    eps: float

    @property
    def worst(self) -> GradcheckRow:
        return max(self.rows, key=lambda r: r.rel_error)


def checked_leaves(names: list[str], max_leaves: int) -> list[str]:
    """At most ``max_leaves`` of ``names``, evenly spread from the first to the last (all when fewer)."""
    if len(names) <= max_leaves:
        return list(names)
    picks = sorted({round(i * (len(names) - 1) / (max_leaves - 1)) for i in range(max_leaves)})
    return [names[i] for i in picks]


def gradient_check(network: Network, coords: int = 3, eps: float = 1e-6, seed: int = 0,
                   max_leaves: int | None = None) -> GradcheckTable:
    """Compare leaves' engine gradients with central differences at ``coords`` random coordinates each.

    Args:
        max_leaves: check at most this many leaves, evenly spread over the network (None: every leaf). Two
            runs per coordinate: with every leaf, the check grew with the square of the layer count.
    The one leaf perturbed is changed through ``Module.load_state_dict`` (the others are handed back as they
    are, not copied) and restored afterwards; the reruns run under ``no_grad`` and check the request's deadline.
    """
    if coords < 1:
        raise ValueError(f"coords must be >= 1, got {coords}")
    model = network.model
    model.zero_grad()
    network.loss().backward()
    leaves = dict(model.named_parameters())
    names = checked_leaves(list(leaves), max_leaves) if max_leaves else list(leaves)
    grads = {n: (leaves[n].grad.numpy().copy() if leaves[n].grad is not None else np.zeros(leaves[n].shape))
             for n in names}
    model.zero_grad()
    state = model.state_dict()
    rng = np.random.default_rng(seed)
    rows = []
    try:
        for name in names:
            p = leaves[name]
            flat = rng.choice(p.numel(), size=min(coords, p.numel()), replace=False)
            for f in flat:
                idx = tuple(int(i) for i in np.unravel_index(int(f), p.shape))
                values = []
                for sign in (1.0, -1.0):
                    check_deadline()
                    moved = state[name].copy()
                    moved[idx] += sign * eps
                    model.load_state_dict({**state, name: moved})
                    with no_grad():
                        values.append(float(network.loss().item()))
                rows.append(GradcheckRow(name, idx, float(grads[name][idx]), (values[0] - values[1]) / (2 * eps)))
    finally:
        model.load_state_dict(state)
    return GradcheckTable(rows, eps)


__all__ = ["magnitude", "value_scale", "adjoint_scale", "vjp_formula", "look", "TensorLook", "format_shape", "step_detail", "StepDetail",
           "fan_out_sum", "FanOutSum", "memory_report", "MemoryReport", "kept_tensors", "kept_bytes",
           "memory_sweep", "gradient_check", "GradcheckTable", "GradcheckRow"]
