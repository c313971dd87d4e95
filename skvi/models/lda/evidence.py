"""The test likelihood of LDA documents by importance sampling.

``log p(w_d)``, the document's topic proportions integrated out, from LDA's
parameters alone (see :mod:`skvi.metrics.evidence`).
"""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp
from sklearn.utils import check_random_state

from ...validation import check_counts
from .._importance import check_sampling, check_topics, importance_average
from .estep import e_step

__all__ = ["lda_log_evidence"]


def lda_log_evidence(
    X,
    doc_topic_prior,
    topic_word,
    *,
    n_samples=1000,
    inflation=1.0,
    posterior=None,
    max_iter=100,
    tol=1e-3,
    random_state=None,
):
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
    check_sampling(n_samples, inflation, "lda_log_evidence")
    if not (isinstance(max_iter, numbers.Integral) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}.")
    X = check_counts(X, "lda_log_evidence")
    beta = check_topics(topic_word, X.shape[1], "lda_log_evidence")
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
        return (
            _sequence_log_likelihood(X, log_theta, beta)
            + _log_dirichlet(log_theta, alpha)
            - _log_dirichlet(log_theta, proposal)
        )

    return importance_average(log_weights, n_samples, max(n_docs, X.nnz) * n_topics)


def _log_dirichlet(log_theta, concentration):
    return (
        gammaln(concentration.sum(axis=-1))
        - gammaln(concentration).sum(axis=-1)
        + np.sum((concentration - 1.0) * log_theta, axis=-1)
    )


def _sequence_log_likelihood(X, log_theta, beta):
    """``sum_v X[d, v] log(theta_d . beta_v)`` of each draw of each document.

    ``log_theta`` has shape (S, n_docs, K); the result (S, n_docs).
    """
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    beta_cols = beta[:, X.indices].T  # (nnz, K)
    theta = np.exp(log_theta)
    p = np.einsum("snk,nk->sn", theta[:, rows], beta_cols)
    per_doc = sp.csr_matrix(
        (np.ones(rows.size), (rows, np.arange(rows.size))), shape=(X.shape[0], rows.size)
    )
    return np.asarray(per_doc @ (X.data * np.log(p)).T).T
