"""Normal mean / Gamma precision model fitted by VMP and SVI (Langseth and Nielsen, "Variational inference: scalable solutions")."""

import numbers

import numpy as np
from scipy.special import digamma
from sklearn.base import OneToOneFeatureMixin, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import ModelSettings, SVIEstimator
from ..engine.data import Rows, check_row_weights
from ..expfam import Gamma, UnivariateGaussian
from ..validation import check_feature_magnitude

__all__ = ["GaussianGammaVB"]

_LOG_2PI = np.log(2.0 * np.pi)


class GaussianGammaVB(OneToOneFeatureMixin, TransformerMixin, SVIEstimator):
    """Variational Bayes for the mean and precision of Gaussian features.

    Each feature ``j`` is modelled independently::

        x_ij     ~ N(mu_j, 1 / gamma_j)
        mu_j     ~ N(mean_prior, 1 / mean_precision_prior)
        gamma_j  ~ Gamma(precision_shape_prior, rate=precision_rate_prior)

    with the mean-field posterior ``q(mu_j) q(gamma_j)``:
    ``q(mu_j) = N(mean_[j], 1 / mean_precision_[j])`` and
    ``q(gamma_j) = Gamma(precision_shape_[j], rate=precision_rate_[j])``.
    This is the variational message passing example of Langseth and Nielsen's "Variational inference: scalable solutions".  ``fit``
    with ``learning_method='batch'`` runs the VMP (coordinate ascent)
    updates until the ELBO converges; ``learning_method='online'`` and
    ``partial_fit`` take stochastic natural-gradient steps on minibatches
    through the shared engine (:mod:`skvi.engine`).  ``mu`` and ``gamma``
    are two global factors, so ``update_order`` chooses between Paquet's
    sequential and joint updates.

    The mean-field family cannot represent the posterior correlation of
    ``mu`` and ``gamma``; their marginal means are nevertheless accurate
    to ``O(1/n)`` relative to the exact posterior.

    Parameters
    ----------
    mean_prior : float or array-like of shape (n_features,), default=0.0
        Prior mean ``m0`` of ``mu``.
    mean_precision_prior : float or array-like of shape (n_features,), default=1e-3
        Prior precision ``b0 > 0`` of ``mu``.
    precision_shape_prior : float or array-like of shape (n_features,), default=1e-3
        Shape ``a0`` of the Gamma prior on ``gamma``, at least 1e-10: the
        Gamma's natural parameter ``a0 - 1`` holds smaller shapes only to
        1e-16 absolutely (1e-300 rounded to 0, an ELBO of -inf).
    precision_rate_prior : float or array-like of shape (n_features,), default=1e-3
        Rate ``c0 > 0`` of the Gamma prior on ``gamma``.
    learning_method : {'batch', 'online'}, default='batch'
        ``'batch'``: VMP on all the data.  ``'online'``: SVI over shuffled
        minibatches of ``batch_size`` rows.
    update_order : {'sequential', 'joint'}, default='sequential'
        Paquet's option (a) (update ``gamma`` then ``mu`` from fresh
        statistics) or (b) (both from one snapshot).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Posterior mean ``E[mu_j]``.
    mean_precision_ : ndarray of shape (n_features,)
        Posterior precision of ``mu_j``.
    precision_shape_ : ndarray of shape (n_features,)
        Shape of ``q(gamma_j)``.
    precision_rate_ : ndarray of shape (n_features,)
        Rate of ``q(gamma_j)``; ``E[gamma_j] = precision_shape_ / precision_rate_``.
    natural_params_ : dict
        ``{'mean': (b m, -b/2), 'precision': (-rate, shape - 1)}``.
    lower_bound_ : float
        Final ELBO, with every normalising constant: comparable with other
        libraries' values for the same data and priors.
    lower_bounds_ : list of float
        ELBO history (see :class:`skvi.engine.SVIEstimator`).
    n_iter_, n_batch_iter_, n_samples_seen_, converged_, n_rejected_steps_
        Engine history, see :class:`skvi.engine.SVIEstimator`.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : point estimates of the same two
        moments.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(loc=5.0, scale=2.0, size=(1000, 1))
    >>> vb = GaussianGammaVB().fit(X)
    >>> print(np.round(vb.mean_, 2), np.round(vb.precision_shape_ / vb.precision_rate_, 2))
    [4.91] [0.26]
    """

    _parameter_constraints = {
        "mean_prior": [numbers.Real, "array-like"],
        "mean_precision_prior": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "precision_shape_prior": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "precision_rate_prior": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
    }

    # The precision first: from the vague prior, E[gamma] = a0 / b0 = 1
    # whatever the data's scale, and a mean step taken with it makes q(mu)
    # far too confident; its weight then lingers in the later steps of a
    # stream (docs/benchmarks.md, "The engine's constants").  Batch fits
    # reach the same fixed point in either order.
    _settings = ModelSettings(
        {"precision": Gamma, "mean": UnivariateGaussian},
        local_depends_on_globals=False,
        parallel=True,
    )

    def __init__(
        self,
        *,
        mean_prior=0.0,
        mean_precision_prior=1e-3,
        precision_shape_prior=1e-3,
        precision_rate_prior=1e-3,
        learning_method="batch",
        batch_size=128,
        max_iter=100,
        tol=1e-8,
        learning_offset=10.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.mean_prior = mean_prior
        self.mean_precision_prior = mean_precision_prior
        self.precision_shape_prior = precision_shape_prior
        self.precision_rate_prior = precision_rate_prior
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
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------ public API
    def transform(self, X):
        """Standardise X with the posterior means of ``mu`` and ``gamma``.

        Returns ``(X - E[mu]) * sqrt(E[gamma])``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to standardise.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            Standardised data, with the dtype of X (float32 stays float32).
        """
        X = self._check_fitted_input(X)
        scale = np.sqrt(self._expected_precision())
        return ((X - self.mean_) * scale).astype(X.dtype, copy=False)

    def inverse_transform(self, X):
        """Undo :meth:`transform`: ``X / sqrt(E[gamma]) + E[mu]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardised data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            Data on the original scale.
        """
        X = self._check_fitted_input(X)
        scale = np.sqrt(self._expected_precision())
        return (X / scale + self.mean_).astype(X.dtype, copy=False)

    def score_samples(self, X):
        """Expected log-likelihood of each sample under the posterior.

        Returns ``E_q[log p(x_i | mu, gamma)]`` summed over features, which
        has the closed form ``sum_j -log(2 pi)/2 + E[log gamma_j]/2 -
        E[gamma_j] ((x_ij - E[mu_j])**2 + Var[mu_j]) / 2``.  By Jensen's
        inequality it is a lower bound on the log posterior predictive
        density ``log E_q[p(x_i | mu, gamma)]``; it penalises posterior
        uncertainty about ``mu`` and ``gamma``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Expected log-likelihood of each row.
        """
        X = self._check_fitted_input(X)
        e_gamma = self._expected_precision()
        e_log_gamma = digamma(self.precision_shape_) - np.log(self.precision_rate_)
        sq = (X - self.mean_) ** 2 + 1.0 / self.mean_precision_
        return np.sum(0.5 * (e_log_gamma - _LOG_2PI) - 0.5 * e_gamma * sq, axis=1)

    def score(self, X, y=None):
        """Mean expected log-likelihood per sample (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to score.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``score_samples(X).mean()``.
        """
        return float(np.mean(self.score_samples(X)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _check_fitted_input(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return check_feature_magnitude(X, type(self).__name__)

    def _expected_precision(self):
        """E[gamma_j] under q."""
        return self.precision_shape_ / self.precision_rate_

    # ------------------------------------------------------------ model hooks
    def _rows(self, X, reset, sample_weight=None):
        X = validate_data(self, X, reset=reset, dtype=[np.float64, np.float32])
        check_feature_magnitude(X, type(self).__name__)
        if reset:
            self._priors = self._check_priors(X.shape[1])
        return Rows(X, None, check_row_weights(sample_weight, X))

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return self._rows(X, reset, sample_weight)

    def _check_priors(self, n_features):
        priors = {}
        for name in (
            "mean_prior",
            "mean_precision_prior",
            "precision_shape_prior",
            "precision_rate_prior",
        ):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.ndim > 1 or (value.ndim == 1 and value.shape[0] != n_features):
                raise ValueError(
                    f"{name} must be a scalar or have shape ({n_features},), "
                    f"got shape {value.shape}."
                )
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{name} must be finite, got {value}.")
            if name != "mean_prior" and np.any(value <= 0):
                raise ValueError(f"{name} must be positive, got {value}.")
            if name == "precision_shape_prior" and np.any(value < 1e-10):
                raise ValueError(
                    f"precision_shape_prior must be at least 1e-10, got {value}: the Gamma's "
                    "natural parameter a0 - 1 holds smaller shapes only to 1e-16 absolutely "
                    "(below 1.1e-16 they round to 0 and the ELBO is -inf)."
                )
            priors[name] = np.broadcast_to(value, (n_features,)).copy()
        return priors

    def _prior_natural(self):
        p = self._priors
        b0 = p["mean_precision_prior"]
        return {
            "mean": (b0 * p["mean_prior"], -0.5 * b0),
            "precision": (-p["precision_rate_prior"], p["precision_shape_prior"] - 1.0),
        }

    def _initialize_globals(self, X, random_state, summary):
        # The data statistics are accumulated about a fixed shift (the mean
        # of the first data seen) so that sum((x - mu)**2) does not suffer
        # cancellation when |mean| >> standard deviation.
        self._shift = np.average(np.asarray(X.X, dtype=np.float64), axis=0, weights=X.weight)
        return self._prior_natural()

    def _local_step(self, X, params):
        # No local latent variables: the "E-step" summarises the minibatch
        # (weighted sums: a row of weight 2 is the row twice).
        Y = np.asarray(X.X, dtype=np.float64) - self._shift
        WY = X.weighted(Y)
        return X.count(), WY.sum(axis=0), np.einsum("ij,ij->j", WY, Y)

    def _expected_sq_residual(self, summary, params):
        """sum_i E[(x_i - mu)^2] per feature, from shifted statistics."""
        n, s1, s2 = summary
        q_mu = params["mean"].distribution
        d = q_mu.loc - self._shift
        return s2 - 2.0 * s1 * d + n * (d * d + q_mu.variance)

    def _expected_stats(self, name, X, local, params):
        n, s1, _ = local
        if name == "mean":
            e_gamma = params["precision"].distribution.mean()
            total = s1 + n * self._shift
            return e_gamma * total, -0.5 * e_gamma * n
        residual = self._expected_sq_residual(local, params)
        return -0.5 * residual, np.full_like(residual, 0.5 * n)

    def _local_bound(self, X, local, params):
        if local is None:
            local = self._local_step(X, params)
        n = local[0]
        q_gamma = params["precision"].distribution
        residual = self._expected_sq_residual(local, params)
        return float(
            np.sum(0.5 * n * (q_gamma.expected_log() - _LOG_2PI) - 0.5 * q_gamma.mean() * residual)
        )

    def _global_bound(self, params):
        prior = self._prior_natural()
        kl = params["mean"].distribution.kl(
            UnivariateGaussian.from_natural(*prior["mean"])
        ) + params["precision"].distribution.kl(Gamma.from_natural(*prior["precision"]))
        return float(-np.sum(kl))

    def _on_params_updated(self):
        q_mu = self.natural_params_["mean"].distribution
        q_gamma = self.natural_params_["precision"].distribution
        self.mean_ = q_mu.loc
        self.mean_precision_ = q_mu.precision
        self.precision_shape_ = q_gamma.shape
        self.precision_rate_ = q_gamma.rate
