"""A trace of any HW2-protocol graph (a student's MiniTorch ``Scalar``s), not only of engine tensors.

The protocol is the autodiff core's (engine/autodiff.py): ``unique_id``, ``parents``, ``is_leaf()``,
``is_constant()``, ``chain_rule(d)``, ``accumulate_derivative(x)``. The backward pass recorded is the engine's own
``backpropagate`` walking the student's graph and calling the student's ``chain_rule``; each node is seen through a
:class:`_Seen` wrapper, so the walk never calls the student's ``accumulate_derivative`` (their ``.derivative``
stays as it was) and the recorder reads numbers as engine tensors.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine import autodiff
from engine.autodiff import ContributionSent, FanOutAccumulated, LeafAccumulated, NodeVisited
from .graph import adjoint_names, graph_from_records, is_finite, plain_value
from .numbers import fmt
from .trace import ForwardStep, Trace, _Recorder

PROTOCOL = ("unique_id", "parents", "is_leaf", "is_constant", "chain_rule", "accumulate_derivative")
MAX_PROTOCOL_NODES = 400   # a graph to step through by hand, not a network


def follows_protocol(x: Any) -> bool:
    """Whether ``x`` offers the HW2 protocol's six members."""
    return all(hasattr(x, name) for name in PROTOCOL)


def _number(x: Any) -> np.ndarray:
    """A student's value or derivative (a float, a NumPy array, a MiniTorch Scalar with ``.data``) as an array."""
    x = getattr(x, "data", x)
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(np.nan)


def op_name(v: Any) -> str:
    """The op that made ``v``: MiniTorch's ``history.last_fn`` (its class name, lower case), else the type's."""
    fn = getattr(getattr(v, "history", None), "last_fn", None)
    name = getattr(fn, "__name__", None) or type(v).__name__
    return str(name).lower()


class _Seen:
    """A student's node as the engine's walk and the recorder see it: the protocol passed through (parents and
    chain_rule's parents seen too), derivatives kept here rather than in the student's node, values as arrays."""

    def __init__(self, v: Any, seen: dict[int, "_Seen"]):
        self.v, self._seen = v, seen
        self.unique_id = v.unique_id
        self.derivative: Any = None
        self._value = _number(v)
        self.shape = self._value.shape
        self.requires_grad = not v.is_constant()

    @classmethod
    def of(cls, v: Any, seen: dict[int, "_Seen"]) -> "_Seen":
        s = seen.get(v.unique_id)
        if s is None:
            s = seen[v.unique_id] = cls(v, seen)
        return s

    @property
    def parents(self) -> list["_Seen"]:
        return [_Seen.of(p, self._seen) for p in self.v.parents]

    def is_leaf(self) -> bool:
        return bool(self.v.is_leaf())

    def is_constant(self) -> bool:
        return bool(self.v.is_constant())

    def chain_rule(self, d_output: Any):
        return [(_Seen.of(p, self._seen), d) for p, d in self.v.chain_rule(d_output)]

    def accumulate_derivative(self, x: Any) -> None:
        self.derivative = x if self.derivative is None else self.derivative + x

    # what the graph and the recorder read of a value
    def numpy(self) -> np.ndarray:
        return self._value

    def numel(self) -> int:
        return int(self._value.size)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self._value if dtype is None else self._value.astype(dtype)

    def item(self) -> float:
        return float(self._value.reshape(-1)[0])


class _Value:
    """A derivative the walk passed, as the recorder reads an engine tensor's (``numpy``)."""

    def __init__(self, x: Any):
        self.x = x
        self.a = _number(x)
        self.shape = self.a.shape

    def numpy(self) -> np.ndarray:
        return self.a


def _as_arrays(record):
    """An observer that hands ``record`` each event with its numbers readable as arrays (a copy of the event, so
    the line of engine/autodiff.py that made it is kept for the code panel)."""
    def observe(ev) -> None:
        ev = copy.copy(ev)
        if isinstance(ev, NodeVisited):
            ev.adjoint = _Value(ev.adjoint)
        elif isinstance(ev, ContributionSent):
            ev.contribution = _Value(ev.contribution)
        elif isinstance(ev, FanOutAccumulated):
            ev.total = _Value(ev.total)
        elif isinstance(ev, LeafAccumulated):
            ev.derivative = _Value(ev.derivative)
        record(ev)
    return observe


def _plain(x: Any) -> Any:
    return plain_value(getattr(x, "a", x)) if isinstance(x, _Value) else plain_value(np.asarray(x))


def _leaf_names(order: list, names: Mapping[str, Any] | None) -> dict[int, str]:
    """unique id -> name of each leaf of an output-first ``order``: the named leaves in the order given, then the
    others as the graph reaches them (inputs first), ``x1``, ``x2``, ..."""
    given = {v.unique_id: n for n, v in (names or {}).items()}
    in_graph = {s.unique_id for s in order if s.is_leaf()}
    out = {u: given[u] for u in given if u in in_graph}
    for s in reversed(order):
        if s.is_leaf() and s.unique_id not in out:
            out[s.unique_id] = f"x{len(out) + 1}"
    return out


def _node_names(order: list, names: Mapping[str, Any] | None) -> dict[int, str]:
    """unique id -> name of every node of ``order``: the leaves' (:func:`_leaf_names`), the ops ``v1``, ``v2``, ...
    in the order they ran (or the name given)."""
    given = {v.unique_id: n for n, v in (names or {}).items()}
    out = _leaf_names(order, names)
    ops = [s for s in reversed(order) if not s.is_leaf()]
    for k, s in enumerate(ops, start=1):
        out[s.unique_id] = given.get(s.unique_id) or f"v{k}"
    return out


def record_protocol(output: Any, names: Mapping[str, Any] | None = None, deriv: Any = 1.0) -> Trace:
    """Forward steps and the engine's backward pass (with its events) over a HW2-protocol graph.

    Args:
        output: a node offering the protocol (:data:`PROTOCOL`), e.g. a MiniTorch ``Scalar``.
        names: display name -> leaf (others: ``x1``, ``x2``, ... as the graph reaches them; ops ``v1``, ``v2``, ...).
        deriv: the output's adjoint (1.0: d output / d output).

    Nothing of the student's graph changes: no ``accumulate_derivative`` of theirs is called.

    Raises:
        TypeError: ``output`` does not offer the protocol.
        ValueError: nothing in the graph takes a gradient, or it has more than :data:`MAX_PROTOCOL_NODES` nodes.
    """
    if not follows_protocol(output):
        missing = [n for n in PROTOCOL if not hasattr(output, n)]
        raise TypeError(f"{type(output).__name__} does not offer the HW2 protocol (missing: {', '.join(missing)})")
    if output.is_constant():
        raise ValueError("this value is a constant: there is no backward pass to step through")
    seen: dict[int, _Seen] = {}
    root = _Seen.of(output, seen)
    order = autodiff.topological_sort(root)          # output first; constants left out
    if len(order) > MAX_PROTOCOL_NODES:
        raise ValueError(f"this graph has more than {MAX_PROTOCOL_NODES} nodes; step through a smaller one")
    uid_names = _node_names(order, names)
    by_id = {s.unique_id: s for s in order}
    leaves = [by_id[u] for u in _leaf_names(order, names)]
    records = [_Rec(op_name(s.v), tuple(s.parents), s) for s in reversed(order) if not s.is_leaf()]   # inputs first
    graph, id_of, _ = graph_from_records(records, uid_names, None, None, leaves, root)
    node_names = {n.id: n.name for n in graph.nodes}
    steps = []
    for n in graph.nodes:
        if n.op == "leaf":
            continue
        ins = graph.parents(n.id)
        args = ", ".join(node_names[i] for i in ins)
        steps.append(ForwardStep(len(steps), n.id, n.op, ins, n.value, n.shape,
                                 f"{n.name} = {n.op}({args}) = {fmt(n.value)}", is_finite(n.value)))
    rec = _Recorder(dict(id_of), node_names, value_of=_plain, adjoints=adjoint_names(graph))
    autodiff.backpropagate(root, deriv, observer=_as_arrays(rec))
    grads = {uid_names[s.unique_id]: (_plain(s.derivative) if s.derivative is not None else None) for s in leaves}
    return Trace("topological", graph, steps, rec.events, grads, rec.last_adjoint, rec.vjp_calls, 0, len(steps),
                 rec.n_events, None, None, [], [id_of[s.unique_id] for s in order if s.unique_id in id_of])


def check_student(output: Any, topological_sort: Any, backpropagate: Any, names: Mapping[str, Any] | None = None,
                  deriv: Any = 1.0) -> list[str]:
    """A student's ``topological_sort`` and ``backpropagate`` (HW2's ``minitorch/autodiff.py``) run on their own
    graph and checked against the engine's: the order holds each non-constant node once, each before the nodes it
    was computed from (output first), and every leaf's derivative is the engine's. Their nodes are seen through
    :class:`_Seen`, so their ``.derivative`` stays as it was.

    Returns:
        The problems found, each a sentence; empty when both are right on this graph. An exception their code
        raises is a problem (its type and message), not raised here.
    """
    problems: list[str] = []
    seen: dict[int, _Seen] = {}
    root = _Seen.of(output, seen)
    reference = autodiff.topological_sort(root)
    node_names = _node_names(reference, names)
    try:
        got = list(topological_sort(root))
    except Exception as e:  # noqa: BLE001 - their code's failure is the finding
        problems.append(f"topological_sort raised {type(e).__name__}: {e}")
        got = None
    if got is not None:
        ids = [getattr(v, "unique_id", None) for v in got]
        place = {u: i for i, u in enumerate(ids)}
        missing = [s for s in reference if s.unique_id not in place]
        if missing:
            problems.append(f"topological_sort left out {len(missing)} of the {len(reference)} nodes")
        if len(set(ids)) < len(ids):
            problems.append("topological_sort lists a node more than once")
        wrong = next(((s, p) for s in reference for p in s.parents if not p.is_constant()
                      and s.unique_id in place and p.unique_id in place and place[p.unique_id] < place[s.unique_id]),
                     None)
        if wrong is not None:
            s, p = wrong
            problems.append(f"topological_sort puts {node_names[p.unique_id]} (position {place[p.unique_id] + 1}) "
                            f"before {node_names[s.unique_id]} (position {place[s.unique_id] + 1}), which was "
                            f"computed from it: a node must come before its inputs, so that its adjoint is "
                            f"complete when it is taken")
    want = {s.unique_id: s for s in reference}
    autodiff.backpropagate(root, deriv)
    engine_grads = {u: s.derivative for u, s in want.items() if s.is_leaf()}
    theirs: dict[int, _Seen] = {}
    mine = _Seen.of(output, theirs)
    try:
        backpropagate(mine, deriv)
    except Exception as e:  # noqa: BLE001
        problems.append(f"backpropagate raised {type(e).__name__}: {e}")
        return problems
    for u, g in engine_grads.items():
        s = theirs.get(u)
        got_g = None if s is None else s.derivative
        if got_g is None or _number(got_g).shape != _number(g).shape or \
                not np.allclose(_number(got_g), _number(g), rtol=1e-9, atol=1e-12):
            problems.append(f"backpropagate gives {node_names[u]} the derivative "
                            f"{'nothing' if got_g is None else fmt(_plain(got_g))}; the engine's is {fmt(_plain(g))}")
    return problems


class _Rec:
    __slots__ = ("op", "inputs", "out")

    def __init__(self, op, inputs, out):
        self.op, self.inputs, self.out = op, inputs, out
