"""Page 1: the lecture's opening example, cross-entropy on logits, computed by the engine."""
import numpy as np
import pytest

from explorer import cross_entropy as C


def test_batch_gradient_is_softmax_minus_onehot():
    b = C.batch_example()
    assert b.formula_difference < 1e-15
    assert b.grad_logits.shape == (4, 4)
    np.testing.assert_allclose(b.grad_logits.sum(axis=1), 0, atol=1e-15)  # each row: probabilities − one-hot
    assert b.loss > 0


def test_batch_against_pytorch_when_installed():
    torch = pytest.importorskip("torch")
    del torch
    b = C.batch_example()
    assert b.torch_loss_difference < 1e-14 and b.torch_grad_difference < 1e-15


def test_naive_overflows_where_log_softmax_does_not():
    rows = {r["logits"]: r for r in C.stability_rows()}
    small, huge = rows["(2, 1, -1)"], rows["(2000, 1000, -1000)"]
    assert small["naive: −log(softmax(z)[2])"] == small["log_softmax: −log_softmax(z)[2]"] == "3.349"
    assert huge["naive: −log(softmax(z)[2])"] in ("inf", "nan") and "nan" in huge["naive: ∂loss/∂z"]
    assert huge["log_softmax: −log_softmax(z)[2]"] == "3000" and huge["log_softmax: ∂loss/∂z"] == "[1, 0, -1]"
    f32 = {r["logits"]: r for r in C.stability_rows(dtype="float32")}
    assert "nan" in f32["(100, 50, -50)"]["naive: ∂loss/∂z"]      # float32 overflows much sooner
    assert f32["(100, 50, -50)"]["log_softmax: −log_softmax(z)[2]"] == "150"


def test_stepped_program_is_the_engines_cross_entropy():
    checks = C.step_program_checks()
    assert checks["loss (program)"] == pytest.approx(checks["loss (engine.cross_entropy)"], rel=1e-14)
    assert checks["max |Δz̄|"] < 1e-15
    assert abs(sum(checks["z̄"])) < 1e-15  # softmax(z) − y sums to 0


def test_questions_link_to_the_pages_that_answer_them():
    links = [url for _, _, ls in C.QUESTIONS for url, _ in ls]
    assert links[0].startswith("Expression_explorer?expr=")
    assert {"Topological_sort", "Backprop_orders"} <= set(links)


def test_the_batch_tables_show_every_number_to_four_places_and_the_gradient_rows_sum_to_zero():
    """The browser's table dropped trailing zeros (-0.296 beside -0.2960, 0.05 beside 0.0316): the tables are
    formatted to four places, from the engine's own numbers."""
    import re
    from explorer.cross_entropy import batch_example, batch_tables
    b = batch_example()
    inputs, grads = batch_tables(b)
    shown = inputs.to_html() + grads.to_html()
    cells = re.findall(r">(-?\d+\.\d+)<", shown)
    assert cells and all(len(c.split(".")[1]) == 4 for c in cells), cells
    assert list(inputs.data.columns[:2]) == ["label", "z0"] and inputs.data["z0"].tolist() == list(b.logits[:, 0])
    assert np.allclose(grads.data.to_numpy().sum(axis=1), 0.0, atol=1e-12)   # the page's caption says so
