"""Per-page session-state namespacing: ``Namespace("explorer").key("step") == "explorer_step"``."""
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
