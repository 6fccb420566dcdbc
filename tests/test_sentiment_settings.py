"""The Sentiment training page's logic (explorer.sentiment_training.settings): settings to TrainConfig, the
one-click presets, the user's own data from the upload boxes, refusals with a message, HW2's target."""
from __future__ import annotations

import dataclasses

import pytest

from explorer.sentiment_training import settings as S
from explorer.sentiment_training.views import DataChoice, own_data
from sentiment.data import MAX_USER_BYTES, SST2_SIZES, builtin_split
from sentiment.trainer import PRESETS, TrainConfig, validation_interval


def test_settings_make_the_train_config_field_by_field():
    values = {**S.DEFAULTS, "epochs": "7", "lr": "0.05", "hidden": 16, "optimizer": "sgd", "shuffle": 0,
              "train_embeddings": True, "word_dropout": 0.1, "weight_decay": 1e-4, "lr_schedule": "cosine"}
    cfg = S.train_config(values, n_train=67349)
    assert isinstance(cfg, TrainConfig)
    assert (cfg.epochs, cfg.lr, cfg.hidden, cfg.optimizer, cfg.shuffle) == (7, 0.05, 16, "sgd", False)
    assert cfg.train_embeddings and cfg.sparse_embeddings            # sparse gradients come with trained vectors
    assert (cfg.word_dropout, cfg.weight_decay, cfg.lr_schedule) == (0.1, 1e-4, "cosine")
    assert cfg.eval_every == validation_interval(67349, S.DEFAULTS["batch_size"]) > 0
    assert S.train_config(S.DEFAULTS, n_train=450).eval_every == 0  # a short epoch validates at its end only
    # every setting the page offers is a TrainConfig field of the same name
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert set(S.SETTINGS) <= fields and "backend" in fields


def test_one_click_values_are_the_presets_settings():
    hw2 = S.one_click_values("hw2")
    assert (hw2["dataset"], hw2["n_train"], hw2["n_val"], hw2["backend"]) == ("subset", 450, 100, "numpy")
    assert all(hw2[name] == getattr(PRESETS["hw2"].config, name) for name in S.SETTINGS)
    assert S.one_click_values("relu")["lr"] == 0.25 and S.one_click_values("full")["dataset"] == "full"
    assert set(S.one_click_values("full")) == set(S.RUN_FIELDS)


def test_sst2_sizes_bound_the_subset_boxes():
    assert (S.MAX_N_TRAIN, S.MAX_N_VAL) == SST2_SIZES == (67349, 872)


def test_dataset_labels():
    assert S.dataset_label(DataChoice("subset", 450, 100)) == "SST-2 450/100"
    assert [S.dataset_label(DataChoice(k)) for k in ("builtin", "full", "own")] == ["built-in", "SST-2 full",
                                                                                    "your data"]


def test_new_trainer_on_the_builtin_corpus_and_refusals_with_a_message():
    trainer, choice = S.new_trainer({**S.DEFAULTS, "epochs": 1})
    assert choice.kind == "builtin" and len(trainer.train_data) == len(builtin_split(60)[0])
    assert trainer.config.epochs == 1 and trainer.config.hidden == S.DEFAULTS["hidden"]
    with pytest.raises(S.RunRefused, match="^ValueError: no data of your own yet"):
        S.new_trainer({**S.DEFAULTS, "dataset": "own"})
    with pytest.raises(S.RunRefused, match="^ValueError: .*batch"):
        S.new_trainer({**S.DEFAULTS, "batch_size": 0})
    with pytest.raises(S.RunRefused, match="BackendUnavailable|ValueError"):
        S.new_trainer({**S.DEFAULTS, "backend": "no-such-backend"})


def test_own_data_from_the_boxes():
    rows = "\n".join(f"sentence number {i} is {'good' if i % 2 else 'bad'},{i % 2}" for i in range(20))
    pasted = S.read_own_input(None, None, rows)
    assert pasted.error is None and pasted.own is not None and not pasted.clear_paste
    assert len(pasted.own.train) == 16 and len(pasted.own.val) == 4     # the last 20% held out
    # an uploaded file wins over pasted text; a validation file replaces the hold-out
    upload = S.read_own_input(("mine.csv", rows.encode()), ("val.csv", b"fine,1\nawful,0\n"), "ignored,1")
    assert upload.own.train.source == "mine.csv" and len(upload.own.val) == 2 and len(upload.own.train) == 20
    assert S.read_own_input(None, None, "   ") == S.OwnInput()              # nothing given: nothing kept
    bad = S.read_own_input(None, None, "a,1\nb,maybe\n")
    assert bad.own is None and "pasted text" in bad.error and not bad.clear_paste


def test_own_data_over_the_limit_is_refused_and_a_paste_is_emptied():
    huge = "x" * (MAX_USER_BYTES + 1)
    refused = S.read_own_input(None, None, huge)
    assert refused.own is None and refused.clear_paste and "the box was emptied" in refused.error
    # a file over the limit: the same limit (sentiment.data.parse_labelled's), the paste box is left alone
    big_file = S.read_own_input(("big.csv", b"a,1\n" * (MAX_USER_BYTES // 4 + 1)), None, "")
    assert big_file.own is None and "big.csv" in big_file.error and "limit" in big_file.error
    assert not big_file.clear_paste


def test_hw2_target_belongs_to_hw2s_subset_only():
    rows = "\n".join(f"s{i},{i % 2}" for i in range(12))
    own = own_data(rows, "pasted text")
    trainer, _ = S.new_trainer({**S.DEFAULTS, "dataset": "own", "epochs": 1}, own)
    assert S.hw2_target("your data", trainer) is None
    assert S.hw2_target("SST-2 450/100", trainer) is None     # the label alone is not enough: sizes too


def test_untrained_network_has_the_settings_sizes():
    net = S.untrained_network("8", "0.25")
    assert net.fc1.weight.shape == (8, 50) and net.fc2.weight.shape == (1, 8) and net.dropout.p == 0.25


def test_the_words_over_the_empty_axes_say_what_each_button_trains():
    """Over a projector's empty axes: Start training trains the settings' epochs (the axes drawn), each one-click
    preset its own (HW2's 250 beside a 30-epoch axis read as a contradiction), read from the presets."""
    from explorer.sentiment_training.settings import ONE_CLICK
    from explorer.sentiment_training.views import before_run_text
    text = before_run_text(30)
    assert "**Press Start training** (30 epochs, the axes below)" in text
    hw2 = ONE_CLICK["hw2"]
    assert f"{hw2[3].epochs} for {hw2[0].split(':')[0]}" in text and f"{ONE_CLICK['full'][3].epochs} for Full SST-2" in text


def test_the_hw2_presets_label_says_its_sizes_in_words():
    """The one-click HW2 preset names what it trains as a class reads it ("450/100" was cryptic): its training and
    validation sentences and its epochs, the numbers read from the preset itself; the line over the empty axes quotes
    the label's name part ("250 for HW2 setup")."""
    from explorer.sentiment_training.settings import ONE_CLICK
    from explorer.sentiment_training.views import before_run_text
    label, _, (n_train, n_val), cfg = ONE_CLICK["hw2"]
    assert label == f"HW2 setup: {n_train} train / {n_val} validation sentences, {cfg.epochs} epochs"
    assert "/100," not in label and (n_train, n_val, cfg.epochs) == (450, 100, 250)
    assert f"{cfg.epochs} for HW2 setup and " in before_run_text(30)
