"""Autodiff Explorer: home page (entry point of `streamlit run app/Home.py`)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

import engine  # noqa: E402

st.set_page_config(page_title="Autodiff Explorer", layout="wide")
st.title("Autodiff Explorer")
st.write(
    "Everything on these pages is the real engine executing: forward passes in topological order, "
    "adjoints flowing backwards with the sum at every fan-out node, finite-difference checks, "
    "deliberately broken backprop orders, and a sentiment classifier trained live."
)
st.subheader("Engine backends on this machine")
st.write(", ".join(engine.available_backends()))
