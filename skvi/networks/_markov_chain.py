"""Markov chain nodes: BayesPy's ``CategoricalMarkovChain`` and ``GaussianMarkovChain``.

A chain is one node whose variable runs over time: ``q`` keeps the
dependence of neighbouring states, and its moments are each state's and
each neighbouring pair's.  A child that takes the states one at a time (a
:class:`Mixture` whose assignments a hidden Markov chain draws, a
:class:`Dot` of loadings and latent states) sees the chain through a view
with the time axis as its last plate, as BayesPy's converters; the view
hands the chain its children's messages.  The recursions along the chain
(forward-backward, the Kalman smoother) are in :mod:`skvi.expfam.markov_chain`.
"""

import numbers

import numpy as np

from ..expfam.counts import category_in_support
from ..expfam.markov_chain import (
    categorical_chain_moments,
    categorical_chain_sample,
    gaussian_chain_moments,
    gaussian_chain_sample,
)
from ._dirichlet import Dirichlet
from ._gaussian import _last_dim
from ._moments import MomentsKind, _outer, _require
from ._node import Node, _children_total, _diag
from ._plates import NetworkError
from ._stochastic import Stochastic

__all__ = ["CategoricalMarkovChain", "GaussianMarkovChain"]

_LOG_2PI = np.log(2.0 * np.pi)


class _ChainKind(MomentsKind):
    """The moments of a chain of ``N`` states: a state's and a neighbouring pair's."""

    def __init__(self, name, dims, describe, value_shape):
        super().__init__(name, dims, describe)
        self._value_shape = tuple(value_shape)

    def value_shape(self):
        return self._value_shape

    def fixed(self, x):
        x = np.asarray(x, dtype=np.float64)
        shape = self._value_shape
        if x.shape[x.ndim - len(shape) :] != shape:
            raise ValueError(f"a value of shape {x.shape} is not a {self.describe}")
        if self.name == "categorical_markov_chain":
            K = self.dims[0][0]
            _require(
                np.all(category_in_support(x, K), axis=-1),
                x,
                f"a chain of categories, integers in [0, {K})",
                event_ndim=1,
            )
            eye = np.eye(K)
            i = x.astype(np.intp)
            return [eye[i[..., 0]], eye[i[..., :-1], :, None] * eye[i[..., 1:], None, :]]
        _require(np.all(np.isfinite(x), axis=(-2, -1)), x, "finite", event_ndim=2)
        return [x, _outer(x, 1), x[..., :-1, :, None] * x[..., 1:, None, :]]


def _length(label, states, time_plates, what, arg):
    """The chain's length from ``states`` (the argument ``arg``) and the transitions' time plates.

    BayesPy's rule: the parents' time plate, of ``N - 1`` transitions, gives
    the length unless it is 1 (the same transitions at every step).
    """
    if states is not None:
        if isinstance(states, bool) or not isinstance(states, numbers.Integral) or states < 2:
            raise NetworkError(
                f"{label}: {arg}, the length of the chain, must be an integer of at least 2, "
                f"got {states!r}"
            )
        states = int(states)
    T = [t for t in time_plates if t != 1]
    if len(set(T)) > 1:
        raise NetworkError(
            f"{label}: the parents' time plates {tuple(time_plates)} disagree on the "
            "number of transitions"
        )
    if T:
        if states is not None and states != T[0] + 1:
            raise NetworkError(
                f"{label}: {arg}={states} does not match {what}'s {T[0]} transitions "
                f"(a chain of N states has N - 1)"
            )
        return T[0] + 1
    if states is None:
        raise NetworkError(
            f"{label}: cannot tell the length of the chain from {what}; give it as {arg}=..."
        )
    return states


def _plates_of(value):
    """The plates of a parent given as a node, or None for an array."""
    return value.plates if isinstance(value, Node) else None


class _TimeAsPlate(Node):
    """A chain's states one at a time: the chain's plates and the time axis as plates.

    Moments of each state (``kind``), from the chain's; the children's
    messages, per state, go back onto the chain's state terms.
    """

    def __init__(self, chain, kind):
        super().__init__(kind, chain.plates + (chain.N,), chain.name and f"{chain.name}[states]")
        self.parents = [chain]
        chain.children.append((self, 0))

    @property
    def u(self):
        return self.parents[0]._state_moments(self.parents[0].u)

    def update(self):
        """Nothing to update: the moments are the chain's."""

    def _mask_to_parent(self, index):
        m = self._mask
        if m is None:
            return None
        return np.broadcast_to(m, self.plates).any(axis=-1)

    def _message_to_parent(self, index):
        chain = self.parents[0]
        total = _children_total(self)
        if total is None:
            total = [np.zeros(()) for _ in self.dims]
        full = [np.broadcast_to(m, self.plates + d) for m, d in zip(total, self.dims)]
        return chain._state_message(full)


class CategoricalMarkovChain(Stochastic):
    """A discrete Markov chain: BayesPy's ``CategoricalMarkovChain(pi, A, states=N)``.

    ``p(z_0 = k) = pi_k`` and ``p(z_n = j | z_{n-1} = i) = A_ij`` (or
    ``A[n-1]_ij``, transitions that vary in time), ``K`` states.  Moments:
    ``[q(z_0), q(z_n, z_{n+1})]`` of shapes ``(K,)`` and ``(N-1, K, K)``,
    computed by the forward-backward recursion.  As the assignments of a
    :class:`Mixture` it makes a hidden Markov model; a child taking
    categorical moments sees its states with the time axis as the last
    plate.

    Parameters
    ----------
    pi : node or array-like of shape (..., K)
        A :class:`Dirichlet` node or the first state's probabilities.
    A : node or array-like of shape (..., K, K) or (..., N - 1, K, K)
        A :class:`Dirichlet` node with plates ``(..., K)`` or
        ``(..., N - 1, K)``, or transition probabilities, each row on the
        simplex.
    states : int or None, default=None
        ``N``, the length of the chain (needed when ``A`` does not vary in
        time).
    plates : tuple of int or None, default=None
        The plates (independent chains).
    name : str, default=''
        The node's name.

    Examples
    --------
    BayesPy's weather example: whether it rains, seen through what Bob does.

    >>> import numpy as np
    >>> from skvi.networks import VB, Categorical, CategoricalMarkovChain, Mixture
    >>> np.random.seed(1)
    >>> Z = CategoricalMarkovChain([0.6, 0.4], [[0.7, 0.3], [0.4, 0.6]], states=100)
    >>> P = [[0.1, 0.4, 0.5], [0.6, 0.3, 0.1]]
    >>> Y = Mixture(Z, Categorical, P)
    >>> weather = Z.random()
    >>> activity = Mixture(weather, Categorical, P).random()
    >>> _ = Y.observe(activity)
    >>> Q = VB(Y, Z)
    >>> Q.update()
    >>> print(round(Q.compute_lowerbound(), 2))        # BayesPy prints -1.095883e+02
    -109.59
    """

    _discrete = True

    def __init__(self, pi, A, states=None, plates=None, name=""):
        label = f"CategoricalMarkovChain '{name}'" if name else "CategoricalMarkovChain (unnamed)"
        K = _categories(label, "pi", pi)
        KA = _categories(label, "A", A)
        if K != KA:
            raise NetworkError(
                f"{label}: parent 'pi' has {K} categories but the rows of parent 'A' have {KA}"
            )
        A_plates = _plates_of(A)
        if A_plates is None:
            A_plates = np.shape(A)[:-1]
        if len(A_plates) < 1 or A_plates[-1] != K:
            raise NetworkError(
                f"{label}: parent 'A' must be square, K x K transition probabilities (a "
                f"Dirichlet node with last plate {K}); its plates are {tuple(A_plates)}"
            )
        self.K = K
        self.N = _length(label, states, tuple(A_plates[-2:-1]), "A", "states")
        N = self.N
        kind = _ChainKind(
            "categorical_markov_chain",
            ((K,), (N - 1, K, K)),
            f"categorical Markov chain of {N} states over {K} categories",
            (N,),
        )
        super().__init__(
            [("pi", pi, MomentsKind.dirichlet(K)), ("A", A, MomentsKind.dirichlet(K))],
            kind,
            plates,
            name,
        )

    def _plates_from_parent(self, index, plates):
        return plates[:-2] if index == 1 else plates

    def _plates_to_parent(self, index):
        return self.plates + (self.N - 1, self.K) if index == 1 else self.plates

    def _view_as(self, name):
        if name == "categorical":
            return _TimeAsPlate(self, MomentsKind.categorical(self.K))
        return self

    def _state_moments(self, u):
        """Each state's marginal, ``plates + (N, K)``."""
        z0, zz = u
        later = zz.sum(axis=-2)
        first = np.broadcast_to(z0[..., None, :], later.shape[:-2] + (1, self.K))
        return [np.concatenate([first, later], axis=-2)]

    def _state_message(self, m):
        """Each state's log-likelihood added to the first state's and its incoming transition's."""
        m = m[0]
        return [m[..., 0, :], m[..., 1:, None, :]]

    def _phi_from_parents(self, up):
        return [up[0][0], up[1][0]]

    def _cgf_from_parents(self, up):
        return np.zeros(())

    def _moments_and_cgf(self, phi):
        z0, zz, log_normalizer = categorical_chain_moments(phi[0], phi[1])
        return [z0, zz], -log_normalizer

    def _support(self, x):
        ok = np.all(category_in_support(x, self.K), axis=-1)
        return ok, f"a chain of categories, integers in [0, {self.K})", 1

    def _fixed_moments_and_f(self, x):
        return self._kind.fixed(x), np.zeros(np.shape(x)[:-1])

    def _message(self, index, u, up, n):
        return [u[index]]  # the counts are in the moments

    def _random(self, phi, rng):
        return categorical_chain_sample(phi[0], phi[1], self.plates, self.N, rng)

    def lower_bound_contribution(self):
        """This node's term of the lower bound, with every constant.

        Returns
        -------
        float
            ``E[log p(z | pi, A)] - E[log q(z)]``; a transition of
            probability zero that ``q`` never takes adds nothing.
        """
        with np.errstate(invalid="ignore"):
            if self.phi is None or self.observed:
                return super().lower_bound_contribution()
            phi = self.phi
            self.phi = [np.where(u != 0, p, 0.0) for p, u in zip(phi, self.u)]
            try:
                return super().lower_bound_contribution()
            finally:
                self.phi = phi


def _categories(label, slot, value):
    """The number of categories of a Dirichlet parent or an array of probabilities."""
    if isinstance(value, Dirichlet):
        return value.K
    if isinstance(value, Node):
        dims = value._kind.dims[0]
        if value._kind.name != "dirichlet" or len(dims) != 1:
            raise NetworkError(
                f"{label}: parent '{slot}' is {value.describe()}, but it must be a "
                "Dirichlet node or probabilities"
            )
        return dims[0]
    shape = np.shape(value)
    if len(shape) < 1 or shape[-1] < 1:
        raise NetworkError(
            f"{label}: parent '{slot}' of shape {shape} has no last axis of categories"
        )
    return shape[-1]


class GaussianMarkovChain(Stochastic):
    """A linear Gaussian state-space chain: BayesPy's ``GaussianMarkovChain(mu, Lambda, A, nu, n=N)``.

    ``x_0 ~ N(mu, Lambda^-1)`` and ``x_n ~ N(A x_{n-1}, diag(nu)^-1)``
    (``A`` and ``nu`` may vary in time), ``D``-dimensional states.
    Moments ``[E x_n, E x_n x_n^T, E x_n x_{n+1}^T]`` of shapes ``(N, D)``,
    ``(N, D, D)`` and ``(N - 1, D, D)``, from the Kalman smoother over the
    block-tridiagonal precision.  ``A`` is a :class:`GaussianARD` or
    :class:`Gaussian` node of shape ``(D,)`` with plates ``(..., D)`` or
    ``(..., N - 1, D)`` (its rows), or an array; ``nu`` a :class:`Gamma`
    node or an array with plates ``(D,)``, ``(..., 1, D)`` or
    ``(..., N - 1, D)``.  A child taking Gaussian moments of shape ``(D,)``
    (a :class:`Dot`) sees its states with the time axis as the last plate.

    Parameters
    ----------
    mu : node or array-like of shape (..., D)
        The first state's mean.
    Lambda : node or array-like of shape (..., D, D)
        The first state's precision (a :class:`Wishart` node or an array).
    A : node or array-like
        The dynamics matrix, row by row.
    nu : node or array-like
        The innovations' precisions, one per state dimension.
    n : int or None, default=None
        ``N``, the length of the chain (needed when ``A`` and ``nu`` do not
        vary in time).
    plates : tuple of int or None, default=None
        The plates (independent chains).
    name : str, default=''
        The node's name.

    Examples
    --------
    A random walk seen with noise: the smoother's means lie between the
    observations.

    >>> import numpy as np
    >>> from skvi.networks import VB, GaussianARD, GaussianMarkovChain
    >>> X = GaussianMarkovChain(np.zeros(1), np.eye(1), np.eye(1), np.ones(1), n=4)
    >>> Y = GaussianARD(X, 1.0, shape=(1,))
    >>> _ = Y.observe([[0.0], [1.0], [2.0], [3.0]])
    >>> VB(Y, X).update()
    >>> print(np.round(X.get_moments()[0].ravel(), 3))
    [0.353 1.059 1.824 2.412]
    """

    def __init__(self, mu, Lambda, A, nu, n=None, plates=None, name=""):
        label = f"GaussianMarkovChain '{name}'" if name else "GaussianMarkovChain (unnamed)"
        try:
            D = _last_dim(mu, Lambda)
        except NetworkError as err:
            raise NetworkError(f"{label}: {str(err).split(': ', 1)[1]}") from None
        A_plates = _plates_of(A)
        if A_plates is None:
            A_plates = np.shape(A)[:-1]
        nu_plates = _plates_of(nu)
        if nu_plates is None:
            nu_plates = np.shape(nu)
        if len(A_plates) < 1 or A_plates[-1] != D:
            raise NetworkError(
                f"{label}: parent 'A' must be a {D} x {D} dynamics matrix, its rows a plate of "
                f"size {D}; its plates are {tuple(A_plates)}"
            )
        if len(nu_plates) >= 1 and nu_plates[-1] not in (1, D):
            raise NetworkError(
                f"{label}: parent 'nu' must have one precision per state dimension (last "
                f"plate {D}); its plates are {tuple(nu_plates)}"
            )
        self.D = D
        self.N = _length(
            label, n, tuple(A_plates[-2:-1]) + tuple(nu_plates[-2:-1]), "A and nu", "n"
        )
        N = self.N
        kind = _ChainKind(
            "gaussian_markov_chain",
            ((N, D), (N, D, D), (N - 1, D, D)),
            f"Gaussian Markov chain of {N} states of dimension {D}",
            (N, D),
        )
        super().__init__(
            [
                ("mu", mu, MomentsKind.gaussian((D,))),
                ("Lambda", Lambda, MomentsKind.wishart(D)),
                ("A", A, MomentsKind.gaussian((D,))),
                ("nu", nu, MomentsKind.gamma()),
            ],
            kind,
            plates,
            name,
        )

    def _plates_from_parent(self, index, plates):
        return plates[:-2] if index >= 2 else plates

    def _plates_to_parent(self, index):
        return self.plates + (self.N - 1, self.D) if index >= 2 else self.plates

    def _view_as(self, name):
        if name == "gaussian":
            return _TimeAsPlate(self, MomentsKind.gaussian((self.D,)))
        return self

    def _state_moments(self, u):
        return [u[0], u[1]]

    def _state_message(self, m):
        N, D = self.N, self.D
        return [m[0], m[1], np.zeros(self.plates + (N - 1, D, D))]

    def _dynamics(self, up):
        """``E[nu_d]`` (..., T, D), ``E[a_d]`` (..., T, D, D), ``E[a_d a_d^T]`` and ``E[log nu_d]``."""
        D = self.D
        a, aa = up[2]
        nu, log_nu = (np.asarray(v, dtype=np.float64) for v in up[3])

        def timed(v, ndim):
            v = np.asarray(v, dtype=np.float64)
            return v.reshape((1,) * max(0, ndim - v.ndim) + v.shape)

        nu = timed(nu, 2) * np.ones(D)
        log_nu = timed(log_nu, 2) * np.ones(D)
        return nu, timed(a, 3), timed(aa, 4), log_nu

    def _phi_from_parents(self, up):
        N, D = self.N, self.D
        m = up[0][0]
        Lam = up[1][0]
        nu, a, aa, _ = self._dynamics(up)
        Lmu = np.einsum("...ij,...j->...i", Lam, m)
        phi0 = np.zeros(self.plates + (N, D))
        phi0[..., 0, :] = Lmu
        phi1 = np.zeros(self.plates + (N, D, D))
        phi1[..., 0, :, :] = -0.5 * Lam
        phi1[..., 1:, :, :] += -0.5 * _diag(nu, 1)
        phi1[..., :-1, :, :] += -0.5 * np.sum(nu[..., None, None] * aa, axis=-3)
        phi2 = np.swapaxes(nu[..., None] * a, -1, -2)
        return [phi0, phi1, np.broadcast_to(phi2, self.plates + (N - 1, D, D))]

    def _cgf_from_parents(self, up):
        N, D = self.N, self.D
        m, mm = up[0]
        Lam, logdet = up[1]
        log_nu = self._dynamics(up)[3]
        log_nu = np.broadcast_to(log_nu, log_nu.shape[:-2] + (N - 1, D))
        return (
            -0.5 * np.einsum("...ij,...ij->...", Lam, mm)
            + 0.5 * logdet
            + 0.5 * log_nu.sum(axis=(-2, -1))
        )

    def _moments_and_cgf(self, phi):
        try:
            mean, cov, cross, logdet = gaussian_chain_moments(phi[0], -2.0 * phi[1], -phi[2])
        except ValueError as err:
            raise NetworkError(f"{self.describe()}: {err}") from None
        u0 = mean
        u1 = cov + mean[..., :, None] * mean[..., None, :]
        u2 = cross + mean[..., :-1, :, None] * mean[..., 1:, None, :]
        g = -0.5 * np.einsum("...ij,...ij->...", mean, phi[0]) + 0.5 * logdet
        return [u0, u1, u2], g

    def _support(self, x):
        return np.all(np.isfinite(x), axis=(-2, -1)), "finite", 2

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        return self._kind.fixed(x), np.full(x.shape[:-2], -0.5 * self.N * self.D * _LOG_2PI)

    def _message(self, index, u, up, n):
        x0, x0x0 = u[0][..., 0, :], u[1][..., 0, :, :]
        nn = np.asarray(n, dtype=np.float64)
        if index == 0:
            Lam = up[1][0]
            return [np.einsum("...ij,...j->...i", Lam, x0), -0.5 * Lam * nn[..., None, None]]
        if index == 1:
            m, mm = up[0]
            xm = x0[..., :, None] * m[..., None, :]
            return [
                -0.5 * (x0x0 - xm - np.swapaxes(xm, -1, -2) + nn[..., None, None] * mm),
                0.5 * nn,
            ]
        nu, a, aa, _ = self._dynamics(up)
        # E[x_{n+1,d} x_n] per transition n and row d: (..., N - 1, D, D).
        next_prev = np.swapaxes(u[2], -1, -2)
        prev = u[1][..., :-1, None, :, :]
        if index == 2:
            return [nu[..., None] * next_prev, -0.5 * nu[..., None, None] * prev]
        # E[(x_{n+1,d} - a_d^T x_n)^2], the innovation's expected square.
        square = (
            np.diagonal(u[1][..., 1:, :, :], axis1=-2, axis2=-1)
            - 2.0 * np.sum(a * next_prev, axis=-1)
            + np.sum(aa * prev, axis=(-2, -1))
        )
        return [-0.5 * square, 0.5 * nn[..., None, None] * np.ones(square.shape[-2:])]

    def _random(self, phi, rng):
        return gaussian_chain_sample(phi[0], -2.0 * phi[1], -phi[2], rng)
