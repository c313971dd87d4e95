"""The batched Wishart distribution and its multivariate gamma helpers."""

import numpy as np
from scipy import special

from .base import (
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _cholesky_logdet,
    _float_dtype,
    _pd_mask,
    _renamed,
    _size_tuple,
    _symmetric_mask,
)


def _log_multigamma(a, d):
    """``log Gamma_d(a)``, elementwise over an array ``a``."""
    j = np.arange(d, dtype=np.float64)
    return 0.25 * d * (d - 1) * np.log(np.pi) + np.sum(
        special.gammaln(np.asarray(a)[..., None] - 0.5 * j), axis=-1
    )


def _multi_digamma(a, d):
    """``sum_j digamma(a - j / 2)`` for ``j = 0 .. d - 1``, elementwise over ``a``."""
    j = np.arange(d, dtype=np.float64)
    return np.sum(special.digamma(np.asarray(a)[..., None] - 0.5 * j), axis=-1)


class WishartByScale(ExponentialFamily):
    """Batch of Wishart distributions over ``d x d`` precision matrices, given by their scale.

    Formerly ``skvi.expfam.Wishart``, a name that :mod:`skvi.networks` gives
    BayesPy's Wishart, whose ``Wishart(n, V)`` takes the inverse scale
    ``V = W^{-1}``.

    Density ``|X|^((df - d - 1) / 2) exp(-tr(W^{-1} X) / 2) / (2^(df d / 2)
    |W|^(df / 2) Gamma_d(df / 2))`` with ``df > d - 1`` degrees of freedom
    and scale matrix ``W``.  Sufficient statistics ``t(X) = (X, log|X|)``,
    natural parameters ``eta = (-W^{-1} / 2, (df - d - 1) / 2)`` and
    log-normaliser ``A = df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)``;
    the expected statistics are ``E[X] = df W`` and
    ``E[log|X|] = sum_j digamma((df - j) / 2) + d log 2 + log|W|``.

    With ``d = 1`` it is ``Gamma(df / 2, rate=1 / (2 W))``, and natural
    parameters ``(-b I, a - 1)`` give, for every ``d``, the Wishart whose
    ``d = 1`` case is ``Gamma(a, rate=b)``: ``df = d - 1 + 2 a`` and
    ``W = I / (2 b)``.

    Parameters
    ----------
    df : array_like
        Degrees of freedom, greater than ``d - 1``; broadcast against the
        batch shape of ``scale``.
    scale : array_like of shape (..., d, d)
        Symmetric positive definite scale matrices ``W``.

    Attributes
    ----------
    df : ndarray of shape batch_shape
    scale : ndarray of shape batch_shape + (d, d)

    Examples
    --------
    >>> q = WishartByScale(5.0, [[1.0, 0.2], [0.2, 0.5]])
    >>> print(np.round(q.mean(), 4))
    [[5.  1. ]
     [1.  2.5]]
    >>> print(round(float(q.expected_log_det()), 4))
    1.7357
    >>> print(round(float(q.kl(WishartByScale(3.0, np.eye(2)))), 4))
    0.6353
    >>> g = WishartByScale.from_natural(-3.0 * np.eye(1), 1.0)  # Gamma(2, rate=3)
    >>> print(round(float(g.mean()[0, 0]), 4), round(float(g.entropy()), 4))
    0.6667 0.4786
    """

    _event_ndims = (2, 0)

    def __init__(self, df, scale):
        dtype = _float_dtype(df, scale)
        scale = np.asarray(scale, dtype=dtype)
        if scale.ndim < 2 or scale.shape[-1] != scale.shape[-2]:
            raise ValueError(
                f"WishartByScale: scale must have shape (..., d, d); got {scale.shape}."
            )
        df = np.asarray(df, dtype=dtype)
        d = scale.shape[-1]
        batch = np.broadcast_shapes(df.shape, scale.shape[:-2])
        self.df = np.array(np.broadcast_to(df, batch))
        self.scale = np.array(np.broadcast_to(scale, batch + (d, d)))

    # -- array-level functions, for callers in other conventions -------------
    @staticmethod
    def sufficient_stats(x):
        """The sufficient statistics ``(X, log|X|)`` of positive definite matrices.

        Parameters
        ----------
        x : array_like of shape (..., d, d)
            Symmetric positive definite matrices (only the lower triangle is
            read for the log-determinant).

        Returns
        -------
        x : ndarray of shape (..., d, d)
            The matrices, as a float array.
        logdet : ndarray of shape x.shape[:-2]
            ``log|X|``, from one batched Cholesky factorisation.

        Raises
        ------
        ValueError
            If a matrix is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import WishartByScale
        >>> _, logdet = WishartByScale.sufficient_stats(np.diag([2.0, 3.0]))
        >>> print(round(float(logdet), 6), round(float(np.log(6.0)), 6))
        1.791759 1.791759
        """
        x = _as_float(x)
        try:
            chol = np.linalg.cholesky(x)
        except np.linalg.LinAlgError:
            raise ValueError("WishartByScale: the matrices must be positive definite.") from None
        return x, _cholesky_logdet(chol)

    @staticmethod
    def log_normalizer_df_term(df, d):
        """``log Gamma_d(df / 2)``, the log-normaliser's term in the degrees of freedom.

        ``A = df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)``: the
        multivariate gamma function's part, elementwise over an array of
        degrees of freedom (the moments of a fixed ``df`` in BayesPy's
        Wishart).

        Parameters
        ----------
        df : array_like
            Degrees of freedom, greater than ``d - 1``.
        d : int
            The matrices' dimension.

        Returns
        -------
        ndarray of shape df.shape
            ``log Gamma_d(df / 2)``.

        Examples
        --------
        >>> import numpy as np
        >>> from scipy import special
        >>> from skvi.expfam import WishartByScale
        >>> a = WishartByScale.log_normalizer_df_term(np.array([3.0, 5.0]), 2)
        >>> print(np.allclose(a, [special.multigammaln(1.5, 2), special.multigammaln(2.5, 2)]))
        True
        """
        return _log_multigamma(0.5 * _as_float(df), d)

    @staticmethod
    def stats_from_inverse_scale(df, inv_scale):
        """Expected statistics and log-normaliser of ``WishartByScale(df, V^{-1})`` from ``V``.

        The parameterisation by an inverse scale ``V`` (BayesPy's
        ``Wishart(n, V)``, where ``E[X] = n V^{-1}``, and the natural
        parameter ``-V / 2``), without inverting ``V`` into a scale first:
        ``E[X] = df V^{-1}``, ``E[log|X|] = sum_j digamma((df - j) / 2) +
        d log 2 - log|V|`` and ``A = df d log(2) / 2 - df log|V| / 2 +
        log Gamma_d(df / 2)``, batched over the leading axes.

        Parameters
        ----------
        df : array_like
            Degrees of freedom, greater than ``d - 1``; broadcast against the
            batch shape of ``inv_scale``.
        inv_scale : array_like of shape (..., d, d)
            Symmetric positive definite inverse scales ``V = W^{-1}``.

        Returns
        -------
        mean : ndarray of shape batch_shape + (d, d)
            ``E[X] = df V^{-1}``.
        expected_log_det : ndarray of shape batch_shape
            ``E[log|X|]``.
        log_normalizer : ndarray of shape batch_shape
            ``A``, as :meth:`log_normalizer` of ``WishartByScale(df, V^{-1})``.

        Raises
        ------
        numpy.linalg.LinAlgError
            If an inverse scale is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import WishartByScale
        >>> V = np.array([[2.0, 0.5], [0.5, 1.0]])
        >>> mean, elogdet, A = WishartByScale.stats_from_inverse_scale(4.0, V)
        >>> q = WishartByScale(4.0, np.linalg.inv(V))
        >>> print(np.allclose(mean, q.mean()), np.isclose(elogdet, q.expected_log_det()))
        True True
        >>> print(np.isclose(A, q.log_normalizer()))
        True
        """
        V = _as_float(inv_scale)
        df = _as_float(df)
        d = V.shape[-1]
        logdet = _cholesky_logdet(np.linalg.cholesky(V))
        mean = df[..., None, None] * np.linalg.inv(V)
        expected_log_det = _multi_digamma(0.5 * df, d) + d * np.log(2.0) - logdet
        log_normalizer = (
            0.5 * df * d * np.log(2.0) - 0.5 * df * logdet + _log_multigamma(0.5 * df, d)
        )
        return mean, expected_log_det, log_normalizer

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.df.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.scale.dtype

    @property
    def dim(self):
        """Event dimension ``d`` (matrices are ``d x d``)."""
        return self.scale.shape[-1]

    def _logdet_scale(self):
        return _cholesky_logdet(np.linalg.cholesky(self.scale))

    @property
    def natural(self):
        """Natural parameters ``(-W^{-1} / 2, (df - d - 1) / 2)``."""
        inv = np.linalg.inv(self.scale)
        inv = 0.5 * (inv + np.swapaxes(inv, -1, -2))
        return (-0.5 * inv, 0.5 * (self.df - self.dim - 1.0))

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(-W^{-1} / 2, (df - d - 1) / 2)``.

        ``eta1`` is symmetrised before use.

        Parameters
        ----------
        eta1 : array_like of shape (..., d, d)
            First natural parameter, ``-W^{-1} / 2``; ``-eta1`` must be
            symmetric positive definite.
        eta2 : array_like
            Second natural parameter, ``(df - d - 1) / 2``, greater than -1;
            broadcast against the batch shape of ``eta1``.

        Returns
        -------
        WishartByScale
            The Wishart distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        d = eta1.shape[-1]
        scale = np.linalg.inv(-(eta1 + np.swapaxes(eta1, -1, -2)))
        scale = 0.5 * (scale + np.swapaxes(scale, -1, -2))
        return cls(2.0 * eta2 + d + 1.0, scale)

    @staticmethod
    def in_support(x):
        """True where ``x`` lies in a Wishart's support: finite symmetric positive definite.

        Symmetric to the square root of the float precision, relative to the
        largest entry.

        Parameters
        ----------
        x : array_like of shape (..., d, d)
            Square matrices.

        Returns
        -------
        ndarray of bool of shape x.shape[:-2]
            True where the matrix is finite, symmetric and positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import WishartByScale
        >>> WishartByScale.in_support([np.eye(2), [[1.0, 0.5], [0.0, 1.0]], -np.eye(2)])
        array([ True, False, False])
        """
        x = _as_float(x)
        ok = np.all(np.isfinite(x), axis=(-2, -1)) & _symmetric_mask(x)
        return _pd_mask(0.5 * (x + np.swapaxes(x, -1, -2)), ok)

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Wishart.

        Valid means: all entries finite, ``-eta1`` symmetric positive
        definite and ``eta2 > -1`` (``df > d - 1``).

        Parameters
        ----------
        eta1 : array_like of shape (..., d, d)
            First natural parameter, ``-W^{-1} / 2``.
        eta2 : array_like
            Second natural parameter, ``(df - d - 1) / 2``; broadcast against
            the batch shape of ``eta1``.

        Returns
        -------
        ndarray of bool
            True where the parameters are valid; it has the broadcast batch
            shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        batch = np.broadcast_shapes(eta1.shape[:-2], eta2.shape)
        ok = np.all(np.isfinite(eta1), axis=(-2, -1)) & _symmetric_mask(eta1)
        ok = np.broadcast_to(ok & np.isfinite(eta2) & (eta2 > -1), batch)
        return _pd_mask(-(eta1 + np.swapaxes(eta1, -1, -2)), ok)

    def validate(self):
        """Raise ``ValueError`` unless ``df > d - 1`` and every scale is valid.

        Returns
        -------
        WishartByScale
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a degree of freedom is not finite or not above ``d - 1``, or a
            scale matrix is not finite, symmetric and positive definite.
        """
        if not np.all(np.isfinite(self.df) & (self.df > self.dim - 1)):
            raise ValueError(
                f"WishartByScale: df must be finite and greater than d - 1 = {self.dim - 1}."
            )
        if not np.all(np.isfinite(self.scale)):
            raise ValueError("WishartByScale: scale must be finite.")
        ok = _symmetric_mask(self.scale)
        if not np.all(ok) or not np.all(_pd_mask(self.scale, ok)):
            raise ValueError("WishartByScale: scale must be symmetric positive definite.")
        return self

    def expected_log_det(self):
        """``E[log|X|] = sum_j digamma((df - j) / 2) + d log 2 + log|W|``.

        Returns
        -------
        ndarray of shape batch_shape
            The expected log-determinant of each factor.
        """
        d = self.dim
        return _multi_digamma(0.5 * self.df, d) + d * np.log(2.0) + self._logdet_scale()

    def expected_stats(self):
        """Expected statistics ``(E[X], E[log|X|]) = (df W, ...)``.

        Returns
        -------
        tuple of ndarray
            ``(E[X], E[log|X|])`` of shapes ``batch_shape + (d, d)`` and
            ``batch_shape``.
        """
        return (self.mean(), self.expected_log_det())

    def log_normalizer(self):
        """Log-normaliser ``df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        d, df = self.dim, self.df
        return (
            0.5 * df * d * np.log(2.0)
            + 0.5 * df * self._logdet_scale()
            + _log_multigamma(0.5 * df, d)
        )

    def log_prob(self, x):
        """Log density at the matrices ``x`` of shape ``(..., d, d)``.

        Parameters
        ----------
        x : array_like of shape (..., d, d)
            Symmetric positive definite points; ``x.shape[:-2]`` is broadcast
            against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-2]`` and the
            batch shape.
        """
        x = np.asarray(x, dtype=self.dtype)
        eta1, eta2 = self.natural
        _, logdet = np.linalg.slogdet(x)
        return np.sum(eta1 * x, axis=(-2, -1)) + eta2 * logdet - self.log_normalizer()

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (d, d)``.

        Bartlett's decomposition: ``X = L A A^T L^T`` with ``W = L L^T``,
        ``A`` lower triangular, ``A_jj^2 ~ chi2(df - j)`` and standard normal
        entries below the diagonal.

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
        ndarray of shape size + batch_shape + (d, d)
            Symmetric positive definite samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        d = self.dim
        shape = _size_tuple(size) + self.batch_shape
        a = np.tril(rng.standard_normal(shape + (d, d)), k=-1)
        dof = np.broadcast_to(self.df, shape)[..., None] - np.arange(d)
        idx = np.arange(d)
        a[..., idx, idx] = np.sqrt(rng.chisquare(dof))
        la = np.linalg.cholesky(self.scale) @ a
        x = la @ np.swapaxes(la, -1, -2)
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[X] = df W``.

        Returns
        -------
        ndarray of shape batch_shape + (d, d)
            The mean of each factor.
        """
        return self.df[..., None, None] * self.scale


# The old name, for one release.
_RENAMED = {"Wishart": "WishartByScale"}


def __getattr__(name):
    return _renamed(__name__, _RENAMED, name)
