"""Network explorer model: presets recorded on the real engine, events vs the engine's gradients."""
import numpy as np
import pytest

from engine import ops
from explorer.network_explorer import analysis
from explorer.network_explorer.presets import PRESETS, PresetError, build, parse_layers
from explorer.network_explorer.recording import record


def _fresh_grads(net):
    """The engine's own gradients from a plain backward pass (no observer, no tracing)."""
    net.model.zero_grad()
    net.loss().backward()
    return {n: p.grad.numpy().copy() for n, p in net.model.named_parameters()}


@pytest.mark.parametrize("key", list(PRESETS))
def test_events_match_engine_gradients(key):
    net = build(key)
    rec = record(net)
    grads = _fresh_grads(net)
    assert grads, "every preset has leaves that take a gradient"
    by_label = {n.label: n for n in rec.nodes}
    for name, g in grads.items():
        node = by_label[name]
        # the leaf's LeafAccumulated derivative is the engine's gradient
        leaf_steps = [s for s in rec.backward if s.node == node.id]
        assert len(leaf_steps) == 1 and leaf_steps[0].leaf_grad is not None
        np.testing.assert_allclose(leaf_steps[0].leaf_grad, g, rtol=1e-12, atol=1e-14)
        # and it is the sum of the contributions its consumers sent (fan-out sum)
        np.testing.assert_allclose(analysis.fan_out_sum(rec, node.id).parts_sum, g, rtol=1e-10, atol=1e-13)
    # every visited node holds exactly the sum of what it received; the loss starts at 1
    assert rec.backward[0].node == rec.loss_node
    np.testing.assert_array_equal(rec.backward[0].adjoint, 1.0)
    for step in rec.backward[1:]:
        parts = rec.contributions_to(step.node)
        assert parts[-1].complete and parts[-1].received == len(parts)
        np.testing.assert_allclose(step.adjoint, np.sum([c.value for c in parts], axis=0), rtol=1e-10, atol=1e-13)
        np.testing.assert_array_equal(step.adjoint, parts[-1].total)


def test_backward_is_recorded_by_the_explain_trace():
    """One recorder: the network's backward steps are explorer.explain's events grouped by step, and the
    frames read those same events (not a translation of the steps back into events)."""
    from explorer.explain.trace import BackwardEvent
    from explorer.network_explorer.frames import build_view, to_graph, to_trace
    rec = record(build("mlp"))
    assert rec.events and all(isinstance(e, BackwardEvent) for e in rec.events)
    visits = [e for e in rec.events if e.kind == "visit"]
    assert [e.node for e in visits] == [s.node for s in rec.backward]
    sends = [(e.node, e.parent) for e in rec.events if e.kind == "send"]
    assert sends == [(c.source, c.target) for s in rec.backward for c in s.contributions]
    assert [e.node for e in rec.events if e.kind == "leaf"] == [s.node for s in rec.backward
                                                                 if s.leaf_grad is not None]
    assert to_trace(rec, to_graph(rec)).backward == rec.events
    first = next(e for e in rec.events if e.kind == "send")
    assert first.value is None and ("array" in first.text or "scalar" in first.text)
    assert any("→" in f.caption for f in build_view(rec).frames.frames)


@pytest.mark.parametrize("key", list(PRESETS))
def test_gradient_check_table(key):
    table = analysis.gradient_check(build(key), coords=2)
    leaves = {r.leaf for r in table.rows}
    assert leaves == set(dict(build(key).model.named_parameters()))
    assert table.worst.rel_error < 1e-5, table.worst


def test_gradient_check_catches_a_wrong_gradient(monkeypatch):
    """The table is not vacuous: a broken VJP rule shows up as a large relative error."""
    net = build("mlp")
    # forgets the mask (one rule: both interpreters run it)
    monkeypatch.setattr(ops.Relu, "vjp", classmethod(lambda cls, ctx, g, k=ops.RECORDED: (g,)))
    table = analysis.gradient_check(net, coords=20)
    assert table.worst.rel_error > 1e-3


def test_embedding_scatter_add_repeated_word():
    net = build("sentiment", sentence="a good good movie")
    rec = record(net)
    assert net.config["tokens"] == ["a", "good", "good", "movie"]
    row = net.config["vocab"].index("good")
    gather = next(n for n in rec.nodes if n.op == "gather")
    step = next(s for s in rec.backward if s.node == gather.id)
    (sent,) = step.contributions
    assert rec.node(sent.target).label == "embedding.weight"
    g = step.adjoint                       # (4, 50): one row of upstream gradient per token
    assert g.shape == (4, 50)
    # two contributions land in the "good" row: g[1] + g[2]; the others get one row each
    np.testing.assert_allclose(sent.value[row], g[1] + g[2], rtol=1e-13)
    assert not np.allclose(sent.value[row], g[1])
    np.testing.assert_allclose(sent.value[net.config["vocab"].index("a")], g[0], rtol=1e-13)
    expected = np.zeros_like(sent.value)
    np.add.at(expected, np.array(net.config["index"]), g)
    np.testing.assert_allclose(sent.value, expected, rtol=1e-13)
    # the engine ran a scatter_add inside the VJP, and the table's gradient is that result
    assert [op.op for op in step.vjp_ops] == ["scatter_add"]
    np.testing.assert_allclose(net.model.embedding.weight.grad.numpy(), expected, rtol=1e-13)
    assert any("Repeated word" in note for note in net.notes)


def test_sentiment_default_sentence_and_vector_source_label():
    net = build("sentiment")
    assert net.config["tokens"] == ["it", "is", "a", "good", "movie"]
    src = net.config["vectors_source"]
    assert "GloVe" in src or "SEEDED RANDOM" in src


def test_rnn_shared_weight_gradient_is_sum_over_steps():
    steps = 4
    net = build("rnn", steps=steps)
    rec = record(net)
    wh = rec.node_by_label("Wh")
    parts = rec.contributions_to(wh.id)
    assert len(parts) == steps                  # one contribution per time step
    for c in parts:
        mm = rec.node(c.source)                 # the step's h @ Wh
        assert mm.op == "matmul"
        h_prev = rec.node(mm.parents[0]).value
        np.testing.assert_allclose(c.value, h_prev.T @ mm.adjoint, rtol=1e-12, atol=1e-15)
    total = np.sum([c.value for c in parts], axis=0)
    np.testing.assert_allclose(total, net.model.Wh.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert parts[-1].received == parts[-1].expected == steps
    # the first step multiplies h0 = 0, so its contribution is exactly zero; the others are not
    zero_parts = [c for c in parts if not np.any(c.value)]
    assert len(zero_parts) == 1
    # ... and the page says why, in the fan-out table and in a note
    from explorer.network_explorer.tables import fan_out_rows
    notes = [r["note"] for r in fan_out_rows(rec, wh.id) if r["note"]]
    assert len(notes) == 1 and notes[0].startswith("0: the other factor h0 is all zeros")
    assert any("h0 = 0" in n for n in net.notes)


def test_rnn_tanh_is_labelled_as_one_function():
    rec = record(build("rnn", steps=2))
    tanhs = [n for n in rec.nodes if n.label.startswith("tanh#")]
    assert len(tanhs) == 2 and all("2·sigmoid(2a) − 1" in n.composite for n in tanhs)
    assert all(n.composite_call.startswith("tanh(add#") for n in tanhs)     # the op view's node reads tanh(a)
    assert [layer.name for layer in rec.layers][:2] == ["step 1", "step 1: tanh"]
    for n in tanhs:   # its value is tanh of the step's pre-activation
        pre = rec.node(next(layer.output for layer in rec.layers if layer.name == n.layer.split(":")[0])).value
        np.testing.assert_allclose(n.value, np.tanh(pre), rtol=1e-12)


def test_rnn_against_torch():
    torch = pytest.importorskip("torch")
    net = build("rnn", steps=3)
    grads = _fresh_grads(net)
    cfg = net.config
    rng = np.random.default_rng(cfg["seed"])
    xs = rng.standard_normal((cfg["steps"], cfg["batch"], cfg["features"]))
    target = rng.standard_normal((cfg["batch"], 1))
    p = {n: torch.tensor(t.numpy(), requires_grad=True) for n, t in net.model.named_parameters()}
    h = torch.zeros(cfg["batch"], cfg["hidden"], dtype=torch.float64)
    for t in range(cfg["steps"]):
        h = torch.tanh(torch.tensor(xs[t]) @ p["Wx"] + h @ p["Wh"] + p["b"])
    loss = ((h @ p["Wo"] - torch.tensor(target)) ** 2).mean()
    loss.backward()
    for n in grads:
        np.testing.assert_allclose(grads[n], p[n].grad.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("key,leaf,fan", [("residual", "x", 2), ("attention", "x", 3), ("logreg", "fc.bias", 1)])
def test_fan_out_counts(key, leaf, fan):
    rec = record(build(key))
    node = rec.node_by_label(leaf)
    fs = analysis.fan_out_sum(rec, node.id)
    assert len(fs.parts) == fan
    np.testing.assert_allclose(fs.parts_sum, fs.total, rtol=1e-12, atol=1e-15)


def test_logreg_bias_gradient_is_summed_over_batch():
    net = build("logreg", batch=5)
    rec = record(net)
    # Linear's z = x Wᵀ + b is one node (as PyTorch's addmm): b̄ = Σ_rows ȳ, x̄ = ȳ W
    lin = next(n for n in rec.nodes if n.op == "linear" and rec.node(n.parents[2]).label == "fc.bias")
    g = lin.adjoint                                       # (5, 1)
    np.testing.assert_allclose(net.model.fc.bias.grad.numpy(), g.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(net.model.x.grad.numpy(), g @ net.model.fc.weight.numpy(), rtol=1e-12)


def test_matmul_step_shows_the_real_matrices():
    rec = record(build("mlp"))
    mm_step = next(s for s in rec.backward if rec.node(s.node).op == "linear")   # a Linear's x Wᵀ + b
    detail = analysis.step_detail(rec, mm_step)
    assert detail.formula.startswith("x̄ = Ȳ W,")
    products = [p for p in detail.products if p[0] == "matmul"]
    assert products, "the VJP's matmuls are shown"
    for _, (a, b), out in products:
        np.testing.assert_allclose(a @ b, out, rtol=1e-13)
    # one of them produced what was sent to the first parent
    sent0 = detail.sent[0]["value"]
    assert any(out.shape == sent0.shape and np.allclose(out, sent0) for _, _, out in products)
    # the third contribution, the bias's b̄ = Σ_rows Ȳ, is shown too: the adjoint summed over the batch's rows,
    # what was sent to the bias, on the bias's colour scale
    assert [p[0] for p in detail.products].count("sum") == 1 and len(detail.sent) == 3
    (g,), b_bar = next((ins, out) for op, ins, out in detail.products if op == "sum")
    bias = detail.sent[2]
    assert rec.node(bias["target"]).label == "fc2.bias"
    np.testing.assert_array_equal(g, mm_step.adjoint)
    np.testing.assert_allclose(b_bar.reshape(bias["value"].shape), bias["value"], rtol=0)
    np.testing.assert_allclose(bias["value"], mm_step.adjoint.sum(axis=0), rtol=1e-13)
    k = [p[0] for p in detail.products].index("sum")
    assert detail.product_scales[k][1] == analysis.adjoint_scale(rec, bias["target"])
    # only a Linear's sum: elsewhere a VJP's sums are not panels
    assert not any(p[0] == "sum" for s in rec.backward if rec.node(s.node).op != "linear"
                   for p in analysis.step_detail(rec, s).products)


def test_memory_panel():
    rec = record(build("mlp"))
    mem = analysis.memory_report(rec)
    labels = {r.label: r for r in mem.rows}
    assert mem.total_bytes == analysis.kept_bytes(build("mlp").loss())
    # the ReLU keeps its output and its VJP reads the mask from it; its input is not kept; a Linear keeps its input
    relu = next(n for n in rec.nodes if n.op == "relu")
    relu_in = rec.node(relu.parents[0])
    assert relu.label in labels[relu.label].read_by and relu_in.label not in labels
    assert "x" in labels and any(r.startswith("linear") for r in labels["x"].read_by)
    assert 0 < mem.read_bytes <= mem.total_bytes
    rows = analysis.memory_sweep("mlp", [2, 4, 8], "batch")
    assert all(r["bytes kept under no_grad"] == 0 for r in rows)
    b = [r["bytes kept"] for r in rows]
    assert b[0] < b[1] < b[2] and b[2] - b[1] == 2 * (b[1] - b[0])   # linear in the batch
    depth = analysis.memory_sweep("mlp", [1, 2, 3], "depth")
    assert depth[0]["tensors kept"] < depth[1]["tensors kept"] < depth[2]["tensors kept"]


def test_layers_group_every_node():
    rec = record(build("hw2"))
    names = [layer.name for layer in rec.layers]
    assert names[:4] == ["mean over words", "Linear 1", "ReLU", "Dropout"]
    assert sorted(n for layer in rec.layers for n in layer.nodes) == list(range(len(rec.nodes)))
    assert rec.node(rec.layers[-1].output).id == rec.loss_node


def test_hw2_dropout_mask_is_reproducible():
    net = build("hw2", dropout=0.5)
    assert net.loss().item() == net.loss().item()


def test_vjp_formula_for_every_differentiable_primitive():
    for op in ops.PRIMITIVES:
        text = analysis.vjp_formula(op.name)
        assert text
    with pytest.raises(KeyError, match="no VJP formula"):
        analysis.vjp_formula("conv9d")


def test_look_heatmap_or_stats():
    small = analysis.look(np.arange(6.0).reshape(2, 3))
    assert small.is_heatmap and small.matrix.shape == (2, 3)
    assert analysis.look(np.ones((2, 3, 4))).matrix.shape == (6, 4)
    big = analysis.look(np.arange(1000.0))
    assert not big.is_heatmap and big.stats["max"] == 999.0 and big.stats["numel"] == 1000
    assert analysis.look(np.float64(2.5)).matrix.shape == (1, 1)


def test_custom_layers_and_errors():
    assert parse_layers("linear 8, relu, Linear(2), dropout 0.1, tanh") == [
        ("linear", 8), ("relu", None), ("linear", 2), ("dropout", 0.1), ("tanh", None)]
    for bad in ["conv 3", "linear", "linear 0", "linear 100000", "relu 3", "dropout 1.5", "", "relu, " * 61,
                "linear 4,, relu", ", linear 4", "linear 4, , relu"]:
        with pytest.raises(PresetError):
            parse_layers(bad)
    with pytest.raises(PresetError, match="layer 2 is empty"):
        parse_layers("linear 4,, relu")
    assert parse_layers("linear 4, relu,") == [("linear", 4), ("relu", None)]   # one trailing comma is fine
    with pytest.raises(PresetError, match="at least one linear"):
        build("custom", layers="relu, tanh")
    with pytest.raises(PresetError, match="at most 40 words"):
        build("sentiment", sentence="good " * 41)
    with pytest.raises(PresetError, match="no words"):
        build("sentiment", sentence="   ")
    with pytest.raises(PresetError, match="unknown network"):
        build("vgg")
    with pytest.raises(PresetError, match="positive"):
        build("mlp", batch=0)
    net = build("custom", layers="linear 5, tanh, linear 3, sigmoid", batch=2)
    rec = record(net)
    assert rec.node(rec.loss_node).shape == ()
    assert [layer.name for layer in rec.layers][:4] == ["1. Linear 5", "2. Tanh", "3. Linear 3", "4. Sigmoid"]


def test_views_share_frame_indices_and_layer_boxes_show_outputs():
    from explorer.network_explorer.frames import build_view, frame_moment, n_frames

    rec = record(build("rnn", steps=3))
    op, layer = build_view(rec, "op"), build_view(rec, "layer")
    assert len(op.frames.frames) == len(layer.frames.frames) == n_frames(rec)
    assert frame_moment(rec, 0) == ("inputs", None)
    assert frame_moment(rec, 1) == ("forward", 0)
    assert frame_moment(rec, len(rec.forward_order) + 1) == ("backward", 0)
    assert frame_moment(rec, n_frames(rec) - 1) == ("done", None)
    # every layer is one box; leaves that take a gradient stay outside the boxes
    boxes = [n for n in layer.graph.nodes if n.kind == "group"]
    assert [b.group for b in boxes] == [lay.name for lay in rec.layers]
    assert {n.name.split(" ")[0] for n in layer.graph.nodes if n.kind == "input"} == {"Wx", "Wh", "b", "Wo"}
    # the box of step 1 shows its output's shape once computed, and ✓ once that output's adjoint is complete
    step1 = rec.layers[0]
    assert step1.name == "step 1"
    slot = layer.frames.node_ids.index(next(b.id for b in boxes if b.group == step1.name))
    texts = [(f.node_text[slot], f.node_adjoint[slot]) for f in layer.frames.frames]
    assert texts[0] == ("", "") and texts[-1] == ("2×4", "adjoint ✓")
    visit = next(s.index for s in rec.backward if s.node == step1.output)
    first_backward = len(rec.forward_order) + 1
    assert texts[first_backward + visit - 1] == ("2×4", "") and texts[first_backward + visit] == ("2×4", "adjoint ✓")
    # in the op view, node labels carry shapes
    wh = next(i for i, n in enumerate(op.graph.nodes) if n.name == "Wh")
    last = op.frames.frames[-1]
    slot = op.frames.node_ids.index(op.graph.nodes[wh].id)
    assert (last.node_text[slot], last.node_adjoint[slot]) == ("4×4", "gradient ✓")


def test_both_views_of_a_500_node_network_build():
    # their time is measured by benchmarks/network_frames.py (goal: under a second), never asserted here
    from benchmarks.network_frames import network_with_nodes
    from explorer.network_explorer.frames import build_view, to_graph

    rec = network_with_nodes(500)
    assert len(to_graph(rec).nodes) >= 500
    for level in ("op", "layer"):
        view = build_view(rec, level)
        assert view.level == level and view.frames.frames
        assert set(view.box_of) >= {n.id for n in rec.nodes if n.kind != "constant"} or level == "layer"


def test_merged_frames_for_big_networks_stay_aligned():
    """Above the explain layer's frame budget several ops share a frame; both views still agree."""
    from explorer.network_explorer.frames import build_view, frame_span, n_frames

    rec = record(build("rnn", steps=4))
    op, layer = build_view(rec, "op", max_frames=24), build_view(rec, "layer", max_frames=24)
    per = (op.frames.forward_per_frame, op.frames.backward_per_frame)
    assert per[0] > 1 and per[1] > 1
    assert (layer.frames.forward_per_frame, layer.frames.backward_per_frame) == per
    assert len(op.frames.frames) == len(layer.frames.frames) == n_frames(rec, *per) <= 24
    spans = [frame_span(rec, k, *per) for k in range(len(op.frames.frames))]
    fwd = [i for ph, a, b in spans if ph == "forward" for i in range(a, b)]
    bwd = [i for ph, a, b in spans if ph == "backward" for i in range(a, b)]
    assert fwd == list(range(len(rec.forward_order))) and bwd == list(range(len(rec.backward)))
    assert spans[-1][0] == "done" and [f.phase for f in op.frames.frames][-1] == "done"
    wh = op.frames.node_ids.index(rec.node_by_label("Wh").id)
    assert (op.frames.frames[-1].node_text[wh], op.frames.frames[-1].node_adjoint[wh]) == ("4×4", "gradient ✓")


def test_hw2_masked_mean_over_real_words():
    net = build("hw2", batch=4)
    rec = record(net)
    wv = rec.node_by_label("word vectors").value
    mask = rec.node_by_label("padding mask").value
    pooled = rec.node(next(layer for layer in rec.layers if layer.name == "mean over words").output).value
    np.testing.assert_allclose(pooled, (wv * mask[..., None]).sum(1) / mask.sum(1, keepdims=True), rtol=1e-13)
    assert pooled.shape == (4, wv.shape[2])
    if "SST-2" in net.config["vectors_source"]:
        # the course's setting: the first training sentences, in file order
        assert net.config["sentences"][0] == "hide new secretions from the parental units"
        assert mask[0].sum() == 7 and mask.sum(axis=1).max() == mask.shape[1]


def test_hw2_preset_is_the_trainers_network():
    """One HW2 network: the preset records sentiment.model.SentimentNet's own loss (sigmoid, fused BCE with its mean)."""
    from sentiment.model import SentimentNet

    net = build("hw2", batch=3, hidden=4, dropout=0.5, seed=2)
    assert isinstance(net.model, SentimentNet)
    rec = record(net)
    ops_run = [rec.node(i).op for i in rec.forward_order]
    assert "dropout_mask" in ops_run and ops_run[-2:] == ["sigmoid", "binary_cross_entropy"]
    names = [layer.name for layer in rec.layers if layer.name != "(outside layers)"]
    assert names == ["mean over words", "Linear 1", "ReLU", "Dropout", "Linear 2", "sigmoid", "BCE loss"]
    # the same numbers as the model run directly under the same dropout seed
    import engine
    engine.manual_seed(2)
    loss, _ = net.model.loss(engine.tensor(rec.node_by_label("word vectors").value),
                             engine.tensor(rec.node_by_label("padding mask").value),
                             engine.tensor(rec.node_by_label("labels").value))
    assert loss.item() == rec.loss
    assert analysis.gradient_check(net, coords=2).worst.rel_error < 1e-6


def test_lecture_sentiment_network_runs_the_layers_per_word_then_averages():
    net = build("sentiment", sentence="it is a good movie", hidden=3)
    rec = record(net)
    assert [layer.name for layer in rec.layers if layer.name != "(outside layers)"] == [
        "embedding lookup", "Linear 1 (each word)", "ReLU (each word)", "Linear 2 (each word)", "average pooling",
        "softmax / cross-entropy"]
    out = {layer.name: rec.node(layer.output).value for layer in rec.layers}
    assert out["ReLU (each word)"].shape == (5, 3) and out["Linear 2 (each word)"].shape == (5, 2)
    assert out["average pooling"].shape == (1, 2)
    # recomputed with NumPy from the model's weights, in the lecture's order
    m = net.model
    e = m.embedding.weight.numpy()[net.config["index"]]
    scores = np.maximum(e @ m.fc1.weight.numpy().T + m.fc1.bias.numpy(), 0) @ m.fc2.weight.numpy().T + m.fc2.bias.numpy()
    logits = scores.mean(0)
    np.testing.assert_allclose(out["average pooling"][0], logits, rtol=1e-12)
    p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert rec.loss == pytest.approx(-np.log(p[1]), rel=1e-12)
    assert net.config["p_per_word"] == pytest.approx(p[1], rel=1e-12)
    # HW2's order on the same weights is a different function (the ReLU is not linear)
    pooled = np.maximum(e.mean(0) @ m.fc1.weight.numpy().T + m.fc1.bias.numpy(), 0) @ m.fc2.weight.numpy().T \
        + m.fc2.bias.numpy()
    q = np.exp(pooled - pooled.max()) / np.exp(pooled - pooled.max()).sum()
    assert net.config["p_pool_first"] == pytest.approx(q[1], rel=1e-12) and abs(q[1] - p[1]) > 1e-6
    assert "Because ReLU is not linear" in net.teaches


def test_page_tables_are_plain_rows_with_the_fan_out_sum_last():
    from explorer.network_explorer.explore import explore
    from explorer.network_explorer.tables import fan_out_rows, layer_rows, memory_rows, note_levels

    ex = explore("sentiment", {"sentence": "a good good movie"})
    rec = ex.rec
    fan = next(n.id for n in rec.nodes if len(rec.contributions_to(n.id)) > 1)
    rows = fan_out_rows(rec, fan)
    assert rows[-1]["from"] == "= sum" and rows[-1]["backward step"] == ""
    assert all(r["backward step"].isdigit() for r in rows[:-1])      # never "None"
    parts = sum(r["‖contribution‖"] for r in rows[:-1])
    assert rows[-1]["‖contribution‖"] <= parts + 1e-9               # triangle inequality on the sum
    assert len(layer_rows(rec)) == len(rec.layers)
    assert {r["tensor"] for r in memory_rows(ex.memory)}
    assert note_levels(["x SEEDED RANDOM y", "plain"]) == [("warning", "x SEEDED RANDOM y"), ("caption", "plain")]


def test_colour_scales_are_shared_by_a_tensor_and_its_parts():
    rec = record(build("rnn", steps=3))
    wh = rec.node_by_label("Wh")
    scale = analysis.adjoint_scale(rec, wh.id)
    parts = rec.contributions_to(wh.id)
    assert scale == max(max(np.abs(c.value).max(), np.abs(c.total).max()) for c in parts)
    assert scale >= np.abs(wh.adjoint).max()
    # a matmul VJP: the adjoint it holds is drawn on its node's adjoint scale, its result on the target's
    step = next(s for s in rec.backward if rec.node(s.node).op == "matmul" and s.contributions)
    d = analysis.step_detail(rec, step)
    for (op, ins, out), (in_scales, out_scale) in zip(d.products, d.product_scales):
        targets = [analysis.adjoint_scale(rec, c.target) for c in step.contributions
                   if np.array_equal(c.value, out)]
        assert out_scale == (targets[0] if targets else analysis.magnitude(out))
        for a, sc in zip(ins, in_scales):
            if np.array_equal(a, step.adjoint):
                assert sc == analysis.adjoint_scale(rec, step.node)
    from explorer.network_explorer.explore import heatmap
    fig = heatmap(np.array([[1.0, -2.0]]), "t", zmax=5.0)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-5.0, 5.0)


# --- every request bounded, estimated before it runs, compact enough to cache --------------------------------

from explorer.kit.budget import ByteLRU, estimate_bytes   # noqa: E402
from explorer.network_explorer import cost                 # noqa: E402
from explorer.network_explorer.explore import explore, moment      # noqa: E402
from explorer.network_explorer.recording import Summary   # noqa: E402

ATTACK_60 = ", ".join(["linear 256"] * 60)   # the attack link: 247 s of CPU, 171 -> 1628 MB
CACHE_ENTRY = ByteLRU(64 << 20).max_entry_bytes   # the page's store: bounded_cache(64 MB), an entry at most a quarter


@pytest.mark.parametrize("key, options", [
    ("custom", dict(layers="linear 8, tanh, linear 4, dropout 0.3, sigmoid, linear 2", batch=5, features=3)),
    ("mlp", dict(batch=16, hidden=8, depth=3)), ("rnn", dict(steps=5, batch=2, hidden=4)),
    ("attention", {}), ("residual", {}), ("logreg", {}), ("sentiment", dict(sentence="a good good movie")),
    ("hw2", dict(batch=4))])
def test_the_probe_counts_what_the_recording_holds(key, options):
    """The estimate is the engine's own count: the probe's ops and numbers are the recording's exactly."""
    net = build(key, **options)
    c = cost.probe(net)
    rec = record(net)
    assert c.ops == len(rec.forward_order)
    assert c.numbers == sum(n.value.size for n in rec.nodes)
    assert c.leaves == len(net.leaves())


def test_the_attack_link_is_refused_before_its_parameters_are_built():
    import tracemalloc
    tracemalloc.start()
    with pytest.raises(PresetError, match=r"3,886,080 weights and biases \(at most 300,000\)"):
        explore("custom", {"layers": ATTACK_60, "batch": 64, "features": 16})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5 * 2**20          # nothing of the 31 MB of weights was allocated


@pytest.mark.parametrize("layers, batch, why", [
    (", ".join(["linear 256, tanh"] * 4), 64, "numbers"),              # 661,521 numbers
    (", ".join(["linear 100"] * 61), 1, "at most 60 layers"),
    ("linear 200, relu, " * 10 + "linear 1", 64, "weights and biases"),
    (", ".join(["linear 2, tanh"] * 20) + ", " + ", ".join(["tanh"] * 20), 1, None),   # fits: 60 layers
])
def test_networks_beyond_the_budget_are_refused_with_the_reason(layers, batch, why):
    opts = {"layers": layers, "batch": batch, "features": 16}
    if why is None:
        assert explore("custom", opts).n_frames > 100
        return
    with pytest.raises(PresetError, match=why):
        explore("custom", opts)


@pytest.mark.parametrize("key, options", [
    ("custom", dict(layers="linear 256, relu, linear 256, relu, linear 256", batch=64, features=16)),
    # a Linear records no transpose (ops.MatMulT): four layers of 256 fit the numbers' budget since
    ("custom", dict(layers="linear 256, relu, linear 256, relu, linear 256, relu, linear 256", batch=64, features=16)),
    ("custom", dict(layers=", ".join(["linear 8"] + ["tanh"] * 59), batch=64, features=16)),
    ("rnn", dict(steps=30, batch=32, hidden=16)), ("hw2", dict(batch=64, hidden=32)),
    ("mlp", dict(batch=64, hidden=32, depth=8)), ("attention", dict(tokens=16, features=16, head=8))])
def test_whatever_the_budget_allows_fits_the_pages_cache(key, options):
    """Results over the store's per-entry cap were never cached: every click recomputed (2-3 s per Step)."""
    ex = explore(key, options)
    assert estimate_bytes(ex) < CACHE_ENTRY
    big = [n for n in ex.rec.nodes if n.value.size > 400]
    assert all(isinstance(n.value, Summary) for n in big)
    m = ex.rec  # what the page reads from a compact recording still works: steps, fan-out sums, tables
    from explorer.network_explorer.explore import moment
    from explorer.network_explorer.tables import fan_out_rows, gradcheck_scope
    for frame in range(0, ex.n_frames, max(1, ex.n_frames // 25)):
        moment(ex, frame)
    fans = {c.target for s in m.backward for c in s.contributions if c.expected > 1}
    for node in list(fans)[:5]:
        assert fan_out_rows(m, node)[-1]["from"] == "= sum"
    assert gradcheck_scope(ex.gradcheck, m)


def test_work_beyond_the_budget_is_refused_even_when_the_numbers_fit():
    c = cost.NetworkCost(ops=40, op_numbers=50_000, leaf_numbers=50_000, multiply_adds=40_000_000, leaves=12)
    assert c.numbers < cost.MAX_RECORDED_NUMBERS
    with pytest.raises(PresetError, match=r"too much work for one request: .* work units; the budget is 200,000,000"):
        cost.check("custom", c, {"batch": 64})
    cost.check("custom", cost.NetworkCost(ops=40, op_numbers=50_000, leaf_numbers=50_000, multiply_adds=4_000_000,
                                          leaves=12), {"batch": 64})


def test_the_gradient_check_of_a_deep_network_visits_a_few_leaves_not_all():
    """It grew with the square of the layer count (every leaf, a full forward per coordinate)."""
    net = build("custom", layers=", ".join(["linear 3"] * 40), batch=2, features=3)
    table = analysis.gradient_check(net, coords=3, max_leaves=cost.MAX_CHECKED_LEAVES)
    leaves = list(net.leaves())
    checked = list(dict.fromkeys(r.leaf for r in table.rows))
    assert len(checked) == cost.MAX_CHECKED_LEAVES and checked[0] == leaves[0] and checked[-1] == leaves[-1]
    assert max(r.abs_error for r in table.rows) < 1e-6


@pytest.mark.parametrize("option, text", [("sentence", "good " * 2000), ("layers", "relu, " * 400 + "linear 2")])
def test_text_options_beyond_their_limit_are_refused_before_they_are_read(option, text):
    key = "sentiment" if option == "sentence" else "custom"
    with pytest.raises(PresetError, match="more than the limit of"):
        explore(key, {option: text})


def test_a_summary_says_what_the_page_shows():
    a = np.arange(-300.0, 300.0).reshape(20, 30)
    s = Summary.of(a)
    assert s.shape == (20, 30) and s.size == 600 and s.nbytes == a.nbytes
    assert analysis.look(s).stats == analysis.look(a).stats and analysis.look(s).matrix is None
    assert analysis.magnitude(s) == 300.0
    from explorer.network_explorer.recording import is_zero, same
    assert same(s, Summary.of(a.copy())) and not same(s, Summary.of(a + 1)) and not is_zero(s)
    assert is_zero(Summary.of(np.zeros(500)))


def test_the_recording_and_the_gradient_check_stop_at_the_requests_deadline():
    """The deadline is checked where the Network explorer works (recording copies, finite differences),
    not only inside a typed program's ops: such requests ran 16-24 s unchecked."""
    import time

    from explorer.explain import ExpressionError, deadline
    net = build("mlp", batch=8, hidden=8, depth=2)
    for work in (lambda: record(net), lambda: analysis.gradient_check(net, coords=2)):
        with deadline(0.0):
            time.sleep(0.001)
            with pytest.raises(ExpressionError, match="more than the 0 s of computing"):
                work()


def test_the_node_inspector_shows_only_what_the_walk_has_computed_by_the_step():
    """No spoilers: at step 1 nothing but the leaves' values; a fan-out node's adjoint is its running sum of the
    contributions received so far (k of n), the final adjoint only once the last one arrived."""
    from explorer.network_explorer.explore import held_at
    from explorer.network_explorer.frames import frame_span
    from explorer.network_explorer.tables import fan_out_rows
    ex = explore("sentiment", {"sentence": "a good good movie"})
    rec = ex.rec
    fan = next(c.target for s in rec.backward for c in s.contributions if c.expected > 1)
    first_op = rec.forward_order[0]
    start = held_at(ex, first_op, 0)
    assert start.value is None and start.adjoint is None
    assert all(held_at(ex, n.id, 0).value is not None for n in rec.nodes if n.kind != "op")
    assert held_at(ex, fan, 0).adjoint is None and held_at(ex, fan, 1).adjoint is None
    parts = rec.contributions_to(fan)
    seen = []
    for frame in range(ex.n_frames):
        phase, _s, stop = frame_span(rec, frame, *ex.per_frame)
        h = held_at(ex, fan, frame)
        if phase != "backward":
            continue
        arrived = [c for c in parts if c.step <= stop - 1]
        assert h.arrived == len(arrived)
        if not arrived:
            assert h.adjoint is None
        else:
            np.testing.assert_array_equal(h.adjoint, arrived[-1].total)
            assert ("final" in h.adjoint_note) == (len(arrived) == len(parts))
            rows = fan_out_rows(rec, fan, h.arrived)
            assert len(rows) == len(arrived) + 1
        seen.append(h.arrived)
    assert seen[0] == 0 and seen[-1] == len(parts) and sorted(seen) == seen
    done = held_at(ex, fan, ex.n_frames - 1)
    np.testing.assert_array_equal(done.adjoint, rec.node(fan).adjoint)


def _present_size():
    """The graph's size on the page in presentation mode (app/pages/10_Network_explorer.py): its column and 660 px
    of height, laid out smaller by the growth that brings its text to the small projector's floor."""
    from explorer.kit.figures import floor_growth, graph_scale
    from explorer.kit.presentation import PRESENTING, small_screen_floor_px
    from explorer.kit.widgets import graph_px
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, VIEW_WIDTH
    grow = floor_growth(PRESENTING, small_screen_floor_px())
    return {"width": int(graph_px(PRESENTING, VIEW_WIDTH, PRESENT_GRAPH_SHARE) / grow),
            "max_height": int(660 / graph_scale(PRESENTING) / grow)}


@pytest.mark.parametrize("key", ["hw2", "mlp", "custom"])
def test_a_linear_step_shows_the_node_and_its_three_inputs_whole_on_a_projector(key):
    """A Linear is one node with three inputs (x, W, b): at its backward step in presentation mode's op view the
    window holds the node and every input whole (HW2's second Linear cut its input, the dropout, blank)."""
    ex = explore(key, {})
    size = _present_size()
    steps = [f for f in range(ex.n_frames) if (m := moment(ex, f)).phase == "backward"
             and ex.rec.node(m.node).op == "linear"]
    assert steps
    for f in steps:
        node = moment(ex, f).node
        fig = ex.figure("op", f, animate=False, whole_text_only=True, **size)
        if not fig["layout"]["meta"]["window"]:
            continue
        nodes, _, _ = _window_nodes(ex, fig, size)
        whole = {i for i, w, _ in nodes if w}
        cut = [ex.rec.node(i).label for i in [node, *ex.rec.node(node).parents] if i not in whole]
        assert not cut, (key, f, cut)


def _window_nodes(ex, fig, size):
    """(node id, whole inside the window, its text lines) for every node of a one-frame windowed figure."""
    (x0, x1), (y0, y1) = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    drawing = ex.drawing("op", **size)
    p, ids = drawing.placement, drawing.node_ids
    at = {(round(p.centers[i][0], 1)): i for i in ids}
    lines: dict[int, list[str]] = {i: [] for i in ids}
    for tr in fig["data"]:
        if tr.get("mode") != "text" or tr.get("name") == "edge label":
            continue
        for x, y, t in zip(tr["x"], tr["y"], tr["text"]):
            i = min(ids, key=lambda j: abs(p.centers[j][0] - x) + abs(p.centers[j][1] - y) * 0.01)
            lines[i].append(t)
    out = []
    for i in ids:
        (cx, cy), (w, h) = p.centers[i], p.sizes[i]
        whole = x0 <= cx - w / 2 and cx + w / 2 <= x1 and y0 <= cy - h / 2 and cy + h / 2 <= y1
        out.append((i, whole, lines[i]))
    return out, (x0, x1, y0, y1), p


def test_a_window_that_follows_the_step_labels_whole_boxes_only():
    """Presentation mode's op view is too big to shrink legibly, so it shows a window that follows the step. A
    node is labelled in full or not at all: every box wholly inside the window carries all its lines, a box the
    window cuts carries none (a box reading "scalar / adjoint ✓" without its name was the defect); the window's
    top and bottom edges cut no box (it shows whole ranks)."""
    ex = explore("mlp", {})
    size = _present_size()
    outside_any = False
    for frame in (0, 5, 20, 30, 40, ex.n_frames - 1):
        fig = ex.figure("op", frame, animate=False, whole_text_only=True, **size)
        assert fig["layout"]["meta"]["window"]
        nodes, (x0, x1, y0, y1), p = _window_nodes(ex, fig, size)
        for i, whole, lines in nodes:
            name = ex.rec.node(i).label
            if whole:
                assert lines and lines[0], (frame, name, lines)       # its head line (the name) is there
            else:
                assert not any(lines), (frame, name, lines)          # no line of a cut box
                outside_any = True
            cy, h = p.centers[i][1], p.sizes[i][1]
            assert not (cy - h / 2 < y0 < cy + h / 2 or cy - h / 2 < y1 < cy + h / 2), (frame, name, "rank cut")
    assert outside_any   # the window shows part of the graph: the check above had cut/outside boxes to check
    # the figure keeps its height whatever the window gave back (the page under it does not jump between steps)
    heights = {ex.figure("op", k, animate=False, whole_text_only=True, **size)["layout"]["height"] for k in (0, 20, 30)}
    assert len(heights) == 1
    # elsewhere (a laptop, where the graph is panned) the cut text stays, to pan to
    kept = ex.figure("op", 5, animate=False, **size)
    assert sum(1 for tr in kept["data"] if tr.get("mode") == "text" for t in tr["text"] if not t) < \
        sum(1 for tr in ex.figure("op", 5, animate=False, whole_text_only=True, **size)["data"]
            if tr.get("mode") == "text" for t in tr["text"] if not t)


@pytest.mark.parametrize("present", [True, False], ids=["projector", "laptop"])
def test_at_step_1_the_window_shows_the_inputs(present):
    """Step 1 highlights every leaf, more than one window holds: the window shows where the forward pass starts
    (the data x, the first layer's weight and the first op), not the middle of the graph."""
    ex = explore("mlp", {})
    size = _present_size() if present else {}
    fig = ex.figure("op", 0, animate=False, whole_text_only=True, **size)
    assert fig["layout"]["meta"]["window"]
    nodes, *_ = _window_nodes(ex, fig, size or {"width": None, "max_height": None})
    whole = {ex.rec.node(i).label for i, w, _ in nodes if w}
    first_op = ex.rec.node(ex.rec.forward_order[0]).label
    assert {"x", "fc1.weight", first_op} <= whole, whole
    assert ex.rec.node(ex.rec.loss_node).label not in whole


def test_auto_opens_the_whole_network_on_a_projector():
    """"auto" opens the layer view on a projector when the op view would need a window there: the whole network, or
    (at the small projector's text floor the MLP's layer view needs a window too) the most of it, every layer box
    whole; a network whose op view fits keeps it, and so does a laptop."""
    size = _present_size()
    mlp = explore("mlp", {})
    op, layer = mlp.drawing("op", **size), mlp.drawing("layer", **size)
    assert op.viewport and op.placement.height > layer.placement.height
    assert mlp.level_for(**size) == "layer" and mlp.level_for() == "op"
    logreg = explore("logreg", {})
    assert not logreg.drawing("op", **size).viewport and logreg.level_for(**size) == logreg.default_level


def test_every_kept_tensor_is_read_or_says_why_not():
    """The memory table and its caption agree: a kept tensor no VJP read says which op kept it for which gradient
    (one of that op's inputs that takes none); the caption counts them instead of claiming every one is read."""
    from explorer.network_explorer.tables import memory_caption, memory_rows
    for key in ("mlp", "hw2", "sentiment"):
        ex = explore(key, {})
        rows = memory_rows(ex.memory)
        unread = [r for r in ex.memory.rows if not r.read_by]
        for r, row in zip(ex.memory.rows, rows):
            cell = row["read by the VJP of"]
            if r.read_by:
                assert cell == ", ".join(r.read_by)
                continue
            assert cell.startswith("none: kept by ") and r.kept_by and r.kept_by[0] in cell, cell
            op = ex.rec.node_by_label(r.kept_by[0])
            others = [ex.rec.node(q) for q in op.parents if ex.rec.node(q).label != r.label]
            assert any(o.label in cell and not o.requires_grad for o in others), cell
        caption = memory_caption(ex.memory)
        assert "keeps only what its VJP reads" not in caption
        assert (f"{len(unread)} of the {len(rows)}" in caption) if unread else ("every kept tensor was read" in caption)
    # the check can fail: a report with an unread row gets the count, one without gets the other sentence
    rep = analysis.MemoryReport([analysis.MemoryRow("t", "op", (2,), 16, [], ["mul#1"], "kept by mul#1 for c")])
    assert "1 of the 1 was kept but not read" in memory_caption(rep)
    assert "every kept tensor was read" in memory_caption(analysis.MemoryReport(
        [analysis.MemoryRow("t", "op", (2,), 16, ["mul#1"], ["mul#1"])]))


def test_the_memory_sweeps_legend_stays_off_the_axis():
    """The legend sits inside the plot's top-left corner (under the plot it covered the x tick labels)."""
    from explorer.network_explorer.explore import sweep_figure
    ex = explore("mlp", {})
    for opt, rows in ex.sweeps.items():
        for font in (13, 20):
            lg = sweep_figure(rows, opt, font=font).layout.legend
            assert 0 <= lg.x <= 0.2 and 0.8 <= lg.y <= 1 and lg.yanchor == "top"
            # and the corner is free: the rising line starts in the bottom-left
            ys = [r["bytes kept"] for r in rows]
            assert ys[0] < 0.5 * max(ys)


def test_layer_view_shows_where_the_input_x_enters():
    """The layer view draws x as its own box feeding the first layer (it was hidden inside Linear 1)."""
    from explorer.network_explorer.frames import build_view

    rec = record(build("mlp"))
    layer = build_view(rec, "layer")
    x = next(n for n in layer.graph.nodes if n.name == "x")
    assert x.kind != "group"
    first = next(n for n in layer.graph.nodes if n.kind == "group" and n.group == "Linear 1")
    assert any(e.src == x.id and e.dst == first.id for e in layer.graph.edges)
    slot = layer.frames.node_ids.index(x.id)
    assert layer.frames.frames[0].node_text[slot] == "4×3"     # its shape from step 1: the data is there


def test_data_input_is_the_x_leaf():
    from explorer.network_explorer.explore import data_input

    rec = record(build("mlp"))
    x = data_input(rec)
    assert x is not None and rec.node(x).label == "x" and rec.node(x).shape == (4, 3)


def test_a_long_heatmap_title_wraps_and_the_figure_grows_by_its_lines():
    from explorer.network_explorer.explore import heatmap, title_chars, title_lines
    assert title_lines("adjoint ādd#21 (held now) (4, 1) · ±0.25", 20) == ["adjoint ādd#21 (held", "now) (4, 1) · ±0.25"]
    assert title_lines("value (4, 1) · ±1.2", None) == ["value (4, 1) · ±1.2"]
    assert all(len(line) <= 12 for line in title_lines("a bb ccc dddd eeeee ffffff", 12))
    value = np.arange(4.0).reshape(4, 1)
    one = heatmap(value, "value (4, 1) · ±3", font=20, chars=title_chars(300, 20))
    two = heatmap(value, "adjoint ādd#21 (held now) (4, 1) · ±3", font=20, chars=title_chars(300, 20))
    assert one.layout.title.text.count("<br>") == 0 and two.layout.title.text.count("<br>") == 1
    assert two.layout.height - one.layout.height == two.layout.margin.t - one.layout.margin.t > 0
    level = heatmap(value, "value (4, 1) · ±3", font=20, chars=title_chars(300, 20), title_rows=2)
    assert (level.layout.margin.t, level.layout.height) == (two.layout.margin.t, two.layout.height)   # side by side


def test_the_layer_views_backward_edges_carry_their_numbers_on_a_projector():
    """A backward edge drawn as sent (in the adjoint's colour) carries the contribution it sent: at step 30 of the
    lecture's MLP in the layer view, cross-entropy's edge to Linear 2 had none (layer boxes got no labels at all)."""
    from explorer.kit.figures import graph_scale
    from explorer.kit.presentation import PRESENTING
    from explorer.kit.widgets import graph_px
    from explorer.network_explorer.explore import explore
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, VIEW_WIDTH
    ex = explore("mlp")
    size = {"width": graph_px(PRESENTING, VIEW_WIDTH, PRESENT_GRAPH_SHARE), "max_height": int(640 / graph_scale(PRESENTING)),
            "whole_text_only": True}
    for frame in range(27, 34):   # steps 28-34: one contribution sent at a time, down the layers' chain
        fig = ex.backward_figure("layer", frame, **size)
        sent = sorted(t for t in ex.backward["layer"].frames[frame].edge_text if t)
        shown = sorted(t for d in fig["data"] if d.get("name") == "edge label" for t in d["text"] if t)
        assert sent and shown == sent, (frame + 1, sent, shown)


@pytest.mark.parametrize("key", ["mlp", "attention", "residual", "custom"])
@pytest.mark.parametrize("level, legend", [("layer", False), ("layer", True), ("op", True)])
def test_every_backward_edge_in_view_carries_its_number_beside_it_on_a_projector(key, level, legend):
    """Every contribution sent along a backward edge the projector shows is written beside that edge: the middle
    edge of a three-way fan had no room for its number (the MLP's layer view, steps 35-42: 5 of 7 labelled), and the
    Every-op view dropped most of them. Each label is whole, on no node, on no other label, crossed by no edge and
    nearer its own edge than any other (picture_checks)."""
    from explorer.kit.figures import graph_scale
    from explorer.kit.picture_checks import check_figure
    from explorer.kit.plotly_figure import barred_text
    import math
    from explorer.kit.plotly_figure import CHAR_W, EDGE_FONT
    from explorer.kit.presentation import PRESENTING
    from explorer.kit.widgets import graph_px
    from explorer.network_explorer.explore import explore
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, PRESENT_LEGEND_PX, VIEW_WIDTH
    ex = explore(key)
    # the page's height for the graph, less the legend's line over it (the page draws the legend there)
    width = graph_px(PRESENTING, VIEW_WIDTH, PRESENT_GRAPH_SHARE)
    height = int(640 / graph_scale(PRESENTING)) - (int(PRESENT_LEGEND_PX / graph_scale(PRESENTING)) if legend else 0)
    ex.backward_figure(level, 0, width=width, max_height=height)
    drawing = ex.drawings[("backward", level, width, height)]
    frames = ex.backward[level].frames
    p, labelled = drawing.placement, 0
    ends = [(e.src, e.dst) for e in p.edges]
    spots = [at or (math.inf, math.inf) for at in drawing.label_at]

    def half(text: str) -> float:   # a label's half width, as the renderer measures it
        return len(text) * CHAR_W * EDGE_FONT / 2
    for frame in range(len(frames)):
        fig = ex.backward_figure(level, frame, width=width, max_height=height, whole_text_only=True)
        (x0, x1), (y0, y1) = (sorted(fig["layout"][a]["range"]) for a in ("xaxis", "yaxis"))
        lab = next(t for t in fig["data"] if t.get("name") == "edge label")
        # customdata: a label's edge in the "edges" trace, which leaves out the edges to nodes the window does not show
        left_out = set(fig["layout"]["meta"].get("edges_left_out", []))
        drawn = [k for k in range(len(ends)) if k not in left_out]
        shown = {drawn[j]: barred_text(t) for j, t in zip(lab["customdata"], lab["text"]) if t}


        def whole(i: int) -> bool:   # the node's box inside the window the projector shows
            (cx, cy), (w, h) = p.centers[i], p.sizes[i]
            return x0 <= cx - w / 2 and cx + w / 2 <= x1 and y0 <= cy - h / 2 and cy + h / 2 <= y1
        # shown whole: both its nodes and the middle of its label's spot (a window that follows the step cuts a
        # label at its edge: that one is left out, as a cut node's text is)
        in_view = {k: t for k, t in enumerate(frames[frame].edge_text) if t and whole(ends[k][0]) and whole(ends[k][1])
                   and x0 + half(t) <= spots[k][0] <= x1 - half(t) and y0 + 10 <= spots[k][1] <= y1 - 10}
        missing = {k: t for k, t in in_view.items() if shown.get(k) != t}
        assert not missing, (key, level, frame + 1, missing)
        labelled += len(in_view)
        rep = check_figure(fig)
        assert rep.ok, (key, level, frame + 1, rep.summary(), rep.problems)
    assert labelled >= 4 * len([f for f in frames if any(f.edge_text)]) // 2


def test_a_heatmaps_wrapped_title_stays_above_its_cells():
    """Plotly sets a title's first line in the middle of the top margin and the next ones under it: the margin
    holds every line above the cells (the adjoint's third line "±0.25" lay on the cells at step 30 of the MLP on
    a projector), for the heatmap's own lines and for the rows left to level it with its neighbour."""
    from explorer.network_explorer.explore import heatmap, title_lines
    value = np.arange(4.0).reshape(4, 1)
    for title, chars, rows in (("adjoint (held now) (4, 1) · ±0.25", 14, 1), ("value (4, 1) · ±1.2", 14, 3),
                               ("x", None, 1)):
        font = 23
        fig = heatmap(value, title, font=font, chars=chars, title_rows=rows).to_dict()
        n = max(len(title_lines(title, chars)), rows)
        top = fig["layout"]["margin"]["t"]
        assert top / 2 >= (n - 1) * 1.3 * font + 0.6 * font, (title, n, top)


def _projector_size() -> dict:
    """The graph's size on the page in presentation mode (its width and height laid out for the small projector's
    text floor, as app/pages/10_Network_explorer.py computes them)."""
    from explorer.kit.figures import floor_growth, graph_scale
    from explorer.kit.presentation import PRESENTING, small_screen_floor_px
    from explorer.kit.widgets import graph_px
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, VIEW_WIDTH
    grow = floor_growth(PRESENTING, small_screen_floor_px())
    return {"width": int(graph_px(PRESENTING, VIEW_WIDTH, PRESENT_GRAPH_SHARE) / grow),
            "max_height": int(660 / graph_scale(PRESENTING) / grow), "whole_text_only": True}


def _edge_points(fig: dict) -> list[tuple[str, float, float]]:
    """Every point of every edge line and arrowhead drawn in a graph figure (static, sent and this step's)."""
    from explorer.kit.plotly_figure import HOT
    out = []
    for tr in fig["data"]:
        name = tr.get("name") or ("this step" if tr.get("line", {}).get("color") == HOT else "")
        if name in ("edges", "arrowheads", "sent edges", "sent arrowheads", "this step"):
            out += [(name, x, y) for x, y in zip(tr["x"], tr["y"]) if x is not None and y is not None]
    return out


@pytest.mark.parametrize("key, level", [("mlp", "layer"), ("mlp", "op"), ("sentiment", "layer")])
def test_a_projectors_window_draws_no_edge_toward_a_node_it_does_not_show(key, level):
    """Step 1 of the MLP's layer view on a projector: the window shows the graph's inputs, and Linear 2's edge to the
    cross-entropy box above the window was drawn as a stub toward nothing (the done step of the op view: an arrow
    into nothing under reshape#29). Every edge the forward and backward graphs draw runs between the ranks the
    window shows."""
    ex = explore(key)
    size = _projector_size()
    windowed = 0
    for frame in range(ex.n_frames):
        for fig in (ex.figure(level, frame, animate=False, **size), ex.backward_figure(level, frame, **size)):
            if not fig["layout"]["meta"]["window"]:
                continue
            windowed += 1
            y0, y1 = sorted(fig["layout"]["yaxis"]["range"])
            astray = [(name, y) for name, _x, y in _edge_points(fig) if not y0 - 1 <= y <= y1 + 1]
            assert not astray, (key, level, frame + 1, (y0, y1), astray[:4])
    assert windowed   # the check saw windows (the MLP's layer view needs one on a projector)


def test_a_tensors_adjoint_is_written_as_the_norm_of_its_name():
    """The backward graph writes a tensor's adjoint as the lecture writes a tensor's size, the norm of a named
    quantity (‖x̄5‖ = 0.5), never '‖·‖ 0.5': a box headed by its norm, ‖x̄‖, with the number under it; a fan-out
    headed x̄, its sum in symbols, then the norm of x̄ (norms do not add: no '0.7 + 0.14 → 0.79'); a sum still
    waiting for contributions 'so far'; a one-element tensor headed x̄ with its value. An edge carries its
    contribution's value or norm (the legend says so)."""
    from explorer.explain.graph import bar
    from explorer.kit.backward_view import legend_html
    from explorer.kit.labels import num
    from explorer.network_explorer.backward import NORM_DIGITS, backward_frames
    from explorer.network_explorer.explore import SENT_LEGEND, explore
    everything, normed = [], 0
    for key, level in (("mlp", "layer"), ("mlp", "op"), ("residual", "op"), ("logreg", "op"), ("hw2", "layer")):
        ex = explore(key)
        v = ex.views[level]
        bfs = backward_frames(ex.rec, v)
        names = {n.id: n.name for n in v.graph.nodes}
        for f in bfs.frames:
            everything += [t for t in f.node_text + (f.node_adjoint or []) + f.edge_text if t]
        last = bfs.frames[-1]
        for i, nid in enumerate(bfs.node_ids):
            target = nid if level == "op" else next(
                (layer.output for layer in ex.rec.layers if layer.name == names[nid]), nid)
            parts = ex.rec.contributions_to(target)
            if not parts or nid == ex.rec.loss_node or names[nid] == ex.rec.layers[-1].name:
                continue
            total = parts[-1].total
            size = int(np.prod(analysis.look(total).shape))
            norm = num(analysis.look(total).stats["norm"], NORM_DIGITS)
            head, text, adjoint = bfs.heads[i], last.node_text[i], last.node_adjoint[i]
            if size == 1:
                assert head == bar(names[nid]) and text.endswith(f"= {num(np.ravel(total)[0], NORM_DIGITS)}"), (key, head, text)
            elif "∂" in text:   # a fan-out: x̄ = ā·∂a/∂x + …, then ‖x̄‖ = …
                assert head == bar(names[nid]) and adjoint == f"‖{head}‖ = {norm}", (key, level, head, adjoint)
            else:
                assert head == f"‖{bar(names[nid])}‖" and text == f"= {norm}", (key, level, head, text)
                normed += 1
    assert normed >= 10
    assert not [t for t in everything if "·‖" in t or "‖·" in t or "→" in t]
    residual = explore("residual")
    bfs = backward_frames(residual.rec, residual.views["op"])
    x = bfs.node_ids.index(next(n.id for n in residual.rec.nodes if n.label == "x"))
    waiting = [f.node_adjoint[x] for f in bfs.frames if "(1 of 2)" in f.node_text[x]]
    assert waiting and all(t.startswith(f"‖{bar('x')}‖ = ") and t.endswith(" so far") for t in waiting), waiting
    assert "its value or norm on its edge" in legend_html(SENT_LEGEND)


def test_a_heatmap_title_draws_a_barred_name_as_one_overline():
    """The step's adjoint heatmap (laptop layout: 'adjoint a̅d̅d̅#̅2̅1̅ (held now)') set the name's combining overlines
    in Plotly's SVG text, drawn as broken dashes through the letters; the title now overlines the name as the graphs
    do, and reads back as the same barred name."""
    from explorer.explain.graph import bar
    from explorer.kit.plotly_figure import barred_text
    from explorer.network_explorer.explore import heatmap
    title = f"adjoint {bar('add#21')} (held now) (4, 1) · ±0.25"
    fig = heatmap(np.arange(4.0).reshape(4, 1), title, font=16).to_dict()
    text = fig["layout"]["title"]["text"]
    assert "\u0305" not in text and 'text-decoration:overline">add#21</span>' in text
    assert barred_text(text) == title


@pytest.mark.parametrize("shape", [(4,), (1, 2), (2, 3)])
def test_a_compact_heatmap_keeps_room_for_its_column_numbers(shape):
    """A one-row heatmap in the projector's step panel (step 20 of the MLP: the value of shape (4)) is 128 px tall;
    its column numbers were left to Plotly's automargin, which had no room to give, and were cut in half at the
    figure's bottom. The bottom margin now holds them, and the cells keep their 1.6 lines a row."""
    from explorer.network_explorer.explore import compact_heatmap_height, heatmap
    font = 23
    value = np.arange(float(np.prod(shape))).reshape(shape)
    height = compact_heatmap_height(value, font)
    fig = heatmap(value, "value", font=font, height=height, narrow=True).to_dict()
    m, rows = fig["layout"]["margin"], analysis.look(value).matrix.shape[0]
    assert m["b"] >= 1.8 * font, m
    assert fig["layout"]["height"] - m["t"] - m["b"] >= rows * 1.6 * font - 1, (fig["layout"]["height"], m)


def test_a_sent_contribution_says_how_far_its_targets_sum_has_got():
    """'→ sent to log (its only consumer)' read as if log consumed the sender; the line is about the target's sum."""
    from explorer.network_explorer.explore import sent_status
    assert sent_status({"received": 2, "expected": 3}) == "2 of 3 received"
    assert sent_status({"received": 1, "expected": 1}) == "1 of 1 received"


def _window_boxes(ex, level: str, frame: int, size: dict, backward: bool):
    """(figure, frame of its frame set, placement, window as (x0, x1, y0, y1)) of a projector's still graph."""
    if backward:   # the page gives the backward graph's legend a line over it: the graph is that much shorter
        from explorer.kit.figures import floor_growth, graph_scale
        from explorer.kit.presentation import PRESENTING, small_screen_floor_px
        from explorer.network_explorer.frames import PRESENT_LEGEND_PX
        grow = floor_growth(PRESENTING, small_screen_floor_px())
        size = {**size, "max_height": size["max_height"] - int(PRESENT_LEGEND_PX / graph_scale(PRESENTING) / grow)}
    w, h = size["width"], size["max_height"]
    if backward:
        fig = ex.backward_figure(level, frame, **size)
        f = ex.backward[level].frames[frame]
        d = ex.drawings[("backward", level, w, h)]
    else:
        fig = ex.figure(level, frame, animate=False, **size)
        f = ex.views[level].frames.frames[frame]
        d = ex.drawing(level, w, h)
    x0, x1 = sorted(fig["layout"]["xaxis"]["range"])
    y0, y1 = sorted(fig["layout"]["yaxis"]["range"])
    return fig, f, d.placement, (x0, x1, y0, y1)


def _whole(p, nid: int, window) -> bool:
    (cx, cy), (bw, bh) = p.centers[nid], p.sizes[nid]
    x0, x1, y0, y1 = window
    return x0 - 0.5 <= cx - bw / 2 and cx + bw / 2 <= x1 + 0.5 and y0 - 0.5 <= cy - bh / 2 and cy + bh / 2 <= y1 + 0.5


def _outside(p, nid: int, window) -> bool:
    (cx, cy), (bw, bh) = p.centers[nid], p.sizes[nid]
    x0, x1, y0, y1 = window
    return cx + bw / 2 <= x0 or cx - bw / 2 >= x1 or cy + bh / 2 <= y0 or cy - bh / 2 >= y1


@pytest.mark.parametrize("key, level", [("hw2", "layer"), ("hw2", "op"), ("sentiment", "layer"),
                                        ("sentiment", "op"), ("mlp", "layer")])
def test_a_projectors_window_holds_the_step_and_the_nodes_it_talks_to(key, level):
    """A lecturer's walk of HW2's network on a projector: at every step the node being worked on and every node it
    talks to at that step (the ends of the step's edges: its inputs going forward, the targets of what it sends going
    backward) are whole inside the window that the graph is drawn through, forward graph and backward graph."""
    ex = explore(key)
    size = _projector_size()
    windowed = 0
    for frame in range(1, ex.n_frames - 1):   # the inputs step highlights every leaf; the last step none
        for backward in (False, True):
            fig, f, p, window = _window_boxes(ex, level, frame, size, backward)
            if not fig["layout"]["meta"]["window"]:
                continue
            windowed += 1
            x0, x1, y0, y1 = window
            act = [n for n in f.active_nodes if n in p.centers]

            def fit(nodes) -> bool:   # whole in a window of this one's size, together
                return all(max(p.centers[n][ax] + p.sizes[n][ax] / 2 for n in nodes)
                           - min(p.centers[n][ax] - p.sizes[n][ax] / 2 for n in nodes) <= room - 8
                           for ax, room in ((0, x1 - x0), (1, y1 - y0)))
            # a partner joined by a long edge (the lecture network's loss reads a node ten ranks down) cannot be in
            # the same window: each of the others can, and is
            talking = set(act) | {n for e in f.active_edges for n in e if n in p.centers and fit(act + [n])}
            cut = sorted(n for n in talking if not _whole(p, n, window))
            assert not cut, (key, level, frame + 1, "backward" if backward else "forward", cut)
    assert windowed


@pytest.mark.parametrize("key, level", [("sentiment", "layer"), ("sentiment", "op"), ("hw2", "layer"),
                                        ("hw2", "op"), ("mlp", "layer"), ("mlp", "op")])
def test_a_projectors_window_draws_no_node_cut_off_from_every_edge(key, level):
    """Step 1 of the lecture's sentiment network on a projector: the window showed fc2.weight and fc2.bias whole with
    no edge at all (their consumer, Linear 2, lay above the window, and an edge toward a node the window does not
    show is not drawn): two boxes that seemed to belong to nothing. A box the window shows whole keeps at least one
    of its edges (its other end at least partly in the window): in the layer view (what a projector opens) at every
    step, forward and backward; in the op view at the first step (further on, a box between two long edges can still
    stand alone in the middle of the window)."""
    ex = explore(key)
    size = _projector_size()
    for frame in range(ex.n_frames if level == "layer" else 1):
        for backward in (False, True):
            fig, f, p, window = _window_boxes(ex, level, frame, size, backward)
            if not fig["layout"]["meta"]["window"]:
                continue
            lonely = []
            for nid in p.centers:
                ends = [e.dst if e.src == nid else e.src for e in p.edges if nid in (e.src, e.dst)]
                if ends and _whole(p, nid, window) and all(_outside(p, o, window) for o in ends):
                    lonely.append(nid)
            assert not lonely, (key, level, frame + 1, "backward" if backward else "forward", lonely)


def test_a_heatmap_says_what_its_colours_mean_under_its_cells_and_its_title_fits_one_line():
    """A lecturer's walk: the step panel's titles ('adjoint (held now) (1) · ±0.19') wrapped to three lines on a
    projector, and the '±1.2' in them was never explained. The title says what the tensor is and its shape, one line
    in the panel beside the graph (half of it when value and adjoint stand side by side); under the cells a line says
    the colour range: 'colour −1.2…+1.2'."""
    from explorer.kit.presentation import small_screen_floor_px
    from explorer.kit.widgets import PRESENT_PAGE_PX
    from explorer.network_explorer.explore import colour_range, heatmap, title_chars, title_lines
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE
    font = small_screen_floor_px()
    panel = title_chars(PRESENT_PAGE_PX * (1 - PRESENT_GRAPH_SHARE) - 40, font)
    half = title_chars(PRESENT_PAGE_PX * (1 - PRESENT_GRAPH_SHARE) / 2 - 40, font)
    # the page's titles (app/pages/10_Network_explorer.py: stacked, then side by side) for HW2's shapes
    for shape in ("(3, 5)", "(5, 50)", "(3, 1)", "(1)", "(1, 5)"):
        assert len(title_lines(f"value {shape}", panel)) == 1
        assert len(title_lines(f"adjoint (held now) {shape}", panel)) == 1
    for shape in ("(3, 1)", "(1)", "(5, 2)"):   # side by side: at most two columns (explore.side_by_side)
        assert len(title_lines(f"value {shape}", half)) == 1 and len(title_lines(f"adjoint {shape}", half)) == 1
    assert colour_range(1.2) == "colour −1.2…+1.2"
    value = np.array([[0.5, -1.2], [0.1, 0.0]])
    fig = heatmap(value, "value (2, 2)", font=font, chars=panel).to_dict()
    assert "±" not in fig["layout"]["title"]["text"] and "<br>" not in fig["layout"]["title"]["text"]
    (note,) = [a for a in fig["layout"]["annotations"] if a.get("name") == "colour range"]
    assert note["text"] == "colour −1.2…+1.2" and note["yanchor"] == "top" and note["y"] == 0
    assert len(title_lines(note["text"], panel)) == 1 and len(title_lines(note["text"], half)) <= 2
    # its lines have a margin of their own under the column numbers
    assert fig["layout"]["margin"]["b"] >= 1.8 * font + 1.3 * font


def test_a_projectors_network_box_shows_each_name_whole():
    """The network box on a projector cut 'Lecture sentiment network: Linear → ReLU → Linear per word…' at its edge;
    it shows each preset's short name, short enough for the box (the full title heads the notes under the graph)."""
    from explorer.network_explorer.presets import SHORT_NAME_CHARS
    long = [p.title for p in PRESETS.values() if len(p.title) > SHORT_NAME_CHARS]
    assert long   # the box would cut these
    for p in PRESETS.values():
        assert len(p.name) <= SHORT_NAME_CHARS, p
    assert PRESETS["sentiment"].name == "Lecture sentiment network" and PRESETS["hw2"].name == "HW2 network"


def test_a_step_past_the_end_in_a_projectors_link_is_clamped_quietly():
    """?step=999 on a projector: the warning's box ('link parameter step ignored …') stood over the stepper and pushed
    the graph below the first screen. Presenting, the step goes to the last one without a word (the header says
    'Step 26 of 26'); on a laptop the warning stays."""
    from pathlib import Path
    from streamlit.testing.v1 import AppTest
    page = str(Path(__file__).resolve().parents[1] / "app" / "pages" / "10_Network_explorer.py")
    last = explore("hw2").n_frames
    for present, warned in (("1", False), ("0", True)):
        at = AppTest.from_file(page, default_timeout=120)
        at.query_params.update({"net": "hw2", "step": "999", "present": present})
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(w for w in at.warning if "'step' ignored" in w.value.replace("\\", "")) == warned, present
        assert at.slider[0].value == last
        assert any(f"Step {last} of {last}" in m.value for m in at.markdown)


def test_a_projector_draws_the_whole_network_at_step_one_at_the_text_floor():
    """A lecturer's walk: on a projector HW2's step 1 showed 5 of its 11 layer boxes and the sentiment network's the
    embedding and Linear 1 only: the class never saw the whole network. Step 1 is drawn whole, at scale 1 (no text
    under the floor), within the page's forward-graph budget."""
    from explorer.kit.figures import graph_scale
    from explorer.kit.plotly_figure import FONT
    from explorer.kit.presentation import PRESENTING, small_screen_floor_px
    from explorer.kit.widgets import graph_px
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE, VIEW_WIDTH
    g = small_screen_floor_px() / (FONT * graph_scale(PRESENTING))
    width = int(graph_px(PRESENTING, VIEW_WIDTH, PRESENT_GRAPH_SHARE) / g)
    height = int(660 / graph_scale(PRESENTING) / g)   # the page's PRESENT_NET_GRAPH_PX
    for key in ("hw2", "sentiment"):
        ex = explore(key, {})
        fig = ex.whole_figure("layer", 0, width, height)
        assert fig is not None, key
        meta = fig["layout"]["meta"]
        assert meta["scale"] >= 0.999 and not meta["window"], meta
        drawn = " ".join(t for tr in fig["data"] for t in (tr.get("text") or []) if isinstance(t, str))
        for node in ex.views["layer"].frames.heads:
            assert node in drawn, (key, node)
        assert fig["layout"]["height"] <= 660 / graph_scale(PRESENTING) / g + 80   # the budget, with its margins


def test_vjp_formulas_break_only_between_whole_pieces():
    """A lecturer's walk: 'b̄ = / Σ_rows Ȳ' and BCE's 'max(p(1 − / p)…' broke inside a formula in the step panel. The
    rule is cut at its top-level commas, a long piece once more before a top-level operator, and each piece is
    written unbreakable."""
    from explorer.network_explorer.explore import formula_html, formula_parts, formula_pieces
    rule = lambda op: formula_parts(analysis.vjp_formula(op))[0]
    assert formula_pieces(rule("linear")) == ["x̄ = Ȳ W,", "W̄ = Ȳᵀ x,", "b̄ = Σ_rows Ȳ"]
    assert formula_pieces(rule("binary_cross_entropy")) == ["p̄ = ℓ̄ ⊙ (p − y)", "/ max(p(1 − p), 1e-12)"]
    for op in ("linear", "binary_cross_entropy", "matmul", "gather", "mean", "relu", "sigmoid"):
        pieces = formula_pieces(rule(op))
        assert " ".join(pieces).replace("  ", " ") == " ".join(rule(op).split()), op
        assert all(len(p) <= 34 for p in pieces), pieces
    html = formula_html("a < b,  c")
    assert html.count("white-space: nowrap") == 2 and "&lt;" in html


def test_the_projectors_sizes_label_is_short_and_quotes_the_sentence():
    """The sizes box read 'batch size 3, hidden width 5, dropout p / 0.5' over two lines at 1366 x 768, and
    'sentence it is a good movie' unquoted."""
    from explorer.network_explorer.explore import sizes_label
    from explorer.network_explorer.presets import OPTIONS
    assert sizes_label(OPTIONS["hw2"], {}) == "batch 3 · width 5 · dropout 0.5"
    assert sizes_label(OPTIONS["sentiment"], {}) == "“it is a good movie” · width 6"
    assert all(len(sizes_label(opts, {})) <= 48 for opts in OPTIONS.values())   # a custom list cut (…) in its quotes


def test_the_backward_graph_writes_one_precision_and_bars_every_tensor_alike():
    """A lecturer's walk: HW2's fc2.bias read 0.18718 beside 0.192 (3 significant figures), and at step 20 'mean
    over words' had an overline but no norm bars, unlike every other tensor box."""
    ex = explore("hw2", {})
    texts = lambda frame: [t for tr in ex.backward_figure("layer", frame)["data"] for t in (tr.get("text") or [])
                           if isinstance(t, str) and t]
    last = texts(ex.n_frames - 1)
    assert "= 0.18718" not in last and "= 0.187" in last, last
    heads = [t for t in texts(19) if "mean over words" in t]
    assert heads and all(t.startswith("‖") and t.endswith("‖") for t in heads), heads


def test_a_heatmaps_colour_range_is_one_line_in_half_a_projectors_panel():
    """'colour: −0.72 / … +0.72' wrapped in the half-panel layout: the range is one short line, never wrapped."""
    from explorer.kit.presentation import small_screen_floor_px
    from explorer.kit.widgets import PRESENT_PAGE_PX
    from explorer.network_explorer.explore import colour_range, heatmap, title_chars
    from explorer.network_explorer.frames import PRESENT_GRAPH_SHARE
    font = small_screen_floor_px()
    half = title_chars(PRESENT_PAGE_PX * (1 - PRESENT_GRAPH_SHARE) / 2 - 40, font)
    fig = heatmap(np.array([[0.72]]), "value (1)", font=font, chars=half, narrow=True).to_dict()
    (note,) = [a for a in fig["layout"]["annotations"] if a.get("name") == "colour range"]
    assert note["text"] == colour_range(0.72) == "colour −0.72…+0.72"


def test_the_last_step_lists_every_leafs_gradient():
    """A lecturer's walk: HW2's step 26 ("every leaf holds its gradient") showed the backward graph's top half on a
    projector, the fc1 leaves missing. The step panel lists every trainable leaf's gradient."""
    from explorer.network_explorer.explore import leaf_gradients
    lines = leaf_gradients(explore("hw2", {}).rec)
    assert [line.split(".grad")[0].strip("‖") for line in lines] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert lines[-1] == "fc2.bias.grad = 0.187" and lines[0].startswith("‖fc1.weight.grad‖ = ")
