"""The Gaussian likelihood ``y ~ N(f, noise_variance)``."""

import numbers

import numpy as np

from .base import Likelihood


class Gaussian(Likelihood):
    """``y ~ N(f, noise_variance)``: the conjugate case.

    Its expectations are exact in closed form whatever ``method``:
    ``E[d log p/df] = (y - mean) / s2`` and ``E[d^2 log p/df^2] = -1 / s2``.

    Parameters
    ----------
    noise_variance : float, default=1.0

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Gaussian
    >>> Gaussian(0.5).expectations(np.array([1.0]), np.array([0.0]), np.array([1.0]))[2]
    array([-2.])
    """

    discrete = False

    def __init__(self, noise_variance=1.0):
        if not isinstance(noise_variance, numbers.Real) or not noise_variance > 0:
            raise ValueError(f"noise_variance must be positive, got {noise_variance!r}.")
        self.noise_variance = float(noise_variance)

    def _params(self):
        return {"noise_variance": self.noise_variance}

    def logpdf(self, y, f):
        s2 = self.noise_variance
        return -0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - f) ** 2 / s2

    def dlogpdf(self, y, f):
        return (y - f) / self.noise_variance

    def d2logpdf(self, y, f):
        return np.broadcast_to(
            -1.0 / self.noise_variance, np.broadcast_shapes(np.shape(y), np.shape(f))
        )

    def conditional_mean(self, f):
        return f

    def conditional_variance(self, f):
        return np.full_like(f, self.noise_variance)

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        y = np.asarray(y, dtype=float)
        s2 = self.noise_variance
        e_log = -0.5 * np.log(2 * np.pi * s2) - 0.5 * ((y - mean) ** 2 + var) / s2
        return e_log, (y - mean) / s2, np.full(np.shape(y), -1.0 / s2)

    def predictive_mean(self, mean, var, n_points=40):
        return np.asarray(mean, dtype=float)

    def predictive_variance(self, mean, var, n_points=40):
        return np.asarray(var, dtype=float) + self.noise_variance

    def predictive_logpdf(self, y, mean, var, n_points=40):
        total = np.asarray(var, dtype=float) + self.noise_variance
        return -0.5 * np.log(2 * np.pi * total) - 0.5 * (np.asarray(y) - mean) ** 2 / total
