"""Verdicts on a student's ``topological_sort`` / ``backpropagate``: the recorded protocol calls against
the engine's own order and adjoints on the same graph.

Plain engine code and plain data: the reference is computed here, in the app's process, with the engine
(the student's code ran in the child and sent back only its records).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine import autodiff
from engine.autodiff import NodeVisited
from explorer.explain.numbers import count, fmt
from explorer.explain.harness import gradients_wrong

from .graphs import BuiltGraph, build, spec_for

RTOL = 1e-9


@dataclass
class Reference:
    """The engine's answer on one graph: its topological order (node ids, output first, constants left
    out), every node's complete adjoint (plain values) and the VJP calls it makes."""
    built: BuiltGraph
    order: list[int]
    adjoints: dict[int, Any]
    vjp_calls: int

    @property
    def names(self) -> dict[int, str]:
        return self.built.names


def reference(key: str) -> Reference:
    """Build graph ``key`` and backpropagate it with the engine's own topological order."""
    built = build(spec_for(key))
    out = built.output
    order = autodiff.topological_sort(out)
    adjoints: dict[int, Any] = {}
    calls = [0]

    def observe(ev) -> None:
        if isinstance(ev, NodeVisited):
            adjoints[built.node_of[ev.node.unique_id]] = _plain(ev.adjoint.numpy())
            calls[0] += 0 if ev.node.is_leaf() else 1

    seed = np.ones(out.shape)
    from engine import tensor
    autodiff.propagate(order, {out.unique_id: tensor(seed, dtype=out.dtype)}, observe, accumulate=False)
    return Reference(built, [built.node_of[t.unique_id] for t in order], adjoints, calls[0])


def _plain(a: np.ndarray):
    a = np.asarray(a, dtype=float)
    return float(a.reshape(())) if a.size == 1 else a.tolist()


def _num(v) -> np.ndarray | None:
    """A recorded value as an array (None for a value that was not a number or tensor)."""
    if v is None or isinstance(v, dict):
        return None
    if isinstance(v, str):
        return np.asarray(float(v))
    return np.asarray(v, dtype=float)


def _add(a, b):
    if a is None or b is None:
        return None
    try:
        return a + b
    except ValueError:   # shapes that do not add up
        return None


def _same(got, want) -> bool:
    g, w = _num(got), _num(want)
    if g is None or w is None:
        return False
    if g.size != w.size:
        return False
    scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
    return bool(np.all(np.abs(g.reshape(w.shape) - w) <= RTOL * scale))


@dataclass
class Verdict:
    """One graph's verdict.

    kind: 'right' | 'warning' (right gradient, protocol misused or work repeated) | 'wrong_gradient' | 'recursion' | 'exception' | 'not_implemented' | 'time_limit' |
        'work_limit' | 'memory' | 'not_run'.
    headline: the verdict in one line; details: why (plain text, one item per line).
    node / node_name: the first node (in the engine's order, output first) whose adjoint differs.
    reasons: codes of what went wrong: 'lost', 'leaf_never_accumulated', 'constant_visited',
        'visited_twice', 'not_topological', 'never_visited', 'missing_from_order'.
    error: the student's error as the child described it (file, line, code, type, message, depth).
    """
    key: str
    title: str
    kind: str
    headline: str
    details: list[str] = field(default_factory=list)
    node: int | None = None
    node_name: str | None = None
    reasons: list[str] = field(default_factory=list)
    error: dict | None = None
    vjp_calls: int = 0
    engine_vjp_calls: int = 0
    violated_edge: tuple[int, int] | None = None   # (parent, consumer) listed in the wrong order
    adjoints: dict[int, Any] = field(default_factory=dict)   # the student's adjoint per node (sum over visits)
    # the inputs' gradients wrong by harness.gradients_wrong (the criterion Backprop orders counts by); None when
    # the code failed before giving any
    inputs_wrong: bool | None = None

    @property
    def right(self) -> bool:
        return self.kind == "right"


def error_text(err: dict) -> str:
    """``KeyError: 7 at autodiff.py line 12: d = derivs[v.unique_id]`` (no absolute path)."""
    if err.get("kind") == "not_implemented":
        where = f" ({err['file']}, line {err['line']})" if err.get("line") else ""
        return f"not implemented yet: {err.get('message') or 'NotImplementedError'}{where}"
    if err.get("kind") == "syntax_error":
        return f"syntax error in {err.get('file')} line {err.get('line')}: {err.get('message')}" + (
            f" — `{err['code'].strip()}`" if err.get("code") else "")
    if err.get("kind") == "time_limit":
        return f"stopped at the time limit: {err.get('message')}" + _at(err)
    if err.get("kind") == "work_limit":
        return f"stopped: {err.get('message')}" + _at(err)
    if err.get("kind") == "recursion":
        return (f"RecursionError at depth {err.get('depth')} (nested calls of your "
                f"{err.get('function') or 'function'})" + _at(err))
    if err.get("kind") == "memory":
        return "MemoryError: the memory limit was reached" + _at(err)
    head = f"{err.get('type')}: {err.get('message')}" if err.get("type") else str(err.get("message"))
    return head + _at(err)


def _at(err: dict) -> str:
    if not err.get("line"):
        return ""
    code = f": {err['code'].strip()}" if err.get("code") else ""
    return f" at {err.get('file')} line {err['line']}{code}"


def order_problems(order: list[int] | None, ref: Reference) -> tuple[list[str], list[str], tuple[int, int] | None]:
    """What is wrong with a student's ``topological_sort`` output: (reason codes, texts, violated edge).

    The order must list every non-constant node reachable from the output once, each before the nodes it
    was computed from (output first), and no constant."""
    if order is None:
        return [], [], None
    names, kinds, parents = ref.built.names, ref.built.kinds, ref.built.parents
    codes: list[str] = []
    texts: list[str] = []
    consts = [n for n in order if kinds.get(n) == "constant"]
    if consts:
        codes.append("constant_visited")
        texts.append(f"topological_sort lists the constant {names[consts[0]]} (constants take no gradient: skip "
                     "them with is_constant())")
    seen: dict[int, int] = {}
    for i, n in enumerate(order):
        if n in seen:
            codes.append("visited_twice")
            texts.append(f"topological_sort lists {names[n]} twice (positions {seen[n] + 1} and {i + 1})")
            break
        seen[n] = i
    missing = [n for n in ref.order if n not in seen]
    if missing:
        codes.append("missing_from_order")
        texts.append("topological_sort leaves out " + ", ".join(names[n] for n in missing[:5]) +
                     (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    edge = None
    for i, c in enumerate(order):       # the first consumer whose input was listed before it
        for p in parents.get(c, []):
            if p in seen and seen[p] < i and kinds.get(p) != "constant":
                edge = (p, c)
                break
        if edge:
            break
    if edge:
        p, c = edge
        codes.append("not_topological")
        texts.append(f"order not topological: {names[p]} is listed before {names[c]}, which uses it (edge "
                     f"{names[p]} → {names[c]}): {names[p]} would pass its adjoint on before {names[c]}'s "
                     "contribution arrives")
    return codes, texts, edge


def student_adjoints(events: list[list], kinds: dict[int, str]) -> dict[int, Any]:
    """Each node's adjoint as the student's code had it: for an op node the sum of the derivatives passed
    to its ``chain_rule`` (by linearity, also when it was visited once per path), for a leaf the sum of
    what ``accumulate_derivative`` received."""
    out: dict[int, Any] = {}
    for kind, node, _, value in events:
        if kind == "vjp" and kinds.get(node) == "op" or kind == "acc" and kinds.get(node) != "op":
            v = _num(value)
            out[node] = v if node not in out else _add(out[node], v)
    return out


def diagnose(key: str, raw: dict | None, ref: Reference, skipped: str | None = None) -> Verdict:
    """The verdict for one graph from the child's raw records and the engine's reference."""
    title = ref.built.spec.title
    names, kinds = ref.built.names, ref.built.kinds
    if raw is None:
        return Verdict(key, title, "not_run", skipped or "not run", engine_vjp_calls=ref.vjp_calls)
    sort, bp = raw["sort"], raw["backprop"]
    events = bp["events"]
    codes, texts, edge = order_problems(sort.get("order"), ref)
    if sort.get("error") is None and sort.get("not_variable"):
        texts.append(f"topological_sort returned a {sort['not_variable']} among the Variables")
    if sort.get("error") is None and sort.get("order") is None:
        texts.append(f"topological_sort returned {sort.get('returned')}, not a list of Variables")
    sort_error = sort.get("error")
    v = Verdict(key, title, "right", "", vjp_calls=bp["vjp_calls"], engine_vjp_calls=ref.vjp_calls,
                violated_edge=edge)
    err = bp.get("error") or sort_error
    if err is not None:
        v.kind = err["kind"] if err["kind"] in ("recursion", "not_implemented", "time_limit", "work_limit",
                                                "memory") else "exception"
        who = "backpropagate" if bp.get("error") else "topological_sort"
        v.headline = f"{who}: {error_text(err)}"
        v.error = err
        if v.kind == "work_limit":
            v.headline = (f"exponential work: {who} made more than {count(bp['vjp_calls'] - 1)} chain_rule calls "
                          f"on a graph the engine backpropagates with {count(ref.vjp_calls)}")
        if bp.get("error") is None and sort_error is not None:
            v.details.append("backpropagate ran without error (it does not call your topological_sort?)")
        elif bp.get("error") is not None and sort_error is not None and sort_error != bp["error"]:
            v.details.append(f"topological_sort: {error_text(sort_error)}")
        v.details += texts
        v.reasons = codes
        return v
    got = student_adjoints(events, kinds)
    v.adjoints = {n: (a.tolist() if isinstance(a, np.ndarray) else a) for n, a in got.items()}
    inputs = [n for n, kind in kinds.items() if kind == "input"]
    v.inputs_wrong = gradients_wrong({n: got.get(n) for n in inputs}, {n: ref.adjoints.get(n) for n in inputs})
    visits: dict[int, list[int]] = {}
    accs: dict[int, list[int]] = {}
    for i, (kind, node, _, _) in enumerate(events):
        if kind == "vjp":
            visits.setdefault(node, []).append(i)
        elif kind == "acc":
            accs.setdefault(node, []).append(i)
    # protocol misuse seen in the calls
    const_calls = [n for n in list(visits) + list(accs) if kinds.get(n) == "constant"]
    if const_calls and "constant_visited" not in codes:
        codes.append("constant_visited")
        texts.append(f"the constant {names[const_calls[0]]} was visited (chain_rule or accumulate_derivative "
                     "called on it)")
    non_leaf_acc = [n for n in accs if kinds.get(n) == "op"]
    if non_leaf_acc:
        texts.append(f"accumulate_derivative was called on {names[non_leaf_acc[0]]}, which is not a leaf")
    twice = [n for n, ix in visits.items() if kinds.get(n) == "op" and len(ix) > 1]
    lost: dict[int, tuple[int, int, Any]] = {}   # node -> (sender, event index, value) of its first lost one
    for i, (kind, node, parent, value) in enumerate(events):
        if kind != "send" or parent is None or kinds.get(parent) == "constant":
            continue
        taken = visits.get(parent, []) if kinds.get(parent) == "op" else accs.get(parent, [])
        if taken and taken[0] < i and taken[-1] < i and parent not in lost:
            lost[parent] = (node, i, value)
    first = next((n for n in ref.order if not _same(got.get(n), ref.adjoints.get(n, 0.0))
                  and (n in ref.adjoints or n in got)), None)
    if first is None and twice and bp["vjp_calls"] > ref.vjp_calls:
        n = twice[0]
        v.kind = "warning"
        v.headline = (f"right gradient, with repeated work: chain_rule called {len(visits[n])} times on "
                      f"{names[n]} ({_calls(bp['vjp_calls'])}; the engine makes {ref.vjp_calls})")
        v.reasons = codes + ["visited_twice"]
        v.details = texts
        return v
    if first is None:
        v.details = texts
        v.reasons = codes
        if codes or texts:   # right numbers, but the protocol was misused on the way
            v.kind = "warning"
            v.headline = "right gradient, but: " + texts[0]
            v.details = texts[1:]
            return v
        v.headline = "right: every adjoint matches the engine's" + (
            f" ({_calls(bp['vjp_calls'])}, as the engine)" if bp["vjp_calls"] == ref.vjp_calls else "")
        return v
    v.kind = "wrong_gradient"
    v.node, v.node_name = first, names[first]
    want, have = ref.adjoints.get(first), got.get(first)
    shown = "∂f/∂" + names[first] if kinds.get(first) == "input" else "adjoint of " + names[first]
    v.headline = (f"wrong gradient: first wrong node {names[first]} ({shown} = {_fmt(have)} where the engine "
                  f"gives {_fmt(want)})")
    why: list[str] = []
    if kinds.get(first) == "input" and first not in accs:
        why.append("leaf_never_accumulated")
        v.details.append(f"leaf {names[first]} never accumulated: accumulate_derivative was never called on it")
    if first in lost:
        sender, _, value = lost[first]
        why.append("lost")
        v.details.append(f"lost contribution: {names[sender]} sent {_fmt(value)} to {names[first]} after "
                         f"{names[first]} was taken — it is never added")
    if first in twice:
        why.append("visited_twice")
        v.details.append(f"{names[first]} was visited {len(visits[first])} times (chain_rule called on it "
                         "each time)")
    if kinds.get(first) == "op" and first not in visits:
        why.append("never_visited")
        v.details.append(f"chain_rule was never called on {names[first]}")
    if "lost" not in why and lost:   # a contribution lost elsewhere (the first wrong node may inherit it)
        n, (sender, _, value) = next(iter(lost.items()))
        why.append("lost")
        v.details.append(f"lost contribution: {names[sender]} sent {_fmt(value)} to {names[n]} after {names[n]} "
                         "was taken")
    v.details += [t for t in texts if t not in v.details]
    v.reasons = why + [c for c in codes if c not in why]
    if twice and "visited_twice" not in v.reasons:
        v.reasons.append("visited_twice")
        v.details.append(f"{names[twice[0]]} was visited {len(visits[twice[0]])} times")
    return v


def _calls(n: int) -> str:
    return f"{count(n)} VJP call" + ("" if n == 1 else "s")


def _fmt(v) -> str:
    a = _num(v)
    if a is None:
        return "nothing" if v is None else f"a {v.get('type', 'value')}" if isinstance(v, dict) else str(v)
    return fmt(float(a.reshape(()))) if a.size == 1 else fmt(a.tolist())
