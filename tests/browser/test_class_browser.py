"""A class in real browsers, across replicas: a lecturer (1920x1080, presentation mode) and two students on
phones (390x844), one per replica, all through HAProxy to two Streamlit replicas sharing Redis: the students
follow the lecturer's step, answer a question, and see the reveal; the lecturer sees the count and the share
right. Screenshots: test-output/screenshots/class_*.png.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchmarks.class_stack import ClassStack, find

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"

PHONE = {"width": 390, "height": 844}
STEP_WAIT_MS = 20_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if find("redis-server") is None or find("haproxy") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server or haproxy is missing: .ci/run installs both from Debian")
        pytest.skip("redis-server or haproxy is not installed (apt-get install redis-server haproxy)")
    with ClassStack(tmp_path_factory.mktemp("class")) as s:
        yield s


def _screen(pg, name: str) -> None:
    """The first screen as the projector or the phone shows it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _replica(context) -> str:
    return {c["name"]: c["value"] for c in context.cookies()}.get("explorer_replica", "")


def _student_on(browser, url: str, replica: str):
    """A phone browser whose first page came from ``replica`` (the proxy alternates new browsers)."""
    for _ in range(6):
        ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
        pg = ctx.new_page()
        pg.set_default_timeout(60_000)
        pg.goto(url + "/_stcore/health")
        if _replica(ctx) == replica:
            return ctx, pg
        ctx.close()
    pytest.fail(f"no browser was sent to {replica}")


def test_a_lecturer_and_two_students_on_two_replicas(browser, stack, wait_idle):
    url = stack.url
    lec_ctx = browser.new_context(viewport={"width": 1920, "height": 1080})
    lec = lec_ctx.new_page()
    lec.set_default_timeout(60_000)
    lec.goto(url + "/Expression_explorer")
    wait_idle(lec, timeout=120)
    sidebar = lec.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Class", exact=True).click()
    sidebar.get_by_role("button", name="Start a class").click()
    bar = lec.get_by_text(re.compile(r"Class [A-Z0-9]{6} — your students follow this page"))
    bar.wait_for()
    code = re.search(r"Class ([A-Z0-9]{6})", bar.inner_text()).group(1)
    lec.get_by_text("Presentation mode").click()                 # the projector: no sidebar, large text
    wait_idle(lec, timeout=60)
    assert not sidebar.is_visible()

    students = [_student_on(browser, url, r) for r in ("app1", "app2")]
    for ctx, pg in students:
        pg.goto(f"{url}/?join={code}")
        pg.get_by_role("heading", name="Expression explorer").wait_for(timeout=90_000)
        pg.get_by_text("following the lecturer").wait_for()
    assert {_replica(c) for c, _ in students} == {"app1", "app2"}     # one student per replica

    # follow: the lecturer steps into the backward pass; both phones show the same step
    for _ in range(7):
        lec.get_by_role("button", name="Step").first.click()
        wait_idle(lec, timeout=60)
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
