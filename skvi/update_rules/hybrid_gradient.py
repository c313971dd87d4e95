"""H-MC-SSVI: a natural-gradient covariance and an AdaGrad mean."""

import numpy as np

from .base import (
    UpdateRule,
    _adagrad,
    _hold_unstepped,
    _is_diagonal,
    _mean_gradient,
    _natural,
    _per_factor,
)


class HybridGradient(UpdateRule):
    """H-MC-SSVI: natural-gradient covariance, AdaGrad mean (Monte Carlo structured SVI, section 3.1).

    The precision blends as in :class:`NaturalGradient`; the mean takes an
    ordinary gradient step ``m <- m + lr * backoff * AdaGrad(dL/dm)``, with
    ``dL/dm`` evaluated at the current factor.

    Examples
    --------
    The covariance lands on the target with ``rho = 1``; the mean moves by
    ``gradient_learning_rate`` along the sign of the gradient on the first
    AdaGrad step:

    >>> import numpy as np
    >>> from skvi.update_rules import HybridGradient
    >>> rule = HybridGradient(gradient_learning_rate=0.1)
    >>> new, state = rule.step((np.zeros(1), -0.5 * np.ones(1)),
    ...                        (np.ones(1), -np.ones(1)), 1.0, 1.0, None)
    >>> precision = -2 * new[1]
    >>> precision, np.round(new[0] / precision, 6)
    (array([2.]), array([0.1]))
    """

    name = "h-mc-ssvi"

    def step(self, current, target, rho, backoff, state):
        diagonal = _is_diagonal(*current)
        if diagonal:
            mean = current[0] / (-2.0 * current[1])
        else:
            # Only the mean is needed: one batched solve, no inverse.
            old_precision = -(current[1] + np.swapaxes(current[1], -1, -2))
            mean = np.linalg.solve(old_precision, current[0][..., None])[..., 0]
        g1 = target[0] - current[0]
        g2 = target[1] - current[1]
        grad_m = _mean_gradient(g1, g2, mean, diagonal)
        eta2 = current[1] + _per_factor(rho, g2) * g2
        precision = -2.0 * eta2 if diagonal else -(eta2 + np.swapaxes(eta2, -1, -2))
        if not diagonal:
            eta2 = -0.5 * precision
        acc = None if state is None else state.get("mean")
        delta, acc = _adagrad(grad_m, acc, self.gradient_learning_rate * backoff)
        new = _natural(mean + delta, precision, diagonal)
        return _hold_unstepped(rho, current, new, state, {"mean": acc})
