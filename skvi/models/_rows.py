"""Supervised data as the engine sees it: aligned rows of X, y and weights."""

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "check_row_weights", "row_quadratic", "with_intercept"]


def check_row_weights(sample_weight, X):
    """Validated non-negative row weights of X as float64, or None.

    A row of weight 2 is the row twice: models scale its statistics and
    ELBO term by its weight and count it twice in ``N / |S|``.
    """
    from sklearn.utils.validation import _check_sample_weight

    if sample_weight is None:
        return None
    weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.sum(weight) > 0:
        raise ValueError("sample_weight sums to zero: there are no rows to fit.")
    return weight


class Rows:
    """Aligned design matrix, targets and row weights, indexable by rows for the engine.

    ``y`` is None for unsupervised models, ``weight`` None for unit weights.
    """

    def __init__(self, X, y, weight=None):
        self.X = X
        self.y = y
        self.weight = weight

    @property
    def shape(self):
        return (self.X.shape[0],)

    def __getitem__(self, rows):
        weight = None if self.weight is None else self.weight[rows]
        y = None if self.y is None else self.y[rows]
        return Rows(self.X[rows], y, weight)

    @staticmethod
    def concatenate(parts):
        """The rows of several ``Rows`` stacked (all with or all without y and weights)."""
        first = parts[0]
        stack = sp.vstack if sp.issparse(first.X) else np.concatenate

        def join(arrays):
            return None if arrays[0] is None else np.concatenate(arrays)

        X = stack([p.X for p in parts])
        if sp.issparse(first.X):
            X = X.asformat(first.X.format)
        return Rows(X, join([p.y for p in parts]), join([p.weight for p in parts]))

    def weighted(self, values):
        """``values`` times the row weights (unchanged without weights)."""
        if self.weight is None:
            return values
        return values * self.weight.reshape((-1,) + (1,) * (np.ndim(values) - 1))

    def count(self):
        """The number of rows, or their total weight."""
        return float(np.sum(self.weight)) if self.weight is not None else self.shape[0]


def row_quadratic(X, V):
    """``x_i^T V x_i`` for every row of X (dense or CSR)."""
    XV = X @ V
    if sp.issparse(X):
        return np.asarray(X.multiply(XV).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", XV, X)


def with_intercept(X):
    """X with a trailing column of ones (CSR or dense)."""
    ones = np.ones((X.shape[0], 1), dtype=X.dtype)
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(ones)], format="csr")
    return np.hstack([X, ones])
