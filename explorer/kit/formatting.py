"""User text made safe to show, and how far autodiff is from a central difference (plain functions, no UI).

Numbers as text are :mod:`explorer.explain.numbers`'s, re-exported here for the pages (which do not import the
explain layer)."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from explorer.explain.numbers import (DIGITS, count, duration, fixed, fmt_check, fmt_value, megabytes,  # noqa: F401
                                      milliseconds, nested, num, percent, plain, sci)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


# GitHub-flavoured Markdown (Streamlit's remark-gfm) also links bare URLs and e-mail addresses, and it finds them
# in the text *after* backslash escapes are read (https\://evil\.example is still a link). A word joiner (U+2060,
# zero width) after the scheme, after "www" and after "@" leaves nothing it recognises; the text reads the same.
_AUTOLINK = re.compile(r"(?:https?(?=:)|www(?=\.)|@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def md_escape(text: object) -> str:
    """User text for Markdown (``st.markdown``, ``st.error``...): every character that Markdown, Streamlit's
    directives (``:red[...]``, ``:material/...:``), LaTeX (``$``) or HTML would read is backslash-escaped, so
    ``[a](http://x)`` shows as typed instead of a link, and a bare URL or e-mail address is kept from being
    linked (a zero-width word joiner after ``https``, ``www`` and ``@``)."""
    return _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(lambda m: m.group(0) + WORD_JOINER, str(text)))


def code_span(text: object) -> str:
    """User text as inline code in Markdown; text holding a backtick (which would end the span) is escaped
    instead."""
    text = str(text)
    return md_escape(text) if "`" in text or "\n" in text else f"`{text}`"


def check_difference(auto: Any, fd: Any) -> float | None:
    """|autodiff - central difference|: per element, or ``|<grad, v> - estimate|`` along each direction v."""
    if hasattr(fd, "max_difference"):
        return fd.max_difference(auto)
    return max_abs_difference(auto, fd)


def max_abs_difference(a: Any, b: Any) -> float | None:
    """max |a - b| over all elements (None if either is missing or shapes differ)."""
    if a is None or b is None:
        return None
    aa, bb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if aa.shape != bb.shape:
        return None
    if aa.size == 0:
        return 0.0
    return float(np.max(np.abs(aa - bb)))
