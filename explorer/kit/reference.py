"""PyTorch as a reference, computed in a child process so that the server never imports it.

Importing PyTorch costs a server about 1.7 s of CPU and 165 MB of resident memory that it then keeps for
good: more than one request may cost. The pages' comparisons against PyTorch are fixed
computations with fixed inputs, so :func:`in_reference_process` runs ``module:function(*args)`` in a
short-lived child interpreter (where the function may import PyTorch), returns its JSON-able result and
keeps it for the life of the server process. Without PyTorch installed the answer is ``None`` at once.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# the child's nice value: its work is background work (a fixed figure), so on a loaded server the server's own
# threads (a Step, a page open) come first: the server and its children share one scheduling group (Linux's
# autogroup: one per session), where a nice-10 task weighs about a tenth of a nice-0 one. Not 19: a child that
# got ~1.5 % of a core beside a busy thread did not finish in minutes, and a request waiting for it failed
CHILD_NICENESS = 10
CHILD_TIMEOUT_S = 180.0   # wall clock; the child needs about 2.5 s of CPU (PyTorch's import and the comparison)
_ROOT = str(Path(__file__).resolve().parents[2])
_CHILD = ("import importlib, json, os, sys\n"
          f"os.nice({CHILD_NICENESS})\n"
          "mod, fn = sys.argv[1].split(':')\n"
          "out = getattr(importlib.import_module(mod), fn)(*json.loads(sys.argv[2]))\n"
          "sys.stdout.write('\\n' + json.dumps(out))\n")


class ReferenceFailed(RuntimeError):
    """The child process computing a reference failed or timed out."""


def torch_installed() -> bool:
    """Whether PyTorch can be imported here (looked up, not imported)."""
    return importlib.util.find_spec("torch") is not None


@functools.lru_cache(maxsize=64)
def _run(target: str, args_json: str) -> Any:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, target, args_json], capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S, env=env, cwd=_ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ReferenceFailed(f"the reference computation did not finish ({type(e).__name__})") from e
    if done.returncode != 0:
        raise ReferenceFailed("the reference computation failed: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])


def in_reference_process(target: str, *args: Any) -> Any:
    """``module:function(*args)`` computed in a child interpreter that may import PyTorch (once per server
    process and arguments); ``None`` when PyTorch is not installed. Arguments and result are JSON.

    Raises:
        ReferenceFailed: the child failed or took longer than :data:`CHILD_TIMEOUT_S`.
    """
    if not torch_installed():
        return None
    return _run(target, json.dumps(list(args)))
