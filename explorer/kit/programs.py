"""Typed program + inputs -> the engine's parsed Program, shared by the expression pages (1-4).

A rejected text raises :class:`InputProblem`, which names the box at fault so the page shows the
parser's message (line, column, caret) under it. No Streamlit here.
"""
from __future__ import annotations

from explorer import explain as ex
from explorer.explain import ExpressionError



class InputProblem(Exception):
    """The program or the input text was rejected by the engine's parser.

    ``where`` is ``"program"`` or ``"inputs"`` (which text box the message belongs under); ``error``
    is the parser's :class:`ExpressionError` (line, col, message).
    """

    def __init__(self, where: str, error: ExpressionError):
        self.where = where
        self.error = error
        super().__init__(f"{where}: {error}")

    def caret(self, text: str) -> str | None:
        """The offending line with a ^ under the column (None without a position)."""
        e = self.error
        if e.line is None:
            return None
        lines = text.splitlines() or [""]
        if not 1 <= e.line <= len(lines):
            return None
        line = lines[e.line - 1]
        col = max((e.col or 1) - 1, 0)
        return f"{line}\n{' ' * min(col, len(line))}^"


def program_refused(message: str) -> InputProblem:
    """The program box's error for a request refused by its budget (e.g. a MemoryError while running)."""
    return InputProblem("program", ExpressionError(message, kind="limit"))


def parse(program_text: str, inputs_text: str):
    """(Program, inputs dict) or InputProblem naming the box at fault."""
    try:
        inputs = ex.parse_inputs(inputs_text)
    except ExpressionError as e:
        raise InputProblem("inputs", e) from None
    try:
        program = ex.parse_program(program_text, inputs)
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    if not program.input_names:  # e.g. "f = 2": pages index input_names[0] (seed, wrt), so reject it here
        raise InputProblem("program", ExpressionError(
            "the output does not depend on any input (it is a plain number)",
            program.statements[-1].line, kind="undefined"))
    return program, inputs


