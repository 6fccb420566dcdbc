"""Shared Streamlit pieces for the pages: page setup (presentation mode + deep links) and stepping controls.

Pages call :func:`start_page` first, build their state, call :func:`step_controls` where a stepper is
shown, and finally :func:`publish_link` so the URL always describes what is on screen.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from .deeplink import LinkField, LinkSchema
from .formatting import md_escape
from .presentation import Look, css, look
from .state import Namespace

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


def _saved(ns: Namespace, name: str) -> str:
    # a plain (non-widget) copy: Streamlit drops a widget's state when a page without it runs
    return ns.key("_saved_" + name)


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
    st.session_state.setdefault(PRESENT_KEY, False)
    lk = look(bool(st.session_state[PRESENT_KEY]))
    st.html(css(lk))
    st.title(title)
    return PageContext(ns=ns, schema=schema, look=lk, link_problems=problems, persist=tuple(defaults))


def clamp_linked(ns: Namespace, name: str, value, lo, hi, where=None):
    """``value`` clamped to ``[lo, hi]``; when it came from the page's link and was out of range, a warning
    says so (once: a later rerun clamps silently, e.g. after the user changed something)."""
    clamped = min(max(value, lo), hi)
    linked = st.session_state.get(ns.key(LINKED)) or []
    if name in linked:
        st.session_state[ns.key(LINKED)] = [n for n in linked if n != name]
        if clamped != value:
            (where or st).warning(md_escape(f"link parameter '{name}' ignored: {value} is outside {lo} to {hi} "
                                            f"here; showing {clamped}"))
    return clamped


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
                st.session_state[ns.key("step")] = 0

    st.session_state[key] = presets.matching_preset(
        st.session_state[ns.key("expr")], st.session_state[ns.key("at")]) or OWN_PROGRAM
    where.selectbox("Preset", [OWN_PROGRAM, *presets.preset_labels()], key=key, on_change=_load)


def program_boxes(ns: Namespace, height: int = 100):
    """The page's "Program" and "Inputs" boxes side by side (session keys ``expr`` and ``at``).

    Returns ``(program_box, inputs_box, program_text, inputs_text)``; the boxes are the columns
    that :func:`show_input_problem` writes a rejection under.
    """
    program_box, inputs_box = st.columns([3, 2])
    program_box.text_area("Program", key=ns.key("expr"), height=height)
    inputs_box.text_area("Inputs", key=ns.key("at"), height=height)
    return program_box, inputs_box, st.session_state[ns.key("expr")], st.session_state[ns.key("at")]


def show_input_problem(problem, program_box, inputs_box, program_text: str, inputs_text: str) -> None:
    """The parser's message under the text box at fault, with the offending line and a ^ under the column.

    Args:
        problem: an :class:`explorer.kit.programs.InputProblem`.
        program_box, inputs_box: the containers (columns) that hold the program and the inputs boxes.
        program_text, inputs_text: what the boxes hold (for the caret line).
    """
    in_program = problem.where == "program"
    box = program_box if in_program else inputs_box
    box.error(f"**{problem.where.capitalize()} not accepted** — {md_escape(problem.error)}", icon="🚫")
    caret = problem.caret(program_text if in_program else inputs_text)
    if caret:
        box.code(caret, language=None)


def publish_link(ctx: PageContext, state: dict[str, Any]) -> dict[str, str]:
    """Write the page's shareable state into the URL (``st.query_params``); returns the parameters.

    Also keeps a plain copy of the page's session values, so they survive a visit to another page.
    """
    for name in ctx.persist:
        if ctx.ns.key(name) in st.session_state:
            st.session_state[_saved(ctx.ns, name)] = st.session_state[ctx.ns.key(name)]
    params = ctx.schema.encode({**state, "present": bool(st.session_state.get(PRESENT_KEY, False))})
    current = {k: v for k, v in st.query_params.to_dict().items()}
    if current != params:
        st.query_params.from_dict(params)
    return params


def step_controls(ns: Namespace, n_frames: int, *, name: str = "step", shortcuts: bool = True,
                  label: str = "Step", where=None) -> int:
    """Large first/back/forward/last buttons (keyboard: Home, Left, Right, End) and a scrub slider.

    The step lives in ``st.session_state[ns.key(name)]``; returns it clamped to ``[0, n_frames-1]``.
    """
    where = where or st
    key = ns.key(name)
    last = max(n_frames - 1, 0)
    cur = st.session_state.get(key, 0)
    try:
        cur = int(cur)
    except (TypeError, ValueError):
        cur = 0
    st.session_state[key] = clamp_linked(ns, name, cur, 0, last)

    def _move(delta: int | None = None, to: int | None = None):
        s = int(st.session_state.get(key, 0))
        s = to if to is not None else s + (delta or 0)
        st.session_state[key] = min(max(s, 0), last)

    cols = where.columns([1.3, 1.1, 1.1, 1.3, 3.2])
    keys = ("Home", "Left", "Right", "End") if shortcuts else (None,) * 4
    # Material icons ship with Streamlit's own font, so they render on any machine (emoji may not)
    cols[0].button("Start", key=key + "_first", on_click=_move, kwargs={"to": 0}, shortcut=keys[0],
                   icon=":material/first_page:", width="stretch", help="Go to the first step (Home)")
    cols[1].button("Back", key=key + "_back", on_click=_move, kwargs={"delta": -1}, shortcut=keys[1],
                   icon=":material/chevron_left:", width="stretch", help="One step back (Left arrow)")
    cols[2].button("Step", key=key + "_fwd", on_click=_move, kwargs={"delta": 1}, shortcut=keys[2],
                   icon=":material/chevron_right:", icon_position="right", type="primary", width="stretch",
                   help="One step forward (Right arrow)")
    cols[3].button("End", key=key + "_last", on_click=_move, kwargs={"to": last}, shortcut=keys[3],
                   icon=":material/last_page:", icon_position="right", width="stretch",
                   help="Go to the last step (End)")
    if last > 0:
        cols[4].slider(label, 0, last, key=key, label_visibility="collapsed")
    else:
        cols[4].caption("one step only")
    return int(st.session_state[key])


def small_table(data, look, where=None) -> None:
    """A small table (a few rows): in presentation mode an HTML table, whose text the presentation CSS
    enlarges (``st.dataframe`` draws on a canvas at a fixed font size), else an interactive dataframe."""
    import pandas as pd
    where = where or st
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    if look.presenting:
        where.table(df.style.hide(axis="index").format(precision=4))
    else:
        where.dataframe(df, hide_index=True)
