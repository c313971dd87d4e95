# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""Compiled LDA E-step: per-document coordinate ascent in C.

:func:`e_step` has the semantics of
:func:`skvi.models._lda_estep.e_step_numpy` and runs its whole document
loop without the GIL, so several Python threads can work on disjoint blocks
of documents at once (each with its own ``sstats_t`` buffer).
:func:`exp_digamma_diff` computes ``exp(E[log beta])`` for the words of a
minibatch, and :func:`exp_digamma` exposes the C ``exp(psi(x))`` for testing.
"""

import numpy as np

from cython cimport floating
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport INFINITY, NAN, exp, fabs, log
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

ctypedef fused index_t:
    int
    long long


cdef inline double exp_psi_series(double x, double shift_sum) noexcept nogil:
    """``x * exp(series(x) - shift_sum)`` for ``x >= 6``: ``exp(psi)`` there.

    exp(log(x) + series) = x * exp(series) needs no logarithm; the series
    through the x**-12 term leaves a relative error below 2e-12.
    """
    cdef double inv = 1.0 / x
    cdef double g = inv * inv
    return x * exp(
        -0.5 * inv
        - g * (8.3333333333333333e-02
        - g * (8.3333333333333333e-03
        - g * (3.9682539682539683e-03
        - g * (4.1666666666666667e-03
        - g * (7.5757575757575758e-03
        - g * 2.1092796092796093e-02)))))
        - shift_sum
    )


cdef inline double exp_psi(double x) noexcept nogil:
    """``exp(psi(x))`` for ``x > 0`` with one exp and one division.

    Below 6 the recurrence psi(x) = psi(x + 6) - sum_{i<6} 1/(x + i) is
    applied with the sum as one fraction of three independent pairs: a fixed
    number of operations instead of a loop with a data-dependent trip count
    (measured 1.3x faster on E-step-like values).
    """
    cdef double d1, d2, d3, n1, n2, n3
    if x >= 6.0:
        return exp_psi_series(x, 0.0)
    n1 = 2.0 * x + 1.0
    d1 = x * (x + 1.0)
    n2 = 2.0 * x + 5.0
    d2 = (x + 2.0) * (x + 3.0)
    n3 = 2.0 * x + 9.0
    d3 = (x + 4.0) * (x + 5.0)
    return exp_psi_series(
        x + 6.0, ((n1 * d2 + n2 * d1) * d3 + n3 * (d1 * d2)) / ((d1 * d2) * d3)
    )


cdef inline void exp_dirichlet(const floating* g, floating* out, Py_ssize_t K) noexcept nogil:
    """``out[k] = exp(psi(g[k]) - psi(sum(g)))``, in double internally."""
    cdef Py_ssize_t k
    cdef double total = 0.0
    cdef double inv_total
    for k in range(K):
        total += g[k]
    inv_total = 1.0 / exp_psi(total)
    for k in range(K):
        out[k] = <floating>(exp_psi(g[k]) * inv_total)


cdef inline floating dot(const floating* a, const floating* b, Py_ssize_t K) noexcept nogil:
    """``sum_k a[k] * b[k]`` with four partial sums (packed by the compiler)."""
    cdef Py_ssize_t k
    cdef Py_ssize_t K4 = K - K % 4
    cdef floating s0 = 0, s1 = 0, s2 = 0, s3 = 0
    for k in range(0, K4, 4):
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
    for k in range(K4, K):
        s0 += a[k] * b[k]
    return (s0 + s1) + (s2 + s3)


cdef inline void axpy(floating r, const floating* x, floating* y, Py_ssize_t K) noexcept nogil:
    """``y[k] += r * x[k]``."""
    cdef Py_ssize_t k
    for k in range(K):
        y[k] += r * x[k]


def e_step(
    const index_t[::1] indptr,
    const index_t[::1] indices,
    const floating[::1] data,
    const floating[:, ::1] exp_elog_beta_t,
    const floating[::1] alpha,
    floating[:, ::1] gamma,
    int max_iter,
    double tol,
    floating[:, ::1] sstats_t=None,
):
    """Run the LDA E-step on a CSR minibatch, updating ``gamma`` in place.

    Same updates, stopping rule and returns as
    :func:`skvi.models._lda_estep.e_step_numpy`, computed document by
    document in C with the GIL released.

    Parameters
    ----------
    indptr, indices, data : ndarray
        The CSR arrays of the word counts (``indptr`` and ``indices`` int32
        or int64 of one type; ``data`` float32 or float64).
    exp_elog_beta_t : ndarray of shape (n_words, n_topics)
        ``exp(E[log beta])`` transposed, C-contiguous, dtype of ``data``.
    alpha : ndarray of shape (n_topics,)
        Dirichlet prior of the document-topic proportions.
    gamma : ndarray of shape (n_docs, n_topics)
        Initial variational parameters, C-contiguous; overwritten.
    max_iter : int
        Most fixed-point iterations per document.
    tol : float
        A document stops when the mean absolute change of its ``gamma`` row
        falls below ``tol``.
    sstats_t : ndarray of shape (n_words, n_topics) or None
        When given, ``sum_d n_dw / phinorm_dw * exp(E[log theta_d])`` is
        added to it.

    Returns
    -------
    n_updates : int
        Document updates made (sum over documents of their iterations).
    loglik : float
        ``sum_dw n_dw * log(phinorm_dw)`` at the final ``gamma``.
    """
    cdef Py_ssize_t n_docs = gamma.shape[0]
    cdef Py_ssize_t K = gamma.shape[1]
    cdef Py_ssize_t n_words = exp_elog_beta_t.shape[0]
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef bint has_sstats = sstats_t is not None
    cdef floating eps
    if floating is float:
        eps = FLT_EPSILON
    else:
        eps = DBL_EPSILON

    if indptr.shape[0] != n_docs + 1:
        raise ValueError(f"indptr has {indptr.shape[0]} entries for {n_docs} documents")
    if data.shape[0] != nnz:
        raise ValueError("indices and data differ in length")
    if exp_elog_beta_t.shape[1] != K or alpha.shape[0] != K:
        raise ValueError("exp_elog_beta_t, alpha and gamma differ in n_topics")
    if has_sstats and (sstats_t.shape[0] != n_words or sstats_t.shape[1] != K):
        raise ValueError("sstats_t must have the shape of exp_elog_beta_t")

    cdef Py_ssize_t d, j, k, w, start, nd, max_len = 0
    cdef bint bad = False
    with nogil:
        if indptr[0] < 0 or indptr[n_docs] > nnz:
            bad = True
        for d in range(n_docs):
            nd = indptr[d + 1] - indptr[d]
            if nd < 0:
                bad = True
            elif nd > max_len:
                max_len = nd
        if not bad:
            for j in range(indptr[0], indptr[n_docs]):
                w = indices[j]
                if w < 0 or w >= n_words:
                    bad = True
                    break
    if bad:
        raise ValueError("indptr/indices are not a valid CSR structure for exp_elog_beta_t")

    cdef floating* e_theta = <floating*>malloc(max(K, 1) * sizeof(floating))
    cdef floating* acc = <floating*>malloc(max(K, 1) * sizeof(floating))
    # The document's rows of exp_elog_beta_t, gathered once per document so
    # that every iteration reads them contiguously from cache.
    cdef floating* rows = <floating*>malloc(max(max_len * K, 1) * sizeof(floating))
    if e_theta == NULL or acc == NULL or rows == NULL:
        free(e_theta)
        free(acc)
        free(rows)
        raise MemoryError()

    cdef const floating* beta = &exp_elog_beta_t[0, 0] if n_words > 0 else NULL
    cdef const floating* a = &alpha[0] if K > 0 else NULL
    cdef floating* g
    cdef floating* s
    cdef floating* row
    cdef floating* sstats = &sstats_t[0, 0] if has_sstats and n_words > 0 else NULL
    cdef const index_t* idx
    cdef const floating* cnt
    cdef floating r, new, phinorm
    cdef double change, loglik = 0.0
    cdef long long n_updates = 0
    cdef int it

    with nogil:
        for d in range(n_docs):
            start = indptr[d]
            nd = indptr[d + 1] - start
            idx = &indices[0] + start if nnz > 0 else NULL
            cnt = &data[0] + start if nnz > 0 else NULL
            g = &gamma[d, 0]
            for j in range(nd):
                memcpy(rows + j * K, beta + <Py_ssize_t>idx[j] * K, K * sizeof(floating))
            exp_dirichlet(g, e_theta, K)
            for it in range(max_iter):
                for k in range(K):
                    acc[k] = 0
                for j in range(nd):
                    row = rows + j * K
                    phinorm = dot(e_theta, row, K) + eps
                    axpy(cnt[j] / phinorm, row, acc, K)
                change = 0.0
                for k in range(K):
                    new = a[k] + e_theta[k] * acc[k]
                    change += fabs(new - g[k])
                    g[k] = new
                change /= K
                exp_dirichlet(g, e_theta, K)
                n_updates += 1
                if change < tol:
                    break
            # phinorm at the final gamma: the bound and the statistics.
            for j in range(nd):
                phinorm = dot(e_theta, rows + j * K, K) + eps
                loglik += <double>cnt[j] * log(<double>phinorm)
                if has_sstats:
                    axpy(cnt[j] / phinorm, e_theta, sstats + <Py_ssize_t>idx[j] * K, K)

    free(e_theta)
    free(acc)
    free(rows)
    return int(n_updates), float(loglik)


def exp_digamma_diff(
    const floating[:, ::1] values,
    const double[::1] totals,
    floating[:, ::1] out,
):
    """Write ``exp(psi(values[i, k]) - psi(totals[k]))`` into ``out``.

    Used for ``exp(E[log beta])`` of a minibatch's words: ``values`` holds
    the words' variational topic parameters (transposed) and ``totals``
    each topic's sum over the whole vocabulary.

    Parameters
    ----------
    values : ndarray of shape (n, K)
        Positive values, C-contiguous, float32 or float64.
    totals : ndarray of shape (K,)
        Positive float64 column totals.
    out : ndarray of shape (n, K)
        Output, C-contiguous, dtype of ``values``.

    Returns
    -------
    out : ndarray
        The ``out`` argument.
    """
    cdef Py_ssize_t n = values.shape[0]
    cdef Py_ssize_t K = values.shape[1]
    if totals.shape[0] != K:
        raise ValueError("totals must have one entry per column of values")
    if out.shape[0] != n or out.shape[1] != K:
        raise ValueError("out must have the shape of values")
    cdef double* psi_tot = <double*>malloc(max(K, 1) * sizeof(double))
    if psi_tot == NULL:
        raise MemoryError()
    cdef Py_ssize_t i, k
    with nogil:
        for k in range(K):
            psi_tot[k] = 1.0 / exp_psi(totals[k])
        for i in range(n):
            for k in range(K):
                out[i, k] = <floating>(exp_psi(values[i, k]) * psi_tot[k])
    free(psi_tot)
    return out.base


def exp_digamma(const double[::1] x):
    """Return ``exp(psi(x))`` of each entry of ``x`` as the E-step computes it.

    Parameters
    ----------
    x : ndarray of shape (n,)
        Positive float64 values.

    Returns
    -------
    out : ndarray of shape (n,)
        ``exp(psi(x))``.
    """
    result = np.empty(x.shape[0], dtype=np.float64)
    cdef double[::1] res = result
    cdef Py_ssize_t i
    with nogil:
        for i in range(x.shape[0]):
            res[i] = exp_psi(x[i])
    return result


def add_rows(floating[:, ::1] dest, const index_t[::1] rows, const floating[:, ::1] values,
             double scale):
    """``dest[rows[i]] += scale * values[i]`` for distinct ``rows``, in place.

    The online topic update adds a minibatch's statistics to the topics of
    its words; numpy's fancy-indexed ``+=`` does this several times slower.

    Parameters
    ----------
    dest : ndarray of shape (n, K)
        C-contiguous array updated in place.
    rows : ndarray of shape (m,)
        Distinct row indices into ``dest`` (int32 or int64).
    values : ndarray of shape (m, K)
        C-contiguous rows to add, dtype of ``dest``.
    scale : float
        Multiplier of ``values``.
    """
    cdef Py_ssize_t m = rows.shape[0]
    cdef Py_ssize_t K = dest.shape[1]
    cdef Py_ssize_t n = dest.shape[0]
    cdef Py_ssize_t i, k, r
    if values.shape[0] != m or values.shape[1] != K:
        raise ValueError("values must have shape (len(rows), dest.shape[1])")
    for i in range(m):
        if rows[i] < 0 or rows[i] >= n:
            raise ValueError("row index out of range")
    cdef floating s = <floating>scale
    with nogil:
        for i in range(m):
            r = rows[i]
            for k in range(K):
                dest[r, k] += s * values[i, k]
