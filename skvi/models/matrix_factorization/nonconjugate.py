"""Monte-Carlo statistics of non-conjugate matrix factorization (Monte Carlo structured SVI, section 3.6).

For a user node ``w = (u, b)`` and one of its ratings of item ``n`` the
linear predictor is ``f = mu + w . x + c`` with ``x = (v_n, 1)``.  Given a
draw of the item node ``(v_n, c_n)`` from its Gaussian posterior, ``f`` is
Gaussian under ``q(w) q(mu)``::

    f | v ~ N(m_w . x + E[mu] + c,  x^T S_w x + Var[mu])

so the rating is a GLM example with descriptor ``x`` (eqs. 48-50).  The
fixed-point (natural-gradient) target of the node is::

    Lambda_hat = Lambda_0 - sum_j E_v[ E_f[l''] x x^T ]
    eta1_hat   = Lambda_0 m_0 + sum_j E_v[ (E_f[l'] - E_f[l''] m_w . x) x ]

with ``E_v`` estimated from ``n_partner_samples`` draws of the partner per
rating (eq. 52) and ``E_f`` by the likelihood's Monte Carlo or
Gauss-Hermite rule.  For a Gaussian likelihood ``l'' = -tau`` and the
target is the conjugate closed form with ``E[x x^T]`` replaced by its
sample average.  Items are the mirror image.  Everything is vectorised
over chunks of ratings; the only loop is over chunks.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq, minimize

from ...engine import Factor, Samples
from ...expfam import cholesky_factor
from ...likelihoods import Ordinal
from ...likelihoods.base import _hermite
from ...update_rules import diagonal_target
from .nodes import SIDES
from .posterior import moments_from_natural
from .strategy import RatingsStrategy

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None

__all__ = ["GLMRatings", "partner_factors", "side_statistics"]

#: Gauss-Hermite nodes of the predictive integrals.
PREDICT_NODES = 40
#: Gauss-Hermite nodes of the probe loss.
PROBE_NODES = 20
#: Damped fixed-point iterations of ``transform``.
FOLD_IN_ITER = 30
#: L-BFGS iterations of the ordinal thresholds per step, from their last
#: value: a partial maximisation, still an ascent step, with the same fixed
#: point.  A full maximisation at every step was most of an ordinal fit's
#: time, and a single iteration ended at a worse test NLL
#: (docs/matrix_factorization_benchmark.md).
THRESHOLD_ITER = 3
#: Gauss-Hermite nodes of ``E_f`` per partner draw with ``expectation='quadrature'``,
#: and of the ordinal threshold fit.
F_NODES = 10

#: Rating-draw pairs per chunk: bounds the (chunk, samples, d)-sized temporaries.
_CHUNK = 40960


def partner_factors(mean, second, diagonal):
    """Mean and a square root of the covariance of each partner node.

    Returns ``(mean, root)`` with ``root`` of shape (n, d, d) (lower
    Cholesky factor) or (n, d) (standard deviations) when ``diagonal``.
    """
    cov = second - mean[:, :, None] * mean[:, None, :]
    if diagonal:
        return mean, np.sqrt(np.maximum(np.diagonal(cov, axis1=1, axis2=2), 0.0))
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    # Rounding may leave a covariance just indefinite: the factor with jitter.
    return mean, cholesky_factor(cov, jitter=True)


def side_statistics(
    likelihood,
    y,
    row,
    col,
    node_mean,
    node_cov,
    partner_mean,
    partner_root,
    mu,
    var_mu,
    n_partner_samples,
    method,
    n_f,
    rng,
    n_nodes,
    want_node_stats=True,
    weights=None,
):
    """Per-node fixed-point statistics and per-rating expectations.

    Parameters
    ----------
    likelihood : skvi.likelihoods.Likelihood
    y : ndarray of shape (n_ratings,)
        Encoded targets.
    row, col : ndarray of shape (n_ratings,)
        Index of each rating's node into ``node_*`` and of its partner into
        ``partner_*``.
    node_mean : ndarray of shape (n_nodes, d)
    node_cov : ndarray of shape (n_nodes, d, d) or (n_nodes, d)
        Covariances of the nodes (diagonal: variances).
    partner_mean, partner_root : ndarray
        From :func:`partner_factors`.
    mu, var_mu : float
        Mean and variance of the global mean.
    n_partner_samples : int
        Draws of the partner node per rating (``S1``).
    method : {'mc', 'quadrature'}
        How ``E_f`` is computed given a partner draw.
    n_f : int
        Draws of ``f`` (``'mc'``) or Gauss-Hermite nodes.
    rng : numpy.random.Generator or RandomState
    n_nodes : int
    want_node_stats : bool, default=True
        Also aggregate the node statistics (the costly part).
    weights : ndarray of shape (n_ratings,) or None, default=None
        Weights of the ratings in the node statistics' sums (None: ones).

    Returns
    -------
    h : ndarray of shape (n_nodes, d) or None
        ``sum_j E_v[(E[l'] - E[l''] m_w . x) x]`` (each term times its
        rating's weight).
    P : ndarray of shape (n_nodes, d, d) or None
        ``-sum_j E_v[E[l''] x x^T]`` (likewise weighted).
    e_log, e_d1, e_d2 : ndarray of shape (n_ratings,)
        ``E_q[log p]``, ``E_q[l']`` and ``E_q[l'']`` of every rating, the
        expectation over the partner by the same draws (not weighted).
    """
    n_r = y.shape[0]
    d = node_mean.shape[1]
    k = d - 1
    s1 = int(n_partner_samples)
    diagonal = node_cov.ndim == 2
    e_log = np.empty(n_r)
    e_d1 = np.empty(n_r)
    e_d2 = np.empty(n_r)
    h = np.zeros((n_nodes, d)) if want_node_stats else None
    P = np.zeros((n_nodes, d * d)) if want_node_stats else None
    # The compiled draws, predictor moments and sums (full covariances): the
    # same numbers as the numpy lines below, without their temporaries.
    fast = _gaussian_fast is not None and not diagonal and partner_root.ndim == 3
    if fast:
        c64 = np.ascontiguousarray
        partner_mean, partner_root = c64(partner_mean, np.float64), c64(partner_root, np.float64)
        node_mean, node_cov = c64(node_mean, np.float64), c64(node_cov, np.float64)
        row, col = c64(row, np.int64), c64(col, np.int64)
        no_weights = np.empty(0)
    chunk = max(1, _CHUNK // s1)
    for start in range(0, n_r, chunk):
        sl = slice(start, min(start + chunk, n_r))
        r, c = row[sl], col[sl]
        n_c = r.shape[0]
        eps = rng.standard_normal((n_c, s1, d))
        if fast:
            x, offset = np.empty((n_c, s1, d)), np.empty((n_c, s1))
            _gaussian_fast.partner_draws(eps, c, partner_mean, partner_root, x, offset)
            m_f, var_f = np.empty((n_c, s1)), np.empty((n_c, s1))
            _gaussian_fast.predictor_moments(x, r, node_mean, node_cov, float(var_mu), m_f, var_f)
        else:
            if partner_root.ndim == 2:
                draws = partner_mean[c][:, None, :] + partner_root[c][:, None, :] * eps
            else:
                draws = partner_mean[c][:, None, :] + np.matmul(
                    eps, np.swapaxes(partner_root[c], 1, 2)
                )
            offset = draws[..., k].copy()
            x = draws
            x[..., k] = 1.0
            m_w = node_mean[r]
            if diagonal:
                sx = node_cov[r][:, None, :] * x
            else:
                sx = np.matmul(x, node_cov[r])  # node covariances are symmetric
            var_f = np.sum(x * sx, axis=2) + var_mu
            m_f = np.matmul(x, m_w[:, :, None])[..., 0]
        yy = np.broadcast_to(y[sl][:, None], (n_c, s1))
        lg, d1, d2 = likelihood.expectations(
            yy, m_f + mu + offset, var_f, method=method, n_samples=n_f, random_state=rng
        )
        e_log[sl] = lg.mean(axis=1)
        e_d1[sl] = d1.mean(axis=1)
        e_d2[sl] = d2.mean(axis=1)
        if not want_node_stats:
            continue
        w_h = (d1 - d2 * m_f) / s1
        w_p = -d2 / s1
        if fast:
            _gaussian_fast.accumulate_node_stats(
                r,
                x,
                np.ascontiguousarray(w_h, dtype=np.float64),
                np.ascontiguousarray(w_p, dtype=np.float64),
                no_weights if weights is None else np.ascontiguousarray(weights[sl], np.float64),
                h,
                P,
            )
            continue
        h_rows = np.matmul(w_h[:, None, :], x)[:, 0, :]
        p_rows = np.matmul(np.swapaxes(x * w_p[..., None], 1, 2), x).reshape(n_c, d * d)
        ind = sp.csr_matrix(
            (np.ones(n_c) if weights is None else weights[sl], (r, np.arange(n_c))),
            shape=(n_nodes, n_c),
        )
        h += ind @ h_rows
        P += ind @ p_rows
    if want_node_stats:
        P = P.reshape(n_nodes, d, d)
        if fast:  # the kernel sums the upper triangle
            lower = np.tril_indices(d, -1)
            P[:, lower[0], lower[1]] = P[:, lower[1], lower[0]]
        P = 0.5 * (P + np.swapaxes(P, 1, 2))
    return h, P, e_log, e_d1, e_d2


def _weighted_threshold_objective(lik, y, f, nodes_weights, weights):
    """:meth:`~skvi.likelihoods.Ordinal.threshold_objective` with rating weights.

    ``sum_n weights_n sum_s nodes_weights_s log p(y_n | f_ns)`` and its
    gradient in the thresholds, by the same per-rating terms.

    Parameters
    ----------
    lik : skvi.likelihoods.Ordinal
    y : ndarray of shape (n,)
        Category indices.
    f : ndarray of shape (n, s)
        Points of each linear predictor.
    nodes_weights : ndarray of shape (s,)
        Weights of the points.
    weights : ndarray of shape (n,)
        Weights of the ratings.

    Returns
    -------
    value : float
    gradient : ndarray of shape (K-1,)
    """
    k = np.asarray(y).astype(np.intp)
    value = float(weights @ (lik.logpdf(k[:, None], f) @ nodes_weights))
    a, c = lik._cuts(k[:, None], f)
    upper, lower = lik._threshold_terms(a, c)
    upper = weights * (upper @ nodes_weights)
    lower = weights * (lower @ nodes_weights)
    n_thresholds = lik.thresholds.size
    grad = np.bincount(k, weights=upper, minlength=n_thresholds + 1)[:n_thresholds]
    grad += np.bincount(k, weights=lower, minlength=n_thresholds + 1)[1:]
    return value, grad


class GLMRatings(RatingsStrategy):
    """Strategy of :class:`~skvi.SVIMatrixFactorization` for non-Gaussian likelihoods.

    Generalised PMF by Monte Carlo structured SVI: given a draw of the
    partner node, a rating is a GLM example, so a node's natural-gradient
    target is the fixed point of :func:`side_statistics`; the global mean is
    a GLM weight with descriptor 1.  Stateless: every method takes the
    estimator (``mf``) and the natural parameters it works on.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.nonconjugate import GLMRatings
    >>> GLMRatings().default_algorithm
    'h-mc-ssvi'
    """

    #: The paper's best update for PMF.
    default_algorithm = "h-mc-ssvi"
    conjugate = False

    def scalar_factors(self, mf):
        """No noise precision: the likelihood has none."""
        return ()

    def initial_scalars(self, mf, moments, data, random_state):
        """Start ``mu`` at the link value of the mean rating; seed the draws.

        The mean rating and the number of ratings (their total weight)
        come from ``moments`` (a :class:`skvi.engine.DataMoments` of all of
        them), the curvature from the ratings ``data`` (all of them in
        memory, the first block on a cluster).
        """
        # The Monte-Carlo draws, and the common random numbers of the ELBO
        # estimate.
        mf._bound_seed = int(random_state.randint(np.iinfo(np.int32).max))
        mf._mc_rng = np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
        n = max(moments.total, 1)
        target = float(moments.mean[0]) if moments.n_rows else 0.0
        f0, curvature = self.baseline(mf, target, data.ratings, data.weights)
        prec_mu = mf.mean_precision_prior + n * curvature
        return {"mean": (np.array(prec_mu * f0), np.array(-0.5 * prec_mu))}

    def baseline(self, mf, target, y, weights=None):
        """Linear predictor ``f0`` whose conditional mean is ``target`` (the
        mean rating), and the mean curvature ``-l''`` there over the ratings
        ``y`` (the initial global mean and its precision per rating);
        weighted averages with ``weights``."""
        lik = mf.likelihood_
        lo, hi = -30.0, 30.0
        g_lo = float(lik.conditional_mean(np.array(lo))) - target
        g_hi = float(lik.conditional_mean(np.array(hi))) - target
        if g_lo >= 0.0:
            f0 = lo
        elif g_hi <= 0.0:
            f0 = hi
        else:
            f0 = brentq(lambda f: float(lik.conditional_mean(np.array(f))) - target, lo, hi)
        if weights is not None:
            curvature = float(np.sum(weights * -lik.d2logpdf(y, f0)) / np.sum(weights))
        else:
            curvature = float(np.mean(-lik.d2logpdf(y, f0))) if y.size else 1.0
        return f0, max(curvature, 1e-6)

    # ---------------------------------------------------------- statistics
    def side_pass(self, mf, name, side, params, want_node_stats, rng=None):
        """:func:`side_statistics` for one side of a batch."""
        other = SIDES[name].other
        node = mf._node_moments(name, params, side.nodes)
        partner = mf._node_moments(other, params, side.other_nodes)
        diagonal = mf.covariance == "diagonal"
        p_mean, p_root = partner_factors(partner.mean, partner.second, diagonal)
        if diagonal:
            cov = node.var
        else:
            cov = node.second - node.mean[:, :, None] * node.mean[:, None, :]
        mu, var_mu = mf._global_mean(params)
        # A model fitted with expectation='gaussian' folds new users in
        # with partner draws and quadrature (MomentMatchedRatings.fold_in).
        method = "quadrature" if mf._expectation == "gaussian" else mf._expectation
        n_f = 1 if method == "mc" else F_NODES
        return side_statistics(
            mf.likelihood_,
            side.ratings,
            side.row,
            side.col,
            node.mean,
            cov,
            p_mean,
            p_root,
            mu,
            var_mu,
            mf.n_mc_samples,
            method,
            n_f,
            mf._mc_rng if rng is None else rng,
            side.nodes.shape[0],
            want_node_stats,
            side.weights,
        )

    def node_stats(self, mf, name, prep, params, rng=None):
        """``(h, P, 1)``: the Monte-Carlo fixed-point statistics of the side's nodes."""
        h, P, _, _, _ = self.side_pass(mf, name, prep[name], params, want_node_stats=True, rng=rng)
        return h, P, 1.0

    def scalar_stats(self, mf, name, prep, params, rng=None):
        """The global mean's fixed point from the ratings' ``E[l']`` and ``E[l'']``."""
        mu, _ = mf._global_mean(params)
        side = prep["global_side"]
        _, _, _, e1, e2 = self.side_pass(
            mf, side, prep[side], params, want_node_stats=False, rng=rng
        )
        w = prep[side].weights
        if w is not None:
            return (np.array(np.sum(w * (e1 - e2 * mu))), np.array(0.5 * np.sum(w * e2)))
        return (np.array(np.sum(e1 - e2 * mu)), np.array(0.5 * np.sum(e2)))

    # ---------------------------------------------------------------- ELBO
    def local_bound(self, mf, prep, params):
        """Monte-Carlo estimate of ``sum_j E_q[log p(r_j | f_j)]``.

        With common random numbers, so that bounds of successive passes
        compare the parameters rather than the draws.
        """
        side = prep["global_side"]
        rng = np.random.default_rng(mf._bound_seed)
        e_log = self.side_pass(mf, side, prep[side], params, want_node_stats=False, rng=rng)[2]
        w = prep[side].weights
        return float(np.sum(e_log) if w is None else np.sum(w * e_log))

    def probe_loss(self, mf, prep, params):
        """``-E[log p(r | f)]`` per probe rating under the Gaussian approximation of ``f``."""
        side = prep[prep["global_side"]]
        users, items = side.nodes[side.row], side.other_nodes[side.col]
        m_f, v_f = mf._f_moments(users, items, params)
        e_log = mf.likelihood_.expectations(
            side.ratings, m_f, v_f, method="quadrature", n_samples=PROBE_NODES
        )[0]
        if side.weights is not None:
            return float(-np.sum(side.weights * e_log) / np.sum(side.weights))
        return float(-np.mean(e_log))

    def hyperparameter_statistics(self, mf, prep):
        """The minibatch's ratings (and weights), for the ordinal thresholds' step."""
        if not (mf.learn_thresholds and isinstance(mf.likelihood_, Ordinal)):
            return None
        side = prep[prep["global_side"]]
        arrays = (side.nodes[side.row], side.other_nodes[side.col], side.ratings)
        if side.weights is not None:
            arrays += (side.weights,)
        return Samples(*arrays)

    def update_thresholds(self, mf, hyper, rho):
        """Learn the ordinal thresholds after an accepted step.

        The thresholds are point estimates: the first stays where it is
        (the global mean sets the location) and the log-gaps maximise the
        minibatch's expected log-likelihood under the Gaussian
        approximation of each ``f`` (Gauss-Hermite); online, the log-gaps
        move to that optimum by the step size ``rho``.
        """
        lik = mf.likelihood_
        if hyper is None or not (mf.learn_thresholds and isinstance(lik, Ordinal)):
            return
        users, items, ratings = hyper.arrays[:3]
        weights = hyper.arrays[3] if len(hyper.arrays) > 3 else None
        m_f, v_f = mf._f_moments(users, items, mf.natural_params_)
        z, w = _hermite(F_NODES)
        f = m_f[:, None] + np.sqrt(v_f)[:, None] * z
        y = ratings.astype(np.intp)
        b0 = lik.thresholds[0]
        n_gaps = lik.thresholds.size - 1
        if n_gaps < 1:
            return

        if _gaussian_fast is not None:  # the compiled objective: same numbers
            y64, f = np.ascontiguousarray(y, dtype=np.int64), np.ascontiguousarray(f)
            w64 = np.ascontiguousarray(w, dtype=np.float64)
            c64 = np.empty(0) if weights is None else np.ascontiguousarray(weights, np.float64)
            n_fast = max(y.shape[0], 1) if weights is None else max(float(np.sum(weights)), 1e-300)

        def objective(theta):
            gaps = np.exp(theta)
            trial = Ordinal(np.concatenate(([b0], b0 + np.cumsum(gaps))), slope=lik.slope)
            if _gaussian_fast is not None:
                edges = np.concatenate(([-np.inf], trial.thresholds, [np.inf]))
                grad_b = np.empty(trial.thresholds.size)
                value = _gaussian_fast.ordinal_threshold_objective(
                    y64, f, w64, c64, edges, trial.slope, grad_b
                )
                n = n_fast
            elif weights is None:
                value, grad_b = trial.threshold_objective(y, f, w)
                n = max(y.shape[0], 1)
            else:
                value, grad_b = _weighted_threshold_objective(trial, y, f, w, weights)
                n = max(float(np.sum(weights)), 1e-300)
            # d b_k / d theta_j = exp(theta_j) for k > j.
            grad_theta = gaps * np.cumsum(grad_b[::-1])[::-1][1:]
            return -value / n, -grad_theta / n

        theta = np.log(np.diff(lik.thresholds))
        res = minimize(
            objective,
            theta,
            jac=True,
            method="L-BFGS-B",
            bounds=[(-10.0, 10.0)] * n_gaps,
            options={"maxiter": THRESHOLD_ITER},
        )
        if not np.all(np.isfinite(res.x)):
            return
        step = min(float(rho), 1.0)
        theta = theta + step * (res.x - theta)
        lik.thresholds = np.concatenate(([b0], b0 + np.cumsum(np.exp(theta))))

    # ---------------------------------------------------------- prediction
    def predictive(self, mf, users, items, include_noise=True):
        """Predictive mean and variance of ratings by quadrature over ``f``."""
        m_f, v_f = mf._f_moments(users, items, mf.natural_params_)
        return self.predictive_of_f(mf, m_f, v_f, include_noise)

    #: The predictive mean integrates over ``f``: it needs ``Var[f]``.
    mean_needs_variance = True

    def predictive_mean_of_f(self, mf, m_f, v_f):
        """Predictive mean of ratings whose ``f`` is ``N(m_f, v_f)`` (as :meth:`predictive_of_f`)."""
        lik = mf.likelihood_
        if isinstance(lik, Ordinal):
            proba = lik.predictive_probabilities(m_f, v_f, n_points=PREDICT_NODES)
            return proba @ mf._class_values()
        return lik.predictive_mean(m_f, v_f, n_points=PREDICT_NODES)

    def predictive_of_f(self, mf, m_f, v_f, include_noise=True):
        """Predictive mean and variance of ratings whose ``f`` is ``N(m_f, v_f)``.

        The mean is ``E[m(f)]``, ``m(f) = E[r | f]`` the likelihood's mean
        rating (the ordinal one's ``sum_k p_k(f) values[k]``).  With the
        noise the variance is the rating's, ``Var[m(f)] + E[Var[r | f]]``;
        without it ``Var[m(f)]``, the model's own uncertainty of the mean
        rating.  Both by Gauss-Hermite quadrature over ``f``.
        """
        lik = mf.likelihood_
        if isinstance(lik, Ordinal):
            proba = lik.predictive_probabilities(m_f, v_f, n_points=PREDICT_NODES)
            values = mf._class_values()
            mean = proba @ values
            if include_noise:
                return mean, proba @ (values * values) - mean * mean
        else:
            mean = lik.predictive_mean(m_f, v_f, n_points=PREDICT_NODES)
            if include_noise:
                return mean, lik.predictive_variance(m_f, v_f, n_points=PREDICT_NODES)
        f, w = lik._nodes(m_f, v_f, "quadrature", PREDICT_NODES, None)
        if isinstance(lik, Ordinal):
            conditional = lik.category_probabilities(f) @ values
        else:
            conditional = lik.conditional_mean(f)
        with np.errstate(invalid="ignore"):
            spread = conditional - mean[:, None]
            var = (spread * spread) @ w
        # An overflowing mean count (inf - inf) has an infinite variance.
        return mean, np.where(np.isposinf(mean), np.inf, var)

    def predict_proba(self, mf, users, items):
        """Probability of each rating value (categorical likelihoods)."""
        m_f, v_f = mf._f_moments(users, items, mf.natural_params_)
        lik = mf.likelihood_
        if isinstance(lik, Ordinal):
            return lik.predictive_probabilities(m_f, v_f, n_points=PREDICT_NODES)
        p1 = lik.predictive_mean(m_f, v_f, n_points=PREDICT_NODES)
        return np.column_stack([1.0 - p1, p1])

    def log_density(self, mf, data):
        """``log E[p(r | f)]`` of each rating, by quadrature."""
        m_f, v_f = mf._f_moments(data.users, data.items, mf.natural_params_)
        return mf.likelihood_.predictive_logpdf(data.ratings, m_f, v_f, n_points=PREDICT_NODES)

    def fold_in(self, mf, prep, params):
        """Means of new users by damped fixed-point iterations from their prior.

        Everything else is held fixed; the new users live in a scratch copy
        of the user side.
        """
        side = prep["users"]
        n = side.nodes.shape[0]
        ones = np.ones(n)
        n_known = params["users"][0].shape[0]
        new_ids = np.arange(n) + n_known
        prior = mf._initial_nodes("users", n, np.random.RandomState(0), np.zeros(n, bool))
        params = dict(params)
        params["users"] = Factor(
            [np.concatenate([a, b]) for a, b in zip(params["users"], prior)], params["users"].family
        )
        side.nodes = new_ids
        rng = np.random.default_rng(0)
        full = mf.covariance == "full"
        for _ in range(FOLD_IN_ITER):
            stats = self.node_stats(mf, "users", prep, params, rng=rng)
            tgt1, tgt2 = mf._node_target("users", *stats, params, ones)
            old1, old2 = params["users"][0][new_ids], params["users"][1][new_ids]
            if not full:
                tgt1, tgt2 = diagonal_target(tgt1, tgt2, old1 / (-2.0 * old2))
            e1, e2 = params["users"][0].copy(), params["users"][1].copy()
            e1[new_ids] = 0.5 * old1 + 0.5 * tgt1
            e2[new_ids] = 0.5 * old2 + 0.5 * tgt2
            params["users"] = Factor((e1, e2), params["users"].family)
        e1, e2 = params["users"]
        return moments_from_natural(e1[new_ids], e2[new_ids], mf.covariance).mean
