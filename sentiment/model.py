"""HW2's sentiment network, written with ``engine.nn``.

    word vectors (B, L, D) --masked mean over real tokens--> (B, D)
      -> Linear(D, 32) -> ReLU -> Dropout(0.5) -> Linear(32, 1) -> sigmoid -> P(positive)

Padding: a batch is padded to its longest sentence with zero vectors and a 0/1 mask, and the
mean divides by each sentence's real length. HW2 averaged over the padded length instead,
which scales every sentence vector by len/max_len: short sentences shrink towards zero and
the scale of the input then encodes length, not sentiment; with the mask, a sentence's
prediction does not depend on the other sentences in its batch or on the padding length.

Loss: binary cross-entropy computed from the logit (``max(z,0) - z*y + log(1+exp(-|z|))``),
which never produces NaN or inf, even where sigmoid(z) rounds to exactly 0 or 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import functional as F
from engine import nn
from engine.backends import Backend, get_backend
from engine.dtypes import as_dtype, float64
from engine.tensor import Tensor


class SeededDropout(nn.Module):
    """Inverted dropout whose masks come from the module's own NumPy generator.

    The backend's generator is shared by every tensor (and every training thread); a private
    generator keeps a seeded training run reproducible while other sessions train too.
    The mask enters the graph as a constant, so the op is one elementwise ``mul``.
    """

    def __init__(self, p: float = 0.5, seed: int | None = 0):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = (self.rng.random(x.shape) >= self.p) * (1.0 / (1.0 - self.p))
        mask = Tensor._make(x.backend.array(keep, x.dtype), x.backend)
        return x * mask

    def extra_repr(self) -> str:
        return f"p={self.p}"


class SentimentNet(nn.Module):
    """HW2's network: masked mean of word vectors -> Linear -> ReLU -> Dropout -> Linear -> sigmoid."""

    def __init__(self, embedding_dim: int = 50, hidden: int = 32, dropout: float = 0.5,
                 backend: "str | Backend" = "numpy", dtype=float64, seed: int | None = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        seeds = rng.integers(0, 2**31, size=3)
        self.embedding_dim, self.hidden = embedding_dim, hidden
        self.fc1 = nn.Linear(embedding_dim, hidden, dtype=dtype, backend=backend, seed=int(seeds[0]))
        self.relu = nn.ReLU()
        self.dropout = SeededDropout(dropout, seed=int(seeds[1]))
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

    def logits(self, embeddings: Tensor, mask: Tensor | None = None) -> Tensor:
        """The pre-sigmoid score, shape (B,)."""
        h = self.dropout(self.relu(self.fc1(self.pool(embeddings, mask))))
        return self.fc2(h).reshape(-1)

    def forward(self, embeddings: Tensor, mask: Tensor | None = None) -> Tensor:
        """P(positive) for each sentence, shape (B,)."""
        return F.sigmoid(self.logits(embeddings, mask))

    def loss(self, embeddings: Tensor, mask: Tensor | None, labels) -> tuple[Tensor, Tensor]:
        """Mean binary cross-entropy (from logits, stable) and the logits."""
        z = self.logits(embeddings, mask)
        return F.binary_cross_entropy_with_logits(z, labels), z

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
            LayerInfo("sigmoid", "sigmoid -> P(positive)", "(B,)", 0),
        ]


@dataclass(frozen=True)
class LayerInfo:
    name: str
    description: str
    output_shape: str
    n_params: int


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
