"""A student's HW2 ``topological_sort`` / ``backpropagate`` run in the sandbox and diagnosed (explorer.student_code).

The solutions are the project's own: the samples page 13 offers (explorer/student_code/samples/: one correct,
the others broken in the ways the verdicts must name) and test-only ones (tests/student_solutions/: an infinite
loop, one that raises, one that does not parse, the untouched starter). Each runs for real in the child process,
on real engine graphs.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.student_code import samples as S
from explorer.student_code import view as V
from explorer.student_code.diagnose import diagnose, order_problems, reference, student_adjoints
from explorer.student_code.graphs import DOUBLING_DEPTHS, LECTURE_GRAPHS, N_RANDOM, all_keys, build, spec_for
from explorer.student_code.report import report_for
from explorer.student_code.runner import ROOT, run_student_code

SOLUTIONS = Path(__file__).resolve().parent / "student_solutions"   # the test-only ones


def solution(name: str) -> Path:
    """A solution's file: a bundled sample (``correct.py``) or a test-only one (``raises.py``)."""
    stem = name.removesuffix(".py")
    return S.sample(stem).path if stem in S.BY_KEY else SOLUTIONS / name
N_RANDOM_HERE = 30
KEYS = ([s.key for s in LECTURE_GRAPHS] + [f"random-{i}" for i in range(N_RANDOM_HERE)] + ["deep"] +
        [f"doubling-{d}" for d in DOUBLING_DEPTHS])
_REPORTS: dict[str, object] = {}


def report(name: str, keys=None):
    """The report of solution ``name`` (run once per test session)."""
    key = (name, tuple(keys or KEYS))
    if key not in _REPORTS:
        _REPORTS[key] = report_for(str(solution(name)), keys=list(keys or KEYS))
    return _REPORTS[key]


def lecture(rep, key: str):
    return rep.verdicts[key]


# --- the solutions, graph by graph ----------------------------------------------------------------


def test_a_correct_solution_is_right_on_every_graph_the_explorer_builds():
    rep = report("correct.py", all_keys())
    assert rep.loaded, rep.load_error
    assert len(rep.verdicts) == len(LECTURE_GRAPHS) + N_RANDOM + 1 + len(DOUBLING_DEPTHS)
    wrong = {k: v.headline for k, v in rep.verdicts.items() if v.kind != "right"}
    assert not wrong, wrong
    assert rep.verdicts["deep"].vjp_calls == 3000
    assert not rep.scaling.exponential and rep.scaling.calls == list(DOUBLING_DEPTHS)
    assert rep.headline().startswith("right on every graph")


def test_breadth_first_first_touch_loses_x1s_second_contribution():
    rep = report("bfs_first_touch.py")
    v = lecture(rep, "slide")
    assert v.kind == "wrong_gradient" and v.node_name == "x1", v.headline
    assert v.reasons[0] == "lost" and "not_topological" in v.reasons
    assert "x3 sent 367.04 to x1 after x1 was taken" in v.details[0]
    assert "1 " in v.headline and "368" in v.headline        # ∂f/∂x1 = 1 where the engine has 368.04
    assert lecture(rep, "cube").right and lecture(rep, "diamond").right   # no node reached at two depths
    wrong = sum(1 for v in rep.random() if v.kind == "wrong_gradient")
    assert wrong >= 0.8 * N_RANDOM_HERE, wrong             # the lecture: wrong on most random graphs
    assert rep.verdicts["deep"].right                        # no recursion: fine on the deep chain


def test_never_accumulating_leaves_names_the_leaf():
    rep = report("no_leaf_accumulate.py")
    for key in ("slide", "cube", "constant", "diamond", "affine", "deep"):
        v = rep.verdicts[key]
        assert v.kind == "wrong_gradient" and v.reasons[0] == "leaf_never_accumulated", (key, v.headline)
        assert rep.references[key].built.kinds[v.node] == "input"
    assert rep.verdicts["slide"].node_name == "x1"           # the engine's order reaches x1 before x2
    assert "leaf x1 never accumulated" in rep.verdicts["slide"].details[0]


def test_path_recursion_is_right_but_exponential_and_too_deep_for_the_chain():
    rep = report("path_recursion.py")
    for key in ("slide", "cube", "constant", "affine"):
        assert rep.verdicts[key].right, rep.verdicts[key].headline
    d = rep.verdicts["diamond"]
    assert d.kind == "warning" and "visited_twice" in d.reasons and d.vjp_calls > d.engine_vjp_calls
    deep = rep.verdicts["deep"]
    assert deep.kind == "recursion" and 900 < deep.error["depth"] < 1000, deep.error
    assert deep.error["file"].endswith("path_recursion.py") and deep.error["function"] == "backpropagate"
    assert rep.scaling.exponential
    assert rep.scaling.calls == [2 ** d - 1 for d in DOUBLING_DEPTHS]
    assert "exponential work" in rep.headline()


def test_path_recursion_is_stopped_at_the_work_limit():
    run = run_student_code(solution("path_recursion.py"), ["doubling-10"], max_vjp_calls=100)
    v = diagnose("doubling-10", run.graphs["doubling-10"], reference("doubling-10"))
    assert v.kind == "work_limit" and "exponential work" in v.headline and "100" in v.headline


def test_a_non_topological_order_names_the_violated_edge():
    rep = report("non_topological.py")
    v = rep.verdicts["slide"]
    assert v.kind == "wrong_gradient" and v.node_name == "x1"
    names = rep.references["slide"].names
    assert v.violated_edge is not None and [names[n] for n in v.violated_edge] == ["x1", "x3"]
    assert any("x1 is listed before x3, which uses it" in d for d in v.details)


def test_an_infinite_loop_is_stopped_at_the_time_limit_and_the_rest_is_skipped():
    rep = report_for(str(SOLUTIONS / "infinite_loop.py"), keys=["slide", "cube", "deep"], time_limit_s=1.0)
    v = rep.verdicts["slide"]
    assert v.kind == "time_limit" and "still running after 1 s" in v.headline
    assert v.error["file"].endswith("infinite_loop.py") and v.error["line"] in range(5, 14)
    assert rep.verdicts["cube"].kind == "not_run" and "time limit" in rep.verdicts["cube"].headline


def test_an_exception_is_reported_with_the_students_file_and_line():
    rep = report("raises.py", ["slide", "cube"])
    v = rep.verdicts["slide"]
    assert v.kind == "exception" and v.error["type"] == "NameError"
    assert v.error["file"].endswith("raises.py") and v.error["line"] == 25
    assert "node.chain_rule(derivative)" in v.headline
    assert str(ROOT) not in v.headline                        # no absolute path of this machine
    assert "(on every graph)" in rep.headline()


def test_a_file_that_does_not_parse_gives_its_line():
    rep = report_for(str(SOLUTIONS / "does_not_parse.py"), keys=["slide"])
    assert not rep.loaded and rep.load_error["kind"] == "syntax_error" and rep.load_error["line"] == 4
    assert rep.headline().startswith("syntax error in student_solutions/does_not_parse.py line 4")


def test_the_untouched_starter_in_hw2s_layout_is_not_implemented_yet():
    # a folder with minitorch/autodiff.py: loaded as minitorch.autodiff (its relative import works) without
    # running minitorch/__init__.py (which raises here, as HW2's would fail to import CUDA kernels)
    rep = report_for(str(SOLUTIONS / "hw2_starter"), keys=["slide", "deep"])
    assert rep.loaded, rep.load_error
    assert rep.file.endswith("minitorch/autodiff.py")
    assert rep.verdicts["slide"].kind == "not_implemented"
    assert rep.verdicts["slide"].error["file"] == "minitorch/autodiff.py"
    assert rep.headline().startswith("not implemented yet")


def test_visiting_constants_is_flagged():
    rep = report("visits_constants.py", ["slide", "constant"])
    v = rep.verdicts["constant"]
    assert v.kind == "warning" and "constant_visited" in v.reasons
    assert "constant" in v.headline


def test_prints_and_memory_hogs_stay_in_the_child(tmp_path):
    src = (solution("correct.py")).read_text()
    noisy = tmp_path / "noisy.py"
    noisy.write_text(src.replace("def backpropagate(variable, deriv):",
                                 "def backpropagate(variable, deriv):\n    print('{\"type\": \"graph\"}')"))
    rep = report_for(str(noisy), keys=["slide"])
    assert rep.verdicts["slide"].right
    hog = tmp_path / "hog.py"
    hog.write_text("def topological_sort(variable):\n    return [bytearray(8 << 30)]\n\n"
                   "def backpropagate(variable, deriv):\n    return [bytearray(8 << 30)]\n")
    rep = report_for(str(hog), keys=["slide", "cube"])
    assert rep.verdicts["slide"].kind == "memory", rep.verdicts["slide"].headline
    assert rep.verdicts["cube"].kind == "not_run"
    assert not [m for m in sys.modules if m.startswith("student_")]   # nothing of theirs in this process


def test_a_missing_path_is_a_clear_message(tmp_path):
    rep = report_for(str(tmp_path / "nowhere"), keys=["slide"])
    assert not rep.loaded and "no autodiff.py" in rep.headline()


def test_the_report_command():
    out = subprocess.run([sys.executable, "-m", "explorer.student_code", str(solution("bfs_first_touch.py")),
                          "--random", "5"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 1, out.stderr
    assert "✘ Slide example" in out.stdout and "first wrong node x1" in out.stdout
    assert "5 random graphs" in out.stdout and "lost contribution" in out.stdout


# --- the pieces, without a child ----------------------------------------------------------------


def test_the_child_proxies_record_every_protocol_call():
    from explorer.student_code.child import Recording
    built = build(spec_for("cube"))
    rec = Recording(built, 100)
    out = rec.proxy(built.output)
    assert out.unique_id == built.node_of[built.output.unique_id] and rec.proxy(built.output) is out
    from engine import tensor
    pairs = out.chain_rule(tensor(1.0))
    (p1, d1), (p2, d2) = pairs
    assert p1.is_leaf() is False and p2.is_leaf() is True and d1.item() == 2.0 and d2.item() == 4.0
    p2.accumulate_derivative(d2)
    names = built.names
    assert [(k, names[n], names.get(p), v) for k, n, p, v in rec.events] == [
        ("vjp", "f", None, 1.0), ("send", "f", names[p1.unique_id], 2.0), ("send", "f", "x", 4.0),
        ("acc", "x", None, 4.0)]
    with pytest.raises(AttributeError, match="HW2's protocol only"):
        out.history


def test_lost_contributions_and_adjoints_from_events():
    ref = reference("slide")
    ids = {n: i for i, n in ref.names.items()}
    x1, x3, x6, x7 = ids["x1"], ids["x3"], ids["x6"], ids["x7"]
    events = [["vjp", x7, None, 1.0], ["send", x7, x1, 1.0], ["send", x7, x6, 1.0], ["acc", x1, None, 1.0],
              ["vjp", x3, None, 2.0], ["send", x3, x1, 3.0]]
    got = student_adjoints(events, ref.built.kinds)
    assert got[x1] == 1.0 and got[x7] == 1.0 and got[x3] == 2.0
    raw = {"sort": {"order": None, "error": None, "returned": "list"},
           "backprop": {"events": events, "n_events": 6, "vjp_calls": 2, "acc_calls": 1, "error": None}}
    v = diagnose("slide", raw, ref)
    assert v.kind == "wrong_gradient" and v.node_name == "x6"    # never visited: first in the engine's order
    assert "never_visited" in v.reasons and "lost" in v.reasons


def test_order_problems():
    ref = reference("slide")
    ids = {n: i for i, n in ref.names.items()}
    ok, _, edge = order_problems(ref.order, ref)
    assert ok == [] and edge is None
    bad = [ids[n] for n in ("x7", "x1", "x6", "x5", "x3", "x4", "x2", "1.5")]
    codes, texts, edge = order_problems(bad, ref)
    assert edge == (ids["x1"], ids["x3"]) and "not_topological" in codes and "constant_visited" in codes
    codes, _, _ = order_problems(bad[:3], ref)
    assert "missing_from_order" in codes


# --- the page's model ---------------------------------------------------------------------------


def test_opt_in_is_off_by_default_and_refused_on_a_class_server(tmp_path):
    f = tmp_path / "autodiff.py"
    f.write_text("")
    assert not V.opt_in([], {}).enabled and "off" in V.opt_in([], {}).refused
    on = V.opt_in(["--student-code", str(f)], {})
    assert on.enabled and on.path == str(f.resolve())
    assert V.opt_in([f"--student-code={f}"], {}).enabled
    server = V.opt_in(["--student-code", str(f)], {"AUTODIFF_CLASS_SERVER": "1"})
    assert not server.enabled and "class server" in server.refused
    assert "does not exist" in V.opt_in(["--student-code", str(tmp_path / "nope.py")], {}).refused
    off = V.opt_in([], {})   # the page shows the reason in words and the start commands as code blocks
    assert "off" in off.reason and V.START_COMMANDS[0] not in off.reason and V.START_COMMANDS[0] in off.refused
    assert on.reason is None


def test_the_first_wrong_node_is_marked_beside_the_engines_order():
    rep = report("bfs_first_touch.py")
    gv = V.graph_view(rep, "slide")
    assert gv.engine.n_frames == gv.student.n_frames
    names = rep.references["slide"].names
    x1 = next(i for i, n in names.items() if n == "x1")
    i = gv.student.frameset.node_ids.index(x1)
    k = gv.wrong_frame
    assert k is not None and gv.student.frameset.frames[k].node_state[i] == "lost"
    assert gv.student.frameset.frames[k - 1].node_state[i] != "lost"
    assert gv.student.frameset.frames[-1].node_adjoint[i].endswith("✘")
    assert all(f.node_state[i] != "lost" for f in gv.engine.frameset.frames)
    assert gv.wrong_text.startswith("Your first wrong node: x1")
    lost = [f for f in gv.student.frameset.frames if "LOST" in f.caption]
    assert lost and lost[0].index > k          # x1 passed its adjoint on first; x3's contribution came later
    assert "random-" in V.graph_choices(rep)[-1]


def test_a_correct_solution_animates_like_the_engine():
    rep = report("correct.py", all_keys())
    gv = V.graph_view(rep, "slide")
    assert gv.wrong_frame is None
    assert gv.student.trace.grads == pytest.approx(gv.engine.trace.grads)
    assert [f.node_adjoint for f in gv.student.frameset.frames[-1:]] == \
        [f.node_adjoint for f in gv.engine.frameset.frames[-1:]]
    rows = V.summary_rows(rep)
    assert rows[0]["verdict"].startswith("✔ right") and any("200 random graphs" == r["graph"] for r in rows)
    series = V.scaling_series(rep)
    assert series[V.STUDENT_LABEL] == series["The engine"]
    assert np.all(np.asarray(series[V.STUDENT_LABEL][1]) == np.asarray(DOUBLING_DEPTHS))


# --- the samples page 13 demonstrates without the opt-in ------------------------------------------------

# the key sets the tests above already ran each sample on (reused: no sample runs twice more)
SAMPLE_RUNS = {"correct": all_keys(), "visits_constants": ["slide", "constant"]}


def test_the_samples_ship_in_the_package_and_are_listed_in_the_pickers_order():
    import setuptools
    assert V.sample_choices() == [s.key for s in S.SAMPLES] and V.sample_choices()[0] == S.DEFAULT
    assert len(set(V.sample_choices())) == len(S.SAMPLES) == 6
    for s in S.SAMPLES:
        assert s.path.is_file() and s.path.parent == Path(S.__file__).parent
        assert not (SOLUTIONS / s.path.name).exists()          # one copy: the package's
        assert V.sample_label(s.key) == f"Sample: {s.label}" != V.STUDENT_LABEL
        assert "def topological_sort" in S.source(s.key) and '"""' not in S.source(s.key)[:10]
    assert "explorer.student_code.samples" in setuptools.find_packages(ROOT, include=["explorer*"])
    assert V.wrong_prefix(V.STUDENT_LABEL).startswith("Your") and V.wrong_prefix("Sample: x").startswith("The sample")
    with pytest.raises(KeyError):
        S.sample("../correct")


@pytest.mark.parametrize("key", [s.key for s in S.SAMPLES])
def test_each_sample_gets_the_verdicts_its_name_promises(key):
    rep = report(f"{key}.py", SAMPLE_RUNS.get(key))
    label = V.sample_label(key)
    graph = "constant" if key == "visits_constants" else "slide"
    gv = V.graph_view(rep, graph, label=label)
    assert gv.student.label == label and gv.student.trace.strategy == label and gv.engine.label == V.ENGINE_LABEL
    slide = rep.verdicts["slide"]
    if key == "correct":
        assert all(v.right for v in rep.verdicts.values()) and gv.wrong_frame is None
    elif key == "path_recursion":
        assert slide.right and gv.wrong_frame is None and rep.scaling.exponential
        assert V.scaling_series(rep, label)[label][1] != V.scaling_series(rep, label)["The engine"][1]
    elif key == "visits_constants":
        assert gv.verdict.kind == "warning" and "constant_visited" in gv.verdict.reasons
    else:   # bfs_first_touch, non_topological, no_leaf_accumulate: x1 is the first wrong node, marked
        assert slide.kind == "wrong_gradient" and slide.node_name == "x1"
        assert gv.wrong_frame is not None and gv.wrong_text.startswith("The sample's first wrong node: x1")
        assert gv.student.frameset.frames[gv.wrong_frame].warning == gv.wrong_text


# --- the page, headless -------------------------------------------------------------------------


PAGE = ROOT / "app" / "pages" / "13_Your_HW2_code.py"


def _texts(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    return "\n".join(map(str, parts + [i.value for i in at.info]))


def test_the_work_lines_of_each_sample_are_its_chain_rule_call_its_use_of_a_contribution_and_its_accumulation():
    """Read with ast from the shown source: the line numbers are the full listing's (the docstring left out)."""
    for s in S.SAMPLES:
        lines = S.source(s.key).splitlines()
        work = V.work_lines(S.source(s.key))
        vjp = [lines[n - 1].strip() for n in work["vjp"]]
        assert "chain_rule(" in vjp[0] and vjp[0].startswith("for parent, contribution in"), (s.key, vjp)
        assert len(vjp) == 2 and "contribution" in vjp[1] and "is_constant" not in vjp[1], (s.key, vjp)
        leaf = [lines[n - 1].strip() for n in work["leaf"]]
        assert leaf == ([] if s.key == "no_leaf_accumulate" else [leaf[0]]) and all(
            "accumulate_derivative(" in t for t in leaf), (s.key, leaf)
    # what a step does with its contribution: added to the running total, or (path recursion) passed on
    assert "+ contribution" in S.source("bfs_first_touch").splitlines()[V.work_lines(S.source("bfs_first_touch"))["vjp"][1] - 1]
    assert S.source("path_recursion").splitlines()[V.work_lines(S.source("path_recursion"))["vjp"][1] - 1].strip() \
        == "backpropagate(parent, contribution)"
    assert V.work_lines("def other():\n    pass\n") == {"vjp": [], "leaf": []}
    with pytest.raises(SyntaxError):
        V.work_lines("def backpropagate(:\n")


def test_a_lost_contribution_is_named_at_the_step_it_arrives_not_when_the_node_is_marked():
    """Breadth-first on the slide example: x1 is marked ✘ at step 8 (it passes its adjoint on with 1 of 2), but
    the verdict that names the lost 367.04 and the engine's 368.04 waits for step 11, where x3 sends it (as
    Backprop orders' LOST line does): the class watches the loss happen before any text names it."""
    gv = V.graph_view(report("bfs_first_touch.py"), "slide")
    lost = [e for e in gv.student.trace.backward if e.kind == "lost"]
    assert (gv.wrong_frame, gv.verdict_frame) == (7, 10) and lost and "lost contribution" in gv.wrong_text
    assert "LOST" in gv.student.frameset.frames[gv.verdict_frame].caption
    assert "LOST" not in " ".join(f.caption for f in gv.student.frameset.frames[:gv.verdict_frame])
    for step, written in ((gv.wrong_frame + 1, False), (gv.verdict_frame, False), (gv.verdict_frame + 1, True)):
        view = V.step_class_view(gv, step, gv.student.label, "bfs_first_touch")
        def htmls(blocks):
            for b in blocks:
                yield b.get("html", "")
                yield from htmls(b.get("blocks", []))
        html_text = " ".join(htmls(view.blocks))
        assert ("first wrong node" in html_text) == written, step
    # a reason that is no lost contribution is written at the step the node is marked
    gv = V.graph_view(report("no_leaf_accumulate.py"), "slide")
    assert gv.verdict_frame == gv.wrong_frame is not None


def test_the_backward_graphs_mark_the_first_wrong_node_with_a_cross_from_its_step():
    """Presentation mode's backward graphs (x̄ nodes): the wrong node's line ends in ✘ from the frame it is marked
    (not only its colour), never before, never on the engine's side; read from the figures' frame data."""
    gv = V.graph_view(report("bfs_first_touch.py"), "slide")

    def crossed(fig: dict) -> list[int]:
        return [k for k, fr in enumerate(fig["frames"])
                if any("✘" in t for d in fr["data"] for t in (d.get("text") or []) if isinstance(t, str))]
    marked = crossed(gv.student.backward_figure)
    assert marked and marked[0] == gv.wrong_frame and marked == list(range(gv.wrong_frame, gv.student.n_frames))
    assert crossed(gv.engine.backward_figure) == []
    last = gv.student.backward_figure["frames"][-1]["data"]
    shown = [t for d in last for t in (d.get("text") or []) if isinstance(t, str)]
    assert "= 1 ✘" in shown and "(367.04 lost)" in shown   # as Backprop orders marks the same node


def test_a_code_that_never_accumulates_does_not_end_on_every_input_holds_its_gradient():
    """The last frame of the student's side names the inputs its code never accumulated into."""
    gv = V.graph_view(report("no_leaf_accumulate.py"), "slide")
    assert gv.student.frameset.frames[-1].caption == \
        "Done: no input holds a gradient (accumulate_derivative never called on x1, x2)"
    assert gv.engine.frameset.frames[-1].caption.startswith("Gradients: ∂f/∂x1 = 368.04")
    assert V.done_caption({"x1": None, "x2": 2.5}) == "Gradients: ∂f/∂x2 = 2.5; accumulate_derivative never called on x1"
    assert V.done_caption({"x1": 1.0}) == "Gradients: ∂f/∂x1 = 1"


def test_the_samples_code_lights_the_lines_of_the_step_it_shows():
    """A node's step lights the chain_rule call and the running-total line, a leaf's step the accumulation, a
    forward step nothing; the block is the sample's backpropagate with the listing's line numbers."""
    from explorer.kit.code_panel import step_events, to_html
    rep = report("bfs_first_touch.py")
    gv = V.graph_view(rep, "slide", label=V.sample_label("bfs_first_touch"))
    side, work = gv.student, V.work_lines(S.source("bfs_first_touch"))
    listing = S.source("bfs_first_touch").splitlines()
    seen = set()
    for k, fr in enumerate(side.frameset.frames):
        b = V.sample_code_block("bfs_first_touch", side, k)
        assert b.title == "backpropagate" and b.lines[0][1].startswith("def backpropagate(")
        assert all(listing[n - 1] == text for n, text in b.lines)
        kinds = {e.kind for e in step_events(side.trace, side.frameset, k)}
        want = work["leaf"] if "leaf" in kinds else work["vjp"] if "visit" in kinds else []
        assert b.highlighted == want, (k, fr.caption, b.highlighted)
        assert (fr.phase == "forward") == (not want) or fr.phase == "done", (k, fr.phase)
        seen.add(tuple(want))
    assert tuple(work["vjp"]) in seen and tuple(work["leaf"]) in seen
    # the wrong node's step (x1, a leaf, taken with 1 of 2 contributions) lights the accumulation
    assert V.sample_code_block("bfs_first_touch", side, gv.wrong_frame).highlighted == work["leaf"]
    html_text = to_html([V.sample_code_block("bfs_first_touch", side, gv.wrong_frame)], test_id="code-sample")
    assert f'class="l hl" data-line="{work["leaf"][0]}"' in html_text and 'data-testid="code-sample"' in html_text


def test_without_the_opt_in_the_page_runs_no_students_file_but_demos_a_sample(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py"])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "Running your own code is off" in text                       # folded below the demo
    assert at.expander[0].label == "Run your own HW2 code on this page"
    # the default sample, both orders and the VJP-calls chart, labelled as the project's sample, not "Your code"
    assert at.selectbox(key="hw2code_sample").value == S.DEFAULT == "bfs_first_touch"
    assert len(at.get("plotly_chart")) == 3 and "Sample\\: Breadth\\-first" in text and "**Your code" not in text
    assert V.SAMPLE_SIDES_NOTE in text and at.query_params.get("sample", S.DEFAULT) == S.DEFAULT
    assert "Watch step" not in text and "first wrong node" not in text   # no spoiler before its step
    assert "The sample's code at this step" in text                     # its backpropagate, lit as it steps
    assert any('data-testid="code-sample"' in h.proto.body for h in at.get("html"))
    src = at.code[0].value
    assert "def backpropagate(variable, deriv):" in src and "never propagated" not in src
    assert src.strip() == S.source("bfs_first_touch").strip()
    table = list(at.table) + list(at.dataframe)
    assert table                                                        # the "Every graph" table
    # the sample's first wrong node: marked on its graph at its step, its reason written at the step the lost
    # contribution arrives (not before: the engine's 368.04 and "x3 sent 367.04" were on screen at step 8)
    gv = V.graph_view(report("bfs_first_touch.py"), "slide")
    for _ in range(gv.wrong_frame):
        next(b for b in at.button if b.label == "Step").click().run()
    text = _texts(at)
    assert "first wrong node" not in text and "367.04" not in text.split("Every graph")[0]
    for _ in range(gv.verdict_frame - gv.wrong_frame):
        next(b for b in at.button if b.label == "Step").click().run()
    text = _texts(at)
    assert "The sample's first wrong node\\: x1" in text and "✘ " in text
    # another sample from the picker; on a class server too (the samples are the project's code)
    monkeypatch.setenv("AUTODIFF_CLASS_SERVER", "1")
    at.selectbox(key="hw2code_sample").set_value("correct").run()
    assert not at.exception, [e.value for e in at.exception]
    next(b for b in at.button if b.label == "End").click().run()
    text = _texts(at)
    assert "Sample\\: Correct\\: depth\\-first post\\-order" in text and "✔ " in text
    assert at.query_params["sample"] == "correct" and "This is a class server" in text


def test_a_link_names_the_sample(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py", "--student-code", str(solution("correct.py"))])
    monkeypatch.setenv("AUTODIFF_CLASS_SERVER", "1")     # refused for the file: the page demos the samples
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.query_params["sample"] = "non_topological"
    at.query_params["graph"] = "slide"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert at.selectbox(key="hw2code_sample").value == "non_topological"
    assert "Sample\\: Not a topological order" in text and "This is a class server" in text
    assert "**Your code" not in text and len(at.get("plotly_chart")) == 3
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.query_params["sample"] = "../../etc/passwd"
    at.run()
    assert not at.exception and at.selectbox(key="hw2code_sample").value == S.DEFAULT
    assert at.warning and "sample" in at.warning[0].value


def test_the_page_marks_the_first_wrong_node_at_its_step(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py", "--student-code", str(solution("bfs_first_touch.py"))])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "bfs\\_first\\_touch\\.py" in text and "Watch step" in text and len(at.get("plotly_chart")) == 3  # both orders, VJP calls
    step = int(text.split("Watch step ", 1)[1].split(":", 1)[0])
    for _ in range(step - 1):
        next(b for b in at.button if b.label == "Step").click().run()
    text = _texts(at)
    assert "Your first wrong node\\: x1" in text and f"Your code** · Step {step} of" in text
    assert str(ROOT) not in text                              # no path of this machine on the page


def test_a_missing_student_code_path_is_said_at_the_top_of_the_page_and_by_the_server(monkeypatch, tmp_path):
    """``-- --student-code`` naming a folder that is not there: page 13 says so first (its last part only, no
    path of the server), above the samples it runs instead; the server's notes name the whole path."""
    from streamlit.testing.v1 import AppTest
    missing = tmp_path / "secret_dir" / "llmsys_hw2"
    monkeypatch.setattr(sys, "argv", ["app/Home.py", "--student-code", str(missing)])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning]
    assert warnings and "llmsys\\_hw2" in warnings[0] and "does not exist" in warnings[0], warnings
    assert str(tmp_path) not in warnings[0] and "secret" not in warnings[0]
    # at the top: the first element under the title (the class bar draws nothing without a class), above the
    # sample picker and the graphs
    top = [c for c in at.main.children.values() if c.type != "html"][:2]
    assert [c.type for c in top] == ["title", "warning"] and top[1].value == warnings[0], [c.type for c in top]
    assert at.selectbox(key="hw2code_sample").value == S.DEFAULT          # the samples run instead
    # the server's notes (printed once, at its first page) name the whole path; none without the option
    notes = V.server_notes(["--student-code", str(missing)], {})
    assert len(notes) == 1 and str(missing) in notes[0] and "no such file or folder" in notes[0]
    assert V.server_notes([], {}) == [] and V.server_notes(["--student-code", str(tmp_path)], {}) == []
    assert V.server_notes(["--student-code", "nope"], {"AUTODIFF_CLASS_SERVER": "1"}) == []


def test_the_random_graphs_and_the_headline_count_wrong_by_the_inputs_gradients():
    """One criterion (harness.gradients_wrong on the inputs' gradients) for the random graphs' count, the
    headline and page 5; a graph whose inputs come out right with an inner adjoint wrong is counted apart, and a
    failing run is never counted wrong or right."""
    from explorer.explain import harness
    from explorer.student_code.diagnose import reference
    rep = report("bfs_first_touch.py")
    count = rep.random_count()
    rnd = rep.random()
    for v in rnd:
        ref = reference(v.key)
        inputs = [n for n, kind in ref.built.kinds.items() if kind == "input"]
        want = harness.gradients_wrong({n: v.adjoints.get(n) for n in inputs}, {n: ref.adjoints.get(n) for n in inputs})
        assert v.inputs_wrong is want, v.key
    assert count.graphs == N_RANDOM_HERE and count.wrong == sum(v.inputs_wrong for v in rnd)
    assert count.wrong + count.inner + count.warned + count.right + sum(count.failed.values()) == count.graphs
    assert count.wrong >= 0.8 * N_RANDOM_HERE
    wrong_all = sum(1 for v in rep.verdicts.values() if not v.key.startswith("doubling-") and v.inputs_wrong)
    assert rep.headline().startswith(f"wrong on {wrong_all} of ")
    assert harness.WRONG_GRADIENTS in rep.text()
    failing = report("raises.py").random_count()
    assert failing.wrong == failing.right == 0 and failing.failed["exception"] == failing.graphs == N_RANDOM_HERE


def test_a_students_own_backpropagate_is_lit_as_a_samples_is():
    """The student's file (here the breadth-first sample named as if it were one: the file the page's test server
    runs) is shown beside the graphs with the lines of each step lit: numbered as in the file (its docstring
    kept), the accumulation at the step its first wrong node x1 is taken, the chain_rule loop at a node's step,
    nothing while the forward pass runs."""
    path = solution("bfs_first_touch.py")
    report = V.page_report(str(path))
    gv = V.graph_view(report, "slide")
    work = V.work_lines(path.read_text(encoding="utf-8"))
    leaf = V.student_code_block(report, gv.student, gv.wrong_frame)
    assert leaf.highlighted == work["leaf"] and leaf.title == "backpropagate" and leaf.path == "bfs_first_touch.py"
    numbered = dict(leaf.lines)
    assert all("accumulate_derivative" in numbered[n] for n in work["leaf"])
    phases = [f.phase for f in gv.student.frameset.frames]
    first_backward = phases.index("backward")
    assert V.student_code_block(report, gv.student, first_backward).highlighted == work["vjp"]
    assert V.student_code_block(report, gv.student, 0).highlighted == []           # forward: nothing lit
    assert V.student_code_block(report.__class__(str(path.parent / "gone.py"), None, None), gv.student, 0) is None


def _presenting(monkeypatch, sample: str, step: int):
    """The page in presentation mode on the slide's graph, a sample at a step, run once without an exception."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py"])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.query_params.update({"present": "1", "sample": sample, "graph": "slide", "step": str(step)})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_presenting_the_page_keeps_every_verdict_folded_until_its_step(monkeypatch):
    """On a projector, step 1 of a sample says nothing of its verdict: the table of every graph's verdict is in a
    folded box, and no verdict line is on the page until the step where the sample goes wrong."""
    at = _presenting(monkeypatch, "bfs_first_touch", 1)
    folded = next(e for e in at.expander if e.label.startswith("Every graph"))
    assert len(folded.table) == 1 and "verdict" in folded.table[0].value.columns
    outside = [t for t in at.table if t not in list(folded.table)]
    assert not any("verdict" in t.value.columns for t in outside)
    text = "\n".join(m.value for m in at.main.markdown if m not in list(folded.markdown)) + _texts(at)
    assert "wrong" not in text.replace("first wrong node is marked", "") and "✘" not in text
    assert "The sample's code at this step" in text
    assert any('data-testid="code-sample"' in h.proto.body for h in at.get("html"))


def test_presenting_names_each_sample_by_its_approach_not_its_verdict(monkeypatch):
    """On a projector the picker listed "Correct: depth-first post-order", "Not a topological order", "Forgets
    is_constant()", and the code panel was titled with the file's name (visits_constants.py): the verdict before
    the class was asked. Presenting, each sample is named by its approach (the depth-first ones by a letter), the
    panel and the listing by no file name; on a laptop the names stay as they were."""
    at = _presenting(monkeypatch, "visits_constants", 8)
    options = at.selectbox(key="hw2code_sample").options
    assert len(options) == len(S.SAMPLES) == len(set(options))
    verdicts = [s.label for s in S.SAMPLES if s.neutral]
    assert verdicts and not any(v in o for v in verdicts for o in options), options
    shown = (_texts(at) + "\n".join(h.proto.body for h in at.get("html"))).replace("\\", "")   # Markdown's escapes
    assert "Depth-first post-order, version C" in shown and "Forgets is_constant()" not in shown
    assert not any(f"{s.key}.py" in shown for s in S.SAMPLES)
    assert any('data-testid="code-sample"' in h.proto.body for h in at.get("html"))
    # the class's devices and the walk-through file follow the projector
    report = V.sample_report("visits_constants")
    gv = V.graph_view(report, "slide", label=V.sample_label("visits_constants", True))
    follow = V.step_class_view(gv, 8, V.sample_label("visits_constants", True), "visits_constants", neutral=True)
    assert "visits_constants.py" not in _view_html(follow) and "code-sample" in _view_html(follow)
    assert "visits_constants.py" in _view_html(V.step_class_view(gv, 8, "x", "visits_constants"))
    from streamlit.testing.v1 import AppTest
    laptop = AppTest.from_file(str(PAGE), default_timeout=300)
    laptop.query_params.update({"sample": "visits_constants", "graph": "slide", "step": "8"})
    laptop.run()
    assert "Sample: Forgets is_constant()" in laptop.selectbox(key="hw2code_sample").options


def _view_html(view) -> str:
    """Every HTML block of a class view (:class:`explorer.classroom.views.ClassView`), rows and columns walked."""
    out = [view.header_html]

    def walk(blocks):
        for b in blocks:
            out.append(b.get("html", ""))
            walk(b.get("blocks", []))
    walk(view.blocks)
    return "".join(out)


def test_the_last_step_gives_the_reason_once(monkeypatch):
    """At a sample's last step the red note says why ("Why: lost contribution: x3 sent 367.04 to x1 ...") and the
    verdict's details under it said it again, word for word, pushing the code off a projector's first screen: each
    reason is written once (the details the note does not give stay)."""
    import html

    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py"])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    report = V.sample_report("bfs_first_touch")
    details = report.verdicts["slide"].details
    assert len(details) >= 2
    for present in ("1", "0"):
        at = AppTest.from_file(str(PAGE), default_timeout=300)
        at.query_params.update({"present": present, "sample": "bfs_first_touch", "graph": "slide", "step": "99"})
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        text = _texts(at).replace("\\", "")
        assert [text.count(d) for d in details] == [1] * len(details), (present, details)
        # the first wrong node and its two values once (in the red note), the verdict's kind under it
        assert text.count("first wrong node x1") + text.count("first wrong node: x1") == 1, text
        assert "✘ wrong gradient" in text
    gv = V.graph_view(report, "slide", label=V.sample_label("bfs_first_touch"))
    last = _view_html(V.step_class_view(gv, gv.n_frames, V.sample_label("bfs_first_touch"), "bfs_first_touch"))
    assert [last.count(html.escape(d)) for d in details] == [1] * len(details)   # the class's devices the same


def test_presenting_a_students_own_file_shows_its_lit_code(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py", "--student-code", str(solution("bfs_first_touch.py"))])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.query_params.update({"present": "1", "graph": "slide", "step": "7"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "Your code at this step" in text and V.STACKED_SIDES_NOTE in text
    panel = next(h.proto.body for h in at.get("html") if 'data-testid="code-student"' in h.proto.body)
    assert 'class="l hl"' in panel and "def backpropagate" in panel


def test_presenting_the_forward_steps_show_the_values_being_computed(monkeypatch):
    """On a projector the graphs are the backward graphs in the slides' notation; while the forward pass runs their
    adjoints are all still empty (every box "x̄i" and nothing else), so those steps show the forward graph, values
    only, the node being evaluated lit, with the same figures Backprop orders builds
    (:func:`explorer.kit.backward_view.shared_forward_figures`), and no backward legend; the backward graphs from the
    first backward step."""
    import json
    gv = V.graph_view(V.sample_report("bfs_first_touch"), "slide", forward_graphs=True)
    assert not V.graph_view(V.sample_report("bfs_first_touch"), "slide").engine.forward_figure
    first_back = next(f.index for f in gv.engine.frameset.frames if f.phase == "backward")
    for step, forward in ((3, True), (first_back + 1, False)):
        at = _presenting(monkeypatch, "bfs_first_touch", step)
        specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
        graphs = [s for s in specs if (s["layout"].get("meta") or {}).get("renderer") == "graph"]
        drawn = [[t for tr in g["data"] for t in (tr.get("text") or []) if isinstance(t, str) and t]
                 for g in graphs]
        legend = [h for h in at.get("html") if "backward-legend" in h.proto.body]
        assert len(drawn) == 2
        if forward:
            assert all("x4 = 2·x2" in d and "= 1" in d and "x3 = 1.5·x1" in d for d in drawn), drawn
            assert not any("x̄" in t for d in drawn for t in d) and not legend
            # the node being evaluated (x4 at step 3) lit: the active node's outline drawn
            assert all(any(tr.get("line", {}).get("width", 0) > 0 and any(v is not None for v in tr.get("x", []))
                           and tr.get("line", {}).get("color") == "#111827" for tr in g["data"]) for g in graphs)
        else:
            assert all("x̄7" in d and "x4 = 2·x2" not in d for d in drawn) and legend


def test_the_slide_examples_output_adjoint_is_x7_f_bar_in_captions_and_graphs():
    """Step 7 said "take x7: x̄7 = 1" (the graph numbers its output itself) where the Expression explorer and
    Backprop orders say "x̄7 (= f̄)": the same words here, in both sides' captions."""
    import json
    gv = V.graph_view(report("bfs_first_touch.py"), "slide")
    for side in (gv.engine, gv.student):
        seed = next(f.caption for f in side.frameset.frames if f.phase == "backward")
        assert "take x7: x̄7 (= f̄) = 1" in seed, seed
        heads = next(tr for tr in side.backward_figure["data"] if tr.get("name") == "node")["text"]
        assert "x̄7" in heads, heads   # the node as on every page (the caption introduces f̄)
