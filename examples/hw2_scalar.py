"""A small MiniTorch-shaped ``Scalar`` (HW2's ``minitorch/scalar.py`` in miniature, written here) for
examples/stepper.ipynb and the widget's tests: values built with ``+``, ``*``, ``exp`` record their history
(``last_fn``, inputs) and answer HW2's protocol (``unique_id``, ``parents``, ``is_leaf()``, ``is_constant()``,
``chain_rule(d)``, ``accumulate_derivative(x)``), as a student's own Scalars do. With HW2's own package, use its
``Scalar`` instead."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import count

_ids = count(1)


class Mul:
    @staticmethod
    def backward(inputs, d):
        a, b = inputs
        return d * b.data, d * a.data


class Add:
    @staticmethod
    def backward(inputs, d):
        return d, d


class Exp:
    @staticmethod
    def backward(inputs, d):
        return (d * math.exp(inputs[0].data),)


@dataclass
class History:
    last_fn: type | None = None
    inputs: tuple = field(default_factory=tuple)


class Scalar:
    def __init__(self, v: float, history: History | None = History(), name: str | None = None):
        self.data = float(v)
        self.history = history          # None: a constant (no gradient)
        self.derivative = None
        self.unique_id = next(_ids)
        self.name = name

    @staticmethod
    def _of(x) -> "Scalar":
        return x if isinstance(x, Scalar) else Scalar(x, None)

    def _apply(self, fn, value, *inputs) -> "Scalar":
        return Scalar(value, History(fn, inputs))

    def __add__(self, other):
        other = self._of(other)
        return self._apply(Add, self.data + other.data, self, other)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._of(other)
        return self._apply(Mul, self.data * other.data, self, other)

    def __rmul__(self, other):
        return self._of(other) * self

    def exp(self):
        return self._apply(Exp, math.exp(self.data), self)

    # HW2's protocol
    @property
    def parents(self):
        return self.history.inputs

    def is_leaf(self) -> bool:
        return self.history is not None and self.history.last_fn is None

    def is_constant(self) -> bool:
        return self.history is None

    def chain_rule(self, d_output):
        return list(zip(self.history.inputs, self.history.last_fn.backward(self.history.inputs, d_output)))

    def accumulate_derivative(self, x) -> None:
        self.derivative = x if self.derivative is None else self.derivative + x


def exp(x: Scalar) -> Scalar:
    return x.exp()
