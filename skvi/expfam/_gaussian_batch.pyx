# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The family layer's Gaussian map over many small Gaussians at once, in C.

numpy's batched ``linalg`` routines cost microseconds of overhead per call
and per small matrix, more than the arithmetic of a 10 x 10 precision;
a loop in C over the batch, without the GIL, does each matrix with the
family's compiled map (``_gaussian_small.pxd``).  The same loop tests
each Gaussian's natural parameters (finite, symmetric, a positive definite
precision), so that a caller that must know whether they are valid gets
the moments with the answer.  The numpy reference is
:func:`skvi.expfam.linalg._small_moments_numpy`.
"""

from libc.math cimport NAN, fabs, isfinite, sqrt
from libc.stdlib cimport free, malloc

from skvi.expfam._gaussian_small cimport gaussian_moments_one

#: The relative asymmetry a precision may have: the family's test of symmetry.
cdef double _SQRT_EPS = sqrt(2.220446049250313e-16)


cdef inline void _fill_nan(Py_ssize_t d, double *mean, double *second,
                           double *logdet) noexcept nogil:
    cdef Py_ssize_t r
    logdet[0] = NAN
    for r in range(d):
        mean[r] = NAN
    for r in range(d * d):
        second[r] = NAN


def moments_batch(const double[:, ::1] eta1, const double[:, :, ::1] eta2,
                  double[:, ::1] mean, double[:, :, ::1] second, double[::1] logdet,
                  unsigned char[::1] valid):
    """Means, second moments and ``log|P|`` of Gaussians with natural parameters ``(P m, -P / 2)``.

    Parameters
    ----------
    eta1 : ndarray of shape (n, d), C-contiguous float64
        Precision times mean.
    eta2 : ndarray of shape (n, d, d), C-contiguous float64
        Minus half the precision; it is symmetrised, ``(eta2 + eta2^T) / 2``,
        as the family's numpy map does.
    mean, second, logdet, valid : ndarray
        Outputs of shapes (n, d), (n, d, d), (n,) and (n,) (uint8): the
        means, the second moments ``Sigma + m m^T``, the log-determinants
        of the precisions and whether each Gaussian is valid: finite, its
        ``eta2`` symmetric (``max|eta2 - eta2^T| <= sqrt(eps) max|eta2|``)
        and its precision positive definite.  The outputs of an invalid
        one are NaN.

    Returns
    -------
    n_invalid : int
        The number of invalid Gaussians.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import _gaussian_batch
    >>> mean, second = np.empty((2, 1)), np.empty((2, 1, 1))
    >>> logdet, valid = np.empty(2), np.empty(2, dtype=np.uint8)
    >>> _gaussian_batch.moments_batch(np.array([[2.0], [1.0]]), np.array([[[-0.5]], [[1.0]]]),
    ...                               mean, second, logdet, valid)
    1
    >>> float(mean[0, 0]), float(second[0, 0, 0]), valid.tolist()   # N(2, 1), then invalid
    (2.0, 5.0, [1, 0])
    """
    cdef Py_ssize_t n = eta1.shape[0], d = eta1.shape[1]
    cdef Py_ssize_t i, j, k
    cdef int bad = 0
    cdef double a, b, asym, scale
    cdef bint ok
    if eta2.shape[0] != n or eta2.shape[1] != d or eta2.shape[2] != d:
        raise ValueError("moments_batch: eta2 must have shape (n, d, d) with eta1's n and d")
    if mean.shape[0] != n or second.shape[0] != n or logdet.shape[0] != n or valid.shape[0] != n:
        raise ValueError("moments_batch: the outputs must have eta1's n rows")
    cdef double *L = <double *> malloc((d * d + 1) * sizeof(double))
    cdef double *Li = <double *> malloc((d * d + d + 1) * sizeof(double))
    cdef double *sym = <double *> malloc((d * d + 1) * sizeof(double))
    cdef double *var = <double *> malloc((d + 1) * sizeof(double))
    if L == NULL or Li == NULL or sym == NULL or var == NULL:
        free(L)
        free(Li)
        free(sym)
        free(var)
        raise MemoryError()
    with nogil:
        for i in range(n):
            ok = True
            asym = 0.0
            scale = 0.0
            for j in range(d):
                if not isfinite(eta1[i, j]):
                    ok = False
                for k in range(j + 1):
                    a = eta2[i, j, k]
                    b = eta2[i, k, j]
                    if not (isfinite(a) and isfinite(b)):
                        ok = False
                    if fabs(a - b) > asym:
                        asym = fabs(a - b)
                    if fabs(a) > scale:
                        scale = fabs(a)
                    if fabs(b) > scale:
                        scale = fabs(b)
                    sym[j * d + k] = 0.5 * (a + b)
            if ok and not (asym <= _SQRT_EPS * scale):
                ok = False
            if ok and gaussian_moments_one(&eta1[i, 0], sym, d, L, Li, &mean[i, 0],
                                           &second[i, 0, 0], var, &logdet[i]) != 0:
                ok = False
            if not ok:
                _fill_nan(d, &mean[i, 0], &second[i, 0, 0], &logdet[i])
                bad += 1
            valid[i] = ok
    free(L)
    free(Li)
    free(sym)
    free(var)
    return bad
