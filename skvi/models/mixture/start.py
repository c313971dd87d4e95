"""The Gaussian mixture's start: the rows it is fitted to and their first responsibilities.

An online fit (or the first ``partial_fit`` call, or a fit on a cluster)
starts from k-means on a random subsample of the rows, so that the start does
not cost a pass of k-means over data that SVI reads in minibatches; batch EM
starts from all the rows, as scikit-learn's.
"""

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus

__all__ = ["init_rows", "initial_responsibilities", "subsample"]

#: Rows of the start's subsample, at least.  A larger subsample starts no
#: better and costs a large share of a one-pass fit (docs/mixture_benchmark.md,
#: "The start's subsample").
_INIT_ROWS = 5_000
#: Rows per component and feature, when that is more.
_INIT_ROWS_PER_PARAMETER = 50


def init_rows(n_components, n_features):
    """Rows of the subsample an SVI fit starts from (k-means on them).

    Parameters
    ----------
    n_components : int
        Number of components.
    n_features : int
        Number of features.

    Returns
    -------
    int
        ``max(5000, 50 * n_components * n_features)``.

    Examples
    --------
    >>> from skvi.models.mixture.start import init_rows
    >>> init_rows(10, 10), init_rows(50, 20)
    (5000, 50000)
    """
    return max(_INIT_ROWS, _INIT_ROWS_PER_PARAMETER * n_components * int(n_features))


def subsample(X, weight, limit, n_components, random_state):
    """The rows a start is fitted to: ``(rows, their weights or None, scale to all rows)``.

    Without weights, at most ``limit`` rows drawn without replacement.  With
    weights, at most ``limit`` draws with replacement, each row with
    probability ``w_i / sum(w)``, the draws of a row counted as its weight:
    the multinomial version of a uniform subsample of the rows repeated by
    weight.  Its weighted statistics times ``sum(w) / limit`` are unbiased
    for the weighted statistics of all rows (a uniform subsample keeping its
    weights would be too, but it misses the few heavy rows of skewed
    weights, or takes mostly negligible ones).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The rows.
    weight : ndarray of shape (n,) or None
        Their positive weights.
    limit : int or None
        Most rows (or draws); None: all the rows.
    n_components : int
        Number of components: k-means needs as many rows.
    random_state : numpy.random.RandomState
        The generator.

    Returns
    -------
    rows : ndarray
        The subsample (``X`` itself when it is all the rows).
    weights : ndarray or None
        Their weights.
    scale : float
        What their statistics are multiplied by to count for all the rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.start import subsample
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> rows, weights, scale = subsample(X, None, 4, 2, np.random.RandomState(0))
    >>> rows.shape, weights, scale
    ((4, 2), None, 2.5)
    """
    n = X.shape[0]
    if weight is None:
        sub = X
        if limit is not None and n > limit:
            sub = X[np.sort(random_state.choice(n, limit, replace=False))]
        return sub, None, n / sub.shape[0]
    if limit is None or n <= limit:
        return X, weight, 1.0
    total = float(np.sum(weight))
    draws = random_state.choice(n, size=limit, replace=True, p=weight / total)
    rows, counts = np.unique(draws, return_counts=True)
    if rows.shape[0] < n_components:
        # A few rows hold nearly all the weight: k-means needs K rows.
        return X, weight, 1.0
    return X[rows], counts.astype(np.float64), total / limit


def initial_responsibilities(
    X, init_params, n_components, random_state, n_kmeans=1, sample_weight=None
):
    """The first responsibilities, by ``init_params`` (as in scikit-learn).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The rows.
    init_params : {'kmeans', 'k-means++', 'random', 'random_from_data'}
        How they are drawn.
    n_components : int
        Number of components.
    random_state : numpy.random.RandomState
        The generator.
    n_kmeans : int, default=1
        k-means runs, the best kept.
    sample_weight : ndarray of shape (n,) or None, default=None
        Weights of the rows: k-means counts them, seeds are drawn in
        proportion to them.

    Returns
    -------
    ndarray of shape (n, n_components)
        One-hot rows (the seeds' rows for 'k-means++' and
        'random_from_data', zeros elsewhere), or random rows summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.start import initial_responsibilities
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> resp = initial_responsibilities(X, "kmeans", 2, np.random.RandomState(0))
    >>> bool(resp[0, 0] == resp[1, 0] != resp[2, 0] == resp[3, 0])
    True
    """
    n, K = X.shape[0], n_components
    resp = np.zeros((n, K))
    if init_params == "kmeans":
        labels = (
            KMeans(n_clusters=K, n_init=n_kmeans, random_state=random_state)
            .fit(X, sample_weight=sample_weight)
            .labels_
        )
        resp[np.arange(n), labels] = 1.0
    elif init_params == "random":
        resp = random_state.uniform(size=(n, K))
        resp /= resp.sum(axis=1, keepdims=True)
    elif init_params == "random_from_data":
        p = None if sample_weight is None else sample_weight / np.sum(sample_weight)
        resp[random_state.choice(n, size=K, replace=False, p=p), np.arange(K)] = 1.0
    else:
        _, idx = kmeans_plusplus(X, K, sample_weight=sample_weight, random_state=random_state)
        resp[idx, np.arange(K)] = 1.0
    return resp
