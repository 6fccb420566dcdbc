"""Check the engine's gradients against central differences: sweep the step h on a log-log plot in float32 and float64 (truncation error falls, rounding error rises; the best h is marked), and compare every input's autodiff gradient with its finite-difference estimate.
"""
from __future__ import annotations


import numpy as np
import pandas as pd
import streamlit as st

from explorer.kit import presets
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import line_plot
from explorer.gradient_check import gradcheck_model, sweep_series
from explorer.kit.programs import InputProblem, parse
from explorer.kit.widgets import (preset_picker, presentation_toggle, program_boxes, publish_link, show_input_problem,
                            start_page)

H_CHOICES = [10.0 ** -k for k in range(1, 13)]
ctx = start_page(
    "Gradient check", "gradcheck",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "wrt": LinkField("str", ""), "h": LinkField("float", 1e-6, minimum=1e-15, maximum=1.0),
            "index": LinkField("int", 0, minimum=0)},
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "wrt": "", "h": 1e-6, "index": 0})
ns, look = ctx.ns, ctx.look
for msg in ctx.link_problems:
    st.warning(msg)


@st.cache_resource(max_entries=32, show_spinner="Sweeping h on the engine…")
def cached_check(program: str, inputs: str, wrt: str, h: float, index: int):
    return gradcheck_model(program, inputs, wrt, h, index)


head = st.columns([3, 1])
preset_picker(ns, head[0])
with head[1]:
    presentation_toggle()
c1, c2, program_text, inputs_text = program_boxes(ns)

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
p = st.columns(3)
p[0].selectbox("Sweep h for input", names, key=ns.key("wrt"))
wrt = st.session_state[ns.key("wrt")]
size = int(np.size(inputs[wrt]))
index_key = ns.key(f"index_{wrt}")
if index_key not in st.session_state:  # first time this input is shown: a deep link's element, once
    st.session_state[index_key] = min(int(st.session_state[ns.key("index")]), size - 1)
    st.session_state[ns.key("index")] = 0
index = p[1].number_input("element (flat index)", 0, size - 1, key=index_key,
                          disabled=size == 1, help="For a tensor input: which element is perturbed by ±h")
p[2].select_slider("h for the table", H_CHOICES, key=ns.key("h"), format_func=lambda v: f"{v:.0e}")
h = float(st.session_state[ns.key("h")])

try:
    model = cached_check(program_text, inputs_text, wrt, h, int(index))
except InputProblem as problem:
    show_input_problem(problem, c1, c2, program_text, inputs_text)
    st.stop()

series, markers = sweep_series(model.sweep)
element = f"[{int(index)}]" if size > 1 else ""
fig = line_plot(series, title=f"|central difference − autodiff| for ∂f/∂{wrt}{element}", x_title="h (log scale)",
                y_title="absolute error (log scale)", look=look, log_x=True, log_y=True, markers=markers)
st.plotly_chart(fig, key=ns.key("sweep_fig"))
st.caption("Large h: the truncation error of (f(x+h) − f(x−h)) / 2h grows like h². Small h: f(x+h) and "
           "f(x−h) agree in most digits and rounding dominates, like ε/h — much sooner in float32 (ε ≈ 1e-7) "
           "than in float64 (ε ≈ 1e-16). For a tensor input the sweep perturbs the chosen element.")
st.subheader(f"Every input at h = {h:.0e}")
st.table(pd.DataFrame(model.table))
publish_link(ctx, {"expr": program_text, "at": inputs_text, "wrt": wrt, "h": h, "index": int(index)})
