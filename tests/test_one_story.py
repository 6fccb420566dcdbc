"""One story per number: a figure a page sets beside another comes from the same function as the
figure it is compared with, and the notes' figures come from the one notes table (explorer/kit/notes.py)."""
from __future__ import annotations

import pytest

from explorer.kit.notes import NOTES


def test_breadth_first_wrong_count_is_one_number_by_one_criterion():
    """Backprop orders' table, its sentence and exercise 6 count breadth-first first touch on the same graphs by
    harness.gradients_wrong (the student-code CLI's count is checked against the page in test_app_pages)."""
    from explorer.explain import harness
    from explorer import backprop_orders as B
    from explorer import exercises as X
    table = B.random_graph_table(*B.RANDOM_DEFAULTS)
    row = next(r for r in table if r["order"] == B.STRATEGY_LABELS["bfs_first_touch"])
    count = X.bfs_wrong_count()
    assert (row["wrong gradients"], row["graphs"]) == (count.wrong, count.graphs) == (count.wrong, harness.RANDOM_GRAPHS)
    assert f"wrong on {count.wrong} of {count.graphs} graphs" in B.bfs_rate_text(table)
    ex6 = X.build("bfs")
    rate = next(p for p in ex6.parts if p.key == "rate")
    assert rate.answer == pytest.approx(100.0 * count.wrong / count.graphs)
    steps = " ".join(ex6.steps)
    assert f"wrong on **{count.wrong}**" in steps and harness.WRONG_GRADIENTS in steps
    # the notes' figure, from the notes table in both places
    wrong, total = NOTES["bfs_wrong"].value
    assert B.NOTES_BFS_WRONG == (wrong, total)
    assert f"{wrong} of {total}" in steps and f"{wrong} of {total}" in B.bfs_rate_text(table)


def test_forward_vs_reverse_quotes_the_notes_two_passes_in_total_and_the_n_over_2_table():
    """The notes: a reverse-mode gradient costs about two forward passes *in total*; forward mode n passes; ratio
    n/2. The page's table derives this engine's row from the same pass_costs rows it shows above it."""
    from explorer import forward_vs_reverse as M
    rows = M.pass_costs(depth=4, width=8, batch=4)
    reverse, jvp = M.pass_ratios(rows)
    assert (f"{reverse:.2f}", f"{jvp:.2f}") == (rows[1][M.PASS_RATIO], rows[2][M.PASS_RATIO])
    table = M.gradient_cost_rows(rows, ns=(1, 10, 1000))
    two = NOTES["reverse_passes"].value
    for r in table:
        n = r["n inputs"]
        assert (r["the notes: forward mode"], r["the notes: reverse mode"]) == (n, two)
        assert float(r["the notes: ratio n/2"]) == n / two
        assert float(r["this engine: forward mode"]) == pytest.approx(n * jvp)
        assert float(r["this engine: ratio"]) == pytest.approx(n * jvp / reverse, rel=1e-2)
    caption = M.pass_costs_caption(rows)
    assert f"hence {reverse:g} rather than 3" in caption and f"{jvp:g} per pass" in caption


def test_forward_vs_reverse_page_says_in_total_never_more():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[1] / "app" / "pages" / "7_Forward_vs_reverse.py").read_text()
    assert "two forward passes more" not in page and "forward passes *in total*" in page
    assert "2.75" not in page        # read from the table, not typed


def test_best_h_is_one_figure_from_one_function():
    """Gradient check's default sweep and exercise 7 quote the same best h (costs.h_sweep's error-model minimiser,
    4.6e-6 in float64, no second 4.8e-6 from ε^(1/3)); the notes' decades are explained beside it."""
    from explorer import exercises as X
    from explorer import gradient_check as G
    sweep = G.default_sweep()
    ex7 = X.build("best_h")
    answers = {p.key: p.answer for p in ex7.parts}
    assert answers == {"h64": sweep.best_h["float64"], "h32": sweep.best_h["float32"]}
    for dtype, key in (("float64", "h64"), ("float32", "h32")):
        shown = f"{answers[key]:.1e}"
        assert f"**{shown}**" in G.best_h_text(sweep, dtype)       # what the page prints under its plot
        assert f"**{shown}**" in " ".join(ex7.steps)
    eps_rule = f"{sweep.model('central', 'float64').eps ** (1 / 3):.1e}"
    assert eps_rule != f"{answers['h64']:.1e}" and eps_rule not in " ".join(ex7.steps)
    notes_text = G.notes_best_h_text(sweep)
    assert notes_text in ex7.steps and "1e-5 and 1e-6" in notes_text and "powers of ten" in notes_text
    assert NOTES["best_h_table"].value["float64"] == (1e-5, 1e-6)


def test_tensors_caption_says_what_its_table_shows():
    """The backends' caption is written from the agreement table it sits under (it said 'map differs at rounding
    level' beside a table showing map bit for bit equal); the notes' matmul figure from the notes table."""
    from explorer import tensors_and_storage as M
    rows = M.backend_agreement(n=1000, backends=["numpy", "python"])
    note = M.backend_note(rows)
    for r in rows:
        kind = r["kernel"].split(":")[0]
        if r["bit for bit equal to numpy"] == "yes":
            assert kind in note.split("Here ")[1].split(" bit for bit")[0]
        else:
            assert kind in note.split("; ")[1].split(" differ")[0]
    assert f"{NOTES['backends_matmul'].value:.1e}" in note
    fake = [dict(r, **{"bit for bit equal to numpy": "yes", "max |difference|": "0.0e+00"}) for r in rows]
    assert "differ" not in M.backend_note(fake)


@pytest.mark.parametrize("key", ["lecture", "logreg", "mlp"])
def test_static_vs_dynamic_node_count_sentences_add_up(key):
    """Static vs dynamic's node counts: the graph's nodes split by what built them add up to the total, and a run's
    'k evaluated' plus its skipped nodes (split the same way) add up to it too; the notes' counts from the table."""
    import re
    from explorer import static_vs_dynamic as M
    for with_train in (False, True):
        ex = M.build_example(key, with_gradients=True, with_train=with_train)
        total = len(ex.graph.nodes)
        built = M.node_count_text(ex)
        head, parts = built.split(" = ", 1)
        assert head == f"**{total} nodes**, built once"
        groups = re.findall(r"(\d+) by (?:the forward graph|gradients\(\)|the training op) \(([^)]*)\)", parts)
        assert groups and sum(int(n) for n, _ in groups) == total
        for n, inner in groups:                  # each builder's own groups add up to its count
            assert sum(int(k) for k in re.findall(r"(\d+) [a-z]", inner)) == int(n), inner
        for fetch in ex.fetches:
            result = M.run_fetch(ex, fetch, list(ex.feeds))
            text = M.skipped_text(ex, result)
            m = re.match(rf"{total} built = (\d+) evaluated(?: \+ (\d+) not: (.*))?", text)
            assert m, text
            assert int(m.group(1)) == result.counted
            if m.group(2):
                assert int(m.group(1)) + int(m.group(2)) == total
                assert sum(int(n) for n in re.findall(r"(?:^| \+ )(\d+) built by ", m.group(3))) == int(m.group(2))
            if "train" in fetch:
                assert f"{total} built, {result.counted} evaluated" in M.training_note(ex, result.counted)
    assert M.NOTES_TRAINING == NOTES["training_graph"].value and M.NOTES_GRADIENTS == NOTES["gradients_example"].value
