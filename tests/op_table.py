"""The one op table that drives forward and gradient tests on every backend.

Each row: a name, the engine function, the NumPy reference, input shapes and a
domain for the random inputs (so log sees positives, max sees distinct values).
Every primitive in ``engine.ops.PRIMITIVES`` runs in the forward pass of some row
(tests/test_ops.py checks it), so each has its forward, VJP, JVP and second order checked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import engine
from engine import functional as F
from engine import ops
from engine.tensor import apply


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


@dataclass
class OpCase:
    name: str
    fn: Callable                       # engine function of tensors
    ref: Callable                      # NumPy function of arrays
    shapes: list[tuple[int, ...]]
    domain: str = "any"                # any | positive | nonzero | distinct | prob | unit
    consts: dict = field(default_factory=dict)   # extra non-differentiable numpy inputs (passed as kwargs)
    gradcheck: dict = field(default_factory=dict)  # tolerance overrides (eps, atol, rtol), with the reason at the row

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        out = []
        for shape in self.shapes:
            if self.domain == "positive":
                x = rng.uniform(0.5, 2.0, shape)
            elif self.domain == "nonzero":
                x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
            elif self.domain == "distinct":
                n = int(np.prod(shape))
                x = (rng.permutation(n).reshape(shape) * 0.37 + rng.uniform(0, 0.1, shape))
            elif self.domain == "prob":
                x = rng.uniform(0.05, 0.95, shape)
            elif self.domain == "relu":
                x = rng.uniform(0.1, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
            else:
                x = rng.standard_normal(shape)
            out.append(np.asarray(x, dtype=np.float64))
        return out


IDX = np.array([[0, 2, 2], [3, 0, 1]])  # row 2 and row 0 used twice: scatter-add must sum
INDEX_KEY = (slice(1, None), slice(None, None, 2))
DROPOUT_KEEP = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])


def _idx(like):
    return engine.tensor(IDX, backend=like.backend)


def _np_scatter_add(s):
    out = np.zeros((4, 3))
    np.add.at(out, IDX.reshape(-1), s.reshape(-1, 3))
    return out


def _np_index_add(s):
    out = np.zeros((3, 5))
    out[INDEX_KEY] += s
    return out


def _np_bce(p, y):
    return -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))
TARGET = np.array([0.0, 1.0, 1.0, 0.0])
CLASSES = np.array([2, 0, 1])

OP_TABLE: list[OpCase] = [
    OpCase("add", lambda a, b: a + b, np.add, [(2, 3), (2, 3)]),
    OpCase("add_broadcast", lambda a, b: a + b, np.add, [(3, 1), (1, 4)]),
    OpCase("add_scalar_const", lambda a: 2.5 + a, lambda a: 2.5 + a, [(2, 3)]),
    OpCase("sub_broadcast", lambda a, b: a - b, np.subtract, [(2, 3, 4), (4,)]),
    OpCase("mul", lambda a, b: a * b, np.multiply, [(2, 3), (2, 3)]),
    OpCase("mul_broadcast", lambda a, b: a * b, np.multiply, [(2, 1, 3), (4, 1)]),
    OpCase("div", lambda a, b: a / b, np.divide, [(2, 3), (2, 3)], "nonzero"),
    OpCase("rdiv_const", lambda a: 1.0 / a, lambda a: 1.0 / a, [(3,)], "nonzero"),
    OpCase("neg", lambda a: -a, np.negative, [(2, 3)]),
    OpCase("reciprocal", ops.reciprocal, np.reciprocal, [(4,)], "nonzero"),
    OpCase("pow3", lambda a: a ** 3, lambda a: a ** 3, [(2, 3)]),
    OpCase("pow_half", lambda a: a ** 0.5, np.sqrt, [(2, 3)], "positive"),
    OpCase("pow_neg", lambda a: a ** -1.5, lambda a: a ** -1.5, [(3,)], "positive"),
    OpCase("rpow", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [(3,)]),
    OpCase("exp", lambda a: a.exp(), np.exp, [(2, 3)]),
    OpCase("log", lambda a: a.log(), np.log, [(2, 3)], "positive"),
    OpCase("sin_cos", lambda a, b: ops.sin(a) * ops.cos(b), lambda a, b: np.sin(a) * np.cos(b), [(2, 3), (2, 3)]),
    OpCase("tan", ops.tan, np.tan, [(2, 3)], domain="prob"),   # in (0.05, 0.95): away from tan's poles
    OpCase("relu", lambda a: a.relu(), lambda a: np.maximum(a, 0), [(2, 3)], "relu"),
    OpCase("sigmoid", lambda a: a.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), [(2, 3)]),
    OpCase("tanh", lambda a: a.tanh(), np.tanh, [(2, 3)]),
    OpCase("abs", lambda a: a.abs(), np.abs, [(5,)], "relu"),
    OpCase("clamp", lambda a: F.clamp(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [(6,)], "distinct"),
    OpCase("sum_all", lambda a: a.sum(), np.sum, [(2, 3)]),
    OpCase("sum_dim", lambda a: a.sum(1), lambda a: a.sum(1), [(2, 3, 4)]),
    OpCase("sum_dims_keepdim", lambda a: a.sum((0, 2), keepdim=True),
           lambda a: a.sum((0, 2), keepdims=True), [(2, 3, 4)]),
    OpCase("mean", lambda a: a.mean(0), lambda a: a.mean(0), [(3, 4)]),
    OpCase("mean_all", lambda a: a.mean(), np.mean, [(2, 3)]),
    OpCase("mean_dims_keepdim", lambda a: a.mean((0, 2), keepdim=True),
           lambda a: a.mean((0, 2), keepdims=True), [(2, 3, 4)]),
    OpCase("max_all", lambda a: a.max(), np.max, [(3, 4)], "distinct"),
    OpCase("max_dim", lambda a: a.amax(1), lambda a: a.max(1), [(3, 4)], "distinct"),
    OpCase("max_dim_keepdim", lambda a: a.amax(0, keepdim=True), lambda a: a.max(0, keepdims=True),
           [(3, 4)], "distinct"),
    OpCase("max_dim_values", lambda a: a.max(-1).values, lambda a: a.max(-1), [(3, 4)], "distinct"),
    OpCase("matmul", lambda a, b: a @ b, np.matmul, [(2, 3), (3, 4)]),
    OpCase("matmul_batched", lambda a, b: a @ b, np.matmul, [(2, 2, 3), (2, 3, 2)]),
    OpCase("matmul_broadcast_batch", lambda a, b: a @ b, np.matmul, [(2, 2, 3), (3, 2)]),
    OpCase("matmul_vec_right", lambda a, b: a @ b, np.matmul, [(2, 3), (3,)]),
    OpCase("matmul_vec_left", lambda a, b: a @ b, np.matmul, [(3,), (3, 2)]),
    OpCase("matmul_dot", lambda a, b: a @ b, np.matmul, [(4,), (4,)]),
    OpCase("permute", lambda a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [(2, 3, 4)]),
    OpCase("transpose", lambda a: a.T, lambda a: a.T, [(2, 3)]),
    OpCase("view", lambda a: a.view(3, 2), lambda a: a.reshape(3, 2), [(2, 3)]),
    OpCase("reshape_permuted", lambda a: a.T.reshape(-1), lambda a: a.T.reshape(-1), [(2, 3)]),
    OpCase("expand", lambda a: a.expand(3, 2, 4), lambda a: np.broadcast_to(a, (3, 2, 4)), [(2, 1)]),
    OpCase("unsqueeze_squeeze", lambda a: a.unsqueeze(1).squeeze(1) * a.unsqueeze(0),
           lambda a: a * a[None], [(3,)]),
    OpCase("getitem", lambda a: a[1:, ::2], lambda a: a[1:, ::2], [(3, 5)]),
    OpCase("getitem_int", lambda a: a[1] * 2.0, lambda a: a[1] * 2.0, [(3, 2)]),
    OpCase("where", lambda a, b: ops.where(a > b, a, b), lambda a, b: np.where(a > b, a, b),
           [(3, 4), (3, 4)], "distinct"),
    OpCase("gather_repeated", lambda t: ops.gather(t, IDX), lambda t: t[IDX], [(4, 3)]),
    OpCase("softmax", lambda a: a.softmax(-1), _np_softmax, [(2, 5)]),
    OpCase("log_softmax", lambda a: a.log_softmax(1), lambda a: np.log(_np_softmax(a, 1)), [(3, 4)]),
    OpCase("logsumexp", lambda a: a.logsumexp(1), lambda a: _np_logsumexp(a, 1), [(3, 4)]),
    OpCase("linear", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w.T + b, [(4, 3), (2, 3), (2,)]),
    # nn.Linear's one node (ops.Linear) on a batch of sequences and on one vector; a bias that only
    # broadcasts takes matmul_t and the add
    OpCase("linear_batched", lambda x, w, b: ops.linear(x, w, b), lambda x, w, b: x @ w.T + b,
           [(2, 3, 4), (5, 4), (5,)]),
    OpCase("linear_vector", lambda x, w, b: ops.linear(x, w, b), lambda x, w, b: x @ w.T + b, [(4,), (3, 4), (3,)]),
    OpCase("linear_broadcast_bias", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w.T + b,
           [(4, 3), (2, 3), (4, 1)]),
    # Linear's x @ Wᵀ (ops.MatMulT) on a batch of sequences and on one vector: W's gradient sums every row
    OpCase("matmul_t_batched", lambda x, w: ops.matmul_t(x, w), lambda x, w: x @ w.T, [(2, 3, 4), (5, 4)]),
    OpCase("matmul_t_vector", lambda x, w: ops.matmul_t(x, w), lambda x, w: x @ w.T, [(4,), (3, 4)]),
    OpCase("bce", lambda p: F.binary_cross_entropy(p, TARGET),
           lambda p: -np.mean(TARGET * np.log(p) + (1 - TARGET) * np.log(1 - p)), [(4,)], "prob"),
    OpCase("bce_logits", lambda z: F.binary_cross_entropy_with_logits(z, TARGET),
           lambda z: -np.mean(TARGET * np.log(1 / (1 + np.exp(-z))) + (1 - TARGET) * np.log(1 - 1 / (1 + np.exp(-z)))),
           [(4,)]),
    OpCase("cross_entropy", lambda z: F.cross_entropy(z, CLASSES),
           lambda z: -np.mean(np.log(_np_softmax(z, 1))[np.arange(3), CLASSES]), [(3, 4)]),
    OpCase("mse", lambda a, b: F.mse_loss(a, b), lambda a, b: np.mean((a - b) ** 2), [(5,), (5,)]),
    OpCase("composite_slide", lambda x1, x2: x1 + (1.5 * x1 + 2.0 * x2).exp(),
           lambda x1, x2: x1 + np.exp(1.5 * x1 + 2.0 * x2), [(), ()]),
    OpCase("fan_out", lambda x: x * x * x + x.exp() * x, lambda x: x ** 3 + np.exp(x) * x, [(3,)]),
    # primitives that composites reach only inside a VJP, or that have no gradient: their own rows
    OpCase("step", lambda a: ops.step(a) * a, lambda a: np.where(a > 0, a, 0.0), [(2, 3)], "relu"),
    OpCase("argmax", lambda a: a.amax(1) * ops.argmax(a, 1), lambda a: a.max(1) * a.argmax(1), [(3, 4)], "distinct"),
    OpCase("cast_to_int", lambda a: ops.cast(a * 4.0, "int64") * a, lambda a: (a * 4.0).astype(np.int64) * a,
           [(2, 3)], "nonzero"),
    # float32 rounding is ~6e-8 |x|: a wide step keeps central differences above it
    OpCase("cast_float32_roundtrip", lambda a: ops.cast(ops.cast(a, "float32") * 2.0, a.dtype),
           lambda a: a.astype(np.float32).astype(np.float64) * 2.0, [(2, 3)],
           gradcheck={"eps": 1e-2, "atol": 1e-4, "rtol": 1e-4}),
    OpCase("contiguous", lambda a: a.T.contiguous() * 2.0, lambda a: a.T * 2.0, [(2, 3)]),
    OpCase("index_add", lambda s: apply(ops.IndexAdd, (s,), ((3, 5), INDEX_KEY)), _np_index_add, [(2, 3)]),
    OpCase("scatter_add", lambda s: apply(ops.ScatterAdd, (s, _idx(s)), (4, 3)), _np_scatter_add, [(2, 3, 3)]),
    OpCase("bce_soft_targets", lambda p, y: ops.binary_cross_entropy(p, y), _np_bce, [(4,), (4,)], "prob"),
    # the loss's reduction in BCE's own node (as PyTorch): elementwise, the sum, the mean of a matrix, and
    # the mean with a learned target (its logs in the rule: both interpreters run them)
    OpCase("bce_elementwise", lambda p: ops.binary_cross_entropy(p, TARGET), lambda p: _np_bce(p, TARGET), [(4,)],
           "prob"),
    OpCase("bce_sum", lambda p: F.binary_cross_entropy(p, TARGET, reduction="sum"),
           lambda p: np.sum(_np_bce(p, TARGET)), [(4,)], "prob"),
    OpCase("bce_mean_matrix", lambda p: F.binary_cross_entropy(p, np.stack([TARGET, 1 - TARGET, TARGET])),
           lambda p: np.mean(_np_bce(p, np.stack([TARGET, 1 - TARGET, TARGET]))), [(3, 4)], "prob"),
    OpCase("bce_mean_soft_targets", lambda p, y: F.binary_cross_entropy(p, y), lambda p, y: np.mean(_np_bce(p, y)),
           [(4,), (4,)], "prob"),
    OpCase("bce_grad", lambda p, y: apply(ops.BCEGrad, (p, y)),
           lambda p, y: (p - y) / np.maximum(p * (1 - p), 1e-12), [(4,), (4,)], "prob"),
    # random primitives inside deterministic functions: a mask is True or False; uniform draws lie in (0, 1)
    OpCase("dropout_mask", lambda a: a + (lambda m: m * (m - 1.0))(ops.dropout_mask(a, 0.5).to(dtype=a.dtype)),
           lambda a: a, [(3, 4)]),
    OpCase("dropout", lambda a: apply(ops.Dropout, (a, engine.tensor(DROPOUT_KEEP, backend=a.backend)), 1.0 / 0.3),
           lambda a: a * DROPOUT_KEEP / 0.3, [(3, 4)]),
    OpCase("uniform", lambda a: a * ops.step(ops.uniform(a.shape, a)) * ops.step(1.0 - ops.uniform(a.shape, a)),
           lambda a: a, [(3, 4)]),
    # a 0-d tensor takes dim 0 / -1 as PyTorch does (softmax of a scalar is 1)
    OpCase("reduce_0d_dim", lambda x: x.sum(0) * x.amax(-1) + x.mean(0) + x.softmax(-1) * x + x.logsumexp(0),
           lambda x: x * x + x + x + x, [()]),
]

OPS_BY_NAME = {c.name: c for c in OP_TABLE}
