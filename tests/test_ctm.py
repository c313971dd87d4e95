"""SVICorrelatedTopicModel against independent references.

Quadrature on one document (the optimum of its bound), the closed forms
of mu and Sigma, data drawn from the model (topics and correlations), and
LDA on the same documents.
"""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment, minimize

from skvi import SVICorrelatedTopicModel, SVILatentDirichletAllocation
from skvi.metrics import (
    document_completion_perplexity,
    importance_sampled_nll,
    split_document_tokens,
)
from skvi.engine import monitor
from skvi.engine.executor import MIN_BLOCK_ROWS
from skvi.models.ctm import kernels


def _corpus(n_docs, n_words=60, words=80, seed=0):
    """Documents drawn from a 4-topic correlated topic model."""
    rng = np.random.RandomState(seed)
    beta = rng.dirichlet(np.full(n_words, 0.1), 4)
    sd = np.array([1.5, 1.5, 1.5])
    corr = np.array([[1.0, 0.8, -0.6], [0.8, 1.0, -0.6], [-0.6, -0.6, 1.0]])
    sigma = corr * np.outer(sd, sd)
    eta = rng.multivariate_normal(np.zeros(3), sigma, n_docs)
    theta = kernels.topic_proportions(eta)
    X = np.vstack([rng.multinomial(words, p) for p in theta @ beta])
    return X, beta, sigma


def _matched(ctm, beta):
    """Cosines of the matched topics, and Sigma in the true topics' order and reference."""
    tw = ctm.topic_word_
    cos = tw @ beta.T / np.outer(np.linalg.norm(tw, axis=1), np.linalg.norm(beta, axis=1))
    rows, cols = linear_sum_assignment(-cos)
    k = beta.shape[0]
    full = np.zeros((k, k))
    full[:-1, :-1] = ctm.prior_covariance_
    order = np.empty(k, dtype=int)
    order[cols] = rows
    # Logits relative to the true last topic: eta'_k = eta_k - eta_K.
    A = np.c_[np.eye(k - 1), -np.ones(k - 1)]
    return cos[rows, cols], A @ full[np.ix_(order, order)] @ A.T


def _one_document_problem(seed=0, diagonal=False):
    """K = 3, one document and a fixed model: its bound, and the optimum scipy finds.

    The bound E_q[log p(w | eta)] - KL(q || N(mu, Sigma)) by 30 x 30
    Gauss-Hermite nodes, maximised over the mean and the Cholesky factor
    (or the log standard deviations of a diagonal q).
    """
    rng = np.random.RandomState(seed)
    beta = rng.dirichlet(np.full(8, 0.5), 3)
    x = sp.csr_matrix(rng.poisson(2.0, (1, 8)).astype(float))
    mu, sigma = np.array([0.3, -0.2]), np.array([[1.0, 0.6], [0.6, 1.5]])
    sigma_inv, logdet = np.linalg.inv(sigma), np.linalg.slogdet(sigma)[1]

    def bound(mean, cov):
        def loglik(nodes):
            return kernels.log_likelihood(
                sp.csr_matrix(np.repeat(x.toarray(), len(nodes), 0)), nodes, beta
            )

        expected = kernels.gauss_hermite_expectation(loglik, mean, cov, n_points=30)
        return expected - kernels.kl_gaussian(mean[None], cov[None], mu, sigma_inv, logdet)[0]

    def unpack(p):
        if diagonal:
            return p[:2], np.diag(np.exp(2.0 * p[2:]))
        L = np.array([[np.exp(p[2]), 0.0], [p[3], np.exp(p[4])]])
        return p[:2], L @ L.T

    best = minimize(
        lambda p: -bound(*unpack(p)),
        np.zeros(4 if diagonal else 5),
        method="BFGS",
        options={"gtol": 1e-8},
    )
    return x, beta, mu, sigma, bound, unpack(best.x), -best.fun


def _fold_in_one_document(problem, **params):
    x, beta, mu, sigma = problem[:4]
    ctm = SVICorrelatedTopicModel(n_components=3, transform_max_iter=400, **params)
    ctm._mu, ctm._sigma = mu, sigma
    ctm._set_topics(beta)
    mean, scale = ctm._fold_in(x)
    if scale.ndim == 2:  # a diagonal q: standard deviations
        return mean[0], np.diag(scale[0] ** 2)
    return mean[0], scale[0] @ scale[0].T


@pytest.mark.parametrize("algorithm", ["mc-ssvi", "h-mc-ssvi"])
def test_one_document_reaches_the_optimum_of_its_quadrature_bound(algorithm):
    # The document's q fitted with the model held fixed, by 50 draws a step.
    problem = _one_document_problem()
    bound, (mean_ref, cov_ref), best = problem[4:]
    mean, cov = _fold_in_one_document(problem, algorithm=algorithm, n_mc_samples=50)
    np.testing.assert_allclose(cov, cov_ref, atol=0.02)
    # AdaGrad's mean (H-MC-SSVI) converges more slowly than the natural step.
    np.testing.assert_allclose(mean, mean_ref, atol=0.005 if algorithm == "mc-ssvi" else 0.05)
    assert bound(mean, cov) == pytest.approx(best, abs=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_diagonal_q_reaches_the_optimum_of_its_family(seed):
    # A diagonal q's steps use only the curvature's diagonal (its fixed
    # point 1 / v_k = (Sigma^-1)_kk - E[H_kk]): by quadrature they reach
    # scipy's optimum over diagonal Gaussians.
    problem = _one_document_problem(seed, diagonal=True)
    bound, (mean_ref, cov_ref), best = problem[4:]
    mean, cov = _fold_in_one_document(problem, covariance="diagonal", expectation="quadrature")
    np.testing.assert_allclose(np.diag(cov), np.diag(cov_ref), atol=1e-5)
    np.testing.assert_allclose(mean, mean_ref, atol=1e-5)
    assert bound(mean, cov) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("algorithm", ["mc-ssvi", "h-mc-ssvi", "s-dsvi"])
def test_quadrature_steps_reach_the_exact_optimum(algorithm):
    # expectation='quadrature' (10 x 10 Gauss-Hermite nodes): deterministic
    # steps reach the optimum to about 2e-6 with every algorithm (Monte
    # Carlo: 0.02, above).
    problem = _one_document_problem()
    bound, (mean_ref, cov_ref), best = problem[4:]
    mean, cov = _fold_in_one_document(problem, algorithm=algorithm, expectation="quadrature")
    np.testing.assert_allclose(cov, cov_ref, atol=1e-5)
    np.testing.assert_allclose(mean, mean_ref, atol=1e-5)
    assert bound(mean, cov) == pytest.approx(best, abs=1e-9)


def test_document_completion_against_quadrature():
    # K = 3: each document's q fitted to its observed half, E_q[theta] and
    # Cov_q[theta] by 40 x 40 Gauss-Hermite nodes, p(w | d) = sum_k
    # E_q[theta_k] beta_kw; transform's 500 draws agree within 4 standard
    # errors.
    X, _, _ = _corpus(120, seed=5)
    ctm = SVICorrelatedTopicModel(n_components=3, max_iter=10, random_state=0).fit(X[:100])
    observed, heldout = split_document_tokens(X[100:], random_state=0)
    mean, scale = ctm._fold_in(sp.csr_matrix(observed, dtype=float))

    def moments(eta):
        theta = kernels.topic_proportions(eta)
        return theta, theta[:, :, None] * theta[:, None, :]

    first, second = zip(
        *[
            kernels.gauss_hermite_expectation(moments, m, L @ L.T, n_points=40)
            for m, L in zip(mean, scale)
        ]
    )
    theta, cov = np.array(first), np.array(second) - np.einsum("nk,nl->nkl", first, first)
    heldout = sp.csr_matrix(heldout)
    rows = np.repeat(np.arange(heldout.shape[0]), np.diff(heldout.indptr))
    beta_w = ctm.topic_word_[:, heldout.indices].T
    reference = np.einsum("nk,nk->n", theta[rows], beta_w)
    error = np.sqrt(np.einsum("nk,nkl,nl->n", beta_w, cov[rows], beta_w) / 500)
    got = ctm.heldout_word_probabilities(observed, heldout)
    assert np.all(np.abs(got - reference) < 4 * error + 1e-12)
    perplexity = np.exp(-np.dot(heldout.data, np.log(reference)) / heldout.data.sum())
    assert document_completion_perplexity(ctm, X[100:], random_state=0) == pytest.approx(
        perplexity, rel=1e-3
    )


def test_mu_and_sigma_are_their_closed_forms_over_the_documents():
    X, _, _ = _corpus(200, seed=1)
    ctm = SVICorrelatedTopicModel(n_components=4, max_iter=5, tol=0, random_state=0).fit(X)
    means, covs = ctm.document_mean_, ctm.document_covariance_
    mu = means.mean(axis=0)
    sigma = np.mean(covs + (means - mu)[:, :, None] * (means - mu)[:, None, :], axis=0)
    np.testing.assert_allclose(ctm.prior_mean_, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ctm.prior_covariance_, sigma, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "covariance, bound",
    [
        ("full", "optimal"),
        ("diagonal", "optimal"),
        ("full", "simple"),
        ("diagonal", "mean_field"),
    ],
)
def test_recovers_the_topics_and_the_signs_of_their_correlations(covariance, bound):
    # Batch LDA (60 passes, random_state 0 to 2) matches these topics with
    # cosines of 0.96 to 0.999.  The correlations converge slowly: after 60
    # passes the two of -0.6 are still near 0, after 200 near -0.45.
    X, beta, sigma = _corpus(1000)
    ctm = SVICorrelatedTopicModel(
        n_components=4, covariance=covariance, bound=bound, max_iter=200, tol=0, random_state=0
    ).fit(X)
    cos, learned = _matched(ctm, beta)
    assert np.all(cos > 0.955), cos
    upper = np.triu_indices(3, 1)
    sd = np.sqrt(np.diag(learned))
    np.testing.assert_array_equal(
        np.sign((learned / np.outer(sd, sd))[upper]), np.sign(sigma[upper])
    )


@pytest.mark.slow
def test_the_bounds_end_in_the_papers_order():
    # "Monte Carlo structured SVI for two-level non-conjugate models", Fig. 7:
    # the optimal bound ends above the mean-field one, and that above the
    # simple one (diagonal q, 200 batch passes on 800 documents: -196,802,
    # -197,604 and -197,841).
    X = _corpus(1000)[0][:800]
    final = {
        bound: SVICorrelatedTopicModel(
            n_components=4, covariance="diagonal", bound=bound, max_iter=200, tol=0, random_state=0
        )
        .fit(X)
        .lower_bound_
        for bound in ("optimal", "mean_field", "simple")
    }
    assert final["optimal"] > final["mean_field"] > final["simple"]


def test_held_out_bound_beats_lda_on_correlated_topics():
    X, _, _ = _corpus(1000, seed=2)
    train, test = X[:800], X[800:]
    ctm = SVICorrelatedTopicModel(n_components=4, max_iter=60, tol=0, random_state=0).fit(train)
    lda = SVILatentDirichletAllocation(n_components=4, max_iter=60, random_state=0).fit(train)
    assert ctm.perplexity(test) < lda.perplexity(test)


def test_partial_fit_on_a_stream_matches_lda_on_the_same_stream():
    # One pass of minibatches, each document seen once (its q takes one
    # step), both models scaling by the documents seen (total_samples='auto',
    # LDA's default too now): held-out 23.0 against LDA's 22.7.  (With
    # scikit-learn's 1e6, LDA's topics were far too confident for this
    # 1,000-document stream: 23.7.)
    X, _, _ = _corpus(1200, seed=3)
    train, test = X[:1000], X[1000:]
    ctm = SVICorrelatedTopicModel(
        n_components=4, batch_size=100, total_samples="auto", random_state=0
    )
    lda = SVILatentDirichletAllocation(
        n_components=4, batch_size=100, total_samples="auto", random_state=0
    )
    for start in range(0, 1000, 250):
        ctm.partial_fit(train[start : start + 250])
        lda.partial_fit(train[start : start + 250])
    assert ctm.document_mean_.shape == (1000, 3)
    assert ctm.perplexity(test) < 1.02 * lda.perplexity(test)


def test_model_updated_once_per_pass_online():
    # update_model_every='pass': the documents step online while mu, Sigma
    # and the topics hold, and move once per pass.  On this corpus (30
    # passes of 100 documents) the held-out perplexity is 19.4 against 19.5
    # updating after every minibatch and 21.4 for online LDA; the topics
    # match with cosines 0.95 to 0.99.
    X, beta, _ = _corpus(1000, seed=2)
    train, test = X[:800], X[800:]
    ctm = SVICorrelatedTopicModel(
        n_components=4,
        learning_method="online",
        batch_size=100,
        max_iter=30,
        tol=0,
        update_model_every="pass",
        random_state=0,
    ).fit(train)
    lda = SVILatentDirichletAllocation(
        n_components=4, learning_method="online", batch_size=100, max_iter=30, random_state=0
    ).fit(train)
    assert ctm.perplexity(test) < lda.perplexity(test)
    cos, _ = _matched(ctm, beta)
    assert np.all(cos > 0.93), cos
    # The last model step came after every document's last step: mu and
    # Sigma are the closed forms over the documents' q.
    means, covs = ctm.document_mean_, ctm.document_covariance_
    mu = means.mean(axis=0)
    sigma = np.mean(covs + (means - mu)[:, :, None] * (means - mu)[:, None, :], axis=0)
    np.testing.assert_allclose(ctm.prior_mean_, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ctm.prior_covariance_, sigma, rtol=1e-6, atol=1e-7)


def test_pass_mode_steps_the_model_in_apply_statistics_and_not_after_a_stop():
    X, _, _ = _corpus(400, seed=8)
    ctm = SVICorrelatedTopicModel(
        n_components=3,
        learning_method="online",
        batch_size=100,
        max_iter=2,
        tol=0,
        update_model_every="pass",
        random_state=0,
    ).fit(X)
    # apply_statistics is one whole step: the model moves with it, as it
    # does updating after every minibatch.
    stats = ctm.compute_statistics(X[:100])
    other = copy.deepcopy(ctm).set_params(update_model_every="minibatch")
    before = ctm.components_.copy()
    ctm.apply_statistics(stats)
    other.apply_statistics(stats)
    assert np.abs(ctm.components_ - before).max() > 1e-3
    np.testing.assert_allclose(ctm.components_, other.components_, rtol=1e-12)
    # A partial_fit call that a callback stops after its first minibatch
    # takes no model step from that part of the call.
    before = ctm.components_.copy()
    with monitor(lambda record: record.event != "step"):
        ctm.partial_fit(X[:300])
    np.testing.assert_array_equal(ctm.components_, before)
    assert ctm._pass_counts is None


def test_update_model_every_leaves_batch_fits_alone():
    X, _, _ = _corpus(200, seed=5)
    fits = [
        SVICorrelatedTopicModel(
            n_components=3, max_iter=4, tol=0, update_model_every=m, random_state=0
        ).fit(X)
        for m in ("minibatch", "pass")
    ]
    np.testing.assert_array_equal(fits[0].components_, fits[1].components_)
    np.testing.assert_array_equal(fits[0].prior_covariance_, fits[1].prior_covariance_)


def test_partial_fit_updating_the_model_per_call_beats_lda():
    # Each partial_fit call is a pass: one model step per call of 250
    # documents, blended by the schedule at the call's number: held-out
    # perplexity 22.2 (23.1 after every minibatch; LDA 23.7).
    X, _, _ = _corpus(1200, seed=3)
    train, test = X[:1000], X[1000:]
    ctm = SVICorrelatedTopicModel(
        n_components=4, batch_size=100, update_model_every="pass", random_state=0
    )
    lda = SVILatentDirichletAllocation(n_components=4, batch_size=100, random_state=0)
    for start in range(0, 1000, 250):
        ctm.partial_fit(train[start : start + 250])
        lda.partial_fit(train[start : start + 250])
    assert ctm.perplexity(test) < lda.perplexity(test)


@pytest.mark.slow
@pytest.mark.parametrize(
    "bound, covariance, method",
    [
        ("optimal", "diagonal", "batch"),
        ("simple", "diagonal", "batch"),
        ("optimal", "full", "online"),
    ],
)
def test_n_jobs_splits_the_documents_but_not_the_fit(bound, covariance, method):
    # Each of two threads takes a block of at least MIN_BLOCK_ROWS
    # documents; the Monte Carlo draws are made before the split, so the
    # fit equals the one-thread fit up to the order of the blocks' sums.
    # Online, a minibatch's documents come in random order.
    batch = 2 * MIN_BLOCK_ROWS + 100
    X, _, _ = _corpus(batch * (2 if method == "online" else 1), words=30, seed=6)
    blocks, folded = [], []

    class Recorded(SVICorrelatedTopicModel):
        def _local_step(self, X, params, draws=None):
            blocks.append((self.n_jobs, X.shape[0]))
            return super()._local_step(X, params, draws)

        def _fold_in_rows(self, X):
            folded.append((self.n_jobs, X.shape[0]))
            return super()._fold_in_rows(X)

    fits = [
        Recorded(
            n_components=3,
            bound=bound,
            covariance=covariance,
            learning_method=method,
            batch_size=batch,
            max_iter=2,
            tol=0,
            n_jobs=n_jobs,
            random_state=0,
        ).fit(X)
        for n_jobs in (1, 2)
    ]
    # (Online, the ELBO of a pass takes the local steps of all documents.)
    assert batch in {n for j, n in blocks if j == 1}
    split = {n for j, n in blocks if j == 2}
    assert batch // 2 in split and max(split) <= X.shape[0] // 2
    np.testing.assert_allclose(fits[1].components_, fits[0].components_, rtol=1e-9)
    np.testing.assert_allclose(
        fits[1].document_mean_, fits[0].document_mean_, rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(fits[1].lower_bounds_, fits[0].lower_bounds_, rtol=1e-10)
    # New documents fold in by blocks on the threads, to the same q.
    ctm = fits[0].set_params(n_jobs=1)
    docs = X[:batch]
    one = ctm.transform(docs), ctm.score(docs)
    two = ctm.set_params(n_jobs=2).transform(docs), ctm.score(docs)
    np.testing.assert_allclose(two[0], one[0], rtol=1e-12)
    assert two[1] == pytest.approx(one[1], rel=1e-12)
    assert {n for j, n in folded if j == 2} == {batch // 2}


def test_fits_are_reproducible_and_transform_is_per_document():
    X, _, _ = _corpus(150, seed=4)
    a = SVICorrelatedTopicModel(n_components=3, max_iter=5, random_state=7).fit(X)
    b = SVICorrelatedTopicModel(n_components=3, max_iter=5, random_state=7).fit(X)
    np.testing.assert_array_equal(a.topic_word_, b.topic_word_)
    theta = a.transform(X[:20])
    # A document's proportions do not depend on the others it comes with,
    # nor on their order.
    np.testing.assert_allclose(a.transform(X[5:6]), theta[5:6], rtol=1e-10)
    np.testing.assert_allclose(a.transform(X[:20][::-1]), theta[::-1], rtol=1e-10)


def test_mean_field_needs_a_diagonal_q():
    with pytest.raises(ValueError, match="covariance='diagonal'"):
        SVICorrelatedTopicModel(n_components=2, bound="mean_field").fit(np.ones((4, 3)))


@pytest.mark.parametrize(
    "X, message",
    [
        (np.array([[1.0, -1.0], [2.0, 0.0]]), "Negative values"),
        (np.array([[1.0, np.nan], [2.0, 0.0]]), "NaN"),
    ],
)
def test_bad_input_raises(X, message):
    with pytest.raises(ValueError, match=message):
        SVICorrelatedTopicModel(n_components=2).fit(X)


@pytest.mark.parametrize("n_topics", [2, 3])
def test_log_evidence_against_quadrature(n_topics):
    # log p(w_d) = log of the integral of p(w_d | eta) N(eta; mu, Sigma) by
    # 60 (per dimension) Gauss-Hermite nodes; importance sampling from the
    # widened posterior with 20,000 draws agrees to 0.01.
    rng = np.random.RandomState(n_topics)
    X = rng.poisson(1.0, size=(60, 5))
    ctm = SVICorrelatedTopicModel(n_components=n_topics, max_iter=10, random_state=0).fit(X)
    docs = sp.csr_matrix(X[:4], dtype=float)
    reference = []
    for d in range(docs.shape[0]):

        def likelihood(nodes, d=d):
            rows = sp.csr_matrix(np.repeat(docs[d].toarray(), len(nodes), axis=0))
            return np.exp(kernels.log_likelihood(rows, nodes, ctm.topic_word_))

        reference.append(
            np.log(
                kernels.gauss_hermite_expectation(
                    likelihood, ctm.prior_mean_, ctm.prior_covariance_, n_points=60
                )
            )
        )
    got = ctm.log_evidence(X[:4], n_samples=20000, random_state=0)
    np.testing.assert_allclose(got, reference, atol=0.01)
    nll = importance_sampled_nll(ctm, X[:4], n_samples=20000, random_state=0)
    assert nll == pytest.approx(np.mean(-np.array(reference) / X[:4].sum(axis=1)), abs=0.01)


# ---------------------------------------------------------------- sample_weight
def _weighted_corpus(seed=5, n_docs=60):
    X, _, _ = _corpus(n_docs, n_words=20, words=30, seed=seed)
    w = np.random.RandomState(seed).randint(0, 4, n_docs)  # weights in {0, 1, 2, 3}
    return X, w, np.repeat(np.arange(n_docs), w)


# Deterministic expectations (quadrature, or the mean-field bound) take the
# place of LDA's E-step iterated to tight convergence: a document's step is
# then a function of its q, its words and the model, so that a weighted
# document and each of its copies step alike from the same start (the
# seeded start draws its documents by weight: the repeated documents'
# draws).  Monte Carlo steps draw per document, differently for the copies.
DETERMINISTIC = [
    dict(expectation="quadrature", n_mc_samples=6),
    dict(bound="mean_field", covariance="diagonal"),
    dict(expectation="quadrature", n_mc_samples=6, covariance="diagonal", algorithm="s-dsvi"),
]


@pytest.mark.parametrize("kw", DETERMINISTIC, ids=["quadrature", "mean_field", "s-dsvi"])
def test_integer_sample_weight_equals_repeated_documents_in_batch_fit(kw):
    X, w, index = _weighted_corpus()
    kw = dict(kw, n_components=3, init="random", max_iter=8, tol=0, random_state=0)
    weighted = SVICorrelatedTopicModel(**kw).fit(X, sample_weight=w)
    repeated = SVICorrelatedTopicModel(**kw).fit(X[index])
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    for name in ("components_", "prior_mean_", "prior_covariance_", "lower_bounds_"):
        np.testing.assert_allclose(
            getattr(weighted, name), getattr(repeated, name), rtol=1e-9, atol=1e-12, err_msg=name
        )
    # Each weighted document's q is that of its copies (weight 0: dropped).
    last_copy = np.cumsum(w[w > 0]) - 1
    np.testing.assert_allclose(
        weighted.document_mean_, repeated.document_mean_[last_copy], rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(
        weighted.document_mean_, repeated.document_mean_[last_copy - w[w > 0] + 1], atol=1e-12
    )


@pytest.mark.parametrize("total_samples", ["auto", 500.0])
@pytest.mark.parametrize("update_model_every", ["minibatch", "pass"])
def test_partial_fit_counts_weights_as_repeated_documents(total_samples, update_model_every):
    X, w, _ = _weighted_corpus(seed=6, n_docs=90)
    kw = dict(
        n_components=3,
        init="random",
        expectation="quadrature",
        n_mc_samples=5,
        batch_size=500,
        total_samples=total_samples,
        update_model_every=update_model_every,
        random_state=0,
    )
    weighted, repeated = SVICorrelatedTopicModel(**kw), SVICorrelatedTopicModel(**kw)
    for batch in np.array_split(np.arange(X.shape[0]), 3):
        weighted.partial_fit(X[batch], sample_weight=w[batch])
        repeated.partial_fit(X[np.repeat(batch, w[batch])])
    # N / |S| and the running count N are the weight sums, as they are the
    # document counts of the repeated stream.
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    for name in ("components_", "prior_covariance_", "lower_bounds_"):
        np.testing.assert_allclose(
            getattr(weighted, name), getattr(repeated, name), rtol=1e-9, err_msg=name
        )


def test_score_and_perplexity_count_weighted_documents_as_repeated():
    # The fold-in shares its draws between documents: the copies of a
    # document get its q exactly, Monte Carlo and all.
    X, w, index = _weighted_corpus(seed=7)
    ctm = SVICorrelatedTopicModel(n_components=3, max_iter=4, tol=0, random_state=0).fit(X)
    assert ctm.score(X, sample_weight=w) == pytest.approx(ctm.score(X[index]), rel=1e-12)
    assert ctm.perplexity(X, sample_weight=w) == pytest.approx(ctm.perplexity(X[index]), rel=1e-12)
    assert ctm.score(X, sample_weight=np.ones(X.shape[0])) == ctm.score(X)
    assert ctm.perplexity(X, sample_weight=np.ones(X.shape[0])) == ctm.perplexity(X)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_unit_and_zero_weights_are_the_unweighted_fit_of_the_kept_documents(method):
    # Weight-0 documents are dropped before anything is drawn, and weights
    # that are all 1 take the unweighted code path: bit for bit the same fit.
    X, w, _ = _weighted_corpus(seed=8)
    kw = dict(n_components=3, max_iter=3, tol=0, batch_size=16, random_state=0)
    keep = np.minimum(w, 1)
    weighted = getattr(SVICorrelatedTopicModel(**kw), method)(X, sample_weight=keep)
    subset = getattr(SVICorrelatedTopicModel(**kw), method)(X[keep > 0])
    np.testing.assert_array_equal(weighted.components_, subset.components_)
    np.testing.assert_array_equal(weighted.document_mean_, subset.document_mean_)
    assert weighted.n_samples_seen_ == subset.n_samples_seen_ == keep.sum()
    ones = getattr(SVICorrelatedTopicModel(**kw), method)(X, sample_weight=np.ones(X.shape[0]))
    plain = getattr(SVICorrelatedTopicModel(**kw), method)(X)
    np.testing.assert_array_equal(ones.components_, plain.components_)
    np.testing.assert_array_equal(ones.prior_covariance_, plain.prior_covariance_)


def test_weighted_mu_and_sigma_are_the_weighted_closed_forms():
    X, w, _ = _weighted_corpus(seed=9)
    ctm = SVICorrelatedTopicModel(n_components=3, max_iter=4, tol=0, random_state=0)
    ctm.fit(X, sample_weight=w)
    weight = w[w > 0].astype(float)
    means, covs = ctm.document_mean_, ctm.document_covariance_
    mu = weight @ means / weight.sum()
    spread = covs + (means - mu)[:, :, None] * (means - mu)[:, None, :]
    sigma = np.tensordot(weight, spread, axes=1) / weight.sum()
    np.testing.assert_allclose(ctm.prior_mean_, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ctm.prior_covariance_, sigma, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ top_words
def test_top_words_are_the_topics_largest_word_counts():
    X, _, _ = _corpus(80, n_words=30, seed=10)
    ctm = SVICorrelatedTopicModel(n_components=3, max_iter=3, tol=0, random_state=0).fit(X)
    top = ctm.top_words(5)
    for k in range(3):
        order = np.argsort(-ctm.components_[k], kind="stable")[:5]
        np.testing.assert_array_equal(top[k], order)
        # The order of the topic's word probabilities too.
        np.testing.assert_array_equal(np.argsort(-ctm.topic_word_[k], kind="stable")[:5], order)
    names = np.array([f"word{i}" for i in range(30)])
    np.testing.assert_array_equal(ctm.top_words(5, feature_names=names), names[top])


# ------------------------------------------------------------ the pickle
def test_the_pickle_does_not_grow_with_the_training_documents():
    import pickle

    sizes = []
    for n_docs in (1000, 4000):
        X, _, _ = _corpus(n_docs, n_words=40, words=40, seed=11)
        ctm = SVICorrelatedTopicModel(n_components=4, max_iter=2, tol=0, random_state=0).fit(X)
        sizes.append(len(pickle.dumps(ctm, protocol=pickle.HIGHEST_PROTOCOL)))
    assert sizes[1] <= sizes[0] * 1.05


def test_a_loaded_pickle_transforms_as_the_fit_and_refuses_to_continue_a_stream():
    import copy
    import pickle

    X, _, _ = _corpus(600, n_words=40, words=40, seed=12)
    X_new, _, _ = _corpus(50, n_words=40, words=40, seed=13)
    ctm = SVICorrelatedTopicModel(n_components=4, max_iter=2, tol=0, random_state=0).fit(X)
    loaded = pickle.loads(pickle.dumps(ctm))
    assert not hasattr(loaded, "document_mean_")
    # The same model: topics, mu, Sigma, and so the same posteriors of new documents.
    np.testing.assert_array_equal(loaded.components_, ctm.components_)
    np.testing.assert_array_equal(loaded.prior_covariance_, ctm.prior_covariance_)
    np.testing.assert_array_equal(loaded.transform(X_new), ctm.transform(X_new))
    assert loaded.score(X_new) == ctm.score(X_new)
    with pytest.raises(NotImplementedError, match="loaded from a pickle"):
        loaded.partial_fit(X_new)
    # A copy in memory keeps the documents: it continues the stream as the original.
    copied = copy.deepcopy(ctm)
    copied.partial_fit(X_new)
    ctm.partial_fit(X_new)
    np.testing.assert_array_equal(copied.components_, ctm.components_)
    np.testing.assert_array_equal(copied.prior_mean_, ctm.prior_mean_)


def test_a_document_whose_precision_overflows_is_invalid_not_an_error():
    # Finite natural parameters whose symmetrised precision -(eta2 + eta2^T)
    # overflows: the document is invalid (its step is halved), as one whose
    # eigenvalues are not positive.
    model = SVICorrelatedTopicModel(n_components=3)
    eta2 = -np.stack([np.eye(2), np.array([[1e308, 1e308], [1e308, 1.0]]), -np.eye(2)])
    valid = model._valid_documents(np.zeros((3, 2)), eta2)
    assert valid.tolist() == [True, False, False]
