"""The correlated topic model's ELBO: each document's data term and the KL divergences."""

import numpy as np

from ...expfam import spd_logdet
from . import kernels

#: Seed of the common random numbers of the ELBO's Monte Carlo estimate.
_BOUND_SEED = 0x5EED


class _Bounds:
    """The ELBO's hooks of :class:`SVICorrelatedTopicModel` and each document's bound."""

    def _data_bounds(self, X, mean, scale):
        """The data part of each document's bound (Monte Carlo: common random numbers)."""
        if self.bound == "mean_field":
            return self._expectations(X, mean, scale).loglik_hat
        if self.expectation == "quadrature":
            eps, weights = self._quadrature_rule()
        else:
            eps = np.random.RandomState(_BOUND_SEED).standard_normal(
                (self.n_mc_samples, 1, self._dim)
            )
            weights = None
        if self.bound == "simple":
            return self._expectations(X, mean, scale, eps=eps, hessian=False).loglik_hat
        eta = mean + (
            eps * scale
            if scale.ndim == mean.ndim
            else np.einsum(
                "nij,snj->sni", scale, np.broadcast_to(eps, (eps.shape[0],) + mean.shape)
            )
        )
        loglik = kernels.log_likelihood(X, eta, self.topic_word_)
        return loglik.mean(axis=0) if weights is None else weights @ loglik

    def _document_bounds(self, X, mean, scale):
        """The bound of each document: its data part minus its KL divergence to the prior."""
        loglik = self._data_bounds(X, mean, scale)
        precision = np.linalg.inv(self._sigma)
        logdet = spd_logdet(self._sigma)
        cov = self._covariances(scale)
        kl = kernels.kl_gaussian(mean, cov, self._mu, precision, logdet)
        return loglik - kl

    def _local_bound(self, X, local, params):
        mean, scale = self._document_moments(params, X.ids)
        return float(np.sum(X.weighted(self._data_bounds(X.X, mean, scale))))

    def _global_bound(self, params):
        # Minus the documents' KL divergences to N(mu, Sigma), summed:
        # (tr(P (sum V_d + sum (m_d - mu)(m_d - mu)^T)) - n d + n log det Sigma
        # - sum log det V_d) / 2, with P = Sigma^-1.
        _, _, moments, cov_sum, logdet_sum = self._rows_summary("documents", params)
        n = moments.total
        if n == 0:
            return 0.0
        precision = np.linalg.inv(self._sigma)
        logdet = spd_logdet(self._sigma)
        delta = moments.mean - self._mu
        spread = moments.scatter + n * np.outer(delta, delta)
        trace_cov = (
            np.sum(np.diagonal(precision) * cov_sum)
            if cov_sum.ndim == 1
            else np.sum(precision * cov_sum)
        )
        kl = 0.5 * (
            trace_cov + np.sum(precision * spread) - n * self._dim + n * logdet - logdet_sum
        )
        return -float(kl)
