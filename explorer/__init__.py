"""The explorer's page logic: one module (or subpackage) per page of the app, named after it, plus the
page kit (:mod:`explorer.kit`), the explain layer (:mod:`explorer.explain`: the engine's execution as plain data)
and the class (:mod:`explorer.classroom`; each page module registers its own class questions there). Tested
without a browser: Streamlit is imported when a module loads only by :mod:`explorer.kit.widgets` and
:mod:`explorer.kit.class_widgets`, and its private API only through :mod:`explorer.kit.streamlit_private`.

Pages in the lecture's order (``app/pages/N_*.py``):

- :mod:`explorer.cross_entropy`         page 1
- :mod:`explorer.learning_problem`      page 2
- :mod:`explorer.expression_explorer`   page 3
- :mod:`explorer.topological_sort`      page 4
- :mod:`explorer.backprop_orders`       page 5
- :mod:`explorer.gradient_check`        page 6
- :mod:`explorer.forward_vs_reverse`    page 7
- :mod:`explorer.tensors_and_storage`   page 8
- :mod:`explorer.static_vs_dynamic`     page 9
- :mod:`explorer.network_explorer`      page 10
- :mod:`explorer.sentiment_training`    page 11
- :mod:`explorer.exercises`             page 12
- :mod:`explorer.student_code`          page 13 (a student's HW2 code, run in a sandboxed child process)
"""

from explorer.kit import ast_guard as _ast_guard

_ast_guard.install()
