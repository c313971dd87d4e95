"""Bayesian Gaussian mixture: the estimator and one strategy per covariance type.

- :mod:`~skvi.models.mixture.estimator`: :class:`~skvi.SVIBayesianGaussianMixture`,
  its parameters, public methods and the engine's hooks;
- :mod:`~skvi.models.mixture.covariance`: what a covariance type supplies
  (priors, statistics, moments, densities, fitted attributes), chosen once
  from ``covariance_type``;
- :mod:`~skvi.models.mixture.wishart`: 'full' and 'tied' (Normal-Wishart factors);
- :mod:`~skvi.models.mixture.gamma`: 'diag' and 'spherical' (Normal-Gamma factors);
- :mod:`~skvi.models.mixture.priors`: the priors' values, checked or from the data;
- :mod:`~skvi.models.mixture.start`: the k-means start and its subsample.
"""

from .estimator import SVIBayesianGaussianMixture

__all__ = ["SVIBayesianGaussianMixture"]
