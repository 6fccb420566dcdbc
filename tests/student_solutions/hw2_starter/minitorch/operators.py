"""A sibling module, reached by a relative import as in HW2's package."""


def is_close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-2
