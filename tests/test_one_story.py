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
