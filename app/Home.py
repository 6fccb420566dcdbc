"""Autodiff Explorer: home page (entry point of `streamlit run app/Home.py`)."""
from __future__ import annotations

from pathlib import Path


import streamlit as st

import engine
from explorer.kit.pages import discover_pages
from explorer.kit.widgets import presentation_toggle, start_page

APP_DIR = Path(__file__).resolve().parent

ctx = start_page("Autodiff Explorer", "home", {}, {})
st.markdown(
    "A visual explorer of **automatic differentiation**. Type a small program, and watch our own tensor "
    "engine run it: the forward pass in topological order, then the backward pass sending each "
    "contribution (a vector-Jacobian product) along each edge, summing at fan-out nodes and landing in "
    "the inputs' gradients. Everything on these pages is the real engine executing, never a re-enactment: "
    "finite-difference checks, deliberately broken backprop orders, forward mode with dual numbers, "
    "and networks trained live."
)
presentation_toggle()

st.subheader("Pages")
pages = discover_pages(APP_DIR / "pages")
if not pages:
    st.info("No pages found in app/pages.")
for info in pages:
    with st.container(border=True):
        st.page_link(info.relative_to_app(APP_DIR), label=f"**{info.title}**", icon="➡️")
        if info.summary:
            st.caption(info.summary)

st.subheader("Engine backends on this machine")
backends = engine.available_backends()
st.write(", ".join(f"`{b}`" for b in backends))
st.caption("`numpy` is the default; `python` runs every kernel as plain Python loops over strided storage; "
           "`cuda` appears where CuPy and an NVIDIA GPU are present.")
