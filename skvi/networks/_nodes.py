"""Nodes of a conjugate-exponential Bayesian network, with BayesPy's names and conventions.

Every stochastic node ``x`` with parents ``theta`` has a density of the form

    log p(x | theta) = phi(theta) . u(x) + g(theta) + f(x)

with natural parameters ``phi``, sufficient statistics (moments) ``u``, log
normaliser ``g`` and base measure ``f``.  Variational message passing
(Winn and Bishop; Langseth and Nielsen, "Variational inference: scalable
solutions") keeps ``q(x)`` in the same family: its natural parameters are
the expected ``phi`` from the parents' moments plus one message from each
child, the child's expected log density as a function of ``u(x)``.  Every
message a node sends is linear in its own moments and a count ``n`` (the
weight of each element), so that a mixture can send summed, weighted
statistics instead of one message per row.

Arrays carry plates first and the variable's own axes last; plates
broadcast right-aligned, as in BayesPy.
"""

import numpy as np
from scipy.special import digamma, gammaln, logsumexp, expit
from sklearn.utils import check_random_state

from ._moments import MomentsKind, _logdet_pd, _outer, multigammaln_vec
from ._plates import NetworkError, broadcast_plates, plate_total, sum_to_plates

__all__ = [
    "Node",
    "Constant",
    "Stochastic",
    "SumMultiply",
    "GaussianARD",
    "Gaussian",
    "GaussianWishart",
    "Gamma",
    "Wishart",
    "Dirichlet",
    "Categorical",
    "Beta",
    "Bernoulli",
    "Poisson",
    "Multinomial",
    "Mixture",
]

_LOG_2PI = np.log(2.0 * np.pi)


def _diag(a, ndim):
    """Diagonal matrices over the last ``ndim`` axes: ``plates + shape -> plates + shape + shape``."""
    if ndim == 0:
        return a
    shape = a.shape[a.ndim - ndim :]
    plates = a.shape[: a.ndim - ndim]
    D = int(np.prod(shape))
    flat = a.reshape(plates + (D,))
    out = np.zeros(plates + (D, D))
    idx = np.arange(D)
    out[..., idx, idx] = flat
    return out.reshape(plates + shape + shape)


def _get_diag(a, ndim):
    """The diagonal of ``plates + shape + shape`` matrices: ``plates + shape``."""
    if ndim == 0:
        return a
    shape = a.shape[a.ndim - ndim :]
    plates = a.shape[: a.ndim - 2 * ndim]
    D = int(np.prod(shape))
    flat = a.reshape(plates + (D, D))
    return np.diagonal(flat, axis1=-2, axis2=-1).reshape(plates + shape)


def _expand_n(n, ndim):
    """A count per plate element, with ``ndim`` trailing axes for the variable."""
    n = np.asarray(n, dtype=np.float64)
    return n.reshape(n.shape + (1,) * ndim)


def _propagate_masks(node):
    """Mask the latent elements above ``node`` whose every child element is missing, as BayesPy does.

    An element that no observed element depends on is integrated out
    exactly: it sends no message and adds nothing to the bound.
    """
    for parent in node.parents:
        if isinstance(parent, Constant) or getattr(parent, "observed", False):
            continue
        used = np.zeros(parent.plates, dtype=bool)
        for child, index in parent.children:
            m = child._mask_to_parent(index)
            if m is None:
                used = None
                break
            used = used | m
        parent._mask = None if used is None or used.all() else used.astype(np.float64)
        _propagate_masks(parent)


class Node:
    """A node of a Bayesian network: plates, the kind of its moments, its parents and children.

    Not used directly: see :class:`Stochastic`'s families and
    :class:`Constant`.  ``plates`` are the node's replications (the axes
    before the variable's own), ``dims`` the shape of each moment array.

    Parameters
    ----------
    kind : MomentsKind
        The kind of moments the node hands its children.
    plates : tuple of int
        The node's plates.
    name : str
        A name for messages and for :attr:`skvi.networks.VB` look-ups.

    Examples
    --------
    >>> from skvi.networks import Gamma
    >>> tau = Gamma(2.0, 1.0, plates=(3,), name="tau")
    >>> tau.plates, tau.dims
    ((3,), ((), ()))
    """

    def __init__(self, kind, plates, name=""):
        self._kind = kind
        self.plates = tuple(int(p) for p in plates)
        self.name = name
        self.parents = []
        self.children = []

    @property
    def dims(self):
        """The variable shape of each moment array."""
        return self._kind.dims

    def describe(self):
        """How the node is named in messages.

        Returns
        -------
        str
            Its class and its name.
        """
        label = f"'{self.name}'" if self.name else "(unnamed)"
        return f"{type(self).__name__} {label}"

    _row_weight = None
    #: 1 at the observed elements and 0 elsewhere (plates-shaped) after
    #: ``observe(x, mask)`` with a mask that leaves some out; None otherwise.
    _mask = None

    def _weights_to(self, parent):
        """The weights (plates-shaped) of the elements' messages to ``parent``, or None for ones.

        Row weights when the message sums over weighted rows (a parent without
        them), times the observation mask: an element left out sends nothing.
        """
        w = self._row_weight
        if w is not None and parent._row_weight is not None:
            w = None
        m = self._mask
        if m is None:
            return w
        return m if w is None else w * m

    def _mask_to_parent(self, index):
        """The elements of parent ``index`` that this node's counted elements use (bool), or None for all."""
        m = self._mask
        if m is None:
            return None
        parent = self.parents[index]
        full = self._plates_to_parent(index) if isinstance(self, Stochastic) else self.plates
        m = np.broadcast_to(m.reshape(m.shape + (1,) * (len(full) - m.ndim)), full)
        return sum_to_plates(m, parent.plates, 0, full) > 0

    def _total(self, a):
        """``a`` (broadcastable to the plates) summed over the plates, rows weighted, masked."""
        w, m = self._row_weight, self._mask
        if w is None and m is None:
            return plate_total(a, self.plates)
        weight = m if w is None else (w if m is None else w * m)
        return float(np.sum(np.broadcast_to(a, self.plates) * weight))

    def observe(self, x):
        """Observing is for stochastic nodes: a fixed or deterministic node raises.

        Parameters
        ----------
        x : array-like
            The data.
        """
        raise NetworkError(
            f"{self.describe()}: only a stochastic node can be observed; this "
            "one is fixed or computed from its parents"
        )

    def get_moments(self):
        """The node's current moments ``E_q[u(x)]``, BayesPy's convention (a list of arrays).

        Returns
        -------
        list of ndarray
            One array per moment, of shape ``plates + dims[i]``.
        """
        return [np.broadcast_to(u, self.plates + d) for u, d in zip(self.u, self.dims)]

    def __repr__(self):
        return f"<{self.describe()} plates={self.plates}>"


class Constant(Node):
    """A fixed value as a parent: its moments are those of the value.

    Parameters
    ----------
    kind : MomentsKind
        The moments the child's slot needs.
    value : array-like
        The value; its leading axes beyond the variable's shape are plates.
    name : str, default=''
        A name.

    Examples
    --------
    >>> from skvi.networks._moments import MomentsKind
    >>> from skvi.networks import Constant
    >>> c = Constant(MomentsKind.gamma(), [1.0, np.e])
    >>> c.plates, c.get_moments()[1]
    ((2,), array([0., 1.]))
    """

    def __init__(self, kind, value, name=""):
        try:
            u = kind.fixed(value)
        except ValueError as err:
            raise NetworkError(f"{name or 'a fixed parent'}: {err}") from None
        plates = u[0].shape[: u[0].ndim - len(kind.dims[0])]
        super().__init__(kind, plates, name)
        self.u = u
        self.observed = True

    def update(self):
        """Nothing to update: the value is fixed."""


def _as_parent(child, slot, value, kind):
    """A node for the parent ``slot`` of ``child``: the node itself, or a Constant of the value."""
    if isinstance(value, Node):
        if value._kind.name == kind.name and value._kind != kind:
            raise NetworkError(
                f"{child}: parent '{slot}' is {value.describe()} of {value._kind.describe}, "
                f"but the node needs a {kind.describe}: shapes do not match"
            )
        if value._kind != kind:
            raise NetworkError(
                f"{child}: parent '{slot}' is {value.describe()} with "
                f"{value._kind.describe} moments, but a {child.split()[0]} is conjugate only "
                f"to a parent with {kind.describe} moments (a node of that family or an array)"
            )
        return value
    try:
        return Constant(kind, value, name=slot)
    except NetworkError as err:
        raise NetworkError(f"{child}: parent '{slot}': {str(err).split(': ', 1)[1]}") from None


def _from_prior(name, doc):
    """A property of q's ``name``, which starts at the prior when first read.

    ``q`` is computed from the prior on the first read of any of its parts
    (a node observed first never computes it).
    """

    def get(self):
        if self.__dict__.get("_u") is None:
            self.initialize_from_prior()
        return getattr(self, name)

    def set(self, value):
        setattr(self, name, value)

    return property(get, set, doc=doc)


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

    def _plates_to_parent(self, index):
        """The plates of this node as parent ``index`` sees them (a message's full plates)."""
        return self.plates

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
        if w is None:
            m = self._message(index, self.u, self._parent_moments(), np.ones(()))
        else:
            u = [ui * w.reshape(w.shape + (1,) * len(d)) for ui, d in zip(self.u, self.dims)]
            m = self._message(index, u, self._parent_moments(), w)
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
        _propagate_masks(self)
        try:
            self.u, self.f = self._fixed_moments_and_f(x)
        except ValueError as err:
            raise NetworkError(f"{self.describe()}: {err}") from None
        self.phi = None
        self.g = None
        self.observed = True
        return self

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
        L -= self._total(self.g)
        for phi, u, d in zip(self.phi, self.u, self.dims):
            axes = tuple(range(-len(d), 0))
            L -= self._total(np.sum(phi * u, axis=axes) if axes else phi * u)
        return L

    def _expected_log_prior(self, up):
        """``E[phi(parents) . u(x) + g(parents)]`` summed over the plates."""
        phi_p = self._phi_from_parents(up)
        L = self._total(self._cgf_from_parents(up))
        for phi, u, d in zip(phi_p, self.u, self.dims):
            axes = tuple(range(-len(d), 0))
            with np.errstate(invalid="ignore"):
                term = phi * u
            term = np.where(u != 0, term, 0.0)  # 0 * -inf: a category of zero probability
            L += self._total(np.sum(term, axis=axes) if axes else term)
        return L


# ====================================================================== Gaussians
class GaussianARD(Stochastic):
    """A Gaussian variable with a diagonal precision: BayesPy's ``GaussianARD``.

    ``x ~ N(mu, diag(alpha)^-1)`` elementwise over ``shape``.  ``mu`` is a
    Gaussian node of the same shape or an array; ``alpha`` a :class:`Gamma`
    node or a positive array, whose trailing plates run over ``shape``
    (automatic relevance determination).  Moments ``[E x, E x x^T]``.

    Parameters
    ----------
    mu : node or array-like
        The mean.
    alpha : node or array-like
        The precision of each element.
    shape : tuple of int, default=()
        The variable's shape.
    plates : tuple of int or None, default=None
        The plates (default: the parents').
    name : str, default=''
        The node's name.

    Examples
    --------
    BayesPy's quickstart: the mean and precision of ten Gaussian draws.

    >>> import numpy as np
    >>> from skvi.networks import VB, Gamma, GaussianARD
    >>> np.random.seed(1)
    >>> data = np.random.normal(5, 10, 10)
    >>> mu = GaussianARD(0, 1e-6)
    >>> tau = Gamma(1e-6, 1e-6)
    >>> y = GaussianARD(mu, tau, plates=(10,))
    >>> y.observe(data)
    <GaussianARD (unnamed) plates=(10,)>
    >>> Q = VB(y, mu, tau)
    >>> Q.update(repeat=100)
    >>> round(Q.compute_lowerbound(), 4)
    -58.2029
    """

    def __init__(self, mu, alpha, shape=(), plates=None, name=""):
        self.shape = tuple(int(s) for s in shape)
        self._nd = len(self.shape)
        if isinstance(mu, Node) and mu._kind.name == "gaussian":
            dims = mu._kind.dims[0]
            extra = len(dims) - self._nd
            if extra > 0 and tuple(dims[extra:]) == self.shape:
                # BayesPy's: a mean's leading variable axes beyond the
                # shape are plates of this node (independent elements).
                mu = _AxesAsPlates(mu, extra)
        super().__init__(
            [("mu", mu, MomentsKind.gaussian(self.shape)), ("alpha", alpha, MomentsKind.gamma())],
            MomentsKind.gaussian(self.shape),
            plates,
            name,
        )

    def _plates_from_parent(self, index, plates):
        if index == 1 and self._nd:
            tail = plates[-self._nd :] if len(plates) >= self._nd else plates
            try:
                np.broadcast_shapes(tail, self.shape)
            except ValueError:
                raise NetworkError(
                    f"{self.describe()}: the trailing plates {tuple(tail)} of alpha must "
                    f"broadcast to the shape {self.shape}"
                ) from None
            return plates[: -self._nd] if len(plates) > self._nd else ()
        return plates

    def _plates_to_parent(self, index):
        return self.plates + self.shape if index == 1 else self.plates

    def _alpha(self, up):
        a, log_a = up[1]
        ones = np.ones(self.shape)
        return a * ones, log_a * ones

    def _valid_natural(self, phi):
        return _gaussian_valid(phi, self._nd)

    def _phi_from_parents(self, up):
        m = up[0][0]
        a, _ = self._alpha(up)
        return [a * m, _diag(-0.5 * a, self._nd)]

    def _cgf_from_parents(self, up):
        a, log_a = self._alpha(up)
        mm = _get_diag(up[0][1], self._nd)
        g = -0.5 * a * mm + 0.5 * log_a
        return g.sum(axis=tuple(range(-self._nd, 0))) if self._nd else g

    def _moments_and_cgf(self, phi):
        if self._nd == 0:
            u0 = -phi[0] / (2.0 * phi[1])
            u1 = u0 * u0 - 1.0 / (2.0 * phi[1])
            g = -0.5 * u0 * phi[0] + 0.5 * np.log(-2.0 * phi[1])
            return [u0, u1], g
        return _gaussian_moments(phi, self.shape)

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        k = int(np.prod(self.shape))
        return [x, _outer(x, self._nd)], np.full(x.shape[: x.ndim - self._nd], -0.5 * k * _LOG_2PI)

    def _message(self, index, u, up, n):
        a, _ = self._alpha(up)
        nn = _expand_n(n, self._nd)
        if index == 0:
            return [a * u[0], _diag(-0.5 * a * nn, self._nd)]
        m = up[0][0]
        x2 = _get_diag(u[1], self._nd)
        mm = _get_diag(up[0][1], self._nd)
        return [-0.5 * (x2 - 2.0 * u[0] * m + nn * mm), 0.5 * nn * np.ones(self.shape)]

    def _random(self, phi, rng):
        u, _ = self._moments_and_cgf(phi)
        if self._nd == 0:
            return u[0] + np.sqrt(u[1] - u[0] ** 2) * rng.standard_normal(u[0].shape)
        return _gaussian_random(u, self.shape, rng)


def _gaussian_valid(phi, nd):
    """Finite natural parameters with a positive definite precision ``-2 phi[1]``."""
    if not all(np.all(np.isfinite(a)) for a in phi):
        return False
    if nd == 0:
        return bool(np.all(phi[1] < 0))
    P = -2.0 * phi[1]
    D = int(np.prod(P.shape[P.ndim - nd :]))
    try:
        np.linalg.cholesky(P.reshape(P.shape[: P.ndim - 2 * nd] + (D, D)))
    except np.linalg.LinAlgError:
        return False
    return True


def _gaussian_moments(phi, shape):
    """Moments and log normaliser of Gaussians with natural parameters ``[Lambda mu, -Lambda/2]``."""
    nd = len(shape)
    D = int(np.prod(shape))
    plates0 = phi[0].shape[: phi[0].ndim - nd]
    phi0 = phi[0].reshape(plates0 + (D,))
    P = -2.0 * phi[1].reshape(phi[1].shape[: phi[1].ndim - 2 * nd] + (D, D))
    L = np.linalg.cholesky(P)
    Cov = np.linalg.inv(P)
    Cov = 0.5 * (Cov + np.swapaxes(Cov, -1, -2))
    mean = np.einsum("...ij,...j->...i", Cov, phi0)
    logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    g = -0.5 * np.einsum("...i,...i->...", mean, phi0) + 0.5 * logdet
    u1 = Cov + mean[..., :, None] * mean[..., None, :]
    plates = mean.shape[:-1]
    return [mean.reshape(plates + shape), u1.reshape(plates + shape + shape)], g


def _gaussian_random(u, shape, rng):
    D = int(np.prod(shape))
    plates = u[0].shape[: u[0].ndim - len(shape)]
    mean = u[0].reshape(plates + (D,))
    cov = u[1].reshape(plates + (D, D)) - mean[..., :, None] * mean[..., None, :]
    L = np.linalg.cholesky(cov)
    z = rng.standard_normal(plates + (D,))
    return (mean + np.einsum("...ij,...j->...i", L, z)).reshape(plates + shape)


class Gaussian(Stochastic):
    """A Gaussian vector with a full precision matrix: BayesPy's ``Gaussian``.

    ``x ~ N(mu, Lambda^-1)``; ``mu`` a Gaussian node of shape ``(D,)`` or an
    array, ``Lambda`` a :class:`Wishart` node or a positive definite array.

    Parameters
    ----------
    mu : node or array-like of shape (..., D)
        The mean.
    Lambda : node or array-like of shape (..., D, D)
        The precision matrix.
    plates : tuple of int or None, default=None
        The plates (default: the parents').
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Gaussian
    >>> x = Gaussian(np.zeros(2), 4.0 * np.eye(2), plates=(3,))
    >>> x.plates, x.get_moments()[1][0]
    ((3,), array([[0.25, 0.  ],
           [0.  , 0.25]]))
    """

    def __init__(self, mu, Lambda, plates=None, name=""):
        # A GaussianWishart mu is the joint (mean, precision) parent; Lambda
        # then scales its precision (a Gamma node or a positive array).
        self._joint = isinstance(mu, Node) and mu._kind.name == "gaussian_wishart"
        D = mu._kind.dims[0][0] if self._joint else _last_dim(mu, Lambda)
        self.D = D
        self.shape = (D,)
        if self._joint:
            slots = [
                ("mu", mu, MomentsKind.gaussian_wishart(D)),
                ("Lambda", Lambda, MomentsKind.gamma()),
            ]
        else:
            slots = [
                ("mu", mu, MomentsKind.gaussian((D,))),
                ("Lambda", Lambda, MomentsKind.wishart(D)),
            ]
        super().__init__(slots, MomentsKind.gaussian((D,)), plates, name)

    def _joint_parent(self, up):
        """``[Lambda mu, mu' Lambda mu, Lambda, log|Lambda|]`` of the (scaled) precision and mean."""
        if self._joint:
            s, log_s = up[1]
            Lmu, muLmu, Lam, logdet = up[0]
            s = np.asarray(s)
            return [
                s[..., None] * Lmu,
                s * muLmu,
                s[..., None, None] * Lam,
                logdet + self.D * log_s,
            ]
        m, mm = up[0]
        Lam, logdet = up[1]
        return [
            np.einsum("...ij,...j->...i", Lam, m),
            np.einsum("...ij,...ij->...", Lam, mm),
            Lam,
            logdet,
        ]

    def _valid_natural(self, phi):
        return _gaussian_valid(phi, 1)

    def _phi_from_parents(self, up):
        Lmu, _, Lam, _ = self._joint_parent(up)
        return [Lmu, -0.5 * Lam]

    def _cgf_from_parents(self, up):
        _, muLmu, _, logdet = self._joint_parent(up)
        return -0.5 * muLmu + 0.5 * logdet

    def _moments_and_cgf(self, phi):
        return _gaussian_moments(phi, self.shape)

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        return [x, _outer(x, 1)], np.full(x.shape[:-1], -0.5 * self.D * _LOG_2PI)

    def _message(self, index, u, up, n):
        nn = _expand_n(n, 2)
        if self._joint:
            s = np.asarray(up[1][0])
            if index == 0:  # to the joint node: [s x, -s n / 2, -s x x' / 2, n / 2]
                return [
                    s[..., None] * u[0],
                    -0.5 * s * n,
                    -0.5 * s[..., None, None] * u[1],
                    0.5 * n * np.ones(np.shape(s)),
                ]
            Lmu, muLmu, Lam, _ = up[0]
            quad = (
                np.einsum("...ij,...ij->...", Lam, u[1])
                - 2.0 * np.einsum("...i,...i->...", Lmu, u[0])
                + n * muLmu
            )
            return [-0.5 * quad, 0.5 * self.D * n * np.ones(np.shape(quad))]
        if index == 0:
            Lam = up[1][0]
            return [np.einsum("...ij,...j->...i", Lam, u[0]), -0.5 * Lam * nn]
        m, mm = up[0]
        x = u[0]
        xm = x[..., :, None] * m[..., None, :]
        return [-0.5 * (u[1] - xm - np.swapaxes(xm, -1, -2) + nn * mm), 0.5 * n]

    def _random(self, phi, rng):
        u, _ = self._moments_and_cgf(phi)
        return _gaussian_random(u, self.shape, rng)


def _last_dim(mu, Lambda):
    """D of a Gaussian from its parents (nodes or arrays)."""
    if isinstance(Lambda, Node):
        if Lambda._kind.name == "wishart":
            return Lambda._kind.dims[0][0]
    else:
        L = np.asarray(Lambda)
        if L.ndim >= 2:
            return L.shape[-1]
    if isinstance(mu, Node):
        if mu._kind.name == "gaussian" and len(mu._kind.dims[0]) == 1:
            return mu._kind.dims[0][0]
    else:
        m = np.asarray(mu)
        if m.ndim >= 1:
            return m.shape[-1]
    raise NetworkError(
        "Gaussian: cannot tell the dimension D from mu and Lambda "
        "(give Lambda as a D x D matrix or a Wishart node)"
    )


class GaussianWishart(Stochastic):
    """A joint Normal-Wishart mean and precision: BayesPy's ``GaussianWishart(mu, alpha, n, V)``.

    ``Lambda ~ Wishart(n, V)`` (``E[Lambda] = n V^-1``) and
    ``x | Lambda ~ N(mu, (alpha Lambda)^-1)``, one factor ``q(x, Lambda)``
    that keeps their dependence.  Moments ``[E Lambda x, E x' Lambda x,
    E Lambda, E log|Lambda|]``.  As ``mu`` of a :class:`Gaussian` (whose
    ``Lambda`` then scales the precision, 1 for none) it is the conjugate
    prior of a Gaussian's mean and precision together: a mixture's
    components as in scikit-learn's ``BayesianGaussianMixture``.  ``mu``
    may be a Gaussian node, ``alpha`` a Gamma node and ``V`` a Wishart node
    (hierarchical priors: components around a common mean, say); ``n``
    must be fixed.

    Parameters
    ----------
    mu : node or array-like of shape (..., D)
        Prior mean (a Gaussian node, or an array).
    alpha : node or array-like
        Prior precision scale of the mean (scikit-learn's
        ``mean_precision_prior``; a Gamma node, or an array).
    n : array-like
        Degrees of freedom, above ``D - 1``.
    V : node or array-like of shape (..., D, D)
        Inverse scale, ``E[Lambda] = n V^-1`` (a Wishart node, or an array).
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import GaussianWishart
    >>> gw = GaussianWishart(np.zeros(2), 1.0, 3, np.eye(2), plates=(4,))
    >>> gw.plates, gw.get_moments()[2][0]
    ((4,), array([[3., 0.],
           [0., 3.]]))
    """

    def __init__(self, mu, alpha, n, V, plates=None, name=""):
        label = f"GaussianWishart '{name}'" if name else "GaussianWishart (unnamed)"
        if isinstance(n, Node):
            raise NetworkError(
                f"{label}: the degrees of freedom n is {n.describe()}, but "
                "they have no conjugate prior: give them as an array"
            )

        def shape_of(value):
            if isinstance(value, Node):
                return value._kind.dims[0] if value._kind.name in ("gaussian", "wishart") else ()
            return np.shape(value)

        D = shape_of(V)[-1] if len(shape_of(V)) >= 2 else 0
        if D < 1 or tuple(shape_of(mu)[-1:]) != (D,):
            raise NetworkError(
                f"{label}: mu of shape {shape_of(mu)} and V of shape "
                f"{shape_of(V)} do not make a D-dimensional mean and matrix"
            )
        self.D = D
        super().__init__(
            [
                ("mu", mu, MomentsKind.gaussian((D,))),
                ("alpha", alpha, MomentsKind.gamma()),
                ("n", n, MomentsKind.wishart_dof(D)),
                ("V", V, MomentsKind.wishart(D)),
            ],
            MomentsKind.gaussian_wishart(D),
            plates,
            name,
        )

    def _valid_natural(self, phi):
        if not super()._valid_natural(phi) or np.any(phi[1] >= 0):
            return False
        if np.any(phi[3] <= 0.5 * (self.D - 1)):
            return False
        try:
            np.linalg.cholesky(self._V(phi))
        except np.linalg.LinAlgError:
            return False
        return True

    def _phi_from_parents(self, up):
        m, mm = up[0]
        a = np.asarray(up[1][0])
        n = up[2][0]
        V = up[3][0]
        return [a[..., None] * m, -0.5 * a, -0.5 * (V + a[..., None, None] * mm), 0.5 * n]

    def _cgf_from_parents(self, up):
        log_a = up[1][1]
        n, gammaln_n = up[2]
        logdet_V = up[3][1]
        D = self.D
        return 0.5 * D * log_a + 0.5 * n * logdet_V - 0.5 * n * D * np.log(2.0) - gammaln_n

    @staticmethod
    def _V(phi):
        a = -2.0 * phi[1]
        m = phi[0] / a[..., None]
        return -2.0 * phi[2] - a[..., None, None] * m[..., :, None] * m[..., None, :]

    def _moments_and_cgf(self, phi):
        D = self.D
        a = -2.0 * phi[1]
        m = phi[0] / a[..., None]
        n = 2.0 * phi[3]
        V = self._V(phi)
        ld = _logdet_pd(V)
        EL = n[..., None, None] * np.linalg.inv(V)
        ELm = np.einsum("...ij,...j->...i", EL, m)
        u = [
            ELm,
            np.einsum("...i,...i->...", m, ELm) + D / a,
            EL,
            digamma(0.5 * n[..., None] - 0.5 * np.arange(D)).sum(axis=-1) + D * np.log(2.0) - ld,
        ]
        g = (
            0.5 * D * np.log(a)
            + 0.5 * n * ld
            - 0.5 * n * D * np.log(2.0)
            - multigammaln_vec(0.5 * n, D)
        )
        return u, g

    def _message(self, index, u, up, n):
        # The terms of E[log p(x, Lambda | mu, alpha, n, V)] linear in each
        # parent's moments: alpha mu' E[Lambda x] - alpha tr(E[Lambda] mu mu') / 2,
        # D log(alpha) / 2 - alpha E[(x - mu)' Lambda (x - mu)] / 2,
        # -tr(V E[Lambda]) / 2 + n log|V| / 2.
        a = np.asarray(up[1][0])
        if index == 0:
            return [a[..., None] * u[0], -0.5 * a[..., None, None] * u[2]]
        if index == 1:
            m, mm = up[0]
            quad = (
                u[1]
                - 2.0 * np.einsum("...i,...i->...", m, u[0])
                + np.einsum("...ij,...ij->...", u[2], mm)
            )
            return [-0.5 * quad, 0.5 * self.D * n * np.ones(np.shape(quad))]
        if index == 3:
            return [-0.5 * u[2], 0.5 * up[2][0] * n]
        raise NetworkError(f"{self.describe()}: the degrees of freedom take no message")

    def _fixed_moments_and_f(self, x):
        raise ValueError("a GaussianWishart node cannot be observed in this version")


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
        for child, i in self.children:
            x, y = child._message_to_parent(i)
            m0 = m0 + x
            m1 = m1 + y
        parent = self.parents[0]
        a, b = self._a, self._b
        eyes = [np.eye(n) for n in self._sizes]
        pairs = ",".join(f"{c}{c.upper()}" for c in a)
        m1 = np.einsum(f"...{a}{b}{b.upper()},{pairs}->...{a}{b}{a.upper()}{b.upper()}", m1, *eyes)
        return [
            sum_to_plates(mi, parent.plates, len(d), self.plates[: len(parent.plates)])
            for mi, d in zip((m0, m1), parent.dims)
        ]


class SumMultiply(Node):
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

    def __init__(self, *args, name=""):
        self.name = name
        label = self.describe()
        keysets, keys_out, operands = self._parse(label, args)
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

    @staticmethod
    def _parse(label, args):
        """(keys of each operand, output keys, operands) of either BayesPy form."""
        if args and isinstance(args[0], str):
            text, operands = args[0].replace(" ", ""), list(args[1:])
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

    @property
    def u(self):
        """The moments, from the operands' current moments (cached until one changes)."""
        key = [p.u for p in self.parents]
        cached = self.__dict__.get("_u_cache")
        if cached is not None and all(a is b for a, b in zip(cached[0], key)):
            return cached[1]
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
        self._u_cache = (key, u)
        return u

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_u_cache", None)
        return state

    def update(self):
        """Nothing to update: the moments follow the operands."""

    def _message_to_parent(self, index):
        # The children's messages to f, then to operand ``index`` through the
        # others: the sums of u, with the operand's own moments left out.
        out = self.dims
        m0 = np.zeros(self.plates + out[0])
        m1 = np.zeros(self.plates + out[1])
        for child, i in self.children:
            a, b = child._message_to_parent(i)
            m0 = m0 + a
            m1 = m1 + b
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


# ====================================================================== Gamma, Wishart
class Gamma(Stochastic):
    """A Gamma variable (shape ``a``, rate ``b``): BayesPy's ``Gamma``.

    Moments ``[E x, E log x]``.  ``b`` may be a Gamma node (a hierarchical
    rate); ``a`` must be fixed (a Gamma's shape has no conjugate prior).

    Parameters
    ----------
    a : array-like
        Shape, positive.
    b : node or array-like
        Rate, positive.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Gamma
    >>> Gamma(3.0, 2.0).get_moments()[0]
    array(1.5)
    """

    def __init__(self, a, b, plates=None, name=""):
        if isinstance(a, Node):
            label = f"Gamma '{name}'" if name else "Gamma (unnamed)"
            raise NetworkError(
                f"{label}: the shape parameter a is {a.describe()}, but a "
                "Gamma's shape has no conjugate prior: give it as an array"
            )
        super().__init__(
            [("a", a, MomentsKind.gamma_shape()), ("b", b, MomentsKind.gamma())],
            MomentsKind.gamma(),
            plates,
            name,
        )

    def _valid_natural(self, phi):
        return bool(super()._valid_natural(phi) and np.all(phi[0] < 0) and np.all(phi[1] > 0))

    def _phi_from_parents(self, up):
        return [-up[1][0], up[0][0]]

    def _cgf_from_parents(self, up):
        return up[0][0] * up[1][1] - up[0][1]

    def _moments_and_cgf(self, phi):
        log_b = np.log(-phi[0])
        return [phi[1] / -phi[0], digamma(phi[1]) - log_b], phi[1] * log_b - gammaln(phi[1])

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x <= 0):
            raise ValueError("Gamma values must be positive")
        return [x, np.log(x)], -np.log(x)

    def _message(self, index, u, up, n):
        return [-u[0], up[0][0] * n]

    def _random(self, phi, rng):
        return rng.gamma(phi[1], 1.0 / -phi[0])


class Wishart(Stochastic):
    """A Wishart precision matrix: BayesPy's ``Wishart(n, V)``, ``E[Lambda] = n V^-1``.

    Moments ``[E Lambda, E log|Lambda|]``.  ``V`` may be a Wishart node;
    ``n`` must be fixed.

    Parameters
    ----------
    n : array-like
        Degrees of freedom, above ``D - 1``.
    V : node or array-like of shape (..., D, D)
        The inverse scale matrix.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Wishart
    >>> Wishart(3, np.eye(2)).get_moments()[0]
    array([[3., 0.],
           [0., 3.]])
    """

    def __init__(self, n, V, plates=None, name=""):
        if isinstance(V, Node):
            if V._kind.name != "wishart":
                raise NetworkError(
                    f"Wishart '{name}': parent 'V' is {V.describe()}, but a "
                    "Wishart is conjugate only to a Wishart V (or an array)"
                )
            D = V._kind.dims[0][0]
        else:
            V_arr = np.asarray(V, dtype=np.float64)
            if V_arr.ndim < 2 or V_arr.shape[-1] != V_arr.shape[-2]:
                raise NetworkError(
                    f"Wishart '{name}': V must be a square matrix, got shape {V_arr.shape}"
                )
            D = V_arr.shape[-1]
        if isinstance(n, Node):
            raise NetworkError(
                f"Wishart '{name}': the degrees of freedom n is "
                f"{n.describe()}, but they have no conjugate prior: give "
                "them as an array"
            )
        self.D = D
        super().__init__(
            [("n", n, MomentsKind.wishart_dof(D)), ("V", V, MomentsKind.wishart(D))],
            MomentsKind.wishart(D),
            plates,
            name,
        )

    def _valid_natural(self, phi):
        if not super()._valid_natural(phi) or np.any(phi[1] <= 0.5 * (self.D - 1)):
            return False
        try:
            np.linalg.cholesky(-phi[0])
        except np.linalg.LinAlgError:
            return False
        return True

    def _phi_from_parents(self, up):
        return [-0.5 * up[1][0], 0.5 * up[0][0]]

    def _cgf_from_parents(self, up):
        n, gammaln_n = up[0]
        logdet_V = up[1][1]
        return 0.5 * n * logdet_V - 0.5 * self.D * n * np.log(2.0) - gammaln_n

    def _moments_and_cgf(self, phi):
        U = -phi[0]
        ld = _logdet_pd(U)
        u0 = phi[1][..., None, None] * np.linalg.inv(U)
        u1 = -ld + digamma(phi[1][..., None] - 0.5 * np.arange(self.D)).sum(axis=-1)
        g = phi[1] * ld - multigammaln_vec(phi[1], self.D)
        return [u0, u1], g

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        ld = _logdet_pd(x)
        return [x, ld], -0.5 * (self.D + 1) * ld

    def _message(self, index, u, up, n):
        return [-0.5 * u[0], 0.5 * up[0][0] * n]

    def _random(self, phi, rng):
        # Bartlett's decomposition, over all plates at once.
        dof = 2.0 * phi[1]
        scale = np.linalg.inv(-2.0 * phi[0])  # Wishart(dof, scale): E = dof * scale
        C = np.linalg.cholesky(scale)
        plates = dof.shape
        D = self.D
        A = np.zeros(plates + (D, D))
        i = np.arange(D)
        A[..., i, i] = np.sqrt(rng.chisquare(dof[..., None] - i))
        low = np.tril_indices(D, -1)
        A[..., low[0], low[1]] = rng.standard_normal(plates + (len(low[0]),))
        CA = C @ A
        return CA @ np.swapaxes(CA, -1, -2)


# ====================================================================== Dirichlet family
class Dirichlet(Stochastic):
    """A Dirichlet probability vector: BayesPy's ``Dirichlet(alpha)``.

    Moments ``[E log p]``; ``alpha`` must be fixed and positive.

    Parameters
    ----------
    alpha : array-like of shape (..., K)
        The concentration.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Dirichlet
    >>> np.round(Dirichlet([1.0, 1.0]).get_moments()[0], 4)   # E log p = psi(1) - psi(2)
    array([-1., -1.])
    """

    _kind_name = "dirichlet"

    def __init__(self, alpha, plates=None, name=""):
        if isinstance(alpha, Node):
            raise NetworkError(
                f"{type(self).__name__} '{name}': the concentration alpha is "
                f"{alpha.describe()}, but it has no conjugate prior: give it "
                "as an array"
            )
        K = np.shape(alpha)[-1] if np.ndim(alpha) else 0
        if K < 2:
            raise NetworkError(
                f"{type(self).__name__} '{name}': alpha must have a last axis "
                f"of at least 2 categories, got shape {np.shape(alpha)}"
            )
        self.K = K
        kind = MomentsKind.beta() if self._kind_name == "beta" else MomentsKind.dirichlet(K)
        super().__init__([("alpha", alpha, MomentsKind.concentration(K))], kind, plates, name)

    def _valid_natural(self, phi):
        return bool(super()._valid_natural(phi) and np.all(phi[0] > 0))

    def _phi_from_parents(self, up):
        return [up[0][0]]

    def _cgf_from_parents(self, up):
        return up[0][1]

    def _moments_and_cgf(self, phi):
        a = phi[0]
        s = a.sum(axis=-1)
        return [digamma(a) - digamma(s)[..., None]], gammaln(s) - gammaln(a).sum(axis=-1)

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        logp = np.log(x)
        return [logp], -logp.sum(axis=-1)

    def _random(self, phi, rng):
        g = rng.gamma(phi[0])
        return g / g.sum(axis=-1, keepdims=True)


class Beta(Dirichlet):
    """A Beta probability: BayesPy's ``Beta(alpha)``, alpha of shape (..., 2).

    Moments ``[[E log p, E log(1 - p)]]``.

    Parameters
    ----------
    alpha : array-like of shape (..., 2)
        The two concentrations (of ``p`` and of ``1 - p``).
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Beta
    >>> Beta([2.0, 2.0]).plates
    ()
    """

    _kind_name = "beta"

    def __init__(self, alpha, plates=None, name=""):
        if not isinstance(alpha, Node) and np.shape(alpha)[-1:] != (2,):
            raise NetworkError(
                f"Beta '{name}': alpha must have a last axis of size 2, got shape {np.shape(alpha)}"
            )
        super().__init__(alpha, plates, name)

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        return super()._fixed_moments_and_f(np.stack([x, 1.0 - x], axis=-1))

    def _random(self, phi, rng):
        return super()._random(phi, rng)[..., 0]


class Categorical(Stochastic):
    """A categorical variable: BayesPy's ``Categorical(p)``; moments: the one-hot vector.

    Parameters
    ----------
    p : node or array-like of shape (..., K)
        A :class:`Dirichlet` node or probabilities.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Categorical
    >>> Categorical([0.25, 0.75], plates=(2,)).get_moments()[0]
    array([[0.25, 0.75],
           [0.25, 0.75]])
    """

    _discrete = True

    def __init__(self, p, plates=None, name=""):
        K = p.K if isinstance(p, Dirichlet) else (np.shape(p)[-1] if np.ndim(p) else 0)
        if isinstance(p, Node) and not isinstance(p, Dirichlet):
            K = p._kind.dims[0][0] if p._kind.dims[0] else 0
        if K < 1:
            raise NetworkError(f"Categorical '{name}': p must have a last axis of categories")
        self.K = K
        super().__init__(
            [("p", p, MomentsKind.dirichlet(K))], MomentsKind.categorical(K), plates, name
        )

    def _phi_from_parents(self, up):
        return [up[0][0]]

    def _cgf_from_parents(self, up):
        return np.zeros(())

    def _moments_and_cgf(self, phi):
        lse = logsumexp(phi[0], axis=-1)
        return [np.exp(phi[0] - lse[..., None])], -lse

    def _fixed_moments_and_f(self, x):
        return MomentsKind.categorical(self.K).fixed(x), np.zeros(np.shape(x))

    def _message(self, index, u, up, n):
        return [u[0]]  # the counts are in the moments

    def _random(self, phi, rng):
        u, _ = self._moments_and_cgf(phi)
        c = np.cumsum(u[0], axis=-1)
        r = rng.random_sample(c.shape[:-1] + (1,)) * c[..., -1:]
        return np.minimum((c < r).sum(axis=-1), self.K - 1)


class Multinomial(Stochastic):
    """Counts of ``n`` draws from ``K`` categories: BayesPy's ``Multinomial(n, p)``.

    Parameters
    ----------
    n : array-like of int
        The number of draws (fixed).
    p : node or array-like of shape (..., K)
        A :class:`Dirichlet` node or probabilities.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Multinomial
    >>> Multinomial(4, [0.25, 0.75]).get_moments()[0]
    array([1., 3.])
    """

    _discrete = True

    def __init__(self, n, p, plates=None, name=""):
        K = p.K if isinstance(p, Dirichlet) else np.shape(p)[-1]
        self.K = K
        if isinstance(n, Node):
            raise NetworkError(f"Multinomial '{name}': the number of draws n must be fixed")
        self.n = np.asarray(n, dtype=np.float64)
        n_plates = self.n.shape
        super().__init__(
            [("p", p, MomentsKind.dirichlet(K))],
            MomentsKind.multinomial(K),
            broadcast_plates(f"Multinomial '{name}'", n_plates, plates or ())
            if plates is not None or n_plates
            else None,
            name,
        )

    def _phi_from_parents(self, up):
        return [up[0][0]]

    def _cgf_from_parents(self, up):
        return np.zeros(())

    def _moments_and_cgf(self, phi):
        lse = logsumexp(phi[0], axis=-1)
        return [self.n[..., None] * np.exp(phi[0] - lse[..., None])], -self.n * lse

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x < 0) or np.any(x != np.round(x)) or np.any(x.sum(axis=-1) != self.n):
            raise ValueError("counts must be non-negative integers summing to n")
        return [x], gammaln(self.n + 1.0) - gammaln(x + 1.0).sum(axis=-1)

    def _message(self, index, u, up, n):
        return [u[0]]  # the counts are in the moments


class Bernoulli(Stochastic):
    """A binary variable: BayesPy's ``Bernoulli(p)``; ``p`` a :class:`Beta` node or a probability.

    Parameters
    ----------
    p : node or array-like
        The probability of 1.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Bernoulli
    >>> Bernoulli(0.25).get_moments()[0]
    array(0.25)
    """

    _discrete = True

    def __init__(self, p, plates=None, name=""):
        super().__init__([("p", p, MomentsKind.beta())], MomentsKind.bernoulli(), plates, name)

    def _phi_from_parents(self, up):
        return [up[0][0][..., 0] - up[0][0][..., 1]]

    def _cgf_from_parents(self, up):
        return up[0][0][..., 1]

    def _moments_and_cgf(self, phi):
        return [expit(phi[0])], -np.logaddexp(0.0, phi[0])

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        return MomentsKind.bernoulli().fixed(x), np.zeros(x.shape)

    def _message(self, index, u, up, n):
        return [np.stack(np.broadcast_arrays(u[0], n - u[0]), axis=-1)]

    def _random(self, phi, rng):
        return (rng.random_sample(np.shape(phi[0])) < expit(phi[0])).astype(np.float64)


class Poisson(Stochastic):
    """A count: BayesPy's ``Poisson(lambda)``; the rate a :class:`Gamma` node or an array.

    Parameters
    ----------
    l : node or array-like
        The rate.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> from skvi.networks import Poisson
    >>> Poisson(2.5).get_moments()[0]
    array(2.5)
    """

    _discrete = True

    def __init__(self, l, plates=None, name=""):
        super().__init__([("lambda", l, MomentsKind.gamma())], MomentsKind.poisson(), plates, name)

    def _phi_from_parents(self, up):
        return [up[0][1]]

    def _cgf_from_parents(self, up):
        return -up[0][0]

    def _moments_and_cgf(self, phi):
        r = np.exp(phi[0])
        return [r], -r

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x < 0) or np.any(x != np.round(x)):
            raise ValueError("Poisson values must be non-negative integers")
        return [x], -gammaln(x + 1.0)

    def _message(self, index, u, up, n):
        return [-n * np.ones_like(u[0]), u[0]]

    def _random(self, phi, rng):
        return rng.poisson(np.exp(phi[0])).astype(np.float64)


# ====================================================================== Mixture
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
        total = None
        for child, i in self.children:
            m = child._message_to_parent(i)
            total = m if total is None else [a + b for a, b in zip(total, m)]
        return [
            sum_to_plates(
                self._move(np.broadcast_to(m, self.plates + d), len(d), back=True),
                parent.plates,
                len(d),
                self._full,
            )
            for m, d in zip(total, self.dims)
        ]


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
        return self._proto._phi_from_parents(up[1:])

    def _log_pdf_k(self, u, up):
        """``phi_k . u + g_k`` for every element and cluster: shape ``plates + (K,)``."""
        phi = self._cluster_phi(up)
        g = np.asarray(self._proto._cgf_from_parents(up[1:]), dtype=np.float64)
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
        g = np.asarray(self._proto._cgf_from_parents(up[1:]), dtype=np.float64)
        g = np.broadcast_to(g, g.shape[:-1] + (self.K,)) if g.ndim else np.full(self.K, g)
        return np.sum(up[0][0] * g, axis=-1)

    def _moments_and_cgf(self, phi):
        return self._proto._moments_and_cgf(phi)

    def _fixed_moments_and_f(self, x):
        return self._proto._fixed_moments_and_f(x)

    def _random(self, phi, rng):
        return self._proto._random(phi, rng)

    def _expected_log_prior(self, up):
        z = up[0][0]
        lp = self._log_pdf_k(self.u, up)
        return self._total(np.sum(np.broadcast_to(z, lp.shape) * lp, axis=-1))

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
        z = np.broadcast_to(up[0][0], self.plates + (self.K,))
        w = self._weights_to(parent)
        if w is not None:
            z = z * np.broadcast_to(w, self.plates)[..., None]
        stats, counts = _cluster_stats(z, self.u, self.dims, self.plates, self._proto.plates)
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
    D = int(np.prod(u.shape[u.ndim - nd :])) if nd else 1
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
        D = int(np.prod(dims)) if nd else 1
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
            D = int(np.prod(d)) if d else 1
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
