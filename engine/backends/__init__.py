"""Backend registry: ``get_backend("numpy" | "python" | "cuda")`` and ``available()``.

Each backend is created once (it holds its random generator) and shared by all
tensors that use it.
"""
from __future__ import annotations

import importlib

from .base import Backend, BackendUnavailable

# name -> (module, class); modules are imported lazily so that an optional
# dependency (cupy) is only touched when its backend is asked for.
_REGISTRY: dict[str, tuple[str, str]] = {
    "numpy": ("engine.backends.numpy_backend", "NumpyBackend"),
    "python": ("engine.backends.python_backend", "PythonBackend"),
    "cuda": ("engine.backends.cuda_backend", "CudaBackend"),
}
_INSTANCES: dict[str, Backend] = {}
_seed: int | None = None  # last manual seed; backends created later start from it


def _backend_class(name: str):
    try:
        module, cls = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {sorted(_REGISTRY)}") from None
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as e:
        raise BackendUnavailable(f"backend {name!r} cannot be loaded: {e}") from None


def get_backend(backend: "str | Backend") -> Backend:
    """The shared backend instance for a name (or the backend itself). ValueError for an unknown name,
    BackendUnavailable for a backend that cannot run here (``cuda`` without a GPU)."""
    if isinstance(backend, Backend):
        return backend
    inst = _INSTANCES.get(backend)
    if inst is not None:
        return inst
    cls = _backend_class(backend)
    if not cls.is_available():
        raise BackendUnavailable(f"backend {backend!r} is not available on this machine: {cls.unavailable_reason()}")
    inst = _INSTANCES[backend] = cls()
    if _seed is not None:
        inst.seed(_seed)
    return inst


def available() -> list[str]:
    """Names of the backends that work on this machine."""
    names = []
    for name in _REGISTRY:
        try:
            if _backend_class(name).is_available():
                names.append(name)
        except BackendUnavailable:
            pass
    return names


def known() -> list[str]:
    """Every backend name the engine knows, available here or not."""
    return list(_REGISTRY)


def seed_all(seed: int) -> None:
    """Seed the random generator of every backend, those created so far and later ones."""
    global _seed
    _seed = seed
    for inst in _INSTANCES.values():
        inst.seed(seed)


__all__ = ["Backend", "BackendUnavailable", "get_backend", "available", "known", "seed_all"]
