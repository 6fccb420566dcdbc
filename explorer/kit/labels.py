"""What a node says: ``x3 = 1.5·x1``, its value in five significant digits, its shape.

Plain functions over the explain layer's graph; no UI. One precision everywhere a class reads a
number (captions, node labels, edge labels, tables): :data:`DIGITS` significant digits, by the app's
one formatter :func:`num` (``explorer.explain.numbers``, re-exported here). Hover texts carry the full
value (:func:`full_value`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from explorer.explain.graph import (Graph, adjoint_label, adjoint_names, bar,  # noqa: F401  (the one notation)
                                    lecture_names)
from explorer.explain.numbers import DIGITS, num, precise  # noqa: F401  (the one formatter, re-exported for the kit)
from engine.ops import label_of

MINUS = "\u2212"



def shape_text(shape) -> str:
    """``2×3``; ``scalar`` for ()."""
    shape = list(shape or [])
    return "×".join(str(int(s)) for s in shape) if shape else "scalar"


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (int, float, str, np.floating, np.integer))


def short_value(value: Any, max_chars: int = 26) -> str:
    """A value as one short line: ``244.69``; ``[-0.5, 5.5]``; ``[1, 2, 0.5, …]`` (never over ``max_chars``)."""
    if value is None:
        return "…"
    if is_scalar(value):
        return num(value)
    flat = np.asarray(value, dtype=object).ravel().tolist()
    parts: list[str] = []
    for v in flat:
        nxt = ", ".join(parts + [num(v)])
        if len(nxt) + 4 > max_chars and parts:
            return "[" + ", ".join(parts) + ", …]"
        parts.append(num(v))
    text = "[" + ", ".join(parts) + "]"
    return text if len(text) <= max_chars else text[:max_chars - 2] + "…]"


def full_value(value: Any) -> str:
    """Full precision (for hover texts): ``368.0378983963`` or a nested list."""
    if value is None:
        return "(not recorded)"
    if is_scalar(value):
        return value if isinstance(value, str) else repr(float(value))
    arr = np.asarray(value, dtype=float)
    if arr.size > 64:   # numpy's summary (first and last rows), cut
        return np.array2string(arr, precision=12, separator=", ", threshold=64)[:600]

    def nested(a) -> str:   # 12 significant digits, as nested lists (array2string took 1 ms per 8x8 hover)
        if a.ndim == 0:
            return precise(a)
        return "[" + ", ".join(nested(r) for r in a) + "]" if a.ndim > 1 else \
            "[" + ", ".join(precise(x) for x in a.tolist()) + "]"
    return nested(arr)


def _neg_literal(a: str) -> bool:
    return a.startswith("-") or a.startswith(MINUS)


def _unminus(a: str) -> str:
    return a[1:]


def formula(op: str, args: list[str]) -> str:
    """The slide notation of one op over argument names: ``1.5·x1``, ``x1 − 5``, ``−v1``, ``exp(x5)``."""
    if op == "add" and len(args) == 2:
        a, b = args
        if _neg_literal(b):
            return f"{a} {MINUS} {_unminus(b)}"
        return f"{a} + {b}"
    if op == "sub" and len(args) == 2:
        return f"{args[0]} {MINUS} {args[1]}"
    template = label_of(op)  # the primitive's own declaration (engine.ops): "{0} + {1}", "−{0}"
    if template and template.count("{") == len(args):
        if len(args) == 2 and _neg_literal(args[1]):
            args = [args[0], f"({MINUS}{_unminus(args[1])})"]
        return template.format(*args)
    if op in ("leaf", "group") or not args:
        return ""
    return f"{op}({', '.join(args)})"


def literal_name(value: Any) -> str:
    """A scalar constant's name: its value (``1.5``, ``-5``)."""
    return num(value) if is_scalar(value) else "const"


def node_formulas(graph: Graph) -> dict[int, str]:
    """``node id -> "1.5·x1"`` for every op node of ``graph`` (constants included in the graph, so
    numbers appear as literals), using each edge's argument position."""
    args: dict[int, list[tuple[int, int]]] = {}
    for e in graph.edges:
        args.setdefault(e.dst, []).append((e.arg, e.src))
    out = {}
    for n in graph.nodes:
        if n.op in ("leaf",):
            continue
        names = [graph.node(src).name for _, src in sorted(args.get(n.id, []), key=lambda t: t[0])]
        out[n.id] = formula(n.op, names)
    return out


def heading(name: str, expression: str) -> str:
    """``x3 = 1.5·x1`` (or just the name)."""
    return f"{name} = {expression}" if expression and expression != name else name


def dot_name(name: str) -> str:
    """The tangent notation of forward mode: x5 -> ẋ5 (a combining dot above)."""
    return name[:1] + "\u0307" + name[1:] if name else name


def _factor(value) -> str:
    """A number as a factor of a product: ``244.69``; a negative one in brackets, ``(−3)``."""
    text = num(value)
    return f"({text})" if text.startswith(("-", MINUS)) else text


def fan_out_term_numbers(adjoint: Any, contribution: Any) -> str:
    """One term of a fan-out sum in numbers, in the order of its symbols ``x̄3·∂x3/∂x1`` (the slides' own order,
    ``w̄1 = x̄3·x1``): the consumer's adjoint times the local derivative, ``244.69·1.5`` (a factor of 1 left out:
    ``1``); the local derivative is what the engine sent over the adjoint it held (scalars). A tensor's term, or
    one sent by a zero adjoint, is the contribution itself."""
    if not (is_scalar(adjoint) and is_scalar(contribution)) or isinstance(adjoint, str) or \
            isinstance(contribution, str) or adjoint is None or contribution is None or float(adjoint) == 0.0:
        return short_value(contribution, 18)
    local = float(contribution) / float(adjoint)
    if num(local) == "1":
        return num(adjoint)
    if num(adjoint) == "1":
        return num(local)
    return f"{_factor(adjoint)}·{_factor(local)}"


MAX_SUM_TERMS = 6   # terms of a fan-out sum written out; a longer sum says how many more


def fan_out_sum(node: str, terms: list[tuple[str, Any, Any]], received: int, expected: int, total: Any = None) -> str:
    """The adjoint of a node used ``expected`` times, as the slides write it: symbolically, then in numbers,
    ``x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04``.

    Args:
        node: the node's name as the slides number it (``x1``).
        terms: ``(consumer's name, its adjoint, what it sent)`` per consumer heard from, in the graph's order of
            the consumers (``x3`` before ``x7``); a consumer that uses the node twice (``x·x``) sent the sum of
            its two contributions: one term, ∂v1/∂x being the whole derivative.
        received, expected: how many contributions arrived and how many the node receives in all; fewer: the
            sum so far ends in ``+ …`` and says how many arrived.
        total: the sum (the engine's running total); with every term received it ends the line.
    """
    more = len(terms) - MAX_SUM_TERMS
    if more > 0:   # a weight used 148 times: the first terms, then how many more (each arrival stays O(1) to write)
        terms = terms[:MAX_SUM_TERMS]
    symbols = [f"{bar(c)}·∂{c}/∂{node}" for c, _, _ in terms]
    numbers = [fan_out_term_numbers(a, v) for _, a, v in terms]
    if more > 0 and received >= expected:   # (a sum still arriving ends in "+ …" anyway)
        symbols.append(f"… ({more} more terms)")
        numbers.append("…")
    if received < expected:
        return (f"{bar(node)} = {' + '.join(symbols)} + … = {' + '.join(numbers)} + … "
                f"({received} of {expected} received)")
    end = f" = {total_text(total)}" if total is not None else ""
    return f"{bar(node)} = {' + '.join(symbols)} = {' + '.join(numbers)}{end}"


def total_text(value: Any) -> str:
    """A fan-out sum's total as :func:`fan_out_sum` ends it."""
    return num(value) if is_scalar(value) else short_value(value, 26)
