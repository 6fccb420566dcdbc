"""Compile every engine/kernels/*.cu with ``nvcc --ptx`` (skipped where nvcc is absent).

Templates are only type-checked when instantiated, so each file is compiled with
every instantiation the CUDA backend launches (``kernel_names()``), from the same
text NVRTC receives at run time (``kernel_source``: common.cuh inlined). A syntax
or type error in a kernel therefore fails CI, GPU or not.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from engine.backends.cuda_backend import KERNEL_DIR, KERNEL_FILES, kernel_names, kernel_source

NVCC = shutil.which("nvcc")
ARCH = os.environ.get("CUDA_ARCH", "sm_90")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA kernels are not compiled here")


def test_every_kernel_file_is_listed():
    on_disk = sorted(p.name for p in KERNEL_DIR.glob("*.cu"))
    assert on_disk == sorted(KERNEL_FILES)
    assert sorted(kernel_names()) == sorted(KERNEL_FILES)


@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_kernel_file_compiles_to_ptx(filename, tmp_path):
    names = kernel_names()[filename]
    table = ",\n".join(f"    (const void*)&{n}" for n in names)
    src = kernel_source(filename) + f"\n// every instantiation the backend launches\nconst void* ek_all_kernels[] = {{\n{table}\n}};\n"
    cu = tmp_path / filename
    cu.write_text(src)
    ptx = tmp_path / (filename + ".ptx")
    res = subprocess.run([NVCC, "--ptx", f"-arch={ARCH}", "-std=c++17", "-o", str(ptx), str(cu)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"nvcc failed on {filename}:\n{res.stderr[-6000:]}"
    entries = re.findall(r"^\.visible \.entry (\S+)\(", ptx.read_text(), flags=re.M)
    assert len(entries) == len(names), f"{len(entries)} kernels in the PTX, {len(names)} instantiations asked for"
