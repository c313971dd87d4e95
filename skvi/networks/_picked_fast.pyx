# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The row-wise sums of products of picked factors (``skvi.networks._picked``), in C.

Per row ``n``, ``sum_j A[ia[n], j] B[ib[n], j]``: the mean and second
moment of a matrix factorisation's product from its users' and items'
own moments.  numpy either gathers a copy of both operands per row or
multiplies every (user, item) pair, many more than the rows; this loop
reads the two rows in place.  The numpy reference is
:meth:`skvi.networks._picked._Rows.rowwise` without the kernel.
"""


def rowwise(const double[:, ::1] A, const double[:, ::1] B, const Py_ssize_t[::1] ia,
            const Py_ssize_t[::1] ib, const Py_ssize_t[::1] rows, double[::1] out):
    """``out[rows[t]] = sum_j A[ia[t], j] B[ib[t], j]`` for every ``t``.

    Rows given in the order of their elements of ``A`` read each of its
    rows once.

    Parameters
    ----------
    A, B : ndarray of shapes (la, p) and (lb, p), C-contiguous float64
        The two operands' tables, one row per element.
    ia, ib : ndarray of shape (n,), intp
        Each row's element of ``A`` and of ``B`` (in range: not checked).
    rows : ndarray of shape (n,), intp
        Each row's place in ``out`` (in range: not checked).
    out : ndarray of shape (n,)
        The sums.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import _picked_fast
    >>> out = np.empty(2)
    >>> _picked_fast.rowwise(np.eye(2), np.array([[1.0, 2.0]]), np.array([1, 0]),
    ...                      np.array([0, 0]), np.array([0, 1]), out)
    >>> out
    array([2., 1.])
    """
    cdef Py_ssize_t n = ia.shape[0], p = A.shape[1]
    cdef Py_ssize_t i, j
    cdef const double *a
    cdef const double *b
    cdef double s0, s1, s2, s3
    cdef Py_ssize_t p4 = p - p % 4
    if B.shape[1] != p or ib.shape[0] != n or rows.shape[0] != n or out.shape[0] != n:
        raise ValueError("rowwise: the tables' widths and the rows' lengths must agree")
    if p == 0:
        out[:] = 0.0
        return
    with nogil:
        for i in range(n):
            a = &A[ia[i], 0]
            b = &B[ib[i], 0]
            # Four running sums: one sum's chain of additions would wait on
            # each product in turn.
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for j in range(0, p4, 4):
                s0 = s0 + a[j] * b[j]
                s1 = s1 + a[j + 1] * b[j + 1]
                s2 = s2 + a[j + 2] * b[j + 2]
                s3 = s3 + a[j + 3] * b[j + 3]
            for j in range(p4, p):
                s0 = s0 + a[j] * b[j]
            out[rows[i]] = (s0 + s1) + (s2 + s3)
