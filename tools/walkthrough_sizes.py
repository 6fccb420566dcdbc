"""The size of each page's downloaded walk-through for the lecture's examples (explorer/kit/export_html.py).

    python tools/walkthrough_sizes.py            # a table: page, example, steps, kB
    python tools/walkthrough_sizes.py --out DIR  # also write each file into DIR, to open them

Each file is built exactly as the page's download button builds it, from the page's default sizes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer import backprop_orders as orders  # noqa: E402
from explorer import forward_vs_reverse as fwd  # noqa: E402
from explorer import topological_sort as topo  # noqa: E402
from explorer.expression_explorer import explorer_model, walkthrough  # noqa: E402
from explorer.kit import presets  # noqa: E402
from explorer.kit.programs import parse  # noqa: E402
from explorer.network_explorer import explore as net  # noqa: E402
from explorer.network_explorer.presets import PRESETS as NETWORKS  # noqa: E402
from explorer.student_code import view as hw2  # noqa: E402

# the lecture's examples (/work/shared/LECTURE.md): the slide example, its weights as inputs, the sigmoid quiz, the
# notes' exercises 2 and 3, gradient accumulation, cross-entropy on logits
LECTURE = [p for p in presets.PRESETS if not p.label.startswith(("Sigmoid neuron", "Small tensor"))]


def files():
    """(page, example, steps, html) for every page with a download and each lecture example it offers."""
    for p in LECTURE:
        m = explorer_model(p.program, p.inputs)
        yield "Expression explorer", p.label, m.n_frames, walkthrough(m, p.program, p.inputs)
    chosen = ("topological", "bfs_first_touch")     # the page's default orders
    for p in LECTURE:
        m = orders.orders_model(p.program, p.inputs, chosen)
        yield ("Backprop orders", p.label, m.n_frames,
               orders.walkthrough(m, chosen, orders.fits_half_width(m), p.program, p.inputs))
    for p in LECTURE:
        seed = parse(p.program, p.inputs)[0].input_names[0]
        m = fwd.dual_model(p.program, p.inputs, seed)
        yield "Forward vs reverse", f"{p.label} (seed {seed})", m.n_frames, fwd.walkthrough(m, seed, p.program,
                                                                                           p.inputs)
    for key, preset in topo.PRESETS.items():
        m = topo.sort_model(key)
        yield "Topological sort", preset.label, len(m.queue_steps), topo.walkthrough(m)
    for key, preset in NETWORKS.items():
        ex = net.explore(key)
        for level in ("layer", "op"):
            yield "Network explorer", f"{preset.title} ({level} view)", ex.n_frames, net.walkthrough(ex, level,
                                                                                                   preset.title)
    key = hw2.sample_choices()[0]
    report = hw2.sample_report(key)
    for graph in hw2.graph_choices(report):
        gv = hw2.graph_view(report, graph, label=hw2.sample_label(key))
        yield "Your HW2 code", f"{hw2.sample_label(key)} · {gv.title}", gv.n_frames, hw2.walkthrough(
            gv, hw2.sample_label(key), key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write each file into this folder")
    args = ap.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"{'page':<20} {'steps':>5} {'kB':>7}  example")
    for n, (page, example, steps, text) in enumerate(files()):
        print(f"{page:<20} {steps:>5} {len(text.encode()) / 1000:>7.1f}  {example}")
        if args.out:
            (args.out / f"{n:02d}_{page.replace(' ', '_')}.html").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
