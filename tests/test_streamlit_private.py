"""The private Streamlit API the app reaches (explorer/kit/streamlit_private.py): each listed name resolves in
the installed Streamlit, that Streamlit is within requirements.txt's tested bounds, no other file reaches inside
Streamlit, and the wrappers answer inside and outside a page run."""
from __future__ import annotations

import ast
import inspect
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from streamlit.testing.v1 import AppTest

from explorer.kit import streamlit_private as sp

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("streamlit", "streamlit.testing.v1", "streamlit.errors")   # documented modules anyone may import


def _streamlit_requirement(path: Path) -> Requirement:
    lines = [ln.split("#")[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    found = [Requirement(ln) for ln in lines if ln and not ln.startswith("-") and Requirement(ln).name == "streamlit"]
    assert len(found) == 1, f"{path.name}: {len(found)} streamlit lines"
    return found[0]


def test_requirements_cap_streamlit_at_the_tested_releases():
    spec = _streamlit_requirement(ROOT / "requirements.txt").specifier
    assert any(s.operator == "<" for s in spec), "requirements.txt must cap streamlit (its private API may change)"
    assert Version(version("streamlit")) in spec, f"installed streamlit {version('streamlit')} is outside {spec}"
    # the oldest version CI tests is allowed, and is the lower bound
    oldest = next(iter(_streamlit_requirement(ROOT / "requirements-min.txt").specifier)).version
    assert Version(oldest) in spec and any(s.operator == ">=" and Version(s.version) == Version(oldest) for s in spec)


@pytest.mark.parametrize("name", sorted(sp.PRIVATE))
def test_every_private_name_resolves(name):
    assert sp.private(name) is not None


def test_the_run_context_has_what_the_wrappers_read():
    assert "suppress_warning" in inspect.signature(sp.private("get_script_run_ctx")).parameters
    ScriptRunContext = sp.private("ScriptRunContext")
    fields = set(inspect.signature(ScriptRunContext).parameters) | set(vars(ScriptRunContext))
    assert {"session_id", "fragment_ids_this_run"} <= fields
    runtime = sp.private("Runtime")
    assert all(callable(getattr(runtime, m)) for m in ("exists", "instance", "is_active_session"))


def test_an_unlisted_name_is_refused():
    with pytest.raises(KeyError):
        sp.private("streamlit.runtime.Runtime")


def test_outside_a_page_run_there_is_no_session():
    assert not sp.in_page_run() and not sp.fragment_run()
    assert sp.session_id() is None and sp.session_connected() is None


def test_inside_a_page_run_the_session_is_known():
    def page():
        import streamlit as st
        from explorer.kit import streamlit_private as sp
        st.text(f"{sp.in_page_run()} {sp.fragment_run()} {sp.session_id()}")

    at = AppTest.from_function(page).run(timeout=60)
    run, fragment, sid = at.text[0].value.split(maxsplit=2)
    assert (run, fragment) == ("True", "False") and sid != "None"


def _streamlit_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)]
    return [(line, m) for line, m in found if m == "streamlit" or m.startswith("streamlit.")]


def _private_imports(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:     # a test's fixture that must not parse (tests/student_solutions/does_not_parse.py)
        return []
    return [f"line {line}: {m}" for line, m in _streamlit_modules(tree) if m not in PUBLIC]


PY_FILES = sorted(p for d in ("app", "explorer", "engine", "sentiment", "benchmarks", "tests", "tools")
                  for p in (ROOT / d).rglob("*.py") if p != ROOT / "explorer" / "kit" / "streamlit_private.py")


def test_no_other_file_reaches_inside_streamlit():
    assert len(PY_FILES) > 100 and ROOT / "explorer" / "kit" / "budget.py" in PY_FILES
    bad = {str(p.relative_to(ROOT)): b for p in PY_FILES if (b := _private_imports(p.read_text(encoding="utf-8")))}
    assert not bad, f"private Streamlit imports outside explorer/kit/streamlit_private.py: {bad}"


def test_the_import_check_can_fail():
    source = ("import streamlit as st\nfrom streamlit.testing.v1 import AppTest\n"
              "def f():\n    from streamlit.runtime import Runtime\n    import streamlit.proto.BackMsg_pb2\n")
    assert _private_imports(source) == ["line 4: streamlit.runtime", "line 5: streamlit.proto.BackMsg_pb2"]


def test_only_the_widget_modules_import_streamlit_when_they_load():
    """What explorer/__init__.py and docs/engine.md say: in explorer/ only the two widget modules import Streamlit
    at their top level (the rest import it inside a page run, if at all); engine/ and sentiment/ never."""
    top = {str(p.relative_to(ROOT)) for p in PY_FILES if p.parts[len(ROOT.parts)] == "explorer"
           and any(isinstance(n, (ast.Import, ast.ImportFrom)) and _streamlit_modules(n)
                   for n in ast.parse(p.read_text(encoding="utf-8")).body)}
    assert top == {"explorer/kit/widgets.py", "explorer/kit/class_widgets.py"}
    anywhere = [str(p.relative_to(ROOT)) for p in PY_FILES if p.parts[len(ROOT.parts)] in ("engine", "sentiment")
                and _streamlit_modules(ast.parse(p.read_text(encoding="utf-8")))]
    assert not anywhere
