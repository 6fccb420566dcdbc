"""What a newcomer reads first stays short and true: the README's length, its one line per page linking to that
page's section of docs/pages.md, links and anchors that exist, the picture, and every doc's commands known to
tools/check_doc_commands.py (which runs them)."""
from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    in_code = False
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _norm(title: str) -> str:
    return title.lower().replace("-", " ")


def test_the_readme_is_short_and_lists_every_page_in_one_line_linking_to_its_section():
    from explorer.kit.pages import discover_pages
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    pages = discover_pages(ROOT / "app" / "pages")
    items = re.findall(r"^(\d+)\. \[([^\]]+)\]\(docs/pages\.md#([\w-]+)\): (.+?)(?=^\d+\. |^$)", text, re.M | re.S)
    assert [int(n) for n, *_ in items] == [p.number for p in pages]
    anchors = _anchors(ROOT / "docs" / "pages.md")
    for (n, title, anchor, line), info in zip(items, pages):
        assert _norm(title) == _norm(info.title), (title, info.title)
        assert anchor == _slug(f"{n}. {title}") and anchor in anchors, anchor
        assert len(" ".join(line.split())) <= 200, line            # one line each


def test_links_between_the_docs_reach_files_and_headings_that_exist():
    for doc in [README, *DOC_PAGES]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'<img src="([^"]+)"', text):
            if re.match(r"https?://", target):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            assert path.exists(), f"{doc.name}: {target}"
            if anchor:
                assert anchor in _anchors(path), f"{doc.name}: {target}"


def test_the_readme_picture_is_a_small_png_of_the_explorer_at_1400_by_900():
    picture = ROOT / "docs" / "expression_explorer.png"
    assert '<img src="docs/expression_explorer.png"' in README.read_text(encoding="utf-8")
    head = picture.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1400, 900)
    assert picture.stat().st_size < 150_000


def test_every_doc_is_checked_and_every_command_in_it_is_known_to_the_checker():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import check_doc_commands as check
    finally:
        sys.path.remove(str(ROOT / "tools"))
    docs = {"README.md", "benchmarks/README.md"} | {p.relative_to(ROOT).as_posix() for p in DOC_PAGES}
    assert set(check.DOCS) == docs
    unknown = [c for c in check.all_documented() if c not in check.SHORT]
    assert unknown == []
    # the README's four commands: set-up (two), run, test
    readme = check.documented(README.read_text(encoding="utf-8"))
    assert readme[:4] == ["python3 -m venv .venv && . .venv/bin/activate",
                          "python3 -m pip install -r requirements.txt", "streamlit run app/Home.py",
                          "python3 -m pytest -q"]
