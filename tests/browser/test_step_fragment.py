"""A Step reruns only the stepper's fragment: read from the messages the server sends the browser.

Every stepped page draws its step controls and the step's view inside one ``st.fragment``
(:func:`explorer.kit.widgets.stepper`). A click on Step must make the server run that fragment only: the
run ends as a fragment run, every element it sends belongs to the fragment, and the page's title, program
boxes and the sections under the stepper are not sent again; the header, the URL's step and the slider
still show the new step. Play, and a widget inside the fragment that the rest of the page reads, rerun the
whole page.
"""
from __future__ import annotations

import re

import pytest
from browser_kit import wait_stable, wait_until

pytestmark = pytest.mark.browser

STEPPED = ("Expression_explorer", "Backprop_orders", "Network_explorer", "Topological_sort", "Forward_vs_reverse")


def listen(page) -> list:
    """The ForwardMsgs the page's websocket receives from now on (decoded with Streamlit's own protobufs)."""
    from explorer.kit.streamlit_private import private
    ForwardMsg = private("ForwardMsg")

    got: list = []

    def on_ws(ws):
        def received(payload):
            if isinstance(payload, (bytes, bytearray)):
                msg = ForwardMsg()
                msg.ParseFromString(bytes(payload))
                got.append(msg)
        ws.on("framereceived", received)

    page.on("websocket", on_ws)
    return got


def finished(msgs: list) -> list[str]:
    from explorer.kit.streamlit_private import private
    ForwardMsg = private("ForwardMsg")

    return [ForwardMsg.ScriptFinishedStatus.Name(m.script_finished) for m in msgs
            if m.WhichOneof("type") == "script_finished"]


def elements(msgs: list) -> list[tuple[str, str]]:
    """(element type, fragment id) of every new element sent."""
    return [(m.delta.new_element.WhichOneof("type"), m.delta.fragment_id) for m in msgs
            if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element"]


def header_step(page) -> int:
    text = page.get_by_text(re.compile(r"Step \d+ of \d+")).first.inner_text()
    return int(re.search(r"Step (\d+) of", text).group(1))


@pytest.mark.parametrize("present", [True, False], ids=["presenting", "laptop"])
@pytest.mark.parametrize("name", STEPPED)
def test_step_reruns_only_the_stepper_fragment(page, app_url, wait_idle, name, present):
    msgs = listen(page)
    page.goto(f"{app_url}/{name}" + ("?present=1" if present else ""))
    wait_idle(page)
    # the page's first run is the whole script (Backprop orders' own polling fragments may finish after it)
    assert "FINISHED_SUCCESSFULLY" in finished(msgs), finished(msgs)
    whole = elements(msgs)
    assert any(fid == "" for _, fid in whole)                 # the title and the rest sit outside the fragment
    before = header_step(page)
    msgs.clear()
    page.get_by_role("button", name=re.compile(r"^\W*Step\b")).first.click()
    wait_idle(page)
    assert header_step(page) == before + 1
    assert finished(msgs) == ["FINISHED_FRAGMENT_RUN_SUCCESSFULLY"], finished(msgs)
    sent = elements(msgs)
    fragments = {fid for _, fid in sent}
    assert len(fragments) == 1 and "" not in fragments, fragments   # one fragment, nothing of the page around it
    assert fragments <= {fid for _, fid in whole}
    assert len(sent) < len(whole)
    types = [t for t, _ in sent]
    assert "button" in types and "plotly_chart" in types       # the controls and the step's graph
    assert f"step={before + 1}" in page.url                     # the link follows the step from the fragment
    thumb = page.locator('[data-testid="stMain"] [data-testid="stSliderThumbValue"]').first
    assert thumb.inner_text().strip() == str(before + 1)        # the slider, redrawn by the same run


def test_play_and_a_page_wide_choice_rerun_the_whole_page(page, app_url, wait_idle):
    msgs = listen(page)
    page.goto(f"{app_url}/Expression_explorer?expr=y%20%3D%20tanh(x)%20*%20x&at=x%20%3D%200.5")
    wait_idle(page)
    # the checkbox sits inside the stepped fragment but changes the graph the page builds before the stepper
    nodes = page.locator(".js-plotly-plot").first.inner_text()
    msgs.clear()
    page.get_by_text("Show tanh, softmax").click()
    wait_idle(page)
    assert finished(msgs)[-1] == "FINISHED_SUCCESSFULLY", finished(msgs)
    assert "sigmoid" in page.locator(".js-plotly-plot").first.inner_text() and "sigmoid" not in nodes
    # Play starts a timer outside the fragment: the click reruns the whole page, and the steps move on
    msgs.clear()
    page.get_by_role("button", name=re.compile(r"\bPlay\b")).click()
    wait_until(page, lambda: "FINISHED_SUCCESSFULLY" in finished(msgs)
               and any(m.WhichOneof("type") == "auto_rerun" for m in msgs), what="Play's run and its timer")
    # the timer's first tick moves the step on (the message above only starts the timer): wait for the tick
    wait_until(page, lambda: header_step(page) > 1, what="Play's first step")
    page.get_by_role("button", name=re.compile(r"\bPause\b")).click()
    wait_idle(page)
    assert header_step(page) > 1


RECORD_STEPS_JS = """() => {
  window.__adSteps = [];
  const read = () => { const h = [...document.querySelectorAll('h4, p, span')].find(e => /^Step \\d+ of \\d+/.test(e.innerText || ''));
                       const k = h ? parseInt(h.innerText.match(/^Step (\\d+)/)[1]) : null;
                       if (k !== null && window.__adSteps[window.__adSteps.length - 1] !== k) window.__adSteps.push(k); };
  read();
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_a_step_while_the_page_still_polls_moves_exactly_one_step(new_page, app_url):
    """Backprop orders polls its random-graph run and its VJP count for seconds after it loads; a Step clicked
    then must move one step and stay there. It used to be undone (the poll carried the slider's old value,
    read as a drag back) or applied twice (Streamlit ran the button's callback again after the poll stopped
    the Step's run before the script began), about one click in three: so five fresh sessions."""
    for trial in range(5):
        pg = new_page(viewport={"width": 1920, "height": 1080})
        pg.goto(f"{app_url}/Backprop_orders?present=1")
        pg.get_by_text(re.compile(r"Step \d+ of \d+")).first.wait_for()
        assert header_step(pg) == 1
        pg.evaluate(RECORD_STEPS_JS)   # every step the header shows from now on, as the DOM changes
        pg.get_by_role("button", name=re.compile(r"^\W*Step\b")).first.click()
        # the polls go on for a few seconds: the step must reach 2 and stay there through them
        pg.wait_for_function("() => window.__adSteps.includes(2)")
        wait_stable(pg, "window.__adSteps", quiet_ms=3000)
        seen = pg.evaluate("window.__adSteps")
        assert seen[-1] == 2 and set(seen) <= {1, 2} and seen == sorted(seen), (trial, seen)
        assert "step=2" in pg.url, (trial, pg.url)
        pg.context.close()   # passed: the next trial in a fresh session (a failed one stays open for its picture)
