"""A missing colon: this file does not parse (on purpose)."""


def topological_sort(variable)
    return [variable]


def backpropagate(variable, deriv):
    variable.accumulate_derivative(deriv)
