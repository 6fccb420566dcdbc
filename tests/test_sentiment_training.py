"""HW2's network (gradients by gradcheck), the trainer (learning, seeds, backends), pause/stop, threads."""
from __future__ import annotations

import math
from dataclasses import replace
import threading
import time

import numpy as np
import pytest

import engine
from engine import functional as F
from engine.tensor import Tensor, no_grad
from sentiment.data import Dataset, builtin_corpus, builtin_split
from sentiment.embeddings import GloVe, load_glove
from sentiment.model import SentimentNet, batch_tensors, vectors_tensor
from explorer.sentiment_training.runner import SessionWatch, TrainingRun
from sentiment.trainer import (BatchEnd, EpochEnd, SentimentTrainer, TrainConfig, TrainingFinished,
                               TrainingStarted, hw2_log_lines)


@pytest.fixture(scope="module")
def glove():
    try:
        return load_glove()
    except FileNotFoundError as e:
        pytest.skip(f"no GloVe vectors here: {e}")


def tiny_glove(dim=4, seed=0) -> GloVe:
    rng = np.random.default_rng(seed)
    words = ["good", "bad", "film", "great", "awful", "not"]
    return GloVe(words, rng.standard_normal((len(words), dim)), "tiny test table")


# --- the model ------------------------------------------------------------------


def test_model_shape_and_parameter_count():
    net = SentimentNet(seed=0)
    assert net.num_parameters() == 50 * 32 + 32 + 32 + 1
    assert sum(layer.n_params for layer in net.layers_summary()) == net.num_parameters()
    x = vectors_tensor(np.ones((7, 50)))
    p = net(x)
    assert p.shape == (1,) and 0 < p.item() < 1


def test_gradients_of_the_network_by_gradcheck():
    rng = np.random.default_rng(1)
    net = SentimentNet(embedding_dim=5, hidden=4, seed=3).eval()
    emb = rng.standard_normal((3, 4, 5))
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=np.float64)
    labels = np.array([1.0, 0.0, 1.0])
    params = [net.fc1.weight, net.fc1.bias, net.fc2.weight, net.fc2.bias]

    def loss_of(w1, b1, w2, b2, x):
        net.fc1.weight, net.fc1.bias, net.fc2.weight, net.fc2.bias = w1, b1, w2, b2
        loss, _ = net.loss(x, engine.tensor(mask), labels)
        return loss

    def probs_of(w1, b1, w2, b2, x):
        net.fc1.weight, net.fc1.bias, net.fc2.weight, net.fc2.bias = w1, b1, w2, b2
        return net(x, engine.tensor(mask))

    inputs = [engine.tensor(p.numpy(), requires_grad=True) for p in params]
    inputs.append(engine.tensor(emb, requires_grad=True))  # gradient reaches the word vectors too
    report = engine.gradcheck(loss_of, inputs, n_directions=3)
    assert report.ok and len(report.results) == 15
    assert engine.gradcheck(probs_of, inputs, n_directions=2).ok


def test_gradcheck_would_catch_a_wrong_gradient():
    """The same check fails when the mask is dropped from the backward only (sanity of the test)."""
    rng = np.random.default_rng(2)
    emb = engine.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    mask = engine.tensor(np.array([[1, 1, 0], [1, 0, 0]], dtype=np.float64))
    net = SentimentNet(embedding_dim=4, hidden=3, seed=0).eval()

    def leaky(x):  # forward masks, but the gradient flows through the padding like an unmasked mean
        return net.pool(x, mask) + (F.mean(x, dim=1) - F.mean(x, dim=1).detach())

    report = engine.gradcheck(leaky, [emb], raise_exception=False)
    assert not report.ok


def test_masked_mean_ignores_padding():
    rng = np.random.default_rng(0)
    net = SentimentNet(embedding_dim=6, hidden=5, seed=0).eval()
    words = rng.standard_normal((3, 6))
    alone = net(vectors_tensor(words)).item()
    padded = np.concatenate([words, np.full((4, 6), 7.0)])  # junk in the padded slots
    mask = engine.tensor([[1, 1, 1, 0, 0, 0, 0]], dtype="float64")
    assert net(vectors_tensor(padded), mask).item() == pytest.approx(alone, abs=1e-12)
    np.testing.assert_allclose(net.pool(vectors_tensor(padded), mask).numpy()[0], words.mean(0), atol=1e-12)


def test_loss_is_hw2s_sigmoid_then_bce_and_finite_when_saturated():
    net = SentimentNet(embedding_dim=3, hidden=2, seed=0).eval()
    x = vectors_tensor(np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]]))
    loss, z = net.loss(x, None, engine.tensor([1.0]))
    p = 1 / (1 + np.exp(-z.numpy()))
    assert loss.item() == pytest.approx(-np.log(p[0]), rel=1e-12)
    # saturated: sigmoid rounds to exactly 1, the fused BCE clamps log(0) at -100 (PyTorch's rule)
    big = engine.tensor([1000.0, -1000.0], requires_grad=True)
    bce = F.binary_cross_entropy(F.sigmoid(big), engine.tensor([0.0, 1.0]))
    bce.backward()
    assert bce.item() == pytest.approx(100.0) and np.all(np.isfinite(big.grad.numpy()))


def test_dropout_is_the_engine_op_seeded_by_manual_seed():
    """One seeding path: the masks come from the backend's generator (engine.manual_seed)."""
    a, b = SentimentNet(seed=5), SentimentNet(seed=5)
    x = vectors_tensor(np.random.default_rng(0).standard_normal((4, 50)))
    seen = []
    with engine.trace_ops(lambda op, *_: seen.append(op.name)):
        a(x)
    assert "dropout_mask" in seen
    engine.manual_seed(123)
    pa = [a(x).item() for _ in range(3)]
    engine.manual_seed(123)
    pb = [b(x).item() for _ in range(3)]
    engine.manual_seed(999)
    pc = [b(x).item() for _ in range(3)]
    assert pa == pb and len(set(pa)) > 1 and pc != pa  # fresh masks per call, the same for the same seed
    a.eval()
    assert a(x).item() == a(x).item()


def test_compiled_hw2_step_redraws_dropout_and_matches_eager():
    """engine.static.compile replays the dropout op: a new mask (a new loss) every step, as eager mode."""
    from sentiment.model import hw2_step
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5, 50))
    mask = (np.arange(5)[None, :] < np.array([5, 3, 2, 5, 1, 4])[:, None]).astype(np.float64)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    params = [p.numpy() for p in (lambda n: [n.fc1.weight, n.fc1.bias, n.fc2.weight, n.fc2.bias])(SentimentNet())]
    xt, mt, yt = engine.tensor(x), engine.tensor(mask), engine.tensor(y)
    runs = {}
    for compiled in (False, True):
        engine.manual_seed(11)
        step, model, _ = hw2_step(params, lr=1e-12, compiled=compiled)  # a tiny lr: losses differ by dropout only
        runs[compiled] = [step(xt, mt, yt)[0].item() for _ in range(6)]
    assert runs[True] == runs[False]
    assert len(set(runs[True])) == 6, runs[True]


def test_batch_tensors_gather_rows_and_mask():
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    emb, mask = batch_tensors(table, np.array([[2, 3, 0], [1, 0, 0]]))
    assert emb.shape == (2, 3, 3)
    np.testing.assert_array_equal(emb.numpy()[0, 1], table[3])
    np.testing.assert_array_equal(mask.numpy(), [[1, 1, 0], [1, 0, 0]])


# --- the trainer -------------------------------------------------------------------


def test_training_learns_the_builtin_corpus(glove):
    train, val = builtin_split(60)
    cfg = TrainConfig(epochs=25, batch_size=10, lr=0.01, seed=0, shuffle=True)
    trainer = SentimentTrainer(train, val, glove, cfg)
    events = list(trainer.events())
    assert isinstance(events[0], TrainingStarted) and isinstance(events[-1], TrainingFinished)
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    batches = [e for e in events if isinstance(e, BatchEnd)]
    assert len(epochs) == 25 and len(batches) == 25 * -(-len(train) // 10)
    assert events[-1].status == "completed" and events[-1].epochs_done == 25
    assert epochs[-1].train_loss < 0.5 * epochs[0].train_loss
    assert epochs[-1].train_accuracy >= 0.75  # measured on the batches, with dropout on (as HW2)
    assert events[-1].best_val_accuracy >= 0.75
    assert epochs[-1].best_val_accuracy == max(e.val_accuracy for e in epochs)
    # after training the model is the best checkpoint: its accuracy is the one the run reports
    assert trainer.checkpoint_epoch == events[-1].best_epoch
    assert trainer.evaluate() == events[-1].best_val_accuracy
    fitted = trainer.predict_encoded(trainer.encoded_train)
    assert ((fitted > 0.5) == trainer.encoded_train.labels).mean() >= 0.75
    # the trained model sorts clear sentences and reports unknown words
    assert trainer.predict_text("a wonderful , moving film").probability > 0.5
    assert trainer.predict_text("a boring , stupid film").probability < 0.5
    pred = trainer.predict_text("a zorgleflux film")
    assert pred.unknown == ["zorgleflux"] and pred.tokens == ["a", "zorgleflux", "film"]
    with pytest.raises(ValueError, match="at least one word"):
        trainer.predict_text("   ")
    lines = hw2_log_lines(epochs[-1])
    assert lines[0].startswith("Epoch 25, loss ") and "train accuracy: " in lines[0] and lines[0].endswith("%")
    assert lines[1].startswith("Validation accuracy: ") and lines[2].startswith("Best Valid accuracy: ")


def test_bag_of_words_cannot_tell_word_order(glove):
    trainer = SentimentTrainer(builtin_corpus().head(20), None, glove, TrainConfig(epochs=1))
    a = trainer.predict_text("good but boring").probability
    b = trainer.predict_text("boring but good").probability
    assert a == pytest.approx(b, abs=1e-12)


def losses_of(glove, seed, backend="numpy", epochs=2, dropout=0.5):
    data = builtin_corpus().head(40)
    cfg = TrainConfig(epochs=epochs, batch_size=10, lr=0.01, seed=seed, backend=backend, shuffle=True,
                      dropout=dropout)
    return [e.loss for e in SentimentTrainer(data, data.head(10), glove, cfg).events() if isinstance(e, BatchEnd)]


def test_seed_makes_training_reproducible(glove):
    assert losses_of(glove, 7) == losses_of(glove, 7)
    assert losses_of(glove, 7) != losses_of(glove, 8)


def test_runs_on_every_backend(glove, backend):
    # without dropout every backend computes the same numbers; with it, each draws its masks from its own
    # generator (seeded by the trainer), so only reproducibility on the same backend is promised
    ref = losses_of(glove, 3, "numpy", epochs=1, dropout=0.0)
    got = losses_of(glove, 3, backend, epochs=1, dropout=0.0)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    assert losses_of(glove, 3, backend, epochs=1) == losses_of(glove, 3, backend, epochs=1)


def run_record(glove, step, **cfg):
    """Every BatchEnd loss, every validation accuracy and the final weights of one run (step mode ``step``)."""
    tr, va = builtin_split(60)
    trainer = SentimentTrainer(tr, va, glove, TrainConfig(epochs=3, batch_size=7, seed=5, step=step, **cfg))
    events = list(trainer.events())
    assert events[-1].status == "completed", events[-1]
    return (trainer, [e.loss for e in events if isinstance(e, BatchEnd)],
            [e.val_accuracy for e in events if isinstance(e, EpochEnd)], trainer.model.state_dict(),
            trainer.embedding_table.copy())


@pytest.mark.parametrize("cfg", [dict(shuffle=True), dict(shuffle=False),
                                 dict(shuffle=True, word_dropout=0.3, train_embeddings=True, lr_schedule="cosine",
                                      weight_decay=1e-3),
                                 dict(shuffle=True, word_dropout=0.3, train_embeddings=True, sparse_embeddings=True)],
                         ids=["shuffled", "file-order", "trained-vectors", "sparse-vectors"])
def test_compiled_training_is_bit_identical_to_eager(glove, cfg):
    """The trainer replays its traced step (one trace per batch shape) by default: the same bits as eager mode,
    dropout masks, word dropout and trained word vectors included."""
    eager = run_record(glove, "eager", **cfg)
    compiled = run_record(glove, "auto", **cfg)
    assert not eager[0].compiled and compiled[0].compiled
    assert compiled[0]._step._programs  # it did replay traced programs
    assert len(set(compiled[1])) > 10 and compiled[1] == eager[1]  # every batch loss, bit for bit
    assert compiled[2] == eager[2]
    for k, v in eager[3].items():
        np.testing.assert_array_equal(compiled[3][k], v)
    np.testing.assert_array_equal(compiled[4], eager[4])


def test_row_sums_add_each_words_gradient_rows_and_skip_padding():
    from sentiment.trainer import row_sums
    rng = np.random.default_rng(0)
    ids = np.array([[5, 2, 5, 0], [2, 9, 0, 0], [7, 7, 7, 7]])
    grads = rng.standard_normal((3, 4, 2))
    rows, sums = row_sums(ids, grads)
    assert rows.tolist() == [2, 5, 7, 9]
    want = {r: sum(grads[b, l] for b in range(3) for l in range(4) if ids[b, l] == r) for r in (2, 5, 7, 9)}
    np.testing.assert_allclose(sums, [want[r] for r in (2, 5, 7, 9)], rtol=1e-15)
    rows, sums = row_sums(np.zeros((2, 3), dtype=np.int64), grads[:2, :3])
    assert rows.shape == (0,) and sums.shape == (0, 2)


def test_row_sums_of_per_sentence_rows_equal_the_padded_positions_rows():
    """Sparse mode's gradient is one row per sentence (its sum's): the same word sums, bit for bit, as the
    (B, L, D) rows of every position it stands for; a broken reading (positions' sentence wrong) fails."""
    from sentiment.trainer import row_sums
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 30, size=(64, 20))
    ids[rng.random(ids.shape) < 0.4] = 0  # padding inside and after sentences (word dropout)
    per_sentence = rng.standard_normal((64, 5))
    rows, sums = row_sums(ids, per_sentence)
    rows_full, sums_full = row_sums(ids, np.repeat(per_sentence[:, None, :], 20, axis=1))
    np.testing.assert_array_equal(rows, rows_full)
    np.testing.assert_array_equal(sums, sums_full)
    want = [per_sentence[np.nonzero(ids == r)[0]].sum(axis=0) for r in rows]
    np.testing.assert_allclose(sums, want, rtol=1e-12)
    _, wrong = row_sums(ids.T.copy().T, per_sentence[::-1].copy())
    assert not np.allclose(wrong, want)


@pytest.mark.parametrize("backend", ["numpy", "python"])
@pytest.mark.parametrize("n", [7, 200])
def test_sentence_sums_give_the_masked_pools_bits(glove, backend, n):
    """The trainer's sentence vectors (sparse steps, looks, validation) are SentimentNet.pool's numbers bit for
    bit: sums in word order without the (B, L, D) tensor, grouped by length on NumPy when there are many."""
    tr, va = builtin_split(60)
    trainer = SentimentTrainer(tr, va, glove, TrainConfig(backend=backend, train_embeddings=True,
                                                          sparse_embeddings=True))
    rng = np.random.default_rng(n)
    vocab = len(trainer.vocabulary)
    ids = rng.integers(1, vocab, size=(n, 23))
    lengths = rng.integers(1, 24, size=n)
    ids[np.arange(23)[None, :] >= lengths[:, None]] = 0
    ids = trainer._drop_words(ids) if n > 10 else ids  # padding between words too
    table = trainer._table
    vectors = rng.standard_normal((vocab, glove.dim))
    vectors[0] = 0.0  # trained-looking vectors; the padding row zero, as the trainer keeps it
    table._data = trainer.backend.array(vectors, trainer.dtype)
    with no_grad():
        want = trainer.model.pool(*batch_tensors(None, ids, table_tensor=table)).numpy()
        got = trainer._pooled(ids).numpy()
    np.testing.assert_array_equal(got, want)
    with no_grad():  # a table whose padding row is not zero: masked like the pool
        table._data = trainer.backend.array(rng.standard_normal((vocab, glove.dim)), trainer.dtype)
        np.testing.assert_array_equal(trainer._pooled(ids).numpy(),
                                      trainer.model.pool(*batch_tensors(None, ids, table_tensor=table)).numpy())


def test_sparse_word_vectors_follow_sparse_adam_and_move_only_where_a_batch_has_words(glove):
    """sparse_embeddings: the same gradient as the dense table's (its rows), applied by Adam's sparse rule."""
    tr, va = small_data()
    cfg = TrainConfig(epochs=1, batch_size=len(tr), seed=0, train_embeddings=True, sparse_embeddings=True,
                      dropout=0.0)
    sparse = SentimentTrainer(tr, va, glove, cfg)
    dense = SentimentTrainer(tr, va, glove, replace(cfg, sparse_embeddings=False))
    start = sparse.embedding_table.copy()
    idx = np.arange(len(tr))
    sparse.train_step(idx)
    dense.train_step(idx)
    used = np.unique(sparse.encoded_train.batch_ids(idx))
    used = used[used > 0]
    moved = np.abs(sparse.embedding_table - start).max(axis=1) > 0
    assert moved[used].all() and moved.sum() == len(used)
    # the dense table's gradient rows (the same step, the same dropout masks), put through SparseAdam's first
    # step: m = (1 - b1) g, v = (1 - b2) g², p -= lr sqrt(1 - b2) / (1 - b1) m / (sqrt(v) + eps)
    g = dense._table.grad.numpy()[used]
    b1, b2, lr = 0.9, 0.999, cfg.lr
    want = start[used] - lr * np.sqrt(1 - b2) / (1 - b1) * ((1 - b1) * g) / (np.sqrt((1 - b2) * g * g) + 1e-8)
    np.testing.assert_allclose(sparse.embedding_table[used], want, rtol=1e-12, atol=1e-15)
    assert not np.allclose(sparse.embedding_table[used], start[used])
    with pytest.raises(ValueError, match="sparse_embeddings"):
        TrainConfig(sparse_embeddings=True, optimizer="sgd").validate()


def test_validation_points_inside_epochs(glove):
    from sentiment.trainer import ValidationPoint, validation_interval
    tr, va = small_data()
    trainer = SentimentTrainer(tr, va, glove, TrainConfig(epochs=2, batch_size=7, eval_every=4))
    n = math.ceil(len(tr) / 7)
    events = list(trainer.events())
    points = [e for e in events if isinstance(e, ValidationPoint)]
    # every 4th step, except where an epoch ends (its own validation is there)
    want = [((s - 1) // n + 1, (s - 1) % n + 1) for s in range(4, 2 * n + 1, 4) if s % n]
    assert [(p.epoch, p.batch) for p in points] == want and len(want) >= 4
    assert points[0].position == pytest.approx(4 / n) and all(0 <= p.val_accuracy <= 1 for p in points)
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    assert points[0].elapsed <= epochs[0].elapsed and len(epochs) == 2
    assert [validation_interval(n, b) for n, b in ((67349, 64), (450, 10), (67349, 10))] == [100, 0, 700]


def test_pin_blas_threads_keeps_a_count_already_set():
    from sentiment.threads import BLAS_THREAD_VARIABLES, pin_blas_threads
    env = {"OMP_NUM_THREADS": "4"}
    pin_blas_threads(environ=env)
    assert env == {**{v: "1" for v in BLAS_THREAD_VARIABLES}, "OMP_NUM_THREADS": "4"}


def test_a_model_whose_graph_is_not_static_trains_eagerly(glove):
    class Branchy(SentimentNet):
        static_graph = False     # as a network whose forward branches on the data would declare

    class BranchyTrainer(SentimentTrainer):
        model_class = Branchy

    tr, va = builtin_split(40)
    assert SentimentTrainer(tr, va, glove, TrainConfig(epochs=1)).compiled
    trainer = BranchyTrainer(tr, va, glove, TrainConfig(epochs=1))
    assert isinstance(trainer.model, Branchy) and not trainer.compiled
    assert trainer.run().status == "completed" and trainer._step == trainer._eager_step
    assert not SentimentTrainer(tr, va, glove, TrainConfig(epochs=1, step="eager")).compiled
    assert BranchyTrainer(tr, va, glove, TrainConfig(epochs=1, step="compiled")).compiled  # asked for explicitly
    with pytest.raises(ValueError, match="step"):
        TrainConfig(step="jit").validate()


def test_config_is_validated(glove):
    data = builtin_corpus().head(10)
    for bad in [dict(epochs=0), dict(batch_size=0), dict(lr=-1.0), dict(lr=float("nan")), dict(optimizer="rmsprop"),
                dict(dropout=1.0), dict(hidden=0), dict(backend="nope")]:
        with pytest.raises(ValueError):
            SentimentTrainer(data, None, glove, TrainConfig(**bad))
    with pytest.raises(ValueError, match="empty"):
        SentimentTrainer(Dataset([], [], "empty"), None, glove, TrainConfig())


def test_sgd_trains_too(glove):
    data = builtin_corpus().head(60)
    cfg = TrainConfig(epochs=15, batch_size=10, lr=0.5, optimizer="sgd", seed=0, dropout=0.0)
    trainer = SentimentTrainer(data, None, glove, cfg)
    epochs = [e for e in trainer.events() if isinstance(e, EpochEnd)]
    assert epochs[-1].train_loss < epochs[0].train_loss and epochs[-1].val_accuracy is None


# --- pause / stop / threads -------------------------------------------------------------


def wait_for(cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def long_trainer(glove, seed=0, epochs=10_000):
    data = builtin_corpus().head(40)
    return SentimentTrainer(data, data.head(10), glove, TrainConfig(epochs=epochs, lr=0.01, seed=seed))


def test_pause_resume_stop(glove):
    run = TrainingRun(long_trainer(glove)).start()
    try:
        assert wait_for(lambda: run.snapshot().last_batch is not None)
        run.pause()
        assert wait_for(lambda: run.snapshot().status == "paused")
        time.sleep(0.2)
        seen = run.snapshot().last_batch.examples_seen
        time.sleep(0.3)
        assert run.snapshot().last_batch.examples_seen == seen  # nothing trains while paused
        run.resume()
        assert wait_for(lambda: run.snapshot().last_batch.examples_seen > seen)
        run.stop()
        assert run.join(20)
        snap = run.snapshot()
        assert snap.status == "stopped" and snap.finished.status == "stopped" and snap.done
        assert 0 < snap.progress < 1
        assert len(snap.batch_loss) == len(snap.batch_x) > 0
    finally:
        run.stop()
        run.join(20)


def test_stop_while_paused_ends_the_thread(glove):
    run = TrainingRun(long_trainer(glove)).start()
    assert wait_for(lambda: run.snapshot().last_batch is not None)
    run.pause()
    assert wait_for(lambda: run.snapshot().status == "paused")
    run.stop()
    assert run.join(20) and run.snapshot().status == "stopped"


def test_keep_alive_stops_an_abandoned_run(glove):
    alive = {"v": True}
    watch = SessionWatch(lambda: alive["v"], grace_s=0.2)
    run = TrainingRun(long_trainer(glove), keep_alive=watch, keep_alive_every_s=0.05).start()
    try:
        assert wait_for(lambda: run.snapshot().last_batch is not None)
        alive["v"] = False  # the owner's session went away
        assert run.join(20)
        assert run.snapshot().finished.status == "stopped"
    finally:
        run.stop()
        run.join(20)


def test_keep_alive_stops_an_abandoned_paused_run(glove):
    alive = {"v": True}
    watch = SessionWatch(lambda: alive["v"], grace_s=0.2)
    run = TrainingRun(long_trainer(glove), keep_alive=watch, keep_alive_every_s=0.05).start()
    try:
        assert wait_for(lambda: run.snapshot().last_batch is not None)
        run.pause()
        assert wait_for(lambda: run.snapshot().status == "paused")
        alive["v"] = False  # the session that paused it went away
        assert run.join(20)
        assert run.snapshot().finished.status == "stopped"
    finally:
        run.stop()
        run.join(20)


def test_session_watch_grace_period():
    state = {"active": False}
    watch = SessionWatch(lambda: state["active"], grace_s=0.3)
    assert watch()  # gone, but within the grace period
    state["active"] = True
    time.sleep(0.35)
    assert watch()  # came back: the clock resets
    state["active"] = False
    assert watch()
    time.sleep(0.35)
    assert not watch()


def test_two_runs_at_once_stay_independent(glove):
    """Two threads training with different seeds give exactly what each gives alone."""
    alone = {s: [e.train_loss for e in long_trainer(glove, s, 3).events() if isinstance(e, EpochEnd)]
             for s in (1, 2)}
    runs = {s: TrainingRun(long_trainer(glove, s, 3)) for s in (1, 2)}
    for r in runs.values():
        r.start()
    for r in runs.values():
        assert r.join(60)
    for s, r in runs.items():
        assert [e.train_loss for e in r.snapshot().epochs] == alone[s]


def test_loss_curve_is_downsampled_not_truncated(glove):
    run = TrainingRun(long_trainer(glove, epochs=3))
    run.MAX_POINTS = 5
    run.start()
    assert run.join(60)
    snap = run.snapshot()
    assert len(snap.batch_x) <= 6 and snap.batch_x == sorted(snap.batch_x)
    assert snap.batch_x[-1] > 2.0  # covers the last epoch
    assert snap.progress == 1.0 and snap.status == "completed"


def test_grad_mode_is_per_thread():
    """A no_grad block in one thread (the page) does not switch off gradients in a training thread."""
    inside = threading.Event()
    leave = threading.Event()

    def page_thread():
        with no_grad():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=page_thread)
    t.start()
    inside.wait(5)
    x = engine.tensor(2.0, requires_grad=True)
    y = x * x
    leave.set()
    t.join(5)
    assert y.requires_grad and isinstance(y, Tensor)


def test_train_sentiment_example_prints_hw2_lines_and_the_best_epoch(glove, capsys):
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "examples" / "train_sentiment.py"
    spec = importlib.util.spec_from_file_location("train_sentiment_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--dataset", "builtin", "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    assert "230 training, 60 validation sentences" in out and "Epoch 3, loss" in out
    best = max(float(v.rstrip("%")) for v in
               [line.split(": ")[1] for line in out.splitlines() if line.startswith("Validation accuracy")])
    assert "completed: 3 epochs" in out and f"best validation accuracy {best:.2f}%" in out


def load_script(relative: str, name: str):
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / relative)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hw2_train_benchmark_says_when_pytorch_is_absent(glove, capsys, monkeypatch):
    """benchmarks/hw2_train.py runs on the packaged SST-2; without PyTorch it says so in one line."""
    import sys
    bench = load_script("benchmarks/hw2_train.py", "hw2_train_benchmark")
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    assert bench.main(["--epochs", "1", "--no-step", "--seeds", "0", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.startswith("  ours ")]
    assert [r.split()[1] for r in rows] == ["compiled", "eager", "compiled"]  # eager once, for the first seed
    assert all("best validation" in r for r in rows)
    assert out[-1] == bench.NO_TORCH_LINE and "Goals" not in "\n".join(out)
    assert any(line.startswith("    training step, forward + backward (replayed)") for line in out)  # the profile
    assert bench.main(["--epochs", "1", "--no-torch", "--no-step", "--no-eager"]) == 0
    assert "PyTorch: skipped (--no-torch)" in capsys.readouterr().out


def test_a_non_finite_loss_stops_the_run_and_says_where():
    """A NaN word vector that got past the loaders: the run stops at the first batch that meets it."""
    from sentiment.trainer import LossNotFinite
    g = tiny_glove()
    data = Dataset(["good film", "bad film", "great film", "awful film", "not good", "film"],
                   [1, 0, 1, 0, 0, 1], "test")
    g.vectors[g.index["awful"]] = np.nan  # after GloVe's own check, as data that got past the loaders
    trainer = SentimentTrainer(data, data, g, TrainConfig(epochs=3, batch_size=2, seed=0))
    before = {k: v.copy() for k, v in trainer.model.state_dict().items()}
    events = list(trainer.events())
    bad = [e for e in events if isinstance(e, LossNotFinite)]
    assert len(bad) == 1 and (bad[0].epoch, bad[0].batch, bad[0].n_batches) == (1, 2, 3)
    assert np.isnan(bad[0].loss)
    names = [type(e).__name__ for e in events if type(e).__name__ != "InsideLook"]
    assert names[-3:] == ["BatchEnd", "LossNotFinite", "TrainingFinished"]
    fin = events[-1]
    assert fin.status == "error" and fin.epochs_done == 0
    assert "the loss became nan at epoch 1, batch 2 of 3" in fin.error
    after = trainer.model.state_dict()  # one finite update (batch 1), none from the NaN batch
    assert all(np.isfinite(v).all() for v in after.values())
    assert any(not np.array_equal(before[k], after[k]) for k in before)
    trainer2 = SentimentTrainer(data, data, g, TrainConfig(epochs=3, batch_size=2, seed=0))
    with pytest.raises(RuntimeError, match="epoch 1, batch 2"):
        trainer2.run()


def test_train_sentiment_example_on_your_own_files(glove, tmp_path, capsys):
    example = load_script("examples/train_sentiment.py", "train_sentiment_example_own")
    (tmp_path / "train.csv").write_text("sentence,label\nA great, moving film,1\nDull and boring.,0\n"
                                        "I loved it!,positive\nterrible,negative\n")
    (tmp_path / "valid.tsv").write_text("wonderful\t1\nawful\t0\n")
    assert example.main(["--train", str(tmp_path / "train.csv"), "--valid", str(tmp_path / "valid.tsv"),
                         "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path / 'train.csv'}: 4 training, 2 validation sentences" in out and "completed: 2 epochs" in out
    (tmp_path / "bad.csv").write_text("good,1\nbad,2\n")
    assert example.main(["--train", str(tmp_path / "bad.csv"), "--valid", str(tmp_path / "valid.tsv")]) == 2
    assert f"{tmp_path / 'bad.csv'}, line 2: label must be 0 or 1" in capsys.readouterr().err
    assert example.main(["--train", str(tmp_path / "train.csv"), "--valid", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv: No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--train", str(tmp_path / "train.csv")])
    assert "--train and --valid go together" in capsys.readouterr().err


# --- training choices beyond HW2 (the "Full SST-2" preset) ---------------------------------


def small_data():
    return builtin_split(60)


def test_word_dropout_only_pads_and_keeps_a_word(glove):
    tr, va = small_data()
    trainer = SentimentTrainer(tr, va, glove, TrainConfig(epochs=1, word_dropout=0.5, seed=3))
    ids = trainer.encoded_train.batch_ids(np.arange(len(tr)))
    dropped = trainer._drop_words(ids)
    real = ids != 0
    assert ((dropped == ids) | (dropped == 0)).all()           # words are only replaced by padding
    assert ((dropped != 0) <= real).all() and (dropped != 0).any(axis=1).all()  # every sentence keeps a word
    assert 0.4 < 1 - (dropped != 0).sum() / real.sum() < 0.6    # about half the words go
    one_word = np.array([[5, 0, 0]] * 50)
    assert (trainer._drop_words(one_word) == one_word).all()


def test_cosine_schedule_weight_decay_and_validation(glove):
    tr, va = small_data()
    cfg = TrainConfig(epochs=2, batch_size=23, lr=0.02, lr_schedule="cosine", weight_decay=1e-3)
    trainer = SentimentTrainer(tr, va, glove, cfg)
    total = 2 * math.ceil(len(tr) / 23)
    assert trainer.lr_at(0) == 0.02 and trainer.lr_at(total // 2) == pytest.approx(0.01, rel=0.02)
    assert trainer.lr_at(total) == 0.0
    assert trainer.optimizer.weight_decay == 1e-3
    trainer.run()
    assert trainer._steps_done == total and trainer.optimizer.lr == pytest.approx(trainer.lr_at(total - 1))
    assert SentimentTrainer(tr, va, glove, TrainConfig(epochs=1)).lr_at(5) == 0.01
    for bad in (dict(weight_decay=-1.0), dict(lr_schedule="step"), dict(word_dropout=1.0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(**bad).validate()


def test_trained_word_vectors_move_only_where_training_words_are(glove):
    tr, va = small_data()
    frozen = SentimentTrainer(tr, va, glove, TrainConfig(epochs=2, seed=0))
    start = frozen.embedding_table.copy()
    frozen.run()
    np.testing.assert_array_equal(frozen.embedding_table, start)  # HW2: the vectors are inputs, not weights
    trainer = SentimentTrainer(tr, va, glove, TrainConfig(epochs=3, seed=0, train_embeddings=True))
    assert trainer._table_optimizer.weight_decay == 0.0
    trainer.run()
    moved = np.abs(trainer.embedding_table - start).max(axis=1) > 0
    train_ids = np.unique(trainer.encoded_train.ids)
    val_only = np.setdiff1d(np.unique(trainer.encoded_val.ids), train_ids)
    assert moved[train_ids[train_ids > 0]].all() and not moved[0]  # training words yes, padding never
    assert not moved[val_only].any() and len(val_only) > 0          # a word only seen in validation: never
    # the typed-sentence path reads the trained vectors, as the validation path does
    sentence = va.sentences[0]
    p_text = trainer.predict_text(sentence).probability
    p_enc = trainer.predict_encoded(trainer.vocabulary.encode_dataset([sentence], [0]))[0]
    assert p_text == pytest.approx(p_enc, abs=1e-12)
    # the best epoch's weights and vectors come back together
    best = trainer.best_table.copy()
    assert trainer.restore_best() == trainer.best_epoch
    np.testing.assert_array_equal(trainer.embedding_table, best)


def test_gradient_reaches_the_word_vectors_by_gradcheck():
    net = SentimentNet(embedding_dim=3, hidden=4, seed=1).eval()
    ids = np.array([[2, 3, 4, 0], [5, 2, 0, 0]])
    table0 = np.random.default_rng(0).standard_normal((8, 3))

    def loss_of(table):
        emb, mask = batch_tensors(None, ids, table_tensor=table)
        return net.loss(emb, mask, np.array([1.0, 0.0]))[0]

    assert engine.gradcheck(loss_of, [engine.tensor(table0, requires_grad=True)], n_directions=3).ok


def test_presets_and_the_command_line(glove):
    from sentiment.trainer import PRESETS
    hw2, full = PRESETS["hw2"], PRESETS["full"]
    assert (hw2.n_train, hw2.n_val, hw2.config) == (450, 100, TrainConfig(shuffle=True))
    assert (full.n_train, full.n_val) == (None, None) and full.label == "Full SST-2"
    assert full.config.train_embeddings and full.config.lr_schedule == "cosine"
    full.config.validate()
    example = load_script("examples/train_sentiment.py", "train_sentiment_settings")
    parse = example.build_parser().parse_args
    preset, cfg, n_tr, n_va = example.settings(parse(["--full", "--epochs", "1", "--no-train-embeddings"]))
    assert preset is full and (n_tr, n_va) == (None, None)
    assert cfg == full.train_config(epochs=1, train_embeddings=False) and full.config.epochs == 3
    preset, cfg, n_tr, n_va = example.settings(parse(["--preset", "hw2", "--lr", "0.02", "--train-size", "90"]))
    assert preset is hw2 and cfg == TrainConfig(lr=0.02, shuffle=True) and (n_tr, n_va) == (90, 100)
    assert example.settings(parse(["--no-shuffle"]))[1] == TrainConfig()  # HW2's file order


def test_trainers_on_the_same_data_share_one_read_only_encoding():
    """16 students starting "Full SST-2" each built and held their own 35 MB encoding."""
    g = tiny_glove()
    data = Dataset(["good film", "bad film", "great film", "awful film", "not good", "film"], [1, 0, 1, 0, 0, 1], "t")
    a = SentimentTrainer(data, data, g, TrainConfig(epochs=1, batch_size=2, seed=0))
    b = SentimentTrainer(data, data, g, TrainConfig(epochs=1, batch_size=3, seed=1, train_embeddings=True))
    assert a.encoded_train is b.encoded_train and a.vocabulary is b.vocabulary
    assert not a.encoded_train.ids.flags.writeable and not a.vocabulary.table.flags.writeable
    other = Dataset(["good film", "bad film", "great film", "awful film"], [1, 0, 1, 1], "t")   # a label differs
    c = SentimentTrainer(other, None, g, TrainConfig(epochs=1, batch_size=2, seed=0))
    assert c.encoded_train is not a.encoded_train and c.encoded_val is None
    list(b.events())                       # training reads the shared arrays, never writes them
    np.testing.assert_array_equal(a.encoded_train.labels, [1, 0, 1, 0, 0, 1])
