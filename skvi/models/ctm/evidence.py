"""The test likelihood of correlated-topic-model documents by importance sampling.

``log p(w_d)``, the document's topic logits integrated out, from the
model's parameters alone (see :mod:`skvi.metrics.evidence`), with the
Laplace approximation of each document's posterior as the default proposal.
"""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ...expfam import cholesky_factor
from ...validation import check_counts
from .._importance import check_sampling, check_topics, importance_average
from . import kernels

__all__ = ["ctm_log_evidence", "gaussian_log_density", "laplace_posterior"]


def ctm_log_evidence(
    X,
    prior_mean,
    prior_covariance,
    topic_word,
    *,
    n_samples=1000,
    inflation=1.0,
    posterior=None,
    max_iter=100,
    random_state=None,
):
    """Importance-sampling estimate of ``log p(w_d)`` under the correlated topic model.

    ``eta_d ~ N(mu, Sigma)``, ``theta_d = softmax([eta_d, 0])`` and each
    word ``w ~ sum_k theta_dk beta_k``; ``p(w_d)`` is the sequence
    probability of the document's words, with ``eta_d`` integrated out by
    importance sampling from ``N(m_d, V_d + inflation * I)``.  By default
    ``(m_d, V_d)`` is the Laplace approximation of the document's posterior:
    ``m_d`` its mode, found by Newton steps (with backtracking) whose
    curvature is ``Sigma^{-1}`` plus the positive semi-definite part of the
    log-likelihood's negative Hessian, and ``V_d`` the inverse of that
    curvature at the mode.  The model's own posteriors can be passed
    instead (as :meth:`skvi.SVICorrelatedTopicModel.log_evidence` does).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Word counts of the documents.
    prior_mean : array-like of shape (n_topics - 1,)
        ``mu``.
    prior_covariance : array-like of shape (n_topics - 1, n_topics - 1)
        ``Sigma``, positive definite.
    topic_word : array-like of shape (n_topics, n_words)
        The topics ``beta``: positive, each row summing to 1.
    n_samples : int, default=1000
        Draws per document.
    inflation : float, default=1.0
        Added to the diagonal of each posterior covariance for the proposal.
    posterior : tuple (means, covariances) or None, default=None
        Each document's Gaussian: means of shape ``(n_docs, n_topics - 1)``
        and covariances of shape ``(n_docs, n_topics - 1, n_topics - 1)``,
        or ``(n_docs, n_topics - 1)`` for diagonal ones.  By default the
        Laplace approximation.
    max_iter : int, default=100
        Most Newton steps of the Laplace approximation.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    log_evidence : ndarray of shape (n_docs,)
        The estimate of ``log p(w_d)`` (a lower bound in expectation).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.metrics import ctm_log_evidence
    >>> beta = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> X = np.array([[3, 1, 0], [0, 1, 2]])
    >>> log_p = ctm_log_evidence(X, [0.0], [[1.0]], beta, n_samples=2000, random_state=0)
    >>> bool(np.all(log_p < 0)) and log_p.shape == (2,)
    True
    """
    check_sampling(n_samples, inflation, "ctm_log_evidence")
    X = check_counts(X, "ctm_log_evidence")
    beta = check_topics(topic_word, X.shape[1], "ctm_log_evidence")
    n_docs, d = X.shape[0], beta.shape[0] - 1
    if d < 1:
        raise ValueError("ctm_log_evidence needs at least 2 topics.")
    mu = np.asarray(prior_mean, dtype=np.float64)
    sigma = np.asarray(prior_covariance, dtype=np.float64)
    if mu.shape != (d,) or sigma.shape != (d, d):
        raise ValueError(
            f"prior_mean and prior_covariance must have shapes ({d},) and ({d}, {d}) for "
            f"{d + 1} topics; got {mu.shape} and {sigma.shape}."
        )
    try:
        prior = cholesky_factor(sigma)
    except (ValueError, np.linalg.LinAlgError):  # not finite, or not positive definite
        raise ValueError("prior_covariance must be positive definite.") from None
    if posterior is None:
        mean, cov = laplace_posterior(X, mu, sigma, beta, max_iter=max_iter)
    else:
        mean, cov = (np.asarray(a, dtype=np.float64) for a in posterior)
        if cov.shape == (n_docs, d):
            cov = cov[:, :, None] * np.eye(d)
        if mean.shape != (n_docs, d) or cov.shape != (n_docs, d, d):
            raise ValueError(
                f"posterior must be means of shape ({n_docs}, {d}) and covariances of shape "
                f"({n_docs}, {d}, {d}) or ({n_docs}, {d}); got {mean.shape} and {cov.shape}."
            )
    try:
        proposal = cholesky_factor(cov + inflation * np.eye(d))
    except (ValueError, np.linalg.LinAlgError):  # not finite, or not positive definite
        raise ValueError(
            "posterior covariances plus inflation * I must be positive definite."
        ) from None
    rng = check_random_state(random_state)

    def log_weights(size):
        eps = rng.standard_normal((size, n_docs, d))
        eta = mean + np.einsum("nij,snj->sni", proposal, eps)
        return (
            kernels.log_likelihood(X, eta, beta)
            + gaussian_log_density(eta - mu, prior)
            - gaussian_log_density(eta - mean, proposal)
        )

    return importance_average(log_weights, n_samples, n_docs * d)


def laplace_posterior(X, prior_mean, prior_covariance, topic_word, *, max_iter=100, tol=1e-8):
    """The Laplace approximation of each document's posterior of its logits.

    The mode ``m_d`` of ``log p(w_d | eta) + log N(eta; mu, Sigma)`` by
    Newton steps, all documents at once: the curvature is ``A = Sigma^{-1} +
    P_psd(-H(eta))`` (``H`` the log-likelihood's Hessian, whose negative
    part the projection drops, so that ``A`` is positive definite and every
    step ascends), and a document's step is halved until its objective
    rises.  The covariance is ``A^{-1}`` at the mode.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, n_words)
        Word counts.
    prior_mean : ndarray of shape (n_topics - 1,)
        ``mu``.
    prior_covariance : ndarray of shape (n_topics - 1, n_topics - 1)
        ``Sigma``.
    topic_word : ndarray of shape (n_topics, n_words)
        The topics ``beta``.
    max_iter : int, default=100
        Most Newton steps.
    tol : float, default=1e-8
        A document stops when its objective rises by less than ``tol *
        max(1, |objective|)``, or when no halving of its step raises it.

    Returns
    -------
    mean : ndarray of shape (n_docs, n_topics - 1)
    covariance : ndarray of shape (n_docs, n_topics - 1, n_topics - 1)

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.evidence import laplace_posterior
    >>> beta = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> m, V = laplace_posterior(sp.csr_matrix([[5.0, 0.0, 0.0]]), np.zeros(1), np.eye(1), beta)
    >>> bool(m[0, 0] > 0 and 0 < V[0, 0, 0] < 1)  # leans to topic 1, narrower than the prior
    True
    """
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}.")
    X = sp.csr_matrix(X, dtype=np.float64)
    mu = np.asarray(prior_mean, dtype=np.float64)
    precision = np.linalg.inv(np.asarray(prior_covariance, dtype=np.float64))
    n_docs = X.shape[0]

    def objective(rows, eta):
        diff = eta - mu
        return kernels.log_likelihood(X[rows], eta, topic_word) - 0.5 * np.einsum(
            "ni,ij,nj->n", diff, precision, diff
        )

    def curvature(rows, eta):
        g, H = kernels.gradient_hessian(X[rows], eta, topic_word)
        return g - (eta - mu) @ precision, precision + kernels.psd_projection(-H)

    mean = np.tile(mu, (n_docs, 1))
    value = objective(np.arange(n_docs), mean)
    active = np.arange(n_docs)
    for _ in range(max_iter):
        if active.size == 0:
            break
        grad, A = curvature(active, mean[active])
        step = np.linalg.solve(A, grad[..., None])[..., 0]
        # Halve each document's step until its objective rises.
        todo, scale = active, np.ones(active.size)
        rose = np.zeros(n_docs)
        for _ in range(30):
            candidate = mean[todo] + scale[:, None] * step[np.searchsorted(active, todo)]
            new = objective(todo, candidate)
            better = new >= value[todo]
            accept = todo[better]
            rose[accept] = new[better] - value[accept]
            mean[accept], value[accept] = candidate[better], new[better]
            todo, scale = todo[~better], 0.5 * scale[~better]
            if todo.size == 0:
                break
        active = active[rose[active] > tol * np.maximum(1.0, np.abs(value[active]))]
    if active.size:
        warnings.warn(
            f"The Laplace approximation's Newton steps did not converge for {active.size} of "
            f"{n_docs} documents in max_iter={max_iter} steps; increase max_iter.",
            ConvergenceWarning,
        )
    _, A = curvature(np.arange(n_docs), mean)
    cov = np.linalg.inv(A)
    return mean, 0.5 * (cov + np.swapaxes(cov, -1, -2))


def gaussian_log_density(diff, chol):
    """``log N(x; m, L L^T)`` of ``diff = x - m``.

    Parameters
    ----------
    diff : ndarray of shape (..., n, d)
        Deviations from the mean.
    chol : ndarray of shape (d, d) or (n, d, d)
        Lower Cholesky factor of the covariance, shared or one per row.

    Returns
    -------
    ndarray of shape (..., n)

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.evidence import gaussian_log_density
    >>> float(gaussian_log_density(np.zeros((1, 1)), np.eye(1))[0].round(4))  # -log(2 pi) / 2
    -0.9189
    """
    d = diff.shape[-1]
    if chol.ndim == 2:
        z = np.linalg.solve(chol, np.moveaxis(diff, -1, 0).reshape(d, -1)).T.reshape(diff.shape)
        logdet = np.sum(np.log(np.diag(chol)))
    else:
        # One inverse per row, applied to every draw (not a solve per draw and row).
        z = np.einsum("nij,...nj->...ni", np.linalg.inv(chol), diff)
        logdet = np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * np.sum(z * z, axis=-1) - logdet - 0.5 * d * np.log(2.0 * np.pi)
