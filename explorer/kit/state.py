"""Per-page session-state namespacing (``Namespace("explorer").key("step") == "explorer_step"``) and the
stepping logic every stepped page shares (1-based step numbers, Play's timer ticks)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, MutableMapping


@dataclass(frozen=True)
class Namespace:
    """Prefix for one page's keys in ``st.session_state`` (so pages never collide)."""
    prefix: str

    def __post_init__(self):
        if not self.prefix.isidentifier():
            raise ValueError(f"namespace {self.prefix!r} must be an identifier")

    def key(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def get(self, state: MutableMapping[str, Any], name: str, default: Any = None) -> Any:
        return state.get(self.key(name), default)

    def set(self, state: MutableMapping[str, Any], name: str, value: Any) -> None:
        state[self.key(name)] = value

    def setdefaults(self, state: MutableMapping[str, Any], values: dict[str, Any]) -> bool:
        """Set each missing key; returns True if this is the first time (the ``_ready`` marker was absent)."""
        first = self.key("_ready") not in state
        for name, value in values.items():
            state.setdefault(self.key(name), value)
        state[self.key("_ready")] = True
        return first

    def items(self, state: MutableMapping[str, Any]) -> dict[str, Any]:
        """This page's keys without the prefix (internal markers left out)."""
        p = self.prefix + "_"
        return {k[len(p):]: v for k, v in state.items()
                if isinstance(k, str) and k.startswith(p) and not k[len(p):].startswith("_")}


# --- stepping ------------------------------------------------------------------------------------
# One numbering everywhere a person sees a step: the header "Step k of n", the URL's ``step=k`` and
# every slider count from 1. Frame indices (0-based) stay inside the models; ``k - 1`` converts.

SPEEDS: dict[str, float] = {"slow": 2.0, "normal": 1.0, "fast": 0.5, "very fast": 0.25}  # seconds per step
DEFAULT_SPEED = "normal"


def clamp_step(step: Any, n_steps: int) -> int:
    """A 1-based step number kept within ``1..n_steps`` (anything unreadable is step 1).

    Deep links written before steps were 1-based said ``step=0`` for the first step; it still opens
    the first step.
    """
    try:
        k = int(step)
    except (TypeError, ValueError):
        k = 1
    return min(max(k, 1), max(int(n_steps), 1))


@dataclass(frozen=True)
class PlayState:
    """Where Play stands: the step shown, whether it is running, and when it last moved (seconds)."""
    step: int
    playing: bool
    last_move: float


PLAY_EARLY = 0.2   # a step's timer may fire this share of a step early (timers are not exact)


def play_tick(state: PlayState, n_steps: int, now: float, seconds_per_step: float) -> PlayState:
    """One timer tick of Play: move on to the step the schedule says is due; stop on the last step.

    Steps keep to a schedule (``last_move`` is when the step shown was due, not when the tick came), so the time a
    rerun takes to draw a step does not add up: 13 steps at 1 s/step take 13 s, however often the timer ticks
    (the page ticks four times per step). A tick up to ``PLAY_EARLY`` of a step early counts as on time. When the
    ticks come late (a starved CPU: each rerun takes longer than a step), Play keeps its pace by skipping the
    steps whose time has passed (it shows the step due now, never one ahead of its time) rather than drawing
    each one late and stretching the whole (13 steps took 35.7 s at load 20).
    """
    step = clamp_step(state.step, n_steps)
    if not state.playing:
        return PlayState(step, False, state.last_move)
    if step >= n_steps:
        return PlayState(n_steps, False, now)
    due = int((now - state.last_move) / seconds_per_step + PLAY_EARLY)   # steps whose time has come
    if due < 1:
        return PlayState(step, True, state.last_move)
    due = min(due, n_steps - step)            # the last step is shown, never skipped
    step += due
    return PlayState(step, step < n_steps, state.last_move + due * seconds_per_step)


def play_interval(seconds_per_step: float) -> float:
    """How often Play's timer ticks: four times per step, so a step is drawn at most a quarter step late."""
    return max(0.05, seconds_per_step / 4)


def start_playing(step: int, n_steps: int, now: float) -> PlayState:
    """Play pressed: from the last step it starts again at step 1, otherwise it goes on from ``step``."""
    step = clamp_step(step, n_steps)
    if step >= n_steps:
        step = 1
    return PlayState(step, n_steps > 1, now)
