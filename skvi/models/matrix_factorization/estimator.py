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

The estimator's other concerns live beside it: its parameters
(:mod:`~skvi.models.matrix_factorization.parameters`), the validation of
the ratings (:mod:`~skvi.models.matrix_factorization.inputs`) and the
engine's hooks by concern: the id maps and minibatches
(:mod:`~skvi.models.matrix_factorization.data`), the priors and the start
(:mod:`~skvi.models.matrix_factorization.priors`), the node step
(:mod:`~skvi.models.matrix_factorization.updates`), the ELBO
(:mod:`~skvi.models.matrix_factorization.elbo`), the moments the
strategies and predictions read
(:mod:`~skvi.models.matrix_factorization.posterior`), the settings and
fitted attributes (:mod:`~skvi.models.matrix_factorization.structure`) and
the ranking of :meth:`SVIMatrixFactorization.recommend` with the rated
pairs it leaves out (:mod:`~skvi.models.matrix_factorization.recommend`).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import ClassifierTags
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted

from ...engine import SVIEstimator
from .conjugate import GaussianRatings
from .data import RatingsData
from .elbo import BoundHooks
from .inputs import matrix_ratings
from .moment_matched import MomentMatchedRatings
from .nodes import prepare
from .nonconjugate import GLMRatings
from .parameters import PARAMETER_CONSTRAINTS, check_bool, has_proba, is_conjugate, is_ordinal
from .posterior import NodePosterior
from .priors import PriorHooks
from .recommend import recommend
from .structure import ModelStructure
from .updates import NodeHooks

__all__ = ["SVIMatrixFactorization"]

_GAUSSIAN = GaussianRatings()
_GLM = GLMRatings()
_MOMENT_MATCHED = MomentMatchedRatings()


def _has_proba(est):
    return has_proba(est.likelihood)


_check_bool = check_bool


class SVIMatrixFactorization(
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    RegressorMixin,
    ModelStructure,
    RatingsData,
    PriorHooks,
    NodeHooks,
    BoundHooks,
    NodePosterior,
    SVIEstimator,
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
    precision.

    **Classifier or regressor.**  With ``'bernoulli'`` and ``'ordinal'``
    the ratings are class labels and the model is a scikit-learn
    classifier (its tags say so): :meth:`predict` gives labels of the type
    of ``classes_``, :meth:`predict_proba` the class probabilities and
    :meth:`score` the accuracy.  With the other likelihoods it is a
    regressor: :meth:`predict` gives the predictive mean (and standard
    deviation) and :meth:`score` ``R^2``.  :meth:`predict_mean` gives the
    predictive mean rating of every likelihood, :meth:`recommend` the
    items of highest mean for each user, and
    :meth:`log_predictive_density` the mean log predictive probability.

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
        The rating values of ``'bernoulli'`` and ``'ordinal'``, sorted, of
        the type of the ratings (integers, floats or strings); ratings are
        these classes' indices to the likelihood.
    rating_range_ : tuple
        The smallest and largest training rating (``predict``'s bounds
        with ``clip=True``).
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
    >>> clf.predict(X[:4])                  # labels, of the type of the ratings
    array([0, 0, 1, 0])
    >>> bool(clf.score(X, clicks) > 0.8)    # accuracy
    True

    User 0's three items of highest predicted mean (every pair of this X
    is rated, so none is left out as seen):

    >>> items, mean, std = mf.recommend([0], n=3, exclude_seen=False)
    >>> bool(np.all(np.diff(mean[0]) <= 0))
    True
    """

    _parameter_constraints = PARAMETER_CONSTRAINTS

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
    def predict(self, X, return_std=False, *, include_noise=True, clip=False):
        """Predicted ratings: class labels, or the posterior predictive mean (and std).

        For the categorical likelihoods (``'bernoulli'``, ``'ordinal'``) the
        model is a classifier: the label of :meth:`predict_proba`'s most
        probable class, of the type of ``classes_`` (integer labels give
        integers, strings strings).  For the others it is a regressor: the
        posterior predictive mean, exact for the Gaussian likelihood, and
        for the others integrated over the Gaussian with the linear
        predictor's exact posterior mean and variance by Gauss-Hermite
        quadrature (the expected count for ``'poisson'``); the mean of a
        categorical likelihood comes from :meth:`predict_mean`.

        An unknown user or item (an id never seen in fitting) is predicted
        from its prior: zero factors and bias, with the prior's variance, so
        the prediction falls back to the global mean plus the known side's
        bias and its standard deviation widens accordingly.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2)
            (user, item) id pairs.
        return_std : bool, default=False
            Also return the predictive standard deviation (regressor
            likelihoods; a classifier's is in :meth:`predict_mean`).
        include_noise : bool, default=True
            Whether the standard deviation includes the observation noise.
            True: the standard deviation of a new rating, the model's
            uncertainty and the noise together (for the Gaussian likelihood
            ``sqrt(Var[f] + E[1 / tau])``).  False: the model's own
            uncertainty of the mean rating, ``sqrt(Var[f])`` for the
            Gaussian likelihood, the standard deviation of ``E[r | f]`` over
            the posterior of ``f`` for the others.
        clip : bool, default=False
            Keep the predicted means within the range of the training
            ratings, ``rating_range_`` (``np.clip``; the standard deviations
            are left as they are).  A Gaussian model predicts beyond the
            scale of the ratings for some pairs, such as 5.6 on a 1-5
            scale.  Labels are always among ``classes_``: ignored for the
            categorical likelihoods.

        Returns
        -------
        prediction : ndarray of shape (n_ratings,)
            Labels from ``classes_`` (categorical likelihoods) or predictive
            means.
        std : ndarray of shape (n_ratings,)
            Predictive standard deviations, when ``return_std`` is True.
        """
        check_is_fitted(self)
        return_std, include_noise, clip = (
            _check_bool(return_std, "return_std"),
            _check_bool(include_noise, "include_noise"),
            _check_bool(clip, "clip"),
        )
        if self._categorical:
            if return_std:
                raise ValueError(
                    f"predict returns class labels for likelihood={self.likelihood!r}, "
                    "which have no standard deviation: predict_mean(X, return_std=True) "
                    "gives the predictive mean rating and its standard deviation."
                )
            proba = self.predict_proba(X)
            return self.classes_[np.argmax(proba, axis=1)]
        users, items = self._pairs(X)
        mean, var = self._strategy.predictive(self, users, items, include_noise)
        if clip:
            mean = np.clip(mean, *self._target_range)
        if return_std:
            return mean, np.sqrt(np.maximum(var, 0.0))
        return mean

    def predict_mean(self, X, return_std=False, *, include_noise=True):
        """Posterior predictive mean (and standard deviation) of the ratings, for every likelihood.

        The mean rating :meth:`recommend` ranks by.  For the regressor
        likelihoods it is :meth:`predict`'s; for ``'bernoulli'`` the
        probability of the positive class ``classes_[1]`` (the mean of the
        0/1 indicator of ``classes_[1]``), for ``'ordinal'`` the expected
        rating value ``sum_k p_k classes_[k]`` (with the class indices
        ``0 .. K-1`` for labels that are not numbers).

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2)
            (user, item) id pairs.
        return_std : bool, default=False
            Also return the predictive standard deviation.
        include_noise : bool, default=True
            Whether the standard deviation includes the observation noise
            (see :meth:`predict`): False gives the standard deviation of the
            mean rating ``E[r | f]`` over the posterior of ``f``.

        Returns
        -------
        mean : ndarray of shape (n_ratings,)
            Predictive means.
        std : ndarray of shape (n_ratings,)
            Predictive standard deviations, when ``return_std`` is True.
        """
        check_is_fitted(self)
        return_std = _check_bool(return_std, "return_std")
        include_noise = _check_bool(include_noise, "include_noise")
        users, items = self._pairs(X)
        mean, var = self._strategy.predictive(self, users, items, include_noise)
        if return_std:
            return mean, np.sqrt(np.maximum(var, 0.0))
        return mean

    _has_proba = _has_proba

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
        """Accuracy of the labels (classifier likelihoods) or R^2 of the means (the others).

        As scikit-learn's classifiers and regressors score: for
        ``likelihood='bernoulli'`` and ``'ordinal'`` the (weighted) fraction
        of ratings whose :meth:`predict` label is right; for ``'gaussian'``,
        ``'poisson'``, ``'poisson-softplus'`` and other likelihoods the
        coefficient of determination ``R^2`` of :meth:`predict`'s means.
        Higher is better.  :meth:`log_predictive_density` gives the mean log
        predictive probability (or density) of the ratings instead.

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
            Accuracy, or ``R^2`` of the predictive means.
        """
        check_is_fitted(self)
        data = self._ratings(X, y)
        if self._categorical:
            proba = self._strategy.predict_proba(self, data.users, data.items)
            truth = data.ratings.astype(np.intp)
            return float(
                accuracy_score(truth, np.argmax(proba, axis=1), sample_weight=sample_weight)
            )
        mean, _ = self._strategy.predictive(self, data.users, data.items)
        return float(r2_score(data.ratings, mean, sample_weight=sample_weight))

    def recommend(self, users, n=10, exclude_seen=True, *, seen=None, include_noise=True):
        """For each user, the ``n`` items of highest predicted mean rating, best first.

        Items are ranked by :meth:`predict_mean` (:meth:`predict`'s means
        for the regressor likelihoods, the probability of ``classes_[1]``
        for ``'bernoulli'``, the expected rating for ``'ordinal'``) among
        every item of ``item_ids_``.  The predictions of a block of users
        for every item are formed at once, as matrix products of the nodes'
        moments.  An unknown user is recommended from the prior, as
        :meth:`predict` predicts it: the items with the best means for a
        user with zero factors and bias, and nothing to leave out.

        ``exclude_seen`` leaves out the items each user rated in the
        training ratings.  The model remembers the distinct (user, item)
        pairs of :meth:`fit` and ``partial_fit`` (ratings of weight 0
        excluded) as a sparse boolean users x items matrix, about 5 bytes a
        pair; repeated or weighted ratings add nothing, and the rest of the
        training data is not kept.  Recommending is where a recommender
        needs this record, and asking for the training ratings at each call
        would let a wrong set silently recommend what a user already rated.
        ``seen`` replaces it: after a fit on a dask cluster (whose ratings
        stay on the workers, so that no record is kept), for ratings that
        arrived since, or to leave out other items such as a held-out set.

        Parameters
        ----------
        users : array-like of shape (n_users,)
            User ids.
        n : int, default=10
            Items per user, in ``[1, n_items_]``.
        exclude_seen : bool, default=True
            Leave out the items each user has rated (the training ratings,
            or ``seen``).
        seen : array-like of shape (n_pairs, 2) or None, default=None
            (user, item) id pairs to leave out instead of the training
            ratings; pairs of other users or of unknown items are ignored.
        include_noise : bool, default=True
            Whether the standard deviation includes the observation noise
            (see :meth:`predict`).

        Returns
        -------
        items : ndarray of shape (n_users, n)
            Item ids, of ``item_ids_``, best first.
        mean : ndarray of shape (n_users, n)
            Their predictive means.
        std : ndarray of shape (n_users, n)
            Their predictive standard deviations.

        Raises
        ------
        ValueError
            When a user has fewer than ``n`` items left to recommend (the
            error names them), or for a bad argument.
        """
        check_is_fitted(self)
        exclude_seen = _check_bool(exclude_seen, "exclude_seen")
        include_noise = _check_bool(include_noise, "include_noise")
        return recommend(self, users, n, exclude_seen, seen, include_noise)

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
        data = self._encode_targets(matrix_ratings(X, type(self).__name__), reset=False)
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
        if self._categorical:
            # A classifier, as its predict (labels) and score (accuracy) are:
            # cross-validation then stratifies its folds by label.
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags(multi_class=is_ordinal(self.likelihood))
            tags.regressor_tags = None
        return tags

    @property
    def _estimator_type(self):
        # What scikit-learn before 1.7 read (the tags above since).
        return "classifier" if self._categorical else "regressor"

    @property
    def _n_features_out(self):
        return self.n_components

    @property
    def rating_range_(self):
        """The smallest and largest training rating: :meth:`predict`'s bounds with ``clip=True``."""
        check_is_fitted(self)
        low, high = self._target_range
        if self._categorical:
            return self.classes_[int(low)], self.classes_[int(high)]
        return low, high

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

    # ------------------------------------------------------- resolved parameters
    @property
    def _conjugate(self):
        """Whether the closed-form Gaussian model (learned noise) is fitted."""
        return is_conjugate(self.likelihood)

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

    @property
    def _dim(self):
        return self.n_components + 1
