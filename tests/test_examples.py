"""Every script in ``examples/`` runs, from a foreign folder, on small data.

Each example runs as a subprocess (``sys.executable examples/X.py ...``)
with a temporary directory as its working directory, the Agg backend and one
BLAS thread, on arguments that keep it to a few seconds.  The numbers it
prints are checked against computations made here independently of skvi
(the fixed point of the textbook VMP updates, co-document counts, a
maximum-likelihood fit, line counts of the data file, ...), not against the
same code run twice.

An example that reads a data set from :func:`skvi.datasets.get_data_home`
is skipped, naming the missing folder, when the data are not there (the
lookup of the ``shared_data`` fixture of ``conftest.py``); its companion
test, which points ``SKVI_DATA`` at an empty folder and checks that the
script stops with a message naming the folder and ``SKVI_DATA``, always
runs.  Each test prints the example's wall time (``pytest -s`` or
``--durations=0`` shows them).
"""

import math
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import digamma, gammaln

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TIMEOUT = 300  # seconds; each run below takes a few


def run_example(name, *args, cwd, env=None):
    """Run ``examples/<name>`` as a script in ``cwd``; return the process.

    The environment is this one plus ``MPLBACKEND=Agg``, one BLAS thread
    and ``env``.
    """
    full_env = dict(
        os.environ,
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    full_env.update(env or {})
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *map(str, args)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    print(
        f"\n{name} {' '.join(map(str, args))}: {time.perf_counter() - start:.1f} s, "
        f"exit code {proc.returncode}"
    )
    return proc


def ok(proc):
    """The standard output of a run that must have succeeded."""
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def number(pattern, text):
    """The float of the first group of ``pattern`` in ``text``."""
    match = re.search(pattern, text, flags=re.MULTILINE)
    assert match, f"{pattern!r} not in the output:\n{text}"
    return float(match.group(1))


def _png(path, out):
    """The figure was written, unless the example said matplotlib is missing."""
    if "matplotlib is not installed" in out:
        return
    assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


def _missing_data_env(tmp_path):
    """An environment whose data home is an empty (absent) folder."""
    home = tmp_path / "no-data-here"
    return home, {"SKVI_DATA": str(home)}


def test_every_example_is_tested():
    """A new script in examples/ needs a test here."""
    tested = {
        "gaussian_gamma_schedules.py",
        "glm_convergence.py",
        "lda_topics.py",
        "paquet_figure2.py",
    }
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


# ---------------------------------------------------------- gaussian_gamma
def _vmp_normal_gamma(x, m0=0.0, b0=1e-3, a0=1e-3, c0=1e-3, n_iter=500):
    """ELBO at the fixed point of the mean-field VMP updates of one feature.

    ``x ~ N(mu, 1/gamma)``, ``mu ~ N(m0, 1/b0)``, ``gamma ~ Gamma(a0, c0)``
    (GaussianGammaVB's default priors); ``q(mu) = N(m, 1/b)``,
    ``q(gamma) = Gamma(a, c)``; the ELBO keeps every normalising constant.
    """
    n, sx = x.size, x.sum()
    m, b = x.mean(), 1.0
    a = a0 + n / 2
    for _ in range(n_iter):
        c = c0 + 0.5 * (np.sum((x - m) ** 2) + n / b)
        e_gamma = a / c
        b = b0 + n * e_gamma
        m = (b0 * m0 + e_gamma * sx) / b
    c = c0 + 0.5 * (np.sum((x - m) ** 2) + n / b)
    e_gamma, e_log_gamma = a / c, digamma(a) - np.log(c)
    log_lik = 0.5 * n * (e_log_gamma - np.log(2 * np.pi)) - 0.5 * e_gamma * (
        np.sum((x - m) ** 2) + n / b
    )
    log_p_mu = 0.5 * np.log(b0 / (2 * np.pi)) - 0.5 * b0 * ((m - m0) ** 2 + 1 / b)
    log_p_gamma = a0 * np.log(c0) - gammaln(a0) + (a0 - 1) * e_log_gamma - c0 * e_gamma
    entropy_mu = 0.5 * np.log(2 * np.pi * np.e / b)
    entropy_gamma = a - np.log(c) + gammaln(a) + (1 - a) * digamma(a)
    return log_lik + log_p_mu + log_p_gamma + entropy_mu + entropy_gamma


def test_gaussian_gamma_schedules(tmp_path):
    """Its batch ELBO is the textbook VMP fixed point on the same data."""
    out = ok(run_example("gaussian_gamma_schedules.py", cwd=tmp_path))
    rng = np.random.RandomState(0)  # the example's data
    X = rng.normal([0.0, 10.0, -3.0], [1.0, 5.0, 0.1], size=(50_000, 3))
    expected = sum(_vmp_normal_gamma(X[:, j]) for j in range(3))
    printed = number(r"^batch VMP: ELBO (-?\d+\.\d+) after \d+ passes", out)
    assert printed == pytest.approx(expected, abs=1e-3)  # printed to 3 decimals
    rows = re.findall(
        r"^(\w+)\(.*ELBO (-?\d+\.\d+), max \|E\[mu\] - batch\| = "
        r"(\d+\.\d+) posterior sd$",
        out,
        flags=re.MULTILINE,
    )
    assert [r[0] for r in rows] == ["RobbinsMonro", "WarmupRobbinsMonro", "AdaptiveRate"]
    for _, elbo, err in rows:
        # No fit beats the batch optimum of the same bound (print rounding aside).
        assert float(elbo) <= expected + 1e-3 and math.isfinite(float(err))


# ---------------------------------------------------------- glm_convergence
GLM_ARGS = ("--max-rows", 2000, "--passes", 2, "--batch-size", 500, "--output", "fig.png")


@pytest.mark.slow
def test_glm_convergence(tmp_path, shared_data):
    """Shape from the file; every ELBO below the maximised log-likelihood.

    An ELBO is at most the log evidence, itself at most the largest
    log-likelihood of any weights; the best run must beat the
    intercept-only model's log-likelihood, i.e. have learnt from the
    features.
    """
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import LogisticRegression

    path = shared_data("a9a-adult-libsvm", "a9a")
    out = ok(run_example("glm_convergence.py", *GLM_ARGS, cwd=tmp_path))
    X, y = load_svmlight_file(str(path), n_features=123)
    X, y = X[:2000], (y[:2000] > 0).astype(int)
    assert "a9a (its first 2000 rows): 2000 rows x 123 features; 2 passes" in out
    assert re.search(r"^run\s+pass 1\s+pass 2\s+rej$", out, flags=re.MULTILINE)
    rows = re.findall(
        r"^((?:batch )?(?:H-MC-SSVI|MC-SSVI|S-DSVI)(?: lr=[\d.]+)?)\s+(-?\d+\.\d) \[[\d.]+\]"
        r"\s+(-?\d+\.\d) \[[\d.]+\]\s+\d+$",
        out,
        flags=re.MULTILINE,
    )
    # H-MC-SSVI and S-DSVI at three rates, MC-SSVI; batch H-MC-SSVI x 3, MC-SSVI.
    assert len(rows) == 11, out
    elbos = np.array([[float(a), float(b)] for _, a, b in rows])
    assert np.all(np.isfinite(elbos))
    # Nearly unpenalised: within a nat of the supremum, far enough for the check.
    mle = LogisticRegression(C=1e4, max_iter=1000).fit(X.toarray(), y)
    p = mle.predict_proba(X.toarray())[:, 1]
    max_log_lik = np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
    rate = y.mean()
    null_log_lik = y.size * (rate * np.log(rate) + (1 - rate) * np.log1p(-rate))
    assert elbos.max() < max_log_lik
    assert elbos.max() > null_log_lik
    _png(tmp_path / "fig.png", out)


def test_glm_convergence_without_data(tmp_path):
    home, env = _missing_data_env(tmp_path)
    proc = run_example("glm_convergence.py", "--passes", 1, cwd=tmp_path, env=env)
    assert proc.returncode != 0
    assert str(home / "a9a-adult-libsvm") in proc.stderr
    assert "SKVI_DATA" in proc.stderr and "--data" in proc.stderr


# --------------------------------------------------------------- lda_topics
def _check_lda_output(out, X_train, X_test, vocab, n_topics):
    """Counts from the corpus; each topic's coherence recomputed from its words."""
    assert re.search(
        rf": {X_train.shape[0]} train / {X_test.shape[0]} test documents, "
        rf"{X_train.shape[1]} words, {int(X_train.sum())} training tokens$",
        out,
        flags=re.MULTILINE,
    ), out
    assert "topic   NPMI   UMass  top 10 words" in out
    topics = re.findall(
        r"^\s*(\d+)\s+(-?\d\.\d{3})\s+(-?\d+\.\d{3})  (.+)$", out, flags=re.MULTILINE
    )
    assert [int(t[0]) for t in topics] == list(range(n_topics))
    index = {word: i for i, word in enumerate(vocab)}
    docs = (sp.csc_matrix(X_train) > 0).astype(np.int64)
    n_docs = docs.shape[0]
    npmis, umasses = [], []
    for _, npmi, umass, words in topics:
        cols = [index[w] for w in words.split()]
        assert len(cols) == 10
        D = (docs[:, cols].T @ docs[:, cols]).toarray()  # D[i, j]: documents with both
        mine_umass, mine_npmi = [], []
        for m in range(10):
            for k in range(m):
                mine_umass.append(np.log((D[m, k] + 1) / D[k, k]))
                p_mk = D[m, k] / n_docs
                p_m, p_k = D[m, m] / n_docs, D[k, k] / n_docs
                mine_npmi.append(
                    1.0
                    if p_mk == 1
                    else np.log((p_mk + 1e-12) / (p_m * p_k)) / -np.log(p_mk + 1e-12)
                )
        assert float(umass) == pytest.approx(np.mean(mine_umass), abs=1.5e-3)
        assert float(npmi) == pytest.approx(np.mean(mine_npmi), abs=1.5e-3)
        npmis.append(np.mean(mine_npmi))
        umasses.append(np.mean(mine_umass))
    assert number(r"^mean\s+(-?\d\.\d{3})", out) == pytest.approx(np.mean(npmis), abs=1.5e-3)
    perplexity = number(
        r"held-out document-completion perplexity on "
        rf"{X_test.shape[0]} test documents: (\d+\.\d)$",
        out,
    )
    assert 1 < perplexity < 10 * X_train.shape[1]


def test_lda_topics_on_the_embedded_sample(tmp_path):
    """Without its corpus it says what to pass, then runs on the sample."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import train_test_split

    from skvi.datasets import load_topics_sample

    home, env = _missing_data_env(tmp_path)
    out = ok(run_example("lda_topics.py", "--plot", "curves.png", cwd=tmp_path, env=env))
    message = out.splitlines()[0]
    assert str(home / "20newsgroups-bydate") in message and "SKVI_DATA" in message
    sample = load_topics_sample()  # the preprocessing the module docstring states
    train, test = train_test_split(
        sample.data, test_size=0.2, random_state=0, stratify=sample.target
    )
    vectorizer = CountVectorizer(stop_words="english", min_df=2)
    X_train, X_test = vectorizer.fit_transform(train), vectorizer.transform(test)
    _check_lda_output(out, X_train, X_test, vectorizer.get_feature_names_out(), 6)
    assert "10 passes of minibatches of 16" in out
    _png(tmp_path / "curves.png", out)


def test_lda_topics_on_20_newsgroups(tmp_path, shared_data):
    folder = shared_data("20newsgroups-bydate", "train.npz").parent
    out = ok(
        run_example("lda_topics.py", "--max-docs", 300, "--passes", 1, "--plot", "", cwd=tmp_path)
    )
    assert f"corpus: 20newsgroups-bydate from {folder} (at most 300 train / test" in out
    X_train, X_test = (sp.load_npz(folder / f"{part}.npz").tocsr() for part in ("train", "test"))
    X_train, X_test = (X[np.arange(300) * X.shape[0] // 300] for X in (X_train, X_test))
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    _check_lda_output(out, X_train, X_test, vocab, 20)
    assert "1 passes of minibatches of 256 (2 steps)" in out


# ----------------------------------------------------------- paquet_figure2
def test_paquet_figure2(tmp_path, shared_data):
    """Counts from u.data; every ELBO below the Gaussian likelihood's ceiling.

    With noise precision 1 every rating's expected log-likelihood is at most
    ``-log(2 pi) / 2``, and the KL terms are non-negative; batch VB never
    lowers the bound, so its final value is its largest.
    """
    path = shared_data("movielens-100k", "u.data")
    n = 20_000
    out = ok(
        run_example(
            "paquet_figure2.py",
            "--iterations",
            3,
            "--batch-iterations",
            3,
            "--max-ratings",
            n,
            "--out",
            "fig2.png",
            cwd=tmp_path,
        )
    )
    lines = path.read_text().splitlines()[:n]
    users = {line.split("\t")[0] for line in lines}
    items = {line.split("\t")[1] for line in lines}
    assert (
        f"MovieLens from {path.parent}: {n} ratings (its first {n}), {len(users)} users, "
        f"{len(items)} items; 3 Alg. 1 iterations per run"
    ) in out
    header = re.search(
        r"^step safety\s+option\s+C\s+final ELBO\s+min ELBO\s+rejected$", out, flags=re.MULTILINE
    )
    assert header
    rows = re.findall(
        r"^\s+(on|off)\s+\((a|b)\) (sequential|joint)\s+(\d+)\s+(\S+)\s+(\S+)"
        r"\s+(\d+)$",
        out,
        flags=re.MULTILINE,
    )
    assert sorted((s, o, int(c)) for s, o, _, c, *_ in rows) == sorted(
        (s, o, c) for s in ("on", "off") for o in "ab" for c in (1, 2, 5, 10, 20)
    )
    ceiling = -0.5 * n * np.log(2 * np.pi)
    finals = np.array([float(r[4]) for r in rows])
    assert np.all(finals[np.isfinite(finals)] < ceiling)
    assert np.all(np.isfinite([float(r[4]) for r in rows if r[0] == "on"]))
    batch_final, batch_min = (
        float(v)
        for v in re.search(r"full batch VB\s+(\S+)\s+(\S+)\s+\(3 iterations\)", out).groups()
    )
    assert batch_min < batch_final < ceiling
    _png(tmp_path / "fig2.png", out)


def test_paquet_figure2_without_data(tmp_path):
    home, env = _missing_data_env(tmp_path)
    proc = run_example("paquet_figure2.py", "--iterations", 1, cwd=tmp_path, env=env)
    assert proc.returncode != 0
    assert str(home / "movielens-100k") in proc.stderr and "SKVI_DATA" in proc.stderr


def test_lda_topics_refuses_a_named_folder_without_its_corpus(tmp_path):
    # A folder the user names is not silently replaced by the sample.
    proc = run_example("lda_topics.py", str(tmp_path / "nowhere"), "--plot", "", cwd=tmp_path)
    assert proc.returncode != 0
    assert str(tmp_path / "nowhere") in proc.stderr and "--sample" in proc.stderr
