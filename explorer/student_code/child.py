"""The sandbox: runs a student's ``topological_sort`` and ``backpropagate`` in a process of its own.

Started by :mod:`explorer.student_code.runner` as ``python -m explorer.student_code.child``, never
imported by the app. It reads one JSON request on stdin, limits itself (address space, CPU seconds,
a wall-clock alarm per call), loads the student's file, and for each graph of the request hands the
student's functions proxies of the engine's graph that record every protocol call. What it writes back
is plain data, one JSON object per line, on the stdout it had when it started (the student's own
``print`` output goes to stderr).
"""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import signal
import sys
import traceback
import types
from pathlib import Path

MAX_EVENTS = 100_000         # protocol calls kept per run (all are counted): 3 per VJP call at the work limit
VALUE_ELEMENTS = 16          # values kept per recorded tensor (the graphs' tensors are smaller)


class TimeLimit(BaseException):
    """The wall-clock alarm of one call went off (a BaseException: ``except Exception`` in the student's
    code does not swallow it)."""


class WorkLimit(BaseException):
    """Too many VJP calls on one graph (recursion along every path on a deep graph)."""


# --- the student's module --------------------------------------------------------------------


def find_autodiff(path: str) -> Path:
    """The ``autodiff.py`` that ``path`` names: the file itself, ``minitorch/autodiff.py`` inside an HW2
    checkout, or ``autodiff.py`` inside a folder.

    Raises:
        FileNotFoundError: none of them exists.
    """
    p = Path(path).expanduser().resolve()
    if p.is_file():
        return p
    for cand in (p / "minitorch" / "autodiff.py", p / "autodiff.py"):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"no autodiff.py at {path} (looked for the file, minitorch/autodiff.py and autodiff.py)")


def load_student(file: Path) -> types.ModuleType:
    """Import ``file``. Inside a package (an ``__init__.py`` beside it, as HW2's ``minitorch/``) it is
    loaded as ``<package>.autodiff`` so that its relative imports find their siblings; the package's own
    ``__init__`` is not run (HW2's imports CUDA kernels and every other module of the homework)."""
    folder = file.parent
    if (folder / "__init__.py").is_file() and folder.name.isidentifier():
        pkg = types.ModuleType(folder.name)
        pkg.__path__ = [str(folder)]
        pkg.__package__ = folder.name
        sys.modules[folder.name] = pkg
        sys.path.insert(0, str(folder.parent))
        name = f"{folder.name}.{file.stem}"
    else:
        sys.path.insert(0, str(folder))
        name = f"student_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# --- errors as plain data --------------------------------------------------------------------


def describe_error(exc: BaseException, root: Path, limit_s: float | None = None) -> dict:
    """What went wrong, as the report shows it: kind, type, message, and the student's file and line (the
    innermost frame inside the student's folder); ``depth`` counts the student's frames on the stack."""
    kind = {NotImplementedError: "not_implemented", RecursionError: "recursion", TimeLimit: "time_limit",
            WorkLimit: "work_limit", MemoryError: "memory", SyntaxError: "syntax_error"}
    k = next((v for t, v in kind.items() if isinstance(exc, t)), "exception")
    out = {"kind": k, "type": type(exc).__name__, "message": str(exc)[:500], "file": None, "line": None,
           "code": None, "function": None, "depth": 0}
    if isinstance(exc, SyntaxError):
        out.update(file=_rel(exc.filename, root), line=exc.lineno, code=(exc.text or "").rstrip()[:200],
                   message=exc.msg)
        return out
    student = [f for f in traceback.extract_tb(exc.__traceback__) if _inside(f.filename, root)]
    out["depth"] = len(student)
    if student:
        f = student[-1]
        out.update(file=_rel(f.filename, root), line=f.lineno, code=(f.line or "")[:200], function=f.name)
    if k == "time_limit" and limit_s is not None:
        out["message"] = f"still running after {limit_s:g} s"
    return out


def _inside(filename: str, root: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def _rel(filename: str | None, root: Path) -> str | None:
    if not filename:
        return None
    p = Path(filename)
    try:
        return str(p.resolve().relative_to(root.parent))
    except (OSError, ValueError):
        return p.name


# --- proxies that record the protocol calls -------------------------------------------------


def _plain(x):
    """A recorded value: a float, a short nested list, or a note of the type for anything else."""
    from engine import Tensor
    import numpy as np
    if isinstance(x, Tensor):
        arr = x.numpy()
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        arr = np.asarray(float(x))
    else:
        return {"type": type(x).__name__}
    if arr.size == 1:
        v = float(arr.reshape(()))
        return v if np.isfinite(v) else str(v)
    if arr.size > VALUE_ELEMENTS:
        return {"shape": list(arr.shape)}
    return np.where(np.isfinite(arr), arr, 0.0).astype(float).tolist()


class Recording:
    """Every protocol call a student's function made on one graph, in order: ``vjp`` (chain_rule called on
    ``node`` with ``value``), ``send`` (chain_rule handed ``parent`` the contribution ``value``), ``acc``
    (accumulate_derivative on ``node`` with ``value``)."""

    def __init__(self, built, max_vjp_calls: int) -> None:
        self.built = built
        self.events: list[list] = []
        self.n_events = self.vjp_calls = self.acc_calls = self.parents_calls = 0
        self.max_vjp_calls = max_vjp_calls
        self._proxies: dict[int, "Variable"] = {}

    def proxy(self, t) -> "Variable":
        p = self._proxies.get(t.unique_id)
        if p is None:
            p = self._proxies[t.unique_id] = Variable(t, self.built.node_of[t.unique_id], self)
        return p

    def add(self, kind: str, node: int, parent, value) -> None:
        self.n_events += 1
        if len(self.events) < MAX_EVENTS:
            self.events.append([kind, node, parent, value])


class Variable:
    """A node of the engine's graph as the student's code sees it: HW2's protocol, every call recorded."""

    __slots__ = ("_t", "_id", "_rec")

    def __init__(self, t, node_id: int, rec: Recording) -> None:
        self._t, self._id, self._rec = t, node_id, rec

    @property
    def unique_id(self) -> int:
        return self._id

    @property
    def parents(self):
        self._rec.parents_calls += 1
        return tuple(self._rec.proxy(p) for p in self._t.parents)

    def is_leaf(self) -> bool:
        return self._t.is_leaf()

    def is_constant(self) -> bool:
        return self._t.is_constant()

    def chain_rule(self, d_output):
        from engine import Tensor, tensor
        rec = self._rec
        rec.vjp_calls += 1
        if rec.vjp_calls > rec.max_vjp_calls:
            raise WorkLimit(f"more than {rec.max_vjp_calls:,} chain_rule calls on a graph of "
                            f"{len(rec.built.names):,} nodes")
        rec.add("vjp", self._id, None, _plain(d_output))
        if isinstance(d_output, (int, float)) and not isinstance(d_output, bool):
            d_output = tensor(float(d_output) if self._t.numel() == 1 else [float(d_output)] * self._t.numel())
        if not isinstance(d_output, Tensor):
            raise TypeError(f"chain_rule expects the node's derivative (a tensor), got {type(d_output).__name__}")
        if self._t.is_leaf():
            return []   # a leaf (or a constant) has no inputs to send anything to
        out = []
        for p, d in self._t.chain_rule(d_output):
            v = rec.proxy(p)
            rec.add("send", self._id, v._id, _plain(d))
            out.append((v, d))
        return out

    def accumulate_derivative(self, x) -> None:
        self._rec.acc_calls += 1
        self._rec.add("acc", self._id, None, _plain(x))

    def __repr__(self) -> str:
        return f"Variable({self._rec.built.names.get(self._id, self._id)})"

    def __getattr__(self, name: str):
        raise AttributeError(f"the explorer's Variable has no attribute {name!r}: your code gets HW2's protocol "
                             "only (unique_id, parents, is_leaf(), is_constant(), chain_rule(d), "
                             "accumulate_derivative(d))")


# --- running one graph -----------------------------------------------------------------------


def _alarm(signum, frame):
    raise TimeLimit()


def _call(fn, limit_s: float, *args):
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        result = fn(*args)
        if result is not None and not isinstance(result, (list, tuple)) and hasattr(result, "__iter__"):
            result = list(result)   # a generator runs under the same alarm
        return result
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def run_graph(mod, key: str, root: Path, limit_s: float, max_vjp_calls: int) -> dict:
    """The student's ``topological_sort`` and ``backpropagate`` on graph ``key`` (each on a fresh build)."""
    from engine.ops import ones_like
    from .graphs import build, spec_for
    out: dict = {"type": "graph", "key": key}
    built = build(spec_for(key))
    rec = Recording(built, max_vjp_calls)
    try:
        order = _call(mod.topological_sort, limit_s, rec.proxy(built.output))
        ids, bad = [], None
        for v in (order if isinstance(order, (list, tuple)) else []):
            if isinstance(v, Variable):
                ids.append(v._id)
            elif bad is None:
                bad = type(v).__name__
        out["sort"] = {"order": ids, "returned": type(order).__name__, "not_variable": bad, "error": None}
    except BaseException as e:  # noqa: BLE001 - anything the student's code raises is reported
        out["sort"] = {"order": None, "error": describe_error(e, root, limit_s)}
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            out["sort"]["error"]["kind"] = "exception"
    built = build(spec_for(key))
    rec = Recording(built, max_vjp_calls)
    seed = ones_like(built.output)
    error = None
    try:
        _call(mod.backpropagate, limit_s, rec.proxy(built.output), seed)
    except BaseException as e:  # noqa: BLE001
        error = describe_error(e, root, limit_s)
    out["backprop"] = {"events": rec.events, "n_events": rec.n_events, "vjp_calls": rec.vjp_calls,
                       "acc_calls": rec.acc_calls, "error": error}
    return out


def limit_resources(memory_mb: int, cpu_s: int) -> None:
    """Address space and CPU time of this process (the student's code runs under both)."""
    mem = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> int:
    request = json.loads(sys.stdin.read())
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                       # the student's prints go to stderr, never into the results
    sys.stdout = sys.stderr

    def emit(obj: dict) -> None:
        results.write(json.dumps(obj) + "\n")
        results.flush()

    import numpy  # noqa: F401  (the engine's imports happen before the limits, so they do not count)
    import engine  # noqa: F401
    from explorer.explain import trace  # noqa: F401
    signal.signal(signal.SIGALRM, _alarm)
    limit_resources(int(request.get("memory_mb", 1024)), int(request.get("cpu_s", 120)))
    limit_s = float(request.get("time_limit_s", 3.0))
    try:
        file = find_autodiff(request["path"])
    except FileNotFoundError as e:
        emit({"type": "load", "ok": False, "error": {"kind": "missing", "type": "FileNotFoundError",
                                                      "message": str(e), "file": None, "line": None, "code": None,
                                                      "function": None, "depth": 0}})
        return 0
    root = file.parent
    try:
        mod = _call(load_student, limit_s, file)
        missing = [n for n in ("topological_sort", "backpropagate") if not callable(getattr(mod, n, None))]
        if missing:
            raise AttributeError(f"{file.name} defines no {' and no '.join(missing)}")
    except BaseException as e:  # noqa: BLE001
        emit({"type": "load", "ok": False, "file": str(file), "error": describe_error(e, root, limit_s)})
        return 0
    emit({"type": "load", "ok": True, "file": str(file)})
    sys.setrecursionlimit(1000)   # Python's default, whatever the caller had: the limit students meet
    keys = list(request["graphs"])
    for i, key in enumerate(keys):
        res = run_graph(mod, key, root, limit_s, int(request.get("max_vjp_calls", 20_000)))
        emit(res)
        stopped = [e for e in (res["sort"]["error"], res["backprop"]["error"])
                   if e and e["kind"] in ("time_limit", "memory")]
        if stopped and i + 1 < len(keys):   # the next graphs would each wait for the same limit
            emit({"type": "stopped", "after": key, "reason": stopped[0]["kind"], "skipped": keys[i + 1:]})
            break
    emit({"type": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
