"""Home's lecture framing (explorer.home): the four parts and their pages, lecture 4 recapped on the engine's own
kernels, the readings, what comes next; and the Home page showing them (headless)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import home
from explorer.kit.pages import discover_pages

ROOT = Path(__file__).resolve().parents[1]
TITLES = {p.number: p.title for p in discover_pages(ROOT / "app" / "pages")}


def test_four_parts_name_existing_pages_and_cover_every_lecture_page_but_the_exercises():
    rows = home.agenda_rows(TITLES)
    assert [r["part"][:2] for r in rows] == ["1.", "2.", "3.", "4."]
    covered = {n for p in home.AGENDA for n in p.pages}
    assert covered == set(TITLES) - {12}                     # the exercises span every part
    assert all(f"{n} · {TITLES[n]}" in rows[i]["pages"] for i, p in enumerate(home.AGENDA) for n in p.pages)
    with pytest.raises(KeyError):
        home.agenda_rows({1: "only one page"})


def test_recap_reads_the_numbers_from_the_matmul_kernel(tmp_path):
    src = (home.KERNELS / "matmul.cu").read_text()
    mm = home.matmul_constants()
    assert mm["MM_BM"] == int(re.search(r"#define MM_BM (\d+)", src).group(1)) and mm["MM_PAD"] > 0
    rows = home.recap_rows()
    assert [r["lecture 4"] for r in rows] == ["Tiling and shared memory", "Coalesced memory access",
                                               "Bank conflicts: padding or swizzling", "Sparse matrix multiply",
                                               "cuBLAS"]
    assert f"{mm['MM_BM']}×{mm['MM_BK']} tile of A" in rows[0]["in this engine"]
    assert f"by {mm['MM_PAD']} words" in rows[2]["in this engine"]
    # a kernel with other sizes is described with its own numbers
    other = tmp_path / "matmul.cu"
    other.write_text(src.replace("#define MM_PAD 4", "#define MM_PAD 1").replace("#define MM_BK 8", "#define MM_BK 16"))
    rows = home.recap_rows(other)
    assert "by 1 words" in rows[2]["in this engine"] and f"{mm['MM_BM']}×16 tile of A" in rows[0]["in this engine"]


def test_readings_and_next():
    readings = home.readings_rows(TITLES)
    text = " ".join(r["reading"] for r in readings)
    assert "Abadi" in text and "OSDI 2016" in text and "Baydin" in text and "Blondel and Roulet" in text
    assert readings[0]["page"] == f"9 · {TITLES[9]}"
    assert any("HW2" in n for n in home.NEXT) and any("Recitation 2" in n for n in home.NEXT)


def test_home_shows_the_framing_on_one_screen_and_folds_it_on_a_projector():
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    frame = next(e for e in at.expander if e.label.startswith("Lecture 5 on one screen"))
    tables = [t.value for t in frame.table]
    assert list(tables[0]["part"]) == [r["part"] for r in home.agenda_rows(TITLES)]
    assert list(tables[1]["reading"]) == [r["reading"] for r in home.readings_rows(TITLES)]
    assert list(tables[2]["in this engine"]) == [r["in this engine"] for r in home.recap_rows()]
    assert "Recitation 2" in "\n".join(m.value for m in frame.markdown)
    # expanded in the browser (one screen beside the page list), folded on a projector
    assert frame.proto.expanded
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = next(e for e in at.expander if e.label.startswith("Lecture 5 on one screen"))
    assert not frame.proto.expanded
