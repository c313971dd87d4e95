"""The constant step-size schedule."""

from .base import Schedule, _check_real


class Constant(Schedule):
    """Constant step size ``rho_t = value``.

    A constant step does not satisfy the Robbins-Monro conditions: the
    parameters keep fluctuating around the optimum with a spread that grows
    with ``value``.  ``Constant(1.0)`` with the whole data set as the minibatch
    is batch coordinate ascent.

    Parameters
    ----------
    value : float, default=0.1
        The step size, in ``(0, 1]``.

    Examples
    --------
    >>> from skvi.schedules import Constant
    >>> Constant(0.5)(100)
    0.5
    """

    def __init__(self, value=0.1):
        self.value = value

    def validate(self):
        _check_real("value", self.value, low=0.0, high=1.0, low_open=True)

    def __call__(self, t):
        return float(self.value)
