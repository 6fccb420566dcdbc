"""A typo in the backward loop: NameError on the first node."""


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
        d = adjoints[node.unique_id]
        if node.is_leaf():
            node.accumulate_derivative(d)
        else:
            for parent, contribution in node.chain_rule(derivative):
                adjoints[parent.unique_id] = adjoints.get(parent.unique_id, 0) + contribution
