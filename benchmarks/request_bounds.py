"""The worst one request can cost: adversarial programs at the edges of the budget, through the pages' models.

    python3 benchmarks/request_bounds.py

Each row runs one page's model function (what a page computes for one request, as the page calls it)
in a fresh child process and reports its wall time, then again under tracemalloc for its peak of
Python-traced memory (NumPy buffers included), the size of the result a page cache would keep, and
whether it was refused. The programs sit just inside or just outside the budget of
``engine.explain.parser`` (``MAX_KEPT_ELEMENTS`` numbers per run, ``MAX_WORK`` work units per request),
or are the issue-14 attacks.
"""
from __future__ import annotations

import json
import multiprocessing
import sys
import time
import tracemalloc

import numpy as np


def values(**arrays) -> str:
    return ", ".join(f"{k} = {np.asarray(v).tolist()}" for k, v in arrays.items())


HALF = 0.5
NAMES = [a + b for a in "ABCDEFGHIJ" for b in "ABCDEFGHIJ"]  # short names, so that 80 lines fit 2,000 characters


def chain(lines: int) -> str:
    """``lines`` lines of 6 engine ops each, every line using the one before."""
    return "\n".join([f"{NAMES[0]}=exp(x)*x+x-x/x"] + [f"{c}=exp({p})*x+x-{p}/x"
                                                      for p, c in zip(NAMES, NAMES[1:lines])])
CASES = [
    # (label, page, program, inputs)
    ("six 10-element axes, 98 lines of c*c*c*c*c (issue 14)", "explorer",
     "c = p*q*r*s*t*u\n" + "\n".join(f"d{k} = c*c*c*c*c" for k in range(97)) + "\nf = d96*c",
     values(**{n: np.full([10 if i == j else 1 for j in range(6)], HALF) for i, n in enumerate("pqrstu")})),
    ("1000x1 times 1x1000, then c*c*c*c (issue 14)", "explorer", "c = a*b\nf = sum(c*c*c*c)",
     values(a=np.full((1000, 1), HALF), b=np.full((1, 1000), HALF))),
    ("two outer products of 999,000 numbers (just inside)", "explorer", "c = a*b\nd = b*a\nf = sum(c) + sum(d)",
     values(a=np.full((1000, 1), HALF), b=np.full((1, 999), HALF))),
    ("the same on the gradient check", "gradcheck", "c = a*b\nd = b*a\nf = sum(c) + sum(d)",
     values(a=np.full((1000, 1), HALF), b=np.full((1, 999), HALF))),
    ("the same on backprop orders (all four)", "orders", "c = a*b\nd = b*a\nf = sum(c) + sum(d)",
     values(a=np.full((1000, 1), HALF), b=np.full((1, 999), HALF))),
    ("100 scalar inputs summed (204 runs)", "explorer", "f = " + " + ".join(f"x{i}" for i in range(1, 101)),
     ", ".join(f"x{i} = {i}" for i in range(1, 101))),
    ("99 scalar ops on the gradient check (~300 runs)", "gradcheck",
     "\n".join(["y1 = x * x"] + [f"y{k + 1} = y{k} * x" for k in range(1, 99)]), "x = 1.001"),
    ("100 x 100 matrices: W @ W @ W @ W", "explorer", "f = sum(W @ W @ W @ W)",
     values(W=np.full((100, 100), 0.01))),
    ("doubling chain x2 = x1 + x1 ... x31, 1000 elements, path recursion", "orders",
     "\n".join(f"x{k + 1} = x{k} + x{k}" for k in range(1, 31)), values(x1=np.full(1000, HALF))),
    ("scalar doubling chain of depth 16, path recursion", "orders",
     "\n".join(["x2 = x1 * x1"] + [f"x{k + 1} = x{k} * x{k}" for k in range(2, 17)]), "x1 = 1.0001"),
    ("an 80-line program of 480 ops (the parser allows 500)", "explorer",
     chain(80),
     values(x=np.full(20, 0.01))),
    ("the same on backprop orders (all four)", "orders",
     chain(80),
     values(x=np.full(20, 0.01))),
    ("a 33-line program of 198 ops (four orders side by side: at most 200)", "orders", chain(33),
     values(x=np.full(20, 0.01))),
    ("forward vs reverse at the memory edge", "dual", "c = a*b\nd = b*a\nf = sum(c) + sum(d)",
     values(a=np.full((1000, 1), HALF), b=np.full((1, 999), HALF))),
]


def run_case(page: str, program: str, inputs: str, traced: bool, out) -> None:
    from engine.explain import deadline
    from explorer.backprop_orders import orders_model
    from explorer.expression_explorer import explorer_model
    from explorer.forward_vs_reverse import dual_model
    from explorer.gradient_check import gradcheck_model
    from explorer.kit.budget import REQUEST_SECONDS, estimate_bytes
    from explorer.kit.programs import InputProblem

    models = {"explorer": lambda: explorer_model(program, inputs),
              "gradcheck": lambda: gradcheck_model(program, inputs, "", 1e-6, 0),
              "orders": lambda: orders_model(program, inputs, ("topological", "bfs_first_touch", "path_recursion",
                                                               "recursive_dfs")),
              "dual": lambda: dual_model(program, inputs, "")}
    if traced:  # a second run measures memory: tracemalloc slows small allocations down several times
        tracemalloc.start()
    t0 = time.perf_counter()
    kept, outcome = 0, "ran"
    try:
        with deadline(REQUEST_SECONDS):  # as the pages' bounded_cache runs it
            result = models[page]()
        kept = estimate_bytes(result)
    except InputProblem as e:
        outcome = "refused: " + str(e.error)[:90]
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if traced else 0
    out.send({"seconds": seconds, "peak_mb": peak / 2**20, "kept_mb": kept / 2**20, "outcome": outcome})


def main() -> int:
    ctx = multiprocessing.get_context("spawn")
    print("| request | page | time (s) | peak memory (MB) | result kept (MB) | outcome |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = []
    for label, page, program, inputs in CASES:
        row = {}
        for traced in (False, True):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=run_case, args=(page, program, inputs, traced, send))
            proc.start()
            got = recv.recv() if recv.poll(120) else {"seconds": float("nan"), "peak_mb": float("nan"),
                                                      "kept_mb": 0, "outcome": "no answer in 120 s"}
            proc.join(10)
            row.update({"peak_mb": got["peak_mb"]} if traced else got)
        rows.append({"label": label, "page": page, **row})
        print(f"| {label} | {page} | {row['seconds']:.2f} | {row['peak_mb']:.0f} | {row['kept_mb']:.1f} | "
              f"{row['outcome']} |", flush=True)
    if "--json" in sys.argv:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
