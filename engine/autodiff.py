"""Reverse-mode autodiff over a small protocol (the HW2 contract).

The core knows no ops. It works on any object that offers::

    unique_id: int                 # stable identity
    parents: sequence              # the inputs this value was computed from
    is_leaf() -> bool              # created by the user, not by an op
    is_constant() -> bool          # takes no gradient (requires_grad=False)
    chain_rule(d_output) -> iterable of (parent, contribution)   # per-op VJP
    accumulate_derivative(d) -> None                             # leaves only: +=

``backpropagate`` walks the graph with a *traversal strategy* (``topological``
here; ``engine.strategies`` adds deliberately broken ones) and tells an
optional *observer* every step, so the app can animate exactly what ran.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, runtime_checkable


@runtime_checkable
class Variable(Protocol):
    unique_id: int

    @property
    def parents(self) -> Iterable["Variable"]: ...
    def is_leaf(self) -> bool: ...
    def is_constant(self) -> bool: ...
    def chain_rule(self, d_output: Any) -> Iterable[tuple["Variable", Any]]: ...
    def accumulate_derivative(self, x: Any) -> None: ...


# --- events the backward pass reports (plain data; the explain layer serialises them) ---

@dataclass
class NodeVisited:
    """A node was taken from the traversal; ``adjoint`` is what it holds now."""
    node: Any
    adjoint: Any
    step: int


@dataclass
class ContributionSent:
    """``node`` sent ``contribution`` (its VJP output) to ``parent``."""
    node: Any
    parent: Any
    contribution: Any
    step: int


@dataclass
class FanOutAccumulated:
    """``parent`` added a contribution: ``received`` of ``expected`` so far, running sum ``total``."""
    parent: Any
    total: Any
    received: int
    expected: int
    step: int

    @property
    def complete(self) -> bool:
        return self.received >= self.expected


@dataclass
class LeafAccumulated:
    """A leaf's ``.grad`` was increased by ``derivative`` (``accumulate_derivative``)."""
    node: Any
    derivative: Any
    step: int


Observer = Callable[[Any], None]


def topological_sort(variable: Variable) -> list:
    """Non-constant nodes reachable from ``variable``, output first.

    Iterative depth-first search with an explicit stack, so a 100,000-deep chain
    needs no recursion. Each node appears after every node that consumes it.
    """
    order: list = []
    visited: set[int] = set()
    stack: list = [(variable, False)]
    while stack:
        node, finished = stack.pop()
        if finished:
            order.append(node)
            continue
        uid = node.unique_id
        if uid in visited or node.is_constant():
            continue
        visited.add(uid)
        stack.append((node, True))
        for parent in node.parents:
            if parent.unique_id not in visited and not parent.is_constant():
                stack.append((parent, False))
    order.reverse()
    return order


def count_consumers(order: Iterable) -> dict[int, int]:
    """How many contributions each node will receive (its fan-out within the graph)."""
    counts: dict[int, int] = {}
    for node in order:
        if node.is_leaf():
            continue
        for parent in node.parents:
            if not parent.is_constant():
                counts[parent.unique_id] = counts.get(parent.unique_id, 0) + 1
    return counts


class TraversalStrategy:
    """How the backward pass visits nodes. Subclasses implement ``run``."""

    name = "?"
    correct = True  # whether it gives the right gradients in general

    def run(self, variable: Variable, deriv: Any, observer: Observer | None) -> None:
        raise NotImplementedError


class Topological(TraversalStrategy):
    """Reverse topological order: a node is processed once its adjoint is complete."""

    name = "topological"

    def run(self, variable, deriv, observer=None):
        order = topological_sort(variable)
        derivs: dict[int, Any] = {variable.unique_id: deriv}
        if observer is None:
            for node in order:
                d = derivs.pop(node.unique_id, None)
                if d is None:
                    continue
                if node.is_leaf():
                    node.accumulate_derivative(d)
                    continue
                for parent, contribution in node.chain_rule(d):
                    if parent.is_constant():
                        continue
                    pid = parent.unique_id
                    prev = derivs.get(pid)
                    derivs[pid] = contribution if prev is None else prev + contribution
            return
        process_in_order(order, variable, deriv, observer)


def process_in_order(order: list, variable: Variable, deriv: Any, observer: Observer) -> None:
    """The correct backward pass over a given output-first ``order``, reporting every step.

    Shared by :class:`Topological` (when observed) and by strategies that only change how the
    order is found (e.g. the explain layer's recursive DFS).
    """
    expected = count_consumers(order)
    derivs: dict[int, Any] = {variable.unique_id: deriv}
    received: dict[int, int] = {}
    step = 0
    for node in order:
        d = derivs.pop(node.unique_id, None)
        if d is None:
            continue
        observer(NodeVisited(node, d, step))
        if node.is_leaf():
            node.accumulate_derivative(d)
            observer(LeafAccumulated(node, d, step))
            step += 1
            continue
        for parent, contribution in node.chain_rule(d):
            if parent.is_constant():
                continue
            pid = parent.unique_id
            observer(ContributionSent(node, parent, contribution, step))
            prev = derivs.get(pid)
            total = contribution if prev is None else prev + contribution
            derivs[pid] = total
            received[pid] = received.get(pid, 0) + 1
            observer(FanOutAccumulated(parent, total, received[pid], expected.get(pid, 1), step))
        step += 1


def derivatives_at(variable: Variable, deriv: Any, targets: Iterable[Variable]) -> dict[int, Any]:
    """d variable / d target for each target (leaf or not), without touching any ``.grad``.

    The same reverse-topological walk as :class:`Topological`, but it returns the
    adjoints that reach ``targets`` instead of accumulating into leaves (what
    ``engine.grad`` and ``engine.vjp`` need, also when nested).
    """
    wanted = {t.unique_id for t in targets}
    found: dict[int, Any] = {}
    derivs: dict[int, Any] = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = derivs.pop(node.unique_id, None)
        if d is None:
            continue
        if node.unique_id in wanted:
            found[node.unique_id] = d
        if node.is_leaf():
            continue
        for parent, contribution in node.chain_rule(d):
            if parent.is_constant():
                continue
            pid = parent.unique_id
            prev = derivs.get(pid)
            derivs[pid] = contribution if prev is None else prev + contribution
    return found


STRATEGIES: dict[str, TraversalStrategy] = {"topological": Topological()}


def register_strategy(strategy: TraversalStrategy) -> None:
    """Make a traversal strategy selectable by name in ``backpropagate``."""
    STRATEGIES[strategy.name] = strategy


def get_strategy(strategy: "str | TraversalStrategy") -> TraversalStrategy:
    if isinstance(strategy, TraversalStrategy):
        return strategy
    try:
        return STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown traversal strategy {strategy!r}; known: {sorted(STRATEGIES)}") from None


def backpropagate(variable: Variable, deriv: Any, strategy: "str | TraversalStrategy" = "topological",
                  observer: Observer | None = None) -> None:
    """Send ``deriv`` back from ``variable`` to every leaf, accumulating into leaves.

    Args:
        variable: the output node.
        deriv: its adjoint (d loss / d variable), same shape as the variable.
        strategy: traversal strategy name or object (``topological`` is the correct one).
        observer: called with each event (NodeVisited, ContributionSent, FanOutAccumulated,
            LeafAccumulated) in the order they happen.
    """
    get_strategy(strategy).run(variable, deriv, observer)
