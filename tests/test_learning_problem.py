"""The "Learning problem" page: its logic (explorer.learning_problem) and the page headless (AppTest)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from explorer import learning_problem as L
from explorer.kit.presentation import NORMAL, PRESENTING

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "2_Learning_problem.py")


def _numpy_loss(surface: str, w: np.ndarray) -> float:
    """Reference losses written with NumPy only."""
    if surface == "logistic":
        z = L.POINTS @ w
        p = 1 / (1 + np.exp(-z))
        return float(-np.mean(L.LABELS * np.log(p) + (1 - L.LABELS) * np.log(1 - p)))
    d = w - np.array(L.BOWL_CENTRE)
    return float(0.5 * np.sum(np.array(L.BOWL_CURVATURES) * d * d))


@pytest.mark.parametrize("surface", list(L.SURFACES))
def test_loss_grid_matches_the_engine_loss_and_numpy(surface):
    w1s, w2s, Z = L.loss_grid(surface, n=9)
    for i, j in ((0, 0), (3, 5), (8, 2)):
        w = np.array([w1s[i], w2s[j]])
        direct = L.loss(surface, engine.tensor(w)).item()
        assert Z[j, i] == pytest.approx(direct, rel=1e-12)
        assert Z[j, i] == pytest.approx(_numpy_loss(surface, w), rel=1e-10)


@pytest.mark.parametrize("surface", list(L.SURFACES))
def test_each_step_uses_the_engine_gradient(surface):
    s = L.SURFACES[surface]
    path = L.descend(surface, s.start, s.lr_default, steps=5)
    rng = np.random.default_rng(1)
    for st in path:
        # central differences along a random direction, float64
        d = rng.standard_normal(2)
        h = 1e-6
        fd = (_numpy_loss(surface, st.w + h * d) - _numpy_loss(surface, st.w - h * d)) / (2 * h)
        assert st.grad @ d == pytest.approx(fd, rel=1e-6, abs=1e-9)
        np.testing.assert_allclose(st.delta, -s.lr_default * st.grad)
        np.testing.assert_allclose(st.w_next, st.w + st.delta)
        assert st.loss_next == pytest.approx(_numpy_loss(surface, st.w_next), rel=1e-10)
    assert [st.k for st in path] == list(range(5))
    np.testing.assert_allclose(path[1].w, path[0].w_next)


@pytest.mark.parametrize("surface", list(L.SURFACES))
def test_the_three_example_rates_behave_as_labelled(surface):
    s = L.SURFACES[surface]
    _, loss_min = L.minimum(surface)
    for label, lr in s.lr_examples.items():
        kind, why = L.regime(L.descend(surface, s.start, lr, 40), loss_min)
        assert kind == label, (surface, lr, why)
    lam, crit = L.stable_lr(surface)
    assert s.lr_examples["about right"] < crit < s.lr_examples["divergent"]


def test_bowl_curvature_and_minimum_from_the_engine():
    H = L.hessian("bowl", [0.3, -2.0])
    np.testing.assert_allclose(H, np.diag(L.BOWL_CURVATURES), atol=1e-12)
    w, value = L.minimum("bowl")
    np.testing.assert_allclose(w, L.BOWL_CENTRE, atol=1e-12)
    assert value == pytest.approx(0.0, abs=1e-20)


def test_logistic_minimum_has_zero_gradient_and_hessian_matches_finite_differences():
    w, _ = L.minimum("logistic")
    g = engine.grad(lambda p: L.loss("logistic", p))
    assert np.max(np.abs(g(engine.tensor(w)).numpy())) < 1e-10
    H = L.hessian("logistic", w)
    h = 1e-5
    for i in range(2):
        e = np.eye(2)[i] * h
        col = (g(engine.tensor(w + e)).numpy() - g(engine.tensor(w - e)).numpy()) / (2 * h)
        np.testing.assert_allclose(H[:, i], col, rtol=1e-6, atol=1e-9)


def test_sgd_uses_minibatches_that_cover_each_epoch():
    path = L.descend("logistic", (3.0, -2.5), 1.0, steps=10, batch=5, seed=0)
    first_epoch = path[0].batch + path[1].batch
    assert sorted(first_epoch) == list(range(10))
    idx = path[0].batch
    expected = engine.grad(lambda p: L.loss("logistic", p, idx))(engine.tensor(path[0].w)).numpy()
    np.testing.assert_allclose(path[0].grad, expected)
    assert not np.allclose(path[0].grad, engine.grad(lambda p: L.loss("logistic", p))(engine.tensor(path[0].w)).numpy())


def test_bad_requests_are_refused():
    with pytest.raises(ValueError):
        L.descend("logistic", (100.0, 0.0), 1.0)
    with pytest.raises(ValueError):
        L.descend("logistic", (0.0, 0.0), -1.0)
    with pytest.raises(ValueError):
        L.descend("logistic", (0.0, 0.0), 1.0, steps=L.MAX_STEPS + 1)
    with pytest.raises(KeyError):
        L.descend("nope", (0.0, 0.0), 1.0)


def test_lecture_exercise_1():
    # LECTURE.md, exercise 1: f'(0) = −6, one step gives x1 = 0.6
    rows = L.exercise1(0.0, 0.1, 3)
    assert rows[0].slope == pytest.approx(-6.0)
    assert rows[0].x_next == pytest.approx(0.6)
    assert rows[1].x == pytest.approx(0.6) and rows[1].slope == pytest.approx(2 * (0.6 - 3))


def test_figures_use_presentation_sizes():
    path = L.descend("logistic", (3.0, -2.5), 2.0, 5)
    grid = L.loss_grid("logistic", n=11)
    for look in (NORMAL, PRESENTING):
        fig = L.contour_figure("logistic", grid, path, 2, look)
        assert fig.layout.font.size == look.figure_font
        xs = [tr for tr in fig.data if tr.name == L.PATH_NAME][0].x
        assert len(xs) == 3  # w_0, w_1, w_2
        arrow = fig.layout.annotations[0]
        assert (arrow.x, arrow.y) == pytest.approx(tuple(path[2].w_next))
    assert PRESENTING.figure_font >= 18


# --- the page ----------------------------------------------------------------------------------------------

def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _md(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _contours(at) -> dict:
    """The contour plot's figure as the page sent it (the page's first chart)."""
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def test_page_steps_and_switches_learning_rate():
    at = _ok(AppTest.from_file(PAGE, default_timeout=120).run())
    # the first step shown is 1, as every stepper of the app counts (it moves w_0)
    assert at.session_state["learn_step"] == 1
    assert "#### Step 1 of 40: w₀ = (3, −2.5)" in _md(at) and "Step 0" not in _md(at)
    # exercise 1 poses the question; the engine's step only on request (the Exercises page asks it too)
    assert "f′(x0) = -6" not in _md(at) and "**0.6**" not in _md(at)
    at.toggle(key="learn_ex1_reveal").set_value(True).run()
    assert "f′(x0) = -6" in _md(at) and "**0.6**" in _md(at)
    at.toggle(key="learn_ex1_reveal").set_value(False).run()
    next(b for b in at.button if b.label == "Step").click().run()
    _ok(at)
    assert at.session_state["learn_step"] == 2 and at.query_params["step"] == "2"
    assert "#### Step 2 of 40:" in _md(at)
    next(b for b in at.button if b.label.startswith("divergent")).click().run()
    _ok(at)
    assert at.session_state["learn_step"] == 1 and at.query_params["lr"] == "32"
    assert "divergent" in _md(at)
    next(b for b in at.button if b.label.startswith("too small")).click().run()
    _ok(at)
    assert at.query_params["lr"] == "0.1"
    # no spoiler at the first step: how far down so far, not how the run ends; the verdict at the last step
    assert "on the way" in _md(at) and "after 1 of 40 steps" in _md(at) and "only" not in _md(at)
    next(b for b in at.button if b.label == "End").click().run()
    _ok(at)
    assert "#### Step 40 of 40:" in _md(at)
    assert "too small" in _md(at) and "after 40 steps only" in _md(at) and "on the way" not in _md(at)


def test_page_play_advances_the_steps_and_pause_keeps_the_step():
    """The kit's stepper (Start / Back / Play / Step / End), as on the other stepped pages: Play moves the step, its
    line, the contours' path and the link together; Pause stops where Play got to."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=120).run())
    assert [b.label for b in at.button if b.label in ("Start", "Back", "Play", "Step", "End")] == \
        ["Start", "Back", "Play", "Step", "End"]
    next(b for b in at.button if b.label == "Play").click().run()
    _ok(at)
    assert at.session_state["learn_step_playing"] is True and any(b.label == "Pause" for b in at.button)
    seen = [at.session_state["learn_step"]]
    for _ in range(3):
        # a tick of Play (its timer; here a rerun) a step's time later: the schedule moved back instead of waiting
        at.session_state["learn_step_moved"] = at.session_state["learn_step_moved"] - 10.0
        _ok(at.run())
        step = at.session_state["learn_step"]
        assert f"#### Step {step} of 40:" in _md(at) and at.query_params["step"] == str(step)
        walked = next(tr for tr in _contours(at)["data"] if tr.get("name") == L.PATH_NAME)
        assert len(walked["x"]) == step   # w_0 … w_k with k = step - 1
        seen.append(step)
    assert seen == sorted(seen) and seen[-1] > seen[0] >= 1
    next(b for b in at.button if b.label == "Pause").click().run()
    reached = at.session_state["learn_step"]
    at.session_state["learn_step_moved"] = at.session_state["learn_step_moved"] - 10.0
    _ok(at.run())
    assert at.session_state["learn_step"] == reached and not at.session_state["learn_step_playing"]


def test_the_contours_fill_the_first_screen_in_presentation_mode():
    """The contour plot large enough to read from the back row: in presentation mode its figure is
    PRESENT_CONTOUR_PX tall (its square plot area at least half the 1080 px design screen, which the page's
    choices, the stepper's row and the step's line leave room for), with no title taking the plot's room."""
    path = L.descend("logistic", (3.0, -2.5), 2.0, 5)
    grid = L.loss_grid("logistic", n=11)
    fig = L.contour_figure("logistic", grid, path, 0, PRESENTING)
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert fig.layout.height == L.PRESENT_CONTOUR_PX and plot_height >= 1080 / 2
    assert fig.layout.height <= 1080 - 310   # under the page's title, one row of choices, stepper and step line
    assert plot_height >= 0.6 * 1080          # ~590 px square: read from the back row (it was ~500 px)
    assert not (fig.layout.title and fig.layout.title.text)
    # the plot is square (w1 and w2 on one scale): its width is its height, well inside the contour column
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    # the page draws that figure: its height as sent to the browser
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"present": "1"})
    _ok(at.run())
    assert _contours(at)["layout"]["height"] == L.PRESENT_CONTOUR_PX
    normal = L.contour_figure("logistic", grid, path, 0, NORMAL)
    assert normal.layout.title.text.endswith("step 1 of 5")


def test_page_deep_link_and_bowl():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"surface": "bowl", "lr": "0.21", "step": "3", "present": "1"})
    _ok(at.run())
    assert at.session_state["learn_surface"] == "bowl" and at.session_state["learn_lr"] == 0.21
    assert at.session_state["learn_step"] == 3 and at.session_state["presenting"] is True
    assert "divergent" in _md(at) and "2/λ = 0.2" in _md(at)


def test_page_bad_link_values_are_ignored():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"lr": "abc", "w1": "1e9"})
    _ok(at.run())
    assert any("lr" in w.value for w in at.warning) and any("w1" in w.value for w in at.warning)


def test_the_step_line_writes_one_minus_sign_throughout():
    """"−2·(-0.073334, -1.4272)" mixed the formula's minus with the number formatter's hyphen."""
    path = L.descend("logistic", (3.0, -2.5), 2.0, steps=3)
    text = L.step_caption(path[0], 2.0, len(path))
    assert text.startswith("Step 1 of 3: w₀ = (3, −2.5), L = ") and "Δw = −2·∇L = (" in text and "-" not in text


@pytest.mark.parametrize("surface", list(L.SURFACES))
def test_progress_gives_no_verdict_before_the_last_step(surface):
    """No spoilers: at step 0 the page must not say how the run ends ("100.0% of the way down in 40
    steps"); the verdict is the regime's, and only at the last step."""
    s = L.SURFACES[surface]
    _, loss_min = L.minimum(surface)
    for label, lr in s.lr_examples.items():
        path = L.descend(surface, s.start, lr, 40)
        kind, why = L.progress(path, 0, loss_min)
        assert kind is None and "after 1 of 40 steps" in why, why
        assert "in 40 steps" not in why
        assert L.progress(path, len(path) - 1, loss_min) == L.regime(path, loss_min)
    ok = L.descend(surface, s.start, s.lr_examples["about right"], 40)
    early, late = L.progress(ok, 0, loss_min)[1], L.progress(ok, 20, loss_min)[1]
    share = lambda text: (100.0 if "essentially at the minimum" in text  # noqa: E731
                          else float(text.split("%")[0].split()[-1]))
    assert share(early) < share(late) <= 100.0


def test_loss_curve_draws_only_the_steps_taken():
    """No spoiler on the right-hand curve either: at step k it ends at w_{k+1}; the k axis spans the whole run."""
    s = L.SURFACES["classifier"] if "classifier" in L.SURFACES else next(iter(L.SURFACES.values()))
    surface = next(k for k, v in L.SURFACES.items() if v is s)
    _, loss_min = L.minimum(surface)
    path = L.descend(surface, s.start, s.lr_examples["about right"], 40)
    for step in (0, 5, len(path) - 1):
        fig = L.loss_curve_figure(path, step, loss_min, PRESENTING)
        curve = fig.data[0]
        assert list(curve.x) == list(range(step + 2))
        assert curve.y[-1] == pytest.approx(max(path[step].loss_next - loss_min, 1e-16))
        assert tuple(fig.layout.xaxis.range) == (-0.5, len(path) + 0.5)


# --- gradient descent in the slides' form beside the PyTorch-style loop ------------------------------------------

def test_the_slides_form_and_the_loop_land_at_the_same_w_and_move_it():
    from explorer import learning_problem as L
    r = L.two_forms()
    assert r.max_difference < 1e-12
    assert np.abs(np.subtract(r.slides, r.start)).max() > 1.0          # they really descended
    assert L.loss("logistic", engine.tensor(list(r.loop))).item() < L.loss("logistic", engine.tensor(list(r.start))).item()
    text = L.two_forms_text(r)
    assert f"{r.max_difference:.1e}" in text and f"η = {r.lr:g}" in text


def test_a_wrong_slides_form_would_disagree():
    """Without dividing by N the slides' form takes N times the step: the comparison catches it."""
    from explorer import learning_problem as L
    w = np.array(L.SURFACES["logistic"].start)
    total_g = sum(engine.grad(L.example_loss)(w, x, y).numpy() for x, y in zip(L.POINTS, L.LABELS))
    undivided = w - 2.0 * total_g
    assert np.abs(undivided - L.gd_pytorch_style(w, 2.0, 1)).max() > 0.1


def test_the_code_shown_is_the_code_that_runs():
    import inspect
    from explorer import learning_problem as L
    assert inspect.getsource(L.gd_slides_form).rstrip() in L.SLIDES_FORM_CODE
    assert "total_g += " in L.SLIDES_FORM_CODE and "/ len(POINTS)" in L.SLIDES_FORM_CODE
    for call in ("opt.zero_grad()", "loss.backward()", "opt.step()"):
        assert call in L.PYTORCH_STYLE_CODE


def test_the_page_shows_both_forms_and_where_they_land():
    from tests.test_app_pages import no_exceptions, page, texts
    from explorer import learning_problem as L
    at = page("2_Learning_problem.py").run()
    no_exceptions(at)
    codes = [c.value for c in at.code]
    assert L.SLIDES_FORM_CODE in codes and L.PYTORCH_STYLE_CODE in codes
    assert L.two_forms_text(L.two_forms()) in texts(at)


def test_on_a_projector_the_learning_rate_buttons_do_not_name_the_verdict():
    """The class judges a learning rate from its run: in presentation mode the example buttons read "η = 0.1",
    not "too small (η = 0.1)"; on a laptop the verdict helps a student alone and stays."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"present": "1"})
    at = _ok(at.run())
    s = L.SURFACES[L.DEFAULT_SURFACE]
    labels = [b.label for b in at.button]
    for name, value in s.lr_examples.items():
        assert f"η = {value:g}" in labels
        assert not any(name in lab for lab in labels), (name, labels)
    at = _ok(AppTest.from_file(PAGE, default_timeout=120).run())
    assert any(b.label.startswith("too small (η =") for b in at.button)


def test_a_divergent_run_stays_inside_the_plot_and_says_it_diverges():
    """η = 32 leaves the loss's frame at its first step: the arrow stops at the frame's edge, the point off the plot is
    marked on that edge with its coordinates, and a note over the plot names η against 2/λ and, with the run's verdict
    at the last step, says it diverges."""
    from explorer.kit.presentation import PRESENTING
    s = L.SURFACES["logistic"]
    path = L.descend("logistic", s.start, 32.0, 40)
    _, crit = L.stable_lr("logistic")
    x0, x1, y0, y1 = s.extent
    for step in (0, 5, 39):
        fig = L.contour_figure("logistic", L.loss_grid("logistic", n=20), path, step, PRESENTING,
                               limit=crit, lr=32.0).to_dict()
        arrows = [a for a in fig["layout"]["annotations"] if a.get("showarrow")]
        for a in arrows:
            assert x0 - 1e-9 <= a["x"] <= x1 + 1e-9 and y0 - 1e-9 <= a["y"] <= y1 + 1e-9
            assert x0 - 1e-9 <= a["ax"] <= x1 + 1e-9 and y0 - 1e-9 <= a["ay"] <= y1 + 1e-9
        here = next(d for d in fig["data"] if d.get("name") == L.w_sub(step))
        assert x0 <= here["x"][0] <= x1 and y0 <= here["y"][0] <= y1
        notes = [a["text"] for a in fig["layout"]["annotations"] if not a.get("showarrow")]
        assert any("left the plot" in t and "2/λ" in t for t in notes), notes
        # "the steps diverge" with the run's verdict only: at step 6 the page's progress line said "44% of the way down"
        assert any("the steps diverge" in t for t in notes) == (step == len(path) - 1), (step, notes)
        if step == 5:
            assert "off the plot" in here["text"][0]
        # indices as subscripts (a legend and labels read "w_0 … w_k", "w_5" on the projector)
        assert all("_" not in str(d.get("name", "")) + "".join(map(str, d.get("text") or [])) for d in fig["data"])
        assert not any("_" in t for t in notes)
    # a run that stays inside: no note, the point and its arrow as before
    calm = L.descend("logistic", s.start, 2.0, 40)
    fig = L.contour_figure("logistic", L.loss_grid("logistic", n=20), calm, 3, PRESENTING, limit=crit, lr=2.0).to_dict()
    assert not [a for a in fig["layout"].get("annotations", []) if not a.get("showarrow")]
    assert L.limit_phrase(32.0, crit).startswith("**η = 32 is above it**")
    assert L.limit_phrase(2.0, crit).startswith("η = 2 is below it")


def test_clip_segment_keeps_the_part_inside_the_box():
    box = (0.0, 1.0, 0.0, 1.0)
    assert L.clip_segment((0.5, 0.5), (0.5, 3.0), box) == ((0.5, 0.5), (0.5, 1.0))
    assert L.clip_segment((-1.0, 0.5), (2.0, 0.5), box) == ((0.0, 0.5), (1.0, 0.5))
    assert L.clip_segment((2.0, 2.0), (3.0, 5.0), box) is None
    assert L.clip_segment((0.2, 0.2), (0.4, 0.6), box) == ((0.2, 0.2), (0.4, 0.6))


def test_the_loss_curves_log_axis_reads_0_01_1_100():
    """The distance-to-minimum axis: ticks a class reads (1, 0.1, 0.01; 2 and 5 between close decades), never
    Plotly's superscript exponents, and a handful however many decades the run spans."""
    ticks = L.log_ticks([3.0, 1.3])   # within a decade: 2 and 3 (Plotly's own showed none, or bare digits)
    assert ticks["ticktext"] == ["2", "3"] and ticks["tickvals"] == [2.0, 3.0]
    assert L.log_ticks([8.0, 1.1])["ticktext"] == ["1", "2", "5", "10"]
    ticks = L.log_ticks([3.0, 1e-3])
    assert ticks["ticktext"] == ["0.001", "0.01", "0.1", "1"]
    ticks = L.log_ticks([1e-14, 5.0])
    assert len(ticks["ticktext"]) <= 7 and "10⁰" in ticks["ticktext"] and "10⁻¹²" in ticks["ticktext"]
    from explorer.kit.presentation import PRESENTING
    path = L.descend("logistic", L.SURFACES["logistic"].start, 2.0, 40)
    lmin = L.minimum("logistic")[1]
    fig = L.loss_curve_figure(path, 12, lmin, PRESENTING).to_dict()
    assert fig["layout"]["yaxis"]["tickmode"] == "array" and "exponentformat" not in fig["layout"]["yaxis"]


def test_the_taylor_line_writes_its_minus_signs_as_the_steps_line_does():
    """One minus sign on the first screen: the step's line writes −2·(−0.073334, …) and the Taylor line beside it
    wrote -4.0845; both use the formula's − now, with the numbers of the step."""
    s = L.SURFACES["logistic"]
    st = L.descend("logistic", s.start, s.lr_default, steps=2)[0]
    text = L.taylor_text(st)
    assert "**-" not in text   # (the hyphen of "First-order" is a hyphen)
    assert L.num(st.predicted_change).replace("-", "−") in text and L.num(st.loss_next - st.loss).replace("-", "−") in text
    assert st.predicted_change < 0 and "−" in text   # a descent step: both changes are negative


# --- the lecturer's walk in presentation mode (steps 7, 14, 40) ------------------------------------------------------


def test_the_step_line_names_the_iterate_it_moves_and_the_one_it_reaches():
    """"Step 14" wrote "w = (…)" while the plot marked w₁₃: the line names both ends of its update, w₁₃ → w₁₄, as the
    plot draws it (the marker w₁₃ with the arrow to w₁₄) and as the steppers count (step k + 1 moves wₖ)."""
    path = L.descend("logistic", L.SURFACES["logistic"].start, 2.0, 40)
    text = L.step_caption(path[13], 2.0, len(path))
    assert text.startswith("Step 14 of 40: w₁₃ = (") and "→ w₁₄, L = " in text, text
    fig = L.contour_figure("logistic", L.loss_grid("logistic", 21), path, 13, PRESENTING, L.minimum("logistic")[0])
    assert [t.name for t in fig.data if t.name and t.name.startswith("w") and t.name != L.PATH_NAME] == ["w₁₃"]


def test_the_step_line_stays_one_short_line_on_every_run():
    """The step's line wrapped to two lines from step 7 (1920) / 14 (1366) and the page jumped between steps: every
    run the page offers writes it in at most 116 characters (one line on both projectors, the browser test checks)."""
    longest = 0
    for key, s in L.SURFACES.items():
        for lr in s.lr_choices:
            for batch in (L.BATCH_CHOICES if key == "logistic" else (0,)):
                path = L.descend(key, s.start, lr, 40, batch=batch)
                longest = max(longest, *(len(L.step_caption(p, lr, len(path))) for p in path))
    assert longest <= 116, longest


def test_a_log_axis_writes_its_ticks_in_one_format():
    """Step 40's axis read 1, 0.01, 0.0001, 10⁻⁶: where one tick needs 10ᵏ, every tick is written so."""
    ticks = L.log_ticks([2e-7, 3.0])["ticktext"]
    assert ticks == ["10⁻⁶", "10⁻⁴", "10⁻²", "10⁰"], ticks
    assert L.log_ticks([3.0, 1e-3])["ticktext"] == ["0.001", "0.01", "0.1", "1"]   # near 1: plain numbers
    assert L.log_ticks([1.1e-6, 9e-6])["ticktext"] == ["10⁻⁶", "2·10⁻⁶", "5·10⁻⁶", "10⁻⁵"]


@pytest.mark.parametrize("step", [13, 39])
def test_the_point_by_the_minimum_leaves_the_star_and_both_labels_readable(step):
    """Steps 14 and 40: w₁₃ / w₃₉ sat on the green star and its label on "min": near the minimum the point is a ring
    (the star drawn over it shows through) and the two labels go to opposite sides, each away from the other."""
    path = L.descend("logistic", L.SURFACES["logistic"].start, 2.0, 40)
    w_min = L.minimum("logistic")[0]
    fig = L.contour_figure("logistic", L.loss_grid("logistic", 21), path, step, PRESENTING, w_min)
    names = [t.name for t in fig.data]
    here, star = fig.data[names.index(L.w_sub(step))], fig.data[names.index("minimum")]
    assert names.index("minimum") > names.index(L.w_sub(step))          # the star is drawn over the point
    assert here.marker.symbol == "circle-open"
    (hv, hh), (mv, mh) = here.textposition.split(), star.textposition.split()
    assert {hv, mv} == {"top", "bottom"} and hh != mh, (here.textposition, star.textposition)
    far = L.contour_figure("logistic", L.loss_grid("logistic", 21), path, 0, PRESENTING, w_min)
    assert far.data[[t.name for t in far.data].index("w₀")].marker.symbol == "circle"   # far away: as before


def test_the_words_agree_with_the_share_of_the_way_down():
    """Step 14 said "100.0% of the way down" beside "on the way": a share that rounds to 100.0% reads "essentially at
    the minimum" with the gap left, on the way and in the verdict."""
    path = L.descend("logistic", L.SURFACES["logistic"].start, 2.0, 40)
    loss_min = L.minimum("logistic")[1]
    for k in range(len(path)):
        kind, why = L.progress(path, k, loss_min)
        assert "100.0%" not in why, (k, why)
    assert "essentially at the minimum (L − min L = " in L.progress(path, 13, loss_min)[1]
    assert "essentially at the minimum" in L.regime(path, loss_min)[1]
