"""Peak memory of one training step: our engine (eager) against PyTorch eager, same network, same run.

Two steps, float32, batch large enough that activations, not weights, fill memory:
  mlp  the notes' network: L x (Linear(W) + ReLU) -> mean -> backward -> SGD (default 10 x 256, batch 4096)
  hw2  HW2's step (benchmarks/hw2_step.py: mean of word vectors -> Linear -> ReLU -> Dropout -> Linear ->
       sigmoid -> BCE -> backward -> Adam) at batch 512, hidden 1024

Each implementation runs in a child process of its own (a fresh interpreter: no memory of the other's).
There, after two warm-up steps (allocator pools, Adam's state, lazy imports), the peak resident memory
is reset (Linux: ``/proc/self/clear_refs``) and one more step runs; its peak is VmHWM minus the
resident memory just before it: every byte the step touched, whoever allocated it (glibc's mmap
threshold is fixed at 128 KiB in both children, so a freed buffer leaves the resident set). Best (lowest) of
``--repeats`` steps. For the MLP the script also prints what each framework keeps for backward after
the forward pass, read from its graph: the engine's ``kept_bytes`` (distinct buffers its ops save),
PyTorch's saved tensors (``torch.autograd.graph.saved_tensors_hooks``, distinct storages), both
without the weights and the input.

    python benchmarks/step_memory.py             # both steps, 3 measured steps each
    python benchmarks/step_memory.py --quick     # one measured step each
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ENGINE, TORCH = "engine eager (numpy backend)", "PyTorch eager CPU"
MLP = {"depth": 10, "width": 256, "batch": 4096}
HW2 = {"batch": 512, "hidden": 1024}
GOAL = 1.0   # a training step's peak memory at most PyTorch's


def _status(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:   # "5": reset the peak resident set size (VmHWM)
        f.write("5")


def peak_of(step, repeats: int) -> int:
    """Bytes the step's peak resident memory rose above the memory before it (lowest of ``repeats``)."""
    step()
    step()
    best = None
    for _ in range(repeats):
        gc.collect()
        before = _status("VmRSS")
        _reset_peak()
        step()
        rise = _status("VmHWM") - before
        best = rise if best is None else min(best, rise)
    return best


# --- the notes' MLP --------------------------------------------------------------------------

def _mlp_arrays(depth: int, width: int, batch: int):
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for _ in range(depth)]
    bs = [np.zeros(width, np.float32) for _ in range(depth)]
    x = rng.standard_normal((batch, width)).astype(np.float32)
    return ws, bs, x


def engine_mlp(depth: int, width: int, batch: int):
    """(step, kept-for-backward bytes after a forward pass) on the engine."""
    import engine
    from engine import optim
    from engine.tensor import kept_bytes
    ws, bs, xa = _mlp_arrays(depth, width, batch)
    params = [engine.tensor(a, requires_grad=True) for pair in zip(ws, bs) for a in pair]
    opt = optim.SGD(params, lr=0.01)
    x = engine.tensor(xa)

    def forward():
        h = x
        for w, b in zip(params[0::2], params[1::2]):
            h = engine.functional.linear(h, w, b).relu()
        return h.mean()

    def step():
        opt.zero_grad()
        loss = forward()
        loss.backward()
        opt.step()

    loss = forward()
    return step, kept_bytes(loss, exclude=[x])


def torch_mlp(depth: int, width: int, batch: int):
    import torch
    torch.set_num_threads(1)
    ws, bs, xa = _mlp_arrays(depth, width, batch)
    params = [torch.tensor(a, requires_grad=True) for pair in zip(ws, bs) for a in pair]
    opt = torch.optim.SGD(params, lr=0.01)
    x = torch.from_numpy(xa)

    def forward():
        h = x
        for w, b in zip(params[0::2], params[1::2]):
            h = torch.relu(torch.nn.functional.linear(h, w, b))
        return h.mean()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        opt.step()

    skip = {p.untyped_storage().data_ptr() for p in params} | {x.untyped_storage().data_ptr()}
    storages: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in skip:
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward()
    del loss
    return step, sum(storages.values())


# --- HW2's step --------------------------------------------------------------------------------

def hw2(kind: str, batch: int, hidden: int):
    from benchmarks.hw2_step import engine_step_fn, init_params, make_data, torch_step_fn
    params = init_params(hidden)
    x, y = make_data(batch)
    if kind == "engine":
        step = engine_step_fn(params)
        import engine
        xt, yt = engine.tensor(x), engine.tensor(y.reshape(-1))
        return lambda: step(xt, yt), None
    tstep, torch = torch_step_fn(params)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    return lambda: tstep(xt, yt), None


def child(kind: str, case: str, sizes: dict, repeats: int) -> dict:
    if case == "mlp":
        step, saved = (engine_mlp if kind == "engine" else torch_mlp)(**sizes)
    else:
        step, saved = hw2(kind, **sizes)
    return {"peak": peak_of(step, repeats), "saved": saved}


def run_child(kind: str, case: str, sizes: dict, repeats: int) -> dict | None:
    cmd = [sys.executable, "-m", "benchmarks.step_memory", "--child", kind, "--case", case,
           "--sizes", json.dumps(sizes), "--repeats", str(repeats)]
    # glibc returns a freed block to the system only if it was mmapped; its threshold grows as big blocks
    # are freed, after which they stay resident and a step's peak would hide in reused memory. A fixed
    # threshold keeps every block over 128 KiB mmapped, for both implementations alike.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"child failed ({kind}, {case})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(title: str, results: dict[str, dict], with_saved: bool) -> None:
    print(f"\n{title}")
    torch_r = results.get(TORCH)
    head = f"{'':32} {'peak rise (MB)':>15} {'vs PyTorch':>11}"
    if with_saved:
        head += f" {'kept for backward (MB)':>23} {'vs PyTorch':>11}"
    print(head)
    for name, r in results.items():
        ratio = f"{r['peak'] / torch_r['peak']:.2f}x" if torch_r else "-"
        line = f"{name:32} {r['peak'] / 1e6:15.1f} {ratio:>11}"
        if with_saved:
            sr = f"{r['saved'] / torch_r['saved']:.2f}x" if torch_r and torch_r["saved"] else "-"
            line += f" {r['saved'] / 1e6:23.1f} {sr:>11}"
        print(line)
    if torch_r and ENGINE in results:
        ratio = results[ENGINE]["peak"] / torch_r["peak"]
        print(f"goal: peak <= {GOAL:.1f}x PyTorch's: {ratio:.2f}x, {'met' if ratio <= GOAL else 'not met'}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one measured step per implementation")
    ap.add_argument("--repeats", type=int, default=3, help="measured steps per implementation (the lowest counts)")
    ap.add_argument("--child", choices=("engine", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--case", choices=("mlp", "hw2"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.case, json.loads(args.sizes), args.repeats)))
        return
    repeats = 1 if args.quick else args.repeats
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    for case, sizes, title in (
            ("mlp", MLP, f"MLP {MLP['depth']} x (Linear({MLP['width']}) + ReLU), batch {MLP['batch']}, float32, SGD"),
            ("hw2", HW2, f"HW2 step, batch {HW2['batch']}, hidden {HW2['hidden']}, float32, Adam")):
        results = {}
        for kind, name in (("engine", ENGINE), ("torch", TORCH)):
            if kind == "torch" and not have_torch:
                continue
            r = run_child(kind, case, sizes, repeats)
            if r is not None:
                results[name] = r
        report(title, results, with_saved=case == "mlp")
    if not have_torch:
        print("\nPyTorch is not installed: the PyTorch rows are missing (pip install torch, CPU build).")


if __name__ == "__main__":
    main()
