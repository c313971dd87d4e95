"""Every documentation page's code runs, warning-free, and gives the numbers the page claims.

Each page of ``docs/`` (and the README, the overview page) is run as a user
would paste it: its ```` ```python ```` blocks in order, in one fresh
namespace.  Warnings are errors, except deprecations raised by third-party
packages, so that the documented examples stay free of warnings a user
could not act on.  After a page has run, its check asserts what the page
claims against a reference computed here independently (scikit-learn's
estimators, closed forms, a unigram model, the generating parameters).
"""

import importlib.util
import pathlib
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
HAS_DASK = all(importlib.util.find_spec(m) is not None for m in ("dask", "distributed"))
# Pages of measurements, and the changelog: no code to run.
BENCHMARK_PAGES = {
    p.stem for p in DOCS.glob("*.md") if p.stem == "benchmarks" or p.stem.endswith("_benchmark")
}
NO_CODE_PAGES = BENCHMARK_PAGES | {"changelog"}
GUIDE_PAGES = sorted(p.stem for p in DOCS.glob("*.md") if p.stem not in NO_CODE_PAGES)
# The README runs without dask too: its dask block is left out then.
OPTIONAL_DASK_PAGES = {"overview"}


def page_text(name):
    """A page's Markdown, with ``{include}`` directives replaced by the file they include."""
    path = DOCS / f"{name}.md"
    text = path.read_text()

    def include(match):
        return (path.parent / match.group(1)).read_text()

    return re.sub(r"```\{include\} (\S+)\n.*?```", include, text, flags=re.S)


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def needs_dask(block):
    return re.search(r"^\s*(import|from) (dask|distributed)\b", block, flags=re.M) is not None


def run_page(name):
    """Run a page's python blocks in one namespace, as pasted into a fresh interpreter."""
    from skvi.datasets import DataNotFoundError

    blocks = python_blocks(page_text(name))
    assert blocks, f"docs/{name}.md has no python code"
    if not HAS_DASK and any(needs_dask(b) for b in blocks):
        if name in OPTIONAL_DASK_PAGES:
            blocks = [b for b in blocks if not needs_dask(b)]
        else:
            pytest.importorskip("dask")
            pytest.importorskip("distributed")
    # "__main__", as in an interpreter: joblib's worker processes then
    # receive the page's functions by value.
    namespace = {"__name__": "__main__"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Python's default: a ResourceWarning reports a library's unclosed
        # socket or file to its developers, not to the page's reader.
        warnings.simplefilter("ignore", ResourceWarning)
        for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", category=category)
            warnings.filterwarnings("error", category=category, module=r"(skvi|__main__)(\.|$)")
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"docs/{name}.md, python block {i + 1}", "exec"), namespace)
            except DataNotFoundError as exc:
                pytest.skip(f"docs/{name}.md needs data that is absent: {exc}")
    return namespace


# ------------------------------------------------------------ references
def topics_split():
    """The topics sample's counts and the even/odd split the pages use."""
    from sklearn.feature_extraction.text import CountVectorizer

    from skvi.datasets import load_topics_sample

    corpus = load_topics_sample()
    counts = CountVectorizer(stop_words="english", min_df=2).fit_transform(corpus.data)
    return corpus, counts, counts[::2], counts[1::2]


def unigram_perplexity(train, test):
    """Document-completion perplexity of the unigram model (one topic), computed directly."""
    from skvi.metrics import split_document_tokens

    word_p = np.asarray(train.sum(axis=0)).ravel() + 1.0 / 6
    word_p /= word_p.sum()
    keep = np.asarray(test.sum(axis=1)).ravel() >= 2
    _, heldout = split_document_tokens(test, random_state=0)
    heldout = heldout[keep].tocoo()
    return np.exp(-np.dot(heldout.data, np.log(word_p[heldout.col])) / heldout.data.sum())


# ------------------------------------------------------------ the checks
def check_overview(ns):
    # The README's tour: data are N(5, 2^2), so every fit recovers the mean.
    for name in ("vb", "svi", "stream", "est"):
        np.testing.assert_allclose(ns[name].mean_, 5.0, atol=0.05)
    if HAS_DASK:
        # The fit on a dask cluster takes the in-memory fit's steps.
        dist, vb = ns["dist"], ns["vb"]
        np.testing.assert_allclose(dist.mean_, vb.mean_, rtol=1e-12)
        np.testing.assert_allclose(dist.lower_bounds_, vb.lower_bounds_, rtol=1e-10)
    # The topic model predicts held-out words better than the unigram model.
    assert ns["perplexity"] < 0.9 * unigram_perplexity(ns["train"], ns["test"])
    assert ns["npmi"].shape == (6,) and np.all(np.abs(ns["npmi"]) <= 1)


def check_index(ns):
    X = np.random.RandomState(0).normal(5.0, 2.0, size=(100_000, 3))
    # A vague prior: the posterior mean is the sample mean.
    np.testing.assert_allclose(ns["vb"].mean_, X.mean(axis=0), atol=1e-4)
    for name in ("svi", "stream"):
        np.testing.assert_allclose(ns[name].mean_, X.mean(axis=0), atol=0.03)


def check_install(ns):
    # The kernels the page describes, as the installation reports them.
    kernels = ns["skvi"].kernels()
    assert set(kernels) == {"lda", "gaussian", "gaussian_batch", "picked"}
    assert kernels["lda"] in (None, "avx512", "avx2", "baseline")
    for name in ("gaussian", "gaussian_batch", "picked"):
        assert isinstance(kernels[name], bool)


def check_lda(ns):
    from sklearn.decomposition import LatentDirichletAllocation
    from sklearn.metrics import adjusted_rand_score

    corpus, counts, train, test = topics_split()
    sk = LatentDirichletAllocation(n_components=6, random_state=0).partial_fit(train)
    # Equal up to where the E-steps stop (mean_change_tol=1e-3), as the page prints.
    np.testing.assert_allclose(ns["ours"].components_, sk.components_, rtol=1e-5)
    unigram = unigram_perplexity(train, test)
    assert ns["perplexity"] < 0.9 * unigram
    np.testing.assert_allclose(ns["theta"].sum(axis=1), 1.0, rtol=1e-10)
    # CVB0's topics are the corpus's six themes, as the page says.
    themes = corpus.target[1::2]
    assert adjusted_rand_score(themes, ns["cvb0"].transform(test).argmax(axis=1)) > 0.9
    assert ns["stream"].n_samples_seen_ == train.shape[0]


def check_ctm(ns):
    from skvi.metrics import document_completion_perplexity

    ctm = ns["ctm"]
    means, covs = ctm.document_mean_, ctm.document_covariance_
    mu = means.mean(axis=0)
    sigma = np.mean(covs + (means - mu)[:, :, None] * (means - mu)[:, None, :], axis=0)
    np.testing.assert_allclose(ctm.prior_mean_, mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ctm.prior_covariance_, sigma, rtol=1e-6, atol=1e-7)
    sd = np.sqrt(np.diag(ctm.prior_covariance_))
    np.testing.assert_allclose(
        ctm.topic_correlation_, ctm.prior_covariance_ / np.outer(sd, sd), rtol=1e-10
    )
    np.testing.assert_allclose(ns["theta"].sum(axis=1), 1.0, rtol=1e-10)
    _, _, train, test = topics_split()
    perplexity = document_completion_perplexity(ctm, test, random_state=0)
    assert perplexity < unigram_perplexity(train, test)


def check_glm(ns):
    from sklearn.linear_model import BayesianRidge, LogisticRegression, PoissonRegressor
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # Breast cancer: the posterior predictive scores like scikit-learn's MAP.
    sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(ns["X_train"], ns["y_train"])
    sk_loss = log_loss(ns["y_test"], sk.predict_proba(ns["X_test"]))
    assert log_loss(ns["y_test"], ns["proba"]) < 1.25 * sk_loss
    X_test, y_test = ns["X_test"], ns["y_test"]
    assert ns["clf"].score(X_test, y_test) >= sk.score(X_test, y_test) - 0.02
    assert ns["multi"].score(ns["Xi_test"], ns["yi_test"]) >= 0.9
    # Digits under Böhning's bound: converged, and within 10% of the held-out
    # NLL of scikit-learn's cross-validated model.
    from sklearn.linear_model import LogisticRegressionCV

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = LogisticRegressionCV(max_iter=3000).fit(ns["Xg_train"], ns["yg_train"])
    cv_loss = log_loss(ns["yg_test"], cv.predict_proba(ns["Xg_test"]))
    assert ns["bound"].converged_
    assert log_loss(ns["yg_test"], ns["bound"].predict_proba(ns["Xg_test"])) < 1.1 * cv_loss
    # Poisson counts: a weak prior, so the posterior mean is the MLE.
    mle = PoissonRegressor(alpha=0.0).fit(ns["X_counts"][:1500], ns["counts"][:1500])
    np.testing.assert_allclose(ns["pois"].coef_.ravel(), mle.coef_, atol=0.01)
    # The random effect's variance is 0.7^2; the Poisson GLM is overconfident.
    assert abs(ns["over"].noise_variance_ - 0.49) < 0.15
    over_sd = np.sqrt(np.diag(ns["over"].posterior_covariance_))[:4]
    plain_sd = np.sqrt(np.diag(ns["plain"].posterior_covariance_))[:4]
    assert np.all(over_sd > 1.2 * plain_sd)
    # Linear regression: BayesianRidge's weights.
    ridge = BayesianRidge().fit(ns["Xd_train"], ns["yd_train"])
    assert np.abs(ns["lin"].coef_ - ridge.coef_).max() < 0.01 * np.abs(ridge.coef_).max()
    # 20,000 rows: the posterior mean is near scikit-learn's MAP.
    mode = LogisticRegression().fit(ns["X_big"], ns["y_big"]).coef_
    assert np.abs(ns["online"].coef_ - mode).max() < 0.05
    assert np.abs(ns["stream"].coef_ - mode).max() < 0.25


def check_hdp(ns):
    # The held-out words of the topics sample are predicted better than by
    # the unigram model, and (the page's claim) than by LDA with six topics.
    _, counts, train, test = topics_split()
    assert ns["hdp_perplexity"] < 0.8 * unigram_perplexity(train, test)
    assert ns["hdp_perplexity"] < ns["lda_perplexity"]
    np.testing.assert_allclose(ns["theta"].sum(axis=1), 1.0, rtol=1e-12)
    # The stream: one step per chunk of 30 documents, every document counted.
    assert ns["stream"].n_batch_iter_ == 3 and ns["stream"].n_samples_seen_ == 90
    # The expected corpus shares of the topics sum to one.
    assert ns["hdp"].topic_weights_.sum() == pytest.approx(1.0, rel=1e-12)


def check_matrix_factorization(ns):
    from sklearn.metrics import log_loss

    from skvi.metrics import gaussian_interval_coverage, rmse

    ratings, test, train = ns["ratings"], ns["test"], ns["train"]
    # The generating noise is 0.5; predicting the training mean is the baseline.
    baseline = rmse(ratings[test], np.full(len(test), ratings[train].mean()))
    assert rmse(ratings[test], ns["mean"]) < 0.5 * baseline
    assert 0.8 < gaussian_interval_coverage(ratings[test], ns["mean"], ns["std"]) < 0.97
    assert abs(ns["mf"].noise_precision_ ** -0.5 - 0.5) < 0.05
    # Rank 3: three directions of the five factors keep a small prior
    # precision, two are switched off.
    values = np.linalg.eigvalsh(ns["mf"].user_precision_[:-1, :-1])
    assert np.sum(values < 2.0) == 3 and np.all(values[3:] > 10 * values[2])
    assert ns["warm_rmse"] < 0.6 * ns["cold_rmse"]
    liked = ns["liked"]
    base_rate = np.full(len(test), liked[train].mean())
    assert log_loss(liked[test], ns["p_liked"]) < 0.8 * log_loss(liked[test], base_rate)
    # The printed scores are what the page says they are: R^2, the model's
    # own and the predictive standard deviations, accuracy and the mean log
    # probability, each near the value the page shows.
    from sklearn.metrics import accuracy_score, r2_score

    mf, clf, pairs = ns["mf"], ns["clf"], ns["pairs"]
    r2 = mf.score(pairs[test], ratings[test])
    assert r2 == r2_score(ratings[test], ns["mean"]) and abs(r2 - 0.87) < 0.01
    noise = mf.noise_rate_ / (mf.noise_shape_ - 1)
    np.testing.assert_allclose(ns["std"] ** 2, ns["std0"] ** 2 + noise, rtol=1e-10)
    assert abs(np.median(ns["std0"]) - 0.35) < 0.01 and abs(np.median(ns["std"]) - 0.61) < 0.01
    raw = ns["raw"]
    assert ns["five"].rating_range_ == (ns["stars"].min(), ns["stars"].max()) == (1.0, 5.0)
    assert raw.min() < 1 and raw.max() > 5
    np.testing.assert_array_equal(ns["clipped"], np.clip(raw, 1.0, 5.0))
    accuracy = clf.score(pairs[test], liked[test])
    assert accuracy == accuracy_score(liked[test], (ns["p_liked"] > 0.5).astype(int))
    assert abs(accuracy - 0.78) < 0.01
    p = np.where(liked[test] == 1, ns["p_liked"], 1 - ns["p_liked"])
    lpd = clf.log_predictive_density(pairs[test], liked[test])
    assert lpd == pytest.approx(np.mean(np.log(p)), rel=1e-10) and abs(lpd + 0.45) < 0.01
    # recommend: user 0's five best unrated items, by predict.
    assert ns["items"].shape == (3, 5)
    np.testing.assert_array_equal(ns["items"][0], ns["by_hand"][:5])


def check_mixture(ns):
    from sklearn.mixture import BayesianGaussianMixture

    X, X_test, gmm = ns["X"], ns["X_test"], ns["gmm"]
    sk = BayesianGaussianMixture(n_components=4, random_state=0, tol=1e-6 * len(X)).fit(X)
    np.testing.assert_allclose(gmm.weights_, sk.weights_, atol=1e-6)
    np.testing.assert_allclose(gmm.means_, sk.means_, atol=1e-5)
    batch = gmm.score(X_test)
    for name in ("online", "stream"):
        assert abs(ns[name].score(X_test) - batch) < 0.01
    np.testing.assert_allclose(ns["held"].elbo(X), gmm.elbo(X), rtol=1e-6)


def check_sparse_gp(ns):
    from skvi.metrics import gaussian_interval_coverage, rmse

    # The data's noise has standard deviation 0.3: no model does much better.
    y_test, X_test = ns["y_test"], ns["X_test"]
    assert rmse(y_test, ns["f_mean"]) < 0.36
    assert abs(ns["gp"].noise_variance_ - 0.09) < 0.02
    assert 0.8 < gaussian_interval_coverage(y_test, ns["f_mean"], ns["y_std"]) < 0.97
    for name in ("online", "stream"):
        assert rmse(y_test, ns[name].predict(X_test)) < 0.36
    assert ns["clf"].score(ns["X_moons"][300:], ns["y_moons"][300:]) > 0.9


def check_schedules(ns):
    results = ns["grid"].cv_results_
    scores, sds = results["mean_test_score"], results["std_test_score"]
    assert np.all(np.isfinite(scores))
    # The candidates score differently, beyond the spread over the folds.
    assert scores.max() - scores.min() > 2 * sds.max()
    best = ns["grid"].best_params_["learning_rate"].get_params()
    assert (best["offset"], best["decay"]) == (10.0, 0.7)
    _, counts, _, _ = topics_split()
    # The best schedule's held-out perplexity beats a unigram model's on the same folds.
    folds = ns["grid"].cv.split(counts)
    unigram = np.mean([unigram_perplexity(counts[tr], counts[te]) for tr, te in folds])
    assert -scores.max() < 0.8 * unigram


def check_step_safety(ns):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    assert ns["raw"].n_rejected_steps_ > 0
    messages = [str(w.message) for w in ns["caught"] if issubclass(w.category, ConvergenceWarning)]
    assert any("rejected by step safety" in m for m in messages)
    scaled = ns["scaled"]
    assert scaled[-1].n_rejected_steps_ == 0 and scaled[-1].converged_
    X, y = ns["X"], ns["y"]
    sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    assert scaled.score(X, y) >= sk.score(X, y) - 0.01


def check_streaming(ns):
    X = ns["X"]
    np.testing.assert_allclose(ns["batch"].mean_, X.mean(axis=0), atol=1e-4)
    np.testing.assert_allclose(ns["est"].mean_, X.mean(axis=0), atol=0.02)
    assert ns["est"].n_samples_seen_ == len(X)
    # Two passes: a posterior for N rows with total_samples=N, for 2N with 'auto'.
    ratio_known = ns["known"].mean_precision_ / ns["batch"].mean_precision_
    ratio_counted = ns["counted"].mean_precision_ / ns["batch"].mean_precision_
    np.testing.assert_allclose(ratio_known, 1.0, atol=0.01)
    np.testing.assert_allclose(ratio_counted, 2.0, atol=0.02)


def check_metrics(ns):
    from skvi.metrics import document_completion_perplexity, gaussian_interval_coverage, rmse

    _, _, train, test = topics_split()
    unigram = unigram_perplexity(train, test)
    assert document_completion_perplexity(ns["lda"], test, random_state=0) < 0.9 * unigram
    # c_v: one score per topic, in [-1, 1], of the words top_words prints.
    lda, c_v = ns["lda"], ns["c_v"]
    assert c_v.shape == (6,) and np.all(np.abs(c_v) <= 1)
    top = np.argsort(-lda.components_, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(lda.top_words(10), top)
    y_test, mean, std = ns["y_test"], ns["mean"], ns["std"]
    assert rmse(y_test, mean) < np.std(y_test)
    assert 0.8 < gaussian_interval_coverage(y_test, mean, std) < 0.97


def check_watching(ns):
    from scipy.optimize import linear_sum_assignment

    # The page's data: four clusters around centres drawn first from its generator.
    centres = np.random.RandomState(0).normal(0.0, 6.0, size=(4, 2))
    est = ns["est"]  # the fit the callback stopped after two passes
    assert est.n_iter_ == 2 and len(ns["seen"]) == 2 and not est.converged_
    cost = np.linalg.norm(centres[:, None, :] - est.means_[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(cost)
    assert cost[rows, cols].max() < 0.1


def check_scaling(ns):
    X, one = ns["X"], ns["one"]
    np.testing.assert_allclose(one.mean_, X.mean(axis=0), atol=1e-4)
    np.testing.assert_allclose(ns["two"].mean_, one.mean_, rtol=1e-12)
    np.testing.assert_allclose(ns["on_cluster"].mean_, one.mean_, rtol=1e-12)
    np.testing.assert_allclose(ns["theta"].compute().sum(axis=1), 1.0, rtol=1e-10)
    # Ten steps of the map-reduce split from a start on 1,000 rows: within
    # a few posterior standard deviations (2 / sqrt(200,000)) of the batch fit.
    assert np.abs(ns["est"].mean_ - one.mean_).max() < 5 * 2.0 / np.sqrt(len(X))


def check_engine(ns):
    est, stacked = ns["est"], ns["stacked"]
    np.testing.assert_allclose(est.mean_, stacked.mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.precision_rate_, stacked.precision_rate_, rtol=1e-10)
    np.testing.assert_allclose(est.precision_shape_, stacked.precision_shape_, rtol=1e-10)


def check_networks(ns):
    # The non-conjugate links: the logistic network is the GLM's posterior;
    # the random-effect network finds the simulation's weights and variance;
    # VB's softmax network is the multinomial GLM's posterior.
    from skvi import SVILogisticRegression

    np.testing.assert_allclose(
        ns["clf"].nodes_["w"].get_moments()[0],
        np.r_[ns["glm"].coef_[0], ns["glm"].intercept_],
        rtol=1e-6,
    )
    counts = ns["overdispersed"]
    np.testing.assert_allclose(counts.nodes_["w"].get_moments()[0], [0.4, -0.3, 0.5], atol=0.05)
    assert 1 / counts.nodes_["tau"].get_moments()[0] == pytest.approx(0.25, abs=0.05)
    multinomial = SVILogisticRegression(
        prior_variance=1.0, learning_method="batch", expectation="quadrature", tol=1e-12
    ).fit(ns["X_three"][:, :2], ns["y_three"])
    np.testing.assert_allclose(
        ns["W_softmax"].get_moments()[0].ravel(), multinomial.posterior_mean_, rtol=1e-5, atol=1e-6
    )
    # BayesPy's regression model 2: the Normal-Gamma posterior, in closed form.
    X, y = ns["X_line"], ns["y_line"]
    Ln = 1e-6 * np.eye(2) + X.T @ X
    m = np.linalg.solve(Ln, X.T @ y)
    a, b = 1e-3 + len(y) / 2, 1e-3 + 0.5 * (y @ y - m @ Ln @ m)
    np.testing.assert_allclose(ns["tau_x"] / ns["tau_line"], m, rtol=1e-9)
    assert float(ns["tau_line"]) == pytest.approx(a / b, rel=1e-9)
    # Matrix factorisation with Take and Add: the noise precision 1 / 0.3^2,
    # and each prediction the mean, the pair's biases and the product of its
    # fitted factors.
    net, pairs = ns["mf_net"], ns["mf_pairs"]
    assert net.converged_
    assert net.nodes_["tau"].get_moments()[0] == pytest.approx(1 / 0.3**2, rel=0.1)
    E = {n: net.nodes_[n].get_moments()[0] for n in ("U", "V", "b_u", "c_i", "b")}
    u, i = pairs[:5, 0], pairs[:5, 1]
    expected = E["b"] + E["b_u"][u] + E["c_i"][i] + np.sum(E["U"][u] * E["V"][i], axis=1)
    np.testing.assert_allclose(net.predict(pairs[:5].astype(float)), expected, rtol=1e-8)
    # The start the builder set is honoured: the fit is VMP's from it.
    from skvi.networks import VB as _VB
    from skvi.networks import Constant

    Y = ns["factorisation"](pairs.astype(float))
    Y.observe(ns["mf_ratings"])
    nodes, seen, todo = {}, set(), [Y]
    while todo:
        node = todo.pop()
        if id(node) not in seen and not isinstance(node, Constant):
            seen.add(id(node))
            nodes.setdefault(node.name, node)
            todo.extend(node.parents)
    Q_mf = _VB(Y, *[nodes[n] for n in net.global_nodes_], accelerate=False)
    Q_mf.update(repeat=net.n_iter_ + 1, tol=-np.inf)
    assert net.lower_bound_ == pytest.approx(Q_mf.compute_lowerbound(), rel=1e-8)
    # LDA through gates: each word's topic counts once in its document's and
    # its topic's posterior concentrations (the priors' are ones).
    n_words = ns["n_words"]
    p_topic, p_word = ns["Q_lda"]["p_topic"], ns["Q_lda"]["p_word"]
    assert p_topic.phi[0].sum() == pytest.approx(p_topic.phi[0].size + n_words, rel=1e-10)
    assert p_word.phi[0].sum() == pytest.approx(p_word.phi[0].size + n_words, rel=1e-10)
    np.testing.assert_allclose(p_topic.phi[0].sum(axis=1) - 5, np.bincount(ns["word_documents"]))
    # The quickstart's posterior mean is the sample mean (vague prior).
    assert ns["vb"].mean_[0] == pytest.approx(ns["data"].mean(), abs=1e-4)
    # The estimator finds the four generating clusters; VB from the page's seed did not.
    means = ns["batch"].nodes_["mu"].get_moments()[0]
    means = means[np.lexsort((means[:, 1].round(), means[:, 0].round()))]
    np.testing.assert_allclose(means, [[0, 0], [0, 6], [6, 0], [6, 6]], atol=0.15)
    assert ns["batch"].lower_bound_ > ns["mixture_bound"]
    batch = ns["batch"].score(ns["X"])
    assert ns["online"].score(ns["X"]) == pytest.approx(batch, rel=0.01)
    assert ns["stream"].score(ns["X"]) == pytest.approx(batch, rel=0.02)
    # The estimator's batch fit of the hierarchical model is VB's fixed point.
    assert ns["hier"].lower_bound_ == pytest.approx(ns["Q"].compute_lowerbound(), rel=1e-8)
    np.testing.assert_allclose(ns["theta"].get_moments()[0], ns["scores"].mean(axis=0), atol=0.1)
    # PCA: two of three columns kept, the noise precision the generating 1 / 0.5^2.
    alpha = ns["factors"].nodes_["alpha"].get_moments()[0]
    assert np.sum(alpha < 100) == 2 and alpha.max() > 1000
    assert ns["factors"].nodes_["tau"].get_moments()[0] == pytest.approx(4.0, rel=0.1)
    assert ns["gappy"].nodes_["tau"].get_moments()[0] == pytest.approx(4.0, rel=0.1)
    # Rotated passes: fewer than plain ones, to a bound no lower.
    assert ns["factors"].n_iter_ < ns["plain_pca"].n_iter_
    assert ns["factors"].lower_bound_ >= ns["plain_pca"].lower_bound_
    # BayesPy's PCA example: its bound with rotations (650.07), in fewer sweeps.
    assert ns["fast"].compute_lowerbound() == pytest.approx(650.07, rel=1e-3)
    assert ns["fast"].iter <= 26 and ns["plain"].compute_lowerbound() < 600
    # The two-output regression: each output's exact posterior mean (noise known).
    inputs, outputs = ns["inputs"], ns["outputs"]
    t = 1 / 0.3**2
    S = np.linalg.inv(t * inputs.T @ inputs + np.eye(3))
    np.testing.assert_allclose(ns["W"].get_moments()[0], t * (S @ inputs.T @ outputs).T, rtol=1e-10)
    # A builder of inputs: BayesPy's regression, q(w) VB's on the same network.
    from skvi.networks import VB

    Y = ns["regression"](ns["inputs_10"])
    Y.observe(ns["line"])
    w, tau = Y.parents[0].parents[1], Y.parents[1]
    Qr = VB(Y, w, tau)
    Qr.update(repeat=1000, tol=1e-13)
    Ew = ns["reg"].nodes_["w"].get_moments()[0]
    np.testing.assert_allclose(Ew, w.get_moments()[0], rtol=1e-6)
    np.testing.assert_allclose(ns["reg"].predict(ns["new_rows"]), ns["new_rows"] @ Ew)
    assert ns["reg"].elbo(ns["inputs_10"], ns["line"]) == pytest.approx(
        Qr.compute_lowerbound(), rel=1e-8
    )
    # Each group's answer rates: the Dirichlet posterior means.
    group, answer = ns["group"], ns["answer"]
    counts = np.array([np.bincount(answer[group == k], minlength=3) for k in range(2)])
    rates = (1.0 + counts) / (3.0 + counts.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(ns["survey"].predict_proba([[0], [1]]), rates, rtol=1e-8)
    # The Normal-Wishart mixture is scikit-learn's model: the same bound.
    assert ns["nw"].lower_bound_ == pytest.approx(ns["sk"].lower_bound_, rel=1e-6)
    # ... and from the same start, the same bound at every pass.
    np.testing.assert_allclose(ns["same"].lower_bounds_, ns["ref"].lower_bounds_, rtol=1e-12)
    # The hidden Markov models: BayesPy's bounds on its hmm page, and the
    # states recovered; the smoothed walk is the dense joint Gaussian's mean.
    assert ns["Q_weather"].compute_lowerbound() == pytest.approx(-109.5883, abs=1e-4)
    assert ns["Q_hmm"].compute_lowerbound() == pytest.approx(-923.5053, abs=1e-4)
    assert np.mean(ns["states"].argmax(axis=1) == ns["z"]) > 0.9
    n = len(ns["walk"])
    J = 4.0 * np.eye(n) + 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    J[-1, -1] -= 1.0
    y = ns["Y_walk"].get_moments()[0][:, 0]
    np.testing.assert_allclose(ns["smoothed"], np.linalg.solve(J, 4.0 * y), rtol=1e-10)


CHECKS = {name[len("check_") :]: f for name, f in globals().items() if name.startswith("check_")}


def test_every_guide_page_has_a_check():
    assert set(GUIDE_PAGES) == set(CHECKS)


# Pages whose code takes over ten seconds on two cores: run by CI and by
# `pytest -m "slow or not slow"`, left out of plain `pytest`.
SLOW_PAGES = {"scaling", "sparse_gp"}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(page, marks=pytest.mark.slow) if page in SLOW_PAGES else page
        for page in GUIDE_PAGES
    ],
)
def test_page_code_runs_and_gives_its_numbers(page):
    namespace = run_page(page)
    CHECKS[page](namespace)


def test_quickstart_main_prints_posterior(capsys):
    from skvi.__main__ import main

    main()
    out = capsys.readouterr().out
    # Newcomb's data: 66 values with mean 26.212; the vague prior shrinks it
    # by a relative 1e-3 / (1e-3 + 66 E[gamma]) = 0.17%.
    assert "66 measurements" in out
    assert re.search(r"q\(mu\)\s+= N\(mean=26\.16", out)
