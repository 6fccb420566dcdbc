"""A correct backward loop over a wrong order: the sort lists nodes breadth-first from the output, so a
node can come before a node that uses it."""
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
    for node in topological_sort(variable):
        d = adjoints.get(node.unique_id)
        if d is None:
            continue
        if node.is_leaf():
            node.accumulate_derivative(d)
            continue
        for parent, contribution in node.chain_rule(d):
            if not parent.is_constant():
                adjoints[parent.unique_id] = adjoints.get(parent.unique_id, 0) + contribution
