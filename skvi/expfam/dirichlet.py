"""The batched Dirichlet distribution."""

import numpy as np
from scipy import special

from .base import (
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _size_tuple,
    _uniform_open0,
)


class Dirichlet(ExponentialFamily):
    """Batch of Dirichlet distributions over the last axis.

    Sufficient statistics ``t(x) = (log x,)``, natural parameters
    ``eta = (concentration - 1,)`` and log-normaliser
    ``A = sum(gammaln(alpha)) - gammaln(sum(alpha))``; the expected statistics
    are ``(digamma(alpha) - digamma(sum(alpha)),)``.

    Parameters
    ----------
    concentration : array_like of shape (..., K)
        Positive concentrations; the last axis indexes the categories.

    Attributes
    ----------
    concentration : ndarray of shape batch_shape + (K,)

    Examples
    --------
    >>> q = Dirichlet([[1.0, 1.0, 1.0], [2.0, 3.0, 5.0]])
    >>> q.batch_shape
    (2,)
    >>> print(np.round(q.mean(), 4))
    [[0.3333 0.3333 0.3333]
     [0.2    0.3    0.5   ]]
    >>> print(np.round(q.expected_stats()[0][1], 4))
    [-1.829  -1.329  -0.7456]
    >>> print(np.round(q.kl(Dirichlet([1.0, 1.0, 1.0])), 4))
    [0.    0.768]
    """

    _event_ndims = (1,)

    def __init__(self, concentration):
        dtype = _float_dtype(concentration)
        alpha = np.array(concentration, dtype=dtype)
        if alpha.ndim < 1:
            raise ValueError(
                "Dirichlet: concentration must have shape (..., K) with the "
                "categories on the last axis."
            )
        self.concentration = alpha

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.concentration.shape[:-1]

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.concentration.dtype

    @property
    def n_categories(self):
        """Number of categories ``K``."""
        return self.concentration.shape[-1]

    @property
    def variance(self):
        """Marginal variances ``alpha_k (alpha_0 - alpha_k) / (alpha_0**2 (alpha_0 + 1))``."""
        alpha = self.concentration
        a0 = np.sum(alpha, axis=-1, keepdims=True)
        return alpha * (a0 - alpha) / (a0**2 * (a0 + 1.0))

    @property
    def natural(self):
        """Natural parameters ``(concentration - 1,)``."""
        return (self.concentration - 1.0,)

    @classmethod
    def from_natural(cls, eta):
        """Build from the natural parameter ``concentration - 1``.

        Parameters
        ----------
        eta : array_like of shape (..., K)
            The single natural parameter, ``concentration - 1``, with the
            categories on the last axis; every entry must be greater than -1.

        Returns
        -------
        Dirichlet
            The Dirichlet distribution with this natural parameter.
        """
        eta = np.asarray(eta, dtype=_float_dtype(eta))
        return cls(eta + 1.0)

    @staticmethod
    def in_support(x):
        """True where ``x`` lies on the probability simplex (a Dirichlet's support).

        Each vector along the last axis must be finite and non-negative and
        sum to one, to ``K`` times the square root of the float precision
        (probabilities computed as ratios sum to one to rounding).

        Parameters
        ----------
        x : array_like of shape (..., K)
            Probability vectors, the categories on the last axis.

        Returns
        -------
        ndarray of bool of shape x.shape[:-1]
            True where the vector is a probability vector.

        Examples
        --------
        >>> from skvi.expfam import Dirichlet
        >>> Dirichlet.in_support([[0.25, 0.75], [0.5, 0.6], [1.5, -0.5]])
        array([ True, False, False])
        """
        x = _as_float(x)
        K = x.shape[-1]
        tol = K * np.sqrt(np.finfo(x.dtype).eps)
        with np.errstate(invalid="ignore"):
            ok = np.all(np.isfinite(x) & (x >= 0), axis=-1)
            return ok & (np.abs(x.sum(axis=-1) - 1.0) <= tol)

    @staticmethod
    def valid_natural(eta):
        """True where ``eta`` defines a Dirichlet (all finite and > -1).

        Parameters
        ----------
        eta : array_like of shape (..., K)
            The single natural parameter, ``concentration - 1``, with the
            categories on the last axis.

        Returns
        -------
        ndarray of bool of shape eta.shape[:-1]
            True where every entry along the last axis is finite and greater
            than -1.
        """
        eta = _as_float(eta)
        return np.all(np.isfinite(eta) & (eta > -1), axis=-1)

    def validate(self):
        """Raise ``ValueError`` unless concentrations are finite and positive.

        Returns
        -------
        Dirichlet
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a concentration is not finite or not strictly positive.
        """
        if not np.all(np.isfinite(self.concentration)):
            raise ValueError("Dirichlet: concentration must be finite.")
        if not np.all(self.concentration > 0):
            raise ValueError("Dirichlet: concentration must be strictly positive.")
        return self

    def expected_log(self):
        """Expected logarithm ``E[log x] = digamma(alpha) - digamma(sum(alpha))``.

        Returns
        -------
        ndarray of shape batch_shape + (K,)
            ``E[log x_k]`` for each factor and category.
        """
        alpha = self.concentration
        return special.digamma(alpha) - special.digamma(np.sum(alpha, axis=-1, keepdims=True))

    def expected_stats(self):
        """Expected statistics ``(E[log x],)``.

        Returns
        -------
        tuple of ndarray
            The one-element tuple ``(E[log x],)``, of shape
            ``batch_shape + (K,)``.
        """
        return (self.expected_log(),)

    def log_normalizer(self):
        """Log-normaliser ``A = sum(gammaln(alpha)) - gammaln(sum(alpha))``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        alpha = self.concentration
        return np.sum(special.gammaln(alpha), axis=-1) - special.gammaln(np.sum(alpha, axis=-1))

    def entropy(self):
        """Differential entropy ``A - sum((alpha - 1) E[log x])``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        alpha = self.concentration
        return self.log_normalizer() - np.sum((alpha - 1.0) * self.expected_log(), axis=-1)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Dirichlet`.

        Parameters
        ----------
        other : Dirichlet
            Distribution ``p`` with the same number of categories ``K``; its
            batch shape must broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`Dirichlet`.
        """
        self._check_other(other)
        a1 = self.concentration
        a2 = other.concentration
        kl = (
            -self.log_normalizer()
            + other.log_normalizer()
            + np.sum((a1 - a2) * self.expected_log(), axis=-1)
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` of shape ``(..., batch_shape, K)``.

        ``-inf`` where a coordinate of ``x`` is negative; ``x`` is not checked
        to sum to one.

        Parameters
        ----------
        x : array_like of shape (..., K)
            Points of the simplex at which to evaluate the density;
            ``x.shape[:-1]`` is broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-1]`` and the
            batch shape.
        """
        x = np.asarray(x)
        neg = np.any(x < 0, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            xpos = np.where(x >= 0, x, 1.0)
            lp = (
                np.sum(special.xlogy(self.concentration - 1.0, xpos), axis=-1)
                - self.log_normalizer()
            )
        return np.where(neg, -np.inf, lp)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (K,)``.

        Normalised Gamma variates, generated in log space
        (``log G(a) = log G(a + 1) + log(U) / a``) so that small
        concentrations do not underflow to ``0 / 0``.

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
        ndarray of shape size + batch_shape + (K,)
            Samples on the simplex, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.concentration.shape
        alpha = np.broadcast_to(self.concentration, shape).astype(np.float64)
        log_g = (
            np.log(rng.standard_gamma(alpha + 1.0, size=shape))
            + np.log(_uniform_open0(rng, shape)) / alpha
        )
        log_g -= np.max(log_g, axis=-1, keepdims=True)
        g = np.exp(log_g)
        x = g / np.sum(g, axis=-1, keepdims=True)
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = alpha / sum(alpha)``.

        Returns
        -------
        ndarray of shape batch_shape + (K,)
            The mean of each factor.
        """
        alpha = self.concentration
        return alpha / np.sum(alpha, axis=-1, keepdims=True)
