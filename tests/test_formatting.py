"""One number formatter: the named kinds of :mod:`explorer.explain.numbers`, and a ceiling on the inline number
formats left elsewhere in explorer/ and app/ so they cannot grow back."""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from explorer.explain import numbers as N

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "explorer" / "explain" / "numbers.py"
# a format spec that writes a number: a float/percent type (f e g %, either case, or n) or a thousands separator
NUMERIC_SPEC = re.compile(r"[,_]|[eEfFgGn%]$")
# what is left, each for a reason: sizes written into CSS, SVG and DOT (not read as numbers), an answer stored in a
# canonical form, a tick label built digit by digit, a signed difference in points, MB columns with separators,
# the sandbox child (which imports nothing of the app), the picture checker's own messages. There were 288.
CEILING = 16


def inline_number_formats(paths, root: Path = ROOT) -> list[str]:
    """``path:line: spec`` for every f-string replacement field whose format spec writes a number."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.format_spec.values)
                if NUMERIC_SPEC.search(spec):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {spec}")
    return found


def _sources() -> list[Path]:
    return [p for d in ("explorer", "app") for p in sorted((ROOT / d).rglob("*.py")) if p != HOME]


def test_inline_number_formats_do_not_grow_back():
    found = inline_number_formats(_sources())
    assert len(found) <= CEILING, (
        f"{len(found)} inline number formats outside explorer/explain/numbers.py (at most {CEILING}): write the "
        "number with one of its functions (num, plain, count, sci, percent, fixed, megabytes, milliseconds...)\n"
        + "\n".join(found))


def test_the_counter_sees_number_formats_and_nothing_else(tmp_path):
    src = tmp_path / "x.py"
    src.write_text('a, n = 1.5, 3\n'
                   'f"{a:.3g} {a:.1e} {a:.2f} {n:,} {a:.0%} {a:g} {a:,.0f} {a:.{n}g}"\n'
                   'f"{n:02d} {n:02x} {n:>3} {a!r} {a}"\n'
                   '"{a:.3g}".format(a=a)\n')
    specs = [line.split(": ", 1)[1] for line in inline_number_formats([src], tmp_path)]
    assert specs == [".3g", ".1e", ".2f", ",", ".0%", "g", ",.0f", ".{}g"]


def test_num_five_significant_digits_and_scientific_outside():
    assert N.num(368.0378983963) == "368.04"
    assert N.num(1.5) == "1.5" and N.num(-5) == "-5" and N.num(0) == "0" and N.num(0.0) == "0"
    assert N.num(1e-8) == "1.0000e-8" and N.num(123456.0) == "1.2346e+5"
    assert N.num(2 / 3, 3) == "0.667" and N.num(16000, 2) == "1.6e+4"
    assert N.num(float("nan")) == "nan" and N.num(math.inf) == "inf" and N.num(-math.inf) == "-inf"
    assert N.num(None) == "" and N.num("x̄3") == "x̄3"
    assert N.num(np.float32(0.1)) == "0.1" and N.num(np.int64(7)) == "7"


def test_plain_is_the_shortest_form():
    assert N.plain(0.1) == "0.1" and N.plain(1e-5) == "1e-05" and N.plain(3.0) == "3" and N.plain(2) == "2"
    assert N.plain(1234567.0) == "1.23457e+06"


def test_count_groups_thousands_and_rounds_floats():
    assert N.count(1234567) == "1,234,567" and N.count(12) == "12" and N.count(0) == "0"
    assert N.count(2499.6) == "2,500" and N.count(np.int64(10_000)) == "10,000" and N.count(-1500) == "-1,500"


def test_sci_writes_errors_by_their_size():
    assert N.sci(3.24e-9) == "3.2e-09" and N.sci(0.0) == "0.0e+00" and N.sci(12345.0) == "1.2e+04"
    assert N.sci(3.24e-9, 3) == "3.24e-09" and N.sci(1e-5, 1) == "1e-05"


def test_percent():
    assert N.percent(0.873) == "87%" and N.percent(0.873, 1) == "87.3%" and N.percent(1) == "100%"
    assert N.percent(0.0) == "0%" and N.percent(0.00049, 1) == "0.0%"


def test_fixed_megabytes_milliseconds():
    assert N.fixed(2.5) == "2.5" and N.fixed(1.5, 2) == "1.50" and N.fixed(12.6, 0) == "13"
    assert N.megabytes(3_400_000) == "3.4" and N.megabytes(3_400_000, 0) == "3" and N.megabytes(0) == "0.0"
    assert N.milliseconds(0.01234) == "12.3" and N.milliseconds(0.5, 0) == "500"


def test_duration_reads_as_a_person_says_it():
    assert N.duration(5) == "5 s" and N.duration(59.4) == "59 s" and N.duration(125) == "2 min 05 s"
    assert N.duration(3780) == "1 h 03 min" and N.duration(None) == "–" and N.duration(math.nan) == "–"


def test_human_bytes_in_the_notes_units():
    assert N.human_bytes(512) == "512 B" and N.human_bytes(2048) == "2.05 kB"
    assert N.human_bytes(67e6) == "67 MB" and N.human_bytes(1.34e8) == "0.134 GB"
    assert N.human_bytes(5.6e14) == "5.6e5 GB"


def test_precise_keeps_twelve_digits():
    assert N.precise(368.0378983963) == "368.037898396" and N.precise(1) == "1" and N.precise(1e-20) == "1e-20"


def test_values_as_text():
    assert N.fmt(None) == "…" and N.fmt("x") == "x" and N.fmt(2.0) == "2"
    assert N.fmt([1, 2, 3, 4, 5]) == "[1, 2, 3, 4, …]" and N.fmt([[1.5, 2], [3, 4]]) == "[1.5, 2, 3, 4]"
    assert N.nested([[1, 2.5], [3, 1 / 3]]) == "[[1, 2.5], [3, 0.33333]]"
    assert N.nested(np.array([9.0, 12.0])) == "[9, 12]" and N.nested(np.float64(0.5)) == "0.5"
    assert N.nested((0.1 + 0.2,)) == "[0.3]" and N.nested(1 / 3, 3) == "0.333"
    assert N.fmt_value(None) == "" and N.fmt_value(3) == "3" and N.fmt_value(np.array(2.5)) == "2.5"
    assert N.fmt_value(np.arange(8.0).reshape(2, 4)) == "[0, 1, 2, 3, 4, 5, …] (2×4)"
    assert N.fmt_value([1.0, 2.0], max_items=4) == "[1, 2] (2)"


def test_fmt_check_per_element_or_along_directions():
    class Directional:
        estimates = [0.5, 1 / 3]
    assert N.fmt_check([1.0, 2.0]) == "[1, 2] (2)"
    assert N.fmt_check(Directional()) == "along 2 random directions v: 0.5, 0.33333"


@pytest.mark.parametrize("module", ["explorer.kit.formatting", "explorer.kit.labels"])
def test_the_kit_reexports_the_one_formatter(module):
    import importlib
    m = importlib.import_module(module)
    assert m.num is N.num
