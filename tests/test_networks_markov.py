"""Markov chain nodes of skvi.networks against BayesPy and against closed forms.

BayesPy's hmm and lssm examples run here as written but for the imports,
once with BayesPy's nodes and once with skvi's, from the same numpy seed:
the data their nodes draw are the same, the bound after the first sweep is
BayesPy's to 1e-6 relative, and the final bound is BayesPy's or higher.
The recursions are checked against the joint distribution of a short chain
written out in full: every path enumerated (forward-backward) and the
joint Gaussian of all states inverted by numpy.linalg (the smoother).
"""

import itertools
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import skvi.networks as networks
from skvi.expfam.markov_chain import (
    categorical_chain_moments,
    categorical_chain_sample,
    gaussian_chain_moments,
    gaussian_chain_sample,
)
from skvi.networks import (
    VB,
    CategoricalMarkovChain,
    Dirichlet,
    GaussianARD,
    GaussianMarkovChain,
    NetworkError,
)

_NAMES = (
    "Categorical",
    "CategoricalMarkovChain",
    "Dirichlet",
    "Dot",
    "Gamma",
    "Gaussian",
    "GaussianARD",
    "GaussianMarkovChain",
    "Mixture",
)


def _library(name):
    if name == "skvi":
        return SimpleNamespace(
            name=name, VB=networks.VB, **{n: getattr(networks, n) for n in _NAMES}
        )
    nodes = pytest.importorskip("bayespy.nodes")
    inference = pytest.importorskip("bayespy.inference")
    return SimpleNamespace(name=name, VB=inference.VB, **{n: getattr(nodes, n) for n in _NAMES})


def _update(lib, Q, **kw):
    if lib.name == "bayespy":
        kw["verbose"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        Q.update(**kw)


def hmm_known_parameters(lib):
    """BayesPy's hmm example, "Known parameters" (seeded as its doctest)."""
    np.random.seed(1)
    a0 = [0.6, 0.4]
    A = [[0.7, 0.3], [0.4, 0.6]]
    N = 100
    Z = lib.CategoricalMarkovChain(a0, A, states=N)
    P = [[0.1, 0.4, 0.5], [0.6, 0.3, 0.1]]
    Y = lib.Mixture(Z, lib.Categorical, P)
    weather = Z.random()
    activity = lib.Mixture(weather, lib.Categorical, P).random()
    Y.observe(activity)
    Q = lib.VB(Y, Z)
    _update(lib, Q)
    return Q, Z, weather, activity


def hmm_unknown_parameters(lib):
    """BayesPy's hmm example, "Unknown parameters", after the first part as on its page."""
    hmm_known_parameters(lib)
    mu = np.array([[0, 0], [3, 4], [6, 0]])
    std = 2.0
    K = 3
    N = 200
    p0 = np.ones(K) / K
    q = 0.9
    r = (1 - q) / (K - 1)
    P = q * np.identity(K) + r * (np.ones((3, 3)) - np.identity(3))
    y = np.zeros((N, 2))
    z = np.zeros(N)
    state = np.random.choice(K, p=p0)
    for n in range(N):
        z[n] = state
        y[n, :] = std * np.random.randn(2) + mu[state]
        state = np.random.choice(K, p=P[state])
    a0 = lib.Dirichlet(1e-3 * np.ones(K))
    A = lib.Dirichlet(1e-3 * np.ones((K, K)))
    Z = lib.CategoricalMarkovChain(a0, A, states=N)
    Lambda = std ** (-2) * np.identity(2)
    Y = lib.Mixture(Z, lib.Gaussian, mu, Lambda)
    Y.observe(y)
    Q = lib.VB(Y, Z, A, a0)
    _update(lib, Q, repeat=1)
    first = Q.compute_lowerbound()
    _update(lib, Q, repeat=1000)
    colors = Y.parents[0].get_moments()[0]
    return first, Q, colors, z


def lssm(lib, repeat=10):
    """BayesPy's lssm example without its plotters and rotations."""
    np.random.seed(1)
    M, N, D = 30, 400, 10
    alpha = lib.Gamma(1e-5, 1e-5, plates=(D,), name="alpha")
    A = lib.GaussianARD(0, alpha, shape=(D,), plates=(D,), name="A")
    X = lib.GaussianMarkovChain(np.zeros(D), 1e-3 * np.identity(D), A, np.ones(D), n=N, name="X")
    gamma = lib.Gamma(1e-5, 1e-5, plates=(D,), name="gamma")
    C = lib.GaussianARD(0, gamma, shape=(D,), plates=(M, 1), name="C")
    F = lib.Dot(C, X, name="F")
    C.initialize_from_random()
    tau = lib.Gamma(1e-5, 1e-5, name="tau")
    Y = lib.GaussianARD(F, tau, name="Y")
    Q = lib.VB(X, C, gamma, A, alpha, tau, Y)
    w = 0.3
    a = np.array(
        [
            [np.cos(w), -np.sin(w), 0, 0],
            [np.sin(w), np.cos(w), 0, 0],
            [0, 0, 1, 0],
            [0, 0, 0, 0],
        ]
    )
    c = np.random.randn(M, 4)
    x = np.empty((N, 4))
    f = np.empty((M, N))
    y = np.empty((M, N))
    x[0] = 10 * np.random.randn(4)
    f[:, 0] = np.dot(c, x[0])
    y[:, 0] = f[:, 0] + 3 * np.random.randn(M)
    for n in range(N - 1):
        x[n + 1] = np.dot(a, x[n]) + [1, 1, 10, 10] * np.random.randn(4)
        f[:, n + 1] = np.dot(c, x[n + 1])
        y[:, n + 1] = f[:, n + 1] + 3 * np.random.randn(M)
    mask = np.random.rand(M, N) < 0.2  # bayespy.utils.random.mask(M, N, p=0.2)
    Y.observe(y, mask=mask)
    _update(lib, Q, repeat=1)
    first = Q.compute_lowerbound()
    _update(lib, Q, repeat=repeat - 1)
    return first, Q, (X, C, tau)


# ------------------------------------------------------------- BayesPy's examples
def test_hmm_known_parameters_matches_bayespy():
    theirs = hmm_known_parameters(_library("bayespy"))
    ours = hmm_known_parameters(_library("skvi"))
    np.testing.assert_array_equal(ours[2], theirs[2])  # the weather drawn
    np.testing.assert_array_equal(ours[3], theirs[3])  # the activities drawn
    assert ours[0].compute_lowerbound() == pytest.approx(theirs[0].compute_lowerbound(), rel=1e-6)
    assert round(ours[0].compute_lowerbound(), 4) == -109.5883  # BayesPy's page: -1.095883e+02
    for a, b in zip(ours[1].get_moments(), theirs[1].get_moments()):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


def test_hmm_unknown_parameters_matches_bayespy():
    first_b, Q_b, colors_b, _ = hmm_unknown_parameters(_library("bayespy"))
    first, Q, colors, z = hmm_unknown_parameters(_library("skvi"))
    assert first == pytest.approx(first_b, rel=1e-6)
    final, final_b = Q.compute_lowerbound(), Q_b.compute_lowerbound()
    assert final >= final_b - 1e-6 * abs(final_b)
    assert round(final_b, 4) == pytest.approx(-923.5053, abs=1e-4)  # BayesPy's page
    assert colors.shape == (200, 3)
    np.testing.assert_allclose(colors, colors_b, atol=1e-6)
    # The states are recovered up to the labels, which the data fix here.
    assert np.mean(colors.argmax(axis=1) == z) > 0.9


def test_lssm_matches_bayespy():
    first_b, Q_b, nodes_b = lssm(_library("bayespy"))
    first, Q, nodes = lssm(_library("skvi"))
    assert first == pytest.approx(first_b, rel=1e-6)
    final, final_b = Q.compute_lowerbound(), Q_b.compute_lowerbound()
    assert final >= final_b - 1e-6 * abs(final_b)
    for ours, theirs in zip(nodes, nodes_b):
        for a, b in zip(ours.get_moments(), theirs.get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8 * np.max(np.abs(b)))


# ------------------------------------------------------------- closed forms
def _random_chain(rng, plates, N, K):
    log_p0 = rng.randn(*plates, K)
    log_P = rng.randn(*plates, N - 1, K, K)
    return log_p0, log_P


def test_forward_backward_is_the_enumerated_joint():
    rng = np.random.RandomState(0)
    plates, N, K = (2, 3), 4, 3
    log_p0, log_P = _random_chain(rng, plates, N, K)
    z0, zz, A = categorical_chain_moments(log_p0, log_P)
    for idx in np.ndindex(*plates):
        joint = np.zeros((K,) * N)
        for path in itertools.product(range(K), repeat=N):
            s = log_p0[idx][path[0]]
            s += sum(log_P[idx][t, path[t], path[t + 1]] for t in range(N - 1))
            joint[path] = np.exp(s)
        Z = joint.sum()
        assert A[idx] == pytest.approx(np.log(Z), rel=1e-12)
        joint /= Z
        np.testing.assert_allclose(z0[idx], joint.sum(axis=(1, 2, 3)), rtol=1e-12)
        for t in range(N - 1):
            axes = tuple(a for a in range(N) if a not in (t, t + 1))
            np.testing.assert_allclose(zz[idx][t], joint.sum(axis=axes), rtol=1e-10)


def test_forward_backward_keeps_its_digits_for_large_log_potentials():
    rng = np.random.RandomState(1)
    log_p0, log_P = _random_chain(rng, (), 5, 2)
    z0, zz, A = categorical_chain_moments(log_p0, log_P)
    z0b, zzb, Ab = categorical_chain_moments(log_p0 - 800.0, log_P - 900.0)
    np.testing.assert_allclose(zzb, zz, rtol=1e-10)
    assert Ab == pytest.approx(A - 800.0 - 4 * 900.0, rel=1e-14)


def _dense_precision(J_diag, J_off):
    N, D = J_diag.shape[0], J_diag.shape[-1]
    J = np.zeros((N * D, N * D))
    for n in range(N):
        J[n * D : (n + 1) * D, n * D : (n + 1) * D] = J_diag[n]
        if n + 1 < N:
            J[n * D : (n + 1) * D, (n + 1) * D : (n + 2) * D] = J_off[n]
            J[(n + 1) * D : (n + 2) * D, n * D : (n + 1) * D] = J_off[n].T
    return J


def _random_precision(rng, plates, N, D):
    B = rng.randn(*plates, N * D, N * D)
    J = B @ np.swapaxes(B, -1, -2) + N * D * np.eye(N * D)
    J_diag = np.stack([J[..., n * D : (n + 1) * D, n * D : (n + 1) * D] for n in range(N)], -3)
    J_off = np.stack(
        [J[..., n * D : (n + 1) * D, (n + 1) * D : (n + 2) * D] for n in range(N - 1)], -3
    )
    return J_diag, J_off


def test_smoother_is_the_dense_joint_gaussian():
    rng = np.random.RandomState(0)
    plates, N, D = (3,), 5, 2
    J_diag, J_off = _random_precision(rng, plates, N, D)
    h = rng.randn(*plates, N, D)
    mean, cov, cross, logdet = gaussian_chain_moments(h, J_diag, J_off)
    for i in range(plates[0]):
        J = _dense_precision(J_diag[i], J_off[i])
        S = np.linalg.inv(J)
        np.testing.assert_allclose(mean[i].ravel(), S @ h[i].ravel(), rtol=1e-10)
        assert logdet[i] == pytest.approx(np.linalg.slogdet(J)[1], rel=1e-12)
        for n in range(N):
            block = S[n * D : (n + 1) * D, n * D : (n + 1) * D]
            np.testing.assert_allclose(cov[i, n], block, rtol=1e-10, atol=1e-14)
            if n + 1 < N:
                block = S[n * D : (n + 1) * D, (n + 1) * D : (n + 2) * D]
                np.testing.assert_allclose(cross[i, n], block, rtol=1e-10, atol=1e-14)


def test_smoother_draws_have_the_dense_covariance():
    rng = np.random.RandomState(2)
    N, D = 3, 2
    J_diag, J_off = _random_precision(rng, (), N, D)
    h = rng.randn(N, D)
    x = gaussian_chain_sample(
        np.broadcast_to(h, (40000, N, D)), J_diag, J_off, random_state=np.random.RandomState(3)
    ).reshape(40000, N * D)
    S = np.linalg.inv(_dense_precision(J_diag, J_off))
    np.testing.assert_allclose(x.mean(axis=0), S @ h.ravel(), atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), S, atol=0.02)


def _dense_chain_prior(mu0, Lam0, a, nu):
    """The mean and precision of all the states of ``x_n = a[n-1] x_{n-1} + e_n``, in full."""
    N, D = len(a) + 1, len(mu0)
    P = np.zeros((N * D, N * D))
    P[:D, :D] = Lam0
    m = np.zeros(N * D)
    m[:D] = mu0
    for n in range(1, N):
        V, An = np.diag(nu[n - 1]), a[n - 1]
        now, before = slice(n * D, (n + 1) * D), slice((n - 1) * D, n * D)
        P[now, now] += V
        P[before, before] += An.T @ V @ An
        P[now, before] -= V @ An
        P[before, now] -= An.T @ V
        m[now] = An @ m[before]
    return m, P


@pytest.mark.parametrize("varying", [False, True])
def test_gaussian_chain_node_is_the_dense_posterior_and_evidence(varying):
    # Known dynamics and noise: one sweep is the exact posterior, and the
    # bound is the log evidence of the dense joint Gaussian; two chains (a
    # plate), with dynamics constant or varying in time.
    from scipy.stats import multivariate_normal

    rng = np.random.RandomState(4)
    N, D = 6, 2
    a = np.array([[0.9, -0.2], [0.1, 0.8]])
    nu = np.array([2.0, 3.0])
    if varying:
        a = a + 0.1 * rng.randn(N - 1, D, D)
        nu = nu * rng.uniform(0.5, 2.0, size=(N - 1, D))
    Lam0 = np.array([[1.5, 0.2], [0.2, 0.7]])
    mu0 = np.array([[0.5, -1.0], [2.0, 0.0]])
    y = rng.randn(2, N, D)
    X = GaussianMarkovChain(mu0, Lam0, a, nu, n=N)
    assert X.plates == (2,)
    Y = GaussianARD(X, 4.0, shape=(D,))
    Y.observe(y)
    Q = VB(Y, X)
    Q.update(repeat=1)
    evidence = 0.0
    for i in range(2):
        m, P = _dense_chain_prior(
            mu0[i], Lam0, np.broadcast_to(a, (N - 1, D, D)), np.broadcast_to(nu, (N - 1, D))
        )
        post_cov = np.linalg.inv(P + 4.0 * np.eye(N * D))
        post_mean = post_cov @ (P @ m + 4.0 * y[i].ravel())
        np.testing.assert_allclose(X.get_moments()[0][i].ravel(), post_mean, rtol=1e-10)
        np.testing.assert_allclose(
            X.get_moments()[1][i, 2],
            post_cov[4:6, 4:6] + np.outer(post_mean[4:6], post_mean[4:6]),
            rtol=1e-10,
        )
        np.testing.assert_allclose(
            X.get_moments()[2][i, 2],
            post_cov[4:6, 6:8] + np.outer(post_mean[4:6], post_mean[6:8]),
            rtol=1e-10,
        )
        prior_cov = np.linalg.inv(P)
        evidence += multivariate_normal(m, prior_cov + np.eye(N * D) / 4.0).logpdf(y[i].ravel())
    assert Q.compute_lowerbound() == pytest.approx(evidence, rel=1e-10)


@pytest.mark.parametrize("masked", [False, True])
def test_categorical_chain_node_is_the_enumerated_posterior_and_evidence(masked):
    # A hidden Markov model with known parameters: one sweep is the exact
    # posterior and its bound the log evidence; a missing observation (the
    # mask) leaves its step's emission out.
    rng = np.random.RandomState(5)
    N, K = 4, 3
    p0 = rng.dirichlet(np.ones(K))
    A = rng.dirichlet(np.ones(K), size=K)
    emit = rng.dirichlet(np.ones(2), size=K)
    obs = rng.randint(2, size=N)
    seen = np.array([True, False, True, True]) if masked else np.ones(N, dtype=bool)
    Z = CategoricalMarkovChain(p0, A, states=N)
    Y = networks.Mixture(Z, networks.Categorical, emit)
    Y.observe(np.where(seen, obs, np.nan) if masked else obs, mask=seen)
    Q = VB(Y, Z)
    Q.update(repeat=1)
    joint = np.zeros((K,) * N)
    for path in itertools.product(range(K), repeat=N):
        p = p0[path[0]] * np.prod([A[path[t], path[t + 1]] for t in range(N - 1)])
        joint[path] = p * np.prod([emit[path[t], obs[t]] for t in range(N) if seen[t]])
    assert Q.compute_lowerbound() == pytest.approx(np.log(joint.sum()), rel=1e-12)
    marginals = [joint.sum(axis=tuple(a for a in range(N) if a != t)) for t in range(N)]
    np.testing.assert_allclose(
        Y.parents[0].get_moments()[0], np.array(marginals) / joint.sum(), rtol=1e-10
    )
    if masked:
        theirs = _library("bayespy")
        Zb = theirs.CategoricalMarkovChain(p0, A, states=N)
        Yb = theirs.Mixture(Zb, theirs.Categorical, emit)
        Yb.observe(obs, mask=seen)
        Qb = theirs.VB(Yb, Zb)
        _update(theirs, Qb, repeat=1)
        assert Q.compute_lowerbound() == pytest.approx(Qb.compute_lowerbound(), rel=1e-10)


def test_categorical_chain_draws_are_bayespys():
    theirs, ours = _library("bayespy"), _library("skvi")
    A = np.array([[[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]])
    draws = []
    for lib in (ours, theirs):
        np.random.seed(3)
        Z = lib.CategoricalMarkovChain([0.2, 0.5, 0.3], np.repeat(A, 6, axis=0), plates=(4, 2))
        draws.append(Z.random())
    assert draws[0].shape == (4, 2, 7)
    np.testing.assert_array_equal(draws[0], draws[1])
    z = categorical_chain_sample(np.log([0.2, 0.5, 0.3]), np.log(A), (20000,), 3, random_state=0)
    np.testing.assert_allclose(
        np.bincount(z[:, 2], minlength=3) / 20000.0, [0.2, 0.5, 0.3] @ A[0] @ A[0], atol=0.01
    )


def test_dirichlet_transitions_get_the_expected_transition_counts():
    # The message to A is the expected transition counts: after one update
    # of A, its posterior concentration (BayesPy's phi) is the prior's plus them.
    rng = np.random.RandomState(6)
    K, N = 2, 30
    A = Dirichlet(np.ones((K, K)))
    Z = CategoricalMarkovChain([0.5, 0.5], A, states=N)
    Y = networks.Mixture(Z, networks.Categorical, [[0.9, 0.1], [0.2, 0.8]])
    Y.observe(rng.randint(2, size=N))
    Q = VB(Y, Z, A)
    Q.update(repeat=1)
    counts = Z.get_moments()[1].sum(axis=0)
    np.testing.assert_allclose(A.phi[0], 1.0 + counts, rtol=1e-12)


def test_chain_errors_name_the_argument():
    with pytest.raises(NetworkError, match="states="):
        CategoricalMarkovChain([0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(NetworkError, match="states=5 does not match"):
        CategoricalMarkovChain([0.5, 0.5], np.full((3, 2, 2), 0.5), states=5)
    with pytest.raises(NetworkError, match="n="):
        GaussianMarkovChain(np.zeros(2), np.eye(2), np.eye(2), np.ones(2))
    with pytest.raises(NetworkError, match="'A'"):
        GaussianMarkovChain(np.zeros(2), np.eye(2), np.eye(3), np.ones(2), n=3)
