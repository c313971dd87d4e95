"""Per-document kernels of the correlated topic model, for a whole minibatch.

The correlated topic model (Blei and Lafferty, "A correlated topic model of
Science") draws each document's topic logits ``eta_d ~ N(mu, Sigma)`` in
``R^(K-1)``, its topic proportions ``theta_d = softmax([eta_d, 0])`` (the
last logit fixed at 0) and each of its words from the mixture
``sum_k theta_dk beta_k`` of the ``K`` rows of the topic-word matrix
``beta``.  With the topic assignments summed out exactly, a document of
word counts ``n_dv`` has the log-likelihood

    L_d(eta) = sum_v n_dv log(theta(eta) . beta[:, v]).

Writing ``p_v = theta * beta[:, v] / (theta . beta[:, v])`` for the
posterior of a word's topic and ``~`` for the first ``K - 1`` entries, its
gradient and Hessian in ``eta`` are

    g(eta) = sum_v n_dv p~_v - N_d theta~
    H(eta) = -N_d (diag(theta~) - theta~ theta~^T)
             + sum_v n_dv (diag(p~_v) - p~_v p~_v^T),

``N_d = sum_v n_dv``.  The variational posterior of a document's logits is
a Gaussian ``q(eta_d) = N(m_d, V_d)`` (full or diagonal covariance); the
functions below give Monte Carlo estimates of ``E_q g``, ``E_q H`` and
``E_q L_d`` for the updates of ``q`` and the bound
``E_q L_d - KL(q_d || N(mu, Sigma))``.

Every function works on all the documents of a minibatch at once, given as
a CSR matrix of counts, and touches only its non-zeros.  The sum over a
document's words of ``n_dv p~_v p~_v^T`` is a product ``W_d^T W_d`` of
the document's ``(nnz_d, K-1)`` matrix of scaled ``beta`` columns;
documents are cut into pieces of similar numbers of non-zeros, padded to a
common length and multiplied as a stack, so that the memory per non-zero is
``O(K)`` and no temporary exceeds a few times ``_CHUNK_BYTES``.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.polynomial.hermite_e import hermegauss

from skvi.expfam import cholesky_factor, psd_projection, spd_inverse, spd_logdet
from skvi.expfam.base import _check_random_state

__all__ = [
    "MonteCarloDerivatives",
    "document_elbo",
    "expected_gradient_hessian",
    "gauss_hermite_expectation",
    "gradient_hessian",
    "kl_gaussian",
    "log_likelihood",
    "mean_field_bound_derivatives",
    "psd_projection",
    "simple_bound_derivatives",
    "topic_proportions",
]

# Bytes of a chunk's padded (pieces, length, K) array and of its (pieces, K, K) products.
_CHUNK_BYTES = 8 * 2**20


def topic_proportions(eta):
    """Topic proportions ``softmax([eta, 0])`` of the logits ``eta``.

    Parameters
    ----------
    eta : array-like of shape (..., K - 1)
        Topic logits; the ``K``-th logit is fixed at 0.

    Returns
    -------
    theta : ndarray of shape (..., K)
        The proportions; each ``theta[..., :]`` sums to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.kernels import topic_proportions
    >>> topic_proportions(np.array([[0.0, np.log(2.0)]])).round(3)
    array([[0.25, 0.5 , 0.25]])
    """
    eta = np.asarray(eta, dtype=np.float64)
    shift = eta.max(axis=-1, initial=0.0)[..., None]
    expo = np.concatenate([np.exp(eta - shift), np.exp(-shift)], axis=-1)
    return expo / expo.sum(axis=-1, keepdims=True)


class _Layout:
    """A CSR minibatch cut into padded chunks of document pieces.

    A document of more than ``max_len`` non-zeros is cut into pieces of at
    most ``max_len``; pieces are sorted by length and grouped by the power
    of two just above it (so padding at most doubles the work), then split
    so that a chunk's padded ``(pieces, length, K)`` array and its
    ``(pieces, K, K)`` products have at most ``_CHUNK_BYTES / 8`` entries.
    Each chunk stores its pieces' documents and a ``(pieces, length)``
    index into the non-zeros, padded with ``nnz``, which points at an extra
    count of 0 and an extra column ``V``.

    No chunk holds two pieces of one document: all pieces of a split
    document but its last have the full length ``max_len``, and a chunk
    whose width is ``max_len`` holds a single piece.
    """

    def __init__(self, X, n_topics):
        n_docs, n_words = X.shape
        indptr = X.indptr.astype(np.int64)
        lengths = np.diff(indptr)
        nnz = int(indptr[-1])
        max_len = max(1, _CHUNK_BYTES // (8 * n_topics))
        n_pieces = -(-lengths // max_len)
        piece_doc = np.repeat(np.arange(n_docs), n_pieces)
        first = np.cumsum(n_pieces) - n_pieces
        rank = np.arange(piece_doc.size) - np.repeat(first, n_pieces)
        start = indptr[piece_doc] + rank * max_len
        length = np.minimum(start + max_len, indptr[piece_doc + 1]) - start
        # Lengths in (2**(c - 1), 2**c] share the class c.
        size_class = np.frexp(length - 1)[1]
        order = np.argsort(length, kind="stable")

        self.cols = np.append(X.indices.astype(np.int64), n_words)
        self.counts = np.append(X.data, 0.0)
        self.doc_counts = np.bincount(
            np.repeat(np.arange(n_docs), lengths), weights=X.data, minlength=n_docs
        )
        self.chunks = []
        for c in np.unique(size_class):
            members = order[size_class[order] == c]
            width = int(length[members].max())
            # A chunk's (pieces, width, K) and (pieces, K, K) temporaries.
            per_chunk = max(1, max_len // max(width, n_topics))
            for lo in range(0, members.size, per_chunk):
                idx = members[lo : lo + per_chunk]
                offsets = np.arange(width)
                nz = start[idx, None] + offsets
                nz = np.where(offsets < length[idx, None], nz, nnz)
                self.chunks.append((piece_doc[idx], nz))


def _check_counts(X):
    if not sp.issparse(X):
        X = sp.csr_array(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    X = X.tocsr().astype(np.float64)
    X.sum_duplicates()
    if X.data.size and X.data.min() < 0:
        raise ValueError("Word counts must be non-negative.")
    return X


def _check_beta(beta, n_topics, n_words):
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape != (n_topics, n_words):
        raise ValueError(
            f"beta has shape {beta.shape}; expected (n_topics, n_words) = "
            f"({n_topics}, {n_words}) from eta and X."
        )
    return beta


def _check_eta(eta, n_docs):
    eta = np.asarray(eta, dtype=np.float64)
    if eta.ndim < 2 or eta.shape[-2] != n_docs or eta.shape[-1] < 1:
        raise ValueError(
            f"eta has shape {eta.shape}; expected (..., n_docs, K - 1) with "
            f"n_docs = {n_docs} and K >= 2."
        )
    return eta


def _add(acc, samples, docs, values, average):
    """Add the values of a block of samples and pieces to their (distinct) documents."""
    if average:
        acc[docs] += values.sum(axis=0)
    else:
        acc[samples, docs] += values


def _evaluate(
    X,
    eta,
    beta,
    gradient,
    hessian,
    average,
    topic_counts=False,
    weights=None,
    document_weights=None,
):
    """Log-likelihood, gradient and Hessian at each sample of ``eta``.

    ``eta`` has shape (S, n_docs, K - 1).  With ``average`` the results are
    means over the S samples (weighted by ``weights``, of shape (S,) and
    summing to 1, when given: a quadrature rule), of shapes (n_docs,),
    (n_docs, K - 1) and (n_docs, K - 1, K - 1); otherwise they keep the
    leading axis S.
    With ``hessian='diagonal'`` only the Hessian's diagonal is computed,
    of shape (..., K - 1): O(K) work per non-zero instead of O(K^2).
    Entries not asked for are None.  Samples are taken in blocks small
    enough that a block's temporaries stay within ``_CHUNK_BYTES`` a piece.
    With ``topic_counts`` (and ``average``) a fourth result is the
    expected word counts of each topic, ``sum_d n_dv E[p_dv]``, of shape
    (K, V), each document's counted ``document_weights[d]`` times when given.
    """
    n_samples, n_docs, dim = eta.shape
    if weights is not None and not average:
        raise ValueError("weights are for the weighted mean over the samples (average=True).")
    n_topics = dim + 1
    layout = _Layout(X, n_topics)
    theta = topic_proportions(eta)
    # Padding gathers a column of ones: s = 1, log s = 0 and zero weight.
    beta_cols = np.vstack([beta.T, np.ones((1, n_topics))])
    lead = () if average else (n_samples,)
    loglik = np.zeros(lead + (n_docs,))
    psum = np.zeros(lead + (n_docs, dim)) if gradient or hessian else None
    diagonal = isinstance(hessian, str) and hessian == "diagonal"
    if hessian is not False and hessian is not True and not diagonal:
        raise ValueError(f"hessian must be True, False or 'diagonal', got {hessian!r}.")
    outer = (
        np.zeros(lead + (n_docs, dim) if diagonal else lead + (n_docs, dim, dim))
        if hessian
        else None
    )
    # Each non-zero's expected topic responsibilities times its count.
    per_nz = np.zeros((layout.counts.size, n_topics)) if topic_counts else None

    # A weighted mean is the plain mean of the counts scaled by S w_s: every
    # accumulated term is linear in the counts.
    scaled = None if weights is None else n_samples * np.asarray(weights, dtype=np.float64)
    for docs, nz in layout.chunks:
        counts_all = layout.counts[nz]
        B = beta_cols[layout.cols[nz]]
        B_head = B[..., :dim]
        block = max(1, _CHUNK_BYTES // (8 * docs.size * max(nz.shape[1], n_topics) * n_topics))
        for lo in range(0, n_samples, block):
            samples = slice(lo, min(lo + block, n_samples))
            counts = counts_all if scaled is None else counts_all * scaled[samples, None, None]
            root = np.sqrt(counts) if hessian is True else None
            th = theta[samples][:, docs]
            # (pieces, length, K) @ (block, pieces, K, 1) -> (block, pieces, length)
            mix = np.matmul(B, th[..., None])[..., 0]
            _add(loglik, samples, docs, (counts * np.log(mix)).sum(axis=-1), average)
            if per_nz is not None:
                ratio = counts / mix
                per_nz[nz] += np.einsum("spl,spk->plk", ratio, th) * B
            if psum is not None:
                ratio_row = (counts / mix)[..., None, :]
                p = th[..., :dim] * np.matmul(ratio_row, B_head)[..., 0, :]
                _add(psum, samples, docs, p, average)
            if diagonal:
                # sum_v n_v p~_vk^2 = theta_k^2 sum_v n_v B_vk^2 / mix_v^2
                M = np.matmul((counts / (mix * mix))[..., None, :], B_head * B_head)[..., 0, :]
                M *= th[..., :dim] ** 2
                _add(outer, samples, docs, M, average)
            elif hessian:
                W = B_head * (root / mix)[..., None]
                M = np.matmul(np.swapaxes(W, -1, -2), W)
                M *= th[..., :dim, None] * th[..., None, :dim]
                _add(outer, samples, docs, M, average)

    if average:
        loglik /= n_samples
    extra = ()
    if per_nz is not None:
        nnz = layout.counts.size - 1
        per_nz = per_nz[:nnz]
        if document_weights is not None:
            per_nz *= np.repeat(document_weights, np.diff(X.indptr))[:, None]
        select = sp.csr_matrix(
            (np.ones(nnz), (layout.cols[:nnz], np.arange(nnz))), shape=(X.shape[1], nnz)
        )
        extra = (np.asarray((select @ per_nz).T) / n_samples,)
    if psum is None:
        return (loglik, None, None, *extra)
    if average:
        psum /= n_samples
    N = layout.doc_counts
    head = theta[..., :dim]
    if not average:
        mean_head = head
    elif weights is None:
        mean_head = head.mean(axis=0)
    else:
        mean_head = np.tensordot(weights, head, axes=(0, 0))
    g = psum - N[:, None] * mean_head
    if not hessian:
        return (loglik, g, None, *extra)
    # H = N_d theta~ theta~^T - sum_v n_dv p~_v p~_v^T + diag(g), in place.
    H = np.negative(outer, out=outer)
    if diagonal:
        if average:
            H /= n_samples
            square = (
                np.einsum("snk,snk->nk", head, head) / n_samples
                if weights is None
                else np.einsum("s,snk,snk->nk", weights, head, head)
            )
        else:
            square = head * head
        H += N[:, None] * square
        H += g
        return (loglik, g, H, *extra)
    if average:
        H /= n_samples
        if weights is None:
            cross = np.einsum("snk,snl->nkl", head, head)
            cross *= N[:, None, None] / n_samples
        else:
            cross = np.einsum("s,snk,snl->nkl", weights, head, head)
            cross *= N[:, None, None]
    else:
        cross = head[..., :, None] * head[..., None, :]
        cross *= N[:, None, None]
    H += cross
    del cross
    diag = np.arange(dim)
    H[..., diag, diag] += g
    H += np.swapaxes(H, -1, -2)
    H *= 0.5
    return (loglik, g, H, *extra)


def _flatten_samples(eta):
    lead = eta.shape[:-2]
    return eta.reshape((-1,) + eta.shape[-2:]), lead


def log_likelihood(X, eta, beta):
    """Log-likelihood ``L_d(eta_d)`` of each document, topics summed out.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts; converted to CSR, only its non-zeros are read.
    eta : array-like of shape (n_docs, K - 1) or (S, n_docs, K - 1)
        Topic logits of each document, or S samples of them.
    beta : array-like of shape (K, V)
        Topic-word probabilities; each row sums to 1.

    Returns
    -------
    loglik : ndarray of shape (n_docs,) or (S, n_docs)
        ``sum_v X[d, v] log(softmax([eta_d, 0]) . beta[:, v])``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import log_likelihood
    >>> X = sp.csr_array(np.array([[2.0, 0.0, 1.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> float(log_likelihood(X, np.zeros((1, 1)), beta)[0].round(4))  # 3 log(3/8)
    -2.9425
    """
    X = _check_counts(X)
    eta = _check_eta(eta, X.shape[0])
    beta = _check_beta(beta, eta.shape[-1] + 1, X.shape[1])
    flat, lead = _flatten_samples(eta)
    loglik, _, _ = _evaluate(X, flat, beta, gradient=False, hessian=False, average=False)
    return loglik.reshape(lead + loglik.shape[1:])


def gradient_hessian(X, eta, beta, hessian=True):
    """Gradient and Hessian of each document's log-likelihood in its logits.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts; converted to CSR, only its non-zeros are read.
    eta : array-like of shape (n_docs, K - 1) or (S, n_docs, K - 1)
        Topic logits of each document, or S samples of them.
    beta : array-like of shape (K, V)
        Topic-word probabilities; each row sums to 1.
    hessian : bool or 'diagonal', default=True
        Whether to compute the Hessian as well, or only its diagonal (of
        shape (n_docs, K - 1) or (S, n_docs, K - 1)).

    Returns
    -------
    g : ndarray of shape (n_docs, K - 1) or (S, n_docs, K - 1)
        Gradient of :func:`log_likelihood` in ``eta``.
    H : ndarray of shape (n_docs, K - 1, K - 1) or (S, n_docs, K - 1, K - 1), or None
        Its Hessian (symmetric); None when ``hessian`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import gradient_hessian
    >>> X = sp.csr_array(np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> g, H = gradient_hessian(X, np.zeros((2, 1)), beta)
    >>> g.round(4), H.shape
    (array([[0.1667],
           [0.    ]]), (2, 1, 1))
    """
    X = _check_counts(X)
    eta = _check_eta(eta, X.shape[0])
    beta = _check_beta(beta, eta.shape[-1] + 1, X.shape[1])
    flat, lead = _flatten_samples(eta)
    _, g, H = _evaluate(X, flat, beta, gradient=True, hessian=hessian, average=False)
    g = g.reshape(lead + g.shape[1:])
    if H is not None:
        H = H.reshape(lead + H.shape[1:])
    return g, H


class MonteCarloDerivatives(NamedTuple):
    """Monte Carlo means of the documents' log-likelihoods and their derivatives.

    Returned by :func:`expected_gradient_hessian`.

    Parameters
    ----------
    g_hat : ndarray of shape (n_docs, K - 1)
        Mean gradient.
    H_hat : ndarray of shape (n_docs, K - 1, K - 1) or None
        Mean Hessian; None when not asked for.
    loglik_hat : ndarray of shape (n_docs,)
        Mean log-likelihood.
    topic_counts : ndarray of shape (K, V) or None
        Expected word counts of each topic, ``sum_d n_dv E[p_dv]`` (the
        topics' statistics); None when not asked for.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.kernels import MonteCarloDerivatives
    >>> MonteCarloDerivatives(np.zeros((1, 2)), None, np.zeros(1)).g_hat.shape
    (1, 2)
    """

    g_hat: np.ndarray
    H_hat: np.ndarray | None
    loglik_hat: np.ndarray
    topic_counts: np.ndarray | None = None


def _check_gaussian(mean, spread, n_docs, name):
    mean = np.asarray(mean, dtype=np.float64)
    spread = np.asarray(spread, dtype=np.float64)
    if mean.ndim != 2 or mean.shape[0] != n_docs:
        raise ValueError(
            f"mean has shape {mean.shape}; expected (n_docs, K - 1) with n_docs = {n_docs}."
        )
    if spread.shape not in (mean.shape, mean.shape + mean.shape[-1:]):
        raise ValueError(
            f"{name} has shape {spread.shape}; expected {mean.shape} (diagonal) "
            f"or {mean.shape + mean.shape[-1:]} (full)."
        )
    return mean, spread


def _sample(mean, factor, n_samples, rng, eps=None):
    """``n_samples`` draws ``mean + eps @ factor^T`` (or ``mean + eps * factor``)."""
    if eps is None:
        eps = _check_random_state(rng).standard_normal((int(n_samples),) + mean.shape)
    else:
        eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (int(n_samples),) + mean.shape)
    if factor.ndim == mean.ndim:
        return mean + eps * factor
    return mean + np.einsum("nij,snj->sni", factor, eps)


def expected_gradient_hessian(
    X,
    mean,
    cov_factor,
    beta,
    n_samples,
    rng=None,
    hessian=True,
    topic_counts=False,
    eps=None,
    weights=None,
    document_weights=None,
):
    """Monte Carlo means of gradient, Hessian and log-likelihood under ``q``.

    Draws ``eta = mean + eps @ L^T`` with ``eps`` standard normal of shape
    (n_samples, n_docs, K - 1), ``L`` a Cholesky factor of each document's
    covariance (or ``mean + eps * sd`` for a diagonal ``q``) and averages
    :func:`gradient_hessian` and :func:`log_likelihood` over the draws.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts; converted to CSR, only its non-zeros are read.
    mean : array-like of shape (n_docs, K - 1)
        Means ``m_d`` of ``q``.
    cov_factor : array-like of shape (n_docs, K - 1, K - 1) or (n_docs, K - 1)
        Lower Cholesky factors ``L_d`` of the covariances ``V_d = L_d L_d^T``,
        or, for a diagonal ``q``, the standard deviations.
    beta : array-like of shape (K, V)
        Topic-word probabilities; each row sums to 1.
    n_samples : int
        Number of Monte Carlo draws per document.
    rng : None, int, numpy.random.RandomState or numpy.random.Generator, default=None
        Source of the draws.
    hessian : bool or 'diagonal', default=True
        Whether to average the Hessian as well, or only its diagonal (of
        shape (n_docs, K - 1): what a diagonal ``q`` needs, at O(K) cost
        per non-zero instead of O(K^2)).
    topic_counts : bool, default=False
        Whether to return each topic's expected word counts too.
    eps : array-like broadcastable to (n_samples, n_docs, K - 1) or None, default=None
        Standard normal draws to use instead of drawing from ``rng``; of
        shape (n_samples, 1, K - 1), every document takes the same draws
        (common random numbers: a document's estimate then does not depend
        on the other documents of the batch).
    weights : array-like of shape (n_samples,) or None, default=None
        Weights of the draws, summing to 1, for a quadrature rule given as
        ``eps`` (:func:`gauss_hermite_rule`); None for the plain mean.
    document_weights : array-like of shape (n_docs,) or None, default=None
        Each document's weight in the topic counts (a document of weight 2
        counts twice); None counts each once.  The other results are each
        document's own, whatever its weight.

    Returns
    -------
    MonteCarloDerivatives
        ``(g_hat, H_hat, loglik_hat, topic_counts)`` of shapes (n_docs, K -
        1), (n_docs, K - 1, K - 1) (None without ``hessian``), (n_docs,) and
        (K, V) (None without ``topic_counts``).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import expected_gradient_hessian
    >>> X = sp.csr_array(np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> est = expected_gradient_hessian(X, np.zeros((2, 1)), np.ones((2, 1)), beta,
    ...                                 n_samples=100, rng=0)
    >>> est.g_hat.shape, est.H_hat.shape, est.loglik_hat.shape
    ((2, 1), (2, 1, 1), (2,))
    >>> float(est.loglik_hat[1].round(4))  # word 1 has probability 1/4 under every topic
    -4.1589
    """
    X = _check_counts(X)
    mean, cov_factor = _check_gaussian(mean, cov_factor, X.shape[0], "cov_factor")
    beta = _check_beta(beta, mean.shape[1] + 1, X.shape[1])
    eta = _sample(mean, cov_factor, n_samples, rng, eps)
    loglik, g, H, *counts = _evaluate(
        X,
        eta,
        beta,
        gradient=True,
        hessian=hessian,
        average=True,
        topic_counts=topic_counts,
        weights=weights,
        document_weights=document_weights,
    )
    return MonteCarloDerivatives(g, H, loglik, counts[0] if counts else None)


def simple_bound_derivatives(
    X,
    mean,
    cov_factor,
    beta,
    n_samples,
    rng=None,
    hessian=True,
    topic_counts=False,
    eps=None,
    weights=None,
    document_weights=None,
):
    """The data part of the simple structured bound and its derivatives, by Monte Carlo.

    The bound of the structured approximation ``q(eta_d) q(z_d)`` ("Monte
    Carlo structured SVI for two-level non-conjugate models", appendix A.2,
    eqs. 73-75).  With each word's topic posterior ``phi_v`` at its optimum
    given ``q(eta_d)`` (``phi_v`` is ``p_v`` at ``eta = mean``), the data part
    of document ``d``'s bound is::

        L_d(m) + N_d (lse([m, 0]) - E_q[lse([eta, 0])])

    (``lse`` the log-sum-exp), at most ``L_d(m)`` by Jensen's inequality.
    Its gradient in ``m`` is ``c~ - N_d E_q[theta~]`` (``c = sum_v n_v
    phi_v``, by the envelope theorem) and twice its gradient in the
    covariance ``-N_d E_q[diag(theta~) - theta~ theta~^T]``.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts.
    mean : array-like of shape (n_docs, K - 1)
        Means ``m_d`` of ``q``.
    cov_factor : array-like of shape (n_docs, K - 1, K - 1) or (n_docs, K - 1)
        Cholesky factors of the covariances, or standard deviations.
    beta : array-like of shape (K, V)
        Topic-word probabilities.
    n_samples : int
        Monte Carlo draws per document (for ``E_q[theta]`` and ``E_q[lse]``).
    rng : None, int, numpy.random.RandomState or numpy.random.Generator, default=None
        Source of the draws.
    hessian : bool or 'diagonal', default=True
        Whether to return the curvature, or only its diagonal.
    topic_counts : bool, default=False
        Whether to return each topic's word counts ``sum_d n_dv phi_dv``.
    eps : array-like broadcastable to (n_samples, n_docs, K - 1) or None, default=None
        Standard normal draws to use instead of drawing from ``rng``.
    weights : array-like of shape (n_samples,) or None, default=None
        Weights of the draws, summing to 1, for a quadrature rule given as
        ``eps``; None for the plain mean.
    document_weights : array-like of shape (n_docs,) or None, default=None
        Each document's weight in the topic counts (a document of weight 2
        counts twice); None counts each once.  The other results are each
        document's own, whatever its weight.

    Returns
    -------
    MonteCarloDerivatives
        ``(g_hat, H_hat, loglik_hat, topic_counts)``: the gradient, the
        curvature, the data part of the bound and the topic counts.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import log_likelihood, simple_bound_derivatives
    >>> X = sp.csr_array(np.array([[2.0, 0.0, 1.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> est = simple_bound_derivatives(X, np.zeros((1, 1)), np.ones((1, 1)), beta, 100, rng=0)
    >>> bool(est.loglik_hat[0] <= log_likelihood(X, np.zeros((1, 1)), beta)[0])  # Jensen
    True
    """
    X = _check_counts(X)
    mean, cov_factor = _check_gaussian(mean, cov_factor, X.shape[0], "cov_factor")
    dim = mean.shape[1]
    beta = _check_beta(beta, dim + 1, X.shape[1])
    words, loglik_m, c_head, counts = _at_the_mean(X, mean, beta, topic_counts, document_weights)
    eta = _sample(mean, cov_factor, n_samples, rng, eps)
    theta = topic_proportions(eta)
    head = theta[..., :dim]
    if weights is None:
        e_head = head.mean(axis=0)
        e_lse = _lse0(eta).mean(axis=0)
    else:
        weights = np.asarray(weights, dtype=np.float64)
        e_head = np.tensordot(weights, head, axes=(0, 0))
        e_lse = weights @ _lse0(eta)
    g = c_head - words[:, None] * e_head
    H = None
    if isinstance(hessian, str) and hessian == "diagonal":
        if weights is None:
            square = np.einsum("snk,snk->nk", head, head) / head.shape[0]
        else:
            square = np.einsum("s,snk,snk->nk", weights, head, head)
        H = (square - e_head) * words[:, None]
    elif hessian:
        if weights is None:
            outer = np.einsum("snk,snl->nkl", head, head) / head.shape[0]
        else:
            outer = np.einsum("s,snk,snl->nkl", weights, head, head)
        H = outer - e_head[:, :, None] * np.eye(dim)
        H *= words[:, None, None]
    data = loglik_m + words * (_lse0(mean) - e_lse)
    return MonteCarloDerivatives(g, H, data, counts[0] if counts else None)


def _at_the_mean(X, mean, beta, topic_counts, document_weights=None):
    """Each word's topic posterior at the mean, which the simple and mean-field bounds keep.

    Returns the documents' words, ``L_d(m)``, the expected topic counts
    ``c_d`` of the words (the first K - 1 topics; the gradient of ``L_d``
    plus ``N_d theta(m)``) and, as a list of zero or one array, each
    topic's word counts.
    """
    dim = mean.shape[1]
    words = np.asarray(X.sum(axis=1)).ravel()
    loglik_m, g_m, _, *counts = _evaluate(
        X,
        mean[None],
        beta,
        gradient=True,
        hessian=False,
        average=True,
        topic_counts=topic_counts,
        document_weights=document_weights,
    )
    c_head = g_m + words[:, None] * topic_proportions(mean)[:, :dim]
    return words, loglik_m, c_head, counts


def _lse0(values):
    """``log(1 + sum_k exp(values_k))`` along the last axis: ``lse([values, 0])``."""
    top = np.maximum(values.max(axis=-1, initial=0.0), 0.0)
    return top + np.log(np.exp(-top) + np.exp(values - top[..., None]).sum(axis=-1))


def mean_field_bound_derivatives(
    X, mean, variance, beta, topic_counts=False, document_weights=None
):
    """The data part of Blei and Lafferty's mean-field bound and its derivatives.

    Blei and Lafferty's correlated topic model ("Correlated topic models")
    factorises ``q`` fully: a diagonal Gaussian ``q(eta_d)``, a factor per
    word's topic at its optimum (``p_v`` at ``eta = mean``), and bounds
    ``E_q[lse([eta, 0])]`` by ``log zeta`` at the optimal ``zeta = 1 +
    sum_k exp(m_k + v_k / 2)``.  The data part of document ``d``'s bound is
    then deterministic::

        L_d(m) + N_d (lse([m, 0]) - lse([m + v / 2, 0]))

    with gradient ``c~ - N_d theta~(m + v / 2)`` in ``m`` (``c = sum_v n_v
    phi_v``) and ``-N_d theta~(m + v / 2) / 2`` in ``v``; the curvature
    returned, twice the gradient in ``v``, is the diagonal matrix
    ``-N_d diag(theta~(m + v / 2))``.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts.
    mean : array-like of shape (n_docs, K - 1)
        Means ``m_d`` of ``q``.
    variance : array-like of shape (n_docs, K - 1)
        Variances ``v_d`` of ``q``.
    beta : array-like of shape (K, V)
        Topic-word probabilities.
    topic_counts : bool, default=False
        Whether to return each topic's word counts ``sum_d n_dv phi_dv``.
    document_weights : array-like of shape (n_docs,) or None, default=None
        Each document's weight in the topic counts (a document of weight 2
        counts twice); None counts each once.  The other results are each
        document's own, whatever its weight.

    Returns
    -------
    MonteCarloDerivatives
        ``(g_hat, H_hat, loglik_hat, topic_counts)``: the gradient, the
        curvature (shape (n_docs, K - 1, K - 1)), the data part of the bound
        and the topic counts (exact: nothing is sampled).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import mean_field_bound_derivatives
    >>> X = sp.csr_array(np.array([[2.0, 0.0, 1.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> est = mean_field_bound_derivatives(X, np.zeros((1, 1)), np.ones((1, 1)), beta)
    >>> float(est.H_hat[0, 0, 0].round(4))  # -3 * theta_1(0.5)
    -1.8674
    """
    X = _check_counts(X)
    mean, variance = _check_gaussian(mean, variance, X.shape[0], "variance")
    if variance.shape != mean.shape:
        raise ValueError("variance must have the shape of mean: the mean-field q is diagonal.")
    dim = mean.shape[1]
    beta = _check_beta(beta, dim + 1, X.shape[1])
    words, loglik_m, c_head, counts = _at_the_mean(X, mean, beta, topic_counts, document_weights)
    shifted = mean + 0.5 * variance
    theta_shift = topic_proportions(shifted)[:, :dim]
    g = c_head - words[:, None] * theta_shift
    H = -(words[:, None] * theta_shift)[:, :, None] * np.eye(dim)
    data = loglik_m + words * (_lse0(mean) - _lse0(shifted))
    return MonteCarloDerivatives(g, H, data, counts[0] if counts else None)


def gauss_hermite_rule(dim, n_points):
    """A tensor-product Gauss-Hermite rule for the standard normal in ``dim`` dimensions.

    Parameters
    ----------
    dim : int
        Dimension.
    n_points : int
        Nodes per dimension (``n_points ** dim`` in all).

    Returns
    -------
    nodes : ndarray of shape (n_points ** dim, dim)
    weights : ndarray of shape (n_points ** dim,)
        Positive, summing to 1; exact for polynomials of degree below
        ``2 n_points`` in each coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.kernels import gauss_hermite_rule
    >>> z, w = gauss_hermite_rule(2, 3)
    >>> z.shape, float(w.sum().round(12)), float((w * z[:, 0] ** 2).sum().round(12))
    ((9, 2), 1.0, 1.0)
    """
    z, w = hermegauss(int(n_points))
    w = w / np.sqrt(2.0 * np.pi)
    nodes = np.stack([g.ravel() for g in np.meshgrid(*([z] * dim), indexing="ij")], axis=-1)
    weights = np.prod(
        np.stack([g.ravel() for g in np.meshgrid(*([w] * dim), indexing="ij")], axis=-1), axis=-1
    )
    return nodes, weights


def gauss_hermite_expectation(f, mean, cov, n_points=20):
    """Expectation of ``f(eta)`` under ``N(mean, cov)`` by Gauss-Hermite quadrature.

    A tensor-product rule of ``n_points`` nodes per dimension on
    ``eta = mean + L z`` (``L`` the Cholesky factor of ``cov``), exact for
    polynomials of degree below ``2 n_points`` in each coordinate of ``z``.
    Meant for a few dimensions (``n_points ** d`` evaluations), as a
    reference for the Monte Carlo estimates.

    Parameters
    ----------
    f : callable
        Maps an array of shape (n_nodes, d) to an array of shape
        (n_nodes, ...), or to a tuple of such arrays.
    mean : array-like of shape (d,)
        Mean of the Gaussian.
    cov : array-like of shape (d, d)
        Its covariance (positive definite).
    n_points : int, default=20
        Nodes per dimension.

    Returns
    -------
    ndarray or tuple of ndarray
        The expectation of ``f``'s value(s), of shape ``...``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.kernels import gauss_hermite_expectation
    >>> m, C = np.array([1.0, -1.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> second = gauss_hermite_expectation(lambda e: e[:, :, None] * e[:, None, :], m, C, 5)
    >>> bool(np.allclose(second, C + np.outer(m, m)))
    True
    """
    mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    L = cholesky_factor(np.atleast_2d(np.asarray(cov, dtype=np.float64)))
    nodes, weights = gauss_hermite_rule(mean.size, n_points)
    values = f(mean + nodes @ L.T)

    def expect(v):
        return np.tensordot(weights, np.asarray(v, dtype=np.float64), axes=(0, 0))

    if isinstance(values, tuple):
        return tuple(expect(v) for v in values)
    return expect(values)


def kl_gaussian(mean, cov, mu, Sigma_inv, logdet_Sigma):
    """``KL(N(m_d, V_d) || N(mu, Sigma))`` for each document.

    Parameters
    ----------
    mean : array-like of shape (n_docs, d)
        Means ``m_d``.
    cov : array-like of shape (n_docs, d, d) or (n_docs, d)
        Covariances ``V_d``, or their diagonals (variances) for a diagonal
        ``q``.
    mu : array-like of shape (d,)
        Prior mean.
    Sigma_inv : array-like of shape (d, d)
        Prior precision ``Sigma^{-1}``.
    logdet_Sigma : float
        ``log det Sigma``.

    Returns
    -------
    kl : ndarray of shape (n_docs,)
        ``(tr(Sigma^{-1} V_d) + (mu - m_d)^T Sigma^{-1} (mu - m_d) - d
        + log det Sigma - log det V_d) / 2``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.ctm.kernels import kl_gaussian
    >>> kl = kl_gaussian(np.array([[1.0, 0.0]]), np.ones((1, 2)), np.zeros(2), np.eye(2), 0.0)
    >>> kl.round(3)
    array([0.5])
    """
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    Sigma_inv = np.asarray(Sigma_inv, dtype=np.float64)
    dim = mean.shape[-1]
    diff = mean - np.asarray(mu, dtype=np.float64)
    quad = np.einsum("ni,ij,nj->n", diff, Sigma_inv, diff)
    if cov.ndim == mean.ndim:
        trace = cov @ np.diagonal(Sigma_inv)
        logdet_V = np.log(cov).sum(axis=-1)
    else:
        trace = np.einsum("ij,nji->n", Sigma_inv, cov)
        logdet_V = spd_logdet(cov)
    return 0.5 * (trace + quad - dim + float(logdet_Sigma) - logdet_V)


def document_elbo(X, mean, cov, beta, mu, Sigma, n_samples, rng=None):
    """Monte Carlo bound ``E_q L_d(eta) - KL(q_d || N(mu, Sigma))`` per document.

    With the topic assignments summed out, ``q`` covers only the logits,
    and this is the tightest bound on ``log p(w_d | beta, mu, Sigma)`` for
    the Gaussian family of ``q``: the bound of a factorized ``q(z)`` is
    lower by the expected KL divergence of ``q(z)`` from the exact
    ``p(z | eta, w)``.  ``E_q L_d`` is averaged over ``n_samples`` draws as
    in :func:`expected_gradient_hessian`; the KL divergence is exact.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts; converted to CSR, only its non-zeros are read.
    mean : array-like of shape (n_docs, K - 1)
        Means ``m_d`` of ``q``.
    cov : array-like of shape (n_docs, K - 1, K - 1) or (n_docs, K - 1)
        Covariances ``V_d`` of ``q``, or their diagonals (variances).
    beta : array-like of shape (K, V)
        Topic-word probabilities; each row sums to 1.
    mu : array-like of shape (K - 1,)
        Prior mean of the logits.
    Sigma : array-like of shape (K - 1, K - 1)
        Prior covariance of the logits.
    n_samples : int
        Number of Monte Carlo draws per document.
    rng : None, int, numpy.random.RandomState or numpy.random.Generator, default=None
        Source of the draws.

    Returns
    -------
    elbo : ndarray of shape (n_docs,)
        The estimated bound of each document.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.ctm.kernels import document_elbo
    >>> X = sp.csr_array(np.array([[0.0, 3.0, 0.0]]))
    >>> beta = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])
    >>> elbo = document_elbo(X, np.zeros((1, 1)), np.ones((1, 1)), beta,
    ...                      np.zeros(1), np.eye(1), n_samples=10, rng=0)
    >>> elbo.round(4)  # q equals the prior and word 1 is equally likely under each topic
    array([-4.1589])
    """
    X = _check_counts(X)
    mean, cov = _check_gaussian(mean, cov, X.shape[0], "cov")
    beta = _check_beta(beta, mean.shape[1] + 1, X.shape[1])
    factor = np.sqrt(cov) if cov.ndim == mean.ndim else cholesky_factor(cov)
    Sigma = np.atleast_2d(np.asarray(Sigma, dtype=np.float64))
    Sigma_inv = spd_inverse(Sigma)
    logdet_Sigma = spd_logdet(Sigma)
    eta = _sample(mean, factor, n_samples, rng)
    loglik, _, _ = _evaluate(X, eta, beta, gradient=False, hessian=False, average=True)
    return loglik - kl_gaussian(mean, cov, mu, Sigma_inv, logdet_Sigma)
