"""The prepared GPU check for the CUDA backend: tests, then four measurements, in < 5 minutes.

Needs an NVIDIA GPU with CuPy installed; installs nothing and needs no network.

1. the test suite with the CUDA backend enabled (``pytest -q -m "not browser"``; the op table,
   tests/test_cuda_emulated.py's ``gpu`` runtime and the model tests then include ``cuda``), in
   two phases: the backend-parametrised files first, then the rest (``--tests-timeout`` in all);
2. elementwise add of 1e8 float32 (our zip kernel) as % of the measured device-to-device copy
   bandwidth (cudaMemcpy D2D), counting bytes read + written (goal >= 80 %);
3. our tiled matmul, 4096 x 4096 float32, as % of CuPy's ``@`` (cuBLAS) (goal >= 50 %);
4. the HW2 training step (benchmarks/hw2_step.py's model: mean over 52 x 50 GloVe-shaped tokens,
   Linear, ReLU, Dropout, Linear, sigmoid, BCE, Adam; float32) at two sizes, and one epoch of
   sentiment/trainer.py's HW2 training on the full SST-2 training set (67,349 sentences, GloVe-50)
   when the data is on the machine (else synthetic data of the same size and shapes), CUDA
   backend vs NumPy backend; an epoch run longer than --epoch-cap seconds is extrapolated.

It prints a short table last and writes ``benchmarks/results/gpu-<date>.md``.

    python benchmarks/gpu_check.py                 # everything (under 5 min)
    python benchmarks/gpu_check.py --skip-tests    # measurements only
"""
from __future__ import annotations

import argparse
import datetime as _dt
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

import engine  # noqa: E402
from engine.backends import get_backend  # noqa: E402
from engine.backends.cuda_backend import CudaBackend  # noqa: E402

SST2_TRAIN_SIZE = 67_349  # examples in GLUE SST-2 train.tsv


# Phase 1: the tests that run on every backend (so on ``cuda`` here) and the CUDA tests.
BACKEND_TESTS = ["tests/test_cuda_backend.py", "tests/test_cuda_emulated.py", "tests/test_ops.py",
                 "tests/test_nn_optim.py", "tests/test_autodiff.py", "tests/test_sentiment_training.py",
                 "tests/test_tensor_data.py"]


def _pytest(args: list[str], timeout_s: int) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not browser", *args]
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        text, rc = res.stdout + res.stderr, res.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        text = (out.decode(errors="replace") if isinstance(out, bytes) else out) + f"\n(stopped after {timeout_s} s)"
        rc = "timeout"
    tail = text.strip().splitlines()[-12:]
    print("\n".join(tail))
    return {"rc": rc, "summary": tail[-1] if tail else "", "seconds": time.perf_counter() - t0,
            "command": "pytest -q -m 'not browser' " + " ".join(args)}


def run_tests(timeout_s: int) -> list[dict]:
    """The suite in two phases, backend-parametrised files first, so a slow machine still reports those."""
    files = [f for f in BACKEND_TESTS if (ROOT / f).exists()]
    first = _pytest(files, int(timeout_s * 0.55))
    rest = _pytest(["tests"] + [f"--ignore={f}" for f in files], max(30, timeout_s - int(first["seconds"])))
    return [first, rest]


def _time_gpu(fn, cp, repeats: int) -> float:
    """Median seconds per call, timed with CUDA events after a warm-up call."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times))


def bandwidth(be: CudaBackend, cp, n: int = 100_000_000) -> dict:
    a = cp.random.random(n, dtype=cp.float32)
    b = cp.random.random(n, dtype=cp.float32)
    dst = cp.empty_like(a)
    nbytes = a.nbytes
    t_copy = _time_gpu(lambda: cp.cuda.runtime.memcpy(dst.data.ptr, a.data.ptr, nbytes,
                                                      cp.cuda.runtime.memcpyDeviceToDevice), cp, 20)
    t_add = _time_gpu(lambda: be.binary("add", a, b), cp, 20)
    out = be.binary("add", a, b)
    assert bool(cp.allclose(out[:1000], a[:1000] + b[:1000])), "our add disagrees with CuPy"
    copy_bw = 2 * nbytes / t_copy / 1e9
    add_bw = 3 * nbytes / t_add / 1e9
    del a, b, dst, out
    return {"copy_GBps": copy_bw, "add_GBps": add_bw, "pct": 100 * add_bw / copy_bw, "add_ms": t_add * 1e3}


def matmul(be: CudaBackend, cp, n: int = 4096) -> dict:
    a = cp.random.standard_normal((n, n), dtype=cp.float32)
    b = cp.random.standard_normal((n, n), dtype=cp.float32)
    variants = {}
    for min_blocks in (1, 2):  # matmul.cu's MIN_BLOCKS: the faster one is reported
        be.matmul_min_blocks["float32"] = min_blocks
        variants[min_blocks] = _time_gpu(lambda: be.matmul(a, b), cp, 10)
    best = min(variants, key=variants.get)
    be.matmul_min_blocks["float32"] = best
    t_ours = variants[best]
    t_cublas = _time_gpu(lambda: a @ b, cp, 10)
    ref = a @ b
    err = float(cp.max(cp.abs(be.matmul(a, b) - ref)) / cp.max(cp.abs(ref)))
    flops = 2 * n ** 3
    return {"ours_TFLOPs": flops / t_ours / 1e12, "cublas_TFLOPs": flops / t_cublas / 1e12,
            "pct": 100 * t_cublas / t_ours, "max_rel_err": err, "min_blocks": best,
            "TFLOPs_by_min_blocks": {k: flops / v / 1e12 for k, v in variants.items()}}


def _sync(backend: str) -> None:
    if backend == "cuda":
        get_backend("cuda").synchronize()


def hw2_step(backend: str, batch: int, hidden: int, steps: int) -> float:
    """Seconds per HW2 training step (data already on the backend)."""
    import hw2_step as H
    x_np, y_np = H.make_data(batch)
    x, y = engine.tensor(x_np, backend=backend), engine.tensor(y_np, backend=backend)
    step = H.engine_step_fn(H.init_params(hidden), backend=backend)
    for _ in range(5):
        step(x, y)
    _sync(backend)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step(x, y)
    float(loss.item())
    _sync(backend)
    return (time.perf_counter() - t0) / steps


def hw2_epoch(backend: str, batch: int, hidden: int, cap_s: float) -> dict:
    """One epoch over SST-2-sized data (67,349 examples of 52 x 50 float32), host batches uploaded per step.

    The values are synthetic (the step's cost does not depend on them; the GPU machine may not have
    the data or GloVe); the shapes, count and batching are the real epoch's. Stops at ``cap_s`` and
    extrapolates, saying so.
    """
    import hw2_step as H
    rng = np.random.default_rng(0)
    pool = rng.standard_normal((4096, H.TOKENS, H.DIM)).astype(np.float32)  # reused: 700 MB of host data is not needed
    labels = (rng.random((SST2_TRAIN_SIZE, 1)) < 0.5).astype(np.float32)
    step = H.engine_step_fn(H.init_params(hidden), backend=backend)
    n_batches = -(-SST2_TRAIN_SIZE // batch)
    t0 = time.perf_counter()
    done = 0
    for i in range(n_batches):
        lo = (i * batch) % (len(pool) - batch)
        x = engine.tensor(pool[lo:lo + batch], backend=backend)
        y = engine.tensor(labels[i * batch:(i + 1) * batch], backend=backend)
        if x.shape[0] != y.shape[0]:
            x = engine.tensor(pool[:y.shape[0]], backend=backend)
        step(x, y)
        done += 1
        if time.perf_counter() - t0 > cap_s:
            break
    _sync(backend)
    dt = time.perf_counter() - t0
    return {"seconds": dt * n_batches / done, "batches": n_batches, "measured_batches": done,
            "extrapolated": done < n_batches}


def trainer_epoch(backend: str, cap_s: float, data) -> dict:
    """One epoch of sentiment/trainer.py's HW2 training (batch 10, hidden 32, float32) on the full
    SST-2 training set with GloVe-50, no validation. Stops after ``cap_s`` and extrapolates, saying so."""
    from sentiment.trainer import BatchEnd, SentimentTrainer, TrainConfig
    train, glove = data
    trainer = SentimentTrainer(train, None, glove, TrainConfig(epochs=1, backend=backend, dtype="float32"))
    last = None
    for ev in trainer.events():  # the vocabulary is built in the constructor, untimed
        if isinstance(ev, BatchEnd):
            last = ev
            if ev.elapsed > cap_s:
                trainer.control.stop()
    _sync(backend)
    assert last is not None
    return {"seconds": last.elapsed * last.n_batches / last.batch, "batches": last.n_batches,
            "measured_batches": last.batch, "extrapolated": last.batch < last.n_batches}


def load_real_data():
    """(SST-2 train, GloVe) when this machine has them, else None (the synthetic epoch is used)."""
    try:
        from sentiment.data import load_sst2
        from sentiment.embeddings import load_glove
        train, _ = load_sst2()
        return train, load_glove()
    except Exception as e:  # noqa: BLE001 - any missing piece means: use the synthetic epoch
        print(f"SST-2 / GloVe not available here ({type(e).__name__}: {e}); the epoch uses synthetic data")
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--tests-timeout", type=int, default=180, help="seconds for both test phases together")
    ap.add_argument("--epoch-cap", type=float, default=15.0, help="seconds per epoch run before extrapolating")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    if not CudaBackend.is_available():
        print(f"gpu_check: no GPU here: {CudaBackend.unavailable_reason()}", file=sys.stderr)
        return 2
    import cupy as cp
    be = get_backend("cuda")
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    started = _dt.datetime.now(_dt.timezone.utc)
    print(f"GPU: {gpu}; CuPy {cp.__version__}; CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")

    tests = None if args.skip_tests else run_tests(args.tests_timeout)
    t0 = time.perf_counter()
    be.binary("add", cp.ones(4, cp.float32), cp.ones(4, cp.float32))  # compile / load the modules first
    be.matmul(cp.ones((2, 2), cp.float32), cp.ones((2, 2), cp.float32))
    print(f"kernel modules ready in {time.perf_counter() - t0:.1f} s")
    bw = bandwidth(be, cp)
    print(f"add 1e8 float32: {bw}")
    mm = matmul(be, cp)
    print(f"matmul 4096: {mm}")
    steps = {}
    for batch, hidden, n in ((10, 32, 300), (512, 1024, 50)):
        steps[(batch, hidden)] = {b: hw2_step(b, batch, hidden, n) for b in ("numpy", "cuda")}
        print(f"HW2 step batch {batch} hidden {hidden}: {steps[(batch, hidden)]}")
    epochs = {}
    data = load_real_data()
    if data is not None:
        epochs["real"] = {b: trainer_epoch(b, args.epoch_cap, data) for b in ("numpy", "cuda")}
    else:
        epochs["synthetic"] = {b: hw2_epoch(b, 10, 32, args.epoch_cap) for b in ("numpy", "cuda")}
    print(f"HW2 epoch: {epochs}")

    rows = [("elementwise add 1e8 float32, % of D2D copy bandwidth",
             f"{bw['pct']:.0f} % ({bw['add_GBps']:.0f} of {bw['copy_GBps']:.0f} GB/s)", ">= 80 %"),
            ("our matmul 4096^2 float32, % of CuPy @ (cuBLAS)",
             f"{mm['pct']:.0f} % ({mm['ours_TFLOPs']:.1f} vs {mm['cublas_TFLOPs']:.1f} TFLOP/s, rel err "
             f"{mm['max_rel_err']:.1e}; MIN_BLOCKS {mm['min_blocks']}; by MIN_BLOCKS: "
             + ", ".join(f"{k}: {v:.1f}" for k, v in mm["TFLOPs_by_min_blocks"].items()) + ")",
             ">= 50 %")]
    for (batch, hidden), r in steps.items():
        rows.append((f"HW2 step batch {batch} hidden {hidden}: cuda / numpy",
                     f"{r['cuda'] * 1e6:.0f} / {r['numpy'] * 1e6:.0f} µs ({r['numpy'] / r['cuda']:.2f}x)", ""))
    for kind, r in epochs.items():
        note = "; extrapolated from the first " + ", ".join(
            f"{r[b]['measured_batches']} ({b})" for b in ("cuda", "numpy") if r[b]["extrapolated"]) + " batches" \
            if r["cuda"]["extrapolated"] or r["numpy"]["extrapolated"] else ""
        what = "sentiment trainer, SST-2 train + GloVe-50" if kind == "real" else "synthetic SST-2-sized data"
        rows.append((f"HW2 epoch ({what}), batch 10 hidden 32: cuda / numpy",
                     f"{r['cuda']['seconds']:.1f} / {r['numpy']['seconds']:.1f} s ({r['numpy']['seconds'] / r['cuda']['seconds']:.2f}x){note}", ""))
    for i, phase in enumerate(tests or []):
        label = "tests on every backend incl. cuda" if i == 0 else "rest of the test suite (not browser)"
        rows.insert(i, (f"{label}, rc", f"{phase['rc']}: {phase['summary']} ({phase['seconds']:.0f} s)", "rc 0"))

    width = max(len(r[0]) for r in rows)
    print("\n" + "-" * (width + 60))
    for name, value, goal in rows:
        print(f"{name:<{width}}  {value}  {goal}")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"gpu-{started:%Y-%m-%d}.md"
    lines = [f"# GPU check, {started:%Y-%m-%d %H:%M} UTC", "",
             f"Measured on **{gpu}** (CuPy {cp.__version__}, host {platform.node()}) by "
             "`python benchmarks/gpu_check.py`. Kernel times: median of CUDA-event timings; "
             "HW2 rows: wall clock including Python dispatch. The epoch row uses sentiment/trainer.py on the "
             "full SST-2 training set when the data is on the machine, else synthetic data of SST-2's size "
             "and shapes (67,349 examples, 52 tokens x 50 dims).", "",
             "| measurement | result | goal |", "| --- | --- | --- |"]
    lines += [f"| {n} | {v} | {g} |" for n, v, g in rows]
    path.write_text("\n".join(lines) + "\n")
    print(f"\nwrote {path.relative_to(ROOT)}")
    return 0 if all(phase["rc"] == 0 for phase in tests or []) else 1


if __name__ == "__main__":
    sys.exit(main())
