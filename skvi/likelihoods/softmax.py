"""The softmax (multinomial logistic) likelihood of a K-vector of linear predictors."""

import functools

import numpy as np
from scipy.special import logsumexp, ndtri
from scipy.stats import qmc
from sklearn.utils import check_random_state

from ..expfam.linalg import cholesky_factor, psd_root
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
    chol = cholesky_factor(z.T @ z / z.shape[0])
    z = np.linalg.solve(chol, z.T).T
    z.setflags(write=False)
    return z


def _chunk_rows(n_classes, n_points):
    """Rows per chunk so that the (rows, points, K) arrays stay near 250,000 entries.

    Small enough to stay in cache: on digits (512 points, 10 classes) chunks
    of 50 rows took 40 ms for all 1,257 rows, chunks of 400 53 ms.
    """
    return max(1, 250_000 // max(1, n_classes * int(n_points)))


def _softmax_at_points(mean, root, z):
    """``exp(f - shift)`` at the points ``f = mean + root z`` (n, s, K), the shift and the sums.

    One batched product gives the points with the mean added (``z`` with a
    column of ones against ``root^T`` with a row ``mean - shift``), and the
    exponential is taken in place.  The shift is each row's largest mean,
    not each point's largest ``f`` (a reduction over a short last axis costs
    more than the exponential); where that over- or underflows, the points'
    own maxima are used.  Returns ``e``, ``shift`` of shape (n, 1, 1) or
    (n, s, 1) and ``total = sum_k e`` of shape (n, s).
    """
    n, k = mean.shape
    shift = mean.max(axis=1)[:, None, None]
    factor = np.empty((n, k + 1, k))
    factor[:, :k] = np.swapaxes(root, -1, -2)
    factor[:, k] = mean - shift[:, 0]
    ones = np.ones(z.shape[:-1] + (1,))
    e = np.matmul(np.concatenate([z, ones], axis=-1), factor)  # f - shift, (n, s, K)
    with np.errstate(over="ignore"):  # an overflow takes the exact path below
        np.exp(e, out=e)
    total = e @ np.ones(k)
    if not np.all(np.isfinite(total) & (total > 0.0)):
        f = np.matmul(z, np.swapaxes(root, -1, -2)) + mean[:, None, :]
        shift = f.max(axis=-1, keepdims=True)
        e = np.exp(f - shift)
        total = e @ np.ones(k)
    return e, shift, total


def _mean_log_total(shift, total):
    """``mean_s log sum_k exp(f_sk)`` per row from :func:`_softmax_at_points`'s parts."""
    log_total = np.log(total)
    if shift.ndim == 3 and shift.shape[1] > 1:
        log_total += shift[..., 0]
        return log_total.mean(axis=1)
    return log_total.mean(axis=1) + shift[:, 0, 0]


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

    def _rule(self, n_rows, n_classes, method, n_samples, random_state):
        """Standard normal points: the fixed rule (s, K), or draws (n, s, K) for 'mc'."""
        if method == "quadrature":
            return _symmetric_normals(n_classes, int(n_samples))
        if method == "mc":
            if isinstance(random_state, np.ndarray):  # the draws themselves, (n, s, K)
                return random_state
            rng = (
                random_state
                if isinstance(random_state, np.random.Generator)
                else check_random_state(random_state)
            )
            return rng.standard_normal((n_rows, int(n_samples), n_classes))
        raise ValueError(f"method must be one of {_EXPECTATION_METHODS}, got {method!r}.")

    def _chunks(self, mean, cov, method, n_samples, random_state):
        """Yield ``(rows, mean, exp(f - shift), shift, total)`` for chunks of rows.

        ``f = mean + root z`` at the rule's points (or draws), ``root`` a
        square root of each row's covariance (:func:`skvi.expfam.psd_root`).
        """
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        n, k = mean.shape
        chunk = _chunk_rows(k, n_samples)
        for i in range(0, n, chunk):
            rows = slice(i, min(i + chunk, n))
            # Draws given for every row: this chunk's.
            state = random_state[rows] if isinstance(random_state, np.ndarray) else random_state
            z = self._rule(rows.stop - rows.start, k, method, n_samples, state)
            e, shift, total = _softmax_at_points(mean[rows], psd_root(cov[rows]), z)
            yield rows, mean[rows], e, shift, total

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
        y = np.asarray(y).astype(np.intp)
        n, k = mean.shape
        e_log = np.empty(n)
        e1 = np.empty((n, k))
        e2 = np.empty((n, k, k))
        if n == 0:
            return e_log, e1, e2
        for rows, m, e, shift, total in self._chunks(mean, cov, method, n_samples, random_state):
            s = e.shape[1]
            e_log[rows] = m[np.arange(m.shape[0]), y[rows]] - _mean_log_total(shift, total)
            e *= (1.0 / total)[..., None]  # softmax(f) at every point
            second = np.matmul(np.ascontiguousarray(np.swapaxes(e, -1, -2)), e)
            second *= 1.0 / s  # E[p p^T]
            p_mean = second.sum(axis=-1)  # E[p], as the p's sum to one
            e1[rows] = -p_mean
            second[:, np.arange(k), np.arange(k)] -= p_mean
            e2[rows] = second
        e1[np.arange(n), y] += 1.0
        return e_log, e1, e2

    @staticmethod
    def bound_curvature(n_classes):
        """Böhning's curvature ``A = (I - 1 1^T / K) / 2``, above ``diag(p) - p p^T`` for all ``p``.

        Böhning ("Multinomial logistic regression algorithm", 1992) shows
        that the Hessian of ``log sum_k exp(f_k)`` never exceeds ``A``, so
        that ``log p(y | f) >= log p(y | m) + g^T (f - m) - (f - m)^T A (f - m) / 2``
        with ``g = onehot(y) - softmax(m)``, for every ``f`` and ``m``.  Under
        ``q(f) = N(m, S)`` the bound's expectation is
        ``log p(y | m) - tr(A S) / 2`` (see :meth:`bound_terms`).

        Parameters
        ----------
        n_classes : int
            ``K``.

        Returns
        -------
        ndarray of shape (K, K)

        Examples
        --------
        >>> from skvi.likelihoods import Softmax
        >>> Softmax.bound_curvature(2)
        array([[ 0.25, -0.25],
               [-0.25,  0.25]])
        """
        k = int(n_classes)
        return 0.5 * (np.eye(k) - 1.0 / k)

    def bound_terms(self, y, mean):
        """``log p(y | m)`` and its gradient ``onehot(y) - softmax(m)`` at the means ``m``.

        With :meth:`bound_curvature`'s ``A``, ``log p(y | m) - tr(A S) / 2``
        is a lower bound on ``E_q[log p(y | f)]`` under ``q(f) = N(m, S)``,
        tight where ``S = 0``; its derivatives in ``m`` and ``S`` are the
        gradient returned here and ``-A / 2``.  No integral is needed.

        Parameters
        ----------
        y : ndarray of shape (n,)
            Class indices in ``0 .. K-1``.
        mean : ndarray of shape (n, K)
            The means of ``q(f)``.

        Returns
        -------
        log_p : ndarray of shape (n,)
        gradient : ndarray of shape (n, K)

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.likelihoods import Softmax
        >>> log_p, g = Softmax().bound_terms(np.array([0]), np.zeros((1, 2)))
        >>> round(float(log_p[0]), 6), g
        (-0.693147, array([[ 0.5, -0.5]]))
        """
        mean = np.asarray(mean, dtype=float)
        y = np.asarray(y).astype(np.intp)
        rows = np.arange(mean.shape[0])
        if mean.shape[0] == 0:
            return np.empty(0), np.empty_like(mean)
        shift = mean.max(axis=1)
        gradient = np.exp(mean - shift[:, None])
        total = gradient.sum(axis=1)
        gradient *= (-1.0 / total)[:, None]
        gradient[rows, y] += 1.0
        return mean[rows, y] - shift - np.log(total), gradient

    def expected_logpdf(
        self, y, mean, cov, method="quadrature", n_samples=PREDICTIVE_POINTS, random_state=None
    ):
        """``E_q[log p(y | f)]`` alone (the first output of :meth:`expectations`), shape (n,)."""
        y = np.asarray(y).astype(np.intp)
        out = np.empty(np.shape(mean)[0])
        for rows, m, e, shift, total in self._chunks(mean, cov, method, n_samples, random_state):
            out[rows] = m[np.arange(m.shape[0]), y[rows]] - _mean_log_total(shift, total)
        return out

    def predictive_proba(self, mean, cov, n_points=PREDICTIVE_POINTS):
        """``E[softmax(f)]`` under ``f ~ N(mean, cov)``: shape (n, K), rows sum to 1."""
        mean = np.asarray(mean, dtype=float)
        out = np.empty_like(mean)
        for rows, _, e, _, total in self._chunks(mean, cov, "quadrature", n_points, None):
            out[rows] = (e * (1.0 / total)[..., None]).mean(axis=1)
        return out

    def __repr__(self):
        return "Softmax()"

    def __eq__(self, other):
        return type(self) is type(other)

    __hash__ = None
