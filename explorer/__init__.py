"""The explorer's page logic: one module (or subpackage) per page of the app, named after it, plus the
page kit (:mod:`explorer.kit`). Tested without a browser; only :mod:`explorer.kit.widgets` imports
Streamlit.

- :mod:`explorer.expression_explorer`   page 1
- :mod:`explorer.backprop_orders`       page 2
- :mod:`explorer.gradient_check`        page 3
- :mod:`explorer.forward_vs_reverse`    page 4
- :mod:`explorer.network_explorer`      page 5
- :mod:`explorer.sentiment_training`    page 6
- :mod:`explorer.static_vs_dynamic`     page 7
- :mod:`explorer.student_code`          page 12 (a student's HW2 code, run in a sandboxed child process)
"""
