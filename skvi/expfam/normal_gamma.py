"""The batched Normal-Gamma distribution: Gaussian means sharing a scalar precision."""

import numpy as np

from ._shared_precision import _SharedPrecisionMeans
from .base import (
    _LOG_2PI,
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _size_tuple,
)
from .gamma import Gamma


class NormalGamma(_SharedPrecisionMeans, ExponentialFamily):
    """Batch of Normal-Gamma distributions: ``J`` means sharing one precision.

    The scalar precision follows ``lambda ~ Gamma(a, rate=b)`` and, given
    ``lambda``, the ``J`` means in ``R^d`` are independent with
    ``mu_j ~ N(m_j, (beta_j lambda)^{-1} I_d)``.  Sufficient statistics

        ``t(mu, lambda) = (lambda mu_j, lambda, lambda ||mu_j||^2, log lambda)``,

    of shapes ``(J, d)``, ``()``, ``(J,)`` and ``()``, natural parameters

        ``eta = (beta_j m_j, -(b + sum_j beta_j ||m_j||^2 / 2), -beta_j / 2,
        a - 1 + J d / 2)``

    and log-normaliser ``A = gammaln(a) - a log(b) + sum_j (d log(2 pi) / 2
    - d log(beta_j) / 2)``.  The expected statistics are ``((a / b) m_j,
    a / b, d / beta_j + (a / b) ||m_j||^2, digamma(a) - log(b))``.

    With ``d = 1``, ``J = 1`` and a batch ``(K, D)`` it is one factor per
    mixture component and feature (a diagonal-covariance Gaussian mixture);
    with ``J = 1``, ``d = D`` and a batch ``(K,)`` one spherical component
    each.  Marginally, each ``mu_j`` is a multivariate Student t with ``2 a``
    degrees of freedom, location ``m_j`` and shape matrix
    ``b / (a beta_j) I_d``.

    Parameters
    ----------
    loc : array_like of shape (..., J, d)
        Means ``m_j`` of the ``J`` Gaussians.
    beta : array_like of shape (..., J)
        Positive scalings ``beta_j`` of the precision of each mean; its last
        axis broadcasts against the ``J`` axis of ``loc``.
    shape : array_like
        Shape ``a`` of the Gamma distribution of the precision, positive.
    rate : array_like
        Rate ``b`` of the Gamma distribution of the precision, positive.  The
        batch shapes ``loc.shape[:-2]``, ``beta.shape[:-1]``, ``shape.shape``
        and ``rate.shape`` broadcast.

    Attributes
    ----------
    loc : ndarray of shape batch_shape + (J, d)
    beta : ndarray of shape batch_shape + (J,)
    shape : ndarray of shape batch_shape
    rate : ndarray of shape batch_shape

    Examples
    --------
    >>> q = NormalGamma([[1.0]], [2.0], 3.0, 1.5)
    >>> q.batch_shape, q.n_means, q.dim
    ((), 1, 1)
    >>> loc, lam = q.mean()
    >>> print(loc, lam)
    [[1.]] 2.0
    >>> print([np.round(e, 4).tolist() for e in q.natural])
    [[[2.0]], -2.5, [-1.0], 2.5]
    >>> print(round(float(q.entropy()), 4))
    2.2558
    >>> print(round(float(q.kl(NormalGamma([[0.0]], [1.0], 1.0, 1.0))), 4))
    1.6545

    One spherical component per row of a batch of two, in three dimensions:

    >>> s = NormalGamma(np.zeros((2, 1, 3)), [[1.0], [4.0]], 2.0, [1.0, 2.0])
    >>> s.batch_shape, s.n_means, s.dim
    ((2,), 1, 3)
    >>> mu, lam = s.sample(5, random_state=0)
    >>> mu.shape, lam.shape
    ((5, 2, 1, 3), (5, 2))
    """

    _event_ndims = (2, 0, 1, 0)

    def __init__(self, loc, beta, shape, rate):
        dtype = _float_dtype(loc, beta, shape, rate)
        loc = np.asarray(loc, dtype=dtype)
        beta = np.asarray(beta, dtype=dtype)
        shape = np.asarray(shape, dtype=dtype)
        rate = np.asarray(rate, dtype=dtype)
        if loc.ndim < 2:
            raise ValueError(f"NormalGamma: loc must have shape (..., J, d); got {loc.shape}.")
        d = loc.shape[-1]
        full = np.broadcast_shapes(
            loc.shape[:-1], beta.shape, shape.shape + (1,), rate.shape + (1,)
        )
        batch = full[:-1]
        self.loc = np.array(np.broadcast_to(loc, full + (d,)))
        self.beta = np.array(np.broadcast_to(beta, full))
        self.shape = np.array(np.broadcast_to(shape, batch))
        self.rate = np.array(np.broadcast_to(rate, batch))

    # -- properties -----------------------------------------------------------

    def precision(self):
        """Marginal distribution of the shared precision, ``Gamma(a, rate=b)``.

        Returns
        -------
        Gamma
            The Gamma distribution of ``lambda``, with the batch shape of
            ``self``.
        """
        return Gamma(self.shape, self.rate)

    @property
    def natural(self):
        """Natural parameters.

        ``(beta_j m_j, -(b + sum_j beta_j ||m_j||^2 / 2), -beta_j / 2,
        a - 1 + J d / 2)``.
        """
        bm = self.beta[..., None] * self.loc
        eta2 = -(self.rate + 0.5 * np.sum(bm * self.loc, axis=(-2, -1)))
        eta4 = self.shape - 1.0 + 0.5 * self.n_means * self.dim
        return (bm, eta2, -0.5 * self.beta, eta4)

    # -- constructors / validity ------------------------------------------------
    @classmethod
    def from_natural(cls, eta1, eta2, eta3, eta4):
        """Build from natural parameters.

        The parameters are ``(beta_j m_j, -(b + sum_j beta_j ||m_j||^2 / 2),
        -beta_j / 2, a - 1 + J d / 2)``.

        Parameters
        ----------
        eta1 : array_like of shape (..., J, d)
            First natural parameter, ``beta_j m_j``.
        eta2 : array_like
            Second natural parameter, ``-(b + sum_j beta_j ||m_j||^2 / 2)``.
        eta3 : array_like of shape (..., J)
            Third natural parameter, ``-beta_j / 2``; must be negative.
        eta4 : array_like
            Fourth natural parameter, ``a - 1 + J d / 2``, greater than
            ``J d / 2 - 1``.  The batch shapes of the four parameters
            broadcast.

        Returns
        -------
        NormalGamma
            The Normal-Gamma distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2, eta3, eta4)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        eta3 = np.asarray(eta3, dtype=dtype)
        eta4 = np.asarray(eta4, dtype=dtype)
        d = eta1.shape[-1]
        full = np.broadcast_shapes(eta1.shape[:-1], eta3.shape)
        n_means = full[-1]
        beta = np.broadcast_to(-2.0 * eta3, full)
        eta1 = np.broadcast_to(eta1, full + (d,))
        loc = eta1 / beta[..., None]
        rate = -eta2 - 0.5 * np.sum(loc * eta1, axis=(-2, -1))
        return cls(loc, beta, eta4 + 1.0 - 0.5 * n_means * d, rate)

    @staticmethod
    def valid_natural(eta1, eta2, eta3, eta4):
        """True where ``(eta1, eta2, eta3, eta4)`` define a Normal-Gamma.

        Valid means: all entries finite, ``beta_j = -2 eta3_j > 0``,
        ``b = -eta2 - sum_j beta_j ||m_j||^2 / 2 > 0`` and
        ``a = eta4 + 1 - J d / 2 > 0``.

        Parameters
        ----------
        eta1 : array_like of shape (..., J, d)
            First natural parameter, ``beta_j m_j``.
        eta2 : array_like
            Second natural parameter, ``-(b + sum_j beta_j ||m_j||^2 / 2)``.
        eta3 : array_like of shape (..., J)
            Third natural parameter, ``-beta_j / 2``.
        eta4 : array_like
            Fourth natural parameter, ``a - 1 + J d / 2``.  The batch shapes of
            the four parameters broadcast.

        Returns
        -------
        ndarray of bool
            True where the parameters are valid; it has the broadcast batch
            shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        eta3 = _as_float(eta3)
        eta4 = _as_float(eta4)
        d = eta1.shape[-1]
        full = np.broadcast_shapes(
            eta1.shape[:-1], eta3.shape, eta2.shape + (1,), eta4.shape + (1,)
        )
        batch, n_means = full[:-1], full[-1]
        eta1 = np.broadcast_to(eta1, full + (d,))
        beta = np.broadcast_to(-2.0 * eta3, full)
        ok_j = np.all(np.isfinite(eta1), axis=-1) & np.isfinite(beta) & (beta > 0)
        ok = np.all(ok_j, axis=-1) & np.isfinite(eta2) & np.isfinite(eta4)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            loc = np.where(ok_j[..., None], eta1, 0.0) / np.where(ok_j, beta, 1.0)[..., None]
            rate = -eta2 - 0.5 * np.sum(loc * eta1, axis=(-2, -1))
            shape = eta4 + 1.0 - 0.5 * n_means * d
            ok = ok & np.isfinite(rate) & (rate > 0) & (shape > 0)
        return np.array(np.broadcast_to(ok, batch))

    def validate(self):
        """Raise ``ValueError`` unless every parameter is finite and valid.

        Returns
        -------
        NormalGamma
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean is not finite, or a ``beta``, shape or rate is not
            finite and strictly positive.
        """
        if not np.all(np.isfinite(self.loc)):
            raise ValueError("NormalGamma: loc must be finite.")
        for name, value in (("beta", self.beta), ("shape", self.shape), ("rate", self.rate)):
            if not np.all(np.isfinite(value) & (value > 0)):
                raise ValueError(f"NormalGamma: {name} must be finite and strictly positive.")
        return self

    # -- expectations -------------------------------------------------------------
    def expected_stats(self):
        """Expected statistics ``(E[lambda mu_j], E[lambda], E[lambda ||mu_j||^2], E[log lambda])``.

        ``((a / b) m_j, a / b, d / beta_j + (a / b) ||m_j||^2,
        digamma(a) - log(b))``.

        Returns
        -------
        tuple of ndarray
            The four expectations, of shapes ``batch_shape + (J, d)``,
            ``batch_shape``, ``batch_shape + (J,)`` and ``batch_shape``.
        """
        g = self.precision()
        lam = g.mean()
        lam_m = lam[..., None, None] * self.loc
        quad = self.dim / self.beta + np.sum(lam_m * self.loc, axis=-1)
        return (
            self._cast(lam_m),
            self._cast(lam),
            self._cast(quad),
            self._cast(g.expected_log()),
        )

    def log_normalizer(self):
        """Log-normaliser ``gammaln(a) - a log(b) + sum_j (d log(2 pi) - d log(beta_j)) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return self._cast(self.precision().log_normalizer() + self._gauss_log_normalizer())

    def entropy(self):
        """Differential entropy of each factor.

        The Gamma entropy plus the expected entropies of the ``J``
        conditional Gaussians, ``sum_j (d (1 + log(2 pi)) - d log(beta_j)
        - d E[log lambda]) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        g = self.precision()
        d, n = self.dim, self.n_means
        ent = g.entropy() + self._gauss_log_normalizer() + 0.5 * d * n * (1.0 - g.expected_log())
        return self._cast(ent)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`NormalGamma`.

        The Gamma KL divergence of the precisions plus, for each mean,
        ``(d (r_j - 1 - log r_j) + beta_pj (a_q / b_q) ||m_pj - m_qj||^2) / 2``
        with ``r_j = beta_pj / beta_qj``.

        Parameters
        ----------
        other : NormalGamma
            Distribution ``p`` with the same ``d`` (and ``J``, or one that
            broadcasts); its batch shape must broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`NormalGamma`.
        """
        self._check_other(other)
        kl_g = self.precision().kl(other.precision())
        ratio = other.beta / self.beta
        diff = other.loc - self.loc
        lam = self.shape / self.rate
        kl_n = 0.5 * (
            self.dim * (ratio - 1.0 - np.log(ratio))
            + other.beta * lam[..., None] * np.sum(diff * diff, axis=-1)
        )
        return self._cast(np.maximum(kl_g + np.sum(kl_n, axis=-1), 0.0))

    def log_prob(self, mu, lam):
        """Joint log density at means ``mu`` and precisions ``lam``.

        ``-inf`` where ``lam <= 0``.

        Parameters
        ----------
        mu : array_like of shape (..., J, d)
            Means; ``mu.shape[:-2]`` is broadcast against :attr:`batch_shape`.
        lam : array_like
            Precisions; broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            ``log Gamma(lam) + sum_j log N(mu_j; m_j, (beta_j lam)^{-1} I)``,
            with the broadcast shape of ``mu.shape[:-2]``, ``lam`` and the
            batch shape.
        """
        mu = np.asarray(mu, dtype=self.dtype)
        lam = np.asarray(lam, dtype=self.dtype)
        d = self.dim
        pos = lam > 0
        lam_pos = np.where(pos, lam, 1.0)
        sq = np.sum((mu - self.loc) ** 2, axis=-1)
        lp_n = np.sum(
            0.5 * d * (np.log(self.beta) - _LOG_2PI) - 0.5 * self.beta * lam_pos[..., None] * sq,
            axis=-1,
        )
        lp = self.precision().log_prob(lam_pos) + lp_n + 0.5 * self.n_means * d * np.log(lam_pos)
        return self._cast(np.where(pos, lp, -np.inf))

    def sample(self, size=None, random_state=None):
        """Draw means and precisions.

        ``lambda`` is drawn from :meth:`precision`, then
        ``mu_j = m_j + z_j / sqrt(beta_j lambda)`` with ``z_j`` standard
        normal.

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
        mu : ndarray of shape size + batch_shape + (J, d)
            Means, with dtype :attr:`dtype`.
        lam : ndarray of shape size + batch_shape
            Positive precisions, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        lam = self.precision().sample(size, rng)
        z = rng.standard_normal(shape + (self.n_means, self.dim))
        sd = 1.0 / np.sqrt(self.beta * lam[..., None].astype(np.float64))
        mu = self.loc + z * sd[..., None]
        return mu.astype(self.dtype, copy=False), lam

    def mean(self):
        """Means ``(E[mu_j], E[lambda]) = (m_j, a / b)``.

        Returns
        -------
        loc : ndarray of shape batch_shape + (J, d)
            A copy of :attr:`loc`.
        precision : ndarray of shape batch_shape
            The mean ``a / b`` of the precision.
        """
        return self.loc.copy(), self.precision().mean()
