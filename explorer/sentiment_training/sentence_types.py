"""Validation accuracy per type of sentence (single / negated / contrast / both), beside the notes' figures.

The built-in corpus carries no types, so each sentence is typed here by one rule on its tokens (``TYPE_RULE``
says it on the page): a bag of words that averages word vectors cannot see which clause of a contrast comes
last, and the table shows where that costs accuracy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from explorer.kit.notes import NOTES
from explorer.explain.numbers import count, fixed, percent

NEGATIONS = frozenset({"not", "n't", "no", "never", "nothing", "none", "nobody", "nor", "neither", "without"})
CONTRASTS = frozenset({"but", "yet", "although", "though", "however"})
SENTENCE_TYPES = ("single", "negated", "contrast", "both")   # the table's row order

TYPE_RULE = ("A sentence is typed by its words: **contrast** if it has one of "
             + ", ".join(f"“{w}”" for w in sorted(CONTRASTS)) + " (two clauses, the last one decides); "
             "**negated** if it has a negation (" + ", ".join(f"“{w}”" for w in sorted(NEGATIONS)) + "); "
             "**both** if it has both; **single** if neither.")


def sentence_type(sentence: str) -> str:
    """The type of a tokenized sentence (SST-2 style: lower-cased, tokens split on spaces, "n't" split off).

    Returns:
        "single", "negated", "contrast" or "both", by ``TYPE_RULE``.
    """
    tokens = set(sentence.lower().split())
    negated, contrast = bool(tokens & NEGATIONS), bool(tokens & CONTRASTS)
    return "both" if negated and contrast else "contrast" if contrast else "negated" if negated else "single"


def notes_accuracy(kind: str) -> float:
    """The notes' per-type accuracy: their contrast figure for contrasts, their 'others' figure otherwise."""
    return NOTES["bow_contrast_accuracy"].value if kind == "contrast" else NOTES["bow_other_accuracy"].value


def per_type_accuracy(sentences: list[str], labels: np.ndarray, predictions: np.ndarray) -> pd.DataFrame:
    """Accuracy of the predictions on each type of sentence.

    Args:
        sentences: tokenized sentences.
        labels: their 0/1 labels.
        predictions: the model's 0/1 predictions, one per sentence.

    Returns:
        One row per type, in ``SENTENCE_TYPES`` order (accuracy None where a type has no sentence): type,
        sentences, correct, accuracy, and the notes' accuracy for that type.

    Raises:
        ValueError: the three inputs differ in length.
    """
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if not len(sentences) == len(labels) == len(predictions):
        raise ValueError(f"{len(sentences)} sentences, {len(labels)} labels, {len(predictions)} predictions")
    types = np.array([sentence_type(s) for s in sentences], dtype=object)
    correct = labels == predictions
    rows = []
    for kind in SENTENCE_TYPES:   # every type, a type with no sentence too (its accuracy is empty, not 0)
        mask = types == kind
        rows.append({"type": kind, "sentences": int(mask.sum()), "correct": int(correct[mask].sum()),
                     "accuracy": round(float(correct[mask].mean()), 3) if mask.any() else None,
                     "the notes' accuracy": notes_accuracy(kind)})
    return pd.DataFrame(rows, columns=["type", "sentences", "correct", "accuracy", "the notes' accuracy"])


def per_type_table(trainer) -> pd.DataFrame:
    """``per_type_accuracy`` of the trainer's model (its best checkpoint once training ended) on its validation
    sentences: the same predictions (P(positive) > 0.5, dropout off) as the validation table."""
    enc = trainer.encoded_val
    if enc is None:
        return per_type_accuracy([], np.zeros(0, int), np.zeros(0, int))
    pred = (trainer.predict_encoded(enc) > 0.5).astype(int)
    return per_type_accuracy(list(enc.sentences), enc.labels, pred)


def notes_differ_text(table: pd.DataFrame, data_label: str) -> str:
    """How the per-type table differs from the notes' figures: other data, other sizes, other typing.

    Args:
        table: ``per_type_accuracy``'s table for this run.
        data_label: what the run trained on (the page's dataset label).
    """
    n = int(table["sentences"].sum())
    smallest = int(table.loc[table["sentences"] > 0, "sentences"].min()) if n else 0
    return (f"The notes measured their own bag-of-words classifier on their own sentences (other data, "
            f"other sizes, their own typing): {fixed(NOTES['bow_contrast_accuracy'].value, 3)} on contrasts, "
            f"{fixed(NOTES['bow_other_accuracy'].value, 3)} on the other types. Ours is HW2's network on this run's "
            f"{count(n)} validation sentences ({data_label}), typed by the rule above"
            + (f"; the smallest type holds {smallest} sentence{'' if smallest == 1 else 's'}, so one error moves "
               f"its accuracy by {percent(1 / smallest)}" if smallest else "")
            + ". " + _contrast_verdict(table))


def _contrast_verdict(table: pd.DataFrame) -> str:
    """Whether this run, like the notes, does worst on contrasts (measured, not assumed)."""
    rows = table[table["sentences"] > 0].set_index("type")["accuracy"]
    if "contrast" not in rows.index:
        return "This run's validation sentences hold no contrast."
    weakest = rows.idxmin()
    if rows["contrast"] <= rows.min():
        return ("Here too contrasts are the weakest type: an averaged bag of words cannot tell which clause comes "
                "last.")
    return (f"Here contrasts are not the weakest type ({weakest} is, {fixed(rows[weakest], 3)}): on so few sentences a "
            "type's accuracy is noisy; the word-order demo below shows the blindness itself.")


def order_blind_text(demo: pd.DataFrame) -> str:
    """One sentence from the word-order demo's first pair (``views.word_order_demo``): both probabilities, printed
    to 4 decimals, and whether they are equal."""
    row = demo.iloc[0]
    a, b, pa, pb = row["sentence A"], row["sentence B"], row["P(positive | A)"], row["P(positive | B)"]
    verdict = "equal: the mean of the word vectors ignores their order" if pa == pb else "different"
    return f"P(positive | “{a}”) = **{fixed(pa, 4)}**, P(positive | “{b}”) = **{fixed(pb, 4)}**: {verdict}."
