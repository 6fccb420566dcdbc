"""Helpers for the Streamlit app that carry logic and can be tested without a browser.

- :mod:`appkit.deeplink`      page state <-> URL query parameters (``st.query_params``)
- :mod:`appkit.presentation`  lecturer presentation mode: sizes and the CSS that applies them
- :mod:`appkit.state`         per-page session-state namespacing
- :mod:`appkit.pages`         discovery of ``app/pages/*.py`` for the Home page
- :mod:`appkit.figures`       Plotly figures (animated graph with frames, plots) from engine/explain data
- :mod:`appkit.widgets`       shared Streamlit widgets (stepping controls, presentation toggle, deep links)

Only :mod:`appkit.widgets` imports Streamlit.
"""
