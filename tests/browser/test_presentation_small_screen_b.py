"""Presentation mode on a 1366 x 768 projector for Forward vs reverse, Tensors and storage, Static vs dynamic,
Network explorer and Sentiment training: the page is the 1920 x 1080 layout drawn 0.711 times as large, so every
text the class reads on the first screen is laid out at 23 px or more and reaches 16 px on that screen (the floor
test of test_presentation.py, for these pages and their stepped moments)."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from test_presentation import open_presenting, texts_under

pytestmark = pytest.mark.browser

SMALL_SCREEN_PAGES_B = (
    "Forward_vs_reverse?present=1", "Forward_vs_reverse?present=1&step=4", "Forward_vs_reverse?present=1&step=7",
    "Tensors_and_storage?present=1",
    "Static_vs_dynamic?present=1",   # (with gradients() its graph needs a window: it keeps the 1920 x 1080 sizes)
    "Network_explorer?present=1", "Network_explorer?present=1&step=9", "Network_explorer?present=1&level=layer&step=6",
    "Network_explorer?present=1&level=layer&step=36", "Network_explorer?present=1&level=op&step=30",
    "Sentiment_training?present=1",
)


@pytest.mark.parametrize("url", SMALL_SCREEN_PAGES_B)
def test_the_first_screen_reads_16_px_on_a_1366_projector_b(new_page, app_url, wait_idle, shot, url):
    pg = new_page(viewport={"width": 1366, "height": 768})
    open_presenting(pg, f"{app_url}/{url}", wait_idle)
    assert pg.locator('[data-testid="stException"]').count() == 0
    small = texts_under(pg, 16, on_screen=True)
    name = "presentation_1366_" + re.sub(r"\W+", "_", url)
    pg.screenshot(path=str(shot(pg, name).with_name(name + "_screen.png")))   # the first screen as the class sees it
    kinds = Counter((t["where"], t["px"]) for t in small)   # which elements, at which sizes
    firsts = {k: next(t["text"] for t in small if (t["where"], t["px"]) == k) for k in kinds}
    assert small == [], f"{len(small)} texts under 16 px on screen at /{url}: {[(k, n, firsts[k]) for k, n in kinds.items()]}"
