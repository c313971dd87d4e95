"""The Wishart node: a positive definite precision matrix."""

import numpy as np

from .. import expfam
from ._gaussian import _Tested, _tested
from ._moments import MomentsKind
from ._node import Node
from ._plates import NetworkError
from ._stochastic import Stochastic


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
        self._tested = _Tested()  # before any copy, so that the copies share it

    def _valid_natural(self, phi):
        if not super()._valid_natural(phi) or np.any(phi[1] <= 0.5 * (self.D - 1)):
            return False
        if np.array_equal(phi[0], np.swapaxes(phi[0], -1, -2)):
            # The family's test factorises the inverse scales -2 phi[0] (of
            # exactly symmetric matrices, the same ones the moments factorise)
            # and accepts them when that succeeds: the moments' computation is
            # that test, and the update that sets these parameters reads them.
            try:
                moments = self._moments_and_cgf(phi)
            except np.linalg.LinAlgError:
                pass  # the family's test says which matrices fail
            else:
                _tested(self).keep(phi, moments)
                return True
        return bool(np.all(expfam.WishartByScale.valid_natural(*self._skvi_natural(phi))))

    def _skvi_natural(self, phi):
        """skvi's ``(-W^{-1} / 2, (df - D - 1) / 2)`` of BayesPy's ``[-V / 2, n / 2]``."""
        return phi[0], phi[1] - 0.5 * (self.D + 1)

    def _phi_from_parents(self, up):
        return [-0.5 * up[1][0], 0.5 * up[0][0]]

    def _cgf_from_parents(self, up):
        n, log_multigamma_n = up[0]
        logdet_V = up[1][1]
        return 0.5 * n * logdet_V - 0.5 * self.D * n * np.log(2.0) - log_multigamma_n

    def _moments_and_cgf(self, phi):
        store = self.__dict__.get("_tested")
        if store:
            found = store.find(phi)
            if found is not None:
                return list(found[0]), found[1]
        # Wishart(n, V) with the inverse scale V = -2 phi[0] and n = 2 phi[1];
        # BayesPy's log normaliser g is skvi's -A.
        mean, expected_log_det, A = expfam.WishartByScale.stats_from_inverse_scale(
            2.0 * phi[1], -2.0 * phi[0]
        )
        return [mean, expected_log_det], -A

    def _support(self, x):
        valid = f"a finite symmetric positive definite {self.D}x{self.D} matrix"
        return expfam.WishartByScale.in_support(x), valid, 2

    def _fixed_moments_and_f(self, x):
        try:
            x, ld = expfam.WishartByScale.sufficient_stats(np.asarray(x, dtype=np.float64))
        except (ValueError, np.linalg.LinAlgError):
            raise ValueError("Wishart values must be positive definite matrices") from None
        return [x, ld], -0.5 * (self.D + 1) * ld

    def _message(self, index, u, up, n):
        return [-0.5 * u[0], 0.5 * up[0][0] * n]

    def _random(self, phi, rng):
        return expfam.WishartByScale.from_natural(*self._skvi_natural(phi)).sample(random_state=rng)
