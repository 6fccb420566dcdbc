"""A correct HW2 solution: iterative depth-first post-order (no recursion limit), adjoints summed in a dict."""


def topological_sort(variable):
    order, done, seen = [], set(), set()
    stack = [(variable, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if node.unique_id not in done:
                done.add(node.unique_id)
                order.append(node)
            continue
        if node.unique_id in seen or node.is_constant():
            continue
        seen.add(node.unique_id)
        stack.append((node, True))
        for parent in node.parents:
            if parent.unique_id not in seen and not parent.is_constant():
                stack.append((parent, False))
    order.reverse()
    return order


def backpropagate(variable, deriv):
    adjoints = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = adjoints.pop(node.unique_id, None)
        if d is None:
            continue
        if node.is_leaf():
            node.accumulate_derivative(d)
            continue
        for parent, contribution in node.chain_rule(d):
            if parent.is_constant():
                continue
            key = parent.unique_id
            adjoints[key] = contribution if key not in adjoints else adjoints[key] + contribution
