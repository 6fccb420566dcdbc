"""Server time per rerun of the Expression explorer, and frame building for a 500-node graph.

    python benchmarks/app_rerun.py            # both measurements
    python benchmarks/app_rerun.py --quick    # fewer repeats

1. A ~50-node program (a random DAG from explorer.explain.harness, the same generator the Backprop
   orders page uses) is opened in the Expression explorer through streamlit's AppTest (the real page
   script, headless); then "Step" is clicked repeatedly and each rerun's wall time is measured.
   This is the server's time per rerun (script + building the page's elements), without the browser.
   Goal: <= 150 ms.
2. A ~500-node program (a random DAG of engine ops): engine run with events, then the graph renderer's
   pipeline (boxing into blocks of consecutive ops, frames, Graphviz layout on a cold cache, the figure
   with one frame per step), timed separately. Goal: <= 1 s to build frames (layout + frames + figure).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def program_with_nodes(target: int, seed: int = 0):
    """(text, inputs-text, node count) of a random DAG whose graph has about ``target`` nodes."""
    from explorer.explain import record_execution
    from explorer.explain.harness import random_dag_program
    n_ops = max(1, target // 2)
    best = None
    for _ in range(30):
        text, inputs = random_dag_program(n_ops, seed)
        nodes = len(record_execution(text, inputs).graph.without_constants().nodes)
        best = (text, inputs, nodes)
        if abs(nodes - target) <= max(2, target // 50):
            break
        n_ops = max(1, round(n_ops * target / nodes))
    text, inputs, nodes = best
    inputs_text = ", ".join(f"{k} = {v}" for k, v in inputs.items())
    return text, inputs_text, nodes


_WRAPPER = """
import runpy, time
import streamlit as st
_t0 = time.perf_counter()
try:
    runpy.run_path({page!r}, run_name="__main__")
finally:
    st.session_state.setdefault("_bench_script_s", []).append(time.perf_counter() - _t0)
"""


def bench_rerun(target: int, repeats: int, tmpdir: Path) -> dict:
    """Open the explorer on a ~target-node program, then click Step repeatedly; time each rerun.

    Two figures: the script's own time (measured inside the script thread by a wrapper that runs the
    real page file), and AppTest's wall time per rerun (adds starting the script thread and parsing
    the page's messages).
    """
    from streamlit.testing.v1 import AppTest
    text, inputs_text, nodes = program_with_nodes(target)
    wrapper = tmpdir / "explorer_timed.py"
    wrapper.write_text(_WRAPPER.format(page=str(ROOT / "app" / "pages" / "3_Expression_explorer.py")))
    at = AppTest.from_file(str(wrapper), default_timeout=120)
    at.query_params["expr"] = text
    at.query_params["at"] = inputs_text
    t0 = time.perf_counter()
    at.run()
    cold = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    walls = []
    for _ in range(repeats):
        step = next(b for b in at.button if b.label.startswith("Step"))
        t0 = time.perf_counter()
        step.click().run()
        walls.append(time.perf_counter() - t0)
    assert not at.exception
    script = at.session_state["_bench_script_s"][1:]  # the first entry is the cold run
    spec = at.get("plotly_chart")[0].proto.spec
    return {"nodes": nodes, "frames": len(json.loads(spec).get("frames", [])), "cold_first_run_s": cold,
            "script_median_ms": 1000 * statistics.median(script), "script_max_ms": 1000 * max(script),
            "apptest_median_ms": 1000 * statistics.median(walls), "figure_json_kB": len(spec) / 1024}


def bench_frames(target: int, repeats: int) -> dict:
    """The graph renderer's pipeline for a random DAG of ~target engine ops, as a page builds it
    (cold layout cache each time): boxing + frames, Graphviz layout, figure dict; then one Step's work
    (show the frame, presentation sizes, serialise)."""
    import plotly.io

    from explorer.kit.figures import at_frame, style_graph_figure
    from explorer.kit.presentation import look
    from explorer.explain import random_dag_tensors, record_tensor
    from explorer.kit.graph_view import trace_picture
    from explorer.kit.graphviz_layout import cache
    from explorer.kit.plotly_figure import figure_dict, plan
    n_ops = target
    for _ in range(8):  # the generator's op count maps to more graph nodes: aim at ~target nodes
        out, leaves = random_dag_tensors(n_ops, seed=1)
        nodes = len(record_tensor(out, leaves).graph.without_constants().nodes)
        if abs(nodes - target) <= target // 50:
            break
        n_ops = max(1, round(n_ops * target / nodes))
    rows = []
    for _ in range(repeats):
        out, leaves = random_dag_tensors(n_ops, seed=1)
        t0 = time.perf_counter()
        trace = record_tensor(out, leaves)
        t1 = time.perf_counter()
        cache().clear()
        pic = trace_picture(trace)
        t2 = time.perf_counter()
        cache().clear()
        t3 = time.perf_counter()
        drawing = plan(pic.frameset, pic.graph)
        t4 = time.perf_counter()
        fig = figure_dict(pic.frameset, pic.graph, drawing)
        t5 = time.perf_counter()
        spec = plotly.io.to_json(style_graph_figure(at_frame(fig, len(pic.frameset.frames) // 2), look(False)).to_dict(),
                                 validate=False)
        t6 = time.perf_counter()
        total, layout_s, figure_s = t2 - t1, t4 - t3, t5 - t4
        rows.append((t1 - t0, layout_s, total - layout_s - figure_s, figure_s, t6 - t5, total))
    med = [statistics.median(c) for c in zip(*rows)]
    return {"nodes": len(trace.graph.without_constants().nodes), "drawn": len(pic.graph.nodes),
            "frames": len(pic.frameset.frames), "engine_run_with_events_s": med[0],
            "layout_s": med[1], "build_frames_s": med[2], "figure_dict_s": med[3], "page_step_s": med[4],
            "layout+frames+figure_s": med[5], "figure_json_MB": len(spec) / 2 ** 20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--big", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = bench_rerun(args.nodes, 5 if args.quick else 15, Path(tmp))
    print(f"Expression explorer, {r['nodes']}-node graph, {r['frames']} frames (figure {r['figure_json_kB']:.0f} kB):\n"
          f"  first run {r['cold_first_run_s']:.2f} s (imports, engine run, frames; cached afterwards)\n"
          f"  server time per Step rerun: median {r['script_median_ms']:.0f} ms, max {r['script_max_ms']:.0f} ms "
          f"(goal <= 150 ms); AppTest wall per rerun median {r['apptest_median_ms']:.0f} ms")
    f = bench_frames(args.big, 1 if args.quick else 3)
    print(f"{f['nodes']}-node graph, drawn as {f['drawn']} nodes (blocks of consecutive ops), {f['frames']} frames:\n"
          f"  engine run with events {f['engine_run_with_events_s']:.2f} s (once per program, cached)\n"
          f"  layout {f['layout_s']:.3f} s + boxing and frames {f['build_frames_s']:.3f} s + figure dict "
          f"{f['figure_dict_s']:.3f} s "
          f"= {f['layout+frames+figure_s']:.2f} s to build frames (goal <= 1 s)\n"
          f"  per step: show frame + serialise {f['page_step_s']:.3f} s; figure JSON {f['figure_json_MB']:.1f} MB")


if __name__ == "__main__":
    main()
