"""The softmax (multinomial logistic) likelihood of a K-vector of linear predictors."""

import functools

import numpy as np
from scipy.special import logsumexp, ndtri
from scipy.stats import qmc
from sklearn.utils import check_random_state

from .base import _EXPECTATION_METHODS

__all__ = ["Softmax"]

#: Points of the deterministic rule used for the ELBO and the predictive.
PREDICTIVE_POINTS = 512


@functools.lru_cache(maxsize=32)
def _symmetric_normals(n_dims, n_points):
    """A fixed, antithetic quasi-Monte-Carlo rule for ``E_{N(0, I)}[g(z)]``.

    ``n_points`` (rounded up to an even number, at least ``2 (n_dims + 1)``) standard normal
    points: half from a scrambled Sobol sequence with a fixed seed through
    the normal quantile, half their negatives, whitened.  The pairs make the
    rule exact for every odd function, the whitening for every quadratic;
    equal weights
    keep every average of negative semi-definite Hessians negative
    semi-definite.  The array is cached and read-only.
    """
    # At least n_dims + 1 pairs, so that the points span every direction.
    half = max(n_dims + 1, -(-n_points // 2))
    m = int(np.ceil(np.log2(half)))
    u = qmc.Sobol(d=n_dims, scramble=True, seed=20260101).random_base2(m)[:half]
    z = ndtri(np.clip(u, 1e-12, 1 - 1e-12))
    z = np.concatenate([z, -z])
    # Whiten, so that the second moments are exactly those of N(0, I): with
    # the antithetic pairs the rule is then exact for every polynomial of
    # degree at most 3.
    chol = np.linalg.cholesky(z.T @ z / z.shape[0])
    z = np.linalg.solve(chol, z.T).T
    z.setflags(write=False)
    return z


def _log_softmax_parts(f):
    """``log sum_k exp(f_k)`` over the last axis (keepdims) and ``softmax(f)``."""
    top = f.max(axis=-1, keepdims=True)
    e = np.exp(f - top)
    total = e.sum(axis=-1, keepdims=True)
    return top + np.log(total), e / total


def _chunk_rows(n_classes, n_points):
    """Rows per chunk so that the (rows, points, K) arrays stay near 2 million entries."""
    return max(1, 2_000_000 // max(1, n_classes * int(n_points)))


def _covariance_root(cov):
    """A square root ``R`` with ``R R^T = cov`` for a stack of PSD matrices (eigh-based)."""
    values, vectors = np.linalg.eigh(cov)
    return vectors * np.sqrt(np.maximum(values, 0.0))[..., None, :]


class Softmax:
    """``p(y = k | f) = exp(f_k) / sum_j exp(f_j)`` for a K-vector ``f``.

    The multinomial logistic likelihood of :class:`skvi.SVILogisticRegression`
    with more than two classes.  Under a Gaussian ``q(f) = N(mean, cov)`` per
    row, :meth:`expectations` returns ``E[log p(y | f)]``, its gradient
    ``E[onehot(y) - softmax(f)]`` and its Hessian
    ``-E[diag(p) - p p^T]`` (``p = softmax(f)``), the quantities of the
    natural-gradient step of Monte Carlo structured SVI (Bonnet's and
    Price's theorems turn the derivatives in the Gaussian's mean and
    covariance into these expectations).  They are K-dimensional integrals:

    - ``method='mc'``: ``n_samples`` independent draws per row;
    - ``method='quadrature'``: a fixed antithetic quasi-Monte-Carlo rule of
      ``n_samples`` points (scrambled Sobol with a fixed seed, and the
      negatives), the same for every row and every call, so batch fits are
      deterministic.  Product Gauss-Hermite rules grow as ``n ** K``.

    The linear part ``E[f_y] = mean_y`` is exact in both; only the
    log-sum-exp is approximated.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Softmax
    >>> lik = Softmax()
    >>> mean, cov = np.zeros((1, 3)), np.eye(3)[None] * 1e-12
    >>> e_log, e1, e2 = lik.expectations(np.array([0]), mean, cov, method="quadrature")
    >>> round(float(e_log[0]), 6), e1.round(4)          # log(1/3) at a point mass
    (-1.098612, array([[ 0.6667, -0.3333, -0.3333]]))
    """

    discrete = True

    def logpdf(self, y, f):
        """``log p(y | f)`` for integer classes ``y`` of shape (n,) and ``f`` of shape (n, K)."""
        f = np.asarray(f, dtype=float)
        y = np.asarray(y).astype(np.intp)
        return f[np.arange(f.shape[0]), y] - logsumexp(f, axis=-1)

    def _points(self, mean, cov, method, n_samples, random_state):
        """Points ``f`` of shape (n, s, K) with equal weights."""
        mean = np.asarray(mean, dtype=float)
        root = _covariance_root(np.asarray(cov, dtype=float))
        n, k = mean.shape
        if method == "quadrature":
            z = _symmetric_normals(k, int(n_samples))
            return mean[:, None, :] + np.einsum("nkl,sl->nsk", root, z)
        if method == "mc":
            if isinstance(random_state, np.ndarray):  # the draws themselves
                z = random_state
            else:
                rng = (
                    random_state
                    if isinstance(random_state, np.random.Generator)
                    else check_random_state(random_state)
                )
                z = rng.standard_normal((n, int(n_samples), k))
            return mean[:, None, :] + np.einsum("nkl,nsl->nsk", root, z)
        raise ValueError(f"method must be one of {_EXPECTATION_METHODS}, got {method!r}.")

    def expectations(self, y, mean, cov, method="mc", n_samples=10, random_state=None):
        """``E_q[log p]``, ``E_q[d log p / df]`` and ``E_q[d^2 log p / df df^T]``.

        Parameters
        ----------
        y : ndarray of shape (n,)
            Class indices in ``0 .. K-1``.
        mean : ndarray of shape (n, K)
            Means of the Gaussian ``q(f)`` of each row.
        cov : ndarray of shape (n, K, K)
            Covariances of ``q(f)``.
        method : {'mc', 'quadrature'}, default='mc'
            Independent draws, or the fixed quasi-Monte-Carlo rule.
        n_samples : int, default=10
            Draws or rule points per row (the rule rounds up to even).
        random_state : int, RandomState, Generator or None
            For ``method='mc'``.

        Returns
        -------
        e_log : ndarray of shape (n,)
        e_d1 : ndarray of shape (n, K)
        e_d2 : ndarray of shape (n, K, K)
            Negative semi-definite.
        """
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        y = np.asarray(y).astype(np.intp)
        chunk = _chunk_rows(mean.shape[1], n_samples)
        if mean.shape[0] > chunk:
            parts = [
                self.expectations(
                    y[i : i + chunk], mean[i : i + chunk], cov[i : i + chunk],
                    method, n_samples, random_state,
                )
                for i in range(0, mean.shape[0], chunk)
            ]
            return tuple(np.concatenate(p) for p in zip(*parts))
        f = self._points(mean, cov, method, n_samples, random_state)
        lse, p = _log_softmax_parts(f)
        s = f.shape[1]
        p_mean = p.mean(axis=1)
        rows = np.arange(mean.shape[0])
        e_log = mean[rows, y] - lse[:, :, 0].mean(axis=1)
        e1 = -p_mean
        e1[rows, y] += 1.0
        e2 = np.einsum("nsk,nsl->nkl", p, p) / s
        e2[:, np.arange(mean.shape[1]), np.arange(mean.shape[1])] -= p_mean
        return e_log, e1, e2

    def expected_logpdf(self, y, mean, cov, method="quadrature", n_samples=PREDICTIVE_POINTS,
                        random_state=None):
        """``E_q[log p(y | f)]`` alone (the first output of :meth:`expectations`), shape (n,)."""
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        y = np.asarray(y).astype(np.intp)
        chunk = _chunk_rows(mean.shape[1], n_samples)
        out = np.empty(mean.shape[0])
        for i in range(0, mean.shape[0], chunk):
            rows = slice(i, i + chunk)
            f = self._points(mean[rows], cov[rows], method, n_samples, random_state)
            top = f.max(axis=-1, keepdims=True)
            lse = top[..., 0] + np.log(np.exp(f - top).sum(axis=-1))
            out[rows] = mean[rows][np.arange(f.shape[0]), y[rows]] - lse.mean(axis=1)
        return out

    def predictive_proba(self, mean, cov, n_points=PREDICTIVE_POINTS):
        """``E[softmax(f)]`` under ``f ~ N(mean, cov)``: shape (n, K), rows sum to 1."""
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        chunk = _chunk_rows(mean.shape[1], n_points)
        out = np.empty_like(mean)
        for i in range(0, mean.shape[0], chunk):
            f = self._points(mean[i : i + chunk], cov[i : i + chunk], "quadrature", n_points, None)
            out[i : i + chunk] = _log_softmax_parts(f)[1].mean(axis=1)
        return out

    def __repr__(self):
        return "Softmax()"

    def __eq__(self, other):
        return type(self) is type(other)

    __hash__ = None
