"""skvi.networks: user-declared conjugate-exponential networks.

Every bound and posterior is checked against an independent reference:
BayesPy's own VB on the same network and start (when installed), the
hand-written estimators of skvi, closed forms and Monte Carlo.
"""

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, gammaln
from sklearn.exceptions import ConvergenceWarning

from skvi import GaussianGammaVB
from skvi.networks import (
    VB,
    Bernoulli,
    Beta,
    Categorical,
    Dirichlet,
    Gamma,
    Gaussian,
    GaussianARD,
    Mixture,
    Multinomial,
    NetworkError,
    Poisson,
    Wishart,
)


def quickstart(lib, **update):
    np.random.seed(1)
    data = np.random.normal(5, 10, 10)
    mu = lib.GaussianARD(0, 1e-6)
    tau = lib.Gamma(1e-6, 1e-6)
    y = lib.GaussianARD(mu, tau, plates=(10,))
    y.observe(data)
    Q = lib.VB(y, mu, tau)
    if lib.__name__.startswith("bayespy"):
        update.setdefault("verbose", False)
    Q.update(repeat=100, **update)
    return data, mu, tau, Q


_NODE_NAMES = (
    "Bernoulli",
    "Beta",
    "Categorical",
    "Dirichlet",
    "Dot",
    "Gamma",
    "Gaussian",
    "GaussianARD",
    "Mixture",
    "Multinomial",
    "Poisson",
    "SumMultiply",
    "Wishart",
)


def _library(name):
    """Every node class and VB of skvi.networks or of BayesPy (skipped when absent), by name."""
    from types import SimpleNamespace

    if name == "skvi":
        import skvi.networks as module

        found = {n: getattr(module, n) for n in _NODE_NAMES + ("VB",)}
    else:
        nodes = pytest.importorskip("bayespy.nodes")
        inference = pytest.importorskip("bayespy.inference")
        found = {n: getattr(nodes, n) for n in _NODE_NAMES}
        found["VB"] = inference.VB
    return SimpleNamespace(__name__=name, **found)


def test_quickstart_matches_bayespy():
    _, mu_b, tau_b, Q_b = quickstart(_library("bayespy"))
    _, mu, tau, Q = quickstart(_library("skvi"))
    assert Q.compute_lowerbound() == pytest.approx(Q_b.compute_lowerbound(), abs=1e-4)
    for ours, bp in ((mu, mu_b), (tau, tau_b)):
        for a, b in zip(ours.get_moments(), bp.get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-10)


def test_bayespy_keywords_of_update_and_lowerbound_are_taken():
    # BayesPy's own calls, plot= and ignore_masked=, on both libraries.
    def run(lib):
        Q = quickstart(lib, plot=False, verbose=False)[3]
        return Q, Q.compute_lowerbound(ignore_masked=True)

    Q, ours = run(_library("skvi"))
    _, theirs = run(_library("bayespy"))
    assert ours == pytest.approx(theirs, rel=1e-12)
    with pytest.raises(NetworkError, match="ignore_masked=False"):
        Q.compute_lowerbound(ignore_masked=False)


def test_quickstart_equals_gaussian_gamma_estimator():
    """The network built by hand is GaussianGammaVB's model: same posterior, same bound."""
    np.random.seed(1)
    data = np.random.normal(5, 10, 10)
    mu = GaussianARD(0, 1e-6)
    tau = Gamma(1e-6, 1e-6)
    y = GaussianARD(mu, tau, plates=(10,))
    y.observe(data)
    Q = VB(y, mu, tau)
    Q.update(repeat=1000, tol=1e-15)
    est = GaussianGammaVB(
        mean_prior=0.0,
        mean_precision_prior=1e-6,
        precision_shape_prior=1e-6,
        precision_rate_prior=1e-6,
        max_iter=1000,
        tol=1e-15,
    ).fit(data[:, None])
    m, mm = mu.get_moments()
    np.testing.assert_allclose(m, est.mean_[0], rtol=1e-8)
    np.testing.assert_allclose(mm - m**2, 1.0 / est.mean_precision_[0], rtol=1e-6)
    t, logt = tau.get_moments()
    np.testing.assert_allclose(t, est.precision_shape_[0] / est.precision_rate_[0], rtol=1e-8)
    np.testing.assert_allclose(
        logt, digamma(est.precision_shape_[0]) - np.log(est.precision_rate_[0]), rtol=1e-8
    )
    assert Q.compute_lowerbound() == pytest.approx(est.lower_bound_, rel=1e-9)


def test_bound_terms_closed_form():
    """One Gaussian with known mean and a Gamma precision: the bound by hand."""
    rng = np.random.RandomState(0)
    x = rng.normal(1.0, 2.0, size=7)
    tau = Gamma(2.0, 3.0)
    y = GaussianARD(1.0, tau, plates=(7,))
    y.observe(x)
    Q = VB(y, tau)
    Q.update(repeat=1)
    a, b = 2.0 + 3.5, 3.0 + 0.5 * np.sum((x - 1.0) ** 2)
    assert tau.get_moments()[0] == pytest.approx(a / b)
    # Exact log evidence of the conjugate model: the bound is tight here.
    log_evidence = (
        2.0 * np.log(3.0) - gammaln(2.0) + gammaln(a) - a * np.log(b) - 3.5 * np.log(2 * np.pi)
    )
    assert Q.compute_lowerbound() == pytest.approx(log_evidence, rel=1e-12)


def blobs(N, seed=0):
    rng = np.random.RandomState(seed)
    centers = np.array([[0, 0], [6, 0], [0, 6], [6, 6.0]])
    return centers[rng.randint(4, size=N)] + rng.randn(N, 2)


def gmm(lib, y, seed, K=4, repeat=1000, tol=1e-7):
    N, D = y.shape
    np.random.seed(seed)
    alpha = lib.Dirichlet(1e-5 * np.ones(K))
    Z = lib.Categorical(alpha, plates=(N,))
    mu = lib.Gaussian(np.zeros(D), 1e-5 * np.identity(D), plates=(K,))
    Lambda = lib.Wishart(D, 1e-5 * np.identity(D), plates=(K,))
    Y = lib.Mixture(Z, lib.Gaussian, mu, Lambda)
    Y.observe(y)
    Z.initialize_from_random()
    Q = lib.VB(Y, mu, Lambda, Z, alpha)
    kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {}
    Q.update(repeat=repeat, tol=tol, **kwargs)
    return Q, (alpha, Z, mu, Lambda)


def test_gaussian_mixture_matches_bayespy():
    theirs = _library("bayespy")
    y = blobs(600)
    ours = max(gmm(_library("skvi"), y, s)[0].compute_lowerbound() for s in range(3))
    bp = max(gmm(theirs, y, s)[0].compute_lowerbound() for s in range(3))
    assert ours == pytest.approx(bp, rel=1e-3)


def test_gaussian_mixture_recovers_clusters_and_bound_rises():
    y = blobs(400, seed=0)
    fits = [gmm(_library("skvi"), y, s) for s in range(3)]
    Q, (alpha, Z, mu, Lambda) = max(fits, key=lambda f: f[0].compute_lowerbound())
    assert np.all(np.diff(Q.L) > -1e-8)
    means = mu.get_moments()[0]
    means = means[np.lexsort((means[:, 1].round(), means[:, 0].round()))]
    np.testing.assert_allclose(means, [[0, 0], [0, 6], [6, 0], [6, 6]], atol=0.4)
    # E[Lambda] of each cluster close to the identity (unit-variance blobs).
    np.testing.assert_allclose(
        Lambda.get_moments()[0], np.broadcast_to(np.eye(2), (4, 2, 2)), atol=0.35
    )


# ----------------------------------------------------------------- declaration errors
def test_non_conjugate_parent_names_node_and_reason():
    tau = Gamma(1.0, 1.0, name="tau")
    with pytest.raises(
        NetworkError,
        match=r"GaussianARD 'x': parent 'mu' is Gamma 'tau'.*"
        r"conjugate only",
    ):
        GaussianARD(tau, 1.0, name="x")
    m = GaussianARD(0.0, 1.0, name="m")
    with pytest.raises(
        NetworkError,
        match=r"Gamma 'g'.*shape parameter a is GaussianARD 'm'.*"
        r"no conjugate prior",
    ):
        Gamma(m, 1.0, name="g")
    with pytest.raises(NetworkError, match=r"Dirichlet 'd'.*concentration.*no conjugate"):
        Dirichlet(Gamma(1.0, 1.0, plates=(3,)), name="d")
    with pytest.raises(NetworkError, match=r"Poisson 'c': parent 'lambda' is GaussianARD 'm'"):
        Poisson(m, name="c")


def test_unsupported_combinations():
    z = Categorical([0.5, 0.5], plates=(4,), name="z")
    with pytest.raises(NetworkError, match=r"Mixture 'y'.*mixed family"):
        Mixture(z, Mixture, 0.0, 1.0, name="y")
    with pytest.raises(NetworkError, match=r"Mixture 'y'.*assignment z is Gamma"):
        Mixture(Gamma(1.0, 1.0), GaussianARD, 0.0, 1.0, name="y")
    with pytest.raises(NetworkError, match=r"Mixture 'y'.*3 categories.*cluster plate.*2"):
        Mixture(Categorical([0.2, 0.3, 0.5], plates=(4,)), GaussianARD, [0.0, 1.0], 1.0, name="y")


def test_plate_and_shape_mismatches():
    mu = GaussianARD(0.0, 1.0, plates=(3,), name="mu")
    with pytest.raises(NetworkError, match=r"GaussianARD 'y': plates .*\(5,\).*\(3,\)"):
        GaussianARD(mu, 1.0, plates=(5,), name="y")
    with pytest.raises(
        NetworkError,
        match=r"GaussianARD 'y': plates \(3,\), \(4,\) do not "
        r"broadcast",
    ):
        GaussianARD(mu, Gamma(1.0, 1.0, plates=(4,)), name="y")
    v = GaussianARD(0.0, 1.0, shape=(2,), name="v")
    with pytest.raises(
        NetworkError,
        match=r"GaussianARD 'w': parent 'mu' is GaussianARD 'v'.*"
        r"shapes do not match",
    ):
        GaussianARD(v, 1.0, shape=(3,), name="w")
    with pytest.raises(
        NetworkError,
        match=r"Gaussian 'x': parent 'mu'.*\(3,\).*Gaussian of "
        r"shape \(2,\)",
    ):
        Gaussian(np.zeros(3), Wishart(2, np.eye(2)), name="x")
    with pytest.raises(NetworkError, match=r"Wishart 'L'.*degrees of freedom"):
        Wishart(0.5, np.eye(2), name="L")
    y = GaussianARD(mu, 1.0, name="y")
    with pytest.raises(NetworkError, match=r"GaussianARD 'y': observed data of shape \(4,\)"):
        y.observe(np.zeros(4))


def test_cycles_and_observing_fixed_nodes():
    a = GaussianARD(0.0, 1.0, name="a")
    b = GaussianARD(a, 1.0, name="b")
    # Constructors take existing parents, so a cycle can only be made by editing them.
    a.parents.append(b)
    with pytest.raises(NetworkError, match=r"cycle.*GaussianARD 'a'.*GaussianARD 'b'"):
        VB(a, b)
    with pytest.raises(NetworkError, match=r"only a stochastic node can be observed"):
        b.parents[0].parents[0].observe(0.0)  # the constant mean of a


# ----------------------------------------------------------------- the estimator
from skvi.networks import SVIBayesianNetwork  # noqa: E402


def mixture_builder(n_rows, K=4, D=2):
    alpha = Dirichlet(1e-3 * np.ones(K), name="alpha")
    z = Categorical(alpha, plates=(n_rows,), name="z")
    mu = Gaussian(np.zeros(D), 1e-3 * np.identity(D), plates=(K,), name="mu")
    Lambda = Wishart(D, 1e-2 * np.identity(D), plates=(K,), name="Lambda")
    return Mixture(z, Gaussian, mu, Lambda, name="y")


def vb_like_estimator(y, seed, passes):
    """The estimator's batch fit done by hand with VB: BayesPy's random start, then sweeps."""
    Y = mixture_builder(len(y))
    Y.observe(y)
    z = Y.parents[0]
    alpha, mu, Lambda = z.parents[0], Y.parents[1], Y.parents[2]
    z.initialize_from_random(np.random.RandomState(seed))
    Q = VB(Y, z, alpha, mu, Lambda)
    Q.update(alpha, mu, Lambda, repeat=1, tol=-np.inf)  # the globals from the random start
    Q.update(z, alpha, mu, Lambda, repeat=passes, tol=-np.inf)
    return Q


def test_batch_fit_is_vmp():
    y = blobs(500)
    est = SVIBayesianNetwork(
        model=mixture_builder,
        max_iter=6,
        tol=0,
        init_max_iter=0,
        init_params="random",  # BayesPy's start: a random draw of z
        random_state=3,
    ).fit(y)
    assert est.global_nodes_ == ["alpha", "mu", "Lambda"] and est.local_nodes_ == ["z"]
    Q = vb_like_estimator(y, 3, 6)
    np.testing.assert_allclose(est.lower_bounds_, Q.L[1:], rtol=1e-10)
    for name in ("alpha", "mu", "Lambda"):
        for a, b in zip(est.nodes_[name].get_moments(), Q[name].get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    # score: the data part of the bound per row at the fitted globals.
    Q.update(Q["z"], repeat=1, tol=-np.inf)
    data_part = Q["y"].lower_bound_contribution() + Q["z"].lower_bound_contribution()
    assert est.score(y) == pytest.approx(data_part / len(y), rel=1e-10)
    np.testing.assert_allclose(est.transform(y), Q["z"].get_moments()[0], rtol=1e-9, atol=1e-12)


def test_online_fit_reaches_batch_score():
    y = blobs(6000, seed=1)
    batch = SVIBayesianNetwork(model=mixture_builder, random_state=1).fit(y)
    # The online fit starts from 300 rows only; the rest is SVI's work.
    online = SVIBayesianNetwork(
        model=mixture_builder,
        learning_method="online",
        init_rows=300,
        batch_size=300,
        max_iter=5,
        tol=0,
        random_state=1,
    ).fit(y)
    assert online.n_iter_ == 5 and online.n_batch_iter_ == 100
    assert online.score(y) == pytest.approx(batch.score(y), rel=0.01)
    # The batch fit found the four generating clusters.
    means = batch.nodes_["mu"].get_moments()[0]
    means = means[np.lexsort((means[:, 1].round(), means[:, 0].round()))]
    np.testing.assert_allclose(means, [[0, 0], [0, 6], [6, 0], [6, 6]], atol=0.1)
    stream = SVIBayesianNetwork(model=mixture_builder, batch_size=300, random_state=1)
    for chunk in np.array_split(y, 10):
        stream.partial_fit(chunk)
    assert stream.score(y) == pytest.approx(batch.score(y), rel=0.02)


def test_quickstart_as_estimator_equals_gaussian_gamma():
    np.random.seed(1)
    data = np.random.normal(5, 10, 10)

    def builder(n_rows):
        mu = GaussianARD(0, 1e-6, name="mu")
        tau = Gamma(1e-6, 1e-6, name="tau")
        return GaussianARD(mu, tau, plates=(n_rows,), name="y")

    est = SVIBayesianNetwork(model=builder, max_iter=1000, tol=1e-14).fit(data[:, None])
    ref = GaussianGammaVB(
        mean_prior=0.0,
        mean_precision_prior=1e-6,
        precision_shape_prior=1e-6,
        precision_rate_prior=1e-6,
        max_iter=1000,
        tol=1e-14,
    ).fit(data[:, None])
    assert est.nodes_["mu"].get_moments()[0] == pytest.approx(ref.mean_[0], rel=1e-8)
    assert est.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-9)


def test_estimator_pickles_and_clones():
    import pickle

    from sklearn.base import clone

    y = blobs(300)
    est = SVIBayesianNetwork(model=mixture_builder, random_state=0, max_iter=20, tol=0).fit(y)
    again = pickle.loads(pickle.dumps(est))
    assert again.score(y) == pytest.approx(est.score(y), rel=1e-12)
    assert clone(est).get_params()["model"] is mixture_builder


def test_estimator_rejects_bad_models_and_data():
    def not_rows(n_rows):
        return GaussianARD(0.0, 1.0, plates=(3,), name="y")

    with pytest.raises(
        NetworkError,
        match=r"GaussianARD 'y': the observed node's leading "
        r"plate must be the rows",
    ):
        SVIBayesianNetwork(model=not_rows).fit(np.zeros((3, 1)))
    with pytest.raises(
        ValueError,
        match=r"X has 3 columns, but the observed node Mixture 'y' "
        r"takes 2",
    ):
        SVIBayesianNetwork(model=mixture_builder).fit(np.zeros((5, 3)))


def school_builder(n_rows, G=8):
    mu = GaussianARD(0.0, 1e-4, name="mu")
    tau_b = Gamma(1e-3, 1e-3, name="tau_between")
    theta = GaussianARD(mu, tau_b, plates=(G,), name="theta")
    tau_w = Gamma(1e-3, 1e-3, name="tau_within")
    return GaussianARD(theta, tau_w, plates=(n_rows, G), name="y")


def test_hierarchical_globals_match_vb():
    """Globals whose children are globals: their messages enter unscaled, as in VMP."""
    rng = np.random.RandomState(0)
    Y = rng.normal(3.0, 2.0, size=8) + rng.normal(0, 1.5, size=(50, 8))
    y = school_builder(50)
    y.observe(Y)
    theta, tau_w = y.parents
    mu, tau_b = theta.parents
    Q = VB(y, theta, mu, tau_b, tau_w)
    Q.update(repeat=2000, tol=1e-13)
    est = SVIBayesianNetwork(model=school_builder, max_iter=2000, tol=1e-13).fit(Y)
    assert est.local_nodes_ == []
    assert est.lower_bound_ == pytest.approx(Q.compute_lowerbound(), rel=1e-10)
    for name, node in (("theta", theta), ("mu", mu), ("tau_between", tau_b)):
        # Both at the fixed point, reached in different orders.
        np.testing.assert_allclose(
            est.nodes_[name].get_moments()[0], node.get_moments()[0], rtol=1e-6
        )
    online = SVIBayesianNetwork(
        model=school_builder,
        learning_method="online",
        batch_size=10,
        max_iter=20,
        tol=0,
        random_state=0,
    ).fit(Y)
    assert online.score(Y) == pytest.approx(est.score(Y), rel=1e-3)


def test_gaussian_wishart_mixture_equals_bayesian_gaussian_mixture():
    """Normal-Wishart components: scikit-learn's BayesianGaussianMixture model, same bound."""
    from skvi import SVIBayesianGaussianMixture
    from skvi.networks import GaussianWishart

    y = blobs(2000, seed=1)
    K = 4
    a0, b0, nu0, W, m0 = 0.5, 0.1, 3.0, np.cov(y.T), y.mean(axis=0)

    def builder(n_rows):
        alpha = Dirichlet(a0 * np.ones(K), name="alpha")
        z = Categorical(alpha, plates=(n_rows,), name="z")
        # E[Lambda] = nu0 W^-1: scikit-learn's covariance_prior is BayesPy's V.
        mu_Lambda = GaussianWishart(m0, b0, nu0, W, plates=(K,), name="mu_Lambda")
        return Mixture(z, Gaussian, mu_Lambda, 1.0, name="y")

    net = SVIBayesianNetwork(model=builder, random_state=0, tol=1e-10, max_iter=2000).fit(y)
    ref = SVIBayesianGaussianMixture(
        n_components=K,
        weight_concentration_prior_type="dirichlet_distribution",
        weight_concentration_prior=a0,
        mean_precision_prior=b0,
        mean_prior=m0,
        degrees_of_freedom_prior=nu0,
        covariance_prior=W,
        tol=1e-12,
        max_iter=2000,
        random_state=0,
    ).fit(y)
    # Both at the same optimum (the four clusters): the same full ELBO.
    assert net.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-6)
    u = net.nodes_["mu_Lambda"].get_moments()
    means = np.linalg.solve(u[2], u[0][..., None])[..., 0]
    order = np.lexsort((means[:, 1], means[:, 0]))
    ref_order = np.lexsort((ref.means_[:, 1], ref.means_[:, 0]))
    np.testing.assert_allclose(means[order], ref.means_[ref_order], atol=1e-4)


# ----------------------------------------------------------------- SumMultiply
from skvi.networks import SumMultiply  # noqa: E402


def test_sum_multiply_regression_is_exact():
    """Known noise: q(w) is the exact posterior and the bound the exact log evidence."""
    rng = np.random.RandomState(0)
    Xd = rng.randn(40, 3)
    y_obs = Xd @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.randn(40)
    a, t = 2.0, 10.0
    w = GaussianARD(0.0, a, shape=(3,))
    f = SumMultiply("d,d->", Xd, w)
    y = GaussianARD(f, t)
    y.observe(y_obs)
    Q = VB(y, w)
    Q.update(repeat=1)
    S = np.linalg.inv(t * Xd.T @ Xd + a * np.eye(3))
    np.testing.assert_allclose(w.get_moments()[0], t * S @ Xd.T @ y_obs, rtol=1e-10)
    cov = np.eye(40) / t + Xd @ Xd.T / a
    evidence = stats.multivariate_normal(np.zeros(40), cov).logpdf(y_obs)
    assert Q.compute_lowerbound() == pytest.approx(evidence, rel=1e-10)


def pca(lib, data, seed, D=3):
    M, N = data.shape
    np.random.seed(seed)
    X = lib.GaussianARD(0, 1, plates=(1, N), shape=(D,))
    alpha = lib.Gamma(1e-5, 1e-5, plates=(D,))
    C = lib.GaussianARD(0, alpha, plates=(M, 1), shape=(D,))
    F = lib.SumMultiply("d,d->", X, C)
    tau = lib.Gamma(1e-5, 1e-5)
    Y = lib.GaussianARD(F, tau)
    Y.observe(data)
    C.initialize_from_random()
    Q = lib.VB(Y, X, C, alpha, tau)
    kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {}
    Q.update(repeat=200, tol=1e-8, **kwargs)
    return Q


def test_bayesian_pca_matches_bayespy():
    theirs, ours = _library("bayespy"), _library("skvi")
    rng = np.random.RandomState(0)
    data = rng.randn(10, 2) @ rng.randn(2, 100) + 0.5 * rng.randn(10, 100)
    best = max(pca(ours, data, s).compute_lowerbound() for s in range(3))
    best_bp = max(pca(theirs, data, s).compute_lowerbound() for s in range(3))
    assert best == pytest.approx(best_bp, rel=1e-3)


# ----------------------------------------------------------------- discrete families
def test_beta_bernoulli_exact_posterior_and_evidence():
    x = np.array([1, 0, 1, 1, 0, 1, 1, 1])
    p = Beta([2.0, 3.0])
    y = Bernoulli(p, plates=(8,))
    y.observe(x)
    Q = VB(y, p)
    Q.update(repeat=1)
    a, b = 2.0 + x.sum(), 3.0 + (1 - x).sum()
    np.testing.assert_allclose(
        p.get_moments()[0], [digamma(a) - digamma(a + b), digamma(b) - digamma(a + b)], rtol=1e-12
    )
    log_evidence = (
        gammaln(a) + gammaln(b) - gammaln(a + b) - (gammaln(2.0) + gammaln(3.0) - gammaln(5.0))
    )
    assert Q.compute_lowerbound() == pytest.approx(log_evidence, rel=1e-12)


def test_gamma_poisson_exact_posterior_and_evidence():
    x = np.array([3, 0, 2, 5, 1])
    rate = Gamma(2.0, 0.5)
    y = Poisson(rate, plates=(5,))
    y.observe(x)
    Q = VB(y, rate)
    Q.update(repeat=1)
    a, b = 2.0 + x.sum(), 0.5 + 5
    assert rate.get_moments()[0] == pytest.approx(a / b)
    # Negative binomial marginal: the conjugate model's exact evidence.
    log_evidence = (
        2.0 * np.log(0.5) - gammaln(2.0) + gammaln(a) - a * np.log(b) - gammaln(x + 1.0).sum()
    )
    assert Q.compute_lowerbound() == pytest.approx(log_evidence, rel=1e-12)


def test_dirichlet_multinomial_exact_evidence():
    counts = np.array([[3, 1, 0], [2, 2, 1]])
    p = Dirichlet([1.0, 2.0, 0.5])
    y = Multinomial(counts.sum(axis=1), p)
    y.observe(counts)
    Q = VB(y, p)
    Q.update(repeat=1)
    alpha = np.array([1.0, 2.0, 0.5])
    post = alpha + counts.sum(axis=0)
    log_evidence = (
        gammaln(alpha.sum())
        - gammaln(alpha).sum()
        + gammaln(post).sum()
        - gammaln(post.sum())
        + np.sum(gammaln(counts.sum(axis=1) + 1.0) - gammaln(counts + 1.0).sum(1))
    )
    assert Q.compute_lowerbound() == pytest.approx(log_evidence, rel=1e-12)


def test_poisson_mixture_responsibilities_are_bayes_rule():
    """A mixture over another family: the responsibilities are Bayes' rule at fixed rates."""
    x = np.array([0, 1, 9, 11, 2, 10])
    z = Categorical([0.3, 0.7], plates=(6,))
    y = Mixture(z, Poisson, [1.0, 10.0])
    y.observe(x)
    z.update()
    logp = stats.poisson.logpmf(x[:, None], [1.0, 10.0]) + np.log([0.3, 0.7])
    resp = np.exp(logp - logp.max(axis=1, keepdims=True))
    resp /= resp.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(z.get_moments()[0], resp, rtol=1e-12)
    Q = VB(y, z)
    log_marginal = np.sum(np.log(np.exp(logp).sum(axis=1)))
    assert Q.compute_lowerbound() == pytest.approx(log_marginal, rel=1e-12)


def pca_builder(n_rows, M=6, D=3):
    X = GaussianARD(0, 1, plates=(n_rows, 1), shape=(D,), name="X")
    alpha = Gamma(1e-5, 1e-5, plates=(D,), name="alpha")
    C = GaussianARD(0, alpha, plates=(1, M), shape=(D,), name="C")
    F = SumMultiply("d,d->", X, C, name="F")
    tau = Gamma(1e-5, 1e-5, name="tau")
    return GaussianARD(F, tau, name="Y")


def test_pca_estimator_reaches_vb_and_threads_agree():
    rng = np.random.RandomState(1)
    data = rng.randn(400, 2) @ rng.randn(2, 6) + 0.5 * rng.randn(400, 6)
    vb = max(pca(_library("skvi"), data.T, s).compute_lowerbound() for s in range(3))
    est = SVIBayesianNetwork(model=pca_builder, random_state=0, max_iter=1000, tol=1e-7)
    est.fit(data)
    assert est.local_nodes_ == ["X"] and est.global_nodes_ == ["alpha", "C", "tau"]
    assert est.lower_bound_ == pytest.approx(vb, rel=1e-3)
    # The noise precision is the generating one (0.5 ** -2), within sampling error.
    assert est.nodes_["tau"].get_moments()[0] == pytest.approx(4.0, rel=0.1)
    threads = SVIBayesianNetwork(
        model=pca_builder, random_state=0, max_iter=1000, tol=1e-7, n_jobs=2
    ).fit(data)
    assert threads.lower_bound_ == pytest.approx(est.lower_bound_, rel=1e-12)
    online = SVIBayesianNetwork(
        model=pca_builder,
        learning_method="online",
        batch_size=50,
        max_iter=5,
        tol=0,
        random_state=0,
    ).fit(data)
    assert online.score(data) == pytest.approx(est.score(data), rel=0.01)
    assert est.transform(data[:5]).shape == (5, 3)


def test_row_weights_are_repeated_rows():
    """A row of weight 2 is the row twice: in the bound and in every step of the globals."""
    import copy

    y = blobs(300, seed=2)
    w = np.random.RandomState(0).randint(0, 3, size=len(y))
    base = SVIBayesianNetwork(
        model=mixture_builder,
        random_state=0,
        max_iter=30,
        tol=0,
        total_samples=1000.0,
        batch_size=1000,
        step_safety=False,
    )
    base.fit(y)
    weighted, repeated = copy.deepcopy(base), copy.deepcopy(base)
    weighted.partial_fit(y, sample_weight=w)
    repeated.partial_fit(np.repeat(y, w, axis=0))
    for name in base.global_nodes_:
        for a, b in zip(weighted.natural_params_[name], repeated.natural_params_[name]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    assert weighted.lower_bound_ == pytest.approx(repeated.lower_bound_, rel=1e-10)
    # Without local nodes the start is the prior: whole weighted fits are repeated fits.
    rng = np.random.RandomState(0)
    Y = rng.normal(3.0, 2.0, size=8) + rng.normal(0, 1.5, size=(60, 8))
    v = rng.randint(0, 3, size=60)
    a = SVIBayesianNetwork(model=school_builder, tol=1e-12, max_iter=300).fit(Y, sample_weight=v)
    b = SVIBayesianNetwork(model=school_builder, tol=1e-12, max_iter=300).fit(np.repeat(Y, v, 0))
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, rel=1e-10)


def test_fit_on_a_dask_cluster_takes_the_in_memory_steps(client):
    da = pytest.importorskip("dask.array")
    rng = np.random.RandomState(0)
    Y = rng.normal(3.0, 2.0, size=8) + rng.normal(0, 1.5, size=(400, 8))
    ref = SVIBayesianNetwork(model=school_builder, tol=1e-12, max_iter=100).fit(Y)
    est = SVIBayesianNetwork(model=school_builder, tol=1e-12, max_iter=100)
    est.fit(da.from_array(Y, chunks=(100, 8)))
    assert est.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(est.lower_bounds_, ref.lower_bounds_, rtol=1e-10)
    y = blobs(2000, seed=1)
    batch = SVIBayesianNetwork(model=mixture_builder, random_state=1).fit(y)
    dist = SVIBayesianNetwork(model=mixture_builder, random_state=1)
    dist.fit(da.from_array(y, chunks=(500, 2)))
    # The cluster's start is fitted to its first block: the same optimum, a different path.
    assert dist.score(y) == pytest.approx(batch.score(y), rel=1e-6)
    # With NaN in X the blocks count each element's children (N_m, C_m) on
    # their workers: the same passes as in memory.
    X = _sparse_columns(3000, [1.0, 0.3, 0.02, 0.0], seed=5)
    kw = dict(model=_column_means, max_iter=4, tol=0)
    ref = SVIBayesianNetwork(**kw).fit(X)
    est = SVIBayesianNetwork(**kw).fit(da.from_array(X, chunks=(700, 4)))
    np.testing.assert_allclose(est.lower_bounds_, ref.lower_bounds_, rtol=1e-10)
    np.testing.assert_array_equal(est._svi.rows["mu"].totals, (~np.isnan(X)).sum(axis=0))


def test_joint_order_reaches_the_sequential_fixed_point_and_schedules_grid_search():
    """Paquet's option (b), every global from one snapshot, reaches option (a)'s fixed point."""
    from sklearn.model_selection import GridSearchCV

    rng = np.random.RandomState(0)
    Y = rng.normal(3.0, 2.0, size=8) + rng.normal(0, 1.5, size=(100, 8))
    seq = SVIBayesianNetwork(model=school_builder, tol=1e-13, max_iter=500).fit(Y)
    joint = SVIBayesianNetwork(
        model=school_builder, tol=1e-13, max_iter=500, update_order="joint"
    ).fit(Y)
    assert joint.lower_bound_ == pytest.approx(seq.lower_bound_, rel=1e-10)
    # The schedule is an ordinary hyperparameter.
    search = GridSearchCV(
        SVIBayesianNetwork(
            model=school_builder,
            learning_method="online",
            batch_size=20,
            max_iter=3,
            tol=0,
            random_state=0,
        ),
        {"learning_decay": [0.6, 0.9]},
        cv=2,
    ).fit(Y)
    assert search.best_params_["learning_decay"] in (0.6, 0.9)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def count_mixtures(lib, seed):
    """A Poisson mixture and a latent class (Bernoulli mixture) model, BayesPy's way."""
    rng = np.random.RandomState(0)
    x = rng.poisson(np.where(rng.rand(500) < 0.4, 2.0, 12.0))
    b = (rng.rand(500, 5) < np.where(rng.rand(500, 1) < 0.5, 0.2, 0.8)).astype(int)
    kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {}
    bounds = []
    np.random.seed(seed)
    alpha = lib.Dirichlet(np.ones(2))
    z = lib.Categorical(alpha, plates=(500,))
    rate = lib.Gamma(1.0, 0.1, plates=(2,))
    y = lib.Mixture(z, lib.Poisson, rate)
    y.observe(x)
    z.initialize_from_random()
    Q = lib.VB(y, rate, z, alpha)
    Q.update(repeat=300, tol=1e-10, **kwargs)
    bounds.append(Q.compute_lowerbound())
    np.random.seed(seed)
    alpha = lib.Dirichlet(np.ones(2))
    z = lib.Categorical(alpha, plates=(500, 1))
    p = lib.Beta([1.0, 1.0], plates=(5, 2))  # a probability per feature and cluster
    y = lib.Mixture(z, lib.Bernoulli, p)
    y.observe(b)
    z.initialize_from_random()
    Q = lib.VB(y, p, z, alpha)
    Q.update(repeat=300, tol=1e-10, **kwargs)
    bounds.append(Q.compute_lowerbound())
    return bounds


def test_poisson_and_bernoulli_mixtures_match_bayespy():
    theirs, ours = _library("bayespy"), _library("skvi")
    for seed in range(2):
        np.testing.assert_allclose(
            count_mixtures(ours, seed), count_mixtures(theirs, seed), rtol=1e-9
        )


# ----------------------------------------------------------------- SumMultiply, every form
def test_sum_multiply_matrix_times_vector_is_the_exact_multi_output_posterior():
    """'ij,j->i' with known noise, and the mean's axis as the child's plates
    (BayesPy's GaussianARD of a vector mean): q(W) is the exact posterior of
    each output's weights, the bound the exact log evidence."""
    from skvi.networks import SumMultiply

    rng = np.random.RandomState(2)
    Xd = rng.randn(30, 3)
    Y_obs = Xd @ rng.randn(3, 2) + 0.3 * rng.randn(30, 2)
    a, t = 2.0, 10.0
    W = GaussianARD(0.0, a, shape=(2, 3))
    y = GaussianARD(SumMultiply("ij,j->i", W, Xd), t)
    assert y.plates == (30, 2)
    y.observe(Y_obs)
    Q = VB(y, W)
    Q.update(repeat=1)
    S = np.linalg.inv(t * Xd.T @ Xd + a * np.eye(3))
    np.testing.assert_allclose(W.get_moments()[0], t * (S @ Xd.T @ Y_obs).T, rtol=1e-10)
    second = W.get_moments()[1]
    np.testing.assert_allclose(
        second[0, :, 0, :] - np.outer(W.u[0][0], W.u[0][0]), S, rtol=1e-9, atol=1e-14
    )
    np.testing.assert_allclose(second[0, :, 1, :] - np.outer(W.u[0][0], W.u[0][1]), 0.0, atol=1e-12)
    cov = np.eye(30) / t + Xd @ Xd.T / a
    evidence = sum(
        stats.multivariate_normal(np.zeros(30), cov).logpdf(Y_obs[:, i]) for i in range(2)
    )
    assert Q.compute_lowerbound() == pytest.approx(evidence, rel=1e-10)


def _sum_multiply_cases(lib):
    """BayesPy's documented forms: implicit full sums, three operands, an
    outer product, the list syntax, Dot, a full-covariance operand."""
    kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {}
    out = []
    np.random.seed(1)
    x = np.arange(10.0)
    X = np.vstack([x, np.ones(10)]).T
    B = lib.GaussianARD(0, 1e-6, shape=(2,))
    tau = lib.Gamma(1e-3, 1e-3)
    Y = lib.GaussianARD(lib.SumMultiply("i,i", B, X), tau)
    Y.observe(2 * x + 5 + 2 * np.random.randn(10))
    Q = lib.VB(Y, B, tau)
    Q.update(repeat=1000, **kwargs)
    out.append(Q.compute_lowerbound())

    np.random.seed(3)
    a = lib.GaussianARD(0, 1, shape=(2,))
    b = lib.GaussianARD(0, 1, shape=(3,))
    tau = lib.Gamma(1e-2, 1e-2)
    Y = lib.GaussianARD(lib.SumMultiply("i,j->ij", a, b), tau, shape=(2, 3), plates=(5,))
    Y.observe(np.random.randn(5, 2, 3) + np.outer([1, 2], [1, -1, 0.5]))
    Q = lib.VB(Y, a, b, tau)
    a.initialize_from_parameters(np.array([1.0, 1.0]), 1.0)
    Q.update(repeat=200, **kwargs)
    out.append(Q.compute_lowerbound())

    np.random.seed(1)
    a = lib.GaussianARD(0, 1, shape=(3,))
    b = lib.GaussianARD(0, 1, shape=(3,))
    Xd = np.random.randn(20, 3)
    Y = lib.GaussianARD(lib.SumMultiply("i,i,i", a, b, Xd), 4.0)
    Y.observe(np.random.randn(20))
    Q = lib.VB(Y, a, b)
    a.initialize_from_parameters(np.array([0.5, -0.5, 1.0]), 1.0)
    Q.update(repeat=50, **kwargs)
    out.append(Q.compute_lowerbound())

    np.random.seed(4)
    A = np.random.randn(10, 3, 2)
    x = lib.GaussianARD(0, 1, shape=(2,))
    Y = lib.GaussianARD(lib.SumMultiply(A, [0, 1], x, [1], [0]), 10.0)
    Y.observe(np.random.randn(10, 3))
    Q = lib.VB(Y, x)
    Q.update(repeat=10, **kwargs)
    out.append(Q.compute_lowerbound())

    np.random.seed(5)
    Xd = np.random.randn(40, 3)
    w = lib.Gaussian(np.zeros(3), np.identity(3))
    tau = lib.Gamma(1, 1)
    Y = lib.GaussianARD(lib.Dot(w, Xd), tau)
    Y.observe(Xd @ [1.0, 0.0, -1.0] + 0.2 * np.random.randn(40))
    Q = lib.VB(Y, w, tau)
    Q.update(repeat=100, **kwargs)
    out.append(Q.compute_lowerbound())
    return np.array(out)


def test_sum_multiply_forms_match_bayespy():
    theirs = _library("bayespy")
    np.testing.assert_allclose(
        _sum_multiply_cases(_library("skvi")), _sum_multiply_cases(theirs), rtol=1e-9
    )


def test_sum_multiply_outer_product_moments_are_products_of_independent_moments():
    from skvi.networks import SumMultiply

    a = GaussianARD(0.0, 1.0, shape=(2,))
    b = GaussianARD(0.0, 1.0, shape=(3,))
    a.initialize_from_parameters(np.array([1.0, -2.0]), np.array([4.0, 1.0]))
    b.initialize_from_parameters(np.array([0.5, 0.0, 3.0]), 2.0)
    f = SumMultiply("i,j->ij", a, b)
    ma, va = np.array([1.0, -2.0]), np.array([0.25, 1.0])
    mb, vb = np.array([0.5, 0.0, 3.0]), np.full(3, 0.5)
    np.testing.assert_allclose(f.get_moments()[0], np.outer(ma, mb))
    # E[f_ij f_kl] = E[a_i a_k] E[b_j b_l], a and b independent.
    Eaa = np.outer(ma, ma) + np.diag(va)
    Ebb = np.outer(mb, mb) + np.diag(vb)
    np.testing.assert_allclose(f.get_moments()[1], np.einsum("ik,jl->ijkl", Eaa, Ebb))


def test_sum_multiply_rejects_what_is_not_a_sum_of_products():
    from skvi.networks import SumMultiply

    x = GaussianARD(0.0, 1.0, shape=(3,))
    M = GaussianARD(0.0, 1.0, shape=(3, 3))
    with pytest.raises(NetworkError, match="repeat an axis"):
        SumMultiply("ii->i", M)
    with pytest.raises(NetworkError, match="not a key of any operand"):
        SumMultiply("i,i->j", x, np.ones(3))
    with pytest.raises(NetworkError, match="do not broadcast"):
        SumMultiply("i,i", x, np.ones(4))
    with pytest.raises(NetworkError, match="operand twice"):
        SumMultiply("i,i", x, x)
    with pytest.raises(NetworkError, match="2 sets of keys for 1 operands"):
        SumMultiply("i,i", x)
    with pytest.raises(NetworkError, match="Gamma"):
        SumMultiply("i,i", x, Gamma(1.0, 1.0, plates=(3,)))


# ----------------------------------------------------------------- BayesPy's node methods
def test_initialize_from_parameters_sets_q_to_those_parameters():
    w = GaussianARD(0.0, 1e-6, shape=(2,))
    w.initialize_from_parameters(np.array([1.0, 2.0]), np.array([4.0, 0.5]))
    np.testing.assert_allclose(w.get_moments()[0], [1.0, 2.0])
    np.testing.assert_allclose(
        w.get_moments()[1], np.outer([1.0, 2.0], [1.0, 2.0]) + np.diag([0.25, 2.0])
    )
    tau = Gamma(1e-3, 1e-3)
    tau.initialize_from_parameters(3.0, 2.0)
    assert float(tau.get_moments()[0]) == pytest.approx(1.5)
    assert float(tau.get_moments()[1]) == pytest.approx(digamma(3.0) - np.log(2.0))
    p = Dirichlet(np.ones(3))
    p.initialize_from_parameters(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(p.get_moments()[0], digamma([1.0, 2.0, 3.0]) - digamma(6.0))
    with pytest.raises(NetworkError, match="1 parameters given"):
        tau.initialize_from_parameters(3.0)


def test_random_draws_from_q_by_numpys_global_state():
    np.random.seed(0)
    tau = Gamma(1.0, 1.0, plates=(20000,))
    tau.initialize_from_parameters(3.0, 2.0)
    draws = tau.random()
    assert draws.shape == (20000,)
    # Monte Carlo against q = Gamma(3, 2): mean 1.5, variance 0.75.
    assert draws.mean() == pytest.approx(1.5, abs=4 * np.sqrt(0.75 / 20000))
    np.random.seed(0)
    again = tau.random()
    np.testing.assert_array_equal(draws, again)
    w = GaussianARD(0.0, 1.0, shape=(2,), plates=(20000,))
    w.initialize_from_parameters(np.array([1.0, -1.0]), np.array([1.0, 4.0]))
    x = w.random()
    assert x.shape == (20000, 2)
    np.testing.assert_allclose(x.mean(axis=0), [1.0, -1.0], atol=4 * np.sqrt(1.0 / 20000))
    np.testing.assert_allclose(x.var(axis=0), [1.0, 0.25], rtol=0.05)


# ----------------------------------------------------------------- observation masks
def _masked_mixture(y, mask):
    """A two-cluster mixture from a fixed start (the means set, then q(z) first)."""
    K = 2
    alpha = Dirichlet(0.5 * np.ones(K))
    Z = Categorical(alpha, plates=(y.shape[0],))
    mu = Gaussian(np.zeros(2), 1e-3 * np.identity(2), plates=(K,))
    Lam = Wishart(2, 0.1 * np.identity(2), plates=(K,))
    Y = Mixture(Z, Gaussian, mu, Lam)
    mu.initialize_from_parameters(np.array([[0.0, 0.0], [4.0, 4.0]]), np.identity(2))
    Y.observe(y, mask=mask)
    Q = VB(Z, alpha, mu, Lam, Y)
    Q.update(repeat=300, tol=1e-12)
    return Q, mu


def test_a_masked_mixture_is_the_mixture_of_its_observed_rows():
    # Missing rows are integrated out with their assignments (BayesPy's
    # masks): the same posterior and bound as the network of the other rows.
    rng = np.random.RandomState(2)
    y = np.vstack([rng.randn(50, 2), rng.randn(50, 2) + 4])
    mask = rng.rand(100) < 0.7
    y_missing = y.copy()
    y_missing[~mask] = np.nan
    Q, mu = _masked_mixture(y_missing, mask)
    Q_obs, mu_obs = _masked_mixture(y[mask], True)
    assert Q.compute_lowerbound() == pytest.approx(Q_obs.compute_lowerbound(), rel=1e-10)
    np.testing.assert_allclose(mu.get_moments()[0], mu_obs.get_moments()[0], rtol=1e-9)


def test_masked_observations_match_bayespy():
    theirs = _library("bayespy")

    def pca_with_missing(lib):
        # BayesPy's PCA with missing values, a fifth of the entries missing;
        # plain sweeps, as BayesPy's VB without its rotations.
        kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {"accelerate": False}
        np.random.seed(1)
        M, N, D = 10, 100, 3
        data = np.random.randn(M, 2) @ np.random.randn(2, N) + 0.1 * np.random.randn(M, N)
        mask = np.random.rand(M, N) < 0.8
        data[~mask] = np.nan
        X = lib.GaussianARD(0, 1, shape=(D,), plates=(1, N))
        alpha = lib.Gamma(1e-3, 1e-3, plates=(D,))
        C = lib.GaussianARD(0, alpha, shape=(D,), plates=(M, 1))
        tau = lib.Gamma(1e-3, 1e-3)
        Y = lib.GaussianARD(lib.SumMultiply("d,d->", C, X), tau)
        Y.observe(data, mask=mask)
        Q = lib.VB(Y, X, C, alpha, tau)
        C.initialize_from_random()
        Q.update(repeat=100, **kwargs)
        return Q.compute_lowerbound()

    assert pca_with_missing(_library("skvi")) == pytest.approx(pca_with_missing(theirs), rel=1e-9)


def _semi_supervised(lib, split):
    """A mixture with a third of the labels known: one Z observed with a mask,
    or (split) the labelled and unlabelled rows as two nodes of the same model."""
    kwargs = {"verbose": False} if lib.__name__ == "bayespy" else {}
    rng = np.random.RandomState(3)
    N, K = 120, 3
    labels = rng.randint(K, size=N)
    y = np.array([[0, 0], [4, 0], [0, 4.0]])[labels] + rng.randn(N, 2)
    known = rng.rand(N) < 0.3
    alpha = lib.Dirichlet(np.ones(K))
    mu = lib.Gaussian(np.zeros(2), 1e-2 * np.identity(2), plates=(K,))
    Lam = lib.Wishart(2, np.identity(2), plates=(K,))
    if not split:
        Z = lib.Categorical(alpha, plates=(N,))
        Y = lib.Mixture(Z, lib.Gaussian, mu, Lam)
        Y.observe(y)
        Z.observe(labels, mask=known)
        Q = lib.VB(Y, mu, Lam, Z, alpha)
    else:
        Z1 = lib.Categorical(alpha, plates=(int(known.sum()),))
        Z2 = lib.Categorical(alpha, plates=(int((~known).sum()),))
        Y1 = lib.Mixture(Z1, lib.Gaussian, mu, Lam)
        Y2 = lib.Mixture(Z2, lib.Gaussian, mu, Lam)
        Y1.observe(y[known])
        Y2.observe(y[~known])
        Z1.observe(labels[known])
        Q = lib.VB(Y1, Y2, Z1, mu, Lam, Z2, alpha)
    Q.update(repeat=200, **kwargs)
    return Q.compute_lowerbound(), mu.get_moments()[0]


def test_labels_known_in_part_are_the_model_of_labelled_and_unlabelled_rows():
    # A node with children observed with a mask: its missing elements are
    # latent (semi-supervised labels), as in BayesPy.
    ours = _library("skvi")
    bound, means = _semi_supervised(ours, split=False)
    bound_split, means_split = _semi_supervised(ours, split=True)
    assert bound == pytest.approx(bound_split, rel=1e-10)
    np.testing.assert_allclose(means, means_split, rtol=1e-8)
    theirs = _library("bayespy")
    assert bound == pytest.approx(_semi_supervised(theirs, split=False)[0], rel=1e-9)


def test_mask_errors_name_the_node():
    y = GaussianARD(0.0, 1.0, plates=(4,), name="leaf")
    with pytest.raises(NetworkError, match="'leaf'.*does not broadcast"):
        y.observe(np.zeros(4), mask=[True, False])
    with pytest.raises(NetworkError, match="'leaf'.*observes no element"):
        y.observe(np.zeros(4), mask=False)


# ----------------------------------------------------------------- GaussianWishart with node parameters
def _hierarchical_normal_wishart():
    from skvi.networks import GaussianWishart

    mu0 = Gaussian(np.zeros(2), 0.5 * np.identity(2), name="mu0")
    alpha = Gamma(2.0, 2.0, name="alpha")
    V = Wishart(4.0, np.identity(2), name="V")
    gw = GaussianWishart(mu0, alpha, 5.0, V, plates=(3,), name="gw")
    mu0.initialize_from_parameters(np.array([0.3, -0.2]), np.array([[2.0, 0.3], [0.3, 1.0]]))
    alpha.initialize_from_parameters(3.0, 2.0)
    V.initialize_from_parameters(6.0, np.array([[2.0, 0.4], [0.4, 1.5]]))
    gw.initialize_from_parameters(
        np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 2.0]]),
        np.array([2.0, 0.5, 1.0]),
        np.array([4.0, 5.0, 6.0]),
        np.array([[1.5, 0.2], [0.2, 0.8]]),
    )
    return mu0, alpha, V, gw


def test_gaussian_wishart_messages_are_the_gradients_of_its_expected_log_prior():
    # E[log p(x, Lambda | mu, alpha, n, V)] is linear in each parent's
    # moments: the message to a parent is its gradient, checked along
    # random directions by differences (exact up to rounding).
    mu0, alpha, V, gw = _hierarchical_normal_wishart()
    rng = np.random.RandomState(0)
    for index, parent in ((0, mu0), (1, alpha), (3, V)):
        up = gw._parent_moments()
        message = gw._message_to_parent(index)
        for _ in range(3):
            direction = [rng.randn(*np.shape(u)) for u in up[index]]
            moved = list(up)
            moved[index] = [u + d for u, d in zip(up[index], direction)]
            change = gw._expected_log_prior(moved) - gw._expected_log_prior(up)
            predicted = sum(float(np.sum(m * d)) for m, d in zip(message, direction))
            assert change == pytest.approx(predicted, rel=1e-9, abs=1e-9), parent.name


def test_gaussian_wishart_expected_log_prior_matches_monte_carlo():
    # E_q[log NW(x, Lambda | mu, alpha, n, V)] under the product of the
    # nodes' q, against draws from each q (scipy's densities).
    mu0, alpha, V, gw = _hierarchical_normal_wishart()
    rng = np.random.RandomState(1)
    S = 2000
    m = rng.multivariate_normal([0.3, -0.2], np.linalg.inv([[2.0, 0.3], [0.3, 1.0]]), size=S)
    a = rng.gamma(3.0, 1.0 / 2.0, size=S)
    Vs = stats.wishart(df=6.0, scale=np.linalg.inv([[2.0, 0.4], [0.4, 1.5]])).rvs(S, rng)
    means = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 2.0]])
    scales = np.array([2.0, 0.5, 1.0])
    dofs = np.array([4.0, 5.0, 6.0])
    W = np.array([[1.5, 0.2], [0.2, 0.8]])
    total = np.zeros(S)
    for k in range(3):
        Lam = stats.wishart(df=dofs[k], scale=np.linalg.inv(W)).rvs(S, rng)
        x = np.array([rng.multivariate_normal(means[k], np.linalg.inv(scales[k] * L)) for L in Lam])
        for s in range(S):
            total[s] += stats.multivariate_normal(m[s], np.linalg.inv(a[s] * Lam[s])).logpdf(
                x[s]
            ) + stats.wishart(df=5.0, scale=np.linalg.inv(Vs[s])).logpdf(Lam[s])
    # The node's formula leaves out the base measure (E log q leaves it out
    # too, so the bound is whole): -D/2 (log|Lambda| + log 2 pi) per plate.
    base = -np.sum(gw.get_moments()[3] + np.log(2 * np.pi))
    expected = gw._expected_log_prior(gw._parent_moments()) + base
    assert expected == pytest.approx(total.mean(), abs=4 * total.std() / np.sqrt(S))


def test_gaussian_wishart_with_node_parameters_fits_by_vmp():
    # Components around a common mean, with a common scale and precision
    # prior: every VMP sweep raises the bound, and the common mean ends
    # between the component means.
    from skvi.networks import GaussianWishart

    rng = np.random.RandomState(3)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    data = np.concatenate([c + 0.5 * rng.randn(100, 2) for c in centres])
    labels = np.repeat(np.arange(3), 100)
    mu0 = Gaussian(np.zeros(2), 1e-2 * np.identity(2), name="mu0")
    alpha = Gamma(1.0, 1.0, name="alpha")
    V = Wishart(3.0, np.identity(2), name="V")
    gw = GaussianWishart(mu0, alpha, 3.0, V, plates=(3,), name="gw")
    y = Mixture(labels, Gaussian, gw, 1.0, name="y")
    y.observe(data)
    Q = VB(gw, mu0, alpha, V, y)
    bounds = []
    for _ in range(30):
        Q.update(repeat=1)
        bounds.append(Q.compute_lowerbound())
    assert np.all(np.diff(bounds) > -1e-8 * np.abs(bounds[:-1]))
    np.testing.assert_allclose(mu0.get_moments()[0], centres.mean(axis=0), atol=0.5)
    with pytest.raises(NetworkError, match="degrees of freedom n is Gamma"):
        GaussianWishart(np.zeros(2), 1.0, Gamma(1.0, 1.0), np.identity(2))


def test_normal_wishart_mixture_from_the_same_start_takes_the_mixtures_steps():
    # The start of SVIBayesianGaussianMixture's fit (its first pass from a
    # random start) given to the network by init_params='model': every
    # later pass has the same bound (reg_covar=0: the mixture's covariance
    # regularisation is not in the network's model).
    import warnings

    from skvi import SVIBayesianGaussianMixture
    from skvi.networks import GaussianWishart

    y = blobs(2000, seed=1)
    K = 4
    a0, b0, nu0, W, m0 = 0.5, 0.1, 3.0, np.cov(y.T), y.mean(axis=0)
    ref = SVIBayesianGaussianMixture(
        n_components=K,
        weight_concentration_prior_type="dirichlet_distribution",
        weight_concentration_prior=a0,
        mean_precision_prior=b0,
        mean_prior=m0,
        degrees_of_freedom_prior=nu0,
        covariance_prior=W,
        reg_covar=0.0,
        init_params="random",
        max_iter=1,
        warm_start=True,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(y)
    # scikit-learn's covariances_ are E[Lambda]^-1, BayesPy's V is nu E[Lambda]^-1.
    start = (
        ref.weight_concentration_.copy(),
        ref.means_.copy(),
        ref.mean_precision_.copy(),
        ref.degrees_of_freedom_.copy(),
        ref.covariances_ * ref.degrees_of_freedom_[:, None, None],
    )

    def builder(n_rows):
        alpha = Dirichlet(a0 * np.ones(K), name="alpha")
        z = Categorical(alpha, plates=(n_rows,), name="z")
        mu_Lambda = GaussianWishart(m0, b0, nu0, W, plates=(K,), name="mu_Lambda")
        alpha.initialize_from_parameters(start[0])
        mu_Lambda.initialize_from_parameters(*start[1:])
        return Mixture(z, Gaussian, mu_Lambda, 1.0, name="y")

    net = SVIBayesianNetwork(model=builder, init_params="model", tol=1e-10, max_iter=500).fit(y)
    ref.set_params(max_iter=500, tol=1e-12)
    ref.fit(y)
    n = min(len(net.lower_bounds_), len(ref.lower_bounds_))
    np.testing.assert_allclose(net.lower_bounds_[:n], ref.lower_bounds_[:n], rtol=1e-12)
    assert net.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-9)


def _mean_precision_from_a_value(lib, n_rows, data=None):
    """The quickstart's network, its precision set to a value: the mean's first update reads it."""
    mu = lib.GaussianARD(0.0, 1e-6, name="mu")
    tau = lib.Gamma(1e-6, 1e-6, name="tau")
    tau.initialize_from_value(0.5)
    y = lib.GaussianARD(mu, tau, plates=(n_rows,), name="y")
    if data is not None:
        y.observe(data)
    return y, mu, tau


def test_init_params_model_starts_from_a_value_as_bayespy_sweeps():
    # A global node the builder sets to a value: the start is BayesPy's first
    # sweep, whose update of mu reads that value; then the passes, each a
    # sweep.  tol=0: every pass runs.
    data = np.random.RandomState(3).normal(5.0, 2.0, size=12)
    lib = _library("bayespy")
    y, mu, tau = _mean_precision_from_a_value(lib, 12, data)
    Q = lib.VB(y, mu, tau)
    Q.update(repeat=4, tol=-np.inf, verbose=False)
    net = SVIBayesianNetwork(
        model=lambda n: _mean_precision_from_a_value(_library("skvi"), n)[0],
        init_params="model",
        max_iter=3,
        tol=0,
    ).fit(data[:, None])
    assert net.lower_bound_ == pytest.approx(Q.compute_lowerbound(), rel=1e-10)
    for name, node in (("mu", mu), ("tau", tau)):
        for a, b in zip(net.nodes_[name].get_moments(), node.get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-10)
    # The value is read: another value, another fit.
    other = SVIBayesianNetwork(
        model=lambda n: _mean_precision_from_a_value(_library("skvi"), n)[0],
        init_params="model",
        max_iter=1,
        tol=0,
    ).fit(data[:, None])
    assert other.lower_bound_ != pytest.approx(net.lower_bound_, rel=1e-6)


# ----------------------------------------------------------------- Mixture's cluster_plate
def _mixture_with_clusters_on(axis, family):
    """The same mixture, its parameters' clusters on plate ``axis`` (-2) or last (-1)."""
    rng = np.random.RandomState(7)
    N, D, K = 60, 3, 2
    labels = rng.randint(K, size=N)
    if family == "gaussian":
        data = np.array([[0.0, 0.0, 0.0], [3.0, -3.0, 3.0]])[labels] + rng.randn(N, D)
    else:
        data = rng.rand(N, D) < np.array([[0.1, 0.8, 0.5], [0.9, 0.2, 0.5]])[labels]
    np.random.seed(0)
    Z = Categorical(Dirichlet(np.ones(K)), plates=(N, 1))
    if family == "gaussian":
        mu = GaussianARD(0, 1e-3, plates=(K, D) if axis == -2 else (D, K))
        tau = Gamma(1, 1, plates=(D,) if axis == -2 else (D, 1))  # shared by the clusters
        Y = Mixture(Z, GaussianARD, mu, tau, cluster_plate=axis)
        params = [mu, tau]
    else:
        P = Beta([0.5, 0.5], plates=(K, D) if axis == -2 else (D, K))
        Y = Mixture(Z, Bernoulli, P, cluster_plate=axis)
        params = [P]
    Y.observe(data)
    Z.initialize_from_random()
    Q = VB(Y, *params, Z)
    Q.update(repeat=100)
    return Y, Q, params


@pytest.mark.parametrize("family", ["gaussian", "bernoulli"])
def test_cluster_plate_is_the_mixture_with_its_parameters_transposed(family):
    # BayesPy's cluster_plate=-2 (BayesPy 0.6.6 itself fails on these), against
    # the same model declared with the clusters on the last plate.
    Y, Q, params = _mixture_with_clusters_on(-2, family)
    Y1, Q1, params1 = _mixture_with_clusters_on(-1, family)
    assert Y.plates == Y1.plates == (60, 3)
    assert Q.compute_lowerbound() == pytest.approx(Q1.compute_lowerbound(), rel=1e-12)
    np.testing.assert_allclose(
        params[0].get_moments()[0], np.swapaxes(params1[0].get_moments()[0], 0, 1), rtol=1e-10
    )


def test_cluster_plate_errors():
    z = Categorical(Dirichlet(np.ones(2)), plates=(5,))
    with pytest.raises(NetworkError, match="no axis -3"):
        Mixture(z, GaussianARD, GaussianARD(0, 1, plates=(2, 3)), 1.0, cluster_plate=-3)
    with pytest.raises(NetworkError, match="negative axis"):
        Mixture(z, GaussianARD, GaussianARD(0, 1, plates=(2,)), 1.0, cluster_plate=0)


# ----------------------------------------------------------------- missing values in X
def _mixture_from_a_fixed_start(n_rows, K=4, D=2):
    alpha = Dirichlet(1e-3 * np.ones(K), name="alpha")
    z = Categorical(alpha, plates=(n_rows,), name="z")
    mu = Gaussian(np.zeros(D), 1e-3 * np.identity(D), plates=(K,), name="mu")
    Lambda = Wishart(D, 1e-2 * np.identity(D), plates=(K,), name="Lambda")
    mu.initialize_from_parameters(
        np.array([[1.0, 1.0], [5.0, 1.0], [1.0, 5.0], [5.0, 5.0]]), np.identity(D)
    )
    return Mixture(z, Gaussian, mu, Lambda, name="y")


def test_rows_missing_from_x_are_the_fit_without_them():
    # NaN rows of a mixture: each row's assignment has no observed child,
    # so both are integrated out; the fit is the fit of the other rows.
    y = blobs(600, seed=4)
    missing = np.random.RandomState(4).rand(600) < 0.25
    y_nan = y.copy()
    y_nan[missing] = np.nan
    kw = dict(model=_mixture_from_a_fixed_start, init_params="model", max_iter=20, tol=0)
    est = SVIBayesianNetwork(**kw).fit(y_nan)
    ref = SVIBayesianNetwork(**kw).fit(y[~missing])
    np.testing.assert_allclose(est.lower_bounds_, ref.lower_bounds_, rtol=1e-10)
    for a, b in zip(est.nodes_["mu"].get_moments(), ref.nodes_["mu"].get_moments()):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="some but not all"):
        SVIBayesianNetwork(**kw).fit(np.where([[True, False]], np.nan, y))


def test_pca_with_missing_entries_is_vmp_with_a_mask():
    # Bayesian PCA of X with a fifth of the entries NaN: the estimator's
    # batch passes are VMP sweeps of the network observed with a mask.
    rng = np.random.RandomState(1)
    data = rng.randn(300, 2) @ rng.randn(2, 6) + 0.5 * rng.randn(300, 6)
    observed = rng.rand(300, 6) < 0.8
    X = np.where(observed, data, np.nan)
    loadings = rng.randn(1, 6, 3)

    def network(n_rows):
        Xn = GaussianARD(0, 1, plates=(n_rows, 1), shape=(3,), name="X")
        alpha = Gamma(1e-5, 1e-5, plates=(3,), name="alpha")
        C = GaussianARD(0, alpha, plates=(1, 6), shape=(3,), name="C")
        tau = Gamma(1e-5, 1e-5, name="tau")
        C.initialize_from_parameters(loadings, 1.0)
        return GaussianARD(SumMultiply("d,d->", Xn, C), tau, name="Y"), Xn, alpha, C, tau

    est = SVIBayesianNetwork(
        model=lambda n: network(n)[0], init_params="model", max_iter=10, tol=0, accelerate=False
    ).fit(X)
    assert est.global_nodes_ == ["alpha", "C", "tau"]
    Y, Xn, alpha, C, tau = network(300)
    Y.observe(data, mask=observed)
    Q = VB(Y, Xn, alpha, C, tau, accelerate=False)
    Q.update(Xn, alpha, C, tau, repeat=10, tol=-np.inf)
    np.testing.assert_allclose(est.lower_bounds_, Q.L, rtol=1e-10)


@pytest.mark.parametrize("missing", [False, True])
def test_pca_batch_passes_rotate_as_vb_does(missing):
    # The default batch passes rotate the factor model's latent space after
    # each pass, as VB's sweeps do: both reach the same bound in tens of
    # passes, where plain sweeps take thousands (VB's own rotated sweeps are
    # the reference; its bound after a sweep has the rotated scores, the
    # estimator's the scores recomputed from the rotated globals, never lower).
    rng = np.random.RandomState(1)
    data = rng.randn(300, 2) @ rng.randn(2, 6) + 0.5 * rng.randn(300, 6)
    observed = rng.rand(300, 6) < 0.8 if missing else np.ones((300, 6), dtype=bool)
    X = np.where(observed, data, np.nan)
    loadings = rng.randn(1, 6, 3)

    def network(n_rows):
        Xn = GaussianARD(0, 1, plates=(n_rows, 1), shape=(3,), name="X")
        alpha = Gamma(1e-5, 1e-5, plates=(3,), name="alpha")
        C = GaussianARD(0, alpha, plates=(1, 6), shape=(3,), name="C")
        tau = Gamma(1e-5, 1e-5, name="tau")
        C.initialize_from_parameters(loadings, 1.0)
        return GaussianARD(SumMultiply("d,d->", Xn, C), tau, name="Y"), Xn, alpha, C, tau

    est = SVIBayesianNetwork(
        model=lambda n: network(n)[0], init_params="model", max_iter=500, tol=1e-9
    ).fit(X)
    Y, Xn, alpha, C, tau = network(300)
    Y.observe(data, mask=observed)
    Q = VB(Y, Xn, alpha, C, tau, tol=1e-9)
    Q.update(Xn, alpha, C, tau, repeat=10)
    # Pass by pass, the estimator's bound is VB's or above it, by little.
    L, ref = np.asarray(est.lower_bounds_[:10]), np.asarray(Q.L)
    assert np.all(L >= ref - 1e-9 * np.abs(ref))
    assert np.all(np.diff(est.lower_bounds_) >= -1e-10 * np.abs(est.lower_bounds_[1:]))
    Q.update(Xn, alpha, C, tau, repeat=500)
    assert est.converged_ and Q.iter < 200 and est.n_iter_ < 200
    np.testing.assert_allclose(est.lower_bound_, Q.L[-1], rtol=1e-6)
    # The noise precision is not rotated: the two agree on it.
    tau_est = est.nodes_["tau"].get_moments()[0]
    np.testing.assert_allclose(tau_est, tau.get_moments()[0], rtol=1e-4)
    plain = SVIBayesianNetwork(
        model=lambda n: network(n)[0],
        init_params="model",
        max_iter=est.n_iter_,
        tol=1e-9,
        accelerate=False,
    )
    with pytest.warns(ConvergenceWarning):
        plain.fit(X)
    assert plain.lower_bound_ < est.lower_bound_


def _column_means(n_rows, D=4):
    mu = GaussianARD(0.0, 1.0, plates=(D,), name="mu")
    return GaussianARD(mu, 1.0, plates=(n_rows, D), name="y")


def _sparse_columns(n, fractions, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(np.arange(len(fractions)) - 1.0, 1.0, size=(n, len(fractions)))
    X[rng.uniform(size=X.shape) > np.asarray(fractions)] = np.nan
    return X[~np.isnan(X).all(axis=1)]


@pytest.mark.parametrize("total", ["auto", 5000])
def test_each_plate_element_steps_by_its_own_counter_from_its_own_children(total):
    # Paquet's Alg. 1, eq. (6), per element m of a global node: a step
    # moves only the elements the minibatch reaches, by rho(t_m + 1) with
    # t_m the element's own updates, towards prior + (N_m / C_m) * (its
    # children's messages), N_m = N * n_m / n the share of the N rows that
    # reach m (n_m of the n rows seen).  Reference: the recursion by hand
    # for y_rj ~ N(mu_j, 1), mu_j ~ N(0, 1), on a stream of chunks that are
    # one step each; with total_samples='auto', N = n and the data part of
    # mu grows with it before each step, as any factor's.
    X = _sparse_columns(600, [1.0, 0.3, 0.02, 0.0], seed=3)
    est = SVIBayesianNetwork(
        model=_column_means,
        learning_method="online",
        batch_size=100,
        step_safety=False,
        learning_offset=2.0,
        learning_decay=0.6,
        total_samples=total,
    )
    prior = np.array([[0.0], [-0.5]])  # (mean * precision, -precision / 2)
    lam = np.zeros((2, 4)) + prior
    t = np.zeros(4)
    seen = np.zeros(4)
    n = 0
    for chunk in np.array_split(X, 8):
        est.partial_fit(chunk)
        if total == "auto" and n:
            lam = prior + (lam - prior) * (n + len(chunk)) / n
        n += len(chunk)
        obs = ~np.isnan(chunk)
        C = obs.sum(axis=0)
        seen += C
        N = (n if total == "auto" else total) * seen / n
        hit = C > 0
        rho = (t[hit] + 1.0 + 2.0) ** -0.6
        target = prior + np.array([N * np.nansum(chunk, axis=0) / np.maximum(C, 1), -0.5 * N])
        lam[:, hit] = (1 - rho) * lam[:, hit] + rho * target[:, hit]
        t += hit
        np.testing.assert_array_equal(est._svi.rows["mu"].steps, t)
        got = est.natural_params_["mu"]
        np.testing.assert_allclose(np.asarray(got[0]), lam[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1]), lam[1], rtol=1e-12)
    assert t[3] == 0 and t[2] < t[0]  # the empty column never moved, the sparse one less


def test_online_fit_gives_rarely_observed_elements_their_exact_precision():
    # With one counter and N / |S| for every element, a column seen in 0.1%
    # of the rows is blended towards its prior by every minibatch that
    # misses it: its posterior precision was 3% off here.  With
    # per-element counters and N_m / C_m every target has the exact
    # precision 1 + n_j: the fit's is the closed form's to 0.5% after 3
    # passes, and the means within 3 posterior deviations.
    X = _sparse_columns(60000, [1.0, 0.1, 0.01, 0.001], seed=0)
    n_j = (~np.isnan(X)).sum(axis=0)
    exact_precision = 1.0 + n_j
    exact_mean = np.nansum(X, axis=0) / exact_precision
    est = SVIBayesianNetwork(
        model=_column_means, learning_method="online", max_iter=3, tol=0, random_state=0
    ).fit(X)
    mean, second = est.nodes_["mu"].get_moments()
    np.testing.assert_allclose(1.0 / (second - mean**2), exact_precision, rtol=5e-3)
    assert np.all(np.abs(mean - exact_mean) * np.sqrt(exact_precision) < 3.0)


def test_each_element_counts_the_observed_children_it_receives():
    # C_m and N_m of Paquet's eq. (6): the child variables whose messages an
    # element of a global node receives, each row's weight times, a masked
    # (NaN) element counting nothing.  Reference: the sums over the
    # observed entries by hand, for a mixture's weights (z of shape (n, D)),
    # its cluster means (every observed element reaches every cluster),
    # PCA's loadings (plates (1, D)) and noise (a scalar), with weights.
    from skvi.engine.data import Rows

    rng = np.random.RandomState(0)
    n, D, K = 40, 4, 3
    X = rng.normal(size=(n, D))
    X[rng.rand(n, D) < 0.4] = np.nan
    X[5] = np.nan  # a row with nothing observed
    w = rng.uniform(0.5, 2.0, n)
    obs = ~np.isnan(X)
    per_column = (w[:, None] * obs).sum(axis=0)

    def mixture(n_rows):
        alpha = Dirichlet(np.ones(K), name="alpha")
        z = Categorical(alpha, plates=(n_rows, D), name="z")
        mu = GaussianARD(0, 1e-2, plates=(K,), name="mu")
        tau = Gamma(1.0, 1.0, plates=(K,), name="tau")
        return Mixture(z, GaussianARD, mu, tau, name="y")

    def pca(n_rows):
        Xn = GaussianARD(0, 1, plates=(n_rows, 1), shape=(2,), name="X")
        C = GaussianARD(0, 1, plates=(1, D), shape=(2,), name="C")
        tau = Gamma(1e-3, 1e-3, name="tau")
        return GaussianARD(SumMultiply("d,d->", Xn, C), tau, name="Y")

    cases = [
        (
            mixture,
            {
                "alpha": [per_column.sum()],
                "mu": np.full(K, per_column.sum()),
                "tau": np.full(K, per_column.sum()),
            },
        ),
        (pca, {"C": per_column, "tau": [per_column.sum()]}),
    ]
    for builder, want in cases:
        est = SVIBayesianNetwork(model=builder)
        est.n_features_in_ = D
        sizes = {name: len(np.ravel(v)) for name, v in want.items()}
        assert set(est._settings.row_groups) == set(want)
        got = est._row_counts(Rows(X, None, w), sizes)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-12)
        # Without NaN: every entry, the same for a row block and all the rows.
        full = est._row_counts(Rows(np.nan_to_num(X), None, w), sizes)
        for name, value in want.items():
            np.testing.assert_allclose(
                full[name], np.full(len(np.ravel(value)), w.sum() * (D if name != "C" else 1))
            )


# ----------------------------------------------------------------- the family layer
def test_gaussian_draws_are_bayespys():
    # The draw is expfam's MultivariateGaussian's, mean plus the inverse
    # precision factor times the normals: BayesPy's, from the same state.
    theirs, ours = _library("bayespy"), _library("skvi")
    precision = np.array([[2.0, 0.5], [0.5, 1.0]])
    draws = []
    for lib in (ours, theirs):
        np.random.seed(0)
        draws.append(lib.Gaussian(np.array([1.0, -1.0]), precision, plates=(4,)).random())
    np.testing.assert_allclose(draws[0], draws[1], rtol=1e-12)


def test_observed_wishart_values_must_be_positive_definite():
    with pytest.raises(NetworkError, match="positive definite"):
        Wishart(3, np.identity(2), name="L").observe(np.diag([1.0, -1.0]))
    x = np.array([[2.0, 0.3], [0.3, 1.0]])
    L = Wishart(3, np.identity(2))
    L.observe(x)
    assert float(L.get_moments()[1]) == pytest.approx(np.log(np.linalg.det(x)), rel=1e-12)


# ------------------------------------------------- VB's sweeps and conveniences
def test_vb_conveniences_match_bayespy():
    # The callback once a sweep, has_converged, and each node's term of the
    # bound, which BayesPy computes for the same network after the same sweeps.
    results = {}
    for name in ("skvi", "bayespy"):
        _, mu, tau, Q = quickstart(_library(name))
        calls = []
        Q.set_callback(lambda: calls.append(1))
        kw = {"verbose": False} if name == "bayespy" else {}
        Q.update(repeat=4, tol=-np.inf, **kw)
        terms = Q.compute_lowerbound_terms()
        results[name] = (len(calls), Q.has_converged(), [terms[n] for n in Q.model])
        assert sum(terms.values()) == pytest.approx(Q.compute_lowerbound(), rel=1e-12)
    assert results["skvi"][:2] == results["bayespy"][:2] == (4, False)
    np.testing.assert_allclose(results["skvi"][2], results["bayespy"][2], rtol=1e-8)


def test_vb_update_refuses_sweeps_that_cannot_stop():
    _, _, _, Q = quickstart(_library("skvi"))
    for tol in (-1e-3, float("nan"), -np.inf):
        with pytest.raises(ValueError, match="tol"):
            Q.update(repeat=None, tol=tol)
    with pytest.raises(ValueError, match="tol must be a number"):
        Q.update(repeat=3, tol=float("nan"))
    for repeat in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="repeat"):
            Q.update(repeat=repeat)


def test_vb_update_stops_at_an_exact_fixed_point_and_at_zero_bounds():
    # tol=0 stops when a sweep leaves the bound exactly where it was; bounds
    # of exactly 0 (an empty model) are a fixed point, not a division by 0.
    _, _, _, Q = quickstart(_library("skvi"))
    Q.update(repeat=None, tol=0.0)
    assert Q.has_converged() and Q.L[-1] <= Q.L[-2]
    empty = VB()
    empty.update(repeat=None)
    np.testing.assert_array_equal(empty.L, [0.0, 0.0])
    assert empty.has_converged()


def test_vb_update_with_minus_infinite_tol_runs_every_sweep():
    _, _, _, Q = quickstart(_library("skvi"))
    before = Q.iter
    Q.update(repeat=7, tol=-np.inf)
    assert Q.iter - before == 7 and not Q.has_converged()


def test_vb_update_warns_when_the_bound_falls_and_stops_when_it_is_not_finite(monkeypatch):
    _, _, _, Q = quickstart(_library("skvi"))
    bounds = iter([-10.0, -12.0, np.nan, -1.0])
    monkeypatch.setattr(Q, "compute_lowerbound", lambda: next(bounds))
    with pytest.warns(RuntimeWarning, match="lower bound decreased by 2"):
        Q.update(repeat=1)
        Q.update(repeat=1)
    with pytest.warns(RuntimeWarning, match="lower bound is nan"):
        Q.update(repeat=None, tol=1e-3)  # returns, never hangs
    assert not Q.has_converged() and np.isnan(Q.L[-1])


def test_vb_update_logs_each_sweep_and_drives_a_progress_bar(caplog):
    _, _, _, Q = quickstart(_library("skvi"))

    class Bar:
        def __init__(self, total):
            self.total, self.n, self.closed = total, 0, False

        def update(self):
            self.n += 1

        def close(self):
            self.closed = True

    bars = []
    with caplog.at_level("INFO", logger="skvi"):
        Q.update(
            repeat=3,
            tol=-np.inf,
            verbose=True,
            tqdm=lambda total: bars.append(Bar(total)) or bars[-1],
        )
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        f"VB iteration {Q.iter - 2 + i}" for i in range(3)
    ]
    assert (bars[0].total, bars[0].n, bars[0].closed) == (3, 3, True)


@pytest.mark.parametrize("scale", [1e4, 1e6])
def test_mixture_assignments_stay_normalised_at_large_scales(scale):
    # Far from the prior's scale, a point's natural parameters over the
    # clusters are huge and may tie: its responsibilities must still sum to
    # one (they came out [1, 1] when log-sum-exp was subtracted from them),
    # and the first sweep's terms of the assignments, the mixture, the
    # weights and the precisions are BayesPy's, which normalises the same
    # way.  (The cluster means' term loses digits to cancellation in both
    # libraries at these scales, differently.)
    y = scale * blobs(200, seed=1)
    terms = {}
    for name in ("skvi", "bayespy"):
        Q, (alpha, Z, mu, Lambda) = gmm(_library(name), y, seed=0, repeat=1)
        found = Q.compute_lowerbound_terms()
        terms[name] = [found[n] for n in (Q.model[0], Lambda, Z, alpha)]
        if name == "skvi":
            np.testing.assert_allclose(Z.get_moments()[0].sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(terms["skvi"], terms["bayespy"], rtol=1e-6)


# ------------------------------------------------------------ deep networks
def _mean_chain(n):
    xs = [GaussianARD(0.0, 1.0, plates=(2,), name="x0")]
    for i in range(1, n):
        xs.append(GaussianARD(xs[-1], 1.0, name=f"x{i}"))
    return xs


def _precision_chain(n):
    taus = [Gamma(2.0, 1.0, name="t0")]
    for i in range(1, n):
        taus.append(Gamma(2.0, taus[-1], name=f"t{i}"))
    y = GaussianARD(0.0, taus[-1], plates=(3,), name="y")
    return taus + [y]


def _sum_chain(n):
    from skvi.networks import SumMultiply

    x = GaussianARD(0.0, 1.0, shape=(2,), name="x")
    s = x
    for _ in range(n):
        s = SumMultiply("i,i->i", s, np.full(2, 1.0))
    return [x, GaussianARD(s, 1.0, shape=(2,), name="y")]


def _sum_multiply_chain(n):
    from skvi.networks import SumMultiply

    xs = [GaussianARD(0.0, 1.0, shape=(2,), name="x0")]
    for i in range(1, n):
        f = SumMultiply("i,i->i", xs[-1], np.full(2, 0.5))
        xs.append(GaussianARD(f, 1.0, shape=(2,), name=f"x{i}"))
    return xs


@pytest.mark.parametrize(
    "build, n, data, mask",
    [
        (_mean_chain, 600, [1.0, 2.0], True),
        (_mean_chain, 600, [1.0, np.nan], [True, False]),
        (_precision_chain, 600, [1.0, -1.0, 0.5], True),
        (_sum_chain, 600, [1.0, 2.0], True),
        (_sum_multiply_chain, 400, [1.0, 2.0], True),
        pytest.param(_mean_chain, 2000, [1.0, np.nan], [True, False], marks=pytest.mark.slow),
        pytest.param(_precision_chain, 2000, [1.0, -1.0, 0.5], True, marks=pytest.mark.slow),
        pytest.param(_sum_chain, 2000, [1.0, 2.0], True, marks=pytest.mark.slow),
        pytest.param(_sum_multiply_chain, 2000, [1.0, 2.0], True, marks=pytest.mark.slow),
    ],
)
def test_deep_networks_update_observe_pickle_and_copy(build, n, data, mask):
    # A network deeper than Python's recursion limit: every traversal
    # (observing with a mask, reading the prior's moments, the messages
    # through a chain of sums of products, pickling, copying) is iterative.
    # The copies equal the original to the last bit, keep one graph, and
    # go on as it does.
    import copy
    import pickle

    nodes = build(n)
    nodes[-1].observe(np.array(data), mask=mask)
    latent = [node for node in nodes if not node.observed]

    def bound():
        # VB's own sum of the terms (its check for cycles is left out here).
        return sum(node.lower_bound_contribution() for node in nodes)

    for _ in range(2):
        for node in reversed(latent):
            node.update()
    before = bound()
    assert np.isfinite(before)
    for copied in (
        pickle.loads(pickle.dumps(nodes[-1])),
        copy.deepcopy(nodes[-1]),
    ):
        assert copied is not nodes[-1]
        np.testing.assert_array_equal(copied.get_moments()[0], nodes[-1].get_moments()[0])
        assert len(_ancestors(copied)) == len(_ancestors(nodes[-1]))
    first, last = pickle.loads(pickle.dumps([nodes[0], nodes[-1]]))
    assert any(node is first for node in _ancestors(last))
    a, b = copy.deepcopy([nodes[0], nodes[-1]])
    assert any(node is a for node in _ancestors(b)) and a is not nodes[0]
    # The copy sweeps as the original does, to the same moments.
    named = {node.name: node for node in _ancestors(b) if node.name}
    for node in reversed(latent):
        node.update()
        named[node.name].update()
    after = bound()
    assert after >= before - 1e-9 * abs(before)
    np.testing.assert_array_equal(b.get_moments()[0], nodes[-1].get_moments()[0])


def _ancestors(node):
    """Every node above ``node`` and itself, without recursion."""
    seen, stack, out = {id(node)}, [node], []
    while stack:
        n = stack.pop()
        out.append(n)
        for p in n.parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return out


def test_nodes_pickled_together_keep_one_graph():
    # Two nodes of one network pickle the network once and come back
    # sharing their parent; a deep copy of both does the same; a shallow
    # copy shares the parents as before.
    import copy
    import pickle

    mu = GaussianARD(0.0, 1e-3, name="mu")
    tau = Gamma(1.0, 1.0, name="tau")
    a = GaussianARD(mu, tau, plates=(3,), name="a")
    b = GaussianARD(mu, 2.0, name="b")
    a.observe([1.0, 2.0, 3.0])
    VB(a, b, mu, tau).update(repeat=3)
    alone = len(pickle.dumps(a))
    both = pickle.dumps((a, b))
    assert len(both) < alone + 200
    a2, b2 = pickle.loads(both)
    assert a2.parents[0] is b2.parents[0] and a2.parents[0] is not mu
    assert [c for c, _ in a2.parents[0].children] == [a2, b2]
    a3, b3 = copy.deepcopy((a, b))
    assert a3.parents[0] is b3.parents[0] and a3.parents[1].children[0][0] is a3
    Q, Q2 = VB(a, b, mu, tau), VB(a2, b2, *a2.parents)
    assert Q2.compute_lowerbound() == Q.compute_lowerbound()
    shallow = copy.copy(b)
    assert shallow is not b and shallow.parents[0] is mu


_nan, _inf = np.nan, np.inf
_REFUSED = [
    # (declaration or observation, what the message names, what it says is valid)
    (lambda: GaussianARD(_nan, 1.0, name="x"), "GaussianARD 'x': parent 'mu'", "finite"),
    (lambda: GaussianARD(0.0, _inf, name="x"), "GaussianARD 'x': parent 'alpha'", "positive"),
    (lambda: GaussianARD(0.0, -1.0, name="x"), "GaussianARD 'x': parent 'alpha'", "positive"),
    (lambda: Gamma(_nan, 1.0, name="g"), "Gamma 'g': parent 'a'", "positive"),
    (lambda: Gamma(1.0, 0.0, name="g"), "Gamma 'g': parent 'b'", "positive"),
    (
        lambda: Gaussian(np.zeros(2), [[1.0, 0.5], [0.0, 1.0]], name="x"),
        "Gaussian 'x': parent 'Lambda'",
        "symmetric positive definite",
    ),
    (lambda: Gaussian([0.0, _inf], np.eye(2), name="x"), "Gaussian 'x': parent 'mu'", "finite"),
    (
        lambda: Wishart(3, [[1.0, 0.5], [0.0, 1.0]], name="L"),
        "Wishart 'L': parent 'V'",
        "symmetric positive definite",
    ),
    (lambda: Wishart(_nan, np.eye(2), name="L"), "Wishart 'L': parent 'n'", "above D - 1"),
    (lambda: Dirichlet([1.0, _nan], name="d"), "Dirichlet 'd': parent 'alpha'", "positive"),
    (lambda: Dirichlet([1.0, 0.0], name="d"), "Dirichlet 'd': parent 'alpha'", "positive"),
    (lambda: Beta([1.0, _inf], name="b"), "Beta 'b': parent 'alpha'", "positive"),
    (lambda: Categorical([0.5, 0.6], name="z"), "Categorical 'z': parent 'p'", "summing to 1"),
    (lambda: Categorical([_nan, 1.0], name="z"), "Categorical 'z': parent 'p'", "finite"),
    (
        lambda: Multinomial(-1, [0.5, 0.5], name="m"),
        "Multinomial 'm': the number of draws n",
        "count",
    ),
    (
        lambda: Multinomial(1.5, [0.5, 0.5], name="m"),
        "Multinomial 'm': the number of draws n",
        "integer",
    ),
    (
        lambda: Multinomial(_nan, [0.5, 0.5], name="m"),
        "Multinomial 'm': the number of draws n",
        "count",
    ),
    (lambda: Bernoulli(2.0, name="b"), "Bernoulli 'b': parent 'p'", "in [0, 1]"),
    (lambda: Poisson(_nan, name="c"), "Poisson 'c': parent 'lambda'", "positive"),
    (
        lambda: Mixture(
            Categorical([0.5, 0.5], plates=(3,)), GaussianARD, [0.0, _nan], 1.0, name="y"
        ),
        "Mixture 'y': GaussianARD 'y[cluster]': parent 'mu'",
        "finite",
    ),
    (
        lambda: GaussianARD(0.0, 1.0, plates=(3,), name="y").observe([1.0, _nan, 2.0]),
        "GaussianARD 'y': observed data",
        "finite",
    ),
    (
        lambda: Gaussian(np.zeros(2), np.eye(2), plates=(2,), name="y").observe(
            [[1, 1], [_inf, 2]]
        ),
        "Gaussian 'y': observed data",
        "finite",
    ),
    (
        lambda: Dirichlet([1.0, 1.0], name="d").observe([0.5, 0.6]),
        "Dirichlet 'd': observed",
        "summing to 1",
    ),
    (lambda: Beta([1.0, 1.0], name="b").observe(2.0), "Beta 'b': observed data", "in [0, 1]"),
    (
        lambda: Multinomial(2, [0.5, 0.5], name="m").observe([1.5, 0.5]),
        "Multinomial 'm': observed data",
        "summing to n",
    ),
    (
        lambda: Wishart(3, np.eye(2), name="L").observe(np.array([[1.0, 0.5], [0.0, 1.0]])),
        "Wishart 'L': observed data",
        "symmetric positive definite",
    ),
    (lambda: Gamma(1.0, 1.0, name="g").observe(_nan), "Gamma 'g': observed data", "positive"),
    (lambda: Poisson(1.0, name="c").observe(_inf), "Poisson 'c': observed data", "count"),
    (
        lambda: Categorical([0.5, 0.5], name="z").observe(_nan),
        "Categorical 'z': observed",
        "[0, 2)",
    ),
    (lambda: Bernoulli(0.5, name="b").observe(_nan), "Bernoulli 'b': observed data", "0 or 1"),
    (
        lambda: Mixture(
            Categorical([0.5, 0.5], plates=(3,)), GaussianARD, [0.0, 1.0], 1.0, name="y"
        ).observe([1.0, _nan, 2.0]),
        "Mixture 'y': observed data",
        "finite",
    ),
]


@pytest.mark.parametrize("make, names, valid", _REFUSED)
def test_parameters_and_data_outside_the_family_are_refused(make, names, valid):
    # Non-finite parameters, parameters outside a family's domain and data
    # outside its support would turn every moment and the bound into NaN (or
    # fit a density that is not one): each is a ValueError naming the node,
    # the argument, and what is valid.
    with pytest.raises(NetworkError) as err:
        make()
    assert isinstance(err.value, ValueError)
    message = str(err.value)
    assert message.startswith(names) and valid in message


def test_missing_values_under_a_mask_are_still_taken():
    y = GaussianARD(GaussianARD(0.0, 1e-6, name="mu"), 1.0, plates=(3,), name="y")
    y.observe([1.0, _nan, 3.0], mask=[True, False, True])
    VB(y, y.parents[0]).update(repeat=2)
    assert float(y.parents[0].get_moments()[0]) == pytest.approx(2.0, rel=1e-5)
    z = Categorical(Dirichlet([1.0, 1.0, 1.0]), plates=(3,), name="z")
    z.observe([0, _nan, 2], mask=[True, False, True])
    assert z.get_moments()[0][1].sum() == pytest.approx(1.0)


def test_gaussian_wishart_and_ellipsis_messages_say_what_is_wrong():
    from skvi.networks import GaussianWishart, SumMultiply

    gw = GaussianWishart(np.zeros(2), 1.0, 3, np.eye(2), name="gw")
    with pytest.raises(NetworkError, match=r"GaussianWishart 'gw': cannot be observed"):
        gw.observe(np.zeros(2))
    x = GaussianARD(0.0, 1.0, shape=(2,))
    with pytest.raises(NetworkError, match=r"ellipsis '\.\.\.' is not supported"):
        SumMultiply("...i", x)
    with pytest.raises(NetworkError, match=r"'1' is not a key"):
        SumMultiply("i1->i", GaussianARD(0.0, 1.0, shape=(2, 2)))


def test_vb_takes_a_network_deeper_than_the_recursion_limit():
    # Its acyclicity check walks the graph with a stack of its own; a cycle
    # is still named.
    import sys

    x = GaussianARD(0, 1)
    for _ in range(sys.getrecursionlimit() + 500):
        x = GaussianARD(x, 1)
    x.observe(1.0)
    Q = VB(x)
    assert np.isfinite(Q.compute_lowerbound())


# ------------------------------------------------- inputs, the declared network, bad builders
def _bayespy_regression():
    """BayesPy's regression example: ten rows of a line with a bias column, its model."""
    np.random.seed(42)
    x = np.arange(10)
    y = 2 * x + 5 + 2 * np.random.randn(10)
    return np.vstack([x, np.ones(len(x))]).T, y


def regression_builder(X_rows):
    w = GaussianARD(0, 1e-6, shape=(X_rows.shape[1],), name="w")
    tau = Gamma(1e-3, 1e-3, name="tau")
    return GaussianARD(SumMultiply("d,d->", X_rows, w), tau, name="y")


def test_a_builder_of_inputs_is_vmp_on_the_same_network():
    X, y = _bayespy_regression()
    Y = regression_builder(X)
    Y.observe(y)
    w, tau = Y.parents[0].parents[1], Y.parents[1]
    Q = VB(Y, w, tau)
    Q.update(repeat=1000, tol=1e-13)
    est = SVIBayesianNetwork(model=regression_builder, max_iter=1000, tol=1e-13).fit(X, y)
    Ew = est.nodes_["w"].get_moments()[0]
    np.testing.assert_allclose(Ew, w.get_moments()[0], rtol=1e-6)
    np.testing.assert_allclose(est.nodes_["tau"].get_moments()[0], tau.get_moments()[0], rtol=1e-6)
    assert est.lower_bound_ == pytest.approx(Q.compute_lowerbound(), rel=1e-8)
    # The posterior predictive mean of y: X E[w], on rows it was not fitted to too.
    new = np.column_stack([np.linspace(-5, 15, 7), np.ones(7)])
    np.testing.assert_allclose(est.predict(X), X @ Ew, rtol=1e-12)
    np.testing.assert_allclose(est.predict(new), new @ Ew, rtol=1e-12)
    assert est.predict(X).shape == (10,)
    batch = est.elbo(X, y)
    assert batch == pytest.approx(Q.compute_lowerbound(), rel=1e-8)
    online = SVIBayesianNetwork(
        model=regression_builder, learning_method="online", max_iter=5, batch_size=2, tol=0
    ).fit(X, y)
    assert online.elbo(X, y) == pytest.approx(batch, rel=0.01)
    stream = SVIBayesianNetwork(model=regression_builder, total_samples=10)
    for _ in range(5):
        for i in range(10):
            stream.partial_fit(X[i : i + 1], y[i : i + 1])
    assert stream.elbo(X, y) == pytest.approx(batch, rel=0.01)
    # score is the data part per row at the fitted globals; y is needed.
    assert est.score(X, y) * 10 == pytest.approx(batch - est._global_bound(est.natural_params_))
    with pytest.raises(ValueError, match=r"score\(X, y\) needs y"):
        est.score(X)


def test_inputs_are_fed_into_the_declared_network_without_calling_the_builder():
    X, y = _bayespy_regression()
    calls = []

    def counted(X_rows):
        calls.append(X_rows.shape[0])
        return regression_builder(X_rows)

    est = SVIBayesianNetwork(
        model=counted, learning_method="online", batch_size=2, max_iter=5, tol=0
    ).fit(X, y)
    assert est.n_batch_iter_ == 25
    # Declared at a few sizes and checked at a few more: never once per block.
    assert len(calls) <= 8
    before = len(calls)
    est.predict(X)
    est.elbo(X, y)
    assert len(calls) == before
    # The rows' inputs are columns of X: fed, never rebuilt.
    assert not est._declaration.rebuild


def _group_means(X_rows, G=3):
    mu = GaussianARD(0.0, 1e-2, plates=(G,), name="mu")
    return Mixture(X_rows[:, 1], GaussianARD, mu, 1.0, name="y")


def test_inputs_as_a_mixtures_index_give_each_groups_closed_form():
    rng = np.random.RandomState(0)
    g = rng.randint(3, size=200)
    X = np.column_stack([rng.normal(size=200), g])  # the index is the second column
    y = np.array([-2.0, 0.0, 3.0])[g] + rng.normal(size=200)
    est = SVIBayesianNetwork(model=_group_means, max_iter=50, tol=1e-12).fit(X, y)
    n = np.bincount(g, minlength=3)
    exact = np.bincount(g, weights=y, minlength=3) / (1e-2 + n)
    np.testing.assert_allclose(est.nodes_["mu"].get_moments()[0], exact, rtol=1e-10)
    np.testing.assert_allclose(est.predict(X[:6]), exact[g[:6]], rtol=1e-10)
    assert not est._declaration.rebuild


def _class_of_group(X_rows, G=2, C=3):
    p = Dirichlet(np.ones(C), plates=(G,), name="p")
    return Mixture(X_rows[:, 0], Categorical, p, name="y")


def _coin_of_group(X_rows, G=2):
    p = Beta([1.0, 1.0], plates=(G,), name="p")
    return Mixture(X_rows[:, 0], Bernoulli, p, name="y")


def test_predict_proba_is_the_posterior_predictive_of_categorical_and_bernoulli_nodes():
    rng = np.random.RandomState(1)
    g = rng.randint(2, size=300)
    X = g[:, None].astype(float)
    y = np.where(g == 0, rng.choice(3, size=300, p=[0.7, 0.2, 0.1]), rng.randint(3, size=300))
    est = SVIBayesianNetwork(model=_class_of_group, max_iter=20, tol=1e-12).fit(X, y)
    counts = np.array([np.bincount(y[g == k], minlength=3) for k in range(2)])
    exact = (1.0 + counts) / (3.0 + counts.sum(axis=1, keepdims=True))  # Dirichlet means
    np.testing.assert_allclose(est.predict_proba(np.array([[0.0], [1.0]])), exact, rtol=1e-10)
    np.testing.assert_array_equal(est.predict(np.array([[0.0], [1.0]])), exact.argmax(axis=1))
    coin = (y == 0).astype(float)
    est = SVIBayesianNetwork(model=_coin_of_group, max_iter=20, tol=1e-12).fit(X, coin)
    heads = np.array([coin[g == k].sum() for k in range(2)])
    mean = (1.0 + heads) / (2.0 + np.bincount(g))
    proba = est.predict_proba(np.array([[0.0], [1.0]]))
    np.testing.assert_allclose(proba, np.column_stack([1 - mean, mean]), rtol=1e-10)
    np.testing.assert_allclose(est.predict(np.array([[0.0], [1.0]])), mean, rtol=1e-10)
    with pytest.raises(NetworkError, match="predict_proba needs a categorical or Bernoulli"):
        SVIBayesianNetwork(model=regression_builder).fit(*_bayespy_regression()).predict_proba(
            np.ones((2, 2))
        )
    # A network fitted on X alone has no inputs to predict from.
    assert not hasattr(
        SVIBayesianNetwork(model=mixture_builder, max_iter=2).fit(blobs(50)), "predict"
    )


def _squared_inputs(X_rows):
    w = GaussianARD(0, 1e-6, shape=(2,), name="w")
    features = np.column_stack([X_rows[:, 0] ** 2, np.ones(len(X_rows))])
    return GaussianARD(SumMultiply("d,d->", features, w), 4.0, name="y")


def test_inputs_computed_by_the_builder_are_exact_too():
    """Values that are no column of X (a square): taken from the builder for each block."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 1))
    y = 1.5 * X[:, 0] ** 2 - 1.0 + 0.5 * rng.normal(size=60)
    est = SVIBayesianNetwork(model=_squared_inputs).fit(X, y)
    assert est._declaration.rebuild
    F = np.column_stack([X[:, 0] ** 2, np.ones(60)])
    S = np.linalg.inv(4.0 * F.T @ F + 1e-6 * np.eye(2))
    np.testing.assert_allclose(est.nodes_["w"].get_moments()[0], 4.0 * S @ F.T @ y, rtol=1e-10)
    online = SVIBayesianNetwork(
        model=_squared_inputs, learning_method="online", batch_size=7, max_iter=20, tol=0
    ).fit(X, y)
    assert online.score(X, y) == pytest.approx(est.score(X, y), rel=0.01)


def test_builders_that_cannot_be_declared_are_refused_up_front():
    X, y = _bayespy_regression()

    def closes_over_inputs(X_rows):
        w = GaussianARD(0, 1e-6, shape=(2,), name="w")
        return GaussianARD(SumMultiply("d,d->", X, w), 1.0, name="y")  # X, not X_rows

    with pytest.raises(NetworkError, match="leading plate must be the rows.*inputs it is given"):
        SVIBayesianNetwork(model=closes_over_inputs).fit(X, y)

    def changes_with_rows(n_rows):
        K = 4 if n_rows > 20 else 3
        alpha = Dirichlet(np.ones(K), name="alpha")
        z = Categorical(alpha, plates=(n_rows,), name="z")
        mu = Gaussian(np.zeros(2), np.eye(2), plates=(K,), name="mu")
        return Mixture(z, Gaussian, mu, np.eye(2), name="y")

    # A batch fit calls it at 50 rows only; it is still refused, naming the model.
    with pytest.raises(NetworkError, match=r"^model: .* different network for different numbers"):
        SVIBayesianNetwork(model=changes_with_rows).fit(blobs(50))

    def rows_elsewhere(n_rows):
        mu = GaussianARD(0.0, 1.0, plates=(min(n_rows, 4), 1), name="mu")
        return GaussianARD(mu, 1.0, plates=(min(n_rows, 4), n_rows), name="y")

    with pytest.raises(NetworkError, match=r"^model: .*no one axis of them is the rows"):
        SVIBayesianNetwork(model=rows_elsewhere).fit(np.zeros((10, 10)))

    shared_mu = GaussianARD(0.0, 1e-3, name="mu")

    def reuses_a_global(n_rows):
        return GaussianARD(shared_mu, 1.0, plates=(n_rows,), name="y")

    with pytest.raises(NetworkError, match=r"^model: .*same node \(GaussianARD 'mu'"):
        SVIBayesianNetwork(model=reuses_a_global).fit(np.zeros((10, 1)))
    # Nothing was fitted into the shared node: no rows were given to it.
    assert all(c.plates[0] in (2, 3) for c, _ in shared_mu.children)

    def of_rows(n_rows):
        return mixture_builder(n_rows)

    with pytest.raises(TypeError, match=r"fit\(X, y\) calls the builder with the rows' inputs"):
        SVIBayesianNetwork(model=of_rows).fit(blobs(20), np.zeros(20))


def test_the_pickle_holds_no_training_rows():
    import pickle

    X, y = _bayespy_regression()
    rng = np.random.RandomState(0)
    sizes = []
    for n in (10, 2000):
        Xn = np.column_stack([rng.normal(size=n), np.ones(n)])
        yn = Xn @ [2.0, 5.0] + rng.normal(size=n)
        est = SVIBayesianNetwork(model=regression_builder, max_iter=5, tol=0).fit(Xn, yn)
        sizes.append(len(pickle.dumps(est)))
        again = pickle.loads(pickle.dumps(est))
        np.testing.assert_allclose(again.predict(X), est.predict(X), rtol=1e-12)
        assert again.score(Xn, yn) == pytest.approx(est.score(Xn, yn), rel=1e-12)
    assert sizes[1] <= sizes[0] + 200


@pytest.mark.parametrize("first", [1, 3])
def test_a_dask_fit_does_not_depend_on_its_chunks(client, first):
    da = pytest.importorskip("dask.array")
    y = blobs(2000, seed=1)
    kw = dict(model=mixture_builder, max_iter=5, random_state=1)
    memory = SVIBayesianNetwork(**kw).fit(y)
    chunks = ((first, 500 - first, 500, 500, 500), (2,))
    dist = SVIBayesianNetwork(**kw).fit(da.from_array(y, chunks=chunks))
    assert dist.score(y) == pytest.approx(memory.score(y), rel=0.01)
    # The start is drawn over every block, as in memory: the same steps.
    np.testing.assert_allclose(dist.lower_bounds_, memory.lower_bounds_, rtol=1e-8)
    X, t = _bayespy_regression()
    ref = SVIBayesianNetwork(model=regression_builder, max_iter=50, tol=0).fit(X, t)
    est = SVIBayesianNetwork(model=regression_builder, max_iter=50, tol=0)
    est.fit(da.from_array(X, chunks=((first, 10 - first), (2,))), da.from_array(t, chunks=first))
    np.testing.assert_allclose(est.lower_bounds_, ref.lower_bounds_, rtol=1e-8)


def test_transform_follows_set_output():
    pd = pytest.importorskip("pandas")
    y = blobs(200)
    est = SVIBayesianNetwork(model=mixture_builder, max_iter=5, random_state=0).fit(y)
    plain = est.transform(y[:5])
    frame = est.set_output(transform="pandas").transform(y[:5])
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["z0", "z1", "z2", "z3"]
    np.testing.assert_array_equal(frame.to_numpy(), plain)


def test_transform_and_score_keep_nothing_of_their_rows():
    # Safe concurrent prediction: answering for new rows writes nothing onto
    # the fitted estimator, and the same rows give the same answers again.
    y = blobs(200)
    est = SVIBayesianNetwork(model=mixture_builder, max_iter=5, random_state=0).fit(y)
    before = dict(est.__dict__)
    first = est.transform(y[:50])
    bound = est.score(y[50:120])
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is v for k, v in before.items())
    np.testing.assert_array_equal(est.transform(y[:50]), first)
    assert est.score(y[50:120]) == bound


def test_missing_observations_in_y_are_the_fit_without_them():
    X, y = _bayespy_regression()
    gappy = y.copy()
    gappy[[2, 7]] = np.nan
    keep = ~np.isnan(gappy)
    kw = dict(model=regression_builder, max_iter=500, tol=1e-13)
    a = SVIBayesianNetwork(**kw).fit(X, gappy)
    b = SVIBayesianNetwork(**kw).fit(X[keep], y[keep])
    np.testing.assert_allclose(
        a.nodes_["w"].get_moments()[0], b.nodes_["w"].get_moments()[0], rtol=1e-8
    )
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, rel=1e-10)


def _shifted_rows(n_rows, D=2):
    # A fixed value repeated on every row: declared once, fed per block.
    mu = GaussianARD(0.0, 1e-3, shape=(D,), name="mu")
    f = SumMultiply("d,d->d", mu, np.ones((n_rows, D)), name="f")
    return GaussianARD(f, 1.0, shape=(D,), name="y")


def test_values_repeated_on_every_row_are_fed_to_every_block():
    rng = np.random.RandomState(0)
    Y = rng.normal([2.0, -3.0], 1.0, size=(300, 2))
    est = SVIBayesianNetwork(model=_shifted_rows, max_iter=50, tol=1e-13).fit(Y)
    assert not est._declaration.rebuild and est._declaration.feeds
    exact = Y.sum(axis=0) / (1e-3 + 300)
    np.testing.assert_allclose(est.nodes_["mu"].get_moments()[0], exact, rtol=1e-10)
    online = SVIBayesianNetwork(
        model=_shifted_rows, learning_method="online", batch_size=7, max_iter=3, tol=0
    ).fit(Y)
    assert online.score(Y) == pytest.approx(est.score(Y), rel=1e-3)


def test_pca_rotations_count_row_weights_as_copies_and_add_over_blocks():
    # The rotation's sums over the rows' scores count a row of weight 2 as
    # two rows, and add over the blocks of a threaded fit: weighted rows fit
    # as their copies, with one thread or two.
    rng = np.random.RandomState(1)
    data = rng.randn(400, 2) @ rng.randn(2, 6) + 0.5 * rng.randn(400, 6)
    weight = rng.randint(1, 3, size=400).astype(float)
    loadings = rng.randn(1, 6, 3)

    def network(n_rows):
        Xn = GaussianARD(0, 1, plates=(n_rows, 1), shape=(3,), name="X")
        alpha = Gamma(1e-5, 1e-5, plates=(3,), name="alpha")
        C = GaussianARD(0, alpha, plates=(1, 6), shape=(3,), name="C")
        tau = Gamma(1e-5, 1e-5, name="tau")
        C.initialize_from_parameters(loadings, 1.0)
        return GaussianARD(SumMultiply("d,d->", Xn, C), tau, name="Y")

    def fit(X, **kw):
        est = SVIBayesianNetwork(model=network, init_params="model", max_iter=20, tol=0, **kw)
        return est.fit(X, **({"sample_weight": weight} if len(X) == 400 else {}))

    copies = fit(np.repeat(data, weight.astype(int), axis=0))
    for n_jobs in (None, 2):
        weighted = fit(data, n_jobs=n_jobs, batch_size=150)
        np.testing.assert_allclose(weighted.lower_bounds_, copies.lower_bounds_, rtol=1e-8)
        np.testing.assert_allclose(
            weighted.nodes_["tau"].get_moments()[0],
            copies.nodes_["tau"].get_moments()[0],
            rtol=1e-8,
        )
