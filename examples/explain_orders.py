"""Compare backward traversal orders, all running the engine's real VJPs:

1. each strategy on the slide example (gradients, right or wrong, VJP calls);
2. the random-DAG harness: how often each strategy is wrong and how much work it does
   (on DAGs where values are reused along paths of different lengths, and on trees);
3. path recursion's VJP calls on a doubling chain (2^depth - 1) vs topological (depth);
4. the recursive topological sort on a 3000-deep chain: a real RecursionError, caught.

    python examples/explain_orders.py
    python examples/explain_orders.py --graphs 200 --ops 15 --seed 1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


from explorer.explain import (STRATEGY_NAMES, doubling_chain_costs, record_execution, recursion_demo,  # noqa: E402
                            strategy_comparison)
from explorer.explain.text import table  # noqa: E402

SLIDE = "f = x1 + exp(1.5*x1 + 2*x2)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", type=int, default=50, help="random graphs in the harness")
    p.add_argument("--ops", type=int, default=12, help="lines per random program")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chain", type=int, default=3000, help="depth of the chain for the recursion demo")
    args = p.parse_args(argv)

    print(f"1. {SLIDE} at x1 = 3, x2 = 0.5\n")
    ref = record_execution(SLIDE, "x1 = 3, x2 = 0.5").grads
    rows = []
    for s in STRATEGY_NAMES:
        tr = record_execution(SLIDE, "x1 = 3, x2 = 0.5", strategy=s)
        ok = tr.error is None and all(abs(tr.grads[k] - ref[k]) <= 1e-9 * abs(ref[k]) for k in ref)
        lost = sum(1 for e in tr.backward if e.kind == "lost")
        rows.append({"strategy": s, "df/dx1": tr.grads["x1"], "df/dx2": tr.grads["x2"],
                     "right?": "yes" if ok else "NO", "VJP calls": tr.vjp_calls,
                     "backward ops": tr.backward_ops, "lost contributions": lost})
    print(table(rows))

    for tree in (False, True):
        kind = "trees (every value used once)" if tree else "DAGs (values reused)"
        print(f"\n2. {args.graphs} random {kind}, {args.ops} lines each, seed {args.seed}\n")
        res = strategy_comparison(n_graphs=args.graphs, n_ops=args.ops, seed=args.seed, tree=tree)
        print(table([{"strategy": r.strategy, "graphs": r.graphs, "wrong": r.wrong, "errors": r.errors,
                      "mean VJP calls": r.mean_vjp_calls, "mean backward ops": r.mean_backward_ops,
                      "max |grad error|": r.max_abs_error} for r in res]))

    print("\n3. doubling chain v_k = v_{k-1} * v_{k-1}: VJP calls\n")
    rows = doubling_chain_costs(depths=(2, 4, 6, 8, 10, 12))
    by_depth: dict[int, dict] = {}
    for r in rows:
        d = by_depth.setdefault(r["depth"], {"depth": r["depth"]})
        d[f"{r['strategy']} VJP calls"] = r["vjp_calls"]
        d[f"{r['strategy']} ops"] = r["backward_ops"]
    print(table(list(by_depth.values())))

    print(f"\n4. chain of {args.chain} ops, x1 -> ... -> f (d f / d x1 = 1)\n")
    print(table([{"strategy": tr.strategy, "df/dx1": tr.grads["x1"], "result": tr.error or "ok"}
                 for tr in recursion_demo(args.chain)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
