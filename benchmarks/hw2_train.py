"""Whole training runs, ours vs PyTorch eager, side by side: HW2's run and (``--full``) all of SST-2.

HW2 (the default): the first 450 SST-2 training / 100 validation sentences, GloVe 50d, masked mean ->
Linear(50, 32) -> ReLU -> Dropout(0.5) -> Linear(32, 1), BCE, Adam lr 0.01, batch 10, 250 epochs,
validation after every epoch, batches shuffled every epoch (``--order file`` for HW2's file order).
``--full``: the "Full SST-2" preset (all 67,349 / 872 sentences, word vectors trained, hidden 256, word
dropout 0.3, sparse word-vector updates, cosine lr, batch 64, 3 epochs; ``--full-epochs 1`` for a shorter run).

Ours is the trainer the app runs (``sentiment.trainer.SentimentTrainer``: its events, its looks inside
the network, the compiled step by default); PyTorch runs the same network, data, batch order, word
dropout, learning-rate schedule and validation with ``torch.optim.Adam``. The timed part is the whole
training loop; loading and encoding the data is not timed. Both sides run on the same number of BLAS /
intra-op threads (``--threads``, default 1: ``OPENBLAS_NUM_THREADS`` etc. before NumPy loads, and
``torch.set_num_threads``). Times are CPU time of this process (steady on a shared machine; wall time
beside it). The same run also times one eager HW2 step (``benchmarks/hw2_step.py``'s batch-10 table)
and prints every ratio beside its goal, then where our run's time went.

    python benchmarks/hw2_train.py                          # HW2, seed 0: ours compiled + eager, PyTorch
    python benchmarks/hw2_train.py --seeds 0 1 2 3 4        # each seed's best accuracy and time
    python benchmarks/hw2_train.py --full                   # and the full SST-2 preset (3 epochs)
    python benchmarks/hw2_train.py --app                    # and the same run trained as the app does
    python benchmarks/hw2_train.py --epochs 20 --no-torch --no-step
"""
from __future__ import annotations

import os
import sys


def _threads_from_argv(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# BLAS threads are fixed before NumPy loads (the same count goes to PyTorch): like with like
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _threads_from_argv(sys.argv[1:])

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import sentiment.trainer as trainer_module  # noqa: E402
from sentiment.data import load_sst2  # noqa: E402
from sentiment.embeddings import load_glove  # noqa: E402
from sentiment.trainer import PRESETS, EpochEnd, SentimentTrainer, TrainConfig, TrainingFinished  # noqa: E402

NO_TORCH_LINE = ("PyTorch: not installed, so this run has no PyTorch column and no ratio "
                 "(pip install -r requirements-reference.txt adds the CPU reference)")

#: (what, goal): ours / PyTorch eager in the same run
GOALS = {"HW2 run": 0.5, "full SST-2 run": 0.5, "eager step (batch 10)": 0.5}


def hw2_config(seed: int, epochs: int = 250, order: str = "shuffled", step: str = "auto") -> TrainConfig:
    """The benchmark's HW2 setting (the app's HW2 preset; ``order="file"``: HW2's fixed batch order)."""
    return PRESETS["hw2"].train_config(seed=seed, epochs=epochs, shuffle=order == "shuffled", step=step)


def full_config(seed: int, epochs: int) -> TrainConfig:
    """The "Full SST-2" preset for ``epochs`` epochs (its cosine schedule spans those epochs)."""
    return PRESETS["full"].train_config(seed=seed, epochs=epochs, eval_every=0, sparse_embeddings=True)


class _Timer:
    """Accumulates the CPU time of calls to a wrapped callable (a few Python calls per training step)."""

    def __init__(self):
        self.seconds, self.calls = 0.0, 0

    def wrap(self, fn):
        def timed(*a, **k):
            t0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.process_time() - t0
                self.calls += 1
        return timed


def _instrument(trainer: SentimentTrainer) -> dict[str, _Timer]:
    """Timers around the parts of a training run (instance attributes shadow the methods)."""
    t = {name: _Timer() for name in ("batching", "step", "traces", "update", "rows", "validation", "looks")}
    trainer.batch_inputs = t["batching"].wrap(trainer.batch_inputs)
    if trainer.compiled:
        trainer._step._capture = t["traces"].wrap(trainer._step._capture)
    trainer._step = t["step"].wrap(trainer._step)
    trainer.optimizer.step = t["update"].wrap(trainer.optimizer.step)
    if trainer._table_optimizer is not None:
        trainer._table_optimizer.step = t["update"].wrap(trainer._table_optimizer.step)
        if hasattr(trainer._table_optimizer, "step_rows"):
            trainer._table_optimizer.step_rows = t["update"].wrap(trainer._table_optimizer.step_rows)
    trainer.evaluate = t["validation"].wrap(trainer.evaluate)
    trainer.relu_activity = t["looks"].wrap(trainer.relu_activity)
    return t


def run_ours(train, val, glove, cfg: TrainConfig) -> dict:
    trainer = SentimentTrainer(train, val, glove, cfg)  # encoding the data happens here, untimed
    timers = _instrument(trainer)
    row_sums = trainer_module.row_sums
    trainer_module.row_sums = timers["rows"].wrap(row_sums)  # the sparse word vectors' gradient rows
    c0, w0 = time.process_time(), time.perf_counter()
    last = None
    try:
        for ev in trainer.events():
            if isinstance(ev, (EpochEnd, TrainingFinished)):
                last = ev
    finally:
        trainer_module.row_sums = row_sums
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    assert isinstance(last, TrainingFinished) and last.status == "completed", last
    steps = trainer._steps_done
    mode = "compiled" if trainer.compiled else "eager"
    profile = {
        "training step, forward + backward" + (" (replayed)" if trainer.compiled else ""):
            timers["step"].seconds - timers["traces"].seconds,
        f"traces ({timers['traces'].calls} batch shapes, each traced once)": timers["traces"].seconds,
        "optimizer updates": timers["update"].seconds,
        "word-vector gradient rows (sparse)": timers["rows"].seconds,
        "batching (slices of the padded id array)": timers["batching"].seconds,
        f"validation ({timers['validation'].calls} passes, one batch each)": timers["validation"].seconds,
        f"inside looks ({timers['looks'].calls} probes)": timers["looks"].seconds,
    }
    profile["the rest: loop, events, loss and accuracy read-back"] = cpu - sum(profile.values())
    if not trainer.compiled:
        profile.pop(next(k for k in profile if k.startswith("traces")))
    if not timers["rows"].calls:
        profile.pop("word-vector gradient rows (sparse)")
    return {"impl": f"ours {mode} ({cfg.backend}, {cfg.dtype})", "cpu": cpu, "wall": wall, "steps": steps,
            "examples_per_s": steps * cfg.batch_size / wall if wall else float("nan"),
            # what the command line prints: examples per second of training (looks and pauses excluded)
            "training_examples_per_s": steps * cfg.batch_size / last.elapsed,
            "best_val_accuracy": last.best_val_accuracy, "best_epoch": last.best_epoch, "profile": profile}


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_app(train, val, glove, cfg: TrainConfig) -> dict:
    """The same run as the app trains it: a TrainingRun in a worker process (idle scheduling class), polled
    twice a second as the page does; the examples/s the page shows, and the worker's CPU time."""
    from explorer.sentiment_training.runner import TrainingPool, TrainingRun
    run = TrainingRun(SentimentTrainer(train, val, glove, cfg), pool=TrainingPool(max_running=1)).start()
    shown, cpu = [], None
    while not run.join(0.5):
        snap = run.snapshot()
        if snap.examples_per_s and snap.last_batch is not None:
            shown.append(snap.examples_per_s)
        if run.pid is not None:
            cpu = _cpu_seconds(run.pid) or cpu
    snap = run.snapshot()
    assert snap.finished is not None and snap.finished.status == "completed", snap.finished
    seen = snap.last_batch.examples_seen
    return {"shown_last": shown[-1] if shown else None,
            "shown_median": float(np.median(shown[len(shown) // 2:])) if shown else None,
            "training_examples_per_s": seen / snap.finished.elapsed, "worker_cpu": cpu, "polls": len(shown)}


def run_torch(train, val, glove, cfg: TrainConfig, threads: int, bag: bool = False) -> dict | None:
    """The same run in PyTorch eager: same batches (order, padding, word dropout), same lr per step.

    ``bag``: the sentence vectors by ``embedding_bag`` (sums of the real words' vectors, no padded
    (B, L, D) tensor: what our sparse mode does) instead of HW2's embedding, mask and mean."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    # our trainer, untimed, for the encoded ids, the shuffling and word-dropout generators and lr_at
    ref = SentimentTrainer(train, val, glove, cfg)
    dt = torch.float64 if cfg.dtype == "float64" else torch.float32
    table = torch.tensor(ref.vocabulary.table, dtype=dt, requires_grad=cfg.train_embeddings)
    sparse = cfg.train_embeddings and cfg.sparse_embeddings  # a sparse gradient for SparseAdam, as ours
    enc_tr, enc_va = ref.encoded_train, ref.encoded_val

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(glove.dim, cfg.hidden, dtype=dt)
            self.drop = torch.nn.Dropout(cfg.dropout)
            self.fc2 = torch.nn.Linear(cfg.hidden, 1, dtype=dt)

        def forward(self, ids):
            mask = (ids != 0).to(dt)
            if bag:
                pooled = torch.nn.functional.embedding_bag(ids, table, mode="sum", sparse=sparse, padding_idx=0)
                pooled = pooled / mask.sum(1, keepdim=True)
            else:
                emb = torch.nn.functional.embedding(ids, table, sparse=sparse)
                pooled = (emb * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.fc2(self.drop(torch.relu(self.fc1(pooled)))).reshape(-1)

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    table_opt = ((torch.optim.SparseAdam if sparse else torch.optim.Adam)([table], lr=cfg.lr)
                 if cfg.train_embeddings else None)
    n, bs = len(enc_tr), cfg.batch_size
    n_batches = math.ceil(n / bs)
    labels = torch.tensor(enc_tr.labels, dtype=dt)
    fixed = None
    if not cfg.shuffle and not cfg.word_dropout:  # the same batches every epoch: built once
        fixed = [(torch.from_numpy(enc_tr.batch_ids(np.arange(s, min(s + bs, n)))), labels[s:s + bs])
                 for s in range(0, n, bs)]
    val_ids = torch.from_numpy(enc_va.batch_ids(np.arange(len(enc_va))))
    val_y = torch.tensor(enc_va.labels)
    best, best_epoch, step_no = 0.0, 0, 0
    c0, w0 = time.process_time(), time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        order = ref._shuffle_rng.permutation(n) if cfg.shuffle else np.arange(n)
        net.train()
        for b in range(n_batches):
            if fixed is not None:
                ids, y = fixed[b]
            else:
                idx = order[b * bs:(b + 1) * bs]
                ids = enc_tr.batch_ids(idx)
                if cfg.word_dropout:
                    ids = ref._drop_words(ids)
                ids, y = torch.from_numpy(ids), labels[idx]
            lr = ref.lr_at(step_no)
            for o in (opt, table_opt):
                if o is not None:
                    o.zero_grad()
                    for group in o.param_groups:
                        group["lr"] = lr
            z = net(ids)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
            loss.backward()
            opt.step()
            if table_opt is not None:
                table_opt.step()
            step_no += 1
            _ = loss.item(), int(((z.detach() > 0) == y.bool()).sum())  # what our trainer reads back per batch
        net.eval()
        with torch.no_grad():
            acc = float(((net(val_ids) > 0).long() == val_y).double().mean())
        if acc > best:
            best, best_epoch = acc, epoch
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"impl": f"PyTorch {torch.__version__} eager (CPU, {threads} thread{'s' if threads > 1 else ''})"
                    + (", embedding_bag" if bag else ""),
            "cpu": cpu, "wall": wall, "steps": step_no, "examples_per_s": step_no * bs / wall,
            "best_val_accuracy": best, "best_epoch": best_epoch}


def _row(r: dict, torch_r: dict | None) -> str:
    ratio = f"{r['cpu'] / torch_r['cpu']:6.2f}x" if torch_r is not None else "      -"
    return (f"  {r['impl']:<44} {r['cpu']:8.2f} s CPU {r['wall']:8.2f} s wall  {ratio}   "
            f"best validation {r['best_val_accuracy']:.1%} (epoch {r['best_epoch']})")


def _report_profile(r: dict) -> None:
    print(f"\n  where {r['impl']}'s {r['cpu']:.2f} s CPU went ({r['steps']} steps):")
    for name, s in r["profile"].items():
        print(f"    {name:<55} {s:7.2f} s  {s / r['cpu']:6.1%}  {s / r['steps'] * 1e6:8.1f} µs/step")


def _goal_line(name: str, ratio: float | None) -> str:
    goal = GOALS[name]
    if ratio is None:
        return f"  {name:<24} not measured (no PyTorch)"
    return f"  {name:<24} {ratio:5.2f}x PyTorch eager   goal <= {goal:.1f}x: {'met' if ratio <= goal else 'NOT met'}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=250, help="HW2 epochs (250)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--order", choices=["shuffled", "file"], default="shuffled",
                   help="HW2 batch order: shuffled every epoch (the default, the app's HW2 preset) or file order")
    p.add_argument("--dtype", default="float64")
    p.add_argument("--full", action="store_true", help="also the full SST-2 preset")
    p.add_argument("--full-epochs", type=int, default=3, help="epochs of the full run (3, the preset's)")
    p.add_argument("--no-eager", action="store_true", help="skip our eager HW2 run (seed 0)")
    p.add_argument("--no-step", action="store_true", help="skip timing one eager step (hw2_step.py)")
    p.add_argument("--threads", type=int, default=1, help="BLAS / PyTorch threads for both sides (1)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--app", action="store_true",
                   help="also train seed 0's HW2 run the app's way (worker process) and compare its examples/s")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', '?')}, "
          f"PyTorch threads {args.threads}; times are CPU seconds of this process")
    train_all, val_all = load_sst2()
    glove = load_glove()
    train, val = train_all.head(450), val_all.head(100)
    results: dict = {"hw2": [], "full": [], "step": None, "load_average": load}
    torch_missing = False
    ratios: dict[str, float | None] = {}

    print(f"\n## HW2: 450 / 100 sentences, batch 10, {args.epochs} epochs, {args.order} batches "
          f"({args.epochs * 45} steps), validation every epoch")
    print(f"  {'run':<44} {'time':>14} {'':>15}  vs PyTorch")
    hw2_ratios = []
    for seed in args.seeds:
        cfg = hw2_config(seed, args.epochs, args.order)
        print(f" seed {seed}")
        ours = run_ours(train, val, glove, replace(cfg, dtype=args.dtype))
        torch_r = None
        if not args.no_torch:
            torch_r = run_torch(train, val, glove, replace(cfg, dtype=args.dtype), args.threads)
            torch_missing = torch_r is None
        rows = [ours]
        if seed == args.seeds[0] and not args.no_eager:
            rows.append(run_ours(train, val, glove, replace(cfg, dtype=args.dtype, step="eager")))
        for r in rows:
            print(_row(r, torch_r), flush=True)
        if torch_r is not None:
            print(_row(torch_r, torch_r))
            hw2_ratios.append(ours["cpu"] / torch_r["cpu"])
        results["hw2"].append({"seed": seed, "runs": rows + ([torch_r] if torch_r else [])})
    first = results["hw2"][0]["runs"][0]
    ratios["HW2 run"] = float(np.median(hw2_ratios)) if hw2_ratios else None
    accs = [e["runs"][0]["best_val_accuracy"] for e in results["hw2"]]
    if len(args.seeds) > 1:
        print(f"  ours, best validation accuracy per seed: "
              + ", ".join(f"{s}: {a:.0%}" for s, a in zip(args.seeds, accs))
              + f"; >= 75% on {sum(a >= 0.75 for a in accs)} of {len(accs)}")
        if hw2_ratios:
            print(f"  ours / PyTorch per seed: " + ", ".join(f"{x:.2f}x" for x in hw2_ratios)
                  + f" (median {ratios['HW2 run']:.2f}x)")
    _report_profile(first)

    if args.app:
        app = run_app(train, val, glove, replace(hw2_config(args.seeds[0], args.epochs, args.order), dtype=args.dtype))
        here = first["training_examples_per_s"]
        results["app"] = app
        print(f"\n## The app's way (a worker process, as page 11, Sentiment training, runs it), seed {args.seeds[0]}")
        print(f"  command line (this process): {here:,.0f} examples/s of training")
        if app["shown_last"]:
            print(f"  the page showed {app['shown_median']:,.0f} examples/s (median of the run's second half of "
                  f"{app['polls']} polls; last {app['shown_last']:,.0f}): {app['shown_median'] / here:.2f}x the "
                  f"command line's; the worker's average {app['training_examples_per_s']:,.0f} examples/s"
                  + (f", {app['worker_cpu']:.2f} s CPU" if app["worker_cpu"] else ""))
        if app["worker_cpu"]:
            examples = first["steps"] * hw2_config(0).batch_size
            here_cpu, there_cpu = examples / first["cpu"], examples / app["worker_cpu"]
            print(f"  per CPU second: command line {here_cpu:,.0f} examples, worker {there_cpu:,.0f} "
                  f"({there_cpu / here_cpu:.2f}x); the worker runs in the idle scheduling class, so on a busy "
                  "machine its wall-clock speed is what the other processes leave it")

    if args.full:
        cfg = replace(full_config(args.seeds[0], args.full_epochs), dtype=args.dtype)
        steps = math.ceil(len(train_all) / cfg.batch_size) * cfg.epochs
        print(f"\n## Full SST-2: {len(train_all)} / {len(val_all)} sentences, the preset's settings, "
              f"{cfg.epochs} epoch(s) ({steps} steps of batch {cfg.batch_size}), validation every epoch")
        ours = run_ours(train_all, val_all, glove, cfg)
        torch_r = None if args.no_torch else run_torch(train_all, val_all, glove, cfg, args.threads)
        print(_row(ours, torch_r))
        bag_r = None
        if torch_r is not None:
            print(_row(torch_r, torch_r))
            ratios["full SST-2 run"] = ours["cpu"] / torch_r["cpu"]
            # ours sums each sentence's word vectors without the padded (B, L, D) tensor; PyTorch's way to do
            # that is embedding_bag: the same run written so, as a second reference (the goal is against the above)
            bag_r = run_torch(train_all, val_all, glove, cfg, args.threads, bag=True)
            print(_row(bag_r, torch_r) + f"   ours / this: {ours['cpu'] / bag_r['cpu']:.2f}x")
        results["full"] = [ours] + ([torch_r, bag_r] if torch_r else [])
        _report_profile(ours)

    if not args.no_step:
        import benchmarks.hw2_step as hs
        step = hs.bench_size(10, 32, 7, 200)
        results["step"] = step
        print("\n## One HW2 step, batch 10 (benchmarks/hw2_step.py's workload, µs CPU)")
        for name, us in step.items():
            rel = f"{us / step[hs.TORCH]:6.2f}x PyTorch" if hs.TORCH in step else ""
            print(f"  {name:<36} {us:8.1f} µs  {rel}")
        ratios["eager step (batch 10)"] = step[hs.EAGER] / step[hs.TORCH] if hs.TORCH in step else None

    if args.no_torch:
        print("\nPyTorch: skipped (--no-torch), so this run has no PyTorch column and no ratio")
    elif torch_missing:
        print("\n" + NO_TORCH_LINE)
    else:
        print("\n## Goals (ours / PyTorch eager, CPU time, same run)")
        for name in GOALS:
            if name in ratios:
                print(_goal_line(name, ratios[name]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
