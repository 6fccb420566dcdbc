"""The Home page's lecture framing: lecture 5's four parts (each with the pages that teach it), the recap of lecture
4 tied to the engine's own CUDA kernels, the readings, and what comes next. No Streamlit here.

The recap's numbers (tile sizes, padding) are read from ``engine/kernels/matmul.cu`` itself, so the page says what the
kernel that runs does, not what it once did.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[1] / "engine" / "kernels"


@dataclass(frozen=True)
class Part:
    """One part of the lecture and the app's pages (by number) that show it."""

    title: str
    covers: str
    pages: tuple[int, ...]


AGENDA = (
    Part("Why a framework", "the learning problem, gradient descent, the loss on logits", (1, 2)),
    Part("Automatic differentiation", "computation graphs; forward and reverse mode; checking gradients", (3, 6, 7)),
    Part("Backpropagation, implemented", "topological order, vector-Jacobian products, tensors and their storage",
         (4, 5, 8, 10)),
    Part("Deep learning frameworks", "static and dynamic graphs, TensorFlow and PyTorch; HW2's network trained",
         (9, 11, 13)),
)

READINGS = (
    ("Abadi et al., “TensorFlow: A System for Large-Scale Machine Learning”, OSDI 2016",
     "the static dataflow graph and its Session", 9),
    ("Baydin, Pearlmutter, Radul and Siskind, “Automatic Differentiation in Machine Learning: a Survey”, JMLR 2018",
     "forward and reverse mode, and why machine learning uses reverse", 7),
    ("Blondel and Roulet, “The Elements of Differentiable Programming”, 2024",
     "JVPs, VJPs and differentiating programs", 3),
)

NEXT = (
    "HW2 (released with this lecture): your own `topological_sort` and `backpropagate`, HW2's network and its "
    "training loop — page 13 runs your autodiff, page 11 trains the network.",
    "Recitation 2: HW2, MiniTorch and more GPU programming.",
    "Left for later lectures: compiling graphs (XLA, `torch.compile`; page 9's capture and replay is a first taste), "
    "memory planning, and training across many GPUs.",
)


def matmul_constants(path: Path | None = None) -> dict[str, int]:
    """The ``#define MM_*`` numbers of the engine's matmul kernel (tile sizes, threads, padding)."""
    text = (path or KERNELS / "matmul.cu").read_text(encoding="utf-8")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define (MM_\w+) (\d+)", text, re.M)}


def recap_rows(path: Path | None = None) -> list[dict]:
    """Lecture 4's ideas, each beside where the engine's own CUDA kernels use it (numbers read from the source)."""
    mm = matmul_constants(path)
    return [
        {"lecture 4": "Tiling and shared memory",
         "in this engine": f"`matmul.cu` copies a {mm['MM_BM']}×{mm['MM_BK']} tile of A and a {mm['MM_BK']}×"
                           f"{mm['MM_BN']} tile of B into shared memory per step of K; {mm['MM_THREADS']} threads each "
                           f"keep a {mm['MM_TM']}×{mm['MM_TN']} block of C in registers"},
        {"lecture 4": "Coalesced memory access",
         "in this engine": "`elementwise.cu`'s fast path for contiguous operands: neighbouring threads read "
                           "neighbouring words, in grid-stride sweeps"},
        {"lecture 4": "Bank conflicts: padding or swizzling",
         "in this engine": f"`matmul.cu` pads each row of A's shared tile by {mm['MM_PAD']} words, so the transposed "
                           "stores hit different banks; its 16-byte loads read consecutive words"},
        {"lecture 4": "Sparse matrix multiply",
         "in this engine": "an embedding's backward is a sparse update: `gather.cu`'s scatter-add of rows with "
                           "`atomicAdd` (page 8, exercise 12)"},
        {"lecture 4": "cuBLAS",
         "in this engine": "PyTorch calls NVIDIA's tuned GEMM; the engine's `cuda` backend runs its own `matmul.cu` "
                           "instead, so the kernel the lecture describes is the one that runs"},
    ]


def agenda_rows(titles: dict[int, str]) -> list[dict]:
    """The four parts with the pages that show each (``titles``: page number -> title, as Home discovers them).

    Raises:
        KeyError: a part names a page that does not exist (a page renumbered without this list)."""
    return [{"part": f"{i}. {p.title}", "what": p.covers,
             "pages": ", ".join(f"{n} · {titles[n]}" for n in p.pages)} for i, p in enumerate(AGENDA, 1)]


def readings_rows(titles: dict[int, str]) -> list[dict]:
    """The lecture's readings, each with what to read it for and the page closest to it."""
    return [{"reading": r, "read it for": why, "page": f"{n} · {titles[n]}"} for r, why, n in READINGS]
