"""The captured-and-replayed HW2 training step against eager mode, hand-written NumPy and PyTorch.

Reuses the workload of ``benchmarks/hw2_step.py`` (same data, same initial parameters, float32):
x (batch, 52, 50) -> mean over tokens -> Linear(50, H) -> ReLU -> Dropout(0.5) -> Linear(H, 1)
-> sigmoid -> BCE -> backward -> Adam. First checks that the compiled step gives bit-identical
losses and parameters to eager mode, then prints µs per step (best of several repetitions).

    python benchmarks/compiled_step.py            # batch 10 / hidden 32, then batch 512 / hidden 1024
    python benchmarks/compiled_step.py --quick
    python benchmarks/compiled_step.py --clock cpu   # process CPU time: steadier on a shared machine
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import engine
from benchmarks.hw2_step import compiled_step_fn, engine_step_fn, init_params, make_data, numpy_step_fn, torch_step_fn
from sentiment.model import hw2_step


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter


def time_step(step, x, y, repeats: int, inner: int) -> float:
    """Best-of-``repeats`` mean time per call over ``inner`` calls, in µs (wall or process CPU clock)."""
    for _ in range(max(3, inner // 10)):
        step(x, y)
    best = float("inf")
    for _ in range(repeats):
        t0 = _clock()
        for _ in range(inner):
            step(x, y)
        best = min(best, (_clock() - t0) / inner)
    return best * 1e6


def check_bit_identical(batch: int, hidden: int, steps: int = 5) -> bool:
    """Compiled and eager HW2 steps (dropout on, same seed) give the same losses and parameters, bit for bit."""
    x_np, y_np = make_data(batch)
    params = init_params(hidden)
    x, y = engine.tensor(x_np), engine.tensor(y_np.reshape(-1))
    runs = []
    for compiled in (False, True):
        engine.manual_seed(123)
        step, model, _ = hw2_step(params, compiled=compiled)
        losses = [step(x, None, y)[0].numpy().copy() for _ in range(steps)]
        runs.append((losses, [p.numpy().copy() for p in model.parameters()]))
    (le, pe), (lc, pc) = runs
    return all(np.array_equal(a, b) for a, b in zip(le + pe, lc + pc))


def bench(batch: int, hidden: int, repeats: int, inner: int) -> dict[str, float]:
    x_np, y_np = make_data(batch)
    params = init_params(hidden)
    x, y = engine.tensor(x_np), engine.tensor(y_np.reshape(-1))
    res = {"engine compiled (replayed graph)": time_step(compiled_step_fn(params), x, y, repeats, inner),
           "engine eager": time_step(engine_step_fn(params), x, y, repeats, inner),
           "hand-written NumPy": time_step(numpy_step_fn(params), x_np, y_np, repeats, inner)}
    try:
        tstep, torch = torch_step_fn(params)
        res["PyTorch eager CPU"] = time_step(tstep, torch.from_numpy(x_np), torch.from_numpy(y_np), repeats, inner)
    except ImportError:
        pass
    return res


def report(title: str, res: dict[str, float]) -> None:
    print(f"\n## {title}")
    refs = [r for r in ("PyTorch eager CPU", "hand-written NumPy") if r in res]
    print(f"{'implementation':34s} {'µs/step':>10s} " + " ".join(f"{'vs ' + r:>24s}" for r in refs))
    for name, us in res.items():
        print(f"{name:34s} {us:10.1f} " + " ".join(f"{us / res[r]:>23.2f}x" for r in refs))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall")
    ap.add_argument("--small-only", action="store_true", help="skip batch 512 / hidden 1024")
    args = ap.parse_args(argv)
    global _clock
    _clock = CLOCK[args.clock]
    print(f"clock: {args.clock}")
    ok = check_bit_identical(10, 32)
    print(f"compiled == eager, bit for bit (5 steps, losses and parameters): {ok}")
    step = hw2_step(init_params(32), compiled=True)[0]
    x_np, y_np = make_data(10)
    step(engine.tensor(x_np), None, engine.tensor(y_np.reshape(-1)))
    s = step.stats
    print(f"trace: {s.traced_ops} ops recorded, {s.replayed_ops} replayed, {s.leaves} leaves read per replay")
    r, i = (3, 100) if args.quick else (7, 300)
    report("HW2 step, batch 10, hidden 32", bench(10, 32, r, i))
    if not args.small_only:
        r, i = (3, 5) if args.quick else (5, 20)
        report("HW2 step, batch 512, hidden 1024", bench(512, 1024, r, i))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
