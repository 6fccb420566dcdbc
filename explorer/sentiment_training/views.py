"""What the Sentiment training page draws, built without Streamlit: dataset choices, your own data,
figures (curves, the look inside, runs compared), tables, DOT.

Every number here comes from a real run (a :class:`~explorer.sentiment_training.runner.RunSnapshot`
and the events it carries) or the trained model; nothing is re-enacted.
"""
from __future__ import annotations

import functools
import html
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa

from engine.tensor import Tensor, no_grad
from sentiment.data import (MAX_SENTENCE_CHARS, MAX_USER_BYTES, SST2_SIZES, DataFormatError, Dataset, builtin_split,
                            load_sst2, parse_labelled)
from sentiment.trainer import InsideLook, SentimentTrainer

from ..kit.graphviz_layout import GraphvizFailed, GraphvizUnavailable, run_dot
from ..kit.labels import num
from ..student_code.handout import AUTOGRADER_NOTE, autograder_log, training_faq_text  # noqa: F401  (HW2's log lines and FAQ, for the page)
from .runner import LOOK_METRICS, RunSnapshot
from explorer.explain.numbers import count, duration, percent, plain, sci

AUTOGRADER_EPOCHS = 3   # the epochs whose default_log_fn lines the page prints after a run

TARGET_ACCURACY = 0.75
NO_SERVER_GRAPHVIZ = ("Graphviz was not found on the server, so your browser lays this picture out (it may jump "
                      "as the numbers change). `pip install -r requirements.txt` installs graphviz-pure.")
HW2_SIZES = (450, 100)     # HW2's subset: its 75% target belongs to this setting only

DATASETS = {
    "builtin": "Built-in corpus (hand-written, no download)",
    "subset": "SST-2, HW2 subset (first N train / first M validation)",
    "full": f"SST-2, full ({count(SST2_SIZES[0])} train / {count(SST2_SIZES[1])} validation)",
    "own": "Your own data (upload a CSV / TSV file or paste sentences)",
}


@dataclass(frozen=True)
class DataChoice:
    kind: str              # a key of DATASETS
    n_train: int = 450     # for "subset"
    n_val: int = 100       # for "subset"

    def __post_init__(self):
        if self.kind not in DATASETS:
            raise ValueError(f"unknown dataset {self.kind!r}; choose one of {list(DATASETS)}")
        if self.n_train < 1 or self.n_val < 1:
            raise ValueError("training and validation sizes must be at least 1")

    @property
    def is_hw2_subset(self) -> bool:
        """HW2's own setting (first 450 / 100 of SST-2): the only one its 75% target is about."""
        return self.kind == "subset" and (self.n_train, self.n_val) == HW2_SIZES


def load_choice(choice: DataChoice, data_dir=None, own: "OwnData | None" = None) -> tuple[Dataset, Dataset | None]:
    """The (train, validation) datasets of a choice (``own``: the session's uploaded data, for "own").

    Raises:
        SST2NotFound / DataFormatError for the SST-2 choices when the data is missing or broken;
        ValueError for "own" without data.
    """
    if choice.kind == "builtin":
        return builtin_split(60)
    if choice.kind == "own":
        if own is None:
            raise ValueError("no data of your own yet: upload a file or paste sentences, then press Check")
        return own.train, own.val
    train, dev = load_sst2(data_dir)
    if choice.kind == "full":
        return train, dev
    return train.head(choice.n_train), dev.head(choice.n_val)


# --- your own data ----------------------------------------------------------------------

MIN_TRAIN = 4              # fewer sentences than this cannot be trained on meaningfully
HOLD_OUT = 0.2             # without a validation file, this fraction of the training data is held out


@dataclass(frozen=True)
class OwnData:
    """Labelled sentences a user uploaded or pasted: validated, kept in the session only."""

    train: Dataset
    val: Dataset | None
    note: str


def own_data(train: "bytes | str | None", train_name: str, val: "bytes | str | None" = None,
             val_name: str = "validation file", max_bytes: int = MAX_USER_BYTES) -> OwnData:
    """Parse and validate a user's training (and optional validation) data.

    Each is CSV (``sentence,label``) or TSV, one sentence per line, labels 0/1 or negative/positive
    (see :func:`sentiment.data.parse_labelled`). Without validation data, the last 20% of the
    training sentences are held out (when there are at least 10).

    Raises:
        DataFormatError naming the file (or "pasted text") and the line; DataTooLarge beyond ``max_bytes``.
    """
    if train is None or (isinstance(train, (str, bytes)) and not train.strip()):
        raise DataFormatError(train_name, None, "is empty: give at least a few 'sentence,label' lines")
    tr = parse_labelled(train, train_name, max_bytes=max_bytes, need_both_labels=True)
    if len(tr) < MIN_TRAIN:
        raise DataFormatError(train_name, None, f"has {len(tr)} sentences; train on at least {MIN_TRAIN}")
    va = None
    if val is not None and (not isinstance(val, (str, bytes)) or val.strip()):
        va = parse_labelled(val, val_name, max_bytes=max_bytes)
        note = (f"{count(len(tr))} training sentences from {train_name}, {count(len(va))} validation sentences from "
                f"{val_name}")
    elif len(tr) >= 10:
        n_val = max(1, int(round(len(tr) * HOLD_OUT)))
        va = tr[len(tr) - n_val:]
        tr = tr[:len(tr) - n_val]
        note = (f"{count(len(tr))} training sentences from {train_name}; its last {count(n_val)} are held out for "
                "validation (no validation file given)")
    else:
        note = f"{count(len(tr))} training sentences from {train_name}; too few to hold some out: no validation"
    return OwnData(tr, va, note)


# --- progress ------------------------------------------------------------------------


def too_large(text: "str | bytes | None", max_chars: int) -> str | None:
    """Why ``text`` is refused for its length alone (None when it is within ``max_chars`` characters or bytes).

    The pages ask before parsing anything, and then drop the refused text from the session's state: a 20 MB
    paste that was refused used to stay there (5 sessions: +276 MB, never released).
    """
    if text is None or len(text) <= max_chars:
        return None
    return f"{count(len(text))} characters, more than the limit of {count(max_chars)}"


def predict_sentence(trainer: SentimentTrainer, text: str):
    """The checkpoint's prediction for the user's own sentence (``trainer.predict_text``), refused beyond
    ``MAX_SENTENCE_CHARS`` characters before it is tokenised (a 16 MB sentence cost 8.7 s and 2 GB).

    Raises:
        ValueError: too long, or no words.
    """
    why = too_large(text, MAX_SENTENCE_CHARS)
    if why is not None:
        raise ValueError(f"this sentence has {why}: type a sentence or two")
    return trainer.predict_text(text)


def seconds_left(snap: RunSnapshot) -> float | None:
    """Time left: the runner's steady estimate (``snap.seconds_left``, see ``progress.ProgressClock``),
    else the run's average speed so far (pauses excluded, validation included).

    Never a short recent rate: on a busy machine a few slow seconds would otherwise swing the estimate
    from minutes to hours and back.
    """
    if snap.seconds_left is not None and snap.finished is None:
        return snap.seconds_left
    b = snap.last_batch
    if snap.finished is not None or b is None or b.elapsed <= 0 or not b.examples_seen or not snap.n_batches_per_epoch:
        return None
    per_epoch = b.examples_seen / ((b.epoch - 1) + b.batch / b.n_batches)
    total = per_epoch * snap.total_epochs
    return max(0.0, (total - b.examples_seen) * b.elapsed / b.examples_seen)


def latest_val_accuracy(snap: RunSnapshot) -> float | None:
    """The most recent validation accuracy: an epoch end's, or one measured inside a later epoch."""
    last = snap.epochs[-1] if snap.epochs else None
    if snap.val_points and (last is None or snap.val_points_x[-1] > last.epoch):
        return snap.val_points[-1]
    return last.val_accuracy if last is not None else None


def progress_text(snap: RunSnapshot) -> str:
    """``Epoch 12/250 · batch 30/45 · 2,345 examples/s · 1 min 20 s left`` (or the final state)."""
    if snap.finished is not None:
        f = snap.finished
        best = f" · best validation accuracy {percent(f.best_val_accuracy, 1)} (epoch {f.best_epoch})" \
            if f.best_val_accuracy is not None else ""
        word = {"completed": "Finished", "stopped": "Stopped", "error": "Failed"}.get(f.status, f.status)
        return f"{word} after {f.epochs_done}/{snap.total_epochs} epochs in {duration(f.elapsed)}{best}"
    if snap.queue_position is not None:
        return f"Waiting for a free training process: number {snap.queue_position} in the queue…"
    if snap.last_batch is None:
        return "Starting…"
    b = snap.last_batch
    rate = f"{count(snap.examples_per_s)} examples/s" if snap.examples_per_s else "measuring speed…"
    state = " · paused" if snap.status == "paused" else " · stopping…" if snap.status == "stopping" else ""
    return (f"Epoch {b.epoch}/{snap.total_epochs} · batch {b.batch}/{b.n_batches} · {rate} · "
            f"about {duration(seconds_left(snap))} left{state}")


# --- figures ---------------------------------------------------------------------------


# The live charts are Vega-Lite specs with their data: Streamlit updates a Vega-Lite chart's data in place
# when only the data changes, where ``st.plotly_chart`` hashes the whole figure into the element's
# identity and remounts the chart at every poll (it flashed empty a few times a second while training).


# the width follows the column; the height is the plot's own (Streamlit's default "fit" squeezed the plot
# area to a few pixels once a legend or a title took their share of the height)
FIT_X = {"type": "fit-x", "contains": "padding"}


def _config(font_size: int) -> dict:
    return {"axis": {"labelFontSize": font_size, "titleFontSize": font_size},
            "legend": {"labelFontSize": font_size, "titleFontSize": font_size, "orient": "top",
                       "direction": "horizontal", "labelLimit": 400},
            "title": {"fontSize": font_size + 2, "anchor": "start"}}


def _epoch_x(total_epochs: int, field: str = "epoch") -> dict:
    return {"field": field, "type": "quantitative", "title": "epoch",
            "scale": {"domain": [0, max(total_epochs, 1)], "nice": False}}


def _colours(domain: list[str], colours: list[str], legend: bool = True) -> dict:
    out = {"field": "series", "type": "nominal", "title": None, "scale": {"domain": domain, "range": colours}}
    if not legend:
        out["legend"] = None
    return out


def loss_chart(snap: RunSnapshot, font_size: int = 13, height: int = 300) -> tuple[pa.Table, dict]:
    """Training loss per batch (thin) and per epoch (line with points), against the epoch: ``(data, spec)``.

    The x axis spans the whole run from the start, so an update only adds points (the axes never jump).
    """
    data = series_table("epoch", "loss", [
        ("batch loss", _arr(snap.batch_x), _arr(snap.batch_loss)),
        ("epoch mean loss", _arr(snap.epoch_column("epoch")), _arr(snap.epoch_column("train_loss")))])
    y = {"field": "loss", "type": "quantitative"}
    if not snap.batch_x and not snap.epochs:   # before the run: an axis from 0 to 1 (a BCE starts near ln 2)
        y["scale"] = {"domain": [0, 1]}
    enc = {"x": _epoch_x(snap.total_epochs), "y": y,
           "color": _colours(["batch loss", "epoch mean loss"], ["#9aa3f5", "#1f3fbf"])}
    spec = {"title": "Training loss (binary cross-entropy)", "height": height, "config": _config(font_size), "autosize": FIT_X,
            "layer": [{"transform": [{"filter": "datum.series === 'batch loss'"}],
                       "mark": {"type": "line", "strokeWidth": 1, "opacity": 0.7}, "encoding": enc},
                      {"transform": [{"filter": "datum.series === 'epoch mean loss'"}],
                       "mark": {"type": "line", "strokeWidth": 3, "point": True}, "encoding": enc}]}
    return data, spec


# short names: the legend sits above a half-width chart (a longer third name was cut at 1400 px)
ACCURACY_SERIES = ["training", "validation", "best validation"]
# one colour per series (validation and its best-so-far line were both red); the best line, the diamond on the
# best checkpoint and the subtitle naming it share one colour, since they say one thing
ACCURACY_COLOURS = ["#2ca02c", "#d62728", "#6a3d9a"]
BEST_COLOUR = ACCURACY_COLOURS[2]


def accuracy_chart(snap: RunSnapshot, target: float | None = TARGET_ACCURACY, font_size: int = 13,
                   height: int = 300) -> tuple[pa.Table, dict]:
    """Train and validation accuracy per epoch (validation also inside epochs where the run measures it
    there), the best-so-far validation line, a star at the best epoch
    (the checkpoint the model keeps) and, for HW2's subset only, HW2's target (``target=None``: no line)."""
    ep = _arr(snap.epoch_column("epoch"))
    parts = [("training", ep, _arr(snap.epoch_column("train_accuracy")))]
    val = snap.epoch_column("val_accuracy")
    if any(v is not None for v in val) or snap.val_points:
        # the validations inside epochs (config.eval_every) and at their ends, in order along the run
        x = np.concatenate([_arr(snap.val_points_x), ep])
        y = np.concatenate([_arr(snap.val_points), _arr(val)])
        order = np.argsort(x, kind="stable")
        parts.append(("validation", x[order], y[order]))
        parts.append(("best validation", ep, _arr(snap.epoch_column("best_val_accuracy"))))
    data = series_table("epoch", "accuracy", parts)
    last = snap.epochs[-1] if snap.epochs else None
    # the star's one record, as pandas' to_dict("records") gave it (int epoch, float accuracy)
    best = [{"epoch": int(last.best_epoch), "accuracy": _record_number(last.best_val_accuracy),
             "label": f"best checkpoint: epoch {last.best_epoch}"}] \
        if last is not None and last.best_epoch is not None else []
    y = {"field": "accuracy", "type": "quantitative", "title": "accuracy", "scale": {"domain": [0, 1]},
         "axis": {"format": ".0%"}}
    lines = {"x": _epoch_x(snap.total_epochs), "y": y,
             "color": _colours(ACCURACY_SERIES, ACCURACY_COLOURS)}
    layers: list[dict] = [
        {"transform": [{"filter": "datum.series !== 'best validation'"}],
         "mark": {"type": "line", "point": True, "strokeWidth": 2.5}, "encoding": lines},
        {"transform": [{"filter": "datum.series === 'best validation'"}],
         "mark": {"type": "line", "interpolate": "step-after", "strokeDash": [4, 3], "strokeWidth": 2},
         "encoding": lines},
        {"data": {"values": best}, "mark": {"type": "point", "shape": "diamond", "size": 260,
                                                               "filled": True, "color": BEST_COLOUR},
         "encoding": {"x": _epoch_x(snap.total_epochs), "y": y, "tooltip": [{"field": "label"}]}},
    ]
    if target is not None:
        layers.append({"data": {"values": [{"target": target, "label": f"HW2 target {percent(target)}"}]},
                       "mark": {"type": "rule", "strokeDash": [8, 5], "color": "gray", "strokeWidth": 2},
                       "encoding": {"y": {"field": "target", "type": "quantitative", "scale": {"domain": [0, 1]}}}})
    # the checkpoint named in the subtitle: a label beside the diamond ran into the curves and the chart's edge
    # and so is HW2's target line (its label on the line sat on the curves' first epochs)
    named = ([f"◆ {best[0]['label']} ({percent(best[0]['accuracy'], 1)})"] if best else []) + \
        ([f"- - HW2 target {percent(target)}"] if target is not None else [])
    title = {"text": "Accuracy per epoch", "subtitle": " · ".join(named) or " ", "subtitleColor": BEST_COLOUR,
             "subtitleFontSize": font_size}
    spec = {"title": title, "height": height, "config": _config(font_size), "autosize": FIT_X, "layer": layers}
    return data, spec


def empty_snapshot(total_epochs: int) -> RunSnapshot:
    """A run that has not started: no points, the epoch axis of ``total_epochs`` (the settings' epochs), so the
    page can draw the run's axes and goal line before Train is pressed (a projector's first screen stays full)."""
    return RunSnapshot(status="idle", started=None, batch_x=[], batch_loss=[], epochs=[], last_batch=None,
                       finished=None, total_epochs=max(int(total_epochs), 1), n_batches_per_epoch=0,
                       examples_per_s=None, seconds_left=None)


def before_run_text(total_epochs: int, target: float = TARGET_ACCURACY) -> str:
    """What the class will watch, written over the run's empty axes (Markdown): the axes are the settings' run (what
    Start training trains); a one-click preset trains its own number of epochs and draws its own axes."""
    from .settings import ONE_CLICK
    by_epochs: dict[int, list[str]] = {}
    for label, _, _, cfg in ONE_CLICK.values():
        by_epochs.setdefault(cfg.epochs, []).append(label.split(":")[0])
    presets = ", ".join(f"{count(e)} for {' and '.join(names)}" for e, names in sorted(by_epochs.items(), reverse=True))
    presets = f" (its own epochs: {presets})" if presets else ""
    return (f"**Press Start training** ({count(int(total_epochs))} epochs, the axes below) **or a preset**{presets}, "
            f"**then watch:** the training loss fall (left) and the validation accuracy climb towards the dashed "
            f"goal line, **≥ {percent(target)} validation accuracy** (right); ◆ marks the best checkpoint, the one "
            f"the model keeps.")


def _arr(values) -> np.ndarray:
    """Floats as a float64 array, None as NaN (NumPy converts both in C)."""
    return np.array(values, dtype=np.float64).reshape(-1)


def _record_number(v):
    """A number as a one-row DataFrame's ``to_dict("records")`` gives it back (a float; None stays None)."""
    return None if v is None else float(v)


# --- chart data as Arrow ---------------------------------------------------------------
# The live charts are redrawn at every poll (once a second per training student). Streamlit sends a chart's
# data as Arrow; handed a pandas DataFrame it converts it at every call (with the DataFrame's own
# construction, about 1.5 ms a chart, seven charts a poll). These build the same Arrow table straight from
# the NumPy columns: the same bytes reach the browser (tests/test_sentiment_page.py compares them).


@functools.lru_cache(maxsize=32)  # one entry per column layout in this module's charts (a handful)
def _pandas_metadata(layout: tuple[tuple[str, str], ...]) -> dict:
    """The ``pandas`` schema metadata ``pa.Table.from_pandas`` writes for a DataFrame with these
    (column, kind) columns and a default index; its ``stop`` is set per table."""
    sample = {"f": np.zeros(1), "i": np.zeros(1, dtype=np.int64), "s": "x"}
    df = pd.DataFrame({name: sample[kind] for name, kind in layout})
    return json.loads(pa.Table.from_pandas(df).schema.metadata[b"pandas"])


@functools.lru_cache(maxsize=1)
def _pandas_string_type() -> pa.DataType:
    """The Arrow type pandas gives a column of Python strings (``string`` up to pandas 2, ``large_string``
    from pandas 3, whose strings are Arrow-backed)."""
    return pa.Table.from_pandas(pd.DataFrame({"s": ["x"]})).schema.field("s").type


def arrow_columns(columns: dict) -> pa.Table:
    """``pa.Table.from_pandas(pd.DataFrame(columns))`` without pandas, for columns that are float64 or
    int64 NumPy arrays or pyarrow string arrays (NaN becomes null, as pandas makes it)."""
    layout, arrays, n = [], [], None
    for name, col in columns.items():
        if isinstance(col, pa.Array):
            kind, arr = "s", col
        elif np.asarray(col).dtype.kind in "iu":
            kind, arr = "i", pa.array(np.asarray(col, dtype=np.int64))
        else:
            kind, arr = "f", pa.array(np.asarray(col, dtype=np.float64), from_pandas=True)
        layout.append((name, kind))
        arrays.append(arr)
        n = len(arr) if n is None else n
        if len(arr) != n:
            raise ValueError(f"column {name!r} has {len(arr)} rows, the others {n}")
    meta = _pandas_metadata(tuple(layout))
    meta["index_columns"] = [{**meta["index_columns"][0], "stop": n or 0}]
    return pa.Table.from_arrays(arrays, names=list(columns), metadata={"pandas": json.dumps(meta)})


def series_table(x: str, y: str, parts: list[tuple[str, np.ndarray, np.ndarray]]) -> pa.Table:
    """Columns ``x``, ``y`` and ``series`` of named parts stacked (``pd.concat`` of one DataFrame per part)."""
    xs = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    ys = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    codes = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p[1]) for p in parts])
    names = pa.array([p[0] for p in parts], _pandas_string_type()).take(pa.array(codes))
    return arrow_columns({x: xs, y: ys, "series": names})


# --- a look inside while training ---------------------------------------------------------

LAYER_COLOURS = {"fc1": "#1f77b4", "fc2": "#ff7f0e"}
HEALTHY_UPDATE = 1e-3       # the usual rule of thumb for ‖ΔW‖ / ‖W‖ per step
LOG_FLOOR = 1e-12           # log plots show smaller values (a dead layer's gradient: 1e-55) at this floor
INSIDE_PANELS = {"weight_norm": "weight norm ‖W‖", "grad_norm": "gradient norm ‖∂L/∂W‖",
                 "update_ratio": "update / weight ‖ΔW‖/‖W‖", "dead_relu": "dead ReLU units"}


def inside_looks(snap: RunSnapshot) -> list[InsideLook]:
    """The run's :class:`InsideLook` events so far (the runner forwards them among its other events)."""
    return [e for e in snap.other_events if isinstance(e, InsideLook)]


def last_look(snap: RunSnapshot) -> InsideLook | None:
    """The run's latest :class:`InsideLook` (None before the first)."""
    return next((e for e in reversed(snap.other_events) if isinstance(e, InsideLook)), None)


def look_columns(looks: list[InsideLook]) -> dict[str, list[float]]:
    """Looks as the columns a :class:`RunSnapshot` keeps of them (``look_columns``)."""
    cols: dict[str, list[float]] = {"position": [lk.position for lk in looks],
                                    "dead_relu": [lk.dead_relu for lk in looks]}
    by_name = [{ly.name: ly for ly in lk.layers} for lk in looks]
    for name in dict.fromkeys(ly.name for lk in looks for ly in lk.layers):
        for metric in LOOK_METRICS:
            cols[f"{name}.{metric}"] = [getattr(d[name], metric) if name in d else None for d in by_name]
    return cols


def inside_charts(looks: "list[InsideLook] | dict[str, list[float]]", total_epochs: int, font_size: int = 13,
                  height: int = 220) -> list[tuple[pa.Table, dict]]:
    """Four small charts against the epoch, ``(data, spec)`` each: ‖W‖ per layer, ‖∂loss/∂W‖ per layer,
    ‖ΔW‖/‖W‖ per step (log scales; the dotted line is the 1e-3 rule of thumb; values below 1e-12, a
    dead layer's vanishing gradient, sit at 1e-12) and the fraction of dead ReLU units."""
    cols = looks if isinstance(looks, dict) else look_columns(looks)  # a snapshot's columns: no loop over looks
    x = _arr(cols.get("position", []))
    charts = []
    for metric in ("weight_norm", "grad_norm", "update_ratio"):
        parts = []
        for name in ("fc1", "fc2"):
            v = _arr(cols.get(f"{name}.{metric}", [None] * len(x)))
            if metric != "weight_norm":
                v = np.where(np.isnan(v), np.nan, np.maximum(v, LOG_FLOOR))
            parts.append((name, x, v))
        y = {"field": "value", "type": "quantitative", "title": None}
        if metric != "weight_norm":
            y.update(scale={"type": "log"}, axis={"format": ".0e"})
        # legends are off: in a narrow column a Vega-Lite legend squeezed the plot to a few pixels; the page
        # says which colour is which layer once, above the four panels
        layers: list[dict] = [{"mark": {"type": "line", "strokeWidth": 2.5},
                               "encoding": {"x": _epoch_x(total_epochs), "y": y,
                                            "color": _colours(["fc1", "fc2"], [LAYER_COLOURS["fc1"],
                                                                               LAYER_COLOURS["fc2"]], legend=False),
                                            "tooltip": [{"field": "series", "title": "layer"},
                                                        {"field": "epoch", "format": ".2f"},
                                                        {"field": "value", "format": ".3g"}]}}]
        if metric == "update_ratio":
            layers.append({"data": {"values": [{"value": HEALTHY_UPDATE}]},
                           "mark": {"type": "rule", "strokeDash": [4, 3], "color": "gray", "strokeWidth": 1.5},
                           "encoding": {"y": {"field": "value", "type": "quantitative"}}})
        spec = {"title": INSIDE_PANELS[metric], "height": height, "config": _config(font_size), "autosize": FIT_X, "layer": layers}
        charts.append((series_table("epoch", "value", parts), spec))
    dead = arrow_columns({"epoch": x, "value": _arr(cols.get("dead_relu", []))})
    charts.append((dead, {"title": INSIDE_PANELS["dead_relu"], "height": height, "config": _config(font_size), "autosize": FIT_X,
                          "mark": {"type": "area", "line": {"color": "#b91c1c", "strokeWidth": 2.5},
                                   "color": "#fca5a5", "interpolate": "step-after"},
                          "encoding": {"x": _epoch_x(total_epochs),
                                       "y": {"field": "value", "type": "quantitative", "title": None,
                                             "scale": {"domain": [0, 1]}, "axis": {"format": ".0%"}}}}))
    return charts


def look_when(look: InsideLook, n_batches: int | None = None) -> str:
    """When a look was taken, in whole numbers as a lecturer says it: ``after epoch 41`` (its last batch) or
    ``in epoch 42, after batch 4 of 45`` (never the chart's fractional position, 41.09)."""
    if n_batches and look.batch >= n_batches:
        return f"after epoch {look.epoch}"
    of = f" of {n_batches}" if n_batches else ""
    return f"in epoch {look.epoch}, after batch {look.batch}{of}"


def units_title(look: InsideLook | None, n_batches: int | None = None) -> str:
    """What the hidden-units strip shows, in words."""
    if look is None:
        return "Hidden units: no look yet"
    dead = sum(1 for a in look.active if a == 0)
    return (f"Hidden units {look_when(look, n_batches)}: **{dead} of {len(look.active)} dead** (black); the "
            "brighter a cell, the more probe sentences the unit fires on")


def dead_relu_text(look: InsideLook | None, config, n_batches: int | None = None) -> str:
    """What a dead ReLU is, and this run's own count of them (Markdown): the words follow the measurement (a fixed
    sentence, "lr 0.01 keeps most alive", sat beside a measured 44% dead)."""
    opt = {"adam": "Adam", "sgd": "SGD"}.get(config.optimizer, config.optimizer)
    text = ("A ReLU unit is **dead** when it outputs 0 for every probe sentence (the first 200 training sentences): "
            "it then passes no gradient to its weights and never recovers. ")
    if look is not None and look.active:
        n, dead = len(look.active), int(round(look.dead_relu * len(look.active)))
        share = ("none is dead" if dead == 0 else "all are dead" if dead == n else
                 f"**{dead} of {n} ({percent(look.dead_relu)}) are dead**, "
                 + ("fewer than half" if 2 * dead < n else "half" if 2 * dead == n else "more than half"))
        text += f"In this run (lr {plain(config.lr)}, {opt}) {share} {look_when(look, n_batches)}. "
    return text + ("The one-click preset with lr 0.25 shows what a larger learning rate does to them. In the "
                   "network, the ReLU turns red with the dead fraction and the edge into a layer is thicker the "
                   "larger its weight gradient.")


def goal_line(target: float | None, presenting: bool) -> float | None:
    """The accuracy chart's dashed goal line: HW2's target on HW2's subset; on a projector always (the class was
    told to watch accuracy climb towards it, before_run_text), during and after a run and its replay."""
    return TARGET_ACCURACY if presenting else target


def unknown_words_text(started) -> str:
    """The words without a GloVe vector, counted so the numbers add up: distinct words, then their
    occurrences split into training and validation (one word can occur several times, in both sets)."""
    words, train, val = len(started.unknown_words), started.unknown_train_tokens, started.unknown_val_tokens
    if not words:
        return "every word has a GloVe vector"
    plural = words != 1
    return (f"{count(words)} distinct word{'s' if plural else ''} {'have' if plural else 'has'} no GloVe vector and "
            f"share{'' if plural else 's'} one fixed random vector: {count(train + val)} occurrence"
            f"{'s' if train + val != 1 else ''}, {count(train)} in the training and {count(val)} in the validation "
            "sentences")


def units_chart(look: InsideLook | None, hidden: int, font_size: int = 13, height: int = 40
                ) -> tuple[pa.Table, dict]:
    """One cell per hidden ReLU unit, coloured by the fraction of probe sentences it fires on (black: dead)."""
    active = list(look.active) if look is not None else [None] * hidden
    data = arrow_columns({"unit": np.arange(1, len(active) + 1), "active": _arr(active)})
    spec = {"height": height, "config": {**_config(font_size), "view": {"stroke": None}}, "autosize": FIT_X,
            "mark": {"type": "bar", "stroke": "white", "strokeWidth": 1},
            "encoding": {"x": {"field": "unit", "type": "ordinal", "axis": None},
                         "y": {"datum": 1, "type": "quantitative", "axis": None, "scale": {"domain": [0, 1]}},
                         "color": {"field": "active", "type": "quantitative", "legend": None,
                                   "scale": {"domain": [0, 0.02, 0.5, 1],
                                             "range": ["#111111", "#7f1d1d", "#fbbf24", "#fef9c3"]}},
                         "tooltip": [{"field": "unit"}, {"field": "active", "title": "fires on", "format": ".0%"}]}}
    return data, spec


def _heat(value: float) -> str:
    """White (0) to red (1), as a hex colour."""
    v = min(max(value, 0.0), 1.0)
    g = int(round(255 - 200 * v))
    return f"#ff{g:02x}{g:02x}"


# --- the network -------------------------------------------------------------------------


def _dot_attrs(attrs: dict) -> str:
    """``[a="v", ...]``: every value quoted (DOT escapes: ``\\n`` in a label stays a line break)."""
    return ", ".join(f'{k}="{str(v).replace(chr(34), chr(92) + chr(34))}"' for k, v in attrs.items())


NETWORK_FONT = "Helvetica"   # Graphviz's name for its sans-serif (SVG: font-family="Helvetica,sans-Serif")


def network_dot(trainer_or_model, look: InsideLook | None = None, font_size: int = 13, rankdir: str = "LR",
                n_batches: int | None = None) -> str:
    """The network as a DOT graph, one node per layer (collapsed), with shapes and parameter counts.

    With ``look``, the trained layers show their weight / gradient norms and update ratio (the edge
    into a layer is drawn thicker the larger its gradient: the number is in the layer's box, an edge label
    sat on the thick arrow), and the ReLU is filled from white to red with the fraction of dead units.
    ``n_batches`` (batches per epoch) says when the look was taken in whole numbers. Every text is in one
    sans-serif font (the caption and edge texts fell back to Graphviz's serif default).

    The text is written directly (pydot's quoting took about 2 ms, at every poll of a training run);
    Graphviz draws it exactly as it drew pydot's (tests/test_sentiment_page.py compares the SVGs).
    """
    model = getattr(trainer_or_model, "model", trainer_or_model)
    layers = model.layers_summary()
    stats = {ly.name: ly for ly in look.layers} if look is not None else {}
    grads = [ly.grad_norm for ly in stats.values() if ly.grad_norm > 0]
    total = sum(layer.n_params for layer in layers)
    # top to bottom the picture is a narrow column: short lines (a long one widened it and shrank every text)
    brk = "\\n" if rankdir == "TB" else " "
    # left to right (a projector) the caption is one line under the layers: three lines made the picture taller,
    # so that at the page's height its text was drawn smaller
    nl = "\\n" if rankdir == "TB" else " · "
    caption = f"{count(total)} trainable parameters{brk}(word vectors fixed)"
    if look is not None:
        caption += (f"{nl}measured {look_when(look, n_batches).replace(', ', ',' + brk)}{nl}thicker arrow: larger "
                    f"‖∂L/∂W‖{brk}of the layer it enters")
    out = ["digraph network {", f"rankdir={_dot_attrs({'x': rankdir})[2:]};", "bgcolor=transparent;",
           "nodesep=0.25;", "ranksep=0.3;", f"label={_dot_attrs({'x': caption})[2:]};", f"fontsize={font_size};",
           f"fontname={NETWORK_FONT};", f"edge [fontname={NETWORK_FONT}];",
           f'node [shape=box, style="rounded,filled", fontname={NETWORK_FONT}, fontsize={font_size}];']
    for layer in layers:
        params = f"\\n{count(layer.n_params)} parameters" if layer.n_params else ""
        fill = "#dbe7ff" if layer.n_params else "#f2f2f2"
        label = f"{layer.description}\\n{layer.output_shape}{params}"
        attrs = {}
        if layer.name in stats:
            st_ = stats[layer.name]
            label += (f"\\n‖W‖ {num(st_.weight_norm, 3)}\\n‖∂L/∂W‖ {num(st_.grad_norm, 2)}"
                      f"\\n‖ΔW‖/‖W‖ {sci(st_.update_ratio)}")
        if layer.name == "relu" and look is not None:
            n_dead = int(round(look.dead_relu * len(look.active)))
            label += f"\\ndead: {percent(look.dead_relu)} ({n_dead} of {len(look.active)})"
            fill = _heat(look.dead_relu)
            attrs["penwidth"] = "3" if look.dead_relu >= 0.5 else "1"
            attrs["color"] = "#b91c1c" if look.dead_relu >= 0.5 else "black"
        out.append(f'"{layer.name}" [{_dot_attrs({"label": label, "fillcolor": fill, **attrs})}];')
    for a, b in zip(layers, layers[1:]):
        attrs = {}
        if b.name in stats and grads:
            # thickness: the layer's gradient norm against the largest one now (log scale, 1 to 6 px)
            rel = np.log10(max(stats[b.name].grad_norm, 1e-12) / max(grads))
            attrs = {"penwidth": f"{max(1.0, 6.0 + 1.5 * rel):.1f}"}
        out.append(f'"{a.name}" -> "{b.name}"' + (f" [{_dot_attrs(attrs)}]" if attrs else "") + ";")
    out.append("}")
    return "\n".join(out) + "\n"


NETWORK_WIDTH = 900   # px: the expander spans the main column


def network_figure(trainer_or_model, width: int = NETWORK_WIDTH) -> dict:
    """The network drawn by the graph renderer, one node per layer, bottom-up as on the slides: what
    the layer is, its output shape and (second colour) its parameter count."""
    from explorer.explain.graph import Graph, GraphEdge, GraphNode
    from explorer.kit.plotly_figure import still_figure
    model = getattr(trainer_or_model, "model", trainer_or_model)
    layers = model.layers_summary()
    nodes = [GraphNode(k, layer.name, "layer", "input" if k == 0 else "op", []) for k, layer in enumerate(layers)]
    edges = [GraphEdge(k, k + 1) for k in range(len(layers) - 1)]
    graph = Graph(nodes, edges, len(layers) - 1)
    total = sum(layer.n_params for layer in layers)
    return still_figure(graph, {k: layer.description for k, layer in enumerate(layers)},
                        {k: f"→ {layer.output_shape}" for k, layer in enumerate(layers)},
                        {k: f"{count(layer.n_params)} parameters" for k, layer in enumerate(layers) if layer.n_params},
                        {k: "computed" if layer.n_params else "idle" for k, layer in enumerate(layers)},
                        caption=f"{count(total)} trainable parameters (word vectors are fixed)", width=width,
                        rankdir="BT")


#: presentation mode: the network picture's text in px on the 1920 x 1080 design screen (16 px on a 1366 x 768 one)
PRESENT_PICTURE_TEXT_PX = 23
PRESENT_PICTURE_MAX_PX = 1800   # the page's main column on the design screen


def present_picture_px(svg: str, font_size: int, text_px: float = PRESENT_PICTURE_TEXT_PX,
                       most: int = PRESENT_PICTURE_MAX_PX) -> int:
    """The width in px that draws Graphviz's ``svg`` (its text at ``font_size`` pt) with its text at ``text_px`` on
    the design screen: the picture's own width scaled, at most ``most`` (a fixed width drew the trained network's
    wider boxes with ~14 px text at 1366 x 768)."""
    import re
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg)
    if m is None:
        return most
    return int(min(most, math.ceil(float(m.group(1)) * text_px / font_size)))


def network_svg(dot: str) -> str | None:
    """The DOT text laid out by Graphviz on the server, as SVG markup (None where Graphviz is missing
    or fails: the page then lets the browser lay the DOT out, and says so).

    The live view redraws the network with new numbers several times a second: an image is swapped in
    place, where a Plotly chart (the graph renderer's) is remounted at every change and flashes empty,
    and a graphviz chart lays the graph out again in the browser. Before and after a run the page
    draws the network with the graph renderer (:func:`network_figure`).
    """
    try:
        svg = run_dot(dot, "svg").decode("utf-8")
    except (GraphvizUnavailable, GraphvizFailed):
        return None
    return svg[svg.index("<svg"):] if "<svg" in svg else None


# --- the model after training --------------------------------------------------------------


def checkpoint_text(snap: RunSnapshot) -> str:
    """Which weights the panels below use: the best checkpoint, its epoch and accuracy, and the last epoch's."""
    f = snap.finished
    if f is None:
        return ""
    last = snap.epochs[-1] if snap.epochs else None
    if f.best_epoch is not None and f.best_val_accuracy is not None:
        text = (f"Everything below uses the **best checkpoint: epoch {f.best_epoch}** (validation accuracy "
                f"{percent(f.best_val_accuracy, 1)}), the weights the trainer kept when validation accuracy peaked")
        if last is not None and last.epoch != f.best_epoch and last.val_accuracy is not None:
            text += f"; the last epoch ({last.epoch}) had {percent(last.val_accuracy, 1)}."
        else:
            text += "; it is also the last epoch."
        return text
    if last is not None:
        return f"Everything below uses the weights after epoch {last.epoch} (no validation set to pick a best epoch)."
    return "Everything below uses the weights when training stopped (before the first epoch ended)."


# --- comparing runs ---------------------------------------------------------------------------

MAX_KEPT_RUNS = 6
COMPARE_METRICS = {
    "val_accuracy": "validation accuracy",
    "train_loss": "training loss (epoch mean)",
    "train_accuracy": "training accuracy",
    "dead_relu": "dead ReLU units",
}
SETTING_NAMES = {"lr": "lr", "optimizer": "optimizer", "dropout": "dropout", "hidden": "hidden",
                 "batch_size": "batch", "backend": "backend", "seed": "seed", "shuffle": "shuffle",
                 "epochs": "epochs", "weight_decay": "weight decay", "lr_schedule": "lr schedule",
                 "word_dropout": "word dropout", "train_embeddings": "train word vectors"}


@dataclass
class RunRecord:
    """One finished (or stopped) run of the session: its settings and its curves, to compare."""

    number: int
    dataset: str
    config: dict
    status: str
    epochs: list[int] = field(default_factory=list)
    val_accuracy: list[float | None] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    train_accuracy: list[float] = field(default_factory=list)
    look_x: list[float] = field(default_factory=list)
    dead_relu: list[float] = field(default_factory=list)
    best: float | None = None
    best_epoch: int | None = None

    @property
    def label(self) -> str:
        c = self.config
        return (f"run {self.number}: lr {plain(c['lr'])} {c['optimizer']}, dropout {plain(c['dropout'])}, "
                f"hidden {c['hidden']}, {c['backend']}")


def record_run(snap: RunSnapshot, number: int, dataset: str) -> RunRecord | None:
    """A :class:`RunRecord` of a run's snapshot (None when it never started training)."""
    if snap.started is None:
        return None
    looks = inside_looks(snap)
    last = snap.epochs[-1] if snap.epochs else None
    status = snap.finished.status if snap.finished is not None else "stopped"
    return RunRecord(number, dataset, dict(snap.started.config), status, [e.epoch for e in snap.epochs],
                     [e.val_accuracy for e in snap.epochs], [e.train_loss for e in snap.epochs],
                     [e.train_accuracy for e in snap.epochs], [lk.position for lk in looks],
                     [lk.dead_relu for lk in looks], last.best_val_accuracy if last else None,
                     last.best_epoch if last else None)


def keep_run(history: list[RunRecord], record: RunRecord | None, limit: int = MAX_KEPT_RUNS) -> list[RunRecord]:
    """The session's kept runs with ``record`` added (a run of the same number is replaced), the oldest dropped."""
    if record is None:
        return history
    kept = [r for r in history if r.number != record.number] + [record]
    return kept[-limit:]


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """A Plotly figure from plain dicts, skipping Plotly's per-property validation (slow on a busy server)."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def compare_figure(records: list[RunRecord], metric: str = "val_accuracy", font_size: int = 13,
                   height: int = 380) -> go.Figure:
    """The chosen curve of every kept run, overlaid against the epoch (one colour per run)."""
    if metric not in COMPARE_METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {list(COMPARE_METRICS)}")
    data = []
    for r in records:
        x, y = (r.look_x, r.dead_relu) if metric == "dead_relu" else (r.epochs, getattr(r, metric))
        data.append({"type": "scatter", "x": _arr(x), "y": _arr(y), "mode": "lines", "name": html.escape(r.label),
                     "line": {"width": 2.5}})
    pct = metric in ("val_accuracy", "train_accuracy", "dead_relu")
    yaxis = {"title": {"text": COMPARE_METRICS[metric]}}
    if pct:
        yaxis.update(tickformat=".0%", range=[0, 1.02])
    n = len(records)
    return _figure(data, {"title": {"text": f"{COMPARE_METRICS[metric]}: {n} run{'s' if n != 1 else ''}"},
                          "xaxis": {"title": {"text": "epoch"}}, "yaxis": yaxis, "height": height,
                          "font": {"size": font_size}, "legend": {"orientation": "h", "y": -0.3},
                          "margin": {"l": 10, "r": 10, "t": 50, "b": 10}})


def compare_rows(records: list[RunRecord]) -> pd.DataFrame:
    """One row per kept run: its dataset and settings, and how it ended."""
    rows = []
    for r in records:
        row = {"run": r.number, "dataset": r.dataset}
        row.update({label: r.config.get(key) for key, label in SETTING_NAMES.items()})
        row.update({"status": r.status, "epochs run": r.epochs[-1] if r.epochs else 0,
                    "best validation accuracy": percent(r.best, 1) if r.best is not None else "–",
                    "best epoch": r.best_epoch if r.best_epoch is not None else "–",
                    "dead ReLUs at the end": percent(r.dead_relu[-1]) if r.dead_relu else "–"})
        rows.append(row)
    return pd.DataFrame(rows)


# --- after training ---------------------------------------------------------------------------


def validation_table(trainer: SentimentTrainer, errors_only: bool = False) -> pd.DataFrame:
    """Every validation sentence with its label, the model's prediction and P(positive)."""
    enc = trainer.encoded_val
    if enc is None:
        return pd.DataFrame(columns=["sentence", "label", "prediction", "P(positive)", "correct"])
    p = trainer.predict_encoded(enc)
    pred = (p > 0.5).astype(int)
    names = np.array(["negative", "positive"])
    df = pd.DataFrame({"sentence": enc.sentences, "label": names[enc.labels], "prediction": names[pred],
                       "P(positive)": np.round(p, 3), "correct": pred == enc.labels})
    return df[~df["correct"]] if errors_only else df


WORD_ORDER_PAIRS = [("good but boring", "boring but good"),
                    ("not bad , really good", "not good , really bad"),
                    ("the plot is dull but the acting is great", "the acting is dull but the plot is great")]


def word_order_demo(trainer: SentimentTrainer, pairs=WORD_ORDER_PAIRS) -> pd.DataFrame:
    """Pairs of sentences with the same words in another order: same averaged input, same prediction."""
    rows = []
    model = trainer.model
    for a, b in pairs:
        pa, pb = trainer.predict_text(a), trainer.predict_text(b)
        with no_grad():
            va = model.pool(_vectors(trainer, pa.tokens)).numpy()
            vb = model.pool(_vectors(trainer, pb.tokens)).numpy()
        rows.append({"sentence A": a, "P(positive | A)": round(pa.probability, 4), "sentence B": b,
                     "P(positive | B)": round(pb.probability, 4),
                     "max |mean(A) − mean(B)|": float(np.abs(va - vb).max())})
    return pd.DataFrame(rows)


def _vectors(trainer: SentimentTrainer, tokens) -> Tensor:
    vectors, _ = trainer.glove.encode_tokens(tokens)
    be = trainer.backend
    return Tensor._make(be.array(vectors[None], trainer.dtype), be)
