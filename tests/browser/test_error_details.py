"""An internal error on a page never shows the browser a traceback, a server path or a line of source.

A server is started with the repo's own ``.streamlit/config.toml`` (read from the working directory, as
``streamlit run app/Home.py`` reads it) on a script that runs the real Expression explorer page after
making the function behind its graph fail with an error whose message names a server file.
"""
from __future__ import annotations

import textwrap

import pytest
from browser_kit import TIMEOUT_MS

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LEAKS = ("Traceback", "File \"", str(ROOT), "site-packages", "explorer_model(", "raise RuntimeError",
         "injected internal error")


@pytest.fixture(scope="module")
def broken_app_url(tmp_path_factory, start_streamlit):
    folder = tmp_path_factory.mktemp("broken_app")
    script = folder / "broken_page.py"
    script.write_text(textwrap.dedent(f"""\
        import runpy

        import explorer.expression_explorer as page_logic


        def broken(*args, **kwargs):
            raise RuntimeError("injected internal error in " + page_logic.__file__)


        page_logic.explorer_model = broken
        runpy.run_path({str(ROOT / "app" / "pages" / "3_Expression_explorer.py")!r}, run_name="__main__")
        """))
    log = folder / "server.log"
    with start_streamlit(script, log) as url:
        yield url, log


def test_internal_error_shows_no_path_traceback_or_source(browser, broken_app_url, shot, wait_idle):
    url, log = broken_app_url
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    try:
        pg.goto(url)
        wait_idle(pg)
        pg.wait_for_selector('[data-testid="stException"], [data-testid="stAlert"]', timeout=TIMEOUT_MS)
        shot(pg, "internal_error_redacted")
        html = pg.content()
        text = pg.inner_text("body")
    finally:
        context.close()
    # the error did happen (the server logged it), and the browser was told only that something failed
    assert "injected internal error" in log.read_text(errors="replace")
    assert "error" in text.lower()
    leaked = [s for s in LEAKS if s in html or s in text]
    assert not leaked, leaked
