"""Top-n recommendations: the rated pairs a model remembers, grids of predictions, ranking.

:class:`~skvi.SVIMatrixFactorization` ranks every item for a block of users
at once: :func:`grid_moments` gives the mean and variance of the linear
predictor of every (user, item) pair of the block as matrix products of
the nodes' moments, the likelihood strategy turns them into predictive
means, and :func:`top_n` keeps each row's best.  The pairs a user has
rated are left out through :class:`SeenPairs`, the distinct (user, item)
pairs of the fit as a sparse boolean matrix.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from .ids import IdEncoder, as_id_array

__all__ = ["SeenPairs", "check_n", "exclusion_rows", "grid_moments", "recommend", "top_n"]

#: (user, item) pairs per block of users whose predictions are formed at
#: once: bounds the (users, items) matrices and their quadrature nodes.
GRID_PAIRS = 1 << 16


def _pairs_matrix(users, items, shape):
    """CSR boolean matrix of the distinct (user, item) pairs; indices as small as fits."""
    index = np.int32 if max(shape) < np.iinfo(np.int32).max else np.int64
    coo = sp.coo_matrix(
        (np.ones(users.shape[0], dtype=bool), (users.astype(index), items.astype(index))),
        shape=shape,
    )
    matrix = coo.tocsr()  # duplicates summed: True
    matrix.sum_duplicates()
    return matrix


class SeenPairs:
    """The distinct (user, item) pairs a model was fitted on, as a sparse boolean matrix.

    What :meth:`~skvi.SVIMatrixFactorization.recommend` leaves out.  Its
    size is that of the distinct pairs, about 5 bytes each (a boolean and
    an int32 column index), whatever the repeats and weights of the
    ratings.  Pairs added by ``partial_fit`` wait in a list until they
    outnumber the merged ones (or the matrix is read, or the model
    pickled), so that a stream of small minibatches merges in time
    proportional to its length and a pickle keeps the distinct pairs alone.

    Parameters
    ----------
    users, items : ndarray of int
        Node rows of the pairs.
    shape : tuple of (int, int)
        Users and items of the model.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.recommend import SeenPairs
    >>> seen = SeenPairs(np.array([0, 0, 1]), np.array([2, 2, 0]), (2, 3))
    >>> seen.add(np.array([2]), np.array([1]), (3, 3))
    >>> seen.matrix().toarray().astype(int)
    array([[0, 0, 1],
           [1, 0, 0],
           [0, 1, 0]])
    """

    def __init__(self, users, items, shape):
        self._matrix = _pairs_matrix(users, items, shape)
        self._shape = tuple(shape)
        self._pending = []
        self._n_pending = 0

    def add(self, users, items, shape):
        """Add the pairs of new ratings; ``shape`` is the model's, grown by them.

        Parameters
        ----------
        users, items : ndarray of int
            Node rows of the pairs.
        shape : tuple of (int, int)
            Users and items of the model now.
        """
        self._shape = tuple(shape)
        self._pending.append((users, items))
        self._n_pending += users.shape[0]
        if self._n_pending > self._matrix.nnz:
            self._merge()

    def _merge(self):
        coo = self._matrix.tocoo()
        users = np.concatenate([coo.row] + [u for u, _ in self._pending])
        items = np.concatenate([coo.col] + [i for _, i in self._pending])
        self._matrix = _pairs_matrix(users, items, self._shape)
        self._pending = []
        self._n_pending = 0

    def matrix(self):
        """The pairs as a CSR boolean matrix of shape (n_users, n_items).

        Returns
        -------
        matrix : scipy.sparse.csr_matrix
        """
        if self._pending or self._matrix.shape != self._shape:
            self._merge()
        return self._matrix

    def __getstate__(self):
        # The pending pairs are the raw pairs of the last minibatches, repeats
        # and all: a pickle keeps them merged, the size of the distinct pairs.
        self.matrix()
        return self.__dict__.copy()


def check_n(n, n_items):
    """``n`` as an int in ``[1, n_items]``, or a clear ValueError.

    Parameters
    ----------
    n : object
        The number of recommendations asked for.
    n_items : int
        The items of the model.

    Returns
    -------
    n : int

    Examples
    --------
    >>> from skvi.models.matrix_factorization.recommend import check_n
    >>> check_n(3, 10)
    3
    """
    if (
        not isinstance(n, numbers.Integral)
        or isinstance(n, (bool, np.bool_))
        or not (1 <= n <= n_items)
    ):
        raise ValueError(f"n must be an int in [1, n_items_={n_items}]; got {n!r}.")
    return int(n)


def exclusion_rows(est, users, seen):
    """The items to leave out for each requested user, as a CSR matrix and a row per user.

    Parameters
    ----------
    est : SVIMatrixFactorization
        The fitted model.
    users : ndarray of shape (n_users,)
        The requested user ids.
    seen : array-like of shape (n_pairs, 2) or None
        (user, item) id pairs to leave out, or None for the pairs the model
        was fitted on.

    Returns
    -------
    matrix : scipy.sparse.csr_matrix of shape (n_rows, n_items_)
        Boolean: the items to leave out of each row.
    rows : ndarray of shape (n_users,)
        Each requested user's row of ``matrix``; -1 for none.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.recommend import exclusion_rows
    >>> X = np.array([["ann", "x"], ["bob", "y"]])
    >>> mf = SVIMatrixFactorization(n_components=1, max_iter=2, tol=0).fit(X, [4.0, 5.0])
    >>> matrix, rows = exclusion_rows(mf, np.array(["bob", "cy"]), None)
    >>> matrix[rows[0]].toarray(), int(rows[1])
    (array([[False,  True]]), -1)
    """
    n_items = len(est._item_ids)
    if seen is None:
        stored = getattr(est, "_seen", None)
        if stored is None:
            raise ValueError(
                "This model keeps no record of the rated pairs (it was fitted on a "
                "cluster, where the ratings stay on the workers): pass the pairs to leave "
                "out as seen=, or exclude_seen=False."
            )
        return stored.matrix(), est._user_ids.encode(users)
    seen_users, seen_items = _seen_columns(est, seen)
    requested = IdEncoder(users)
    rows = requested.encode(seen_users)
    cols = est._item_ids.encode(seen_items)
    keep = (rows >= 0) & (cols >= 0)  # other users, and items the model cannot recommend
    matrix = _pairs_matrix(rows[keep], cols[keep], (len(requested), n_items))
    return matrix, requested.encode(users)


def _seen_columns(est, seen):
    """The user and item id columns of ``seen``, an (n, 2) array of id pairs."""
    if sp.issparse(seen):
        raise ValueError(
            "seen must be an (n_pairs, 2) array of (user, item) ids, not a sparse matrix."
        )
    shape = np.shape(seen)
    if len(shape) != 2 or shape[1] != 2:
        raise ValueError(
            f"seen must be an (n_pairs, 2) array of (user, item) ids; got shape {shape}."
        )
    if hasattr(seen, "iloc"):  # a data frame: each column of its own type
        columns = [np.asarray(seen.iloc[:, j]) for j in (0, 1)]
    else:
        seen = np.asarray(seen)
        columns = [seen[:, 0], seen[:, 1]]
    if shape[0] == 0:
        return est.user_ids_[:0], est.item_ids_[:0]
    return as_id_array(columns[0]), as_id_array(columns[1])


def grid_moments(w, y, mu, var_mu, variance=True):
    """Mean and variance of ``f = mu + u . v + b + c`` for every (user, item) pair.

    With ``w = (u, b)`` and ``y = (v, c)`` independent, ``f - mu`` is the
    inner product of ``(u, b, 1)`` and ``(v, 1, c)``: its mean is the
    product of their means and its second moment the Frobenius product of
    their second moments, so that a block of users against every item is
    two matrix products (as ``_f_moments`` computes each pair, with the
    same ``E[g^2] - E[g]^2`` clipped at 0).

    Parameters
    ----------
    w, y : SideMoments
        The users' and the items' node moments (``mean`` of shape (n, d),
        ``second`` of shape (n, d, d), ``d = K + 1``).
    mu, var_mu : float
        Mean and variance of the global mean.
    variance : bool, default=True
        Whether to compute the variances (None otherwise).

    Returns
    -------
    mean, var : ndarray of shape (n_users, n_items)

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import SideMoments
    >>> from skvi.models.matrix_factorization.recommend import grid_moments
    >>> m = np.array([[1.0, 0.5]])              # u = 1, b = 0.5 (no variance)
    >>> s = m[:, :, None] * m[:, None, :]
    >>> node = SideMoments(m, s, np.zeros((1, 2)), np.zeros(1))
    >>> mean, var = grid_moments(node, node, 3.0, 0.0)
    >>> float(mean[0, 0]), float(var[0, 0])     # 3 + 1 * 1 + 0.5 + 0.5
    (5.0, 0.0)
    """
    k = w.mean.shape[1] - 1
    wa_mean, wa_second = _augmented(w.mean, w.second, k, bias_first=False)
    ya_mean, ya_second = _augmented(y.mean, y.second, k, bias_first=True)
    e_g = wa_mean @ ya_mean.T
    if not variance:
        return e_g + mu, None
    size = (k + 2) * (k + 2)
    e_g2 = wa_second.reshape(-1, size) @ ya_second.reshape(-1, size).T
    var = e_g2 - e_g * e_g
    np.maximum(var, 0.0, out=var)
    return e_g + mu, var + var_mu


def _augmented(mean, second, k, bias_first):
    """Mean and second moment of ``(u, b, 1)`` or, with ``bias_first``, ``(v, 1, c)``."""
    n = mean.shape[0]
    one, bias = (k + 1, k) if not bias_first else (k, k + 1)
    order = np.r_[np.arange(k), bias]  # where each of (factors, bias) goes
    a_mean = np.empty((n, k + 2))
    a_mean[:, order] = mean
    a_mean[:, one] = 1.0
    a_second = np.empty((n, k + 2, k + 2))
    a_second[:, order[:, None], order[None, :]] = second
    a_second[:, one, order] = mean
    a_second[:, order, one] = mean
    a_second[:, one, one] = 1.0
    return a_mean, a_second


def top_n(scores, n):
    """Columns of each row's ``n`` largest scores, largest first.

    Parameters
    ----------
    scores : ndarray of shape (n_rows, n_columns)
        Scores; ``-inf`` marks a column that must not be chosen.
    n : int
        How many columns per row, at most ``n_columns``.

    Returns
    -------
    columns : ndarray of shape (n_rows, n)

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.recommend import top_n
    >>> top_n(np.array([[0.1, 0.9, 0.5], [3.0, -np.inf, 1.0]]), 2)
    array([[1, 2],
           [0, 2]])
    """
    if n < scores.shape[1]:
        columns = np.argpartition(-scores, n - 1, axis=1)[:, :n]
    else:
        columns = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    best = np.take_along_axis(scores, columns, axis=1)
    order = np.argsort(-best, axis=1, kind="stable")
    return np.take_along_axis(columns, order, axis=1)


def recommend(est, users, n, exclude_seen, seen, include_noise):
    """:meth:`~skvi.SVIMatrixFactorization.recommend` of a fitted model (arguments as there).

    Blocks of users, each ranked against every item at once.

    Returns
    -------
    items, mean, std : ndarray of shape (n_users, n)

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.recommend import recommend
    >>> X = np.array([[0, 0], [0, 1], [1, 1], [1, 2]])
    >>> mf = SVIMatrixFactorization(n_components=1, max_iter=5, tol=0, random_state=0)
    >>> mf = mf.fit(X, [5.0, 1.0, 2.0, 4.0])
    >>> items, mean, std = recommend(mf, [0, 1], 1, True, None, True)
    >>> items
    array([[2],
           [0]])
    """
    if np.ndim(users) != 1:
        raise ValueError(
            f"users must be a 1-d array of user ids (a list for one user); got shape "
            f"{np.shape(users)}."
        )
    ids = as_id_array(users)
    n_items = len(est._item_ids)
    n = check_n(n, n_items)
    if seen is not None and not exclude_seen:
        raise ValueError(
            "seen= lists the pairs to leave out, but exclude_seen=False leaves none out: "
            "pass one or the other."
        )
    if exclude_seen:
        excluded, rows = exclusion_rows(est, ids, seen)
        counts = np.diff(excluded.indptr)
        left = n_items - np.where(rows >= 0, counts[np.maximum(rows, 0)], 0)
        short = left < n
        if np.any(short):
            raise ValueError(
                f"Users {ids[short][:10].tolist()} have only {left[short][:10].tolist()} "
                f"unrated items, fewer than n={n}: ask for fewer items, or pass "
                "exclude_seen=False."
            )
    params = est.natural_params_
    strategy = est._strategy
    user_rows = est._user_ids.encode(ids)
    item_moments = est._node_moments("items", params, np.arange(n_items))
    mu, var_mu = est._global_mean(params)
    size = max(1, GRID_PAIRS // n_items)
    columns = np.empty((ids.shape[0], n), dtype=np.intp)
    for start in range(0, ids.shape[0], size):
        block = slice(start, start + size)
        w = est._node_moments("users", params, user_rows[block])
        # The ranking needs the means only: the Gaussian's is E[f], the
        # others' integrate over f and need its variance too.
        m_f, v_f = grid_moments(w, item_moments, mu, var_mu, strategy.mean_needs_variance)
        shape = m_f.shape
        scores = strategy.predictive_mean_of_f(
            est, m_f.ravel(), None if v_f is None else v_f.ravel()
        ).reshape(shape)
        if exclude_seen:
            mask = np.zeros(shape, dtype=bool)
            r = rows[block]
            mask[r >= 0] = excluded[r[r >= 0]].toarray()
            scores[mask] = -np.inf
        columns[block] = top_n(scores, n)
    # The chosen pairs' means and standard deviations as predict gives them.
    mean, var = strategy.predictive(
        est, np.repeat(user_rows, n), columns.ravel().astype(np.int64), include_noise
    )
    shape = columns.shape
    std = np.sqrt(np.maximum(var, 0.0))
    return est.item_ids_[columns], mean.reshape(shape), std.reshape(shape)
