"""Network explorer: time to record a network and build its layout + frames, by graph size.

Usage:  python benchmarks/network_frames.py [--nodes 500 1000 2000] [--repeat 3]

For each target size an unrolled RNN (preset ``rnn``) is built with enough time steps to reach
about that many graph nodes; we time (best of ``--repeat``):
  record        the real forward + backward pass with trace_ops and the backward observer
  op view       Graph + Trace translation, layout, frames (op level)
  layer view    the same, collapsed into layer boxes
The goal: layout + frames for 500 nodes in under 1 s.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


from explorer.kit.graphviz_layout import cache  # noqa: E402
from explorer.network_explorer.frames import build_view, to_graph  # noqa: E402
from explorer.network_explorer.presets import build  # noqa: E402
from explorer.network_explorer.recording import record  # noqa: E402


def network_with_nodes(target: int):
    """An RNN unrolled for enough steps that its op-view graph has at least ``target`` nodes."""
    per_step = len(to_graph(record(build("rnn", steps=2))).nodes) - len(to_graph(record(build("rnn", steps=1))).nodes)
    steps = max(1, target // per_step)
    while True:
        net = build("rnn", steps=steps)
        rec = record(net)
        if len(to_graph(rec).nodes) >= target:
            return rec
        steps += 1


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rows = []
    print(f"{'nodes':>6} {'ops':>6} {'frames':>7} {'record s':>9} {'op view s':>10} {'layer view s':>13}")
    for target in args.nodes:
        rec = network_with_nodes(target)
        n_nodes = len(to_graph(rec).nodes)
        steps = rec.network.config["steps"]
        t_rec = best(lambda: record(build("rnn", steps=steps)), args.repeat)
        t_op = best(lambda: (cache().clear(), build_view(rec, "op")), args.repeat)        # cold layout cache
        t_layer = best(lambda: (cache().clear(), build_view(rec, "layer")), args.repeat)
        frames = len(build_view(rec, "op").frames.frames)
        row = dict(nodes=n_nodes, ops=len(rec.forward_order), frames=frames, record_s=t_rec, op_view_s=t_op,
                   layer_view_s=t_layer)
        rows.append(row)
        print(f"{n_nodes:>6} {row['ops']:>6} {frames:>7} {t_rec:>9.3f} {t_op:>10.3f} {t_layer:>13.3f}")
    return rows


if __name__ == "__main__":
    main()
