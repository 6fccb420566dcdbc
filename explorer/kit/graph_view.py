"""One call from a recorded trace to the figure a page shows: what is drawn as one node, the frames,
and the figure (the graph renderer's pipeline, shared by the expression pages and the benchmarks)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.explain.graph import Graph
from explorer.explain.trace import Trace

from .frames import MAX_FRAMES, FrameSet, build_frames
from .graphviz_layout import Box, Link, dot_work
from .layout import MAX_DRAWN, collapse_big, collapse_composites
from .plotly_figure import DESIGN_WIDTH, figure_dict


BOXED_WORK = 400    # dot_work of a boxed graph (nodes + ranks skipped by edges) that still reads well


@dataclass
class TracePicture:
    trace: Trace          # the trace as drawn (composites as one node, big graphs boxed)
    graph: Graph          # the drawn graph (no constant nodes: numbers are literals in the labels)
    frameset: FrameSet
    figure: dict          # plotly_figure.figure_dict


def trace_picture(trace: Trace, *, expand_composites: bool = False, width: int = DESIGN_WIDTH,
                  max_nodes: int = MAX_DRAWN, **figure_options: Any) -> TracePicture:
    """Draw ``trace``: composites as one node unless ``expand_composites``; more than ``max_nodes``
    nodes boxed into blocks of consecutive statements; frames; the figure for ``width`` px."""
    shown_trace = trace if expand_composites else collapse_composites(trace)
    shown = shown_trace.graph.without_constants()
    while True:  # fewer, bigger boxes until dot can lay the boxes out quickly and legibly
        boxed_trace, boxed = collapse_big(shown_trace, shown, max_nodes)
        if boxed is shown or max_nodes <= 12 or dot_work(
                [Box(n.id, 1, 1) for n in boxed.nodes], [Link(e.src, e.dst) for e in boxed.edges]) <= BOXED_WORK:
            break
        max_nodes = max(12, max_nodes * 2 // 3)
    # a boxed graph shows many engine steps per box: a few frames per box are enough to follow it
    max_frames = MAX_FRAMES if boxed is shown else max(60, 8 * len(boxed.nodes))
    frameset = build_frames(boxed_trace, boxed, max_frames=max_frames)
    shown_trace, shown = boxed_trace, boxed
    return TracePicture(shown_trace, shown, frameset, figure_dict(frameset, shown, width=width, **figure_options))
