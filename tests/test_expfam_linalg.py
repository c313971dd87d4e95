"""The family layer's Gaussian natural-to-moments map and factorisations, against numpy's inverse.

The references are independent of the Cholesky factorisations the
functions use: ``numpy.linalg.inv`` and ``numpy.linalg.slogdet`` (LU) of
random symmetric positive definite matrices, and closed forms.
"""

import numpy as np
import pytest

from skvi.expfam import (
    GaussianMeanCovariance,
    MultivariateGaussian,
    cholesky_factor,
    gaussian_moments,
    inverse_and_logdet,
    psd_projection,
    psd_root,
    small_gaussian_moments,
    spd_inverse,
    spd_logdet,
    symmetric_eigenvalues,
)
from skvi.expfam import linalg
from skvi.expfam.linalg import SMALL_INVERSE


def _spd(rng, batch, d):
    A = rng.normal(size=batch + (d, d))
    return A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(d)


@pytest.mark.parametrize("batch, d", [((), 1), ((), 3), ((5,), 4), ((2, 3), 2)])
def test_gaussian_moments_equal_numpy_inverse(batch, d):
    rng = np.random.RandomState(d)
    precision = _spd(rng, batch, d)
    mean = rng.normal(size=batch + (d,))
    eta1 = (precision @ mean[..., None])[..., 0]
    q = gaussian_moments(eta1, -0.5 * precision, factor=True)
    assert isinstance(q, GaussianMeanCovariance)
    inverse = np.linalg.inv(precision)
    np.testing.assert_allclose(q.covariance, inverse, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(q.covariance, np.swapaxes(q.covariance, -1, -2))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(q.logdet_precision, np.linalg.slogdet(precision)[1], rtol=1e-12)
    # The factor is lower triangular and squares to the covariance.
    np.testing.assert_array_equal(q.factor, np.tril(q.factor))
    np.testing.assert_allclose(q.factor @ np.swapaxes(q.factor, -1, -2), inverse, rtol=1e-10)
    assert gaussian_moments(eta1, -0.5 * precision).factor is None
    # The factor without the log-determinant: the precision inverted directly.
    draw = gaussian_moments(eta1, -0.5 * precision, factor=True, logdet=False)
    assert draw.logdet_precision is None
    np.testing.assert_allclose(draw.covariance, inverse, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(draw.covariance, np.swapaxes(draw.covariance, -1, -2))
    np.testing.assert_allclose(draw.mean, mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(draw.factor @ np.swapaxes(draw.factor, -1, -2), inverse, rtol=1e-10)
    assert gaussian_moments(eta1, -0.5 * precision, logdet=False).logdet_precision is None


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("batch, d", [((7,), 1), ((5,), 4), ((2, 3), 10), ((4,), 40)])
def test_small_gaussian_moments_equal_numpy_inverse_and_test_validity(
    batch, d, compiled, monkeypatch
):
    if not compiled:
        monkeypatch.setattr(linalg, "_gaussian_batch", None)
    elif linalg._gaussian_batch is None:
        pytest.skip("the compiled kernel is not built")
    rng = np.random.RandomState(d)
    precision = _spd(rng, batch, d)
    mean = rng.normal(size=batch + (d,))
    eta1 = (precision @ mean[..., None])[..., 0]
    eta2 = -0.5 * precision
    q = small_gaussian_moments(eta1, eta2)
    inverse = np.linalg.inv(precision)
    second = inverse + mean[..., :, None] * mean[..., None, :]
    assert q.valid.dtype == bool and q.valid.shape == batch and q.valid.all()
    np.testing.assert_allclose(q.mean, mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(q.second_moment, second, rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(q.second_moment, np.swapaxes(q.second_moment, -1, -2))
    np.testing.assert_allclose(q.logdet_precision, np.linalg.slogdet(precision)[1], rtol=1e-12)
    # Invalid Gaussians, as MultivariateGaussian.valid_natural says: NaN moments.
    bad1, bad2 = eta1.copy(), eta2.copy()
    flat1, flat2 = bad1.reshape(-1, d), bad2.reshape(-1, d, d)
    flat2[0] = 0.5 * np.eye(d)  # a negative definite precision
    flat1[1, 0] = np.nan
    if d > 1:
        flat2[2, 0, 1] += 1.0  # not symmetric
    q = small_gaussian_moments(bad1, bad2)
    want = MultivariateGaussian.valid_natural(bad1, bad2)
    np.testing.assert_array_equal(q.valid, want)
    assert not want.reshape(-1)[: 3 if d > 1 else 2].any() and want.reshape(-1)[3:].all()
    assert np.isnan(q.mean[~want]).all() and np.isnan(q.logdet_precision[~want]).all()
    np.testing.assert_allclose(q.mean[want], mean[want], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(q.second_moment[want], second[want], rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="small_gaussian_moments"):
        small_gaussian_moments(eta1[..., :-1], eta2)


def test_gaussian_moments_symmetrise_eta2_and_broadcast():
    rng = np.random.RandomState(0)
    precision = _spd(rng, (), 3)
    skew = rng.normal(size=(3, 3))
    skew = skew - skew.T
    eta1 = rng.normal(size=(4, 3))  # four means under one precision
    q = gaussian_moments(eta1, -0.5 * precision + skew)
    np.testing.assert_allclose(q.mean, eta1 @ np.linalg.inv(precision), rtol=1e-10)
    assert q.covariance.shape == (4, 3, 3) and q.logdet_precision.shape == (4,)


def test_gaussian_moments_diagonal_closed_form():
    eta1 = np.array([[2.0, -3.0], [0.5, 1.0]])
    eta2 = np.array([[-1.0, -0.25], [-2.0, -0.5]])  # precisions 2, 0.5, 4, 1
    q = gaussian_moments(eta1, eta2, diagonal=True, factor=True)
    np.testing.assert_allclose(q.covariance, [[0.5, 2.0], [0.25, 1.0]])
    np.testing.assert_allclose(q.mean, [[1.0, -6.0], [0.125, 1.0]])
    np.testing.assert_allclose(q.logdet_precision, [np.log(1.0), np.log(4.0)])
    np.testing.assert_allclose(q.factor, np.sqrt([[0.5, 2.0], [0.25, 1.0]]))
    assert gaussian_moments(eta1, eta2, diagonal=True, logdet=False).logdet_precision is None
    # As the full map of the same diagonal precisions.
    full = gaussian_moments(eta1, eta2[:, :, None] * np.eye(2))
    np.testing.assert_allclose(q.mean, full.mean, rtol=1e-14)
    np.testing.assert_allclose(q.logdet_precision, full.logdet_precision, atol=1e-14)
    with pytest.raises(np.linalg.LinAlgError):
        gaussian_moments(eta1, -eta2, diagonal=True)


def test_gaussian_moments_keep_float32():
    precision = np.array([[2.0, 0.5], [0.5, 1.0]], dtype=np.float32)
    q = gaussian_moments(np.ones(2, dtype=np.float32), -0.5 * precision)
    assert q.mean.dtype == q.covariance.dtype == np.float32
    np.testing.assert_allclose(q.covariance, np.linalg.inv(precision.astype(float)), rtol=1e-5)


@pytest.mark.parametrize("d", [SMALL_INVERSE - 3, SMALL_INVERSE + 6])
def test_gaussian_moments_lapack_route_and_memo_equal_numpy(d):
    # Small precisions by solves of the identity, large ones by potri.
    rng = np.random.RandomState(d)
    precision = _spd(rng, (), d) + d * np.eye(d)
    eta1 = rng.normal(size=d)
    memo = []
    other = precision + np.eye(d)
    diagonal = np.diag(rng.uniform(1.0, 2.0, size=d))
    for e1, p, kept in (
        (eta1, precision, 1),
        (-eta1, precision.copy(), 1),  # the kept factorisation, another mean
        (eta1, other, 2),
        (eta1, diagonal, 2),  # no off-diagonal entries: no factorisation kept
    ):
        mean, cov, logdet, factor = gaussian_moments(e1, -0.5 * p, lapack=True, memo=memo)
        inverse = np.linalg.inv(p)
        np.testing.assert_allclose(cov, inverse, rtol=0, atol=1e-12 * np.abs(inverse).max())
        np.testing.assert_array_equal(cov, cov.T)
        np.testing.assert_allclose(mean, inverse @ e1, rtol=0, atol=1e-12 * np.abs(mean).max())
        assert isinstance(logdet, float)
        assert logdet == pytest.approx(np.linalg.slogdet(p)[1], rel=1e-12)
        assert factor is None and len(memo) == kept
    with pytest.raises(ValueError, match="one Gaussian"):
        gaussian_moments(np.ones((2, 3)), -np.eye(3), lapack=True)


def test_gaussian_moments_memo_keeps_memo_size_factorisations():
    memo = []
    for scale in (1.0, 2.0, 3.0, 4.0):
        p = scale * np.array([[2.0, 0.5], [0.5, 1.0]])
        gaussian_moments(np.ones(2), -0.5 * p, lapack=True, memo=memo, memo_size=2)
    assert len(memo) == 2
    np.testing.assert_array_equal(memo[0][0], -0.5 * 4.0 * np.array([[2.0, 0.5], [0.5, 1.0]]))


def test_gaussian_moments_refuse_bad_input():
    with pytest.raises(np.linalg.LinAlgError):
        gaussian_moments(np.zeros(2), np.eye(2))  # a negative definite precision
    with pytest.raises(np.linalg.LinAlgError):
        gaussian_moments(np.zeros(2), np.eye(2), lapack=True)
    with pytest.raises(ValueError, match="finite"):
        gaussian_moments(np.array([np.nan, 0.0]), -np.eye(2))
    with pytest.raises(ValueError, match="eta2"):
        gaussian_moments(np.zeros(3), -np.eye(2))


def test_moments_from_natural_is_the_same_map():
    rng = np.random.RandomState(3)
    precision = _spd(rng, (6,), 3)
    eta1 = rng.normal(size=(6, 3))
    ours = gaussian_moments(eta1, -0.5 * precision)
    family = MultivariateGaussian.moments_from_natural(eta1, -0.5 * precision)
    for a, b in zip(family, ours[:3]):
        np.testing.assert_array_equal(a, b)


def test_cholesky_factor_logdet_and_inverse_equal_numpy():
    rng = np.random.RandomState(1)
    a = _spd(rng, (4,), 5)
    L = cholesky_factor(a)
    np.testing.assert_array_equal(L, np.tril(L))
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), a, rtol=1e-12)
    np.testing.assert_allclose(spd_logdet(a), np.linalg.slogdet(a)[1], rtol=1e-12)
    np.testing.assert_allclose(spd_inverse(a), np.linalg.inv(a), rtol=1e-9, atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_factor(-a)
    with pytest.raises(np.linalg.LinAlgError):
        spd_logdet(-a)


def test_cholesky_factor_with_jitter_factorises_a_singular_matrix():
    v = np.array([1.0, 2.0, -1.0])
    singular = np.stack([np.outer(v, v), np.eye(3)])  # rank one, and one that needs none
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_factor(singular)
    L = cholesky_factor(singular, jitter=True)
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), singular, atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="semi-definite"):
        cholesky_factor(-np.eye(2), jitter=True)


def test_symmetric_eigenvalues_and_psd_projection_closed_forms():
    # [[a, b], [b, a]] has eigenvalues a - b and a + b (vectors (1, -1), (1, 1)).
    a, b = 1.0, 2.0
    m = np.array([[a, b], [b, a]])
    np.testing.assert_allclose(symmetric_eigenvalues(m), [a - b, a + b])
    # Clipping -1 to 0 keeps (a + b) u u^T with u = (1, 1) / sqrt(2).
    np.testing.assert_allclose(psd_projection(m), 1.5 * np.ones((2, 2)), atol=1e-14)
    rng = np.random.RandomState(2)
    psd = _spd(rng, (3,), 4)
    np.testing.assert_allclose(psd_projection(psd), psd, rtol=1e-10)
    np.testing.assert_allclose(psd_projection(-psd), 0.0, atol=1e-12)


def test_psd_root_is_numpys_cholesky_factor_or_a_root_of_a_singular_matrix():
    rng = np.random.RandomState(3)
    pd = _spd(rng, (4,), 3)
    np.testing.assert_array_equal(psd_root(pd), np.linalg.cholesky(pd))
    v = np.array([1.0, 2.0, -1.0])
    stack = np.concatenate([pd, [np.outer(v, v), np.zeros((3, 3))]])  # rank one, and zero
    R = psd_root(stack)
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), stack, atol=1e-12)
    # The positive definite ones keep their Cholesky factor.
    np.testing.assert_array_equal(R[:4], np.linalg.cholesky(pd))
    np.testing.assert_array_equal(R[-1], 0.0)


def test_inverse_and_logdet_equal_numpy_and_refuse_a_singular_map():
    R = np.random.RandomState(4).normal(size=(4, 4))
    inverse, logdet = inverse_and_logdet(R)
    np.testing.assert_allclose(inverse @ R, np.eye(4), atol=1e-12)
    assert logdet == pytest.approx(np.log(abs(np.linalg.det(R))), rel=1e-12)
    assert inverse_and_logdet(np.ones((3, 3))) == (None, -np.inf)


@pytest.mark.parametrize(
    "fn", [cholesky_factor, spd_logdet, spd_inverse, symmetric_eigenvalues, psd_projection]
)
def test_the_factorisations_refuse_non_square_or_non_finite_matrices(fn):
    with pytest.raises(ValueError, match="square"):
        fn(np.ones((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        fn(np.array([[1.0, np.inf], [np.inf, 1.0]]))
