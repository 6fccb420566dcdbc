"""User text is data: deep-link warnings, program errors, hover labels and page messages show it
escaped; malformed links and layer lists are typed errors (never a traceback); out-of-range link values are
reported; the inputs box reports positions in what the user typed."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.explain import ExpressionError, parse_inputs, parse_program
from explorer.explain import parser as parser_module
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


# --- what an adversary met on the class server: links, long programs, bad join codes -------------------------

# what GitHub-flavoured Markdown (remark-gfm's autolink literals, Streamlit's renderer) links in a text node after
# the escapes are read: a scheme or www., and e-mail addresses
GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE)
GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)")


def read_by_markdown(markdown: str) -> str:
    """The text Markdown reads out of escaped text: each backslash escape gives its character."""
    return re.sub(r"\\(.)", r"\1", markdown)


@pytest.mark.parametrize("text", ["https://evil.example/login?x=1", "see HTTP://evil.example", "www.evil.example/x",
                                  "write to a.b+c@evil.example", "mailto:x@evil.example", "xmpp:x@evil.example/r",
                                  "linear 4, https://evil.example/x, relu"])
def test_escaped_user_text_leaves_no_bare_url_or_address_for_markdown_to_link(text):
    """A warning quoting a link's ``order=https://...`` (or the custom-layers box) was escaped
    yet showed a live link: GFM links bare URLs after reading the escapes. The text still reads the same."""
    shown = md_escape(text)
    read = read_by_markdown(shown)
    assert not GFM_URL.search(read) and not GFM_EMAIL.search(read), read
    assert read.replace("\u2060", "") == text and unescaped(shown) == set()


def test_a_program_too_long_for_a_link_is_not_written_into_the_url():
    """A 1 MB program was written into the URL (1.47 MB) though a link parameter over 4,000
    characters is refused when read back; only what the link can give back is written."""
    from explorer.kit.deeplink import MAX_PARAM_CHARS
    at = page("3_Expression_explorer.py").run()
    at.text_area(key="explorer_expr").set_value("f = x1 + " + "x1 * " * 200_000 + "x1").run()
    assert not at.exception
    assert any("too long" in e.value for e in at.error)
    assert all(len(v) <= MAX_PARAM_CHARS for v in at.query_params.values()) and "expr" not in at.query_params
    at.text_area(key="explorer_expr").set_value("f = x1 * x2").run()
    assert at.query_params["expr"] == "f = x1 * x2"                      # a program that fits is still shared


def test_a_link_schema_keeps_only_what_it_reads_back():
    from explorer.kit.deeplink import MAX_PARAM_CHARS
    schema = LinkSchema({"expr": LinkField("str", ""), "step": LinkField("int", 1, minimum=0),
                         "at": LinkField("values", {})})
    params = schema.encode({"expr": "x" * (MAX_PARAM_CHARS + 1), "step": 3, "at": {"x": [1.0, 2.0]}})
    kept, dropped = schema.readable({**params, "other": "kept: not the page's"})
    assert dropped == ["expr"] and kept == {"step": "3", "at": "x=[1,2]", "other": "kept: not the page's"}
    assert schema.decode(kept)[1] == []


@pytest.mark.parametrize("code", ["ZZZZZZ", "https://evil.example/<b>x</b>"])
def test_a_bad_join_link_says_so_on_the_page(code):
    """``/?join=ZZZZZZ`` showed its error only in the sidebar's Class box (collapsed on a phone
    and in presentation mode); the page itself says the join failed, the link's text escaped."""
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=90)
    at.query_params["join"] = code
    at.run()
    assert not at.exception
    (shown,) = [e.value for e in at.main.error]
    assert shown.startswith("**Could not join the class** — ") and unescaped(shown.split(" — ", 1)[1]) == set()
    assert "ZZZZZZ" in shown or "is not a class code" in shown
    assert not GFM_URL.search(read_by_markdown(shown))
    assert "class_code" not in at.session_state                       # not in a class
    at.run()
    assert not at.main.error                                          # said once, not on every run after
