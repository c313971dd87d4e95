"""The batched Normal-Wishart distribution: Gaussian means sharing a precision."""

import numpy as np

from ._shared_precision import _SharedPrecisionMeans
from .base import (
    _LOG_2PI,
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _float_dtype,
    _pd_mask,
    _size_tuple,
    _symmetric_mask,
)
from .wishart import WishartByScale


def _weighted_outer(u, v):
    """``sum_j u_j v_j^T`` over the second-to-last axis, symmetrised."""
    s = np.einsum("...ji,...jk->...ik", u, v)
    return 0.5 * (s + np.swapaxes(s, -1, -2))


class NormalWishart(_SharedPrecisionMeans, ExponentialFamily):
    """Batch of Normal-Wishart distributions: ``J`` means sharing one precision.

    The ``d x d`` precision matrix follows ``Lambda ~ Wishart(df, W)`` (the
    convention of :class:`WishartByScale`, ``E[Lambda] = df W``) and, given
    ``Lambda``, the ``J`` means are independent with
    ``mu_j ~ N(m_j, (beta_j Lambda)^{-1})``.  Sufficient statistics

        ``t(mu, Lambda) = (Lambda mu_j, Lambda, mu_j^T Lambda mu_j, log|Lambda|)``,

    of shapes ``(J, d)``, ``(d, d)``, ``(J,)`` and ``()``, natural parameters

        ``eta = (beta_j m_j, -(W^{-1} + sum_j beta_j m_j m_j^T) / 2,
        -beta_j / 2, (df - d - 1 + J) / 2)``

    and log-normaliser ``A = A_Wishart(df, W) + sum_j (d log(2 pi) / 2
    - d log(beta_j) / 2)``, with ``A_Wishart`` the log-normaliser of
    :class:`WishartByScale`.  The expected statistics are ``(df W m_j, df W,
    d / beta_j + df m_j^T W m_j, E[log|Lambda|])``.

    With ``J = 1`` and a batch of ``K`` factors it is ``K`` independent
    Normal-Wishart components (a Gaussian mixture's mean and precision per
    component); with ``J = K`` and an empty batch it is ``K`` means sharing
    one precision.  Marginally, each ``mu_j`` is a multivariate Student t with
    ``df - d + 1`` degrees of freedom, location ``m_j`` and shape matrix
    ``W^{-1} / (beta_j (df - d + 1))``.  With ``d = 1`` it is
    :class:`NormalGamma` with shape ``df / 2`` and rate ``1 / (2 W)``.

    Parameters
    ----------
    loc : array_like of shape (..., J, d)
        Means ``m_j`` of the ``J`` Gaussians.
    beta : array_like of shape (..., J)
        Positive scalings ``beta_j`` of the precision of each mean; its last
        axis broadcasts against the ``J`` axis of ``loc``.
    df : array_like
        Degrees of freedom of the Wishart, greater than ``d - 1``.
    scale : array_like of shape (..., d, d)
        Symmetric positive definite Wishart scale matrices ``W``.  The batch
        shapes ``loc.shape[:-2]``, ``beta.shape[:-1]``, ``df.shape`` and
        ``scale.shape[:-2]`` broadcast.

    Attributes
    ----------
    loc : ndarray of shape batch_shape + (J, d)
    beta : ndarray of shape batch_shape + (J,)
    df : ndarray of shape batch_shape
    scale : ndarray of shape batch_shape + (d, d)

    Examples
    --------
    >>> q = NormalWishart([[0.0, 1.0]], [2.0], 5.0, [[1.0, 0.2], [0.2, 0.5]])
    >>> q.batch_shape, q.n_means, q.dim
    ((), 1, 2)
    >>> loc, lam = q.mean()
    >>> print(np.round(lam, 4))
    [[5.  1. ]
     [1.  2.5]]
    >>> print(np.round(q.expected_stats()[2], 4))  # E[mu^T Lambda mu]
    [3.5]
    >>> print(round(float(q.entropy()), 4))
    6.9226
    >>> p = NormalWishart(np.zeros((1, 2)), [1.0], 3.0, np.eye(2))
    >>> print(round(float(q.kl(p)), 4))
    2.0784
    >>> mu, lam = q.sample(4, random_state=0)
    >>> mu.shape, lam.shape
    ((4, 1, 2), (4, 2, 2))

    Three means sharing one precision:

    >>> s = NormalWishart([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [1.0, 2.0, 4.0],
    ...                   4.0, np.eye(2))
    >>> s.batch_shape, s.n_means
    ((), 3)
    >>> print(np.round(s.expected_stats()[2], 4))  # d / beta_j + df m_j^T W m_j
    [2.  5.  4.5]
    """

    _event_ndims = (2, 2, 1, 0)

    def __init__(self, loc, beta, df, scale):
        dtype = _float_dtype(loc, beta, df, scale)
        loc = np.asarray(loc, dtype=dtype)
        beta = np.asarray(beta, dtype=dtype)
        df = np.asarray(df, dtype=dtype)
        scale = np.asarray(scale, dtype=dtype)
        if scale.ndim < 2 or scale.shape[-1] != scale.shape[-2]:
            raise ValueError(
                f"NormalWishart: scale must have shape (..., d, d); got {scale.shape}."
            )
        d = scale.shape[-1]
        if loc.ndim < 2 or loc.shape[-1] != d:
            raise ValueError(
                "NormalWishart: loc must have shape (..., J, d) with "
                f"d = scale.shape[-1] = {d}; got {loc.shape}."
            )
        full = np.broadcast_shapes(
            loc.shape[:-1], beta.shape, df.shape + (1,), scale.shape[:-2] + (1,)
        )
        batch = full[:-1]
        self.loc = np.array(np.broadcast_to(loc, full + (d,)))
        self.beta = np.array(np.broadcast_to(beta, full))
        self.df = np.array(np.broadcast_to(df, batch))
        self.scale = np.array(np.broadcast_to(scale, batch + (d, d)))

    # -- properties -----------------------------------------------------------

    def precision(self):
        """Marginal distribution of the shared precision, ``Wishart(df, W)``.

        Returns
        -------
        WishartByScale
            The Wishart distribution of ``Lambda``, with the batch shape of
            ``self``.
        """
        return WishartByScale(self.df, self.scale)

    @property
    def natural(self):
        """Natural parameters.

        ``(beta_j m_j, -(W^{-1} + sum_j beta_j m_j m_j^T) / 2, -beta_j / 2,
        (df - d - 1 + J) / 2)``.
        """
        inv = np.linalg.inv(self.scale)
        inv = 0.5 * (inv + np.swapaxes(inv, -1, -2))
        bm = self.beta[..., None] * self.loc
        eta2 = -0.5 * (inv + _weighted_outer(bm, self.loc))
        # astype: with NumPy < 2 a 0-d float32 df and Python numbers give float64.
        eta4 = (0.5 * (self.df - self.dim - 1.0 + self.n_means)).astype(self.dtype, copy=False)
        return (bm, eta2, -0.5 * self.beta, eta4)

    # -- constructors / validity ------------------------------------------------
    @classmethod
    def from_natural(cls, eta1, eta2, eta3, eta4):
        """Build from natural parameters.

        The parameters are ``(beta_j m_j, -(W^{-1} + sum_j beta_j m_j m_j^T) / 2,
        -beta_j / 2, (df - d - 1 + J) / 2)``; ``eta2`` is symmetrised before
        use.

        Parameters
        ----------
        eta1 : array_like of shape (..., J, d)
            First natural parameter, ``beta_j m_j``.
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-(W^{-1} + sum_j beta_j m_j m_j^T) / 2``.
        eta3 : array_like of shape (..., J)
            Third natural parameter, ``-beta_j / 2``; must be negative.
        eta4 : array_like
            Fourth natural parameter, ``(df - d - 1 + J) / 2``, greater than
            ``(J - 2) / 2``.  The batch shapes of the four parameters
            broadcast.

        Returns
        -------
        NormalWishart
            The Normal-Wishart distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2, eta3, eta4)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        eta3 = np.asarray(eta3, dtype=dtype)
        eta4 = np.asarray(eta4, dtype=dtype)
        d = eta2.shape[-1]
        full = np.broadcast_shapes(eta1.shape[:-1], eta3.shape)
        n_means = full[-1]
        beta = np.broadcast_to(-2.0 * eta3, full)
        eta1 = np.broadcast_to(eta1, full + (d,))
        loc = eta1 / beta[..., None]
        winv = -(eta2 + np.swapaxes(eta2, -1, -2)) - _weighted_outer(loc, eta1)
        scale = np.linalg.inv(winv)
        scale = 0.5 * (scale + np.swapaxes(scale, -1, -2))
        df = np.asarray(2.0 * eta4 + d + 1.0 - n_means, dtype=dtype)  # float32 kept on NumPy < 2
        return cls(loc, beta, df, scale)

    @staticmethod
    def valid_natural(eta1, eta2, eta3, eta4):
        """True where ``(eta1, eta2, eta3, eta4)`` define a Normal-Wishart.

        Valid means: all entries finite, ``beta_j = -2 eta3_j > 0``,
        ``eta2`` symmetric, ``W^{-1} = -2 eta2 - sum_j beta_j m_j m_j^T``
        positive definite and ``df > d - 1`` (``eta4 > (J - 2) / 2``).

        Parameters
        ----------
        eta1 : array_like of shape (..., J, d)
            First natural parameter, ``beta_j m_j``.
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-(W^{-1} + sum_j beta_j m_j m_j^T) / 2``.
        eta3 : array_like of shape (..., J)
            Third natural parameter, ``-beta_j / 2``.
        eta4 : array_like
            Fourth natural parameter, ``(df - d - 1 + J) / 2``.  The batch
            shapes of the four parameters broadcast.

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
        d = eta2.shape[-1]
        full = np.broadcast_shapes(
            eta1.shape[:-1], eta3.shape, eta2.shape[:-2] + (1,), eta4.shape + (1,)
        )
        batch, n_means = full[:-1], full[-1]
        eta1 = np.broadcast_to(eta1, full + (d,))
        beta = np.broadcast_to(-2.0 * eta3, full)
        ok_j = np.all(np.isfinite(eta1), axis=-1) & np.isfinite(beta) & (beta > 0)
        ok = np.all(ok_j, axis=-1)
        ok = ok & np.all(np.isfinite(eta2), axis=(-2, -1)) & _symmetric_mask(eta2)
        ok = ok & np.isfinite(eta4) & (eta4 > 0.5 * (n_means - 2))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            loc = np.where(ok_j[..., None], eta1, 0.0) / np.where(ok_j, beta, 1.0)[..., None]
            # the very matrix from_natural inverts
            winv = -(eta2 + np.swapaxes(eta2, -1, -2)) - _weighted_outer(loc, eta1)
            ok = ok & np.all(np.isfinite(winv), axis=(-2, -1))
        return _pd_mask(winv, np.broadcast_to(ok, batch))

    def validate(self):
        """Raise ``ValueError`` unless every parameter is finite and valid.

        Returns
        -------
        NormalWishart
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean is not finite, a ``beta`` is not finite and positive, a
            degree of freedom is not finite or not above ``d - 1``, or a
            scale matrix is not finite, symmetric and positive definite.
        """
        name = "NormalWishart"
        if not np.all(np.isfinite(self.loc)):
            raise ValueError(f"{name}: loc must be finite.")
        if not np.all(np.isfinite(self.beta) & (self.beta > 0)):
            raise ValueError(f"{name}: beta must be finite and strictly positive.")
        if not np.all(np.isfinite(self.df) & (self.df > self.dim - 1)):
            raise ValueError(f"{name}: df must be finite and greater than d - 1 = {self.dim - 1}.")
        if not np.all(np.isfinite(self.scale)):
            raise ValueError(f"{name}: scale must be finite.")
        ok = _symmetric_mask(self.scale)
        if not np.all(ok) or not np.all(_pd_mask(self.scale, ok)):
            raise ValueError(f"{name}: scale must be symmetric positive definite.")
        return self

    # -- expectations -------------------------------------------------------------
    def expected_stats(self):
        """Expected statistics ``(E[Lambda mu_j], E[Lambda], E[mu_j^T Lambda mu_j], E[log|Lambda|])``.

        ``(df W m_j, df W, d / beta_j + df m_j^T W m_j, sum_i digamma((df - i) / 2)
        + d log 2 + log|W|)``.

        Returns
        -------
        tuple of ndarray
            The four expectations, of shapes ``batch_shape + (J, d)``,
            ``batch_shape + (d, d)``, ``batch_shape + (J,)`` and
            ``batch_shape``.
        """
        w = self.precision()
        lam = w.mean()
        lam_m = np.einsum("...ik,...jk->...ji", lam, self.loc)
        quad = self.dim / self.beta + np.sum(lam_m * self.loc, axis=-1)
        return (
            self._cast(lam_m),
            self._cast(lam),
            self._cast(quad),
            self._cast(w.expected_log_det()),
        )

    def log_normalizer(self):
        """Log-normaliser ``A_Wishart(df, W) + sum_j (d log(2 pi) - d log(beta_j)) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return self._cast(self.precision().log_normalizer() + self._gauss_log_normalizer())

    def entropy(self):
        """Differential entropy of each factor.

        ``A_Wishart + df d / 2 - (df - d - 1 + J) E[log|Lambda|] / 2
        + sum_j (d (1 + log(2 pi)) - d log(beta_j)) / 2``: the entropy of the
        Wishart plus the expected entropies of the ``J`` conditional
        Gaussians.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        w = self.precision()
        d, df = self.dim, self.df
        ent = (
            w.log_normalizer()
            + 0.5 * df * d
            - 0.5 * (df - d - 1.0 + self.n_means) * w.expected_log_det()
            + self._gauss_log_normalizer()
            + 0.5 * d * self.n_means
        )
        return self._cast(ent)

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`NormalWishart`.

        The Wishart KL divergence of the precisions plus, for each mean,
        ``(d (r_j - 1 - log r_j) + beta_pj df_q (m_pj - m_qj)^T W_q
        (m_pj - m_qj)) / 2`` with ``r_j = beta_pj / beta_qj``.

        Parameters
        ----------
        other : NormalWishart
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
            If ``other`` is not a :class:`NormalWishart`.
        """
        self._check_other(other)
        wq, wp = self.precision(), other.precision()
        d, df_q = self.dim, self.df
        # Wishart part: <eta_q - eta_p, E_q[t]> - A_q + A_p with
        # tr((W_p^{-1} - W_q^{-1}) df_q W_q) = df_q (tr(W_p^{-1} W_q) - d).
        trace = np.trace(np.linalg.solve(other.scale, self.scale), axis1=-2, axis2=-1)
        kl_w = (
            0.5 * df_q * (trace - d)
            + 0.5 * (df_q - other.df) * wq.expected_log_det()
            - wq.log_normalizer()
            + wp.log_normalizer()
        )
        ratio = other.beta / self.beta
        diff = other.loc - self.loc
        quad = np.einsum("...ji,...ik,...jk->...j", diff, self.scale, diff)
        kl_g = 0.5 * (d * (ratio - 1.0 - np.log(ratio)) + other.beta * df_q[..., None] * quad)
        return self._cast(np.maximum(kl_w + np.sum(kl_g, axis=-1), 0.0))

    def log_prob(self, mu, lam):
        """Joint log density at means ``mu`` and precision matrices ``lam``.

        Parameters
        ----------
        mu : array_like of shape (..., J, d)
            Means; ``mu.shape[:-2]`` is broadcast against :attr:`batch_shape`.
        lam : array_like of shape (..., d, d)
            Symmetric positive definite precision matrices; ``lam.shape[:-2]``
            is broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            ``log Wishart(lam) + sum_j log N(mu_j; m_j, (beta_j lam)^{-1})``,
            with the broadcast shape of ``mu.shape[:-2]``, ``lam.shape[:-2]``
            and the batch shape.
        """
        mu = np.asarray(mu, dtype=self.dtype)
        lam = np.asarray(lam, dtype=self.dtype)
        d = self.dim
        lp_w = self.precision().log_prob(lam)
        _, logdet = np.linalg.slogdet(lam)
        diff = mu - self.loc
        quad = np.einsum("...ji,...ik,...jk->...j", diff, lam, diff)
        lp_g = np.sum(0.5 * d * (np.log(self.beta) - _LOG_2PI) - 0.5 * self.beta * quad, axis=-1)
        return self._cast(lp_w + lp_g + 0.5 * self.n_means * logdet)

    def sample(self, size=None, random_state=None):
        """Draw means and precisions.

        ``Lambda`` is drawn from :meth:`precision` (Bartlett's
        decomposition), then ``mu_j = m_j + L^{-T} z_j / sqrt(beta_j)`` with
        ``Lambda = L L^T`` and ``z_j`` standard normal.

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
        lam : ndarray of shape size + batch_shape + (d, d)
            Symmetric positive definite precision matrices, with dtype
            :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        lam = self.precision().sample(size, rng)
        chol_inv = np.linalg.inv(np.linalg.cholesky(lam.astype(np.float64)))
        z = rng.standard_normal(shape + (self.n_means, self.dim))
        x = (z[..., None, :] @ chol_inv[..., None, :, :])[..., 0, :]
        mu = self.loc + x / np.sqrt(self.beta)[..., None]
        return mu.astype(self.dtype, copy=False), lam

    def mean(self):
        """Means ``(E[mu_j], E[Lambda]) = (m_j, df W)``.

        Returns
        -------
        loc : ndarray of shape batch_shape + (J, d)
            A copy of :attr:`loc`.
        precision : ndarray of shape batch_shape + (d, d)
            The mean ``df W`` of the precision.
        """
        return self.loc.copy(), self.precision().mean()
