"""The base class of the step-size schedules and their parameter check."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator


def _check_real(name, value, low=None, high=None, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value < low or (low_open and value == low)):
        bracket = "(" if low_open else "["
        raise ValueError(
            f"{name} must be in {bracket}{low}, {high if high is not None else 'inf'}"
            f"{')' if high_open or high is None else ']'}, got {value!r}."
        )
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(
            f"{name} must be in {'(' if low_open else '['}{low}, {high}"
            f"{')' if high_open else ']'}, got {value!r}."
        )
    return value


class Schedule(BaseEstimator):
    """Base class of step-size schedules.

    Subclasses implement :meth:`__call__` (and, when they adapt to the
    gradients, :meth:`observe`).  The engine calls ``validate()`` once per fit,
    then ``schedule(t)`` before step ``t`` and, when ``needs_gradient`` is
    True, ``schedule.observe(...)`` after it.

    Examples
    --------
    >>> from skvi.schedules import Constant
    >>> Constant(0.25)(7)
    0.25
    """

    #: Whether the engine must compute and report each step's gradient.
    needs_gradient = False

    def validate(self):
        """Check the hyperparameters.

        Raises
        ------
        ValueError
            If a hyperparameter is out of its range.
        """

    def __call__(self, t):
        """Return the step size for step ``t``.

        Parameters
        ----------
        t : int
            Step counter, starting at 1.

        Returns
        -------
        rho : float
            Step size in ``(0, 1]``.
        """
        raise NotImplementedError

    def at(self, t):
        """Return the step sizes for many step counters at once.

        The engine calls it with every row's counter of a per-row factor
        group (one call per step).  This default evaluates :meth:`__call__`
        once per distinct counter; schedules with a closed form override it
        with one vectorised expression.

        Parameters
        ----------
        t : array-like of int
            Step counters, each at least 1.

        Returns
        -------
        rho : ndarray of float
            ``rho[i] = self(t[i])``.

        Examples
        --------
        >>> from skvi.schedules import Constant
        >>> Constant(0.25).at([1, 5, 5]).tolist()
        [0.25, 0.25, 0.25]
        """
        t = np.asarray(t)
        steps, inverse = np.unique(t, return_inverse=True)
        values = np.array([self(int(s)) for s in steps], dtype=np.float64)
        return values[inverse].reshape(t.shape)

    def observe(self, gradient_sq_norm, gradient_parts):
        """Record the natural gradient of the step just taken.

        Parameters
        ----------
        gradient_sq_norm : float
            Squared Euclidean norm of the full natural gradient
            ``lam_hat - lam`` (all global factors concatenated).
        gradient_parts : list of ndarray
            The natural-gradient arrays themselves.
        """
