"""Train HW2's sentiment network (GloVe word vectors averaged, two linear layers) on SST-2 or a built-in corpus, live: loss and accuracy curves, pause / resume / stop, then inspect the validation errors and try your own sentences.
"""
from __future__ import annotations


import streamlit as st

import engine
from explorer.kit.deeplink import LinkField
from explorer.kit.formatting import code_span, md_escape
from explorer.kit.widgets import presentation_toggle, publish_link, start_page
from sentiment.data import DataFormatError, SST2NotFound
from sentiment.embeddings import GloveNotFound, load_glove
from sentiment.model import SentimentNet
from explorer.sentiment_training.runner import (TrainingRefused, TrainingRun, streamlit_session_id,
                                               streamlit_session_watch)
from sentiment.trainer import SentimentTrainer, TrainConfig
from explorer.sentiment_training.views import (DATASETS, TARGET_ACCURACY, DataChoice, accuracy_figure, load_choice,
                             loss_figure, network_figure, progress_text, validation_table, word_order_demo)
from explorer.kit.figures import style_graph_figure

DEFAULTS = {"dataset": "builtin", "n_train": 450, "n_val": 100, "epochs": 30, "batch_size": 10, "lr": 0.01,
            "optimizer": "adam", "hidden": 32, "dropout": 0.5, "seed": 0, "backend": "numpy", "shuffle": True}

ctx = start_page(
    "Sentiment training", "sentiment",
    fields={"dataset": LinkField("str", "builtin", choices=tuple(DATASETS)),
            "n_train": LinkField("int", 450, minimum=1, maximum=67349),
            "n_val": LinkField("int", 100, minimum=1, maximum=872),
            "epochs": LinkField("int", 30, minimum=1, maximum=10000),
            "batch_size": LinkField("int", 10, minimum=1, maximum=4096),
            "lr": LinkField("float", 0.01, minimum=1e-6, maximum=10.0),
            "optimizer": LinkField("str", "adam", choices=("adam", "sgd")),
            "seed": LinkField("int", 0, minimum=0, maximum=2**31 - 1)},  # the Seed box's range
    defaults={**DEFAULTS, "run": None, "text": "a gorgeous , witty film that is never boring",
              "errors_only": False})
ns, look = ctx.ns, ctx.look
for msg in ctx.link_problems:
    st.warning(msg)
S = st.session_state


def k(name: str) -> str:
    return ns.key(name)


run: TrainingRun | None = S[k("run")]
busy = run is not None and not run.snapshot().done

# --- settings -----------------------------------------------------------------------------
top = st.columns([4, 1])
top[0].markdown(
    "The network of HW2, built with our engine's `nn` modules and trained by our engine on the real data: "
    "each sentence is the **mean of its GloVe word vectors** (padding excluded), then "
    "`Linear(50, 32) → ReLU → Dropout(0.5) → Linear(32, 1) → sigmoid`. Training runs in a worker process "
    "of the server (a few at a time; others wait their turn); the page only reads its progress.")
with top[1]:
    presentation_toggle()

with st.container(border=True):
    c = st.columns([3, 1, 1, 1, 1])
    c[0].selectbox("Dataset", list(DATASETS), format_func=DATASETS.get, key=k("dataset"), disabled=busy)
    subset = S[k("dataset")] == "subset"
    c[1].number_input("Training sentences", 1, 67349, key=k("n_train"), disabled=busy or not subset)
    c[2].number_input("Validation sentences", 1, 872, key=k("n_val"), disabled=busy or not subset)
    c[3].number_input("Epochs", 1, 10000, key=k("epochs"), disabled=busy)
    c[4].number_input("Batch size", 1, 4096, key=k("batch_size"), disabled=busy)
    c = st.columns([1, 1, 1, 1, 1, 1, 1])
    c[0].number_input("Learning rate", 1e-6, 10.0, key=k("lr"), format="%.4g", step=0.001, disabled=busy)
    c[1].selectbox("Optimizer", ["adam", "sgd"], format_func=lambda o: {"adam": "Adam", "sgd": "SGD"}[o],
                   key=k("optimizer"), disabled=busy)
    c[2].number_input("Hidden units", 1, 512, key=k("hidden"), disabled=busy)
    c[3].number_input("Dropout", 0.0, 0.95, key=k("dropout"), step=0.05, disabled=busy)
    c[4].number_input("Seed", 0, 2**31 - 1, key=k("seed"), disabled=busy)
    c[5].selectbox("Backend", engine.available_backends(), key=k("backend"), disabled=busy,
                   help="numpy: fast. python: every kernel as Python loops (slow; use the built-in corpus). "
                        "cuda: where a GPU is present.")
    c[6].checkbox("Shuffle each epoch", key=k("shuffle"), disabled=busy,
                  help="HW2 visits the batches in file order; shuffling usually helps.")
    if S[k("dataset")] == "builtin":
        st.caption("Built-in corpus: about 290 short movie-review sentences written for this app "
                   "(not SST-2), including negations and “good but boring” contrasts; 60 held out for validation.")
    elif S[k("dataset")] == "subset" and (S[k("n_train")], S[k("n_val")]) == (450, 100):
        st.caption("HW2's setting: the first 450 training and first 100 validation sentences of SST-2. "
                   "HW2's target is 75% best validation accuracy (lr 0.01, 250 epochs reach 75–78%).")


def _start() -> None:
    old = S[k("run")]
    if old is not None:
        old.stop()
    try:
        glove = load_glove()
        train, val = load_choice(DataChoice(S[k("dataset")], int(S[k("n_train")]), int(S[k("n_val")])))
        cfg = TrainConfig(epochs=int(S[k("epochs")]), batch_size=int(S[k("batch_size")]), lr=float(S[k("lr")]),
                          optimizer=S[k("optimizer")], hidden=int(S[k("hidden")]), dropout=float(S[k("dropout")]),
                          seed=int(S[k("seed")]), backend=S[k("backend")], shuffle=bool(S[k("shuffle")]))
        trainer = SentimentTrainer(train, val, glove, cfg)
    except (SST2NotFound, GloveNotFound, DataFormatError, ValueError, engine.BackendUnavailable) as e:
        S[k("error")] = f"{type(e).__name__}: {e}"
        S[k("run")] = None
        return
    try:
        run = TrainingRun(trainer, keep_alive=streamlit_session_watch(), owner=streamlit_session_id()).start()
    except TrainingRefused as e:
        S[k("error")] = f"Training refused: {e}"
        S[k("run")] = None
        return
    S[k("error")] = None
    S[k("run")] = run


def _pause_resume() -> None:
    r = S[k("run")]
    if r is None:
        return
    if r.control.paused:
        r.resume()
    else:
        r.pause()


def _stop() -> None:
    r = S[k("run")]
    if r is not None:
        r.stop()


st.button("Start training", icon=":material/play_arrow:", type="primary", on_click=_start,
          help="Starts a new run (stopping the current one, if any)")
if S.get(k("error")):
    st.error(S[k("error")])

publish_link(ctx, {name: S[k(name)] for name in ("dataset", "n_train", "n_val", "epochs", "batch_size", "lr",
                                                 "optimizer", "seed")})


# --- live view (a fragment that polls the run while it trains) --------------------------------
@st.fragment(run_every=1.0 if busy else None)
def live_view() -> None:
    r: TrainingRun | None = S[k("run")]
    if r is None:
        st.info("Choose a dataset and press **Start training**. The curves grow here while the engine trains.")
        return
    snap = r.snapshot()
    # the run's own buttons live in the fragment: a click reruns only the fragment, never racing the
    # full-page rerun against the fragment's timer (a full rerun could leave the timer unscheduled)
    b = st.columns([1, 1, 4])
    paused = r.control.paused
    b[0].button("Resume" if paused else "Pause", icon=":material/play_arrow:" if paused else ":material/pause:",
                on_click=_pause_resume, disabled=snap.done, width="stretch")
    b[1].button("Stop", icon=":material/stop:", on_click=_stop, disabled=snap.done, width="stretch")
    started = snap.started
    if started is not None:
        st.caption(f"{started.n_train:,} training / {started.n_val:,} validation sentences · "
                   f"{started.n_params:,} parameters · backend `{started.config['backend']}` · GloVe: "
                   f"{started.glove_source} · {len(started.unknown_words)} distinct words without a GloVe vector "
                   f"({started.unknown_train_tokens:,} training / {started.unknown_val_tokens:,} validation "
                   "tokens) share one fixed random vector")
    st.progress(snap.progress, text=progress_text(snap))
    if snap.finished is not None and snap.finished.status == "error":
        st.error(snap.finished.error)
    if snap.note:
        st.warning(snap.note)
    if snap.queue_position is not None:
        st.info(f"Every training process of the server is busy: this run is number {snap.queue_position} in the "
                "queue and starts by itself when one is free.", icon=":material/hourglass_top:")
    m = st.columns(4)
    last = snap.epochs[-1] if snap.epochs else None
    m[0].metric("Epoch", f"{last.epoch if last else 0} / {snap.total_epochs}")
    m[1].metric("Train loss", f"{last.train_loss:.4f}" if last else "–")
    m[2].metric("Validation accuracy", f"{last.val_accuracy:.1%}" if last and last.val_accuracy is not None else "–")
    best = last.best_val_accuracy if last else None
    m[3].metric("Best validation accuracy", f"{best:.1%}" if best is not None else "–",
                delta=f"{best - TARGET_ACCURACY:+.1%} vs 75% target" if best is not None else None)
    g = st.columns(2)
    g[0].plotly_chart(loss_figure(snap, look.figure_font, int(look.figure_height * 0.75)), key=k("loss_chart"))
    g[1].plotly_chart(accuracy_figure(snap, font_size=look.figure_font, height=int(look.figure_height * 0.75)),
                      key=k("acc_chart"))
    if snap.done and S.get(k("shown_done")) is not r:
        S[k("shown_done")] = r
        st.rerun()  # once, so that the whole page shows the finished state and the results


live_view()

# --- the network ---------------------------------------------------------------------------------
with st.expander("The network (layers collapsed)", expanded=run is None):
    if run is not None:
        st.plotly_chart(style_graph_figure(network_figure(run.trainer), look), key=k("network_graph"),
                        config={"displaylogo": False})
    else:
        st.plotly_chart(style_graph_figure(network_figure(SentimentNet(hidden=int(S[k("hidden")]),
                                                                       dropout=float(S[k("dropout")]))), look),
                        key=k("network_graph"), config={"displaylogo": False})
    st.caption("Grey stages have no parameters. Padding: a batch is padded with zero vectors to its longest "
               "sentence and the mean divides by each sentence's real length, so a prediction never depends "
               "on the other sentences in the batch.")

# --- after training ------------------------------------------------------------------------------
if run is not None and run.snapshot().done and run.snapshot().started is not None:
    trainer = run.trainer
    st.subheader("Validation sentences")
    st.toggle("Show only the errors", key=k("errors_only"))
    table = validation_table(trainer, S[k("errors_only")])
    st.caption(f"{len(table):,} sentences shown; P(positive) is the trained model's output (dropout off).")
    st.dataframe(table, hide_index=True, width="stretch", height=320,
                 column_config={"P(positive)": st.column_config.ProgressColumn("P(positive)", min_value=0.0,
                                                                              max_value=1.0, format="%.3f")})

    st.subheader("Try your own sentence")
    st.text_input("Sentence", key=k("text"))
    try:
        pred = trainer.predict_text(S[k("text")])
    except ValueError as e:
        st.warning(md_escape(e))
    else:
        label = "positive" if pred.label else "negative"
        st.markdown(f"Prediction: **{label}** (P(positive) = {pred.probability:.3f})")
        st.markdown("Tokens: " + " ".join(code_span(t) for t in pred.tokens))
        if pred.unknown:
            st.warning("Unknown to GloVe (they all get the same fixed random vector): "
                       + ", ".join(code_span(w) for w in pred.unknown))
        else:
            st.caption("Every word has a GloVe vector.")

    st.subheader("What an averaged bag of words cannot do")
    st.markdown("The mean of the word vectors forgets word order: two sentences with the same words "
                "get exactly the same input, so exactly the same prediction, whatever they mean.")
    st.dataframe(word_order_demo(trainer), hide_index=True, width="stretch")
