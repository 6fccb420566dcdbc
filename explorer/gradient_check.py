"""Gradient check (page 3): central differences against autodiff, and the error versus h.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import explain as ex
from engine.explain import ExpressionError, costs

from .kit.formatting import fmt_value, max_abs_difference
from .kit.programs import InputProblem, parse

@dataclass
class GradcheckModel:
    program: Any
    inputs: dict
    sweep: Any
    autodiff: dict
    table: list[dict]


def gradcheck_model(program_text: str, inputs_text: str, wrt: str, h: float, index: int = 0) -> GradcheckModel:
    """h sweep for element ``index`` of one input (float32 and float64) and the per-input table at ``h``."""
    program, inputs = parse(program_text, inputs_text)
    if wrt not in program.input_names:
        wrt = program.input_names[0]
    index = min(max(int(index), 0), int(np.size(inputs[wrt])) - 1)
    try:
        trace = ex.record_execution(program, inputs)
        sweep = costs.h_sweep(program, inputs, wrt, index=index)
        fd64 = costs.central_differences(program, inputs, h=h, dtype="float64")
        fd32 = costs.central_differences(program, inputs, h=h, dtype="float32")
    except ExpressionError as e:
        raise InputProblem("program", e) from None
    table = []
    for name in program.input_names:
        auto = trace.grads.get(name)
        d64, d32 = max_abs_difference(auto, fd64.get(name)), max_abs_difference(auto, fd32.get(name))
        table.append({"input": name, "value": fmt_value(inputs[name]), "autodiff": fmt_value(auto, 10),
                      f"central diff. float64 (h={h:g})": fmt_value(fd64.get(name), 10),
                      "|diff| float64": "" if d64 is None else f"{d64:.2e}",
                      f"central diff. float32 (h={h:g})": fmt_value(fd32.get(name), 10),
                      "|diff| float32": "" if d32 is None else f"{d32:.2e}"})
    return GradcheckModel(program, inputs, sweep, trace.grads, table)


def sweep_series(sweep) -> tuple[dict, list]:
    """h-sweep rows as plot series ``dtype -> (hs, errors)`` and star markers at each best h."""
    series: dict[str, tuple[list, list]] = {}
    for row in sweep.rows:
        xs, ys = series.setdefault(str(row.dtype), ([], []))
        xs.append(float(row.h))
        ys.append(max(float(row.abs_error), 1e-300))  # log axis: an exact hit is drawn at the floor
    markers = []
    for dtype, h in sweep.best_h.items():
        xs, ys = series[str(dtype)]
        y = ys[xs.index(float(h))] if float(h) in xs else min(ys)
        markers.append((f"best h ({dtype})", float(h), y, f"best h={float(h):.0e}"))
    return series, markers
