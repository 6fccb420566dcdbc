"""Pick a network (logistic regression, MLP, the lecture's sentiment network, HW2's network, a residual block, an attention head, an unrolled RNN, or your own layers) and step through its real forward and backward pass at tensor level: shapes, values, adjoints, each VJP with its actual matrices, fan-out sums, the memory kept for backward, and a gradient check.
"""
from __future__ import annotations

import json


import pandas as pd
import streamlit as st

from explorer.kit.budget import bounded_cache
from explorer.kit.formatting import md_escape
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import at_frame, style_graph_figure
from explorer.kit.widgets import clamp_linked, presentation_toggle, publish_link, start_page, step_controls
from explorer.network_explorer import analysis
from explorer.network_explorer.explore import explore, graph_dot, heatmap, moment, sweep_figure
from explorer.network_explorer.presets import OPTIONS, PRESETS, PresetError
from explorer.network_explorer.tables import (fan_out_rows, gradcheck_rows, inspect_labels, layer_rows, memory_rows,
                                             note_levels)

OPTION_KIND = {o.name: ("str" if isinstance(o.default, str) else "float" if isinstance(o.default, float) else "int")
               for opts in OPTIONS.values() for o in opts}


ctx = start_page(
    "Network explorer", "network",
    fields={"net": LinkField("str", "mlp", choices=tuple(PRESETS)),
            "level": LinkField("str", "auto", choices=("auto", "op", "layer")),
            "step": LinkField("int", 0, minimum=0),
            # a preset's sizes always travel in the link (their defaults differ between presets)
            **{name: LinkField(kind, None) for name, kind in OPTION_KIND.items()}},
    defaults={"net": "mlp", "level": "auto", "step": 0, "sig": None, **{name: None for name in OPTION_KIND}})
ns, look = ctx.ns, ctx.look
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
    st.session_state[ns.key("step")] = 0


top = st.columns([3, 1])
top[0].selectbox("Network", list(PRESETS), key=ns.key("net"), format_func=lambda k: PRESETS[k].title,
                 on_change=_preset_changed)
with top[1]:
    presentation_toggle()
key = st.session_state[ns.key("net")]

cols = st.columns(len(OPTIONS[key]) + 1)
for col, o in zip(cols, OPTIONS[key]):
    k = ns.key(o.name)
    if st.session_state.get(k) is None:      # not given by the link: this preset's default
        st.session_state[k] = o.default
    if isinstance(o.default, str):
        col.text_input(o.label, key=k, help="e.g. 'a good good movie' (a repeated word shows the scatter-add)"
                       if o.name == "sentence" else "comma-separated: linear N, relu, sigmoid, tanh, dropout P")
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
    publish_link(ctx, {"net": key, "step": 0, **options})
    st.stop()

for p in ex.problems:
    st.warning(md_escape(p))
net = ex.network
st.info(f"**{net.title}** — {net.teaches}")
for level, note in note_levels(net.notes):
    getattr(st, level)(note)

sig = (key, json.dumps(options, sort_keys=True))
if st.session_state[ns.key("sig")] not in (None, sig):
    st.session_state[ns.key("step")] = 0
st.session_state[ns.key("sig")] = sig

level_choice = st.session_state[ns.key("level")]
level = ex.default_level if level_choice == "auto" else level_choice
vcols = st.columns([2, 3])


def _level_changed():
    st.session_state[ns.key("level")] = st.session_state[ns.key("level_radio")]


st.session_state[ns.key("level_radio")] = level
vcols[0].radio("View", ["layer", "op"], horizontal=True, on_change=_level_changed, key=ns.key("level_radio"),
               format_func=lambda v: {"layer": "Layer view (a box per layer)", "op": "Op view (every primitive)"}[v])
rec = ex.rec
vcols[1].caption(f"{len(rec.forward_order)} primitive ops · {len(rec.backward)} backward steps · "
                 f"{len(rec.layers)} layers · loss = {rec.loss:.6g}. Switching views keeps the step.")

step = step_controls(ns, ex.n_frames)
m = moment(ex, step)
st.markdown(f"#### Step {step + 1} of {ex.n_frames} · {m.phase}\n{m.title}")

animate = st.toggle("Animate in the browser (Play / slider)", value=ex.animated(level),
                    key=ns.key(f"animate_{key}_{level}"),
                    help="Sends every frame to the browser so Play and the figure's slider run there. "
                         "Off by default for big networks, where it slows every page run down.")
fig = ex.figure(level, step, animate)
fig = style_graph_figure(at_frame(fig, step if animate else 0), look, height=max(look.figure_height, 420))
st.plotly_chart(fig, key=ns.key("figure"), config={"displaylogo": False})
st.download_button("Download graph (DOT)", cached_dot(key, json.dumps(options, sort_keys=True), level),
                   file_name=f"{key}_{level}.dot", mime="text/vnd.graphviz",
                   help="The graph of this view as Graphviz DOT (final values and adjoints), from the explain layer.")
st.caption("Node labels: name, output shape, and where its adjoint stands (k of n contributions received; ✓ once "
           "processed). Colours: blue computed, red waiting for more contributions, green complete, yellow active. "
           + ("▶ Play / ❚❚ Pause and the slider under the graph animate in your browser; the buttons above move "
              "the page's step (and the deep link)." if animate else "The figure shows the current step."))


def show_tensor(where, value, title: str, key: str) -> None:
    """A heatmap for small tensors, summary statistics for large ones."""
    lk = analysis.look(value)
    if lk is None:
        where.caption(f"{title}: —")
        return
    if lk.is_heatmap:
        where.plotly_chart(heatmap(value, f"{title} {analysis.format_shape(lk.shape)}",
                                   font=look.figure_font), key=key, config={"displayModeBar": False})
    else:
        where.markdown(f"**{title}** {analysis.format_shape(lk.shape)} — too large for a heatmap")
        where.dataframe(pd.DataFrame([lk.stats]), hide_index=True)


left, right = st.columns([3, 2])
with left:
    st.markdown("##### This step")
    if m.node is None:
        st.caption(m.title)
    else:
        node = rec.node(m.node)
        st.markdown(f"**{node.label}** · op `{node.op}` · shape **{analysis.format_shape(node.shape)}** · "
                    f"layer *{node.layer}*")
        st.markdown(f"VJP: `{m.formula}`")
        a, b = st.columns(2)
        show_tensor(a, m.value, "value", ns.key("cur_value"))
        if m.adjoint is not None:
            show_tensor(b, m.adjoint, "adjoint ḡ (held now)", ns.key("cur_adjoint"))
    if m.detail is not None:
        d = m.detail
        if d.products:
            st.markdown("**The VJP's actual products** (engine ops run inside this VJP)")
            for j, (op, ins, out) in enumerate(d.products[:3]):
                cs = st.columns(len(ins) + 1)
                sym = {"matmul": "@", "mul": "⊙", "div": "/", "scatter_add": "scatter-add"}.get(op, op)
                for c, (arr, nm) in enumerate(zip(ins, ["left", "right"])):
                    show_tensor(cs[c], arr, f"{nm} {sym}" if c == 0 else nm, ns.key(f"prod{j}_{c}"))
                show_tensor(cs[-1], out, "= result", ns.key(f"prod{j}_out"))
        if d.leaf_grad is not None:
            st.success(f"{d.label}.grad += adjoint (shape {analysis.format_shape(d.leaf_grad.shape)})")
        for s in d.sent:
            status = (f"{s['received']} of {s['expected']} received" if s["expected"] > 1
                      else "its only consumer")
            st.markdown(f"→ sent to **{s['label']}** {analysis.format_shape(s['value'].shape)} ({status})")
    for fs in m.fan_out:
        st.markdown(f"##### Fan-out sum at {fs.label}: {len(fs.parts)} contributions")
        cs = st.columns(min(len(fs.parts), 4) + 1)
        for j, (src, stp, val) in enumerate(fs.parts[:4]):
            show_tensor(cs[j], val, f"from {src} (step {stp + 1})", ns.key(f"fan{fs.node}_{j}"))
        show_tensor(cs[-1], fs.total, "= sum", ns.key(f"fan{fs.node}_sum"))
        st.caption(f"Sum of the {len(fs.parts)} contributions, as the engine accumulated them "
                   f"(‖sum‖ = {analysis.look(fs.total).stats['norm']:.4g}).")

with right:
    st.markdown("##### Inspect a node")
    labels = inspect_labels(rec)
    default_node = m.node if m.node in labels else next(iter(labels))
    pick = st.selectbox("node", list(labels), index=list(labels).index(default_node),
                        format_func=lambda i: labels[i], key=ns.key(f"inspect_{step}"))
    n = rec.node(pick)
    st.markdown(f"op `{n.op}` · shape **{analysis.format_shape(n.shape)}** · {n.nbytes} bytes")
    st.caption(f"VJP: {analysis.vjp_formula(n.op)}")
    show_tensor(st, n.value, "value", ns.key("ins_value"))
    show_tensor(st, n.adjoint, "final adjoint", ns.key("ins_adjoint"))
    parts = rec.contributions_to(pick)
    if len(parts) > 1:
        st.markdown(f"**Fan-out: {len(parts)} contributions**")
        st.dataframe(pd.DataFrame(fan_out_rows(rec, pick)), hide_index=True)

tab_mem, tab_check, tab_layers = st.tabs(["Memory kept for backward", "Gradient check", "Layers"])
with tab_mem:
    mem = ex.memory
    st.markdown(f"**{len(mem.rows)} tensors kept** by the graph for backward: **{mem.total_bytes:,} bytes** "
                f"(the VJPs actually read {mem.read_bytes:,} bytes of them). Trainable leaves are not counted. "
                f"Under `no_grad` nothing is kept: 0 bytes.")
    st.dataframe(pd.DataFrame(memory_rows(mem)), hide_index=True)
    st.caption("This engine's History keeps every input of every op alive; the last column shows which "
               "ones the backward pass really read (traced while the VJPs ran). " + analysis.RELU_SAVED)
    sc = st.columns(max(len(ex.sweeps), 1))
    for c, (opt, rows) in zip(sc, ex.sweeps.items()):
        c.plotly_chart(sweep_figure(rows, opt, font=look.figure_font), key=ns.key(f"sweep_{opt}"))
        c.dataframe(pd.DataFrame(rows), hide_index=True)
with tab_check:
    t = ex.gradcheck
    w = t.worst
    st.markdown(f"Engine gradients vs central differences (ε = {t.eps:g}) at random coordinates of every leaf. "
                f"**Worst relative error: {w.rel_error:.2e}** ({w.leaf}{list(w.index)}).")
    st.dataframe(pd.DataFrame(gradcheck_rows(t)), hide_index=True)
with tab_layers:
    st.dataframe(pd.DataFrame(layer_rows(rec)), hide_index=True)

publish_link(ctx, {"net": key, "level": level_choice if level_choice == "auto" else level, "step": step,
                   **options})
