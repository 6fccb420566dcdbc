"""Example programs offered by the pages (text only; the engine's parser reads them like typed text)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    label: str
    program: str
    inputs: str


PRESETS: tuple[Preset, ...] = (
    Preset("Slide example: f = x1 + exp(1.5·x1 + 2·x2)", "f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5"),
    Preset("Slide example with named intermediates x3..x7",
           "x3 = 1.5 * x1\nx4 = 2 * x2\nx5 = x3 + x4\nx6 = exp(x5)\nx7 = x1 + x6", "x1 = 3, x2 = 0.5"),
    # the notes' weights as inputs: w̄1 = x̄3·x1 = 734.0758, w̄2 = x̄4·x2 = 122.3460
    Preset("Slide example with the weights as inputs: w1 = 1.5, w2 = 2",
           # named as slide 26 names them (x3..x6; typed as one line, the weights' inputs made them v1..v4)
           "x3 = w1 * x1\nx4 = w2 * x2\nx5 = x3 + x4\nx6 = exp(x5)\nx7 = x1 + x6", "x1 = 3, x2 = 0.5, w1 = 1.5, w2 = 2"),
    Preset("Sigmoid neuron: 1/(1+exp(-(w·x)))", "f = 1 / (1 + exp(-(w * x)))", "w = 0.5, x = 2"),
    # the notes' quiz: d v7 / d v1 = sigma (1 - sigma) v2 = -0.26684166 at v1 = 0.8, v2 = -1.5
    Preset("Sigmoid quiz (notes): v7 = 1/(1+exp(−v1·v2)); ∂v7/∂v1 = ?",   # the answer is the class's to find
           "v3 = v1 * v2\nv4 = -v3\nv5 = exp(v4)\nv6 = 1 + v5\nv7 = 1 / v6", "v1 = 0.8, v2 = -1.5"),
    Preset("x·x·x (fan-out of three)", "f = x * x * x", "x = 2"),
    Preset("Gradient accumulation (notes: 20 → 40): f = 5·x·x", "f = 5 * x * x", "x = 2"),
    Preset("(x1 + x2)·exp(x1)", "f = (x1 + x2) * exp(x1)", "x1 = 1, x2 = 2"),
    # slide 7's opening: cross-entropy on logits = logsumexp(z) − z[label] (explorer.cross_entropy, page 1)
    Preset("Cross-entropy on logits (slide 7): logsumexp(z) − z[label]",
           "m = max(z)\nlse = m + log(sum(exp(z - m)))\nloss = lse - y @ z", "z = [2, 1, -1], y = [0, 1, 0]"),
    Preset("Small tensor example: W @ x + b", "y = W @ x + b\nf = sum(tanh(y))",
           "W = [[1, 2, 0.5], [-1, 0, 3]], x = [0.5, -1, 2], b = [0.1, -0.2]"),
)

DEFAULT = PRESETS[0]


def preset_labels() -> list[str]:
    return [p.label for p in PRESETS]


def find_preset(label: str) -> Preset | None:
    return next((p for p in PRESETS if p.label == label), None)


def matching_preset(program: str, inputs: str) -> str | None:
    """The label of the preset with exactly this text (so a deep link shows its preset selected)."""
    for p in PRESETS:
        if p.program.strip() == program.strip() and p.inputs.strip() == inputs.strip():
            return p.label
    return None
