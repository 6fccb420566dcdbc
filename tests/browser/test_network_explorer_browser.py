"""Real-browser test of the Network explorer page: pick presets, step through backward, see shapes and fan-out sums."""
from __future__ import annotations

import re

import pytest

from explorer.network_explorer.explore import explore, moment
from explorer.network_explorer.presets import PRESETS

pytestmark = pytest.mark.browser


def step_header(page) -> str:
    return page.get_by_text(re.compile(r"^Step \d+ of \d+")).first.inner_text()


def pick_network(page, wait_idle, key: str) -> None:
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Network").first.click()
    page.get_by_role("option", name=PRESETS[key].title).click()
    wait_idle(page)
    assert f"net={key}" in page.url
    assert PRESETS[key].build().title in page.locator('[data-testid="stMain"]').inner_text()


def click(page, wait_idle, name: str, times: int = 1) -> None:
    for _ in range(times):
        page.get_by_role("button", name=name).click()
        wait_idle(page)


def graph_text(page) -> str:
    plot = page.locator(".js-plotly-plot").first
    plot.wait_for()
    return " ".join(plot.locator(".scatterlayer text").all_text_contents())


def fan_out_frame(key: str, leaf: str) -> tuple[int, int, int]:
    """(frame where ``leaf``'s fan-out sum completes, number of contributions, frames in total)."""
    ex = explore(key, {})
    node = ex.rec.node_by_label(leaf)
    parts = ex.rec.contributions_to(node.id)
    frame = len(ex.rec.forward_order) + 1 + parts[-1].step
    assert leaf in [f.label for f in moment(ex, frame).fan_out]
    return frame, len(parts), ex.n_frames


def test_two_presets_backward_shapes_and_fan_out(page, app_url, wait_idle, shot):
    page.goto(f"{app_url}/Network_explorer")
    wait_idle(page)
    assert step_header(page).startswith("Step 1 of")

    # 1) residual block, op view: x fans out to the skip path and to f
    pick_network(page, wait_idle, "residual")
    frame, parts, total = fan_out_frame("residual", "x")
    page.get_by_text("Op view (every primitive)").click()
    wait_idle(page)
    click(page, wait_idle, "End")
    assert step_header(page).startswith(f"Step {total} of {total}")
    click(page, wait_idle, "Back", times=total - 1 - frame)
    assert step_header(page).startswith(f"Step {frame + 1} of {total}")
    main = page.locator('[data-testid="stMain"]')
    assert f"Fan-out sum at x: {parts} contributions" in main.inner_text()
    assert "= sum" in main.inner_text()
    drawn = graph_text(page)
    assert "fc1.weight" in drawn and "4×4" in drawn and "3×4" in drawn    # names and shapes drawn
    assert "adjoint 2 of 2" in drawn                                   # x has both contributions
    assert f"step={frame + 1}" in page.url          # the link's step is 1-based, as the header
    shot(page, "network_residual_fan_out")

    # 2) RNN, layer view: the shared weight Wh receives one contribution per time step
    pick_network(page, wait_idle, "rnn")
    frame, parts, total = fan_out_frame("rnn", "Wh")
    assert parts == 3
    page.get_by_text("Layer view (a box per layer)").click()
    wait_idle(page)
    start = max(len(explore("rnn", {}).rec.forward_order) + 1, frame - 3)     # a backward frame
    page.goto(f"{app_url}/Network_explorer?net=rnn&level=layer&step={start + 1}")
    wait_idle(page)
    assert step_header(page).startswith(f"Step {start + 1} of {total}")
    assert "backward" in step_header(page)
    click(page, wait_idle, "Step", times=frame - start)
    assert step_header(page).startswith(f"Step {frame + 1} of {total}")
    main = page.locator('[data-testid="stMain"]')
    assert "Fan-out sum at Wh: 3 contributions" in main.inner_text()
    drawn = graph_text(page)
    assert "Wh" in drawn and "4×4" in drawn and "adjoint 3 of 3" in drawn    # Wh: all 3 steps arrived
    assert "step 1" in drawn and "2×4" in drawn
    shot(page, "network_rnn_layer_fan_out")


def test_lecture_order_network_and_the_rnn_fan_out_row(page, app_url, wait_idle, shot):
    """The lecture's sentiment network runs the layers per word and averages last (one line says how it
    differs from HW2's); the RNN's fan-out row at Wh shares one colour scale and explains the zero from h0."""
    page.goto(f"{app_url}/Network_explorer")
    wait_idle(page)
    pick_network(page, wait_idle, "sentiment")
    page.get_by_text("Layer view (a box per layer)").click()
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    text = main.inner_text()
    assert "HW2 averages the word vectors first" in text and "Because ReLU is not linear" in text
    assert re.search(r"per word then average gives P\(positive\) = 0\.\d+; average first \(HW2's order\) gives 0\.\d+",
                     text)
    drawn = graph_text(page)
    for layer in ("embedding lookup", "Linear 1 (each word)", "ReLU (each word)", "Linear 2 (each word)",
                  "average pooling"):
        assert layer in drawn
    click(page, wait_idle, "End")
    drawn = graph_text(page)
    assert "5×6" in drawn and "1×2" in drawn        # hidden units per word (5 words), one averaged score pair
    shot(page, "network_lecture_sentiment")

    frame, parts, total = fan_out_frame("rnn", "Wh")
    page.goto(f"{app_url}/Network_explorer?net=rnn&level=op&step={frame + 1}")   # 1-based, as the header
    wait_idle(page)
    page.get_by_text("Fan-out sum at Wh: 3 contributions").wait_for()
    text = main.inner_text()
    assert "Fan-out sum at Wh: 3 contributions" in text
    assert "0: the other factor h0 is all zeros" in text
    page.get_by_text("Fan-out sum at Wh: 3 contributions").scroll_into_view_if_needed()
    # each heatmap's colour range, written under its cells ('colour −0.5…+0.5'): one for the row
    titles_js = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
            .filter(el => el.layout && el.layout.title && /· step|= sum/.test(String(el.layout.title.text)))
            .map(el => (el.layout.annotations || []).filter(a => a.name === 'colour range').map(a => a.text).join())"""
    # the heatmaps draw once scrolled into view
    page.wait_for_function(f"() => ({titles_js})().length === 4", polling=100)
    ranges = page.evaluate(titles_js)
    assert len(ranges) == 4 and len(set(ranges)) == 1 and ranges[0].startswith("colour −"), ranges
    assert "tanh#" in graph_text(page)
    shot(page, "network_rnn_fan_out_row")


LEGEND_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
  .filter(p => p.layout && p.layout.title && String(p.layout.title.text || '').includes('bytes kept vs'))
  .map(p => { const lg = p.querySelector('.legend'); const r = lg ? lg.getBoundingClientRect() : null;
    const ticks = Array.from(p.querySelectorAll('.xtick text')).map(t => t.getBoundingClientRect())
      .filter(t => t.width > 0);
    const hit = r && ticks.some(t => Math.min(r.right, t.right) - Math.max(r.left, t.left) > 1 &&
                                     Math.min(r.bottom, t.bottom) - Math.max(r.top, t.top) > 1);
    return {legend: Boolean(r), ticks: ticks.length, hit}; })"""


@pytest.mark.parametrize("present", [False, True], ids=["1400", "projector"])
def test_the_memory_tab_reads_whole(new_page, app_url, wait_idle, present):
    """The memory tab: the sweeps' legends sit clear of the x tick labels (one covered a tick: "…0"), and the
    caption says how many kept tensors no VJP read, agreeing with the rows that say why."""
    size = {"width": 1920, "height": 1080} if present else {"width": 1400, "height": 900}
    page = new_page(viewport=size)
    page.goto(f"{app_url}/Network_explorer" + ("?present=1" if present else ""))
    wait_idle(page)
    page.get_by_role("tab", name="Memory kept for backward").click()
    main = page.locator('[data-testid="stMain"]')
    # logistic regression's Linear is one linear node that keeps x and the weight itself (a parameter):
    # every kept tensor is read, and the caption says so (a transposed copy of the weight, kept for x's
    # gradient and never read, was the unread row before; tests/test_network_explorer.py covers unread rows)
    main.get_by_text(re.compile(r"Here every kept tensor was read")).first.wait_for()
    if present:   # an HTML table there (on a laptop the rows are drawn on a canvas)
        assert main.get_by_text(re.compile(r"^none: ")).count() == 0
    main.get_by_text(re.compile(r"Here every kept tensor was read")).first.scroll_into_view_if_needed()
    # the charts draw once scrolled into view
    page.wait_for_function(f"() => {{ const f = ({LEGEND_JS})(); return f.length === 2 && f.every(x => x.ticks); }}",
                           polling=100)
    found = page.evaluate(LEGEND_JS)
    assert len(found) == 2 and all(f["legend"] and f["ticks"] and not f["hit"] for f in found), found
    assert "keeps only what its VJP reads" not in main.inner_text()


TITLES_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map(plot => {
    const p = plot.getBoundingClientRect();
    const t = plot.querySelector('.gtitle');
    const r = t ? t.getBoundingClientRect() : null;
    return {text: t ? t.textContent : '', chart: [p.left, p.top, p.right, p.bottom],
            title: r ? [r.left, r.top, r.right, r.bottom] : null};
})"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_the_step_panel_heatmap_titles_are_whole_on_a_projector(new_page, app_url, wait_idle, size):
    """Step 30 (a backward step of the layer view): the adjoint's heatmap title ('adjoint ādd#21 (held now) (4, 1)
    · ±…') was cut at the panel's right edge; every heatmap title now lies inside its chart and the window."""
    from browser_kit import wait_drawn
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    pg.goto(f"{app_url}/Network_explorer?step=30&present=1")
    wait_drawn(pg)
    wait_idle(pg)
    titles = [t for t in pg.evaluate(TITLES_JS) if t["title"] is not None and t["text"]]
    assert any(t["text"].startswith("adjoint") for t in titles), titles
    for t in titles:
        (cl, ct, cr, cb), (tl, tt, tr, tb) = t["chart"], t["title"]
        assert cl - 0.5 <= tl and tr <= cr + 0.5 and ct - 0.5 <= tt and tb <= cb + 0.5, t
        assert tr <= w + 0.5, t


# the box's text is an <input> (its value); wider than the box, its scrollWidth exceeds its clientWidth
SELECT_JS = """() => Array.from(document.querySelectorAll('[data-testid="stSelectbox"] input[aria-label="Network"]'))
    .map(v => ({text: v.value, scroll: v.scrollWidth, client: v.clientWidth}))"""

HEATMAPS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .map(p => [p, p.layout && p.layout.title ? String(p.layout.title.text || '').replace(/<\/?b>/g, '') : ''])
    .filter(([p, t]) => /^(value|adjoint)/.test(t))
    .map(([p, t]) => ({title: t,
                range: (p.layout.annotations || []).filter(a => a.name === 'colour range').map(a => a.text).join(),
                lines: p.querySelectorAll('.gtitle .line').length || 1}))"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_a_projector_shows_the_network_name_whole_and_one_line_heatmap_titles(new_page, app_url, wait_idle, size):
    """A lecturer's walk on a projector: the network box cut 'Lecture sentiment network: Linear → …' at its edge, and
    the step panel's heatmap titles ('adjoint (held now) (1) · ±0.19') took three lines, the '±' unexplained. The box
    shows the short name whole; each title is one line, and under the cells the colour range says what it is."""
    from browser_kit import wait_drawn
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    pg.goto(f"{app_url}/Network_explorer?net=sentiment&present=1")
    wait_drawn(pg)
    (box,) = pg.evaluate(SELECT_JS)
    assert box["text"] == PRESETS["sentiment"].name and box["scroll"] <= box["client"], box
    for step in (18, 25):   # HW2: a Linear's value and adjoint side by side; a leaf's
        pg.goto(f"{app_url}/Network_explorer?net=hw2&step={step}&present=1")
        wait_drawn(pg)
        found = pg.evaluate(HEATMAPS_JS)
        assert len(found) == 2, found
        for f in found:
            assert "<br>" not in f["title"] and "±" not in f["title"] and f["lines"] == 1, f
            assert f["range"].startswith("colour −") and f["range"].count("<br>") <= 1, f


FIRST_SCREEN_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const dot = Array.from(main.querySelectorAll('[data-testid="stDownloadButton"] button'))
      .filter(b => b.innerText.includes('Download graph'))[0];
  const pieces = Array.from(main.querySelectorAll('code')).filter(c => c.style.whiteSpace === 'nowrap')
      .map(c => ({text: c.innerText, lines: c.getClientRects().length}));
  const ranges = Array.from(main.querySelectorAll('.js-plotly-plot')).flatMap(p =>
      Array.from(p.querySelectorAll('.annotation')).filter(a => /^colour/.test(a.textContent)).map(a => {
          let col = p.closest('[data-testid="stColumn"]'), up = col;   // the step panel: the outermost column
          while (up && (up = up.parentElement.closest('[data-testid="stColumn"]'))) col = up;
          const r = a.getBoundingClientRect(), q = (col || p).getBoundingClientRect();
          return {text: a.textContent, inside: r.left >= q.left - 1 && r.right <= q.right + 1,
                  lines: a.querySelectorAll('tspan.line').length || 1}; }));
  const label = main.querySelector('[data-testid="stExpander"] summary [data-testid="stMarkdownContainer"]');
  let labelLines = null;
  if (label) {   // the label's lines: distinct tops of its text's boxes
    const range = document.createRange(); range.selectNodeContents(label);
    labelLines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top))).size;
  }
  return {dotTop: dot ? dot.getBoundingClientRect().top : null, height: window.innerHeight, pieces, ranges,
          label: label ? label.innerText : null, labelLines};
}"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_a_projector_shows_the_whole_network_first_and_whole_formulas(new_page, app_url, size):
    """A lecturer's walk (1920 x 1080 and 1366 x 768): step 1 showed 5 of HW2's 11 boxes (the sentiment network's
    embedding and Linear 1 only); the "Download graph (DOT)" button peeked in at the bottom edge; "b̄ = / Σ_rows Ȳ" and
    BCE's "max(p(1 − / p)" broke inside a formula; "colour: −0.72 / … +0.72" wrapped; the sizes box read
    "dropout p / 0.5" over two lines and "sentence it is a good movie" unquoted. Step 1 draws the whole network, the
    button starts on the next screen, no formula piece breaks, the colour range is one line inside its heatmap, and
    the sizes label is one line."""
    from browser_kit import wait_drawn
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    heads = {"hw2": ["mean over words", "fc1.weight", "fc1.bias", "Linear 1", "ReLU", "Dropout", "fc2.weight",
                     "fc2.bias", "Linear 2", "sigmoid", "BCE loss"],
             "sentiment": ["embedding.weight", "embedding lookup", "fc1.weight", "Linear 1", "fc2.bias",
                           "average pooling", "softmax / cross-entropy"]}
    for net, names in heads.items():
        pg.goto(f"{app_url}/Network_explorer?net={net}&step=1&present=1")
        wait_drawn(pg)
        text = graph_text(pg)
        assert all(n in text for n in names), (net, text)
        got = pg.evaluate(FIRST_SCREEN_JS)
        assert got["dotTop"] is None or got["dotTop"] >= got["height"], got
        assert got["labelLines"] == 1, got
        if net == "sentiment":
            assert "“it is a good movie”" in got["label"], got
    for step in (7, 14, 18):
        pg.goto(f"{app_url}/Network_explorer?net=hw2&step={step}&present=1")
        wait_drawn(pg)
        got = pg.evaluate(FIRST_SCREEN_JS)
        assert got["dotTop"] is None or got["dotTop"] >= got["height"], (step, got)
        assert got["pieces"] and all(p["lines"] == 1 for p in got["pieces"]), (step, got["pieces"])
        assert all(r["inside"] and r["lines"] == 1 for r in got["ranges"]), (step, got["ranges"])
