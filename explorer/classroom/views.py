"""The lecturer's view of a step, rendered once and relayed to every following student as plain data.

A follower's browser does not run the page: when the lecturer steps, each student's page receives a small
"version V" message (:mod:`explorer.classroom.web`) and fetches view V, which the lecturer's own page run
built once (:class:`ClassView`: the step's header, its figures as Plotly JSON, its code panel and tables as
HTML) and published with the state (``broker.publish(..., view=...)``). The server's work per follower and
step is therefore one small response, not a page run. No Streamlit here.

Text in a view is either produced by the engine and escaped here (Markdown headers are converted by
:func:`markdown_html`, which escapes first) or HTML that the page kit already escapes (the code panel).
Until the lecturer reveals a question, :func:`mask_answer` replaces its numeric answer wherever the view
shows it, so the question is never asked with its answer on the student's screen.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any
from explorer.explain.numbers import count

MAX_VIEW_CHARS = 1_500_000      # a view over this is not relayed (the followers' pages run the page instead)
MASK = "?"


@dataclass
class ClassView:
    """One step as a follower sees it: a header and a list of blocks, in the page's order.

    Block kinds: ``{"kind": "html", "html": ...}`` (escaped HTML), ``{"kind": "plot", "figure": {...}}``
    (a Plotly figure dict), ``{"kind": "row", "blocks": [...], "widths": [...]}`` (side by side) and
    ``{"kind": "column", "blocks": [...]}`` (one under the other).
    """
    page: str
    title: str
    header_html: str
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def add_markdown(self, text: str) -> None:
        self.blocks.append({"kind": "html", "html": markdown_html(text)})

    def add_html(self, trusted_html: str) -> None:
        """HTML the page kit built with every user string escaped (the code panel, a legend)."""
        self.blocks.append({"kind": "html", "html": trusted_html})

    def add_plot(self, figure: dict) -> None:
        self.blocks.append({"kind": "plot", "figure": figure})

    def add_row(self, blocks: list[dict[str, Any]], widths: list[float]) -> None:
        self.blocks.append({"kind": "row", "blocks": blocks, "widths": widths})

    def to_json(self) -> str:
        """The view as JSON (numpy arrays in figures become lists); raises ValueError over :data:`MAX_VIEW_CHARS`."""
        import plotly.io.json as pj
        text = pj.to_json_plotly({"page": self.page, "title": self.title, "header": self.header_html,
                                  "blocks": self.blocks})
        if len(text) > MAX_VIEW_CHARS:
            raise ValueError(f"the view is {count(len(text))} characters (at most {count(MAX_VIEW_CHARS)} are relayed)")
        return text


_INLINE = [(re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
           (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"),
           (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<i>\1</i>")]
_ESCAPED = re.compile(r"\\([\\`*_\[\]{}()#+\-.!|~$<>:])")


def _inline(text: str) -> str:
    # backslash escapes first (md_escape's output), kept out of the emphasis rules by a placeholder
    kept: list[str] = []

    def keep(m: re.Match) -> str:
        kept.append(m.group(1))
        return f"\x00{len(kept) - 1}\x00"

    out = html.escape(_ESCAPED.sub(keep, text), quote=False)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return re.sub("\x00(\\d+)\x00", lambda m: html.escape(kept[int(m.group(1))], quote=False), out)


def markdown_html(text: str) -> str:
    """The Markdown the pages write in step headers and captions (``#`` headings, ``**bold**``, ``*italic*``,
    ``code``, ``- `` lists, paragraphs) as HTML; everything else is escaped text, never markup."""
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in str(text).splitlines():
        stripped = line.strip()
        heading = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        if not stripped:
            flush()
        elif heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif re.match(r"^[-*]\s+", stripped):
            if para:
                flush()
            items.append(re.sub(r"^[-*]\s+", "", stripped))
        else:
            if items:
                flush()
            para.append(stripped)
    flush()
    return "".join(out)


def mask_answer(view: Any, answer: str) -> Any:
    """``view`` (a decoded view, or any JSON value) with every whole occurrence of the number ``answer`` in its
    strings replaced by :data:`MASK` (whole: no digit, point or exponent continues it on either side); numbers
    that are not text (a figure's coordinates) are left alone. So a question is not shown answered."""
    answer = str(answer).strip().lstrip("-−")
    if not answer:
        return view
    pattern = re.compile(r"(?<![\d.])[-−]?" + re.escape(answer) + r"(?![\d.]|[eE][-+]?\d)")

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return pattern.sub(MASK, x)
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    return walk(view)


def state_message(state, has_view: bool) -> dict[str, Any]:
    """What a follower's page polls for (:mod:`explorer.classroom.web`): the version, the page, the question on
    screen and whether a relayed view exists; never the lecturer's parameters (the view holds what is shown)."""
    return {"version": int(state.version), "page": state.page,
            "question": str(state.params.get("_q", "")), "view": bool(has_view)}


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
