"""Tests of skvi.expfam against independent references.

References are scipy.stats (moments, entropies, log densities), Monte Carlo
estimates from scipy/numpy samplers (E[log x], KL divergences), central
finite differences of the log-normaliser (expected sufficient statistics) and
scipy.integrate.quad (quadrature rules).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, special, stats

from skvi.expfam import (
    Dirichlet,
    ExponentialFamily,
    Gamma,
    MultivariateGaussian,
    NormalGamma,
    NormalWishart,
    Rayleigh,
    UnivariateGaussian,
    WishartByScale,
)

N_MC = 200_000
N_SE = 5.0


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def assert_mc_close(values, expected, n_se=N_SE):
    """Assert the mean over axis 0 of ``values`` is within ``n_se`` standard
    errors (estimated from the values themselves) of ``expected``."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    est = values.mean(axis=0)
    se = values.std(axis=0, ddof=1) / np.sqrt(n)
    err = np.abs(est - np.asarray(expected))
    assert np.all(err <= n_se * se), (est, expected, se)


def random_spd(rng, batch, d):
    a = rng.standard_normal(batch + (d, d))
    return a @ np.swapaxes(a, -1, -2) + d * np.eye(d)


def random_gaussian(rng, batch=(3, 4)):
    return UnivariateGaussian(rng.normal(0.0, 2.0, batch), rng.uniform(0.3, 3.0, batch))


def random_mvn(rng, batch=(3,), d=3):
    return MultivariateGaussian(rng.normal(0.0, 1.0, batch + (d,)), random_spd(rng, batch, d))


def random_gamma(rng, batch=(3, 4)):
    return Gamma(rng.uniform(0.5, 5.0, batch), rng.uniform(0.3, 3.0, batch))


def random_dirichlet(rng, batch=(3,), k=4):
    return Dirichlet(rng.uniform(0.5, 5.0, batch + (k,)))


def random_wishart(rng, batch=(3,), d=3):
    return WishartByScale(rng.uniform(d - 0.5, d + 6.0, batch), random_spd(rng, batch, d) / d)


def random_normal_wishart(rng, batch=(3,), n_means=2, d=3):
    return NormalWishart(
        rng.normal(0.0, 1.0, batch + (n_means, d)),
        rng.uniform(0.5, 3.0, batch + (n_means,)),
        rng.uniform(d - 0.5, d + 6.0, batch),
        random_spd(rng, batch, d) / d,
    )


def random_normal_wishart_j1(rng):
    # K independent Normal-Wishart components
    return random_normal_wishart(rng, batch=(4,), n_means=1, d=2)


def random_normal_wishart_shared(rng):
    # K means sharing one precision
    return random_normal_wishart(rng, batch=(), n_means=4, d=2)


def random_normal_gamma(rng, batch=(3, 2), n_means=3, d=2):
    return NormalGamma(
        rng.normal(0.0, 1.0, batch + (n_means, d)),
        rng.uniform(0.5, 3.0, batch + (n_means,)),
        rng.uniform(0.5, 5.0, batch),
        rng.uniform(0.3, 3.0, batch),
    )


def random_normal_gamma_j1(rng):
    # one component per (cluster, feature): a diagonal-covariance mixture
    return random_normal_gamma(rng, batch=(3, 4), n_means=1, d=1)


def random_normal_gamma_spherical(rng):
    # one spherical component per cluster
    return random_normal_gamma(rng, batch=(4,), n_means=1, d=3)


def random_rayleigh(rng, batch=(3, 4)):
    return Rayleigh(rng.uniform(0.3, 3.0, batch))


FACTORIES = {
    "gaussian": random_gaussian,
    "mvn": random_mvn,
    "gamma": random_gamma,
    "dirichlet": random_dirichlet,
    "wishart": random_wishart,
    "normal_wishart": random_normal_wishart,
    "normal_wishart_j1": random_normal_wishart_j1,
    "normal_wishart_shared": random_normal_wishart_shared,
    "normal_gamma": random_normal_gamma,
    "normal_gamma_j1": random_normal_gamma_j1,
    "normal_gamma_spherical": random_normal_gamma_spherical,
    "rayleigh": random_rayleigh,
}

# families whose base measure h(x) is not 1: the generic entropy identity
# A(eta) - <eta, E[t]> does not hold for them
BASE_MEASURE_NOT_ONE = {"rayleigh"}

# (class, factory) pairs of the generic parametrized tests
CLASS_FAMILIES = [
    (UnivariateGaussian, "gaussian"),
    (MultivariateGaussian, "mvn"),
    (Gamma, "gamma"),
    (Dirichlet, "dirichlet"),
    (WishartByScale, "wishart"),
    (NormalWishart, "normal_wishart"),
    (NormalWishart, "normal_wishart_j1"),
    (NormalWishart, "normal_wishart_shared"),
    (NormalGamma, "normal_gamma"),
    (NormalGamma, "normal_gamma_j1"),
    (NormalGamma, "normal_gamma_spherical"),
    (Rayleigh, "rayleigh"),
]

# natural parameters that are symmetric matrices, per class
SYMMETRIC_NATURAL = {MultivariateGaussian: {1}, WishartByScale: {0}, NormalWishart: {1}}


def params_of(q):
    """Standard parameters of a factor, as a tuple of arrays."""
    if isinstance(q, NormalWishart):
        return (q.loc, q.beta, q.df, q.scale)
    if isinstance(q, NormalGamma):
        return (q.loc, q.beta, q.shape, q.rate)
    if isinstance(q, (UnivariateGaussian, MultivariateGaussian)):
        return (q.loc, q.precision)
    if isinstance(q, Gamma):
        return (q.shape, q.rate)
    if isinstance(q, WishartByScale):
        return (q.df, q.scale)
    if isinstance(q, Rayleigh):
        return (q.scale,)
    return (q.concentration,)


# --------------------------------------------------------------------------
# moments, entropies and log densities against scipy.stats
# --------------------------------------------------------------------------
def test_gaussian_against_scipy():
    rng = np.random.default_rng(0)
    q = random_gaussian(rng)
    ref = stats.norm(q.loc, 1.0 / np.sqrt(q.precision))
    assert q.batch_shape == (3, 4)
    assert_allclose(q.mean(), ref.mean(), rtol=1e-12)
    assert_allclose(q.variance, ref.var(), rtol=1e-12)
    assert_allclose(q.entropy(), ref.entropy(), rtol=1e-12)
    x = rng.normal(0.0, 3.0, (5, 3, 4))
    assert_allclose(q.log_prob(x), ref.logpdf(x), rtol=1e-12)
    # x broadcasting over the batch
    assert_allclose(q.log_prob(0.5), ref.logpdf(0.5), rtol=1e-12)


def test_mvn_against_scipy():
    rng = np.random.default_rng(1)
    q = random_mvn(rng, batch=(4,), d=3)
    x = rng.normal(0.0, 2.0, (5, 4, 3))
    logp = q.log_prob(x)
    assert logp.shape == (5, 4)
    cov = q.covariance
    ent = q.entropy()
    var = q.variance
    for b in range(4):
        ref_cov = np.linalg.inv(q.precision[b])
        ref = stats.multivariate_normal(q.loc[b], ref_cov)
        assert_allclose(q.mean()[b], ref.mean, rtol=1e-12)
        assert_allclose(cov[b], ref_cov, rtol=1e-10, atol=1e-14)
        assert_allclose(var[b], np.diag(ref_cov), rtol=1e-10)
        assert_allclose(ent[b], ref.entropy(), rtol=1e-10)
        assert_allclose(logp[:, b], ref.logpdf(x[:, b]), rtol=1e-10)
    assert_allclose(cov, np.swapaxes(cov, -1, -2), rtol=0, atol=0)


def test_mvn_broadcasting_constructor():
    rng = np.random.default_rng(2)
    prec = random_spd(rng, (5,), 2)
    q = MultivariateGaussian(np.array([1.0, -2.0]), prec)
    assert q.batch_shape == (5,)
    assert q.loc.shape == (5, 2)
    assert_allclose(q.loc, np.tile([1.0, -2.0], (5, 1)))
    assert_allclose(q.precision, prec)
    with pytest.raises(ValueError):
        MultivariateGaussian(np.zeros(3), np.eye(2))


def test_gamma_against_scipy():
    rng = np.random.default_rng(3)
    q = random_gamma(rng)
    ref = stats.gamma(q.shape, scale=1.0 / q.rate)
    assert_allclose(q.mean(), ref.mean(), rtol=1e-12)
    assert_allclose(q.variance, ref.var(), rtol=1e-12)
    assert_allclose(q.entropy(), ref.entropy(), rtol=1e-10)
    x = rng.uniform(0.01, 6.0, (5, 3, 4))
    assert_allclose(q.log_prob(x), ref.logpdf(x), rtol=1e-10)
    # outside the support
    assert_array_equal(q.log_prob(-1.0), ref.logpdf(-1.0))
    assert np.all(q.log_prob(-1.0) == -np.inf)


def test_dirichlet_against_scipy():
    rng = np.random.default_rng(4)
    q = random_dirichlet(rng, batch=(3,), k=4)
    x = np.stack([rng.dirichlet(a, size=5) for a in q.concentration], axis=1)
    logp = q.log_prob(x)
    assert logp.shape == (5, 3)
    mean, var, ent = q.mean(), q.variance, q.entropy()
    for b in range(3):
        ref = stats.dirichlet(q.concentration[b])
        assert_allclose(mean[b], ref.mean(), rtol=1e-12)
        assert_allclose(var[b], ref.var(), rtol=1e-12)
        assert_allclose(ent[b], ref.entropy(), rtol=1e-10)
        assert_allclose(logp[:, b], ref.logpdf(x[:, b].T), rtol=1e-10)


# --------------------------------------------------------------------------
# E[log x] and KL divergences against Monte Carlo
# --------------------------------------------------------------------------
def test_gamma_expected_log_mc():
    rng = np.random.default_rng(5)
    q = random_gamma(rng, batch=(4,))
    x = rng.gamma(q.shape, 1.0 / q.rate, size=(N_MC, 4))
    assert_mc_close(np.log(x), q.expected_log())
    assert_allclose(q.expected_stats()[1], q.expected_log())


def test_dirichlet_expected_log_mc():
    rng = np.random.default_rng(6)
    q = random_dirichlet(rng, batch=(2,), k=3)
    x = np.stack([rng.dirichlet(a, size=N_MC) for a in q.concentration], axis=1)
    assert_mc_close(np.log(x), q.expected_stats()[0])


def test_gaussian_kl_mc():
    rng = np.random.default_rng(7)
    q = random_gaussian(rng, batch=(4,))
    p = UnivariateGaussian(0.3, 0.8)  # scalar prior broadcast against the batch
    sq = 1.0 / np.sqrt(q.precision)
    x = stats.norm.rvs(q.loc, sq, size=(N_MC, 4), random_state=rng)
    llr = stats.norm.logpdf(x, q.loc, sq) - stats.norm.logpdf(x, 0.3, 1.0 / np.sqrt(0.8))
    kl = q.kl(p)
    assert kl.shape == (4,)
    assert_mc_close(llr, kl)


def test_mvn_kl_mc():
    rng = np.random.default_rng(8)
    q = random_mvn(rng, batch=(3,), d=3)
    p = MultivariateGaussian(np.array([0.5, 0.0, -0.5]), 0.5 * np.eye(3))
    kl = q.kl(p)
    assert kl.shape == (3,)
    ref_p = stats.multivariate_normal(p.loc, np.linalg.inv(p.precision))
    for b in range(3):
        ref_q = stats.multivariate_normal(q.loc[b], np.linalg.inv(q.precision[b]))
        x = ref_q.rvs(size=N_MC, random_state=rng)
        assert_mc_close(ref_q.logpdf(x) - ref_p.logpdf(x), kl[b])


def test_gamma_kl_mc():
    rng = np.random.default_rng(9)
    q = random_gamma(rng, batch=(4,))
    p = Gamma(1.5, 0.7)
    x = stats.gamma.rvs(q.shape, scale=1.0 / q.rate, size=(N_MC, 4), random_state=rng)
    llr = stats.gamma.logpdf(x, q.shape, scale=1.0 / q.rate) - stats.gamma.logpdf(
        x, 1.5, scale=1.0 / 0.7
    )
    kl = q.kl(p)
    assert kl.shape == (4,)
    assert_mc_close(llr, kl)


def test_dirichlet_kl_mc():
    rng = np.random.default_rng(10)
    q = random_dirichlet(rng, batch=(3,), k=3)
    alpha_p = np.array([0.8, 1.5, 2.0])
    p = Dirichlet(alpha_p)
    kl = q.kl(p)
    assert kl.shape == (3,)
    for b in range(3):
        a = q.concentration[b]
        x = rng.dirichlet(a, size=N_MC)
        llr = stats.dirichlet.logpdf(x.T, a) - stats.dirichlet.logpdf(x.T, alpha_p)
        assert_mc_close(llr, kl[b])


@pytest.mark.parametrize("family", sorted(set(FACTORIES) - BASE_MEASURE_NOT_ONE))
def test_kl_self_zero_and_nonnegative(family):
    rng = np.random.default_rng(11)
    factory = FACTORIES[family]
    q = factory(rng)
    assert_allclose(q.kl(q), 0.0, atol=1e-12)
    for _ in range(20):
        q, p = factory(rng), factory(rng)
        kl = q.kl(p)
        assert kl.shape == q.batch_shape
        assert np.all(kl >= 0)
        # the closed form agrees with the generic natural-parameter identity
        # KL = <eta_q - eta_p, E_q[t]> - A(eta_q) + A(eta_p)
        assert_allclose(kl, ExponentialFamily.kl(q, p), rtol=1e-8, atol=1e-10)
        # and the closed-form entropy with A(eta) - <eta, E[t]>
        assert_allclose(q.entropy(), ExponentialFamily.entropy(q), rtol=1e-10, atol=1e-12)


def test_kl_type_mismatch():
    with pytest.raises(TypeError):
        UnivariateGaussian(0.0, 1.0).kl(Gamma(1.0, 1.0))


# --------------------------------------------------------------------------
# grad A(eta) = E[t(x)] by central finite differences
# --------------------------------------------------------------------------
def _fd_check(cls, q, h=1e-5, rtol=1e-6, atol=1e-8):
    eta = [np.array(e) for e in q.natural]
    stats_ = q.expected_stats()
    event_ndims = cls._event_ndims
    symmetric = SYMMETRIC_NATURAL.get(cls, set())
    for k, (e, s, nd) in enumerate(zip(eta, stats_, event_ndims)):
        sym = k in symmetric
        event_shape = e.shape[e.ndim - nd :]
        for idx in np.ndindex(*event_shape):
            if sym and idx[0] > idx[1]:
                continue  # symmetric pairs handled together
            direction = np.zeros(event_shape)
            if sym and idx[0] != idx[1]:
                # symmetric perturbation E = (e_ij + e_ji) / 2:
                # <E, E[x x^T]> = E[x_i x_j]
                direction[idx] = 0.5
                direction[idx[::-1]] = 0.5
            else:
                direction[idx] = 1.0
            plus = list(eta)
            minus = list(eta)
            plus[k] = eta[k] + h * direction
            minus[k] = eta[k] - h * direction
            fd = (
                cls.from_natural(*plus).log_normalizer() - cls.from_natural(*minus).log_normalizer()
            ) / (2 * h)
            expected = s[(Ellipsis,) + idx]
            assert_allclose(fd, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("cls,family", CLASS_FAMILIES)
def test_log_normalizer_gradient(cls, family):
    rng = np.random.default_rng(12)
    q = FACTORIES[family](rng)
    _fd_check(cls, q)


# --------------------------------------------------------------------------
# natural parameters
# --------------------------------------------------------------------------
@pytest.mark.parametrize("cls,family", CLASS_FAMILIES)
def test_from_natural_round_trip(cls, family):
    rng = np.random.default_rng(13)
    q = FACTORIES[family](rng)
    eta = q.natural
    assert isinstance(eta, tuple)
    stats_ = q.expected_stats()
    assert len(stats_) == len(eta)
    for e, s in zip(eta, stats_):
        assert e.shape == s.shape
    assert np.all(cls.valid_natural(*eta))
    assert cls.valid_natural(*eta).shape == q.batch_shape
    r = cls.from_natural(*eta)
    assert type(r) is cls
    assert r.batch_shape == q.batch_shape
    for a, b in zip(params_of(r), params_of(q)):
        assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_natural_parameter_values():
    g = UnivariateGaussian([1.0, -2.0], [4.0, 0.5])
    assert_allclose(g.natural[0], [4.0, -1.0])
    assert_allclose(g.natural[1], [-2.0, -0.25])
    m = MultivariateGaussian([1.0, 2.0], [[2.0, 1.0], [1.0, 3.0]])
    assert_allclose(m.natural[0], [4.0, 7.0])
    assert_allclose(m.natural[1], [[-1.0, -0.5], [-0.5, -1.5]])
    assert_allclose(m.expected_stats()[1], np.linalg.inv(m.precision) + np.outer([1, 2], [1, 2]))
    ga = Gamma([2.0, 0.5], [3.0, 1.0])
    assert_allclose(ga.natural[0], [-3.0, -1.0])
    assert_allclose(ga.natural[1], [1.0, -0.5])
    d = Dirichlet([0.5, 2.0, 3.0])
    assert len(d.natural) == 1
    assert_allclose(d.natural[0], [-0.5, 1.0, 2.0])


@pytest.mark.parametrize("cls", [MultivariateGaussian, Gamma])
def test_valid_step_equals_valid_natural(cls):
    # Whatever the step changed, valid_step (given a valid start) says what
    # valid_natural says of the new parameters; MultivariateGaussian skips
    # the factorisation only when eta2 is unchanged.
    rng = np.random.RandomState(0)
    if cls is MultivariateGaussian:
        root = rng.normal(size=(3, 3))
        start = (rng.normal(size=3), -0.5 * (root @ root.T + np.eye(3)))
        steps = [
            (rng.normal(size=3), start[1].copy()),  # eta2 unchanged: valid
            (np.array([1.0, np.nan, 0.0]), start[1]),  # non-finite eta1
            (start[0], start[1] + np.eye(3) * 10.0),  # not negative definite
            (start[0], start[1] - np.eye(3)),  # another valid precision
        ]
    else:
        start = (np.array([1.0, 2.0]), np.array([-1.0, -3.0]))
        steps = [(start[0], np.array([-1.0, 0.5])), (start[0] + 1.0, start[1])]
    for new in steps:
        assert_array_equal(cls.valid_step(start, new), cls.valid_natural(*new))


def test_valid_natural_gaussian():
    nan, inf = np.nan, np.inf
    eta1 = np.array([1.0, -3.0, nan, 1.0, inf, 1.0, 1.0, 1.0, 1.0])
    eta2 = np.array([-0.5, -2.0, -1.0, nan, -1.0, 0.0, 2.0, -inf, -1e-300])
    expected = [True, True, False, False, False, False, False, False, True]
    assert_array_equal(UnivariateGaussian.valid_natural(eta1, eta2), expected)
    # broadcasting, 2-d batch
    out = UnivariateGaussian.valid_natural(0.0, np.array([[-1.0, 1.0], [0.0, -2.0]]))
    assert_array_equal(out, [[True, False], [False, True]])


def test_valid_natural_gamma():
    nan, inf = np.nan, np.inf
    eta1 = np.array([-1.0, -1.0, -1.0, 0.0, 1.0, nan, -inf, -1.0, -1.0, -1.0])
    eta2 = np.array([0.0, -0.5, -1.0, 0.0, 0.0, 0.0, 0.0, inf, nan, -2.0])
    expected = [True, True, False, False, False, False, False, False, False, False]
    assert_array_equal(Gamma.valid_natural(eta1, eta2), expected)


def test_valid_natural_dirichlet():
    nan, inf = np.nan, np.inf
    eta = np.array(
        [
            [0.0, 0.0, 0.0],
            [-0.5, 3.0, 1.0],
            [-1.0, 0.0, 0.0],
            [nan, 0.0, 0.0],
            [0.0, inf, 0.0],
            [0.0, 0.0, -2.0],
        ]
    )
    expected = [True, True, False, False, False, False]
    assert_array_equal(Dirichlet.valid_natural(eta), expected)
    assert Dirichlet.valid_natural(eta).shape == (6,)


def test_valid_natural_mvn():
    nan, inf = np.nan, np.inf
    pd = np.array([[2.0, 0.5], [0.5, 1.0]])
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3, -1
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])  # PSD, not PD
    asym = np.array([[2.0, 0.5], [-0.5, 1.0]])  # PD lower triangle, not symmetric
    neg = -np.eye(2)
    lam = np.stack([pd, not_pd, singular, asym, neg, pd, pd, pd])
    lam[5, 0, 0] = nan
    eta1 = np.zeros((8, 2))
    eta1[6, 1] = inf
    eta1[7, 0] = nan
    valid = MultivariateGaussian.valid_natural(eta1, -0.5 * lam)
    expected = [True, False, False, False, False, False, False, False]
    assert_array_equal(valid, expected)
    # all-valid stack (fast path) and broadcasting of eta1 against eta2
    rng = np.random.default_rng(14)
    good = random_spd(rng, (2, 5), 3)
    out = MultivariateGaussian.valid_natural(np.ones(3), -0.5 * good)
    assert out.shape == (2, 5)
    assert np.all(out)
    # one bad element in a larger stack is located exactly
    good[1, 3] = -good[1, 3]
    out = MultivariateGaussian.valid_natural(np.ones(3), -0.5 * good)
    expected = np.ones((2, 5), dtype=bool)
    expected[1, 3] = False
    assert_array_equal(out, expected)


# --------------------------------------------------------------------------
# validate()
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: UnivariateGaussian([0.0, np.nan], 1.0),
        lambda: UnivariateGaussian(0.0, [1.0, np.inf]),
        lambda: UnivariateGaussian(0.0, [1.0, 0.0]),
        lambda: UnivariateGaussian(0.0, -1.0),
        lambda: MultivariateGaussian([np.nan, 0.0], np.eye(2)),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, np.nan], [np.nan, 1.0]]),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]),
        lambda: MultivariateGaussian(np.zeros((2, 2)), np.stack([np.eye(2), -np.eye(2)])),
        lambda: Gamma([1.0, 0.0], 1.0),
        lambda: Gamma(1.0, [1.0, -2.0]),
        lambda: Gamma(np.nan, 1.0),
        lambda: Gamma(1.0, np.inf),
        lambda: Dirichlet([1.0, 0.0, 2.0]),
        lambda: Dirichlet([[1.0, 1.0], [1.0, -1.0]]),
        lambda: Dirichlet([1.0, np.nan]),
        lambda: Dirichlet([1.0, np.inf]),
        lambda: Rayleigh([1.0, 0.0]),
        lambda: Rayleigh(-1.0),
        lambda: Rayleigh([[1.0], [np.nan]]),
        lambda: Rayleigh(np.inf),
    ],
)
def test_validate_raises(make):
    with pytest.raises(ValueError):
        make().validate()


@pytest.mark.parametrize("family", sorted(FACTORIES))
def test_validate_accepts_valid(family):
    q = FACTORIES[family](np.random.default_rng(15))
    assert q.validate() is q


# --------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------
def _check_sample_moments(x, mean, var):
    """Sample mean within 5 SE of ``mean`` and sample variance within 5 SE of
    ``var`` (SE of the variance from the sample fourth central moment)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    err = np.abs(x.mean(axis=0) - mean)
    assert np.all(err <= N_SE * np.sqrt(var / n)), (x.mean(axis=0), mean)
    sq = (x - x.mean(axis=0)) ** 2
    assert_mc_close(sq * n / (n - 1), var)


def test_gaussian_sample_moments():
    q = random_gaussian(np.random.default_rng(16), batch=(3,))
    x = q.sample(N_MC, random_state=0)
    assert x.shape == (N_MC, 3)
    _check_sample_moments(x, q.mean(), q.variance)


def test_mvn_sample_moments():
    q = random_mvn(np.random.default_rng(17), batch=(2,), d=3)
    x = q.sample(N_MC, random_state=1)
    assert x.shape == (N_MC, 2, 3)
    _check_sample_moments(x, q.mean(), q.variance)
    c = x - q.loc
    prod = c[..., :, None] * c[..., None, :]
    assert_mc_close(prod, q.covariance)


def test_gamma_sample_moments():
    q = Gamma([0.3, 1.0, 4.0], [2.0, 0.5, 1.0])
    x = q.sample(N_MC, random_state=2)
    assert x.shape == (N_MC, 3)
    _check_sample_moments(x, q.mean(), q.variance)
    assert_mc_close(np.log(x), q.expected_log())


def test_dirichlet_sample_moments():
    q = Dirichlet([[0.05, 0.5, 2.0], [3.0, 1.0, 4.0]])
    x = q.sample(N_MC, random_state=3)
    assert x.shape == (N_MC, 2, 3)
    assert np.all(np.isfinite(x))
    assert_allclose(x.sum(axis=-1), 1.0, rtol=1e-12)
    _check_sample_moments(x, q.mean(), q.variance)


def _parts(x):
    """Samples and means of the joint families are tuples; others single arrays."""
    return x if isinstance(x, tuple) else (x,)


def _assert_samples_equal(a, b):
    a, b = _parts(a), _parts(b)
    assert len(a) == len(b)
    for ai, bi in zip(a, b):
        assert_array_equal(ai, bi)


def _assert_samples_differ(a, b):
    for ai, bi in zip(_parts(a), _parts(b)):
        assert not np.array_equal(ai, bi)


@pytest.mark.parametrize("family", sorted(FACTORIES))
def test_sample_shapes_and_reproducibility(family):
    q = FACTORIES[family](np.random.default_rng(18))
    nb = len(q.batch_shape)
    events = [m.shape[nb:] for m in _parts(q.mean())]
    for size, lead in ((None, ()), (4, (4,)), ((2, 5), (2, 5))):
        draws = _parts(q.sample(size))
        assert len(draws) == len(events)
        for x, event in zip(draws, events):
            assert x.shape == lead + q.batch_shape + event
            assert x.dtype == q.dtype
    _assert_samples_equal(q.sample(7, random_state=42), q.sample(7, random_state=42))
    _assert_samples_equal(
        q.sample(7, random_state=42),
        q.sample(7, random_state=np.random.RandomState(42)),
    )
    _assert_samples_equal(
        q.sample(7, random_state=np.random.default_rng(5)),
        q.sample(7, random_state=np.random.default_rng(5)),
    )
    _assert_samples_differ(q.sample(7, random_state=1), q.sample(7, random_state=2))
    # a shared RandomState advances
    rs = np.random.RandomState(0)
    _assert_samples_differ(q.sample(3, random_state=rs), q.sample(3, random_state=rs))
    with pytest.raises(ValueError):
        q.sample(3, random_state="not a seed")


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------
def _f32(a):
    return np.asarray(a, dtype=np.float32)


@pytest.mark.parametrize(
    "cls,params",
    [
        (UnivariateGaussian, ([0.5, -1.0], [2.0, 3.0])),
        (MultivariateGaussian, ([0.5, -1.0], [[2.0, 0.3], [0.3, 1.0]])),
        (Gamma, ([2.0, 0.5], [3.0, 1.5])),
        (Dirichlet, ([[0.5, 2.0, 3.0]],)),
        (
            NormalWishart,
            ([[0.5, -1.0], [1.0, 0.2]], [2.0, 0.5], 4.0, [[2.0, 0.3], [0.3, 1.0]]),
        ),
        (NormalGamma, ([[0.5, -1.0], [1.0, 0.2]], [2.0, 0.5], 3.0, [1.5, 0.7])),
        (Rayleigh, ([0.5, 2.0],)),
    ],
)
def test_float32_preserved(cls, params):
    q32 = cls(*[_f32(p) for p in params])
    q64 = cls(*params)
    for p in params_of(q32):
        assert p.dtype == np.float32
    for p in params_of(q64):
        assert p.dtype == np.float64
    for e32, e64 in zip(q32.natural, q64.natural):
        assert e32.dtype == np.float32
        assert_allclose(e32, e64, rtol=1e-6)
    for s32, s64 in zip(q32.expected_stats(), q64.expected_stats()):
        assert s32.dtype == np.float32
        assert_allclose(s32, s64, rtol=1e-5, atol=1e-6)
    assert np.asarray(q32.log_normalizer()).dtype == np.float32
    assert_allclose(q32.log_normalizer(), q64.log_normalizer(), rtol=1e-5, atol=1e-6)
    assert np.asarray(q32.entropy()).dtype == np.float32
    assert_allclose(q32.entropy(), q64.entropy(), rtol=1e-5, atol=1e-6)
    assert np.asarray(q32.kl(q32)).dtype == np.float32
    for x in _parts(q32.sample(3, random_state=0)):
        assert x.dtype == np.float32
    r = cls.from_natural(*q32.natural)
    for p in params_of(r):
        assert p.dtype == np.float32
    valid = cls.valid_natural(*q32.natural)
    assert valid.dtype == bool and np.all(valid)
    # mixing with float64 upcasts
    mixed = cls(*([_f32(params[0])] + [np.asarray(p, np.float64) for p in params[1:]]))
    if len(params) > 1:
        assert mixed.natural[0].dtype == np.float64


def test_dtype_rules():
    assert UnivariateGaussian(_f32([1.0]), 2.0).natural[0].dtype == np.float32
    assert UnivariateGaussian(1.0, 2.0).natural[0].dtype == np.float64
    assert UnivariateGaussian([1, 2], 3).natural[0].dtype == np.float64
    assert Gamma(_f32(1.0), np.float64(1.0)).natural[0].dtype == np.float64


def test_repr():
    assert repr(Gamma([1.0, 2.0], 1.0)) == "Gamma(batch_shape=(2,), dtype=float64)"


def test_expected_log_special_values():
    # E[log x] for Gamma(1, 1) is -euler_gamma
    assert_allclose(Gamma(1.0, 1.0).expected_log(), -np.euler_gamma, rtol=1e-14)
    # Dirichlet(1, 1): x1 ~ U(0, 1), E[log x1] = -1
    assert_allclose(Dirichlet([1.0, 1.0]).expected_log(), [-1.0, -1.0], rtol=1e-14)
    assert_allclose(
        Dirichlet([2.0, 3.0]).log_normalizer(),
        special.betaln(2.0, 3.0),
        rtol=1e-14,
    )


# --------------------------------------------------------------------------
# Wishart
# --------------------------------------------------------------------------
def test_wishart_against_scipy():
    rng = np.random.default_rng(40)
    q = random_wishart(rng, batch=(4,), d=3)
    x = np.stack([stats.wishart(q.df[b], q.scale[b]).rvs(random_state=b) for b in range(4)])
    for b in range(4):
        ref = stats.wishart(q.df[b], q.scale[b])
        assert_allclose(q.mean()[b], ref.mean(), rtol=1e-12)
        assert_allclose(q.entropy()[b], ref.entropy(), rtol=1e-10)
        assert_allclose(q.log_prob(x)[b], ref.logpdf(x[b]), rtol=1e-10)


def test_wishart_one_dimensional_is_gamma():
    # Natural parameters (-b I, a - 1): for d = 1 exactly Gamma(a, rate=b).
    a, b = np.array([0.7, 2.0, 5.5]), np.array([0.3, 1.0, 4.0])
    w = WishartByScale.from_natural(-b[:, None, None] * np.eye(1), a - 1.0)
    g = Gamma(a, b)
    assert_allclose(w.mean()[:, 0, 0], g.mean(), rtol=1e-12)
    assert_allclose(w.expected_log_det(), g.expected_log(), rtol=1e-12)
    assert_allclose(w.entropy(), g.entropy(), rtol=1e-10)
    p = WishartByScale.from_natural(-1.5 * np.eye(1), 0.2)
    assert_allclose(w.kl(p), g.kl(Gamma(1.2, 1.5)), rtol=1e-10)


def test_wishart_expected_log_det_mc():
    rng = np.random.default_rng(41)
    q = random_wishart(rng, batch=(2,), d=3)
    for b in range(2):
        x = stats.wishart(q.df[b], q.scale[b]).rvs(size=N_MC // 4, random_state=rng)
        assert_mc_close(np.linalg.slogdet(x)[1], q.expected_log_det()[b])


def test_wishart_kl_mc():
    rng = np.random.default_rng(42)
    q = random_wishart(rng, batch=(2,), d=2)
    p = WishartByScale(4.0, np.array([[0.5, 0.1], [0.1, 0.8]]))
    kl = q.kl(p)
    ref_p = stats.wishart(4.0, p.scale)
    for b in range(2):
        ref_q = stats.wishart(q.df[b], q.scale[b])
        x = ref_q.rvs(size=N_MC // 4, random_state=rng)
        assert_mc_close(
            ref_q.logpdf(np.moveaxis(x, 0, -1)) - ref_p.logpdf(np.moveaxis(x, 0, -1)), kl[b]
        )


def test_wishart_sample_moments():
    q = WishartByScale([3.5, 8.0], np.array([[[1.0, 0.3], [0.3, 0.5]], [[0.2, -0.1], [-0.1, 0.4]]]))
    x = q.sample(N_MC, random_state=4)
    assert x.shape == (N_MC, 2, 2, 2)
    w = q.scale
    diag = np.diagonal(w, axis1=-2, axis2=-1)
    # Var(X_ij) = df (W_ij^2 + W_ii W_jj)
    var = q.df[:, None, None] * (w**2 + diag[..., :, None] * diag[..., None, :])
    _check_sample_moments(x, q.mean(), var)
    assert_mc_close(np.linalg.slogdet(x)[1], q.expected_log_det())


def test_valid_natural_wishart():
    eye = np.eye(2)
    eta1 = np.stack([-eye, eye, -eye, np.array([[-1.0, 0.5], [0.0, -1.0]]), -eye])
    eta2 = np.array([0.0, 0.0, -1.0, 0.0, np.nan])
    assert_array_equal(WishartByScale.valid_natural(eta1, eta2), [True, False, False, False, False])
    with pytest.raises(ValueError):
        WishartByScale(0.5, eye).validate()  # df <= d - 1
    with pytest.raises(ValueError):
        WishartByScale(3.0, -eye).validate()


# --------------------------------------------------------------------------
# Normal-Wishart and Normal-Gamma
# --------------------------------------------------------------------------
N_JOINT = 40_000


def nw_reference_draws(q, b, n, rng):
    """Independent draws of factor ``b`` of a NormalWishart: Lambda from
    scipy.stats.wishart, then mu_j from the covariance (beta_j Lambda)^{-1}."""
    lam = stats.wishart(q.df[b], q.scale[b]).rvs(size=n, random_state=rng)
    lam = lam.reshape(n, q.dim, q.dim)
    cov = np.linalg.inv(q.beta[b][None, :, None, None] * lam[:, None])
    z = rng.standard_normal((n, q.n_means, q.dim, 1))
    mu = q.loc[b] + (np.linalg.cholesky(cov) @ z)[..., 0]
    return mu, lam


def ng_reference_draws(q, b, n, rng):
    """Independent draws of factor ``b`` of a NormalGamma from scipy.stats."""
    lam = stats.gamma.rvs(q.shape[b], scale=1.0 / q.rate[b], size=n, random_state=rng)
    sd = 1.0 / np.sqrt(q.beta[b][None, :, None] * lam[:, None, None])
    mu = stats.norm.rvs(q.loc[b], sd, size=(n, q.n_means, q.dim), random_state=rng)
    return mu, lam


def nw_stats(mu, lam):
    lam_mu = np.einsum("...ik,...jk->...ji", lam, mu)
    return (lam_mu, lam, np.sum(lam_mu * mu, axis=-1), np.linalg.slogdet(lam)[1])


def ng_stats(mu, lam):
    return (
        lam[..., None, None] * mu,
        lam,
        lam[..., None] * np.sum(mu**2, axis=-1),
        np.log(lam),
    )


def nw_scipy_logpdf(q, b, mu, lam):
    """log p(mu, Lambda) of factor ``b`` from scipy.stats, one point at a time."""
    out = stats.wishart(q.df[b], q.scale[b]).logpdf(lam)
    for j in range(q.n_means):
        cov = np.linalg.inv(q.beta[b, j] * lam)
        out += stats.multivariate_normal(q.loc[b, j], cov).logpdf(mu[j])
    return out


def test_normal_wishart_log_prob_against_scipy():
    rng = np.random.default_rng(50)
    q = random_normal_wishart(rng, batch=(2,), n_means=3, d=3)
    lam = stats.wishart(5.0, np.eye(3)).rvs(size=(4, 2), random_state=rng)
    mu = rng.normal(0.0, 1.5, (4, 2, 3, 3))
    logp = q.log_prob(mu, lam)
    assert logp.shape == (4, 2)
    for s in range(4):
        for b in range(2):
            assert_allclose(logp[s, b], nw_scipy_logpdf(q, b, mu[s, b], lam[s, b]), rtol=1e-10)
    # one precision matrix broadcast against the batch
    assert_allclose(
        q.log_prob(mu[0], lam[0, 0])[1], nw_scipy_logpdf(q, 1, mu[0, 1], lam[0, 0]), rtol=1e-10
    )


def test_normal_gamma_log_prob_against_scipy():
    rng = np.random.default_rng(51)
    q = random_normal_gamma(rng, batch=(2,), n_means=3, d=2)
    lam = rng.uniform(0.05, 4.0, (5, 2))
    mu = rng.normal(0.0, 1.5, (5, 2, 3, 2))
    ref = stats.gamma.logpdf(lam, q.shape, scale=1.0 / q.rate) + np.sum(
        stats.norm.logpdf(mu, q.loc, 1.0 / np.sqrt(q.beta[..., None] * lam[..., None, None])),
        axis=(-2, -1),
    )
    assert_allclose(q.log_prob(mu, lam), ref, rtol=1e-10)
    assert np.all(q.log_prob(mu, -lam) == -np.inf)
    assert np.all(q.log_prob(mu, 0.0) == -np.inf)


def test_normal_wishart_one_dimensional_is_normal_gamma():
    # d = 1: Wishart(df, W) is Gamma(df / 2, rate=1 / (2 W)), and the natural
    # parameters and sufficient statistics of the two families coincide.
    rng = np.random.default_rng(52)
    g = random_normal_gamma(rng, batch=(4,), n_means=2, d=1)
    g2 = random_normal_gamma(rng, batch=(4,), n_means=2, d=1)

    def as_nw(ng):
        w = (0.5 / ng.rate)[:, None, None]
        return NormalWishart(ng.loc, ng.beta, 2.0 * ng.shape, w)

    w, w2 = as_nw(g), as_nw(g2)
    for a, b in zip(w.natural, g.natural):
        assert_allclose(np.reshape(a, np.shape(b)), b, rtol=1e-12)
    for a, b in zip(w.expected_stats(), g.expected_stats()):
        assert_allclose(np.reshape(a, np.shape(b)), b, rtol=1e-12)
    assert_allclose(w.log_normalizer(), g.log_normalizer(), rtol=1e-12)
    assert_allclose(w.entropy(), g.entropy(), rtol=1e-10)
    assert_allclose(w.kl(w2), g.kl(g2), rtol=1e-9)
    mu, lam = g.sample(3, random_state=0)
    assert_allclose(w.log_prob(mu, lam[..., None, None]), g.log_prob(mu, lam), rtol=1e-10)


def test_normal_wishart_expected_stats_mc():
    rng = np.random.default_rng(53)
    q = random_normal_wishart(rng, batch=(2,), n_means=2, d=3)
    expected = q.expected_stats()
    for b in range(2):
        t = nw_stats(*nw_reference_draws(q, b, N_JOINT, rng))
        for tk, ek in zip(t, expected):
            assert_mc_close(tk, ek[b])
    # the class's own sampler gives the same expectations
    t = nw_stats(*q.sample(N_JOINT, random_state=0))
    for tk, ek in zip(t, expected):
        assert_mc_close(tk, ek)


def test_normal_gamma_expected_stats_mc():
    rng = np.random.default_rng(54)
    q = random_normal_gamma(rng, batch=(2,), n_means=2, d=3)
    expected = q.expected_stats()
    for b in range(2):
        t = ng_stats(*ng_reference_draws(q, b, N_JOINT, rng))
        for tk, ek in zip(t, expected):
            assert_mc_close(tk, ek[b])
    t = ng_stats(*q.sample(N_JOINT, random_state=0))
    for tk, ek in zip(t, expected):
        assert_mc_close(tk, ek)


def _check_t_marginal(mu, ref, rng):
    """The 1-D projections of draws ``mu`` of shape (n, d) along random
    directions follow those of scipy's multivariate t ``ref``."""
    for _ in range(2):
        u = rng.standard_normal(mu.shape[-1])
        u /= np.linalg.norm(u)
        t_ref = stats.t(ref.df, loc=u @ ref.loc, scale=np.sqrt(u @ ref.shape @ u))
        assert stats.kstest(mu @ u, t_ref.cdf).pvalue > 1e-3
        other = ref.rvs(size=mu.shape[0], random_state=rng) @ u
        assert stats.ks_2samp(mu @ u, other).pvalue > 1e-3


def test_normal_wishart_marginal_is_student_t():
    rng = np.random.default_rng(55)
    q = random_normal_wishart(rng, batch=(2,), n_means=2, d=3)
    mu, lam = q.sample(N_JOINT // 2, random_state=1)
    assert_mc_close(lam, q.mean()[1])
    for b in range(2):
        nu = q.df[b] - q.dim + 1.0
        for j in range(2):
            shape = np.linalg.inv(q.scale[b]) / (q.beta[b, j] * nu)
            ref = stats.multivariate_t(loc=q.loc[b, j], shape=shape, df=nu)
            _check_t_marginal(mu[:, b, j], ref, rng)


def test_normal_gamma_marginal_is_student_t():
    rng = np.random.default_rng(56)
    q = random_normal_gamma(rng, batch=(2,), n_means=2, d=3)
    mu, lam = q.sample(N_JOINT // 2, random_state=2)
    assert_mc_close(lam, q.mean()[1])
    for b in range(2):
        a, r = q.shape[b], q.rate[b]
        for j in range(2):
            shape = (r / a) / q.beta[b, j] * np.eye(3)
            ref = stats.multivariate_t(loc=q.loc[b, j], shape=shape, df=2.0 * a)
            _check_t_marginal(mu[:, b, j], ref, rng)


def test_normal_wishart_entropy_and_kl_mc():
    rng = np.random.default_rng(57)
    q = random_normal_wishart(rng, batch=(2,), n_means=2, d=2)
    p = NormalWishart([[0.5, 0.0], [-1.0, 1.0]], [1.0, 0.3], 4.0, [[0.5, 0.1], [0.1, 0.8]])
    ent, kl = q.entropy(), q.kl(p)
    assert kl.shape == (2,)
    for b in range(2):
        mu, lam = nw_reference_draws(q, b, N_JOINT, rng)
        logq = np.array([nw_scipy_logpdf(q, b, m, x) for m, x in zip(mu[:50], lam[:50])])
        assert_allclose(q.log_prob(mu[:50, None], lam[:50, None])[:, b], logq, rtol=1e-10)
        lq = q.log_prob(mu[:, None], lam[:, None])[:, b]
        lp = p.log_prob(mu, lam)
        assert_mc_close(-lq, ent[b])
        assert_mc_close(lq - lp, kl[b])


def test_normal_gamma_entropy_and_kl_mc():
    rng = np.random.default_rng(58)
    q = random_normal_gamma(rng, batch=(3,), n_means=2, d=2)
    p = NormalGamma([[0.5, 0.0], [-1.0, 1.0]], [1.0, 0.3], 2.0, 1.5)
    ent, kl = q.entropy(), q.kl(p)
    assert kl.shape == (3,)
    for b in range(3):
        mu, lam = ng_reference_draws(q, b, N_JOINT, rng)
        lq = q.log_prob(mu[:, None], lam[:, None])[:, b]
        assert_mc_close(-lq, ent[b])
        assert_mc_close(lq - p.log_prob(mu, lam), kl[b])


def test_normal_wishart_natural_parameter_values():
    loc = np.array([[1.0, 0.0], [0.0, 2.0]])
    q = NormalWishart(loc, [2.0, 0.5], 4.0, [[0.5, 0.0], [0.0, 0.25]])
    eta1, eta2, eta3, eta4 = q.natural
    assert_allclose(eta1, [[2.0, 0.0], [0.0, 1.0]])
    # W^{-1} = diag(2, 4); sum_j beta_j m_j m_j^T = diag(2, 2)
    assert_allclose(eta2, [[-2.0, 0.0], [0.0, -3.0]])
    assert_allclose(eta3, [-1.0, -0.25])
    assert_allclose(eta4, (4.0 - 2 - 1 + 2) / 2)
    assert_allclose(q.mean()[1], [[2.0, 0.0], [0.0, 1.0]])
    precision = q.precision()
    assert isinstance(precision, WishartByScale)
    assert_allclose(precision.df, 4.0)
    assert_allclose(precision.scale, q.scale)
    assert_allclose(precision.entropy(), stats.wishart(4.0, q.scale).entropy(), rtol=1e-10)
    # A = A_Wishart + sum_j (d log(2 pi) - d log beta_j) / 2, with
    # A_Wishart = df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)
    a_wishart = 4.0 * np.log(2.0) + 2.0 * np.log(0.125) + special.multigammaln(2.0, 2)
    a_gauss = 2 * np.log(2 * np.pi) - np.log(2.0) - np.log(0.5)
    assert_allclose(q.log_normalizer(), a_wishart + a_gauss, rtol=1e-12)


def test_normal_gamma_natural_parameter_values():
    q = NormalGamma([[1.0, 2.0], [0.0, -1.0]], [2.0, 4.0], 3.0, 0.5)
    eta1, eta2, eta3, eta4 = q.natural
    assert_allclose(eta1, [[2.0, 4.0], [0.0, -4.0]])
    assert_allclose(eta2, -(0.5 + (2.0 * 5.0 + 4.0 * 1.0) / 2))
    assert_allclose(eta3, [-1.0, -2.0])
    assert_allclose(eta4, 3.0 - 1.0 + 2 * 2 / 2)
    assert_allclose(
        q.log_normalizer(),
        special.gammaln(3.0)
        - 3.0 * np.log(0.5)
        + np.log(2 * np.pi) * 2
        - np.log(2.0)
        - np.log(4.0),
        rtol=1e-12,
    )
    precision = q.precision()
    assert isinstance(precision, Gamma)
    assert_allclose((precision.shape, precision.rate), (3.0, 0.5))
    assert_allclose(q.mean()[1], 6.0)


def test_normal_wishart_broadcasting_constructor():
    q = NormalWishart(np.zeros((1, 2)), [1.0, 2.0, 3.0], [4.0, 5.0], np.eye(2))
    assert q.batch_shape == (2,)
    assert (q.n_means, q.dim) == (3, 2)
    assert q.loc.shape == (2, 3, 2) and q.beta.shape == (2, 3)
    assert q.scale.shape == (2, 2, 2)
    with pytest.raises(ValueError):
        NormalWishart(np.zeros((1, 3)), [1.0], 4.0, np.eye(2))
    with pytest.raises(ValueError):
        NormalWishart(np.zeros(2), [1.0], 4.0, np.eye(2))
    g = NormalGamma(np.zeros((1, 3)), [1.0, 2.0], [1.0, 2.0, 3.0], 1.0)
    assert g.batch_shape == (3,)
    assert (g.n_means, g.dim) == (2, 3)
    with pytest.raises(ValueError):
        NormalGamma(np.zeros(3), [1.0], 1.0, 1.0)


def test_valid_natural_normal_wishart():
    nan = np.nan
    q = NormalWishart([[1.0, 0.0], [0.0, 1.0]], [1.0, 2.0], 3.0, np.eye(2))
    eta1, eta2, eta3, eta4 = (np.array(e) for e in q.natural)
    n = 7
    e1 = np.broadcast_to(eta1, (n, 2, 2)).copy()
    e2 = np.broadcast_to(eta2, (n, 2, 2)).copy()
    e3 = np.broadcast_to(eta3, (n, 2)).copy()
    e4 = np.full(n, float(eta4))
    e3[1, 0] = 0.0  # beta = 0
    e3[2, 1] = 0.5  # beta < 0
    # W^{-1} = -2 eta2 - sum_j beta_j m_j m_j^T not positive definite: eta2
    # alone is negative definite, but the means' term outweighs it
    e1[3] = [[10.0, 0.0], [0.0, 0.0]]
    e4[4] = 0.5 * (2 - 2)  # df = d - 1
    e1[5, 1, 0] = nan
    e2[6, 0, 1] = -0.3  # not symmetric
    expected = [True, False, False, False, False, False, False]
    assert_array_equal(NormalWishart.valid_natural(e1, e2, e3, e4), expected)
    beta = -2.0 * e3[3]
    winv = -2.0 * e2[3] - sum(np.outer(m, m) / b for m, b in zip(e1[3], beta))
    assert np.linalg.eigvalsh(winv)[0] < 0
    assert np.all(np.linalg.eigvalsh(-e2[3]) > 0)
    # just above the df bound, and broadcasting of a shared eta2
    out = NormalWishart.valid_natural(e1[:1], eta2, e3[:1], [1e-9, -1e-9, nan])
    assert_array_equal(out, [True, False, False])
    with pytest.raises(ValueError):
        NormalWishart([[0.0, 0.0]], [0.0], 3.0, np.eye(2)).validate()
    with pytest.raises(ValueError):
        NormalWishart([[0.0, 0.0]], [1.0], 1.0, np.eye(2)).validate()  # df <= d - 1
    with pytest.raises(ValueError):
        NormalWishart([[0.0, 0.0]], [1.0], 3.0, [[1.0, 2.0], [2.0, 1.0]]).validate()
    with pytest.raises(ValueError):
        NormalWishart([[nan, 0.0]], [1.0], 3.0, np.eye(2)).validate()


def test_valid_natural_normal_gamma():
    nan, inf = np.nan, np.inf
    q = NormalGamma([[1.0, 0.0], [0.0, 1.0]], [1.0, 2.0], 0.5, 1.0)
    eta1, eta2, eta3, eta4 = (np.array(e) for e in q.natural)
    # sum_j beta_j ||m_j||^2 / 2 = 1.5, so rate = -eta2 - 1.5 and
    # shape = eta4 + 1 - J d / 2 = eta4 - 1
    assert_allclose((eta2, eta4), (-2.5, 1.5))
    n = 9
    e1 = np.broadcast_to(eta1, (n, 2, 2)).copy()
    e2 = np.full(n, float(eta2))
    e3 = np.broadcast_to(eta3, (n, 2)).copy()
    e4 = np.full(n, float(eta4))
    e3[1, 1] = 0.0  # beta = 0
    e3[2, 0] = 1.0  # beta < 0
    e2[3] = -1.6  # rate = 0.1
    e2[4] = -1.5  # rate = 0
    e2[5] = -1.4  # rate < 0 although eta2 < 0
    e4[6] = 1.0  # shape = 0
    e1[7, 0, 1] = inf
    e2[8] = nan
    expected = [True, False, False, True, False, False, False, False, False]
    assert_array_equal(NormalGamma.valid_natural(e1, e2, e3, e4), expected)
    with pytest.raises(ValueError):
        NormalGamma([[0.0]], [-1.0], 1.0, 1.0).validate()
    with pytest.raises(ValueError):
        NormalGamma([[0.0]], [1.0], 0.0, 1.0).validate()
    with pytest.raises(ValueError):
        NormalGamma([[0.0]], [1.0], 1.0, [1.0, -1.0]).validate()
    with pytest.raises(ValueError):
        NormalGamma([[inf]], [1.0], 1.0, 1.0).validate()


# --------------------------------------------------------------------------
# Rayleigh (base measure h(x) = x)
# --------------------------------------------------------------------------
def test_rayleigh_against_scipy():
    rng = np.random.default_rng(60)
    q = random_rayleigh(rng)
    ref = stats.rayleigh(scale=q.scale)
    assert q.batch_shape == (3, 4)
    assert_allclose(q.mean(), ref.mean(), rtol=1e-12)
    assert_allclose(q.variance, ref.var(), rtol=1e-12)
    assert_allclose(q.entropy(), ref.entropy(), rtol=1e-10)
    x = rng.uniform(0.01, 8.0, (5, 3, 4))
    assert_allclose(q.log_prob(x), ref.logpdf(x), rtol=1e-10)
    assert_allclose(q.log_prob(0.7), ref.logpdf(0.7), rtol=1e-12)
    # outside the support (and at 0, where the density vanishes)
    for bad in (-1.0, 0.0):
        assert_array_equal(q.log_prob(bad), ref.logpdf(bad))
        assert np.all(q.log_prob(bad) == -np.inf)


def test_rayleigh_canonical_form():
    # log p(x) = log h(x) + eta x^2 - A(eta) with h(x) = x, A = -log(-2 eta)
    q = Rayleigh([0.4, 1.0, 2.5])
    (eta,) = q.natural
    assert_allclose(eta, -0.5 / np.array([0.4, 1.0, 2.5]) ** 2, rtol=1e-14)
    assert_allclose(q.log_normalizer(), -np.log(-2.0 * eta), rtol=1e-13)
    x = np.array([[0.3], [1.1], [4.0]])
    assert_allclose(
        q.log_prob(x),
        np.log(x) + eta * x**2 - q.log_normalizer(),
        rtol=1e-12,
    )
    # grad A = E[t] = 2 s^2, analytically -1 / eta
    assert_allclose(q.expected_stats()[0], -1.0 / eta, rtol=1e-13)


def test_rayleigh_expectations_mc():
    rng = np.random.default_rng(61)
    q = random_rayleigh(rng, batch=(4,))
    x = stats.rayleigh.rvs(scale=q.scale, size=(N_MC, 4), random_state=rng)
    assert_mc_close(np.log(x), q.expected_log())
    assert_mc_close(x**2, q.expected_stats()[0])
    # 1 / x has a (logarithmically) infinite variance; the mean still
    # converges, so check it against quad as well
    assert_mc_close(1.0 / x, q.expected_inverse())
    for b in range(4):
        ref = stats.rayleigh(scale=q.scale[b])
        inv = ref.expect(lambda t: 1.0 / t, epsabs=0, epsrel=1e-12)
        assert_allclose(q.expected_inverse()[b], inv, rtol=1e-9)
        lg = ref.expect(np.log, epsabs=0, epsrel=1e-12)
        assert_allclose(q.expected_log()[b], lg, rtol=1e-9, atol=1e-12)
    # special value: E[log x] = (log 2 - euler_gamma) / 2 at s = 1
    assert_allclose(Rayleigh(1.0).expected_log(), 0.5 * (np.log(2.0) - np.euler_gamma), rtol=1e-14)


def test_rayleigh_kl_mc():
    rng = np.random.default_rng(62)
    q = random_rayleigh(rng, batch=(4,))
    p = Rayleigh(1.3)  # scalar prior broadcast against the batch
    x = stats.rayleigh.rvs(scale=q.scale, size=(N_MC, 4), random_state=rng)
    llr = stats.rayleigh.logpdf(x, scale=q.scale) - stats.rayleigh.logpdf(x, scale=1.3)
    kl = q.kl(p)
    assert kl.shape == (4,)
    assert_mc_close(llr, kl)
    # the documented closed form
    sq, sp = q.scale, 1.3
    assert_allclose(kl, 2 * np.log(sp / sq) + sq**2 / sp**2 - 1, rtol=1e-12)


def test_rayleigh_kl_and_entropy_identities():
    rng = np.random.default_rng(63)
    q = random_rayleigh(rng)
    assert_allclose(q.kl(q), 0.0, atol=1e-15)
    # KL near q = p: second order in the log-ratio r = 2 log(s_q / s_p)
    near = Rayleigh(q.scale * (1.0 + 1e-7))
    assert_allclose(q.kl(near), 0.5 * (2e-7) ** 2, rtol=1e-4)
    for _ in range(20):
        q, p = random_rayleigh(rng), random_rayleigh(rng)
        kl = q.kl(p)
        assert kl.shape == q.batch_shape
        assert np.all(kl >= 0)
        # h cancels in the log-ratio: the generic KL identity holds ...
        assert_allclose(kl, ExponentialFamily.kl(q, p), rtol=1e-8, atol=1e-10)
        # ... but the entropy loses E[log h(x)] = E[log x]
        assert_allclose(
            q.entropy(),
            ExponentialFamily.entropy(q) - q.expected_log(),
            rtol=1e-10,
            atol=1e-12,
        )
        assert not np.allclose(q.entropy(), ExponentialFamily.entropy(q))
    with pytest.raises(TypeError):
        Rayleigh(1.0).kl(Gamma(1.0, 1.0))


def test_rayleigh_sample_moments():
    q = Rayleigh([0.2, 1.0, 4.0])
    x = q.sample(N_MC, random_state=4)
    assert x.shape == (N_MC, 3)
    assert np.all(x > 0)
    _check_sample_moments(x, q.mean(), q.variance)
    assert_mc_close(np.log(x), q.expected_log())
    # and the distribution is Rayleigh: Kolmogorov-Smirnov against scipy
    for b in range(3):
        assert stats.kstest(x[:20_000, b], stats.rayleigh(scale=q.scale[b]).cdf).pvalue > 1e-3


def test_valid_natural_rayleigh():
    nan, inf = np.nan, np.inf
    eta = np.array([-0.5, -1e-300, -1e300, 0.0, 1.0, nan, -inf, inf])
    expected = [True, True, True, False, False, False, False, False]
    assert_array_equal(Rayleigh.valid_natural(eta), expected)
    out = Rayleigh.valid_natural(np.array([[-1.0, 0.0], [2.0, -3.0]]))
    assert_array_equal(out, [[True, False], [False, True]])
    assert Rayleigh.valid_natural(np.float32(-2.0))
    # round trip of the scale through eta = -1 / (2 s^2)
    s = np.array([1e-3, 0.5, 1.0, 7.0, 1e3])
    assert_allclose(Rayleigh.from_natural(-0.5 / s**2).scale, s, rtol=1e-14)


def _quad_rayleigh(g, s):
    """``E[g(x)]`` for ``x ~ Rayleigh(scale=s)`` by adaptive quadrature."""
    val, _ = integrate.quad(
        lambda x: g(x) * stats.rayleigh.pdf(x, scale=s),
        0.0,
        np.inf,
        epsabs=0.0,
        epsrel=1e-13,
        limit=400,
    )
    return val


@pytest.mark.parametrize(
    "g",
    [np.log1p, lambda x: np.exp(-x), np.cos, lambda x: 1.0 / (1.0 + x)],
    ids=["log1p", "exp_neg", "cos", "inv1p"],
)
def test_rayleigh_quadrature_against_scipy_quad(g):
    scales = np.array([0.2, 1.0, 3.5])
    q = Rayleigh(scales)
    nodes, weights = q.quadrature()
    assert nodes.shape == (3, 16) and weights.shape == (16,)
    assert np.all(nodes > 0) and np.all(weights > 0)
    assert_allclose(weights.sum(), 1.0, rtol=1e-13)
    ref = [_quad_rayleigh(g, s) for s in scales]
    # the slowest case is the widest factor, s = 3.5, for log1p and 1 / (1 + x)
    # whose singularity at x = -1 lies close to the support in units of s
    assert_allclose(g(nodes) @ weights, ref, rtol=1e-6)
    assert_allclose(g(nodes[:2]) @ weights, ref[:2], rtol=1e-10)
    # more nodes converge further
    nodes, weights = q.quadrature(40)
    assert_allclose(g(nodes) @ weights, ref, rtol=1e-11)


def test_rayleigh_quadrature_exact_for_polynomials():
    q = Rayleigh([[0.3, 1.0], [2.0, 5.0]])
    n = 8
    nodes, weights = q.quadrature(n)
    assert nodes.shape == (2, 2, n)
    # E[x^2] = 2 s^2 (the sufficient statistic), E[x] = the mean
    assert_allclose(nodes**2 @ weights, q.expected_stats()[0], rtol=1e-13)
    assert_allclose(nodes @ weights, q.mean(), rtol=1e-13)
    # every moment up to degree 2 n - 1: E[x^k] = (sqrt(2) s)^k Gamma(1 + k / 2)
    # (scipy.stats.rayleigh.moment integrates numerically and is less accurate)
    for k in range(2 * n):
        ref = (np.sqrt(2.0) * q.scale) ** k * special.gamma(1.0 + 0.5 * k)
        assert_allclose(nodes**k @ weights, ref, rtol=1e-12)
    assert_allclose(stats.rayleigh.moment(3, scale=q.scale), nodes**3 @ weights, rtol=1e-9)
    # a single node sits at the mean
    one, w1 = q.quadrature(1)
    assert_allclose(one[..., 0], q.mean(), rtol=1e-13)
    assert_allclose(w1, [1.0])


def test_rayleigh_quadrature_singular_functions_converge():
    # log x and 1 / x are singular at 0: the rule still converges to the
    # closed forms, only algebraically
    q = Rayleigh([0.5, 2.0])
    errors = []
    for n in (16, 64):
        nodes, weights = q.quadrature(n)
        errors.append(np.abs(np.log(nodes) @ weights - q.expected_log()))
        assert_allclose(1.0 / nodes @ weights, q.expected_inverse(), rtol=0.02)
    assert np.all(errors[1] < errors[0])
    assert np.all(errors[1] < 1e-4)


def test_rayleigh_quadrature_dtype_and_errors():
    q32 = Rayleigh(np.array([0.5, 2.0], dtype=np.float32))
    nodes, weights = q32.quadrature(12)
    assert nodes.dtype == np.float32 and weights.dtype == np.float32
    nodes64, weights64 = Rayleigh([0.5, 2.0]).quadrature(12)
    assert nodes64.dtype == np.float64
    assert_allclose(nodes, nodes64, rtol=1e-6)
    assert_allclose(weights, weights64, rtol=1e-5, atol=1e-12)
    # the returned arrays are fresh: writing to them leaves the cached rule intact
    weights64[:] = 0.0
    assert_allclose(Rayleigh(1.0).quadrature(12)[1].sum(), 1.0, rtol=1e-13)
    for bad in (0, -3, 2.5, True, "16"):
        with pytest.raises(ValueError):
            q32.quadrature(bad)
    assert repr(q32) == "Rayleigh(batch_shape=(2,), dtype=float32)"


# --------------------------------------------------------------------------
# array-level functions for callers in other conventions (skvi.networks)
# --------------------------------------------------------------------------
def test_mvn_moments_from_natural_against_numpy():
    rng = np.random.default_rng(70)
    A = rng.normal(size=(3, 2, 4, 4))
    precision = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(4)
    mean = rng.normal(size=(3, 2, 4))
    eta1 = np.einsum("...ij,...j->...i", precision, mean)
    m, cov, logdet = MultivariateGaussian.moments_from_natural(eta1, -0.5 * precision)
    assert_allclose(m, mean, rtol=1e-9, atol=1e-10)
    assert_allclose(cov, np.linalg.inv(precision), rtol=1e-9, atol=1e-12)
    assert_array_equal(cov, np.swapaxes(cov, -1, -2))
    assert_allclose(logdet, np.linalg.slogdet(precision)[1], rtol=1e-12)
    # The same map as from_natural's factor, written once.
    q = MultivariateGaussian.from_natural(eta1, -0.5 * precision)
    assert_array_equal(m, q.loc)
    assert_array_equal(cov, q.covariance)
    # A log-normaliser from these arrays is the factor's.
    A_ = 0.5 * (np.einsum("...i,...i->...", m, eta1) - logdet + 4 * np.log(2 * np.pi))
    assert_allclose(A_, q.log_normalizer(), rtol=1e-12)
    # The batch shapes broadcast: one precision for every linear term.
    m1, cov1, logdet1 = MultivariateGaussian.moments_from_natural(eta1, -0.5 * precision[0, 0])
    assert m1.shape == (3, 2, 4) and cov1.shape == (3, 2, 4, 4) and logdet1.shape == (3, 2)
    assert_allclose(m1, np.linalg.solve(precision[0, 0], eta1[..., None])[..., 0], rtol=1e-9)
    with pytest.raises(np.linalg.LinAlgError):
        MultivariateGaussian.moments_from_natural(np.zeros(2), 0.5 * np.eye(2))


def test_wishart_stats_from_inverse_scale_against_scipy():
    rng = np.random.default_rng(71)
    d = 3
    B = rng.normal(size=(4, d, d))
    V = B @ np.swapaxes(B, -1, -2) + np.eye(d)
    df = np.array([3.5, 4.0, 7.0, 12.0])
    mean, elogdet, A = WishartByScale.stats_from_inverse_scale(df, V)
    for b in range(4):
        ref = stats.wishart(df[b], np.linalg.inv(V[b]))
        assert_allclose(mean[b], ref.mean(), rtol=1e-10)
        # log p(X) = (df - d - 1) log|X| / 2 - tr(V X) / 2 - A at any X.
        x = ref.rvs(random_state=b)
        lp = 0.5 * (df[b] - d - 1) * np.linalg.slogdet(x)[1] - 0.5 * np.sum(V[b] * x)
        assert_allclose(lp - ref.logpdf(x), A[b], rtol=1e-10)
        closed = (
            special.digamma(0.5 * (df[b] - np.arange(d))).sum()
            + d * np.log(2.0)
            - np.linalg.slogdet(V[b])[1]
        )
        assert_allclose(elogdet[b], closed, rtol=1e-12)
    q = WishartByScale(df, np.linalg.inv(V))
    assert_allclose(elogdet, q.expected_log_det(), rtol=1e-10)
    assert_allclose(A, q.log_normalizer(), rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError):
        WishartByScale.stats_from_inverse_scale(3.0, -np.eye(2))


def test_wishart_sufficient_stats_and_df_term():
    rng = np.random.default_rng(72)
    B = rng.normal(size=(5, 3, 3))
    X = B @ np.swapaxes(B, -1, -2) + 0.1 * np.eye(3)
    x, logdet = WishartByScale.sufficient_stats(X)
    assert_array_equal(x, X)
    assert_allclose(logdet, np.linalg.slogdet(X)[1], rtol=1e-12)
    with pytest.raises(ValueError, match="positive definite"):
        WishartByScale.sufficient_stats(np.diag([1.0, -1.0]))
    df = np.array([[2.5, 3.0], [7.0, 40.0]])
    term = WishartByScale.log_normalizer_df_term(df, 3)
    ref = np.vectorize(lambda v: special.multigammaln(0.5 * v, 3))(df)
    assert_allclose(term, ref, rtol=1e-12)
    # The term of A in df alone: A less its df d log(2) / 2 and df log|W| / 2.
    W = np.linalg.inv(X[0])
    q = WishartByScale(df, W)
    rest = 0.5 * df * 3 * np.log(2.0) + 0.5 * df * np.linalg.slogdet(W)[1]
    assert_allclose(term, q.log_normalizer() - rest, rtol=1e-10)


def test_gamma_log_normalizer_shape_term_against_scipy():
    shape = np.array([0.3, 1.0, 2.5, 40.0])
    term = Gamma.log_normalizer_shape_term(shape)
    # At rate 1, log p(x) = (a - 1) log x - x - A, with A the shape term.
    x = 1.7
    assert_allclose(term, (shape - 1) * np.log(x) - x - stats.gamma(shape).logpdf(x), rtol=1e-10)
    assert_allclose(term - shape * np.log(3.0), Gamma(shape, 3.0).log_normalizer(), rtol=1e-12)


def test_count_base_measures_against_scipy():
    from skvi.expfam.counts import multinomial_log_coefficient, poisson_log_base_measure

    x = np.array([0, 1, 4, 17])
    r = 2.3
    assert_allclose(
        poisson_log_base_measure(x), stats.poisson(r).logpmf(x) - (x * np.log(r) - r), rtol=1e-12
    )
    counts = np.array([[3, 0, 2], [1, 1, 1]])
    p = np.array([0.2, 0.3, 0.5])
    ref = [stats.multinomial(c.sum(), p).logpmf(c) - np.sum(c * np.log(p)) for c in counts]
    assert_allclose(multinomial_log_coefficient(counts), ref, rtol=1e-12)
    assert_allclose(multinomial_log_coefficient(counts, n=counts.sum(axis=1)), ref, rtol=1e-12)


def test_supports_agree_with_scipy_densities():
    # A value is in a family's support exactly where scipy's density of it
    # is positive and finite (with the valid values sampled as well).
    from skvi.expfam import Dirichlet, UnivariateGaussian, WishartByScale
    from skvi.expfam.counts import category_in_support, count_in_support, multinomial_in_support

    x = np.array([-1.0, 0.0, 1e-300, 2.5, np.inf, -np.inf, np.nan])
    with np.errstate(invalid="ignore"):
        assert_array_equal(Gamma.in_support(x), stats.gamma(2.0).pdf(x) > 0)
    assert_array_equal(UnivariateGaussian.in_support(x), np.isfinite(stats.norm.logpdf(x)))
    assert_array_equal(UnivariateGaussian.in_support(np.array([1e308, -1e308])), [True, True])

    def scipy_takes(v):
        try:
            return bool(np.isfinite(stats.dirichlet([1.0, 1.0]).logpdf(v)))
        except ValueError:
            return False

    p = np.array([[0.2, 0.8], [0.5, 0.6], [1.2, -0.2], [np.nan, 1.0], [1 / 3, 2 / 3], [0.0, 1.0]])
    assert_array_equal(Dirichlet.in_support(p), [scipy_takes(v) for v in p])

    mats = np.array(
        [
            np.eye(2),
            [[2.0, 0.3], [0.3, 1.0]],
            [[1.0, 0.5], [0.0, 1.0]],
            -np.eye(2),
            [[1.0, 2.0], [2.0, 1.0]],
        ]
    )
    pd_and_symmetric = [
        np.allclose(m, m.T) and np.all(np.linalg.eigvalsh(0.5 * (m + m.T)) > 0) for m in mats
    ]
    assert_array_equal(WishartByScale.in_support(mats), pd_and_symmetric)
    assert_array_equal(WishartByScale.in_support(np.array([[1.0, np.nan], [np.nan, 1.0]])), False)
    assert_array_equal(
        WishartByScale.in_support(stats.wishart(5, np.eye(3)).rvs(4, random_state=0)), True
    )

    k = np.array([0.0, 3.0, 2.5, -1.0, np.inf, np.nan])
    with np.errstate(invalid="ignore"):
        # A count is a whole number: scipy before 1.11 gives pmf(2.5) the
        # value of pmf(2), later ones 0.
        whole = np.isfinite(k) & (k == np.floor(np.where(np.isfinite(k), k, 0.0)))
        assert_array_equal(count_in_support(k), (stats.poisson(2.0).pmf(k) > 0) & whole)
    assert_array_equal(category_in_support(k, 3), [True, False, False, False, False, False])
    counts = np.array([[1.0, 3.0], [2.0, 1.0], [4.5, -0.5], [np.nan, 4.0]])
    with np.errstate(invalid="ignore"):
        ref = [stats.multinomial(4, [0.5, 0.5]).pmf(c) > 0 for c in counts]
    assert_array_equal(multinomial_in_support(counts, 4), ref)


# --------------------------------------------------------------------------
# renamed classes: the old names import for one release, with a warning
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "module, old, new",
    [
        ("skvi.expfam", "Gaussian", "UnivariateGaussian"),
        ("skvi.expfam", "Wishart", "WishartByScale"),
        ("skvi.expfam", "GaussianMoments", "GaussianMeanCovariance"),
        ("skvi.expfam.gaussian", "Gaussian", "UnivariateGaussian"),
        ("skvi.expfam.wishart", "Wishart", "WishartByScale"),
        ("skvi.expfam.linalg", "GaussianMoments", "GaussianMeanCovariance"),
        ("skvi.models.matrix_factorization.nodes", "Moments", "SideMoments"),
        ("skvi.engine", "Moments", "DataMoments"),
        ("skvi.engine.statistics", "Moments", "DataMoments"),
    ],
)
def test_renamed_names_still_import_and_warn_with_the_new_name(module, old, new):
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(FutureWarning, match=rf"{module}\.{old} is deprecated.*now called {new}$"):
        via_attribute = getattr(mod, old)
    assert via_attribute is getattr(mod, new)
    with pytest.warns(FutureWarning, match=new):
        namespace = {}
        exec(f"from {module} import {old}", namespace)
    assert namespace[old] is getattr(mod, new)
    assert old not in getattr(mod, "__all__", ())
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        mod.NoSuchName


def test_old_names_give_the_same_answers():
    import warnings

    import skvi.expfam as ef

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old_gaussian, old_wishart = ef.Gaussian, ef.Wishart
    q = old_gaussian([0.0, 1.0], [1.0, 4.0])
    assert_array_equal(q.entropy(), UnivariateGaussian([0.0, 1.0], [1.0, 4.0]).entropy())
    w = old_wishart(5.0, np.eye(2))
    # E[Lambda] = df W: the scale, not BayesPy's inverse scale.
    assert_allclose(w.mean(), 5.0 * np.eye(2))
