"""Time the graph renderer's pipeline for random programs of about 50 and 500 nodes.

    python benchmarks/explain_frames.py            # go.Figure timed for the 50-node graph only
    python benchmarks/explain_frames.py --figure   # also go.Figure for 500 nodes

The graphs are random DAGs of primitive engine ops (harness.random_dag_tensors). Timed, as a page
builds its model (each on a cold layout cache): boxing (a graph of more than ``layout.MAX_DRAWN`` nodes
is drawn as blocks of consecutive operations), frames, the layout (Graphviz ``dot`` on the drawn
graph, with every node measured over all frames), and the figure dict. The goal: layout +
frames for 500 nodes in under 1 s. The recorded backward pass and ``go.Figure`` are reported apart.
"""
from __future__ import annotations

import sys
import time

from explorer.explain import random_dag_tensors, record_tensor
from explorer.kit.graphviz_layout import cache, find_dot
from explorer.kit.graph_view import trace_picture
from explorer.kit.plotly_figure import build_figure, figure_dict, plan


def main() -> None:
    full_figure = "--figure" in sys.argv[1:]
    print(f"layout program: {find_dot() or 'none (plain layout)'}")
    print(f"{'n':>5} {'nodes':>6} {'drawn':>6} {'frames':>7} {'record s':>9} {'box+frames s':>13} {'layout s':>9} "
          f"{'figure s':>9} {'all s':>7} {'go.Figure s':>11}")
    for n_ops in (50, 500):
        out, leaves = random_dag_tensors(n_ops, seed=1)
        t0 = time.perf_counter()
        tr = record_tensor(out, leaves)
        t1 = time.perf_counter()
        cache().clear()
        pic = trace_picture(tr)   # boxing + frames + layout + figure, as the pages do
        t2 = time.perf_counter()
        cache().clear()
        t3 = time.perf_counter()
        drawing = plan(pic.frameset, pic.graph)
        t4 = time.perf_counter()
        figure_dict(pic.frameset, pic.graph, drawing)
        t5 = time.perf_counter()
        if n_ops <= 50 or full_figure:
            build_figure(pic.frameset, pic.graph, drawing)
        t6 = time.perf_counter()
        total = t2 - t1
        layout_s, figure_s = t4 - t3, t5 - t4
        print(f"{n_ops:>5} {len(tr.graph.without_constants().nodes):>6} {len(pic.graph.nodes):>6} "
              f"{len(pic.frameset.frames):>7} {t1 - t0:>9.3f} {total - layout_s - figure_s:>13.3f} {layout_s:>9.3f} "
              f"{figure_s:>9.3f} {total:>7.3f} {(f'{t6 - t5:.3f}' if n_ops <= 50 or full_figure else 'skipped'):>11}")


if __name__ == "__main__":
    main()
