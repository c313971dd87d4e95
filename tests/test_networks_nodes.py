"""BayesPy's Take, Gate, Add, GaussianGamma and Multinomial.random, and the examples they run.

Every test runs BayesPy (skipped when absent) on the same network, data
and start: BayesPy's lda, regression and multinomial examples run here
with only their imports changed, their data drawn by the nodes' random()
from the same seed; the bound after the first sweep equals BayesPy's to
1e-6 relative and the final bound is at least BayesPy's.
"""

import pickle
import types
import warnings

import numpy as np
import pytest

import skvi.networks as ours
from skvi.networks import (
    VB,
    Add,
    Categorical,
    CategoricalMoments,
    Constant,
    Dirichlet,
    Gamma,
    Gate,
    GaussianARD,
    GaussianGamma,
    Multinomial,
    NetworkError,
    SumMultiply,
    Take,
)


def _bayespy():
    """BayesPy's nodes, VB and CategoricalMoments as one namespace (skipped when absent)."""
    nodes = pytest.importorskip("bayespy.nodes")
    inference = pytest.importorskip("bayespy.inference")
    categorical = pytest.importorskip("bayespy.inference.vmp.nodes.categorical")
    lib = types.SimpleNamespace(**{n: getattr(nodes, n) for n in dir(nodes) if n[0].isupper()})
    lib.VB = inference.VB
    lib.CategoricalMoments = categorical.CategoricalMoments
    lib.quiet = {"verbose": False}
    return lib


def _skvi():
    lib = types.SimpleNamespace(**{n: getattr(ours, n) for n in ours.__all__})
    lib.quiet = {}
    return lib


def _sweeps(Q, lib, repeat):
    """The bound after one sweep and after ``repeat`` more (BayesPy's convergence test)."""
    Q.update(repeat=1, **lib.quiet)
    first = Q.compute_lowerbound()
    Q.update(repeat=repeat, **lib.quiet)
    return first, Q.compute_lowerbound()


def _agree(ours_bounds, theirs_bounds):
    first, final = ours_bounds
    first_b, final_b = theirs_bounds
    assert first == pytest.approx(first_b, rel=1e-6)
    assert final >= final_b - 1e-6 * abs(final_b)


# ------------------------------------------------------------------ examples
def lda_example(nodes):
    """BayesPy's lda example (doc/source/examples/lda.rst), its VB part, imports aside."""
    CategoricalMoments, VB = nodes.CategoricalMoments, nodes.VB
    np.random.seed(1)
    n_documents = 10
    n_words = 10000
    word_documents = nodes.Categorical(
        np.ones(n_documents) / n_documents, plates=(n_words,)
    ).random()
    n_vocabulary = 100
    n_topics = 5
    p_topic = nodes.Dirichlet(1e-1 * np.ones(n_topics), plates=(n_documents,)).random()
    p_word = nodes.Dirichlet(1e-1 * np.ones(n_vocabulary), plates=(n_topics,)).random()
    topic = nodes.Categorical(p_topic[word_documents], plates=(n_words,)).random()
    corpus = nodes.Categorical(p_word[topic], plates=(n_words,)).random()
    p_topic = nodes.Dirichlet(np.ones(n_topics), plates=(n_documents,), name="p_topic")
    p_word = nodes.Dirichlet(np.ones(n_vocabulary), plates=(n_topics,), name="p_word")
    document_indices = nodes.Constant(
        CategoricalMoments(n_documents), word_documents, name="document_indices"
    )
    topics = nodes.Categorical(
        nodes.Gate(document_indices, p_topic), plates=(len(corpus),), name="topics"
    )
    words = nodes.Categorical(nodes.Gate(topics, p_word), name="words")
    words.observe(corpus)
    p_topic.initialize_from_random()
    p_word.initialize_from_random()
    Q = VB(words, topics, p_word, p_topic, document_indices)
    bounds = _sweeps(Q, nodes, 1000)
    return (word_documents, corpus), bounds, Q["p_word"].get_moments()[0]


def lda_svi_example(nodes, n_iterations):
    """The SVI part of BayesPy's lda example, imports aside (fewer iterations)."""
    CategoricalMoments, VB = nodes.CategoricalMoments, nodes.VB
    np.random.seed(1)
    n_documents = 10
    n_words = 10000
    word_documents = nodes.Categorical(
        np.ones(n_documents) / n_documents, plates=(n_words,)
    ).random()
    n_vocabulary = 100
    n_topics = 5
    p_topic = nodes.Dirichlet(1e-1 * np.ones(n_topics), plates=(n_documents,)).random()
    p_word = nodes.Dirichlet(1e-1 * np.ones(n_vocabulary), plates=(n_topics,)).random()
    topic = nodes.Categorical(p_topic[word_documents], plates=(n_words,)).random()
    corpus = nodes.Categorical(p_word[topic], plates=(n_words,)).random()
    subset_size = 1000
    plates_multiplier = n_words / subset_size
    p_topic = nodes.Dirichlet(np.ones(n_topics), plates=(n_documents,), name="p_topic")
    p_word = nodes.Dirichlet(np.ones(n_vocabulary), plates=(n_topics,), name="p_word")
    document_indices = nodes.Constant(
        CategoricalMoments(n_documents), word_documents[:subset_size], name="document_indices"
    )
    topics = nodes.Categorical(
        nodes.Gate(document_indices, p_topic),
        plates=(subset_size,),
        plates_multiplier=(plates_multiplier,),
        name="topics",
    )
    words = nodes.Categorical(nodes.Gate(topics, p_word), name="words")
    p_topic.initialize_from_random()
    p_word.initialize_from_random()
    Q = VB(words, topics, p_word, p_topic, document_indices)
    Q.ignore_bound_checks = True
    delay = 1
    forgetting_rate = 0.7
    for n in range(n_iterations):
        subset = np.random.choice(n_words, subset_size)
        Q["words"].observe(corpus[subset])
        Q["document_indices"].set_value(word_documents[subset])
        Q.update("topics", **nodes.quiet)
        step = (n + delay) ** (-forgetting_rate)
        Q.gradient_step("p_topic", "p_word", scale=step)
    return np.array(Q.L[:n_iterations]), Q["p_word"].get_moments()[0]


def test_lda_svi_example_matches_bayespy_step_by_step():
    L_b, pw_b = lda_svi_example(_bayespy(), 100)
    L, pw = lda_svi_example(_skvi(), 100)
    # The first bound has the globals at a random point (a point mass): -inf in both.
    assert L[0] == L_b[0] == -np.inf
    np.testing.assert_allclose(L[1:], L_b[1:], rtol=1e-6)
    np.testing.assert_allclose(pw, pw_b, rtol=1e-6, atol=1e-9)


def test_lda_example_matches_bayespy():
    data_b, bounds_b, pw_b = lda_example(_bayespy())
    data, bounds, pw = lda_example(_skvi())
    for a, b in zip(data, data_b):
        np.testing.assert_array_equal(a, b)
    _agree(bounds, bounds_b)
    np.testing.assert_allclose(pw, pw_b, rtol=1e-4, atol=1e-6)


def regression_example(nodes):
    """BayesPy's regression example (doc/source/examples/regression.ipynb), models 1 and 2."""
    GaussianARD, SumMultiply, Gamma, VB = (
        nodes.GaussianARD,
        nodes.SumMultiply,
        nodes.Gamma,
        nodes.VB,
    )
    GaussianGamma = nodes.GaussianGamma
    k = 2
    c = 5
    s = 2
    np.random.seed(42)
    x = np.arange(10)
    y = k * x + c + s * np.random.randn(10)
    X = np.vstack([x, np.ones(len(x))]).T
    B = GaussianARD(0, 1e-6, shape=(2,))
    F = SumMultiply("i,i", B, X)
    tau = Gamma(1e-3, 1e-3)
    Y = GaussianARD(F, tau)
    Y.observe(y)
    Q = VB(Y, B, tau)
    model1 = _sweeps(Q, nodes, 1000)
    B_tau = GaussianGamma(np.zeros(2), 1e-6 * np.identity(2), 1e-3, 1e-3)
    F_tau = SumMultiply("i,i", B_tau, X)
    Y = GaussianARD(F_tau, 1)
    Y.observe(y)
    Q = VB(Y, B_tau)
    model2 = _sweeps(Q, nodes, 1000)
    return y, model1, model2, B_tau.get_moments()


def test_regression_example_matches_bayespy():
    y_b, m1_b, m2_b, u_b = regression_example(_bayespy())
    y, m1, m2, u = regression_example(_skvi())
    np.testing.assert_array_equal(y, y_b)
    _agree(m1, m1_b)
    _agree(m2, m2_b)
    for a, b in zip(u, u_b):
        np.testing.assert_allclose(a, b, rtol=1e-8)


def test_regression_model_2_is_the_exact_posterior():
    """Model 2's single factor is the Normal-Gamma posterior: its bound is the log evidence."""
    y, _, (first, final), (tx, txx, t, logt) = regression_example(_skvi())
    x = np.arange(10)
    X = np.vstack([x, np.ones(len(x))]).T
    L0, a0, b0 = 1e-6 * np.identity(2), 1e-3, 1e-3
    Ln = L0 + X.T @ X
    m = np.linalg.solve(Ln, X.T @ y)
    a = a0 + len(y) / 2
    b = b0 + 0.5 * (y @ y - m @ Ln @ m)
    from scipy.special import gammaln

    log_evidence = (
        -0.5 * len(y) * np.log(2 * np.pi)
        + 0.5 * (np.linalg.slogdet(L0)[1] - np.linalg.slogdet(Ln)[1])
        + a0 * np.log(b0)
        - a * np.log(b)
        + gammaln(a)
        - gammaln(a0)
    )
    assert first == pytest.approx(log_evidence, rel=1e-9)
    assert final == pytest.approx(log_evidence, rel=1e-9)
    np.testing.assert_allclose(tx / t, m, rtol=1e-9)
    assert float(t) == pytest.approx(a / b, rel=1e-9)


def multinomial_example(nodes):
    """BayesPy's multinomial example (doc/source/examples/multinomial.ipynb), both models."""
    VB = nodes.VB
    np.random.seed(42)
    n_colors = 5
    n_bags = 3
    n_trials = 20
    p_colors = nodes.Dirichlet(n_colors * [0.5], plates=(n_bags,)).random()
    marbles = nodes.Multinomial(n_trials, p_colors).random()
    theta = nodes.Dirichlet(n_colors * [0.5], plates=(n_bags,))
    y = nodes.Multinomial(n_trials, theta)
    y.observe(marbles)
    Q = VB(y, theta)
    model1 = _sweeps(Q, nodes, 1000)
    draw_marbles = nodes.Categorical(p_colors, plates=(n_trials, n_bags)).random()
    p_theta = nodes.Dirichlet(np.ones(n_colors), plates=(n_bags,), name="p_theta")
    bag_model = nodes.Categorical(p_theta, plates=(n_trials, n_bags), name="bag_model")
    bag_model.observe(draw_marbles)
    Q = VB(bag_model, p_theta)
    model2 = _sweeps(Q, nodes, 1000)
    return (p_colors, marbles, draw_marbles), model1, model2


def test_multinomial_example_matches_bayespy():
    data_b, m1_b, m2_b = multinomial_example(_bayespy())
    data, m1, m2 = multinomial_example(_skvi())
    for a, b in zip(data, data_b):
        np.testing.assert_array_equal(a, b)
    _agree(m1, m1_b)
    _agree(m2, m2_b)


def test_multinomial_random_draws_are_bayespys_and_multinomial():
    theirs = _bayespy()
    n = np.array([[3], [50]])
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    draws = {}
    for lib in (theirs, _skvi()):
        np.random.seed(3)
        draws[lib is theirs] = lib.Multinomial(n, p, plates=(2, 2)).random()
    np.testing.assert_array_equal(draws[False], draws[True])
    np.random.seed(0)
    big = Multinomial(1000, [0.2, 0.3, 0.5], plates=(2000,)).random()
    assert big.shape == (2000, 3) and np.all(big.sum(axis=-1) == 1000)
    np.testing.assert_allclose(big.mean(axis=0), [200, 300, 500], rtol=0.01)


# ------------------------------------------------------------------ Take
def factorisation(lib, mask=True):
    """Matrix factorisation as a network: each rating's user and item factors picked by Take."""
    rng = np.random.RandomState(0)
    n_users, n_items, D, N = 6, 5, 2, 40
    users = rng.randint(n_users, size=N)
    items = rng.randint(n_items, size=N)
    ratings = rng.randn(N) + 0.5 * users - 0.3 * items
    U = lib.GaussianARD(0, 1, shape=(D,), plates=(n_users,), name="U")
    V = lib.GaussianARD(0, 1, shape=(D,), plates=(n_items,), name="V")
    tau = lib.Gamma(1e-2, 1e-2, name="tau")
    F = lib.SumMultiply("d,d", lib.Take(U, users), lib.Take(V, items))
    Y = lib.GaussianARD(F, tau, name="Y")
    Y.observe(ratings, mask=mask)
    np.random.seed(5)
    U.initialize_from_random()
    V.initialize_from_random()
    Q = lib.VB(Y, U, V, tau)
    return Q, _sweeps(Q, lib, 30)


@pytest.mark.parametrize("masked", [False, True])
def test_take_matrix_factorisation_matches_bayespy(masked):
    mask = np.random.RandomState(1).rand(40) < 0.6 if masked else True
    Q_b, bounds_b = factorisation(_bayespy(), mask)
    Q, bounds = factorisation(_skvi(), mask)
    _agree(bounds, bounds_b)
    for name in ("U", "V", "tau"):
        for a, b in zip(Q[name].get_moments(), Q_b[name].get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)


def _picked_product(keys, n_rows=300, masked=False):
    """A rating's mean: the picked factors' sum of products, plus picked biases (Add)."""
    rng = np.random.RandomState(4)
    ka, kb = keys.split(",")
    sizes = {"d": 3, "i": 2, "j": 3}
    n_users, n_items = 7, 9
    # Repeated (user, item) pairs, and users and items no row picks.
    users = rng.randint(n_users - 1, size=n_rows)
    items = rng.randint(n_items - 1, size=n_rows)
    U = GaussianARD(0, 1, shape=tuple(sizes[k] for k in ka), plates=(n_users,), name="U")
    V = GaussianARD(0, 1, shape=tuple(sizes[k] for k in kb), plates=(n_items,), name="V")
    b = GaussianARD(0, 1, plates=(n_users,), name="b")
    ones = (1,) * len(U.dims[0])
    U.initialize_from_parameters(rng.randn(*U.plates, *U.dims[0]), 2.0 + rng.rand(n_users, *ones))
    V.initialize_from_parameters(rng.randn(*V.plates, *V.dims[0]), 3.0)
    b.initialize_from_parameters(rng.randn(n_users), 2.0)
    f = SumMultiply(keys, Take(U, users), Take(V, items), name="f")
    Y = GaussianARD(Add(f, Take(b, users)), Gamma(2.0, 1.0), name="Y")
    Y.observe(rng.randn(n_rows), mask=rng.rand(n_rows) < 0.7 if masked else True)
    return U, V, b, f, Y


@pytest.mark.parametrize("keys", ["d,d", "ij,ij", "ij,ji"])
@pytest.mark.parametrize("route", ["compiled", "dense", "rows"])
@pytest.mark.parametrize("masked", [False, True])
def test_inner_product_of_picks_skips_the_picked_moments_and_keeps_the_sums(
    keys, route, masked, monkeypatch
):
    # The product's moments and its messages to the picked nodes, from the
    # nodes picked from (no per-row second moments), against the general
    # sums through the picked moments: by the compiled row-wise sums, or
    # without them by pairwise products or picked rows.
    from skvi.networks import _picked

    if route == "compiled" and _picked._picked_fast is None:
        pytest.skip("the compiled kernel is not built")
    if route != "compiled":
        monkeypatch.setattr(_picked, "_picked_fast", None)
    monkeypatch.setattr(_picked, "DENSE_RATIO", 1e9 if route == "dense" else 0)
    U, V, b, f, Y = _picked_product(keys, masked=masked)
    fast = [f.get_moments()] + [
        take._message_to_parent(0) for take, _ in U.children + V.children + b.children
    ]
    assert all(take._lazy() for take, _ in U.children + V.children)  # never picked
    monkeypatch.setattr(_picked, "picked_pair", lambda node: None)
    U, V, b, f, Y = _picked_product(keys, masked=masked)
    general = [f.get_moments()] + [
        take._message_to_parent(0) for take, _ in U.children + V.children + b.children
    ]
    for ours_, theirs in zip(fast, general):
        for a, c in zip(ours_, theirs):
            np.testing.assert_allclose(a, np.broadcast_to(c, np.shape(a)), rtol=1e-12, atol=1e-12)
    # A VMP sweep from there: the same q.
    for node in (U, V, b):
        node.update()
    assert np.all(np.isfinite(U.get_moments()[1]))


def test_take_picks_along_any_plate_axis_with_index_arrays_of_any_shape():
    theirs = _bayespy()
    idx = np.array([[2, 0, 0], [1, 1, 2]])
    results = []
    for lib in (theirs, _skvi()):
        np.random.seed(2)
        x = lib.GaussianARD(0, 1, plates=(3, 4), shape=(2,))
        x.initialize_from_random()
        t = lib.Take(x, idx, plate_axis=-2)
        assert t.plates == (2, 3, 4)
        y = lib.GaussianARD(t, 2.0)
        y.observe(np.random.RandomState(0).randn(2, 3, 4, 2))
        Q = lib.VB(y, x)
        Q.update(repeat=1, **lib.quiet)
        results.append((t.get_moments()[1], x.get_moments()[0], Q.compute_lowerbound()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_take_of_a_dirichlet_and_negative_indices():
    p = Dirichlet([[1.0, 2.0], [3.0, 1.0]])
    t = Take(p, [-1, 0, -1])
    np.testing.assert_array_equal(t.get_moments()[0], p.get_moments()[0][[1, 0, 1]])
    z = Categorical(t, name="z")
    z.observe([0, 1, 1])
    Q = VB(z, p)
    Q.update(repeat=1)
    # Dirichlet posteriors: counts added to the element each row picked.
    np.testing.assert_allclose(p.phi[0], [[1.0, 3.0], [4.0, 2.0]])


# ------------------------------------------------------------------ Gate
def gated_means(lib):
    """A mixture of Gaussian means written with Gate, the clusters on plate axis -2."""
    rng = np.random.RandomState(4)
    K, N = 3, 30
    y = rng.randn(N, 2) + 3.0 * rng.randint(K, size=N)[:, None]
    alpha = lib.Dirichlet(np.ones(K), name="alpha")
    z = lib.Categorical(alpha, plates=(N, 1), name="z")
    mu = lib.GaussianARD(0, 1e-3, plates=(K, 2), name="mu")
    tau = lib.Gamma(1, 1, plates=(2,), name="tau")
    Y = lib.GaussianARD(lib.Gate(z, mu, gated_plate=-2), tau, name="Y")
    Y.observe(y)
    np.random.seed(7)
    mu.initialize_from_random()
    Q = lib.VB(Y, z, mu, tau, alpha)
    return Q, _sweeps(Q, lib, 40)


def test_gate_mixture_on_another_plate_axis_matches_bayespy():
    Q_b, bounds_b = gated_means(_bayespy())
    Q, bounds = gated_means(_skvi())
    _agree(bounds, bounds_b)
    np.testing.assert_allclose(
        Q["z"].get_moments()[0], Q_b["z"].get_moments()[0], rtol=1e-5, atol=1e-8
    )


def test_gate_with_fixed_categories_is_take():
    """Gate by fixed categories is Take by the same indices: same moments, same messages."""
    idx = np.array([2, 0, 1, 1])
    data = np.array([[1, 2, 5], [2, 3, 1], [3, 1, 2], [1, 9, 1]])
    posteriors = []
    for picker in (
        lambda p: Gate(Constant(CategoricalMoments(3), idx), p),
        lambda p: Take(p, idx),
    ):
        p = Dirichlet(np.ones((3, 3)))
        x = ours.Multinomial(data.sum(axis=1), picker(p))
        x.observe(data)
        VB(x, p).update(repeat=1)
        posteriors.append(p.phi[0])
    np.testing.assert_allclose(posteriors[0], posteriors[1])


# ------------------------------------------------------------------ Add
def added(lib):
    rng = np.random.RandomState(8)
    N = 12
    y = rng.randn(N, 2) + [1.0, -2.0]
    a = lib.GaussianARD(0, 1, shape=(2,), plates=(N,), name="a")
    b = lib.GaussianARD(0, 1e-2, shape=(2,), name="b")
    tau = lib.Gamma(1, 1, name="tau")
    Y = lib.GaussianARD(lib.Add(a, b, np.array([0.5, 0.5])), tau, name="Y")
    Y.observe(y)
    np.random.seed(9)
    a.initialize_from_random()
    Q = lib.VB(Y, a, b, tau)
    return Q, _sweeps(Q, lib, 50)


def test_add_matches_bayespy():
    Q_b, bounds_b = added(_bayespy())
    Q, bounds = added(_skvi())
    _agree(bounds, bounds_b)
    for a, b in zip(Q["b"].get_moments(), Q_b["b"].get_moments()):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_add_moments_are_those_of_a_sum_of_independent_variables():
    x = GaussianARD([1.0, 2.0], [1.0, 4.0], shape=(2,))
    y = GaussianARD([0.5, -1.0], [2.0, 1.0], shape=(2,))
    m, mm = Add(x, y).get_moments()
    np.testing.assert_allclose(m, [1.5, 1.0])
    cov = np.diag([1.0 + 0.5, 0.25 + 1.0])
    np.testing.assert_allclose(mm, cov + np.outer(m, m))


# ------------------------------------------------------------------ GaussianGamma
def gaussian_gamma_with_node_parents(lib):
    rng = np.random.RandomState(11)
    X = rng.randn(20, 3)
    y = X @ [1.0, -1.0, 0.5] + 0.3 * rng.randn(20)
    mu = lib.GaussianARD(0, 1e-2, shape=(3,), name="mu")
    b = lib.Gamma(1.0, 1.0, name="b")
    B = lib.GaussianGamma(mu, np.identity(3), 2.0, b, name="B")
    alpha = lib.Gamma(2.0, 2.0, name="alpha")
    Y = lib.GaussianARD(lib.SumMultiply("i,i", B, X), alpha)
    Y.observe(y)
    Q = lib.VB(Y, B, mu, b, alpha)
    return Q, _sweeps(Q, lib, 50)


def test_gaussian_gamma_with_node_parameters_matches_bayespy():
    Q_b, bounds_b = gaussian_gamma_with_node_parents(_bayespy())
    Q, bounds = gaussian_gamma_with_node_parents(_skvi())
    _agree(bounds, bounds_b)
    for name in ("B", "mu", "b", "alpha"):
        for a, b in zip(Q[name].get_moments(), Q_b[name].get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-5)


def test_gaussian_gamma_draws_have_the_prior_moments():
    np.random.seed(0)
    Lam = np.array([[2.0, 0.5], [0.5, 1.0]])
    x, tau = GaussianGamma(np.array([1.0, -1.0]), Lam, 3.0, 2.0, plates=(40000,)).random()
    # tau ~ Gamma(3, 2); x | tau ~ N(mu, (tau Lam)^-1): E[tau x] = E[tau] mu,
    # E[tau x x'] = Lam^-1 + E[tau] mu mu'.
    assert tau.mean() == pytest.approx(1.5, rel=0.02)
    np.testing.assert_allclose((tau[:, None] * x).mean(axis=0), [1.5, -1.5], rtol=0.03)
    txx = np.einsum("n,ni,nj->ij", tau, x, x) / len(tau)
    np.testing.assert_allclose(
        txx, np.linalg.inv(Lam) + 1.5 * np.outer([1, -1], [1, -1]), rtol=0.05, atol=0.03
    )


# ------------------------------------------------------------------ errors, pickles
def test_bad_declarations_raise_naming_the_argument():
    g = Gamma([1.0, 2.0, 3.0], 1.0)
    cases = [
        (lambda: Take(np.ones(3), [0]), "node must be a node"),
        (lambda: Take(g, [0.5]), "indices must be integers"),
        (lambda: Take(g, [True]), "indices must be integers"),
        (lambda: Take(g, [3]), r"indices: got 3(\.0)? .* \[-3, 3\)"),
        (lambda: Take(g, [-4]), "indices"),
        (lambda: Take(g, [0], plate_axis=0), "plate_axis must be a negative"),
        (lambda: Take(g, [0], plate_axis=-2), "plate_axis=-2 is not a plate axis"),
        (lambda: Gate([0, 1], np.ones((2, 3))), "X must be a node"),
        (lambda: Gate([0, 1], Dirichlet(np.ones((2, 3))), gated_plate=1), "gated_plate"),
        (lambda: Gate([0, 1], Dirichlet(np.ones(3))), "no plate axis -1"),
        (lambda: Gate([0, 5], Dirichlet(np.ones((2, 3)))), r"'Z'.*\[0, 2\)"),
        (lambda: Gate([0, np.nan], Dirichlet(np.ones((2, 3)))), "'Z'"),
        (lambda: Gate(g, Dirichlet(np.ones((3, 3)))), "Z is Gamma"),
        (
            lambda: Gate(Categorical([0.5, 0.5]), Dirichlet(np.ones((3, 3)))),
            "parent 'Z'",
        ),
        (lambda: Add(GaussianARD(0, 1)), "at least two"),
        (lambda: Add(np.ones(2), np.ones(2)), "at least one operand"),
        (lambda: Add(g, GaussianARD(0, 1)), "operand 0 is Gamma"),
        (lambda: Add(GaussianARD(0, 1, shape=(2,)), np.ones(3)), "operand 1"),
        (lambda: Add(GaussianARD(0, 1), [np.inf]), "operand 1"),
        (lambda: (lambda x: Add(x, x))(GaussianARD(0, 1)), "operand twice"),
        (lambda: CategoricalMoments(0), "categories must be a positive integer"),
        (lambda: CategoricalMoments(2.5), "categories must be a positive integer"),
        (lambda: GaussianGamma(np.zeros(2), np.eye(2), g, 1.0), "shape a is Gamma"),
        (lambda: GaussianGamma(np.zeros(2), np.ones(2), 1.0, 1.0), "Lambda of shape"),
        (lambda: GaussianGamma(np.zeros(3), np.eye(2), 1.0, 1.0), "mu of shape"),
        (lambda: GaussianGamma(np.zeros(2), -np.eye(2), 1.0, 1.0), "'Lambda'"),
        (lambda: GaussianGamma(np.zeros(2), np.eye(2), -1.0, 1.0), "'a'"),
        (lambda: GaussianGamma(np.zeros(2), np.eye(2), 1.0, np.nan), "'b'"),
        (lambda: GaussianGamma([np.nan, 0.0], np.eye(2), 1.0, 1.0), "'mu'"),
        (lambda: Multinomial(-1, [0.5, 0.5]), "number of draws n"),
        (lambda: Categorical([0.5, 0.5], plates=(2,), plates_multiplier=(-1.0,)), "multiplier"),
        (
            lambda: Categorical([0.5, 0.5], plates=(2,), plates_multiplier=(np.nan,)),
            "plates_multiplier",
        ),
        (lambda: Constant(CategoricalMoments(2), [0, 1]).set_value([0, 1, 1]), "plates"),
        (lambda: Constant(CategoricalMoments(2), [0, 1]).set_value([0, 2]), r"\[0, 2\)"),
        (lambda: VB(GaussianARD(0, 1)).gradient_step(scale=0.0), "scale must be in"),
        (lambda: VB(GaussianARD(0, 1)).gradient_step(scale=np.nan), "scale must be in"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
    B = GaussianGamma(np.zeros(2), np.eye(2), 1.0, 1.0, name="B")
    with pytest.raises(NetworkError, match="cannot be observed"):
        B.observe(np.zeros(2))
    with pytest.raises(NetworkError, match="initialize_from_value is not available"):
        B.initialize_from_random()
    C = GaussianGamma(np.zeros(2), np.eye(2), 1.0, 1.0)
    with pytest.raises(NetworkError, match="2 Gaussian-Gamma operands"):
        SumMultiply("i,i", B, C)


def test_networks_with_the_new_nodes_pickle_and_refit_the_same():
    Q, bounds = factorisation(_skvi())
    again = pickle.loads(pickle.dumps(Q["Y"]))
    U, V, tau = _graph_nodes(again)[:3]
    Q2 = VB(again, U, V, tau)
    Q2.update(repeat=1)
    Q.update(repeat=1)
    assert Q2.compute_lowerbound() == pytest.approx(Q.compute_lowerbound(), rel=1e-12)
    doc = Gate(Constant(CategoricalMoments(2), [0, 1, 1]), Dirichlet(np.ones((2, 3))))
    copy = pickle.loads(pickle.dumps(doc))
    np.testing.assert_array_equal(copy.get_moments()[0], doc.get_moments()[0])


def _graph_nodes(node):
    """Every node linked to ``node`` (parents and children, transitively)."""
    seen, todo = {id(node): node}, [node]
    while todo:
        n = todo.pop()
        for m in list(n.parents) + [c for c, _ in n.children]:
            if id(m) not in seen:
                seen[id(m)] = m
                todo.append(m)
    order = {"U": 0, "V": 1, "tau": 2}
    return sorted(seen.values(), key=lambda n: order.get(n.name, 3))


# ------------------------------------------------------------------ as an estimator
N_USERS, N_ITEMS, RANK = 30, 20, 2


def factorisation_builder(X_rows):
    """Matrix factorisation of the rows' (user, item) pairs, each pair's factors picked by Take."""
    U = GaussianARD(0, 1, shape=(RANK,), plates=(N_USERS,), name="U")
    V = GaussianARD(0, 1, shape=(RANK,), plates=(N_ITEMS,), name="V")
    tau = Gamma(1e-2, 1e-2, name="tau")
    U.initialize_from_parameters(np.random.RandomState(1).randn(N_USERS, RANK), 1.0)
    V.initialize_from_parameters(np.random.RandomState(2).randn(N_ITEMS, RANK), 1.0)
    users = Take(U, X_rows[:, 0].astype(int), name="user")
    items = Take(V, X_rows[:, 1].astype(int), name="item")
    return GaussianARD(SumMultiply("d,d", users, items), tau, name="y")


def test_factorisation_estimator_feeds_each_blocks_indices_and_is_vmp():
    rng = np.random.RandomState(0)
    n = 400
    pairs = np.column_stack([rng.randint(N_USERS, size=n), rng.randint(N_ITEMS, size=n)])
    truth = rng.randn(N_USERS, RANK)[pairs[:, 0]] * rng.randn(N_ITEMS, RANK)[pairs[:, 1]]
    ratings = truth.sum(axis=1) + 0.3 * rng.randn(n)
    X = pairs.astype(float)
    est = ours.SVIBayesianNetwork(
        model=factorisation_builder, init_params="model", max_iter=30, tol=0.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 passes, whether converged or not
        est.fit(X, ratings)
    # The same network by VB, the same start and update order: the same fit.
    Y = factorisation_builder(X)
    Y.observe(ratings)
    nodes = {n.name: n for n in _graph_nodes(Y)}
    Q = VB(Y, *[nodes[name] for name in est.global_nodes_])
    Q.update(repeat=30, tol=-np.inf)
    assert est.lower_bound_ == pytest.approx(Q.compute_lowerbound(), rel=1e-10)
    for name in ("U", "V", "tau"):
        for a, b in zip(est.nodes_[name].get_moments(), nodes[name].get_moments()):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
    # Predictions of new pairs: E[u]' E[v] of the fitted factors.
    new = np.array([[3.0, 4.0], [29.0, 0.0]])
    EU, EV = nodes["U"].get_moments()[0], nodes["V"].get_moments()[0]
    expected = (EU[[3, 29]] * EV[[4, 0]]).sum(axis=1)
    np.testing.assert_allclose(est.predict(new), expected, rtol=1e-8)
    # A row of weight 3 is that row three times, through the picks.
    weight = np.ones(n)
    weight[:5] = 3.0
    settings = {"model": factorisation_builder, "init_params": "model", "max_iter": 10, "tol": 0.0}
    weighted = _fit_quietly(ours.SVIBayesianNetwork(**settings), X, ratings, sample_weight=weight)
    repeated = _fit_quietly(
        ours.SVIBayesianNetwork(**settings),
        np.vstack([X, X[:5], X[:5]]),
        np.concatenate([ratings, ratings[:5], ratings[:5]]),
    )
    assert weighted.lower_bound_ == pytest.approx(repeated.lower_bound_, rel=1e-10)


N_DOCS, N_TOPICS, N_VOCABULARY = 8, 3, 30


def lda_builder(X_rows):
    """LDA of the rows' words, each row's document its input: BayesPy's gates."""
    p_topic = Dirichlet(np.ones(N_TOPICS), plates=(N_DOCS,), name="p_topic")
    p_word = Dirichlet(np.ones(N_VOCABULARY), plates=(N_TOPICS,), name="p_word")
    start = np.random.RandomState(3).gamma(1.0, size=(N_TOPICS, N_VOCABULARY)) + 0.5
    p_word.initialize_from_parameters(start)
    documents = Constant(CategoricalMoments(N_DOCS), X_rows[:, 0].astype(int), name="document")
    topics = Categorical(Gate(documents, p_topic), name="topics")
    return Categorical(Gate(topics, p_word), name="words")


def _lda_corpus(n=1500):
    rng = np.random.RandomState(0)
    docs = rng.randint(N_DOCS, size=n)
    p_topic = rng.dirichlet(0.2 * np.ones(N_TOPICS), size=N_DOCS)
    p_word = rng.dirichlet(0.2 * np.ones(N_VOCABULARY), size=N_TOPICS)
    topics = (rng.rand(n, 1) > np.cumsum(p_topic[docs], axis=1)).sum(axis=1)
    words = (rng.rand(n, 1) > np.cumsum(p_word[topics], axis=1)).sum(axis=1)
    return docs[:, None].astype(float), np.minimum(words, N_VOCABULARY - 1)


def _fit_quietly(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fixed number of passes, converged or not
        return est.fit(*args, **kwargs)


def test_lda_estimator_with_gates_is_vmp_weights_rows_and_learns_online():
    X, words = _lda_corpus()
    est = _fit_quietly(
        ours.SVIBayesianNetwork(model=lda_builder, init_params="model", max_iter=20, tol=0.0),
        X,
        words,
    )
    assert est.local_nodes_ == ["topics"]
    # VB on the same network: the local step (topics) first, then the globals.
    Y = lda_builder(X)
    Y.observe(words)
    nodes = {n.name: n for n in _graph_nodes(Y)}
    Q = VB(Y, nodes["topics"], *[nodes[name] for name in est.global_nodes_])
    Q.update(repeat=20, tol=-np.inf)
    assert est.lower_bound_ == pytest.approx(Q.compute_lowerbound(), rel=1e-10)
    # A row of weight 2 is that row twice, through both gates.
    weight = np.ones(len(X))
    weight[:10] = 2.0
    settings = {"model": lda_builder, "init_params": "model", "max_iter": 20, "tol": 0.0}
    weighted = _fit_quietly(ours.SVIBayesianNetwork(**settings), X, words, sample_weight=weight)
    repeated = _fit_quietly(
        ours.SVIBayesianNetwork(**settings),
        np.vstack([X, X[:10]]),
        np.concatenate([words, words[:10]]),
    )
    assert weighted.lower_bound_ == pytest.approx(repeated.lower_bound_, rel=1e-10)
    # Online SVI over minibatches reaches the batch fit's held-in score.
    batch = ours.SVIBayesianNetwork(**{**settings, "max_iter": 100, "tol": 1e-8}).fit(X, words)
    online = _fit_quietly(
        ours.SVIBayesianNetwork(
            model=lda_builder,
            init_params="model",
            learning_method="online",
            batch_size=300,
            max_iter=30,
            random_state=0,
        ),
        X,
        words,
    )
    assert online.score(X, words) == pytest.approx(batch.score(X, words), rel=0.06)
