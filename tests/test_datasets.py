"""The embedded data sets load correctly and are fit for their purpose."""

import collections
import pathlib

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import adjusted_rand_score

from skvi.datasets import load_topics_sample

TOPICS_FILE = (
    pathlib.Path(__file__).resolve().parents[1]
    / "skvi" / "datasets" / "data" / "topics_sample.tsv"
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
    np.testing.assert_array_equal(
        bunch.target, [THEMES.index(theme) for theme, _ in rows]
    )
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
                n_components=6, random_state=seed, learning_method="batch",
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
