"""What matrix factorization accepts as ratings, validated and encoded.

Ratings come as ``(user, item)`` id pairs with ``y``, as ``(user, item,
rating)`` rows, or as the stored entries of a sparse users x items matrix.
These functions check them, drop ratings of weight 0, and map ratings to
a likelihood's targets; the id maps themselves are
:class:`~skvi.models.matrix_factorization.ids.IdEncoder`.  Only
:func:`id_columns` touches an estimator: scikit-learn's record of the
feature names and ``n_features_in_``.
"""

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _check_feature_names

from ...engine.data import check_row_weights
from ...likelihoods import Bernoulli, Likelihood, Ordinal, get_likelihood
from ...validation import check_sparse_structure
from .nodes import Ratings

__all__ = [
    "check_labels",
    "check_ratings",
    "fitted_likelihood",
    "id_columns",
    "likelihood_targets",
    "matrix_ratings",
    "raw_ratings",
    "weigh",
]


def raw_ratings(est, X, y, reset, sample_weight, labels=False):
    """Validated ratings of (X, y) with their ids as given; weight-0 ratings dropped.

    Parameters
    ----------
    est : estimator
        Whose feature names and ``n_features_in_`` are checked or, with
        ``reset``, set.
    X : array-like, data frame or sparse matrix
        Id pairs (with ``y``), ``(user, item, rating)`` rows or a sparse
        users x items matrix (``y`` None).
    y : array-like or None
        The ratings of id pairs.
    reset : bool
        Whether a fit starts (records the feature names).
    sample_weight : array-like or None
        Weights of the ratings.
    labels : bool, default=False
        Whether the ratings are class labels (a categorical likelihood):
        kept of their own type (:func:`check_labels`), not made floats.

    Returns
    -------
    data : Ratings
        The ratings, with their ids not yet encoded.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.inputs import raw_ratings
    >>> X = np.array([["ann", "x"], ["bob", "y"]])
    >>> data = raw_ratings(SVIMatrixFactorization(), X, [4, 5], True, [1.0, 0.0])
    >>> data.users, data.ratings
    (array(['ann'], dtype='<U3'), array([4.]))
    """
    check = check_labels if labels else check_ratings
    if y is None and not sp.issparse(X) and np.ndim(X) == 2 and np.shape(X)[1] == 3:
        # (user, item, rating) rows, as a data frame of ratings holds them.
        weights = check_row_weights(sample_weight, X)
        users, items, ratings = id_columns(est, X, reset=reset, n_columns=3)
        data = Ratings(users, items, check(ratings, users.shape[0]))
    elif y is None:
        data = matrix_ratings(X, type(est).__name__, labels=labels)
        weights = check_row_weights(sample_weight, data.ratings)
        if reset:
            est.n_features_in_ = 2
    else:
        # The weights first: their errors (all zero, wrong length) do not
        # depend on what the columns of X hold.
        weights = check_row_weights(sample_weight, X)
        users, items = id_columns(est, X, reset=reset)
        data = Ratings(users, items, check(y, users.shape[0]))
    if weights is not None:
        data = weigh(data, weights)
    return data


def weigh(data, weights):
    """``data`` with the validated ``weights``; ratings of weight 0 are dropped.

    Dropped before their ids are encoded, a rating of weight 0 is as if
    it were not in X.  Unit weights give unweighted ratings, whose code
    paths (and numbers) are those of a fit without weights.

    Parameters
    ----------
    data : Ratings
        The ratings.
    weights : ndarray of shape (n_ratings,)
        Their non-negative weights.

    Returns
    -------
    data : Ratings
        The ratings of positive weight, with their weights unless all are 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.inputs import weigh
    >>> from skvi.models.matrix_factorization.nodes import Ratings
    >>> data = Ratings(np.array([0, 1]), np.array([0, 0]), np.array([3.0, 4.0]))
    >>> weigh(data, np.array([0.0, 2.0])).weights
    array([2.])
    """
    positive = weights > 0
    if not np.all(positive):
        data = data[positive]
        weights = weights[positive]
    if np.all(weights == 1.0):
        return data
    data.weights = weights
    return data


def id_columns(est, X, reset, n_columns=2):
    """The user and item id columns of X, an (n, 2) array or data frame.

    With ``n_columns=3`` the third column, the ratings, is returned too
    (the names of the first two are the ids' feature names).

    Parameters
    ----------
    est : estimator
        Whose feature names (and, with ``reset``, ``n_features_in_``) are
        checked or set.
    X : array-like or data frame
        The id columns.
    reset : bool
        Whether a fit starts.
    n_columns : {2, 3}, default=2
        The columns X must have.

    Returns
    -------
    columns : tuple of ndarray
        Each column, of its own type.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.inputs import id_columns
    >>> id_columns(SVIMatrixFactorization(), np.array([[1, 7], [2, 8]]), reset=True)
    (array([1, 2]), array([7, 8]))
    """
    named = X.iloc[:, :2] if n_columns == 3 and hasattr(X, "iloc") else X
    _check_feature_names(est, named, reset=reset)
    if sp.issparse(X):
        raise ValueError(
            "X must be an (n_ratings, 2) array of (user, item) ids when y is given, "
            "not a sparse matrix (a sparse users x items matrix of ratings is "
            "passed with y=None)."
        )
    if hasattr(X, "iloc"):  # a data frame: keep each column's own type
        columns = [np.asarray(X.iloc[:, j]) for j in range(X.shape[1])]
        shape = X.shape
    else:
        X = np.asarray(X)
        shape = X.shape
        columns = [X[:, j] for j in range(shape[1])] if X.ndim == 2 else []
    if len(shape) != 2:
        raise ValueError(
            f"Expected a 2D array of (user, item) id pairs, got an array of shape {shape}."
        )
    if any(np.asarray(c).dtype.kind == "c" for c in columns):
        raise ValueError("Complex data not supported as user or item ids.")
    if shape[1] == 0:
        raise ValueError(
            f"0 feature(s) (shape={shape}) while a minimum of 2 is required: "
            "the user id and the item id of each rating."
        )
    if shape[1] != n_columns:
        raise ValueError(
            f"X has {shape[1]} feature(s) (shape={shape}), but "
            f"{type(est).__name__} takes exactly 2: the user id and the item id "
            "of each rating (its ratings go in y)."
        )
    if shape[0] < 1:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required."
        )
    if reset:
        est.n_features_in_ = 2
    return tuple(columns)


def matrix_ratings(X, name="SVIMatrixFactorization", labels=False):
    """The stored entries of a sparse users x items matrix as ratings.

    Parameters
    ----------
    X : sparse matrix of shape (n_users, n_items)
        The ratings: every stored entry, zero included, is one.
    name : str, default='SVIMatrixFactorization'
        The estimator named in the error of an X that is not sparse.
    labels : bool, default=False
        Whether the entries are class labels, kept of the matrix's type.

    Returns
    -------
    data : Ratings
        Row and column indices as the ids.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from skvi.models.matrix_factorization.inputs import matrix_ratings
    >>> data = matrix_ratings(sp.csr_matrix([[0.0, 4.0], [5.0, 0.0]]))
    >>> data.users, data.items, data.ratings
    (array([0, 1]), array([1, 0]), array([4., 5.]))
    """
    if not sp.issparse(X):
        raise ValueError(
            f"{name}: give either X of (user, item) id pairs "
            "with ratings y, or with y=None (user, item, rating) rows or a "
            "scipy sparse users x items matrix of ratings."
        )
    check_sparse_structure(X)
    if X.format == "dia":
        raise ValueError(
            "A dia_matrix stores whole diagonals, so its stored entries are not the "
            "observed ratings: pass a COO, CSR or CSC matrix of the ratings."
        )
    coo = sp.coo_matrix(X)
    check = check_labels if labels else check_ratings
    ratings = check(coo.data, coo.data.shape[0])
    return Ratings(coo.row.astype(np.int64), coo.col.astype(np.int64), ratings)


def check_ratings(y, n):
    """``y`` as ``n`` finite float64 ratings whose sum of squares is finite.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 1)
        The ratings.
    n : int
        The number of id pairs they rate.

    Returns
    -------
    ratings : ndarray of shape (n,)

    Examples
    --------
    >>> from skvi.models.matrix_factorization.inputs import check_ratings
    >>> check_ratings([[4], [5]], 2)
    array([4., 5.])
    """
    ratings = np.asarray(y)
    if ratings.ndim == 2 and ratings.shape[1] == 1:
        ratings = ratings[:, 0]
    if ratings.ndim != 1 or ratings.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X; got {ratings.shape}.")
    if ratings.dtype.kind == "c":
        raise ValueError("Complex data not supported as ratings.")
    try:
        ratings = ratings.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must be numeric ratings: {exc}") from None
    if not np.all(np.isfinite(ratings)):
        raise ValueError("Input y contains NaN or infinity: ratings must be finite.")
    with np.errstate(over="ignore"):
        overflow = not np.isfinite(np.dot(ratings, ratings))
    if overflow:
        raise ValueError(
            "The ratings are too large: the sum of their squares overflows a float64. "
            "Divide them by a constant (and the predictions by the same)."
        )
    return ratings


def check_labels(y, n):
    """``y`` as ``n`` class labels of one kind, numbers or strings, kept of their type.

    A categorical likelihood's ratings are labels: integer labels stay
    integers and strings stay strings, so that ``classes_`` and the
    predictions are of the type of ``y``, as for scikit-learn's classifiers.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 1)
        The labels.
    n : int
        The number of id pairs they rate.

    Returns
    -------
    labels : ndarray of shape (n,)

    Raises
    ------
    ValueError
        For a wrong shape, complex, missing or non-finite values, or a mix
        of numbers and strings.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.inputs import check_labels
    >>> check_labels([[1], [5]], 2)
    array([1, 5])
    >>> check_labels(["no", "yes"], 2)
    array(['no', 'yes'], dtype='<U3')
    """
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X; got {labels.shape}.")
    if labels.dtype == object:
        values = labels.tolist()
        text = {isinstance(v, (str, bytes)) for v in values}
        if len(text) > 1 or any(v is None for v in values):
            raise ValueError(
                "y mixes labels of different kinds (numbers, strings or None): "
                "use one kind of label."
            )
        labels = np.asarray(values)
        if labels.dtype == object or labels.ndim != 1:
            raise ValueError(
                f"y must hold numbers or strings as labels; got values such as {values[:3]!r}."
            )
    if labels.dtype.kind not in "biufUS":
        raise ValueError(f"y must hold numbers or strings as labels; got dtype {labels.dtype}.")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError("Input y contains NaN or infinity: ratings must be finite.")
    return labels


def fitted_likelihood(likelihood, ratings, classes=None):
    """The observation model of a new fit, and its classes when it is categorical.

    Categorical likelihoods take as classes the sorted rating values (of
    ``classes`` when given): ``'bernoulli'`` needs exactly two, ``'ordinal'``
    at least two, and the name ``'ordinal'`` becomes an
    :class:`~skvi.likelihoods.Ordinal` of as many categories.

    Parameters
    ----------
    likelihood : str or Likelihood
        The estimator's ``likelihood``; an instance is copied.
    ratings : ndarray
        The fit's ratings.
    classes : array-like or None, default=None
        Every rating value of the fit, when ``ratings`` may lack some.

    Returns
    -------
    likelihood : Likelihood
        The model to fit (``likelihood_``).
    classes : ndarray or None
        The sorted rating values (``classes_``); None when not categorical.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.inputs import fitted_likelihood
    >>> lik, classes = fitted_likelihood("ordinal", np.array([3.0, 1.0, 2.0, 1.0]))
    >>> lik.n_categories, classes
    (3, array([1., 2., 3.]))
    >>> fitted_likelihood("bernoulli", np.array(["yes", "no", "yes"]))[1]
    array(['no', 'yes'], dtype='<U3')
    """
    if isinstance(likelihood, Likelihood):
        lik = copy.deepcopy(likelihood)
    else:
        lik = get_likelihood(likelihood)
    if not isinstance(lik, (Bernoulli, Ordinal)):
        return lik, None
    if classes is not None:
        if np.ndim(classes) != 1:
            raise ValueError(f"classes must be a 1-d array of every rating value; got {classes!r}.")
        ratings = check_labels(classes, np.shape(classes)[0])
    classes = np.unique(ratings)
    n_classes = classes.shape[0]
    if isinstance(lik, Bernoulli) and n_classes != 2:
        raise ValueError(
            "likelihood='bernoulli' needs exactly two rating values; "
            f"got {n_classes} ({classes[:5]}...). Pass classes= to "
            "partial_fit when a minibatch does not hold both."
        )
    if isinstance(lik, Ordinal):
        if n_classes < 2:
            raise ValueError(
                "likelihood='ordinal' needs at least two rating values; pass "
                "classes= to partial_fit when a minibatch does not hold them all."
            )
        if isinstance(likelihood, str):
            lik = Ordinal(n_categories=n_classes)
        elif lik.n_categories != n_classes:
            raise ValueError(
                f"The Ordinal likelihood has {lik.n_categories} categories but "
                f"the ratings hold {n_classes} values; pass classes= or matching "
                "thresholds."
            )
    return lik, classes


def likelihood_targets(likelihood, classes, data):
    """``data`` with its ratings as the likelihood's targets.

    A categorical likelihood sees each rating as its class index (0/1 for
    ``classes[0]``/``classes[1]``, ``0 .. K-1`` for the ordinal one);
    another validates the ratings as its targets.

    Parameters
    ----------
    likelihood : Likelihood
        The fitted observation model.
    classes : ndarray or None
        Its classes, when categorical.
    data : Ratings
        The ratings.

    Returns
    -------
    data : Ratings
        The same ids and weights, the targets as ratings.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Bernoulli
    >>> from skvi.models.matrix_factorization.inputs import likelihood_targets
    >>> from skvi.models.matrix_factorization.nodes import Ratings
    >>> data = Ratings(np.array([0, 1]), np.array([0, 0]), np.array([5.0, 1.0]))
    >>> likelihood_targets(Bernoulli(), np.array([1.0, 5.0]), data).ratings
    array([1., 0.])
    """
    ratings = data.ratings
    if isinstance(likelihood, (Bernoulli, Ordinal)):
        numeric = "biuf"
        if (np.asarray(ratings).dtype.kind in numeric) != (classes.dtype.kind in numeric):
            raise ValueError(
                f"Ratings {ratings[:5]} are not among the classes {classes} seen when "
                "fitting started: numbers and strings do not mix."
            )
        idx = np.searchsorted(classes, ratings)
        idx = np.minimum(idx, classes.shape[0] - 1)
        if np.any(classes[idx] != ratings):
            bad = ratings[classes[idx] != ratings][:5]
            raise ValueError(
                f"Ratings {bad} are not among the classes {classes} seen when "
                "fitting started (pass classes= to the first partial_fit)."
            )
        ratings = idx.astype(np.float64)
    else:
        ratings = likelihood.validate_targets(ratings)
    return Ratings(data.users, data.items, ratings, data.weights)
