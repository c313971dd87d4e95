# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""Compiled per-step kernels of matrix factorization's user and item nodes.

numpy's batched ``linalg`` routines and sparse products cost several
microseconds of overhead per call and per small matrix, which dominates
for the ``(K + 1) x (K + 1)`` posteriors of matrix factorization (one per
user and item) on minibatches of a few thousand ratings.  Three loops in C,
without the GIL:

* :func:`moments_from_natural`: the moments of many small Gaussians, by
  the family layer's compiled map (``skvi/expfam/_gaussian_small.pxd``);
* :func:`aggregate_sorted`: each node's sums over its rated partners'
  moments (the conjugate statistics of Paquet, "On the convergence of
  stochastic variational inference in Bayesian networks", eqs. 5-7);
* :func:`natural_step`: each node's target ``prior + s_i * stats_i``, the
  blend with its own step size ``rho_i`` and the moments of the result.

The numpy references are :func:`skvi.models.matrix_factorization.nodes.moments_full_numpy`,
:func:`skvi.models.matrix_factorization.nodes.aggregate_numpy` and the
numpy branch of :func:`skvi.models.matrix_factorization.updates.update_nodes`.
"""

import numpy as np

from libc.math cimport NAN, exp, expm1, fabs, isfinite, log, log1p, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from skvi.expfam._gaussian_small cimport gaussian_moments_one


def moments_from_natural(const double[:, ::1] eta1, const double[:, :, ::1] eta2,
                         double[:, ::1] mean, double[:, :, ::1] second,
                         double[:, ::1] var, double[::1] logdet):
    """Moments of Gaussians given by natural parameters ``(P m, -P / 2)``.

    Parameters
    ----------
    eta1 : ndarray of shape (n, d), C-contiguous float64
        Precision times mean.
    eta2 : ndarray of shape (n, d, d), C-contiguous float64
        Minus half the precision (its lower triangle is used).
    mean, second, var, logdet : ndarray
        Outputs of shapes (n, d), (n, d, d), (n, d) and (n,): the means,
        the second moments ``Sigma + m m^T``, the variances and the
        log-determinants of the precisions.  Rows whose precision is not
        positive definite are filled with NaN.

    Returns
    -------
    n_failed : int
        Number of rows whose precision is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> mean, second = np.empty((1, 1)), np.empty((1, 1, 1))
    >>> var, logdet = np.empty((1, 1)), np.empty(1)
    >>> _gaussian_fast.moments_from_natural(np.array([[2.0]]), np.array([[[-1.0]]]),
    ...                                     mean, second, var, logdet)
    0
    >>> round(float(mean[0, 0]), 12), round(float(var[0, 0]), 12)
    (1.0, 0.5)
    """
    cdef Py_ssize_t n = eta1.shape[0], d = eta1.shape[1]
    cdef Py_ssize_t i
    cdef int failed = 0
    cdef double *L = <double *> malloc(d * d * sizeof(double))
    cdef double *Li = <double *> malloc((d * d + d) * sizeof(double))
    if L == NULL or Li == NULL:
        free(L)
        free(Li)
        raise MemoryError()
    with nogil:
        for i in range(n):
            failed += gaussian_moments_one(&eta1[i, 0], &eta2[i, 0, 0], d, L, Li, &mean[i, 0],
                                           &second[i, 0, 0], &var[i, 0], &logdet[i])
    free(L)
    free(Li)
    return failed


def aggregate_sorted(const long long[::1] indptr, const long long[::1] partner,
                     const double[::1] ratings, const double[::1] weights,
                     const double[:, ::1] pmean, const double[:, :, ::1] psecond,
                     double[:, :, ::1] A, double[:, ::1] B, double[:, ::1] sx,
                     double[:, ::1] rx, double[::1] so, double[::1] ro, double[::1] soo):
    """Each node's sums over its rated partners' moments, ratings grouped by node.

    A partner of design ``x = (f, 1)`` and offset ``o`` (its factors ``f``
    and bias ``o``, the last coordinate) with moments ``m = E[(f, o)]`` and
    ``S = E[(f, o)(f, o)^T]`` adds, times its rating's weight ``w``:
    ``A += E[x x^T]``, ``B += E[x o]``, ``sx += E[x]``, ``rx += r E[x]``,
    ``so += E[o]``, ``ro += r E[o]``, ``soo += E[o^2]``.

    Parameters
    ----------
    indptr : ndarray of shape (n + 1,), int64
        The ratings of node ``i`` are positions ``indptr[i]:indptr[i + 1]``.
    partner : ndarray of shape (n_ratings,), int64
        Each rating's partner: its row of ``pmean`` and ``psecond``.
    ratings : ndarray of shape (n_ratings,)
        The ratings, in the same order.
    weights : ndarray of shape (n_ratings,) or (0,)
        Their weights; an empty array for unit weights.
    pmean, psecond : ndarray of shapes (p, d) and (p, d, d)
        The partners' means and second moments.
    A, B, sx, rx, so, ro, soo : ndarray
        Outputs of shapes (n, d, d), (n, d), (n, d), (n, d), (n,), (n,), (n,).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> m = np.array([[2.0, 0.5]])                   # one partner: f = 2, o = 0.5
    >>> S = m[:, :, None] * m[:, None, :]
    >>> A, B = np.empty((1, 2, 2)), np.empty((1, 2))
    >>> sx, rx = np.empty((1, 2)), np.empty((1, 2))
    >>> so, ro, soo = np.empty(1), np.empty(1), np.empty(1)
    >>> _gaussian_fast.aggregate_sorted(np.array([0, 2]), np.array([0, 0]),
    ...     np.array([3.0, 4.0]), np.empty(0), m, S, A, B, sx, rx, so, ro, soo)
    >>> A[0].tolist(), rx[0].tolist()
    ([[8.0, 4.0], [4.0, 2.0]], [14.0, 7.0])
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = pmean.shape[1], k = d - 1
    cdef Py_ssize_t n_p = pmean.shape[0], tri = d * (d + 1) // 2
    cdef Py_ssize_t i, j, a, b, p, c
    cdef bint weighted = weights.shape[0] > 0
    cdef double w, wr, sw, swr
    cdef const double *m
    cdef const double *U
    # The partners' second moments packed once (upper triangles, row by row):
    # half the memory each rating reads.  Per node: T = sum w S (packed), in
    # one contiguous loop the compiler vectorises, M = sum w m, R = sum w r m.
    cdef double *packed = <double *> malloc(n_p * tri * sizeof(double))
    cdef double *T = <double *> malloc(tri * sizeof(double))
    cdef double *M = <double *> malloc(d * sizeof(double))
    cdef double *R = <double *> malloc(d * sizeof(double))
    cdef Py_ssize_t *pos = <Py_ssize_t *> malloc(d * sizeof(Py_ssize_t))
    if packed == NULL or T == NULL or M == NULL or R == NULL or pos == NULL:
        free(packed)
        free(T)
        free(M)
        free(R)
        free(pos)
        raise MemoryError()
    with nogil:
        c = 0
        for a in range(d):
            pos[a] = c - a  # packed index of (a, b), b >= a: pos[a] + b
            c = c + d - a
        for p in range(n_p):
            for a in range(d):
                for b in range(a, d):
                    packed[p * tri + pos[a] + b] = psecond[p, a, b]
        for i in range(n):
            memset(T, 0, tri * sizeof(double))
            memset(M, 0, d * sizeof(double))
            memset(R, 0, d * sizeof(double))
            sw = 0.0
            swr = 0.0
            for j in range(indptr[i], indptr[i + 1]):
                p = partner[j]
                w = weights[j] if weighted else 1.0
                wr = w * ratings[j]
                m = &pmean[p, 0]
                U = &packed[p * tri]
                for a in range(tri):
                    T[a] += w * U[a]
                for a in range(d):
                    M[a] += w * m[a]
                    R[a] += wr * m[a]
                sw += w
                swr += wr
            # x = (f, 1): E[x x^T] = [[E[f f^T], E[f]], [E[f]^T, 1]], E[x o] = (E[f o], E[o]).
            for a in range(k):
                for b in range(a, k):
                    A[i, a, b] = T[pos[a] + b]
                    A[i, b, a] = T[pos[a] + b]
                A[i, a, k] = M[a]
                A[i, k, a] = M[a]
                B[i, a] = T[pos[a] + k]
                sx[i, a] = M[a]
                rx[i, a] = R[a]
            A[i, k, k] = sw
            B[i, k] = M[k]
            sx[i, k] = sw
            rx[i, k] = swr
            so[i] = M[k]
            ro[i] = R[k]
            soo[i] = T[pos[k] + k]
    free(packed)
    free(T)
    free(M)
    free(R)
    free(pos)


def natural_step(const double[:, ::1] old1, const double[:, :, ::1] old2,
                 const double[:, ::1] h, const double[:, :, ::1] P,
                 const double[::1] scale, const double[:, ::1] alpha,
                 const double[::1] rho,
                 double[:, ::1] new1, double[:, :, ::1] new2,
                 double[:, ::1] mean, double[:, :, ::1] second,
                 double[:, ::1] var, double[::1] logdet):
    """Blend each node towards ``prior + scale_i * stats_i`` and take the moments.

    The target of node ``i`` is ``eta1 = scale_i h_i`` and
    ``eta2 = -(alpha + scale_i P_i) / 2``; the node moves to
    ``(1 - rho_i) old + rho_i target``, the engine's convex blend
    (:func:`skvi.engine.step.blend`: a precision far larger than the
    target's does not cancel to zero; the target itself where ``rho_i =
    1``, coordinate ascent), and its moments are those of
    :func:`moments_from_natural`.

    Parameters
    ----------
    old1, old2 : ndarray of shapes (n, d) and (n, d, d)
        The nodes' current natural parameters.
    h, P : ndarray of shapes (n, d) and (n, d, d)
        Their statistics (already weighted by the noise precision).
    scale : ndarray of shape (n,)
        Each node's ``N_i / C_i``.
    alpha : ndarray of shape (d, d)
        The expected prior precision of the side.
    rho : ndarray of shape (n,)
        Each node's step size.
    new1, new2, mean, second, var, logdet : ndarray
        Outputs: the new natural parameters and their moments.

    Returns
    -------
    n_failed : int
        Number of nodes whose new precision is not positive definite
        (their moments are NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> new1, new2 = np.empty((1, 1)), np.empty((1, 1, 1))
    >>> mean, second = np.empty((1, 1)), np.empty((1, 1, 1))
    >>> var, logdet = np.empty((1, 1)), np.empty(1)
    >>> _gaussian_fast.natural_step(np.zeros((1, 1)), -0.5 * np.ones((1, 1, 1)),
    ...     np.array([[3.0]]), np.array([[[2.0]]]), np.array([1.0]), np.eye(1),
    ...     np.array([1.0]), new1, new2, mean, second, var, logdet)
    0
    >>> round(float(mean[0, 0]), 12), round(float(var[0, 0]), 12)  # precision 1 + 2
    (1.0, 0.333333333333)
    """
    cdef Py_ssize_t n = old1.shape[0], d = old1.shape[1]
    cdef Py_ssize_t i, a, b
    cdef int failed = 0
    cdef double s, r, t
    cdef double *L = <double *> malloc(d * d * sizeof(double))
    cdef double *Li = <double *> malloc((d * d + d) * sizeof(double))
    if L == NULL or Li == NULL:
        free(L)
        free(Li)
        raise MemoryError()
    with nogil:
        for i in range(n):
            s = scale[i]
            r = rho[i]
            for a in range(d):
                t = s * h[i, a]
                new1[i, a] = t if r == 1.0 else (1.0 - r) * old1[i, a] + r * t
                for b in range(d):
                    t = -0.5 * (s * P[i, a, b] + alpha[a, b])
                    new2[i, a, b] = t if r == 1.0 else (1.0 - r) * old2[i, a, b] + r * t
            failed += gaussian_moments_one(&new1[i, 0], &new2[i, 0, 0], d, L, Li, &mean[i, 0],
                                           &second[i, 0, 0], &var[i, 0], &logdet[i])
    free(L)
    free(Li)
    return failed


def inner_rows(const double[:, :, ::1] S, const long long[::1] rows,
               const double[:, :, ::1] A):
    """``sum_i <S[rows[i]], A[i]>``: the Frobenius products of gathered matrices, summed.

    Parameters
    ----------
    S : ndarray of shape (m, d, d)
        Matrices of every node (their second moments).
    rows : ndarray of shape (n,), int64
        The row of ``S`` paired with each matrix of ``A``.
    A : ndarray of shape (n, d, d)
        The other factor of each product.

    Returns
    -------
    total : float

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> S = np.stack([np.eye(2), 2.0 * np.eye(2)])
    >>> _gaussian_fast.inner_rows(S, np.array([1]), np.ones((1, 2, 2)))
    4.0
    """
    cdef Py_ssize_t n = rows.shape[0], d = A.shape[1]
    cdef Py_ssize_t i, a, b
    cdef double total = 0.0
    with nogil:
        for i in range(n):
            for a in range(d):
                for b in range(d):
                    total += S[rows[i], a, b] * A[i, a, b]
    return total


def partner_draws(const double[:, :, ::1] eps, const long long[::1] col,
                  const double[:, ::1] pmean, const double[:, :, ::1] proot,
                  double[:, :, ::1] x, double[:, ::1] offset):
    """Draws of each rating's partner node, as designs ``x = (v, 1)`` and offsets ``c``.

    Draw ``s`` of rating ``n`` is ``pmean[col[n]] + proot[col[n]] @ eps[n, s]``
    (``proot`` lower triangular); its last coordinate (the partner's bias)
    goes to ``offset[n, s]`` and is replaced by 1 in ``x``.

    Parameters
    ----------
    eps : ndarray of shape (n, s, d)
        Standard normal numbers.
    col : ndarray of shape (n,), int64
        Each rating's partner (row of ``pmean`` and ``proot``).
    pmean, proot : ndarray of shapes (p, d) and (p, d, d)
        The partners' means and lower Cholesky factors of their covariances.
    x, offset : ndarray of shapes (n, s, d) and (n, s)
        Outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> x, off = np.empty((1, 1, 2)), np.empty((1, 1))
    >>> _gaussian_fast.partner_draws(np.array([[[1.0, 2.0]]]), np.array([0]),
    ...     np.array([[0.5, 3.0]]), np.array([[[2.0, 0.0], [1.0, 1.0]]]), x, off)
    >>> x.tolist(), off.tolist()
    ([[[2.5, 1.0]]], [[6.0]])
    """
    cdef Py_ssize_t n = eps.shape[0], ns = eps.shape[1], d = eps.shape[2], k = d - 1
    cdef Py_ssize_t i, s, a, b, p
    cdef double acc
    with nogil:
        for i in range(n):
            p = col[i]
            for s in range(ns):
                for a in range(d):
                    acc = pmean[p, a]
                    for b in range(a + 1):
                        acc = acc + proot[p, a, b] * eps[i, s, b]
                    x[i, s, a] = acc
                offset[i, s] = x[i, s, k]
                x[i, s, k] = 1.0


def predictor_moments(const double[:, :, ::1] x, const long long[::1] row,
                      const double[:, ::1] nmean, const double[:, :, ::1] ncov,
                      double var_mu, double[:, ::1] m_f, double[:, ::1] var_f):
    """Mean and variance of ``w . x`` under each rating's node ``w ~ N(m, C)``, per draw of ``x``.

    ``m_f[n, s] = x[n, s] . nmean[row[n]]`` and
    ``var_f[n, s] = x[n, s]^T ncov[row[n]] x[n, s] + var_mu``.

    Parameters
    ----------
    x : ndarray of shape (n, s, d)
        The designs.
    row : ndarray of shape (n,), int64
        Each rating's node.
    nmean, ncov : ndarray of shapes (m, d) and (m, d, d)
        The nodes' means and (symmetric) covariances.
    var_mu : float
        Variance of the global mean, added to every variance.
    m_f, var_f : ndarray of shape (n, s)
        Outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> m_f, var_f = np.empty((1, 1)), np.empty((1, 1))
    >>> _gaussian_fast.predictor_moments(np.array([[[2.0, 1.0]]]), np.array([0]),
    ...     np.array([[1.0, 0.5]]), np.array([[[1.0, 0.0], [0.0, 4.0]]]), 0.5, m_f, var_f)
    >>> float(m_f[0, 0]), float(var_f[0, 0])
    (2.5, 8.5)
    """
    cdef Py_ssize_t n = x.shape[0], ns = x.shape[1], d = x.shape[2]
    cdef Py_ssize_t i, s, a, b, p
    cdef double mf, vf, t
    with nogil:
        for i in range(n):
            p = row[i]
            for s in range(ns):
                mf = 0.0
                vf = 0.0
                for a in range(d):
                    mf = mf + x[i, s, a] * nmean[p, a]
                    # The symmetric quadratic form from the upper triangle.
                    t = 0.5 * ncov[p, a, a] * x[i, s, a]
                    for b in range(a + 1, d):
                        t = t + ncov[p, a, b] * x[i, s, b]
                    vf = vf + x[i, s, a] * t
                vf = 2.0 * vf
                m_f[i, s] = mf
                var_f[i, s] = vf + var_mu


def accumulate_node_stats(const long long[::1] row, const double[:, :, ::1] x,
                          const double[:, ::1] w_h, const double[:, ::1] w_p,
                          const double[::1] weights, double[:, ::1] h, double[:, ::1] P):
    """Add each rating's draws to its node's statistics.

    ``h[row[n]] += c_n sum_s w_h[n, s] x[n, s]`` and
    ``P[row[n]] += c_n sum_s w_p[n, s] x[n, s] x[n, s]^T`` (``P`` flattened
    to ``d * d`` columns; its upper triangle only, the lower one is left as
    it was), with ``c_n`` the rating's weight (1 when ``weights`` is empty).

    Parameters
    ----------
    row : ndarray of shape (n,), int64
        Each rating's node.
    x : ndarray of shape (n, s, d)
        The designs of the partner draws.
    w_h, w_p : ndarray of shape (n, s)
        The coefficients of each draw.
    weights : ndarray of shape (n,) or (0,)
        The ratings' weights; empty for ones.
    h, P : ndarray of shapes (m, d) and (m, d * d)
        Accumulated in place.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> h, P = np.zeros((1, 2)), np.zeros((1, 4))
    >>> _gaussian_fast.accumulate_node_stats(np.array([0]), np.array([[[2.0, 1.0]]]),
    ...     np.array([[3.0]]), np.array([[0.5]]), np.empty(0), h, P)
    >>> h.tolist(), P.tolist()
    ([[6.0, 3.0]], [[2.0, 1.0, 0.0, 0.5]])
    """
    cdef Py_ssize_t n = x.shape[0], ns = x.shape[1], d = x.shape[2]
    cdef Py_ssize_t i, s, a, b, p
    cdef bint weighted = weights.shape[0] > 0
    cdef double c, wh, wp, t
    with nogil:
        for i in range(n):
            p = row[i]
            c = weights[i] if weighted else 1.0
            for s in range(ns):
                wh = c * w_h[i, s]
                wp = c * w_p[i, s]
                for a in range(d):
                    h[p, a] += wh * x[i, s, a]
                    t = wp * x[i, s, a]
                    for b in range(a, d):
                        P[p, a * d + b] += t * x[i, s, b]


def ordinal_threshold_objective(const long long[::1] y, const double[:, ::1] f,
                                const double[::1] node_weights, const double[::1] weights,
                                const double[::1] edges, double slope, double[::1] grad):
    """``sum_n c_n sum_s w_s log p(y_n | f_ns)`` of the cumulative logit and its threshold gradient.

    ``p(y = k | f) = sigmoid(s (b_k - f)) - sigmoid(s (b_{k-1} - f))`` with
    ``edges = (-inf, b_0, ..., b_{K-2}, +inf)``; the numbers of
    :meth:`skvi.likelihoods.Ordinal.threshold_objective` (with rating
    weights ``c_n``; ones when ``weights`` is empty).

    Parameters
    ----------
    y : ndarray of shape (n,), int64
        Category indices.
    f : ndarray of shape (n, s)
        Points of each linear predictor.
    node_weights : ndarray of shape (s,)
        Weights of the points.
    weights : ndarray of shape (n,) or (0,)
        Weights of the ratings.
    edges : ndarray of shape (K + 1,)
        The thresholds between an infinite first and last edge.
    slope : float
    grad : ndarray of shape (K - 1,)
        Output: the gradient in the thresholds.

    Returns
    -------
    value : float

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Ordinal
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> lik = Ordinal(thresholds=[0.0, 1.0])
    >>> y, f, w = np.array([0, 1, 2]), np.array([[0.2], [0.4], [1.5]]), np.ones(1)
    >>> grad = np.empty(2)
    >>> edges = np.array([-np.inf, 0.0, 1.0, np.inf])
    >>> value = _gaussian_fast.ordinal_threshold_objective(y, f, w, np.empty(0), edges, 1.0, grad)
    >>> ref, ref_grad = lik.threshold_objective(y.astype(float), f, w)
    >>> bool(np.isclose(value, ref)) and bool(np.allclose(grad, ref_grad))
    True
    """
    cdef Py_ssize_t n = f.shape[0], ns = f.shape[1], kk = edges.shape[0] - 1
    cdef Py_ssize_t i, j, cat
    cdef bint weighted = weights.shape[0] > 0
    cdef double total = 0.0, row_value, row_up, row_lo, a, c, gap, lg, up, lo, wt
    cdef double ea, ec, sa, sna, sc, snc, lsa, lsnc
    cdef double *up_sum = <double *> malloc(kk * sizeof(double))
    cdef double *lo_sum = <double *> malloc(kk * sizeof(double))
    if up_sum == NULL or lo_sum == NULL:
        free(up_sum)
        free(lo_sum)
        raise MemoryError()
    with nogil:
        for j in range(kk):
            up_sum[j] = 0.0
            lo_sum[j] = 0.0
        for i in range(n):
            cat = y[i]
            row_value = 0.0
            row_up = 0.0
            row_lo = 0.0
            for j in range(ns):
                a = slope * (edges[cat + 1] - f[i, j])
                c = slope * (edges[cat] - f[i, j])
                gap = -expm1(c - a)
                lg = log(gap) if (isfinite(a) and isfinite(c)) else 0.0
                # One exponential per cut serves its sigmoids and log-sigmoid:
                # with e = exp(-|x|), sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e)
                # otherwise, and log sigmoid(x) = -(max(0, -x) + log1p(e)).
                ea = exp(-fabs(a))
                ec = exp(-fabs(c))
                if a >= 0.0:
                    sa, sna = 1.0 / (1.0 + ea), ea / (1.0 + ea)
                    lsa = -log1p(ea)
                else:
                    sa, sna = ea / (1.0 + ea), 1.0 / (1.0 + ea)
                    lsa = a - log1p(ea)
                if c >= 0.0:
                    sc, snc = 1.0 / (1.0 + ec), ec / (1.0 + ec)
                    lsnc = -c - log1p(ec)
                else:
                    sc, snc = ec / (1.0 + ec), 1.0 / (1.0 + ec)
                    lsnc = -log1p(ec)
                row_value += node_weights[j] * (lsa + lsnc + lg)
                up = slope * sna / (snc * gap)
                lo = -slope * sc / (sa * gap)
                if isfinite(up):
                    row_up += up * node_weights[j]
                if isfinite(lo):
                    row_lo += lo * node_weights[j]
            wt = weights[i] if weighted else 1.0
            total += wt * row_value
            up_sum[cat] += wt * row_up
            lo_sum[cat] += wt * row_lo
        for j in range(kk - 1):
            grad[j] = up_sum[j] + lo_sum[j + 1]
    free(up_sum)
    free(lo_sum)
    return total


def rating_moments(const long long[::1] users, const long long[::1] items,
                   const double[:, ::1] w_mean, const double[:, :, ::1] w_second,
                   const double[:, ::1] y_mean, const double[:, :, ::1] y_second,
                   double[::1] mean, double[::1] var):
    """Mean and variance of ``g = u . v + b + c`` for each (user, item) pair.

    A user node is ``w = (u, b)``, an item node ``y = (v, c)``, with
    independent posteriors; ``E[g^2]`` is the Frobenius product of the
    augmented second moments of ``(u, b, 1)`` and ``(v, 1, c)``, read in
    place (the numpy reference, ``SVIMatrixFactorization._f_moments``,
    gathers each pair's d x d moments first).

    Parameters
    ----------
    users, items : ndarray of shape (n,), int64
        The node of each pair.
    w_mean, w_second : ndarray of shape (m, d) and (m, d, d)
        Means and second moments of the user nodes (``d = K + 1``).
    y_mean, y_second : ndarray
        The same for the item nodes.
    mean, var : ndarray of shape (n,)
        Output: ``E[g]`` and ``Var[g]`` (clipped at 0).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization import _gaussian_fast
    >>> m = np.array([[1.0, 0.5]])              # u = 1, b = 0.5 (no variance)
    >>> s = m[:, :, None] * m[:, None, :]
    >>> mean, var = np.empty(1), np.empty(1)
    >>> _gaussian_fast.rating_moments(np.array([0]), np.array([0]), m, s, m, s, mean, var)
    >>> float(mean[0]), float(var[0])           # 1 * 1 + 0.5 + 0.5
    (2.0, 0.0)
    """
    cdef Py_ssize_t n = users.shape[0], d = w_mean.shape[1], k = d - 1
    cdef Py_ssize_t j, a, b, p, q
    cdef double e_g, e_uv2, e_uvb, e_uvc, e_g2
    with nogil:
        for j in range(n):
            p = users[j]
            q = items[j]
            e_g = w_mean[p, k] + y_mean[q, k]
            e_uv2 = 0.0
            e_uvb = 0.0
            e_uvc = 0.0
            for a in range(k):
                e_g = e_g + w_mean[p, a] * y_mean[q, a]
                e_uvb = e_uvb + w_second[p, a, k] * y_mean[q, a]
                e_uvc = e_uvc + w_mean[p, a] * y_second[q, a, k]
                for b in range(k):
                    e_uv2 = e_uv2 + w_second[p, a, b] * y_second[q, a, b]
            e_g2 = (e_uv2 + w_second[p, k, k] + y_second[q, k, k]
                    + 2.0 * (e_uvb + e_uvc + w_mean[p, k] * y_mean[q, k]))
            mean[j] = e_g
            var[j] = e_g2 - e_g * e_g
            if var[j] < 0.0:
                var[j] = 0.0
