"""The Bernoulli likelihood with a logistic link."""

import numpy as np
from scipy.special import expit

from .base import Likelihood


class Bernoulli(Likelihood):
    """``y in {0, 1}``, ``p(y = 1 | f) = sigmoid(f)`` (logistic regression).

    ``log p = y f - log(1 + e^f)``, ``d/df = y - sigmoid(f)``,
    ``d^2/df^2 = -sigmoid(f) (1 - sigmoid(f))``: log-concave, so every
    natural-gradient target precision is positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Bernoulli
    >>> float(np.exp(Bernoulli().logpdf(1.0, 0.0)))
    0.5
    """

    def logpdf(self, y, f):
        # log sigmoid(z), z = f for y = 1 and -f for y = 0: one exponential,
        # without cancellation (and -inf, 0 at z = -inf, +inf).
        z = np.where(y == 1, f, -f)
        return np.minimum(z, 0.0) - np.log1p(np.exp(-np.abs(z)))

    def dlogpdf(self, y, f):
        return y - expit(f)

    def d2logpdf(self, y, f):
        p = expit(f)
        return -p * (1.0 - p) + 0.0 * y

    def logpdf_and_derivatives(self, y, f):
        # All three from e = exp(-|z|), z = (2y - 1) f: sigmoid(|z|) = 1 / (1 + e).
        sign = np.where(y == 1, 1.0, -1.0)
        z = sign * f
        e = np.exp(-np.abs(z))
        big = 1.0 / (1.0 + e)  # sigmoid(|z|)
        fit = np.where(z >= 0, big, e * big)  # sigmoid(z): the probability of y
        return (np.minimum(z, 0.0) - np.log1p(e), sign * (1.0 - fit), -fit * (1.0 - fit))

    def conditional_mean(self, f):
        return expit(f)

    def conditional_variance(self, f):
        p = expit(f)
        return p * (1.0 - p)

    def validate_targets(self, y):
        y = super().validate_targets(y)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("Bernoulli likelihood: y must contain only 0 and 1.")
        return y
