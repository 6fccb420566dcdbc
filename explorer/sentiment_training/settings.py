"""The Sentiment training page's logic (no Streamlit): its settings and their defaults, the one-click presets,
a run started from the settings, the user's own data read from the upload boxes, HW2's target.

The page holds the widgets; everything it decides is here, with unit tests (tests/test_sentiment_settings.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import engine
from sentiment.data import (MAX_SENTENCE_CHARS, MAX_USER_BYTES, MAX_USER_ROWS, SST2_SIZES, DataFormatError,
                            DataTooLarge, SST2NotFound)
from sentiment.embeddings import GloveNotFound, load_glove
from sentiment.model import SentimentNet
from sentiment.trainer import LR_SCHEDULES, PRESETS, SentimentTrainer, TrainConfig, validation_interval

from ..kit.budget import ServerBusy, check_server_memory
from ..kit.pages import available_backends
from .runner import TrainingRefused, TrainingRun
from .views import HW2_SIZES, TARGET_ACCURACY, DataChoice, OwnData, load_choice, own_data, too_large

__all__ = ["DEFAULTS", "SETTINGS", "RUN_FIELDS", "EXAMPLE_SENTENCE", "ONE_CLICK", "MAX_N_TRAIN", "MAX_N_VAL",
           "LR_SCHEDULES", "PRESETS", "MAX_SENTENCE_CHARS", "MAX_USER_BYTES", "MAX_USER_ROWS", "RunRefused",
           "OwnInput", "available_backends", "train_config", "one_click_values", "dataset_label", "new_trainer", "start_run",
           "read_own_input", "hw2_target", "untrained_network"]

MAX_N_TRAIN, MAX_N_VAL = SST2_SIZES      # the subset boxes go up to all of SST-2

DEFAULTS = {"dataset": "builtin", "n_train": 450, "n_val": 100, "epochs": 30, "batch_size": 10, "lr": 0.01,
            "optimizer": "adam", "hidden": 32, "dropout": 0.5, "seed": 0, "backend": "numpy", "shuffle": True,
            "weight_decay": 0.0, "lr_schedule": "constant", "word_dropout": 0.0, "train_embeddings": False}
# the hyper-parameters a one-click preset sets (TrainConfig's fields of the same names)
SETTINGS = ("epochs", "batch_size", "lr", "optimizer", "hidden", "dropout", "seed", "shuffle", "weight_decay",
            "lr_schedule", "word_dropout", "train_embeddings")
RUN_FIELDS = ("dataset", "n_train", "n_val", "backend") + SETTINGS   # what a run starts from

EXAMPLE_SENTENCE = "a gorgeous , witty film that is never boring"

# one click: the settings of a preset, then training starts (label, dataset, (n_train, n_val), config)
ONE_CLICK = {
    "hw2": (PRESETS["hw2"].label, "subset", (PRESETS["hw2"].n_train, PRESETS["hw2"].n_val), PRESETS["hw2"].config),
    "full": (PRESETS["full"].label, "full", HW2_SIZES, PRESETS["full"].config),
    "relu": ("HW2 with lr 0.25: watch the ReLUs die", "subset", (PRESETS["hw2"].n_train, PRESETS["hw2"].n_val),
             PRESETS["hw2"].train_config(lr=0.25)),
}


class RunRefused(Exception):
    """A run could not start; the message is for the user (``Training refused: ...`` or ``<Error>: ...``)."""


def train_config(values: Mapping[str, Any], n_train: int) -> TrainConfig:
    """The :class:`TrainConfig` of the page's settings (``values``: :data:`RUN_FIELDS` by name), validating
    every ``n_train`` / batch-size dependent choice (how often to validate).

    Raises:
        ValueError: a setting TrainConfig refuses.
    """
    batch = int(values["batch_size"])
    if batch < 1:   # before validation_interval divides by it
        raise ValueError(f"the batch size must be at least 1, got {batch}")
    return TrainConfig(epochs=int(values["epochs"]), batch_size=batch, lr=float(values["lr"]),
                       optimizer=str(values["optimizer"]), hidden=int(values["hidden"]),
                       dropout=float(values["dropout"]), seed=int(values["seed"]), backend=str(values["backend"]),
                       shuffle=bool(values["shuffle"]), weight_decay=float(values["weight_decay"]),
                       lr_schedule=str(values["lr_schedule"]), word_dropout=float(values["word_dropout"]),
                       train_embeddings=bool(values["train_embeddings"]),
                       sparse_embeddings=bool(values["train_embeddings"]),
                       eval_every=validation_interval(n_train, batch))


def one_click_values(key: str) -> dict[str, Any]:
    """The settings a one-click preset puts in the boxes (dataset, sizes, every :data:`SETTINGS`, numpy)."""
    _, dataset, (n_train, n_val), cfg = ONE_CLICK[key]
    return {"dataset": dataset, "n_train": n_train, "n_val": n_val, "backend": "numpy",
            **{name: getattr(cfg, name) for name in SETTINGS}}


def dataset_label(choice: DataChoice) -> str:
    """How the compared runs name their data: ``SST-2 450/100``, ``built-in``, ``SST-2 full``, ``your data``."""
    if choice.kind == "subset":
        return f"SST-2 {choice.n_train}/{choice.n_val}"
    return {"builtin": "built-in", "full": "SST-2 full", "own": "your data"}[choice.kind]


def new_trainer(values: Mapping[str, Any], own: OwnData | None = None) -> tuple[SentimentTrainer, DataChoice]:
    """A trainer for the page's settings (data loaded, network built; nothing trained yet).

    Raises:
        RunRefused: missing data (SST-2, GloVe, no data of your own), a bad file or setting, a backend this
            server lacks; the message names the error.
    """
    try:
        choice = DataChoice(str(values["dataset"]), int(values["n_train"]), int(values["n_val"]))
        glove = load_glove()
        train, val = load_choice(choice, own=own)
        return SentimentTrainer(train, val, glove, train_config(values, len(train))), choice
    except (SST2NotFound, GloveNotFound, DataFormatError, ValueError, engine.BackendUnavailable) as e:
        raise RunRefused(f"{type(e).__name__}: {e}") from e


def start_run(values: Mapping[str, Any], own: OwnData | None = None, *, keep_alive: Callable[[], bool] | None = None,
              owner: str | None = None) -> tuple[TrainingRun, str]:
    """Start training the page's settings in a worker process (or queue it).

    Returns:
        (the run, its data's :func:`dataset_label`).

    Raises:
        RunRefused: the server is short of memory or runs as many trainings as it allows, or
            :func:`new_trainer` refused.
    """
    try:
        check_server_memory("a new training run")   # near the replica's memory limit: no new run
    except ServerBusy as e:
        raise RunRefused(f"Training refused: {e}") from e
    trainer, choice = new_trainer(values, own)
    try:
        run = TrainingRun(trainer, keep_alive=keep_alive, owner=owner).start()
    except TrainingRefused as e:
        raise RunRefused(f"Training refused: {e}") from e
    return run, dataset_label(choice)


@dataclass(frozen=True)
class OwnInput:
    """What the own-data boxes gave: the data (None when nothing usable), or why it was refused, and whether
    the pasted text must be emptied (refused for its size: it is not kept in the session)."""

    own: OwnData | None = None
    error: str | None = None
    clear_paste: bool = False


def read_own_input(train_file: tuple[str, bytes] | None, val_file: tuple[str, bytes] | None,
                   pasted: str | None) -> OwnInput:
    """Parse the user's data: an uploaded training file (``(name, content)``) wins over pasted text; the
    validation file is optional. Limits are :func:`own_data`'s (``sentiment.data.parse_labelled``: bytes,
    rows, characters per sentence); pasted text beyond ``MAX_USER_BYTES`` characters is refused unread."""
    why = too_large(pasted, MAX_USER_BYTES)
    if why is not None:   # refused text is never kept: the box is emptied (it held 20 MB per session before)
        return OwnInput(error=f"pasted text: {why}; the box was emptied (upload a file of at most "
                              f"{MAX_USER_BYTES // 1_000_000} MB instead)", clear_paste=True)
    if train_file is None and not (pasted or "").strip():
        return OwnInput()
    val_name, val = val_file if val_file is not None else ("validation file", None)
    name, train = train_file if train_file is not None else ("pasted text", pasted)
    try:
        return OwnInput(own=own_data(train, name, val, val_name))
    except DataTooLarge as e:   # refused for its size: a pasted text is not kept either
        pasted_refused = train_file is None
        return OwnInput(error=str(e) + ("; the box was emptied" if pasted_refused else ""), clear_paste=pasted_refused)
    except DataFormatError as e:
        return OwnInput(error=str(e))


def hw2_target(run_dataset: str, trainer: SentimentTrainer) -> float | None:
    """HW2's 75% target belongs to HW2's subset (the first 450 / 100 sentences of SST-2) only."""
    n_train = len(trainer.train_data)
    n_val = len(trainer.val_data) if trainer.val_data is not None else 0
    return TARGET_ACCURACY if run_dataset == "SST-2 450/100" and (n_train, n_val) == HW2_SIZES else None


def untrained_network(hidden: int, dropout: float) -> SentimentNet:
    """The network the page draws before a run starts (the settings' sizes)."""
    return SentimentNet(hidden=int(hidden), dropout=float(dropout))
