"""Non-conjugate link nodes of skvi.networks against closed forms, quadrature and the GLM estimators.

``Bernoulli(Logistic(f))``, ``Poisson(Exp(f))`` and ``Categorical(Softmax(F))``
declared as networks are the models of :class:`skvi.SVILogisticRegression`,
:class:`skvi.SVIPoissonRegression` and
:class:`skvi.SVIOverdispersedPoissonRegression`: with the same prior and
deterministic full-batch steps they reach the same posterior.  The links'
moments are checked against one-dimensional quadrature (scipy's ``quad``)
and closed forms, and their messages against finite differences of the
bound.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

from skvi import (
    SVILogisticRegression,
    SVIOverdispersedPoissonRegression,
    SVIPoissonRegression,
)
from skvi.networks import (
    VB,
    Add,
    Bernoulli,
    Categorical,
    Exp,
    Gamma,
    GaussianARD,
    Logistic,
    NetworkError,
    Ordinal,
    Poisson,
    Softmax,
    SumMultiply,
    SVIBayesianNetwork,
)
from skvi.networks._moments import FixedGaussianMoments


def _binary(n=400, seed=0):
    rng = np.random.RandomState(seed)
    X = np.column_stack([rng.normal(size=(n, 3)), np.ones(n)])
    p = special.expit(X @ [2.0, -1.0, 0.5, -1.0])
    return X, (rng.uniform(size=n) < p).astype(float)


def _logistic(X_rows):
    w = GaussianARD(0.0, 1.0, shape=(X_rows.shape[1],), name="w")
    return Bernoulli(Logistic(SumMultiply("d,d->", X_rows, w)), name="y")


def _glm(estimator=SVILogisticRegression, **kw):
    # The network's model: prior N(0, I) on every weight, no separate
    # intercept, deterministic full-batch steps by the ELBO's quadrature.
    params = dict(
        prior_variance=1.0,
        fit_intercept=False,
        learning_method="batch",
        expectation="quadrature",
        tol=1e-14,
        max_iter=500,
    )
    params.update(kw)
    return estimator(**params)


def _mean_cov(node):
    m, mm = node.get_moments()
    return m, mm - np.outer(m, m)


# ------------------------------------------------------------ moments and messages
def test_logistic_moments_are_the_quadrature_of_log_sigmoid():
    f = GaussianARD(np.array([-2.0, 0.3, 4.0]), np.array([4.0, 0.5, 1.0]))
    link = Logistic(f)
    got = link.get_moments()[0]
    for i, (m, v) in enumerate([(-2.0, 0.25), (0.3, 2.0), (4.0, 1.0)]):
        for j, sign in enumerate((1.0, -1.0)):
            want = integrate.quad(
                lambda x, s=sign: -np.logaddexp(0.0, -s * x) * stats.norm.pdf(x, m, np.sqrt(v)),
                -np.inf,
                np.inf,
            )[0]
            np.testing.assert_allclose(got[i, j], want, rtol=1e-7, atol=1e-10)


def test_exp_moments_are_the_lognormal_mean_and_the_mean():
    f = GaussianARD(np.array([-1.0, 0.5, 2.0]), np.array([2.0, 1.0, 0.25]))
    rate, log_rate = Exp(f).get_moments()
    np.testing.assert_allclose(rate, np.exp([-1.0 + 0.25, 0.5 + 0.5, 2.0 + 2.0]), rtol=1e-14)
    np.testing.assert_allclose(log_rate, [-1.0, 0.5, 2.0])


def test_poisson_bound_is_the_quadrature_of_the_exact_expectation():
    # E_q[log Poisson(y | exp(f))] of f ~ N(m, v), against quad of the pmf.
    m, v = np.array([0.3, -1.0, 1.5]), np.array([0.5, 2.0, 0.1])
    y = np.array([2.0, 0.0, 7.0])
    obs = Poisson(Exp(GaussianARD(m, 1.0 / v)))
    obs.observe(y)
    want = sum(
        integrate.quad(
            lambda x, k=k, a=a, b=b: stats.poisson.logpmf(k, np.exp(x)) * stats.norm.pdf(x, a, b),
            a - 12 * b,
            a + 12 * b,
        )[0]
        for k, a, b in zip(y, m, np.sqrt(v))
    )
    np.testing.assert_allclose(obs.lower_bound_contribution(), want, rtol=1e-9)


def test_ordinal_moments_are_the_quadrature_of_the_category_log_probabilities():
    thresholds, slope = np.array([-1.0, 0.5, 2.0]), 2.0
    f = GaussianARD(np.array([-0.5, 1.0]), np.array([1.0, 4.0]))
    got = Ordinal(f, thresholds=thresholds, slope=slope).get_moments()[0]
    edges = np.r_[-np.inf, thresholds, np.inf]
    for i, (m, v) in enumerate([(-0.5, 1.0), (1.0, 0.25)]):
        for k in range(4):

            def log_p(x, k=k):
                return np.log(
                    special.expit(slope * (edges[k + 1] - x))
                    - special.expit(slope * (edges[k] - x))
                )

            want = integrate.quad(
                lambda x: log_p(x) * stats.norm.pdf(x, m, np.sqrt(v)),
                m - 12 * np.sqrt(v),
                m + 12 * np.sqrt(v),
            )[0]
            np.testing.assert_allclose(got[i, k], want, rtol=1e-6)


def test_ordinal_regression_network_is_the_elbo_optimum():
    # One weight: q(w) = N(m, s^2) maximising the ELBO, found by a
    # two-parameter optimiser with a fine Gauss-Hermite rule of its own.
    from scipy import optimize

    rng = np.random.RandomState(3)
    x = rng.normal(size=150) * 1.5
    edges = np.r_[-np.inf, 0.5, 1.5, 2.5, np.inf]
    f = 1.2 * x + rng.logistic(size=150)
    y = np.searchsorted(edges[1:-1], f)
    z, wz = np.polynomial.hermite.hermgauss(80)

    def negative_elbo(theta):
        m, log_s = theta
        s = np.exp(log_s)
        fs = x[:, None] * (m + np.sqrt(2.0) * s * z[None, :])
        p = special.expit(edges[y + 1][:, None] - fs) - special.expit(edges[y][:, None] - fs)
        with np.errstate(divide="ignore"):  # the optimiser's far trials: -inf, rejected
            data = np.sum(np.log(p) @ wz) / np.sqrt(np.pi)
        kl = 0.5 * (s * s + m * m - 1.0) - log_s
        return -(data - kl)

    best = optimize.minimize(
        negative_elbo,
        [0.0, -1.0],
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000},
    ).x

    def ordinal(X_rows):
        w = GaussianARD(0.0, 1.0, shape=(1,), name="w")
        return Categorical(Ordinal(SumMultiply("d,d->", X_rows, w), n_categories=4), name="y")

    net = SVIBayesianNetwork(model=ordinal, tol=1e-14, max_iter=500).fit(x[:, None], y)
    mean, cov = _mean_cov(net.nodes_["w"])
    np.testing.assert_allclose(mean[0], best[0], rtol=1e-5)
    np.testing.assert_allclose(np.sqrt(cov[0, 0]), np.exp(best[1]), rtol=1e-4)
    proba = net.predict_proba(x[:5, None])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_softmax_moments_are_the_expected_log_probabilities():
    # Near a point mass E log softmax(F) is log softmax(E F).
    F = GaussianARD(np.array([[0.0, 1.0, -2.0], [3.0, 0.0, 0.0]]), 1e12, shape=(3,))
    got = Softmax(F).get_moments()[0]
    want = np.log(special.softmax([[0.0, 1.0, -2.0], [3.0, 0.0, 0.0]], axis=-1))
    np.testing.assert_allclose(got, want, atol=1e-9)


@pytest.mark.parametrize("family", ["logistic", "exp", "softmax", "ordinal"])
def test_link_messages_are_the_bound_gradient_in_the_mean_parameters(family):
    # The message to f is d L / d (E f, E f f^T) of the child's bound term L:
    # central differences of L moving one mean parameter at a time.
    rng = np.random.RandomState(1)
    if family == "softmax":
        f = GaussianARD(rng.normal(size=(2, 3)), 2.0, shape=(3,))
        obs = Categorical(Softmax(f))
        obs.observe(np.array([0, 2]))
    elif family == "logistic":
        f = GaussianARD(rng.normal(size=3), 2.0)
        obs = Bernoulli(Logistic(f))
        obs.observe(np.array([1.0, 0.0, 1.0]))
    elif family == "ordinal":
        f = GaussianARD(rng.normal(size=3) + 1.0, 2.0)
        obs = Categorical(Ordinal(f, n_categories=4, slope=1.5))
        obs.observe(np.array([0, 3, 1]))
    else:
        f = GaussianARD(rng.normal(size=3) * 0.5, 2.0)
        obs = Poisson(Exp(f))
        obs.observe(np.array([0.0, 3.0, 1.0]))
    link = obs.parents[0]
    u0, u1 = (np.array(a) for a in f.u)
    message = link._message_to_parent(0)
    h = 1e-5
    for order, base in enumerate((u0, u1)):
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            bound = []
            for step in (h, -h):
                moved = [u0.copy(), u1.copy()]
                moved[order][idx] += step
                if order == 1 and family == "softmax" and idx[-1] != idx[-2]:
                    # A symmetric second moment: its mirror moves too, each by half.
                    moved[order][idx] -= step / 2
                    moved[order][idx[:-2] + (idx[-1], idx[-2])] += step / 2
                f.u = moved
                bound.append(obs.lower_bound_contribution())
            numeric[idx] = (bound[0] - bound[1]) / (2 * h)
        f.u = [u0, u1]
        got = np.asarray(message[order])
        if order == 1 and family == "softmax":
            got = 0.5 * (got + np.swapaxes(got, -1, -2))
        # Bonnet's and Price's theorems hold for the exact expectations; the
        # softmax's fixed rule of 512 points satisfies them to its own error.
        rtol, atol = (5e-3, 5e-4) if family == "softmax" else (1e-4, 1e-6)
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol)


# ------------------------------------------------------------ against the GLM estimators
def test_logistic_network_by_vb_is_the_glm_posterior_and_bound():
    X, y = _binary()
    obs = _logistic(X)
    obs.observe(y)
    w = obs.parents[0].parents[0].parents[1]
    Q = VB(obs, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Q.update(repeat=200, tol=1e-14)
    glm = _glm().fit(X, y)
    mean, cov = _mean_cov(w)
    np.testing.assert_allclose(mean, glm.posterior_mean_, rtol=1e-6)
    np.testing.assert_allclose(cov, glm.posterior_covariance_, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(Q.compute_lowerbound(), glm.lower_bound_, rtol=1e-10)


def test_logistic_network_estimator_is_the_glm_estimator():
    X, y = _binary()
    net = SVIBayesianNetwork(model=_logistic, tol=1e-14, max_iter=500).fit(X, y)
    glm = _glm().fit(X, y)
    mean, cov = _mean_cov(net.nodes_["w"])
    np.testing.assert_allclose(mean, glm.posterior_mean_, rtol=1e-6)
    np.testing.assert_allclose(cov, glm.posterior_covariance_, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(net.lower_bound_, glm.lower_bound_, rtol=1e-10)
    np.testing.assert_allclose(net.predict_proba(X[:20]), glm.predict_proba(X[:20]), rtol=1e-6)
    # The damped batch steps never lower the bound.
    assert np.all(np.diff(net.lower_bounds_) >= -1e-9 * np.abs(net.lower_bounds_[1:]))


@pytest.mark.parametrize("algorithm", ["h-mc-ssvi", "s-dsvi"])
def test_logistic_network_takes_the_glm_update_rules(algorithm):
    X, y = _binary()
    net = SVIBayesianNetwork(model=_logistic, algorithm=algorithm, tol=1e-12, max_iter=3000)
    net.fit(X, y)
    glm = _glm().fit(X, y)
    mean, _ = _mean_cov(net.nodes_["w"])
    # AdaGrad's mean steps reach the fixed point of the natural-gradient ones.
    np.testing.assert_allclose(mean, glm.posterior_mean_, rtol=1e-3, atol=1e-4)


def test_logistic_network_online_and_streams_reach_the_batch_posterior():
    X, y = _binary(n=3000)
    batch = _glm().fit(X, y)
    online = SVIBayesianNetwork(
        model=_logistic, learning_method="online", batch_size=300, max_iter=30, random_state=0
    ).fit(X, y)
    stream = SVIBayesianNetwork(model=_logistic, batch_size=300, random_state=0)
    for rows in np.array_split(np.arange(3000), 10):
        stream.partial_fit(X[rows], y[rows])
    for est in (online, stream):
        np.testing.assert_allclose(
            est.nodes_["w"].get_moments()[0], batch.posterior_mean_, rtol=0.1, atol=0.05
        )
        assert np.all(np.isfinite(est.predict_proba(X[:5])))


def test_logistic_network_weights_and_missing_values():
    X, y = _binary(n=200)
    twice = SVIBayesianNetwork(model=_logistic, tol=1e-14).fit(
        np.vstack([X, X[:50]]), np.r_[y, y[:50]]
    )
    weight = np.r_[np.full(50, 2.0), np.ones(150)]
    weighted = SVIBayesianNetwork(model=_logistic, tol=1e-14).fit(X, y, sample_weight=weight)
    np.testing.assert_allclose(
        weighted.nodes_["w"].get_moments()[0], twice.nodes_["w"].get_moments()[0], rtol=1e-7
    )
    holes = y.copy()
    holes[:30] = np.nan
    gappy = SVIBayesianNetwork(model=_logistic, tol=1e-14).fit(X, holes)
    dropped = SVIBayesianNetwork(model=_logistic, tol=1e-14).fit(X[30:], y[30:])
    np.testing.assert_allclose(
        gappy.nodes_["w"].get_moments()[0], dropped.nodes_["w"].get_moments()[0], rtol=1e-7
    )


def test_poisson_network_is_the_poisson_glm():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.normal(size=(500, 2)), np.ones(500)])
    y = rng.poisson(np.exp(X @ [0.5, -0.3, 0.8])).astype(float)

    def counts(X_rows):
        w = GaussianARD(0.0, 1.0, shape=(3,), name="w")
        return Poisson(Exp(SumMultiply("d,d->", X_rows, w)), name="y")

    net = SVIBayesianNetwork(model=counts, tol=1e-14, max_iter=500).fit(X, y)
    glm = _glm(SVIPoissonRegression).fit(X, y)
    mean, cov = _mean_cov(net.nodes_["w"])
    np.testing.assert_allclose(mean, glm.posterior_mean_, rtol=1e-6)
    np.testing.assert_allclose(cov, glm.posterior_covariance_, rtol=1e-5)
    np.testing.assert_allclose(net.predict(X[:10]), glm.predict(X[:10]), rtol=1e-6)


def test_softmax_network_is_the_multinomial_glm():
    rng = np.random.RandomState(0)
    n, d, K = 300, 2, 3
    X = rng.normal(size=(n, d))
    probs = special.softmax(X @ (1.5 * rng.normal(size=(K, d))).T, axis=1)
    y = np.array([rng.choice(K, p=p) for p in probs])
    Xo = np.column_stack([X, np.ones(n)])
    precision = np.tile(np.r_[np.ones(d), 1.0 / 100.0], (K, 1))

    def classes(X_rows):
        W = GaussianARD(0.0, precision, shape=(K, d + 1), name="W")
        return Categorical(Softmax(SumMultiply("kd,d->k", W, X_rows)), name="y")

    net = SVIBayesianNetwork(model=classes, tol=1e-14, max_iter=500).fit(Xo, y)
    glm = SVILogisticRegression(
        prior_variance=1.0,
        learning_method="batch",
        expectation="quadrature",
        tol=1e-14,
        max_iter=500,
    ).fit(X, y)
    np.testing.assert_allclose(
        net.nodes_["W"].get_moments()[0].ravel(), glm.posterior_mean_, rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(net.lower_bound_, glm.lower_bound_, rtol=1e-10)
    np.testing.assert_allclose(net.predict_proba(Xo[:10]), glm.predict_proba(X[:10]), rtol=1e-6)
    np.testing.assert_array_equal(net.predict(Xo), glm.predict(X))


def _overdispersed(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    f = 0.5 + X @ [0.3, -0.2, 0.1] + rng.normal(0.0, 0.5, size=n)
    return X, rng.poisson(np.exp(f)).astype(float)


def _random_effect(X_rows):
    w = GaussianARD(0.0, np.r_[np.ones(3), 0.01], shape=(4,), name="w")
    tau = Gamma(1.0, 1.0, name="tau")
    e = GaussianARD(0.0, tau, plates=(X_rows.shape[0],), name="e")
    return Poisson(Exp(Add(SumMultiply("d,d->", X_rows, w), e)), name="y")


def test_poisson_random_effect_network_reaches_the_overdispersed_glm():
    X, y = _overdispersed(3000)
    X_test, y_test = _overdispersed(2000, seed=1)
    ones = np.ones((len(X), 1))
    net = SVIBayesianNetwork(model=_random_effect, random_state=0).fit(np.hstack([X, ones]), y)
    glm = SVIOverdispersedPoissonRegression(random_state=0).fit(X, y)

    def deviance(mu):
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(y_test > 0, y_test * np.log(y_test / mu), 0.0)
        return 2 * np.mean(term - (y_test - mu))

    ours = deviance(net.predict(np.hstack([X_test, np.ones((len(X_test), 1))])))
    theirs = deviance(glm.predict(X_test))
    assert ours <= 1.01 * theirs
    # The random effect's variance is the simulation's 0.25.
    assert abs(1.0 / net.nodes_["tau"].get_moments()[0] - 0.25) < 0.05
    np.testing.assert_allclose(net.nodes_["w"].get_moments()[0][:3], glm.coef_[0], atol=0.03)


# ------------------------------------------------------------ structure
def test_a_fixed_design_matrix_makes_no_outer_products():
    X, y = _binary(n=300)
    net = SVIBayesianNetwork(model=_logistic, tol=1e-10).fit(X, y)
    block = net._network(net._fitted_rows(X, y))
    f = next(n for n in block.values() if isinstance(n, SumMultiply))
    fixed = [p.u for p in f.parents if isinstance(p.u, FixedGaussianMoments)]
    assert len(fixed) == 1 and fixed[0].pending
    # The sums of products read the value twice: the moments of x' w are
    # those of the outer products.
    net._set_globals(block, ["w"], net.natural_params_)
    second = f.get_moments()[1]
    w2 = net.nodes_["w"].get_moments()[1]
    np.testing.assert_allclose(second, np.einsum("nd,ne,de->n", X, X, w2), rtol=1e-12)
    assert fixed[0].pending


def test_a_fitted_link_network_pickles():
    X, y = _binary(n=200)
    net = SVIBayesianNetwork(model=_logistic, tol=1e-10).fit(X, y)
    again = pickle.loads(pickle.dumps(net))
    np.testing.assert_array_equal(again.predict_proba(X[:5]), net.predict_proba(X[:5]))


def test_links_refuse_parents_that_are_not_gaussian_predictors():
    with pytest.raises(NetworkError, match="Logistic 'p': f is Gamma"):
        Logistic(Gamma(1.0, 1.0, name="tau"), name="p")
    with pytest.raises(NetworkError, match="takes a scalar f"):
        Exp(GaussianARD(0.0, 1.0, shape=(2,)))
    with pytest.raises(NetworkError, match="K >= 2"):
        Softmax(GaussianARD(0.0, 1.0))
    with pytest.raises(NetworkError, match="Beta"):
        Bernoulli(Exp(GaussianARD(0.0, 1.0)))
    with pytest.raises(NetworkError, match="Ordinal 'o': thresholds must be strictly increasing"):
        Ordinal(GaussianARD(0.0, 1.0), thresholds=[1.0, 0.0], name="o")
    with pytest.raises(NetworkError, match="Ordinal 'o': slope must be positive"):
        Ordinal(GaussianARD(0.0, 1.0), slope=np.nan, name="o")


def _regression(X_rows):
    w = GaussianARD(0, 1e-6, shape=(X_rows.shape[1],), name="w")
    tau = Gamma(1e-3, 1e-3, name="tau")
    return GaussianARD(SumMultiply("d,d->", X_rows, w), tau, name="y")


def test_leaving_out_the_outer_products_changes_no_answer(monkeypatch):
    # Conjugate networks with fixed SumMultiply operands, swept plainly, give
    # the numbers of the sums over the outer products to 1e-10.
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.normal(size=(200, 3)), np.ones(200)])
    y = X @ [1.0, -2.0, 0.5, 3.0] + rng.normal(size=200)
    A = rng.normal(size=(5, 4, 3))
    data = rng.normal(size=(5, 4))

    def fits():
        net = SVIBayesianNetwork(model=_regression, tol=1e-12, max_iter=50).fit(X, y)
        x = GaussianARD(0.0, 1.0, shape=(3,), plates=(5,))
        obs = GaussianARD(SumMultiply("ij,j->i", A, x), 2.0)
        obs.observe(data)
        Q = VB(obs, x)
        Q.update(repeat=5, accelerate=False)
        return [*net.nodes_["w"].get_moments(), net.lower_bound_, *x.get_moments(), Q.L[-1]]

    lazy = fits()
    monkeypatch.setattr(
        SumMultiply,
        "_operands",
        lambda self, u, keys, order: [self._operand(u[order], keys, order)],
    )
    made = fits()
    for a, b in zip(lazy, made):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_logistic_network_on_threads_reaches_the_serial_posterior():
    # The blocks' sums round differently: the same fixed point, to rounding.
    X, y = _binary(n=3000)
    serial = SVIBayesianNetwork(model=_logistic, tol=1e-12).fit(X, y)
    threads = SVIBayesianNetwork(model=_logistic, tol=1e-12, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(
        threads.nodes_["w"].get_moments()[0], serial.nodes_["w"].get_moments()[0], rtol=1e-9
    )
