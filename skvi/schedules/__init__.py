"""Step-size schedules for stochastic natural-gradient updates.

A schedule maps the step counter ``t = 1, 2, ...`` to a step size
``rho_t`` in ``(0, 1]``.  Every SVI estimator in skvi blends its global
natural parameters as ``lam <- (1 - rho_t) lam + rho_t lam_hat``.

Schedules are small objects with ``get_params`` / ``set_params`` (they are
:class:`sklearn.base.BaseEstimator` subclasses), so a list of them can sit in
a :class:`~sklearn.model_selection.GridSearchCV` parameter grid::

    GridSearchCV(est, {"learning_rate": [RobbinsMonro(decay=0.6),
                                         WarmupRobbinsMonro(n_warmup=10)]})

An estimator never mutates the schedule it is given: at the start of fitting
it works on a clone (see :func:`sklearn.base.clone`), so stateful schedules
such as :class:`AdaptiveRate` start fresh on every ``fit``.

Names.  skvi follows scikit-learn: ``learning_offset`` is Hoffman et al.'s
``tau0`` and gensim's ``offset``; ``learning_decay`` is Hoffman's ``kappa``
and gensim's ``decay``.  Note that scikit-learn's and skvi's first step uses
``t = 1``, so with the defaults ``rho_1 = (1 + 10) ** -0.7``.
"""

import numbers

# The private helpers stay importable from the package, as from the module it replaced.
from .adaptive import AdaptiveRate
from .base import Schedule, _check_real  # noqa: F401
from .constant import Constant
from .robbins_monro import RobbinsMonro
from .warmup import WarmupRobbinsMonro

__all__ = [
    "Schedule",
    "RobbinsMonro",
    "Constant",
    "WarmupRobbinsMonro",
    "AdaptiveRate",
]


def make_schedule(learning_rate, learning_offset, learning_decay):
    """Resolve an estimator's schedule parameters into a fresh schedule.

    Parameters
    ----------
    learning_rate : Schedule, float or None
        A schedule object (cloned, so the caller's object is never
        mutated), a float for a :class:`Constant` schedule, or ``None`` for
        ``RobbinsMonro(offset=learning_offset, decay=learning_decay)``.
    learning_offset : float
        Delay ``tau`` used when ``learning_rate`` is None.
    learning_decay : float
        Forgetting rate ``kappa`` used when ``learning_rate`` is None.

    Returns
    -------
    schedule : Schedule
        A validated schedule with no state.

    Examples
    --------
    >>> from skvi.schedules import make_schedule
    >>> make_schedule(None, 10.0, 0.7)
    RobbinsMonro()
    >>> make_schedule(0.3, 10.0, 0.7)(5)
    0.3
    """
    from sklearn.base import clone

    if learning_rate is None:
        schedule = RobbinsMonro(offset=learning_offset, decay=learning_decay)
    elif isinstance(learning_rate, Schedule):
        schedule = clone(learning_rate)
    elif isinstance(learning_rate, numbers.Real) and not isinstance(learning_rate, bool):
        schedule = Constant(float(learning_rate))
    else:
        raise ValueError(
            "learning_rate must be None, a float in (0, 1] or a "
            f"skvi.schedules.Schedule instance, got {learning_rate!r}."
        )
    schedule.validate()
    return schedule
