# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""Compiled moments of many small full-covariance Gaussians.

numpy's batched ``linalg`` routines cost several microseconds of overhead
per matrix, which dominates for the ``(K + 1) x (K + 1)`` posteriors of
matrix factorization (one per user and item).  :func:`moments_from_natural`
does the Cholesky factorisation, the triangular inverse and the products
for every node in one C loop without the GIL.  The numpy reference is
:func:`skvi.models.matrix_factorization._moments_full_numpy`.
"""

import numpy as np

from libc.math cimport NAN, log, sqrt
from libc.stdlib cimport free, malloc


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
    """
    cdef Py_ssize_t n = eta1.shape[0], d = eta1.shape[1]
    cdef Py_ssize_t i, j, k, r
    cdef double s, acc
    cdef int failed = 0, bad
    cdef double *L = <double *> malloc(d * d * sizeof(double))
    cdef double *Li = <double *> malloc(d * d * sizeof(double))
    if L == NULL or Li == NULL:
        free(L)
        free(Li)
        raise MemoryError()
    with nogil:
        for i in range(n):
            bad = 0
            # Cholesky of P = -2 eta2 (lower triangle), row by row.
            for j in range(d):
                for k in range(j + 1):
                    s = -2.0 * eta2[i, j, k]
                    for r in range(k):
                        s = s - L[j * d + r] * L[k * d + r]
                    if j == k:
                        if not (s > 0.0):
                            bad = 1
                            break
                        L[j * d + j] = sqrt(s)
                    else:
                        L[j * d + k] = s / L[k * d + k]
                if bad:
                    break
            if bad:
                failed += 1
                logdet[i] = NAN
                for j in range(d):
                    mean[i, j] = NAN
                    var[i, j] = NAN
                    for k in range(d):
                        second[i, j, k] = NAN
                continue
            acc = 0.0
            for j in range(d):
                acc = acc + log(L[j * d + j])
            logdet[i] = 2.0 * acc
            # Li = L^{-1} (lower triangular), column by column.
            for k in range(d):
                for j in range(d):
                    Li[j * d + k] = 0.0
                Li[k * d + k] = 1.0 / L[k * d + k]
                for j in range(k + 1, d):
                    s = 0.0
                    for r in range(k, j):
                        s = s + L[j * d + r] * Li[r * d + k]
                    Li[j * d + k] = -s / L[j * d + j]
            # Sigma = Li^T Li: Sigma[j, k] = sum_{r >= max(j, k)} Li[r, j] Li[r, k].
            for j in range(d):
                for k in range(j + 1):
                    s = 0.0
                    for r in range(j, d):
                        s = s + Li[r * d + j] * Li[r * d + k]
                    second[i, j, k] = s
                    second[i, k, j] = s
            for j in range(d):
                s = 0.0
                for k in range(d):
                    s = s + second[i, j, k] * eta1[i, k]
                mean[i, j] = s
            for j in range(d):
                var[i, j] = second[i, j, j]
                for k in range(d):
                    second[i, j, k] = second[i, j, k] + mean[i, j] * mean[i, k]
    free(L)
    free(Li)
    return failed
