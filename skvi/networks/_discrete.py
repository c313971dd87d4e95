"""Discrete nodes: Categorical, Multinomial, Bernoulli and Poisson."""

import numpy as np
from scipy.special import expit

from ..expfam.counts import (
    categorical_probabilities,
    category_in_support,
    count_in_support,
    multinomial_in_support,
    multinomial_log_coefficient,
    poisson_log_base_measure,
)
from ._dirichlet import Dirichlet
from ._moments import MomentsKind, _require
from ._node import Node
from ._plates import NetworkError, broadcast_plates
from ._stochastic import Stochastic


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
    plates_multiplier : tuple of float or None, default=None
        BayesPy's: the plates stand for this many times as many elements
        (a minibatch of the data, for SVI written by hand), each counted
        that many times in the bound and in the messages to the global
        nodes; None: the parents' (1 without).

    Examples
    --------
    >>> from skvi.networks import Categorical
    >>> Categorical([0.25, 0.75], plates=(2,)).get_moments()[0]
    array([[0.25, 0.75],
           [0.25, 0.75]])
    """

    _discrete = True

    def __init__(self, p, plates=None, name="", plates_multiplier=None):
        K = p.K if isinstance(p, Dirichlet) else (np.shape(p)[-1] if np.ndim(p) else 0)
        if isinstance(p, Node) and not isinstance(p, Dirichlet):
            K = p._kind.dims[0][0] if p._kind.dims[0] else 0
        if K < 1:
            raise NetworkError(f"Categorical '{name}': p must have a last axis of categories")
        self.K = K
        super().__init__(
            [("p", p, MomentsKind.dirichlet(K))], MomentsKind.categorical(K), plates, name
        )
        if not self._detached:
            from ._indexing import _plates_multiplier

            _plates_multiplier(self, plates_multiplier, self.parents, self.plates)

    def _phi_from_parents(self, up):
        return [up[0][0]]

    def _cgf_from_parents(self, up):
        return np.zeros(())

    def _moments_and_cgf(self, phi):
        p, lse = categorical_probabilities(phi[0])
        return [p], -lse

    def _support(self, x):
        return category_in_support(x, self.K), f"a category, an integer in [0, {self.K})", 0

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
        if isinstance(p, Node):
            # A Dirichlet node, or a node that picks one (Take, Gate).
            K = p._kind.dims[0][0] if p._kind.dims[0] else 0
        else:
            K = np.shape(p)[-1] if np.ndim(p) else 0
        if K < 1:
            raise NetworkError(f"Multinomial '{name}': p must have a last axis of categories")
        self.K = K
        if isinstance(n, Node):
            raise NetworkError(f"Multinomial '{name}': the number of draws n must be fixed")
        self.n = np.asarray(n, dtype=np.float64)
        try:
            _require(count_in_support(self.n), self.n, "a count, a non-negative integer")
        except ValueError as err:
            label = f"Multinomial '{name}'" if name else "Multinomial (unnamed)"
            raise NetworkError(f"{label}: the number of draws n: {err}") from None
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
        p, lse = categorical_probabilities(phi[0])
        return [self.n[..., None] * p], -self.n * lse

    def _support(self, x):
        ok = multinomial_in_support(x, self.n)
        return ok, "counts of the categories, non-negative integers summing to n", 1

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x < 0) or np.any(x != np.round(x)) or np.any(x.sum(axis=-1) != self.n):
            raise ValueError("counts must be non-negative integers summing to n")
        return [x], multinomial_log_coefficient(x, self.n)

    def _message(self, index, u, up, n):
        return [u[0]]  # the counts are in the moments

    def _random(self, phi, rng):
        # One draw per plate element, in C order, as BayesPy draws them, so
        # that a seed gives BayesPy's counts (numpy's multinomial takes one
        # probability vector at a time).
        p, _ = categorical_probabilities(phi[0])
        p = np.broadcast_to(p, self.plates + (self.K,))
        n = np.broadcast_to(self.n, self.plates).astype(np.int64)
        x = np.empty(self.plates + (self.K,), dtype=np.int64)
        for i in np.ndindex(*self.plates):
            x[i] = rng.multinomial(n[i], p[i])
        return x


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

    def _support(self, x):
        return category_in_support(x, 2), "0 or 1", 0

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

    def _support(self, x):
        return count_in_support(x), "a count, a non-negative integer", 0

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x < 0) or np.any(x != np.round(x)):
            raise ValueError("Poisson values must be non-negative integers")
        return [x], poisson_log_base_measure(x)

    def _message(self, index, u, up, n):
        return [-n * np.ones_like(u[0]), u[0]]

    def _random(self, phi, rng):
        return rng.poisson(np.exp(phi[0])).astype(np.float64)
