"""Supervised data as the engine sees it: aligned rows of X, y and weights."""

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "check_row_weights", "column_squares", "design_of", "design_rows",
           "row_quadratic", "weighted_gram", "with_intercept"]


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
    ``design`` is the rows' design matrix when a linear model built it once
    (X with a column of ones, say): sliced with the rows, so that the
    minibatches, the probe and every pass over the data reuse it.
    """

    def __init__(self, X, y, weight=None, design=None):
        self._X = X
        self._X_rows = None  # (source, rows): X sliced when first asked for
        self.y = y
        self.weight = weight
        self.design = design

    @property
    def X(self):
        # _X_rows is never cleared, so that threads reading X at once each
        # find it (a minibatch lives no longer than its source).
        if self._X is None:
            source, rows = self._X_rows
            self._X = source.X[rows]
        return self._X

    @property
    def shape(self):
        return ((self.X if self.design is None else self.design).shape[0],)

    def __getitem__(self, rows):
        weight = None if self.weight is None else self.weight[rows]
        y = None if self.y is None else self.y[rows]
        if self.design is None:
            return Rows(self.X[rows], y, weight)
        # The model's steps read the design: X is sliced only if asked for.
        out = Rows(None, y, weight, self.design[rows])
        out._X_rows = (self, rows)
        return out

    def __getstate__(self):
        return dict(self.__dict__, _X=self.X, _X_rows=None)  # not the whole source

    @staticmethod
    def concatenate(parts):
        """The rows of several ``Rows`` stacked (all with or all without y and weights)."""

        def join(arrays):
            return None if arrays[0] is None else np.concatenate(arrays)

        def join_matrices(matrices):
            if matrices[0] is None:
                return None
            stack = sp.vstack if sp.issparse(matrices[0]) else np.concatenate
            out = stack(matrices)
            return out.asformat(matrices[0].format) if sp.issparse(out) else out

        return Rows(join_matrices([p.X for p in parts]), join([p.y for p in parts]),
                    join([p.weight for p in parts]), join_matrices([p.design for p in parts]))

    def weighted(self, values):
        """``values`` times the row weights (unchanged without weights)."""
        if self.weight is None:
            return values
        return values * self.weight.reshape((-1,) + (1,) * (np.ndim(values) - 1))

    def count(self):
        """The number of rows, or their total weight."""
        return float(np.sum(self.weight)) if self.weight is not None else self.shape[0]


def row_quadratic(X, V):
    """``x_i^T V x_i`` for every row of X (dense or sparse).

    For a sparse X, ``(X V)_ij`` is read at X's stored entries only and
    summed per row: 17 ms against 20 ms through ``X.multiply`` for a9a's
    32,561-row design, 0.85 against 1.13 ms for 2,000 of its rows.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> X = np.array([[1.0, 2.0], [0.0, 3.0]])
    >>> V = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> row_quadratic(sp.csr_matrix(X), V)          # 2 + 2 * 0.5 * 2 + 4, then 9
    array([8., 9.])
    """
    XV = X @ V
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", XV, X)
    X = X.tocsr()
    XV = np.ascontiguousarray(XV)
    starts = np.repeat(np.arange(X.shape[0]) * XV.shape[1], np.diff(X.indptr))
    values = XV.ravel()[starts + X.indices] * X.data
    return sp.csr_matrix((values, X.indices, X.indptr), shape=X.shape) @ np.ones(X.shape[1])


def weighted_gram(X, weights):
    """``X^T diag(weights) X`` as a dense array, for dense or sparse X.

    A sparse X is scaled row by row on its stored values and multiplied by
    its transpose in CSR, without the COO copy of ``X.multiply``: 18 ms
    against 28 ms for a9a's 32,561 x 124 design on one core.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> X = np.array([[1.0, 2.0], [0.0, 3.0]])
    >>> weighted_gram(sp.csr_matrix(X), np.array([2.0, 1.0]))
    array([[ 2.,  4.],
           [ 4., 17.]])
    """
    if not sp.issparse(X):
        return (X * weights[:, None]).T @ X
    X = X.tocsr()
    values = X.data * np.repeat(weights, np.diff(X.indptr))
    scaled = sp.csr_matrix((values, X.indices, X.indptr), shape=X.shape)
    return (X.T.tocsr() @ scaled).toarray()


def column_squares(X, weights):
    """``sum_i weights_i x_ij^2`` of each column of X (dense or sparse), in float64.

    The squares are taken in float64 whatever X's dtype: those of float32
    features beyond 1.8e19 overflow in float32.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> X = np.array([[1.0, 2.0], [0.0, 3.0]], dtype=np.float32) * np.float32(2.0**70)
    >>> column_squares(sp.csr_matrix(X), np.array([2.0, 1.0])) / 2.0**140  # 2**140 ~ 1.4e42
    array([ 2., 17.])
    """
    if not sp.issparse(X):
        return weights @ np.square(X, dtype=np.float64)
    X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    squares = sp.csr_matrix((np.square(X.data, dtype=np.float64), X.indices, X.indptr),
                            shape=X.shape)
    return np.asarray(squares.T @ weights).ravel()


def design_rows(X, y, weight, fit_intercept):
    """``Rows`` of a linear model, carrying their design when it differs from X.

    Examples
    --------
    >>> import numpy as np
    >>> design_rows(np.array([[2.0], [3.0]]), np.array([0.0, 1.0]), None, True)[1:].design
    array([[3., 1.]])
    """
    return Rows(X, y, weight, with_intercept(X) if fit_intercept else None)


def design_of(data, fit_intercept):
    """The design matrix of ``Rows``: theirs when they carry one, else built from X.

    Examples
    --------
    >>> import numpy as np
    >>> rows = Rows(np.array([[2.0], [3.0]]), None)
    >>> design_of(rows, fit_intercept=True)
    array([[2., 1.],
           [3., 1.]])
    """
    if data.design is not None:
        return data.design
    return with_intercept(data.X) if fit_intercept else data.X


def with_intercept(X):
    """X with a trailing column of ones (CSR or dense)."""
    ones = np.ones((X.shape[0], 1), dtype=X.dtype)
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(ones)], format="csr")
    return np.hstack([X, ones])
