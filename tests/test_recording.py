"""The one forward recorder (engine.recording) and the op declarations' multiply-adds it sums."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import nn, ops


@pytest.mark.parametrize("a_shape, b_shape, fn, expected", [
    ((4, 3), (3, 5), lambda a, b: a @ b, 4 * 3 * 5),            # m k n
    ((2, 4, 3), (3, 5), lambda a, b: a @ b, 2 * 4 * 3 * 5),     # a batch of products
    ((3,), (3, 5), lambda a, b: a @ b, 3 * 5),                  # a vector times a matrix
    ((4, 3), (5, 3), lambda a, b: ops.matmul_t(a, b), 4 * 3 * 5),
])
def test_a_matrix_product_counts_k_multiply_adds_per_output_number(a_shape, b_shape, fn, expected):
    rng = np.random.default_rng(0)
    a, b = engine.tensor(rng.standard_normal(a_shape)), engine.tensor(rng.standard_normal(b_shape))
    with engine.recording() as ran:
        fn(a, b)
    assert len(ran) == 1 and ran.multiply_adds == expected
    # the same count by hand: every output number is a dot product of length k
    assert ran[0].out.numel() * a_shape[-1] == expected


def test_recording_lists_every_op_in_order_and_elementwise_ops_count_none():
    x = engine.tensor(np.ones((4, 3)), requires_grad=True)
    layer = nn.Linear(3, 2, seed=0)
    with engine.recording() as ran:
        y = layer(x).relu().sum()
    assert ran.names == ["linear", "relu", "sum"]
    assert [r.multiply_adds for r in ran] == [4 * 3 * 2, 0, 0]
    assert ran[-1].out is y and ran[0].inputs[0] is x
    with engine.recording() as back:
        y.backward()
    # a watched backward runs each VJP rule as engine ops: Linear's x̄ = ȳ W (4x2 @ 2x3) and W̄ = ȳᵀ x
    # (2x4 @ 4x3) are two products of 24 multiply-adds each
    assert back.names.count("matmul") == 2 and back.multiply_adds == 2 * 24


def test_the_cost_estimate_counts_the_same_multiply_adds_before_running():
    """A typed program's estimate (abstract shapes, nothing computed) counts a product's multiply-adds from
    the same declaration: the work of `A @ B` grows by m·k·n over an elementwise op of the same output."""
    from explorer.explain import parse_program
    prod = parse_program("f = sum(A @ B)").estimate({"A": (6, 40), "B": (40, 7)})
    elem = parse_program("f = sum(A * B)").estimate({"A": (6, 7), "B": (6, 7)})
    assert prod.work - elem.work == 6 * 40 * 7
