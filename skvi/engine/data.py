"""The data as the engine sees it: aligned rows of X, y and weights.

Every model's ``_prepare_data`` returns its rows as :class:`Rows` (or an
object with the same interface: ``shape``, row indexing, ``count``): the
executor cuts minibatches and blocks from them, the probe and the
convergence sample are rows of them, and a model's hooks read ``X``, ``y``
and ``weight`` of the rows they are given.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "check_row_weights"]


def check_row_weights(sample_weight, X):
    """Validated non-negative row weights of X as float64, or None.

    A row of weight 2 is the row twice: models scale its statistics and
    ELBO term by its weight and count it twice in ``N / |S|``.

    Parameters
    ----------
    sample_weight : array-like of shape (n_rows,) or None
        The weights as the user gave them.
    X : array-like or sparse matrix of shape (n_rows, n_features)
        The rows they weigh.

    Returns
    -------
    ndarray of shape (n_rows,) or None
        The weights as float64, or None for unit weights.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.data import check_row_weights
    >>> check_row_weights([1, 2], np.zeros((2, 3)))
    array([1., 2.])
    >>> check_row_weights(None, np.zeros((2, 3))) is None
    True
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

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_rows, n_features) or None
        The rows' features; None when ``design`` stands for them (X is
        then sliced from the source rows when first read).
    y : ndarray of shape (n_rows,) or None
        The targets; None for unsupervised models.
    weight : ndarray of shape (n_rows,) or None, default=None
        Row weights; None for unit weights.
    design : ndarray or sparse matrix of shape (n_rows, n_columns) or None, default=None
        The rows' design matrix when a linear model built it once (X with a
        column of ones, say): sliced with the rows, so that the minibatches,
        the probe and every pass over the data reuse it.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.data import Rows
    >>> rows = Rows(np.arange(6.0).reshape(3, 2), np.array([0.0, 1.0, 1.0]),
    ...             weight=np.array([1.0, 2.0, 0.5]))
    >>> part = rows[1:]
    >>> part.X, part.count()
    (array([[2., 3.],
           [4., 5.]]), 2.5)
    >>> part.weighted(np.array([1.0, 1.0]))
    array([2. , 0.5])
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
        """The rows of several ``Rows`` stacked (all with or all without y and weights).

        Parameters
        ----------
        parts : list of Rows
            The rows to stack, in order.

        Returns
        -------
        Rows
            Their rows, one after the other.
        """

        def join(arrays):
            return None if arrays[0] is None else np.concatenate(arrays)

        def join_matrices(matrices):
            if matrices[0] is None:
                return None
            stack = sp.vstack if sp.issparse(matrices[0]) else np.concatenate
            out = stack(matrices)
            return out.asformat(matrices[0].format) if sp.issparse(out) else out

        return Rows(
            join_matrices([p.X for p in parts]),
            join([p.y for p in parts]),
            join([p.weight for p in parts]),
            join_matrices([p.design for p in parts]),
        )

    def weighted(self, values):
        """``values`` times the row weights (unchanged without weights).

        Parameters
        ----------
        values : ndarray of shape (n_rows, ...)
            One value (or array) per row.

        Returns
        -------
        ndarray
            Each row's values times its weight.
        """
        if self.weight is None:
            return values
        return values * self.weight.reshape((-1,) + (1,) * (np.ndim(values) - 1))

    def count(self):
        """The number of rows, or their total weight.

        Returns
        -------
        float
            The samples the rows count for.
        """
        return float(np.sum(self.weight)) if self.weight is not None else self.shape[0]
