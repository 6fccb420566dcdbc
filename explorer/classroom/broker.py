"""What a class shares: the lecturer's page and step, the question on screen, the students' answers.

One interface, :class:`ClassBroker`, two implementations:

* :class:`InProcessBroker`, the default: one server's classes in a dict behind a lock.
* :class:`RedisBroker`: replicas share a class through Redis (``AUTODIFF_CLASS_BROKER=redis://HOST:PORT/DB``).
  The lecturer's step is written and *published* in one atomic script; every replica keeps one
  subscription and a local copy of each class it serves, so a student's view reads memory, not the
  network. Answers are a Redis hash per question (one field per student: the last answer counts,
  atomically). When Redis goes away, reads raise :class:`BrokerUnavailable` (the follow view says so)
  and the subscriber reconnects by itself.

Only the lecturer drives: :func:`ClassBroker.create` returns a code (public, in the students' link) and
a secret (kept in the lecturer's session); every write but an answer needs the secret, which is
stored only as its SHA-256. A class expires :data:`CLASS_TTL_S` after its lecturer's last contact (the
lecturer's open page touches it every :data:`TOUCH_EVERY_S`), one server holds at most :data:`MAX_CLASSES`
(in-process, or all replicas together through Redis), answers are rate-limited per student, and every stored
string is bounded (:data:`MAX_TEXT`; a page's state is refused whole over :data:`MAX_STATE_CHARS`, never
clipped), so a class of :data:`MAX_STUDENTS` students is bounded in memory (:func:`class_bytes_bound`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol
from explorer.explain.numbers import count

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I/L: read off a projector
CODE_LENGTH = 6
CLASS_TTL_S = 10 * 60           # a class is forgotten this long after its lecturer's last contact (the
                                # lecturer's open page touches it every TOUCH_EVERY_S: a reload or a sleeping
                                # laptop keeps it, a lecturer who left frees it within ten minutes)
TOUCH_EVERY_S = 60.0            # how often the lecturer's page says it is still there
ANSWER_INTERVAL_S = 1.0         # one answer per student and question per second at most
MAX_TEXT = 200                  # characters of any stored string but a page parameter (a question, an answer)
MAX_PARAMS = 16                 # query parameters of a followed page
MAX_PARAM_CHARS = 4000          # one page parameter (the longest a page reads back from a link: kit/deeplink)
MAX_STATE_CHARS = 8000          # all of a followed page's parameters together
MAX_QUESTIONS = 50              # questions kept per class (older ones are dropped)
MAX_STUDENTS = 500              # answers per question at most (a class of 200 fits with room)
MAX_CLASSES = 200               # classes one server holds at once (in-process, or all replicas' through Redis)


class ClassNotFound(LookupError):
    """No class with this code (never created, closed or expired)."""


class NotLecturer(PermissionError):
    """A write that needs the lecturer's secret was made without it."""


class AnswerRefused(ValueError):
    """An answer that cannot be counted; the message is for the student."""


class BrokerUnavailable(ConnectionError):
    """The shared store (Redis) cannot be reached right now."""


class TooManyClasses(BrokerUnavailable):
    """The server holds :data:`MAX_CLASSES` classes already; the message is for the lecturer."""


class StateTooLong(ValueError):
    """A page state over the bounds (:data:`MAX_PARAMS`, :data:`MAX_PARAM_CHARS`, :data:`MAX_STATE_CHARS`): it is
    refused whole, never clipped (students would silently follow another program)."""


@dataclass(frozen=True)
class FollowState:
    """What the students follow: a page, its query parameters (program, preset, step, ...), a version."""
    page: str
    params: dict[str, str]
    version: int = 0
    updated: float = 0.0


@dataclass(frozen=True)
class Question:
    """A question the engine can check. ``answer`` and ``tolerance`` stay hidden until ``revealed``."""
    qid: int
    prompt: str
    kind: str                       # "number" or "choice"
    answer: str
    tolerance: float = 0.0          # relative, for numbers
    choices: tuple[str, ...] = ()
    revealed: bool = False

    def public(self) -> "Question":
        """The question as students see it before the reveal (no answer)."""
        return self if self.revealed else Question(self.qid, self.prompt, self.kind, "", 0.0, self.choices, False)

    def is_right(self, value: str) -> bool:
        """Whether an answer matches (numbers within the tolerance, choices exactly)."""
        if self.kind == "number":
            try:
                got, want = float(value), float(self.answer)
            except ValueError:
                return False
            if not (math.isfinite(got) and math.isfinite(want)):
                return False
            return abs(got - want) <= max(self.tolerance * abs(want), 1e-12)
        return value.strip() == self.answer.strip()


@dataclass
class Tally:
    """Answers to one question: how many, and how many gave each value (never who)."""
    qid: int
    count: int
    histogram: dict[str, int] = field(default_factory=dict)
    right: int | None = None        # how many are right (after the reveal only)


def _clip(text: Any) -> str:
    return str(text)[:MAX_TEXT]


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def restart_version(now: float) -> int:
    """The version a class brought back after the store lost it starts from: later than any version it had
    (milliseconds since 1970; a class steps far less often than once a millisecond), so a version never names
    two states and a view cached by version on a replica is never shown for another state."""
    return max(int(now * 1000), 2)


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(code: str) -> str:
    """A typed class code as stored (upper case, no spaces); raises :class:`ClassNotFound` when malformed."""
    c = "".join(str(code).split()).upper()
    if len(c) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in c):
        raise ClassNotFound(f"'{_clip(code)[:20]}' is not a class code ({CODE_LENGTH} letters and digits)")
    return c


def normalise_answer(question: Question, value: Any) -> str:
    """The answer as stored: a number in a canonical form, or one of the choices; else :class:`AnswerRefused`."""
    text = str(value).strip()
    if not text:
        raise AnswerRefused("Type an answer first.")
    if len(text) > 64:
        raise AnswerRefused("That answer is too long (64 characters at most).")
    if question.kind == "number":
        try:
            x = float(text.replace("−", "-"))
        except ValueError:
            raise AnswerRefused(f"'{text}' is not a number.") from None
        if not math.isfinite(x):
            raise AnswerRefused("Give a finite number.")
        return f"{x:.6g}"
    if question.choices and text not in question.choices:
        raise AnswerRefused("Pick one of the choices.")
    return text


def _bounded_params(params: dict[str, Any]) -> dict[str, str]:
    """The parameters as stored, whole; :class:`StateTooLong` when they are over the bounds."""
    if len(params) > MAX_PARAMS:
        raise StateTooLong(f"at most {MAX_PARAMS} page parameters can be shared with the class")
    out = {str(k): str(v) for k, v in params.items()}
    for k, v in out.items():
        if len(k) > 40:
            raise StateTooLong("a page parameter's name is over 40 characters")
        if len(v) > MAX_PARAM_CHARS:
            raise StateTooLong(f"'{k}' has {count(len(v))} characters; the class shares at most {count(MAX_PARAM_CHARS)}")
    total = sum(len(k) + len(v) for k, v in out.items())
    if total > MAX_STATE_CHARS:
        raise StateTooLong(f"this page's state has {count(total)} characters; the class shares at most "
                           f"{count(MAX_STATE_CHARS)}")
    return out


def _bounded_view(view: str | None) -> str | None:
    from .views import MAX_VIEW_CHARS
    return view if view and len(view) <= MAX_VIEW_CHARS else None


def class_bytes_bound(students: int = 200) -> int:
    """An upper bound on one class's stored bytes with ``students`` answering every kept question."""
    per_answer = 64 + 40 + 64            # field (student id), value, hash overhead
    per_question = MAX_TEXT * 2 + 64 * len(CODE_ALPHABET)
    state = MAX_STATE_CHARS + MAX_PARAMS * 8 + 200
    return state + MAX_QUESTIONS * (per_question + min(students, MAX_STUDENTS) * per_answer)


class ClassBroker(Protocol):
    """The operations a class needs; see the module docstring."""

    def create(self, page: str, params: dict[str, Any]) -> tuple[str, str]: ...
    def restore(self, code: str, secret: str, page: str, params: dict[str, Any], last_qid: int = 0,
                view: str | None = None) -> int: ...
    def close(self, code: str, secret: str) -> None: ...
    def touch(self, code: str, secret: str) -> None: ...
    def classes(self) -> int: ...
    def is_lecturer(self, code: str, secret: str) -> bool: ...
    def publish(self, code: str, secret: str, page: str, params: dict[str, Any], view: str | None = None) -> int: ...
    def state(self, code: str) -> FollowState: ...
    def view(self, code: str) -> tuple[int, str] | None: ...
    def snapshot(self, code: str) -> tuple[FollowState, int | None]: ...
    def ask(self, code: str, secret: str, prompt: str, kind: str, answer: str, tolerance: float = 0.0,
            choices: tuple[str, ...] = ()) -> Question: ...
    def question(self, code: str) -> Question | None: ...
    def answer(self, code: str, qid: int, student: str, value: Any) -> str: ...
    def tally(self, code: str, qid: int) -> Tally: ...
    def reveal(self, code: str, secret: str, qid: int) -> Question: ...


def _tally(question: Question, answers: dict[str, str]) -> Tally:
    hist: dict[str, int] = {}
    for v in answers.values():
        hist[v] = hist.get(v, 0) + 1
    right = sum(n for v, n in hist.items() if question.is_right(v)) if question.revealed else None
    return Tally(question.qid, len(answers), dict(sorted(hist.items(), key=lambda kv: -kv[1])), right)


@dataclass
class _Class:
    secret_hash: str
    state: FollowState
    expires: float
    questions: dict[int, Question] = field(default_factory=dict)
    answers: dict[int, dict[str, str]] = field(default_factory=dict)
    last_answer: dict[str, float] = field(default_factory=dict)
    next_qid: int = 1
    view: tuple[int, str] | None = None     # (version, the lecturer's rendered view of that version)


class InProcessBroker:
    """Classes of one server process (the default): a dict behind a lock."""

    def __init__(self, clock: Callable[[], float] = time.time, ttl_s: float = CLASS_TTL_S):
        self._clock, self._ttl = clock, ttl_s
        self._classes: dict[str, _Class] = {}
        self._lock = threading.Lock()

    def _get(self, code: str) -> _Class:
        code = normalise_code(code)
        now = self._clock()
        c = self._classes.get(code)
        if c is None or c.expires < now:
            self._classes.pop(code, None)
            raise ClassNotFound(f"There is no class {code} (it ended, or the code is mistyped).")
        return c

    def _lecturer(self, code: str, secret: str) -> _Class:
        c = self._get(code)
        if not hmac.compare_digest(c.secret_hash, _hash(secret or "")):
            raise NotLecturer("Only the lecturer who started this class can do that.")
        c.expires = self._clock() + self._ttl
        return c

    def create(self, page: str, params: dict[str, Any]) -> tuple[str, str]:
        with self._lock:
            now = self._clock()
            state = FollowState(_clip(page), _bounded_params(params), 1, now)
            if self._live(now) >= MAX_CLASSES:
                raise TooManyClasses(_too_many())
            code = _new_code()
            while code in self._classes:
                code = _new_code()
            secret = secrets.token_urlsafe(18)
            self._classes[code] = _Class(_hash(secret), state, now + self._ttl)
            return code, secret

    def _live(self, now: float) -> int:
        """How many classes are live at ``now`` (the expired ones are dropped); the lock is held."""
        for k in [k for k, c in self._classes.items() if c.expires < now]:
            del self._classes[k]
        return len(self._classes)

    def classes(self) -> int:
        """How many classes are live now."""
        with self._lock:
            return self._live(self._clock())

    def touch(self, code: str, secret: str) -> None:
        """The lecturer is still there: the class lives :data:`CLASS_TTL_S` from now."""
        with self._lock:
            self._lecturer(code, secret)

    def restore(self, code: str, secret: str, page: str, params: dict[str, Any], last_qid: int = 0,
                view: str | None = None) -> int:
        """The lecturer's session brings its class back (after the store lost it): publish if the class is
        there, else create it again under the same code and secret (its questions are gone; question numbers
        go on after ``last_qid``, the last one the lecturer asked, so an id never names two questions; versions
        go on from :func:`restart_version`, so a version never names two states). Returns the version."""
        with self._lock:
            c = normalise_code(code)
            if c not in self._classes or self._classes[c].expires < self._clock():
                now = self._clock()
                if self._live(now) >= MAX_CLASSES:
                    raise TooManyClasses(_too_many())
                version = restart_version(now)
                view = _bounded_view(view)
                self._classes[c] = _Class(_hash(secret), FollowState(_clip(page), _bounded_params(params), version,
                                                                     now), now + self._ttl,
                                          next_qid=max(int(last_qid), 0) + 1, view=(version, view) if view else None)
                return version
        return self.publish(code, secret, page, params, view=view)

    def close(self, code: str, secret: str) -> None:
        with self._lock:
            self._lecturer(code, secret)
            del self._classes[normalise_code(code)]

    def is_lecturer(self, code: str, secret: str) -> bool:
        with self._lock:
            try:
                self._lecturer(code, secret)
                return True
            except (ClassNotFound, NotLecturer):
                return False

    def publish(self, code: str, secret: str, page: str, params: dict[str, Any], view: str | None = None) -> int:
        """A new state (only a change counts), with the lecturer's rendered view of it (:mod:`.views`), if any."""
        view = _bounded_view(view)
        with self._lock:
            c = self._lecturer(code, secret)
            new = FollowState(_clip(page), _bounded_params(params), c.state.version + 1, self._clock())
            if (new.page, new.params) != (c.state.page, c.state.params):
                c.state = new
                c.view = (new.version, view) if view else None
            elif view and c.view is None:
                c.view = (c.state.version, view)
            return c.state.version

    def state(self, code: str) -> FollowState:
        with self._lock:
            return self._get(code).state

    def view(self, code: str) -> tuple[int, str] | None:
        """(version, view JSON) of the latest relayed view, or None."""
        with self._lock:
            return self._get(code).view

    def snapshot(self, code: str) -> tuple[FollowState, int | None]:
        """The state and the version of the relayed view, read together (never a state beside another's view)."""
        with self._lock:
            c = self._get(code)
            return c.state, (c.view[0] if c.view else None)

    def ask(self, code: str, secret: str, prompt: str, kind: str, answer: str, tolerance: float = 0.0,
            choices: tuple[str, ...] = ()) -> Question:
        with self._lock:
            c = self._lecturer(code, secret)
            q = Question(c.next_qid, _clip(prompt), kind, _clip(answer), float(tolerance),
                         tuple(_clip(x)[:64] for x in choices[:len(CODE_ALPHABET)]))
            c.next_qid += 1
            c.questions[q.qid] = q
            c.answers[q.qid] = {}
            for old in sorted(c.questions)[:-MAX_QUESTIONS]:
                c.questions.pop(old)
                c.answers.pop(old, None)
            return q

    def question(self, code: str) -> Question | None:
        with self._lock:
            c = self._get(code)
            return c.questions[max(c.questions)] if c.questions else None

    def answer(self, code: str, qid: int, student: str, value: Any) -> str:
        with self._lock:
            c = self._get(code)
            q = c.questions.get(qid)
            if q is None or q.qid != max(c.questions):
                raise AnswerRefused("That question is closed; answer the one on the screen now.")
            if q.revealed:
                raise AnswerRefused("The answer was revealed already.")
            stored = normalise_answer(q, value)
            now = self._clock()
            student = _clip(student)[:64]
            if now - c.last_answer.get(f"{qid}:{student}", -1e9) < ANSWER_INTERVAL_S:
                raise AnswerRefused("One answer a second, please.")
            answers = c.answers[qid]
            if student not in answers and len(answers) >= MAX_STUDENTS:
                raise AnswerRefused("This question has all the answers it can count.")
            if len(c.last_answer) > 4 * MAX_STUDENTS:   # only the current question's entries matter
                c.last_answer = {k: t for k, t in c.last_answer.items() if k.startswith(f"{qid}:")}
            c.last_answer[f"{qid}:{student}"] = now
            answers[student] = stored
            return stored

    def tally(self, code: str, qid: int) -> Tally:
        with self._lock:
            c = self._get(code)
            if qid not in c.questions:
                raise ClassNotFound(f"No question {qid} in this class.")
            return _tally(c.questions[qid], c.answers[qid])

    def reveal(self, code: str, secret: str, qid: int) -> Question:
        with self._lock:
            c = self._lecturer(code, secret)
            q = c.questions.get(qid)
            if q is None:
                raise ClassNotFound(f"No question {qid} in this class.")
            c.questions[qid] = q = Question(**{**asdict(q), "choices": q.choices, "revealed": True})
            return q


# --- Redis ---------------------------------------------------------------------------------------------
PREFIX = "adx:class:"
INDEX = "adx:classes"     # a sorted set: every live class's key, scored by when it expires (the server's count)


def _too_many() -> str:
    return f"This server holds {MAX_CLASSES} classes already; try again when one has ended."

# KEYS[1] the index, KEYS[2] the new class's hash. ARGV: now, max classes, expiry time, secret hash, state JSON,
# ttl seconds, next question id, channel ('' for none), first version, its view ('' for none). Returns 1 (made),
# 0 (the code is taken), -1 (too many).
_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('HSETNX', KEYS[2], 'secret', ARGV[4]) == 0 then return 0 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[2])
  return -1
end
redis.call('HSET', KEYS[2], 'state', ARGV[5], 'version', ARGV[9], 'updated', ARGV[1], 'next_qid', ARGV[7])
if ARGV[10] ~= '' then redis.call('HSET', KEYS[2], 'view', ARGV[10], 'view_version', ARGV[9]) end
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[1], ARGV[3], KEYS[2])
if ARGV[8] ~= '' then
  redis.call('PUBLISH', ARGV[8], cjson.encode({version = tonumber(ARGV[9]), state = ARGV[5], updated = ARGV[1]}))
end
return 1
"""

# KEYS[1] the class hash; ARGV: secret hash, new state JSON, ttl seconds, channel, time, the rendered view of
# the state ('' for none: a view of an older state is dropped, never shown with a newer one). Returns the version,
# or -1 for an unknown class, -2 for a wrong secret. The check, the write and the publish are one step.
_PUBLISH = """
local h = redis.call('HGET', KEYS[1], 'secret')
if not h then return -1 end
if h ~= ARGV[1] then return -2 end
local old = redis.call('HGET', KEYS[1], 'state')
local v = tonumber(redis.call('HGET', KEYS[1], 'version'))
if old ~= ARGV[2] then
  v = redis.call('HINCRBY', KEYS[1], 'version', 1)
  redis.call('HSET', KEYS[1], 'state', ARGV[2], 'updated', ARGV[5])
  if ARGV[6] ~= '' then
    redis.call('HSET', KEYS[1], 'view', ARGV[6], 'view_version', v)
  else
    redis.call('HDEL', KEYS[1], 'view', 'view_version')
  end
  redis.call('PUBLISH', ARGV[4], cjson.encode({version = v, state = ARGV[2], updated = ARGV[5]}))
elseif ARGV[6] ~= '' and not redis.call('HGET', KEYS[1], 'view_version') then
  redis.call('HSET', KEYS[1], 'view', ARGV[6], 'view_version', v)
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return v
"""

# KEYS: class hash, answers hash of the question, the student's rate key. ARGV: qid, student, value,
# interval ms, max students, ttl. Returns 1 (counted), or a negative code.
_ANSWER = """
local q = redis.call('HGET', KEYS[1], 'question')
if not q then return -1 end
local question = cjson.decode(q)
if tostring(question.qid) ~= ARGV[1] then return -3 end
if question.revealed then return -4 end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[4]) == false then return -5 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[5]) then
  return -6
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return 1
"""


def _state_json(page: str, params: dict[str, str]) -> str:
    return json.dumps({"page": page, "params": params}, sort_keys=True, separators=(",", ":"))


class RedisBroker:
    """Classes shared by every replica through one Redis server (see the module docstring)."""

    def __init__(self, url: str, ttl_s: float = CLASS_TTL_S, subscribe: bool = True):
        import redis   # only where Redis is configured
        self._redis_mod = redis
        self.url = url
        self._r = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2, health_check_interval=10,
                                       decode_responses=True)
        self._ttl = int(ttl_s)
        self._publish = self._r.register_script(_PUBLISH)
        self._create = self._r.register_script(_CREATE)
        self._answer = self._r.register_script(_ANSWER)
        self._cache: dict[str, FollowState] = {}
        self._cache_lock = threading.Lock()
        self.connected = True
        self._stop = threading.Event()
        self._thread = None
        if subscribe:
            self._thread = threading.Thread(target=self._listen, name="class-broker-subscriber", daemon=True)
            self._thread.start()

    # the one subscription of this process: keeps the local copies of the classes' states current
    def _listen(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            pubsub = None
            try:
                pubsub = self._r.pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(PREFIX + "*:state")
                with self._cache_lock:           # whatever changed while we were away: read it again
                    known = list(self._cache)
                    self._cache.clear()
                for code in known:
                    try:
                        self._read_state(code)
                    except (ClassNotFound, BrokerUnavailable):
                        pass
                self.connected, backoff = True, 0.2
                while not self._stop.is_set():
                    msg = pubsub.get_message(timeout=1.0)
                    if msg and msg.get("type") == "pmessage":
                        code = msg["channel"][len(PREFIX):].split(":", 1)[0]
                        data = json.loads(msg["data"])
                        st = json.loads(data["state"])
                        new = FollowState(st["page"], st["params"], int(data["version"]), float(data["updated"]))
                        with self._cache_lock:
                            old = self._cache.get(code)
                            if old is None or old.version < new.version:
                                self._cache[code] = new
            except (self._redis_mod.RedisError, OSError, ValueError, KeyError):
                self.connected = False
                with self._cache_lock:
                    self._cache.clear()          # never serve a step that may be stale as if it were current
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            finally:
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:            # noqa: BLE001 - closing a broken connection
                        pass

    def stop(self) -> None:
        """End the subscriber thread (tests, shutdown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            out = fn()
        except (self._redis_mod.RedisError, OSError) as e:
            self.connected = False
            raise BrokerUnavailable("The class server (Redis) cannot be reached right now.") from e
        return out

    def _key(self, code: str) -> str:
        return PREFIX + normalise_code(code)

    def _make(self, key: str, secret: str, state: str, next_qid: int, announce: bool, version: int = 1,
              view: str = "") -> int:
        now = time.time()
        made = int(self._call(lambda: self._create(keys=[INDEX, key], args=[
            repr(now), MAX_CLASSES, repr(now + self._ttl), _hash(secret), state, self._ttl, next_qid,
            key + ":state" if announce else "", version, view])))
        if made == -1:
            raise TooManyClasses(_too_many())
        return made

    def create(self, page: str, params: dict[str, Any]) -> tuple[str, str]:
        secret = secrets.token_urlsafe(18)
        state = _state_json(_clip(page), _bounded_params(params))
        for _ in range(20):
            code = _new_code()
            if self._make(PREFIX + code, secret, state, 1, announce=False):
                return code, secret
        raise BrokerUnavailable("Could not find a free class code; try again.")

    def classes(self) -> int:
        """How many classes are live now, on every replica together."""
        now = repr(time.time())
        return int(self._call(lambda: self._r.pipeline().zremrangebyscore(INDEX, "-inf", now).zcard(INDEX)
                              .execute())[1])

    def touch(self, code: str, secret: str) -> None:
        """The lecturer is still there: the class (and its current question's answers) live :data:`CLASS_TTL_S`
        from now."""
        key = self._check(code, secret)
        q = self._question(key)
        pipe = self._r.pipeline().expire(key, self._ttl).zadd(INDEX, {key: time.time() + self._ttl})
        if q is not None:
            pipe.expire(f"{key}:answers:{q.qid}", self._ttl)
        self._call(pipe.execute)

    def restore(self, code: str, secret: str, page: str, params: dict[str, Any], last_qid: int = 0,
                view: str | None = None) -> int:
        """The lecturer's session brings its class back after Redis lost it (a restart without
        persistence): the same code and secret, the current page; the questions are gone, and question
        numbers go on after ``last_qid`` (the last one the lecturer asked): an id never names two questions."""
        key = self._key(code)
        state = _state_json(_clip(page), _bounded_params(params))
        version = restart_version(time.time())
        if self._make(key, secret, state, max(int(last_qid), 0) + 1, announce=True, version=version,
                      view=_bounded_view(view) or ""):
            return version
        return self.publish(code, secret, page, params, view=view)

    def _check(self, code: str, secret: str) -> str:
        key = self._key(code)
        stored = self._call(lambda: self._r.hget(key, "secret"))
        if stored is None:
            raise ClassNotFound(f"There is no class {normalise_code(code)} (it ended, or the code is mistyped).")
        if not hmac.compare_digest(stored, _hash(secret or "")):
            raise NotLecturer("Only the lecturer who started this class can do that.")
        return key

    def close(self, code: str, secret: str) -> None:
        key = self._check(code, secret)
        answers = self._call(lambda: list(self._r.scan_iter(key + ":answers:*", count=200)))
        self._call(lambda: self._r.pipeline().delete(key, *answers).zrem(INDEX, key).execute())

    def is_lecturer(self, code: str, secret: str) -> bool:
        try:
            self._check(code, secret)
            return True
        except (ClassNotFound, NotLecturer):
            return False

    def publish(self, code: str, secret: str, page: str, params: dict[str, Any], view: str | None = None) -> int:
        key = self._key(code)
        state = _state_json(_clip(page), _bounded_params(params))
        view = _bounded_view(view) or ""
        v = int(self._call(lambda: self._publish(keys=[key], args=[_hash(secret or ""), state, self._ttl,
                                                                  key + ":state", repr(time.time()), view])))
        if v == -1:
            raise ClassNotFound(f"There is no class {normalise_code(code)} (it ended, or the code is mistyped).")
        if v == -2:
            raise NotLecturer("Only the lecturer who started this class can do that.")
        return v

    def _read_state(self, code: str) -> FollowState:
        key = self._key(code)
        got = self._call(lambda: self._r.hmget(key, "state", "version", "updated"))
        if got[0] is None:
            raise ClassNotFound(f"There is no class {normalise_code(code)} (it ended, or the code is mistyped).")
        st = json.loads(got[0])
        new = FollowState(st["page"], st["params"], int(got[1]), float(got[2]))
        with self._cache_lock:
            old = self._cache.get(normalise_code(code))
            if old is None or old.version <= new.version:
                self._cache[normalise_code(code)] = new
        return new

    def state(self, code: str) -> FollowState:
        c = normalise_code(code)
        if self._thread is not None and self.connected:
            with self._cache_lock:
                hit = self._cache.get(c)
            if hit is not None:
                return hit
        return self._read_state(c)

    def snapshot(self, code: str) -> tuple[FollowState, int | None]:
        """The state and its relayed view's version in one Redis read, never the subscriber's copy: that copy
        lags a publish by as long as the subscriber's thread waits for the interpreter (seen past 200 ms on a busy
        2-core server), and a follower told "version V, no view" beside the view of V+1 runs its page instead."""
        key = self._key(code)
        got = self._call(lambda: self._r.hmget(key, "state", "version", "updated", "view_version"))
        if got[0] is None:
            raise ClassNotFound(f"There is no class {normalise_code(code)} (it ended, or the code is mistyped).")
        st = json.loads(got[0])
        return (FollowState(st["page"], st["params"], int(got[1]), float(got[2])),
                int(got[3]) if got[3] is not None else None)

    def view(self, code: str) -> tuple[int, str] | None:
        """(version, view JSON) of the latest relayed view, or None (one Redis read: callers cache by version)."""
        key = self._key(code)
        got = self._call(lambda: self._r.hmget(key, "view_version", "view"))
        if got[0] is None or got[1] is None:
            return None
        return int(got[0]), got[1]

    def ask(self, code: str, secret: str, prompt: str, kind: str, answer: str, tolerance: float = 0.0,
            choices: tuple[str, ...] = ()) -> Question:
        key = self._check(code, secret)
        qid = int(self._call(lambda: self._r.hincrby(key, "next_qid", 1))) - 1
        q = Question(qid, _clip(prompt), kind, _clip(answer), float(tolerance),
                     tuple(_clip(x)[:64] for x in choices[:len(CODE_ALPHABET)]))
        data = json.dumps({**asdict(q), "choices": list(q.choices)})
        old = f"{key}:answers:{qid - MAX_QUESTIONS}"
        self._call(lambda: self._r.pipeline().hset(key, "question", data).expire(key, self._ttl).delete(old).execute())
        return q

    def _question(self, key: str) -> Question | None:
        raw = self._call(lambda: self._r.hget(key, "question"))
        if raw is None:
            return None
        d = json.loads(raw)
        return Question(**{**d, "choices": tuple(d.get("choices") or ())})

    def question(self, code: str) -> Question | None:
        key = self._key(code)
        if not self._call(lambda: self._r.exists(key)):
            raise ClassNotFound(f"There is no class {normalise_code(code)} (it ended, or the code is mistyped).")
        return self._question(key)

    def answer(self, code: str, qid: int, student: str, value: Any) -> str:
        key = self._key(code)
        q = self._question(key)
        if q is None or q.qid != qid:
            raise AnswerRefused("That question is closed; answer the one on the screen now.")
        stored = normalise_answer(q, value)
        student = _clip(student)[:64]
        res = int(self._call(lambda: self._answer(
            keys=[key, f"{key}:answers:{qid}", f"{key}:rate:{qid}:{student}"],
            args=[str(qid), student, stored, int(ANSWER_INTERVAL_S * 1000), MAX_STUDENTS, self._ttl])))
        if res == 1:
            return stored
        raise AnswerRefused({-1: "That question is closed; answer the one on the screen now.",
                             -3: "That question is closed; answer the one on the screen now.",
                             -4: "The answer was revealed already.",
                             -5: "One answer a second, please.",
                             -6: "This question has all the answers it can count."}.get(res, "Not counted."))

    def tally(self, code: str, qid: int) -> Tally:
        key = self._key(code)
        q = self._question(key)
        if q is None or q.qid != qid:
            raise ClassNotFound(f"No question {qid} on the screen of this class.")
        answers = self._call(lambda: self._r.hgetall(f"{key}:answers:{qid}"))
        return _tally(q, answers)

    def reveal(self, code: str, secret: str, qid: int) -> Question:
        key = self._check(code, secret)
        q = self._question(key)
        if q is None or q.qid != qid:
            raise ClassNotFound(f"No question {qid} on the screen of this class.")
        q = Question(**{**asdict(q), "choices": q.choices, "revealed": True})
        self._call(lambda: self._r.hset(key, "question", json.dumps({**asdict(q), "choices": list(q.choices)})))
        return q


_BROKER: ClassBroker | None = None
_BROKER_LOCK = threading.Lock()


def broker_from_env(environ: dict[str, str] | None = None) -> ClassBroker:
    """This process's broker: Redis when ``AUTODIFF_CLASS_BROKER`` names a ``redis://`` URL, else in-process."""
    import os
    global _BROKER
    env = os.environ if environ is None else environ
    with _BROKER_LOCK:
        if _BROKER is None:
            url = env.get("AUTODIFF_CLASS_BROKER", "").strip()
            if url.startswith(("redis://", "rediss://", "unix://")):
                _BROKER = RedisBroker(url)
            elif url in ("", "memory", "in-process"):
                _BROKER = InProcessBroker()
            else:
                raise ValueError("AUTODIFF_CLASS_BROKER must be a redis:// URL or 'in-process'")
        return _BROKER
