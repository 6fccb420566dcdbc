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
    assert cfg["client"]["showErrorDetails"] == "none"   # "false" is read as the old stacktrace mode
    assert cfg["theme"]["primaryColor"]


# --- stepping: one 1-based numbering, Play's ticks ---------------------------------------------------

from explorer.kit.presentation import MIN_PRESENT_PX, ROOT_PRESENT_PX, readable_dot, readable_figure  # noqa: E402
from explorer.kit.state import PlayState, clamp_step, play_tick, start_playing  # noqa: E402


def test_clamp_step_is_one_based_and_reads_old_links():
    assert clamp_step(0, 14) == 1          # step=0: the first step of a link written before steps were 1-based
    assert clamp_step(7, 14) == 7 and clamp_step(99, 14) == 14 and clamp_step(-3, 14) == 1
    assert clamp_step("5", 14) == 5 and clamp_step("x", 14) == 1 and clamp_step(None, 14) == 1
    assert clamp_step(3, 0) == 1           # a program with no frames still has step 1


def test_play_moves_one_step_per_period_and_stops_at_the_end():
    s = start_playing(3, 5, now=100.0)
    assert s == PlayState(3, True, 100.0)
    assert play_tick(s, 5, now=100.2, seconds_per_step=1.0) == s          # too early: nothing moves
    s = play_tick(s, 5, now=101.0, seconds_per_step=1.0)
    assert s == PlayState(4, True, 101.0)
    s = play_tick(s, 5, now=102.0, seconds_per_step=1.0)
    assert s == PlayState(5, False, 102.0)                                 # the last step stops Play
    assert play_tick(s, 5, now=109.0, seconds_per_step=1.0).step == 5      # and it stays there
    assert start_playing(5, 5, now=0.0).step == 1                         # Play at the end starts again
    assert start_playing(1, 1, now=0.0).playing is False                  # nothing to play
    paused = PlayState(2, False, 0.0)
    assert play_tick(paused, 5, now=50.0, seconds_per_step=1.0) == paused


@given(hs.lists(hs.floats(0.01, 3.0), min_size=1, max_size=40), hs.sampled_from([0.25, 0.5, 1.0, 2.0]))
def test_play_is_never_ahead_of_its_schedule_nor_a_step_behind_it(gaps, seconds):
    """Whatever the ticks' timing: the step shown is never one whose time has not come (a tick may be
    PLAY_EARLY of a step early) and, right after a tick, never more than one step behind the schedule."""
    from explorer.kit.state import PLAY_EARLY
    s, now = start_playing(1, 1000, 0.0), 0.0
    for gap in gaps:
        now += gap
        nxt = play_tick(s, 1000, now, seconds)
        assert nxt.step >= s.step
        on_time = 1 + int(now / seconds + PLAY_EARLY)     # the step the schedule says is due now
        assert on_time - 1 <= nxt.step <= on_time
        s = nxt


def test_play_keeps_to_its_schedule_when_a_rerun_is_slow():
    """Play at 1 s/step with its timer ticking every quarter step and every step's rerun taking 0.6 s:
    13 steps still take 13 s (the rerun's time does not add to each step, as it did: 28 s)."""
    from explorer.kit.state import play_interval
    s, now, moves = start_playing(1, 14, 0.0), 0.0, []
    while s.playing and now < 100:
        now += play_interval(1.0)
        nxt = play_tick(s, 14, now, 1.0)
        if nxt.step != s.step:
            moves.append(now)
            now += 0.6  # drawing the step
        s = nxt
    assert len(moves) == 13 and 12.5 <= moves[-1] <= 13.5, moves
    assert all(0.5 <= b - a <= 1.5 for a, b in zip(moves, moves[1:]))


def test_play_under_cpu_starvation_skips_steps_and_keeps_its_pace():
    """At load 20 every rerun took ~2.5 s and 13 steps at 1 s/step took 35.7 s. Play now shows the step
    that is due when its rerun can run, skipping the ones in between: the last step comes on time (within one
    rerun), and it is always shown."""
    from explorer.kit.state import play_interval
    rerun = 2.5
    s, now, shown, moves = start_playing(1, 14, 0.0), 0.0, [], []
    while s.playing and now < 100:
        now += play_interval(1.0)
        nxt = play_tick(s, 14, now, 1.0)
        if nxt.step != s.step:
            shown.append(nxt.step)
            moves.append(now)
            now += rerun  # drawing the step, on a starved CPU
        s = nxt
    # the last step's turn comes by 13 s plus the rerun in progress then (each step drawn late: 13 x 3.5 s)
    assert shown[-1] == 14 and moves[-1] <= 13 + rerun + play_interval(1.0), (shown, moves)
    assert len(shown) < 13 and shown == sorted(set(shown))          # steps skipped, never repeated or reversed


# --- presentation mode: every text a class reads --------------------------------------------------------

def _font_sizes(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("font") and isinstance(v, dict) and "size" in v:
                yield f"{path}.{k}", v["size"]
            yield from _font_sizes(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _font_sizes(v, f"{path}[{i}]")


def test_readable_figure_lifts_every_font_in_presentation_only():
    spec = {"data": [{"type": "scatter", "textfont": {"size": [10, 30]}},
                     {"type": "heatmap", "colorbar": {"tickfont": {"size": 9}}}],
            "layout": {"font": {"size": 12}, "title": {"text": "t", "font": {"size": 16}},
                       "legend": {"font": {"size": 11}}, "xaxis": {"tickfont": {"size": 10}},
                       "yaxis": {"type": "log"}, "annotations": [{"text": "a", "font": {"size": 8}}],
                       "sliders": [{"font": {"size": 10}, "currentvalue": {"font": {"size": 10}}}]},
            "frames": [{"data": [{"textfont": {"size": 9}}], "layout": {"title": {"font": {"size": 13}}}}]}
    assert readable_figure(spec, NORMAL) is spec
    out = readable_figure(spec, PRESENTING)
    sizes = list(_font_sizes(out))
    flat = [x for _, v in sizes for x in (v if isinstance(v, list) else [v])]
    assert min(flat) >= MIN_PRESENT_PX and 30 in flat  # raised, never lowered
    assert out["layout"]["font"]["size"] >= MIN_PRESENT_PX
    # a log axis draws its 2s and 5s at 3/4 of the tick size: those must reach the floor too
    assert 0.75 * out["layout"]["yaxis"]["tickfont"]["size"] >= MIN_PRESENT_PX
    assert spec["layout"]["legend"]["font"]["size"] == 11  # the caller's dict is untouched


def test_readable_dot_and_presentation_css():
    dot = 'digraph { node [fontsize="11"]; edge [fontsize=9]; a [label="x", fontsize=20]; a -> b; }'
    assert readable_dot(dot, NORMAL) == dot
    out = readable_dot(dot, PRESENTING)
    assert 'fontsize="14"' in out and 'fontsize="20"' in out and "fontsize=9" not in out
    style = css(PRESENTING)
    assert f"html {{ font-size: {ROOT_PRESENT_PX}px" in style  # Streamlit's rem sizes scale with it
    assert ROOT_PRESENT_PX * 0.75 >= MIN_PRESENT_PX            # its smallest text (0.75rem) included
    assert "revert-layer" in css(NORMAL)                      # Graphviz text at the size it was laid out for


# --- page logic: verdicts of the backprop orders, the gradient check's reasons ---------------------------

def test_bfs_goes_wrong_where_x1_is_finalised_early():
    from explorer.backprop_orders import order_rows, orders_model
    from explorer.kit import presets
    m = orders_model(presets.DEFAULT.program, presets.DEFAULT.inputs, ("topological", "bfs_first_touch"))
    assert m.views["topological"].moments == [] and m.views["topological"].verdict_frame is None
    bfs = m.views["bfs_first_touch"]
    first, lost = bfs.moments
    assert (first.kind, first.node, first.frame) == ("finalised", "x1", 7)   # shown as step 8
    assert first.text.startswith("x1 finalised with 1 of 2 contributions")
    assert (lost.kind, lost.frame) == ("lost", bfs.lost_step) and "367" in lost.text
    assert bfs.verdict_frame == 7 and bfs.moments_until(6) == [] and bfs.moments_until(7) == [first]
    assert order_rows(("a", "b", "c"), True) == [["a", "b"], ["c"]] and order_rows(("a", "b"), False) == [["a"], ["b"]]


@pytest.mark.parametrize("program,inputs,reason,node", [
    ("f = relu(x1 - 3)", "x1 = 3", "kink of relu at 0", "f"),
    ("f = log(x1 - 5)", "x1 = 3", "outside log's domain", "f"),
    ("f = 1/(x1 - 3)", "x1 = 3", "pole (division by zero)", "f"),
    ("f = log(x1 - 3)", "x1 = 3", "pole of log at 0", "f"),
    ("f = sqrt(x1 - 4)", "x1 = 3", "outside the domain of a root", "f"),
    ("f = exp(x1) * x2", "x1 = 800, x2 = 1", "overflow in exp", "x3"),
])
def test_check_gradient_names_the_reason(program, inputs, reason, node):
    from explorer.explain import costs
    from explorer.expression_explorer import check_gradient, explorer_model
    m = explorer_model(program, inputs)
    fd = costs.central_differences(m.program, m.inputs)
    chk = check_gradient(m.trace, "x1", m.trace.grads["x1"], fd["x1"])
    assert not chk.ok and chk.reason.startswith(reason + ": autodiff"), chk
    assert {n.id: n.name for n in m.trace.graph.nodes}[chk.cause_node] == node
    rows = {r["node"]: r for r in m.table}
    assert rows["x1"]["status"] == "failed" and rows[node]["status"] in ("cause", "failed")


def test_check_gradient_passes_good_gradients_and_reports_plain_disagreement():
    from explorer.expression_explorer import check_gradient, explorer_model
    m = explorer_model("f = x1 * x2", "x1 = 3, x2 = 0.5")
    assert check_gradient(m.trace, "x1", 0.5, 0.5 + 1e-9).ok
    wrong = check_gradient(m.trace, "x1", 0.7, 0.5)  # as a broken VJP would give
    assert not wrong.ok and wrong.reason.startswith("autodiff and central difference disagree")
    assert wrong.cause_node is None


def _arrow_tables_page():
    import pandas as pd
    import pyarrow as pa
    import streamlit as st

    from explorer.kit.presentation import look
    from explorer.kit.widgets import show_table

    rows = [{"node": f"v{i}", "value": f"{i / 3:.3f}"} for i in range(30)]
    show_table(pa.Table.from_pandas(pd.DataFrame(rows)), look(False), static=True)
    show_table(pd.DataFrame(rows), look(False), static=True)
    show_table(pa.Table.from_pandas(pd.DataFrame(rows)), look(True))


def test_show_table_sends_a_cached_arrow_table_as_its_dataframe_would_be_sent():
    """The Expression explorer keeps its step tables as Arrow (made once): show_table sends them without a round
    trip through pandas, the same bytes as the DataFrame's, and cuts them on a projector like any table."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_arrow_tables_page, default_timeout=60).run()
    assert not at.exception
    arrow, frame, presented = at.table
    assert arrow.proto.arrow_data.data == frame.proto.arrow_data.data
    assert len(arrow.value) == 30 and len(presented.value) == 25
    assert [c.value for c in at.caption] == ["The first 25 of 30 rows (all of them outside presentation mode)."]


def test_the_small_screen_floor_is_16_px_on_a_1366_projector():
    """Presentation pages are the 1920 x 1080 layout scaled to the screen: what must read 16 px on a 1366 x 768
    projector is 23 px in the layout; the rules a page adds raise captions, labels, code and tables to that."""
    from explorer.kit.presentation import fit_factor, small_screen_css, small_screen_floor_px
    assert fit_factor((1920, 1080)) == 1.0 and round(fit_factor((1366, 768)), 3) == 0.711
    assert small_screen_floor_px() == 23 and small_screen_floor_px((1280, 720)) == 24
    rules = small_screen_css()
    for part in ("stCaptionContainer", "stWidgetLabel", "stCode", "stTable", "radiogroup"):
        assert part in rules
    assert rules.count("font-size: max(23px, 1em) !important") == rules.count("{")
