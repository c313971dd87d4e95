"""Non-conjugate matrix factorization (seed 002, section 3.6) against references."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.exceptions import ConvergenceWarning

from skvi import SVIMatrixFactorization
from skvi.likelihoods import Gaussian, Ordinal


def quiet_fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args)


def make_latent(n_users, n_items, k, density, seed, scale=1.0):
    rng = np.random.RandomState(seed)
    U = scale * rng.normal(size=(n_users, k))
    V = rng.normal(size=(n_items, k))
    b = 0.5 * rng.normal(size=n_users)
    c = 0.5 * rng.normal(size=n_items)
    X = np.argwhere(rng.rand(n_users, n_items) < density)
    f = b[X[:, 0]] + c[X[:, 1]] + np.sum(U[X[:, 0]] * V[X[:, 1]], axis=1)
    return X, f, rng


def _gaussian_pair(covariance, max_iter, mc_iter=None, cls=SVIMatrixFactorization):
    X, f, rng = make_latent(40, 30, 2, 0.5, seed=3)
    tau = 4.0
    y = 3.0 + f + rng.normal(size=f.shape) / np.sqrt(tau)
    common = dict(
        n_components=2,
        covariance=covariance,
        factor_precision=1.0,
        algorithm="mc-ssvi",
        learning_method="batch",
        tol=0,
        random_state=0,
    )
    exact = quiet_fit(cls(noise_precision=tau, max_iter=max_iter, **common), X, y)
    mc = quiet_fit(
        cls(
            likelihood=Gaussian(noise_variance=1 / tau),
            expectation="quadrature",
            n_mc_samples=3000,
            max_iter=max_iter if mc_iter is None else mc_iter,
            **common,
        ),
        X,
        y,
    )
    return X, y, exact, mc


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_gaussian_likelihood_through_mc_path_equals_conjugate_step(covariance, prior_start_mf):
    # With a Gaussian likelihood E[l''] = -tau exactly, so the Monte-Carlo
    # target of seed 002 (eqs. 48-51) is the conjugate closed form with
    # E[x x^T] replaced by a sample average: one rho = 1 step from the same
    # start lands on the conjugate coordinate-ascent step (the global mean
    # and the users, updated first; the items, updated from the users'
    # slightly different result, are compared in the next test).  The start
    # is the prior: from batch fit's tight start the partners' random means
    # are as small as their spread, and the relative Monte-Carlo error of
    # one step is larger than the tolerance below allows for 3000 draws.
    _, _, exact, mc = _gaussian_pair(covariance, 1, cls=prior_start_mf)
    assert mc.global_mean_ == pytest.approx(exact.global_mean_, abs=1e-3)
    for attr in ("user_mean_", "user_covariance_"):
        a, b = getattr(mc, attr), getattr(exact, attr)
        assert np.max(np.abs(a - b)) < 0.03 * np.max(np.abs(b)), attr


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_gaussian_likelihood_mc_targets_equal_closed_form(covariance):
    # At a fitted posterior, every user's and item's Monte-Carlo statistics
    # equal the closed-form conjugate ones (seed 002: "identical to the
    # closed-form update of [22]") within the Monte-Carlo error.
    from skvi.models.matrix_factorization import nodes

    X, y, exact, mc = _gaussian_pair(covariance, 10, mc_iter=1)
    data = nodes.Ratings(X[:, 0].astype(np.int64), X[:, 1].astype(np.int64), y)
    for name in ("users", "items"):
        h1, P1, w1 = exact._node_stats(name, nodes.prepare(data), exact.natural_params_)
        h2, P2, w2 = mc._node_stats(name, nodes.prepare(data), exact.natural_params_)
        # 3000 partner draws per rating: Monte-Carlo errors of 0.1-0.3%.
        assert np.max(np.abs(w2 * h2 - w1 * h1)) < 5e-3 * np.max(np.abs(w1 * h1))
        assert np.max(np.abs(w2 * P2 - w1 * P1)) < 5e-3 * np.max(np.abs(w1 * P1))


def _logistic_vi_optimum(x, y, offset, offset_var, prior_precision):
    """Gaussian VI of Bayesian logistic regression by direct ELBO ascent.

    ``prior_precision``: a vector (ARD's diagonal) or a matrix (a Wishart's
    ``E[Lambda]``) of the zero-mean Gaussian prior.
    """
    d = x.shape[1]
    P = np.diag(prior_precision) if np.ndim(prior_precision) == 1 else prior_precision
    logdet_p = np.linalg.slogdet(P)[1]
    z, w = np.polynomial.hermite.hermgauss(60)
    z, w = np.sqrt(2) * z, w / np.sqrt(np.pi)
    tril = np.tril_indices(d)
    sign = 2 * y - 1

    def negative_elbo(theta):
        m = theta[:d]
        L = np.zeros((d, d))
        L[tril] = theta[d:]
        S = L @ L.T
        mean = x @ m + offset
        sd = np.sqrt(np.einsum("ja,ab,jb->j", x, S, x) + offset_var)
        e_log = log_expit(sign[:, None] * (mean[:, None] + sd[:, None] * z)) @ w
        kl = 0.5 * (
            np.sum(P * S) + m @ P @ m - d - logdet_p - 2 * np.sum(np.log(np.abs(np.diag(L))))
        )
        return kl - np.sum(e_log)

    theta0 = np.concatenate([np.zeros(d), np.eye(d)[tril]])
    res = minimize(negative_elbo, theta0, method="BFGS", options={"gtol": 1e-9, "maxiter": 5000})
    L = np.zeros((d, d))
    L[tril] = res.x[d:]
    return res.x[:d], L @ L.T


@pytest.mark.parametrize("factor_prior", ["wishart", "ard"])
@pytest.mark.parametrize("expectation", ["quadrature", "gaussian"])
def test_logistic_fold_in_is_the_gaussian_vi_optimum(expectation, factor_prior):
    # transform() folds a new user in by the fixed-point iterations of seed
    # 002 (eq. 51 and the natural mean step).  With the items made
    # deterministic, the user's node is a Bayesian logistic regression with
    # descriptors (v, 1) and offset mu + c; its Gaussian VI optimum, found
    # here by maximising the ELBO directly, is the reference, whether the
    # model was fitted with partner draws or with expectation='gaussian'.
    X, f, rng = make_latent(60, 40, 2, 0.5, seed=4)
    y = (rng.rand(f.shape[0]) < expit(f)).astype(int)
    mf = quiet_fit(
        SVIMatrixFactorization(
            n_components=2,
            likelihood="bernoulli",
            expectation=expectation,
            factor_prior=factor_prior,
            max_iter=5,
            tol=0,
            random_state=0,
        ),
        X,
        y,
    )
    # Collapse every item's posterior onto its mean.
    eta1, eta2 = mf.natural_params_["items"]
    mean = np.linalg.solve(-2 * eta2, eta1[..., None])[..., 0]
    big = 1e9 * np.eye(3)
    mf.natural_params_["items"] = (mean @ big, np.broadcast_to(-0.5 * big, eta2.shape).copy())

    items = rng.choice(40, size=25, replace=False)
    truth = rng.normal(size=2)
    f_new = mean[items, :2] @ truth + mean[items, 2]
    r = (rng.rand(25) < expit(f_new)).astype(int)
    # Explicit zeros are stored entries (observed 0 ratings).
    R = sp.csr_matrix((r.astype(float), (np.zeros(25, int), items)), shape=(1, 40))
    assert R.nnz == 25
    folded = mf.transform(R)[0]

    x = np.column_stack([mean[items, :2], np.ones(25)])
    offset = mf.global_mean_ + mean[items, 2]
    m_ref, _ = _logistic_vi_optimum(x, r, offset, mf.global_mean_variance_, mf.user_precision_)
    np.testing.assert_allclose(folded, m_ref[:2], atol=1e-4)


def test_binary_pmf_approaches_the_oracle():
    # Ratings drawn from a logistic PMF: the held-out zero-one error and NLL
    # of the fitted model come close to those of the generating f.
    X, f, rng = make_latent(150, 120, 2, 0.5, seed=5, scale=1.5)
    y = (rng.rand(f.shape[0]) < expit(f)).astype(int)
    test = rng.rand(f.shape[0]) < 0.2
    mf = quiet_fit(
        SVIMatrixFactorization(n_components=2, likelihood="bernoulli", max_iter=15, random_state=0),
        X[~test],
        y[~test],
    )
    p_true = expit(f[test])
    err_oracle = np.mean((p_true > 0.5) != y[test])
    nll_oracle = -np.mean(np.where(y[test] == 1, np.log(p_true), np.log1p(-p_true)))
    err = np.mean(mf.predict(X[test]) != y[test])
    nll = -mf.log_predictive_density(X[test], y[test])
    # Chance is 0.5 error and 0.69 NLL.
    assert err < err_oracle + 0.04
    assert nll < nll_oracle + 0.05
    proba = mf.predict_proba(X[test])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], mf.predict_mean(X[test]))
    # A classifier: predict gives the more probable label, of y's type, and
    # score is its accuracy.
    labels = mf.predict(X[test])
    assert labels.dtype == y.dtype
    np.testing.assert_array_equal(labels, np.where(proba[:, 1] > 0.5, 1, 0))
    assert mf.score(X[test], y[test]) == pytest.approx(np.mean(labels == y[test]), rel=1e-12)


def test_ordinal_thresholds_are_learned():
    X, f, rng = make_latent(100, 60, 1, 0.6, seed=6)
    truth = Ordinal(thresholds=[-1.5, -0.5, 1.0, 1.6], slope=2.0)
    proba = truth.category_probabilities(f)
    y = 1 + (rng.rand(f.shape[0], 1) > np.cumsum(proba, axis=1)).sum(axis=1)  # ratings 1..5
    start = Ordinal(thresholds=[-1.5, -0.5, 0.5, 1.5], slope=2.0)
    fits = [
        quiet_fit(
            SVIMatrixFactorization(
                n_components=1, likelihood=start, max_iter=10, random_state=seed
            ),
            X,
            y,
        )
        for seed in range(3)
    ]
    mf = fits[0]
    np.testing.assert_array_equal(mf.classes_, [1, 2, 3, 4, 5])
    # The learned gaps approach the generating ones (1.0, 1.5, 0.6) from the
    # equal-gap start (1, 1, 1), averaged over three fits' Monte Carlo draws
    # (a fit's own spread was about 0.02); the input instance is left untouched.
    gaps = np.mean([np.diff(m.likelihood_.thresholds) for m in fits], axis=0)
    np.testing.assert_allclose(gaps, np.diff(truth.thresholds), rtol=0.1)
    np.testing.assert_array_equal(start.thresholds, [-1.5, -0.5, 0.5, 1.5])
    # Expected rating and category probabilities agree.
    p = mf.predict_proba(X[:50])
    np.testing.assert_allclose(p @ mf.classes_, mf.predict_mean(X[:50]))
    np.testing.assert_array_equal(mf.predict(X[:50]), mf.classes_[np.argmax(p, axis=1)])


@pytest.mark.parametrize("algorithm", ["mc-ssvi", "h-mc-ssvi", "s-dsvi"])
def test_poisson_pmf_algorithms_fit_counts(algorithm):
    X, f, rng = make_latent(80, 60, 2, 0.5, seed=7, scale=0.5)
    y = rng.poisson(np.exp(1.0 + 0.5 * f))
    test = rng.rand(y.shape[0]) < 0.2
    mf = quiet_fit(
        SVIMatrixFactorization(
            n_components=2,
            likelihood="poisson",
            algorithm=algorithm,
            gradient_learning_rate=0.3,
            max_iter=40,
            random_state=0,
        ),
        X[~test],
        y[~test],
    )
    assert not hasattr(mf, "predict_proba")
    rate = np.exp(1.0 + 0.5 * f[test])
    mean, std = mf.predict(X[test], return_std=True)
    baseline = np.mean((y[~test].mean() - rate) ** 2)
    # Closer to the true rates than the constant mean-count predictor.
    assert np.mean((mean - rate) ** 2) < 0.6 * baseline
    assert np.all(std**2 >= mean * 0.99)  # Poisson: variance at least the mean


def test_softplus_count_pmf_fits_large_counts():
    # likelihood='poisson-softplus': rates log(1 + e^f) of up to ~40.
    from skvi.likelihoods import Poisson

    X, f, rng = make_latent(80, 60, 2, 0.5, seed=9, scale=0.5)
    truth = np.logaddexp(0.0, 20.0 + 8.0 * f)
    y = rng.poisson(truth)
    test = rng.rand(y.shape[0]) < 0.2
    mf = quiet_fit(
        SVIMatrixFactorization(
            n_components=2, likelihood="poisson-softplus", max_iter=40, random_state=0
        ),
        X[~test],
        y[~test],
    )
    assert mf.likelihood_ == Poisson("softplus")
    mean = mf.predict(X[test])
    baseline = np.mean((y[~test].mean() - truth[test]) ** 2)
    assert np.mean((mean - truth[test]) ** 2) < 0.6 * baseline


def test_partial_fit_stream_with_classes():
    X, f, rng = make_latent(60, 40, 2, 0.5, seed=8)
    y = np.where(rng.rand(f.shape[0]) < expit(2 * f), 5, 1)
    mf = SVIMatrixFactorization(
        n_components=2, likelihood="bernoulli", batch_size=200, random_state=0
    )
    first = y[:100] == 5
    with pytest.raises(ValueError, match="two rating values"):
        SVIMatrixFactorization(likelihood="bernoulli").partial_fit(X[:100][first], y[:100][first])
    for epoch in range(3):
        for batch in np.array_split(np.arange(y.shape[0]), 6):
            mf.partial_fit(X[batch], y[batch], classes=[1, 5])
    np.testing.assert_array_equal(mf.classes_, [1, 5])
    acc = np.mean(mf.predict(X) == y)
    assert acc > 0.75


def test_bad_targets_raise():
    X = np.array([[0, 0], [1, 1], [0, 1]])
    with pytest.raises(ValueError, match="two rating values"):
        SVIMatrixFactorization(likelihood="bernoulli").fit(X, [1, 2, 3])
    with pytest.raises(ValueError, match="Poisson"):
        SVIMatrixFactorization(likelihood="poisson").fit(X, [1, -2, 3])
    mf = quiet_fit(SVIMatrixFactorization(likelihood="ordinal", max_iter=2), X, [1, 2, 3])
    with pytest.raises(ValueError, match="not among the classes"):
        mf.score(X, [1, 2, 4])
    with pytest.raises(ValueError, match="categories"):
        SVIMatrixFactorization(likelihood=Ordinal(n_categories=4)).fit(X, [1, 2, 3])


def test_mc_ssvi_batch_steps_do_not_blow_up_on_binary_movielens(shared_data):
    # Binary MovieLens-100k (ratings 1 and 5), users and items as their
    # codes: with random_state=2 MC-SSVI's batch fixed-point steps made the
    # means overflow (test error 0.77, NaN NLL, 342 rejected steps, 100 s).
    # Batch steps of the non-conjugate likelihoods are now tested on the
    # probe like online ones.
    rows = np.loadtxt(shared_data("movielens-100k", "u.data"), dtype=np.int64, delimiter="\t")
    rows = rows[(rows[:, 2] == 1) | (rows[:, 2] == 5)]
    test = np.random.RandomState(0).rand(rows.shape[0]) < 0.2
    codes = np.column_stack([np.unique(rows[:, j], return_inverse=True)[1] for j in (0, 1)])
    mf = quiet_fit(
        SVIMatrixFactorization(
            n_components=10,
            likelihood="bernoulli",
            algorithm="mc-ssvi",
            tol=0,
            max_iter=20,
            random_state=2,
        ),
        codes[~test],
        rows[~test, 2],
    )
    proba = mf.predict_proba(codes[test])[:, 1]
    truth = rows[test, 2] == 5
    assert np.mean((proba > 0.5) != truth) < 0.13
    nll = -mf.log_predictive_density(codes[test], rows[test, 2])
    assert np.isfinite(nll) and nll < 0.3
