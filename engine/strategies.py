"""Traversal strategies for the backward pass, registered with ``engine.autodiff`` on ``import engine``.

Each one calls the nodes' real ``chain_rule`` (the ops' VJPs) and ``accumulate_derivative``, as
:class:`engine.autodiff.Topological` does; only the order in which nodes are taken differs. The
correct ones find an order and run the one reverse walk, ``engine.autodiff.propagate``; the two
instructive failures (``bfs_first_touch``, ``path_recursion``) walk differently on purpose.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from . import autodiff
from .autodiff import (ContributionSent, Event, FanOutAccumulated, LeafAccumulated, NodeVisited, TraversalStrategy,
                       count_consumers, register_strategy, topological_sort)


@dataclass
class ContributionLost(Event):
    """``parent`` received ``contribution`` after it had already passed its adjoint on (bfs_first_touch)."""
    parent: Any
    contribution: Any
    received: int
    expected: int
    step: int


class WorkLimitExceeded(RuntimeError):
    """A strategy gave up after more work than its budget (path recursion on a big graph)."""


def _numel(x) -> int:
    n = getattr(x, "numel", None)
    return int(n()) if callable(n) else 1


def _noop(event) -> None:
    return None


class BfsFirstTouch(TraversalStrategy):
    """Breadth-first from the output; each node passes on what it holds when first taken. Contributions
    arriving later are lost: wrong when a value is used on paths of different lengths, right on trees."""

    name = "bfs_first_touch"
    correct = False
    once_per_node = True  # a node is taken once (later contributions are lost)

    def run(self, variable, deriv, observer=None):
        emit = observer or _noop
        # only for the "k of n received" labels; the traversal itself never looks at it
        expected = count_consumers(topological_sort(variable)) if observer is not None else {}
        derivs: dict[int, Any] = {variable.unique_id: deriv}
        received: dict[int, int] = {}
        done: set[int] = set()
        queue = deque([variable])
        step = 0
        while queue:
            node = queue.popleft()
            uid = node.unique_id
            if uid in done:
                continue
            done.add(uid)
            d = derivs[uid]
            emit(NodeVisited(node, d, step))
            if node.is_leaf():
                node.accumulate_derivative(d)
                emit(LeafAccumulated(node, d, step))
                step += 1
                continue
            for parent, contribution in node.chain_rule(d):
                if contribution is None or parent.is_constant():
                    continue
                pid = parent.unique_id
                emit(ContributionSent(node, parent, contribution, step))
                received[pid] = received.get(pid, 0) + 1
                if pid in done:
                    emit(ContributionLost(parent, contribution, received[pid], expected.get(pid, 1), step))
                    continue
                prev = derivs.get(pid)
                total = contribution if prev is None else prev + contribution
                derivs[pid] = total
                emit(FanOutAccumulated(parent, total, received[pid], expected.get(pid, 1), step))
                queue.append(parent)
            step += 1


class PathRecursion(TraversalStrategy):
    """Send each contribution straight on, recursively, along every path to the leaves (no fan-out sums):
    correct by linearity, but the VJP calls are one per path (2^depth on a doubling chain)."""

    name = "path_recursion"
    correct = True

    def __init__(self, max_vjp_calls: int = 200_000, max_work: int = 2_000_000):
        """Args:
            max_vjp_calls: VJP calls before giving up (one per path through each node).
            max_work: numbers sent along edges before giving up, checked as it goes: on tensors each
                call moves many numbers, and 200,000 calls on 1000-element values would run for seconds.
        """
        self.max_vjp_calls = max_vjp_calls
        self.max_work = max_work

    def run(self, variable, deriv, observer=None):
        emit = observer or _noop
        state = {"calls": 0, "step": 0, "work": 0}
        limit, max_work = self.max_vjp_calls, self.max_work

        def visit(node, d):
            step = state["step"]
            state["step"] += 1
            emit(NodeVisited(node, d, step))
            if node.is_leaf():
                node.accumulate_derivative(d)
                emit(LeafAccumulated(node, d, step))
                return
            state["calls"] += 1
            if state["calls"] > limit:
                raise WorkLimitExceeded(f"path recursion gave up after {limit} VJP calls "
                                        f"(one per path; the number of paths grows exponentially)")
            for parent, contribution in node.chain_rule(d):
                if contribution is None or parent.is_constant():
                    continue
                state["work"] += _numel(contribution)
                if state["work"] > max_work:
                    raise WorkLimitExceeded(f"path recursion gave up after sending {state['work']:,} numbers "
                                            f"in {state['calls']:,} VJP calls (its budget is {max_work:,}; "
                                            "the number of paths grows exponentially)")
                emit(ContributionSent(node, parent, contribution, step))
                visit(parent, contribution)

        visit(variable, deriv)


class RecursiveDfs(TraversalStrategy):
    """The textbook recursive depth-first topological sort, then the correct pass: correct, but a
    3000-deep chain exceeds Python's recursion limit (a real ``RecursionError``)."""

    name = "recursive_dfs"
    correct = True
    once_per_node = True

    def run(self, variable, deriv, observer=None):
        order: list = []
        visited: set[int] = set()

        def dfs(node):
            visited.add(node.unique_id)
            for parent in node.parents:
                if not parent.is_constant() and parent.unique_id not in visited:
                    dfs(parent)
            order.append(node)

        dfs(variable)  # raises RecursionError when the graph is deeper than Python's limit
        order.reverse()
        autodiff.propagate(order, {variable.unique_id: deriv}, observer)


for _s in (BfsFirstTouch(), PathRecursion(), RecursiveDfs()):
    register_strategy(_s)

#: the built-in strategies, the correct one first
STRATEGY_NAMES: tuple[str, ...] = ("topological", "bfs_first_touch", "path_recursion", "recursive_dfs")
