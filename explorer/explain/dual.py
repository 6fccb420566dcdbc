"""Forward mode step by step: the dual numbers (value, tangent) each engine op carried forward.

Runs the program under ``engine.jvp`` (every primitive's JVP rule, the real forward mode) while
``trace_ops`` watches; the ops the program itself ran are matched, in execution order, to the
nodes of the forward graph from :func:`run_forward`, so the app can draw them on the same graph.
Ops that a JVP rule runs internally are counted separately (the cost of carrying tangents).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from engine import api
from engine.tensor import in_forward_mode, tensor, trace_ops
from .graph import Graph, plain_value
from .numbers import fmt
from .parser import ExpressionError, Program
from .trace import _as_program, run_forward


@dataclass
class DualStep:
    """Node ``node`` computed ``value`` and carried ``tangent`` (d node / d seed direction)."""
    index: int
    node: int
    op: str
    inputs: list[int]
    value: Any
    tangent: Any
    text: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DualRun:
    graph: Graph
    seed: dict[str, Any]               # input name -> tangent given to it
    leaves: dict[int, tuple[Any, Any]]  # input node id -> (value, tangent)
    steps: list[DualStep]
    output_value: Any
    output_tangent: Any                # J @ seed
    program_ops: int                   # ops of the program itself
    rule_ops: int                      # engine ops run inside JVP rules
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"seed": self.seed, "steps": [s.to_dict() for s in self.steps], "output_value": self.output_value,
                "output_tangent": self.output_tangent, "program_ops": self.program_ops, "rule_ops": self.rule_ops}


def dual_number_steps(program: Program | str, inputs: Mapping[str, Any] | str, seed: str | Mapping[str, Any],
                      dtype: str = "float64") -> DualRun:
    """One forward-mode pass seeded along ``seed``.

    Args:
        program, inputs: as for :func:`run_forward`.
        seed: an input name (its tangent is all ones, every other input's zero) or ``name -> tangent``.
    Raises:
        ExpressionError: unknown seed input or a tangent of the wrong shape.
    """
    program, inputs = _as_program(program, inputs)
    fw = run_forward(program, inputs, dtype=dtype)
    names = program.input_names
    if isinstance(seed, str):
        if seed not in names:
            raise ExpressionError(f"`{seed}` is not an input of the program (inputs: {', '.join(names)})",
                                  kind="undefined")
        seed = {n: np.ones_like(np.asarray(inputs[n], dtype=float)) if n == seed
                else np.zeros_like(np.asarray(inputs[n], dtype=float)) for n in names}
    tangents = []
    for n in names:
        t = np.asarray(seed.get(n, np.zeros_like(np.asarray(inputs[n], dtype=float))), dtype=float)
        if t.shape != np.shape(inputs[n]):
            raise ExpressionError(f"the tangent of `{n}` has shape {t.shape}, its value {np.shape(inputs[n])}",
                                  kind="shape")
        tangents.append(tensor(t, dtype=dtype))
    primals = [tensor(inputs[n], dtype=dtype) for n in names]

    program_outs: list = []
    rule_ops = [0]
    def hook(op, ins, params, out):
        if in_forward_mode():  # the program's own ops; ops run inside a JVP rule are counted apart
            program_outs.append((op.name, out, out.tangent))  # jvp() clears the output's later
        else:
            rule_ops[0] += 1

    with trace_ops(hook):
        out, out_tangent = api.jvp(program.function(), primals, tangents)

    if len(program_outs) != len(fw.steps):
        raise RuntimeError(f"forward mode ran {len(program_outs)} ops, the recorded forward pass "
                           f"{len(fw.steps)}: cannot match them to graph nodes")
    steps: list[DualStep] = []
    for (op_name, t, t_tangent), fstep in zip(program_outs, fw.steps):
        if op_name != fstep.op:
            raise RuntimeError(f"op {fstep.index} is '{op_name}' in forward mode but '{fstep.op}' in the graph")
        tan = plain_value(t_tangent.numpy()) if t_tangent is not None else plain_value(np.zeros(t.shape))
        val = plain_value(t.numpy())
        node = fw.graph.nodes[fstep.node]
        steps.append(DualStep(fstep.index, fstep.node, op_name, list(fstep.inputs), val, tan,
                              f"{node.name} = {op_name}({', '.join(fw.graph.nodes[i].name for i in fstep.inputs)}) = "
                              f"{fmt(val)} + {fmt(tan)}ε"))
    leaves = {}
    for n, p, t in zip(names, primals, tangents):
        nid = fw.id_of[fw.leaves[n].unique_id]
        leaves[nid] = (plain_value(p.numpy()), plain_value(t.numpy()))
    return DualRun(fw.graph, {n: plain_value(np.asarray(seed[n])) for n in names}, leaves, steps,
                   plain_value(out.numpy()), plain_value(out_tangent.numpy()), len(program_outs), rule_ops[0])


@dataclass
class NetworkJacobianCosts:
    """Full Jacobian of ``y = tanh(A x)``, R^n -> R^m, both ways, counted on the engine."""
    n: int
    m: int
    forward_passes: int       # one jvp pass per input (a column)
    reverse_passes: int       # one backward pass per output (a row), after one forward pass
    forward_ops: int          # every engine op of all jvp passes (values and JVP rules)
    reverse_ops: int          # the forward pass plus every op of all backward passes
    max_difference: float     # |J_forward - J_reverse|, max over entries

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def network_jacobian_costs(n: int, m: int, seed: int = 0) -> NetworkJacobianCosts:
    """Build the m x n Jacobian of ``tanh(A @ x)`` (A fixed, x the only input) by forward and reverse mode.

    Unlike :func:`explorer.explain.costs.jacobian_costs` (every element of every program input counts
    as an input), the matrix here is a constant, so n and m can be chosen independently.
    """
    from engine import functional as F
    from engine import ops
    from engine.tensor import no_grad

    if not (isinstance(n, int) and isinstance(m, int) and 1 <= n <= 512 and 1 <= m <= 512):
        raise ValueError(f"n and m must be whole numbers in 1..512, got n={n!r}, m={m!r}")
    rng = np.random.default_rng(seed)
    a = tensor(rng.standard_normal((m, n)) / np.sqrt(n))
    x0 = rng.standard_normal(n)

    def f(x):
        return F.tanh(ops.matmul(a, x))

    count = [0]

    def hook(op, ins, params, out):
        count[0] += 1

    cols = []
    with trace_ops(hook):
        for j in range(n):
            e = np.zeros(n)
            e[j] = 1.0
            _, t = api.jvp(f, [tensor(x0)], [tensor(e)])
            cols.append(t.numpy())
    forward_ops = count[0]
    count[0] = 0
    rows = []
    with trace_ops(hook):
        x = tensor(x0, requires_grad=True)
        y = f(x)
        for k in range(m):
            x.grad = None
            e = np.zeros(m)
            e[k] = 1.0
            y.backward(tensor(e), retain_graph=True)  # one pass per row, through one graph
            rows.append(x.grad.numpy())
    reverse_ops = count[0]
    with no_grad():
        diff = float(np.max(np.abs(np.stack(cols, axis=1) - np.stack(rows, axis=0))))
    return NetworkJacobianCosts(n, m, n, m, forward_ops, reverse_ops, diff)
