"""Unit tests of the app's non-UI helpers (deep links, presentation, namespacing, page discovery)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as hs

from explorer.kit.deeplink import DeepLinkError, LinkField, LinkSchema, decode_values, encode_values, page_url
from explorer.kit.pages import discover_pages
from explorer.kit.presentation import NORMAL, PRESENTING, css, look
from explorer.kit.state import Namespace

SCHEMA = LinkSchema({
    "expr": LinkField("str", "x*x"),
    "at": LinkField("values", {}),
    "step": LinkField("int", 0, minimum=0),
    "h": LinkField("float", 1e-6),
    "present": LinkField("bool", False),
    "orders": LinkField("list", ["topological"], choices=("topological", "bfs_first_touch")),
    "mode": LinkField("str", "reverse", choices=("reverse", "forward")),
})


def test_encode_leaves_out_defaults_and_round_trips():
    state = {"expr": "x1 + exp(1.5*x1 + 2*x2)", "at": {"x1": 3.0, "x2": 0.5}, "step": 7, "h": 1e-3,
             "present": True, "orders": ["topological", "bfs_first_touch"], "mode": "reverse"}
    params = SCHEMA.encode(state)
    assert "mode" not in params  # default
    assert params["at"] == "x1=3;x2=0.5"
    assert params["present"] == "1"
    back, problems = SCHEMA.decode(params)
    assert problems == []
    assert back == state


def test_bad_values_keep_defaults_and_say_why():
    params = {"step": "seven", "at": "x1=__import__('os')", "mode": "sideways", "h": "nan",
              "orders": "topological,dfs", "present": "maybe", "unrelated": "x"}
    state, problems = SCHEMA.decode(params)
    assert state == SCHEMA.defaults()
    joined = "\n".join(problems)
    for key in ("step", "at", "mode", "h", "orders", "present"):
        assert f"'{key}'" in joined
    assert "unrelated" not in joined
    given_only, _ = SCHEMA.decode(params, fill_defaults=False)
    assert given_only == {}


def test_minimum_enforced():
    state, problems = SCHEMA.decode({"step": "-3"})
    assert state["step"] == 0 and "below" in problems[0]


def test_values_with_matrices_and_negative_numbers():
    text = "W=[[1,2,3],[4,5.5,-6]];x=[1,0,-1];b=-0.25"
    vals = decode_values(text)
    assert vals == {"W": [[1.0, 2.0, 3.0], [4.0, 5.5, -6.0]], "x": [1.0, 0.0, -1.0], "b": -0.25}
    assert decode_values(encode_values(vals)) == vals


@pytest.mark.parametrize("text", ["x1", "1x=3", "x=[1,[2]]", "x=[[1,2],[3]]", "x=true", "x=[]", "x='a'",
                                  "x=1e999", "x=Infinity"])
def test_decode_values_rejects(text):
    with pytest.raises(DeepLinkError):
        decode_values(text)


@given(hs.dictionaries(hs.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True),
                       hs.floats(allow_nan=False, allow_infinity=False), max_size=5))
def test_values_round_trip_exactly(vals):
    back = decode_values(encode_values(vals))
    assert back.keys() == vals.keys()
    for k in vals:
        assert back[k] == vals[k] or (math.copysign(1, back[k]) == math.copysign(1, vals[k]) and back[k] == 0)


def test_page_url_escapes():
    url = page_url("http://h:1/", "Expression_explorer", {"expr": "x1 + exp(x2)", "at": "x1=3;x2=0.5"})
    assert url == "http://h:1/Expression_explorer?expr=x1+%2B+exp%28x2%29&at=x1%3D3%3Bx2%3D0.5"


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown link field kind"):
        LinkField("complex")


def test_namespace_keeps_pages_apart():
    state: dict = {}
    a, b = Namespace("explorer"), Namespace("orders")
    assert a.setdefaults(state, {"step": 3}) is True
    assert a.setdefaults(state, {"step": 9}) is False
    b.setdefaults(state, {"step": 5})
    assert a.get(state, "step") == 3 and b.get(state, "step") == 5
    assert a.items(state) == {"step": 3}
    with pytest.raises(ValueError):
        Namespace("not valid")


def test_presentation_look_is_larger_and_hides_chrome():
    assert look(True) is PRESENTING and look(False) is NORMAL
    for f in ("font_px", "figure_font", "node_size", "figure_height", "table_font_px", "button_font_px"):
        assert getattr(PRESENTING, f) > getattr(NORMAL, f)
    assert "stSidebar" in css(PRESENTING) and "display: none" in css(PRESENTING)
    assert "stSidebar" not in css(NORMAL)


def test_discover_pages_reads_docstrings_without_running(tmp_path: Path):
    (tmp_path / "2_Backprop_orders.py").write_text('"""Orders side by side.\n\nMore."""\nraise SystemExit\n')
    (tmp_path / "10_Later_page.py").write_text("x = 1\n")
    (tmp_path / "1_Expression_explorer.py").write_text('"""Step through\na program."""\n')
    (tmp_path / "helper.py").write_text("")
    (tmp_path / "3_Broken.py").write_text("def (:\n")
    pages = discover_pages(tmp_path)
    assert [p.url_path for p in pages] == ["Expression_explorer", "Backprop_orders", "Broken", "Later_page"]
    assert pages[0].title == "Expression explorer" and pages[0].summary == "Step through a program."
    assert pages[1].summary == "Orders side by side."
    assert pages[2].summary == "" and pages[3].summary == ""
    assert pages[0].relative_to_app(tmp_path.parent) == f"{tmp_path.name}/1_Expression_explorer.py"


def test_discover_pages_of_this_app_lists_the_explorer_pages():
    pages = discover_pages(Path(__file__).resolve().parents[1] / "app" / "pages")
    names = [p.url_path for p in pages]
    for expected in ("Expression_explorer", "Backprop_orders", "Gradient_check", "Forward_vs_reverse"):
        assert expected in names


def test_app_config_sends_no_usage_statistics_and_no_tracebacks():
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["client"]["showErrorDetails"] is False
    assert cfg["theme"]["primaryColor"]
