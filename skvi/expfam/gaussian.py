"""The batched univariate Gaussian."""

import numpy as np

from .base import (
    _LOG_2PI,
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _renamed,
    _size_tuple,
)


class UnivariateGaussian(ExponentialFamily):
    """Batch of univariate Gaussians parameterised by mean and precision.

    Formerly ``skvi.expfam.Gaussian``, a name that :mod:`skvi.networks` gives
    BayesPy's Gaussian vector.

    A diagonal Gaussian is simply a batch of these.  Sufficient statistics
    ``t(x) = (x, x**2)``, natural parameters
    ``eta = (precision * loc, -precision / 2)`` and log-normaliser
    ``A(eta) = -eta1**2 / (4 eta2) - log(-2 eta2) / 2 + log(2 pi) / 2``.

    Parameters
    ----------
    mean : array_like
        Means; broadcast against ``precision``.
    precision : array_like
        Precisions (inverse variances), positive.

    Attributes
    ----------
    loc : ndarray
        Means, with the batch shape.
    precision : ndarray
        Precisions, with the batch shape.

    Examples
    --------
    >>> q = UnivariateGaussian([0.0, 1.0], [1.0, 4.0])
    >>> q.batch_shape
    (2,)
    >>> print(q.variance)
    [1.   0.25]
    >>> eta1, eta2 = q.natural
    >>> print(eta1, eta2)
    [0. 4.] [-0.5 -2. ]
    >>> print(np.round(q.entropy(), 4))
    [1.4189 0.7258]
    >>> print(np.round(q.kl(UnivariateGaussian(0.0, 1.0)), 4))
    [0.     0.8181]
    """

    _event_ndims = (0, 0)

    def __init__(self, mean, precision):
        dtype = _float_dtype(mean, precision)
        loc, prec = np.broadcast_arrays(
            np.asarray(mean, dtype=dtype), np.asarray(precision, dtype=dtype)
        )
        self.loc = np.array(loc)
        self.precision = np.array(prec)

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.loc.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.loc.dtype

    @property
    def variance(self):
        """Variances ``1 / precision``."""
        return 1.0 / self.precision

    @property
    def natural(self):
        """Natural parameters ``(precision * loc, -precision / 2)``."""
        return (self.precision * self.loc, -0.5 * self.precision)

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(precision * loc, -precision / 2)``.

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``precision * loc``, with the batch shape;
            broadcast against ``eta2``.
        eta2 : array_like
            Second natural parameter, ``-precision / 2``, with the batch shape;
            must be negative.

        Returns
        -------
        UnivariateGaussian
            The Gaussian with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        precision = -2.0 * eta2
        return cls(eta1 / precision, precision)

    @staticmethod
    def in_support(x):
        """True where ``x`` lies in a Gaussian's support: finite.

        Parameters
        ----------
        x : array_like
            Values (any shape).

        Returns
        -------
        ndarray of bool of shape x.shape
            True where the value is finite.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import UnivariateGaussian
        >>> UnivariateGaussian.in_support([-1e300, 0.0, np.inf, np.nan])
        array([ True,  True, False, False])
        """
        return np.isfinite(_as_float(x))

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gaussian (finite, eta2 < 0).

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``precision * loc``, with the batch shape.
        eta2 : array_like
            Second natural parameter, ``-precision / 2``, with the batch shape;
            broadcast against ``eta1``.

        Returns
        -------
        ndarray of bool
            True where both parameters are finite and ``eta2 < 0``; it has the
            broadcast batch shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        return np.isfinite(eta1) & np.isfinite(eta2) & (eta2 < 0)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and valid.

        Returns
        -------
        UnivariateGaussian
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean or precision is not finite or a precision is not strictly
            positive.
        """
        if not np.all(np.isfinite(self.loc)):
            raise ValueError("UnivariateGaussian: mean must be finite.")
        if not np.all(np.isfinite(self.precision)):
            raise ValueError("UnivariateGaussian: precision must be finite.")
        if not np.all(self.precision > 0):
            raise ValueError("UnivariateGaussian: precision must be strictly positive.")
        return self

    def expected_stats(self):
        """Expected statistics ``(E[x], E[x**2]) = (loc, loc**2 + 1 / precision)``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[x**2])``, each of shape ``batch_shape``.
        """
        return (self.loc.copy(), self.loc**2 + 1.0 / self.precision)

    def log_normalizer(self):
        """Log-normaliser ``A(eta)`` of each factor.

        ``A = precision * loc**2 / 2 - log(precision) / 2 + log(2 pi) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return 0.5 * (self.precision * self.loc**2 - np.log(self.precision) + _LOG_2PI)

    def entropy(self):
        """Differential entropy ``(1 + log(2 pi) - log(precision)) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        return 0.5 * (1.0 + _LOG_2PI - np.log(self.precision))

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`UnivariateGaussian`.

        Parameters
        ----------
        other : UnivariateGaussian
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
            If ``other`` is not a :class:`UnivariateGaussian`.
        """
        self._check_other(other)
        ratio = other.precision / self.precision
        kl = 0.5 * (ratio - 1.0 - np.log(ratio) + other.precision * (self.loc - other.loc) ** 2)
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` (broadcast against the batch shape).

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
        return 0.5 * (np.log(self.precision) - _LOG_2PI - self.precision * (x - self.loc) ** 2)

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
            Samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        z = rng.standard_normal(shape)
        return (self.loc + z / np.sqrt(self.precision)).astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = loc``.

        Returns
        -------
        ndarray of shape batch_shape
            A copy of :attr:`loc`.
        """
        return self.loc.copy()


# The old name, for one release.
_RENAMED = {"Gaussian": "UnivariateGaussian"}


def __getattr__(name):
    return _renamed(__name__, _RENAMED, name)
