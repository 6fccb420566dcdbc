"""HW2's sentiment network, written with ``engine.nn``: the one definition every part of the project uses.

    word vectors (B, L, D) --mean over real tokens--> (B, D)
      -> Linear(D, H) -> ReLU -> Dropout(p) -> Linear(H, 1) -> sigmoid -> P(positive)
      loss: binary cross-entropy of P(positive) against the 0/1 label (mean over the batch)

The trainer (:mod:`sentiment.trainer`), the Network explorer's HW2 preset, the compiled training
step of the Static vs dynamic page and ``benchmarks/hw2_step.py`` / ``benchmarks/compiled_step.py``
all build this module and run :func:`training_step` (or its forward pass), so they cannot drift apart.

Padding: a batch is padded to its longest sentence with zero vectors and a 0/1 mask, and the
mean divides by each sentence's real length (HW2's padding-excluded mean). Averaging over the
padded length instead would scale every sentence vector by len/max_len: short sentences would
shrink towards zero and a prediction would depend on the other sentences of its batch.

Loss: HW2's ``sigmoid`` then ``binary_cross_entropy`` (the engine's fused BCE primitive, whose logs
are clamped at -100 as in PyTorch: no NaN or inf even where sigmoid rounds to exactly 0 or 1).

Dropout is the engine's own ``nn.Dropout`` (the ``dropout_mask`` primitive draws a bool mask, ``dropout`` applies it), so its masks come from
the backend's per-thread generator: ``engine.manual_seed`` (or ``backend.seed``) makes a run
reproducible, and ``engine.static.compile`` replays the mask op, drawing a fresh mask every step.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, ContextManager, Sequence

import numpy as np

from engine import functional as F
from engine import nn, optim
from engine.backends import Backend, get_backend
from engine.dtypes import as_dtype, float64
from engine.tensor import Tensor

#: ``scope(name)`` -> a context manager naming the layer that the ops run inside it belong to
#: (the Network explorer passes its own, to draw one box per layer); the default does nothing.
ScopeFn = Callable[[str], ContextManager]


_NO_SCOPE = nullcontext()   # reusable: it holds nothing (one object for every layer of every step)


def _no_scope(name: str) -> ContextManager:
    return _NO_SCOPE


class SentimentNet(nn.Module):
    """HW2's network: masked mean of word vectors -> Linear -> ReLU -> Dropout -> Linear -> sigmoid."""

    #: its forward pass has no Python control flow that depends on the data: every batch of one shape
    #: runs the same ops, so a training step traced once (``engine.static.compile``) replays it exactly.
    #: A subclass whose forward branches on values sets this to False (the trainer then runs eagerly).
    static_graph = True

    def __init__(self, embedding_dim: int = 50, hidden: int = 32, dropout: float = 0.5,
                 backend: "str | Backend" = "numpy", dtype=float64, seed: int | None = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        seeds = rng.integers(0, 2**31, size=3)   # seeds[1] is unused (kept: the same initial weights)
        self.embedding_dim, self.hidden = embedding_dim, hidden
        self.fc1 = nn.Linear(embedding_dim, hidden, dtype=dtype, backend=backend, seed=int(seeds[0]))
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, 1, dtype=dtype, backend=backend, seed=int(seeds[2]))

    @property
    def backend(self) -> Backend:
        return self.fc1.weight.backend

    @property
    def dtype(self):
        return self.fc1.weight.dtype

    def pool(self, embeddings: Tensor, mask: Tensor | None = None) -> Tensor:
        """Mean over the real tokens: (B, L, D) word vectors and a (B, L) 0/1 mask -> (B, D)."""
        if mask is None:
            return F.mean(embeddings, dim=1)
        lengths = mask.sum(1, keepdim=True)                     # (B, 1), constant
        summed = (embeddings * mask.unsqueeze(-1)).sum(1)       # (B, D)
        return summed / lengths

    def hidden_units(self, embeddings: Tensor, mask: Tensor | None = None, scope: ScopeFn = _no_scope) -> Tensor:
        """The ReLU layer's output (B, H), before dropout (what "dead ReLU" statistics look at)."""
        with scope("mean over words"):
            s = self.pool(embeddings, mask)
        return self.hidden_of_pooled(s, scope)

    def hidden_of_pooled(self, pooled: Tensor, scope: ScopeFn = _no_scope) -> Tensor:
        """The ReLU layer's output (B, H) from sentence vectors (B, D) that :meth:`pool` made."""
        with scope("Linear 1"):
            h = self.fc1(pooled)
        with scope("ReLU"):
            return self.relu(h)

    def logits(self, embeddings: Tensor, mask: Tensor | None = None, scope: ScopeFn = _no_scope) -> Tensor:
        """The pre-sigmoid score, shape (B,)."""
        return self._head(self.hidden_units(embeddings, mask, scope), scope)

    def logits_of_pooled(self, pooled: Tensor, scope: ScopeFn = _no_scope) -> Tensor:
        """The pre-sigmoid score (B,) from sentence vectors (B, D) that :meth:`pool` made (the same ops
        as :meth:`logits` after the mean: frozen word vectors give the same sentence vectors every time)."""
        return self._head(self.hidden_of_pooled(pooled, scope), scope)

    def _head(self, h: Tensor, scope: ScopeFn) -> Tensor:
        with scope("Dropout"):
            h = self.dropout(h)
        with scope("Linear 2"):
            return self.fc2(h).reshape(-1)

    def forward(self, embeddings: Tensor, mask: Tensor | None = None, scope: ScopeFn = _no_scope) -> Tensor:
        """P(positive) for each sentence, shape (B,)."""
        z = self.logits(embeddings, mask, scope)
        with scope("sigmoid"):
            return F.sigmoid(z)

    def loss(self, embeddings: Tensor, mask: Tensor | None, labels, scope: ScopeFn = _no_scope
             ) -> tuple[Tensor, Tensor]:
        """HW2's loss: mean binary cross-entropy of sigmoid(logits) against ``labels`` (B,); also the logits."""
        return self._loss_of_logits(self.logits(embeddings, mask, scope), labels, scope)

    def loss_of_pooled(self, pooled: Tensor, labels, scope: ScopeFn = _no_scope) -> tuple[Tensor, Tensor]:
        """:meth:`loss` from sentence vectors (B, D) that :meth:`pool` made (or the same numbers made
        elsewhere: the trainer's sparse mode sums the word vectors itself); also the logits."""
        return self._loss_of_logits(self.logits_of_pooled(pooled, scope), labels, scope)

    def _loss_of_logits(self, z: Tensor, labels, scope: ScopeFn) -> tuple[Tensor, Tensor]:
        with scope("sigmoid"):
            p = F.sigmoid(z)
        with scope("BCE loss"):
            return F.binary_cross_entropy(p, labels), z

    def layers_summary(self) -> list["LayerInfo"]:
        """The network's stages, collapsed to one row each (for drawing)."""
        d, h = self.embedding_dim, self.hidden
        return [
            LayerInfo("input", "word vectors", f"(B, L, {d})", 0),
            LayerInfo("mean", "mean over real tokens (mask)", f"(B, {d})", 0),
            LayerInfo("fc1", f"Linear({d}, {h})", f"(B, {h})", self.fc1.weight.numel() + self.fc1.bias.numel()),
            LayerInfo("relu", "ReLU", f"(B, {h})", 0),
            LayerInfo("dropout", f"Dropout(p={self.dropout.p})", f"(B, {h})", 0),
            LayerInfo("fc2", f"Linear({h}, 1)", "(B, 1)", self.fc2.weight.numel() + self.fc2.bias.numel()),
            LayerInfo("sigmoid", "sigmoid → P(positive)", "(B,)", 0),
        ]


@dataclass(frozen=True)
class LayerInfo:
    name: str
    description: str
    output_shape: str
    n_params: int


# ---------------------------------------------------------------------------
# the training step (eager, or captured once and replayed by engine.static.compile)


def training_step(model: SentimentNet, optimizer: optim.Optimizer,
                  check: Callable[[Tensor], None] | None = None) -> Callable:
    """HW2's training step as a function of tensors: ``step(embeddings, mask, labels) -> (loss, logits)``.

    zero_grad, forward, BCE, backward, ``optimizer.step()``. ``mask`` may be None (no padding: a
    plain mean). ``check(loss)`` runs before the backward pass and may raise to skip the update (the
    trainer stops on a non-finite loss there). Pass the function to
    ``engine.static.compile(step, optimizer=optimizer)`` to capture it once and replay it (a replay
    does not call ``check``).
    """
    def step(embeddings: Tensor, mask: Tensor | None, labels: Tensor):
        optimizer.zero_grad()
        loss, logits = model.loss(embeddings, mask, labels)
        if check is not None:
            check(loss)
        loss.backward()
        optimizer.step()
        return loss, logits

    return step


def model_from_arrays(params: Sequence[np.ndarray], dropout: float = 0.5, backend: "str | Backend" = "numpy"
                      ) -> SentimentNet:
    """A :class:`SentimentNet` holding ``[W1 (H, D), b1 (H,), W2 (1, H), b2 (1,)]`` (their dtype is used)."""
    hidden, dim = params[0].shape
    net = SentimentNet(dim, hidden, dropout, backend=backend, dtype=str(np.asarray(params[0]).dtype))
    net.load_state_dict({"fc1.weight": params[0], "fc1.bias": params[1], "fc2.weight": params[2],
                         "fc2.bias": params[3]})
    return net


def hw2_step(params: Sequence[np.ndarray], backend: "str | Backend" = "numpy", lr: float = 1e-3,
             compiled: bool = False) -> tuple[Callable, SentimentNet, optim.Adam]:
    """``(step, model, optimizer)``: HW2's step with Adam on a network holding ``params``.

    ``step(embeddings, mask, labels)`` returns ``(loss, logits)``; with ``compiled`` it is the
    same step captured on its first call by ``engine.static.compile`` and replayed afterwards
    (what the benchmarks time as "engine compiled" and the Static vs dynamic page shows).
    """
    model = model_from_arrays(params, backend=backend)
    opt = optim.Adam(model.parameters(), lr=lr)
    step = training_step(model, opt)
    if compiled:
        from engine.static import compile as compile_step
        step = compile_step(step, optimizer=opt)
    return step, model, opt


# ---------------------------------------------------------------------------
# inputs


def batch_tensors(table: np.ndarray, ids: np.ndarray, backend: "str | Backend" = "numpy",
                  dtype=float64, table_tensor: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Word vectors and mask of a batch of padded ids (0 = padding), gathered by the engine.

    Args:
        table: (V, D) embedding table (row 0 = padding); ignored when ``table_tensor`` is given.
        ids: (B, L) int token ids.
        table_tensor: the table already on the backend (saves moving it every batch).

    Returns:
        ``(embeddings (B, L, D), mask (B, L))``, constants (no gradient).
    """
    be = get_backend(backend) if table_tensor is None else table_tensor.backend
    dt = as_dtype(dtype) if table_tensor is None else table_tensor.dtype
    if table_tensor is None:
        table_tensor = Tensor._make(be.array(table, dt), be)
    ids = np.asarray(ids, dtype=np.int64)
    emb = F.embedding(ids, table_tensor)
    mask = Tensor._make(be.array((ids != 0).astype(np.float64), dt), be)
    return emb, mask


def vectors_tensor(vectors: np.ndarray, backend: "str | Backend" = "numpy", dtype=float64) -> Tensor:
    """One sentence's (L, D) vectors as a (1, L, D) constant tensor."""
    be = get_backend(backend)
    return Tensor._make(be.array(np.asarray(vectors)[None], as_dtype(dtype)), be)
