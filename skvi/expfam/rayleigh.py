"""The batched Rayleigh distribution."""

import functools
import numbers

import numpy as np
from scipy import linalg

from .base import (
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _size_tuple,
)

_LOG_2 = float(np.log(2.0))
_SQRT_2 = float(np.sqrt(2.0))
_SQRT_HALF_PI = float(np.sqrt(0.5 * np.pi))


@functools.lru_cache(maxsize=16)
def _rayleigh_gauss_rule(n_points):
    """Gauss rule of the weight ``2 t exp(-t**2)`` on ``(0, inf)``.

    The ``n_points`` nodes ``t_j`` and weights ``w_j`` (summing to 1) satisfy
    ``sum_j w_j g(t_j) = int_0^inf 2 t exp(-t**2) g(t) dt`` exactly for every
    polynomial ``g`` of degree at most ``2 n_points - 1``.  The recurrence
    coefficients of the orthogonal polynomials come from the discretised
    Stieltjes procedure (Gautschi, "Orthogonal Polynomials: Computation and
    Approximation") on a Gauss-Legendre discretisation of ``[0, T]``, where the
    weight is negligible beyond ``T``; the rule is then read off the Jacobi
    matrix (Golub and Welsch, "Calculation of Gauss quadrature rules").
    """
    upper = np.sqrt(2.0 * n_points) + 8.0
    x, w = np.polynomial.legendre.leggauss(max(200, 8 * n_points))
    t = 0.5 * upper * (x + 1.0)
    w = upper * w * t * np.exp(-t * t)
    alpha = np.empty(n_points)
    beta = np.empty(n_points - 1)
    p_prev = np.zeros_like(t)
    p = np.full_like(t, 1.0 / np.sqrt(w.sum()))
    for k in range(n_points):
        alpha[k] = w @ (t * p * p)
        if k == n_points - 1:
            break
        r = (t - alpha[k]) * p - (beta[k - 1] * p_prev if k else 0.0)
        beta[k] = np.sqrt(w @ (r * r))
        p_prev, p = p, r / beta[k]
    if n_points == 1:
        nodes, vectors = alpha.copy(), np.ones((1, 1))
    else:
        nodes, vectors = linalg.eigh_tridiagonal(alpha, beta)
    weights = vectors[0] ** 2
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


class Rayleigh(ExponentialFamily):
    """Batch of Rayleigh distributions parameterised by their scale.

    The density of ``x > 0`` is ``x / s**2 * exp(-x**2 / (2 s**2))``, that of
    ``scipy.stats.rayleigh(scale=s)``.  In skvi it serves as the prior and
    variational posterior of a noise variance.

    As an exponential family it has sufficient statistic ``t(x) = (x**2,)``,
    natural parameter ``eta = (-1 / (2 s**2),)``, log-normaliser
    ``A(eta) = -log(-2 eta) = log(s**2)`` and base measure ``h(x) = x``:
    unlike the other families of :mod:`skvi.expfam`, ``h`` is *not* 1.  The
    gradient identity ``grad A(eta) = E[t(x)] = (2 s**2,)`` and the generic KL
    divergence still hold (``h`` cancels in the log-ratio), but the generic
    entropy ``A - <eta, E[t]>`` misses ``-E[log h(x)] = -E[log x]``; both
    :meth:`entropy` and :meth:`kl` are closed forms.

    Parameters
    ----------
    scale : array_like
        Scale parameters ``s``, positive; their shape is the batch shape.

    Attributes
    ----------
    scale : ndarray
        Scales with the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> q = Rayleigh([1.0, 2.0])
    >>> print(q.natural[0])
    [-0.5   -0.125]
    >>> print(q.expected_stats()[0])
    [2. 8.]
    >>> print(np.round(q.mean(), 4))
    [1.2533 2.5066]
    >>> print(np.round(q.expected_inverse(), 4))
    [1.2533 0.6267]
    >>> print(np.round(q.kl(Rayleigh(1.0)), 4))
    [0.     1.6137]
    >>> nodes, weights = q.quadrature(16)
    >>> print(nodes.shape, weights.shape)
    (2, 16) (16,)
    >>> print(np.round(np.exp(-nodes) @ weights, 6))  # E[exp(-x)]
    [0.34432  0.157262]
    """

    _event_ndims = (0,)

    def __init__(self, scale):
        dtype = _float_dtype(scale)
        self.scale = np.array(np.asarray(scale, dtype=dtype))

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.scale.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.scale.dtype

    @property
    def variance(self):
        """Variances ``(4 - pi) / 2 * s**2``."""
        return (2.0 - 0.5 * np.pi) * self.scale**2

    @property
    def natural(self):
        """Natural parameter ``(-1 / (2 s**2),)``."""
        return (-0.5 / self.scale**2,)

    @classmethod
    def from_natural(cls, eta):
        """Build from the natural parameter ``eta = -1 / (2 s**2)``.

        Parameters
        ----------
        eta : array_like
            Natural parameter with the batch shape; must be negative.

        Returns
        -------
        Rayleigh
            The Rayleigh distribution of scale ``sqrt(-1 / (2 eta))``.
        """
        dtype = _float_dtype(eta)
        eta = np.asarray(eta, dtype=dtype)
        return cls(np.sqrt(-0.5 / eta))

    @staticmethod
    def valid_natural(eta):
        """True where ``eta`` defines a Rayleigh distribution (finite, eta < 0).

        Parameters
        ----------
        eta : array_like
            Natural parameter, ``-1 / (2 s**2)``, with the batch shape.

        Returns
        -------
        ndarray of bool
            True where ``eta`` is finite and negative; it has the shape of
            ``eta``.
        """
        eta = _as_float(eta)
        return np.isfinite(eta) & (eta < 0)

    def validate(self):
        """Raise ``ValueError`` unless the scales are finite and positive.

        Returns
        -------
        Rayleigh
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a scale is not finite or not strictly positive.
        """
        if not np.all(np.isfinite(self.scale)):
            raise ValueError("Rayleigh: scale must be finite.")
        if not np.all(self.scale > 0):
            raise ValueError("Rayleigh: scale must be strictly positive.")
        return self

    def expected_stats(self):
        """Expected statistic ``(E[x**2],) = (2 s**2,)``.

        Returns
        -------
        tuple of ndarray
            ``(E[x**2],)``, of shape ``batch_shape``.
        """
        return (2.0 * self.scale**2,)

    def log_normalizer(self):
        """Log-normaliser ``A = -log(-2 eta) = log(s**2)``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return 2.0 * np.log(self.scale)

    def mean(self):
        """Mean ``E[x] = s sqrt(pi / 2)``.

        Returns
        -------
        ndarray of shape batch_shape
            The mean of each factor.
        """
        return _SQRT_HALF_PI * self.scale

    def expected_log(self):
        """Expected logarithm ``E[log x] = log s + (log 2 - euler_gamma) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            ``E[log x]`` of each factor.
        """
        return np.log(self.scale) + 0.5 * (_LOG_2 - np.euler_gamma)

    def expected_inverse(self):
        """Expected reciprocal ``E[1 / x] = sqrt(pi / 2) / s``.

        Returns
        -------
        ndarray of shape batch_shape
            ``E[1 / x]`` of each factor.
        """
        return _SQRT_HALF_PI / self.scale

    def entropy(self):
        """Differential entropy ``1 + log(s / sqrt(2)) + euler_gamma / 2``.

        The generic identity ``A - <eta, E[t]>`` does not apply, since the base
        measure is ``h(x) = x``: the entropy is
        ``A - <eta, E[t]> - E[log x]``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        return 1.0 + np.log(self.scale) + 0.5 * (np.euler_gamma - _LOG_2)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Rayleigh`.

        ``2 log(s_p / s_q) + s_q**2 / s_p**2 - 1``, evaluated as
        ``expm1(r) - r`` with ``r = 2 log(s_q / s_p)``.

        Parameters
        ----------
        other : Rayleigh
            Distribution ``p``; its batch shape must broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`Rayleigh`.
        """
        self._check_other(other)
        r = 2.0 * (np.log(self.scale) - np.log(other.scale))
        return np.maximum(np.expm1(r) - r, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` (broadcast against the batch shape).

        ``-inf`` for ``x <= 0``.

        Parameters
        ----------
        x : array_like
            Points at which to evaluate the density; broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x`` and the batch shape.
        """
        x = np.asarray(x)
        s = self.scale
        xpos = np.where(x > 0, x, 1.0)
        lp = np.log(xpos) - 2.0 * np.log(s) - 0.5 * (xpos / s) ** 2
        return np.where(x > 0, lp, -np.inf)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape``.

        ``x = s sqrt(2 e)`` with ``e`` standard exponential.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape
            Non-negative samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        e = rng.standard_exponential(size=shape)
        return (self.scale * np.sqrt(2.0 * e)).astype(self.dtype, copy=False)

    def quadrature(self, n_points=16):
        """Gauss quadrature nodes and weights for expectations under each factor.

        ``E[g(x)] ~= sum_j weights[j] * g(nodes[..., j])``.  With
        ``u = x**2 / (2 s**2)``, which is standard exponential, the expectation
        is ``int_0^inf exp(-u) g(s sqrt(2 u)) du``; but Gauss-Laguerre
        quadrature in ``u`` is exact only for polynomials in ``x**2`` and
        converges slowly for functions of ``x`` itself (16 nodes give
        ``E[exp(-x)]`` to about 2 percent).  The rule here is instead the
        Gauss rule of the Rayleigh weight in ``t = x / (s sqrt(2))``,
        ``2 t exp(-t**2)`` on ``(0, inf)``: exact for every polynomial in ``x``
        of degree at most ``2 n_points - 1`` (so for ``E[x**2]``) and
        geometrically convergent for functions analytic near ``[0, inf)``.
        Functions singular at 0, such as ``log x`` or ``1 / x``, converge only
        algebraically; use :meth:`expected_log` and :meth:`expected_inverse`.

        Parameters
        ----------
        n_points : int, default=16
            Number of nodes, positive.

        Returns
        -------
        nodes : ndarray of shape batch_shape + (n_points,)
            Positive nodes of each factor, with dtype :attr:`dtype`.
        weights : ndarray of shape (n_points,)
            Positive weights summing to 1, shared by the whole batch, with
            dtype :attr:`dtype`.

        Raises
        ------
        ValueError
            If ``n_points`` is not a positive integer.
        """
        if not isinstance(n_points, numbers.Integral) or isinstance(n_points, bool) or n_points < 1:
            raise ValueError(f"n_points must be a positive integer, got {n_points!r}.")
        t, w = _rayleigh_gauss_rule(int(n_points))
        nodes = self.scale[..., None] * (_SQRT_2 * t).astype(self.dtype)
        return nodes, w.astype(self.dtype)
