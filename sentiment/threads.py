"""BLAS threads for training: one per training process, set before NumPy loads.

HW2's matrices are small ((64, 50) @ (50, 256) at most): OpenBLAS cannot split them usefully, and its
extra threads spin while they wait. Measured on the project's 2-core machine (benchmarks/README.md,
"BLAS threads"): the full SST-2 preset took 6.7-7.5 s of CPU and 18-28 s of wall time with one
thread, 49-53 s of CPU and 146-188 s of wall time with OpenBLAS's default of one per core.

This module imports nothing else, so a script can call :func:`pin_blas_threads` before NumPy loads;
an environment that already names a count keeps it.
"""
from __future__ import annotations

import os
from typing import MutableMapping

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pin_blas_threads(threads: int = 1, environ: MutableMapping[str, str] = os.environ) -> None:
    """Set each BLAS thread-count variable to ``threads`` where ``environ`` does not set it already.

    It takes effect in processes that load NumPy afterwards (this one, if NumPy is not loaded yet, and
    every process started from it)."""
    for name in BLAS_THREAD_VARIABLES:
        environ.setdefault(name, str(threads))
