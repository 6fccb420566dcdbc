"""The class's widgets, drawn by :func:`explorer.kit.widgets.start_page` and fed by ``publish_link`` on every
page, so no page has class code of its own.

* Lecturer: the sidebar's "Start a class"; then a bar under the title with the join code (a dialog with the
  code, the link and a QR code, readable on a projector), "Ask the class" (a dialog: a question the engine
  checks at the current step, the live count and histogram, Reveal) and "End class". Every run of a page
  publishes its page and link parameters (only a change reaches the broker).
* Student (``?join=CODE`` or the sidebar's "Join a class"): before the page draws anything, the lecturer's
  page is opened and its parameters set in the session (the way a deep link is read). Where the lecturer's page
  relays its view (``publish_link(..., view=...)``), the student's page draws only the class bar, the question
  card and that view, which the browser keeps current by itself (:mod:`explorer.classroom.web`, ``follow.js``):
  a step runs nothing for a follower. A change of page or question, or a page that relays no view, clicks the
  page's hidden sync button: one run of the student's page applies it. Detach / Rejoin with one click.
* Surviving a replica or a reload: the class lives in the broker; the browser keeps a cookie with the class code
  (and the student's id, or the lecturer's secret), so a new session on any replica takes its role back by itself.
  The lecturer's private link (``?lead=CODE.SECRET``, in the sidebar) does the same on another device.

Logic lives in :mod:`explorer.classroom` (broker, follow, questions); this module is widgets only.
"""
from __future__ import annotations

import html
import logging
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import streamlit as st

from explorer.classroom import follow as fl
from explorer.classroom.broker import (TOUCH_EVERY_S, AnswerRefused, BrokerUnavailable, ClassNotFound,
                                       NotLecturer, Question, StateTooLong, broker_from_env, normalise_code)
from explorer.classroom.questions import page_questions
from explorer.classroom.views import ClassView

from . import rate_limit
from .formatting import md_escape
from explorer.explain.numbers import percent

LECTURER_EVERY_S = 1.0          # the lecturer's session checks its class is there (restores it after Redis lost it)
TALLY_EVERY_S = 0.5             # the lecturer's live count and histogram

CODE, SECRET, ROLE = "class_code", "class_secret", "class_role"   # plain keys shared by every page
STUDENT, DETACHED, APPLIED = "class_student", "class_detached", "class_applied"
PUBLISHED, MARKER, SHOWN, ANSWERED = "class_published", "class_marker", "class_shown", "class_answered"
UNPUBLISHED, VIEW, COOKIE = "class_unpublished", "class_view", "class_cookie"
REFUSED, TOUCHED, CLIENT = "class_refused", "class_touched", "_client"
ANSWER_RUN = "_run_by_answer"   # the run an answer's click starts: never refused by the run limits (the broker
                                # paces answers itself: one a second per student and question)


def _answering() -> None:
    st.session_state[ANSWER_RUN] = True
LEAD_PARAM = "lead"             # ?lead=CODE.SECRET: the lecturer's private link (restores the role anywhere)
LEAD_COOKIE, JOIN_COOKIE = "adx_lead", "adx_join"
COOKIE_MAX_AGE_S = 4 * 3600     # a lecture and more (a class itself lives 10 min after its lecturer left)
OPEN = "class_dialog"           # which dialog stays open across the page's reruns ("code", "ask" or absent)
LECTURER, FOLLOWER = "lecturer", "student"


_LOG = logging.getLogger(__name__)


def _broker():
    return broker_from_env()


def caller_page(depth: int = 2) -> tuple[str, Path]:
    """(page name, the app's folder) of the page script ``depth`` frames up (start_page's caller)."""
    path = Path(sys._getframe(depth).f_code.co_filename)   # 0: here, 1: start_page, 2: the page
    app_dir = path.parent.parent if path.parent.name == "pages" else path.parent
    try:
        return fl.page_id(path), app_dir
    except ValueError:
        return path.stem, app_dir


def _leave(forget: bool = True) -> None:
    for k in (CODE, SECRET, ROLE, DETACHED, APPLIED, PUBLISHED, MARKER, SHOWN, ANSWERED, UNPUBLISHED, OPEN, VIEW,
              REFUSED, TOUCHED):
        st.session_state.pop(k, None)
    if forget:                   # the browser forgets the class too (else a reload would take it back)
        st.session_state[COOKIE] = [(LEAD_COOKIE, "", 0), (JOIN_COOKIE, "", 0)]


def _remember(name: str, value: str) -> None:
    """Ask the browser to keep ``name=value`` (sent by the next drawing of the class panel)."""
    st.session_state[COOKIE] = [*st.session_state.get(COOKIE, []), (name, value, COOKIE_MAX_AGE_S)]


def _cookie_script() -> None:
    pending = st.session_state.pop(COOKIE, None)
    if not pending:
        return
    # values are class codes, student ids and secrets: letters, digits, '-', '_' and the '.' between them
    sets = "".join(f"document.cookie = {fl.cookie_text(n, v, age)!r};" for n, v, age in pending)
    st.html(f"<script>{sets}</script>", unsafe_allow_javascript=True)


def _following() -> bool:
    return st.session_state.get(ROLE) == FOLLOWER and not st.session_state.get(DETACHED)


def _lecturing() -> bool:
    return st.session_state.get(ROLE) == LECTURER and bool(st.session_state.get(SECRET))


def in_class() -> bool:
    """Whether this session is a class's lecturer or a (attached) follower: its runs are what a class watches."""
    return _following() or _lecturing()


def _join(code: str, student: str | None = None) -> str | None:
    """Join class ``code`` as a student (``student``: the id a cookie kept, so answers stay one per student);
    returns a message when it cannot (for the sidebar)."""
    try:
        c = normalise_code(code)
        _broker().state(c)
    except ClassNotFound as e:
        return str(e)
    except BrokerUnavailable as e:
        return str(e)
    _leave(forget=False)
    st.session_state.update({CODE: c, ROLE: FOLLOWER, DETACHED: False, APPLIED: None})
    if student and fl.is_token(student):
        st.session_state[STUDENT] = student
    st.session_state.setdefault(STUDENT, secrets.token_urlsafe(12))
    _remember(JOIN_COOKIE, f"{c}.{st.session_state[STUDENT]}")
    return None


def _lead(code: str, secret: str) -> bool:
    """Take the lecturer's role of class ``code`` back (a reload, another replica or device); False if not."""
    try:
        c = normalise_code(code)
        if not _broker().is_lecturer(c, secret):
            return False
        q = _broker().question(c)
    except (ClassNotFound, BrokerUnavailable):
        return False
    _leave(forget=False)
    st.session_state.update({CODE: c, SECRET: secret, ROLE: LECTURER,
                             MARKER: fl.question_marker(q.qid if q else None, bool(q and q.revealed))})
    _remember(LEAD_COOKIE, f"{c}.{secret}")
    return True


def _take_role_back() -> None:
    """A session without a class role: the lecturer's link, else the browser's cookies, give it back."""
    link = st.query_params.get(LEAD_PARAM)
    if link:
        del st.query_params[LEAD_PARAM]
        code, _, secret = str(link).partition(".")
        if not _lead(code, secret):
            st.session_state["class_join_problem"] = "That lecturer link is not (or no longer) valid."
        return
    if st.session_state.get(ROLE) is not None:
        return
    try:
        cookies = dict(st.context.cookies)
    except (AttributeError, TypeError):   # no browser session (a script run by AppTest)
        return
    lead, joined = (cookies.get(n) for n in (LEAD_COOKIE, JOIN_COOKIE))
    if isinstance(lead, str) and lead:
        code, _, secret = lead.partition(".")
        if _lead(code, secret):
            return
    if isinstance(joined, str) and joined:
        code, _, student = joined.partition(".")
        _join(code, student)


def follow_before_widgets(schema, ns, defaults: Mapping[str, Any], link_to_state: Mapping[str, str] | None,
                          page: str, app_dir: Path) -> None:
    """The start of every page run (from ``start_page``, before any widget): a ``?join=`` link joins; a
    following student is taken to the lecturer's page and its parameters are set."""
    joining = st.query_params.get(fl.JOIN_PARAM)
    if joining:
        del st.query_params[fl.JOIN_PARAM]
        problem = _join(str(joining), st.session_state.get(STUDENT))
        if problem:
            st.session_state["class_join_problem"] = problem
    else:
        _take_role_back()
    if not _following():
        return
    try:
        state = _broker().state(st.session_state[CODE])
    except (BrokerUnavailable, ClassNotFound):
        return                       # the status line says so; the page stays as it is
    mark = (state.version, state.updated)
    if st.session_state.get(APPLIED) == mark:
        return
    todo = fl.follow_apply(state, page, schema, defaults, link_to_state)
    if todo.switch_to is not None:
        target = fl.page_script(app_dir, todo.switch_to)
        if target is not None:
            st.switch_page(target)
        st.session_state[APPLIED] = mark      # a page this app does not have: stay here
        return
    for name, value in todo.values.items():
        st.session_state[ns.key(name)] = value
        st.session_state[ns.key("_saved_" + name)] = value    # what start_page restores after another page
    st.session_state[ns.key("step_playing")] = False   # the lecturer's step, not a Play of its own
    st.session_state[APPLIED] = mark


def publish(page: str, params: Mapping[str, str], view: Callable[[], ClassView] | None = None) -> None:
    """The lecturer's page, published on every run (from ``publish_link``); the broker counts only a change.

    ``view`` renders what the class sees of this state (:class:`explorer.classroom.views.ClassView`); it is
    called only when a class is being taught and the state changed, once for every follower."""
    if not _lecturing():
        return
    shared = fl.with_question(fl.shared_params(params), st.session_state.get(MARKER, ""))
    if st.session_state.get(PUBLISHED) == (page, shared) and not st.session_state.get(UNPUBLISHED):
        return
    st.session_state[PUBLISHED] = (page, shared)
    st.session_state[VIEW] = _render(view)
    _publish_now()


def _render(view: Callable[[], ClassView] | None) -> str | None:
    if view is None:
        return None
    try:
        return view().to_json()
    except Exception as e:       # noqa: BLE001 - a view that cannot be relayed: followers run the page instead
        _LOG.warning("the class view of this step is not relayed: %s", type(e).__name__)
        return None


def _last_qid() -> int:
    marker = st.session_state.get(MARKER, "")
    return int(marker.rstrip("r")) if marker.rstrip("r").isdigit() else 0


def _publish_now() -> None:
    page, shared = st.session_state[PUBLISHED]
    code, secret, view = st.session_state[CODE], st.session_state[SECRET], st.session_state.get(VIEW)
    try:
        try:
            _broker().publish(code, secret, page, shared, view=view)
        except ClassNotFound:        # the store lost it (a Redis restart): bring it back under the same code
            _broker().restore(code, secret, page, shared, last_qid=_last_qid(), view=view)
        st.session_state[UNPUBLISHED] = False
        st.session_state.pop(REFUSED, None)
    except StateTooLong as e:    # shared whole or not at all: the class stays on the last state it could carry
        st.session_state[REFUSED] = str(e)
        st.session_state[UNPUBLISHED] = False
    except BrokerUnavailable:
        st.session_state[UNPUBLISHED] = True   # the lecturer's timer publishes it when the store is back
    except NotLecturer:
        _leave()


# --- after the title -----------------------------------------------------------------------------------

def class_panel(page: str, schema) -> None:
    """The class's part of a page, under its title: the lecturer's bar or the student's status and question;
    and the sidebar's Start / Join (hidden in presentation mode, like the whole sidebar)."""
    problem = st.session_state.get("class_join_problem")
    if problem:   # a ?join= link that failed: said on the page, not only in the (collapsed) sidebar
        what = "start a class" if st.session_state.get("class_problem_on_start") else "join the class"
        st.error(f"**Could not {what}** — {md_escape(problem)}", icon="🚫")
    _sidebar(page)
    _cookie_script()
    if _lecturing():
        _lecturer_bar(page, schema)
    elif st.session_state.get(ROLE) == FOLLOWER:
        _student_view(page)


def _sidebar(page: str) -> None:
    with st.sidebar.expander("Class", expanded=st.session_state.get(ROLE) is not None):
        problem = st.session_state.pop("class_join_problem", None)
        st.session_state.pop("class_problem_on_start", None)
        if problem:
            st.error(md_escape(problem))
        if _lecturing():
            code = st.session_state[CODE]
            st.markdown(f"You are teaching class **{code}**.")
            st.markdown("**Your lecturer link** (private: it drives the class; keep it off the projector). It "
                        "gives you the class back after a reload, on any replica, or on another device:")
            st.code(fl.lead_link(_join_url(code), code, st.session_state[SECRET]), language=None)
            return
        if st.session_state.get(ROLE) == FOLLOWER:
            st.markdown(f"You are in class **{st.session_state[CODE]}**.")
            st.button("Leave the class", key="class_leave", on_click=_leave)
            return
        st.button("Start a class", key="class_start", on_click=_start, args=(page,), width="stretch",
                  help="Your students follow this page and its step on their own screens, and answer your "
                       "questions. Only this browser tab can drive the class.")
        with st.form("class_join_form", border=False):
            st.text_input("Class code", key="class_join_code", max_chars=12, placeholder="e.g. K7QW3D")
            if st.form_submit_button("Join a class", width="stretch"):
                problem = _join(st.session_state.get("class_join_code", ""))
                if problem:
                    st.error(md_escape(problem))
                else:
                    st.rerun()


@st.cache_resource(show_spinner=False)
def _class_starts() -> rate_limit.RateLimiter:
    """The server process's per-client buckets of "Start a class" (:data:`rate_limit.CLIENT_CLASSES`)."""
    return rate_limit.RateLimiter(rate_limit.CLIENT_CLASSES)


def _start(page: str) -> None:
    if _lecturing():   # the same click's callback run a second time (a run interrupted): one class, not two
        return
    client = st.session_state.get(CLIENT, rate_limit.LOCAL)
    wait = 0.0 if client == rate_limit.LOCAL else _class_starts().take(client, time.monotonic())
    if wait:
        st.session_state.update(class_problem_on_start=True, class_join_problem=(
            f"Too many classes were started from your network; start one in {rate_limit.wait_text(wait)}."))
        return
    try:
        code, secret = _broker().create(page, {})
    except BrokerUnavailable as e:     # unreachable, or the server holds too many classes
        st.session_state.update(class_problem_on_start=True, class_join_problem=str(e))
        return
    _leave(forget=False)
    st.session_state.update({CODE: code, SECRET: secret, ROLE: LECTURER, MARKER: ""})
    _remember(LEAD_COOKIE, f"{code}.{secret}")


def _end() -> None:
    try:
        _broker().close(st.session_state[CODE], st.session_state[SECRET])
    except (BrokerUnavailable, ClassNotFound, NotLecturer):
        pass
    _leave()


def _join_url(code: str) -> str:
    try:
        base = fl.app_base_url(st.context.url or "")
    except (AttributeError, ValueError):
        base = ""
    return fl.join_link(base or "http://localhost:8501", code)


def _open(which: str | None) -> None:
    if which is None:
        st.session_state.pop(OPEN, None)
    else:
        st.session_state[OPEN] = which


@st.dialog("Join the class", width="large", on_dismiss=lambda: _open(None))
def _join_dialog(code: str) -> None:
    url = _join_url(code)
    a, b = st.columns([3, 2], vertical_alignment="center")
    a.markdown(f"<div class='class-code' style='font-size:5rem;font-weight:700;letter-spacing:0.15em'>"
               f"{html.escape(code)}</div>", unsafe_allow_html=True)
    a.markdown("Open the link, or the app's sidebar → **Class** → type the code:")
    a.code(url, language=None)
    b.image(fl.qr_svg(url, scale=8), width=320, caption="Scan to join")


def _lecturer_bar(page: str, schema) -> None:
    code = st.session_state[CODE]
    cols = st.columns([3, 1.2, 1.4, 1], vertical_alignment="center")

    @st.fragment(run_every=LECTURER_EVERY_S)
    def status() -> None:
        try:
            if st.session_state.get(UNPUBLISHED) and st.session_state.get(PUBLISHED):
                _publish_now()
            _broker().state(code)
            if st.session_state.get(UNPUBLISHED):
                raise BrokerUnavailable("not yet")
            if time.monotonic() - st.session_state.get(TOUCHED, -1e9) >= TOUCH_EVERY_S:
                _broker().touch(code, st.session_state[SECRET])   # still here: the class lives on
                st.session_state[TOUCHED] = time.monotonic()
            refused = st.session_state.get(REFUSED)
            if refused:
                st.warning(f"Class **{code}** — your students still see your previous step: this one is too "
                           f"long to share ({md_escape(refused)}).")
                return
            st.markdown(f"Class **{code}** — your students follow this page")
        except ClassNotFound:
            if st.session_state.get(PUBLISHED):
                _publish_now()       # restores it under the same code
            st.warning(f"Class {code}: bringing it back…")
        except BrokerUnavailable:
            st.warning(f"Class {code}: the class server is unreachable; retrying…")
        except NotLecturer:          # the code now names another lecturer's class (this one had expired)
            _leave()
            st.warning(f"Class {code} has ended.")

    with cols[0]:
        status()
    cols[1].button("Join code", key="class_show_code", icon=":material/qr_code_2:", width="stretch",
                   on_click=_open, args=("code",))
    cols[2].button("Ask the class", key="class_ask", icon=":material/quiz:", width="stretch",
                   on_click=_open, args=("ask",))
    cols[3].button("End class", key="class_end", on_click=_end, width="stretch")
    defaults = {k: schema._encode_one(f, f.default) for k, f in schema.fields.items() if f.default is not None}
    if st.session_state.get(OPEN) == "code":
        _join_dialog(code)
    elif st.session_state.get(OPEN) == "ask":
        _ask_dialog(page, defaults)


def _set_marker(q: Question | None) -> None:
    st.session_state[MARKER] = fl.question_marker(q.qid if q else None, bool(q and q.revealed))
    if st.session_state.get(PUBLISHED):
        page, shared = st.session_state[PUBLISHED]
        st.session_state[PUBLISHED] = (page, fl.with_question(shared, st.session_state[MARKER]))
        _publish_now()


def _bars_html(rows: list[dict], revealed: bool) -> str:
    out = ["<table style='width:100%;border-collapse:collapse'>"]
    for r in rows:
        colour = "#2e7d32" if (revealed and r["right"]) else ("#9e9e9e" if revealed else "#1565c0")
        mark = " ✓" if revealed and r["right"] else ""
        out.append(f"<tr><td style='padding:2px 8px;white-space:nowrap'>{html.escape(str(r['answer']))}{mark}</td>"
                   f"<td style='width:70%'><div style='background:{colour};height:1.1em;"
                   f"width:{max(r['share'] * 100, 0.5):.1f}%'></div></td>"
                   f"<td style='padding:2px 8px;text-align:right'>{r['count']}</td></tr>")
    out.append("</table>")
    return "".join(out)


@st.dialog("Ask the class", width="large", on_dismiss=lambda: _open(None))
def _ask_dialog(page: str, defaults: Mapping[str, str]) -> None:
    code = st.session_state[CODE]
    problem = st.session_state.pop("class_problem", None)
    if problem:
        st.warning(md_escape(problem))
    try:
        q = _broker().question(code)
    except (BrokerUnavailable, ClassNotFound) as e:
        st.warning(md_escape(str(e)))
        return
    if q is None or st.session_state.get("class_new_question"):
        _, shared = st.session_state.get(PUBLISHED) or (page, {})
        proposals = page_questions(page, shared, defaults)
        if not proposals:
            st.info("No question the engine can check at this step: questions come from the Expression explorer's "
                    "and Backprop orders' backward pass and the Topological sort's queue method.")
            return
        labels = [p.label for p in proposals]
        pick = st.radio("Question", range(len(labels)), format_func=lambda i: labels[i], key="class_pick")
        st.markdown(md_escape(proposals[pick].prompt))
        st.button("Ask", key="class_ask_now", type="primary", on_click=_ask_now,
                  args=(proposals[pick], q.qid if q is not None else None))
        return
    st.markdown(f"**Question {q.qid}:** {md_escape(q.prompt)}")

    @st.fragment(run_every=None if q.revealed else TALLY_EVERY_S)
    def live() -> None:
        try:
            t = _broker().tally(code, q.qid)
        except (BrokerUnavailable, ClassNotFound) as e:
            st.warning(md_escape(str(e)))
            return
        st.markdown(f"### {t.count} answered")
        rows = fl.histogram_rows(t, q.choices, is_right=q.is_right if q.revealed else None)
        if rows:
            st.html(_bars_html(rows, q.revealed))
        if q.revealed:
            share = fl.right_share(t)
            st.success(md_escape(f"The engine's answer: {q.answer}" + (f" · {percent(share)} of the class got it right"
                                                                    if share is not None else "")))

    live()
    cols = st.columns(2)
    # always drawn (disabled once revealed): a button that disappears from a dialog can linger on screen
    cols[0].button("Reveal", key="class_reveal", type="primary", on_click=_reveal_now, args=(q.qid,),
                   width="stretch", disabled=q.revealed)
    cols[1].button("New question", key="class_new", on_click=lambda: st.session_state.update(class_new_question=True),
                   width="stretch")


def _ask_now(p, shown_qid: int | None) -> None:
    """Ask ``p``; ``shown_qid``: the class's question when the button was drawn (drawn intent, explorer.kit.widgets):
    the callback's second run for one click finds a newer question and asks nothing."""
    try:
        current = _broker().question(st.session_state[CODE])
        if (current.qid if current is not None else None) != shown_qid:
            return
        asked = _broker().ask(st.session_state[CODE], st.session_state[SECRET], p.prompt, p.kind, p.answer,
                              p.tolerance, p.choices)
        _set_marker(asked)
        st.session_state["class_new_question"] = False
    except (BrokerUnavailable, ClassNotFound, NotLecturer) as e:
        st.session_state["class_problem"] = str(e)


def _reveal_now(qid: int) -> None:
    try:
        _set_marker(_broker().reveal(st.session_state[CODE], st.session_state[SECRET], qid))
    except (BrokerUnavailable, ClassNotFound, NotLecturer) as e:
        st.session_state["class_problem"] = str(e)


# --- the student ---------------------------------------------------------------------------------------

def _student_view(page: str) -> None:
    code = st.session_state[CODE]
    detached = bool(st.session_state.get(DETACHED))
    try:
        state = _broker().state(code)
        marker = state.params.get(fl.QUESTION_PARAM, "")
    except (BrokerUnavailable, ClassNotFound):
        state, marker = None, st.session_state.get(SHOWN, "")
    st.session_state[SHOWN] = marker
    with st.container(key=fl.FOLLOW_BOX_KEY):   # kept when the page's controls are hidden (below)
        cols = st.columns([3, 1], vertical_alignment="center")
        if detached:
            cols[0].markdown(f"Class **{code}** — you are exploring on your own")
            cols[1].button("Rejoin", key="class_rejoin", on_click=_rejoin, type="primary", width="stretch")
            return
        if state is None:
            cols[0].warning(f"Class {code}: the class server cannot be reached, or the class is not there right "
                            "now; waiting for it…")
        else:
            cols[0].markdown(f"Class **{code}** — following the lecturer (Detach to explore on your own)")
        cols[1].button("Detach", key="class_detach", on_click=_detach, width="stretch",
                       help="Explore this page on your own with its controls; Rejoin brings you back to the "
                            "lecturer's step.")
        # clicked by follow.js when the page, the question or an unrelayed step changes: one run applies it
        st.button("sync", key="class_sync")
        if state is not None and marker:
            _question_card(code)
    st.html(fl.follow_css())
    relayed = _relayed_view(code, state, page)
    st.html(fl.follow_html(code, page, marker, since=-1 if relayed else (state.version if state else -1)),
            unsafe_allow_javascript=True)
    if relayed:
        shown = {k: v for k, v in state.params.items() if k != fl.QUESTION_PARAM}
        if st.query_params.to_dict() != shown:
            st.query_params.from_dict(shown)    # the lecturer's link: Detach (or a reload) opens the same state
        st.stop()                # the page itself is not run: the browser draws the lecturer's view


def _relayed_view(code: str, state, page: str) -> bool:
    if state is None or state.page != page:
        return False
    try:
        _, view_version = _broker().snapshot(code)     # the view's version, not its text
    except (BrokerUnavailable, ClassNotFound):
        return False
    return view_version == state.version


def _detach() -> None:
    st.session_state[DETACHED] = True


def _rejoin() -> None:
    st.session_state[DETACHED] = False
    st.session_state[APPLIED] = None


def _question_card(code: str) -> None:
    try:
        q = _broker().question(code)
    except (BrokerUnavailable, ClassNotFound):
        return
    if q is None:
        return

    @st.fragment
    def card() -> None:
        with st.container(border=True):
            st.markdown(f"**Question {q.qid}:** {md_escape(q.prompt)}")
            mine = (st.session_state.get(ANSWERED) or {}).get(q.qid)
            if q.revealed:
                try:
                    t = _broker().tally(code, q.qid)
                    share = fl.right_share(t)
                except (BrokerUnavailable, ClassNotFound):
                    share = None
                right = mine is not None and q.is_right(mine)
                verdict = "" if mine is None else (" · you were right" if right else f" · you answered {mine}")
                text = md_escape(f"The engine's answer: {q.answer}{verdict}" +
                                 (f" · {percent(share)} of the class got it right" if share is not None else ""))
                # green for a right answer only; a wrong or missing one is told without the colour of success
                (st.success if right else st.info)(text)
                return
            value = None
            if q.kind == "choice":
                for i, choice in enumerate(q.choices):
                    if i % 2 == 0:   # a row per pair: a phone stacks them in reading order
                        cols = st.columns(2)
                    if cols[i % 2].button(_label(choice), key=f"class_choice_{q.qid}_{i}", width="stretch",
                                          type="primary" if mine == choice else "secondary", on_click=_answering):
                        value = choice
            else:
                with st.form(f"class_answer_{q.qid}", border=False):
                    typed = st.text_input("Your answer", key=f"class_typed_{q.qid}", max_chars=64)
                    if st.form_submit_button("Send", type="primary", width="stretch", on_click=_answering):
                        value = typed
            if value is not None:
                try:
                    stored = _broker().answer(code, q.qid, st.session_state[STUDENT], value)
                    st.session_state[ANSWERED] = {q.qid: stored}
                    mine = stored
                except AnswerRefused as e:
                    st.warning(md_escape(str(e)))
                except (BrokerUnavailable, ClassNotFound) as e:
                    st.warning(md_escape(str(e)))
            if mine is not None:
                st.caption(md_escape(f"Your answer: {mine} (you can change it until the reveal)"))

    card()


def _label(text: str) -> str:
    out = str(text)
    for ch in "\\`*_[]<>#|~$":
        out = out.replace(ch, "\\" + ch)
    return out
