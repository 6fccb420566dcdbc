"""Data types the engine understands (a deliberately small set)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """A tensor element type: its name, NumPy equivalent and array-module typecode."""

    name: str
    numpy: type
    typecode: str  # for the pure-Python backend's array.array storage
    is_floating: bool

    def __repr__(self) -> str:
        return f"engine.{self.name}"

    __hash__ = object.__hash__  # the four DTypes are singletons: hash by identity, fast

    def __reduce__(self):  # unpickled (a training worker's results) as the same singleton
        return as_dtype, (self.name,)


float64 = DType("float64", np.float64, "d", True)
float32 = DType("float32", np.float32, "f", True)
int64 = DType("int64", np.int64, "q", False)
bool_ = DType("bool", np.bool_, "b", False)

_BY_NAME = {d.name: d for d in (float64, float32, int64, bool_)}
_RANK = {"bool": 0, "int64": 1, "float32": 2, "float64": 3}


def as_dtype(dtype) -> DType:
    """The DType of a DType, a name ('float32') or a NumPy dtype; TypeError for one the engine lacks."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name is not None and name.startswith("int"):
        return int64
    raise TypeError(f"unsupported dtype {dtype!r}; use one of {sorted(_BY_NAME)}")


def result_dtype(a: DType, b: DType) -> DType:
    """Type promotion for binary ops: float64 > float32 > int64 > bool."""
    return a if _RANK[a.name] >= _RANK[b.name] else b
