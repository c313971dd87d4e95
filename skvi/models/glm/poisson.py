"""Bayesian Poisson regression (exp or softplus inverse link)."""

import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import d2_tweedie_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_array, check_consistent_length

from ...engine.data import check_row_weights
from ...likelihoods import Poisson
from .base import _BayesianGLM
from .docstrings import _GLM_ATTRS_DOC, _GLM_PARAMS_DOC

__all__ = ["SVIPoissonRegression"]


class SVIPoissonRegression(RegressorMixin, _BayesianGLM):
    __doc__ = (
        """Bayesian Poisson regression by Monte-Carlo structured SVI.

    ``y_i ~ Poisson(lambda(x_i . w + b))`` with ``lambda = exp`` (default)
    or softplus, a Gaussian prior on ``(w, b)`` and a
    full-covariance Gaussian posterior.  ``predict`` is the posterior
    predictive mean ``E_q[lambda(f)]`` (``exp(m + v/2)`` for the exp link)
    and ``predict(X, return_std=True)`` adds the predictive standard
    deviation of ``y``, which includes the Poisson noise.

    Parameters
    ----------
    link : {'exp', 'softplus'}, default='exp'
        The inverse link ``lambda(f)``: ``exp(f)`` or ``log(1 + exp(f))``
        (the link of Monte Carlo structured SVI's experiments, GPML's
        "logistic"), see :class:`skvi.likelihoods.Poisson`.
"""
        + _GLM_PARAMS_DOC.split("Parameters\n    ----------\n", 1)[1]
        + """
    Attributes
    ----------
"""
        + _GLM_ATTRS_DOC
        + """
    See Also
    --------
    sklearn.linear_model.PoissonRegressor : the point estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIPoissonRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = rng.poisson(np.exp(0.5 + X @ [0.3, -0.2]))
    >>> reg = SVIPoissonRegression(batch_size=500, random_state=0).fit(X, y)
    >>> np.round(reg.coef_, 1), np.round(reg.intercept_, 1)
    (array([[ 0.3, -0.2]]), array([0.5]))
    """
    )

    _parameter_constraints = {
        **_BayesianGLM._parameter_constraints,
        "link": [StrOptions({"exp", "softplus"})],
    }
    _point_estimate = "scikit-learn's PoissonRegressor"

    @property
    def _auto_expectation(self):
        # The exp link's expectations are exact and in closed form
        # (E[e^f] = exp(m + v / 2)): cheaper than the paper's draws, and
        # deterministic, so that batch steps are line searches and online
        # steps carry no Monte Carlo noise (docs/glm_benchmark.md, "At their
        # defaults").  The softplus link keeps the paper's draws, where
        # quadrature would take twice their points.
        return "quadrature" if self.link == "exp" else "mc"

    def __init__(
        self,
        *,
        link="exp",
        prior_variance=None,
        fit_intercept=True,
        intercept_prior_variance=100.0,
        algorithm="mc-ssvi",
        gradient_learning_rate=0.5,
        expectation="auto",
        n_mc_samples=10,
        learning_method="online",
        batch_size=2000,
        max_iter=20,
        tol=1e-4,
        learning_offset=1.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        step_safety=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.link = link
        super().__init__(
            prior_variance=prior_variance,
            fit_intercept=fit_intercept,
            intercept_prior_variance=intercept_prior_variance,
            algorithm=algorithm,
            gradient_learning_rate=gradient_learning_rate,
            expectation=expectation,
            n_mc_samples=n_mc_samples,
            learning_method=learning_method,
            batch_size=batch_size,
            max_iter=max_iter,
            tol=tol,
            learning_offset=learning_offset,
            learning_decay=learning_decay,
            learning_rate=learning_rate,
            total_samples=total_samples,
            step_safety=step_safety,
            random_state=random_state,
            n_jobs=n_jobs,
            verbose=verbose,
        )

    @property
    def _likelihood(self):
        return Poisson(self.link)

    def _encode_targets(self, y, reset, classes=None):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}.")
        if not np.all(np.isfinite(y)) or np.any(y < 0):
            raise ValueError("SVIPoissonRegression: y must be non-negative and finite.")
        # Non-integer targets (rates, averaged counts) are accepted as
        # scikit-learn's PoissonRegressor accepts them: log p keeps its form
        # y f - lambda - log Gamma(y + 1), a quasi-likelihood.
        return y

    def _baseline(self, target_sums, total):
        mean = max(float(target_sums) / total, 1e-3)
        if self.link == "exp":
            return float(np.log(mean))
        return float(mean + np.log(-np.expm1(-mean)))  # the inverse of log(1 + e^f)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags

    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of the count.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the predictive standard deviation
            ``sqrt(E[lambda] + Var[lambda])``.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Predictive mean count.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation; only when ``return_std``.
        """
        mean, var = self._predictive_moments(X)
        lik = self._likelihood
        if lik.link == "exp":
            mu = np.exp(mean + 0.5 * var)
            variance = mu + np.expm1(var) * mu * mu
        else:
            mu = lik.predictive_mean(mean, var)
            variance = lik.predictive_variance(mean, var)
        if return_std:
            return mu, np.sqrt(np.maximum(variance, 0.0))
        return mu

    def score(self, X, y, sample_weight=None):
        """D^2, the fraction of Poisson deviance explained (as scikit-learn's
        :class:`~sklearn.linear_model.PoissonRegressor`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            True counts.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        float
            D^2 (1 is a perfect fit, 0 the intercept-only model).  NaN, with
            an ``UndefinedMetricWarning``, when y is constant over the rows
            of positive weight (one row included): the intercept-only model
            then fits exactly and D^2 is undefined.
        """
        mu = self.predict(X)
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        check_consistent_length(y, mu)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}.")
        if np.any(y < 0):
            raise ValueError(f"{type(self).__name__}.score: y must be non-negative counts.")
        weight = check_row_weights(sample_weight, mu)
        observed = y if weight is None else y[weight > 0]
        if observed.size < 2 or np.ptp(observed) == 0:
            # The null deviance is zero (up to the rounding of the mean):
            # scikit-learn's D^2 is NaN or 1 - rounding / rounding there.
            warnings.warn(
                "D^2 is not defined when y is constant (over the rows of positive weight): "
                "the null deviance is zero.",
                UndefinedMetricWarning,
            )
            return float("nan")
        return float(d2_tweedie_score(y, mu, sample_weight=weight, power=1))
