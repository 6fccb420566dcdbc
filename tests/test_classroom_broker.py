"""The class broker: the same behaviour in-process and through a real Redis server shared by two replicas."""
from __future__ import annotations

import os
import threading
import time

import pytest

from benchmarks.class_stack import ClassStack, find
from explorer.classroom import broker as cb

REDIS = find("redis-server")


@pytest.fixture
def redis_server(tmp_path):
    """A real ``redis-server`` on a loopback port, keeping nothing on disk (a restart forgets everything)."""
    if REDIS is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing: .ci/run installs Debian's redis-server")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
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


def test_text_is_bounded_and_classes_expire():
    now = [1000.0]
    b = cb.InProcessBroker(clock=lambda: now[0], ttl_s=60)
    code, secret = b.create("X" * 5000, {"k": "v" * 5000})
    st = b.state(code)
    assert len(st.page) == cb.MAX_TEXT and len(st.params["k"]) == cb.MAX_TEXT
    with pytest.raises(ValueError):
        b.publish(code, secret, "p", {str(i): "v" for i in range(cb.MAX_PARAMS + 1)})
    now[0] += 61
    with pytest.raises(cb.ClassNotFound):
        b.state(code)
    assert cb.class_bytes_bound(200) < 5_000_000


def test_redis_going_away_is_reported_and_recovered(redis_server):
    lecturer, student = cb.RedisBroker(redis_server.redis_url), cb.RedisBroker(redis_server.redis_url)
    try:
        code, secret = lecturer.create("Expression_explorer", {"step": "3"})
        assert student.state(code).params["step"] == "3"
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
