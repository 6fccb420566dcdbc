"""The class broker: the same behaviour in-process and through a real Redis server shared by two replicas."""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path
import time

import pytest

from benchmarks.class_stack import ClassStack
from explorer.classroom import broker as cb
from tests.debian_programs import require


@pytest.fixture
def redis_server(tmp_path):
    """A real ``redis-server`` on a loopback port, keeping nothing on disk (a restart forgets everything)."""
    require("redis-server")
    server = ClassStack(tmp_path, replicas=0)
    with server:
        yield server


@pytest.fixture(params=["in-process", "redis"])
def replicas(request, tmp_path):
    """Two brokers as two replicas would hold them: the same object in-process, two clients of one Redis."""
    if request.param == "in-process":
        b = cb.InProcessBroker()
        yield b, b
        return
    server = request.getfixturevalue("redis_server")
    a, b = cb.RedisBroker(server.redis_url), cb.RedisBroker(server.redis_url)
    yield a, b
    a.stop()
    b.stop()


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except cb.BrokerUnavailable:
            pass
        time.sleep(0.02)
    return False


def test_codes_are_short_and_readable_and_secrets_are_not_in_them(replicas):
    a, _ = replicas
    code, secret = a.create("Expression_explorer", {"step": "1"})
    assert len(code) == cb.CODE_LENGTH and set(code) <= set(cb.CODE_ALPHABET)
    assert secret not in code and len(secret) >= 20
    assert cb.normalise_code(" " + code.lower()[:3] + " " + code.lower()[3:]) == code
    with pytest.raises(cb.ClassNotFound):
        cb.normalise_code("O0I1L!")


def test_only_the_lecturer_drives_and_students_follow_on_another_replica(replicas):
    lecturer, student = replicas
    code, secret = lecturer.create("Expression_explorer", {"expr": "f = x*x*x", "step": "1"})
    assert student.state(code).params["step"] == "1"
    v = lecturer.publish(code, secret, "Expression_explorer", {"expr": "f = x*x*x", "step": "4"})
    assert v == 2
    assert wait_for(lambda: student.state(code).params["step"] == "4", timeout=1.0)   # within 1 s
    assert student.state(code).version == 2
    assert lecturer.publish(code, secret, "Expression_explorer", {"expr": "f = x*x*x", "step": "4"}) == 2  # no change
    with pytest.raises(cb.NotLecturer):
        student.publish(code, "a guess", "Expression_explorer", {"step": "9"})
    with pytest.raises(cb.NotLecturer):
        student.ask(code, "", "x?", "number", "1")
    assert not student.is_lecturer(code, "a guess") and lecturer.is_lecturer(code, secret)
    with pytest.raises(cb.ClassNotFound):
        student.state("ABCDEF" if code != "ABCDEF" else "ABCDEG")


def test_predict_then_reveal_one_answer_per_student_the_last_counts(replicas, monkeypatch):
    monkeypatch.setattr(cb, "ANSWER_INTERVAL_S", 0.05)
    lecturer, student = replicas
    code, secret = lecturer.create("Expression_explorer", {})
    q = lecturer.ask(code, secret, "What is x̄1?", "number", "368.0378983963", tolerance=1e-3)
    seen = student.question(code)
    assert seen.qid == q.qid and seen.public().answer == ""         # the answer stays hidden
    assert student.answer(code, q.qid, "s1", "368.04") == "368.04"
    assert student.answer(code, q.qid, "s2", "1") == "1"
    with pytest.raises(cb.AnswerRefused):
        student.answer(code, q.qid, "s2", "2")                          # too soon after the last one
    time.sleep(0.08)
    student.answer(code, q.qid, "s2", "368.038")                       # changes its mind: the last counts
    with pytest.raises(cb.AnswerRefused):
        student.answer(code, q.qid, "s3", "not a number")
    t = lecturer.tally(code, q.qid)
    assert t.count == 2 and sum(t.histogram.values()) == 2 and t.right is None
    revealed = lecturer.reveal(code, secret, q.qid)
    assert revealed.revealed and student.question(code).answer == "368.0378983963"
    t = lecturer.tally(code, q.qid)
    assert t.right == 2
    with pytest.raises(cb.AnswerRefused):
        student.answer(code, q.qid, "s4", "368")                       # after the reveal
    q2 = lecturer.ask(code, secret, "Which node comes next?", "choice", "x5", choices=("x4", "x5", "f"))
    with pytest.raises(cb.AnswerRefused):
        student.answer(code, q.qid, "s5", "368")                       # the old question is closed
    with pytest.raises(cb.AnswerRefused):
        student.answer(code, q2.qid, "s5", "x9")                        # not a choice
    assert student.answer(code, q2.qid, "s5", "x5") == "x5"


def test_fifty_students_on_two_replicas_are_counted_exactly_once(replicas):
    a, b = replicas
    code, secret = a.create("Backprop_orders", {})
    for round_ in range(3):
        q = a.ask(code, secret, f"question {round_}", "number", "12")
        errors = []

        def student(i):
            try:
                (a if i % 2 else b).answer(code, q.qid, f"student-{i}", str(10 + i % 5))
            except Exception as e:  # noqa: BLE001 - collected for the assertion
                errors.append(e)

        threads = [threading.Thread(target=student, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        t = b.tally(code, q.qid)
        assert t.count == 50 and sum(t.histogram.values()) == 50 and t.histogram["12"] == 10


def test_text_is_bounded_and_classes_expire_after_their_lecturer_left():
    now = [1000.0]
    b = cb.InProcessBroker(clock=lambda: now[0], ttl_s=60)
    code, secret = b.create("X" * 5000, {"k": "v"})
    assert len(b.state(code).page) == cb.MAX_TEXT
    with pytest.raises(cb.StateTooLong):
        b.publish(code, secret, "p", {str(i): "v" for i in range(cb.MAX_PARAMS + 1)})
    for _ in range(3):                                   # the lecturer's page touches it: it stays
        now[0] += 50
        b.touch(code, secret)
    assert b.state(code).params == {"k": "v"}
    with pytest.raises(cb.NotLecturer):
        b.touch(code, "a guess")
    now[0] += 61                                         # the lecturer left a minute ago: gone
    with pytest.raises(cb.ClassNotFound):
        b.state(code)
    assert b.classes() == 0
    assert cb.class_bytes_bound(200) < 5_000_000


def test_a_long_program_is_shared_whole_or_refused_never_clipped(replicas):
    """An 11-line, 271-character program reached students clipped to 200."""
    from explorer.kit.deeplink import MAX_PARAM_CHARS
    assert cb.MAX_PARAM_CHARS == MAX_PARAM_CHARS         # whatever a page reads back from a link, a class carries
    a, b = replicas
    program = "\n".join(f"x{i + 2} = x{i + 1} * 1.01 + sin(x{i + 1})" for i in range(11))
    assert len(program) > 200
    code, secret = a.create("Expression_explorer", {"program": program, "step": "30"})
    assert wait_for(lambda: b.state(code).params["program"] == program)
    a.publish(code, secret, "Expression_explorer", {"program": "y" * MAX_PARAM_CHARS, "step": "1"})
    assert wait_for(lambda: b.state(code).params["program"] == "y" * MAX_PARAM_CHARS)
    before = b.state(code)
    with pytest.raises(cb.StateTooLong, match="4,000"):
        a.publish(code, secret, "Expression_explorer", {"program": "y" * (MAX_PARAM_CHARS + 1)})
    with pytest.raises(cb.StateTooLong):
        a.publish(code, secret, "Expression_explorer", {"a": "y" * 3000, "b": "y" * 3000, "c": "y" * 3000})
    with pytest.raises(cb.StateTooLong):
        a.create("Expression_explorer", {"program": "y" * (MAX_PARAM_CHARS + 1)})
    assert b.state(code) == before                       # a refused state changes nothing


def test_a_server_holds_a_bounded_number_of_classes_and_a_closed_one_frees_its_place(replicas, monkeypatch):
    monkeypatch.setattr(cb, "MAX_CLASSES", 3)
    a, b = replicas
    made = [a.create("Home", {}) for _ in range(3)]
    assert a.classes() == b.classes() == 3
    with pytest.raises(cb.TooManyClasses, match="3 classes"):
        b.create("Home", {})                              # the other replica counts the same classes
    with pytest.raises(cb.TooManyClasses):
        b.restore("K7QW3D", "s", "Home", {})              # a restore of a class the store lost counts too
    a.close(*made[0])
    assert b.classes() == 2
    code, secret = b.create("Home", {})
    a.touch(code, secret)
    assert a.classes() == 3


def test_redis_going_away_is_reported_and_recovered(redis_server):
    lecturer, student = cb.RedisBroker(redis_server.redis_url), cb.RedisBroker(redis_server.redis_url)
    try:
        code, secret = lecturer.create("Expression_explorer", {"step": "3"})
        assert student.state(code).params["step"] == "3"
        for step in (4, 5, 6):
            lecturer.publish(code, secret, "Expression_explorer", {"step": str(step)})
        before = lecturer.state(code).version
        redis_server.stop_redis()
        with pytest.raises(cb.BrokerUnavailable):
            lecturer.publish(code, secret, "Expression_explorer", {"step": "4"})
        assert wait_for(lambda: not student.connected, timeout=5)
        with pytest.raises(cb.BrokerUnavailable):
            student.state(code)
        redis_server.start_redis()               # back, empty (no persistence)
        # the lecturer's session brings its class back under the same code; students need nothing
        assert wait_for(lambda: lecturer.restore(code, secret, "Expression_explorer", {"step": "4"}) >= 1)
        assert wait_for(lambda: student.state(code).params["step"] == "4", timeout=5)
        assert student.state(code).version > before       # a version never names two states (views are cached by it)
        assert wait_for(lambda: student.connected, timeout=5)
        lecturer.publish(code, secret, "Expression_explorer", {"step": "5"})
        assert wait_for(lambda: student.state(code).params["step"] == "5", timeout=2)
        with pytest.raises(cb.NotLecturer):
            student.restore(code, "a guess", "Expression_explorer", {"step": "9"})
    finally:
        lecturer.stop()
        student.stop()


def test_broker_from_env_picks_the_implementation(monkeypatch):
    monkeypatch.setattr(cb, "_BROKER", None)
    assert isinstance(cb.broker_from_env({}), cb.InProcessBroker)
    monkeypatch.setattr(cb, "_BROKER", None)
    with pytest.raises(ValueError):
        cb.broker_from_env({"AUTODIFF_CLASS_BROKER": "http://example"})


def compose_redis_args() -> tuple[str, ...]:
    """The arguments compose.yaml gives redis-server (its ``command`` list, after the program's name)."""
    compose = (Path(__file__).resolve().parents[1] / "compose.yaml").read_text()
    block = compose[compose.index("\n  redis:"):]
    command = json.loads(re.search(r"^\s+command: (\[.*\])$", block, re.M).group(1))
    assert command[0] == "redis-server"
    return tuple(command[1:])


def test_a_restart_of_the_deployed_redis_keeps_the_class_and_never_reuses_a_question_id(tmp_path):
    require("redis-server")
    args = compose_redis_args()
    assert "--appendonly" in args and args[args.index("--appendonly") + 1] == "yes"
    with ClassStack(tmp_path, replicas=0, redis_args=args) as server:
        b = cb.RedisBroker(server.redis_url)
        try:
            code, secret = b.create("Expression_explorer", {"step": "8"})
            b.publish(code, secret, "Expression_explorer", {"step": "9"}, view='{"header": "Step 9"}')
            q1 = b.ask(code, secret, "x̄5?", "number", "244.69", 1e-3)
            b.answer(code, q1.qid, "student-a", "244.7")
            q2 = b.ask(code, secret, "x̄4?", "number", "245.69", 1e-3)
            b.answer(code, q2.qid, "student-a", "245.7")
            version = b.state(code).version
            # redis-server writes its append-only file once a second (appendfsync everysec): wait for it there
            assert wait_for(lambda: b._r.info("persistence").get("aof_last_write_status") == "ok"
                            and b._r.info("persistence").get("aof_pending_bio_fsync", 0) == 0, timeout=5)
            b._r.execute_command("BGREWRITEAOF")
            assert wait_for(lambda: not b._r.info("persistence").get("aof_rewrite_in_progress"), timeout=10)
            server.restart_redis(down_s=0.2)
            assert wait_for(lambda: b.state(code).version == version, timeout=10)
            assert b.is_lecturer(code, secret)
            assert b.view(code) == (version, '{"header": "Step 9"}')
            assert b.tally(code, q2.qid).histogram == {"245.7": 1}    # the answers are kept
            assert b.ask(code, secret, "x̄3?", "number", "367.04", 1e-3).qid == q2.qid + 1
        finally:
            b.stop()


def test_a_restored_class_numbers_its_questions_after_the_last_one_asked(replicas):
    a, _ = replicas
    code, secret = a.create("Expression_explorer", {})
    asked = [a.ask(code, secret, f"q{i}", "number", "1") for i in range(3)]
    if isinstance(a, cb.InProcessBroker):
        a._classes.clear()                  # as the store forgets it
    else:
        a._r.flushall()
    a.restore(code, secret, "Expression_explorer", {}, last_qid=asked[-1].qid)
    new = a.ask(code, secret, "after the restart", "number", "2")
    assert new.qid == asked[-1].qid + 1
    with pytest.raises(cb.AnswerRefused):
        a.answer(code, asked[-1].qid, "s", "1")   # an answer to the old question never counts for the new one


def test_a_view_belongs_to_the_version_it_was_published_with(replicas):
    a, b = replicas
    code, secret = a.create("Expression_explorer", {"step": "1"})
    v2 = a.publish(code, secret, "Expression_explorer", {"step": "2"}, view='{"s": 2}')
    assert wait_for(lambda: b.view(code) == (v2, '{"s": 2}'))
    v3 = a.publish(code, secret, "Expression_explorer", {"step": "3"})       # a state without a view
    assert v3 == v2 + 1 and b.view(code) is None                             # the old one is never shown with it
    assert b.snapshot(code)[0].version == v3 and b.snapshot(code)[1] is None  # read from the store, not a copy
    a.publish(code, secret, "Expression_explorer", {"step": "3"}, view='{"s": 3}')   # the same state, now with one
    assert b.view(code) == (v3, '{"s": 3}')
    assert b.snapshot(code)[1] == v3
    too_big = "x" * 2_000_000
    v4 = a.publish(code, secret, "Expression_explorer", {"step": "4"}, view=too_big)
    assert b.view(code) is None and wait_for(lambda: a.state(code).version == v4)   # a's copy: via pub/sub


def test_a_class_brought_back_carries_its_view_from_its_first_version(replicas):
    """A follower never meets a restored version without its view (it would have to run the whole page)."""
    a, b = replicas
    view = json.dumps({"header": "<h4>Step 3 of 14</h4>", "blocks": []})
    version = a.restore("K7QW3D", "the lecturer's secret", "Expression_explorer", {"step": "3"}, last_qid=4,
                        view=view)
    assert version > 1000
    assert wait_for(lambda: b.state("K7QW3D").version == version)
    assert b.view("K7QW3D") == (version, view)
    assert a.ask("K7QW3D", "the lecturer's secret", "x̄5?", "number", "1").qid == 5
    a.close("K7QW3D", "the lecturer's secret")
