"""Breadth-first from the output, each node passing its adjoint on when it is dequeued (first touch):
a contribution that reaches a node after it was dequeued is added to the dict but never propagated."""
from collections import deque


def topological_sort(variable):
    order, seen, queue = [], {variable.unique_id}, deque([variable])
    while queue:
        node = queue.popleft()
        order.append(node)
        for parent in node.parents:
            if parent.unique_id not in seen and not parent.is_constant():
                seen.add(parent.unique_id)
                queue.append(parent)
    return order


def backpropagate(variable, deriv):
    adjoints = {variable.unique_id: deriv}
    seen, queue = {variable.unique_id}, deque([variable])
    while queue:
        node = queue.popleft()
        d = adjoints[node.unique_id]
        if node.is_leaf():
            node.accumulate_derivative(d)
            continue
        for parent, contribution in node.chain_rule(d):
            if parent.is_constant():
                continue
            key = parent.unique_id
            adjoints[key] = contribution if key not in adjoints else adjoints[key] + contribution
            if key not in seen:
                seen.add(key)
                queue.append(parent)
