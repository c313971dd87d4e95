"""Bayesian matrix factorization of ratings by (stochastic) variational Bayes.

The model (Paquet, "On the convergence of stochastic variational inference
in Bayesian networks", eq. 7, with biases and learned precisions)::

    r_mn   ~ N(mu + b_m + c_n + u_m . v_n, 1 / tau)
    w_m = (u_m, b_m) ~ N(0, Lambda_u^-1)              user node, K + 1 dims
    y_n = (v_n, c_n) ~ N(0, Lambda_v^-1)              item node, K + 1 dims
    Lambda_u, Lambda_v ~ Wishart(K + 2 a0, I / (2 b0))   (ARD: diag(alpha),
                                                        alpha[k] ~ Gamma(a0, b0))
    mu ~ N(mean_prior, 1 / mean_precision_prior)
    tau ~ Gamma(a0, rate=b0)

Each user's factors and bias form one Gaussian node (full covariance, or
fully factorised as Paquet's eq. 7), and likewise for each item; the users
and the items are the engine's per-row factor groups, and the two sides are
symmetric (:data:`~skvi.models.matrix_factorization.nodes.SIDES`).  What
depends on the likelihood is a strategy: the conjugate Gaussian one
(:mod:`~skvi.models.matrix_factorization.conjugate`, closed-form updates) or
the Monte Carlo structured SVI one for the other likelihoods
(:mod:`~skvi.models.matrix_factorization.nonconjugate`).
"""

import copy
import numbers
import zlib

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.utils import gen_batches
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from ...engine import Distinct, Factor, ModelSettings, RowStatistics, SVIEstimator
from ...engine import Moments as DataMoments
from ...engine.data import check_row_weights
from ...expfam import Gamma, Gaussian, MultivariateGaussian, Wishart
from ...likelihoods import Bernoulli, Likelihood, Ordinal, get_likelihood
from ...update_rules import (
    ALGORITHMS,
    UPDATE_RULE_PARAMETER_CONSTRAINTS,
    diagonal_target,
    make_update_rule,
)
from ...validation import check_sparse_structure
from .conjugate import GaussianRatings
from .ids import IdEncoder, as_id_array
from .moment_matched import MomentMatchedRatings
from .nodes import (
    SIDES,
    Moments,
    Ratings,
    moments_diag,
    moments_full,
    moments_full_numpy,
    prepare,
)
from .nonconjugate import GLMRatings

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None

__all__ = ["SVIMatrixFactorization"]

_LOG_2PI = np.log(2.0 * np.pi)
#: Ratings per chunk when per-rating d x d products are formed (predict).
_CHUNK = 8192
#: ``(a0, b0)`` of the Gamma priors of ``precision_prior=None``: the noise
#: precision and ARD's per-component precisions (vague).
_GAMMA_PRIOR = (1e-3, 1e-3)
#: ``b0`` of the Wishart prior of ``precision_prior=None`` (``a0`` is
#: ``_GAMMA_PRIOR``'s).  In a direction the ratings do not use, coordinate
#: ascent multiplies the prior precision by about ``(df + n) / n`` a pass
#: (``n`` users or items) until it reaches ``df / (2 b0)``: with ``b0 =
#: 1e-3`` that is some 5,000 for ten components, and a fit of 30 components
#: on MovieLens-100k u1 still climbed after 100 passes; with 0.05 it
#: converged in 51 passes at the same test RMSE (0.9073 against 0.9072), and
#: the mean test RMSE of ten components over u1..u5 is 0.8992 against 0.8991
#: (docs/matrix_factorization_benchmark.md).
_WISHART_RATE = 0.05
#: Passes over its ratings that Paquet's Alg. 1 should give the median node
#: before fit stops without a warning.
_ALG1_MIN_PASSES = 5.0


def _all_rows(rows, n):
    """Whether ``rows`` is ``0, 1, ..., n - 1`` (every node, in order)."""
    return rows.shape[0] == n and (
        n == 0 or (rows[0] == 0 and rows[-1] == n - 1 and np.array_equal(rows, np.arange(n)))
    )


class SVIMatrixFactorization(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, RegressorMixin, SVIEstimator
):
    """Bayesian matrix factorization of ratings by stochastic variational Bayes.

    Models a rating of item ``n`` by user ``m`` as::

        r_mn ~ N(mu + b_m + c_n + u_m . v_n, 1 / tau)

    with ``K = n_components`` factors ``u_m``, ``v_n``, user and item biases
    ``b_m``, ``c_n`` and a global mean ``mu``.  Each user's ``(u_m, b_m)``
    has the prior ``N(0, Lambda_u^-1)`` and each item's ``(v_n, c_n)`` the
    prior ``N(0, Lambda_v^-1)``; the prior precision matrices have Wishart
    priors, as in Bayesian PMF (``factor_prior='ard'``: diagonal, with a
    Gamma prior per component, automatic relevance determination), the
    noise precision ``tau`` a Gamma prior, and all are learned by
    variational Bayes unless fixed with ``noise_precision`` and
    ``factor_precision``.

    The posterior is approximated by a Gaussian per user and per item
    (``covariance='full'``: over its ``K + 1`` factors and bias jointly;
    ``'diagonal'``: fully factorised, Paquet's eq. 7), a Gaussian for
    ``mu``, a Wishart (ARD: Gamma distributions) for each side's prior
    precision and a Gamma for ``tau``.

    ``learning_method='batch'`` runs coordinate ascent (users, items, mean,
    noise precision, prior precisions in turn); its ELBO never decreases.
    ``'online'`` and ``partial_fit`` take stochastic natural-gradient steps
    on minibatches of ratings through the shared engine: each node seen in
    a minibatch moves towards ``prior + (N_i / C_i) * (its C_i sampled
    ratings)`` (Paquet's eq. 6), where ``N_i`` is its number of ratings;
    ``update_order`` picks Paquet's option (a) or (b).  Each user and item
    counts its own steps, so ``rho`` for a node is the schedule at that
    node's step count: a user first seen late in a stream starts with the
    schedule's first (large) steps rather than the global ``rho_t``.

    **Other likelihoods** (``likelihood='bernoulli'``, ``'poisson'``,
    ``'ordinal'`` or a :class:`skvi.likelihoods.Likelihood`) replace the
    Gaussian by ``r_mn ~ p(r | f_mn)`` with ``f_mn = mu + b_m + c_n + u_m .
    v_n``: generalised PMF by Monte-Carlo structured SVI (section
    3.6).  Each node keeps its full-covariance (or diagonal) Gaussian; given
    a draw of the partner node a rating is a GLM example with descriptor
    ``x = (v, 1)``, so the node's natural-gradient target is
    ``Lambda = diag(alpha) - sum E[l''] x x^T`` and
    ``eta1 = sum E[(l' - l'' m . x) x]`` (eqs. 48-53), estimated from
    ``n_mc_samples`` draws of the partner per rating and ``E_f`` by Monte
    Carlo or quadrature.  ``algorithm`` chooses how a node moves towards
    that target (MC-SSVI, H-MC-SSVI or S-DSVI, see :mod:`skvi.update_rules`).
    The global mean is updated by its own fixed point; there is no noise
    precision.  ``predict`` gives the predictive mean and
    :meth:`predict_proba` the class probabilities.

    Parameters
    ----------
    n_components : int, default=10
        Number of latent factors ``K``.
    likelihood : {'gaussian', 'bernoulli', 'poisson', 'poisson-softplus', 'ordinal'} \
or Likelihood, \
default='gaussian'
        Observation model.  ``'gaussian'`` is the conjugate model above
        (closed-form updates, learned noise precision).  ``'bernoulli'``:
        two rating values (``classes_``; the larger is the positive class),
        logistic link.  ``'poisson'``: counts, exponential link;
        ``'poisson-softplus'``: counts, rate ``log(1 + exp(f))`` (the link of
        Monte Carlo structured SVI's count experiments).
        ``'ordinal'``: the sorted distinct ratings are ordered categories
        with a cumulative-logit likelihood (:class:`skvi.likelihoods.Ordinal`,
        thresholds ``0.5, 1.5, ...`` on the category-index scale, slope 1).
        An instance is used as given (copied into ``likelihood_``), through
        the Monte-Carlo updates even when it is Gaussian.
    covariance : {'full', 'diagonal'}, default='full'
        Variational family of each user and item node.
    noise_precision : float or None, default=None
        Fixed noise precision ``tau``; ``None`` learns it.  Gaussian
        likelihood only.
    factor_precision : float or None, default=None
        Fixed prior precision of every factor and bias, at least 1e-100
        (online and non-Gaussian fits start the nodes at the prior, whose
        variances multiply in ``E[(u . v)^2]``); ``None`` learns each
        side's prior precision (``factor_prior``).
    factor_prior : {'wishart', 'ard'}, default='wishart'
        Prior precision of the user (and of the item) nodes.  ``'wishart'``:
        a full matrix ``Lambda`` with a Wishart prior (``df = d - 1 + 2
        a0``, scale ``I / (2 b0)``, which is ``Gamma(a0, b0)`` for ``d =
        1``), as in Bayesian PMF: the prior also learns how the factors and
        the bias co-vary.  ``'ard'``: ``diag(alpha)`` with a Gamma prior per
        component (automatic relevance determination), which switches
        components off: on MovieLens-100k it kept six of ten and predicted
        worse (mean test RMSE over u1..u5 0.9091 against 0.8992,
        ``benchmarks/movielens.py``).  Ignored when ``factor_precision`` is
        set.
    precision_prior : tuple of (float, float) or None, default=None
        Shape and rate ``(a0, b0)`` of the priors on the learned precisions:
        the Gamma priors of the noise and of ARD, and the Wishart's.
        ``None``: ``(1e-3, 1e-3)`` for the Gamma priors (vague, as in
        :class:`skvi.GaussianGammaVB`), and ``a0 = 1e-3``, ``b0 = 0.05``
        for the Wishart.  A direction of the factors that the ratings do
        not use has its prior precision multiplied by about ``(df + n) /
        n`` each pass (``n`` users or items) until it reaches ``df / (2
        b0)``; ``b0 = 0.05`` keeps that within reach of a fit with more
        components than the ratings need.
    mean_prior : float, default=0.0
        Prior mean of the global mean ``mu``.
    mean_precision_prior : float, default=1e-2
        Prior precision of ``mu``.
    init_scale : float, default=0.1
        Standard deviation of the random initial factor means.
    children_per_node : int or None, default=None
        Online ``fit`` only.  ``None``: each step uses a minibatch of
        ``batch_size`` ratings (Paquet's Alg. 2).  An int ``C``: each step
        updates every user and item from ``C`` of its own ratings drawn
        without replacement (Paquet's Alg. 1).  Such a step visits every
        node once, so it counts as one pass (``max_iter`` is then the
        number of Alg. 1 iterations, each with an ELBO in
        ``lower_bounds_``).
    algorithm : {'auto', 'mc-ssvi', 'h-mc-ssvi', 's-dsvi'}, default='auto'
        Update rule of the user and item nodes ("Monte Carlo structured SVI for two-level non-conjugate models"): natural-gradient
        steps of mean and covariance, natural covariance with an AdaGrad
        mean step, or AdaGrad on the mean and the Cholesky factor.
        ``'auto'``: ``'mc-ssvi'`` for the Gaussian likelihood (the exact
        conjugate updates: coordinate ascent in batch mode) and for
        ``expectation='gaussian'`` (closed-form updates of the
        pseudo-ratings), ``'h-mc-ssvi'``, the paper's best for PMF,
        otherwise.
    gradient_learning_rate : float, default=1.0
        AdaGrad learning rate of the ordinary-gradient parts of
        ``'h-mc-ssvi'`` and ``'s-dsvi'`` (the paper uses 1.0).
    expectation : {'auto', 'gaussian', 'mc', 'quadrature'}, default='auto'
        Non-Gaussian likelihoods: how ``E_q[l']``, ``E_q[l'']`` and
        ``E_q[log p]`` of each rating are computed.  ``'mc'`` and
        ``'quadrature'``: ``n_mc_samples`` draws of the partner node per
        rating, then one draw of ``f`` or 10-node Gauss-Hermite quadrature
        given each (Monte Carlo structured SVI).  ``'gaussian'``: no draws;
        ``f`` is taken as the Gaussian of its exact posterior mean and
        variance (as ``predict_proba`` does), with 10-node Gauss-Hermite
        quadrature, and each rating becomes a Gaussian pseudo-rating, so
        that the nodes' updates are the Gaussian model's closed form
        (:mod:`skvi.models.matrix_factorization.moment_matched`); a batch
        fit in memory then starts the rated nodes at the ratings' spectral
        factors (one on a cluster of several blocks, at random means).
        ``'auto'``: ``'gaussian'`` for a batch ``fit`` (on MovieLens 100k
        15 times faster than partner draws on the binary task and 5 times
        on the ordinal one, at the same held-out NLL:
        ``docs/matrix_factorization_benchmark.md``), ``'mc'`` for online
        fits and ``partial_fit``.
    n_mc_samples : int, default=10
        Draws of the partner node per rating and step (``S1`` of eq. 52 of
        Monte Carlo structured SVI; 10 as in the paper).
    learn_thresholds : bool, default=True
        ``likelihood='ordinal'``: learn the gaps between the thresholds
        (point estimates maximising the expected log-likelihood; the first
        threshold stays, since the global mean sets the location).
    learning_method : {'batch', 'online'}, default='batch'
        Coordinate ascent on all ratings, or stochastic steps on minibatches.
    batch_size : int, default=1000
        Largest number of ratings per minibatch in online ``fit`` and
        ``partial_fit``, which cut their ratings into
        ``ceil(N / batch_size)`` near-equal minibatches.

    Attributes
    ----------
    n_users_, n_items_ : int
        Number of distinct users and items seen.
    user_ids_, item_ids_ : ndarray
        The id of each row of the per-user and per-item attributes.
    n_features_in_ : int
        2: the user and item id columns of X.
    feature_names_in_ : ndarray of shape (2,)
        The column names of X, when it was a data frame with string names.
    user_mean_ : ndarray of shape (n_users_, n_components + 1)
        Posterior means of ``(u_m, b_m)``: factors then bias.
    user_covariance_ : ndarray of shape (n_users_, n_components + 1, n_components + 1)
        Posterior covariances of ``(u_m, b_m)`` (diagonal when
        ``covariance='diagonal'``).
    item_mean_, item_covariance_ : ndarray
        The same for ``(v_n, c_n)``.
    user_factors_, item_factors_ : ndarray of shape (n_, n_components)
        Posterior means of the factors alone.
    user_bias_, item_bias_ : ndarray of shape (n_,)
        Posterior means of the biases.
    global_mean_, global_mean_variance_ : float
        Posterior mean and variance of ``mu``.
    noise_precision_ : float or None
        Posterior mean of ``tau`` (None for non-Gaussian likelihoods); ``noise_shape_`` and ``noise_rate_`` give
        its Gamma posterior when it is learned.
    user_precision_, item_precision_ : ndarray of shape (n_components + 1,) or (n_components + 1, n_components + 1)
        The matrices ``E[Lambda_u]``, ``E[Lambda_v]`` (factors then bias);
        with ``factor_prior='ard'`` the vectors of the posterior means of
        ``alpha_u``, ``alpha_v``, and with a fixed ``factor_precision`` that
        precision repeated (a vector).
    user_counts_, item_counts_ : ndarray
        Ratings per user and item used for the ``N_i`` of the steps (not
        weighted; ratings of weight 0 are not counted).
    likelihood_ : Likelihood or None
        The fitted observation model (ordinal: with the learned
        thresholds); None for the conjugate Gaussian model.
    classes_ : ndarray
        The rating values of ``'bernoulli'`` and ``'ordinal'``, sorted;
        ratings are these classes' indices to the likelihood.
    natural_params_, lower_bounds_, lower_bound_, n_iter_, n_batch_iter_, \
n_samples_seen_, converged_, n_rejected_steps_
        From the engine, see :class:`skvi.engine.SVIEstimator`.

    See Also
    --------
    skvi.SVILatentDirichletAllocation : the topic model on the same engine.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> rng = np.random.RandomState(0)
    >>> U, V = rng.normal(size=(30, 2)), rng.normal(size=(20, 2))
    >>> X = np.array([(m, n) for m in range(30) for n in range(20)])
    >>> y = np.sum(U[X[:, 0]] * V[X[:, 1]], axis=1) + 0.1 * rng.normal(size=len(X))
    >>> mf = SVIMatrixFactorization(n_components=2, random_state=0).fit(X, y)
    >>> rmse = np.sqrt(np.mean((mf.predict(X) - y) ** 2))
    >>> bool(rmse < 0.2)
    True
    >>> mean, std = mf.predict(np.array([[0, 0], [99, 0]]), return_std=True)
    >>> bool(std[1] > std[0])  # user 99 is unknown: a wider prediction
    True

    Binary ratings with the logistic likelihood:

    >>> clicks = (y > 0).astype(int)
    >>> clf = SVIMatrixFactorization(n_components=2, likelihood="bernoulli",
    ...                              max_iter=20, tol=0, random_state=0).fit(X, clicks)
    >>> proba = clf.predict_proba(X)[:, 1]
    >>> bool(np.mean((proba > 0.5) == clicks) > 0.8)
    True
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "covariance": [StrOptions({"full", "diagonal"})],
        "noise_precision": [None, Interval(numbers.Real, 0, None, closed="neither")],
        # Online and non-Gaussian fits start the nodes at the prior: a
        # variance beyond 1e100 makes E[(u . v)^2] overflow (an ELBO of -inf,
        # infinite standard deviations, from 1e-160 on).
        "factor_precision": [None, Interval(numbers.Real, 1e-100, None, closed="left")],
        "factor_prior": [StrOptions({"ard", "wishart"})],
        "precision_prior": [None, tuple, list],
        "mean_prior": [numbers.Real],
        "mean_precision_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "init_scale": [Interval(numbers.Real, 0, None, closed="left")],
        "children_per_node": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "likelihood": [
            StrOptions({"gaussian", "bernoulli", "poisson", "poisson-softplus", "ordinal"}),
            Likelihood,
        ],
        "algorithm": [StrOptions({"auto", *ALGORITHMS})],
        "gradient_learning_rate": UPDATE_RULE_PARAMETER_CONSTRAINTS["gradient_learning_rate"],
        "expectation": [StrOptions({"auto", "gaussian", "mc", "quadrature"})],
        "n_mc_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "learn_thresholds": ["boolean"],
    }

    def __init__(
        self,
        n_components=10,
        *,
        likelihood="gaussian",
        covariance="full",
        noise_precision=None,
        factor_precision=None,
        factor_prior="wishart",
        precision_prior=None,
        mean_prior=0.0,
        mean_precision_prior=1e-2,
        init_scale=0.1,
        children_per_node=None,
        algorithm="auto",
        gradient_learning_rate=1.0,
        expectation="auto",
        n_mc_samples=10,
        learn_thresholds=True,
        learning_method="batch",
        batch_size=1000,
        max_iter=100,
        tol=1e-4,
        learning_offset=1.0,
        learning_decay=0.85,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.likelihood = likelihood
        self.covariance = covariance
        self.noise_precision = noise_precision
        self.factor_precision = factor_precision
        self.factor_prior = factor_prior
        self.precision_prior = precision_prior
        self.mean_prior = mean_prior
        self.mean_precision_prior = mean_precision_prior
        self.init_scale = init_scale
        self.children_per_node = children_per_node
        self.algorithm = algorithm
        self.gradient_learning_rate = gradient_learning_rate
        self.expectation = expectation
        self.n_mc_samples = n_mc_samples
        self.learn_thresholds = learn_thresholds
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

    # ------------------------------------------------------------ public API
    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of ratings.

        For the Gaussian likelihood the predictive mean and variance are
        exact.  For the others the linear predictor ``f`` is approximated
        by the Gaussian with its exact posterior mean and variance and the
        predictive moments are integrated over it by Gauss-Hermite
        quadrature: the probability of the positive class (``classes_[1]``)
        for ``'bernoulli'``, the expected count for ``'poisson'``, the
        expected rating value ``sum_k p_k classes_[k]`` for ``'ordinal'``.

        An unknown user or item (an id never seen in fitting) is predicted
        from its prior: zero factors and bias, with the prior's variance, so
        the prediction falls back to the global mean plus the known side's
        bias and its standard deviation widens accordingly.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2)
            (user, item) id pairs.
        return_std : bool, default=False
            Also return the predictive standard deviation (noise included).

        Returns
        -------
        mean : ndarray of shape (n_ratings,)
            Predictive means.
        std : ndarray of shape (n_ratings,)
            Predictive standard deviations, when ``return_std`` is True.
        """
        check_is_fitted(self)
        users, items = self._pairs(X)
        mean, var = self._strategy.predictive(self, users, items)
        if return_std:
            return mean, np.sqrt(np.maximum(var, 0.0))
        return mean

    def _ordinal_likelihood(self):
        lik = self.likelihood
        return (isinstance(lik, str) and lik == "ordinal") or isinstance(lik, Ordinal)

    def _has_proba(self):
        return self.likelihood in ("bernoulli", "ordinal") or isinstance(
            self.likelihood, (Bernoulli, Ordinal)
        )

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Predictive probability of each rating value (categorical likelihoods).

        Available for ``likelihood='bernoulli'`` and ``'ordinal'``:
        ``p(r = classes_[k])`` integrated over the Gaussian approximation of
        the linear predictor, as in :meth:`predict`.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2)
            (user, item) id pairs.

        Returns
        -------
        proba : ndarray of shape (n_ratings, n_classes)
            Columns in the order of ``classes_``; rows sum to one.
        """
        check_is_fitted(self)
        users, items = self._pairs(X)
        return self._strategy.predict_proba(self, users, items)

    def score(self, X, y=None, sample_weight=None):
        """Coefficient of determination R^2 of :meth:`predict` (higher is better).

        As for every scikit-learn regressor.  For ``likelihood='bernoulli'``
        the ratings are compared as 0/1 indicators of ``classes_[1]`` with
        the predicted probability.  :meth:`log_predictive_density` gives
        the mean log predictive density instead.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix
            As in :meth:`fit`.
        y : array-like of shape (n_ratings,) or None
            Observed ratings.
        sample_weight : array-like of shape (n_ratings,) or None, default=None
            Weights of the ratings.

        Returns
        -------
        score : float
            ``R^2`` of the predictive means.
        """
        check_is_fitted(self)
        data = self._ratings(X, y)
        target = data.ratings
        if not isinstance(self.likelihood_, Bernoulli) and self._has_proba():
            target = self.classes_[data.ratings.astype(np.intp)]
        mean, _ = self._strategy.predictive(self, data.users, data.items)
        return float(r2_score(target, mean, sample_weight=sample_weight))

    def log_predictive_density(self, X, y=None):
        """Mean log predictive density per rating (higher is better).

        For the Gaussian likelihood the predictive density of each rating
        is the Gaussian with the posterior predictive mean and variance of
        :meth:`predict`; for the others it is ``log E[p(r | f)]`` under the
        Gaussian approximation of ``f`` (Gauss-Hermite quadrature).  Its
        negative is the test NLL of Monte Carlo structured SVI's
        experiments.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix
            As in :meth:`fit`.
        y : array-like of shape (n_ratings,) or None
            Observed ratings.

        Returns
        -------
        density : float
            Average log predictive density.
        """
        check_is_fitted(self)
        return float(np.mean(self._strategy.log_density(self, self._ratings(X, y))))

    def transform(self, X):
        """Fold in new users: posterior mean factors of each row of X.

        Each row of X holds one new user's ratings (stored entries) of the
        fitted items, the columns being the item ids; the user's posterior
        is computed with the items, the global mean and the precisions held
        fixed.  Unknown items are described by their prior.

        Parameters
        ----------
        X : sparse matrix of shape (n_new_users, n_items)
            Ratings of the new users.

        Returns
        -------
        factors : ndarray of shape (n_new_users, n_components)
            Posterior means of the new users' factors ``u``.
        """
        check_is_fitted(self)
        if not sp.issparse(X):
            raise ValueError(
                "transform takes a sparse matrix of the new users' ratings "
                "(rows: new users, columns: item ids)."
            )
        data = self._encode_targets(self._matrix_ratings(X), reset=False)
        data.items = self._item_ids.encode(data.items)
        prep = prepare(data)
        rows = prep["users"].nodes.copy()
        out = np.zeros((X.shape[0], self._dim))
        out[rows] = self._strategy.fold_in(self, prep, dict(self.natural_params_))
        return out[:, : self.n_components]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.two_d_array = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags

    @property
    def _n_features_out(self):
        return self.n_components

    # ------------------------------------------------------------- input
    def _ratings(
        self, X, y, reset=False, grow=False, classes=None, sample_weight=None, vocabulary=None
    ):
        """Validated, encoded ratings of (X, y): ids to rows, ratings to targets.

        ``reset`` starts new id encoders and the likelihood's classes (from
        ``vocabulary``, the distinct ids and ratings of every block of a
        fit on a cluster, when given); ``grow`` adds unknown ids
        (``partial_fit``); otherwise unknown ids are encoded as -1
        (predicted from the prior).  ``sample_weight`` weighs the ratings:
        those of weight 0 are dropped before their ids are encoded, unit
        weights give unweighted ratings.
        """
        data = self._raw_ratings(X, y, reset, sample_weight)
        if (reset or grow) and vocabulary is None and data.ratings.shape[0] == 0:
            # Only a sparse matrix without stored entries gets here (id
            # pairs need a row, weights a positive one): in a fit or
            # minibatch it would divide by its count of ratings.
            raise ValueError(
                f"The {X.shape[0]} x {X.shape[1]} ratings matrix stores no entries, so it "
                "holds no ratings: there is nothing to fit (a stored entry, zero included, "
                "is a rating)."
            )
        if reset:
            # A fit on a cluster encodes every block with the ids (and the
            # rating values) of all the blocks, as a fit in memory does.
            vocabulary = vocabulary or {}
            self._user_ids = IdEncoder(vocabulary.get("users", data.users))
            self._item_ids = IdEncoder(vocabulary.get("items", data.items))
            if classes is None:
                classes = vocabulary.get("ratings")
        data.users = self._user_ids.encode(data.users, grow=grow)
        data.items = self._item_ids.encode(data.items, grow=grow)
        return self._encode_targets(data, reset=reset, classes=classes)

    def _raw_ratings(self, X, y, reset, sample_weight):
        """Validated ratings of (X, y) with their ids as given; weight-0 ratings dropped."""
        if y is None and not sp.issparse(X) and np.ndim(X) == 2 and np.shape(X)[1] == 3:
            # (user, item, rating) rows, as a data frame of ratings holds them.
            weights = check_row_weights(sample_weight, X)
            users, items, ratings = self._id_columns(X, reset=reset, n_columns=3)
            data = Ratings(users, items, self._check_ratings(ratings, users.shape[0]))
        elif y is None:
            data = self._matrix_ratings(X)
            weights = check_row_weights(sample_weight, data.ratings)
            if reset:
                self.n_features_in_ = 2
        else:
            # The weights first: their errors (all zero, wrong length) do not
            # depend on what the columns of X hold.
            weights = check_row_weights(sample_weight, X)
            users, items = self._id_columns(X, reset=reset)
            ratings = self._check_ratings(y, users.shape[0])
            data = Ratings(users, items, ratings)
        if weights is not None:
            data = self._weigh(data, weights)
        return data

    @staticmethod
    def _weigh(data, weights):
        """``data`` with the validated ``weights``; ratings of weight 0 are dropped.

        Dropped before their ids are encoded, a rating of weight 0 is as if
        it were not in X.  Unit weights give unweighted ratings, whose code
        paths (and numbers) are those of a fit without weights.
        """
        positive = weights > 0
        if not np.all(positive):
            data = data[positive]
            weights = weights[positive]
        if np.all(weights == 1.0):
            return data
        data.weights = weights
        return data

    def _pairs(self, X):
        """Encoded (users, items) rows of the id pairs X; -1 for unknown ids."""
        users, items = self._id_columns(X, reset=False)
        return self._user_ids.encode(users), self._item_ids.encode(items)

    def _id_columns(self, X, reset, n_columns=2):
        """The user and item id columns of X, an (n, 2) array or data frame.

        With ``n_columns=3`` the third column, the ratings, is returned too
        (the names of the first two are the ids' feature names).
        """
        named = X.iloc[:, :2] if n_columns == 3 and hasattr(X, "iloc") else X
        _check_feature_names(self, named, reset=reset)
        if sp.issparse(X):
            raise ValueError(
                "X must be an (n_ratings, 2) array of (user, item) ids when y is given, "
                "not a sparse matrix (a sparse users x items matrix of ratings is "
                "passed with y=None)."
            )
        if hasattr(X, "iloc"):  # a data frame: keep each column's own type
            columns = [np.asarray(X.iloc[:, j]) for j in range(X.shape[1])]
            shape = X.shape
        else:
            X = np.asarray(X)
            shape = X.shape
            columns = [X[:, j] for j in range(shape[1])] if X.ndim == 2 else []
        if len(shape) != 2:
            raise ValueError(
                f"Expected a 2D array of (user, item) id pairs, got an array of shape {shape}."
            )
        if any(np.asarray(c).dtype.kind == "c" for c in columns):
            raise ValueError("Complex data not supported as user or item ids.")
        if shape[1] == 0:
            raise ValueError(
                f"0 feature(s) (shape={shape}) while a minimum of 2 is required: "
                "the user id and the item id of each rating."
            )
        if shape[1] != n_columns:
            raise ValueError(
                f"X has {shape[1]} feature(s) (shape={shape}), but "
                f"{type(self).__name__} takes exactly 2: the user id and the item id "
                "of each rating (its ratings go in y)."
            )
        if shape[0] < 1:
            raise ValueError(
                f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required."
            )
        if reset:
            self.n_features_in_ = 2
        return tuple(columns)

    def _matrix_ratings(self, X):
        """The stored entries of a sparse users x items matrix as ratings."""
        if not sp.issparse(X):
            raise ValueError(
                f"{type(self).__name__}: give either X of (user, item) id pairs "
                "with ratings y, or with y=None (user, item, rating) rows or a "
                "scipy sparse users x items matrix of ratings."
            )
        check_sparse_structure(X)
        if X.format == "dia":
            raise ValueError(
                "A dia_matrix stores whole diagonals, so its stored entries are not the "
                "observed ratings: pass a COO, CSR or CSC matrix of the ratings."
            )
        coo = sp.coo_matrix(X)
        ratings = self._check_ratings(coo.data, coo.data.shape[0])
        return Ratings(coo.row.astype(np.int64), coo.col.astype(np.int64), ratings)

    @staticmethod
    def _check_ratings(y, n):
        ratings = np.asarray(y)
        if ratings.ndim == 2 and ratings.shape[1] == 1:
            ratings = ratings[:, 0]
        if ratings.ndim != 1 or ratings.shape[0] != n:
            raise ValueError(f"y must have shape ({n},) to match X; got {ratings.shape}.")
        if ratings.dtype.kind == "c":
            raise ValueError("Complex data not supported as ratings.")
        try:
            ratings = ratings.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric ratings: {exc}") from None
        if not np.all(np.isfinite(ratings)):
            raise ValueError("Input y contains NaN or infinity: ratings must be finite.")
        with np.errstate(over="ignore"):
            overflow = not np.isfinite(np.dot(ratings, ratings))
        if overflow:
            raise ValueError(
                "The ratings are too large: the sum of their squares overflows a float64. "
                "Divide them by a constant (and the predictions by the same)."
            )
        return ratings

    @property
    def _conjugate(self):
        """Whether the closed-form Gaussian model (learned noise) is fitted."""
        return isinstance(self.likelihood, str) and self.likelihood == "gaussian"

    @property
    def _expectation(self):
        """``expectation`` with ``'auto'`` resolved (see the parameter)."""
        if self.expectation != "auto":
            return self.expectation
        return "gaussian" if self._indexing_once else "mc"

    @property
    def _strategy(self):
        """What depends on the likelihood: conjugate, moment-matched or Monte Carlo updates."""
        if self._conjugate:
            return _GAUSSIAN
        return _MOMENT_MATCHED if self._expectation == "gaussian" else _GLM

    @property
    def _indexing_once(self):
        """Whether a fit steps on the same rows every time (batch ``fit``): index them once."""
        return self.learning_method == "batch" and not self.__dict__.get("_in_partial_fit", True)

    def _encode_targets(self, data, reset, classes=None):
        """Map ratings to the likelihood's targets; on ``reset`` set it up.

        Categorical likelihoods learn ``classes_`` (the sorted rating values)
        and see ratings as class indices: ``'bernoulli'`` as 0/1 for
        ``classes_[0]``/``classes_[1]``, ``'ordinal'`` as ``0 .. K-1``.
        """
        if self._conjugate:
            if reset:
                self.likelihood_ = None
            return data
        if reset:
            lik = self.likelihood
            lik = copy.deepcopy(lik) if isinstance(lik, Likelihood) else get_likelihood(lik)
            if isinstance(lik, (Bernoulli, Ordinal)):
                values = data.ratings if classes is None else np.asarray(classes, dtype=float)
                self.classes_ = np.unique(values)
                n_classes = self.classes_.shape[0]
                if isinstance(lik, Bernoulli) and n_classes != 2:
                    raise ValueError(
                        "likelihood='bernoulli' needs exactly two rating values; "
                        f"got {n_classes} ({self.classes_[:5]}...). Pass classes= to "
                        "partial_fit when a minibatch does not hold both."
                    )
                if isinstance(lik, Ordinal):
                    if n_classes < 2:
                        raise ValueError(
                            "likelihood='ordinal' needs at least two rating values; pass "
                            "classes= to partial_fit when a minibatch does not hold them all."
                        )
                    if isinstance(self.likelihood, str):
                        lik = Ordinal(n_categories=n_classes)
                    elif lik.n_categories != n_classes:
                        raise ValueError(
                            f"The Ordinal likelihood has {lik.n_categories} categories but "
                            f"the ratings hold {n_classes} values; pass classes= or matching "
                            "thresholds."
                        )
            self.likelihood_ = lik
        lik = self.likelihood_
        ratings = data.ratings
        if isinstance(lik, (Bernoulli, Ordinal)):
            idx = np.searchsorted(self.classes_, ratings)
            idx = np.minimum(idx, self.classes_.shape[0] - 1)
            if np.any(self.classes_[idx] != ratings):
                bad = ratings[self.classes_[idx] != ratings][:5]
                raise ValueError(
                    f"Ratings {bad} are not among the classes {self.classes_} seen when "
                    "fitting started (pass classes= to the first partial_fit)."
                )
            ratings = idx.astype(np.float64)
        else:
            ratings = lik.validate_targets(ratings)
        return Ratings(data.users, data.items, ratings, data.weights)

    @property
    def user_ids_(self):
        """The user ids in row order of ``user_mean_`` and the other user attributes."""
        check_is_fitted(self)
        return self._user_ids.classes_

    @property
    def item_ids_(self):
        """The item ids in row order of ``item_mean_`` and the other item attributes."""
        check_is_fitted(self)
        return self._item_ids.classes_

    # ------------------------------------------------------------ structure
    @property
    def _settings(self):
        families = self._factor_families
        alg1 = self.children_per_node is not None
        # The users and items are per-row groups; the prior precisions'
        # children are the nodes, all in memory.  The Monte Carlo
        # likelihoods redo their local step each step (it carries the step's
        # seed of their draws), and their fixed-point steps can jump (MC-SSVI's
        # means overflowed on the binary MovieLens task for one seed in
        # five): batch steps are tested on the probe too; the conjugate
        # coordinate ascent never lowers the ELBO.  Paquet's Alg. 1
        # (children_per_node) says itself when its fit is far from converged.
        return ModelSettings(
            {name: families[name] for name in self._global_factors},
            row_groups=("users", "items"),
            hierarchical=("user_precision", "item_precision"),
            update_rules={"users": self._node_rule, "items": self._node_rule},
            local_depends_on_globals=not self._conjugate,
            probe_batch_steps=not self._conjugate,
            children_per_row=self.children_per_node if self.learning_method == "online" else None,
            convergence=self._converged,
            warn_not_converged=not alg1,
            transient=("_prep",),
        )

    @property
    def _global_factors(self):
        # The scalars first: in online steps their statistics then come
        # from the minibatch before the nodes are fitted to it, an unbiased
        # (held-out) view of the residuals; fitted-to residuals are too
        # small and make tau overconfident.
        # The prior precisions last: a batch fit's first node update then
        # uses their initial value, not one fitted to the random initial
        # nodes (whose small covariances would make it large and shrink
        # every factor towards zero).
        names = ["mean", *self._strategy.scalar_factors(self), "users", "items"]
        if self.factor_precision is None:
            names += ["user_precision", "item_precision"]
        return tuple(names)

    @property
    def _factor_families(self):
        node = MultivariateGaussian if self.covariance == "full" else Gaussian
        precision = Wishart if self.factor_prior == "wishart" else Gamma
        return {
            "users": node,
            "items": node,
            "mean": Gaussian,
            "noise": Gamma,
            "user_precision": precision,
            "item_precision": precision,
        }

    def _check_prior_params(self):
        """``(a0, b0)`` of the Gamma priors; sets ``_wishart_hyper``, the Wishart's.

        Set only once every parameter checked: a refused ``fit`` leaves the
        fitted model as it was.
        """
        explicit = self.precision_prior is not None
        prior = tuple(self.precision_prior) if explicit else _GAMMA_PRIOR
        if len(prior) != 2 or not all(
            isinstance(v, numbers.Real) and np.isfinite(v) and v > 0 for v in prior
        ):
            raise ValueError(
                f"precision_prior must be two positive numbers (shape, rate); got {self.precision_prior!r}."
            )
        if not np.isfinite(self.mean_prior):
            raise ValueError(f"mean_prior must be finite; got {self.mean_prior!r}.")
        scale = np.float64(self.init_scale)
        with np.errstate(all="ignore"):
            fourth = (scale * scale) ** 2
            # 1e16 of room for the sums over ratings and components.
            usable = fourth > 0 and np.isfinite(1e16 * fourth) and np.isfinite(1e16 / fourth)
        if scale > 0 and not usable:
            # The tight start's precision is init_scale**-2, the nodes'
            # second moments init_scale**2, and a prediction's E[(u . v)^2]
            # init_scale**4 (init_scale=1e77 gave an ELBO of -inf and NaN
            # standard deviations): all must be finite numbers.
            raise ValueError(
                f"init_scale={self.init_scale!r} is too large or too small: its fourth power "
                "and the inverse of its fourth power, times 1e16, must be finite (the scale "
                "of the initial factor means, like the ratings')."
            )
        wishart = prior if explicit else (prior[0], _WISHART_RATE)
        self._wishart_hyper = (float(wishart[0]), float(wishart[1]))
        return float(prior[0]), float(prior[1])

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        if reset:
            self._hyper = self._check_prior_params()
        if reset or partial:
            self._in_partial_fit = partial
        self._prep = None
        if vocabulary is not None:  # one block of a fit on a cluster
            self._check_cluster_fit()
        elif not reset and not partial:  # compute_statistics: ids the model knows
            data = self._ratings(X, y)
            if np.any(data.users < 0) or np.any(data.items < 0):
                raise ValueError(
                    "X holds users or items the model has not seen (compute_statistics "
                    "and elbo need known ids); add new users and items with partial_fit."
                )
            return data
        return self._ratings(
            X,
            y,
            reset=reset,
            grow=partial,
            classes=classes,
            sample_weight=sample_weight,
            vocabulary=vocabulary,
        )

    # ------------------------------------------------------ on a dask cluster
    def _data_vocabulary(self, X, y, sample_weight):
        # The ids (and a categorical likelihood's rating values) of every
        # block, so that each block encodes its ids as a fit in memory does.
        data = self._raw_ratings(X, y, True, sample_weight)
        vocabulary = {
            "users": Distinct(as_id_array(data.users)),
            "items": Distinct(as_id_array(data.items)),
        }
        if not self._conjugate and self._has_proba():
            vocabulary["ratings"] = Distinct(data.ratings)
        return vocabulary

    def _check_cluster_fit(self):
        if self.learning_method == "online" and self.children_per_node is not None:
            raise NotImplementedError(
                "children_per_node (Paquet's Alg. 1) draws each node's ratings from all "
                "of them, which a fit on a cluster does not gather: use minibatches "
                "(children_per_node=None) or learning_method='batch'."
            )
        if (
            self.learning_method == "batch"
            and self.learn_thresholds
            and not self._conjugate
            and self._ordinal_likelihood()
        ):
            raise NotImplementedError(
                "A batch fit learns the ordinal thresholds from every rating at every "
                "step, which a fit on a cluster does not gather: use "
                "learning_method='online' (the thresholds learned from each minibatch) "
                "or learn_thresholds=False."
            )

    def _data_summary(self, data):
        # Ratings per node (which nodes start at random means) and the
        # ratings' weighted mean and variance (the start of mu and tau).
        return (
            np.bincount(data.users, minlength=len(self._user_ids)).astype(float),
            np.bincount(data.items, minlength=len(self._item_ids)).astype(float),
            DataMoments.of(data.ratings[:, None], data.weights, full=False),
        )

    def _adopt_data_summary(self, summary):
        # The engine keeps the counts N_i from here on (before the start).
        self.user_counts_, self.item_counts_, self._rating_moments = summary
        self.n_users_ = self.user_counts_.shape[0]
        self.n_items_ = self.item_counts_.shape[0]

    def _local_draws(self, data, random_state):
        # The seed of a step's Monte Carlo draws (each factor draws from its
        # own generator of it): the same draws for a retried step.
        if self._strategy.closed_form:
            return None
        return int(random_state.randint(np.iinfo(np.int32).max))

    def _row_ids(self, data):
        # A rating of weight 2 counts twice in its user's and item's N_i
        # (Ratings.weight), as it does in the minibatch's C_i (index_side),
        # so that N_i / C_i is the repeated ratings' ratio.
        return {"users": data.users, "items": data.items}

    def _grow_rows(self, name, n_new, rated, random_state):
        """Users or items seen for the first time by ``partial_fit``."""
        return self._initial_nodes(name, n_new, random_state, rated)

    # ------------------------------------------------------- initialisation
    @property
    def _dim(self):
        return self.n_components + 1

    def _prior_precision(self, name, params=None):
        """E[prior precision] of side ``name``'s nodes (factors then bias).

        A vector (the diagonal) for ``factor_prior='ard'`` or a fixed
        ``factor_precision``, a matrix for ``'wishart'``.
        """
        if self.factor_precision is not None:
            return np.full(self._dim, float(self.factor_precision))
        params = self.natural_params_ if params is None else params
        factor = params.get(SIDES[name].precision)
        if factor is None:
            factor = self._factor_of(SIDES[name].precision, self._initial_precision_natural())
        return factor.cached("mean", lambda f: f.distribution.mean())

    def _precision_prior_natural(self):
        """Natural parameters of the prior of ``Lambda_u`` or ``alpha_u`` (and the items').

        ARD: ``Gamma(a0, rate=b0)`` per component.  Wishart: ``(-b0 I,
        a0 - 1)``, the Wishart with ``df = d - 1 + 2 a0`` and scale
        ``I / (2 b0)``, which is ``Gamma(a0, rate=b0)`` when ``d = 1``
        (``(a0, b0)`` its own, ``_wishart_hyper``).
        """
        d = self._dim
        if self.factor_prior == "wishart":
            # A model fitted before the Wishart had a rate of its own used
            # the Gamma priors' (a0, b0).
            a0, b0 = getattr(self, "_wishart_hyper", self._hyper)
            return (-b0 * np.eye(d), np.array(a0 - 1.0))
        a0, b0 = self._hyper
        return (np.full(d, -b0), np.full(d, a0 - 1.0))

    def _initial_nodes(self, name, n, rng, rated, tight=False):
        """Natural parameters of ``n`` new nodes of side ``name``.

        A node with ratings (``rated``) starts at random factor means of
        scale ``init_scale``, a node without at the prior mean (zero), where
        fitting would leave it.  The covariance is the prior's, or, with
        ``tight``, ``init_scale**2 I`` for the rated nodes: coordinate
        ascent's first sweep then sees partners' ``E[x x^T]`` of the scale
        of their random means instead of being swamped by the prior
        variance.  (Online steps and the gradient rules of the other
        likelihoods blend a node's start into its later value, so there the
        start must be the prior.)
        """
        d, k = self._dim, self.n_components
        mean = np.zeros((n, d))
        mean[:, :k] = self.init_scale * rng.standard_normal((n, k))
        mean[~rated] = 0.0
        alpha = self._prior_precision(name, getattr(self, "natural_params_", {}))
        matrix = alpha if alpha.ndim == 2 else np.diag(alpha)
        prec = np.broadcast_to(matrix, (n, d, d)).copy()
        if tight and self.init_scale > 0:
            prec[rated] = self.init_scale**-2.0 * np.eye(d)
        if self.covariance == "full":
            return (prec @ mean[..., None])[..., 0], -0.5 * prec
        prec = np.diagonal(prec, axis1=-2, axis2=-1).copy()
        return prec * mean, -0.5 * prec

    def _initial_precision_natural(self):
        """Initial ``q`` of ``Lambda_u`` or ``alpha_u`` (and the items'): mean ``a0 / b0``.

        For ARD that is the prior.  The Wishart prior's mean, ``(d - 1 +
        2 a0) / (2 b0) I``, would start the nodes far tighter than ARD's;
        its initial ``q`` keeps the prior's degrees of freedom and has the
        same mean as ARD's, ``(a0 / b0) I`` of the Gamma priors' ``(a0,
        b0)`` (``I`` with ``precision_prior=None``).
        """
        eta1, eta2 = self._precision_prior_natural()
        if self.factor_prior != "wishart":
            return eta1, eta2
        a0, b0 = self._hyper
        df = 2.0 * float(eta2) + self._dim + 1.0
        return -0.5 * df * (b0 / a0) * np.eye(self._dim), eta2

    def _initialize_globals(self, data, random_state, summary):
        self._adopt_data_summary(summary)
        params = {}
        # The tight start helps coordinate ascent, whose first sweep replaces
        # every node; the gradient rules of the other likelihoods step away
        # from the start instead (measured worse on the binary MovieLens task).
        tight = (
            self._strategy.closed_form
            and self.learning_method == "batch"
            and not self._in_partial_fit
        )
        for name in ("users", "items"):
            counts = getattr(self, f"{SIDES[name].prefix}_counts_")
            params[name] = self._initial_nodes(
                name, counts.shape[0], random_state, counts > 0, tight
            )
        if tight:
            params = self._strategy.start_nodes(self, data, params, random_state)
        params.update(
            self._strategy.initial_scalars(self, self._rating_moments, data, random_state)
        )
        if self.factor_precision is None:
            for name in ("users", "items"):
                params[SIDES[name].precision] = self._initial_precision_natural()
        return params

    def _prior_natural(self):
        a0, b0 = self._hyper
        b = self.mean_precision_prior
        prior = {"mean": (np.array(b * self.mean_prior), np.array(-0.5 * b))}
        prior["noise"] = (np.array(-b0), np.array(a0 - 1.0))
        prior["user_precision"] = self._precision_prior_natural()
        prior["item_precision"] = prior["user_precision"]
        return prior

    # --------------------------------------------------------------- moments
    def _factor_of(self, name, natural):
        """``natural`` as a :class:`~skvi.engine.Factor` (a plain tuple is wrapped)."""
        if isinstance(natural, Factor):
            return natural
        return Factor(natural, self._factor_families.get(name))

    def _moments_from_natural(self, eta1, eta2):
        if self.covariance == "full":
            return moments_full(eta1, eta2)
        return moments_diag(eta1, eta2)

    def _safe_moments(self, eta1, eta2):
        """Moments of nodes, or None when one is not a valid Gaussian."""
        if not (np.all(np.isfinite(eta1)) and np.all(np.isfinite(eta2))):
            return None
        if self.covariance == "diagonal":
            if not np.all(eta2 < 0):
                return None
            return moments_diag(eta1, eta2)
        if _gaussian_fast is None:
            if not np.all(MultivariateGaussian.valid_natural(eta1, eta2)):
                return None
            return moments_full_numpy(eta1, eta2)
        moments = moments_full(eta1, eta2)
        if not np.all(np.isfinite(moments.logdet)):
            return None
        return moments

    def _moments(self, name, params):
        """Moments of every node of side ``name`` under ``params`` (cached by the factor)."""
        factor = self._factor_of(name, params[name])
        return factor.cached("moments", lambda f: self._moments_from_natural(*f))

    def _known(self, name, params, nodes):
        """Mask of the ``nodes`` that are fitted and rated (the others take the prior)."""
        n_fitted = params[name][0].shape[0]
        counts = self._row_totals(name)
        known = (nodes >= 0) & (nodes < n_fitted)
        inside = known & (nodes < counts.shape[0])
        known[inside] &= counts[nodes[inside]] > 0
        return known

    def _node_moments(self, name, params, nodes):
        """Moments of the given nodes; unknown ids (-1) and unrated rows get the prior."""
        known = self._known(name, params, nodes)
        moments = self._moments(name, params)
        if np.all(known):
            n = moments.mean.shape[0]
            if nodes.shape[0] == n and np.array_equal(nodes, np.arange(n)):
                return moments  # every node, in order: no copy
            return moments.take(nodes)
        d = self._dim
        out = Moments(
            np.zeros((nodes.shape[0], d)),
            np.zeros((nodes.shape[0], d, d)),
            np.zeros((nodes.shape[0], d)),
            np.zeros(nodes.shape[0]),
        )
        idx = np.flatnonzero(known)
        sub = moments.take(nodes[idx])
        out.mean[idx], out.second[idx], out.var[idx] = sub.mean, sub.second, sub.var
        alpha = self._prior_precision(name, params)
        cov = np.linalg.inv(alpha) if alpha.ndim == 2 else np.diag(1.0 / alpha)
        unknown = np.flatnonzero(~known)
        out.var[unknown] = np.diagonal(cov)
        out.second[unknown] = cov
        return out

    def _partner_moments(self, name, params, nodes):
        """Moments holding the given nodes of side ``name``, and each node's row in them.

        When every node is fitted and rated: the side's moments of all its
        nodes (cached by the factor, no copy) and ``nodes``; otherwise
        :meth:`_node_moments` of the nodes (unknown and unrated ones at the
        prior) and None.
        """
        n_fitted = params[name][0].shape[0]
        counts = self._row_totals(name)
        if (
            nodes.size
            and nodes[0] >= 0
            and nodes[-1] < min(n_fitted, counts.shape[0])
            and np.all(counts[nodes] > 0)
        ):
            return self._moments(name, params), nodes
        return self._node_moments(name, params, nodes), None

    def _global_mean(self, params):
        """E[mu] and Var[mu]."""
        q = params["mean"].distribution
        return float(q.loc), float(1.0 / q.precision)

    # ------------------------------------------------------------- the step

    def _alg1_passes(self):
        """How often Paquet's Alg. 1 has shown the median node its ratings (None otherwise)."""
        if self.learning_method != "online" or self.children_per_node is None:
            return None
        totals = np.concatenate([self._row_totals("users"), self._row_totals("items")])
        totals = totals[totals > 0]
        if not totals.size:
            return np.inf
        seen = self.n_iter_ * np.minimum(self.children_per_node, totals)
        return float(np.median(seen / totals))

    def _converged(self, previous, bound):
        # Alg. 1's ELBO changes little per iteration when C is small: do not
        # stop before the median node has seen its ratings a few times.
        passes = self._alg1_passes()
        if passes is not None and passes < _ALG1_MIN_PASSES:
            return False
        change = abs(bound - previous) / max(abs(previous), np.finfo(float).tiny)
        return change < self.tol

    def _warn_alg1(self):
        """Say when Paquet's Alg. 1 has not seen each node's ratings often enough.

        With ``C`` children per node an iteration shows each node at most
        ``C`` of its ``N_i`` ratings, so ``max_iter`` iterations with a small
        ``C`` can be less than one pass over the data: the means then stay
        far from the batch answer while every step is valid and the ELBO
        still climbs (one child on 300 x 200 ratings: test RMSE 1.50 after
        50 iterations, 0.62 after 200, 0.55 after 800, batch 0.55).
        """
        passes = self._alg1_passes()
        if passes is not None and passes < _ALG1_MIN_PASSES:
            self._warn(
                f"{type(self).__name__}: after {self.n_iter_} Alg. 1 iterations with "
                f"children_per_node={self.children_per_node}, the median node has seen its "
                f"ratings {passes:.2g} times, so the fit is far from converged. Raise "
                "children_per_node or max_iter, or use minibatches (children_per_node=None).",
                ConvergenceWarning,
            )

    def _local_step(self, data, params, draws=None):
        # The minibatch indexed for aggregation, with the seed of the step's
        # draws (or, with expectation='gaussian', its pseudo-ratings).
        return self._strategy.local_step(self, data, params, draws)

    def _prep_of(self, data):
        """``prepare(data)`` of the fit's rows or the probe, kept while they are in use."""
        kept = getattr(self, "_prep", None) or {}
        hit = kept.get(id(data))
        if hit is not None and hit[0] is data:
            prep = hit[1]
            prep.pop("_agg", None)
            return prep
        prep = prepare(data)
        kept = {k: v for k, v in kept.items() if k != id(data)}
        if len(kept) >= 2:
            kept.pop(next(iter(kept)))
        kept[id(data)] = (data, prep)
        self._prep = kept
        return prep

    def _expected_stats(self, name, data, prep, params):
        if name in SIDES:
            h, P, weight = self._node_stats(name, prep, params, rng=self._block_draws(prep, name))
            side = prep[name]
            return RowStatistics(side.nodes, (weight * h, weight * P), side.counts)
        if name in ("mean", "noise"):
            return self._strategy.scalar_stats(
                self, name, prep, params, rng=self._block_draws(prep, name)
            )
        # A prior precision: its children are the fitted nodes of its side.
        side = "users" if name == "user_precision" else "items"
        n, second, _ = self._fitted_sums(side, params)
        if self.factor_prior == "wishart":
            return (-0.5 * second, np.array(0.5 * n))
        return (-0.5 * np.diagonal(second).copy(), np.full(self._dim, 0.5 * n))

    @staticmethod
    def _block_draws(prep, name):
        """The generator of one factor's draws on a block of a cluster (None in memory).

        A fresh generator from the block's seed of this step and the factor:
        no state that a copy of the block on another worker could hold
        differently, so a fit draws the same numbers wherever its tasks run.
        """
        seed = prep.get("seed")
        if seed is None:
            return None
        return np.random.default_rng([seed, zlib.crc32(name.encode())])

    def _node_stats(self, name, prep, params, rng=None):
        """Unscaled statistics ``(h, P, w)`` of the side's nodes in the batch.

        The target of node ``i`` is ``eta1 = w s_i h_i`` and precision
        ``alpha + w s_i P_i`` (``s_i = N_i / C_i``); see the strategies.
        """
        return self._strategy.node_stats(self, name, prep, params, rng=rng)

    def _fitted_sums(self, name, params):
        """Count, sum of ``E[w w^T]`` and of ``log|precision|`` over the
        fitted nodes of side ``name`` (see :meth:`_fitted`)."""
        mom = self._moments(name, params)
        weight = self._fitted(name).astype(np.float64)
        d = self._dim
        second = (weight @ mom.second.reshape(-1, d * d)).reshape(d, d)
        return float(np.sum(weight)), second, float(weight @ mom.logdet)

    def _fitted(self, name):
        """Mask of the nodes of side ``name`` updated from ratings so far.

        They are the children of the prior precisions.  The others, nodes
        without ratings and (online) nodes not yet visited, are integrated
        out: the ratings say nothing about them, and a node still at its
        random start would pass its small initial covariance to the
        precisions.  The nodes being updated in the current step count.
        """
        return self._row_steps(name) > 0

    def _node_target(self, name, h, P, weight, params, node_scale):
        """Natural parameters of ``prior + scale_i * stats_i`` for the side's nodes."""
        alpha = self._prior_precision(name, params)
        s = (weight * node_scale)[:, None]
        eta1 = s * h
        prec = s[:, :, None] * P
        if alpha.ndim == 2:
            prec += alpha
        else:
            idx = np.arange(self._dim)
            prec[:, idx, idx] += alpha
        return eta1, -0.5 * prec

    @property
    def _node_rule(self):
        """Update rule of the user and item nodes; None for the natural blend."""
        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = self._strategy.default_algorithm
        if algorithm == "mc-ssvi":
            return None
        return make_update_rule(algorithm, self.gradient_learning_rate)

    def _update_factor(self, name, current, stats, ctx):
        if name not in SIDES:
            return super()._update_factor(name, current, stats, ctx)
        # The engine gives every node its own N_i / C_i (ctx.row_scale) and
        # step size (ctx.row_rho); the target's prior part is the current
        # E[alpha] of this side.
        nodes = stats.rows
        h, P = stats.values
        rho_i = ctx.row_rho
        if _all_rows(nodes, current[0].shape[0]):
            old1, old2 = current[0], current[1]  # read only: no gathered copy
        else:
            old1, old2 = current[0][nodes], current[1][nodes]
        rule = self._node_rule
        if (
            _gaussian_fast is not None
            and rule is None
            and self.covariance == "full"
            and ctx.grads is None
        ):
            # The compiled step: target, blend and moments in one loop.
            new1, new2, sub = self._natural_step(name, old1, old2, h, P, ctx)
            return self._with_nodes(name, current, nodes, new1, new2, sub)
        tgt1, tgt2 = self._node_target(name, h, P, 1.0, ctx.params, ctx.row_scale)
        if rule is not None:
            if self.covariance == "diagonal":
                tgt1, tgt2 = diagonal_target(tgt1, tgt2, old1 / (-2.0 * old2))
            (new1, new2), state = rule.step(
                (old1, old2), (tgt1, tgt2), rho_i, ctx.backoff, ctx.rule_state
            )
            ctx.keep_rule_state(state)
        elif self.covariance == "full" and np.all(rho_i == 1.0):
            new1, new2 = tgt1, tgt2  # coordinate ascent
        elif self.covariance == "full":
            new1 = old1 + rho_i[:, None] * (tgt1 - old1)
            new2 = old2 + rho_i[:, None, None] * (tgt2 - old2)
        else:
            new1, new2 = self._diagonal_update(old1, old2, tgt1, tgt2, rho_i)
        if ctx.grads is not None:
            ctx.grads.extend([tgt1 - old1, tgt2 - old2])
        return self._with_nodes(name, current, nodes, new1, new2, self._safe_moments(new1, new2))

    def _natural_step(self, name, old1, old2, h, P, ctx):
        """Compiled natural-gradient step of full-covariance nodes.

        The same numbers as the numpy branch of :meth:`_update_factor`
        (:meth:`_node_target`, the blend with each node's ``rho_i``,
        :meth:`_safe_moments`); returns the new natural parameters and
        their moments, or None for the moments when a node is not a valid
        Gaussian.
        """
        alpha = self._prior_precision(name, ctx.params)
        if alpha.ndim == 1:
            alpha = np.diag(alpha)
        n, d = old1.shape
        new1, new2 = np.empty((n, d)), np.empty((n, d, d))
        sub = Moments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty(n))
        c = np.ascontiguousarray
        failed = _gaussian_fast.natural_step(
            c(old1, dtype=np.float64),
            c(old2, dtype=np.float64),
            c(h, dtype=np.float64),
            c(P, dtype=np.float64),
            c(np.broadcast_to(ctx.row_scale, (n,)), dtype=np.float64),
            c(alpha, dtype=np.float64),
            c(np.broadcast_to(ctx.row_rho, (n,)), dtype=np.float64),
            new1,
            new2,
            sub.mean,
            sub.second,
            sub.var,
            sub.logdet,
        )
        valid = (
            failed == 0
            and np.all(np.isfinite(sub.logdet))
            and np.all(np.isfinite(new1))
            and np.all(np.isfinite(new2))
        )
        return new1, new2, sub if valid else None

    def _with_nodes(self, name, current, nodes, new1, new2, sub):
        """The side's factor with ``nodes`` replaced, carrying its moments; and validity."""
        if _all_rows(nodes, current[0].shape[0]):
            # Every node moved (a batch step): the new arrays are the factor.
            if sub is None:
                return (new1, new2), False
            return Factor((new1, new2), current.family, {"moments": sub}), True
        eta1, eta2 = current[0].copy(), current[1].copy()
        eta1[nodes] = new1
        eta2[nodes] = new2
        if sub is None:
            return (eta1, eta2), False
        # The new value carries its moments: those of the updated nodes were
        # computed by the validity test, the others are unchanged.
        old = self._moments(name, {name: current})
        moments = Moments(old.mean.copy(), old.second.copy(), old.var.copy(), old.logdet.copy())
        moments.mean[nodes], moments.second[nodes] = sub.mean, sub.second
        moments.var[nodes], moments.logdet[nodes] = sub.var, sub.logdet
        return Factor((eta1, eta2), current.family, {"moments": moments}), True

    def _diagonal_update(self, old1, old2, tgt1, tgt2, rho):
        """Fully factorised update: one coordinate at a time (eq. 7).

        ``tgt2`` holds ``-(diag(alpha) + tau s A) / 2``, the full target
        precision; coordinate k's target uses the off-diagonal couplings
        with the other coordinates' current means: Gauss-Seidel for
        ``update_order='sequential'``, the snapshot for ``'joint'``.
        """
        d = self._dim
        prec_full = -2.0 * tgt2
        mean = old1 / (-2.0 * old2)
        new1, new2 = old1.copy(), old2.copy()
        sequential = getattr(self, "update_order", "sequential") == "sequential"
        snap = mean.copy()
        r = rho
        for k in range(d):
            src = mean if sequential else snap
            coupling = (
                np.einsum("nj,nj->n", prec_full[:, k, :], src) - prec_full[:, k, k] * src[:, k]
            )
            t1 = tgt1[:, k] - coupling
            t2 = -0.5 * prec_full[:, k, k]
            new1[:, k] = old1[:, k] + r * (t1 - old1[:, k])
            new2[:, k] = old2[:, k] + r * (t2 - old2[:, k])
            mean[:, k] = new1[:, k] / (-2.0 * new2[:, k])
        return new1, new2

    def _probe_loss(self, probe, params):
        """Expected loss per probe rating, for the engine's step safety.

        Paquet's divergence (Fig. 2) keeps every factor a valid Gaussian
        while the means grow without bound, so validity alone cannot catch
        it; the engine rejects a step that more than doubles this loss.
        Gaussian: the expected squared residual; otherwise
        ``-E[log p(r | f)]`` under the Gaussian approximation of ``f``.
        """
        return self._strategy.probe_loss(self, self._prep_of(probe), params)

    # ------------------------------------------------------------------ ELBO
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
            e_log_p = 0.5 * n * (log_det - d * _LOG_2PI) - 0.5 * quad
            entropy = 0.5 * n * d * (1.0 + _LOG_2PI) - 0.5 * sum_logdet
            total += e_log_p + entropy
        prior = self._prior_natural()
        total -= float(params["mean"].distribution.kl(Gaussian.from_natural(*prior["mean"])))
        for key in ("noise", "user_precision", "item_precision"):
            if key in params:
                family = self._factor_families[key]
                kl = params[key].distribution.kl(family.from_natural(*prior[key]))
                total -= float(np.sum(kl))
        return float(total)

    # ------------------------------------------------------------ prediction
    def _f_moments(self, users, items, params):
        """Exact posterior mean and variance of ``f = mu + u.v + b + c``."""
        mu, var_mu = self._global_mean(params)
        n = users.shape[0]
        mean = np.empty(n)
        var = np.empty(n)
        k = self.n_components
        if (
            _gaussian_fast is not None
            and np.all(self._known("users", params, users))
            and np.all(self._known("items", params, items))
        ):
            # The compiled loop reads each pair's moments in place: the
            # gathered d x d copies below were most of a binary fit's time.
            w, y = self._moments("users", params), self._moments("items", params)
            c64 = np.ascontiguousarray
            _gaussian_fast.rating_moments(
                c64(users, dtype=np.int64),
                c64(items, dtype=np.int64),
                c64(w.mean, dtype=np.float64),
                c64(w.second, dtype=np.float64),
                c64(y.mean, dtype=np.float64),
                c64(y.second, dtype=np.float64),
                mean,
                var,
            )
            return mean + mu, var + var_mu
        for chunk in gen_batches(n, _CHUNK):
            w = self._node_moments("users", params, users[chunk])
            y = self._node_moments("items", params, items[chunk])
            # g = u.v + b + c; w = (u, b), y = (v, c).
            e_g = np.sum(w.mean[:, :k] * y.mean[:, :k], axis=1) + w.mean[:, k] + y.mean[:, k]
            e_uv2 = np.einsum("nij,nij->n", w.second[:, :k, :k], y.second[:, :k, :k])
            e_b2 = w.second[:, k, k]
            e_c2 = y.second[:, k, k]
            # Cross terms: E[(u.v) b] = E[u b] . E[v], E[(u.v) c] = E[u] . E[v c].
            e_uvb = np.sum(w.second[:, :k, k] * y.mean[:, :k], axis=1)
            e_uvc = np.sum(w.mean[:, :k] * y.second[:, :k, k], axis=1)
            e_bc = w.mean[:, k] * y.mean[:, k]
            e_g2 = e_uv2 + e_b2 + e_c2 + 2.0 * (e_uvb + e_uvc + e_bc)
            mean[chunk] = mu + e_g
            var[chunk] = var_mu + np.maximum(e_g2 - e_g * e_g, 0.0)
        return mean, var

    # ----------------------------------------------------- ordinal thresholds
    def _hyperparameter_statistics(self, data, prep):
        return self._strategy.hyperparameter_statistics(self, prep)

    def _update_hyperparameters(self, hyper, ctx):
        """Learn the ordinal thresholds after each accepted step (the prior is unchanged)."""
        if hyper is None:
            return False
        self._strategy.update_thresholds(self, hyper, ctx.rho)
        return True  # the likelihood changed: the workers need the new thresholds

    def _on_params_updated(self):
        self._prep = None
        if self.__dict__.get("_in_partial_fit") is False and self._alg1_passes() is not None:
            self._warn_alg1()
        params = self.natural_params_
        self.user_counts_ = self._row_totals("users").copy()
        self.item_counts_ = self._row_totals("items").copy()
        self.n_users_, self.n_items_ = self.user_counts_.shape[0], self.item_counts_.shape[0]
        k = self.n_components
        for name, side in SIDES.items():
            mom = self._node_moments(name, params, np.arange(params[name][0].shape[0]))
            cov = mom.second - mom.mean[..., :, None] * mom.mean[..., None, :]
            setattr(self, f"{side.prefix}_mean_", mom.mean)
            setattr(self, f"{side.prefix}_covariance_", cov)
            setattr(self, f"{side.prefix}_factors_", mom.mean[:, :k])
            setattr(self, f"{side.prefix}_bias_", mom.mean[:, k])
            setattr(self, f"{side.prefix}_precision_", self._prior_precision(name, params))
        self.global_mean_, self.global_mean_variance_ = self._global_mean(params)
        self.noise_precision_ = self._strategy.noise(self, params)[0] if self._conjugate else None
        if "noise" in params:
            q = params["noise"].distribution
            self.noise_shape_ = float(q.shape)
            self.noise_rate_ = float(q.rate)


_GAUSSIAN = GaussianRatings()
_GLM = GLMRatings()
_MOMENT_MATCHED = MomentMatchedRatings()
