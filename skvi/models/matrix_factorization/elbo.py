"""The evidence lower bound of matrix factorization, and the probe loss of step safety.

The ELBO is the data part of the likelihood strategy (its ``local_bound``:
the expected log-likelihood of the ratings) plus the global part here: for
each side, the expected log prior of its fitted nodes and their entropy
(:func:`nodes_bound`), minus the KL divergences of the global mean, the
noise precision and the prior precisions from their priors.
"""

import numpy as np

from ...expfam import UnivariateGaussian
from .nodes import SIDES

__all__ = ["BoundHooks", "nodes_bound"]

_LOG_2PI = np.log(2.0 * np.pi)


def nodes_bound(n, d, log_det, quad, sum_logdet):
    """``E[log N(w | 0, Lambda^-1)] + H[q(w)]`` summed over ``n`` Gaussian nodes.

    Parameters
    ----------
    n : float
        The number of nodes.
    d : int
        Their dimension.
    log_det : float
        ``E[log |Lambda|]`` of the prior precision.
    quad : float
        ``sum_i E[w_i^T Lambda w_i]``: the nodes' second moments against ``E[Lambda]``.
    sum_logdet : float
        The sum of the log-determinants of the nodes' posterior precisions.

    Returns
    -------
    bound : float

    Examples
    --------
    >>> from skvi.models.matrix_factorization.elbo import nodes_bound
    >>> # q equal to the prior N(0, 1): minus their KL divergence, zero
    >>> round(float(nodes_bound(1.0, 1, 0.0, 1.0, 0.0)), 12)
    0.0
    """
    e_log_p = 0.5 * n * (log_det - d * _LOG_2PI) - 0.5 * quad
    entropy = 0.5 * n * d * (1.0 + _LOG_2PI) - 0.5 * sum_logdet
    return e_log_p + entropy


class BoundHooks:
    """The engine's hooks of :class:`~skvi.SVIMatrixFactorization`'s ELBO and probe loss.

    A part of the estimator.

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.elbo import BoundHooks
    >>> issubclass(SVIMatrixFactorization, BoundHooks)
    True
    """

    def _local_bound(self, data, prep, params):
        if prep is None:  # the data part of the ELBO of rows, their indexing kept
            prep = self._prep_of(data)
        return self._strategy.local_bound(self, prep, params)

    def _global_bound(self, params):
        total = 0.0
        for name in ("users", "items"):
            n, second, sum_logdet = self._fitted_sums(name, params)
            d = self._dim
            if self.factor_precision is not None:
                alpha = np.full(d, float(self.factor_precision))
                log_det = float(np.sum(np.log(alpha)))
                quad = np.diagonal(second) @ alpha
            elif self.factor_prior == "wishart":
                alpha, log_det = params[SIDES[name].precision].distribution.expected_stats()
                quad = np.sum(second * alpha)
            else:
                q = params[SIDES[name].precision].distribution
                alpha = q.mean()
                log_det = np.sum(q.expected_log())
                quad = np.diagonal(second) @ alpha
            total += nodes_bound(n, d, log_det, quad, sum_logdet)
        prior = self._prior_natural()
        total -= float(
            params["mean"].distribution.kl(UnivariateGaussian.from_natural(*prior["mean"]))
        )
        for key in ("noise", "user_precision", "item_precision"):
            if key in params:
                family = self._factor_families[key]
                kl = params[key].distribution.kl(family.from_natural(*prior[key]))
                total -= float(np.sum(kl))
        return float(total)

    def _probe_loss(self, probe, params):
        """Expected loss per probe rating, for the engine's step safety.

        Paquet's divergence (Fig. 2) keeps every factor a valid Gaussian
        while the means grow without bound, so validity alone cannot catch
        it; the engine rejects a step that more than doubles this loss.
        Gaussian: the expected squared residual; otherwise
        ``-E[log p(r | f)]`` under the Gaussian approximation of ``f``.
        """
        return self._strategy.probe_loss(self, self._prep_of(probe), params)
