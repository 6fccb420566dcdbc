"""The notes' exercises one at a time, answers checked by the engine, the worked steps on reveal.

Exercises: the lecture notes' exercises posed one at a time with answer boxes; the engine computes every answer and checks yours with a tolerance, and "Reveal" shows the worked steps with a link to the page (and step) that shows them.
"""
from __future__ import annotations

import streamlit as st

from explorer import exercises as E
from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.presentation import small_screen_css
from explorer.lecture_kit import md_escape, present_css
from explorer.kit.widgets import presentation_toggle, publish_link, start_page

KEYS = list(E.BUILDERS)
ctx = start_page(
    "Exercises", "exercises",
    fields={"ex": LinkField("str", KEYS[0], choices=tuple(KEYS)), "reveal": LinkField("bool", False)},
    defaults={"ex": KEYS[0], "reveal": False, "verdicts": {}})
ns, look = ctx.ns, ctx.look
if look.presenting:
    st.html(present_css(True))
    st.html(small_screen_css())   # captions, labels, code: 16 px or more at 1366 x 768 too
    # the answer boxes' labels are the exercise's own parts ("f′(x0) =", "x1 ="): the text's size on a projector,
    # not Streamlit's small widget label (18 px at 1920 x 1080, 13 px at 1366 x 768); the reveal switch the same
    # (``html body [stMain]`` first: more specific than the small-screen floor's label rules, which it outranks)
    st.html("<style>html body [data-testid='stMain'] [class*='st-key-exercises_ans_'] [data-testid='stWidgetLabel'] p, "
            "html body [data-testid='stMain'] .st-key-exercises_reveal [data-testid='stWidgetLabel'] p, "
            "html body [data-testid='stMain'] .st-key-exercises_reveal label p "
            f"{{ font-size: {look.font_px}px !important; }}</style>")
for msg in ctx.link_problems:
    st.warning(msg)


@bounded_cache(16 << 20, spinner="The engine is working out the answer…")
def cached_exercise(key: str) -> E.Exercise:
    return E.build(key)


def _move(to: str):
    # drawn intent (explorer.kit.widgets): to the exercise named when the button was drawn, never "one on from
    # now" (PageUp went back two exercises in CI's tests/browser/test_clicker.py: 14 -> 12)
    st.session_state[ns.key("ex")] = to
    st.session_state[ns.key("reveal")] = False


def _picked():
    st.session_state[ns.key("reveal")] = False


head = st.columns([3.2, 1.7, 1.5, 1.6])
head[0].selectbox("Exercise", KEYS, key=ns.key("ex"), format_func=lambda k: E.TITLES[k], on_change=_picked,
                  label_visibility="collapsed")
# "exercise" in their names: the lecture's Previous / Next links (the corner, the clicker) move between pages
# no wrap-around: at the last exercise a clicker's PageDown (which presses "Next exercise" while it can) goes on to
# the next page, and at the first PageUp to the previous one
at_ex = KEYS.index(st.session_state[ns.key("ex")])
head[1].button("Previous exercise", key=ns.key("prev"), on_click=_move, args=(KEYS[max(at_ex - 1, 0)],),
               icon=":material/chevron_left:", width="stretch", disabled=at_ex == 0)
head[2].button("Next exercise", key=ns.key("next"), on_click=_move, args=(KEYS[min(at_ex + 1, len(KEYS) - 1)],),
               icon=":material/chevron_right:", icon_position="right", width="stretch",
               disabled=at_ex == len(KEYS) - 1)
with head[3]:
    presentation_toggle()

key = st.session_state[ns.key("ex")]
exercise = cached_exercise(key)
st.markdown(f"### Exercise {exercise.number} · {md_escape(exercise.title)}")
st.markdown(exercise.question)

verdicts: dict = dict(st.session_state[ns.key("verdicts")])
with st.form(ns.key(f"form_{key}"), border=True):
    cols = st.columns(min(len(exercise.parts), 2))
    for i, part in enumerate(exercise.parts):
        box = cols[i % len(cols)]
        label = part.label()
        if part.choices:
            box.radio(label, part.choices, index=None, key=ns.key(f"ans_{key}_{part.key}"))
        else:
            box.text_input(label, key=ns.key(f"ans_{key}_{part.key}"), max_chars=200,
                           placeholder="a number, or a list like [1, 2]")
    checked = st.form_submit_button("Check my answers", type="primary")
if checked:
    verdicts[key] = {}
    for part in exercise.parts:
        given = st.session_state.get(ns.key(f"ans_{key}_{part.key}"))
        if given is None or str(given).strip() == "":
            verdicts[key][part.key] = (False, E.feedback_line(part, E.Verdict(False, "No answer yet.")))
            continue
        v = E.check(part, str(given))
        verdicts[key][part.key] = (v.correct, E.feedback_line(part, v))
    st.session_state[ns.key("verdicts")] = verdicts
for part in exercise.parts:
    got = verdicts.get(key, {}).get(part.key)
    if got is None:
        continue
    ok, message = got
    show = st.success if ok else st.error
    show(md_escape(message), icon=":material/check_circle:" if ok else ":material/cancel:")

st.toggle("Reveal the worked steps", key=ns.key("reveal"))
if st.session_state[ns.key("reveal")]:
    with st.container(border=True):
        answers = "; ".join(f"{p.prompt} **{md_escape(p.shown())}**" for p in exercise.parts)
        st.markdown(f"**The engine's answer:** {answers}")
        tolerances = sorted({p.tolerance.describe() for p in exercise.parts if not p.choices})
        for k, text in enumerate(exercise.steps, 1):
            st.markdown(f"{k}. {text}")
        if tolerances:
            st.caption("Answers are accepted " + " or ".join(tolerances) + ".")
        if exercise.link:
            st.link_button(f"Open {exercise.link_label}", exercise.link, icon=":material/open_in_new:")

with st.expander("All exercises"):
    for k in KEYS:
        mine = verdicts.get(k)
        if mine and all(ok for ok, _ in mine.values()):
            mark = ":green[:material/check_circle:]"
        else:
            mark = ":orange[:material/edit:]" if mine else ":gray[:material/radio_button_unchecked:]"
        st.markdown(f"{mark} {md_escape(E.TITLES[k])}")

publish_link(ctx, {"ex": key, "reveal": bool(st.session_state[ns.key("reveal")])})
