"""The stepper inside Jupyter, Colab or VS Code: a widget (anywidget) with the exported walk-through's steps and
controls, no server.

    from explorer.notebook import Stepper
    Stepper("x1 + exp(1.5*x1 + 2*x2)", x1=3, x2=0.5)      # a program, read by the pages' parser (never eval)
    Stepper(loss)                                          # a graph built with the engine (engine.tensor ...)
    Stepper(out, autodiff=minitorch.autodiff)              # HW2-protocol Variables (a student's Scalars), and the
                                                           # student's topological_sort / backpropagate checked

One description of a step: each step is the view the Expression explorer's walk-through file holds
(:func:`explorer.expression_explorer.walkthrough_views`), as the file's data (:func:`~explorer.kit.export_html.
walkthrough_data`), drawn in the notebook by the file's own script (:data:`~explorer.kit.export_html.STEPPER_JS`):
Step, Back, Play, the slider, and, while the widget has the focus, the arrow keys, PageDown/PageUp, Home/End and P.

Needs the optional extra: ``python3 -m pip install -e ".[notebook]"``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    import anywidget
    import traitlets
except ImportError as e:   # the extra is not installed: say how to get it, not where the import failed
    raise ImportError('explorer.notebook needs anywidget: python3 -m pip install -e ".[notebook]"') from e

from .expression_explorer import explorer_model, protocol_model, tensor_model, walkthrough_views
from .kit.export_html import (STEPPER_CONTROLS, STEPPER_CSS, STEPPER_JS, data_html, step_html, visible_text,
                              walkthrough_data)
from .kit.programs import InputProblem

TITLE = "Expression explorer: a walk-through"

# The widget's front end: the file's stepper (STEPPER_JS) under the widget's element, which takes the keys while it
# has the focus (a click on it, or Tab), so that the notebook keeps its own keys elsewhere. The step goes both ways:
# a click sets the model's `step`, and Python setting `step` shows it. Title and source are user text: set as text.
_ESM = STEPPER_JS + """
function render({model, el}){
 el.classList.add("adx-stepper"); el.tabIndex=0;
 el.innerHTML='<div class="adx-title" style="font-weight:600;font-size:1.1rem"></div>'
  +'<div class="adx-source" data-testid="source"></div><div class="adx-check" data-testid="check"></div>'+CONTROLS;
 const title=el.querySelector(".adx-title"), source=el.querySelector(".adx-source"), check=el.querySelector(".adx-check");
 let s=null;
 function build(){
  title.textContent=model.get("title"); source.textContent=model.get("source");
  source.style.display=model.get("source")?"":"none";
  check.textContent=model.get("check"); check.style.display=model.get("check")?"":"none";
  check.className="adx-check "+(model.get("check_ok")?"adx-caption":"adx-warning");
  if(s)s.close();
  s=adxStepper(el,model.get("walkthrough"),el,k=>{if(model.get("step")!==k){model.set("step",k);model.save_changes();}});
  s.show(model.get("step"));
 }
 build();
 const follow=()=>{if(s.step()!==model.get("step"))s.show(model.get("step"));};
 model.on("change:step",follow); model.on("change:walkthrough",build);
 return ()=>{s.close();model.off("change:step",follow);model.off("change:walkthrough",build);};
}
export default {render};
""".replace("+CONTROLS;", f"+{json.dumps(STEPPER_CONTROLS)};")


class StepperError(ValueError):
    """What was given cannot be stepped through (a program the parser rejects, bad inputs, an unknown object).

    ``problem``: the parser's :class:`~explorer.kit.programs.InputProblem` when the program or inputs were
    rejected (its ``where`` names which, its ``error`` has the line and column), else None.
    """

    def __init__(self, message: str, problem: InputProblem | None = None):
        super().__init__(message)
        self.problem = problem


def _literal(name: str, value: Any) -> str:
    """An input's value as the inputs text the pages' parser reads (numbers and nested lists of numbers)."""
    import numpy as np
    if isinstance(value, bool) or isinstance(value, str):
        raise StepperError(f"input {name}: expected a number or a list of numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise StepperError(f"input {name}: expected a number or a list of numbers, "
                           f"got {type(value).__name__}") from None
    if not np.all(np.isfinite(arr)):
        raise StepperError(f"input {name}: every number must be finite")
    # repr of a float reads back to the same float
    return json.dumps(arr.tolist()) if arr.ndim else repr(float(arr))


def inputs_text(values: Mapping[str, Any]) -> str:
    """Keyword inputs (``x1=3, W=[[1, 2]]``) as the inputs text the pages take (``x1 = 3.0, W = [[1.0, 2.0]]``)."""
    return ", ".join(f"{name} = {_literal(name, v)}" for name, v in values.items())


class Stepper(anywidget.AnyWidget):
    """Step through a program's or an engine graph's forward and backward pass, in a notebook.

    Args:
        what: a program as the Expression explorer takes it (``"f = x1 + exp(1.5*x1 + 2*x2)"``, several lines
            allowed), an engine Tensor computed from leaves with ``requires_grad``, or a HW2-protocol Variable
            (a student's MiniTorch ``Scalar``: the engine's backward pass walks its graph calling its
            ``chain_rule``; its ``.derivative`` values are left alone).
        inputs: for a program, its inputs as the page's text (``"x1 = 3, x2 = 0.5"``) instead of keywords.
        step: the step shown first (0-based).
        autodiff: for a HW2-protocol Variable, the student's ``topological_sort`` and ``backpropagate`` (their
            ``minitorch.autodiff`` module, or any object with both), run on the same graph and checked against the
            engine's: ``check`` says what was found, ``check_ok`` whether both are right.
        **values: a program's inputs (``x1=3, x2=0.5``; numbers or nested lists), or, for a Tensor or a Variable,
            display names of its leaves (``x1=a, x2=b``).

    Traits (synced with the front end): ``walkthrough`` (the file's data: ``pieces``, ``steps``, ``ms``),
    ``step`` (0-based, set by Step/Back/Play/the slider/the keys, or from Python), ``n_steps``, ``title``,
    ``source``, ``check`` and ``check_ok``.

    Raises:
        StepperError: a program or inputs the parser rejects (with the parser's message, line and column), values
            that are not numbers, an object that is neither a program, an engine Tensor nor a HW2 Variable.
    """

    _esm = _ESM
    _css = STEPPER_CSS
    title = traitlets.Unicode(TITLE).tag(sync=True)
    source = traitlets.Unicode("").tag(sync=True)
    walkthrough = traitlets.Dict().tag(sync=True)
    n_steps = traitlets.Int(0).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    check = traitlets.Unicode("").tag(sync=True)
    check_ok = traitlets.Bool(True).tag(sync=True)

    def __init__(self, what: Any, inputs: str | None = None, /, *, step: int = 0, autodiff: Any = None,
                 **values: Any) -> None:
        title, source, data = _walkthrough(what, inputs, values)
        check, ok = ("", True) if autodiff is None else _check(what, autodiff, values)
        n = len(data["steps"])
        super().__init__(title=title, source=source, walkthrough=data, n_steps=n, step=min(max(int(step), 0), n - 1),
                         check=check, check_ok=ok)

    @traitlets.validate("step")
    def _within(self, proposal: Any) -> int:
        n = len((self.walkthrough or {}).get("steps") or [None])
        return min(max(int(proposal["value"]), 0), n - 1)

    def step_html(self, k: int | None = None) -> str:
        """Step ``k``'s HTML (default: the step shown), as the widget draws it."""
        return step_html(self.walkthrough, self.step if k is None else k)

    def step_text(self, k: int | None = None) -> str:
        """The text of step ``k`` (default: the step shown) outside its pictures: the header, the caption with the
        adjoint sums, the contributions table, the code panels."""
        return visible_text(self.step_html(k))

    def html(self) -> str:
        """The walk-through as the page's download holds it: one self-contained HTML file."""
        return data_html(self.title, self.walkthrough, self.source)

    def save(self, path: str | Path) -> Path:
        """Write :meth:`html` to ``path`` (to post to a course page) and return the path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


def _walkthrough(what: Any, inputs: str | None, values: dict[str, Any]) -> tuple[str, str, dict]:
    """(title, source, the file's data) for what a Stepper was given."""
    from engine.tensor import Tensor
    if isinstance(what, str):
        if inputs is not None and values:
            raise StepperError("give a program's inputs as text or as keywords, not both")
        text = inputs if inputs is not None else inputs_text(values)
        if not isinstance(text, str):
            raise StepperError(f"inputs: expected text such as 'x1 = 3, x2 = 0.5', got {type(text).__name__}")
        try:
            model = explorer_model(what, text)
        except InputProblem as e:
            box = what if e.where == "program" else text
            caret = e.caret(box)
            raise StepperError(f"{e.where}: {e.error}" + (f"\n{caret}" if caret else ""), e) from None
        return TITLE, f"{what.strip()}\nat {text.strip()}", walkthrough_data(walkthrough_views(model))
    if isinstance(what, Tensor):
        if inputs is not None:
            raise StepperError("an engine Tensor carries its own inputs: name its leaves with keywords (x1=a)")
        bad = [n for n, t in values.items() if not isinstance(t, Tensor)]
        if bad:
            raise StepperError(f"{bad[0]}: for an engine Tensor, keywords name its leaves (x1=a), got "
                               f"{type(values[bad[0]]).__name__}")
        try:
            model = tensor_model(what, values)
        except ValueError as e:
            raise StepperError(str(e)) from None
        leaves = ", ".join(model.inputs)
        graph = model.shown_trace.graph
        out = graph.node(graph.output).name
        return (f"{TITLE} of an engine graph", f"{out}: an engine graph of {leaves}",
                walkthrough_data(walkthrough_views(model)))
    from explorer.explain.protocol import follows_protocol
    if follows_protocol(what):
        if inputs is not None:
            raise StepperError("a HW2 Variable carries its own inputs: name its leaves with keywords (x1=a)")
        bad = [n for n, v in values.items() if not follows_protocol(v)]
        if bad:
            raise StepperError(f"{bad[0]}: for a HW2 Variable, keywords name its leaves (x1=a), got "
                               f"{type(values[bad[0]]).__name__}")
        try:
            model = protocol_model(what, values)
        except (TypeError, ValueError) as e:
            raise StepperError(str(e)) from None
        leaves = ", ".join(n.name for n in model.shown_trace.graph.nodes if n.op == "leaf" and n.kind == "input")
        return (f"{TITLE} of a HW2 graph ({type(what).__name__})",
                f"the engine's backward pass over your graph of {leaves}, calling your chain_rule",
                walkthrough_data(walkthrough_views(model)))
    raise StepperError(f"expected a program (text), an engine Tensor or a HW2-protocol Variable (unique_id, parents, "
                       f"is_leaf(), is_constant(), chain_rule(d), accumulate_derivative(x)), "
                       f"got {type(what).__name__}")


def _check(what: Any, autodiff: Any, values: dict[str, Any]) -> tuple[str, bool]:
    """Your ``topological_sort`` and ``backpropagate`` (``autodiff``: HW2's ``minitorch.autodiff`` module, or any
    object with both) run on ``what``'s graph and checked against the engine's: (a sentence, right or not)."""
    from explorer.explain.protocol import check_student, follows_protocol
    if not follows_protocol(what):
        raise StepperError("autodiff= checks your topological_sort and backpropagate on a HW2-protocol graph "
                           "(your own Variables)")
    fns = [getattr(autodiff, n, None) for n in ("topological_sort", "backpropagate")]
    if not all(callable(f) for f in fns):
        raise StepperError("autodiff= needs topological_sort and backpropagate (HW2's minitorch.autodiff)")
    problems = check_student(what, *fns, names=values)
    if not problems:
        return ("Your topological_sort and backpropagate agree with the engine on this graph: every node once, "
                "each before its inputs, and every input's derivative the same.", True)
    return "Your code on this graph: " + "; ".join(problems) + ".", False
