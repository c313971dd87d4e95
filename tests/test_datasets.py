"""The embedded data sets load correctly and are fit for their purpose."""

import bz2
import collections
import gzip
import importlib.util
import os
import pathlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score

from skvi.datasets import load_topics_sample, read_libsvm

TOPICS_FILE = (
    pathlib.Path(__file__).resolve().parents[1] / "skvi" / "datasets" / "data" / "topics_sample.tsv"
)
THEMES = ["astronomy", "cooking", "football", "finance", "medicine", "computing"]


def _read_file():
    """(theme, text) pairs read with plain Python, independently of skvi."""
    lines = TOPICS_FILE.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and "BSD-3-Clause" in lines[0]
    return [tuple(line.split("\t")) for line in lines[1:]]


def test_file_has_30_documents_per_theme():
    rows = _read_file()
    assert all(len(row) == 2 for row in rows)  # exactly one tab per line
    counts = collections.Counter(theme for theme, _ in rows)
    assert counts == {theme: 30 for theme in THEMES}
    assert len({text for _, text in rows}) == 180  # no duplicates


def test_every_document_has_25_to_60_words():
    lengths = [len(text.split()) for _, text in _read_file()]
    assert min(lengths) >= 25 and max(lengths) <= 60


def test_loader_matches_the_file():
    rows = _read_file()
    bunch = load_topics_sample()
    assert bunch.target_names == THEMES
    assert bunch.data == [text for _, text in rows]
    assert bunch.target.dtype.kind == "i"
    assert bunch.target.shape == (180,)
    np.testing.assert_array_equal(bunch.target, [THEMES.index(theme) for theme, _ in rows])
    assert bunch.DESCR


def test_return_X_y():
    data, target = load_topics_sample(return_X_y=True)
    bunch = load_topics_sample()
    assert data == bunch.data
    np.testing.assert_array_equal(target, bunch.target)


def test_lda_recovers_the_themes():
    """Batch LDA finds the six themes in the sample.

    Batch variational LDA from a random start commits every short document
    to one topic in its first E-step; words that occur in a single document
    then hold it there, so single fits often end in a local optimum that
    merges two themes and splits another.  The vectoriser therefore drops
    words seen in only one document (``min_df=2``, as in
    ``examples/lda_topics.py``) and the fit with the best variational bound
    of five restarts is kept.  The bound and the agreement with the themes
    go together (correlation 0.9 over 30 seeds), so this checks the data,
    not luck.  Measured with scikit-learn 1.9: ARI 0.56 for seeds 0-4 (0.51
    to 0.68 for five other blocks of five seeds; single fits 0.26 to 0.68);
    with all words and single fits, ARI 0.02 to 0.22.
    """
    texts, y = load_topics_sample(return_X_y=True)
    X = CountVectorizer(stop_words="english", min_df=2).fit_transform(texts)
    best = max(
        (
            LatentDirichletAllocation(
                n_components=6,
                random_state=seed,
                learning_method="batch",
                max_iter=50,
            ).fit(X)
            for seed in range(5)
        ),
        key=lambda lda: lda.score(X),
    )
    ari = adjusted_rand_score(y, best.transform(X).argmax(axis=1))
    assert ari > 0.4, ari


def test_get_data_home_order(tmp_path, monkeypatch):
    import skvi.datasets as ds
    from skvi.datasets import get_data_home

    assert get_data_home(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("SKVI_DATA", str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"
    monkeypatch.delenv("SKVI_DATA")
    # An installed copy (no checkout around it) falls back to ~/skvi_data.
    fake = tmp_path / "site" / "pkgs" / "skvi" / "datasets" / "__init__.py"
    monkeypatch.setattr(ds, "__file__", str(fake))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == tmp_path / "home" / "skvi_data"
    # A source checkout with shared/data beside it uses that folder.
    checkout = tmp_path / "work" / "repo"
    (checkout / "skvi").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    (tmp_path / "work" / "shared" / "data").mkdir(parents=True)
    monkeypatch.setattr(ds, "__file__", str(checkout / "skvi" / "datasets" / "__init__.py"))
    assert get_data_home() == (tmp_path / "work" / "shared" / "data").resolve()


# ---------------------------------------------------------------- read_libsvm
# A hand-written LIBSVM file: a comment, 1-based indices, a row without
# features, labels that are not +-1, values with exponents and signs.
LIBSVM_TEXT = """# written by hand for skvi's tests
+1 1:0.5 3:2 7:-1.25
-1 2:1e-3
2 # a row without features
0 1:1 2:1 3:1 4:1 5:1 6:1 7:1
"""
LIBSVM_X = np.array(
    [
        [0.5, 0.0, 2.0, 0.0, 0.0, 0.0, -1.25],
        [0.0, 1e-3, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    ]
)
LIBSVM_Y = np.array([1.0, -1.0, 2.0, 0.0])


def _check_csr(X):
    assert sp.issparse(X) and X.format == "csr"
    assert X.dtype == np.float64
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32


def test_read_libsvm_hand_written_file(tmp_path):
    path = tmp_path / "toy.libsvm"
    path.write_text(LIBSVM_TEXT)
    X, y = read_libsvm(path)
    _check_csr(X)
    np.testing.assert_array_equal(X.toarray(), LIBSVM_X)
    np.testing.assert_array_equal(y, LIBSVM_Y)
    assert y.dtype == np.float64
    X, _ = read_libsvm(str(path), n_features=10)  # str paths too; padded columns
    np.testing.assert_array_equal(X.toarray(), np.hstack([LIBSVM_X, np.zeros((4, 3))]))
    with pytest.raises(ValueError):  # fewer columns than the file uses
        read_libsvm(path, n_features=5)


def test_read_libsvm_zero_based_file(tmp_path):
    # An index 0 marks the file as 0-based (scikit-learn's zero_based="auto").
    path = tmp_path / "zero.libsvm"
    path.write_text("1 0:3 2:4\n0 1:5\n")
    X, y = read_libsvm(path)
    np.testing.assert_array_equal(X.toarray(), [[3.0, 0.0, 4.0], [0.0, 5.0, 0.0]])
    np.testing.assert_array_equal(y, [1.0, 0.0])


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open)])
def test_read_libsvm_compressed(tmp_path, suffix, opener):
    path = tmp_path / ("toy.libsvm" + suffix)
    with opener(path, "wt") as fh:
        fh.write(LIBSVM_TEXT)
    X, y = read_libsvm(path)
    _check_csr(X)
    np.testing.assert_array_equal(X.toarray(), LIBSVM_X)
    np.testing.assert_array_equal(y, LIBSVM_Y)


def test_read_libsvm_equals_load_svmlight_file(tmp_path):
    rng = np.random.RandomState(0)
    # Three decimals: the values survive dump_svmlight_file's "%.16g" exactly.
    dense = np.round(rng.randn(60, 25), 3) * (rng.rand(60, 25) < 0.2)
    labels = rng.randint(0, 2, size=60) * 2.0 - 1.0
    path = tmp_path / "random.svm"
    dump_svmlight_file(sp.csr_matrix(dense), labels, str(path), zero_based=False)
    X, y = read_libsvm(path, n_features=25)
    ref_X, ref_y = load_svmlight_file(str(path), n_features=25)
    _check_csr(X)
    np.testing.assert_array_equal(X.toarray(), ref_X.toarray())
    np.testing.assert_array_equal(X.toarray(), dense)
    np.testing.assert_array_equal(y, ref_y)
    # The point of 32-bit indices: scikit-learn's own estimators take X as is.
    LogisticRegression(max_iter=200).fit(X, y > 0)


def test_read_libsvm_missing_file_says_where_data_live(tmp_path):
    path = tmp_path / "nowhere" / "a9a"
    with pytest.raises(FileNotFoundError) as info:
        read_libsvm(path)
    message = str(info.value)
    assert message.startswith(f"{path} not found")
    assert "SKVI_DATA" in message and "data_home" in message


def _benchmark_load_data(monkeypatch):
    """``load_data`` of benchmarks/glm.py (which reads a9a and a9a.t)."""
    bench = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))  # it imports its sibling _common
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, "1"))  # restored afterwards
    had_common = "_common" in sys.modules
    spec = importlib.util.spec_from_file_location("_skvi_benchmark_glm", bench / "glm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not had_common:
        sys.modules.pop("_common", None)
    return module.load_data, module.N_FEATURES


def _same_as_benchmark(folder, monkeypatch):
    load_data, n_features = _benchmark_load_data(monkeypatch)
    bench = load_data(str(folder))
    for name, (X_ref, y_ref) in zip(("a9a", "a9a.t"), (bench[:2], bench[2:])):
        X, y = read_libsvm(folder / name, n_features=n_features)
        for attr in ("data", "indices", "indptr"):
            got, ref = getattr(X, attr), getattr(X_ref, attr)
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref)
        assert X.shape == X_ref.shape
        np.testing.assert_array_equal((y > 0).astype(np.int64), y_ref)


def test_read_libsvm_equals_the_glm_benchmark_reading(tmp_path, monkeypatch):
    from skvi.datasets import _fetchers

    # Small stand-ins for a9a and a9a.t, published for this test (the
    # benchmark reads them by fetch_libsvm, which checks the published
    # numbers of rows); the test file lacks the last feature.
    monkeypatch.setitem(_fetchers._LIBSVM["a9a"], "n_train", 2)
    monkeypatch.setitem(_fetchers._LIBSVM["a9a"], "n_test", 3)
    (tmp_path / "a9a").write_text("-1 3:1 11:1 123:1\n+1 1:1 122:1\n")
    (tmp_path / "a9a.t").write_text("+1 2:1 5:1\n-1 7:1\n-1 122:1\n")
    _same_as_benchmark(tmp_path, monkeypatch)


def test_read_libsvm_a9a_equals_the_glm_benchmark_reading(shared_data, monkeypatch):
    folder = shared_data("a9a-adult-libsvm", "a9a.t").parent
    _same_as_benchmark(folder, monkeypatch)
    X, y = read_libsvm(folder / "a9a")
    assert X.shape == (32561, 123) and X.nnz == 451_592 and int((y > 0).sum()) == 7841


def test_data_tests_find_their_files_beside_the_checkout(monkeypatch):
    """In the project's layout (CI's too) the tests that read real data do not skip.

    With ``shared/data`` beside the checkout and ``SKVI_DATA`` unset,
    :func:`get_data_home` is that folder, and it holds every file that a
    test asks the ``shared_data`` fixture for (found in the tests' source),
    so the README's test command runs them all.
    """
    import re

    import skvi.datasets
    from skvi.datasets import get_data_home

    checkout = pathlib.Path(skvi.datasets.__file__).resolve().parents[2]
    beside = checkout.parent / "shared" / "data"
    if not beside.is_dir():
        pytest.skip(f"the project's layout only: {beside} (shared/data beside the checkout)")
    monkeypatch.delenv("SKVI_DATA", raising=False)
    assert get_data_home() == beside
    tests = pathlib.Path(__file__).resolve().parent
    wanted = {
        match
        for source in tests.glob("test_*.py")
        for match in re.findall(r'shared_data\(\s*"([^"]+)",\s*"([^"]+)"\s*\)', source.read_text())
    }
    assert len(wanted) >= 5, wanted  # the expression still finds the fixture's uses
    missing = [
        folder + "/" + name for folder, name in wanted if not (beside / folder / name).exists()
    ]
    assert missing == []
