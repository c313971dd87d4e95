"""The Poisson likelihood with an exp or logistic link."""

import numpy as np
from scipy.special import expit, gammaln

from .base import Likelihood, _log_sigmoid


class Poisson(Likelihood):
    """``y ~ Poisson(lambda(f))`` for counts ``y = 0, 1, 2, ...``.

    Parameters
    ----------
    link : {'exp', 'logistic'}, default='exp'
        ``lambda = exp(f)`` (the canonical link) or ``lambda = sigmoid(f)``,
        the bounded rate of seed 002's GME and count-PMF experiments.

    Notes
    -----
    Exp link: ``d/df = y - e^f``, ``d^2/df^2 = -e^f`` (log-concave).
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
        if link not in ("exp", "logistic"):
            raise ValueError(f"link must be 'exp' or 'logistic', got {link!r}.")
        self.link = link

    def _params(self):
        return {"link": self.link}

    def logpdf(self, y, f):
        if self.link == "exp":
            return y * f - np.exp(f) - gammaln(y + 1.0)
        return y * _log_sigmoid(f) - expit(f) - gammaln(y + 1.0)

    def dlogpdf(self, y, f):
        if self.link == "exp":
            return y - np.exp(f)
        s = expit(f)
        # d/df [y log s - s] = y (1 - s) - s (1 - s)
        return (y - s) * (1.0 - s)

    def d2logpdf(self, y, f):
        if self.link == "exp":
            return -np.exp(f) + 0.0 * y
        s = expit(f)
        return -s * (1.0 - s) * (1.0 + y - 2.0 * s)

    def conditional_mean(self, f):
        return np.exp(f) if self.link == "exp" else expit(f)

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
