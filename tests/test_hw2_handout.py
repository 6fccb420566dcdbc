"""HW2's handout at a glance (explorer.student_code.handout) and where the pages show it (Your HW2 code, headless)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from explorer.explain.numbers import num
from explorer.student_code import handout as H

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "app" / "pages" / "13_Your_HW2_code.py"


def test_three_problems_add_up_to_100_points_each_fenced_in_both_spellings():
    assert [p.points for p in H.PROBLEMS] == [40, 30, 30] and H.total_points() == 100
    rows = H.problem_rows()
    assert [r["points"] for r in rows] == [40, 30, 30]
    for p, row in zip(H.PROBLEMS, rows):
        assert p.markers == (f"# BEGIN ASSIGN2_{p.number}", f"# END ASSIGN2_{p.number}")
        assert p.website_markers == (f"# BEGIN HW2_{p.number}", f"# END HW2_{p.number}")
        assert p.markers[0] in row["fenced by"] and f"{p.blocks} blocks" in row["fenced by"]


def test_marked_blocks_counts_closed_blocks_of_either_spelling():
    src = "\n".join(["def f():", "    # BEGIN ASSIGN2_2", "    x = 1", "    # END ASSIGN2_2",
                     "    # BEGIN HW2_2", "    y = 2", "    # END HW2_2",
                     "    # BEGIN HW2_3", "    z = 3",                 # never closed ...
                     "    # BEGIN ASSIGN2_1", "    # END ASSIGN2_1",  # ... so only this one counts
                     "    # END ASSIGN2_3"])                          # an END without its BEGIN
    assert H.marked_blocks(src) == {"2": 2, "1": 1}
    # the blocks written out from the problems' own markers are found again, per problem
    made = "\n".join(line for p in H.PROBLEMS for _ in range(p.blocks) for line in (p.markers[0], "pass", p.markers[1]))
    assert H.marked_blocks(made) == {str(p.number): p.blocks for p in H.PROBLEMS}
    assert H.marked_blocks("# BEGIN NOTHING_1\n# END NOTHING_1") == {}


def test_default_log_fn_lines():
    assert H.default_log_lines(3, 0.5, 0.8125, 0.75, 0.76) == [
        "Epoch 3, loss 0.5, train accuracy: 81.25%", "Validation accuracy: 75.00%", "Best Valid accuracy: 76.00%"]
    assert H.default_log_lines(1, 0.25, 0.5, None, None) == ["Epoch 1, loss 0.25, train accuracy: 50.00%"]


def test_autograder_log_of_a_real_run_keeps_the_running_best():
    from sentiment.data import builtin_split
    from sentiment.embeddings import load_glove
    from sentiment.trainer import EpochEnd, SentimentTrainer, TrainConfig
    train, dev = builtin_split()
    trainer = SentimentTrainer(train, dev, load_glove(), TrainConfig(epochs=3))
    epochs = [ev for ev in trainer.events() if isinstance(ev, EpochEnd)]
    assert len(epochs) == 3
    lines = H.autograder_log(epochs)
    assert len(lines) == 9 and lines[0].startswith("Epoch 1, loss ")
    assert lines[0] == f"Epoch 1, loss {epochs[0].train_loss}, train accuracy: {epochs[0].train_accuracy:.2%}"
    bests = [float(line.split(": ")[1].rstrip("%")) / 100 for line in lines if line.startswith("Best Valid")]
    assert bests == pytest.approx([max(e.val_accuracy for e in epochs[:i + 1]) for i in range(3)], abs=5e-5)
    assert H.autograder_log(epochs, last=1) == lines[-3:]


def test_faq_and_version_notes_carry_the_handouts_points():
    faq = " ".join(" ".join(r.values()) for r in H.faq_rows())
    assert "30 minutes" in faq and "75 %" in faq and "SGD" in faq and "learning rate" in faq
    notes = " ".join(" ".join(r.values()) for r in H.version_rows())
    for word in ("ASSIGN2_n", "HW2_n", "leaf", "c_double", "c_float", "nan", "binary_cross_entropy_loss",
                 "cross_entropy_loss"):
        assert word in notes, word


def test_every_backend_runs_hw2s_step_to_the_same_numbers_or_says_why_not():
    runs = H.backend_runs()
    assert [r.backend for r in runs] == engine.backends.known()
    here = [r for r in runs if r.available]
    assert {r.backend for r in here} == set(engine.available_backends())
    numpy_run = next(r for r in here if r.backend == "numpy")
    for r in here:
        assert r.loss == pytest.approx(numpy_run.loss, abs=1e-12) and r.grad_diff < 1e-12 and r.ms > 0
    rows = H.backend_rows(runs)
    for r, row in zip(runs, rows):
        assert row["loss"] == (num(r.loss) if r.available else "—")
        assert row["runs here"] == "yes" or row["runs here"] == "no: " + r.reason
    missing = [r for r in runs if not r.available]
    assert bool(H.cuda_missing(runs)) == any(r.backend == "cuda" for r in missing)
    if H.cuda_missing(runs):
        assert "CUDA is not available here" in H.cuda_missing(runs)
    slow = max(here, key=lambda r: r.ms)
    assert f"`{slow.backend}` took" in H.backend_runs_caption(runs) or len(here) == 1


def test_the_page_shows_the_handout(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(sys, "argv", ["app/Home.py"])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "HW2 at a glance: three problems, 100 points" for s in at.subheader)
    tables = [t.value for t in at.table]
    problems = next(t for t in tables if "points" in t.columns)
    assert list(problems["points"]) == [40, 30, 30]
    assert "# BEGIN ASSIGN2_1" in problems["fenced by"].iloc[0]
    assert any(c.value == "\n".join(H.LOG_FORMAT) for c in at.code)
    faq = next(t for t in tables if "question" in t.columns)
    assert faq["the handout's answer"].str.contains("30 minutes").any()
    notes = next(t for t in tables if "change" in t.columns)
    assert notes["change"].str.contains("c_float").any()
    assert any("backend_name" in t.to_string() and "combine.so" in t.to_string() for t in tables)
    measured = next(t for t in tables if "ms per step" in t.columns)
    assert list(measured["engine backend"]) == engine.backends.known()
    numpy_loss = measured.set_index("engine backend").loc["numpy", "loss"]
    assert numpy_loss == num(next(r for r in H.backend_runs() if r.backend == "numpy").loss)
    info = "\n".join(i.value for i in at.info)
    assert ("CUDA is not available here" in info) == ("cuda" not in engine.available_backends())
    text = "\n".join(m.value for m in at.markdown)
    assert "nvcc -o minitorch/cuda_kernels/combine.so" in text and np.isfinite(float(numpy_loss))


def test_fences_of_a_students_copy_are_counted_per_problem(tmp_path):
    (tmp_path / "minitorch").mkdir()
    (tmp_path / "project").mkdir()
    one = H.PROBLEMS[0]
    (tmp_path / one.file).write_text("\n".join([one.markers[0], "pass", one.markers[1]] * one.blocks))
    # problem 2's fences renamed to the website's spelling, one of problem 3's lost
    two, three = H.PROBLEMS[1], H.PROBLEMS[2]
    text = [two.website_markers[0], "pass", two.website_markers[1]] * two.blocks
    text += [three.markers[0], "pass", three.markers[1]] * (three.blocks - 1)
    (tmp_path / two.file).write_text("\n".join(text))
    for path in (tmp_path, tmp_path / one.file):      # the folder, or its minitorch/autodiff.py
        rows = H.fence_rows(path)
        assert [r["blocks in your copy"] for r in rows] == [str(one.blocks), str(two.blocks), str(three.blocks - 1)]
        assert [r["as expected"] for r in rows] == [True, True, False]
        assert all(str(tmp_path) not in str(r) for r in rows)       # no path of this machine
    (tmp_path / one.file).unlink()
    assert H.fence_rows(tmp_path)[0]["blocks in your copy"] == "file not found"
    # one file named, outside a HW2 folder: only problem 1 is looked for, in that file
    lone = tmp_path / "my_autodiff.py"
    lone.write_text("# BEGIN HW2_1\npass\n# END HW2_1\n")
    rows = H.fence_rows(lone)
    assert [r["blocks in your copy"] for r in rows] == ["1"] + ["not given (one file was named)"] * 2
    assert rows[0]["file"] == "`my_autodiff.py`" and not rows[0]["as expected"]


def test_the_page_counts_the_fences_of_the_students_own_file(monkeypatch):
    from streamlit.testing.v1 import AppTest
    solution = ROOT / "tests" / "student_solutions" / "hw2_starter"
    monkeypatch.setattr(sys, "argv", ["app/Home.py", "--student-code", str(solution)])
    monkeypatch.delenv("AUTODIFF_CLASS_SERVER", raising=False)
    at = AppTest.from_file(str(PAGE), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    fences = next(t.value for t in at.table if "blocks in your copy" in t.value.columns)
    assert list(fences["blocks in your copy"]) == [r["blocks in your copy"] for r in H.fence_rows(solution)]
    assert str(ROOT) not in fences.to_string()
