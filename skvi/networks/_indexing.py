"""Deterministic nodes that pick, gate and add: BayesPy's ``Take``, ``Gate`` and ``Add``.

``Take`` picks plate elements of a node by index (the users and items of
each rating in a matrix factorisation), ``Gate`` picks them by a
categorical variable (the topic of each word in latent Dirichlet
allocation), ``Add`` sums independent Gaussian nodes.  Each computes its
moments from its parents' and passes its children's summed messages on,
as :class:`SumMultiply` does.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from . import _picked
from ._deterministic import _CachedMoments
from ._moments import MomentsKind, _require
from ._node import Constant, Node, _as_parent, _children_total
from ._plates import NetworkError, broadcast_plates, sum_to_plates


def _label(kind, name):
    return f"{kind} '{name}'" if name else f"{kind} (unnamed)"


def _negative_axis(label, value, arg):
    """``value`` as a negative plate axis, or a NetworkError naming ``arg``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value >= 0:
        raise NetworkError(f"{label}: {arg} must be a negative integer plate axis, got {value!r}")
    return int(value)


def _times(a, b):
    """``sum_k a[..., k] b[..., k, d]``, leading axes broadcast (one matrix product if b has none)."""
    if b.ndim == 2:
        return (a.reshape((-1, a.shape[-1])) @ b).reshape(a.shape[:-1] + b.shape[-1:])
    return (a[..., None, :] @ b)[..., 0, :]


def _plates_multiplier(owner, given, parents, plates):
    """Set ``owner``'s plates multiplier (BayesPy's): given, or its parents'; 1 for none.

    A node whose plates stand for ``m`` times as many elements (a minibatch
    of a larger data set) counts each element ``m`` times: in its bound term
    and in its messages to parents that do not have the multiplier, as the
    rows' weights of :class:`SVIBayesianNetwork` do.
    """
    if given is None:
        found = {float(getattr(p, "_plates_multiplier", 1.0)) for p in parents}
        found.discard(1.0)
        if len(found) > 1:
            raise NetworkError(
                f"{owner.describe()}: the parents' plates multipliers {sorted(found)} differ"
            )
        m = found.pop() if found else 1.0
    else:
        m = np.asarray(given, dtype=np.float64)
        if m.ndim > 1 or not np.all(np.isfinite(m)) or np.any(m <= 0):
            raise NetworkError(
                f"{owner.describe()}: plates_multiplier must be a tuple of positive numbers, "
                f"got {given!r}"
            )
        m = float(np.prod(m))
    if m != 1.0:
        owner._plates_multiplier = m
        owner._row_weight = np.full(plates, m)


class _Cached(_CachedMoments):
    """A picking or summing node: cached moments, and the children's messages to pass on."""

    def update(self):
        """Nothing to update: the moments follow the parents."""

    def _incoming(self, parent):
        """The children's summed messages (zeros without children), weighted for ``parent``."""
        total = _children_total(self)
        if total is None:
            total = [np.zeros(()) for _ in self.dims]
        w = self._weights_to(parent)
        out = []
        for m, d in zip(total, self.dims):
            m = np.broadcast_to(m, self.plates + d)
            if w is not None:
                m = m * w.reshape(w.shape + (1,) * len(d))
            out.append(m)
        return out


class _IndexMoments(MomentsKind):
    """Indices into a plate axis of ``length`` elements, as a fixed parent of :class:`Take`."""

    def __init__(self, length, where=""):
        super().__init__("index", ((),), f"index into {length} elements", size=length)
        self.where = where

    def fixed(self, x):
        x = np.asarray(x)
        L = self.size
        if x.size and x.dtype.kind in "fiu":
            # Whole numbers in [0, L) (a block's column of ids): one cast and two tests.
            with np.errstate(invalid="ignore"):
                idx = x.astype(np.intp)
                if (x.dtype.kind != "f" or np.array_equal(idx, x)) and 0 <= idx.min() < L:
                    if idx.max() < L:
                        return [idx]
        if x.dtype == bool:
            x = x.astype(np.intp)
        if x.size and not np.issubdtype(x.dtype, np.integer):
            with np.errstate(invalid="ignore"):
                whole = np.isfinite(x) & (x == np.round(x))
            _require(whole, x, "an integer index")
        with np.errstate(invalid="ignore"):
            idx = np.where(np.isfinite(x), x, 0).astype(np.intp) if x.size else x.astype(np.intp)
        _require((idx >= -L) & (idx < L), x, f"in [-{L}, {L}) ({self.where})")
        return [np.where(idx < 0, idx + L, idx)]


class Take(_Cached):
    """Plate elements of a node picked by index: BayesPy's ``Take(node, indices)``.

    As ``numpy.take`` along a plate axis: the node's plate axis
    ``plate_axis`` is replaced by the axes of ``indices``, and element ``i``
    of those is the node's element ``indices[i]``.  The moments are the
    picked moments; a message to the node adds up the messages of every
    element that picked the same one.  The users' and items' factors of
    each rating in a matrix factorisation, say.

    Parameters
    ----------
    node : Node
        The node whose plate elements are picked (any family).
    indices : array-like of int
        The picked elements, in ``[-L, L)`` for the axis's length ``L``.
    plate_axis : int, default=-1
        The plate axis they pick along (negative).
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Gamma, Take
    >>> alpha = Gamma([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    >>> x = Take(alpha, [1, 1, 2, 2, 1, 0])
    >>> x.plates, x.get_moments()[0]
    ((6,), array([2., 2., 3., 3., 2., 1.]))
    """

    #: Marks the picking nodes that a sum of products may see through.
    _picks = True

    def __init__(self, node, indices, plate_axis=-1, name=""):
        label = _label("Take", name)
        if not isinstance(node, Node):
            raise NetworkError(f"{label}: node must be a node of the network, got {node!r}")
        axis = _negative_axis(label, plate_axis, "plate_axis")
        if -axis > len(node.plates):
            raise NetworkError(
                f"{label}: plate_axis={axis} is not a plate axis of {node.describe()}, "
                f"whose plates are {node.plates}"
            )
        idx = np.asarray(indices)
        if idx.size == 0 and idx.dtype.kind == "f":
            idx = idx.astype(np.intp)
        if idx.dtype == bool or not np.issubdtype(idx.dtype, np.integer):
            raise NetworkError(f"{label}: indices must be integers, got an array of {idx.dtype}")
        L = node.plates[axis]
        kind = _IndexMoments(L, f"plate axis {axis} of {node.describe()} has {L} elements")
        try:
            # A fixed parent, so that a network's rows can bring their own
            # indices (SVIBayesianNetwork feeds each block's into it).
            const = Constant(kind, idx, name="indices")
        except NetworkError as err:
            raise NetworkError(f"{label}: {err}") from None
        self._axis = axis
        self._length = L
        pos = len(node.plates) + axis
        self._pos = pos
        plates = node.plates[:pos] + idx.shape + node.plates[pos + 1 :]
        self.name = name
        super().__init__(node._kind, plates, name)
        self.parents = [node, const]
        node.children.append((self, 0))
        const.children.append((self, 1))
        # The summing matrix of the indices, shared by the node's copies.
        self._store = _picked.Store()

    @property
    def _indices(self):
        return np.asarray(self.parents[1].u[0], dtype=np.intp)

    def _compute(self, up):
        parent = self.parents[0]
        flat = up[1][0].astype(np.intp).ravel()
        out = []
        for ui, d in zip(up[0], self.dims):
            ui = np.broadcast_to(ui, parent.plates + d)
            picked = np.take(ui, flat, axis=self._pos)
            out.append(picked.reshape(self.plates + d))
        return out

    def _summing(self, idx):
        """The sparse ``(L, n)`` matrix with a one at ``(idx[j], j)``: it sums picked elements back.

        Its rows list each element's picks in their order, so that a product
        adds them as ``numpy.add.at`` does, one after another.
        """

        flat = idx.reshape(-1)

        def make():
            order = np.argsort(flat, kind="stable")
            indptr = np.zeros(self._length + 1, dtype=np.intp)
            np.cumsum(np.bincount(flat, minlength=self._length), out=indptr[1:])
            S = sp.csr_matrix((np.ones(flat.size), order, indptr), shape=(self._length, flat.size))
            return [idx, flat.copy(), S]

        def same(kept):
            if kept[0] is idx:
                return True
            found = kept[1].shape == flat.shape and np.array_equal(kept[1], flat)
            if found:
                kept[0] = idx  # the array last found equal: the same object needs no comparison
            return found

        return _picked.stored(self, "summing", same, make)[2]

    def _put(self, m, nd):
        """The inverse of the pick, adding up repeats: ``m`` over the node's plates."""
        parent = self.parents[0]
        idx = self._indices
        pos = self._pos
        shape = m.shape
        m = m.reshape(shape[:pos] + (-1,) + shape[pos + idx.ndim :])
        moved = np.moveaxis(m, pos, 0)
        flat = moved.reshape(moved.shape[0], -1)
        out = np.asarray(self._summing(idx) @ flat).reshape((self._length,) + moved.shape[1:])
        out = np.moveaxis(out, 0, pos)
        full = parent.plates[:pos] + (self._length,) + parent.plates[pos + 1 :]
        return sum_to_plates(out, parent.plates, nd, full)

    def _mask_to_parent(self, index):
        m = self._mask
        if m is None:
            return None
        return self._put(np.broadcast_to(m, self.plates).astype(np.float64), 0) > 0

    def _through_children(self):
        """The children's messages summed per picked element by the children themselves, or None.

        A sum of products of two picked nodes sends its message to the node
        picked from without the per-row messages (``_picked``), the rows
        weighted by this node's weights; None unless every child can.
        """
        if not self.children:
            return None
        through = [getattr(c, "_message_through_take", None) for c, _ in self.children]
        if not all(through):
            return None
        w = self._weights_to(self.parents[0])
        total = None
        for send, (_, slot) in zip(through, self.children):
            m = send(slot, w)
            if m is None:
                return None
            total = m if total is None else [a + b for a, b in zip(total, m)]
        return total

    def _message_to_parent(self, index):
        parent = self.parents[index]
        if index == 1:
            return [np.zeros(())]  # the indices are fixed
        through = self._through_children()
        if through is not None:
            return through
        return [self._put(m, len(d)) for m, d in zip(self._incoming(parent), self.dims)]


class Gate(_Cached):
    """A node's plate element chosen by a categorical variable: BayesPy's ``Gate(Z, X)``.

    ``X``'s plate axis ``gated_plate`` (of length ``K``) runs over
    ``Z``'s ``K`` categories; the gate's moments are ``sum_k E[z_k] u_k``
    of ``X``'s elements ``u_k``, its plates ``Z``'s broadcast with ``X``'s
    other plates.  It is the parent of a node whose parameter is ``X``'s
    element ``z``: in latent Dirichlet allocation the word distribution of
    each word's topic.  A message to ``Z`` holds each category's term of
    the children's expected log density, one to ``X`` the children's
    messages weighted by ``E[z_k]``.  As in BayesPy, ``Z`` must not reach
    the gate's children by another path without a stochastic node between.

    Parameters
    ----------
    Z : node or array-like of int
        A :class:`Categorical` node (or fixed categories) over ``K``
        categories.
    X : node or array-like
        The gated node; an array needs ``moments`` (its kind).
    gated_plate : int, default=-1
        The plate axis of ``X`` gated (negative).
    moments : MomentsKind or None, default=None
        The kind of ``X``'s moments, when ``X`` is an array
        (:class:`CategoricalMoments`, say).
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Categorical, Dirichlet, Gate
    >>> p = Dirichlet([[9.0, 1.0], [1.0, 9.0]])          # two distributions
    >>> z = Categorical([0.5, 0.5], plates=(3,))
    >>> x = Categorical(Gate(z, p))                       # x ~ p[z]
    >>> x.plates, np.round(x.get_moments()[0][0], 4)
    ((3,), array([0.5, 0.5]))
    """

    def __init__(self, Z, X, gated_plate=-1, moments=None, name=""):
        label = _label("Gate", name)
        axis = _negative_axis(label, gated_plate, "gated_plate")
        if not isinstance(X, Node):
            if not isinstance(moments, MomentsKind):
                raise NetworkError(
                    f"{label}: X must be a node, or an array with its moments given "
                    f"(moments=...), got {type(X).__name__}"
                )
            X = _as_parent(label, "X", X, moments)
        elif moments is not None and moments != X._kind:
            raise NetworkError(
                f"{label}: X is {X.describe()} with {X._kind.describe} moments, "
                f"not the {getattr(moments, 'describe', moments)} moments given"
            )
        if -axis > len(X.plates):
            raise NetworkError(
                f"{label}: X is {X.describe()} with plates {X.plates}: no plate axis {axis} to gate"
            )
        K = X.plates[axis]
        if isinstance(Z, Node) and Z._kind.name != "categorical":
            raise NetworkError(
                f"{label}: Z is {Z.describe()}, but a gate's Z must be a Categorical "
                "node (or categories)"
            )
        Z = _as_parent(label, "Z", Z, MomentsKind.categorical(K))
        pos = len(X.plates) + axis
        others = X.plates[:pos] + X.plates[pos + 1 :]
        self.name = name
        plates = broadcast_plates(label, Z.plates, others)
        super().__init__(X._kind, plates, name)
        self.K = K
        self._gated = axis
        self.parents = [Z, X]
        Z.children.append((self, 0))
        X.children.append((self, 1))
        _plates_multiplier(self, None, self.parents, self.plates)

    def _x_flat(self, u, d):
        """X's moment ``u`` with the gated axis last among the plates, dims flattened."""
        X = self.parents[1]
        u = np.broadcast_to(u, X.plates + d)
        pos = len(X.plates) + self._gated
        u = np.moveaxis(u, pos, len(X.plates) - 1)
        return u.reshape(u.shape[: len(X.plates)] + (-1,))

    def _compute(self, up):
        z = up[0][0]
        out = []
        for ui, d in zip(up[1], self.dims):
            x = self._x_flat(ui, d)
            u = _times(z, x)
            out.append(np.broadcast_to(u, self.plates + (u.shape[-1],)).reshape(self.plates + d))
        return out

    def _plates_to_parent(self, index):
        if index == 0:
            return self.plates
        pos = len(self.plates) + self._gated + 1
        return self.plates[:pos] + (self.K,) + self.plates[pos:]

    def _mask_to_parent(self, index):
        m = self._mask
        if m is None or index == 0:
            return super()._mask_to_parent(index)
        m = np.broadcast_to(m, self.plates)
        pos = len(self.plates) + self._gated + 1
        full = self._plates_to_parent(1)
        m = np.broadcast_to(np.expand_dims(m, pos), full)
        return sum_to_plates(m, self.parents[1].plates, 0, full) > 0

    def _message_to_parent(self, index):
        Z, X = self.parents
        incoming = self._incoming(Z if index == 0 else X)
        if index == 0:
            up = X.u
            m0 = 0.0
            for m, ui, d in zip(incoming, up, self.dims):
                mf = m.reshape(self.plates + (-1,))
                m0 = m0 + _times(mf, np.swapaxes(self._x_flat(ui, d), -1, -2))
            m0 = np.broadcast_to(m0, self.plates + (self.K,))
            return [sum_to_plates(m0, Z.plates, 1, self.plates)]
        z = np.broadcast_to(Z.u[0], self.plates + (self.K,))
        full = self._plates_to_parent(1)
        pos = len(self.plates) + self._gated + 1
        out = []
        for m, d in zip(incoming, self.dims):
            mf = m.reshape(self.plates + (-1,))
            if len(X.plates) == 1:
                # X has the gated axis only: one matrix product over the plates.
                mi = z.reshape((-1, self.K)).T @ mf.reshape((-1, mf.shape[-1]))
                out.append(mi.reshape((self.K,) + d))
                continue
            mi = np.einsum("...k,...d->...kd", z, mf)
            mi = np.moveaxis(mi, -2, pos).reshape(full + d)
            out.append(sum_to_plates(mi, X.plates, len(d), full))
        return out


class Add(_Cached):
    """The sum of independent Gaussian nodes: BayesPy's ``Add(X1, X2, ...)``.

    The nodes (or arrays) have one shape; their plates broadcast.  The
    moments are those of a sum of independent variables, ``E[sum x_i]``
    and ``sum_i E[x_i x_i^T] + sum_{i != j} E[x_i] E[x_j]^T``; a message to
    ``x_i`` is the children's message with the others' means moved into
    its linear part.  As BayesPy notes, one Gaussian node and a
    :class:`SumMultiply` keep the correlation of the summed variables in
    the posterior that the sum of separate nodes loses.

    Parameters
    ----------
    *nodes : node or array-like
        At least two Gaussian nodes or arrays of one shape, distinct nodes.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Add, Gaussian
    >>> X = Gaussian(np.zeros(2), np.identity(2), plates=(3,))
    >>> Y = Gaussian(np.ones(2), np.identity(2))
    >>> Z = Add(X, Y)
    >>> Z.get_moments()[0][0], Z.get_moments()[1][0]
    (array([1., 1.]), array([[3., 1.],
           [1., 3.]]))
    """

    def __init__(self, *nodes, name=""):
        label = _label("Add", name)
        if len(nodes) < 2:
            raise NetworkError(f"{label}: give at least two nodes to add, got {len(nodes)}")
        shape = None
        for i, n in enumerate(nodes):
            if isinstance(n, Node):
                if n._kind.name != "gaussian":
                    raise NetworkError(
                        f"{label}: operand {i} is {n.describe()} with {n._kind.describe} "
                        "moments, but Add sums Gaussian nodes"
                    )
                shape = n._kind.dims[0] if shape is None else shape
        if shape is None:
            raise NetworkError(f"{label}: at least one operand must be a Gaussian node")
        parents = [
            _as_parent(label, f"operand {i}", n, MomentsKind.gaussian(shape))
            for i, n in enumerate(nodes)
        ]
        ids = [id(n) for n in nodes if isinstance(n, Node)]
        if len(set(ids)) != len(ids):
            raise NetworkError(
                f"{label}: a node is an operand twice; the terms of a sum must be independent nodes"
            )
        self.name = name
        plates = broadcast_plates(label, *[p.plates for p in parents])
        super().__init__(MomentsKind.gaussian(shape), plates, name)
        self.shape = shape
        self.parents = parents
        for i, p in enumerate(parents):
            p.children.append((self, i))

    def _flat_mean(self, m):
        return np.asarray(m).reshape(np.shape(m)[: np.ndim(m) - len(self.shape)] + (-1,))

    def _compute(self, up):
        D = int(np.prod(self.shape))
        means = [self._flat_mean(u[0]) for u in up]
        total = sum(means)
        second = sum(
            np.asarray(u[1]).reshape(np.shape(u[1])[: np.ndim(u[1]) - 2 * len(self.shape)] + (D, D))
            for u in up
        )
        # E[(sum x)(sum x)^T] = sum_i E[x_i x_i^T] + sum_{i != j} m_i m_j^T: the
        # cross terms of independent variables, each pair written out (no
        # difference of large numbers).
        for i, mi in enumerate(means):
            for mj in means[i + 1 :]:
                cross = mi[..., :, None] * mj[..., None, :]
                second = second + cross + np.swapaxes(cross, -1, -2)
        plates = total.shape[:-1]
        return [
            np.broadcast_to(total.reshape(plates + self.shape), self.plates + self.shape),
            np.broadcast_to(second, self.plates + (D, D)).reshape(
                self.plates + self.shape + self.shape
            ),
        ]

    def _message_to_parent(self, index):
        parent = self.parents[index]
        m0, m1 = self._incoming(parent)
        D = int(np.prod(self.shape))
        others = [self._flat_mean(p.u[0]) for j, p in enumerate(self.parents) if j != index]
        rest = np.broadcast_to(sum(others), self.plates + (D,))
        M = m1.reshape(self.plates + (D, D))
        if D == 1:  # scalars (a rating's terms): no batched matrices
            lin = m0.reshape(self.plates + (1,)) + 2.0 * M[..., 0] * rest
        else:
            lin = m0.reshape(self.plates + (D,)) + np.einsum(
                "...ij,...j->...i", M + np.swapaxes(M, -1, -2), rest
            )
        nd = len(self.shape)
        return [
            sum_to_plates(lin.reshape(self.plates + self.shape), parent.plates, nd, self.plates),
            sum_to_plates(m1, parent.plates, 2 * nd, self.plates),
        ]
