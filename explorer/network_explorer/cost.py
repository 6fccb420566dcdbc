"""What exploring one network costs, known before the expensive work runs, and the page's refusal.

The Network explorer records a forward and backward pass (every value, adjoint, contribution and the
arrays each VJP multiplied), runs a gradient check, sweeps the memory kept for backward over a few sizes,
and builds frames and layouts. Before any of that, :func:`probe` runs the network's forward pass once
under ``no_grad`` with the engine's op tracer, counting what the recording will hold (the numbers of
every op output and every leaf) and the work of one run (numbers computed, a matmul's multiply-adds,
the Python overhead of each op). :func:`check` multiplies that by the runs the page makes and refuses,
with the page's usual :class:`~explorer.network_explorer.presets.PresetError`, what would exceed the
request budget of ``explorer.explain.parser`` (``MAX_WORK``) or the numbers a recording may hold.

One probe run costs one forward pass without any graph (a few percent of the whole request); the custom
network's parameters are bounded before they are built (``presets.MAX_PARAMETERS``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.explain.parser import MAX_NODES, MAX_WORK, OP_WORK
from engine.tensor import no_grad, trace_ops

from .presets import SWEEPS, Network, PresetError
from explorer.explain.numbers import count

# A recording holds every value, adjoint, contribution, running sum and the arrays each VJP multiplied:
# 60-100 bytes per number of the graph (measured over the presets: benchmarks/request_bounds.py). 600,000
# numbers keep its peak near 50 MB; what the page caches afterwards is compact (explore.compact).
MAX_RECORDED_NUMBERS = 600_000
MAX_OPS = MAX_NODES            # the op graph's primitives (as many as a typed program may run)
MAX_CHECKED_LEAVES = 8         # the gradient check visits at most this many leaves (evenly spread), so that
COORDS = 3                     # its cost grows with the network, not with its square (two runs per coordinate)
MATMUL_WORK = 0.25             # work units per multiply-add: BLAS does several per ns where other ops do one


@dataclass
class NetworkCost:
    """One forward run of a network, from the probe."""

    ops: int = 0
    op_numbers: int = 0        # numbers of every op output
    leaf_numbers: int = 0      # numbers of every leaf (parameters, inputs, constants)
    multiply_adds: int = 0
    leaves: int = 0            # trainable leaves (what the gradient check visits)

    @property
    def numbers(self) -> int:
        """What a recording of the graph holds (each value once)."""
        return self.op_numbers + self.leaf_numbers

    @property
    def work(self) -> int:
        """Work units of one forward run (``explorer.explain.parser.CostEstimate``'s unit)."""
        return int(self.op_numbers + MATMUL_WORK * self.multiply_adds + OP_WORK * self.ops)


def probe(network: Network) -> NetworkCost:
    """Count one forward run of ``network`` (under ``no_grad``: no graph is kept, nothing recorded)."""
    cost = NetworkCost()
    made: set[int] = set()
    leaves: dict[int, int] = {}

    def hook(op, inputs, params, out):
        cost.ops += 1
        cost.op_numbers += out.numel()
        made.add(out.unique_id)
        for t in inputs:
            if t.unique_id not in made:
                leaves.setdefault(t.unique_id, t.numel())
        cost.multiply_adds += op.multiply_adds([t.shape for t in inputs], out.shape)

    with no_grad(), trace_ops(hook):
        network.loss()
    cost.leaf_numbers = sum(leaves.values())
    cost.leaves = sum(1 for _ in network.model.named_parameters())
    return cost


def runs(key: str, cost: NetworkCost, options: dict) -> tuple[float, float]:
    """Forward-run equivalents of one page request, as (at this size, per unit of size scaled): the recorded
    forward + backward (about 3), the gradient check's own backward (3) and two runs per checked coordinate;
    then the memory sweeps, two runs per size, whose numbers scale with the size against the current one
    (their Python overhead per op does not)."""
    checked = min(cost.leaves, MAX_CHECKED_LEAVES) * COORDS
    now_runs = 6 + 2 * checked
    sweep_runs = sweep_scaled = 0.0
    for name, sizes in SWEEPS.get(key, []):
        now = max(1, int(options.get(name, 1) or 1))
        sweep_runs += 2 * len(sizes)
        sweep_scaled += sum(2 * s / now for s in sizes)
    return now_runs + sweep_runs, now_runs + sweep_scaled


def request_work(key: str, cost: NetworkCost, options: dict) -> float:
    """Work units of one page request (see :func:`runs`)."""
    overhead_runs, number_runs = runs(key, cost, options)
    return overhead_runs * OP_WORK * cost.ops + number_runs * (cost.work - OP_WORK * cost.ops)


def check(key: str, cost: NetworkCost, options: dict) -> None:
    """Refuse a network the page cannot explore within one request's budget.

    Raises:
        PresetError: kind of limit and the numbers, in the page's usual words.
    """
    if cost.ops > MAX_OPS:
        raise PresetError(f"too many operations to step through: this network runs {count(cost.ops)} primitives "
                          f"(at most {count(MAX_OPS)}); use fewer layers or time steps")
    if cost.numbers > MAX_RECORDED_NUMBERS:
        raise PresetError(f"too big to step through here: its graph holds {count(cost.numbers)} numbers (values of "
                          f"{count(cost.ops)} ops and their inputs; at most {count(MAX_RECORDED_NUMBERS)}, since every "
                          "value, adjoint and contribution is kept for the pictures); use a smaller batch, fewer "
                          "or narrower layers")
    total = request_work(key, cost, options)
    if total > MAX_WORK:
        raise PresetError(f"too much work for one request: the page runs this network about "
                          f"{math.ceil(runs(key, cost, options)[0])} times (recording, gradient check, memory "
                          f"sweep), each run {count(cost.ops)} ops on {count(cost.op_numbers)} numbers and "
                          f"{count(cost.multiply_adds)} multiply-adds: {count(total)} work units; the budget is "
                          f"{count(MAX_WORK)}. Use a smaller batch, fewer or narrower layers")


__all__ = ["NetworkCost", "probe", "runs", "request_work", "check", "MAX_RECORDED_NUMBERS", "MAX_OPS",
           "MAX_CHECKED_LEAVES", "COORDS"]
