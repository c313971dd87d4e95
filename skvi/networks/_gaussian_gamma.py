"""The Gaussian-Gamma node (BayesPy's ``GaussianGamma``) and the nodes that carry its precision.

``GaussianGamma(mu, Lambda, a, b)`` is one factor ``q(x, tau)`` of a
Gaussian vector ``x | tau ~ N(mu, (tau Lambda)^-1)`` and its precision
scale ``tau ~ Gamma(a, b)``: a regression's weights and noise precision
together, which VMP then fits exactly (BayesPy's regression example,
model 2).  A sum of products with it (``SumMultiply('i,i', B_tau, X)``)
keeps ``tau`` alongside, and a :class:`GaussianARD` whose mean is such a
node has the precision ``tau`` times its own ``alpha``.
"""

import numpy as np

from ..expfam.gaussian_gamma import (
    gaussian_gamma_from_natural,
    gaussian_gamma_sample,
    gaussian_gamma_valid_natural,
)
from ._deterministic import SumMultiply
from ._gaussian import GaussianARD, shape_of
from ._moments import MomentsKind
from ._node import Node, _children_total, _diag, _expand_n, _get_diag
from ._plates import NetworkError, sum_to_plates
from ._stochastic import Stochastic

_LOG_2PI = np.log(2.0 * np.pi)


def gaussian_gamma_kind(shape):
    """The moments of a Gaussian-Gamma of ``shape``: ``[tau x, tau x x^T, tau, log tau]``."""
    shape = tuple(shape)
    return MomentsKind(
        "gaussian_gamma", (shape, shape + shape, (), ()), f"Gaussian-Gamma of shape {shape}"
    )


class GaussianGamma(Stochastic):
    """A Gaussian vector and a Gamma precision scale, jointly: BayesPy's ``GaussianGamma``.

    ``tau ~ Gamma(a, b)`` and ``x | tau ~ N(mu, (tau Lambda)^-1)``, one
    factor ``q(x, tau)`` that keeps their dependence.  Moments ``[E tau x,
    E tau x x^T, E tau, E log tau]``.  As an operand of
    :class:`SumMultiply` it gives a node of the same kind, which as the
    mean of a :class:`GaussianARD` makes ``tau`` that node's precision
    (times its ``alpha``): linear regression with the weights and the noise
    precision in one factor, whose VMP fit is the exact posterior.

    Parameters
    ----------
    mu : node or array-like of shape (..., D)
        Prior mean (a Gaussian node, or an array).
    Lambda : node or array-like of shape (..., D, D)
        Prior precision matrix, scaled by ``tau`` (a Wishart node, or a
        positive definite array).
    a : array-like
        Shape of ``tau``'s Gamma prior, positive (fixed).
    b : node or array-like
        Rate of ``tau``'s Gamma prior, positive (a Gamma node, or an array).
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    BayesPy's regression example, model 2: the exact posterior of the
    weights and the noise precision together.

    >>> import numpy as np
    >>> from skvi.networks import VB, GaussianARD, GaussianGamma, SumMultiply
    >>> np.random.seed(42)
    >>> x = np.arange(10)
    >>> y = 2 * x + 5 + 2 * np.random.randn(10)
    >>> X = np.vstack([x, np.ones(len(x))]).T
    >>> B_tau = GaussianGamma(np.zeros(2), 1e-6 * np.identity(2), 1e-3, 1e-3)
    >>> Y = GaussianARD(SumMultiply("i,i", B_tau, X), 1)
    >>> _ = Y.observe(y)
    >>> Q = VB(Y, B_tau)
    >>> Q.update(repeat=1000)
    >>> np.round(B_tau.get_moments()[0] / B_tau.get_moments()[2], 4)  # B's posterior mean
    array([1.9862, 5.9582])
    """

    def __init__(self, mu, Lambda, a, b, plates=None, name=""):
        label = f"GaussianGamma '{name}'" if name else "GaussianGamma (unnamed)"
        if isinstance(a, Node):
            raise NetworkError(
                f"{label}: the shape a is {a.describe()}, but a Gamma's shape has no "
                "conjugate prior: give it as an array"
            )

        D = shape_of(Lambda)[-1] if len(shape_of(Lambda)) >= 2 else 0
        if D < 1 or tuple(shape_of(Lambda)[-2:]) != (D, D):
            raise NetworkError(
                f"{label}: Lambda of shape {shape_of(Lambda)} is not a D x D precision matrix"
            )
        if tuple(shape_of(mu)[-1:]) != (D,):
            raise NetworkError(
                f"{label}: mu of shape {shape_of(mu)} is not a mean of dimension D = {D} "
                f"(Lambda is {D} x {D})"
            )
        self.D = D
        self.shape = (D,)
        super().__init__(
            [
                ("mu", mu, MomentsKind.gaussian((D,))),
                ("Lambda", Lambda, MomentsKind.wishart(D)),
                ("a", a, MomentsKind.gamma_shape()),
                ("b", b, MomentsKind.gamma()),
            ],
            gaussian_gamma_kind((D,)),
            plates,
            name,
        )

    @staticmethod
    def _joint(up):
        """``[Lambda mu, mu' Lambda mu, Lambda, log|Lambda|]`` of the independent mean and precision."""
        m, mm = up[0]
        Lam, logdet = up[1]
        return (
            np.einsum("...ij,...j->...i", Lam, m),
            np.einsum("...ij,...ij->...", Lam, mm),
            Lam,
            logdet,
        )

    def _skvi_natural(self, phi):
        """skvi's natural parameters (:mod:`skvi.expfam.gaussian_gamma`) of BayesPy's.

        BayesPy's ``[Lambda mu, -Lambda / 2, -(b + mu' Lambda mu / 2), a]``
        leave the ``(d / 2 - 1) log tau`` of the density to the base measure.
        """
        return phi[0], phi[1], phi[2], phi[3] - 1.0 + 0.5 * self.D

    def _valid_natural(self, phi):
        if not super()._valid_natural(phi):
            return False
        return bool(np.all(gaussian_gamma_valid_natural(*self._skvi_natural(phi))))

    def _phi_from_parents(self, up):
        Lmu, muLmu, Lam, _ = self._joint(up)
        return [Lmu, -0.5 * Lam, -0.5 * muLmu - up[3][0], up[2][0]]

    def _cgf_from_parents(self, up):
        logdet = self._joint(up)[3]
        a, gammaln_a = up[2]
        return 0.5 * logdet + a * up[3][1] - gammaln_a

    def _moments_and_cgf(self, phi):
        stats, A = gaussian_gamma_from_natural(*self._skvi_natural(phi))
        # BayesPy's g leaves the -D log(2 pi) / 2 of skvi's A to the base measure.
        return list(stats), 0.5 * self.D * _LOG_2PI - A

    def _message(self, index, u, up, n):
        # The terms of E[log p(x, tau | mu, Lambda, a, b)] linear in each
        # parent's moments: tau x' Lambda mu - tau mu' Lambda mu / 2
        # - tr(Lambda tau x x') / 2 + log|Lambda| / 2 - b tau + a log b.
        tx, txx, tau, _ = u
        if index == 0:
            Lam = up[1][0]
            return [
                np.einsum("...ij,...j->...i", Lam, tx),
                -0.5 * np.asarray(tau)[..., None, None] * Lam,
            ]
        if index == 1:
            m, mm = up[0]
            cross = tx[..., :, None] * m[..., None, :]
            sym = 0.5 * (cross + np.swapaxes(cross, -1, -2))
            return [
                sym - 0.5 * np.asarray(tau)[..., None, None] * mm - 0.5 * txx,
                0.5 * np.asarray(n, dtype=np.float64),
            ]
        if index == 3:
            return [-tau, up[2][0] * n]
        raise NetworkError(f"{self.describe()}: the shape a takes no message")

    def _random(self, phi, rng):
        x, tau = gaussian_gamma_sample(*self._skvi_natural(phi), random_state=rng)
        return x, tau

    def random(self):
        """A draw ``(x, tau)`` from ``q`` (the prior before ``q`` is set), numpy's global state.

        Returns
        -------
        x : ndarray of shape plates + (D,)
            The Gaussian vector.
        tau : ndarray of shape plates
            Its precision scale.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import GaussianGamma
        >>> np.random.seed(0)
        >>> x, tau = GaussianGamma(np.zeros(2), np.identity(2), 2.0, 1.0, plates=(3,)).random()
        >>> x.shape, tau.shape
        ((3, 2), (3,))
        """
        return super().random()

    def observe(self, x, mask=True):
        """A GaussianGamma node cannot be observed: it raises a NetworkError saying so.

        Parameters
        ----------
        x : array-like
            Ignored.
        mask : bool or array-like of bool, default=True
            Ignored.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import GaussianGamma, NetworkError
        >>> gg = GaussianGamma(np.zeros(2), np.identity(2), 1.0, 1.0, name="gg")
        >>> try:
        ...     gg.observe(np.zeros(2))
        ... except NetworkError as err:
        ...     print(str(err)[:40])
        GaussianGamma 'gg': cannot be observed:
        """
        raise NetworkError(
            f"{self.describe()}: cannot be observed: its value is a vector and a "
            "precision scale together; observe a GaussianARD node whose mean it is"
        )

    def initialize_from_value(self, x):
        """Not available: a point mass of ``(x, tau)`` has no value of one array.

        Parameters
        ----------
        x : array-like
            Ignored.
        """
        raise NetworkError(
            f"{self.describe()}: initialize_from_value is not available; use "
            "initialize_from_parameters or initialize_from_prior"
        )

    def initialize_from_random(self, random_state=None):
        """Not available (see :meth:`initialize_from_value`).

        Parameters
        ----------
        random_state : int, RandomState or None, default=None
            Ignored.
        """
        self.initialize_from_value(None)

    def _fixed_moments_and_f(self, x):
        raise ValueError("a GaussianGamma node cannot be observed")


class _GaussianPart(Node):
    """A Gaussian-Gamma node's ``[tau x, tau x x^T]`` seen as Gaussian moments (an operand's view).

    Its messages are those of a Gaussian parent, sent on with zeros for
    the ``tau`` and ``log tau`` moments.
    """

    def __init__(self, node):
        super().__init__(MomentsKind.gaussian(node._kind.dims[0]), node.plates, node.name)
        self.parents = [node]
        node.children.append((self, 0))

    @property
    def u(self):
        u = self.parents[0].u
        return [u[0], u[1]]

    def update(self):
        """Nothing to update: the moments are the node's."""

    def _message_to_parent(self, index):
        total = _children_total(self)
        parent = self.parents[0]
        zero = np.zeros(())
        if total is None:
            return [zero, zero, zero, zero]
        return [
            sum_to_plates(total[0], parent.plates, len(parent.dims[0]), self.plates),
            sum_to_plates(total[1], parent.plates, len(parent.dims[1]), self.plates),
            zero,
            zero,
        ]


class GaussianGammaProduct(Node):
    """``SumMultiply`` with a Gaussian-Gamma operand: a sum of products that carries ``tau``.

    Made by :class:`SumMultiply` when one operand is a :class:`GaussianGamma`:
    the moments are the sum of products of the operand's ``[tau x, tau x
    x^T]`` with the other operands, and its ``tau`` and ``log tau``.  The
    messages to the operand's ``tau`` go to it directly, those to its
    vector through the sum of products.
    """

    def __init__(self, *args, name=""):
        label = f"SumMultiply '{name}'" if name else "SumMultiply (unnamed)"
        found = [a for a in args if isinstance(a, Node) and a._kind.name == "gaussian_gamma"]
        if len(found) != 1:
            raise NetworkError(
                f"{label}: {len(found)} Gaussian-Gamma operands; a sum of products takes one"
            )
        gg = found[0]
        if len(gg._kind.dims[0]) != 1:
            raise NetworkError(f"{label}: the Gaussian-Gamma operand must be a vector")
        part = _GaussianPart(gg)
        inner = SumMultiply(*[part if a is gg else a for a in args], name=name)
        shape = inner._kind.dims[0]
        super().__init__(gaussian_gamma_kind(shape), inner.plates, name)
        self.parents = [inner, gg]
        inner.children.append((self, 0))
        gg.children.append((self, 1))

    @property
    def u(self):
        inner, gg = self.parents
        v = inner.u
        g = gg.u
        return [v[0], v[1], g[2], g[3]]

    def update(self):
        """Nothing to update: the moments follow the operands."""

    def _message_to_parent(self, index):
        parent = self.parents[index]
        total = _children_total(self)
        if total is None:
            total = [np.zeros(()) for _ in self.dims]
        w = self._weights_to(parent)
        out = []
        for i, (m, d) in enumerate(zip(total, self.dims)):
            m = np.broadcast_to(m, self.plates + d)
            if w is not None:
                m = m * w.reshape(w.shape + (1,) * len(d))
            out.append(m)
        if index == 0:
            return out[:2]
        zero = np.zeros(())
        return [
            zero,
            zero,
            sum_to_plates(out[2], parent.plates, 0, self.plates),
            sum_to_plates(out[3], parent.plates, 0, self.plates),
        ]


class GaussianARDGamma(GaussianARD):
    """A :class:`GaussianARD` whose mean is a Gaussian-Gamma node: precision ``tau alpha``.

    ``x ~ N(mu, (tau alpha)^-1)`` elementwise, ``(tau mu, tau)`` from the
    mean's Gaussian-Gamma moments (a :class:`GaussianGamma` or a
    :class:`SumMultiply` of one), ``alpha`` a Gamma node or array.
    Made by :class:`GaussianARD` itself when given such a mean, as BayesPy's.

    Parameters
    ----------
    mu : node
        A node with Gaussian-Gamma moments.
    alpha : node or array-like
        The precision of each element, times ``tau``.
    shape : tuple of int, default=()
        The variable's shape.
    plates : tuple of int or None, default=None
        The plates.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import GaussianARD, GaussianGamma, SumMultiply
    >>> B_tau = GaussianGamma(np.zeros(1), np.identity(1), 2.0, 1.0)
    >>> y = GaussianARD(SumMultiply("i,i", B_tau, np.ones((3, 1))), 1)
    >>> type(y).__name__, y.plates
    ('GaussianARDGamma', (3,))
    """

    def __init__(self, mu, alpha, shape=(), plates=None, name=""):
        self.shape = tuple(int(s) for s in shape)
        self._nd = len(self.shape)
        label = f"GaussianARD '{name}'" if name else "GaussianARD (unnamed)"
        if mu._kind.dims[0] != self.shape:
            raise NetworkError(
                f"{label}: the mean {mu.describe()} has shape {mu._kind.dims[0]}, "
                f"not the node's shape {self.shape}"
            )
        Stochastic.__init__(
            self,
            [("mu", mu, mu._kind), ("alpha", alpha, MomentsKind.gamma())],
            MomentsKind.gaussian(self.shape),
            plates,
            name,
        )

    def _sum_shape(self, a):
        return a.sum(axis=tuple(range(-self._nd, 0))) if self._nd else a

    def _phi_from_parents(self, up):
        tm, _, tau, _ = up[0]
        a, _ = self._alpha(up)
        tau = np.asarray(tau).reshape(np.shape(tau) + (1,) * self._nd)
        return [a * tm, _diag(-0.5 * a * tau, self._nd)]

    def _cgf_from_parents(self, up):
        _, tmm, _, log_tau = up[0]
        a, log_a = self._alpha(up)
        g = -0.5 * a * _get_diag(tmm, self._nd) + 0.5 * log_a
        k = int(np.prod(self.shape))
        return self._sum_shape(g) + 0.5 * k * np.asarray(log_tau)

    def _message(self, index, u, up, n):
        a, _ = self._alpha(up)
        nn = _expand_n(n, self._nd)
        if index == 0:
            # To [tau mu, tau mu mu', tau, log tau]: a x, -a n / 2, -a x^2 / 2, n / 2.
            k = int(np.prod(self.shape))
            x2 = _get_diag(u[1], self._nd)
            return [
                a * u[0],
                _diag(-0.5 * a * nn, self._nd),
                self._sum_shape(-0.5 * a * x2),
                0.5 * k * np.asarray(n, dtype=np.float64),
            ]
        tm, tmm, tau, _ = up[0]
        tau = np.asarray(tau).reshape(np.shape(tau) + (1,) * self._nd)
        x2 = _get_diag(u[1], self._nd)
        quad = tau * x2 - 2.0 * u[0] * tm + nn * _get_diag(tmm, self._nd)
        return [-0.5 * quad, 0.5 * nn * np.ones(self.shape)]
