"""Per-type validation accuracy (single / negated / contrast / both) and the bag of words' blindness to order."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer.kit.notes import NOTES
from explorer.sentiment_training.sentence_types import (SENTENCE_TYPES, TYPE_RULE, notes_differ_text,
                                                        order_blind_text, per_type_accuracy, per_type_table,
                                                        sentence_type)


@pytest.mark.parametrize("sentence, kind", [
    ("a wonderful film with a great cast", "single"),
    ("it is not bad at all", "negated"),
    ("you wo n't be disappointed", "negated"),          # "n't" split off, SST-2 style
    ("a film without life or humor", "negated"),
    ("there is nothing good in this movie", "negated"),
    ("good but boring", "contrast"),
    ("boring but good", "contrast"),
    ("slow at first , yet rewarding", "contrast"),
    ("although it is long , it is great", "contrast"),
    ("not perfect , but a lot of fun", "both"),
    ("i did n't expect to like it , but i loved it", "both"),
    ("Good BUT boring", "contrast"),                     # case does not matter
    ("butter popcorn and nothingness", "single"),        # whole words only
    ("boring title , great film", "single"),             # no contrast word: the rule reads words, not meaning
])
def test_sentence_type_rule(sentence, kind):
    assert sentence_type(sentence) == kind


def test_the_rule_on_the_page_names_every_word_it_uses():
    for word in ("but", "yet", "although", "not", "n't", "never", "without"):
        assert f"“{word}”" in TYPE_RULE
    assert all(f"**{t}**" in TYPE_RULE for t in SENTENCE_TYPES)


def test_per_type_accuracy_on_known_predictions():
    sentences = ["a great film", "a bad film", "it is not bad", "good but boring", "boring but good",
                 "not good , but fun", "a dull film"]
    labels = np.array([1, 0, 1, 0, 1, 1, 0])
    preds = np.array([1, 0, 0, 1, 1, 1, 1])    # single 2/3, negated 0/1, contrast 1/2, both 1/1
    table = per_type_accuracy(sentences, labels, preds)
    assert table["type"].tolist() == list(SENTENCE_TYPES)
    got = table.set_index("type")
    assert got["sentences"].tolist() == [3, 1, 2, 1] and got["correct"].tolist() == [2, 0, 1, 1]
    assert got["accuracy"].tolist() == pytest.approx([0.667, 0.0, 0.5, 1.0])
    # the notes' figures from the notes table: contrast 0.457, every other type 1.000
    assert got.loc["contrast", "the notes' accuracy"] == NOTES["bow_contrast_accuracy"].value == 0.457
    assert (got.drop("contrast")["the notes' accuracy"] == NOTES["bow_other_accuracy"].value).all()
    assert NOTES["bow_other_accuracy"].value == 1.0
    note = notes_differ_text(table, "built-in corpus")
    assert "0.457 on contrasts, 1.000 on the other types" in note and "7 validation sentences (built-in corpus)" in note
    assert "the smallest type holds 1 sentence, so one error moves its accuracy by 100%" in note
    assert "Here contrasts are not the weakest type (negated is, 0.000)" in note   # measured, not assumed
    worst_on_contrasts = per_type_accuracy(sentences, labels, np.where([s == "good but boring" for s in sentences],
                                                                       1 - labels, labels))
    assert "Here too contrasts are the weakest type" in notes_differ_text(worst_on_contrasts, "x")
    assert "no contrast" in notes_differ_text(per_type_accuracy(["a film"], [1], [1]), "x")


def test_a_type_with_no_sentence_has_no_accuracy_and_bad_lengths_raise():
    table = per_type_accuracy(["a great film"], np.array([1]), np.array([1])).set_index("type")
    assert table.loc["single", "accuracy"] == 1.0
    assert table.loc["both", "sentences"] == 0 and pd.isna(table.loc["both", "accuracy"])
    with pytest.raises(ValueError, match="2 sentences, 1 labels"):
        per_type_accuracy(["a", "b"], np.array([1]), np.array([1]))


def test_order_blind_text_prints_both_probabilities():
    demo = pd.DataFrame([{"sentence A": "good but boring", "P(positive | A)": 0.4321,
                          "sentence B": "boring but good", "P(positive | B)": 0.4321}])
    text = order_blind_text(demo)
    assert text.count("0.4321") == 2 and "equal" in text and "“good but boring”" in text


@pytest.fixture(scope="module")
def trained():
    from sentiment.embeddings import load_glove
    from sentiment.trainer import SentimentTrainer, TrainConfig
    from explorer.sentiment_training.views import DataChoice, load_choice
    try:
        glove = load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors: {e}")
    train, val = load_choice(DataChoice("builtin"))
    trainer = SentimentTrainer(train, val, glove, TrainConfig(epochs=3, lr=0.01, seed=0))
    trainer.run()
    return trainer


def test_a_permuted_sentence_gets_the_same_probability(trained):
    rng = np.random.default_rng(0)
    for sentence in ("good but boring", "the plot is dull but the acting is great", "it is not bad at all"):
        words = sentence.split()
        p = trained.predict_text(sentence).probability
        for _ in range(3):
            shuffled = " ".join(rng.permutation(words))
            # the mean of the word vectors is the same up to the order of a float sum
            assert trained.predict_text(shuffled).probability == pytest.approx(p, abs=1e-12)


def test_per_type_table_counts_the_validation_tables_predictions(trained):
    from explorer.sentiment_training.views import validation_table
    table = per_type_table(trained).set_index("type")
    val = validation_table(trained)
    assert table["sentences"].sum() == len(val) == 60
    assert table["correct"].sum() == int(val["correct"].sum())
    kinds = val["sentence"].map(sentence_type)
    for kind, row in table.iterrows():
        if row["sentences"]:
            assert row["accuracy"] == pytest.approx(val["correct"][kinds == kind].mean(), abs=5e-4)
