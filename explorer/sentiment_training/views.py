"""What the Sentiment training page draws, built without Streamlit: dataset choices, figures, tables, DOT.

Every number here comes from a real run (a :class:`~sentiment.runner.RunSnapshot`) or the trained
model; nothing is re-enacted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydot

from engine.tensor import Tensor, no_grad

from sentiment.data import Dataset, builtin_split, load_sst2
from .runner import RunSnapshot
from sentiment.trainer import SentimentTrainer

TARGET_ACCURACY = 0.75

DATASETS = {
    "builtin": "Built-in corpus (hand-written, no download)",
    "subset": "SST-2, HW2 subset (first N train / first M validation)",
    "full": "SST-2, full (67,349 train / 872 validation)",
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


def load_choice(choice: DataChoice, data_dir=None) -> tuple[Dataset, Dataset]:
    """The (train, validation) datasets of a choice.

    Raises:
        SST2NotFound / DataFormatError for the SST-2 choices when the data is missing or broken.
    """
    if choice.kind == "builtin":
        return builtin_split(60)
    train, dev = load_sst2(data_dir)
    if choice.kind == "full":
        return train, dev
    return train.head(choice.n_train), dev.head(choice.n_val)


# --- progress ------------------------------------------------------------------------


def format_seconds(s: float | None) -> str:
    if s is None or not np.isfinite(s):
        return "–"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def progress_text(snap: RunSnapshot) -> str:
    """``Epoch 12/250 · batch 30/45 · 2,345 examples/s · 1 min 20 s left`` (or the final state)."""
    if snap.finished is not None:
        f = snap.finished
        best = f" · best validation accuracy {f.best_val_accuracy:.1%} (epoch {f.best_epoch})" \
            if f.best_val_accuracy is not None else ""
        word = {"completed": "Finished", "stopped": "Stopped", "error": "Failed"}.get(f.status, f.status)
        return f"{word} after {f.epochs_done}/{snap.total_epochs} epochs in {format_seconds(f.elapsed)}{best}"
    if snap.queue_position is not None:
        return f"Waiting for a free training process: number {snap.queue_position} in the queue…"
    if snap.last_batch is None:
        return "Starting…"
    b = snap.last_batch
    rate = f"{snap.examples_per_s:,.0f} examples/s" if snap.examples_per_s else "measuring speed…"
    state = " · paused" if snap.status == "paused" else " · stopping…" if snap.status == "stopping" else ""
    return (f"Epoch {b.epoch}/{snap.total_epochs} · batch {b.batch}/{b.n_batches} · {rate} · "
            f"{format_seconds(snap.seconds_left)} left{state}")


# --- figures ---------------------------------------------------------------------------


def loss_figure(snap: RunSnapshot, font_size: int = 13, height: int = 380) -> go.Figure:
    """Training loss per batch (thin) and per epoch (markers), against the epoch."""
    # NumPy arrays, not lists: Plotly validates a list element by element (~25x slower at 4000 points),
    # and this figure is rebuilt every time the page polls a running training
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=_arr(snap.batch_x), y=_arr(snap.batch_loss), mode="lines", name="batch loss",
                             line=dict(width=1, color="rgba(99,110,250,0.45)")))
    fig.add_trace(go.Scatter(x=_arr([e.epoch for e in snap.epochs]), y=_arr([e.train_loss for e in snap.epochs]),
                             mode="lines+markers", name="epoch mean loss", line=dict(width=2.5, color="#1f3fbf")))
    fig.update_layout(title="Training loss (binary cross-entropy)", xaxis_title="epoch", yaxis_title="loss",
                      height=height, font=dict(size=font_size), legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=10, r=10, t=50, b=10), uirevision="loss")
    return fig


def accuracy_figure(snap: RunSnapshot, target: float = TARGET_ACCURACY, font_size: int = 13,
                    height: int = 380) -> go.Figure:
    """Train and validation accuracy per epoch, the best-so-far validation line and the target."""
    ep = _arr([e.epoch for e in snap.epochs])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ep, y=_arr([e.train_accuracy for e in snap.epochs]), mode="lines+markers",
                             name="train accuracy", line=dict(color="#2ca02c")))
    if any(e.val_accuracy is not None for e in snap.epochs):
        fig.add_trace(go.Scatter(x=ep, y=_arr([e.val_accuracy for e in snap.epochs]), mode="lines+markers",
                                 name="validation accuracy", line=dict(color="#d62728")))
        fig.add_trace(go.Scatter(x=ep, y=_arr([e.best_val_accuracy for e in snap.epochs]), mode="lines",
                                 name="best validation so far", line=dict(color="#d62728", dash="dot", shape="hv")))
    last = int(ep.max()) if len(ep) else snap.total_epochs
    fig.add_trace(go.Scatter(x=[0, max(last, 1)], y=[target, target], mode="lines", name=f"target {target:.0%}",
                             line=dict(color="gray", dash="dash")))
    fig.update_layout(title="Accuracy per epoch", xaxis_title="epoch", yaxis_title="accuracy", height=height,
                      font=dict(size=font_size), yaxis=dict(range=[0, 1.02], tickformat=".0%"),
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10),
                      uirevision="acc")
    return fig


def _arr(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


# --- the network -------------------------------------------------------------------------


def network_dot(trainer_or_model) -> str:
    """The network as a DOT graph, one node per layer (collapsed), with shapes and parameter counts."""
    model = getattr(trainer_or_model, "model", trainer_or_model)
    layers = model.layers_summary()
    g = pydot.Dot("network", graph_type="digraph", rankdir="LR", bgcolor="transparent")
    g.set_node_defaults(shape="box", style="rounded,filled", fontname="Helvetica", fontsize="12")
    for layer in layers:
        params = f"\\n{layer.n_params:,} parameters" if layer.n_params else ""
        fill = "#dbe7ff" if layer.n_params else "#f2f2f2"
        g.add_node(pydot.Node(layer.name, label=f"{layer.description}\\n{layer.output_shape}{params}",
                              fillcolor=fill))
    for a, b in zip(layers, layers[1:]):
        g.add_edge(pydot.Edge(a.name, b.name))
    total = sum(layer.n_params for layer in layers)
    g.set_label(f"{total:,} trainable parameters (word vectors are fixed)")
    g.set_fontsize("12")
    return g.to_string()


NETWORK_WIDTH = 900   # px: the expander spans the main column


def network_figure(trainer_or_model, width: int = NETWORK_WIDTH) -> dict:
    """The network drawn by the graph renderer, one node per layer, bottom-up as on the slides: what
    the layer is, its output shape and (second colour) its parameter count."""
    from engine.explain.graph import Graph, GraphEdge, GraphNode
    from explorer.kit.plotly_figure import still_figure
    model = getattr(trainer_or_model, "model", trainer_or_model)
    layers = model.layers_summary()
    nodes = [GraphNode(k, layer.name, "layer", "input" if k == 0 else "op", []) for k, layer in enumerate(layers)]
    edges = [GraphEdge(k, k + 1) for k in range(len(layers) - 1)]
    graph = Graph(nodes, edges, len(layers) - 1)
    total = sum(layer.n_params for layer in layers)
    return still_figure(graph, {k: layer.description for k, layer in enumerate(layers)},
                        {k: f"→ {layer.output_shape}" for k, layer in enumerate(layers)},
                        {k: f"{layer.n_params:,} parameters" for k, layer in enumerate(layers) if layer.n_params},
                        {k: "computed" if layer.n_params else "idle" for k, layer in enumerate(layers)},
                        caption=f"{total:,} trainable parameters (word vectors are fixed)", width=width,
                        rankdir="BT")


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
