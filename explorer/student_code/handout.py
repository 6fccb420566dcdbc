"""HW2's handout at a glance, for the Your HW2 code page (and the lines its autograder reads, for Sentiment training).

The facts come from HW2's starter repository (llmsystem/llmsys_hw2: its README, ``project/run_sentiment.py``,
``minitorch/autodiff.py``, ``minitorch/cuda_kernel_ops.py``, ``migrate_kernel.py``) and are said here in our own
words; each row names where this project does the same thing. What is a number is measured: the lines
``default_log_fn`` would print come from a real run's epochs, and the backend table runs HW2's training step on
every engine backend this machine has. No Streamlit here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from explorer.explain.numbers import fixed

# --- the three problems ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One of HW2's problems: what to write, where, how it is checked, and this project's counterpart."""

    number: int
    title: str
    points: int
    file: str            # the starter's file holding the marked blocks
    blocks: int          # how many BEGIN/END blocks of this problem the starter has
    write: str           # what the student writes
    check: str           # the command the handout gives to check it
    here: str            # where this project does the same (module, and the page that shows it)

    @property
    def markers(self) -> tuple[str, str]:
        """The comment lines that fence the student's code (the starter's spelling)."""
        return f"# BEGIN ASSIGN2_{self.number}", f"# END ASSIGN2_{self.number}"

    @property
    def website_markers(self) -> tuple[str, str]:
        """The same fences as the homework website (and a January 2026 pull request to the starter) spell them."""
        return f"# BEGIN HW2_{self.number}", f"# END HW2_{self.number}"


PROBLEMS = (
    Problem(1, "Automatic differentiation", 40, "minitorch/autodiff.py", 2,
            "`topological_sort` (a reverse topological order by post-order depth-first search) and `backpropagate` "
            "(walk that order; a leaf accumulates its derivative, any other node passes it on through "
            "`chain_rule`), on the `Variable` protocol",
            'python -m pytest -l -v -k "autodiff"',
            "`engine/autodiff.py` (same protocol); this page runs yours on the lecture's graphs"),
    Problem(2, "Neural network architecture", 30, "project/run_sentiment.py", 4,
            "`Linear` (a 2-D weight and a 1-D bias made with `RParam`; `view` to reshape) and `Network`: mean over "
            "the words -> Linear to the hidden size -> ReLU -> Dropout -> Linear to one output -> sigmoid",
            'python -m pytest -l -v -k "linear"  and  -k "network"',
            "`sentiment/model.py` `SentimentNet`; drawn on Network explorer (HW2's network)"),
    Problem(3, "Training and evaluation", 30, "project/run_sentiment.py", 3,
            "`binary_cross_entropy_loss`, and the body of `SentenceSentimentTrain.train`: per batch build x and y, "
            "forward, loss, backward, optimizer step; after each epoch the validation predictions and accuracy",
            "bash run_sentiment.sh  (best validation accuracy at least 75 %)",
            "`sentiment/trainer.py` and `engine.functional.binary_cross_entropy`; Sentiment training trains it"),
)


def problem_rows() -> list[dict]:
    """The three problems as table rows (points, file, the fences, what to write, check, counterpart)."""
    return [{"problem": f"{p.number}. {p.title}", "points": p.points, "file": f"`{p.file}`",
             "fenced by": f"`{p.markers[0]}` … `{p.markers[1]}` ({p.blocks} blocks)", "you write": p.write,
             "check": f"`{p.check}`", "in this project": p.here} for p in PROBLEMS]


def total_points() -> int:
    return sum(p.points for p in PROBLEMS)


MARKERS_NOTE = ("Write only between each block's `BEGIN` and `END` lines: the starter's code around them (the "
                "`Variable` protocol, the trainer's bookkeeping, `default_log_fn`) is what the tests and the "
                "autograder rely on. The starter spells them `ASSIGN2_n`, the homework website `HW2_n` (see the "
                "version notes).")


def marked_blocks(source: str) -> dict[str, int]:
    """How many complete BEGIN/END blocks of each problem a file has, either spelling (``ASSIGN2_n`` or ``HW2_n``).

    A block counts when its BEGIN line is followed by its own END line before the next BEGIN of any problem;
    returns ``{"1": 2, ...}`` keyed by problem number (problems with none are left out)."""
    import re
    fence = re.compile(r"^\s*#\s*(BEGIN|END)\s+(?:ASSIGN2|HW2)_(\d+)\s*$")
    counts: dict[str, int] = {}
    open_block: str | None = None
    for line in source.splitlines():
        m = fence.match(line)
        if not m:
            continue
        kind, n = m.groups()
        if kind == "BEGIN":
            open_block = n
        elif open_block == n:
            counts[n] = counts.get(n, 0) + 1
            open_block = None
    return counts


def hw2_root(path: str | Path) -> Path:
    """The HW2 folder a ``--student-code`` path names: the folder itself, or the one holding
    ``minitorch/autodiff.py`` when the path is that file."""
    p = Path(path)
    if p.is_file() and p.parent.name == "minitorch":
        return p.parent.parent
    return p if p.is_dir() else p.parent


def fence_rows(path: str | Path) -> list[dict]:
    """For a student's HW2 folder: each problem's file (relative to the folder: no path of this machine), the
    blocks the starter has and those found there, in either spelling."""
    given, root = Path(path), hw2_root(path)
    single = given.is_file() and given.parent.name != "minitorch"   # one file of problem 1, outside a HW2 folder
    rows = []
    for p in PROBLEMS:
        f = (given if p.number == 1 else None) if single else root / p.file
        found = (marked_blocks(f.read_text(encoding="utf-8", errors="replace")).get(str(p.number), 0)
                 if f is not None and f.is_file() else None)
        missing = "not given (one file was named)" if f is None else "file not found"
        shown = missing if found is None else str(found)   # text either way: one type per column
        rows.append({"problem": f"{p.number}. {p.title}", "file": f"`{given.name if single and f else p.file}`",
                     "blocks in the starter": p.blocks, "blocks in your copy": shown, "as expected": found == p.blocks})
    return rows


# --- what the autograder reads -------------------------------------------------------------------------------------

AUTOGRADER_NOTE = ("The handout asks you to keep `default_log_fn` as the trainer's `log_fn`: its printed lines are "
                   "what the autograder reads. Per epoch it prints the epoch, the mean training loss and the training "
                   "accuracy, then, with validation data, the epoch's validation accuracy and the best so far (two "
                   "decimals, as percentages).")


# default_log_fn's lines: one per epoch, and two more when there is validation data
LOG_FORMAT = ("Epoch {epoch}, loss {train_loss}, train accuracy: {train_accuracy:.2%}",
              "Validation accuracy: {val_accuracy:.2%}", "Best Valid accuracy: {best_val:.2%}")


def default_log_lines(epoch: int, train_loss: float, train_accuracy: float, val_accuracy: float | None,
                      best_val: float | None) -> list[str]:
    """The lines HW2's ``default_log_fn`` prints for one epoch (its format, our code)."""
    values = {"epoch": epoch, "train_loss": train_loss, "train_accuracy": train_accuracy,
              "val_accuracy": val_accuracy, "best_val": best_val}
    formats = LOG_FORMAT if val_accuracy is not None else LOG_FORMAT[:1]
    return [f.format(**values) for f in formats]


def autograder_log(epochs: Sequence, last: int | None = None) -> list[str]:
    """What ``default_log_fn`` would have printed for a run's epochs (``sentiment.trainer.EpochEnd`` records).

    The best validation accuracy is the running maximum, as ``default_log_fn`` keeps it; ``last`` keeps only
    the lines of the last ``last`` epochs."""
    out: list[list[str]] = []
    best = 0.0
    for e in epochs:
        if e.val_accuracy is not None:
            best = max(best, e.val_accuracy)
        out.append(default_log_lines(e.epoch, e.train_loss, e.train_accuracy, e.val_accuracy,
                                     best if e.val_accuracy is not None else None))
    if last is not None:
        out = out[-last:]
    return [line for lines in out for line in lines]


# --- the FAQ and the version notes ------------------------------------------------------------------------------

FAQ = (
    ("Under 75 % validation accuracy?",
     "The given hyperparameters in `run_sentiment.py` are a start, not a rule: try another learning rate or SGD "
     "instead of Adam; if it still stays under, bring it to office hours.",
     "Sentiment training: the HW2 preset shows this engine's run against the 75 % line, and the lr 0.25 preset "
     "what a learning rate too large does to the ReLUs."),
    ("Autodiff looks right but the tests fail?",
     "Read the `Variable` protocol; check the order your topological sort returns and that leaves accumulate "
     "while other nodes pass their derivative on.",
     "This page: your order beside the engine's, the first wrong node and why."),
    ("An epoch takes very long?",
     "The first epoch on CPU may be slow, but more than 30 minutes for one epoch means something in your code is "
     "inefficient; bring it to office hours.",
     "The backend table below: one HW2 training step measured on each backend of this machine."),
)

VERSION_NOTES = (
    ("Markers", "The starter fences the code you write with `BEGIN ASSIGN2_n` / `END ASSIGN2_n`; the homework "
                "website (and a January 2026 pull request to the starter) says `BEGIN HW2_n` / `END HW2_n`. Same "
                "blocks, same places: either spelling counts."),
    ("`leave` -> `leaf`", "The docstring of `backpropagate` spoke of \"leave nodes\"; it means leaf nodes, the "
                          "inputs whose derivatives are accumulated (a wording fix, no change in the task)."),
    ("Reduce: `c_double` -> `c_float`", "`CudaKernelOps` calls HW1's `tensorReduce` through ctypes with the "
                                        "reduction's start value declared `ctypes.c_double`, while the kernels work "
                                        "in float32; declared `ctypes.c_float` it reaches the kernel as the float it "
                                        "expects (the mismatch gave nan)."),
    ("`cross_entropy_loss` vs `binary_cross_entropy_loss`", "Problem 3's loss is `binary_cross_entropy_loss` in "
                                                            "`run_sentiment.py`; the README's section and the "
                                                            "starter's NotImplementedError still say "
                                                            "`cross_entropy_loss`: it is the same function."),
)


def training_faq_text() -> str:
    """The handout's two FAQ answers about training (a run under 75 %, a slow epoch), for the Sentiment training
    page's HW2 setting, where a student trains HW2's network (Markdown)."""
    (under_q, under_a, _), (slow_q, slow_a, _) = FAQ[0], FAQ[2]
    return f"The handout's FAQ: *{under_q}* {under_a} *{slow_q}* {slow_a}"


def faq_rows() -> list[dict]:
    """The handout's FAQ, each answer beside where this app shows the thing it is about."""
    return [{"question": q, "the handout's answer": a, "here": here} for q, a, here in FAQ]


def version_rows() -> list[dict]:
    """The version notes: what changed between copies of HW2 and what it means for you."""
    return [{"change": c, "what it means": m} for c, m in VERSION_NOTES]


# --- HW1's kernels as HW2's backend, and the engine's switch ---------------------------------------------------------

BACKEND_STEPS = ("Copy `src/combine.cu` from your HW1 into HW2's `src/`.",
                 "Compile it: `mkdir -p minitorch/cuda_kernels` then "
                 "`nvcc -o minitorch/cuda_kernels/combine.so --shared src/combine.cu -Xcompiler -fPIC` "
                 "(or `python migrate_kernel.py --hw1-dir <hw1> --hw2-dir <hw2>`, which copies and compiles).",
                 "In `project/run_sentiment.py`, `backend_name = \"CudaKernelOps\"` wraps `CudaKernelOps` in "
                 "`minitorch.TensorBackend`: every map, zip, reduce and matmul calls your HW1 kernel in "
                 "`combine.so` through ctypes. On a machine without a GPU set `backend_name = \"SimpleOps\"`.")

# HW2's switch -> the engine's: what runs the kernels, and what the student changes
BACKEND_MAP = (
    {"HW2": "`backend_name = \"CudaKernelOps\"`", "kernels": "HW1's `combine.cu`, compiled by nvcc to `combine.so`, "
     "loaded with ctypes", "engine": "`cuda`", "engine kernels": "`engine/kernels/*.cu`, compiled at first use by "
     "NVRTC through CuPy (nothing to build by hand)"},
    {"HW2": "`backend_name = \"SimpleOps\"`", "kernels": "Python loops over the tensor's strided storage (CPU)",
     "engine": "`python`", "engine kernels": "Python loops over strided storage (`engine/backends/python_backend.py`)"},
    {"HW2": "—", "kernels": "—", "engine": "`numpy` (the default)",
     "engine kernels": "NumPy's vectorised kernels (`engine/backends/numpy_backend.py`)"},
)

BACKEND_NOTE = ("What changes for you: one name. The autodiff of problem 1 and the network of problem 2 never see "
                "the backend; the same code runs on each, with the same numbers up to rounding, at a different "
                "speed. In the engine the name is an argument: `SentimentNet(backend=\"cuda\")`, "
                "`engine.tensor(x, backend=\"python\")`, the Sentiment training page's Backend box.")


@dataclass
class BackendRun:
    """HW2's training step (forward, BCE, backward) on one engine backend, or why it cannot run here."""

    backend: str
    available: bool
    reason: str = ""
    loss: float | None = None
    ms: float | None = None                 # one step, best of ``repeats``
    grad_diff: float | None = None          # largest |gradient - numpy's gradient| over the four parameters


def backend_runs(batch: int = 10, tokens: int = 12, hidden: int = 32, repeats: int = 3) -> list[BackendRun]:
    """Run HW2's step on every backend the engine knows from one initialisation and batch (dropout off, so
    that every backend computes the same function); unavailable backends carry the engine's own reason."""
    from engine.backends import BackendUnavailable, get_backend, known
    from sentiment.model import model_from_arrays
    import engine

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, tokens, 50))
    lengths = rng.integers(3, tokens + 1, batch)
    mask = (np.arange(tokens)[None, :] < lengths[:, None]).astype(np.float64)
    x *= mask[:, :, None]
    y = (rng.random(batch) < 0.5).astype(np.float64)
    b1, b2 = 1 / np.sqrt(50), 1 / np.sqrt(hidden)
    params = [rng.uniform(-b1, b1, (hidden, 50)), rng.uniform(-b1, b1, hidden),
              rng.uniform(-b2, b2, (1, hidden)), rng.uniform(-b2, b2, 1)]
    runs: list[BackendRun] = []
    reference: list[np.ndarray] | None = None
    for name in known():
        try:
            get_backend(name)
        except BackendUnavailable as e:
            runs.append(BackendRun(name, False, str(e)))
            continue
        model = model_from_arrays(params, dropout=0.0, backend=name)
        xt, mt, yt = (engine.tensor(a, backend=name) for a in (x, mask, y))
        best = float("inf")
        for _ in range(repeats):
            for p in model.parameters():
                p.grad = None
            t0 = time.perf_counter()
            loss, _ = model.loss(xt, mt, yt)
            loss.backward()
            best = min(best, time.perf_counter() - t0)
        grads = [p.grad.numpy() for p in model.parameters()]
        reference = reference or grads   # known() lists numpy first: the others are compared with it
        diff = max(float(np.max(np.abs(g - r))) for g, r in zip(grads, reference))
        runs.append(BackendRun(name, True, loss=float(loss.item()), ms=best * 1e3, grad_diff=diff))
    return runs


def backend_rows(runs: Sequence[BackendRun]) -> list[dict]:
    """The measured runs as table rows (an unavailable backend says why, in the engine's words)."""
    from explorer.explain.numbers import num
    rows = []
    for r in runs:
        if r.available:
            rows.append({"engine backend": r.backend, "runs here": "yes", "loss": num(r.loss),
                         "ms per step": fixed(r.ms), "largest gradient difference from numpy": num(r.grad_diff)})
        else:
            rows.append({"engine backend": r.backend, "runs here": "no: " + r.reason, "loss": "—",
                         "ms per step": "—", "largest gradient difference from numpy": "—"})
    return rows


def cuda_missing(runs: Sequence[BackendRun]) -> str:
    """A sentence for a machine without the engine's CUDA backend (empty where it runs)."""
    cuda = next((r for r in runs if r.backend == "cuda"), None)
    if cuda is None or cuda.available:
        return ""
    return ("CUDA is not available here, so neither HW2's `CudaKernelOps` nor the engine's `cuda` backend can run on "
            "this machine: use `SimpleOps` in HW2, `python` or `numpy` in the engine. The engine's reason: "
            + cuda.reason)


def backend_runs_caption(runs: Sequence[BackendRun]) -> str:
    """What the measured table shows, with the slowest backend's time against the fastest's."""
    done = [r for r in runs if r.available]
    fast, slow = min(done, key=lambda r: r.ms), max(done, key=lambda r: r.ms)
    text = ("HW2's network (mean of the words -> Linear(50, 32) -> ReLU -> Linear(32, 1) -> sigmoid -> BCE, dropout "
            "off so that every backend computes the same function) on one batch of 10 padded sentences, forward and "
            "backward from one initialisation, measured on this server when the page opened")
    if slow is not fast:
        text += (f": `{slow.backend}` took {fixed(slow.ms / fast.ms, 0)}× as long as `{fast.backend}` for the loss and "
                 "gradients in the table")
    return text + "."
