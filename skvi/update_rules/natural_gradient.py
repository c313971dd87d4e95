"""MC-SSVI: natural-gradient steps on the mean and the covariance."""

import numpy as np

from .base import UpdateRule, _per_factor


class NaturalGradient(UpdateRule):
    """MC-SSVI: natural-gradient steps on mean and covariance (Monte Carlo structured SVI, eqs. 24-25).

    ``lam <- lam + rho (lam_hat - lam)``.  In standard coordinates the mean
    moves by ``rho V_new dL/dm``: a Newton-like step preconditioned by the
    new covariance.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.update_rules import NaturalGradient
    >>> new, _ = NaturalGradient().step((np.zeros(1), -np.ones(1)),
    ...                                 (np.ones(1), -2 * np.ones(1)), 0.5, 1.0, None)
    >>> new
    (array([0.5]), array([-1.5]))
    """

    name = "mc-ssvi"

    def step(self, current, target, rho, backoff, state):
        if np.ndim(rho) == 0 and rho == 1.0:
            return tuple(target), state  # a full step is the target itself
        # (1 - rho) c + rho t is exact at rho = 0 and rho = 1.
        return tuple(
            (1.0 - _per_factor(rho, c)) * c + _per_factor(rho, c) * t
            for c, t in zip(current, target)
        ), state
