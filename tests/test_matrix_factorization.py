"""SVIMatrixFactorization against closed forms and the generative model."""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from skvi.engine.rows import sample_children
from skvi import SVIMatrixFactorization
from skvi.models.matrix_factorization import nodes


def make_ratings(n_users, n_items, k=3, density=0.3, tau=4.0, seed=0, mu=3.0):
    """Ratings drawn from the model, with the noiseless means."""
    rng = np.random.RandomState(seed)
    U = rng.normal(size=(n_users, k))
    V = rng.normal(size=(n_items, k))
    b = 0.5 * rng.normal(size=n_users)
    c = 0.5 * rng.normal(size=n_items)
    X = np.argwhere(rng.rand(n_users, n_items) < density)
    f = mu + b[X[:, 0]] + c[X[:, 1]] + np.sum(U[X[:, 0]] * V[X[:, 1]], axis=1)
    y = f + rng.normal(size=f.shape[0]) / np.sqrt(tau)
    return X, y, f, (U, V, b, c)


@pytest.fixture(scope="module")
def small():
    return make_ratings(80, 60, density=0.4, seed=1)


def quiet_fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
@pytest.mark.parametrize("fixed", [False, True, "ard"])
def test_batch_elbo_never_decreases(small, covariance, fixed):
    X, y, _, _ = small
    kw = dict(noise_precision=4.0, factor_precision=1.0) if fixed is True else {}
    if fixed == "ard":
        kw = dict(factor_prior="ard")
    mf = quiet_fit(
        SVIMatrixFactorization(3, covariance=covariance, max_iter=60, tol=0, random_state=0, **kw),
        X,
        y,
    )
    lb = np.asarray(mf.lower_bounds_)
    assert np.all(np.diff(lb) >= -1e-9 * np.abs(lb[1:]))
    # The reported bound is the ELBO of the final posterior.
    assert mf.elbo(X, y) == pytest.approx(lb[-1], rel=1e-12)


def _wishart_update(mf, a0, b0):
    """``E[Lambda_u]`` of the Wishart update given the fitted users (prior ``(a0, b0)``).

    ``df = d - 1 + 2 a0 + n`` and scale ``(2 b0 I + sum_m E[w_m w_m^T])^-1``.
    """
    m, S = mf.user_mean_, mf.user_covariance_
    n, d = m.shape
    second = np.sum(S + m[:, :, None] * m[:, None, :], axis=0)
    return (d - 1 + 2 * a0 + n) * np.linalg.inv(2 * b0 * np.eye(d) + second)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_wishart_prior_posterior_is_the_closed_form(small, covariance):
    # q(Lambda_u) given the users' q: Wishart with df0 + n degrees of freedom
    # and scale (W0^-1 + sum_m E[w_m w_m^T])^-1, where the prior
    # (a0, b0) = (2, 3) means df0 = d - 1 + 2 a0 and W0^-1 = 2 b0 I.  Ids
    # are encoded: the gap in them (40..59 unrated) takes no memory, and an
    # unknown user is described by the prior.
    X, y, _, _ = small
    X = X.copy()
    X[:, 0] = np.where(X[:, 0] >= 40, X[:, 0] + 20, X[:, 0])  # ids 40..59 unrated
    mf = quiet_fit(
        SVIMatrixFactorization(
            3,
            covariance=covariance,
            factor_prior="wishart",
            precision_prior=(2.0, 3.0),
            max_iter=15,
            tol=0,
            random_state=0,
        ),
        X,
        y,
    )
    assert mf.n_users_ == 80
    np.testing.assert_array_equal(mf.user_ids_, np.unique(X[:, 0]))
    np.testing.assert_allclose(mf.user_precision_, _wishart_update(mf, 2.0, 3.0), rtol=1e-10)
    unknown = mf._node_moments("users", mf.natural_params_, mf._user_ids.encode(np.array([45])))
    np.testing.assert_array_equal(unknown.mean, 0.0)
    prior_cov = np.linalg.inv(mf.user_precision_)
    np.testing.assert_allclose(unknown.second[0], prior_cov, rtol=1e-10, atol=1e-14)


def test_default_prior_is_the_documented_wishart_and_switches_off_unneeded_directions():
    # precision_prior=None: the Wishart of each side has df = d - 1 + 2e-3
    # and W0^-1 = 2 * 0.05 I, the noise's Gamma a0 = 1e-3 (its posterior
    # shape a0 + N / 2).  The precisions are updated last in a pass, so
    # the fitted E[Lambda_u] is the closed form given the fitted users.
    # Rank-3 ratings fitted with 8 components: the fit converges, and five
    # directions of the users' factors get a precision far above the three
    # the ratings use.
    X, y, _, _ = make_ratings(300, 200, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mf = SVIMatrixFactorization(8, random_state=0).fit(X, y)
    assert mf.converged_ and mf.factor_prior == "wishart"
    np.testing.assert_allclose(mf.user_precision_, _wishart_update(mf, 1e-3, 0.05), rtol=1e-10)
    assert mf.noise_shape_ == pytest.approx(1e-3 + 0.5 * len(y), rel=1e-12)
    # The Gamma priors (the noise's, ARD's) keep the documented (1e-3, 1e-3).
    ard = [
        quiet_fit(
            SVIMatrixFactorization(
                8, factor_prior="ard", precision_prior=p, max_iter=5, random_state=0
            ),
            X,
            y,
        )
        for p in (None, (1e-3, 1e-3))
    ]
    np.testing.assert_array_equal(ard[0].user_precision_, ard[1].user_precision_)
    assert ard[0].noise_rate_ == ard[1].noise_rate_
    values = np.linalg.eigvalsh(mf.user_precision_[:-1, :-1])
    assert np.all(values[:3] < 1.0) and np.all(values[3:] > 30 * values[2])


def test_noise_and_rmse_approach_truth_as_data_grows():
    errors, taus = [], []
    for n_users, n_items in [(40, 30), (400, 300)]:
        X, y, f, _ = make_ratings(n_users, n_items, seed=2)
        mf = quiet_fit(SVIMatrixFactorization(3, max_iter=200, random_state=0), X, y)
        taus.append(mf.noise_precision_)
        errors.append(np.sqrt(np.mean((mf.predict(X) - f) ** 2)))
    # Generating noise precision 4: the estimate tightens around it.
    assert abs(taus[1] - 4.0) < 0.1 * 4.0
    assert abs(taus[1] - 4.0) < abs(taus[0] - 4.0)
    # The error of the predictive mean against the noiseless ratings shrinks
    # and ends well below the noise level 1 / sqrt(4) = 0.5.
    assert errors[1] < 0.6 * errors[0]
    assert errors[1] < 0.25


@pytest.mark.parametrize("factor_prior", ["ard", "wishart"])
def test_natural_gradient_step_with_rho_one_is_the_coordinate_ascent_update(
    small, factor_prior, prior_start_mf
):
    X, y, _, _ = small
    # Batch fits start tighter than online ones; compare from one start.
    batch = prior_start_mf(3, factor_prior=factor_prior, max_iter=1, tol=0, random_state=0)
    quiet_fit(batch, X, y)
    online = SVIMatrixFactorization(
        3, factor_prior=factor_prior, learning_rate=1.0, batch_size=len(y), random_state=0
    )
    online.partial_fit(X, y)
    for name, value in batch.natural_params_.items():
        for a, b in zip(value, online.natural_params_[name]):
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_fold_in_is_the_bayesian_linear_regression_posterior(small, covariance):
    X, y, _, _ = small
    alpha, tau = 2.0, 4.0
    mf = quiet_fit(
        SVIMatrixFactorization(
            3,
            covariance=covariance,
            noise_precision=tau,
            factor_precision=alpha,
            max_iter=30,
            random_state=0,
        ),
        X,
        y,
    )
    rng = np.random.RandomState(5)
    items = np.sort(rng.choice(mf.n_items_, size=12, replace=False))
    ratings = rng.uniform(1, 5, size=items.shape[0])
    R = sp.csr_matrix((ratings, (np.zeros_like(items), items)), shape=(1, mf.n_items_))
    got = mf.transform(R)[0]

    # Closed form: r = mu + c + (u, b) . (v, 1) + noise, Gaussian prior.
    k = 3
    m = mf.item_mean_[items]
    S = mf.item_covariance_[items]
    design = np.hstack([m[:, :k], np.ones((items.shape[0], 1))])
    target = ratings - mf.global_mean_ - m[:, k]
    if covariance == "full":
        # Only the mean factors and the (v, c) covariance enter beyond BLR.
        extra = np.zeros((k + 1, k + 1))
        extra[:k, :k] = S[:, :k, :k].sum(axis=0)
        cross = np.zeros(k + 1)
        cross[:k] = S[:, :k, k].sum(axis=0)
        precision = alpha * np.eye(k + 1) + tau * (design.T @ design + extra)
        mean = np.linalg.solve(precision, tau * (design.T @ target - cross))
        np.testing.assert_allclose(got, mean[:k], rtol=1e-8, atol=1e-10)
    # With point-mass items both families are the textbook BLR posterior.
    mf.natural_params_["items"] = _point_mass_items(mf)
    got = mf.transform(R)[0]
    precision = alpha * np.eye(k + 1) + tau * design.T @ design
    mean = np.linalg.solve(precision, tau * design.T @ target)
    if covariance == "full":
        np.testing.assert_allclose(got, mean[:k], rtol=1e-6, atol=1e-8)
    else:
        # Mean field over coordinates: the fixed point of the coordinate
        # updates is still the exact posterior mean.
        np.testing.assert_allclose(got, mean[:k], rtol=1e-2, atol=1e-3)


def _point_mass_items(mf, precision=1e9):
    """Item natural parameters with the same means and negligible variance."""
    m = mf.item_mean_
    if mf.covariance == "full":
        P = np.broadcast_to(precision * np.eye(m.shape[1]), m.shape + (m.shape[1],)).copy()
        return (m * precision, -0.5 * P)
    return (m * precision, np.full(m.shape, -0.5 * precision))


def test_predictive_intervals_are_calibrated():
    X, y, _, (U, V, b, c) = make_ratings(300, 200, seed=3)
    mf = quiet_fit(SVIMatrixFactorization(3, random_state=0), X, y)
    # Held-out ratings from the same model (pairs not in the training set).
    rng = np.random.RandomState(4)
    seen = set(map(tuple, X))
    pairs = np.array(
        [p for p in zip(rng.randint(300, size=6000), rng.randint(200, size=6000)) if p not in seen]
    )
    f = 3.0 + b[pairs[:, 0]] + c[pairs[:, 1]] + np.sum(U[pairs[:, 0]] * V[pairs[:, 1]], axis=1)
    y_new = f + rng.normal(size=f.shape[0]) / 2.0
    mean, std = mf.predict(pairs, return_std=True)
    inside = np.abs(y_new - mean) <= norm.ppf(0.95) * std
    assert 0.85 <= inside.mean() <= 0.95
    # log_predictive_density is the mean Gaussian predictive log-density;
    # score is R^2 of the predictive mean, as for every regressor.
    assert mf.log_predictive_density(pairs, y_new) == pytest.approx(
        np.mean(norm.logpdf(y_new, mean, std)), rel=1e-12
    )
    assert mf.score(pairs, y_new) == pytest.approx(r2_score(y_new, mean), rel=1e-12)


@pytest.mark.parametrize("factor_prior", ["wishart", "ard"])
def test_cold_start_falls_back_to_the_known_bias(small, factor_prior):
    X, y, _, _ = small
    mf = quiet_fit(SVIMatrixFactorization(3, factor_prior=factor_prior, random_state=0), X, y)
    known = np.array([[0, 0]])
    new_user = np.array([[1000, 0]])
    new_both = np.array([[1000, 1000]])
    m0, s0 = mf.predict(known, return_std=True)
    m1, s1 = mf.predict(new_user, return_std=True)
    m2, s2 = mf.predict(new_both, return_std=True)
    # Unknown user: prior factors (mean zero), so mean = mu + c_item.
    assert m1[0] == pytest.approx(mf.global_mean_ + mf.item_bias_[0], rel=1e-12)
    assert m2[0] == pytest.approx(mf.global_mean_, rel=1e-12)
    assert s0[0] < s1[0] < s2[0]
    # The unknown user's node is the prior N(0, E[Lambda_u]^-1) (ARD: a
    # diagonal), so Var(u . (v, 1)) = tr(E[Lambda_u]^-1 E[(v, 1)(v, 1)^T]),
    # plus the item bias's variance.
    alpha = mf.user_precision_
    cov_u = np.linalg.inv(alpha) if alpha.ndim == 2 else np.diag(1.0 / alpha)
    v1 = np.append(mf.item_mean_[0, :3], 1.0)
    S = np.outer(v1, v1)
    S[:3, :3] += mf.item_covariance_[0, :3, :3]
    var_g = np.sum(cov_u * S) + mf.item_covariance_[0, 3, 3]
    rate_shape = mf.noise_rate_ / (mf.noise_shape_ - 1.0)
    assert s1[0] ** 2 == pytest.approx(mf.global_mean_variance_ + var_g + rate_shape, rel=1e-10)


def test_matrix_form_equals_pairs_form(small):
    X, y, _, _ = small
    R = sp.csr_matrix((y, (X[:, 0], X[:, 1])))
    a = quiet_fit(SVIMatrixFactorization(3, max_iter=20, random_state=0), X, y)
    b = quiet_fit(SVIMatrixFactorization(3, max_iter=20, random_state=0), R)
    np.testing.assert_allclose(b.user_mean_, a.user_mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-12)
    assert b.score(R) == pytest.approx(a.score(X, y), rel=1e-12)


def test_partial_fit_grows_and_learns_a_stream():
    X, y, f, _ = make_ratings(200, 150, seed=6)
    # Users arrive in two waves: the second half is new in the second wave.
    rng = np.random.RandomState(0)
    order = np.lexsort((rng.rand(len(y)), X[:, 0] >= 100))
    X, y, f = X[order], y[order], f[order]
    mf = SVIMatrixFactorization(3, batch_size=500, random_state=0)
    n_users = []
    for epoch in range(10):
        for batch in np.array_split(np.arange(len(y)), 8):
            mf.partial_fit(X[batch], y[batch])
            n_users.append(mf.n_users_)
    assert n_users[0] == 100 and n_users[-1] == 200
    # Rows are the users in order of arrival (user_ids_).
    np.testing.assert_array_equal(
        mf.user_counts_, 10 * np.bincount(X[:, 0], minlength=200)[mf.user_ids_]
    )
    # Repeated passes over the stream get close to coordinate ascent on
    # all the data (the error against the noiseless ratings).
    batch_fit = quiet_fit(SVIMatrixFactorization(3, random_state=0), X, y)
    rmse_stream = np.sqrt(np.mean((mf.predict(X) - f) ** 2))
    rmse_batch = np.sqrt(np.mean((batch_fit.predict(X) - f) ** 2))
    assert rmse_stream < 1.5 * rmse_batch


def test_step_safety_recovers_from_paquets_divergence():
    X, y, _, _ = make_ratings(300, 200, seed=0)
    common = dict(
        n_components=3,
        covariance="diagonal",
        noise_precision=1.0,
        factor_precision=1.0,
        children_per_node=1,
        learning_method="online",
        learning_offset=0.0,
        learning_decay=0.6,
        max_iter=80,
        tol=0,
        update_order="joint",
        random_state=0,
    )
    batch = quiet_fit(
        SVIMatrixFactorization(
            3,
            covariance="diagonal",
            noise_precision=1.0,
            factor_precision=1.0,
            max_iter=50,
            tol=0,
            random_state=0,
        ),
        X,
        y,
    ).lower_bounds_[-1]
    off = quiet_fit(SVIMatrixFactorization(step_safety=False, **common), X, y)
    on = quiet_fit(SVIMatrixFactorization(step_safety=True, **common), X, y)
    # rho_1 = 1 with one child per node: the ELBO runs away by orders of
    # magnitude (Paquet, Fig. 2; here about 840 times the batch ELBO) ...
    assert min(off.lower_bounds_) < 500 * batch
    # ... while the overshoot test rejects the bad steps and it recovers.
    assert on.n_rejected_steps_ > 0
    assert min(on.lower_bounds_) > 10 * batch
    assert on.lower_bounds_[-1] > 2 * batch
    assert on.lower_bounds_[-1] > off.lower_bounds_[-1]


def test_alg1_children_per_node_samples_and_scales(small, prior_start_mf):
    X, y, _, _ = small
    rng = np.random.RandomState(0)
    users = X[:, 0]
    rows = sample_children(users, 2, rng)
    counts = np.bincount(users[rows], minlength=users.max() + 1)
    np.testing.assert_array_equal(counts, np.minimum(np.bincount(users), 2))
    assert len(np.unique(rows)) == len(rows)
    # With C at least every node's count, an Alg. 1 step with rho = 1 is
    # the coordinate-ascent sweep.
    big = SVIMatrixFactorization(
        3,
        children_per_node=10**6,
        learning_method="online",
        learning_rate=1.0,
        max_iter=1,
        tol=0,
        step_safety=False,
        random_state=0,
    )
    quiet_fit(big, X, y)
    batch = quiet_fit(prior_start_mf(3, max_iter=1, tol=0, random_state=0), X, y)
    np.testing.assert_allclose(big.user_mean_, batch.user_mean_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.array([[0, 1], [1, 0]]), np.array([1.0, np.nan]), "finite"),
        (np.array([[0, 1], [1, 0]]), np.array([1.0, np.inf]), "finite"),
        (np.array([[0, np.nan], [1, 0]]), np.array([1.0, 2.0]), "NaN"),
        (np.array([[0, 1j], [1, 0]]), np.array([1.0, 2.0]), "Complex"),
        (np.array([[0, 1], [1, 0]]), np.array([1.0, 2j]), "Complex"),
        (np.array([[0, 1, 2], [1, 0, 2]]), np.array([1.0, 2.0]), "3 feature"),
        (np.array([[0], [1]]), np.array([1.0, 2.0]), "1 feature"),
        (np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0, 3.0]), "y must have shape"),
        (np.array([[0, 1], [1, 0]]), None, "sparse"),
        (np.array([[0, 1, 2.0], [1, 0, np.nan]]), None, "finite"),
        (np.array([[0, 1, 2, 3], [1, 0, 2, 3]]), None, "rating\\) rows"),
    ],
)
def test_bad_input_raises(X, y, message):
    with pytest.raises(ValueError, match=message):
        SVIMatrixFactorization(2).fit(X, y)


def test_rows_of_user_item_rating_fit_as_pairs_with_ratings(small):
    X, y, _, _ = small
    kw = dict(n_components=3, max_iter=5, random_state=0, tol=0)
    ref = SVIMatrixFactorization(**kw).fit(X, y)
    est = SVIMatrixFactorization(**kw).fit(np.c_[X, y])
    for name in ref.natural_params_:
        for a, b in zip(est.natural_params_[name], ref.natural_params_[name]):
            np.testing.assert_array_equal(a, b)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user": X[:, 0], "movie": X[:, 1], "stars": y})
    est = SVIMatrixFactorization(**kw).fit(frame)
    np.testing.assert_array_equal(est.feature_names_in_, ["user", "movie"])
    np.testing.assert_allclose(est.predict(frame[["user", "movie"]]), ref.predict(X), rtol=1e-12)


def test_sklearn_model_selection_uses_score(small):
    X, y, _, _ = small
    est = SVIMatrixFactorization(3, max_iter=10, random_state=0)
    cv = KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(est, X, y, cv=cv)
        manual = [clone(est).fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in cv.split(X)]
        grid = GridSearchCV(est, {"n_components": [1, 3]}, cv=cv).fit(X, y)
    np.testing.assert_allclose(scores, manual, rtol=1e-12)
    # The grid's entry for n_components=3 is the mean of the manual scores.
    at_three = list(grid.cv_results_["param_n_components"]).index(3)
    assert grid.cv_results_["mean_test_score"][at_three] == pytest.approx(
        np.mean(manual), rel=1e-12
    )


def test_reproducible_random_state(small):
    X, y, _, _ = small
    kw = dict(learning_method="online", batch_size=200, max_iter=3, random_state=7)
    a = quiet_fit(SVIMatrixFactorization(3, **kw), X, y)
    b = quiet_fit(SVIMatrixFactorization(3, **kw), X, y)
    np.testing.assert_array_equal(a.user_mean_, b.user_mean_)


def test_compiled_moments_match_numpy():
    if nodes._gaussian_fast is None:
        if os.environ.get("CI"):
            pytest.fail(
                "the compiled skvi.models.matrix_factorization._gaussian_fast kernel is not built"
            )
        pytest.skip("compiled kernel not built")
    rng = np.random.RandomState(0)
    A = rng.normal(size=(50, 4, 4))
    P = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(4)
    eta1 = rng.normal(size=(50, 4))
    fast = nodes.moments_full(eta1, -0.5 * P)
    cov = np.linalg.inv(P)
    mean = np.einsum("nij,nj->ni", cov, eta1)
    np.testing.assert_allclose(fast.mean, mean, rtol=1e-10)
    np.testing.assert_allclose(
        fast.second, cov + mean[:, :, None] * mean[:, None, :], rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(fast.logdet, np.linalg.slogdet(P)[1], rtol=1e-12)
    # Not positive definite: flagged with NaN, not an exception.
    bad = -0.5 * P.copy()
    bad[3] *= -1.0
    out = nodes.moments_full(eta1, bad)
    assert np.isnan(out.logdet[3]) and np.all(np.isfinite(np.delete(out.logdet, 3)))


def _require_kernel():
    if nodes._gaussian_fast is None:
        if os.environ.get("CI"):
            pytest.fail(
                "the compiled skvi.models.matrix_factorization._gaussian_fast kernel is not built"
            )
        pytest.skip("compiled kernel not built")


@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_aggregates_match_the_sparse_products(weighted):
    # Each node's sums over its partners from the kernel (ratings grouped by
    # node, partners looked up among all nodes) against the numpy reference
    # (two sparse products over the gathered partners), duplicates included.
    _require_kernel()
    rng = np.random.RandomState(3)
    users = rng.randint(0, 12, size=200)
    items = rng.randint(0, 9, size=200)
    r = rng.normal(size=200)
    w = rng.uniform(0.2, 3.0, size=200) if weighted else None
    side = nodes.index_side(users, items, r, w)
    A = rng.normal(size=(9, 4, 4))
    mom = nodes.moments_full(rng.normal(size=(9, 4)), -0.5 * (A @ np.swapaxes(A, 1, 2) + np.eye(4)))
    fast = nodes.aggregate(side, mom, side.other_nodes)
    ref = nodes.aggregate_numpy(side, mom.take(side.other_nodes))
    for key in ("A", "B", "sx", "rx", "so", "ro", "soo"):
        np.testing.assert_allclose(getattr(fast, key), getattr(ref, key), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(factor_prior="ard", max_iter=5),
        dict(learning_method="online", batch_size=150, max_iter=3, tol=0),
        dict(
            learning_method="online",
            batch_size=150,
            max_iter=2,
            factor_prior="wishart",
            weighted=True,
        ),
        dict(
            likelihood="bernoulli",
            algorithm="mc-ssvi",
            learning_method="online",
            batch_size=200,
            max_iter=2,
            n_mc_samples=2,
        ),
        dict(likelihood="bernoulli", max_iter=3, n_mc_samples=3, weighted=True),
        dict(likelihood="ordinal", max_iter=2, n_mc_samples=2),
        dict(
            likelihood="poisson",
            expectation="quadrature",
            learning_method="online",
            batch_size=300,
            max_iter=2,
            n_mc_samples=2,
        ),
    ],
)
def test_compiled_step_matches_the_numpy_path(small, kw, monkeypatch):
    # The compiled statistics, natural step and partner draws give the fit
    # of the numpy path (forced by hiding the kernel) to rounding: the same
    # random numbers, summed in another order.
    _require_kernel()
    X, y, _, _ = small
    kw = dict(kw)
    weights = (
        np.random.RandomState(2).uniform(0.5, 2.0, y.shape[0])
        if kw.pop("weighted", False)
        else None
    )
    if kw.get("likelihood") == "bernoulli":
        y = (y > np.median(y)).astype(float)
    elif kw.get("likelihood") in ("ordinal", "poisson"):
        y = np.digitize(y, np.percentile(y, [20, 40, 60, 80])).astype(float)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return SVIMatrixFactorization(3, random_state=0, **kw).fit(X, y, sample_weight=weights)

    fast = fit()
    from skvi.models.matrix_factorization import nonconjugate, posterior, updates

    for module in (nodes, posterior, updates, nonconjugate):
        monkeypatch.setattr(module, "_gaussian_fast", None)
    slow = fit()
    assert fast.n_iter_ == slow.n_iter_ and fast.n_batch_iter_ == slow.n_batch_iter_
    for name in ("user_mean_", "user_covariance_", "item_mean_", "item_covariance_"):
        np.testing.assert_allclose(getattr(fast, name), getattr(slow, name), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fast.lower_bound_, slow.lower_bound_, rtol=1e-10)
    if kw.get("likelihood") == "ordinal":  # the learned thresholds too
        np.testing.assert_allclose(
            fast.likelihood_.thresholds, slow.likelihood_.thresholds, rtol=1e-10
        )


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_node_step_blends_in_the_convex_form(covariance, compiled, monkeypatch):
    # (1 - rho) old + rho target, as the engine's blend: a node whose
    # precision (1e25) dwarfs its target's (1e6) lands on the target at
    # rho = 1 and keeps a positive precision at rho just below 1, where
    # old + rho (target - old) cancelled the precision to zero.
    from skvi.engine import Factor, RowStatistics, StepContext
    from skvi.expfam import MultivariateGaussian, UnivariateGaussian
    from skvi.models.matrix_factorization import updates

    if compiled:
        _require_kernel()
        if covariance == "diagonal":
            pytest.skip("the compiled step is the full family's")
    else:
        monkeypatch.setattr(updates, "_gaussian_fast", None)
    d, big, small_prec = 2, 1e25, 1e6
    for rho, expected in ((1.0, small_prec), (1.0 - 2.0**-52, small_prec + 2.0**-52 * big)):
        ctx = StepContext(online=True, t=1, rho=rho, backoff=1.0, scale=1.0, prior={})
        ctx.row_scale, ctx.row_rho = np.ones(1), np.full(1, rho)
        stats = RowStatistics(np.array([0]), (np.zeros((1, d)), np.zeros((1, d, d))), np.ones(1))
        if covariance == "full":
            current = Factor((np.zeros((1, d)), -0.5 * big * np.eye(d)[None]), MultivariateGaussian)
        else:
            current = Factor((np.zeros((1, d)), np.full((1, d), -0.5 * big)), UnivariateGaussian)
        new, valid = updates.update_nodes(
            current, stats, ctx, np.full(d, small_prec), None, covariance, True, None
        )
        precision = -2.0 * (np.diagonal(new[1][0]) if covariance == "full" else new[1][0])
        assert valid
        np.testing.assert_allclose(precision, expected, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_threshold_objective_matches_the_likelihood(weighted):
    # The compiled ordinal objective against Ordinal.threshold_objective (and
    # its weighted form), every category and far tails included.
    _require_kernel()
    from skvi.likelihoods import Ordinal
    from skvi.likelihoods.base import _hermite
    from skvi.models.matrix_factorization import _gaussian_fast, nonconjugate

    rng = np.random.RandomState(4)
    lik = Ordinal(thresholds=[-1.0, 0.3, 0.9, 2.5], slope=1.7)
    y = rng.randint(0, 5, size=300)
    z, w = _hermite(10)
    f = rng.normal(scale=3.0, size=300)[:, None] + rng.uniform(0.1, 2.0, 300)[:, None] * z
    f[:3] = [[40.0], [-40.0], [0.0]] + 0.0 * z
    weights = rng.uniform(0.5, 3.0, size=300) if weighted else None
    if weighted:
        ref, ref_grad = nonconjugate._weighted_threshold_objective(lik, y, f, w, weights)
    else:
        ref, ref_grad = lik.threshold_objective(y.astype(float), f, w)
    grad = np.empty(4)
    edges = np.concatenate(([-np.inf], lik.thresholds, [np.inf]))
    value = _gaussian_fast.ordinal_threshold_objective(
        y.astype(np.int64),
        np.ascontiguousarray(f),
        w,
        np.empty(0) if weights is None else weights,
        edges,
        lik.slope,
        grad,
    )
    np.testing.assert_allclose(value, ref, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)


def test_ids_of_any_kind_fit_as_their_integer_codes(small):
    # Strings, large sparse integers and floats as ids: the same fit as the
    # dense integer codes they encode to (in the same order), with memory
    # for the distinct ids only.
    X, y, _, _ = small
    ref = quiet_fit(SVIMatrixFactorization(3, max_iter=10, tol=0, random_state=0), X, y)
    names = np.array([f"user-{i:03d}" for i in range(X[:, 0].max() + 1)])
    for users, items in [
        (names[X[:, 0]], X[:, 1]),
        (X[:, 0].astype(np.uint64) * 2**40 + 7, 0.5 * X[:, 1] - 3.25),
    ]:
        pairs = np.empty((len(y), 2), dtype=object)
        pairs[:, 0], pairs[:, 1] = users, items
        mf = quiet_fit(SVIMatrixFactorization(3, max_iter=10, tol=0, random_state=0), pairs, y)
        assert mf.n_users_ == ref.n_users_ and mf.n_items_ == ref.n_items_
        np.testing.assert_allclose(mf.predict(pairs), ref.predict(X), rtol=1e-8)
        np.testing.assert_allclose(mf.user_mean_, ref.user_mean_, rtol=1e-8, atol=1e-12)
    # A data frame keeps its column names and each column's type.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user": names[X[:, 0]], "item": X[:, 1]})
    mf = quiet_fit(SVIMatrixFactorization(3, max_iter=10, tol=0, random_state=0), frame, y)
    np.testing.assert_allclose(mf.predict(frame), ref.predict(X), rtol=1e-8)
    np.testing.assert_array_equal(mf.feature_names_in_, ["user", "item"])
    assert mf.n_features_in_ == 2
    # An unknown id is the prior: the same prediction whatever its kind.
    a = mf.predict(pd.DataFrame({"user": ["nobody"], "item": [0]}))
    b = ref.predict(np.array([[10**6, 0]]))
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_transform_output_follows_set_output(small):
    pytest.importorskip("pandas")
    X, y, _, _ = small
    mf = quiet_fit(SVIMatrixFactorization(2, max_iter=3, random_state=0), X, y)
    R = sp.csr_matrix((y[:30], (np.zeros(30, int), X[:30, 1])), shape=(1, X[:, 1].max() + 1))
    plain = mf.transform(R)
    out = mf.set_output(transform="pandas").transform(R)
    assert (
        list(out.columns)
        == list(mf.get_feature_names_out())
        == ["svimatrixfactorization0", "svimatrixfactorization1"]
    )
    np.testing.assert_allclose(out.to_numpy(), plain)


def test_alg1_with_few_children_warns_until_the_nodes_have_seen_their_ratings():
    # One child per node: 50 Alg. 1 iterations show the median node less
    # than one pass of its ratings; the fit is far from the batch answer and
    # says so.  Enough iterations (or children) reach it.
    X, y, _, _ = make_ratings(300, 200, seed=0)
    test = np.random.RandomState(1).rand(len(y)) < 0.2
    batch = quiet_fit(SVIMatrixFactorization(3, random_state=0), X[~test], y[~test])
    rmse = lambda m: np.sqrt(np.mean((m.predict(X[test]) - y[test]) ** 2))  # noqa: E731
    short = SVIMatrixFactorization(
        3, learning_method="online", children_per_node=1, max_iter=50, random_state=0
    )
    with pytest.warns(ConvergenceWarning, match="children_per_node"):
        short.fit(X[~test], y[~test])
    assert rmse(short) > 1.5 * rmse(batch)
    # The advice works: five children, and the default tolerance may not stop
    # the fit before every node has seen its ratings five times.
    enough = quiet_fit(
        SVIMatrixFactorization(
            3, learning_method="online", children_per_node=5, max_iter=400, random_state=0
        ),
        X[~test],
        y[~test],
    )
    assert rmse(enough) < 1.05 * rmse(batch)


# ----------------------------------------------------------- sample_weight
def _weighted_ratings(seed=3):
    """A small rating set with integer weights in {0, 1, 2, 3}.

    User 0 has only ratings of weight 0: weighted, it is dropped like the
    repeated data drop it, so both fits have the same ids and, since the
    initial factors are drawn per node (not per rating), the same start.
    """
    X, y, _, _ = make_ratings(25, 18, k=2, density=0.45, seed=seed)
    w = np.random.RandomState(seed).randint(0, 4, size=len(y))
    w[X[:, 0] == 0] = 0
    assert np.any(w == 0) and np.any(w == 3)
    return X, y, w


def _assert_same_posterior(a, b, rtol=1e-8):
    np.testing.assert_array_equal(a.user_ids_, b.user_ids_)
    np.testing.assert_array_equal(a.item_ids_, b.item_ids_)
    for name in ("user_mean_", "item_mean_", "user_covariance_", "item_covariance_"):
        np.testing.assert_allclose(
            getattr(a, name), getattr(b, name), rtol=rtol, atol=1e-12, err_msg=name
        )
    assert a.global_mean_ == pytest.approx(b.global_mean_, rel=rtol)
    assert a.global_mean_variance_ == pytest.approx(b.global_mean_variance_, rel=rtol)


def _assert_same_probe_loss(mf, X, y, w):
    """Step safety's loss per rating: the weighted average is the repeated one."""
    params = mf.natural_params_
    weighted = mf._probe_loss(mf._ratings(X, y, sample_weight=w), params)
    repeated = mf._ratings(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert weighted == pytest.approx(mf._probe_loss(repeated, params), rel=1e-10)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_sample_weight_equals_repeated_ratings_gaussian(covariance):
    X, y, w = _weighted_ratings()
    kw = dict(n_components=2, covariance=covariance, max_iter=25, tol=0, random_state=0)
    weighted = SVIMatrixFactorization(**kw).fit(X, y, sample_weight=w)
    repeated = SVIMatrixFactorization(**kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    # The user whose ratings all weigh 0 is not fitted.
    assert 0 not in weighted.user_ids_
    _assert_same_posterior(weighted, repeated)
    _assert_same_probe_loss(weighted, X, y, w)
    assert weighted.noise_precision_ == pytest.approx(repeated.noise_precision_, rel=1e-8)
    np.testing.assert_allclose(weighted.user_precision_, repeated.user_precision_, rtol=1e-8)
    np.testing.assert_allclose(weighted.lower_bounds_, repeated.lower_bounds_, rtol=1e-10)
    assert weighted.n_samples_seen_ == repeated.n_samples_seen_ == w.sum()
    # The same weights on the stored entries of the ratings matrix.
    R = sp.csr_matrix((y, (X[:, 0], X[:, 1])))
    matrix = SVIMatrixFactorization(**kw).fit(R, sample_weight=w)
    np.testing.assert_allclose(matrix.user_mean_, weighted.user_mean_, rtol=1e-12)
    # Unit weights are no weights, to the last bit.
    ones = SVIMatrixFactorization(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    plain = SVIMatrixFactorization(**kw).fit(X, y)
    np.testing.assert_array_equal(ones.user_mean_, plain.user_mean_)
    np.testing.assert_array_equal(ones.lower_bounds_, plain.lower_bounds_)


class _NoPartnerNoise:
    """Stands in for the Monte-Carlo generator: every partner draw is its mean."""

    def standard_normal(self, size=None):
        return np.zeros(size)


@pytest.mark.parametrize("likelihood", ["bernoulli", "poisson", "ordinal"])
def test_sample_weight_equals_repeated_ratings_nonconjugate(likelihood, monkeypatch):
    # The partner of each rating is drawn per rating, so repeated ratings draw
    # more (and other) numbers than weighted ones.  With those draws at the
    # partner's mean and E_f by quadrature the updates are deterministic and
    # the two fits must agree; the weights still enter every sum: node
    # statistics, the global mean's fixed point, the ELBO, the start of mu,
    # the probe loss and (ordinal) the thresholds' objective.
    from skvi.models.matrix_factorization import nonconjugate

    side_pass = nonconjugate.GLMRatings.side_pass
    calls = []

    def no_noise(self, mf, name, side, params, want_node_stats, rng=None):
        calls.append(name)
        return side_pass(self, mf, name, side, params, want_node_stats, rng=_NoPartnerNoise())

    monkeypatch.setattr(nonconjugate.GLMRatings, "side_pass", no_noise)
    X, y, w = _weighted_ratings(seed=4)
    target = {
        "bernoulli": (y > 3.0).astype(int),
        "poisson": np.round(np.exp(0.4 * (y - 3.0))),
        "ordinal": np.clip(np.round(y - 1.0), 0, 4),
    }[likelihood]
    # The Monte Carlo strategy (expectation='gaussian' has its own weights
    # test in test_mf_moment_matched.py).
    kw = dict(
        n_components=2,
        likelihood=likelihood,
        expectation="quadrature",
        max_iter=8,
        tol=0,
        random_state=0,
    )
    weighted = SVIMatrixFactorization(**kw).fit(X, target, sample_weight=w)
    repeated = SVIMatrixFactorization(**kw).fit(np.repeat(X, w, axis=0), np.repeat(target, w))
    assert calls
    _assert_same_posterior(weighted, repeated)
    _assert_same_probe_loss(weighted, X, target, w)
    np.testing.assert_allclose(weighted.lower_bounds_, repeated.lower_bounds_, rtol=1e-10)
    if likelihood == "ordinal":
        np.testing.assert_allclose(
            weighted.likelihood_.thresholds, repeated.likelihood_.thresholds, rtol=1e-8
        )
    assert weighted.n_samples_seen_ == w.sum()


def test_partial_fit_sample_weight_counts_the_weight_sum():
    X, y, w = _weighted_ratings(seed=5)
    parts = np.array_split(np.random.RandomState(0).permutation(len(y)), 3)
    # Several minibatches per call: n_samples_seen_ is the running weight sum.
    mf = SVIMatrixFactorization(2, batch_size=40, random_state=0)
    seen = []
    for p in parts:
        mf.partial_fit(X[p], y[p], sample_weight=w[p])
        seen.append(mf.n_samples_seen_)
    np.testing.assert_allclose(seen, np.cumsum([w[p].sum() for p in parts]))
    # With one minibatch per call, every N / |S| and N_i / C_i of the stream
    # is that of the repeated ratings, even with weights that change from
    # call to call (N_i and C_i count weights): the same steps.  Before the
    # engine counted weights into N_i, the user means differed by about 20%.
    a = SVIMatrixFactorization(2, batch_size=10**4, random_state=0)
    b = SVIMatrixFactorization(2, batch_size=10**4, random_state=0)
    for p in parts:
        a.partial_fit(X[p], y[p], sample_weight=w[p])
        b.partial_fit(np.repeat(X[p], w[p], axis=0), np.repeat(y[p], w[p]))
    assert a.n_samples_seen_ == b.n_samples_seen_ == w.sum()
    _assert_same_posterior(a, b)
    assert a.noise_precision_ == pytest.approx(b.noise_precision_, rel=1e-8)
    # A single step on weights in {0, ..., 3} is the step on the repeated ratings.
    c = SVIMatrixFactorization(2, batch_size=10**4, random_state=0).partial_fit(
        X, y, sample_weight=w
    )
    d = SVIMatrixFactorization(2, batch_size=10**4, random_state=0).partial_fit(
        np.repeat(X, w, axis=0), np.repeat(y, w)
    )
    assert c.n_samples_seen_ == w.sum()
    _assert_same_posterior(c, d)


def test_sample_weight_validation():
    X, y, w = _weighted_ratings()
    mf = SVIMatrixFactorization(2, max_iter=2, random_state=0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        mf.partial_fit(X, y, sample_weights=w)
    with pytest.raises(TypeError, match="unexpected keyword"):
        mf.fit(X, y, weight=w)
    for method in (mf.fit, mf.partial_fit):
        with pytest.raises(ValueError, match="shape"):
            method(X, y, sample_weight=w[:-1])
        with pytest.raises(ValueError, match="1D array"):
            method(X, y, sample_weight=np.ones((len(y), 2)))
        with pytest.raises(ValueError, match="Negative"):
            method(X, y, sample_weight=np.where(np.arange(len(y)) == 3, -1.0, 1.0))
        with pytest.raises(ValueError, match="zero"):
            method(X, y, sample_weight=np.zeros(len(y)))
        with pytest.raises(ValueError, match="NaN"):
            method(X, y, sample_weight=np.full(len(y), np.nan))
    # A ratings matrix takes one weight per stored entry, not per user.
    R = sp.csr_matrix((y, (X[:, 0], X[:, 1])))
    with pytest.raises(ValueError, match="shape"):
        SVIMatrixFactorization(2).fit(R, sample_weight=np.ones(R.shape[0]))


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli", "poisson", "ordinal"])
def test_partial_fit_after_fit_adds_a_new_user(small, likelihood):
    # A fitted model continues on a stream that names a new user: its node
    # is added and takes its first step (partial_fit after fit raised
    # AttributeError as soon as an id was new).  For the Gaussian model, a
    # unit step of the joint order is the new user's Bayesian linear
    # regression posterior given the items and the global mean before it.
    from skvi.schedules import Constant

    X, y, _, _ = small
    if likelihood == "bernoulli":
        y = (y > np.median(y)).astype(float)
    elif likelihood in ("poisson", "ordinal"):
        y = np.clip(np.round(y), 1, 5)
    alpha, tau, k = 2.0, 4.0, 2
    kw = dict(noise_precision=tau) if likelihood == "gaussian" else {}
    # (A batch fit takes unit steps; the schedule is the stream's.)
    mf = quiet_fit(
        SVIMatrixFactorization(
            k,
            likelihood=likelihood,
            factor_precision=alpha,
            update_order="joint",
            max_iter=5,
            learning_rate=Constant(1.0),
            total_samples=float(X.shape[0]),
            random_state=0,
            **kw,
        ),
        X,
        y,
    )
    items = np.arange(6)
    new_user = np.max(X[:, 0]) + 1
    pairs = np.column_stack([np.full(items.shape[0], new_user), items])
    ratings = y[:6]
    m, S, mu = mf.item_mean_[items].copy(), mf.item_covariance_[items].copy(), mf.global_mean_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mf.partial_fit(pairs, ratings)
    assert mf.user_mean_.shape[0] == mf.user_ids_.shape[0] and mf.user_ids_[-1] == new_user
    got = mf.user_mean_[-1]
    assert np.all(np.isfinite(got)) and np.any(got != 0.0)
    if likelihood != "gaussian":
        return
    design = np.hstack([m[:, :k], np.ones((items.shape[0], 1))])
    extra = np.zeros((k + 1, k + 1))
    extra[:k, :k] = S[:, :k, :k].sum(axis=0)
    cross = np.zeros(k + 1)
    cross[:k] = S[:, :k, k].sum(axis=0)
    precision = alpha * np.eye(k + 1) + tau * (design.T @ design + extra)
    mean = np.linalg.solve(precision, tau * (design.T @ (ratings - mu - m[:, k]) - cross))
    np.testing.assert_allclose(got, mean, rtol=1e-8, atol=1e-10)
