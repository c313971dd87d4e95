"""Sparse Gaussian-process regression: Titsias's bound, the optimal bound, FITC and V2."""

import numbers

import numpy as np
import scipy.linalg as sla
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ...engine.data import Rows, check_row_weights
from ...engine.step import factor_target, update_factor
from ...engine.statistics import DataMoments
from ...validation import check_feature_magnitude
from .._design import row_quadratic
from .base import _SparseGP
from .hyperparameters import _LOG_2PI, _CollapsedHyperparameters

__all__ = ["SVISparseGPRegressor"]

#: Largest number of rows of the 'optimal' objective, which factorises N x N.
MAX_OPTIMAL_ROWS = 5000


class _TargetMoments(DataMoments):
    """The target's moments as the vocabulary of a fit on a cluster, merged over its blocks.

    The cluster hands each block the merged vocabulary's ``values``: here the
    moments themselves.
    """

    __slots__ = ()

    def __add__(self, other):
        total = super().__add__(other)
        if total is NotImplemented:
            return total
        return _TargetMoments(total.n_rows, total.total, total.mean, total.scatter)

    @property
    def values(self):
        return self


def _gauss_logpdf(y, mean, var):
    return -0.5 * (_LOG_2PI + np.log(var) + (y - mean) ** 2 / var)


class SVISparseGPRegressor(RegressorMixin, _CollapsedHyperparameters, _SparseGP):
    """Sparse Gaussian-process regression with inducing points, batch or by SVI.

    ``objective`` chooses what ``q(u)`` (and, with ``optimizer``, the kernel
    hyperparameters and the noise) maximise; ``N`` rows, ``M`` inducing
    points:

    - ``'titsias'``: the variational bound of Titsias (the standard bound of
      "Monte Carlo structured SVI", eq. 3); its collapsed value is
      ``log N(y; 0, Q + s2 I) - tr(K - Q) / (2 s2)``; by SVI it is the
      stochastic variational GP of Hensman et al.  O(N M^2).
    - ``'optimal'``: the bound with the conditional ``p(f | u)`` kept whole
      (eq. 6); its optimum is the exact GP's log marginal likelihood and
      ``q(u)`` the exact posterior of ``u``.  O(N^3), batch only, at most
      ``MAX_OPTIMAL_ROWS`` rows.
    - ``'fitc'`` (V1): the per-row conditional variances added to the noise;
      at its optimum, the FITC log marginal likelihood.  Not a bound.
    - ``'predictive'`` (V2): the log predictive density of the training rows,
      ``sum_i log N(y_i; phi_i . m, c_i + s2 + phi_i^T V phi_i)``.  Not a
      bound; its natural-gradient target can be indefinite and is projected
      onto the positive-definite cone (eigenvalues clipped).

    With a Gaussian likelihood the first three have targets that do not
    depend on ``q``: one batch step with ``rho = 1`` is their optimum.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel, default=None
        Covariance function; None is ``ConstantKernel() * RBF()``.  Its
        hyperparameters (``theta``, in log space) are learned with
        ``optimizer`` within ``kernel.bounds``, or kept.
    noise_variance : float, default=1.0
        Initial (or, with ``optimizer=None``, fixed) noise variance ``s2``;
        with ``normalize_y``, of the normalised target (as scikit-learn's
        ``alpha``).
    n_inducing : int, default=100
        Number of inducing points when ``inducing_points`` is None: k-means
        centres of (at most 20,000 rows of) the first data seen, or all the
        distinct rows when there are fewer.
    inducing_points : array-like of shape (n_inducing, n_features), default=None
        Given inducing inputs (kept fixed).
    objective : {'titsias', 'optimal', 'fitc', 'predictive'}, default='titsias'
        See above.
    optimizer : 'fmin_l_bfgs_b' or None, default='fmin_l_bfgs_b'
        In batch ``fit``, L-BFGS on the collapsed objective over the
        kernel's ``theta`` and ``log s2``, with exact gradients (finite
        differences for ``'optimal'``), before ``q(u)`` is fitted.  ``'predictive'`` has no collapsed form and
        takes the FITC optimum: maximising its own objective drives the
        noise towards zero (to 3e-6 on 500 rows of noise variance 0.04, with
        ``q``'s covariance taking its place).  Online, a gradient step on the same parameters
        after every accepted step (Hensman et al.), of size ``rho_t`` times
        ``hyperparameter_learning_rate``.  None keeps them.
    n_restarts_optimizer : int, default=0
        Further L-BFGS runs from ``theta`` drawn log-uniformly within the
        bounds; the best is kept.
    normalize_y : bool, default=True
        Fit the target centred and scaled to unit variance (with the row
        weights; in ``partial_fit``, by the first call's rows), and
        transform the predictions back, as scikit-learn's
        :class:`~sklearn.gaussian_process.GaussianProcessRegressor` does:
        the model's zero prior mean and unit starting kernel and noise then
        suit any target.  ``kernel``, ``noise_variance``, ``kernel_``,
        ``q_mean_``, ``q_covariance_`` and the objective's values
        (``lower_bounds_``) are those of the normalised target;
        ``noise_variance_`` and every prediction are in the units of ``y``.
        On standardised targets it changes nothing.  False fits ``y`` as it
        is: a target far from zero or of a spread far from 1 then needs a
        kernel and noise of its scale, else the fit may stay flat (which
        warns).
    hyperparameter_learning_rate : float, default=1.0
        Online hyperparameter step per unit ``rho_t``, on the per-row
        gradient of the objective in log space.  At 0.01 the online SVGP's
        hyperparameters barely moved on California housing (test NLL 0.776
        against 0.688 at 1.0, ``benchmarks/sparse_gp.py``).
    learning_method : {'batch', 'online'}, default='batch'
        ``'batch'``: natural-gradient steps on all rows (one step for the
        conjugate objectives).  ``'online'``: SVI on shuffled minibatches;
        a fit whose rows fit in one minibatch (``batch_size >= n``) takes
        batch steps, and learns the hyperparameters as a batch fit does.
    batch_size : int, default=1000
        Largest number of rows per online minibatch.

    Attributes
    ----------
    kernel_ : Kernel
        The kernel with the fitted hyperparameters.
    noise_variance_ : float
        The fitted noise variance, in the units of ``y`` (with
        ``normalize_y``, the normalised target's times ``y``'s variance).
    inducing_points_ : ndarray of shape (n_inducing, n_features)
        The inducing inputs ``Z``.
    jitter_ : float
        The relative jitter ``j`` of ``K_uu + j mean(diag K_uu) I``: the
        smallest of ``JITTERS`` with which it factorises well (1e-10 unless
        the inducing points nearly coincide).
    q_mean_ : ndarray of shape (n_inducing,)
        Mean of ``q(u)`` (not whitened; of the normalised target with
        ``normalize_y``).
    q_covariance_ : ndarray of shape (n_inducing, n_inducing)
        Covariance of ``q(u)`` (idem).
    natural_params_, lower_bounds_, lower_bound_, n_iter_, n_batch_iter_, \
n_samples_seen_, converged_, n_rejected_steps_
        Engine history (the objective's values), see
        :class:`skvi.engine.SVIEstimator`.  For ``'fitc'`` and
        ``'predictive'`` the values are not lower bounds.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : the exact GP.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skvi import SVISparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, size=(200, 1))
    >>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> gp = SVISparseGPRegressor(kernel=RBF(0.5), noise_variance=0.01, n_inducing=30,
    ...                           optimizer=None, random_state=0).fit(X, y)
    >>> exact = GaussianProcessRegressor(RBF(0.5), alpha=0.01, optimizer=None,
    ...                                  normalize_y=True).fit(X, y)

    30 inducing points give the exact GP's predictions and, nearly, its log
    marginal likelihood (both of the normalised target, ``normalize_y``):

    >>> X_new = np.array([[0.0], [1.0]])
    >>> bool(np.allclose(gp.predict(X_new), exact.predict(X_new), atol=1e-5))
    True
    >>> round(gp.lower_bound_, 2), round(float(exact.log_marginal_likelihood_value_), 2)
    (76.91, 76.91)
    """

    _parameter_constraints = {
        **_SparseGP._parameter_constraints,
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither")],
        "objective": [StrOptions({"titsias", "optimal", "fitc", "predictive"})],
        "n_restarts_optimizer": [Interval(numbers.Integral, 0, None, closed="left")],
        "normalize_y": ["boolean"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        noise_variance=1.0,
        n_inducing=100,
        inducing_points=None,
        objective="titsias",
        optimizer="fmin_l_bfgs_b",
        n_restarts_optimizer=0,
        normalize_y=True,
        hyperparameter_learning_rate=1.0,
        learning_method="batch",
        batch_size=1000,
        max_iter=100,
        tol=1e-8,
        learning_offset=1.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.noise_variance = noise_variance
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.objective = objective
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.normalize_y = normalize_y
        self.hyperparameter_learning_rate = hyperparameter_learning_rate
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
        self.verbose = verbose

    # ------------------------------------------------------------ public API
    def predict(self, X, return_std=False, return_cov=False, include_noise=False):
        """Predictive mean of f (and its standard deviation or covariance).

        As :class:`~sklearn.gaussian_process.GaussianProcessRegressor`: the
        latent function, by default without the noise:
        ``N(phi . m, k** - q** + phi^T V phi)``, in the units of ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query inputs.
        return_std : bool, default=False
            Also return the standard deviation.
        return_cov : bool, default=False
            Also return the joint covariance.
        include_noise : bool, default=False
            Whether the standard deviation includes the observation noise:
            True adds ``noise_variance_`` to the variance of f (to the
            diagonal of the covariance with ``return_cov``), for the
            predictive distribution of a new observation of ``y``.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Predictive mean of f.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation of f (of a new observation with
            ``include_noise``); only with ``return_std``.
        cov : ndarray of shape (n_samples, n_samples)
            Predictive covariance of f (of new observations with
            ``include_noise``); only with ``return_cov``.
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std and return_cov can be requested.")
        if not isinstance(include_noise, (bool, np.bool_)):
            raise ValueError(f"include_noise must be True or False, got {include_noise!r}.")
        X, phi, mean, var = self._latent_moments(X)
        offset, scale = self._y_train_mean, self._y_train_std
        mean = scale * mean + offset
        # The noise of the normalised target: noise_variance_ / scale**2.
        noise = self._noise if include_noise else 0.0
        if return_cov:
            cov = self._q_moments()[1]
            cov = self.kernel_(X) - phi @ phi.T + phi @ cov @ phi.T
            cov[np.diag_indices_from(cov)] += noise
            return mean, scale * scale * cov
        if return_std:
            return mean, scale * np.sqrt(var + noise)
        return mean

    def log_predictive_density(self, X, y):
        """``log N(y_i; E[f_i], Var[f_i] + s2)`` of every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log predictive density of each row (noise included).
        """
        mean, std = self.predict(X, return_std=True)
        y = np.asarray(y, dtype=np.float64)
        return _gauss_logpdf(y, mean, std**2 + self.noise_variance_)

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draws of the latent function at X from the posterior predictive.

        Parameters
        ----------
        X : array-like of shape (n_points, n_features)
            Query inputs.
        n_samples : int, default=1
            Number of draws.
        random_state : int, RandomState or None, default=0
            Seeds the draws.

        Returns
        -------
        ndarray of shape (n_points, n_samples)
            One draw of f per column.
        """
        from sklearn.utils import check_random_state

        mean, cov = self.predict(X, return_cov=True)
        rng = check_random_state(random_state)
        # cov = V diag(w) V^T, f = mean + V sqrt(w) z: the eigendecomposition
        # tolerates the rank deficiency of a covariance of nearby points
        # (eigenvalues rounded below zero are taken as zero).
        w, V = np.linalg.eigh(cov)
        z = rng.standard_normal((mean.shape[0], n_samples))
        return mean[:, None] + (V * np.sqrt(np.maximum(w, 0.0))) @ z

    def score(self, X, y, sample_weight=None):
        """R^2 of :meth:`predict` (as scikit-learn's regressors).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            True targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        float
            R^2 (1 is a perfect fit).
        """
        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))

    # ----------------------------------------------------------- objectives
    def _rows(self, X, y, reset, sample_weight, classes=None):
        X, y = validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)
        check_feature_magnitude(X, type(self).__name__)
        weight = check_row_weights(sample_weight, X)
        if weight is not None and self.objective == "optimal":
            raise ValueError("objective='optimal' takes no sample_weight.")
        return Rows(X, np.asarray(y, dtype=np.float64), weight)

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        data = super()._prepare_data(X, y, sample_weight, reset, classes, vocabulary, partial)
        if reset:
            moments = None if vocabulary is None else vocabulary.get("y")
            mean, std = self._target_scale(data, moments)
            # A constant target (to rounding) is centred only, as
            # scikit-learn's _handle_zeros_in_scale does; relative to the
            # mean, so that the rounding of a large constant is not blown up
            # to unit variance.
            spread = std > 10.0 * np.finfo(np.float64).eps * max(1.0, abs(mean))
            if self.normalize_y:
                self._y_train_mean, self._y_train_std = mean, std if spread else 1.0
            else:
                self._y_train_mean, self._y_train_std = 0.0, 1.0
            # Without normalize_y, the end of the fit tells when it stayed
            # flat on a target with spread (_on_params_updated).
            self._flat_check = std if spread and not self.normalize_y else None
        if self._y_train_mean == 0.0 and self._y_train_std == 1.0:
            return data
        return Rows(data.X, (data.y - self._y_train_mean) / self._y_train_std, data.weight)

    def _target_scale(self, data, moments=None):
        """The target's (weighted) mean and standard deviation.

        ``moments``: those of all the blocks of a fit on a cluster.
        """
        if moments is None:
            moments = DataMoments.of(data.y[:, None], data.weight, full=False)
        if not moments.total > 0:
            return 0.0, 0.0
        mean = float(moments.mean[0])
        return mean, float(np.sqrt(max(float(moments.covariance(diagonal=True)[0]), 0.0)))

    def _data_vocabulary(self, X, y, sample_weight):
        # On a cluster: the target's moments over every block, so that each
        # block is normalised as a fit in memory normalises all the rows.
        if y is None:
            return None
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        weight = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        moments = DataMoments.of(y[:, None], weight, full=False)
        return {"y": _TargetMoments(moments.n_rows, moments.total, moments.mean, moments.scatter)}

    def _set_noise(self, noise):
        """The noise variance of the normalised target, and ``noise_variance_`` in y's units."""
        self._noise = float(noise)
        self.noise_variance_ = self._noise * self._y_train_std**2

    def _hyper_vector(self):
        return np.append(self._theta, np.log(self._noise))

    def _hyper_bounds(self):
        return np.vstack([self._kernel_bounds, [np.log(1e-6), np.log(1e6)]])

    def _set_hyper_vector(self, params):
        super()._set_hyper_vector(params)
        self._set_noise(np.exp(params[-1]))

    def _row_partials(self, data, mean, s, c, extra, objective=None):
        objective = self.objective if objective is None else objective
        noise = float(np.exp(extra[0]))
        y = data.y
        r = y - mean
        if objective == "titsias":
            value = _gauss_logpdf(y, mean, noise) - (s + c) / (2.0 * noise)
            d_mean, d_s = r / noise, np.full_like(y, -0.5 / noise)
            d_c = d_s
            d_noise = (r * r + s + c) / (2.0 * noise * noise) - 0.5 / noise
        elif objective == "fitc":
            b = c + noise
            value = _gauss_logpdf(y, mean, b) - s / (2.0 * b)
            d_mean, d_s = r / b, -0.5 / b
            d_c = d_noise = (r * r + s) / (2.0 * b * b) - 0.5 / b
        else:  # predictive
            total = c + noise + s
            value = _gauss_logpdf(y, mean, total)
            d_mean = r / total
            d_s = d_c = d_noise = (r * r / total - 1.0) / (2.0 * total)
        return value, d_mean, d_s, d_c, (noise * d_noise)[:, None]

    def _row_terms(self, data, phi, kdiag, loc, cov):
        """Per-row objective values, the mean of f and the derivatives E1, E2 in it.

        ``E2 = 2 d/ds``: for the Gaussian rows the objective depends on
        ``V`` through ``s = phi^T V phi`` as on the mean's curvature (for V2,
        Price's theorem).
        """
        mean = phi @ loc
        c = np.maximum(kdiag - np.sum(phi * phi, axis=1), 0.0)
        value, d_mean, d_s, _, _ = self._row_partials(
            data, mean, row_quadratic(phi, cov), c, [np.log(self._noise)]
        )
        return value, mean, d_mean, 2.0 * d_s

    def _optimal_terms(self, X, y, phi, q=None, kernel=None, noise=None):
        """Cholesky factor of ``B = K - Q + s2 I`` and, given q, the data term."""
        kernel = self.kernel_ if kernel is None else kernel
        noise = self._noise if noise is None else noise
        B = kernel(X) - phi @ phi.T
        B[np.diag_indices_from(B)] += noise
        chol = sla.cho_factor(B, lower=True)
        if q is None:
            return chol, None
        r = y - phi @ q.loc
        logdet = 2.0 * np.sum(np.log(np.diag(chol[0])))
        trace = np.sum(sla.cho_solve(chol, phi) * (phi @ q.covariance))
        value = -0.5 * (y.size * _LOG_2PI + logdet + r @ sla.cho_solve(chol, r) + trace)
        return chol, value

    # ----------------------------------------------------------- model hooks
    @property
    def _settings(self):
        # V2's projected fixed point can overshoot: a batch step must not
        # lower the objective, tested to finite-difference stationarity
        # (tests/test_sparse_gp.py); its rejected steps come in runs, so a
        # halving persists (docs/sparse_gp_benchmark.md).  The other objectives reach
        # their optimum in one step.
        if self.objective == "predictive":
            return self._settings_for(batch_steps="no_decrease", tolerance={"elbo": 1e-12})
        return self._settings_for()

    def _initialize_globals(self, data, random_state, summary, ctx=None):
        if self.objective == "optimal" and data.shape[0] > MAX_OPTIMAL_ROWS:
            raise ValueError(
                f"objective='optimal' factorises an N x N matrix; N = {data.shape[0]} is above "
                f"MAX_OPTIMAL_ROWS = {MAX_OPTIMAL_ROWS}. Use 'titsias', 'fitc' or 'predictive'."
            )
        if self.objective == "optimal" and self.learning_method == "online":
            raise ValueError("objective='optimal' does not decompose over rows: use batch fit.")
        kernel = self._start(data, random_state, ctx)
        noise = float(self.noise_variance)
        if self.optimizer is not None and self._hyperparameters_in_batch():
            kernel, noise = self._optimize_hyperparameters(data, kernel, noise, random_state)
        self._set_kernel(kernel)
        self._set_noise(noise)
        return self._prior_natural()

    def _local_step(self, data, params):
        phi, kdiag = self._features(data.X)
        local = {"phi": phi, "kdiag": kdiag, "q": self._q_moments(params)}
        if self.objective == "optimal":
            local["chol"] = self._optimal_terms(data.X, data.y, phi)[0]
        return local

    def _expected_stats(self, name, data, local, params):
        phi = local["phi"]
        if self.objective == "optimal":
            solved = sla.cho_solve(local["chol"], phi)
            return solved.T @ data.y, -0.5 * phi.T @ solved
        _, mean, e1, e2 = self._row_terms(data, phi, local["kdiag"], *self._q_moments(params))
        e1, e2 = data.weighted(e1), data.weighted(e2)
        return phi.T @ (e1 - e2 * mean), 0.5 * (phi * e2[:, None]).T @ phi

    def _update_factor(self, name, current, stats, ctx):
        target = (
            None if self.objective != "predictive" else self._clipped_target(current, stats, ctx)
        )
        return update_factor(self, name, current, stats, ctx, target=target)

    def _clipped_target(self, current, stats, ctx):
        """The predictive objective's target of the inducing outputs, its precision clipped."""
        eta1, eta2 = factor_target("inducing", stats, ctx)
        # V2's precision target sum (1/s - r^2/s^2) phi phi^T + I can be
        # indefinite: clip its eigenvalues (the prior's precision is 1, so
        # a floor of 1e-6 keeps q proper without hiding the data), and keep
        # the gradient in the mean: the target mean is then a Newton step
        # m + P^-1 grad with the projected P, an ascent direction.
        precision = -2.0 * eta2
        mean = np.linalg.solve(-2.0 * current[1], current[0])  # current: natural parameters
        grad = eta1 - precision @ mean
        values, vectors = np.linalg.eigh(precision)
        clipped = (vectors * np.maximum(values, 1e-6)) @ vectors.T
        return clipped @ mean + grad, -0.5 * clipped

    def _on_params_updated(self):
        super()._on_params_updated()
        spread = getattr(self, "_flat_check", None)
        if spread is None or self.q_mean_.size < 2:
            return
        # E[f] at the inducing points varies by a thousandth of y's standard
        # deviation or less: the fit explains none of y's variation.
        self._flat_check = None  # once per fit
        if np.ptp(self.q_mean_) < 1e-3 * spread:
            self._warn(
                f"{type(self).__name__}: the fit is flat (its mean varies by less than 0.1% of "
                f"y's standard deviation, {spread:.4g}) with normalize_y=False: the prior "
                "mean 0 and the starting kernel and noise_variance of scale 1 may not suit "
                "this target. Unless y is noise, pass normalize_y=True, or a kernel and "
                "noise_variance of y's scale.",
                ConvergenceWarning,
            )

    def _local_bound(self, data, local, params):
        phi, kdiag = (local["phi"], local["kdiag"]) if local else self._features(data.X)
        q = params["inducing"].distribution
        if self.objective == "optimal":
            return float(self._optimal_terms(data.X, data.y, phi, q)[1])
        value = self._row_terms(data, phi, kdiag, *self._q_moments(params))[0]
        return float(np.sum(data.weighted(value)))
