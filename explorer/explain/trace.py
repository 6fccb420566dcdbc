"""The engine's execution as events: forward steps from ``trace_ops``, backward events from the
observer of ``backpropagate``. Everything stored is plain data (JSON-serialisable), but for each input's whole
gradient as an array beside it (``Trace.grad_arrays``, left out of ``to_dict``)."""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from engine import autodiff
from engine.autodiff import ContributionSent, FanOutAccumulated, LeafAccumulated, NodeVisited
from engine.strategies import ContributionLost, WorkLimitExceeded
from engine.ops import ones_like
from engine.tensor import Tensor, tensor, trace_ops
from .graph import Graph, adjoint_label, adjoint_names, bar, graph_from_records, is_finite, plain_value, summary
from .numbers import fmt
from .parser import ExpressionError, Program, check_deadline, parse_inputs, parse_program

MAX_EVENTS = 50_000  # events kept per trace (path recursion can do far more work; it is still counted)


@dataclass
class ForwardStep:
    """One engine op in execution order: ``node = op(inputs)`` with its value."""
    index: int
    node: int
    op: str
    inputs: list[int]
    value: Any
    shape: list[int]
    text: str
    finite: bool = True


@dataclass
class BackwardEvent:
    """One thing the backward pass did.

    kind: 'visit' (node taken; value = adjoint it holds), 'send' (node -> parent: value = VJP output),
    'accumulate' (parent's running fan-out sum = value; received of expected), 'leaf' (leaf.grad += value),
    'lost' (bfs_first_touch: parent had already passed its adjoint on; value is dropped).
    """
    index: int
    kind: str
    step: int
    node: int
    parent: int | None
    value: Any
    received: int | None
    expected: int | None
    text: str
    where: list | None = None   # [function, file, line] of the engine line that emitted it
    shown: str = ""             # a value too large to keep (``value`` None): its first numbers and shape


@dataclass
class ForwardRun:
    program: Program
    graph: Graph
    steps: list[ForwardStep]
    output: Tensor
    leaves: dict[str, Tensor]
    tensor_of: dict[int, Tensor]
    id_of: dict[int, int]


@dataclass
class Trace:
    strategy: str
    graph: Graph
    forward: list[ForwardStep]
    backward: list[BackwardEvent]
    grads: dict[str, Any]
    adjoints: dict[int, Any]
    vjp_calls: int
    backward_ops: int
    forward_ops: int
    n_events: int
    error: str | None = None
    gradient_graph: Graph | None = None
    nonfinite: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # engine.topological_sort of the output (output first)
    # each input's gradient whole, as an array (``grads`` keeps plain values of up to VALUE_LIMIT elements only):
    # to compare gradients of larger inputs; record_execution fills it (inputs hold 10,000 numbers at most).
    # Not plain data, so not in to_dict.
    grad_arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("grad_arrays", None)
        d["graph"] = self.graph.to_dict()
        d["gradient_graph"] = self.gradient_graph.to_dict() if self.gradient_graph is not None else None
        d["adjoints"] = {str(k): v for k, v in self.adjoints.items()}
        return d

    def steps(self) -> list[list[BackwardEvent]]:
        """Backward events grouped by step (one node processed per step)."""
        out: list[list[BackwardEvent]] = []
        for e in self.backward:
            if not out or out[-1][0].step != e.step:
                out.append([])
            out[-1].append(e)
        return out


def _as_program(program: Program | str, inputs) -> tuple[Program, dict]:
    if isinstance(inputs, str):
        inputs = parse_inputs(inputs)
    if isinstance(program, str):
        program = parse_program(program, inputs)
    return program, dict(inputs)


def run_forward(program: Program | str, inputs: Mapping[str, Any] | str, dtype: str = "float64",
                backend: str = "numpy", constants: tuple[str, ...] | list[str] = ()) -> ForwardRun:
    """Run the program forward on fresh leaves and record every engine op.

    Inputs named in ``constants`` are leaves without ``requires_grad`` (data, not variables).

    Raises:
        ExpressionError: bad program/inputs, shape errors (never a bare traceback).
    """
    program, inputs = _as_program(program, inputs)
    leaves: dict[str, Tensor] = {}
    for name in program.input_names:
        if name not in inputs:
            raise ExpressionError(f"no value given for input `{name}`", kind="undefined")
        leaves[name] = tensor(inputs[name], requires_grad=name not in constants, dtype=dtype, backend=backend,
                              name=name)
    ev = program.evaluate(leaves)
    graph, id_of, tensor_of = graph_from_records(ev.records, ev.names, ev.groups, ev.exprs,
                                                 leaves.values(), ev.output, ev.composites)
    steps = []
    for i, r in enumerate(ev.records):
        nid = id_of[r.out.unique_id]
        node = graph.nodes[nid]
        args = ", ".join(graph.nodes[id_of[t.unique_id]].name for t in r.inputs)
        steps.append(ForwardStep(i, nid, r.op, [id_of[t.unique_id] for t in r.inputs], node.value, node.shape,
                                 f"{node.name} = {r.op}({args}) = {fmt(node.value)}", is_finite(node.value)))
    return ForwardRun(program, graph, steps, ev.output, leaves, tensor_of, id_of)


class _Recorder:
    """Observer turning the core's events (with live tensors) into BackwardEvents.

    ``value_of`` turns a tensor (or array) into the event's value (plain JSON data by default; a caller
    that shows whole arrays keeps copies), ``describe`` turns that value into the event's text.
    """

    def __init__(self, id_of: dict[int, int], names: dict[int, str],
                 value_of: Callable[[Any], Any] = plain_value, describe: Callable[[Any], str] = fmt,
                 adjoints: Mapping[int, str] | None = None):
        self.id_of = id_of
        self.names = names
        self.adjoints = adjoints or {}   # node id -> its adjoint's name (graph.adjoint_names: the output's x̄7)
        self.value_of = value_of
        self.describe = describe
        self.position: tuple[int | None, str | None] = (None, None)   # (step, kind) of the latest event
        self.events: list[BackwardEvent] = []
        self.n_events = 0
        self.vjp_calls = 0
        self.last_adjoint: dict[int, Any] = {}
        self._visit_sum: dict[int, Any] = {}
        self._where: list | None = None  # of the event being recorded
        self.adjoint_of: dict[int, list[int]] = {}  # unique id of an adjoint tensor -> the nodes it is the adjoint of

    def _id(self, t) -> int:
        nid = self.id_of.get(t.unique_id)
        if nid is None:  # a node outside the recorded graph (should not happen for programs)
            nid = self.id_of[t.unique_id] = -len(self.id_of) - 1
        return nid

    def _name(self, nid: int) -> str:
        return self.names.get(nid, f"#{nid}")

    def __call__(self, ev) -> None:
        self.n_events += 1
        if not self.n_events % 256:  # a long backward pass (path recursion) stops at the request's deadline
            check_deadline()
        loc = getattr(ev, "where", None)
        self.position = (getattr(ev, "step", None), _KIND.get(type(ev)))
        self._where = [loc.function, loc.file, loc.line] if loc is not None else None
        if isinstance(ev, NodeVisited):
            nid = self._id(ev.node)
            held = self.adjoint_of.setdefault(getattr(ev.adjoint, "unique_id", id(ev.adjoint)), [])
            if nid not in held:
                held.append(nid)
            if not ev.node.is_leaf():
                self.vjp_calls += 1
            val = self.value_of(ev.adjoint)
            arr = ev.adjoint.numpy()
            if nid in self._visit_sum:
                # visited again (path recursion): by linearity the adjoint is the sum over visits
                self._visit_sum[nid] = self._visit_sum[nid] + arr
                self.last_adjoint[nid] = self.value_of(self._visit_sum[nid])
            else:
                self._visit_sum[nid] = arr
                self.last_adjoint.setdefault(nid, val)
            shown = self._show(ev.adjoint, val)
            self._add("visit", ev.step, nid, None, val, None, None,
                      f"take {self._name(nid)}: adjoint {adjoint_label(self.adjoints, nid, self._name(nid))} = {shown}",
                      shown)
        elif isinstance(ev, ContributionSent):
            nid, pid = self._id(ev.node), self._id(ev.parent)
            val = self.value_of(ev.contribution)
            shown = self._show(ev.contribution, val)
            self._add("send", ev.step, nid, pid, val, None, None,
                      f"{self._name(nid)} → {self._name(pid)}: VJP contribution {shown}", shown)
        elif isinstance(ev, FanOutAccumulated):
            pid = self._id(ev.parent)
            val = self.value_of(ev.total)
            self.last_adjoint[pid] = val
            shown = self._show(ev.total, val)
            self._add("accumulate", ev.step, pid, None, val, ev.received, ev.expected,
                      f"{adjoint_label(self.adjoints, pid, self._name(pid))} = {shown} "
                      f"({ev.received} of {ev.expected} received)", shown)
        elif isinstance(ev, LeafAccumulated):
            nid = self._id(ev.node)
            val = self.value_of(ev.derivative)
            shown = self._show(ev.derivative, val)
            self._add("leaf", ev.step, nid, None, val, None, None, f"{self._name(nid)}.grad += {shown}", shown)
        elif isinstance(ev, ContributionLost):
            pid = self._id(ev.parent)
            val = self.value_of(ev.contribution)
            shown = self._show(ev.contribution, val)
            self._add("lost", ev.step, pid, None, val, ev.received, ev.expected,
                      f"LOST: {shown} reached {self._name(pid)} after it was passed on "
                      f"({ev.received} of {ev.expected})", shown)

    def _show(self, t, val) -> str:
        # a value too large to keep (None) is still described: its first numbers and shape, not "…" or nothing
        return self.describe(val) if val is not None else summary(t)

    def _add(self, kind, step, node, parent, value, received, expected, text, shown) -> None:
        if len(self.events) < MAX_EVENTS:
            self.events.append(BackwardEvent(len(self.events), kind, step, node, parent, value, received,
                                             expected, text, self._where, shown if value is None else ""))


_KIND = {NodeVisited: "visit", ContributionSent: "send", FanOutAccumulated: "accumulate", LeafAccumulated: "leaf",
         ContributionLost: "lost"}


class BackwardOp:
    """An engine op the backward pass ran, and where: the step and kind of the latest event before it
    (kind 'visit': inside that node's VJP, before it sent anything)."""
    __slots__ = ("op", "inputs", "out", "step", "after")


def record_backward(output: Tensor, id_of: dict[int, int], names: dict[int, str], leaves: Mapping[str, Tensor],
                    strategy: str = "topological", create_graph: bool = False, seed: Tensor | None = None,
                    value_of: Callable[[Any], Any] = plain_value, describe: Callable[[Any], str] = fmt,
                    on_op: Callable[[BackwardOp], None] | None = None, adjoints: Mapping[int, str] | None = None):
    """Run the real backward pass with ``strategy`` and an observer; catch and report failures.

    ``value_of`` / ``describe`` make an event's value and its text (see :class:`_Recorder`); ``on_op`` is
    called with each :class:`BackwardOp` as it runs (to copy its arrays before later ops reuse them);
    ``adjoints`` names each node's adjoint in the texts (:func:`~explorer.explain.graph.adjoint_names`; default
    ``bar`` of the node's name).

    Returns ``(recorder, error, backward_records)`` where backward_records are the engine ops the
    backward pass ran (``trace_ops``), as :class:`BackwardOp`.
    """
    rec = _Recorder(id_of, names, value_of, describe, adjoints)
    ops_run: list[BackwardOp] = []

    def hook(op, inputs, params, out):
        r = BackwardOp()
        r.op, r.inputs, r.out = op.name, inputs, out
        r.step, r.after = rec.position
        ops_run.append(r)
        if on_op is not None:
            on_op(r)

    for t in leaves.values():
        t.grad = None
    error = None
    try:
        with np.errstate(all="ignore"), trace_ops(hook):
            # retain_graph: recording a pass leaves the graph as it found it (the caller may run it again)
            output.backward(seed, retain_graph=True, create_graph=create_graph, strategy=strategy, observer=rec)
    except RecursionError:
        error = (f"RecursionError: maximum recursion depth exceeded (Python's limit is "
                 f"{sys.getrecursionlimit()} frames; the graph is deeper than that)")
    except WorkLimitExceeded as e:
        error = f"WorkLimitExceeded: {e}"
    return rec, error, ops_run


def record_execution(program: Program | str, inputs: Mapping[str, Any] | str, strategy: str = "topological",
                     create_graph: bool = False, dtype: str = "float64") -> Trace:
    """Forward + backward of a program with the given traversal strategy, as plain events.

    A non-scalar output is seeded with ones (the gradient of ``sum(output)``).

    Raises:
        ExpressionError: bad program or inputs.
        ValueError: unknown strategy.
    """
    autodiff.get_strategy(strategy)
    fw = run_forward(program, inputs, dtype=dtype)
    return _backward_trace(fw, strategy, create_graph)


def _backward_trace(fw: ForwardRun, strategy: str, create_graph: bool) -> Trace:
    names = {n.id: n.name for n in fw.graph.nodes}
    out = fw.output
    # the seed d out / d out: ones (for a non-scalar output, the gradient of sum(output))
    seed = ones_like(out)
    grads: dict[str, Any] = {}
    error = None
    adjoints = adjoint_names(fw.graph)
    rec = _Recorder(fw.id_of, names, adjoints=adjoints)
    bops: list = []
    if out.requires_grad:
        rec, error, bops = record_backward(out, dict(fw.id_of), names, fw.leaves, strategy, create_graph, seed,
                                           adjoints=adjoints)
    grad_arrays: dict[str, np.ndarray] = {}
    for name, leaf in fw.leaves.items():
        g = leaf.grad
        grad_arrays[name] = np.array(g.numpy() if g is not None else np.zeros(leaf.shape), dtype=np.float64)
        grads[name] = plain_value(grad_arrays[name])
    nonfinite = [f"{s.text}" for s in fw.steps if not s.finite]
    nonfinite += [f"gradient of {k} is not finite" for k, v in grads.items() if not is_finite(v)]
    gg = gradient_graph_from(bops, fw, seed, rec.adjoint_of) if create_graph and error is None else None
    order = [fw.id_of[t.unique_id] for t in autodiff.topological_sort(out)] if out.requires_grad else []
    return Trace(strategy if isinstance(strategy, str) else strategy.name, fw.graph, fw.steps, rec.events,
                 grads, rec.last_adjoint, rec.vjp_calls, len(bops), len(fw.steps), rec.n_events, error, gg,
                 nonfinite, order, grad_arrays)


def gradient_graph_from(bops: list, fw: ForwardRun, seed: Tensor,
                        adjoint_of: Mapping[int, list[int]] | None = None) -> Graph:
    """The graph of engine ops the backward pass built (with create_graph=True).

    A tensor that is a node's complete adjoint (the backward pass took the node holding it: ``adjoint_of``,
    unique id -> nodes) is named as the slides name it, ``x̄5`` (when an addition handed one tensor on to
    several nodes, after the first: x̄3 and x̄4 are x̄5); the seed is the output's (``x̄7``, as :func:`~explorer.explain.graph.adjoint_names` names it); the other results
    (single contributions, a VJP's inner products) are ``g1``, ``g2``, ... in the order they ran.
    """
    names: dict[int, str] = {}
    adjoint_of_node = adjoint_names(fw.graph)   # the output's x̄7 where the program called it f
    fwd_uid = {t.unique_id: nid for nid, t in fw.tensor_of.items()}
    k = 0
    for r in bops:
        k += 1
        names[r.out.unique_id] = f"g{k}"
    for name, leaf in fw.leaves.items():
        if leaf.grad is not None and leaf.grad.unique_id in names:
            names[leaf.grad.unique_id] = bar(name)
    # one tensor handed on by an addition is every receiver's adjoint: named after the first node that held it
    held = {t_uid: adjoint_of_node[nids[0]] for t_uid, nids in (adjoint_of or {}).items() if nids}
    for t_uid, name in held.items():
        if t_uid in names:
            names[t_uid] = name
    for t_uid, nid in fwd_uid.items():
        names.setdefault(t_uid, fw.graph.nodes[nid].name)
    names[seed.unique_id] = held.get(seed.unique_id, adjoint_of_node[fw.graph.output])
    g, id_of, tensor_of = graph_from_records(bops, names)
    for node in g.nodes:
        t = tensor_of[node.id]
        if t.unique_id in fwd_uid:
            ref = fwd_uid[t.unique_id]
            node.ref = ref
            node.kind = "constant" if fw.graph.nodes[ref].kind == "constant" else "forward"
        elif t.unique_id == seed.unique_id:
            node.kind = "seed"
        elif node.op == "leaf":
            node.kind = "constant"
        else:
            node.kind = "gradient"
    return g


def gradient_graph(program: Program | str, inputs: Mapping[str, Any] | str, dtype: str = "float64") -> Graph:
    """The gradient graph (slides' orange graph): backward with ``create_graph=True``."""
    tr = record_execution(program, inputs, create_graph=True, dtype=dtype)
    if tr.gradient_graph is None:
        raise ExpressionError(tr.error or "no gradient graph (the output does not depend on any input)")
    return tr.gradient_graph


def record_tensor(output: Tensor, leaves: Mapping[str, Tensor], strategy: str = "topological",
                  create_graph: bool = False, seed: Tensor | None = None) -> Trace:
    """Backward trace of any engine tensor (not only parsed programs), e.g. a network's loss.

    The forward steps are the graph's ops in the engine's topological order (inputs first).
    ``leaves`` names the inputs whose gradients are reported (others still get ``.grad``); their
    ``.grad`` is reset to None first, then holds this backward pass's gradient.
    """
    from .graph import graph_from_output
    autodiff.get_strategy(strategy)
    names = {t.unique_id: n for n, t in leaves.items()}
    graph = graph_from_output(output, names, include_constants=False)
    id_of = {n.uid: n.id for n in graph.nodes}
    node_names = {n.id: n.name for n in graph.nodes}
    steps = []
    for n in graph.nodes:
        if n.op in ("leaf",):
            continue
        ins = graph.parents(n.id)
        args = ", ".join(node_names[i] for i in ins)
        steps.append(ForwardStep(len(steps), n.id, n.op, ins, n.value, n.shape,
                                 f"{n.name} = {n.op}({args}) = {fmt(n.value)}", is_finite(n.value)))
    if seed is None:
        seed = ones_like(output)
    rec, error, bops = record_backward(output, id_of, node_names, leaves, strategy, create_graph, seed,
                                       adjoints=adjoint_names(graph))
    grads = {name: (plain_value(t.grad) if t.grad is not None else None) for name, t in leaves.items()}
    order = [id_of[t.unique_id] for t in autodiff.topological_sort(output) if t.unique_id in id_of]
    return Trace(strategy if isinstance(strategy, str) else strategy.name, graph, steps, rec.events, grads,
                 rec.last_adjoint, rec.vjp_calls, len(bops), len(steps), rec.n_events, error, None, [], order)
