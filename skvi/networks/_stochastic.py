"""The stochastic node: q(x) of an exponential family, updated by variational message passing."""

from collections.abc import Sequence

import numpy as np
from sklearn.utils import check_random_state

from ._moments import _require
from ._node import _CLOCK, Constant, Node, _as_parent, _post_order, _ready_parents
from ._plates import NetworkError, broadcast_plates, sum_to_plates


def _propagate_masks(node):
    """Mask the latent elements above ``node`` whose every child element is missing, as BayesPy does.

    An element that no observed element depends on is integrated out
    exactly: it sends no message and adds nothing to the bound.  The nodes
    above are visited children first (each once, without recursion), so
    that a node's mask is computed from its children's final masks.
    """

    def latent_parents(n):
        return [
            p for p in n.parents if not (isinstance(p, Constant) or getattr(p, "observed", False))
        ]

    for parent in reversed(_post_order(node, latent_parents)[:-1]):
        used = np.zeros(parent.plates, dtype=bool)
        for child, index in parent.children:
            m = child._mask_to_parent(index)
            if m is None:
                used = None
                break
            used = used | m
        parent._mask = None if used is None or used.all() else used.astype(np.float64)


def _from_prior(name, doc):
    """A property of q's ``name``, which starts at the prior when first read.

    ``q`` is computed from the prior on the first read of any of its parts
    (a node observed first never computes it).
    """

    def get(self):
        if self.__dict__.get("_u") is None:
            _ready_parents(self)
            self.initialize_from_prior()
        return getattr(self, name)

    def set(self, value):
        if name == "_u":
            _CLOCK[1] += 1
        setattr(self, name, value)

    return property(get, set, doc=doc)


#: Most values of a node's prior parameters kept between calls (a global
#: node's; a local node's, one per row, are not held beyond their use).
CACHE_SIZE = 65536


class _ParentMoments(Sequence):
    """The moments of a node's parents, as a list whose items are read when first used."""

    __slots__ = ("_parents", "_read")

    def __init__(self, parents):
        self._parents = parents
        self._read = {}

    def __len__(self):
        return len(self._parents)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(len(self._parents))[i]]
        parent = self._parents[i]  # IndexError past the end, as a list
        i = i % len(self._parents)
        if i not in self._read:
            self._read[i] = parent.u
        return self._read[i]


class Stochastic(Node):
    """A random variable of an exponential family; a family fills in its formulas.

    The VMP update of ``q(x)`` is :meth:`update`; :meth:`observe` fixes x
    to data; :meth:`lower_bound_contribution` is its term of the bound,
    ``E[log p(x | parents)] - E[log q(x)]`` (``E[log p(data | parents)]``
    when observed), with every constant.

    Parameters
    ----------
    parents : list of (str, value, MomentsKind)
        Each parent slot's name, its node or array, and the moments it needs.
    kind : MomentsKind
        The node's own moments.
    plates : tuple of int or None
        Explicit plates; the parents' plates must broadcast to them.
    name : str
        The node's name.

    Examples
    --------
    >>> from skvi.networks import GaussianARD
    >>> x = GaussianARD(0.0, 4.0, plates=(2,))
    >>> x.get_moments()[1]         # E[x^2] of N(0, 1/4), from the prior
    array([0.25, 0.25])
    """

    _detached = False
    _discrete = False
    _deterministic = False

    def _lazy(self):
        return self.__dict__.get("_u") is None

    def __init__(self, parents, kind, plates, name):
        detached = self.__dict__.pop("_detach", False)
        self.name = name
        self._kind = kind
        label = self.describe()
        nodes = [_as_parent(label, slot, value, k) for slot, value, k in parents]
        implied = broadcast_plates(
            label, *[self._plates_from_parent(i, p.plates) for i, p in enumerate(nodes)]
        )
        if plates is None:
            plates = implied
        else:
            plates = tuple(int(p) for p in plates)
            if broadcast_plates(label, plates, implied) != plates:
                raise NetworkError(
                    f"{label}: plates {plates} do not hold the parents' plates {implied} "
                    "(each parent plate must be 1 or equal the node's)"
                )
        super().__init__(kind, plates, name)
        self.parents = nodes
        self._slots = [slot for slot, _, _ in parents]
        self.observed = False
        self._detached = detached
        if not detached:
            for i, p in enumerate(nodes):
                p.children.append((self, i))
            # q starts at the prior, computed when first asked for (a node
            # observed first never computes it).
            self._u = None

    u = _from_prior("_u", "The current moments (a list of arrays; the prior's until an update).")
    phi = _from_prior(
        "_phi", "The natural parameters of q (None for a point mass or an observed node)."
    )
    g = _from_prior("_g", "The log normaliser of q, per plate element.")

    # ---------------------------------------------------------- formulas
    def _plates_from_parent(self, index, plates):
        """The plates of this node that parent ``index``'s plates imply."""
        return plates

    def _phi_from_parents(self, up):
        raise NotImplementedError

    def _cgf_from_parents(self, up):
        raise NotImplementedError

    def _moments_and_cgf(self, phi):
        raise NotImplementedError

    def _fixed_moments_and_f(self, x):
        raise NotImplementedError

    def _message(self, index, u, up, n):
        """The message to parent ``index``, linear in the moments ``u`` and counts ``n``."""
        raise NotImplementedError

    def _random(self, phi, rng):
        raise NotImplementedError(f"{self.describe()}: random draws are not implemented")

    def _support(self, x):
        """Where data ``x`` lie in the family's support: ``(ok, what is valid, value axes)``.

        ``ok`` is a bool array over the plates (and any leading axes of
        ``x``); None: every value is valid.
        """
        return None

    def _valid_natural(self, phi):
        """Whether natural parameters define a distribution of the family (every element)."""
        return all(np.all(np.isfinite(a)) for a in phi)

    # ---------------------------------------------------------- messages
    def _parent_moments(self):
        return [p.u for p in self.parents]

    def _message_to_parent(self, index):
        """This node's message to parent ``index``, summed to the parent's plates."""
        parent = self.parents[index]
        w = self._weights_to(parent)
        # Each parent's moments read when the message reads them: a Gaussian's
        # message to its mean needs its precision's only, not the mean's own
        # (a sum of products over every row, say).  A family that gives its
        # parents' moments its own way is asked for them as they are.
        if type(self)._parent_moments is Stochastic._parent_moments:
            up = _ParentMoments(self.parents)
        else:
            up = self._parent_moments()
        if w is None:
            m = self._message(index, self.u, up, np.ones(()))
        else:
            u = [ui * w.reshape(w.shape + (1,) * len(d)) for ui, d in zip(self.u, self.dims)]
            m = self._message(index, u, up, w)
        full = self._plates_to_parent(index)
        return [sum_to_plates(mi, parent.plates, len(d), full) for mi, d in zip(m, parent.dims)]

    def _full(self, arrays):
        return [
            np.broadcast_to(a, self.plates + d).astype(np.float64, copy=True)
            for a, d in zip(arrays, self.dims)
        ]

    #: ``(mask, moments, f)`` of the observed elements of a node observed in
    #: part that has children (its other elements are latent), or None.
    _fixed = None

    def _set_phi(self, phi):
        self.phi = phi
        self.u, self.g = self._moments_and_cgf(phi)
        if self._fixed is not None:
            self.u = self._with_fixed(self.u)

    def _with_fixed(self, u):
        """The moments ``u`` with the observed elements' in their places."""
        mask, u_obs, _ = self._fixed
        return [
            np.where(mask.reshape(mask.shape + (1,) * len(d)), uo, ui)
            for ui, uo, d in zip(u, u_obs, self.dims)
        ]

    # ---------------------------------------------------------- public
    def update(self):
        """One VMP update of ``q(x)``: the parents' expected natural parameters plus the children's messages.

        Does nothing when the node is observed.
        """
        if self.observed:
            return
        phi = self._full(self._phi_from_parents(self._parent_moments()))
        for child, index in self.children:
            for i, m in enumerate(child._message_to_parent(index)):
                phi[i] += m
        self._set_phi(phi)

    def observe(self, x, mask=True):
        """Fix the node to data ``x`` (of shape ``plates + shape``), where ``mask`` is True.

        Parameters
        ----------
        x : array-like
            The observed values; those the mask leaves out are ignored (NaN
            is fine there).
        mask : bool or array-like of bool, default=True
            Which elements are observed, broadcastable to the plates, as in
            BayesPy.  The others are missing values: integrated out in a
            node without children, latent (updated by VMP with the
            observed ones fixed: semi-supervised labels, say) in a node
            with children.

        Returns
        -------
        self : Stochastic
            The node.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import VB, GaussianARD
        >>> mu = GaussianARD(0.0, 1e-6)
        >>> y = GaussianARD(mu, 1.0, plates=(3,))
        >>> _ = y.observe([1.0, np.nan, 3.0], mask=[True, False, True])
        >>> VB(y, mu).update(repeat=1)
        >>> round(float(mu.get_moments()[0]), 4)     # the mean of the two observed
        2.0
        """
        x = np.asarray(x)
        want = self.plates + self._kind.value_shape()
        if self._kind.name in ("categorical", "poisson", "bernoulli"):
            want = self.plates
        if x.shape != want:
            raise NetworkError(
                f"{self.describe()}: observed data of shape {x.shape}, but the "
                f"node's plates and shape are {want}"
            )
        try:
            mask = np.broadcast_to(np.asarray(mask, dtype=bool), self.plates)
        except ValueError:
            raise NetworkError(
                f"{self.describe()}: a mask of shape {np.shape(mask)} does not "
                f"broadcast to the plates {self.plates}"
            ) from None
        self._mask = None
        self._fixed = None
        if not mask.all():
            if not mask.any():
                raise NetworkError(f"{self.describe()}: the mask observes no element")
            # A valid value in the missing places: the first observed one.
            x = np.array(x, copy=True)
            x[~mask] = x[mask][0]
            self._check_support(x)
            if self.children:
                # The missing elements are latent: q from the prior, the
                # observed elements fixed in the moments.
                try:
                    u_obs, f_obs = self._fixed_moments_and_f(x)
                except ValueError as err:
                    raise NetworkError(f"{self.describe()}: {err}") from None
                u_obs = [np.broadcast_to(a, self.plates + d) for a, d in zip(u_obs, self.dims)]
                self._fixed = (mask, u_obs, f_obs)
                self.observed = False
                self.initialize_from_prior()
                _propagate_masks(self)
                return self
            self._mask = mask.astype(np.float64)
        self._check_support(x)
        _propagate_masks(self)
        try:
            self.u, self.f = self._fixed_moments_and_f(x)
        except ValueError as err:
            raise NetworkError(f"{self.describe()}: {err}") from None
        self.phi = None
        self.g = None
        self.observed = True
        return self

    def _check_support(self, x):
        """Refuse data outside the family's support, naming the node and saying what is valid."""
        check = self._support(x)
        if check is None:
            return
        ok, valid, event_ndim = check
        try:
            _require(ok, x, valid, event_ndim)
        except ValueError as err:
            raise NetworkError(
                f"{self.describe()}: observed data: {err} (a missing value can be left "
                "out with observe's mask)"
            ) from None

    def initialize_from_prior(self):
        """Set ``q(x)`` to the prior given the parents' current moments."""
        self._set_phi(self._full(self._phi_from_parents(self._parent_moments())))

    def initialize_from_value(self, x):
        """Set the moments to those of the value x (a point mass), as BayesPy does.

        Parameters
        ----------
        x : array-like
            A value of shape ``plates + shape``.
        """
        u, self._point_f = self._fixed_moments_and_f(np.asarray(x))
        self.u = [
            np.broadcast_to(a, self.plates + d).astype(np.float64) for a, d in zip(u, self.dims)
        ]
        if self._fixed is not None:
            self.u = self._with_fixed(self.u)
        self.phi = None
        self.g = np.zeros(self.plates)

    def initialize_from_random(self, random_state=None):
        """Set the moments to those of a random draw from the current ``q(x)`` (BayesPy's start).

        Parameters
        ----------
        random_state : int, RandomState or None, default=None
            The draw's randomness (None: numpy's global state, as BayesPy).
        """
        rng = check_random_state(random_state)
        phi = (
            self.phi
            if self.phi is not None
            else self._full(self._phi_from_parents(self._parent_moments()))
        )
        self.initialize_from_value(self._random(phi, rng))

    def initialize_from_parameters(self, *params):
        """Set ``q(x)`` to the family with these parameters, as BayesPy does.

        Parameters
        ----------
        *params : array-like
            One fixed value per parent, in the constructor's order
            (``GaussianARD``: ``mu, alpha``; ``Gamma``: ``a, b``; ...).

        Examples
        --------
        >>> from skvi.networks import Gamma
        >>> tau = Gamma(1e-3, 1e-3)
        >>> tau.initialize_from_parameters(2.0, 4.0)
        >>> float(tau.get_moments()[0])
        0.5
        """
        if len(params) != len(self.parents):
            raise NetworkError(
                f"{self.describe()}: {len(params)} parameters given, but the "
                f"node has {len(self.parents)} parents"
            )
        up = []
        for parent, value in zip(self.parents, params):
            if isinstance(value, Node):
                raise NetworkError(f"{self.describe()}: parameters are fixed values, not nodes")
            up.append(Constant(parent._kind, value, name=parent.name or "a parameter").u)
        self._set_phi(self._full(self._phi_from_parents(up)))

    def random(self):
        """A draw from ``q(x)`` (the prior before ``q`` is set), from numpy's global state as BayesPy's.

        Returns
        -------
        ndarray
            A value of shape ``plates + shape``.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import GaussianARD
        >>> np.random.seed(0)
        >>> GaussianARD(0.0, 1.0, plates=(3,)).random().shape
        (3,)
        """
        phi = (
            self.phi
            if self.phi is not None
            else self._full(self._phi_from_parents(self._parent_moments()))
        )
        return self._random(phi, check_random_state(None))

    def lower_bound_contribution(self):
        """This node's term of the lower bound, with every constant.

        Returns
        -------
        float
            ``E[log p(x | parents)] - E[log q(x)]``, or ``E[log p(x | parents)]``
            when observed.
        """
        up = self._parent_moments()
        L = self._expected_log_prior(up)
        if self.observed:
            return L + self._total(self.f)
        if self._fixed is not None and self.phi is not None:
            # Observed elements: E log p with their base measure; latent
            # ones: E log p - E log q.
            mask, _, f_obs = self._fixed
            L += self._total(np.where(mask, f_obs, 0.0))
            L -= self._total(np.where(mask, 0.0, self.g))
            for phi, u, d in zip(self.phi, self.u, self.dims):
                axes = tuple(range(-len(d), 0))
                with np.errstate(invalid="ignore"):
                    term = np.sum(phi * u, axis=axes) if axes else phi * u
                L -= self._total(np.where(mask, 0.0, term))
            return L
        if self.phi is None:
            # A point mass (initialised from a value): E log q is 0 for a
            # discrete variable, -inf for a continuous one.
            if not self._discrete:
                return -np.inf
            return L + self._total(self._point_f)
        return L - self._log_q()

    def _log_q(self):
        """``E[log q(x)]`` summed over the plates, kept while q and the weights are the same arrays.

        It does not depend on the parents: a bound at new parents (the globals
        after a step, with the rows' local nodes as they were) reuses it.
        """
        key = (self._row_weight, self._mask, self.g, *self.phi, *self.u)
        cached = self.__dict__.get("_log_q_cache")
        if cached is not None and len(cached[0]) == len(key):
            if all(a is b for a, b in zip(cached[0], key)):
                return cached[1]
        out = self._total(self.g)
        for phi, u, d in zip(self.phi, self.u, self.dims):
            axes = tuple(range(-len(d), 0))
            out += self._total(np.sum(phi * u, axis=axes) if axes else phi * u)
        self._log_q_cache = (key, out)
        return out

    def _prior_terms(self, up):
        """``phi(parents)`` and ``g(parents)`` at the parents' moments ``up`` (read only).

        Kept while the parents' moments are the same arrays: a node under
        fixed parents (a global node's prior) computes them once.
        """
        key = tuple(a for moments in up for a in moments)
        cached = self.__dict__.get("_prior_cache")
        if cached is not None and len(cached[0]) == len(key):
            if all(a is b for a, b in zip(cached[0], key)):
                return cached[1]
        out = (self._phi_from_parents(up), self._cgf_from_parents(up))
        if sum(np.size(a) for a in out[0]) <= CACHE_SIZE:  # not a copy of the rows' arrays
            self._prior_cache = (key, out)
        return out

    def _expected_log_prior(self, up):
        """``E[phi(parents) . u(x) + g(parents)]`` summed over the plates."""
        phi_p, cgf = self._prior_terms(up)
        L = self._total(cgf)
        with np.errstate(invalid="ignore"):
            for phi, u, d in zip(phi_p, self.u, self.dims):
                axes = tuple(range(-len(d), 0))
                term = phi * u
                term = np.where(u != 0, term, 0.0)  # 0 * -inf: a category of zero probability
                L += self._total(np.sum(term, axis=axes) if axes else term)
        return L
