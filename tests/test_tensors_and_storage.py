"""The "Tensors and storage" page: its logic (explorer.tensors_and_storage) and the page headless (AppTest)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from engine.tensor_data import TensorData
from explorer import tensors_and_storage as M
from explorer.kit.presentation import NORMAL, PRESENTING

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "8_Tensors_and_storage.py")


def _numpy_chain(calls, base_shape):
    """The same chain with NumPy (a reference for values; NumPy views share memory the same way)."""
    a = np.arange(int(np.prod(base_shape)), dtype=float).reshape(base_shape)
    for method, args, _ in calls:
        if method in ("permute",):
            a = a.transpose(args)
        elif method == "T":
            a = a.T
        elif method == "transpose":
            a = np.swapaxes(a, *args)
        elif method in ("view", "reshape"):
            a = a.reshape(args)
        elif method == "flatten":
            a = a.reshape(-1)
        elif method == "expand":
            a = np.broadcast_to(a, args)
        elif method == "contiguous":
            a = np.ascontiguousarray(a)
        elif method == "index":
            a = a[args]
        elif method == "unsqueeze":
            a = np.expand_dims(a, args[0])
        elif method == "squeeze":
            a = np.squeeze(a, *args) if args else np.squeeze(a)
    return a


@pytest.mark.parametrize("chain", [c for c in M.CHAIN_PRESETS if "view(12)" not in c or "contiguous" in c])
def test_every_preset_layout_follows_the_index_maths(chain):
    run = M.run_chain(chain)
    assert run.error is None
    last = run.last
    ref = _numpy_chain(M.parse_chain(chain), (3, 4))
    assert last.shape == ref.shape
    np.testing.assert_array_equal(np.array(last.values).reshape(ref.shape), ref)
    # position of element [i, j, ...] = offset + sum(i_d * stride_d), read back from the storage
    for k, index in enumerate(np.ndindex(*last.shape)):
        pos = last.offset + sum(i * s for i, s in zip(index, last.strides))
        assert last.positions[k] == pos and last.storage[pos] == last.values[k]


def test_permute_shares_storage_view_raises_the_engines_view_error_contiguous_copies():
    run = M.run_chain("x.permute(1, 0).view(12)")
    (perm,) = run.steps
    assert perm.shares_base and perm.strides == (1, 4) and not perm.contiguous and perm.op == "permute"
    assert run.error_type == "ViewError" and run.error_at == "x.permute(1, 0).view(12)"
    # the message is the engine's own (TensorData.view)
    td = TensorData.from_flat(list(range(12)), (3, 4), "d").permute((1, 0))
    with pytest.raises(Exception) as info:
        td.view((12,))
    assert str(info.value) == run.error
    run = M.run_chain("x.permute(1, 0).contiguous().view(12)")
    perm, copy, flat = run.steps
    assert not copy.shares_base and copy.contiguous and copy.strides == (3, 1)
    assert flat.storage_id == copy.storage_id and flat.values == list(np.arange(12.0).reshape(3, 4).T.ravel())
    rows = M.chain_rows(run)
    assert [r["storage"].split(" (")[0] for r in rows] == ["x's storage", "x's storage", "copy 1", "copy 1"]


def test_slices_and_expand_strides():
    run = M.run_chain("x[1:, ::2]")
    assert (run.last.offset, run.last.strides, run.last.values) == (4, (4, 2), [4.0, 6.0, 8.0, 10.0])
    run = M.run_chain("x[:, :1].expand(3, 4)")
    assert run.last.strides == (4, 0) and run.last.values == [0.0] * 4 + [4.0] * 4 + [8.0] * 4
    run = M.run_chain("x.permute(2, 0, 1)", (2, 3, 2))
    assert run.last.strides == (1, 6, 2) and run.last.shares_base


@pytest.mark.parametrize("text", ["y.permute(1, 0)", "x.numpy()", "__import__('os')", "x.view(1000)",
                                  "x[0:2, None]", "x.expand(64, 64)", "x.permute(dims=(1, 0))", "x.data",
                                  "(lambda: 1)()", "x" + ".T" * 20, "x.view(1.5)", "", "x[::0]"])
def test_chains_outside_the_whitelist_are_refused_before_running(text):
    with pytest.raises(M.ChainError):
        M.run_chain(text)


def test_engine_errors_are_reported_not_raised():
    run = M.run_chain("x.permute(0, 1, 2)")
    assert run.error_type and not run.steps
    run = M.run_chain("x.view(5, 3)")
    assert run.error_type == "ValueError" and "(5, 3)" in run.error and not run.steps


def test_layout_figure_draws_every_box_with_readable_text():
    run = M.run_chain("x[1:, ::2]")
    for look in (NORMAL, PRESENTING):
        fig = M.layout_figure(run.last, look, "t")
        assert len(fig.layout.shapes) == 12 + 4  # storage boxes + element boxes
        unread = [s for s in fig.layout.shapes[:12] if s.fillcolor == "#e5e7eb"]
        assert len(unread) == 12 - 4
        values = [a for a in fig.layout.annotations if a.font.size == look.figure_font]
        assert len(values) >= 16
    assert min(a.font.size for a in M.layout_figure(run.last, PRESENTING).layout.annotations) >= 15


def test_the_row_names_stand_above_their_rows_not_on_the_first_box():
    """'storage' and 'tensor' were centred left of the first box and ran into it: each stands above its row now,
    starting where the row starts, clear of the boxes and of the position numbers under the storage row."""
    run = M.run_chain("x.permute(1, 0)")
    for look in (NORMAL, PRESENTING):
        fig = M.layout_figure(run.last, look, "t")
        names = {("tensor" if a.text == M.TENSOR_LABEL else a.text): a for a in fig.layout.annotations
                 if a.text in ("storage", M.TENSOR_LABEL)}
        assert set(names) == {"storage", "tensor"}
        tops = sorted({round(s.y1, 6) for s in fig.layout.shapes}, reverse=True)
        storage_top, tensor_top = tops[0], max(t for t in tops if t < -0.5)
        positions = min(a.y for a in fig.layout.annotations if a.text.isdigit() and -1 < a.y < 0)
        for name, row_top in (("storage", storage_top), ("tensor", tensor_top)):
            a = names[name]
            assert a.xanchor == "left" and a.x >= fig.layout.xaxis.range[0]
            assert row_top + 0.2 < a.y < fig.layout.yaxis.range[1] - 0.2
        assert names["tensor"].y < positions - 0.45   # under the storage row's position numbers


def _cells(fig) -> list[tuple[str, str]]:
    """(position label, fill) of every box read by the tensor: the storage boxes (a number under the box) and the
    element boxes (an @position label inside), read from the figure's shapes and annotations."""
    layout = fig.to_dict()["layout"]
    notes = [(a["x"], a["y"], a["text"]) for a in layout["annotations"]]
    out = []
    for shape in layout["shapes"]:
        if shape["fillcolor"] == M.UNREAD:
            continue
        x0, x1, y0, y1 = shape["x0"], shape["x1"], shape["y0"], shape["y1"]
        inside = [t for x, y, t in notes if x0 <= x <= x1 and y0 <= y <= y1 and t.startswith("@")]
        under = ["@" + t for x, y, t in notes if x0 <= x <= x1 and y0 - 0.5 < y < y0 and t.isdigit()]
        out.append(((inside or under)[0], shape["fillcolor"]))
    return out


@pytest.mark.parametrize("shape", list(M.BASE_SHAPES.values()), ids=list(M.BASE_SHAPES))
@pytest.mark.parametrize("chain", list(M.CHAIN_PRESETS) + ["x.flatten()[3:]", "x.flatten()[::5]"])
def test_no_two_storage_positions_share_a_colour(chain, shape):
    """The colour names the storage position a box reads: two boxes have one colour exactly when they read one
    position (the ten-colour cycle painted position 10 as position 0), on every preset chain and shape of x."""
    try:
        run = M.run_chain(chain, shape)
    except M.ChainError:
        pytest.skip("the chain does not apply to this shape")
    for lay in [run.base, *run.steps]:
        cells = _cells(M.layout_figure(lay, PRESENTING, "t"))
        assert len(cells) >= len(set(lay.positions)) and len(cells) == len(set(lay.positions)) + len(lay.positions)
        colour_of = {}
        for label, fill in cells:
            assert colour_of.setdefault(label, fill) == fill, f"{lay.expr}: {label} in two colours"
        fills = list(colour_of.values())
        assert len(set(fills)) == len(fills), f"{lay.expr}: two positions share a colour"
        assert M.UNREAD not in fills


def _lab(colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a ``#rrggbb`` colour: distances in it follow what the eye tells apart."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _luminance(colour: str) -> float:
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_position_colours_are_told_apart_by_eye_and_keep_their_text_readable():
    """Different strings are not enough (the old palette's positions 0 and 10, #fca5a5 and #fda4af, were ΔE 6 apart):
    every two colours of x's storage, and each against the unread grey, differ by ΔE >= 18 in CIELAB; the dark
    numbers on them keep a contrast of at least 5.5 (WCAG's 4.5, with room for a washed-out projector)."""
    import itertools
    colours = M.storage_colours(12) + [M.UNREAD]
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(colours, 2))
    assert closest >= 18, closest
    text = _luminance(M.INDEX_COLOUR)
    assert min((_luminance(c) + 0.05) / (text + 0.05) for c in colours) >= 5.5


def test_a_storage_longer_than_the_palette_is_one_colour_and_the_caption_says_so():
    run = M.run_chain("x.view(1, 12).expand(4, 12).contiguous()")
    copy = run.last
    assert len(copy.storage) == 48
    fills = {fill for _, fill in _cells(M.layout_figure(copy, PRESENTING, "t"))}
    assert fills == {M.ONE_COLOUR}
    assert "drawn in one colour" in M.picture_caption(run)
    assert "one colour" not in M.picture_caption(M.run_chain("x.permute(1, 0)"))


def test_position_labels_are_as_large_as_the_values_and_dark_in_presentation_mode():
    """The numbers under the storage boxes and the @position labels: >= 14 px once a 1366 x 768 screen scales the
    1920 x 1080 page (x 0.711), in a dark colour (they were 15-16 px, light grey)."""
    from explorer.kit.presentation import DESIGN_SCREEN
    scale = min(1366 / DESIGN_SCREEN[0], 768 / DESIGN_SCREEN[1])
    fig = M.layout_figure(M.run_chain("x.permute(1, 0)").last, PRESENTING, "t")
    labels = [a for a in fig.layout.annotations if a.text.isdigit() and -1 < a.y < 0 or a.text.startswith("@")]
    assert len(labels) == 12 + 12
    assert all(a.font.size * scale >= 14 for a in labels)
    assert {a.font.color for a in labels} == {M.INDEX_COLOUR}


@pytest.mark.parametrize("label", list(M.B_SHAPES))
def test_broadcast_backward_sums_over_the_broadcast_axes(label):
    shape = M.B_SHAPES[label]
    r = M.broadcast_backward(shape)
    G = np.array(M.EX8_G)
    np.testing.assert_array_equal(r.x_grad, G)
    expected = G.sum(axis=r.summed_axes).reshape(shape) if shape else G.sum()
    np.testing.assert_array_equal(np.asarray(r.b_grad), expected)
    assert "sum" in r.backward_ops


def test_lecture_exercise_8():
    # LECTURE.md, exercise 8: b̄ = [9, 12], x̄ = G
    r = M.broadcast_backward((2,))
    assert r.b_grad == [9.0, 12.0] and r.summed_axes == (0,)


def test_embedding_backward_is_a_scatter_add():
    # LECTURE.md, exercise 12: row 3 gets g0 + g2, row 1 gets g1, every other row 0
    r = M.embedding_backward([3, 1, 3])
    assert r.forward_op == "gather" and r.backward_ops == ["scatter_add"]
    g = np.array(r.upstream)
    np.testing.assert_array_equal(r.grad[3], g[0] + g[2])
    np.testing.assert_array_equal(r.grad[1], g[1])
    expected = np.zeros((M.VOCAB, M.DIM))
    np.add.at(expected, [3, 1, 3], g)
    np.testing.assert_array_equal(r.grad, expected)
    rows = M.embedding_rows(r)
    assert rows[3]["= sum of"] == "g0 + g2" and rows[0]["= sum of"].startswith("0")


@pytest.mark.parametrize("text", ["9", "1, x", "-1", ",".join(["1"] * 13), ""])
def test_bad_ids_are_refused(text):
    with pytest.raises(ValueError):
        M.parse_ids(text)


def test_backends_agree_and_are_timed():
    timings = M.time_backends("broadcast_backward", 16, repeats=1)
    assert [t.backend for t in timings][0] == "numpy"
    assert {t.backend for t in timings} == set(engine.available_backends())
    for t in timings:
        assert t.seconds > 0 and t.max_diff < 1e-9
    rows = M.timing_rows(timings)
    assert rows[0]["× numpy's time"] == "1"
    with pytest.raises(ValueError):
        M.time_backends("matmul", 4096)


# --- the page ----------------------------------------------------------------------------------------------

def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_page_shows_shared_storage_and_the_view_error():
    at = _ok(AppTest.from_file(PAGE, default_timeout=90).run())
    table = at.table[0].value
    assert list(table["strides"]) == ["(4, 1)", "(1, 4)"]
    assert "the same storage object as x" in "\n".join(m.value for m in at.markdown)
    at.selectbox(key="tensors_chain_preset").set_value("x.permute(1, 0).view(12)").run()
    _ok(at)
    assert "ViewError" in at.error[0].value and at.query_params["chain"] == "x.permute(1, 0).view(12)"
    at.text_input(key="tensors_chain").set_value("__import__('os').system('ls')").run()
    _ok(at)
    assert "not accepted" in at.error[0].value


def test_page_exercises_8_and_12_and_backends():
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.query_params.update({"bshape": "(3, 1)", "ids": "2, 2", "op": "map_reduce", "n": "1000"})
    _ok(at.run())
    md = "\n".join(m.value for m in at.markdown)
    assert "summed over axis 1" in md and "scatter_add" in md
    at.radio(key="tensors_bshape").set_value("(2,)").run()
    assert "`[9, 12]`" in "\n".join(m.value for m in _ok(at).markdown)
    next(b for b in at.button if b.label == "Run on every backend").click().run()
    _ok(at)
    timing = next(t.value for t in at.table if "× numpy's time" in t.value.columns)
    assert list(timing["backend"]) == engine.available_backends()[:1] + [b for b in engine.available_backends()
                                                                          if b != "numpy"]


def test_backend_agreement_says_which_kernels_are_bit_for_bit():
    from explorer.tensors_and_storage import backend_agreement, backend_note
    rows = {(r["kernel"], r["backend"]): r for r in backend_agreement(n=1000, backends=["numpy", "python"])}
    assert rows[("zip: x * y", "python")]["bit for bit equal to numpy"] == "yes"
    assert rows[("reduce: sum(y)", "python")]["max |difference|"] != "nan"
    for r in rows.values():
        assert float(r["max |difference|"]) < 1e-12
        assert (r["bit for bit equal to numpy"] == "yes") == (float(r["max |difference|"]) == 0.0)
    # the caption's claims are the table's (it once said map differs while the table showed map equal)
    note = backend_note(list(rows.values()))
    assert "2.7e-15" in note
    equal = [k for k in ("map", "zip", "reduce", "matmul")
             if rows[(next(kk for kk, _ in rows if kk.startswith(k)), "python")]["bit for bit equal to numpy"] == "yes"]
    differ = [k for k in ("map", "zip", "reduce", "matmul") if k not in equal]
    assert f"Here {' / '.join(equal)} " in note and f"{' / '.join(differ)} differ" in note


def test_the_lesson_sentence_and_the_axes_in_words():
    """The sentence under the pictures says what the last view reads (the same storage or a copy; contiguous or
    not, and what `view` / `contiguous()` do then); broadcasting's axes read "axis 0", not a Python tuple "(0,)"."""
    import explorer.tensors_and_storage as M
    permuted = M.run_chain("x.permute(1, 0)", (3, 4)).last
    text = M.storage_sentence(permuted)
    assert "the same storage object as x" in text and "not contiguous" in text and "`contiguous()` copies" in text
    copied = M.run_chain("x.permute(1, 0).contiguous()", (3, 4)).last
    text = M.storage_sentence(copied)
    assert "a storage of its own" in text and "not contiguous" not in text
    assert [M.axes_words(a) for a in [(0,), (1,), (0, 1), (0, 1, 2), ()]] == [
        "axis 0", "axis 1", "axes 0 and 1", "axes 0, 1 and 2", "no axis"]
    for shape in M.B_SHAPES.values():
        assert "(" not in M.axes_words(M.broadcast_backward(shape).summed_axes)


# --- how an op is defined --------------------------------------------------------------------------------------

def test_the_shown_declarations_are_the_engines_own_source():
    import inspect

    from engine import ops
    for name, op in M.SHOWN_DECLARATIONS.items():
        assert op is ops.primitive(name)   # the engine's registered class, not a copy
        src = M.declaration_source(op)
        assert src.whole == inspect.getsource(op)
        assert src.backward == inspect.getsource(op.vjp.__func__)
        owner = ops.Binary if issubclass(op, ops.Binary) else ops.Unary
        assert src.forward_owner == owner.__name__ and src.forward == inspect.getsource(owner.forward.__func__)
    assert "k.sum_to_shape(g, a.shape)" in M.declaration_source(ops.Add).backward


def test_your_own_op_passes_the_gradient_check_and_a_wrong_backward_fails_it():
    from engine.tensor import _OPS_BY_NAME
    before = dict(_OPS_BY_NAME)
    for key in ("softplus", "cube"):
        c = M.check_custom_op(key, with_torch=False)
        assert c.ok and c.max_error < 1e-8, (key, c.max_error)
        assert c.source.startswith(f"@_unregistered(\"{key}\")")
    x = np.array(M.CUSTOM_X)
    assert np.allclose(M.check_custom_op("cube", with_torch=False).grad,
                       3 * x ** 2 * np.random.default_rng(0).standard_normal(x.shape), rtol=1e-12)
    wrong = M.check_custom_op("softplus_wrong", with_torch=False)
    assert not wrong.ok and wrong.max_error > 1.0   # the same check catches a wrong VJP
    # declared ops stay out of the engine's registry: no other session sees them
    assert "softplus" not in _OPS_BY_NAME and "cube" not in _OPS_BY_NAME and dict(_OPS_BY_NAME) == before
    assert not hasattr(engine, "softplus") and not hasattr(engine.Tensor, "cube")


def test_your_own_op_against_pytorch():
    pytest.importorskip("torch")
    c = M.check_custom_op("softplus")
    assert c.torch_error is not None and c.torch_error < 1e-12 and "PyTorch x̄" in M.custom_op_rows(c)[0]
    assert M.check_custom_op("softplus_wrong").torch_error > 1.0


def test_page_shows_a_declaration_side_by_side_and_checks_your_op():
    import inspect

    from engine import ops
    at = _ok(AppTest.from_file(PAGE, default_timeout=90).run())
    codes = [c.value + "\n" for c in at.code]   # st.code drops the last newline
    assert inspect.getsource(ops.Binary.forward.__func__) in codes and inspect.getsource(ops.Add.vjp.__func__) in codes
    at.radio(key="tensors_decl").set_value("exp").run()
    codes = [c.value + "\n" for c in _ok(at).code]
    assert inspect.getsource(ops.Unary.forward.__func__) in codes and inspect.getsource(ops.Exp.vjp.__func__) in codes
    assert any("Gradient check passed" in s.value for s in at.success)
    at.selectbox(key="tensors_myop").set_value("softplus_wrong").run()
    assert any("Gradient check failed" in e.value for e in _ok(at).error)
    assert at.query_params["myop"] == "softplus_wrong"


def test_the_tensor_rows_label_explains_the_cells_at_k():
    """A lecturer's walk: the cells' "@k" was explained only by the caption under the pictures, at a projector's fold.
    The tensor row's own label says what a cell's @k is, in the picture."""
    run = M.run_chain("x.permute(1, 0)")
    for look in (NORMAL, PRESENTING):
        fig = M.layout_figure(run.last, look, "t")
        labels = [a.text for a in fig.layout.annotations if a.text.startswith("tensor")]
        assert labels == [M.TENSOR_LABEL] and "@k" in labels[0] and "storage position" in labels[0]
