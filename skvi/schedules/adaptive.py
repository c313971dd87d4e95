"""The adaptive step size of Ranganath et al. (2013)."""

import numpy as np

from .base import Schedule, _check_real


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
        if (
            state is None
            or len(flat) != len(state["g_bar"])
            or any(f.shape != g.shape for f, g in zip(flat, state["g_bar"]))
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
