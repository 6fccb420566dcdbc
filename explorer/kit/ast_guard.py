"""``ast.parse`` one thread at a time, for every caller in the process (CPython before 3.13).

CPython 3.11 and 3.12 keep the AST builder's recursion depth in interpreter-wide state, not per thread:
when two threads build ASTs at once and the GIL changes hands in between (a garbage collection running a
finaliser is enough), one of them fails with ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905). The server runs every session's script in its own thread, and ASTs are built by
the app's parser, by :func:`inspect.getsource` (it parses a class's module to find it), by Streamlit
(its "magic" parses each page script) and by pytest; a lock taken by the app's own calls alone leaves the
others racing. :func:`install` wraps :func:`ast.parse` in one lock, once; :mod:`explorer` calls it on import.
"""
from __future__ import annotations

import ast
import functools
import sys
import threading

LOCK = threading.RLock()
NEEDED = sys.version_info < (3, 13)


def install() -> bool:
    """Wrap ``ast.parse`` in :data:`LOCK` (idempotent); True when ``ast.parse`` is guarded afterwards."""
    if not NEEDED:
        return False
    if getattr(ast.parse, "__explorer_guarded__", False):
        return True
    unguarded = ast.parse

    @functools.wraps(unguarded)
    def parse(*args, **kwargs):
        with LOCK:
            return unguarded(*args, **kwargs)

    parse.__explorer_guarded__ = True
    ast.parse = parse
    return True
