"""The Robbins-Monro schedule ``rho_t = scale * (t + offset) ** -decay``."""

import numpy as np

from .base import Schedule, _check_real


class RobbinsMonro(Schedule):
    """Robbins-Monro schedule ``rho_t = scale * (t + offset) ** -decay``.

    With ``decay`` in ``(0.5, 1]`` the steps satisfy the Robbins-Monro
    conditions ``sum rho_t = inf`` and ``sum rho_t**2 < inf``, which make
    stochastic natural-gradient ascent converge to a local optimum of the
    ELBO.  Smaller values in ``[0, 0.5]`` are accepted, as scikit-learn's
    LDA accepts them (Hoffman et al. 2010 report ``kappa = 0.5``), but
    carry no convergence guarantee: the steps shrink too slowly for the
    noise to average out.

    Parameters
    ----------
    offset : float, default=10.0
        Delay ``tau >= 0``; larger values down-weight early steps
        (scikit-learn's ``learning_offset``).
    decay : float, default=0.7
        Forgetting rate ``kappa`` in ``[0, 1]``; ``(0.5, 1]`` for the
        Robbins-Monro guarantee (scikit-learn's ``learning_decay``).
    scale : float, default=1.0
        Multiplier in ``(0, 1]``; ``rho_1 = scale * (1 + offset) ** -decay``.

    Examples
    --------
    >>> from skvi.schedules import RobbinsMonro
    >>> rm = RobbinsMonro(offset=0.0, decay=1.0)
    >>> [rm(t) for t in (1, 2, 4)]
    [1.0, 0.5, 0.25]
    """

    def __init__(self, offset=10.0, decay=0.7, scale=1.0):
        self.offset = offset
        self.decay = decay
        self.scale = scale

    def validate(self):
        _check_real("offset", self.offset, low=0.0)
        _check_real("decay", self.decay, low=0.0, high=1.0)
        _check_real("scale", self.scale, low=0.0, high=1.0, low_open=True)

    def __call__(self, t):
        return float(min(1.0, self.scale * (t + self.offset) ** (-self.decay)))

    def at(self, t):
        """Return ``min(1, scale * (t + offset) ** -decay)`` for an array of counters.

        Parameters
        ----------
        t : array-like of int
            Step counters, each at least 1.

        Returns
        -------
        rho : ndarray of float
            The step size of each counter, as :meth:`__call__` gives it.

        Examples
        --------
        >>> from skvi.schedules import RobbinsMonro
        >>> RobbinsMonro(offset=0.0, decay=1.0).at([1, 2, 4]).tolist()
        [1.0, 0.5, 0.25]
        """
        t = np.asarray(t, dtype=np.float64)
        return np.minimum(1.0, self.scale * (t + self.offset) ** (-self.decay))
