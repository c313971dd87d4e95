"""Fast VMP in skvi.networks: planned sums of products, rotations and extrapolated sweeps.

The references are BayesPy's VB (plain sweeps, sweep for sweep; its PCA
example with its rotations), the general ``numpy.einsum`` sums of
SumMultiply, and the bound itself (a rotation's predicted change of it).
"""

import warnings

import numpy as np
import pytest

import skvi.networks as ours
from skvi.networks import VB, Gamma, GaussianARD, SumMultiply
from skvi.networks import _rotate


def _bayespy():
    nodes = pytest.importorskip("bayespy.nodes")
    inference = pytest.importorskip("bayespy.inference")
    return nodes, inference


def pca_example(nodes, VB_, N=100, M=20, D=10, seed=1, missing=0.0, **vb):
    """BayesPy's PCA example (doc/source/examples/pca.rst), without its rotation lines."""
    np.random.seed(seed)
    x = np.random.randn(N, 2)
    w = np.random.randn(M, 2)
    y = w @ x.T + 0.1 * np.random.randn(M, N)
    mask = np.random.rand(M, N) >= missing if missing else True
    X = nodes.GaussianARD(0, 1, plates=(1, N), shape=(D,))
    alpha = nodes.Gamma(1e-5, 1e-5, plates=(D,))
    C = nodes.GaussianARD(0, alpha, plates=(M, 1), shape=(D,))
    F = nodes.SumMultiply("d,d->", X, C)
    tau = nodes.Gamma(1e-5, 1e-5)
    Y = nodes.GaussianARD(F, tau)
    Y.observe(y, mask=mask)
    Q = VB_(Y, X, C, alpha, tau, **vb)
    C.initialize_from_random()
    return Q, X, C, alpha, F


def test_pca_example_reaches_bayespys_bound_with_rotations():
    nodes, inference = _bayespy()
    from bayespy.inference.vmp.transformations import RotateGaussianARD, RotationOptimizer

    Qb, Xb, Cb, alphab, _ = pca_example(nodes, inference.VB)
    R = RotationOptimizer(RotateGaussianARD(Xb), RotateGaussianARD(Cb, alphab), 10)
    Qb.set_callback(R.rotate)
    Qb.update(repeat=1000, verbose=False)
    theirs = Qb.compute_lowerbound()
    sweeps_bp = int(np.sum(np.isfinite(Qb.L)))

    Q = pca_example(ours, VB)[0]
    Q.update(repeat=10000)
    assert Q.converged
    assert Q.compute_lowerbound() == pytest.approx(theirs, rel=1e-3)
    assert Q.iter <= 3 * sweeps_bp
    assert np.all(np.diff(Q.L) >= -1e-9 * np.abs(Q.L[1:]))

    # Plain sweeps creep along the rotations: far below after as many sweeps.
    plain = pca_example(ours, VB, accelerate=False)[0]
    plain.update(repeat=Q.iter, tol=-np.inf)
    assert plain.compute_lowerbound() < theirs - 100


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_a_rotation_changes_the_bound_by_its_predicted_amount(missing):
    # The objective of R is the bound's change: applied to a random R (not
    # the optimum), the full bound moves by the objective's change, and the
    # product F's moments, which the likelihood sees, do not move.  With
    # missing values each row's scores have their own precision.
    Q, X, C, alpha, F = pca_example(ours, VB, N=30, M=8, D=4, missing=missing, accelerate=False)
    Q.update(repeat=5, tol=-np.inf)
    ((sx, sc),) = _rotate.find_rotations(Q.model)
    XX, CC = sx.second_moment(), sc.second_moment()
    R = np.eye(4) + 0.3 * np.random.RandomState(0).randn(4, 4)
    Rinv = np.linalg.inv(R)
    logdet = np.log(abs(np.linalg.det(R)))

    def objective(T):
        Tinv = np.linalg.inv(T)
        ld = np.log(abs(np.linalg.det(T)))
        return (sx.count - sc.count) * ld + sx.term(T, XX)[0] + sc.term(Tinv.T, CC)[0]

    f_before = [u.copy() for u in F.get_moments()]
    L0 = Q.compute_lowerbound()
    sx.apply(R, Rinv, logdet)
    sc.apply(Rinv.T, R.T, -logdet)
    assert Q.compute_lowerbound() - L0 == pytest.approx(objective(R) - objective(np.eye(4)))
    for a, b in zip(F.get_moments(), f_before):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # The optimised rotation raises the bound.
    L1 = Q.compute_lowerbound()
    assert _rotate.rotate(sx, sc)
    assert Q.compute_lowerbound() > L1


def test_rotations_need_the_factor_model_pattern():
    # A non-zero prior mean, a node with a second child or an output key
    # break the invariance: no rotation is found.
    def pair(mean=0.0, extra_child=False, keys="d,d->"):
        X = GaussianARD(mean, 1, plates=(1, 6), shape=(2,))
        C = GaussianARD(0, Gamma(1e-3, 1e-3, plates=(2,)), plates=(4, 1), shape=(2,))
        Y = GaussianARD(SumMultiply(keys, X, C), 1.0)
        if extra_child:
            GaussianARD(X, 1.0)
        return _rotate.find_rotations([Y, X, C, *C.parents[1:]])

    assert len(pair()) == 1
    X = GaussianARD(0, 1, plates=(1, 6), shape=(2,))
    C = GaussianARD(0, Gamma(1e-3, 1e-3, plates=(2,)), plates=(4, 1), shape=(2,))
    GaussianARD(SumMultiply("d,d->", X, C), 1.0)
    assert _rotate.find_rotations([X, C]) == []  # its Gamma node is not updated
    assert pair(mean=1.0) == []
    assert pair(extra_child=True) == []
    assert pair(keys="d,d->d") == []


@pytest.mark.parametrize("seed", [0, 1])
def test_extrapolated_sweeps_never_lower_the_bound(seed):
    Q = pca_example(ours, VB, N=60, M=10, D=4, seed=seed, accelerate="extrapolate")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Q.update(repeat=300, tol=-np.inf)
    assert Q.iter == 300
    assert np.all(np.diff(Q.L) >= -1e-9 * np.abs(Q.L[1:]))
    plain = pca_example(ours, VB, N=60, M=10, D=4, seed=seed, accelerate=False)[0]
    plain.update(repeat=300, tol=-np.inf)
    assert Q.L[-1] >= plain.L[-1]


def test_extrapolated_sweeps_of_a_mixture_reach_its_fixed_point():
    rng = np.random.RandomState(0)
    y = np.array([[0.0, 0.0], [5.0, 5.0]])[rng.randint(2, size=200)] + rng.randn(200, 2)

    def fit(accelerate):
        np.random.seed(2)
        alpha = ours.Dirichlet(np.ones(2))
        Z = ours.Categorical(alpha, plates=(200,))
        mu = ours.Gaussian(np.zeros(2), 1e-3 * np.identity(2), plates=(2,))
        Lam = ours.Wishart(2, np.identity(2), plates=(2,))
        Y = ours.Mixture(Z, ours.Gaussian, mu, Lam)
        Y.observe(y)
        Z.initialize_from_random()
        Q = VB(Y, mu, Lam, Z, alpha, accelerate=accelerate)
        Q.update(repeat=500, tol=1e-10)
        return Q

    fast, plain = fit("extrapolate"), fit(False)
    assert fast.converged and plain.converged
    assert np.all(np.diff(fast.L) >= -1e-9 * np.abs(fast.L[1:]))
    assert fast.L[-1] == pytest.approx(plain.L[-1], rel=1e-8)


def _small_networks(nodes):
    """Small networks of SumMultiply: a PCA with missing values, a matrix times vectors."""
    np.random.seed(4)
    M, N, D = 5, 20, 3
    data = np.random.randn(M, 2) @ np.random.randn(2, N) + 0.1 * np.random.randn(M, N)
    mask = np.random.rand(M, N) < 0.8
    data[~mask] = np.nan
    X = nodes.GaussianARD(0, 1, plates=(1, N), shape=(D,))
    alpha = nodes.Gamma(1e-3, 1e-3, plates=(D,))
    C = nodes.GaussianARD(0, alpha, plates=(M, 1), shape=(D,))
    tau = nodes.Gamma(1e-3, 1e-3)
    Y = nodes.GaussianARD(nodes.SumMultiply("d,d->", X, C), tau)
    Y.observe(data, mask=mask)
    C.initialize_from_random()
    first = (Y, X, C, alpha, tau)

    W = nodes.GaussianARD(0, 1, plates=(4,), shape=(3, 2))
    v = nodes.GaussianARD(np.random.randn(2), 100, plates=(7, 1), shape=(2,))
    Y2 = nodes.GaussianARD(nodes.SumMultiply("ij,j->i", W, v), 2.0, shape=(3,))
    Y2.observe(np.random.randn(7, 4, 3))
    W.initialize_from_random()
    return [first, (Y2, W, v)]


def test_plain_sweeps_equal_bayespys_sweep_for_sweep():
    nodes, inference = _bayespy()
    theirs = [inference.VB(*net) for net in _small_networks(nodes)]
    mine = [VB(*net, accelerate=False) for net in _small_networks(ours)]
    for Qb, Q in zip(theirs, mine):
        Qb.update(repeat=30, tol=-np.inf, verbose=False)
        Q.update(repeat=30, tol=-np.inf)
        np.testing.assert_allclose(Q.L, Qb.L[:30], rtol=1e-10)


@pytest.mark.parametrize(
    "keys, shapes, plates",
    [
        ("d,d->", [(3,), (3,)], [(1, 7), (5, 1)]),
        ("ij,j->i", [(4, 3), (3,)], [(6,), (6,)]),
        ("i,j->ij", [(2,), (3,)], [(4, 1), (1,)]),
        ("ab,bc,c->a", [(2, 3), (3, 4), (4,)], [(5,), (1,), (5,)]),
        ("i,i", [(3,), (3,)], [(2, 1, 3), (4, 1)]),
    ],
)
def test_planned_sums_of_products_are_the_general_ones(keys, shapes, plates):
    def run(planned):
        rng = np.random.RandomState(0)
        np.random.seed(3)
        ops = [GaussianARD(rng.randn(*s), 2.0, shape=s, plates=p) for s, p in zip(shapes, plates)]
        f = SumMultiply(keys, *ops)
        assert f._planned
        f._planned = planned
        y = GaussianARD(f, Gamma(2.0, 1.0))
        y.observe(np.random.randn(*(f.plates + f.dims[0])))
        for o in ops:
            o.initialize_from_random()
        Q = VB(y, *ops, y.parents[1], accelerate=False)
        Q.update(repeat=5, tol=-np.inf)
        return Q.L, [u for o in ops + [f] for u in o.get_moments()]

    (L1, u1), (L0, u0) = run(True), run(False)
    np.testing.assert_allclose(L1, L0, rtol=1e-10)
    for a, b in zip(u1, u0):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_accelerate_takes_its_values_only():
    with pytest.raises(ValueError, match="accelerate"):
        VB(GaussianARD(0, 1), accelerate="fast")
    Q = VB(GaussianARD(0, 1))
    with pytest.raises(ValueError, match="accelerate"):
        Q.update(accelerate=True)


def test_moments_of_many_small_gaussians_are_the_family_maps_and_the_tested_ones():
    import pickle

    from skvi import expfam

    rng = np.random.RandomState(0)
    n, K = 30, 4
    U = GaussianARD(0, 1.0, shape=(K,), plates=(n,))
    A = rng.normal(size=(n, K, K))
    phi = [rng.normal(size=(n, K)), -0.5 * (A @ np.swapaxes(A, -1, -2) + np.eye(K))]
    mean, cov, logdet = expfam.MultivariateGaussian.moments_from_natural(*phi)
    assert U._valid_natural(phi)
    # The update reads the moments the test computed, for the same memory
    # (a view of it too), and computes them again for new parameters.
    (u0, u1), g = U._moments_and_cgf([phi[0], phi[1].reshape(phi[1].shape)])
    assert U._tested[0][1][0][0] is u0
    (v0, v1), h = U._moments_and_cgf([phi[0].copy(), phi[1].copy()])
    assert v0 is not u0
    for m, s, c in ((u0, u1, g), (v0, v1, h)):
        np.testing.assert_allclose(m, mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(s, cov + mean[:, :, None] * mean[:, None, :], rtol=1e-10)
        np.testing.assert_allclose(c, -0.5 * np.sum(mean * phi[0], -1) + 0.5 * logdet, rtol=1e-10)
    # An invalid element: the test says so, the update raises as before.
    bad = [phi[0], phi[1].copy()]
    bad[1][3] *= -1.0
    assert not U._valid_natural(bad)
    with pytest.raises(np.linalg.LinAlgError):
        U._moments_and_cgf(bad)
    assert len(pickle.loads(pickle.dumps(U))._tested) == 0
