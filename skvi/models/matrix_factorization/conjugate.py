"""The conjugate Gaussian likelihood: Paquet's closed-form node updates.

With ``r ~ N(mu + b + c + u . v, 1 / tau)`` every conditional is conjugate
(Paquet, "On the convergence of stochastic variational inference in
Bayesian networks", eqs. 5-7): a node's target is a Bayesian linear
regression on its rated partners' moments, the global mean's and the noise
precision's targets are sums of expected residuals.  Everything here is a
sum over the ratings of a minibatch, gathered per node by sparse products
(:func:`skvi.models.matrix_factorization.nodes.aggregate`).
"""

import numpy as np

from .nodes import SIDES, aggregate, inner_rows
from .strategy import RatingsStrategy

__all__ = ["GaussianRatings"]

_LOG_2PI = np.log(2.0 * np.pi)


class GaussianRatings(RatingsStrategy):
    """Strategy of :class:`~skvi.SVIMatrixFactorization` for ``likelihood='gaussian'``.

    Stateless: every method takes the estimator (``mf``) and the natural
    parameters it works on.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.conjugate import GaussianRatings
    >>> GaussianRatings().default_algorithm
    'mc-ssvi'
    """

    #: The exact conjugate updates: coordinate ascent in batch mode.
    default_algorithm = "mc-ssvi"
    conjugate = True
    closed_form = True

    def scalar_factors(self, mf):
        """Global scalars besides the mean: the noise precision when learned."""
        return ("noise",) if mf.noise_precision is None else ()

    def initial_scalars(self, mf, moments, data, random_state):
        """Start ``mu`` at the mean rating and ``tau`` at one over the variance.

        ``moments`` (a :class:`skvi.engine.DataMoments` of the ratings) holds
        their weighted mean and variance, the total weight counting as the
        number of ratings; ``data`` and ``random_state`` are not needed.
        """
        a0, _ = mf._hyper
        n = max(moments.total, 1)
        mean_r = float(moments.mean[0]) if moments.n_rows else float(mf.mean_prior)
        var_r = float(moments.covariance()[0]) if moments.total > 1 else 1.0
        var_r = var_r if var_r > 0 else 1.0
        tau0 = 1.0 / var_r if mf.noise_precision is None else float(mf.noise_precision)
        prec_mu = mf.mean_precision_prior + n * tau0
        params = {"mean": (np.array(prec_mu * mean_r), np.array(-0.5 * prec_mu))}
        if mf.noise_precision is None:
            shape = a0 + 0.5 * n
            params["noise"] = (np.array(-shape / tau0), np.array(shape - 1.0))
        return params

    def noise(self, mf, params):
        """``E[tau]`` and ``E[log tau]``."""
        if "noise" in params:
            q = params["noise"].distribution
            return float(q.mean()), float(q.expected_log())
        tau = float(mf.noise_precision)
        return tau, float(np.log(tau))

    # ---------------------------------------------------------- statistics
    def side_aggregates(self, mf, prep, name, params):
        """Aggregates of side ``name`` from the partners' moments (cached in ``prep``)."""
        other = SIDES[name].other
        cache = prep.setdefault("_agg", {})
        hit = cache.get(name)
        if hit is not None and hit[0] is params[other]:
            return hit[1]
        side = prep[name]
        agg = aggregate(side, *mf._partner_moments(other, params, side.other_nodes))
        cache[name] = (params[other], agg)
        return agg

    def prediction_sums(self, mf, prep, params):
        """sum E[g], sum r E[g] and sum E[g^2] over the batch (g = f - mu)."""
        cache = prep.get("_agg", {})
        sides = (("items", "users"), ("users", "items")) if prep["same_sides"] else ()
        for name, other in sides:
            hit = cache.get(name)
            if hit is not None and hit[0] is params[other]:
                break
        else:
            name = prep["global_side"]
        agg = self.side_aggregates(mf, prep, name, params)
        side = prep[name]
        mom, rows = mf._partner_moments(name, params, side.nodes)
        if rows is None:
            m = mom.mean
            quad = np.einsum("nij,nij->", mom.second, agg.A)
        else:  # the side's moments of every node: no gathered copy of the d x d ones
            m = mom.mean[rows]
            quad = inner_rows(mom.second, rows, agg.A)
        s_g = float(np.sum(m * agg.sx) + np.sum(agg.so))
        s_rg = float(np.sum(m * agg.rx) + np.sum(agg.ro))
        s_gg = float(quad + 2.0 * np.sum(m * agg.B) + np.sum(agg.soo))
        return s_g, s_rg, s_gg

    def sum_sq_residual(self, mf, prep, params):
        """``sum_j E[(r_j - f_j)^2]`` over the batch."""
        mu, var_mu = mf._global_mean(params)
        s_g, s_rg, s_gg = self.prediction_sums(mf, prep, params)
        n = prep["n"]
        return (
            prep["sum_r2"]
            - 2.0 * mu * prep["sum_r"]
            + n * (mu * mu + var_mu)
            - 2.0 * s_rg
            + 2.0 * mu * s_g
            + s_gg
        )

    def node_stats(self, mf, name, prep, params, rng=None):
        """``(h, P, w)``: ``h = sum (r - mu) E[x] - E[x c]``, ``P = sum E[x x^T]``, ``w = tau``."""
        agg = self.side_aggregates(mf, prep, name, params)
        mu, _ = mf._global_mean(params)
        tau, _ = self.noise(mf, params)
        return agg.rx - mu * agg.sx - agg.B, agg.A, tau

    def scalar_stats(self, mf, name, prep, params, rng=None):
        """Statistics of the global mean or the noise precision."""
        tau, _ = self.noise(mf, params)
        if name == "mean":
            s_g, _, _ = self.prediction_sums(mf, prep, params)
            return (np.array(tau * (prep["sum_r"] - s_g)), np.array(-0.5 * tau * prep["n"]))
        ssr = self.sum_sq_residual(mf, prep, params)
        return (np.array(-0.5 * ssr), np.array(0.5 * prep["n"]))

    # ---------------------------------------------------------------- ELBO
    def local_bound(self, mf, prep, params):
        """``sum_j E[log N(r_j | f_j, 1 / tau)]``."""
        tau, log_tau = self.noise(mf, params)
        ssr = self.sum_sq_residual(mf, prep, params)
        return float(0.5 * prep["n"] * (log_tau - _LOG_2PI) - 0.5 * tau * ssr)

    def probe_loss(self, mf, prep, params):
        """The expected squared residual per probe rating."""
        return self.sum_sq_residual(mf, prep, params) / prep["n"]

    def hyperparameter_statistics(self, mf, prep):
        """None: the Gaussian model has no empirical-Bayes step."""
        return None

    # ---------------------------------------------------------- prediction
    def noise_variance(self, mf):
        """The predictive's noise variance: ``E[1 / tau]``, or ``1 / tau`` when fixed."""
        params = mf.natural_params_
        if "noise" in params:
            q = params["noise"].distribution
            shape, rate = float(q.shape), float(q.rate)
            # The Student-t predictive's variance when it exists.
            return rate / (shape - 1.0) if shape > 1.0 else 1.0 / float(q.mean())
        return 1.0 / float(mf.noise_precision)

    def predictive(self, mf, users, items, include_noise=True):
        """Predictive mean and variance of ratings (with the noise unless ``include_noise`` is False)."""
        mean, var = mf._f_moments(users, items, mf.natural_params_)
        return self.predictive_of_f(mf, mean, var, include_noise)

    #: The predictive mean is ``E[f]``: it does not need ``Var[f]``.
    mean_needs_variance = False

    def predictive_mean_of_f(self, mf, m_f, v_f=None):
        """Predictive mean of ratings whose ``f`` has mean ``m_f``: ``m_f`` itself."""
        return m_f

    def predictive_of_f(self, mf, m_f, v_f, include_noise=True):
        """Predictive mean and variance of ratings whose ``f`` has mean ``m_f``, variance ``v_f``.

        The mean rating is ``f`` itself: without the noise the variance is
        ``Var[f]``, the model's own uncertainty of the mean rating.
        """
        if not include_noise:
            return m_f, v_f
        return m_f, v_f + self.noise_variance(mf)

    def log_density(self, mf, data):
        """Log predictive density of each rating."""
        mean, var = self.predictive(mf, data.users, data.items)
        resid = data.ratings - mean
        return -0.5 * (_LOG_2PI + np.log(var) + resid * resid / var)

    def fold_in(self, mf, prep, params):
        """Posterior means of new users (rows of ``prep``) with everything else fixed."""
        side = prep["users"]
        ones = np.ones(side.nodes.shape[0])
        eta1, eta2 = mf._node_target(
            "users", *self.node_stats(mf, "users", prep, params), params, ones
        )
        # The exact posterior mean given the fixed globals; it is also the
        # fixed point of the coordinate updates of the diagonal family.
        return np.linalg.solve(-2.0 * eta2, eta1[..., None])[..., 0]
