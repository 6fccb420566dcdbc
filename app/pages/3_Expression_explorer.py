"""The slide example's graph evaluated in topological order, then its backward graph: x̄ adjoints, the contribution on each edge, the sum at a fan-out, and the engine's lines that ran.

Type a small program, set its inputs, and step through the engine's forward pass and then its backward pass: values, the contribution sent along each edge, the running sum at fan-out nodes, and a central-difference check of every gradient.
"""
from __future__ import annotations



import streamlit as st

from explorer.kit import presets
from explorer.kit.backward_view import legend_html as backward_legend_html
from explorer.kit.code_panel import font_px as code_font_px, scroll_to_highlight
from explorer.kit.deeplink import LinkField
from explorer.kit.presentation import small_screen_css, small_screen_floor_px
from explorer.kit.figures import PrebuiltFigure, floor_growth, graph_scale, style_graph_figure, tight_graph
from explorer.kit.plotly_figure import HALF_WIDTH, MAX_HEIGHT
from explorer.expression_explorer import (MAX_ACCUMULATION_ACTIONS, accumulation_rows, explorer_model,
                                          node_table_data, node_table_styler, protocol_html, relayed_view,
                                          step_view, table_data, walkthrough)
from explorer import autograd_usage
from explorer.kit.budget import bounded_cache
from explorer.kit.programs import InputProblem, program_refused
from explorer.kit.widgets import (fixed_figure, graph_px, presentation_toggle, preset_picker,
                                  program_boxes, publish_link, rerun_page, show_dot, show_input_problem, show_plot,
                                  show_table, start_page, stepper, still_graph, walkthrough_download)
from explorer.kit.formatting import plain

ctx = start_page(
    "Expression explorer", "explorer",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "step": LinkField("int", 1, minimum=0)},  # 1-based, as the header shows it (0: first step)
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "step": 1, "sig": None})
ns, look = ctx.ns, ctx.look
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
if look.presenting:
    st.html(small_screen_css())
# presenting, every text the class reads is 16 px or more at 1366 x 768 too: graphs, code, captions and labels at
# 23 px in the 1920 x 1080 layout (the graphs laid out that much smaller and drawn that much larger)
PRESENT_GRAPH_SHARE = 0.62  # of the page's width: the two graphs (the slide example whole with its texts at 23 px);
# the code takes the rest
PRESENT_PLAIN_SHARE = 0.54  # the same for graphs at the 1920 x 1080 sizes (too big at 23 px), the code's lit lines
# unwrapped
PRESENT_PAIR_MAX_PX = 300    # each graph's drawing: two of them, the caption and the buttons fit 1080 px
PRESENT_CODE_PX = 260        # the engine's code panel scrolls beyond this (its lit lines kept in view)
PRESENT_LECTURE_PX = 360     # and slide 27's backward_pass: a window on the lines the step lights
# each graph's drawing with 4 px above and below it and 3 units of room around its boxes (the renderer's 12 px and
# 10 units, grown to the floor, put the legend under a 1366 x 768 screen's edge)
PRESENT_MARGIN_PX = 4
PRESENT_RANGE_TRIM = 7
# graphs across the page: the code panels under them, a quarter of Streamlit's gap below the backward graph (its boxes
# reach a few px past its trimmed range)
WIDE_CODE_KEY = "adx_ee_wide_code"
if look.presenting:
    st.html(f"<style>.st-key-{WIDE_CODE_KEY} {{ margin-top: 0.25rem; }}</style>")
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(64 << 20, spinner="Running the engine…", refuse=program_refused)
def cached_model(program: str, inputs: str, expand: bool = False, width: int = HALF_WIDTH,
                 max_height: int = MAX_HEIGHT, presenting: bool = False):
    return explorer_model(program, inputs, expand_composites=expand, width=width, max_height=max_height,
                          presenting=presenting)


@bounded_cache(8 << 20, spinner="Running backward on the engine…", refuse=program_refused)
def cached_accumulation(program: str, inputs: str, actions: tuple[str, ...]):
    return table_data(accumulation_rows(program, inputs, list(actions)))


# What a Step redraws, built once per program and step and shared by the sessions (a class stepping
# through the slide example): the tables ready to send, the code panel's HTML.
@bounded_cache(16 << 20, spinner=None, refuse=program_refused)
def cached_step(program: str, inputs: str, expand: bool, width: int, max_height: int, presenting: bool, frame: int,
                font: int, code_height: int | None, lecture_height: int | None = None):
    return step_view(cached_model(program, inputs, expand, width, max_height, presenting), frame, font, code_height,
                     lecture_height)


@bounded_cache(4 << 20, spinner=None, refuse=program_refused)
def cached_node_table(program: str, inputs: str, expand: bool, width: int, max_height: int, presenting: bool):
    return node_table_data(cached_model(program, inputs, expand, width, max_height, presenting).table)


@bounded_cache(1 << 20, spinner=None)
def cached_protocol_html(font: int) -> str:
    return protocol_html(font)


top = st.columns([2.2, 3, 1.3] if look.presenting else [3, 1], vertical_alignment="bottom")
preset_picker(ns, top[0])
with top[-1]:
    presentation_toggle()
left, right, program_text, inputs_text = program_boxes(
    ns, 140 if not look.presenting else 200, lk=look, where=top[1],
    program_label="Program (one assignment per line; the last one is the output)")

# presentation mode: the forward graph (values) over the backward graph (adjoints) in the left part of the page,
# the step's caption above them and the code beside them, all on the first screen. The graphs' texts at the small
# screen's floor where both graphs fit whole that large: beside the code (the slide example), else across the page
# with the code under them (the sigmoid presets' chain); a graph that fits neither (it would need a window cutting
# its boxes) keeps the 1920 x 1080 sizes, beside the code where it fits, else across the page.
expand = bool(st.session_state.get(ns.key("expand"), False))


def layout_args(share: float | None, floored: bool) -> tuple:
    """``cached_model``'s arguments for graphs laid out across ``share`` of the page (None: all of it), grown to the
    floor or not."""
    g = grow if floored else 1.0
    width = graph_px(look, HALF_WIDTH, share) if share else graph_px(look, HALF_WIDTH)
    return (program_text, inputs_text, expand, int(width / g),
            int(PRESENT_PAIR_MAX_PX / graph_scale(look) / g) if look.presenting else MAX_HEIGHT, look.presenting)


def windowed(m) -> bool:
    """Whether a graph of ``m`` is too big for its room and shown through a window (its boxes cut at the edges)."""
    return any((f.get("layout", {}).get("meta") or {}).get("window") for f in (m.figure, m.backward_figure) if f)


tries = ([(PRESENT_GRAPH_SHARE, True), (None, True), (PRESENT_PLAIN_SHARE, False), (None, False)] if look.presenting
         else [(PRESENT_GRAPH_SHARE, False)])
try:
    for graph_share, floored in tries:
        model_args = layout_args(graph_share, floored)
        model = cached_model(*model_args)
        if not (look.presenting and windowed(model)):
            break
    wide = graph_share is None
    graph_floor = floor if floored else None
except InputProblem as problem:
    show_input_problem(problem, left, right, program_text, inputs_text)
    st.info("Nothing was run. Fix the text above (or pick a preset) and the graph appears again.")
    publish_link(ctx, {"expr": program_text, "at": inputs_text, "step": st.session_state[ns.key("step")]})
    st.stop()

# a new program starts at step 1 (a deep link's own step is kept on the first run)
sig = (program_text, inputs_text)
if st.session_state[ns.key("sig")] not in (None, sig):
    st.session_state[ns.key("step")] = 1
    st.session_state[ns.key("step_playing")] = False
st.session_state[ns.key("sig")] = sig


def step_text(shown) -> None:
    """Header, caption and contributions of a step (:class:`explorer.expression_explorer.StepView`)."""
    st.markdown(shown.header)
    if shown.contributions is not None:
        show_table(shown.contributions, look, static=True)


def gradient_graphs() -> None:
    """The forward graph and the gradient graph (Graphviz), with downloads."""
    # on a projector each at its natural size across the page (side by side, both were cut off at the right)
    g1, g2 = (st.container(), st.container()) if look.presenting else st.columns(2)
    with g1:
        # after the whole pass, not the step: a DOT that changed with every Step made the browser lay it out
        # again (about 0.5 s of a Step's paint, even in its hidden tab); the animated graph shows the step
        st.markdown("**Forward graph** (each node's value and adjoint after the whole pass)")
        show_dot(model.forward_dot(), look)
    with g2:
        st.markdown("**Gradient graph** — the engine ops the backward pass ran (create_graph=True)")
        gdot = model.gradient_dot()
        if gdot:
            show_dot(gdot, look)
        else:
            st.info("No gradient graph for this program.")
    # the files are made when clicked (a callable), not hashed and stored again at every Step of the stepper
    dl = st.columns(3)
    dl[0].download_button("Download graph (DOT)", model.forward_dot, file_name="graph.dot",
                          mime="text/vnd.graphviz", on_click="ignore")
    if gdot:
        dl[1].download_button("Download gradient graph (DOT)", model.gradient_dot, file_name="gradient_graph.dot",
                              mime="text/vnd.graphviz", on_click="ignore")
    svg, why_not = model.forward_svg()
    if svg is not None:
        dl[2].download_button("Download graph (SVG)", lambda: model.forward_svg()[0], file_name="graph.svg",
                              mime="image/svg+xml", on_click="ignore")
    else:
        dl[2].caption(why_not)


def node_table_view() -> None:
    """Every node's value and adjoint, with each input's central-difference check."""
    node_table = cached_node_table(*model_args)  # a Styler (coloured rows) is made afresh each time
    show_table(node_table if node_table is not None else node_table_styler(model.table), look, static=True)
    st.caption("Adjoint = ∂f/∂node after the whole backward pass. For inputs, the central difference "
               "(f(x+h) − f(x−h)) / 2h is computed by running the engine twice more per input element; an "
               "input of more than 8 elements is checked along 3 random directions v instead (autodiff "
               "predicts ⟨∂f/∂x, v⟩). A red row is a check that failed, with the reason; the amber row is "
               "the op where it starts.")


def draw(step: int) -> None:
    """Everything that shows the step (1-based): header, caption, contributions, graphs, code, the link.

    In presentation mode: :func:`present_step`.
    """
    frame = step - 1
    font = floor or code_font_px(False)
    shown = cached_step(*model_args, frame, font, *((PRESENT_CODE_PX, PRESENT_LECTURE_PX) if look.presenting
                                                    else (None, None)))
    if look.presenting:
        present_step(shown, frame)
        return
    step_text(shown)
    tab_anim, tab_graphs, tab_table = st.tabs(["Animated graph", "Graph and gradient graph", "Table of nodes"])
    with tab_anim:
        graph_col, side_col = st.columns(2)
        with graph_col:
            st.checkbox("Show tanh, softmax, … as the primitives the engine ran", key=ns.key("expand"),
                        on_change=rerun_page,  # the model is built before the stepper
                        help="Composite functions are built from primitives (tanh(y) = 2·sigmoid(2y) − 1); the "
                             "graph draws each as one node unless this is ticked.")
            show_plot(style_graph_figure(still_graph(model.figure, frame, title=False), look), look,
                      key=ns.key("figure"))
            st.markdown("**The backward graph** as the slides draw it: x̄ nodes, each edge reversed carrying its "
                        "contribution, the sum at a fan-out")
            show_plot(style_graph_figure(still_graph(model.backward_figure, frame, title=False), look), look,
                      key=ns.key("backward_figure"))
            st.html(backward_legend_html())
        with side_col:
            # slide 27's backward_pass, then the engine's own source (inspect): the lines this step ran lit in both
            st.markdown("**Slide 27's backward_pass** — the line this step executes is lit (×n: n times)")
            st.html(shown.lecture_html)
            st.html(shown.code_html)
            st.caption(shown.code_caption)
            with st.expander("backpropagate, topological_sort and the HW2 protocol (is_leaf, is_constant, "
                             "chain_rule, accumulate_derivative)"):
                st.html(cached_protocol_html(font))
    with tab_graphs:
        gradient_graphs()
    with tab_table:
        node_table_view()
    publish_link(ctx, {"expr": program_text, "at": inputs_text, "step": step}, view=lambda: relayed(shown, frame))


def present_step(shown, frame: int) -> None:
    """Presentation mode: the step's caption over the forward and backward graphs, the code beside them (the
    slide 27's backward_pass over the engine's walk and VJP, each titled); the tables and the other views under them."""
    head, _, caption = shown.header.partition("\n")   # one line, no heading's margins: the graphs need the height
    with st.container(gap=None):
        # graphs across the page (a long chain: the sigmoid presets), the code under them: the legend goes to the
        # header's row and the graphs sit closer, so the code's lit lines stay on a 1366 x 768 screen
        head_at, legend_at = st.columns([1, 2], vertical_alignment="center") if wide else (st.container(), None)
        head_at.markdown(f"**{head.removeprefix('#### ')}**")
        if legend_at is not None:
            legend_at.html(backward_legend_html())
        if caption.strip():
            st.markdown(caption)
    if wide:   # the graphs one under the other and the code under them, closer than Streamlit's gap (1 rem = 24 px)
        with st.container(gap=None):
            left = st.container(gap=None)
            right = st.container(key=WIDE_CODE_KEY).columns(2)
    else:
        left, right = st.columns([graph_share, 1 - graph_share])
    with left:
        show_plot(tight(style_graph_figure(still_graph(model.figure, frame, title=False), look,
                                           floor_px=graph_floor)), look, key=ns.key("figure"))
        show_plot(tight(style_graph_figure(still_graph(model.backward_figure, frame, title=False), look,
                                           floor_px=graph_floor)), look, key=ns.key("backward_figure"))
        if not wide:
            st.html(backward_legend_html())
    lecture_at, code_at = right if wide else (right, right)
    lecture_at.html(shown.lecture_html)
    code_at.html(shown.code_html)
    st.html(scroll_to_highlight(frame), unsafe_allow_javascript=True)
    if shown.contributions is not None:
        show_table(shown.contributions, look, static=True)
    st.caption(shown.code_caption)
    if frame + 1 < model.n_frames:   # every adjoint of the whole pass: not before the class has stepped to them
        st.caption(f"The whole pass's graphs and table of nodes (every value and adjoint) follow at the last step, "
                   f"{model.n_frames}.")
    else:
        tab_graphs, tab_table = st.tabs(["Graph and gradient graph", "Table of nodes"])
        with tab_graphs:
            gradient_graphs()
        with tab_table:
            node_table_view()
    publish_link(ctx, {"expr": program_text, "at": inputs_text, "step": frame + 1}, view=lambda: relayed(shown, frame))


def tight(fig: PrebuiltFigure) -> PrebuiltFigure:
    """A still graph with :data:`PRESENT_MARGIN_PX` above and below its drawing instead of the renderer's margins,
    and :data:`PRESENT_RANGE_TRIM` units less room around its boxes (the drawing's scale stays as it was)."""
    return tight_graph(fig, PRESENT_MARGIN_PX, PRESENT_RANGE_TRIM)


def relayed(shown, frame: int):
    """The step as a class's students see it (drawn by their browsers): the graphs at a laptop's sizes."""
    return relayed_view(model, shown, frame)


stepper(ns, model.n_frames, draw)
walkthrough_download(ns, lambda: walkthrough(model, program_text, inputs_text), "expression_walkthrough.html",
                     model.n_frames)

st.subheader("Gradient accumulation: backward again without zero_grad")
accum_key = ns.key("accum")
if st.session_state.get(ns.key("accum_sig")) != sig:  # a new program starts with one backward pass
    st.session_state[accum_key] = ["backward"]
    st.session_state[ns.key("accum_sig")] = sig


def _accumulate(action: str | None, shown: tuple[str, ...]) -> None:
    # ``shown``: the calls listed when the buttons were drawn (drawn intent, explorer.kit.widgets): a callback
    # run twice for one click must not add the call twice
    if action is None:
        st.session_state[accum_key] = ["backward"]
    elif len(shown) < MAX_ACCUMULATION_ACTIONS:
        st.session_state[accum_key] = [*shown, action]


shown_calls = tuple(st.session_state[accum_key])
full = len(shown_calls) >= MAX_ACCUMULATION_ACTIONS
ac = st.columns([1.4, 1.4, 1, 3])
ac[0].button("backward() again", key=ns.key("accum_backward"), on_click=_accumulate, args=("backward", shown_calls), disabled=full,
             help="output.backward(retain_graph=True) on the same graph, without zeroing: .grad += the new gradient")
ac[1].button("zero_grad()", key=ns.key("accum_zero"), on_click=_accumulate, args=("zero_grad", shown_calls), disabled=full,
             help="x.zero_grad() on every input: .grad = None, as a training loop does before each backward")
ac[2].button("Start over", key=ns.key("accum_reset"), on_click=_accumulate, args=(None, shown_calls))
if full:
    ac[3].caption(f"{MAX_ACCUMULATION_ACTIONS} calls at most: Start over.")
show_table(cached_accumulation(program_text, inputs_text, tuple(st.session_state[accum_key])), look, static=True)
st.caption("Every call above is the real engine on one forward graph. backward() adds into .grad "
           "(accumulate_derivative: +=), so a second backward without zeroing doubles it — the notes' 20 → 40 "
           "(preset “Gradient accumulation”). As in PyTorch, a backward() through a graph already used needs "
           "retain_graph=True on the call before. zero_grad() sets .grad to None; training loops call it before "
           "each backward. Constants take no gradient (is_constant): the backward pass never visits them and "
           "their .grad stays None.")

st.subheader("Slides 27–28: reverse mode as a function, make_vjp and grad")
st.markdown("The lecture packages `backward_pass` as a function: `make_vjp` traces `fun` at `x` and hands back a "
            "closure that runs the backward pass from any output adjoint g; `grad` is `make_vjp` with g = 1. The "
            "notes then use `grad` on a small tanh network's log-posterior (log-probabilities by `logsumexp`, an L2 "
            "prior on the weights). Right: that program as it runs here, on the engine's own `engine.vjp` (the "
            "slides' `make_vjp`) and `engine.grad` (their `grad`).")
mv = st.columns(2)
mv[0].markdown(f"**The slides' code** ({autograd_usage.SLIDE_SOURCE})")
mv[0].code(autograd_usage.SLIDE_MAKE_VJP, language="python")
mv[1].markdown(f"**The notes' use of grad, on this engine** (layers {' → '.join(map(str, autograd_usage.LAYER_SIZES))}, "
               f"{autograd_usage.N_EXAMPLES} examples, L2 weight {plain(autograd_usage.L2_REG)}, float64)")
mv[1].code(autograd_usage.ENGINE_CODE, language="python")
usage = fixed_figure("autograd_usage.check", "grad(objective) on the engine, checked by central differences")
if usage is not None:
    show_table(autograd_usage.rows_table(usage), look, static=True)
    st.markdown(autograd_usage.summary(usage))
