"""GaussianGammaVB against closed forms, quadrature and scikit-learn."""

import pickle
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skvi import GaussianGammaVB
from skvi.datasets import load_newcomb
from skvi.schedules import RobbinsMonro

PRIORS = dict(
    mean_prior=1.0,
    mean_precision_prior=0.5,
    precision_shape_prior=2.0,
    precision_rate_prior=3.0,
)


def exact_posterior(x, m0, b0, a0, c0, n_grid=801):
    """Moments and log evidence of p(mu, gamma | x) by 2-D grid quadrature.

    The grid is uniform in (mu, log gamma), wide enough (12 posterior
    standard deviations) that the truncated mass is negligible.
    """
    n = x.size
    xbar, s = x.mean(), x.std()
    mu = np.linspace(xbar - 12 * s / np.sqrt(n), xbar + 12 * s / np.sqrt(n), n_grid)
    lg = np.linspace(
        -2 * np.log(s) - 12 / np.sqrt(n / 2), -2 * np.log(s) + 12 / np.sqrt(n / 2), n_grid
    )
    M, LG = np.meshgrid(mu, lg, indexing="ij")
    G = np.exp(LG)
    ss = n * (xbar - M) ** 2 + ((x - xbar) ** 2).sum()
    logp = (
        stats.norm.logpdf(M, m0, 1 / np.sqrt(b0))
        + stats.gamma.logpdf(G, a0, scale=1 / c0)
        + LG  # Jacobian of gamma = exp(log gamma)
        + 0.5 * n * (LG - np.log(2 * np.pi))
        - 0.5 * G * ss
    )
    w = np.exp(logp - logp.max())
    Z = w.sum()
    e_mu = (w * M).sum() / Z
    var_mu = (w * M**2).sum() / Z - e_mu**2
    e_gamma = (w * G).sum() / Z
    log_evidence = np.log(Z * (mu[1] - mu[0]) * (lg[1] - lg[0])) + logp.max()
    return e_mu, var_mu, e_gamma, log_evidence


def elbo_by_quadrature(vb, x, m0, b0, a0, c0):
    """ELBO of vb's q(mu) q(gamma) by Gauss-Hermite x Gauss-Laguerre quadrature."""
    m, b = vb.mean_[0], vb.mean_precision_[0]
    a, c = vb.precision_shape_[0], vb.precision_rate_[0]
    t, wt = np.polynomial.hermite_e.hermegauss(60)
    mu = m + t / np.sqrt(b)
    w_mu = wt / wt.sum()
    # generalised Gauss-Laguerre: int u^(a-1) e^-u f(u) du with gamma = u / c
    from scipy.special import roots_genlaguerre, gammaln

    u, wu = roots_genlaguerre(80, a - 1)
    g = u / c
    w_g = np.exp(np.log(wu) - gammaln(a))
    M, G = np.meshgrid(mu, g, indexing="ij")
    W = np.outer(w_mu, w_g)
    loglik = stats.norm.logpdf(x[None, None, :], M[..., None], 1 / np.sqrt(G[..., None])).sum(-1)
    integrand = (
        loglik
        + stats.norm.logpdf(M, m0, 1 / np.sqrt(b0))
        + stats.gamma.logpdf(G, a0, scale=1 / c0)
        - stats.norm.logpdf(M, m, 1 / np.sqrt(b))
        - stats.gamma.logpdf(G, a, scale=1 / c)
    )
    return float((W * integrand).sum())


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    return rng.normal(3.0, 2.0, size=(50, 1))


def test_batch_elbo_never_decreases():
    rng = np.random.RandomState(3)
    X = rng.normal([0.0, 100.0, -5.0], [1.0, 0.1, 10.0], size=(200, 3))
    # Start far from the optimum: a vague prior makes the first steps large.
    vb = GaussianGammaVB(mean_precision_prior=1e-6, tol=1e-15, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vb.fit(X)
    bounds = np.array(vb.lower_bounds_)
    assert len(bounds) > 3
    assert np.all(np.diff(bounds) >= -1e-10 * np.abs(bounds[1:]))


def test_posterior_matches_quadrature_of_exact_posterior():
    # The mean-field family drops the correlation between mu and gamma, so
    # the marginal means are right to O(1/n) (here: within 5% of a posterior
    # standard deviation for E[mu], 0.1% for E[gamma] at n = 50) while the
    # variance of mu is under-estimated by about 2/n.  The ELBO is a lower
    # bound on the log evidence, with a gap that shrinks like 1/(2n).
    for n, tol_mu, tol_gamma, tol_var, tol_gap in [
        (50, 0.05, 1e-3, 0.1, 0.05),
        (500, 0.005, 1e-5, 0.01, 0.005),
    ]:
        x = np.random.RandomState(n).normal(3.0, 2.0, size=n)
        vb = GaussianGammaVB(**PRIORS, tol=1e-14, max_iter=500).fit(x[:, None])
        e_mu, var_mu, e_gamma, log_evidence = exact_posterior(x, 1.0, 0.5, 2.0, 3.0)
        assert abs(vb.mean_[0] - e_mu) < tol_mu * np.sqrt(var_mu)
        vb_gamma = vb.precision_shape_[0] / vb.precision_rate_[0]
        assert abs(vb_gamma / e_gamma - 1) < tol_gamma
        vb_var = 1.0 / vb.mean_precision_[0]
        assert vb_var <= var_mu and vb_var / var_mu > 1 - tol_var
        gap = log_evidence - vb.lower_bound_
        assert 0 < gap < tol_gap


def test_lower_bound_equals_elbo_by_quadrature(data):
    x = data[:, 0]
    vb = GaussianGammaVB(**PRIORS, tol=1e-12).fit(data)
    expected = elbo_by_quadrature(vb, x, 1.0, 0.5, 2.0, 3.0)
    assert vb.lower_bound_ == pytest.approx(expected, rel=1e-9)


def test_one_step_with_rho_one_is_coordinate_ascent(data):
    x = data[:, 0]
    n = x.size
    m0, b0, a0, c0 = 1.0, 0.5, 2.0, 3.0
    vb = GaussianGammaVB(**PRIORS, learning_rate=1.0, total_samples=n)
    vb.partial_fit(data)
    # VMP by hand (Langseth and Nielsen's Normal-Gamma example) from
    # q = prior: update gamma with the prior's moments of mu, then mu with
    # the new E[gamma] (GaussianGammaVB updates the precision first).
    a = a0 + n / 2
    c = c0 + 0.5 * np.sum(x**2 - 2 * x * m0 + m0**2 + 1 / b0)
    e_gamma = a / c
    b = b0 + n * e_gamma
    m = (b0 * m0 + e_gamma * x.sum()) / b
    np.testing.assert_allclose(
        [vb.mean_[0], vb.mean_precision_[0], vb.precision_shape_[0], vb.precision_rate_[0]],
        [m, b, a, c],
        rtol=1e-12,
    )
    # ... and equals one batch iteration from the same start.
    batch = GaussianGammaVB(**PRIORS, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        batch.fit(data)
    np.testing.assert_allclose(batch.mean_, vb.mean_, rtol=1e-12)
    np.testing.assert_allclose(batch.precision_rate_, vb.precision_rate_, rtol=1e-12)


def test_joint_update_order_uses_one_snapshot(data):
    x = data[:, 0]
    n = x.size
    m0, b0, a0, c0 = 1.0, 0.5, 2.0, 3.0
    vb = GaussianGammaVB(**PRIORS, learning_rate=1.0, total_samples=n, update_order="joint")
    vb.partial_fit(data)
    # Both targets from the prior snapshot: gamma sees q(mu) = prior.
    b = b0 + n * a0 / c0
    c = c0 + 0.5 * np.sum(x**2 - 2 * x * m0 + m0**2 + 1 / b0)
    assert vb.mean_precision_[0] == pytest.approx(b, rel=1e-12)
    assert vb.precision_rate_[0] == pytest.approx(c, rel=1e-12)
    # Iterated, the joint (Jacobi) updates reach the same fixed point.  The
    # ELBO is quadratic at the optimum, so stopping at a relative ELBO change
    # of 1e-14 pins the parameters to about sqrt(1e-14) = 1e-7.
    seq = GaussianGammaVB(**PRIORS, tol=1e-14, max_iter=500).fit(data)
    joint = GaussianGammaVB(**PRIORS, tol=1e-14, max_iter=500, update_order="joint").fit(data)
    np.testing.assert_allclose(joint.mean_, seq.mean_, rtol=1e-6)
    np.testing.assert_allclose(joint.precision_rate_, seq.precision_rate_, rtol=1e-6)
    assert joint.lower_bound_ == pytest.approx(seq.lower_bound_, rel=1e-12)


def test_svi_converges_to_batch_fixed_point():
    rng = np.random.RandomState(1)
    X = rng.normal([2.0, -1.0], [1.0, 3.0], size=(2000, 2))
    batch = GaussianGammaVB(**PRIORS, tol=1e-14, max_iter=500).fit(X)
    svi = GaussianGammaVB(
        **PRIORS,
        learning_method="online",
        batch_size=100,
        max_iter=30,
        tol=0.0,
        learning_rate=RobbinsMonro(offset=1.0, decay=0.9),
        random_state=0,
    ).fit(X)
    sd_mu = 1 / np.sqrt(batch.mean_precision_)
    assert np.all(np.abs(svi.mean_ - batch.mean_) < 0.05 * sd_mu)
    e_gamma_batch = batch.precision_shape_ / batch.precision_rate_
    e_gamma_svi = svi.precision_shape_ / svi.precision_rate_
    np.testing.assert_allclose(e_gamma_svi, e_gamma_batch, rtol=2e-3)
    # The shape's target is the same every step; what remains of the prior
    # after 600 steps is prod(1 - rho_t), about 1e-4.
    np.testing.assert_allclose(svi.precision_shape_, batch.precision_shape_, rtol=1e-3)
    # The exact ELBO of the SVI posterior on all the rows (an online fit
    # reports its estimate on a sample of them).
    params = svi.natural_params_
    rows = svi._prepare_data(X, None, None, reset=False)
    exact = svi._global_bound(params) + svi._local_bound(rows, None, params)
    assert exact == pytest.approx(batch.lower_bound_, rel=1e-5)
    assert svi.n_iter_ == 30 and svi.n_batch_iter_ == 30 * 20


def test_streaming_partial_fit_auto_total_samples_ends_near_batch():
    rng = np.random.RandomState(0)
    X = rng.normal([2.0, -1.0], [1.0, 3.0], size=(5000, 2))
    batch = GaussianGammaVB(**PRIORS, tol=1e-14, max_iter=500).fit(X)
    stream = GaussianGammaVB(**PRIORS, total_samples="auto")
    for start in range(0, X.shape[0], 50):
        stream.partial_fit(X[start : start + 50])
    assert stream.n_samples_seen_ == 5000 and stream.n_batch_iter_ == 100
    # 'auto' means N = rows seen so far, so the shape's target at step t is
    # a0 + 50 t / 2, and before each step the data part of the shape grows
    # with the count (t - 1 -> t minibatches); the shape follows this
    # recursion exactly:
    shape = 2.0
    for t in range(1, 101):
        rho = (t + 10.0) ** -0.7
        grown = 2.0 + (shape - 2.0) * (t / (t - 1) if t > 1 else 1.0)
        shape = (1 - rho) * grown + rho * (2.0 + 50 * t / 2)
    np.testing.assert_allclose(stream.precision_shape_, shape, rtol=1e-12)
    # The data part describes all the rows seen: after one pass the
    # effective N is the batch's, up to the prior start's weight
    # prod(1 - rho_t) (~1e-3 here); the means carry SVI noise from the last
    # ~1/rho minibatches: within a few posterior standard deviations,
    # E[gamma] within 5%.
    assert 0.998 < shape / batch.precision_shape_[0] <= 1.0
    sd_mu = 1 / np.sqrt(batch.mean_precision_)
    assert np.all(np.abs(stream.mean_ - batch.mean_) < 3 * sd_mu)
    e_gamma = lambda m: m.precision_shape_ / m.precision_rate_  # noqa: E731
    np.testing.assert_allclose(e_gamma(stream), e_gamma(batch), rtol=0.05)


def test_fixed_total_samples_scales_minibatch():
    # One step with rho = 1 on a minibatch with total_samples = N is the VMP
    # update for N copies of the minibatch's average statistics.
    rng = np.random.RandomState(4)
    X = rng.normal(1.0, 2.0, size=(40, 1))
    vb = GaussianGammaVB(**PRIORS, learning_rate=1.0, total_samples=400).partial_fit(X)
    tiled = GaussianGammaVB(**PRIORS, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tiled.fit(np.tile(X, (10, 1)))
    np.testing.assert_allclose(vb.mean_, tiled.mean_, rtol=1e-10)
    np.testing.assert_allclose(vb.precision_rate_, tiled.precision_rate_, rtol=1e-10)


def test_large_offset_data_does_not_lose_precision():
    # sum((x - mu)^2) computed naively from sum(x^2) would cancel here.
    rng = np.random.RandomState(5)
    x = 1e8 + rng.normal(0.0, 1.0, size=10000)
    vb = GaussianGammaVB(mean_prior=1e8, tol=1e-14).fit(x[:, None])
    e_gamma = vb.precision_shape_[0] / vb.precision_rate_[0]
    assert e_gamma == pytest.approx(1.0 / np.var(x), rel=1e-3)


def test_transform_matches_standard_scaler_for_large_n():
    rng = np.random.RandomState(6)
    X = rng.normal([5.0, -3.0], [2.0, 0.5], size=(20000, 2))
    vb = GaussianGammaVB().fit(X)
    np.testing.assert_allclose(vb.transform(X), StandardScaler().fit_transform(X), atol=2e-3)
    np.testing.assert_allclose(vb.inverse_transform(vb.transform(X)), X, rtol=1e-12)
    X32 = X.astype(np.float32)
    assert vb.transform(X32).dtype == np.float32


def test_score_samples_is_expected_log_likelihood_by_monte_carlo(data):
    vb = GaussianGammaVB(**PRIORS).fit(data)
    rng = np.random.RandomState(7)
    mu = rng.normal(vb.mean_[0], 1 / np.sqrt(vb.mean_precision_[0]), size=400000)
    g = rng.gamma(vb.precision_shape_[0], 1 / vb.precision_rate_[0], size=400000)
    x_new = np.array([[-1.0], [3.0], [8.0]])
    mc = stats.norm.logpdf(x_new, mu[None, :], 1 / np.sqrt(g[None, :]))
    se = mc.std(axis=1) / np.sqrt(mc.shape[1])
    assert np.all(np.abs(vb.score_samples(x_new) - mc.mean(axis=1)) < 5 * se)
    assert vb.score(x_new) == pytest.approx(vb.score_samples(x_new).mean())
    # Jensen: below the log posterior predictive density.
    log_pred = np.log(np.mean(np.exp(mc), axis=1))
    assert np.all(vb.score_samples(x_new) < log_pred)


def test_random_state_reproducible():
    X = np.random.RandomState(8).normal(size=(300, 2))
    kw = dict(learning_method="online", batch_size=32, max_iter=3, tol=0.0)
    a = GaussianGammaVB(**kw, random_state=0).fit(X)
    b = GaussianGammaVB(**kw, random_state=0).fit(X)
    c = GaussianGammaVB(**kw, random_state=1).fit(X)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    assert a.lower_bounds_ == b.lower_bounds_
    assert not np.array_equal(a.mean_, c.mean_)


def test_newcomb_quickstart_posterior():
    X = load_newcomb(return_X_y=True)
    vb = GaussianGammaVB(tol=1e-12).fit(X)
    x = X[:, 0]
    # With vague priors the posterior mean is the sample mean, shrunk by the
    # prior precision 1e-3 against the data's n E[gamma].
    e_gamma = vb.precision_shape_[0] / vb.precision_rate_[0]
    expected_mean = e_gamma * x.sum() / (1e-3 + x.size * e_gamma)
    assert vb.mean_[0] == pytest.approx(expected_mean, rel=1e-10)
    assert 1 / np.sqrt(e_gamma) == pytest.approx(x.std(), rel=0.02)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.0], [np.nan]]), "NaN"),
        (np.array([[1.0], [np.inf]]), "infinity"),
        (np.array([1.0, 2.0, 3.0]), "2D array"),
    ],
)
def test_bad_input_raises(X, match):
    with pytest.raises(ValueError, match=match):
        GaussianGammaVB().fit(X)
    with pytest.raises(ValueError, match=match):
        GaussianGammaVB().partial_fit(X)


def test_partial_fit_wrong_number_of_features():
    vb = GaussianGammaVB().partial_fit(np.ones((5, 2)) + np.arange(5)[:, None])
    with pytest.raises(ValueError, match="features"):
        vb.partial_fit(np.ones((5, 3)))


@pytest.mark.parametrize(
    "params",
    [
        {"mean_precision_prior": 0.0},
        {"precision_shape_prior": -1.0},
        {"precision_rate_prior": 0.0},
        {"precision_rate_prior": [1.0, -1.0]},
        {"mean_prior": [0.0, 1.0, 2.0]},
        {"mean_prior": np.nan},
        {"learning_decay": 1.5},
        {"learning_method": "stochastic"},
        {"total_samples": 0},
        {"update_order": "random"},
    ],
)
def test_bad_parameters_raise(params):
    X = np.random.RandomState(0).normal(size=(10, 2))
    with pytest.raises(ValueError):
        GaussianGammaVB(**params).fit(X)


def test_per_feature_priors_match_separate_fits():
    rng = np.random.RandomState(9)
    X = rng.normal([0.0, 10.0], [1.0, 2.0], size=(30, 2))
    # The same number of coordinate-ascent sweeps for all (tol=0): each
    # feature's sweeps are independent, so the fits agree to rounding.
    joint = GaussianGammaVB(
        mean_prior=[0.0, 10.0], precision_rate_prior=[1.0, 4.0], tol=0, max_iter=50
    ).fit(X)
    for j, (m0, c0) in enumerate([(0.0, 1.0), (10.0, 4.0)]):
        single = GaussianGammaVB(mean_prior=m0, precision_rate_prior=c0, tol=0, max_iter=50).fit(
            X[:, [j]]
        )
        assert joint.mean_[j] == pytest.approx(single.mean_[0], rel=1e-10)
        assert joint.precision_rate_[j] == pytest.approx(single.precision_rate_[0], rel=1e-10)


def test_pickle_clone_pipeline(data):
    vb = GaussianGammaVB(**PRIORS).fit(data)
    restored = pickle.loads(pickle.dumps(vb))
    np.testing.assert_array_equal(restored.transform(data), vb.transform(data))
    assert clone(vb).get_params() == vb.get_params()
    pipe = make_pipeline(GaussianGammaVB(**PRIORS), StandardScaler()).fit(data)
    # After the VB standardisation the scaler sees mean ~0 and sd ~1.
    scaler = pipe[-1]
    assert abs(scaler.mean_[0]) < 0.05 and abs(scaler.scale_[0] - 1) < 0.05


@pytest.mark.parametrize("learning_method", ["batch", "online"])
def test_weight_two_equals_the_row_twice(learning_method):
    rng = np.random.RandomState(5)
    X = rng.normal(3.0, 2.0, size=(60, 2))
    weight = rng.randint(0, 3, size=60)
    repeated = np.repeat(X, weight, axis=0)
    # One minibatch per step (batch_size above both sizes), so that the
    # online steps see the same rows; the weighted and repeated fits then
    # take the same steps.
    common = dict(
        learning_method=learning_method, batch_size=1000, max_iter=5, tol=0, random_state=0
    )
    a = GaussianGammaVB(**common).fit(X, sample_weight=weight)
    b = GaussianGammaVB(**common).fit(repeated)
    for name in ("mean_", "mean_precision_", "precision_shape_", "precision_rate_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10)
    np.testing.assert_allclose(a.lower_bounds_, b.lower_bounds_, rtol=1e-10)
    stream = GaussianGammaVB(total_samples="auto").partial_fit(X, sample_weight=weight)
    assert stream.n_samples_seen_ == weight.sum()
    with pytest.raises(TypeError):
        GaussianGammaVB().partial_fit(X, weights=weight)
