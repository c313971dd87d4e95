"""The Poisson likelihood with an exp, softplus or logistic link."""

import numpy as np
from scipy.special import expit, gammaln

from .base import Likelihood, _log_sigmoid


class Poisson(Likelihood):
    """``y ~ Poisson(lambda(f))`` for counts ``y = 0, 1, 2, ...``.

    Parameters
    ----------
    link : {'exp', 'softplus', 'logistic'}, default='exp'
        How the linear predictor ``f`` gives the rate:

        - ``'exp'``: ``lambda = exp(f)``, the canonical link;
        - ``'softplus'``: ``lambda = log(1 + exp(f))``, GPML's Poisson
          "logistic" link, which the Monte Carlo structured SVI experiments
          used: exponential below 0, linear above, so large counts keep a
          moderate curvature;
        - ``'logistic'``: ``lambda = sigmoid(f)``, a rate bounded by 1 (for
          rare events); not GPML's link of the same name.

    Notes
    -----
    Exp link: ``d/df = y - e^f``, ``d^2/df^2 = -e^f`` (log-concave).
    Softplus link, with ``s = sigmoid(f)`` and ``r = s / lambda``:
    ``d/df = y r - s`` and ``d^2/df^2 = y (r (1 - s) - r^2) - s (1 - s)``
    (log-concave: ``log softplus`` is concave).
    Logistic link, with ``s = sigmoid(f)``: ``d/df = (y - s)(1 - s)`` and
    ``d^2/df^2 = -s (1 - s) (1 + y - 2 s)``, which is positive for ``y = 0``
    and ``f > 0``: that likelihood is not log-concave, so a natural-gradient
    target precision can be indefinite; the engine's step safety rejects
    such a step.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Poisson
    >>> lik = Poisson()
    >>> round(float(lik.predictive_mean(np.array([0.0]), np.array([1.0]))[0]), 6)
    1.648721
    """

    def __init__(self, link="exp"):
        if link not in ("exp", "softplus", "logistic"):
            raise ValueError(f"link must be 'exp', 'softplus' or 'logistic', got {link!r}.")
        self.link = link

    def _params(self):
        return {"link": self.link}

    def logpdf(self, y, f):
        if self.link == "exp":
            return y * f - np.exp(f) - gammaln(y + 1.0)
        if self.link == "softplus":
            return y * _log_softplus(f) - np.logaddexp(0.0, f) - gammaln(y + 1.0)
        return y * _log_sigmoid(f) - expit(f) - gammaln(y + 1.0)

    def dlogpdf(self, y, f):
        if self.link == "exp":
            return y - np.exp(f)
        if self.link == "softplus":
            s, r = _sigmoid_over_softplus(f)
            return y * r - s
        s = expit(f)
        # d/df [y log s - s] = y (1 - s) - s (1 - s)
        return (y - s) * (1.0 - s)

    def d2logpdf(self, y, f):
        if self.link == "exp":
            return -np.exp(f) + 0.0 * y
        if self.link == "softplus":
            s, r = _sigmoid_over_softplus(f)
            return y * (r * (1.0 - s) - r * r) - s * (1.0 - s)
        s = expit(f)
        return -s * (1.0 - s) * (1.0 + y - 2.0 * s)

    def conditional_mean(self, f):
        if self.link == "exp":
            return np.exp(f)
        if self.link == "softplus":
            return np.logaddexp(0.0, f)
        return expit(f)

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
