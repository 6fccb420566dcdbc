"""Who computes first on a loaded server: a class's steps, then page opens one at a time, then background work.

A server process shares its cores (and Python's one interpreter lock) between every session's runs and its own
background threads. Under load the runs that matter most are the ones a class is watching: a Step,
a lecturer's step relayed to the followers. The expensive part of a page's first open (running the engine,
laying out its graph) comes next, and work nobody waits for (the fixed figures, importing the pages' modules
at start-up) last. :class:`PriorityGate` orders them:

* :data:`STEP` work never waits: a stepper's fragment, a page drawn for a class (the lecturer or a follower);
* :data:`OPEN` work (a page's own computation in a full run) is queued: at most ``open_slots`` run at once, the
  others wait in arrival order, and a waiting run is told its place (the page shows "queued ...") instead of
  racing the others for the same cores;
* :data:`BACKGROUND` work waits while any STEP or OPEN work runs or is queued, and pauses at its
  checkpoints (:meth:`PriorityGate.checkpoint`, called by the engine's :func:`explorer.explain.parser.check_deadline`
  through :func:`explorer.explain.parser.yield_to`) when such work arrives while it computes.

Nested entries in one thread (a cached computation calling another) do not queue again: the thread keeps the
priority it entered with, so a thread never waits for itself. STEP never waits, OPEN waits only for OPEN work
that itself waits for nothing, and BACKGROUND waits only for the other two: there is no cycle to deadlock in.

No Streamlit here; the process's one gate is :func:`gate`.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Callable, Iterator

STEP, OPEN, BACKGROUND = 0, 1, 2
NAMES = {STEP: "step", OPEN: "page open", BACKGROUND: "background"}
OPEN_SLOTS = 1   # page opens computing at once: under the interpreter lock two at once are each twice as slow
# A page open waits at most this long for its turn, then runs anyway: a safety valve should a computation ahead
# of it never end (each is under its request deadline, whose wall-clock backstop is well below this)
OPEN_MAX_WAIT_S = 60.0


class PriorityGate:
    """Admits work by priority (see the module's docstring).

    Args:
        open_slots: how many :data:`OPEN` entries may run at once (the rest queue in arrival order).
        open_max_wait_s: the longest an OPEN entry waits for its turn before it runs anyway (None: no limit).
    """

    def __init__(self, open_slots: int = OPEN_SLOTS, open_max_wait_s: float | None = OPEN_MAX_WAIT_S):
        if open_slots < 1:
            raise ValueError(f"open_slots must be at least 1, got {open_slots}")
        self.open_slots, self.open_max_wait_s = open_slots, open_max_wait_s
        self._cond = threading.Condition()
        self._tickets = itertools.count()
        self._steps = 0                      # STEP entries running
        self._opens: set[int] = set()        # OPEN tickets running
        self._open_queue: list[int] = []     # OPEN tickets waiting, in arrival order
        self._background = 0                 # BACKGROUND entries running (not paused)
        self._background_waiting = 0         # BACKGROUND entries waiting to start, or paused at a checkpoint
        self._local = threading.local()      # per thread: the priority entered first, and the depth

    # -- what the pages and threads call

    @contextlib.contextmanager
    def enter(self, priority: int, on_wait: Callable[[int], None] | None = None) -> Iterator[int]:
        """Run the block as ``priority`` work, waiting first where that priority must.

        Args:
            priority: :data:`STEP`, :data:`OPEN` or :data:`BACKGROUND`.
            on_wait: called once, before waiting, with how many entries are ahead (OPEN: running or queued
                before this one; BACKGROUND: the STEP and OPEN entries it waits for); not called when the
                block can start at once. It should return quickly (a page draws its "queued ..." line).
        Yields:
            the priority the block runs at (a nested entry keeps its thread's first priority).
        Raises:
            ValueError: for an unknown priority.
        """
        if priority not in NAMES:
            raise ValueError(f"unknown priority {priority!r}; expected one of {sorted(NAMES)}")
        depth = getattr(self._local, "depth", 0)
        if depth:   # nested in this thread: no second queue (it would wait for itself)
            self._local.depth = depth + 1
            try:
                yield self._local.priority
            finally:
                self._local.depth = depth
            return
        ticket = self._admit(priority, on_wait)
        self._local.priority, self._local.depth = priority, 1
        try:
            yield priority
        finally:
            self._local.depth = 0
            self._leave(priority, ticket)

    def checkpoint(self) -> None:
        """In BACKGROUND work: pause while STEP or OPEN work runs or waits, then go on (elsewhere: nothing)."""
        if getattr(self._local, "depth", 0) == 0 or self._local.priority != BACKGROUND:
            return
        with self._cond:
            if not self._foreground():
                return
            self._background -= 1
            self._background_waiting += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._foreground())
            self._background_waiting -= 1
            self._background += 1

    def current(self) -> int | None:
        """The priority this thread runs at (None outside any entry)."""
        return self._local.priority if getattr(self._local, "depth", 0) else None

    def snapshot(self) -> dict[str, int]:
        """How many entries run and wait, by kind (for tests and the server's notes)."""
        with self._cond:
            return self._snapshot_locked()

    def wait_until(self, predicate: Callable[[dict[str, int]], bool], timeout: float | None = None) -> bool:
        """Block until ``predicate(snapshot)`` holds (tests wait for a state, never for the clock); its result."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self._snapshot_locked()), timeout)

    # -- internals

    def _snapshot_locked(self) -> dict[str, int]:
        return {"steps": self._steps, "opens": len(self._opens), "queued": len(self._open_queue),
                "background": self._background, "background_waiting": self._background_waiting}

    def _foreground(self) -> bool:
        return bool(self._steps or self._opens or self._open_queue)

    def _admit(self, priority: int, on_wait: Callable[[int], None] | None) -> int:
        ticket = next(self._tickets)
        with self._cond:
            if priority == STEP:
                self._steps += 1
                self._cond.notify_all()   # background work pauses at its next checkpoint
                return ticket
            if priority == OPEN:
                self._open_queue.append(ticket)
                self._cond.notify_all()

                def turn() -> bool:   # first in the queue, and a slot free
                    return self._open_queue[0] == ticket and len(self._opens) < self.open_slots

                if not turn() and on_wait is not None:
                    ahead = len(self._opens) + self._open_queue.index(ticket)
                    self._call_outside(on_wait, ahead)
                self._cond.wait_for(turn, self.open_max_wait_s)
                self._open_queue.remove(ticket)   # its turn, or waited too long (then it runs beside the others)
                self._opens.add(ticket)
                self._cond.notify_all()
                return ticket
            self._background_waiting += 1
            self._cond.notify_all()
            if self._foreground() and on_wait is not None:
                self._call_outside(on_wait, self._steps + len(self._opens) + len(self._open_queue))
            self._cond.wait_for(lambda: not self._foreground())
            self._background_waiting -= 1
            self._background += 1
            return ticket

    def _call_outside(self, fn: Callable[[int], None], ahead: int) -> None:
        # the callback may draw on a page (and so take other locks): never under the gate's own lock
        self._cond.release()
        try:
            fn(ahead)
        finally:
            self._cond.acquire()

    def _leave(self, priority: int, ticket: int) -> None:
        with self._cond:
            if priority == STEP:
                self._steps -= 1
            elif priority == OPEN:
                self._opens.discard(ticket)
            else:
                self._background -= 1
            self._cond.notify_all()


def queued_text(ahead: int, what: str = "this page") -> str:
    """The line a page shows while its computation waits its turn."""
    others = "1 other page open is" if ahead == 1 else f"{ahead} other page opens are"
    return (f"Queued: {others} computing before {what} (a class's steps go first); it starts by itself, "
            "nothing to click.")


_PROCESS: list[PriorityGate] = []
_PROCESS_LOCK = threading.Lock()


def gate() -> PriorityGate:
    """The server process's one gate."""
    with _PROCESS_LOCK:
        if not _PROCESS:
            _PROCESS.append(PriorityGate())
        return _PROCESS[0]


__all__ = ["BACKGROUND", "OPEN", "OPEN_SLOTS", "STEP", "PriorityGate", "gate", "queued_text"]


# --- how often a session's progress poll runs --------------------------------------------------------------
# A poll (a training's curves, redrawn every second) is background work, but five students watching their
# trainings poll five times a second, and each poll's drawing and its messages share the server's event loop
# with a class's Step. On a loaded machine (more runnable tasks than cores, averaged over a minute) a poll
# nobody in a class is watching runs less often; the class's own (the lecturer's, on the projector) never does.
LOADED_PER_CORE = 1.5     # slow down above this load average per core ...
UNLOADED_PER_CORE = 1.0   # ... and come back below this one (between the two: keep the last period)
SLOW_FACTOR = 3


def poll_period(base_s: float, slowed: bool, load_per_core: float | None = None) -> tuple[float, bool]:
    """The period for a progress poll of ``base_s`` seconds and whether it is slowed: ``slowed`` is the last
    answer (the two thresholds keep a poll from flapping); ``load_per_core`` defaults to the machine's 1-minute
    load average over its cores."""
    if load_per_core is None:
        import os
        load_per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    if load_per_core > LOADED_PER_CORE:
        slowed = True
    elif load_per_core < UNLOADED_PER_CORE:
        slowed = False
    return (base_s * SLOW_FACTOR if slowed else base_s), slowed
