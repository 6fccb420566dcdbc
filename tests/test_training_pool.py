"""Training in worker processes: a run trains outside the server process, its trained weights come back,
the pool queues beyond its slots (and says where), caps runs per session and per server, ends abandoned,
timed-out and crashed runs, and forwards events of any type."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import numpy as np
import pytest

from sentiment.data import builtin_corpus, builtin_split
from sentiment.embeddings import load_glove
from sentiment.trainer import EpochEnd, SentimentTrainer, TrainConfig
from explorer.sentiment_training.runner import SessionWatch, TrainingPool, TrainingRefused, TrainingRun


@pytest.fixture(scope="module")
def glove():
    try:
        return load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors here: {e}")


def wait_for(cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def trainer(glove, epochs=10_000, seed=0, cls=SentimentTrainer):
    data = builtin_corpus().head(40)
    return cls(data, data.head(10), glove, TrainConfig(epochs=epochs, lr=0.01, seed=seed))


@pytest.mark.parametrize("vectors", [{}, {"train_embeddings": True, "sparse_embeddings": True}],
                         ids=["glove", "trained-word-vectors"])
def test_a_run_trains_in_another_process_and_brings_its_weights_back(glove, vectors):
    train, val = builtin_split(60)
    cfg = TrainConfig(epochs=4, lr=0.01, seed=3, shuffle=True, **vectors)
    here = SentimentTrainer(train, val, glove, cfg)
    expected = [e.train_loss for e in here.events() if isinstance(e, EpochEnd)]
    run = TrainingRun(SentimentTrainer(train, val, glove, TrainConfig(epochs=4, lr=0.01, seed=3, shuffle=True,
                                                                      **vectors)),
                      pool=TrainingPool(max_running=1))
    before = run.trainer.predict_text("a wonderful film").probability
    run.start()
    assert wait_for(lambda: run.pid is not None)
    assert run.pid != os.getpid()
    assert run.join(60)
    snap = run.snapshot()
    assert snap.status == "completed" and [e.train_loss for e in snap.epochs] == expected
    # the page's trainer is the trained model: the same predictions as the run trained here
    after = run.trainer.predict_text("a wonderful film").probability
    assert after != before
    assert after == pytest.approx(here.predict_text("a wonderful film").probability, abs=1e-12)
    np.testing.assert_array_equal(run.trainer.embedding_table, here.embedding_table)  # trained vectors come back
    assert run.trainer.evaluate() == here.evaluate()
    assert [e.epoch for e in run.trainer.history] == [1, 2, 3, 4]
    assert run.trainer.best_state is not None
    with pytest.raises(ProcessLookupError):
        os.kill(run.pid, 0)  # the process is gone


def test_runs_beyond_the_slots_wait_in_a_queue_and_say_where(glove):
    pool = TrainingPool(max_running=1, max_queued=2)
    a, b, c = (TrainingRun(trainer(glove, seed=s), pool=pool).start() for s in (1, 2, 3))
    try:
        assert wait_for(lambda: a.snapshot().last_batch is not None)
        sb, sc = b.snapshot(), c.snapshot()
        assert (sb.status, sb.queue_position) == ("queued", 1) and (sc.status, sc.queue_position) == ("queued", 2)
        assert b.pid is None and pool.counts == (1, 2)
        with pytest.raises(TrainingRefused, match="2 waiting"):
            TrainingRun(trainer(glove), pool=pool).start()
        c.stop()  # a waiting run leaves the queue at once, without ever starting
        assert c.join(1) and c.snapshot().finished.status == "stopped" and c.pid is None
        a.stop()
        assert a.join(20)
        assert wait_for(lambda: b.snapshot().last_batch is not None)  # b got a's slot
        assert b.snapshot().queue_position is None and b.snapshot().status == "running"
    finally:
        for r in (a, b, c):
            r.stop()
        for r in (a, b, c):
            assert r.join(20)
    assert pool.counts == (0, 0)


def test_one_live_run_per_session(glove):
    pool = TrainingPool(max_running=2, max_per_owner=1)
    first = TrainingRun(trainer(glove), owner="session-1", pool=pool).start()
    try:
        with pytest.raises(TrainingRefused, match="this session"):
            TrainingRun(trainer(glove), owner="session-1", pool=pool).start()
        other = TrainingRun(trainer(glove), owner="session-2", pool=pool).start()  # another student may
        other.stop()
        first.stop()  # once stopping, it no longer counts: the page's "Start training" replaces a run
        again = TrainingRun(trainer(glove, epochs=1), owner="session-1", pool=pool).start()
        assert again.join(30) and other.join(20)
    finally:
        first.stop()
        assert first.join(20)


def test_a_queued_run_of_a_closed_session_is_withdrawn(glove):
    pool = TrainingPool(max_running=1)
    a = TrainingRun(trainer(glove), pool=pool).start()
    alive = {"v": True}
    b = TrainingRun(trainer(glove), keep_alive=SessionWatch(lambda: alive["v"], grace_s=0.1),
                    keep_alive_every_s=0.05, pool=pool).start()
    try:
        assert b.snapshot().status == "queued"
        alive["v"] = False
        assert b.join(5) and b.snapshot().finished.status == "stopped" and b.pid is None
        assert pool.counts == (1, 0)
    finally:
        a.stop()
        assert a.join(20)


def test_the_time_limit_stops_a_run_and_says_why(glove):
    run = TrainingRun(trainer(glove), pool=TrainingPool(max_running=1, max_run_s=1.0)).start()
    assert run.join(30)
    snap = run.snapshot()
    assert snap.finished.status == "stopped" and "time limit" in snap.note
    assert snap.progress < 1  # (on a loaded machine the first batch may not even come within the second)


def test_a_killed_worker_is_an_error_not_a_hang(glove):
    run = TrainingRun(trainer(glove), pool=TrainingPool(max_running=1)).start()
    assert wait_for(lambda: run.snapshot().last_batch is not None)
    os.kill(run.pid, signal.SIGKILL)
    assert run.join(20)
    snap = run.snapshot()
    assert snap.status == "error" and "ended unexpectedly" in snap.finished.error


def test_memory_beyond_the_limit_is_the_runs_error(glove):
    """The worker's address space is capped: a run that needs more fails with MemoryError, the server lives."""
    pool = TrainingPool(max_running=1, memory_limit_bytes=1 << 30)
    data = builtin_corpus().head(5)
    cfg = TrainConfig(epochs=1, hidden=3_000_000, seed=0)  # a 50 x 3,000,000 float64 layer: 1.2 GB
    run = TrainingRun(SentimentTrainer(data, None, glove, TrainConfig(epochs=1)), pool=pool)
    run.trainer.config = cfg  # the worker builds its trainer from this config
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    assert snap.status == "error" and "MemoryError" in snap.finished.error


@dataclass(frozen=True)
class LayerStats:
    epoch: int
    norms: tuple


class TrainerWithStats(SentimentTrainer):
    """A trainer that emits an event type the runner does not know."""

    def events(self):
        for ev in super().events():
            yield ev
            if isinstance(ev, EpochEnd):
                yield LayerStats(ev.epoch, tuple(float(np.linalg.norm(v)) for v in self.model.state_dict().values()))


def test_events_of_any_type_reach_the_snapshot(glove):
    run = TrainingRun(trainer(glove, epochs=3, cls=TrainerWithStats), pool=TrainingPool(max_running=1)).start()
    assert run.join(60)
    snap = run.snapshot()
    stats = [e for e in snap.other_events if isinstance(e, LayerStats)]  # beside the trainer's own extra events
    assert [e.epoch for e in stats] == [1, 2, 3] and all(len(e.norms) == 4 for e in stats)


def test_validation_inside_epochs_and_the_speed_reach_the_page(glove):
    """A run that validates every 3 steps: its points are on the accuracy chart between the epoch ends, and
    the snapshot carries the run's speed and a time left while it trains."""
    from explorer.sentiment_training.views import accuracy_chart, latest_val_accuracy, progress_text
    train, val = builtin_split(60)
    t = SentimentTrainer(train, val, glove, TrainConfig(epochs=400, batch_size=7, eval_every=3, seed=1))
    run = TrainingRun(t, pool=TrainingPool(max_running=1)).start()
    try:
        assert wait_for(lambda: len(run.snapshot().val_points) >= 2 and run.snapshot().seconds_left is not None,
                        60)
        snap = run.snapshot()
        assert snap.examples_per_s > 0 and snap.seconds_left > 0
        assert "examples/s" in progress_text(snap) and " left" in progress_text(snap)
        assert 0 < snap.val_points_x[0] < 1 and latest_val_accuracy(snap) is not None
    finally:
        run.stop()
        assert run.join(30)
    snap = run.snapshot()
    assert snap.seconds_left is None  # finished: no time left to show
    table, _ = accuracy_chart(snap)
    rows = table.to_pandas()
    shown = rows[rows["series"] == "validation"]
    assert len(shown) == len(snap.val_points) + len(snap.epochs)
    assert list(shown["epoch"]) == sorted(shown["epoch"]) and set(snap.val_points_x) <= set(shown["epoch"])


def test_the_page_shows_the_queue_and_a_refusal(glove, monkeypatch):
    from pathlib import Path
    from streamlit.testing.v1 import AppTest
    from explorer.sentiment_training.views import progress_text

    pool = TrainingPool(max_running=1, max_queued=1)
    monkeypatch.setattr(TrainingPool, "_shared", pool)
    busy = TrainingRun(trainer(glove), pool=pool).start()
    try:
        page = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "11_Sentiment_training.py")
        at = AppTest.from_file(page, default_timeout=60).run()
        next(b for b in at.button if b.label == "Start training").click().run()
        assert not at.exception
        run = at.session_state["sentiment_run"]
        assert run.snapshot().status == "queued"
        assert progress_text(run.snapshot()) == "Waiting for a free training process: number 1 in the queue…"
        assert any("number 1 in the queue and starts by itself" in i.value for i in at.info)
        # Start again replaces the session's run: the waiting one is withdrawn, the new one waits instead
        next(b for b in at.button if b.label == "Start training").click().run()
        assert not at.exception and run.snapshot().finished.status == "stopped"
        again = at.session_state["sentiment_run"]
        assert again is not run and again.snapshot().queue_position == 1
        again.stop()
        filler = TrainingRun(trainer(glove), pool=pool).start()  # the queue is full again
        other = AppTest.from_file(page, default_timeout=60).run()  # another student
        next(b for b in other.button if b.label == "Start training").click().run()
        assert not other.exception and other.session_state["sentiment_run"] is None
        assert any("Training refused" in e.value and "1 waiting" in e.value for e in other.error)
        filler.stop()
    finally:
        busy.stop()
        assert busy.join(20)


def test_training_runs_in_the_idle_scheduling_class(glove):
    """The server's script runs always come first: the training process only gets CPU time they leave."""
    run = TrainingRun(trainer(glove), pool=TrainingPool(max_running=1)).start()
    try:
        assert wait_for(lambda: run.snapshot().last_batch is not None)
        if hasattr(os, "SCHED_IDLE"):
            assert os.sched_getscheduler(run.pid) == os.SCHED_IDLE
        else:  # pragma: no cover - other systems: a high nice value
            assert os.getpriority(os.PRIO_PROCESS, run.pid) >= 19
        if os.path.exists(f"/proc/{run.pid}/environ"):  # one BLAS thread, set before the fork server loaded NumPy
            env = dict(kv.split("=", 1) for kv in open(f"/proc/{run.pid}/environ").read().split("\0") if "=" in kv)
            assert env.get("OPENBLAS_NUM_THREADS") == os.environ.get("OPENBLAS_NUM_THREADS") is not None
    finally:
        run.stop()
        assert run.join(20)


def test_a_worker_never_runs_the_servers_main_script(tmp_path, monkeypatch):
    """Under ``streamlit run`` the page script is ``sys.modules["__main__"]``: a worker started by
    ``_start_worker`` does not run it (a plain ``start()`` does, which is what filled the server's log)."""
    import sys
    import types

    from explorer.sentiment_training import runner

    def main_script_ran(start) -> bool:
        marker = tmp_path / f"ran-{start.__name__}"
        page = tmp_path / f"page_{start.__name__}.py"
        page.write_text(f"open({str(marker)!r}, 'w').close()\n")
        fake = types.ModuleType("__main__")
        fake.__file__ = str(page)
        monkeypatch.setitem(sys.modules, "__main__", fake)
        proc = runner._context().Process(target=os.getpid, daemon=True)
        start(proc)
        proc.join(60)
        assert proc.exitcode == 0
        return marker.exists()

    def plain_start(proc):
        proc.start()

    assert main_script_ran(runner._start_worker) is False
    assert main_script_ran(plain_start) is True   # what _start_worker guards against, so this test can fail
