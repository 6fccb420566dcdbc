"""The command-line examples print what the explain layer computed (smoke + content checks)."""
import importlib.util
from pathlib import Path

import pytest

from explorer.explain import jacobian_costs, record_execution
from explorer.explain.text import backward_lines, forward_lines, table

ROOT = Path(__file__).resolve().parents[1]


def _run(name: str, argv: list[str], capsys) -> str:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rc = mod.main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    return out


def test_table_aligns_columns():
    t = table([{"a": 1, "bb": 2.5}, {"a": "long value", "bb": None}])
    lines = t.splitlines()
    assert lines[0].startswith("a           bb") and set(lines[1]) <= {"-", " "} and len(lines) == 4


def test_trace_text_lists_forward_and_backward():
    tr = record_execution("f = x1 + exp(1.5*x1 + 2*x2)", "x1 = 3, x2 = 0.5")
    assert forward_lines(tr)[0] == "  1. x3 = mul(1.5, x1) = 4.5"
    text = "\n".join(backward_lines(tr))
    assert "x̄1 = 1 (1 of 2 received)" in text and "x̄1 = 368.04 (2 of 2 received)" in text


def test_example_trace(capsys):
    out = _run("explain_trace", [], capsys)
    assert "x6 = exp(x5) = 244.69" in out and "x3 → x1: VJP contribution 367.04" in out and "df/dx1 = 368.037898" in out
    out = _run("explain_trace", ["--strategy", "bfs_first_touch"], capsys)
    assert "LOST" in out and "df/dx1 = 1\n" in out


def test_example_trace_reports_bad_program(capsys):
    spec = importlib.util.spec_from_file_location("et", ROOT / "examples" / "explain_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--program", "f = __import__('os')"]) == 2
    assert "not an allowed function" in capsys.readouterr().err


def test_example_orders(capsys):
    out = _run("explain_orders", ["--graphs", "6", "--ops", "8", "--chain", "1500"], capsys)
    assert "bfs_first_touch  1 " in out and "NO" in out
    assert "4095" in out and "RecursionError" in out


def test_example_costs_and_h_sweep(capsys):
    out = _run("explain_costs", ["--depth", "2", "--width", "8", "--batch", "4"], capsys)
    assert "one column of J" in out and "one row of J" in out and "total" in out
    assert "159383552" in out and "159.4" in out  # the notes' exercise 9
    out = _run("explain_h_sweep", [], capsys)
    assert "1.0e-12" in out and "float64 forward |error|" in out
    best = out.split("best h (central")[1].splitlines()[0]
    h64 = float(best.split("float64: ")[1].split(",")[0])
    assert 1e-6 <= h64 <= 3e-5  # the float64 best h on the slide example
    assert "float32: 3.8e-03" in best


def test_jacobian_costs_with_data_inputs():
    jc = jacobian_costs("y = sigmoid(t * a)", {"t": 0.5, "a": [1.0, 2.0, 3.0]}, wrt=["t"])
    assert (jc.n_inputs, jc.n_outputs) == (1, 3)
    assert jc.forward.passes == 1 and jc.reverse.passes == 3 and jc.agree
    with pytest.raises(Exception, match="not an input"):
        jacobian_costs("y = t * 2", {"t": 1.0}, wrt=["q"])
