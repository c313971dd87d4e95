"""The pieces of matrix factorization's nodes: sides, minibatches, moments.

A rating joins a user node ``w = (u, b)`` and an item node ``y = (v, c)``
(factors then bias).  The two groups are symmetric: seen from a user, an
item is a design ``x = (v, 1)`` with offset ``c``, and the other way round.
:data:`SIDES` names what differs between them; :func:`prepare` indexes a
minibatch by node on both sides; :func:`node_moments` and
:func:`aggregate` give the moments of many small Gaussians and the sums over
each node's rated partners, all vectorised over nodes and ratings.
"""

import numpy as np
import scipy.sparse as sp

from ...engine.rows import ChildSample
from ...expfam import gaussian_moments
from ...expfam.base import _renamed

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None


class Side:
    """What differs between the user side and the item side.

    Attributes
    ----------
    name : str
        The side's global factor, ``'users'`` or ``'items'``.
    other : str
        The partner side's factor.
    precision : str
        The factor of this side's prior precision.
    prefix : str
        Prefix of the side's fitted attributes (``user_mean_`` ...).
    column : int
        The column of X holding this side's ids.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.nodes import SIDES
    >>> SIDES["users"].other, SIDES["items"].precision
    ('items', 'item_precision')
    """

    __slots__ = ("name", "other", "precision", "prefix", "column")

    def __init__(self, name, other, precision, prefix, column):
        self.name = name
        self.other = other
        self.precision = precision
        self.prefix = prefix
        self.column = column


SIDES = {
    "users": Side("users", "items", "user_precision", "user", 0),
    "items": Side("items", "users", "item_precision", "item", 1),
}


class Ratings:
    """Ratings as aligned arrays; indexable by rows like an ndarray.

    The engine only needs ``shape[0]`` and ``data[rows]``, so this is how
    the (user, item, rating) triples travel through its minibatch loop.
    ``weights`` holds each rating's positive ``sample_weight``, or is None
    for unit weights (the unweighted code paths).
    """

    __slots__ = ("users", "items", "ratings", "weights")

    def __init__(self, users, items, ratings, weights=None):
        self.users = users
        self.items = items
        self.ratings = ratings
        self.weights = weights

    @property
    def shape(self):
        return (self.users.shape[0],)

    def __getitem__(self, rows):
        weights = None if self.weights is None else self.weights[rows]
        return Ratings(self.users[rows], self.items[rows], self.ratings[rows], weights)

    def count(self):
        """The number of ratings, or their total weight."""
        return self.shape[0] if self.weights is None else float(np.sum(self.weights))

    @property
    def weight(self):
        """Each rating's weight in its user's and item's counts ``N_i`` (None: 1 each)."""
        return self.weights

    @classmethod
    def concatenate(cls, parts):
        """The ratings of several blocks stacked (a probe drawn over the blocks)."""
        weights = None
        if any(p.weights is not None for p in parts):
            weights = np.concatenate(
                [np.ones(p.shape[0]) if p.weights is None else p.weights for p in parts]
            )
        return cls(
            np.concatenate([p.users for p in parts]),
            np.concatenate([p.items for p in parts]),
            np.concatenate([p.ratings for p in parts]),
            weights,
        )


class BatchSide:
    """One side (users or items) of a prepared minibatch.

    ``nodes`` are the distinct node ids of this side in the batch and
    ``counts`` their ratings (``C_i``); per rating, ``row`` is its node's
    position in ``nodes``, ``col`` its partner's in ``other_nodes``, with
    the rating and its weight (or None).  The CSR matrices of the numpy
    aggregation (:attr:`ones`, :attr:`values`) and the ratings grouped by
    node of the compiled one (:attr:`order`, :attr:`indptr`) are built on
    first use.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import index_side
    >>> side = index_side(np.array([5, 3, 5]), np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]))
    >>> side.nodes.tolist(), side.counts.tolist(), side.indptr.tolist()
    ([3, 5], [1.0, 2.0], [0, 1, 3])
    >>> side.values.toarray().tolist()
    [[0.0, 2.0], [1.0, 3.0]]
    """

    __slots__ = (
        "nodes",
        "counts",
        "other_nodes",
        "row",
        "col",
        "ratings",
        "weights",
        "_ones",
        "_values",
        "_order",
        "_indptr",
    )

    def __init__(self, nodes, counts, other_nodes, row, col, ratings, weights=None):
        self.nodes = nodes  # distinct node ids of this side in the batch
        # Ratings per node in the batch (C_i), not weighted: the engine's
        # N_i are counts of ratings, and N_i / C_i scales weighted sums.
        self.counts = counts
        self.other_nodes = other_nodes
        # Per rating: its node's position in ``nodes``, its partner's in
        # ``other_nodes``, the rating and its weight or None (the
        # non-conjugate statistics are not sums over the CSR matrices).
        self.row = row
        self.col = col
        self.ratings = ratings
        self.weights = weights
        self._ones = self._values = self._order = self._indptr = None

    def reweighted(self, ratings, weights):
        """The same ratings' index with other ratings and weights (``counts`` kept).

        The node ids, positions and grouping (:attr:`order`, :attr:`indptr`)
        are shared; the CSR matrices are rebuilt on use.  For pseudo-ratings
        whose weights are precisions, not repetitions: ``C_i`` stays the
        count of ratings.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.models.matrix_factorization.nodes import index_side
        >>> side = index_side(np.array([5, 3, 5]), np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]))
        >>> other = side.reweighted(np.array([4.0, 5.0, 6.0]), np.array([0.5, 1.0, 2.0]))
        >>> other.counts.tolist(), other.values.toarray().tolist()
        ([1.0, 2.0], [[0.0, 5.0], [2.0, 12.0]])
        """
        other = BatchSide(
            self.nodes, self.counts, self.other_nodes, self.row, self.col, ratings, weights
        )
        # Grouped once, here, for every reweighting of these ratings.
        other._order, other._indptr = self.order, self.indptr
        return other

    def _csr(self, data):
        shape = (self.nodes.shape[0], self.other_nodes.shape[0])
        return sp.csr_matrix((data, (self.row, self.col)), shape=shape)

    @property
    def ones(self):
        """CSR indicator (the weights), nodes x other_nodes."""
        if self._ones is None:
            w = self.weights
            self._ones = self._csr(np.ones(self.ratings.shape[0]) if w is None else w)
        return self._ones

    @property
    def values(self):
        """CSR ratings (times their weights), nodes x other_nodes."""
        if self._values is None:
            w = self.weights
            self._values = self._csr(self.ratings if w is None else w * self.ratings)
        return self._values

    @property
    def order(self):
        """Positions of the ratings grouped by node (stable: in data order within a node)."""
        if self._order is None:
            self._order = np.argsort(self.row, kind="stable")
        return self._order

    @property
    def indptr(self):
        """Node ``i``'s ratings are ``order[indptr[i]:indptr[i + 1]]``."""
        if self._indptr is None:
            sizes = np.bincount(self.row, minlength=self.nodes.shape[0])
            self._indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return self._indptr


def index_side(nodes_of, partners_of, ratings, weights=None):
    """One side of a minibatch: its nodes, their partners and ratings.

    With ``weights`` every sum over the side's ratings (:func:`aggregate`)
    counts a rating of weight 2 twice, and so does ``counts``, the
    ratings per node (``C_i`` of the engine's ``N_i / C_i``).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import index_side
    >>> side = index_side(np.array([5, 3, 5]), np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]))
    >>> side.other_nodes.tolist(), side.row.tolist(), side.col.tolist()
    ([0, 1], [1, 0, 1], [0, 1, 1])
    """
    nodes, inv = np.unique(nodes_of, return_inverse=True)
    partners, inv_p = np.unique(partners_of, return_inverse=True)
    counts = np.bincount(inv, weights=weights, minlength=nodes.shape[0]).astype(float)
    return BatchSide(nodes, counts, partners, inv, inv_p, ratings, weights)


def prepare(data):
    """Index a minibatch of ratings for sparse aggregation per node.

    ``n``, ``sum_r`` and ``sum_r2`` are the (weighted) count, sum and sum of
    squares of the global side's ratings.
    """
    if isinstance(data, ChildSample):
        for_users, for_items = data.samples["users"], data.samples["items"]
    else:
        for_users = for_items = data
    r = for_users.ratings
    w = for_users.weights
    if w is None:
        n, sum_r, sum_r2 = float(r.shape[0]), float(np.sum(r)), float(np.dot(r, r))
    else:
        wr = w * r
        n, sum_r, sum_r2 = float(np.sum(w)), float(np.sum(wr)), float(np.dot(wr, r))
    return {
        "users": index_side(for_users.users, for_users.items, r, w),
        "items": index_side(for_items.items, for_items.users, for_items.ratings, for_items.weights),
        # The side whose ratings are the minibatch of the global factors.
        "global_side": "users",
        "same_sides": for_users is for_items,
        "n": n,
        "sum_r": sum_r,
        "sum_r2": sum_r2,
        "data": data,
    }


class SideMoments:
    """Mean and second moment of every node of one side.

    Formerly ``Moments``, as the rows' moments in :mod:`skvi.engine` were
    called (now :class:`~skvi.engine.DataMoments`).

    ``mean`` is (n, d); ``second`` is (n, d, d) = Sigma + m m^T; ``var`` is
    the (n, d) diagonal of Sigma; ``logdet`` the (n,) log-determinant of the
    precision.
    """

    __slots__ = ("mean", "second", "var", "logdet")

    def __init__(self, mean, second, var, logdet):
        self.mean = mean
        self.second = second
        self.var = var
        self.logdet = logdet

    def take(self, rows):
        return SideMoments(self.mean[rows], self.second[rows], self.var[rows], self.logdet[rows])


def moments_full(eta1, eta2):
    """Moments of full-covariance nodes; NaN rows where not positive definite."""
    if _gaussian_fast is not None:
        eta1 = np.ascontiguousarray(eta1, dtype=np.float64)
        eta2 = np.ascontiguousarray(eta2, dtype=np.float64)
        n, d = eta1.shape
        out = SideMoments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty(n))
        _gaussian_fast.moments_from_natural(eta1, eta2, out.mean, out.second, out.var, out.logdet)
        return out
    return moments_full_numpy(eta1, eta2)


def moments_full_numpy(eta1, eta2):
    """numpy reference of :func:`moments_full`: the family layer's map (raises if not positive definite)."""
    mean, cov, logdet, _ = gaussian_moments(eta1, eta2)
    second = cov + mean[..., :, None] * mean[..., None, :]
    return SideMoments(mean, second, np.diagonal(cov, axis1=-2, axis2=-1).copy(), logdet)


def moments_diag(eta1, eta2):
    mean, var, logdet, _ = gaussian_moments(eta1, eta2, diagonal=True)
    second = mean[..., :, None] * mean[..., None, :]
    idx = np.arange(mean.shape[-1])
    second[..., idx, idx] += var
    return SideMoments(mean, second, var, logdet)


class Aggregates:
    """Sums over each node's rated partners, from the partners' moments.

    For a node whose partners have design ``x = (f, 1)`` and offset ``o``
    (f the partner's factors, o its bias): ``A = sum E[x x^T]``,
    ``B = sum E[x o]``, ``h = sum r E[x] - B``, plus the sums of ``E[x]``,
    ``E[o]``, ``r E[o]`` and ``E[o^2]`` used by the ELBO and the noise and
    mean updates.
    """

    __slots__ = ("A", "B", "sx", "rx", "so", "ro", "soo")


def aggregate(side, other, partner_rows=None):
    """Aggregates of ``side``'s nodes from the partners' moments ``other``.

    ``other`` holds the moments of ``side.other_nodes`` in order or, with
    ``partner_rows`` (the row of ``other`` of each partner in
    ``side.other_nodes``), of any superset of them (every node of the
    partner side: no gathered copy).  The compiled kernel does it when it
    is built, :func:`aggregate_numpy` otherwise, with the same numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import SideMoments, aggregate, index_side
    >>> side = index_side(np.array([0, 0]), np.array([0, 1]), np.array([4.0, 2.0]))
    >>> m = np.array([[1.0, 0.5], [2.0, -0.5]])
    >>> other = SideMoments(m, m[:, :, None] * m[:, None, :], np.zeros((2, 2)), np.zeros(2))
    >>> agg = aggregate(side, other)
    >>> agg.A[0].tolist(), agg.rx[0].tolist()
    ([[5.0, 3.0], [3.0, 2.0]], [8.0, 6.0])
    """
    if _gaussian_fast is None:
        if partner_rows is not None:
            other = other.take(partner_rows)
        return aggregate_numpy(side, other)
    order = side.order
    partner = side.col[order]
    if partner_rows is not None:
        partner = partner_rows[partner]
    w = side.weights
    n, d = side.nodes.shape[0], other.mean.shape[1]
    agg = Aggregates()
    agg.A, agg.B = np.empty((n, d, d)), np.empty((n, d))
    agg.sx, agg.rx = np.empty((n, d)), np.empty((n, d))
    agg.so, agg.ro, agg.soo = np.empty(n), np.empty(n), np.empty(n)
    _gaussian_fast.aggregate_sorted(
        side.indptr,
        np.ascontiguousarray(partner, dtype=np.int64),
        np.ascontiguousarray(side.ratings[order], dtype=np.float64),
        np.empty(0) if w is None else np.ascontiguousarray(w[order], dtype=np.float64),
        np.ascontiguousarray(other.mean, dtype=np.float64),
        np.ascontiguousarray(other.second, dtype=np.float64),
        agg.A,
        agg.B,
        agg.sx,
        agg.rx,
        agg.so,
        agg.ro,
        agg.soo,
    )
    return agg


def inner_rows(S, rows, A):
    """``sum_i <S[rows[i]], A[i]>`` (compiled when built: no gathered copy of ``S``).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import inner_rows
    >>> S = np.stack([np.eye(2), 2.0 * np.eye(2)])
    >>> float(inner_rows(S, np.array([1, 1]), np.ones((2, 2, 2))))
    8.0
    """
    if _gaussian_fast is None:
        return float(np.einsum("nij,nij->", S[rows], A))
    return _gaussian_fast.inner_rows(
        np.ascontiguousarray(S, dtype=np.float64),
        np.ascontiguousarray(rows, dtype=np.int64),
        np.ascontiguousarray(A, dtype=np.float64),
    )


def aggregate_numpy(side, other):
    """numpy reference of :func:`aggregate` (``other``: the moments of ``side.other_nodes``).

    One sparse product gathers every partner quantity at once: the upper
    triangle of ``E[f f^T]``, ``E[f o]``, ``E[f]``, ``E[o]``, ``E[o^2]`` and
    a column of ones (the rating counts); a second one weights ``E[f]``,
    ``E[o]`` and ones by the ratings.  The rest of ``E[x x^T]`` is one of
    these (``x = (f, 1)``), so the (d x d) products are never formed.
    With rating weights (:func:`index_side`) every sum is weighted.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.nodes import SideMoments, aggregate_numpy, index_side
    >>> side = index_side(np.array([0, 0]), np.array([0, 1]), np.array([4.0, 2.0]))
    >>> m = np.array([[1.0, 0.5], [2.0, -0.5]])
    >>> other = SideMoments(m, m[:, :, None] * m[:, None, :], np.zeros((2, 2)), np.zeros(2))
    >>> aggregate_numpy(side, other).A[0].tolist()
    [[5.0, 3.0], [3.0, 2.0]]
    """
    m = other.mean
    S = other.second
    n, d = m.shape
    k = d - 1
    iu, ju = np.triu_indices(k)
    t = iu.shape[0]
    flat = S.reshape(n, d * d)
    cols = np.empty((n, t + 2 * k + 3))
    np.take(flat, iu * d + ju, axis=1, out=cols[:, :t])
    cols[:, t : t + k] = S[:, :k, k]
    cols[:, t + k : t + 2 * k + 1] = m
    cols[:, t + 2 * k + 1] = S[:, k, k]
    cols[:, t + 2 * k + 2] = 1.0
    sums = np.asarray(side.ones @ cols)
    rsums = np.asarray(side.values @ cols[:, t + k :])
    triu, exo, sm = sums[:, :t], sums[:, t : t + k], sums[:, t + k : t + 2 * k + 1]
    count = sums[:, t + 2 * k + 2]
    agg = Aggregates()
    A = np.empty((sums.shape[0], d * d))
    A[:, iu * d + ju] = triu
    A[:, ju * d + iu] = triu
    A = A.reshape(-1, d, d)
    A[:, :k, k] = sm[:, :k]
    A[:, k, :k] = sm[:, :k]
    A[:, k, k] = count
    agg.A = A
    agg.B = np.concatenate([exo, sm[:, k:]], axis=1)
    agg.sx = np.concatenate([sm[:, :k], count[:, None]], axis=1)
    agg.rx = np.concatenate([rsums[:, :k], rsums[:, -1:]], axis=1)
    agg.so = sm[:, k].copy()
    agg.ro = rsums[:, k].copy()
    agg.soo = sums[:, t + 2 * k + 1].copy()
    return agg


# The old name, for one release.
_RENAMED = {"Moments": "SideMoments"}


def __getattr__(name):
    return _renamed(__name__, _RENAMED, name)
