"""The Poisson likelihood with an exp or softplus link."""

import numpy as np
from scipy.special import expit, gammaln

from .base import Likelihood


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
