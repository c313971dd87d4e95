# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The sums of products of picked factors (``skvi.networks._picked``), in C.

:func:`rowwise`: per row ``n``, ``sum_j A[ia[n], j] B[ib[n], j]``, the mean
and second moment of a matrix factorisation's product from its users' and
items' own moments.  numpy either gathers a copy of both operands per row
or multiplies every (user, item) pair, many more than the rows; this loop
reads the two rows in place.  :func:`summed`: the product's messages to
one side's factors, the rows' messages times the other side's moments
summed per element, without building a sparse matrix of them.  The numpy
and scipy references are :class:`skvi.networks._picked._Rows`' routes
without the kernel.
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


def summed(const Py_ssize_t[::1] indptr, const Py_ssize_t[::1] cols,
           const Py_ssize_t[::1] order, const double[::1] m, const double[:, ::1] table,
           double[:, ::1] out):
    """``out[l] = sum_t m[order[t]] table[cols[t]]`` over ``t`` in ``indptr[l]:indptr[l + 1]``.

    The product of the sparse matrix of the rows' messages ``m`` (one side's
    elements by the other's, as CSR: ``indptr``, ``cols`` and the rows'
    places ``order``) with the other side's ``table``, the messages read in
    place rather than gathered into a matrix first.

    Parameters
    ----------
    indptr : ndarray of shape (l + 1,), intp
        Element ``l``'s rows are ``t`` in ``indptr[l]:indptr[l + 1]``.
    cols, order : ndarray of shape (n,), intp
        Each such row's element of the other side and its place in ``m``.
    m : ndarray of shape (n,)
        The rows' messages.
    table : ndarray of shape (k, p), C-contiguous float64
        The other side's values.
    out : ndarray of shape (l, p)
        The sums (overwritten).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import _picked_fast
    >>> out = np.empty((2, 1))
    >>> _picked_fast.summed(np.array([0, 2, 2]), np.array([1, 0]), np.array([1, 0]),
    ...                     np.array([1.0, 10.0]), np.array([[1.0], [2.0]]), out)
    >>> out[:, 0]                # 10 * 2 + 1 * 1, and no rows
    array([21.,  0.])
    """
    cdef Py_ssize_t n_out = out.shape[0], p = out.shape[1]
    cdef Py_ssize_t l, t, j
    cdef double w
    cdef const double *row
    cdef double *acc
    if indptr.shape[0] != n_out + 1 or table.shape[1] != p:
        raise ValueError("summed: the structure, table and output do not agree")
    if cols.shape[0] != order.shape[0] or indptr[n_out] > cols.shape[0]:
        raise ValueError("summed: the structure, table and output do not agree")
    with nogil:
        for l in range(n_out):
            acc = &out[l, 0] if p else NULL
            for j in range(p):
                acc[j] = 0.0
            for t in range(indptr[l], indptr[l + 1]):
                w = m[order[t]]
                row = &table[cols[t], 0]
                for j in range(p):
                    acc[j] = acc[j] + w * row[j]
