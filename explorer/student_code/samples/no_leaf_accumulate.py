"""Right order, right sums, but the leaves' derivatives are only kept in the dict: accumulate_derivative
is never called."""


def topological_sort(variable):
    order, seen = [], set()
    stack = [(variable, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node.unique_id not in seen and not node.is_constant():
            seen.add(node.unique_id)
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents)
    return order[::-1]


def backpropagate(variable, deriv):
    adjoints = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = adjoints.get(node.unique_id)
        if d is None or node.is_leaf():
            continue
        for parent, contribution in node.chain_rule(d):
            if not parent.is_constant():
                adjoints[parent.unique_id] = adjoints.get(parent.unique_id, 0) + contribution
