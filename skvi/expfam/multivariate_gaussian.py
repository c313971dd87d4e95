"""The batched full-covariance Gaussian."""

import numpy as np

from .base import (
    _LOG_2PI,
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _cholesky_logdet,
    _float_dtype,
    _pd_mask,
    _size_tuple,
    _symmetric_mask,
    same_array,
)
from .linalg import _covariance, _natural_factors, gaussian_moments


class MultivariateGaussian(ExponentialFamily):
    """Batch of full-covariance Gaussians parameterised by mean and precision.

    Sufficient statistics ``t(x) = (x, x x^T)``, natural parameters
    ``eta = (Lambda m, -Lambda / 2)`` and log-normaliser
    ``A = m^T Lambda m / 2 - log|Lambda| / 2 + d log(2 pi) / 2``; the
    expected statistics are ``(m, Sigma + m m^T)``.

    Parameters
    ----------
    mean : array_like of shape (..., d)
        Means.
    precision : array_like of shape (..., d, d)
        Symmetric positive definite precision matrices.  The batch shapes
        ``mean.shape[:-1]`` and ``precision.shape[:-2]`` broadcast.

    Attributes
    ----------
    loc : ndarray of shape batch_shape + (d,)
    precision : ndarray of shape batch_shape + (d, d)

    Notes
    -----
    The Cholesky factor of ``precision`` (and its inverse) is computed once,
    on first use, and cached; treat instances as immutable.

    Examples
    --------
    >>> q = MultivariateGaussian([1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]])
    >>> q.batch_shape
    ()
    >>> print(np.round(q.covariance, 4))
    [[ 0.5714 -0.2857]
     [-0.2857  1.1429]]
    >>> print(np.round(q.natural[0], 4))
    [ 1.5 -0.5]
    >>> print(round(float(q.entropy()), 4))
    2.5581
    """

    _event_ndims = (1, 2)

    def __init__(self, mean, precision):
        dtype = _float_dtype(mean, precision)
        mean = np.asarray(mean, dtype=dtype)
        precision = np.asarray(precision, dtype=dtype)
        if mean.ndim < 1 or precision.ndim < 2:
            raise ValueError(
                "MultivariateGaussian: mean must have shape (..., d) and "
                "precision shape (..., d, d); got shapes "
                f"{mean.shape} and {precision.shape}."
            )
        d = mean.shape[-1]
        if precision.shape[-2:] != (d, d):
            raise ValueError(
                "MultivariateGaussian: precision must have shape (..., d, d) "
                f"with d = mean.shape[-1] = {d}; got {precision.shape}."
            )
        batch = np.broadcast_shapes(mean.shape[:-1], precision.shape[:-2])
        self.loc = np.array(np.broadcast_to(mean, batch + (d,)))
        self.precision = np.array(np.broadcast_to(precision, batch + (d, d)))
        self._chol_cache = None

    # -- cached factorisations ----------------------------------------------
    def _factors(self):
        """``(L, L^{-1})`` with ``precision = L L^T``, cached."""
        cache = self._chol_cache
        if cache is None or cache[0] is not self.precision:
            chol = np.linalg.cholesky(self.precision)
            chol_inv = np.linalg.inv(chol)
            cache = (self.precision, chol, chol_inv)
            self._chol_cache = cache
        return cache[1], cache[2]

    def _logdet_precision(self):
        chol, _ = self._factors()
        return _cholesky_logdet(chol)

    # -- properties -----------------------------------------------------------
    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.loc.shape[:-1]

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.loc.dtype

    @property
    def dim(self):
        """Event dimension ``d``."""
        return self.loc.shape[-1]

    @property
    def covariance(self):
        """Covariance matrices ``Lambda^{-1} = L^{-T} L^{-1}`` (via Cholesky)."""
        _, chol_inv = self._factors()
        return _covariance(chol_inv)

    @property
    def variance(self):
        """Marginal variances, the diagonal of :attr:`covariance`."""
        _, chol_inv = self._factors()
        return np.sum(chol_inv**2, axis=-2)

    @property
    def natural(self):
        """Natural parameters ``(Lambda m, -Lambda / 2)``."""
        eta1 = (self.precision @ self.loc[..., None])[..., 0]
        return (eta1, -0.5 * self.precision)

    # -- constructors / validity ------------------------------------------------
    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(Lambda m, -Lambda / 2)``.

        ``eta2`` is symmetrised before use.

        Parameters
        ----------
        eta1 : array_like of shape (..., d)
            First natural parameter, ``Lambda m`` (precision times mean).
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-Lambda / 2``; ``-eta2`` must be
            symmetric positive definite.  The batch shapes ``eta1.shape[:-1]``
            and ``eta2.shape[:-2]`` broadcast.

        Returns
        -------
        MultivariateGaussian
            The Gaussian with these natural parameters (its Cholesky factors are
            cached).
        """
        precision, chol, chol_inv, mean = _natural_factors(eta1, eta2)
        out = cls(mean, precision)
        out._chol_cache = (out.precision, chol, chol_inv)
        return out

    @staticmethod
    def moments_from_natural(eta1, eta2):
        """Mean, covariance and ``log|Lambda|`` from natural parameters, as arrays.

        The map of :meth:`from_natural` (one Cholesky factorisation of each
        precision, batched over the leading axes) without building a
        factor: what a caller that keeps its own natural parameters needs
        for the expected statistics ``(m, Sigma + m m^T)`` and the
        log-normaliser ``A = (m^T eta1 - log|Lambda| + d log(2 pi)) / 2``.

        Parameters
        ----------
        eta1 : array_like of shape (..., d)
            First natural parameter, ``Lambda m`` (the linear term).
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-Lambda / 2``; ``-eta2`` symmetric
            positive definite (it is symmetrised before use).  The batch
            shapes ``eta1.shape[:-1]`` and ``eta2.shape[:-2]`` broadcast.

        Returns
        -------
        mean : ndarray of shape batch_shape + (d,)
            ``m = Lambda^{-1} eta1``.
        covariance : ndarray of shape batch_shape + (d, d)
            ``Sigma = Lambda^{-1}``, symmetric.
        logdet_precision : ndarray of shape batch_shape
            ``log|Lambda|``.

        Raises
        ------
        ValueError
            If the shapes do not match or an entry is not finite.
        numpy.linalg.LinAlgError
            If a precision ``-2 eta2`` is not positive definite.

        See Also
        --------
        gaussian_moments : the map with its options (diagonal, a factor, LAPACK).

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import MultivariateGaussian
        >>> precision = np.array([[2.0, 0.5], [0.5, 1.0]])
        >>> mean, cov, logdet = MultivariateGaussian.moments_from_natural(
        ...     precision @ np.array([1.0, -1.0]), -0.5 * precision)
        >>> print(np.round(mean, 12), round(float(logdet), 4))
        [ 1. -1.] 0.5596
        >>> print(np.allclose(cov @ precision, np.eye(2)))
        True
        """
        return tuple(gaussian_moments(eta1, eta2)[:3])

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gaussian.

        Valid means: all entries finite and ``-eta2`` symmetric positive
        definite.  A single batched Cholesky factorisation is tried first;
        only on failure are the offending elements located.

        Parameters
        ----------
        eta1 : array_like of shape (..., d)
            First natural parameter, ``Lambda m`` (precision times mean).
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-Lambda / 2``.  The batch shapes
            ``eta1.shape[:-1]`` and ``eta2.shape[:-2]`` broadcast.

        Returns
        -------
        ndarray of bool
            True where the parameters are valid; it has the broadcast batch
            shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        batch = np.broadcast_shapes(eta1.shape[:-1], eta2.shape[:-2])
        ok = np.all(np.isfinite(eta1), axis=-1) & np.all(np.isfinite(eta2), axis=(-2, -1))
        ok = np.broadcast_to(ok & _symmetric_mask(eta2), batch)
        # Test the very matrix from_natural factorises, so that a factor
        # called valid can always be built (it matters at the edge of
        # definiteness, where rounding decides).
        return _pd_mask(-(eta2 + np.swapaxes(eta2, -1, -2)), ok)

    @classmethod
    def valid_step(cls, current, new):
        """:meth:`valid_natural` of ``new``, given that ``current`` is valid.

        A step that left ``eta2`` exactly as it was (a covariance target that
        does not move, as under the softmax's bound) keeps a precision known
        to be positive definite: only ``eta1`` is tested, without the
        Cholesky factorisation.

        Parameters
        ----------
        current, new : tuple of array_like
            ``(eta1, eta2)`` before (valid) and after the step.

        Returns
        -------
        ndarray of bool
            As :meth:`valid_natural` of ``new``.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import MultivariateGaussian
        >>> eta2 = -0.5 * np.eye(2)
        >>> MultivariateGaussian.valid_step((np.zeros(2), eta2), (np.array([1.0, np.nan]), eta2))
        array(False)
        """
        eta1, eta2 = (_as_float(a) for a in new)
        old2 = _as_float(current[1])
        if old2 is not eta2 and (not same_array(old2, eta2)):
            return cls.valid_natural(eta1, eta2)
        batch = np.broadcast_shapes(eta1.shape[:-1], eta2.shape[:-2])
        return np.broadcast_to(np.all(np.isfinite(eta1), axis=-1), batch)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and valid.

        Returns
        -------
        MultivariateGaussian
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean or precision entry is not finite, or a precision matrix is
            not symmetric positive definite.
        """
        name = "MultivariateGaussian"
        if not np.all(np.isfinite(self.loc)):
            raise ValueError(f"{name}: mean must be finite.")
        if not np.all(np.isfinite(self.precision)):
            raise ValueError(f"{name}: precision must be finite.")
        sym = _symmetric_mask(self.precision)
        if not np.all(sym):
            raise ValueError(
                f"{name}: precision must be symmetric "
                f"({np.size(sym) - np.count_nonzero(sym)} of {np.size(sym)} "
                "matrices are not)."
            )
        pd = _pd_mask(self.precision, np.ones(self.batch_shape, dtype=bool))
        if not np.all(pd):
            raise ValueError(
                f"{name}: precision must be positive definite "
                f"({np.size(pd) - np.count_nonzero(pd)} of {np.size(pd)} "
                "matrices are not)."
            )
        return self

    # -- expectations -------------------------------------------------------------
    def expected_stats(self):
        """Expected statistics ``(E[x], E[x x^T]) = (m, Sigma + m m^T)``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[x x^T])`` of shapes ``batch_shape + (d,)`` and
            ``batch_shape + (d, d)``.
        """
        m = self.loc
        return (m.copy(), self.covariance + m[..., :, None] * m[..., None, :])

    def log_normalizer(self):
        """Log-normaliser ``A = m^T Lambda m / 2 - log|Lambda| / 2 + d log(2 pi) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        quad = np.einsum("...i,...ij,...j->...", self.loc, self.precision, self.loc)
        # astype: with NumPy < 2 a float32 scalar (batch_shape ()) and a Python
        # float promote to float64.
        out = 0.5 * (quad - self._logdet_precision() + self.dim * _LOG_2PI)
        return out.astype(self.dtype, copy=False)

    def entropy(self):
        """Differential entropy ``d (1 + log(2 pi)) / 2 - log|Lambda| / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        out = 0.5 * (self.dim * (1.0 + _LOG_2PI) - self._logdet_precision())
        return out.astype(self.dtype, copy=False)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) MultivariateGaussian.

        ``(tr(Lambda_p Sigma_q) + (m_p - m_q)^T Lambda_p (m_p - m_q) - d
        + log|Lambda_q| - log|Lambda_p|) / 2``.

        Parameters
        ----------
        other : MultivariateGaussian
            Distribution ``p`` of the same dimension ``d``; its batch shape must
            broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`MultivariateGaussian`.
        """
        self._check_other(other)
        trace = np.sum(other.precision * self.covariance, axis=(-2, -1))
        diff = other.loc - self.loc
        quad = np.einsum("...i,...ij,...j->...", diff, other.precision, diff)
        kl = 0.5 * (trace + quad - self.dim + self._logdet_precision() - other._logdet_precision())
        return np.maximum(kl, 0.0).astype(np.result_type(self.dtype, other.dtype), copy=False)

    def log_prob(self, x):
        """Log density at ``x`` of shape ``(..., batch_shape, d)``.

        Parameters
        ----------
        x : array_like of shape (..., d)
            Points at which to evaluate the density; ``x.shape[:-1]`` is
            broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-1]`` and the
            batch shape.
        """
        diff = np.asarray(x) - self.loc
        quad = np.einsum("...i,...ij,...j->...", diff, self.precision, diff)
        return 0.5 * (self._logdet_precision() - self.dim * _LOG_2PI - quad)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (d,)``.

        ``x = m + L^{-T} z`` with ``z`` standard normal and
        ``precision = L L^T``.

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
        ndarray of shape size + batch_shape + (d,)
            Samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        _, chol_inv = self._factors()
        shape = _size_tuple(size) + self.batch_shape + (self.dim,)
        z = rng.standard_normal(shape)
        x = self.loc + (z[..., None, :] @ chol_inv)[..., 0, :]
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = loc``.

        Returns
        -------
        ndarray of shape batch_shape + (d,)
            A copy of :attr:`loc`.
        """
        return self.loc.copy()
