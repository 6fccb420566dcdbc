"""The project's own HW2 problem-1 solutions that page 13 runs as a demo (and the tests as data).

One is correct, the others broken in the ways the report must name. They are our code, not a student's:
a class server (``AUTODIFF_CLASS_SERVER``) runs them, through the same sandboxed child as a student's file
(:mod:`explorer.student_code.runner`). Nothing imports them; they are read as files.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Sample:
    """One bundled solution: ``key`` (its file's stem, the page's link value), ``label`` (what the picker shows
    on a laptop: what the code does, its bug named where that is what it does) and ``neutral`` (what a projector
    shows: the approach only, never the verdict, so that the class finds whether and where it goes wrong; the
    three depth-first samples differ only in their bug, so they are told apart by a letter)."""
    key: str
    label: str
    neutral: str = ""

    @property
    def shown_label(self) -> str:
        return self.neutral or self.label

    @property
    def path(self) -> Path:
        return FOLDER / f"{self.key}.py"


SAMPLES = (
    Sample("bfs_first_touch", "Breadth-first, passes a gradient on first touch"),
    Sample("correct", "Correct: depth-first post-order", "Depth-first post-order, version A"),
    Sample("non_topological", "Not a topological order", "Sorts breadth-first from the output"),
    Sample("path_recursion", "Recursion along every path"),
    Sample("no_leaf_accumulate", "Never accumulates into the leaves", "Depth-first post-order, version B"),
    Sample("visits_constants", "Forgets is_constant()", "Depth-first post-order, version C"),
)
BY_KEY = {s.key: s for s in SAMPLES}
DEFAULT = "bfs_first_touch"   # the page's signature: the first wrong node marked at the step it goes wrong


def sample(key: str) -> Sample:
    """The sample named ``key``.

    Raises:
        KeyError: not one of :data:`SAMPLES`.
    """
    return BY_KEY[key]


def source(key: str) -> str:
    """The sample's code as the page shows it: the file without its module docstring (which names the bug,
    for the maintainers; the class should find it in the code)."""
    text = sample(key).path.read_text(encoding="utf-8")
    body = ast.parse(text).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        text = "\n".join(text.splitlines()[body[0].end_lineno:])
    return text.strip("\n") + "\n"


__all__ = ["Sample", "SAMPLES", "BY_KEY", "DEFAULT", "FOLDER", "sample", "source"]
