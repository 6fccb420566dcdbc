"""The "Exercises" page: answers computed by the engine (explorer.exercises), answer parsing
(explorer.lecture_kit), deep links into the other pages, and the page headless (AppTest)."""
from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer import exercises as E
from explorer.explain.numbers import nested, num
from explorer.lecture_kit import AnswerError, md_escape, parse_answer

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "app" / "pages"
PAGE = str(PAGES / "12_Exercises.py")
E_ = math.e

# The lecture notes' answers (LECTURE.md, "The notes' exercises, with their answers"), with the
# tolerance the notes' own rounding allows. The engine's numbers must land on them.
LECTURE = {
    "gradient_step": {"slope": -6.0, "x1": 0.6},                          # 1.
    "fan_out": {"dx1": 4 * E_, "dx2": E_},                                # 2. 4e ≈ 10.873, e ≈ 2.718
    "cube": {"dx": 12.0},                                                 # 3.
    "vjp": {"xbar": [-2.0, -2.0]},                                        # 4.
    "passes": {"f_fwd": 1000, "f_rev": 1, "g_fwd": 1, "g_rev": 1000},     # 5.
    "bfs": {"dx1": 1.0, "rate": 94.0},                                    # 6. and 189 of 200 graphs (94%)
    "best_h": {"h64": 5e-6, "h32": 4e-3},                                 # 7. "about 5e-6", "about 4e-3"
    "broadcast": {"bbar": [9.0, 12.0], "xbar": [[1, 2], [3, 4], [5, 6]]},  # 8.
    "memory": {"mb": 159.0},                                              # 9. ≈ 159 MB (152 MiB)
    "static_or_dynamic": {"a": "dynamic", "b": "static (or compiled / exported)"},  # 10.
    # 11. the notes ask it of their own model (68 built, 54 evaluated, 14 skipped: the loss's own nodes and 12
    # gradient nodes for placeholders and constants); on this engine's logistic regression the loss's own two
    # nodes (BCE, mean) are all that a step skips: gradients() builds nothing for placeholders
    "static_training": {"built": 26, "evaluated": 25, "skipped": 1, "why": E.TRAINING_WHY_ANSWER},
    "embedding": {"row3": [6.0, 8.0], "row1": [3.0, 4.0], "others": 0},   # 12. g0 + g2, g1, 0
    "paths": {"paths": 2 ** 10 - 1, "topo": 10},                          # path recursion: 2^d − 1 VJP calls
    "static_counts": {"built": 6, "run_h": 6, "run_xw": 3},               # the notes' h = relu(x·W + b)
}
SLACK = {("bfs", "rate"): 1.5, ("best_h", "h64"): 0.05, ("best_h", "h32"): 0.05, ("memory", "mb"): 0.5}


@pytest.fixture(scope="module")
def built():
    return {key: E.build(key) for key in E.BUILDERS}


def test_every_exercise_of_the_notes_is_posed(built):
    assert list(LECTURE) == list(E.BUILDERS)
    assert [built[k].number for k in E.BUILDERS] == list(range(1, 15))


@pytest.mark.parametrize("key", list(LECTURE))
def test_the_engines_answers_are_the_lectures(built, key):
    ex = built[key]
    assert [p.key for p in ex.parts] == list(LECTURE[key])
    for part in ex.parts:
        want = LECTURE[key][part.key]
        if part.choices:
            assert part.answer == want
            continue
        slack = SLACK.get((key, part.key))
        if slack is None:
            np.testing.assert_allclose(part.answer, want, rtol=1e-3, atol=1e-12, err_msg=f"{key}.{part.key}")
        elif part.tolerance.factor is None:
            assert abs(part.answer - want) <= slack, (key, part.answer)
        else:
            assert abs(math.log10(part.answer / want)) < 0.1 + slack, (key, part.answer)
        # the lecture's number is accepted by the check, and so is the engine's own, as printed
        assert E.check(part, nested(want)).correct, (key, part.key)
        printed = part.shown()[:-len(part.unit)].strip() if part.unit else part.shown()
        assert E.check(part, printed).correct, (key, part.key)
        assert ex.steps and all(isinstance(s, str) and s for s in ex.steps)


def test_titles_name_the_topic_not_the_answer(built):
    for key, ex in built.items():
        title = E.TITLES[key]
        for part in ex.parts:
            if not part.choices:
                assert nested(part.answer) not in title.split(" · ", 1)[1], (key, title)
    assert "4e" not in E.TITLES["fan_out"]
    assert "4e" not in built["fan_out"].question and "4 e" not in built["fan_out"].question   # the answer, 4e


def test_the_picker_names_each_exercise_as_its_heading_does(built):
    """The picker said "1 · One gradient step" above the heading "Exercise 1 · One gradient-descent step"."""
    assert set(E.TITLES) == set(built)
    for key, ex in built.items():
        assert E.TITLES[key] == f"{ex.number} · {ex.title}", key


def test_exercise_11_skips_exactly_the_loss_nodes(built):
    steps = " ".join(built["static_training"].steps)
    assert "(binary_cross_entropy), the loss's own node:" in steps and "68 built, 54 evaluated" in steps
    # the notes' loss is two nodes, ours one: the steps say whose is whose, and nothing calls one node "all of them"
    assert "its loss's own two nodes (scale by 1/n, negate), where this engine's loss is one node" in steps
    assert "all of them" not in steps and "as here" not in steps


def test_answers_are_checked_with_a_tolerance_and_near_misses_explained(built):
    dx1 = built["fan_out"].parts[0]
    for ok in ("4e", "4*e", "10.873", "10.8731", " 4 e "):
        assert E.check(dx1, ok).correct, ok
    for wrong in ("10.8", "3e", "e"):
        assert not E.check(dx1, wrong).correct
    assert "second user" in E.check(dx1, "3e").message
    xbar = built["vjp"].parts[0]
    assert E.check(xbar, "[−2, −2]").correct and E.check(xbar, "-2, -2").correct
    assert "transpose" in E.check(xbar, "[-1, -1]").message
    assert "2 numbers" in E.check(xbar, "-2").message
    mb = built["memory"].parts[0]
    assert E.check(mb, "159").correct and E.check(mb, "160").correct and not E.check(mb, "170").correct
    assert "MiB" in E.check(mb, "152").message
    h = built["best_h"].parts[0]
    assert E.check(h, "1e-5").correct and E.check(h, "1e-6").correct and not E.check(h, "1e-8").correct
    assert not E.check(h, "-5e-6").correct
    assert "Could not read" in E.check(h, "os.system('x')").message
    choice = built["static_or_dynamic"].parts[0]
    assert E.check(choice, "dynamic").correct and not E.check(choice, "static (or compiled / exported)").correct


@pytest.mark.parametrize("text,value", [("0.6", 0.6), ("-6", -6.0), ("−6", -6.0), ("4e", 4 * E_), ("2pi", 2 * math.pi),
                                        ("1e-5", 1e-5), ("1.2E5", 1.2e5), ("9, 12", [9.0, 12.0]),
                                        ("[[1, 2], [3, 4]]", [[1.0, 2.0], [3.0, 4.0]]), ("2^3", 8.0), ("3·e", 3 * E_),
                                        ("(1, 2)", [1.0, 2.0])])
def test_parse_answer_reads_numbers_and_lists(text, value):
    np.testing.assert_allclose(parse_answer(text), value, rtol=1e-15)


@pytest.mark.parametrize("text", ["", "x", "__import__('os')", "os.system('ls')", "'6'", "[]", "1/0", "10**1000",
                                  "2**99999", "1e999", "True", "[1, 'a']", "a" * 500, "lambda: 1", "f(2)", "{1: 2}"])
def test_parse_answer_refuses_everything_else(text):
    with pytest.raises(AnswerError):
        parse_answer(text)


def test_md_escape_shows_text_as_typed():
    out = md_escape("[x](javascript:alert(1)) **b** <i>$x$")
    for ch in "[]()*<>$":  # every one is escaped
        assert out.count("\\" + ch) == "[x](javascript:alert(1)) **b** <i>$x$".count(ch), ch


def test_unit_roundoff_is_measured_by_the_engine():
    assert E.unit_roundoff("float64") == 2.0 ** -53 and E.unit_roundoff("float32") == 2.0 ** -24


def test_mlp_buffer_count_follows_the_notes_rule():
    for depth in (1, 3, 10):
        per_notes, distinct = E.mlp_buffers_per_notes(depth)
        assert per_notes == 2 * depth - 1 and distinct == depth


def test_links_point_at_pages_that_exist(built):
    pages = {p.name.split("_", 1)[1][:-3] for p in PAGES.glob("[0-9]*_*.py")}
    for ex in built.values():
        assert ex.link and ex.link_label
        assert urlsplit(ex.link).path in pages, ex.link


def _run_link(link: str) -> AppTest:
    parts = urlsplit(link)
    target = next(PAGES.glob(f"[0-9]*_{parts.path}.py"))
    at = AppTest.from_file(str(target), default_timeout=120)
    at.query_params.update(dict(parse_qsl(parts.query)))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    problems = [w.value for w in at.warning if "link parameter" in w.value]
    assert not problems, problems  # every link parameter was understood
    return at


def test_the_fan_out_link_opens_the_explorer_where_x1_is_complete(built):
    at = _run_link(built["fan_out"].link)
    text = "\n".join(m.value for m in at.markdown)
    assert at.session_state["explorer_step"] == int(dict(parse_qsl(urlsplit(built["fan_out"].link).query))["step"])
    assert "x1" in text and "10.87" in text


def test_the_bfs_link_opens_backprop_orders_at_the_lost_contribution(built):
    at = _run_link(built["bfs"].link)
    assert at.session_state["orders_orders"] == ["topological", "bfs_first_touch"]
    assert at.session_state["orders_step"] > 0
    # the page's verdict line for BFS names the lost contribution at that step (Markdown escapes removed)
    shown = "\n".join(m.value for m in at.markdown).replace("\\", "")
    step = at.session_state["orders_step"]
    assert f"✗ step {step}: LOST: the contribution" in shown


def test_the_embedding_and_learning_links_carry_their_state(built):
    at = _run_link(built["embedding"].link)
    assert at.session_state["tensors_ids"] == "3, 1, 3"
    at = _run_link(built["vjp"].link)
    assert "ybar" in at.session_state["explorer_at"]


# --- the page ----------------------------------------------------------------------------------------------

def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_page_checks_answers_and_reveals_steps():
    at = _ok(AppTest.from_file(PAGE, default_timeout=120).run())
    assert "Exercise 1" in at.markdown[0].value
    at.text_input(key="exercises_ans_gradient_step_slope").set_value("-6")
    at.text_input(key="exercises_ans_gradient_step_x1").set_value("<b>0.5</b>")
    next(b for b in at.button if b.label == "Check my answers").click().run()
    _ok(at)
    assert "correct" in at.success[0].value and "could not read" in at.error[0].value
    assert "<b>" not in at.error[0].value  # the typed text is never echoed raw
    at.toggle(key="exercises_reveal").set_value(True).run()
    _ok(at)
    md = "\n".join(m.value for m in at.markdown)
    assert "engine.grad" in md and at.query_params["reveal"] == "1"
    assert at.get("link_button")[0].proto.url.startswith("Learning_problem")
    # named apart from the lecture's Previous / Next page links in the corner of a projector
    assert not any(b.label in ("Previous", "Next") for b in at.button)
    next(b for b in at.button if b.label == "Next exercise").click().run()
    _ok(at)
    assert at.query_params["ex"] == "fan_out" and at.session_state["exercises_reveal"] is False


def test_page_deep_link_opens_an_exercise_revealed():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"ex": "memory", "reveal": "1", "present": "1"})
    _ok(at.run())
    md = "\n".join(m.value for m in at.markdown)
    assert "Exercise 9" in md and "159.4 MB" in md and "2·10 − 1" in md


def test_feedback_reads_as_a_sentence_after_the_answers_name():
    """'f′(x0) = Not quite.' read as if the answer were the words 'Not quite': the verdict follows the name."""
    ex = E.build("gradient_step")
    slope = ex.parts[0]
    wrong = E.feedback_line(slope, E.check(slope, "12345"))
    right = E.feedback_line(slope, E.check(slope, str(slope.answer)))
    assert wrong.startswith("f′(x0): not quite") and "= Not" not in wrong
    assert right.startswith("f′(x0): correct: the engine gets ")
    assert E.feedback_line(ex.parts[1], E.Verdict(False, "No answer yet.")) == "x1: no answer yet."


def test_the_exercise_buttons_stop_at_the_ends():
    """No wrap-around: "Previous exercise" is off at the first exercise and "Next exercise" at the last (a
    clicker's PageDown then goes on to the next page instead of back to exercise 1)."""
    keys = list(E.BUILDERS)
    at = _ok(AppTest.from_file(PAGE, default_timeout=120).run())
    buttons = {b.label: b for b in at.button}
    assert buttons["Previous exercise"].disabled and not buttons["Next exercise"].disabled
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"ex": keys[-1]})
    at = _ok(at.run())
    buttons = {b.label: b for b in at.button}
    assert buttons["Next exercise"].disabled and not buttons["Previous exercise"].disabled
    buttons["Previous exercise"].click().run()
    assert at.query_params["ex"] == keys[-2]
    # the same click's callback run a second time (Streamlit does when the click's run is interrupted): the first
    # run's effect is in the session, then the callback drawn with the buttons of keys[-1] runs again
    buttons = {b.label: b for b in at.button}          # drawn at keys[-2]
    at.session_state["exercises_ex"] = keys[-3]
    buttons["Previous exercise"].click().run()
    assert at.query_params["ex"] == keys[-3], "one exercise back, not two"


def test_an_answer_box_names_its_unit_once():
    """'wrong on (%) = (%)' on the projector: the unit is added only where the prompt does not name it."""
    rate = next(p for p in E.build("bfs").parts if p.key == "rate")
    assert rate.label().count("(%)") == 1
    mb = E.build("memory").parts[0]
    assert mb.label() == f"{mb.prompt} (MB)"
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"ex": "bfs", "present": "1"})
    _ok(at.run())
    assert [t.label.count("(%)") for t in at.text_input if "wrong on" in t.label] == [1]


def test_fan_out_sums_are_written_symbolic_then_numeric(built):
    """The slides' notation for a fan-out, as the graphs write it (one function): the adjoint as the sum of
    (consumer's adjoint × local derivative), then those products in numbers, then the total (LECTURE.md:
    1 + 367.04 = 368.04 on the slide example, 367.04 = 244.69·1.5)."""
    from explorer import explain as ex
    from explorer.kit.labels import fan_out_sum as graphs_sum
    slide = ex.record_execution(E.SLIDE_PROGRAM, E.SLIDE_INPUTS)
    x3bar = next(e.value for e in slide.backward if e.kind == "visit" and e.node == slide.graph.by_name("x3").id)
    assert E.fan_out_sum(slide, "x1") == (f"x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = {num(x3bar)}·1.5 + 1 = "
                                          f"**{num(slide.grads['x1'])}**") == \
        "x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = **368.04**"
    assert E.fan_out_sum(slide, "x1").replace("**", "") == graphs_sum(
        "x1", [("x3", x3bar, 1.5 * x3bar), ("x7", 1.0, 1.0)], 2, 2, slide.grads["x1"])
    assert E.fan_out_sum(slide, "x2") == "x̄2 = x̄4·∂x4/∂x2 = 244.69·2 = **489.38**"
    # exercise 6: what breadth-first loses, against the slides' sum (not bold: the answer asked for there is 1)
    bfs = "\n".join(built["bfs"].steps)
    assert ("x̄1 = x̄3·∂x3/∂x1 + x̄7·∂x7/∂x1 = 244.69·1.5 + 1 = 368.04 (= 1.5·e^5.5 + 1), the correct ∂f/∂x1"
            in bfs)
    fan = "\n".join(built["fan_out"].steps)
    assert f"x̄1 = x̄3·∂x3/∂x1 + x̄4·∂x4/∂x1 = {num(E_)} + 3·{num(E_)} = **{num(4 * E_)}**" in fan
    cube = built["cube"]
    # the notes' naming (v2 = v1·v1, v3 = v2·v1); the graphs' sum (v2's two contributions in one term), then the
    # notes' 4 + 4 + 4 = 12
    assert "v2 = v1·v1, v3 = v2·v1" in cube.question
    assert "v̄1 = v̄2·∂v2/∂v1 + v̄3·∂v3/∂v1 = 2·4 + 4 = **12**" in "\n".join(cube.steps)
    assert "4 + 4 + 4 = 12" in "\n".join(cube.steps)
    assert not any("= mul(…)" in s or "from x3 = add" in s for s in cube.steps + built["fan_out"].steps)


def test_the_best_h_steps_tell_the_two_decades_errors_apart(built):
    """Exercise 7 compares the error model at the two decades around the best h: float32's read "1.5e-02 and
    1.5e-02" on the projector, as if equal; they are printed with as many digits as tell them apart."""
    import re
    notes = built["best_h"].steps[-1]
    pairs = re.findall(r"the model's error is (\S+) and (\S+) \(", notes)
    assert len(pairs) == 2 and all(a != b for a, b in pairs), pairs


def test_a_choice_question_does_not_point_at_its_answer(built):
    """A multiple-choice part on a projector: the right reason was listed first and was the only one worded with
    care (92 characters against 55): the class could pick it without reading. Where a part has choices of its own
    (more than two), the answer is not the first, and no choice is much longer than the others."""
    parts = [(key, p) for key, ex_ in built.items() for p in ex_.parts if len(p.choices) > 2]
    assert parts, "exercise 11's reason is a choice question"
    for key, part in parts:
        assert part.answer in part.choices and part.choices[0] != part.answer, (key, part.choices)
        lengths = [len(c) for c in part.choices]
        assert max(lengths) <= 1.3 * min(lengths), (key, lengths)


def test_the_unrolled_loop_counts_sit_beside_the_notes(built):
    """Exercise 10 prints the engine's op counts; the notes' 10 / 19 / 37 (LECTURE.md) are named beside them."""
    from explorer.static_vs_dynamic import NOTES_RNN_EAGER
    assert NOTES_RNN_EAGER == (10, 19, 37)
    assert "the notes count 10, 19, 37" in built["static_or_dynamic"].steps[0]
