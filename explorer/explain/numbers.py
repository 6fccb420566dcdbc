"""The app's one number formatter: every number a class reads (captions, node and edge labels, tables,
explain texts) is written here, by one of a few named kinds. No UI; the page kit re-exports these for pages.

- :func:`num`       a value in :data:`DIGITS` significant digits (368.04, 1e-08), unless a caller has a reason
  for another precision (a heatmap cell a third of a column wide)
- :func:`plain`     a number as a person typed it, a setting or a small count of passes (0.1, 1e-05, 3)
- :func:`count`     a whole number with thousands separators (12,345)
- :func:`sci`       an error or a difference in scientific notation (3.2e-09): its size is what matters
- :func:`percent`   a fraction as a percentage (0.873 -> 87%, or 87.3%)
- :func:`fixed`     a measured quantity with a fixed number of decimals (a mean, a speed-up)
- :func:`megabytes` a byte count in MB (10^6 bytes)
- :func:`milliseconds` a time in ms
- :func:`duration`  a longer time as a person reads it (5 s, 2 min 05 s, 1 h 03 min)
- :func:`human_bytes` a byte count in the decimal unit that suits it, as the notes write them (67 MB, 0.134 GB)
- :func:`precise`   a number in full (twelve significant digits), for a hover text that keeps what a label rounds
- :func:`fmt`, :func:`nested`, :func:`fmt_value`, :func:`fmt_check`: values that are numbers or nested lists
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

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


def plain(x: float) -> str:
    """A number in its shortest form up to six significant digits, as a person would type it: a setting
    (learning rate 0.1, step 1e-05), a count of passes (3), a value of a small example tensor (9)."""
    return f"{x:g}"


def count(n: float) -> str:
    """A whole number with thousands separators: 12,345 (a float is rounded to the nearest whole number)."""
    return f"{round(n):,}"


def sci(x: float, digits: int = 2) -> str:
    """An error or a difference in scientific notation with ``digits`` significant digits: 3.2e-09, 0.0e+00
    (``digits=1``: 1e-05, for a step size)."""
    return f"{x:.{max(digits - 1, 0)}e}"


def percent(fraction: float, decimals: int = 0) -> str:
    """A fraction as a percentage: 0.873 -> 87% (``decimals=1``: 87.3%)."""
    return f"{fraction:.{decimals}%}"


def fixed(x: float, decimals: int = 1) -> str:
    """A measured quantity with ``decimals`` decimals: a mean (2.5), a speed-up (12.3), a ratio (1.50)."""
    return f"{x:.{decimals}f}"


def megabytes(nbytes: float, decimals: int = 1) -> str:
    """A byte count in megabytes (10^6 bytes), the number only: 3_400_000 -> 3.4."""
    return fixed(nbytes / 1e6, decimals)


def milliseconds(seconds: float, decimals: int = 1) -> str:
    """A time given in seconds, in milliseconds, the number only: 0.01234 -> 12.3."""
    return fixed(seconds * 1e3, decimals)


def duration(seconds: float | None) -> str:
    """A time as a person reads it, to the second: 5 s, 2 min 05 s, 1 h 03 min ("–" when unknown)."""
    if seconds is None or not np.isfinite(seconds):
        return "–"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def human_bytes(n: float) -> str:
    """A byte count in decimal units as the notes use them: 512 B, 67 MB, 0.134 GB, 5.6e5 GB."""
    if n < 1e3:
        return f"{n:.0f} B"
    if n < 1e6:
        return f"{n / 1e3:.3g} kB"
    if n < 1e8:
        return f"{n / 1e6:.3g} MB"
    gb = n / 1e9
    return f"{gb:.3g} GB" if gb < 1e4 else f"{gb:.2g} GB".replace("e+0", "e").replace("e+", "e")


def precise(x: float) -> str:
    """A number in full, twelve significant digits: 368.037898396 (hover texts, where a label shows five)."""
    return f"{float(x):.12g}"


def fmt(value: Any, digits: int = DIGITS) -> str:
    """Short text for a plain value (as the explain layer stores it in nodes and events): a number by
    :func:`num`, a list by its first four numbers ("…" for no value; text as is)."""
    if value is None:
        return "…"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return num(value, digits)
    flat = np.asarray(value, dtype=object).ravel().tolist()
    body = ", ".join(fmt(v, digits) for v in flat[:4])
    return f"[{body}{', …' if len(flat) > 4 else ''}]"


def nested(value: Any, digits: int = DIGITS) -> str:
    """A number or a nested list of numbers in full, each by :func:`num`: ``[[1, 2.5], [3, 4]]``."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(nested(x, digits) for x in value) + "]"
    return num(value, digits)


def fmt_value(v: Any, digits: int = DIGITS, max_items: int = 6) -> str:
    """A number, or an array as its first ``max_items`` numbers and its shape: ``[1, 2, …] (3×4)``."""
    if v is None:
        return ""
    if isinstance(v, (int, float, np.floating, np.integer)):
        return num(float(v), digits)
    arr = np.asarray(v, dtype=float)
    if arr.ndim == 0:
        return num(float(arr), digits)
    flat = [num(x, digits) for x in arr.ravel()[:max_items]]
    more = ", …" if arr.size > max_items else ""
    shape = "×".join(map(str, arr.shape))
    return f"[{', '.join(flat)}{more}] ({shape})"


def fmt_check(fd: Any, digits: int = DIGITS) -> str:
    """A central-difference result as text: per element (a number or list), or, for a larger input,
    the estimates along random directions (:class:`explorer.explain.costs.DirectionalDifferences`)."""
    estimates = getattr(fd, "estimates", None)
    if estimates is None:
        return fmt_value(fd, digits)
    return f"along {len(estimates)} random directions v: " + ", ".join(num(e, digits) for e in estimates)
