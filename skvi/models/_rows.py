"""Supervised data as the engine sees it: aligned rows of X, y and weights."""

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "row_quadratic", "with_intercept"]


class Rows:
    """Aligned design matrix, targets and row weights, indexable by rows for the engine."""

    def __init__(self, X, y, weight=None):
        self.X = X
        self.y = y
        self.weight = weight

    @property
    def shape(self):
        return (self.X.shape[0],)

    def __getitem__(self, rows):
        weight = None if self.weight is None else self.weight[rows]
        return Rows(self.X[rows], self.y[rows], weight)

    def weighted(self, values):
        """``values`` times the row weights (unchanged without weights)."""
        return values if self.weight is None else values * self.weight


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
