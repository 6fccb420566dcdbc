"""An exported walk-through opened from disk in Chromium with the network off: stepped with the keyboard, the
slider and Play, each step shows what the page's step model gives (explorer/kit/export_html.py)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from explorer.expression_explorer import explorer_model, walkthrough
from explorer.kit import presets
from explorer.kit.backward_view import backward_frameset

EXAMPLES = [presets.DEFAULT, next(p for p in presets.PRESETS if p.label.startswith("Sigmoid quiz"))]


@pytest.mark.parametrize("preset", EXAMPLES, ids=["slide example", "sigmoid quiz"])
def test_an_exported_file_steps_offline_with_the_keyboard(browser, tmp_path, preset):
    model = explorer_model(preset.program, preset.inputs)
    back = backward_frameset(model.frameset, model.shown_trace.graph.without_constants())
    path = tmp_path / "walkthrough.html"
    path.write_text(walkthrough(model, preset.program, preset.inputs), encoding="utf-8")
    n = model.n_frames

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    asked: list[str] = []
    context.on("request", lambda r: asked.append(r.url))
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                  else route.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        count, step = page.get_by_test_id("step-count"), page.get_by_test_id("step")
        forward, backward = page.locator('svg[data-testid="graph-1"]'), page.locator('svg[data-testid="graph-2"]')

        def shows(k: int) -> None:
            """Step k (0-based) as the page's step model has it."""
            expect(count).to_have_text(f"Step {k + 1} of {n}")
            expect(step).to_contain_text(f"Step {k + 1} of {n} · {model.phase(k)}")
            expect(step).to_contain_text(" ".join(model.caption(k).split()))
            frame = model.frameset.frames[k]
            for line in [t.split("\n")[0] for t in frame.node_text] + list(frame.node_adjoint):
                if line:
                    expect(forward).to_contain_text(line)
            for line in back.frames[k].node_text:
                if line:
                    expect(backward).to_contain_text(line)

        shows(0)
        for k in range(1, n):
            page.keyboard.press("ArrowRight" if k % 2 else "PageDown")
            shows(k)
        page.keyboard.press("PageUp")
        shows(n - 2)
        page.keyboard.press("ArrowLeft")
        shows(n - 3)
        page.keyboard.press("Home")
        shows(0)
        page.locator(".adx-slider").fill(str(n - 1))
        shows(n - 2)
        page.get_by_role("button", name="Step").click()
        shows(n - 1)
        page.get_by_role("button", name="Back").click()
        shows(n - 2)
        page.get_by_role("button", name="Play").click()       # plays on to the last step and stops there
        shows(n - 1)
        expect(page.get_by_role("button", name="Play")).to_be_visible()
        assert not errors
        assert asked and all(u.startswith("file:") for u in asked), asked
    finally:
        context.close()


def _plotly_texts(page, k: int) -> list[str]:
    return sorted(t for t in page.locator(".js-plotly-plot").nth(k).locator("g.textpoint text").all_text_contents()
                  if t.strip())


def test_the_pages_download_shows_the_step_the_page_shows(browser, page, app_url, wait_idle, tmp_path):
    page.goto(f"{app_url}/Expression_explorer?step=10")
    wait_idle(page)
    header = page.get_by_text("Step 10 of 14").first
    expect(header).to_be_visible()
    drawn = [_plotly_texts(page, 0), _plotly_texts(page, 1)]       # the forward and the backward graph
    caption = " ".join(page.locator('[data-testid="stMarkdownContainer"]', has_text="Step 10 of 14").first
                       .inner_text().split())
    with page.expect_download() as download:
        page.get_by_role("button", name="Download this walk-through (HTML)").click()
    path = tmp_path / "walkthrough.html"
    download.value.save_as(path)

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    try:
        offline = context.new_page()
        offline.goto(path.as_uri() + "#step=10")
        expect(offline.get_by_test_id("step-count")).to_have_text("Step 10 of 14")
        assert " ".join(offline.locator(".adx-header").inner_text().split()) == caption
        for k, texts in enumerate(drawn):
            graph = offline.locator(f'svg[data-testid="graph-{k + 1}"]')
            assert sorted(t for t in graph.locator("tspan").all_text_contents() if t.strip()) == texts
    finally:
        context.close()


def test_an_exported_orders_file_steps_offline_and_shows_each_orders_step(browser, tmp_path):
    from explorer.backprop_orders import STRATEGY_LABELS, fits_half_width, orders_model, walkthrough as orders_file
    p, chosen = presets.DEFAULT, ("topological", "bfs_first_touch")
    model = orders_model(p.program, p.inputs, chosen)
    path = tmp_path / "orders.html"
    path.write_text(orders_file(model, chosen, fits_half_width(model), p.program, p.inputs), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        step = page.get_by_test_id("step")
        for k in range(model.n_frames):
            if k:
                page.keyboard.press("PageDown")
            expect(page.get_by_test_id("step-count")).to_have_text(f"Step {k + 1} of {model.n_frames}")
            for s in chosen:
                view = model.views[s]
                fr = view.frameset.frames[min(k, view.n_frames - 1)]
                expect(step).to_contain_text(STRATEGY_LABELS[s])
                expect(step).to_contain_text(view.verdict_line(min(k, view.n_frames - 1))[1])
                expect(step).to_contain_text(f"{fr.phase}: {' '.join(fr.caption.split())}")
    finally:
        context.close()


def test_the_graph_downloads_are_made_when_clicked(page, app_url, wait_idle, tmp_path):
    """The Expression explorer's DOT and SVG downloads are made on the click (not hashed again at every Step): the
    files are the model's own."""
    page.goto(f"{app_url}/Expression_explorer?step=3")
    wait_idle(page)
    page.get_by_role("tab", name="Graph and gradient graph").click()
    files = {}
    for label, name in [("Download graph (DOT)", "graph.dot"), ("Download gradient graph (DOT)", "gradient.dot"),
                        ("Download graph (SVG)", "graph.svg")]:
        button = page.get_by_role("button", name=label)
        expect(button).to_be_visible()
        with page.expect_download() as download:
            button.click()
        download.value.save_as(tmp_path / name)
        files[name] = (tmp_path / name).read_text(encoding="utf-8")
    model = explorer_model(presets.DEFAULT.program, presets.DEFAULT.inputs)
    assert files["graph.dot"] == model.forward_dot()
    assert files["gradient.dot"] == model.gradient_dot()
    assert files["graph.svg"].lstrip().startswith("<?xml") or "<svg" in files["graph.svg"][:400]
