"""User text is data (issue 14): deep-link warnings, program errors, hover labels and page messages show it
escaped; malformed links and layer lists are typed errors (never a traceback); out-of-range link values are
reported; the inputs box reports positions in what the user typed."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.explain import ExpressionError, parse_inputs, parse_program
from engine.explain import parser as parser_module
from explorer.expression_explorer import explorer_model
from explorer.kit.deeplink import DeepLinkError, LinkField, LinkSchema, decode_values
from explorer.kit.formatting import code_span, md_escape
from explorer.kit.programs import InputProblem
from explorer.network_explorer.presets import PresetError, parse_layers

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "app" / "pages"
PHISH = "[**Session expired – log in again**](https://evil.example/login)"
SPECIALS = set("[]()*_`<>$:!#|~")


def page(name: str) -> AppTest:
    return AppTest.from_file(str(PAGES / name), default_timeout=90)


def unescaped(markdown: str) -> set[str]:
    """Markdown-special characters that appear without a backslash before them (i.e. would be read)."""
    out, i = set(), 0
    while i < len(markdown):
        ch = markdown[i]
        if ch == "\\":
            i += 2
            continue
        if ch in SPECIALS:
            out.add(ch)
        i += 1
    return out


def test_md_escape_leaves_nothing_for_markdown_to_read():
    for text in (PHISH, "<b>B</b><a href='x'>E</a>", ":red[x] $x^2$ `code` a_b_c # h | t ~~s~~ !", "a\\b"):
        assert unescaped(md_escape(text)) == set(), text
    assert unescaped("[a](b)") == {"[", "]", "(", ")"}  # the helper itself finds what is live


def test_code_span_escaping():
    assert code_span("good") == "`good`"
    assert unescaped(code_span("`")) == set() and "`" in code_span("`")


# --- deep links -------------------------------------------------------------------------------------


def test_nine_hundred_nested_brackets_are_a_link_error_not_a_recursion_error():
    with pytest.raises(DeepLinkError, match="nested more than 6 deep"):
        decode_values("x=" + "[" * 900 + "1" + "]" * 900)
    state, problems = LinkSchema({"at": LinkField("values", {})}).decode({"at": "x=" + "[" * 900})
    assert state == {"at": {}} and "nested" in problems[0]


@pytest.mark.parametrize("raw", ["１２", "١٢", "12.0", "1_2", "0x1f", " "])
def test_int_link_values_take_ascii_digits_only(raw):
    state, problems = LinkSchema({"step": LinkField("int", 0)}).decode({"step": raw})
    assert state == {"step": 0} and "is not a whole number (digits 0-9)" in problems[0]


def test_ascii_numbers_still_read():
    schema = LinkSchema({"step": LinkField("int", 0), "h": LinkField("float", 1.0)})
    assert schema.decode({"step": "+12", "h": "-1.5e-3"}) == ({"step": 12, "h": -0.0015}, [])
    assert schema.decode({"h": "１.５"})[1] == ["link parameter 'h' ignored: '１.５' is not a number (digits 0-9)"]


def test_a_link_warning_shows_the_links_text_escaped():
    at = page("3_Expression_explorer.py")
    at.query_params["step"] = PHISH
    at.run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if "step" in w.value]
    assert "Session expired" in warning and unescaped(warning) == set()


def test_an_orders_link_warning_is_escaped_too():
    at = page("5_Backprop_orders.py")
    at.query_params["orders"] = f"topological,{PHISH}"
    at.run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if "orders" in w.value]
    assert "evil\\.example" in warning and unescaped(warning) == set()


def test_out_of_range_step_in_a_link_is_reported_once():
    at = page("3_Expression_explorer.py")
    at.query_params["step"] = "99"
    at.run()
    assert not at.exception
    assert any("'step' ignored: 99 is outside 1 to 14 here; showing 14" in w.value.replace("\\", "")
               for w in at.warning)  # steps are 1-based, as the header shows them
    assert at.slider[0].value == 14
    next(b for b in at.button if b.label == "Back").click().run()
    assert not any("'step'" in w.value for w in at.warning)  # the user moved on: no second warning
    assert at.slider[0].value == 13


def test_out_of_range_index_and_batch_in_a_link_are_reported():
    at = page("6_Gradient_check.py")
    at.query_params["index"] = "50"
    at.run()
    assert not at.exception
    assert any("'index' ignored: 50 is outside 0 to 0" in w.value.replace("\\", "") for w in at.warning)
    at = page("10_Network_explorer.py")
    at.query_params["net"] = "mlp"
    at.query_params["batch"] = "1000"
    at.run()
    assert not at.exception
    assert any("'batch' ignored: 1000 is outside 1 to 64" in w.value.replace("\\", "") for w in at.warning)


# --- program and layer errors --------------------------------------------------------------------------


def test_a_program_error_quotes_the_program_escaped():
    at = page("3_Expression_explorer.py")
    at.query_params["expr"] = "f = '[a](http://ev.il)'"
    at.run()
    assert not at.exception
    (err,) = [e.value for e in at.error if "not accepted" in e.value]
    head, _, message = err.partition(" — ")
    assert head == "**Program not accepted**" and "ev" in message and unescaped(message) == set()


def test_a_comment_with_html_never_reaches_the_figure_as_html():
    model = explorer_model("x3 = 1.5 * x1  # <b>B</b><a href='https://ev.il'>E</a>\nf = x3 + x2", "x1 = 3, x2 = 1")
    text = json.dumps(model.figure)
    assert "<b>B" not in text and "<a href" not in text  # Plotly would read them (hover, labels, titles)
    hovers = [h for trace in model.figure["data"] for h in trace.get("hovertext") or []]
    assert hovers and all("<br>" in h for h in hovers)  # the renderer's own markup is still there


@pytest.mark.parametrize("text", ["linear 4, dropout 1.2.3, linear 2", "dropout 0..", "linear 4, dropout ."])
def test_bad_dropout_probabilities_are_parse_errors(text):
    with pytest.raises(PresetError, match="dropout needs a probability"):
        parse_layers(text)


def test_a_bad_layers_link_is_an_error_message_not_a_traceback():
    at = page("10_Network_explorer.py")
    at.query_params["net"] = "custom"
    at.query_params["layers"] = "linear 4, dropout 1.2.3, linear 2"
    at.run()
    assert not at.exception
    assert any("cannot be built" in e.value and "dropout needs a probability" in e.value for e in at.error)


def test_memory_errors_while_computing_a_line_are_typed(monkeypatch):
    def hungry(x):
        raise MemoryError()

    monkeypatch.setitem(parser_module.ALLOWED_FUNCTIONS, "exp", (hungry, 1, False))
    import engine
    with pytest.raises(ExpressionError, match="not enough memory") as info:
        parse_program("y = x + 1\nf = exp(y)").evaluate({"x": engine.tensor(1.0)})
    assert info.value.kind == "limit" and info.value.line == 2


# --- positions in the inputs box ----------------------------------------------------------------------


@pytest.mark.parametrize("text, line, col, caret", [
    ("x1 = 3, x2 = __import__('os')", 1, 14, "x1 = 3, x2 = __import__('os')\n             ^"),
    ("x1 = 3; x2 = y", 1, 14, "x1 = 3; x2 = y\n             ^"),
    ("x1 = 3\n  W = [1,\n 2], v = foo", 3, 10, " 2], v = foo\n         ^"),
    ("a = 1, b = (2", 1, 12, "a = 1, b = (2\n           ^"),
])
def test_the_inputs_box_reports_positions_in_what_was_typed(text, line, col, caret):
    with pytest.raises(ExpressionError) as info:
        parse_inputs(text)
    assert (info.value.line, info.value.col) == (line, col)
    assert InputProblem("inputs", info.value).caret(text) == caret


def test_no_traceback_reaches_a_browser():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"   # "false" is read as the old stacktrace mode
