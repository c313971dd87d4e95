"""The online HDP topic model: its local step, ELBO, engine contract and fits."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad
from scipy.optimize import linear_sum_assignment
from scipy.special import digamma, gammaln
from scipy.stats import beta as beta_dist

from skvi import SVIHierarchicalDirichletProcess
from skvi.engine import check_model
from skvi.metrics import document_completion_perplexity
from skvi.models.hdp.estep import candidate_topics, hdp_local_step


def _corpus(n_docs=300, n_words=30, n_topics=4, length=50, seed=0):
    """Documents drawn from LDA's generative process, and the topics behind them."""
    rng = np.random.RandomState(seed)
    topics = rng.dirichlet(np.full(n_words, 0.1), n_topics)
    theta = rng.dirichlet(np.full(n_topics, 0.3), n_docs)
    X = np.vstack([rng.multinomial(length, t @ topics) for t in theta])
    return X.astype(float), topics


# ------------------------------------------------------- plain-Python references
def _softmax(values):
    top = max(values)
    e = [math.exp(v - top) for v in values]
    s = sum(e)
    return [x / s for x in e]


def _log_sticks(a, b):
    """E[log sigma_k] of stick-breaking weights with Beta(a_k, b_k) proportions, by loops."""
    K = len(a) + 1
    out = []
    for k in range(K):
        value = 0.0
        if k < K - 1:
            value += digamma(a[k]) - digamma(a[k] + b[k])
        for j in range(k):
            value += digamma(b[j]) - digamma(a[j] + b[j])
        out.append(value)
    return out


def _reference_local_step(words, counts, elog_beta, elog_sticks, alpha, K, n_iter, plain=0):
    """One document's coordinate ascent as the paper writes it, word by word.

    The start of :mod:`skvi.models.hdp.estep`: component k takes the posterior of
    its topic given the token at quantile (k + 1/2) / K, and the first update
    of phi leaves the document's sticks out; the first ``plain`` iterations
    (and the start) leave out the corpus's sticks and the document's.
    """
    T = len(elog_sticks)
    total = sum(counts)
    varphi = []
    for k in range(K):
        target = (k + 0.5) / K * total
        seen, anchor = 0.0, len(words) - 1
        for i, c in enumerate(counts):
            seen += c
            if seen > target:
                anchor = i
                break
        corpus = [0.0] * T if plain else elog_sticks
        varphi.append(_softmax([elog_beta[t][words[anchor]] + corpus[t] for t in range(T)]))
    a, b = [1.0] * (K - 1), [alpha] * (K - 1)
    for it in range(n_iter):
        elog_pi = [0.0] * K if it < max(plain, 1) else _log_sticks(a, b)
        corpus = [0.0] * T if it < plain else elog_sticks
        phi = []
        for w in words:
            phi.append(
                _softmax(
                    [
                        sum(varphi[k][t] * elog_beta[t][w] for t in range(T)) + elog_pi[k]
                        for k in range(K)
                    ]
                )
            )
        mass = [sum(c * p[k] for c, p in zip(counts, phi)) for k in range(K)]
        a = [1.0 + mass[k] for k in range(K - 1)]
        b = [alpha + sum(mass[k + 1 :]) for k in range(K - 1)]
        varphi = [
            _softmax(
                [
                    sum(c * p[k] * elog_beta[t][w] for c, p, w in zip(counts, phi, words))
                    + corpus[t]
                    for t in range(T)
                ]
            )
            for k in range(K)
        ]
    return varphi, a, b


def _beta_kl_by_quadrature(a, b, prior_b):
    """KL(Beta(a, b) || Beta(1, prior_b)) by numerical integration."""
    q, p = beta_dist(a, b), beta_dist(1.0, prior_b)
    value, _ = quad(lambda x: q.pdf(x) * (q.logpdf(x) - p.logpdf(x)), 0.0, 1.0, limit=200)
    return value


def _dirichlet_kl(lam, eta):
    """KL(Dirichlet(lam) || Dirichlet(eta, ..., eta)), the textbook formula."""
    total = sum(lam)
    value = gammaln(total) - gammaln(len(lam) * eta)
    for x in lam:
        value += gammaln(eta) - gammaln(x) + (x - eta) * (digamma(x) - digamma(total))
    return value


def _reference_elbo(X, lam, sticks, varphi, a, b, alpha, gamma, eta):
    """The ELBO token by token: each token's own phi at its optimum."""
    T, V = lam.shape
    elog_beta = [[digamma(lam[t][w]) - digamma(sum(lam[t])) for w in range(V)] for t in range(T)]
    elog_sig = _log_sticks(list(sticks[:, 0]), list(sticks[:, 1]))
    data = 0.0
    for d in range(X.shape[0]):
        K = varphi[d].shape[0]
        elog_pi = _log_sticks(list(a[d]), list(b[d]))
        for w in range(V):
            for _ in range(int(X[d, w])):
                logits = [
                    sum(varphi[d][k][t] * elog_beta[t][w] for t in range(T)) + elog_pi[k]
                    for k in range(K)
                ]
                phi = _softmax(logits)
                data += sum(p * (x - math.log(p)) for p, x in zip(phi, logits) if p > 0)
        for k in range(K):
            for t in range(T):
                v = varphi[d][k][t]
                data += v * (elog_sig[t] - math.log(v))
        for k in range(K - 1):
            data -= _beta_kl_by_quadrature(a[d][k], b[d][k], alpha)
    glob = -sum(_dirichlet_kl(list(lam[t]), eta) for t in range(T))
    glob -= sum(_beta_kl_by_quadrature(u, v, gamma) for u, v in sticks)
    return data, glob


# ------------------------------------------------------------------- the tests
def test_local_step_matches_the_papers_updates_for_one_document():
    rng = np.random.RandomState(1)
    T, V, K = 4, 7, 3
    elog_beta = np.log(rng.dirichlet(np.ones(V), T))
    elog_sticks = np.log(rng.dirichlet(np.ones(T)))
    words, counts = [0, 2, 3, 6], [3.0, 1.0, 2.0, 4.0]
    X = sp.csr_matrix((counts, words, [0, len(words)]), shape=(1, V))
    got = hdp_local_step(
        X, np.ascontiguousarray(elog_beta.T), elog_sticks, 0.7, K, 15, 0.0, keep=True
    )
    varphi, a, b = _reference_local_step(
        words, counts, elog_beta.tolist(), elog_sticks.tolist(), 0.7, K, 15
    )
    np.testing.assert_allclose(got["varphi"][0], varphi, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got["a"][0], a, rtol=1e-10)
    np.testing.assert_allclose(got["b"][0], b, rtol=1e-10)
    assert got["n_updates"] == 15
    # Wang et al.'s start: the first iterations without any sticks.
    got = hdp_local_step(
        X, np.ascontiguousarray(elog_beta.T), elog_sticks, 0.7, K, 15, 0.0, keep=True, plain_iter=3
    )
    varphi, a, b = _reference_local_step(
        words, counts, elog_beta.tolist(), elog_sticks.tolist(), 0.7, K, 15, plain=3
    )
    np.testing.assert_allclose(got["varphi"][0], varphi, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got["a"][0], a, rtol=1e-10)


def test_local_step_keeps_words_whose_every_component_is_far_below_their_best_topic():
    # Word 0 is 2000 nats likelier under topic 0 than under topics 1 and 2,
    # which the document's other words take: all of its phi logits lie far
    # below its best topic's, and exp underflows unless normalised.
    T, V, K = 3, 4, 2
    elog_beta = np.log(np.full((T, V), 0.25))
    elog_beta[1:, 0] = -2000.0
    elog_beta[0, 1:] = -2000.0
    elog_sticks = np.log(np.full(T, 1.0 / T))
    words, counts = [0, 1, 2, 3], [1.0, 20.0, 20.0, 20.0]
    X = sp.csr_matrix((counts, words, [0, len(words)]), shape=(1, V))
    got = hdp_local_step(
        X, np.ascontiguousarray(elog_beta.T), elog_sticks, 1.0, K, 10, 0.0, keep=True
    )
    varphi, a, b = _reference_local_step(
        words, counts, elog_beta.tolist(), elog_sticks.tolist(), 1.0, K, 10
    )
    assert np.all(np.isfinite(got["bound"]))
    np.testing.assert_allclose(got["varphi"][0], varphi, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(got["a"][0], a, rtol=1e-8)


def test_candidate_topics_are_the_documents_most_expected_topics():
    # A word's share of topic t is softmax_t(E[log beta_tw] + E[log sigma_t]);
    # a document keeps the topics of the largest count-weighted sums, by loops.
    rng = np.random.RandomState(4)
    T, L, M = 9, 5, 4
    eb = np.log(rng.dirichlet(np.ones(T), (3, L)))
    counts = rng.randint(0, 4, (3, L)).astype(float)
    elog_sticks = np.log(rng.dirichlet(np.ones(T)))
    got = candidate_topics(eb, counts, elog_sticks, M)
    for d in range(3):
        score = [0.0] * T
        for n in range(L):
            share = _softmax([eb[d, n, t] + elog_sticks[t] for t in range(T)])
            for t in range(T):
                score[t] += counts[d, n] * share[t]
        want = sorted(sorted(range(T), key=lambda t: -score[t])[:M])
        assert got[d].tolist() == want


def test_restricted_local_step_is_the_papers_on_the_candidate_topics():
    # With n_candidates < T, a document's local step is the paper's
    # coordinate ascent on its candidate topics alone (varphi = 0 elsewhere).
    rng = np.random.RandomState(2)
    T, V, K, M = 8, 9, 3, 3
    elog_beta = np.log(rng.dirichlet(np.full(V, 0.5), T))
    elog_sticks = np.log(rng.dirichlet(np.ones(T)))
    words, counts = [0, 2, 3, 6, 8], [3.0, 1.0, 2.0, 4.0, 1.0]
    X = sp.csr_matrix((counts, words, [0, len(words)]), shape=(1, V))
    elog_beta_t = np.ascontiguousarray(elog_beta.T)
    got = hdp_local_step(X, elog_beta_t, elog_sticks, 0.7, K, 15, 0.0, keep=True, n_candidates=M)
    cand = candidate_topics(elog_beta_t[words][None], np.array([counts]), elog_sticks, M)[0]
    varphi, a, b = _reference_local_step(
        words, counts, elog_beta[cand].tolist(), elog_sticks[cand].tolist(), 0.7, K, 15
    )
    want = np.zeros((K, T))
    want[:, cand] = varphi
    np.testing.assert_allclose(got["varphi"][0], want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got["a"][0], a, rtol=1e-10)
    np.testing.assert_allclose(got["b"][0], b, rtol=1e-10)
    # The statistics of the topics and sticks land on the candidate topics.
    stats = hdp_local_step(
        X, elog_beta_t, elog_sticks, 0.7, K, 15, 0.0, topic_stats=True, n_candidates=M
    )
    phi = np.array(
        [
            _softmax(
                [
                    sum(want[k, t] * elog_beta[t, w] for t in range(T)) + e
                    for k, e in enumerate(_log_sticks(a, b))
                ]
            )
            for w in words
        ]
    )
    topics = np.zeros((V, T))
    for n, w in enumerate(words):
        topics[w] += counts[n] * phi[n] @ want
    np.testing.assert_allclose(stats["topics"], topics, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stats["sticks"], want.sum(axis=0), rtol=1e-10, atol=1e-13)


def test_each_topic_starts_from_one_document():
    # Documents on disjoint words: each initial topic's mass above the flat
    # start (mean 1 per word) lies on one document's words, and weighs
    # half a flat topic's mass (V) times the document's share of the mean
    # document's tokens.
    V, D, T = 60, 12, 5
    X = np.zeros((D, V))
    for d in range(D):
        X[d, 5 * d : 5 * d + 5] = np.arange(1, 6) * (1 + d % 3)
    hdp = SVIHierarchicalDirichletProcess(n_components=T, random_state=0)
    hdp._check_docs(X, reset=True)
    start = hdp._initialize_globals(sp.csr_matrix(X), np.random.RandomState(0), None)
    lam = start["topics"][0] + 1.0  # the natural parameters are lambda - 1
    mean_tokens = X.sum(axis=1).mean()
    seeds = []
    for t in range(T):
        d = int(np.argmax(lam[t]) // 5)
        seeds.append(d)
        words = slice(5 * d, 5 * d + 5)
        seeded = lam[t, words] - np.median(lam[t])
        np.testing.assert_allclose(seeded, 0.5 * V / mean_tokens * X[d, words], atol=0.5)
        rest = np.delete(lam[t], np.arange(5 * d, 5 * d + 5))
        assert rest.max() < 2.0
    assert len(set(seeds)) == T
    # Documents of two themes only (cosine distance 0 within a theme): two
    # topics are seeded, one per theme, and the others keep the flat start.
    X2 = np.zeros((D, V))
    X2[::2, :5] = np.arange(1, 6)
    X2[1::2, 5:10] = 2 * np.arange(1, 6)
    start = hdp._initialize_globals(sp.csr_matrix(X2), np.random.RandomState(0), None)
    lam = start["topics"][0] + 1.0
    themes = sorted(int(np.argmax(row) // 5) for row in lam if row.max() > 2.0)
    assert themes == [0, 1]


def test_documents_of_a_minibatch_are_independent():
    # Buckets of other lengths, padding and the active set change nothing.
    X, _ = _corpus(n_docs=40, length=30)
    X[3] = 0.0  # an empty document
    X[5, :] = 0.0
    X[5, 2] = 1.0  # a one-token document
    X = sp.csr_matrix(X)
    rng = np.random.RandomState(0)
    elog_beta_t = np.log(rng.dirichlet(np.ones(6), X.shape[1]))
    elog_sticks = np.log(rng.dirichlet(np.ones(6)))
    together = hdp_local_step(X, elog_beta_t, elog_sticks, 1.0, 3, 50, 1e-6, keep=True)
    for d in (0, 3, 5, 17):
        alone = hdp_local_step(X[d], elog_beta_t, elog_sticks, 1.0, 3, 50, 1e-6, keep=True)
        np.testing.assert_allclose(together["varphi"][d], alone["varphi"][0], atol=1e-12)
        np.testing.assert_allclose(together["bound"][d], alone["bound"][0], rtol=1e-12)


def test_elbo_pieces_against_a_token_by_token_computation():
    rng = np.random.RandomState(3)
    T, V, K, D = 3, 5, 2, 3
    X = rng.poisson(1.5, size=(D, V)).astype(float)
    X[0, 0] += 1.0
    hdp = SVIHierarchicalDirichletProcess(
        n_components=T,
        n_document_components=K,
        document_concentration=0.8,
        corpus_concentration=1.7,
        topic_word_prior=0.3,
        max_iter=1,
        random_state=0,
    ).fit(X)
    params = {
        "topics": (rng.gamma(2.0, 1.0, (T, V)) - 1.0,),
        "sticks": (rng.gamma(2.0, 1.0, (T - 1, 2)) - 1.0,),
    }
    local = hdp._local_step(sp.csr_matrix(X), params)
    # Other local factors than the fitted ones: the bound holds for any.
    local["varphi"] = rng.dirichlet(np.ones(T), (D, K))
    local["a"] = rng.gamma(2.0, 1.0, (D, K - 1))
    local["b"] = rng.gamma(2.0, 1.0, (D, K - 1))
    data = hdp._local_bound(sp.csr_matrix(X), local, params)
    glob = hdp._global_bound(params)
    want_data, want_glob = _reference_elbo(
        X,
        params["topics"][0] + 1.0,
        params["sticks"][0] + 1.0,
        local["varphi"],
        local["a"],
        local["b"],
        0.8,
        1.7,
        0.3,
    )
    assert data == pytest.approx(want_data, rel=1e-9)
    assert glob == pytest.approx(want_glob, rel=1e-8)


def test_check_model():
    X, _ = _corpus()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_model(SVIHierarchicalDirichletProcess(random_state=0), X)


def test_recovers_the_topics_of_a_generative_process():
    # Four topics on disjoint groups of words (LDA's generative process with
    # separated topics); the fit may use up to 12.
    rng = np.random.RandomState(0)
    n_topics, V = 4, 24
    topics = np.full((n_topics, V), 0.002)
    for k in range(n_topics):
        topics[k, 6 * k : 6 * k + 6] = rng.dirichlet(np.full(6, 5.0))
    topics /= topics.sum(axis=1, keepdims=True)
    theta = rng.dirichlet(np.full(n_topics, 0.3), 400)
    X = np.vstack([rng.multinomial(60, t @ topics) for t in theta]).astype(float)
    hdp = SVIHierarchicalDirichletProcess(
        n_components=12,
        n_document_components=5,
        learning_method="batch",
        max_iter=100,
        random_state=0,
    ).fit(X)
    assert hdp.converged_
    used = np.flatnonzero(hdp.topic_weights_ > 0.05)
    assert used.size == n_topics
    lam = hdp.components_[used]
    fitted = lam / lam.sum(axis=1, keepdims=True)
    cost = np.abs(fitted[:, None, :] - topics[None, :, :]).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    assert cost[rows, cols].max() < 0.2
    # The fitted proportions of the documents follow the true ones.
    prop = hdp.transform(X)[:, used][:, np.argsort(cols)]
    assert np.mean(np.abs(prop - theta).sum(axis=1)) < 0.2


def test_transform_score_and_document_completion():
    X, _ = _corpus(n_docs=200)
    hdp = SVIHierarchicalDirichletProcess(n_components=8, n_document_components=4, random_state=0)
    hdp.fit(X[:150])
    theta = hdp.transform(X[150:])
    assert theta.shape == (50, 8)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    perplexity = document_completion_perplexity(hdp, X[150:], random_state=0)
    assert np.isfinite(perplexity) and perplexity < 0.8 * X.shape[1]
    # score is the ELBO of X: the data part of its own local step plus the
    # globals' part, and weights count documents repeatedly.
    w = np.arange(50) % 3 + 0.0
    repeated = np.repeat(X[150:], w.astype(int), axis=0)
    assert hdp.score(X[150:], sample_weight=w) == pytest.approx(hdp.score(repeated), rel=1e-10)


def test_pickle_keeps_no_training_documents():
    X, _ = _corpus(n_docs=200)
    small = SVIHierarchicalDirichletProcess(n_components=6, max_iter=2, random_state=0).fit(X)
    large = SVIHierarchicalDirichletProcess(n_components=6, max_iter=2, random_state=0)
    large.fit(np.vstack([X] * 5))
    assert abs(len(pickle.dumps(large)) - len(pickle.dumps(small))) < 2000
    again = pickle.loads(pickle.dumps(small))
    np.testing.assert_array_equal(again.transform(X[:5]), small.transform(X[:5]))


def test_partial_fit_steps_follow_the_engines_rules():
    # lambda <- (1 - rho_t) lambda + rho_t (prior + N / |S| stats), for both
    # factors, with rho_t = (t + tau) ** -kappa and the statistics of the
    # minibatch at the globals before the step.
    X, _ = _corpus(n_docs=120)
    N, tau, kappa = 1000.0, 4.0, 0.6
    hdp = SVIHierarchicalDirichletProcess(
        n_components=5,
        n_document_components=3,
        total_samples=N,
        learning_offset=tau,
        learning_decay=kappa,
        corpus_concentration=2.0,
        topic_word_prior=0.05,
        batch_size=40,
        random_state=0,
    )
    hdp.partial_fit(X[:40])
    prior = {"topics": 0.05 - 1.0, "sticks": np.array([0.0, 1.0])}
    for t, chunk in ((2, X[40:80]), (3, X[80:120])):
        before = copy.deepcopy(hdp)
        stats = before.compute_statistics(chunk).factors
        hdp.partial_fit(chunk)
        rho = (t + tau) ** -kappa
        for name in ("topics", "sticks"):
            want = (1 - rho) * before.natural_params_[name][0] + rho * (
                prior[name] + N / 40 * stats[name][0]
            )
            np.testing.assert_allclose(hdp.natural_params_[name][0], want, rtol=1e-10)
    assert hdp.n_batch_iter_ == 3


@pytest.mark.slow
def test_a_dask_array_is_fitted_as_in_memory(client):
    # The local step has no random draws, so a batch fit on a cluster takes
    # the in-memory fit's steps, to rounding.
    da = pytest.importorskip("dask.array")
    X, _ = _corpus(n_docs=300)
    kw = dict(n_components=6, n_document_components=3, learning_method="batch", max_iter=3)
    ref = SVIHierarchicalDirichletProcess(random_state=0, **kw).fit(X)
    Xd = da.from_array(X, chunks=(100, 30)).map_blocks(sp.csr_matrix)
    est = SVIHierarchicalDirichletProcess(random_state=0, **kw).fit(Xd)
    for name in ("topics", "sticks"):
        np.testing.assert_allclose(
            est.natural_params_[name][0], ref.natural_params_[name][0], rtol=1e-8, atol=1e-10
        )
    np.testing.assert_allclose(est.lower_bounds_, ref.lower_bounds_, rtol=1e-7)


def test_auto_passes_make_ten_thousand_documents():
    # max_iter='auto' (the default): ceil(10,000 / n) passes, one to ten;
    # tol=0 runs them all.  An explicit max_iter is kept.
    for n, passes in ((2500, 4), (10_000, 1), (300, 10)):
        X, _ = _corpus(n_docs=n, n_words=8, length=4, seed=1)
        hdp = SVIHierarchicalDirichletProcess(
            n_components=3, n_document_components=2, tol=0, random_state=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hdp.fit(X)
        assert hdp.n_iter_ == passes, n
    hdp.set_params(max_iter=2).fit(X)
    assert hdp.n_iter_ == 2
    with pytest.raises(ValueError, match="max_iter"):
        SVIHierarchicalDirichletProcess(max_iter="some").fit(X)
