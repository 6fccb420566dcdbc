"""The lecture notes' printed figures, in one table: every page that sets one of our numbers beside the notes'
reads it from here, with what the notes measured, so that a figure is never attached to a check it does not
belong to and no page types a notes figure of its own.

Each entry says what the notes computed (their script, their data, their sizes); the page says how our figure
differs where it does. The values are the notes' own (``/shared/LECTURE.md`` summarises them; an audit of every
page placed each one beside the check it belongs to).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from explorer.explain.numbers import sci


@dataclass(frozen=True)
class NotesFigure:
    """One figure the notes print: its value (a number or a tuple of numbers) and what it measures."""

    value: Any
    measures: str

    def __str__(self) -> str:
        return sci(self.value) if isinstance(self.value, float) else str(self.value)


NOTES: dict[str, NotesFigure] = {
    # Gradient check (page 6): the notes' checks, each by what the notes compared
    "ops_vs_pytorch": NotesFigure(8.9e-16, "15 ops' outputs and gradients against PyTorch, float64"),
    "symbolic_vs_pytorch": NotesFigure(3.5e-17, "mini-TF's symbolic gradients() against PyTorch on logistic "
                                                "regression"),
    "vjp_wx": NotesFigure(0.0, "y = Wx: the VJP against Wᵀȳ"),
    "vjp_sigmoid": NotesFigure(2.8e-17, "elementwise sigmoid: the VJP s̄ ⊙ σ(1 − σ) against the Jacobian's"),
    "text_classifier_by_hand": NotesFigure(2.1e-17, "the notes' text classifier: autodiff against a hand-written "
                                                    "backward"),
    "training_loss_50": NotesFigure(1.1e-16, "the loss after 50 training steps, two implementations"),
    "side_by_side_loss": NotesFigure(9.0e-15, "the largest loss difference over 320 Adam steps against PyTorch"),
    "side_by_side_steps": NotesFigure(320, "Adam steps trained side by side with PyTorch"),
    "random_graphs": NotesFigure(50, "random graphs checked against finite differences"),
    "random_graph_nodes": NotesFigure(22.8, "nodes per random graph, on average"),
    "random_graph_shared": NotesFigure(9.7, "shared values per random graph, on average: values more than one "
                                            "operation reads, whose adjoints are sums"),
    "random_graph_error": NotesFigure(3.7e-10, "the largest *relative* error of autodiff against central "
                                               "differences over their random graphs"),
    # Backprop orders (page 5): breadth-first first touch on random graphs
    "bfs_wrong": NotesFigure((189, 200), "breadth-first first touch wrong on their random graphs"),
    # Forward vs reverse (page 7): the cost of a gradient, in forward passes
    "reverse_passes": NotesFigure(2, "forward passes one reverse-mode gradient costs in total (forward + backward)"),
    # Gradient check (page 6) and exercise 7: the best h their table printed (a sweep over powers of ten)
    "best_h_table": NotesFigure({"float64": (1e-5, 1e-6), "float32": (1e-2,)},
                                "the step sizes of their h table (powers of ten) with the smallest error"),
    # Tensors (page 8): their three backends
    "backends_matmul": NotesFigure(2.7e-15, "matmul's largest difference between their backends (map / zip / "
                                            "reduce bit for bit)"),
    # Static vs dynamic (page 9)
    "gradients_example": NotesFigure((22, 39), "gradients(): forward nodes, nodes added"),
    "training_graph": NotesFigure((68, 54, 16), "training graph: nodes built, evaluated per step, eager ops per step"),
    "rnn_eager": NotesFigure((10, 19, 37), "unrolled RNN, T = 3 / 6 / 12: eager ops"),
    "rnn_static": NotesFigure((50, 98, 194), "unrolled RNN, T = 3 / 6 / 12: static nodes with gradients"),
    "folding": NotesFigure((3, 6), "constant folding: ops folded, of the example's ops"),
    # Sentiment training (page 11): the bag of words cannot see order
    "bow_contrast_accuracy": NotesFigure(0.457, "their averaged bag-of-words classifier's validation accuracy on "
                                                "contrast sentences (\"good but boring\"), on their own data"),
    "bow_other_accuracy": NotesFigure(1.0, "the same classifier's validation accuracy on every other type of their "
                                           "sentences (single, negated, both)"),
}


def notes(key: str) -> Any:
    """The value of the notes' figure ``key`` (a KeyError names an unknown one)."""
    return NOTES[key].value
