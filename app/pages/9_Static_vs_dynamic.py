"""One program as a static graph run with a feed dict and as the graph the eager run recorded; what gradients() adds.

The same program as a static (TensorFlow 1 style) graph and as an eager, dynamic one: run a fetch with a feed dict and watch only the nodes it needs light up, the gradient nodes gradients() adds, a loop unrolled for several lengths, constant folding before and after, and a training step captured once and replayed.
"""
from __future__ import annotations


import numpy as np
import streamlit as st

from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import floor_growth, graph_scale, style_graph_figure
from explorer.kit.formatting import code_span, fixed, md_escape
from explorer.kit.labels import num
from explorer.kit.presentation import PACED_SLIDER, small_screen_css, small_screen_floor_px
from explorer.kit.reference import ReferenceFailed
from explorer.kit.widgets import (fixed_figure, graph_px, presentation_toggle, publish_link, show_plot, show_table,
                                  start_page)
from explorer import granularity
from explorer import static_vs_dynamic as M

ctx = start_page(
    "Static vs dynamic", "static",
    fields={"example": LinkField("str", "lecture", choices=tuple(M.EXAMPLES)),
            "grads": LinkField("bool", False), "train": LinkField("bool", False), "fetch": LinkField("str", ""),
            "length": LinkField("int", 6, choices=(3, 6, 12))},
    defaults={"example": "lecture", "grads": False, "train": False, "fetch": "", "length": 6})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(small_screen_css())   # code, labels, captions, tables: 16 px or more at 1366 x 768 too
# presenting, the graph's every text is 16 px or more at 1366 x 768 too: laid out that much smaller, drawn larger
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(8 << 20, spinner="Unrolling the loop both ways on the engine…")
def cached_rnn_rows(lengths: tuple[int, ...]):
    return M.unrolled_rnn_rows(lengths)


legend = M.legend_html()

# --- 1. one program, two ways ------------------------------------------------------------------------
if not look.presenting:   # on a projector the page's title heads it: the code and the graph get the room
    st.subheader("Build once, run with a feed dict")
head = st.columns([2.4, 1.2, 1.4, 1.4])
head[0].selectbox("Program", list(M.EXAMPLES), format_func=M.EXAMPLES.get, key=ns.key("example"))
head[1].checkbox("add gradients()", key=ns.key("grads"),
                 help="gradients(loss, variables) adds the backward pass to the graph as nodes, built from "
                      "the same VJP rules eager mode uses. Nothing is computed until a run needs it.")
head[2].checkbox("add a training op", key=ns.key("train"),
                 help="GradientDescentOptimizer(0.1).minimize(loss): one update node per variable.",
                 disabled=st.session_state[ns.key("example")] == "lecture")
with head[3]:
    presentation_toggle()

example = st.session_state[ns.key("example")]
ex = M.build_example(example, st.session_state[ns.key("grads")], st.session_state[ns.key("train")])
# presentation mode: code and run controls on the left, the graph beside them (one 1080p screen)
if look.presenting:
    side, stage = st.columns([1 - M.PRESENT_STAGE_SHARE, M.PRESENT_STAGE_SHARE])
    code, run_cols = [side, side], [side, side, stage]
else:
    code, stage = st.columns(2), st.container()
code[0].markdown("**Static graph** (define, then run)")
code[0].code(ex.static_code, language="python", wrap_lines=True)
code[1].markdown("**Eager / dynamic** (define by running)")
code[1].code(ex.eager_code, language="python", wrap_lines=True)

if not look.presenting:
    run_cols = st.columns([2, 2, 3])
fetch_names = list(ex.fetches)
if st.session_state.get(ns.key("fetch")) not in fetch_names:
    st.session_state[ns.key("fetch")] = fetch_names[0]
run_cols[0].selectbox("Fetch (what Session.run computes)", fetch_names, key=ns.key("fetch"))
placeholders = list(ex.feeds)
if st.session_state.get(ns.key("fed_for")) != example:  # a new program: feed all its placeholders
    st.session_state[ns.key("fed")] = placeholders
    st.session_state[ns.key("fed_for")] = example
run_cols[1].multiselect("feed_dict holds", placeholders, key=ns.key("fed"),
                        help="Leave a placeholder out to see the error a run gives when the fetch needs it.")
result = M.run_fetch(ex, st.session_state[ns.key("fetch")], list(st.session_state[ns.key("fed")]))

# presentation mode: a one-line count over the graph, the graph at the first screen's remaining height, the
# slider and the legend under it; else the count and the slider beside the run controls, the legend over the graph
count_at, graph_at, slider_at = ((stage.container(), stage.container(), stage.container()) if look.presenting
                                 else (run_cols[2], stage, run_cols[2]))
if result.error:
    count_at.error(f"**Session.run failed** — {result.error}", icon="🚫")
    upto = 0
else:
    n_eval = len(result.evaluated)
    count_line = count_at.empty()   # written once the slider says how far the run has got
    # on a projector the lecture's run starts dark and the lecturer lights it up node by node: its order is the
    # answer to the in-class exercise below, so the page does not show it before the class has guessed
    start_dark = look.presenting and example == "lecture" and not st.session_state[ns.key("grads")]
    upto = slider_at.slider("Evaluation order: light up the first k nodes", 0, n_eval, 0 if start_dark else n_eval,
                            key=ns.key(f"{PACED_SLIDER}_upto"))   # the clicker's keys step it
    count_line.success(result.count_text(short=look.presenting, upto=upto))   # what is evaluated at this step
# the legend at the text's size on a projector (the floor's 23 px), smaller on a laptop
(slider_at if look.presenting else stage).html(f"<div style='font-size:{f'{floor}px' if floor else '0.85rem'}'>"
                                               f"{legend}</div>")
def stage_figure(k: float) -> dict:
    """The run's graph laid out for the stage ``k`` times smaller than drawn (a projector's text floor: k = grow)."""
    size = ({"width": int(graph_px(look, M.STATIC_WIDTH, M.PRESENT_STAGE_SHARE) / k),
             "max_height": int(M.PRESENT_GRAPH_PX / graph_scale(look) / k), "whole_text_only": True}
            if look.presenting else {})
    return M.graph_figure(ex.graph, result.evaluated if not result.error else None, upto, fed=result.fed,
                          focus=M.window_focus(ex, result.evaluated, upto), **size)


# on a projector the graph at the small screen's text floor where it fits whole; a graph that would need a window
# there keeps the larger window of the 1920 x 1080 sizes (its text 15 px at 1366 x 768), so that the window still holds
# what the run's lesson needs (exercise 11: the skipped loss beside the prediction and the gradient node)
run_fig = stage_figure(grow)
stage_floor = floor
if floor and (run_fig.get("layout", {}).get("meta") or {}).get("window"):
    run_fig, stage_floor = stage_figure(1.0), None
show_plot(style_graph_figure(run_fig, look, floor_px=stage_floor), look, key=ns.key("graph"), where=graph_at)
if not result.error:
    names = [ex.graph.nodes[i].name for i in result.evaluated]
    if upto >= len(names):
        st.caption("Evaluation order (topological, only what the fetch depends on): " + " → ".join(names))
    elif upto == 0:
        st.caption("Evaluation order: move the slider to light the nodes up in the order Session.run evaluates them.")
    else:
        st.caption(f"Evaluation order, the first {upto} of {len(names)}: " + " → ".join(names[:upto]) + " → …")
    vcols = st.columns([2, 3])
    if result.value is not None:
        vcols[0].markdown(f"**{result.fetch}** =")
        vcols[0].code(np.array2string(np.asarray(result.value), precision=4, suppress_small=True))
    else:
        vcols[0].markdown("The training op ran: every variable was assigned `var - 0.1 * gradient` at the end "
                          "of the run.")
    if result.matches_eager is not None:
        vcols[0].markdown("Same numbers as the eager run: **" + ("yes, bit for bit" if result.matches_eager
                                                                  else "no") + "**")
    with vcols[1]:
        st.markdown(M.node_count_text(ex) + " " + M.skipped_text(ex, result))
        if ex.with_gradients:
            st.caption(M.gradients_note(ex))
        if ex.with_train and st.session_state[ns.key("fetch")] == "train step (SGD)":
            st.caption(M.training_note(ex, result.counted))
        show_table(M.counts_over_steps(ex), look, static=True)  # HTML: its cells wrap, no column cut off

st.markdown("##### The graph the eager run recorded")
eg = ex.eager_graph
st.markdown(M.eager_count_text(ex))
st.html(f"<div style='font-size:0.85rem'>{M.eager_legend_html()}</div>")
show_plot(style_graph_figure(M.eager_figure(eg), look), look,
          key=ns.key(f"eager_graph_{example}_{ex.with_gradients or ex.with_train}"))
st.caption("The same code builds this graph *while it computes*; the next step records a new one.")

# --- TF1's two phases --------------------------------------------------------------------------------
st.divider()
st.subheader("TensorFlow 1's two phases: build a graph, then run it in a Session on a device")
tp_cols = st.columns(2)
tp_cols[0].markdown("**TensorFlow 1** (the lecture's example)")
tp_cols[0].code(M.TF1_CODE, language="python")
device = tp_cols[1].radio("Device (the graph's backend)", M.device_choices(), format_func=M.device_label,
                          horizontal=True, key=ns.key("device"))
tp = M.two_phase_demo(device)
tp_cols[1].code(M.two_phase_code(device), language="python")
if tp.available:
    tp_cols[1].markdown(f"**Phase 1** built {len(tp.built)} nodes ({', '.join(f'`{n}`' for n in tp.built)}) and "
                        "computed nothing: asking for `res`'s value now gives")
    tp_cols[1].code(tp.before_run, language=None, wrap_lines=True)
    tp_cols[1].success("**Phase 2** — " + tp.run_text())
    show_plot(style_graph_figure(M.graph_figure(tp.graph, tp.evaluated, len(tp.evaluated), width=M.HALF_WIDTH),
                                 look), look, key=ns.key("two_phase_graph"), where=tp_cols[0])
else:
    tp_cols[1].warning(tp.run_text(), icon=":material/memory:")
st.caption(M.TWO_PHASE_NOTE)

# --- in-class exercise: Session.run's order --------------------------------------------------------------
st.divider()
st.subheader("In-class exercise: in which order does Session.run evaluate?")
st.markdown("Write the nodes `Session.run` evaluates, in order, separated by commas (the fed `x` counts); the "
            "engine's own `Session` checks it." if look.presenting else
            "The lecture's graph h = relu(x @ W + b) is built (6 nodes: `x`, `W`, `b`, `matmul`, `add`, `relu`). "
            "`Session.run` topologically sorts the nodes the fetch needs and evaluates them one by one, a fed "
            "placeholder taking its value from the feed dict. Write the nodes the run evaluates, in an order it "
            "may use, separated by commas (count the fed `x` as the lecture does). The page runs the engine's own "
            "`Session` and checks your answer against it.")
verdicts = st.session_state.setdefault(ns.key("order_verdicts"), {})
with st.form(ns.key("order_form"), border=True):
    ex_fetch = st.radio("Fetch", list(M.SESSION_EXERCISE_FETCHES), horizontal=True, key=ns.key("order_fetch"),
                        format_func=lambda f: M.SESSION_EXERCISE_FETCHES[f])
    st.text_input("Nodes evaluated, in order", key=ns.key("order_answer"), max_chars=M.MAX_ORDER_CHARS,
                  placeholder="x, W, ...")
    if st.form_submit_button("Check my order", type="primary"):
        exercise = M.session_order_exercise(ex_fetch)
        v = M.check_session_order(exercise, st.session_state[ns.key("order_answer")])
        verdicts[ex_fetch] = (v.correct, v.message)
for f, (right, message) in verdicts.items():
    show = st.success if right else st.error
    show(f"`{M.SESSION_EXERCISE_FETCHES[f]}`: {md_escape(message)}",
         icon=":material/check_circle:" if right else ":material/cancel:")

st.markdown("##### The same exercise as code: fill in the mini-TensorFlow")
st.markdown("Choose a line for each blank; **Check my code** runs it beside the engine's own `Session.run`."
            if look.presenting else
            "The notes' mini-TensorFlow sorts the nodes the fetches need and evaluates them. Choose a line for each "
            "blank; **Check my code** runs your completed code on the lecture's graph (a small interpreter, on the "
            "engine's real nodes) and sets it beside the engine's own `Session.run` of `[h]` and of `[h, x @ W]`.")
mini = st.session_state.setdefault(ns.key("mini_checked"), {})   # {"fills": ..., "verdict": ...} after a check
mini_cols = st.columns([3, 2])
code_slot = mini_cols[0].empty()   # written after the form, so a check shows the lines just chosen
with mini_cols[1].form(ns.key("mini_form"), border=True):
    for blank in M.MINI_TF_BLANKS:
        # a label reads Markdown (its __ would be bold): the blank's mark is escaped to show as in the code
        st.selectbox(md_escape(f"____({blank.number})____ {blank.what}"), [c.code for c in blank.choices], index=None,
                     format_func=M.choice_label, placeholder="choose a line", key=ns.key(f"mini_{blank.number}"))
    if st.form_submit_button("Check my code", type="primary"):
        fills = {b.number: st.session_state[ns.key(f"mini_{b.number}")] for b in M.MINI_TF_BLANKS}
        mini.update(fills=fills, verdict=M.check_mini_tf(fills))
code_slot.code(M.mini_tf_code(mini.get("fills")), language="python")
if mini.get("verdict") is not None:
    for bv in mini["verdict"].blanks:
        line = f"**({bv.number})** " + (f"{code_span(M.choice_label(bv.fill))} — " if bv.fill else "")
        (st.success if bv.right else st.error)(line + md_escape(bv.message),
                                              icon=":material/check_circle:" if bv.right else ":material/cancel:")
    for run in mini["verdict"].runs:
        (st.success if run.problem is None else st.error)(f"Your code, `{run.call}`: {md_escape(run.summary())}")
    if not mini["verdict"].runs:
        st.warning("Fill every blank to run the code.")

# --- 2. control flow --------------------------------------------------------------------------------
st.divider()
st.subheader("Control flow: a recurrent step unrolled")
rows = cached_rnn_rows((3, 6, 12))
# presentation mode: the recurrence, the loop's code and the graph side by side under the heading (one screen
# at every projector size), the counts under them
rc = st.columns([1, 1.55]) if look.presenting else None
(rc[0] if look.presenting else st).markdown(
    "h<sub>t+1</sub> = sigmoid(h<sub>t</sub> · w + x<sub>t</sub>): a static graph needs one graph per length T."
    if look.presenting else
    "h<sub>t+1</sub> = sigmoid(h<sub>t</sub> · w + x<sub>t</sub>), h<sub>0</sub> = 0. Eagerly, the Python loop simply "
    "runs and the recorded graph grows with it. A static graph is built by running the loop *while building*, so "
    "each length needs a graph of its own.", unsafe_allow_html=True)
if not look.presenting:
    show_table(rows, look)
    st.caption(M.rnn_note(rows))
    rc = st.columns([1.4, 3])
rc[0].select_slider("Draw the static graph for T =", options=[3, 6, 12], key=ns.key("length"))
rc[0].code("for t in range(T):\n    h = sigmoid(h * w + x[t])", language="python", wrap_lines=True)
rc[0].checkbox("draw every op (not one box per step)", key=ns.key("rnn_ops"))
T = int(st.session_state[ns.key("length")])
g_rnn, _, _, _ = M.rnn_static(T)
with rc[1]:
    show_plot(style_graph_figure(M.rnn_figure(T, expand=bool(st.session_state.get(ns.key("rnn_ops")))), look), look,
              key=ns.key("rnn_graph"))
    st.caption(f"Static graph for T = {T}: {len(g_rnn.nodes)} nodes (x is one placeholder of length {T}; each "
               "step adds getitem, mul, add, sigmoid).")
if look.presenting:
    show_table(rows, look)
    st.caption(M.rnn_note(rows))

st.markdown("##### A branch that depends on the data")
bd = M.branch_demo()
bc = st.columns([2.3, 3, 3])  # the code's longest line whole at 1400 px
bc[0].code(M.BRANCH_CODE, language="python")
for col, xv, took, graph, key in zip(bc[1:], bd.inputs, bd.branches, bd.graphs, ("pos", "neg")):
    col.markdown(f"**Eagerly, x = {np.array2string(xv, precision=2)}**: takes `{took}`")
    show_plot(style_graph_figure(M.eager_figure(graph, width=M.HALF_WIDTH), look), look,
              key=ns.key(f"branch_{key}"), where=col)
# across the page's width, under the code and both graphs (in the code's column it wrapped to 10 lines)
st.error(f"**As a static graph** — `if h.sum() > 0` on a placeholder: {bd.static_error}", icon="🚫")
st.caption("Eagerly the `if` sees a number; a static graph has none yet, so TensorFlow 1 needs tf.cond."
           if look.presenting else
           "Eager mode runs the Python `if` on a real number, so each input records the graph of the branch it "
           "took (the sum that decided is not in the graph: nothing flows from it to the output). A static graph "
           "is built before any value exists, so the `if` cannot be decided: TensorFlow 1 needs the branch as a "
           "graph op (tf.cond) holding both sides.")

# --- 3. constant folding ---------------------------------------------------------------------------------
st.divider()
st.subheader("Constant folding")
fd = M.folding_demo()
st.code(M.FOLDING_CODE, language="python")
show_table(fd.rows, look)
st.markdown(f"Folded at compile time: {', '.join(f'`{n}`' for n in fd.folded)}. "
            f"Results before and after are identical: **{fd.same_values}**. The gradient of a linear "
            "function of x is a constant, so its whole gradient graph folds away. " + M.folding_note(fd))
# the graph before folding is about 560 px wide and the one after about 240: columns in that ratio draw both
# whole (at half width each, the first was windowed and its left third cut off)
fc = st.columns([2.3, 1]) if not look.presenting else [st.container(), st.container()]
with fc[0]:
    st.markdown("**Before**")
    show_plot(style_graph_figure(M.graph_figure(fd.before, width=M.FOLD_BEFORE_WIDTH), look), look,
              key=ns.key("fold_before"))
with fc[1]:
    st.markdown("**After**")
    show_plot(style_graph_figure(M.graph_figure(fd.after, width=M.FOLD_AFTER_WIDTH), look), look,
              key=ns.key("fold_after"))

# --- 4. capture and replay ------------------------------------------------------------------------------
st.divider()
st.subheader("Write eagerly, run as a graph: capture and replay")
st.markdown("`engine.static.compile` traces one eager HW2 training step once and replays its ops on raw arrays."
            if look.presenting else
            "`engine.static.compile(step, optimizer=opt)` runs one eager HW2 training step under "
            "`trace_ops`, keeps the ops that ran (forward, backward, gradient accumulation) as a flat "
            "program, and replays it on raw arrays afterwards: no Tensor objects, no dispatch, fresh dropout "
            "masks each time, and Adam applied after each replay. The step is the project's one HW2 network "
            "(`sentiment.model.SentimentNet`, the one the Sentiment training page trains) on padded sentences "
            "with HW2's padding-excluded mean.")
if st.button("Trace the HW2 step and replay it 20 times", key=ns.key("compile")):
    st.session_state[ns.key("compiled")] = M.compile_demo(steps=20)
demo = st.session_state.get(ns.key("compiled"))
if demo:
    mc = st.columns(4)
    mc[0].metric("ops traced", demo["traced_ops"])
    mc[1].metric("ops replayed", demo["replayed_ops"])
    mc[2].metric("eager µs / step", fixed(demo['eager_us'], 0))
    mc[3].metric("replayed µs / step", fixed(demo['compiled_us'], 0))
    st.markdown(f"Losses of 21 steps identical to eager mode, bit for bit: **{demo['identical']}** "
                f"(first {num(demo['losses'][0])}, last {num(demo['losses'][-1])}); {demo['distinct_losses']} different "
                "losses in 21 steps: each replay draws a new dropout mask. Timings are this server's, measured "
                "while the page ran.")
    try:
        over = M.overhead_against_pytorch(demo)
    except ReferenceFailed as e:
        st.caption(md_escape(f"PyTorch's time for the same step: {e}"))
    else:
        st.markdown(M.overhead_text(demo, over))
    with st.expander(f"The captured step as a static graph: {M.breakdown_text(demo['breakdown'])}"):
        show_plot(style_graph_figure(demo["graph_figure"], look), look, key=ns.key("captured_graph"))
        st.caption("Orange: ops the backward pass ran (VJP rules and the accumulation into .grad). Adam's "
                   "update is applied after each replay by the optimizer object itself.")

# --- granularity: a fused op or its decomposition ----------------------------------------------------------
st.divider()
st.subheader("Granularity: one fused sigmoid or four primitive ops")
st.markdown("One fused op (x̄ = ȳ ⊙ y(1 − y)) against four recorded primitives, on the same x."
            if look.presenting else
            "How large should a framework's operations be? `engine.sigmoid` is one op whose VJP reads its own "
            "output, x̄ = ȳ ⊙ y(1 − y); `1 / (1 + exp(−x))` is four primitives (neg, exp, add, reciprocal), each "
            "recorded, each keeping what its own VJP reads, each a kernel call. Both below run on the engine, on "
            "the same x; what a compiler's fusion buys is the difference.")
gc = st.columns(2)
gc[0].code("def fused(x):\n    return engine.sigmoid(x)", language="python")
gc[1].code("def decomposed(x):\n    return 1.0 / (1.0 + engine.exp(-x))", language="python")
gran = fixed_figure("granularity.sigmoid", "Fused against decomposed sigmoid")
if gran is not None:
    show_table(granularity.rows(gran), look, static=True)
    st.markdown(granularity.summary(gran))

# --- 5. the framework map -------------------------------------------------------------------------------------
st.divider()
st.subheader("Where this engine sits: the framework map")
st.markdown("A framework wants three things at once; eager and static graphs trade them off, and each framework "
            "below picks its way to get gradients and speed. The last column is what this engine does for each.")
# st.table wraps its cells (a dataframe would cut these sentences), at any size
show_table([{"goal": g, "means": m, "in this engine": e} for g, m, e in M.FRAMEWORK_GOALS], look, static=True)
show_table(M.FRAMEWORKS, look, static=True)
st.markdown("Beyond the graph: hardware, ease of use, ecosystem and parallelism.")
show_table(M.FRAMEWORK_CRITERIA, look, static=True)
st.caption("`torch.compile`, `tf.function` and `jax.jit` all trace eager Python into a graph once and then run the "
           "graph: that is `engine.compile` in section 4. TensorFlow 1 asks for the graph up front: `engine.static` in "
           "sections 1-3.")

publish_link(ctx, {"example": example, "grads": bool(st.session_state[ns.key("grads")]),
                   "train": bool(st.session_state[ns.key("train")]), "fetch": st.session_state[ns.key("fetch")],
                   "length": T})
