"""The format readers of skvi.datasets against independent parsers."""

import bz2
import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from skvi.datasets import read_ldac, read_libsvm, read_movielens, read_uci_bag_of_words


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


# ------------------------------------------------------------- bad files
# Every reader refuses a file it cannot read as its format with a ValueError
# that names the file (and the line, where there is one); nothing is read
# in another way.
def _write(path, text, compress=None):
    data = text.encode()
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def test_read_ldac_keeps_a_row_per_line_empty_documents_included(tmp_path):
    # lda-c's empty document is the line "0": a row of zeros wherever it is,
    # the trailing ones too (they were dropped, shifting nothing but the
    # count of documents against the corpus's titles).
    text = "0\n2 0:1 3:2\n0\n1 2:5\n0\n0\n"
    path = _write(tmp_path / "corpus.ldac", text)
    X = read_ldac(path, n_words=4)
    ref, labels = load_svmlight_file(str(path), n_features=4, zero_based=True)
    assert X.shape == (6, 4)
    np.testing.assert_array_equal(X.toarray(), ref.toarray())
    np.testing.assert_array_equal(np.diff(X.indptr), labels)
    assert read_ldac(_write(tmp_path / "empty.ldac", "0\n0\n")).shape == (2, 0)
    assert read_ldac(_write(tmp_path / "none.ldac", "")).shape == (0, 0)


@pytest.mark.parametrize("text, line", [("1 0:1\n\n1 2:1\n", 2), ("1 0:1\n1 2:1\n\n", 3)])
def test_read_ldac_refuses_a_blank_line(tmp_path, text, line):
    # A blank line is not a document (that is "0"): read as one, every later
    # row would be shifted against the corpus.
    path = _write(tmp_path / "blank.ldac", text)
    with pytest.raises(ValueError, match=rf"blank.ldac, line {line}: a blank line"):
        read_ldac(path)


@pytest.mark.parametrize(
    "line", ["2 0:1 3:-2", "1 3:nan", "1 3:inf", "1 3:1e400", "1 x:1", "1 1.5:1", "a 1:1", "1 3"]
)
def test_read_ldac_refuses_bad_counts_and_ids(tmp_path, line):
    path = _write(tmp_path / "bad.ldac", f"1 0:1\n{line}\n")
    with pytest.raises(ValueError, match=r"bad.ldac, line 2: "):
        read_ldac(path)


def test_read_ldac_refuses_huge_word_ids(tmp_path):
    path = _write(tmp_path / "huge.ldac", f"1 {2**31}:1\n")
    with pytest.raises(
        ValueError, match=r"huge.ldac, line 1: the word index 2147483648 is outside"
    ):
        read_ldac(path)
    with pytest.raises(ValueError, match="n_words"):
        read_ldac(path, n_words=-1)


def test_read_uci_bag_of_words_empty_corpus(tmp_path):
    # NNZ = 0: the header alone is a corpus of D empty documents.
    X, vocab = read_uci_bag_of_words(_write(tmp_path / "docword.empty.txt", "3\n4\n0\n"))
    assert X.shape == (3, 4) and X.nnz == 0 and vocab is None
    X, _ = read_uci_bag_of_words(_write(tmp_path / "docword.none.txt", "0\n0\n0\n"))
    assert X.shape == (0, 0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("2\n3\n1\n1 1 -4\n", "negative"),
        ("2\n3\n1\n1 1 nan\n", "not lines of three integers"),
        ("2\n3\n1\n1 1 2.5\n", "not lines of three integers"),
        ("2\n3\n1\n1 1\n", "not 'docID wordID count'"),
        ("2\n3\n2\n1 1 1\n", "expected 2 lines"),
        ("2\n3\n0\n1 1 1\n", "expected 0 lines"),
        ("-2\n3\n1\n1 1 1\n", "D"),
        (f"{10**12}\n3\n1\n1 1 1\n", "D"),  # refused before a 10**12-row matrix is made
        ("2\n3\n7\n1 1 1\n", "NNZ"),
        ("2\nthree\n1\n1 1 1\n", "header"),
        ("2\n", "header"),
        ("", "header"),
    ],
)
def test_read_uci_bag_of_words_refuses_bad_files(tmp_path, text, message):
    path = _write(tmp_path / "docword.bad.txt", text)
    with pytest.raises(ValueError, match=message) as info:
        read_uci_bag_of_words(path)
    assert str(path) in str(info.value)


def test_read_uci_vocabulary_refuses_a_blank_line(tmp_path):
    docword = _write(tmp_path / "docword.toy.txt", "1\n3\n1\n1 3 2\n")
    vocab = _write(tmp_path / "vocab.toy.txt", "a\n\nb\nc\n")  # 3 words, one line shifted
    with pytest.raises(ValueError, match=r"vocab.toy.txt, line 2: a blank line"):
        read_uci_bag_of_words(docword, vocab)
    _write(vocab, "a\nb\nc\n\n")  # trailing blank lines are no words
    assert read_uci_bag_of_words(docword, vocab)[1] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "line",
    [
        "1\t2\t\t881250949",  # no rating: the timestamp was read as it
        "1::2::::881250949",
        "1\t2\tnan\t881250949",
        "1\t2\tinf\t881250949",
        "1e30\t2\t4\t881250949",  # ids that are not exact int64 values
        f"{2**63}\t2\t4\t881250949",
        "1\t2.5\t4\t881250949",
        "1\tnan\t4\t881250949",
        "1\t2\t4\tnan",  # a timestamp that is no integer
        "1\t2\t4\t8.8e8",
        "1\t2\t4",  # a line shorter than the others
    ],
)
def test_read_movielens_refuses_bad_fields(tmp_path, line):
    # The bad line on every line (the field count then agrees from line to
    # line), or after a good one.
    good = "3\t4\t5\t881250949\n" if "::" not in line else "3::4::5::881250949\n"
    text = good + line + "\n" if line.count("\t") == 2 else (line + "\n") * 2
    path = _write(tmp_path / ("ratings.dat" if "::" in line else "u.data"), text)
    with pytest.raises(ValueError) as info:
        read_movielens(path)
    assert str(path) in str(info.value)


def test_read_movielens_ids_are_exact(tmp_path):
    # Ids beyond 2**53 are not floats: they are read exactly, as int64.
    big = 2**53 + 1
    path = _write(tmp_path / "u.data", f"{big}\t{2**63 - 1}\t4\t881250949\n")
    X, y = read_movielens(path)
    assert X.tolist() == [[big, 2**63 - 1]] and y.tolist() == [4.0]
    with pytest.raises(ValueError, match="no ratings"):
        read_movielens(_write(tmp_path / "ratings.csv", "userId,movieId,rating,timestamp\n"))


@pytest.mark.parametrize(
    "line", [f"1 {2**31}:1", f"1 {2**63}:1", "1 3:nan", "1 3:inf", "nan 3:1", "1 3:1 5", "1 -3:1"]
)
def test_read_libsvm_refuses_bad_lines(tmp_path, line):
    path = _write(tmp_path / "bad.svm", "-1 1:1\n" + line + "\n")
    with pytest.raises(ValueError) as info:
        read_libsvm(path)
    assert str(path) in str(info.value)


def _readers():
    """Each reader, with a small valid file of its format."""
    return {
        "read_ldac": (read_ldac, "corpus.ldac", "2 0:3 4:1\n1 2:2\n" * 200),
        "read_uci_bag_of_words": (
            read_uci_bag_of_words,
            "docword.toy.txt",
            "400\n3\n400\n" + "".join(f"{d} 2 1\n" for d in range(1, 401)),
        ),
        "read_movielens": (read_movielens, "u.data", "1\t2\t3\t881250949\n" * 400),
        "read_libsvm": (read_libsvm, "toy.svm", "+1 1:0.5 3:2\n-1 2:1\n" * 200),
    }


@pytest.mark.parametrize("reader", sorted(_readers()))
@pytest.mark.parametrize("compress", ["gz", "bz2"])
@pytest.mark.parametrize("damage", ["truncated", "not compressed", "garbage"])
def test_damaged_compressed_files_are_a_named_value_error(tmp_path, reader, compress, damage):
    read, name, text = _readers()[reader]
    path = _write(tmp_path / f"{name}.{compress}", text, compress)
    read(path)  # the whole file reads
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "not compressed":
        path.write_bytes(text.encode())
    else:
        path.write_bytes(data[:10] + bytes(range(256)) + data[10:])
    with pytest.raises(ValueError) as info:
        read(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_binary_files_are_a_named_value_error(tmp_path, reader):
    read, name, text = _readers()[reader]
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()))  # compressed, but not named .gz
    with pytest.raises(ValueError) as info:
        read(path)
    assert str(path) in str(info.value)
