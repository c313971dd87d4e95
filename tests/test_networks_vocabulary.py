"""docs/networks.md's table of BayesPy's nodes stays complete and true to skvi.networks.

The table ("Every node of BayesPy") names each node BayesPy exports with its
status in skvi.networks: the same, or not provided and what to use instead.
A BayesPy release that adds a node, or a node that skvi adds, makes these
tests fail until the table says so.  The table's claims about the bound are
checked against BayesPy on small networks: the nodes it calls the same, and
each replacement it names for a node skvi does not provide.
"""

import inspect
import pathlib
import re

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import multivariate_normal, norm

import skvi.networks

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "networks.md"
HEADING = "### Every node of BayesPy"


def table_rows():
    """The (names, status) of each row of the page's table of BayesPy's nodes."""
    text = PAGE.read_text()
    assert HEADING in text, f"docs/networks.md lost its section {HEADING!r}"
    lines = text.split(HEADING, 1)[1].splitlines()
    rows = []
    for line in lines:
        if rows and not line.startswith("|"):
            break
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| BayesPy |"):
            continue
        first, status = line.strip("|").split("|", 1)
        # The names are the code spans of the first column that are identifiers,
        # not the modules named in parentheses.
        names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", first.split("(")[0])
        rows.append((names, status.strip()))
    return rows


def bayespy_node_names():
    """The nodes ``bayespy.nodes`` exports: its public classes and node-making functions."""
    nodes = pytest.importorskip("bayespy.nodes")
    return {
        name
        for name, value in vars(nodes).items()
        if name[:1].isupper() and (inspect.isclass(value) or inspect.isfunction(value))
    }


def test_table_names_every_node_of_bayespy():
    listed = {name for names, _ in table_rows() for name in names}
    missing = sorted(bayespy_node_names() - listed)
    assert not missing, f"docs/networks.md's table of BayesPy's nodes lacks {missing}"


def test_table_says_the_same_only_of_what_skvi_networks_exports():
    rows = table_rows()
    assert len(rows) > 20
    for names, status in rows:
        assert status.startswith(("the same", "not provided")), (names, status)
        for name in names:
            provided = name in skvi.networks.__all__
            assert provided == status.startswith("the same"), (
                f"{name}: the table says {status!r}, but skvi.networks "
                f"{'exports' if provided else 'does not export'} it"
            )


# The table's claims about the lower bound, checked against BayesPy: the nodes
# it calls the same give BayesPy's bound on small networks, and each
# replacement it names gives the bound of the BayesPy node it replaces (or, where
# the replacement's posterior is richer, what the mathematics says it gives).

SWEEPS = 30


def _bayespy():
    nodes = pytest.importorskip("bayespy.nodes")
    inference = pytest.importorskip("bayespy.inference")
    return nodes, inference


def _bound(lib, nodes, sweeps=SWEEPS):
    """The bound after ``sweeps`` plain sweeps over ``nodes``, in this order, with no early stop."""
    if lib is skvi.networks:
        Q = skvi.networks.VB(*nodes, accelerate=False)
        Q.update(repeat=sweeps, tol=-np.inf)
    else:
        Q = _bayespy()[1].VB(*nodes)
        Q.update(repeat=sweeps, tol=-np.inf, verbose=False)
    return Q.compute_lowerbound()


def bernoulli_beta(L):
    p = L.Beta([2, 3])
    y = L.Bernoulli(p, plates=(20,))
    y.observe(np.arange(20) % 3 == 0)
    return [y, p]


def poisson_gamma(L):
    rate = L.Gamma(2, 1)
    y = L.Poisson(rate, plates=(10,))
    y.observe(np.arange(10) % 4)
    return [y, rate]


def categorical_dirichlet(L):
    p = L.Dirichlet([1, 2, 3])
    y = L.Categorical(p, plates=(10,))
    y.observe(np.arange(10) % 3)
    return [y, p]


def multinomial_dirichlet(L):
    p = L.Dirichlet([1, 2, 3])
    y = L.Multinomial(5, p, plates=(4,))
    y.observe([[1, 2, 2], [5, 0, 0], [0, 0, 5], [2, 2, 1]])
    return [y, p]


def gaussian_wishart(L):
    mu = L.Gaussian(np.zeros(2), np.identity(2))
    Lam = L.Wishart(3, np.identity(2))
    y = L.Gaussian(mu, Lam, plates=(5,))
    y.observe(np.arange(10.0).reshape(5, 2) % 3)
    return [y, mu, Lam]


def gaussian_gamma(L):
    beta_tau = L.GaussianGamma(np.zeros(2), np.identity(2), 2, 2)
    X = np.c_[np.arange(6.0), np.ones(6)]
    y = L.GaussianARD(L.SumMultiply("i,i", beta_tau, X), 1)
    y.observe(np.arange(6.0) * 2 + 1 + np.sin(np.arange(6)))
    return [y, beta_tau]


def take_add_sum_multiply(L):
    U = L.GaussianARD(0, 1, shape=(2,), plates=(3,))
    V = L.GaussianARD(0, 1, shape=(2,), plates=(4,))
    users, items = np.array([0, 1, 2, 0, 1]), np.array([0, 1, 2, 3, 3])
    F = L.SumMultiply("i,i", L.Take(U, users), L.Take(V, items))
    b = L.GaussianARD(0, 1, plates=(5,))
    y = L.GaussianARD(L.Add(F, b), 2.0)
    y.observe(np.array([1.0, 0.5, -1, 2, 0]))
    return [y, U, V, b]


def gate(L):
    z = L.Categorical([0.3, 0.7], plates=(6,))
    X = L.GaussianARD(0, 1e-2, plates=(2,))
    y = L.GaussianARD(L.Gate(z, X), 1)
    y.observe(np.array([0.0, 0.1, 5, 5.2, -0.1, 4.9]))
    z.initialize_from_value(np.array([0, 0, 1, 1, 0, 1]))
    return [y, X, z]


def sum_multiply_with_an_array(L):
    w = L.GaussianARD(0, 1, shape=(2,))
    y = L.GaussianARD(L.SumMultiply("i,i", w, np.c_[np.arange(5.0), np.ones(5)]), 1.0)
    y.observe(np.arange(5.0))
    return [y, w]


def dot(L):
    w = L.GaussianARD(0, 1, shape=(2,))
    x = L.GaussianARD(1, 1, shape=(2,))
    y = L.GaussianARD(L.Dot(w, x), 1.0, plates=(3,))
    y.observe(np.arange(3.0))
    return [y, w, x]


def mixture_gamma(L):
    z = L.Categorical(L.Dirichlet([1, 1]), plates=(6,))
    mu = L.GaussianARD(0, 1e-2, plates=(2,))
    tau = L.Gamma(1, 1, plates=(2,))
    y = L.Mixture(z, L.GaussianARD, mu, tau)
    y.observe(np.array([0.0, 0.1, 5, 5.2, -0.1, 4.9]))
    z.initialize_from_value(np.array([0, 0, 1, 1, 0, 1]))
    return [y, mu, tau, z, z.parents[0]]


@pytest.mark.parametrize(
    "build",
    [
        bernoulli_beta,
        poisson_gamma,
        categorical_dirichlet,
        multinomial_dirichlet,
        gaussian_wishart,
        gaussian_gamma,
        take_add_sum_multiply,
        gate,
        sum_multiply_with_an_array,
        dot,
        mixture_gamma,
    ],
)
def test_nodes_the_table_calls_the_same_give_bayespys_bound(build):
    theirs = _bayespy()[0]
    expected = _bound(theirs, build(theirs))
    assert _bound(skvi.networks, build(skvi.networks)) == pytest.approx(expected, rel=1e-7)


def test_binomial_is_a_multinomial_over_two_categories():
    """``Binomial(n, Beta([a, b]))`` observing ``k`` is ``Multinomial(n, Dirichlet([a, b]))``
    observing ``[k, n - k]``: the same bound (both count the binomial coefficient) and the same
    posterior of the probability; skvi's Multinomial takes no Beta, as the table says."""
    theirs = _bayespy()[0]
    k = np.array([3, 5, 0, 10])
    p_b = theirs.Beta([2, 3])
    y_b = theirs.Binomial(10, p_b, plates=(4,))
    y_b.observe(k)
    p = skvi.networks.Dirichlet([2, 3])
    y = skvi.networks.Multinomial(10, p, plates=(4,))
    y.observe(np.c_[k, 10 - k])
    expected = _bound(theirs, [y_b, p_b])
    assert _bound(skvi.networks, [y, p]) == pytest.approx(expected, rel=1e-7)
    np.testing.assert_allclose(p.get_moments()[0], p_b.get_moments()[0], rtol=1e-10)
    with pytest.raises(skvi.networks.NetworkError, match="Dirichlet over 2 categories"):
        skvi.networks.Multinomial(10, skvi.networks.Beta([2, 3]))


def test_exponential_is_gamma_of_shape_one():
    """BayesPy's ``Exponential`` is not implemented and asks for ``Gamma(1, l)``; that node is
    the exponential distribution: exponential observations under a Gamma rate, and a Poisson
    rate under an exponential prior, give BayesPy's bound and the exact log evidence, the
    closed-form marginals of these conjugate pairs (one latent rate, so VB is exact)."""
    theirs = _bayespy()[0]
    with pytest.raises(NotImplementedError, match=r"Gamma\(1, lambda\)"):
        theirs.Exponential(2.0)
    x = np.array([0.1, 0.5, 1.2, 0.3, 2.0])
    counts = np.array([0, 1, 3, 1, 2])

    def exponential_observations(L):
        rate = L.Gamma(2, 3)
        y = L.Gamma(1, rate, plates=(5,))
        y.observe(x)
        return [y, rate]

    def exponential_prior(L):
        rate = L.Gamma(1, 2.0)
        y = L.Poisson(rate, plates=(5,))
        y.observe(counts)
        return [y, rate]

    # p(x) = b^a / Gamma(a) * Gamma(a + n) / (b + sum x)^(a + n), with a, b = 2, 3.
    evidence_x = 2 * np.log(3) - gammaln(2) + gammaln(2 + 5) - (2 + 5) * np.log(3 + x.sum())
    # p(c) = prod 1/c! * b^a / Gamma(a) * Gamma(a + sum c) / (b + n)^(a + sum c), a, b = 1, 2.
    s = counts.sum()
    evidence_c = -gammaln(counts + 1).sum() + np.log(2) + gammaln(1 + s) - (1 + s) * np.log(2 + 5)
    for build, evidence in [
        (exponential_observations, evidence_x),
        (exponential_prior, evidence_c),
    ]:
        ours = _bound(skvi.networks, build(skvi.networks))
        assert ours == pytest.approx(_bound(theirs, build(theirs)), rel=1e-7)
        assert ours == pytest.approx(evidence, rel=1e-10)


def test_choose_is_a_gate_over_the_choices_plate():
    """``Choose(z, a, b)`` is ``Gate(z, X)`` with ``a`` and ``b`` on ``X``'s plate of two."""
    theirs = _bayespy()[0]
    y_obs = np.array([0.0, 0.1, 5, 5.2, -0.1, 4.9])
    start = np.array([0, 0, 1, 1, 0, 1])

    z_b = theirs.Categorical([0.3, 0.7], plates=(6,))
    a, b = theirs.GaussianARD(0, 1e-2), theirs.GaussianARD(1, 1e-1)
    y_b = theirs.GaussianARD(theirs.Choose(z_b, a, b), 1)
    y_b.observe(y_obs)
    z_b.initialize_from_value(start)

    z = skvi.networks.Categorical([0.3, 0.7], plates=(6,))
    X = skvi.networks.GaussianARD([0, 1], [1e-2, 1e-1], plates=(2,))
    y = skvi.networks.GaussianARD(skvi.networks.Gate(z, X), 1)
    y.observe(y_obs)
    z.initialize_from_value(start)

    expected = _bound(theirs, [y_b, z_b, a, b])
    assert _bound(skvi.networks, [y, z, X]) == pytest.approx(expected, rel=1e-7)


def test_concatenate_is_one_node_with_the_joined_plate():
    """``Concatenate(a, b)`` of nodes with plates ``(2,)`` and ``(3,)`` is one node of plates
    ``(5,)`` whose parameters are ``a``'s then ``b``'s (its plates are independent a posteriori,
    as ``a`` and ``b`` are)."""
    theirs = _bayespy()[0]
    a, b = theirs.GaussianARD(0, 1, plates=(2,)), theirs.GaussianARD(1, 2, plates=(3,))
    y_b = theirs.GaussianARD(theirs.Concatenate(a, b), 1)
    y_b.observe(np.arange(5.0))
    X = skvi.networks.GaussianARD([0, 0, 1, 1, 1], [1, 1, 2, 2, 2], plates=(5,))
    y = skvi.networks.GaussianARD(X, 1)
    y.observe(np.arange(5.0))
    expected = _bound(theirs, [y_b, a, b])
    assert _bound(skvi.networks, [y, X]) == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("coupled", [False, True])
def test_concat_gaussian_is_one_gaussian_of_the_joined_vector(coupled):
    """``ConcatGaussian(a, b)`` is one ``Gaussian`` with the joined mean and the block-diagonal
    precision.  Its posterior is one Gaussian of the whole vector where BayesPy has one per
    part, so its bound is the exact log evidence ``N(y | m, Lam0^-1 + Lam^-1)``; BayesPy's
    equals it when the child's precision keeps the parts apart, and is lower when it couples
    them (its parts' posteriors are then a factorised approximation)."""
    theirs = _bayespy()[0]
    m, Lam0 = np.array([0.5, -1.0, 2.0]), np.diag([1.0, 2.0, 0.5])
    Lam = np.diag([2.0, 1.5, 1.0])
    if coupled:
        Lam += np.array([[0, 0.3, 0.5], [0.3, 0, 0.7], [0.5, 0.7, 0]])
    y_obs = np.array([1.0, 2.0, -1.0])

    a, b = theirs.Gaussian(m[:2], Lam0[:2, :2]), theirs.Gaussian(m[2:], Lam0[2:, 2:])
    y_b = theirs.Gaussian(theirs.ConcatGaussian(a, b), Lam)
    y_b.observe(y_obs)
    X = skvi.networks.Gaussian(m, Lam0)
    y = skvi.networks.Gaussian(X, Lam)
    y.observe(y_obs)

    evidence = multivariate_normal(m, np.linalg.inv(Lam0) + np.linalg.inv(Lam)).logpdf(y_obs)
    ours, bayespys = _bound(skvi.networks, [y, X]), _bound(theirs, [y_b, a, b])
    assert ours == pytest.approx(evidence, rel=1e-10)
    if coupled:
        assert bayespys < evidence - 1e-2
    else:
        assert ours == pytest.approx(bayespys, rel=1e-7)


def _multi_mixture(theirs, means, y_obs, p1, p2):
    z1 = theirs.Categorical(p1, plates=y_obs.shape)
    z2 = theirs.Categorical(p2, plates=y_obs.shape)
    y = theirs.MultiMixture((z1, z2), theirs.GaussianARD, means, 1.0)
    y.observe(y_obs)
    return y, z1, z2


def _mixture_over_the_product(means, y_obs, p1, p2):
    z = skvi.networks.Categorical(np.outer(p1, p2).ravel(), plates=y_obs.shape)
    flat = means if isinstance(means, skvi.networks.Node) else np.ravel(means)
    y = skvi.networks.Mixture(z, skvi.networks.GaussianARD, flat, 1.0)
    y.observe(y_obs)
    return y, z


def test_multi_mixture_is_a_mixture_over_the_product_of_the_categories():
    """``MultiMixture((z1, z2), ...)`` with fixed probabilities is the same model as a
    ``Mixture`` over one ``Categorical`` of the pairs, ``outer(p1, p2)``, with the clusters
    flattened.  Its posterior is one over the pairs where BayesPy has one per assignment:

    * with learned means from the prior's start, where nothing tells ``z1``'s categories apart,
      the means depend on ``z2`` only, the posterior over the pairs factorises, and the two
      bounds agree;
    * with fixed means, the replacement's bound is the exact log evidence,
      ``sum_n log sum_ij p1_i p2_j N(y_n | mu_ij, 1)``; BayesPy's is lower, by what a
      product of one posterior per assignment cannot say: that a point is explained by
      (0, 1) or (1, 0) but not by (0, 0) or (1, 1).
    """
    theirs = _bayespy()[0]
    p1, p2 = np.array([0.5, 0.5]), np.array([0.4, 0.6])
    y_obs = np.array([0.0, 0.1, 5, 5.2, -0.1, 4.9])
    mu_b = theirs.GaussianARD(0, 1e-2, plates=(2, 2))
    y_b, z1, z2 = _multi_mixture(theirs, mu_b, y_obs, p1, p2)
    mu = skvi.networks.GaussianARD(0, 1e-2, plates=(4,))
    y, z = _mixture_over_the_product(mu, y_obs, p1, p2)
    expected = _bound(theirs, [y_b, mu_b, z1, z2])
    assert _bound(skvi.networks, [y, mu, z]) == pytest.approx(expected, rel=1e-7)

    means, y_obs = np.array([[0.0, 5.0], [5.0, 10.0]]), np.array([0.0, 5.0, 10.0, 0.2])
    y_b, z1, z2 = _multi_mixture(theirs, means, y_obs, p1, p2)
    y, z = _mixture_over_the_product(means, y_obs, p1, p2)
    log_joint = np.log(np.outer(p1, p2)).ravel() + norm.logpdf(y_obs[:, None], means.ravel())
    evidence = logsumexp(log_joint, axis=1).sum()
    assert _bound(skvi.networks, [y, z]) == pytest.approx(evidence, rel=1e-10)
    # The point at 5 is explained by (0, 1), of prior 0.3, and by (1, 0), of prior 0.2; a
    # product of one posterior per assignment takes (0, 1) alone and loses log(0.5 / 0.3), up
    # to the other pairs' tails, exp(-12.5) of it.
    gap = evidence - _bound(theirs, [y_b, z1, z2])
    assert gap == pytest.approx(np.log(0.5 / 0.3), abs=1e-4)


def test_complement_is_the_flipped_outcomes_or_the_swapped_beta():
    """``Bernoulli(Complement(p))`` observing ``y`` is ``Bernoulli(p)`` observing ``1 - y``,
    and, for ``p = Beta([a, b])``, also ``Bernoulli(Beta([b, a]))`` observing ``y``."""
    theirs = _bayespy()[0]
    y_obs = np.arange(6) % 3 == 0
    p_b = theirs.Beta([2, 3])
    y_b = theirs.Bernoulli(theirs.Complement(p_b), plates=(6,))
    y_b.observe(y_obs)
    expected = _bound(theirs, [y_b, p_b])
    for a_b, observed in [([2, 3], ~y_obs), ([3, 2], y_obs)]:
        p = skvi.networks.Beta(a_b)
        y = skvi.networks.Bernoulli(p, plates=(6,))
        y.observe(observed)
        assert _bound(skvi.networks, [y, p]) == pytest.approx(expected, rel=1e-7)
