"""Run a :class:`SentimentTrainer` in a background thread and collect its events for a UI to poll.

The UI thread never waits for training: it calls :meth:`TrainingRun.snapshot` (a copy taken
under a lock) as often as it likes. The worker stops when asked, when its ``keep_alive``
check says the owner is gone (e.g. the Streamlit session closed), or at the end.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from sentiment.trainer import BatchEnd, EpochEnd, SentimentTrainer, TrainingFinished, TrainingStarted


@dataclass
class RunSnapshot:
    """What the UI needs to draw, copied out of the worker's state."""

    status: str                                  # starting | running | paused | stopping | completed | stopped | error
    started: TrainingStarted | None
    batch_x: list[float]                         # epoch position of each (possibly averaged) batch loss point
    batch_loss: list[float]
    epochs: list[EpochEnd]
    last_batch: BatchEnd | None
    finished: TrainingFinished | None
    total_epochs: int
    n_batches_per_epoch: int
    examples_per_s: float | None                 # recent throughput
    seconds_left: float | None

    @property
    def progress(self) -> float:
        """Fraction of all batches done, in [0, 1]."""
        if self.finished is not None and self.finished.status == "completed":
            return 1.0
        if self.last_batch is None or not self.n_batches_per_epoch:
            return 0.0
        done = (self.last_batch.epoch - 1) * self.n_batches_per_epoch + self.last_batch.batch
        return min(1.0, done / (self.total_epochs * self.n_batches_per_epoch))

    @property
    def done(self) -> bool:
        return self.finished is not None


class SessionWatch:
    """``keep_alive`` for a run: False once ``is_active()`` has been False for ``grace_s`` seconds.

    A grace period lets a browser that reconnects after a network blip keep its training.
    """

    def __init__(self, is_active: Callable[[], bool], grace_s: float = 10.0):
        self.is_active, self.grace_s = is_active, grace_s
        self._gone_since: float | None = None

    def __call__(self) -> bool:
        if self.is_active():
            self._gone_since = None
            return True
        now = time.monotonic()
        if self._gone_since is None:
            self._gone_since = now
        return now - self._gone_since < self.grace_s


def streamlit_session_watch(grace_s: float = 10.0) -> SessionWatch | None:
    """A :class:`SessionWatch` for the calling Streamlit session (None outside a served app)."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # pragma: no cover
        return None
    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    runtime, session_id = Runtime.instance(), ctx.session_id
    if not runtime.is_active_session(session_id):  # AppTest runs scripts without a served session
        return None
    return SessionWatch(lambda: runtime.is_active_session(session_id), grace_s)


class TrainingRun:
    """A trainer running in a daemon thread, its events gathered into a lock-protected state."""

    MAX_POINTS = 4000  # batch-loss points kept; beyond that neighbours are averaged pairwise

    def __init__(self, trainer: SentimentTrainer, keep_alive: Callable[[], bool] | None = None,
                 keep_alive_every_s: float = 0.5, name: str = "sentiment-training"):
        self.trainer = trainer
        self.control = trainer.control
        self.keep_alive = keep_alive
        self.keep_alive_every_s = keep_alive_every_s
        self._lock = threading.Lock()
        self._status = "starting"
        self._started: TrainingStarted | None = None
        self._batch_x: list[float] = []
        self._batch_loss: list[float] = []
        self._pending: list[tuple[float, float]] = []   # raw points waiting to be averaged into one
        self._stride = 1
        self._epochs: list[EpochEnd] = []
        self._last_batch: BatchEnd | None = None
        self._finished: TrainingFinished | None = None
        self._rate: float | None = None
        self._rate_mark: tuple[float, int] | None = None
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        # keep_alive is polled from a thread of its own: the worker blocks while paused, and a run paused
        # by a session that then closed must still end
        self._watcher = (threading.Thread(target=self._watch, name=name + "-watch", daemon=True)
                         if keep_alive is not None else None)

    # --- control (any thread) ----------------------------------------------
    def start(self) -> "TrainingRun":
        self._thread.start()
        if self._watcher is not None:
            self._watcher.start()
        return self

    def pause(self) -> None:
        self.control.pause()

    def resume(self) -> None:
        self.control.resume()

    def stop(self) -> None:
        self.control.stop()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker; True when it has finished."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # --- the worker ---------------------------------------------------------
    def _watch(self) -> None:
        while self._thread.is_alive():
            if not self.keep_alive():
                self.control.stop()  # also wakes a paused trainer
                return
            self._thread.join(self.keep_alive_every_s)

    def _work(self) -> None:
        finished = None
        try:
            for ev in self.trainer.events():
                self._record(ev)
                if isinstance(ev, TrainingFinished):
                    finished = ev
        except Exception as e:  # the trainer reports its own errors; this is a last resort
            finished = TrainingFinished("error", len(self._epochs), None, None, 0.0, f"{type(e).__name__}: {e}")
            self._record(finished)
        if finished is None:  # pragma: no cover - events() always ends with TrainingFinished
            self._record(TrainingFinished("error", len(self._epochs), None, None, 0.0, "no final event"))

    def _record(self, ev) -> None:
        with self._lock:
            if isinstance(ev, BatchEnd):
                self._last_batch = ev
                self._status = "running"
                self._pending.append((ev.epoch - 1 + ev.batch / ev.n_batches, ev.loss))
                if len(self._pending) >= self._stride:
                    xs, ls = zip(*self._pending)
                    self._batch_x.append(xs[-1])
                    self._batch_loss.append(sum(ls) / len(ls))
                    self._pending = []
                    if len(self._batch_x) > self.MAX_POINTS:
                        self._halve()
                if self._rate_mark is None:
                    self._rate_mark = (ev.elapsed, ev.examples_seen)
                elif ev.elapsed - self._rate_mark[0] >= 0.5:
                    rate = (ev.examples_seen - self._rate_mark[1]) / (ev.elapsed - self._rate_mark[0])
                    self._rate = rate if self._rate is None else 0.5 * self._rate + 0.5 * rate
                    self._rate_mark = (ev.elapsed, ev.examples_seen)
            elif isinstance(ev, EpochEnd):
                self._epochs.append(ev)
            elif isinstance(ev, TrainingStarted):
                self._started = ev
                self._status = "running"
            elif isinstance(ev, TrainingFinished):
                self._finished = ev
                self._status = ev.status

    def _halve(self) -> None:
        xs, ls = self._batch_x, self._batch_loss
        n = len(xs) // 2 * 2
        self._batch_x = xs[1:n:2] + xs[n:]
        self._batch_loss = [(ls[i] + ls[i + 1]) / 2 for i in range(0, n, 2)] + ls[n:]
        self._stride *= 2

    # --- the UI side ---------------------------------------------------------
    def snapshot(self) -> RunSnapshot:
        """A consistent copy of everything recorded so far."""
        cfg = self.trainer.config
        n_batches = -(-len(self.trainer.encoded_train) // cfg.batch_size)
        with self._lock:
            status = self._status
            if self._finished is None:
                if self.control.stopped:
                    status = "stopping"
                elif self.control.paused:
                    status = "paused"
            snap = RunSnapshot(status, self._started, list(self._batch_x), list(self._batch_loss),
                               list(self._epochs), self._last_batch, self._finished, cfg.epochs, n_batches,
                               self._rate, None)
        if snap.examples_per_s and snap.finished is None and snap.last_batch is not None:
            total = cfg.epochs * len(self.trainer.encoded_train)
            snap.seconds_left = max(0.0, (total - snap.last_batch.examples_seen) / snap.examples_per_s)
        return snap


__all__ = ["TrainingRun", "RunSnapshot", "SessionWatch", "streamlit_session_watch"]
