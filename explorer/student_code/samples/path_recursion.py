"""Recursion along every path: right by linearity, but a node reached by k paths runs its VJP k times
(2^depth - 1 calls on a doubling chain), and a deep chain exceeds Python's recursion limit."""


def topological_sort(variable):
    order = []

    def visit(node):
        if node.is_constant() or any(node.unique_id == n.unique_id for n in order):
            return
        for parent in node.parents:
            visit(parent)
        order.append(node)
    visit(variable)
    return order[::-1]


def backpropagate(variable, deriv):
    if variable.is_leaf():
        variable.accumulate_derivative(deriv)
        return
    for parent, contribution in variable.chain_rule(deriv):
        if not parent.is_constant():
            backpropagate(parent, contribution)
