"""The importance-sampled test likelihood against quadrature and scipy."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate, optimize, stats
from sklearn.exceptions import ConvergenceWarning

from skvi import SVILatentDirichletAllocation
from skvi.metrics import ctm_log_evidence, importance_sampled_nll, lda_log_evidence
from skvi.models.ctm.evidence import laplace_posterior
from skvi.models.ctm import kernels


def _topics(n_topics, n_words, seed):
    return np.random.RandomState(seed).dirichlet(np.full(n_words, 0.5), size=n_topics)


def _documents(n_docs, n_words, seed):
    X = np.random.RandomState(seed).poisson(1.2, size=(n_docs, n_words))
    X[X.sum(axis=1) == 0, 0] = 1
    return X


def _sequence_likelihood(doc, beta, theta):
    return np.prod((theta @ beta) ** doc)


@pytest.mark.parametrize("inflation", [1.0, 3.0])
def test_lda_two_topics_against_quadrature(inflation):
    # theta = (t, 1 - t), t ~ Beta(alpha_0, alpha_1): one-dimensional integral.
    beta, alpha = _topics(2, 5, 0), np.array([0.3, 0.7])
    X = _documents(4, 5, 1)
    reference = [
        np.log(
            integrate.quad(
                lambda t, doc=doc: (
                    _sequence_likelihood(doc, beta, np.array([t, 1 - t]))
                    * stats.beta.pdf(t, *alpha)
                ),
                0,
                1,
                limit=200,
                epsabs=0,
                epsrel=1e-10,
            )[0]
        )
        for doc in X
    ]
    got = lda_log_evidence(X, alpha, beta, n_samples=20000, inflation=inflation, random_state=0)
    np.testing.assert_allclose(got, reference, atol=0.01)


def test_lda_three_topics_against_quadrature():
    beta, alpha = _topics(3, 6, 2), np.array([1.0, 1.5, 2.0])
    X = _documents(3, 6, 3)
    density = stats.dirichlet(alpha)
    reference = []
    for doc in X:

        def integrand(t2, t1, doc=doc):
            theta = np.array([t1, t2, max(1 - t1 - t2, 1e-300)])
            return _sequence_likelihood(doc, beta, theta) * density.pdf(theta / theta.sum())

        value, _ = integrate.dblquad(integrand, 0, 1, 0, lambda t1: 1 - t1, epsabs=0, epsrel=1e-9)
        reference.append(np.log(value))
    got = lda_log_evidence(X, alpha, beta, n_samples=20000, random_state=0)
    np.testing.assert_allclose(got, reference, atol=0.01)


@pytest.mark.parametrize("n_topics", [2, 3])
def test_ctm_laplace_proposal_against_quadrature(n_topics):
    # log of the integral of p(w | eta) N(eta; mu, Sigma) by 60 Gauss-Hermite
    # nodes per dimension.
    d = n_topics - 1
    mu = np.linspace(-0.5, 0.5, d)
    sigma = np.array([[1.5]]) if d == 1 else np.array([[1.5, -0.8], [-0.8, 1.0]])
    beta = _topics(n_topics, 5, n_topics)
    docs = sp.csr_matrix(_documents(4, 5, 10 + n_topics), dtype=float)
    reference = []
    for row in range(docs.shape[0]):

        def likelihood(nodes, row=row):
            rows = sp.csr_matrix(np.repeat(docs[row].toarray(), len(nodes), axis=0))
            return np.exp(kernels.log_likelihood(rows, nodes, beta))

        reference.append(
            np.log(kernels.gauss_hermite_expectation(likelihood, mu, sigma, n_points=60))
        )
    got = ctm_log_evidence(docs, mu, sigma, beta, n_samples=20000, random_state=0)
    np.testing.assert_allclose(got, reference, atol=0.01)


def test_laplace_mode_and_curvature():
    # The mode against scipy's optimiser on the same objective, and (one
    # dimension, where the log-likelihood is concave here) the variance
    # against the inverse of a finite-difference second derivative.
    beta = _topics(3, 7, 5)
    mu, sigma = np.array([0.2, -0.3]), np.array([[1.0, 0.4], [0.4, 2.0]])
    X = sp.csr_matrix(_documents(5, 7, 6), dtype=float)
    mean, cov = laplace_posterior(X, mu, sigma, beta)
    precision = np.linalg.inv(sigma)
    for row in range(X.shape[0]):

        def negative(eta, row=row):
            diff = eta - mu
            return -(
                kernels.log_likelihood(X[row], eta[None], beta)[0] - 0.5 * diff @ precision @ diff
            )

        ref = optimize.minimize(
            negative, mu, method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12, maxiter=5000)
        ).x
        np.testing.assert_allclose(mean[row], ref, atol=1e-5)
        assert np.all(np.linalg.eigvalsh(cov[row]) > 0)

    beta2 = _topics(2, 4, 7)
    X2 = sp.csr_matrix(np.array([[3.0, 1.0, 0.0, 2.0]]))
    m, v = laplace_posterior(X2, np.zeros(1), np.eye(1), beta2)

    def f(e):
        return kernels.log_likelihood(X2, np.array([[e]]), beta2)[0] - 0.5 * e * e

    h = 1e-4
    second = (f(m[0, 0] + h) - 2 * f(m[0, 0]) + f(m[0, 0] - h)) / h**2
    assert v[0, 0, 0] == pytest.approx(-1.0 / second, rel=1e-4)


def test_lda_estimator_uses_its_own_parameters():
    X = _documents(60, 8, 8)
    lda = SVILatentDirichletAllocation(n_components=3, doc_topic_prior=0.4, random_state=0).fit(X)
    beta = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    expected = lda_log_evidence(
        X[:5],
        0.4,
        beta,
        n_samples=500,
        random_state=1,
        max_iter=lda.max_doc_update_iter,
        tol=lda.mean_change_tol,
    )
    np.testing.assert_allclose(
        lda.log_evidence(X[:5], n_samples=500, random_state=1), expected, rtol=1e-12
    )
    words = X[:5].sum(axis=1)
    assert importance_sampled_nll(lda, X[:5], n_samples=500, random_state=1) == pytest.approx(
        np.mean(-expected / words), rel=1e-12
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_samples=0), "n_samples"),
        (dict(n_samples=True), "n_samples"),
        (dict(inflation=-1.0), "inflation"),
        (dict(inflation=np.inf), "inflation"),
        (dict(max_iter=0), "max_iter"),
    ],
)
def test_bad_sampling_parameters(kwargs, message):
    beta = _topics(2, 3, 0)
    with pytest.raises(ValueError, match=message):
        lda_log_evidence(np.ones((1, 3)), 0.5, beta, **kwargs)
    with pytest.raises(ValueError, match=message):
        ctm_log_evidence(np.ones((1, 3)), [0.0], [[1.0]], beta, **kwargs)


def test_bad_parameters():
    beta = _topics(2, 3, 0)
    with pytest.raises(ValueError, match="sum to 1"):
        lda_log_evidence(np.ones((1, 3)), 0.5, 2 * beta)
    with pytest.raises(ValueError, match="shape"):
        lda_log_evidence(np.ones((1, 4)), 0.5, beta)
    with pytest.raises(ValueError, match="doc_topic_prior"):
        lda_log_evidence(np.ones((1, 3)), [0.5, 0.5, 0.5], beta)
    with pytest.raises(ValueError, match="positive definite"):
        ctm_log_evidence(np.ones((1, 3)), [0.0], [[-1.0]], beta)
    with pytest.raises(ValueError, match="prior_mean"):
        ctm_log_evidence(np.ones((1, 3)), [0.0, 0.0], [[1.0]], beta)
    with pytest.raises(ValueError, match="Negative"):
        ctm_log_evidence(-np.ones((1, 3)), [0.0], [[1.0]], beta)


def test_bad_posteriors_and_widths():
    beta = _topics(2, 3, 0)
    with pytest.raises(ValueError, match="positive definite"):
        ctm_log_evidence(
            np.ones((1, 3)),
            [0.0],
            [[1.0]],
            beta,
            inflation=0.0,
            posterior=(np.zeros((1, 1)), -np.ones((1, 1))),
        )
    with pytest.raises(ValueError, match="posterior"):
        lda_log_evidence(np.ones((1, 3)), 0.5, beta, posterior=np.ones((2, 2)))
    lda = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(_documents(20, 5, 0))
    with pytest.raises(ValueError, match="features"):
        lda.log_evidence(np.ones((2, 4)))


def test_laplace_warns_when_newton_stops_early():
    beta = _topics(3, 6, 1)
    X = sp.csr_matrix(_documents(3, 6, 2) * 5.0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        laplace_posterior(X, np.zeros(2), np.eye(2), beta, max_iter=1)
