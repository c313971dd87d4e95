"""Bayesian generalised linear models by Monte-Carlo structured SVI ("Monte Carlo structured SVI for two-level non-conjugate models").

The model of section 3.3 (an LGM whose local variable is linear Gaussian in
the weights)::

    w   ~ N(0, diag(prior variances))          (global, Gaussian)
    f_i = x_i . w (+ intercept)                (local, deterministic)
    y_i ~ p(y_i | f_i)                         (any likelihood)

with a full-covariance Gaussian ``q(w) = N(m, V)``.  Under ``q`` each
``f_i ~ N(x_i . m, x_i^T V x_i)``, and with ``E1_i = E[d log p/df]``,
``E2_i = E[d^2 log p/df^2]`` (Monte Carlo or Gauss-Hermite, see
:mod:`skvi.likelihoods`) the natural-gradient target of ``q(w)`` on a
minibatch S is (Monte Carlo structured SVI, eqs. 23-25)::

    Lambda_hat  = Lambda_0 - (N/|S|) sum_i E2_i x_i x_i^T
    eta1_hat    = Lambda_0 m_0 + (N/|S|) sum_i (E1_i - E2_i x_i . m) x_i

The engine moves ``q(w)`` towards it with the rule of ``algorithm``
(:mod:`skvi.update_rules`).  For the Gaussian likelihood the target does not
depend on ``q``: one ``rho = 1`` step is the conjugate posterior.
"""

# The base, the docstring templates and the kernels under their old module
# path: the overdispersed model and the tests import them from here.
from .base import (  # noqa: F401
    DEFAULT_PRIOR_VARIANCE,
    SOFTMAX_PRIOR_VARIANCE,
    _BayesianGLM,
)
from .docstrings import _EXPECTATION_DOC, _GLM_ATTRS_DOC, _GLM_PARAMS_DOC  # noqa: F401
from .kernels import (  # noqa: F401
    _SMALL_INVERSE,
    _block_gram,
    _block_moments,
    _gaussian_moments,
)
from .logistic import SVILogisticRegression
from .poisson import SVIPoissonRegression

__all__ = ["SVILogisticRegression", "SVIPoissonRegression"]
