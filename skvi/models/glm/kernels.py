"""Numerical kernels of the GLMs: the weights' Gaussian moments and the softmax's block products.

The moments come from the family layer's LAPACK route, with its memo of
factorisations kept during a fit (``_gaussian_moments``); the block
products are the per-row covariances and the Gram matrix of a softmax's
stacked weights, written as matrix products of the rows' pairwise column
products (``_block_moments``, ``_block_gram``).
"""

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ...expfam import gaussian_moments
from ...expfam.linalg import SMALL_INVERSE


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


#: Largest precision inverted by solves of the identity (the family layer's constant).
_SMALL_INVERSE = SMALL_INVERSE


def _gaussian_moments(factor, memo=None):
    """Mean, covariance and ``log |precision|`` of the weights' Gaussian factor, cached with it.

    The family layer's LAPACK route (:func:`skvi.expfam.gaussian_moments`
    with ``lapack=True``): one factorisation of the precision, the mean by
    two triangular solves, the covariance from the factor.  ``memo`` (a
    list, or None) keeps the last few factorisations: a factor with the
    same second natural parameter (a step that left the precision as it
    was, as every batch step under the softmax's bound does) reuses one
    and only solves for the mean.
    """

    def compute(f):
        return tuple(gaussian_moments(f[0], f[1], lapack=True, memo=memo)[:3])

    moments = factor.cached("moments", compute)
    # The factor's mean parameters from the same factorisation: the
    # family's own route (``Factor.mean_parameters``) inverts the precision
    # again, three times per extrapolated pass of a softmax fit, where the
    # steps under Böhning's bound need no factorisation at all.
    factor.cached("mean_parameters", lambda f: _MeanParameters(moments[0], moments[1]))
    return moments


class _MeanParameters(Sequence):
    """``(E[w], E[w w^T]) = (m, V + m m^T)`` of a Gaussian from its moments.

    ``E[w w^T]``, a ``D x D`` matrix, is made when first read: most
    factors of a fit are never asked for it.
    """

    def __init__(self, loc, cov):
        self._loc, self._cov, self._second = loc, cov, None

    def __len__(self):
        return 2

    def __getitem__(self, index):
        index = range(2)[int(index)]  # IndexError beyond the two
        if index == 0:
            return self._loc
        if self._second is None:
            self._second = self._cov + np.outer(self._loc, self._loc)
        return self._second


#: Entries (rows times pairs of columns) of one chunk of the pairwise products.
_PAIR_CHUNK = 1 << 20


def _upper_pairs(n):
    """Index arrays ``(i, j)`` of the pairs ``i <= j`` of ``0..n-1``, row-major."""
    return np.triu_indices(n)


def _row_chunks(n_rows, width):
    """Slices of at most ``_PAIR_CHUNK // width`` rows (at least one) covering ``n_rows``."""
    step = max(1, _PAIR_CHUNK // max(1, width))
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]


def _pair_products(X):
    """Every row's products of pairs of columns ``x_d x_e`` (``d <= e``), transposed.

    Shape (D (D + 1) / 2, n), in the order of ``_upper_pairs(D)``; one
    vectorised product per column ``d`` (with the columns ``e >= d``, over
    all rows), four times faster than gathering the pairs' columns.
    """
    Xt = np.ascontiguousarray(X.T)
    d = Xt.shape[0]
    out = np.empty((d * (d + 1) // 2, Xt.shape[1]))
    start = 0
    for col in range(d):
        stop = start + d - col
        np.multiply(Xt[col], Xt[col:], out=out[start:stop])
        start = stop
    return out


def _block_moments(Xd, loc, cov, k):
    """Means (n, k) and covariances (n, k, k) of ``f_ia = x_i . w_a`` under q.

    ``w`` stacks k blocks of ``D = Xd.shape[1]`` weights, so that
    ``Cov(f_ia, f_ib) = x_i^T V_ab x_i = sum_{d <= e} x_id x_ie c_de
    (V_ab[d, e] + V_ab[e, d])`` with ``c_de = 1/2`` on the diagonal: one
    matrix product of the rows' pairwise column products (n, D (D + 1) / 2)
    with the blocks' symmetrised entries (D (D + 1) / 2, k (k + 1) / 2), for
    the pairs of classes ``a <= b``.  No loop over classes or rows.
    """
    X = np.asarray(_dense(Xd), dtype=np.float64)
    n, d = X.shape
    mean = X @ loc.reshape(k, d).T
    col_d, col_e = _upper_pairs(d)
    cls_a, cls_b = _upper_pairs(k)
    blocks = cov.reshape(k, d, k, d)
    pairs = (
        blocks[cls_a[None, :], col_d[:, None], cls_b[None, :], col_e[:, None]]
        + blocks[cls_a[None, :], col_e[:, None], cls_b[None, :], col_d[:, None]]
    )
    pairs[col_d == col_e] *= 0.5
    upper = np.empty((n, cls_a.size))
    for rows in _row_chunks(n, col_d.size):
        upper[rows] = (pairs.T @ _pair_products(X[rows])).T
    cov_f = np.empty((n, k, k))
    cov_f[:, cls_a, cls_b] = upper
    cov_f[:, cls_b, cls_a] = upper
    return mean, cov_f


def _block_gram(Xd, weights):
    """``sum_i weights_i (kron) x_i x_i^T`` for (n, k, k) weights: shape (k D, k D).

    The weights must be symmetric in their last two axes (only ``a <= b`` is
    read).  Entry ``((a, d), (b, e))`` is ``sum_i weights_iab x_id x_ie``:
    one matrix product of the rows' pairwise column products
    (``d <= e``) with the weights of the pairs of classes (``a <= b``),
    spread over the four symmetric places.  No loop over classes or rows.
    """
    X = np.asarray(_dense(Xd), dtype=np.float64)
    n, d = X.shape
    k = weights.shape[1]
    col_d, col_e = _upper_pairs(d)
    cls_a, cls_b = _upper_pairs(k)
    w = weights[:, cls_a, cls_b]
    sums = np.zeros((col_d.size, cls_a.size))
    for rows in _row_chunks(n, col_d.size):
        sums += _pair_products(X[rows]) @ w[rows]
    # Every (d, e) and (e, d), every (a, b) and (b, a), from the upper pairs.
    col_index = np.empty((d, d), dtype=np.intp)
    col_index[col_d, col_e] = col_index[col_e, col_d] = np.arange(col_d.size)
    cls_index = np.empty((k, k), dtype=np.intp)
    cls_index[cls_a, cls_b] = cls_index[cls_b, cls_a] = np.arange(cls_a.size)
    full = sums[col_index[None, :, None, :], cls_index[:, None, :, None]]  # (a, d, b, e)
    return full.reshape(k * d, k * d)
