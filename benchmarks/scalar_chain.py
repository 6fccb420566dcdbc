"""The per-node cost of scalar programs: a chain of multiplies, forward + backward.

    y = x;  y = y * 1.0000001  (n times);  y.backward()

Three implementations, each in a fresh subprocess of its own (so one's memory does not hide
another's), taking turns for ``--repeats`` rounds:

* ours: the engine's 0-d tensors (float64, NumPy backend: the scalar fast path of the op registry);
* PyTorch: 0-d float64 tensors, ``torch.set_num_threads(1)`` (skipped, with a note, when absent);
* a plain Python scalar engine: a value class with ``__slots__`` and one backward closure per node
  (micrograd's design, with an iterative topological sort), the floor for pure Python.

Prints µs per node (forward, backward, total; CPU time of the process, best of the rounds), the
peak memory growth (RSS high-water mark over the run, best of the rounds) and the ratios against
PyTorch with the goals: time <= 0.5x PyTorch, memory <= PyTorch.

    python benchmarks/scalar_chain.py                 # 100,000 nodes
    python benchmarks/scalar_chain.py --nodes 1000000 # the goal's size (slow on a 2-core VM)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

IMPLEMENTATIONS = ("ours", "pytorch", "python")
FACTOR = 1.0000001


class PyScalar:
    """A plain Python scalar engine: value, gradient, and one backward closure per node."""

    __slots__ = ("data", "grad", "parents", "backward_fn")

    def __init__(self, data: float, parents: tuple = (), backward_fn=None):
        self.data, self.grad, self.parents, self.backward_fn = data, 0.0, parents, backward_fn

    def __mul__(self, other: float) -> "PyScalar":
        def backward_fn(g, a=self, c=other):
            a.grad += g * c
        return PyScalar(self.data * other, (self,), backward_fn)

    def backward(self) -> None:
        order, seen, stack = [], set(), [(self, False)]
        while stack:  # iterative: a 1e6-deep chain needs no recursion
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents)
        self.grad = 1.0
        for node in reversed(order):
            if node.backward_fn is not None:
                node.backward_fn(node.grad)


def _chain(kind: str, n: int) -> tuple[float, float, float]:
    """(forward seconds, backward seconds, d y / d x) of one chain, CPU time."""
    if kind == "ours":
        import engine
        x = engine.tensor(1.0, requires_grad=True)
    elif kind == "pytorch":
        import torch
        torch.set_num_threads(1)
        x = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    else:
        x = PyScalar(1.0)
    t0 = time.process_time()
    y = x
    for _ in range(n):
        y = y * FACTOR
    t1 = time.process_time()
    y.backward()
    t2 = time.process_time()
    grad = x.grad if kind == "python" else float(x.grad)
    return t1 - t0, t2 - t1, grad


def _rss_peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def worker(kind: str, n: int) -> dict:
    """One measurement in this (fresh) process: imports and a small warm-up first, then the chain."""
    _chain(kind, 1000)
    base = _rss_peak_bytes()
    fwd, bwd, grad = _chain(kind, n)
    return {"forward_s": fwd, "backward_s": bwd, "peak_bytes": _rss_peak_bytes() - base, "grad": grad}


def run_worker(kind: str, n: int) -> dict | None:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, __file__, "--worker", kind, "--nodes", str(n)], capture_output=True,
                         text=True, env=env)
    if out.returncode != 0:
        if kind == "pytorch" and "No module named 'torch'" in out.stderr:
            return None
        raise RuntimeError(f"the {kind} run failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000, help="length of the chain (default 100,000)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds; each implementation runs once per round")
    ap.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.repeats < 1:
        ap.error("--nodes and --repeats must be positive")
    if args.worker:
        print(json.dumps(worker(args.worker, args.nodes)))
        return
    n = args.nodes
    best: dict[str, dict] = {}
    for _ in range(args.repeats):
        for kind in IMPLEMENTATIONS:
            if kind in best and best[kind] is None:
                continue
            r = run_worker(kind, n)
            if r is None:
                best[kind] = None
                continue
            b = best.setdefault(kind, dict(r))
            for key in ("forward_s", "backward_s", "peak_bytes"):
                b[key] = min(b[key], r[key])
            b["total_s"] = min(b.get("total_s", float("inf")), r["forward_s"] + r["backward_s"])
    expected = FACTOR ** n
    print(f"## Scalar chain of {n:,} multiplies, forward + backward (CPU time, best of {args.repeats}; "
          f"memory: peak RSS growth)")
    print(f"{'µs per node':28s} {'forward':>9s} {'backward':>9s} {'total':>9s}  {'peak MB':>8s}  d y/d x")
    names = {"ours": "ours (engine 0-d tensors)", "pytorch": "PyTorch 0-d tensors", "python": "plain Python scalars"}
    for kind in IMPLEMENTATIONS:
        r = best.get(kind)
        if r is None:
            continue
        per = 1e6 / n
        print(f"{names[kind]:28s} {r['forward_s'] * per:8.2f}µ {r['backward_s'] * per:8.2f}µ "
              f"{r['total_s'] * per:8.2f}µ  {r['peak_bytes'] / 2**20:8.1f}  {r['grad']:.9g}"
              f"{'' if abs(r['grad'] - expected) <= 1e-9 * expected else '  WRONG'}")
    ours, torch_r = best["ours"], best.get("pytorch")
    if torch_r is None:
        print("\nPyTorch is not installed: no ratios against it (pip install torch, CPU build).")
        return
    t_ratio = ours["total_s"] / torch_r["total_s"]
    m_ratio = ours["peak_bytes"] / max(torch_r["peak_bytes"], 1)
    print("\n## Goals (same-run ratios)")
    print(f"time   ours / PyTorch  {t_ratio:5.2f}x   goal <= 0.5x: {'met' if t_ratio <= 0.5 else 'NOT met'}")
    print(f"memory ours / PyTorch  {m_ratio:5.2f}x   goal <= 1.0x: {'met' if m_ratio <= 1.0 else 'NOT met'}")
    print(f"plain Python scalars / ours: {best['python']['total_s'] / ours['total_s']:.2f}x the time")


if __name__ == "__main__":
    main()
