"""SVIBayesianGaussianMixture against independent references.

References: scikit-learn's BayesianGaussianMixture (M-step, E-step, whole
fits, its converged posterior), the closed-form Normal-Wishart posterior,
the unnormalised exact posterior of the labelled model, and Monte Carlo
over the variational posterior (ELBO, E-step, predictive density).
"""

import copy
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import special, stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import BayesianGaussianMixture

from skvi import SVIBayesianGaussianMixture
from skvi.engine import DataMoments
from skvi.expfam import NormalWishart
from skvi.models.mixture import start as mixture_start
from skvi.engine.data import Rows

COV_TYPES = ["full", "tied", "diag", "spherical"]
WEIGHT_PRIORS = ["dirichlet_process", "dirichlet_distribution"]


def _blobs(rng, n=400, d=2, k=3, spread=4.0):
    centres = rng.normal(0.0, spread, (k, d))
    labels = rng.randint(k, size=n)
    scales = rng.uniform(0.5, 1.5, (k, d))
    return centres[labels] + rng.normal(size=(n, d)) * scales[labels]


def _component_draw(ct, mu_s, lam_s, k):
    """Draws of (mu_k, Lambda_k) from samples of the components' factor."""
    if ct == "full":
        return mu_s[:, k, 0, :], lam_s[:, k]
    if ct == "tied":
        return mu_s[:, k, :], lam_s
    if ct == "diag":
        return mu_s[:, k, :, 0, 0], lam_s[:, k]
    return mu_s[:, k, 0, :], lam_s[:, k]


def _log_normal_draws(ct, x, mu, lam):
    """log N(x_n | mu_s, Lambda_s^-1) for every draw s and point n, shape (S, n)."""
    d = x.shape[1]
    diff = x[None] - mu[:, None, :]
    if ct in ("full", "tied"):
        quad = np.einsum("sni,sij,snj->sn", diff, lam, diff)
        logdet = np.linalg.slogdet(lam)[1][:, None]
    elif ct == "diag":
        quad = np.einsum("sni,si->sn", diff * diff, lam)
        logdet = np.log(lam).sum(axis=1)[:, None]
    else:
        quad = lam[:, None] * np.sum(diff * diff, axis=2)
        logdet = d * np.log(lam)[:, None]
    return 0.5 * logdet - 0.5 * quad - 0.5 * d * np.log(2 * np.pi)


def _set_posterior(est, X, resp):
    """Priors from X and the globals of one batch step (rho = 1) from ``resp``."""
    est._adopt_data_summary(DataMoments.of(X))
    est.n_features_in_ = X.shape[1]
    prior = est._prior_natural()
    stats_ = est._statistics(X, resp)
    est._adopt_globals(
        {name: tuple(p + s for p, s in zip(prior[name], stats_[name])) for name in prior},
        float(resp.sum()),
    )
    return est


def _pair(ct, wp, K, **kw):
    params = dict(
        n_components=K, covariance_type=ct, weight_concentration_prior_type=wp, random_state=0, **kw
    )
    return SVIBayesianGaussianMixture(**params), BayesianGaussianMixture(**params)


def _sklearn_m_step(bgm, X, resp):
    bgm._check_parameters(X)
    bgm._m_step(X, np.log(np.maximum(resp, 1e-300)))
    bgm._set_parameters(bgm._get_parameters())
    return bgm


# --------------------------------------------------------------------------
# one batch step against scikit-learn's M-step
# --------------------------------------------------------------------------
@pytest.mark.parametrize("wp", WEIGHT_PRIORS)
@pytest.mark.parametrize("ct", COV_TYPES)
def test_batch_step_equals_sklearn_m_step(ct, wp):
    rng = np.random.RandomState(0)
    d = 3
    X = _blobs(rng, d=d) + 10.0  # away from the origin
    # 'tied' departs from scikit-learn's update for K > 1 (see the docstring);
    # with one component the two are the same model.
    K = 1 if ct == "tied" else 4
    resp = rng.dirichlet(np.ones(K), size=X.shape[0])
    ours, ref = _pair(ct, wp, K, reg_covar=1e-3)
    _set_posterior(ours, X, resp)
    _sklearn_m_step(ref, X, resp)
    assert_allclose(ours.means_, ref.means_, rtol=1e-10)
    assert_allclose(ours.mean_precision_, ref.mean_precision_, rtol=1e-12)
    assert_allclose(ours.degrees_of_freedom_, ref.degrees_of_freedom_, rtol=1e-12)
    assert_allclose(ours.covariances_, ref.covariances_, rtol=1e-9)
    assert_allclose(ours.precisions_cholesky_, ref.precisions_cholesky_, rtol=1e-8)
    assert_allclose(ours.weights_, ref.weights_, rtol=1e-12)
    if wp == "dirichlet_process":
        for a, b in zip(ours.weight_concentration_, ref.weight_concentration_):
            assert_allclose(a, b, rtol=1e-12)
    else:
        assert_allclose(ours.weight_concentration_, ref.weight_concentration_, rtol=1e-12)


def test_tied_update_is_the_exact_shared_precision_posterior_not_sklearns():
    # With K > 1 scikit-learn's tied update uses nu0 + N / K degrees of
    # freedom; the exact update (checked against the unnormalised posterior
    # below) uses nu0 + N.  Everything else agrees.
    rng = np.random.RandomState(1)
    X = _blobs(rng, d=2)
    resp = rng.dirichlet(np.ones(3), size=X.shape[0])
    ours, ref = _pair("tied", "dirichlet_distribution", 3, reg_covar=0.0)
    _set_posterior(ours, X, resp)
    _sklearn_m_step(ref, X, resp)
    assert_allclose(ours.means_, ref.means_, rtol=1e-10)
    assert_allclose(ours.mean_precision_, ref.mean_precision_, rtol=1e-12)
    assert ours.degrees_of_freedom_ == pytest.approx(ref.degrees_of_freedom_prior_ + X.shape[0])
    assert ref.degrees_of_freedom_ == pytest.approx(ref.degrees_of_freedom_prior_ + X.shape[0] / 3)


# --------------------------------------------------------------------------
# the exact posterior given the labels
# --------------------------------------------------------------------------
def _log_joint_labelled(est, X, labels, mu, lam):
    """log p(mu, Lambda) + sum_n log N(x_n | mu_z, Lambda_z) for the covariance type.

    ``mu`` (K, d); ``lam``: (K, d, d), (d, d), (K, d) or (K,).
    """
    ct, d = est.covariance_type, X.shape[1]
    m0, b0, nu0, c0 = (
        est.mean_prior_,
        est.mean_precision_prior_,
        est.degrees_of_freedom_prior_,
        est.covariance_prior_,
    )
    K = mu.shape[0]
    total = 0.0
    if ct in ("full", "tied"):
        lams = lam if ct == "full" else np.broadcast_to(lam, (K, d, d))
        w = stats.wishart(df=nu0, scale=np.linalg.inv(c0))
        total += sum(w.logpdf(L) for L in lams) if ct == "full" else w.logpdf(lam)
        for k in range(K):
            total += stats.multivariate_normal(m0, np.linalg.inv(b0 * lams[k])).logpdf(mu[k])
            xs = X[labels == k]
            if len(xs):
                total += np.sum(stats.multivariate_normal(mu[k], np.linalg.inv(lams[k])).logpdf(xs))
        return total
    if ct == "diag":
        total += np.sum(stats.gamma(0.5 * nu0, scale=2.0 / c0).logpdf(lam))
        total += np.sum(stats.norm(m0, 1.0 / np.sqrt(b0 * lam)).logpdf(mu))
        return total + np.sum(stats.norm(mu[labels], 1.0 / np.sqrt(lam[labels])).logpdf(X))
    total += np.sum(stats.gamma(0.5 * d * nu0, scale=2.0 / (d * c0)).logpdf(lam))
    total += np.sum(stats.norm(m0, 1.0 / np.sqrt(b0 * lam[:, None])).logpdf(mu))
    return total + np.sum(stats.norm(mu[labels], 1.0 / np.sqrt(lam[labels, None])).logpdf(X))


def _q_log_density(est, mu, lam):
    q = est.natural_params_["components"].distribution
    ct = est.covariance_type
    if ct == "full":
        return float(np.sum(q.log_prob(mu[:, None, :], lam)))
    if ct == "tied":
        return float(q.log_prob(mu, lam))
    if ct == "diag":
        return float(np.sum(q.log_prob(mu[:, :, None, None], lam)))
    return float(np.sum(q.log_prob(mu[:, None, :], lam)))


@pytest.mark.parametrize("ct", COV_TYPES)
def test_hard_assignments_give_the_exact_posterior(ct):
    # With one-hot responsibilities q(mu, Lambda) is the exact posterior of
    # the labelled model: log q - log p(mu, Lambda, X | z) is the same
    # constant at every point.
    rng = np.random.RandomState(2)
    d, K = 3, 3
    X = _blobs(rng, n=60, d=d, k=K)
    labels = rng.randint(K, size=X.shape[0])
    resp = np.eye(K)[labels]
    est = SVIBayesianGaussianMixture(n_components=K, covariance_type=ct, reg_covar=0.0)
    _set_posterior(est, X, resp)
    q = est.natural_params_["components"].distribution
    diffs = []
    for seed in range(6):
        mu_s, lam_s = q.sample(random_state=seed)
        if ct == "full":
            mu, lam = mu_s[:, 0, :], lam_s
        elif ct == "tied":
            mu, lam = mu_s, lam_s
        elif ct == "diag":
            mu, lam = mu_s[:, :, 0, 0], lam_s
        else:
            mu, lam = mu_s[:, 0, :], lam_s
        # q is of the means centred at est._centre (see natural_params_).
        diffs.append(
            _q_log_density(est, mu, lam)
            - _log_joint_labelled(est, X, labels, mu + est._centre, lam)
        )
    assert np.ptp(diffs) < 1e-8 * max(1.0, abs(diffs[0]))


def test_one_component_is_the_closed_form_normal_wishart_posterior():
    # Bishop, "Pattern recognition and machine learning", eqs. 10.60-10.63.
    rng = np.random.RandomState(3)
    X = rng.multivariate_normal(
        [1.0, -2.0, 0.5], [[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]], size=80
    )
    m0, beta0, nu0 = np.array([0.0, 1.0, 0.0]), 0.5, 5.0
    W0inv = np.diag([1.0, 2.0, 3.0])
    est = SVIBayesianGaussianMixture(
        n_components=1,
        mean_prior=m0,
        mean_precision_prior=beta0,
        degrees_of_freedom_prior=nu0,
        covariance_prior=W0inv,
        reg_covar=0.0,
        max_iter=1,
        tol=0.0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X)
    n = X.shape[0]
    xbar = X.mean(axis=0)
    S = (X - xbar).T @ (X - xbar)
    beta = beta0 + n
    m = (beta0 * m0 + n * xbar) / beta
    nu = nu0 + n
    Winv = W0inv + S + beta0 * n / beta * np.outer(xbar - m0, xbar - m0)
    assert_allclose(est.mean_precision_, [beta])
    assert_allclose(est.means_[0], m, rtol=1e-12)
    assert_allclose(est.degrees_of_freedom_, [nu])
    assert_allclose(est.covariances_[0], Winv / nu, rtol=1e-11)
    assert_allclose(est.weights_, [1.0])


# --------------------------------------------------------------------------
# E-step and whole fits against scikit-learn
# --------------------------------------------------------------------------
@pytest.mark.parametrize("wp", WEIGHT_PRIORS)
@pytest.mark.parametrize("ct", COV_TYPES)
def test_e_step_equals_sklearn_predict_proba(ct, wp):
    # Equal variational parameters (one M-step from the same
    # responsibilities).  'diag' and 'spherical' use the Gamma's E[log
    # lambda], which is scikit-learn's Wishart formula for one feature;
    # 'tied' with one component is scikit-learn's model.  reg_covar = 0:
    # skvi's E-step also counts reg_covar (see the docstring).
    rng = np.random.RandomState(4)
    d = 1 if ct in ("diag", "spherical") else 3
    K = 1 if ct == "tied" else 4
    X = _blobs(rng, d=d)
    resp = rng.dirichlet(np.ones(K), size=X.shape[0])
    ours, ref = _pair(ct, wp, K, reg_covar=0.0)
    _set_posterior(ours, X, resp)
    _sklearn_m_step(ref, X, resp)
    Xt = _blobs(rng, n=50, d=d)
    assert_allclose(ours.predict_proba(Xt), ref.predict_proba(Xt), rtol=1e-9, atol=1e-13)
    # scikit-learn's score_samples is the E-step's normaliser.
    ours.set_params(density="bound")
    assert_allclose(ours.score_samples(Xt), ref.score_samples(Xt), rtol=1e-10)


@pytest.mark.parametrize("ct", COV_TYPES)
def test_plug_in_density_is_the_gaussian_mixture_at_the_posterior_means(ct):
    rng = np.random.RandomState(15)
    X = _blobs(rng, d=2)
    est = SVIBayesianGaussianMixture(
        n_components=3, covariance_type=ct, density="plug-in", random_state=0
    ).fit(X)
    covs = {
        "full": lambda c: c,
        "tied": lambda c: [c] * 3,
        "diag": lambda c: [np.diag(v) for v in c],
        "spherical": lambda c: [v * np.eye(2) for v in c],
    }[ct](est.covariances_)
    Xt = _blobs(rng, n=20, d=2)
    dens = sum(
        w * stats.multivariate_normal(m, c).pdf(Xt)
        for w, m, c in zip(est.weights_, est.means_, covs)
    )
    assert_allclose(est.score_samples(Xt), np.log(dens), rtol=1e-10)
    assert est.score(Xt) == pytest.approx(np.log(dens).mean())


@pytest.mark.parametrize("ct", COV_TYPES)
def test_e_step_against_monte_carlo(ct):
    # E_q[log pi_k + log N(x | mu_k, Lambda_k)] by sampling the posterior, for
    # every covariance type in d = 3 (where diag/spherical differ from
    # scikit-learn's approximation).
    rng = np.random.RandomState(5)
    K, d = 3, 3
    X = _blobs(rng, n=90, d=d, k=K)
    resp = rng.dirichlet(np.ones(K), size=X.shape[0])
    est = SVIBayesianGaussianMixture(
        n_components=K,
        covariance_type=ct,
        reg_covar=0.0,
        weight_concentration_prior_type="dirichlet_distribution",
    )
    _set_posterior(est, X, resp)
    params = est.natural_params_
    x = X[:4]
    ours = est._log_rho(x, params)
    q = params["components"].distribution
    n_mc = 40000
    mu_s, lam_s = q.sample(size=n_mc, random_state=0)
    pi_s = params["weights"].distribution.sample(size=n_mc, random_state=1)
    vals = np.empty((n_mc,) + ours.shape)
    for k in range(K):
        mu, lam = _component_draw(ct, mu_s, lam_s, k)
        # q's means are centred at est._centre (see natural_params_).
        logn = _log_normal_draws(ct, x - est._centre, mu, lam)
        vals[:, :, k] = np.log(pi_s[:, k])[:, None] + logn
    est_mc = vals.mean(axis=0)
    se = vals.std(axis=0) / np.sqrt(n_mc)
    assert np.all(np.abs(est_mc - ours) < 5 * se + 1e-12), (est_mc - ours, se)


def test_full_fit_equals_sklearn_fit():
    # Same initialisation (k-means with the same random state), same
    # updates: the whole fit is scikit-learn's.
    rng = np.random.RandomState(6)
    X = _blobs(rng, n=500, d=3, k=4)
    for wp in WEIGHT_PRIORS:
        ours, ref = _pair("full", wp, 5, reg_covar=0.0, max_iter=40, tol=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours.fit(X)
            ref.fit(X)
        assert_allclose(ours.means_, ref.means_, rtol=1e-9, atol=1e-11)
        assert_allclose(ours.covariances_, ref.covariances_, rtol=1e-8, atol=1e-12)
        assert_allclose(ours.weights_, ref.weights_, rtol=1e-8, atol=1e-12)
        # sample() draws as scikit-learn's does from the same plug-in mixture.
        assert_allclose(ours.sample(7)[0], ref.sample(7)[0], rtol=1e-8)


@pytest.mark.parametrize(
    "ct,d,K", [("full", 3, 4), ("diag", 1, 3), ("spherical", 1, 3), ("tied", 3, 1)]
)
def test_sklearn_converged_fit_is_a_fixed_point(ct, d, K):
    rng = np.random.RandomState(7)
    X = _blobs(rng, n=400, d=d, k=3)
    ref = BayesianGaussianMixture(
        n_components=K, covariance_type=ct, reg_covar=0.0, tol=1e-12, max_iter=2000, random_state=0
    ).fit(X)
    est = SVIBayesianGaussianMixture.from_sklearn(ref, warm_start=True, max_iter=1, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X)
    assert_allclose(est.means_, ref.means_, rtol=1e-7, atol=1e-9)
    assert_allclose(est.covariances_, ref.covariances_, rtol=1e-7, atol=1e-12)
    assert_allclose(est.weights_, ref.weights_, rtol=1e-7, atol=1e-12)


# --------------------------------------------------------------------------
# the ELBO
# --------------------------------------------------------------------------
@pytest.mark.parametrize("wp", WEIGHT_PRIORS)
@pytest.mark.parametrize("ct", COV_TYPES)
def test_elbo_against_monte_carlo(ct, wp):
    rng = np.random.RandomState(8)
    K, d = 3, 2
    X = _blobs(rng, n=40, d=d, k=K)
    est = SVIBayesianGaussianMixture(
        n_components=K, covariance_type=ct, reg_covar=0.0, weight_concentration_prior_type=wp
    )
    _set_posterior(est, X, rng.dirichlet(np.ones(K), size=X.shape[0]))
    elbo = est.elbo(X)
    params = est.natural_params_
    # Responsibilities of the E-step at these globals (what elbo() uses).
    log_rho = est._log_rho(X, params)
    resp = np.exp(log_rho - special.logsumexp(log_rho, axis=1, keepdims=True))
    q_c = params["components"].distribution
    p_c = type(q_c).from_natural(*est._prior_natural()["components"])
    q_w = params["weights"].distribution
    p_w = type(q_w).from_natural(*est._prior_natural()["weights"])
    n_mc = 20000
    mu_s, lam_s = q_c.sample(size=n_mc, random_state=3)
    w_s = q_w.sample(size=n_mc, random_state=4)
    if wp == "dirichlet_process":
        v = w_s[..., 0]
        log_pi = np.log(v) + np.concatenate(
            [np.zeros((n_mc, 1)), np.cumsum(np.log1p(-v), axis=1)[:, :-1]], axis=1
        )
    else:
        log_pi = np.log(w_s)
    log_ratio = np.sum(
        np.atleast_2d(p_w.log_prob(w_s) - q_w.log_prob(w_s)).reshape(n_mc, -1), axis=1
    ) + np.sum((p_c.log_prob(mu_s, lam_s) - q_c.log_prob(mu_s, lam_s)).reshape(n_mc, -1), axis=1)
    loglik = np.zeros(n_mc)
    for k in range(K):
        mu, lam = _component_draw(ct, mu_s, lam_s, k)
        logn = _log_normal_draws(ct, X - est._centre, mu, lam)  # q's means are centred
        loglik += (resp[None, :, k] * (log_pi[:, k : k + 1] + logn)).sum(axis=1)
    entropy_z = -np.sum(resp * np.log(np.maximum(resp, 1e-300)))
    vals = loglik + log_ratio + entropy_z
    se = vals.std() / np.sqrt(n_mc)
    assert abs(vals.mean() - elbo) < 5 * se, (vals.mean(), elbo, se)


@pytest.mark.parametrize("wp", WEIGHT_PRIORS)
@pytest.mark.parametrize("ct", COV_TYPES)
def test_batch_elbo_never_decreases(ct, wp):
    rng = np.random.RandomState(9)
    X = _blobs(rng, n=300, d=3, k=4)
    est = SVIBayesianGaussianMixture(
        n_components=6,
        covariance_type=ct,
        max_iter=60,
        tol=0.0,
        weight_concentration_prior_type=wp,
        init_params="random",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X)
    bounds = np.array(est.lower_bounds_)
    assert len(bounds) == 60
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert bounds[-1] > bounds[0]
    # lower_bound_ is the ELBO at the last responsibilities; elbo() takes one
    # more E-step, which can only raise it.
    assert est.elbo(X) >= est.lower_bound_ - 1e-9 * abs(est.lower_bound_)


def _sklearn_random_data(scale=20, n_samples=200):
    """scikit-learn's ``RandomData(RandomState(0), scale)`` of its mixture tests:
    two components in two dimensions, one data set per covariance type."""
    from sklearn.datasets import make_spd_matrix

    rng = np.random.RandomState(0)
    weights = rng.rand(2)
    weights /= weights.sum()
    means = rng.rand(2, 2) * scale
    covariances = {
        "spherical": [c * np.eye(2) for c in 0.5 + rng.rand(2)],
        "diag": [np.diag(c) for c in (0.5 + rng.rand(2, 2)) ** 2],
    }
    tied = make_spd_matrix(2, random_state=rng)
    covariances["tied"] = [tied, tied]
    covariances["full"] = [make_spd_matrix(2, random_state=rng) * 0.5 for _ in range(2)]
    data = {}
    for ct in COV_TYPES:
        draws = np.random.RandomState(0)
        data[ct] = np.vstack(
            [
                draws.multivariate_normal(m, c, int(np.round(w * n_samples)))
                for w, m, c in zip(weights, means, covariances[ct])
            ]
        )
    return data


def test_monotonic_likelihood():
    # scikit-learn's test_monotonic_likelihood (test_bayesian_mixture.py):
    # one pass per warm-started fit, the bound never decreasing, until the
    # fit converges.  Its tol of 1e-3 bounds the change of the total bound,
    # skvi's the change per sample.  A warm start's first pass was not
    # compared with the previous fit's bound, so converged_ stayed False and
    # the loop ran 600 passes, past the fixed point, where the ELBO moves by
    # rounding only (decreases of 1e-12 here; scikit-learn's own bound
    # falls by 4e-11 there when it is not stopped).
    data = _sklearn_random_data(scale=20)
    rng = np.random.RandomState(0)
    for prior_type in WEIGHT_PRIORS:
        for covar_type in COV_TYPES:
            X = data[covar_type]
            bgmm = SVIBayesianGaussianMixture(
                weight_concentration_prior_type=prior_type,
                n_components=2 * 2,
                covariance_type=covar_type,
                warm_start=True,
                max_iter=1,
                random_state=rng,
                tol=1e-3 / X.shape[0],
            )
            current_lower_bound = -np.inf
            for _ in range(600):
                prev_lower_bound = current_lower_bound
                current_lower_bound = bgmm.fit(X).lower_bound_
                assert current_lower_bound >= prev_lower_bound
                if bgmm.converged_:
                    break
            assert bgmm.converged_


# --------------------------------------------------------------------------
# the posterior predictive
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ct", COV_TYPES)
def test_predictive_density_against_monte_carlo(ct):
    rng = np.random.RandomState(10)
    K, d = 2, 2
    X = _blobs(rng, n=12, d=d, k=K)  # few samples: the Student-t tails matter
    est = SVIBayesianGaussianMixture(
        n_components=K,
        covariance_type=ct,
        reg_covar=0.0,
        weight_concentration_prior_type="dirichlet_distribution",
    )
    _set_posterior(est, X, rng.dirichlet(np.ones(K), size=X.shape[0]))
    x = np.array([[0.0, 0.0], [3.0, -1.0], [8.0, 8.0]])
    m = est._moments()
    ours = est._student_t_log_density(x, m)
    q = est.natural_params_["components"].distribution
    n_mc = 200_000
    mu_s, lam_s = q.sample(size=n_mc, random_state=0)
    for k in range(K):
        mu, lam = _component_draw(ct, mu_s, lam_s, k)
        logn = _log_normal_draws(ct, x - est._centre, mu, lam)  # q's means are centred
        dens = np.exp(logn)
        mc = dens.mean(axis=0)
        se = dens.std(axis=0) / np.sqrt(n_mc)
        assert np.all(np.abs(mc - np.exp(ours[:, k])) < 5 * se + 1e-300), (
            mc,
            np.exp(ours[:, k]),
            se,
        )


# --------------------------------------------------------------------------
# online and streaming fits reach the batch answer
# --------------------------------------------------------------------------
def _sorted(est):
    order = np.argsort(est.means_[:, 0])
    return est.means_[order], est.weights_[order], est.covariances_[order]


def test_online_fit_and_stream_reach_the_batch_answer():
    rng = np.random.RandomState(11)
    centres = np.array([[-5.0, 0.0], [0.0, 5.0], [5.0, 0.0]])
    labels = rng.choice(3, size=6000, p=[0.5, 0.3, 0.2])
    X = centres[labels] + rng.normal(size=(6000, 2)) * [1.0, 0.5]
    common = {
        "n_components": 3,
        "weight_concentration_prior_type": "dirichlet_distribution",
        "random_state": 0,
    }
    batch = SVIBayesianGaussianMixture(**common).fit(X)
    online = SVIBayesianGaussianMixture(
        learning_method="online",
        batch_size=500,
        max_iter=30,
        tol=0,
        learning_offset=1.0,
        learning_decay=0.6,
        **common,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        online.fit(X)
    stream = SVIBayesianGaussianMixture(
        batch_size=500, total_samples=X.shape[0], learning_offset=1.0, learning_decay=0.6, **common
    )
    for epoch in range(10):
        for chunk in np.array_split(X[rng.permutation(X.shape[0])], 6):
            stream.partial_fit(chunk)
    mb, wb, cb = _sorted(batch)
    # Tolerances: the noise of rho_t-weighted minibatch averages after
    # 30 (online) and 10 (stream) passes of 12 steps.
    for est in (online, stream):
        m, w, c = _sorted(est)
        assert_allclose(m, mb, atol=0.03)
        assert_allclose(w, wb, atol=0.01)
        assert_allclose(c, cb, rtol=0.05, atol=0.01)


def test_stream_with_auto_total_samples_describes_the_rows_seen():
    rng = np.random.RandomState(12)
    X = rng.normal(size=(4000, 2))
    est = SVIBayesianGaussianMixture(n_components=1, batch_size=1000, random_state=0)
    for chunk in np.array_split(X, 8):
        est.partial_fit(chunk)
    # mean_precision_ = beta0 + N_k: the posterior counts the 4000 rows seen.
    assert est.n_samples_seen_ == 4000
    assert est.mean_precision_[0] == pytest.approx(1.0 + 4000, rel=0.02)


# --------------------------------------------------------------------------
# parameters, restarts and bad input
# --------------------------------------------------------------------------
def test_n_init_keeps_the_best_fit():
    rng = np.random.RandomState(13)
    X = _blobs(rng, n=300, d=2, k=5, spread=3.0)
    kw = {"n_components": 5, "init_params": "random", "max_iter": 30, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        single = SVIBayesianGaussianMixture(**kw).fit(X)
        best = SVIBayesianGaussianMixture(n_init=4, **kw).fit(X)
        # The restarts draw from one generator: the first is the single fit.
        rs = np.random.RandomState(0)
        runs = []
        for _ in range(4):
            est = SVIBayesianGaussianMixture(**{**kw, "random_state": rs}).fit(X)
            runs.append(est.lower_bound_)
    assert runs[0] == pytest.approx(single.lower_bound_)
    assert best.lower_bound_ == pytest.approx(max(runs))


def test_warm_start_continues_from_the_previous_fit():
    rng = np.random.RandomState(14)
    X = _blobs(rng, n=300, d=2, k=3)
    kw = {"n_components": 3, "random_state": 0, "tol": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = SVIBayesianGaussianMixture(max_iter=20, **kw).fit(X)
        warm = SVIBayesianGaussianMixture(max_iter=10, warm_start=True, **kw).fit(X)
        warm.fit(X)
    assert_allclose(warm.means_, full.means_, rtol=1e-10)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_rejected(bad):
    X = np.random.RandomState(0).normal(size=(20, 2))
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        SVIBayesianGaussianMixture(n_components=2).fit(X)
    est = SVIBayesianGaussianMixture(n_components=2).fit(
        np.random.RandomState(1).normal(size=(20, 2))
    )
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.partial_fit(X)
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.predict(X)


def test_too_few_samples_and_wrong_feature_count_are_rejected():
    rng = np.random.RandomState(0)
    with pytest.raises(ValueError, match="n_samples >= n_components"):
        SVIBayesianGaussianMixture(n_components=5).fit(rng.normal(size=(4, 2)))
    with pytest.raises(ValueError, match="n_samples >= n_components"):
        SVIBayesianGaussianMixture(n_components=5).partial_fit(rng.normal(size=(4, 2)))
    est = SVIBayesianGaussianMixture(n_components=2).fit(rng.normal(size=(30, 2)))
    for method in (est.partial_fit, est.predict, est.predict_proba, est.score_samples):
        with pytest.raises(ValueError, match="features"):
            method(rng.normal(size=(5, 3)))
    with pytest.raises(ValueError, match="degrees_of_freedom_prior"):
        SVIBayesianGaussianMixture(degrees_of_freedom_prior=0.5).fit(rng.normal(size=(30, 2)))
    with pytest.raises(ValueError, match="positive-definite"):
        SVIBayesianGaussianMixture(covariance_prior=-np.eye(2)).fit(rng.normal(size=(30, 2)))


def test_from_sklearn_continues_as_a_stream():
    # The imported posterior counts as sum_k N_k rows; a stream then adds to it.
    rng = np.random.RandomState(16)
    X = _blobs(rng, n=400, d=2, k=2)
    ref = BayesianGaussianMixture(n_components=2, random_state=0).fit(X[:200])
    est = SVIBayesianGaussianMixture.from_sklearn(ref, batch_size=100)
    assert est.n_samples_seen_ == pytest.approx(200)
    assert est.elbo(X[:200]) == pytest.approx(
        SVIBayesianGaussianMixture.from_sklearn(ref).elbo(X[:200])
    )
    est.partial_fit(X[200:])
    assert est.n_samples_seen_ == pytest.approx(400)
    # beta_k = beta0 + N_k: the posterior now counts the 400 rows.
    assert est.mean_precision_.sum() - 2 * ref.mean_precision_prior_ == pytest.approx(400, rel=0.02)


# --------------------------------------------------------------------------
# sample_weight: a sample of weight w is the sample repeated w times
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ct", ["full", "diag"])
def test_weighted_batch_fit_equals_the_rows_repeated_by_weight(ct):
    rng = np.random.RandomState(21)
    X = _blobs(rng, n=120, d=2, k=3)
    w = rng.randint(0, 4, size=X.shape[0])
    # A given start (a warm start from one posterior), so that no k-means
    # draw can differ; tol=0, so that both make the same 25 passes.
    start = SVIBayesianGaussianMixture(
        n_components=4, covariance_type=ct, max_iter=1, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start.fit(X)
        start.set_params(warm_start=True, max_iter=25, tol=0.0)
        weighted = copy.deepcopy(start).fit(X, sample_weight=w)
        repeated = copy.deepcopy(start).fit(np.repeat(X, w, axis=0))
    for name in ("weights_", "means_", "covariances_", "mean_prior_", "covariance_prior_"):
        assert_allclose(getattr(weighted, name), getattr(repeated, name), rtol=1e-8, err_msg=name)
    assert weighted.lower_bound_ == pytest.approx(repeated.lower_bound_, rel=1e-8)
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    assert weighted.n_iter_ == repeated.n_iter_ == 25


def test_weighted_stream_and_online_fit_count_the_weight_sum():
    rng = np.random.RandomState(22)
    X = rng.normal(size=(3000, 2))
    w = rng.uniform(0.0, 3.0, size=X.shape[0])
    w[::10] = 0.0
    stream = SVIBayesianGaussianMixture(n_components=1, batch_size=500, random_state=0)
    for rows in np.array_split(np.arange(X.shape[0]), 6):
        stream.partial_fit(X[rows], sample_weight=w[rows])
    assert stream.n_samples_seen_ == pytest.approx(w.sum(), rel=1e-12)
    # total_samples='auto': beta = beta0 + N_k, N_k the weight sum seen.
    assert stream.mean_precision_[0] == pytest.approx(1.0 + w.sum(), rel=0.02)
    online = SVIBayesianGaussianMixture(
        n_components=1, learning_method="online", batch_size=500, max_iter=3, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        online.fit(X, sample_weight=w)
    assert online.n_samples_seen_ == pytest.approx(w.sum(), rel=1e-12)
    assert online.mean_precision_[0] == pytest.approx(1.0 + w.sum(), rel=0.02)


def test_zero_weight_samples_are_ignored():
    rng = np.random.RandomState(23)
    X = _blobs(rng, n=600, d=2, k=2)
    w = rng.randint(0, 3, size=X.shape[0]).astype(float)
    keep = w > 0
    kw = {"n_components": 2, "batch_size": 100, "random_state": 0}
    a = SVIBayesianGaussianMixture(**kw).partial_fit(X, sample_weight=w)
    b = SVIBayesianGaussianMixture(**kw).partial_fit(X[keep], sample_weight=w[keep])
    assert_allclose(a.means_, b.means_, rtol=1e-12)
    assert a.lower_bounds_ == pytest.approx(b.lower_bounds_, rel=1e-12)
    # fit_predict labels every sample, those of weight 0 too.
    labels = SVIBayesianGaussianMixture(n_components=2, random_state=0).fit_predict(
        X, sample_weight=w
    )
    assert labels.shape == (X.shape[0],)


def test_weighted_online_start_draws_its_subsample_by_weight(monkeypatch):
    # Rows at -5 of weight 9 and at +5 of weight 1: the weighted mean is -4
    # (a uniform subsample of the rows would put the start near 0).
    rng = np.random.RandomState(24)
    X = np.concatenate([rng.normal(-5.0, 1.0, (1000, 1)), rng.normal(5.0, 1.0, (1000, 1))])
    w = np.repeat([9.0, 1.0], 1000)
    monkeypatch.setattr(mixture_start, "init_rows", lambda n_components, n_features: 200)
    est = SVIBayesianGaussianMixture(n_components=1)
    est.n_features_in_ = 1
    data = Rows(X, None, w)
    natural = est._initialize_globals(data, np.random.RandomState(0), est._data_summary(data))
    q = NormalWishart.from_natural(*natural["components"])
    # The start counts for the weight sum, its mean is the weighted one
    # (to 3 standard errors of 200 draws).
    assert q.beta[0, 0] - est.mean_precision_prior_ == pytest.approx(w.sum(), rel=1e-12)
    assert q.loc[0, 0, 0] + est._centre[0] == pytest.approx(-4.0, abs=0.7)  # centred means


def test_sample_weight_is_a_keyword_of_fit_and_partial_fit_only():
    X = np.random.RandomState(0).normal(size=(20, 2))
    est = SVIBayesianGaussianMixture(n_components=2)
    with pytest.raises(TypeError):
        est.partial_fit(X, sample_weights=np.ones(20))
    with pytest.raises(TypeError):
        est.fit(X, weight=np.ones(20))


def test_bad_sample_weight_is_rejected():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, 2))
    est = SVIBayesianGaussianMixture(n_components=2)
    bad_nan = np.ones(20)
    bad_nan[3] = np.nan
    for bad, match in [
        (-np.ones(20), "Negative"),
        (np.ones(19), "shape"),
        (np.zeros(20), "zero"),
        (bad_nan, "NaN"),
    ]:
        with pytest.raises(ValueError, match=match):
            est.fit(X, sample_weight=bad)
        with pytest.raises(ValueError, match=match):
            SVIBayesianGaussianMixture(n_components=2).partial_fit(X, sample_weight=bad)
    # Fewer samples of positive weight than components.
    one = np.zeros(20)
    one[0] = 5.0
    with pytest.raises(ValueError, match="n_samples >= n_components"):
        est.fit(X, sample_weight=one)
    # Weights count samples: a weight sum below 1 is less than one sample,
    # whose covariance (the default covariance_prior) is undefined.
    with pytest.raises(ValueError, match="covariance_prior"):
        est.fit(X, sample_weight=np.full(20, 0.04))
    est.set_params(covariance_prior=np.eye(2)).fit(X, sample_weight=np.full(20, 0.04))
    assert est.n_samples_seen_ == pytest.approx(0.8)


def test_online_fit_of_many_rows_stops_within_its_first_pass_at_the_batch_answer():
    # 150,000 rows: the online rule's checks come every 8,533 rows (256 / 0.03),
    # eight of them before the pass ends, and the globals stop moving well
    # before; the held-out score is scikit-learn's converged batch fit's.
    rng = np.random.RandomState(3)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])

    def draw(n):
        labels = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
        return centres[labels] + rng.normal(size=(n, 2))

    X, X_test = draw(150_000), draw(20_000)
    est = SVIBayesianGaussianMixture(n_components=3, learning_method="online", random_state=0).fit(
        X
    )
    ref = BayesianGaussianMixture(n_components=3, max_iter=500, random_state=0).fit(X)
    assert est.converged_ and est.n_iter_ == 1
    assert est.history_["samples"][-1] < X.shape[0]
    assert est.score(X_test) == pytest.approx(ref.score(X_test), rel=1e-3)


def test_a_fit_stops_within_its_first_pass_only_after_every_row_took_a_step(monkeypatch):
    # As if every check found no improvement: the mixture stops at the first
    # check within its first pass; matrix factorization, whose users and items
    # have their own factors, first gives every one of them a step (an item
    # rated once, in the pass's last minibatch, holds the stop to the end).
    from skvi import SVIMatrixFactorization
    from skvi.engine import convergence

    def no_improvement(self):
        self.stale = convergence.WINDOW
        return True

    monkeypatch.setattr(convergence.Convergence, "check", no_improvement)
    rng = np.random.RandomState(4)
    n = 40_000
    mixture = SVIBayesianGaussianMixture(
        n_components=2, learning_method="online", random_state=0
    ).fit(rng.normal(size=(n, 2)))
    assert mixture.history_["samples"][-1] < n
    pairs = np.c_[rng.randint(300, size=n), rng.randint(200, size=n)]
    mf = SVIMatrixFactorization(n_components=2, learning_method="online", random_state=0)
    mf.fit(pairs, rng.normal(size=n))
    assert mf.n_iter_ == 1 and mf.history_["samples"][-1] < n
    groups = mf._svi.rows.values()
    assert all(np.all(g.steps[g.totals > 0] > 0) for g in groups)
    # Ten items rated once each: the fit does not stop before all ten
    # ratings' minibatches (a stop at the first check, at 9,000 of the 40,000
    # rows as above, would have seen all ten with probability 0.225 ** 10).
    pairs[:, 1] = np.where(pairs[:, 1] >= 190, 0, pairs[:, 1])
    pairs[rng.choice(n, 10, replace=False), 1] = np.arange(190, 200)
    mf = SVIMatrixFactorization(n_components=2, learning_method="online", random_state=0)
    mf.fit(pairs, rng.normal(size=n))
    assert np.all(mf._svi.rows["items"].steps[190:] > 0)
