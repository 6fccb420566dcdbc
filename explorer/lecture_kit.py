"""Small helpers shared by the lecture pages (8-11): safe Markdown text and safe answer parsing.

Nothing here evaluates text: answers are read with ``ast`` and a whitelist of nodes (numbers, lists,
+ - * / **, the constants e and pi), and any text shown in Markdown is backslash-escaped first.
No Streamlit here.
"""
from __future__ import annotations

import ast
import math
import re

from explorer.explain.parser import parse_python

from .kit.formatting import md_escape  # noqa: F401  (the pages' one escaper, re-exported for the pages)

MAX_ANSWER_CHARS = 400
MAX_ANSWER_ITEMS = 64


class AnswerError(ValueError):
    """An answer that is not a number or a list of numbers (the message says what was wrong)."""


_CONSTANTS = {"e": math.e, "pi": math.pi, "π": math.pi}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


def parse_answer(text: str):
    """A typed answer as a float or a (nested) list of floats.

    Accepts numbers (``0.6``, ``-6``, ``1.2e-5``, ``1,5`` is read as a list), lists ``[−2, −2]`` (also
    without brackets: ``9, 12``), the constants ``e`` and ``pi``, a number glued to one (``4e``,
    ``2pi``), ``+ - * / **`` and the Unicode minus and times signs. Units are not part of a number.

    Raises:
        AnswerError: empty, too long, or anything else (names, calls, strings ...).
    """
    s = str(text).strip()
    if not s:
        raise AnswerError("type a number (or a list like [1, 2])")
    if len(s) > MAX_ANSWER_CHARS:
        raise AnswerError(f"an answer is at most {MAX_ANSWER_CHARS} characters")
    s = s.replace("−", "-").replace("–", "-").replace("×", "*").replace("·", "*").replace("^", "**")
    s = re.sub(r"(?<![\w.])(\d+(?:\.\d*)?)\s*(e|pi|π)(?![\w\d+-])", r"\1*\2", s)  # 4e -> 4*e (not 1e5)
    if "," in s and not s.lstrip().startswith(("[", "(")):
        s = f"[{s}]"
    try:
        tree = parse_python(s, mode="eval")
    except SyntaxError:
        raise AnswerError(f"could not read {text!r} as a number or a list of numbers") from None
    count = [0]
    value = _value(tree.body, count, 0)
    return value


def _value(node: ast.AST, count: list[int], depth: int):
    if depth > 20:
        raise AnswerError("the answer is nested too deeply")
    if isinstance(node, (ast.List, ast.Tuple)):
        if not node.elts:
            raise AnswerError("an empty list is not an answer")
        items = [_value(e, count, depth + 1) for e in node.elts]
        return items
    count[0] += 1
    if count[0] > MAX_ANSWER_ITEMS:
        raise AnswerError(f"at most {MAX_ANSWER_ITEMS} numbers")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        if not math.isfinite(float(node.value)):
            raise AnswerError("that number is not finite")
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, count, depth + 1)
        if isinstance(v, list):
            raise AnswerError("a sign goes in front of a number, not a list")
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _value(node.left, count, depth + 1), _value(node.right, count, depth + 1)
        if isinstance(a, list) or isinstance(b, list):
            raise AnswerError("arithmetic works on numbers, not lists")
        if isinstance(node.op, ast.Pow) and abs(b) > 1000:
            raise AnswerError("that exponent is too large")
        try:
            v = _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError):
            raise AnswerError("that arithmetic has no finite value") from None
        if not math.isfinite(v):
            raise AnswerError("that arithmetic has no finite value")
        return float(v)
    raise AnswerError("only numbers, lists, + - * / ** and the constants e and pi are allowed")


# --- presentation mode: what the page kit's CSS leaves small ---------------------------------------------

def present_css(presenting: bool) -> str:
    """Extra CSS for the lecture pages in presentation mode (empty otherwise): code blocks, captions,
    widget labels, slider values and formulas at projector size (the kit enlarges paragraphs and tables)."""
    if not presenting:
        return ""
    rules = [
        '[data-testid="stMain"] [data-testid="stCode"] code, [data-testid="stMain"] pre code '
        '{ font-size: 20px !important; line-height: 1.45 !important; }',
        '[data-testid="stMain"] [data-testid="stCaptionContainer"], '
        '[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 19px !important; }',
        '[data-testid="stMain"] [data-testid="stWidgetLabel"] p, [data-testid="stMain"] [data-testid="stCheckbox"] p '
        '{ font-size: 20px !important; }',
        '[data-testid="stMain"] [data-testid="stFormSubmitButton"] button p, '
        '[data-testid="stMain"] [data-testid="stLinkButton"] p { font-size: 24px !important; }',
        '[data-testid="stMain"] [data-testid="stSliderThumbValue"], '
        '[data-testid="stMain"] [data-testid="stSliderTickBarMin"], '
        '[data-testid="stMain"] [data-testid="stSliderTickBarMax"] { font-size: 19px !important; }',
        '[data-testid="stMain"] .katex { font-size: 1.3em !important; }',
        '[data-testid="stMain"] [data-baseweb="select"] div, [data-testid="stMain"] [role="radiogroup"] p '
        '{ font-size: 20px !important; }',
        '[data-testid="stMain"] [data-testid="stTable"] td, [data-testid="stMain"] [data-testid="stTable"] th '
        '{ font-size: 20px !important; }',
    ]
    return "<style>\n" + "\n".join(rules) + "\n</style>"


def readable(fig, look):
    """``fig`` with every axis' tick labels and titles, the legend and the title at ``look``'s figure font
    (set explicitly: Streamlit's Plotly theme would otherwise draw ticks at 12 px). Returns ``fig``."""
    size = look.figure_font
    fig.update_xaxes(tickfont=dict(size=size), title_font=dict(size=size))
    fig.update_yaxes(tickfont=dict(size=size), title_font=dict(size=size))
    fig.update_layout(legend=dict(font=dict(size=size)), title_font=dict(size=size + 1),
                      hoverlabel=dict(font=dict(size=size)))
    return fig
