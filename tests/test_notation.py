"""One adjoint notation on every page: x̄i, the output's x̄7 (= f̄) named the same way everywhere.

The pages are run headless (streamlit AppTest) with the real engine; the test reads every text they send
(Markdown, captions, HTML, tables, the figures with all their animation frames) and looks for a notation the
slides do not use.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.explain.graph import adjoint_label, adjoint_names, bar, output_adjoint_note, output_number
from explorer.expression_explorer import explorer_model
from explorer.kit.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "app" / "pages"

# what a page must not write: the output's adjoint as f̄ (except where x̄7 is introduced as "x̄7 (= f̄)"), and the
# generic ḡ / Ḡ the op formulas used before they wrote the output's adjoint ȳ in the same bar notation
OTHER_NOTATION = re.compile(r"(?<!\(= )f\u0304|g\u0304|G\u0304")


def _slide():
    return explorer_model(PRESETS[0].program, PRESETS[0].inputs)


def test_the_slide_examples_output_adjoint_is_x7_with_or_without_named_intermediates():
    named = explorer_model(PRESETS[1].program, PRESETS[1].inputs)   # x3 = ..., x7 = x1 + x6
    typed = _slide()                                                 # f = x1 + exp(...)
    for m in (named, typed):
        g = m.shown_trace.graph
        assert adjoint_names(g)[g.output] == "x̄7"
    g = typed.shown_trace.graph
    assert output_number(g) == "x7" and output_adjoint_note(g) == " (= f̄)"
    assert output_number(named.shown_trace.graph) == ""     # already numbered: nothing to add
    assert output_adjoint_note(named.shown_trace.graph) == " (= f̄)"   # but still the slides' f: x7 = f
    # the caption that seeds the backward pass introduces the name once; the backward graph heads it x̄7
    seed = next(f.caption for f in typed.frameset.frames if f.phase == "backward")
    assert seed.startswith("take x7: x̄7 (= f̄) = 1")   # named as its node is drawn: x7 = x1 + x6
    heads = typed.backward_figure["layout"]["meta"].get("heads") or json.dumps(typed.backward_figure,
                                                                                ensure_ascii=False)
    assert "x̄7" in heads and not OTHER_NOTATION.search(heads)


def test_output_number_follows_the_intermediates_and_keeps_named_ones():
    cases = {"f = 1 / (1 + exp(-(w * x)))": ("w = 0.5, x = 2", "v5"),   # v1..v4, then the output
             "f = x1 * x2": ("x1 = 1, x2 = 2", "x3"),                   # no intermediate: after the inputs
             "m = max(z)\nloss = m - y @ z": ("z = [2, 1, -1], y = [0, 1, 0]", "")}  # m is named: not numbered
    for program, (inputs, want) in cases.items():
        g = explorer_model(program, inputs).shown_trace.graph
        assert output_number(g) == want, program
        out = g.node(g.output)
        assert adjoint_names(g)[g.output] == (bar(want) if want else bar(out.name))


def test_one_adjoint_label_the_lectures_name_else_the_bar():
    """Every text that names an adjoint asks :func:`adjoint_label`: the lecture's name where the graph has one
    (the output's x̄7 for a program that called it f), else the bar over the node's own name."""
    g = _slide().shown_trace.graph
    names = adjoint_names(g)
    assert adjoint_label(names, g.output, "f") == "x̄7"
    x1 = g.by_name("x1").id
    assert adjoint_label(names, x1, "anything") == "x̄1"
    assert adjoint_label(names, -1, "sigmoid") == bar("sigmoid")   # a node the graph lacks
    assert bar("") == ""


def test_the_bar_covers_a_whole_name():
    """x̄i for a letter and its index (the slides' x̄5, W̄1, h̄_2); a longer name is barred whole, every character
    under one combining overline, never over its first letter alone (l̄oss read as the adjoint of l)."""
    assert bar("x5") == "x\u03045" and bar("W1") == "W\u03041" and bar("x") == "x\u0304" and bar("h_2") == "h\u0304_2"
    assert bar("loss") == "l\u0305o\u0305s\u0305s\u0305"
    assert bar("fc1.weight").replace("\u0305", "") == "fc1.weight" and bar("fc1.weight").count("\u0305") == 10
    assert "\u0304" not in bar("loss") + bar("fc1.weight") + bar("sigmoid")
    assert bar("Linear 1") == "L\u0305i\u0305n\u0305e\u0305a\u0305r\u0305 1\u0305"   # spaces stay bare


def test_a_name_barred_whole_is_one_overline_in_a_figure():
    """In a figure a name barred whole is one overline over the name (Plotly's SVG text drew the combining marks
    as a broken line through the letters: "L̅i̅n̅e̅a̅r̅ 1̅" on the Network explorer's layer view); x̄5 stays as it is."""
    import re
    from explorer.kit.plotly_figure import _esc, barred_text
    from explorer.network_explorer.explore import explore
    assert _esc(f"= {bar('Linear 1')}·∂Linear 1/∂x + {bar('x5')} < 2") == (
        '= <span style="text-decoration:overline">Linear 1</span>·∂Linear 1/∂x + x\u03045 &lt; 2')
    ex = explore("mlp")
    ex.backward_figure("layer", 0)
    last = len(ex.backward["layer"].frames) - 1
    drawn = json.dumps(ex.backward_figure("layer", last), ensure_ascii=False)
    assert "\u0305" not in drawn
    assert {"Linear 1", "fc1.weight", "cross-entropy"} <= set(re.findall(r'overline\\">([^<]*)<', drawn))
    assert barred_text(_esc(bar("Linear 1") + " and " + bar("x5"))) == bar("Linear 1") + " and " + bar("x5")


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [str(h.proto.body) for h in at.get("html")]
    parts += [e.label for e in at.expander] + [t.value for t in at.title] + [h.value for h in at.header]
    parts += [h.value for h in at.subheader] + [i.value for i in at.info] + [w.value for w in at.warning]
    parts += [s.value for s in at.success] + [e.value for e in at.error]
    parts += [json.dumps(json.loads(p.proto.spec), ensure_ascii=False) for p in at.get("plotly_chart")]
    parts += [str(t.value) for t in at.table] + [str(d.value) for d in at.dataframe]
    parts += [str(j.proto.body) for j in at.json]
    return "\n".join(map(str, parts))


# every page, at a backward step where it has a stepper (the adjoints are written there)
WALK = [("Home.py", {})] + [(p.name, {"step": "10"} if p.name.split("_")[0] in ("3", "4", "5", "13") else {})
                            for p in sorted(PAGES.glob("[0-9]*_*.py"), key=lambda p: int(p.name.split("_")[0]))]


@pytest.mark.parametrize("name,params", WALK, ids=[w[0] for w in WALK])
def test_every_page_writes_adjoints_in_the_slides_notation(name, params):
    path = ROOT / "app" / name if name == "Home.py" else PAGES / name
    at = AppTest.from_file(str(path), default_timeout=120)
    for k, v in {"present": "1", **params}.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert text.strip(), name
    found = sorted({m.group(0) for m in OTHER_NOTATION.finditer(text)})
    assert not found, (name, found, [text[max(0, m.start() - 80):m.end() + 40]
                                     for m in OTHER_NOTATION.finditer(text)][:3])
    if name.split("_")[0] in ("3", "5"):   # the slide example at a backward step: its output's adjoint is x̄7
        assert "x̄7" in text, name


def test_order_labels_do_not_give_the_verdict_away():
    from explorer.backprop_orders import STRATEGY_LABELS
    verdicts = re.compile(r"correct|broken|wrong|right|exponential|limit", re.IGNORECASE)
    assert STRATEGY_LABELS and not [label for label in STRATEGY_LABELS.values() if verdicts.search(label)]


def test_the_weights_preset_names_its_nodes_as_slide_26_does():
    preset = next(p for p in PRESETS if "weights as inputs" in p.label)
    m = explorer_model(preset.program, preset.inputs)
    g = m.shown_trace.graph
    ops = [n.name for n in g.nodes if n.kind == "op"]
    assert ops == ["x3", "x4", "x5", "x6", "x7"]
    # w̄1 = x̄3·x1 and w̄2 = x̄4·x2, each side from the engine
    adj = m.shown_trace.adjoints
    assert m.trace.grads["w1"] == pytest.approx(adj[g.by_name("x3").id] * 3.0)
    assert m.trace.grads["w2"] == pytest.approx(adj[g.by_name("x4").id] * 0.5)


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour, to compare colours as the eye does."""
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in (r, g, b)]
    x = (lin[0] * 0.4124 + lin[1] * 0.3576 + lin[2] * 0.1805) / 0.95047
    y = lin[0] * 0.2126 + lin[1] * 0.7152 + lin[2] * 0.0722
    z = (lin[0] * 0.0193 + lin[1] * 0.1192 + lin[2] * 0.9505) / 1.08883
    f = [c ** (1 / 3) if c > 0.008856 else 7.787 * c + 16 / 116 for c in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_the_backward_legends_colours_are_told_apart_from_the_back_row():
    """The backward graph's legend: sent (the adjoints' colour), not sent yet, this step; and the node being
    processed. Each pair at least 50 apart in CIELAB (ΔE 2.3 is just noticeable; the old 'this step' orange was
    32.5 from the adjoints' burnt orange, and read as one red on a projector)."""
    from explorer.kit.backward_view import legend_html
    from explorer.kit.plotly_figure import ADJOINT, HOT, PENDING, STATE_FILL
    legend = legend_html()
    assert all(c in legend for c in (ADJOINT, HOT, PENDING))
    colours = {"sent": ADJOINT, "not sent yet": PENDING, "this step": HOT, "active node": STATE_FILL["active"]}
    for a, ca in colours.items():
        for b, cb in colours.items():
            if a < b:
                d = sum((p - q) ** 2 for p, q in zip(_lab(ca), _lab(cb))) ** 0.5
                assert d >= 50, f"{a} {ca} and {b} {cb} are only ΔE {d:.1f} apart"


def _heads(fig: dict) -> list[str]:
    """The first line of every node of a graph figure."""
    return next(tr for tr in fig["data"] if tr.get("name") == "node")["text"]


def test_the_outputs_adjoint_is_x7_f_bar_in_every_backward_caption_and_graph():
    """Your HW2 code's slide example numbers its output itself (x7 = x1 + x6): its step 7 said "take x7: x̄7 = 1"
    where the Expression explorer and Backprop orders say "x̄7 (= f̄)": every page's seed caption says it; the
    backward graphs' output node reads x̄7 on every page (with the note it did not fit a 1366 projector's column)."""
    from explorer.backprop_orders import orders_model
    from explorer.student_code import graphs as SG
    named = explorer_model(PRESETS[1].program, PRESETS[1].inputs)   # x3 = ..., x7 = x1 + x6
    for m in (named, _slide()):
        seed = next(f.caption for f in m.frameset.frames if f.phase == "backward")
        assert seed.startswith("take x7: x̄7 (= f̄) = 1"), seed
        assert "x̄7" in _heads(m.backward_figure)
    orders = orders_model(PRESETS[0].program, PRESETS[0].inputs, ("topological", "bfs_first_touch"))
    for view in orders.views.values():
        assert next(f.caption for f in view.frameset.frames if f.phase == "backward").startswith(
            "take x7: x̄7 (= f̄) = 1")
        assert "x̄7" in _heads(view.backward_figure)
    assert "x7 = x1 + x6" in SG.SLIDE.program   # Your HW2 code's: tests/test_student_code.py reads its captions
