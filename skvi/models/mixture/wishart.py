"""The Wishart covariance types of the Gaussian mixture: 'full' and 'tied'."""

import itertools

import numpy as np
from scipy import linalg, special
from sklearn.utils import check_array

from ...expfam import NormalWishart, cholesky_factor, spd_logdet, symmetric_eigenvalues
from .covariance import CovarianceType

__all__ = ["FullCovariance", "TiedCovariance"]


class _WishartCovariance(CovarianceType):
    """What 'full' and 'tied' share: Wishart precisions, Student-t predictives."""

    family = NormalWishart
    full_moments = True

    def empirical_covariance(self, moments):
        cov = moments.covariance(ddof=1)
        cov = 0.5 * (cov + cov.T)
        eig = symmetric_eigenvalues(cov)
        d = cov.shape[0]
        return cov, not eig[0] > d * np.finfo(float).eps * max(eig[-1], 0.0)

    def add_to_diagonal(self, covariance, value):
        return covariance + value * np.eye(covariance.shape[0])

    def check_prior(self, covariance_prior, d):
        cov = check_array(covariance_prior, ensure_2d=False, dtype=np.float64)
        if cov.shape != (d, d):
            raise ValueError(
                f"The parameter '{self.name} covariance_prior' should have the shape of "
                f"({d}, {d}), but got {cov.shape}"
            )
        if not (np.allclose(cov, cov.T) and np.all(symmetric_eigenvalues(cov) > 0)):
            raise ValueError(
                f"'{self.name} covariance_prior' should be symmetric, positive-definite"
            )
        return cov

    def moments(self, q, K):
        prec = q.df[..., None, None] * q.scale
        means, beta, logdet, trace = self._per_component(
            q, prec, q.precision().expected_log_det(), K
        )
        return {
            "means": means,
            "beta": beta,
            "nu": q.df,
            "precision": prec,
            "logdet": logdet,
            "trace": trace,
            "d": q.dim,
        }

    def _per_component(self, q, prec, logdet, K):
        """``means``, ``beta``, ``logdet`` and ``trace``, one per component."""
        raise NotImplementedError

    def predictive_log_density(self, X, m):
        d, beta = X.shape[1], m["beta"]
        shrink = beta / (1.0 + beta)
        dof = m["nu"] - d + 1.0  # per component, or shared
        dof = np.broadcast_to(dof, beta.shape)
        # Lambda_t = dof * beta / (1 + beta) * W = (dof / nu) shrink E[Lambda]
        c = dof / np.broadcast_to(m["nu"], beta.shape) * shrink
        quad = c * self.quadratic(X, m["means"], m["precision"])
        half_logdet = 0.5 * (self.log_det_precision(m) + d * np.log(c))
        return (
            special.gammaln(0.5 * (dof + d))
            - special.gammaln(0.5 * dof)
            - 0.5 * d * np.log(dof * np.pi)
            + half_logdet
            - 0.5 * (dof + d) * np.log1p(quad / dof)
        )

    def point_estimates(self, m):
        prec = m["precision"]
        covariances = np.linalg.inv(prec)
        cov_chol = cholesky_factor(covariances)
        eye = np.eye(prec.shape[-1])
        return {
            "degrees_of_freedom_": self._degrees_of_freedom(m["nu"]),
            "covariances_": covariances,
            "precisions_": prec.copy(),
            "precisions_cholesky_": self._precisions_cholesky(cov_chol, eye),
        }

    def _degrees_of_freedom(self, nu):
        raise NotImplementedError

    def _precisions_cholesky(self, cov_chol, eye):
        raise NotImplementedError

    def draw(self, random_state, means, covariances, counts):
        return [
            random_state.multivariate_normal(mean, cov, int(c))
            for mean, cov, c in zip(means, self._per_component_covariances(covariances), counts)
        ]

    def _per_component_covariances(self, covariances):
        raise NotImplementedError


class FullCovariance(_WishartCovariance):
    """'full': a Normal-Wishart factor per component, scikit-learn's posterior.

    The factors are batched with one mean each (``J = 1``): natural
    parameters of shapes (K, 1, d), (K, d, d), (K, 1) and (K,).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.wishart import FullCovariance
    >>> full = FullCovariance()
    >>> q = full.prior(np.zeros(2), 1.0, 3.0, np.eye(2), K=4)
    >>> full.moments(q, 4)["precision"].shape  # E[Lambda_k] = nu W
    (4, 2, 2)
    """

    name = "full"

    def prior(self, m0, beta0, nu0, covariance0, K):
        return NormalWishart(
            np.tile(m0, (K, 1, 1)),
            np.full((K, 1), beta0),
            np.full(K, nu0),
            np.tile(np.linalg.inv(covariance0), (K, 1, 1)),
        )

    def from_sklearn(self, means, beta, nu, covariances):
        return NormalWishart(
            means[:, None, :], beta[:, None], nu, np.linalg.inv(covariances * nu[:, None, None])
        )

    def statistics(self, X, resp, nk, sx, reg_covar):
        K, d = resp.shape[1], X.shape[1]
        weighted = (resp[:, :, None] * X[:, None, :]).reshape(X.shape[0], K * d)
        sxx = (weighted.T @ X).reshape(K, d, d)
        sxx += nk[:, None, None] * reg_covar * np.eye(d)
        return (sx[:, None, :], -0.5 * sxx, -0.5 * nk[:, None], 0.5 * nk)

    def _per_component(self, q, prec, logdet, K):
        return q.loc[:, 0, :], q.beta[:, 0], logdet, np.trace(prec, axis1=1, axis2=2)

    def quadratic(self, X, means, precision):
        K, d = means.shape
        chol = cholesky_factor(precision)  # (K, d, d)
        y = (X @ chol.transpose(1, 0, 2).reshape(d, K * d)).reshape(-1, K, d)
        y -= np.einsum("ki,kij->kj", means, chol)
        return np.einsum("nkj,nkj->nk", y, y)

    def log_det_precision(self, m):
        return spd_logdet(m["precision"])

    def _degrees_of_freedom(self, nu):
        return np.array(nu)

    def _precisions_cholesky(self, cov_chol, eye):
        return np.stack([linalg.solve_triangular(c, eye, lower=True).T for c in cov_chol])

    def _per_component_covariances(self, covariances):
        return covariances


class TiedCovariance(_WishartCovariance):
    """'tied': one Wishart precision shared by the components.

    One Normal-Wishart factor with ``J = K`` means, whose precision has
    ``nu0 + N`` degrees of freedom: the exact coordinate-ascent update of
    the model (scikit-learn's tied update uses ``nu0 + N / K`` and divides
    the data's scatter by ``K``; the two agree for one component).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.wishart import TiedCovariance
    >>> tied = TiedCovariance()
    >>> q = tied.prior(np.zeros(2), 1.0, 3.0, np.eye(2), K=4)
    >>> q.loc.shape, float(q.df)
    ((4, 2), 3.0)
    """

    name = "tied"

    def prior(self, m0, beta0, nu0, covariance0, K):
        return NormalWishart(
            np.tile(m0, (K, 1)), np.full(K, beta0), nu0, np.linalg.inv(covariance0)
        )

    def from_sklearn(self, means, beta, nu, covariances):
        return NormalWishart(means, beta, nu, np.linalg.inv(covariances * nu))

    def statistics(self, X, resp, nk, sx, reg_covar):
        d = X.shape[1]
        n = nk.sum()
        sxx = X.T @ (X * resp.sum(axis=1, keepdims=True)) + n * reg_covar * np.eye(d)
        return (sx, -0.5 * sxx, -0.5 * nk, np.asarray(0.5 * n))

    def _per_component(self, q, prec, logdet, K):
        return q.loc, q.beta, np.full(K, logdet), np.full(K, np.trace(prec))

    def quadratic(self, X, means, precision):
        chol = cholesky_factor(precision)
        y, my = X @ chol, means @ chol
        return np.maximum(
            np.einsum("ni,ni->n", y, y)[:, None] - 2.0 * (y @ my.T) + np.einsum("ki,ki->k", my, my),
            0.0,
        )

    def log_det_precision(self, m):
        return np.full(m["means"].shape[0], spd_logdet(m["precision"]))

    def _degrees_of_freedom(self, nu):
        return float(nu)

    def _precisions_cholesky(self, cov_chol, eye):
        return linalg.solve_triangular(cov_chol, eye, lower=True).T

    def _per_component_covariances(self, covariances):
        return itertools.repeat(covariances)  # as many as the means zipped with it
