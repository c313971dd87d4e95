"""The warm-up schedule: full steps, then a Robbins-Monro decay."""

import numbers

from .base import Schedule, _check_real


class WarmupRobbinsMonro(Schedule):
    """Full steps for a warm-up, then a Robbins-Monro decay.

    ``rho_t = 1`` for ``t <= n_warmup``, then
    ``rho_t = (t - n_warmup + offset) ** -decay``.  This is the production
    recipe reported by Paquet ("On the convergence of stochastic variational inference in Bayesian networks"): fix ``rho = 1`` for the first
    iterations, then decrease slowly.

    Parameters
    ----------
    n_warmup : int, default=10
        Number of initial steps taken with ``rho = 1``.
    offset : float, default=1.0
        Delay of the decay phase (``>= 0``).
    decay : float, default=0.7
        Forgetting rate in ``(0.5, 1]`` of the decay phase.

    Examples
    --------
    >>> from skvi.schedules import WarmupRobbinsMonro
    >>> s = WarmupRobbinsMonro(n_warmup=2, offset=0.0, decay=1.0)
    >>> [s(t) for t in (1, 2, 3, 4)]
    [1.0, 1.0, 1.0, 0.5]
    """

    def __init__(self, n_warmup=10, offset=1.0, decay=0.7):
        self.n_warmup = n_warmup
        self.offset = offset
        self.decay = decay

    def validate(self):
        if isinstance(self.n_warmup, bool) or not isinstance(self.n_warmup, numbers.Integral):
            raise ValueError(f"n_warmup must be a non-negative integer, got {self.n_warmup!r}.")
        if self.n_warmup < 0:
            raise ValueError(f"n_warmup must be a non-negative integer, got {self.n_warmup!r}.")
        _check_real("offset", self.offset, low=0.0)
        _check_real("decay", self.decay, low=0.5, high=1.0, low_open=True)

    def __call__(self, t):
        if t <= self.n_warmup:
            return 1.0
        return float(min(1.0, (t - self.n_warmup + self.offset) ** (-self.decay)))
