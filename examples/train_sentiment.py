"""Train HW2's sentiment network on SST-2 with GloVe vectors, using our engine.

Default: HW2's setting (first 450 training / first 100 validation sentences, batch 10, Adam,
250 epochs) on the NumPy backend, with lr 0.01 instead of HW2's 0.25 (which leaves every hidden
ReLU dead here; see sentiment.trainer.TrainConfig). ``--full`` trains on all 67,349 training
sentences and validates on all 872.

    python examples/train_sentiment.py
    python examples/train_sentiment.py --full --epochs 10 --batch-size 64 --shuffle
    python examples/train_sentiment.py --dataset builtin --epochs 50
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


from sentiment.data import builtin_split, load_sst2  # noqa: E402
from sentiment.embeddings import load_glove  # noqa: E402
from sentiment.trainer import (EpochEnd, SentimentTrainer, TrainConfig, TrainingFinished,  # noqa: E402
                               TrainingStarted, hw2_log_lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=["sst2", "builtin"], default="sst2")
    p.add_argument("--full", action="store_true", help="all 67,349 training and all 872 validation sentences")
    p.add_argument("--train-size", type=int, default=450)
    p.add_argument("--val-size", type=int, default=100)
    p.add_argument("--epochs", type=int, default=250)
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.01,
                   help="HW2 used 0.25; with Adam it kills the ReLU layer here (see TrainConfig)")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--shuffle", action="store_true", help="shuffle the training set every epoch (HW2 does not)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="numpy")
    p.add_argument("--dtype", default="float64")
    p.add_argument("--data-dir", default=None, help="folder with SST-2 train.tsv and dev.tsv")
    p.add_argument("--download", action="store_true", help="download GLUE SST-2 when it is not found")
    p.add_argument("--glove", default=None, help="a glove.*.txt file or a .npy+parquet folder")
    p.add_argument("--quiet", action="store_true", help="print only the last epoch's lines")
    args = p.parse_args(argv)

    if args.dataset == "builtin":
        train, val = builtin_split()
    else:
        train, val = load_sst2(args.data_dir, download=args.download)
        if not args.full:
            train, val = train.head(args.train_size), val.head(args.val_size)
    glove = load_glove(args.glove)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, optimizer=args.optimizer,
                         hidden=args.hidden, dropout=args.dropout, seed=args.seed, backend=args.backend,
                         dtype=args.dtype, shuffle=args.shuffle)
    trainer = SentimentTrainer(train, val, glove, config)
    t0 = time.perf_counter()
    last_epoch = None
    for ev in trainer.events():
        if isinstance(ev, TrainingStarted):
            print(f"{train.source}: {ev.n_train} training, {ev.n_val} validation sentences; GloVe: "
                  f"{ev.glove_source}; unknown words: {len(ev.unknown_words)} distinct "
                  f"({ev.unknown_train_tokens} train / {ev.unknown_val_tokens} validation tokens)")
            print(f"network: {ev.n_params} parameters; {config}")
        elif isinstance(ev, EpochEnd):
            last_epoch = ev
            if not args.quiet:
                print("\n".join(hw2_log_lines(ev)))
        elif isinstance(ev, TrainingFinished):
            if args.quiet and last_epoch is not None:
                print("\n".join(hw2_log_lines(last_epoch)))
            best = f"{ev.best_val_accuracy:.2%} (epoch {ev.best_epoch})" if ev.best_val_accuracy is not None else "-"
            print(f"{ev.status}: {ev.epochs_done} epochs in {time.perf_counter() - t0:.2f} s "
                  f"(training {ev.elapsed:.2f} s); best validation accuracy {best}")
            if ev.status == "error":
                print(ev.error, file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
