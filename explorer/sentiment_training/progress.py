"""A training run's speed and time left, steady on a busy machine.

The run reports, after every batch, how many examples it has seen and how many seconds it has trained
(pauses and the looks inside excluded, validation included). Speed is measured over a long window (the
last half of the run, and at least ``min_window_s`` seconds of it): a few slow seconds (another process
took the core, a validation pass) move it a little, not from minutes to hours. No time left is given
until the run has settled (``settle_s`` seconds of training or ``settle_share`` of its examples: its first
batches trace the step for every batch shape). The time left shown then follows the raw estimate with a
lag of about ``lag_s`` seconds, counting down in between, so that it neither jumps nor stands still.
"""
from __future__ import annotations

import bisect


class ProgressClock:
    """Feed it ``(elapsed, examples_seen)`` after each batch; read :attr:`examples_per_s` and :attr:`seconds_left`.

    Args:
        total_examples: examples the whole run will see (epochs x training sentences).
        min_window_s: the shortest window of training time the speed is measured over.
        lag_s: how many seconds of training the shown time left takes to catch up with a new estimate.
        max_marks: marks kept (thinned to every other one, twice as far apart, when full): bounded memory.
        mark_every_s: training seconds between two marks at first.
    """

    def __init__(self, total_examples: int, min_window_s: float = 3.0, lag_s: float = 5.0, max_marks: int = 1024,
                 mark_every_s: float = 0.1, settle_s: float = 2.0, settle_share: float = 0.01):
        self.total = total_examples
        self.min_window_s, self.lag_s = min_window_s, lag_s
        self.settle_s, self.settle_share = settle_s, settle_share
        self.max_marks, self.mark_every_s = max_marks, mark_every_s
        self._t: list[float] = []      # elapsed seconds of the marks (increasing)
        self._n: list[int] = []        # examples seen at each mark
        self._last: tuple[float, int] | None = None
        self._shown: float | None = None
        self._settled_at: tuple[float, int] | None = None
        self._shown_at = 0.0

    def add(self, elapsed: float, examples_seen: int) -> None:
        """One batch done: ``elapsed`` seconds of training so far, ``examples_seen`` examples so far."""
        self._last = (elapsed, examples_seen)
        if self._t and elapsed - self._t[-1] < self.mark_every_s:
            return  # between marks (a few thousand batches a second reach the server): nothing to update
        self._t.append(elapsed)
        self._n.append(examples_seen)
        if len(self._t) > self.max_marks:  # every other mark, and marks twice as far apart from now on
            self._t, self._n = self._t[::2], self._n[::2]
            self.mark_every_s *= 2
        # no time left before the run has settled and run a while since: its first batches trace the step for
        # each batch shape and share the machine with the page starting up (an estimate from them was minutes
        # too long); the speed is measured after them
        if self._settled_at is None:
            if elapsed < self.settle_s and examples_seen < self.settle_share * self.total:
                return
            self._settled_at = (elapsed, examples_seen)
        if elapsed - self._settled_at[0] < self.settle_s / 2:
            return
        raw = self._raw_left()
        if raw is None:
            return
        if self._shown is None:
            self._shown = raw
        else:
            counted_down = max(0.0, self._shown - (elapsed - self._shown_at))
            # towards the new estimate by a share of the time that passed, never more than half the way at once
            # (a stall of seconds counts down by its length, but does not hand the display to one estimate)
            weight = min(0.5, max(0.0, elapsed - self._shown_at) / self.lag_s)
            self._shown = counted_down + weight * (raw - counted_down)
        self._shown_at = elapsed

    @property
    def examples_per_s(self) -> float | None:
        """Examples per second of training over the window (None until there is a window)."""
        if self._last is None or not self._t:
            return None
        now, seen = self._last
        start = now - max(self.min_window_s, 0.5 * now)
        settled = self._settled_at
        if settled is not None and now - settled[0] >= self.settle_s / 2 and start < settled[0]:
            t0, n0 = settled   # the window starts where the run settled
        else:
            i = min(bisect.bisect_left(self._t, start), len(self._t) - 1)
            t0, n0 = self._t[i], self._n[i]
        if now - t0 <= 0:
            if now <= 0:
                return None
            t0, n0 = 0.0, 0
        return (seen - n0) / (now - t0)

    def _raw_left(self) -> float | None:
        rate = self.examples_per_s
        if not rate or self._last is None:
            return None
        return max(0.0, (self.total - self._last[1]) / rate)

    @property
    def seconds_left(self) -> float | None:
        """Seconds of training left, smoothed (None until the first speed)."""
        return self._shown


__all__ = ["ProgressClock"]
