"""Print what the engine does for a program: the forward order with values, then every backward
step with the contributions (VJP outputs) sent and the fan-out sums ("k of n received").

    python examples/explain_trace.py
    python examples/explain_trace.py --strategy bfs_first_touch
    python examples/explain_trace.py --program "h = sigmoid(W @ x + b)\nf = sum(h * h)" \
        --inputs "W = [[1, 2], [0.5, -1]], x = [0.3, 0.7], b = [0, 1]"
    python examples/explain_trace.py --dot graph.dot     # also write the graph as DOT (pydot)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


from explorer.explain import STRATEGY_NAMES, ExpressionError, record_execution  # noqa: E402
from explorer.kit.dot import to_dot  # noqa: E402
from explorer.explain.text import backward_lines, forward_lines, gradient_lines, lines  # noqa: E402

SLIDE = "f = x1 + exp(1.5*x1 + 2*x2)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", default=SLIDE, help="lines 'name = expression' (\\n separates lines)")
    p.add_argument("--inputs", default="x1 = 3, x2 = 0.5")
    p.add_argument("--strategy", default="topological", choices=STRATEGY_NAMES)
    p.add_argument("--dot", help="write the forward graph with values, adjoints and contributions as DOT")
    args = p.parse_args(argv)
    try:
        tr = record_execution(args.program.replace("\\n", "\n"), args.inputs, strategy=args.strategy)
    except ExpressionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("program:\n  " + args.program.replace("\\n", "\n  "))
    print(f"inputs: {args.inputs}\n")
    print("forward pass (engine ops in execution order):")
    print(lines(forward_lines(tr)))
    print(f"\nbackward pass ({args.strategy}):")
    print(lines(backward_lines(tr)))
    print("\ngradients:")
    print(lines("  " + s for s in gradient_lines(tr)))
    print(f"\n{tr.forward_ops} forward ops, {tr.vjp_calls} VJP calls, {tr.backward_ops} ops in the backward pass")
    for warning in tr.nonfinite:
        print(f"warning: {warning}")
    if args.dot:
        Path(args.dot).write_text(to_dot(tr.graph.without_constants(), tr))
        print(f"wrote {args.dot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
