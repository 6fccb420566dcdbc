"""``python -m explorer.student_code PATH``: the report on a student's HW2 ``autodiff.py``.

PATH is the file itself, or an HW2 checkout (``minitorch/autodiff.py`` inside it). The student's code runs
in a child process with a time and a memory limit; this process only reads what it recorded.
"""
from __future__ import annotations

import argparse
import sys

from .graphs import N_RANDOM
from .report import report_for
from .runner import MEMORY_MB, TIME_LIMIT_S, TOTAL_LIMIT_S


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explorer.student_code",
                                 description="Run your HW2 topological_sort and backpropagate on the lecture's "
                                             "graphs and say where they go wrong.")
    ap.add_argument("path", help="your autodiff.py, or your HW2 folder (with minitorch/autodiff.py)")
    ap.add_argument("--random", type=int, default=N_RANDOM, help=f"random graphs to run (0-{N_RANDOM})")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="seconds per call of your functions")
    ap.add_argument("--total-limit", type=float, default=TOTAL_LIMIT_S, help="seconds for the whole run")
    ap.add_argument("--memory-mb", type=int, default=MEMORY_MB, help="address space of the child process")
    args = ap.parse_args(argv)
    n = max(0, min(N_RANDOM, args.random))
    rep = report_for(args.path, n_random=n, time_limit_s=args.time_limit, total_limit_s=args.total_limit,
                     memory_mb=args.memory_mb)
    sys.stdout.write(rep.text())
    return 0 if rep.loaded and all(v.right for v in rep.verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
