"""The notebook widget (explorer/notebook.py): its steps are the exported walk-through's steps, for a typed program
and for a graph built with the engine; what the parser refuses is a typed error. Needs the notebook extra
(``pip install -e ".[notebook]"``); tests/test_notebook_run.py executes the example notebook."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("anywidget")

import engine  # noqa: E402
from explorer.expression_explorer import explorer_model, tensor_model, walkthrough, walkthrough_views  # noqa: E402
from explorer.kit import presets  # noqa: E402
from explorer.kit.export_html import STEPPER_JS, step_html, visible_text, walkthrough_data  # noqa: E402
from explorer.notebook import Stepper, StepperError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SLIDE = presets.DEFAULT   # f = x1 + exp(1.5*x1 + 2*x2) at x1 = 3, x2 = 0.5
QUIZ = next(p for p in presets.PRESETS if p.label.startswith("Sigmoid quiz"))


def file_data(text: str) -> dict:
    """The data an exported file's script steps through."""
    return json.loads(re.search(r'<script type="application/json" id="adx-data">(.*?)</script>', text, re.S).group(1))


@pytest.mark.parametrize("preset", [SLIDE, QUIZ], ids=["slide example", "sigmoid quiz"])
def test_the_widgets_steps_are_the_exported_files_steps(preset):
    model = explorer_model(preset.program, preset.inputs)
    page_file = walkthrough(model, preset.program, preset.inputs)
    widget = Stepper(preset.program, preset.inputs)
    assert widget.walkthrough == file_data(page_file)
    assert widget.n_steps == model.n_frames == len(widget.walkthrough["steps"])
    # saved from the notebook, it is the file the page's button downloads
    assert widget.html() == page_file


def test_keyword_inputs_read_as_the_pages_inputs_text():
    typed = Stepper(SLIDE.program, SLIDE.inputs)
    keywords = Stepper("f = x1 + exp(1.5*x1 + 2*x2)", x1=3, x2=0.5)
    assert keywords.walkthrough == typed.walkthrough
    assert keywords.source == "f = x1 + exp(1.5*x1 + 2*x2)\nat x1 = 3.0, x2 = 0.5"
    tensors = Stepper("y = W @ x\nf = sum(tanh(y))", W=[[1, 2], [0.5, -1]], x=[0.5, -1])
    assert "W = [[1.0, 2.0], [0.5, -1.0]]" in tensors.source and tensors.n_steps > 1


def test_each_step_shows_the_pages_step_model_and_the_step_is_shared_with_python():
    model = explorer_model(SLIDE.program, SLIDE.inputs)
    widget = Stepper(SLIDE.program, SLIDE.inputs, step=3)
    assert widget.step == 3
    for k in range(model.n_frames):
        shown = widget.step_text(k)
        assert f"Step {k + 1} of {model.n_frames} · {model.phase(k)}" in shown
        assert " ".join(model.caption(k).split()) in shown
    widget.step = 9                    # the slide's fan-out sum at x1: both contributions added
    assert "x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04 (2 of 2 received)" in widget.step_text()
    widget.step = 99
    assert widget.step == model.n_frames - 1
    widget.step = -5
    assert widget.step == 0


def test_an_engine_graph_steps_as_its_typed_program_does():
    x1 = engine.tensor(3.0, requires_grad=True)
    x2 = engine.tensor(0.5, requires_grad=True)
    loss = x1 + engine.exp(1.5 * x1 + 2 * x2)
    x1.grad = engine.tensor(7.0)        # recording must leave the student's .grad as it was
    widget = Stepper(loss, x1=x1, x2=x2)
    assert float(x1.grad.numpy()) == 7.0 and x2.grad is None
    model = tensor_model(loss, {"x1": x1, "x2": x2})
    assert widget.walkthrough == walkthrough_data(walkthrough_views(model))
    typed = explorer_model(SLIDE.program, SLIDE.inputs)
    assert widget.n_steps == typed.n_frames
    # the same backward pass: the same numbers at every backward step (the typed program names x3..x7, this
    # graph v1..v5; its forward steps run the constants' products in another order)
    numbers = re.compile(r"\d+\.\d+")
    backward = [k for k in range(typed.n_frames) if typed.phase(k) != "forward"]
    assert backward == [k for k in range(model.n_frames) if model.phase(k) != "forward"] and len(backward) > 5
    for k in backward:
        assert numbers.findall(model.caption(k)) == numbers.findall(typed.caption(k)), k
    assert "244.69·1.5 + 1 = 368.04 (2 of 2 received)" in widget.step_text(9)
    assert "x1" in widget.source and "x2" in widget.source


@pytest.mark.parametrize("program,inputs,where", [
    ("f = x1 + __import__('os').getcwd()", "x1 = 1", "program"),
    ("f = x1 +", "x1 = 1", "program"),
    ("f = open('/etc/passwd')", "x1 = 1", "program"),
    ("f = x1 * 2", "x1 = ", "inputs"),
])
def test_text_the_parser_refuses_is_a_typed_error_with_its_place(program, inputs, where):
    with pytest.raises(StepperError) as caught:
        Stepper(program, inputs)
    e = caught.value
    assert e.problem is not None and e.problem.where == where and e.problem.error.line == 1
    assert str(e).startswith(f"{where}: line 1") and "^" in str(e)     # the caret under the column


@pytest.mark.parametrize("args,kwargs", [((42,), {}), (("f = x * 2",), {"x": "3"}), (("f = x * 2",), {"x": object()}),
                                         (("f = x * 2", "x = 1"), {"x": 2}), (("f = x * 2",), {"x": float("nan")})])
def test_values_that_are_not_a_program_or_numbers_are_a_typed_error(args, kwargs):
    with pytest.raises(StepperError):
        Stepper(*args, **kwargs)


def test_a_tensor_without_inputs_to_differentiate_is_a_typed_error():
    with pytest.raises(StepperError, match="requires_grad"):
        Stepper(engine.tensor(2.0) * 3)


def test_the_front_end_is_the_files_stepper_and_sets_user_text_as_text():
    esm = Stepper._esm
    assert esm.count(STEPPER_JS) == 1 and "export default" in esm
    # title and source are user text: never parsed as HTML in the notebook
    assert 'title.textContent=model.get("title")' in esm and 'source.textContent=model.get("source")' in esm
    assert "innerHTML=model" not in esm.replace(" ", "")
    program = "f = x1 * 2  # <img src=x onerror=alert(1)>"
    widget = Stepper(program, x1=1)
    assert "<img" not in widget.html() and "<img" not in "".join(widget.walkthrough["pieces"])
    assert visible_text(step_html(widget.walkthrough, 0)).startswith("Step 1 of")


# --- a HW2-protocol graph (a student's MiniTorch-shaped Scalars) ---------------------------------------------

def _load(path: Path, name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)   # a dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def _slide_scalars():
    """The slide example built with the example notebook's MiniTorch-shaped Scalars."""
    hw2 = _load(ROOT / "examples" / "hw2_scalar.py", "hw2_scalar")
    x1, x2 = hw2.Scalar(3.0), hw2.Scalar(0.5)
    return x1, x2, x1 + hw2.exp(1.5 * x1 + 2 * x2)


def _sample(name: str):
    """One of the own-code page's sample solutions (a HW2 autodiff.py, right or broken), loaded from its file."""
    return _load(ROOT / "explorer" / "student_code" / "samples" / f"{name}.py", f"sample_{name}")


def test_a_hw2_protocol_graph_steps_as_the_engine_runs_it_calling_its_chain_rule():
    from explorer.expression_explorer import protocol_model
    x1, x2, f = _slide_scalars()
    widget = Stepper(f, x1=x1, x2=x2)
    assert x1.derivative is None and x2.derivative is None       # the student's graph is left as it was
    model = protocol_model(f, {"x1": x1, "x2": x2})
    assert widget.walkthrough == walkthrough_data(walkthrough_views(model))
    # the engine's own graph of the same program: the same backward steps, word for word
    e1, e2 = engine.tensor(3.0, requires_grad=True), engine.tensor(0.5, requires_grad=True)
    same = tensor_model(e1 + engine.exp(1.5 * e1 + 2 * e2), {"x1": e1, "x2": e2})
    assert model.n_frames == same.n_frames == 14
    for k in range(model.n_frames):
        if model.phase(k) != "forward":
            assert model.caption(k) == same.caption(k), k
    assert "x̄1 = v̄2·∂v2/∂x1 + v̄5·∂v5/∂x1 = 244.69·1.5 + 1 = 368.04 (2 of 2 received)" in widget.step_text(9)
    assert "Gradients: ∂f/∂x1 = 368.04, ∂f/∂x2 = 489.38" in widget.step_text(13)
    assert widget.check == ""           # no autodiff= given: nothing checked


def test_the_students_own_sort_and_backpropagate_are_checked_on_their_graph():
    x1, x2, f = _slide_scalars()
    right = Stepper(f, x1=x1, x2=x2, autodiff=_sample("correct"))
    assert right.check_ok and "agree with the engine" in right.check
    assert Stepper(f, autodiff=engine.autodiff).check_ok
    bfs = Stepper(f, x1=x1, x2=x2, autodiff=_sample("bfs_first_touch"))
    assert not bfs.check_ok
    assert "topological_sort puts x1 (position 2) before v2 (position 5)" in bfs.check
    assert "backpropagate gives x1 the derivative 1; the engine's is 368.04" in bfs.check   # the lost contribution
    lazy = Stepper(f, x1=x1, x2=x2, autodiff=_sample("no_leaf_accumulate"))
    assert not lazy.check_ok and "gives x2 the derivative nothing" in lazy.check
    assert x1.derivative is None                                  # checking never wrote into their graph
    # the steps shown are the engine's, whatever the student's code does
    assert bfs.walkthrough == right.walkthrough


def test_autodiff_needs_a_hw2_graph_and_both_functions():
    x1, x2, f = _slide_scalars()
    with pytest.raises(StepperError, match="topological_sort and backpropagate"):
        Stepper(f, autodiff=object())
    with pytest.raises(StepperError, match="HW2-protocol graph"):
        Stepper(SLIDE.program, SLIDE.inputs, autodiff=engine.autodiff)
    with pytest.raises(StepperError, match="keywords name its leaves"):
        Stepper(f, x1=3.0)
