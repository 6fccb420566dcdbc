"""Run engine/kernels/*.cu on the CPU: g++ + cuda_host_shim.h, driven through ctypes.

``EmulatedRuntime`` has the same small interface as ``CupyRuntime`` (array module,
transfers, ``launch(name, grid, block, args)``) but stores arrays in NumPy and runs
each launch on CPU threads, one block at a time with real barriers. So
``CudaBackend(EmulatedRuntime())`` executes the real backend code and the real
kernel source, and can be compared against the NumPy backend without a GPU.

It cannot show what only a GPU shows: NVRTC-specific compile errors (nvcc covers
those), timing, coalescing, or races that need concurrent blocks.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from engine.backends.cuda_backend import KERNEL_DIR, KERNEL_FILES, kernel_names
from engine.dtypes import DType

HERE = Path(__file__).resolve().parent


def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++"))


def _source() -> str:
    lines = ['#include "cuda_host_shim.h"']
    lines += [f'#include "{KERNEL_DIR / f}"' for f in KERNEL_FILES]
    lines += ['#include "launcher.h"', "std::unordered_map<std::string, EkEmuFn>& ek_emu_table() {",
              "    static std::unordered_map<std::string, EkEmuFn> table = {"]
    for names in kernel_names().values():
        lines += [f'        {{"{n}", ek_emu_wrap(&{n})}},' for n in names]
    lines += ["    };", "    return table;", "}"]
    return "\n".join(lines) + "\n"


def build() -> Path:
    """Compile the emulator library (cached by a hash of every source file)."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++) on PATH")
    src = _source()
    h = hashlib.sha256(src.encode())
    for p in sorted(KERNEL_DIR.glob("*")) + sorted(HERE.glob("*.h")):
        h.update(p.read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "autodiff-explorer"
    lib = cache / f"cuda-emulator-{h.hexdigest()[:16]}.so"
    if lib.exists():
        return lib
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cpp = Path(tmp) / "emulator.cpp"
        cpp.write_text(src)
        out = Path(tmp) / "emulator.so"
        cmd = [cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-Wno-unknown-pragmas", "-fno-strict-aliasing",
               f"-I{HERE}", f"-I{KERNEL_DIR}", str(cpp), "-o", str(out)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(f"emulator build failed:\n{res.stderr[-4000:]}")
        shutil.move(str(out), lib)
    return lib


class EmulatedRuntime:
    """CupyRuntime's interface over NumPy memory and the CPU-emulated kernels."""

    name = "emulator"
    xp = np

    def __init__(self, max_blocks: int = 3, threads: int = 32, reduce_threads: int = 16) -> None:
        # Small grids on purpose: every grid-stride loop then runs several rounds.
        self.max_blocks, self.threads, self.reduce_threads = max_blocks, threads, reduce_threads
        self.lib = ctypes.CDLL(str(build()))
        self.lib.emu_launch.restype = ctypes.c_int
        self.rng = np.random.default_rng(0)
        self.launches: list[str] = []

    def launch(self, name, grid, block, args) -> None:
        values = []
        for a in args:
            if isinstance(a, np.ndarray):
                values.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int64):
                values.append(ctypes.c_longlong(int(a)))
            elif isinstance(a, np.int32):
                values.append(ctypes.c_int(int(a)))
            else:
                raise TypeError(f"kernel argument of type {type(a).__name__} is not passed by the backend")
        params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        rc = self.lib.emu_launch(name.encode(), *[ctypes.c_uint(int(g)) for g in grid],
                                 *[ctypes.c_uint(int(b)) for b in block], params)
        if rc:
            raise KeyError(f"kernel {name!r} is not in the emulator's table")
        self.launches.append(name)

    def to_device(self, host: np.ndarray) -> np.ndarray:
        return np.array(host, copy=True)

    def to_host(self, a: np.ndarray) -> np.ndarray:
        return np.array(a, copy=True)

    def uniform(self, shape, dtype: DType):
        return self.rng.random(tuple(shape), dtype=dtype.numpy)

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def synchronize(self) -> None:
        pass
