"""Dirichlet and Beta nodes: probability vectors."""

import numpy as np

from .. import expfam
from ._moments import MomentsKind
from ._node import Node
from ._plates import NetworkError
from ._stochastic import Stochastic


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
    >>> np.round(Dirichlet([1.0, 1.0]).get_moments()[0], 4)   # E log p of a uniform p: -1
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
        # BayesPy's natural parameter is the concentration (skvi's, less 1).
        q = expfam.Dirichlet(phi[0])
        return [q.expected_log()], -q.log_normalizer()

    def _support(self, x):
        valid = f"a probability vector of {self.K} categories (finite, non-negative, summing to 1)"
        return expfam.Dirichlet.in_support(x), valid, 1

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

    def _support(self, x):
        x = np.asarray(x, dtype=np.float64)
        return expfam.Dirichlet.in_support(np.stack([x, 1.0 - x], axis=-1)), "in [0, 1]", 0

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        return super()._fixed_moments_and_f(np.stack([x, 1.0 - x], axis=-1))

    def _random(self, phi, rng):
        return super()._random(phi, rng)[..., 0]
