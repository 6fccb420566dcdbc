"""Following the lecturer, as plain data: which page a followed state names, what it sets in a student's
session, the join link and its QR code, and the lecturer's histogram. No Streamlit here (the widgets
are in :mod:`explorer.kit.class_widgets`).

A page is named by its file name without the number (``4_Topological_sort.py`` -> ``Topological_sort``,
the path Streamlit serves it at), so renumbering the pages changes nothing in a class.
"""
from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlencode

from .broker import FollowState, Tally

HOME = "Home"
JOIN_PARAM = "join"             # ?join=CODE on any page joins the class (the code is public; no secret)
QUESTION_PARAM = "_q"           # in a followed state: "<qid>" or "<qid>r" (revealed); pages ignore it
_PAGE_FILE = re.compile(r"^(?:\d+_)?(?P<name>[A-Za-z0-9_]+)\.py$")


def page_id(script_path: str | Path) -> str:
    """The page a script is: ``.../pages/5_Backprop_orders.py`` -> ``Backprop_orders``; ``Home.py`` -> ``Home``."""
    m = _PAGE_FILE.match(Path(script_path).name)
    if not m:
        raise ValueError(f"{Path(script_path).name!r} is not a page file")
    return m.group("name")


def page_script(app_dir: Path, page: str) -> str | None:
    """The path ``st.switch_page`` wants (relative to the app's folder) for page ``page``; None if no such page."""
    if page == HOME:
        return "Home.py" if (app_dir / "Home.py").is_file() else None
    pages = app_dir / "pages"
    if not pages.is_dir() or not re.fullmatch(r"[A-Za-z0-9_]+", page):
        return None
    for path in sorted(pages.iterdir()):
        m = _PAGE_FILE.match(path.name)
        if m and m.group("name") == page:
            return f"pages/{path.name}"
    return None


def shared_params(params: Mapping[str, str]) -> dict[str, str]:
    """What of a lecturer's link the class follows: everything but presentation mode (a student's phone
    is not a projector)."""
    return {k: v for k, v in params.items() if k != "present"}


FOLLOW_BOX_KEY = "class_follow"  # the container of the student's status line and question card
# the page's own controls (Streamlit's widget classes): on a phone a following student cannot use them (the
# lecturer's step overrides them) and they pushed the graph several screens down
PAGE_CONTROLS = ("stTextInput", "stTextArea", "stSelectbox", "stMultiSelect", "stNumberInput", "stSlider",
                 "stRadio", "stCheckbox", "stButton", "stDownloadButton", "stLinkButton", "stToggle",
                 "stSelectSlider")


# what a column shows the class (kept even when it also holds a control)
CLASS_CONTENT = ("stMarkdown", "stPlotlyChart", "stVegaLiteChart", "stImage", "stGraphVizChart", "stDataFrame",
                 "stTable", "stCode", "stHtml", "stAlert", "stMetric", "stTabs", "stExpander", "stLatex")


def follow_css() -> str:
    """A ``<style>`` block for a following student: the main area shows the class's view (the step, its caption,
    the figures, the question card) without the page's controls, which come back with Detach (the block is only
    sent while following); the sync button that ``follow.js`` clicks is never shown."""
    controls = ", ".join(f".{c}" for c in PAGE_CONTROLS)
    content = ", ".join(f".{c}" for c in CLASS_CONTENT)
    # a column of controls only goes as a whole (its empty box and gap stayed: a phone stacks columns)
    return ("<style>[data-testid=\"stMain\"] "
            ".stElementContainer:has(:is(%s)):not(.st-key-%s *), "
            "[data-testid=\"stMain\"] [data-testid=\"stColumn\"]:has(:is(%s)):not(:has(:is(%s))):not(.st-key-%s *), "
            ".st-key-class_sync { display: none !important; } "
            "#adx-follow .adx-follow-row { display: flex; gap: 1rem; align-items: flex-start; } "
            "#adx-follow .adx-follow-plot { width: 100%%; } "
            "#adx-follow .adx-follow-status:empty { display: none; }</style>"
            % (controls, FOLLOW_BOX_KEY, controls, content, FOLLOW_BOX_KEY))


_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_token(text: str) -> bool:
    """Whether ``text`` is a student id or secret as this app makes them (``secrets.token_urlsafe``)."""
    return bool(_TOKEN.match(str(text)))


def cookie_text(name: str, value: str, max_age_s: int) -> str:
    """A ``document.cookie`` assignment for the whole app (``max_age_s`` 0 forgets it); only codes and tokens."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]*", value) or not re.fullmatch(r"[a-z_]+", name):
        raise ValueError("a class cookie holds a code and a token only")
    return f"{name}={value}; path=/; max-age={int(max_age_s)}; samesite=strict"


def lead_link(base_url: str, code: str, secret: str) -> str:
    """The lecturer's private link: opens the app as this class's lecturer (any replica, any device)."""
    return base_url.split("?")[0].rstrip("/") + "/?" + urlencode({"lead": f"{code}.{secret}"})


def _script_version() -> str:
    """A digest of follow.js: browsers keep it a day (its route's cache header), a new one is a new address."""
    global _SCRIPT_VERSION
    if _SCRIPT_VERSION is None:
        import hashlib
        _SCRIPT_VERSION = hashlib.sha256((Path(__file__).with_name("static") / "follow.js").read_bytes()).hexdigest()[:12]
    return _SCRIPT_VERSION


_SCRIPT_VERSION: str | None = None


def follow_html(code: str, page: str, question: str, since: int) -> str:
    """The follower's view: a box that ``follow.js`` fills with the lecturer's step and keeps current. ``since``:
    the version this run already shows (-1 where the view is drawn by the script: at once)."""
    attrs = " ".join(f'data-{k}="{html.escape(str(v), quote=True)}"'
                     for k, v in (("code", code), ("page", page), ("question", question), ("since", since)))
    return (f'<div id="adx-follow" {attrs}><div class="adx-follow-status"></div>'
            f'<div class="adx-follow-view"></div></div>'
            # a new script text for every state (Streamlit runs a script element again only when it changes)
            f'<script>/* {html.escape(code)} {int(since)} {html.escape(question)} */ (() => {{'
            "const s = document.createElement('script');"
            f"s.src = new URL('.', window.location.href).href + 'class/static/follow.js?v={_script_version()}';"
            "document.head.appendChild(s); })();</script>")


def question_marker(qid: int | None, revealed: bool = False) -> str:
    """The :data:`QUESTION_PARAM` value for the question on screen ("" for none)."""
    return "" if qid is None else f"{int(qid)}{'r' if revealed else ''}"


def with_question(params: Mapping[str, str], marker: str) -> dict[str, str]:
    """``params`` with the question marker set (or removed when ``marker`` is empty)."""
    out = {k: v for k, v in params.items() if k != QUESTION_PARAM}
    if marker:
        out[QUESTION_PARAM] = marker
    return out


@dataclass(frozen=True)
class Apply:
    """What a followed state does to a student's session on this page."""
    switch_to: str | None           # another page's name: go there first (nothing is set here)
    values: dict[str, Any]          # the page's state names (un-namespaced) -> values: link fields and other defaults
    problems: list[str]             # link parameters that did not decode (ignored)


def follow_apply(state: FollowState, here: str, schema, defaults: Mapping[str, Any],
                 link_to_state: Mapping[str, str] | None = None) -> Apply:
    """What to do with the lecturer's ``state`` on page ``here`` (see :class:`Apply`).

    Every link field is set (a field left out of the link is at its default), and the page's other state
    goes back to its defaults, as on a deep link's first load: a page that resets its step when the
    program changes sees no change of program.
    Args:
        schema: the page's :class:`explorer.kit.deeplink.LinkSchema`.
        defaults: the page's session defaults (un-namespaced).
        link_to_state: which state name each link field fills (default: the same name).
    """
    if state.page != here:
        return Apply(state.page, {}, [])
    mapping = dict(link_to_state or {})
    given, problems = schema.decode(shared_params(state.params), fill_defaults=True)
    values: dict[str, Any] = {}
    filled = set()
    for name, value in given.items():
        if name == "present":
            continue
        target = mapping.get(name, name)
        values[target] = value
        filled.add(target)
    for name, value in defaults.items():
        if name not in filled:
            values[name] = value
    return Apply(None, values, problems)


def join_link(base_url: str, code: str) -> str:
    """The students' link: the app's address with ``?join=CODE`` (the lecturer's secret is never in it)."""
    return base_url.split("?")[0].rstrip("/") + "/?" + urlencode({JOIN_PARAM: code})


def app_base_url(page_url: str) -> str:
    """The app's root address from the address of any of its pages (``http://h:8501/Backprop_orders?x=1``
    -> ``http://h:8501``)."""
    from urllib.parse import urlsplit
    parts = urlsplit(page_url)
    path = parts.path.rstrip("/")
    if "/" in path.strip("/"):          # served under a prefix: keep it, drop the page
        path = path.rsplit("/", 1)[0]
    elif path:
        path = ""
    return f"{parts.scheme}://{parts.netloc}{path}"


def qr_svg(text: str, scale: int = 6) -> str:
    """``text`` as a QR code, an SVG document (drawn locally by segno; no network)."""
    import segno
    buf = io.BytesIO()
    segno.make(text, error="m").save(buf, kind="svg", scale=scale, xmldecl=False, svgns=True, border=2,
                                     dark="#000", light="#fff")
    return buf.getvalue().decode("ascii")


def histogram_rows(tally: Tally, choices: tuple[str, ...] = (), is_right=None) -> list[dict[str, Any]]:
    """The lecturer's histogram as rows ``{"answer", "count", "share", "right"}``: every choice (zero
    counts too) in order, or the numbers given, most frequent first; never who answered."""
    order = list(choices) + [v for v in tally.histogram if v not in choices]
    rows = []
    for v in order:
        n = tally.histogram.get(v, 0)
        rows.append({"answer": v, "count": n, "share": n / tally.count if tally.count else 0.0,
                     "right": None if is_right is None else bool(is_right(v))})
    return rows


def right_share(tally: Tally) -> float | None:
    """The share of answers that were right (after the reveal), or None."""
    if tally.right is None or tally.count == 0:
        return None
    return tally.right / tally.count
