"""Fixed-point natural-gradient steps damped (or sped up) by the slope of the map."""

import numpy as np

from .base import UpdateRule

#: Largest factor by which a step is lengthened where the fixed-point map
#: contracts slowly (slope in (0, 1)).
MAX_ACCELERATION = 3.0


class SecantFixedPoint(UpdateRule):
    """Natural-gradient steps on a non-conjugate factor, scaled by the map's secant slope.

    For a factor whose target ``lam_hat = f(lam)`` depends on the factor
    itself (a fixed point of non-conjugate variational message passing,
    Knowles and Minka, "Non-conjugate variational message passing for
    multinomial and binary regression"), the step ``lam + rho (f(lam) -
    lam)`` oscillates when ``f`` falls steeply (slope below -1) and crawls
    when it rises towards 1.  With ``f'`` estimated elementwise from this
    step and the previous one (the secant), the step is multiplied by
    ``1 / (1 - f')``, the root of the linearised map: damped where the map
    overshoots, lengthened (at most ``MAX_ACCELERATION`` times) where it
    contracts slowly.  The first step, and elements that did not move, take
    the plain step.  Meant for batch steps: with stochastic targets the
    secant is noise.

    Examples
    --------
    The map ``f(x) = 3 - 2 x`` (fixed point 1, slope -2) makes plain steps
    from 0 oscillate (0, 3, -3, 9, ...); after one plain step the secant
    lands on the fixed point:

    >>> import numpy as np
    >>> rule = SecantFixedPoint()
    >>> x, state = (np.array(0.0),), None
    >>> for _ in range(2):
    ...     x, state = rule.step(x, (3.0 - 2.0 * x[0],), 1.0, 1.0, state)
    >>> float(x[0])
    1.0
    """

    name = "secant"

    def step(self, current, target, rho, backoff, state):
        new = []
        for k, (c, t) in enumerate(zip(current, target)):
            c, t = np.asarray(c, dtype=float), np.asarray(t, dtype=float)
            factor = np.ones_like(c)
            if state is not None:
                prev_c, prev_t = state[0][k], state[1][k]
                moved = c - prev_c
                ok = np.abs(moved) > 1e-12 * np.maximum(np.abs(c), 1.0)
                slope = np.divide(t - prev_t, np.where(ok, moved, 1.0))
                slope = np.where(ok & np.isfinite(slope) & (slope < 1.0), slope, 0.0)
                factor = np.minimum(1.0 / (1.0 - slope), MAX_ACCELERATION)
            new.append(c + rho * factor * (t - c))
        return tuple(new), (
            tuple(np.asarray(c, dtype=float) for c in current),
            tuple(np.asarray(t, dtype=float) for t in target),
        )
