"""The page kit: what every page shares, testable without a browser.

- :mod:`explorer.kit.deeplink`      page state <-> URL query parameters (``st.query_params``)
- :mod:`explorer.kit.presentation`  lecturer presentation mode: sizes and the CSS that applies them
- :mod:`explorer.kit.state`         per-page session-state namespacing
- :mod:`explorer.kit.pages`         discovery of ``app/pages/*.py`` for the Home page
- :mod:`explorer.kit.programs`      typed program + inputs -> the engine's Program, or the box at fault
- :mod:`explorer.kit.graph_view`   the graph renderer in one call (trace -> drawn graph, frames, figure), built from
  :mod:`explorer.kit.labels` (what a node says, 5 digits), :mod:`explorer.kit.layout` (composites, boxing big
  graphs), :mod:`explorer.kit.frames`, :mod:`explorer.kit.graphviz_layout` (Graphviz dot, cached),
  :mod:`explorer.kit.plotly_figure` (the figure); :mod:`explorer.kit.picture_checks` tests a figure's data;
  :mod:`explorer.kit.dot` exports DOT
- :mod:`explorer.kit.figures`       Plotly figures (animated graph with frames, plots)
- :mod:`explorer.kit.formatting`    user text made safe to show; the number formats of :mod:`explorer.explain.numbers`
- :mod:`explorer.kit.presets`       the example programs the expression pages offer
- :mod:`explorer.kit.widgets`       shared Streamlit widgets (stepping controls, presentation toggle, preset picker,
  rejected-input message, deep links)
- :mod:`explorer.kit.class_widgets` the class's widgets (start, join, follow, ask), drawn by ``start_page``
- :mod:`explorer.kit.streamlit_private` every use of Streamlit's private API (the run context, session liveness)

Only :mod:`explorer.kit.widgets` and :mod:`explorer.kit.class_widgets` import Streamlit when they load;
:mod:`explorer.kit.budget` imports it inside a page run only.
"""
