"""Presentation mode's way through a lecture: Previous / Home / Next in the lecture's page order."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from explorer.kit.presentation import CLICKER_SCRIPT, NAV_KEY, lecture_order, neighbours

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"


def test_the_lecture_order_is_home_then_the_pages_by_number():
    order = lecture_order(APP)
    files = sorted((p for p in (APP / "pages").glob("[0-9]*_*.py")), key=lambda p: int(p.name.split("_")[0]))
    assert order[0] == ("Home", "Home.py")
    assert [path for _, path in order[1:]] == [f"pages/{p.name}" for p in files]
    assert neighbours(APP, "Home") == (None, order[1])
    assert neighbours(APP, order[-1][0]) == (order[-2], None)
    i = [name for name, _ in order].index("Topological_sort")
    assert neighbours(APP, "Topological_sort") == (order[i - 1], order[i + 1])
    assert neighbours(APP, "No_such_page") == (None, None)


def _links(at: AppTest) -> list[tuple[str, str]]:
    return [(str(el.proto.label), str(el.proto.page)) for el in at.get("page_link")]


def test_presentation_mode_pins_previous_home_next_and_the_clicker_keys():
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=120)   # the app's entry, as `streamlit run` has it
    at.query_params["present"] = "1"
    at.switch_page("pages/4_Topological_sort.py").run()
    assert not at.exception
    before, after = neighbours(APP, "Topological_sort")
    labels = [label for label, _ in _links(at)]
    assert labels[:3] == ["Previous", "Home", "Next"]
    pages = [page for _, page in _links(at)][:3]
    assert before[0] in pages[0] and pages[1] in ("", "Home") and after[0] in pages[2]   # Home: the app's root
    assert any(CLICKER_SCRIPT in str(h.proto.body) for h in at.get("html"))
    # not presenting: none of it
    plain = AppTest.from_file(str(APP / "Home.py"), default_timeout=120).switch_page("pages/4_Topological_sort.py").run()
    assert not [label for label, _ in _links(plain) if label in ("Previous", "Next")]
    assert not any(NAV_KEY in str(h.proto.body) for h in plain.get("html"))
