"""The Bayesian Gaussian mixture estimator: parameters, public methods and engine hooks.

What the covariance type changes lives in its strategy
(:mod:`~skvi.models.mixture.wishart`, :mod:`~skvi.models.mixture.gamma`), chosen
once from ``covariance_type`` by ``_covariance``.
"""

import numbers

import numpy as np
from scipy import special
from sklearn.base import DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import ModelSettings, DataMoments, SVIEstimator
from ...engine.data import Rows, check_row_weights
from ...expfam import Dirichlet
from ...validation import check_feature_magnitude
from . import start
from .gamma import DiagonalCovariance, SphericalCovariance
from .priors import resolve_priors
from .wishart import FullCovariance, TiedCovariance

__all__ = ["SVIBayesianGaussianMixture"]

_LOG_2PI = np.log(2.0 * np.pi)
#: Values (rows x components x features) of the temporaries of one block of
#: the E-step: 2**20 doubles, 8 MiB.
_BLOCK_VALUES = 1 << 20


#: The global factors: the weights' Dirichlet and the components' Normal-Wishart (or -Gamma).
_FACTORS = ("weights", "components")

#: The strategy of each covariance type (stateless: shared by every estimator).
_COVARIANCE_TYPES = {
    form.name: form
    for form in (FullCovariance(), TiedCovariance(), DiagonalCovariance(), SphericalCovariance())
}


def _softmax(log_rho):
    """Rows of ``exp(log_rho)`` normalised, and their logarithms."""
    log_resp = log_rho - log_rho.max(axis=1, keepdims=True)
    resp = np.exp(log_resp)
    total = resp.sum(axis=1, keepdims=True)
    resp /= total
    log_resp -= np.log(total)
    return resp, log_resp


class SVIBayesianGaussianMixture(DensityMixin, SVIEstimator):
    """Variational Bayesian Gaussian mixture, batch or stochastic (SVI).

    The model and the variational family are those of scikit-learn's
    :class:`~sklearn.mixture.BayesianGaussianMixture` (Bishop, "Pattern
    recognition and machine learning", section 10.2; Blei and Jordan,
    "Variational inference for Dirichlet process mixtures")::

        pi                ~ Dirichlet(alpha0 / K)  or  stick-breaking v_k ~ Beta(1, alpha0)
        (mu_k, Lambda_k)  ~ Normal-Wishart(m0, beta0, W0, nu0)
        z_n               ~ Categorical(pi)
        x_n | z_n = k     ~ N(mu_k, Lambda_k^-1)

    with the mean-field posterior ``q(pi) q(mu, Lambda) prod_n q(z_n)``.
    Every global factor is conjugate, so the natural-gradient target of a
    minibatch S is ``prior + N / |S| * (N_k, sum r x, sum r x x^T)`` and
    ``learning_method='batch'`` (rho = 1, S = all rows) is exactly
    scikit-learn's EM: its ELBO never decreases.  ``'online'`` and
    ``partial_fit`` are stochastic variational inference (Hoffman, Blei,
    Wang and Paisley, "Stochastic variational inference"): minibatch steps
    ``lambda <- (1 - rho_t) lambda + rho_t lambda_hat``, for data sets that
    are large or arrive as a stream.

    Differences from scikit-learn, and why:

    - ``learning_method`` defaults to ``'batch'``, so that ``fit`` gives
      scikit-learn's answer; choose ``'online'`` when one pass of EM is
      slow (a million rows or more), or ``partial_fit`` for a stream.
    - ``tol`` bounds the change of the ELBO *per sample* between passes,
      default 1e-6 (scikit-learn: 1e-3 on its total lower bound, which is
      1e-6 per sample for 1,000 samples), so that a fit stops at the same
      point whatever the number of rows.  A looser per-sample tolerance
      stops early: the Dirichlet process prior switches unneeded
      components off slowly, while the ELBO changes little per pass.
    - ``lower_bound_`` is the exact ELBO, constants included (scikit-learn
      drops the terms that do not change during its fit).
    - ``covariance_type='full'`` is scikit-learn's posterior.  For the
      others, skvi takes the exact coordinate-ascent update of the model
      the covariance type states, where scikit-learn departs from it:
      ``'diag'`` and ``'spherical'`` precisions are Gamma factors, so
      ``E[log lambda]`` is the Gamma's ``digamma(a) - log(b)`` (scikit-learn
      uses the ``d``-dimensional Wishart's ``E[log|Lambda|]``; the two
      agree for one feature); the ``'spherical'`` factor counts each of the
      ``d`` coordinates of a sample once (shape ``d * nu / 2``); and
      ``'tied'`` shares one Wishart among the components with
      ``nu0 + N`` degrees of freedom (scikit-learn's tied update uses
      ``nu0 + N / K`` and divides the data's scatter by ``K``; the two agree
      for one component).  Fitted attributes keep scikit-learn's meaning
      (``covariances_`` is ``E[Lambda]^-1``, ``degrees_of_freedom_`` is
      ``nu``, for 'spherical' ``2 a / d``).
    - ``reg_covar`` is added to every sample's outer product ``x x^T``, as
      scikit-learn adds it to the covariances it estimates; the E-step and
      the ELBO count it too (a term ``-reg_covar tr(E[Lambda_k]) / 2``), so
      that the batch steps remain coordinate ascent.
    - ``score_samples`` is the posterior predictive density by default (a
      mixture of Student-t densities, Bishop eq. 10.81), see ``density``.

    ``sample_weight`` of ``fit`` and ``partial_fit`` are non-negative
    frequency weights: a sample of weight 2 counts as the sample twice (in
    the responsibilities' statistics ``N_k``, ``sum r x`` and ``sum r x
    x^T``, in the ELBO and in ``n_samples_seen_``, hence in ``N / |S|`` and
    in the tolerance per sample), and a sample of weight 0 is ignored.  The
    default ``mean_prior`` and ``covariance_prior`` are the weighted mean and
    covariance (``ddof=1`` on the weight sum, which must then exceed 1).
    The start counts the weights too: 'kmeans' is scikit-learn's ``KMeans``
    with ``sample_weight``, 'k-means++' and 'random_from_data' draw their
    seeds with probability proportional to weight (a seed is one sample, as
    one copy of a repeated row), and an online start draws its subsample so
    (see ``init_params``).  The k-means++ seeding draws differently for
    weighted and repeated rows: it inverts the cumulative weights of the
    rows in their order, so another order of the rows (or rounding at a
    draw's bound) picks other seeds, and the online subsample draws rows,
    not copies.  A weighted fit therefore equals the fit on the rows
    repeated by weight (up to rounding) when the start does not depend on
    these draws: a ``warm_start`` from a given posterior, or k-means
    reaching the same clustering from any seeds.  On a cluster the start's
    rows are drawn uniformly over the rows (each with its weight): a
    ``warm_start`` from a fit on a weighted sample avoids a start that
    misses a few heavy rows.

    Parameters
    ----------
    n_components : int, default=1
        Number of components ``K`` (an upper bound with the Dirichlet
        process prior, which switches unneeded components off).
    covariance_type : {'full', 'tied', 'diag', 'spherical'}, default='full'
        Form of the components' precisions: full matrices, one matrix
        shared by all components, diagonal matrices (one Gamma factor per
        feature), or one Gamma-distributed scalar per component.
    tol : float, default=1e-6
        ``fit`` stops when the ELBO per sample changes less than this
        between passes.
    reg_covar : float, default=1e-6
        Added to the diagonal of every sample's outer product, keeping the
        covariances positive definite.
    max_iter : int, default=100
        Maximum number of passes of ``fit``.
    n_init : int, default=1
        Number of initialisations; the fit with the highest ELBO is kept.
    init_params : {'kmeans', 'k-means++', 'random', 'random_from_data'}, \
default='kmeans'
        How the first responsibilities are drawn (as in scikit-learn).  An
        online fit, and the first ``partial_fit`` call, initialise from a
        random subsample of at most ``max(5000, 50 * n_components *
        n_features)`` rows ('kmeans': the best of 5 k-means runs on it,
        which made online fits of 10^5 rows land closer to the batch
        optimum).  With ``sample_weight`` the subsample is as many draws
        with replacement, each with probability proportional to weight, a
        row's draws counted as its weight.
    weight_concentration_prior_type : {'dirichlet_process', \
'dirichlet_distribution'}, default='dirichlet_process'
        Stick-breaking (a truncated Dirichlet process) or a finite
        Dirichlet prior on the weights.
    weight_concentration_prior : float or None, default=None
        ``alpha0``, at least 1e-10 (the Dirichlet's natural parameter
        ``alpha - 1`` holds smaller values only to 1e-16 absolutely; below
        1.1e-16 they round to zero); None means ``1 / n_components``.
    mean_precision_prior : float or None, default=None
        ``beta0``; None means 1.
    mean_prior : array-like of shape (n_features,) or None, default=None
        ``m0``; None means the mean of X.
    degrees_of_freedom_prior : float or None, default=None
        ``nu0``, above ``n_features - 1``; None means ``n_features``.
    covariance_prior : float or array-like, default=None
        ``W0^-1`` (shape (d, d) for 'full' and 'tied', (d,) for 'diag', a
        float for 'spherical'); None means the empirical covariance of X
        (its variances for 'diag', their mean for 'spherical'), plus
        ``reg_covar`` on its diagonal where it is singular (fewer samples
        than features, a constant feature): scikit-learn keeps the singular
        prior and adds ``reg_covar`` to the covariances it estimates.
    density : {'predictive', 'plug-in', 'bound'}, default='predictive'
        What ``score_samples`` and ``score`` evaluate.  ``'predictive'``:
        the posterior predictive density ``int p(x | theta) q(theta)
        dtheta``, a mixture of Student-t densities that counts the
        uncertainty of the weights' means, the means and the precisions.
        ``'plug-in'``: the mixture of Gaussians at the posterior means
        ``weights_``, ``means_``, ``covariances_``.  ``'bound'``:
        scikit-learn's ``score_samples``, ``log sum_k exp(E_q[log pi_k +
        log N(x | mu_k, Lambda_k)])``, a lower bound of the predictive's
        log density (Jensen's inequality), not a normalised density.  The
        predictive is the default because it is the density the fitted
        model assigns to new data; the others are below it on average for
        components fitted on few samples, and all three agree when every
        component has many.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, the minibatch order and ``sample``.
    warm_start : bool, default=False
        Start ``fit`` from the previous fit's posterior (``n_init`` is then
        ignored).
    verbose : int, default=0
        1: a progress line on standard error, finished every
        ``verbose_interval`` passes; 2: records to the ``skvi`` logger
        (``docs/engine.md``, "Watching a fit").
    verbose_interval : int, default=10
        Passes between two printed lines.
    learning_method : {'batch', 'online'}, default='batch'
        Coordinate ascent on all rows (scikit-learn's EM), or SVI steps on
        minibatches.
    batch_size : int, default=1000
        Largest number of rows per minibatch (online ``fit`` and
        ``partial_fit``).

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
        Posterior mean of the weights (normalised to sum to 1).
    means_ : ndarray of shape (n_components, n_features)
        Posterior means of the component means, ``m_k``.
    covariances_ : ndarray
        ``E[Lambda_k]^-1``; shape (K, d, d), (d, d), (K, d) or (K,) by
        ``covariance_type``.
    precisions_ : ndarray
        ``E[Lambda_k]``, same shape.
    precisions_cholesky_ : ndarray
        Cholesky factors of ``precisions_`` (scikit-learn's convention).
    weight_concentration_ : ndarray or tuple of two ndarrays
        Dirichlet concentrations, or the stick-breaking Beta parameters.
    mean_precision_ : ndarray of shape (n_components,)
        ``beta_k``.
    degrees_of_freedom_ : ndarray of shape (n_components,) or float
        ``nu_k``.
    weight_concentration_prior_, mean_precision_prior_, mean_prior_, \
degrees_of_freedom_prior_, covariance_prior_
        The priors used.
    natural_params_ : dict
        The variational posterior: ``'weights'`` (a :class:`skvi.expfam.Dirichlet`,
        of shape (K, 2) for stick-breaking) and ``'components'`` (a
        :class:`skvi.expfam.NormalWishart` or :class:`skvi.expfam.NormalGamma`),
        natural parameters with ``.distribution``.  The components' means
        are those of ``mu_k - c``, centred at ``c``, the first fit's
        ``mean_prior_`` (``means_`` adds it back): natural parameters of
        uncentred means hold ``beta m m^T`` beside the data's scatter, which
        cancel in the covariances for data far from the origin or a large
        ``mean_precision_prior``.
    lower_bound_, lower_bounds_, n_iter_, converged_, n_batch_iter_, \
n_samples_seen_, n_rejected_steps_
        From the engine, see :class:`skvi.engine.SVIEstimator`.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.mixture.BayesianGaussianMixture : the same model by batch EM.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIBayesianGaussianMixture
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.normal(-3, 1, (300, 2)), rng.normal(3, 0.5, (200, 2))])
    >>> gmm = SVIBayesianGaussianMixture(n_components=4, random_state=0).fit(X)
    >>> np.round(gmm.weights_, 2)  # the prior switched two components off
    array([0. , 0.4, 0.6, 0. ])
    >>> np.round(gmm.means_[1:3], 1)
    array([[ 3. ,  3. ],
           [-3.1, -3. ]])
    >>> stream = SVIBayesianGaussianMixture(n_components=2, random_state=0)
    >>> for chunk in np.array_split(rng.permutation(X), 5):
    ...     stream = stream.partial_fit(chunk)
    >>> np.round(np.sort(stream.means_[:, 0]), 1)
    array([-3.1,  2.9])
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "covariance_type": [StrOptions(set(_COVARIANCE_TYPES))],
        "reg_covar": [Interval(numbers.Real, 0.0, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_params": [StrOptions({"kmeans", "k-means++", "random", "random_from_data"})],
        "weight_concentration_prior_type": [
            StrOptions({"dirichlet_process", "dirichlet_distribution"})
        ],
        # The Dirichlet's natural parameter alpha - 1 holds alpha to 1e-16
        # absolutely: below 1e-10 it is rounded (to 0, an ELBO of NaN, below
        # 1.1e-16).
        "weight_concentration_prior": [None, Interval(numbers.Real, 1e-10, None, closed="left")],
        "mean_precision_prior": [None, Interval(numbers.Real, 0.0, None, closed="neither")],
        "mean_prior": [None, "array-like"],
        "degrees_of_freedom_prior": [None, Interval(numbers.Real, 0.0, None, closed="neither")],
        "covariance_prior": [
            None,
            "array-like",
            Interval(numbers.Real, 0.0, None, closed="neither"),
        ],
        "density": [StrOptions({"predictive", "plug-in", "bound"})],
        "warm_start": ["boolean"],
        "verbose_interval": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        n_components=1,
        covariance_type="full",
        tol=1e-6,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weight_concentration_prior_type="dirichlet_process",
        weight_concentration_prior=None,
        mean_precision_prior=None,
        mean_prior=None,
        degrees_of_freedom_prior=None,
        covariance_prior=None,
        density="predictive",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        learning_method="batch",
        batch_size=1000,
        learning_offset=10.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        step_safety=True,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weight_concentration_prior_type = weight_concentration_prior_type
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.density = density
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.step_safety = step_safety

    # ------------------------------------------------------------ public API
    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit, then return the most probable component of every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative frequency weights of the fit, see :meth:`fit`;
            samples of weight 0 get a label too.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Component labels.
        """
        return self.fit(X, sample_weight=sample_weight).predict(X)

    def predict_proba(self, X):
        """Posterior probability of each component for each sample (the E-step).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        resp : ndarray of shape (n_samples, n_components)
            Responsibilities ``q(z_n = k)``.
        """
        X = self._check_predict_input(X)
        return _softmax(self._log_rho(X, self.natural_params_))[0]

    def predict(self, X):
        """The most probable component of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Component labels.
        """
        X = self._check_predict_input(X)
        return self._log_rho(X, self.natural_params_).argmax(axis=1)

    def score_samples(self, X):
        """Log density of each sample, by ``density``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            ``log p(x)`` under the posterior predictive (a Student-t
            mixture) or the plug-in Gaussian mixture, or scikit-learn's
            bound, by ``density``.
        """
        X = self._check_predict_input(X)
        m = self._moments()
        log_w = np.log(np.maximum(self.weights_, np.finfo(float).tiny))
        if self.density == "bound":
            return special.logsumexp(self._log_rho(X, self.natural_params_, reg_covar=0.0), axis=1)
        if self.density == "plug-in":
            log_p = self._gaussian_log_density(X, m)
        else:
            log_p = self._student_t_log_density(X, m)
        return special.logsumexp(log_p + log_w, axis=1)

    def score(self, X, y=None):
        """Mean log density of the samples (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``score_samples(X).mean()``.
        """
        return float(self.score_samples(X).mean())

    def sample(self, n_samples=1):
        """Draw samples from the plug-in mixture (as scikit-learn's ``sample``).

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            The samples, grouped by component.
        y : ndarray of shape (n_samples,)
            The component of each sample.
        """
        check_is_fitted(self)
        if n_samples < 1:
            raise ValueError(
                f"Invalid value for 'n_samples': {n_samples}. It must be at least one."
            )
        rng = check_random_state(self.random_state)
        counts = rng.multinomial(n_samples, self.weights_)
        parts = self._covariance.draw(rng, self.means_, self.covariances_, counts)
        labels = np.concatenate([np.full(c, k, dtype=int) for k, c in enumerate(counts)])
        return np.vstack(parts), labels

    @classmethod
    def from_sklearn(cls, mixture, **params):
        """An estimator holding the posterior of a fitted scikit-learn mixture.

        To score scikit-learn's posterior with skvi's exact ELBO and
        predictive density, or to continue it with ``partial_fit`` on a
        stream (the imported posterior counts as ``sum_k N_k`` samples).

        Parameters
        ----------
        mixture : sklearn.mixture.BayesianGaussianMixture
            A fitted mixture.
        **params
            Parameters of the new estimator; the others are copied from
            ``mixture`` where they share a name.

        Returns
        -------
        SVIBayesianGaussianMixture
            A fitted estimator with ``mixture``'s priors and posterior.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.mixture import BayesianGaussianMixture
        >>> from skvi import SVIBayesianGaussianMixture
        >>> X = np.random.RandomState(0).normal(size=(200, 2))
        >>> bgm = BayesianGaussianMixture(n_components=2, random_state=0).fit(X)
        >>> est = SVIBayesianGaussianMixture.from_sklearn(bgm)
        >>> bool(np.allclose(est.means_, bgm.means_))
        True
        >>> bool(np.allclose(est.predict_proba(X), bgm.predict_proba(X), atol=1e-6))
        True
        """
        check_is_fitted(mixture, "weights_")
        shared = {k: v for k, v in mixture.get_params().items() if k in cls._parameter_constraints}
        est = cls(**{**shared, **params})
        est.n_features_in_ = mixture.means_.shape[1]
        if hasattr(mixture, "feature_names_in_"):
            est.feature_names_in_ = mixture.feature_names_in_
        for name in (
            "weight_concentration_prior_",
            "mean_precision_prior_",
            "mean_prior_",
            "degrees_of_freedom_prior_",
            "covariance_prior_",
        ):
            setattr(est, name, getattr(mixture, name))
        est._centre = np.asarray(est.mean_prior_, dtype=np.float64).copy()
        m = mixture.means_ - est._centre
        beta = np.asarray(mixture.mean_precision_, dtype=np.float64)
        nu = np.asarray(mixture.degrees_of_freedom_, dtype=np.float64)
        comp = est._covariance.from_sklearn(m, beta, nu, mixture.covariances_)
        wc = mixture.weight_concentration_
        weights = Dirichlet(np.stack(wc, axis=1) if isinstance(wc, tuple) else wc)
        n_seen = float(np.sum(beta - est.mean_precision_prior_))
        est._adopt_globals({"weights": weights.natural, "components": comp.natural}, n_seen)
        return est

    # ------------------------------------------------------------- input
    def _rows(self, X, reset, sample_weight=None, whole=True):
        """Validated X and its weights (the rows of weight 0 dropped) as :class:`Rows`.

        ``whole=False`` for one block of a fit on a cluster: the row counts
        are checked on the sum over the blocks (``_adopt_data_summary``).
        """
        # The first rows set the default priors (their covariance): 2 at least.
        check = reset and whole
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=[np.float64, np.float32],
            ensure_min_samples=2 if check else 1,
        )
        check_feature_magnitude(X, type(self).__name__)
        X = np.asarray(X, dtype=np.float64)
        if check:
            self._check_row_count(X.shape[0])
        weight = check_row_weights(sample_weight, X)
        if weight is not None and not np.all(weight > 0):
            # A sample of weight 0 is no sample: not in k-means, not in a minibatch.
            keep = weight > 0
            X, weight = X[keep], weight[keep]
            if check:
                self._check_row_count(X.shape[0], " of positive weight")
        return Rows(X, None, weight)

    def _check_row_count(self, n, which=""):
        if n < self.n_components:
            raise ValueError(
                f"Expected n_samples >= n_components but got n_components = "
                f"{self.n_components}, n_samples = {n}{which}"
            )

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        # On a cluster (a vocabulary given) each block is checked alone; the
        # row counts on their sum (_adopt_data_summary).
        return self._rows(X, reset=reset, sample_weight=sample_weight, whole=vocabulary is None)

    @property
    def _covariance(self):
        """The strategy of ``covariance_type``, the one place the type is looked at."""
        return _COVARIANCE_TYPES[self.covariance_type]

    @property
    def _settings(self):
        # The start is fitted to the first rows (k-means and one M-step): in
        # a stream with total_samples='auto' it is their data part.  The
        # tolerance is per sample, as scikit-learn's.
        return ModelSettings(
            {"weights": Dirichlet, "components": self._covariance.family},
            stream={"start": "data"},
            convergence=self._per_sample_converged,
            start_sample_size=start.init_rows(
                self.n_components, getattr(self, "n_features_in_", 0)
            ),
        )

    def _data_summary(self, X, local=None):
        if local is not None:  # no statistics of its own after a step
            return None
        return DataMoments.of(X.X, X.weight, full=self._covariance.full_moments)

    def _adopt_data_summary(self, summary, warm=False):
        if summary.n_rows < 2:  # a fit on a cluster: its blocks were checked one by one
            raise ValueError(
                f"Found array with {summary.n_rows} sample(s) while a minimum of 2 is required."
            )
        self._check_row_count(summary.n_rows, " of positive weight")
        self._set_priors(summary, warm)
        # The start scales its statistics to all the rows (their weight).
        self._data_rows = (summary.n_rows, summary.total)

    def _check_predict_input(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        check_feature_magnitude(X, type(self).__name__)
        return np.asarray(X, dtype=np.float64)

    # ------------------------------------------------------------ priors
    def _set_priors(self, moments, warm=False):
        """The priors' values (:func:`~skvi.models.mixture.priors.resolve_priors`).

        ``warm``: the fit continues the previous one (``warm_start``).
        """
        priors = resolve_priors(
            moments,
            self._covariance,
            n_components=self.n_components,
            weight_concentration_prior=self.weight_concentration_prior,
            mean_precision_prior=self.mean_precision_prior,
            mean_prior=self.mean_prior,
            degrees_of_freedom_prior=self.degrees_of_freedom_prior,
            covariance_prior=self.covariance_prior,
            reg_covar=self.reg_covar,
        )
        for name, value in priors.items():
            setattr(self, name, value)
        if not (
            warm
            and getattr(self, "_centre", None) is not None
            and self._centre.shape == self.mean_prior_.shape
        ):
            # The origin of the components' natural parameters; a warm start
            # keeps the one its posterior is expressed in.
            self._centre = self.mean_prior_.copy()

    def _prior_natural(self):
        K = self.n_components
        alpha, beta0, nu0 = (
            self.weight_concentration_prior_,
            self.mean_precision_prior_,
            self.degrees_of_freedom_prior_,
        )
        m0, cov0 = self.mean_prior_ - self._centre, self.covariance_prior_
        if self.weight_concentration_prior_type == "dirichlet_process":
            weights = Dirichlet(np.tile([1.0, alpha], (K, 1)))
        else:
            weights = Dirichlet(np.full(K, alpha))
        comp = self._covariance.prior(m0, beta0, nu0, cov0, K)
        return {"weights": weights.natural, "components": comp.natural}

    # ------------------------------------------------------------ initialisation
    def _initialize_globals(self, X, random_state, summary, ctx=None):
        warm = None if ctx is None else ctx.warm
        self._adopt_data_summary(summary, warm is not None)
        if warm is not None:  # the previous fit's globals, in memory or sent to a worker
            return dict(warm)
        count = X.count()
        X, weight = X.X, X.weight
        n = X.shape[0]
        # Batch EM starts from all rows, as scikit-learn's; SVI, a stream
        # and a fit on a cluster from a subsample of at most init_rows rows.
        batch_em = ctx is not None and not (ctx.partial or ctx.on_cluster)
        limit = (
            None
            if batch_em and self.learning_method == "batch"
            else start.init_rows(self.n_components, X.shape[1])
        )
        sub, sub_weight, scale = start.subsample(X, weight, limit, self.n_components, random_state)
        # The start counts for all the rows, as a step with rho = 1 would:
        # X is all of them, or on a cluster a sample drawn over every block.
        n_rows, total = self._data_rows
        scale *= total / count
        # On a subsample, k-means restarts are cheap, and the start decides
        # which optimum SVI reaches: keep the best of 5.
        whole = sub is X and n == n_rows
        resp = start.initial_responsibilities(
            sub, self.init_params, self.n_components, random_state, 1 if whole else 5, sub_weight
        )
        if sub_weight is not None and self.init_params in ("kmeans", "random"):
            # Responsibilities of every row count its weight; the seeds of
            # 'k-means++' and 'random_from_data' are one sample each, as one
            # copy of a repeated row would be.
            resp *= sub_weight[:, None]
        stats = self._statistics(sub, resp)
        prior = self._prior_natural()
        return {
            name: tuple(p + scale * s for p, s in zip(prior[name], stats[name]))
            for name in _FACTORS
        }

    # ------------------------------------------------------------ model hooks
    def _statistics(self, X, resp):
        """Expected sufficient statistics of X for both factors, in natural coordinates."""
        nk = resp.sum(axis=0)
        if self.weight_concentration_prior_type == "dirichlet_process":
            tail = np.concatenate([np.cumsum(nk[::-1])[-2::-1], [0.0]])
            weights = (np.stack([nk, tail], axis=1),)
        else:
            weights = (nk,)
        X = X - self._centre
        comp = self._covariance.statistics(X, resp, nk, resp.T @ X, self.reg_covar)
        return {
            "weights": weights,
            "components": tuple(np.array(c, dtype=np.float64) for c in comp),
        }

    def _moments(self, params=None):
        """Posterior moments of the components in scikit-learn's terms.

        Returns a dict: ``means`` (K, d), ``beta`` (K,), ``nu`` (the
        degrees of freedom: per component, or shared for 'tied'),
        ``precision`` (``E[Lambda]`` as (K, d, d), (d, d), (K, d) or (K,)),
        ``logdet`` (``E[log|Lambda_k|]``, (K,)) and ``trace``
        (``tr E[Lambda_k]``, (K,)); see
        :class:`~skvi.models.mixture.covariance.CovarianceType`.
        """
        factor = (self.natural_params_ if params is None else params)["components"]
        return factor.cached(
            "moments", lambda f: self._covariance.moments(f.distribution, self.n_components)
        )

    def _quadratic(self, X, means, precision):
        """``(x - m_k)^T P_k (x - m_k)`` for every sample and component, shape (n, K).

        On X centred as the means are (at ``_centre``).
        """
        return self._covariance.quadratic(X - self._centre, means, precision)

    def _expected_log_weights(self, params):
        q = params["weights"].distribution
        elog = q.expected_stats()[0]
        if self.weight_concentration_prior_type == "dirichlet_process":
            return elog[:, 0] + np.concatenate([[0.0], np.cumsum(elog[:, 1])[:-1]])
        return elog

    def _log_rho(self, X, params, reg_covar=None):
        """``E[log pi_k] + E[log N(x | mu_k, Lambda_k)] - reg_covar tr(E[Lambda_k]) / 2``."""
        reg_covar = self.reg_covar if reg_covar is None else reg_covar
        m = self._moments(params)
        d = X.shape[1]
        quad = self._quadratic(X, m["means"], m["precision"])
        const = (
            0.5 * m["logdet"]
            - 0.5 * d / m["beta"]
            - 0.5 * d * _LOG_2PI
            - 0.5 * reg_covar * m["trace"]
            + self._expected_log_weights(params)
        )
        return const - 0.5 * quad

    def _local_step(self, X, params):
        # Blocks of rows bound the (rows, K, d) temporaries of the full
        # covariance type and keep them in cache.
        X, weight = X.X, X.weight
        block = max(256, _BLOCK_VALUES // (self.n_components * X.shape[1]))
        stats, neg_entropy = None, 0.0
        for first in range(0, X.shape[0], block):
            Xb = X[first : first + block]
            resp, log_resp = _softmax(self._log_rho(Xb, params))
            if weight is not None:
                # A sample of weight w is w samples: w times its statistics and entropy.
                resp *= weight[first : first + block, None]
            # sum r log r, with 0 log 0 = 0 (r underflows to 0 where log r < -745)
            neg_entropy += float(np.einsum("nk,nk->", resp, np.maximum(log_resp, -745.0)))
            part = self._statistics(Xb, resp)
            stats = (
                part
                if stats is None
                else {name: tuple(a + b for a, b in zip(stats[name], part[name])) for name in part}
            )
        return {"stats": stats, "neg_entropy": neg_entropy}

    def _expected_stats(self, name, X, local, params):
        return local["stats"][name]

    def _local_bound(self, X, local, params):
        if local is None:
            local = self._local_step(X, params)
        # E_q[log p(x, z | theta)] is linear in the statistics:
        # sum_f <stats_f, E_q[t_f]> - n d log(2 pi) / 2, minus E_q[log q(z)]
        # (n: the weight sum with weights).
        total = 0.0
        for name in _FACTORS:
            expected = params[name].cached(
                "expected_stats", lambda f: f.distribution.expected_stats()
            )
            total += sum(float(np.sum(s * e)) for s, e in zip(local["stats"][name], expected))
        return total - 0.5 * X.count() * X.X.shape[1] * _LOG_2PI - local["neg_entropy"]

    def _global_bound(self, params):
        total = 0.0
        priors = self._prior_natural()
        for name in _FACTORS:
            family = type(params[name].distribution)
            prior = family.from_natural(*priors[name])
            total -= float(np.sum(params[name].distribution.kl(prior)))
        return total

    def _per_sample_converged(self, previous, bound):
        return abs(bound - previous) / max(self.n_samples_seen_, 1) < self.tol

    # ------------------------------------------------------------ densities
    def _gaussian_log_density(self, X, m):
        quad = self._quadratic(X, m["means"], m["precision"])
        log_det = self._covariance.log_det_precision(m)
        return log_det * 0.5 - 0.5 * X.shape[1] * _LOG_2PI - 0.5 * quad

    def _student_t_log_density(self, X, m):
        """Posterior predictive of each component (Bishop eq. 10.81 and its Gamma analogues)."""
        return self._covariance.predictive_log_density(X - self._centre, m)

    # ------------------------------------------------------------ attributes
    def _on_params_updated(self):
        params = self.natural_params_
        m = self._moments()
        q_w = params["weights"].distribution
        if self.weight_concentration_prior_type == "dirichlet_process":
            a, b = q_w.concentration[:, 0], q_w.concentration[:, 1]
            self.weight_concentration_ = (a.copy(), b.copy())
            stick = a / (a + b)
            weights = stick * np.concatenate([[1.0], np.cumprod(b / (a + b))[:-1]])
        else:
            self.weight_concentration_ = q_w.concentration.copy()
            weights = self.weight_concentration_
        self.weights_ = weights / weights.sum()
        self.means_ = m["means"] + self._centre
        self.mean_precision_ = m["beta"].copy()
        for name, value in self._covariance.point_estimates(m).items():
            setattr(self, name, value)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
