"""A real network's forward and backward pass at tensor level: shapes, heatmaps of values and adjoints, each VJP's products.

Pick a network (logistic regression, MLP, the lecture's sentiment network, HW2's network, a residual block, an attention head, an unrolled RNN, or your own layers) and step through its real forward and backward pass at tensor level: shapes, values, adjoints, each VJP with its actual matrices, fan-out sums, the memory kept for backward, and a gradient check.
"""
from __future__ import annotations

import json


import pandas as pd
import streamlit as st

from explorer.kit.backward_view import legend_html as backward_legend_html
from explorer.kit.budget import bounded_cache
from explorer.kit.formatting import count, md_escape, plain, sci
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import floor_growth, graph_scale, style_graph_figure
from explorer.kit.plotly_figure import FONT
from explorer.kit.presentation import small_screen_css, small_screen_floor_px, small_screen_look
from explorer.kit.labels import num
from explorer.kit.widgets import (PRESENT_PAGE_PX, clamp_linked, graph_px, presentation_toggle, publish_link, screen_break,
                                  release_focus, release_focus_next_run, show_plot, show_table, start_page, stepper,
                                  still_graph, walkthrough_download)
from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, PRESENT_LEGEND_PX, VIEW_WIDTH
from explorer.network_explorer import analysis
from explorer.network_explorer.explore import (BACKWARD_HEADING, FAN_OUT_NOTE, NODE_LABELS_NOTE, SENT_LEGEND,
                                               compact_heatmap_height, data_input,
                                               adjoint_name, explore, formula_html, leaf_gradients, formula_parts, shown_name, graph_dot, heatmap, held_at, moment,
                                               sent_status, side_by_side, sizes_label, step_class_view, sweep_figure, title_chars, title_lines, walkthrough)
from explorer.network_explorer.presets import MAX_LAYERS, MAX_TEXT, MAX_WIDTH, MAX_WORDS, OPTIONS, PRESETS, PresetError
from explorer.network_explorer.tables import (fan_out_rows, gradcheck_rows, gradcheck_scope, inspect_labels, layer_rows,
                                             memory_caption, memory_rows, note_levels)

OPTION_KIND = {o.name: ("str" if isinstance(o.default, str) else "float" if isinstance(o.default, float) else "int")
               for opts in OPTIONS.values() for o in opts}


ctx = start_page(
    "Network explorer", "network",
    fields={"net": LinkField("str", "mlp", choices=tuple(PRESETS)),
            "level": LinkField("str", "auto", choices=("auto", "op", "layer")),
            "step": LinkField("int", 1, minimum=0),  # 1-based, as the header shows it (0: first step)
            # a preset's sizes always travel in the link (their defaults differ between presets)
            **{name: LinkField(kind, None) for name, kind in OPTION_KIND.items()}},
    defaults={"net": "mlp", "level": "auto", "step": 1, "sig": None, **{name: None for name in OPTION_KIND}})
ns, look = ctx.ns, ctx.look
PRESENT_NET_GRAPH_PX = 660  # and its height: the rest of the first screen under the buttons and the caption (at the
#                             small projector's text floor a network taller than this is shown through a window that
#                             follows the step, as the op view always was: shrunk whole, its text fell to 14 px there)
if look.presenting:
    st.html(small_screen_css())   # labels, captions, code, tables: 16 px or more at 1366 x 768 too
# presenting, every text of the graph and the heatmaps is 16 px or more at 1366 x 768 too: the graph is laid out that
# much smaller and drawn that much larger
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
fig_look = small_screen_look(look)   # the heatmaps' and tables' sizes
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(64 << 20, spinner="Running the network on the engine…", refuse=PresetError)
def cached_explore(key: str, options_json: str):
    return explore(key, json.loads(options_json))


@bounded_cache(8 << 20, spinner=None, refuse=PresetError)
def cached_dot(key: str, options_json: str, level: str) -> str:
    return graph_dot(cached_explore(key, options_json), level)


def _preset_changed():
    key = st.session_state[ns.key("net")]
    for o in OPTIONS[key]:
        st.session_state[ns.key(o.name)] = o.default
    st.session_state[ns.key("step")] = 1
    st.session_state[ns.key("step_playing")] = False
    release_focus_next_run()  # the step keys work at once after a pick


# presentation mode: one row of choices (the sizes folded away), so that the graph, its caption and the step
# buttons fit one 1080p screen; the network's notes move under the graph
top = st.columns([2.5, 2.1, 1.7, 1.3] if look.presenting else [3, 1], vertical_alignment="bottom")
# a projector's box holds the short name whole (the title, cut at its edge, stands over the notes under the graph)
top[0].selectbox("Network", list(PRESETS), key=ns.key("net"),
                 format_func=lambda k: PRESETS[k].name if look.presenting else PRESETS[k].title,
                 on_change=_preset_changed)
with top[-1]:
    presentation_toggle()
release_focus()
key = st.session_state[ns.key("net")]

if look.presenting:
    chosen = {o.name: st.session_state.get(ns.key(o.name)) for o in OPTIONS[key]}
    with top[1].expander(md_escape(sizes_label(OPTIONS[key], chosen)) or "Sizes"):
        cols = [st.container() for _ in OPTIONS[key]]
else:
    cols = st.columns(len(OPTIONS[key]) + 1)
for col, o in zip(cols, OPTIONS[key]):
    k = ns.key(o.name)
    if st.session_state.get(k) is None:      # not given by the link: this preset's default
        st.session_state[k] = o.default
    if isinstance(o.default, str):
        limit = MAX_TEXT[o.name]
        if len(st.session_state[k]) > limit:   # refused text is not kept (a link or a client past the box)
            st.warning(f"The {o.label} text had {count(len(st.session_state[k]))} characters, more than the limit of "
                       f"{count(limit)}: it was refused and the default is back.")
            st.session_state[k] = o.default
        col.text_input(o.label, key=k, max_chars=limit,
                       help=f"e.g. 'a good good movie' (a repeated word shows the scatter-add). At most {MAX_WORDS} "
                            f"words, {limit} characters." if o.name == "sentence" else
                       f"comma-separated: linear N, relu, sigmoid, tanh, dropout P. At most {MAX_LAYERS} layers, "
                       f"widths up to {MAX_WIDTH}, {count(limit)} characters; the page refuses a network too big to "
                       "record and check within one request.")
    elif isinstance(o.default, float):
        st.session_state[k] = float(clamp_linked(ns, o.name, float(st.session_state[k]), o.minimum, o.maximum))
        col.number_input(o.label, min_value=float(o.minimum), max_value=float(o.maximum), step=0.1, key=k)
    else:
        st.session_state[k] = int(clamp_linked(ns, o.name, int(st.session_state[k]), o.minimum, o.maximum))
        col.number_input(o.label, min_value=int(o.minimum), max_value=int(o.maximum), step=1, key=k)
options = {o.name: st.session_state[ns.key(o.name)] for o in OPTIONS[key]}

try:
    ex = cached_explore(key, json.dumps(options, sort_keys=True))
except PresetError as e:
    st.error(f"**This network cannot be built** — {md_escape(e)}", icon="🚫")
    publish_link(ctx, {"net": key, **options})
    st.stop()

for p in ex.problems:
    st.warning(md_escape(p))
net = ex.network


def lesson_notes() -> None:
    st.info(f"**{net.title}** — {net.teaches}")
    for note_level, note in note_levels(net.notes):
        getattr(st, note_level)(note)


if not look.presenting:
    lesson_notes()

sig = (key, json.dumps(options, sort_keys=True))
if st.session_state[ns.key("sig")] not in (None, sig):
    st.session_state[ns.key("step")] = 1
    st.session_state[ns.key("step_playing")] = False
st.session_state[ns.key("sig")] = sig

level_choice = st.session_state[ns.key("level")]
# presentation mode: the graph at the screen's height, the current op's values beside it
present_size = ({"width": int(graph_px(look, VIEW_WIDTH, PRESENT_GRAPH_SHARE) / grow),
                 "max_height": int(PRESENT_NET_GRAPH_PX / graph_scale(look) / grow)} if look.presenting else {})
# the forward graph has no edge labels: its smallest text is a node's (FONT), so drawn whole it may take more room
grow_whole = max(1.0, floor / (FONT * graph_scale(look))) if floor else 1.0
whole_size = ({"width": int(graph_px(look, VIEW_WIDTH, PRESENT_GRAPH_SHARE) / grow_whole),
               "max_height": int(PRESENT_NET_GRAPH_PX / graph_scale(look) / grow_whole)} if look.presenting else {})
level = ex.level_for(**present_size) if level_choice == "auto" else level_choice
vcols = st.columns([2, 3]) if not look.presenting else [top[2], st.container()]


def _level_changed():
    st.session_state[ns.key("level")] = st.session_state[ns.key("level_radio")]
    release_focus_next_run()


st.session_state[ns.key("level_radio")] = level
vcols[0].radio("View", ["layer", "op"], horizontal=True, on_change=_level_changed, key=ns.key("level_radio"),
               format_func=lambda v: ({"layer": "Layers", "op": "Every op"} if look.presenting else
                                      {"layer": "Layer view (a box per layer)", "op": "Op view (every primitive)"})[v])
rec = ex.rec
if not look.presenting:
    vcols[1].caption(f"{len(rec.forward_order)} primitive ops · {len(rec.backward)} backward steps · "
                     f"{len(rec.layers)} layers · loss = {num(rec.loss)}. Switching views keeps the step.")


def tensor_title(value, title: str) -> str:
    """A heatmap's title: what it shows and its shape (its colour range is written under its cells)."""
    return f"{title} {analysis.format_shape(analysis.look(value).shape)}"


def present_chars(share: float | None) -> int | None:
    """A heatmap title's line length in ``share`` of the presentation page's width (None: one line)."""
    return title_chars(PRESENT_PAGE_PX * share - 40, fig_look.figure_font) if look.presenting and share else None


def show_tensor(where, value, title: str, key: str, scale: float | None = None, narrow: bool = False,
                height: int = 220, share: float | None = None, title_rows: int = 1) -> None:
    """A heatmap for small tensors (colours from -scale to +scale, written under it), summary
    statistics for large ones. ``share``: the part of the presentation page's width the heatmap gets (its title
    wraps to fit it)."""
    lk = analysis.look(value)
    if lk is None:
        where.caption(f"{title}: —")
        return
    if lk.is_heatmap:
        zmax = analysis.magnitude(value) if scale is None else scale
        show_plot(heatmap(value, tensor_title(value, title), font=fig_look.figure_font, zmax=zmax, narrow=narrow,
                          height=height, chars=present_chars(share), title_rows=title_rows), fig_look, key=key, where=where,
                  config={"displayModeBar": False})
    else:
        where.markdown(f"**{title}** {analysis.format_shape(lk.shape)} — too large for a heatmap")
        show_table(pd.DataFrame([lk.stats]), fig_look, where=where)


def this_step(m, narrow: bool = False) -> None:
    """The current op: its node, its VJP's formula, its value and the adjoint it holds now."""
    st.markdown("##### This step")
    if m.node is None:
        (st.markdown if look.presenting else st.caption)(m.title)   # the class reads it from the back row
        if m.phase == "done":   # every leaf's gradient (a projector's backward graph shows only the top of a tall one)
            st.markdown("  \n".join(f"• {md_escape(line)}" for line in leaf_gradients(rec)))
        x = data_input(rec) if m.phase == "inputs" else None
        if x is not None:   # where the data enters, and what it is
            show_tensor(st, rec.node(x).value, "input x", ns.key("cur_value"), analysis.value_scale(rec, x),
                        share=1 - PRESENT_GRAPH_SHARE if narrow else None)
        return
    node = rec.node(m.node)
    named = shown_name(ex, m.node, level)   # the layer view names no op ids
    st.markdown(f"**{md_escape(named)}** · op `{node.op}` · shape **{analysis.format_shape(node.shape)}**"
                + ("" if level == "layer" else f" · layer *{md_escape(node.layer)}*"))
    # narrow (a projector's panel beside the graph): the rule on one line (its note goes under the sent lines),
    # small tensors' heatmaps only as tall as their rows, a column's value and adjoint side by side
    # never broken inside a formula ("b̄ = / Σ_rows Ȳ" read as two): pieces that keep whole, breaks between them
    st.markdown(f"VJP: {formula_html(formula_parts(m.formula)[0] if narrow else m.formula)}", unsafe_allow_html=True)
    stacked = narrow and not side_by_side(m.value, m.adjoint)
    a, b = (st.container(), st.container()) if stacked else st.columns(2)
    hv, ha = ((compact_heatmap_height(m.value, fig_look.figure_font), compact_heatmap_height(m.adjoint, fig_look.figure_font))
              if narrow else (220, 220))
    # the panel beside the graph (narrow), or the page's left 3/5 (laptop layout: no presentation share)
    share = (1 - PRESENT_GRAPH_SHARE) * (1 if stacked else 0.5) if narrow else None
    titles = [("value", m.value, analysis.value_scale(rec, m.node))]
    if m.adjoint is not None:
        # the panel's first line names the node: on a projector's narrow panel the title says only what it holds (side
        # by side, in half the panel, only "adjoint": one line, as the value's)
        titles.append(("adjoint (held now)" if stacked else "adjoint" if narrow else
                       f"adjoint {adjoint_name(ex, m.node, level)} (held now)", m.adjoint,
                       analysis.adjoint_scale(rec, m.node)))
    # side by side: both titles take as many lines as the longer, so that the two heatmaps' cells stand level
    rows = 1 if stacked else max((len(title_lines(tensor_title(v, t), present_chars(share)))
                                  for t, v, sc in titles if analysis.look(v) is not None), default=1)
    show_tensor(a, m.value, "value", ns.key("cur_value"), titles[0][2], height=hv, share=share, title_rows=rows)
    if m.adjoint is not None:
        show_tensor(b, m.adjoint, titles[1][0], ns.key("cur_adjoint"), titles[1][2], height=ha, share=share,
                    title_rows=rows)


def vjp_products(m) -> None:
    """The engine ops run inside this step's VJP, as heatmaps: left ⊙/@ right = result."""
    d = m.detail
    if d is None or not d.products:
        return
    st.markdown("**The VJP's actual products** (engine ops run inside this VJP)")
    for j, ((op, ins, out), (in_scales, out_scale)) in enumerate(zip(d.products[:3], d.product_scales)):
        cs = st.columns(len(ins) + 1)
        sym = {"matmul": "@", "mul": "⊙", "div": "/", "scatter_add": "scatter-add", "sum": "summed over rows"}.get(op, op)
        names = ["left", "right"] if len(ins) > 1 else ["Ȳ,"]   # a Linear's b̄ = Σ_rows Ȳ: one operand
        for c, (arr, nm, sc) in enumerate(zip(ins, names, in_scales)):
            show_tensor(cs[c], arr, f"{nm} {sym}" if c == 0 else nm, ns.key(f"prod{j}_{c}"), sc, narrow=True,
                        share=1 / len(cs))
        show_tensor(cs[-1], out, "= result", ns.key(f"prod{j}_out"), out_scale, narrow=True, share=1 / len(cs))


def sent_lines(m) -> None:
    """Where this step's contributions went (and a leaf's accumulation)."""
    d = m.detail
    if d is None:
        return
    if d.leaf_grad is not None:
        st.success(f"{d.label}.grad += adjoint (shape {analysis.format_shape(d.leaf_grad.shape)})")
    for s in d.sent:
        status = sent_status(s)
        to = shown_name(ex, s["target"], level)
        st.markdown(f"→ sent to **{md_escape(to)}** {analysis.format_shape(s['value'].shape)} ({status})")


def inspector(m, frame: int, cols) -> None:
    """Any node as the walk holds it at ``frame``: the picker and its facts in ``cols[0]``, its value in
    ``cols[1]``, its adjoint in ``cols[2]``."""
    with cols[0]:
        st.markdown("##### Inspect a node")
        labels = inspect_labels(rec)
        default_node = m.node if m.node in labels else next(iter(labels))
        pick = st.selectbox("node", list(labels), index=list(labels).index(default_node),
                            format_func=lambda i: labels[i], key=ns.key(f"inspect_{frame}"))
        n = rec.node(pick)
        st.markdown(f"op `{n.op}` · shape **{analysis.format_shape(n.shape)}** · {n.nbytes} bytes")
        st.caption(f"VJP: {analysis.vjp_formula(n.op)}")
    held = held_at(ex, pick, frame)   # only what the walk has computed by this step: no spoilers
    beside = look.presenting and pick == m.node   # drawn beside the graph already: not the same heatmaps twice
    if beside:
        cols[1].caption("value and adjoint: under This step, beside the graph")
    elif held.value is None:
        cols[1].caption(f"value: {held.value_note}")
    else:
        show_tensor(cols[1], held.value, "value", ns.key("ins_value"), analysis.value_scale(rec, pick), share=1 / 3.2)
    if held.adjoint is None and not beside:
        cols[2].caption(held.adjoint_note)
    elif not beside:
        show_tensor(cols[2], held.adjoint, held.adjoint_note, ns.key("ins_adjoint"), analysis.adjoint_scale(rec, pick),
                    share=1 / 3.2)   # the inspector's columns [1.2, 1, 1]
    parts = rec.contributions_to(pick)
    if len(parts) > 1 and held.arrived:
        with cols[0]:
            st.markdown(f"**Fan-out: {held.arrived} of {len(parts)} contributions so far**"
                        if held.arrived < len(parts) else f"**Fan-out: {len(parts)} contributions**")
            show_table(pd.DataFrame(fan_out_rows(rec, pick, held.arrived)), look)


def draw(step: int) -> None:
    """Header, graph, this step's VJP and the node inspector at the 1-based ``step``; the link."""
    frame = step - 1
    m = moment(ex, frame, level)
    if look.presenting:  # one line: the graph gets the room
        st.markdown(f"**Step {step} of {ex.n_frames} · {m.phase}** — {m.title}")
    else:
        st.markdown(f"#### Step {step} of {ex.n_frames} · {m.phase}\n{m.title}")
    # one frame, stepped by the page's buttons; the header above says what it shows, in full
    # presentation mode: the graph at the screen's height, the current op's values beside it
    size = {**present_size, "whole_text_only": True} if look.presenting else {}
    # presenting: the whole forward graph where it fits at the text floor (always at step 1: the class sees the
    # whole network first), else a window that follows the step
    whole = ex.whole_figure(level, frame, **whole_size) if look.presenting else None
    fig = still_graph(whole or ex.figure(level, frame, animate=False, **size), 0, title=False)
    # the backward pass as the slides draw it: its own graph, every edge reversed, the adjoints named x̄
    backward = m.phase in ("backward", "done")
    # on a projector the legend stands over the backward graph (under it, it sat on a laptop screen's bottom edge),
    # and the graph gives up the legend's line of height, so both end where the graph alone did
    back_size = ({**size, "max_height": size["max_height"] - int(PRESENT_LEGEND_PX / graph_scale(look) / grow)}
                 if look.presenting else size)
    back = still_graph(ex.backward_figure(level, frame, **back_size), 0, title=False) if backward else None
    if look.presenting:
        graph_col, step_col = st.columns([PRESENT_GRAPH_SHARE, 1 - PRESENT_GRAPH_SHARE])
        with graph_col:   # backward steps: the backward graph in the forward one's place (one graph fits the screen)
            if back:
                st.html(backward_legend_html(SENT_LEGEND))
            show_plot(style_graph_figure(back or fig, look, floor_px=floor), look,
                      key=ns.key("backward_figure" if back else "figure"))
        with step_col:
            this_step(m, narrow=True)
            sent_lines(m)
            note = formula_parts(m.formula)[1] if m.node is not None else ""
            if note:
                st.caption(note)
    else:
        show_plot(style_graph_figure(fig, look), look, key=ns.key("figure"))
        if back:
            st.markdown(f"##### {BACKWARD_HEADING}")
            show_plot(style_graph_figure(back, look), look, key=ns.key("backward_figure"))
            st.html(backward_legend_html(SENT_LEGEND))
    screen_break()   # on a projector the button and what follows start on the next screen (it peeked in at the edge)
    st.download_button("Download graph (DOT)", cached_dot(key, json.dumps(options, sort_keys=True), level),
                       file_name=f"{key}_{level}.dot", mime="text/vnd.graphviz",
                       help="The graph of this view as Graphviz DOT (final values and adjoints), from the "
                            "explain layer.")
    st.caption(NODE_LABELS_NOTE)

    if look.presenting:   # the step's lines stand beside the graph (above); its products and the inspector
        vjp_products(m)      # across the page's width, nothing left empty beside them
        inspector(m, frame, st.columns([1.2, 1, 1]))
    else:
        left, right = st.columns([3, 2])
        with left:
            this_step(m)
            vjp_products(m)
            sent_lines(m)
        with right:
            inspector(m, frame, (st.container(), st.container(), st.container()))

    # the fan-out sums this step completes, across the page's width (in a column their heatmaps were cut off)
    for fs in m.fan_out:
        st.markdown(f"##### Fan-out sum at {fs.label}: {len(fs.parts)} contributions")
        scale = analysis.adjoint_scale(rec, fs.node)
        shown = fs.parts[:4]
        cs = st.columns(len(shown) + 1)
        reasons = {r["backward step"]: r["note"] for r in fan_out_rows(rec, fs.node)}   # by the step that sent it
        for j, (src, stp, val) in enumerate(shown):
            show_tensor(cs[j], val, f"{'+ ' if j else ''}{src} · step {stp + 1}", ns.key(f"fan{fs.node}_{j}"), scale,
                        share=1 / len(cs))
            why = reasons.get(str(stp + 1))
            if why:
                cs[j].caption(why)
        show_tensor(cs[-1], fs.total, "= sum", ns.key(f"fan{fs.node}_sum"), scale, share=1 / len(cs))
        more = f" ({len(fs.parts) - len(shown)} more not drawn)" if len(fs.parts) > len(shown) else ""
        st.caption(f"Sum of the {len(fs.parts)} contributions, as the engine accumulated them "
                   f"(‖sum‖ = {num(analysis.look(fs.total).stats['norm'])}){more}. {FAN_OUT_NOTE}")
    publish_link(ctx, {"net": key, "level": level_choice if level_choice == "auto" else level, "step": step,
                       **options}, view=lambda: step_class_view(ex, level, frame))


stepper(ns, ex.n_frames, draw)
walkthrough_download(ns, lambda: walkthrough(ex, level, PRESETS[key].title), f"{key}_walkthrough.html", ex.n_frames,
                     what="Every step of this view", note=" (the node inspector stays on the page)")
if look.presenting:
    lesson_notes()

tab_mem, tab_check, tab_layers = st.tabs(["Memory kept for backward", "Gradient check", "Layers"])
with tab_mem:
    mem = ex.memory
    st.markdown(f"**{len(mem.rows)} tensors kept** by the graph for backward: **{count(mem.total_bytes)} bytes** "
                f"(the VJPs actually read {count(mem.read_bytes)} bytes of them). Trainable leaves are not counted. "
                f"Under `no_grad` nothing is kept: 0 bytes.")
    show_table(pd.DataFrame(memory_rows(mem)), look)
    st.caption(memory_caption(mem) + " " + analysis.RELU_SAVED)
    sc = st.columns(max(len(ex.sweeps), 1))
    for c, (opt, rows) in zip(sc, ex.sweeps.items()):
        show_plot(sweep_figure(rows, opt, font=look.figure_font), look, key=ns.key(f"sweep_{opt}"), where=c)
        show_table(pd.DataFrame(rows), look, where=c)
with tab_check:
    t = ex.gradcheck
    w = t.worst
    st.markdown(f"Engine gradients vs central differences (ε = {plain(t.eps)}) at random coordinates of "
                f"{gradcheck_scope(t, rec)}. "
                f"**Worst relative error: {sci(w.rel_error, 3)}** ({w.leaf}{list(w.index)}).")
    show_table(pd.DataFrame(gradcheck_rows(t)), look)
with tab_layers:
    show_table(pd.DataFrame(layer_rows(rec)), look)
