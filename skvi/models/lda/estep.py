"""The LDA E-step: per-document variational updates for a whole minibatch.

For document ``d`` with word counts ``n_dw`` and the topics held fixed,
coordinate ascent alternates (Blei et al. 2003; Hoffman et al. 2010)::

    phinorm_dw = sum_k exp(E[log theta_dk]) * exp(E[log beta_kw])
    gamma_dk   = alpha_k + exp(E[log theta_dk])
                 * sum_w n_dw / phinorm_dw * exp(E[log beta_kw])

until the mean absolute change of ``gamma_d`` falls below ``tol``.  With
``expected_theta`` the same updates use ``E[theta_dk] = gamma_dk / sum_j
gamma_dj`` in place of ``exp(E[log theta_dk])``, and the caller passes
``E[beta]`` in place of ``exp(E[log beta])``: the zero-order collapsed
variational update (CVB0) of Asuncion et al., "On smoothing and inference
for topic models" (2009), with each document's expected topic counts
``gamma_d - alpha``.  The
functions here take the topics as ``exp_elog_beta_t``, the array
``exp(E[log beta])`` transposed to shape ``(n_words, n_topics)`` so that one
word's topic weights are contiguous; only the rows of words that occur in
``X`` are read.

:func:`e_step_numpy` is vectorised over the minibatch: every document's
update is one sparse-matrix product, and documents leave the active set as
they converge.  The compiled kernel in :mod:`skvi.models.lda._lda_fast` (built when a C
compiler is available at install time) runs the same updates document by
document in C; :func:`e_step` picks it when present.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

__all__ = [
    "add_rows",
    "blend",
    "e_step",
    "e_step_numpy",
    "exp_digamma_diff",
    "exp_dirichlet_expectation",
    "heldout_probabilities",
    "mixture_probabilities",
]

try:  # pragma: no cover - depends on the build
    from . import _lda_fast
except ImportError:  # pragma: no cover
    _lda_fast = None


def mixture_probabilities(theta, beta, X):
    """``sum_k theta_dk beta_kw`` for every stored entry ``(d, w)`` of the CSR matrix X.

    Parameters
    ----------
    theta : ndarray of shape (n_docs, n_topics)
        Each document's topic proportions.
    beta : ndarray of shape (n_topics, n_words)
        Each topic's word probabilities.
    X : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Whose stored entries are scored, in their CSR order.

    Returns
    -------
    ndarray of shape (X.nnz,)
        The probability of each entry's word in its document.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.lda.estep import mixture_probabilities
    >>> X = sp.csr_matrix(np.array([[1, 0], [0, 2]]))
    >>> mixture_probabilities(np.array([[1.0, 0.0], [0.5, 0.5]]),
    ...                       np.array([[0.9, 0.1], [0.2, 0.8]]), X)
    array([0.9 , 0.45])
    """
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    return np.einsum("nk,kn->n", theta[rows], beta[:, X.indices])


def heldout_probabilities(lam, alpha, X_observed, X_heldout, max_iter, tol):
    """``p(w | d)`` of the held-out words of LDA documents, their topics fitted to the rest.

    Each document's variational Dirichlet ``gamma_d`` is fitted to its
    observed words by the E-step (from ``gamma_d = 1``) with the topics
    ``lam`` fixed; a held-out word ``w`` of document ``d`` then has
    ``p(w | d) = sum_k E[theta_dk] E[beta_kw]``.

    Parameters
    ----------
    lam : ndarray of shape (n_topics, n_words)
        The topics' variational Dirichlet parameters.
    alpha : float or ndarray of shape (n_topics,)
        The documents' Dirichlet prior.
    X_observed, X_heldout : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        The observed and the held-out word counts of each document.
    max_iter : int
        Most E-step iterations per document.
    tol : float
        A document's E-step stops when the mean absolute change of its
        ``gamma`` falls below this value.

    Returns
    -------
    ndarray of shape (X_heldout.nnz,)
        ``p(w | d)`` of each stored entry of ``X_heldout``, in its order.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.lda.estep import heldout_probabilities
    >>> lam = np.array([[9.0, 1.0], [1.0, 9.0]])
    >>> seen, held = sp.csr_matrix(np.array([[4.0, 0.0]])), sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> p = heldout_probabilities(lam, 0.1, seen, held, 100, 1e-6)
    >>> bool(p[0] > p[1])  # the observed word's topic predicts it
    True
    """
    exp_elog_beta_t = np.ascontiguousarray(exp_dirichlet_expectation(lam).T)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (lam.shape[0],)).copy()
    gamma = np.ones((X_observed.shape[0], lam.shape[0]), dtype=np.float64)
    e_step(X_observed, exp_elog_beta_t, alpha, gamma, int(max_iter), float(tol))
    e_theta = gamma / gamma.sum(axis=1, keepdims=True)
    return mixture_probabilities(e_theta, lam / lam.sum(axis=1, keepdims=True), X_heldout)


def exp_dirichlet_expectation(concentration):
    """Return ``exp(E[log theta])`` for Dirichlet rows of ``concentration``."""
    total = concentration.sum(axis=-1, keepdims=True)
    return np.exp(digamma(concentration) - digamma(total))


def _theta_weights(gamma, expected_theta):
    """``exp(E[log theta])`` of each row of gamma, or ``E[theta]`` with ``expected_theta``."""
    if expected_theta:
        return gamma / gamma.sum(axis=-1, keepdims=True)
    return exp_dirichlet_expectation(gamma)


def e_step_numpy(
    X, exp_elog_beta_t, alpha, gamma, max_iter, tol, sstats_t=None, expected_theta=False
):
    """Run the E-step on CSR ``X`` with numpy, updating ``gamma`` in place.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Word counts, float32 or float64 with canonical (sorted, no
        duplicate) indices.
    exp_elog_beta_t : ndarray of shape (n_words, n_topics)
        ``exp(E[log beta])`` transposed, C-contiguous, dtype of ``X``.
    alpha : ndarray of shape (n_topics,)
        Dirichlet prior of the document-topic proportions.
    gamma : ndarray of shape (n_docs, n_topics)
        Initial variational Dirichlet parameters; overwritten.
    max_iter : int
        Most fixed-point iterations per document.
    tol : float
        A document stops when the mean absolute change of its ``gamma`` row
        falls below ``tol``.
    sstats_t : ndarray of shape (n_words, n_topics) or None
        When given, ``sum_d n_dw / phinorm_dw * exp(E[log theta_d])`` is
        added to it (the caller multiplies by ``exp(E[log beta])``).
    expected_theta : bool, default=False
        Weigh the topics by ``E[theta_d]`` instead of ``exp(E[log
        theta_d])`` (CVB0; see the module's docstring).

    Returns
    -------
    n_updates : int
        Document updates made (sum over documents of their iterations).
    loglik : float
        ``sum_dw n_dw * log(phinorm_dw)`` at the final ``gamma``: the
        word part of the ELBO with ``phi`` at its optimum.
    """
    n_docs = X.shape[0]
    dtype = gamma.dtype
    eps = np.finfo(dtype).eps
    e_theta = _theta_weights(gamma, expected_theta).astype(dtype, copy=False)
    active = np.arange(n_docs)
    n_updates = 0

    def restrict(active):
        sub = X[active]
        rows = np.repeat(np.arange(active.size), np.diff(sub.indptr))
        return sub, rows, exp_elog_beta_t[sub.indices]

    sub, rows, beta_nz = restrict(active)
    for _ in range(max_iter):
        if active.size == 0:
            break
        e = e_theta[active]
        phinorm = np.einsum("nk,nk->n", e[rows], beta_nz) + eps
        weights = sp.csr_matrix((sub.data / phinorm, sub.indices, sub.indptr), shape=sub.shape)
        new = alpha + e * (weights @ exp_elog_beta_t)
        change = np.abs(new - gamma[active]).mean(axis=1)
        gamma[active] = new
        e_theta[active] = _theta_weights(new, expected_theta)
        n_updates += active.size
        keep = change >= tol
        if not keep.all():
            active = active[keep]
            sub, rows, beta_nz = restrict(active)
    rows = np.repeat(np.arange(n_docs), np.diff(X.indptr))
    phinorm = np.einsum("nk,nk->n", e_theta[rows], exp_elog_beta_t[X.indices]) + eps
    loglik = float(np.dot(X.data, np.log(phinorm)))
    if sstats_t is not None:
        weights = sp.csr_matrix((X.data / phinorm, X.indices, X.indptr), shape=X.shape)
        sstats_t += weights.T @ e_theta
    return n_updates, loglik


def e_step(X, exp_elog_beta_t, alpha, gamma, max_iter, tol, sstats_t=None, expected_theta=False):
    """Run the E-step with the compiled kernel when built, else numpy.

    Same parameters and returns as :func:`e_step_numpy`.
    """
    if _lda_fast is not None:
        return _lda_fast.e_step(
            X.indptr,
            X.indices,
            X.data,
            exp_elog_beta_t,
            alpha,
            gamma,
            int(max_iter),
            float(tol),
            sstats_t,
            bool(expected_theta),
        )
    return e_step_numpy(X, exp_elog_beta_t, alpha, gamma, max_iter, tol, sstats_t, expected_theta)


def exp_digamma_diff(values, totals, rows=None, offset=0.0):
    """Return ``exp(digamma(values[rows] + offset) - digamma(totals))``.

    ``values`` has shape (n, K), C-contiguous, and ``totals`` shape (K,):
    with ``values + offset`` the Dirichlet parameters of K topics at n words
    and ``totals`` the topics' sums, this is ``exp(E[log beta])`` at the
    words ``rows`` (all words when None), transposed, in the dtype of
    ``values``.
    """
    values = np.ascontiguousarray(values)
    totals = np.ascontiguousarray(totals, dtype=np.float64)
    if _lda_fast is not None:
        n = values.shape[0] if rows is None else len(rows)
        out = np.empty((n, values.shape[1]), dtype=values.dtype)
        _lda_fast.exp_digamma_diff(values, totals, out, rows, float(offset))
        return out
    picked = (values if rows is None else values[rows]) + offset
    return np.exp(digamma(picked) - digamma(totals)).astype(values.dtype, copy=False)


def blend(out, x, a, b, rows=None, values=None, scale=0.0, lower=-np.inf):
    """``out = a * x + b``, plus ``scale * values`` at the distinct ``rows``.

    ``out`` and ``x`` are C-contiguous of shape (n, K), one dtype; ``values``
    has shape (len(rows), K).  Returns ``(totals, valid)``: the float64
    column sums of ``out``, and whether the entries at ``rows`` are finite
    and above ``lower``.
    """
    if _lda_fast is not None:
        totals = np.empty(x.shape[1], dtype=np.float64)
        if rows is not None:
            values = np.ascontiguousarray(values, dtype=out.dtype)
        valid = _lda_fast.blend(
            out, x, float(a), float(b), totals, rows, values, float(scale), float(lower)
        )
        return totals, valid
    np.multiply(x, a, out=out)
    out += b
    valid = True
    if rows is not None:
        out[rows] += scale * values
        touched = out[rows]
        valid = bool(np.all(np.isfinite(touched)) and np.all(touched > lower))
    return out.sum(axis=0, dtype=np.float64), valid


def add_rows(dest, rows, values, scale, totals=None, lower=-np.inf):
    """``dest[rows] += scale * values`` in place, for distinct ``rows``.

    ``dest`` is C-contiguous of shape (n, K), ``values`` of shape
    (len(rows), K) in the dtype of ``dest``.  ``totals``, the float64
    column sums of ``dest``, is updated in place when given.  Returns
    whether every updated entry is finite and above ``lower``.
    """
    if _lda_fast is not None:
        return _lda_fast.add_rows(
            dest, rows, np.ascontiguousarray(values), float(scale), totals, float(lower)
        )
    added = scale * values
    dest[rows] += added
    if totals is not None:
        totals += added.sum(axis=0, dtype=np.float64)
    touched = dest[rows]
    return bool(np.all(np.isfinite(touched)) and np.all(touched > lower))
