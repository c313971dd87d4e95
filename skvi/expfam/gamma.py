"""The batched Gamma distribution."""

import numpy as np
from scipy import special

from .base import (
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _size_tuple,
)


class Gamma(ExponentialFamily):
    """Batch of Gamma distributions parameterised by shape and rate.

    Sufficient statistics ``t(x) = (x, log x)``, natural parameters
    ``eta = (-rate, shape - 1)`` and log-normaliser
    ``A = gammaln(shape) - shape * log(rate)``; the expected statistics are
    ``(shape / rate, digamma(shape) - log(rate))``.

    Parameters
    ----------
    shape : array_like
        Shape parameters (alpha), positive.
    rate : array_like
        Rate parameters (beta, inverse scale), positive; broadcast against
        ``shape``.

    Attributes
    ----------
    shape : ndarray
        Shape parameters with the batch shape (use :attr:`batch_shape` for
        the shape of the batch).
    rate : ndarray
        Rates with the batch shape.

    Examples
    --------
    >>> print(Gamma(2.0, 3.0).mean())
    0.666...
    >>> q = Gamma([1.0, 2.0], [1.0, 3.0])
    >>> print(q.natural[0], q.natural[1])
    [-1. -3.] [0. 1.]
    >>> print(np.round(q.expected_log(), 4))
    [-0.5772 -0.6758]
    >>> print(np.round(q.kl(Gamma(1.0, 1.0)), 4))
    [0.     0.1881]
    """

    _event_ndims = (0, 0)

    def __init__(self, shape, rate):
        dtype = _float_dtype(shape, rate)
        a, b = np.broadcast_arrays(np.asarray(shape, dtype=dtype), np.asarray(rate, dtype=dtype))
        self.shape = np.array(a)
        self.rate = np.array(b)

    @staticmethod
    def log_normalizer_shape_term(shape):
        """``gammaln(shape)``, the log-normaliser's term in the shape alone.

        ``A = gammaln(shape) - shape * log(rate)``: its part that a fixed
        shape contributes, elementwise (the moments of a fixed shape in
        BayesPy's Gamma).

        Parameters
        ----------
        shape : array_like
            Positive shapes.

        Returns
        -------
        ndarray of shape shape.shape
            ``log Gamma(shape)``.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import Gamma
        >>> print(np.round(Gamma.log_normalizer_shape_term([1.0, 4.0]), 6))
        [0.       1.791759]
        """
        return special.gammaln(_as_float(shape))

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.rate.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.rate.dtype

    @property
    def variance(self):
        """Variances ``shape / rate**2``."""
        return self.shape / self.rate**2

    @property
    def natural(self):
        """Natural parameters ``(-rate, shape - 1)``."""
        return (-self.rate, self.shape - 1.0)

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(-rate, shape - 1)``.

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``-rate``, with the batch shape; must be
            negative.
        eta2 : array_like
            Second natural parameter, ``shape - 1``, with the batch shape; must
            be greater than -1.  Broadcast against ``eta1``.

        Returns
        -------
        Gamma
            The Gamma distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        return cls(eta2 + 1.0, -eta1)

    @staticmethod
    def in_support(x):
        """True where ``x`` lies in a Gamma's support: finite and positive.

        Parameters
        ----------
        x : array_like
            Values (any shape).

        Returns
        -------
        ndarray of bool of shape x.shape
            True where the value is finite and positive.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import Gamma
        >>> Gamma.in_support([2.0, 0.0, -1.0, np.inf, np.nan])
        array([ True, False, False, False, False])
        """
        x = _as_float(x)
        with np.errstate(invalid="ignore"):
            return np.isfinite(x) & (x > 0)

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gamma (finite, eta1 < 0, eta2 > -1).

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``-rate``, with the batch shape.
        eta2 : array_like
            Second natural parameter, ``shape - 1``, with the batch shape;
            broadcast against ``eta1``.

        Returns
        -------
        ndarray of bool
            True where both parameters are finite, ``eta1 < 0`` and
            ``eta2 > -1``; it has the broadcast batch shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        return np.isfinite(eta1) & np.isfinite(eta2) & (eta1 < 0) & (eta2 > -1)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and positive.

        Returns
        -------
        Gamma
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a shape or rate is not finite or not strictly positive.
        """
        for name, value in (("shape", self.shape), ("rate", self.rate)):
            if not np.all(np.isfinite(value)):
                raise ValueError(f"Gamma: {name} must be finite.")
            if not np.all(value > 0):
                raise ValueError(f"Gamma: {name} must be strictly positive.")
        return self

    def expected_log(self):
        """Expected logarithm ``E[log x] = digamma(shape) - log(rate)``.

        Returns
        -------
        ndarray of shape batch_shape
            ``E[log x]`` of each factor.
        """
        return special.digamma(self.shape) - np.log(self.rate)

    def expected_stats(self):
        """Expected statistics ``(E[x], E[log x])``.

        ``(E[x], E[log x]) = (shape / rate, digamma(shape) - log(rate))``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[log x])``, each of shape ``batch_shape``.
        """
        return (self.shape / self.rate, self.expected_log())

    def log_normalizer(self):
        """Log-normaliser ``A = gammaln(shape) - shape * log(rate)``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return special.gammaln(self.shape) - self.shape * np.log(self.rate)

    def entropy(self):
        """Differential entropy of each factor.

        ``shape - log(rate) + gammaln(shape) + (1 - shape) digamma(shape)``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        a = self.shape
        return a - np.log(self.rate) + special.gammaln(a) + (1.0 - a) * special.digamma(a)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Gamma`.

        Parameters
        ----------
        other : Gamma
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
            If ``other`` is not a :class:`Gamma`.
        """
        self._check_other(other)
        a1, b1 = self.shape, self.rate
        a2, b2 = other.shape, other.rate
        kl = (
            (a1 - a2) * special.digamma(a1)
            - special.gammaln(a1)
            + special.gammaln(a2)
            + a2 * (np.log(b1) - np.log(b2))
            + a1 * (b2 - b1) / b1
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` (broadcast against the batch shape).

        ``-inf`` for negative ``x``.

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
        a, b = self.shape, self.rate
        with np.errstate(invalid="ignore", divide="ignore"):
            xpos = np.where(x >= 0, x, 1.0)
            lp = a * np.log(b) - special.gammaln(a) + special.xlogy(a - 1.0, xpos) - b * xpos
        return np.where(x >= 0, lp, -np.inf)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape``.

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
            Positive samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        g = rng.standard_gamma(np.broadcast_to(self.shape, shape), size=shape)
        return (g / self.rate).astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = shape / rate``.

        Returns
        -------
        ndarray of shape batch_shape
            The mean of each factor.
        """
        return self.shape / self.rate
