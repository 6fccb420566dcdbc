"""The app's one number formatter: every number a class reads (captions, node and edge labels, tables,
explain texts) goes through :func:`num`, in :data:`DIGITS` significant digits unless a caller has a
reason for another precision (a heatmap cell a third of a column wide)."""
from __future__ import annotations

import math
from typing import Any

DIGITS = 5


def num(x: Any, digits: int = DIGITS) -> str:
    """A number in ``digits`` significant digits: 368.04, 244.69, 1.5, -5, 1e-08, inf ("" for None; text as is)."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 10 ** digits:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 1, 1)}e}".replace("e+0", "e+").replace("e-0", "e-")
