"""Tests of skvi.likelihoods against independent references.

References: central finite differences (derivatives), ``scipy.integrate.quad``
against the normal density (expectations and predictive quantities),
``scipy.stats`` (log-pmfs/pdfs and conditional moments), closed forms where
they exist, and a 400-digit ``decimal`` evaluation of the Bernoulli and
ordinal log-probabilities in the far tails.
"""

import decimal
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats
from scipy.special import expit

from skvi.likelihoods import (
    Bernoulli,
    Gaussian,
    Likelihood,
    Ordinal,
    Poisson,
    get_likelihood,
)

NOISE_VARIANCE = 0.7
N_CATEGORIES = 5
SLOPE = 2.0
THRESHOLDS = np.arange(N_CATEGORIES - 1) + 0.5  # the documented default


def _make(name):
    return {
        "gaussian": lambda: Gaussian(noise_variance=NOISE_VARIANCE),
        "bernoulli": Bernoulli,
        "poisson-exp": lambda: Poisson(link="exp"),
        "poisson-softplus": lambda: Poisson(link="softplus"),
        "ordinal": lambda: Ordinal(n_categories=N_CATEGORIES, slope=SLOPE),
    }[name]()


def _targets(name, rng, n):
    if name == "gaussian":
        return rng.normal(0.0, 1.5, n)
    if name == "bernoulli":
        return rng.integers(0, 2, n).astype(float)
    if name == "poisson-exp":
        return rng.integers(0, 6, n).astype(float)
    if name == "poisson-softplus":
        return rng.integers(0, 15, n).astype(float)
    return rng.integers(0, N_CATEGORIES, n).astype(float)


NAMES = ["gaussian", "bernoulli", "poisson-exp", "poisson-softplus", "ordinal"]


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def gauss_expect(g, mean, var):
    """``E[g(f)]`` for ``f ~ N(mean, var)`` by adaptive quadrature."""
    sd = math.sqrt(var)
    norm = 1.0 / (sd * math.sqrt(2.0 * math.pi))
    val, _ = integrate.quad(
        lambda f: g(f) * norm * math.exp(-0.5 * ((f - mean) / sd) ** 2),
        mean - 12 * sd,
        mean + 12 * sd,
        epsabs=1e-13,
        epsrel=1e-13,
        limit=400,
    )
    return val


def ordinal_probs_ref(f):
    """``p(y = k | f)`` as differences of sigmoids at the default thresholds."""
    cdf = np.concatenate(([0.0], expit(SLOPE * (THRESHOLDS - f)), [1.0]))
    return np.diff(cdf)


def _dec(x):
    return decimal.Decimal(repr(float(x)))


def _sigmoid_decimal(x):
    return 1 / (1 + (-x).exp())


def ordinal_logp_decimal(k, f):
    """``log p(y = k | f)`` evaluated in 400-digit decimal arithmetic."""
    with decimal.localcontext() as ctx:
        ctx.prec = 400
        edges = [None] + [_dec(b) for b in THRESHOLDS] + [None]
        s, fd = _dec(SLOPE), _dec(f)
        upper = 1 if edges[k + 1] is None else _sigmoid_decimal(s * (edges[k + 1] - fd))
        lower = 0 if edges[k] is None else _sigmoid_decimal(s * (edges[k] - fd))
        return float((upper - lower).ln())


def bernoulli_logp_decimal(y, f):
    """``log p(y | f) = log sigmoid(+-f)`` in 400-digit decimal arithmetic."""
    with decimal.localcontext() as ctx:
        ctx.prec = 400
        x = _dec(f) if y == 1 else -_dec(f)
        return float(_sigmoid_decimal(x).ln())


def ordinal_probs_scalar(f):
    """``ordinal_probs_ref`` for a scalar ``f`` with the math module (fast)."""
    cdf = [0.0] + [1.0 / (1.0 + math.exp(-SLOPE * (b - f))) for b in THRESHOLDS] + [1.0]
    return [cdf[k + 1] - cdf[k] for k in range(N_CATEGORIES)]


def _sig(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def conditional_moments_ref(name, f):
    """``(E[y|f], Var[y|f])`` in closed form for scalar ``f``: normal
    ``(f, s2)``, Bernoulli ``(p, p(1-p))``, Poisson ``(rate, rate)``, and the
    ordinal from its category probabilities."""
    if name == "gaussian":
        return f, NOISE_VARIANCE
    if name == "bernoulli":
        p = _sig(f)
        return p, p * (1.0 - p)
    if name == "poisson-exp":
        return math.exp(f), math.exp(f)
    if name == "poisson-softplus":
        rate = math.log1p(math.exp(f))
        return rate, rate
    p = ordinal_probs_scalar(f)
    m = sum(k * pk for k, pk in enumerate(p))
    return m, sum(k * k * pk for k, pk in enumerate(p)) - m * m


def lik_ref(name, y, f):
    """``p(y | f)`` in closed form for scalar ``y``, ``f``."""
    if name == "gaussian":
        return math.exp(-0.5 * (y - f) ** 2 / NOISE_VARIANCE) / math.sqrt(
            2 * math.pi * NOISE_VARIANCE
        )
    if name == "bernoulli":
        return _sig(f) if y == 1 else _sig(-f)
    if name in ("poisson-exp", "poisson-softplus"):
        rate = math.exp(f) if name == "poisson-exp" else math.log1p(math.exp(f))
        return rate**y * math.exp(-rate) / math.factorial(int(y))
    return ordinal_probs_scalar(f)[int(y)]


def log_lik_ref(name, y, f):
    """``log p(y | f)`` from scipy.stats (or sigmoid differences)."""
    if name == "gaussian":
        return stats.norm.logpdf(y, f, np.sqrt(NOISE_VARIANCE))
    if name == "bernoulli":
        return stats.bernoulli.logpmf(y, expit(f))
    if name == "poisson-exp":
        return stats.poisson.logpmf(y, np.exp(f))
    if name == "poisson-softplus":
        return stats.poisson.logpmf(y, np.log1p(np.exp(f)))
    return np.log(ordinal_probs_ref(f)[int(y)])


# --------------------------------------------------------------------------
# log densities against scipy.stats
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_logpdf_matches_scipy_stats(name):
    lik = _make(name)
    rng = np.random.default_rng(0)
    y = _targets(name, rng, 40)
    f = rng.uniform(-3.0, 3.0, 40)
    expected = [log_lik_ref(name, yi, fi) for yi, fi in zip(y, f)]
    assert_allclose(lik.logpdf(y, f), expected, rtol=1e-12, atol=1e-13)


def test_poisson_sigmoid_rate_link_is_refused_with_a_pointer_to_softplus():
    # A rate sigmoid(f) cannot exceed 1, so it cannot fit counts above 1.
    with pytest.raises(ValueError, match="softplus"):
        Poisson(link="logistic")


def test_bernoulli_logpdf_is_scipy_bernoulli_logpmf_at_expit():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 50).astype(float)
    # scipy's log(1 - p) loses relative accuracy once p rounds near 1, so the
    # scipy reference is used where it is itself accurate to ~1e-12 ...
    f = rng.uniform(-8.0, 8.0, 50)
    assert_allclose(
        Bernoulli().logpdf(y, f),
        stats.bernoulli.logpmf(y, expit(f)),
        rtol=1e-12,
        atol=1e-14,
    )
    # ... and a 400-digit evaluation in the tails, where the log-density must
    # stay finite and exact to machine precision (log sigmoid(-700) = -700;
    # log-probabilities within ~1e-16 of 0 are resolved absolutely).
    for f in (-700.0, -50.0, -19.0, 19.0, 50.0, 700.0):
        for yi in (0.0, 1.0):
            got = Bernoulli().logpdf(yi, f)
            assert np.isfinite(got)
            assert_allclose(got, bernoulli_logp_decimal(yi, f), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_conditional_moments_match_scipy_stats(name):
    lik = _make(name)
    f = np.linspace(-3.0, 3.0, 13)
    if name == "gaussian":
        mean, var = f, np.full_like(f, NOISE_VARIANCE)
    elif name == "bernoulli":
        mean, var = stats.bernoulli(expit(f)).stats("mv")
    elif name == "poisson-exp":
        mean, var = stats.poisson(np.exp(f)).stats("mv")
    elif name == "poisson-softplus":
        mean, var = stats.poisson(np.log1p(np.exp(f))).stats("mv")
    else:
        k = np.arange(N_CATEGORIES)
        moments = [
            stats.rv_discrete(values=(k, ordinal_probs_ref(fi))).stats(moments="mv") for fi in f
        ]
        mean, var = np.array(moments).T
    assert_allclose(lik.conditional_mean(f), mean, rtol=1e-12, atol=1e-14)
    assert_allclose(lik.conditional_variance(f), var, rtol=1e-10, atol=1e-14)


# --------------------------------------------------------------------------
# derivatives against central finite differences
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_derivatives_match_finite_differences(name):
    lik = _make(name)
    rng = np.random.default_rng(3)
    y = _targets(name, rng, 30)
    f = rng.uniform(-3.0, 3.0, 30)
    h = 1e-5 * np.maximum(1.0, np.abs(f))
    fd1 = (lik.logpdf(y, f + h) - lik.logpdf(y, f - h)) / (2 * h)
    fd2 = (lik.dlogpdf(y, f + h) - lik.dlogpdf(y, f - h)) / (2 * h)
    assert_allclose(lik.dlogpdf(y, f), fd1, rtol=1e-6, atol=1e-8)
    assert_allclose(lik.d2logpdf(y, f), fd2, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------
# expectations under a Gaussian q(f)
# --------------------------------------------------------------------------
def _expectation_problem(name, seed, n=6, var_range=(0.05, 1.0)):
    rng = np.random.default_rng(seed)
    y = _targets(name, rng, n)
    mean = rng.uniform(-1.5, 1.5, n)
    var = rng.uniform(*var_range, n)
    return y, mean, var


def _quad_expectations(lik, y, mean, var, power=1):
    fns = (lik.logpdf, lik.dlogpdf, lik.d2logpdf)
    return np.array(
        [
            [gauss_expect(lambda f: fn(yi, f) ** power, mi, vi) for yi, mi, vi in zip(y, mean, var)]
            for fn in fns
        ]
    )


@pytest.mark.parametrize("name", NAMES)
def test_quadrature_expectations_match_scipy_quad(name):
    lik = _make(name)
    y, mean, var = _expectation_problem(name, 4)
    got = np.array(lik.expectations(y, mean, var, method="quadrature", n_samples=60))
    expected = _quad_expectations(lik, y, mean, var)
    assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_monte_carlo_expectations_within_four_standard_errors(name):
    lik = _make(name)
    y, mean, var = _expectation_problem(name, 5, n=8, var_range=(0.05, 2.0))
    n_samples = 4000
    got = np.array(
        lik.expectations(y, mean, var, method="mc", n_samples=n_samples, random_state=11)
    )
    first = _quad_expectations(lik, y, mean, var)
    second = _quad_expectations(lik, y, mean, var, power=2)
    se = np.sqrt(np.maximum(second - first**2, 0.0) / n_samples)
    # The Gaussian's expectations are exact (zero error); others must be
    # within 4 standard errors of the quadrature value.
    assert np.all(np.abs(got - first) <= 4.0 * se + 1e-12), (got, first, se)

    # Same seed: bit-identical.  Another seed: different draws (not for the
    # Gaussian, whose expectations are closed-form whatever the method).
    again = np.array(
        lik.expectations(y, mean, var, method="mc", n_samples=n_samples, random_state=11)
    )
    assert_array_equal(got, again)
    other = np.array(
        lik.expectations(y, mean, var, method="mc", n_samples=n_samples, random_state=12)
    )
    if name == "gaussian":
        assert_array_equal(other, got)
    else:
        assert np.all(other[0] != got[0])


def test_expectations_reject_unknown_method():
    with pytest.raises(ValueError, match="method"):
        Bernoulli().expectations(
            np.array([1.0]), np.array([0.0]), np.array([1.0]), method="laplace"
        )


# --------------------------------------------------------------------------
# predictive quantities
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_predictive_quantities_match_scipy_quad(name):
    lik = _make(name)
    y, mean, var = _expectation_problem(name, 6, n=6, var_range=(0.05, 0.5))
    pred_mean = lik.predictive_mean(mean, var)
    pred_var = lik.predictive_variance(mean, var)
    pred_logpdf = lik.predictive_logpdf(y, mean, var)
    for i, (yi, mi, vi) in enumerate(zip(y, mean, var)):
        e_mean = gauss_expect(lambda f: conditional_moments_ref(name, f)[0], mi, vi)
        e_mean2 = gauss_expect(lambda f: conditional_moments_ref(name, f)[0] ** 2, mi, vi)
        e_var = gauss_expect(lambda f: conditional_moments_ref(name, f)[1], mi, vi)
        e_lik = gauss_expect(lambda f: lik_ref(name, yi, f), mi, vi)
        assert_allclose(pred_mean[i], e_mean, rtol=1e-7, atol=1e-10)
        assert_allclose(pred_var[i], e_var + e_mean2 - e_mean**2, rtol=1e-7, atol=1e-10)
        assert_allclose(pred_logpdf[i], np.log(e_lik), rtol=1e-7, atol=1e-7)


def test_poisson_exp_predictive_mean_and_variance_closed_form():
    rng = np.random.default_rng(7)
    mean = rng.uniform(-2.0, 2.0, 10)
    var = rng.uniform(0.05, 3.0, 10)
    lik = Poisson(link="exp")
    rate = np.exp(mean + var / 2)
    assert_allclose(lik.predictive_mean(mean, var), rate, rtol=1e-12)
    # Poisson-lognormal: Var[y] = E[e^f] + Var[e^f].
    assert_allclose(
        lik.predictive_variance(mean, var),
        rate + np.exp(2 * mean + var) * np.expm1(var),
        rtol=1e-10,
    )


def test_gaussian_predictive_closed_form():
    rng = np.random.default_rng(8)
    y = rng.normal(0.0, 2.0, 10)
    mean = rng.normal(0.0, 1.0, 10)
    var = rng.uniform(0.05, 3.0, 10)
    lik = Gaussian(noise_variance=NOISE_VARIANCE)
    assert_allclose(
        lik.predictive_logpdf(y, mean, var),
        stats.norm.logpdf(y, mean, np.sqrt(var + NOISE_VARIANCE)),
        rtol=1e-13,
    )
    assert_allclose(lik.predictive_mean(mean, var), mean, rtol=1e-15)
    assert_allclose(lik.predictive_variance(mean, var), var + NOISE_VARIANCE, rtol=1e-15)


def test_bernoulli_predictive_mean_is_half_at_zero_mean():
    var = np.array([0.01, 0.5, 1.0, 4.0, 25.0, 100.0])
    assert_allclose(Bernoulli().predictive_mean(np.zeros_like(var), var), 0.5, rtol=0, atol=1e-14)
    # The marginal of y is Bernoulli(p) with p the predictive mean.
    assert_allclose(
        Bernoulli().predictive_variance(np.zeros_like(var), var), 0.25, rtol=0, atol=1e-14
    )


# --------------------------------------------------------------------------
# ordinal specifics
# --------------------------------------------------------------------------
def test_ordinal_category_probabilities_are_sigmoid_differences():
    lik = _make("ordinal")
    f = np.linspace(-4.0, 8.0, 25)
    probs = lik.category_probabilities(f)
    assert_allclose(probs, np.array([ordinal_probs_ref(fi) for fi in f]), rtol=1e-12, atol=1e-15)
    assert_allclose(probs.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    assert np.all(probs >= 0)
    # The logpdf is the log of the observed category's probability.
    for k in range(N_CATEGORIES):
        assert_allclose(
            lik.logpdf(np.full_like(f, k), f), np.log(probs[:, k]), rtol=1e-10, atol=1e-12
        )


def test_ordinal_logpdf_finite_and_exact_in_the_tails():
    lik = _make("ordinal")
    for f in (-50.0, -20.0, 0.3, 20.0, 50.0):
        for k in range(N_CATEGORIES):
            got = lik.logpdf(np.array([float(k)]), np.array([f]))[0]
            assert np.isfinite(got)
            assert_allclose(got, ordinal_logp_decimal(k, f), rtol=1e-12, atol=0)
    # Where the probabilities themselves do not underflow (f = +50: every
    # category is exp(-~95) or more), logpdf equals log category_probabilities.
    probs = lik.category_probabilities(np.array([50.0]))[0]
    # (log of a probability within 1e-16 of 1 is resolved only absolutely.)
    assert_allclose(lik.logpdf(np.arange(5.0), 50.0), np.log(probs), rtol=1e-12, atol=1e-15)


def test_ordinal_is_log_concave():
    lik = _make("ordinal")
    f = np.linspace(-50.0, 50.0, 401)
    for k in range(N_CATEGORIES):
        d2 = lik.d2logpdf(np.full_like(f, k), f)
        assert np.all(d2 < 0.0)
        # and it is bounded by the slope: -s^2/2 <= d2 (sum of two s^2/4 terms)
        assert np.all(d2 >= -(SLOPE**2) / 2)


def test_ordinal_predictive_probabilities_match_quad():
    lik = _make("ordinal")
    mean = np.array([-1.0, 0.4, 1.7, 3.2])
    var = np.array([0.1, 0.3, 0.5, 0.2])
    probs = lik.predictive_probabilities(mean, var)
    assert_allclose(probs.sum(axis=-1), 1.0, rtol=0, atol=1e-13)
    for i, (m, v) in enumerate(zip(mean, var)):
        for k in range(N_CATEGORIES):
            ref = gauss_expect(lambda f: ordinal_probs_scalar(f)[k], m, v)
            assert_allclose(probs[i, k], ref, rtol=1e-7, atol=1e-10)


def test_ordinal_default_thresholds_and_categories():
    lik = Ordinal(n_categories=N_CATEGORIES, slope=SLOPE)
    assert lik.n_categories == N_CATEGORIES
    assert_array_equal(lik.thresholds, THRESHOLDS)


# --------------------------------------------------------------------------
# target validation and the factory
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, bad",
    [
        ("bernoulli", 2.0),
        ("bernoulli", 0.5),
        ("bernoulli", np.nan),
        ("poisson-exp", -1.0),
        ("poisson-exp", 1.5),
        ("poisson-exp", np.nan),
        ("poisson-softplus", -1.0),
        ("poisson-softplus", 1.5),
        ("poisson-softplus", np.nan),
        ("ordinal", 5.0),
        ("ordinal", -1.0),
        ("ordinal", 2.5),
        ("ordinal", np.nan),
        ("gaussian", np.nan),
        ("gaussian", np.inf),
    ],
)
def test_validate_targets_rejects_out_of_support(name, bad):
    lik = _make(name)
    good = _targets(name, np.random.default_rng(9), 5)
    assert_array_equal(lik.validate_targets(good), good)
    with pytest.raises(ValueError):
        lik.validate_targets(np.append(good, bad))


def test_validate_targets_accepts_the_whole_support():
    assert_array_equal(Ordinal(n_categories=5).validate_targets([0, 1, 2, 3, 4]), np.arange(5.0))
    assert_array_equal(Bernoulli().validate_targets([0, 1, 1]), [0.0, 1.0, 1.0])
    assert_array_equal(Poisson().validate_targets([0, 3, 170]), [0.0, 3.0, 170.0])


@pytest.mark.parametrize("bad", ["gamma", "Gaussian ", "", None, ["poisson"], 3])
def test_get_likelihood_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match="likelihood"):
        get_likelihood(bad)


def test_get_likelihood_names_and_instances():
    assert get_likelihood("gaussian") == Gaussian(1.0)
    assert get_likelihood("bernoulli") == Bernoulli()
    assert get_likelihood("poisson") == Poisson("exp")
    assert get_likelihood("ordinal") == Ordinal(n_categories=5, slope=1.0)
    assert get_likelihood("poisson-softplus") == Poisson("softplus")
    lik = Poisson("softplus")
    assert get_likelihood(lik) is lik
    assert isinstance(get_likelihood("ordinal"), Likelihood)
    # default ordinal: p(y=k | f) = sigmoid(b_k - f) - sigmoid(b_{k-1} - f)
    assert_allclose(
        np.exp(get_likelihood("ordinal").logpdf(2.0, 0.7)),
        expit(2.5 - 0.7) - expit(1.5 - 0.7),
        rtol=1e-13,
    )


# ------------------------------------------------------------ softplus link
def test_softplus_poisson_derivatives_against_finite_differences():
    from skvi.likelihoods import Poisson

    lik = Poisson(link="softplus")
    y = np.array([0.0, 1.0, 3.0, 20.0, 0.0, 5.0])
    f = np.array([-40.0, -3.0, 0.0, 2.5, 8.0, 35.0])
    h = 1e-5
    d1 = (lik.logpdf(y, f + h) - lik.logpdf(y, f - h)) / (2 * h)
    d2 = (lik.dlogpdf(y, f + h) - lik.dlogpdf(y, f - h)) / (2 * h)
    np.testing.assert_allclose(lik.dlogpdf(y, f), d1, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(lik.d2logpdf(y, f), d2, rtol=1e-5, atol=1e-9)
    # The rate and the log-likelihood against scipy's Poisson.
    from scipy.stats import poisson

    rate = np.log1p(np.exp(f[1:5]))
    np.testing.assert_allclose(lik.conditional_mean(f[1:5]), rate, rtol=1e-12)
    np.testing.assert_allclose(lik.logpdf(y[1:5], f[1:5]), poisson.logpmf(y[1:5], rate), rtol=1e-10)
    assert np.all(lik.d2logpdf(y, f) <= 0)  # log-concave


def test_softplus_poisson_expectations_against_quadrature():
    from scipy.integrate import quad
    from scipy.stats import norm

    from skvi.likelihoods import Poisson

    lik = Poisson(link="softplus")
    y, m, v = np.array([4.0]), np.array([1.2]), np.array([0.7])
    got = lik.expectations(y, m, v, method="quadrature", n_samples=60)
    for value, fn in zip(got, (lik.logpdf, lik.dlogpdf, lik.d2logpdf)):
        ref = quad(lambda t: fn(y, np.array([t]))[0] * norm.pdf(t, m[0], np.sqrt(v[0])), -30, 30)[0]
        assert value[0] == pytest.approx(ref, rel=1e-8)


def test_poisson_regression_with_the_softplus_link_recovers_its_weights():
    from scipy.optimize import minimize

    from skvi import SVIPoissonRegression
    from skvi.likelihoods import Poisson

    rng = np.random.RandomState(0)
    X = rng.normal(size=(4000, 3))
    w = np.array([1.5, -1.0, 0.5])
    y = rng.poisson(np.log1p(np.exp(1.0 + X @ w)))
    est = SVIPoissonRegression(link="softplus", prior_variance=100.0, random_state=0).fit(X, y)
    # The maximum-likelihood fit of the same model, by scipy: with 4000 rows
    # and a wide prior the posterior mean sits within a few of its standard
    # errors (~0.02).
    lik = Poisson(link="softplus")
    design = np.hstack([X, np.ones((4000, 1))])
    res = minimize(
        lambda b: -lik.logpdf(y, design @ b).sum(),
        np.zeros(4),
        jac=lambda b: -design.T @ lik.dlogpdf(y, design @ b),
        method="BFGS",
    )
    np.testing.assert_allclose(np.r_[est.coef_.ravel(), est.intercept_], res.x, atol=0.03)


# --------------------------------------------------------------------------
# log marginal likelihood log Z(y; a, v) = log int N(f; a, v) p(y | f) df
# --------------------------------------------------------------------------
LM_LIKELIHOODS = {
    "poisson-exp": lambda: Poisson(link="exp"),
    "poisson-softplus": lambda: Poisson(link="softplus"),
    "bernoulli": Bernoulli,
    "gaussian": lambda: Gaussian(noise_variance=NOISE_VARIANCE),
}
LM_TARGETS = {
    "poisson-exp": (0.0, 3.0, 12.0),
    "poisson-softplus": (0.0, 3.0, 12.0),
    "bernoulli": (0.0, 1.0),
    "gaussian": (-1.3, 0.4, 2.5),
}
# (a, v): a near-point mass, moderate, and wide q(f)
LM_MEAN_VAR = [(-1.0, 1e-3), (0.5, 0.3), (2.0, 1.0), (-0.5, 4.0), (1.5, 4.0)]


def _log1pexp(x):
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def lm_log_lik(name, y, f):
    """``log p(y | f)`` for scalars, written out with the math module."""
    if name == "gaussian":
        return -0.5 * math.log(2 * math.pi * NOISE_VARIANCE) - 0.5 * (y - f) ** 2 / NOISE_VARIANCE
    if name == "bernoulli":
        return -_log1pexp(-f) if y == 1 else -_log1pexp(f)
    if name == "poisson-exp":
        return y * f - math.exp(f) - math.lgamma(y + 1)
    rate = _log1pexp(f)  # poisson-softplus
    return y * math.log(rate) - rate - math.lgamma(y + 1)


def test_lm_log_lik_matches_scipy_stats():
    f = np.array([-4.0, -0.3, 0.0, 1.7, 5.0])
    for y in (0.0, 3.0):
        refs = {
            "poisson-exp": stats.poisson.logpmf(y, np.exp(f)),
            "poisson-softplus": stats.poisson.logpmf(y, np.log1p(np.exp(f))),
            "gaussian": stats.norm.logpdf(y, f, math.sqrt(NOISE_VARIANCE)),
        }
        if y == 0.0:
            refs["bernoulli"] = stats.bernoulli.logpmf(y, expit(f))
        for name, ref in refs.items():
            assert_allclose([lm_log_lik(name, y, fi) for fi in f], ref, rtol=1e-12)


def _tilted_integrals(name, y, a, v, powers=(0,)):
    """``log int z^k phi(z) p(y | a + sqrt(v) z) dz`` for each k, by scipy quad.

    The integrand is rescaled by its maximum on a grid and the range split at
    the maximiser, so that narrow peaks far from ``z = 0`` are found.
    """
    sd = math.sqrt(v)

    def log_integrand(z):
        return -0.5 * z * z - 0.5 * math.log(2 * math.pi) + lm_log_lik(name, y, a + sd * z)

    grid = np.linspace(-40.0, 40.0, 8001)
    values = np.array([log_integrand(z) for z in grid])
    peak = grid[np.argmax(values)]
    c = values.max()
    out = []
    for k in powers:
        total = 0.0
        for lo, hi in ((-40.0, peak), (peak, 40.0)):
            total += integrate.quad(
                lambda z, k=k: z**k * math.exp(log_integrand(z) - c),
                lo,
                hi,
                epsabs=0.0,
                epsrel=1e-13,
                limit=500,
            )[0]
        out.append(total)
    return c, out


def quad_log_z(name, y, a, v):
    c, (i0,) = _tilted_integrals(name, y, a, v)
    return c + math.log(i0)


def quad_log_z_derivatives(name, y, a, v):
    """``log Z``, ``d log Z / da`` and ``d^2 log Z / da^2`` from the tilted
    moments of ``z = (f - a) / sqrt(v)``: differentiating ``N(f; a, v)`` under
    the integral, ``Z_a / Z = E[z] / sqrt(v)`` and
    ``Z_aa / Z = (E[z^2] - 1) / v``."""
    c, (i0, i1, i2) = _tilted_integrals(name, y, a, v, powers=(0, 1, 2))
    d1 = i1 / i0 / math.sqrt(v)
    return c + math.log(i0), d1, (i2 / i0 - 1.0) / v - d1 * d1


def _lm_cases(name):
    return [(y, a, v) for y in LM_TARGETS[name] for a, v in LM_MEAN_VAR]


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", sorted(LM_LIKELIHOODS))
def test_log_marginal_matches_scipy_quad(name):
    lik = LM_LIKELIHOODS[name]()
    y, a, v = (np.array(c) for c in zip(*_lm_cases(name)))
    ref = np.array([quad_log_z_derivatives(name, *case) for case in _lm_cases(name)]).T
    got = np.array(lik.log_marginal(y, a, v, n_samples=200))
    assert got.shape == (3, len(y))
    assert_allclose(got, ref, rtol=1e-8, atol=1e-9)
    # the default 20 nodes: the adaptive rule is already close (the worst case
    # is d2 for the exp link at y = 0, v = 4, whose tilted density is skewed)
    got20 = np.array(lik.log_marginal(y, a, v))
    assert_allclose(got20, ref, rtol=2e-2, atol=2e-3)
    assert_allclose(got20[0], ref[0], rtol=2e-4, atol=2e-4)
    # ... and exact for the conjugate Gaussian: Z = N(y; a, v + s2)
    if name == "gaussian":
        total = v + NOISE_VARIANCE
        exact = (stats.norm.logpdf(y, a, np.sqrt(total)), (y - a) / total, -1.0 / total)
        for n in (2, 20):
            assert_allclose(lik.log_marginal(y, a, v, n_samples=n), exact, rtol=1e-12)
        # one node (at the tilted mean) still gives log Z and d1 exactly
        assert_allclose(lik.log_marginal(y, a, v, n_samples=1)[:2], exact[:2], rtol=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", sorted(LM_LIKELIHOODS))
def test_log_marginal_derivatives_match_finite_differences_of_quad(name):
    lik = LM_LIKELIHOODS[name]()
    for y, a, v in _lm_cases(name):
        log_z, d1, d2 = (float(x) for x in lik.log_marginal(y, a, v, n_samples=100))
        centre = quad_log_z(name, y, a, v)
        assert_allclose(log_z, centre, rtol=1e-9, atol=1e-9)
        # in the mean: central differences of the quad value
        h1, h2 = 1e-4, 2e-3
        fd1 = (quad_log_z(name, y, a + h1, v) - quad_log_z(name, y, a - h1, v)) / (2 * h1)
        plus, minus = quad_log_z(name, y, a + h2, v), quad_log_z(name, y, a - h2, v)
        fd2 = (plus - 2 * centre + minus) / h2**2
        assert_allclose(d1, fd1, rtol=1e-6, atol=1e-6, err_msg=f"{(y, a, v)}")
        assert_allclose(d2, fd2, rtol=1e-4, atol=1e-4, err_msg=f"{(y, a, v)}")
        # in the variance: the heat equation, d log Z / dv = (d2 + d1^2) / 2
        hv = 1e-3 * v
        fdv = (quad_log_z(name, y, a, v + hv) - quad_log_z(name, y, a, v - hv)) / (2 * hv)
        assert_allclose(0.5 * (d2 + d1 * d1), fdv, rtol=1e-5, atol=1e-5, err_msg=f"{(y, a, v)}")


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", ["poisson-exp", "poisson-softplus", "bernoulli", "gaussian"])
def test_log_marginal_monte_carlo_close_to_quadrature(name):
    lik = LM_LIKELIHOODS[name]()
    y, a, v = (np.array(c) for c in zip(*_lm_cases(name)))
    ref = np.array(lik.log_marginal(y, a, v, n_samples=100))
    # 40 independent runs of 5000 draws each, through broadcasting: the
    # leading axis of mean and var is the run
    runs, n_samples = 40, 5000
    a_runs = np.broadcast_to(a, (runs, len(a)))
    got = np.array(lik.log_marginal(y, a_runs, v, method="mc", n_samples=n_samples, random_state=0))
    assert got.shape == (3, runs, len(y))
    est = got.mean(axis=1)
    se = got.std(axis=1, ddof=1) / np.sqrt(runs)
    # within 5 standard errors of the (much more accurate) quadrature value;
    # the small floor covers the O(1 / n_samples) bias of the ratios
    assert np.all(np.abs(est - ref) <= 5.0 * se + 1e-3 * se.max(axis=1, keepdims=True) + 1e-12), (
        est,
        ref,
        se,
    )
    # and one run with as many draws in total is as close
    big = np.array(
        lik.log_marginal(y, a, v, method="mc", n_samples=runs * n_samples, random_state=1)
    )
    assert np.all(np.abs(big - ref) <= 5.0 * se + 1e-12), (big, ref, se)
    # reproducible for a seed, different for another, Generators accepted
    again = lik.log_marginal(y, a, v, method="mc", n_samples=50, random_state=3)
    assert_array_equal(again, lik.log_marginal(y, a, v, method="mc", n_samples=50, random_state=3))
    other = lik.log_marginal(y, a, v, method="mc", n_samples=50, random_state=4)
    assert not np.array_equal(again[0], other[0])
    gen = lik.log_marginal(
        y, a, v, method="mc", n_samples=50, random_state=np.random.default_rng(3)
    )
    assert gen[0].shape == y.shape


def test_log_marginal_broadcasting():
    lik = Poisson(link="softplus")
    rng = np.random.default_rng(21)
    n, q = 4, 3
    y = rng.integers(0, 8, (n, 1)).astype(float)
    mean = rng.normal(0.0, 1.0, (n, q))
    var = rng.uniform(0.01, 3.0, (n, q))
    got = lik.log_marginal(y, mean, var)
    for out in got:
        assert out.shape == (n, q)
    # elementwise calls agree exactly with the broadcast one
    for i in range(n):
        for j in range(q):
            single = lik.log_marginal(y[i, 0], mean[i, j], var[i, j])
            for out, s in zip(got, single):
                assert np.shape(s) == ()
                assert_allclose(out[i, j], s, rtol=1e-13)
    # y of shape (n, q), a shared scalar variance, and a 3-d layout
    full = lik.log_marginal(np.broadcast_to(y, (n, q)), mean, var)
    for a, b in zip(full, got):
        assert_allclose(a, b, rtol=1e-13)
    scalar_var = lik.log_marginal(y, mean, 0.5)
    assert scalar_var[0].shape == (n, q)
    three = lik.log_marginal(y[:, :, None], mean[:, :, None], np.stack([var, 2 * var], axis=-1))
    assert three[1].shape == (n, q, 2)
    assert_allclose(three[1][..., 0], got[1], rtol=1e-13)
    # Monte Carlo draws independently for every broadcast element
    mc = lik.log_marginal(
        y, np.broadcast_to(mean[:, :1], (n, q)), 1.0, method="mc", n_samples=30, random_state=0
    )
    assert mc[0].shape == (n, q)
    assert not np.array_equal(mc[0][:, 0], mc[0][:, 1])


def test_log_marginal_point_mass_and_laplace():
    # var = 0: Z = p(y | a) and the derivatives are those of log p
    lik = Poisson(link="exp")
    y = np.array([0.0, 3.0, 12.0])
    a = np.array([-1.0, 0.5, 2.0])
    log_z, d1, d2 = lik.log_marginal(y, a, np.zeros(3))
    assert_allclose(log_z, stats.poisson.logpmf(y, np.exp(a)), rtol=1e-12)
    assert_allclose(d1, y - np.exp(a), rtol=1e-12)
    assert_allclose(d2, -np.exp(a), rtol=1e-12)
    # one node: the Laplace approximation of log Z at the mode of the tilted
    # density N(f; a, v) Poisson(y; e^f), a root found here by scipy's brentq
    from scipy.optimize import brentq

    for yi, ai, vi in ((12.0, -0.5, 4.0), (0.0, 1.5, 4.0), (3.0, 0.0, 0.3)):

        def grad(f, yi=yi, ai=ai, vi=vi):
            return yi - math.exp(f) - (f - ai) / vi

        mode = brentq(grad, -50.0, 50.0, xtol=1e-15)
        log_tilted = stats.norm.logpdf(mode, ai, math.sqrt(vi)) + stats.poisson.logpmf(
            yi, math.exp(mode)
        )
        laplace = log_tilted + 0.5 * math.log(2 * math.pi / (1.0 / vi + math.exp(mode)))
        got = lik.log_marginal(yi, ai, vi, n_samples=1)[0]
        assert_allclose(got, laplace, rtol=1e-12)


def test_log_marginal_consistent_with_predictive_logpdf_and_rejects_unknown_method():
    lik = Bernoulli()
    y, mean, var = _expectation_problem("bernoulli", 22, n=8, var_range=(0.05, 1.0))
    assert_allclose(
        lik.log_marginal(y, mean, var, n_samples=40)[0],
        lik.predictive_logpdf(y, mean, var),
        rtol=1e-10,
    )
    with pytest.raises(ValueError, match="method"):
        lik.log_marginal(y, mean, var, method="laplace")


def test_expected_logpdf_keeps_the_poisson_closed_form():
    # E[log p] of the exp-link Poisson is y m - exp(m + v / 2) - log y!:
    # at variance 64 a 20-node rule is off by a third (-4.9e13 for -7.9e13).
    from scipy.special import gammaln

    y, mean, var = np.array([3.0, 0.0]), np.array([0.0, 1.0]), np.array([64.0, 0.5])
    exact = y * mean - np.exp(mean + var / 2) - gammaln(y + 1)
    assert_allclose(Poisson().expected_logpdf(y, mean, var), exact, rtol=1e-12)
    assert_allclose(
        Bernoulli().expected_logpdf(np.array([1.0]), np.array([0.3]), np.array([2.0])),
        Bernoulli().expectations(
            np.array([1.0]), np.array([0.3]), np.array([2.0]), method="quadrature", n_samples=20
        )[0],
        rtol=1e-14,
    )
