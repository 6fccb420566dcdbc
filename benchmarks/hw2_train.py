"""The full HW2 training run, ours vs PyTorch eager, side by side.

Same data (first 450 SST-2 training / first 100 validation sentences, GloVe 50d), same network
(masked mean -> Linear(50,32) -> ReLU -> Dropout(0.5) -> Linear(32,1)), same loss (BCE from
logits), Adam, batch 10, 250 epochs, validation after every epoch. The timed part is the whole
training loop (every step, the per-epoch validation); loading the data is not timed.

    python benchmarks/hw2_train.py                   # ours (numpy) + PyTorch when installed
    python benchmarks/hw2_train.py --epochs 50 --backends numpy python
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from sentiment.data import load_sst2
from sentiment.embeddings import load_glove
from sentiment.trainer import EpochEnd, SentimentTrainer, TrainConfig, TrainingFinished

NO_TORCH_LINE = ("PyTorch: not installed, so this run has no PyTorch column and no ratio "
                 "(pip install -r requirements-reference.txt adds the CPU reference)")


def run_ours(train, val, glove, cfg: TrainConfig) -> dict:
    trainer = SentimentTrainer(train, val, glove, cfg)  # encoding the data happens here, untimed
    t0 = time.perf_counter()
    last = None
    for ev in trainer.events():
        if isinstance(ev, (EpochEnd, TrainingFinished)):
            last = ev
    seconds = time.perf_counter() - t0
    assert isinstance(last, TrainingFinished) and last.status == "completed", last
    return {"impl": f"ours ({cfg.backend}, {cfg.dtype})", "seconds": seconds,
            "best_val_accuracy": last.best_val_accuracy, "best_epoch": last.best_epoch}


def run_torch(train, val, glove, cfg: TrainConfig, threads: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    ref = SentimentTrainer(train, val, glove, TrainConfig(epochs=1, seed=cfg.seed))  # for the encoded ids only
    dt = torch.float64 if cfg.dtype == "float64" else torch.float32
    table = torch.tensor(ref.vocabulary.table, dtype=dt)
    enc_tr, enc_va = ref.encoded_train, ref.encoded_val

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(glove.dim, cfg.hidden, dtype=dt)
            self.drop = torch.nn.Dropout(cfg.dropout)
            self.fc2 = torch.nn.Linear(cfg.hidden, 1, dtype=dt)

        def forward(self, ids):
            mask = (ids != 0).to(dt)
            emb = torch.nn.functional.embedding(ids, table)
            pooled = (emb * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.fc2(self.drop(torch.relu(self.fc1(pooled)))).reshape(-1)

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    n = len(enc_tr)
    batches = []
    for start in range(0, n, cfg.batch_size):
        idx = np.arange(start, min(start + cfg.batch_size, n))
        batches.append((torch.from_numpy(enc_tr.batch_ids(idx)), torch.tensor(enc_tr.labels[idx], dtype=dt)))
    val_ids = torch.from_numpy(enc_va.batch_ids(np.arange(len(enc_va))))
    val_y = torch.tensor(enc_va.labels)
    best, best_epoch = 0.0, 0
    t0 = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        net.train()
        for ids, y in batches:
            opt.zero_grad()
            z = net(ids)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
            loss.backward()
            opt.step()
            _ = loss.item(), (z.detach() > 0)  # what our trainer reads back per batch
        net.eval()
        with torch.no_grad():
            acc = float(((net(val_ids) > 0).long() == val_y).double().mean())
        if acc > best:
            best, best_epoch = acc, epoch
    seconds = time.perf_counter() - t0
    return {"impl": f"PyTorch {torch.__version__} eager (CPU, {threads} thread{'s' if threads > 1 else ''})",
            "seconds": seconds, "best_val_accuracy": best, "best_epoch": best_epoch}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=250)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--backends", nargs="+", default=["numpy"])
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)

    train, val = load_sst2()
    train, val = train.head(450), val.head(100)
    glove = load_glove()
    results = []
    for backend in args.backends:
        cfg = TrainConfig(epochs=args.epochs, lr=args.lr, seed=args.seed, backend=backend, dtype=args.dtype)
        results.append(run_ours(train, val, glove, cfg))
        print(f"{results[-1]['impl']:<45} {results[-1]['seconds']:8.2f} s   best validation accuracy "
              f"{results[-1]['best_val_accuracy']:.0%} (epoch {results[-1]['best_epoch']})", flush=True)
    if args.no_torch:
        print("PyTorch: skipped (--no-torch), so this run has no PyTorch column and no ratio")
    else:
        cfg = TrainConfig(epochs=args.epochs, lr=args.lr, seed=args.seed, dtype=args.dtype)
        r = run_torch(train, val, glove, cfg, args.torch_threads)
        if r is None:
            print(NO_TORCH_LINE)
        else:
            results.append(r)
            print(f"{r['impl']:<45} {r['seconds']:8.2f} s   best validation accuracy "
                  f"{r['best_val_accuracy']:.0%} (epoch {r['best_epoch']})")
    ours = [r for r in results if r["impl"].startswith("ours (numpy")]
    torch_r = [r for r in results if r["impl"].startswith("PyTorch")]
    if ours and torch_r:
        print(f"ours (numpy) / PyTorch eager = {ours[0]['seconds'] / torch_r[0]['seconds']:.2f}x "
              f"({args.epochs} epochs x 45 steps of batch 10; {platform.processor() or platform.machine()})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
