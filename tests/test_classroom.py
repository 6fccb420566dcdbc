"""A class: follow logic, questions read from the engine's trace, and the pages driven headless (AppTest) as a
lecturer and students sharing the in-process broker."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.explain import trace as ex
from explorer.classroom import broker as cb
from explorer.classroom import follow as fl
from explorer.classroom import questions as qs
from explorer.kit import presets
from explorer.kit.deeplink import LinkField, LinkSchema

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"
SLIDE = presets.DEFAULT          # f = x1 + exp(1.5*x1 + 2*x2) at x1 = 3, x2 = 0.5


# --- follow ------------------------------------------------------------------------------------------

def test_page_names_ignore_the_number_and_find_the_file():
    assert fl.page_id("/x/app/pages/5_Backprop_orders.py") == "Backprop_orders"
    assert fl.page_id("/x/app/Home.py") == "Home"
    assert fl.page_script(APP, "Backprop_orders").startswith("pages/")
    assert fl.page_script(APP, "Backprop_orders").endswith("_Backprop_orders.py")
    assert fl.page_script(APP, "Home") == "Home.py"
    assert fl.page_script(APP, "No_such_page") is None
    assert fl.page_script(APP, "../etc/passwd") is None


SCHEMA = LinkSchema({"expr": LinkField("str", "f = x"), "step": LinkField("int", 1, minimum=0),
                     "present": LinkField("bool", False)})


def test_follow_sets_every_link_field_and_resets_the_rest_like_a_first_load():
    state = cb.FollowState("Expression_explorer", {"step": "7", "present": "1", "_q": "3"}, 5, 1.0)
    todo = fl.follow_apply(state, "Expression_explorer", SCHEMA, {"expr": "f = x", "step": 1, "sig": None})
    assert todo.switch_to is None
    assert todo.values == {"expr": "f = x", "step": 7, "sig": None}   # expr at its default; no "present"
    assert todo.problems == []


def test_follow_on_another_page_switches_first_and_sets_nothing():
    state = cb.FollowState("Backprop_orders", {"step": "2"}, 2, 1.0)
    todo = fl.follow_apply(state, "Expression_explorer", SCHEMA, {"step": 1})
    assert todo.switch_to == "Backprop_orders" and todo.values == {}


def test_a_bad_followed_value_is_reported_and_the_default_kept():
    state = cb.FollowState("P", {"step": "x"}, 2, 1.0)
    todo = fl.follow_apply(state, "P", SCHEMA, {"step": 1})
    assert todo.values["step"] == 1 and "step" in todo.problems[0]


def test_the_join_link_holds_the_code_and_no_secret():
    code, secret = cb.InProcessBroker().create("Home", {})
    link = fl.join_link(fl.app_base_url("http://h:8501/Backprop_orders?step=3"), code)
    assert link == f"http://h:8501/?join={code}" and secret not in link
    assert fl.app_base_url("https://example.org/explorer/Home") == "https://example.org/explorer"
    svg = fl.qr_svg(link)
    assert svg.startswith("<svg") and "path" in svg


def test_question_markers_and_histogram_rows():
    assert fl.question_marker(None) == "" and fl.question_marker(4) == "4" and fl.question_marker(4, True) == "4r"
    assert fl.with_question({"a": "1", "_q": "2"}, "") == {"a": "1"}
    assert fl.shared_params({"present": "1", "step": "2"}) == {"step": "2"}
    q = cb.Question(1, "which?", "choice", "x5", choices=("x1", "x5", "x6"), revealed=True)
    t = cb._tally(q, {"s1": "x5", "s2": "x5", "s3": "x1"})
    rows = fl.histogram_rows(t, q.choices, is_right=q.is_right)
    assert [(r["answer"], r["count"], r["right"]) for r in rows] == [("x1", 1, False), ("x5", 2, True),
                                                                     ("x6", 0, False)]
    assert fl.right_share(t) == pytest.approx(2 / 3)


# --- questions from the trace --------------------------------------------------------------------------

def test_step_questions_are_the_next_recorded_backward_step():
    tr = ex.record_execution(SLIDE.program, SLIDE.inputs, strategy="topological")
    groups = tr.steps()
    # step 7 of 14 shows the first backward step (f taken); the next one takes x6 and sends to x5
    got = {p.label: p for p in qs.expression_questions(SLIDE.program, SLIDE.inputs, 8)}
    which = got["Which node is taken next?"]
    assert which.kind == "choice" and which.answer == "x5" and "x5" in which.choices
    assert "f" not in which.choices and "x6" not in which.choices      # already taken
    adj = got["The adjoint of x5"]
    visit = next(e for e in groups[2] if e.kind == "visit")        # the engine's own record: x5 taken, its adjoint
    assert adj.kind == "number" and float(adj.answer) == pytest.approx(visit.value, rel=1e-5)
    send = got["The contribution x5 → x3"]
    assert float(send.answer) == pytest.approx(244.69193226422038, rel=1e-5)
    # at the last forward step: the output is taken first with adjoint 1
    first = {p.label: p for p in qs.expression_questions(SLIDE.program, SLIDE.inputs, 6)}
    assert first["Which node is taken next?"].answer == "f" and first["The adjoint of f"].answer == "1"
    assert qs.expression_questions(SLIDE.program, SLIDE.inputs, 14) == []      # the walk is over


def test_forward_steps_ask_about_the_forward_pass():
    """At a forward step the class is asked for the value computed next (the engine's recorded forward step),
    never about the backward pass it has not reached."""
    tr = ex.record_execution(SLIDE.program, SLIDE.inputs, strategy="topological")
    for step in range(1, 6):
        got = qs.expression_questions(SLIDE.program, SLIDE.inputs, step)
        assert len(got) == 1 and got[0].kind == "number", [p.label for p in got]
        assert not any(w in got[0].prompt for w in ("backward", "adjoint", "contribution", "taken"))
        fstep = tr.forward[step - 1]
        name = tr.graph.node(fstep.node).name
        assert got[0].label == f"The value of {name}" and f"computes {name} = {fstep.op}(" in got[0].prompt
        assert float(got[0].answer) == pytest.approx(float(fstep.value), rel=1e-5)
        assert str(got[0].answer) not in got[0].prompt


def test_the_checked_answer_uses_the_exercises_tolerance():
    adj = next(p for p in qs.expression_questions(SLIDE.program, SLIDE.inputs, 9) if p.label.startswith("The adj"))
    q = cb.Question(1, adj.prompt, adj.kind, adj.answer, adj.tolerance)
    assert q.is_right("244.7") and q.is_right("244.69") and not q.is_right("245.5") and not q.is_right("x")


def test_order_questions_are_the_engine_running_each_order():
    from explorer import backprop_orders as bo
    got = {p.label: p.answer for p in bo.order_questions(SLIDE.program, SLIDE.inputs,
                                                         ("topological", "bfs_first_touch"))}
    assert got == {"Is “Topological” right?": "yes", "Is “BFS, first touch” right?": "no"}
    assert bo.order_questions("f = (", SLIDE.inputs, ("topological",)) == []      # a refused program asks nothing


def test_queue_questions_are_the_recorded_queue_steps():
    from explorer import topological_sort as T
    model = T.sort_model(T.DEFAULT_PRESET)
    got = {p.label: p for p in qs.page_questions("Topological_sort", {"step": "3"}, {"preset": T.DEFAULT_PRESET})}
    nxt = model.queue_steps[3]
    which = got["Which node is taken next?"]
    assert which.answer == model.name(nxt.taken) and which.answer in which.choices
    assert all(model.name(i) not in which.choices for i in nxt.processed)
    assert float(got[f"The value of {which.answer}"].answer) == pytest.approx(float(nxt.value), rel=1e-5)
    assert qs.page_questions("Topological_sort", {"step": str(len(model.queue_steps))},
                             {"preset": T.DEFAULT_PRESET}) == []


def test_bad_or_unsteppable_pages_give_no_question():
    _import_the_pages()
    assert qs.page_questions("Expression_explorer", {"expr": "f = (", "at": "x = 1"}, {}) == []
    assert qs.page_questions("Topological_sort", {"preset": "no such preset"}, {}) == []
    assert qs.page_questions("Network_explorer", {"net": "a"}, {}) == []
    assert qs.page_questions("Expression_explorer", {"step": "8"}, {"expr": SLIDE.program, "at": SLIDE.inputs})


def test_a_choice_keeps_the_right_node_among_at_most_twelve():
    names = [f"v{i}" for i in range(30)]
    got = qs.node_choices(names, "v29")
    assert len(got) == qs.MAX_NODE_CHOICES and got[-1] == "v29" and got[:-1] == tuple(names[:11])
    assert qs.node_choices(names[:3], "v1") == ("v0", "v1", "v2")


# --- which pages ask: each page module registers its own questions ---------------------------------------

CLASSROOM = ROOT / "explorer" / "classroom"
SHARED_LAYERS = ("classroom", "kit", "explain")      # what explorer.classroom may import from the explorer


def _explorer_imports(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, module) for each explorer module a file of ``package`` imports, relative imports resolved and
    ``from explorer import page`` read as the module ``explorer.page``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            if module == "explorer":
                found += [(node.lineno, f"explorer.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
    return [(line, m) for line, m in found if m.startswith("explorer.")]


def _page_imports(source: str, package: str = "explorer.classroom") -> list[str]:
    return [f"line {line}: {m}" for line, m in _explorer_imports(ast.parse(source), package)
            if m.split(".")[1] not in SHARED_LAYERS]


@pytest.mark.parametrize("path", sorted(CLASSROOM.glob("*.py")), ids=lambda p: p.name)
def test_the_classroom_imports_no_page_module(path):
    """The pages use the classroom (they register their questions), never the other way round."""
    bad = _page_imports(path.read_text(encoding="utf-8"))
    assert not bad, f"{path.name} imports page modules {bad}: let the page register through questions.py"


def test_the_page_import_check_can_fail():
    source = ("from .. import backprop_orders as bo\nfrom explorer import topological_sort\n"
              "import explorer.exercises\nfrom ..kit.budget import check_program\nfrom . import views\n"
              "def f():\n    from explorer.network_explorer import model\n")
    assert _page_imports(source) == ["line 1: explorer.backprop_orders", "line 2: explorer.topological_sort",
                                     "line 3: explorer.exercises", "line 7: explorer.network_explorer"]


def _import_the_pages() -> None:
    """Import every explorer module the app's pages import, as a running app does (each page before it draws)."""
    from explorer.kit.warmup import page_modules
    for name in page_modules(APP / "pages"):
        if name.startswith("explorer."):
            try:
                importlib.import_module(name)
            except ImportError:     # `from explorer.x import function`: the module is in the list too
                pass


# a link each page asks about (the slide's program; the Topological sort's default preset)
LINKS = {
    "Expression_explorer": {"expr": SLIDE.program, "at": SLIDE.inputs, "step": "8"},
    "Backprop_orders": {"expr": SLIDE.program, "at": SLIDE.inputs, "step": "8", "orders": "topological,bfs_first_touch"},
    "Topological_sort": {"preset": "slide", "step": "3"},
}


def test_every_registered_page_asks_at_its_link():
    _import_the_pages()
    registered = qs.registered_questions()
    assert set(registered) == set(LINKS)
    for page, link in LINKS.items():
        got = qs.page_questions(page, link, {})
        assert got and all(p.kind in ("number", "choice") and p.answer for p in got), page
    orders = {p.label: p.answer for p in qs.page_questions("Backprop_orders", LINKS["Backprop_orders"], {})}
    assert orders["Is “BFS, first touch” right?"] == "no" and "The adjoint of x5" in orders


def test_each_page_script_imports_the_module_that_registers_its_questions():
    """A page's questions are there whenever the page is: its own script imports the module that registers them."""
    _import_the_pages()
    for page, source in qs.registered_questions().items():
        script = fl.page_script(APP, page)
        assert script is not None, f"{page} registers questions but there is no such page"
        tree = ast.parse((APP / script).read_text(encoding="utf-8"))
        imported = {m for _, m in _explorer_imports(tree, "app")}
        assert source.__module__ in imported, f"{script} does not import {source.__module__}"


def test_a_page_takes_no_other_modules_questions():
    _import_the_pages()
    with pytest.raises(ValueError, match="Topological_sort"):
        qs.register_questions("Topological_sort")(lambda params: [])
    assert qs.registered_questions()["Topological_sort"].__module__ == "explorer.topological_sort"


def test_a_class_of_200_students_is_bounded():
    assert cb.class_bytes_bound(200) < 4 << 20


# --- the pages, headless ---------------------------------------------------------------------------------

def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success]
    parts += [w.value for w in at.warning] + [i.value for i in at.info]
    return "\n".join(map(str, parts)).replace("\\", "")     # as shown (Markdown escapes removed)


def _home() -> AppTest:
    return AppTest.from_file(str(APP / "Home.py"), default_timeout=90)


def test_start_a_class_run_twice_for_one_click_starts_one_class():
    """Streamlit runs a click's callback a second time when the click's run is interrupted by another request:
    "Start a class" then made a second class (the first left behind, two of the network's starts spent)."""
    from explorer.kit.class_widgets import _broker
    lec = _home().run()
    code, secret = _broker().create("Home", {})   # what the first run of the callback did
    lec.session_state["class_code"], lec.session_state["class_secret"] = code, secret
    lec.session_state["class_role"] = "lecturer"
    _button(lec, "Start a class").click().run()   # the button drawn before it: its callback again
    assert lec.session_state["class_code"] == code and not lec.exception


def test_ask_run_twice_for_one_click_asks_one_question():
    """The second run of one click's "Ask" (a run interrupted before the dialog was drawn again) finds the question
    its first run asked and asks nothing: the class keeps question 1 and its answers."""
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code, secret = lec.session_state["class_code"], lec.session_state["class_secret"]
    lec.switch_page("pages/" + fl.page_script(APP, "Expression_explorer").split("/")[1]).run()
    for _ in range(8):
        _button(lec, "Step").click().run()
    _button(lec, "Ask the class").click().run()
    lec.radio[0].set_value(0).run()
    broker = cb.broker_from_env()
    first = broker.ask(code, secret, "the first run's question", "choice", "x3", 0.0, ("x3", "x4"))   # its effect
    _button(lec, "Ask").click().run()          # the dialog drawn before it: the same click's callback again
    assert not lec.exception and broker.question(code).qid == first.qid


def test_students_follow_the_lecturer_answer_and_see_the_reveal():
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code = lec.session_state["class_code"]
    secret = lec.session_state["class_secret"]
    lec.switch_page("pages/" + fl.page_script(APP, "Expression_explorer").split("/")[1]).run()
    assert not lec.exception
    for _ in range(7):
        _button(lec, "Step").click().run()
    assert lec.session_state["explorer_step"] == 8

    students = []
    for _ in range(2):
        s = _home()
        s.query_params["join"] = code
        s.run()
        assert not s.exception
        assert [t.value for t in s.title] == ["Expression explorer"]      # taken to the lecturer's page
        assert s.session_state["explorer_step"] == 8
        assert secret not in repr(s.session_state) and "class_secret" not in s.session_state
        assert "following the lecturer" in _texts(s)
        students.append(s)

    # the lecturer moves on: a student's next run shows the new step
    _button(lec, "Step").click().run()
    students[0].run()
    assert students[0].session_state["explorer_step"] == 9

    # detach: the student's own step; rejoin: the lecturer's again
    _button(students[1], "Detach").click().run()
    _button(students[1], "Back").click().run()
    assert students[1].session_state["explorer_step"] == 7
    _button(students[1], "Rejoin").click().run()
    assert students[1].session_state["explorer_step"] == 9

    # a question from the engine's trace at step 9: which node is taken next (x3)
    _button(lec, "Ask the class").click().run()
    assert "Which node is taken next?" in lec.radio[0].options
    lec.radio[0].set_value(0).run()
    _button(lec, "Ask").click().run()
    assert not lec.exception
    for s, pick in zip(students, ("x3", "x4")):
        s.run()
        assert "Which node does the backward pass take next?" in _texts(s)
        _button(s, pick).click().run()
        assert not s.exception
    assert "Your answer: x4" in _texts(students[1])
    broker = cb.broker_from_env()
    q = broker.question(code)
    tally = broker.tally(code, q.qid)
    assert tally.count == 2 and tally.histogram == {"x3": 1, "x4": 1}
    # a student cannot reveal or drive: the broker refuses without the secret
    with pytest.raises(cb.NotLecturer):
        broker.reveal(code, "not-the-secret", q.qid)
    with pytest.raises(cb.NotLecturer):
        broker.publish(code, "", "Home", {})
    lec.run()
    _button(lec, "Reveal").click().run()
    assert "The engine's answer: x3" in _texts(lec) and "50% of the class got it right" in _texts(lec)
    students[0].run()
    assert "you were right" in _texts(students[0])
    assert any("you were right" in s.value for s in students[0].success)          # green for the right one
    students[1].run()
    assert "you answered x4" in _texts(students[1])
    assert not any("you answered" in s.value for s in students[1].success)      # not green for a wrong one
    _button(lec, "End class").click().run()
    with pytest.raises(cb.ClassNotFound):
        broker.state(code)


def test_a_student_link_with_a_bad_code_says_so_and_the_page_works():
    s = _home()
    s.query_params["join"] = "<b>nope</b>"
    s.run()
    assert not s.exception
    assert any("not a class code" in e.value for e in s.error)
    assert "<b>" not in "".join(e.value for e in s.error)


# --- Redis goes away and comes back ----------------------------------------------------------------------

def test_when_redis_restarts_students_are_told_and_the_lecturer_brings_the_class_back(tmp_path, monkeypatch):
    import time

    from benchmarks.class_stack import ClassStack
    from tests.debian_programs import require

    require("redis-server")
    stack = ClassStack(tmp_path, replicas=0).__enter__()     # only Redis: the sessions run here, headless
    broker = cb.RedisBroker(stack.redis_url)
    monkeypatch.setattr(cb, "_BROKER", broker)
    try:
        lec = _home().run()
        _button(lec, "Start a class").click().run()
        code = lec.session_state["class_code"]
        lec.switch_page("pages/" + fl.page_script(APP, "Expression_explorer").split("/")[1]).run()
        _button(lec, "Step").click().run()
        stu = _home()
        stu.query_params["join"] = code
        stu.run()
        assert stu.session_state["explorer_step"] == 2

        stack.restart_redis(down_s=0.2)             # forgets every class
        stu.run()
        assert not stu.exception
        assert "waiting for it" in _texts(stu)
        assert stu.session_state["explorer_step"] == 2  # the page keeps what it showed

        deadline = time.monotonic() + 20            # the lecturer's next run (its timer, or a click) restores it
        while time.monotonic() < deadline:
            lec.run()
            try:
                if broker.state(code).page == "Expression_explorer":
                    break
            except (cb.ClassNotFound, cb.BrokerUnavailable):
                time.sleep(0.3)
        assert broker.state(code).page == "Expression_explorer"
        _button(lec, "Step").click().run()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and stu.session_state["explorer_step"] != 3:
            time.sleep(0.2)
            stu.run()
        assert stu.session_state["explorer_step"] == 3 and "following the lecturer" in _texts(stu)
    finally:
        broker.stop()
        stack.__exit__(None, None, None)


def test_a_number_question_is_typed_checked_to_the_tolerance_and_rate_limited():
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code = lec.session_state["class_code"]
    lec.switch_page("pages/" + fl.page_script(APP, "Expression_explorer").split("/")[1]).run()
    for _ in range(8):
        _button(lec, "Step").click().run()                  # step 9: x3 is taken next, adjoint 244.69
    _button(lec, "Ask the class").click().run()
    labels = lec.radio[0].options
    lec.radio[0].set_value(labels.index("The adjoint of x3")).run()
    _button(lec, "Ask").click().run()
    s = _home()
    s.query_params["join"] = code
    s.run()
    assert "What is its adjoint x̄3?" in _texts(s)
    s.text_input(key="class_typed_1").input("<script>1</script>")
    _button(s, "Send").click().run()
    assert "is not a number" in _texts(s) and not s.exception
    assert "<script>" not in "".join(m.value for m in s.markdown)
    s.text_input(key="class_typed_1").input("244.7")
    _button(s, "Send").click().run()
    assert "Your answer: 244.7" in _texts(s)
    s.text_input(key="class_typed_1").input("300")
    _button(s, "Send").click().run()                       # within a second of the last one: refused
    assert "One answer a second" in _texts(s)
    broker = cb.broker_from_env()
    assert broker.tally(code, 1).histogram == {"244.7": 1}
    lec.run()
    _button(lec, "Reveal").click().run()
    assert "The engine's answer: 244.69 · 100% of the class got it right" in _texts(lec)
    s.run()
    assert "you were right" in _texts(s)


def test_every_stepped_page_is_followed_with_the_lecturers_link():
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    stu = _home()
    stu.query_params["join"] = lec.session_state["class_code"]
    stu.run()
    for name in ("Backprop_orders", "Topological_sort", "Network_explorer", "Exercises", "Expression_explorer"):
        lec.switch_page(fl.page_script(APP, name)).run()
        steps = [b for b in lec.button if b.label == "Step"]
        if steps:
            steps[0].click().run()
        stu.run()
        assert not lec.exception and not stu.exception, name
        assert [t.value for t in stu.title] == [t.value for t in lec.title], name
        shared = {k: v for k, v in dict(lec.query_params).items() if k != "present"}
        assert {k: v for k, v in dict(stu.query_params).items() if k != "present"} == shared, name


def test_a_following_student_sees_no_page_controls_but_the_class_card():
    css = fl.follow_css()
    assert css.startswith("<style>") and css.endswith("</style>") and "@media" not in css   # laptops too
    for control in ("stButton", "stTextArea", "stSelectbox", "stSlider", "stCheckbox"):
        assert f".{control}" in css
    assert f":not(.st-key-{fl.FOLLOW_BOX_KEY} *)" in css     # the status line and question card stay
    assert ".st-key-class_sync { display: none" in css




def test_a_long_program_reaches_students_whole_and_a_state_too_long_to_share_is_said_to_the_lecturer():
    """Students followed a program clipped to 200 characters."""
    program = "\n".join(f"x{i + 3} = x{i + 2} * 1.01 + sin(x1)" for i in range(10)) + "\nf = x12 + x2"
    assert len(program) > 200
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    lec.switch_page(fl.page_script(APP, "Expression_explorer")).run()
    lec.text_area(key="explorer_expr").set_value(program).run()
    _button(lec, "Step").click().run()
    assert not lec.exception
    stu = _home()
    stu.query_params["join"] = lec.session_state["class_code"]
    stu.run()
    assert not stu.exception
    assert stu.session_state["explorer_expr"] == program
    assert stu.session_state["explorer_step"] == lec.session_state["explorer_step"]
    # a state the class cannot carry is refused whole and said on the lecturer's bar; the class keeps the last one
    lec.session_state["class_refused"] = "'expr' has 4,001 characters; the class shares at most 4,000"
    lec.run()
    assert any("still see your previous step" in w.value for w in lec.warning)


def test_a_class_ends_soon_after_its_lecturer_left_and_starting_classes_is_bounded(monkeypatch):
    now = [1000.0]
    broker = cb.InProcessBroker(clock=lambda: now[0], ttl_s=cb.CLASS_TTL_S)
    monkeypatch.setattr(cb, "_BROKER", broker)
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code = lec.session_state["class_code"]
    assert broker.touch(code, lec.session_state["class_secret"]) is None
    for _ in range(3):                       # a lecture: the lecturer's page touches the class as time goes on
        now[0] += cb.CLASS_TTL_S * 0.6
        lec.session_state["class_touched"] = -1e9
        lec.run()
    assert broker.state(code).page
    now[0] += cb.CLASS_TTL_S + 1            # the lecturer's tab was closed: the class is gone, its place free
    with pytest.raises(cb.ClassNotFound):
        broker.state(code)
    assert broker.classes() == 0
    # a client that starts class after class is stopped after a few (this machine's own browser is not limited)
    monkeypatch.setattr(cb, "MAX_CLASSES", 2)
    refused = None
    for _ in range(3):
        at = _home().run()
        _button(at, "Start a class").click().run()
        if "class_code" not in at.session_state:
            refused = at
    assert refused is not None and any("Could not start a class" in e.value and "2 classes" in e.value
                                       for e in refused.error)


def test_one_client_starts_a_few_classes_then_waits(monkeypatch):
    from explorer.kit import rate_limit
    client = f"203.0.113.{int(__import__('time').time() * 1000) % 250}"
    monkeypatch.setattr(rate_limit, "client_key", lambda peer, headers: client)
    monkeypatch.setattr(cb, "_BROKER", cb.InProcessBroker())
    outcomes = []
    for _ in range(int(rate_limit.CLIENT_CLASSES.burst) + 1):
        at = _home().run()
        _button(at, "Start a class").click().run()
        outcomes.append("class_code" in at.session_state)
    assert outcomes == [True] * int(rate_limit.CLIENT_CLASSES.burst) + [False]
    assert any("Too many classes were started from your network" in e.value for e in at.error)


def test_a_lecturers_step_on_every_stepped_page_is_relayed_as_the_view_the_walk_through_writes():
    import json
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code = lec.session_state["class_code"]
    for name in ("Expression_explorer", "Topological_sort", "Backprop_orders", "Forward_vs_reverse",
                 "Network_explorer", "Your_HW2_code"):
        lec.switch_page(fl.page_script(APP, name)).run()
        [b for b in lec.button if b.label == "Step"][0].click().run()
        assert not lec.exception, name
        relayed = cb.broker_from_env().view(code)
        assert relayed is not None, name
        view = json.loads(relayed[1])
        step = dict(lec.query_params)["step"]
        assert view["page"] == name and f"tep {step} of" in view["header"], (name, step, view["header"])


def test_an_answer_is_never_lost_to_the_run_limits(monkeypatch):
    """Behind one address (a lecture hall's NAT) the client's runs may be spent; a click on an answer still counts
    (the broker paces answers itself; any other run asked for is told to wait, tests/test_rate_limit*)."""
    from explorer.kit import rate_limit
    broker = cb.InProcessBroker()
    monkeypatch.setattr(cb, "_BROKER", broker)
    lec = _home().run()
    _button(lec, "Start a class").click().run()
    code = lec.session_state["class_code"]
    lec.switch_page(fl.page_script(APP, "Expression_explorer")).run()
    for _ in range(8):
        _button(lec, "Step").click().run()
    _button(lec, "Ask the class").click().run()
    lec.radio[0].set_value(0).run()
    _button(lec, "Ask").click().run()
    stu = _home()
    stu.query_params["join"] = code
    stu.run()
    assert "Which node does the backward pass take next?" in _texts(stu)
    monkeypatch.setattr(rate_limit, "client_key", lambda peer, headers: "203.0.113.77")
    monkeypatch.setattr(rate_limit, "SESSION_RUNS", rate_limit.Rate(0.5, 1e-9))   # every asked run is over
    _button(stu, "x3").click().run()
    assert not stu.exception
    assert broker.tally(code, broker.question(code).qid).count == 1
    assert not any("faster than the server runs pages" in w.value for w in stu.warning)
