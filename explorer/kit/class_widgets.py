"""The class's widgets, drawn by :func:`explorer.kit.widgets.start_page` and fed by ``publish_link`` on every
page, so no page has class code of its own.

* Lecturer: the sidebar's "Start a class"; then a bar under the title with the join code (a dialog with the
  code, the link and a QR code, readable on a projector), "Ask the class" (a dialog: a question the engine
  checks at the current step, the live count and histogram, Reveal) and "End class". Every run of a page
  publishes its page and link parameters (only a change reaches the broker).
* Student (``?join=CODE`` or the sidebar's "Join a class"): before the page draws anything, the lecturer's
  page is opened and its parameters set in the session (the way a deep link is read); a small timer
  (:data:`FOLLOW_EVERY_S`) notices a new version and reruns the page; the question card sits under the
  title. Detach / Rejoin with one click.

Logic lives in :mod:`explorer.classroom` (broker, follow, questions); this module is widgets only.
"""
from __future__ import annotations

import html
import secrets
import sys
from pathlib import Path
from typing import Any, Mapping

import streamlit as st

from explorer.classroom import follow as fl
from explorer.classroom.broker import (AnswerRefused, BrokerUnavailable, ClassNotFound, NotLecturer, Question,
                                       broker_from_env, normalise_code)
from explorer.classroom.questions import page_questions

from .formatting import md_escape

FOLLOW_EVERY_S = 0.5            # a student's page notices the lecturer's step within this (plus a page run)
LECTURER_EVERY_S = 1.0          # the lecturer's session checks its class is there (restores it after Redis lost it)
TALLY_EVERY_S = 0.5             # the lecturer's live count and histogram

CODE, SECRET, ROLE = "class_code", "class_secret", "class_role"   # plain keys shared by every page
STUDENT, DETACHED, APPLIED = "class_student", "class_detached", "class_applied"
PUBLISHED, MARKER, SHOWN, ANSWERED = "class_published", "class_marker", "class_shown", "class_answered"
UNPUBLISHED = "class_unpublished"
OPEN = "class_dialog"           # which dialog stays open across the page's reruns ("code", "ask" or absent)
LECTURER, FOLLOWER = "lecturer", "student"


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


def _leave() -> None:
    for k in (CODE, SECRET, ROLE, DETACHED, APPLIED, PUBLISHED, MARKER, SHOWN, ANSWERED, UNPUBLISHED, OPEN):
        st.session_state.pop(k, None)


def _following() -> bool:
    return st.session_state.get(ROLE) == FOLLOWER and not st.session_state.get(DETACHED)


def _lecturing() -> bool:
    return st.session_state.get(ROLE) == LECTURER and bool(st.session_state.get(SECRET))


def _join(code: str) -> str | None:
    """Join class ``code`` as a student; returns a message when it cannot (for the sidebar)."""
    try:
        c = normalise_code(code)
        _broker().state(c)
    except ClassNotFound as e:
        return str(e)
    except BrokerUnavailable as e:
        return str(e)
    _leave()
    st.session_state.update({CODE: c, ROLE: FOLLOWER, DETACHED: False, APPLIED: None})
    st.session_state.setdefault(STUDENT, secrets.token_urlsafe(12))
    return None


def follow_before_widgets(schema, ns, defaults: Mapping[str, Any], link_to_state: Mapping[str, str] | None,
                          page: str, app_dir: Path) -> None:
    """The start of every page run (from ``start_page``, before any widget): a ``?join=`` link joins; a
    following student is taken to the lecturer's page and its parameters are set."""
    joining = st.query_params.get(fl.JOIN_PARAM)
    if joining:
        del st.query_params[fl.JOIN_PARAM]
        problem = _join(str(joining))
        if problem:
            st.session_state["class_join_problem"] = problem
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


def publish(page: str, params: Mapping[str, str]) -> None:
    """The lecturer's page, published on every run (from ``publish_link``); the broker counts only a change."""
    if not _lecturing():
        return
    shared = fl.with_question(fl.shared_params(params), st.session_state.get(MARKER, ""))
    if st.session_state.get(PUBLISHED) == (page, shared) and not st.session_state.get(UNPUBLISHED):
        return
    st.session_state[PUBLISHED] = (page, shared)
    _publish_now()


def _publish_now() -> None:
    page, shared = st.session_state[PUBLISHED]
    code, secret = st.session_state[CODE], st.session_state[SECRET]
    try:
        try:
            _broker().publish(code, secret, page, shared)
        except ClassNotFound:        # the store lost it (a Redis restart): bring it back under the same code
            _broker().restore(code, secret, page, shared)
        st.session_state[UNPUBLISHED] = False
    except BrokerUnavailable:
        st.session_state[UNPUBLISHED] = True   # the lecturer's timer publishes it when the store is back
    except NotLecturer:
        _leave()


# --- after the title -----------------------------------------------------------------------------------

def class_panel(page: str, schema) -> None:
    """The class's part of a page, under its title: the lecturer's bar or the student's status and question;
    and the sidebar's Start / Join (hidden in presentation mode, like the whole sidebar)."""
    _sidebar(page)
    if _lecturing():
        _lecturer_bar(page, schema)
    elif st.session_state.get(ROLE) == FOLLOWER:
        _student_view()


def _sidebar(page: str) -> None:
    with st.sidebar.expander("Class", expanded=st.session_state.get(ROLE) is not None):
        problem = st.session_state.pop("class_join_problem", None)
        if problem:
            st.error(md_escape(problem))
        if _lecturing():
            st.markdown(f"You are teaching class **{st.session_state[CODE]}**.")
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


def _start(page: str) -> None:
    try:
        code, secret = _broker().create(page, {})
    except BrokerUnavailable as e:
        st.session_state["class_join_problem"] = str(e)
        return
    _leave()
    st.session_state.update({CODE: code, SECRET: secret, ROLE: LECTURER, MARKER: ""})


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
            st.markdown(f"Class **{code}** — your students follow this page")
        except ClassNotFound:
            if st.session_state.get(PUBLISHED):
                _publish_now()       # restores it under the same code
            st.warning(f"Class {code}: bringing it back…")
        except BrokerUnavailable:
            st.warning(f"Class {code}: the class server is unreachable; retrying…")

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
        st.button("Ask", key="class_ask_now", type="primary", on_click=_ask_now, args=(proposals[pick],))
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
            st.success(md_escape(f"The engine's answer: {q.answer}" + (f" · {share:.0%} of the class got it right"
                                                                    if share is not None else "")))

    live()
    cols = st.columns(2)
    # always drawn (disabled once revealed): a button that disappears from a dialog can linger on screen
    cols[0].button("Reveal", key="class_reveal", type="primary", on_click=_reveal_now, args=(q.qid,),
                   width="stretch", disabled=q.revealed)
    cols[1].button("New question", key="class_new", on_click=lambda: st.session_state.update(class_new_question=True),
                   width="stretch")


def _ask_now(p) -> None:
    try:
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

def _student_view() -> None:
    code = st.session_state[CODE]
    detached = bool(st.session_state.get(DETACHED))
    try:
        state = _broker().state(code)
        marker = state.params.get(fl.QUESTION_PARAM, "")
    except (BrokerUnavailable, ClassNotFound):
        state, marker = None, st.session_state.get(SHOWN, "")
    st.session_state[SHOWN] = marker     # before the timer compares it (else a run would rerun itself)

    @st.fragment(run_every=None if detached else FOLLOW_EVERY_S)
    def status() -> None:
        cols = st.columns([3, 1], vertical_alignment="center")
        if detached:
            cols[0].markdown(f"Class **{code}** — you are exploring on your own")
            cols[1].button("Rejoin", key="class_rejoin", on_click=_rejoin, type="primary", width="stretch")
            return
        try:
            state = _broker().state(code)
        except BrokerUnavailable:
            cols[0].warning("The class server is unreachable; reconnecting…")
            return
        except ClassNotFound:
            cols[0].warning(f"Class {code} is not there right now (it ended, or the class server restarted: "
                            "waiting for the lecturer)")
            return
        if (state.version, state.updated) != st.session_state.get(APPLIED) or \
                state.params.get(fl.QUESTION_PARAM, "") != st.session_state.get(SHOWN, ""):
            st.rerun()               # the whole page: the lecturer's page, step and question
        cols[0].markdown(f"Class **{code}** — following the lecturer")
        cols[1].button("Detach", key="class_detach", on_click=_detach, width="stretch",
                       help="Explore on your own; Rejoin brings you back to the lecturer's step.")

    with st.container(key=fl.FOLLOW_BOX_KEY):   # kept when a phone hides the page's controls (below)
        status()
        if not detached and state is not None and marker:
            _question_card(code)
    if not detached:
        st.html(fl.phone_follow_css())


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
                                 (f" · {share:.0%} of the class got it right" if share is not None else ""))
                # green for a right answer only; a wrong or missing one is told without the colour of success
                (st.success if right else st.info)(text)
                return
            value = None
            if q.kind == "choice":
                for i, choice in enumerate(q.choices):
                    if i % 2 == 0:   # a row per pair: a phone stacks them in reading order
                        cols = st.columns(2)
                    if cols[i % 2].button(_label(choice), key=f"class_choice_{q.qid}_{i}", width="stretch",
                                          type="primary" if mine == choice else "secondary"):
                        value = choice
            else:
                with st.form(f"class_answer_{q.qid}", border=False):
                    typed = st.text_input("Your answer", key=f"class_typed_{q.qid}", max_chars=64)
                    if st.form_submit_button("Send", type="primary", width="stretch"):
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
