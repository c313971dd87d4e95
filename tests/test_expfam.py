"""Tests of skvi.expfam against independent references.

References are scipy.stats (moments, entropies, log densities), Monte Carlo
estimates from scipy/numpy samplers (E[log x], KL divergences), and central
finite differences of the log-normaliser (expected sufficient statistics).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import special, stats

from skvi.expfam import (
    Dirichlet,
    ExponentialFamily,
    Gamma,
    Gaussian,
    MultivariateGaussian,
    Wishart,
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
    return Gaussian(rng.normal(0.0, 2.0, batch), rng.uniform(0.3, 3.0, batch))


def random_mvn(rng, batch=(3,), d=3):
    return MultivariateGaussian(
        rng.normal(0.0, 1.0, batch + (d,)), random_spd(rng, batch, d)
    )


def random_gamma(rng, batch=(3, 4)):
    return Gamma(rng.uniform(0.5, 5.0, batch), rng.uniform(0.3, 3.0, batch))


def random_dirichlet(rng, batch=(3,), k=4):
    return Dirichlet(rng.uniform(0.5, 5.0, batch + (k,)))


def random_wishart(rng, batch=(3,), d=3):
    return Wishart(rng.uniform(d - 0.5, d + 6.0, batch), random_spd(rng, batch, d) / d)


FACTORIES = {
    "gaussian": random_gaussian,
    "mvn": random_mvn,
    "gamma": random_gamma,
    "dirichlet": random_dirichlet,
    "wishart": random_wishart,
}


def params_of(q):
    """Standard parameters of a factor, as a tuple of arrays."""
    if isinstance(q, (Gaussian, MultivariateGaussian)):
        return (q.loc, q.precision)
    if isinstance(q, Gamma):
        return (q.shape, q.rate)
    if isinstance(q, Wishart):
        return (q.df, q.scale)
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
    p = Gaussian(0.3, 0.8)  # scalar prior broadcast against the batch
    sq = 1.0 / np.sqrt(q.precision)
    x = stats.norm.rvs(q.loc, sq, size=(N_MC, 4), random_state=rng)
    llr = stats.norm.logpdf(x, q.loc, sq) - stats.norm.logpdf(
        x, 0.3, 1.0 / np.sqrt(0.8)
    )
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


@pytest.mark.parametrize("family", sorted(FACTORIES))
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
        assert_allclose(
            q.entropy(), ExponentialFamily.entropy(q), rtol=1e-10, atol=1e-12
        )


def test_kl_type_mismatch():
    with pytest.raises(TypeError):
        Gaussian(0.0, 1.0).kl(Gamma(1.0, 1.0))


# --------------------------------------------------------------------------
# grad A(eta) = E[t(x)] by central finite differences
# --------------------------------------------------------------------------
def _fd_check(cls, q, h=1e-5, rtol=1e-6, atol=1e-8):
    eta = [np.array(e) for e in q.natural]
    stats_ = q.expected_stats()
    event_ndims = cls._event_ndims
    for k, (e, s, nd) in enumerate(zip(eta, stats_, event_ndims)):
        event_shape = e.shape[e.ndim - nd :]
        for idx in np.ndindex(*event_shape):
            if nd == 2 and idx[0] > idx[1]:
                continue  # symmetric pairs handled together
            direction = np.zeros(event_shape)
            if nd == 2 and idx[0] != idx[1]:
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
                cls.from_natural(*plus).log_normalizer()
                - cls.from_natural(*minus).log_normalizer()
            ) / (2 * h)
            expected = s[(Ellipsis,) + idx]
            assert_allclose(fd, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    "cls,family",
    [
        (Gaussian, "gaussian"),
        (MultivariateGaussian, "mvn"),
        (Gamma, "gamma"),
        (Dirichlet, "dirichlet"),
        (Wishart, "wishart"),
    ],
)
def test_log_normalizer_gradient(cls, family):
    rng = np.random.default_rng(12)
    q = FACTORIES[family](rng)
    _fd_check(cls, q)


# --------------------------------------------------------------------------
# natural parameters
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls,family",
    [
        (Gaussian, "gaussian"),
        (MultivariateGaussian, "mvn"),
        (Gamma, "gamma"),
        (Dirichlet, "dirichlet"),
        (Wishart, "wishart"),
    ],
)
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
    g = Gaussian([1.0, -2.0], [4.0, 0.5])
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


def test_valid_natural_gaussian():
    nan, inf = np.nan, np.inf
    eta1 = np.array([1.0, -3.0, nan, 1.0, inf, 1.0, 1.0, 1.0, 1.0])
    eta2 = np.array([-0.5, -2.0, -1.0, nan, -1.0, 0.0, 2.0, -inf, -1e-300])
    expected = [True, True, False, False, False, False, False, False, True]
    assert_array_equal(Gaussian.valid_natural(eta1, eta2), expected)
    # broadcasting, 2-d batch
    out = Gaussian.valid_natural(0.0, np.array([[-1.0, 1.0], [0.0, -2.0]]))
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
        lambda: Gaussian([0.0, np.nan], 1.0),
        lambda: Gaussian(0.0, [1.0, np.inf]),
        lambda: Gaussian(0.0, [1.0, 0.0]),
        lambda: Gaussian(0.0, -1.0),
        lambda: MultivariateGaussian([np.nan, 0.0], np.eye(2)),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, np.nan], [np.nan, 1.0]]),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]),
        lambda: MultivariateGaussian([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]),
        lambda: MultivariateGaussian(
            np.zeros((2, 2)), np.stack([np.eye(2), -np.eye(2)])
        ),
        lambda: Gamma([1.0, 0.0], 1.0),
        lambda: Gamma(1.0, [1.0, -2.0]),
        lambda: Gamma(np.nan, 1.0),
        lambda: Gamma(1.0, np.inf),
        lambda: Dirichlet([1.0, 0.0, 2.0]),
        lambda: Dirichlet([[1.0, 1.0], [1.0, -1.0]]),
        lambda: Dirichlet([1.0, np.nan]),
        lambda: Dirichlet([1.0, np.inf]),
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


@pytest.mark.parametrize("family", sorted(FACTORIES))
def test_sample_shapes_and_reproducibility(family):
    q = FACTORIES[family](np.random.default_rng(18))
    event = q.mean().shape[len(q.batch_shape):]
    assert q.sample().shape == q.batch_shape + event
    assert q.sample(4).shape == (4,) + q.batch_shape + event
    assert q.sample((2, 5)).shape == (2, 5) + q.batch_shape + event
    assert_array_equal(q.sample(7, random_state=42), q.sample(7, random_state=42))
    assert_array_equal(
        q.sample(7, random_state=42),
        q.sample(7, random_state=np.random.RandomState(42)),
    )
    assert_array_equal(
        q.sample(7, random_state=np.random.default_rng(5)),
        q.sample(7, random_state=np.random.default_rng(5)),
    )
    assert not np.array_equal(
        q.sample(7, random_state=1), q.sample(7, random_state=2)
    )
    # a shared RandomState advances
    rs = np.random.RandomState(0)
    assert not np.array_equal(q.sample(3, random_state=rs), q.sample(3, random_state=rs))
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
        (Gaussian, ([0.5, -1.0], [2.0, 3.0])),
        (MultivariateGaussian, ([0.5, -1.0], [[2.0, 0.3], [0.3, 1.0]])),
        (Gamma, ([2.0, 0.5], [3.0, 1.5])),
        (Dirichlet, ([[0.5, 2.0, 3.0]],)),
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
    assert q32.sample(3, random_state=0).dtype == np.float32
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
    assert Gaussian(_f32([1.0]), 2.0).natural[0].dtype == np.float32
    assert Gaussian(1.0, 2.0).natural[0].dtype == np.float64
    assert Gaussian([1, 2], 3).natural[0].dtype == np.float64
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
    w = Wishart.from_natural(-b[:, None, None] * np.eye(1), a - 1.0)
    g = Gamma(a, b)
    assert_allclose(w.mean()[:, 0, 0], g.mean(), rtol=1e-12)
    assert_allclose(w.expected_log_det(), g.expected_log(), rtol=1e-12)
    assert_allclose(w.entropy(), g.entropy(), rtol=1e-10)
    p = Wishart.from_natural(-1.5 * np.eye(1), 0.2)
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
    p = Wishart(4.0, np.array([[0.5, 0.1], [0.1, 0.8]]))
    kl = q.kl(p)
    ref_p = stats.wishart(4.0, p.scale)
    for b in range(2):
        ref_q = stats.wishart(q.df[b], q.scale[b])
        x = ref_q.rvs(size=N_MC // 4, random_state=rng)
        assert_mc_close(ref_q.logpdf(np.moveaxis(x, 0, -1)) - ref_p.logpdf(np.moveaxis(x, 0, -1)), kl[b])


def test_wishart_sample_moments():
    q = Wishart([3.5, 8.0], np.array([[[1.0, 0.3], [0.3, 0.5]], [[0.2, -0.1], [-0.1, 0.4]]]))
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
    assert_array_equal(Wishart.valid_natural(eta1, eta2), [True, False, False, False, False])
    with pytest.raises(ValueError):
        Wishart(0.5, eye).validate()  # df <= d - 1
    with pytest.raises(ValueError):
        Wishart(3.0, -eye).validate()
