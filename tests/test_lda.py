"""SVILatentDirichletAllocation against scikit-learn's LDA and the model itself."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import digamma
from sklearn.base import clone
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline

from skvi import SVILatentDirichletAllocation
from skvi.engine import executor as executor_module
from skvi.metrics import document_completion_perplexity
from skvi.models.lda import estep
from skvi.schedules import Constant, RobbinsMonro

K = 3


def lda_corpus(n_docs=150, n_words=40, alpha=0.3, eta=0.2, length=60, seed=0):
    """Counts drawn from LDA's generative process."""
    rng = np.random.RandomState(seed)
    topics = rng.dirichlet(np.full(n_words, eta), size=K)
    theta = rng.dirichlet(np.broadcast_to(alpha, (K,)), size=n_docs)
    lengths = rng.poisson(length, size=n_docs)
    X = np.vstack([rng.multinomial(n, p) for n, p in zip(lengths, theta @ topics)])
    return sp.csr_matrix(X.astype(np.float64)), topics, theta


def sklearn_with_topics(lam, doc_topic_prior, topic_word_prior, **kw):
    """A scikit-learn LDA holding the given topics (for its E-step and bound)."""
    sk = LatentDirichletAllocation(
        n_components=lam.shape[0],
        doc_topic_prior=doc_topic_prior,
        topic_word_prior=topic_word_prior,
        **kw,
    )
    sk.fit(sp.csr_matrix(np.ones((1, lam.shape[1]))))  # sets the fitted attributes
    sk.components_ = lam.copy()
    total = lam.sum(axis=1, keepdims=True)
    from scipy.special import digamma

    sk.exp_dirichlet_component_ = np.exp(digamma(lam) - digamma(total))
    return sk


# ---------------------------------------------------------------- batch mode
def test_batch_fixed_point_matches_scikit_learn():
    X, _, _ = lda_corpus(n_docs=60)
    common = dict(
        n_components=K,
        learning_method="batch",
        max_iter=150,
        mean_change_tol=1e-9,
        max_doc_update_iter=2000,
        random_state=3,
    )
    ours = SVILatentDirichletAllocation(**common).fit(X)
    ref = LatentDirichletAllocation(**common).fit(X)
    # Same initial topics (the same draws from random_state), then each
    # library's coordinate ascent to the fixed point.
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-6)
    assert ours.bound_ == pytest.approx(ref.bound_, rel=1e-7)


def test_batch_elbo_never_decreases_and_equals_scikit_learn_bound():
    X, _, _ = lda_corpus(seed=1)
    lda = SVILatentDirichletAllocation(
        n_components=K, max_iter=40, evaluate_every=1, perp_tol=0.0, random_state=0
    ).fit(X)
    bounds = np.array(lda.lower_bounds_)
    assert bounds.size == 40
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert bounds[-1] > bounds[0]
    # The ELBO of the fitted model as scikit-learn computes it from the
    # same topics (its own E-step and bound).
    sk = sklearn_with_topics(
        lda.components_, 1 / K, 1 / K, mean_change_tol=1e-10, max_doc_update_iter=5000
    )
    tight = clone(lda).set_params(mean_change_tol=1e-10, max_doc_update_iter=5000)
    tight.__dict__.update({k: v for k, v in vars(lda).items() if k.endswith("_")})
    tight._dtype, tight._exp_elog_beta_t = lda._dtype, lda._exp_elog_beta_t
    assert tight.score(X) == pytest.approx(sk.score(X), rel=1e-9)
    assert tight.perplexity(X) == pytest.approx(sk.perplexity(X), rel=1e-9)
    tight.total_samples = sk.total_samples = 1000
    assert tight.perplexity(X, sub_sampling=True) == pytest.approx(
        sk.perplexity(X, sub_sampling=True), rel=1e-9
    )
    np.testing.assert_allclose(tight.transform(X), sk.transform(X), rtol=1e-7, atol=1e-10)


def test_perplexity_stopping_rule():
    X, _, _ = lda_corpus(seed=2)
    lda = SVILatentDirichletAllocation(
        n_components=K, max_iter=50, evaluate_every=2, perp_tol=1e6, random_state=0
    ).fit(X)
    # Evaluated after passes 2 and 4; the second change is below perp_tol.
    assert lda.n_iter_ == 4 and len(lda.lower_bounds_) == 2 and lda.converged_


def test_default_fit_is_scikit_learn_default_fit():
    # max_iter=None is scikit-learn's 10 batch passes; the parameter reads
    # back unchanged after the fit.
    X, _, _ = lda_corpus(n_docs=60)
    ours = SVILatentDirichletAllocation(n_components=K, random_state=0).fit(X)
    ref = LatentDirichletAllocation(n_components=K, random_state=0).fit(X)
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-6)
    assert ours.bound_ == pytest.approx(ref.bound_, rel=1e-9)
    assert ours.n_iter_ == ref.n_iter_ == 10 and ours.get_params()["max_iter"] is None


# ---------------------------------------------------------------- online mode
def test_one_full_online_step_with_rho_one_equals_one_batch_step():
    X, _, _ = lda_corpus(seed=4)
    batch = SVILatentDirichletAllocation(n_components=K, max_iter=1, random_state=5).fit(X)
    online = SVILatentDirichletAllocation(
        n_components=K,
        learning_method="online",
        learning_rate=Constant(1.0),
        batch_size=X.shape[0],
        total_samples=X.shape[0],
        random_state=5,
    ).partial_fit(X)
    np.testing.assert_allclose(online.components_, batch.components_, rtol=1e-12)


def test_partial_fit_steps_equal_scikit_learn_partial_fit():
    X, _, _ = lda_corpus(n_docs=200, seed=6)
    params = dict(
        n_components=K, learning_offset=4.0, learning_decay=0.6, total_samples=1000, random_state=7
    )
    ours = SVILatentDirichletAllocation(**params)
    ref = LatentDirichletAllocation(**params)
    for batch in np.array_split(np.arange(200), 5):
        ours.partial_fit(X[batch])
        ref.partial_fit(X[batch])
    # Same initial topics and E-step draws; step t uses (4 + t) ** -0.6.
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-7)
    assert ours.n_batch_iter_ == 5 and ref.n_batch_iter_ == 6
    # A call with more than batch_size documents takes one step per batch,
    # as scikit-learn's does.
    ours.set_params(batch_size=30).partial_fit(X[:70])
    ref.set_params(batch_size=30).partial_fit(X[:70])
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-7)
    assert ours.n_batch_iter_ == 8


def test_total_samples_auto_is_streaming_bayes_with_the_initial_topics_as_n0_rows():
    # A stream of unknown length takes streaming variational Bayes' steps:
    # rho_t = |S| / (n0 + n_seen), N_t = n0 + n_seen, the random initial
    # topics counting as n0 = |S_1| (1 / rho_1 - 1) rows, rho_1 the
    # schedule's first step.  Done by hand on scikit-learn's partial_fit.
    X, _, _ = lda_corpus(n_docs=90, seed=8)
    ours = SVILatentDirichletAllocation(n_components=K, total_samples="auto", random_state=1)
    ref = LatentDirichletAllocation(n_components=K, random_state=1, learning_decay=1.0)
    eta = 1.0 / K
    n0 = 30 * (1.0 / (10.0 + 1) ** -0.7 - 1.0)
    seen, previous, init, weight = 0, None, None, 1.0
    for batch in np.array_split(np.arange(90), 3):
        seen += batch.size
        rho = batch.size / (n0 + seen)
        # What remains of the initial topics after the step, W_t, makes the
        # data part exactly the rows seen: N_t = seen / (1 - W_t) = n0 + seen.
        total = seen / (1.0 - weight * (1.0 - rho))
        assert total == pytest.approx(n0 + seen, rel=1e-12)
        if previous is not None:
            # N grows: the data part of the topics (lambda - eta less what
            # remains of the initial topics) grows with it before the step.
            data = ref.components_ - eta - weight * init
            ref.components_ = ref.components_ + (total / previous - 1.0) * data
            ref.exp_dirichlet_component_ = np.exp(
                digamma(ref.components_) - digamma(ref.components_.sum(axis=1, keepdims=True))
            )
        ours.partial_fit(X[batch])
        if init is None:
            # scikit-learn's initial topics: the same draw as ours.
            lam0 = np.random.RandomState(1).gamma(100.0, 0.01, (K, X.shape[1]))
            init = lam0 - eta
        # scikit-learn's step size is (offset + n_batch_iter_) ** -1 here.
        step = getattr(ref, "n_batch_iter_", 1)
        ref.set_params(total_samples=total, learning_offset=1.0 / rho - step)
        ref.partial_fit(X[batch])
        weight *= 1.0 - rho
        previous = total
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-7)
    assert ours.n_samples_seen_ == 90


def test_online_fit_approaches_batch_topics():
    X, topics, _ = lda_corpus(n_docs=600, seed=9)
    lda = SVILatentDirichletAllocation(
        n_components=K,
        learning_method="online",
        batch_size=50,
        max_iter=20,
        learning_offset=1.0,
        random_state=0,
    ).fit(X)
    est = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    # Each true topic is matched by a learned one (total variation < 0.1).
    tv = 0.5 * np.abs(topics[:, None, :] - est[None, :, :]).sum(axis=2)
    assert tv.min(axis=1).max() < 0.1


def test_online_defaults_stop_by_the_rule_at_the_batch_fit_quality():
    # learning_method='online' and nothing else: minibatches of 1024
    # documents, at most 50 passes; the rule stops the fit, without a
    # warning, as good on held-out documents as scikit-learn's default
    # (batch) fit.
    X, _, _ = lda_corpus(n_docs=4000, seed=30)
    train, test = X[:3000], X[3000:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lda = SVILatentDirichletAllocation(
            n_components=K, learning_method="online", random_state=0
        ).fit(train)
    assert lda.converged_ and 1 < lda.n_iter_ < 50
    assert lda.n_batch_iter_ <= 3 * lda.n_iter_  # ceil(3000 / 1024) steps a pass
    assert lda.get_params()["max_iter"] is None
    ref = LatentDirichletAllocation(n_components=K, random_state=0).fit(train)
    ours = document_completion_perplexity(lda, test, random_state=0)
    assert ours < 1.01 * document_completion_perplexity(ref, test, random_state=0)


@pytest.mark.slow
def test_online_defaults_on_20_newsgroups_reach_scikit_learn_batch_default(shared_data):
    # The fit the defaults are chosen for: with scikit-learn's minibatches
    # of 128 documents the online fit stops 11% above the batch fit's
    # held-out perplexity, and more passes do not close the gap.
    folder = shared_data("20newsgroups-bydate")
    train = sp.load_npz(folder / "train.npz").tocsr()
    test = sp.load_npz(folder / "test.npz").tocsr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lda = SVILatentDirichletAllocation(
            n_components=20, learning_method="online", random_state=0
        ).fit(train)
    assert lda.converged_ and lda.n_iter_ < 50
    ref = LatentDirichletAllocation(n_components=20, random_state=0).fit(train)
    ours = document_completion_perplexity(lda, test, random_state=0)
    assert ours < 1.01 * document_completion_perplexity(ref, test, random_state=0)


# ---------------------------------------------------------------- priors
def test_vector_doc_topic_prior_is_used_in_the_e_step():
    X, _, _ = lda_corpus(seed=10)
    alpha = np.array([0.05, 0.5, 2.0])
    lda = SVILatentDirichletAllocation(
        n_components=K,
        doc_topic_prior=alpha,
        mean_change_tol=1e-10,
        max_doc_update_iter=5000,
        random_state=0,
    ).fit(X)
    # An empty document keeps the prior: E[theta] = alpha / sum(alpha).
    empty = sp.csr_matrix((2, X.shape[1]))
    np.testing.assert_allclose(lda.transform(empty), np.tile(alpha / alpha.sum(), (2, 1)))
    np.testing.assert_allclose(lda.transform(empty, normalize=False), np.tile(alpha, (2, 1)))
    # One document of one word: the fixed point of gamma = alpha + n * phi
    # with phi_k proportional to exp(E[log theta_k]) * exp(E[log beta_kw]).
    from scipy.special import digamma

    w, n = 3, 4.0
    doc = sp.csr_matrix(([n], ([0], [w])), shape=(1, X.shape[1]))
    eb = lda.exp_dirichlet_component_[:, w]

    def residual(g):
        phi = np.exp(digamma(g) - digamma(g.sum())) * eb
        return alpha + n * phi / phi.sum() - g

    g = alpha + n / K
    for _ in range(10000):
        g = g + residual(g)
    np.testing.assert_allclose(lda.transform(doc, normalize=False)[0], g, rtol=1e-8)


def test_learned_priors_recover_the_generating_ones():
    alpha = np.array([0.1, 0.3, 0.9])
    X, _, _ = lda_corpus(n_docs=3000, n_words=50, alpha=alpha, eta=0.1, length=80, seed=11)
    lda = SVILatentDirichletAllocation(
        n_components=K, learn_priors=True, max_iter=100, random_state=0
    ).fit(X)
    learned = np.sort(lda.doc_topic_prior_)
    np.testing.assert_allclose(learned, alpha, rtol=0.2)
    assert lda.topic_word_prior_ == pytest.approx(0.1, rel=0.3)


# ---------------------------------------------------------------- input
@pytest.mark.parametrize("inference", ["vb", "cvb0"])
def test_sparse_formats_dense_and_n_jobs_agree(inference, monkeypatch):
    # Threads take blocks of any size here (the executor's MIN_BLOCK_NNZ
    # keeps small minibatches on one thread otherwise).
    monkeypatch.setattr(executor_module, "MIN_BLOCK_NNZ", 1)
    X, _, _ = lda_corpus(seed=12)
    kw = dict(n_components=K, max_iter=5, random_state=0, inference=inference)
    ref = SVILatentDirichletAllocation(**kw).fit(X).components_
    for data in (X.tocsc(), X.toarray()):
        np.testing.assert_allclose(
            SVILatentDirichletAllocation(**kw).fit(data).components_, ref, rtol=1e-12
        )
    cut, blocks = executor_module.cut, []
    monkeypatch.setattr(
        executor_module, "cut", lambda *a, **k: blocks.append(len(cut(*a, **k))) or cut(*a, **k)
    )
    threaded = SVILatentDirichletAllocation(n_jobs=2, **kw).fit(X).components_
    assert max(blocks) == 2  # the minibatches were split over both threads
    np.testing.assert_allclose(threaded, ref, rtol=1e-10)


# ------------------------------------------------------------------- CVB0
def cvb0_reference(X, lam, alpha, gamma, n_iter):
    """The zero-order collapsed update (Asuncion et al. 2009), token by token.

    Word by word in plain Python loops: with ``N_dk = gamma_dk - alpha_k``
    a document's expected topic counts, each word's responsibilities are
    ``phi_dwk  propto  E[beta_kw] (N_dk + alpha_k)``, then ``gamma_d =
    alpha + sum_w n_dw phi_dw``; ``n_iter`` sweeps per document.  Returns
    the final ``gamma`` and the expected topic-word counts
    ``sum_d n_dw phi_dwk`` of the last responsibilities (shape (K, V)).
    """
    X = sp.csr_matrix(X)
    n_topics = lam.shape[0]
    e_beta = lam / lam.sum(axis=1, keepdims=True)
    gamma = gamma.astype(np.float64).copy()
    counts = np.zeros_like(lam)
    for d in range(X.shape[0]):
        words = X.indices[X.indptr[d] : X.indptr[d + 1]]
        n = X.data[X.indptr[d] : X.indptr[d + 1]]
        g = list(gamma[d])
        for sweep in range(n_iter + 1):
            phi = []
            for w in words:
                weights = [e_beta[k, w] * g[k] for k in range(n_topics)]
                total = sum(weights)
                phi.append([x / total for x in weights])
            if sweep == n_iter:
                break
            g = [alpha[k] + sum(c * p[k] for c, p in zip(n, phi)) for k in range(n_topics)]
        gamma[d] = g
        for w, c, p in zip(words, n, phi):
            counts[:, w] += c * np.array(p)
    return gamma, counts


@pytest.mark.parametrize("compiled", [True, False])
def test_cvb0_e_step_is_the_token_update(compiled, monkeypatch):
    if not compiled:
        monkeypatch.setattr(estep, "_lda_fast", None)
    elif estep._lda_fast is None:
        pytest.skip("compiled kernel not built")
    X, _, _ = lda_corpus(n_docs=12, n_words=15, length=20, seed=4)
    rng = np.random.RandomState(0)
    lam = rng.gamma(2.0, 1.0, (K, 15))
    alpha = np.array([0.05, 0.3, 1.2])
    gamma0 = rng.gamma(100.0, 0.01, (12, K))
    ref_gamma, ref_counts = cvb0_reference(X, lam, alpha, gamma0, n_iter=7)
    e_beta_t = np.ascontiguousarray((lam / lam.sum(axis=1, keepdims=True)).T)
    gamma = gamma0.copy()
    sstats_t = np.zeros_like(e_beta_t)
    n_updates, _ = estep.e_step(X, e_beta_t, alpha, gamma, 7, 0.0, sstats_t, expected_theta=True)
    assert n_updates == 7 * 12
    np.testing.assert_allclose(gamma, ref_gamma, rtol=1e-12)
    np.testing.assert_allclose((sstats_t * e_beta_t).T, ref_counts, rtol=1e-12)


def test_cvb0_fit_and_transform_follow_the_token_update():
    # One batch pass: topics = eta + the expected topic-word counts of the
    # token update from the initial topics and gamma (the same draws from
    # random_state: the topics, then each document's gamma).
    X, _, _ = lda_corpus(n_docs=20, n_words=25, length=30, seed=5)
    kw = dict(
        n_components=K,
        doc_topic_prior=0.2,
        topic_word_prior=0.1,
        max_iter=1,
        inference="cvb0",
        mean_change_tol=0.0,
        max_doc_update_iter=6,
        random_state=2,
    )
    lda = SVILatentDirichletAllocation(**kw).fit(X)
    rs = np.random.RandomState(2)
    lam0 = rs.gamma(100.0, 0.01, (K, 25))
    gamma0 = rs.gamma(100.0, 0.01, (20, K))
    _, counts = cvb0_reference(X, lam0, np.full(K, 0.2), gamma0, n_iter=6)
    np.testing.assert_allclose(lda.components_, 0.1 + counts, rtol=1e-10)
    # transform folds documents in by the same update from gamma = 1.
    gamma, _ = cvb0_reference(X[:5], lda.components_, np.full(K, 0.2), np.ones((5, K)), n_iter=6)
    np.testing.assert_allclose(lda.transform(X[:5], normalize=False), gamma, rtol=1e-10)
    # score stays the mean-field ELBO of the fitted topics (scikit-learn's).
    sk = sklearn_with_topics(lda.components_, 0.2, 0.1, max_doc_update_iter=6, mean_change_tol=0.0)
    assert lda.score(X) == pytest.approx(sk.score(X), rel=1e-6)


def test_float32_stays_float32():
    X, _, _ = lda_corpus(seed=13)
    X32 = X.astype(np.float32)
    lda = SVILatentDirichletAllocation(n_components=K, max_iter=20, random_state=0).fit(X32)
    assert lda.components_.dtype == np.float32
    assert lda.transform(X32).dtype == np.float32
    ref = SVILatentDirichletAllocation(n_components=K, max_iter=20, random_state=0).fit(X)
    np.testing.assert_allclose(lda.components_, ref.components_, rtol=1e-3)


def test_mixed_dtypes_are_computed_in_the_fitted_dtype():
    X, _, _ = lda_corpus(seed=18)
    for fit_dtype, other in ((np.float64, np.float32), (np.float32, np.float64)):
        lda = SVILatentDirichletAllocation(
            n_components=K, random_state=0, mean_change_tol=1e-6
        ).fit(X.astype(fit_dtype))
        same = lda.transform(X.astype(fit_dtype))
        mixed = lda.transform(X.astype(other))
        assert mixed.dtype == fit_dtype
        # Integer-valued counts are exact in both dtypes.
        np.testing.assert_array_equal(mixed, same)
        lda.partial_fit(X[:10].astype(other))
        assert lda.components_.dtype == fit_dtype


@pytest.mark.parametrize(
    "bad, message",
    [
        (-1.0, "Negative values"),
        (np.nan, "NaN"),
        (np.inf, "infinity"),
    ],
)
def test_bad_counts_raise(bad, message):
    X = np.ones((4, 5))
    X[1, 2] = bad
    with pytest.raises(ValueError, match=message):
        SVILatentDirichletAllocation(n_components=2).fit(X)


def test_vocabulary_change_between_partial_fits_raises():
    lda = SVILatentDirichletAllocation(n_components=2).partial_fit(np.ones((3, 5)))
    with pytest.raises(ValueError, match="5 features"):
        lda.partial_fit(np.ones((3, 6)))


def test_fractional_counts_are_accepted_as_scikit_learn_does():
    # Non-integer counts (e.g. tf-idf weights) act as fractional tokens.
    X, _, _ = lda_corpus(seed=14)
    Xf = X * 0.37
    # scikit-learn's minibatches (its default batch_size): two steps.
    params = dict(n_components=K, batch_size=128, total_samples=500, random_state=0)
    ours = SVILatentDirichletAllocation(**params).partial_fit(Xf)
    ref = LatentDirichletAllocation(**params).partial_fit(Xf)
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-7)


# ---------------------------------------------------------------- sklearn API
def test_pipeline_on_raw_text_equals_the_steps_run_by_hand():
    docs = [
        "the star and the planet orbit the sun",
        "a planet orbits a star in the galaxy",
        "bake the bread with flour and butter",
        "butter flour sugar and eggs for the cake",
        "the telescope saw a new star",
        "knead the dough and bake the bread",
    ]
    pipe = Pipeline(
        [
            ("counts", CountVectorizer()),
            ("lda", SVILatentDirichletAllocation(n_components=2, random_state=0)),
        ]
    )
    theta = pipe.fit_transform(docs)
    counts = CountVectorizer().fit_transform(docs)
    by_hand = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(counts)
    np.testing.assert_allclose(theta, by_hand.transform(counts), rtol=1e-12)
    names = pipe.get_feature_names_out()
    assert list(names) == ["svilatentdirichletallocation0", "svilatentdirichletallocation1"]


def test_grid_search_matches_cross_val_score():
    X, _, _ = lda_corpus(n_docs=120, seed=15)
    est = SVILatentDirichletAllocation(
        n_components=K, learning_method="online", max_iter=3, random_state=0
    )
    grid = {
        "learning_decay": [0.55, 0.9],
        "learning_offset": [1.0, 20.0],
        "batch_size": [16, 64],
        "learning_rate": [None, RobbinsMonro(offset=5, decay=0.8)],
    }
    cv = KFold(3)
    search = GridSearchCV(est, grid, cv=cv).fit(X)
    for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
        ref = cross_val_score(clone(est).set_params(**params), X, cv=cv).mean()
        assert score == pytest.approx(ref, rel=1e-12)


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X, _, _ = lda_corpus(seed=16)
    lda = SVILatentDirichletAllocation(n_components=K, random_state=0).set_output(
        transform="pandas"
    )
    out = lda.fit(X).transform(X)
    assert isinstance(out, pd.DataFrame)
    np.testing.assert_allclose(out.to_numpy(), lda.set_output(transform="default").transform(X))


def test_no_warning_and_history_without_evaluation():
    X, _, _ = lda_corpus(seed=17)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lda = SVILatentDirichletAllocation(n_components=K, max_iter=3, random_state=0).fit(X)
    assert lda.lower_bounds_ == [] and lda.n_iter_ == 3


# ---------------------------------------------------------------- sample_weight
def _weighted_corpus(seed=20, n_docs=60):
    X, _, _ = lda_corpus(n_docs=n_docs, seed=seed)
    w = np.random.RandomState(seed).randint(0, 4, X.shape[0])  # weights in {0, 1, 2, 3}
    return X, w, X[np.repeat(np.arange(X.shape[0]), w)]


# The E-step iterated to tight convergence.  Each E-step starts every document
# from a random gamma, and a weighted fit draws one start per document where
# the fit on repeated documents draws one per copy (and then different ones
# for every later pass): the two fits share only their initial topics (the
# first draw from random_state).  A document's E-step converges to the same
# fixed point from these starts, so at mean_change_tol=1e-10 its gamma, and
# with it its statistics, agree with every copy's to ~1e-11 whatever the
# start; at the default 1e-3 the starts show in the topics (~10 % here).
TIGHT = dict(mean_change_tol=1e-10, max_doc_update_iter=5000)


@pytest.mark.parametrize("learn_priors, inference", [(False, "vb"), (True, "vb"), (False, "cvb0")])
def test_integer_sample_weight_equals_repeated_documents_in_batch_fit(
    learn_priors, inference, monkeypatch
):
    X, w, X_rep = _weighted_corpus()
    kw = dict(
        n_components=K,
        max_iter=8,
        evaluate_every=1,
        perp_tol=0.0,
        random_state=0,
        learn_priors=learn_priors,
        inference=inference,
        **TIGHT,
    )
    weighted = SVILatentDirichletAllocation(**kw).fit(X, sample_weight=w)
    repeated = SVILatentDirichletAllocation(**kw).fit(X_rep)
    # The topics' statistics, the ELBO of every pass (the documents' part
    # counted by weight) and the perplexity bound_ (words counted by weight).
    np.testing.assert_allclose(weighted.components_, repeated.components_, rtol=1e-6)
    np.testing.assert_allclose(weighted.lower_bounds_, repeated.lower_bounds_, rtol=1e-9)
    assert weighted.bound_ == pytest.approx(repeated.bound_, rel=1e-9)
    np.testing.assert_allclose(weighted.doc_topic_prior_, repeated.doc_topic_prior_, rtol=1e-6)
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    # The E-step's threads split the weighted documents too.
    monkeypatch.setattr(executor_module, "MIN_BLOCK_NNZ", 1)
    threaded = SVILatentDirichletAllocation(n_jobs=2, **kw).fit(X, sample_weight=w)
    np.testing.assert_allclose(threaded.components_, weighted.components_, rtol=1e-10)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_unit_and_zero_weights_are_the_unweighted_fit_of_the_kept_documents(method):
    # Weight-0 documents are dropped before anything is drawn, and weights
    # that are all 1 take the unweighted code path: bit for bit the same fit.
    X, w, _ = _weighted_corpus(seed=21)
    kw = dict(n_components=K, max_iter=3, batch_size=16, total_samples="auto", random_state=0)
    keep = np.minimum(w, 1)
    weighted = getattr(SVILatentDirichletAllocation(**kw), method)(X, sample_weight=keep)
    subset = getattr(SVILatentDirichletAllocation(**kw), method)(X[keep > 0])
    np.testing.assert_array_equal(weighted.components_, subset.components_)
    assert weighted.n_batch_iter_ == subset.n_batch_iter_
    assert weighted.n_samples_seen_ == subset.n_samples_seen_ == keep.sum()
    ones = getattr(SVILatentDirichletAllocation(**kw), method)(X, sample_weight=np.ones(X.shape[0]))
    plain = getattr(SVILatentDirichletAllocation(**kw), method)(X)
    np.testing.assert_array_equal(ones.components_, plain.components_)


def test_score_and_perplexity_count_weighted_documents_as_repeated():
    X, w, X_rep = _weighted_corpus(seed=22)
    lda = SVILatentDirichletAllocation(n_components=K, max_iter=5, random_state=0).fit(X)
    # transform starts every document from gamma = 1: the copies of a
    # document get its gamma exactly, at any mean_change_tol.
    assert lda.score(X, sample_weight=w) == pytest.approx(lda.score(X_rep), rel=1e-12)
    assert lda.perplexity(X, sample_weight=w) == pytest.approx(lda.perplexity(X_rep), rel=1e-12)
    assert lda.perplexity(X, sub_sampling=True, sample_weight=w) == pytest.approx(
        lda.perplexity(X_rep, sub_sampling=True), rel=1e-12
    )
    assert lda.score(X, sample_weight=np.ones(X.shape[0])) == lda.score(X)
    # bound_ is the perplexity of the training documents, weighted as in fit.
    fitted = SVILatentDirichletAllocation(n_components=K, max_iter=5, random_state=0)
    fitted.fit(X, sample_weight=w)
    assert fitted.bound_ == pytest.approx(fitted.perplexity(X, sample_weight=w), rel=1e-12)
    np.testing.assert_array_equal(fitted.fit_transform(X, sample_weight=w), fitted.transform(X))


@pytest.mark.parametrize("total_samples", ["auto", 1000.0])
def test_partial_fit_counts_weights_in_n_samples_seen_and_the_scaling(total_samples):
    X, w, _ = _weighted_corpus(seed=23, n_docs=90)
    kw = dict(n_components=K, batch_size=200, total_samples=total_samples, random_state=0, **TIGHT)
    weighted = SVILatentDirichletAllocation(**kw)
    repeated = SVILatentDirichletAllocation(**kw)
    for batch in np.array_split(np.arange(X.shape[0]), 3):
        weighted.partial_fit(X[batch], sample_weight=w[batch])
        repeated.partial_fit(X[np.repeat(batch, w[batch])])
    # One step per call: N / |S| and, with 'auto', the running count N are
    # the weight sums, as they are the row counts of the repeated stream
    # (the E-step converged tightly: see TIGHT).
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    assert weighted.n_batch_iter_ == repeated.n_batch_iter_ == 3
    np.testing.assert_allclose(weighted.components_, repeated.components_, rtol=1e-6)
    # Halving every weight halves |S| and doubles N / |S|: the same step,
    # from the same draws, at the default tolerance.
    kw = dict(n_components=K, total_samples=1000, random_state=0)
    half = SVILatentDirichletAllocation(**kw).partial_fit(X, sample_weight=np.full(90, 0.5))
    plain = SVILatentDirichletAllocation(**kw).partial_fit(X)
    assert half.n_samples_seen_ == 45.0
    np.testing.assert_allclose(half.components_, plain.components_, rtol=1e-12)


def test_online_fit_with_sample_weight():
    X, w, _ = _weighted_corpus(seed=24, n_docs=120)
    lda = SVILatentDirichletAllocation(
        n_components=K,
        learning_method="online",
        batch_size=20,
        max_iter=2,
        evaluate_every=1,
        random_state=0,
    )
    lda.fit(X, sample_weight=w)
    assert lda.n_samples_seen_ == w.sum()
    # ceil(kept documents / batch_size) steps a pass.
    assert lda.n_batch_iter_ == 2 * -(-np.count_nonzero(w) // 20)
    assert np.all(np.isfinite(lda.lower_bounds_)) and np.isfinite(lda.bound_)


def test_unknown_keyword_raises_type_error():
    X, w, _ = _weighted_corpus(seed=25, n_docs=10)
    lda = SVILatentDirichletAllocation(n_components=K)
    with pytest.raises(TypeError):
        lda.partial_fit(X, weights=w)
    with pytest.raises(TypeError):
        lda.fit(X, sample_weights=w)


@pytest.mark.parametrize(
    "weight, message",
    [
        (np.ones(9), "(?i)sample.?weight"),  # wrong length
        (np.ones((10, 2)), "(?i)sample.?weight"),
        (np.r_[-1.0, np.ones(9)], "Negative values"),
        (np.r_[np.nan, np.ones(9)], "NaN"),
        (np.zeros(10), "(?i)weight.*zero"),
    ],
)
@pytest.mark.parametrize("method", ["fit", "partial_fit", "score"])
def test_bad_sample_weight_raises(weight, message, method):
    X, _, _ = _weighted_corpus(seed=26, n_docs=10)
    lda = SVILatentDirichletAllocation(n_components=K, max_iter=1, random_state=0)
    if method == "score":
        lda.fit(X)
    with pytest.raises(ValueError, match=message):
        getattr(lda, method)(X, sample_weight=weight)


def test_top_words_are_each_topic_s_largest_weights_ties_by_column():
    docs = [
        "star galaxy telescope star orbit",
        "galaxy star orbit planet",
        "bread butter oven flour",
        "oven bread flour bread butter",
        "planet orbit star telescope",
        "butter flour oven sugar",
    ]
    vectorizer = CountVectorizer()
    counts = vectorizer.fit_transform(docs)
    vocabulary = vectorizer.get_feature_names_out()
    lda = SVILatentDirichletAllocation(n_components=3, random_state=0).fit(counts)
    n_features = counts.shape[1]
    for n in (1, 4, n_features):
        top = lda.top_words(n)
        assert top.shape == (3, n) and top.dtype.kind == "i"
        np.testing.assert_array_equal(top, np.argsort(-lda.components_, axis=1)[:, :n])
        words = lda.top_words(n, feature_names=vocabulary)
        assert words.dtype.kind == "U"
        np.testing.assert_array_equal(words, vocabulary[top])
    # Ties go to the lower column: rounded weights tie often.
    lda.components_ = np.round(lda.components_)
    expected = [
        sorted(range(n_features), key=lambda w: (-row[w], w))[:5] for row in lda.components_
    ]
    assert len(set(lda.components_[0])) < n_features
    np.testing.assert_array_equal(lda.top_words(5), expected)
    np.testing.assert_array_equal(
        lda.top_words(5), np.argsort(-lda.components_, axis=1, kind="stable")[:, :5]
    )


def test_top_words_names_the_columns_of_a_dataframe():
    pd = pytest.importorskip("pandas")
    counts = np.array([[1, 2, 1, 0], [1, 0, 1, 2], [0, 2, 1, 1]])
    frame = pd.DataFrame(counts, columns=["w_a", "w_b", "w_c", "w_d"])
    lda = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(frame)
    top = np.argsort(-lda.components_, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(lda.top_words(3), frame.columns.to_numpy()[top])
    # Names passed explicitly take precedence.
    np.testing.assert_array_equal(
        lda.top_words(3, feature_names=list("pqrs")), np.array(list("pqrs"))[top]
    )
