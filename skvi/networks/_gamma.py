"""The Gamma node: a positive scalar (a precision, a rate)."""

import numpy as np

from .. import expfam
from ._moments import MomentsKind
from ._node import Node
from ._plates import NetworkError
from ._stochastic import Stochastic


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
        # BayesPy's [-b, a] are skvi's (-rate, shape - 1) with the shape's offset.
        q = expfam.Gamma(phi[1], -phi[0])
        return list(q.expected_stats()), -q.log_normalizer()

    def _support(self, x):
        return expfam.Gamma.in_support(x), "finite and positive", 0

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.any(x <= 0):
            raise ValueError("Gamma values must be positive")
        return [x, np.log(x)], -np.log(x)

    def _message(self, index, u, up, n):
        return [-u[0], up[0][0] * n]

    def _random(self, phi, rng):
        return expfam.Gamma(phi[1], -phi[0]).sample(random_state=rng)
