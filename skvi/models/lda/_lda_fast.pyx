# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""Compiled LDA E-step: per-document coordinate ascent in C.

:func:`e_step` has the semantics of
:func:`skvi.models.lda.estep.e_step_numpy` and runs its whole document
loop without the GIL, so several Python threads can work on disjoint blocks
of documents at once (each with its own ``sstats_t`` buffer).  The
iterations of one document run in ``_lda_kernel.h``: vector loops over the
document's words, compiled for AVX-512, AVX2 and the baseline instruction
set and chosen at import by what the CPU runs (:func:`get_isa`,
:func:`set_isa`).
:func:`exp_digamma_diff` computes ``exp(E[log beta])`` for the words of a
minibatch, and :func:`exp_digamma` exposes the C ``exp(psi(x))`` for testing.
"""

import numpy as np

from cython cimport floating
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport INFINITY, exp, log
from libc.stdlib cimport free, malloc

ctypedef fused index_t:
    int
    long long


cdef extern from "_lda_kernel.h" nogil:
    double exp_psi "skvi_exp_psi"(double x)
    double psi "skvi_psi"(double x)
    double SMALL_TOTAL "SKVI_SMALL_TOTAL"
    void* align64 "skvi_align64"(void* p)
    int WIDTH_D "SKVI_WIDTH_D"
    int WIDTH_F "SKVI_WIDTH_F"
    int kernel_init "skvi_lda_kernel_init"(int level)
    int doc_iterate_d "skvi_doc_iterate_d"(
        const double* cols, Py_ssize_t stride, Py_ssize_t K, const double* cnt,
        const double* alpha, double* gamma, double* e_theta, double* ratio, double* acc,
        double* work, int max_iter, double tol, double eps, int expected_theta)
    int doc_iterate_f "skvi_doc_iterate_f"(
        const float* cols, Py_ssize_t stride, Py_ssize_t K, const float* cnt,
        const float* alpha, float* gamma, float* e_theta, float* ratio, float* acc,
        double* work, int max_iter, double tol, float eps, int expected_theta)
    void exp_psi_array "skvi_exp_psi_array"(const double* x, double* out, Py_ssize_t n)
    void doc_ratio_d "skvi_doc_ratio_d"(
        const double* cols, Py_ssize_t stride, Py_ssize_t K, const double* cnt,
        const double* e_theta, double* ratio, double* phinorm, double eps)
    void doc_ratio_f "skvi_doc_ratio_f"(
        const float* cols, Py_ssize_t stride, Py_ssize_t K, const float* cnt,
        const float* e_theta, float* ratio, float* phinorm, float eps)


_LEVELS = {"baseline": 0, "avx2": 1, "avx512": 2}
_LEVEL_NAMES = {v: k for k, v in _LEVELS.items()}
_isa = _LEVEL_NAMES[kernel_init(2)]


def set_isa(name="avx512"):
    """Choose the instruction set of the E-step's inner loop; return the one used.

    The widest of ``'avx512'``, ``'avx2'`` (with FMA) and ``'baseline'`` that
    the CPU runs, capped at ``name``, is picked at import.  Results agree
    across choices up to rounding (FMA contracts multiply-adds).

    Parameters
    ----------
    name : {'avx512', 'avx2', 'baseline'}
        The widest instruction set allowed.

    Returns
    -------
    chosen : str
        The instruction set now in use.
    """
    global _isa
    if name not in _LEVELS:
        raise ValueError(f"name must be one of {sorted(_LEVELS)}, got {name!r}")
    _isa = _LEVEL_NAMES[kernel_init(_LEVELS[name])]
    return _isa


def get_isa():
    """Return the instruction set of the E-step's inner loop (see :func:`set_isa`)."""
    return _isa


cdef inline void normalized(const floating* g, floating* out, Py_ssize_t K) noexcept nogil:
    """``out[k] = g[k] / sum(g)``: E[theta] of the Dirichlet ``g``."""
    cdef Py_ssize_t k
    cdef double total = 0.0
    for k in range(K):
        total += g[k]
    for k in range(K):
        out[k] = <floating>(g[k] / total)


cdef inline void exp_dirichlet(const floating* g, floating* out, Py_ssize_t K) noexcept nogil:
    """``out[k] = exp(psi(g[k]) - psi(sum(g)))``, in double internally."""
    cdef Py_ssize_t k
    cdef double total = 0.0
    cdef double inv_total
    for k in range(K):
        total += g[k]
    if total < SMALL_TOTAL:  # exp(psi(total)) nears underflow: one exp of the difference
        inv_total = psi(total)
        for k in range(K):
            out[k] = <floating>exp(psi(g[k]) - inv_total)
        return
    inv_total = 1.0 / exp_psi(total)
    for k in range(K):
        out[k] = <floating>(exp_psi(g[k]) * inv_total)


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
    bint expected_theta=False,
):
    """Run the LDA E-step on a CSR minibatch, updating ``gamma`` in place.

    Same updates, stopping rule and returns as
    :func:`skvi.models.lda.estep.e_step_numpy`, computed document by
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
    expected_theta : bool, default=False
        Use ``E[theta_d] = gamma_d / sum(gamma_d)`` in place of
        ``exp(E[log theta_d])`` (the zero-order collapsed update, CVB0,
        whose ``exp_elog_beta_t`` holds ``E[beta]``).

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

    # The document's rows of exp_elog_beta_t, gathered once per document and
    # transposed into K columns of `stride` words (padded with zeros to whole
    # 64-byte blocks): the C kernel's loops then run along the words.
    cdef Py_ssize_t width = WIDTH_F if floating is float else WIDTH_D
    cdef Py_ssize_t max_stride = (max_len + width - 1) // width * width
    cdef Py_ssize_t stride
    cdef void* block = malloc(
        (2 * max(K, 1) + (K + 3) * max(max_stride, 1)) * sizeof(floating)
        + max(K, 1) * sizeof(double) + 6 * 64)
    if block == NULL:
        raise MemoryError()
    cdef floating* cols = <floating*>align64(block)
    cdef floating* cnt_p = <floating*>align64(cols + K * max_stride)
    cdef floating* ratio = <floating*>align64(cnt_p + max_stride)
    cdef floating* phin = <floating*>align64(ratio + max_stride)
    cdef floating* e_theta = <floating*>align64(phin + max_stride)
    cdef floating* acc = e_theta + K
    cdef double* work = <double*>align64(acc + K)

    cdef const floating* beta = &exp_elog_beta_t[0, 0] if n_words > 0 else NULL
    cdef const floating* a = &alpha[0] if K > 0 else NULL
    cdef floating* g
    cdef floating* sstats = &sstats_t[0, 0] if has_sstats and n_words > 0 else NULL
    cdef floating* srow
    cdef const floating* brow
    cdef const index_t* idx
    cdef floating r
    cdef double loglik = 0.0
    cdef long long n_updates = 0

    with nogil:
        for d in range(n_docs):
            start = indptr[d]
            nd = indptr[d + 1] - start
            stride = (nd + width - 1) // width * width
            idx = &indices[0] + start if nnz > 0 else NULL
            g = &gamma[d, 0]
            for j in range(nd):
                brow = beta + <Py_ssize_t>idx[j] * K
                for k in range(K):
                    cols[k * stride + j] = brow[k]
                cnt_p[j] = data[start + j]
            for k in range(K):
                for j in range(nd, stride):
                    cols[k * stride + j] = 0
            for j in range(nd, stride):
                cnt_p[j] = 0
            if expected_theta:
                normalized(g, e_theta, K)
            else:
                exp_dirichlet(g, e_theta, K)
            if max_iter > 0:
                if floating is float:
                    n_updates += doc_iterate_f(cols, stride, K, cnt_p, a, g, e_theta, ratio,
                                               acc, work, max_iter, tol, eps, expected_theta)
                else:
                    n_updates += doc_iterate_d(cols, stride, K, cnt_p, a, g, e_theta, ratio,
                                               acc, work, max_iter, tol, eps, expected_theta)
            # phinorm at the final gamma: the bound and the statistics.
            if floating is float:
                doc_ratio_f(cols, stride, K, cnt_p, e_theta, ratio, phin, eps)
            else:
                doc_ratio_d(cols, stride, K, cnt_p, e_theta, ratio, phin, eps)
            for j in range(nd):
                loglik += <double>cnt_p[j] * log(<double>phin[j])
            if has_sstats:
                for j in range(nd):
                    r = ratio[j]
                    srow = sstats + <Py_ssize_t>idx[j] * K
                    for k in range(K):
                        srow[k] += r * e_theta[k]

    free(block)
    return int(n_updates), float(loglik)


def exp_digamma_diff(
    const floating[:, ::1] values,
    const double[::1] totals,
    floating[:, ::1] out,
    const index_t[::1] rows=None,
    double offset=0.0,
):
    """Write ``exp(psi(values[i, k] + offset) - psi(totals[k]))`` into ``out``.

    Used for ``exp(E[log beta])`` of a minibatch's words: ``values`` holds
    the words' variational topic parameters (transposed) and ``totals``
    each topic's sum over the whole vocabulary.  With ``rows``, row ``i``
    of ``out`` is computed from ``values[rows[i]]``, so the words' rows need
    not be gathered first.

    Parameters
    ----------
    values : ndarray of shape (n, K)
        C-contiguous, float32 or float64; ``values + offset`` positive.
    totals : ndarray of shape (K,)
        Positive float64 column totals.
    out : ndarray of shape (n, K), or (len(rows), K) with ``rows``
        Output, C-contiguous, dtype of ``values``.
    rows : ndarray of shape (m,) or None
        Rows of ``values`` to read (int32 or int64), in range.
    offset : float
        Added to ``values`` before ``psi``.

    Returns
    -------
    out : ndarray
        The ``out`` argument.
    """
    cdef Py_ssize_t n = values.shape[0]
    cdef Py_ssize_t K = values.shape[1]
    cdef Py_ssize_t m = n if rows is None else rows.shape[0]
    cdef bint gather = rows is not None
    cdef Py_ssize_t i, k, start, stop, r
    if totals.shape[0] != K:
        raise ValueError("totals must have one entry per column of values")
    if out.shape[0] != m or out.shape[1] != K:
        raise ValueError("out must have shape (len(rows), K), or that of values without rows")
    if gather:
        for i in range(m):
            if rows[i] < 0 or rows[i] >= n:
                raise ValueError("row index out of range")
    cdef Py_ssize_t chunk = 4096
    cdef double* psi_tot = <double*>malloc((max(K, 1) + max(chunk, K)) * sizeof(double))
    if psi_tot == NULL:
        raise MemoryError()
    cdef double* buf = psi_tot + max(K, 1)
    cdef const floating* src = &values[0, 0] if n * K > 0 else NULL
    cdef floating* dst = &out[0, 0] if m * K > 0 else NULL
    with nogil:
        for k in range(K):
            psi_tot[k] = 1.0 / exp_psi(totals[k])
        # exp(psi) of whole rows at a time, `chunk` values or more per call.
        start = 0
        while start < m:
            stop = min(m, start + max(1, chunk // max(K, 1)))
            for i in range(start, stop):
                r = rows[i] if gather else i
                for k in range(K):
                    buf[(i - start) * K + k] = src[r * K + k] + offset
            exp_psi_array(buf, buf, (stop - start) * K)
            for i in range(start, stop):
                for k in range(K):
                    dst[i * K + k] = <floating>(buf[(i - start) * K + k] * psi_tot[k])
            start = stop
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
    if x.shape[0] > 0:
        with nogil:
            exp_psi_array(&x[0], &res[0], x.shape[0])
    return result


def blend(floating[:, ::1] out, const floating[:, ::1] x, double a, double b,
          double[::1] totals, const index_t[::1] rows=None,
          const floating[:, ::1] values=None, double scale=0.0, double lower=-INFINITY):
    """``out = a * x + b`` (plus ``scale * values`` at ``rows``) in one pass.

    The online topic update scales every topic weight and adds the
    minibatch's statistics at its words; the column totals that
    ``psi(sum)`` needs come from the same pass.

    Parameters
    ----------
    out, x : ndarray of shape (n, K)
        C-contiguous, same dtype; ``out`` is overwritten (it must not be
        ``values``).
    a, b : float
        The affine map.
    totals : ndarray of shape (K,)
        float64, overwritten with the column sums of ``out``.
    rows : ndarray of shape (m,) or None
        Distinct rows of ``out`` that also get ``scale * values``.
    values : ndarray of shape (m, K) or None
        C-contiguous, dtype of ``out``; required with ``rows``.
    scale : float
        Multiplier of ``values``.
    lower : float
        Bound for the validity check of the rows in ``rows``.

    Returns
    -------
    valid : bool
        Whether every entry of ``out`` at ``rows`` is finite and above
        ``lower``.
    """
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t K = x.shape[1]
    cdef Py_ssize_t m = 0 if rows is None else rows.shape[0]
    if out.shape[0] != n or out.shape[1] != K or totals.shape[0] != K:
        raise ValueError("out must have the shape of x and totals one entry per column")
    if rows is not None and (values is None or values.shape[0] != m or values.shape[1] != K):
        raise ValueError("values must have shape (len(rows), x.shape[1])")
    cdef Py_ssize_t i, k, p
    cdef Py_ssize_t* pos = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
    if pos == NULL:
        raise MemoryError()
    for i in range(n):
        pos[i] = -1
    for i in range(m):
        if rows[i] < 0 or rows[i] >= n or pos[rows[i]] != -1:
            free(pos)
            raise ValueError("rows must be distinct and in range")
        pos[rows[i]] = i
    cdef floating fa = <floating>a
    cdef floating fb = <floating>b
    cdef floating fs = <floating>scale
    cdef floating v
    cdef bint valid = True
    with nogil:
        for k in range(K):
            totals[k] = 0.0
        for i in range(n):
            p = pos[i]
            if p < 0:
                for k in range(K):
                    v = fa * x[i, k] + fb
                    out[i, k] = v
                    totals[k] += v
            else:
                for k in range(K):
                    v = fa * x[i, k] + fb + fs * values[p, k]
                    out[i, k] = v
                    totals[k] += v
                    # NaN fails the comparison; +inf is caught too.
                    if not (v > lower and v < INFINITY):
                        valid = False
    free(pos)
    return bool(valid)


def add_rows(floating[:, ::1] dest, const index_t[::1] rows, const floating[:, ::1] values,
             double scale, double[::1] totals=None, double lower=-INFINITY):
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
    totals : ndarray of shape (K,) or None
        float64 column totals of ``dest``, kept up to date when given.
    lower : float
        Bound for the validity check.

    Returns
    -------
    valid : bool
        Whether every updated entry is finite and above ``lower``.
    """
    cdef Py_ssize_t m = rows.shape[0]
    cdef Py_ssize_t K = dest.shape[1]
    cdef Py_ssize_t n = dest.shape[0]
    cdef Py_ssize_t i, k, r
    cdef bint has_totals = totals is not None
    cdef bint valid = True
    cdef floating v
    if values.shape[0] != m or values.shape[1] != K:
        raise ValueError("values must have shape (len(rows), dest.shape[1])")
    if has_totals and totals.shape[0] != K:
        raise ValueError("totals must have one entry per column of dest")
    for i in range(m):
        if rows[i] < 0 or rows[i] >= n:
            raise ValueError("row index out of range")
    cdef floating s = <floating>scale
    with nogil:
        for i in range(m):
            r = rows[i]
            for k in range(K):
                v = dest[r, k] + s * values[i, k]
                dest[r, k] = v
                # NaN fails the comparison; +inf is caught below.
                if not (v > lower and v < INFINITY):
                    valid = False
                if has_totals:
                    totals[k] += s * values[i, k]
    return bool(valid)
