"""Run a student's ``autodiff.py`` in the sandboxed child process and collect what it recorded.

The app's process never imports the student's file: it starts ``python -m explorer.student_code.child``
(its own address-space and CPU limits, a wall-clock alarm per call), sends the request as JSON, and
reads back plain data. The child is killed when the whole run outlives ``total_limit_s``; what it
reported by then is kept.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .graphs import all_keys
from explorer.explain.numbers import plain

ROOT = Path(__file__).resolve().parents[2]   # the checkout holding engine/ and explorer/

TIME_LIMIT_S = 3.0          # per call of the student's topological_sort / backpropagate
TOTAL_LIMIT_S = 120.0       # the whole run (every graph)
MEMORY_MB = 1536            # the child's address space (NumPy and the engine take ~400 MB of it)
MAX_VJP_CALLS = 20_000      # per graph: recursion along every path is stopped here


@dataclass
class StudentRun:
    """What the child reported: how loading went (``load``: ok, file, error), one raw result per graph
    (``graphs``: key -> sort / backprop records), graphs not run and why (``skipped``), and the child's
    stderr tail (the student's prints, or why it died)."""
    path: str
    load: dict
    graphs: dict[str, dict] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stderr: str = ""
    limits: dict = field(default_factory=dict)


def run_student_code(path: str | os.PathLike, keys: list[str] | None = None, time_limit_s: float = TIME_LIMIT_S,
                     total_limit_s: float = TOTAL_LIMIT_S, memory_mb: int = MEMORY_MB,
                     max_vjp_calls: int = MAX_VJP_CALLS) -> StudentRun:
    """Run the student's two functions on the graphs ``keys`` (default: every graph) in a child process.

    Never raises for anything the student's code does; a child that dies or is killed is reported in
    ``load`` (before loading) or ``skipped`` (the graphs it did not reach).
    """
    keys = list(keys) if keys is not None else all_keys()
    # the child runs in an empty temporary folder: a relative path is read from this process's folder
    request = {"path": str(Path(path).expanduser().resolve()), "graphs": keys, "time_limit_s": time_limit_s, "memory_mb": memory_mb,
               "cpu_s": int(total_limit_s) + 5, "max_vjp_calls": max_vjp_calls}
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")}
    # this checkout's engine and explorer (not another checkout's editable install); no user site
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONNOUSERSITE"] = "1"
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
    limits = {"time_limit_s": time_limit_s, "total_limit_s": total_limit_s, "memory_mb": memory_mb,
              "max_vjp_calls": max_vjp_calls}
    with tempfile.TemporaryDirectory(prefix="student-code-") as cwd:
        proc = subprocess.Popen([sys.executable, "-m", "explorer.student_code.child"], cwd=cwd, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = False
        try:
            out, err = proc.communicate(json.dumps(request), timeout=total_limit_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            killed = True
    run = StudentRun(str(path), {}, stderr=(err or "")[-4000:], limits=limits)
    for line in (out or "").splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        kind = msg.get("type")
        if kind == "load":
            run.load = msg
        elif kind == "graph":
            run.graphs[msg["key"]] = msg
        elif kind == "stopped":
            for k in msg.get("skipped", []):
                run.skipped[k] = (f"not run: the code was stopped at the {_limit_name(msg.get('reason'))} on "
                                  f"graph {msg.get('after')}")
    if not run.load:
        why = (f"the child process was stopped after {plain(total_limit_s)} s" if killed else
               f"the child process exited with code {proc.returncode} before loading the file")
        run.load = {"type": "load", "ok": False, "error": {"kind": "crashed", "type": "", "message": why,
                                                           "file": None, "line": None, "code": None,
                                                           "function": None, "depth": 0}}
    elif run.load.get("ok"):
        why = (f"not run: the whole run was stopped after {plain(total_limit_s)} s" if killed else
               f"not run: the child process exited with code {proc.returncode} (memory or CPU limit?)")
        for k in keys:
            if k not in run.graphs and k not in run.skipped:
                run.skipped[k] = why
    return run


def _limit_name(kind: str | None) -> str:
    return {"time_limit": "time limit", "memory": "memory limit"}.get(kind or "", "limit")
