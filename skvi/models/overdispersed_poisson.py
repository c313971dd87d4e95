"""Poisson regression with a Gaussian random effect per observation and a Rayleigh-distributed variance."""

import numbers

import numpy as np
from scipy import special
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..engine.step import factor_target, update_factor
from ..expfam import MultivariateGaussian, Rayleigh
from ..likelihoods.base import _hermite
from ..update_rules import SecantFixedPoint
from ._design import design_of
from .glm import _EXPECTATION_DOC, _GLM_ATTRS_DOC, _GLM_PARAMS_DOC, SVIPoissonRegression

__all__ = ["SVIOverdispersedPoissonRegression"]

#: Gauss-Hermite nodes over the linear predictor a = x . w, Gauss nodes of
#: the Rayleigh weight over the noise variance (``Rayleigh.quadrature``),
#: adaptive Gauss-Hermite nodes over f inside log Z (fitting); and the finer
#: rules of the ELBO and the predictive density.
_A_NODES, _NOISE_NODES, _F_NODES = 6, 6, 12
_PREDICTIVE_NOISE_NODES, _PREDICTIVE_F_NODES = 24, 40
#: Newton iterations of the mean-field bound's local Gaussian factors.
_LOCAL_ITERATIONS = 25
_SQRT_HALF_PI = np.sqrt(0.5 * np.pi)


class SVIOverdispersedPoissonRegression(SVIPoissonRegression):
    __doc__ = (
        """Poisson regression with overdispersion: a Gaussian random effect per observation.

    The generalised mixed-effects model of "Monte Carlo structured SVI for
    two-level non-conjugate models" (sections 1 and 3.4)::

        w     ~ N(0, prior_variance I)            (intercept: intercept_prior_variance)
        sigma ~ Rayleigh(noise_prior_scale)        (a VARIANCE)
        f_i   ~ N(x_i . w + b, sigma)
        y_i   ~ Poisson(lambda(f_i))

    The noise ``f_i - x_i . w`` lets counts vary more than a Poisson
    regression allows (overdispersion, a Poisson-lognormal model for the
    exp link), so the posterior of ``w`` is not made overconfident by it.
    The posterior is ``q(w) q(sigma) prod_i q(f_i)`` with ``q(w)`` a
    full-covariance Gaussian and ``q(sigma) = Rayleigh(s)``; ``bound``
    chooses ``q(f_i)``:

    - ``'optimal'`` (default): ``q(f_i)`` is the optimal local factor
      ``p(f_i | w, sigma, y_i)``, so the ELBO's data term is
      ``sum_i E_{q(w) q(sigma)}[log Z_i(x_i . w, sigma)]`` with
      ``Z_i(a, v) = int N(f; a, v) p(y_i | f) df`` (the paper's eq. 8).
    - ``'simple'``: the sub-optimal bound, ``E_{q(w) q(sigma)} E_{N(f; a,
      sigma)}[log p(y_i | f)]`` (eq. 3, appendix A.3); its data term always
      prefers less noise.
    - ``'mean_field'``: ``q(f_i) = N(mu_i, tau_i)`` fitted per row (appendix
      A.4); ``s`` is the positive root of the appendix's cubic.

    The steps of ``q(w)`` are those of :class:`SVIPoissonRegression` (the
    natural-gradient target from ``E[d log Z / da]`` and ``E[d^2 log Z /
    da^2]``, moved by ``algorithm``); ``q(sigma)`` takes natural-gradient
    steps for every algorithm (its natural parameter ``-1 / (2 s^2)``
    towards ``prior + N / |S| sum_i d E[l_i] / d E[sigma^2]``; the paper's
    S-DSVI takes an AdaGrad step on ``s``).  The expectations are
    deterministic quadrature by default (Gauss-Hermite over ``x . w`` and
    ``f``, the Gauss rule of the Rayleigh density over ``sigma``): the paper's Monte Carlo estimate
    of ``log Z`` from 100 inner samples is biased (the log of an average),
    and its noise slows the steps; ``expectation='mc'`` gives it, with
    ``n_mc_samples`` outer and 100 inner draws.

    Parameters
    ----------
    noise_prior_scale : float, default=1.0
        ``s0``, the scale of the Rayleigh prior of the noise variance
        (``E[sigma] = s0 sqrt(pi / 2)``), in ``[1e-12, 100]``: beyond 100
        the expected rates ``exp(m + sigma / 2)`` at the prior's quadrature
        nodes overflow, and below 1e-12 the nodes vanish beside the
        weights' variance.  As it goes to 0 the model is
        :class:`SVIPoissonRegression`.
    bound : {'optimal', 'simple', 'mean_field'}, default='optimal'
        The local factors, above.
    link : {'exp', 'softplus'}, default='exp'
        The inverse link ``lambda(f)``, see :class:`skvi.likelihoods.Poisson`
        (the paper's experiments use ``'softplus'``).
    expectation : {'quadrature', 'mc'}, default='quadrature'
        Deterministic quadrature, or the paper's Monte Carlo.
"""
        + _GLM_PARAMS_DOC.split("Parameters\n    ----------\n", 1)[1].replace(
            _EXPECTATION_DOC,
            """    n_mc_samples : int, default=10
        Outer draws of ``(x . w, sigma)`` per row with ``expectation='mc'``.
""",
        )
        + """
    Attributes
    ----------
    noise_scale_ : float
        ``s``, the scale of ``q(sigma) = Rayleigh(s)``.
    noise_variance_ : float
        ``E_q[sigma] = s sqrt(pi / 2)``, the posterior mean of the noise
        variance.
"""
        + _GLM_ATTRS_DOC
        + """
    See Also
    --------
    SVIPoissonRegression : the same model without the random effect.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIOverdispersedPoissonRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(3000, 2))
    >>> f = 1.0 + X @ [0.5, -0.3] + rng.normal(0.0, np.sqrt(0.5), 3000)
    >>> y = rng.poisson(np.exp(f))
    >>> reg = SVIOverdispersedPoissonRegression(random_state=0).fit(X, y)
    >>> np.round(reg.coef_, 1), np.round(reg.intercept_, 1)
    (array([[ 0.5, -0.3]]), array([1.]))
    >>> round(reg.noise_variance_, 1)
    0.5
    """
    )

    _parameter_constraints = {
        **SVIPoissonRegression._parameter_constraints,
        "expectation": [StrOptions({"mc", "quadrature"})],
        # Where the quadrature works: below 1e-25 the optimal bound was
        # positive (q(sigma)'s nodes vanish beside the weights' variance);
        # above a few hundred E[exp(f)] = exp(m + sigma / 2) overflows at
        # the prior's nodes (NaN predictions from 500 on).
        "noise_prior_scale": [Interval(numbers.Real, 1e-12, 100.0, closed="both")],
        "bound": [StrOptions({"optimal", "simple", "mean_field"})],
    }

    def __init__(
        self,
        *,
        noise_prior_scale=1.0,
        bound="optimal",
        link="exp",
        prior_variance=None,
        fit_intercept=True,
        intercept_prior_variance=100.0,
        algorithm="mc-ssvi",
        gradient_learning_rate=0.5,
        expectation="quadrature",
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
        self.noise_prior_scale = noise_prior_scale
        self.bound = bound
        super().__init__(
            link=link,
            prior_variance=prior_variance,
            fit_intercept=fit_intercept,
            intercept_prior_variance=intercept_prior_variance,
            algorithm=algorithm,
            gradient_learning_rate=gradient_learning_rate,
            expectation=expectation,
            n_mc_samples=n_mc_samples,
            learning_method=learning_method,
            batch_size=batch_size,
            max_iter=max_iter,
            tol=tol,
            learning_offset=learning_offset,
            learning_decay=learning_decay,
            learning_rate=learning_rate,
            total_samples=total_samples,
            step_safety=step_safety,
            random_state=random_state,
            n_jobs=n_jobs,
            verbose=verbose,
        )

    # ------------------------------------------------------------ model hooks
    def _prior_natural(self):
        prior = super()._prior_natural()
        prior["noise"] = Rayleigh(self.noise_prior_scale).natural
        return prior

    def _initialize_globals(self, data, random_state, summary):
        params = super()._initialize_globals(data, random_state, summary)
        params["noise"] = Rayleigh(self.noise_prior_scale).natural
        return params

    @property
    def _settings(self):
        settings = super()._settings
        # The Monte Carlo local step draws from one generator as it goes:
        # one block per minibatch.
        settings.parallel = self.expectation == "quadrature"
        return settings

    def _factors(self):
        return {"weights": MultivariateGaussian, "noise": Rayleigh}

    def _update_rules(self):
        rules = super()._update_rules()
        # The noise's fixed-point map overshoots at rho = 1 (its slope was
        # about -2 near the optimum on simulated counts): batch steps damp
        # it by the map's secant slope.
        rules["noise"] = SecantFixedPoint() if self.learning_method == "batch" else None
        return rules

    def _local_draws(self, data, random_state):
        # The Monte Carlo nodes are drawn as the local step goes.
        return random_state if self.expectation == "mc" else None

    def _noise(self, params):
        return params["noise"].distribution

    def _local_step(self, data, params, draws=None):
        self._mc_random_state = draws
        Xd = design_of(data, self.fit_intercept)
        mean, var = self._linear_moments(Xd, params)
        q_noise = self._noise(params)
        y = data.y
        if self.bound == "mean_field":
            mu, tau, e_log = self._mean_field_locals(y, mean, float(q_noise.expected_inverse()))
            kappa = float(q_noise.expected_inverse())
            # E_q[log N(f_i | x_i . w, sigma)] is Gaussian in w: the GLM
            # target with E1 = kappa (mu_i - a_i), E2 = -kappa.
            resid = (mu - mean) ** 2 + tau + var
            return {
                "design": Xd,
                "mean": mean,
                "e1": kappa * (mu - mean),
                "e2": np.full_like(mean, -kappa),
                "noise": resid,
                "mu": mu,
                "tau": tau,
                "e_log": e_log,
            }
        e1, e2, noise = self._optimal_or_simple(y, mean, var, q_noise)
        return {"design": Xd, "mean": mean, "e1": e1, "e2": e2, "noise": noise}

    def _outer_nodes(self, mean, var, q_noise, method=None):
        """Points (a, sigma) of shape (n, m) and their weights (m,) for E over q(w) q(sigma)."""
        if (method or self.expectation) == "mc":
            rng = self._mc_random_state
            n, m = mean.shape[0], self.n_mc_samples
            a = mean[:, None] + np.sqrt(var)[:, None] * rng.standard_normal((n, m))
            sigma = q_noise.sample(size=(n, m), random_state=rng)
            return a, sigma, np.full(m, 1.0 / m)
        z, wz = _hermite(_A_NODES)
        s_nodes, ws = q_noise.quadrature(_NOISE_NODES)
        n = mean.shape[0]
        shape = (n, z.size, ws.size)
        a = np.broadcast_to(
            mean[:, None, None] + np.sqrt(var)[:, None, None] * z[None, :, None], shape
        )
        sigma = np.broadcast_to(np.asarray(s_nodes)[None, None, :], shape)
        return a.reshape(n, -1), sigma.reshape(n, -1), np.outer(wz, ws).ravel()

    def _optimal_or_simple(self, y, mean, var, q_noise):
        """E[d/da], E[d^2/da^2] of the row's data term, and its derivative in E[sigma^2]."""
        lik = self._likelihood
        s = float(q_noise.scale)
        if self.bound == "simple":
            # E_sigma E_{f ~ N(a_mean, var + sigma)}[log p]: GLM expectations
            # with the noise variance added, over the noise nodes.
            s_nodes, ws = q_noise.quadrature(_NOISE_NODES)
            v = var[:, None] + np.asarray(s_nodes)[None, :]
            _, d1, d2 = lik.expectations(
                np.broadcast_to(y[:, None], v.shape),
                np.broadcast_to(mean[:, None], v.shape),
                v,
                method="quadrature",
                n_samples=_F_NODES,
            )
            h = 0.5 * d2  # d/dv of E_{N(a, v)}[log p] (heat equation)
            sig = np.asarray(s_nodes)[None, :]
            return d1 @ ws, d2 @ ws, (h * sig) @ ws / (4.0 * s * s)
        a, sigma, w = self._outer_nodes(mean, var, q_noise)
        method = "mc" if self.expectation == "mc" else "quadrature"
        n_inner = 100 if method == "mc" else _F_NODES
        _, g1, g2 = lik.log_marginal(
            np.broadcast_to(y[:, None], a.shape),
            a,
            sigma,
            method=method,
            n_samples=n_inner,
            random_state=self._mc_random_state,
        )
        h = 0.5 * (g2 + g1 * g1)  # d log Z / dv
        # d E_q[g(sigma)] / d E[sigma^2] = E[g'(sigma) sigma] / (4 s^2) for
        # sigma = s eps, eps ~ Rayleigh(1), E[sigma^2] = 2 s^2.
        return g1 @ w, g2 @ w, (h * sigma) @ w / (4.0 * s * s)

    def _mean_field_locals(self, y, a, kappa):
        """Newton iterations for q(f_i) = N(mu_i, tau_i) given E[1 / sigma] = kappa.

        Stationary points of ``E_{N(mu, tau)}[log p(y | f)] - kappa ((mu -
        a)^2 + tau) / 2 + log(tau) / 2``: ``tau = 1 / (kappa - E[d2])`` and
        ``E[d1] = kappa (mu - a)``.
        """
        lik = self._likelihood
        mu = a.copy()
        tau = np.full_like(a, 1.0 / kappa)
        for _ in range(_LOCAL_ITERATIONS):
            _, d1, d2 = lik.expectations(y, mu, tau, method="quadrature", n_samples=_F_NODES)
            curvature = kappa - d2  # > 0 for a log-concave likelihood
            mu = mu + (d1 - kappa * (mu - a)) / curvature
            tau = 1.0 / curvature
        e_log, _, _ = lik.expectations(y, mu, tau, method="quadrature", n_samples=_F_NODES)
        return mu, tau, e_log

    def _expected_stats(self, name, data, local, params):
        if name == "weights":
            return super()._expected_stats(name, data, local, params)
        total = np.asarray(float(np.sum(data.weighted(local["noise"]))))
        if self.bound != "mean_field":
            return (total,)
        # The mean-field update (_noise_target) needs the rows' count too.
        return (total, np.asarray(float(self._sample_count(data))))

    def _update_factor(self, name, current, stats, ctx):
        if name != "noise":
            return super()._update_factor(name, current, stats, ctx)
        target = self._noise_target(current, stats, ctx)
        return update_factor(self, name, current, stats, ctx, target=target)

    def _noise_target(self, current, stats, ctx):
        """The noise's target: a closed-form optimum or the blend's, in a trust region."""
        if self.bound == "mean_field":
            # Appendix A.4: given the rows' expected squared residuals R_i, the
            # optimal s solves (2 / s0^2) s^3 + (N / 2 - 2) s - sqrt(pi/2) / 2 sum R = 0.
            total, n = ctx.scale * float(stats[0]), ctx.scale * float(stats[1])
            roots = np.roots(
                [2.0 / self.noise_prior_scale**2, 0.0, 0.5 * n - 2.0, -0.5 * _SQRT_HALF_PI * total]
            )
            s_opt = max(
                r.real for r in roots if abs(r.imag) <= 1e-9 * max(1.0, abs(r)) and r.real > 0
            )
            target = -0.5 / float(s_opt) ** 2
        else:
            target = float(factor_target("noise", stats, ctx)[0])
        if not np.isfinite(target):
            return (np.asarray(target),)  # invalid: the engine rejects the step
        # A trust region: s at most doubles or halves per step.  Far from
        # the optimum (the first steps, with the weights still at zero) the
        # target can leave the family (lam_hat >= 0: the counts look
        # overdispersed before the features explain them).
        lam = float(current[0])
        return (np.asarray(min(max(target, 4.0 * lam), 0.25 * lam)),)

    def _local_bound(self, data, local, params, remember=True):
        Xd = local["design"] if local is not None else design_of(data, self.fit_intercept)
        mean, var = self._linear_moments(Xd, params)
        q_noise = self._noise(params)
        lik = self._likelihood
        y = data.y
        if self.bound == "mean_field":
            kappa = float(q_noise.expected_inverse())
            if local is None or "mu" not in local:
                mu, tau, e_log = self._mean_field_locals(y, mean, kappa)
            else:
                mu, tau, e_log = local["mu"], local["tau"], local["e_log"]
            resid = (mu - mean) ** 2 + tau + var
            per_row = (
                e_log
                - 0.5 * np.log(2.0 * np.pi)
                - 0.5 * float(q_noise.expected_log())
                - 0.5 * kappa * resid
                + 0.5 * np.log(2.0 * np.pi * np.e * tau)
            )
            return float(np.sum(data.weighted(per_row)))
        if self.bound == "simple":
            s_nodes, ws = q_noise.quadrature(_NOISE_NODES)
            v = var[:, None] + np.asarray(s_nodes)[None, :]
            e_log, _, _ = lik.expectations(
                np.broadcast_to(y[:, None], v.shape),
                np.broadcast_to(mean[:, None], v.shape),
                v,
                method="quadrature",
                n_samples=_F_NODES,
            )
            return float(np.sum(data.weighted(e_log @ ws)))
        # The rule of the fitting steps, deterministic whatever ``expectation``.
        a, sigma, w = self._outer_nodes(mean, var, q_noise, method="quadrature")
        log_z, _, _ = lik.log_marginal(
            np.broadcast_to(y[:, None], a.shape), a, sigma, method="quadrature", n_samples=_F_NODES
        )
        return float(np.sum(data.weighted(log_z @ w)))

    def _global_bound(self, params):
        prior = Rayleigh(self.noise_prior_scale)
        return super()._global_bound(params) - float(self._noise(params).kl(prior))

    def _on_params_updated(self):
        super()._on_params_updated()
        q = self._noise(self.natural_params_)
        self.noise_scale_ = float(q.scale)
        self.noise_variance_ = float(q.mean())

    # ------------------------------------------------------------ prediction
    def _predictive_nodes(self, X):
        mean, var = self._predictive_moments(X)
        s_nodes, ws = self._noise(self.natural_params_).quadrature(_PREDICTIVE_NOISE_NODES)
        return mean, var[:, None] + np.asarray(s_nodes)[None, :], ws

    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of the count.

        ``f ~ N(x . m, x^T V x + sigma)`` averaged over ``q(sigma)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the predictive standard deviation of y.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Predictive mean count.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation; only when ``return_std``.
        """
        mean, v, ws = self._predictive_nodes(X)
        lik = self._likelihood
        m = np.broadcast_to(mean[:, None], v.shape)
        mu_k = lik.predictive_mean(m, v)
        mu = mu_k @ ws
        if not return_std:
            return mu
        second = (lik.predictive_variance(m, v) + mu_k * mu_k) @ ws
        with np.errstate(invalid="ignore"):
            variance = np.maximum(second - mu * mu, 0.0)
        # An overflowing second moment (inf - inf) has an infinite variance.
        return mu, np.sqrt(np.where(np.isposinf(second), np.inf, variance))

    def log_predictive_density(self, X, y):
        """``log p(y_i | x_i)`` of each row under the posterior predictive.

        ``log E_{q(sigma)} int N(f; x . m, x^T V x + sigma) p(y | f) df``
        (appendix A.5), by Gauss quadrature over ``sigma`` and ``f``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Counts.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log predictive densities; their negative mean is the test NLL.
        """
        check_is_fitted(self)
        y = self._encode_targets(np.asarray(y), reset=False)
        mean, v, ws = self._predictive_nodes(X)
        if y.shape[0] != mean.shape[0]:
            raise ValueError(f"X has {mean.shape[0]} rows but y has {y.shape[0]}.")
        log_z, _, _ = self._likelihood.log_marginal(
            y[:, None],
            np.broadcast_to(mean[:, None], v.shape),
            v,
            method="quadrature",
            n_samples=_PREDICTIVE_F_NODES,
        )
        return special.logsumexp(log_z + np.log(ws), axis=1)
