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
from explorer.explain import harness
from explorer.explain.trace import run_forward
from explorer.kit import presets
from explorer.network_explorer import presets as network_presets
from explorer.student_code.graphs import LECTURE_GRAPHS


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
    """A textbook HW2 topological sort (DFS post-order with an explicit stack, constants skipped), written
    here for the test."""
    order, seen, stack = [], set(), [(variable, False)]
    while stack:
        v, expanded = stack.pop()
        if expanded:
            order.append(v)
        elif v.unique_id not in seen and not v.is_constant():
            seen.add(v.unique_id)
            stack.append((v, True))
            stack.extend((p, False) for p in v.parents)
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


# every graph the explorer builds from text: the pages' presets, the HW2-code page's graphs, random DAGs,
# doubling chains, and the tree programs of the statistics
PROGRAMS = ([(p.program, p.inputs) for p in presets.PRESETS] +
            [(s.program, s.inputs) for s in LECTURE_GRAPHS] +
            [harness.random_dag_program(12, seed) for seed in range(20)] +
            [harness.random_tree_program(8, seed) for seed in range(5)] +
            [harness.doubling_chain_program(d) for d in (1, 4)])


def _check_protocol_and_hw2_gradients(output, leaves: dict) -> None:
    """Every node reachable from ``output`` speaks the protocol, and a textbook HW2 backpropagate gives the
    engine's own gradients."""
    seed = tensor(np.ones(output.shape), dtype=output.dtype)
    for leaf in leaves.values():
        leaf.grad = None
    output.backward(seed, retain_graph=True)  # the protocol walk and HW2's backpropagate below reuse the graph
    want = {name: leaf.grad.numpy() for name, leaf in leaves.items() if leaf.grad is not None}
    for leaf in leaves.values():
        leaf.grad = None
    stack, seen = [output], set()
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
    _hw2_backpropagate(output, seed)
    for name, leaf in leaves.items():
        got = leaf.grad.numpy() if leaf.grad is not None else None
        if name not in want:
            assert got is None, name
            continue
        np.testing.assert_allclose(got, want[name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("program,inputs", PROGRAMS, ids=[p[0].splitlines()[-1][:30] for p in PROGRAMS])
def test_every_node_of_a_parsed_program_speaks_the_protocol(program, inputs):
    fw = run_forward(program, inputs)
    _check_protocol_and_hw2_gradients(fw.output, fw.leaves)


def test_the_notes_deep_chain_speaks_the_protocol():
    out, x = harness.deep_chain(3000)
    _check_protocol_and_hw2_gradients(out, {"x1": x})
    assert x.grad.item() == pytest.approx(1.0002 ** 3000, rel=1e-12)


@pytest.mark.parametrize("key", [k for k in network_presets.PRESETS if k not in ("hw2", "sentiment")] +
                         [pytest.param(k, marks=pytest.mark.slow) for k in ("hw2", "sentiment")])
def test_every_network_of_the_network_explorer_speaks_the_protocol(key):
    net = network_presets.build(key)
    _check_protocol_and_hw2_gradients(net.loss(), net.leaves())
