"""Time layout + frames (and the Plotly figure) for random programs of about 50 and 500 nodes.

    python benchmarks/explain_frames.py            # go.Figure timed for the 50-node graph only
    python benchmarks/explain_frames.py --figure   # also go.Figure for 500 nodes (slow: ~1 min)

The graphs are random DAGs of primitive engine ops (harness.random_dag_tensors); only layout() and
build_frames() are timed for the "<1 s for 500 nodes" target (the recorded backward pass and
the Plotly figure are reported separately).
"""
from __future__ import annotations

import os
import sys
import time


from engine.explain import random_dag_tensors, record_tensor  # noqa: E402
from explorer.kit.frames import build_frames  # noqa: E402
from explorer.kit.layout import layout  # noqa: E402
from explorer.kit.plotly_figure import build_figure, figure_dict  # noqa: E402


def main() -> None:
    full_figure = "--figure" in sys.argv[1:]
    print(f"{'n':>5} {'nodes':>6} {'frames':>7} {'record s':>9} {'layout s':>9} {'frames s':>9} "
          f"{'layout+frames s':>16} {'fig dict s':>10} {'go.Figure s':>11}")
    for n_ops in (50, 500):
        out, leaves = random_dag_tensors(n_ops, seed=1)
        t0 = time.perf_counter()
        tr = record_tensor(out, leaves)
        t1 = time.perf_counter()
        graph = tr.graph.without_constants()
        pos = layout(graph)
        t2 = time.perf_counter()
        fs = build_frames(tr, graph)
        t3 = time.perf_counter()
        figure_dict(fs, graph, pos)
        t4 = time.perf_counter()
        if n_ops <= 50 or full_figure:
            build_figure(fs, graph, pos)
        t5 = time.perf_counter()
        print(f"{n_ops:>5} {len(graph.nodes):>6} {len(fs.frames):>7} {t1 - t0:>9.3f} {t2 - t1:>9.3f} "
              f"{t3 - t2:>9.3f} {t3 - t1:>16.3f} {t4 - t3:>10.3f} "
              f"{(f'{t5 - t4:.3f}' if n_ops <= 50 or full_figure else 'skipped'):>11}")


if __name__ == "__main__":
    main()
