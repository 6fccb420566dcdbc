"""Dual numbers carrying value and tangent forward; the passes a full Jacobian needs in each mode; the memory reverse mode keeps.

Forward mode with dual numbers stepping through the same graph (each node carries its value and its derivative forward), the number of passes and ops each mode needs for a full Jacobian of R^n → R^m as n and m vary, how large a full Jacobian is against the vector a VJP carries, and the memory reverse mode keeps for its backward pass as batch and depth grow (the notes' 2L − 1 beside this engine's measured count, at any size).
"""
from __future__ import annotations


import streamlit as st

from explorer.kit import presets
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import floor_growth, line_plot, style_graph_figure
from explorer.kit.presentation import small_screen_css, small_screen_floor_px, small_screen_look
from explorer import forward_vs_reverse as M
from explorer.forward_vs_reverse import (DUAL_WIDTH, JACOBIAN_DEFINITION, MAX_SCALE_DEPTH, MEMORY_DETAILS,
                                        MEMORY_LEAD,
                                        checkpoint_runs, dual_model, hw2_kept_for_backward, jacobian_cost_series,
                                        jacobian_size_table, memory_sentence, memory_series, memory_table,
                                        step_class_view, step_notes, step_rows,
                                        walkthrough)
from explorer.kit.budget import bounded_cache
from explorer.kit.programs import InputProblem, parse, program_refused
from explorer.kit.widgets import (fixed_figure, graph_px, presentation_toggle, preset_picker, program_boxes, publish_link,
                                  show_input_problem, show_plot, show_table, start_page, stepper, still_graph,
                                  walkthrough_download)
from explorer.kit.formatting import count

ctx = start_page(
    "Forward vs reverse", "fwdrev",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "seed": LinkField("str", ""),
            "step": LinkField("int", 1, minimum=0)},  # 1-based, as the header shows it (0: first step)
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "seed": "", "step": 1, "sig": None})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(small_screen_css())   # labels, captions, the table: 16 px or more at 1366 x 768 too
# presenting, the graph's every text is 16 px or more at 1366 x 768 too: laid out that much narrower, drawn larger
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(32 << 20, spinner="Running forward mode on the engine…", refuse=program_refused)
def cached_dual(program: str, inputs: str, seed: str, width: int = DUAL_WIDTH):
    return dual_model(program, inputs, seed, width)


@bounded_cache(8 << 20, spinner="Computing full Jacobians both ways…")
def cached_jacobian(max_n: int, fixed: int):
    return jacobian_cost_series(max_n, fixed)


@bounded_cache(4 << 20, spinner="Measuring keep-all, checkpoint every √L and recompute-all on the engine…")
def cached_checkpoints(width: int, batch: int):
    return checkpoint_runs(width, batch)


@bounded_cache(1 << 20, spinner="Building HW2's network and reading its graph…")
def cached_hw2_kept(batch: int):
    return hw2_kept_for_backward(batch=batch)


@bounded_cache(8 << 20, spinner="Measuring what the backward pass keeps…")
def cached_memory(depth: int, batch: int, width: int):
    return memory_series(depth, batch, width)


if not look.presenting:  # presentation mode gives the room to the graph; the page title says what it is
    st.subheader("Dual numbers: value and derivative carried forward")
head = st.columns([2, 2.6, 1.3, 1.3] if look.presenting else [3, 1], vertical_alignment="bottom")
preset_picker(ns, head[0])
with head[-1]:
    presentation_toggle()
c1, c2, program_text, inputs_text = program_boxes(ns, lk=look, where=head[1])

model = None
try:
    program, _ = parse(program_text, inputs_text)
    names = program.input_names
    if st.session_state[ns.key("seed")] not in names:
        st.session_state[ns.key("seed")] = names[0]
    (head[2] if look.presenting else st).radio(
        "Seed input" if look.presenting else "Seed: derivative with respect to", names, key=ns.key("seed"),
        horizontal=True,
        help="Forward mode gives one directional derivative per pass: the seeded input's tangent is 1 "
             "(all ones for a tensor input), every other input's is 0.")
    model = cached_dual(program_text, inputs_text, st.session_state[ns.key("seed")],
                        int(graph_px(look, DUAL_WIDTH, M.PRESENT_GRAPH_SHARE) / grow))  # presenting: its column
except InputProblem as problem:
    show_input_problem(problem, c1, c2, program_text, inputs_text)

if model is not None:
    seed = st.session_state[ns.key("seed")]
    sig = (program_text, inputs_text, seed)
    if st.session_state[ns.key("sig")] not in (None, sig):
        st.session_state[ns.key("step")] = 1
        st.session_state[ns.key("step_playing")] = False
    st.session_state[ns.key("sig")] = sig

    def draw(step: int) -> None:
        """Header, graph and dual-number table of the 1-based ``step``, and the link (the table beside the
        graph; in presentation mode the graph's column is wider, so that the table's rows, one per input and per
        op computed, stay on the first screen at the last step)."""
        fr = model.frameset.frames[step - 1]
        st.markdown(f"#### Step {step} of {model.n_frames}\n{fr.caption}")
        g, t = st.columns([M.PRESENT_GRAPH_SHARE, 1 - M.PRESENT_GRAPH_SHARE] if look.presenting else [3, 2])
        with g:
            show_plot(style_graph_figure(still_graph(model.figure, step - 1, title=False), look, floor_px=floor),
                      look, key=ns.key("figure"))
        with t:
            show_table(step_rows(model, step), small_screen_look(look), static=True)
            lead, captions = step_notes(model, seed, step, short=look.presenting)
            st.markdown(lead)
            for caption in captions:
                st.caption(caption)
        publish_link(ctx, {"expr": program_text, "at": inputs_text, "seed": seed, "step": step},
                     view=lambda: step_class_view(model, seed, step))

    stepper(ns, model.n_frames, draw)
    walkthrough_download(ns, lambda: walkthrough(model, seed, program_text, inputs_text),
                         "forward_mode_walkthrough.html", model.n_frames)
else:
    publish_link(ctx, {"expr": program_text, "at": inputs_text})

st.divider()
st.subheader("Full Jacobian of f: Rⁿ → Rᵐ — passes and ops")
if look.presenting:   # what the lecturer says; the definition and the method stay on a laptop
    st.markdown("Forward: one pass per input (n columns of J). Reverse: one pass per output (m rows).")
else:
    st.markdown(JACOBIAN_DEFINITION)
    st.caption("Forward mode needs one pass per input (n columns of J); reverse mode one backward pass per output "
               "(m rows). Both are counted on the engine running a small network y = tanh(A·x) for each size.")
j = st.columns(2)
max_n = j[0].slider("largest n (and m)", 2, 16, 8, key=ns.key("max_n"))
fixed = j[1].slider("the other dimension held at", 1, 16, 2, key=ns.key("fixed"))
series = cached_jacobian(int(max_n), int(fixed))
p = st.columns(2)
show_plot(where=p[0], fig=line_plot(series["vary_n"], title=f"m = {fixed}, n varies", x_title="n (inputs)",
                               y_title="count (log scale)", look=look, log_y=True), lk=look, key=ns.key("jac_n"))
show_plot(where=p[1], fig=line_plot(series["vary_m"], title=f"n = {fixed}, m varies", x_title="m (outputs)",
                               y_title="count (log scale)", look=look, log_y=True), lk=look, key=ns.key("jac_m"))

st.markdown("**What one gradient costs**: reverse ≈ 2 forward passes in total, forward mode n passes."
            if look.presenting else
            "**What one gradient costs** (the notes: reverse mode's gradient of a scalar loss costs about two "
            "forward passes *in total*, forward + backward, whatever the number of inputs n; forward mode needs n "
            "passes, one per input, so reverse wins by about n/2). Counted now on the engine running a 4-layer "
            "ReLU MLP, width 256, batch 128:")
pass_rows = fixed_figure("forward_vs_reverse.pass_costs", "What one gradient costs")
if pass_rows is not None:
    show_table(pass_rows, look, static=True)
    st.caption(M.pass_costs_caption(pass_rows))
    st.markdown("**A whole gradient of a loss with n inputs, in forward passes**: the notes' table beside the same "
                "table from the counts above.")
    show_table(M.gradient_cost_rows(pass_rows), look, static=True)
st.markdown("**The notes' own case: logistic regression on 8 samples**, its whole gradient computed both ways on "
            "the engine, every pass run and counted:")
logreg = fixed_figure("forward_vs_reverse.logreg_costs", "Logistic regression's gradient, both ways")
if logreg is not None:
    show_table(M.logreg_rows(logreg), look, static=True)
    st.caption(M.logreg_caption(logreg))

st.subheader("Why frameworks never build the Jacobian")
st.caption("A layer x (batch × d_in) → y (batch × d_out). Its full Jacobian is huge; a VJP only ever holds a "
           "vector the size of y. The defaults are the notes' sizes: width 4096, batch 2048, float64.")
js = st.columns(4)
j_in = js[0].number_input("d_in (input width)", 1, 1_000_000, 4096, key=ns.key("jac_in"))
j_out = js[1].number_input("d_out (output width)", 1, 1_000_000, 4096, key=ns.key("jac_out"))
j_batch = js[2].number_input("batch", 1, 1_000_000, 2048, key=ns.key("jac_batch"))
j_dtype = js[3].selectbox("dtype", ["float64", "float32"], key=ns.key("jac_dtype"))
size_rows, passes = jacobian_size_table(int(j_in), int(j_out), int(j_batch), j_dtype)
show_table(size_rows, look, static=True)
st.markdown(f"The whole Jacobian: **{count(passes['forward'])} JVP** or **{count(passes['reverse'])} VJP passes**; "
            "training needs **one** backward pass." if look.presenting else
            f"Building the whole-batch Jacobian would take **{count(passes['forward'])} forward (JVP) passes**, one "
            f"per input number, or **{count(passes['reverse'])} backward (VJP) passes**, one per output number. "
            "Training needs the gradient of one scalar loss: **one** backward pass, whose VJPs carry vectors "
            "like the last row.")

st.subheader("Memory reverse mode keeps for the backward pass")
st.markdown(MEMORY_LEAD)
if not look.presenting:   # the lead is what the lecturer says; the details stay on a laptop
    st.caption("\n".join(f"- {line}" for line in MEMORY_DETAILS))
m = st.columns(3)
depth = m[0].slider("depth (layers)", 1, 32, 8, key=ns.key("mem_depth"))
batch = m[1].select_slider("batch", [1, 2, 4, 8, 16, 32, 64, 128, 256], value=32, key=ns.key("mem_batch"))
width = m[2].select_slider("width", [16, 32, 64, 128, 256], value=64, key=ns.key("mem_width"))
mem = cached_memory(int(depth), int(batch), int(width))
q = st.columns(2)
show_plot(where=q[0], fig=line_plot(mem["vs_batch"], title=f"depth {depth}, width {width}", x_title="batch",
                               y_title="bytes kept", look=look), lk=look, key=ns.key("mem_b"))
show_plot(where=q[1], fig=line_plot(mem["vs_depth"], title=f"batch {batch}, width {width}", x_title="depth",
                               y_title="bytes kept", look=look), lk=look, key=ns.key("mem_d"))

st.markdown("**Any size — the notes' exercise 9** (10 layers × 4096, batch 512, float32)")
e = st.columns(4)
e_depth = e[0].number_input("layers L", 1, MAX_SCALE_DEPTH, 10, key=ns.key("ex9_depth"))
e_width = e[1].number_input("width", 1, 1_000_000, 4096, key=ns.key("ex9_width"))
e_batch = e[2].number_input("batch", 1, 1_000_000, 512, key=ns.key("ex9_batch"))
e_dtype = e[3].selectbox("dtype", ["float32", "float64"], key=ns.key("ex9_dtype"))
show_table(memory_table(int(e_depth), int(e_width), int(e_batch), e_dtype), look, static=True)
ex9_lead, ex9_details = memory_sentence(int(e_depth), int(e_width), int(e_batch), e_dtype)
st.markdown(ex9_lead)
st.caption(ex9_details)

st.markdown("**HW2's network, measured on its graph** (Linear(50, 32) → ReLU → Dropout(0.5) → Linear(32, 1) → "
            "sigmoid → BCE, training mode, HW2's batch of 10): every tensor the graph keeps for backward.")
hw2_kept = cached_hw2_kept(10)
show_table(hw2_kept.rows, look, static=True)
st.markdown(hw2_kept.sentence)

st.divider()
st.subheader("Trading time for memory: activation recomputation (checkpointing)")
st.markdown("Keep only a segment's input, recompute the segment in backward: memory traded for one more forward."
            if look.presenting else
            "`engine.checkpoint.checkpoint(fn, x)` runs a segment without recording it and keeps only its input; "
            "the backward pass recomputes the segment (recording it this time) and walks the copy. Measured here "
            "on a ReLU MLP (float64) at 4, 9 and 16 layers: **keep all** (the ordinary graph), **a checkpoint every "
            "√L layers** (each segment recomputed once: 2L layer calls) and **recompute all** (only the input is "
            "kept; layer i's input is recomputed from it: L + L(L+1)/2 calls). Memory is the peak of NumPy's "
            "allocations during forward + backward (traced); time is the best of five untraced rounds, each "
            "timing every policy and depth once in turn.")
k = st.columns([1, 1, 3])
ck_width = k[0].select_slider("width", [32, 64, 128], value=32, key=ns.key("ck_width"))
ck_batch = k[1].select_slider("batch", [16, 32, 64, 128], value=128, key=ns.key("ck_batch"))
try:
    ck_series, ck_rows = cached_checkpoints(int(ck_width), int(ck_batch))
except RuntimeError as refused:   # RequestRefused: the size's estimated work is over the page's budget
    st.warning(str(refused))
else:
    kc = st.columns([2, 3])
    show_plot(where=kc[0], fig=line_plot(ck_series, title="memory against time (one point per depth 4, 9, 16)",
                                         x_title="forward + backward (ms)", y_title="peak MB", look=look),
              lk=look, key=ns.key("ck_plot"))
    # the table across the page's width, every row and header whole (in the right-hand column its headers were cut)
    show_table(ck_rows, look, static=True)
    with kc[1]:
        if look.presenting:
            st.caption("Same gradients in every policy; checkpointing pays when activations outweigh the weights.")
        else:
            st.caption("Same gradients in every policy (last column, against keep all). Checkpointing every √L keeps "
                       "√L segment inputs plus one segment's activations at a time: memory ~ 2√L buffers for one "
                       "extra forward pass; recompute-all keeps one buffer at the price of quadratic forward work. "
                       "`backward()` frees each node's saved values right after its VJP ran (as PyTorch does), so "
                       "every policy's peak also holds the gradients of the weights: checkpointing pays when a layer's "
                       "activations (batch × width) outweigh its weights (width²); at batch ≤ width keep all wins.")

st.subheader("Gradient accumulation on purpose: micro-batches")
st.markdown("k micro-batches, each loss scaled by 1/k, one step: the full batch's gradient, a k-th of the memory."
            if look.presenting else
            "Accumulation is a pitfall when it is forgotten (a second `backward()` without `zero_grad` turns 20 into "
            "40: see the *Gradient accumulation* preset on the Expression explorer) and a tool when it is meant: "
            "split a batch of 64 into k micro-batches, call `backward()` on each loss scaled by 1/k, and only then "
            "step. The gradient is the full batch's (the **effective batch size** stays 64) while each backward "
            "keeps a k-th of the activations.")
micro_rows = fixed_figure("forward_vs_reverse.micro_batches", "The micro-batches' gradients")
if micro_rows is not None:
    show_table(micro_rows, look, static=True)
