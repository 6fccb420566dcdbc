"""The stack is never popped: the sort never ends (the child's time limit stops it)."""


def topological_sort(variable):
    order, stack = [], [variable]
    while stack:
        node = stack[-1]
        for parent in node.parents:
            if not parent.is_constant():
                stack.append(parent)
        if node.is_leaf():
            order.append(node)
    return order


def backpropagate(variable, deriv):
    for node in topological_sort(variable):
        if node.is_leaf():
            node.accumulate_derivative(deriv)
