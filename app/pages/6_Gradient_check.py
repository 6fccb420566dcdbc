"""Finite-difference error against h on log-log axes, in float64 and float32, with the best h the error model predicts.

Check the engine's gradients against finite differences: sweep the step h on log-log plots in float64 and float32, central differences (error ∝ h²) beside forward differences (∝ h), with the error model's slopes and its best h marked, and compare every input's autodiff gradient with its finite-difference estimate.
"""
from __future__ import annotations

from dataclasses import replace


import numpy as np
import streamlit as st

from explorer.kit import presets
from explorer.kit.deeplink import LinkField
from explorer.kit.presentation import small_screen_css, small_screen_floor_px
from explorer.gradient_check import (notes_best_h_text, notes_checks_caption, best_h_question, best_h_text,
                                     gradcheck_model, side_by_side, side_by_side_figure, sweep_figure)
from explorer.kit.budget import RequestRefused, bounded_cache
from explorer.kit.formatting import md_escape, sci
from explorer.kit.programs import ExpressionError, InputProblem, parse, program_refused
from explorer.kit.widgets import (clamp_linked, fixed_figure, presentation_toggle, preset_picker, program_boxes,
                                  publish_link, screen_break, show_input_problem, show_plot, show_table, start_page)

H_CHOICES = [10.0 ** -k for k in range(1, 13)]
ctx = start_page(
    "Gradient check", "gradcheck",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "wrt": LinkField("str", ""), "h": LinkField("float", 1e-6, minimum=1e-15, maximum=1.0),
            "index": LinkField("int", 0, minimum=0), "show_best": LinkField("bool", False)},
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "wrt": "", "h": 1e-6, "index": 0,
              "show_best": False})
ns, look = ctx.ns, ctx.look
# a 1366 x 768 projector draws this page 0.711 times as large: its charts' and widgets' texts are laid out at
# 23 px or more (16 px there); the pages' own Look stays for everything else
charts = replace(look, figure_font=small_screen_floor_px()) if look.presenting else look
if look.presenting:
    st.html(small_screen_css())
PRESENT_SWEEP_PX = 550  # presentation mode: each sweep's height, its best-h caption under it on the first screen
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(32 << 20, spinner="Sweeping h on the engine…", refuse=program_refused)
def cached_check(program: str, inputs: str, wrt: str, h: float, index: int):
    return gradcheck_model(program, inputs, wrt, h, index)


# one training on this engine (0.2 s of this process's CPU) and one in a PyTorch child process (its own CPU): shared by
# every session once computed
@bounded_cache(1 << 20, spinner="Training on this engine and in PyTorch…")
def cached_side_by_side():
    return side_by_side()


head = st.columns([2.2, 3, 1.3] if look.presenting else [3, 1], vertical_alignment="bottom")
preset_picker(ns, head[0])
with head[-1]:
    presentation_toggle()
c1, c2, program_text, inputs_text = program_boxes(ns, lk=look, where=head[1])

try:
    program, inputs = parse(program_text, inputs_text)
except InputProblem as problem:
    show_input_problem(problem, c1, c2, program_text, inputs_text)
    publish_link(ctx, {"expr": program_text, "at": inputs_text})
    st.stop()

names = program.input_names
if st.session_state[ns.key("wrt")] not in names:
    st.session_state[ns.key("wrt")] = names[0]
h_now = min(H_CHOICES, key=lambda v: abs(v - float(st.session_state[ns.key("h")])))
st.session_state[ns.key("h")] = h_now
wrt = st.session_state[ns.key("wrt")]   # the selectbox below keeps it (a change reruns the page first)
size = int(np.size(inputs[wrt]))
# a scalar input has one element: no element selector to show; on a projector a last column shows the best h once
# the class has looked for it (the star and the sentence come from the same sweep either way)
p = st.columns((3 if size > 1 else 2) + look.presenting)
p[0].selectbox("Sweep h for input", names, key=ns.key("wrt"))
index_key = ns.key(f"index_{wrt}")
if index_key not in st.session_state:  # first time this input is shown: a deep link's element, once (a link's
    # index out of range is reported, a scalar's too: it has element 0 only)
    st.session_state[index_key] = clamp_linked(ns, "index", int(st.session_state[ns.key("index")]), 0, size - 1)
    st.session_state[ns.key("index")] = 0
index = 0
if size > 1:
    index = p[1].number_input("element (flat index)", 0, size - 1, key=index_key,
                              help="Which element of the tensor input is perturbed by ±h")
(p[-2] if look.presenting else p[-1]).select_slider("h for the table", H_CHOICES, key=ns.key("h"),
                                                   format_func=lambda v: sci(v, 1))
h = float(st.session_state[ns.key("h")])
show_best = not look.presenting or p[-1].toggle("Show the best h", key=ns.key("show_best"))

try:
    model = cached_check(program_text, inputs_text, wrt, h, int(index))
except InputProblem as problem:
    show_input_problem(problem, c1, c2, program_text, inputs_text)
    st.stop()
except ExpressionError as e:   # the request's compute deadline, met on a busy server: a message, not a traceback box
    show_input_problem(InputProblem("program", e), c1, c2, program_text, inputs_text)
    st.stop()

element = f"[{int(index)}]" if size > 1 else ""
figs = st.columns(2)
for col, dtype in zip(figs, ("float64", "float32")):
    with col:
        # presentation mode: the best-h caption under it stays on the first screen
        fig = sweep_figure(model.sweep, dtype, charts, best=show_best,
                           title=f"|finite difference − autodiff| for ∂f/∂{wrt}{element}, {dtype}",
                           height=PRESENT_SWEEP_PX if look.presenting else None)
        show_plot(fig, charts, key=ns.key(f"sweep_fig_{dtype}"), theme=None)
        st.markdown(best_h_text(model.sweep, dtype) if show_best else best_h_question(model.sweep, dtype))
screen_break()   # on a projector the sweeps and their best-h lines are the first screen: the rest starts below it
st.caption("Large h: truncation error, ∝ h² for central differences and ∝ h for forward differences (pale "
           "bands: h²|f'''|/6 and h|f''|/2, with the engine's own higher derivatives). Small h: f(x+h) and "
           "f(x−h) agree in most digits and rounding dominates, ε|f|/h (grey band) — much sooner in float32 "
           "(ε ≈ 6e-8) than in float64 (ε ≈ 1.1e-16). The best h minimises the sum. For a tensor input the "
           "sweep perturbs the chosen element.")
if (program_text.strip(), inputs_text.strip(), wrt, int(index)) == \
        (presets.DEFAULT.program, presets.DEFAULT.inputs, names[0], 0) and show_best:   # exercise 7's figure
    st.caption(notes_best_h_text(model.sweep))
st.subheader(f"Every input at h = {sci(h, 1)}")
show_table(model.table, look, static=True)

st.subheader("The notes' checks, computed on this server")
st.markdown("The lecture notes check their framework's gradients several ways. The same checks on this engine, run "
            "once when the server starts, in the background (largest difference; float64). The Jacobian J of f: Rⁿ → Rᵐ is the "
            "m × n matrix Jᵢⱼ = ∂yᵢ/∂xⱼ; a VJP gives ȳᵀJ without ever building it, so building it once, for a "
            "small case, is a check.")
notes_rows = fixed_figure("gradient_check.notes_checks", "The notes' checks")
if notes_rows is not None:
    show_table(notes_rows, look, static=True)
st.caption(notes_checks_caption() + " Differences of 1e-17 to 1e-15 are float64 rounding (ε ≈ 1.1e-16 relative to "
           "values of order 1); 0 means the two computations did the same float operations. The random-graph figure "
           "is a relative error, as the notes' is, dominated by the finite difference's own error (h² truncation "
           "plus ε/h rounding, see the sweep above), not by autodiff; the graphs are this engine's random ones, of "
           "the notes' size, not the notes' own.")
st.subheader("This engine against PyTorch, trained side by side")
st.markdown("The notes train their framework and PyTorch on HW2's network from the same initial weights, with the "
            "same batches and the same dropout masks, and compare the loss at every step. The same here: the "
            "project's HW2 network on this engine, and the same network in PyTorch in a separate process, on the "
            "first 200 sentences of the built-in corpus with the built-in GloVe vectors.")
if st.button("Train both (320 steps each; a few seconds)", key=ns.key("side_by_side")):
    st.session_state[ns.key("side_by_side_shown")] = True
if st.session_state.get(ns.key("side_by_side_shown")):
    try:
        sbs = cached_side_by_side()
    except RequestRefused as e:
        st.info(f"The side-by-side training could not run on this server just now: {md_escape(e)}")
    else:
        st.markdown(sbs.text())
        show_plot(side_by_side_figure(sbs, look), look, key=ns.key("side_by_side_chart"))
publish_link(ctx, {"expr": program_text, "at": inputs_text, "wrt": wrt, "h": h, "index": int(index),
                   "show_best": bool(st.session_state[ns.key("show_best")])})
