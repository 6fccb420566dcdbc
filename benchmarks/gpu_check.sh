#!/usr/bin/env bash
# The prepared GPU check (see benchmarks/gpu_check.py): tests with the CUDA backend, then
# bandwidth, matmul and HW2 figures; writes benchmarks/results/gpu-<date>.md. Installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
exec timeout 295 python3 benchmarks/gpu_check.py "$@"
