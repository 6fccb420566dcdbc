"""Type a small program, set its inputs, and step through the engine's forward pass and then its backward pass: values, the contribution sent along each edge, the running sum at fan-out nodes, and a central-difference check of every gradient.
"""
from __future__ import annotations



import pandas as pd
import streamlit as st

from explorer.kit import presets
from explorer.kit.code_panel import font_px as code_font_px, protocol_blocks, to_html
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import at_frame, style_graph_figure
from explorer.expression_explorer import MAX_ACCUMULATION_ACTIONS, accumulation_rows, explorer_model
from explorer.kit.budget import bounded_cache
from explorer.kit.programs import InputProblem, program_refused
from explorer.kit.widgets import (preset_picker, presentation_toggle, publish_link, show_input_problem,
                            start_page, step_controls)

ctx = start_page(
    "Expression explorer", "explorer",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "step": LinkField("int", 0, minimum=0)},
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "step": 0, "sig": None})
ns, look = ctx.ns, ctx.look
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(64 << 20, spinner="Running the engine…", refuse=program_refused)
def cached_model(program: str, inputs: str, expand: bool = False):
    return explorer_model(program, inputs, expand_composites=expand)


@bounded_cache(8 << 20, spinner="Running backward on the engine…", refuse=program_refused)
def cached_accumulation(program: str, inputs: str, actions: tuple[str, ...]):
    return accumulation_rows(program, inputs, list(actions))


top = st.columns([3, 1])
preset_picker(ns, top[0])
with top[1]:
    presentation_toggle()

left, right = st.columns([3, 2])
left.text_area("Program (one assignment per line; the last one is the output)", key=ns.key("expr"),
               height=140 if not look.presenting else 180,
               help="Allowed: + - * / ** @, numbers, names, and exp log sigmoid relu tanh sum mean max "
                    "softmax log_softmax logsumexp abs sqrt transpose. Press Ctrl+Enter to run.")
right.text_area("Inputs", key=ns.key("at"), height=140 if not look.presenting else 180,
                help="name = value, separated by commas or lines; values are numbers or lists like [[1, 2], [3, 4]]")

program_text = st.session_state[ns.key("expr")]
inputs_text = st.session_state[ns.key("at")]
try:
    model = cached_model(program_text, inputs_text, bool(st.session_state.get(ns.key("expand"), False)))
except InputProblem as problem:
    show_input_problem(problem, left, right, program_text, inputs_text)
    st.info("Nothing was run. Fix the text above (or pick a preset) and the graph appears again.")
    publish_link(ctx, {"expr": program_text, "at": inputs_text, "step": st.session_state[ns.key("step")]})
    st.stop()

# a new program starts at step 0 (a deep link's own step is kept on the first run)
sig = (program_text, inputs_text)
if st.session_state[ns.key("sig")] not in (None, sig):
    st.session_state[ns.key("step")] = 0
st.session_state[ns.key("sig")] = sig

step = step_controls(ns, model.n_frames)
phase = model.phase(step)
st.markdown(f"#### Step {step + 1} of {model.n_frames} · {phase}\n{model.caption(step)}")
sent = model.contributions(step)
if sent:
    st.table(pd.DataFrame(sent))

tab_anim, tab_graphs, tab_table = st.tabs(["Animated graph", "Graph and gradient graph", "Table of nodes"])
with tab_anim:
    graph_col, code_col = st.columns(2)
    with graph_col:
        st.checkbox("Show tanh, softmax, … as the primitives the engine ran", key=ns.key("expand"),
                    help="Composite functions are built from primitives (tanh(y) = 2·sigmoid(2y) − 1); the graph "
                         "draws each as one node unless this is ticked.")
        fig = style_graph_figure(at_frame(model.figure, step), look)
        st.plotly_chart(fig, key=ns.key("figure"), config={"displaylogo": False})
        st.caption("▶ Play / ❚❚ Pause and the slider under the graph animate in your browser; the buttons above "
                   "move the page's step (and the deep link).")
    with code_col:  # the engine's own source, read with inspect; the lines this step ran are highlighted
        view = model.code(step)
        st.markdown("**The engine's code** — the lines this step ran are highlighted (×n: n times)")
        st.html(to_html(view, code_font_px(look.presenting), test_id="code-panel"))
        st.caption(view.caption)
        with st.expander("backpropagate, topological_sort and the HW2 protocol (is_leaf, is_constant, "
                         "chain_rule, accumulate_derivative)"):
            st.html(to_html(protocol_blocks("topological"), code_font_px(look.presenting), test_id="code-reference"))
with tab_graphs:
    g1, g2 = st.columns(2)
    with g1:
        st.markdown("**Forward graph** (value, adjoint; the current step highlighted)")
        st.graphviz_chart(model.forward_dot(step))
    with g2:
        st.markdown("**Gradient graph** — the engine ops the backward pass ran (create_graph=True)")
        gdot = model.gradient_dot()
        if gdot:
            st.graphviz_chart(gdot)
        else:
            st.info("No gradient graph for this program.")
    dl = st.columns(3)
    dl[0].download_button("Download graph (DOT)", model.forward_dot(), file_name="graph.dot", mime="text/vnd.graphviz")
    if gdot:
        dl[1].download_button("Download gradient graph (DOT)", gdot, file_name="gradient_graph.dot",
                              mime="text/vnd.graphviz")
    svg = model.forward_svg()
    if svg is not None:
        dl[2].download_button("Download graph (SVG)", svg, file_name="graph.svg", mime="image/svg+xml")
    else:
        dl[2].caption("SVG download needs Graphviz (`dot`), which is not installed here.")
with tab_table:
    st.table(pd.DataFrame(model.table))
    st.caption("Adjoint = ∂f/∂node after the whole backward pass. For inputs, the central difference "
               "(f(x+h) − f(x−h)) / 2h is computed by running the engine twice more per input element; an "
               "input of more than 8 elements is checked along 3 random directions v instead (autodiff "
               "predicts ⟨∂f/∂x, v⟩).")

st.subheader("Gradient accumulation: backward again without zero_grad")
accum_key = ns.key("accum")
if st.session_state.get(ns.key("accum_sig")) != sig:  # a new program starts with one backward pass
    st.session_state[accum_key] = ["backward"]
    st.session_state[ns.key("accum_sig")] = sig


def _accumulate(action: str | None) -> None:
    actions = st.session_state[accum_key]
    if action is None:
        st.session_state[accum_key] = ["backward"]
    elif len(actions) < MAX_ACCUMULATION_ACTIONS:
        st.session_state[accum_key] = actions + [action]


full = len(st.session_state[accum_key]) >= MAX_ACCUMULATION_ACTIONS
ac = st.columns([1.4, 1.4, 1, 3])
ac[0].button("backward() again", key=ns.key("accum_backward"), on_click=_accumulate, args=("backward",), disabled=full,
             help="output.backward() on the same graph, without zeroing: .grad += the new gradient")
ac[1].button("zero_grad()", key=ns.key("accum_zero"), on_click=_accumulate, args=("zero_grad",), disabled=full,
             help="x.zero_grad() on every input: .grad = None, as a training loop does before each backward")
ac[2].button("Start over", key=ns.key("accum_reset"), on_click=_accumulate, args=(None,))
if full:
    ac[3].caption(f"{MAX_ACCUMULATION_ACTIONS} calls at most: Start over.")
st.table(pd.DataFrame(cached_accumulation(program_text, inputs_text, tuple(st.session_state[accum_key]))))
st.caption("Every call above is the real engine on one forward graph. backward() adds into .grad "
           "(accumulate_derivative: +=), so a second backward without zeroing doubles it — the notes' 20 → 40 "
           "(preset “Gradient accumulation”). zero_grad() sets .grad to None; training loops call it before "
           "each backward. Constants take no gradient (is_constant): the backward pass never visits them and "
           "their .grad stays None.")

publish_link(ctx, {"expr": program_text, "at": inputs_text, "step": step})
