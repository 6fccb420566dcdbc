"""Forward mode vs reverse mode: passes and engine ops to build a full Jacobian of R^n -> R^m
(forward mode: one JVP pass per input, a column each; reverse mode: one backward pass per
output, a row each), and the activation memory the backward pass keeps for an MLP.

    python examples/explain_costs.py
    python examples/explain_costs.py --width 256 --batch 128 --depth 4 --dtype float32
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


from explorer.explain import activation_memory, jacobian_costs  # noqa: E402
from explorer.explain.costs import memory_at_scale  # noqa: E402
from explorer.explain.text import table  # noqa: E402

CASES = [  # (program, inputs, variables): n = variable elements, m = output elements
    ("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5", None),
    ("f = sum(sigmoid(W @ x))", "W = [[1, 2, 3, 4], [0.5, -1, 2, 0]], x = [0.1, 0.2, 0.3, 0.4]", None),
    ("y = tanh(v) * 2", "v = [0.1, -0.2, 0.3]", None),
    ("y = sigmoid(t * a)  (a is data)", "t = 0.5, a = [1, 2, 3, 4, 5, 6, 7, 8]", ["t"]),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args(argv)

    print("Full Jacobian, both ways (ops counted with engine.trace_ops while the engine ran)\n")
    rows = []
    for prog, inputs, wrt in CASES:
        jc = jacobian_costs(prog.split("  (")[0], inputs, wrt=wrt)
        for r in jc.rows():
            rows.append({"program": prog, "n": jc.n_inputs, "m": jc.n_outputs, **r,
                         "same J?": "yes" if jc.agree else "NO"})
    print(table(rows))

    print(f"\nActivation memory for backward: MLP of {args.depth} x (Linear {args.width} + ReLU), batch {args.batch},"
          f" {args.dtype}\n")
    m = activation_memory(args.depth, args.width, args.batch, args.dtype)
    print(table([{"layer": lay.layer, "tensors saved": lay.saved_tensors, "kept by the engine (bytes)": lay.kept_bytes,
                  "notes' rule (bytes)": lay.notes_bytes} for lay in m.layers]
                + [{"layer": "total", "tensors saved": m.saved_total, "kept by the engine (bytes)": m.kept_total,
                    "notes' rule (bytes)": m.notes_total}]))
    print(f"\nparameters: {m.parameter_bytes} bytes. The input x is not counted. Saved = what each op's VJP reads"
          "\n(Linear: its input h; ReLU: its output y), 2L - 1 tensors as the notes' rule; kept = the buffers behind them"
          "\n(y is also the next Linear's input: L buffers); the notes' rule keeps ReLU's input z instead, 2L - 1 buffers.")
    print("\nThe notes' exercise 9: 10 layers x 4096, batch 512, float32\n")
    print(table(memory_at_scale(10, 4096, 512, "float32").rows()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
