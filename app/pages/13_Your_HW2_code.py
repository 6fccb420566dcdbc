"""Your own HW2 topological_sort and backpropagate (or the project's samples) animated beside the engine's order on the lecture's graphs, the first wrong node marked.

Your own HW2 topological_sort and backpropagate (run in a sandboxed process, only when the app was started with --student-code PATH on your machine) animated beside the engine's correct order, with the first wrong node marked and a verdict for every graph. Without that option (and on a class server) the page runs the project's own sample solutions, correct and broken, through the same sandbox.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.kit.backward_view import legend_html as backward_legend_html
from explorer.kit.budget import bounded_cache
from explorer.kit.code_panel import font_px as code_font_px, scroll_to_highlight, to_html
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import floor_growth, graph_scale, line_plot, style_graph_figure, tight_graph
from explorer.kit.presentation import small_screen_css, small_screen_floor_px
from explorer.kit.formatting import md_escape
from explorer.kit.widgets import (graph_px, presentation_toggle, publish_link, show_plot, show_table, start_page,
                                  stepper, still_graph, walkthrough_download)
from explorer.student_code import samples as S
from explorer.student_code import handout as H
from explorer.student_code import view as V

ctx = start_page("Your HW2 code", "hw2code",
                 fields={"graph": LinkField("str", "slide"), "step": LinkField("int", 1, minimum=0),
                         "sample": LinkField("str", V.DEFAULT_SAMPLE, choices=tuple(V.sample_choices()))},
                 defaults={"graph": "slide", "step": 1, "sample": V.DEFAULT_SAMPLE})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(small_screen_css())   # labels, captions, code: 16 px or more at 1366 x 768 too
# presenting, every text in the graphs is 16 px or more at 1366 x 768 too: the graphs are laid out that much smaller
# and drawn that much larger
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
for msg in ctx.link_problems:
    st.warning(msg)

optin = V.opt_in()
if V.missing_notice(optin):   # the command line named a path that is not there: said first, not in the fold
    st.warning(md_escape(V.missing_notice(optin)), icon=":material/folder_off:")
own = optin.enabled   # the student's own file; else the project's samples (any server runs those: our code)
# the toggle's column fits its whole label; the verdict line (or the sample picker, "Sample: ..." in full) takes
# the rest of the row: one line high, so that both graphs stay whole on the first screen
# (in a 1400 px window with the sidebar the graph picker needs more of the row to show its title whole)
head = st.columns([3.6, 2.0, 1.6] if own else [3.6, 2.0, 1.8] if look.presenting else [3.0, 2.7, 1.6],
                  vertical_alignment="bottom")
with head[-1]:
    presentation_toggle()


@bounded_cache(32 << 20, spinner="Running your code on every graph (in a sandboxed process)…", seconds=None)
def cached_report(path: str, version: tuple[int, int]):
    return V.page_report(path)


# Samples never change: one sandboxed run per sample per server process, shared by every session (and concurrent
# first requests wait for the one run). No CPU deadline, as for a student's file: the child has its own limits
# (3 s a call, 120 s in all) and this process's share measured 0.9-1.2 s of CPU per sample, too near the
# request's 2 s on a busy server. The store keeps all six reports (36 MB together).
@bounded_cache(V.SAMPLE_STORE_BYTES, spinner="Running the sample on every graph (in a sandboxed process)…",
               seconds=None)
def cached_sample_report(key: str, version: tuple[int, int]):
    return V.sample_report(key)


def report_of(source: str, version: tuple[int, int]):
    return cached_report(source, version) if own else cached_sample_report(source, version)


@bounded_cache(16 << 20, spinner="Drawing both orders…", seconds=None)
def cached_view(source: str, version: tuple[int, int], key: str, width: int, max_height: int, label: str,
                forward_graphs: bool = False):
    return V.graph_view(report_of(source, version), key, width, max_height, label, forward_graphs)


if own:
    source, label = optin.path, V.STUDENT_LABEL
    version = V.file_version(optin.path)
else:
    # on a projector each sample is named by its approach, never by its verdict (the picker's list, the graph's
    # title, the code panel): the class is asked whether and where it goes wrong
    head[0].selectbox("Sample", V.sample_choices(), format_func=lambda k: V.sample_label(k, look.presenting),
                      key=ns.key("sample"), label_visibility="collapsed")
    source = st.session_state[ns.key("sample")]
    label = V.sample_label(source, look.presenting)
    version = V.file_version(str(S.sample(source).path))
report = report_of(source, version)
if own:
    ok = report.loaded and all(v.right for v in report.verdicts.values())
    # the file (its folder and name only: no path of this machine) and the whole report, in one line of text (a
    # box would push the graphs below the first screen); the code runs again once a change to the file is saved
    sides_note = V.STACKED_SIDES_NOTE if look.presenting else V.SIDES_NOTE
    head[0].markdown(f":{'green' if ok else 'red'}[{'✔' if ok else '✘'} **{md_escape(V.shown_name(report))}**: "
                     f"{md_escape(report.headline())}.] " + (sides_note if report.loaded else ""))
    if not report.loaded:
        st.stop()

choices = V.graph_choices(report)
if st.session_state[ns.key("graph")] not in choices:
    st.session_state[ns.key("graph")] = choices[0]
titles = {k: report.verdicts[k].title for k in choices}
head[-2].selectbox("Graph", choices, format_func=lambda k: titles[k], key=ns.key("graph"),
                   label_visibility="collapsed")
key = st.session_state[ns.key("graph")]
gv = cached_view(source, version, key,
                 int(graph_px(look, V.ORDER_WIDTH, V.PRESENT_GRAPH_SHARE if look.presenting else 0.5) / grow),
                 int(V.graph_height(look.presenting) / graph_scale(look) / grow), label, look.presenting)
verdict = gv.verdict


def draw(step: int) -> None:
    """Both orders at the same 1-based step, then where the student's code (or the sample) went wrong. On a
    laptop the graphs side by side, their captions under them, the code under the student's side; presenting,
    the two graphs one above the other (each under its caption) in the left half and the code that ran this
    step, its lines lit, in the right half beside them, with the verdict under the code (all on the first screen)."""
    sides = (gv.engine, gv.student)
    ks = [min(step, side.n_frames) - 1 if side else 0 for side in sides]

    def forward_step(side, k) -> bool:
        return side is not None and side.frameset.frames[k].phase == "forward"

    def graph(side, k, where) -> None:
        # on a projector the backward graphs in the slides' notation (as on Backprop orders), and while the forward
        # pass runs the values being computed in their place (the adjoints are all still to come); on a laptop the
        # forward graph with values and adjoints
        fig = side.forward_figure if look.presenting and forward_step(side, k) and side.forward_figure else \
            side.backward_figure if look.presenting and side.backward_figure else side.figure
        styled = style_graph_figure(still_graph(fig, k, title=False), look, floor_px=floor)
        # presenting, close around its drawing: both graphs and the legend under them on the first screen
        show_plot(tight_graph(styled) if look.presenting else styled, look,
                  key=ns.key(f"fig_{'student' if side is gv.student else 'engine'}"), where=where)

    def caption(side, k, where) -> None:
        fr = side.frameset.frames[k]
        where.markdown(f"**{md_escape(side.label)}** · Step {k + 1} of {side.n_frames} · {fr.phase}: "
                       f"{md_escape(fr.caption)}")

    if look.presenting:
        left, right = st.columns([V.PRESENT_GRAPH_SHARE, 1 - V.PRESENT_GRAPH_SHARE])
        for side, k in zip(sides, ks):
            if side is None:
                left.markdown(f"**{md_escape(label)}**")
                left.error(md_escape(verdict.headline))
                continue
            # its name in one line (the step's caption is beside the graphs), close over it: both graphs whole on the
            # first screen
            box = left.container(gap="xxsmall")
            box.markdown(f"**{md_escape(side.label)}**")
            graph(side, k, box)
        if not all(forward_step(side, k) for side, k in zip(sides, ks) if side is not None):
            # the backward graphs' edges: sent, not sent yet, this step (none in a forward graph), under both graphs
            left.html(backward_legend_html())
        for side, k in zip(sides, ks):
            if side is not None:
                caption(side, k, right)
        # the verdict (once it is due) over the code: at the last step it is what the class reads, and the code
        # then lights nothing
        notes, aside = right.container(), right.container()
    else:
        for col, side, k in zip(st.columns(2), sides, ks):
            if side is None:
                col.markdown(f"**{md_escape(label)}**")
                col.error(md_escape(verdict.headline))
                continue
            graph(side, k, col)
        for col, side, k in zip(st.columns(2), sides, ks):
            if side is not None:
                caption(side, k, col)
        aside, notes = st.columns(2)
    k = ks[1]
    # the code's backpropagate beside the graphs, the lines that did this step's work lit (as Backprop orders
    # lights each order's own code): the sample's, or the student's own file; which code this is, not how it does
    # (its verdict comes at the step where it goes wrong)
    block = None
    if gv.student is not None:
        block = V.student_code_block(report, gv.student, k) if own else \
            V.sample_code_block(source, gv.student, k, look.presenting)
    if block is not None:
        whose = "Your code" if own else "The sample's code"
        # presenting: one line (two pushed the lit rows of a long step to the projector's bottom edge at 1366 x 768)
        aside.markdown(f"**{whose} at this step** — " + ("its lines lit" if look.presenting
                                                          else "the lines that did its work are lit"))
        aside.html(to_html([block], max(code_font_px(look.presenting), floor or 0),
                           test_id="code-student" if own else "code-sample",
                           max_height_px=V.PRESENT_CODE_PX if look.presenting else None))
        if look.presenting:
            st.html(scroll_to_highlight(step), unsafe_allow_javascript=True)
    if not own and not look.presenting:   # presenting, each graph is named over it, the sample in its name
        aside.caption(f"{V.SAMPLE_SIDES_NOTE} {V.SAMPLE_NOTE}")
    if gv.student is not None:
        last = k == gv.student.n_frames - 1
        # a student's own code: the reason at once (it is their debugging); a sample's: at the step it happens
        reveal = gv.wrong_frame if own else gv.verdict_frame
        said = ""   # the red note's text: a detail it already gives ("Why: lost contribution: ...") is not repeated
        if reveal is not None and k >= reveal:
            said = gv.wrong_text
            notes.error(f"**{md_escape(gv.wrong_text)}**", icon=":material/error:")
        elif gv.wrong_frame is not None and own:
            notes.caption(f"Watch step {gv.wrong_frame + 1}: your first wrong node is marked there.")
        # a sample's verdict waits for the step where it goes wrong, or where the contribution it loses arrives
        # (or the end): the class finds it first
        if own or last or (reveal is not None and k >= reveal):
            mark = "✔ " if verdict.right else "~ " if verdict.kind == "warning" else "✘ "
            # the red note names the first wrong node and both values: the line under it keeps only the kind
            # ("wrong gradient"), not the same words again
            headline = verdict.headline.split(": first wrong node ", 1)[0] if said else verdict.headline
            notes.markdown(mark + md_escape(headline))
        if last:
            for d in verdict.details:
                if f"Why: {d}" not in said:
                    notes.markdown(f"- {md_escape(d)}")
    publish_link(ctx, {"graph": key, "step": step} | ({} if own else {"sample": source}),
                 view=lambda: V.step_class_view(gv, step, label, None if own else source, look.presenting))


stepper(ns, max(gv.n_frames, 1), draw, label="Step (both orders together)")
walkthrough_download(ns, lambda: V.walkthrough(gv, label, None if own else source, look.presenting),
                     "hw2_walkthrough.html",
                     gv.n_frames, what="Both orders' steps on this graph")

if not own:
    # our own code, so it may be shown as it is: the class reads what the loop does (the docstring naming the
    # bug is left out)
    named = "" if look.presenting else f" (`{S.sample(source).path.name}`)"   # the file's name names the bug
    st.markdown(f"**The sample's code**{named}: its `topological_sort` and "
                "`backpropagate`, as the sandbox runs them")
    st.code(S.source(source), language="python", line_numbers=True)

st.divider()
# every graph's verdict: on a projector folded (the class finds the sample's verdict on the graph first, so it
# is not on the page from step 1 on); on a laptop, or for a student's own file, open
every = st.expander("Every graph: each one's verdict", icon=":material/table:") if look.presenting and not own \
    else st.container()
with every:
    st.subheader("Every graph")
    show_table(pd.DataFrame(V.summary_rows(report)), look)
    series = V.scaling_series(report, label)
    if series:
        show_plot(line_plot(series, title="VJP calls on a doubling chain (each value used twice by the next)",
                            x_title="depth", y_title="VJP calls (log scale)", look=look, log_y=True), look,
                  key=ns.key("scaling"))

if not own:
    # how to run one's own code: kept, but folded (the first screen is the sample's comparison)
    with st.expander("Run your own HW2 code on this page", icon=":material/lock:"):
        st.markdown(V.PAGE_PURPOSE)
        st.info(optin.reason, icon=":material/lock:")
        st.markdown("On your own machine, start the explorer naming your file or your HW2 folder "
                    "(or `.../minitorch/autodiff.py`):")
        st.code(V.START_COMMANDS[0], language="bash")
        st.markdown("Or check it without the app:")
        st.code(V.START_COMMANDS[1], language="bash")

# --- HW2 itself: the handout at a glance -------------------------------------------------------------------
st.divider()
st.subheader(f"HW2 at a glance: three problems, {H.total_points()} points")
show_table(H.problem_rows(), look, static=True)
st.caption(H.MARKERS_NOTE)
if own:   # the student's own copy: are all the fences still there (the autograder's scripts look for them)?
    show_table(H.fence_rows(optin.path), look, static=True)
st.markdown("##### What the autograder reads")
st.markdown(H.AUTOGRADER_NOTE)
st.code("\n".join(H.LOG_FORMAT), language=None)
st.caption("The Sentiment training page prints these lines for its own run once it finishes.")
faq, notes_col = st.columns(2)
with faq:
    st.markdown("##### FAQ")
    show_table(H.faq_rows(), look, static=True)
with notes_col:
    st.markdown("##### Version notes")
    show_table(H.version_rows(), look, static=True)


@bounded_cache(1 << 20, spinner="Running HW2's step on every backend…")
def cached_backend_runs():
    return H.backend_runs()


st.markdown("##### HW1's kernels as HW2's backend, and the engine's backend switch")
st.markdown("\n".join(f"{i}. {step}" for i, step in enumerate(H.BACKEND_STEPS, 1)))
show_table(list(H.BACKEND_MAP), look, static=True)
runs = cached_backend_runs()
show_table(H.backend_rows(runs), look, static=True)
st.caption(H.backend_runs_caption(runs))
if H.cuda_missing(runs):
    st.info(H.cuda_missing(runs), icon=":material/memory:")
st.markdown(H.BACKEND_NOTE)
