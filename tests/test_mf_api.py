"""SVIMatrixFactorization as scikit-learn reads it, and as a recommender.

Classifier likelihoods give labels of the ratings' type and accuracy;
predictive probabilities, standard deviations (with and without the noise)
and recommendations are checked against references computed here from the
fitted factors: exact moments of the linear predictor by a closed form
other than the model's, adaptive quadrature of the likelihood, and a
brute-force ranking of every (user, item) prediction.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit
from sklearn.base import is_classifier, is_regressor
from sklearn.model_selection import StratifiedKFold, cross_validate

from skvi import SVIMatrixFactorization


def _latent(n_users=40, n_items=30, density=0.4, seed=0):
    rng = np.random.RandomState(seed)
    U, V = rng.normal(size=(n_users, 2)), rng.normal(size=(n_items, 2))
    pairs = np.array([(m, n) for m in range(n_users) for n in range(n_items)])
    pairs = pairs[rng.uniform(size=len(pairs)) < density]
    f = np.sum(U[pairs[:, 0]] * V[pairs[:, 1]], axis=1)
    return pairs, f, rng


def _fit(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


@pytest.fixture(scope="module")
def gaussian():
    pairs, f, rng = _latent()
    y = 3.0 + f + 0.3 * rng.normal(size=len(f))
    mf = _fit(SVIMatrixFactorization(n_components=2, random_state=0), pairs, y)
    return mf, pairs, y


@pytest.fixture(scope="module")
def binary():
    pairs, f, rng = _latent(seed=1)
    y = (rng.uniform(size=len(f)) < expit(2 * f)).astype(int)
    mf = _fit(
        SVIMatrixFactorization(n_components=2, likelihood="bernoulli", random_state=0), pairs, y
    )
    return mf, pairs, y


def _f_moments(mf, pairs):
    """Mean and variance of f = mu + u.v + b + c from the fitted attributes.

    With a = (u, b, 1) and c = (v, 1, c) independent, f - mu = a . c and
    Var[a . c] = tr(Ca Cc) + ma' Cc ma + mc' Ca mc (not the model's
    E[g^2] - E[g]^2).
    """
    users = mf._user_ids.encode(pairs[:, 0])
    items = mf._item_ids.encode(pairs[:, 1])
    k = mf.n_components
    ma = np.column_stack([mf.user_mean_[users], np.ones(len(users))])
    mc = np.column_stack([mf.item_mean_[items, :k], np.ones(len(items)), mf.item_mean_[items, k]])
    ca = np.zeros((len(users), k + 2, k + 2))
    ca[:, : k + 1, : k + 1] = mf.user_covariance_[users]
    order = np.r_[np.arange(k), k + 1]
    cc = np.zeros((len(items), k + 2, k + 2))
    cc[:, order[:, None], order[None, :]] = mf.item_covariance_[items]
    mean = mf.global_mean_ + np.sum(ma * mc, axis=1)
    var = (
        mf.global_mean_variance_
        + np.einsum("nij,nji->n", ca, cc)
        + np.einsum("ni,nij,nj->n", ma, cc, ma)
        + np.einsum("ni,nij,nj->n", mc, ca, mc)
    )
    return mean, var


def _expect(g, mean, var):
    """E[g(f)] for f ~ N(mean, var), by adaptive quadrature."""
    sd = np.sqrt(var)
    value, _ = integrate.quad(
        lambda z: g(mean + sd * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi),
        -12,
        12,
        epsabs=1e-12,
        epsrel=1e-10,
    )
    return value


# ----------------------------------------------------------- classifiers
def test_binary_labels_and_probabilities_against_quadrature(binary):
    mf, pairs, y = binary
    assert is_classifier(mf) and not is_regressor(mf)
    assert mf.classes_.dtype == y.dtype
    np.testing.assert_array_equal(mf.classes_, [0, 1])
    X = pairs[:25]
    m_f, v_f = _f_moments(mf, X)
    p1 = np.array([_expect(expit, m, v) for m, v in zip(m_f, v_f)])
    proba = mf.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], p1, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(proba[:, 0], 1 - p1, rtol=1e-7, atol=1e-9)
    labels = mf.predict(X)
    assert labels.dtype == y.dtype
    np.testing.assert_array_equal(labels, (p1 > 0.5).astype(int))
    # score is accuracy, as scikit-learn's classifiers score.
    all_labels = (mf.predict_proba(pairs)[:, 1] > 0.5).astype(int)
    assert mf.score(pairs, y) == pytest.approx(np.mean(all_labels == y), rel=1e-12)
    w = np.arange(len(y)) % 3
    assert mf.score(pairs, y, sample_weight=w) == pytest.approx(
        np.sum(w * (all_labels == y)) / np.sum(w), rel=1e-12
    )
    # predict_mean: the probability of classes_[1], with the standard
    # deviation of a 0/1 rating (noise) or of sigmoid(f) alone.
    mean, std = mf.predict_mean(X, return_std=True)
    np.testing.assert_allclose(mean, p1, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std**2, p1 * (1 - p1), rtol=1e-6, atol=1e-9)
    own = mf.predict_mean(X, return_std=True, include_noise=False)[1]
    second = np.array([_expect(lambda f: expit(f) ** 2, m, v) for m, v in zip(m_f, v_f)])
    np.testing.assert_allclose(own**2, second - p1**2, rtol=1e-5, atol=1e-10)
    assert np.all(own < std)
    with pytest.raises(ValueError, match="class labels.*predict_mean"):
        mf.predict(X, return_std=True)


def test_string_labels_are_predicted_as_strings():
    pairs, f, rng = _latent(seed=2)
    y = np.where(rng.uniform(size=len(f)) < expit(2 * f), "yes", "no")
    mf = _fit(
        SVIMatrixFactorization(n_components=2, likelihood="bernoulli", max_iter=20, random_state=0),
        pairs,
        y,
    )
    np.testing.assert_array_equal(mf.classes_, ["no", "yes"])
    labels = mf.predict(pairs)
    assert labels.dtype.kind == "U"
    proba = mf.predict_proba(pairs)
    np.testing.assert_array_equal(labels, np.where(proba[:, 1] > 0.5, "yes", "no"))
    assert mf.score(pairs, y) == pytest.approx(np.mean(labels == y), rel=1e-12)
    assert mf.rating_range_ == ("no", "yes")
    # The same fit as with 0/1 labels.
    ints = _fit(
        SVIMatrixFactorization(n_components=2, likelihood="bernoulli", max_iter=20, random_state=0),
        pairs,
        (y == "yes").astype(int),
    )
    np.testing.assert_allclose(ints.predict_proba(pairs), proba, rtol=1e-12)
    with pytest.raises(ValueError, match="mixes labels"):
        SVIMatrixFactorization(likelihood="bernoulli").fit(pairs[:3], np.array([1, "a", 1], object))


def test_ordinal_labels_probabilities_and_expected_rating_against_quadrature():
    pairs, f, rng = _latent(seed=3)
    y = np.clip(np.round(3 + 1.2 * f + 0.5 * rng.normal(size=len(f))), 1, 5).astype(np.int64)
    mf = _fit(
        SVIMatrixFactorization(n_components=2, likelihood="ordinal", max_iter=30, random_state=0),
        pairs,
        y,
    )
    assert is_classifier(mf)
    assert mf.__sklearn_tags__().classifier_tags.multi_class
    np.testing.assert_array_equal(mf.classes_, [1, 2, 3, 4, 5])
    assert mf.classes_.dtype == np.int64
    lik = mf.likelihood_
    edges = np.concatenate(([-np.inf], lik.thresholds, [np.inf]))

    def category(k):
        return lambda f: expit(lik.slope * (edges[k + 1] - f)) - expit(lik.slope * (edges[k] - f))

    X = pairs[:10]
    m_f, v_f = _f_moments(mf, X)
    ref = np.array([[_expect(category(k), m, v) for k in range(5)] for m, v in zip(m_f, v_f)])
    # The model's 40-node Gauss-Hermite rule against adaptive quadrature:
    # the category boundaries are sharper than the sigmoid of the binary case.
    np.testing.assert_allclose(mf.predict_proba(X), ref, rtol=0, atol=1e-6)
    labels = mf.predict(X)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, mf.classes_[np.argmax(ref, axis=1)])
    values = np.arange(1.0, 6.0)
    mean, std = mf.predict_mean(X, return_std=True, include_noise=False)
    np.testing.assert_allclose(mean, ref @ values, rtol=0, atol=1e-5)

    def expected(f):
        return sum(values[k] * category(k)(f) for k in range(5))

    second = np.array([_expect(lambda f: expected(f) ** 2, m, v) for m, v in zip(m_f, v_f)])
    np.testing.assert_allclose(std**2, second - (ref @ values) ** 2, rtol=0, atol=1e-5)
    noisy = mf.predict_mean(X, return_std=True)[1]
    np.testing.assert_allclose(noisy**2, ref @ values**2 - (ref @ values) ** 2, rtol=0, atol=1e-5)


def test_classifier_cross_validates_with_stratified_folds_and_accuracy(binary):
    mf, pairs, y = binary
    est = SVIMatrixFactorization(n_components=2, likelihood="bernoulli", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_validate(est, pairs, y, cv=3)["test_score"]
        for score, (train, test) in zip(scores, StratifiedKFold(3).split(pairs, y)):
            fold = est.fit(pairs[train], y[train])
            assert score == pytest.approx(np.mean(fold.predict(pairs[test]) == y[test]))


# ------------------------------------------------------------ regressors
def test_gaussian_std_with_and_without_noise_closed_form(gaussian):
    mf, pairs, y = gaussian
    assert is_regressor(mf) and not is_classifier(mf)
    X = np.vstack([pairs[:50], [[0, 999], [999, 0]]])  # unknown ids: the prior
    m_f, v_f = _f_moments(mf, pairs[:50])
    mean, std = mf.predict(X, return_std=True)
    mean0, std0 = mf.predict(X, return_std=True, include_noise=False)
    np.testing.assert_array_equal(mean0, mean)
    np.testing.assert_allclose(mean[:50], m_f, rtol=1e-10)
    np.testing.assert_allclose(std0[:50] ** 2, v_f, rtol=1e-8)
    # The Student-t predictive's noise variance E[1 / tau] = rate / (shape - 1).
    noise = mf.noise_rate_ / (mf.noise_shape_ - 1)
    np.testing.assert_allclose(std**2, std0**2 + noise, rtol=1e-10)
    np.testing.assert_array_equal(mf.predict_mean(X, return_std=True)[1], std)
    fixed = _fit(
        SVIMatrixFactorization(n_components=2, noise_precision=4.0, random_state=0), pairs, y
    )
    s1 = fixed.predict(pairs[:20], return_std=True)[1]
    s0 = fixed.predict(pairs[:20], return_std=True, include_noise=False)[1]
    np.testing.assert_allclose(s1**2, s0**2 + 0.25, rtol=1e-10)
    np.testing.assert_allclose(s0**2, _f_moments(fixed, pairs[:20])[1], rtol=1e-8)


def test_clip_keeps_predictions_within_the_training_ratings(gaussian):
    mf, pairs, y = gaussian
    assert mf.rating_range_ == (y.min(), y.max())
    X = np.array([(m, n) for m in range(40) for n in range(30)])
    raw, std = mf.predict(X, return_std=True)
    assert raw.min() < y.min() or raw.max() > y.max()  # something to clip
    clipped, std_c = mf.predict(X, return_std=True, clip=True)
    np.testing.assert_array_equal(clipped, np.clip(raw, y.min(), y.max()))
    np.testing.assert_array_equal(std_c, std)
    np.testing.assert_array_equal(mf.predict(X, clip=False), raw)
    # partial_fit widens the range with its ratings; weight-0 ratings do not count.
    stream = SVIMatrixFactorization(n_components=2, random_state=0)
    stream.partial_fit(pairs[:100], y[:100])
    assert stream.rating_range_ == (y[:100].min(), y[:100].max())
    stream.partial_fit(np.array([[0, 0], [1, 1]]), [9.0, 50.0], sample_weight=[1.0, 0.0])
    assert stream.rating_range_ == (y[:100].min(), 9.0)
    np.testing.assert_array_less(stream.predict(X, clip=True), 9.0 + 1e-12)


def test_poisson_std_without_noise_is_the_spread_of_the_rate():
    pairs, f, rng = _latent(seed=4)
    y = rng.poisson(np.exp(0.5 + 0.5 * f))
    mf = _fit(
        SVIMatrixFactorization(n_components=2, likelihood="poisson", max_iter=20, random_state=0),
        pairs,
        y,
    )
    assert is_regressor(mf)
    X = pairs[:10]
    m_f, v_f = _f_moments(mf, X)
    rate = np.array([_expect(np.exp, m, v) for m, v in zip(m_f, v_f)])
    rate2 = np.array([_expect(lambda f: np.exp(2 * f), m, v) for m, v in zip(m_f, v_f)])
    mean, std0 = mf.predict(X, return_std=True, include_noise=False)
    np.testing.assert_allclose(mean, rate, rtol=1e-7)
    np.testing.assert_allclose(std0**2, rate2 - rate**2, rtol=1e-5)
    # With the noise: Var[r] = E[rate] + Var[rate].
    std = mf.predict(X, return_std=True)[1]
    np.testing.assert_allclose(std**2, rate + rate2 - rate**2, rtol=1e-6)


# ------------------------------------------------------------- recommend
def _brute_force(mf, users, n, seen, std_of=None):
    """Each user's n best items by predict over every pair, and their means and stds."""
    predict = std_of or (lambda X: mf.predict_mean(X, return_std=True))
    items, means, stds = [], [], []
    for u in users:
        X = np.column_stack([np.full(mf.n_items_, u, dtype=object), mf.item_ids_])
        mean, std = predict(X)
        allowed = np.array([(u, i) not in seen for i in mf.item_ids_])
        order = [j for j in np.argsort(-mean, kind="stable") if allowed[j]][:n]
        items.append(mf.item_ids_[order])
        means.append(mean[order])
        stds.append(std[order])
    return np.array(items), np.array(means), np.array(stds)


def test_recommend_is_the_brute_force_ranking_of_predict(gaussian):
    mf, pairs, y = gaussian
    seen = set(map(tuple, pairs.tolist()))
    users = np.array([3, 0, 17, 3, 999])  # a repeat, and an unknown user (the prior)
    items, mean, std = mf.recommend(users, n=7)
    ref_items, ref_mean, ref_std = _brute_force(mf, users, 7, seen)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(std, ref_std, rtol=1e-8)
    assert items.shape == mean.shape == std.shape == (5, 7)
    # Nothing left out, and the model's own standard deviation.
    items, mean, std = mf.recommend(users, n=5, exclude_seen=False, include_noise=False)
    ref = _brute_force(
        mf, users, 5, set(), lambda X: mf.predict(X, return_std=True, include_noise=False)
    )
    np.testing.assert_array_equal(items, ref[0])
    np.testing.assert_allclose(std, ref[2], rtol=1e-8)
    # seen= replaces the training pairs; a new user's pairs count too.
    extra = np.array([[999, items[4, 0]], [3, items[0, 0]], [3, 12345]])
    got = mf.recommend([3, 999], n=4, seen=extra)[0]
    ref = _brute_force(mf, [3, 999], 4, {(3, items[0, 0]), (999, items[4, 0])})[0]
    np.testing.assert_array_equal(got, ref)


def test_recommend_ranks_a_classifier_by_its_probability(binary):
    mf, pairs, y = binary
    seen = set(map(tuple, pairs.tolist()))
    users = np.arange(0, 40, 3)
    items, mean, std = mf.recommend(users, n=4)
    ref_items, ref_mean, ref_std = _brute_force(mf, users, 4, seen)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9)
    np.testing.assert_allclose(std, ref_std, rtol=1e-7)


def test_recommend_with_string_ids_after_partial_fit():
    pairs, f, rng = _latent(20, 12, 0.5, seed=5)
    y = 3 + f + 0.2 * rng.normal(size=len(f))
    X = np.column_stack([[f"u{m}" for m in pairs[:, 0]], [f"i{n}" for n in pairs[:, 1]]])
    mf = SVIMatrixFactorization(n_components=2, batch_size=50, random_state=0)
    half = len(y) // 2
    mf.partial_fit(X[:half], y[:half])
    mf.partial_fit(X[half:], y[half:], sample_weight=(np.arange(len(y) - half) % 5 > 0) * 1.0)
    weighted_out = X[half:][np.arange(len(y) - half) % 5 == 0]
    seen = {tuple(p) for p in X[:half].tolist()} | {
        tuple(p) for p in X[half:][np.arange(len(y) - half) % 5 > 0].tolist()
    }
    # Each distinct pair once, weight-0 ratings not among them.
    assert mf._seen.matrix().nnz == len(seen)
    assert any(tuple(p) not in seen for p in weighted_out.tolist())
    users = mf.user_ids_[:6]
    items, mean, _ = mf.recommend(users, n=3)
    ref_items, ref_mean, _ = _brute_force(mf, users, 3, seen)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10)
    assert items.dtype.kind == "U"


def test_recommend_refuses_too_few_items_and_a_model_without_its_pairs(gaussian):
    mf, pairs, y = gaussian
    per_user = np.bincount(pairs[:, 0])
    full = int(np.argmax(per_user))
    left = mf.n_items_ - per_user[full]
    with pytest.raises(ValueError, match=rf"Users \[{full}\] have only \[{left}\] unrated"):
        mf.recommend([full], n=left + 1)
    assert mf.recommend([full], n=left)[0].shape == (1, left)
    assert mf.recommend([full], n=mf.n_items_, exclude_seen=False)[0].shape == (1, mf.n_items_)
    # A block of a fit on a cluster: the ratings stay on the workers, no pairs are kept.
    block = SVIMatrixFactorization(n_components=2, random_state=0)
    block._prepare_data(pairs, y, None, reset=True, vocabulary={})
    assert block._seen is None


def test_the_rated_pairs_do_not_grow_the_pickle_with_repeated_ratings(gaussian):
    mf, pairs, y = gaussian
    twice = _fit(
        SVIMatrixFactorization(n_components=2, random_state=0),
        np.vstack([pairs, pairs]),
        np.concatenate([y, y]),
    )
    assert len(pickle.dumps(twice._seen)) == len(pickle.dumps(mf._seen))
    matrix = mf._seen.matrix()
    assert matrix.dtype == bool and matrix.indices.dtype == np.int32
    np.testing.assert_array_equal(np.argwhere(matrix.toarray()), np.unique(pairs, axis=0))
    restored = pickle.loads(pickle.dumps(mf))
    np.testing.assert_array_equal(restored.recommend([1, 2])[0], mf.recommend([1, 2])[0])


def test_a_stream_of_repeated_ratings_does_not_grow_the_pickle(gaussian):
    # partial_fit keeps the latest minibatches' pairs unmerged until they
    # outnumber the merged ones; a pickle must carry the distinct pairs only.
    _, pairs, y = gaussian
    once = SVIMatrixFactorization(n_components=2, random_state=0)
    once.partial_fit(pairs, y)
    again = pickle.loads(pickle.dumps(once))
    again.partial_fit(pairs, y)  # every pair rated once more: none is new
    assert len(pickle.dumps(again._seen)) == len(pickle.dumps(once._seen))
    assert not again._seen._pending  # the pickle merged them
    np.testing.assert_array_equal(
        np.argwhere(again._seen.matrix().toarray()), np.unique(pairs, axis=0)
    )
    restored = pickle.loads(pickle.dumps(again))
    np.testing.assert_array_equal(restored.recommend([1, 2])[0], again.recommend([1, 2])[0])
