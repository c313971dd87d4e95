"""Bad and unusual input: a clear error or a finite, correct answer, never a crash."""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skvi import (
    SVIBayesianGaussianMixture,
    SVILatentDirichletAllocation,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIPoissonRegression,
)
from skvi.metrics import document_completion_perplexity


def _counts(n=30, d=12, seed=0):
    rng = np.random.RandomState(seed)
    return sp.csr_matrix(rng.poisson(1.0, size=(n, d)).astype(float))


def _malformed(X):
    """Structurally invalid copies of the CSR matrix X, by name."""
    out = {}
    bad = X.copy()
    bad.indptr = bad.indptr.copy()
    bad.indptr[1] = bad.nnz + 5
    out["indptr past nnz"] = bad
    bad = X.copy()
    bad.indptr = bad.indptr[:-1].copy()
    out["indptr too short"] = bad
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = 2**30
    out["column 2**30"] = bad
    bad = X.copy()
    bad.data = bad.data[:-1].copy()
    out["data shorter than indices"] = bad
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = -1
    out["negative column"] = bad
    bad = X.copy()
    bad.indptr = bad.indptr + 1
    out["indptr starts above 0"] = bad
    return out


def _glm_calls(cls):
    X = _counts()
    y = (np.asarray(X.sum(axis=1)).ravel() > 12).astype(int)
    fitted = cls(max_iter=2, random_state=0).fit(X, y)
    return [
        ("fit", lambda B: cls(max_iter=2).fit(B, y)),
        (
            "partial_fit",
            lambda B: cls().partial_fit(
                B, y, **({"classes": [0, 1]} if cls is SVILogisticRegression else {})
            ),
        ),
        ("predict", fitted.predict),
        ("score", lambda B: fitted.score(B, y)),
    ]


def _lda_calls():
    X = _counts()
    fitted = SVILatentDirichletAllocation(n_components=2, max_iter=2, random_state=0).fit(X)
    threaded = SVILatentDirichletAllocation(
        n_components=2, max_iter=2, n_jobs=2, random_state=0
    ).fit(X)
    return [
        ("fit", lambda B: SVILatentDirichletAllocation(n_components=2, max_iter=2).fit(B)),
        ("partial_fit", lambda B: SVILatentDirichletAllocation(n_components=2).partial_fit(B)),
        ("transform", fitted.transform),
        ("transform n_jobs=2", threaded.transform),
        ("score", fitted.score),
        ("perplexity", fitted.perplexity),
        ("document_completion_perplexity", lambda B: document_completion_perplexity(fitted, B)),
    ]


def _mf_calls():
    X = _counts()
    fitted = SVIMatrixFactorization(n_components=2, max_iter=2, random_state=0).fit(X)
    return [
        ("fit", lambda B: SVIMatrixFactorization(n_components=2, max_iter=2).fit(B)),
        ("partial_fit", lambda B: SVIMatrixFactorization(n_components=2).partial_fit(B)),
        ("transform", fitted.transform),
        ("score", fitted.score),
    ]


CALLS = (
    [("SVILogisticRegression", m, f) for m, f in _glm_calls(SVILogisticRegression)]
    + [("SVIPoissonRegression", m, f) for m, f in _glm_calls(SVIPoissonRegression)]
    + [("SVILatentDirichletAllocation", m, f) for m, f in _lda_calls()]
    + [("SVIMatrixFactorization", m, f) for m, f in _mf_calls()]
)
MALFORMED = _malformed(_counts())


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("estimator, method, call", CALLS, ids=[f"{e}.{m}" for e, m, _ in CALLS])
def test_structurally_invalid_sparse_input_is_a_clear_error(estimator, method, call, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="not a valid sparse matrix"):
            call(MALFORMED[kind])


def test_mf_rejects_a_dia_matrix_whose_stored_entries_are_not_ratings():
    R = sp.dia_matrix((np.array([[0.0, 4.0, 5.0]]), [0]), shape=(3, 3))
    with pytest.raises(ValueError, match="dia_matrix"):
        SVIMatrixFactorization(n_components=1).fit(R)
    # The same ratings as COO, the stored zero kept, fit.
    coo = sp.coo_matrix((np.array([0.0, 4.0, 5.0]), (np.arange(3), np.arange(3))), shape=(3, 3))
    mf = SVIMatrixFactorization(n_components=1, max_iter=2).fit(coo)
    assert mf.n_samples_seen_ == 3


# ------------------------------------------------------------------- LDA
@pytest.mark.parametrize("prior", [1e-4, 1e-6])
def test_lda_empty_document_with_a_tiny_prior_gets_uniform_proportions(prior):
    # With n_components * prior below ~1.4e-3, exp(psi(sum gamma)) underflows:
    # the empty document's proportions were NaN.  scikit-learn gives the
    # prior's mean, uniform.
    from sklearn.decomposition import LatentDirichletAllocation

    X = sp.vstack([_counts(20, 10), sp.csr_matrix((1, 10))]).tocsr()
    lda = SVILatentDirichletAllocation(
        n_components=10, doc_topic_prior=prior, max_iter=3, random_state=0
    ).fit(X)
    ref = LatentDirichletAllocation(
        n_components=10, doc_topic_prior=prior, max_iter=3, random_state=0
    ).fit(X)
    np.testing.assert_allclose(lda.transform(X[-1:]), ref.transform(X[-1:]), rtol=1e-12)
    np.testing.assert_allclose(lda.transform(X[-1:]), 0.1, rtol=1e-12)
    assert np.isfinite(lda.score(X)) and np.isfinite(lda.bound_)
    assert np.all(np.isfinite(lda.transform(X)))


def test_lda_compiled_e_step_equals_numpy_for_tiny_dirichlet_totals():
    from skvi.models.lda.estep import e_step, e_step_numpy

    rng = np.random.RandomState(0)
    counts = rng.poisson(0.5, size=(8, 6)).astype(float)
    counts[0] = 0  # an empty document
    X = sp.csr_matrix(counts)
    beta_t = rng.dirichlet(np.ones(6), size=4).T.copy()
    alpha = np.full(4, 1e-5)
    a, b = np.ones((8, 4)), np.ones((8, 4))
    _, ll_a = e_step(X, beta_t, alpha, a, 50, 1e-10)
    _, ll_b = e_step_numpy(X, beta_t, alpha, b, 50, 1e-10)
    np.testing.assert_allclose(a, b, rtol=1e-9)
    assert ll_a == pytest.approx(ll_b, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_lda_on_a_corpus_without_words_fits_as_scikit_learn(sparse):
    # scikit-learn's test_lda_empty_docs: an all-zero corpus fits, and the
    # topics are their prior, topic_word_prior = 1 / n_components per entry
    # (so each word's column sums to one).  skvi raised "X holds no words".
    from sklearn.decomposition import LatentDirichletAllocation

    Z = np.zeros((5, 4))
    X = sp.csr_matrix(Z) if sparse else Z
    lda = SVILatentDirichletAllocation(max_iter=750).fit(X)
    np.testing.assert_almost_equal(
        lda.components_.sum(axis=0), np.ones(lda.components_.shape[1]), decimal=7
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its bound_ is 0 / 0
        ref = LatentDirichletAllocation(max_iter=750).fit(X)
    np.testing.assert_allclose(lda.components_, ref.components_, rtol=1e-12)
    np.testing.assert_allclose(lda.transform(X), ref.transform(X), rtol=1e-12)
    assert lda.score(X) == pytest.approx(ref.score(X), abs=1e-9)
    # The training perplexity of no words is undefined: scikit-learn's
    # bound_ is NaN, skvi's None; perplexity() still says why.
    assert np.isnan(ref.bound_) and lda.bound_ is None
    with pytest.raises(ValueError, match="no words"):
        lda.perplexity(X)
    # partial_fit takes scikit-learn's step from the same start; an online
    # fit's steps all aim at the prior and reach it, as the batch fit does.
    kw = dict(n_components=3, random_state=0)
    ours = SVILatentDirichletAllocation(**kw).partial_fit(X)
    theirs = LatentDirichletAllocation(**kw).partial_fit(X)
    np.testing.assert_allclose(ours.components_, theirs.components_, rtol=1e-7)
    online = SVILatentDirichletAllocation(learning_method="online", max_iter=750).fit(X)
    np.testing.assert_almost_equal(online.components_.sum(axis=0), np.ones(4), decimal=7)
    # A fitted model: an empty corpus' perplexity is still a clear error,
    # its documents' proportions uniform.
    lda = SVILatentDirichletAllocation(n_components=2, max_iter=2, random_state=0).fit(_counts())
    with pytest.raises(ValueError, match="no words"):
        lda.perplexity(sp.csr_matrix((3, 12)))
    np.testing.assert_allclose(lda.transform(sp.csr_matrix((3, 12))), 0.5)


def test_concurrent_predictions_on_one_fitted_estimator(monkeypatch):
    # transform with n_jobs=2 from several threads at once: each call has
    # its own thread pool (a shared one was shut down under the others);
    # blocks of any size go to the threads.
    from skvi.engine import executor as executor_module

    monkeypatch.setattr(executor_module, "MIN_BLOCK_NNZ", 1)
    X = _counts(200, 30)
    lda = SVILatentDirichletAllocation(n_components=3, max_iter=2, n_jobs=2, random_state=0).fit(X)
    expected = lda.transform(X)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(lda.transform(X))
        except Exception as exc:  # collected: the test fails on it below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 20
    for got in results:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


# ------------------------------------------------------- partial_fit keywords
def _partial_fit_cases():
    from skvi import GaussianGammaVB

    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(int)
    pairs = np.column_stack([np.arange(20) % 5, np.arange(20) % 4])
    return [
        (GaussianGammaVB(), (X,)),
        (SVILatentDirichletAllocation(n_components=2), (_counts(),)),
        (SVILogisticRegression(), (X, y)),
        (SVIPoissonRegression(), (X, y)),
        (SVIMatrixFactorization(n_components=1), (pairs, rng.normal(size=20))),
        (SVIBayesianGaussianMixture(n_components=2), (X,)),
    ]


@pytest.mark.parametrize(
    "est, args",
    _partial_fit_cases(),
    ids=lambda v: type(v).__name__ if not isinstance(v, tuple) else "",
)
def test_partial_fit_refuses_unknown_keywords(est, args):
    # A keyword the estimator does not declare was silently ignored: e.g.
    # sample_weight, before the estimators took it, counted every row once
    # whatever the caller meant.  Now every partial_fit takes sample_weight,
    # and a misspelling of it raises.
    with pytest.raises(TypeError, match="unexpected keyword"):
        est.partial_fit(*args, not_a_parameter=1)
    with pytest.raises(TypeError, match="sample_weights"):
        est.partial_fit(*args, sample_weights=np.ones(args[0].shape[0]))
    est.partial_fit(*args, sample_weight=np.ones(args[0].shape[0]))
    assert est.n_samples_seen_ == args[0].shape[0]


# ------------------------------------------------------ matrix factorization
@pytest.mark.parametrize(
    "params, message",
    [
        ({"mean_prior": np.nan}, "mean_prior must be finite"),
        ({"init_scale": 1e300}, "init_scale"),
        ({"init_scale": 1e-300}, "init_scale"),
    ],
)
def test_mf_rejects_hyperparameters_that_would_end_in_nan(params, message):
    X = np.array([[0, 1], [1, 0], [1, 1]])
    with pytest.raises(ValueError, match=message):
        SVIMatrixFactorization(n_components=1, **params).fit(X, [1.0, 2.0, 3.0])


def test_mf_ratings_whose_squares_overflow_are_a_clear_error():
    X = np.array([[0, 1], [1, 0], [1, 1]])
    y = np.array([1.0, 2.0, 3.0]) * 1e200
    with pytest.raises(ValueError, match="too large"):
        SVIMatrixFactorization(n_components=1).fit(X, y)
    with pytest.raises(ValueError, match="too large"):
        SVIMatrixFactorization(n_components=1).fit(sp.coo_matrix((y, (X[:, 0], X[:, 1]))))
    # Large but representable ratings fit to finite predictions; with the
    # prior on the mean as vague on their scale as the default is on a unit
    # scale (precision 1e-2 / 1e200), the mean is the ratings' mean.
    large = SVIMatrixFactorization(
        n_components=1, max_iter=5, random_state=0, mean_precision_prior=1e-2 / 1e200
    ).fit(X, y / 1e100)
    assert np.all(np.isfinite(large.predict(X)))
    assert large.global_mean_ == pytest.approx(2e100, rel=0.01)


def test_mf_online_fit_on_all_zero_ratings_is_finite():
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    mf = SVIMatrixFactorization(
        n_components=1, learning_method="online", batch_size=2, max_iter=3, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mf.fit(X, np.zeros(4))
    assert np.all(np.isfinite(mf.predict(X)))
    np.testing.assert_allclose(mf.predict(X), 0.0, atol=0.05)


# -------------------------------------------------------------- sparse GP
def test_sparse_gp_sample_y_draws_from_the_predictive_distribution():
    # sample_y passed method="eigh" to RandomState.multivariate_normal, which
    # takes no such keyword: every call raised TypeError.  Monte Carlo: the
    # draws' mean and covariance are predict(X, return_cov=True)'s, within
    # their sampling error.
    from sklearn.gaussian_process.kernels import RBF

    from skvi import SVISparseGPRegressor

    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=60)
    gp = SVISparseGPRegressor(
        kernel=RBF(0.7), noise_variance=0.05, n_inducing=6, optimizer=None, random_state=0
    ).fit(X, y)
    Xq = np.array([[-4.0], [-1.0], [0.0], [0.1], [2.5]])  # 0.0 and 0.1 strongly correlated
    mean, cov = gp.predict(Xq, return_cov=True)
    n = 40000
    draws = gp.sample_y(Xq, n_samples=n, random_state=1)
    assert draws.shape == (5, n)
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_array_less(np.abs(draws.mean(axis=1) - mean), 5 * sd / np.sqrt(n))
    # Standard error of a sample covariance: sqrt((s_ii s_jj + s_ij^2) / n).
    se = np.sqrt((np.outer(sd, sd) ** 2 + cov**2) / n)
    np.testing.assert_array_less(np.abs(np.cov(draws) - cov), 5 * se)
    np.testing.assert_array_equal(draws[:, :3], gp.sample_y(Xq, n_samples=n, random_state=1)[:, :3])
    assert gp.sample_y(Xq).shape == (5, 1)


def test_lda_partial_fit_takes_a_list_of_lists_as_fit_does():
    # partial_fit read X.shape before validating X: a list of lists, which
    # fit and scikit-learn's partial_fit take, raised AttributeError.  Its
    # steps are scikit-learn's partial_fit steps on the same list.
    from sklearn.decomposition import LatentDirichletAllocation

    X = _counts(40, 8, seed=3).toarray().astype(int).tolist()
    params = dict(n_components=3, batch_size=16, total_samples=200, random_state=0)
    ours = SVILatentDirichletAllocation(**params)
    ref = LatentDirichletAllocation(**params)
    for i in range(2):
        ours.partial_fit(X[20 * i : 20 * (i + 1)])
        ref.partial_fit(X[20 * i : 20 * (i + 1)])
    np.testing.assert_allclose(ours.components_, ref.components_, rtol=1e-7)
    assert ours.n_samples_seen_ == 40
    weighted = SVILatentDirichletAllocation(**params).partial_fit(X, sample_weight=[1.0] * 40)
    plain = SVILatentDirichletAllocation(**params).partial_fit(np.asarray(X, dtype=float))
    np.testing.assert_allclose(weighted.components_, plain.components_, rtol=1e-12)


# ------------------------------------------------------------ Poisson D^2
def _poisson_fits():
    from skvi import SVIOverdispersedPoissonRegression

    X = np.array([[-1.0], [2.0]])
    y = np.array([1.0, 4.0])
    return (
        X,
        y,
        [
            cls(max_iter=20, random_state=0).fit(X, y)
            for cls in (SVIPoissonRegression, SVIOverdispersedPoissonRegression)
        ],
    )


def _sklearn_poisson_with_predictions(X, mu):
    # A PoissonRegressor whose predictions at the two rows of X are mu: its
    # linear predictor a + b x through (x_i, log mu_i).
    from sklearn.linear_model import PoissonRegressor

    ref = PoissonRegressor().fit(X, [1.0, 2.0])
    slope = (np.log(mu[1]) - np.log(mu[0])) / (X[1, 0] - X[0, 0])
    ref.coef_ = np.array([slope])
    ref.intercept_ = np.log(mu[0]) - slope * X[0, 0]
    np.testing.assert_allclose(ref.predict(X), mu, rtol=1e-12)
    return ref


def test_poisson_score_on_two_rows_is_scikit_learns_d2():
    X, y, fits = _poisson_fits()
    for est in fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = _sklearn_poisson_with_predictions(X, est.predict(X))
            for w in (None, np.array([1.0, 3.0])):
                expected = ref.score(X, y, sample_weight=w)
                assert np.isfinite(expected)
                assert est.score(X, y, sample_weight=w) == pytest.approx(expected, rel=1e-10)


def test_poisson_score_of_a_constant_target_is_nan_with_a_warning():
    # The null deviance of a constant y is zero: D^2 is undefined.  It
    # raised ZeroDivisionError; scikit-learn's PoissonRegressor.score gives
    # NaN with a warning for y = 0 (and 1 - rounding / rounding for another
    # constant); d2_tweedie_score gives NaN with UndefinedMetricWarning for
    # fewer than two rows.
    from sklearn.exceptions import UndefinedMetricWarning

    X, _, fits = _poisson_fits()
    for est in fits:
        ref = _sklearn_poisson_with_predictions(X, est.predict(X))
        for c in (0.0, 2.0, 0.1):
            y = np.full(2, c)
            with pytest.warns(UndefinedMetricWarning, match="constant"):
                assert np.isnan(est.score(X, y))
        with pytest.warns(RuntimeWarning):
            assert np.isnan(ref.score(X, np.zeros(2)))
        # Constant on the rows of positive weight only, and a single row.
        with pytest.warns(UndefinedMetricWarning):
            assert np.isnan(est.score(X, [1.0, 4.0], sample_weight=[0.0, 2.0]))
        with pytest.warns(UndefinedMetricWarning):
            assert np.isnan(est.score(X[:1], [1.0]))
        # Where scikit-learn raises, a clear error.
        with pytest.raises(ValueError, match="non-negative"):
            est.score(X, [-1.0, 2.0])
        with pytest.raises(ValueError, match="[Ww]eight"):
            est.score(X, [1.0, 2.0], sample_weight=[0.0, 0.0])


@pytest.mark.parametrize("method", ["batch", "online"])
def test_mf_without_ratings_is_a_clear_error(method):
    # A sparse matrix with no stored entry holds no rating: online fit raised
    # ZeroDivisionError, batch fit "fitted" nothing silently.
    mf = SVIMatrixFactorization(n_components=1, learning_method=method, max_iter=2)
    for R in (sp.csr_matrix((4, 3)), sp.coo_matrix((3, 3)), sp.csc_matrix((2, 5))):
        with pytest.raises(ValueError, match="no ratings"):
            mf.fit(R)
        with pytest.raises(ValueError, match="no ratings"):
            SVIMatrixFactorization(n_components=1, learning_method=method).partial_fit(R)
    # Id pairs with no rows, and (user, item, rating) rows with none.
    with pytest.raises(ValueError, match="0 sample"):
        mf.fit(np.empty((0, 2)), np.empty(0))
    with pytest.raises(ValueError, match="0 sample"):
        mf.fit(np.empty((0, 3)))
    # After a fit, a later minibatch without ratings is an error too, and
    # leaves the fit as it was.
    fitted = SVIMatrixFactorization(
        n_components=1, learning_method=method, max_iter=2, random_state=0
    ).fit(_counts(6, 4))
    before = fitted.predict(np.array([[0, 0], [1, 2]]))
    with pytest.raises(ValueError, match="no ratings"):
        fitted.partial_fit(sp.csr_matrix((6, 4)))
    np.testing.assert_array_equal(fitted.predict(np.array([[0, 0], [1, 2]])), before)


# ------------------------------------------------- held-out word probabilities
def _topic_models():
    from skvi import SVICorrelatedTopicModel

    X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
    return X, [
        SVICorrelatedTopicModel(n_components=2, max_iter=3, random_state=0).fit(X),
        SVILatentDirichletAllocation(n_components=2, max_iter=3, random_state=0).fit(X),
    ]


@pytest.mark.parametrize("which", [0, 1], ids=["ctm", "lda"])
def test_heldout_word_probabilities_rejects_mismatched_or_negative_parts(which):
    # The observed and held-out parts of different row counts were read
    # against each other (IndexError, or the extra observed rows ignored);
    # negative held-out counts were scored as if positive, negative
    # observed counts gave NaN (LDA); a held-out part with fewer words
    # than the model was accepted.
    X, models = _topic_models()
    model = models[which]
    obs, held = sp.csr_matrix(X[:3]), sp.csr_matrix(X[3:6])
    p = model.heldout_word_probabilities(obs, held)
    if which == 0:  # CTM: sum_k E_q[theta_dk] beta_kw, the document's q fitted to obs
        theta = model.transform(obs)
        rows = np.repeat(np.arange(3), np.diff(held.indptr))
        np.testing.assert_allclose(
            p, np.sum(theta[rows] * model.topic_word_[:, held.indices].T, axis=1), rtol=1e-12
        )
    assert p.shape == (held.nnz,) and np.all((p > 0) & (p <= 1))
    cases = [
        (X[:2], X[3:6], "rows"),
        (X[:3], X[3:5], "rows"),
        (X[:3], -X[3:6], "Negative"),
        (-X[:3], X[3:6], "Negative"),
        (X[:3], X[3:6, :5], "6"),
        (X[:3, :5], X[3:6, :5], "6"),
        (X[:3], np.where(X[3:6] > 0, np.nan, 0.0), "NaN"),
    ]
    for o, h, message in cases:
        with pytest.raises(ValueError, match=message):
            model.heldout_word_probabilities(sp.csr_matrix(o), sp.csr_matrix(h))


# ------------------------------------------------------------ huge features
def _scaled_models(s):
    """Every model with Gaussian sums of squared features, its priors scaled
    so that the fit on X * s is the fit on X with the weights / s (the
    features' mean * s and precision / s^2 for GaussianGammaVB)."""
    from skvi import GaussianGammaVB, SVILinearRegression, SVIOverdispersedPoissonRegression

    # Quadrature and a tight tol: the fits reach their (scale-equivariant)
    # fixed points; the start, min(prior, 1 / (d max(E[x^2], 1))), is not.
    glm = dict(
        prior_variance=1.0 / s**2, expectation="quadrature", max_iter=300, tol=1e-13, random_state=0
    )
    return {
        "linear": SVILinearRegression(noise_precision=2.0, weight_precision=s**2, max_iter=3),
        "logistic": SVILogisticRegression(**glm),
        "multinomial": SVILogisticRegression(**glm),
        "poisson": SVIPoissonRegression(**glm),
        "overdispersed": SVIOverdispersedPoissonRegression(**glm),
        "gaussian_gamma": GaussianGammaVB(
            mean_precision_prior=1e-3 / s**2,
            precision_rate_prior=1e-3 * s**2,
            max_iter=200,
            tol=1e-13,
        ),
    }


def _targets(name, n):
    rng = np.random.RandomState(1)
    return {
        "linear": rng.normal(size=n),
        "logistic": np.arange(n) % 2,
        "multinomial": np.arange(n) % 3,
        "poisson": rng.poisson(2.0, size=n),
        "overdispersed": rng.poisson(2.0, size=n),
        "gaussian_gamma": None,
    }[name]


def _outputs(est, X):
    if hasattr(est, "coef_"):
        out = [est.coef_, est.predict(X)]
        return out + ([est.predict_proba(X)] if hasattr(est, "predict_proba") else [])
    return [est.mean_, est.precision_shape_ / est.precision_rate_, est.transform(X)]


@pytest.mark.parametrize("name", sorted(_scaled_models(1.0)))
def test_huge_features_are_refused_and_large_ones_fit_as_scaled(name):
    # Features near 1e200 gave NaN coefficients and bounds (with only a
    # step-safety warning), and multinomial predict_proba raised
    # LinAlgError.  Beyond 1e100 the models refuse X with a ValueError that
    # names the limit; up to it the fit is the unit-scale fit, scaled
    # (the reference: the same model on X with its priors rescaled).
    rng = np.random.RandomState(0)
    X = rng.normal(size=(30, 2))
    y = _targets(name, 30)
    args = (X,) if y is None else (X, y)
    unit = _scaled_models(1.0)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unit.fit(*args)
    s = 1e99 / np.abs(X).max()
    big = _scaled_models(s)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        big.fit(X * s, *args[1:])
    got, ref = _outputs(big, X * s), _outputs(unit, X)
    for g in got:
        assert np.all(np.isfinite(g))
    if name == "gaussian_gamma":
        ref = [ref[0] * s, ref[1] / s**2, ref[2]]
    else:
        ref = [ref[0] / s] + ref[1:]
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-9 * np.abs(r).max())

    huge = X * 1e200
    huge_sparse = sp.csr_matrix(X)
    huge_sparse.data[0] = 3e200  # one huge entry is enough
    fresh = _scaled_models(1.0)[name]
    for H in (huge, huge_sparse) if name != "gaussian_gamma" else (huge,):
        with pytest.raises(ValueError, match="largest feature magnitude.*StandardScaler"):
            fresh.fit(H, *args[1:])
    if name != "gaussian_gamma":
        with pytest.raises(ValueError, match="StandardScaler"):
            fresh.partial_fit(
                huge,
                *args[1:],
                **(
                    {"classes": np.unique(y)} if "logistic" in name or name == "multinomial" else {}
                ),
            )
    # Prediction on such rows from the unit-scale fit: the same error.
    for method in ("predict", "predict_proba", "transform", "score_samples"):
        if hasattr(unit, method):
            with pytest.raises(ValueError, match="largest feature magnitude"):
                getattr(unit, method)(huge)


@pytest.mark.parametrize("name", sorted(_scaled_models(1.0)))
def test_float32_features_beyond_1e19_fit_as_their_float64_values(name):
    # The start's column sums of squares were taken in float32, which
    # overflows beyond 1.8e19: NaN coefficients from float32 X near 1e20.
    # The reference: the fit on the same values in float64.
    s = 2.0**70  # 1.2e21
    X32 = (np.random.RandomState(0).normal(size=(30, 2)) * s).astype(np.float32)
    y = _targets(name, 30)
    fits = []
    for X in (X32, X32.astype(np.float64)):
        est = _scaled_models(s)[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(*((X,) if y is None else (X, y)))
        fits.append(_outputs(est, X))
    for got, ref in zip(*fits):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_poisson_predictions_that_overflow_are_infinite_not_nan():
    # Rows far outside the training range: E[lambda] = exp(m + v / 2)
    # overflows.  The overdispersed model's standard deviation was
    # sqrt(inf - inf) = NaN; the closed form's overflow is inf.
    from skvi import SVIOverdispersedPoissonRegression

    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(30, 2)), rng.poisson(2.0, size=30)
    far = np.array([[1e10, 1e10], [-1e10, 1e10], [0.0, 0.0]])
    for cls in (SVIPoissonRegression, SVIOverdispersedPoissonRegression):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(random_state=0).fit(X, y)
        mean, std = est.predict(far, return_std=True)
        f = far @ est.coef_.ravel() + est.intercept_
        for i in range(3):
            with np.errstate(over="ignore"):
                log_normal_mean = np.exp(f[i])  # v >= 0 only raises it
            if np.isinf(log_normal_mean):
                assert mean[i] == np.inf and std[i] == np.inf
        assert not np.any(np.isnan(mean)) and not np.any(np.isnan(std))
        assert np.isfinite(mean[2]) and np.isfinite(std[2])


# ------------------------------------------------------------ mixture
MIXTURE_TYPES = ["full", "tied", "diag", "spherical"]


def _mixture_pair(ct, **kw):
    from sklearn.mixture import BayesianGaussianMixture

    params = dict(n_components=2, covariance_type=ct, random_state=0, max_iter=500, **kw)
    return (
        SVIBayesianGaussianMixture(tol=1e-13, **params),
        BayesianGaussianMixture(tol=1e-12, **params),
    )


def _assert_monotone(bounds, rtol=1e-12):
    bounds = np.asarray(bounds)
    assert np.all(np.isfinite(bounds))
    assert np.all(np.diff(bounds) >= -rtol * np.abs(bounds[1:]))


@pytest.mark.parametrize("ct", MIXTURE_TYPES)
def test_mixture_with_fewer_rows_than_features_fits_as_scikit_learn(ct):
    # The default covariance_prior (the empirical covariance) of 8 rows in
    # 12 dimensions is singular: inverting it raised LinAlgError ('full',
    # 'tied').  scikit-learn fits such X (reg_covar keeps its covariances
    # definite); so does skvi, with reg_covar on the prior's diagonal too.
    rng = np.random.RandomState(0)
    X = rng.normal(size=(8, 12))
    X[:4] += 3.0
    ours, ref = _mixture_pair(ct)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X)
        ref.fit(X)
    # At the fixed point the bound's value wanders by rounding (1e-8 of
    # it for 'tied', whose shared precision has eigenvalues near 1 / reg).
    _assert_monotone(ours.lower_bounds_, rtol=1e-8)
    # Singular in 'full' and 'tied' only: each feature varies.
    np.testing.assert_allclose(
        ours.covariance_prior_,
        ref.covariance_prior_ + 1e-6 * np.eye(12)
        if ct in ("full", "tied")
        else ref.covariance_prior_,
        rtol=1e-12,
    )
    if ct == "tied":  # skvi's tied update differs from scikit-learn's by design
        assert np.all(np.isfinite(ours.predict_proba(X)))
        np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
        return
    np.testing.assert_allclose(ours.weights_, ref.weights_, rtol=1e-7)
    np.testing.assert_allclose(ours.means_, ref.means_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.covariances_, ref.covariances_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-9)


@pytest.mark.parametrize("ct", MIXTURE_TYPES)
def test_mixture_on_identical_rows_fits_the_closed_form(ct):
    # All rows equal x0: the empirical covariance is zero.  A clear error
    # before; scikit-learn fits it.  With the prior mean x0 and inverse
    # scale reg * I, each component's posterior inverse scale is
    # (1 + N_k) reg I with nu_k = d + N_k degrees of freedom: covariances_
    # = (1 + nu_k - d) reg / nu_k, the means x0 (scikit-learn's too).
    X = np.tile([1.0, -2.0], (10, 1))
    ours, ref = _mixture_pair(ct)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X)
        ref.fit(X)
    _assert_monotone(ours.lower_bounds_)
    np.testing.assert_allclose(ours.means_, ref.means_, rtol=1e-12)
    np.testing.assert_allclose(ours.means_, np.tile(X[0], (2, 1)), rtol=1e-12)
    nu = np.broadcast_to(ours.degrees_of_freedom_, (2,))
    expected = (1.0 + nu - 2.0) * 1e-6 / nu
    if ct == "full":
        np.testing.assert_allclose(
            ours.covariances_, expected[:, None, None] * np.eye(2), rtol=1e-9, atol=1e-20
        )
    elif ct == "tied":
        np.testing.assert_allclose(
            ours.covariances_, expected[0] * np.eye(2), rtol=1e-9, atol=1e-20
        )
    elif ct == "diag":
        np.testing.assert_allclose(ours.covariances_, np.tile(expected[:, None], (1, 2)), rtol=1e-9)
    else:
        np.testing.assert_allclose(ours.covariances_, expected, rtol=1e-9)
    assert np.all(np.isfinite(ours.score_samples(X))) and np.all(np.isfinite(ours.predict_proba(X)))
    # Without reg_covar nothing makes the prior proper: a clear error.
    with pytest.raises(ValueError, match="singular.*constant feature.*reg_covar"):
        SVIBayesianGaussianMixture(n_components=2, covariance_type=ct, reg_covar=0.0).fit(X)


@pytest.mark.parametrize("ct", MIXTURE_TYPES)
def test_mixture_with_a_huge_mean_precision_prior_fits_as_scikit_learn(ct):
    # beta0 = 1e300 pins the means at the prior mean.  The components'
    # natural parameters held beta m m^T beside the data's scatter, which
    # cancelled (LinAlgError for 'full' and 'tied', NaN for 'diag' and
    # 'spherical', from beta0 ~ 1e20 on data of mean (7, -3)); they are now
    # those of the means centred at the prior mean.
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 2)) + [5.0, -3.0]
    X[:30] += 4.0
    for beta0 in (1e20, 1e300):
        ours, ref = _mixture_pair(ct, mean_precision_prior=beta0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours.fit(X)
            ref.fit(X)
        _assert_monotone(ours.lower_bounds_)
        np.testing.assert_allclose(ours.means_, np.tile(X.mean(axis=0), (2, 1)), rtol=1e-12)
        np.testing.assert_allclose(ours.means_, ref.means_, rtol=1e-12)
        assert np.all(np.isfinite(ours.score_samples(X)))
        if ct == "full":  # the others' updates differ from scikit-learn's by design
            np.testing.assert_allclose(ours.weights_, ref.weights_, rtol=1e-5)
            np.testing.assert_allclose(ours.covariances_, ref.covariances_, rtol=1e-5)
            np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


@pytest.mark.parametrize("ct", MIXTURE_TYPES)
def test_mixture_far_from_the_origin_fits_as_at_the_origin(ct):
    # Translation equivariance: the fit of X + c is the fit of X with its
    # means moved by c.  Uncentred natural parameters lost the covariances
    # to cancellation (0.09 off at c = 1e7, LinAlgError at 1e8 for 'full').
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 2))
    X[:30] += 4.0
    fits = []
    for c in (0.0, 1e8):
        est = SVIBayesianGaussianMixture(
            n_components=2, covariance_type=ct, random_state=0, max_iter=500, tol=1e-12
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(est.fit(X + c))
    near, far = fits
    np.testing.assert_allclose(far.means_ - 1e8, near.means_, atol=1e-6)
    np.testing.assert_allclose(far.weights_, near.weights_, rtol=1e-6)
    np.testing.assert_allclose(far.covariances_, near.covariances_, rtol=1e-6, atol=1e-12)


# -------------------------------------------------------- correlated topics
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("algorithm", ["s-dsvi", "h-mc-ssvi", "mc-ssvi"])
def test_ctm_transform_after_a_valid_fit_is_finite(algorithm, seed):
    # n_components=8, init='random', full covariance: the fit succeeded,
    # then the fold-in of transform took S-DSVI steps without step safety
    # and its documents' precisions became indefinite (eigenvalues from
    # -6e5 to 4e21): LinAlgError on 28 corpora of 30.  The fold-in now
    # rejects and halves a document's invalid step as the fit does.  The
    # reference: every algorithm's fold-in maximises the same bound of
    # each document, the model held fixed; run long, S-DSVI's and
    # H-MC-SSVI's reach the same E_q[theta] (to Monte Carlo noise).
    from skvi import SVICorrelatedTopicModel

    rng = np.random.RandomState(seed)
    X = rng.poisson(rng.uniform(0.3, 3), size=(rng.randint(8, 30), rng.randint(6, 25)))
    ctm = SVICorrelatedTopicModel(
        n_components=8, algorithm=algorithm, init="random", max_iter=3, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctm.fit(X)
    theta = ctm.transform(X)
    assert np.all(np.isfinite(theta))
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-10)
    assert np.isfinite(ctm.score(X)) and np.isfinite(ctm.perplexity(X))
    if algorithm == "mc-ssvi":
        return
    other = "h-mc-ssvi" if algorithm == "s-dsvi" else "s-dsvi"
    long_own = ctm.set_params(transform_max_iter=500).transform(X)
    long_other = ctm.set_params(algorithm=other).transform(X)
    np.testing.assert_allclose(long_own, long_other, atol=0.01)


def test_ctm_counts_beyond_the_limit_are_a_clear_error_and_large_ones_fold_in():
    # Counts of 1e150 and more: transform raised LinAlgError (1e30 already)
    # or, with the fold-in's step safety, kept the documents at the prior.
    # A document of more than 1e100 words is refused; up to it, a document
    # folds in as its scaled-down copy of 1e30 words does (its posterior
    # has concentrated: the same E_q[theta]).
    from skvi import SVICorrelatedTopicModel

    X = np.random.RandomState(0).poisson(1, size=(10, 6)).astype(float)
    ctm = SVICorrelatedTopicModel(n_components=3, random_state=0, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctm.fit(X)
    for method in ("transform", "score", "perplexity"):
        with pytest.raises(ValueError, match="words, above the 1e\\+100"):
            getattr(ctm, method)(X * 1e150)
    with pytest.raises(ValueError, match="words, above the 1e\\+100"):
        SVICorrelatedTopicModel(n_components=3).fit(sp.csr_matrix(X * 1e150))
    np.testing.assert_allclose(ctm.transform(X[:4] * 1e90), ctm.transform(X[:4] * 1e30), atol=1e-3)


# ------------------------------------------------------- linear regression
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_regression_online_steps_keep_the_posterior_positive_definite(dtype):
    # Two rows of features near 1e6 and targets near 1e-6: the start's
    # weight precision is var(y) / (n d E[x^2]) ~ 1e25 while the data's
    # is 1e6.  A step written c + rho (t - c) rounds -4e24 + (4e24 - 1e6)
    # to zero or a positive number: with step_safety=False the invalid
    # factor was kept and the next bound raised LinAlgError.  The step is
    # (1 - rho) c + rho t, a convex combination of two positive-definite
    # precisions.  The reference: the closed-form posterior; with the
    # precisions fixed the target does not depend on q, so the first step
    # (rho = 1 at learning_offset=1) lands on it and the later ones keep it.
    from skvi import SVILinearRegression

    rng = np.random.RandomState(0)
    X = (rng.standard_normal((2, 1)) * 1e6).astype(dtype)
    y = rng.standard_normal(2) * 1e-6
    kw = dict(fit_intercept=False, noise_precision=1e-6, weight_precision=1.0)
    online = SVILinearRegression(
        learning_method="online",
        batch_size=2,
        max_iter=3,
        learning_offset=1.0,
        step_safety=False,
        random_state=0,
        **kw,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        online.fit(X, y)
    x = X.astype(np.float64)[:, 0]
    precision = 1.0 + 1e-6 * x @ x
    mean = 1e-6 * (x @ y) / precision
    assert np.isfinite(online.coef_[0]) and online.sigma_[0, 0] > 0
    np.testing.assert_allclose(online.coef_, [mean], rtol=1e-6)
    np.testing.assert_allclose(online.sigma_, [[1.0 / precision]], rtol=1e-6)


# ------------------------------------------------- absurd hyperparameters
def test_mixture_weight_concentration_below_its_representable_range_is_refused():
    # The Dirichlet's natural parameter alpha - 1 holds alpha to 1e-16
    # absolutely: alpha = 1e-300 became 0 and the ELBO NaN.  Refused below
    # 1e-10; at 1e-10 the fit's concentrations and bound are those of the
    # prior plus the responsibilities (an unused component keeps alpha0).
    from sklearn.utils._param_validation import InvalidParameterError

    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 2))
    X[:30] += 4.0
    for wt in ("dirichlet_process", "dirichlet_distribution"):
        with pytest.raises(InvalidParameterError, match="weight_concentration_prior"):
            SVIBayesianGaussianMixture(
                n_components=3,
                weight_concentration_prior=1e-300,
                weight_concentration_prior_type=wt,
            ).fit(X)
        est = SVIBayesianGaussianMixture(
            n_components=3,
            weight_concentration_prior=1e-10,
            weight_concentration_prior_type=wt,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
        _assert_monotone(est.lower_bounds_)
        conc = np.ravel(
            est.weight_concentration_[1] if wt == "dirichlet_process" else est.weight_concentration_
        )
        # Exactly alpha0 + 0 where no sample went (to alpha - 1's rounding).
        np.testing.assert_allclose(conc.min(), 1e-10, rtol=1e-6)
        assert np.all(np.isfinite(est.score_samples(X)))


def test_overdispersed_poisson_noise_prior_scale_outside_its_working_range_is_refused():
    # noise_prior_scale=1e-300 ended at an ELBO of -inf and all-zero
    # weights; 1e300 (and 500) at NaN predictions; below 1e-25 the optimal
    # bound was positive (impossible for counts).  Refused outside
    # [1e-12, 100]; at the lower end the model is Poisson regression (its
    # limit as the noise vanishes): the same weights.
    from sklearn.utils._param_validation import InvalidParameterError

    from skvi import SVIOverdispersedPoissonRegression

    rng = np.random.RandomState(0)
    X = rng.normal(size=(50, 2))
    y = rng.poisson(np.exp(0.5 * X[:, 0]))
    for scale in (1e-300, 1e-13, 101.0, 1e300):
        with pytest.raises(InvalidParameterError, match="noise_prior_scale"):
            SVIOverdispersedPoissonRegression(noise_prior_scale=scale).fit(X, y)
    poisson = SVIPoissonRegression(expectation="quadrature", random_state=0).fit(X, y)
    for scale in (1e-12, 100.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = SVIOverdispersedPoissonRegression(noise_prior_scale=scale, random_state=0).fit(
                X, y
            )
        mean, std = est.predict(X, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
        assert np.all(np.isfinite(est.lower_bounds_)) and est.lower_bound_ < 0
        if scale == 1e-12:
            np.testing.assert_allclose(est.coef_, poisson.coef_, rtol=1e-3)


@pytest.mark.parametrize("algorithm", ["s-dsvi", "h-mc-ssvi"])
def test_ctm_with_a_huge_gradient_learning_rate_stays_finite(algorithm):
    # gradient_learning_rate=1e300: the first AdaGrad step moved the
    # documents' means by 1e300, accepted as finite; Sigma became inf and
    # the bound and transform NaN.  Documents whose means could reach 1e100
    # are now invalid steps, rejected and halved.
    from sklearn.exceptions import ConvergenceWarning

    from skvi import SVICorrelatedTopicModel

    X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
    ctm = SVICorrelatedTopicModel(
        n_components=3,
        algorithm=algorithm,
        gradient_learning_rate=1e300,
        max_iter=3,
        random_state=0,
    )
    with pytest.warns(ConvergenceWarning, match="rejected"):
        ctm.fit(X)
    assert np.all(np.isfinite(ctm.lower_bounds_))
    assert np.all(np.isfinite(ctm.prior_covariance_)) and np.all(np.isfinite(ctm.prior_mean_))
    theta = ctm.transform(X)
    assert np.all(np.isfinite(theta))
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-10)
    assert np.isfinite(ctm.score(X))


# --------------------------------------------------- sparse GP inducing points
@pytest.mark.parametrize("classifier", [False, True])
def test_sparse_gp_inducing_points_that_cannot_work_are_a_clear_error(classifier):
    # Zero inducing points gave numpy's "zero-size array to reduction"; points
    # at 1e300 were accepted and predicted the prior's zeros (their squared
    # distances to the data overflow: K_uf = 0), or raised LinAlgError for
    # the classifier; NaN points gave unrelated messages.  Rows of X beyond
    # 1e100 likewise.  Points within the limit fit: at the data's own
    # distinct inputs the regressor is the exact GP (the reference).
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF

    from skvi import SVISparseGPClassifier, SVISparseGPRegressor

    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    cls, target = (
        (SVISparseGPClassifier, (y > 0).astype(int)) if classifier else (SVISparseGPRegressor, y)
    )
    kw = dict(kernel=RBF(0.7), optimizer=None, random_state=0)
    cases = [
        (np.empty((0, 1)), "inducing_points holds no points"),
        (np.array([[1e300], [0.0]]), "largest feature magnitude in inducing_points"),
        (np.array([[np.nan], [0.0]]), "inducing_points must be finite"),
        (np.array([[np.inf], [0.0]]), "inducing_points must be finite"),
    ]
    for Z, message in cases:
        with pytest.raises(ValueError, match=message):
            cls(inducing_points=Z, **kw).fit(X, target)
    with pytest.raises(ValueError, match="largest feature magnitude in X"):
        cls(**kw).fit(X * 1e200, target)
    fitted = cls(inducing_points=np.linspace(-3, 3, 7)[:, None], **kw).fit(X, target)
    with pytest.raises(ValueError, match="largest feature magnitude in X"):
        fitted.predict(X * 1e200)
    if not classifier:
        exact = SVISparseGPRegressor(
            inducing_points=X, noise_variance=0.01, normalize_y=False, **kw
        ).fit(X, y)
        ref = GaussianProcessRegressor(RBF(0.7), alpha=0.01, optimizer=None).fit(X, y)
        Xq = np.linspace(-3, 3, 5)[:, None]
        np.testing.assert_allclose(exact.predict(Xq), ref.predict(Xq), atol=1e-5)


def test_gamma_shape_priors_below_their_representable_range_are_refused():
    # A Gamma's natural parameter is a - 1: a shape of 1e-300 rounded to 0
    # and the ELBO was -inf (GaussianGammaVB's precision_shape_prior,
    # SVILinearRegression's alpha_1 and lambda_1).  Refused below 1e-10; at
    # 1e-10 the bound is finite and the fit BayesianRidge's (its evidence
    # maximisation does not depend on a shape so small).
    from sklearn.linear_model import BayesianRidge
    from sklearn.utils._param_validation import InvalidParameterError

    from skvi import GaussianGammaVB, SVILinearRegression

    rng = np.random.RandomState(0)
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 * rng.normal(size=50)
    with pytest.raises(ValueError, match="precision_shape_prior must be at least 1e-10"):
        GaussianGammaVB(precision_shape_prior=1e-300).fit(X)
    with pytest.raises(ValueError, match="precision_shape_prior must be at least 1e-10"):
        GaussianGammaVB(precision_shape_prior=[1.0, 1e-300, 1.0]).fit(X)
    for name in ("alpha_1", "lambda_1"):
        with pytest.raises(InvalidParameterError, match=name):
            SVILinearRegression(**{name: 1e-300}).fit(X, y)
    gg = GaussianGammaVB(precision_shape_prior=1e-10, max_iter=200, tol=1e-13).fit(X)
    assert np.isfinite(gg.lower_bound_)
    np.testing.assert_allclose(gg.mean_, X.mean(axis=0), rtol=1e-3, atol=1e-3)
    reg = SVILinearRegression(alpha_1=1e-10, lambda_1=1e-10).fit(X, y)
    assert np.all(np.isfinite(reg.lower_bounds_))
    ref = BayesianRidge(alpha_1=1e-10, lambda_1=1e-10).fit(X, y)
    np.testing.assert_allclose(reg.coef_, ref.coef_, rtol=1e-4)


@pytest.mark.parametrize("ct", MIXTURE_TYPES)
def test_mixture_huge_features_are_refused_and_large_ones_fit_as_scaled(ct):
    # Features of 1e160 gave NaN ('diag', 'spherical') or an unrelated
    # "array must not contain infs" ('full', 'tied').  Beyond 1e100 X is
    # refused; up to it the fit is scale-equivariant (the default priors
    # are the data's moments; reg_covar=0): means * s, covariances * s^2.
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 2))
    X[:30] += 4.0
    s = 1e99 / np.abs(X).max()
    fits = []
    for Xs in (X, X * s):
        est = SVIBayesianGaussianMixture(
            n_components=2,
            covariance_type=ct,
            reg_covar=0.0,
            random_state=0,
            max_iter=500,
            tol=1e-12,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(est.fit(Xs))
    unit, big = fits
    np.testing.assert_allclose(big.means_ / s, unit.means_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(big.weights_, unit.weights_, rtol=1e-6)
    np.testing.assert_allclose(big.covariances_ / s**2, unit.covariances_, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(big.predict_proba(X * s), unit.predict_proba(X), atol=1e-6)
    with pytest.raises(ValueError, match="largest feature magnitude.*StandardScaler"):
        SVIBayesianGaussianMixture(n_components=2, covariance_type=ct).fit(X * 1e160)
    with pytest.raises(ValueError, match="largest feature magnitude"):
        unit.predict(X * 1e160)


@pytest.mark.parametrize("kw", [{"learning_method": "online"}, {"likelihood": "bernoulli"}])
def test_mf_factor_precision_below_its_working_range_is_refused(kw):
    # factor_precision=1e-300: online and Bernoulli fits start every node at
    # the prior, of variance 1e300; E[(u . v)^2] overflowed (an ELBO of -inf,
    # infinite standard deviations).  Refused below 1e-100; at 1e-100 and at
    # a merely vague 1e-6 the fit is finite.
    from sklearn.utils._param_validation import InvalidParameterError

    rng = np.random.RandomState(0)
    pairs = np.column_stack([rng.randint(0, 6, 30), rng.randint(0, 5, 30)])
    y = rng.normal(size=30)
    y = (y > 0).astype(int) if "likelihood" in kw else y
    with pytest.raises(InvalidParameterError, match="factor_precision"):
        SVIMatrixFactorization(n_components=2, factor_precision=1e-300, **kw).fit(pairs, y)
    for fp in (1e-100, 1e-6):
        mf = SVIMatrixFactorization(
            n_components=2, max_iter=3, random_state=0, factor_precision=fp, **kw
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mf.fit(pairs, y)
        # The predictive mean rating of any likelihood (a Bernoulli model's
        # predict gives labels, without a standard deviation).
        mean, std = mf.predict_mean(pairs, return_std=True)
        assert np.isfinite(mf.lower_bound_)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))


def test_mf_init_scale_whose_fourth_power_overflows_is_refused():
    # A prediction's E[(u . v)^2] grows as init_scale**4: 1e100 (its square
    # finite, so accepted) gave NaN standard deviations, 1e77 an ELBO of
    # -inf.  Refused where init_scale**4 (with room for the sums) or its
    # inverse overflows; within, the fit is finite.
    rng = np.random.RandomState(0)
    pairs = np.column_stack([np.arange(12) % 4, (np.arange(12) * 7) % 5])
    y = rng.normal(size=12)
    for scale in (1e100, 1e77, 1e-80):
        with pytest.raises(ValueError, match="init_scale.*fourth power"):
            SVIMatrixFactorization(n_components=2, init_scale=scale).fit(pairs, y)
    for scale in (1e70, 1e-70):
        for method in ("batch", "online"):
            mf = SVIMatrixFactorization(
                n_components=2, max_iter=2, random_state=0, init_scale=scale, learning_method=method
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mf.fit(pairs, y)
            mean, std = mf.predict(pairs, return_std=True)
            assert np.isfinite(mf.lower_bound_)
            assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
