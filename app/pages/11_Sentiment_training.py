"""HW2's sentiment network trained live (by default on the built-in corpus; SST-2 is one preset away): loss and accuracy curves, and a look inside (norms, dead ReLUs).

Train HW2's sentiment network (GloVe word vectors averaged, two linear layers) on SST-2, a built-in corpus or your own sentences, live: loss and accuracy curves, a look inside the layers (norms, update ratios, dead ReLUs), pause / resume / stop, runs compared, then inspect the best checkpoint's validation errors and try your own sentences.
"""
from __future__ import annotations

import time

import streamlit as st

from explorer.kit.budget import bounded_cache
from explorer.kit.class_widgets import in_class
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import style_graph_figure
from explorer.kit.presentation import small_screen_css, small_screen_look
from explorer.kit.formatting import code_span, count, fixed, md_escape, percent
from explorer.kit.labels import num
from explorer.kit.priority import poll_period
from explorer.kit.widgets import (TIMER_RUN, presentation_toggle, progress_poll, publish_link, show_plot, show_table,
                                  start_page)
from explorer.sentiment_training.replay import DEFAULT_PACE, PACES, Replay, auto_replay, replay_text, snapshot_at
from explorer.sentiment_training.runner import TrainingRun, streamlit_session_id, streamlit_session_watch
from explorer.sentiment_training.settings import (DEFAULTS, EXAMPLE_SENTENCE, LR_SCHEDULES, MAX_N_TRAIN, MAX_N_VAL,
                                                  MAX_SENTENCE_CHARS, MAX_USER_BYTES, MAX_USER_ROWS, ONE_CLICK,
                                                  RUN_FIELDS, RunRefused, available_backends, hw2_target,
                                                  one_click_values, read_own_input, start_run, untrained_network)
from explorer.sentiment_training.views import (AUTOGRADER_EPOCHS, dead_relu_text, goal_line, present_picture_px, AUTOGRADER_NOTE, COMPARE_METRICS, DATASETS, MAX_KEPT_RUNS, NO_SERVER_GRAPHVIZ,
                                               TARGET_ACCURACY, accuracy_chart, autograder_log, before_run_text,
                                               empty_snapshot, training_faq_text, checkpoint_text, compare_figure, compare_rows,
                                               inside_charts, keep_run, last_look, latest_val_accuracy, loss_chart,
                                               network_dot, network_figure, network_svg, predict_sentence,
                                               progress_text, record_run, too_large, units_chart, units_title, unknown_words_text,
                                               validation_table, word_order_demo)
from explorer.sentiment_training.sentence_types import TYPE_RULE, notes_differ_text, order_blind_text, per_type_table

ctx = start_page(
    "Sentiment training", "sentiment",
    fields={"dataset": LinkField("str", "builtin", choices=tuple(DATASETS)),
            "n_train": LinkField("int", 450, minimum=1, maximum=MAX_N_TRAIN),
            "n_val": LinkField("int", 100, minimum=1, maximum=MAX_N_VAL),
            "epochs": LinkField("int", 30, minimum=1, maximum=10000),
            "batch_size": LinkField("int", 10, minimum=1, maximum=4096),
            "lr": LinkField("float", 0.01, minimum=1e-6, maximum=10.0),
            "optimizer": LinkField("str", "adam", choices=("adam", "sgd")),
            "seed": LinkField("int", 0, minimum=0, maximum=2**31 - 1)},  # the Seed box's range
    defaults={**DEFAULTS, "run": None, "text": EXAMPLE_SENTENCE, "text_refused": None,
              "errors_only": False, "own": None, "own_error": None, "kept": [], "run_number": 0,
              "run_dataset": "", "compare_metric": "val_accuracy", "replay": None, "replay_pace": DEFAULT_PACE})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(small_screen_css())   # labels, captions, tables: 16 px or more at 1366 x 768 too
chart_font = small_screen_look(look).figure_font   # the charts' text: 16 px or more at 1366 x 768 too
for msg in ctx.link_problems:
    st.warning(msg)
S = st.session_state




def k(name: str) -> str:
    return ns.key(name)


run: TrainingRun | None = S[k("run")]
busy = run is not None and not run.snapshot().done
if busy or run is None:
    S[k("replay")] = None
replaying = S[k("replay")] is not None   # a finished run replayed at lecture speed (its own recorded numbers)

# --- settings -----------------------------------------------------------------------------
if not look.presenting:  # on a projector the lecturer says it; the curves get the room
    top = st.columns([4, 1])
    top[0].markdown(
        "The network of HW2, built with our engine's `nn` modules and trained by our engine on the real data: "
        "each sentence is the **mean of its GloVe word vectors** (padding excluded), then "
        "`Linear(50, 32) → ReLU → Dropout(0.5) → Linear(32, 1) → sigmoid`. Training runs in a worker process "
        "of the server (a few at a time; others wait their turn); the page only reads its progress.")
    with top[1]:
        presentation_toggle()


def _keep_current_run() -> None:
    """Add the current run (finished or not) to the session's kept runs, to compare with later ones."""
    r = S[k("run")]
    if r is not None:
        S[k("kept")] = keep_run(S[k("kept")], record_run(r.snapshot(), S[k("run_number")], S[k("run_dataset")]))


def _start(drawn: int) -> None:
    """Start a run; ``drawn``: the run number when the button was drawn (drawn intent, explorer.kit.widgets): the
    callback's second run for one click finds a newer run number and starts nothing."""
    if S[k("run_number")] != drawn:
        return
    old = S[k("run")]
    if old is not None:
        old.stop()
        _keep_current_run()
    try:
        run, label = start_run({name: S[k(name)] for name in RUN_FIELDS}, S[k("own")],
                               keep_alive=streamlit_session_watch(), owner=streamlit_session_id())
    except RunRefused as e:
        S[k("error")] = str(e)
        S[k("run")] = None
        return
    S[k("error")] = None
    S[k("run")] = run
    S[k("run_number")] += 1
    S[k("run_dataset")] = label


ONE_CLICK_PRESENT_PX = 24
ONE_CLICK_PRESENT_GAP_PX = 14   # room under the navigation box


def _one_click(key: str, drawn: int) -> None:
    if S[k("run_number")] != drawn:   # this click's run is started (see _start)
        return
    for name, value in one_click_values(key).items():
        S[k(name)] = value
    _start(drawn)


if not look.presenting:
    st.caption("One click sets the boxes below and starts training: **HW2**'s own setting · all of **SST-2** with "
               "the extras beyond HW2 · **lr 0.25**, where the dead-ReLU plot and the network's ReLU box turn red "
               "and accuracy stalls at one class.")
# the Start button joins the presets' row: the curves get the room. On a projector the row's labels are 24 px in the
# 1920 x 1080 layout (17 px on a 1366 x 768 screen; the buttons' 30 px would not fit HW2's label, which says its sizes
# in words), and the mode's toggle sits beside the folded settings, so the row stays one line
ONE_CLICK_ROW = "adx_one_click"
if look.presenting:
    # the row starts a little lower: the Previous / Home / Next box at the top right touched its buttons (1 px)
    st.html(f"<style>.st-key-{ONE_CLICK_ROW} [data-testid='stButton'] button p "
            f"{{ font-size: {ONE_CLICK_PRESENT_PX}px !important; }} "
            f".st-key-{ONE_CLICK_ROW} {{ margin-top: {ONE_CLICK_PRESENT_GAP_PX}px; }}</style>")
c = one_click = st.container(key=ONE_CLICK_ROW).columns([2.5, 0.66, 1.6, 0.9] if look.presenting
                                                         else [1.2, 0.8, 1.6, 0.9])
# no tooltips: after the click the pointer rests on the button and its tooltip stayed open over the settings (and,
# on a projector, over the run's buttons and progress line); the caption above says what each preset does
for col, name in zip(c, ("hw2", "full", "relu")):
    col.button(ONE_CLICK[name][0], icon=":material/play_arrow:", on_click=_one_click, args=(name, S[k("run_number")]),
               width="stretch")

# the settings fold away once there is a run (on a projector always: the one-click presets set them), so the live
# curves and the network are on the first screen
settings_at = st
if look.presenting:
    settings_at, toggle_at = st.columns([4.3, 1], vertical_alignment="center")
    with toggle_at:
        presentation_toggle()
settings_box = (settings_at.expander("Settings: dataset, epochs, batch, learning rate, optimizer, …", expanded=False)
                if look.presenting or run is not None else st.container(border=True))
with settings_box:
    c = st.columns([3, 1, 1, 1, 1])
    c[0].selectbox("Dataset", list(DATASETS), format_func=DATASETS.get, key=k("dataset"), disabled=busy)
    subset = S[k("dataset")] == "subset"
    c[1].number_input("Training sentences", 1, MAX_N_TRAIN, key=k("n_train"), disabled=busy or not subset)
    c[2].number_input("Validation sentences", 1, MAX_N_VAL, key=k("n_val"), disabled=busy or not subset)
    c[3].number_input("Epochs", 1, 10000, key=k("epochs"), disabled=busy)
    c[4].number_input("Batch size", 1, 4096, key=k("batch_size"), disabled=busy)
    c = st.columns([1, 1, 1, 1, 1, 1, 1])
    c[0].number_input("Learning rate", 1e-6, 10.0, key=k("lr"), format="%.4g", step=0.001, disabled=busy)
    c[1].selectbox("Optimizer", ["adam", "sgd"], format_func=lambda o: {"adam": "Adam", "sgd": "SGD"}[o],
                   key=k("optimizer"), disabled=busy)
    c[2].number_input("Hidden units", 1, 512, key=k("hidden"), disabled=busy)
    c[3].number_input("Dropout", 0.0, 0.95, key=k("dropout"), step=0.05, disabled=busy)
    c[4].number_input("Seed", 0, 2**31 - 1, key=k("seed"), disabled=busy)
    c[5].selectbox("Backend", available_backends(), key=k("backend"), disabled=busy,
                   help="numpy: fast. python: every kernel as Python loops (slow; use the built-in corpus). "
                        "cuda: where a GPU is present.")
    c[6].checkbox("Shuffle", key=k("shuffle"), disabled=busy,
                  help="Shuffle the batches every epoch. HW2 visits them in file order; shuffling usually helps.")
    c = st.columns([1, 1, 1, 1.6, 2.4])
    c[0].number_input("Weight decay", 0.0, 1.0, key=k("weight_decay"), format="%.4g", step=0.0001, disabled=busy,
                      help="L2 penalty on the network's weights (not on the word vectors). Beyond HW2.")
    c[1].selectbox("LR schedule", list(LR_SCHEDULES), key=k("lr_schedule"), disabled=busy,
                   help="cosine: the learning rate decays from its value to 0 over the run. Beyond HW2.")
    c[2].number_input("Word dropout", 0.0, 0.9, key=k("word_dropout"), step=0.05, disabled=busy,
                      help="Drop each word of a training sentence with this probability. Beyond HW2.")
    c[3].checkbox("Train word vectors", key=k("train_embeddings"), disabled=busy,
                  help="Also train the GloVe vectors of the vocabulary (they start as GloVe). Beyond HW2: what "
                       "lifts full SST-2 above 80%.")
    c[4].caption("The last four go beyond HW2 (off in HW2's setting); the Full SST-2 preset uses them.")
    if S[k("dataset")] == "builtin":
        st.caption("Built-in corpus: about 290 short movie-review sentences written for this app "
                   "(not SST-2), including negations and “good but boring” contrasts; 60 held out for validation.")
    elif S[k("dataset")] == "subset" and (S[k("n_train")], S[k("n_val")]) == (450, 100):
        st.caption("HW2's setting: the first 450 training and first 100 validation sentences of SST-2. "
                   "HW2's target is 75% best validation accuracy (lr 0.01, 250 epochs: 71–76% in file order, "
                   "77–82% shuffled, depending on the seed). " + training_faq_text())


# --- your own data (kept in this browser session only) --------------------------------------------
def _read_own() -> None:
    """Parse what the user gave (an uploaded file wins over pasted text); keep it or the error."""
    up, val_up = S.get(k("own_file")), S.get(k("own_val_file"))
    got = read_own_input((up.name, up.getvalue()) if up is not None else None,
                         (val_up.name, val_up.getvalue()) if val_up is not None else None, S.get(k("own_paste"), ""))
    S[k("own")], S[k("own_error")], S[k("error")] = got.own, got.error, None
    if got.clear_paste:
        S[k("own_paste")] = ""


if S[k("dataset")] == "own":
    with st.container(border=True):
        st.markdown("**Your own sentences** — one per line, `sentence,label` (CSV) or `sentence<TAB>label` (TSV); "
                    "labels `0`/`1` or `negative`/`positive`; a header line is optional. At most "
                    f"{MAX_USER_BYTES // 1_000_000} MB per file. Kept in this browser session only: nothing is "
                    "saved on the server.")
        oc = st.columns(2)
        limits = (f"At most {MAX_USER_BYTES // 1_000_000} MB, {count(MAX_USER_ROWS)} sentences and {count(MAX_SENTENCE_CHARS)} "
                  "characters per sentence.")
        oc[0].file_uploader("Training file (CSV or TSV)", type=["csv", "tsv", "txt"], key=k("own_file"),
                            on_change=_read_own, disabled=busy, help=limits)
        oc[1].file_uploader("Validation file (optional: else the last 20% are held out)", type=["csv", "tsv", "txt"],
                            key=k("own_val_file"), on_change=_read_own, disabled=busy, help=limits)
        st.text_area("…or paste training sentences", key=k("own_paste"), height=110, on_change=_read_own,
                     placeholder="a gripping , beautifully acted film,1\nthe plot is a mess,0", disabled=busy,
                     max_chars=MAX_USER_BYTES,
                     help=f"At most {count(MAX_USER_BYTES)} characters (5 MB) and {count(MAX_SENTENCE_CHARS)} characters per "
                          "sentence; longer text is refused and not kept.")
        if S[k("own_error")]:
            st.error("**Not accepted** — " + md_escape(S[k("own_error")]), icon="🚫")
        elif S[k("own")] is not None:
            own = S[k("own")]
            st.success(md_escape(own.note) + f" · {percent(own.train.positive_fraction)} positive.",
                       icon=":material/check:")
        else:
            st.info("Upload a file or paste sentences, then press **Start training**.")

one_click[3].button("Start training", icon=":material/play_arrow:", type="primary", on_click=_start,
                    args=(S[k("run_number")],), width="stretch")   # no tooltip: it stayed open over the settings after the click
if S.get(k("error")):
    st.error(md_escape(S[k("error")]))

publish_link(ctx, {name: S[k(name)] for name in ("dataset", "n_train", "n_val", "epochs", "batch_size", "lr",
                                                 "optimizer", "seed")})


# drawn intent (explorer.kit.widgets): the run's buttons act on what they said when drawn ("Pause": pause)
def _pause_resume(pause: bool) -> None:
    r = S[k("run")]
    if r is None:
        return
    if pause:
        r.pause()
    else:
        r.resume()


def _stop() -> None:
    r = S[k("run")]
    if r is not None:
        r.stop()


def _replay(start: bool) -> None:
    """Start (or end: ``start`` False) the replay of the finished run; the page runs again in full to start (stop)
    its timer. A replay already going on is not restarted (the same click's callback run twice)."""
    if not start:
        S[k("replay")] = None
    elif S[k("replay")] is None:
        S[k("replay")] = Replay(time.monotonic(), float(S[k("replay_pace")]))
    S[k("replay_rerun")] = True


def _check_sentence() -> None:
    """A sentence over the limit is refused and dropped from the session (the box holds the default again)."""
    why = too_large(S.get(k("text")), MAX_SENTENCE_CHARS)
    S[k("text_refused")] = None if why is None else f"Sentence refused: {why}; the box holds the example again."
    if why is not None:
        S[k("text")] = EXAMPLE_SENTENCE


@bounded_cache(4 << 20, spinner=None)
def cached_svg(dot: str) -> str | None:
    return network_svg(dot)   # Graphviz on the server; the network only changes with each new look inside


# --- live view (a fragment that polls the run while it trains) --------------------------------
# every second while it trains; every 3 s on a loaded server unless a class watches (the lecturer's projector)
poll_s, S[k("poll_slowed")] = ((1.0, False) if in_class() else
                               poll_period(1.0, bool(S.get(k("poll_slowed")))))


@st.fragment(run_every=poll_s if busy else 0.5 if replaying else None)
@progress_poll   # a poll waits while a Step or a page open computes elsewhere on the server
def live_view() -> None:
    if busy and not in_class() and poll_period(1.0, S[k("poll_slowed")])[1] != S[k("poll_slowed")]:
        S[TIMER_RUN] = True   # not a run the session asked for (the page-run limit leaves it out)
        st.rerun()            # the whole page, once: the fragment's timer takes the new period
    r: TrainingRun | None = S[k("run")]
    if r is None and look.presenting:   # the run's empty axes and goal line, where the curves will grow
        st.markdown(before_run_text(S[k("epochs")]))
        empty, h = empty_snapshot(S[k("epochs")]), int(look.figure_height * 0.24)
        g = st.columns([1, 1])
        g[0].vega_lite_chart(*loss_chart(empty, chart_font, h), width="stretch", key=k("loss_chart"))
        g[1].vega_lite_chart(*accuracy_chart(empty, TARGET_ACCURACY, chart_font, h), width="stretch",
                             key=k("acc_chart"))
        return
    if r is None:
        st.info("Choose a dataset and press **Start training** (or a one-click preset above). The curves grow "
                "here while the engine trains.")
        return
    if S.pop(k("replay_rerun"), False):
        st.rerun()   # the whole page: the fragment's timer starts (stops) with the replay
    snap = recorded = r.snapshot()
    rp: Replay | None = S[k("replay")] if recorded.done else None
    if rp is not None:
        if rp.over(time.monotonic()):
            S[k("replay")] = None
            st.rerun()
        snap = snapshot_at(recorded, rp.position(time.monotonic(), recorded.total_epochs))
    # the run's own buttons live in the fragment: a click reruns only the fragment, never racing the
    # full-page rerun against the fragment's timer (a full rerun could leave the timer unscheduled)
    # once the run is over, the replay's button and pace; on a projector they take the place of Pause and Stop
    # (over, they do nothing), so that the progress line keeps its width and the network stays on the screen
    projector_done = look.presenting and recorded.done
    b = st.columns([1.3, 1, 4] if projector_done else [1, 1, 1.3, 1, 3.2] if recorded.done else [1, 1, 4] if
                   look.presenting else [1, 1, 1.3, 1, 3.2],
                   vertical_alignment="center")
    if not projector_done:
        paused = r.control.paused
        b[0].button("Resume" if paused else "Pause", icon=":material/play_arrow:" if paused else ":material/pause:",
                    on_click=_pause_resume, args=(not paused,), disabled=recorded.done, width="stretch")
        b[1].button("Stop", icon=":material/stop:", on_click=_stop, disabled=recorded.done, width="stretch")
    if recorded.done:   # a run of a few seconds is over before the class sees it: replay its recorded numbers
        rb, pace = (b[0], b[1]) if projector_done else (b[2], b[3])
        rb.button("End replay" if rp else "Replay slowly", icon=":material/replay:", on_click=_replay,
                  args=(not rp,), width="stretch")   # no tooltip: it stayed over the settings after the click
        pace.selectbox("Replay pace", PACES, key=k("replay_pace"), format_func=lambda s: f"over {s} s",
                       label_visibility="collapsed", disabled=rp is not None)
    started = snap.started
    # the text is its own element (a progress bar's text lagged the figures by seconds in the browser), and the
    # run's figures join it in the same element (metrics under the curves were painted a poll after it); on a
    # projector it sits beside the run's buttons, on a laptop under them: the curves start on the first screen
    progress_line = (b[-1] if look.presenting else st).empty()
    line = replay_text(recorded, snap, rp) if rp else progress_text(snap)
    st.progress(snap.progress)
    if snap.finished is not None and snap.finished.status == "error":
        st.error(md_escape(snap.finished.error))
    if snap.note:
        st.warning(snap.note)
    if snap.queue_position is not None:
        st.info(f"Every training process of the server is busy: this run is number {snap.queue_position} in the "
                "queue and starts by itself when one is free.", icon=":material/hourglass_top:")
    target = hw2_target(S[k("run_dataset")], r.trainer)
    # on a projector the goal line the class was told to watch (before_run_text) stays drawn after training and
    # during a replay, whatever the data; the points against HW2's target are said for HW2's subset only
    goal = goal_line(target, look.presenting)
    last = snap.epochs[-1] if snap.epochs else None
    val_now = latest_val_accuracy(snap)
    if last is not None:  # one line: the curves get the room
        best = last.best_val_accuracy
        parts = [f"epoch **{last.epoch} / {snap.total_epochs}**", f"train loss **{num(last.train_loss)}**"]
        if val_now is not None:
            parts.append(f"validation accuracy **{percent(val_now, 1)}**")
        if best is not None:
            # its epoch is in the accuracy chart's subtitle (here it wrapped the line to three on a projector)
            vs = f" ({(best - target) * 100:+.1f} points vs HW2's 75% target)" if target else ""
            parts.append(f"best **{percent(best, 1)}**{vs}")
        line += "  \n" + " · ".join(parts)
    # written once per run: written twice, the browser painted the bare line and then the line with its figures
    progress_line.markdown(line)
    # Vega-Lite, not Plotly, for what updates every second: Streamlit updates its data in place, where a
    # Plotly chart is remounted at every change (it flashed empty while training)
    h = int(look.figure_height * (0.24 if look.presenting else 0.32))
    look_now = last_look(snap)
    # presentation mode: the curves, and the network picture left to right under them, on the first screen
    g = st.columns([1, 1])
    g[0].vega_lite_chart(*loss_chart(snap, chart_font, h), width="stretch", key=k("loss_chart"))
    g[1].vega_lite_chart(*accuracy_chart(snap, goal, chart_font, h), width="stretch", key=k("acc_chart"))
    if started is not None and not look.presenting:
        st.caption(f"Run {S[k('run_number')]} · {count(started.n_train)} training / {count(started.n_val)} validation "
                   f"sentences · {count(started.n_params)} parameters · backend `{started.config['backend']}` · "
                   f"GloVe: {md_escape(started.glove_source)} · {unknown_words_text(started)}")
    # the network top to bottom at its own size (a left-to-right one scaled down to the page was unreadable)
    net_dot = network_dot(r.trainer, look_now, look.figure_font, rankdir="LR" if look.presenting else "TB",
                          n_batches=snap.n_batches_per_epoch)
    svg = cached_svg(net_dot)
    picture_col = st.container() if look.presenting else None

    st.markdown("##### A look inside, while it trains")
    # on a projector the picture stands above, under the curves: the look inside takes the page's width (a left
    # column left for it stayed empty)
    left, right = (None, st.container()) if look.presenting else st.columns([2, 5])
    picture_col = picture_col or left
    if svg is not None:
        picture_col.image(svg, width=present_picture_px(svg, look.figure_font) if look.presenting else "stretch")
    else:   # no Graphviz on the server: the browser lays the same DOT out
        picture_col.graphviz_chart(net_dot, width="stretch")
        picture_col.caption(NO_SERVER_GRAPHVIZ)
    with right:
        st.markdown(units_title(look_now, snap.n_batches_per_epoch))
        st.vega_lite_chart(*units_chart(look_now, r.trainer.config.hidden, chart_font,
                                        int(chart_font * 3)), width="stretch", key=k("units_chart"))
        st.caption(dead_relu_text(look_now, r.trainer.config, snap.n_batches_per_epoch))
        dim, hidden = r.trainer.model.embedding_dim, r.trainer.config.hidden
        st.markdown(f"<span style='color:#1f77b4'>━━ fc1 = Linear({dim}, {hidden})</span> &nbsp; "
                    f"<span style='color:#ff7f0e'>━━ fc2 = Linear({hidden}, 1)</span> &nbsp; (measured right after "
                    "a training step, a few times per epoch)", unsafe_allow_html=True)
        charts = inside_charts(snap.look_columns, snap.total_epochs, chart_font, int(look.figure_height * 0.32))
        for row in (charts[:2], charts[2:]):
            for i, (col, chart) in enumerate(zip(st.columns(2), row)):
                col.vega_lite_chart(*chart, width="stretch", key=k(f"inside_chart_{chart[1]['title']}"))
    if snap.done and S.get(k("shown_done")) is not r:
        S[k("shown_done")] = r
        _keep_current_run()
        # on a projector the class watches the curves grow: the finished run replays itself at the chosen pace
        # (the lecturer can End replay); on a laptop the reader asks for it
        if S[k("replay")] is None:
            S[k("replay")] = auto_replay(look.presenting, recorded, S[k("replay_pace")], time.monotonic())
        st.rerun()  # once, so that the whole page shows the finished state and the results


live_view()

if run is None and look.presenting:  # the picture the live view redraws while it trains, at the same place
    before = untrained_network(S[k("hidden")], S[k("dropout")])
    net_dot = network_dot(before, None, look.figure_font, rankdir="LR")
    svg = cached_svg(net_dot)
    if svg is not None:
        st.image(svg, width=present_picture_px(svg, look.figure_font))
    else:
        st.graphviz_chart(net_dot)
elif run is None:
    with st.expander("The network (layers collapsed)", expanded=True):
        show_plot(style_graph_figure(network_figure(untrained_network(S[k("hidden")], S[k("dropout")])), look),
                  look, key=k("network_graph"))
        st.caption("Grey stages have no parameters. Padding: a batch is padded with zero vectors to its longest "
                   "sentence and the mean divides by each sentence's real length, so a prediction never depends "
                   "on the other sentences in the batch. While a run trains, the look inside draws this network "
                   "with each layer's weight and gradient norms and the share of dead ReLU units.")

# --- after training: the best checkpoint ------------------------------------------------------------
if run is not None and run.snapshot().done and run.snapshot().started is not None:
    trainer = run.trainer
    st.subheader("The trained model")
    st.info(checkpoint_text(run.snapshot()), icon=":material/star:")
    with st.expander("What HW2's autograder would read from this run (`default_log_fn`'s lines)"):
        st.code("\n".join(autograder_log(run.snapshot().epochs, last=AUTOGRADER_EPOCHS)), language=None)
        st.caption(AUTOGRADER_NOTE + f" The last {AUTOGRADER_EPOCHS} epochs of this run, printed in that format; "
                   "the Your HW2 code page has the rest of the handout.")
    st.markdown("##### Validation sentences")
    st.toggle("Show only the errors", key=k("errors_only"))
    table = validation_table(trainer, S[k("errors_only")])
    st.caption(f"{count(len(table))} sentences shown; P(positive) is the best checkpoint's output (dropout off).")
    show_table(table, look, width="stretch", height=320,
               column_config={"P(positive)": st.column_config.ProgressColumn("P(positive)", min_value=0.0,
                                                                            max_value=1.0, format="%.3f")})

    st.markdown("##### Validation accuracy per type of sentence")
    st.caption(TYPE_RULE)
    per_type = per_type_table(trainer)
    show_table(per_type, look,
               column_config={"accuracy": st.column_config.NumberColumn("accuracy", format="%.3f"),
                              "the notes' accuracy": st.column_config.NumberColumn("the notes' accuracy",
                                                                                   format="%.3f")})
    st.caption("Accuracy: the best checkpoint's predictions on this run's validation sentences (the table above), "
               "counted per type. " + notes_differ_text(per_type, md_escape(S[k("run_dataset")])))

    st.markdown("##### Try your own sentence")
    st.text_input("Sentence", key=k("text"), max_chars=MAX_SENTENCE_CHARS, on_change=_check_sentence,
                  help=f"At most {count(MAX_SENTENCE_CHARS)} characters; a longer text is refused and not kept.")
    if S.get(k("text_refused")):
        st.warning(md_escape(S[k("text_refused")]))
    try:
        pred = predict_sentence(trainer, S[k("text")])
    except ValueError as e:
        st.warning(md_escape(e))
    else:
        label = "positive" if pred.label else "negative"
        st.markdown(f"Prediction of the best checkpoint: **{label}** (P(positive) = {fixed(pred.probability, 3)})")
        st.markdown("Tokens: " + " ".join(code_span(t) for t in pred.tokens))
        if pred.unknown:
            st.warning("Unknown to GloVe (they all get the same fixed random vector): "
                       + ", ".join(code_span(w) for w in pred.unknown))
        else:
            st.caption("Every word has a GloVe vector.")

    st.markdown("##### What an averaged bag of words cannot do")
    st.markdown("The mean of the word vectors forgets word order: two sentences with the same words "
                "get exactly the same input, so exactly the same prediction, whatever they mean.")
    demo = word_order_demo(trainer)
    st.markdown(order_blind_text(demo))
    show_table(demo, look)

# --- compare runs ---------------------------------------------------------------------------------------
kept = S[k("kept")]
if kept:
    st.subheader(f"Compare runs ({len(kept)} kept, the last {MAX_KEPT_RUNS} of this session)")
    cc = st.columns([3, 2])
    names = {r.number: r.label for r in kept}
    chosen = cc[0].multiselect("Runs", list(names), default=list(names), format_func=names.get,
                               key=k(f"compare_runs_{'_'.join(map(str, names))}"))
    cc[1].radio("Curve", list(COMPARE_METRICS), format_func=COMPARE_METRICS.get, key=k("compare_metric"),
                horizontal=True)
    shown = [r for r in kept if r.number in chosen]
    show_plot(compare_figure(shown, S[k("compare_metric")], look.figure_font, look.figure_height), look,
              key=k("compare_chart"))
    show_table(compare_rows(shown), look)
    st.caption("A run is kept when it ends (or when a new run replaces it). Start runs that differ in one "
               "setting — learning rate, optimizer, dropout, backend — and overlay their curves here.")
