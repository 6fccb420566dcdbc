"""The captured-and-replayed HW2 training step against eager mode, hand-written NumPy and PyTorch.

Reuses the workload and the timing of ``benchmarks/hw2_step.py`` (same batches, same initial
parameters, float32, one thread, implementations taking turns): x (batch, 52, 50) -> mean over
tokens -> Linear(50, H) -> ReLU -> Dropout(0.5) -> Linear(H, 1) -> sigmoid -> BCE -> backward ->
Adam. First checks that the compiled step gives bit-identical losses and parameters to eager mode,
then prints µs per step (best of several rounds).

    python benchmarks/compiled_step.py               # batch 10 / hidden 32, then batch 512 / hidden 1024
    python benchmarks/compiled_step.py --quick
    python benchmarks/compiled_step.py --clock wall  # elapsed time instead of this process's CPU time
"""
from __future__ import annotations

import argparse
import sys

from benchmarks import hw2_step as bench_hw2  # first: it pins BLAS to one thread before NumPy loads

import numpy as np  # noqa: E402

import engine  # noqa: E402
from benchmarks.hw2_step import (CLOCKS, COMPILED, EAGER, NUMPY, TORCH, compiled_step_fn, engine_step_fn,  # noqa: E402
                                 init_params, make_batches, make_data, numpy_step_fn, time_interleaved,
                                 torch_step_fn)
from sentiment.model import hw2_step  # noqa: E402


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
    data = make_batches(batch)
    params = init_params(hidden)
    ours = [(engine.tensor(x), engine.tensor(y.reshape(-1))) for x, y in data]
    cases = {COMPILED: (compiled_step_fn(params), ours), EAGER: (engine_step_fn(params), ours),
             NUMPY: (numpy_step_fn(params), data)}
    try:
        tstep, torch = torch_step_fn(params)
        cases[TORCH] = (tstep, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data])
    except ImportError:
        pass
    return time_interleaved(cases, repeats, inner)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument("--small-only", action="store_true", help="skip batch 512 / hidden 1024")
    args = ap.parse_args(argv)
    bench_hw2._clock = CLOCKS[args.clock]
    print(f"clock: {args.clock}")
    ok = check_bit_identical(10, 32)
    print(f"compiled == eager, bit for bit (5 steps, losses and parameters): {ok}")
    step = hw2_step(init_params(32), compiled=True)[0]
    x_np, y_np = make_data(10)
    step(engine.tensor(x_np), None, engine.tensor(y_np.reshape(-1)))
    s = step.stats
    print(f"trace: {s.traced_ops} ops recorded, {s.replayed_ops} replayed, {s.leaves} leaves read per replay")
    r, i = (3, 100) if args.quick else (7, 320)
    small = bench(10, 32, r, i)
    bench_hw2.report("HW2 step, batch 10, hidden 32", small)
    if TORCH not in small:
        print("PyTorch is not installed: no PyTorch column (pip install torch, CPU build).")
    if not args.small_only:
        r, i = (3, 16) if args.quick else (5, 32)
        bench_hw2.report("HW2 step, batch 512, hidden 1024", bench(512, 1024, r, i))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
