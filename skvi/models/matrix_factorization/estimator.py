"""Bayesian matrix factorization of ratings by (stochastic) variational Bayes.

The model (seed 000, eq. 7, with biases and learned precisions)::

    r_mn   ~ N(mu + b_m + c_n + u_m . v_n, 1 / tau)
    w_m = (u_m, b_m) ~ N(0, diag(1 / alpha_u))        user node, K + 1 dims
    y_n = (v_n, c_n) ~ N(0, diag(1 / alpha_v))        item node, K + 1 dims
    mu ~ N(mean_prior, 1 / mean_precision_prior)
    tau, alpha_u[k], alpha_v[k] ~ Gamma(a0, rate=b0)

Each user's factors and bias form one Gaussian node (full covariance, or
fully factorised as Paquet's eq. 7), and likewise for each item, so the two
groups are symmetric: a node's "design" from the other side is
``x = (v, 1)`` with offset ``c`` (for a user) or ``z = (u, 1)`` with offset
``b`` (for an item).  Every conditional is conjugate, so coordinate ascent
and natural-gradient steps have closed forms (seed 000, eq. 5-6).
"""

import copy
import numbers

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq, minimize
from scipy.special import digamma
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted

from ...engine import ENGINE_PARAMETER_CONSTRAINTS, RowStatistics, Samples, SVIEstimator
from ...expfam import Gamma, Gaussian, MultivariateGaussian, Wishart, _cholesky_logdet
from ...likelihoods import Bernoulli, Likelihood, Ordinal, get_likelihood
from ...update_rules import ALGORITHMS, UPDATE_RULE_PARAMETER_CONSTRAINTS, make_update_rule
from . import nonconjugate

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None

__all__ = ["SVIMatrixFactorization"]

_LOG_2PI = np.log(2.0 * np.pi)
#: Ratings per chunk when per-rating d x d products are formed (predict).
_CHUNK = 8192
#: Gauss-Hermite nodes of the predictive integrals (non-Gaussian likelihoods).
_PREDICT_NODES = 40
#: Gauss-Hermite nodes of the probe loss.
_PROBE_NODES = 20
#: Damped fixed-point iterations of ``transform`` (non-Gaussian likelihoods).
_FOLD_IN_ITER = 30
#: Gauss-Hermite nodes of ``E_f`` per partner draw with ``expectation='quadrature'``,
#: and of the ordinal threshold fit.
_F_NODES = 10


class _Ratings:
    """Ratings as three aligned arrays; indexable by rows like an ndarray.

    The engine only needs ``shape[0]`` and ``data[rows]``, so this is how
    the (user, item, rating) triples travel through its minibatch loop.
    """

    __slots__ = ("users", "items", "ratings")

    def __init__(self, users, items, ratings):
        self.users = users
        self.items = items
        self.ratings = ratings

    @property
    def shape(self):
        return (self.users.shape[0],)

    def __getitem__(self, rows):
        return _Ratings(self.users[rows], self.items[rows], self.ratings[rows])


class _Side:
    """One side (users or items) of a prepared minibatch."""

    __slots__ = ("nodes", "counts", "ones", "values", "other_nodes", "row", "col", "ratings")

    def __init__(self, nodes, counts, ones, values, other_nodes, row, col, ratings):
        self.nodes = nodes  # distinct node ids of this side in the batch
        self.counts = counts  # ratings per node in the batch (C_i)
        self.ones = ones  # CSR indicator, nodes x other_nodes
        self.values = values  # CSR ratings, nodes x other_nodes
        self.other_nodes = other_nodes
        # Per rating: its node's position in ``nodes``, its partner's in
        # ``other_nodes``, and the rating (the non-conjugate statistics are
        # not sums over the CSR matrices).
        self.row = row
        self.col = col
        self.ratings = ratings


class _ChildSample:
    """Paquet's Alg. 1 minibatch: the users' and the items' own samples.

    ``for_users`` holds up to C ratings of every user, ``for_items`` up to C
    of every item; the global mean and noise precision use ``for_users``.
    """

    __slots__ = ("for_users", "for_items")

    def __init__(self, for_users, for_items):
        self.for_users = for_users
        self.for_items = for_items


def _side(nodes_of, partners_of, ratings):
    """CSR indicator and rating matrices of one side of a minibatch."""
    nodes, inv = np.unique(nodes_of, return_inverse=True)
    partners, inv_p = np.unique(partners_of, return_inverse=True)
    shape = (nodes.shape[0], partners.shape[0])
    ind = sp.csr_matrix((np.ones(ratings.shape[0]), (inv, inv_p)), shape=shape)
    val = sp.csr_matrix((ratings, (inv, inv_p)), shape=shape)
    counts = np.bincount(inv, minlength=shape[0]).astype(float)
    return _Side(nodes, counts, ind, val, partners, inv, inv_p, ratings)


def _prepare(data):
    """Index a minibatch of ratings for sparse aggregation per node."""
    if isinstance(data, _ChildSample):
        for_users, for_items = data.for_users, data.for_items
    else:
        for_users = for_items = data
    r = for_users.ratings
    return {
        "users": _side(for_users.users, for_users.items, r),
        "items": _side(for_items.items, for_items.users, for_items.ratings),
        # The side whose ratings are the minibatch of the global factors.
        "global_side": "users",
        "same_sides": for_users is for_items,
        "n": float(r.shape[0]),
        "sum_r": float(np.sum(r)),
        "sum_r2": float(np.dot(r, r)),
        "data": data,
    }


def _sample_children(nodes, n_children, rng):
    """Positions of up to ``n_children`` random ratings of every node."""
    order = np.lexsort((rng.random_sample(nodes.shape[0]), nodes))
    sorted_nodes = nodes[order]
    starts = np.flatnonzero(np.r_[True, sorted_nodes[1:] != sorted_nodes[:-1]])
    rank = np.arange(nodes.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, nodes.shape[0]]))
    return np.sort(order[rank < n_children])


class _Moments:
    """Mean and second moment of every node of one side.

    ``mean`` is (n, d); ``second`` is (n, d, d) = Sigma + m m^T; ``var`` is
    the (n, d) diagonal of Sigma; ``logdet`` the (n,) log-determinant of the
    precision.
    """

    __slots__ = ("mean", "second", "var", "logdet")

    def __init__(self, mean, second, var, logdet):
        self.mean = mean
        self.second = second
        self.var = var
        self.logdet = logdet

    def take(self, rows):
        return _Moments(self.mean[rows], self.second[rows], self.var[rows], self.logdet[rows])


def _moments_full(eta1, eta2):
    """Moments of full-covariance nodes; NaN rows where not positive definite."""
    if _gaussian_fast is not None:
        eta1 = np.ascontiguousarray(eta1, dtype=np.float64)
        eta2 = np.ascontiguousarray(eta2, dtype=np.float64)
        n, d = eta1.shape
        out = _Moments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty(n))
        _gaussian_fast.moments_from_natural(eta1, eta2, out.mean, out.second, out.var, out.logdet)
        return out
    return _moments_full_numpy(eta1, eta2)


def _moments_full_numpy(eta1, eta2):
    """numpy reference of :func:`_moments_full` (raises if not positive definite)."""
    precision = -2.0 * eta2
    chol = np.linalg.cholesky(precision)
    eye = np.broadcast_to(np.eye(eta1.shape[-1]), precision.shape)
    chol_inv = np.linalg.solve(chol, eye)
    cov = np.swapaxes(chol_inv, -1, -2) @ chol_inv
    mean = (cov @ eta1[..., None])[..., 0]
    second = cov + mean[..., :, None] * mean[..., None, :]
    logdet = _cholesky_logdet(chol)
    return _Moments(mean, second, np.diagonal(cov, axis1=-2, axis2=-1).copy(), logdet)


def _moments_diag(eta1, eta2):
    precision = -2.0 * eta2
    mean = eta1 / precision
    var = 1.0 / precision
    second = mean[..., :, None] * mean[..., None, :]
    idx = np.arange(mean.shape[-1])
    second[..., idx, idx] += var
    return _Moments(mean, second, var, np.sum(np.log(precision), axis=-1))


class _Aggregates:
    """Sums over each node's rated partners, from the partners' moments.

    For a node whose partners have design ``x = (f, 1)`` and offset ``o``
    (f the partner's factors, o its bias): ``A = sum E[x x^T]``,
    ``B = sum E[x o]``, ``h = sum r E[x] - B``, plus the sums of ``E[x]``,
    ``E[o]``, ``r E[o]`` and ``E[o^2]`` used by the ELBO and the noise and
    mean updates.
    """

    __slots__ = ("A", "B", "sx", "rx", "so", "ro", "soo")


def _aggregate(side, other):
    """Aggregates of ``side``'s nodes from the partners' moments ``other``.

    One sparse product gathers every partner quantity at once: the upper
    triangle of ``E[f f^T]``, ``E[f o]``, ``E[f]``, ``E[o]``, ``E[o^2]`` and
    a column of ones (the rating counts); a second one weights ``E[f]``,
    ``E[o]`` and ones by the ratings.  The rest of ``E[x x^T]`` is one of
    these (``x = (f, 1)``), so the (d x d) products are never formed.
    """
    m = other.mean
    S = other.second
    n, d = m.shape
    k = d - 1
    iu, ju = np.triu_indices(k)
    t = iu.shape[0]
    flat = S.reshape(n, d * d)
    cols = np.empty((n, t + 2 * k + 3))
    np.take(flat, iu * d + ju, axis=1, out=cols[:, :t])
    cols[:, t : t + k] = S[:, :k, k]
    cols[:, t + k : t + 2 * k + 1] = m
    cols[:, t + 2 * k + 1] = S[:, k, k]
    cols[:, t + 2 * k + 2] = 1.0
    sums = np.asarray(side.ones @ cols)
    rsums = np.asarray(side.values @ cols[:, t + k :])
    triu, exo, sm = sums[:, :t], sums[:, t : t + k], sums[:, t + k : t + 2 * k + 1]
    count = sums[:, t + 2 * k + 2]
    agg = _Aggregates()
    A = np.empty((sums.shape[0], d * d))
    A[:, iu * d + ju] = triu
    A[:, ju * d + iu] = triu
    A = A.reshape(-1, d, d)
    A[:, :k, k] = sm[:, :k]
    A[:, k, :k] = sm[:, :k]
    A[:, k, k] = count
    agg.A = A
    agg.B = np.concatenate([exo, sm[:, k:]], axis=1)
    agg.sx = np.concatenate([sm[:, :k], count[:, None]], axis=1)
    agg.rx = np.concatenate([rsums[:, :k], rsums[:, -1:]], axis=1)
    agg.so = sm[:, k].copy()
    agg.ro = rsums[:, k].copy()
    agg.soo = sums[:, t + 2 * k + 1].copy()
    return agg


def _diagonal_target(tgt1, tgt2, mean):
    """Natural target of a fully factorised node from its full-covariance one.

    For ``q`` diagonal, coordinate ``k``'s natural-gradient target is
    precision ``Lambda_kk`` and ``eta1_k - sum_{j != k} Lambda_kj m_j``
    (``m`` the current means): the Jacobi form of :meth:`_diagonal_update`.
    """
    prec = -2.0 * tgt2
    diag = np.diagonal(prec, axis1=-2, axis2=-1)
    coupling = (prec @ mean[..., None])[..., 0] - diag * mean
    return tgt1 - coupling, -0.5 * diag


def _gamma_moments(natural):
    rate, shape_m1 = natural
    shape, rate = shape_m1 + 1.0, -rate
    return shape / rate, digamma(shape) - np.log(rate)


class SVIMatrixFactorization(TransformerMixin, RegressorMixin, SVIEstimator):
    """Bayesian matrix factorization of ratings by stochastic variational Bayes.

    Models a rating of item ``n`` by user ``m`` as::

        r_mn ~ N(mu + b_m + c_n + u_m . v_n, 1 / tau)

    with ``K = n_components`` factors ``u_m``, ``v_n``, user and item biases
    ``b_m``, ``c_n`` and a global mean ``mu``.  Each user's ``(u_m, b_m)``
    has the prior ``N(0, diag(1 / alpha_u))`` and each item's ``(v_n, c_n)``
    the prior ``N(0, diag(1 / alpha_v))``; the noise precision ``tau`` and
    the per-component prior precisions ``alpha_u``, ``alpha_v``
    (automatic relevance determination) have Gamma priors and are learned
    by variational Bayes unless fixed with ``noise_precision`` and
    ``factor_precision``.

    The posterior is approximated by a Gaussian per user and per item
    (``covariance='full'``: over its ``K + 1`` factors and bias jointly;
    ``'diagonal'``: fully factorised, Paquet's eq. 7), a Gaussian for
    ``mu`` and Gamma distributions for the precisions.

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
    v_n``: generalised PMF by Monte-Carlo structured SVI (seed 002, section
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
    likelihood : {'gaussian', 'bernoulli', 'poisson', 'ordinal'} or Likelihood, \
default='gaussian'
        Observation model.  ``'gaussian'`` is the conjugate model above
        (closed-form updates, learned noise precision).  ``'bernoulli'``:
        two rating values (``classes_``; the larger is the positive class),
        logistic link.  ``'poisson'``: counts, exponential link (pass
        ``skvi.likelihoods.Poisson(link='logistic')`` for seed 002's link).
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
        Fixed prior precision of every factor and bias; ``None`` learns one
        precision per component and side (ARD).
    factor_prior : {'ard', 'wishart'}, default='ard'
        Prior precision of the user (and of the item) nodes.  ``'ard'``:
        ``diag(alpha)`` with a Gamma prior per component (automatic
        relevance determination).  ``'wishart'``: a full matrix ``Lambda``
        with a Wishart prior (``df = d - 1 + 2 a0``, scale ``I / (2 b0)``,
        which is ``Gamma(a0, b0)`` for ``d = 1``), as in Bayesian PMF: the
        prior then also learns how the factors and the bias co-vary.  On
        MovieLens-100k it predicts better (``benchmarks/movielens.py``).
        Ignored when ``factor_precision`` is set.
    precision_prior : tuple of (float, float), default=(1e-3, 1e-3)
        Shape and rate ``(a0, b0)`` of the Gamma priors on the learned
        precisions (vague by default, as in :class:`skvi.GaussianGammaVB`).
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
        Update rule of the user and item nodes (seed 002): natural-gradient
        steps of mean and covariance, natural covariance with an AdaGrad
        mean step, or AdaGrad on the mean and the Cholesky factor.
        ``'auto'``: ``'mc-ssvi'`` for the Gaussian likelihood (the exact
        conjugate updates: coordinate ascent in batch mode) and
        ``'h-mc-ssvi'``, the paper's best for PMF, otherwise.
    gradient_learning_rate : float, default=1.0
        AdaGrad learning rate of the ordinary-gradient parts of
        ``'h-mc-ssvi'`` and ``'s-dsvi'`` (seed 002 uses 1.0).
    expectation : {'mc', 'quadrature'}, default='mc'
        Non-Gaussian likelihoods: given each draw of the partner node,
        ``E_f[l']``, ``E_f[l'']`` and ``E_f[log p]`` from one draw of ``f``
        (``'mc'``) or from 10-node Gauss-Hermite quadrature.
    n_mc_samples : int, default=10
        Draws of the partner node per rating and step (``S1`` of seed
        002's eq. 52; 10 as in the paper).
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
    max_iter : int, default=100
        Maximum number of passes over the ratings in ``fit``.
    tol : float, default=1e-4
        ``fit`` stops when the relative ELBO change between passes is below
        ``tol``.  The batch ELBO creeps up for many passes near the optimum;
        on MovieLens-100k, ``1e-5`` took about twice the passes of ``1e-4``
        for a test RMSE lower by about 0.0003.
    learning_offset : float, default=1.0
        ``tau_0`` of the default schedule ``rho_t = (t + tau_0) ** -kappa``,
        evaluated at each node's own step count.
    learning_decay : float, default=0.85
        ``kappa`` of the default schedule.  With per-node counters the
        steps of a node are close to a running average of its targets
        (``kappa = 1``), which suits a single pass over a stream.
    learning_rate : None, float or Schedule, default=None
        Overrides the two above.
    total_samples : 'auto' or float, default='auto'
        ``N`` of the ``N / |S|`` scaling of the global mean and noise
        precision in ``partial_fit``; ``'auto'`` counts the ratings seen.
        Users and items always use their own running counts there.
    update_order : {'sequential', 'joint'}, default='sequential'
        Paquet's option (a) (each factor group from the groups already
        updated) or (b) (every target from one snapshot).
    step_safety : bool, default=True
        Reject and shrink steps that make a factor invalid, see
        :class:`skvi.engine.SVIMixin`.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial factors and the minibatch order.
    verbose : int, default=0
        Print the ELBO after each pass.

    Attributes
    ----------
    n_users_, n_items_ : int
        Number of user and item slots (largest id seen plus one).
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
        Posterior means of ``alpha_u``, ``alpha_v`` (factors then bias);
        with ``factor_prior='wishart'`` the matrices ``E[Lambda_u]``,
        ``E[Lambda_v]``.
    user_counts_, item_counts_ : ndarray
        Ratings per user and item used for the ``N_i`` of the steps.
    likelihood_ : Likelihood or None
        The fitted observation model (ordinal: with the learned
        thresholds); None for the conjugate Gaussian model.
    classes_ : ndarray
        The rating values of ``'bernoulli'`` and ``'ordinal'``, sorted;
        ratings are these classes' indices to the likelihood.
    natural_params_, lower_bounds_, lower_bound_, n_iter_, n_batch_iter_, \
n_samples_seen_, converged_, n_rejected_steps_
        From the engine, see :class:`skvi.engine.SVIMixin`.

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
        "factor_precision": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "factor_prior": [StrOptions({"ard", "wishart"})],
        "precision_prior": [tuple, list],
        "mean_prior": [numbers.Real],
        "mean_precision_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "init_scale": [Interval(numbers.Real, 0, None, closed="left")],
        "children_per_node": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "likelihood": [StrOptions({"gaussian", "bernoulli", "poisson", "ordinal"}), Likelihood],
        "algorithm": [StrOptions({"auto", *ALGORITHMS})],
        "gradient_learning_rate": UPDATE_RULE_PARAMETER_CONSTRAINTS["gradient_learning_rate"],
        "expectation": [StrOptions({"mc", "quadrature"})],
        "n_mc_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "learn_thresholds": ["boolean"],
        **ENGINE_PARAMETER_CONSTRAINTS,
    }

    _local_depends_on_globals = False
    _row_groups = ("users", "items")
    # The prior precisions' children are the nodes, all in memory.
    _hierarchical_factors = ("user_precision", "item_precision")

    def __init__(
        self,
        n_components=10,
        *,
        likelihood="gaussian",
        covariance="full",
        noise_precision=None,
        factor_precision=None,
        factor_prior="ard",
        precision_prior=(1e-3, 1e-3),
        mean_prior=0.0,
        mean_precision_prior=1e-2,
        init_scale=0.1,
        children_per_node=None,
        algorithm="auto",
        gradient_learning_rate=1.0,
        expectation="mc",
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
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the posterior to ratings.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix of shape (n_users, n_items)
            Either (user, item) index pairs, with the ratings in ``y``; or,
            with ``y=None``, a sparse matrix whose stored entries are the
            observed ratings.  Indices are array positions (non-negative
            integers); a user or item never rated keeps its prior.
        y : array-like of shape (n_ratings,) or None
            Ratings for the index pairs.

        Returns
        -------
        self : SVIMatrixFactorization
            The fitted estimator.
        """
        data = self._encode_targets(self._as_ratings(X, y), reset=True)
        self._in_partial_fit = False
        try:
            self._engine_fit(data)
        finally:
            self._fit_prep = None
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, classes=None, **kwargs):
        """Take stochastic natural-gradient steps on a minibatch of ratings.

        One step per ``batch_size`` ratings.  Users and items never seen
        before are added as they appear; each node's ``N_i`` is its running
        count of ratings, so the posterior describes the ratings seen so far.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix
            As in :meth:`fit`.
        y : array-like of shape (n_ratings,) or None
            As in :meth:`fit`.
        classes : array-like or None, default=None
            For ``likelihood='bernoulli'`` or ``'ordinal'``: all the rating
            values the stream can hold, in order, required on the first call
            unless its minibatch already holds them all.  Ignored afterwards
            and for the other likelihoods.
        **kwargs : dict
            Ignored (accepted for dask-ml's ``Incremental`` wrapper).

        Returns
        -------
        self : SVIMatrixFactorization
            The updated estimator.
        """
        first = not hasattr(self, "natural_params_")
        data = self._encode_targets(self._as_ratings(X, y), reset=first, classes=classes)
        self._in_partial_fit = True
        return self._engine_partial_fit(data)

    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of ratings.

        For the Gaussian likelihood the predictive mean and variance are
        exact.  For the others the linear predictor ``f`` is approximated
        by the Gaussian with its exact posterior mean and variance (as in
        seed 002's experiments) and the predictive moments are integrated
        over it by Gauss-Hermite quadrature: the probability of the
        positive class (``classes_[1]``) for ``'bernoulli'``, the expected
        count for ``'poisson'``, the expected rating value
        ``sum_k p_k classes_[k]`` for ``'ordinal'``.

        An unknown user or item (an index never seen in fitting) is
        predicted from its prior: zero factors and bias, with the prior's
        variance, so the prediction falls back to the global mean plus the
        known side's bias and its standard deviation widens accordingly.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2)
            (user, item) index pairs.
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
        users, items = self._check_pairs(X)
        if self._conjugate:
            mean, var = self._predictive(users, items)
        else:
            m_f, v_f = self._f_moments(users, items, self.natural_params_)
            lik = self.likelihood_
            if isinstance(lik, Ordinal):
                proba = lik.predictive_probabilities(m_f, v_f, n_points=_PREDICT_NODES)
                values = self.classes_.astype(float)
                mean = proba @ values
                var = proba @ (values * values) - mean * mean
            else:
                mean = lik.predictive_mean(m_f, v_f, n_points=_PREDICT_NODES)
                var = lik.predictive_variance(m_f, v_f, n_points=_PREDICT_NODES)
        if return_std:
            return mean, np.sqrt(np.maximum(var, 0.0))
        return mean

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
            (user, item) index pairs.

        Returns
        -------
        proba : ndarray of shape (n_ratings, n_classes)
            Columns in the order of ``classes_``; rows sum to one.
        """
        check_is_fitted(self)
        users, items = self._check_pairs(X)
        m_f, v_f = self._f_moments(users, items, self.natural_params_)
        lik = self.likelihood_
        if isinstance(lik, Ordinal):
            return lik.predictive_probabilities(m_f, v_f, n_points=_PREDICT_NODES)
        p1 = lik.predictive_mean(m_f, v_f, n_points=_PREDICT_NODES)
        return np.column_stack([1.0 - p1, p1])

    def score(self, X, y=None):
        """Mean predictive log-likelihood per rating (higher is better).

        For the Gaussian likelihood the predictive density of each rating
        is the Gaussian with the posterior predictive mean and variance of
        :meth:`predict`; for the others it is ``log E[p(r | f)]`` under the
        Gaussian approximation of ``f`` (Gauss-Hermite quadrature).  The
        negative of this score is the test NLL of seed 002's experiments.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix
            As in :meth:`fit`.
        y : array-like of shape (n_ratings,) or None
            Observed ratings.

        Returns
        -------
        score : float
            Average log predictive density.
        """
        check_is_fitted(self)
        data = self._encode_targets(self._as_ratings(X, y), reset=False)
        if not self._conjugate:
            m_f, v_f = self._f_moments(data.users, data.items, self.natural_params_)
            logp = self.likelihood_.predictive_logpdf(data.ratings, m_f, v_f, n_points=_PREDICT_NODES)
            return float(np.mean(logp))
        mean, var = self._predictive(data.users, data.items)
        resid = data.ratings - mean
        return float(np.mean(-0.5 * (_LOG_2PI + np.log(var) + resid * resid / var)))

    def transform(self, X):
        """Fold in new users: posterior mean factors of each row of X.

        Each row of X holds one new user's ratings (stored entries) of the
        fitted items; the user's posterior is computed with the items, the
        global mean and the precisions held fixed.  Items beyond the fitted
        ones are treated as unknown (their prior).

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
        data = self._encode_targets(self._as_ratings(X, None), reset=False)
        n_rows = X.shape[0]
        prep = _prepare(data)
        side = prep["users"]
        params = dict(self.natural_params_)
        n = side.nodes.shape[0]
        ones = np.ones(n)
        out = np.zeros((n_rows, self._dim))
        if self._conjugate:
            eta1, eta2 = self._node_target("users", *self._node_stats("users", prep, params), params, ones)
            # The exact posterior mean given the fixed globals; it is also the
            # fixed point of the coordinate updates of the diagonal family.
            out[side.nodes] = np.linalg.solve(-2.0 * eta2, eta1[..., None])[..., 0]
            return out[:, : self.n_components]
        # Non-conjugate: damped fixed-point (natural-gradient) iterations of
        # the new users from their prior, everything else held fixed; the
        # new users live in a scratch copy of the user side.
        new_ids = np.arange(n) + self.n_users_
        prior = self._initial_nodes("users", n, np.random.RandomState(0), np.zeros(n, bool))
        eta = params["users"]
        params["users"] = tuple(np.concatenate([a, b]) for a, b in zip(eta, prior))
        rows = side.nodes
        side.nodes = new_ids
        rng = np.random.default_rng(0)
        full = self.covariance == "full"
        for _ in range(_FOLD_IN_ITER):
            stats = self._node_stats("users", prep, params, rng=rng)
            tgt1, tgt2 = self._node_target("users", *stats, params, ones)
            old1, old2 = params["users"][0][new_ids], params["users"][1][new_ids]
            if not full:
                tgt1, tgt2 = _diagonal_target(tgt1, tgt2, old1 / (-2.0 * old2))
            e1, e2 = params["users"][0].copy(), params["users"][1].copy()
            e1[new_ids] = old1 + 0.5 * (tgt1 - old1)
            e2[new_ids] = old2 + 0.5 * (tgt2 - old2)
            params["users"] = (e1, e2)
        e1, e2 = params["users"]
        out[rows] = self._moments_from_natural(e1[new_ids], e2[new_ids]).mean
        return out[:, : self.n_components]

    def elbo(self, X, y=None):
        """Evidence lower bound of the current posterior on ratings X.

        Parameters
        ----------
        X : array-like of shape (n_ratings, 2) or sparse matrix
            As in :meth:`fit`; for the ELBO of the fitted posterior pass the
            training ratings.
        y : array-like of shape (n_ratings,) or None
            Ratings.

        Returns
        -------
        elbo : float
            ``E_q[log p(ratings, latent)] - E_q[log q]``.
        """
        check_is_fitted(self)
        data = self._encode_targets(self._as_ratings(X, y), reset=False)
        users, items = data.users, data.items
        if users.max(initial=-1) >= self.n_users_ or items.max(initial=-1) >= self.n_items_:
            raise ValueError("X holds users or items the model has not seen.")
        prep = _prepare(data)
        params = self.natural_params_
        return self._global_bound(params) + self._local_bound(data, prep, params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.two_d_array = True
        tags.target_tags.required = False
        return tags

    # ------------------------------------------------------------- input
    def _as_ratings(self, X, y):
        """Validate (X, y) or a sparse ratings matrix into ``_Ratings``."""
        if y is None:
            if not sp.issparse(X):
                raise ValueError(
                    "SVIMatrixFactorization: give either X of (user, item) "
                    "pairs with ratings y, or a scipy sparse users x items "
                    "matrix of ratings (y=None)."
                )
            coo = sp.coo_matrix(X)
            users = coo.row.astype(np.int64)
            items = coo.col.astype(np.int64)
            ratings = np.asarray(coo.data, dtype=np.float64)
        else:
            users, items = self._check_pairs(X)
            ratings = np.asarray(y)
            if ratings.ndim == 2 and ratings.shape[1] == 1:
                ratings = ratings[:, 0]
            if ratings.ndim != 1 or ratings.shape[0] != users.shape[0]:
                raise ValueError(
                    f"y must have shape ({users.shape[0]},) to match X; got {ratings.shape}."
                )
            try:
                ratings = ratings.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"y must be numeric ratings: {exc}") from None
        if not np.all(np.isfinite(ratings)):
            raise ValueError("Ratings must be finite; y (or X's stored entries) holds NaN or inf.")
        return _Ratings(users, items, ratings)

    @property
    def _conjugate(self):
        """Whether the closed-form Gaussian model (learned noise) is fitted."""
        return isinstance(self.likelihood, str) and self.likelihood == "gaussian"

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
        return _Ratings(data.users, data.items, ratings)

    def _baseline(self, y):
        """Linear predictor ``f0`` whose conditional mean is ``mean(y)``, and
        the mean curvature ``-l''`` there (the initial global mean and its
        precision per rating)."""
        lik = self.likelihood_
        target = float(np.mean(y)) if y.size else 0.0
        lo, hi = -30.0, 30.0
        g_lo = float(lik.conditional_mean(np.array(lo))) - target
        g_hi = float(lik.conditional_mean(np.array(hi))) - target
        if g_lo >= 0.0:
            f0 = lo
        elif g_hi <= 0.0:
            f0 = hi
        else:
            f0 = brentq(lambda f: float(lik.conditional_mean(np.array(f))) - target, lo, hi)
        curvature = float(np.mean(-lik.d2logpdf(y, f0))) if y.size else 1.0
        return f0, max(curvature, 1e-6)

    @staticmethod
    def _check_pairs(X):
        if sp.issparse(X):
            raise ValueError(
                "X must be an (n, 2) array of (user, item) indices here, not a sparse matrix."
            )
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != 2:
            raise ValueError(
                f"X must have shape (n_ratings, 2): (user, item) index pairs; got {X.shape}."
            )
        if X.dtype.kind not in "iuf" and X.dtype != bool:
            raise ValueError(f"X must hold integer indices; got dtype {X.dtype}.")
        if X.dtype.kind == "f":
            if not np.all(np.isfinite(X)):
                raise ValueError("X must hold integer indices; it holds NaN or inf.")
            if np.any(X != np.round(X)):
                raise ValueError("X must hold integer indices; it holds non-integer values.")
        if X.size and X.min() < 0:
            raise ValueError("X must hold non-negative user and item indices.")
        X = X.astype(np.int64)
        return X[:, 0].copy(), X[:, 1].copy()

    # ------------------------------------------------------------ structure
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
        names = ["mean"]
        if self.noise_precision is None and self._conjugate:
            names.append("noise")
        names += ["users", "items"]
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
        prior = tuple(self.precision_prior)
        if len(prior) != 2 or not all(
            isinstance(v, numbers.Real) and np.isfinite(v) and v > 0 for v in prior
        ):
            raise ValueError(
                f"precision_prior must be two positive numbers (shape, rate); got {self.precision_prior!r}."
            )
        return float(prior[0]), float(prior[1])

    def _validate_input(self, data, reset):
        if reset:
            self._hyper = self._check_prior_params()
            self._moment_cache = {}
            # Sizes and ratings per node of the first data, for the initial
            # nodes; the engine keeps the counts N_i from here on.
            self.user_counts_ = np.bincount(data.users).astype(float)
            self.item_counts_ = np.bincount(data.items).astype(float)
            self.n_users_ = self.user_counts_.shape[0]
            self.n_items_ = self.item_counts_.shape[0]
        self._fit_prep = None
        return data

    def _prepare_block(self, X, y=None):
        return self._encode_targets(self._as_ratings(X, y), reset=False)

    def _row_ids(self, data):
        if isinstance(data, _ChildSample):
            data = data.for_users
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
        key = "user_precision" if name == "users" else "item_precision"
        params = self.natural_params_ if params is None else params
        natural = params.get(key)
        if natural is None:
            natural = self._initial_precision_natural()
        cache = self.__dict__.setdefault("_precision_cache", {})
        hit = cache.get(key)
        if hit is not None and hit[0] is natural[0]:  # holds natural[0]: ids stay unique
            return hit[1]
        if self.factor_prior == "wishart":
            value = Wishart.from_natural(*natural).mean()
        else:
            value = _gamma_moments(natural)[0]
        cache[key] = (natural[0], value)
        return value

    def _precision_prior_natural(self):
        """Natural parameters of the prior of ``alpha_u`` (and ``alpha_v``).

        ARD: ``Gamma(a0, rate=b0)`` per component.  Wishart: ``(-b0 I,
        a0 - 1)``, the Wishart with ``df = d - 1 + 2 a0`` and scale
        ``I / (2 b0)``, which is ``Gamma(a0, rate=b0)`` when ``d = 1``.
        """
        a0, b0 = self._hyper
        d = self._dim
        if self.factor_prior == "wishart":
            return (-b0 * np.eye(d), np.array(a0 - 1.0))
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
        """Initial ``q`` of ``alpha_u`` and ``alpha_v``: mean ``a0 / b0``.

        For ARD that is the prior.  The Wishart prior's mean, ``(d - 1 +
        2 a0) / (2 b0) I``, would start the nodes far tighter than ARD's;
        its initial ``q`` keeps the prior's degrees of freedom and has the
        same mean as ARD's, ``(a0 / b0) I``.
        """
        eta1, eta2 = self._precision_prior_natural()
        if self.factor_prior != "wishart":
            return eta1, eta2
        a0, b0 = self._hyper
        df = 2.0 * float(eta2) + self._dim + 1.0
        return -0.5 * df * (b0 / a0) * np.eye(self._dim), eta2

    def _initialize_globals(self, data, random_state):
        a0, b0 = self._hyper
        params = {}
        # The tight start helps coordinate ascent, whose first sweep replaces
        # every node; the gradient rules of the other likelihoods step away
        # from the start instead (measured worse on the binary MovieLens task).
        tight = (
            self._conjugate and self.learning_method == "batch" and not self._in_partial_fit
        )
        params["users"] = self._initial_nodes(
            "users", self.n_users_, random_state, self.user_counts_ > 0, tight
        )
        params["items"] = self._initial_nodes(
            "items", self.n_items_, random_state, self.item_counts_ > 0, tight
        )
        r = data.ratings
        n = max(r.shape[0], 1)
        if not self._conjugate:
            # The Monte-Carlo draws, and the common random numbers of the
            # ELBO estimate.
            self._bound_seed = int(random_state.randint(np.iinfo(np.int32).max))
            self._mc_rng = np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
            f0, curvature = self._baseline(r)
            prec_mu = self.mean_precision_prior + n * curvature
            params["mean"] = (np.array(prec_mu * f0), np.array(-0.5 * prec_mu))
            if self.factor_precision is None:
                for key in ("user_precision", "item_precision"):
                    params[key] = self._initial_precision_natural()
            return params
        mean_r = float(np.mean(r)) if r.size else float(self.mean_prior)
        var_r = float(np.var(r)) if r.size > 1 else 1.0
        var_r = var_r if var_r > 0 else 1.0
        tau0 = 1.0 / var_r if self.noise_precision is None else float(self.noise_precision)
        prec_mu = self.mean_precision_prior + n * tau0
        params["mean"] = (np.array(prec_mu * mean_r), np.array(-0.5 * prec_mu))
        if self.noise_precision is None:
            shape = a0 + 0.5 * n
            params["noise"] = (np.array(-shape / tau0), np.array(shape - 1.0))
        if self.factor_precision is None:
            for key in ("user_precision", "item_precision"):
                params[key] = self._initial_precision_natural()
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
    def _moments_from_natural(self, eta1, eta2):
        if self.covariance == "full":
            return _moments_full(eta1, eta2)
        return _moments_diag(eta1, eta2)

    def _safe_moments(self, eta1, eta2):
        """Moments of nodes, or None when one is not a valid Gaussian."""
        if not (np.all(np.isfinite(eta1)) and np.all(np.isfinite(eta2))):
            return None
        if self.covariance == "diagonal":
            if not np.all(eta2 < 0):
                return None
            return _moments_diag(eta1, eta2)
        if _gaussian_fast is None:
            if not np.all(MultivariateGaussian.valid_natural(eta1, eta2)):
                return None
            return _moments_full_numpy(eta1, eta2)
        moments = _moments_full(eta1, eta2)
        if not np.all(np.isfinite(moments.logdet)):
            return None
        return moments

    def _moments(self, name, params):
        """Moments of every node of side ``name`` under ``params`` (cached)."""
        eta = params[name]
        for key, moments in self._moment_cache.get(name, ()):
            if key is eta[0]:
                return moments
        moments = self._moments_from_natural(*eta)
        self._remember(name, eta[0], moments)
        return moments

    def _remember(self, name, key, moments):
        entries = [e for e in self._moment_cache.get(name, ()) if e[0] is not key]
        self._moment_cache[name] = ([(key, moments)] + entries)[:2]

    def _node_moments(self, name, params, nodes):
        """Moments of the given nodes; ids never rated get the current prior.

        An id beyond the fitted ones, or a slot without ratings (a gap in
        the ids), is described by the prior alone.
        """
        n_fitted = params[name][0].shape[0]
        counts = self._row_totals(name)
        known = nodes < n_fitted
        gaps = nodes < counts.shape[0]
        known[gaps] &= counts[nodes[gaps]] > 0
        moments = self._moments(name, params)
        if np.all(known):
            n = moments.mean.shape[0]
            if nodes.shape[0] == n and np.array_equal(nodes, np.arange(n)):
                return moments  # every node, in order: no copy
            return moments.take(nodes)
        d = self._dim
        out = _Moments(
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

    def _scalars(self, params):
        """E[mu], Var[mu], E[tau], E[log tau]."""
        e1, e2 = params["mean"]
        prec = -2.0 * float(e2)
        mu = float(e1) / prec
        if "noise" in params:
            tau, log_tau = _gamma_moments(params["noise"])
            return mu, 1.0 / prec, float(tau), float(log_tau)
        if not self._conjugate:
            return mu, 1.0 / prec, np.nan, np.nan  # no Gaussian noise
        tau = float(self.noise_precision)
        return mu, 1.0 / prec, tau, float(np.log(tau))

    def _side_aggregates(self, prep, name, params):
        """Aggregates of side ``name`` from the other side's moments (cached)."""
        other = "items" if name == "users" else "users"
        key = params[other][0]
        cache = prep.setdefault("_agg", {})
        hit = cache.get(name)
        if hit is not None and hit[0] is key:
            return hit[1]
        side = prep[name]
        agg = _aggregate(side, self._node_moments(other, params, side.other_nodes))
        cache[name] = (key, agg)
        return agg

    def _prediction_sums(self, prep, params):
        """sum E[g], sum r E[g] and sum E[g^2] over the batch (g = f - mu)."""
        cache = prep.get("_agg", {})
        sides = (("items", "users"), ("users", "items")) if prep["same_sides"] else ()
        for name, other in sides:
            hit = cache.get(name)
            if hit is not None and hit[0] is params[other][0]:
                break
        else:
            name = prep["global_side"]
        agg = self._side_aggregates(prep, name, params)
        side = prep[name]
        mom = self._node_moments(name, params, side.nodes)
        m = mom.mean
        s_g = float(np.sum(m * agg.sx) + np.sum(agg.so))
        s_rg = float(np.sum(m * agg.rx) + np.sum(agg.ro))
        s_gg = float(
            np.einsum("nij,nij->", mom.second, agg.A) + 2.0 * np.sum(m * agg.B) + np.sum(agg.soo)
        )
        return s_g, s_rg, s_gg

    def _sum_sq_residual(self, prep, params):
        mu, var_mu, _, _ = self._scalars(params)
        s_g, s_rg, s_gg = self._prediction_sums(prep, params)
        n = prep["n"]
        return (
            prep["sum_r2"] - 2.0 * mu * prep["sum_r"] + n * (mu * mu + var_mu)
            - 2.0 * s_rg + 2.0 * mu * s_g + s_gg
        )

    # ------------------------------------------------------------- the step
    def _online_batches(self, data, random_state):
        if self.children_per_node is None:
            yield from super()._online_batches(data, random_state)
            return
        # Paquet's Alg. 1: one step updates every node from C of its own
        # ratings, so a "pass" (over the nodes) is a single step.
        c = self.children_per_node
        for_users = data[_sample_children(data.users, c, random_state)]
        for_items = data[_sample_children(data.items, c, random_state)]
        yield _ChildSample(for_users, for_items), data.shape[0] / for_users.shape[0]

    def _local_step(self, data, params):
        # No local latent variables: index the minibatch for aggregation.
        return _prepare(data)

    def _expected_stats(self, name, data, prep, params):
        if name in ("users", "items"):
            h, P, weight = self._node_stats(name, prep, params)
            side = prep[name]
            return RowStatistics(side.nodes, (weight * h, weight * P), side.counts)
        if name == "mean" and not self._conjugate:
            # The mean is a GLM weight with descriptor 1: the same fixed
            # point from the ratings' E[l'] and E[l''] (seed 002, eq. 24-25).
            mu = self._scalars(params)[0]
            side = prep["global_side"]
            _, _, _, e1, e2 = self._side_pass(side, prep[side], params, want_node_stats=False)
            return (np.array(np.sum(e1 - e2 * mu)), np.array(0.5 * np.sum(e2)))
        if name == "mean":
            _, _, tau, _ = self._scalars(params)
            s_g, _, _ = self._prediction_sums(prep, params)
            return (np.array(tau * (prep["sum_r"] - s_g)), np.array(-0.5 * tau * prep["n"]))
        if name == "noise":
            ssr = self._sum_sq_residual(prep, params)
            return (np.array(-0.5 * ssr), np.array(0.5 * prep["n"]))
        side = "users" if name == "user_precision" else "items"
        n, second, _ = self._fitted_sums(side, params)
        if self.factor_prior == "wishart":
            return (-0.5 * second, np.array(0.5 * n))
        return (-0.5 * np.diagonal(second).copy(), np.full(self._dim, 0.5 * n))

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

    def _node_stats(self, name, prep, params, rng=None):
        """Unscaled statistics ``(h, P, w)`` of the side's nodes in the batch.

        The target of node ``i`` is ``eta1 = w s_i h_i`` and precision
        ``diag(alpha) + w s_i P_i`` (``s_i = N_i / C_i``).  Gaussian:
        ``h = sum (r - mu) E[x] - E[x c]``, ``P = sum E[x x^T]`` and
        ``w = tau`` in closed form; otherwise the Monte-Carlo statistics of
        seed 002 (:mod:`skvi.models.matrix_factorization.nonconjugate`) with ``w = 1``.
        """
        if self._conjugate:
            agg = self._side_aggregates(prep, name, params)
            mu, _, tau, _ = self._scalars(params)
            return agg.rx - mu * agg.sx - agg.B, agg.A, tau
        h, P, _, _, _ = self._side_pass(name, prep[name], params, want_node_stats=True, rng=rng)
        return h, P, 1.0

    def _side_pass(self, name, side, params, want_node_stats, rng=None):
        """:func:`skvi.models.nonconjugate.side_statistics` for one side of a batch."""
        other = "items" if name == "users" else "users"
        node = self._node_moments(name, params, side.nodes)
        partner = self._node_moments(other, params, side.other_nodes)
        diagonal = self.covariance == "diagonal"
        p_mean, p_root = nonconjugate.partner_factors(partner.mean, partner.second, diagonal)
        if diagonal:
            cov = node.var
        else:
            cov = node.second - node.mean[:, :, None] * node.mean[:, None, :]
        mu, var_mu, _, _ = self._scalars(params)
        n_f = 1 if self.expectation == "mc" else _F_NODES
        return nonconjugate.side_statistics(
            self.likelihood_, side.ratings, side.row, side.col, node.mean, cov,
            p_mean, p_root, mu, var_mu, self.n_mc_samples, self.expectation, n_f,
            self._mc_rng if rng is None else rng, side.nodes.shape[0], want_node_stats,
        )

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
            algorithm = "mc-ssvi" if self._conjugate else "h-mc-ssvi"
        if algorithm == "mc-ssvi":
            return None
        return make_update_rule(algorithm, self.gradient_learning_rate)

    def _update_rule(self, name):
        return self._node_rule if name in self._row_groups else None

    def _update_factor(self, name, current, stats, ctx):
        if name not in self._row_groups:
            return super()._update_factor(name, current, stats, ctx)
        # The engine gives every node its own N_i / C_i (ctx.row_scale) and
        # step size (ctx.row_rho); the target's prior part is the current
        # E[alpha] of this side.
        nodes = stats.rows
        h, P = stats.values
        rho_i = ctx.row_rho
        old1, old2 = current[0][nodes], current[1][nodes]
        tgt1, tgt2 = self._node_target(name, h, P, 1.0, ctx.params, ctx.row_scale)
        rule = self._node_rule
        if rule is not None:
            if self.covariance == "diagonal":
                tgt1, tgt2 = _diagonal_target(tgt1, tgt2, old1 / (-2.0 * old2))
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
        eta1, eta2 = current[0].copy(), current[1].copy()
        eta1[nodes] = new1
        eta2[nodes] = new2
        sub = self._safe_moments(new1, new2)
        valid = sub is not None
        if valid:
            old = self._moments(name, {name: current})
            moments = _Moments(old.mean.copy(), old.second.copy(), old.var.copy(), old.logdet.copy())
            moments.mean[nodes], moments.second[nodes] = sub.mean, sub.second
            moments.var[nodes], moments.logdet[nodes] = sub.var, sub.logdet
            self._remember(name, eta1, moments)
        return (eta1, eta2), valid

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
            coupling = np.einsum("nj,nj->n", prec_full[:, k, :], src) - prec_full[:, k, k] * src[:, k]
            t1 = tgt1[:, k] - coupling
            t2 = -0.5 * prec_full[:, k, k]
            new1[:, k] = old1[:, k] + r * (t1 - old1[:, k])
            new2[:, k] = old2[:, k] + r * (t2 - old2[:, k])
            mean[:, k] = new1[:, k] / (-2.0 * new2[:, k])
        return new1, new2

    def _prepare_probe(self, data):
        return _prepare(data)

    def _probe_loss(self, prep, params):
        """Expected loss per probe rating, for the engine's step safety.

        Paquet's divergence (seed 000, Fig. 2) keeps every factor a valid
        Gaussian while the means grow without bound, so validity alone
        cannot catch it; the engine rejects a step that more than doubles
        this loss.  Gaussian: the expected squared residual; otherwise
        ``-E[log p(r | f)]`` under the Gaussian approximation of ``f``.
        """
        if self._conjugate:
            return self._sum_sq_residual(prep, params) / prep["n"]
        side = prep[prep["global_side"]]
        users, items = side.nodes[side.row], side.other_nodes[side.col]
        m_f, v_f = self._f_moments(users, items, params)
        e_log = self.likelihood_.expectations(
            side.ratings, m_f, v_f, method="quadrature", n_samples=_PROBE_NODES
        )[0]
        return float(-np.mean(e_log))

    # ------------------------------------------------------------------ ELBO
    def _local_bound(self, data, prep, params):
        if not self._conjugate:
            # Monte-Carlo estimate of sum_j E_q[log p(r_j | f_j)] with common
            # random numbers, so that bounds of successive passes compare
            # the parameters rather than the draws.
            side = prep["global_side"]
            rng = np.random.default_rng(self._bound_seed)
            e_log = self._side_pass(side, prep[side], params, want_node_stats=False, rng=rng)[2]
            return float(np.sum(e_log))
        _, _, tau, log_tau = self._scalars(params)
        ssr = self._sum_sq_residual(prep, params)
        return float(0.5 * prep["n"] * (log_tau - _LOG_2PI) - 0.5 * tau * ssr)

    def _global_bound(self, params):
        total = 0.0
        for name, key in (("users", "user_precision"), ("items", "item_precision")):
            n, second, sum_logdet = self._fitted_sums(name, params)
            d = self._dim
            if self.factor_precision is None and self.factor_prior == "wishart":
                alpha, log_det = Wishart.from_natural(*params[key]).expected_stats()
                quad = np.sum(second * alpha)
            else:
                if self.factor_precision is None:
                    alpha, log_alpha = _gamma_moments(params[key])
                else:
                    alpha = np.full(d, float(self.factor_precision))
                    log_alpha = np.log(alpha)
                log_det = np.sum(log_alpha)
                quad = np.diagonal(second) @ alpha
            e_log_p = 0.5 * n * (log_det - d * _LOG_2PI) - 0.5 * quad
            entropy = 0.5 * n * d * (1.0 + _LOG_2PI) - 0.5 * sum_logdet
            total += e_log_p + entropy
        prior = self._prior_natural()
        q_mu = Gaussian.from_natural(*params["mean"])
        total -= float(q_mu.kl(Gaussian.from_natural(*prior["mean"])))
        for key in ("noise", "user_precision", "item_precision"):
            if key in params:
                family = self._factor_families[key]
                kl = family.from_natural(*params[key]).kl(family.from_natural(*prior[key]))
                total -= float(np.sum(kl))
        return float(total)

    def _pass_lower_bound(self, data):
        prep = self._fit_prep
        if prep is None or prep["data"] is not data:
            prep = _prepare(data)
            self._fit_prep = prep
        prep.pop("_agg", None)
        params = self.natural_params_
        return self._global_bound(params) + self._local_bound(data, prep, params)

    # ------------------------------------------------------------ prediction
    def _predictive(self, users, items):
        """Predictive mean and variance of ratings (Gaussian likelihood)."""
        params = self.natural_params_
        _, _, tau, _ = self._scalars(params)
        if self.noise_precision is None:
            rate, shape_m1 = params["noise"]
            shape, rate = float(shape_m1) + 1.0, float(-rate)
            noise_var = rate / (shape - 1.0) if shape > 1.0 else 1.0 / tau
        else:
            noise_var = 1.0 / tau
        mean, var = self._f_moments(users, items, params)
        return mean, var + noise_var

    def _f_moments(self, users, items, params):
        """Exact posterior mean and variance of ``f = mu + u.v + b + c``."""
        mu, var_mu, _, _ = self._scalars(params)
        n = users.shape[0]
        mean = np.empty(n)
        var = np.empty(n)
        k = self.n_components
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
        # The ordinal thresholds' step needs the minibatch's ratings.
        if not (self.learn_thresholds and isinstance(self.likelihood_, Ordinal)):
            return None
        side = prep[prep["global_side"]]
        return Samples(side.nodes[side.row], side.other_nodes[side.col], side.ratings)

    def _update_hyperparameters(self, hyper, ctx):
        """Learn the ordinal thresholds after each accepted step.

        The thresholds are point estimates: the first stays where it is
        (the global mean sets the location) and the log-gaps maximise the
        minibatch's expected log-likelihood under the Gaussian
        approximation of each ``f`` (Gauss-Hermite); online, the log-gaps
        move to that optimum by the step size ``rho``.  The prior is
        unchanged, so this returns False.
        """
        lik = self.likelihood_
        if hyper is None or not (self.learn_thresholds and isinstance(lik, Ordinal)):
            return False
        users, items, ratings = hyper.arrays
        m_f, v_f = self._f_moments(users, items, self.natural_params_)
        z, w = np.polynomial.hermite.hermgauss(_F_NODES)
        f = m_f[:, None] + np.sqrt(2.0 * v_f)[:, None] * z
        w = w / np.sqrt(np.pi)
        y = ratings.astype(np.intp)
        b0 = lik.thresholds[0]
        n_gaps = lik.thresholds.size - 1
        if n_gaps < 1:
            return False

        def objective(theta):
            gaps = np.exp(theta)
            trial = Ordinal(np.concatenate(([b0], b0 + np.cumsum(gaps))), slope=lik.slope)
            value, grad_b = trial.threshold_objective(y, f, w)
            # d b_k / d theta_j = exp(theta_j) for k > j.
            grad_theta = gaps * np.cumsum(grad_b[::-1])[::-1][1:]
            n = max(y.shape[0], 1)
            return -value / n, -grad_theta / n

        theta = np.log(np.diff(lik.thresholds))
        res = minimize(objective, theta, jac=True, method="L-BFGS-B",
                       bounds=[(-10.0, 10.0)] * n_gaps, options={"maxiter": 50})
        if not np.all(np.isfinite(res.x)):
            return False
        step = min(float(ctx.rho), 1.0)
        theta = theta + step * (res.x - theta)
        lik.thresholds = np.concatenate(([b0], b0 + np.cumsum(np.exp(theta))))
        return False

    def _on_params_updated(self):
        params = self.natural_params_
        self.user_counts_ = self._row_totals("users").copy()
        self.item_counts_ = self._row_totals("items").copy()
        self.n_users_, self.n_items_ = self.user_counts_.shape[0], self.item_counts_.shape[0]
        k = self.n_components
        for name, prefix in (("users", "user"), ("items", "item")):
            mom = self._node_moments(name, params, np.arange(params[name][0].shape[0]))
            cov = mom.second - mom.mean[..., :, None] * mom.mean[..., None, :]
            setattr(self, f"{prefix}_mean_", mom.mean)
            setattr(self, f"{prefix}_covariance_", cov)
            setattr(self, f"{prefix}_factors_", mom.mean[:, :k])
            setattr(self, f"{prefix}_bias_", mom.mean[:, k])
            setattr(self, f"{prefix}_precision_", self._prior_precision(name, params))
        mu, var_mu, tau, _ = self._scalars(params)
        self.global_mean_ = mu
        self.global_mean_variance_ = var_mu
        self.noise_precision_ = tau if self._conjugate else None
        if "noise" in params:
            rate, shape_m1 = params["noise"]
            self.noise_shape_ = float(shape_m1) + 1.0
            self.noise_rate_ = float(-rate)
