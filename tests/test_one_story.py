"""One story per number (issue 36): a figure a page sets beside another comes from the same function as the
figure it is compared with, and the notes' figures come from the one notes table (explorer/kit/notes.py)."""
from __future__ import annotations

import pytest

from explorer.kit.notes import NOTES


def test_breadth_first_wrong_count_is_one_number_by_one_criterion():
    """Backprop orders' table, its sentence and exercise 6 count breadth-first first touch on the same graphs by
    harness.gradients_wrong (the student-code CLI's count is checked against the page in test_app_pages)."""
    from engine.explain import harness
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
