"""The mixture node: a family's node whose parameters a categorical assignment selects."""

import math

import numpy as np

from ._deterministic import _ClusterAxisLast
from ._moments import MomentsKind
from ._node import Node
from ._plates import NetworkError, sum_to_plates
from ._stochastic import CACHE_SIZE, Stochastic


class Mixture(Stochastic):
    """A mixture: ``x ~ family(params[z])``, BayesPy's ``Mixture(z, family, *params)``.

    ``z`` is a :class:`Categorical` node (or fixed categories) over ``K``
    clusters; a plate axis of the parameters (the last, or
    ``cluster_plate``) runs over the clusters.  Messages are summed over the rows with the
    cluster responsibilities as weights (one matrix product per moment),
    never a loop over rows.

    Parameters
    ----------
    z : node or array-like
        The cluster assignment.
    family : class
        The mixed family (:class:`Gaussian`, :class:`GaussianARD`,
        :class:`Gamma`, :class:`Poisson`, :class:`Bernoulli`, ...).
    *params : node or array-like
        The family's parents, each with the cluster plate.
    cluster_plate : int, default=-1
        The plate axis of the clusters, negative, among the plates the
        family has from its parameters (as BayesPy's): a parameter without
        that axis is shared by the clusters.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.
    **kwargs
        The family's own keywords (``shape`` of :class:`GaussianARD`).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Categorical, GaussianARD, Mixture
    >>> z = Categorical([0.5, 0.5], plates=(3,))
    >>> x = Mixture(z, GaussianARD, [0.0, 10.0], 1.0)
    >>> x.plates, x.get_moments()[0]
    ((3,), array([5., 5., 5.]))
    """

    def __init__(self, z, family, *params, cluster_plate=-1, plates=None, name="", **kwargs):
        label = f"Mixture '{name}'" if name else "Mixture (unnamed)"
        if not isinstance(cluster_plate, (int, np.integer)) or cluster_plate >= 0:
            raise NetworkError(
                f"{label}: cluster_plate must be a negative axis, got {cluster_plate!r}"
            )
        if not (isinstance(family, type) and issubclass(family, Stochastic)) or family is Mixture:
            raise NetworkError(
                f"{label}: the mixed family must be a node class such as "
                f"Gaussian or GaussianARD, got {family!r}"
            )
        if isinstance(z, Node):
            z = z._view_as("categorical")
        if isinstance(z, Node) and z._kind.name != "categorical":
            raise NetworkError(
                f"{label}: the assignment z is {z.describe()}, but a mixture's "
                "assignment must be a Categorical node (or categories)"
            )
        try:
            # The family's formulas with the clusters' parameters, not a node
            # of the network: its parents do not count it as a child.
            proto = family.__new__(family)
            proto._detach = True
            proto.__init__(*params, name=f"{name}[cluster]", **kwargs)
            if cluster_plate != -1:
                # Each parameter seen with the cluster axis moved last.
                if len(proto.plates) < -cluster_plate:
                    raise NetworkError(
                        f"{label}: the parameters have plates {proto.plates}, "
                        f"no axis {cluster_plate} for the clusters"
                    )
                moved = []
                for i, parent in enumerate(proto.parents):
                    extra = len(proto._plates_to_parent(i)) - len(proto.plates)
                    moved.append(_ClusterAxisLast(parent, cluster_plate - extra))
                proto = family.__new__(family)
                proto._detach = True
                proto.__init__(*moved, name=f"{name}[cluster]", **kwargs)
        except NetworkError as err:
            raise NetworkError(f"{label}: {err}") from None
        except TypeError as err:
            raise NetworkError(f"{label}: {err}") from None
        self._proto = proto
        self._cluster_plate = cluster_plate
        self.family = family
        K = proto.plates[-1] if proto.plates else 1
        if isinstance(z, Node):
            Kz = z._kind.dims[0][0]
        else:
            Kz = int(np.max(z)) + 1 if np.size(z) else K
            Kz = max(Kz, K)
        if K not in (1, Kz):
            raise NetworkError(
                f"{label}: z has {Kz} categories but the parameters' cluster "
                f"plate (their last plate) has {K}"
            )
        self.K = Kz
        self._n_params = len(params)
        parents = [("z", z, MomentsKind.categorical(Kz))]
        parents += [(slot, p, p._kind) for slot, p in zip(proto._slots, proto.parents)]
        self.shape = getattr(proto, "shape", ())
        super().__init__(parents, proto._kind, plates, name)

    def _mask_to_parent(self, index):
        if index == 0 or self._mask is None:
            return super()._mask_to_parent(index)
        # Any counted element may belong to any cluster.
        return None if self._mask.any() else np.zeros(self.parents[index].plates, dtype=bool)

    def _plates_to_parent(self, index):
        # A message to a cluster parameter: every element, every cluster (last).
        return self.plates if index == 0 else self.plates + (self.K,)

    def _plates_from_parent(self, index, plates):
        if index == 0:
            return plates
        # The parameters' plates as the family sees them, less the cluster axis.
        mapped = self._proto._plates_from_parent(index - 1, plates)
        return mapped[:-1] if mapped else ()

    # The family's formulas, with the clusters on the last plate axis.
    def _cluster_phi(self, up):
        return self._cluster_terms(up)[0]

    def _cluster_terms(self, up):
        """Each cluster's natural parameters and log normaliser from the parameters' moments.

        Kept while those moments are the same arrays: the message to the
        assignments and the bound read them at the same globals.
        """
        key = tuple(a for moments in up[1:] for a in moments)
        cached = self.__dict__.get("_terms_cache")
        if cached is not None and len(cached[0]) == len(key):
            if all(a is b for a, b in zip(cached[0], key)):
                return cached[1]
        phi = self._proto._phi_from_parents(up[1:])
        g = np.asarray(self._proto._cgf_from_parents(up[1:]), dtype=np.float64)
        if sum(np.size(a) for a in phi) <= CACHE_SIZE:
            self._terms_cache = (key, (phi, g))
        return phi, g

    def _log_pdf_k(self, u, up):
        """``phi_k . u + g_k`` for every element and cluster: shape ``plates + (K,)``."""
        phi, g = self._cluster_terms(up)
        out = 0.0
        for phik, ui, d in zip(phi, u, self.dims):
            out = out + _inner_k(ui, phik, len(d), self.K)
        gk = g if g.ndim else np.full(1, g)
        return out + gk

    def _phi_from_parents(self, up):
        z = up[0][0]
        out = []
        for phik, d in zip(self._cluster_phi(up), self.dims):
            nd = len(d)
            phik = np.broadcast_to(
                phik, phik.shape[: phik.ndim - nd - 1] + (self.K,) + phik.shape[phik.ndim - nd :]
            )
            out.append(_weighted_k(z, phik, nd))
        return out

    def _cgf_from_parents(self, up):
        g = self._cluster_terms(up)[1]
        g = np.broadcast_to(g, g.shape[:-1] + (self.K,)) if g.ndim else np.full(self.K, g)
        return np.sum(up[0][0] * g, axis=-1)

    def _moments_and_cgf(self, phi):
        return self._proto._moments_and_cgf(phi)

    def _support(self, x):
        return self._proto._support(x)

    def _fixed_moments_and_f(self, x):
        return self._proto._fixed_moments_and_f(x)

    def _random(self, phi, rng):
        return self._proto._random(phi, rng)

    def _expected_log_prior(self, up):
        z = up[0][0]
        if all(p == 1 for p in self._proto.plates[:-1]):
            # Linear in each cluster's weighted sums, which the messages to
            # the cluster parameters share: sum_k phi_k . S_k + g_k N_k,
            # without a pass over the rows when they are known.
            w, m = self._row_weight, self._mask
            weight = m if w is None else (w if m is None else w * m)
            stats, counts = self._sums(z, weight)
            phi, g = self._cluster_terms(up)
            K = counts.shape[-1]
            total = float(np.sum(np.broadcast_to(g.reshape(-1), (K,)) * counts))
            for phik, s, d in zip(phi, stats, self.dims):
                phik = np.broadcast_to(phik.reshape((-1,) + tuple(d)), (K,) + tuple(d))
                with np.errstate(invalid="ignore"):
                    term = phik * s
                total += float(np.sum(np.where(s != 0, term, 0.0)))
            return total
        lp = self._log_pdf_k(self.u, up)
        return self._total(np.sum(np.broadcast_to(z, lp.shape) * lp, axis=-1))

    def _sums(self, z, weight):
        """:func:`_cluster_stats` of the moments ``z`` of the assignments, rows weighted by ``weight``.

        Kept while ``z``, ``weight`` and this node's moments are the same
        arrays: the messages to each cluster parameter and the bound read
        the same sums, and only a new ``q(z)`` (or new data) changes them.
        """
        key = (z, weight, *self.u)
        cached = self.__dict__.get("_sums_cache")
        if cached is not None and len(cached[0]) == len(key):
            if all(a is b for a, b in zip(cached[0], key)):
                return cached[1]
        zb = np.broadcast_to(z, self.plates + (self.K,))
        if weight is not None:
            zb = zb * np.broadcast_to(weight, self.plates)[..., None]
        out = _cluster_stats(zb, self.u, self.dims, self.plates, self._proto.plates)
        self._sums_cache = (key, out)
        return out

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_sums_cache", None)
        state.pop("_terms_cache", None)
        return state

    def _message_to_parent(self, index):
        up = self._parent_moments()
        parent = self.parents[index]
        if index == 0:
            m = self._log_pdf_k(self.u, up)
            w = self._weights_to(parent)
            if w is not None:
                m = m * np.broadcast_to(w, self.plates)[..., None]
            return [sum_to_plates(m, parent.plates, 1, self.plates)]
        # Weighted statistics of each cluster: sum_n z_nk u_n, and the weights.
        stats, counts = self._sums(up[0][0], self._weights_to(parent))
        m = self._proto._message(index - 1, stats, up[1:], counts)
        full = stats[0].shape[: stats[0].ndim - len(self.dims[0])]
        if index - 1 < len(self._proto.parents):
            extra = self._proto._plates_to_parent(index - 1)[len(self._proto.plates) :]
            full = full + extra
        return [sum_to_plates(mi, parent.plates, len(d), full) for mi, d in zip(m, parent.dims)]


def _inner_k(u, phik, nd, K):
    """``sum over the variable axes of u * phi_k``: ``plates + (K,)``.

    ``u``: ``plates + dims``; ``phik``: ``pplates + (K,) + dims``.  One matrix
    product when the parameters have no plates but the clusters.
    """
    D = int(math.prod(u.shape[u.ndim - nd :])) if nd else 1
    plates = u.shape[: u.ndim - nd]
    pp = phik.shape[: phik.ndim - nd]
    Kp = pp[-1] if pp else 1
    if all(p == 1 for p in pp[:-1]):
        uf = u.reshape((-1, D))
        pf = np.broadcast_to(phik.reshape((Kp, D)), (K, D))
        return (uf @ pf.T).reshape(plates + (K,))
    axes = tuple(range(-nd, 0))
    ue = np.expand_dims(u, u.ndim - nd)
    out = ue * phik
    return out.sum(axis=axes) if nd else out


def _weighted_k(z, phik, nd):
    """``sum_k z_k phi_k``: the mixture's expected natural parameters, ``plates + dims``."""
    pp = phik.shape[: phik.ndim - nd]
    dims = phik.shape[phik.ndim - nd :]
    K = pp[-1]
    if all(p == 1 for p in pp[:-1]):
        D = int(math.prod(dims)) if nd else 1
        out = z.reshape((-1, K)) @ phik.reshape((K, D))
        return out.reshape(z.shape[:-1] + dims)
    ze = z.reshape(z.shape + (1,) * nd)
    return np.sum(ze * phik, axis=-1 - nd)


def _cluster_stats(z, u, dims, plates, param_plates):
    """``sum_n z_nk u_n`` over the plates the parameters lack, and ``sum_n z_nk``.

    ``param_plates`` are the parameters' plates, the clusters last.  When
    they have no other plate, one matrix product per moment (shape
    ``(K,) + dims``); otherwise a broadcast product summed to them.
    """
    K = z.shape[-1]
    if all(p == 1 for p in param_plates[:-1]):
        zf = z.reshape((-1, K))
        stats = []
        for ui, d in zip(u, dims):
            D = int(math.prod(d)) if d else 1
            uf = np.broadcast_to(ui, plates + tuple(d)).reshape((-1, D))
            stats.append((zf.T @ uf).reshape((K,) + tuple(d)))
        return stats, zf.sum(axis=0)
    target = tuple(param_plates)
    stats = []
    for ui, d in zip(u, dims):
        nd = len(d)
        ub = np.broadcast_to(ui, plates + tuple(d))
        prod = z.reshape(z.shape + (1,) * nd) * np.expand_dims(ub, ub.ndim - nd)
        stats.append(sum_to_plates(prod, target, nd))
    return stats, sum_to_plates(z, target, 0)
