"""Summed sufficient statistics: what one block of data tells the globals.

The map-reduce split of the engine (Hoffman et al., "Stochastic variational
inference", section on parallelisation) rests on one fact: with the global
factors held fixed, the expected sufficient statistics of two blocks of data
add.  :meth:`~skvi.engine.SVIEstimator.compute_statistics` returns them as
a :class:`Statistics`; ``a + b`` is the statistics of the two blocks
stacked, and :meth:`~skvi.engine.SVIEstimator.apply_statistics` takes one
natural-gradient step from any such sum.

A factor's statistics take one of three forms, each of which knows how to
add itself:

* a tuple of arrays, dense like the factor's natural parameters (added
  elementwise);
* :class:`RowStatistics`, non-zero only at some rows of a factor (the words
  of a minibatch for LDA's topics, the users and items it rates for matrix
  factorization), added by the union of the rows;
* :class:`Samples`, aligned arrays that are concatenated (for the rare
  hyperparameter step that needs the data points themselves).

:class:`DataMoments` is the same idea for the data themselves: the weighted
count, mean and centred scatter of a block, merged exactly, so that the
defaults a model takes from its data (a mixture's prior mean and
covariance) are those of all the rows however they are split, and
:class:`Distinct` the distinct values a fit must agree on before it
validates any block (a classifier's labels, the user and item ids of
matrix factorization), merged by their union.
"""

import numpy as np

from ..expfam.base import _renamed

__all__ = [
    "Distinct",
    "DataMoments",
    "RowStatistics",
    "Samples",
    "Statistics",
    "add_statistics",
    "sum_statistics",
]


class RowStatistics:
    """Statistics that are non-zero only at some rows of a factor.

    Parameters
    ----------
    rows : ndarray of int, shape (n_rows,)
        Distinct row indices (along the factor's row axis), increasing.
    values : tuple of ndarray
        One array per natural parameter, each with leading axis ``n_rows``.
    counts : ndarray of shape (n_rows,) or None, default=None
        Data points behind each row's statistics (Paquet's ``C_i``): the
        engine scales row ``i``'s statistics by ``N_i / C_i``.  None for a
        factor whose rows share the minibatch's ``N / |S|``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import RowStatistics
    >>> a = RowStatistics(np.array([0, 2]), (np.array([1.0, 2.0]),), np.array([1.0, 1.0]))
    >>> b = RowStatistics(np.array([2, 5]), (np.array([10.0, 20.0]),), np.array([3.0, 1.0]))
    >>> s = a + b
    >>> s.rows, s.values[0], s.counts
    (array([0, 2, 5]), array([ 1., 12., 20.]), array([1., 4., 1.]))
    """

    __slots__ = ("rows", "values", "counts")

    def __init__(self, rows, values, counts=None):
        self.rows = np.asarray(rows)
        self.values = tuple(values)
        self.counts = counts

    def __add__(self, other):
        if not isinstance(other, RowStatistics):
            return NotImplemented
        # Each operand's rows are distinct and increasing: a merge places
        # them (no unbuffered np.add.at, twice as slow on LDA's topics).
        if self.rows.shape == other.rows.shape and np.array_equal(self.rows, other.rows):
            rows = self.rows
            at_a = at_b = slice(None)
        else:
            # Both operands' rows are increasing: a stable sort of the two
            # runs is a linear merge (np.union1d would hash them), then the
            # repeats go.
            rows = np.concatenate([self.rows, other.rows])
            rows.sort(kind="stable")
            if rows.size:
                rows = rows[np.concatenate([[True], rows[1:] != rows[:-1]])]
            at_a = np.searchsorted(rows, self.rows)
            at_b = np.searchsorted(rows, other.rows)

        def merge(a, b, dtype):
            out = np.zeros((rows.shape[0],) + np.shape(a)[1:], dtype=dtype)
            out[at_a] = a
            out[at_b] += b
            return out

        values = tuple(merge(a, b, np.result_type(a, b)) for a, b in zip(self.values, other.values))
        counts = None
        if self.counts is not None and other.counts is not None:
            counts = merge(self.counts, other.counts, np.float64)
        return RowStatistics(rows, values, counts)

    @classmethod
    def sum(cls, parts):
        """The sum of several blocks' statistics in one merge (equal to adding them in turn).

        One union of the rows and one scatter-add per block, instead of a
        chain of pairwise merges that re-copies the growing union each time
        (16 blocks of LDA's words: a merge per block per step).

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.engine import RowStatistics
        >>> parts = [RowStatistics(np.array([0, 2]), (np.array([1.0, 2.0]),)),
        ...          RowStatistics(np.array([2, 5]), (np.array([10.0, 20.0]),)),
        ...          RowStatistics(np.array([5]), (np.array([100.0]),))]
        >>> s = RowStatistics.sum(parts)
        >>> s.rows, s.values[0]
        (array([0, 2, 5]), array([  1.,  12., 120.]))
        """
        parts = list(parts)
        if len(parts) == 1:
            return parts[0]
        rows = np.concatenate([p.rows for p in parts])
        rows.sort(kind="stable")
        if rows.size:
            rows = rows[np.concatenate([[True], rows[1:] != rows[:-1]])]
        at = [np.searchsorted(rows, p.rows) for p in parts]

        def merge(arrays, dtype):
            out = np.zeros((rows.shape[0],) + np.shape(arrays[0])[1:], dtype=dtype)
            for index, a in zip(at, arrays):
                out[index] += a  # a block's rows are distinct
            return out

        values = tuple(
            merge(arrays, np.result_type(*arrays)) for arrays in zip(*(p.values for p in parts))
        )
        counts = None
        if all(p.counts is not None for p in parts):
            counts = merge([p.counts for p in parts], np.float64)
        return cls(rows, values, counts)


class Samples:
    """Aligned arrays whose "sum" over blocks is their concatenation.

    Parameters
    ----------
    *arrays : ndarray
        Arrays with a common leading axis (one entry per data point).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import Samples
    >>> s = Samples(np.array([1, 2])) + Samples(np.array([3]))
    >>> s.arrays[0]
    array([1, 2, 3])
    """

    __slots__ = ("arrays",)

    def __init__(self, *arrays):
        self.arrays = arrays

    def __add__(self, other):
        if not isinstance(other, Samples):
            return NotImplemented
        return Samples(*(np.concatenate([a, b]) for a, b in zip(self.arrays, other.arrays)))


class DataMoments:
    """Weighted count, mean and centred scatter of rows, merged exactly across blocks.

    ``a + b`` is the moments of the two blocks' rows together, by the
    pairwise update of Chan, Golub and LeVeque ("Algorithms for computing
    the sample variance"): the means are never subtracted from raw sums, so
    the merge is as accurate as a two-pass computation on all the rows.

    Parameters
    ----------
    n_rows : int
        Rows behind the moments.
    total : float
        Their weight sum (``n_rows`` without weights).
    mean : ndarray of shape (n_features,)
        The weighted mean.
    scatter : ndarray of shape (n_features, n_features) or (n_features,)
        ``sum_i w_i (x_i - mean)(x_i - mean)^T``, or only its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import DataMoments
    >>> X = np.random.RandomState(0).normal(5.0, 2.0, size=(100, 3))
    >>> m = DataMoments.of(X[:30]) + DataMoments.of(X[30:])
    >>> bool(np.allclose(m.covariance(ddof=1), np.cov(X.T)))
    True
    """

    __slots__ = ("n_rows", "total", "mean", "scatter")

    def __init__(self, n_rows, total, mean, scatter):
        self.n_rows = int(n_rows)
        self.total = float(total)
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scatter = np.asarray(scatter, dtype=np.float64)

    @classmethod
    def of(cls, X, weight=None, full=True):
        """The moments of the rows of a dense X (with row weights, if given).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The rows.
        weight : ndarray of shape (n_samples,) or None, default=None
            Non-negative row weights (a row of weight 2 counts twice).
        full : bool, default=True
            Keep the whole scatter matrix, else only its diagonal.

        Returns
        -------
        DataMoments
        """
        X = np.asarray(X, dtype=np.float64)
        n, d = X.shape
        total = float(n) if weight is None else float(np.sum(weight))
        if n == 0 or not total > 0:
            return cls(n, total, np.zeros(d), np.zeros((d, d) if full else d))
        mean = X.mean(axis=0) if weight is None else np.average(X, axis=0, weights=weight)
        diff = X - mean
        wdiff = diff if weight is None else diff * weight[:, None]
        scatter = wdiff.T @ diff if full else np.einsum("ij,ij->j", wdiff, diff)
        return cls(n, total, mean, scatter)

    def __add__(self, other):
        if not isinstance(other, DataMoments):
            return NotImplemented
        if not other.total > 0:
            return DataMoments(self.n_rows + other.n_rows, self.total, self.mean, self.scatter)
        if not self.total > 0:
            return DataMoments(self.n_rows + other.n_rows, other.total, other.mean, other.scatter)
        total = self.total + other.total
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.total / total)
        weight = self.total * other.total / total
        cross = np.outer(delta, delta) if self.scatter.ndim == 2 else delta * delta
        return DataMoments(
            self.n_rows + other.n_rows, total, mean, self.scatter + other.scatter + weight * cross
        )

    def covariance(self, ddof=0, diagonal=False):
        """The scatter over ``total - ddof``, or only its diagonal (the variances).

        Parameters
        ----------
        ddof : float, default=0
            Subtracted from the weight sum (1: the unbiased covariance).
        diagonal : bool, default=False
            Return the variances of the columns only (always so when only
            the diagonal was kept).

        Returns
        -------
        ndarray of shape (n_features, n_features) or (n_features,)
            The covariance, or the variances.
        """
        scatter = self.scatter
        if diagonal and scatter.ndim == 2:
            scatter = np.diag(scatter)
        return scatter / (self.total - ddof)


class Distinct:
    """The distinct values of a column, sorted; ``a + b`` is their union.

    What the blocks of a fit on a cluster must agree on before any of them
    is validated: a classifier's labels, the user and item ids of matrix
    factorization (each block then encodes its ids with the union, as an
    in-memory fit encodes all of them).  Numbers and text do not mix.

    Parameters
    ----------
    values : array-like of shape (n,)
        Values, repeated or not (numbers, strings or bytes).

    Attributes
    ----------
    values : ndarray
        The distinct values, sorted (``np.unique``).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import Distinct
    >>> (Distinct(np.array([3, 1, 3])) + Distinct(np.array([2, 1]))).values
    array([1, 2, 3])
    """

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = np.unique(np.asarray(values))

    def __add__(self, other):
        if not isinstance(other, Distinct):
            return NotImplemented
        a, b = self.values, other.values
        numeric = "biuf"
        if a.size and b.size and (a.dtype.kind in numeric) != (b.dtype.kind in numeric):
            raise ValueError(
                f"Blocks hold values of different kinds ({a.dtype} and {b.dtype}): "
                "use one kind (numbers or strings) in every block."
            )
        union = Distinct.__new__(Distinct)
        union.values = np.union1d(a, b)
        return union


def add_statistics(a, b):
    """Sum of two blocks' statistics of one factor, in any of the three forms.

    Parameters
    ----------
    a, b : tuple, dict, RowStatistics, Samples, DataMoments, Distinct or None
        The statistics of the same factor from two blocks; None stands for
        "no statistics" (the other operand is returned).  Tuples add
        elementwise (arrays, :class:`DataMoments`, :class:`Distinct`), dicts
        key by key.

    Returns
    -------
    tuple, dict, RowStatistics, Samples, DataMoments, Distinct or None
        The statistics of the two blocks together.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import add_statistics
    >>> add_statistics((np.array([1.0]), np.array(2.0)), (np.array([3.0]), np.array(4.0)))
    (array([4.]), array(6.))
    """
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        return {k: add_statistics(v, b[k]) for k, v in a.items()}
    if isinstance(a, tuple):
        return tuple(
            x + y if isinstance(x, (DataMoments, Distinct)) else np.asarray(np.add(x, y))
            for x, y in zip(a, b)
        )
    return a + b


def sum_statistics(parts):
    """The sum of several blocks' statistics of the same kind (None: "no statistics").

    :class:`RowStatistics` of many blocks merge at once
    (:meth:`RowStatistics.sum`); anything else adds in turn
    (:func:`add_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.statistics import sum_statistics
    >>> sum_statistics([(np.array([1.0]),), None, (np.array([2.0]),)])
    (array([3.]),)
    """
    parts = [p for p in parts if p is not None]
    if len(parts) > 2 and all(isinstance(p, RowStatistics) for p in parts):
        return RowStatistics.sum(parts)
    if len(parts) > 2 and all(isinstance(p, dict) for p in parts):
        return {k: sum_statistics([p[k] for p in parts]) for k in parts[0]}
    if len(parts) > 2 and all(isinstance(p, Statistics) for p in parts):
        if any(set(p.factors) != set(parts[0].factors) for p in parts):
            raise ValueError("Statistics of different factors cannot be added.")
        return Statistics(
            sum(p.n_samples for p in parts),
            sum_statistics([p.factors for p in parts]),
            sum_statistics([p.hyper for p in parts]),
        )
    total = None
    for part in parts:
        total = add_statistics(total, part)
    return total


class Statistics:
    """Summed sufficient statistics of a block of data, globals held fixed.

    Returned by :meth:`~skvi.engine.SVIEstimator.compute_statistics`; the
    statistics of two blocks add (``a + b``), and
    :meth:`~skvi.engine.SVIEstimator.apply_statistics` takes one step from
    any sum.  Picklable and of the size of the globals (plus, for a model
    whose hyperparameter step needs them, the block's data points).

    Parameters
    ----------
    n_samples : int
        Rows of data behind the statistics (the ``|S|`` of ``N / |S|``).
    factors : dict
        Factor name to its statistics (see :func:`add_statistics`).
    hyper : tuple of ndarray, RowStatistics, Samples or None, default=None
        Statistics of the model's empirical-Bayes step, if it has one.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> X = np.random.RandomState(0).normal(size=(100, 2))
    >>> est = GaussianGammaVB().partial_fit(X[:10])
    >>> a, b = est.compute_statistics(X[:60]), est.compute_statistics(X[60:])
    >>> (a + b).n_samples
    100
    """

    __slots__ = ("n_samples", "factors", "hyper")

    def __init__(self, n_samples, factors, hyper=None):
        self.n_samples = int(n_samples)
        self.factors = dict(factors)
        self.hyper = hyper

    def __add__(self, other):
        if not isinstance(other, Statistics):
            return NotImplemented
        if set(self.factors) != set(other.factors):
            raise ValueError("Statistics of different factors cannot be added.")
        return Statistics(
            self.n_samples + other.n_samples,
            {k: add_statistics(v, other.factors[k]) for k, v in self.factors.items()},
            add_statistics(self.hyper, other.hyper),
        )

    def __radd__(self, other):
        if other == 0:  # so that sum() of a list works
            return self
        return NotImplemented

    def __repr__(self):
        return f"Statistics(n_samples={self.n_samples}, factors={sorted(self.factors)})"


_RENAMED = {"Moments": "DataMoments"}


def __getattr__(name):
    # DataMoments was called Moments, a word the networks (BayesPy's kinds of
    # moments) and the family layer also use; the old name works for one
    # release, with a FutureWarning.
    return _renamed(__name__, _RENAMED, name)
