"""The Gamma covariance types of the Gaussian mixture: 'diag' and 'spherical'.

Their precisions are Gamma factors, so ``E[log lambda]`` is the Gamma's
``digamma(a) - log(b)`` (scikit-learn uses the ``d``-dimensional Wishart's
``E[log|Lambda|]``; the two agree for one feature).
"""

import numbers

import numpy as np
from scipy import special
from sklearn.utils import check_array

from ...expfam import NormalGamma
from .covariance import CovarianceType

__all__ = ["DiagonalCovariance", "SphericalCovariance"]


class _GammaCovariance(CovarianceType):
    """What 'diag' and 'spherical' share: Normal-Gamma factors, scaled-identity draws."""

    family = NormalGamma
    full_moments = False

    def empirical_covariance(self, moments):
        cov = self._from_variances(moments.covariance(ddof=1, diagonal=True))
        return cov, not np.all(np.atleast_1d(cov) > 0)

    def _from_variances(self, var):
        raise NotImplementedError

    def moments(self, q, K):
        a, b = q.shape, q.rate
        elog = special.digamma(a) - np.log(b)
        return self._moments(q, a, b, elog)

    def _moments(self, q, a, b, elog):
        raise NotImplementedError

    def point_estimates(self, m):
        prec = m["precision"]
        return {
            "degrees_of_freedom_": np.array(m["nu"]),
            "covariances_": 1.0 / prec,
            "precisions_": prec.copy(),
            "precisions_cholesky_": np.sqrt(prec),
        }

    def draw(self, random_state, means, covariances, counts):
        d = means.shape[1]
        scale = np.sqrt(covariances)
        scale = scale[:, None] * np.ones(d) if scale.ndim == 1 else scale
        return [
            mean + random_state.standard_normal(size=(c, d)) * s
            for mean, s, c in zip(means, scale, counts)
        ]


class DiagonalCovariance(_GammaCovariance):
    """'diag': one Normal-Gamma factor per component and feature.

    ``lambda_kj ~ Gamma(nu / 2, rate=cov_j / 2)`` a priori; the factors are
    batched (K, d) with one scalar mean each.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.gamma import DiagonalCovariance
    >>> diag = DiagonalCovariance()
    >>> q = diag.prior(np.zeros(2), 1.0, 3.0, np.array([1.0, 4.0]), K=3)
    >>> diag.moments(q, 3)["precision"]  # E[lambda] = a / b = nu / cov
    array([[3.  , 0.75],
           [3.  , 0.75],
           [3.  , 0.75]])
    """

    name = "diag"

    def _from_variances(self, var):
        return var

    def check_prior(self, covariance_prior, d):
        cov = check_array(covariance_prior, ensure_2d=False, dtype=np.float64)
        if cov.shape != (d,):
            raise ValueError(
                f"The parameter 'diag covariance_prior' should have the shape of "
                f"({d},), but got {cov.shape}"
            )
        if np.any(cov <= 0):
            raise ValueError("'diag covariance_prior' should be positive")
        return cov

    def prior(self, m0, beta0, nu0, covariance0, K):
        d = m0.shape[0]
        return NormalGamma(
            np.tile(m0[:, None, None], (K, 1, 1, 1)),
            np.full((K, d, 1), beta0),
            np.full((K, d), 0.5 * nu0),
            np.tile(0.5 * covariance0, (K, 1)),
        )

    def from_sklearn(self, means, beta, nu, covariances):
        d = means.shape[1]
        a = np.tile(0.5 * nu[:, None], (1, d))
        return NormalGamma(
            means[:, :, None, None], np.tile(beta[:, None, None], (1, d, 1)), a, covariances * a
        )

    def statistics(self, X, resp, nk, sx, reg_covar):
        K, d = resp.shape[1], X.shape[1]
        sxx = resp.T @ (X * X) + nk[:, None] * reg_covar
        return (
            sx[:, :, None, None],
            -0.5 * sxx,
            np.broadcast_to(-0.5 * nk[:, None, None], (K, d, 1)),
            np.broadcast_to(0.5 * nk[:, None], (K, d)),
        )

    def _moments(self, q, a, b, elog):
        means, beta = q.loc[:, :, 0, 0], q.beta[:, 0, 0]
        prec = a / b
        return {
            "means": means,
            "beta": beta,
            "nu": 2.0 * a[:, 0],
            "precision": prec,
            "logdet": elog.sum(axis=1),
            "trace": prec.sum(axis=1),
            "a": a,
            "b": b,
            "d": means.shape[1],
        }

    def quadratic(self, X, means, precision):
        pm = precision * means
        return np.maximum(
            (X * X) @ precision.T - 2.0 * (X @ pm.T) + np.einsum("ki,ki->k", pm, means), 0.0
        )

    def log_det_precision(self, m):
        return np.log(m["precision"]).sum(axis=1)

    def predictive_log_density(self, X, m):
        # Independent univariate t densities, one per feature.
        beta, a, b = m["beta"], m["a"], m["b"]
        shrink = beta / (1.0 + beta)
        dof = 2.0 * a  # (K, d)
        lam = shrink[:, None] * a / b
        K = beta.shape[0]
        out = np.empty((X.shape[0], K))
        const = np.sum(
            special.gammaln(0.5 * (dof + 1.0))
            - special.gammaln(0.5 * dof)
            - 0.5 * np.log(dof * np.pi)
            + 0.5 * np.log(lam),
            axis=1,
        )
        for k in range(K):
            diff = X - m["means"][k]
            out[:, k] = const[k] - np.sum(
                0.5 * (dof[k] + 1.0) * np.log1p(lam[k] * diff * diff / dof[k]), axis=1
            )
        return out


class SphericalCovariance(_GammaCovariance):
    """'spherical': one Gamma-distributed precision per component.

    ``lambda_k ~ Gamma(d nu / 2, rate=d cov / 2)`` a priori, and the
    posterior counts each of the ``d`` coordinates of a sample once (shape
    ``d * nu / 2``); ``degrees_of_freedom_`` is ``2 a / d``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.gamma import SphericalCovariance
    >>> spherical = SphericalCovariance()
    >>> q = spherical.prior(np.zeros(2), 1.0, 3.0, 1.5, K=2)
    >>> spherical.point_estimates(spherical.moments(q, 2))["covariances_"]  # cov / nu
    array([0.5, 0.5])
    """

    name = "spherical"

    def _from_variances(self, var):
        return float(var.mean())

    def check_prior(self, covariance_prior, d):
        if not isinstance(covariance_prior, numbers.Real):
            raise ValueError("The 'spherical covariance_prior' should be a positive float.")
        return float(covariance_prior)

    def prior(self, m0, beta0, nu0, covariance0, K):
        d = m0.shape[0]
        return NormalGamma(
            np.tile(m0, (K, 1, 1)),
            np.full((K, 1), beta0),
            np.full(K, 0.5 * d * nu0),
            np.full(K, 0.5 * d * covariance0),
        )

    def from_sklearn(self, means, beta, nu, covariances):
        a = 0.5 * means.shape[1] * nu
        return NormalGamma(means[:, None, :], beta[:, None], a, covariances * a)

    def statistics(self, X, resp, nk, sx, reg_covar):
        d = X.shape[1]
        sxx = resp.T @ np.einsum("ij,ij->i", X, X) + nk * d * reg_covar
        return (sx[:, None, :], -0.5 * sxx, -0.5 * nk[:, None], 0.5 * d * nk)

    def _moments(self, q, a, b, elog):
        means, beta = q.loc[:, 0, :], q.beta[:, 0]
        d = means.shape[1]
        prec = a / b
        return {
            "means": means,
            "beta": beta,
            "nu": 2.0 * a / d,
            "precision": prec,
            "logdet": d * elog,
            "trace": d * prec,
            "a": a,
            "b": b,
            "d": d,
        }

    def quadratic(self, X, means, precision):
        sq = (
            np.einsum("ni,ni->n", X, X)[:, None]
            - 2.0 * (X @ means.T)
            + np.einsum("ki,ki->k", means, means)
        )
        return precision * np.maximum(sq, 0.0)

    def log_det_precision(self, m):
        return m["d"] * np.log(m["precision"])

    def predictive_log_density(self, X, m):
        d, beta, a, b = X.shape[1], m["beta"], m["a"], m["b"]
        shrink = beta / (1.0 + beta)
        dof = 2.0 * a
        lam = shrink * a / b
        quad = self.quadratic(X, m["means"], lam)
        return (
            special.gammaln(0.5 * (dof + d))
            - special.gammaln(0.5 * dof)
            - 0.5 * d * np.log(dof * np.pi)
            + 0.5 * d * np.log(lam)
            - 0.5 * (dof + d) * np.log1p(quad / dof)
        )
