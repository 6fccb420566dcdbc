"""Networks to step through: each preset builds real engine modules and a loss function.

A :class:`Network` is a model (an ``engine.nn.Module`` holding every leaf that takes a
gradient) plus a forward function that runs engine ops and returns a scalar loss. The
forward function names its layers with ``scope("...")`` so the explorer can collapse
primitives into layer boxes; nothing here computes a gradient by hand.
"""
from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from engine import functional as F
from engine import nn, ops
from engine.backends import get_backend
from engine.nn import Parameter
from engine.tensor import Tensor, no_grad, tensor
from explorer.kit.labels import num
from explorer.explain.numbers import count


class Scope:
    """Names the layer that ops belong to while a forward pass runs (one per forward).

    ``scope(name)`` names a layer; ``scope.composite(layer, op, formula)`` names a layer that is one
    composite function (tanh = 2·sigmoid(2a) − 1): the recording labels the last primitive of each
    such block ``op`` and says the formula, so a composite is not drawn as anonymous primitives.
    """

    def __init__(self) -> None:
        self.current: str | None = None
        self.composite_op: tuple[int, str, str] | None = None   # (block number, op name, formula)
        self._blocks = 0

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        prev, self.current = self.current, name
        try:
            yield
        finally:
            self.current = prev

    @contextmanager
    def composite(self, name: str, op: str, formula: str) -> Iterator[None]:
        prev, self._blocks = self.composite_op, self._blocks + 1
        self.composite_op = (self._blocks, op, formula)
        try:
            with self(name):
                yield
        finally:
            self.composite_op = prev


class _Model(nn.Module):
    """A bag of parameters and sub-modules given as keyword arguments."""

    def __init__(self, **parts) -> None:
        super().__init__()
        for name, part in parts.items():
            setattr(self, name, part)


@dataclass
class Network:
    """A built preset: its model, its loss function and what it teaches."""

    key: str
    title: str
    teaches: str
    model: nn.Module
    forward: Callable[[nn.Module, Scope], Tensor]
    notes: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    dropout_seed: int | None = None   # reseed the backend before every forward (same dropout mask)
    watch: list[str] = field(default_factory=list)   # leaves whose fan-out the page points at

    def loss(self, scope: Scope | None = None) -> Tensor:
        """Run the forward pass (engine ops) and return the scalar loss."""
        if self.dropout_seed is not None:
            # Finite-difference reruns must see the same dropout mask as the recorded pass.
            get_backend("numpy").seed(self.dropout_seed)
        return self.forward(self.model, scope if scope is not None else Scope())

    def leaves(self) -> dict[str, Tensor]:
        """Every leaf that takes a gradient, by name (parameters and inputs marked as leaves)."""
        return dict(self.model.named_parameters())


class PresetError(ValueError):
    """A preset was asked for with options it cannot build."""


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _check_positive(**values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise PresetError(f"{name} must be a positive integer, got {v!r}")


# ---------------------------------------------------------------------------
# presets


def logistic_regression(batch: int = 4, features: int = 3, seed: int = 0) -> Network:
    _check_positive(batch=batch, features=features)
    rng = _rng(seed)
    x = rng.standard_normal((batch, features))
    y = (rng.random((batch, 1)) > 0.5).astype(np.float64)
    model = _Model(x=Parameter(x, name="x"), fc=nn.Linear(features, 1, seed=seed))

    def forward(m, scope):
        with scope("Linear z = x Wᵀ + b"):
            z = m.fc(m.x)
        with scope("sigmoid"):
            p = F.sigmoid(z)
        with scope("BCE loss"):
            return F.binary_cross_entropy(p, tensor(y))

    return Network("logreg", "Logistic regression",
                   "x̄ = ȳ W and W̄ = ȳᵀ x; the bias is broadcast over the batch, so its gradient is "
                   "the sum over the batch (sum_to_shape).",
                   model, forward, config=dict(batch=batch, features=features, seed=seed), watch=["fc.bias"])


def mlp(batch: int = 4, features: int = 3, hidden: int = 5, classes: int = 3, depth: int = 1,
        seed: int = 0) -> Network:
    _check_positive(batch=batch, features=features, hidden=hidden, classes=classes, depth=depth)
    rng = _rng(seed)
    x = rng.standard_normal((batch, features))
    y = rng.integers(0, classes, batch)
    layers = {f"fc{i + 1}": nn.Linear(features if i == 0 else hidden, hidden, seed=seed + i) for i in range(depth)}
    layers[f"fc{depth + 1}"] = nn.Linear(hidden, classes, seed=seed + depth)
    model = _Model(**layers)

    def forward(m, scope):
        h = tensor(x, name="x")
        for i in range(depth):
            with scope(f"Linear {i + 1}"):
                h = getattr(m, f"fc{i + 1}")(h)
            with scope(f"ReLU {i + 1}"):
                h = h.relu()
        with scope(f"Linear {depth + 1} (logits)"):
            logits = getattr(m, f"fc{depth + 1}")(h)
        with scope("cross-entropy"):
            return F.cross_entropy(logits, y)

    return Network("mlp", "Two-layer MLP",
                   "Backward must keep the matmul inputs (x and the hidden activations) and what the ReLU "
                   "mask is computed from; the memory panel lists exactly which tensors the VJPs read.",
                   model, forward, config=dict(batch=batch, features=features, hidden=hidden, classes=classes,
                                               depth=depth, seed=seed))


DEFAULT_SENTENCE = "it is a good movie"


def _sentence_vectors(sentence: str, seed: int) -> tuple[list[str], np.ndarray, str]:
    """Tokens, one vector per distinct token, and where the vectors came from.

    Uses the sentiment data layer's GloVe loader when it is there and finds the vectors;
    otherwise seeded random vectors, and the source string says so.
    """
    _check_text("sentence", sentence)   # before tokenising (a 16 MB sentence took seconds to split)
    try:
        from sentiment.embeddings import load_glove, tokenize
    except ImportError:
        tokenize, load_glove = None, None
    tokens = tokenize(sentence) if tokenize is not None else sentence.lower().split()
    if not tokens:
        raise PresetError("the sentence has no words")
    if len(tokens) > MAX_WORDS:
        raise PresetError(f"at most {MAX_WORDS} words, got {len(tokens)}")
    vocab = list(dict.fromkeys(tokens))
    if load_glove is not None:
        try:
            glove = load_glove()
            vectors = np.stack([np.asarray(glove.vector(w), dtype=np.float64) for w in vocab])
            unknown = [w for w in vocab if w not in glove]
            note = f"GloVe 50-d vectors from {glove.source}"
            if unknown:
                note += f" (unknown words use the loader's fixed random vector: {', '.join(unknown)})"
            return tokens, vectors, note
        except FileNotFoundError:
            pass
    vectors = _rng(seed).standard_normal((len(vocab), 50)) * 0.4
    return tokens, vectors, "SEEDED RANDOM vectors (GloVe not available here): values are not real word vectors"


LECTURE_VS_HW2 = ("The lecture runs Linear → ReLU → Linear on every word and then averages the words' scores; "
                  "HW2 averages the word vectors first and runs Linear → ReLU → Linear once on the average. "
                  "Because ReLU is not linear, the two orders are different networks.")


def sentiment(sentence: str = DEFAULT_SENTENCE, hidden: int = 6, label: int = 1, seed: int = 0) -> Network:
    """The lecture's sentiment network (slide 4), bottom-up: embedding lookup, then Linear -> ReLU ->
    Linear on each word, average pooling over the words, softmax (cross-entropy against ``label``)."""
    _check_positive(hidden=hidden)
    if label not in (0, 1):
        raise PresetError(f"label must be 0 (negative) or 1 (positive), got {label!r}")
    tokens, vectors, source = _sentence_vectors(sentence, seed)
    vocab = list(dict.fromkeys(tokens))
    index = np.array([vocab.index(t) for t in tokens], dtype=np.int64)
    model = _Model(embedding=nn.Embedding(len(vocab), vectors.shape[1], weight=vectors),
                   fc1=nn.Linear(vectors.shape[1], hidden, seed=seed), fc2=nn.Linear(hidden, 2, seed=seed + 1))

    def forward(m, scope):
        with scope("embedding lookup"):
            e = m.embedding(index)                   # (T, 50): one row per word
        with scope("Linear 1 (each word)"):
            h = m.fc1(e)                             # (T, hidden)
        with scope("ReLU (each word)"):
            h = h.relu()
        with scope("Linear 2 (each word)"):
            scores = m.fc2(h)                        # (T, 2): one pair of class scores per word
        with scope("average pooling"):
            logits = F.mean(scores, 0, keepdim=True)   # (1, 2)
        with scope("softmax / cross-entropy"):
            return F.cross_entropy(logits, [label])

    # the same weights in HW2's order (pool first), to show in numbers that the order matters
    with no_grad():
        e = model.embedding(index)
        per_word = F.softmax(F.mean(model.fc2(model.fc1(e).relu()), 0, keepdim=True), -1).numpy()[0, 1]
        pool_first = F.softmax(model.fc2(model.fc1(F.mean(e, 0, keepdim=True)).relu()), -1).numpy()[0, 1]
    repeated = sorted({t for t in tokens if tokens.count(t) > 1})
    notes = [f"Vectors: {source}.", f"Tokens: {tokens}; table rows (vocabulary): {vocab}.",
             f"Same weights, two orders: per word then average gives P(positive) = {num(per_word)}; "
             f"average first (HW2's order) gives {num(pool_first)}."]
    if repeated:
        notes.append(f"Repeated word(s) {repeated}: the embedding's backward (scatter-add) adds two rows of "
                     f"the upstream gradient into one table row.")
    return Network("sentiment", "Lecture sentiment network (per word, then average)",
                   LECTURE_VS_HW2 + " The embedding lookup is a gather; its VJP is a scatter-add into the "
                   "table's rows, so a repeated word receives the sum of its positions' gradients.",
                   model, forward, notes=notes,
                   config=dict(sentence=sentence, hidden=hidden, label=label, seed=seed, tokens=tokens,
                               vocab=vocab, index=index.tolist(), vectors_source=source,
                               p_per_word=float(per_word), p_pool_first=float(pool_first)),
                   watch=["embedding.weight"])


def _sst2_batch(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], str]:
    """The first ``batch`` SST-2 training sentences (the course's setting) as padded GloVe vectors.

    Returns (vectors (B, L, 50), mask (B, L), labels (B,), sentences, source). Falls back to the
    data layer's built-in sentences, then to seeded random vectors (the source says which).
    """
    try:
        from sentiment.data import builtin_corpus, load_sst2
        from sentiment.embeddings import load_glove, tokenize
        glove = load_glove()
    except (ImportError, FileNotFoundError):
        rng = _rng(seed)
        vecs = rng.standard_normal((batch, 4, 50)) * 0.4
        return (vecs, np.ones((batch, 4)), (rng.random(batch) > 0.5).astype(np.float64), [],
                "SEEDED RANDOM word vectors (GloVe / SST-2 not available here), 4 words per sentence")
    try:
        data = load_sst2()[0]
    except (FileNotFoundError, ValueError):
        data = builtin_corpus()
    sentences = list(data.sentences[:batch])
    if len(sentences) < batch:
        raise PresetError(f"the dataset has only {len(sentences)} sentences")
    encoded = [glove.encode_tokens(tokenize(t))[0] for t in sentences]
    length = max(len(e) for e in encoded)
    vecs = np.zeros((batch, length, glove.dim))
    mask = np.zeros((batch, length))
    for i, e in enumerate(encoded):
        vecs[i, :len(e)] = e
        mask[i, :len(e)] = 1.0
    labels = np.asarray(data.labels[:batch], dtype=np.float64)
    return vecs, mask, labels, sentences, f"GloVe 50-d vectors ({glove.source}) of {data.source} sentences"


def hw2(batch: int = 3, hidden: int = 5, dropout: float = 0.5, seed: int = 0) -> Network:
    """HW2's network, the one :class:`sentiment.model.SentimentNet` the trainer trains, on a real batch."""
    from sentiment.model import SentimentNet
    _check_positive(batch=batch, hidden=hidden)
    if not 0.0 <= dropout < 1.0:
        raise PresetError(f"dropout must be in [0, 1), got {dropout}")
    emb, mask, y, sentences, source = _sst2_batch(batch, seed)
    model = SentimentNet(emb.shape[2], hidden, dropout, seed=seed)

    def forward(m, scope):
        loss, _ = m.loss(tensor(emb, name="word vectors"), tensor(mask, name="padding mask"),
                         tensor(y, name="labels"), scope=scope)
        return loss

    lengths = mask.sum(axis=1).astype(int).tolist()
    return Network("hw2", "HW2 network (average first, then Linear → ReLU → Dropout → Linear)",
                   "HW2 averages the word vectors first (padding excluded), then runs one Linear → ReLU → "
                   "Dropout → Linear → sigmoid → BCE on the average; the lecture's order runs the layers on every "
                   "word and averages last. Dropout multiplies by a kept-mask / (1-p): its VJP multiplies the "
                   "adjoint by the same mask, so dropped units get no gradient.",
                   model, forward, notes=[f"Inputs: {source}." + (f" Sentences: {sentences}; labels "
                                                                   f"{y.astype(int).tolist()}; real lengths "
                                                                   f"{lengths} (padding excluded from the mean)."
                                                                   if sentences else ""),
                                          "The network is sentiment.model.SentimentNet, the one the Sentiment "
                                          "training page trains.",
                                          f"Dropout mask drawn from the backend generator seeded with {seed}."],
                   config=dict(batch=batch, hidden=hidden, dropout=dropout, seed=seed, sentences=sentences,
                               vectors_source=source),
                   dropout_seed=seed)


def residual(batch: int = 3, features: int = 4, seed: int = 0) -> Network:
    _check_positive(batch=batch, features=features)
    rng = _rng(seed)
    x = rng.standard_normal((batch, features))
    target = rng.standard_normal((batch, features))
    model = _Model(x=Parameter(x, name="x"), fc1=nn.Linear(features, features, seed=seed),
                   fc2=nn.Linear(features, features, seed=seed + 1))

    def forward(m, scope):
        with scope("f(x): Linear 1"):
            h = m.fc1(m.x)
        with scope("f(x): ReLU"):
            h = h.relu()
        with scope("f(x): Linear 2"):
            f = m.fc2(h)
        with scope("y = x + f(x)"):
            y = m.x + f
        with scope("MSE loss"):
            return F.mse_loss(y, tensor(target))

    return Network("residual", "Residual block y = x + f(x)",
                   "x fans out to the skip path and to f; its gradient is the sum of the two contributions "
                   "(ȳ from the skip, plus ȳ pushed back through f).",
                   model, forward, config=dict(batch=batch, features=features, seed=seed), watch=["x"])


def attention(tokens: int = 3, features: int = 4, head: int = 2, seed: int = 0) -> Network:
    _check_positive(tokens=tokens, features=features, head=head)
    rng = _rng(seed)
    x = rng.standard_normal((tokens, features))
    target = rng.standard_normal((tokens, head))
    scale = 1.0 / math.sqrt(head)

    def w(i):
        return Parameter(_rng(seed + 10 + i).standard_normal((features, head)) / math.sqrt(features))

    model = _Model(x=Parameter(x, name="x"), Wq=w(0), Wk=w(1), Wv=w(2))

    def forward(m, scope):
        with scope("Q = x Wq"):
            q = m.x @ m.Wq
        with scope("K = x Wk"):
            k = m.x @ m.Wk
        with scope("V = x Wv"):
            v = m.x @ m.Wv
        with scope("scores = Q Kᵀ / √d"):
            scores = (q @ ops.transpose(k, 0, 1)) * scale
        with scope("softmax"):
            a = F.softmax(scores, -1)
        with scope("out = A V"):
            out = a @ v
        with scope("MSE loss"):
            return F.mse_loss(out, tensor(target))

    return Network("attention", "Single attention head",
                   "One input x produces Q, K and V: x fans out three times and its gradient is the sum of "
                   "three matmul VJPs.",
                   model, forward, config=dict(tokens=tokens, features=features, head=head, seed=seed),
                   watch=["x"])


def rnn(steps: int = 3, batch: int = 2, features: int = 3, hidden: int = 4, seed: int = 0) -> Network:
    _check_positive(steps=steps, batch=batch, features=features, hidden=hidden)
    rng = _rng(seed)
    xs = rng.standard_normal((steps, batch, features))
    target = rng.standard_normal((batch, 1))
    model = _Model(Wx=Parameter(_rng(seed + 1).standard_normal((features, hidden)) / math.sqrt(features)),
                   Wh=Parameter(_rng(seed + 2).standard_normal((hidden, hidden)) / math.sqrt(hidden)),
                   b=Parameter(np.zeros(hidden)),
                   Wo=Parameter(_rng(seed + 3).standard_normal((hidden, 1)) / math.sqrt(hidden)))

    def forward(m, scope):
        x = tensor(xs, name="x (T, B, D)")
        h = tensor(np.zeros((batch, hidden)), name="h0")
        for t in range(steps):
            with scope(f"step {t + 1}"):        # h = tanh(x_t Wx + h Wh + b)
                a = x[t] @ m.Wx + h @ m.Wh + m.b
            with scope.composite(f"step {t + 1}: tanh", "tanh", "tanh(a) = 2·sigmoid(2a) − 1"):
                h = F.tanh(a)
        with scope("readout + MSE"):
            return F.mse_loss(h @ m.Wo, tensor(target))

    return Network("rnn", "RNN cell unrolled in time",
                   "Each step computes h = tanh(x_t Wx + h Wh + b) with the same Wh: parameter sharing is "
                   "fan-out through time, and Wh's gradient is the sum of the per-step contributions.",
                   model, forward,
                   notes=[f"Step 1 sends Wh a contribution of exactly 0: its VJP is W̄h = h0ᵀ ȳ and h0 = 0, so "
                          f"only steps 2 to {steps} move Wh (the fan-out table shows the zero row)."
                          if steps > 1 else "With T = 1, Wh only ever multiplies h0 = 0: its gradient is 0.",
                          "tanh is not a primitive of this engine: it is computed as 2·sigmoid(2a) − 1 (four "
                          "primitives: mul, sigmoid, mul, sub). The op view labels the last of them tanh; the "
                          "layer view draws one tanh box per step."],
                   config=dict(steps=steps, batch=batch, features=features, hidden=hidden, seed=seed),
                   watch=["Wh"])


LAYER_KINDS = ("linear", "relu", "sigmoid", "tanh", "dropout")
MAX_WIDTH = 256          # widest linear layer the page builds
MAX_LAYERS = 60
MAX_WORDS = 40
MAX_PARAMETERS = 300_000  # weights and biases of your own network, checked before they are built (60 layers of
                          # 256 x 256 held 3.9 million: 31 MB before anything ran); see cost.py for the rest
MAX_TEXT = {"sentence": 400, "layers": 1000}   # characters of a text option (40 words; 60 layers)
_LAYER_RE = re.compile(r"^\s*(linear|relu|sigmoid|tanh|dropout)\s*(?:\(\s*([0-9.]+)\s*\)|\s+([0-9.]+))?\s*$",
                       re.IGNORECASE)


def parse_layers(text: str) -> list[tuple[str, float | None]]:
    """Parse ``"linear 8, relu, linear 2"`` into ``[("linear", 8), ("relu", None), ("linear", 2)]``.

    Raises:
        PresetError: an unknown layer, a missing or bad size, more than ``MAX_TEXT["layers"]`` characters.
    """
    _check_text("layers", text)
    layers: list[tuple[str, float | None]] = []
    parts = text.split(",")
    if parts and not parts[-1].strip():   # one trailing comma is harmless ("linear 4, relu,")
        parts = parts[:-1]
    for i, part in enumerate(parts):
        if not part.strip():
            raise PresetError(f"layer {i + 1} is empty (two commas in a row?): write one layer between "
                              f"each pair of commas, e.g. 'linear 4, relu, linear 2'")
        mt = _LAYER_RE.match(part)
        if mt is None:
            raise PresetError(f"cannot read layer {part.strip()!r}: use one of {', '.join(LAYER_KINDS)} "
                              f"(linear N, dropout P)")
        kind = mt.group(1).lower()
        arg = mt.group(2) or mt.group(3)
        if kind == "linear":
            if arg is None or not arg.isdigit() or not 1 <= int(arg) <= MAX_WIDTH:
                raise PresetError(f"linear needs a whole width from 1 to {MAX_WIDTH}, got {part.strip()!r}")
            layers.append((kind, int(arg)))
        elif kind == "dropout":
            try:
                p = 0.5 if arg is None else float(arg)
            except ValueError:  # "1.2.3", "0..": the pattern lets them through
                raise PresetError(f"dropout needs a probability like 0.5, got {part.strip()!r}") from None
            if not 0.0 <= p < 1.0:
                raise PresetError(f"dropout p must be in [0, 1), got {p}")
            layers.append((kind, p))
        else:
            if arg is not None:
                raise PresetError(f"{kind} takes no size")
            layers.append((kind, None))
    if not layers:
        raise PresetError("no layers given")
    if len(layers) > MAX_LAYERS:
        raise PresetError(f"at most {MAX_LAYERS} layers, got {len(layers)}")
    return layers


def _check_text(name: str, text: str) -> None:
    if len(text) > MAX_TEXT[name]:
        raise PresetError(f"the {name} text has {count(len(text))} characters, more than the limit of {count(MAX_TEXT[name])}")


def _check_parameters(spec: list[tuple[str, float | None]], features: int) -> None:
    """Refuse, before building anything, layers whose weights and biases exceed ``MAX_PARAMETERS``."""
    n_params, width = 0, features
    for kind, arg in spec:
        if kind == "linear":
            n_params, width = n_params + width * int(arg) + int(arg), int(arg)
    if n_params > MAX_PARAMETERS:
        raise PresetError(f"too big to step through here: these layers hold {count(n_params)} weights and biases (at "
                          f"most {count(MAX_PARAMETERS)}); use fewer or narrower layers")


def custom(layers: "str | list[tuple[str, float | None]]" = "linear 4, relu, linear 2", batch: int = 3,
           features: int = 3, seed: int = 0) -> Network:
    _check_positive(batch=batch, features=features)
    spec = parse_layers(layers) if isinstance(layers, str) else list(layers)
    _check_parameters(spec, features)
    modules: list[nn.Module] = []
    names: list[str] = []
    width = features
    for i, (kind, arg) in enumerate(spec):
        if kind == "linear":
            modules.append(nn.Linear(width, int(arg), seed=seed + i))
            width = int(arg)
            names.append(f"Linear {width}")
        elif kind == "dropout":
            modules.append(nn.Dropout(float(arg)))
            names.append(f"Dropout p={arg}")
        else:
            modules.append({"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}[kind]())
            names.append(kind.capitalize() if kind != "relu" else "ReLU")
        names[-1] = f"{i + 1}. {names[-1]}"
    if not any(k == "linear" for k, _ in spec):
        raise PresetError("the network needs at least one linear layer (else nothing takes a gradient)")
    rng = _rng(seed)
    x = rng.standard_normal((batch, features))
    target = rng.standard_normal((batch, width))
    model = _Model(layers=modules)
    uses_dropout = any(k == "dropout" for k, _ in spec)

    def forward(m, scope):
        h = tensor(x, name="x")
        for name, layer in zip(names, m.layers):
            with scope(name):
                h = layer(h)
        with scope("MSE loss"):
            return F.mse_loss(h, tensor(target))

    return Network("custom", "Your network",
                   "Assembled from the layers you chose, trained against a seeded random target with MSE.",
                   model, forward, config=dict(layers=spec, batch=batch, features=features, seed=seed),
                   dropout_seed=seed if uses_dropout else None)


@dataclass(frozen=True)
class Preset:
    key: str
    title: str
    build: Callable[..., Network]
    short: str = ""   # the name a projector's network box shows whole (the title runs past its edge)

    @property
    def name(self) -> str:
        """The short name (the title where it is short already)."""
        return self.short or self.title


#: presentation mode's network box holds this many characters of its name (a third of the page's width at 24 px)
SHORT_NAME_CHARS = 30

PRESETS: dict[str, Preset] = {p.key: p for p in [
    Preset("logreg", "Logistic regression", logistic_regression),
    Preset("mlp", "Two-layer MLP", mlp),
    Preset("sentiment", "Lecture sentiment network: Linear → ReLU → Linear per word, then average → softmax",
           sentiment, short="Lecture sentiment network"),
    Preset("hw2", "HW2 network: average the words first, then Linear → ReLU → Dropout → Linear → sigmoid",
           hw2, short="HW2 network"),
    Preset("residual", "Residual block y = x + f(x)", residual),
    Preset("attention", "Single attention head (Q, K, V from one x)", attention, short="Single attention head"),
    Preset("rnn", "RNN cell unrolled T steps (shared Wh)", rnn, short="RNN unrolled (shared Wh)"),
    Preset("custom", "Assemble your own", custom),
]}


def build(key: str, **options) -> Network:
    """Build preset ``key`` with keyword options (see each builder's signature).

    Raises:
        PresetError: unknown preset or bad options.
    """
    try:
        preset = PRESETS[key]
    except KeyError:
        raise PresetError(f"unknown network {key!r}; known: {', '.join(PRESETS)}") from None
    try:
        return preset.build(**options)
    except TypeError as e:
        raise PresetError(f"bad options for {key!r}: {e}") from None


@dataclass(frozen=True)
class Option:
    """A size (or text) the page lets the user choose for a preset."""

    name: str
    label: str
    default: "int | float | str"
    minimum: "int | float | None" = None
    maximum: "int | float | None" = None


OPTIONS: dict[str, list[Option]] = {
    "logreg": [Option("batch", "batch size", 4, 1, 64), Option("features", "features", 3, 1, 16)],
    "mlp": [Option("batch", "batch size", 4, 1, 64), Option("hidden", "hidden width", 5, 1, 32),
            Option("depth", "hidden layers", 1, 1, 8)],
    "sentiment": [Option("sentence", "sentence", DEFAULT_SENTENCE), Option("hidden", "hidden width", 6, 1, 32)],
    "hw2": [Option("batch", "batch size", 3, 1, 64), Option("hidden", "hidden width", 5, 1, 32),
            Option("dropout", "dropout p", 0.5, 0.0, 0.9)],
    "residual": [Option("batch", "batch size", 3, 1, 64), Option("features", "features", 4, 1, 16)],
    "attention": [Option("tokens", "tokens", 3, 1, 16), Option("features", "features", 4, 1, 16),
                  Option("head", "head size d", 2, 1, 8)],
    "rnn": [Option("steps", "time steps T", 3, 1, 30), Option("batch", "batch size", 2, 1, 32),
            Option("hidden", "hidden width", 4, 1, 16)],
    "custom": [Option("layers", "layers", "linear 4, relu, linear 2"), Option("batch", "batch size", 3, 1, 64),
               Option("features", "input features", 3, 1, 16)],
}

# Which options the memory panel sweeps (the network is rebuilt and measured at each size).
SWEEPS: dict[str, list[tuple[str, list[int]]]] = {
    "logreg": [("batch", [1, 4, 16, 64])],
    "mlp": [("batch", [1, 4, 16, 64]), ("depth", [1, 2, 4, 8])],
    "sentiment": [("hidden", [2, 6, 16, 32])],
    "hw2": [("batch", [1, 4, 16, 64])],
    "residual": [("batch", [1, 4, 16, 64])],
    "attention": [("tokens", [2, 4, 8, 16])],
    "rnn": [("batch", [1, 4, 16, 32]), ("steps", [1, 2, 4, 8, 16])],
    "custom": [("batch", [1, 4, 16, 64])],
}


def clean_options(key: str, given: dict) -> tuple[dict, list[str]]:
    """The preset's options from ``given`` (page state / URL), clamped to their ranges.

    Returns the options and a list of problems (values that were out of range or unreadable).
    """
    if key not in OPTIONS:
        raise PresetError(f"unknown network {key!r}; known: {', '.join(PRESETS)}")
    out: dict = {}
    problems: list[str] = []
    for opt in OPTIONS[key]:
        v = given.get(opt.name, opt.default)
        if isinstance(opt.default, str):
            out[opt.name] = str(v) if v is not None else opt.default
            if opt.name in MAX_TEXT:
                _check_text(opt.name, out[opt.name])
            continue
        try:
            v = type(opt.default)(v)
        except (TypeError, ValueError):
            problems.append(f"{opt.label}: {v!r} is not a number; using {opt.default}")
            v = opt.default
        if opt.minimum is not None and v < opt.minimum or opt.maximum is not None and v > opt.maximum:
            clamped = min(max(v, opt.minimum), opt.maximum)
            problems.append(f"{opt.label}: {v} is outside [{opt.minimum}, {opt.maximum}]; using {clamped}")
            v = clamped
        out[opt.name] = v
    return out, problems
