"""A finished run replayed at lecture speed: the real recorded numbers, shown as they were at each moment.

HW2's network trains in a few seconds here, too fast for a class to watch the curves grow. A replay cuts the
finished run's snapshot back to what the run had recorded at one point of training (``position``, in epochs:
``epoch - 1 + batch / n_batches``, the charts' x axis) and moves that point along at a pace the lecturer picks.
Nothing is recomputed or interpolated: every number drawn is one the run recorded, and only those recorded up
to ``position`` are drawn.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .runner import RunSnapshot
from explorer.explain.numbers import fixed, plain

PACES = (20, 40, 60)      # seconds a replay of the whole run takes (the lecturer's choice)
DEFAULT_PACE = 40


@dataclass(frozen=True)
class Replay:
    """A replay in progress: when it started (monotonic seconds) and how long the whole run takes."""

    started_at: float
    seconds: float

    def position(self, now: float, total_epochs: int) -> float:
        """Epochs of the run shown at ``now``: 0 at the start, ``total_epochs`` once ``seconds`` have passed."""
        return min(max(now - self.started_at, 0.0) / max(self.seconds, 1e-9), 1.0) * total_epochs

    def over(self, now: float) -> bool:
        return now - self.started_at >= self.seconds


def _upto(xs: list, position: float) -> int:
    """How many of the increasing positions ``xs`` are at most ``position``."""
    n = 0
    for x in xs:
        if x > position + 1e-9:
            break
        n += 1
    return n


def snapshot_at(snap: RunSnapshot, position: float) -> RunSnapshot:
    """``snap`` (a finished run) as it stood when training reached ``position`` epochs: the batch losses,
    epochs, validations and looks inside recorded up to there, the run unfinished until its end.

    Raises:
        ValueError: ``snap`` is not finished (only a recorded run is replayed).
    """
    if snap.finished is None:
        raise ValueError("only a finished run can be replayed")
    done_epochs = len(snap.epochs)
    if position >= done_epochs - 1e-9:   # the end: the recorded snapshot itself
        return snap
    position = max(position, 0.0)
    n_batch = _upto(snap.batch_x, position)
    n_epochs = _upto([e.epoch for e in snap.epochs], position)
    n_val = _upto(snap.val_points_x, position)
    looks = snap.look_columns.get("position", [])
    n_look = _upto(looks, position)
    others = [e for e in snap.other_events if getattr(e, "position", -math.inf) <= position + 1e-9]
    last_batch = snap.last_batch
    if last_batch is not None and snap.n_batches_per_epoch:
        done = int(math.floor(position * snap.n_batches_per_epoch + 1e-9))
        epoch, batch = divmod(done, snap.n_batches_per_epoch)
        if batch == 0 and epoch > 0:
            epoch, batch = epoch - 1, snap.n_batches_per_epoch
        last_batch = (dataclasses.replace(last_batch, epoch=epoch + 1, batch=batch) if done else None)
    return dataclasses.replace(
        snap, status="replaying", finished=None, batch_x=snap.batch_x[:n_batch], batch_loss=snap.batch_loss[:n_batch],
        epochs=snap.epochs[:n_epochs], last_batch=last_batch, seconds_left=None, other_events=others,
        look_columns={name: col[:n_look] for name, col in snap.look_columns.items()},
        epoch_columns={name: col[:n_epochs] for name, col in snap.epoch_columns.items()},
        val_points_x=snap.val_points_x[:n_val], val_points=snap.val_points[:n_val])


def replay_text(snap: RunSnapshot, shown: RunSnapshot, replay: Replay) -> str:
    """The progress line during a replay, one line on a projector: which epoch is on screen, and that the
    numbers are the run's own (a longer line wrapped to three and pushed the network below the screen)."""
    f = snap.finished
    took = None if f is None or f.elapsed is None else fixed(f.elapsed, 0) if f.elapsed >= 10 else fixed(f.elapsed)
    recorded = f" (trained in {took} s)" if took is not None else ""
    epoch = shown.epochs[-1].epoch if shown.epochs else 0
    return (f"Replay over {plain(replay.seconds)} s: epoch {epoch} / {snap.total_epochs} of the recorded "
            f"run{recorded}, "
            "every number its own")


def auto_replay(presenting: bool, snap: RunSnapshot, pace: float, now: float) -> Replay | None:
    """The replay a projector starts by itself when a run ends (HW2 trains in seconds, before the class sees a
    curve): the recorded run at the chosen ``pace`` from ``now``. None on a laptop (the reader replays on request),
    and for a run that ended in an error or before its first epoch (nothing to watch)."""
    f = snap.finished
    if not presenting or f is None or f.status == "error" or not snap.epochs:
        return None
    return Replay(now, float(pace))
