"""Fixed figures: tables that do not depend on anything a user types, computed once per server process in the
background, never under a request's deadline.

A page's fixed figure (the notes' checks on the Gradient-check page, the pass costs on Forward vs reverse, ...)
used to be a cached call made by the first request that opened the page, under that request's compute
deadline. On a loaded server the deadline passed, the page showed an error, and the error was kept. Here every
fixed figure is a named entry of :data:`FIGURES`; :func:`start` (called by every page, idempotent) runs them all
one after another on one background thread of the process, and a page asks :func:`get`, which answers at once:
the value, or a :class:`Pending` saying "computing" or what failed. A failure is recorded and the figure computed
again after a pause (:data:`RETRY_S`, doubling), never kept for good.

:class:`FixedFigures` needs no Streamlit (the tests make their own); the process's one instance is
:func:`figures`.
"""
from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from . import priority
from .priority import PriorityGate

# name -> "module:function" (imported by the background thread, so that importing this module costs nothing)
FIGURES: dict[str, str] = {
    "gradient_check.notes_checks": "explorer.gradient_check:notes_check_rows",
    "cross_entropy.batch": "explorer.cross_entropy:batch_example",
    "cross_entropy.program_checks": "explorer.cross_entropy:step_program_checks",
    "forward_vs_reverse.pass_costs": "explorer.forward_vs_reverse:fixed_pass_costs",
    "forward_vs_reverse.logreg_costs": "explorer.forward_vs_reverse:fixed_logreg_costs",
    "forward_vs_reverse.micro_batches": "explorer.forward_vs_reverse:micro_batch_rows",
    "autograd_usage.check": "explorer.autograd_usage:usage_check",
    "granularity.sigmoid": "explorer.granularity:fixed_granularity",
    "learning_problem.two_forms": "explorer.learning_problem:two_forms",
}
RETRY_S = 5.0          # a failed figure is computed again after this long, then twice as long, ... up to RETRY_MAX_S
RETRY_MAX_S = 120.0


@dataclass(frozen=True)
class Pending:
    """A fixed figure that is not ready: still ``computing``, or its last attempt ``failed`` (with ``error``,
    one line for the user); it is computed again either way."""
    name: str
    failed: bool = False
    error: str = ""

    def message(self, what: str) -> str:
        """One line for the page: ``what`` is the figure as the page names it."""
        if self.failed:
            return f"{what}: the last attempt failed ({self.error}); computing again ..."
        return f"{what}: computing ... (it is computed once when the server starts; this part fills in when ready)"


class FixedFigures:
    """Named computations without arguments, run one after another on a background thread, each value kept once
    it succeeded; a failure is kept only as a message, and the computation retried after a pause.

    Args:
        table: name -> a function, or a ``"module:function"`` string imported when it runs.
        retry_s, retry_max_s: the first pause after a failure, and the longest (the pause doubles).
        gate: the :class:`~explorer.kit.priority.PriorityGate` the computations run under, as background work
            (default: the process's): each waits while a step or a page open runs, and pauses at the engine's
            checkpoints when one arrives, so a fixed figure never slows the pages users wait on.
    """

    def __init__(self, table: Mapping[str, str | Callable[[], Any]], retry_s: float = RETRY_S,
                 retry_max_s: float = RETRY_MAX_S, gate: PriorityGate | None = None):
        self.table = dict(table)
        self.gate = gate
        self.retry_s, self.retry_max_s = retry_s, retry_max_s
        self._values: dict[str, Any] = {}
        self._errors: dict[str, tuple[str, float, int]] = {}   # name -> (message, when to retry, failures so far)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background thread (once; later calls do nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="fixed-figures", daemon=True)
            self._thread.start()

    def get(self, name: str) -> Any:
        """The figure's value, or a :class:`Pending` when it is not ready (never blocks). Starts the thread.

        Raises:
            KeyError: for a name not in the table.
        """
        if name not in self.table:
            raise KeyError(f"no fixed figure named {name!r}")
        self.start()
        with self._lock:
            if name in self._values:
                return self._values[name]
            err = self._errors.get(name)
        return Pending(name) if err is None else Pending(name, True, err[0])

    def wait(self, name: str, timeout: float) -> Any:
        """:meth:`get`, waiting up to ``timeout`` seconds for the value (for scripts and tests, not pages)."""
        end = time.monotonic() + timeout
        self.start()
        with self._lock:
            while name not in self._values and time.monotonic() < end:
                self._wake.wait(min(0.5, max(0.0, end - time.monotonic())))
        return self.get(name)

    def ready(self) -> bool:
        """Whether every figure has its value."""
        with self._lock:
            return len(self._values) == len(self.table)

    def _compute(self, name: str) -> None:
        from explorer.explain.parser import yield_to
        fn = self.table[name]
        gate = self.gate or priority.gate()
        try:
            with gate.enter(priority.BACKGROUND), yield_to(gate.checkpoint):
                if isinstance(fn, str):
                    module, _, attr = fn.partition(":")
                    fn = getattr(importlib.import_module(module), attr)
                value = fn()
        except Exception as e:  # noqa: BLE001 - any failure is reported on the page and retried, never kept
            with self._lock:
                failures = self._errors.get(name, ("", 0.0, 0))[2] + 1
                pause = min(self.retry_max_s, self.retry_s * 2 ** (failures - 1))
                line = (str(e).splitlines() or [""])[0][:200]   # one line, no traceback
                self._errors[name] = (f"{type(e).__name__}: {line}" if line else type(e).__name__,
                                      time.monotonic() + pause, failures)
                self._wake.notify_all()
            return
        with self._lock:
            self._values[name] = value
            self._errors.pop(name, None)
            self._wake.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                todo = [n for n in self.table if n not in self._values]
                if not todo:
                    return
                now = time.monotonic()
                due = [n for n in todo if self._errors.get(n, ("", 0.0, 0))[1] <= now]
                if not due:   # every figure left failed lately: sleep until the first retry is due
                    self._wake.wait(min(self._errors[n][1] for n in todo) - now)
                    continue
            for name in due:
                self._compute(name)


_PROCESS: list[FixedFigures] = []   # the server process's one instance (a list: made on first use)
_PROCESS_LOCK = threading.Lock()


def figures() -> FixedFigures:
    """The server process's fixed figures (the thread starts on the first :meth:`FixedFigures.get` or
    :func:`start`)."""
    with _PROCESS_LOCK:
        if not _PROCESS:
            _PROCESS.append(FixedFigures(FIGURES))
        return _PROCESS[0]


def start() -> None:
    """Start computing the process's fixed figures in the background (every page calls it; once per process)."""
    figures().start()


def get(name: str) -> Any:
    """The process's fixed figure ``name``, or a :class:`Pending` (see :meth:`FixedFigures.get`)."""
    return figures().get(name)


__all__ = ["FIGURES", "FixedFigures", "Pending", "figures", "get", "start"]
