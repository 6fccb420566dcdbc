"""Central differences vs autodiff: the error for step sizes h = 1e-1 ... 1e-12 in float32 and
float64 (truncation error dominates for large h, rounding error for small h; the best h
depends on the dtype).

    python examples/explain_h_sweep.py
    python examples/explain_h_sweep.py --program "f = sigmoid(x1) * x2" --inputs "x1 = 0.3, x2 = 2" --wrt x2
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


from engine.explain import ExpressionError, h_sweep  # noqa: E402
from engine.explain.text import table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", default="f = x1 + exp(1.5*x1 + 2*x2)")
    p.add_argument("--inputs", default="x1 = 3, x2 = 0.5")
    p.add_argument("--wrt", default=None, help="input to differentiate (default: the first)")
    args = p.parse_args(argv)
    try:
        sw = h_sweep(args.program, args.inputs, wrt=args.wrt)
    except ExpressionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.program} at {args.inputs}: d f / d {sw.wrt} = {sw.exact!r} (autodiff, float64)\n")
    by_h: dict[float, dict] = {}
    for r in sw.rows:
        row = by_h.setdefault(r.h, {"h": f"{r.h:.0e}"})
        row[f"{r.dtype} estimate"] = r.estimate
        row[f"{r.dtype} |error|"] = f"{r.abs_error:.2e}"
    print(table(list(by_h.values())))
    print("\nbest h: " + ", ".join(f"{dt}: {h:.0e}" for dt, h in sw.best_h.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
