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

import numpy as np
from sklearn.base import BaseEstimator

__all__ = [
    "Schedule",
    "RobbinsMonro",
    "Constant",
    "WarmupRobbinsMonro",
    "AdaptiveRate",
]


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


class WarmupRobbinsMonro(Schedule):
    """Full steps for a warm-up, then a Robbins-Monro decay.

    ``rho_t = 1`` for ``t <= n_warmup``, then
    ``rho_t = (t - n_warmup + offset) ** -decay``.  This is the production
    recipe reported by Paquet (seed 000): fix ``rho = 1`` for the first
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
        if isinstance(self.n_warmup, bool) or not isinstance(
            self.n_warmup, numbers.Integral
        ):
            raise ValueError(
                f"n_warmup must be a non-negative integer, got {self.n_warmup!r}."
            )
        if self.n_warmup < 0:
            raise ValueError(
                f"n_warmup must be a non-negative integer, got {self.n_warmup!r}."
            )
        _check_real("offset", self.offset, low=0.0)
        _check_real("decay", self.decay, low=0.5, high=1.0, low_open=True)

    def __call__(self, t):
        if t <= self.n_warmup:
            return 1.0
        return float(min(1.0, (t - self.n_warmup + self.offset) ** (-self.decay)))


class AdaptiveRate(Schedule):
    """Adaptive step size of Ranganath et al. (2013).

    "An adaptive learning rate for stochastic variational inference" chooses
    ``rho_t = |g_bar|^2 / h_bar`` where ``g_bar`` and ``h_bar`` are moving
    averages of the noisy natural gradient ``g_t = lam_hat - lam`` and of its
    squared norm, with a memory ``tau_t`` updated as
    ``tau_{t+1} = tau_t (1 - rho_t) + 1``.  When the gradients agree from step
    to step (far from the optimum) the step is large; when they are mostly
    noise (near the optimum) it shrinks.

    This implementation uses the averages up to step ``t - 1`` to choose
    ``rho_t`` (the engine reports each gradient after the step).  The first
    gradient seeds the averages (Ranganath et al. seed them with several
    Monte Carlo samples at the initial point), so the first two steps use
    ``initial``.

    Parameters
    ----------
    initial : float, default=0.5
        Step size before any gradient has been observed, in ``(0, 1]``.
    memory : float, default=10.0
        Initial memory ``tau_1 >= 1`` of the moving averages (Ranganath et
        al. initialise it with the number of Monte Carlo samples used to seed
        the averages).
    min_rate : float, default=1e-6
        Lower bound on the step size, in ``(0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.schedules import AdaptiveRate
    >>> s = AdaptiveRate(initial=0.5)
    >>> s(1)
    0.5
    >>> g = np.array([1.0, 1.0])
    >>> for _ in range(2):
    ...     s.observe(float(g @ g), [g])
    >>> s(3)                         # consistent gradients give full steps
    1.0
    """

    needs_gradient = True

    def __init__(self, initial=0.5, memory=10.0, min_rate=1e-6):
        self.initial = initial
        self.memory = memory
        self.min_rate = min_rate

    def validate(self):
        _check_real("initial", self.initial, low=0.0, high=1.0, low_open=True)
        _check_real("memory", self.memory, low=1.0)
        _check_real("min_rate", self.min_rate, low=0.0, high=1.0, low_open=True)

    def __call__(self, t):
        state = getattr(self, "_state", None)
        if state is None:
            return float(self.initial)
        return state["rho"]

    def observe(self, gradient_sq_norm, gradient_parts):
        state = getattr(self, "_state", None)
        flat = [np.asarray(g, dtype=np.float64).ravel() for g in gradient_parts]
        if state is None or len(flat) != len(state["g_bar"]) or any(
            f.shape != g.shape for f, g in zip(flat, state["g_bar"])
        ):
            # The first gradient (or the first after the global parameters
            # changed shape, e.g. new rows were added) seeds the averages.  A
            # single sample would give rho = |g|^2 / |g|^2 = 1 and reset the
            # memory to 1, so the step stays at its current value until a
            # second gradient is seen.
            rho = float(self.initial) if state is None else state["rho"]
            tau = float(self.memory) if state is None else state["tau"]
            self._state = {
                "tau": tau * (1.0 - rho) + 1.0,
                "g_bar": [f.copy() for f in flat],
                "h_bar": float(gradient_sq_norm),
                "rho": rho,
            }
            return
        w = 1.0 / state["tau"]
        for gb, f in zip(state["g_bar"], flat):
            gb *= 1.0 - w
            gb += w * f
        state["h_bar"] = (1.0 - w) * state["h_bar"] + w * float(gradient_sq_norm)
        g_sq = float(sum(gb @ gb for gb in state["g_bar"]))
        h = state["h_bar"]
        rho = g_sq / h if h > 0 else float(self.initial)
        rho = float(np.clip(rho, self.min_rate, 1.0))
        state["rho"] = rho
        state["tau"] = state["tau"] * (1.0 - rho) + 1.0


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
    elif isinstance(learning_rate, numbers.Real) and not isinstance(
        learning_rate, bool
    ):
        schedule = Constant(float(learning_rate))
    else:
        raise ValueError(
            "learning_rate must be None, a float in (0, 1] or a "
            f"skvi.schedules.Schedule instance, got {learning_rate!r}."
        )
    schedule.validate()
    return schedule
