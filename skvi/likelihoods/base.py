"""The base class of the likelihoods and the helpers they share."""

import functools

import numpy as np
from scipy.special import logsumexp
from sklearn.utils import check_random_state

_EXPECTATION_METHODS = ("mc", "quadrature")


def _log_sigmoid(x):
    """``log(1 / (1 + exp(-x)))``, stable for large ``|x|`` and for +-inf."""
    return -np.logaddexp(0.0, -x)


@functools.lru_cache(maxsize=64)
def _hermite(n_points):
    """Gauss-Hermite nodes and weights for ``E_{N(0,1)}[g(z)]`` (read-only arrays).

    Kept per size: numpy computes them by an eigenvalue problem, 0.35 ms a
    call, which was a tenth of a 2,000-row quadrature (an online GLM
    step's probe).
    """
    x, w = np.polynomial.hermite.hermgauss(n_points)
    nodes, weights = np.sqrt(2.0) * x, w / np.sqrt(np.pi)
    nodes.flags.writeable = weights.flags.writeable = False
    return nodes, weights


class Likelihood:
    """Base class of observation models ``p(y | f)``.

    Subclasses implement :meth:`logpdf`, :meth:`dlogpdf`, :meth:`d2logpdf`
    and :meth:`conditional_mean`; the expectations under a Gaussian ``q(f)``
    come from here.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Bernoulli
    >>> lik = Bernoulli()
    >>> e_log, e_d1, e_d2 = lik.expectations(np.array([1.0]), np.array([0.0]),
    ...                                      np.array([1.0]), method="quadrature")
    >>> round(float(e_d1[0]), 4)            # E[1 - sigmoid(f)] with f ~ N(0, 1)
    0.5
    """

    #: Whether the targets are discrete (classification-like).
    discrete = True

    def logpdf(self, y, f):
        """``log p(y | f)``, broadcasting ``y`` over trailing axes of ``f``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def dlogpdf(self, y, f):
        """``d log p(y | f) / df``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def d2logpdf(self, y, f):
        """``d^2 log p(y | f) / df^2``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def logpdf_and_derivatives(self, y, f):
        """``log p``, ``d log p / df`` and ``d^2 log p / df^2`` at once.

        The default calls the three methods; a likelihood whose three share
        work (an exponential, say) overrides it.  :meth:`expectations` uses it.
        """
        return self.logpdf(y, f), self.dlogpdf(y, f), self.d2logpdf(y, f)

    def conditional_mean(self, f):
        """``E[y | f]``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def conditional_variance(self, f):
        """``Var[y | f]``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def validate_targets(self, y):
        """Check the targets; return them as a float array.

        Raises ``ValueError`` naming the problem for values outside the
        support.
        """
        y = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{type(self).__name__} likelihood: y contains NaN or inf.")
        return y

    # ----------------------------------------------------------- expectations
    def _nodes(self, mean, var, method, n_samples, random_state):
        """Points ``f`` of shape (n, s) and weights of shape (s,)."""
        mean = np.asarray(mean, dtype=float)
        sd = np.sqrt(np.maximum(np.asarray(var, dtype=float), 0.0))
        if method == "quadrature":
            z, w = _hermite(n_samples)
        elif method == "mc":
            if isinstance(random_state, np.ndarray):  # the draws themselves
                z = random_state
            else:
                rng = (
                    random_state
                    if isinstance(random_state, np.random.Generator)
                    else check_random_state(random_state)
                )
                z = rng.standard_normal(mean.shape + (n_samples,))
            w = np.full(n_samples, 1.0 / n_samples)
        else:
            raise ValueError(f"method must be one of {_EXPECTATION_METHODS}, got {method!r}.")
        return mean[..., None] + sd[..., None] * z, w

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        """``E_q[log p]``, ``E_q[d log p/df]`` and ``E_q[d^2 log p/df^2]``.

        Parameters
        ----------
        y : ndarray of shape (n,)
            Observations.
        mean, var : ndarray of shape (n,)
            Mean and variance of the Gaussian ``q(f)`` of each observation.
        method : {'mc', 'quadrature'}, default='mc'
            Monte Carlo with ``n_samples`` draws per observation, or
            Gauss-Hermite quadrature with ``n_samples`` nodes.
        n_samples : int, default=10
            Draws or nodes.
        random_state : int, RandomState, Generator, ndarray or None
            For ``method='mc'``: the generator, or the standard normal
            draws themselves, of shape ``(n, n_samples)``.

        Returns
        -------
        e_log, e_d1, e_d2 : ndarray of shape (n,)
        """
        f, w = self._nodes(mean, var, method, n_samples, random_state)
        y = np.asarray(y, dtype=float)[..., None]
        value, d1, d2 = self.logpdf_and_derivatives(y, f)
        return value @ w, d1 @ w, d2 @ w

    def expected_logpdf(self, y, mean, var, method="quadrature", n_samples=20, random_state=None):
        """``E_q[log p(y | f)]`` alone: the first output of :meth:`expectations`.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.likelihoods import Gaussian
        >>> float(Gaussian(1.0).expected_logpdf(np.array([0.0]), np.array([0.0]),
        ...                                     np.array([1.0]))[0].round(4))
        -1.4189
        """
        if type(self).expectations is not Likelihood.expectations:
            # A likelihood with its own expectations (closed forms) keeps them.
            return self.expectations(y, mean, var, method, n_samples, random_state)[0]
        f, w = self._nodes(mean, var, method, n_samples, random_state)
        return self.logpdf(np.asarray(y, dtype=float)[..., None], f) @ w

    def _tilted_mode(self, y, mean, var, max_iter=50):
        """Mode and Laplace variance of the tilted density ``N(f; mean, var) p(y | f)``.

        Damped Newton ascent on ``g(f) = log p(y | f) - (f - mean)^2 / (2 var)``
        from ``f = mean``, with the curvature ``c = 1 / var + max(-l'', 0)``
        (never below ``1 / var``, so every step points uphill also where
        ``log p`` is not concave).  Steps longer than ``1e-6`` tilted standard
        deviations are halved until ``g`` does not decrease; an element stops
        once its step is below ``1e-8`` of them.  Returns the mode and
        ``1 / c`` there, which is at most ``var``; elements with ``var <= 0``
        (or non-finite inputs) keep ``(mean, max(var, 0))``.
        """
        shape = mean.shape
        yf, mf, vf = (np.ravel(x) for x in (y, mean, var))
        f = mf.copy()
        idx = np.flatnonzero((vf > 0) & np.isfinite(mf) & np.isfinite(vf))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            for _ in range(max_iter):
                if idx.size == 0:
                    break
                yi, mi, vi, fi = yf[idx], mf[idx], vf[idx], f[idx]
                curv = 1.0 / vi + np.maximum(-self.d2logpdf(yi, fi), 0.0)
                step = (self.dlogpdf(yi, fi) - (fi - mi) / vi) / curv
                step = np.where(np.isfinite(step), step, 0.0)
                size = np.abs(step) * np.sqrt(curv)
                big = np.flatnonzero(size > 1e-6)
                if big.size:
                    yb, mb, vb, fb = yi[big], mi[big], vi[big], fi[big]
                    g0 = self.logpdf(yb, fb) - 0.5 * (fb - mb) ** 2 / vb
                    sb = step[big]
                    todo = np.arange(big.size)
                    for _ in range(60):
                        cand = fb[todo] + sb[todo]
                        g = self.logpdf(yb[todo], cand) - 0.5 * (cand - mb[todo]) ** 2 / vb[todo]
                        todo = todo[~(g >= g0[todo])]
                        if todo.size == 0:
                            break
                        sb[todo] *= 0.5
                    sb[todo] = 0.0
                    step[big] = sb
                f[idx] = fi + step
                idx = idx[np.abs(step) * np.sqrt(curv) > 1e-8]
            curv = 1.0 / vf + np.maximum(-self.d2logpdf(yf, f), 0.0)
        s2 = np.where(np.isfinite(curv) & (vf > 0), 1.0 / curv, np.maximum(vf, 0.0))
        f = np.where(np.isfinite(f), f, mf)
        return f.reshape(shape), s2.reshape(shape)

    def log_marginal(self, y, mean, var, method="quadrature", n_samples=20, random_state=None):
        """Log marginal likelihood ``log Z`` and its first two derivatives in the mean.

        ``Z(y; a, v) = int N(f; a, v) p(y | f) df = E_{f ~ N(a, v)}[p(y | f)]``,
        the normaliser of the tilted density ``N(f; a, v) p(y | f) / Z``.
        With nodes ``f_j`` and weights ``w_j`` such that
        ``Z ~= sum_j w_j p(y | f_j)``, everything is computed in log space:

        - ``log Z = logsumexp_j(log p(y | f_j) + log w_j)``;
        - ``omega_j = w_j p(y | f_j) / Z``, the tilted weights;
        - ``d1 = d log Z / da = sum_j omega_j l'(f_j)``, the tilted mean of
          ``l' = d log p / df``;
        - ``d2 = d^2 log Z / da^2 = sum_j omega_j ((l'(f_j) - d1)^2 + l''(f_j))``,
          the tilted variance of ``l'`` plus the tilted mean of
          ``l'' = d^2 log p / df^2``.

        These follow from ``dZ / da = E[p'(y | f)]`` and
        ``d^2Z / da^2 = E[p''(y | f)]`` with ``p' = p l'`` and
        ``p'' = p (l'^2 + l'')``, so ``Z_aa / Z = d2 + d1^2``.  Since
        ``N(f; a, v)`` solves the heat equation ``dN/dv = (1/2) d^2N/da^2``,
        the derivative in the variance is

            d log Z / dv = (Z_aa / Z) / 2 = (d2 + d1^2) / 2.

        The tilted moments follow as well: mean ``a + v d1`` and variance
        ``v + v^2 d2``.

        Parameters
        ----------
        y : array_like
            Observations.
        mean, var : array_like
            Mean ``a`` and variance ``v >= 0`` of the Gaussian ``q(f)``;
            ``y``, ``mean`` and ``var`` broadcast together (for instance
            ``y`` of shape ``(n, 1)`` against ``mean`` and ``var`` of shape
            ``(n, q)``).
        method : {'quadrature', 'mc'}, default='quadrature'
            ``'quadrature'``: adaptive Gauss-Hermite quadrature with
            ``n_samples`` nodes (Liu and Pierce, "A note on Gauss-Hermite
            quadrature"), centred on the mode ``m`` of the tilted density
            with its Laplace variance ``s^2``, the weights carrying the ratio
            ``N(f_j; a, v) / N(f_j; m, s^2)``.  It stays accurate when
            ``p(y | f)`` is much narrower than ``q(f)`` (large ``var``,
            informative ``y``), where a rule centred on ``q(f)`` needs
            hundreds of nodes.  It is exact for the Gaussian likelihood (from
            two nodes; one node gives ``log Z`` and ``d1``), and with one node
            its ``log Z`` is the Laplace approximation.  ``'mc'``: Monte
            Carlo with ``n_samples`` draws from ``q(f)`` per element,
            ``w_j = 1 / n_samples`` (``log Z`` is then biased low: the log of
            an average).
        n_samples : int, default=20
            Nodes or draws.
        random_state : int, RandomState, Generator or None, default=None
            For ``method='mc'``.

        Returns
        -------
        log_z : ndarray
            ``log Z``, with the broadcast shape of ``y``, ``mean`` and ``var``.
        d1 : ndarray
            ``d log Z / da``, same shape.
        d2 : ndarray
            ``d^2 log Z / da^2``, same shape.

        Raises
        ------
        ValueError
            If ``method`` is not ``'quadrature'`` or ``'mc'``.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.likelihoods import Gaussian, Poisson
        >>> lik = Gaussian(noise_variance=1.0)  # Z = N(y; a, v + 1)
        >>> log_z, d1, d2 = lik.log_marginal(np.array([1.0]), np.array([0.0]),
        ...                                  np.array([1.0]))
        >>> print(np.round(log_z, 6), np.round(d1, 6), np.round(d2, 6))
        [-1.515512] [0.5] [-0.5]
        >>> print(np.round((d2 + d1**2) / 2, 6))  # d log Z / dv
        [-0.125]
        >>> y = np.array([[0.0], [12.0]])                # shape (2, 1)
        >>> mean, var = np.zeros((2, 3)), np.array([[0.01, 1.0, 4.0]] * 2)
        >>> log_z, d1, d2 = Poisson().log_marginal(y, mean, var)
        >>> print(log_z.shape)
        (2, 3)
        >>> print(np.round(d1, 4))
        [[-0.995  -0.6781 -0.4081]
         [10.8795  2.2322  0.5976]]
        """
        if method not in _EXPECTATION_METHODS:
            raise ValueError(f"method must be one of {_EXPECTATION_METHODS}, got {method!r}.")
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float),
            np.asarray(mean, dtype=float),
            np.asarray(var, dtype=float),
        )
        if method == "quadrature":
            mode, s2 = self._tilted_mode(y, mean, var)
            z, w = _hermite(n_samples)
            s = np.sqrt(s2)[..., None]
            f = mode[..., None] + s * z
            pos = (var > 0)[..., None]
            v = np.where(pos, var[..., None], 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                log_ratio = (
                    0.5 * np.log(s * s / v) - 0.5 * (f - mean[..., None]) ** 2 / v + 0.5 * z * z
                )
            log_w = np.log(w) + np.where(pos, log_ratio, 0.0)
        else:
            f, w = self._nodes(mean, var, method, n_samples, random_state)
            log_w = np.log(w)
        # One evaluation of log p and its derivatives at every node, and one
        # exponential of the weighted terms: the log-sum-exp's shifted
        # exponentials, normalised, are the tilted weights omega.
        with np.errstate(invalid="ignore", over="ignore"):
            log_p, dl, d2l = self.logpdf_and_derivatives(y[..., None], f)
            log_pw = log_p + log_w
            shift = np.max(log_pw, axis=-1, keepdims=True)
            shift = np.where(np.isfinite(shift), shift, 0.0)
            omega = np.exp(log_pw - shift)
            total = np.sum(omega, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_z = np.log(total) + shift[..., 0]
            finite = np.isfinite(log_z)
            omega /= np.where(finite, total, 1.0)[..., None]
            d1 = np.sum(omega * dl, axis=-1)
            dl -= d1[..., None]
            dl *= dl
            dl += d2l
            d2 = np.sum(omega * dl, axis=-1)
        d1 = np.where(finite, d1, np.nan)
        d2 = np.where(finite, d2, np.nan)
        return log_z, d1, d2

    def predictive_mean(self, mean, var, n_points=40):
        """``E[y]`` under ``f ~ N(mean, var)``, by Gauss-Hermite quadrature."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        return self.conditional_mean(f) @ w

    def predictive_variance(self, mean, var, n_points=40):
        """``Var[y]`` under ``f ~ N(mean, var)``: ``E[Var[y|f]] + Var[E[y|f]]``."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        cm = self.conditional_mean(f)
        first = cm @ w
        second = self.conditional_variance(f) @ w + (cm * cm) @ w
        with np.errstate(invalid="ignore"):
            variance = second - first * first
        # An overflowing second moment (inf - inf) has an infinite variance.
        return np.where(np.isposinf(second), np.inf, variance)

    def predictive_logpdf(self, y, mean, var, n_points=40):
        """``log int p(y | f) N(f | mean, var) df`` by Gauss-Hermite quadrature."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        y = np.asarray(y, dtype=float)[..., None]
        return logsumexp(self.logpdf(y, f) + np.log(w), axis=-1)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self):
        return {}

    def __eq__(self, other):
        return type(self) is type(other) and all(
            np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(self._params().values(), other._params().values())
        )

    __hash__ = None
