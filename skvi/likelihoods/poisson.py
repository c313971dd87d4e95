"""The Poisson likelihood with an exp or softplus link."""

import numpy as np
from scipy.special import expit, gammaln

from .base import Likelihood, _hermite

#: Newton steps for Wright's omega function in the exp link's tilted mode:
#: from the start below, five reach rounding on every argument.
_OMEGA_NEWTON = 5


class Poisson(Likelihood):
    """``y ~ Poisson(lambda(f))`` for counts ``y = 0, 1, 2, ...``.

    Parameters
    ----------
    link : {'exp', 'softplus'}, default='exp'
        How the linear predictor ``f`` gives the rate:

        - ``'exp'``: ``lambda = exp(f)``, the canonical link;
        - ``'softplus'``: ``lambda = log(1 + exp(f))``, GPML's Poisson
          "logistic" link, which the Monte Carlo structured SVI experiments
          used: exponential below 0, linear above, so large counts keep a
          moderate curvature.

        Both fit counts of any size.  (A rate ``sigmoid(f)``, bounded by 1,
        was offered as ``'logistic'`` before: it cannot fit counts above 1
        and is gone; ``'logistic'`` now raises a ValueError pointing to
        ``'softplus'``, GPML's link of that name.)

    Notes
    -----
    Exp link: ``d/df = y - e^f``, ``d^2/df^2 = -e^f`` (log-concave).
    Softplus link, with ``s = sigmoid(f)`` and ``r = s / lambda``:
    ``d/df = y r - s`` and ``d^2/df^2 = y (r (1 - s) - r^2) - s (1 - s)``
    (log-concave: ``log softplus`` is concave).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Poisson
    >>> lik = Poisson()
    >>> round(float(lik.predictive_mean(np.array([0.0]), np.array([1.0]))[0]), 6)
    1.648721
    """

    def __init__(self, link="exp"):
        if link == "logistic":
            raise ValueError(
                "link='logistic' (a rate sigmoid(f), bounded by 1) is not offered: it cannot "
                "fit counts above 1. GPML's Poisson 'logistic' link, the one of Monte Carlo "
                "structured SVI's experiments, is link='softplus'."
            )
        if link not in ("exp", "softplus"):
            raise ValueError(f"link must be 'exp' or 'softplus', got {link!r}.")
        self.link = link

    def _params(self):
        return {"link": self.link}

    def logpdf(self, y, f):
        if self.link == "exp":
            return y * f - np.exp(f) - gammaln(y + 1.0)
        return y * _log_softplus(f) - np.logaddexp(0.0, f) - gammaln(y + 1.0)

    def dlogpdf(self, y, f):
        if self.link == "exp":
            return y - np.exp(f)
        s, r = _sigmoid_over_softplus(f)
        return y * r - s

    def d2logpdf(self, y, f):
        if self.link == "exp":
            return -np.exp(f) + 0.0 * y
        s, r = _sigmoid_over_softplus(f)
        return y * (r * (1.0 - s) - r * r) - s * (1.0 - s)

    def logpdf_and_derivatives(self, y, f):
        if self.link == "exp":  # one exponential for the three
            rate = np.exp(f)
            return y * f - rate - gammaln(y + 1.0), y - rate, -rate + 0.0 * y
        return super().logpdf_and_derivatives(y, f)

    def conditional_mean(self, f):
        if self.link == "exp":
            return np.exp(f)
        return np.logaddexp(0.0, f)

    def conditional_variance(self, f):
        return self.conditional_mean(f)

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        if self.link == "exp" and method == "quadrature":
            # Exact: E[e^f] = exp(mean + var / 2).
            y = np.asarray(y, dtype=float)
            rate = np.exp(mean + 0.5 * np.asarray(var))
            return y * mean - rate - gammaln(y + 1.0), y - rate, -rate
        return super().expectations(y, mean, var, method, n_samples, random_state)

    def _tilted_mode(self, y, mean, var, max_iter=50):
        """The tilted density's mode in closed form for the exp link (see the base class).

        ``y - e^f - (f - a) / v = 0`` gives ``f = log(u / v)`` with
        ``u + log u = a + v y + log v``: ``u`` is Wright's omega function
        of the right-hand side, found by Newton's method on ``t = log u``
        (a convex equation, so that the iterates close in from the right
        after the first), with no line search and no per-element loop; the
        Laplace variance is ``1 / (1 / v + e^f) = v / (1 + u)``.
        """
        if self.link != "exp":
            return super()._tilted_mode(y, mean, var, max_iter)
        y, mean, var = np.broadcast_arrays(y, mean, var)
        ok = (var > 0) & np.isfinite(mean) & np.isfinite(var)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_v = np.log(np.where(ok, var, 1.0))
            x = np.where(ok, mean + var * y + log_v, 0.0)
            # Start: u ~ x - log x for large x, u ~ exp(x - e^x) for small.
            t = np.where(x > 1.0, np.log(np.maximum(x - np.log(np.maximum(x, 1.0)), 1.0)), x)
            t = np.where(x > 1.0, t, x - np.exp(np.minimum(x, 1.0)))
            for _ in range(_OMEGA_NEWTON):
                e = np.exp(t)
                t -= (e + t - x) / (e + 1.0)
            u = np.exp(t)
            mode = np.where(ok, t - log_v, mean)
            s2 = np.where(ok, var / (1.0 + u), np.maximum(var, 0.0))
        return mode, s2

    def log_marginal(self, y, mean, var, method="quadrature", n_samples=20, random_state=None):
        """``log Z`` and its derivatives in the mean (see the base class).

        For the exp link and ``method='quadrature'``, the same adaptive
        Gauss-Hermite rule written out for ``log p = y f - e^f - log y!``:
        with ``f_j = m + s z_j`` around the tilted mode ``m`` and
        ``E = e^m``, ``log p(y | f_j)`` plus the log ratio of the two
        Gaussians is a quadratic in ``z_j`` minus ``E (e^{s z_j} - 1)``, so
        that the rule takes one exponential per node (``expm1(s z_j)``,
        which also gives the rates ``E e^{s z_j}`` that ``l'`` and ``l''``
        need), and its terms are bounded above without a search for their
        maximum (``s^2 <= v``).  The tilted variance of ``l' = y - e^f`` is
        ``E^2`` times that of ``e^{s z_j} - 1``, summed about it without
        the cancellation of ``y - e^f``.
        """
        if self.link != "exp" or method != "quadrature":
            return super().log_marginal(y, mean, var, method, n_samples, random_state)
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float), np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
        )
        mode, s2 = self._tilted_mode(y, mean, var)
        z, w = _hermite(n_samples)
        pos = var > 0
        v = np.where(pos, var, 1.0)
        s = np.sqrt(s2)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            rate = np.exp(mode)
            lin = y - (mode - mean) / v  # the slope at the mode: E there (zero where var <= 0)
            c1 = np.where(pos, s * lin, 0.0)
            c2 = np.where(pos, 0.5 * (1.0 - s2 / v), 0.0)
            excess = np.expm1(s[..., None] * z)  # e^{s z_j} - 1
            arg = c1[..., None] * z + c2[..., None] * (z * z)
            arg -= rate[..., None] * excess
            terms = np.exp(arg)
            total = terms @ w
            first = (terms * excess) @ w / total  # tilted E[e^{s z} - 1]
            second = (terms * excess * excess) @ w / total
            log_z = (
                np.log(total)
                + y * mode
                - np.where(pos, 0.5 * (mode - mean) ** 2 / v, 0.0)
                - rate
                + np.where(pos, 0.5 * np.log(s2 / v), 0.0)
                - gammaln(y + 1.0)
            )
            d1 = y - rate * (1.0 + first)
            d2 = rate * rate * (second - first * first) - rate * (1.0 + first)
        finite = np.isfinite(log_z)
        return log_z, np.where(finite, d1, np.nan), np.where(finite, d2, np.nan)

    def validate_targets(self, y):
        y = super().validate_targets(y)
        if np.any(y < 0) or np.any(y != np.round(y)):
            raise ValueError("Poisson likelihood: y must be non-negative integer counts.")
        return y


def _log_softplus(f):
    """``log(log(1 + e^f))``, stable where the softplus underflows (``f`` below -30: ``f``)."""
    f = np.asarray(f, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(f < -30.0, f, np.log(np.logaddexp(0.0, np.maximum(f, -30.0))))


def _sigmoid_over_softplus(f):
    """``s = sigmoid(f)`` and ``r = s / softplus(f)`` (``r`` tends to 1 as ``f`` falls)."""
    f = np.asarray(f, dtype=float)
    s = expit(f)
    safe = np.maximum(f, -30.0)
    r = np.where(f < -30.0, 1.0, expit(safe) / np.logaddexp(0.0, safe))
    return s, r
