"""Held-out evaluation of topic models, against independent references."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import digamma
from scipy.stats import hypergeom
from sklearn.decomposition import LatentDirichletAllocation

from skvi.metrics import (
    document_completion_perplexity,
    split_document_tokens,
    topic_coherence,
)


def _lda_corpus(n_topics=3, n_words=20, n_docs=40, alpha=0.5, seed=0):
    """Counts drawn from the LDA generative process, and a lambda near the truth.

    The corpus also holds an empty document and two one-token documents,
    which the perplexity must skip.
    """
    rng = np.random.RandomState(seed)
    beta = rng.dirichlet(np.full(n_words, 0.3), size=n_topics)
    theta = rng.dirichlet(np.full(n_topics, alpha), size=n_docs)
    lengths = rng.poisson(30, size=n_docs)
    lengths[:3] = [0, 1, 1]
    X = np.vstack([rng.multinomial(n, p) for n, p in zip(lengths, theta @ beta)])
    lam = 0.1 + 200.0 * beta + rng.gamma(1.0, 0.5, size=beta.shape)
    return X, lam


# ---------------------------------------------------------------------------
# split_document_tokens
# ---------------------------------------------------------------------------


def test_split_halves_sum_to_x_and_observed_size_is_floor_half():
    X, _ = _lda_corpus()
    X_obs, X_held = split_document_tokens(X, random_state=3)
    for part in (X_obs, X_held):
        assert sp.issparse(part) and part.format == "csr"
        assert part.dtype == np.float64 and part.shape == X.shape
        assert (part.data > 0).all()
    np.testing.assert_array_equal((X_obs + X_held).toarray(), X)
    n_d = X.sum(axis=1)
    np.testing.assert_array_equal(X_obs.sum(axis=1).A1, n_d // 2)
    np.testing.assert_array_equal(X_held.sum(axis=1).A1, n_d - n_d // 2)


def test_split_is_reproducible_and_input_format_independent():
    X, _ = _lda_corpus()
    a_obs, a_held = split_document_tokens(X, random_state=7)
    b_obs, b_held = split_document_tokens(sp.csr_matrix(X), random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(a_obs.toarray(), b_obs.toarray())
    np.testing.assert_array_equal(a_held.toarray(), b_held.toarray())
    c_obs, _ = split_document_tokens(X, random_state=8)
    assert (a_obs != c_obs).nnz > 0


def test_split_sums_duplicate_entries_of_non_canonical_input():
    # Row 0 holds word 2 three times over as (2 + 1) tokens; row 1 word 0.
    rows, cols, vals = [0, 0, 1, 0], [2, 2, 0, 1], [2.0, 1.0, 5.0, 4.0]
    X = sp.coo_matrix((vals, (rows, cols)), shape=(2, 3))
    X_obs, X_held = split_document_tokens(X, random_state=0)
    np.testing.assert_array_equal((X_obs + X_held).toarray(), [[0, 4, 3], [5, 0, 0]])
    np.testing.assert_array_equal(X_obs.sum(axis=1).A1, [3, 2])


def test_split_is_uniform_hypergeometric():
    # Given a document of n = 7 tokens with c tokens of word w, a uniform
    # shuffle puts Hypergeometric(7, c, 3) of them among the 3 observed.
    row = np.array([3, 1, 2, 1])
    n, n_obs = row.sum(), row.sum() // 2
    n_rows, n_seeds = 50, 200
    X = np.tile(row, (n_rows, 1))
    obs = np.vstack([split_document_tokens(X, random_state=s)[0].toarray() for s in range(n_seeds)])
    n_samples = n_rows * n_seeds
    for w, c in enumerate(row):
        ref = hypergeom(n, c, n_obs)
        # Monte-Carlo tolerance: 5 standard errors of the sample mean.
        se = math.sqrt(ref.var() / n_samples)
        assert abs(obs[:, w].mean() - ref.mean()) < 5 * se, (w, obs[:, w].mean(), ref.mean())
    # The whole distribution of word 0's observed count, 5 binomial SEs each.
    ref = hypergeom(n, row[0], n_obs)
    for k in range(row[0] + 1):
        p = ref.pmf(k)
        freq = np.mean(obs[:, 0] == k)
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n_samples), (k, freq, p)


# ---------------------------------------------------------------------------
# document_completion_perplexity
# ---------------------------------------------------------------------------


def _reference_perplexity(theta, lam, X, X_held):
    """Plain double loop over the held-out non-zeros of documents with >= 2 tokens."""
    X = np.asarray(X)
    held = sp.csr_matrix(X_held)
    total_ll, total_n = 0.0, 0.0
    for d in range(X.shape[0]):
        if X[d].sum() < 2:
            continue
        for j in range(held.indptr[d], held.indptr[d + 1]):
            w, count = held.indices[j], held.data[j]
            p = sum(theta[d, k] * lam[k, w] / lam[k].sum() for k in range(lam.shape[0]))
            total_ll += count * math.log(p)
            total_n += count
    return math.exp(-total_ll / total_n)


def _sklearn_lda(lam, alpha, tol):
    """scikit-learn's LDA with the topics set by hand, for its transform."""
    lda = LatentDirichletAllocation(
        n_components=lam.shape[0],
        doc_topic_prior=alpha,
        mean_change_tol=tol,
        max_doc_update_iter=10_000,
    )
    lda.components_ = lam.copy()
    lda.exp_dirichlet_component_ = np.exp(digamma(lam) - digamma(lam.sum(axis=1, keepdims=True)))
    lda.doc_topic_prior_ = alpha
    lda.n_features_in_ = lam.shape[1]
    return lda


@pytest.mark.parametrize("alpha", [0.1, 0.5, 2.0])
def test_perplexity_matches_sklearn_transform_reference(alpha):
    X, lam = _lda_corpus(alpha=alpha)
    seed, tol = 11, 1e-10
    X_obs, X_held = split_document_tokens(X, random_state=seed)
    theta = _sklearn_lda(lam, alpha, tol).transform(X_obs)
    expected = _reference_perplexity(theta, lam, X, X_held)

    model = SimpleNamespace(components_=lam, doc_topic_prior_=alpha)
    got = document_completion_perplexity(
        model, X, random_state=seed, max_doc_update_iter=10_000, mean_change_tol=tol
    )
    # Both E-steps run the same fixed-point updates from gamma = 1 and stop
    # once the mean |change| of gamma is below 1e-10; with gamma of order
    # 10, E[theta] then agrees to about 1e-10, far inside rtol = 1e-8.
    assert got == pytest.approx(expected, rel=1e-8)
    # And the default tolerance stays close to the converged value.
    loose = document_completion_perplexity(model, X, random_state=seed)
    assert loose == pytest.approx(expected, rel=1e-2)
    # A sparse input is the same corpus.
    assert document_completion_perplexity(
        model, sp.csr_matrix(X), random_state=seed, max_doc_update_iter=10_000, mean_change_tol=tol
    ) == pytest.approx(got, rel=1e-12)


def test_perplexity_of_a_fitted_sklearn_model():
    X, _ = _lda_corpus()
    lda = LatentDirichletAllocation(n_components=3, max_iter=5, random_state=0).fit(X)
    seed, tol = 2, 1e-10
    X_obs, X_held = split_document_tokens(X, random_state=seed)
    lda.set_params(mean_change_tol=tol, max_doc_update_iter=10_000)
    expected = _reference_perplexity(lda.transform(X_obs), lda.components_, X, X_held)
    got = document_completion_perplexity(
        lda, X, random_state=seed, max_doc_update_iter=10_000, mean_change_tol=tol
    )
    assert got == pytest.approx(expected, rel=1e-8)
    assert got < X.shape[1]  # better than a uniform distribution over words


def _reference_theta(X_obs, lam, alpha, n_iter=5_000):
    """Blei et al.'s per-document fixed point, one document at a time."""
    elog_beta = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
    X_obs = np.asarray(X_obs.todense())
    theta = np.empty((X_obs.shape[0], lam.shape[0]))
    for d, counts in enumerate(X_obs):
        gamma = np.ones(lam.shape[0])
        for _ in range(n_iter):
            log_phi = (digamma(gamma) - digamma(gamma.sum()))[:, None] + elog_beta
            phi = np.exp(log_phi - log_phi.max(axis=0))
            phi /= phi.sum(axis=0)
            gamma = alpha + phi @ counts
        theta[d] = gamma / gamma.sum()
    return theta


def test_perplexity_with_an_asymmetric_prior_matches_a_plain_e_step():
    X, lam = _lda_corpus(n_docs=15)
    alpha = np.array([0.05, 0.5, 3.0])
    X_obs, X_held = split_document_tokens(X, random_state=4)
    expected = _reference_perplexity(_reference_theta(X_obs, lam, alpha), lam, X, X_held)
    model = SimpleNamespace(components_=lam, doc_topic_prior_=alpha)
    got = document_completion_perplexity(
        model, X, random_state=4, max_doc_update_iter=10_000, mean_change_tol=1e-12
    )
    assert got == pytest.approx(expected, rel=1e-8)
    # The prior matters: a symmetric prior gives another number.
    sym = SimpleNamespace(components_=lam, doc_topic_prior_=1.0)
    assert document_completion_perplexity(sym, X, random_state=4) != pytest.approx(got, rel=1e-3)


def test_perplexity_with_one_topic_is_the_unigram_perplexity():
    # With one topic theta is irrelevant: every held-out token of word w
    # scores lambda_w / sum(lambda), in documents with at least 2 tokens.
    X, lam = _lda_corpus()
    lam = lam[:1]
    _, X_held = split_document_tokens(X, random_state=5)
    held = X_held.toarray()
    log_p = np.log(lam[0] / lam[0].sum())
    keep = X.sum(axis=1) >= 2
    expected = math.exp(-(held[keep] * log_p).sum() / held[keep].sum())
    model = SimpleNamespace(components_=lam, doc_topic_prior_=0.3)
    got = document_completion_perplexity(model, X, random_state=5)
    assert got == pytest.approx(expected, rel=1e-12)
    # The two one-token documents (rows 1 and 2) are left out.
    assert held[1:3].sum() == 2
    with_short = math.exp(-(held * log_p).sum() / held.sum())
    assert got != pytest.approx(with_short, rel=1e-6)


def test_perplexity_needs_a_document_with_two_tokens(small_model):
    X = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="no document with at least 2 tokens"):
        document_completion_perplexity(small_model, X, random_state=1)
    X[2, 2] = 1
    assert np.isfinite(document_completion_perplexity(small_model, X, random_state=1))


# ---------------------------------------------------------------------------
# topic_coherence
# ---------------------------------------------------------------------------


def _reference_coherence(weights, X, top_n, measure):
    """Brute force with Python sets of documents."""
    X = np.asarray(X)
    n_docs = X.shape[0]
    docs_of = {w: {d for d in range(n_docs) if X[d, w] > 0} for w in range(X.shape[1])}
    out = []
    for row in weights:
        top = sorted(range(len(row)), key=lambda w: (-row[w], w))[:top_n]
        scores = []
        for m in range(top_n):
            for l in range(m):
                joint = len(docs_of[top[m]] & docs_of[top[l]])
                if measure == "umass":
                    scores.append(math.log((joint + 1) / len(docs_of[top[l]])))
                elif joint == n_docs:
                    scores.append(1.0)
                else:
                    p_ij = joint / n_docs + 1e-12
                    p_i, p_j = len(docs_of[top[m]]) / n_docs, len(docs_of[top[l]]) / n_docs
                    scores.append(math.log(p_ij / (p_i * p_j)) / -math.log(p_ij))
        out.append(sum(scores) / len(scores))
    return np.array(out)


@pytest.fixture
def coherence_corpus():
    rng = np.random.RandomState(0)
    X = rng.poisson(0.5, size=(30, 12))
    X[:, 11] = 1  # a word in every document
    X[:, 10] = 0
    X[0, 10] = 3  # a word in one document only
    assert (X > 0).any(axis=0).all()
    weights = rng.gamma(1.0, size=(4, 12))
    weights[3, [10, 11]] = 100.0  # a topic led by the two extreme words
    return X, weights


@pytest.mark.parametrize("measure", ["umass", "npmi"])
@pytest.mark.parametrize("top_n", [2, 5, 12])
def test_coherence_matches_brute_force(coherence_corpus, measure, top_n):
    X, weights = coherence_corpus
    expected = _reference_coherence(weights, X, top_n, measure)
    got = topic_coherence(weights, X, top_n=top_n, measure=measure)
    assert got.shape == (weights.shape[0],)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    # A model object, a sparse corpus and binarised counts give the same.
    model = SimpleNamespace(components_=weights)
    np.testing.assert_allclose(
        topic_coherence(model, sp.csr_matrix(X), top_n=top_n, measure=measure), got, rtol=1e-12
    )
    np.testing.assert_allclose(
        topic_coherence(weights, (X > 0).astype(int), top_n=top_n, measure=measure),
        got,
        rtol=1e-12,
    )


def test_npmi_special_pairs():
    # Words 0 and 1 occur in every document; 2 and 3 never together.
    X = np.array([[1, 1, 1, 0], [1, 2, 0, 1], [3, 1, 1, 0], [1, 1, 0, 1]])
    got = topic_coherence(
        np.array([[4.0, 3.0, 1.0, 0.0], [0.0, 0.0, 2.0, 1.0]]), X, top_n=2, measure="npmi"
    )
    # Perfect co-occurrence scores 1; never co-occurring scores
    # log(eps / (1/2 * 1/2)) / -log(eps), just above -1.
    eps = 1e-12
    np.testing.assert_allclose(got, [1.0, math.log(eps / 0.25) / -math.log(eps)], rtol=1e-12)


def test_coherence_breaks_ties_by_lower_word_index():
    # D(0) = 1, D(1) = 3, D(3) = 2, D(0, 1) = 1, D(0, 3) = 0, D(1, 3) = 2.
    X = np.array([[1, 1, 0, 0], [0, 1, 0, 1], [0, 1, 0, 1], [0, 0, 1, 0]])
    # Words 0, 1 and 3 tie: the top two are 0 then 1.
    weights = np.array([[2.0, 2.0, 1.0, 2.0]])
    expected = math.log((1 + 1) / 1)  # log((D(1, 0) + 1) / D(0))
    assert topic_coherence(weights, X, top_n=2)[0] == pytest.approx(expected, rel=1e-14)
    # The other choices would differ: (1, 0) -> log(2/3), (0, 3) -> log(1).
    assert expected != pytest.approx(math.log(2 / 3))
    # Ties rank in index order for three words too: 0, 1, 3.
    three = np.mean([math.log(2 / 1), math.log(1 / 1), math.log(3 / 3)])
    assert topic_coherence(weights, X, top_n=3)[0] == pytest.approx(three, rel=1e-14)


@pytest.mark.parametrize("measure", ["umass", "npmi"])
def test_coherence_rejects_a_top_word_absent_from_the_corpus(measure):
    X = np.array([[1, 1, 0, 0, 1, 0], [0, 1, 1, 0, 0, 0]])
    weights = np.array([[3.0, 2.0, 1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 2.0, 5.0]])
    with pytest.raises(ValueError, match=r"Topic 1: top word 5 \(word index\) occurs in no"):
        topic_coherence(weights, X, top_n=3, measure=measure)


# ---------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------


@pytest.fixture
def small_model():
    return SimpleNamespace(
        components_=np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 3.0]]), doc_topic_prior_=0.5
    )


BAD_X = {
    "negative": (np.array([[1.0, -1.0, 2.0]]), "Negative values"),
    "nan": (np.array([[1.0, np.nan, 2.0]]), "NaN"),
    "inf": (np.array([[1.0, np.inf, 2.0]]), "infinity"),
    "n_words": (np.array([[1.0, 2.0]]), "has 2 words"),
}


@pytest.mark.parametrize("case", sorted(BAD_X))
def test_bad_x_raises(small_model, case):
    X, message = BAD_X[case]
    with pytest.raises(ValueError, match=message):
        document_completion_perplexity(small_model, X)
    with pytest.raises(ValueError, match=message):
        topic_coherence(small_model, X, top_n=2)
    if case != "n_words":
        with pytest.raises(ValueError, match=message):
            split_document_tokens(X)


def test_non_integer_counts_raise(small_model):
    X = np.array([[1.5, 2.0, 1.0]])
    for call in (
        lambda: split_document_tokens(X),
        lambda: document_completion_perplexity(small_model, X),
    ):
        with pytest.raises(ValueError, match="integer-valued"):
            call()


def test_bad_model_and_parameters_raise(small_model):
    X = np.array([[1, 2, 1], [2, 0, 3]])
    with pytest.raises(TypeError, match="components_ and doc_topic_prior_"):
        document_completion_perplexity(SimpleNamespace(components_=small_model.components_), X)
    for prior in (np.ones(3), -1.0):
        model = SimpleNamespace(components_=small_model.components_, doc_topic_prior_=prior)
        with pytest.raises(ValueError, match="doc_topic_prior_"):
            document_completion_perplexity(model, X)
    zero = SimpleNamespace(components_=np.array([[1.0, 0.0, 1.0]]), doc_topic_prior_=1.0)
    with pytest.raises(ValueError, match="positive variational Dirichlet"):
        document_completion_perplexity(zero, X)
    with pytest.raises(ValueError, match="max_doc_update_iter"):
        document_completion_perplexity(small_model, X, max_doc_update_iter=-1)
    with pytest.raises(ValueError, match="mean_change_tol"):
        document_completion_perplexity(small_model, X, mean_change_tol=float("nan"))
    for top_n in (1, 4, 2.0):
        with pytest.raises(ValueError, match="top_n"):
            topic_coherence(small_model, X, top_n=top_n)
    with pytest.raises(ValueError, match="measure"):
        topic_coherence(small_model, X, top_n=2, measure="c_v")


# ----------------------------------------------------------- regression metrics
def test_regression_metrics_match_scipy_and_sklearn():
    from scipy.stats import norm
    from sklearn.metrics import mean_squared_error

    from skvi.metrics import gaussian_interval_coverage, gaussian_nlpd, rmse

    rng = np.random.RandomState(0)
    y = rng.normal(size=500)
    mean = y + rng.normal(scale=0.5, size=500)
    std = rng.uniform(0.2, 2.0, size=500)
    assert rmse(y, mean) == pytest.approx(np.sqrt(mean_squared_error(y, mean)), rel=1e-12)
    assert gaussian_nlpd(y, mean, std) == pytest.approx(
        -np.mean(norm.logpdf(y, loc=mean, scale=std)), rel=1e-12
    )
    # Coverage of the central 80% interval: the same count from scipy's interval.
    lo, hi = norm.interval(0.8, loc=mean, scale=std)
    expected = np.mean((y >= lo) & (y <= hi))
    assert gaussian_interval_coverage(y, mean, std, level=0.8) == pytest.approx(expected)
    # Calibrated predictions cover about the stated share (binomial sd ~0.001).
    z = rng.normal(size=200_000)
    assert gaussian_interval_coverage(z, 0 * z, 1 + 0 * z, 0.95) == pytest.approx(0.95, abs=0.005)


@pytest.mark.parametrize(
    "args, message",
    [
        (([1.0, np.nan], [0.0, 0.0], [1.0, 1.0]), "finite"),
        (([1.0, 2.0], [0.0], [1.0, 1.0]), "inconsistent"),
        (([1.0], [0.0], [0.0]), "positive"),
        (([], [], []), "at least one"),
    ],
)
def test_gaussian_nlpd_rejects_bad_input(args, message):
    from skvi.metrics import gaussian_nlpd

    with pytest.raises(ValueError, match=message):
        gaussian_nlpd(*args)


def test_lda_scores_its_completion_as_the_lda_e_step_on_its_parameters():
    # skvi's LDA scores by its own heldout_word_probabilities; the same
    # parameters in a plain object are scored by the metric's E-step path.
    from skvi import SVILatentDirichletAllocation

    rng = np.random.RandomState(6)
    X = rng.poisson(1.5, size=(80, 12))
    lda = SVILatentDirichletAllocation(n_components=3, random_state=0).fit(X[:60])
    plain = SimpleNamespace(components_=lda.components_, doc_topic_prior_=lda.doc_topic_prior_)
    assert document_completion_perplexity(lda, X[60:], random_state=1) == pytest.approx(
        document_completion_perplexity(plain, X[60:], random_state=1), rel=1e-12
    )


# ---------------------------------------------------------------------------
# topic_coherence, measure='c_v'
# ---------------------------------------------------------------------------


def _reference_windows(texts, window_size, counting):
    """The set of words of every sliding window, walked one token at a time.

    ``'boolean'`` is the definition (Röder, Both and Hinneburg): the words
    of the window's tokens.  ``'gensim'`` is gensim's accumulator rule: the
    first window of a document holds its tokens' words; each step removes
    the word of the token that leaves and adds the word of the token that
    enters.
    """
    windows = []
    for doc in texts:
        if len(doc) <= window_size:
            windows.append(set(doc))
            continue
        current = set(doc[:window_size])
        windows.append(set(current))
        for k in range(1, len(doc) - window_size + 1):
            if counting == "boolean":
                current = set(doc[k : k + window_size])
            else:
                current.discard(doc[k - 1])
                current.add(doc[k + window_size - 1])
            windows.append(set(current))
    return windows


def _reference_c_v(topics, texts, window_size, counting):
    """c_v from its definition, in plain Python: NPMI context vectors and cosines."""
    windows = _reference_windows(texts, window_size, counting)
    n = len(windows)
    eps = 1e-12

    def npmi(a, b):
        p_ab = sum(1 for w in windows if a in w and b in w) / n
        p_a = sum(1 for w in windows if a in w) / n
        p_b = sum(1 for w in windows if b in w) / n
        return math.log((p_ab + eps) / (p_a * p_b)) / -math.log(p_ab + eps)

    scores = []
    for words in topics:
        vectors = [[npmi(a, b) for b in words] for a in words]
        total = [sum(v[j] for v in vectors) for j in range(len(words))]
        norm_total = math.sqrt(sum(t * t for t in total))
        cosines = [
            sum(x * t for x, t in zip(v, total)) / (math.sqrt(sum(x * x for x in v)) * norm_total)
            for v in vectors
        ]
        scores.append(sum(cosines) / len(cosines))
    return scores


C_V_VOCABULARY = ["apple", "bread", "cloud", "dog", "egg", "fog", "grape"]
C_V_TEXTS = [
    "apple bread apple cloud dog bread egg apple".split(),
    "cloud fog cloud cloud dog".split(),
    "grape egg bread".split(),
    [],
    "dog apple fog grape egg dog cloud bread fog apple dog".split(),
    "egg".split(),
    "fog dog fog cloud apple grape grape bread egg".split(),
]
C_V_WEIGHTS = np.array(
    [
        [9.0, 8.0, 1.0, 2.0, 7.0, 0.5, 3.0],
        [0.1, 0.2, 6.0, 5.0, 0.3, 7.0, 0.4],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0],  # ties go to the lower index
    ]
)


@pytest.mark.parametrize("counting", ["boolean", "gensim"])
@pytest.mark.parametrize("window_size", [2, 3, 4, 110])
@pytest.mark.parametrize("top_n", [2, 4, 7])
def test_c_v_matches_the_definition(counting, window_size, top_n):
    top = [sorted(range(7), key=lambda w: (-row[w], w))[:top_n] for row in C_V_WEIGHTS]
    expected = _reference_c_v(
        [[C_V_VOCABULARY[w] for w in t] for t in top], C_V_TEXTS, window_size, counting
    )
    got = topic_coherence(
        C_V_WEIGHTS,
        None,
        top_n=top_n,
        measure="c_v",
        texts=C_V_TEXTS,
        feature_names=C_V_VOCABULARY,
        window_size=window_size,
        window_counting=counting,
    )
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    assert np.all((got >= -1) & (got <= 1))


def test_c_v_window_countings_differ_only_on_repeats_within_a_window():
    # "apple" repeats two tokens apart: with windows of 3 gensim's rule drops
    # it from the window after the first "apple" leaves.
    texts = [["apple", "bread", "apple", "cloud", "dog"], ["dog", "cloud", "bread"]]
    args = dict(
        top_n=3, measure="c_v", texts=texts, feature_names=C_V_VOCABULARY[:4], window_size=3
    )
    weights = np.array([[4.0, 3.0, 2.0, 1.0]])
    assert _reference_windows(texts, 3, "gensim")[1] == {"bread", "cloud"}
    assert _reference_windows(texts, 3, "boolean")[1] == {"apple", "bread", "cloud"}
    gensim_rule = topic_coherence(weights, None, window_counting="gensim", **args)
    boolean = topic_coherence(weights, None, window_counting="boolean", **args)
    assert abs(gensim_rule[0] - boolean[0]) > 1e-3
    # With windows of 2 no word repeats inside a window: the two agree.
    args["window_size"] = 2
    np.testing.assert_array_equal(
        topic_coherence(weights, None, window_counting="gensim", **args),
        topic_coherence(weights, None, window_counting="boolean", **args),
    )


@pytest.fixture(scope="module")
def c_v_corpus():
    """load_topics_sample tokenised, its counts and a fitted LDA."""
    from sklearn.feature_extraction.text import CountVectorizer

    from skvi import SVILatentDirichletAllocation
    from skvi.datasets import load_topics_sample

    docs = load_topics_sample().data
    vectorizer = CountVectorizer(stop_words="english", min_df=3)
    counts = vectorizer.fit_transform(docs)
    analyze = vectorizer.build_analyzer()
    texts = [analyze(doc) for doc in docs]
    lda = SVILatentDirichletAllocation(
        n_components=5, learning_method="batch", max_iter=10, random_state=0
    ).fit(counts)
    return texts, counts, vectorizer.get_feature_names_out(), lda


@pytest.mark.parametrize("window_size, top_n", [(110, 10), (10, 10), (4, 15)])
def test_c_v_equals_gensim(c_v_corpus, window_size, top_n):
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    texts, counts, vocabulary, lda = c_v_corpus
    got = topic_coherence(
        lda,
        counts,
        top_n=top_n,
        measure="c_v",
        texts=texts,
        feature_names=vocabulary,
        window_size=window_size,
    )
    topics = lda.top_words(top_n, feature_names=vocabulary).tolist()
    # processes=1: gensim's parallel accumulator counts the windows of
    # documents shorter than the window differently (see the Notes).
    gensim_model = CoherenceModel(
        topics=topics,
        texts=texts,
        dictionary=Dictionary(texts),
        coherence="c_v",
        topn=top_n,
        window_size=window_size,
        processes=1,
    )
    np.testing.assert_allclose(got, gensim_model.get_coherence_per_topic(), rtol=0, atol=1e-6)
    assert got.mean() == pytest.approx(gensim_model.get_coherence(), abs=1e-6)


def test_c_v_reads_feature_names_in_(c_v_corpus):
    pd = pytest.importorskip("pandas")
    from skvi import SVILatentDirichletAllocation

    texts, counts, vocabulary, _ = c_v_corpus
    frame = pd.DataFrame(counts.toarray(), columns=vocabulary)
    lda = SVILatentDirichletAllocation(n_components=3, max_iter=5, random_state=0).fit(frame)
    expected = topic_coherence(
        lda.components_, None, measure="c_v", texts=texts, feature_names=vocabulary
    )
    np.testing.assert_array_equal(topic_coherence(lda, frame, measure="c_v", texts=texts), expected)
    # Texts as tuples or arrays of tokens read the same.
    as_arrays = [np.array(doc, dtype=str) for doc in texts]
    np.testing.assert_array_equal(
        topic_coherence(lda, None, measure="c_v", texts=(tuple(d) for d in as_arrays)), expected
    )


def test_c_v_counts_long_corpora_in_groups(monkeypatch):
    # Intersecting the words' runs in several groups of pairs changes nothing.
    from skvi.metrics import _windows

    args = dict(top_n=4, measure="c_v", texts=C_V_TEXTS, feature_names=C_V_VOCABULARY)
    whole = topic_coherence(C_V_WEIGHTS, None, window_size=3, **args)
    monkeypatch.setattr(_windows, "_MAX_QUERIES", 3)
    np.testing.assert_array_equal(topic_coherence(C_V_WEIGHTS, None, window_size=3, **args), whole)


def test_c_v_rejects_a_top_word_absent_from_the_texts():
    texts = [["apple", "bread"], ["bread", "cloud"]]
    weights = np.array([[3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match=r"Topic 1: top word 3 \(word index, token 'dog'\)"):
        topic_coherence(
            weights, None, top_n=2, measure="c_v", texts=texts, feature_names=C_V_VOCABULARY[:4]
        )
