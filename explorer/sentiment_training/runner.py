"""Run a :class:`SentimentTrainer` in a worker process and collect its events for a UI to poll.

Training is CPU-bound Python: run in a thread of the Streamlit server it would share the GIL with
every session's script runs (8 sessions training froze the health check for 7-11 s). So a run trains
in a process of its own, forked from a small fork server (fast start, nothing shared), in Linux's
idle scheduling class (it gets a core only when the server does not want it), under an address-space
limit. Its events come back through a pipe, in small batches,
to a reader thread of this process that records them under a lock; the UI calls
:meth:`TrainingRun.snapshot` (a copy) as often as it likes.

A server-wide :class:`TrainingPool` caps the processes training at once; runs beyond that wait in a
queue (their snapshot says where) and it caps the runs per session and the queue's length
(:class:`TrainingRefused`). A run stops when asked, when its ``keep_alive`` check says the owner is
gone (the Streamlit session closed), when its time limit passes, or at the end. When it ends, its
model's weights come back, so :attr:`TrainingRun.trainer` is the trained model in this process.
"""
from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.spawn
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from sentiment.embeddings import GloVe
from sentiment.threads import pin_blas_threads
from sentiment.trainer import (BatchEnd, EpochEnd, InsideLook, SentimentTrainer, TrainingControl,
                               TrainingFinished, TrainingStarted, ValidationPoint)

from .progress import ProgressClock
from explorer.explain.numbers import fixed

LOOK_METRICS = ("weight_norm", "grad_norm", "update_ratio")   # per layer, in RunSnapshot.look_columns
EPOCH_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_accuracy", "best_val_accuracy")


class TrainingRefused(RuntimeError):
    """The server or this session already has as many runs as it allows; the message says which."""


@dataclass
class RunSnapshot:
    """What the UI needs to draw, copied out of the run's recorded state."""

    status: str    # queued | starting | running | paused | stopping | completed | stopped | error
    started: TrainingStarted | None
    batch_x: list[float]                         # epoch position of each (possibly averaged) batch loss point
    batch_loss: list[float]
    epochs: list[EpochEnd]
    last_batch: BatchEnd | None
    finished: TrainingFinished | None
    total_epochs: int
    n_batches_per_epoch: int
    examples_per_s: float | None                 # examples per second of training, over the last half of the run
    seconds_left: float | None                   # the run's time left, steady (see progress.ProgressClock)
    queue_position: int | None = None            # 1 = next to start; None when not waiting
    other_events: list = field(default_factory=list)  # events of any other type the trainer emitted, in order
    note: str | None = None                      # why the run ended early, when the runner ended it
    # the looks inside (InsideLook events among other_events) as columns, kept as they arrive so that a poll
    # only copies them: "position", "dead_relu" and "<layer>.<metric>" (NaN where a look lacks the layer)
    look_columns: dict[str, list[float]] = field(default_factory=dict)
    # the epochs' numbers as columns (EPOCH_COLUMNS), kept as they arrive: a poll copies them, never loops
    epoch_columns: dict[str, list] = field(default_factory=dict)
    # validation inside epochs (ValidationPoint events, config.eval_every): epoch positions and accuracies
    val_points_x: list[float] = field(default_factory=list)
    val_points: list[float] = field(default_factory=list)

    def epoch_column(self, name: str) -> list:
        """One of ``EPOCH_COLUMNS`` over ``epochs`` (from ``epoch_columns`` when the runner kept it)."""
        col = self.epoch_columns.get(name)
        if col is not None and len(col) == len(self.epochs):
            return col
        return [getattr(e, name) for e in self.epochs]

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
    from explorer.kit.streamlit_private import session_connected
    connected = session_connected()
    return None if connected is None else SessionWatch(connected, grace_s)


def streamlit_session_id() -> str | None:
    """The calling Streamlit session's id (the owner a :class:`TrainingPool` counts runs by), or None."""
    from explorer.kit.streamlit_private import session_id
    return session_id()


# ---------------------------------------------------------------------------
# the pool: how many runs train at once, server-wide


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


class TrainingPool:
    """Admits runs: at most ``max_running`` processes train at once, ``max_queued`` wait, and one owner
    (a browser session) has at most ``max_per_owner`` runs that are neither finished nor stopping.

    Args:
        max_running: training processes at once (default ``$AUTODIFF_TRAINING_WORKERS``, else half the
            cores and at least 2).
        max_queued: runs waiting for a free process; beyond that :meth:`submit` refuses.
        max_per_owner: live runs per owner.
        max_run_s: a run is stopped after this many seconds of training (default
            ``$AUTODIFF_TRAINING_MAX_S`` or one hour); the snapshot's ``note`` says so.
        memory_limit_bytes: address-space limit of each training process (``RLIMIT_AS``); a run that
            needs more ends with a MemoryError reported as its error, the server is unaffected.
        niceness: added to the training processes' nice value where the SCHED_IDLE scheduling class (the
            default: training gets only CPU time the server leaves) is not available.
    """

    def __init__(self, max_running: int | None = None, max_queued: int = 16, max_per_owner: int = 1,
                 max_run_s: float | None = None, memory_limit_bytes: int | None = 2 << 30, niceness: int = 19):
        self.max_running = max_running or _env_int("AUTODIFF_TRAINING_WORKERS", max(2, (os.cpu_count() or 2) // 2))
        self.max_queued = max_queued
        self.max_per_owner = max_per_owner
        self.max_run_s = max_run_s or float(_env_int("AUTODIFF_TRAINING_MAX_S", 3600))
        self.memory_limit_bytes = memory_limit_bytes
        self.niceness = niceness
        self._lock = threading.Lock()
        self._running: list[TrainingRun] = []
        self._queue: collections.deque[TrainingRun] = collections.deque()

    _shared: "TrainingPool | None" = None
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> "TrainingPool":
        """The server-wide pool (created on first use)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    # --- admission ---------------------------------------------------------
    def submit(self, run: "TrainingRun") -> None:
        """Start ``run`` now or queue it.

        Raises:
            TrainingRefused: the owner already has ``max_per_owner`` live runs, or the queue is full.
        """
        with self._lock:
            live = [r for r in (*self._running, *self._queue) if not r.control.stopped]
            if run.owner is not None:
                mine = sum(1 for r in live if r.owner == run.owner)
                if mine >= self.max_per_owner:
                    raise TrainingRefused(f"this session already has {mine} training run(s); the limit is "
                                          f"{self.max_per_owner} per session: stop it first")
            if len(self._running) < self.max_running:
                self._running.append(run)
                launch = True
            elif len(self._queue) < self.max_queued:
                self._queue.append(run)
                launch = False
            else:
                raise TrainingRefused(f"the server is busy: {len(self._running)} training, {len(self._queue)} "
                                      "waiting (the most it takes); try again in a minute")
        if launch:
            run._launch(self)

    def queue_position(self, run: "TrainingRun") -> int | None:
        with self._lock:
            try:
                return self._queue.index(run) + 1
            except ValueError:
                return None

    def withdraw(self, run: "TrainingRun") -> bool:
        """Remove a queued run; True when it was waiting (it never started)."""
        with self._lock:
            try:
                self._queue.remove(run)
                return True
            except ValueError:
                return False

    def _ended(self, run: "TrainingRun") -> None:
        """A running run's process ended: start the next waiting run in its place."""
        with self._lock:
            if run in self._running:
                self._running.remove(run)
            nxt = self._queue.popleft() if self._queue and len(self._running) < self.max_running else None
            if nxt is not None:
                self._running.append(nxt)
        if nxt is not None:
            nxt._launch(self)

    @property
    def counts(self) -> tuple[int, int]:
        """(running, queued)."""
        with self._lock:
            return len(self._running), len(self._queue)


def _context():
    """Fork server where there is one (a child starts in milliseconds, forked from a clean process that
    imported NumPy and the trainer once); spawn elsewhere."""
    # a training process runs BLAS on one thread (10x faster on a busy 2-core machine: sentiment/threads.py);
    # the variables reach the fork server when it starts, before it loads NumPy
    pin_blas_threads()
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    # this module only: under `streamlit run`, "__main__" is whichever page script runs (see _start_worker)
    ctx.set_forkserver_preload([__name__])
    return ctx


# Why a worker must not be told about __main__: Streamlit runs each page script as a module it installs as
# sys.modules["__main__"] (with the page's file as __file__ and no __spec__). multiprocessing hands every child
# "init_main_from_path" = that file, and the child runs it as __mp_main__ before unpickling its target: a
# whole page executed outside Streamlit, ~205 lines of "missing ScriptRunContext!" and "streamlit run" hints
# in the server's log per started training (and its CPU time wasted). The worker needs nothing of __main__
# (_worker_main and the recipe's classes live in importable modules), so its preparation data leaves the
# main module out. Only starts made inside _start_worker, on the starting thread, are changed.
_leave_main_out = threading.local()
_stdlib_preparation_data = multiprocessing.spawn.get_preparation_data


def _preparation_data(name: str) -> dict:
    data = _stdlib_preparation_data(name)
    if getattr(_leave_main_out, "active", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


def _start_worker(proc) -> None:
    """``proc.start()`` without the parent's ``__main__`` re-run in the child (see above)."""
    if multiprocessing.spawn.get_preparation_data is not _preparation_data:
        multiprocessing.spawn.get_preparation_data = _preparation_data   # the same data for any other start
    _leave_main_out.active = True
    try:
        proc.start()
    finally:
        _leave_main_out.active = False


# ---------------------------------------------------------------------------
# the worker process


@dataclass
class _Recipe:
    """What a worker needs to rebuild the same trainer (same seed, so the same initial weights)."""

    trainer_class: type
    train: Any
    val: Any
    glove: GloVe        # only the words of the two datasets: a few hundred KB, not GloVe's 80 MB
    config: Any
    memory_limit_bytes: int | None
    niceness: int

    @classmethod
    def of(cls, trainer: SentimentTrainer, pool: TrainingPool) -> "_Recipe":
        vocab, glove = trainer.vocabulary, trainer.glove
        small = GloVe(list(vocab.word_to_id), vocab.table[2:], glove.source)
        small.unk_vector = glove.unk_vector.copy()
        return cls(type(trainer), trainer.train_data, trainer.val_data, small, trainer.config, pool.memory_limit_bytes,
                   pool.niceness)


@dataclass
class _FinalState:
    model: dict
    best_state: dict | None
    history: list
    table: Any = None        # the trained word vectors the model reads (config.train_embeddings), else None
    best_table: Any = None


def _lower_priority(niceness: int) -> None:
    """The training process runs only on CPU time the server leaves over: Linux's SCHED_IDLE class (a task
    in it gets a core only when nothing of normal priority wants it), else a higher nice value."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.nice(niceness)
    except OSError:
        pass


def _worker_main(recipe: _Recipe, events, commands) -> None:  # pragma: no cover - runs in the child
    _lower_priority(recipe.niceness)
    lock = threading.Lock()
    pending: list = []
    control = TrainingControl()

    def flush() -> None:
        with lock:  # sending under the lock keeps the order between the two threads that flush
            if pending:
                events.send(list(pending))
                pending.clear()

    def listen() -> None:  # commands from the page; also flushes while the trainer is paused
        while True:
            try:
                if commands.poll(0.05):
                    cmd = commands.recv()
                    getattr(control, cmd)()
                else:
                    flush()
            except (EOFError, OSError):  # the server went away
                control.stop()
                return

    threading.Thread(target=listen, daemon=True).start()
    try:
        if recipe.memory_limit_bytes:  # after the thread's stack is mapped
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (recipe.memory_limit_bytes, recipe.memory_limit_bytes))
        trainer = recipe.trainer_class(recipe.train, recipe.val, recipe.glove, recipe.config, control=control)
        last = time.monotonic()
        for ev in trainer.events():
            if isinstance(ev, TrainingFinished):
                with lock:
                    trained = trainer.config.train_embeddings
                    pending.append(_FinalState(trainer.model.state_dict(), trainer.best_state, trainer.history,
                                               trainer.embedding_table.copy() if trained else None,
                                               trainer.best_table))
            with lock:
                pending.append(ev)
            if time.monotonic() - last >= 0.05:
                flush()
                last = time.monotonic()
    except BaseException as e:  # MemoryError under the limit, a bad config: reported, never a traceback
        with lock:
            pending.append(TrainingFinished("error", 0, None, None, 0.0, f"{type(e).__name__}: {e}"))
    try:
        flush()
    except OSError:
        pass
    events.close()


# ---------------------------------------------------------------------------
# the run


class TrainingRun:
    """A trainer running in a worker process, its events gathered into a lock-protected state.

    ``trainer`` stays in this process: its data and shapes are there from the start, and its model's
    weights are replaced by the trained ones before the snapshot says ``done``.
    """

    MAX_POINTS = 4000        # batch-loss points kept; beyond that neighbours are averaged pairwise
    MAX_OTHER_EVENTS = 4000  # events of other types kept (the oldest are dropped)
    STOP_GRACE_S = 10.0      # a worker that does not end this long after a stop is terminated

    def __init__(self, trainer: SentimentTrainer, keep_alive: Callable[[], bool] | None = None,
                 keep_alive_every_s: float = 0.5, name: str = "sentiment-training", *,
                 owner: str | None = None, pool: TrainingPool | None = None):
        self.trainer = trainer
        self.control = trainer.control   # this process's view; every change is also sent to the worker
        self.keep_alive = keep_alive
        self.keep_alive_every_s = keep_alive_every_s
        self.name = name
        self.owner = owner
        self.pool = pool
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._status = "starting"
        self._started: TrainingStarted | None = None
        self._batch_x: list[float] = []
        self._batch_loss: list[float] = []
        self._pending: list[tuple[float, float]] = []   # raw points waiting to be averaged into one
        self._stride = 1
        self._epochs: list[EpochEnd] = []
        self._epoch_cols: dict[str, list] = {name: [] for name in EPOCH_COLUMNS}
        self._last_batch: BatchEnd | None = None
        self._finished: TrainingFinished | None = None
        self._other: collections.deque = collections.deque(maxlen=self.MAX_OTHER_EVENTS)
        self._look_cols: dict[str, collections.deque] = {}
        self._note: str | None = None
        cfg = trainer.config
        self._clock = ProgressClock(cfg.epochs * len(trainer.encoded_train))
        self._val_x: collections.deque = collections.deque(maxlen=self.MAX_POINTS)   # ValidationPoint positions
        self._val_y: collections.deque = collections.deque(maxlen=self.MAX_POINTS)   # and accuracies
        self._submitted = False
        self._done = threading.Event()
        self._process = None
        self._commands = None
        self._stop_sent_at: float | None = None

    # --- control (any thread) ----------------------------------------------
    def start(self) -> "TrainingRun":
        """Submit the run to its pool (the shared one by default): it trains now or waits its turn.

        Raises:
            TrainingRefused: the pool's limits are reached.
        """
        if self.pool is None:
            self.pool = TrainingPool.shared()
        self.pool.submit(self)
        self._submitted = True
        if self.keep_alive is not None:
            # its own thread: a run paused (or queued) by a session that then closed must still end
            threading.Thread(target=self._watch, name=self.name + "-watch", daemon=True).start()
        return self

    def pause(self) -> None:
        self.control.pause()
        self._send("pause")

    def resume(self) -> None:
        self.control.resume()
        self._send("resume")

    def stop(self) -> None:
        self.control.stop()
        if self.pool is not None and self.pool.withdraw(self):  # it was waiting: it ends without starting
            self._record(TrainingFinished("stopped", 0, None, None, 0.0))
            self._done.set()
            return
        self._send("stop")

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run to end (its process gone, its results in); True when it has."""
        return self._done.wait(timeout)

    @property
    def alive(self) -> bool:
        return self._submitted and not self._done.is_set()

    @property
    def pid(self) -> int | None:
        """The training process's id once it started (None while queued)."""
        return self._process.pid if self._process is not None else None

    # --- this process's side ---------------------------------------------------
    def _send(self, cmd: str) -> None:
        with self._send_lock:
            if cmd == "stop" and self._stop_sent_at is None:
                self._stop_sent_at = time.monotonic()
            if self._commands is None:
                return  # not started yet: _launch replays the control's state
            try:
                self._commands.send(cmd)
            except (OSError, ValueError):  # the worker has ended
                pass

    def _launch(self, pool: TrainingPool) -> None:
        """Start the worker process (called by the pool when a slot is free)."""
        ctx = _context()
        ev_r, ev_w = ctx.Pipe(duplex=False)
        cmd_r, cmd_w = ctx.Pipe(duplex=False)
        try:
            recipe = _Recipe.of(self.trainer, pool)
            proc = ctx.Process(target=_worker_main, args=(recipe, ev_w, cmd_r), name=self.name, daemon=True)
            _start_worker(proc)
        except BaseException as e:  # no process (fork failed, out of memory): the run fails, the slot frees
            for c in (ev_r, ev_w, cmd_r, cmd_w):
                c.close()
            self._record(TrainingFinished("error", 0, None, None, 0.0,
                                          f"could not start a training process: {type(e).__name__}: {e}"))
            self._done.set()
            pool._ended(self)
            return
        ev_w.close()
        cmd_r.close()
        with self._send_lock:
            self._process, self._commands = proc, cmd_w
        if self.control.stopped:
            self._send("stop")
        elif self.control.paused:
            self._send("pause")
        threading.Thread(target=self._read, args=(ev_r, pool), name=self.name + "-reader", daemon=True).start()

    def _read(self, conn, pool: TrainingPool) -> None:
        deadline = time.monotonic() + pool.max_run_s
        try:
            while True:
                if conn.poll(0.25):
                    try:
                        batch = conn.recv()
                    except (EOFError, OSError):
                        break
                    for msg in batch:
                        if isinstance(msg, _FinalState):
                            self._adopt(msg)
                        else:
                            self._record(msg)
                now = time.monotonic()
                if now > deadline and not self.control.stopped:
                    self._note = f"stopped by the server after its time limit of {fixed(pool.max_run_s / 60, 0)} min"
                    self.stop()
                if (self._stop_sent_at is not None and now - self._stop_sent_at > self.STOP_GRACE_S
                        and self._process.is_alive()):
                    self._process.terminate()
                if not self._process.is_alive() and not conn.poll(0):
                    break
        finally:
            conn.close()
            self._process.join(self.STOP_GRACE_S)
            if self._process.is_alive():  # pragma: no cover - a worker that ignores SIGTERM
                self._process.kill()
                self._process.join()
            with self._send_lock:
                self._commands.close()
            if self._finished is None:
                code = self._process.exitcode
                why = "it ran out of memory or was killed" if code and code < 0 else f"exit code {code}"
                self._record(TrainingFinished("error", len(self._epochs), None, None, 0.0,
                                              f"the training process ended unexpectedly ({why})"))
            self._done.set()
            pool._ended(self)

    def _adopt(self, final: _FinalState) -> None:
        """The worker's trained weights into this process's trainer, before the snapshot says done."""
        self.trainer.model.load_state_dict(final.model)
        self.trainer.best_state = final.best_state
        self.trainer.history = final.history
        if final.table is not None:  # trained word vectors belong to the model
            self.trainer.load_embedding_table(final.table)
            self.trainer.best_table = final.best_table

    def _watch(self) -> None:
        while not self._done.is_set():
            if not self.keep_alive():
                self.stop()  # also wakes a paused trainer, or withdraws a queued run
                return
            self._done.wait(self.keep_alive_every_s)

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
                self._clock.add(ev.elapsed, ev.examples_seen)
            elif isinstance(ev, ValidationPoint):
                self._val_x.append(ev.position)
                self._val_y.append(ev.val_accuracy)
            elif isinstance(ev, EpochEnd):
                self._epochs.append(ev)
                for name, col in self._epoch_cols.items():
                    col.append(getattr(ev, name))
            elif isinstance(ev, TrainingStarted):
                self._started = ev
                self._status = "running"
            elif isinstance(ev, TrainingFinished):
                if self._finished is None:
                    self._finished = ev
                    self._status = ev.status
            else:  # any other event the trainer emits reaches the UI as it is
                self._other.append(ev)
                if isinstance(ev, InsideLook):
                    self._add_look(ev)

    def _add_look(self, look: InsideLook) -> None:
        """Append a look's numbers to the look columns (the same bound as the events: the oldest go first)."""
        row = {"position": look.position, "dead_relu": look.dead_relu}
        for ly in look.layers:
            for metric in LOOK_METRICS:
                row[f"{ly.name}.{metric}"] = getattr(ly, metric)
        cols = self._look_cols
        n = len(cols["position"]) if cols else 0
        for key in row.keys() - cols.keys():  # a column first seen now: NaN for the looks before
            cols[key] = collections.deque([float("nan")] * n, maxlen=self.MAX_OTHER_EVENTS)
        for key, col in cols.items():
            v = row.get(key)
            col.append(float("nan") if v is None else v)

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
        position = self.pool.queue_position(self) if self.pool is not None and self._finished is None else None
        with self._lock:
            status = self._status
            if self._finished is None:
                if self.control.stopped:
                    status = "stopping"
                elif self.control.paused:
                    status = "paused"
                elif position is not None:
                    status = "queued"
            running = self._finished is None
            snap = RunSnapshot(status, self._started, list(self._batch_x), list(self._batch_loss),
                               list(self._epochs), self._last_batch, self._finished, cfg.epochs, n_batches,
                               self._clock.examples_per_s, self._clock.seconds_left if running else None,
                               position, list(self._other), self._note,
                               {k: list(c) for k, c in self._look_cols.items()},
                               {k: list(c) for k, c in self._epoch_cols.items()},
                               list(self._val_x), list(self._val_y))
        return snap


__all__ = ["TrainingRun", "RunSnapshot", "SessionWatch", "TrainingPool", "TrainingRefused",
           "streamlit_session_watch", "streamlit_session_id"]
