"""The slides' queue method taking one node at a time, beside the order the engine's depth-first sort returns; your own order checked edge by edge.

Topological sort as the slides teach it (the queue method: take a node with no unprocessed inputs) step by step, beside the depth-first post-order that engine.topological_sort really returns; then click the nodes in an order of your own and the app says whether it is a valid topological order.
"""
from __future__ import annotations

import streamlit as st

from explorer import topological_sort as T
from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.presentation import small_screen_css, small_screen_floor_px
from explorer.kit.figures import graph_scale, style_graph_figure
from explorer.kit.plotly_figure import FONT
from explorer.lecture_kit import md_escape, present_css
from explorer.kit.widgets import (graph_px, presentation_toggle, publish_link, show_plot, show_table, start_page,
                                  stepper, walkthrough_download)

ctx = start_page(
    "Topological sort", "topo",
    fields={"preset": LinkField("str", T.DEFAULT_PRESET, choices=tuple(T.PRESETS)),
            "step": LinkField("int", 1, minimum=0),  # 1-based, as the header shows it (0: first step)
            "order": LinkField("list", [])},
    defaults={"preset": T.DEFAULT_PRESET, "step": 1, "order": []})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(present_css(True))
    st.html(small_screen_css())   # after present_css: code, labels, tables 16 px or more at 1366 x 768 too
for msg in ctx.link_problems:
    st.warning(msg)
# presenting, every text in the graphs is 16 px or more at 1366 x 768 too: the graphs are laid out that much narrower
# and drawn that much larger
floor = small_screen_floor_px() if look.presenting else None
grow = max(1.0, floor / (FONT * graph_scale(look))) if floor else 1.0   # node texts only: no edge labels here
legend_px = floor if look.presenting else 15


@bounded_cache(16 << 20, spinner="Running the program on the engine…")
def cached_model(key: str) -> T.SortModel:
    return T.sort_model(key)


def _new_preset():
    st.session_state[ns.key("step")] = 1
    st.session_state[ns.key("step_playing")] = False
    st.session_state[ns.key("order")] = []


head = st.columns([3, 1])
head[0].selectbox("Graph", list(T.PRESETS), key=ns.key("preset"), format_func=lambda k: T.PRESETS[k].label,
                  on_change=_new_preset)
with head[1]:
    presentation_toggle()
key = st.session_state[ns.key("preset")]
model = cached_model(key)
n = len(model.graph.nodes)
# presentation mode: the program, the method's rule and the engine's own sort in one row, so the graph, its
# legend, the table of steps and the engine's order come up on the first screen (the engine's section below the
# steps was a scroll away)
if look.presenting:
    prog, rule, own = st.columns([1, 1.5, 1.35], gap="medium")
else:
    prog, rule, own = st.container(), st.container(), None
prog.code(model.preset.program + "\n# at " + model.preset.inputs, language="python")

# --- the queue method -----------------------------------------------------------------------------------
rule.subheader("The queue method (slides)")
RULE = ("Keep the unprocessed nodes. Repeatedly **take a node none of whose inputs is unprocessed**, compute it, "
        "and move it to the processed list.")
# on a projector the legend under the graph names the colours
rule.markdown(RULE if look.presenting else
              RULE + " Yellow: the nodes that may be taken now (the queue); orange with a thick outline: the one "
              "taken; green: processed (with the engine's value).")
if own is not None:
    own.subheader("The engine's own sort")
    own.markdown(T.engine_order_text(model))


def draw(step: int) -> None:
    """The queue method at the 1-based ``step``: header, graph, legend and table."""
    frame = step - 1
    qs = model.queue_steps[frame]
    st.markdown(T.step_header(model, frame))
    # presentation mode: the table of steps beside the graph, so that its last row is on the first screen at the
    # last step too (under the graph it ran below the fold)
    g, t = (st.columns([T.PRESENT_GRAPH_SHARE, 1 - T.PRESENT_GRAPH_SHARE]) if look.presenting
            else (st.container(), st.container()))
    width = int(graph_px(look, T.DESIGN_WIDTH, T.PRESENT_GRAPH_SHARE) / grow) if look.presenting else T.DESIGN_WIDTH
    with g:
        show_plot(style_graph_figure(T.graph_figure(model, T.queue_states(model, frame), T.queue_notes(model, frame),
                                                    taken=qs.taken, width=width,
                                                    rankdir="wide" if look.presenting else "auto"), look,
                                     floor_px=floor),
                  look, key=ns.key("queue_graph"))
        st.html(T.legend_html(T.QUEUE_LEGEND, legend_px))
    with t:
        show_table(T.queue_table(model, frame, computes=not look.presenting), look, static=True)
    # a Step reruns only this part of the page: the link says the new step from here (and once more at the end)
    publish_link(ctx, {"preset": key, "step": step, "order": list(st.session_state[ns.key("order")])},
                 view=lambda: T.step_class_view(model, frame))


stepper(ns, n, draw, label="Queue step")
walkthrough_download(ns, lambda: T.walkthrough(model), "topological_sort_walkthrough.html", n,
                     what="Every queue step above")

# --- the engine's DFS ------------------------------------------------------------------------------------
st.subheader("What the engine does: depth-first search (engine.topological_sort)")
st.markdown(
    "HW2 asks for a depth-first order instead. `engine.topological_sort(output)` starts at the output, "
    "reads each node's inputs (with an explicit stack, so a 100,000-deep chain is fine) and lists a node "
    "when all its inputs are finished: the **post-order** has every node after its inputs. Reversed, it is "
    "the order the backward pass walks (output first).")
reads = " → ".join(model.name(i) for i in model.dfs_reads)
st.markdown(f"The engine's DFS read the inputs of: **{md_escape(reads)}** (recorded while the engine's own "
            "function ran).")
show_table(T.order_rows(model), look, static=True)
both = [T.check_order(model, model.queue_order()).valid, T.check_order(model, model.post_order()).valid]
st.caption("Both orders checked by the same test as your order below: "
           + ("both valid" if all(both) else "one is NOT valid (a bug)")
           + ". Different valid orders exist whenever two nodes do not depend on each other.")

# --- the student's order -----------------------------------------------------------------------------------
st.subheader("Your turn: click the nodes in an order the forward pass could compute them")
names = [model.name(i) for i in model.node_ids]
order_names = [x for x in st.session_state[ns.key("order")] if isinstance(x, str)]
order, dropped = T.names_to_ids(model, order_names)
if dropped:
    st.warning("Ignored from the link (not nodes of this graph, or repeated): " + md_escape(", ".join(dropped)))
st.session_state[ns.key("order")] = [model.name(i) for i in order]


# drawn intent (explorer.kit.widgets): each callback acts on what the page showed when its button was drawn
def _click(name: str):
    placed = st.session_state[ns.key("order")]
    if name not in placed:
        st.session_state[ns.key("order")] = [*placed, name]


def _undo(shown: list[str]):
    st.session_state[ns.key("order")] = shown[:-1]


def _clear():
    st.session_state[ns.key("order")] = []


per_row = 5 if look.presenting else 8
for start in range(0, n, per_row):
    cols = st.columns(per_row)
    for col, nid in zip(cols, model.node_ids[start:start + per_row]):
        nm = model.name(nid)
        col.button(nm, key=ns.key(f"pick_{nm}"), on_click=_click, args=(nm,), disabled=nid in order,
                   width="stretch", help=f"Place {nm} next")
ctrl = st.columns([1, 1, 4])
ctrl[0].button("Undo", key=ns.key("undo"), on_click=_undo, args=([model.name(i) for i in order],), disabled=not order, icon=":material/undo:",
               width="stretch")
ctrl[1].button("Clear", key=ns.key("clear"), on_click=_clear, disabled=not order, icon=":material/delete:",
               width="stretch")
check = T.check_order(model, order)
shown = " → ".join(model.name(i) for i in order) or "(nothing yet: click a node)"
ctrl[2].markdown(f"**Your order:** {md_escape(shown)}")
if not check.valid:
    st.error(check.message, icon=":material/block:")
elif check.complete:
    st.success(check.message, icon=":material/check_circle:")
else:
    st.info(check.message)
states, badges = T.click_states(model, order, check)
st.plotly_chart(style_graph_figure(T.graph_figure(model, states, badges, check.violated), look),
                key=ns.key("order_graph"), config={"displaylogo": False})
st.html(T.legend_html(T.ORDER_LEGEND, legend_px))

publish_link(ctx, {"preset": key, "step": st.session_state[ns.key("step")],
                   "order": [model.name(i) for i in order]})
