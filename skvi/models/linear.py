"""Bayesian linear regression with learned noise and weight precisions (VB and SVI)."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import ModelSettings, DataMoments, SVIEstimator
from ..engine.data import check_row_weights
from ..engine.step import update_factor
from ..expfam import Gamma, MultivariateGaussian
from ..validation import check_feature_magnitude, check_sparse_structure
from .glm.resources import blas_limited, check_covariance_size
from ._design import (
    column_squares,
    design_of,
    design_rows,
    row_quadratic,
    weighted_gram,
    with_intercept,
)

__all__ = ["SVILinearRegression"]

_LOG_2PI = np.log(2.0 * np.pi)
#: Prior precision of the intercept (a vague Gaussian, not shrunk by ARD).
_INTERCEPT_PRECISION = 1e-6


class SVILinearRegression(RegressorMixin, SVIEstimator):
    """Bayesian linear regression by variational Bayes, batch or stochastic.

    The model::

        y_i      ~ N(x_i . w + b, 1 / alpha)
        w_j      ~ N(0, 1 / lambda_j)       lambda_j shared or per feature (ARD)
        alpha    ~ Gamma(alpha_1, rate=alpha_2)
        lambda_j ~ Gamma(lambda_1, rate=lambda_2)
        b        ~ N(0, 1e6)

    with the mean-field posterior ``q(w, b) q(alpha) q(lambda)``, a full
    covariance Gaussian for the weights and Gamma factors for the
    precisions.  Every factor is conjugate, so ``learning_method='batch'``
    is coordinate ascent (its ELBO never decreases) and ``'online'`` and
    ``partial_fit`` are the engine's natural-gradient steps on minibatches.
    The names of the fitted attributes and of the Gamma priors are those of
    scikit-learn's :class:`~sklearn.linear_model.BayesianRidge` (shared
    precision) and :class:`~sklearn.linear_model.ARDRegression` (one per
    feature), which fit the same model by evidence maximisation: they set
    ``alpha`` and ``lambda`` to point estimates, where this estimator keeps
    Gamma posteriors and so also counts their uncertainty.

    Parameters
    ----------
    ard : bool, default=False
        One weight precision per feature (ARD) instead of a shared one.
    alpha_1, alpha_2 : float, default=1e-6
        Shape and rate of the Gamma prior of the noise precision.  The shape
        is at least 1e-10: the Gamma's natural parameter ``alpha_1 - 1``
        holds smaller shapes only to 1e-16 absolutely (1e-300 rounded to
        0, an ELBO of -inf).
    lambda_1, lambda_2 : float, default=1e-6
        Shape and rate of the Gamma prior of the weight precisions; the
        shape, likewise, at least 1e-10.
    noise_precision : float or None, default=None
        Fix the noise precision ``alpha`` instead of learning it.
    weight_precision : float or None, default=None
        Fix every weight precision ``lambda`` instead of learning it.
    fit_intercept : bool, default=True
        Fit an intercept ``b`` with a vague Gaussian prior.
    learning_method : {'batch', 'online'}, default='batch'
        Coordinate ascent on all rows, or stochastic steps on minibatches.
    batch_size : int, default=1000
        Largest number of rows per minibatch (online ``fit`` and
        ``partial_fit``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Posterior mean of the weights.
    intercept_ : float
        Posterior mean of the intercept (0.0 without one).
    sigma_ : ndarray of shape (n_features, n_features)
        Posterior covariance of the weights.
    alpha_ : float
        Posterior mean of the noise precision.
    lambda_ : float or ndarray of shape (n_features,)
        Posterior mean of the weight precision (one per feature with ARD).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.
    natural_params_, lower_bounds_, lower_bound_, n_iter_, n_batch_iter_, \
n_samples_seen_, converged_, n_rejected_steps_
        From the engine, see :class:`skvi.engine.SVIEstimator`.

    See Also
    --------
    sklearn.linear_model.BayesianRidge : the same model by evidence maximisation.
    skvi.SVIPoissonRegression : a GLM on the same engine.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVILinearRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(500, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 3.0 + 0.1 * rng.normal(size=500)
    >>> reg = SVILinearRegression().fit(X, y)
    >>> np.round(reg.coef_, 2), round(reg.intercept_, 2), round(float(1 / np.sqrt(reg.alpha_)), 2)
    (array([ 1.  , -2.01,  0.5 ]), 3.0, 0.1)
    >>> mean, std = reg.predict(X[:2], return_std=True)
    >>> bool(np.all(std > 0.09))
    True
    """

    _parameter_constraints = {
        "ard": ["boolean"],
        # Gamma shapes: their natural parameter a - 1 rounds below 1e-10.
        "alpha_1": [Interval(numbers.Real, 1e-10, None, closed="left")],
        "alpha_2": [Interval(numbers.Real, 0, None, closed="neither")],
        "lambda_1": [Interval(numbers.Real, 1e-10, None, closed="left")],
        "lambda_2": [Interval(numbers.Real, 0, None, closed="neither")],
        "noise_precision": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "weight_precision": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
    }

    def __init__(
        self,
        *,
        ard=False,
        alpha_1=1e-6,
        alpha_2=1e-6,
        lambda_1=1e-6,
        lambda_2=1e-6,
        noise_precision=None,
        weight_precision=None,
        fit_intercept=True,
        learning_method="batch",
        batch_size=1000,
        max_iter=300,
        tol=1e-8,
        learning_offset=10.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.ard = ard
        self.alpha_1 = alpha_1
        self.alpha_2 = alpha_2
        self.lambda_1 = lambda_1
        self.lambda_2 = lambda_2
        self.noise_precision = noise_precision
        self.weight_precision = weight_precision
        self.fit_intercept = fit_intercept
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.update_order = update_order
        self.step_safety = step_safety
        self.random_state = random_state
        self.verbose = verbose

    # The engine's fit and partial_fit, BLAS held to one thread when X has
    # few columns (skvi/models/glm/resources.py).
    fit = blas_limited(SVIEstimator.fit)
    partial_fit = blas_limited(SVIEstimator.partial_fit)

    # ------------------------------------------------------------ public API
    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of y.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features.
        return_std : bool, default=False
            Also return the predictive standard deviation, ``sqrt(x^T S x +
            1 / alpha_)``.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Predictive means.
        std : ndarray of shape (n_samples,)
            Predictive standard deviations, when ``return_std`` is True.
        """
        check_is_fitted(self)
        check_sparse_structure(X)
        X = validate_data(
            self, X, reset=False, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32]
        )
        check_feature_magnitude(X, type(self).__name__)
        Xd = self._design(X)
        q = self.natural_params_["weights"].distribution
        mean = np.asarray(Xd @ q.loc).ravel()
        if not return_std:
            return mean
        cov = self.natural_params_["weights"].cached(
            "covariance", lambda f: f.distribution.covariance
        )
        return mean, np.sqrt(np.maximum(row_quadratic(Xd, cov), 0.0) + 1.0 / self.alpha_)

    # ------------------------------------------------------------- input
    def _rows(self, X, y, reset, sample_weight=None):
        check_sparse_structure(X)
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            accept_sparse=["csr", "csc"],
            dtype=[np.float64, np.float32],
            y_numeric=True,
        )
        check_feature_magnitude(X, type(self).__name__)
        if reset:
            # Before the weights' covariance is allocated (terabytes for a
            # sparse X of 10^6 columns).
            check_covariance_size(
                type(self).__name__,
                X.shape[1],
                intercept=self.fit_intercept,
                alternative="scikit-learn's Ridge or SGDRegressor",
            )
        if sp.issparse(X):
            X = X.tocsr()
        return design_rows(
            X,
            np.asarray(y, dtype=np.float64),
            check_row_weights(sample_weight, X),
            self.fit_intercept,
        )

    @staticmethod
    def _weights(data):
        return np.ones(data.shape[0]) if data.weight is None else data.weight

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return self._rows(X, y, reset=reset, sample_weight=sample_weight)

    def _design(self, X):
        return with_intercept(X) if self.fit_intercept else X

    # ------------------------------------------------------------ model hooks
    @property
    def _settings(self):
        factors = {}
        if self.noise_precision is None:
            factors["noise"] = Gamma
        factors["weights"] = MultivariateGaussian
        if self.weight_precision is None:
            factors["weight_precision"] = Gamma
        # The weight precisions' children are the weights, in memory; the
        # local step only sums the rows' statistics.
        return ModelSettings(
            factors,
            hierarchical=("weight_precision",),
            local_depends_on_globals=False,
            parallel=True,
        )

    @property
    def _n_coef(self):
        return self.n_features_in_

    def _prior_natural(self):
        d = self._n_coef
        n_lambda = d if self.ard else 1
        return {
            "noise": (np.array(-self.alpha_2), np.array(self.alpha_1 - 1.0)),
            "weights": (
                np.zeros(d + int(self.fit_intercept)),
                np.zeros((d + int(self.fit_intercept),) * 2),
            ),
            "weight_precision": (
                np.full(n_lambda, -self.lambda_2),
                np.full(n_lambda, self.lambda_1 - 1.0),
            ),
        }

    def _initialize_globals(self, data, random_state, summary):
        prior = self._prior_natural()
        params = {"weight_precision": prior["weight_precision"]}
        # From all the rows of the fit (the first partial_fit call's), summed
        # over the blocks on a cluster: the targets' moments, the squares.
        targets, squares = summary
        n = max(targets.total, 1.0)
        if targets.n_rows > 1 and targets.total > 0:
            mean_y, var = float(targets.mean[0]), float(targets.covariance(diagonal=True)[0])
        else:
            mean_y, var = (float(targets.mean[0]) if targets.n_rows else 0.0), 1.0
        var = var if var > 0 else 1.0
        # A noise precision of the targets' scale: the prior's mean a1 / a2
        # is 1 whatever the scale.
        params["noise"] = (np.array(-self.alpha_1 * var), np.array(self.alpha_1 - 1.0))
        # The weights start at zero (the intercept at the mean target) with
        # the spread one pass of data leaves, var(y) / (n d E[x_j^2]): a start
        # at the vague prior (the intercept's variance is 1e6) would give the
        # first residuals, and so every online estimate of the noise that
        # still remembers them, a scale far above the data's.
        sq = squares / n
        variance = var / (n * sq.shape[0] * np.maximum(sq, 1e-12))
        mean = np.zeros(sq.shape[0])
        if self.fit_intercept:
            mean[-1] = mean_y
        params["weights"] = (mean / variance, -0.5 * np.diag(1.0 / variance))
        return params

    def _data_summary(self, data, local=None):
        if local is not None:  # no statistics of its own after a step
            return None
        w = self._weights(data)
        Xd = design_of(data, self.fit_intercept)
        return (DataMoments.of(data.y[:, None], w, full=False), column_squares(Xd, w))

    def _expected(self, params, name):
        """E[alpha] or E[lambda] (the fixed value when not learned)."""
        fixed = self.noise_precision if name == "noise" else self.weight_precision
        if fixed is not None:
            return np.asarray(float(fixed))
        return (
            params[name].distribution.mean()
            if hasattr(params[name], "distribution")
            else Gamma.from_natural(*params[name]).mean()
        )

    def _update_factor(self, name, current, stats, ctx):
        if name != "weights":
            return super()._update_factor(name, current, stats, ctx)
        # The weights' prior is N(0, diag(E[lambda])): its message moves with q(lambda).
        prior = self._weights_prior(ctx.params)
        target = tuple(p + ctx.scale * s for p, s in zip(prior, stats))
        return update_factor(self, name, current, stats, ctx, target=target)

    def _weights_prior(self, params):
        """Natural parameters of the weights' prior message, ``N(0, diag(E[lambda]))``."""
        d = self._n_coef
        lam = np.broadcast_to(self._expected(params, "weight_precision"), (d,))
        precision = np.append(lam, _INTERCEPT_PRECISION) if self.fit_intercept else lam.copy()
        return np.zeros(precision.shape[0]), -0.5 * np.diag(precision)

    def _local_step(self, data, params):
        # No local latent variables: the sufficient statistics of the rows.
        Xd = design_of(data, self.fit_intercept)
        w = self._weights(data)
        xtx = np.asarray(weighted_gram(Xd, w), dtype=np.float64)
        xty = np.asarray(Xd.T @ (w * data.y), dtype=np.float64).ravel()
        return {"n": float(np.sum(w)), "xtx": xtx, "xty": xty, "yty": float((w * data.y) @ data.y)}

    def _sq_residual(self, local, params):
        """``E[||y - X w||^2]`` over the rows, from their statistics."""
        q = params["weights"].distribution
        second = q.covariance + np.outer(q.loc, q.loc)
        return local["yty"] - 2.0 * local["xty"] @ q.loc + np.sum(local["xtx"] * second)

    def _expected_stats(self, name, data, local, params):
        if name == "weights":
            tau = self._expected(params, "noise")
            return tau * local["xty"], -0.5 * tau * local["xtx"]
        if name == "noise":
            return np.array(-0.5 * self._sq_residual(local, params)), np.array(0.5 * local["n"])
        # The weight precisions: the children are the weights themselves.
        q = params["weights"].distribution
        sq = (q.loc**2 + q.variance)[: self._n_coef]
        if self.ard:
            return -0.5 * sq, np.full(self._n_coef, 0.5)
        return np.array([-0.5 * np.sum(sq)]), np.array([0.5 * self._n_coef])

    def _local_bound(self, data, local, params):
        if local is None:
            local = self._local_step(data, params)
        if self.noise_precision is None:
            q = params["noise"].distribution
            tau, log_tau = float(q.mean()), float(q.expected_log())
        else:
            tau = float(self.noise_precision)
            log_tau = float(np.log(tau))
        n = local["n"]
        return float(0.5 * n * (log_tau - _LOG_2PI) - 0.5 * tau * self._sq_residual(local, params))

    def _global_bound(self, params):
        prior = self._prior_natural()
        total = 0.0
        q_w = params["weights"].distribution
        p_w = MultivariateGaussian.from_natural(*self._weights_prior(params))
        if self.weight_precision is None:
            # E_q[log p(w | lambda)] - E_q[log q(w)] with lambda random:
            # the Gaussian KL at E[lambda], corrected by E[log lambda] - log E[lambda].
            q_l = params["weight_precision"].distribution
            d = self._n_coef
            correction = np.broadcast_to(q_l.expected_log() - np.log(q_l.mean()), (d,))
            total += 0.5 * float(np.sum(correction)) if self.ard else 0.5 * d * float(correction[0])
            total -= float(np.sum(q_l.kl(Gamma.from_natural(*prior["weight_precision"]))))
        total -= float(q_w.kl(p_w))
        if self.noise_precision is None:
            total -= float(params["noise"].distribution.kl(Gamma.from_natural(*prior["noise"])))
        return total

    def _on_params_updated(self):
        params = self.natural_params_
        q = params["weights"].distribution
        d = self._n_coef
        cov = params["weights"].cached("covariance", lambda f: f.distribution.covariance)
        self.coef_ = q.loc[:d].copy()
        self.intercept_ = float(q.loc[d]) if self.fit_intercept else 0.0
        self.sigma_ = cov[:d, :d].copy()
        self.alpha_ = float(self._expected(params, "noise"))
        lam = self._expected(params, "weight_precision")
        self.lambda_ = np.broadcast_to(lam, (d,)).copy() if self.ard else float(np.ravel(lam)[0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
