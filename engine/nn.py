"""Neural-network modules (PyTorch-shaped): Module, Parameter, Linear, Embedding, ..."""
from __future__ import annotations

import itertools
import math
from typing import Iterator

import numpy as np

from . import functional as F
from .backends import Backend, get_backend
from .dtypes import as_dtype, float64
from .tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as trainable (requires_grad=True)."""

    __slots__ = ()

    def __init__(self, data, dtype=None, backend: "str | Backend" = "numpy", name: str | None = None):
        super().__init__(data, requires_grad=True, dtype=dtype, backend=backend, name=name)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """Base class: parameters and sub-modules are discovered from attributes, recursively."""

    def __init__(self) -> None:
        self.training = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    if isinstance(v, Module):
                        yield f"{name}.{i}", v

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Own parameters first, then the children's; a parameter shared by two places comes once."""
        own = [(prefix + name, p) for name, p in vars(self).items() if isinstance(p, Parameter)]
        nested = (item for name, child in self.named_children()
                  for item in child.named_parameters(f"{prefix}{name}."))
        seen: set[int] = set()
        for name, p in itertools.chain(own, nested):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def modules(self) -> Iterator["Module"]:
        yield self
        for _, child in self.named_children():
            yield from child.modules()

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def to(self, backend: "str | Backend | None" = None, dtype=None) -> "Module":
        """Move every parameter and every other tensor attribute (a frozen embedding table), in
        place, to another backend and/or dtype."""
        be = get_backend(backend) if backend is not None else None
        tensors = {id(t): t for m in self.modules() for t in vars(m).values()
                   if isinstance(t, Tensor) and t.is_leaf()}
        for p in tensors.values():
            target_be = be or p.backend
            target_dt = as_dtype(dtype) if dtype is not None and p.dtype.is_floating else p.dtype
            p._data = target_be.array(p.numpy(), target_dt)
            p.backend = target_be
            p.grad = None
        return self

    def state_dict(self) -> dict[str, np.ndarray]:
        return {n: p.numpy().copy() for n, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        params = dict(self.named_parameters())
        missing = set(params) - set(state)
        if missing:
            raise KeyError(f"state dict is missing {sorted(missing)}")
        for n, p in params.items():
            arr = np.asarray(state[n])
            if tuple(arr.shape) != p.shape:
                raise ValueError(f"{n}: shape {arr.shape} does not match {p.shape}")
            p._data = p.backend.array(arr, p.dtype)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        inner = "\n".join(f"  ({n}): " + repr(c).replace("\n", "\n  ") for n, c in children)
        return f"{type(self).__name__}(\n{inner}\n)"


def _init_rng(seed: int | None) -> np.random.Generator:
    from . import api
    return np.random.default_rng(seed) if seed is not None else api._seed_rng


class Linear(Module):
    """y = x Wᵀ + b, W of shape (out, in); PyTorch's init U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=float64,
                 backend: "str | Backend" = "numpy", seed: int | None = None):
        super().__init__()
        rng = _init_rng(seed)
        bound = 1.0 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(rng.uniform(-bound, bound, (out_features, in_features)), dtype=dtype,
                                backend=backend, name="weight")
        self.bias = Parameter(rng.uniform(-bound, bound, (out_features,)), dtype=dtype, backend=backend,
                              name="bias") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table of vectors; the backward pass is a scatter-add into its rows."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=float64, backend: "str | Backend" = "numpy",
                 seed: int | None = None, weight=None, trainable: bool = True):
        super().__init__()
        rng = _init_rng(seed)
        data = rng.standard_normal((num_embeddings, embedding_dim)) if weight is None else np.asarray(weight)
        self.num_embeddings, self.embedding_dim = data.shape
        if trainable:
            self.weight = Parameter(data, dtype=dtype, backend=backend, name="embedding")
        else:
            self.weight = Tensor(data, dtype=dtype, backend=backend, name="embedding")

    def forward(self, indices) -> Tensor:
        return F.embedding(indices, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.relu()


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sequential(Module):
    def __init__(self, *layers: Module):
        super().__init__()
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)
