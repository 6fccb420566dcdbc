"""Plain-text renderings of explain-layer results (for the command-line examples and logs)."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from .numbers import fmt, num
from .trace import Trace


def table(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """A left-aligned text table of dict rows (numbers by the one formatter, :func:`num`)."""
    if not rows:
        return "(no rows)"
    cols = list(columns) if columns is not None else list(rows[0].keys())

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return num(v)
        if isinstance(v, list):
            return fmt(v)
        return "" if v is None else str(v)

    cells = [[cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join([line, rule, *body])


def forward_lines(trace: Trace) -> list[str]:
    """``1. x3 = mul(1.5, x1) = 4.5`` for every op, in the order the engine ran them."""
    return [f"{s.index + 1:>3}. {s.text}" + ("   <-- not finite" if not s.finite else "") for s in trace.forward]


def backward_lines(trace: Trace) -> list[str]:
    """One block per backward step: the node taken, each contribution it sends, each fan-out sum."""
    out: list[str] = []
    for k, events in enumerate(trace.steps()):
        out.append(f"step {k + 1}:")
        for e in events:
            out.append(("  " if e.kind == "visit" else "      ") + e.text)
    if trace.error:
        out.append(f"FAILED: {trace.error}")
    return out


def gradient_lines(trace: Trace) -> list[str]:
    return [f"df/d{name} = {fmt(v, 12)}" for name, v in trace.grads.items()]


def lines(items: Iterable[str]) -> str:
    return "\n".join(items)
