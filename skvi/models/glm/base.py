"""The GLM estimators' shared base: the weights' Gaussian ``q(w)`` and the engine's hooks."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import ModelSettings, SVIEstimator
from ...engine.data import check_row_weights
from ...expfam import MultivariateGaussian
from ...likelihoods import Softmax
from ...likelihoods.softmax import PREDICTIVE_POINTS
from ...update_rules import UPDATE_RULE_PARAMETER_CONSTRAINTS, make_update_rule
from ...validation import check_feature_magnitude, check_sparse_structure
from .._design import (
    column_squares,
    design_of,
    design_rows,
    row_quadratic,
    weighted_gram,
    with_intercept,
)
from .kernels import _block_gram, _block_moments, _gaussian_moments
from .resources import blas_limited, check_covariance_size

#: Gauss-Hermite nodes for the ELBO and the predictive quantities.
_BOUND_POINTS = 20
#: Points of a softmax's rule for the online probe loss (step safety).
_PROBE_POINTS = 64
#: The weights' prior variance of ``prior_variance=None`` with one linear
#: predictor (two classes, counts): scikit-learn's ``C=1``.
DEFAULT_PRIOR_VARIANCE = 1.0
#: ... and for a softmax (more than two classes), whose posterior predictive
#: is under-confident at 1 (the held-out NLL of both on digits, iris and
#: wine: ``docs/glm_benchmark.md``, "More than two classes").
SOFTMAX_PRIOR_VARIANCE = 5.0


class _BayesianGLM(SVIEstimator):
    """Shared code of the GLM estimators; subclasses set the likelihood."""

    _parameter_constraints = {
        "prior_variance": [
            None,
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "fit_intercept": ["boolean"],
        "intercept_prior_variance": [Interval(numbers.Real, 0, None, closed="neither")],
        **UPDATE_RULE_PARAMETER_CONSTRAINTS,
        "expectation": [StrOptions({"auto", "mc", "quadrature", "bound"})],
        "n_mc_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    #: What ``expectation='auto'`` means for the model (see ``_expectation_rule``).
    _auto_expectation = "quadrature"
    #: The point estimate that a too wide X's error proposes instead.
    _point_estimate = None

    # The engine's fit and partial_fit, BLAS held to one thread when X has
    # few columns: a step is then many small BLAS calls (resources.py).
    fit = blas_limited(SVIEstimator.fit)
    partial_fit = blas_limited(SVIEstimator.partial_fit)

    def __init__(
        self,
        *,
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
        self.prior_variance = prior_variance
        self.fit_intercept = fit_intercept
        self.intercept_prior_variance = intercept_prior_variance
        self.algorithm = algorithm
        self.gradient_learning_rate = gradient_learning_rate
        self.expectation = expectation
        self.n_mc_samples = n_mc_samples
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.step_safety = step_safety
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # --------------------------------------------------------------- helpers
    def _design(self, X):
        """X with a trailing column of ones when fitting an intercept (CSR or dense)."""
        return with_intercept(X) if self.fit_intercept else X

    def _rows(self, X, y, weight=None):
        """The engine's rows of (X, y), carrying their design: built once per fit."""
        return design_rows(X, y, weight, self.fit_intercept)

    def _check_X(self, X, reset):
        check_sparse_structure(X)
        X = validate_data(
            self, X, reset=reset, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32]
        )
        return check_feature_magnitude(X, type(self).__name__)

    def _check_X_y(self, X, y, reset):
        check_sparse_structure(X)
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            accept_sparse=["csr", "csc"],
            dtype=[np.float64, np.float32],
            y_numeric=False,
        )
        check_feature_magnitude(X, type(self).__name__)
        if sp.issparse(X):
            X = X.tocsr()
        return X, y

    #: Linear predictors per row: 1, or the number of classes of a softmax.
    _n_outputs = 1

    def _moments(self, params):
        """Mean, covariance and ``log |precision|`` of the weights under ``params``.

        During a fit, with the last factorisations kept (``_factorization``,
        set at the start, dropped at the end: outside a fit nothing is
        written to the estimator).
        """
        return _gaussian_moments(params["weights"], getattr(self, "_factorization", None))

    def _predictor_means(self, Xd, params):
        """The means ``x_i . m_a`` of the linear predictors, (n,) or (n, k)."""
        loc = self._moments(params)[0]
        if self._n_outputs > 1:
            return np.asarray(Xd @ loc.reshape(self._n_outputs, -1).T)
        return np.asarray(Xd @ loc).ravel()

    def _gram(self, data, Xd):
        """These rows' ``G = X^T W X`` (W their weights) and their bound's statistics ``-A kron G / 2``.

        Kept for the last few row sets (a batch fit's steps and tests all
        read the same rows).
        """
        grams = getattr(self, "_grams", None)
        if grams is None:
            grams = self._grams = {}
        hit = grams.get(id(data))
        if hit is not None and hit[0] is data:
            return hit[1]
        weight = np.ones(data.shape[0]) if data.weight is None else data.weight
        gram = weighted_gram(Xd, np.asarray(weight, dtype=np.float64))
        stats = -0.5 * np.kron(Softmax.bound_curvature(self._n_outputs), gram)
        if len(grams) >= 4:
            grams.pop(next(iter(grams)))
        grams[id(data)] = (data, (gram, stats), {})
        return gram, stats

    def _spread(self, data, Xd, cov):
        """``sum_i w_i tr(A S_i) = sum_ab A_ab tr(V_ab G)`` of these rows under the covariance V."""
        gram, _ = self._gram(data, Xd)
        spreads = self._grams[id(data)][2]
        hit = spreads.get("last")
        if hit is not None and hit[0] is cov:
            return hit[1]
        k = self._n_outputs
        blocks = cov.reshape(k, cov.shape[0] // k, k, -1)
        traces = np.einsum("aibj,ij->ab", blocks, gram)
        spread = float(np.sum(Softmax.bound_curvature(k) * traces))
        spreads["last"] = (cov, spread)
        return spread

    def _linear_moments(self, Xd, params):
        """Mean and variance of ``f_i = x_i . w`` under q, for the design rows Xd.

        With several outputs, the means (n, k) and covariances (n, k, k) of
        the k predictors ``f_ia = x_i . w_a``.
        """
        loc, cov, _ = self._moments(params)
        if self._n_outputs > 1:
            return _block_moments(Xd, loc, cov, self._n_outputs)
        mean = np.asarray(Xd @ loc).ravel()
        var = np.maximum(row_quadratic(Xd, cov), 0.0)
        return mean, var

    # ------------------------------------------------------------ model hooks
    @property
    def _settings(self):
        # A unit natural-gradient step on the mean is a Newton-like
        # fixed-point update, which can overshoot (Sheth and Khardon; the
        # Monte Carlo structured SVI paper, section 4.1) while every factor
        # stays valid: a batch step must not lower the ELBO.  With
        # deterministic expectations it is a damped Newton step, each
        # starting again from the full step (a kept halving ended at a lower
        # ELBO on digits' softmax).  Online steps are tested on the probe
        # instead, whose loss may grow by a quarter at most: MC-SSVI's
        # unstable mean steps raised it by more on z-scored a9a, and doubling
        # (the engine's default) let the smaller jumps through (both in
        # ``docs/glm_benchmark.md``).  The local step's draws
        # are made before the minibatch is cut (``_local_draws``), so it
        # runs on ``n_jobs`` threads whatever the expectations.
        deterministic = self._expectation_rule()[0] in ("quadrature", "bound")
        return ModelSettings(
            self._factors(),
            update_rules=self._update_rules(),
            parallel=True,
            batch_steps=(
                "extrapolate"
                if self._extrapolates()
                else "line_search"
                if deterministic
                else "no_decrease"
            ),
            tolerance={"probe": 0.25},
            transient=("_memo", "_factorization", "_grams"),
        )

    def _factors(self):
        return {"weights": MultivariateGaussian}

    def _extrapolates(self):
        """Whether batch passes are extrapolated (:mod:`skvi.engine.acceleration`).

        Under the softmax's bound a batch step is Böhning's majorize-minimize
        step, whose curvature ``A`` overestimates the log-sum-exp's where the
        classes are well separated: it converges linearly, in many more
        passes than extrapolated ones (``docs/glm_benchmark.md``, "More
        than two classes").
        """
        return self._expectation_rule()[0] == "bound" and self._bound_extrapolates()

    def _bound_extrapolates(self):
        """Whether a softmax fit's steps are all batch steps that extrapolated passes may take.

        Every step a batch step (a batch fit, or all the rows in one
        minibatch: ``_prepare_data``), and no state beyond the factor:
        ``'mc-ssvi'``'s steps and a fixed prior variance.
        """
        return (
            self._n_outputs > 1
            and getattr(self, "_batch_steps_only", False)
            and self.algorithm == "mc-ssvi"
            and self.prior_variance != "auto"
        )

    def _update_rules(self):
        return {"weights": make_update_rule(self.algorithm, self.gradient_learning_rate)}

    def _expectation_rule(self):
        """The (method, points) of the step's expectations.

        ``'auto'`` is Böhning's bound for a softmax fitted by batch steps
        (``_bound_extrapolates``: faster than the quadrature at about its
        held-out NLL), and otherwise the model's ``_auto_expectation``:
        online, the bound's steps are majorize-minimize steps that no
        extrapolation speeds up (an online fit under the bound stopped
        short of the MAP).  For logistic regression it is the deterministic
        rule (Gauss-Hermite quadrature, or a softmax's fixed
        quasi-Monte-Carlo rule): Monte Carlo noise made the batch steps of
        small data sets (standardised breast cancer, on every seed) lower
        the ELBO near the fixed point and be rejected, and keeps a
        softmax's batch fits from converging; the rule costs no more on
        a9a's online fit.  The measurements are in ``docs/glm_benchmark.md``
        ("More than two classes", "Measurements behind the
        implementation").  Poisson regression's exp link has exact
        expectations in closed form; its softplus link keeps the paper's
        Monte Carlo draws (see :class:`skvi.SVIPoissonRegression`).  A rule has at least
        the ELBO's points, so that a batch step is judged by the rule that
        made it.
        """
        method = self.expectation
        if method == "auto":
            method = "bound" if self._bound_extrapolates() else self._auto_expectation
        if method == "bound":
            if self._n_outputs == 1:
                raise ValueError(
                    "expectation='bound' is Böhning's bound of the softmax: it "
                    "needs more than two classes."
                )
            return method, 0
        points = self.n_mc_samples
        if method == "quadrature":
            # A deterministic step is judged by the ELBO's rule: with fewer
            # nodes its fixed point is not the ELBO's, and near it the full
            # steps were rejected (on breast cancer with 10 nodes, never with
            # 20).
            points = max(points, _BOUND_POINTS if self._n_outputs == 1 else PREDICTIVE_POINTS)
        return method, points

    def _prior_variances(self, n_weights):
        variance = self._prior_var
        out = np.full(n_weights, variance)
        if self.fit_intercept:
            out.reshape(self._n_outputs, -1)[:, -1] = self.intercept_prior_variance
        return out

    def _intercept_mask(self):
        """True at the intercepts of the stacked weight vector."""
        mask = np.zeros((self._n_outputs, self._n_weights // self._n_outputs), dtype=bool)
        if self.fit_intercept:
            mask[:, -1] = True
        return mask.ravel()

    def _prior_natural(self):
        d = self._n_weights
        precision = np.diag(1.0 / self._prior_variances(d))
        return {"weights": (np.zeros(d), -0.5 * precision)}

    def _initialize_globals(self, data, random_state, summary):
        self._n_weights = (data.X.shape[1] + int(self.fit_intercept)) * self._n_outputs
        if self.prior_variance is None:
            self._prior_var = (
                SOFTMAX_PRIOR_VARIANCE if self._n_outputs > 1 else DEFAULT_PRIOR_VARIANCE
            )
        elif self.prior_variance == "auto":
            self._prior_var = DEFAULT_PRIOR_VARIANCE
        else:
            self._prior_var = float(self.prior_variance)
        # Start at the prior mean with a narrow covariance, variance
        # min(prior variance, 1 / n_weights, 1 / (n_weights * E[x_j^2])) per
        # weight, so that the linear predictor's initial variance x^T V x is
        # at most about 1 whatever the features' scale: the first natural
        # step is then close to an IRLS (Newton) step from w = 0.  Starting at the prior itself is
        # poor when a prior is wide (the intercept's) or the features large:
        # the sigmoid's curvature averaged over that width is nearly zero,
        # and under the exponential link E[exp(f)] = exp(m + v / 2)
        # overflows (unscaled features of standard deviation 10 ended at
        # all-zero coefficients).
        # The intercept starts at the link of the mean target of the first
        # data seen (its value with every other weight at zero), so that
        # ordinary-gradient mean steps only refine it.
        # Both from all the rows of the fit (_data_summary; the first
        # partial_fit call's rows), summed over the blocks on a cluster.
        self._factorization = []
        total, squares, targets = summary
        total = float(total)
        d = self._n_weights
        second = np.tile(self._feature_second_moments(squares, total), self._n_outputs)
        variance = np.minimum(self._prior_variances(d), 1.0 / (d * np.maximum(second, 1.0)))
        mean = np.zeros(d)
        if self.fit_intercept and total > 0:
            mean[self._intercept_mask()] = self._baseline(targets, total)
        return {"weights": (mean / variance, -0.5 * np.diag(1.0 / variance))}

    def _data_summary(self, data, local=None):
        if local is not None:  # no statistics of its own after a step
            return None
        # The start's sums: the weight, each column's weighted squares, the targets'.
        X = data.X
        w = np.ones(X.shape[0]) if data.weight is None else data.weight
        squares = column_squares(X, w)
        return (np.asarray(float(np.sum(w))), squares, self._target_sums(data.y, w))

    def _target_sums(self, y, weight):
        """What ``_baseline`` needs of the targets, summed over rows (``sum_i w_i y_i``)."""
        return np.asarray(float(weight @ y))

    def _baseline(self, target_sums, total):
        """Intercept(s) matching the (weighted) mean target (0 unless overridden)."""
        return 0.0

    def _feature_second_moments(self, squares, total):
        """Weighted ``mean_i x_ij^2`` of every design column (1 for the intercept), at least 1e-12."""
        if not total > 0:
            return np.ones(squares.shape[0] + int(self.fit_intercept))
        sq = squares / total
        if self.fit_intercept:
            sq = np.append(sq, 1.0)
        return np.maximum(sq.astype(np.float64), 1e-12)

    def _local_draws(self, data, random_state):
        # Monte Carlo draws of every row, made before the minibatch is cut:
        # the likelihood's own draw, (rows, samples) or (rows, samples, K).
        method, points = self._expectation_rule()
        if method != "mc":
            return None
        n = data.shape[0]
        if self._n_outputs == 1:
            return random_state.standard_normal((n, points))
        return random_state.standard_normal((n, points, self._n_outputs))

    def _local_step(self, data, params, draws=None):
        method, points = self._expectation_rule()
        memo = self._recall(data, params, method, points)
        if memo is not None:
            return memo
        return self._rows_expectations(data, params, method, points, draws)[1]

    def _rows_expectations(self, data, params, method, points, draws=None):
        """The rows' ``E[log p]`` and their local step (design, mean, ``E1``, ``E2``).

        Under the softmax's bound (``method='bound'``) the rows' ``log p`` at
        their means and ``E2 = None``: every row's is ``-A``
        (:meth:`Softmax.bound_curvature`), and only the means are needed.
        """
        Xd = design_of(data, self.fit_intercept)
        if method == "bound":
            mean = self._predictor_means(Xd, params)
            log_p, e1 = self._likelihood.bound_terms(data.y, mean)
            return log_p, {"design": Xd, "mean": mean, "e1": e1, "e2": None}
        mean, var = self._linear_moments(Xd, params)
        e_log, e1, e2 = self._likelihood.expectations(
            data.y,
            mean,
            var,
            method=method,
            n_samples=points,
            random_state=draws,
        )
        return e_log, {"design": Xd, "mean": mean, "e1": e1, "e2": e2}

    def _recall(self, data, params, method, points):
        """The local step of these rows at these globals that a bound just computed, if any.

        A batch step's test of the ELBO (by quadrature) makes the local step
        of the next batch E-step at the same globals when the expectations
        are the bound's rule: one pass over the rows instead of two.
        """
        memo = getattr(self, "_memo", None)
        if memo is None or method != "quadrature" or points != self._bound_points:
            return None
        hit = memo.get(id(data))
        if hit is None or hit[0] is not data or hit[1] is not params:
            return None
        return hit[2]

    def _expected_stats(self, name, data, local, params):
        Xd = local["design"]
        if local["e2"] is None:
            # Böhning's bound: E2 = -A for every row, so that the precision's
            # statistics are A (kron) X^T W X, the same at every step.
            curvature = Softmax.bound_curvature(self._n_outputs)
            residual = data.weighted(local["e1"] + local["mean"] @ curvature)
            eta1 = np.asarray(Xd.T @ residual).T.ravel()
            return eta1, self._gram(data, Xd)[1]
        e1, e2 = data.weighted(local["e1"]), data.weighted(local["e2"])
        if self._n_outputs > 1:
            residual = e1 - np.einsum("nab,nb->na", e2, local["mean"])
            eta1 = np.asarray(Xd.T @ residual).T.ravel()
            return eta1, 0.5 * _block_gram(Xd, e2)
        eta1 = np.asarray(Xd.T @ (e1 - e2 * local["mean"])).ravel()
        return eta1, 0.5 * weighted_gram(Xd, e2)

    @property
    def _bound_points(self):
        return _BOUND_POINTS if self._n_outputs == 1 else PREDICTIVE_POINTS

    def _local_bound(self, data, local, params, remember=True):
        points = self._bound_points
        # Steps are batch steps in a batch fit and in an online fit of at
        # most batch_size rows (one minibatch: the engine takes batch steps).
        batch = self.learning_method == "batch" or data.shape[0] <= self.batch_size
        if (
            local is None
            and remember
            and batch
            and self._expectation_rule() == ("quadrature", points)
        ):
            # The bound's quadrature is the local step's: keep it for the
            # next E-step at these globals (``_recall``).
            e_log, local = self._rows_expectations(data, params, "quadrature", points)
            memo = getattr(self, "_memo", None)
            if memo is None:
                memo = self._memo = {}
            memo[id(data)] = (data, params, local)
            return float(np.sum(data.weighted(e_log)))
        return self._expected_log_likelihood(data, local, params, points)

    def _expected_log_likelihood(self, data, local, params, points):
        """``sum_i E_q[log p(y_i | f_i)]`` by the deterministic rule of ``points`` points.

        Under the softmax's bound, the bound on it:
        ``sum_i w_i (log p(y_i | m_i) - tr(A S_i) / 2)``, where
        ``sum_i w_i tr(A S_i) = sum_ab A_ab tr(V_ab X^T W X)`` needs no row's
        covariance ``S_i``.
        """
        Xd = local["design"] if local is not None else design_of(data, self.fit_intercept)
        if self._expectation_rule()[0] == "bound":
            _, cov, _ = self._moments(params)
            log_p, _ = self._likelihood.bound_terms(data.y, self._predictor_means(Xd, params))
            return float(np.sum(data.weighted(log_p))) - 0.5 * self._spread(data, Xd, cov)
        mean, var = self._linear_moments(Xd, params)
        e_log = self._likelihood.expected_logpdf(
            data.y, mean, var, method="quadrature", n_samples=points
        )
        return float(np.sum(data.weighted(e_log)))

    def _global_bound(self, params):
        # -KL(q || p) with the diagonal prior p = N(0, diag(v)), from the
        # factor's cached moments: (sum_j (V_jj + m_j^2) / v_j - D
        # + sum_j log v_j + log |Lambda_q|) / 2.
        loc, cov, logdet = self._moments(params)
        v = self._prior_variances(loc.size)
        kl = 0.5 * (
            np.sum((np.diagonal(cov) + loc * loc) / v) - loc.size + np.sum(np.log(v)) + logdet
        )
        return float(-max(kl, 0.0))

    def _probe_loss(self, probe, params):
        # Online step safety: the expected negative log-likelihood per row.
        # A natural-gradient mean step can jump to a single minibatch's
        # Newton point (MC-SSVI's instability, the Monte Carlo structured SVI paper, section 4.1).
        # A softmax's loss takes a rule of _PROBE_POINTS, not the ELBO's 512:
        # the test compares two losses by the same rule against a growth of
        # 25%, and with 512 points it was most of an online step's time.
        points = _BOUND_POINTS if self._n_outputs == 1 else _PROBE_POINTS
        loss = -self._expected_log_likelihood(probe, None, params, points)
        return loss / max(self._sample_count(probe), 1e-300)

    def _update_hyperparameters(self, hyper, ctx):
        if self.prior_variance != "auto" or ctx.end_of_pass:
            return False
        # Empirical Bayes for the shared weight variance (intercept excluded):
        # argmax of the ELBO is mean over weights of E[w_j^2].
        loc, cov, _ = self._moments(self.natural_params_)
        keep = ~self._intercept_mask()
        if not np.any(keep):
            return False
        second = loc[keep] ** 2 + np.diagonal(cov)[keep]
        target = float(np.mean(second))
        rho = ctx.rho
        self._prior_var = max((1.0 - rho) * self._prior_var + rho * target, 1e-12)
        return True

    def _on_params_updated(self):
        self._memo = self._grams = None  # they hold rows
        loc, cov, _ = self._moments(self.natural_params_)
        self._factorization = None  # (K d)^2 matrices, cached with the factor anyway
        blocks = loc.reshape(self._n_outputs, -1)
        n_features = blocks.shape[1] - int(self.fit_intercept)
        self.posterior_mean_ = loc.copy()
        self.posterior_covariance_ = cov.copy()
        self.coef_ = blocks[:, :n_features].copy()
        self.intercept_ = blocks[:, -1].copy() if self.fit_intercept else np.zeros(self._n_outputs)
        self.prior_variance_ = self._prior_var

    # ------------------------------------------------------------ fitting API
    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        X, y = self._check_X_y(X, y, reset=reset)
        if vocabulary is not None:  # one block of a fit on a cluster: every block's labels
            classes = vocabulary.get("classes")
        y = self._encode_targets(y, reset=reset, classes=classes)
        if reset:
            # Before the first weight is allocated: a sparse X of 10^6
            # columns would need terabytes for q(w)'s covariance.
            check_covariance_size(
                type(self).__name__,
                X.shape[1],
                self._n_outputs,
                self.fit_intercept,
                self._point_estimate,
            )
            # Whether every step of this fit is a batch step (see _expectation_rule).
            # (On a cluster's block, the fit's rows are not known: its
            # learning_method says.)
            self._batch_steps_only = not partial and (
                self._only_batch_steps(X.shape[0])
                if vocabulary is None
                else self.learning_method == "batch"
            )
        return self._rows(X, y, check_row_weights(sample_weight, X))

    def _predictive_moments(self, X):
        """Mean and variance of the linear predictor for new rows."""
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        if sp.issparse(X):
            X = X.tocsr()
        return self._linear_moments(self._design(X), self.natural_params_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
