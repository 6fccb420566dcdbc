"""Gradient descent stepping down a classifier's loss contours: Δw = −η∇L from the engine, with a learning rate too small, about right or divergent.

The learning problem: a classifier's cross-entropy over two parameters drawn as contours, and gradient descent on it one step at a time (Δw = −η∇L from the engine's gradients) with a learning rate that is too small, about right or divergent; why the step works (Taylor), SGD's pseudo-code, and the lecture's exercise 1.
"""
from __future__ import annotations

import streamlit as st

from explorer import learning_problem as L
from explorer.kit.budget import bounded_cache
from explorer.kit.deeplink import LinkField
from explorer.kit.presentation import small_screen_css, small_screen_look
from explorer.kit.labels import num
from explorer.lecture_kit import present_css
from explorer.kit.widgets import (fixed_figure, presentation_toggle, publish_link, screen_break, show_plot, show_table, start_page,
                                  stepper)
from explorer.kit.formatting import plain

S0 = L.SURFACES[L.DEFAULT_SURFACE]
ctx = start_page(
    "Learning problem", "learn",
    fields={"surface": LinkField("str", L.DEFAULT_SURFACE, choices=tuple(L.SURFACES)),
            "lr": LinkField("float", S0.lr_default, minimum=1e-6, maximum=1e3),
            "batch": LinkField("int", 0, choices=L.BATCH_CHOICES),
            "w1": LinkField("float", S0.start[0], minimum=-L.START_LIMIT, maximum=L.START_LIMIT),
            "w2": LinkField("float", S0.start[1], minimum=-L.START_LIMIT, maximum=L.START_LIMIT),
            "step": LinkField("int", 1, minimum=0),  # 1-based, as the header shows it (0: the first step)
            "x0": LinkField("float", 0.0, minimum=-100.0, maximum=100.0),
            "eta": LinkField("float", 0.1, minimum=0.001, maximum=2.0)},
    defaults={"surface": L.DEFAULT_SURFACE, "lr": S0.lr_default, "batch": 0, "w1": S0.start[0], "w2": S0.start[1],
              "step": 1, "x0": 0.0, "eta": 0.1})
ns, look = ctx.ns, ctx.look
# a 1366 x 768 projector draws this page 0.711 times as large: its charts' and widgets' texts are laid out at
# 23 px or more (16 px there); the pages' own Look stays for everything else
charts = small_screen_look(look)
if look.presenting:
    st.html(present_css(True))
    st.html(small_screen_css())   # after present_css: its sizes win
for msg in ctx.link_problems:
    st.warning(msg)
STEPS = 40


@bounded_cache(8 << 20, spinner="Evaluating the loss on a grid with the engine…")
def cached_grid(surface: str):
    return L.loss_grid(surface)


@bounded_cache(1 << 20, spinner=None)
def cached_minimum(surface: str):
    w, value = L.minimum(surface)
    lam, crit = L.stable_lr(surface)
    return w, value, lam, crit


@bounded_cache(8 << 20, spinner="Taking the steps with engine.grad…")
def cached_path(surface: str, w1: float, w2: float, lr: float, batch: int):
    return L.descend(surface, (w1, w2), lr, STEPS, batch=batch, seed=0)


def _restart():
    """Back to the first step, Play stopped (a new run of gradient descent)."""
    st.session_state[ns.key("step")] = 1
    st.session_state[ns.key("step_playing")] = False


def _new_surface():
    s = L.SURFACES[st.session_state[ns.key("surface")]]
    st.session_state[ns.key("lr")] = s.lr_default
    st.session_state[ns.key("w1")], st.session_state[ns.key("w2")] = s.start
    st.session_state[ns.key("batch")] = 0
    _restart()


def _set_lr(value: float):
    st.session_state[ns.key("lr")] = value
    _restart()


surface = st.session_state[ns.key("surface")]
S = L.SURFACES[surface]
# presentation mode: one row of controls (the loss, the gradient's source and the start point folded away beside
# the learning rate, its examples and the toggle), so that the contour plot gets the first screen's height
row = (st.columns([2.8, 2.0, 1.0, 1.0, 1.0, 1.7], vertical_alignment="bottom") if look.presenting else None)
settings = (row[0].expander(f"{S.label.split(' (')[0]} · settings", expanded=False) if look.presenting else None)
if settings is None:
    head = st.columns([3, 1])
    loss_where = head[0]
    with head[1]:
        presentation_toggle()
else:
    loss_where = settings
loss_where.selectbox("Loss", list(L.SURFACES), key=ns.key("surface"), format_func=lambda k: L.SURFACES[k].label,
                     on_change=_new_surface)
if not look.presenting:  # on a projector the lecturer says it: the contours get the room
    st.markdown("Learning = choosing parameters w that make a loss small. For a classifier the loss is the "
                "**cross-entropy**: the average of −log(probability the model gives the right label). "
                f"Here: `{S.formula}`. With many classes the loss takes the model's logits and works in log "
                "space: [Cross-entropy on logits](Cross_entropy_on_logits), the lecture's opening example.")

# learning rate: snap a linked value to the choices
lr_now = min(S.lr_choices, key=lambda v: abs(v - float(st.session_state[ns.key("lr")])))
st.session_state[ns.key("lr")] = lr_now
if surface != "logistic":
    st.session_state[ns.key("batch")] = 0
c = row[1:] if look.presenting else st.columns([3, 1, 1, 1], vertical_alignment="bottom")
if look.presenting:
    with c[-1]:
        presentation_toggle()
# on a projector the slider's own label row goes (its value reads "η = 2"): the contours get the height
c[0].select_slider("Learning rate η", S.lr_choices, key=ns.key("lr"), on_change=_restart,
                   format_func=(lambda v: f"η = {plain(v)}") if look.presenting else plain,
                   label_visibility="collapsed" if look.presenting else "visible")
for col, (name, value) in zip(c[1:4], S.lr_examples.items()):
    # on a projector the class judges the rate from the run: the button names the value, not the verdict
    col.button(f"η = {plain(value)}" if look.presenting else f"{name} (η = {plain(value)})", key=ns.key(f"lr_{name}"),
               on_click=_set_lr, args=(value,), width="stretch")
with settings or st.container():
    c2 = st.columns([2, 1, 1])
c2[0].selectbox("Gradient from", L.BATCH_CHOICES, key=ns.key("batch"), on_change=_restart,
                disabled=surface != "logistic",
                format_func=lambda b: "all 10 examples (gradient descent)" if b == 0 else
                f"mini-batches of {b} (SGD)")
c2[1].number_input("start w1", -L.START_LIMIT, L.START_LIMIT, key=ns.key("w1"), step=0.5, on_change=_restart)
c2[2].number_input("start w2", -L.START_LIMIT, L.START_LIMIT, key=ns.key("w2"), step=0.5, on_change=_restart)

lr = float(st.session_state[ns.key("lr")])
batch = int(st.session_state[ns.key("batch")])
w1, w2 = float(st.session_state[ns.key("w1")]), float(st.session_state[ns.key("w2")])
path = cached_path(surface, w1, w2, lr, batch)
w_min, loss_min, lam, crit = cached_minimum(surface)

# read before the stepper: the link published with each step carries the exercise's numbers too
x0, eta = float(st.session_state[ns.key("x0")]), float(st.session_state[ns.key("eta")])


def draw(step: int) -> None:
    """The 1-based gradient-descent ``step`` (path[step - 1]: w_k to w_k+1 with k = step - 1): its line, the
    contours with the path so far, the verdict, the loss curve, the steps' table; the link."""
    k = step - 1
    cur = path[k]
    kind, why = L.progress(path, k, loss_min)  # the verdict only at the last step
    badge = {"too small": ":orange[:material/hourglass_bottom: too small]",
             "about right": ":green[:material/check_circle: about right]",
             "divergent": ":red[:material/warning: divergent]", "noisy": ":blue[:material/shuffle: noisy (SGD)]",
             None: ":gray[:material/directions_walk: on the way]"}[kind]
    st.markdown("#### " + L.step_caption(cur, lr, len(path)))
    # presentation mode: the square plot and its legend take what they need, the verdict and the curve the rest
    left, right = st.columns([0.47, 0.53] if look.presenting else [3, 2])
    with left:   # presentation mode: as large as the first screen allows (L.contour_figure's size)
        show_plot(L.contour_figure(surface, cached_grid(surface), path, k, charts, w_min, limit=crit, lr=lr), charts,
                  key=ns.key("contours"))
    with right:
        st.markdown(f"**η = {plain(lr)}: {badge}** — {why}.")
        # the stability limit beside the η chosen, from the first step on (the verdict waits for the last step)
        st.markdown(f"Curvature at the minimum (the Hessian, from `engine.grad` of `engine.grad`): largest "
                    f"eigenvalue λ = {num(lam)}, so steps with **η > 2/λ = {num(crit)}** overshoot there: "
                    + L.limit_phrase(lr, crit) + ".")
        show_plot(L.loss_curve_figure(path, k, loss_min, charts), charts, key=ns.key("curve"))
        st.markdown(L.taylor_text(cur))
    screen_break()   # on a projector the table of steps starts on the next screen (it was cut by the bottom edge)
    rows = L.step_rows(path, k, lr)
    show_table(rows[-6:], look, static=True)
    st.caption("Δw is −η times the gradient that `engine.grad(loss)` returned at wₖ"
               + (" on the mini-batch listed (SGD: a new shuffle every epoch)." if batch else "."))
    publish_link(ctx, {"surface": surface, "lr": lr, "batch": batch, "w1": w1, "w2": w2, "step": step,
                       "x0": x0, "eta": eta})


stepper(ns, len(path), draw, label="GD step")

st.subheader("Why step against the gradient: the Taylor expansion")
st.latex(r"L(w + \Delta w) \approx L(w) + \nabla L(w)^\top \Delta w"
         r"\quad\Longrightarrow\quad \Delta w = -\eta\,\nabla L(w):\ "
         r"L(w + \Delta w) \approx L(w) - \eta\,\lVert \nabla L(w) \rVert^2 < L(w)")
st.markdown("For a small enough η the first-order term wins and the loss falls. The second-order term "
            "½·ΔwᵀHΔw grows with η²: when η·λ > 2 for the largest curvature λ, the step overshoots and the "
            "loss grows — the divergent runs above.")
st.subheader("Gradient descent as the slides write it, and as a training loop")
st.markdown("The slides sum each example's gradient into `total_g` and divide by N; a PyTorch-style loop takes the "
            "mean loss over the batch, calls `backward()` and lets an optimizer step. Both are below as they run "
            "on the engine; stochastic gradient descent is the same loop over shuffled mini-batches (the "
            "Mini-batch control above).")
gf = st.columns(2)
gf[0].markdown("**The slides' form**: per-example gradients summed into total_g, divided by N")
gf[0].code(L.SLIDES_FORM_CODE, language="python")
gf[1].markdown("**A PyTorch-style loop**: zero_grad, the mean loss, backward, step")
gf[1].code(L.PYTORCH_STYLE_CODE, language="python")
two = fixed_figure("learning_problem.two_forms", "Both forms run on the engine")
if two is not None:
    st.markdown(L.two_forms_text(two))

st.subheader("Lecture exercise 1: f(x) = (x − 3)², one step of gradient descent")
st.markdown("Work it out before revealing: from x0 with learning rate η, what is f′(x0), and where does one step "
            "x1 = x0 − η·f′(x0) land? The lecture's numbers are x0 = 0, η = 0.1; "
            "[Exercises](Exercises) checks an answer.")
e = st.columns([1, 1, 2], vertical_alignment="bottom")
e[0].number_input("x0", -100.0, 100.0, key=ns.key("x0"), step=0.5)
e[1].number_input("η", 0.001, 2.0, key=ns.key("eta"), step=0.05, format="%.3f")
x0, eta = float(st.session_state[ns.key("x0")]), float(st.session_state[ns.key("eta")])  # as typed now
# the answer only on request: the Exercises page asks the same question (no spoilers)
if e[2].toggle("Reveal the engine's step", key=ns.key("ex1_reveal")):
    ex_rows = L.exercise1(x0, eta)
    r0 = ex_rows[0]
    st.markdown(f"`engine.grad(f)({plain(x0)})` = **f′(x0) = {plain(r0.slope)}**, so x1 = x0 − η·f′(x0) = "
                f"{plain(x0)} − {plain(eta)}·({plain(r0.slope)}) "
                f"= **{num(r0.x_next)}**.")
    ec = st.columns([3, 2])
    with ec[0]:
        show_plot(L.exercise1_figure(ex_rows, look), look, key=ns.key("ex1"))
    with ec[1]:
        show_table([{"k": r.k, "x_k": num(r.x), "f(x_k)": num(r.f), "f′(x_k)": num(r.slope),
                    "x_k+1": num(r.x_next)} for r in ex_rows], look, static=True)
