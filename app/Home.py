"""Autodiff Explorer: home page, and the entry point of `streamlit run app/Home.py`.

Streamlit runs this file twice over: imported once as a module, where it finds ``app`` (an ``st.App``: Streamlit's
own server with the class's routes beside it, :mod:`explorer.classroom.web`), and run as ``__main__`` on every
visit of the home page.
"""
from __future__ import annotations

import html
from pathlib import Path

import streamlit as st

from explorer.classroom.web import routes

if __name__ != "__main__":      # imported by `streamlit run`, which serves this app object
    from explorer.kit import warmup
    app = st.App(__file__, routes=routes())
    warmup.start()   # the pages' modules and the fixed figures, in the background before the first visitor
else:   # a visit of the home page
    from explorer.kit.pages import available_backends, discover_pages
    from explorer import home
    from explorer.kit.widgets import presentation_toggle, show_table, start_page
    from explorer.kit.presentation import small_screen_css, small_screen_floor_px

    APP_DIR = Path(__file__).resolve().parent

    ctx = start_page("Autodiff Explorer", "home", {}, {})
    look = ctx.look
    if look.presenting:   # the toggle's label: 16 px or more on a 1366 x 768 projector too
        st.html(small_screen_css() + "<style>[data-testid='stMain'] [data-testid='stPageLink'] p "
                "{ white-space: normal !important; overflow: visible !important; }</style>")   # a long title wraps
    intro = ("A visual explorer of **automatic differentiation**. Type a small program, and watch our own tensor "
             "engine run it: the forward pass in topological order, then the backward pass sending each "
             "contribution (a vector-Jacobian product) along each edge, summing at fan-out nodes and landing in "
             "the inputs' gradients. Everything on these pages is the real engine executing, never a re-enactment: "
             "finite-difference checks, deliberately broken backprop orders, forward mode with dual numbers, "
             "and networks trained live.")
    head = st.columns([4, 1], vertical_alignment="center")
    head[0].markdown(intro if not look.presenting else "Lecture 5 in the order it is taught: what the class sees on each page.")
    with head[1]:
        presentation_toggle()

    pages = discover_pages(APP_DIR / "pages")  # in the lecture's order (the files' numbers)
    if not pages:
        st.info("No pages found in app/pages.")
    if not look.presenting:
        st.subheader("Pages, in the lecture's order")
    # presentation mode: every page on one screen, five to a row, each line in the text's own colour (the grey caption
    # was too faint to read from the back row)
    per_row = 5 if look.presenting else 1   # 13 pages: three rows (four to a row left one card alone on a fourth)
    for start in range(0, len(pages), per_row):
        for col, info in zip(st.columns(per_row), pages[start:start + per_row]):
            with col.container(border=True):
                # on a projector no arrow: its room goes to the title (five to a row, "Cross entropy on logits" was cut)
                st.page_link(info.relative_to_app(APP_DIR), label=f"**{info.number} · {info.title}**",
                             icon=None if look.presenting else "➡️")
                if info.summary and look.presenting:
                    # 23 px in the 1920 x 1080 layout: 16 px on a 1366 x 768 projector
                    st.markdown(f"<div style='font-size:max(0.85em, {small_screen_floor_px()}px);color:#31333f;"
                                f"line-height:1.3;padding-bottom:0.3em'>{html.escape(info.summary)}"
                                "</div>", unsafe_allow_html=True)
                elif info.summary:
                    st.caption(info.summary)

    # the lecture's framing: its four parts (with the pages above that show each), lecture 4 recapped on the engine's
    # own kernels, the readings, what comes next; folded on a projector (the pages are that screen)
    titles = {info.number: info.title for info in pages}
    frame = st.expander("Lecture 5 on one screen: agenda, lecture 4 recapped, readings, what comes next",
                        expanded=not look.presenting)
    with frame:
        left, right = st.columns(2)
        with left:
            st.markdown("**The lecture in four parts**")
            show_table(home.agenda_rows(titles), look, static=True)
            st.markdown("**Readings**")
            show_table(home.readings_rows(titles), look, static=True)
        with right:
            st.markdown("**Lecture 4, recapped on this engine's CUDA kernels**")
            show_table(home.recap_rows(), look, static=True)
            st.markdown("**What comes next**")
            st.markdown("\n".join(f"- {line}" for line in home.NEXT))

    if not look.presenting:   # the class does not need it; the agenda above is the projector's screen
        st.subheader("Engine backends on this machine")
        st.write(", ".join(f"`{b}`" for b in available_backends()))
        st.caption("`numpy` is the default; `python` runs every kernel as plain Python loops over strided storage; "
                   "`cuda` appears where CuPy and an NVIDIA GPU are present.")
