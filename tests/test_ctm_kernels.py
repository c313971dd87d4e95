"""The correlated topic model's per-document kernels against independent references.

References: finite differences of the log-likelihood, the per-word closed
form of the gradient and Hessian written out entry by entry, a Python loop
over documents and words, Gauss-Hermite quadrature for the Monte Carlo
expectations, scipy's Gaussian densities for the KL divergence and a
numerical minimisation for the nearest positive semi-definite matrix.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.stats import multivariate_normal

from skvi.models.ctm import kernels
from skvi.models.ctm.kernels import (
    document_elbo,
    expected_gradient_hessian,
    gauss_hermite_expectation,
    gradient_hessian,
    kl_gaussian,
    log_likelihood,
    psd_projection,
)


def random_problem(seed, n_docs=5, n_words=7, n_topics=4, max_count=5, empty=False):
    """Random counts (CSR), logits and topic-word matrix."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, max_count + 1, size=(n_docs, n_words)) * (
        rng.random((n_docs, n_words)) < 0.6
    )
    dense[:, 0] += 1  # no document is empty unless asked for
    if empty:
        dense[1] = 0
    X = sp.csr_array(dense.astype(np.float64))
    beta = rng.dirichlet(np.ones(n_words), size=n_topics)
    eta = rng.normal(scale=1.5, size=(n_docs, n_topics - 1))
    return X, eta, beta


def softmax_by_hand(eta):
    """``softmax([eta, 0])`` for one vector of logits, entry by entry."""
    expo = [np.exp(e) for e in eta] + [1.0]
    total = sum(expo)
    return np.array([e / total for e in expo])


def word_closed_form(eta, beta_column):
    """Gradient and Hessian of ``log(theta . beta_v)`` for one word, entry by entry."""
    dim = len(eta)
    theta = softmax_by_hand(eta)
    mix = sum(theta[k] * beta_column[k] for k in range(dim + 1))
    p = [theta[k] * beta_column[k] / mix for k in range(dim + 1)]
    grad = np.array([p[i] - theta[i] for i in range(dim)])
    hess = np.empty((dim, dim))
    for i in range(dim):
        for j in range(dim):
            delta = 1.0 if i == j else 0.0
            hess[i, j] = -(delta * theta[i] - theta[i] * theta[j]) + (delta * p[i] - p[i] * p[j])
    return np.log(mix), grad, hess


def document_loop_reference(X, eta, beta):
    """Log-likelihood, gradient and Hessian by loops over documents and their words."""
    X = sp.csr_array(X)
    n_docs, dim = eta.shape
    loglik, g, H = np.zeros(n_docs), np.zeros((n_docs, dim)), np.zeros((n_docs, dim, dim))
    for d in range(n_docs):
        for j in range(X.indptr[d], X.indptr[d + 1]):
            value, grad, hess = word_closed_form(eta[d], beta[:, X.indices[j]])
            loglik[d] += X.data[j] * value
            g[d] += X.data[j] * grad
            H[d] += X.data[j] * hess
    return loglik, g, H


def test_log_likelihood_against_dense_formula():
    X, eta, beta = random_problem(0, empty=True)
    dense = X.toarray()
    expected = [
        sum(
            dense[d, v] * np.log(softmax_by_hand(eta[d]) @ beta[:, v])
            for v in range(dense.shape[1])
        )
        for d in range(dense.shape[0])
    ]
    np.testing.assert_allclose(log_likelihood(X, eta, beta), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gradient_hessian_against_finite_differences(seed):
    # Richardson-extrapolated central differences: truncation error O(h^4)
    # (about 1e-12 at h = 1e-3), rounding error about 1e-15 |L| / h^2 for
    # the second differences, far below the 1e-6 relative tolerance.
    X, eta, beta = random_problem(seed, n_docs=4, n_words=7, n_topics=4)
    g, H = gradient_hessian(X, eta, beta)
    dim = eta.shape[1]
    eye = np.eye(dim)

    def first(h):
        shifts = np.stack(
            [eta + h * eye[i] for i in range(dim)] + [eta - h * eye[i] for i in range(dim)]
        )
        values = log_likelihood(X, shifts, beta)
        return ((values[:dim] - values[dim:]) / (2 * h)).T

    def second(h):
        out = np.empty((X.shape[0], dim, dim))
        for i in range(dim):
            for j in range(dim):
                shifts = np.stack(
                    [
                        eta + h * (si * eye[i] + sj * eye[j])
                        for si, sj in [(1, 1), (1, -1), (-1, 1), (-1, -1)]
                    ]
                )
                f = log_likelihood(X, shifts, beta)
                out[:, i, j] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
        return out

    h = 1e-3
    g_fd = (4 * first(h / 2) - first(h)) / 3
    H_fd = (4 * second(h / 2) - second(h)) / 3
    for d in range(X.shape[0]):
        assert np.abs(g[d] - g_fd[d]).max() < 1e-6 * np.abs(g_fd[d]).max()
        assert np.abs(H[d] - H_fd[d]).max() < 1e-6 * np.abs(H_fd[d]).max()


@pytest.mark.parametrize("count", [1.0, 3.0])
def test_single_word_document_equals_closed_form(count):
    rng = np.random.default_rng(4)
    n_topics, n_words, word = 5, 6, 2
    beta = rng.dirichlet(np.ones(n_words), size=n_topics)
    eta = rng.normal(size=(1, n_topics - 1))
    X = sp.csr_array(([count], ([0], [word])), shape=(1, n_words))
    value, grad, hess = word_closed_form(eta[0], beta[:, word])
    g, H = gradient_hessian(X, eta, beta)
    np.testing.assert_allclose(g[0], count * grad, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H[0], count * hess, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(log_likelihood(X, eta, beta)[0], count * value, rtol=1e-12)


@pytest.mark.parametrize("tiny_chunks", [False, True])
def test_vectorised_equals_document_loop(tiny_chunks, monkeypatch):
    n_topics = 4
    X, eta, beta = random_problem(5, n_docs=9, n_words=30, n_topics=n_topics, empty=True)
    if tiny_chunks:
        # Pieces of at most 5 non-zeros: documents split into pieces, in
        # several chunks of distinct documents each.
        monkeypatch.setattr(kernels, "_CHUNK_BYTES", 8 * n_topics * 5)
        chunks = kernels._Layout(X, n_topics).chunks
        docs = np.concatenate([d for d, _ in chunks])
        assert all(np.unique(d).size == d.size for d, _ in chunks)
        assert np.bincount(docs).max() > 2 and len(chunks) > 3
    loglik, g, H = document_loop_reference(X, eta, beta)
    np.testing.assert_allclose(log_likelihood(X, eta, beta), loglik, rtol=1e-12)
    g_vec, H_vec = gradient_hessian(X, eta, beta)
    np.testing.assert_allclose(g_vec, g, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H_vec, H, rtol=1e-10, atol=1e-12)
    assert np.all(g_vec[1] == 0) and np.all(H_vec[1] == 0)
    g_only, none = gradient_hessian(X, eta, beta, hessian=False)
    assert none is None
    np.testing.assert_allclose(g_only, g, rtol=1e-10, atol=1e-12)

    # A stack of samples: each slice equals the loop at that slice.
    stack = eta + np.random.default_rng(6).normal(size=(3,) + eta.shape)
    g_stack, H_stack = gradient_hessian(X, stack, beta)
    ll_stack = log_likelihood(X, stack, beta)
    for s in range(3):
        ll_s, g_s, H_s = document_loop_reference(X, stack[s], beta)
        np.testing.assert_allclose(ll_stack[s], ll_s, rtol=1e-12)
        np.testing.assert_allclose(g_stack[s], g_s, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(H_stack[s], H_s, rtol=1e-10, atol=1e-12)


def test_expectation_is_mean_over_documented_draws():
    X, mean, beta = random_problem(7, n_docs=4, n_words=8, n_topics=3)
    rng = np.random.default_rng(8)
    A = rng.normal(size=(4, 2, 2))
    L = np.linalg.cholesky(A @ A.transpose(0, 2, 1) + 0.1 * np.eye(2))
    est = expected_gradient_hessian(X, mean, L, beta, n_samples=6, rng=np.random.default_rng(9))
    eps = np.random.default_rng(9).standard_normal((6, 4, 2))
    ll, g, H = np.zeros(4), np.zeros((4, 2)), np.zeros((4, 2, 2))
    for s in range(6):
        eta = np.stack([mean[d] + L[d] @ eps[s, d] for d in range(4)])
        ll_s, g_s, H_s = document_loop_reference(X, eta, beta)
        ll, g, H = ll + ll_s / 6, g + g_s / 6, H + H_s / 6
    np.testing.assert_allclose(est.loglik_hat, ll, rtol=1e-12)
    np.testing.assert_allclose(est.g_hat, g, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.H_hat, H, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("tiny_chunks", [False, True])
def test_topic_counts_are_the_expected_responsibilities(tiny_chunks, monkeypatch):
    # sum_d n_dv E[p_dv] by loops over the draws, documents and words; the
    # counts of each word add up to its count in the corpus (sum_k p_k = 1).
    if tiny_chunks:
        monkeypatch.setattr(kernels, "_CHUNK_BYTES", 64)
    X, mean, beta = random_problem(11, n_docs=6, n_words=9, n_topics=4, empty=True)
    sd = np.abs(np.random.default_rng(12).normal(size=mean.shape))
    est = expected_gradient_hessian(
        X, mean, sd, beta, n_samples=5, rng=np.random.default_rng(13), topic_counts=True
    )
    eps = np.random.default_rng(13).standard_normal((5,) + mean.shape)
    dense = X.toarray()
    reference = np.zeros(beta.shape)
    for s in range(5):
        for d in range(dense.shape[0]):
            theta = softmax_by_hand(mean[d] + sd[d] * eps[s, d])
            for v in np.flatnonzero(dense[d]):
                p = theta * beta[:, v]
                reference[:, v] += dense[d, v] * p / p.sum() / 5
    np.testing.assert_allclose(est.topic_counts, reference, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(est.topic_counts.sum(axis=0), dense.sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("dim, full", [(1, False), (2, False), (2, True)])
def test_expectations_against_gauss_hermite(dim, full):
    n_docs, n_samples = 3, 20000
    X, mean, beta = random_problem(10 + dim, n_docs=n_docs, n_words=6, n_topics=dim + 1)
    rng = np.random.default_rng(20 + dim)
    if full:
        A = rng.normal(scale=0.6, size=(n_docs, dim, dim))
        cov = A @ A.transpose(0, 2, 1) + 0.2 * np.eye(dim)
        factor = np.linalg.cholesky(cov)
    else:
        factor = rng.uniform(0.3, 1.2, size=(n_docs, dim))
        cov = factor[:, :, None] ** 2 * np.eye(dim)
    est = expected_gradient_hessian(X, mean, factor, beta, n_samples, rng=np.random.default_rng(0))

    for d in range(n_docs):
        doc = X[[d]]

        def moments(nodes):
            g, H = gradient_hessian(doc, nodes[:, None, :], beta)
            ll = log_likelihood(doc, nodes[:, None, :], beta)
            return ll[:, 0], g[:, 0], H[:, 0], ll[:, 0] ** 2, g[:, 0] ** 2, H[:, 0] ** 2

        reference = gauss_hermite_expectation(moments, mean[d], cov[d], n_points=40)
        finer = gauss_hermite_expectation(moments, mean[d], cov[d], n_points=50)
        for a, b in zip(reference, finer):  # converged far below the standard errors
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        ll, g, H, ll2, g2, H2 = reference
        # Monte Carlo standard errors sqrt(Var f / S) of each entry, the
        # variances by the same quadrature; 5 standard errors per entry.
        for value, first, second in [
            (est.loglik_hat[d], ll, ll2),
            (est.g_hat[d], g, g2),
            (est.H_hat[d], H, H2),
        ]:
            se = np.sqrt(np.maximum(second - first**2, 0.0) / n_samples)
            assert np.all(np.abs(value - first) <= 5 * se + 1e-10)


def test_gauss_hermite_moments():
    m, C = np.array([0.5, -1.0]), np.array([[1.0, 0.3], [0.3, 0.5]])
    mean, second = gauss_hermite_expectation(lambda e: (e, e[:, :, None] * e[:, None, :]), m, C, 4)
    np.testing.assert_allclose(mean, m, atol=1e-13)
    np.testing.assert_allclose(second, C + np.outer(m, m), atol=1e-13)
    # E exp(a eta) = exp(a m + a^2 C / 2) in one dimension.
    value = gauss_hermite_expectation(lambda e: np.exp(0.7 * e[:, 0]), [0.2], [[0.8]], 30)
    np.testing.assert_allclose(value, np.exp(0.7 * 0.2 + 0.49 * 0.8 / 2), rtol=1e-12)


def random_symmetric(rng, n, d):
    A = rng.normal(size=(n, d, d))
    return A + A.transpose(0, 2, 1)


def test_psd_projection_is_psd_and_fixes_psd_matrices():
    rng = np.random.default_rng(11)
    A = random_symmetric(rng, 50, 5)
    P = psd_projection(A)
    assert np.linalg.eigvalsh(P).min() >= -1e-12
    np.testing.assert_array_equal(P, P.transpose(0, 2, 1))
    B = rng.normal(size=(50, 5, 3))
    psd = B @ B.transpose(0, 2, 1)
    np.testing.assert_allclose(psd_projection(psd), psd, atol=1e-12)
    # A negative definite matrix projects to zero.
    np.testing.assert_allclose(psd_projection(-psd - np.eye(5)), 0.0, atol=1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_psd_projection_is_frobenius_nearest(d):
    # Brute force: minimise ||A - C C^T||_F over lower-triangular C from
    # several starts; no PSD matrix is nearer than the projection, which the
    # minimiser finds.
    rng = np.random.default_rng(12 + d)
    rows, cols = np.tril_indices(d)
    for A in random_symmetric(rng, 3, d):
        P = psd_projection(A[None])[0]

        def distance(params):
            C = np.zeros((d, d))
            C[rows, cols] = params
            return np.sum((A - C @ C.T) ** 2)

        best = min(
            (
                minimize(
                    distance, rng.normal(size=rows.size), method="BFGS", options={"gtol": 1e-12}
                )
                for _ in range(5)
            ),
            key=lambda r: r.fun,
        )
        C = np.zeros((d, d))
        C[rows, cols] = best.x
        assert np.sum((A - P) ** 2) <= best.fun + 1e-10
        np.testing.assert_allclose(C @ C.T, P, atol=1e-5)
        # ... and random PSD matrices are never nearer.
        for _ in range(200):
            R = rng.normal(size=(d, d))
            assert np.sum((A - P) ** 2) <= np.sum((A - R @ R.T) ** 2)


def kl_reference(m, V, mu, Sigma):
    """KL divergence from scipy's entropy and an explicit cross-entropy integral."""
    d = len(m)
    Sigma_inv = np.linalg.inv(Sigma)
    cross_entropy = 0.5 * (
        d * np.log(2 * np.pi)
        + np.linalg.slogdet(Sigma)[1]
        + np.trace(np.linalg.solve(Sigma, V))
        + (m - mu) @ Sigma_inv @ (m - mu)
    )
    return cross_entropy - multivariate_normal(m, V).entropy()


def test_kl_gaussian_against_references():
    rng = np.random.default_rng(13)
    n, d = 6, 3
    mean = rng.normal(size=(n, d))
    A = rng.normal(size=(n, d, d))
    cov = A @ A.transpose(0, 2, 1) + 0.3 * np.eye(d)
    mu = rng.normal(size=d)
    S = rng.normal(size=(d, d))
    Sigma = S @ S.T + np.eye(d)
    args = (mu, np.linalg.inv(Sigma), np.linalg.slogdet(Sigma)[1])
    kl = kl_gaussian(mean, cov, *args)
    np.testing.assert_allclose(
        kl, [kl_reference(mean[i], cov[i], mu, Sigma) for i in range(n)], rtol=1e-10
    )
    variances = rng.uniform(0.2, 2.0, size=(n, d))
    np.testing.assert_allclose(
        kl_gaussian(mean, variances, *args),
        [kl_reference(mean[i], np.diag(variances[i]), mu, Sigma) for i in range(n)],
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        kl_gaussian(mean, variances[:, :, None] * np.eye(d), *args),
        kl_gaussian(mean, variances, *args),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        kl_gaussian(np.tile(mu, (2, 1)), np.stack([Sigma] * 2), *args), 0.0, atol=1e-12
    )


def test_kl_gaussian_against_monte_carlo():
    rng = np.random.default_rng(14)
    m, V = np.array([0.5, -0.3]), np.array([[0.8, 0.2], [0.2, 0.5]])
    mu, Sigma = np.array([0.0, 0.4]), np.array([[1.5, -0.4], [-0.4, 1.0]])
    x = rng.multivariate_normal(m, V, size=200000)
    log_ratio = multivariate_normal(m, V).logpdf(x) - multivariate_normal(mu, Sigma).logpdf(x)
    se = log_ratio.std() / np.sqrt(x.shape[0])
    kl = kl_gaussian(m[None], V[None], mu, np.linalg.inv(Sigma), np.linalg.slogdet(Sigma)[1])[0]
    assert abs(kl - log_ratio.mean()) < 5 * se


def test_document_elbo_diagonal_equals_full():
    X, mean, beta = random_problem(15, n_docs=5, n_words=9, n_topics=4)
    variances = np.random.default_rng(16).uniform(0.1, 1.0, size=mean.shape)
    mu, Sigma = np.full(3, -0.2), np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.0]])
    diag = document_elbo(X, mean, variances, beta, mu, Sigma, n_samples=50, rng=17)
    full = document_elbo(
        X, mean, variances[:, :, None] * np.eye(3), beta, mu, Sigma, n_samples=50, rng=17
    )
    np.testing.assert_allclose(diag, full, rtol=1e-12)


def test_document_elbo_against_quadrature_and_evidence():
    # K - 1 = 1: E_q L by quadrature minus the closed-form KL, and the
    # bound lies below the evidence log E_prior exp(L), also by quadrature.
    X, mean, beta = random_problem(18, n_docs=3, n_words=6, n_topics=2)
    variances = np.array([[0.3], [1.0], [0.05]])
    mu, Sigma = np.array([0.3]), np.array([[2.0]])
    n_samples = 20000
    elbo = document_elbo(X, mean, variances, beta, mu, Sigma, n_samples=n_samples, rng=19)
    kl = kl_gaussian(mean, variances, mu, 1 / Sigma, np.log(Sigma[0, 0]))
    for d in range(3):
        doc = X[[d]]

        def loglik(nodes):
            ll = log_likelihood(doc, nodes[:, None, :], beta)[:, 0]
            return ll, ll**2, np.exp(ll)

        first, second, _ = gauss_hermite_expectation(loglik, mean[d], np.diag(variances[d]), 60)
        se = np.sqrt((second - first**2) / n_samples)
        assert abs(elbo[d] - (first - kl[d])) < 5 * se
        evidence = np.log(gauss_hermite_expectation(loglik, mu, Sigma, 60)[2])
        assert first - kl[d] <= evidence


def test_simple_bound_against_quadrature_and_finite_differences():
    # K = 3: E_q[theta], E_q[theta theta^T] and E_q[lse([eta, 0])] by 40 x 40
    # Gauss-Hermite nodes give the data bound, its gradient in the mean
    # (which must equal the finite differences of that bound: the envelope
    # theorem for the optimal q(z)) and its curvature; 20,000 draws agree.
    from skvi.models.ctm.kernels import simple_bound_derivatives, topic_proportions

    X, _, beta = random_problem(21, n_docs=1, n_words=6, n_topics=3)
    mean = np.array([[0.4, -0.3]])
    L = np.array([[[0.8, 0.0], [0.3, 0.6]]])
    cov = L[0] @ L[0].T
    words = X.sum()

    def lse(eta):
        return np.log1p(np.exp(eta).sum(axis=-1))

    def bound(m):
        e_lse = gauss_hermite_expectation(lse, m, cov, n_points=40)
        return log_likelihood(X, m[None], beta)[0] + words * (lse(m) - e_lse)

    def moments(eta):
        theta = topic_proportions(eta)[:, :2]
        return theta, theta[:, :, None] * theta[:, None, :]

    e_theta, e_outer = gauss_hermite_expectation(moments, mean[0], cov, n_points=40)
    h = 1e-5
    fd = np.array([(bound(mean[0] + h * e) - bound(mean[0] - h * e)) / (2 * h) for e in np.eye(2)])
    est = simple_bound_derivatives(X, mean, L, beta, 20000, rng=np.random.default_rng(0))
    g_at_mean, _ = gradient_hessian(X, mean, beta, hessian=False)
    c = g_at_mean[0] + words * topic_proportions(mean)[0, :2]
    np.testing.assert_allclose(c - words * e_theta, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(est.g_hat[0], fd, atol=0.005 * words)
    np.testing.assert_allclose(
        est.H_hat[0], words * (e_outer - np.diag(e_theta)), atol=0.005 * words
    )
    assert est.loglik_hat[0] == pytest.approx(bound(mean[0]), abs=0.01 * words)
    # The optimal bound sums the words' topics out: it is the tighter one.
    optimal = gauss_hermite_expectation(
        lambda eta: log_likelihood(sp.csr_array(np.repeat(X.toarray(), len(eta), 0)), eta, beta),
        mean[0],
        cov,
        n_points=40,
    )
    assert optimal > bound(mean[0])


def test_mean_field_bound_against_finite_differences_and_quadrature():
    # The deterministic mean-field bound: its gradient in the mean and in the
    # variances by central differences, and, for the same q, below the
    # simple bound computed by quadrature (log zeta bounds E_q[lse] above).
    from skvi.models.ctm.kernels import mean_field_bound_derivatives

    X, _, beta = random_problem(22, n_docs=1, n_words=6, n_topics=3)
    mean, var = np.array([[0.4, -0.3]]), np.array([[0.5, 0.8]])

    def bound(m, v):
        return mean_field_bound_derivatives(X, m[None], v[None], beta).loglik_hat[0]

    est = mean_field_bound_derivatives(X, mean, var, beta)
    h = 1e-6
    grad_m = [
        (bound(mean[0] + h * e, var[0]) - bound(mean[0] - h * e, var[0])) / (2 * h)
        for e in np.eye(2)
    ]
    grad_v = [
        (bound(mean[0], var[0] + h * e) - bound(mean[0], var[0] - h * e)) / (2 * h)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(est.g_hat[0], grad_m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.diag(est.H_hat[0]), 2 * np.array(grad_v), rtol=1e-6, atol=1e-8)
    e_lse = gauss_hermite_expectation(
        lambda eta: np.log1p(np.exp(eta).sum(axis=-1)), mean[0], np.diag(var[0]), n_points=40
    )
    simple = log_likelihood(X, mean, beta)[0] + X.sum() * (np.log1p(np.exp(mean[0]).sum()) - e_lse)
    assert est.loglik_hat[0] < simple


@pytest.mark.parametrize(
    "function", [kernels.expected_gradient_hessian, kernels.simple_bound_derivatives]
)
@pytest.mark.parametrize("diagonal", [True, False])
def test_quadrature_weights_against_one_node_at_a_time(function, diagonal):
    # A weighted rule (eps = the nodes, weights = theirs) equals the weighted
    # sum of single-draw evaluations at each node.
    rng = np.random.RandomState(3)
    X = sp.csr_matrix(rng.poisson(1.5, (3, 7)).astype(float))
    beta = rng.dirichlet(np.ones(7), 3)
    mean = rng.normal(size=(3, 2))
    if diagonal:
        factor = rng.uniform(0.3, 1.2, (3, 2))
    else:
        A = rng.normal(size=(3, 2, 2))
        factor = np.linalg.cholesky(A @ np.swapaxes(A, 1, 2) + np.eye(2))
    nodes, weights = kernels.gauss_hermite_rule(2, 5)
    got = function(
        X,
        mean,
        factor,
        beta,
        len(weights),
        eps=nodes[:, None, :],
        weights=weights,
        topic_counts=True,
    )
    singles = [
        function(X, mean, factor, beta, 1, eps=z[None, None, :], topic_counts=True) for z in nodes
    ]
    for field in ("g_hat", "H_hat", "loglik_hat", "topic_counts"):
        expected = sum(w * getattr(one, field) for w, one in zip(weights, singles))
        np.testing.assert_allclose(getattr(got, field), expected, rtol=1e-10, atol=1e-12)


def test_gauss_hermite_rule_moments():
    # Exact for polynomials of degree below 2 n_points: E[z^4] = 3, E[z1^2 z2^2] = 1.
    z, w = kernels.gauss_hermite_rule(2, 4)
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.sum(w * z[:, 0] ** 4) == pytest.approx(3.0, abs=1e-12)
    assert np.sum(w * z[:, 0] ** 2 * z[:, 1] ** 2) == pytest.approx(1.0, abs=1e-12)
