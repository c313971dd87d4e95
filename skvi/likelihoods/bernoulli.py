"""The Bernoulli likelihood with a logistic link."""

import numpy as np
from scipy.special import expit

from .base import Likelihood, _log_sigmoid


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
        # log sigmoid(f) for y = 1 and log sigmoid(-f) for y = 0, each
        # computed without cancellation.
        return np.where(y == 1, _log_sigmoid(f), _log_sigmoid(-f))

    def dlogpdf(self, y, f):
        return y - expit(f)

    def d2logpdf(self, y, f):
        p = expit(f)
        return -p * (1.0 - p) + 0.0 * y

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
