"""Render the lecture's graph pictures to PNG, normal and presentation mode, to look at them.

    python examples/graph_pictures.py                 # every picture -> test-output/pictures/*.png
    python examples/graph_pictures.py xxx slide       # only some (names below)

The figures are the pages' own (the same model functions the pages call); each is written as a
standalone HTML page with Plotly's bundled JavaScript (no network) and photographed by Debian's
Chromium through Playwright at the width the page would give it (normal: a 1400 px window;
presentation: 1920 px). The script also prints the figure-data checks (overlaps, edges through
nodes, arrowheads, parallel edges) for every picture.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import plotly

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "test-output" / "pictures"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _expression(program: str, inputs: str, step: str = "end", **kw):
    from explorer.expression_explorer import explorer_model
    m = explorer_model(program, inputs, **kw)
    k = {"end": m.n_frames - 1, "mid": m.n_frames // 2}.get(step, step)
    if isinstance(k, str):  # "back:<n>": the n-th backward frame
        first = next(f.index for f in m.frameset.frames if f.phase == "backward")
        k = first + int(k.split(":")[1]) - 1
    return m.figure, k


def _network(key: str, level: str, step: str = "end"):
    from explorer.network_explorer.explore import explore
    ex = explore(key)
    k = ex.n_frames - 1 if step == "end" else ex.n_frames // 2
    return ex.figure(level, k, animate=True), k


def _rnn(T: int, expand: bool = False):
    from explorer import static_vs_dynamic as M
    return M.rnn_figure(T, expand=expand), 0


def _random(n_ops: int):
    from explorer.explain import random_dag_tensors, record_tensor
    from explorer.kit.graph_view import trace_picture
    out, leaves = random_dag_tensors(n_ops, seed=1)
    pic = trace_picture(record_tensor(out, leaves))
    return pic.figure, len(pic.frameset.frames) // 2


def _static(key: str, train: bool = False):
    from explorer import static_vs_dynamic as M
    ex = M.build_example(key, True, train)
    run = M.run_fetch(ex, list(ex.fetches)[0], list(ex.feeds))
    return M.graph_figure(ex.graph, run.evaluated, None, fed=run.fed), 0


def _hw2_network():
    from explorer.sentiment_training.views import network_figure
    from sentiment.model import SentimentNet
    return network_figure(SentimentNet()), 0


PICTURES = {
    "xxx": lambda: _expression("f = x * x * x", "x = 2", "back:2"),
    "slide": lambda: _expression("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5", "back:7"),
    "slide_named": lambda: _expression("x3 = 1.5 * x1\nx4 = 2 * x2\nx5 = x3 + x4\nx6 = exp(x5)\nx7 = x1 + x6",
                                       "x1 = 3, x2 = 0.5"),
    "wxb": lambda: _expression("y = W @ x + b\nf = sum(tanh(y))",
                               "W = [[1, 2, 0.5], [-1, 0, 3]], x = [0.5, -1, 2], b = [0.1, -0.2]"),
    "wxb_expanded": lambda: _expression("y = W @ x + b\nf = sum(tanh(y))",
                                        "W = [[1, 2, 0.5], [-1, 0, 3]], x = [0.5, -1, 2], b = [0.1, -0.2]",
                                        expand_composites=True),
    "x_minus_5": lambda: _expression("f = x1 - 5", "x1 = 3, x2 = 0.5"),
    "sentiment_op": lambda: _network("sentiment", "op"),
    "sentiment_layer": lambda: _network("sentiment", "layer"),
    "random50": lambda: _random(50),
    "random500": lambda: _random(500),
    "rnn12": lambda: _rnn(12),
    "static_lecture": lambda: _static("lecture"),
    "static_mlp_train": lambda: _static("mlp", True),
    "hw2_network": _hw2_network,
    "rnn12_expanded": lambda: _rnn(12, expand=True),
}


def html(fig: dict, width: int) -> str:
    height = fig["layout"]["height"]
    return ("<html><head><meta charset='utf-8'><script src='plotly.min.js'></script>"
            "<style>body{margin:0;background:white}</style></head><body>"
            f"<div id='g' style='width:{width}px;height:{height}px'></div><script>"
            f"var f={json.dumps(fig)};Plotly.newPlot('g',f.data,f.layout,{{displaylogo:false}})"
            ".then(function(){document.title='ready'});</script></body></html>")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"pictures to render (default: all of {', '.join(PICTURES)})")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from explorer.kit.figures import at_frame, style_graph_figure
    from explorer.kit.picture_checks import check_figure
    from explorer.kit.presentation import NORMAL, PRESENTING
    OUT.mkdir(parents=True, exist_ok=True)
    names = args.names or list(PICTURES)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        os.symlink(js, Path(tmp) / "plotly.min.js")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name in names:
            fig, step = PICTURES[name]()
            for look, suffix in ((NORMAL, ""), (PRESENTING, "_present")):
                shown = style_graph_figure(at_frame(fig, step), look).to_dict()
                shown = {**shown, "frames": []}
                width = shown["layout"]["meta"]["design_width"]
                page = browser.new_page(viewport={"width": width + 40, "height": 600})
                path = Path(tmp) / f"{name}{suffix}.html"
                path.write_text(html(shown, width))
                page.goto(path.as_uri())
                page.wait_for_function("document.title === 'ready'", timeout=20_000)
                out = OUT / f"{name}{suffix}.png"
                page.locator("#g").screenshot(path=str(out))
                page.close()
                report = check_figure(shown)
                print(f"{out.relative_to(ROOT)}: {report.summary()}")
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
