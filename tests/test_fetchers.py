"""The fetchers of skvi.datasets: found files, downloads, checksums and errors.

No test uses the network: the download path is served from ``file://``
URLs of a folder made by the test (or by a replaced opener), and the shared
data folder is read where it exists.
"""

import bz2
import gzip
import hashlib
import io
import urllib.error
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from skvi.datasets import (
    DataNotFoundError,
    fetch_libsvm,
    fetch_movielens,
    fetch_uci_bag_of_words,
)
from skvi.datasets import _download, _fetchers


@pytest.fixture
def offline(monkeypatch):
    """No opener at all: a test using it fails if anything is downloaded."""

    def refuse(url, *args, **kwargs):
        raise AssertionError(f"a download was attempted: {url}")

    monkeypatch.setattr(_download, "_urlopen", refuse)


def _publish(monkeypatch, table, name, **values):
    """Make the small files a test writes the published shape of the set ``name``."""
    for key, value in values.items():
        monkeypatch.setitem(table[name], key, value)


def _serve(monkeypatch, name, folder):
    """Serve the files of ``folder`` at the base URL ``name`` of the fetchers."""
    monkeypatch.setattr(_fetchers, name, folder.as_uri() + "/")


# ------------------------------------------------------- a tiny MovieLens 100k
def _tiny_100k(seed=0, n_users=12, n_items=9, n=60):
    """Ratings of distinct (user, item) pairs, a title per item, and five folds."""
    rng = np.random.RandomState(seed)
    pairs = rng.permutation(n_users * n_items)[:n]
    users, items = pairs // n_items + 1, pairs % n_items + 1
    rows = np.column_stack([users, items, rng.randint(1, 6, n), rng.randint(8e8, 9e8, n)])
    fold = rng.permutation(n) % 5  # rating r is in the test set of split fold[r] + 1
    titles = {i: f"Movie {i} ({1990 + i})" for i in range(1, n_items + 1)}
    return rows, fold, titles


def _lines(rows, sep="\t"):
    return "".join(sep.join(str(v) for v in r) + "\n" for r in rows)


def _write_100k(folder, rows, fold, titles):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text(_lines(rows))
    (folder / "u.item").write_text(
        "".join(f"{i}|{t}|01-Jan-1995||http://us.imdb.com/x|0|1|0\n" for i, t in titles.items()),
        encoding="latin-1",
    )
    for k in range(5):
        for part, rows_k in (("base", rows[fold != k]), ("test", rows[fold == k])):
            ordered = rows_k[np.lexsort((rows_k[:, 1], rows_k[:, 0]))]  # as GroupLens sorts them
            (folder / f"u{k + 1}.{part}").write_text(_lines(ordered))


def _check_100k(bunch, rows, fold, titles, folder):
    np.testing.assert_array_equal(bunch.data, rows[:, :2])
    np.testing.assert_array_equal(bunch.target, rows[:, 2])
    np.testing.assert_array_equal(bunch.timestamps, rows[:, 3])
    assert bunch.data.dtype == np.int64 and bunch.target.dtype == np.float64
    np.testing.assert_array_equal(bunch.user_ids, sorted(set(rows[:, 0])))
    np.testing.assert_array_equal(bunch.item_ids, sorted(set(rows[:, 1])))
    assert bunch.item_titles.tolist() == [titles[i] for i in bunch.item_ids]
    assert bunch.feature_names == ["user_id", "item_id"] and bunch.target_names == ["rating"]
    row_of = {(u, i): r for r, (u, i) in enumerate(rows[:, :2].tolist())}
    assert len(bunch.cv) == 5
    for k, (train, test) in enumerate(bunch.cv):
        for part, index in (("base", train), ("test", test)):
            table = np.loadtxt(folder / f"u{k + 1}.{part}", dtype=np.int64, ndmin=2)
            np.testing.assert_array_equal(index, [row_of[u, i] for u, i in table[:, :2].tolist()])
            np.testing.assert_array_equal(bunch.data[index], table[:, :2])
            np.testing.assert_array_equal(bunch.target[index], table[:, 2])
        np.testing.assert_array_equal(np.sort(test), np.flatnonzero(fold == k))
    assert "Harper" in bunch.DESCR and "redistribute" in bunch.DESCR
    assert bunch.filenames[:2] == [str(folder / "u.data"), str(folder / "u.item")]


def test_movielens_100k_read_from_its_folder(tmp_path, monkeypatch, offline):
    rows, fold, titles = _tiny_100k()
    _publish(monkeypatch, _fetchers._MOVIELENS, "100k", shape=(60, None, None))
    _write_100k(tmp_path / "movielens-100k", rows, fold, titles)
    bunch = fetch_movielens("100k", data_home=tmp_path)
    _check_100k(bunch, rows, fold, titles, tmp_path / "movielens-100k")
    X, y = fetch_movielens(data_home=str(tmp_path), return_X_y=True)
    np.testing.assert_array_equal(X, rows[:, :2])
    np.testing.assert_array_equal(y, rows[:, 2])


def test_movielens_files_directly_in_data_home(tmp_path, monkeypatch, offline):
    # data_home may be the release's folder itself (the examples' DATA argument).
    rows, fold, titles = _tiny_100k(seed=1)
    _publish(monkeypatch, _fetchers._MOVIELENS, "100k", shape=(60, None, None))
    _write_100k(tmp_path, rows, fold, titles)
    _check_100k(fetch_movielens(data_home=tmp_path), rows, fold, titles, tmp_path)


def test_movielens_1m_and_latest_small_layouts(tmp_path, monkeypatch, offline):
    rows, _, titles = _tiny_100k(seed=2)
    _publish(monkeypatch, _fetchers._MOVIELENS, "1m", shape=(60, None, None))
    one_m = tmp_path / "movielens-1m"
    one_m.mkdir()
    (one_m / "ratings.dat").write_text(_lines(rows, "::"))
    (one_m / "movies.dat").write_text(
        "".join(f"{i}::{t}::Drama|War\n" for i, t in titles.items()), encoding="latin-1"
    )
    bunch = fetch_movielens("1m", data_home=tmp_path)
    np.testing.assert_array_equal(bunch.data, rows[:, :2])
    np.testing.assert_array_equal(bunch.timestamps, rows[:, 3])
    assert bunch.cv is None
    assert bunch.item_titles.tolist() == [titles[i] for i in bunch.item_ids]
    small = tmp_path / "movielens-latest-small"
    small.mkdir()
    halves = rows[:, 2] - 0.5
    (small / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n"
        + "".join(f"{u},{i},{r},{t}\n" for (u, i, _, t), r in zip(rows.tolist(), halves))
    )
    (small / "movies.csv").write_text(
        "movieId,title,genres\n" + "".join(f'{i},"{t}, The",Comedy\n' for i, t in titles.items()),
        encoding="utf-8",
    )
    bunch = fetch_movielens("latest-small", data_home=tmp_path)
    np.testing.assert_array_equal(bunch.target, halves)
    assert bunch.item_titles.tolist() == [f"{titles[i]}, The" for i in bunch.item_ids]


def test_explicit_data_home_overrides_skvi_data(tmp_path, monkeypatch, offline):
    rows_a, fold_a, titles = _tiny_100k(seed=3)
    rows_b, fold_b, _ = _tiny_100k(seed=4)
    _publish(monkeypatch, _fetchers._MOVIELENS, "100k", shape=(60, None, None))
    _write_100k(tmp_path / "env" / "movielens-100k", rows_a, fold_a, titles)
    _write_100k(tmp_path / "explicit" / "movielens-100k", rows_b, fold_b, titles)
    monkeypatch.setenv("SKVI_DATA", str(tmp_path / "env"))
    np.testing.assert_array_equal(fetch_movielens().target, rows_a[:, 2])
    np.testing.assert_array_equal(
        fetch_movielens(data_home=tmp_path / "explicit").target, rows_b[:, 2]
    )


def test_missing_data_without_download_names_url_and_folder(tmp_path, offline):
    with pytest.raises(DataNotFoundError) as info:
        fetch_movielens("1m", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert isinstance(info.value, OSError)
    assert "https://files.grouplens.org/datasets/movielens/ml-1m.zip" in message
    assert str(tmp_path / "movielens-1m") in message
    with pytest.raises(DataNotFoundError) as info:
        fetch_libsvm("rcv1.binary", subset="all", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    base = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
    assert base + "rcv1_train.binary.bz2" in message and base + "rcv1_test.binary.bz2" in message
    assert str(tmp_path / "rcv1-binary-libsvm") in message
    with pytest.raises(DataNotFoundError) as info:
        fetch_uci_bag_of_words("nips", data_home=tmp_path, download_if_missing=False)
    base = "https://archive.ics.uci.edu/ml/machine-learning-databases/bag-of-words/"
    assert base + "docword.nips.txt.gz" in str(info.value)
    assert base + "vocab.nips.txt" in str(info.value)
    assert str(tmp_path / "uci-bag-of-words") in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_offline_download_names_url_and_folder(tmp_path, monkeypatch):
    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(_download, "_urlopen", no_network)
    with pytest.raises(DataNotFoundError) as info:
        fetch_libsvm("w8a", data_home=tmp_path)
    message = str(info.value)
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/w8a " in message
    assert str(tmp_path / "w8a-libsvm") in message and "name resolution" in message
    with pytest.raises(DataNotFoundError, match="ml-100k.zip"):
        fetch_movielens(data_home=tmp_path)
    with pytest.raises(DataNotFoundError, match="ml-latest-small.zip.md5"):
        fetch_movielens("latest-small", data_home=tmp_path)
    assert list(tmp_path.iterdir()) == []  # no empty folder left behind


def _zip_release(path, member, files):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{member}/", "")
        for name, text in files.items():
            zf.writestr(f"{member}/{name}", text)
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_movielens_download_checks_the_checksum(tmp_path, monkeypatch):
    rows, fold, titles = _tiny_100k(seed=5)
    release = tmp_path / "release"
    _write_100k(release, rows, fold, titles)
    (release / "README").write_text("the release's readme\n")
    server = tmp_path / "server"
    server.mkdir()
    md5 = _zip_release(
        server / "ml-100k.zip",
        "ml-100k",
        {p.name: p.read_text(encoding="latin-1") for p in release.iterdir()},
    )
    _serve(monkeypatch, "MOVIELENS_URL", server)
    monkeypatch.setitem(_fetchers._MOVIELENS["100k"], "shape", (60, None, None))
    home = tmp_path / "home"
    # A checksum mismatch: an OSError, and nothing is kept.
    monkeypatch.setitem(_fetchers._MOVIELENS["100k"], "md5", "0e33842e24a9c977be4e0107933c0723")
    with pytest.raises(OSError, match="MD5") as info:
        fetch_movielens(data_home=home)
    assert not isinstance(info.value, DataNotFoundError)
    assert md5 in str(info.value) and "not kept" in str(info.value)
    assert not home.exists() or list(home.rglob("*")) == []
    # The right checksum: the archive's files are extracted into movielens-100k/.
    monkeypatch.setitem(_fetchers._MOVIELENS["100k"], "md5", md5)
    bunch = fetch_movielens(data_home=home)
    folder = home / "movielens-100k"
    _check_100k(bunch, rows, fold, titles, folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in release.iterdir())
    assert (folder / "README").read_text() == "the release's readme\n"
    # A release with fewer ratings than published is refused too.
    monkeypatch.setitem(_fetchers._MOVIELENS["100k"], "shape", (100_000, 943, 1682))
    with pytest.raises(OSError, match="has 60 ratings"):
        fetch_movielens(data_home=tmp_path / "other")


def test_movielens_latest_small_uses_the_published_checksum(tmp_path, monkeypatch):
    rows, _, titles = _tiny_100k(seed=6)
    server = tmp_path / "server"
    server.mkdir()
    files = {
        "ratings.csv": "userId,movieId,rating,timestamp\n" + _lines(rows, ","),
        "movies.csv": "movieId,title,genres\n"
        + "".join(f"{i},{t},Drama\n" for i, t in titles.items()),
    }
    md5 = _zip_release(server / "ml-latest-small.zip", "ml-latest-small", files)
    _serve(monkeypatch, "MOVIELENS_URL", server)
    (server / "ml-latest-small.zip.md5").write_text("0" * 32 + "  ml-latest-small.zip\n")
    with pytest.raises(OSError, match="MD5"):
        fetch_movielens("latest-small", data_home=tmp_path / "home")
    (server / "ml-latest-small.zip.md5").write_text(f"MD5 (ml-latest-small.zip) = {md5}\n")
    bunch = fetch_movielens("latest-small", data_home=tmp_path / "home")
    np.testing.assert_array_equal(bunch.data, rows[:, :2])
    assert (tmp_path / "home" / "movielens-latest-small" / "ratings.csv").is_file()


class _Response(io.BytesIO):
    """A response that announces more bytes than it sends."""

    headers = {"Content-Length": "1000"}


def test_truncated_download_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(_download, "_urlopen", lambda url, *a, **k: _Response(b"+1 1:1\n"))
    with pytest.raises(OSError, match="after 7 of 1000 bytes"):
        fetch_libsvm("a9a", data_home=tmp_path)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- LIBSVM
def _random_libsvm(path, seed, n, n_features, labels=(-1, 1), compress=None, drop_last=True):
    rng = np.random.RandomState(seed)
    X = (rng.rand(n, n_features) < 0.2) * rng.randint(1, 4, size=(n, n_features)).astype(float)
    if drop_last:
        X[:, -1] = 0  # as a9a.t lacks feature 123
    y = np.asarray(labels, dtype=float)[rng.randint(0, 2, size=n)]
    buffer = io.BytesIO()
    dump_svmlight_file(sp.csr_matrix(X), y, buffer, zero_based=False)
    data = buffer.getvalue()
    path.write_bytes(bz2.compress(data) if compress == "bz2" else data)
    return X, y


def test_libsvm_read_from_its_folder(tmp_path, monkeypatch, offline):
    _publish(monkeypatch, _fetchers._LIBSVM, "a9a", n_train=30, n_test=20)
    folder = tmp_path / "a9a-adult-libsvm"
    folder.mkdir()
    X_tr, y_tr = _random_libsvm(folder / "a9a", 0, 30, 123, drop_last=False)
    X_te, y_te = _random_libsvm(folder / "a9a.t", 1, 20, 123)
    train = fetch_libsvm("a9a", data_home=tmp_path)
    np.testing.assert_array_equal(train.data.toarray(), X_tr)
    np.testing.assert_array_equal(train.target, y_tr)
    assert train.data.indices.dtype == np.int32 and train.data.format == "csr"
    test = fetch_libsvm("a9a", subset="test", data_home=tmp_path)
    assert test.data.shape == (20, 123)  # the published width, not the file's
    np.testing.assert_array_equal(test.data.toarray(), X_te)
    X, y = fetch_libsvm("a9a", subset="all", data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X.toarray(), np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(y, np.concatenate([y_tr, y_te]))
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    assert train.target_names.tolist() == [-1.0, 1.0]
    assert train.filenames == [str(folder / "a9a")] and "Platt" in train.DESCR


def test_libsvm_compressed_or_not_and_files_in_data_home(tmp_path, monkeypatch, offline):
    _publish(monkeypatch, _fetchers._LIBSVM, "covtype.binary", n_train=25)
    _publish(monkeypatch, _fetchers._LIBSVM, "ijcnn1", n_test=15)
    # covtype is published as .bz2; a decompressed copy is read as well.
    X, y = _random_libsvm(tmp_path / "covtype.libsvm.binary", 2, 25, 54, labels=(1, 2))
    bunch = fetch_libsvm("covtype.binary", subset="all", data_home=tmp_path)
    np.testing.assert_array_equal(bunch.data.toarray(), X)
    np.testing.assert_array_equal(bunch.target, y)
    assert bunch.target_names.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="no test file for 'covtype.binary'"):
        fetch_libsvm("covtype.binary", subset="test", data_home=tmp_path)
    folder = tmp_path / "ijcnn1-libsvm"
    folder.mkdir()
    X, y = _random_libsvm(folder / "ijcnn1.t.bz2", 3, 15, 22, compress="bz2")
    np.testing.assert_array_equal(
        fetch_libsvm("ijcnn1", subset="test", data_home=tmp_path).data.toarray(), X
    )


def test_libsvm_download_checks_the_shape(tmp_path, monkeypatch):
    server = tmp_path / "server"
    server.mkdir()
    X_tr, y_tr = _random_libsvm(server / "rcv1_train.binary.bz2", 4, 40, 60, compress="bz2")
    X_te, y_te = _random_libsvm(server / "rcv1_test.binary.bz2", 5, 10, 60, compress="bz2")
    _serve(monkeypatch, "LIBSVM_URL", server)
    spec = _fetchers._LIBSVM["rcv1.binary"]
    monkeypatch.setitem(spec, "n_features", 60)
    monkeypatch.setitem(spec, "n_test", 10)
    home = tmp_path / "home"
    with pytest.raises(OSError, match="has 40 rows, not the published 20242") as info:
        fetch_libsvm("rcv1.binary", data_home=home)
    assert not isinstance(info.value, DataNotFoundError)
    assert not home.exists() or list(home.rglob("*")) == []
    monkeypatch.setitem(spec, "n_train", 40)
    bunch = fetch_libsvm("rcv1.binary", subset="all", data_home=home)
    ref, ref_y = load_svmlight_file(str(server / "rcv1_train.binary.bz2"), n_features=60)
    np.testing.assert_array_equal(bunch.data[:40].toarray(), ref.toarray())
    np.testing.assert_array_equal(bunch.data.toarray(), np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(bunch.target, np.concatenate([y_tr, y_te]))
    folder = home / "rcv1-binary-libsvm"
    assert sorted(p.name for p in folder.iterdir()) == [
        "rcv1_test.binary.bz2",
        "rcv1_train.binary.bz2",
    ]
    assert (folder / "rcv1_test.binary.bz2").read_bytes() == (
        server / "rcv1_test.binary.bz2"
    ).read_bytes()
    # Labels other than the published ones are refused.
    _random_libsvm(server / "real-sim.bz2", 6, 8, 30, labels=(0, 1), compress="bz2")
    monkeypatch.setitem(_fetchers._LIBSVM["real-sim"], "n_train", 8)
    with pytest.raises(OSError, match="labels other than"):
        fetch_libsvm("real-sim", data_home=home)


def test_bad_names_are_value_errors(tmp_path, offline):
    with pytest.raises(ValueError, match="variant must be one of"):
        fetch_movielens("25m", data_home=tmp_path)
    with pytest.raises(ValueError, match="name must be one of"):
        fetch_libsvm("a10a", data_home=tmp_path)
    with pytest.raises(ValueError, match="subset must be"):
        fetch_libsvm("a9a", subset="validation", data_home=tmp_path)
    with pytest.raises(ValueError, match="name must be one of"):
        fetch_uci_bag_of_words("reuters", data_home=tmp_path)


# --------------------------------------------------------- UCI bag of words
def _random_corpus(seed, n_docs=7, n_words=11):
    rng = np.random.RandomState(seed)
    counts = rng.poisson(0.6, size=(n_docs, n_words))
    counts[0, 0] = 3  # no empty corpus
    docs, words = np.nonzero(counts)
    docword = f"{n_docs}\n{n_words}\n{docs.size}\n" + "".join(
        f"{d + 1} {w + 1} {counts[d, w]}\n" for d, w in zip(docs, words)
    )
    vocab = [f"word{j}" for j in range(n_words)]
    return counts, docword, "\n".join(vocab) + "\n", vocab


def test_uci_bag_of_words_read_from_its_folder(tmp_path, monkeypatch, offline):
    counts, docword, vocab_text, vocab = _random_corpus(0)
    for name in ("enron", "nips"):
        _publish(monkeypatch, _fetchers._UCI, name, n_docs=7, n_words=11)
    folder = tmp_path / "uci-bag-of-words"
    folder.mkdir()
    with gzip.open(folder / "docword.enron.txt.gz", "wt") as fh:
        fh.write(docword)
    (folder / "vocab.enron.txt").write_text(vocab_text)
    bunch = fetch_uci_bag_of_words("enron", data_home=tmp_path)
    np.testing.assert_array_equal(bunch.data.toarray(), counts)
    assert sp.issparse(bunch.data) and bunch.data.format == "csr"
    assert bunch.feature_names.tolist() == vocab and bunch.feature_names.dtype == object
    assert "Newman" in bunch.DESCR
    # Uncompressed, directly in data_home.
    (tmp_path / "docword.nips.txt").write_text(docword)
    (tmp_path / "vocab.nips.txt").write_text(vocab_text)
    np.testing.assert_array_equal(
        fetch_uci_bag_of_words("nips", data_home=tmp_path).data.toarray(), counts
    )


def test_uci_bag_of_words_download_checks_the_shape(tmp_path, monkeypatch):
    counts, docword, vocab_text, vocab = _random_corpus(1)
    server = tmp_path / "server"
    server.mkdir()
    (server / "docword.kos.txt.gz").write_bytes(gzip.compress(docword.encode()))
    (server / "vocab.kos.txt").write_text(vocab_text)
    _serve(monkeypatch, "UCI_BAG_OF_WORDS_URL", server)
    home = tmp_path / "home"
    with pytest.raises(OSError, match="7 documents x 11 words, not the published 3430 x 6906"):
        fetch_uci_bag_of_words("kos", data_home=home)
    assert not home.exists() or list(home.rglob("*")) == []
    spec = _fetchers._UCI["kos"]
    monkeypatch.setitem(spec, "n_docs", 7)
    monkeypatch.setitem(spec, "n_words", 11)
    with pytest.raises(OSError, match="not the published 467714"):
        fetch_uci_bag_of_words("kos", data_home=home)
    monkeypatch.setitem(spec, "n_tokens", int(counts.sum()))
    bunch = fetch_uci_bag_of_words("kos", data_home=home)
    np.testing.assert_array_equal(bunch.data.toarray(), counts)
    assert bunch.feature_names.tolist() == vocab
    assert sorted(p.name for p in (home / "uci-bag-of-words").iterdir()) == [
        "docword.kos.txt.gz",
        "vocab.kos.txt",
    ]


# -------------------------------------------------------- the shared folder
def test_shared_movielens_100k_without_download(shared_data, offline):
    folder = shared_data("movielens-100k", "u.data").parent
    bunch = fetch_movielens("100k", data_home=folder.parent, download_if_missing=False)
    ref = np.loadtxt(folder / "u.data", dtype=np.int64)
    np.testing.assert_array_equal(bunch.data, ref[:, :2])
    np.testing.assert_array_equal(bunch.target, ref[:, 2])
    np.testing.assert_array_equal(bunch.timestamps, ref[:, 3])
    assert (bunch.user_ids.size, bunch.item_ids.size) == (943, 1682)
    assert bunch.item_titles[0] == "Toy Story (1995)"
    # The README's facts: the five test sets are disjoint and cover u.data,
    # and data[train] is uN.base row by row.
    tests = np.concatenate([test for _, test in bunch.cv])
    np.testing.assert_array_equal(np.sort(tests), np.arange(100_000))
    for k, (train, test) in enumerate(bunch.cv, start=1):
        base = np.loadtxt(folder / f"u{k}.base", dtype=np.int64)
        np.testing.assert_array_equal(bunch.data[train], base[:, :2])
        np.testing.assert_array_equal(bunch.target[train], base[:, 2])
        assert test.size == 20_000
    # The default data_home is the shared folder (SKVI_DATA or ../shared/data).
    np.testing.assert_array_equal(fetch_movielens(download_if_missing=False).data, bunch.data)


def test_shared_a9a_without_download(shared_data, offline):
    folder = shared_data("a9a-adult-libsvm", "a9a.t").parent
    for subset, files in (("train", ["a9a"]), ("test", ["a9a.t"])):
        bunch = fetch_libsvm(
            "a9a", subset=subset, data_home=folder.parent, download_if_missing=False
        )
        ref, ref_y = load_svmlight_file(str(folder / files[0]), n_features=123)
        assert (bunch.data != ref).nnz == 0 and bunch.data.shape == ref.shape
        np.testing.assert_array_equal(bunch.target, ref_y)
    X, y = fetch_libsvm("a9a", subset="all", return_X_y=True, download_if_missing=False)
    assert X.shape == (48_842, 123) and X.nnz == 451_592 + 225_731
    assert int((y > 0).sum()) == 7841 + 3846


# ------------------------------------------- files in data_home are checked too
# What a fetcher reads is held to the published shape wherever it came from:
# a file already in data_home that is not the published one is a ValueError
# naming it (a download of the wrong shape is an OSError, and not kept).
def test_movielens_files_in_data_home_have_the_releases_shape(tmp_path, offline):
    rows, _, titles = _tiny_100k(seed=7, n_users=30, n_items=30, n=500)
    one_m = tmp_path / "movielens-1m"
    one_m.mkdir()
    (one_m / "ratings.dat").write_text(_lines(rows, "::"))  # 500 ratings, not 1,000,209
    (one_m / "movies.dat").write_text("".join(f"{i}::{t}::Drama\n" for i, t in titles.items()))
    with pytest.raises(ValueError) as info:
        fetch_movielens("1m", data_home=tmp_path)
    message = str(info.value)
    assert str(one_m / "ratings.dat") in message
    assert "has 500 ratings" in message and "1000209 by 6040 users of 3706 movies" in message
    with pytest.raises(ValueError, match="has 500 ratings"):
        fetch_movielens("1m", data_home=tmp_path, return_X_y=True)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.__setitem__((3, 2), 6), "the rating 6.0, not one of the release's 1, 2, .. 5"),
        (lambda r: r.__setitem__((3, 2), 0), "the rating 0.0"),
        (lambda r: r.__setitem__((3, 0), 0), "the id 0"),
        (lambda r: r[:, :3], "no timestamps"),
    ],
)
def test_movielens_ratings_off_the_release_are_refused(
    tmp_path, monkeypatch, offline, change, message
):
    rows, fold, titles = _tiny_100k(seed=8)
    _publish(monkeypatch, _fetchers._MOVIELENS, "100k", shape=(60, None, None))
    changed = change(rows)
    rows = rows if changed is None else changed
    _write_100k(tmp_path / "movielens-100k", rows, fold, titles)
    with pytest.raises(ValueError, match=message) as info:
        fetch_movielens(data_home=tmp_path)
    assert str(tmp_path / "movielens-100k" / "u.data") in str(info.value)


def test_movielens_latest_small_is_held_to_half_stars(tmp_path, offline):
    small = tmp_path / "movielens-latest-small"
    small.mkdir()
    (small / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n1,1,4.0,964982703\n2,3,3.25,964981247\n"
    )
    (small / "movies.csv").write_text("movieId,title,genres\n1,A,Comedy\n3,B,Drama\n")
    with pytest.raises(ValueError, match="the rating 3.25, not one of the release's 0.5, 1"):
        fetch_movielens("latest-small", data_home=tmp_path)


def test_movielens_splits_with_huge_ids(tmp_path, monkeypatch, offline):
    # Ids up to int64's range: the pairs of the splits are matched exactly
    # (a key user * width + item overflowed and matched other pairs).
    rows, fold, titles = _tiny_100k(seed=9)
    rows[:, 0] += (rows[:, 0] % 2 == 0) * (2**32 - 1)  # users u and u + 2**32, u odd
    rows[:, 1] += 2**32 - 10  # width 2**32: (u + 2**32) * width == u * width mod 2**64
    titles = {i + 2**32 - 10: t for i, t in titles.items()}
    _publish(monkeypatch, _fetchers._MOVIELENS, "100k", shape=(60, None, None))
    _write_100k(tmp_path / "movielens-100k", rows, fold, titles)
    _check_100k(
        fetch_movielens(data_home=tmp_path), rows, fold, titles, tmp_path / "movielens-100k"
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        ("empty", "has 0 rows, not the published 30"),
        ("truncated", "has 17 rows, not the published 30"),
        ("0/1 labels", r"labels other than the published \[-1.0, 1.0\]"),
        ("wider", "n_features was set to 123, but input file contains 129 features"),
        ("cut bz2", "not a complete bzip2 file"),
    ],
)
def test_libsvm_files_in_data_home_have_the_published_shape(
    tmp_path, monkeypatch, offline, damage, message
):
    _publish(monkeypatch, _fetchers._LIBSVM, "a9a", n_train=30, n_test=20)
    folder = tmp_path / "a9a-adult-libsvm"
    folder.mkdir()
    name = "a9a.bz2" if damage == "cut bz2" else "a9a"
    labels, width = ((0, 1), 123) if damage == "0/1 labels" else ((-1, 1), 123)
    width = 130 if damage == "wider" else width
    _random_libsvm(folder / name, 10, 30, width, labels=labels, compress="bz2" * (name != "a9a"))
    path = folder / name
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:17]))
    elif damage == "cut bz2":
        path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match=message) as info:
        fetch_libsvm("a9a", data_home=tmp_path)
    assert str(path) in str(info.value)


def test_uci_files_in_data_home_have_the_published_shape(tmp_path, offline):
    _, docword, vocab_text, _ = _random_corpus(2)
    (tmp_path / "docword.kos.txt").write_text(docword)
    (tmp_path / "vocab.kos.txt").write_text(vocab_text)
    with pytest.raises(ValueError, match="7 documents x 11 words, not the published 3430 x 6906"):
        fetch_uci_bag_of_words("kos", data_home=tmp_path)


def test_a_download_that_fails_leaves_no_folder_it_created(tmp_path, monkeypatch):
    # data_home and the set's folder did not exist: neither is left behind,
    # whatever failed (the network, or the file's shape).
    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(_download, "_urlopen", no_network)
    home = tmp_path / "home" / "skvi_data"
    with pytest.raises(DataNotFoundError):
        fetch_libsvm("w8a", data_home=home)
    with pytest.raises(DataNotFoundError):
        fetch_uci_bag_of_words("kos", data_home=home)
    assert list(tmp_path.iterdir()) == []
    server = tmp_path / "server"
    server.mkdir()
    _random_libsvm(server / "w8a", 11, 5, 300)
    monkeypatch.undo()
    _serve(monkeypatch, "LIBSVM_URL", server)
    with pytest.raises(OSError, match="has 5 rows, not the published 49749"):
        fetch_libsvm("w8a", data_home=home)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server"]
    # A fetch that succeeds keeps what it created.
    _publish(monkeypatch, _fetchers._LIBSVM, "w8a", n_train=5)
    assert fetch_libsvm("w8a", data_home=home).data.shape == (5, 300)
    assert (home / "w8a-libsvm" / "w8a").is_file()


def test_a_download_that_is_not_readable_is_not_kept(tmp_path, monkeypatch):
    server = tmp_path / "server"
    server.mkdir()
    (server / "docword.kos.txt.gz").write_bytes(gzip.compress(b"3\n4\n2\n1 1 1\n")[:-8])
    (server / "vocab.kos.txt").write_text("a\nb\nc\nd\n")
    _serve(monkeypatch, "UCI_BAG_OF_WORDS_URL", server)
    with pytest.raises(OSError, match="is not valid .*not a complete gzip file.*not kept") as info:
        fetch_uci_bag_of_words("kos", data_home=tmp_path / "home")
    assert not isinstance(info.value, ValueError)
    assert not (tmp_path / "home").exists()
