"""examples/stepper.ipynb executed headless (nbclient, a real IPython kernel), as a reader runs it: every cell runs,
and the widgets it leaves (their state, as Jupyter saves it) hold the slide example's walk-through at the step the
notebook set, and the engine graph's at its initial step. Needs the notebook extra (``pip install -e ".[notebook]"``),
which CI installs (.ci/run)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("anywidget")

from explorer.expression_explorer import explorer_model  # noqa: E402
from explorer.kit import presets  # noqa: E402
from explorer.kit.export_html import step_html, visible_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "stepper.ipynb"


def run_notebook():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name=NATIVE_KERNEL_NAME, store_widget_state=True,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    # the kernel: this interpreter (jupyter_client starts "python" kernels with sys.executable) in the notebook's
    # folder, as Jupyter starts it, with this checkout's code first on its path
    path = os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)
    client.execute(env=dict(os.environ, PYTHONPATH=path))
    return nb


def outputs(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_the_example_notebook_runs_and_its_widgets_hold_the_pages_steps():
    nb = run_notebook()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    steppers = [m["state"] for m in state.values() if "walkthrough" in m["state"]]
    assert len(steppers) == 3                          # the slide example, the engine graph, the HW2 graph
    slide, graph, hw2 = steppers
    model = explorer_model(presets.DEFAULT.program, presets.DEFAULT.inputs)
    assert slide["n_steps"] == len(slide["walkthrough"]["steps"]) == model.n_frames == 14
    assert slide["step"] == 9                          # set from Python in the notebook
    shown = visible_text(step_html(slide["walkthrough"], slide["step"]))
    assert "Step 10 of 14 · backward" in shown
    assert "x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04 (2 of 2 received)" in shown
    assert slide["source"] == "f = x1 + exp(1.5*x1 + 2*x2)\nat x1 = 3.0, x2 = 0.5"
    assert graph["step"] == 12 and graph["n_steps"] == 14
    assert "x̄2 = 489.38" in visible_text(step_html(graph["walkthrough"], 12))
    # the HW2 Scalars: the engine's walk over them, the same fan-out sum; the engine's own autodiff checked right
    assert hw2["step"] == 9 and hw2["n_steps"] == 14 and hw2["check_ok"]
    assert "244.69·1.5 + 1 = 368.04 (2 of 2 received)" in visible_text(step_html(hw2["walkthrough"], 9))
    assert "agree with the engine" in hw2["check"]
    # what the cells print: the step panel's text, the student's .grad untouched, the parser's refusal
    printed = "".join(outputs(c) for c in nb.cells)
    assert "step 10 of 14" in printed and "368.04" in printed
    assert "x1.grad is untouched: None" in printed
    assert "program: line 1, col 10: only plain function calls are allowed" in printed
