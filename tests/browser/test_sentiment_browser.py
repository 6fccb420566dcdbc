"""Real-browser test of the Sentiment training page: live curves and the look inside grow, stop works, two
sessions at once, your own data uploaded (good and malformed), two runs overlaid."""
from __future__ import annotations

import re

import pytest
from browser_kit import TIMEOUT_MS, wait_stable, wait_until as kit_wait_until

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def needs_glove():
    from sentiment.embeddings import load_glove
    try:
        load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors: {e}")

MAIN = '[data-testid="stMain"]'
# the progress line is its own Markdown paragraph (above the bar)
PROGRESS_TEXT = """() => {
  const ps = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"] p'));
  const p = ps.find(p => /^(Epoch \\d|Finished|Stopped|Starting|Waiting|Failed)/.test(p.innerText));
  return p ? p.innerText : '';
}"""
# the live charts are Vega-Lite, drawn as SVG: per chart title, how much line / area path it draws
VEGA_INK = """() => {
  const out = {};
  document.querySelectorAll('[data-testid="stVegaLiteChart"]').forEach(el => {
    const t = el.querySelector('.role-title-text');
    const ink = Array.from(el.querySelectorAll('.mark-line path, .mark-area path'))
      .reduce((n, p) => n + (p.getAttribute('d') || '').length, 0);
    if (t) out[t.textContent] = ink;
  });
  return out;
}"""


def open_page(page, app_url, wait_idle):
    page.goto(f"{app_url}/Sentiment_training")
    wait_idle(page)
    page.locator(MAIN).get_by_role("button", name=re.compile("Start training$")).wait_for()


def press(page, name: str) -> None:
    """Click a button of the page (not the toolbar's Stop).

    Pause / Resume / Stop live in a fragment that the page re-renders every second while training;
    Playwright's actionability wait ("stable", "receives events") can then keep missing its window on a
    loaded machine, so the click is dispatched to the element directly (the same React click a user makes).
    """
    button = page.locator(MAIN).get_by_role("button", name=re.compile(f"{name}$"))
    button.wait_for()
    button.dispatch_event("click")


def set_number(page, label: str, value, wait_idle) -> None:
    box = page.get_by_label(label, exact=True)
    if not box.is_visible():   # once there is a run the settings fold away
        page.locator(MAIN).get_by_text(re.compile(r"^Settings: dataset")).first.click()
        box.wait_for(state="visible")
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page)


def progress_text(page) -> str:
    return page.evaluate(PROGRESS_TEXT)


def wait_until(page, cond, what="condition"):
    """``cond()`` holds, within the overall timeout; a failure quotes the progress line."""
    try:
        kit_wait_until(page, cond, what)
    except AssertionError as e:
        raise AssertionError(f"{e}; progress: {progress_text(page)!r}") from None


def ink(page, title: str) -> int:
    """How much line the chart titled ``title`` draws (grows with its data); -1 when it is not there."""
    return page.evaluate(VEGA_INK).get(title, -1)


def loss_points(page) -> int:
    return ink(page, "Training loss (binary cross-entropy)")


def epoch_shown(page) -> int:
    m = re.match(r"Epoch (\d+)/", progress_text(page))
    return int(m.group(1)) if m else -1


def test_start_watch_the_curve_grow_and_stop(page, app_url, wait_idle, shot):
    open_page(page, app_url, wait_idle)
    # the most the page allows: the compiled step trains 3000 epochs in 9 s on a quiet machine, and the checks
    # below (five progress updates, a pause held for seconds) must see it still running
    set_number(page, "Epochs", 10000, wait_idle)
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Epoch"), what="training to start")
    wait_until(page, lambda: loss_points(page) > 0, what="a loss curve")
    first, first_epoch = loss_points(page), epoch_shown(page)
    wait_until(page, lambda: loss_points(page) > first and epoch_shown(page) > first_epoch + 2,
               what="the loss curve to grow")
    assert re.search(r"examples/s", progress_text(page))
    # the progress line and the run's figures (epochs done, loss, accuracy) are one element, from one snapshot:
    # they never drift apart (figures in a row under the curves were painted a poll later)
    for _ in range(5):   # five successive readings, each a new update of the line
        shown = progress_text(page)
        running, done = re.match(r"Epoch (\d+)/", shown), re.search(r"\nepoch (\d+) / 10000 · train loss", shown)
        assert running and done and int(running.group(1)) - int(done.group(1)) in (0, 1), shown
        wait_until(page, lambda shown=shown: progress_text(page) != shown, what="the next progress update")
    assert re.search(r"\nepoch \d+ / 10000 · train loss [\d.]+ · validation accuracy [\d.]+% · best [\d.]+%$",
                     progress_text(page)), progress_text(page)
    # the page stays responsive while training: the Pause button answers at once
    press(page, "Pause")
    wait_until(page, lambda: "paused" in progress_text(page), what="pause")
    # the worker process pauses between batches; what it sent before still arrives: the epoch settles
    epoch_js = f"(({PROGRESS_TEXT})().match(/^Epoch (\\d+)\\//) || [])[1]"
    wait_stable(page, epoch_js, quiet_ms=1500)
    held = epoch_shown(page)
    wait_stable(page, epoch_js, quiet_ms=2000)   # and stays: the page polls on, nothing trains while paused
    assert epoch_shown(page) == held and "paused" in progress_text(page)
    shot(page, "sentiment_paused")
    press(page, "Resume")
    wait_until(page, lambda: "paused" not in progress_text(page), what="resume")
    press(page, "Stop")
    wait_until(page, lambda: progress_text(page).startswith("Stopped after"), what="stop")
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert "Validation sentences" in main.inner_text()
    assert "What an averaged bag of words cannot do" in main.inner_text()
    shot(page, "sentiment_stopped")


def test_two_browser_sessions_train_at_once(browser, app_url, wait_idle, shot):
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        pages = [c.new_page() for c in contexts]
        for pg in pages:
            pg.set_default_timeout(TIMEOUT_MS)
            open_page(pg, app_url, wait_idle)
            set_number(pg, "Epochs", 10000, wait_idle)   # each run must still train when it is checked
        set_number(pages[1], "Seed", 7, wait_idle)
        for pg in pages:
            press(pg, "Start training")
        for pg in pages:
            wait_until(pg, lambda pg=pg: loss_points(pg) > 5, what="both sessions to train")
        # stopping one session's training leaves the other running
        press(pages[0], "Stop")
        wait_until(pages[0], lambda: progress_text(pages[0]).startswith("Stopped after"), what="stop A")
        stopped_at = progress_text(pages[0])
        before = epoch_shown(pages[1])
        wait_until(pages[1], lambda: epoch_shown(pages[1]) > before + 2, what="B to keep training")
        assert progress_text(pages[0]) == stopped_at  # A stays stopped
        assert progress_text(pages[1]).startswith("Epoch")
        shot(pages[1], "sentiment_second_session")
        press(pages[1], "Stop")
        wait_until(pages[1], lambda: progress_text(pages[1]).startswith("Stopped after"), what="stop B")
    finally:
        for c in contexts:
            c.close()


def test_the_look_inside_updates_while_training(page, app_url, wait_idle, shot):
    """lr 0.25 (one click): the dead-ReLU chart and the network drawn with live numbers keep changing, while it
    trains or, when the run was over before the changes were seen (the compiled step trains the 250 epochs in
    about two seconds on a quiet machine), in the replay a lecturer starts then."""
    open_page(page, app_url, wait_idle)
    press(page, "HW2 with lr 0.25: watch the ReLUs die")
    main = page.locator(MAIN)
    units_title = main.get_by_text(re.compile(r"^Hidden units (in|after) epoch \d+"))
    network = page.locator('[data-testid="stImage"] img').first

    def watch() -> bool:
        """From the first look inside on: True once the network, the chart and its title have all changed, False
        if the run finished first."""
        wait_until(page, lambda: ink(page, "dead ReLU units") > 0, what="the look inside")
        first_ink, first_title = ink(page, "dead ReLU units"), units_title.inner_text()
        drawings = {network.get_attribute("src")}   # every drawing of the network is collected from here on

        def changed() -> bool:
            drawings.add(network.get_attribute("src"))
            return (len(drawings) > 1 and ink(page, "dead ReLU units") > first_ink
                    and units_title.inner_text() != first_title)

        wait_until(page, lambda: changed() or (progress_text(page).startswith("Finished after") and not changed()),
                   what="the look inside to update (or the run to finish)")
        return changed()

    if not watch():
        press(page, "Replay slowly")
        wait_until(page, lambda: main.get_by_role("button", name=re.compile("End replay")).count() > 0,
                   what="the replay")
        assert watch(), "the replay redraws the look inside as it goes"
    assert ink(page, "weight norm ‖W‖") > 0 and ink(page, "update / weight ‖ΔW‖/‖W‖") > 0
    assert re.search(r"\d+ of 32 dead", main.inner_text())
    shot(page, "sentiment_look_inside")
    stop = main.get_by_role("button", name=re.compile("Stop$"))
    if stop.count() and not progress_text(page).startswith("Finished after"):  # it may have finished by now
        stop.first.dispatch_event("click")
    wait_until(page, lambda: progress_text(page).startswith(("Stopped after", "Finished after")),
               what="stop")


def test_upload_malformed_then_good_file_and_train_on_it(page, app_url, wait_idle, tmp_path, shot):
    open_page(page, app_url, wait_idle)
    page.get_by_label("Dataset").click()
    page.get_by_role("option", name=re.compile("^Your own data")).click()
    wait_idle(page)
    bad = tmp_path / "reviews_bad.csv"
    bad.write_text("sentence,label\na fine film,1\nawful,maybe\n")
    uploader = page.locator('[data-testid="stFileUploader"]').first.locator('input[type="file"]')
    uploader.set_input_files(str(bad))
    wait_idle(page)
    main = page.locator(MAIN)
    wait_until(page, lambda: "Not accepted" in main.inner_text(), what="the error")
    text = main.inner_text()
    assert "reviews_bad.csv, line 3" in text and "maybe" in text
    shot(page, "sentiment_upload_malformed")
    good = tmp_path / "reviews.tsv"
    rows = [("a moving , wonderful film", 1), ("dull and boring", 0), ("great acting", 1), ("a total mess", 0),
            ("i loved it", 1), ("terrible script", 0), ("funny and warm", 1), ("bad", 0), ("brilliant", 1), ("awful", 0)]
    good.write_text("\n".join(f"{s}\t{y}" for s, y in rows) + "\n")
    uploader.set_input_files(str(good))
    wait_idle(page)
    wait_until(page, lambda: "8 training sentences from reviews.tsv" in main.inner_text(),
               what="the upload to be accepted")
    assert "Not accepted" not in main.inner_text()
    set_number(page, "Epochs", 3, wait_idle)
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Finished after 3/3"), what="training")
    wait_idle(page)
    assert "8 training / 2 validation sentences" in main.inner_text()
    assert "best checkpoint: epoch" in main.inner_text()
    shot(page, "sentiment_upload_trained")


def test_two_runs_overlaid(page, app_url, wait_idle, shot):
    open_page(page, app_url, wait_idle)
    set_number(page, "Epochs", 3, wait_idle)
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Finished after 3/3"), what="run 1")
    wait_idle(page)
    set_number(page, "Learning rate", 0.1, wait_idle)
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Finished after 3/3"), what="run 2")
    wait_idle(page)
    main = page.locator(MAIN)
    wait_until(page, lambda: "Compare runs (2 kept" in main.inner_text(), what="the comparison")
    names = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(el => el.layout && el.layout.title && String(el.layout.title.text).includes('2 runs'))
        .map(el => el.data.map(t => t.name))""")
    assert names and names[0] == ["run 1: lr 0.01 adam, dropout 0.5, hidden 32, numpy",
                                  "run 2: lr 0.1 adam, dropout 0.5, hidden 32, numpy"], names
    shot(page, "sentiment_two_runs")


LEGEND_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stVegaLiteChart"] svg')]
  .map(svg => { const b = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('.role-legend text, .role-title text')].map(t => {
      const r = t.getBoundingClientRect();
      return {text: t.textContent, left: r.left - b.left, right: b.right - r.right}; }); })"""


def test_hw2_preset_at_1400_no_tooltip_left_open_curves_on_the_first_screen_legends_whole(new_page, app_url, wait_idle,
                                                                                            shot):
    """The lecturer's walkthrough at 1400 x 900: after the HW2 preset's click no tooltip stays open over the page
    (the pointer rests on the button), the curves start on the first screen (the settings fold away) and no
    legend name is cut ("best validation so fa…")."""
    pg = new_page(viewport={"width": 1400, "height": 900})   # closed (and photographed if it fails) by the fixture
    open_page(pg, app_url, wait_idle)
    main = pg.locator(MAIN)
    tooltip = pg.locator('[data-testid="stTooltipContent"]')
    # the check can fail: a widget with help shows its tooltip under the pointer
    main.locator('[data-testid="stTooltipIcon"]:visible').first.hover()
    tooltip.first.wait_for(state="visible", timeout=TIMEOUT_MS)
    preset = main.get_by_role("button", name=re.compile(r"^\W*HW2 setup: 450 train"))
    preset.hover()
    open_tip = "Boolean([...document.querySelectorAll('[data-testid=\"stTooltipContent\"]')].find(t => t.offsetParent))"
    wait_stable(pg, open_tip, quiet_ms=1500)   # a tooltip would open after its delay: the reading must hold
    assert not (tooltip.count() and tooltip.first.is_visible()), tooltip.first.inner_text()
    preset.click()
    wait_until(pg, lambda: progress_text(pg).startswith("Finished after"), what="HW2's run")
    wait_idle(pg)
    wait_stable(pg, open_tip, quiet_ms=1500)
    assert not (tooltip.count() and tooltip.first.is_visible()), tooltip.first.inner_text()
    assert not main.get_by_label("Learning rate", exact=True).is_visible()   # folded away
    charts = main.locator('[data-testid="stVegaLiteChart"] svg')
    for i in range(2):
        box = charts.nth(i).bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + 0.6 * box["height"] <= 900, (i, box)
    legends = pg.evaluate(LEGEND_JS)
    assert {"training", "validation", "best validation"} <= {t["text"] for t in legends[1]}, legends[1]
    cut = [t for chart in legends[:2] for t in chart if t["left"] < -0.5 or t["right"] < -0.5
           or t["text"].endswith("…")]
    assert not cut, cut
    text = main.inner_text()
    assert re.search(r"Hidden units (in epoch \d+, after batch \d+ of \d+|after epoch \d+): ", text)
    assert re.search(r"(\d+) distinct words have no GloVe vector and share one fixed random vector: (\d+) "
                     r"occurrences, (\d+) in the training and (\d+) in the validation sentences", text)
    shot(pg, "sentiment_hw2_1400x900")


@pytest.fixture(scope="module")
def own_server(tmp_path_factory, start_streamlit):
    """A server of this module's own, so that its log holds only what these tests' clicks add."""
    log = tmp_path_factory.mktemp("streamlit-quiet") / "server.log"
    with start_streamlit("app/Home.py", log) as url:
        yield url, log


def test_a_training_adds_no_line_to_the_server_log(page, own_server, wait_idle):
    """A lecturer's terminal stays readable: Start training (a worker process from the fork server) writes
    nothing to the server's output. Each start used to add ~205 lines: the worker ran the page's script as its
    ``__main__`` outside Streamlit ("missing ScriptRunContext!", "to view this Streamlit app ... streamlit run")."""
    url, log = own_server
    open_page(page, url, wait_idle)
    set_number(page, "Epochs", 3, wait_idle)
    before = log.read_text(errors="replace")
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Finished after 3/3"), what="training")
    wait_idle(page)
    # a second run: the fork server is already up, and the worker is started again
    press(page, "Start training")
    wait_until(page, lambda: progress_text(page).startswith("Finished after 3/3")
               and "Compare runs (2 kept" in page.locator(MAIN).inner_text(), what="a second training")
    wait_idle(page)
    added = log.read_text(errors="replace")[len(before):]
    assert [ln for ln in added.splitlines() if ln.strip()] == [], added[:3000]


# the progress line of a projector's run, a replay included
PRESENT_PROGRESS = """() => {
  const ps = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"] p'));
  const p = ps.find(p => /^(Replay over|Finished|Stopped|Epoch \\d|Starting|Waiting|Failed)/.test(p.innerText));
  return p ? p.innerText : '';
}"""
# the network picture (Graphviz's SVG as an image): its text's size on the screen, from the SVG's own font size (the
# page draws it at 20 pt) and the scale the image and the projector page are drawn at
PICTURE_TEXT_PX = """() => {
  const img = document.querySelector('[data-testid="stMain"] [data-testid="stImage"] img');
  if (!img || !img.naturalWidth) return null;
  return 20 * (4 / 3) * img.getBoundingClientRect().width / img.naturalWidth;
}"""


def test_on_a_projector_a_finished_run_replays_itself_with_the_goal_line_and_a_readable_network(new_page, app_url,
                                                                                               wait_idle):
    """The lecturer's walk at 1366 x 768: Start training finished at once and the class saw no curve grow, the
    goal line went away after training, and the trained network's text was ~14 px: the run replays itself (End
    replay ends it), the dashed goal line stays, the network's text is 16 px or more, and the Previous / Home / Next
    box leaves room above the row of presets (it touched it)."""
    pg = new_page(viewport={"width": 1366, "height": 768})
    pg.goto(f"{app_url}/Sentiment_training?present=1")
    wait_idle(pg)
    main = pg.locator(MAIN)
    nav, row = pg.locator(".st-key-adx_present_nav").first, pg.locator(".st-key-adx_one_click").first
    nav.wait_for()
    gap = row.bounding_box()["y"] - (nav.bounding_box()["y"] + nav.bounding_box()["height"])
    assert gap >= 8, gap
    main.get_by_role("button", name=re.compile(r"^\W*Start training$")).click()
    kit_wait_until(pg, lambda: pg.evaluate(PRESENT_PROGRESS).startswith("Replay over"), "the replay started by itself")
    rule = '[data-testid="stVegaLiteChart"] .mark-rule path, [data-testid="stVegaLiteChart"] .mark-rule line'
    kit_wait_until(pg, lambda: main.locator(rule).count() >= 1, "the goal line during the replay")
    assert "HW2 target 75%" in main.inner_text()
    main.get_by_role("button", name=re.compile(r"End replay$")).click()
    kit_wait_until(pg, lambda: pg.evaluate(PRESENT_PROGRESS).startswith("Finished after"), "the run's end")
    wait_idle(pg)
    kit_wait_until(pg, lambda: main.locator(rule).count() >= 1, "the goal line after training")
    kit_wait_until(pg, lambda: (pg.evaluate(PICTURE_TEXT_PX) or 0) > 0, "the network picture")
    assert pg.evaluate(PICTURE_TEXT_PX) >= 16 - 0.05, pg.evaluate(PICTURE_TEXT_PX)
    box = main.locator('[data-testid="stImage"] img').first.bounding_box()
    assert box["x"] + box["width"] <= 1366 and box["y"] + box["height"] <= 768 + 0.5, box   # on the first screen
