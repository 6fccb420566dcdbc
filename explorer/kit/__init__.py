"""The page kit: what every page shares, testable without a browser.

- :mod:`explorer.kit.deeplink`      page state <-> URL query parameters (``st.query_params``)
- :mod:`explorer.kit.presentation`  lecturer presentation mode: sizes and the CSS that applies them
- :mod:`explorer.kit.state`         per-page session-state namespacing
- :mod:`explorer.kit.pages`         discovery of ``app/pages/*.py`` for the Home page
- :mod:`explorer.kit.programs`      typed program + inputs -> the engine's Program, or the box at fault
- :mod:`explorer.kit.layout`, :mod:`explorer.kit.frames`, :mod:`explorer.kit.plotly_figure`,
  :mod:`explorer.kit.dot`           the graph renderer: layout, animation frames, the Plotly figure, DOT
- :mod:`explorer.kit.figures`       Plotly figures (animated graph with frames, plots)
- :mod:`explorer.kit.formatting`    numbers and tensor values as short text for tables and captions
- :mod:`explorer.kit.presets`       the example programs the expression pages offer
- :mod:`explorer.kit.widgets`       shared Streamlit widgets (stepping controls, presentation toggle, preset picker,
  rejected-input message, deep links)

Only :mod:`explorer.kit.widgets` imports Streamlit.
"""
