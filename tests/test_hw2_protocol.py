"""The engine's tensors seen through HW2's ``Variable`` protocol, whatever the scalar fast path keeps inside.

HW2's problem 1 is written against ``unique_id``, ``parents``, ``is_leaf()``, ``is_constant()``,
``chain_rule(d_output)`` and ``accumulate_derivative(x)``: ``parents`` and ``chain_rule`` must hand out
Variables only (never the raw ``1.5`` the fast path keeps in ``1.5 * x1``), each with a Tensor derivative
of the parent's shape.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine import Tensor, tensor
from engine.explain import harness
from engine.explain.trace import run_forward


def _is_variable(v) -> bool:
    return all(hasattr(v, a) for a in ("unique_id", "parents", "is_leaf", "is_constant", "chain_rule",
                                       "accumulate_derivative")) and isinstance(v.unique_id, int)


def test_chain_rule_on_the_scalar_fast_path_yields_variables_with_tensor_derivatives():
    x1 = tensor(3.0, requires_grad=True)
    y = 1.5 * x1                      # the fast path keeps 1.5 as a number in the history
    pairs = list(y.chain_rule(tensor(1.0)))
    assert all(_is_variable(p) for p, _ in pairs), pairs
    assert all(isinstance(d, Tensor) for _, d in pairs), pairs
    assert [p is x1 for p, _ in pairs] == [True]
    assert pairs[0][1].item() == 1.5
    for y in (x1 * 1.5, x1 / 4.0, 4.0 / x1, x1 + 2.0, 2.0 - x1, x1 - 5):
        pairs = list(y.chain_rule(tensor(1.0)))
        assert pairs and all(_is_variable(p) and isinstance(d, Tensor) for p, d in pairs), (y, pairs)
        assert all(_is_variable(p) for p in y.parents)


def test_constants_are_variables_that_say_so():
    x1 = tensor(3.0, requires_grad=True)
    c = tensor(5.0)
    y = x1 * c
    assert [p.is_constant() for p in y.parents] == [False, True]
    for p, d in y.chain_rule(tensor(1.0)):
        assert _is_variable(p) and isinstance(d, Tensor)
        assert p is x1 or p.is_constant()


def test_a_derivative_has_its_parents_shape():
    W = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tensor([0.5, -0.5], requires_grad=True)
    y = W @ tensor([1.0, -1.0]) + b      # b broadcast-free; W @ x a vector
    s = (y * 2.0).sum()
    for node in (s, y):
        d = tensor(np.ones(node.shape))
        for p, g in node.chain_rule(d):
            assert isinstance(g, Tensor) and g.shape == p.shape, (node, p, g)


def _hw2_sort(variable):
    """A textbook HW2 topological sort (DFS post-order, constants skipped), written here for the test."""
    order, seen = [], set()

    def visit(v):
        if v.unique_id in seen or v.is_constant():
            return
        seen.add(v.unique_id)
        for p in v.parents:
            visit(p)
        order.append(v)
    visit(variable)
    return list(reversed(order))


def _hw2_backpropagate(variable, deriv):
    """A textbook HW2 backpropagate: calls ``is_constant()`` on what ``chain_rule`` yields."""
    derivs = {variable.unique_id: deriv}
    for v in _hw2_sort(variable):
        d = derivs.pop(v.unique_id, None)
        if d is None:
            continue
        if v.is_leaf():
            v.accumulate_derivative(d)
            continue
        for p, g in v.chain_rule(d):
            if p.is_constant():
                continue
            derivs[p.unique_id] = derivs[p.unique_id] + g if p.unique_id in derivs else g


def test_hw2_style_code_gets_the_slide_numbers():
    x1 = tensor(3.0, requires_grad=True)
    x2 = tensor(0.5, requires_grad=True)
    f = x1 + (1.5 * x1 + 2.0 * x2).exp()
    _hw2_backpropagate(f, tensor(1.0))
    assert x1.grad.item() == pytest.approx(1 + 1.5 * math.exp(5.5), rel=1e-12)   # 368.04
    assert x2.grad.item() == pytest.approx(2 * math.exp(5.5), rel=1e-12)         # 489.38
    assert round(x1.grad.item(), 2) == 368.04 and round(x2.grad.item(), 2) == 489.38


PROGRAMS = [
    ("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5"),
    ("f = x * x * x", "x = 2"),
    ("f = x1 - 5", "x1 = 3"),
    ("f = 5 * x * x", "x = 2"),
    ("f = 1 / (1 + exp(-(w * x)))", "w = 0.5, x = 2"),
    ("y = W @ x + b\nf = sum(tanh(y))", "W = [[1, 2], [3, 4]], x = [1, -1], b = [0.5, 0.5]"),
] + [harness.random_dag_program(12, seed) for seed in range(20)]


@pytest.mark.parametrize("program,inputs", PROGRAMS, ids=[p[0].splitlines()[-1][:30] for p in PROGRAMS])
def test_every_node_of_a_parsed_program_speaks_the_protocol(program, inputs):
    fw = run_forward(program, inputs)
    want = {}
    fw.output.backward(tensor(np.ones(fw.output.shape)))
    for name, leaf in fw.leaves.items():
        want[name] = leaf.grad.numpy()
        leaf.grad = None
    stack, seen = [fw.output], set()
    while stack:
        v = stack.pop()
        if v.unique_id in seen:
            continue
        seen.add(v.unique_id)
        assert _is_variable(v)
        for p in v.parents:
            assert _is_variable(p), (v, p)
            stack.append(p)
        if not v.is_leaf():
            for p, g in v.chain_rule(tensor(np.ones(v.shape))):
                assert _is_variable(p) and isinstance(g, Tensor) and g.shape == p.shape, (v, p, g)
    _hw2_backpropagate(fw.output, tensor(np.ones(fw.output.shape)))
    for name, leaf in fw.leaves.items():
        got = leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape)
        np.testing.assert_allclose(got, want[name], rtol=1e-12, atol=1e-12)
