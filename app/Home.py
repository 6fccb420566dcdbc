"""Autodiff Explorer: home page (entry point of `streamlit run app/Home.py`)."""
from __future__ import annotations

from pathlib import Path


import streamlit as st

from explorer.kit.pages import available_backends, discover_pages
from explorer.kit.widgets import presentation_toggle, start_page

APP_DIR = Path(__file__).resolve().parent

ctx = start_page("Autodiff Explorer", "home", {}, {})
look = ctx.look
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
# presentation mode: every page on one screen, three to a row
per_row = 3 if look.presenting else 1
for start in range(0, len(pages), per_row):
    for col, info in zip(st.columns(per_row), pages[start:start + per_row]):
        with col.container(border=True):
            st.page_link(info.relative_to_app(APP_DIR), label=f"**{info.number} · {info.title}**", icon="➡️")
            if info.summary:
                st.caption(info.summary)

st.subheader("Engine backends on this machine")
backends = available_backends()
st.write(", ".join(f"`{b}`" for b in backends))
st.caption("`numpy` is the default; `python` runs every kernel as plain Python loops over strided storage; "
           "`cuda` appears where CuPy and an NVIDIA GPU are present.")
