"""Shared Streamlit pieces for the pages: page setup (presentation mode + deep links) and stepping controls.

Pages call :func:`start_page` first, build their state, call :func:`stepper` where a stepper is shown
(the step-dependent part of the page is drawn inside it), and :func:`publish_link` so the URL always
describes what is on screen.

**A click acts on what its button showed when it was drawn.** Streamlit runs a button's callback a second time
when the run the click started is interrupted by another request (a poll of one of the page's fragments, Play's
timer) before the script draws the buttons again. A callback written as "one more than now" or as a toggle then
acts twice for one click: Step took two steps, Play toggled on and off again (the page stood still), PageUp went
back two exercises, Start training stopped the run it had just started. So every callback of the app takes, as its
arguments, what the button showed (the step to go to, ``play=True`` for "Play", the run number it was drawn with)
and does nothing the second time. Each page's buttons say "(drawn intent)" where they rely on it.
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
import sys
import time
from typing import Any, Callable

import numpy as np
import streamlit as st

from explorer.explain.parser import allowed_text

from explorer.classroom.follow import JOIN_PARAM

from ..student_code.optin import server_notes
from . import class_widgets, fixed, priority, rate_limit
from .budget import RUN_PRIORITY, is_deadline
from .deeplink import LinkField, LinkSchema
from .figures import PrebuiltFigure, static_frame, still_graph  # noqa: F401 (the pages import it from here)
from .formatting import md_escape
from .plotly_figure import LINE_H
from .presentation import (CLICKER_SCRIPT, NAV_CSS, NAV_KEY, Look, css, look, neighbours, readable_dot,
                           readable_figure)
from .state import DEFAULT_SPEED, SPEEDS, Namespace, PlayState, clamp_step, play_interval, play_tick, start_playing
from explorer.explain.numbers import count, plain

PRESENT_KEY = "presenting"  # plain (non-widget) key shared by all pages
PRESENT_FIELD = LinkField("bool", False)
LINKED = "_linked"  # per page: the link fields given in the URL, until a range check has used them


@dataclass
class PageContext:
    ns: Namespace
    schema: LinkSchema
    look: Look
    link_problems: list[str]        # Markdown-safe (the link's text escaped): pages show them with st.warning
    persist: tuple[str, ...] = ()
    page: str = ""                  # the page's name (its file name without the number): what a class follows


def _saved(ns: Namespace, name: str) -> str:
    # a plain (non-widget) copy: Streamlit drops a widget's state when a page without it runs
    return ns.key("_saved_" + name)


@st.cache_resource(show_spinner=False)
def _print_server_notes() -> bool:
    """Once per server process, when the first page runs (Streamlit runs no app code before a session opens
    one; without ``--server.headless`` it opens the browser at start): what the operator must know about how
    the server was started (:func:`explorer.student_code.optin.server_notes`), on its standard error."""
    for line in server_notes():
        print(line, file=sys.stderr, flush=True)
    return True


def start_page(title: str, prefix: str, fields: dict[str, LinkField], defaults: dict[str, Any],
               link_to_state: dict[str, str] | None = None) -> PageContext:
    """Set up a page: page config, presentation mode, deep-link state, and the title.

    Args:
        title: page title.
        prefix: session-state namespace of the page (``explorer`` -> keys ``explorer_*``).
        fields: the page's deep-link fields (``present`` is added for every page).
        defaults: initial session-state values of the page (namespaced keys are made here).
        link_to_state: which state name each link field fills (default: the same name).
    On the first run of the page in a session, the URL's query parameters override the defaults;
    after that the session state is the truth and the URL follows it (see :func:`publish_link`).
    """
    st.set_page_config(page_title=f"{title} · Autodiff Explorer", layout="wide")
    _print_server_notes()
    fixed.start()   # the process's fixed figures, in the background from the first page run on (once)
    ns = Namespace(prefix)
    schema = LinkSchema({**fields, "present": PRESENT_FIELD})
    problems: list[str] = []
    for name in defaults:  # coming back from another page: restore what the widgets held
        if ns.key(name) not in st.session_state and _saved(ns, name) in st.session_state:
            st.session_state[ns.key(name)] = st.session_state[_saved(ns, name)]
    first = ns.key("_ready") not in st.session_state
    if first:
        given, problems = schema.decode(st.query_params.to_dict(), fill_defaults=False)
        mapping = link_to_state or {}
        initial = dict(defaults)
        for name, value in given.items():
            if name != "present":
                initial[mapping.get(name, name)] = value
        ns.setdefaults(st.session_state, initial)
        st.session_state[ns.key(LINKED)] = [name for name in given if name != "present"]
        problems = [md_escape(p) for p in problems]  # they quote the link's own text
        if "present" in given:
            st.session_state[PRESENT_KEY] = given["present"]
    else:
        ns.setdefaults(st.session_state, defaults)
    page, app_dir = class_widgets.caller_page(2)
    limits = _limits()
    client = rate_limit.client_key(getattr(st.context, "ip_address", None), dict(st.context.headers or {}))
    join_wait = _join_allowed(limits, client)
    st.session_state[class_widgets.CLIENT] = client     # who starts a class (its per-client limit)
    # a class's student: the lecturer's page and parameters, set before any widget exists
    followed = st.session_state.get(class_widgets.APPLIED)
    class_widgets.follow_before_widgets(schema, ns, defaults, link_to_state, page, app_dir)
    followed = st.session_state.get(class_widgets.APPLIED) != followed
    # a class's page (the lecturer's, a follower's) computes before page opens and background work
    st.session_state[RUN_PRIORITY] = (priority.STEP if class_widgets.in_class() else priority.OPEN)
    by_timer = st.session_state.pop(TIMER_RUN, False)
    answering = st.session_state.pop(class_widgets.ANSWER_RUN, False)   # an answer is never lost to a limit
    _limit_runs(limits, client, title, asked=not followed and not by_timer and not answering)
    if join_wait:
        st.error(f"**Too many attempts to join a class from your network** — wait "
                 f"{rate_limit.wait_text(join_wait)}, then open the join link again.", icon="🚫")
    st.session_state.setdefault(PRESENT_KEY, False)
    lk = look(bool(st.session_state[PRESENT_KEY]))
    st.html(css(lk))
    if lk.presenting:
        presentation_nav(page, app_dir)
    st.title(title)
    class_widgets.class_panel(page, schema)
    if not fields:   # a page without a link (Home) publishes here: publish_link is not called
        class_widgets.publish(page, {})
    return PageContext(ns=ns, schema=schema, look=lk, link_problems=problems, persist=tuple(defaults), page=page)


def progress_poll(fn: Callable[[], None]) -> Callable[[], None]:
    """For a fragment that polls work going on elsewhere (a training's progress): each poll draws as background
    work of the process's priority gate (:mod:`explorer.kit.priority`), so it waits while a Step or a page open
    computes; a class's poll (the lecturer's training on the projector) is a step's and never waits. Use it
    under ``@st.fragment(run_every=...)``."""
    @functools.wraps(fn)
    def poll() -> None:
        level = priority.STEP if class_widgets.in_class() else priority.BACKGROUND
        with priority.gate().enter(level):
            fn()
    return poll


FIXED_POLL_S = 2.0   # how often a page whose fixed figure is not ready looks again


def fixed_figure(name: str, what: str, where=None) -> Any | None:
    """The process's fixed figure ``name`` (:mod:`explorer.kit.fixed`), or None after one line (in ``where``)
    saying that ``what`` is still computing, or failed and is computed again. While it is not ready, a timer
    looks every :data:`FIXED_POLL_S` and reruns the page once it is; the rest of the page is drawn meanwhile."""
    value = fixed.get(name)
    if not isinstance(value, fixed.Pending):
        return value
    (where or st).caption(md_escape(value.message(what)))

    @st.fragment(run_every=FIXED_POLL_S)
    def wait_for_it() -> None:
        if not isinstance(fixed.get(name), fixed.Pending):
            st.session_state[TIMER_RUN] = True   # not a run the session asked for (see _limit_runs)
            st.rerun()

    wait_for_it()
    return None


TIMER_RUN = "_run_by_timer"   # set by Play's timer before the run it asks for (a run the session did not ask for)
SESSION_RUNS_KEY = "_page_runs"   # the session's bucket of page runs (kit/rate_limit.Bucket)


@st.cache_resource(show_spinner=False)
def _limits() -> dict[str, rate_limit.RateLimiter]:
    """The server process's client buckets (``kit/rate_limit``): page runs and ``?join=`` links, per client."""
    return {"runs": rate_limit.RateLimiter(rate_limit.CLIENT_RUNS),
            "joins": rate_limit.RateLimiter(rate_limit.CLIENT_JOINS)}


def _join_allowed(limits: dict, client: str) -> float:
    """A ``?join=`` link counts against its client's joins (:data:`rate_limit.CLIENT_JOINS`); over them, the link
    is dropped before it is tried and the seconds to wait are returned (0.0: it goes on)."""
    if not st.query_params.get(JOIN_PARAM) or client == rate_limit.LOCAL:
        return 0.0
    wait = limits["joins"].take(client, time.monotonic())
    if wait:
        del st.query_params[JOIN_PARAM]
    return wait


def _limit_runs(limits: dict, client: str, title: str, asked: bool) -> None:
    """A page run the session asked for counts against the session's and its client's runs (``kit/rate_limit``:
    30 at once, then one a second per session; 400, then ten a second per client); over them, the page says how long to
    wait, runs again by itself then, and stops here, before any work. Runs started by Play's timer or by following
    the lecturer are paced by them and not counted, nor those of this machine's own browser (no address)."""
    if not asked or client == rate_limit.LOCAL:
        return
    now = time.monotonic()
    bucket, wait = rate_limit.take(st.session_state.get(SESSION_RUNS_KEY), rate_limit.SESSION_RUNS, now)
    if not wait:
        wait = limits["runs"].take(client, now)
    if not wait:
        st.session_state[SESSION_RUNS_KEY] = bucket
        return
    st.title(title)
    st.warning(f"This page was asked to run again and again, faster than the server runs pages for one visitor: "
               f"it goes on by itself in {rate_limit.wait_text(wait)}.", icon="⏳")

    @st.fragment(run_every=max(wait, 0.5))
    def resume() -> None:
        st.rerun()   # a full run, counted as the session's: by now it has a run to spend

    resume()
    st.stop()


def clamp_linked(ns: Namespace, name: str, value, lo, hi, where=None, quiet: bool = False):
    """``value`` clamped to ``[lo, hi]``; when it came from the page's link and was out of range, a warning
    says so (once: a later rerun clamps silently, e.g. after the user changed something), unless ``quiet``."""
    clamped = min(max(value, lo), hi)
    linked = st.session_state.get(ns.key(LINKED)) or []
    if name in linked:
        st.session_state[ns.key(LINKED)] = [n for n in linked if n != name]
        if clamped != value and not quiet:
            (where or st).warning(md_escape(f"link parameter '{name}' ignored: {value} is outside {lo} to {hi} "
                                            f"here; showing {clamped}"))
    return clamped


def presentation_nav(page: str, app_dir) -> None:
    """Presentation mode's way through a lecture without leaving it: Previous / Home / Next page links at the
    right end of the title's row (they scroll away with it: pinned to the screen they covered what scrolled beneath), and the clicker's keys (:data:`~explorer.kit.presentation.CLICKER_SCRIPT`:
    PageDown / space step the page's stepper, and at its last step open the next page)."""
    from streamlit.errors import StreamlitPageNotFoundError
    before, after = neighbours(app_dir, page)
    links = [(before, "Previous", ":material/chevron_left:"),
             (("Home", "Home.py") if page != "Home" else None, "Home", ":material/home:"),
             (after, "Next", ":material/chevron_right:")]
    with st.container(key=NAV_KEY, horizontal=True):
        for target, label, icon in links:
            if target is None:
                continue
            try:   # a page link keeps the session (the class, the programs typed)
                st.page_link(target[1], label=label, icon=icon, query_params={"present": "1"})
            except StreamlitPageNotFoundError:   # a page run on its own (not under Home.py): a plain link
                st.markdown(f"[{label}](./{'' if target[0] == 'Home' else target[0]}?present=1)")
        # inside the pinned box: outside it each would take a row (and its gap) above the title
        st.html(NAV_CSS)
        st.html(CLICKER_SCRIPT, unsafe_allow_javascript=True)


def presentation_toggle(where=None) -> bool:
    """A toggle for presentation mode (state shared by every page)."""
    where = where or st
    key = "presenting_toggle"

    def _sync():
        st.session_state[PRESENT_KEY] = st.session_state[key]

    st.session_state[key] = bool(st.session_state.get(PRESENT_KEY, False))
    where.toggle("Presentation mode", key=key, on_change=_sync,
                 help="Large fonts and nodes, no sidebar or toolbar: for a projector. Also ?present=1 in the URL.")
    return bool(st.session_state[PRESENT_KEY])


OWN_PROGRAM = "(your own program)"


def preset_picker(ns: Namespace, where=None) -> None:
    """A "Preset" selectbox over :mod:`explorer.kit.presets` that fills the page's ``expr`` and ``at`` boxes.

    It shows the preset whose text is in the boxes (so a deep link shows its preset selected), and a
    pick also sends the page's ``step`` (where it has one) back to 0.
    """
    from . import presets

    where = where or st
    key = ns.key("preset")

    def _load():
        p = presets.find_preset(st.session_state[key])
        if p is not None:
            st.session_state[ns.key("expr")] = p.program
            st.session_state[ns.key("at")] = p.inputs
            if ns.key("step") in st.session_state:
                st.session_state[ns.key("step")] = 1
                st.session_state[ns.key("step_playing")] = False
        release_focus_next_run()

    st.session_state[key] = presets.matching_preset(
        st.session_state[ns.key("expr")], st.session_state[ns.key("at")]) or OWN_PROGRAM
    where.selectbox("Preset", [OWN_PROGRAM, *presets.preset_labels()], key=key, on_change=_load)
    release_focus()


_RELEASE_KEY = "_release_focus"  # plain key shared by all pages: a counter, so each release is a new script


def release_focus_next_run() -> None:
    """Ask :func:`release_focus` to take the keyboard focus off the widget just used (call from a callback)."""
    st.session_state[_RELEASE_KEY] = int(st.session_state.get(_RELEASE_KEY, 0)) + 1


def release_focus() -> None:
    """Blur the focused widget when a callback asked for it, so the step keys work at once.

    A choice in a select box leaves the keyboard focus in the box, where the arrow keys move through
    its options instead of stepping; after a preset is chosen the page should step on Left / Right at
    once, without a click on the page first.
    """
    n = int(st.session_state.get(_RELEASE_KEY, 0))
    if n and st.session_state.get(_RELEASE_KEY + "_done") != n:
        st.session_state[_RELEASE_KEY + "_done"] = n
        st.html(f"<script>/* release {n} */ (() => {{ const el = document.activeElement;"
                " if (el && el !== document.body && el.blur) el.blur(); })();</script>",
                unsafe_allow_javascript=True)


PROGRAM_HELP = f"Allowed: {allowed_text()}. Press Ctrl+Enter to run."  # the engine's declared functions
INPUTS_HELP = "name = value, separated by commas or lines; values are numbers or lists like [[1, 2], [3, 4]]"


def program_boxes(ns: Namespace, height: int = 100, *, lk: Look | None = None, where=None,
                  program_label: str = "Program"):
    """The page's "Program" and "Inputs" boxes side by side (session keys ``expr`` and ``at``).

    In presentation mode the boxes fold into an expander (in ``where``, default the page) whose title is
    the program itself, so that the graph, its caption and the step buttons fit one 1080p screen.
    Returns ``(program_box, inputs_box, program_text, inputs_text)``; the boxes are the containers that
    :func:`show_input_problem` writes a rejection under (outside the expander, so it is never hidden).
    """
    program_text, inputs_text = st.session_state[ns.key("expr")], st.session_state[ns.key("at")]
    if lk is not None and lk.presenting:  # (``where`` is the presentation row's slot for the expander)
        where = where or st
        lines = [ln.strip() for ln in program_text.strip().splitlines() if ln.strip()]
        shown = " · ".join(lines[:3]) + (" · …" if len(lines) > 3 else "")
        title = f"{shown}  |  {inputs_text.strip()}" if shown else "Program and inputs"
        with where.expander(_plain_label(title, 110), expanded=False):
            a, b = st.columns([3, 2])
            a.text_area(program_label, key=ns.key("expr"), height=height, help=PROGRAM_HELP)
            b.text_area("Inputs", key=ns.key("at"), height=height, help=INPUTS_HELP)
        problem_row = st.columns([3, 2])
        return problem_row[0], problem_row[1], program_text, inputs_text
    program_box, inputs_box = st.columns([3, 2])
    program_box.text_area(program_label, key=ns.key("expr"), height=height, help=PROGRAM_HELP)
    inputs_box.text_area("Inputs", key=ns.key("at"), height=height, help=INPUTS_HELP)
    return program_box, inputs_box, program_text, inputs_text


def _plain_label(text: str, limit: int) -> str:
    """User text as a widget label: one line, Markdown characters escaped, at most ``limit`` characters."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    for ch in "\\`*_[]<>#|~$":
        text = text.replace(ch, "\\" + ch)
    return text


def show_input_problem(problem, program_box, inputs_box, program_text: str, inputs_text: str) -> None:
    """The parser's message under the text box at fault, with the offending line and a ^ under the column.

    Args:
        problem: an :class:`explorer.kit.programs.InputProblem`.
        program_box, inputs_box: the containers (columns) that hold the program and the inputs boxes.
        program_text, inputs_text: what the boxes hold (for the caret line).
    """
    in_program = problem.where == "program"
    box = program_box if in_program else inputs_box
    if is_deadline(problem.error):   # the program is fine; the server was too busy to finish it in time
        box.warning(f"**Too expensive just now** — {md_escape(problem.error)}. Nothing was kept: the next run "
                    "(any click) tries again.", icon="⏳")
        return
    box.error(f"**{problem.where.capitalize()} not accepted** — {md_escape(problem.error)}", icon="🚫")
    caret = problem.caret(program_text if in_program else inputs_text)
    if caret:
        box.code(caret, language=None)


def publish_link(ctx: PageContext, state: dict[str, Any], view: Callable[[], Any] | None = None) -> dict[str, str]:
    """Write the page's shareable state into the URL (``st.query_params``); returns the parameters.

    Only what a link can give back is written: a value the link's reader would refuse (a program of 1 MB,
    longer than :data:`~explorer.kit.deeplink.MAX_PARAM_CHARS`) is left out of the URL, not written and then
    refused. Also keeps a plain copy of the page's session values, so they survive a visit to another page.
    ``view`` renders what a class sees of this state (a :class:`explorer.classroom.views.ClassView`), called only
    when this session teaches a class and the state changed: the students' browsers draw it without running the
    page.
    """
    for name in ctx.persist:
        if ctx.ns.key(name) in st.session_state:
            st.session_state[_saved(ctx.ns, name)] = st.session_state[ctx.ns.key(name)]
    params, _ = ctx.schema.readable(ctx.schema.encode({**state, "present": bool(st.session_state.get(PRESENT_KEY,
                                                                                                        False))}))
    current = {k: v for k, v in st.query_params.to_dict().items()}
    if current != params:
        st.query_params.from_dict(params)
    class_widgets.publish(ctx.page, params, view)   # a lecturer's class follows (only a change is sent)
    return params


def _speed_label(name: str) -> str:
    seconds = SPEEDS[name]
    return f"{name} ({plain(seconds)} s / step)"


def stepper(ns: Namespace, n_steps: int, draw: Callable[[int], None], *, name: str = "step",
            label: str = "Step", shortcuts: bool = True) -> None:
    """Step controls and everything that depends on the step, always in agreement.

    Buttons Start / Back / Play-Pause / Step / End (keys Home, Left, P, Right, End), a slider over
    steps ``1..n_steps`` and a speed choice sit above ``draw(step)``, which draws the header, caption,
    tables and graph of the 1-based ``step`` and publishes the page's link. The controls and ``draw``
    are one fragment: Start, Back, Step, End and the slider rerun only that
    fragment, so a Step re-sends the step's view and nothing of the rest of the page (its title,
    program boxes and the sections under the stepper). Everything ``draw`` shows must therefore
    depend only on the step and on what the page computed before calling :func:`stepper`; a widget
    inside ``draw`` whose value the rest of the page reads takes ``on_change=rerun_page``.

    Play is a timer on the server (a fragment with ``run_every``, outside the stepped fragment) that
    asks for a full run of the page whenever a step is due: header, caption, table, graph, slider and
    the URL are drawn by the same run, so they show the same step while it plays and wherever it stops.
    Play, Pause and a change of speed while playing rerun the whole page (the timer is started,
    stopped or re-timed there); a step button pressed while playing stops Play, and the timer's next
    tick reruns the page without itself. The step lives in ``st.session_state[ns.key(name)]``
    (1-based, as shown).
    """
    key, playing_key, moved_key, speed_key = (ns.key(name), ns.key(name + "_playing"), ns.key(name + "_moved"),
                                              ns.key("speed"))
    st.session_state.setdefault(playing_key, False)
    st.session_state.setdefault(moved_key, 0.0)
    if st.session_state.get(speed_key) not in SPEEDS:
        st.session_state[speed_key] = DEFAULT_SPEED
    seconds = SPEEDS[st.session_state[speed_key]]
    # a deep link's step: 0 was the first step of the 0-based links of old; beyond the last one is reported
    linked = st.session_state.get(key, 1)
    try:
        linked = int(linked)
    except (TypeError, ValueError):
        linked = 1
    # on a projector a step past the end is clamped quietly: the header's "Step 26 of 26" says where the walk is,
    # and a warning's box over the stepper pushed the graph off the first screen
    st.session_state[key] = clamp_linked(ns, name, max(linked, 1), 1, max(n_steps, 1),
                                         quiet=bool(st.session_state.get(PRESENT_KEY)))

    def current() -> PlayState:
        return PlayState(st.session_state.get(key, 1), bool(st.session_state[playing_key]),
                         float(st.session_state[moved_key]))

    state = play_tick(current(), n_steps, time.monotonic(), seconds)
    st.session_state[key], st.session_state[playing_key], st.session_state[moved_key] = \
        state.step, state.playing, state.last_move

    if state.playing:
        @st.fragment(run_every=play_interval(seconds))
        def play_clock() -> None:
            due = play_tick(current(), n_steps, time.monotonic(), SPEEDS[st.session_state[speed_key]])
            if due.step != st.session_state[key] or not due.playing:
                st.session_state[TIMER_RUN] = True   # paced by the timer: not a run the session asked for
                st.rerun()  # the whole page draws the next step (this fragment draws nothing)

        play_clock()
    wide = bool(st.session_state.get(PRESENT_KEY))

    @st.fragment
    def stepped() -> None:
        # what a Step reruns and re-sends: the controls and the step's view (see the docstring)
        step = _step_buttons(ns, n_steps, key, playing_key, moved_key, speed_key, label, shortcuts, wide=wide)
        # a step's view computes before page opens and background work (explorer.kit.priority), in a Step's
        # fragment run as in the page's full run (Play's, a class's)
        with priority.gate().enter(priority.STEP):
            draw(step)

    stepped()


def step_slider_key(key: str, step: int) -> str:
    """The key of a stepper's slider while it shows ``step`` (``key``: the stepper's state key)."""
    return f"{key}_slider_at_{step}"


def rerun_page() -> None:
    """A widget callback that reruns the whole page: for a widget inside a stepper's ``draw`` (a fragment)
    whose value the rest of the page reads (the graph's layout, a model built before the stepper)."""
    st.rerun()


def _step_buttons(ns: Namespace, n_steps: int, key: str, playing_key: str, moved_key: str, speed_key: str,
                  label: str, shortcuts: bool, wide: bool = False) -> int:
    # every control moves to a step named when it was drawn (Back: the step shown minus one): drawn intent (the
    # module's docstring); a relative move took two steps for one click (one Step in four on Backprop orders)
    shown = clamp_step(st.session_state.get(key, 1), n_steps)

    def _move(to: int):
        st.session_state[key] = clamp_step(to, n_steps)
        st.session_state[playing_key] = False  # a step button takes over from Play

    def _play_pause(play: bool):
        # drawn intent: what the button said ("Play": play), never "the opposite of now"
        if not play:
            st.session_state[playing_key] = False
        elif not st.session_state[playing_key]:
            state = start_playing(st.session_state[key], n_steps, time.monotonic())
            st.session_state[key], st.session_state[playing_key], st.session_state[moved_key] = \
                state.step, state.playing, state.last_move
        st.rerun()  # the whole page: Play's timer sits outside the stepped fragment

    def _speed_changed():
        if st.session_state[playing_key]:
            st.rerun()  # the timer ticks at a pace set by the speed: start it again at the new one

    playing = bool(st.session_state[playing_key])
    if wide:  # presentation mode at 1920 px: buttons, slider and speed on one row
        cols = st.columns([1.4, 1.3, 1.3, 1.3, 1.3, 3.0, 1.9], vertical_alignment="center")
    else:  # a 1400 px window with the sidebar: the buttons' labels and key hints need a row of their own
        cols = [*st.columns(5), *st.columns([4, 1.3], vertical_alignment="center")]
    keys = ("Home", "Left", "P", "Right", "End") if shortcuts else (None,) * 5
    # Material icons ship with Streamlit's own font, so they render on any machine (emoji may not). No tooltips:
    # the buttons show their key, and a tooltip stayed over the program box after every click on a projector
    cols[0].button("Start", key=key + "_first", on_click=_move, kwargs={"to": 1}, shortcut=keys[0],
                   icon=":material/first_page:", width="stretch")
    cols[1].button("Back", key=key + "_back", on_click=_move, kwargs={"to": shown - 1}, shortcut=keys[1],
                   icon=":material/chevron_left:", width="stretch")
    cols[2].button("Pause" if playing else "Play", key=key + "_play", on_click=_play_pause,
                   kwargs={"play": not playing}, shortcut=keys[2],
                   icon=":material/pause:" if playing else ":material/play_arrow:", width="stretch")
    cols[3].button("Step", key=key + "_fwd", on_click=_move, kwargs={"to": shown + 1}, shortcut=keys[3],
                   icon=":material/chevron_right:", icon_position="right", type="primary", width="stretch")
    cols[4].button("End", key=key + "_last", on_click=_move, kwargs={"to": n_steps}, shortcut=keys[4],
                   icon=":material/last_page:", icon_position="right", width="stretch")
    if n_steps > 1:
        # the slider is a new widget at every step (its key names the step it was drawn at), and it moves the
        # step only from the step it was drawn at: a value the browser sends for it after the step moved (a
        # poll of another fragment or Play's timer can carry the slider's old value, sent before the Step's
        # redraw arrived) is not a drag. As one widget, such a stale value read as a drag and took the step
        # back: a Step on Backprop orders, whose polls run while the page loads, was undone one time in four
        slider_key = step_slider_key(key, shown)

        def _slid():
            if not st.session_state[playing_key] and st.session_state[key] == shown:
                st.session_state[key] = clamp_step(st.session_state[slider_key], n_steps)

        cols[5].slider(label, 1, n_steps, value=shown, key=slider_key, label_visibility="collapsed",
                       on_change=_slid, disabled=playing, help="Drag to any step (Pause first while it plays)")
    else:
        cols[5].caption("one step only")
    cols[6].selectbox("Speed", list(SPEEDS), key=speed_key, format_func=_speed_label, on_change=_speed_changed,
                      label_visibility="collapsed", help="How fast Play moves from step to step")
    return int(st.session_state[key])


def show_plot(fig: Any, lk: Look, *, key: str, where=None, config: dict | None = None,
              theme: str | None = "streamlit") -> None:
    """``st.plotly_chart`` of a figure (``go.Figure``, figure dict or PrebuiltFigure) with every text of it
    readable in presentation mode (:func:`explorer.kit.presentation.readable_figure`)."""
    where = where or st
    if isinstance(fig, PrebuiltFigure):
        spec = fig.spec
    elif isinstance(fig, dict):
        spec = fig
    else:
        spec = fig.to_dict()
    where.plotly_chart(PrebuiltFigure(readable_figure(spec, lk)), key=key, theme=theme,
                       config={"displaylogo": False, **(config or {})})


PRESENT_TABLE_ROWS = 25


def show_table(data: Any, lk: Look, *, where=None, static: bool = False, hide_index: bool = True,
               **table_args) -> None:
    """Every table of the app: one a class can read.

    ``st.dataframe`` normally (``table_args`` go to it); ``static`` tables (a few rows of sentences or
    numbers whose cells should wrap) and every table in presentation mode are ``st.table`` (HTML, so it
    takes the large fonts; a dataframe is drawn on a canvas at a fixed size), cut in presentation mode to
    the first ``PRESENT_TABLE_ROWS`` rows with a note saying so. ``data``: rows (list of dicts), a
    DataFrame, a pyarrow Table or a pandas Styler (shown whole)."""
    import pandas as pd
    from pandas.io.formats.style import Styler

    where = where or st
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = yes_no(data)
    if not lk.presenting and not static:
        where.dataframe(data, hide_index=hide_index, **table_args)
        return
    if isinstance(data, Styler):
        where.table(data, hide_index=hide_index, **_table_only(table_args))
        return
    if hasattr(data, "num_rows") and hasattr(data, "slice"):
        # a pyarrow Table (explorer.expression_explorer.table_data: made once, kept in a page's cache) goes as it
        # is: the same bytes as its DataFrame, without converting it to pandas and back at every Step (that was
        # 30 % of a Step's server time on the Expression explorer)
        df, n_rows, head = data, data.num_rows, lambda t: t.slice(0, PRESENT_TABLE_ROWS)
    else:
        df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
        n_rows, head = len(df), lambda t: t.head(PRESENT_TABLE_ROWS)
    cut = lk.presenting and n_rows > PRESENT_TABLE_ROWS
    where.table(head(df) if cut else df, hide_index=hide_index, **_table_only(table_args))
    if cut:
        where.caption(f"The first {PRESENT_TABLE_ROWS} of {count(n_rows)} rows (all of them outside presentation mode).")


def yes_no(rows: list[dict]) -> list[dict]:
    """Rows with every True / False cell written "yes" / "no": one convention in every table (a dataframe
    drew ticks where an HTML table wrote "true")."""
    return [{k: ("yes" if v else "no") if isinstance(v, (bool, np.bool_)) else v for k, v in r.items()} for r in rows]


def _table_only(args: dict) -> dict:
    # width/height/column_config size a dataframe's canvas; an HTML table keeps its natural size
    return {k: v for k, v in args.items() if k in ("hide_header", "border")}


def show_dot(dot: str, lk: Look, *, where=None, **graphviz_args) -> None:
    """``st.graphviz_chart`` of DOT text, with text a class can read in presentation mode
    (:func:`explorer.kit.presentation.readable_dot`; the page's CSS keeps the chart at its natural size)."""
    (where or st).graphviz_chart(readable_dot(dot, lk), **graphviz_args)


PRESENT_PAGE_PX = 1848  # the page's width in presentation mode at 1920 px (1.5 rem of padding either side)


def graph_px(lk: Look, normal: int, share: float = 1.0, gap: int = 24) -> int:
    """The width (px at normal size) to lay a graph out for: ``normal`` outside presentation mode; in it,
    ``share`` of the presentation page (less a column gap) divided by the factor the graph is drawn larger."""
    if not lk.presenting:
        return normal
    from .figures import graph_scale
    return int((PRESENT_PAGE_PX * share - (gap if share < 1 else 0)) / graph_scale(lk))


SCREEN_BREAK_TEST_ID = "adx-screen-break"


def screen_break() -> None:
    """In presentation mode, what follows starts on the next screen: an empty block one screen tall, so that nothing
    of it shows half-cut at the first screen's bottom edge (a heading, a button or a caption cut in half under the
    key view reads as clipped from the back row). Nothing outside presentation mode."""
    if st.session_state.get(PRESENT_KEY):
        st.html(f"<div data-testid='{SCREEN_BREAK_TEST_ID}' style='height:100vh'></div>")


def walkthrough_download(ns: Namespace, build: Callable[[], str], file_name: str, n_frames: int,
                         what: str = "Every step above", note: str = "") -> None:
    """The stepped page's "Download this walk-through (HTML)" button (:mod:`explorer.kit.export_html`): ``build``
    makes the file only when clicked (a note instead when it is too big); over
    :data:`~explorer.kit.export_html.MAX_EXPORT_STEPS` steps a caption says why there is none. On a projector it
    and what follows start under the stepper's screen (:func:`screen_break`)."""
    from .export_html import MAX_EXPORT_STEPS, file_or_note
    screen_break()
    if n_frames > MAX_EXPORT_STEPS:
        st.caption(f"No walk-through download: {n_frames} steps (at most {MAX_EXPORT_STEPS}).")
        return
    st.download_button("Download this walk-through (HTML)", lambda: file_or_note(build), file_name=file_name,
                       mime="text/html", on_click="ignore", key=ns.key("walkthrough"),
                       help=f"{what} in one HTML file that opens without the app or a network: Step, Back, Play, "
                            f"the slider, and the arrow keys or PageDown / PageUp{note}.")
