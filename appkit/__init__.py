"""Helpers for the Streamlit app that carry logic and can be tested without a browser.

- :mod:`appkit.deeplink`      page state <-> URL query parameters (``st.query_params``)
- :mod:`appkit.presentation`  lecturer presentation mode: sizes and the CSS that applies them
- :mod:`appkit.state`         per-page session-state namespacing
- :mod:`appkit.pages`         discovery of ``app/pages/*.py`` for the Home page
- :mod:`appkit.figures`       Plotly figures (animated graph with frames, plots) from engine/explain data
- :mod:`appkit.models`        what the expression pages show, computed from the engine's explain layer
- :mod:`appkit.formatting`    numbers and tensor values as short text for tables and captions
- :mod:`appkit.presets`       the example programs the expression pages offer
- :mod:`appkit.widgets`       shared Streamlit widgets (stepping controls, presentation toggle, preset picker,
  rejected-input message, deep links)

Only :mod:`appkit.widgets` imports Streamlit.
"""
