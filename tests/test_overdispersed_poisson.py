"""SVIOverdispersedPoissonRegression against independent references.

References: scipy.integrate quadrature of the model's integrals (the
optimal local factor's log Z, the predictive density), finite differences
of the exact ELBO (the fixed point of the noise step), the positive root of
the mean-field cubic from numpy, scipy.optimize for the mean-field local
factors, and the plain Poisson GLM in the limit of no noise.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, optimize, stats
from sklearn.exceptions import ConvergenceWarning

from skvi import SVIOverdispersedPoissonRegression, SVIPoissonRegression
from skvi.engine import Factor
from skvi.expfam import Rayleigh
from skvi.likelihoods import Poisson
from skvi.engine.data import Rows


def _data(n=1500, noise_var=0.5, seed=0, link="exp"):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 2))
    f = 0.8 + X @ [0.5, -0.3] + rng.normal(0.0, np.sqrt(noise_var), n)
    rate = np.exp(f) if link == "exp" else np.logaddexp(0.0, f)
    return X, rng.poisson(rate).astype(float)


_FITS = {}


def _fit(**kw):
    """A batch fit on simulated counts (cached: the fits are deterministic)."""
    key = tuple(sorted(kw.items()))
    if key not in _FITS:
        data_kw = {k: kw.pop(k) for k in ("n", "noise_var", "seed") if k in kw}
        X, y = _data(**data_kw, link=kw.get("link", "exp"))
        params = dict(learning_method="batch", max_iter=60, tol=1e-7, random_state=0)
        params.update(kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _FITS[key] = SVIOverdispersedPoissonRegression(**params).fit(X, y), X, y
    return _FITS[key]


def _elbo_with_noise_scale(est, X, y, s):
    params = dict(est.natural_params_)
    params["noise"] = Factor(Rayleigh(s).natural, Rayleigh)
    data = Rows(est._check_X(X, reset=False), y)
    return est._global_bound(params) + est._local_bound(data, None, params)


@pytest.mark.parametrize("bound", ["optimal", "simple"])
def test_noise_step_fixed_point_is_a_stationary_point_of_the_elbo(bound):
    est, X, y = _fit(bound=bound, n=600, tol=1e-10)
    s = est.noise_scale_
    h = 1e-4 * s
    grad = (_elbo_with_noise_scale(est, X, y, s + h) - _elbo_with_noise_scale(est, X, y, s - h)) / (
        2 * h
    )
    curvature = (
        _elbo_with_noise_scale(est, X, y, s + h)
        - 2 * _elbo_with_noise_scale(est, X, y, s)
        + _elbo_with_noise_scale(est, X, y, s - h)
    ) / h**2
    # The step at the fixed point would move s by -grad / curvature.
    assert abs(grad / curvature) < 1e-3 * s
    assert curvature < 0


def test_optimal_bound_learns_the_noise_and_the_simple_bound_does_not():
    optimal, _, _ = _fit(bound="optimal", n=2000, noise_var=0.5)
    simple, _, _ = _fit(bound="simple", n=2000, noise_var=0.5)
    # True noise variance 0.5: the optimal bound recovers it (a statistical
    # tolerance for 2000 rows); the simple bound's data term always prefers
    # less noise.
    assert optimal.noise_variance_ == pytest.approx(0.5, rel=0.25)
    assert simple.noise_variance_ < 0.5 * optimal.noise_variance_
    assert_allclose(optimal.coef_[0], [0.5, -0.3], atol=0.06)


def test_without_noise_it_is_the_poisson_glm():
    X, y = _data(noise_var=0.0, n=800)
    common = dict(learning_method="batch", max_iter=100, tol=1e-10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gme = SVIOverdispersedPoissonRegression(noise_prior_scale=1e-8, **common).fit(X, y)
        glm = SVIPoissonRegression(expectation="quadrature", n_mc_samples=20, **common).fit(X, y)
    assert_allclose(gme.posterior_mean_, glm.posterior_mean_, atol=1e-5)
    assert_allclose(gme.posterior_covariance_, glm.posterior_covariance_, rtol=1e-3, atol=1e-8)


@pytest.mark.slow
def test_elbo_data_term_against_scipy_quadrature():
    # E_{q(w) q(sigma)}[log Z_i(x_i . w, sigma)] for one row: the inner Z by
    # scipy's adaptive quadrature, the integrals over a = x . w and sigma by
    # 20-point Gauss-Hermite and 50-point Gauss-Legendre rules (on [0, 8 s]).
    est, X, y = _fit(bound="optimal", n=300)
    rows = slice(0, 1)
    ours = est._local_bound(Rows(X[rows], y[rows]), None, est.natural_params_)
    m, V, s = est.posterior_mean_, est.posterior_covariance_, est.noise_scale_
    lik = Poisson("exp")
    z, wz = np.polynomial.hermite.hermgauss(20)
    u, wu = np.polynomial.legendre.leggauss(50)
    sigmas, w_sigma = 4 * s * (u + 1), 4 * s * wu * stats.rayleigh.pdf(4 * s * (u + 1), scale=s)
    total = 0.0
    for x, yi in zip(X[rows], y[rows]):
        xd = np.append(x, 1.0)
        ma, va = xd @ m, xd @ V @ xd

        def log_z(a, sigma, yi=yi):
            sd = np.sqrt(sigma)
            val, _ = integrate.quad(
                lambda f: stats.norm.pdf(f, a, sd) * np.exp(lik.logpdf(yi, f)),
                a - 12 * sd,
                a + 12 * sd,
                epsabs=0,
                epsrel=1e-10,
            )
            return np.log(val)

        for zj, wj in zip(np.sqrt(2.0) * z, wz / np.sqrt(np.pi)):
            a = ma + np.sqrt(va) * zj
            total += wj * sum(wk * log_z(a, sk) for sk, wk in zip(sigmas, w_sigma))
    # The fitting rule (6 x 6 x 12 nodes) is accurate to about 2e-5 of the value.
    assert ours == pytest.approx(total, rel=1e-4)


def test_log_predictive_density_and_mean_against_scipy_quadrature():
    est, X, y = _fit(bound="optimal", n=300, link="softplus")
    x = np.array([[0.3, -1.0], [2.0, 1.0]])
    yt = np.array([2.0, 7.0])
    ours = est.log_predictive_density(x, yt)
    mean_ours = est.predict(x)
    m, V, s = est.posterior_mean_, est.posterior_covariance_, est.noise_scale_
    lik = Poisson("softplus")
    for i in range(2):
        xd = np.append(x[i], 1.0)
        ma, va = xd @ m, xd @ V @ xd

        def density(f, sigma, g):
            return (
                g(f)
                * stats.norm.pdf(f, ma, np.sqrt(va + sigma))
                * stats.rayleigh.pdf(sigma, scale=s)
            )

        lo, hi = ma - 15, ma + 15
        p, _ = integrate.dblquad(
            lambda f, sigma: density(f, sigma, lambda t: np.exp(lik.logpdf(yt[i], t))),
            1e-9,
            10 * s,
            lo,
            hi,
            epsabs=1e-12,
        )
        mu, _ = integrate.dblquad(
            lambda f, sigma: density(f, sigma, lambda t: np.logaddexp(0.0, t)),
            1e-9,
            10 * s,
            lo,
            hi,
            epsabs=1e-10,
        )
        assert ours[i] == pytest.approx(np.log(p), rel=1e-4)
        assert mean_ours[i] == pytest.approx(mu, rel=1e-4)


def test_mean_field_noise_is_the_root_of_the_cubic_and_locals_are_optimal():
    est, X, y = _fit(bound="mean_field", n=400, max_iter=500, tol=0.0)
    params = est.natural_params_
    data = Rows(est._check_X(X, reset=False), y)
    local = est._local_step(data, params)
    # Local factors: maximise E_{N(mu, tau)}[log p] - kappa((mu - a)^2 + tau)/2 + log(tau)/2.
    kappa = float(params["noise"].distribution.expected_inverse())
    for i in range(3):
        a = local["mean"][i]

        def neg(z, yi=y[i], a=a):
            mu, log_tau = z
            tau = np.exp(log_tau)
            e_log = yi * mu - np.exp(mu + tau / 2)  # exact for the exp link, up to log y!
            return -(e_log - 0.5 * kappa * ((mu - a) ** 2 + tau) + 0.5 * log_tau)

        res = optimize.minimize(
            neg,
            [a, 0.0],
            method="Nelder-Mead",
            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000},
        )
        assert local["mu"][i] == pytest.approx(res.x[0], abs=1e-5)
        assert local["tau"][i] == pytest.approx(np.exp(res.x[1]), rel=1e-4)
    # The noise scale: positive root of (2/s0^2) s^3 + (N/2 - 2) s - sqrt(pi/2)/2 sum R = 0
    # at the fixed point (R from the current factors).
    n, total = X.shape[0], float(np.sum(local["noise"]))
    roots = np.roots(
        [2.0 / est.noise_prior_scale**2, 0.0, n / 2 - 2.0, -0.5 * np.sqrt(np.pi / 2) * total]
    )
    root = max(r.real for r in roots if abs(r.imag) < 1e-9 and r.real > 0)
    assert est.noise_scale_ == pytest.approx(root, rel=1e-6)


@pytest.mark.parametrize("algorithm", ["mc-ssvi", "h-mc-ssvi", "s-dsvi"])
def test_online_algorithms_approach_the_batch_fit(algorithm):
    X, y = _data(n=2000)
    batch, _, _ = _fit(n=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        online = SVIOverdispersedPoissonRegression(
            algorithm=algorithm,
            batch_size=500,
            max_iter=8,
            random_state=0,
            gradient_learning_rate=0.1,
        ).fit(X, y)
    # Eight passes of four steps: the schedule's noise, not the optimum.
    assert_allclose(online.coef_, batch.coef_, atol=0.05)
    assert online.noise_variance_ == pytest.approx(batch.noise_variance_, rel=0.2)


def test_monte_carlo_expectations_agree_with_quadrature():
    quad, X, y = _fit(n=1500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mc = SVIOverdispersedPoissonRegression(
            expectation="mc", batch_size=300, max_iter=10, tol=0, random_state=0
        ).fit(X, y)
    # The paper's estimator: 10 outer draws of (x . w, sigma), log Z from 100
    # inner draws (the log of an average, biased low for informative counts).
    # Measured on these data: coefficients 0.04-0.05 and the noise variance
    # 25% away from the quadrature fit.
    assert_allclose(mc.coef_, quad.coef_, atol=0.08)
    assert mc.noise_variance_ == pytest.approx(quad.noise_variance_, rel=0.4)


def test_bad_input_is_rejected():
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="non-negative"):
        SVIOverdispersedPoissonRegression().fit(X, -y - 1)
    with pytest.raises(ValueError):
        SVIOverdispersedPoissonRegression(bound="exact").fit(X, y)
    est = SVIOverdispersedPoissonRegression(max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.ones((3, 5)))
