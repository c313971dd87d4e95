"""The format readers of skvi.datasets against independent parsers."""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from skvi.datasets import read_ldac, read_movielens, read_uci_bag_of_words


def _ratings(rng, n=50):
    return rng.randint(1, 20, size=n), rng.randint(1, 30, size=n), rng.randint(1, 6, size=n)


@pytest.mark.parametrize("layout", ["u.data", "ratings.dat", "ratings.csv", "ratings.csv.gz"])
def test_read_movielens_layouts(tmp_path, layout):
    rng = np.random.RandomState(0)
    users, items, stars = _ratings(rng)
    stamps = rng.randint(8e8, 9e8, size=users.size)
    if layout == "u.data":
        text = "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in zip(users, items, stars, stamps))
    elif layout == "ratings.dat":
        text = "".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in zip(users, items, stars, stamps))
    else:
        text = "userId,movieId,rating,timestamp\n" + "".join(
            f"{u},{i},{r}.5,{t}\n" for u, i, r, t in zip(users, items, stars, stamps)
        )
    path = tmp_path / layout
    if layout.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    X, y = read_movielens(path)
    np.testing.assert_array_equal(X, np.column_stack([users, items]))
    np.testing.assert_array_equal(y, stars + (0.5 if "csv" in layout else 0.0))


def test_read_movielens_100k_equals_loadtxt(shared_data):
    path = shared_data("movielens-100k", "u.data")
    X, y = read_movielens(path)
    ref = np.loadtxt(path, dtype=np.int64, delimiter="\t")
    np.testing.assert_array_equal(X, ref[:, :2])
    np.testing.assert_array_equal(y, ref[:, 2])
    assert len(np.unique(X[:, 0])) == 943 and len(np.unique(X[:, 1])) == 1682


def test_read_ldac_equals_the_svmlight_reading(tmp_path):
    # An lda-c line "M w:c ..." is an svmlight line with label M and
    # zero-based indices: scikit-learn's reader is the reference.
    rng = np.random.RandomState(1)
    lines = []
    for _ in range(30):
        words = np.sort(rng.choice(40, size=rng.randint(1, 8), replace=False))
        lines.append(f"{words.size} " + " ".join(f"{w}:{rng.randint(1, 9)}" for w in words))
    path = tmp_path / "corpus.ldac"
    path.write_text("\n".join(lines) + "\n")
    X = read_ldac(path, n_words=40)
    ref, labels = load_svmlight_file(str(path), n_features=40, zero_based=True)
    np.testing.assert_array_equal(X.toarray(), ref.toarray())
    np.testing.assert_array_equal(np.diff(X.indptr), labels)


def test_read_ldac_reuters_equals_the_svmlight_reading(shared_data):
    path = shared_data("reuters-rcv1-lda-pkg", "reuters.ldac")
    X = read_ldac(path)
    ref, _ = load_svmlight_file(str(path), n_features=X.shape[1], zero_based=True)
    assert X.shape[0] == 395
    assert (X != ref).nnz == 0


def test_read_uci_bag_of_words_with_vocabulary(tmp_path):
    rng = np.random.RandomState(2)
    dense = rng.poisson(0.3, size=(6, 9))
    docs, words = np.nonzero(dense)
    body = "".join(f"{d + 1} {w + 1} {dense[d, w]}\n" for d, w in zip(docs, words))
    path = tmp_path / "docword.toy.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(f"6\n9\n{docs.size}\n" + body)
    vocab = tmp_path / "vocab.toy.txt"
    vocab.write_text("\n".join(f"w{j}" for j in range(9)) + "\n")
    X, vocabulary = read_uci_bag_of_words(path, vocab)
    np.testing.assert_array_equal(X.toarray(), dense)
    assert vocabulary == [f"w{j}" for j in range(9)] and sp.isspmatrix_csr(X)


def test_readers_reject_malformed_files(tmp_path):
    bad = tmp_path / "bad.ldac"
    bad.write_text("3 0:1 2:1\n")  # says 3 pairs, has 2
    with pytest.raises(ValueError, match="pairs"):
        read_ldac(bad)
    bad.write_text("1 7:1\n")
    with pytest.raises(ValueError, match="outside"):
        read_ldac(bad, n_words=5)
    docword = tmp_path / "docword.txt"
    docword.write_text("1\n2\n1\n1 3 1\n")  # word 3 > W = 2
    with pytest.raises(ValueError, match="outside"):
        read_uci_bag_of_words(docword)
    ratings = tmp_path / "u.data"
    ratings.write_text("1\t2\n")
    with pytest.raises(ValueError, match="MovieLens"):
        read_movielens(ratings)


def test_read_movielens_reads_a_release_folder(tmp_path):
    # The folder of a release: the ratings file inside it is read (u.data for
    # 100k, ratings.dat for 1M, ratings.csv for the later ones).
    rows = np.array([[1, 10, 4, 881250949], [2, 10, 5, 891717742], [2, 3, 1, 878887116]])
    (tmp_path / "u.data").write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    (tmp_path / "u.item").write_text("not ratings\n")
    X, y = read_movielens(tmp_path)
    np.testing.assert_array_equal(X, rows[:, :2])
    np.testing.assert_array_equal(y, rows[:, 2])
    one_m = tmp_path / "ml-1m"
    one_m.mkdir()
    (one_m / "ratings.dat").write_text("".join("::".join(map(str, r)) + "\n" for r in rows))
    X, y = read_movielens(str(one_m))
    np.testing.assert_array_equal(X, rows[:, :2])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="u.data, ratings.dat or ratings.csv"):
        read_movielens(empty)
