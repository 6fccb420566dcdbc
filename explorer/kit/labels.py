"""What a node says: ``x3 = 1.5·x1``, its value in five significant digits, its shape.

Plain functions over the explain layer's graph; no UI. One precision everywhere a class reads a
number (captions, node labels, edge labels, tables): :data:`DIGITS` significant digits, by the app's
one formatter :func:`num` (``engine.explain.numbers``, re-exported here). Hover texts carry the full
value (:func:`full_value`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.explain.graph import Graph
from engine.explain.numbers import DIGITS, num  # noqa: F401  (the one formatter, re-exported for the kit)
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
    arr = np.asarray(value, dtype=object)
    text = np.array2string(np.asarray(value, dtype=float), precision=12, separator=", ", threshold=64)
    return text if arr.size <= 64 else text[:600]


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


def bar(name: str) -> str:
    """The lecture's adjoint notation: x5 -> x̄5 (a combining macron after the first letter)."""
    return name[:1] + "\u0304" + name[1:] if name else name


def dot_name(name: str) -> str:
    """The tangent notation of forward mode: x5 -> ẋ5 (a combining dot above)."""
    return name[:1] + "\u0307" + name[1:] if name else name
