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
from ...expfam import _cholesky_logdet

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
            weights = np.concatenate([
                np.ones(p.shape[0]) if p.weights is None else p.weights for p in parts
            ])
        return cls(
            np.concatenate([p.users for p in parts]),
            np.concatenate([p.items for p in parts]),
            np.concatenate([p.ratings for p in parts]),
            weights,
        )


class BatchSide:
    """One side (users or items) of a prepared minibatch."""

    __slots__ = (
        "nodes", "counts", "ones", "values", "other_nodes", "row", "col", "ratings", "weights",
    )

    def __init__(self, nodes, counts, ones, values, other_nodes, row, col, ratings, weights=None):
        self.nodes = nodes  # distinct node ids of this side in the batch
        # Ratings per node in the batch (C_i), not weighted: the engine's
        # N_i are counts of ratings, and N_i / C_i scales weighted sums.
        self.counts = counts
        self.ones = ones  # CSR indicator (weights), nodes x other_nodes
        self.values = values  # CSR ratings (times their weights), nodes x other_nodes
        self.other_nodes = other_nodes
        # Per rating: its node's position in ``nodes``, its partner's in
        # ``other_nodes``, the rating and its weight or None (the
        # non-conjugate statistics are not sums over the CSR matrices).
        self.row = row
        self.col = col
        self.ratings = ratings
        self.weights = weights


def index_side(nodes_of, partners_of, ratings, weights=None):
    """CSR indicator and rating matrices of one side of a minibatch.

    With ``weights`` the indicator holds each rating's weight and the rating
    matrix the weighted ratings, so every sum over them (:func:`aggregate`)
    counts a rating of weight 2 twice, and so does ``counts``, the
    ratings per node (``C_i`` of the engine's ``N_i / C_i``).
    """
    nodes, inv = np.unique(nodes_of, return_inverse=True)
    partners, inv_p = np.unique(partners_of, return_inverse=True)
    shape = (nodes.shape[0], partners.shape[0])
    if weights is None:
        ind = sp.csr_matrix((np.ones(ratings.shape[0]), (inv, inv_p)), shape=shape)
        val = sp.csr_matrix((ratings, (inv, inv_p)), shape=shape)
    else:
        ind = sp.csr_matrix((weights, (inv, inv_p)), shape=shape)
        val = sp.csr_matrix((weights * ratings, (inv, inv_p)), shape=shape)
    counts = np.bincount(inv, weights=weights, minlength=shape[0]).astype(float)
    return BatchSide(nodes, counts, ind, val, partners, inv, inv_p, ratings, weights)


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


class Moments:
    """Mean and second moment of every node of one side.

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
        return Moments(self.mean[rows], self.second[rows], self.var[rows], self.logdet[rows])


def moments_full(eta1, eta2):
    """Moments of full-covariance nodes; NaN rows where not positive definite."""
    if _gaussian_fast is not None:
        eta1 = np.ascontiguousarray(eta1, dtype=np.float64)
        eta2 = np.ascontiguousarray(eta2, dtype=np.float64)
        n, d = eta1.shape
        out = Moments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty(n))
        _gaussian_fast.moments_from_natural(eta1, eta2, out.mean, out.second, out.var, out.logdet)
        return out
    return moments_full_numpy(eta1, eta2)


def moments_full_numpy(eta1, eta2):
    """numpy reference of :func:`moments_full` (raises if not positive definite)."""
    precision = -2.0 * eta2
    chol = np.linalg.cholesky(precision)
    eye = np.broadcast_to(np.eye(eta1.shape[-1]), precision.shape)
    chol_inv = np.linalg.solve(chol, eye)
    cov = np.swapaxes(chol_inv, -1, -2) @ chol_inv
    mean = (cov @ eta1[..., None])[..., 0]
    second = cov + mean[..., :, None] * mean[..., None, :]
    logdet = _cholesky_logdet(chol)
    return Moments(mean, second, np.diagonal(cov, axis1=-2, axis2=-1).copy(), logdet)


def moments_diag(eta1, eta2):
    precision = -2.0 * eta2
    mean = eta1 / precision
    var = 1.0 / precision
    second = mean[..., :, None] * mean[..., None, :]
    idx = np.arange(mean.shape[-1])
    second[..., idx, idx] += var
    return Moments(mean, second, var, np.sum(np.log(precision), axis=-1))


class Aggregates:
    """Sums over each node's rated partners, from the partners' moments.

    For a node whose partners have design ``x = (f, 1)`` and offset ``o``
    (f the partner's factors, o its bias): ``A = sum E[x x^T]``,
    ``B = sum E[x o]``, ``h = sum r E[x] - B``, plus the sums of ``E[x]``,
    ``E[o]``, ``r E[o]`` and ``E[o^2]`` used by the ELBO and the noise and
    mean updates.
    """

    __slots__ = ("A", "B", "sx", "rx", "so", "ro", "soo")


def aggregate(side, other):
    """Aggregates of ``side``'s nodes from the partners' moments ``other``.

    One sparse product gathers every partner quantity at once: the upper
    triangle of ``E[f f^T]``, ``E[f o]``, ``E[f]``, ``E[o]``, ``E[o^2]`` and
    a column of ones (the rating counts); a second one weights ``E[f]``,
    ``E[o]`` and ones by the ratings.  The rest of ``E[x x^T]`` is one of
    these (``x = (f, 1)``), so the (d x d) products are never formed.
    With rating weights (:func:`index_side`) every sum is weighted.
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
