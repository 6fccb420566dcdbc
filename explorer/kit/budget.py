"""Every request bounded: a typed program's cost is estimated before it runs, its work runs under a
deadline, and the pages' caches are bounded by bytes.

* :func:`check_program` estimates one run of a program from its inputs' shapes (the engine's parser
  evaluates it on abstract tensors; nothing is computed) and refuses it, with the parser's usual
  :class:`~explorer.explain.ExpressionError`, when the page's runs would exceed the budget.
* :func:`bounded_cache` replaces ``st.cache_resource`` / ``st.cache_data`` in the pages: entries are
  bounded by their estimated bytes (a least-recently-used store per function, shared by the sessions),
  a failed call is never kept (a deadline met on a busy server, or any error, is tried again by the next run:
  keeping it left a page broken for everyone after the load went away), the call runs
  under :data:`REQUEST_SECONDS` of CPU time, and a ``MemoryError`` or ``RecursionError`` becomes a typed,
  user-facing error instead of a traceback.
* :func:`check_server_memory` is the server-wide guard: above :data:`MEMORY_FRACTION` of the replica's
  memory limit (the cgroup's, when there is one) a new expensive request or training start is refused with
  :class:`ServerBusy` ("the server is busy, try again") until the memory drops. Every :func:`bounded_cache`
  miss asks it first, then waits for one of :data:`MAX_CONCURRENT` computing slots of the process.

The store (:class:`ByteLRU`) and the size estimate (:func:`estimate_bytes`) need no Streamlit.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import pickle
import sys
import threading
import types
from collections import OrderedDict
from typing import Any, Callable, Mapping

import numpy as np

from explorer.explain import ExpressionError
from explorer.explain.parser import MAX_KEPT_ELEMENTS, MAX_WORK, CostEstimate, Program, deadline
from explorer.explain.numbers import count, percent, plain

# The most CPU time one cached computation may spend (its thread's CPU clock: see explorer.explain.deadline);
# its engine ops, finite-difference loops, frame building and layout check it. Estimates refuse what would
# come near it before anything runs; the deadline stops what the estimates missed.
REQUEST_SECONDS = 2.0
# Backprop orders animates up to four graphs side by side, a frame per step each: its frame sets grow with the
# square of the graph. 150 ops keep the first run under 1 s (each figure frame is built when a Step reads it:
# plotly_figure.FramesOnRead) and the result a few MB, which the page's cache keeps; the lecture's examples
# have at most 20. One graph (pages 1 and 4) stays small up to the parser's 500 ops (6 MB, 0.2 s).
MAX_SIDE_BY_SIDE_OPS = 150


class RequestRefused(RuntimeError):
    """A request that would exceed its memory or work budget; the message is for the user."""


class ServerBusy(RequestRefused):
    """The server as a whole is near its memory limit: new expensive work waits (the message says so)."""


# ---------------------------------------------------------------------------
# the server-wide memory guard

MEMORY_FRACTION = 0.75          # of the replica's memory limit: above it, new expensive work is refused
# At most this many cached computations run at once in a server process (the others wait for a slot, which
# costs them no CPU): eight worst-in-budget requests at once took +437 MB, four take about half.
MAX_CONCURRENT = 4
_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT)
_HOLDING = threading.local()
MEMORY_LIMIT_ENV = "AUTODIFF_MEMORY_LIMIT_MB"   # states the limit explicitly (else the cgroup's, else the RAM)
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_limit_bytes() -> int:
    """The replica's memory limit: ``$AUTODIFF_MEMORY_LIMIT_MB`` when set, else the cgroup's limit (v2, then v1)
    when there is one, else the machine's physical memory."""
    env = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if env:
        return int(float(env) * 2**20)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < ram:   # v1 says "no limit" with a huge number, v2 with "max"
            return int(text)
    return ram


def resident_bytes() -> int:
    """This server process's resident memory (``/proc/self/statm``; the peak from ``getrusage`` elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):   # pragma: no cover - not Linux
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def check_server_memory(what: str = "this request") -> None:
    """Refuse new expensive work while the server holds more than :data:`MEMORY_FRACTION` of its limit.

    Raises:
        ServerBusy: with a message for the user ("the server is busy, try again").
    """
    used, limit = resident_bytes(), memory_limit_bytes()
    if used > MEMORY_FRACTION * limit:
        raise ServerBusy(f"the server is busy, try again in a minute: it holds {count(used / 2**20)} MB, more than "
                         f"{percent(MEMORY_FRACTION)} of its {count(limit / 2**20)} MB, so {what} waits until "
                         "memory is freed")


def finite_difference_checks(shapes: Mapping[str, tuple]) -> int:
    """How many central differences :func:`explorer.explain.costs.central_differences` takes for these inputs
    (one per element of a small input, a few random directions for a larger one)."""
    from explorer.explain.costs import N_DIRECTIONS, PER_ELEMENT_MAX
    return sum(int(math.prod(s)) if math.prod(s) <= PER_ELEMENT_MAX else N_DIRECTIONS for s in shapes.values())


def check_program(program: Program, inputs: Mapping[str, Any], runs: int, what: str,
                  max_ops: int | None = None) -> CostEstimate:
    """Estimate one run of ``program`` and refuse it when ``runs`` of them exceed the budget.

    Args:
        runs: how many forward-run equivalents the page makes (backward passes and finite differences
            included).
        what: the page's work, for the message (e.g. "the gradient check").
        max_ops: the page's own limit on operations (below the parser's), e.g. ``MAX_SIDE_BY_SIDE_OPS``.
    Returns:
        the estimate.
    Raises:
        ExpressionError: kind ``limit``, naming the budget and what exceeded it.
    """
    est = program.estimate({n: np.shape(inputs[n]) for n in program.input_names if n in inputs})
    if max_ops is not None and est.ops > max_ops:
        raise ExpressionError(f"{what} animates the graph step by step, side by side, for at most {max_ops} "
                              f"operations; this program has {est.ops}. Shorten it (the lecture's examples have "
                              "under 20)", kind="limit")
    est.check(runs, what)
    return est


def budget_text() -> str:
    """One line for a page's help: what a request may cost."""
    return (f"A request may hold {count(MAX_KEPT_ELEMENTS)} numbers per run, {count(MAX_WORK)} work units in all "
            f"and {plain(REQUEST_SECONDS)} s of computing.")


# ---------------------------------------------------------------------------
# sizes


_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
         types.CodeType, type(threading.Lock()), threading.Thread)


def estimate_bytes(obj: Any, limit: int | None = None) -> int:
    """Bytes held by ``obj`` and everything it references (each object once; NumPy buffers by their base).

    Walks containers, instances' ``__dict__`` / ``__slots__``; classes, modules and functions are
    shared, not counted. Stops early once past ``limit`` (the result is then only known to exceed it).
    """
    seen: set[int] = set()
    buffers: set[int] = set()
    stack = [obj]
    total = 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SKIP):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            root = o
            while isinstance(root.base, np.ndarray):
                root = root.base
            total += 112  # the array object itself; its buffer once, through the array that owns it
            if id(root) not in buffers:
                buffers.add(id(root))
                total += root.nbytes
            continue
        try:
            total += sys.getsizeof(o)
        except TypeError:
            total += 64
        if limit is not None and total > limit:
            return total
        if isinstance(o, (str, bytes, bytearray, int, float, complex, bool, type(None))):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        else:
            d = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                stack.append(d)
            for klass in type(o).__mro__:
                for name in getattr(klass, "__slots__", ()):
                    v = getattr(o, name, None)
                    if v is not None:
                        stack.append(v)
    return total


class ByteLRU:
    """Least-recently-used entries whose estimated bytes stay within ``max_bytes``; thread-safe.

    An entry larger than ``max_entry_bytes`` (a quarter of the store by default) is never kept.
    """

    def __init__(self, max_bytes: int, max_entry_bytes: int | None = None):
        self.max_bytes = int(max_bytes)
        self.max_entry_bytes = int(max_entry_bytes if max_entry_bytes is not None else max_bytes // 4)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._computing: dict[Any, list] = {}   # key -> [lock, callers]: one computation of a key at a time

    @contextlib.contextmanager
    def computing(self, key):
        """Held while ``key`` is being computed: a second caller of the same key waits here for the first
        (then finds its result with :meth:`get`) instead of computing it again; other keys do not wait."""
        with self._lock:
            entry = self._computing.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    self._computing.pop(key, None)

    def get(self, key) -> tuple[bool, Any]:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return False, None
            self._entries.move_to_end(key)
            return True, hit[0]

    def put(self, key, value, size: int | None = None) -> bool:
        """Keep ``value`` (evicting the least recently used); False when it is too big to keep."""
        size = estimate_bytes(value, self.max_entry_bytes) if size is None else size
        if size > self.max_entry_bytes:
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._entries:
                _, (_, s) = self._entries.popitem(last=False)
                self._bytes -= s
        return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


def _key(args: tuple, kwargs: dict) -> str:
    try:
        raw = pickle.dumps((args, sorted(kwargs.items())), protocol=4)
    except Exception:  # noqa: BLE001 - an unpicklable argument: its repr
        raw = repr((args, sorted(kwargs.items()))).encode()
    return hashlib.sha256(raw).hexdigest()  # a 2,000-character program costs the store 64 bytes of key


def refuse_message(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "not enough memory for this request: use smaller inputs or a shorter program"
    return "this request is nested too deeply to compute (Python's recursion limit)"


# ---------------------------------------------------------------------------
# the pages' cache


_STORES_RESOURCE: list = []  # the st.cache_resource function, made once (making it hashes its source: ~10 ms)


def _streamlit_stores() -> dict[str, ByteLRU]:
    if not _STORES_RESOURCE:
        import streamlit as st

        @st.cache_resource(show_spinner=False)
        def stores() -> dict[str, ByteLRU]:  # one dict per server process, cleared with Streamlit's caches
            return {}

        _STORES_RESOURCE.append(stores)
    return _STORES_RESOURCE[0]()


def bounded_cache(max_bytes: int, *, spinner: str | None = None, seconds: float | None = REQUEST_SECONDS,
                  refuse: Callable[[str], BaseException] = RequestRefused,
                  stores: Callable[[], dict] | None = None) -> Callable:
    """Decorator for a page's computation: results are shared by sessions in a :class:`ByteLRU` of
    ``max_bytes`` (keyed by the arguments), computed under a deadline of ``seconds`` of CPU time, and a
    ``MemoryError`` or ``RecursionError`` raises ``refuse(message)`` (a typed error the page shows) instead.
    Before computing, :func:`check_server_memory` may refuse with ``refuse("the server is busy...")``. A
    failure (an error, a deadline) is never kept: the next call with the same arguments computes again, so a
    request refused on a busy server succeeds once the server is quiet. (Requests the estimates refuse cost
    nothing to refuse again; the deadline only stops what they missed.)

    Args:
        spinner: text shown while computing (None: nothing).
        refuse: the exception type (or factory) the page already shows, e.g. an ``InputProblem`` maker.
        stores: where the stores live (default: a ``st.cache_resource`` dict of the server process).
    """
    def decorate(fn: Callable) -> Callable:
        name = f"{fn.__code__.co_filename}:{fn.__qualname__}"

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            registry = (stores or _streamlit_stores)()
            store = registry.get(name)
            if store is None or store.max_bytes != max_bytes:
                store = registry[name] = ByteLRU(max_bytes)
            key = _key(args, kwargs)

            hit, value = store.get(key)
            if hit:
                return value
            try:
                check_server_memory()
            except ServerBusy as e:   # not kept: it passes when the memory drops
                if refuse is RequestRefused:
                    _one_line_and_stop(spinner, str(e))
                raise refuse(str(e)) from None
            # sessions asking for the same arguments at once share one computation (50 students opening a page)
            with _spinner(spinner), store.computing(key):
                hit, value = store.get(key)   # computed by the session that asked first, while this one waited
                if hit:
                    return value
                with _admitted(spinner), _slot(), (deadline(seconds) if seconds else contextlib.nullcontext()):
                    try:
                        value = fn(*args, **kwargs)
                    except (MemoryError, RecursionError) as e:
                        raise refuse(refuse_message(e)) from None
                    except ExpressionError as e:
                        if refuse is RequestRefused and is_deadline(e):   # a page with no message of its own
                            _one_line_and_stop(spinner, str(e))
                        raise
                store.put(key, value)   # only a result: an exception leaves the store as it was
                return value

        wrapper.clear = lambda: (stores or _streamlit_stores)().pop(name, None)
        return wrapper

    return decorate


RUN_PRIORITY = "_run_priority"   # session key: the priority start_page gives this session's full runs


def page_priority() -> int | None:
    """The :mod:`~explorer.kit.priority` level of the page run computing in this thread: the level it entered
    (a step's drawing, nested calls), else :data:`~explorer.kit.priority.STEP` for a fragment's run (a Step, a
    poll) or a class's run (``start_page`` says so), else :data:`~explorer.kit.priority.OPEN`; None outside a
    page run (tests and scripts are not queued)."""
    from . import priority
    level = priority.gate().current()
    if level is not None:
        return level
    from .streamlit_private import fragment_run, in_page_run
    if not in_page_run():
        return None
    if fragment_run():
        return priority.STEP
    import streamlit as st
    return st.session_state.get(RUN_PRIORITY, priority.OPEN)


@contextlib.contextmanager
def _admitted(spinner: str | None):
    """A page run's cached computation waits its turn in the process's priority gate (a page open queues behind
    the other page opens; a step never waits), saying "Queued ..." on the page while it waits."""
    from . import priority
    level = page_priority()
    if level is None:
        yield
        return
    shown = []

    def on_wait(ahead: int) -> None:   # in the waiting script thread itself: it may draw
        import streamlit as st
        from .formatting import md_escape
        what = (spinner or "this page's computation").rstrip("…. ")
        line = st.empty()
        line.caption(md_escape(priority.queued_text(ahead, what)))
        shown.append(line)

    with priority.gate().enter(level, on_wait=on_wait if level == priority.OPEN else None):
        for line in shown:
            line.empty()
        yield


@contextlib.contextmanager
def _slot():
    """One of the process's ``MAX_CONCURRENT`` computing slots (a nested cached call reuses its caller's)."""
    depth = getattr(_HOLDING, "depth", 0)
    if depth == 0:
        _SLOTS.acquire()
    _HOLDING.depth = depth + 1
    try:
        yield
    finally:
        _HOLDING.depth = depth
        if depth == 0:
            _SLOTS.release()


def is_deadline(error: BaseException) -> bool:
    """Whether ``error`` is a request's compute deadline (:func:`explorer.explain.parser.check_deadline`), as
    opposed to a refusal by the estimates: the same request may well pass on a quieter server."""
    return isinstance(error, ExpressionError) and getattr(error, "kind", "") == "limit" and \
        str(error).startswith("stopped:")


def _one_line_and_stop(spinner: str | None, message: str) -> None:
    """In a page run, for a cached computation whose page shows no message of its own: one line saying what was
    too expensive (never Streamlit's exception box, which a bare exception would draw), then the run stops there;
    nothing is kept, so the next run tries again. Outside a page run (tests, scripts) it does nothing."""
    from .streamlit_private import in_page_run
    if not in_page_run():
        return
    import streamlit as st
    from .formatting import md_escape
    what = (spinner or "this part of the page").rstrip("…. ")
    st.warning(md_escape(f"{what}: {message}. Nothing was kept: the next run (any click) tries again."), icon="⏳")
    st.stop()


def _spinner(text: str | None):
    if not text:
        return contextlib.nullcontext()
    import streamlit as st
    return st.spinner(text)


__all__ = ["REQUEST_SECONDS", "MEMORY_FRACTION", "MAX_CONCURRENT", "RequestRefused", "ServerBusy", "ByteLRU", "bounded_cache",
           "budget_text", "check_program", "check_server_memory", "estimate_bytes", "finite_difference_checks",
           "memory_limit_bytes", "resident_bytes", "PackedFrames", "packed_figure"]
