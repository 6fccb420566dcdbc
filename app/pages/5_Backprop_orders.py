"""The correct order and other orders side by side, stepping together: does each one give the right gradient, and if not, where does it go wrong?

The same graph backpropagated in the correct order and in broken ones, side by side and stepping together: where a wrong gradient appears and which contribution was dropped, the exponential cost of recursing along every path, statistics over random graphs, and the recursion limit of a recursive DFS on a deep chain.
"""
from __future__ import annotations


import pandas as pd
import streamlit as st

from explorer.kit import presets
from explorer.kit.backward_view import legend_html as backward_legend_html
from explorer.kit.code_panel import font_px as code_font_px, scroll_to_highlight, to_html
from explorer.kit.deeplink import LinkField
from explorer.kit.figures import floor_growth, graph_scale, line_plot, style_graph_figure, tight_graph
from explorer.kit.presentation import small_screen_css, small_screen_floor_px
from explorer.backprop_orders import (ORDER_WIDTH, PRESENT_BACK_PX, PRESENT_GRAPH_SHARE, RANDOM_CRITERION,
                                      RANDOM_DEFAULTS,
                                      STRATEGY_LABELS, RandomGraphRun, verdict_markdown, bfs_rate_text,
                                      deep_chain_results, fits_half_width, order_rows, orders_model,
                                      path_recursion_costs_within, step_class_view, walkthrough)
from explorer.kit.budget import bounded_cache
from explorer.kit.formatting import md_escape
from explorer.kit.programs import InputProblem, program_refused
from explorer.kit.plotly_figure import DESIGN_WIDTH
from explorer.kit.widgets import (graph_px, presentation_toggle, program_boxes, publish_link, release_focus,
                                  release_focus_next_run, show_input_problem, show_plot, show_table, start_page,
                                  stepper, still_graph, walkthrough_download)

ALL = tuple(STRATEGY_LABELS)
DEFAULT_ORDERS = ["topological", "bfs_first_touch"]
ctx = start_page(
    "Backprop orders", "orders",
    fields={"expr": LinkField("str", presets.DEFAULT.program), "at": LinkField("str", presets.DEFAULT.inputs),
            "orders": LinkField("list", DEFAULT_ORDERS, choices=ALL),
            "step": LinkField("int", 1, minimum=0)},  # 1-based, as the header shows it (0: first step)
    defaults={"expr": presets.DEFAULT.program, "at": presets.DEFAULT.inputs, "orders": DEFAULT_ORDERS,
              "step": 1, "depth": 3000})
ns, look = ctx.ns, ctx.look
# each order's code scrolls beyond this in presentation mode, beside its graph and no taller (its lit lines in view,
# the rows between them folded)
PRESENT_CODE_PX = 290
if look.presenting:
    st.html(small_screen_css())   # labels, captions, code: 16 px or more at 1366 x 768 too
# presenting, the graphs' texts and the code are 16 px or more at 1366 x 768 too (23 px of the 1920 x 1080 layout):
# the graphs laid out that much smaller and drawn that much larger, as on the Expression explorer
floor = small_screen_floor_px() if look.presenting else None
grow = floor_growth(look, floor) if floor else 1.0
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(64 << 20, spinner="Running every order on the engine…", refuse=program_refused)
def cached_orders(program: str, inputs: str, orders: tuple[str, ...], width: int = ORDER_WIDTH,
                  back_max_height: int = 620, forward_graphs: bool = False):
    return orders_model(program, inputs, orders, width, back_max_height, forward_graphs)


@bounded_cache(4 << 20, spinner="Backpropagating a deep chain…")
def cached_deep(depth: int):
    return deep_chain_results(depth)


head = st.columns([2.2, 3, 1.3] if look.presenting else [3, 1], vertical_alignment="bottom")
with head[-1]:
    presentation_toggle()
head[0].multiselect("Orders to compare", ALL, key=ns.key("orders"), format_func=lambda s: STRATEGY_LABELS[s],
                    on_change=release_focus_next_run,
                    label_visibility="collapsed" if look.presenting else "visible")
release_focus()
c1, c2, program_text, inputs_text = program_boxes(ns, lk=look, where=head[1])
orders = tuple(s for s in ALL if s in st.session_state[ns.key("orders")]) or ("topological",)
try:
    if look.presenting:  # each order in a row: its verdict and caption over its graph, its code beside the graph
        # at the small screen's floor where every order's graphs fit whole that large, else at the design's sizes
        for graph_floor in (floor, None):
            g = grow if graph_floor else 1.0
            model = cached_orders(program_text, inputs_text, orders,
                                  int(graph_px(look, ORDER_WIDTH, PRESENT_GRAPH_SHARE) / g),
                                  int(PRESENT_BACK_PX / graph_scale(look) / g), forward_graphs=True)
            if not any((f.get("layout", {}).get("meta") or {}).get("window") for v in model.views.values()
                       for f in (v.backward_figure, v.forward_figure) if f):
                break
        side_by_side = len(orders) > 1   # (the class's laptops: two orders side by side, as before)
    else:
        model = cached_orders(program_text, inputs_text, orders, graph_px(look, ORDER_WIDTH, 0.5))
        # no room side by side (the graph would shrink): stacked, each the page's full width
        side_by_side = len(orders) > 1 and fits_half_width(model)
        if not side_by_side:
            model = cached_orders(program_text, inputs_text, orders, graph_px(look, DESIGN_WIDTH))
except InputProblem as problem:
    show_input_problem(problem, c1, c2, program_text, inputs_text)
    model = None

if model is not None:
    rows = order_rows(orders, side_by_side)

    def draw(step: int) -> None:
        """The orders at the same 1-based step, each with its verdict from the step where it goes wrong."""
        if look.presenting:
            backward = not forward_step(step)
            for i, s in enumerate(orders):
                present_order(model.views[s], step, legend=backward and i == len(orders) - 1)
            st.html(scroll_to_highlight(step), unsafe_allow_javascript=True)
            publish_link(ctx, {"expr": program_text, "at": inputs_text, "orders": list(orders), "step": step},
                         view=lambda: step_class_view(model, orders, step, side_by_side))
            return
        for row in rows:
            cols = st.columns(2) if len(rows[0]) > 1 else [st.container()]
            for col, s in zip(cols, row):
                with col:
                    draw_order(model.views[s], step)
        st.html(backward_legend_html())  # the backward graphs' edges: sent, not sent yet, this step
        # each order's own code, read from the running engine; the lines this step ran are highlighted
        st.markdown("**Each order's own code at this step** — the lines that did the step's work are lit")
        for col, s in zip(st.columns(len(orders)), orders):
            code = model.views[s].code(step - 1)
            col.markdown(f"**{STRATEGY_LABELS[s]}** — {code.caption}")
            col.html(to_html(code, code_font_px(False), test_id=f"code-panel-{s}"))
        publish_link(ctx, {"expr": program_text, "at": inputs_text, "orders": list(orders), "step": step},
                     view=lambda: step_class_view(model, orders, step, side_by_side))

    def forward_step(step: int) -> bool:
        """Whether the 1-based step is in the forward pass (the same steps for every order)."""
        view = next((v for v in model.views.values() if v.n_frames), None)
        return view is not None and view.frameset.frames[min(step, view.n_frames) - 1].phase == "forward"

    def order_frame(view, step: int, heading: str):
        """``(k, frame, verdict kind, verdict line)`` of the order at the 1-based step; None, with ``heading`` and
        the order's error written, for an order that has no frames."""
        if not view.n_frames:
            st.markdown(heading)
            if view.error:
                st.error(f"This order failed: {md_escape(view.error)}")
            return None
        k = min(step, view.n_frames) - 1
        return (k, view.frameset.frames[k], *view.verdict_line(k))

    def present_order(view, step: int, legend: bool) -> None:
        """Presentation mode: one order at the 1-based step in a row of its own: its name and verdict line, the
        step's caption, then its graph (the values being computed while the forward pass runs, then the backward
        graph) with its own code beside it, the lines this step ran lit; ``legend``: the backward graphs' legend
        under the graph (the last order's, in a backward step: under both graphs, as on the Expression explorer)."""
        got = order_frame(view, step, f"**{STRATEGY_LABELS[view.strategy]}**")
        if got is None:
            return
        k, fr, kind, line = got
        # two lines across the page, close together and close over the graph: two rows and the legend need the height
        box = st.container(gap="xxsmall")
        with box.container(gap=None):
            st.markdown(f"**{STRATEGY_LABELS[view.strategy]}** · {verdict_markdown(kind, line)}")
            st.markdown(f"**Step {k + 1} of {view.n_frames}** · {fr.phase}: {md_escape(fr.caption)}")
        left, right = box.columns([PRESENT_GRAPH_SHARE, 1 - PRESENT_GRAPH_SHARE])
        left = left.container(gap="xxsmall")   # the legend close under the graph
        # the forward steps show the values being computed (the adjoints are all still to come)
        shown = view.forward_figure if fr.phase == "forward" and view.forward_figure else view.backward_figure
        if shown:
            show_plot(tight_graph(style_graph_figure(still_graph(shown, k, title=False), look, floor_px=graph_floor)),
                      look, key=ns.key(f"back_{view.strategy}"), where=left)
        if legend:   # the backward graphs' edges: sent, not sent yet, this step
            left.html(backward_legend_html())
        right.html(to_html(view.code(k), max(code_font_px(True), floor or 0), test_id=f"code-panel-{view.strategy}",
                           max_height_px=PRESENT_CODE_PX))

    def draw_order(view, step: int) -> None:
        """One order at the 1-based step: its name and verdict line (what has gone wrong so far, nothing
        about what is to come), the step's caption, its graphs."""
        got = order_frame(view, step, f"##### {STRATEGY_LABELS[view.strategy]}")
        if got is None:
            return
        k, fr, kind, line = got
        st.markdown(f"##### {STRATEGY_LABELS[view.strategy]}\n{verdict_markdown(kind, line)}")
        st.markdown(f"**Step {k + 1} of {view.n_frames}** · {fr.phase}: {md_escape(fr.caption)}")
        # the forward graph (values and adjoints) over the backward graph
        show_plot(style_graph_figure(still_graph(view.figure, k, title=False), look), look,
                  key=ns.key(f"fig_{view.strategy}"))
        if view.backward_figure:
            show_plot(style_graph_figure(still_graph(view.backward_figure, k, title=False), look), look,
                      key=ns.key(f"back_{view.strategy}"))
        for m in view.moments_until(k):  # every moment so far, listed under the graphs
            st.warning(f"**Step {m.frame + 1}: {md_escape(m.text)}**")
        if view.error:
            st.error(f"This order failed: {md_escape(view.error)}")
        elif view.wrong and k == view.n_frames - 1:
            show_table(view.wrong, look, static=True)

    stepper(ns, model.n_frames, draw, label="Step (all orders together)")
    walkthrough_download(ns, lambda: walkthrough(model, orders, side_by_side, program_text, inputs_text),
                         "backprop_orders_walkthrough.html", model.n_frames, what="Every step of these orders")
else:
    publish_link(ctx, {"expr": program_text, "at": inputs_text, "orders": list(orders)})

st.divider()
left, right = st.columns(2)
with left:
    st.subheader("Cost: VJP calls versus depth")
    st.caption("A doubling chain (each value used twice by the next): recursing along every path makes "
               "2^depth − 1 VJP calls; the topological order makes one per node.")
    max_depth = st.slider("Maximum depth", 2, 14, 10, key=ns.key("max_depth"))
    # each depth is measured once per process, the deeper ones across reruns (depth 14 alone is 16,383 VJP
    # calls): a fragment polls the rest with a progress bar, so no rerun waits for all of them
    series, done = path_recursion_costs_within(max_depth, 0.6)
    show_plot(line_plot(series, title="VJP calls on a doubling chain", x_title="depth",
                        y_title="VJP calls (log scale)", look=look, log_y=True), look, key=ns.key("cost_fig"))

    @st.fragment(run_every=0.5 if done < max_depth else None)
    def cost_progress(max_depth=max_depth):
        full_run = st.session_state.get(ns.key("cost_full"))  # the full rerun has measured its share already
        now = done if full_run else path_recursion_costs_within(max_depth, 0.4)[1]
        if now < max_depth:
            st.progress(now / max_depth, text=f"Counting VJP calls: depth {now} of {max_depth} done")
        elif not full_run:
            st.rerun()  # all depths measured: redraw the plot

    if done < max_depth:
        st.session_state[ns.key("cost_full")] = True
        try:
            cost_progress()
        finally:
            st.session_state[ns.key("cost_full")] = False
with right:
    st.subheader("Random graphs")
    st.caption(f"Random DAGs backpropagated with every order; {RANDOM_CRITERION}. Each graph is run forward "
               "once and backward once per order (at most 6,000 ops in all; path recursion gives up on a graph "
               "after 5,000 VJP calls and counts as an error).")
    r = st.columns(3)
    n_graphs = r[0].number_input("graphs", 5, 200, RANDOM_DEFAULTS[0], step=5, key=ns.key("n_graphs"))
    n_ops = r[1].number_input("ops per graph", 3, 30, RANDOM_DEFAULTS[1], key=ns.key("n_ops"))
    seed = r[2].number_input("seed", 0, 10_000, RANDOM_DEFAULTS[2], key=ns.key("seed"))
    # the graphs run a slice at a time (at most ~0.6 s per rerun): a fragment polls the run with a progress
    # bar and a Cancel button, so no setting makes the page wait seconds (200 graphs of 30 ops: 3-10 s)
    args = (int(n_graphs), int(n_ops), int(seed))
    job = st.session_state.get(ns.key("stats_run"))
    if job is None or job.key != args:
        try:
            job = RandomGraphRun(*args)
        except ValueError as e:
            st.error(f"Not run: {e}")
            job = None
        st.session_state[ns.key("stats_run")] = job
    if job is not None:
        if not job.finished and not job.cancelled:
            job.advance(0.6)
        running = not job.finished and not job.cancelled

        @st.fragment(run_every=0.5 if running else None)
        def stats_view(job=job):
            if job is not st.session_state.get(ns.key("stats_run")):
                return  # the settings changed: the next full rerun shows the new run
            if not st.session_state.get(ns.key("stats_full_run")) and not job.finished and not job.cancelled:
                job.advance(0.4)  # a poll of the fragment (the full rerun has advanced the run already)
                if job.finished:
                    st.rerun()  # stop polling; the full rerun shows the table
            if job.finished:
                stats = job.table()
                st.markdown(bfs_rate_text(stats))
                show_table(stats, look, static=True)
                return
            st.progress(job.done / job.n_graphs,
                        text=f"Backpropagating random graphs with every order: {job.done} of {job.n_graphs}")
            if job.cancelled:
                st.caption(f"Cancelled after {job.done} of {job.n_graphs} graphs.")
                if job.done:
                    show_table(pd.DataFrame(job.table()), look)
                if st.button("Resume", key=ns.key("stats_resume")):
                    job.cancelled = False
                    st.rerun()
            elif st.button("Cancel", key=ns.key("stats_cancel")):
                job.cancelled = True
                st.rerun()

        st.session_state[ns.key("stats_full_run")] = True
        try:
            stats_view()
        finally:
            st.session_state[ns.key("stats_full_run")] = False

st.subheader("Recursive DFS on a deep chain")
st.caption("The notes' chain h ← h · 1.0002, repeated depth times: d h / d x = 1.0002^depth. The textbook "
           "recursive topological sort needs one Python stack frame per node; the engine's iterative sort "
           "(explicit stack) does not.")
d = st.columns([2, 1, 1])
depth = d[0].number_input("Chain depth", 10, 20_000, key=ns.key("depth"), step=500)
results = cached_deep(int(depth))
d[0].markdown(f"Exact: 1.0002^{int(depth)} = **{results[0]['exact']}**")
for col, res in zip(d[1:], results):
    with col:
        st.markdown(f"**{STRATEGY_LABELS[res['strategy']]}**")
        if res["error"]:
            st.error(res["error"])
        else:
            st.success("gradient: " + ", ".join(f"d h / d {k} = {v}" for k, v in res["grads"].items()))
