"""SVILinearRegression against the closed form, scikit-learn and its own batch fit."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ARDRegression, BayesianRidge

from skvi import SVILinearRegression


def _data(n=400, seed=0, noise=0.3):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    y = X @ np.array([1.5, -2.0, 0.0, 0.7]) + 1.0 + noise * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
def test_fixed_precisions_give_the_closed_form_posterior(sparse):
    # With alpha and lambda fixed only q(w, b) is left: one coordinate step
    # is the Gaussian posterior S = (Lambda_0 + alpha X^T X)^-1,
    # m = alpha S X^T y (intercept prior precision 1e-6).
    X, y = _data()
    alpha, lam = 8.0, 2.0
    reg = SVILinearRegression(noise_precision=alpha, weight_precision=lam, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(sp.csr_matrix(X) if sparse else X, y)
    Xd = np.hstack([X, np.ones((X.shape[0], 1))])
    precision = np.diag([lam] * 4 + [1e-6]) + alpha * Xd.T @ Xd
    S = np.linalg.inv(precision)
    m = alpha * S @ Xd.T @ y
    np.testing.assert_allclose(np.r_[reg.coef_, reg.intercept_], m, rtol=1e-10)
    np.testing.assert_allclose(reg.sigma_, S[:4, :4], rtol=1e-10, atol=1e-15)
    mean, std = reg.predict(X[:5], return_std=True)
    np.testing.assert_allclose(mean, Xd[:5] @ m, rtol=1e-10)
    np.testing.assert_allclose(
        std**2, np.einsum("ij,jk,ik->i", Xd[:5], S, Xd[:5]) + 1 / alpha, rtol=1e-10
    )


def test_learned_precisions_agree_with_bayesian_ridge():
    # BayesianRidge maximises the evidence over point estimates of alpha and
    # lambda; VB keeps Gamma posteriors.  With 400 rows the two agree: the
    # weights to 1e-5 relative, the precisions to 1% and the predictive
    # standard deviations to 1% (VB's q(alpha) spreads over its uncertainty).
    X, y = _data()
    reg = SVILinearRegression().fit(X, y)
    ref = BayesianRidge().fit(X, y)
    np.testing.assert_allclose(reg.coef_, ref.coef_, rtol=1e-5, atol=1e-6)
    assert reg.intercept_ == pytest.approx(ref.intercept_, rel=1e-5)
    assert reg.alpha_ == pytest.approx(ref.alpha_, rel=0.01)
    assert reg.lambda_ == pytest.approx(ref.lambda_, rel=0.01)
    mean, std = reg.predict(X[:20], return_std=True)
    ref_mean, ref_std = ref.predict(X[:20], return_std=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(std, ref_std, rtol=0.01)
    # Coordinate ascent: the ELBO never decreases.
    assert np.all(np.diff(reg.lower_bounds_) >= -1e-9 * np.abs(reg.lower_bounds_[1:]))
    assert reg.converged_


def test_ard_switches_off_the_irrelevant_feature_as_ard_regression_does():
    X, y = _data(n=1000, seed=1)
    reg = SVILinearRegression(ard=True).fit(X, y)
    ref = ARDRegression().fit(X, y)
    assert reg.lambda_.shape == (4,)
    # Feature 2 has no weight: its precision is far above the others'.
    assert reg.lambda_[2] > 50 * np.max(np.delete(reg.lambda_, 2))
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=0.01)


@pytest.mark.parametrize("method", ["online", "partial_fit"])
def test_online_and_streams_reach_the_batch_posterior(method):
    X, y = _data(n=4000, seed=2)
    batch = SVILinearRegression().fit(X, y)
    if method == "online":
        reg = SVILinearRegression(
            learning_method="online", batch_size=200, max_iter=30, tol=0, random_state=0
        ).fit(X, y)
    else:
        reg = SVILinearRegression(batch_size=200, total_samples=4000, random_state=0)
        for _ in range(30):
            reg.partial_fit(X, y)
    # Within a few posterior standard deviations of the batch means (SVI
    # noise of the last ~1/rho minibatches), the noise precision within 5%.
    sd = np.sqrt(np.diag(batch.sigma_))
    assert np.all(np.abs(reg.coef_ - batch.coef_) < 4 * sd)
    assert reg.alpha_ == pytest.approx(batch.alpha_, rel=0.05)


@pytest.mark.parametrize("ard", [False, True])
def test_sample_weight_two_is_the_row_twice(ard):
    rng = np.random.RandomState(21)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -0.5, 0.0] + 0.3 * rng.normal(size=60)
    w = rng.randint(0, 3, size=60).astype(float)
    rows = np.repeat(np.arange(60), w.astype(int))
    kw = dict(ard=ard, max_iter=500, tol=1e-14)
    weighted = SVILinearRegression(**kw).fit(X, y, sample_weight=w)
    repeated = SVILinearRegression(**kw).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weighted.sigma_, repeated.sigma_, rtol=1e-8, atol=1e-14)
    assert weighted.alpha_ == pytest.approx(repeated.alpha_, rel=1e-9)
    np.testing.assert_allclose(weighted.lambda_, repeated.lambda_, rtol=1e-8)
    assert weighted.lower_bound_ == pytest.approx(repeated.lower_bound_, rel=1e-9)
    # A stream counts a row of weight w as w rows.
    stream = SVILinearRegression(**kw).partial_fit(X, y, sample_weight=w)
    assert stream.n_samples_seen_ == pytest.approx(w.sum())
