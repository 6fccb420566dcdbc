"""Benchmark scripts (run as `python benchmarks/NAME.py`); a package so tests can import their workloads."""
