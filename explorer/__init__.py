"""The explorer's page logic: one module (or subpackage) per page of the app, named after it, plus the
page kit (:mod:`explorer.kit`). Tested without a browser; only :mod:`explorer.kit.widgets` imports
Streamlit.

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
