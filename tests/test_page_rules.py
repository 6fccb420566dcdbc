"""Pages hold widgets and layout only: read every file of app/ (its AST, nothing runs) for what belongs in
explorer/ modules instead."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
FILES = sorted(APP.rglob("*.py"))
LOGIC_PACKAGES = ("engine", "sentiment", "explorer.explain")   # reached through the explorer's page modules


def _logic(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in LOGIC_PACKAGES)


def _imported_packages(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _direct_tables(tree: ast.AST) -> list[int]:
    """Lines calling Streamlit's table or dataframe (``st.table(df)``, ``cols[0].dataframe(df)``) with data."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("table", "dataframe")
            and (node.args or any(k.arg == "data" for k in node.keywords))]


def test_the_walk_sees_every_page():
    assert APP / "Home.py" in FILES and len([f for f in FILES if f.parent.name == "pages"]) >= 13


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(APP)))
def test_no_page_imports_engine_or_sentiment(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"line {line}: {name}" for line, name in _imported_packages(tree)
           if _logic(name)]
    assert not bad, f"{path.name} imports {bad}: move that logic into an explorer/ module"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(APP)))
def test_every_table_goes_through_the_kit(path):
    lines = _direct_tables(ast.parse(path.read_text(encoding="utf-8")))
    assert not lines, f"{path.name} lines {lines}: use explorer.kit.widgets.show_table"


def test_the_checks_can_fail():
    """The walkers find what they look for (else the tests above would pass on anything)."""
    tree = ast.parse("import engine\nfrom sentiment.data import x\nfrom explorer.explain import y\nimport numpy\n"
                     "st.table(df)\ncols[1].dataframe(data=df)\njob.table()\n")
    names = [n for _, n in _imported_packages(tree) if _logic(n)]
    assert names == ["engine", "sentiment.data", "explorer.explain"]
    assert _direct_tables(tree) == [5, 6]


def test_no_page_summary_gives_away_the_answer_the_class_judges():
    """Home's cards are the pages' summaries: the card of an exercise's page asks, it does not answer (the card
    of Backprop orders once said breadth-first 'passes x̄1 on too early and a contribution is lost', exercise
    6's answer)."""
    from explorer.kit.pages import discover_pages
    summaries = {p.path.stem: p.summary for p in discover_pages(Path(__file__).resolve().parents[1] / "app" / "pages")}
    card = summaries["5_Backprop_orders"]
    assert card and not any(w in card.lower() for w in ("too early", "is lost", "broken", "wrong on"))
