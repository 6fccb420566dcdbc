"""Find the app's pages (``app/pages/N_Title_words.py``) without running them, for the Home page, and the engine's
backends on this machine (pages import no ``engine`` themselves)."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import engine
from explorer.explain.parser import parse_python

def available_backends() -> list[str]:
    """The engine's backends this machine can run (numpy and python always; cuda with CuPy and a GPU)."""
    return engine.available_backends()


_PAGE = re.compile(r"^(?P<num>\d+)_(?P<name>[A-Za-z0-9_]+)\.py$")


@dataclass(frozen=True)
class PageInfo:
    path: Path          # the file
    number: int         # the N_ prefix (sort order)
    url_path: str       # what Streamlit serves it at: "Expression_explorer"
    title: str          # "Expression explorer"
    summary: str        # first line of the module docstring ("" if none)

    def relative_to_app(self, app_dir: Path) -> str:
        """The path st.page_link wants (relative to the main script's folder)."""
        return self.path.relative_to(app_dir).as_posix()


def discover_pages(pages_dir: Path) -> list[PageInfo]:
    """Every ``N_Name.py`` in ``pages_dir`` sorted by number then name; the docstring is read, not run."""
    found: list[PageInfo] = []
    if not pages_dir.is_dir():
        return found
    for path in pages_dir.iterdir():
        m = _PAGE.match(path.name)
        if not m or not path.is_file():
            continue
        name = m.group("name")
        found.append(PageInfo(path=path, number=int(m.group("num")), url_path=name,
                              title=name.replace("_", " ").strip(), summary=_summary(path)))
    found.sort(key=lambda p: (p.number, p.url_path))
    return found


def _summary(path: Path) -> str:
    try:
        doc = ast.get_docstring(parse_python(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    if not doc:
        return ""
    para = doc.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in para.splitlines())
