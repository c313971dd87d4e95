"""Deterministic nodes: sums of products of Gaussian nodes, and views of a node's axes."""

import numpy as np

from . import _picked
from ._contract import MAX_LABELS, contract
from ._moments import FixedGaussianMoments, MomentsKind
from ._node import _CLOCK, Node, _as_parent, _children_total, _ready_parents
from ._plates import NetworkError, broadcast_plates, sum_to_plates


class _AxesAsPlates(Node):
    """A Gaussian node's leading ``k`` variable axes seen as plates (BayesPy's ``ndim`` of a mean).

    The moments of independent elements: the mean as it is, and the second
    moment's diagonal over the axes turned into plates; a message to the
    node puts the children's second-moment message on that diagonal.
    """

    def __init__(self, node, k):
        dims = node._kind.dims[0]
        super().__init__(
            MomentsKind.gaussian(dims[k:]),
            node.plates + dims[:k],
            node.name and f"{node.name}[axes as plates]",
        )
        self.parents = [node]
        node.children.append((self, 0))
        a = "abcdefgh"[:k]
        b = "ijklmnop"[: len(dims) - k]
        self._a, self._b = a, b
        self._sizes = dims[:k]

    @property
    def u(self):
        a, b = self._a, self._b
        u0, u1 = self.parents[0].u
        return [u0, np.einsum(f"...{a}{b}{a}{b.upper()}->...{a}{b}{b.upper()}", u1)]

    def update(self):
        """Nothing to update: the moments are the node's."""

    def _mask_to_parent(self, index):
        m = self._mask
        if m is None:
            return None
        k = len(self._sizes)
        return m.reshape(m.shape[: m.ndim - k] + (-1,)).any(axis=-1)

    def _message_to_parent(self, index):
        d0, d1 = self.dims
        m0 = np.zeros(self.plates + d0)
        m1 = np.zeros(self.plates + d1)
        total = _children_total(self)
        if total is not None:
            m0 = m0 + total[0]
            m1 = m1 + total[1]
        parent = self.parents[0]
        a, b = self._a, self._b
        eyes = [np.eye(n) for n in self._sizes]
        pairs = ",".join(f"{c}{c.upper()}" for c in a)
        m1 = np.einsum(f"...{a}{b}{b.upper()},{pairs}->...{a}{b}{a.upper()}{b.upper()}", m1, *eyes)
        return [
            sum_to_plates(mi, parent.plates, len(d), self.plates[: len(parent.plates)])
            for mi, d in zip((m0, m1), parent.dims)
        ]


class _CachedMoments(Node):
    """A deterministic node whose moments are computed from its parents' and cached.

    The cache holds while the parents' moments are the same objects and no
    stochastic node has moved (see ``_CLOCK``); a subclass computes them in
    ``_compute`` from the parents' moments.
    """

    def _compute(self, up):
        raise NotImplementedError

    @property
    def u(self):
        """The moments, from the sources' current moments (cached until one changes)."""
        cached = self.__dict__.get("_u_cache")
        if cached is not None and cached[2] == _CLOCK[1]:
            return cached[1]
        _ready_parents(self)
        key = [p.u for p in self._sources()]
        if cached is not None and all(a is b for a, b in zip(cached[0], key)):
            self._u_cache = (cached[0], cached[1], _CLOCK[1])
            return cached[1]
        u = self._compute(key)
        self._u_cache = (key, u, _CLOCK[1])
        return u

    def _lazy(self):
        cached = self.__dict__.get("_u_cache")
        return cached is None or cached[2] != _CLOCK[1]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_u_cache", None)
        return state


class SumMultiply(_CachedMoments):
    """Sums of products of Gaussian nodes, as ``numpy.einsum``: BayesPy's ``SumMultiply``.

    ``f = einsum(keys, x_1, x_2, ...)`` of independent Gaussian nodes (or
    arrays), a deterministic node with Gaussian moments of the output's
    shape: ``E f = einsum(keys, E x_1, E x_2, ...)`` and ``E[f f^T]`` the
    same sum over the operands' second moments ``E[x_i x_i^T]`` (every key
    paired with a primed copy).  The mean of a :class:`GaussianARD` child:
    the inner product of a factor model's scores and loadings (Bayesian
    PCA, ``'d,d->'``), a regression's weights and inputs (``'i,i'``), a
    matrix times a vector (``'ij,j->i'``), an outer product (``'i,j->ij'``).
    As in BayesPy, the keys name the variable axes of each operand (its
    plates broadcast as for any node), every key of an operand is distinct,
    an output without ``->`` is the full sum, keys of size 1 broadcast, and
    the alternative form ``SumMultiply(X, [0, 1], Y, [1], [0])`` gives the
    keys as lists.

    Parameters
    ----------
    *args : str, node, array-like or list
        The keys, then the operands: ``('ij,j->i', X, y)``, the keys the
        operands' and the output's after ``->``; or operands and key lists
        in turn, the output's keys last: ``(X, [0, 1], y, [1], [0])``.
        Operands are Gaussian nodes (``GaussianARD``, ``Gaussian``) or
        arrays, whose last axes are the keyed ones; distinct nodes.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import GaussianARD, SumMultiply
    >>> w = GaussianARD(1.0, 4.0, shape=(2,))
    >>> f = SumMultiply("d,d->", np.array([[1.0, 2.0]]), w)
    >>> f.plates, f.get_moments()[0]
    ((1,), array([3.]))
    >>> A = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    >>> g = SumMultiply("ij,j->i", A, w)
    >>> g.dims, g.get_moments()[0]
    (((3,), (3, 3)), array([1., 2., 2.]))
    """

    def __new__(cls, *args, name=""):
        # BayesPy's: an operand with Gaussian-Gamma moments makes a sum of
        # products that carries its precision scale (skvi.networks.GaussianGamma).
        if any(isinstance(a, Node) and a._kind.name == "gaussian_gamma" for a in args):
            from ._gaussian_gamma import GaussianGammaProduct

            return GaussianGammaProduct(*args, name=name)
        return super().__new__(cls)

    #: Whether the sums run as planned contractions (see ``__init__``); a
    #: node unpickled from before they existed takes the general sums.
    _planned = False

    def __init__(self, *args, name=""):
        self.name = name
        label = self.describe()
        keysets, keys_out, operands = self._parse(label, args)
        operands = [op._view_as("gaussian") if isinstance(op, Node) else op for op in operands]
        sizes = {}
        nodes = []
        for i, (op, ks) in enumerate(zip(operands, keysets)):
            if len(set(ks)) != len(ks):
                raise NetworkError(
                    f"{label}: the keys {''.join(map(str, ks))!r} of operand {i} "
                    "repeat an axis (a diagonal is not a sum of products)"
                )
            if isinstance(op, Node):
                if op._kind.name != "gaussian" or len(op._kind.dims[0]) != len(ks):
                    raise NetworkError(
                        f"{label}: operand {i} is {op.describe()}, but it needs "
                        f"a Gaussian node with {len(ks)} variable axes"
                    )
                shape = op._kind.dims[0]
            else:
                value = np.asarray(op, dtype=np.float64)
                if value.ndim < len(ks):
                    raise NetworkError(
                        f"{label}: operand {i} has {value.ndim} axes, fewer than its {len(ks)} keys"
                    )
                shape = value.shape[value.ndim - len(ks) :]
            for k, n in zip(ks, shape):
                if sizes.get(k, 1) not in (1, n) and n != 1:
                    raise NetworkError(
                        f"{label}: the axes of key {k!r} have sizes {sizes[k]} "
                        f"and {n}, which do not broadcast"
                    )
                sizes[k] = max(sizes.get(k, 1), n)
            nodes.append(_as_parent(label, f"operand {i}", op, MomentsKind.gaussian(shape)))
        if not any(isinstance(op, Node) for op in operands):
            raise NetworkError(f"{label}: at least one operand must be a node")
        ids = [id(op) for op in operands if isinstance(op, Node)]
        if len(set(ids)) != len(ids):
            raise NetworkError(
                f"{label}: a node is an operand twice; the operands of a "
                "product must be independent nodes"
            )
        if len(set(keys_out)) != len(keys_out):
            raise NetworkError(f"{label}: the output keys repeat an axis")
        missing = [k for k in keys_out if k not in sizes]
        if missing:
            raise NetworkError(f"{label}: output key {missing[0]!r} is not a key of any operand")
        if len(sizes) > 26:
            raise NetworkError(f"{label}: at most 26 distinct keys")
        # Every key a letter, its primed copy the upper-case letter.
        letter = {k: chr(ord("a") + i) for i, k in enumerate(sizes)}
        self._keys = ["".join(letter[k] for k in ks) for ks in keysets]
        self._out = "".join(letter[k] for k in keys_out)
        self._sizes = {letter[k]: n for k, n in sizes.items()}
        plates = broadcast_plates(label, *[p.plates for p in nodes])
        super().__init__(MomentsKind.gaussian(tuple(sizes[k] for k in keys_out)), plates, name)
        self.parents = nodes
        for i, p in enumerate(nodes):
            p.children.append((self, i))
        # Integer labels of the contractions: key i is i, its primed copy
        # K + i, the node's plate axis j is 2 K + j.  Operands that broadcast
        # a key (size 1 against a longer one) take the general sums below.
        K = len(sizes)
        self._labels = [[ord(c) - ord("a") for c in k] for k in self._keys]
        self._plate0 = 2 * K
        # Structures of the picked operands' indices, shared by the node's copies.
        self._store = _picked.Store()
        self._planned = self._plate0 + len(plates) <= MAX_LABELS and all(
            p.dims[0] == tuple(self._sizes[c] for c in k) for p, k in zip(nodes, self._keys)
        )

    @staticmethod
    def _parse(label, args):
        """(keys of each operand, output keys, operands) of either BayesPy form."""
        if args and isinstance(args[0], str):
            text, operands = args[0].replace(" ", ""), list(args[1:])
            if "..." in text:
                raise NetworkError(
                    f"{label}: keys {text!r}: an ellipsis '...' is not supported; the keys "
                    "name each operand's variable axes only (its plates broadcast without keys)"
                )
            odd = sorted({c for c in text.replace("->", "").replace(",", "") if not c.isalpha()})
            if odd:
                raise NetworkError(
                    f"{label}: keys {text!r}: {odd[0]!r} is not a key; keys are letters, "
                    "operands separated by ',' and the output after '->'"
                )
            parts = text.split("->")
            if len(parts) > 2:
                raise NetworkError(f"{label}: keys {text!r} have more than one '->'")
            keysets = [list(k) for k in parts[0].split(",")]
            keys_out = list(parts[1]) if len(parts) == 2 else []
        else:
            args = list(args)
            keys_out = list(args.pop()) if len(args) % 2 else []
            operands, keysets = args[::2], [list(k) for k in args[1::2]]
        if len(keysets) != len(operands) or not operands:
            raise NetworkError(
                f"{label}: {len(keysets)} sets of keys for {len(operands)} "
                "operands; give one per operand, as in 'ij,j->i'"
            )
        return keysets, keys_out, operands

    def _primed(self, keys):
        return keys + keys.upper()

    def _sources(self):
        # An inner product of two picked nodes reads the nodes they pick from.
        pair = _picked.picked_pair(self)
        return self.parents if pair is None else _picked.sources(pair)

    def _compute(self, key):
        """The moments from the sources' moments ``key`` (the operands', see ``_sources``)."""
        if _picked.picked_pair(self) is not None:
            return _picked.pair_moments(self, key)
        if self._planned:
            u = [self._planned_moment(key, order) for order in (0, 1)]
        else:
            first = ",".join("..." + k for k in self._keys) + "->..." + self._out
            second = (
                ",".join("..." + self._primed(k) for k in self._keys)
                + "->..."
                + self._primed(self._out)
            )
            u = [
                np.einsum(first, *[k[0] for k in key], optimize=True),
                np.einsum(second, *[k[1] for k in key], optimize=True),
            ]
        return u

    def _key_labels(self, keys, order):
        """The labels of an operand's keyed axes in moment ``order`` (primed keys follow)."""
        if order == 0:
            return list(keys)
        K = self._plate0 // 2
        return list(keys) + [K + k for k in keys]

    def _operand(self, a, keys, order):
        """``a`` (plates, then keyed axes) without its plate axes of size 1, and its labels."""
        a = np.asarray(a, dtype=np.float64)
        nk = len(keys) * (order + 1)
        lead = a.ndim - nk
        first = self._plate0 + len(self.plates) - lead
        labels = [first + j for j in range(lead) if a.shape[j] != 1]
        shape = tuple(n for n in a.shape[:lead] if n != 1) + a.shape[lead:]
        return a.reshape(shape), labels + self._key_labels(keys, order)

    def _operands(self, u, keys, order):
        """Moment ``order`` of an operand as labelled arrays: itself, or a fixed value twice.

        A fixed value's second moment ``x x^T`` is the value under the keys
        and again under their primed copies: the sums never make the outer
        products (``n d^2`` numbers of a design matrix).
        """
        if order == 1 and isinstance(u, FixedGaussianMoments) and u.pending:
            a, lab = self._operand(u.first, keys, 0)
            K = self._plate0 // 2
            return [(a, lab), (a, lab[: len(lab) - len(keys)] + [K + k for k in keys])]
        return [self._operand(u[order], keys, order)]

    def _planned_moment(self, key, order):
        """Moment ``order`` of f: one planned contraction over the operands' moments."""
        arrays, labels = [], []
        for u, keys in zip(key, self._labels):
            for a, lab in self._operands(u, keys, order):
                arrays.append(a)
                labels.append(lab)
        present = {lab for lab_list in labels for lab in lab_list}
        plates = [self._plate0 + j for j in range(len(self.plates))]
        out_keys = self._key_labels([ord(c) - ord("a") for c in self._out], order)
        kept = [lab for lab in plates if lab in present]
        f = contract(arrays, labels, kept + out_keys)
        shape = tuple(n if lab in present else 1 for n, lab in zip(self.plates, plates))
        return f.reshape(shape + f.shape[len(kept) :])

    def update(self):
        """Nothing to update: the moments follow the operands."""

    def _message_through_take(self, index, weight=None):
        """The message to the node that operand ``index`` picks from, or None.

        For an inner product of two picked nodes (``_picked``): summed per
        picked element without the per-row messages, each row's weighted by
        this node's weights to the operand and ``weight`` (the operand's own).
        """
        if _picked.picked_pair(self) is None:
            return None
        total = _children_total(self)
        w = self._weights_to(self.parents[index])
        for extra in (w, weight):
            if total is not None and extra is not None:
                extra = np.asarray(extra, dtype=np.float64)
                total = [np.asarray(m, dtype=np.float64) * extra for m in total]
        return _picked.pair_message(self, index, total)

    def _message_to_parent(self, index):
        # The children's messages to f, then to operand ``index`` through the
        # others: the sums of u, with the operand's own moments left out.
        out = self.dims
        if self._planned:
            return [self._planned_message(index, order) for order in (0, 1)]
        m0 = np.zeros(self.plates + out[0])
        m1 = np.zeros(self.plates + out[1])
        total = _children_total(self)
        if total is not None:
            m0 = m0 + total[0]
            m1 = m1 + total[1]
        parent = self.parents[index]
        w = self._weights_to(parent)
        if w is not None:
            m0 = m0 * w.reshape(w.shape + (1,) * len(out[0]))
            m1 = m1 * w.reshape(w.shape + (1,) * len(out[1]))
        own = self._keys[index]
        others = [j for j in range(len(self.parents)) if j != index]
        msg = []
        for order, (m, d) in enumerate(zip((m0, m1), parent.dims)):
            prime = (lambda k: k) if order == 0 else self._primed
            terms = ["..." + prime(self._out)] + ["..." + prime(self._keys[j]) for j in others]
            arrays = [m] + [self.parents[j].u[order] for j in others]
            # A key of this operand alone: the message is the same along it.
            for k in prime(own):
                if not any(k in t for t in terms):
                    terms.append(k)
                    arrays.append(np.ones(self._sizes[k.lower()]))
            mi = np.einsum(",".join(terms) + "->..." + prime(own), *arrays, optimize=True)
            # Axes the operand broadcasts (size 1 against a longer key): summed.
            lead = mi.ndim - len(d)
            axes = tuple(lead + a for a, n in enumerate(d) if n == 1 and mi.shape[lead + a] != 1)
            if axes:
                mi = mi.sum(axis=axes, keepdims=True)
            msg.append(sum_to_plates(mi, parent.plates, len(d), self.plates))
        return msg

    def _planned_message(self, index, order):
        """Message ``order`` to operand ``index``: the children's, summed with the others' moments.

        One contraction straight into the operand's plates and keyed axes,
        summing over the plates it does not have on the way (a message to
        the scores sums over the loadings' rows inside the product).  The
        children's message stays as broadcast as they sent it: a plate axis
        of size 1 is one value for the whole plate, which a sum over that
        plate counts once per element.
        """
        parent = self.parents[index]
        d = self.dims[order]
        L = len(self.plates)
        total = _children_total(self)
        m = np.zeros(()) if total is None else np.asarray(total[order], dtype=np.float64)
        m = m.reshape((1,) * (L + len(d) - m.ndim) + m.shape)
        if m.shape[L:] != d:
            m = np.broadcast_to(m, m.shape[:L] + d)
        w = self._weights_to(parent)
        if w is not None:
            m = m * w.reshape((1,) * (L - w.ndim) + w.shape + (1,) * len(d))
        out_key = [ord(c) - ord("a") for c in self._out]
        a, lab = self._operand(m, out_key, order)
        arrays, labels = [a], [lab]
        for j, (p, keys) in enumerate(zip(self.parents, self._labels)):
            if j != index:
                for a, lab in self._operands(p.u, keys, order):
                    arrays.append(a)
                    labels.append(lab)
        own = self._key_labels(self._labels[index], order)
        present = {x for lab in labels for x in lab}
        K = self._plate0 // 2
        for k in own:
            if k not in present:
                # A key of this operand alone: the message is the same along it.
                arrays.append(np.ones(self._sizes[chr(ord("a") + k % K)]))
                labels.append([k])
        P = len(parent.plates)
        kept = [
            self._plate0 + L - P + i
            for i, n in enumerate(parent.plates)
            if n != 1 and self._plate0 + L - P + i in present
        ]
        mi = contract(arrays, labels, kept + own)
        # A plate no array varies along, summed: every element adds the same.
        count = 1
        for j, n in enumerate(self.plates):
            outside = j < L - P or parent.plates[j - (L - P)] == 1
            if outside and self._plate0 + j not in present:
                count *= n
        if count != 1:
            mi = mi * count
        shape = tuple(
            n if self._plate0 + L - P + i in kept else 1 for i, n in enumerate(parent.plates)
        )
        return mi.reshape(shape + mi.shape[len(kept) :])


def Dot(*operands, name=""):
    """The inner product of Gaussian vectors: BayesPy's ``Dot``, ``SumMultiply('i,i,...')``.

    Parameters
    ----------
    *operands : node or array-like
        Gaussian nodes or arrays of vectors (their last axis), distinct nodes.
    name : str, default=''
        The node's name.

    Returns
    -------
    SumMultiply
        The node ``sum_i prod_k x_k[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Dot, GaussianARD
    >>> w = GaussianARD(1.0, 4.0, shape=(2,))
    >>> Dot(w, np.array([1.0, 2.0])).get_moments()[0]
    array(3.)
    """
    return SumMultiply(",".join("i" * len(operands)), *operands, name=name)


class _ClusterAxisLast(Node):
    """A node with one plate axis moved last: a mixture's parameter whose clusters are on another.

    The plates are left-padded with ones to have the axis, which then moves
    to the end; the moments are views, and a message moves the axis back.
    """

    def __init__(self, node, axis):
        plates = (1,) * max(0, -axis - len(node.plates)) + node.plates
        self._full = plates
        self._axis = len(plates) + axis
        order = [i for i in range(len(plates)) if i != self._axis] + [self._axis]
        super().__init__(node._kind, tuple(plates[i] for i in order), node.name)
        self.parents = [node]
        node.children.append((self, 0))

    def _move(self, a, ndim, back=False):
        """``a`` of shape ``plates + dims`` (plates broadcastable) with the axis moved."""
        a = np.asarray(a, dtype=np.float64)
        n = len(self._full)
        lead = a.ndim - ndim
        a = a.reshape((1,) * (n - lead) + a.shape)
        return np.moveaxis(a, n - 1, self._axis) if back else np.moveaxis(a, self._axis, n - 1)

    @property
    def u(self):
        return [self._move(u, len(d)) for u, d in zip(self.parents[0].u, self.dims)]

    def update(self):
        """Nothing to update: the moments are the node's."""

    def _mask_to_parent(self, index):
        if self._mask is None or self._mask.any():
            return None
        return np.zeros(self.parents[0].plates, dtype=bool)

    def _message_to_parent(self, index):
        parent = self.parents[0]
        total = _children_total(self)
        return [
            sum_to_plates(
                self._move(np.broadcast_to(m, self.plates + d), len(d), back=True),
                parent.plates,
                len(d),
                self._full,
            )
            for m, d in zip(total, self.dims)
        ]
