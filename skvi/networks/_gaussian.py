"""Gaussian nodes: GaussianARD, Gaussian and the joint GaussianWishart, BayesPy's."""

import math
import weakref

import numpy as np

from .. import expfam
from ._deterministic import _AxesAsPlates
from ._moments import MomentsKind, _outer
from ._node import Node, _diag, _expand_n, _get_diag
from ._plates import NetworkError
from ._stochastic import Stochastic

_LOG_2PI = np.log(2.0 * np.pi)


def shape_of(value):
    """The variable's shape of a mean or precision parent: a Gaussian's or Wishart's, or an array's.

    What the joint nodes (:class:`GaussianWishart`, ``GaussianGamma``) read
    their dimension from; other nodes have the shape ``()`` here.
    """
    if isinstance(value, Node):
        return value._kind.dims[0] if value._kind.name in ("gaussian", "wishart") else ()
    return np.shape(value)


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

    def __new__(cls, mu=None, alpha=None, shape=(), plates=None, name=""):
        # BayesPy's: a mean with Gaussian-Gamma moments brings its precision
        # scale tau along (skvi.networks.GaussianGamma).
        if cls is GaussianARD and isinstance(mu, Node) and mu._kind.name == "gaussian_gamma":
            from ._gaussian_gamma import GaussianARDGamma

            return super().__new__(GaussianARDGamma)
        return super().__new__(cls)

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
        self._tested = _Tested()  # before any copy, so that the copies share it

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
        return _gaussian_valid(self, phi, self._nd)

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
            # BayesPy's [Lambda mu, -Lambda / 2] are skvi's; its g leaves the
            # -log(2 pi) / 2 of skvi's A to the base measure f.
            q = expfam.UnivariateGaussian.from_natural(phi[0], phi[1])
            return list(q.expected_stats()), 0.5 * _LOG_2PI - q.log_normalizer()
        return _gaussian_moments(phi, self.shape, self)

    def _support(self, x):
        ok = expfam.UnivariateGaussian.in_support(x)
        return np.all(ok, axis=tuple(range(-self._nd, 0))) if self._nd else ok, "finite", self._nd

    def _fixed_moments_and_f(self, x):
        x = np.asarray(x, dtype=np.float64)
        k = int(math.prod(self.shape))
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
        if self._nd == 0:
            return expfam.UnivariateGaussian.from_natural(phi[0], phi[1]).sample(random_state=rng)
        return _gaussian_random(phi, self.shape, rng)


def _flat(phi, shape):
    """Gaussian natural parameters with the variable's axes flattened to one of size ``D``."""
    nd = len(shape)
    D = int(math.prod(shape))
    return (
        phi[0].reshape(phi[0].shape[: phi[0].ndim - nd] + (D,)),
        phi[1].reshape(phi[1].shape[: phi[1].ndim - 2 * nd] + (D, D)),
    )


#: Moments that a validity test computed and that a node of its copies may read
#: again: the engine tests a step's natural parameters, then sets them.
TESTED_SIZE = 2


class _Tested(list):
    """A Gaussian node's last tested natural parameters and their moments, shared by its copies.

    Entries are ``(keys, moments)``, each key a weak reference to the
    array that owns a natural parameter's memory and the parameter's place
    in it: the same memory, while it lives, is the same parameter (natural
    parameters are new arrays after each step, never changed in place).
    Never pickled: an unpickled or deep-copied node starts empty.
    """

    def __reduce__(self):
        return (_Tested, ())

    @staticmethod
    def keys(phi):
        out = []
        for a in phi:
            owner = a
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            out.append((owner, (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype)))
        return out

    def find(self, phi):
        keys = self.keys(phi)
        for known, moments in list(self):
            if all(ref() is owner and where == w for (ref, w), (owner, where) in zip(known, keys)):
                return moments
        return None

    def keep(self, phi, moments):
        try:
            known = [(weakref.ref(owner), where) for owner, where in self.keys(phi)]
        except TypeError:  # an owner without weak references: not kept
            return
        self.insert(0, (known, moments))
        del self[TESTED_SIZE:]


def _tested(node):
    """The store of ``node``'s tested moments (made when first needed)."""
    if node is None:
        return None
    store = node.__dict__.get("_tested")
    if store is None:
        store = node.__dict__["_tested"] = _Tested()
    return store


def _gaussian_valid(node, phi, nd):
    """Finite natural parameters with a positive definite precision ``-2 phi[1]``.

    Gaussians of one plate element each (not one shared precision) are
    tested by the family's map of many small Gaussians, whose moments the
    node keeps for the update that sets these parameters.
    """
    if nd == 0:
        if not all(np.all(np.isfinite(a)) for a in phi):
            return False
        return bool(np.all(expfam.UnivariateGaussian.valid_natural(phi[0], phi[1])))
    shape = phi[0].shape[phi[0].ndim - nd :]
    flat = _flat(phi, shape)
    if _per_element(flat):
        moments = _small_moments(flat, shape)
        if moments is None:
            return False
        _tested(node).keep(phi, moments)
        return True
    if not all(np.all(np.isfinite(a)) for a in phi):
        return False
    return bool(np.all(expfam.MultivariateGaussian.valid_natural(*flat)))


def _per_element(flat):
    """Whether Gaussians ``flat`` have a precision per plate element, as many small ones."""
    phi0, phi1 = flat
    return phi0.shape[:-1] == phi1.shape[:-2] and phi1.shape[-1] <= expfam.linalg.SMALL_DIMENSION


def _shared(a, nplates):
    """``a`` with each plate axis along which it does not change reduced to size 1.

    The rows of a factor model without missing values share one posterior
    precision of their scores (each row's comes from the same loadings):
    it is then factorised once, not once per row.  A few elements along an
    axis are compared first: precisions that differ mostly differ there.
    """
    for axis in range(nplates):
        size = a.shape[axis]
        if size > 1:
            first = a[(slice(None),) * axis + (slice(0, 1),)]
            some = a[(slice(None),) * axis + (slice(None, None, max(1, size // 8)),)]
            if np.array_equal(some, np.broadcast_to(first, some.shape)) and np.array_equal(
                a, np.broadcast_to(first, a.shape)
            ):
                a = first
    return a


def _small_moments(flat, shape):
    """``[u, g]`` of many small Gaussians by the family's compiled map, None if one is invalid."""
    phi0, phi1 = flat
    q = expfam.small_gaussian_moments(phi0, phi1)
    if not np.all(q.valid):
        return None
    # BayesPy's g leaves the -D log(2 pi) / 2 of skvi's A to the base measure f.
    g = -0.5 * np.einsum("...i,...i->...", q.mean, phi0) + 0.5 * q.logdet_precision
    plates = q.mean.shape[:-1]
    return [q.mean.reshape(plates + shape), q.second_moment.reshape(plates + shape + shape)], g


def _gaussian_moments(phi, shape, node=None):
    """Moments and log normaliser of Gaussians with natural parameters ``[Lambda mu, -Lambda/2]``.

    ``node``: the node whose validity test may have computed them already.
    """
    store = node.__dict__.get("_tested") if node is not None else None
    if store:
        found = store.find(phi)
        if found is not None:
            return list(found[0]), found[1]
    phi0, phi1 = _flat(phi, shape)
    nplates = phi1.ndim - 2
    shared = _shared(phi1, nplates)
    if shared.shape == phi1.shape and _per_element((phi0, phi1)):
        found = _small_moments((phi0, phi1), shape)
        if found is not None:
            return found
        # Not valid: the general map below says why (it raises).
    if shared.shape != phi1.shape:
        # One factorisation per distinct precision; the means are products.
        zero = np.zeros(shared.shape[:-1])
        _, cov, logdet = expfam.MultivariateGaussian.moments_from_natural(zero, shared)
        mean = np.matmul(cov, phi0[..., None])[..., 0]
        cov = np.broadcast_to(cov, mean.shape + mean.shape[-1:])
        logdet = np.broadcast_to(logdet, mean.shape[:-1])
    else:
        mean, cov, logdet = expfam.MultivariateGaussian.moments_from_natural(phi0, phi1)
    # BayesPy's g leaves the -D log(2 pi) / 2 of skvi's A to the base measure f.
    g = -0.5 * np.einsum("...i,...i->...", mean, phi0) + 0.5 * logdet
    # The outer products first, the covariance added in place: adding a
    # broadcast covariance to a new array walks it element by element.
    u1 = mean[..., :, None] * mean[..., None, :]
    u1 += cov
    plates = mean.shape[:-1]
    return [mean.reshape(plates + shape), u1.reshape(plates + shape + shape)], g


def _gaussian_random(phi, shape, rng):
    """A draw from Gaussians with natural parameters ``[Lambda mu, -Lambda/2]``, as BayesPy's."""
    x = expfam.MultivariateGaussian.from_natural(*_flat(phi, shape)).sample(random_state=rng)
    return x.reshape(x.shape[:-1] + shape)


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
        self._tested = _Tested()  # before any copy, so that the copies share it

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
        return _gaussian_valid(self, phi, 1)

    def _phi_from_parents(self, up):
        Lmu, _, Lam, _ = self._joint_parent(up)
        return [Lmu, -0.5 * Lam]

    def _cgf_from_parents(self, up):
        _, muLmu, _, logdet = self._joint_parent(up)
        return -0.5 * muLmu + 0.5 * logdet

    def _moments_and_cgf(self, phi):
        return _gaussian_moments(phi, self.shape, self)

    def _support(self, x):
        return np.all(expfam.UnivariateGaussian.in_support(x), axis=-1), "finite", 1

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
        return _gaussian_random(phi, self.shape, rng)


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
        return bool(np.all(expfam.NormalWishart.valid_natural(*self._skvi_natural(phi))))

    def _phi_from_parents(self, up):
        m, mm = up[0]
        a = np.asarray(up[1][0])
        n = up[2][0]
        V = up[3][0]
        return [a[..., None] * m, -0.5 * a, -0.5 * (V + a[..., None, None] * mm), 0.5 * n]

    def _cgf_from_parents(self, up):
        log_a = up[1][1]
        n, log_multigamma_n = up[2]
        logdet_V = up[3][1]
        D = self.D
        return 0.5 * D * log_a + 0.5 * n * logdet_V - 0.5 * n * D * np.log(2.0) - log_multigamma_n

    def _skvi_natural(self, phi):
        """skvi's NormalWishart natural parameters (one mean) of BayesPy's.

        BayesPy's ``[a m, -a / 2, -(V + a m m') / 2, n / 2]`` are skvi's
        ``(a m, -(V + a m m') / 2, -a / 2, (n - D) / 2)`` with a mean axis
        ``J`` of size one.
        """
        return phi[0][..., None, :], phi[2], phi[1][..., None], phi[3] - 0.5 * self.D

    def _moments_and_cgf(self, phi):
        q = expfam.NormalWishart.from_natural(*self._skvi_natural(phi))
        lam_m, lam, quad, log_det = q.expected_stats()
        # BayesPy's g leaves the -D log(2 pi) / 2 of skvi's A to the base measure.
        g = 0.5 * self.D * _LOG_2PI - q.log_normalizer()
        return [lam_m[..., 0, :], quad[..., 0], lam, log_det], g

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

    def observe(self, x, mask=True):
        """A GaussianWishart node cannot be observed: it raises a NetworkError saying so.

        Parameters
        ----------
        x : array-like
            Ignored.
        mask : bool or array-like of bool, default=True
            Ignored.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import GaussianWishart, NetworkError
        >>> gw = GaussianWishart(np.zeros(2), 1.0, 3, np.eye(2), name="gw")
        >>> try:
        ...     gw.observe(np.zeros(2))
        ... except NetworkError as err:
        ...     print(str(err)[:46])
        GaussianWishart 'gw': cannot be observed: its
        """
        raise NetworkError(
            f"{self.describe()}: cannot be observed: its value is a mean and a "
            "precision matrix together; observe a Gaussian node whose mu it is"
        )

    def _fixed_moments_and_f(self, x):
        raise ValueError("a GaussianWishart node cannot be observed")
