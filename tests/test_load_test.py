"""The load test's client speaks Streamlit's real protocol: one student steps, one trainer trains, briefly."""
from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def load_test_module():
    spec = importlib.util.spec_from_file_location("load_test", ROOT / "benchmarks" / "load_test.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["load_test"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_a_short_class_steps_and_trains_without_errors():
    lt = load_test_module()
    # in a thread of its own: after the browser tests, Playwright's event loop may be running in this one
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        row = pool.submit(asyncio.run, lt.one_configuration(2, 1, seconds=8.0, pace=(0.5, 1.0), epochs=3000,
                                                            workers=None, seed=0)).result()
    assert row["errors"] == {}, row["error_examples"]
    assert row["steps"] >= 1 and row["step_p95_ms"] is not None  # (a loaded test machine may be slow)
    assert row["trainings_started"] == 1 and row["health_p95_ms"] is not None
    assert row["server_rss_mb"] > 50 and row["workers_rss_mb"] > 10  # the training process was seen
    assert "| 1 | 2 | 1 (1 started) |" in lt.markdown_table([row])


def test_exit_status_is_nonzero_when_any_request_failed():
    lt = load_test_module()
    assert lt.exit_status([{"errors": {}}, {"errors": {"step timeout": 0}}]) == 0
    assert lt.exit_status([{"errors": {}}, {"errors": {"step timeout": 2}}]) == 1
