# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# The Gaussian natural-to-moments map of one small matrix, in C, for compiled kernels.
#
# The family layer's map (skvi.expfam.gaussian_moments) for kernels that loop
# over many small Gaussians without the GIL, where numpy's batched linalg
# costs microseconds of overhead per matrix (matrix factorization's user and
# item nodes, (K + 1) x (K + 1) each): a kernel cimports gaussian_moments_one
# from here, so that the map is written once.

cimport cython
from libc.math cimport NAN, log, sqrt


@cython.cdivision(True)
cdef inline int gaussian_moments_one(const double *eta1, const double *eta2, Py_ssize_t d,
                                     double *L, double *Li, double *mean, double *second,
                                     double *var, double *logdet) noexcept nogil:
    """Moments of one Gaussian from ``(P m, -P / 2)``; returns 1 if P is not PD (NaN out).

    ``L`` holds the Cholesky factor, ``Li`` its inverse (lower, row-major)
    and the reciprocals of the diagonal of ``L`` in its upper triangle's
    first row, so that the loops multiply instead of dividing.
    """
    cdef Py_ssize_t j, k, r
    cdef double s, acc
    cdef double *inv = Li + d * d  # d reciprocals, after the d x d inverse
    for j in range(d):
        for k in range(j + 1):
            s = -2.0 * eta2[j * d + k]
            for r in range(k):
                s = s - L[j * d + r] * L[k * d + r]
            if j == k:
                if not (s > 0.0):
                    logdet[0] = NAN
                    for r in range(d):
                        mean[r] = NAN
                        var[r] = NAN
                    for r in range(d * d):
                        second[r] = NAN
                    return 1
                L[j * d + j] = sqrt(s)
                inv[j] = 1.0 / L[j * d + j]
            else:
                L[j * d + k] = s * inv[k]
    acc = 0.0
    for j in range(d):
        acc = acc + log(L[j * d + j])
    logdet[0] = 2.0 * acc
    # Li = L^{-1} (lower triangular), row by row: Li[j, k] for k <= j.
    for j in range(d):
        for k in range(j):
            s = 0.0
            for r in range(k, j):
                s = s + L[j * d + r] * Li[r * d + k]
            Li[j * d + k] = -s * inv[j]
        Li[j * d + j] = inv[j]
    # Sigma = Li^T Li: Sigma[j, k] = sum_{r >= max(j, k)} Li[r, j] Li[r, k].
    for j in range(d):
        for k in range(j + 1):
            s = 0.0
            for r in range(j, d):
                s = s + Li[r * d + j] * Li[r * d + k]
            second[j * d + k] = s
            second[k * d + j] = s
    for j in range(d):
        s = 0.0
        for k in range(d):
            s = s + second[j * d + k] * eta1[k]
        mean[j] = s
    for j in range(d):
        var[j] = second[j * d + j]
        for k in range(d):
            second[j * d + k] = second[j * d + k] + mean[j] * mean[k]
    return 0
