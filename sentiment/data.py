"""SST-2 (GLUE layout): the packaged copy, other copies, validation and download; the built-in corpus.

A GLUE SST-2 folder holds ``train.tsv`` and ``dev.tsv``: a header line
``sentence<TAB>label``, then one example per line (text already lower-cased and
tokenized, label 0 = negative, 1 = positive).

The project ships both files, xz-compressed, inside this package (``sentiment/data_files/sst2/``,
about 0.5 MB); :func:`load_sst2` uses them unless another copy is named (a folder argument, on the
command line ``--data-dir``, or ``$AUTODIFF_DATA_DIR``). The packaged files are checked against the
official sha256 after decompression. Decoded datasets are kept for the rest of the process, so a
page that reloads SST-2 on every rerun pays for it once.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import importlib.resources
import lzma
import os
import shutil
import tempfile
import threading
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

SST2_URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
DATA_DIR_ENV = "AUTODIFF_DATA_DIR"
CACHE_DIR_ENV = "AUTODIFF_CACHE_DIR"
SST2_FILES = ("train.tsv", "dev.tsv")
SST2_SHA256 = {  # the official GLUE files (see sentiment/data_files/README.md)
    "train.tsv": "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
    "dev.tsv": "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
}
# the packaged copy: train.tsv.xz and dev.tsv.xz (a Traversable, so it works from a wheel or a zip too)
PACKAGED_SST2 = importlib.resources.files(__package__).joinpath("data_files", "sst2")
PACKAGED_SOURCE = "packaged copy"


class DataFormatError(ValueError):
    """A data file is malformed; ``path`` and ``line`` (1-based, None for the whole file) say where."""

    def __init__(self, path: "str | Path", line: int | None, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


class ChecksumMismatch(DataFormatError):
    """A file's content is not the expected one (its sha256 differs); ``path`` names the file."""


class SST2NotFound(FileNotFoundError):
    """No SST-2 copy was found (and downloading was not asked for, or failed)."""


@dataclass
class Dataset:
    """Labelled sentences: ``sentences[i]`` has label ``labels[i]`` (0 negative, 1 positive)."""

    sentences: list[str]
    labels: np.ndarray
    source: str

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=np.int64)
        if len(self.sentences) != len(self.labels):
            raise ValueError(f"{len(self.sentences)} sentences but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, key: slice) -> "Dataset":
        if not isinstance(key, slice):
            raise TypeError("index a Dataset with a slice, e.g. train[:450]")
        n = len(self.sentences[key])
        suffix = "" if n == len(self) else f" [{key.start or 0}:{(key.start or 0) + n}]"
        return Dataset(self.sentences[key], self.labels[key], self.source + suffix)

    def head(self, n: int | None) -> "Dataset":
        """The first ``n`` examples (all when ``n`` is None)."""
        return self if n is None or n >= len(self) else self[:n]

    @property
    def positive_fraction(self) -> float:
        return float(self.labels.mean()) if len(self) else 0.0


# ---------------------------------------------------------------------------
# reading and validating


def parse_sst2_lines(lines: Iterable[bytes], path: "str | Path", source: str | None = None) -> Dataset:
    """Parse the lines (bytes, with or without line ends) of one GLUE SST-2 file; ``path`` names it in errors.

    Raises:
        DataFormatError: wrong header, a row without a tab, an empty sentence, a label other
            than 0/1, undecodable bytes, or no header at all -- the message names the file and the line.
    """
    sentences: list[str] = []
    labels: list[int] = []
    seen_header = False
    for lineno, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataFormatError(path, lineno, f"not valid UTF-8 ({e.reason})") from None
        line = line.rstrip("\r\n")
        if lineno == 1:
            if line.split("\t") != ["sentence", "label"]:
                raise DataFormatError(path, 1, f"expected the header 'sentence<TAB>label', found {line[:60]!r}")
            seen_header = True
            continue
        sentence, tab, label = line.rpartition("\t")
        if not tab:
            raise DataFormatError(path, lineno, f"row has no tab between sentence and label: {line[:60]!r}")
        if "\t" in sentence:
            raise DataFormatError(path, lineno, "row has more than two tab-separated fields")
        label = label.strip()
        if label not in ("0", "1"):
            raise DataFormatError(path, lineno, f"label must be 0 or 1, found {label[:20]!r}")
        sentence = sentence.strip()
        if not sentence:
            raise DataFormatError(path, lineno, "empty sentence")
        sentences.append(sentence)
        labels.append(int(label))
    if not seen_header:
        raise DataFormatError(path, None, "file is empty (no header)")
    return Dataset(sentences, np.array(labels, dtype=np.int64), source or f"SST-2 {Path(str(path)).name}")


def read_sst2_tsv(path: "str | Path") -> Dataset:
    """Read one GLUE SST-2 file (``sentence<TAB>label`` header, then rows).

    Raises:
        FileNotFoundError: the file does not exist.
        DataFormatError: see :func:`parse_sst2_lines` (the message names the file and the line).
    """
    path = Path(path)
    with open(path, "rb") as fh:
        return parse_sst2_lines(fh, path)


def _sst2_folder(candidate: Path) -> Path | None:
    """``candidate`` itself, or its ``sst2`` / ``SST-2`` sub-folder, when it holds train.tsv and dev.tsv."""
    for d in (candidate, candidate / "sst2", candidate / "SST-2"):
        if (d / "train.tsv").is_file() and (d / "dev.tsv").is_file():
            return d
    return None


def default_cache_dir() -> Path:
    """Where downloads go: ``$AUTODIFF_CACHE_DIR`` or ``~/.cache/autodiff-explorer``."""
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else Path.home() / ".cache" / "autodiff-explorer"


def packaged_sst2_available() -> bool:
    """Whether this installation holds the packaged SST-2 copy."""
    return all(PACKAGED_SST2.joinpath(f"{name}.xz").is_file() for name in SST2_FILES)


# Decoded datasets, kept for the process: {key: (sentences tuple, read-only labels, source)}.
_DATASETS: dict[tuple, tuple[tuple[str, ...], np.ndarray, str]] = {}
_DATASETS_LOCK = threading.Lock()


def _from_cache(key: tuple, load) -> Dataset:
    with _DATASETS_LOCK:  # several sessions may ask at once; decode once
        hit = _DATASETS.get(key)
        if hit is None:
            ds = load()
            labels = ds.labels.copy()
            labels.setflags(write=False)
            hit = _DATASETS[key] = (tuple(ds.sentences), labels, ds.source)
    sentences, labels, source = hit
    return Dataset(list(sentences), labels.copy(), source)  # fresh containers: callers may change their own


def read_packaged_sst2(name: str) -> Dataset:
    """One file of the packaged SST-2 copy (``"train.tsv"`` or ``"dev.tsv"``), checked and cached.

    Raises:
        SST2NotFound: this installation lacks the packaged file.
        ChecksumMismatch: the decompressed file is not the official one (the message names the file).
        DataFormatError: the compressed file is damaged.
    """
    if name not in SST2_SHA256:
        raise ValueError(f"the packaged SST-2 copy holds {list(SST2_SHA256)}, not {name!r}")
    resource = PACKAGED_SST2.joinpath(f"{name}.xz")

    def load() -> Dataset:
        if not resource.is_file():
            raise SST2NotFound(f"this installation has no packaged SST-2 file {resource}; use --data-dir FOLDER, "
                               f"${DATA_DIR_ENV}, or --download")
        try:
            with resource.open("rb") as fh:
                raw = lzma.decompress(fh.read())
        except (lzma.LZMAError, EOFError) as e:
            raise DataFormatError(resource, None, f"damaged xz data ({e}); reinstall the package, "
                                                   "or use --data-dir / --download") from None
        digest = hashlib.sha256(raw).hexdigest()
        if digest != SST2_SHA256[name]:
            raise ChecksumMismatch(resource, None, f"decompressed {name} has sha256 {digest}, expected the official "
                                                   f"{SST2_SHA256[name]}; reinstall the package, or use "
                                                   "--data-dir / --download")
        return parse_sst2_lines(raw.splitlines(), resource, source=f"SST-2 {name} ({PACKAGED_SOURCE})")

    return _from_cache(("packaged", str(resource), name), load)


def _read_sst2_file_cached(path: Path) -> Dataset:
    """:func:`read_sst2_tsv`, kept for the process while the file's size and modification time stay the same."""
    st = path.stat()

    def load() -> Dataset:
        ds = read_sst2_tsv(path)
        ds.source = f"SST-2 {path.name} ({path.parent})"
        return ds

    return _from_cache(("file", str(path.resolve()), st.st_size, st.st_mtime_ns), load)


def clear_cache() -> None:
    """Forget the decoded datasets (tests; or after replacing files in place within one mtime tick)."""
    with _DATASETS_LOCK:
        _DATASETS.clear()


def find_sst2_dir(data_dir: "str | Path | None" = None, cache_dir: "str | Path | None" = None) -> Path | None:
    """Locate an SST-2 folder; None means "use the packaged copy".

    Looks, in order, at ``data_dir`` (when given, only there), ``$AUTODIFF_DATA_DIR``, the packaged
    copy and the download cache. Each folder may hold the two TSVs or be a parent of ``sst2/`` or
    ``SST-2/``.

    Raises:
        SST2NotFound: none of them holds train.tsv and dev.tsv.
    """
    if data_dir is not None:
        found = _sst2_folder(Path(data_dir))
        if found is None:
            raise SST2NotFound(f"--data-dir {data_dir}: no SST-2 train.tsv and dev.tsv there "
                               "(nor in its sst2/ or SST-2/ sub-folder)")
        return found
    looked = []
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        found = _sst2_folder(Path(env))
        if found is not None:
            return found
        looked.append(f"${DATA_DIR_ENV}={env}")
    if packaged_sst2_available():
        return None
    looked.append(f"the packaged copy ({PACKAGED_SST2})")
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    found = _sst2_folder(cache)
    if found is not None:
        return found
    looked.append(f"the download cache {cache}")
    raise SST2NotFound("SST-2 not found in " + ", ".join(looked)
                       + f"; pass --data-dir FOLDER (with train.tsv and dev.tsv), set ${DATA_DIR_ENV}, "
                         "or add --download to fetch it")


def load_sst2(data_dir: "str | Path | None" = None, *, download: bool = False,
              cache_dir: "str | Path | None" = None, url: str = SST2_URL) -> tuple[Dataset, Dataset]:
    """The SST-2 training and validation (dev) sets.

    Args:
        data_dir: a folder with train.tsv and dev.tsv (or a parent of ``sst2/``); default: search
            (see :func:`find_sst2_dir`; normally the packaged copy).
        download: when nothing is found, download the GLUE archive into ``cache_dir``.
        cache_dir: download cache (default :func:`default_cache_dir`).
        url: the archive's address (tests point it at a local server).

    Returns:
        ``(train, dev)``; each ``source`` says which copy was read. Repeated calls reuse the decoded
        data (each call gets its own list of sentences and label array).

    Raises:
        SST2NotFound, DataFormatError (ChecksumMismatch for a damaged packaged copy), DownloadError.
    """
    try:
        folder = find_sst2_dir(data_dir, cache_dir)
    except SST2NotFound:
        if not download or data_dir is not None:
            raise
        folder = download_sst2(cache_dir if cache_dir is not None else default_cache_dir(), url=url)
    if folder is None:
        return read_packaged_sst2("train.tsv"), read_packaged_sst2("dev.tsv")
    return _read_sst2_file_cached(folder / "train.tsv"), _read_sst2_file_cached(folder / "dev.tsv")


# ---------------------------------------------------------------------------
# download


class DownloadError(RuntimeError):
    """The archive could not be fetched, or it is not a valid SST-2 archive."""


def download_sst2(cache_dir: "str | Path", url: str = SST2_URL, timeout: float = 60.0,
                  expected_sha256: dict[str, str] | None = None) -> Path:
    """Download the GLUE SST-2 zip and unpack train.tsv and dev.tsv into ``cache_dir/SST-2``.

    The files are validated (and, with ``expected_sha256``, hashed) before they are moved into
    place, so an interrupted or wrong download never leaves a half-written folder behind.

    Returns:
        The folder holding train.tsv and dev.tsv.

    Raises:
        DownloadError: network error, not a zip, members missing, or a hash mismatch.
        DataFormatError: a member is not a valid SST-2 file.
    """
    cache_dir = Path(cache_dir)
    target = cache_dir / "SST-2"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".sst2-download-") as tmp:
        archive = Path(tmp) / "SST-2.zip"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(archive, "wb") as out:
                shutil.copyfileobj(resp, out)
        except (OSError, ValueError) as e:  # URLError/HTTPError are OSErrors; ValueError: bad URL
            raise DownloadError(f"could not download {url}: {e}") from None
        if not zipfile.is_zipfile(archive):
            raise DownloadError(f"{url} did not return a zip archive")
        staged = Path(tmp) / "SST-2"
        staged.mkdir()
        with zipfile.ZipFile(archive) as zf:
            # pick members by base name; never extract arbitrary paths from the archive
            members = {Path(info.filename).name: info for info in zf.infolist() if not info.is_dir()}
            for name in ("train.tsv", "dev.tsv"):
                if name not in members:
                    raise DownloadError(f"the archive from {url} has no {name}")
                with zf.open(members[name]) as src, open(staged / name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        for name in ("train.tsv", "dev.tsv"):
            if expected_sha256 and name in expected_sha256:
                digest = hashlib.sha256((staged / name).read_bytes()).hexdigest()
                if digest != expected_sha256[name]:
                    raise DownloadError(f"{name} from {url} has sha256 {digest}, expected {expected_sha256[name]}")
            read_sst2_tsv(staged / name)  # raises DataFormatError naming the file and line
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(staged), str(target))
    return target


# ---------------------------------------------------------------------------
# your own data: labelled sentences as CSV or TSV

SST2_SIZES = (67_349, 872)        # SST-2's training and validation sentences (GLUE's train.tsv / dev.tsv)

MAX_USER_BYTES = 5_000_000        # 5 MB per file or pasted text (SST-2's train.tsv, 3.8 MB, fits)
MAX_USER_ROWS = 100_000           # examples per file
MAX_SENTENCE_CHARS = 2_000        # per sentence (SST-2's longest has 267)
LABELS = {"0": 0, "1": 1, "negative": 0, "positive": 1, "neg": 0, "pos": 1}
SENTENCE_COLUMNS = ("sentence", "text", "review")
LABEL_COLUMNS = ("label", "sentiment")


class DataTooLarge(DataFormatError):
    """Labelled data beyond :data:`MAX_USER_BYTES` bytes, :data:`MAX_USER_ROWS` rows or :data:`MAX_SENTENCE_CHARS`."""


def normalize_sentence(text: str) -> str:
    """Lower-case and split like SST-2, keeping text that is already split that way.

    Each space-separated piece goes through :func:`sentiment.embeddings.tokenize`, except pieces
    made of punctuation only (SST-2's ``...``, ``--``, `````, ``''`` stay whole):
    ``"It isn't BAD, really..."`` -> ``"it is n't bad , really ..."``.
    """
    return " ".join(map(_normalize_piece, text.lower().split()))


@functools.lru_cache(maxsize=65536)
def _normalize_piece(piece: str) -> str:
    from .embeddings import tokenize  # embeddings imports this module

    if any(ch.isalnum() or ch == "_" for ch in piece):
        return " ".join(tokenize(piece))
    return piece


def _split_row(line: str, delimiter: str, path, lineno: int) -> list[str]:
    if delimiter == "\t":
        return line.split("\t")
    try:
        return next(csv.reader([line], strict=True))
    except csv.Error as e:
        raise DataFormatError(path, lineno, f"not a valid CSV row ({e}); a sentence with commas or quotes "
                                            'goes in double quotes, with "" for a quote, on one line') from None


def _label_of(text: str, path, lineno: int) -> int:
    label = LABELS.get(text.strip().lower())
    if label is None:
        raise DataFormatError(path, lineno, f"label must be 0 or 1 (or negative / positive), found {text.strip()[:20]!r}")
    return label


def parse_labelled(data: "str | bytes", name: str = "pasted text", *, max_bytes: int = MAX_USER_BYTES,
                   max_rows: int = MAX_USER_ROWS, need_both_labels: bool = False) -> Dataset:
    """Labelled sentences from CSV or TSV text: ``sentence,label`` or ``sentence<TAB>label`` per line.

    - The delimiter is a tab when the first non-blank line has one, else a comma. CSV follows the usual
      quoting (``"a sentence, with commas",1``); an unquoted sentence may contain commas too (the label
      is the last field). One example per line; blank lines are skipped.
    - Header optional: a first line whose last field is not a label is a header, and must name a
      sentence column (``sentence``, ``text`` or ``review``) and a label column (``label`` or
      ``sentiment``); other columns are ignored, and every row must have as many fields.
    - Labels: ``0`` / ``1`` or ``negative`` / ``positive`` (any case).
    - Sentences are normalised with :func:`normalize_sentence` (lower-cased, split like SST-2).
    - Limits: at most ``max_bytes`` bytes (5 MB), ``max_rows`` examples (100,000) and
      :data:`MAX_SENTENCE_CHARS` characters per sentence.

    Args:
        data: the text, or its bytes (UTF-8; an uploaded file's content).
        name: what error messages call it (a file name, "pasted text").
        need_both_labels: refuse data whose examples all have one label (a training set).

    Returns:
        A :class:`Dataset` whose ``source`` is ``name``.

    Raises:
        DataFormatError naming ``name`` and the line; :class:`DataTooLarge` beyond the limits.
    """
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))
    if size > max_bytes:
        raise DataTooLarge(name, None, f"{size:,} bytes, more than the limit of {max_bytes:,} bytes")
    if isinstance(data, bytes):
        if b"\x00" in data:
            raise DataFormatError(name, data[:data.index(b"\x00")].count(b"\n") + 1,
                                  "contains NUL bytes: a binary or UTF-16 file, not UTF-8 text")
        lines: list[str] = []
        for lineno, raw in enumerate(data.split(b"\n"), start=1):
            try:
                lines.append(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except UnicodeDecodeError as e:
                raise DataFormatError(name, lineno, f"not valid UTF-8 ({e.reason}); save the file as UTF-8") from None
    else:
        lines = data.lstrip("\ufeff").split("\n")
    sentences: list[str] = []
    labels: list[int] = []
    delimiter: str | None = None
    columns: tuple[int, int, int] | None = None  # (number of fields, sentence column, label column)
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if delimiter is None:  # the first non-blank line: delimiter, and header or not
            delimiter = "\t" if "\t" in line else ","
            fields = _split_row(line, delimiter, name, lineno)
            if fields[-1].strip().lower() not in LABELS:
                names = [f.strip().lower() for f in fields]
                s_col = next((names.index(c) for c in SENTENCE_COLUMNS if c in names), None)
                l_col = next((names.index(c) for c in LABEL_COLUMNS if c in names), None)
                if s_col is None or l_col is None or len(fields) < 2:
                    sep = "<TAB>" if delimiter == "\t" else ","
                    raise DataFormatError(name, lineno, f"neither a 'sentence{sep}label' row ending in a label (0, 1, "
                                                        "negative, positive) nor a header naming a sentence and a "
                                                        f"label column: {line[:60]!r}")
                columns = (len(fields), s_col, l_col)
                continue
        if len(sentences) >= max_rows:
            raise DataTooLarge(name, lineno, f"more than {max_rows:,} examples, the limit")
        fields = _split_row(line, delimiter, name, lineno)
        if columns is not None and columns[0] != 2:
            n, s_col, l_col = columns
            if len(fields) != n:
                raise DataFormatError(name, lineno, f"expected {n} fields like the header, found {len(fields)}")
            sentence, label_text = fields[s_col], fields[l_col]
        else:
            s_col, l_col = columns[1:] if columns is not None else (0, 1)
            if len(fields) < 2:
                sep = "a tab" if delimiter == "\t" else "a comma"
                raise DataFormatError(name, lineno, f"expected a sentence, {sep} and a label; found {line[:60]!r}")
            if len(fields) > 2:
                if delimiter == "\t" or '"' in line or l_col != 1:
                    raise DataFormatError(name, lineno, f"expected 2 fields, found {len(fields)}"
                                          + ("" if delimiter == "\t" else
                                             ' (put a sentence with commas in double quotes)'))
                fields = [",".join(fields[:-1]), fields[-1]]  # an unquoted sentence with commas
            sentence, label_text = fields[s_col], fields[l_col]
        label = _label_of(label_text, name, lineno)
        if len(sentence) > MAX_SENTENCE_CHARS:
            raise DataTooLarge(name, lineno, f"sentence of {len(sentence):,} characters, more than the limit of "
                                             f"{MAX_SENTENCE_CHARS:,}")
        sentence = normalize_sentence(sentence)
        if not sentence:
            raise DataFormatError(name, lineno, "empty sentence")
        sentences.append(sentence)
        labels.append(label)
    if not sentences:
        raise DataFormatError(name, None, "no labelled sentences")
    if need_both_labels and len(set(labels)) < 2:
        raise DataFormatError(name, None, f"all {len(labels)} sentences are labelled {labels[0]}: "
                                          "training needs examples of both labels")
    return Dataset(sentences, np.array(labels, dtype=np.int64), name)


def read_labelled_file(path: "str | Path", *, max_bytes: int = MAX_USER_BYTES, max_rows: int = MAX_USER_ROWS,
                       need_both_labels: bool = False) -> Dataset:
    """:func:`parse_labelled` of a file (checked against ``max_bytes`` before it is read).

    Raises:
        FileNotFoundError; DataFormatError / DataTooLarge naming the file and the line.
    """
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise DataTooLarge(path, None, f"{size:,} bytes, more than the limit of {max_bytes:,} bytes")
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)  # the file may have grown since stat
    return parse_labelled(data, str(path), max_bytes=max_bytes, max_rows=max_rows,
                          need_both_labels=need_both_labels)


# ---------------------------------------------------------------------------
# the built-in corpus


def builtin_corpus() -> Dataset:
    """A small hand-written corpus of movie-review sentences (SST-2 style: lower-cased, tokenized).

    It lets the app train on a fresh machine with no data at all; it is *not* SST-2.
    It includes negations ("not good") and contrasts ("good but boring"), which an averaged
    bag of words handles poorly on purpose.
    """
    from .builtin_corpus import POSITIVE, NEGATIVE

    sentences, labels = [], []
    # interleave so that any prefix (e.g. the first 100) is balanced
    for i in range(max(len(POSITIVE), len(NEGATIVE))):
        if i < len(POSITIVE):
            sentences.append(POSITIVE[i])
            labels.append(1)
        if i < len(NEGATIVE):
            sentences.append(NEGATIVE[i])
            labels.append(0)
    return Dataset(sentences, np.array(labels, dtype=np.int64), "built-in corpus")


def builtin_split(n_validation: int = 60) -> tuple[Dataset, Dataset]:
    """The built-in corpus split into training and validation parts, both balanced.

    Validation takes ``n_validation // 2`` evenly spaced positive and negative examples.
    """
    full = builtin_corpus()
    val: list[int] = []
    for label in (1, 0):
        idx = np.flatnonzero(full.labels == label)
        k = min(len(idx), n_validation // 2)
        if k:
            val += idx[np.linspace(0, len(idx) - 1, k).round().astype(int)].tolist()
    val_set = set(val)
    tr = [i for i in range(len(full)) if i not in val_set]
    va = sorted(val_set)
    return (Dataset([full.sentences[i] for i in tr], full.labels[tr], "built-in corpus (train)"),
            Dataset([full.sentences[i] for i in va], full.labels[va], "built-in corpus (validation)"))
