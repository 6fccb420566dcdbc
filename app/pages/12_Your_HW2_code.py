"""Your own HW2 topological_sort and backpropagate (run in a sandboxed process, only when the app was started with --student-code PATH on your machine) animated beside the engine's correct order, with the first wrong node marked and a verdict for every graph.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import line_plot, style_graph_figure
from explorer.kit.formatting import md_escape
from explorer.kit.widgets import (graph_px, presentation_toggle, publish_link, show_plot, show_table, start_page,
                                  stepper, still_graph)
from explorer.student_code import view as V

ctx = start_page("Your HW2 code", "hw2code",
                 fields={"graph": LinkField("str", "slide"), "step": LinkField("int", 1, minimum=0)},
                 defaults={"graph": "slide", "step": 1})
ns, look = ctx.ns, ctx.look
for msg in ctx.link_problems:
    st.warning(msg)

head = st.columns([3, 1], vertical_alignment="bottom")
with head[-1]:
    presentation_toggle()
optin = V.opt_in()
if not optin.enabled:
    head[0].info(optin.refused, icon=":material/lock:")
    st.markdown("This page runs **your** `topological_sort` and `backpropagate` (HW2, problem 1) on the lecture's "
                "graphs and animates your backward order beside the engine's, marking the first node whose "
                "adjoint differs and saying why. Your code runs in a separate process with a time and a memory "
                "limit; the app talks to it only through the protocol calls it records.")
    st.stop()


@bounded_cache(32 << 20, spinner="Running your code on every graph (in a sandboxed process)…", seconds=None)
def cached_report(path: str, version: tuple[int, int]):
    return V.page_report(path)


@bounded_cache(16 << 20, spinner="Drawing both orders…", seconds=None)
def cached_view(path: str, version: tuple[int, int], key: str, width: int):
    return V.graph_view(cached_report(path, version), key, width)


version = V.file_version(optin.path)
report = cached_report(optin.path, version)
head[0].markdown(f"Running **{md_escape(V.shown_name(report))}** (saved changes rerun it).")
if not report.loaded:
    st.error(md_escape(report.headline()))
    st.stop()
(st.success if all(v.right for v in report.verdicts.values()) else st.error)(
    "**Verdict:** " + md_escape(report.headline()))

choices = V.graph_choices(report)
if st.session_state[ns.key("graph")] not in choices:
    st.session_state[ns.key("graph")] = choices[0]
titles = {k: report.verdicts[k].title for k in choices}
pick = st.columns([3, 2])
pick[0].selectbox("Graph", choices, format_func=lambda k: titles[k], key=ns.key("graph"))
key = st.session_state[ns.key("graph")]
gv = cached_view(optin.path, version, key, graph_px(look, V.ORDER_WIDTH, 0.5))
verdict = gv.verdict
pick[1].markdown(("✔ " if verdict.right else "~ " if verdict.kind == "warning" else "✘ ") +
                 md_escape(verdict.headline))


def draw(step: int) -> None:
    cols = st.columns(2)
    for col, side in zip(cols, (gv.engine, gv.student)):
        with col:
            st.markdown(f"##### {md_escape(side.label if side else V.STUDENT_LABEL)}")
            if side is None:
                st.error(md_escape(verdict.headline))
                continue
            k = min(step, side.n_frames) - 1
            fr = side.frameset.frames[k]
            st.markdown(f"**Step {k + 1} of {side.n_frames}** · {fr.phase}: {md_escape(fr.caption)}")
            if side is gv.student and gv.wrong_frame is not None:
                if k >= gv.wrong_frame:
                    st.error(f"**{md_escape(gv.wrong_text)}**", icon=":material/error:")
                else:
                    st.caption(f"Watch step {gv.wrong_frame + 1}: your first wrong node is marked there.")
            show_plot(style_graph_figure(still_graph(side.figure, k, title=False), look), look,
                      key=ns.key(f"fig_{'student' if side is gv.student else 'engine'}"))
            if side is gv.student and k == side.n_frames - 1:
                for d in verdict.details:
                    st.markdown(f"- {md_escape(d)}")
    publish_link(ctx, {"graph": key, "step": step})


stepper(ns, max(gv.n_frames, 1), draw, label="Step (both orders together)")

st.divider()
st.subheader("Every graph")
show_table(pd.DataFrame(V.summary_rows(report)), look)
series = V.scaling_series(report)
if series:
    show_plot(line_plot(series, title="VJP calls on a doubling chain (each value used twice by the next)",
                        x_title="depth", y_title="VJP calls (log scale)", look=look, log_y=True), look,
              key=ns.key("scaling"))
