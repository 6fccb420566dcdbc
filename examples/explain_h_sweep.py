"""Finite differences vs autodiff: the error for step sizes h = 1e-1 ... 1e-12 in float32 and
float64, central (f(x+h) - f(x-h)) / 2h and forward (f(x+h) - f(x)) / h. Truncation error
dominates for large h (~h^2 central, ~h forward), rounding error for small h (~eps/h); the best
h is the minimiser of h^2 |f'''| / 6 + eps |f| / h, with f''' from the engine (nested grad).

    python examples/explain_h_sweep.py
    python examples/explain_h_sweep.py --program "f = sigmoid(x1) * x2" --inputs "x1 = 0.3, x2 = 2" --wrt x2
"""
from __future__ import annotations

import argparse
import sys

from explorer.explain import ExpressionError, h_sweep
from explorer.explain.text import table


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
        row = by_h.setdefault(r.h, {"h": f"{r.h:.1e}"})
        row[f"{r.dtype} {r.scheme} |error|"] = f"{r.abs_error:.2e}"
    print(table(list(by_h.values())))
    f, _, d2, d3 = sw.derivatives
    print(f"\nengine: f = {f:.10g}, f'' = {d2:.10g}, f''' = {d3:.10g} (nested engine.grad)")
    print("best h (central: minimiser of h^2 |f'''| / 6 + eps |f| / h): "
          + ", ".join(f"{dt}: {h:.1e}" for dt, h in sw.best_h.items()))
    fwd = {m.dtype: m.best_h for m in sw.models if m.scheme == "forward" and m.best_h is not None}
    if fwd:
        print("best h (forward: minimiser of h |f''| / 2 + 2 eps |f| / h): "
              + ", ".join(f"{dt}: {h:.1e}" for dt, h in fwd.items()))
    print("lowest point of the sweep (central; rounding noise moves it around the best h): "
          + ", ".join(f"{dt}: {h:.1e}" for dt, h in sw.lowest_h.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
