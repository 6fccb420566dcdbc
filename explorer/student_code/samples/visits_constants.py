"""Forgets is_constant(): constants are sorted, and accumulate_derivative is called on them as leaves."""


def topological_sort(variable):
    order, seen = [], set()
    stack = [(variable, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node.unique_id not in seen:
            seen.add(node.unique_id)
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents)
    return order[::-1]


def backpropagate(variable, deriv):
    adjoints = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = adjoints.get(node.unique_id, 0.0)
        if node.is_leaf():
            node.accumulate_derivative(d)
            continue
        for parent, contribution in node.chain_rule(d):
            adjoints[parent.unique_id] = adjoints.get(parent.unique_id, 0) + contribution
