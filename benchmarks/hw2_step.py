"""One HW2 training step, side by side: our engine (eager), hand-written NumPy, PyTorch eager.

Step: x (batch, 52 tokens, 50 dims) -> mean over tokens -> Linear(50, H) -> ReLU -> Dropout(0.5)
-> Linear(H, 1) -> sigmoid -> binary cross-entropy -> backward -> Adam.  float32 throughout.
Our engine runs HW2's one network and step, ``sentiment.model.SentimentNet`` / ``training_step``
(the sentences here have no padding, so the masked mean is a plain mean: mask None).

Prints µs per step and the ratios against the references measured in the same run. Also times a
scalar chain of 1e6 multiplies (forward + backward) and reports µs per node.

    python benchmarks/hw2_step.py            # batch 10 / hidden 32 and batch 512 / hidden 1024
    python benchmarks/hw2_step.py --quick    # fewer repetitions
"""
from __future__ import annotations

import argparse
import time

import numpy as np


import engine
from sentiment.model import hw2_step

TOKENS, DIM = 52, 50


def make_data(batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, TOKENS, DIM)).astype(np.float32)
    y = (rng.random((batch, 1)) < 0.5).astype(np.float32)
    return x, y


def init_params(hidden: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    b1, b2 = 1 / np.sqrt(DIM), 1 / np.sqrt(hidden)
    return [rng.uniform(-b1, b1, (hidden, DIM)).astype(np.float32), rng.uniform(-b1, b1, hidden).astype(np.float32),
            rng.uniform(-b2, b2, (1, hidden)).astype(np.float32), rng.uniform(-b2, b2, 1).astype(np.float32)]


# --- our engine: the one HW2 network and step live in sentiment.model -----------------------

def engine_step_fn(params, backend="numpy", compiled=False):
    """``step(x, y)`` (x (B, T, 50), y (B,)): sentiment.model's HW2 step, eager or compiled."""
    step = hw2_step(params, backend, compiled=compiled)[0]
    return lambda x, y: step(x, None, y)[0]


def compiled_step_fn(params, backend="numpy"):
    return engine_step_fn(params, backend, compiled=True)


# --- hand-written NumPy ----------------------------------------------------------------------

def numpy_step_fn(params):
    W1, b1, W2, b2 = [p.copy() for p in params]
    state = {"t": 0, "m": [np.zeros_like(p) for p in (W1, b1, W2, b2)],
             "v": [np.zeros_like(p) for p in (W1, b1, W2, b2)]}
    rng = np.random.default_rng(0)
    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-8

    def step(x, y):
        nonlocal W1, b1, W2, b2
        n = x.shape[0]
        xm = x.mean(1)
        z1 = xm @ W1.T + b1
        mask = (rng.random(z1.shape, dtype=np.float32) >= 0.5).astype(np.float32) * 2.0
        h = np.maximum(z1, 0) * mask
        z2 = h @ W2.T + b2
        p = 1 / (1 + np.exp(-z2))
        loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
        dz2 = (p - y) / n
        dW2 = dz2.T @ h
        db2 = dz2.sum(0)
        dh = dz2 @ W2
        dz1 = dh * mask * (z1 > 0)
        dW1 = dz1.T @ xm
        db1 = dz1.sum(0)
        state["t"] += 1
        t = state["t"]
        new = []
        for i, (w, g) in enumerate(zip((W1, b1, W2, b2), (dW1, db1, dW2, db2))):
            m = state["m"][i] = beta1 * state["m"][i] + (1 - beta1) * g
            v = state["v"][i] = beta2 * state["v"][i] + (1 - beta2) * g * g
            new.append(w - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps))
        W1, b1, W2, b2 = new
        return loss

    return step


# --- PyTorch eager ---------------------------------------------------------------------------

def torch_step_fn(params):
    import torch
    torch.set_num_threads(1)
    l1, l2 = torch.nn.Linear(DIM, params[0].shape[0]), torch.nn.Linear(params[0].shape[0], 1)
    with torch.no_grad():
        for t, p in zip((l1.weight, l1.bias, l2.weight, l2.bias), params):
            t.copy_(torch.from_numpy(p))
    drop = torch.nn.Dropout(0.5)
    opt = torch.optim.Adam(list(l1.parameters()) + list(l2.parameters()), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        p = torch.sigmoid(l2(drop(torch.relu(l1(x.mean(1))))))
        loss = torch.nn.functional.binary_cross_entropy(p, y)
        loss.backward()
        opt.step()
        return loss

    return step, torch


def time_step(step, x, y, repeats: int, inner: int) -> float:
    """Best-of-``repeats`` mean time per call over ``inner`` calls, in µs."""
    return time_interleaved({"step": (step, x, y)}, repeats, inner)["step"]


def time_interleaved(cases: dict, repeats: int, inner: int) -> dict[str, float]:
    """µs per call for each ``name: (step, x, y)``, best of ``repeats`` rounds of ``inner`` calls.

    The implementations take turns within every round, so a slow spell of this shared VM
    hits all of them rather than skewing one side of a ratio.
    """
    for step, x, y in cases.values():
        for _ in range(max(3, inner // 10)):
            step(x, y)
    best = {name: float("inf") for name in cases}
    for _ in range(repeats):
        for name, (step, x, y) in cases.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                step(x, y)
            best[name] = min(best[name], (time.perf_counter() - t0) / inner)
    return {name: t * 1e6 for name, t in best.items()}


def bench_size(batch: int, hidden: int, repeats: int, inner: int, extra: dict | None = None) -> dict[str, float]:
    x_np, y_np = make_data(batch)
    params = init_params(hidden)
    x, y = engine.tensor(x_np), engine.tensor(y_np.reshape(-1))    # the network outputs one value per sentence
    cases = {"engine eager (numpy backend)": (engine_step_fn(params), x, y),
             "hand-written NumPy": (numpy_step_fn(params), x_np, y_np)}
    try:
        tstep, torch = torch_step_fn(params)
        cases["PyTorch eager CPU"] = (tstep, torch.from_numpy(x_np), torch.from_numpy(y_np))
    except ImportError:
        pass
    for name, fn in (extra or {}).items():
        cases[name] = (fn(params), x, y)
    return time_interleaved(cases, repeats, inner)


def scalar_chain(n: int) -> float:
    x = engine.tensor(1.0, requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.0000001
    y.backward()
    dt = time.perf_counter() - t0
    assert x.grad is not None
    return dt / n * 1e6


def report(title: str, results: dict[str, float]) -> None:
    print(f"\n## {title}")
    refs = [r for r in ("PyTorch eager CPU", "hand-written NumPy") if r in results]
    print(f"{'implementation':34s} {'µs/step':>10s} " + " ".join(f"{'vs ' + r:>24s}" for r in refs))
    for name, us in results.items():
        ratios = " ".join(f"{us / results[r]:>23.2f}x" for r in refs)
        print(f"{name:34s} {us:10.1f} {ratios}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--chain", type=int, default=1_000_000, help="length of the scalar chain")
    args = ap.parse_args(argv)
    extra = {"engine compiled (replayed graph)": compiled_step_fn}
    r, i = (3, 100) if args.quick else (9, 200)
    report("HW2 step, batch 10, hidden 32", bench_size(10, 32, r, i, extra))
    r, i = (3, 5) if args.quick else (9, 10)
    report("HW2 step, batch 512, hidden 1024", bench_size(512, 1024, r, i, extra))
    print(f"\n## Scalar chain of {args.chain:,} multiplies (forward + backward)")
    print(f"{scalar_chain(args.chain):.2f} µs per node")


if __name__ == "__main__":
    main()
