"""A class in real browsers, across replicas, all through HAProxy to two Streamlit replicas sharing Redis (one
stack for the module):

* a lecturer (1920x1080, presentation mode) and two students on phones (390x844), one per replica: the students
  follow the lecturer's step, answer a question, and see the reveal; the lecturer sees the count and the share
  right;
* a lecturer and three students (two laptops, one per replica, and a phone) through a lecture's accidents: the
  relayed step (the students' pages run nothing), a number question whose answer stays hidden until Reveal, page
  changes, Detach / Rejoin on the first click, the lecturer's reload, the lecturer's link on a second device, a
  replica killed under its students, and a Redis restart.

Every wait is for a condition on the page (Playwright's waits), never for the clock.
Screenshots: test-output/screenshots/class_*.png.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from browser_kit import TIMEOUT_MS

from benchmarks.class_stack import ClassStack
from tests.debian_programs import require

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"

PHONE = {"width": 390, "height": 844}
STEP_WAIT_MS = 20_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    require("redis-server", "haproxy")
    with ClassStack(tmp_path_factory.mktemp("class")) as s:
        yield s


def _screen(pg, name: str) -> None:
    """The first screen as the projector or the phone shows it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _replica(context) -> str:
    return {c["name"]: c["value"] for c in context.cookies()}.get("explorer_replica", "")


def _student_on(browser, url: str, replica: str):
    """A phone browser whose first page came from ``replica`` (the proxy alternates new browsers)."""
    for _ in range(6):
        ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        pg.goto(url + "/_stcore/health")
        if _replica(ctx) == replica:
            return ctx, pg
        ctx.close()
    pytest.fail(f"no browser was sent to {replica}")


def test_a_lecturer_and_two_students_on_two_replicas(browser, stack, wait_idle):
    url = stack.url
    lec_ctx = browser.new_context(viewport={"width": 1920, "height": 1080})
    lec = lec_ctx.new_page()
    lec.set_default_timeout(TIMEOUT_MS)
    lec.goto(url + "/Expression_explorer")
    wait_idle(lec)
    sidebar = lec.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Class", exact=True).click()
    sidebar.get_by_role("button", name="Start a class").click()
    bar = lec.get_by_text(re.compile(r"Class [A-Z0-9]{6} — your students follow this page"))
    bar.wait_for()
    code = re.search(r"Class ([A-Z0-9]{6})", bar.inner_text()).group(1)
    lec.get_by_text("Presentation mode").click()                 # the projector: no sidebar, large text
    wait_idle(lec)
    assert not sidebar.is_visible()

    students = [_student_on(browser, url, r) for r in ("app1", "app2")]
    for ctx, pg in students:
        pg.goto(f"{url}/?join={code}")
        pg.get_by_role("heading", name="Expression explorer").wait_for(timeout=TIMEOUT_MS)
        pg.get_by_text("following the lecturer").wait_for()
    assert {_replica(c) for c, _ in students} == {"app1", "app2"}     # one student per replica

    # follow: the lecturer steps into the backward pass; both phones show the same step
    for _ in range(7):
        lec.get_by_role("button", name="Step").first.click()
        wait_idle(lec)
    assert lec.get_by_text("Step 8 of 14").count() >= 1
    for _, pg in students:
        pg.get_by_text("Step 8 of 14").first.wait_for(timeout=STEP_WAIT_MS)
    _screen(lec, "class_lecturer_1920")

    # the join code, for the projector
    lec.get_by_role("button", name="Join code").click()
    dialog = lec.get_by_role("dialog")
    dialog.get_by_text(code, exact=True).wait_for()
    dialog.get_by_role("img").first.wait_for()                    # the QR code
    dialog.get_by_text(re.compile("join=" + code)).first.wait_for()   # the link (its code block can paint last)
    _screen(lec, "class_lecturer_join_code_1920")
    lec.keyboard.press("Escape")
    dialog.wait_for(state="hidden")

    # a question from the engine's trace: which node is taken next (x5)
    lec.get_by_role("button", name="Ask the class").click()
    dialog = lec.get_by_role("dialog")
    dialog.get_by_text("Which node is taken next?").wait_for()
    dialog.get_by_role("button", name="Ask", exact=True).click()
    dialog.get_by_text("Question 1:").wait_for()
    for (_, pg), pick in zip(students, ("x5", "x3")):
        pg.get_by_text("Which node does the backward pass take next?").wait_for(timeout=STEP_WAIT_MS)
        pg.get_by_role("button", name=pick, exact=True).click()
        pg.get_by_text(f"Your answer: {pick}").wait_for(timeout=STEP_WAIT_MS)
    _screen(students[0][1], "class_student_question_390")
    dialog.get_by_text("2 answered", exact=True).wait_for(timeout=STEP_WAIT_MS)   # the live count (never who)
    dialog.get_by_role("button", name="Reveal").click()
    dialog.get_by_text(re.compile(r"The engine's answer: x5 · 50% of the class got it right")).wait_for()
    lec.wait_for_function("""() => { const b = [...document.querySelectorAll('[role="dialog"] button')]
                                       .find(b => b.innerText.trim() === 'Reveal'); return b && b.disabled; }""")
    _screen(lec, "class_lecturer_reveal_1920")
    students[0][1].get_by_text("you were right").wait_for(timeout=STEP_WAIT_MS)
    students[1][1].get_by_text("you answered x3").wait_for(timeout=STEP_WAIT_MS)
    _screen(students[1][1], "class_student_reveal_390")

    # a phone shows the page without sideways scrolling, and no student can drive: no class controls
    pg = students[0][1]
    width = pg.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1
    assert pg.get_by_role("button", name="Ask the class").count() == 0
    assert pg.get_by_role("button", name="Reveal").count() == 0
    # following on a phone: the class's view only (the page's own controls come back with Detach)
    assert not pg.get_by_role("button", name=re.compile(r"^\W*Step\b")).first.is_visible()
    assert pg.get_by_role("button", name="Detach").is_visible()
    for ctx, _ in students:
        ctx.close()
    lec_ctx.close()


def _follows(pg, text: str, timeout: int = STEP_WAIT_MS) -> None:
    """Wait until the relayed view (drawn by follow.js, not by a page run) shows ``text``."""
    pg.wait_for_function("""t => { const r = document.querySelector('#adx-follow');
                                   return !!(r && r.dataset.shownVersion && r.textContent.includes(t)); }""",
                         arg=text, timeout=timeout)


# records whether the page ever shows a question's card (``prompt``) while the relayed view shows ``answer``
LEAK_WATCH_JS = """([prompt, answer]) => {
  window.__adxLeak = null;
  const check = () => {
    const view = document.querySelector('#adx-follow .adx-follow-view');
    if (view && view.textContent.includes(answer) && document.body.innerText.includes(prompt))
      window.__adxLeak = window.__adxLeak || view.textContent.slice(0, 200);
  };
  new MutationObserver(check).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def _relayed_text(pg) -> str:
    return pg.evaluate("() => document.querySelector('#adx-follow .adx-follow-view')?.textContent || ''")


def _nav(pg, name: str):
    """The sidebar's link to page ``name`` (the home page's agenda links to every page too: a page opened on the
    home page, as the lecturer's link does while the class's page is on its way, would find two)."""
    return pg.get_by_test_id("stSidebarNavItems").get_by_role("link", name=name)


def _lecturer_bar(pg):
    return pg.get_by_text(re.compile(r"Class [A-Z0-9]{6} — your students follow this page"))


def _step(lec, wait_idle, times: int = 1) -> None:
    for _ in range(times):
        lec.get_by_role("button", name="Step").first.click()
        wait_idle(lec)


def test_a_lecture_survives_page_changes_reloads_a_dead_replica_and_redis(browser, stack, wait_idle):
    url = stack.url
    errors: list[str] = []
    lec_ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    lec = lec_ctx.new_page()
    lec.set_default_timeout(TIMEOUT_MS)
    lec.goto(url + "/Expression_explorer")
    wait_idle(lec)
    sidebar = lec.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Class", exact=True).click()
    sidebar.get_by_role("button", name="Start a class").click()
    _lecturer_bar(lec).wait_for()
    code = re.search(r"Class ([A-Z0-9]{6})", _lecturer_bar(lec).inner_text()).group(1)
    lead = sidebar.get_by_text(re.compile(r"\?lead=" + code + r"\.")).first
    lead.wait_for()
    lead_link = re.search(r"https?://\S+", lead.inner_text()).group(0)

    students = [_student_on(browser, url, r) for r in ("app1", "app2")]
    phone_ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    students.append((phone_ctx, phone_ctx.new_page()))
    for i, (ctx, pg) in enumerate(students[:2]):          # the laptops
        pg.set_viewport_size({"width": 1400, "height": 900})
    for _, pg in students:
        pg.set_default_timeout(TIMEOUT_MS)
        pg.on("console", lambda m: errors.append(m.text) if "Bad delta path" in m.text else None)
        pg.goto(f"{url}/?join={code}")
        pg.get_by_text("following the lecturer").wait_for()
        _follows(pg, "Step 1 of 14")
    for _, pg in students:                                  # the page itself did not run: no controls of it
        assert pg.get_by_role("button", name="Step").count() == 0

    # a step is relayed: every student's browser draws it without a run of its page
    _step(lec, wait_idle, 7)
    for _, pg in students:
        _follows(pg, "Step 8 of 14")
    _screen(students[0][1], "class_student_relayed_1400")
    _screen(students[2][1], "class_student_relayed_390")

    # a number question: its answer is not on the students' screens until the lecturer reveals it, not even for
    # the moment between the question's card and the masked view (a watcher of every change of the page says)
    for _, pg in students:
        pg.evaluate(LEAK_WATCH_JS, ["What is its adjoint", "244.69"])
    lec.get_by_role("button", name="Ask the class").click()
    dialog = lec.get_by_role("dialog")
    dialog.get_by_text("The adjoint of x5").click()
    dialog.get_by_role("button", name="Ask", exact=True).click()
    dialog.get_by_text("Question 1:").wait_for()
    for _, pg in students:
        pg.get_by_text("What is its adjoint").wait_for(timeout=STEP_WAIT_MS)
        _follows(pg, "Step 8 of 14")
        assert "244.69" not in _relayed_text(pg)
        assert pg.evaluate("() => window.__adxLeak") is None, "the answer was on screen beside the question"
    students[0][1].get_by_label("Your answer").fill("244.7")
    students[0][1].get_by_role("button", name="Send").click()
    dialog.get_by_text("1 answered", exact=True).wait_for(timeout=STEP_WAIT_MS)
    dialog.get_by_role("button", name="Reveal").click()
    dialog.get_by_text(re.compile(r"The engine's answer: 244.69")).wait_for()
    for _, pg in students:
        _follows(pg, "244.69")
    students[0][1].get_by_text("you were right").wait_for(timeout=STEP_WAIT_MS)
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="hidden")

    # page changes reach every student as a page switch that draws the new page
    _nav(lec, "Topological sort").click()
    lec.get_by_role("heading", name="Topological sort").wait_for()
    for _, pg in students:
        pg.get_by_role("heading", name="Topological sort").wait_for(timeout=STEP_WAIT_MS)
        pg.get_by_text("following the lecturer").wait_for()
    _nav(lec, "Expression explorer").click()
    lec.get_by_role("heading", name="Expression explorer").wait_for()
    wait_idle(lec)
    for _, pg in students:
        pg.get_by_role("heading", name="Expression explorer").wait_for(timeout=STEP_WAIT_MS)
        _follows(pg, "of 14")
    assert not errors, errors

    # Detach and Rejoin take effect on the first click
    pg = students[0][1]
    pg.get_by_role("button", name="Detach").click()
    pg.get_by_role("button", name="Step").first.wait_for(timeout=STEP_WAIT_MS)   # the page's own controls
    pg.get_by_role("button", name="Rejoin").wait_for()
    pg.get_by_role("button", name="Rejoin").click()
    pg.get_by_text("following the lecturer").wait_for(timeout=STEP_WAIT_MS)
    _follows(pg, "of 14")
    assert pg.get_by_role("button", name="Step").count() == 0

    # the lecturer reloads: still the lecturer (the browser kept the role), and the class follows
    lec.reload()
    _lecturer_bar(lec).wait_for(timeout=STEP_WAIT_MS)
    wait_idle(lec)
    before = lec.get_by_text(re.compile(r"Step \d+ of 14")).first.inner_text()
    _step(lec, wait_idle)
    now = int(re.search(r"Step (\d+) of 14", lec.get_by_text(re.compile(r"Step \d+ of 14")).first.inner_text())
              .group(1))
    assert now == int(re.search(r"Step (\d+)", before).group(1)) + 1
    for _, pg in students:
        _follows(pg, f"Step {now} of 14")

    # the lecturer's private link on a second device drives the same class
    tablet_ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    tablet = tablet_ctx.new_page()
    tablet.set_default_timeout(TIMEOUT_MS)
    tablet.goto(lead_link)
    _lecturer_bar(tablet).wait_for(timeout=STEP_WAIT_MS)
    assert "lead=" not in tablet.url                        # the secret leaves the address bar
    _nav(tablet, "Expression explorer").click()
    wait_idle(tablet)
    _step(tablet, wait_idle)
    for _, pg in students:
        pg.get_by_text("following the lecturer").wait_for(timeout=STEP_WAIT_MS)
        _follows(pg, "of 14")
    tablet_ctx.close()

    # a replica dies under its students: their browsers reconnect through the proxy to the other replica, where
    # the class cookie puts them back into the class; a page change proves their new sessions follow
    victim = _replica(students[1][0])
    killed = time.monotonic()
    stack.kill_replica(victim)
    try:
        lec.goto(url + "/Topological_sort")                 # the lecturer's tab may have been on it too
        _lecturer_bar(lec).wait_for(timeout=TIMEOUT_MS)
        for _, pg in students:
            pg.get_by_role("heading", name="Topological sort").wait_for(timeout=TIMEOUT_MS)
            pg.get_by_text("following the lecturer").wait_for()
        print(f"replica {victim} killed: every student followed the next page change after "
              f"{time.monotonic() - killed:.1f} s")
        _nav(lec, "Expression explorer").click()
        wait_idle(lec)
        for _, pg in students:
            _follows(pg, "of 14", timeout=TIMEOUT_MS)
    finally:
        stack.start_replica(victim)

    # Redis restarts (it forgets the class): the lecturer's session brings it back, the students follow on
    stack.restart_redis(down_s=0.5)
    _step(lec, wait_idle)
    now = int(re.search(r"Step (\d+) of 14", lec.get_by_text(re.compile(r"Step \d+ of 14")).first.inner_text())
              .group(1))
    for _, pg in students:
        _follows(pg, f"Step {now} of 14", timeout=TIMEOUT_MS)
    for ctx, _ in students:
        ctx.close()
    lec_ctx.close()
