"""Sums of products of picked factors: the user's and the item's factors of each rating.

``SumMultiply('d,d', Take(U, users), Take(V, items))`` is the mean of a
matrix factorisation: per rating, the inner product of two picked
factors.  Through the picked nodes, its second moment and its messages
each pass one array of ``n_ratings x D x D`` numbers (the picked second
moments; the messages to them, before they are summed per user).  Here
neither is formed:

- the moments are sums over each row's pair of factors' own moments,
  ``E[f] = E[u] . E[v]`` and ``E[f^2] = sum_kl E[u u^T]_kl E[v v^T]_kl``,
  the symmetric second moments packed (each pair ``k <= l`` once): a
  compiled loop over the rows that reads both factors' rows in place
  (``_picked_fast``); without it, when the users times the items are not
  many more than the rows, by blocks of matrix products over every
  (user, item) pair of a block of users, else by blocks of picked rows;
- a message to the users' factors is a sparse matrix product,
  ``S(m) E[v v^T]``, with ``S(m)`` the users-by-items matrix of the
  children's messages ``m`` of the rows (summed over repeated pairs): the
  compiled loop reads the messages in place, scipy's product without it.

The row structure (the order of the rows by user and by item) depends on
the indices alone: it is kept in a store that every copy of the declared
node shares, and used again while the indices are the same.
"""

import numpy as np
import scipy.sparse as sp

try:
    from . import _picked_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _picked_fast = None

#: Rows per block of the row-by-row sums (their picked factors stay in cache).
ROW_BLOCK = 1024
#: Users times items per block of the pairwise products.
PAIR_BLOCK = 1 << 19
#: The pairwise products are used when the users times the items are at
#: most this many times the rows: a matrix product per pair is much
#: cheaper than a pick per row.
DENSE_RATIO = 32


class Store(dict):
    """Structures of a node's indices, shared by every copy of the node and never pickled.

    A copy of a node (each block's network is one) shares its parent's
    store; a pickled node, or a deep copy, starts an empty one.
    """

    def __reduce__(self):
        return (Store, ())


def stored(node, name, valid, make):
    """``node``'s stored structure ``name`` if ``valid(it)``, else a new one from ``make()``."""
    store = node.__dict__.get("_store")
    if store is None:
        store = node.__dict__["_store"] = Store()
    found = store.get(name)
    if found is None or not valid(found):
        found = store[name] = make()
    return found


def picked_pair(node):
    """The two picked operands of sum of products ``node``, when it can skip their moments.

    Two :class:`~skvi.networks.Take` operands of the node's one plate axis,
    each picking along the one plate axis of a Gaussian node, the same keys
    in both and a scalar output: an inner product per row.  None otherwise.
    """
    if len(node.parents) != 2 or node._out or not node._planned:
        return None
    a, b = node.parents
    if sorted(node._keys[0]) != sorted(node._keys[1]) or len(node.plates) != 1:
        return None
    for t in (a, b):
        if not getattr(t, "_picks", False) or t.plates != node.plates or t._pos != 0:
            return None
        if len(t.parents[0].plates) != 1 or t._kind.name != "gaussian":
            return None
    return a, b


def sources(pair):
    """The nodes the pair's moments are computed from: each picked node and its indices."""
    a, b = pair
    return [a.parents[0], a.parents[1], b.parents[0], b.parents[1]]


def _indices(u):
    # The fixed parent's array itself where it can be: the stores know it by sight.
    idx = np.asarray(u[0], dtype=np.intp)
    return idx if idx.ndim == 1 else idx.reshape(-1)


class _Rows:
    """The order of the rows by the first operand's index and by the second's, for given indices."""

    def __init__(self, ia, ib, la, lb):
        self.ia, self.ib, self.la, self.lb = ia.copy(), ib.copy(), la, lb
        self.seen = (ia, ib)  # the arrays last found equal: the same objects need no comparison
        small = max(la, lb) < 2**31 and ia.size < 2**31
        itype = np.int32 if small else np.intp
        self.by = []
        for rows, cols, n_rows in ((ia, ib, la), (ib, ia, lb)):
            order = np.argsort(rows, kind="stable")
            indptr = np.zeros(n_rows + 1, dtype=itype)
            np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
            self.by.append((order, cols[order].astype(itype), indptr))
        if _picked_fast is not None:
            # The compiled row-wise sums read the rows in the first operand's order.
            order = self.by[0][0]
            self.sorted = (ia[order].astype(np.intp), ib[order].astype(np.intp), order)
            self.by_intp = [tuple(a.astype(np.intp) for a in by) for by in self.by]
        self.dense = la * lb <= DENSE_RATIO * max(ia.size, 1)
        if self.dense and _picked_fast is None:
            # Blocks of the first operand's elements, each with its rows and
            # their places among the block's (first, second) pairs.
            order, _, indptr = self.by[0]
            step = max(1, PAIR_BLOCK // max(lb, 1))
            self.blocks = []
            for lo in range(0, la, step):
                hi = min(la, lo + step)
                rows = order[indptr[lo] : indptr[hi]]
                self.blocks.append((lo, hi, rows, (ia[rows] - lo) * lb + ib[rows]))

    def same(self, ia, ib, la, lb):
        if self.seen[0] is ia and self.seen[1] is ib and (self.la, self.lb) == (la, lb):
            return True
        found = (
            (self.la, self.lb) == (la, lb)
            and self.ia.shape == ia.shape
            and self.ib.shape == ib.shape
            and np.array_equal(self.ia, ia)
            and np.array_equal(self.ib, ib)
        )
        if found:
            self.seen = (ia, ib)
        return found

    def rowwise(self, ta, tb):
        """``sum_j ta[ia[n], j] tb[ib[n], j]`` for every row ``n``."""
        out = np.empty(self.ia.size)
        if _picked_fast is not None:
            ia, ib, order = self.sorted
            ta = np.ascontiguousarray(ta, dtype=np.float64)
            tb = np.ascontiguousarray(tb, dtype=np.float64)
            _picked_fast.rowwise(ta, tb, ia, ib, order, out)
            return out
        if self.dense:
            for lo, hi, rows, flat in self.blocks:
                out[rows] = (ta[lo:hi] @ tb.T).ravel().take(flat)
            return out
        for s in range(0, self.ia.size, ROW_BLOCK):
            e = s + ROW_BLOCK
            np.einsum("ij,ij->i", ta[self.ia[s:e]], tb[self.ib[s:e]], out=out[s:e])
        return out

    def summed(self, side, m, table):
        """``sum_n [i_side[n] = l] m[n] table[i_other[n]]`` for every element ``l`` of the side."""
        shape = (self.la, self.lb) if side == 0 else (self.lb, self.la)
        if _picked_fast is not None:
            order, cols, indptr = self.by_intp[side]
            out = np.empty((shape[0], table.shape[1]))
            m = np.ascontiguousarray(np.broadcast_to(m, self.ia.shape), dtype=np.float64)
            table = np.ascontiguousarray(table, dtype=np.float64)
            _picked_fast.summed(indptr, cols, order, m, table, out)
            return out
        order, cols, indptr = self.by[side]
        data = np.broadcast_to(m, self.ia.shape).take(order)
        S = sp.csr_matrix((data, cols, indptr), shape=shape)
        return np.asarray(S @ table)


def _rows(node, ia, ib, la, lb):
    """The rows' structure for these indices (kept while they are the same)."""
    return stored(
        node, "pair_rows", lambda r: r.same(ia, ib, la, lb), lambda: _Rows(ia, ib, la, lb)
    )


def _order(node):
    """The axes that put the second operand's keys in the first's order."""
    ka, kb = node._keys
    return [kb.index(c) for c in ka]


def _table(u, length, dims, order=None):
    """A picked node's moment ``u`` as (elements, values), its keyed axes in ``order``."""
    u = np.broadcast_to(u, (length,) + dims)
    if order is not None and order != sorted(order):
        u = np.transpose(u, [0] + [1 + a for a in order])
    return u.reshape(length, -1)


def _packing(K):
    """The flat places of each pair ``k <= l`` and ``l >= k`` of a ``K x K`` matrix, and back."""
    r, c = np.triu_indices(K)
    back = np.empty((K, K), dtype=np.intp)
    back[r, c] = back[c, r] = np.arange(r.size)
    return r * K + c, c * K + r, np.where(r == c, 0.5, 1.0), back.reshape(-1)


_PACKINGS = {}


def _packed(t, K, weight):
    """Flattened symmetric ``K x K`` matrices (rows of ``t``) with each pair ``k <= l`` once.

    ``weight``: the off-diagonal pairs hold ``M_kl + M_lk`` (else their mean),
    so that the row-wise sum of products of a weighted and an unweighted
    packing is ``sum_kl A_kl B_kl`` of symmetric matrices.
    """
    packing = _PACKINGS.get(K)
    if packing is None:
        packing = _PACKINGS[K] = _packing(K)
    upper, lower, half, _ = packing
    t = t.reshape(t.shape[0], K * K)
    both = t.take(upper, axis=1)
    both += t.take(lower, axis=1)
    both *= half if weight else 0.5
    return both


def _unpacked(packed, K):
    """The symmetric ``K x K`` matrices of packed rows (each pair ``k <= l`` once)."""
    packing = _PACKINGS.get(K)
    if packing is None:
        packing = _PACKINGS[K] = _packing(K)
    return packed.take(packing[3], axis=1).reshape(packed.shape[0], K, K)


def pair_moments(node, key):
    """The moments ``[E f, E f^2]`` of a pair's row-wise inner products, from the sources' ``key``."""
    (ua, ia), (ub, ib) = (key[0], key[1]), (key[2], key[3])
    a, b = node.parents
    la, lb = a.parents[0].plates[0], b.parents[0].plates[0]
    rows = _rows(node, _indices(ia), _indices(ib), la, lb)
    (a0, a1), (b0, b1) = a.dims, b.dims
    order = _order(node)
    twice = order + [len(order) + j for j in order]
    mean = rows.rowwise(_table(ua[0], la, a0), _table(ub[0], lb, b0, order))
    K = int(np.prod(a0))
    second = rows.rowwise(
        _packed(_table(ua[1], la, a1), K, True), _packed(_table(ub[1], lb, b1, twice), K, False)
    )
    return [mean, second]


def pair_message(node, index, total):
    """The message to operand ``index``'s picked node, summed per element: ``[S(m0) E v, S(m1) E vv]``."""
    a, b = node.parents
    take, other = node.parents[index], node.parents[1 - index]
    ia, ib = _indices(a.parents[1].u), _indices(b.parents[1].u)
    la, lb = a.parents[0].plates[0], b.parents[0].plates[0]
    rows = _rows(node, ia, ib, la, lb)
    d0, d1 = take.dims
    order = _order(node)
    if index == 1:  # the first operand's keys, in the second's order
        order = [order.index(j) for j in range(len(order))]
    twice = order + [len(order) + j for j in order]
    length = take.parents[0].plates[0]
    out = []
    for k, (d, axes) in enumerate(((d0, order), (d1, twice))):
        u = other.parents[0].u[k]
        table = _table(u, other.parents[0].plates[0], other.dims[k], axes)
        m = np.zeros(()) if total is None else np.asarray(total[k], dtype=np.float64)
        if k == 0:
            out.append(rows.summed(index, m, table).reshape((length,) + d))
            continue
        # Sums of symmetric second moments: each pair k <= l once.
        K = int(np.prod(d0))
        packed = rows.summed(index, m, _packed(table, K, False))
        out.append(_unpacked(packed, K).reshape((length,) + d))
    return out
