"""The start of SVIBayesianNetwork's fit: a mixture's draws seeded as k-means++ seeds k-means."""

import warnings

import numpy as np
import pytest
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from skvi.engine import Factor
from skvi.engine.data import Rows
from skvi.networks import (
    Categorical,
    Dirichlet,
    Gamma,
    Gaussian,
    GaussianARD,
    GaussianWishart,
    Mixture,
    SumMultiply,
    SVIBayesianNetwork,
)
from skvi.networks._start import (
    INIT_TOL,
    ONLINE_INIT_TOL,
    Sweeps,
    seed_categories,
    seeded_node,
)

# The mixture of the networks tests: Dirichlet(1e-3), Gaussian(0, 1e-3 I), Wishart(2, 1e-2 I).
from test_networks import mixture_builder as mixture  # noqa: E402

CORNERS = np.array([[0.0, 0.0], [0.0, 100.0], [100.0, 0.0], [100.0, 100.0]])


def joint_mixture(n_rows, K=4, D=2):
    # A Normal-Wishart prior around the data, as the guide's: one joint node.
    alpha = Dirichlet(0.5 * np.ones(K), name="alpha")
    z = Categorical(alpha, plates=(n_rows,), name="z")
    mu_Lambda = GaussianWishart(
        np.full(D, 50.0), 0.1, 3.0, 2500.0 * np.identity(D), plates=(K,), name="mu_Lambda"
    )
    return Mixture(z, Gaussian, mu_Lambda, 1.0, name="y")


def tight_corners(per_cluster=50, seed=0):
    rng = np.random.RandomState(seed)
    return np.repeat(CORNERS, per_cluster, axis=0) + 0.01 * rng.randn(4 * per_cluster, 2)


def sorted_means(est):
    if "mu" in est.nodes_:
        means = est.nodes_["mu"].get_moments()[0]
    else:
        u = est.nodes_["mu_Lambda"].get_moments()
        means = np.linalg.solve(u[2], u[0][..., None])[..., 0]
    return means[np.lexsort((means[:, 1].round(), means[:, 0].round()))]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("trials", [None, 1])
@pytest.mark.parametrize("seed", range(6))
def test_seeds_are_scikit_learns_k_means_plus_plus(seed, trials, weighted):
    # A Gaussian cluster seeded by one row has an isotropic expected precision
    # (its prior is), the same for every seed, so the rows' log-likelihoods
    # differ from the seed's by c |x - x_seed|^2 / 2: the seeding's weights
    # are k-means++'s squared distances to the nearest seed (Arthur and
    # Vassilvitskii's D^2), to the shrinkage of each seeded mean towards the
    # prior's 0 (about 5e-6).  From the same random state, the seeds are the
    # rows scikit-learn's kmeans_plusplus picks: its greedy choice of the
    # best of 2 + log(K) draws (trials=None) and the original (trials=1),
    # with row weights too.
    rng = np.random.RandomState(seed)
    X = rng.randn(60, 2) * 3.0
    weight = rng.uniform(0.5, 2.0, size=60) if weighted else None
    est = SVIBayesianNetwork(model=mixture)
    rows = Rows(X, None, weight)
    params = {}
    nodes, _, _, glob = est._template()
    for n in glob:
        nodes[n].initialize_from_prior()
        params[n] = Factor(tuple(nodes[n].phi))
    net = est._local_network(rows, params, start_locals=False)
    state = seed + 100
    seeds = seed_categories(est, net, params, "z", rows, np.random.RandomState(state), trials)
    _, expected = kmeans_plusplus(
        X, 4, sample_weight=weight, random_state=state, n_local_trials=trials
    )
    np.testing.assert_array_equal(seeds, expected)
    # Then every row's q(z) from the seeded clusters: each row in its nearest seed's.
    nearest = np.argmin(((X[:, None, :] - X[seeds][None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(net["z"].u[0].argmax(axis=1), nearest)


@pytest.mark.parametrize("builder", [mixture, joint_mixture])
@pytest.mark.parametrize("random_state", range(8))
def test_seeded_start_finds_separated_clusters_that_random_draws_merge(builder, random_state):
    # Four clusters 100 apart, 0.01 wide: a k-means++ seed lands in a cluster
    # already seeded with probability about 1e-8, so every seeded draw starts
    # one cluster in each, and one update from it (init_max_iter=0) puts each
    # mean at its cluster's centre.  A random draw of the assignments starts
    # every cluster near the mean of the data instead (each at the mean of a
    # random quarter of the rows), far from the corners.
    X = tight_corners(seed=random_state)
    kw = {
        "model": builder,
        "init_max_iter": 0,
        "max_iter": 1,
        "tol": 0,
        "random_state": random_state,
    }
    seeded = SVIBayesianNetwork(init_params="k-means++", **kw).fit(X)
    expected = CORNERS
    if builder is joint_mixture:
        # The conjugate posterior mean of 50 rows: (b0 m0 + 50 x) / (b0 + 50).
        expected = (0.1 * 50.0 + 50 * CORNERS) / 50.1
    np.testing.assert_allclose(sorted_means(seeded), expected, atol=0.05)
    drawn = SVIBayesianNetwork(init_params="random", **kw).fit(X)
    assert np.abs(sorted_means(drawn) - CORNERS).max() > 10.0


def test_a_row_of_weight_zero_is_never_a_seed():
    # A far outlier would be k-means++'s next seed almost surely (its squared
    # distance outweighs all others); with weight 0 it is no sample.
    X = np.vstack([tight_corners(), [[1e4, 1e4]]])
    weight = np.ones(len(X))
    weight[-1] = 0.0
    for random_state in range(5):
        est = SVIBayesianNetwork(
            model=mixture, init_max_iter=0, max_iter=1, tol=0, random_state=random_state
        ).fit(X, sample_weight=weight)
        np.testing.assert_allclose(sorted_means(est), CORNERS, atol=0.05)


def test_auto_seeds_mixtures_only():
    assert seeded_node(SVIBayesianNetwork(model=mixture)) == "z"

    def factors(n_rows):
        x = GaussianARD(0.0, 1.0, plates=(n_rows, 1), shape=(2,), name="x")
        w = GaussianARD(0.0, 1.0, plates=(1, 3), shape=(2,), name="w")
        tau = Gamma(1e-3, 1e-3, name="tau")
        return GaussianARD(SumMultiply("d,d->", x, w), tau, name="y")

    assert seeded_node(SVIBayesianNetwork(model=factors)) is None
    X = np.random.RandomState(0).randn(40, 3)
    with pytest.raises(ValueError, match=r"init_params='k-means\+\+' seeds the categories"):
        SVIBayesianNetwork(model=factors, init_params="k-means++").fit(X)
    # 'auto' takes random draws there: the same fit as init_params='random'.
    auto = SVIBayesianNetwork(model=factors, max_iter=3, tol=0, random_state=0).fit(X)
    drawn = SVIBayesianNetwork(
        model=factors, init_params="random", max_iter=3, tol=0, random_state=0
    ).fit(X)
    np.testing.assert_allclose(auto.lower_bounds_, drawn.lower_bounds_, rtol=1e-12)


@pytest.mark.parametrize(
    "how, n_rows, expected",
    [
        ("batch", 4000, INIT_TOL),
        ("online", 4000, ONLINE_INIT_TOL),
        ("partial_fit", 4000, ONLINE_INIT_TOL),
        # Rows that fit in one minibatch: every step of the fit is a batch step.
        ("online", 500, INIT_TOL),
    ],
)
def test_an_online_fits_start_stops_at_its_own_tolerance(monkeypatch, how, n_rows, expected):
    # The engine's context tells the start whether passes over all the rows
    # follow (the batch tolerance) or online steps do.
    tols = []
    init = Sweeps.__init__

    def recording(self, est, net, rows, params, max_iter, tol):
        tols.append(tol)
        init(self, est, net, rows, params, max_iter, tol)

    monkeypatch.setattr(Sweeps, "__init__", recording)
    X = tight_corners(per_cluster=n_rows // 4)
    method = "online" if how == "partial_fit" else how
    est = SVIBayesianNetwork(model=mixture, learning_method=method, max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.partial_fit(X) if how == "partial_fit" else est.fit(X)
    assert tols and set(tols) == {expected}
