"""Batched exponential-family factors.

This module provides the vectorised exponential-family distributions used by
the SVI engine as variational posteriors and as priors.  Every class is
*batched*: its parameter arrays carry a leading ``batch_shape`` (one factor
per feature, per user, per topic, ...) followed by the event shape of a
single draw, and every method operates on the whole batch at once without a
Python loop over batch elements.

Conventions
-----------
Each family is written in the canonical form

    p(x | eta) = h(x) exp(<eta, t(x)> - A(eta)),

with base measure h(x) = 1 for every family except :class:`Rayleigh`
(``h(x) = x``), and with the sufficient statistics t(x) and natural
parameters eta ordered as below (``.natural`` and ``.expected_stats()``
always return tuples in exactly this order, with matching shapes):

* :class:`UnivariateGaussian`: ``t(x) = (x, x**2)``,
  ``eta = (precision * loc, -precision / 2)``.
* :class:`MultivariateGaussian`: ``t(x) = (x, x x^T)``,
  ``eta = (Lambda m, -Lambda / 2)``.
* :class:`Gamma`: ``t(x) = (x, log x)``, ``eta = (-rate, shape - 1)``.
* :class:`WishartByScale` (scale ``W``): ``t(X) = (X, log|X|)``,
  ``eta = (-W^{-1} / 2, (df - d - 1) / 2)``.
* :class:`Dirichlet`: ``t(x) = (log x,)``, ``eta = (concentration - 1,)``.
* :class:`NormalWishart` (``J`` means ``mu_j`` sharing one precision
  ``Lambda``): ``t(mu, Lambda) = (Lambda mu_j, Lambda, mu_j^T Lambda mu_j,
  log|Lambda|)``, ``eta = (beta_j m_j, -(W^{-1} + sum_j beta_j m_j m_j^T) / 2,
  -beta_j / 2, (df - d - 1 + J) / 2)``.
* :class:`NormalGamma` (``J`` means ``mu_j`` sharing one scalar precision
  ``lambda``): ``t(mu, lambda) = (lambda mu_j, lambda, lambda ||mu_j||^2,
  log lambda)``, ``eta = (beta_j m_j, -(rate + sum_j beta_j ||m_j||^2 / 2),
  -beta_j / 2, shape - 1 + J d / 2)``.
* :class:`Rayleigh` (scale ``s``, for a noise variance ``x > 0``):
  ``t(x) = (x**2,)``, ``eta = (-1 / (2 s**2),)``,
  ``A(eta) = -log(-2 eta) = log(s**2)`` and base measure ``h(x) = x``.

Because h(x) = 1 (constants such as log(2 pi) / 2 live in A), the following
identities hold for every class but :class:`Rayleigh`:

* ``entropy = A(eta) - <eta, E[t(x)]>``
* ``KL(q || p) = <eta_q - eta_p, E_q[t(x)]> - A(eta_q) + A(eta_p)``
* ``grad A(eta) = E[t(x)]``

where ``<., .>`` sums over the event axes of each natural parameter.  For
:class:`Rayleigh` the last two hold as well (``h`` cancels in the log-ratio
and does not depend on ``eta``), but its entropy is
``A(eta) - <eta, E[t(x)]> - E[log x]``.  The classes implement numerically
stable closed forms of these quantities.

Other conventions
-----------------
Callers that keep parameters in another convention (the nodes of
:mod:`skvi.networks`, in BayesPy's) call array-level functions rather than
re-deriving the mathematics: :func:`gaussian_moments` (mean, covariance and
log-determinant from a precision and a linear term, with the options the
models need: diagonal, the covariance's factor, LAPACK with a memo of
factorisations) and :meth:`MultivariateGaussian.moments_from_natural`,
:meth:`WishartByScale.stats_from_inverse_scale` (a Wishart given by its
inverse scale), :meth:`WishartByScale.sufficient_stats`, the log-normalisers' terms
:meth:`Gamma.log_normalizer_shape_term` and
:meth:`WishartByScale.log_normalizer_df_term`, and the count families' base
measures in :mod:`skvi.expfam.counts`.  The models' other linear algebra
of symmetric positive definite matrices is here too (:mod:`skvi.expfam.linalg`):
:func:`cholesky_factor` (with jitter), :func:`spd_logdet`, :func:`spd_inverse`,
:func:`symmetric_eigenvalues`, :func:`psd_projection` and :func:`psd_root`, and
of a general square matrix :func:`inverse_and_logdet`.

Dtypes
------
Parameters are stored as floating arrays: ``float32`` when every NumPy input
is ``float32`` (plain Python scalars do not force an upcast), ``float64``
otherwise.

Instances are meant to be treated as immutable: derived quantities (for
example the Cholesky factor of a precision matrix) are cached on first use.
"""

# The private helpers stay importable from the package, as from the module it replaced.
from .base import (  # noqa: F401
    _LOG_2PI,
    ExponentialFamily,
    _as_float,
    _check_random_state,
    _cholesky_logdet,
    _event_sum,
    _float_dtype,
    _pd_mask,
    _renamed,
    _size_tuple,
    _symmetric_mask,
    _uniform_open0,
)
from .dirichlet import Dirichlet
from .gamma import Gamma
from .gaussian import UnivariateGaussian
from .linalg import (
    GaussianMeanCovariance,
    SmallGaussianMoments,
    cholesky_factor,
    gaussian_moments,
    inverse_and_logdet,
    psd_projection,
    psd_root,
    small_gaussian_moments,
    spd_inverse,
    spd_logdet,
    symmetric_eigenvalues,
)
from .multivariate_gaussian import MultivariateGaussian
from .normal_gamma import NormalGamma
from .normal_wishart import NormalWishart
from .rayleigh import Rayleigh
from .wishart import WishartByScale, _log_multigamma, _multi_digamma  # noqa: F401

__all__ = [
    "Dirichlet",
    "ExponentialFamily",
    "Gamma",
    "GaussianMeanCovariance",
    "MultivariateGaussian",
    "NormalGamma",
    "NormalWishart",
    "Rayleigh",
    "SmallGaussianMoments",
    "UnivariateGaussian",
    "WishartByScale",
    "cholesky_factor",
    "gaussian_moments",
    "inverse_and_logdet",
    "psd_projection",
    "psd_root",
    "small_gaussian_moments",
    "spd_inverse",
    "spd_logdet",
    "symmetric_eigenvalues",
]

# The old names, for one release: each use warns with the new name.  The
# networks' Gaussian and Wishart are BayesPy's (a Gaussian vector; a Wishart
# by its inverse scale), so the families here say what they parameterise.
_RENAMED = {
    "Gaussian": "UnivariateGaussian",
    "GaussianMoments": "GaussianMeanCovariance",
    "Wishart": "WishartByScale",
}


def __getattr__(name):
    return _renamed(__name__, _RENAMED, name)
