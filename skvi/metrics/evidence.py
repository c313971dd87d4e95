"""The test likelihood of topic models by importance sampling.

The measure of "Monte Carlo structured SVI for two-level non-conjugate
models" (Sheth and Khardon; its eq. 105): a held-out document's evidence
``p(w_d) = E_{p(theta)}[p(w_d | theta)]``, with the document's topic
proportions integrated out, is estimated by importance sampling::

    log p(w_d) ~ log mean_s p(w_d | theta_s) p(theta_s) / r(theta_s),  theta_s ~ r,

where the proposal ``r`` is the document's posterior fitted with the model
held fixed, widened so that its tails cover the integrand's.  The estimate
is unbiased for ``p(w_d)``, so its logarithm is a lower bound in
expectation, tightening as ``n_samples`` grows.

Two functions compute it from a model's parameters alone, so that any
library's fitted topics can be scored by the same code:

* :func:`lda_log_evidence`: a Dirichlet prior ``alpha`` and topics
  ``beta``; the proposal is the document's variational Dirichlet (the LDA
  E-step with the topics fixed), its concentration divided by ``1 +
  inflation``.
* :func:`ctm_log_evidence`: Blei and Lafferty's logistic-normal prior
  ``N(mu, Sigma)`` on the logits ``eta`` (``theta = softmax([eta, 0])``) and
  topics ``beta``; the proposal is a Gaussian posterior of ``eta`` (by
  default the Laplace approximation at the posterior mode), its covariance
  plus ``inflation`` on the diagonal.

:func:`importance_sampled_nll` averages ``-log p(w_d) / N_d`` over the
documents, for any model with a ``log_evidence`` method (skvi's LDA and
correlated topic model).
"""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ..models.ctm import kernels
from ..models.lda.estep import e_step
from .topics import _check_counts

__all__ = ["ctm_log_evidence", "importance_sampled_nll", "lda_log_evidence"]

#: Entries of one chunk of importance draws, (draws, documents, topics).
_CHUNK_ENTRIES = 2**22


def importance_sampled_nll(model, X, *, n_samples=1000, inflation=1.0, random_state=None):
    """Per-word test negative log-likelihood by importance sampling.

    The measure of "Monte Carlo structured SVI for two-level non-conjugate
    models" (its eq. 105): each document's ``log p(w_d)`` is estimated by
    the model's ``log_evidence`` (importance sampling from its posterior of
    the document's topics, widened), divided by the document's number of
    words, and averaged over the documents with at least one word.

    Parameters
    ----------
    model : object
        A fitted topic model with the method ``log_evidence(X, n_samples=,
        inflation=, random_state=)`` (:class:`skvi.SVICorrelatedTopicModel`,
        :class:`skvi.SVILatentDirichletAllocation`).
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Word counts of held-out documents.
    n_samples : int, default=1000
        Importance samples per document.
    inflation : float, default=1.0
        How much the proposal widens each document's posterior (see the
        model's ``log_evidence``).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    nll : float
        ``mean_d -log p(w_d) / N_d`` (lower is better).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVICorrelatedTopicModel
    >>> from skvi.metrics import importance_sampled_nll
    >>> X = np.random.RandomState(0).poisson(1.0, size=(40, 6))
    >>> ctm = SVICorrelatedTopicModel(n_components=2, max_iter=3, random_state=0).fit(X[:30])
    >>> nll = importance_sampled_nll(ctm, X[30:], n_samples=200, random_state=0)
    >>> bool(0 < nll < np.log(6) + 1)
    True
    """
    if not callable(getattr(model, "log_evidence", None)):
        raise TypeError(
            f"importance_sampled_nll needs a model with log_evidence; {type(model).__name__} "
            "has none."
        )
    X = _check_counts(X, "importance_sampled_nll")
    words = np.asarray(X.sum(axis=1)).ravel()
    keep = np.flatnonzero(words > 0)
    if keep.size == 0:
        raise ValueError("X passed to importance_sampled_nll has no document with a word.")
    log_p = model.log_evidence(
        X[keep], n_samples=n_samples, inflation=inflation, random_state=random_state
    )
    return float(np.mean(-np.asarray(log_p) / words[keep]))


def lda_log_evidence(X, doc_topic_prior, topic_word, *, n_samples=1000, inflation=1.0,
                     posterior=None, max_iter=100, tol=1e-3, random_state=None):
    """Importance-sampling estimate of ``log p(w_d)`` under LDA.

    ``theta_d ~ Dirichlet(alpha)`` and each word ``w ~ sum_k theta_dk
    beta_k``; ``p(w_d)`` is the sequence probability of the document's words
    (no multinomial coefficient), with ``theta_d`` integrated out by
    importance sampling from ``Dirichlet(gamma_d / (1 + inflation))``:
    ``gamma_d`` is the document's variational Dirichlet, and dividing it
    keeps the proposal's mean while multiplying its variance by about ``1 +
    inflation``.  The draws are made on the log scale, so that small
    concentrations do not underflow.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Word counts of the documents.
    doc_topic_prior : float or array-like of shape (n_topics,)
        The Dirichlet prior ``alpha`` of the topic proportions.
    topic_word : array-like of shape (n_topics, n_words)
        The topics ``beta``: positive, each row summing to 1.
    n_samples : int, default=1000
        Draws per document.
    inflation : float, default=1.0
        Non-negative; 0 samples from ``Dirichlet(gamma_d)`` itself.
    posterior : array-like of shape (n_docs, n_topics) or None, default=None
        Each document's ``gamma_d``; by default the LDA E-step with the
        topics fixed at ``topic_word``, from ``gamma_d = 1``.
    max_iter : int, default=100
        Most E-step iterations per document.
    tol : float, default=1e-3
        The E-step stops when the mean absolute change of ``gamma_d`` falls
        below this value.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    log_evidence : ndarray of shape (n_docs,)
        The estimate of ``log p(w_d)`` (a lower bound in expectation).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.metrics import lda_log_evidence
    >>> beta = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> X = np.array([[3, 1, 0], [0, 1, 2]])
    >>> log_p = lda_log_evidence(X, 0.5, beta, n_samples=2000, random_state=0)
    >>> bool(np.all(log_p < 0)) and log_p.shape == (2,)
    True
    """
    _check_sampling(n_samples, inflation, "lda_log_evidence")
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}.")
    X = _check_counts(X, "lda_log_evidence")
    beta = _check_topics(topic_word, X.shape[1], "lda_log_evidence")
    n_docs, n_topics = X.shape[0], beta.shape[0]
    alpha = np.asarray(doc_topic_prior, dtype=np.float64)
    if alpha.ndim > 1 or (alpha.ndim == 1 and alpha.shape[0] != n_topics) or not np.all(alpha > 0):
        raise ValueError(
            "doc_topic_prior must be a positive number or one per topic "
            f"({n_topics}); got {doc_topic_prior!r}."
        )
    alpha = np.broadcast_to(alpha, (n_topics,)).copy()
    if posterior is None:
        gamma = np.ones((n_docs, n_topics))
        e_step(X, np.ascontiguousarray(beta.T), alpha, gamma, int(max_iter), float(tol))
    else:
        gamma = np.asarray(posterior, dtype=np.float64)
        if gamma.shape != (n_docs, n_topics) or not np.all(gamma > 0):
            raise ValueError(
                f"posterior must hold positive Dirichlet parameters of shape "
                f"({n_docs}, {n_topics}); got shape {gamma.shape}."
            )
    proposal = gamma / (1.0 + inflation)
    rng = check_random_state(random_state)

    def log_weights(size):
        # log Gamma(a) = log Gamma(a + 1) + log(U) / a: exact, and finite for small a.
        log_g = np.log(rng.standard_gamma(proposal + 1.0, size=(size,) + proposal.shape))
        log_g += np.log1p(-rng.random_sample((size,) + proposal.shape)) / proposal
        log_theta = log_g - logsumexp(log_g, axis=-1, keepdims=True)
        eta = log_theta[..., :-1] - log_theta[..., -1:]
        return (kernels.log_likelihood(X, eta, beta)
                + _log_dirichlet(log_theta, alpha) - _log_dirichlet(log_theta, proposal))

    return _importance_average(log_weights, n_samples, n_docs * n_topics)


def ctm_log_evidence(X, prior_mean, prior_covariance, topic_word, *, n_samples=1000,
                     inflation=1.0, posterior=None, max_iter=100, random_state=None):
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
    _check_sampling(n_samples, inflation, "ctm_log_evidence")
    X = _check_counts(X, "ctm_log_evidence")
    beta = _check_topics(topic_word, X.shape[1], "ctm_log_evidence")
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
        prior = np.linalg.cholesky(sigma)
    except np.linalg.LinAlgError:
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
        proposal = np.linalg.cholesky(cov + inflation * np.eye(d))
    except np.linalg.LinAlgError:
        raise ValueError(
            "posterior covariances plus inflation * I must be positive definite."
        ) from None
    rng = check_random_state(random_state)

    def log_weights(size):
        eps = rng.standard_normal((size, n_docs, d))
        eta = mean + np.einsum("nij,snj->sni", proposal, eps)
        return (kernels.log_likelihood(X, eta, beta)
                + gaussian_log_density(eta - mu, prior)
                - gaussian_log_density(eta - mean, proposal))

    return _importance_average(log_weights, n_samples, n_docs * d)


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
    >>> from skvi.metrics.evidence import laplace_posterior
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
    n_docs, d = X.shape[0], mu.shape[0]

    def objective(rows, eta):
        diff = eta - mu
        return (kernels.log_likelihood(X[rows], eta, topic_word)
                - 0.5 * np.einsum("ni,ij,nj->n", diff, precision, diff))

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
    >>> from skvi.metrics.evidence import gaussian_log_density
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


# ---------------------------------------------------------------- helpers
def _log_dirichlet(log_theta, concentration):
    return (gammaln(concentration.sum(axis=-1)) - gammaln(concentration).sum(axis=-1)
            + np.sum((concentration - 1.0) * log_theta, axis=-1))


def _importance_average(log_weights, n_samples, entries_per_draw):
    """``log mean_s exp(w_s)`` of ``n_samples`` draws, made in chunks of bounded memory."""
    chunk = max(1, _CHUNK_ENTRIES // max(entries_per_draw, 1))
    parts = [log_weights(min(chunk, n_samples - start)) for start in range(0, n_samples, chunk)]
    return logsumexp(np.concatenate(parts, axis=0), axis=0) - np.log(n_samples)


def _check_sampling(n_samples, inflation, whom):
    if not (isinstance(n_samples, numbers.Integral) and not isinstance(n_samples, bool)
            and n_samples >= 1):
        raise ValueError(f"n_samples passed to {whom} must be a positive int, got {n_samples!r}.")
    if not (isinstance(inflation, numbers.Real) and 0 <= inflation < np.inf):
        raise ValueError(
            f"inflation passed to {whom} must be a finite non-negative number, got "
            f"{inflation!r}."
        )


def _check_topics(topic_word, n_words, whom):
    beta = np.asarray(topic_word, dtype=np.float64)
    if beta.ndim != 2 or beta.shape[1] != n_words or beta.shape[0] < 2:
        raise ValueError(
            f"topic_word passed to {whom} must have shape (n_topics >= 2, {n_words}); "
            f"got {beta.shape}."
        )
    if not (np.all(beta > 0) and np.allclose(beta.sum(axis=1), 1.0, rtol=1e-6)):
        raise ValueError(
            f"topic_word passed to {whom} must hold positive rows that sum to 1."
        )
    return beta
