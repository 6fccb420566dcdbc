"""The lecture hall: what the class must see at once fits the first screen of a projector.

Each page opens in presentation mode (``?present=1``) in headless Chromium at 1920 x 1080 (the design), 1366 x 768
and 1280 x 720, and the bounding boxes of its named elements (the graphs, the step's caption, the code panels,
the verdict lines, the step buttons) must lie inside the window without scrolling, none on top of another. A smaller projector shows
the 1920 x 1080 page scaled as a whole (``explorer.kit.presentation.fit_screen_rules``), so the boxes read here
are the ones on screen. The caption that carries the step's number is at least 24 px on the design screen, and
no two tick labels of a chart's axis overlap (the log axes' minor labels did).
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from browser_kit import TIMEOUT_MS, wait_drawn, wait_stable

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
SIZES = [(1920, 1080), (1366, 768), (1280, 720)]
STEP_BUTTONS = ("Start", "Back", "Play", "Step", "End")
CAPTION_MIN_PX = 24
# Topological sort's line with the engine's own order (engine.topological_sort on the slide example's output)
ENGINE_ORDER = r"^topological_sort\(x7\) returns x7,\sx6,\sx5,\sx3,\sx1,\sx4,\sx2:"

# page (with its link's state) -> the named elements of its first screen:
#   ("graphs", n)       the first n charts (Plotly) of the page
#   ("text", regex)     the element whose text matches (a caption, a verdict line, a title)
#   ("caption", regex)  the same, and its font is at least CAPTION_MIN_PX at 1920 x 1080
#   ("testid", id)      the element with that data-testid (the code panels)
#   ("buttons", names)  the step buttons
#   ("graph_top", n)    the first 200 px of the first chart (a page whose graph is taller than a screen)
#   ("picture", 1)      the network picture (Graphviz)
FIRST_SCREEN = {
    # the agenda: every page's card, its line on what the class sees in the text's colour (not a faint caption)
    "": [("text", r"^1 · "), ("text", r"^11 · "), ("text", r"^13 · "),
         ("text", r"^HW2.s sentiment network trained live"), ("text", r"^Your own HW2 topological_sort")],
    "Expression_explorer?step=10": [
        ("graphs", 2), ("caption", r"^take x3: x̄3 = 244\.69"), ("text", r"^Step 10 of 14"),
        ("testid", "code-panel"), ("testid", "code-lecture"), ("testid", "backward-legend"),
        ("buttons", STEP_BUTTONS)],
    # the sigmoid neuron's chain is too long to stand beside the code: the graphs across the page, the legend in the
    # header's row and the code panels right under the graphs, on the first screen (under the legend and a gap each
    # they were below the fold at 1366 x 768)
    "Expression_explorer?step=9&expr=f+%3D+1+%2F+%281+%2B+exp%28-%28w+%2A+x%29%29%29&at=w+%3D+0.5%2C+x+%3D+2": [
        ("graphs", 2), ("text", r"^Step 9 of 14"), ("testid", "code-panel"), ("testid", "code-lecture"),
        ("testid", "backward-legend"), ("buttons", STEP_BUTTONS)],
    # each order in a row: its verdict and the step's caption over its graph, its own code beside the graph, the
    # legend under both graphs
    "Backprop_orders?step=8": [
        ("graphs", 2), ("text", r"^so far every node was taken with all its contributions"),
        ("text", r"^✗ step 8: x1 finalised with 1 of 2 contributions"),
        ("caption", r"^Step 8 of 14 · backward: take x6"), ("caption", r"^Step 8 of 14 · backward: take x1"),
        ("testid", "code-panel-topological"), ("testid", "code-panel-bfs_first_touch"),
        ("testid", "backward-legend"), ("buttons", STEP_BUTTONS)],
    # the class looks for the best h first: the question under each sweep, then the answer on request
    "Gradient_check": [("graphs", 2), ("caption", r"^float64: best h = \? Where is the error smallest"),
                       ("caption", r"^float32: best h = \?"), ("text", r"^Show the best h$")],
    "Gradient_check?show_best=1": [("graphs", 2), ("caption", r"^float64: best h = .*4\.6e-06"),
                                   ("caption", r"^float32: best h = ")],
    "Forward_vs_reverse": [("graphs", 1), ("text", r"^Step 1 of \d+"), ("buttons", STEP_BUTTONS)],
    # the last step: the dual-number table beside the graph, every row (the inputs' seeds, then each op) and the
    # result under it (under the graph its last rows ran below the fold)
    "Forward_vs_reverse?step=7": [("graphs", 1), ("text", r"^Step 7 of 7"), ("text", r"^seed \(input\)$"),
                                  ("text", r"^add\(x1, x6\)$"), ("text", r"^Forward, one pass per input"),
                                  ("buttons", STEP_BUTTONS)],
    # step 1 as a lecturer opens it (auto: the whole network) and in the op view (a window on the inputs)
    "Network_explorer": [("graphs", 1), ("caption", r"^Step 1 of \d+ · inputs"), ("text", r"^This step$"),
                         ("buttons", STEP_BUTTONS)],
    "Network_explorer?level=op": [("graphs", 1), ("caption", r"^Step 1 of \d+ · inputs"), ("text", r"^This step$"),
                                  ("buttons", STEP_BUTTONS)],
    # a Linear's backward step in the op view: its VJP rule (broken only between its pieces), the value and adjoint of its (3, 1) output
    # side by side, so every "sent to" line is on the first screen beside the graph (auto opens the layer view there)
    "Network_explorer?net=hw2&step=18&level=op": [
        ("graphs", 1), ("caption", r"^Step 18 of \d+ · backward"), ("text", r"^This step$"),
        ("text", r"^VJP: x̄ = Ȳ W,\s+W̄ = Ȳᵀ x,\s+b̄ = Σ_rows Ȳ$"), ("text", r"^→ sent to dropout#12"),
        ("text", r"^→ sent to fc2\.weight"), ("text", r"^→ sent to fc2\.bias"), ("buttons", STEP_BUTTONS)],
    # the backward graph's legend over it, whole on the first screen (under it, it sat on a laptop's bottom edge)
    "Network_explorer?step=30&level=layer": [
        ("graphs", 2), ("caption", r"^Step 30 of \d+ · backward"), ("text", r"^This step$"),
        ("testid", "backward-legend"), ("buttons", STEP_BUTTONS)],
    # a link's step past the last one: clamped quietly on a projector (a warning's box over the stepper pushed the
    # graph under the first screen's edge)
    # and the last step lists every leaf's gradient beside the graph (the backward graph's window shows its top only)
    "Network_explorer?net=hw2&step=999": [("graphs", 1), ("caption", r"^Step 26 of 26 · done"),
                                          ("text", r"^This step$"), ("buttons", STEP_BUTTONS),
                                          ("text", r"‖fc1\.weight\.grad‖ = [\s\S]*fc2\.bias\.grad = ")],
    # HW2's layer view at step 20: ReLU's value and adjoint, one-line titles, and where it sends its contribution
    # (tests/test_network_explorer.py checks that the graph's window holds the step's nodes at every step)
    "Network_explorer?net=hw2&step=20": [("graphs", 1), ("caption", r"^Step 20 of 26 · backward"),
                                         ("text", r"^This step$"), ("text", r"^→ sent to Linear 1"),
                                         ("buttons", STEP_BUTTONS)],
    "Sentiment_training": [("picture", 1), ("text", r"^HW2 setup: 450 train / 100 validation sentences, 250 epochs$"), ("text", r"^Start training$")],
    "Static_vs_dynamic": [("graph_top", 1)],
    # exercise 11's link: the loss the train step skips, whole, beside the prediction and the gradient node that
    # read the same inputs, under the one-line count (the slider and the legend under the graph)
    "Static_vs_dynamic?example=logreg&grads=False&train=True&fetch=train+step+%28SGD%29": [
        ("text", r"^Evaluated 25 of 26 nodes: 23 computed \+ 2 fed$"), ("text", r"^binary_cross_entropy\(sigmoid, y\)$"),
        ("text", r"^sigmoid\(add\)$"), ("text", r"^bce_grad\(sigmoid, y\)$")],
    "Learning_problem": [("graphs", 1), ("caption", r"^Step 1 of 40: w₀ = "), ("buttons", STEP_BUTTONS)],
    # the queue method's steps and, over the table of steps, the engine's own sort (its section was a scroll away)
    "Topological_sort": [("graphs", 1), ("caption", r"^Step 1 of 7 · ready: x1, x2"), ("buttons", STEP_BUTTONS),
                         ("text", r"^ready \(queue\): no unprocessed input$"), ("text", r"^The engine's own sort$"),
                         ("text", ENGINE_ORDER)],
    "Tensors_and_storage": [("graphs", 2), ("text", r"offset \+ i·strides\[0\]"),
                            ("text", r"reads the same storage object as x")],
    "Exercises": [("text", r"^Exercise 1 · "), ("text", r"^Check my answers$")],
    "Cross_entropy_on_logits": [("text", r"^Slide 7"), ("text", r"# how\? in what order\?"),
                                ("text", r"^The same with this engine"), ("text", r"^How is backward implemented\?"),
                                ("text", r"^In what order\?")],
    # the shared server runs no student code: the project's breadth-first sample at the step where the contribution
    # it loses arrives and its verdict is written (x1 is marked ✘ from step 8, the reason named at step 11, as Backprop
    # orders' LOST line), both orders one above the other, beside them the captions, the verdict and the sample's
    # backpropagate with the step's lines lit (the opted-in page's two graphs are checked at the three sizes by
    # test_student_code_browser.py, on a server of its own)
    "Your_HW2_code?step=11": [
        ("graphs", 2),
        ("caption", r"^The engine \(topological order\) · Step 11 of 14"),
        ("caption", r"^Sample: Breadth-first, passes a gradient on first touch · Step 11 of 14"),
        ("text", r"^The sample's first wrong node: x1"), ("testid", "code-sample"), ("buttons", STEP_BUTTONS)],
}


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def screen(request, new_page):
    w, h = request.param
    return new_page(viewport={"width": w, "height": h}), w, h


def open_presenting(pg, url: str, wait_idle) -> None:
    pg.goto(url)
    wait_drawn(pg)  # charts draw after the script run ends
    wait_idle(pg)


def named_boxes(pg, wants) -> list[tuple[str, dict | None, float | None]]:
    """(name, bounding box, font px) of each named element of ``wants``."""
    main = pg.locator('[data-testid="stMain"]')
    out = []
    for kind, arg in wants:
        if kind in ("graphs", "graph_top"):
            charts = main.locator(".js-plotly-plot")
            for i in range(arg):
                box = charts.nth(i).bounding_box() if charts.count() > i else None
                if box is not None and kind == "graph_top":
                    box = {**box, "height": min(box["height"], 200)}
                out.append((f"chart {i + 1}", box, None))
        elif kind in ("text", "caption"):
            el = main.get_by_text(re.compile(arg)).first
            box = el.bounding_box() if el.count() else None
            px = el.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") if el.count() else None
            out.append((f"{kind} {arg!r}", box, px if kind == "caption" else None))
        elif kind == "picture":  # a network drawn by Graphviz: on the server (an image) or in the browser
            el = main.locator('[data-testid="stImage"] img, [data-testid="stGraphVizChart"] svg').first
            out.append(("network picture", el.bounding_box() if el.count() else None, None))
        elif kind == "testid":
            el = main.locator(f'[data-testid="{arg}"]').first
            out.append((arg, el.bounding_box() if el.count() else None, None))
        elif kind == "buttons":
            for name in arg:
                el = main.get_by_role("button", name=re.compile(rf"^\W*{name}\b")).first
                out.append((f"button {name}", el.bounding_box() if el.count() else None, None))
    return out


def overlap(a: dict, b: dict) -> float:
    """The smaller side of two boxes' intersection in px (0 or less: apart)."""
    w = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    return min(w, h)


@pytest.mark.parametrize("path", list(FIRST_SCREEN))
def test_the_first_screen_holds_what_the_class_must_see(screen, app_url, wait_idle, path):
    pg, w, h = screen
    sep = "&" if "?" in path else "?"
    open_presenting(pg, f"{app_url}/{path}{sep}present=1", wait_idle)
    assert pg.locator('[data-testid="stException"]').count() == 0
    problems = []
    boxes = named_boxes(pg, FIRST_SCREEN[path])
    for (n1, b1, _), (n2, b2, _) in ((a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
        if b1 and b2 and overlap(b1, b2) > 1:   # no two named elements on top of each other
            problems.append(f"{n1} and {n2} overlap")
    for name, box, px in boxes:
        if box is None:
            problems.append(f"{name}: not drawn")
            continue
        if box["y"] < -0.5 or box["y"] + box["height"] > h + 0.5 or box["x"] < -0.5 or box["x"] + box["width"] > w + 0.5:
            problems.append(f"{name}: {({k: round(v) for k, v in box.items()})} is not within {w} x {h}")
        if px is not None and w == 1920 and px < CAPTION_MIN_PX - 0.05:
            problems.append(f"{name}: {px} px, less than {CAPTION_MIN_PX} px")
    SHOTS.mkdir(parents=True, exist_ok=True)  # the first screen as the class sees it, to look at
    pg.screenshot(path=str(SHOTS / f"first_screen_{w}x{h}_{path.split('?')[0] or 'Home'}.png"))
    assert problems == [], f"/{path} at {w} x {h}: " + "; ".join(problems)


def test_backprop_orders_stand_one_above_the_other_each_beside_its_code(screen, app_url, wait_idle):
    """Two orders, two graphs of the same size, the broken one under the other, each under its verdict line and
    left of its own code (the graphs' texts at 16 px on a 1366 x 768 projector need the page's width: side by
    side they were 14 px there)."""
    pg, w, h = screen
    open_presenting(pg, f"{app_url}/Backprop_orders?step=11&present=1", wait_idle)
    main = pg.locator('[data-testid="stMain"]')
    charts = main.locator('.js-plotly-plot')
    a, b = charts.nth(0).bounding_box(), charts.nth(1).bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1 and abs(a["height"] - b["height"]) < 2 and abs(a["x"] - b["x"]) < 2
    for box in (a, b):
        assert box["y"] + box["height"] <= h + 0.5
    verdicts = [main.get_by_text(re.compile(r"^so far every node")).first.bounding_box(),
                main.get_by_text(re.compile(r"^✗ step 11: LOST")).first.bounding_box()]
    assert verdicts[0]["y"] < a["y"] and a["y"] + a["height"] <= verdicts[1]["y"] + 1 and verdicts[1]["y"] < b["y"]
    codes = [main.locator(f'[data-testid="code-panel-{s}"]').first.bounding_box()
             for s in ("topological", "bfs_first_touch")]
    for graph, code in zip((a, b), codes):
        assert code["x"] >= graph["x"] + graph["width"] - 1 and code["x"] + code["width"] <= w + 0.5
        assert graph["y"] - 1 <= code["y"] < graph["y"] + graph["height"]


TICKS_JS = """() => {
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, p) => {
    for (const axis of ['xtick', 'ytick']) {
      const groups = {};
      plot.querySelectorAll(`.${axis} text`).forEach(t => {
        const sub = t.closest('[class*="subplot"], .cartesianlayer') || plot;
        const key = (sub.getAttribute('class') || '') + (t.closest('g[class*="axislayer"]') ? '' : '');
        const r = t.getBoundingClientRect();
        if (r.width < 1 || !t.textContent.trim()) return;
        (groups[key] = groups[key] || []).push({text: t.textContent, x: r.x, y: r.y, w: r.width, h: r.height});
      });
      for (const boxes of Object.values(groups)) {
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i], b = boxes[j];
          const ox = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
          const oy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
          if (ox > 1 && oy > 1) out.push(`chart ${p + 1} ${axis}: '${a.text}' and '${b.text}'`);
        }
      }
    }
  });
  return out;
}"""


@pytest.mark.parametrize("path", ["Forward_vs_reverse", "Gradient_check", "Learning_problem"])
def test_log_axes_tick_labels_do_not_overlap(big_page_1920, app_url, wait_idle, path):
    open_presenting(big_page_1920, f"{app_url}/{path}?present=1", wait_idle)
    assert big_page_1920.evaluate(TICKS_JS) == []


@pytest.fixture
def big_page_1920(new_page):
    return new_page(viewport={"width": 1920, "height": 1080})


def test_sentiment_training_shows_curves_and_network_while_training(new_page, app_url, wait_idle):
    """While a run trains, the settings fold away and the live curves and the network picture fill the first
    screen, at every projector size (one run, the window resized)."""
    pg = new_page(viewport={"width": 1920, "height": 1080})
    open_presenting(pg, f"{app_url}/Sentiment_training?present=1", wait_idle)
    # the full SST-2 preset: minutes of training, so the checks below see a run still going (HW2's
    # preset, compiled, can end within the seconds they take on a quiet machine: CI saw it end mid-test)
    pg.get_by_role("button", name=re.compile(r"^\W*Full SST-2")).first.click()
    pg.get_by_text(re.compile(r"epoch \d+ / \d+")).first.wait_for()
    for w, h in SIZES:
        pg.set_viewport_size({"width": w, "height": h})
        wait_stable(pg)   # the curves and the network laid out at the new size
        main = pg.locator('[data-testid="stMain"]')
        boxes = {"loss curve": main.locator('[data-testid="stVegaLiteChart"] svg').nth(0).bounding_box(),
                 "accuracy curve": main.locator('[data-testid="stVegaLiteChart"] svg').nth(1).bounding_box(),
                 "network": main.locator('[data-testid="stImage"] img, [data-testid="stGraphVizChart"] svg')
                 .first.bounding_box(),
                 "figures": main.get_by_text(re.compile(r"epoch \d+ / \d+")).first.bounding_box()}
        for name, box in boxes.items():
            assert box is not None and box["y"] + box["height"] <= h + 0.5 and box["y"] >= 0, \
                f"{name} at {w} x {h}: {box}"
        settings = main.get_by_text(re.compile(r"^Learning rate$"))
        assert settings.count() == 0 or not settings.first.is_visible()  # folded away
    stop = main.get_by_role("button", name=re.compile(r"^\W*Stop")).first
    # the run is still going: stop it, the server is shared with other tests (after a run, on a projector,
    # Replay takes Stop's place: no Stop button to wait 60 s for)
    if stop.count() and stop.is_enabled():
        try:
            stop.click(timeout=5_000)
        except Exception:  # noqa: BLE001 - it ended between the check and the click
            pass


LIT_IN_VIEW_JS = """() => [...document.querySelectorAll('.adx-scroll')].map(box => {
  const b = box.getBoundingClientRect();
  const first = [...box.querySelectorAll('.adx-code')].find(c => c.querySelector('.l.hl'));
  if (!first) return null;
  return [...first.querySelectorAll('.l.hl')].every(l => { const r = l.getBoundingClientRect();
                                                         return r.top >= b.top - 1 && r.bottom <= b.bottom + 1; });
})"""


# every row of a scrolling code panel whole or out of view (a half-cut line at its top or bottom read as clipped
# code), and the lit rows of the Expression explorer's panel two lines at most (they were held to one, its lit line
# having wrapped; with its code at the 1366 x 768 screen's 23 px floor beside graphs at that floor, the engine's
# longest lit lines, about 60 characters, take two)
ROWS_WHOLE_JS = """() => [...document.querySelectorAll('.adx-scroll')].flatMap((box, p) => {
  const b = box.getBoundingClientRect(); const out = [];
  const rows = [...box.querySelectorAll('.adx-code .l, .adx-code .t')];
  const line = Math.min(...rows.map(r => r.getBoundingClientRect().height).filter(h => h > 0));
  rows.forEach(r => { const q = r.getBoundingClientRect();
    // a row under its block's title row, stuck at the panel's top, is covered by it: out of view, not cut
    const t = r.classList.contains('t') ? null : r.closest('.adx-code').querySelector('.t').getBoundingClientRect();
    const top = t && t.top <= b.top + 1 ? Math.max(b.top, t.bottom) : b.top;
    const inside = q.top >= top - 1 && q.bottom <= b.bottom + 1, outside = q.bottom <= top + 1 || q.top >= b.bottom - 1;
    if (!inside && !outside) out.push(`panel ${p + 1}: row ${r.dataset.line || 'title'} cut at the panel's edge`);
    if (r.classList.contains('hl') && box.getAttribute('data-testid') === 'code-panel' && q.height > line * 2.5)
      out.push(`panel ${p + 1}: lit row ${r.dataset.line} wraps onto three lines or more`); });
  return out; })"""


@pytest.mark.parametrize("path", ["Expression_explorer?step=8", "Backprop_orders?step=8"])
def test_the_code_panels_keep_the_lit_lines_in_view_as_steps_go(big_page_1920, app_url, wait_idle, path):
    """The engine's code scrolls inside its panel on a projector: the lines the step ran stay in view, on the
    first step shown and after each Step (a Step replaces the panels), every row whole or out of view."""
    pg = big_page_1920
    open_presenting(pg, f"{app_url}/{path}&present=1", wait_idle)
    for _ in range(3):
        # the panel scrolls itself once its script runs after the render: wait for it, then check
        try:
            pg.wait_for_function("() => { const v = (" + LIT_IN_VIEW_JS + ")(); "
                                 "return v.length > 0 && v.every(x => x !== false); }", timeout=TIMEOUT_MS)
        except Exception:  # noqa: BLE001 - the assertion below says what was wrong
            pass
        assert pg.evaluate(LIT_IN_VIEW_JS) and all(v is not False for v in pg.evaluate(LIT_IN_VIEW_JS))
        assert pg.evaluate(ROWS_WHOLE_JS) == []
        pg.get_by_role("button", name=re.compile(r"^\W*Step\b")).first.click()
        wait_drawn(pg)


# the walk's lit lines inside their panel's window and inside the browser's window (the first screen), and the
# panel itself not cut by the screen's bottom edge
LIT_ON_SCREEN_JS = """() => [...document.querySelectorAll('.adx-scroll')].map(box => {
  const b = box.getBoundingClientRect();
  // the walk's lit lines: the first block that has any (the op's rule, lit further down, scrolls into view)
  const first = [...box.querySelectorAll('.adx-code')].find(b => b.querySelector('.l.hl'));
  const lit = first ? [...first.querySelectorAll('.l.hl')] : [];
  if (!lit.length) return null;
  // the block's title row (the function's name) stuck inside the window, above the lit lines, never over them
  const t = first.querySelector('.t').getBoundingClientRect();
  return t.top >= b.top - 1 && t.bottom <= b.bottom + 1 && lit.every(l => l.getBoundingClientRect().top >= t.bottom - 1)
    && lit.every(l => { const r = l.getBoundingClientRect();
    return r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.top >= -0.5 && r.bottom <= window.innerHeight + 0.5
           && r.left >= -0.5 && r.right <= window.innerWidth + 0.5; })
         && (b.top >= window.innerHeight || b.bottom <= window.innerHeight + 1);
})"""


@pytest.mark.timeout(1800)   # 14 steps, each a rerun of the page: a minute each on a loaded 2-core machine
@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_backprop_orders_lit_code_line_on_the_first_screen_at_every_step(new_page, app_url, wait_idle, size):
    """Backprop orders in presentation mode, stepped from the first step to the last: at every step the lines the
    engine's code ran are lit, inside the code panel's window and inside the first screen (step 11 once
    scrolled them below the fold), under the title row of their function, which stays in the window however deep
    in a long function they lie."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    open_presenting(pg, f"{app_url}/Backprop_orders?present=1", wait_idle)
    caption = pg.get_by_text(re.compile(r"^Step \d+ of \d+ · ")).first
    caption.wait_for()
    total = int(re.match(r"^Step \d+ of (\d+)", caption.inner_text()).group(1))
    problems, lit_somewhere = [], []
    for step in range(1, total + 1):
        pg.get_by_text(re.compile(rf"^Step {step} of {total} · ")).first.wait_for()
        try:   # the panel scrolls itself once its script runs after the render
            pg.wait_for_function("() => { const v = (" + LIT_ON_SCREEN_JS + ")(); "
                                 "return v.length > 0 && v.every(x => x !== false); }", timeout=TIMEOUT_MS)
        except Exception:  # noqa: BLE001 - recorded below with what was wrong
            problems.append(f"step {step}: {pg.evaluate(LIT_ON_SCREEN_JS)}")
        lit_somewhere.append(any(v is True for v in pg.evaluate(LIT_ON_SCREEN_JS)))
        if step == 11:
            SHOTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(SHOTS / f"backprop_orders_lit_step11_{w}x{h}.png"))
        if step < total:
            pg.get_by_role("button", name=re.compile(r"^\W*Step\b")).first.click()
            wait_drawn(pg)
    assert problems == [], f"at {w} x {h}: " + "; ".join(problems)
    assert total < 11 or lit_somewhere[10], lit_somewhere   # step 11 (once below the fold) lights the engine's lines


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_topological_sort_keeps_its_table_of_steps_on_the_first_screen_at_every_step(new_page, app_url, wait_idle,
                                                                                     size):
    """The queue method's table of steps grows a row per step: under the graph its last rows ran below the fold at
    the last step. Beside the graph now, the whole table (every row so far), the graph, the step's header and the
    engine's own order (over the table, in the row of the program) lie in the window at every step, none on top of
    another."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    main = pg.locator('[data-testid="stMain"]')
    for step in range(1, 8):
        open_presenting(pg, f"{app_url}/Topological_sort?step={step}&present=1", wait_idle)
        table = main.locator('[data-testid="stTable"], [data-testid="stDataFrame"], table').filter(
            has_text="ready (queue)").first
        rows = table.locator("tbody tr")
        assert rows.count() == step
        boxes = [("table", table.bounding_box()), ("last row", rows.nth(step - 1).bounding_box()),
                 ("graph", main.locator(".js-plotly-plot").first.bounding_box()),
                 ("header", main.get_by_text(re.compile(rf"^Step {step} of 7 · ready")).first.bounding_box()),
                 ("engine's order", main.get_by_text(re.compile(ENGINE_ORDER)).first.bounding_box())]
        for name, box in boxes:
            assert box is not None, f"step {step}: {name} not drawn"
            assert box["x"] >= -0.5 and box["y"] >= -0.5 and box["x"] + box["width"] <= w + 0.5 \
                and box["y"] + box["height"] <= h + 0.5, f"step {step} at {w} x {h}: {name} {box} is off screen"
        for (n1, b1), (n2, b2) in itertools.combinations([b for b in boxes if b[0] != "last row"], 2):
            assert overlap(b1, b2) <= 1, f"step {step} at {w} x {h}: {n1} and {n2} overlap"
    pg.screenshot(path=str(SHOTS / f"topological_sort_last_step_{w}x{h}.png"))


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_learning_problems_contours_are_large_on_the_first_screen(new_page, app_url, wait_idle, size):
    """Read from the back row: the contour plot's square takes at least half the screen's height at both sizes
    (one row of controls over it: the folded choices beside the learning rate, the slider without a label row; it
    was 0.46 under two rows), whole on the first screen, its legend beside it (not across the column)."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    open_presenting(pg, f"{app_url}/Learning_problem?present=1", wait_idle)
    chart = pg.locator('[data-testid="stMain"] .js-plotly-plot').first
    plot = chart.locator(".nsewdrag").first.bounding_box()     # the plot area (the square), not the figure
    legend = chart.locator(".legend").first.bounding_box()
    box = chart.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= h + 0.5, (box, h)
    assert plot["height"] >= 0.5 * h and abs(plot["width"] - plot["height"]) <= 2, (plot, h)
    assert 0 <= legend["x"] - (plot["x"] + plot["width"]) <= 0.05 * w, (plot, legend)


# each Plotly chart of the main part: its texts' boxes (title, each tick label, the axis titles, each legend entry),
# the font sizes of tick labels and axis titles as drawn, and each line and marker against the plot's frame
CHART_PARTS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map(gd => {
  const box = r => ({x: r.left, y: r.top, width: r.width, height: r.height});
  const q = s => Array.from(gd.querySelectorAll(s));
  const union = els => {
    const rs = els.map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
    if (!rs.length) return null;
    const l = Math.min(...rs.map(r => r.left)), t = Math.min(...rs.map(r => r.top));
    return {x: l, y: t, width: Math.max(...rs.map(r => r.right)) - l, height: Math.max(...rs.map(r => r.bottom)) - t};
  };
  const texts = [];
  const add = (name, b) => { if (b && b.width > 0) texts.push({name, box: b}); };
  add('title', union(q('.g-gtitle text')));
  add('x title', union(q('.g-xtitle text')));
  add('y title', union(q('.g-ytitle text')));
  q('.xtick text').forEach(e => add('x tick ' + e.textContent, box(e.getBoundingClientRect())));
  q('.ytick text').forEach(e => add('y tick ' + e.textContent, box(e.getBoundingClientRect())));
  q('.legend .traces').forEach(e => add('legend ' + e.textContent,
                                        union(Array.from(e.querySelectorAll('.legendtext, .legendsymbols')))));
  const px = s => q(s).map(e => parseFloat(getComputedStyle(e).fontSize));
  // a line's box is its geometry: its stroke reaches half its width further (in screen px)
  const lines = q('.scatterlayer path.js-line').map(e => ({
    name: ((((e.closest('.trace') || {}).__data__ || [])[0] || {trace: {}}).trace.name || 'line'),
    box: box(e.getBoundingClientRect()),
    reach: parseFloat(getComputedStyle(e).strokeWidth) * e.getScreenCTM().a / 2}));
  const points = q('.scatterlayer path.point').map(e => ({name: 'marker', box: box(e.getBoundingClientRect()),
                                                         reach: 0}));
  return {chart: box(gd.querySelector('svg.main-svg').getBoundingClientRect()),
          plot: box(gd.querySelector('.nsewdrag').getBoundingClientRect()), texts,
          fonts: {xtick: Math.max(...px('.xtick text')), ytick: Math.max(...px('.ytick text')),
                  xtitle: Math.min(...px('.g-xtitle text')), ytitle: Math.min(...px('.g-ytitle text'))},
          drawn: lines.concat(points)};
})"""


def inside(inner: dict, outer: dict, reach: float = 0.0, slack: float = 0.5) -> bool:
    return (inner["x"] - reach >= outer["x"] - slack and inner["y"] - reach >= outer["y"] - slack
            and inner["x"] + inner["width"] + reach <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] + reach <= outer["y"] + outer["height"] + slack)


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])
@pytest.mark.parametrize("best", [0, 1])
def test_gradient_check_sweeps_are_whole_and_their_texts_apart(new_page, app_url, wait_idle, size, best):
    """Both h sweeps (float64, float32) on the first screen: every model band, curve and star inside the plot's frame
    (the float32 sweep's bands and star were cut by its y range), no two texts on top of each other (tick labels,
    axis titles, the legend's entries, the title), every text inside the chart, and each axis title at least as
    large as the numbers on its axis as Chromium draws them (Plotly's decades came 1.25 times the tick font)."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    open_presenting(pg, f"{app_url}/Gradient_check?present=1&show_best={best}", wait_idle)
    charts = pg.evaluate(CHART_PARTS_JS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"gradient_check_sweeps_{w}x{h}_best{best}.png"))
    assert len(charts) >= 2
    problems = []
    for i, c in enumerate(charts[:2]):
        where = ("float64", "float32")[i]
        if c["chart"]["y"] + c["chart"]["height"] > h + 0.5:
            problems.append(f"{where}: below the first screen")
        for n, a in enumerate(c["texts"]):
            if not inside(a["box"], c["chart"]):
                problems.append(f"{where}: {a['name']!r} cut at the chart's edge")
            for b in c["texts"][n + 1:]:
                if overlap(a["box"], b["box"]) > 1:
                    problems.append(f"{where}: {a['name']!r} on {b['name']!r}")
        for d in c["drawn"]:
            if d["box"]["width"] > 0 and not inside(d["box"], c["plot"], d["reach"]):
                problems.append(f"{where}: a {d['name']} cut at the plot's frame")
        f = c["fonts"]
        if f["xtitle"] < f["xtick"] - 0.05 or f["ytitle"] < f["ytick"] - 0.05:
            problems.append(f"{where}: axis titles smaller than their numbers {f}")
    assert problems == [], f"at {w} x {h}: " + "; ".join(problems)


SIGMOID = "expr=f+%3D+1+%2F+%281+%2B+exp%28-%28w+%2A+x%29%29%29&at=w+%3D+0.5%2C+x+%3D+2"


@pytest.mark.parametrize("step", [8, 12])
def test_the_sigmoid_neurons_lit_engine_lines_are_on_a_1366_first_screen(new_page, app_url, wait_idle, step):
    """The sigmoid neuron's graphs stand across the page, the code under them: at 1366 x 768 the engine's panel and
    every line its step lit lie inside the panel's window and on the first screen (they were below the fold)."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    open_presenting(pg, f"{app_url}/Expression_explorer?{SIGMOID}&step={step}&present=1", wait_idle)
    engine = LIT_ON_SCREEN_JS.replace("document.querySelectorAll('.adx-scroll')",
                                      "document.querySelectorAll('[data-testid=\"code-panel\"].adx-scroll')")
    try:   # the panel scrolls itself once its script runs after the render
        pg.wait_for_function(f"() => ({engine})()[0] === true", timeout=TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - the assertion says what was wrong
        pass
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"expression_explorer_sigmoid_step{step}_1366x768.png"))
    assert pg.evaluate(engine) == [True]


ONE_CLICK_ROW_JS = """() => [...document.querySelectorAll('[class*="st-key-adx_one_click"] [data-testid="stButton"] button')]
  .map(b => { const p = b.querySelector('p'); const r = b.getBoundingClientRect();
              const fit = document.querySelector('[data-testid="stApp"]').getBoundingClientRect().width
                          / document.querySelector('[data-testid="stApp"]').offsetWidth;
              return {text: p.innerText.replace(/\\s+/g, ' ').trim(), top: r.top, bottom: r.bottom, right: r.right,
                      cut: p.scrollWidth > p.clientWidth + 1, px: parseFloat(getComputedStyle(p).fontSize) * fit}; })"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_sentiment_presets_row_reads_in_words_on_one_line(new_page, app_url, wait_idle, size):
    """Sentiment training on a projector: the one-click presets and Start training in one row, every label whole (no
    ellipsis) at 16 px or more on the screen, HW2's preset saying its sizes in words ("HW2: 450/100" was cryptic)."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    open_presenting(pg, f"{app_url}/Sentiment_training?present=1", wait_idle)
    row = pg.evaluate(ONE_CLICK_ROW_JS)
    assert [b["text"] for b in row] == [
        "HW2 setup: 450 train / 100 validation sentences, 250 epochs", "Full SST-2",
        "HW2 with lr 0.25: watch the ReLUs die", "Start training"], row
    assert max(b["top"] for b in row) - min(b["top"] for b in row) <= 1, row      # one row
    assert all(not b["cut"] and b["px"] >= 16 - 0.05 and b["right"] <= w + 0.5 for b in row), row


STEP_LINE_JS = """(step) => { const el = [...document.querySelectorAll('[data-testid="stMain"] h4')]
  .find(e => e.innerText.startsWith(`Step ${step} of`)); if (!el) return null;
  const range = document.createRange(); range.selectNodeContents(el);   // the text's own lines (not the heading's padding)
  const r = range.getBoundingClientRect(); return {height: r.height, top: el.getBoundingClientRect().top,
  line: parseFloat(getComputedStyle(el).lineHeight) || parseFloat(getComputedStyle(el).fontSize) * 1.3}; }"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_learning_problems_step_line_stays_one_line_so_the_page_does_not_jump(new_page, app_url, wait_idle, size):
    """From step 7 (1920) / 14 (1366) the step's line wrapped to two and the page jumped 30-40 px between steps: at the
    steps the walk saw and on the longest line the page writes (the bowl at η = 0.25), one line at the same place."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    seen = []
    for query, step in (("step=1", 1), ("step=7", 7), ("step=14", 14), ("step=40", 40),
                        ("surface=bowl&lr=0.25&step=32", 32)):
        open_presenting(pg, f"{app_url}/Learning_problem?present=1&{query}", wait_idle)
        box = pg.evaluate(STEP_LINE_JS, step)
        assert box is not None, query
        seen.append((query, box))
    assert all(b["height"] <= 1.5 * b["line"] for _, b in seen), seen
    assert max(b["top"] for _, b in seen) - min(b["top"] for _, b in seen) <= 1, seen


# the contour plot's texts: each label's box, and the minimum's star
CONTOUR_LABELS_JS = """() => { const plot = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  const texts = {}; plot.querySelectorAll('.scatterlayer .textpoint text').forEach(t => texts[t.textContent] = box(t));
  const traces = [...plot.querySelectorAll('.scatterlayer .trace')];
  const star = traces[traces.length - 1].querySelector('.point');
  return {texts, star: star ? box(star) : null}; }"""


@pytest.mark.parametrize("step", [14, 40])
def test_learning_problems_point_by_the_minimum_leaves_the_star_and_labels_readable(new_page, app_url, wait_idle,
                                                                                    step):
    """Steps 14 and 40 at 1366 x 768: w₁₃ / w₃₉'s label covered the green star and its "min" label."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    open_presenting(pg, f"{app_url}/Learning_problem?present=1&step={step}", wait_idle)
    got = pg.evaluate(CONTOUR_LABELS_JS)
    name = "w" + str(step - 1).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
    here, low = got["texts"][name], got["texts"]["min"]
    assert overlap(here, low) <= 0, got
    assert got["star"] is not None and overlap(here, got["star"]) <= 1 and overlap(low, got["star"]) <= 1, got


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)], ids=["1920x1080", "1366x768"])
def test_cross_entropys_batch_caption_is_not_cut_by_the_first_screens_edge(new_page, app_url, wait_idle, size):
    """A lecturer's walk at 1366 x 768: the grey caption under the batch table sat flush on the bottom edge. It stands
    whole with room under it on the first screen, or starts on the next one."""
    w, h = size
    pg = new_page(viewport={"width": w, "height": h})
    open_presenting(pg, f"{app_url}/Cross_entropy_on_logits?present=1", wait_idle)
    box = pg.locator('[data-testid="stMain"]').get_by_text(re.compile(r"^Logits z = x·W")).first.bounding_box()
    assert box is not None
    assert box["y"] >= h or box["y"] + box["height"] <= h - 16, (box, h)
