"""The Gaussian-Gamma family: a Gaussian vector whose precision matrix a Gamma variable scales.

``tau ~ Gamma(a, rate=b)`` and, given ``tau``, ``x ~ N(mu, (tau Lambda)^-1)``
(BayesPy's ``GaussianGamma``: a regression's weights and noise precision
together).  Sufficient statistics ``t(x, tau) = (tau x, tau x x^T, tau,
log tau)``, natural parameters

    ``eta = (Lambda mu, -Lambda / 2, -(b + mu^T Lambda mu / 2), a - 1 + d / 2)``

and log-normaliser ``A = gammaln(a) - a log b - log|Lambda| / 2 + d log(2 pi) / 2``.
"""

import numpy as np

from .gamma import Gamma
from .multivariate_gaussian import MultivariateGaussian

__all__ = ["gaussian_gamma_from_natural", "gaussian_gamma_valid_natural", "gaussian_gamma_sample"]

_LOG_2PI = np.log(2.0 * np.pi)


def _parameters(eta1, eta2, eta3, eta4):
    """``(mu, Sigma, log|Lambda|, a, b)`` of natural parameters (``Sigma = Lambda^-1``)."""
    eta1 = np.asarray(eta1, dtype=np.float64)
    d = eta1.shape[-1]
    mu, cov, logdet = MultivariateGaussian.moments_from_natural(eta1, eta2)
    a = np.asarray(eta4, dtype=np.float64) + 1.0 - 0.5 * d
    b = -np.asarray(eta3, dtype=np.float64) - 0.5 * np.einsum("...i,...i->...", mu, eta1)
    return mu, cov, logdet, a, b


def gaussian_gamma_from_natural(eta1, eta2, eta3, eta4):
    """Expected statistics and log-normaliser of Gaussian-Gammas of natural parameters ``eta``.

    Parameters
    ----------
    eta1 : array_like of shape (..., d)
        ``Lambda mu``.
    eta2 : array_like of shape (..., d, d)
        ``-Lambda / 2``, ``Lambda`` positive definite.
    eta3 : array_like
        ``-(b + mu^T Lambda mu / 2)``.
    eta4 : array_like
        ``a - 1 + d / 2``.  The batch shapes broadcast.

    Returns
    -------
    stats : tuple of ndarray
        ``(E[tau x], E[tau x x^T], E[tau], E[log tau])``, of shapes
        ``batch + (d,)``, ``batch + (d, d)``, ``batch`` and ``batch``.
    log_normalizer : ndarray of shape batch
        ``A = gammaln(a) - a log b - log|Lambda| / 2 + d log(2 pi) / 2``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.gaussian_gamma import gaussian_gamma_from_natural
    >>> Lam, mu, a, b = np.eye(2), np.array([1.0, 2.0]), 3.0, 2.0
    >>> stats, A = gaussian_gamma_from_natural(Lam @ mu, -Lam / 2, -(b + mu @ Lam @ mu / 2), a)
    >>> stats[0], float(stats[2])          # E[tau x] = (a / b) mu, E[tau] = a / b
    (array([1.5, 3. ]), 1.5)
    """
    mu, cov, logdet, a, b = _parameters(eta1, eta2, eta3, eta4)
    gamma = Gamma(a, b)
    tau, log_tau = gamma.expected_stats()
    d = mu.shape[-1]
    stats = (
        tau[..., None] * mu,
        cov + tau[..., None, None] * (mu[..., :, None] * mu[..., None, :]),
        tau,
        log_tau,
    )
    A = gamma.log_normalizer() - 0.5 * logdet + 0.5 * d * _LOG_2PI
    return stats, A


def gaussian_gamma_valid_natural(eta1, eta2, eta3, eta4):
    """True where the natural parameters define a Gaussian-Gamma (``Lambda`` PD, ``a, b > 0``).

    Parameters
    ----------
    eta1, eta2, eta3, eta4 : array_like
        As in :func:`gaussian_gamma_from_natural`.

    Returns
    -------
    ndarray of bool
        One per batch element.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.gaussian_gamma import gaussian_gamma_valid_natural
    >>> bool(gaussian_gamma_valid_natural(np.zeros(2), -np.eye(2) / 2, -1.0, 1.0))
    True
    >>> bool(gaussian_gamma_valid_natural(np.zeros(2), -np.eye(2) / 2, 1.0, 1.0))
    False
    """
    ok = MultivariateGaussian.valid_natural(eta1, eta2)
    finite = np.isfinite(eta3) & np.isfinite(eta4)
    ok = np.asarray(ok & finite)
    if not np.any(ok):
        return ok
    safe2 = np.where(ok[..., None, None], eta2, -0.5 * np.eye(np.shape(eta1)[-1]))
    _, _, _, a, b = _parameters(eta1, safe2, np.where(ok, eta3, -1.0), np.where(ok, eta4, 1.0))
    return ok & (a > 0) & (b > 0)


def gaussian_gamma_sample(eta1, eta2, eta3, eta4, random_state=None):
    """One draw ``(x, tau)`` per batch element: ``tau`` first, then ``x`` given it.

    Parameters
    ----------
    eta1, eta2, eta3, eta4 : array_like
        As in :func:`gaussian_gamma_from_natural`.
    random_state : None, int or RandomState, default=None
        The randomness (None: numpy's global state).

    Returns
    -------
    x : ndarray of shape batch + (d,)
    tau : ndarray of shape batch

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.gaussian_gamma import gaussian_gamma_sample
    >>> x, tau = gaussian_gamma_sample(np.zeros((3, 2)), -np.eye(2) / 2, -1.0, 1.0, 0)
    >>> x.shape, tau.shape
    ((3, 2), (3,))
    """
    from .base import _check_random_state

    rng = _check_random_state(random_state)
    mu, cov, _, a, b = _parameters(eta1, eta2, eta3, eta4)
    batch = np.broadcast_shapes(mu.shape[:-1], np.shape(a), np.shape(b))
    tau = np.broadcast_to(Gamma(a, b).sample(random_state=rng), batch)
    Lam = np.linalg.inv(cov)
    x = MultivariateGaussian(
        np.broadcast_to(mu, batch + mu.shape[-1:]), tau[..., None, None] * Lam
    ).sample(random_state=rng)
    return x, np.array(tau)
