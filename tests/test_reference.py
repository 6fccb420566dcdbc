"""PyTorch comparisons run in a child process: the server process never imports PyTorch."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from explorer.kit import reference

ROOT = Path(__file__).resolve().parents[1]


def test_pages_comparisons_leave_torch_out_of_the_server_process():
    code = ("import sys\n"
            "from explorer.cross_entropy import batch_example\n"
            "from explorer.gradient_check import notes_checks\n"
            "b = batch_example(); rows = notes_checks()\n"
            "print('torch' in sys.modules, b.torch_grad_difference, rows[0].engine)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    imported, grad_diff, ops_diff = out.stdout.split()
    assert imported == "False"
    if reference.torch_installed():     # the comparisons were made, in the child
        assert float(grad_diff) < 1e-12 and float(ops_diff) < 1e-12
    else:
        assert grad_diff == ops_diff == "None"


def test_a_failing_child_is_a_typed_error(monkeypatch):
    monkeypatch.setattr(reference, "torch_installed", lambda: True)
    reference._run.cache_clear()
    with pytest.raises(reference.ReferenceFailed):
        reference.in_reference_process("explorer.kit.reference:no_such_function")


def test_the_reference_child_runs_below_the_server(monkeypatch):
    """The child is background work: it runs at CHILD_NICENESS more than the server (a Step or a page open of the
    server's own threads comes first on a loaded machine)."""
    import os
    here = os.nice(0)
    child = reference._run("os:nice", "[0]")   # os.nice(0) in the child: its nice value
    assert reference.CHILD_NICENESS > 0 and child == min(19, here + reference.CHILD_NICENESS)
