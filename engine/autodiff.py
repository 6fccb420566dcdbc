"""Reverse-mode autodiff over a small protocol (the HW2 contract).

The core knows no ops. It works on any object that offers::

    unique_id: int                 # stable identity
    parents: sequence              # the inputs this value was computed from
    is_leaf() -> bool              # created by the user, not by an op
    is_constant() -> bool          # takes no gradient (requires_grad=False)
    chain_rule(d_output) -> iterable of (parent, contribution)   # per-op VJP; Variables only
    accumulate_derivative(d) -> None                             # leaves only: +=

``backpropagate`` walks the graph with a *traversal strategy* (``topological``
here; ``engine.strategies`` adds deliberately broken ones) and tells an
optional *observer* every step, so the app can animate exactly what ran.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable


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

@dataclass(frozen=True)
class CodeLocation:
    """Where an event came from: the emitting function (qualified name), its file and line."""
    function: str
    file: str
    line: int


@dataclass
class Event:
    """Base of the events. ``where`` is the line that created the event, read from the caller's frame
    when it is made (one frame lookup, paid only by a pass someone observes): the app shows the
    engine's own source beside the animation with that line highlighted."""
    where: CodeLocation | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        frame = sys._getframe(2)  # 0: here, 1: the dataclass __init__, 2: the line that made the event
        code = frame.f_code
        self.where = CodeLocation(getattr(code, "co_qualname", code.co_name), code.co_filename, frame.f_lineno)


@dataclass
class NodeVisited(Event):
    """A node was taken from the traversal; ``adjoint`` is what it holds now."""
    node: Any
    adjoint: Any
    step: int


@dataclass
class ContributionSent(Event):
    """``node`` sent ``contribution`` (its VJP output) to ``parent``."""
    node: Any
    parent: Any
    contribution: Any
    step: int


@dataclass
class FanOutAccumulated(Event):
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
class LeafAccumulated(Event):
    """A leaf's ``.grad`` was increased by ``derivative`` (``accumulate_derivative``)."""
    node: Any
    derivative: Any
    step: int


Observer = Callable[[Any], None]


def topological_sort(variable: "Variable | Sequence[Variable]") -> list:
    """Non-constant nodes reachable from ``variable`` (or from each of several roots), output first.

    Iterative depth-first search with an explicit stack, so a 1,000,000-deep chain
    needs no recursion. Each node appears after every node that consumes it.
    """
    roots = list(variable) if isinstance(variable, (list, tuple)) else [variable]
    order: list = []
    visited: set[int] = set()
    # two parallel stacks (node, finished?) rather than one of tuples: no allocation per entry
    nodes: list = [root for root in reversed(roots) if not root.is_constant()]
    finished: list = [False] * len(nodes)
    push_node, push_flag, pop_node, pop_flag = nodes.append, finished.append, nodes.pop, finished.pop
    visit, emit = visited.add, order.append
    while nodes:
        node = pop_node()
        if pop_flag():
            emit(node)
            continue
        uid = node.unique_id
        if uid in visited:
            continue
        visit(uid)
        push_node(node)
        push_flag(True)
        for parent in node.parents:
            if parent.unique_id not in visited and not parent.is_constant():
                push_node(parent)
                push_flag(False)
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


def add_adjoints(total: Any, contribution: Any) -> Any:
    """A node's running total after one more contribution: the contribution itself when it is the first,
    else the sum (slide 27's ``add_outgrads``)."""
    return contribution if total is None else total + contribution


def propagate(order: Sequence, adjoints: dict[int, Any], observer: Observer | None = None,
              targets: Iterable[int] | None = None, accumulate: bool = True,
              add: Callable[[Any, Any], Any] | None = None) -> dict[int, Any]:
    """The reverse walk: send adjoints back along an output-first ``order``, summing fan-out.

    Every correct backward pass runs this one loop: ``backward`` (whatever strategy found the
    order, observed or not), ``engine.grad`` / ``vjp`` and a static graph's ``gradients()``.
    A node is processed once, when every consumer before it in ``order`` has sent its
    contribution; nodes that received nothing are skipped.

    Args:
        order: nodes, each after all of its consumers (``topological_sort``).
        adjoints: unique id -> adjoint of the outputs (the seeds); consumed as the walk goes.
        observer: called with NodeVisited, ContributionSent, FanOutAccumulated and
            LeafAccumulated events in the order they happen.
        targets: unique ids whose complete adjoint should be returned (leaves or not).
        accumulate: call ``accumulate_derivative`` on leaves (``backward``); False leaves
            every ``.grad`` alone (``engine.grad``, static gradients).
        add: ``add(total so far or None, contribution)``, a node's running total (:func:`add_adjoints`;
            the engine's own unwatched pass, whose adjoints are raw arrays, sums with its backend's add).

    Returns:
        unique id -> adjoint for each of ``targets`` that received one.
    """
    if add is None:
        add = add_adjoints
    found: dict[int, Any] = {}
    wanted = set(targets) if targets is not None else ()
    expected = count_consumers(order) if observer is not None else {}
    received: dict[int, int] = {}
    step = 0
    # The walk is the lesson (the app lights these lines). The observer
    # hears of each line's work right after it, never in its place.
    for node in order:
        uid = node.unique_id
        adjoint = adjoints.pop(uid, None)  # complete: its users came first
        if adjoint is None:
            continue  # nothing reached this node
        if uid in wanted:
            found[uid] = adjoint
        if observer is not None:
            observer(NodeVisited(node, adjoint, step))
        if node.is_leaf():
            if accumulate:
                node.accumulate_derivative(adjoint)
                if observer is not None:
                    observer(LeafAccumulated(node, adjoint, step))
        else:
            for parent, contribution in node.chain_rule(adjoint):
                if contribution is None or parent.is_constant():  # None: an input that takes no gradient
                    continue
                pid = parent.unique_id
                total = add(adjoints.get(pid), contribution)
                adjoints[pid] = total
                if observer is not None:
                    observer(ContributionSent(node, parent, contribution, step))
                    received[pid] = received.get(pid, 0) + 1
                    observer(FanOutAccumulated(parent, total, received[pid], expected.get(pid, 1), step))
        step += 1
    return found


class TraversalStrategy:
    """How the backward pass visits nodes. Subclasses implement ``run``."""

    name = "?"
    correct = True  # whether it gives the right gradients in general
    # runs each node's VJP at most once per pass: then ``backward()`` may free what a node saved right
    # after its VJP (PyTorch does; a strategy that calls a VJP again, as path recursion does, must not)
    once_per_node = False

    def run(self, variable: Variable, deriv: Any, observer: Observer | None) -> None:
        raise NotImplementedError


class Topological(TraversalStrategy):
    """Reverse topological order: a node is processed once its adjoint is complete."""

    name = "topological"
    once_per_node = True

    def run(self, variable, deriv, observer=None, add=None):
        order = topological_sort(variable)
        # unobserved, the walk lets go of each node once taken: what only that node held (the values it
        # saved for backward, once backward() released them) is freed during the pass, not after it
        propagate(order if observer is not None else _taken(order), {variable.unique_id: deriv}, observer,
                  add=add)


def _taken(order: list) -> Iterable:
    """The nodes of ``order``, each forgotten by the list as it is handed out."""
    for i, node in enumerate(order):
        order[i] = None
        yield node


def derivatives_at(variable: Variable, deriv: Any, targets: Iterable[Variable]) -> dict[int, Any]:
    """d variable / d target for each target (leaf or not), without touching any ``.grad``.

    What ``engine.grad`` and ``engine.vjp`` need, also when nested: the reverse walk of
    :class:`Topological`, returning the adjoints that reach ``targets``.
    """
    return propagate(_taken(topological_sort(variable)), {variable.unique_id: deriv},
                     targets=[t.unique_id for t in targets], accumulate=False)


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
