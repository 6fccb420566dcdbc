"""Typed programs, safely: Python's ``ast`` with an explicit whitelist, evaluated with engine ops.

A program is a few lines such as ``x3 = 1.5*x1`` ... ``f = x1 + x6`` (or one line
``f = x1 + exp(1.5*x1 + 2*x2)``). Nothing is ever passed to ``eval``/``exec``: the
tree is checked node by node, then walked by :class:`Program` which calls the
engine's ops on leaf tensors. Every rejection is an :class:`ExpressionError`
carrying the line, the column and one sentence a student understands.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from engine import ops
from engine.tensor import Tensor, as_tensor_like, trace_ops
from .numbers import count, plain

MAX_TEXT_CHARS = 2000
MAX_NODES = 500       # engine ops one program may run
MAX_DEPTH = 100       # nesting of expressions (a sum of n terms nests n deep)
MAX_EXPONENT = 100    # |literal exponent| in a ** b
MAX_STATEMENTS = 100
MAX_INPUT_ELEMENTS = 10_000
MAX_INPUT_CHARS = 100_000  # input text (a 100 x 100 matrix is ~60,000 characters)
MAX_ELEMENTS = 1_000_000   # elements of any intermediate value (checked before the op allocates it)
# What one request may cost, estimated from the shapes before anything runs (see Program.estimate):
MAX_KEPT_ELEMENTS = 2_000_000  # numbers held by all values of one run (a run keeps them for backward): 16 MB
MAX_WORK = 200_000_000         # work units of all the runs a request makes (about 2 s on one core here)
OP_WORK = 5_000                # work units of one engine op beyond its numbers (Python overhead, ~10-50 µs)


class ExpressionError(ValueError):
    """A program or input text was rejected; ``line``/``col`` are 1-based (None when not known)."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None, kind: str = "not_allowed"):
        self.message = message
        self.line = line
        self.col = col
        self.kind = kind
        where = ""
        if line is not None:
            where = f"line {line}, col {col}: " if col is not None else f"line {line}: "
        super().__init__(where + message)

    def to_dict(self) -> dict:
        return {"message": self.message, "line": self.line, "col": self.col, "kind": self.kind}


# ---------------------------------------------------------------------------
# deadlines: whatever still runs long stops (checked at every op of a program, in the loops of costs, and
# wherever a page's work loops: finite differences, layout, frame building)
#
# A deadline counts the CPU time of the thread doing the request (``time.thread_time``), not the wall clock:
# under load a valid request waits for a core without spending its budget (a wall-clock deadline refused
# valid requests while 30 students stepped), and one that computes stops after its CPU seconds however busy
# the machine is. A wall-clock backstop of WALL_FACTOR times as long stops what waits forever.

WALL_FACTOR = 6.0

_DEADLINE: contextvars.ContextVar[tuple[float, float, float] | None] = contextvars.ContextVar(
    "explain_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Within the block, :func:`check_deadline` raises once the calling thread has spent ``seconds`` of CPU
    time (or ``WALL_FACTOR`` times as long has passed on the clock); the earlier of two nested deadlines wins.
    Per thread (a context variable, and the thread's own CPU clock): one session's deadline never stops
    another, and another session's work never spends this one's."""
    outer = _DEADLINE.get()
    cpu_end = time.thread_time() + seconds
    wall_end = time.monotonic() + WALL_FACTOR * seconds
    token = _DEADLINE.set((cpu_end, wall_end, seconds) if outer is None or cpu_end < outer[0] else outer)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


# A function the computing thread calls at each check_deadline (None: nothing): a server's background work pauses
# there for the requests users wait on (explorer.kit.priority). Per thread, like the deadline.
_YIELD: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("explain_yield", default=None)


@contextlib.contextmanager
def yield_to(pause: Callable[[], None]) -> Iterator[None]:
    """Within the block, every :func:`check_deadline` of this thread first calls ``pause()`` (which may block
    while more urgent work runs); the engine's long loops check their deadline often, so they yield often."""
    token = _YIELD.set(pause)
    try:
        yield
    finally:
        _YIELD.reset(token)


def check_deadline() -> None:
    """Raise :class:`ExpressionError` (kind ``limit``) when the current :func:`deadline` has passed (after the
    pause of :func:`yield_to`, where one is set)."""
    pause = _YIELD.get()
    if pause is not None:
        pause()
    d = _DEADLINE.get()
    if d is not None and (time.thread_time() > d[0] or time.monotonic() > d[1]):
        raise ExpressionError(f"stopped: this took more than the {plain(d[2])} s of computing a request may take; "
                              "use smaller inputs or a shorter program", kind="limit")


def seconds_left() -> float | None:
    """CPU seconds left to the current :func:`deadline` (None outside one): the most a subprocess the request
    starts (Graphviz) may run."""
    d = _DEADLINE.get()
    if d is None:
        return None
    return max(0.0, min(d[0] - time.thread_time(), d[1] - time.monotonic()))


# name -> (callable(tensor, *ints), number of tensor args, allows an integer `dim`): derived from the
# engine's declarations (``typed = True`` on a primitive, ``@typed`` on a function), never listed here
ALLOWED_FUNCTIONS: dict[str, tuple[Callable, int, bool]] = {
    t.name: (t.fn, t.tensors, t.takes_dim) for t in ops.typed_functions().values()}


def allowed_text() -> str:
    """What a typed program may use, for a help text: operators, numbers, names and every allowed function."""
    return "+ - * / ** @, numbers, names, and " + " ".join(ALLOWED_FUNCTIONS)


_BINOPS: dict[type, tuple[str, Callable]] = {
    ast.Add: ("+", lambda a, b: a + b),
    ast.Sub: ("-", lambda a, b: a - b),
    ast.Mult: ("*", lambda a, b: a * b),
    ast.Div: ("/", lambda a, b: a / b),
    ast.Pow: ("**", None),  # handled separately (exponent limits)
    ast.MatMult: ("@", lambda a, b: a @ b),
}
_BINOP_NAMES = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
                ast.MatMult: "matmul"}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,30}$")


def _allowed_list() -> str:
    return ", ".join(sorted(ALLOWED_FUNCTIONS))


def _pos(node: ast.AST) -> tuple[int | None, int | None]:
    line = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", None)
    return line, (col + 1 if col is not None else None)


def _err(node: ast.AST, message: str, kind: str = "not_allowed") -> ExpressionError:
    line, col = _pos(node)
    return ExpressionError(message, line, col, kind)


_DESCRIBE = {
    ast.Attribute: "attribute access (a.b)", ast.Subscript: "indexing (a[i])", ast.Lambda: "lambda",
    ast.ListComp: "list comprehension", ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression", ast.Import: "import", ast.ImportFrom: "import",
    ast.Compare: "comparison", ast.BoolOp: "and/or", ast.IfExp: "if-expression", ast.Dict: "dict",
    ast.Set: "set", ast.Tuple: "tuple", ast.List: "list", ast.Starred: "*unpacking", ast.JoinedStr: "f-string",
    ast.Await: "await", ast.Yield: "yield", ast.NamedExpr: ":=", ast.FunctionDef: "def", ast.ClassDef: "class",
    ast.For: "for loop", ast.While: "while loop", ast.If: "if statement", ast.With: "with", ast.Delete: "del",
    ast.Global: "global", ast.Try: "try", ast.Raise: "raise", ast.Return: "return", ast.AugAssign: "x += ...",
}


def _describe(node: ast.AST) -> str:
    return _DESCRIBE.get(type(node), type(node).__name__)


def _check_name(node: ast.AST, name: str, what: str) -> None:
    if name.startswith("_") or not _NAME_RE.match(name):
        raise _err(node, f"`{name[:40]}` is not an allowed {what} name: use letters, digits and _ "
                         f"(starting with a letter, at most 31 characters)")
    if name in ALLOWED_FUNCTIONS:
        raise _err(node, f"`{name}` is a function name; choose another {what} name")


def _number(node: ast.AST, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err(node, f"only numbers are allowed as constants, not {type(value).__name__} "
                         f"({str(value)[:20]!r})")
    if isinstance(value, int) and abs(value) > 10 ** 300:
        raise _err(node, "this number is too large", "limit")
    f = float(value)
    if not math.isfinite(f):
        raise _err(node, "this number is too large (it is not finite in floating point)", "limit")
    return f


# ---------------------------------------------------------------------------
# validation


def _validate_expr(node: ast.AST, depth: int, defined: set[str], used: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise _err(node, f"the expression is nested too deeply (more than {MAX_DEPTH} levels)", "limit")
    if isinstance(node, ast.Constant):
        _number(node, node.value)
    elif isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load):
            raise _err(node, "names can only be read here")
        _check_name(node, node.id, "variable")
        if node.id not in defined and node.id not in used:
            used.append(node.id)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise _err(node, f"operator {type(node.op).__name__} is not allowed; allowed: + - * / ** @")
        _validate_expr(node.left, depth + 1, defined, used)
        _validate_expr(node.right, depth + 1, defined, used)
        if isinstance(node.op, ast.Pow):
            _check_exponent(node.right)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise _err(node, f"unary operator {type(node.op).__name__} is not allowed; allowed: -x, +x")
        _validate_expr(node.operand, depth + 1, defined, used)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise _err(node, f"only plain function calls are allowed (like exp(x)); allowed functions: "
                             f"{_allowed_list()}")
        name = node.func.id
        if name not in ALLOWED_FUNCTIONS:
            raise _err(node, f"`{name[:40]}` is not an allowed function; allowed: {_allowed_list()}")
        _, n_tensor, takes_dim = ALLOWED_FUNCTIONS[name]
        n_pos = len(node.args)
        max_pos = n_tensor + (1 if takes_dim else 0)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _err(node, "*unpacking is not allowed in calls")
        if n_pos < n_tensor or n_pos > max_pos:
            want = f"{n_tensor}" + (" (and an optional integer dim)" if takes_dim else "")
            raise _err(node, f"{name}() takes {want} argument(s), got {n_pos}")
        for kw in node.keywords:
            if not takes_dim or kw.arg != "dim":
                raise _err(node, f"{name}() does not take the keyword argument `{kw.arg}`"
                           + ("; only dim=<integer>" if takes_dim else ""))
        dims = node.args[n_tensor:] + [kw.value for kw in node.keywords]
        if len(dims) > 1:
            raise _err(node, f"{name}() got dim twice")
        for d in dims:
            v = d.operand if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) else d
            if not (isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool)
                    and abs(v.value) < 32):
                raise _err(d, f"dim of {name}() must be a small integer like 0 or -1")
        for a in node.args[:n_tensor]:
            _validate_expr(a, depth + 1, defined, used)
    else:
        raise _err(node, f"{_describe(node)} is not allowed; use numbers, variables, + - * / ** @ and the "
                         f"functions {_allowed_list()}")


def _constant(node: ast.AST) -> float | None:
    """The value of a number-only expression (``10**10``, ``-(2*3)``), folded in float64 as the program is run;
    None when it reads a variable or calls a function. Called on validated nodes only."""
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.UnaryOp):
        v = _constant(node.operand)
        return None if v is None else (v if isinstance(node.op, ast.UAdd) else float(-np.float64(v)))
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        a, b = _constant(node.left), _constant(node.right)
        if a is None or b is None:
            return None
        with np.errstate(all="ignore"):
            return _fold(node.op, np.float64(a), np.float64(b), node)
    return None


def _check_exponent(node: ast.AST, value: float | None = None) -> None:
    """One rule for an exponent that is a number, however it is written: ``x1**1000000``, ``x1**10**10`` (folded
    to 1e10, then inf) and ``c = 10**10`` then ``x1**c`` alike, at most :data:`MAX_EXPONENT` in size. The parser
    checks a number-only exponent (``value`` None: folded here), the run a name holding a number (``value``); an
    exponent that holds a tensor is data.

    Raises:
        ExpressionError: kind ``limit``, at the exponent.
    """
    e = _constant(node) if value is None else value
    if e is not None and not abs(e) <= MAX_EXPONENT:   # also nan
        written = ast.unparse(node)[:40] + ("" if isinstance(node, ast.Constant) else f" = {plain(e)}")
        why = "is too large" if math.isfinite(e) else "is not a finite number"
        at = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant) else node
        raise _err(at, f"exponent {written} {why} (|exponent| <= {MAX_EXPONENT})", "limit")


@dataclass
class _Statement:
    target: str | None      # None: a bare final expression
    expr: ast.AST
    line: int
    source: str


def parse_python(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse``, safe from many threads: :mod:`explorer.kit.ast_guard` (installed when :mod:`explorer`
    is imported) makes every ``ast.parse`` in the process, the app's and its libraries', take one lock."""
    return ast.parse(source, mode=mode)


def _parse_tree(text: str, what: str, max_chars: int = MAX_TEXT_CHARS) -> ast.Module:
    if not isinstance(text, str):
        raise ExpressionError(f"the {what} must be text", kind="syntax")
    if len(text) > max_chars:
        raise ExpressionError(f"the {what} is too long ({len(text)} characters; at most {max_chars})",
                              kind="limit")
    if "\x00" in text:
        raise ExpressionError(f"the {what} contains a NUL character", kind="syntax")
    try:
        return parse_python(text, mode="exec")
    except SyntaxError as e:
        msg = (e.msg or "invalid syntax").split("\n")[0]
        return_col = e.offset if e.offset else None
        raise ExpressionError(f"syntax error: {msg}", e.lineno, return_col, "syntax") from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise ExpressionError(f"the {what} is nested too deeply or too large to read", kind="limit") from None


def parse_inputs(text: str) -> dict[str, Any]:
    """Input values from text: ``"x1 = 3, x2 = 0.5"`` or one per line; numbers or nested lists.

    Raises:
        ExpressionError: anything but ``name = number-or-list`` assignments.
    """
    if not isinstance(text, str):
        return _parse_input_lines(text)
    if len(text) > MAX_INPUT_CHARS:
        raise ExpressionError(f"the input text is too long ({len(text)} characters; at most {MAX_INPUT_CHARS})",
                              kind="limit")
    # "x1 = 3, x2 = 0.5" is a tuple-assignment in Python's grammar: split on commas (and ;) outside brackets,
    # one assignment per line; a rejection's position is then mapped back to what the user typed
    parts = _split_top_level(text)
    try:
        return _parse_input_lines("\n".join(p for p, _ in parts))
    except ExpressionError as e:
        if e.line is None or not 1 <= e.line <= len(parts):
            raise
        part, start = parts[e.line - 1]
        offset = start + min(max((e.col or 1) - 1, 0), len(part))
        line = text.count("\n", 0, offset) + 1
        col = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise ExpressionError(e.message, line, col, e.kind) from None


def _parse_input_lines(text: str) -> dict[str, Any]:
    tree = _parse_tree(text, "input text", MAX_INPUT_CHARS)
    values: dict[str, Any] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise _err(stmt, "inputs are written as name = value, for example x1 = 3, x2 = 0.5")
        name = stmt.targets[0].id
        _check_name(stmt.targets[0], name, "input")
        if name in values:
            raise _err(stmt, f"input `{name}` is given twice")
        values[name] = _literal(stmt.value, 0)
        arr = np.asarray(values[name], dtype=float)
        if arr.dtype == object or arr.size > MAX_INPUT_ELEMENTS:
            raise _err(stmt, f"input `{name}` must be a number or a rectangular list of at most "
                             f"{MAX_INPUT_ELEMENTS} numbers", "limit")
    return values


def _split_top_level(text: str) -> list[tuple[str, int]]:
    """Non-empty pieces between top-level commas, semicolons and newlines, each with the offset in ``text``
    of its first character (newlines inside brackets become spaces, one character for one)."""
    parts: list[tuple[str, int]] = []
    depth, cur, start = 0, [], 0

    def close(end: int) -> None:
        piece = "".join(cur)
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            parts.append((piece.strip(), start + lead))

    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch in ",;\n" and depth == 0:
            close(i)
            cur, start = [], i + 1
        else:
            cur.append(" " if ch in "\n\r\t" else ch)
    close(len(text))
    return parts


def _literal(node: ast.AST, depth: int):
    if depth > 6:
        raise _err(node, "input lists are nested too deeply (at most 6 levels)", "limit")
    if isinstance(node, ast.Constant):
        return _number(node, node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant):
        v = _number(node.operand, node.operand.value)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, (ast.List, ast.Tuple)):
        if not node.elts:
            raise _err(node, "an input list must not be empty")
        items = [_literal(e, depth + 1) for e in node.elts]
        shapes = {np.shape(i) for i in items}
        if len(shapes) != 1:
            raise _err(node, "an input list must be rectangular (all rows the same length)", "shape")
        return items
    what = {ast.Call: "a function call", ast.Name: "a name"}.get(type(node)) or _describe(node)
    raise _err(node, f"an input value must be a number or a list of numbers, not {what}")


# ---------------------------------------------------------------------------
# the program


@dataclass
class OpRecord:
    """One engine op the program ran (from ``trace_ops``), with the statement it belongs to."""
    op: str
    inputs: tuple
    params: Any
    out: Tensor
    statement: int
    line: int


@dataclass
class Evaluation:
    output: Tensor
    records: list[OpRecord]
    names: dict[int, str]          # Tensor.unique_id -> lecture name
    groups: dict[int, str]         # Tensor.unique_id -> statement target
    exprs: dict[int, str]          # Tensor.unique_id -> source of the statement
    composites: list["CompositeCall"] = field(default_factory=list)


@dataclass
class CompositeCall:
    """One typed operation that ran as several engine primitives (``tanh(y)``, ``a - b`` on tensors).

    ``outputs``: Tensor.unique_id of every primitive output it made that takes a gradient (the last is
    the composite's result); ``args``: its operands, each a Tensor or a number.
    """
    name: str
    outputs: list[int]
    args: list[Any]


@dataclass
class Program:
    """A validated program; evaluate it on tensors any number of times."""

    text: str
    input_names: list[str]
    output_name: str
    assigned_names: list[str]
    statements: list[_Statement] = field(repr=False)
    given_names: list[str] = field(default_factory=list)   # every input name the user typed

    def function(self) -> Callable[..., Tensor]:
        """``f(*tensors)`` with arguments in ``input_names`` order (for ``engine.grad`` / ``jvp``)."""
        def f(*args):
            return self.evaluate(dict(zip(self.input_names, args))).output
        return f

    def evaluate(self, tensors: Mapping[str, Tensor]) -> Evaluation:
        """Run the program with engine ops on ``tensors`` (name -> Tensor).

        Raises:
            ExpressionError: missing inputs, shape mismatches, too many ops, output not a tensor.
        """
        missing = [n for n in self.input_names if n not in tensors]
        if missing:
            raise ExpressionError(f"no value given for input(s) {', '.join(missing)}", kind="undefined")
        env: dict[str, Any] = {n: tensors[n] for n in self.input_names}
        like = next((t for t in env.values() if isinstance(t, Tensor)), None)
        records: list[OpRecord] = []
        where = {"statement": 0, "line": 1, "kept": 0}

        def hook(op, inputs, params, out):
            if len(records) >= MAX_NODES:
                raise ExpressionError(f"the program needs more than {MAX_NODES} operations", where["line"],
                                      kind="limit")
            # a guard at run time too (the estimate is the first line of defence, see estimate())
            where["kept"] += out.numel()
            if where["kept"] > MAX_KEPT_ELEMENTS:
                raise ExpressionError(_kept_message(where["kept"]), where["line"], kind="limit")
            check_deadline()
            records.append(OpRecord(op.name, inputs, params, out, where["statement"], where["line"]))

        names: dict[int, str] = {}
        groups: dict[int, str] = {}
        exprs: dict[int, str] = {}
        composites: list[CompositeCall] = []
        env[_RECORDS], env[_COMPOSITES] = records, composites  # user names never start with "_"
        for n, t in env.items():
            if isinstance(t, Tensor):
                names[t.unique_id] = n
        value: Any = None
        with np.errstate(all="ignore"), trace_ops(hook):
            for i, st in enumerate(self.statements):
                where["statement"], where["line"] = i, st.line
                start = len(records)
                value = self._eval(st.expr, env, like)
                target = st.target if st.target is not None else self.output_name
                env[target] = value
                for r in records[start:]:
                    groups[r.out.unique_id] = target
                    exprs[r.out.unique_id] = st.source
                if isinstance(value, Tensor) and value.unique_id not in {t.unique_id for t in tensors.values()}:
                    names[value.unique_id] = target
        if not isinstance(value, Tensor):
            raise ExpressionError("the output does not depend on any input (it is a plain number)",
                                  self.statements[-1].line, kind="undefined")
        self._name_temporaries(records, names, composites)
        return Evaluation(value, records, names, groups, exprs, composites)

    def estimate(self, shapes: Mapping[str, tuple]) -> "CostEstimate":
        """What one run costs, from the inputs' shapes alone: the program is evaluated on abstract tensors
        of a static graph (shapes only, nothing computed, about a millisecond), so every op, composite
        and broadcast is counted as the engine would run it.

        Args:
            shapes: input name -> shape (``()`` for a number).
        Returns:
            a :class:`CostEstimate` of one forward run (``complete`` False when the abstract evaluation
            could not follow the program; the run-time guards of :meth:`evaluate` still hold).
        Raises:
            ExpressionError: (kind ``limit``) at the first line whose values would hold more than
                ``MAX_KEPT_ELEMENTS`` numbers, or an op larger than ``MAX_ELEMENTS``.
        """
        from engine.static.graph import Graph, placeholder  # the static engine: abstract evaluation

        g = Graph(name="estimate")
        est = CostEstimate()
        seen = 0
        try:
            with g.as_default():
                env: dict[str, Any] = {n: placeholder(tuple(shapes[n]), name=n) for n in self.input_names}
                est.work += OP_WORK * len(env)  # each run makes a leaf tensor per input
                like = next(iter(env.values()), None)
                for st in self.statements:
                    env[st.target if st.target is not None else self.output_name] = self._eval(st.expr, env, like)
                    for node in g.nodes[seen:]:
                        if node.kind != "op":
                            continue
                        size = int(math.prod(node.shape))
                        est.ops += 1
                        est.elements += size
                        est.work += size + OP_WORK
                        # a matrix product's m*k*n multiply-adds, not only its m*n results
                        est.work += node.op.multiply_adds([t.shape for t in node.inputs], node.shape)
                        if size > est.largest:
                            est.largest, est.largest_line = size, st.line
                        if est.ops > MAX_NODES:
                            raise ExpressionError(f"the program needs more than {MAX_NODES} operations", st.line,
                                                  kind="limit")
                        if est.elements > MAX_KEPT_ELEMENTS:
                            raise ExpressionError(_kept_message(est.elements), st.line, kind="limit")
                    seen = len(g.nodes)
        except ExpressionError as e:
            if e.kind == "limit":
                raise
            est.complete = False   # e.g. a shape error: the eager run reports it in its own words
        except (RecursionError, MemoryError):
            raise ExpressionError("the program is too large to analyse", kind="limit") from None
        except Exception:  # noqa: BLE001 - a gap of the abstract evaluation must not block a valid program
            est.complete = False
        return est

    def _name_temporaries(self, records: list[OpRecord], names: dict[int, str],
                          composites: list[CompositeCall] = ()) -> None:
        # the primitives inside a composite (tanh = 2·sigmoid(2y) − 1) are named after its result
        # (v2.1, v2.2, ...), so the names a class sees count the typed operations
        inner_of = {u: c for c in composites for u in c.outputs[:-1]}
        taken = set(names.values()) | set(self.input_names) | set(self.assigned_names) | set(self.given_names)
        lecture = all(re.fullmatch(r"x\d+", n) for n in self.input_names)
        k = 1 + max([int(n[1:]) for n in taken if re.fullmatch(r"x\d+", n)] or [0])
        j = 1
        for r in records:
            uid = r.out.unique_id
            if uid in names or not r.out.requires_grad or uid in inner_of:
                continue  # an op on numbers only is a number: the graph shows it as its value
            if lecture:
                while f"x{k}" in taken:
                    k += 1
                name, k = f"x{k}", k + 1
            else:
                while f"v{j}" in taken:
                    j += 1
                name, j = f"v{j}", j + 1
            taken.add(name)
            names[uid] = name
        for c in composites:
            inner = [u for u in c.outputs[:-1] if u not in names]
            for m, u in enumerate(inner, 1):
                names[u] = f"{names.get(c.outputs[-1], 'v')}.{m}"

    def _eval(self, node: ast.AST, env: dict, like: Tensor | None):
        try:
            return self._eval_inner(node, env, like)
        except ExpressionError:
            raise
        except MemoryError:
            raise _err(node, "cannot compute this: not enough memory for the values of this line", "limit") \
                from None
        except RecursionError:
            raise _err(node, "cannot compute this: the expression is nested too deeply", "limit") from None
        except (ValueError, TypeError, RuntimeError, IndexError, ArithmeticError, NotImplementedError) as e:
            msg = str(e).split("\n")[0][:200] or type(e).__name__
            kind = "math" if isinstance(e, ArithmeticError) else "shape"
            raise _err(node, f"cannot compute this: {msg}", kind) from None

    def _eval_inner(self, node: ast.AST, env: dict, like: Tensor | None):
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env, like)
            if isinstance(node.op, ast.UAdd):
                return v
            return float(-np.float64(v)) if not isinstance(v, Tensor) else -v
        if isinstance(node, ast.BinOp):
            a = self._eval(node.left, env, like)
            b = self._eval(node.right, env, like)
            if isinstance(node.op, ast.Pow) and not isinstance(b, Tensor):
                _check_exponent(node.right, float(b))
            if not isinstance(a, Tensor) and not isinstance(b, Tensor):
                # fold number-only arithmetic in float64 (never Python's unbounded ints)
                return _fold(node.op, np.float64(a), np.float64(b), node)
            if isinstance(node.op, ast.Pow):
                _check_size(node, a, b)
                if isinstance(b, Tensor):
                    return ops.pow(a, b) if isinstance(a, Tensor) else ops.rpow(a, b)
                return ops.pow(a, b)
            if isinstance(node.op, ast.MatMult) and (not isinstance(a, Tensor) or not isinstance(b, Tensor)):
                raise _err(node, "@ needs a tensor on both sides", "shape")
            _check_size(node, a, b)
            return _composite(env, _BINOP_NAMES[type(node.op)], [a, b], lambda: _BINOPS[type(node.op)][1](a, b))
        if isinstance(node, ast.Call):
            fn, n_tensor, _ = ALLOWED_FUNCTIONS[node.func.id]
            args = [self._eval(a, env, like) for a in node.args[:n_tensor]]
            dims = [_int_const(d) for d in node.args[n_tensor:]] + [_int_const(kw.value) for kw in node.keywords]
            ref = next((a for a in args if isinstance(a, Tensor)), like)
            if ref is None:
                raise _err(node, "a function needs at least one input variable", "undefined")
            typed = list(args)
            args = [a if isinstance(a, Tensor) else as_tensor_like(a, ref) for a in args]
            if n_tensor == 2:
                return _composite(env, node.func.id, typed, lambda: fn(args[0], args[1]))
            return _composite(env, node.func.id, typed, lambda: fn(args[0], *dims))
        raise _err(node, f"{_describe(node)} is not allowed")  # unreachable after validation


def _kept_message(n: int) -> str:
    return (f"the program is too big to run here: by this line its values hold {count(n)} numbers "
            f"(at most {count(MAX_KEPT_ELEMENTS)} per run); use smaller inputs or fewer lines")


@dataclass
class CostEstimate:
    """The cost of one forward run of a program, from shapes (see :meth:`Program.estimate`).

    ``work`` counts numbers computed (a matmul counts its multiply-adds) plus ``OP_WORK`` per op and per
    input for the Python overhead of each; one work unit is roughly 5-10 ns of one core here.
    """
    ops: int = 0
    elements: int = 0          # numbers held by all the values (the graph keeps them for backward)
    work: int = 0
    largest: int = 0           # elements of the largest value
    largest_line: int | None = None
    complete: bool = True

    def check(self, runs: int, what: str = "this page") -> None:
        """Refuse a request that runs the program ``runs`` times (forward, backward, finite differences...)
        when ``runs * work`` exceeds ``MAX_WORK``.

        Raises:
            ExpressionError: kind ``limit``, naming the budget and what exceeded it.
        """
        total = runs * self.work
        if total > MAX_WORK:
            line = self.largest_line if self.largest > 1 else None
            raise ExpressionError(
                f"too much work for one request: {what} runs the program about {runs} times, each run "
                f"{self.ops} operations on {count(self.elements)} numbers in all (largest value: {count(self.largest)} "
                f"numbers), {count(total)} work units in all; the budget is {count(MAX_WORK)}. Use smaller inputs "
                "or a shorter program", line, kind="limit")


def estimate_cost(program: "Program | str", inputs: Mapping[str, Any] | str) -> CostEstimate:
    """:meth:`Program.estimate` from the input values (or texts) themselves.

    Raises:
        ExpressionError: a bad program or inputs, or beyond the limits (kind ``limit``).
    """
    if isinstance(inputs, str):
        inputs = parse_inputs(inputs)
    if isinstance(program, str):
        program = parse_program(program, inputs)
    missing = [n for n in program.input_names if n not in inputs]
    if missing:
        raise ExpressionError(f"no value given for input(s) {', '.join(missing)}", kind="undefined")
    return program.estimate({n: np.shape(inputs[n]) for n in program.input_names})


_RECORDS, _COMPOSITES = "_records", "_composites"


def _composite(env: dict, name: str, args: list, run: Callable[[], Any]):
    """Run one typed operation; when it took several primitives that carry a gradient, note them as
    one :class:`CompositeCall` (the pictures draw it as one node that can be expanded)."""
    records = env.get(_RECORDS)
    start = len(records) if records is not None else 0
    out = run()
    if records is not None:
        made = [r.out.unique_id for r in records[start:] if r.out.requires_grad]
        if len(made) > 1:
            env[_COMPOSITES].append(CompositeCall(name, made, args))
    return out


def _check_size(node: ast.BinOp, a, b) -> None:
    """Refuse an op whose result would be huge (e.g. a column times a row) before it allocates."""
    sa = a.shape if isinstance(a, Tensor) else ()
    sb = b.shape if isinstance(b, Tensor) else ()
    try:
        if isinstance(node.op, ast.MatMult):
            if len(sa) >= 2 and len(sb) >= 2:
                batch = np.broadcast_shapes(sa[:-2], sb[:-2])
                shape = (*batch, sa[-2], sb[-1])
            else:
                return  # vector cases are never bigger than their inputs
        else:
            shape = np.broadcast_shapes(sa, sb)
    except ValueError:
        return  # the engine reports the mismatch with its own message
    size = int(np.prod(shape, dtype=np.float64))
    if size > MAX_ELEMENTS:
        raise _err(node, f"this would make a value of shape {tuple(int(d) for d in shape)} "
                         f"({size} numbers; at most {MAX_ELEMENTS})", "limit")


def _int_const(node: ast.AST) -> int:
    if isinstance(node, ast.UnaryOp):
        return -int(node.operand.value)
    return int(node.value)


def _fold(op: ast.operator, a: np.float64, b: np.float64, node: ast.AST) -> float:
    if isinstance(op, ast.Add):
        return float(a + b)
    if isinstance(op, ast.Sub):
        return float(a - b)
    if isinstance(op, ast.Mult):
        return float(a * b)
    if isinstance(op, ast.Div):
        return float(a / b) if b != 0 else float(np.float64(a) / np.float64(b))
    if isinstance(op, ast.Pow):
        return float(np.power(a, b))
    raise _err(node, "@ needs tensors on both sides", "shape")


def parse_program(text: str, inputs: Mapping[str, Any] | str | None = None) -> Program:
    """Validate a program (``name = expr`` lines; the last one is the output).

    Args:
        text: the program, e.g. ``"f = x1 + exp(1.5*x1 + 2*x2)"``.
        inputs: optional input values (dict or text for :func:`parse_inputs`); when given,
            every variable the program reads must be an input or assigned before.

    Returns:
        a :class:`Program` (validated, not yet evaluated).

    Raises:
        ExpressionError: with line, column and a one-line explanation.
    """
    tree = _parse_tree(text, "program")
    if not tree.body:
        raise ExpressionError("the program is empty; write for example f = x1 + exp(1.5*x1 + 2*x2)", kind="syntax")
    if len(tree.body) > MAX_STATEMENTS:
        raise ExpressionError(f"the program has too many lines (at most {MAX_STATEMENTS})", kind="limit")
    if isinstance(inputs, str):
        inputs = parse_inputs(inputs)
    input_set = set(inputs) if inputs is not None else None
    lines = text.splitlines()
    defined: set[str] = set()
    used: list[str] = []
    statements: list[_Statement] = []
    assigned: list[str] = []
    for i, stmt in enumerate(tree.body):
        last = i == len(tree.body) - 1
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                raise _err(stmt, "assign to one plain name, like x3 = 1.5 * x1")
            target = stmt.targets[0].id
            _check_name(stmt.targets[0], target, "variable")
            if target in used or (input_set is not None and target in input_set):
                raise _err(stmt, f"`{target}` is an input; give this line another name")
            if target in defined:
                raise _err(stmt, f"`{target}` is assigned twice; each name is assigned once")
            expr = stmt.value
        elif isinstance(stmt, ast.Expr) and last:
            target, expr = None, stmt.value
        else:
            what = "a bare expression (only the last line may be one)" if isinstance(stmt, ast.Expr) \
                else _describe(stmt)
            raise _err(stmt, f"{what} is not allowed; write name = expression")
        _validate_expr(expr, 1, defined, used)
        if target is not None:
            defined.add(target)
            assigned.append(target)
        src = lines[stmt.lineno - 1].strip() if 0 < stmt.lineno <= len(lines) else ""
        statements.append(_Statement(target, expr, stmt.lineno, src))
    output = statements[-1].target or "f"
    if statements[-1].target is None and output in defined:
        output = "out"
    if input_set is not None:
        for name in used:
            if name not in input_set:
                node = _first_use(tree, name)
                have = ", ".join(sorted(input_set)) or "none"
                raise _err(node, f"`{name}` is not defined: give it a value (inputs: {have}) or assign it "
                                 f"on an earlier line", "undefined")
    return Program(text, used, output, assigned, statements, sorted(input_set or ()))


def _first_use(tree: ast.AST, name: str) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name:
            return node
    return tree
