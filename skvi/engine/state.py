"""The state of one fit: what the engine keeps during and between its steps.

:class:`FitState` is created at the start of ``fit`` (or of the first
``partial_fit``) and kept by the estimator; the loop's collaborators (step,
safety, rows, stream, convergence, monitoring) read and update it.  It also
remembers the parameters the fit started with, so that a further
``partial_fit`` takes up a changed schedule and refuses a changed model.
"""

import copy
import dataclasses

import numpy as np

from ..schedules import make_schedule
from . import blocks as _fn
from .executor import SerialExecutor
from .monitoring import HISTORY_DTYPE, TRACE_DTYPE, PhaseClock, _Table
from .rows import RowGroups
from .safety import StepSafety
from .stream import StreamTotal

__all__ = ["FitContext", "FitState", "warm_globals"]


#: Parameters read by every call, free to change between ``partial_fit`` calls.
_CALL_PARAMETERS = frozenset(
    {
        "batch_size",
        "max_iter",
        "tol",
        "total_samples",
        "verbose",
        "n_jobs",
        "random_state",
        "learning_method",
        "step_safety",
    }
)
#: The schedule's parameters: a change makes a new schedule from the next step.
_SCHEDULE_PARAMETERS = frozenset({"learning_rate", "learning_offset", "learning_decay"})


def _same_parameter(a, b):
    """Whether two values of a parameter are the same (arrays by value, objects by equality)."""
    if a is b:
        return True
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        try:
            a, b = np.asarray(a), np.asarray(b)
        except (TypeError, ValueError):
            return False
        return a.shape == b.shape and bool(np.all((a == b) | ((a != a) & (b != b))))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


@dataclasses.dataclass(frozen=True)
class FitContext:
    """What the hooks are told of the fit under way: the engine's decisions, not re-derived.

    The engine makes one at the start of ``fit`` (of each of its ``n_init``
    starts) and of a stream's first ``partial_fit``, and keeps it in the
    fit's state.  ``_initialize_globals(X, random_state, summary, ctx)``
    receives it when it takes ``ctx`` (on a cluster it travels with the
    start to the worker that makes it); a step's hooks receive the step's
    :class:`~skvi.engine.StepContext` (``online``, ``t``, ``rho``,
    ``scale``), which carries it as ``fit``.

    Parameters
    ----------
    partial : bool, default=False
        The start of a ``partial_fit`` stream (its first call).
    only_batch_steps : bool, default=False
        Whether every step of the fit is a batch step: a batch fit, or an
        online fit whose rows fit in one minibatch (the engine's rule,
        ``_only_batch_steps``); False for ``partial_fit``, whose steps are
        online steps.
    on_cluster : bool, default=False
        Whether the fit's rows are blocks held elsewhere (a dask cluster):
        the start then receives a sample of them (the settings'
        ``start_sample_size``) or the first block.
    warm : dict or None, default=None
        A warm start's globals, ``{name: tuple of arrays}``: the previous
        fit's, when the estimator's ``warm_start`` is set and it was fitted
        (scikit-learn's warm start); None otherwise.

    Examples
    --------
    >>> from skvi.engine import FitContext
    >>> ctx = FitContext(only_batch_steps=True)
    >>> ctx.partial, ctx.only_batch_steps, ctx.on_cluster, ctx.warm
    (False, True, False, None)
    """

    partial: bool = False
    only_batch_steps: bool = False
    on_cluster: bool = False
    warm: dict = None


def warm_globals(est):
    """The globals a ``fit`` of ``est`` continues from (``warm_start``), or None.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIBayesianGaussianMixture
    >>> from skvi.engine.state import warm_globals
    >>> X = np.random.RandomState(0).normal(size=(40, 2))
    >>> est = SVIBayesianGaussianMixture(n_components=2, warm_start=True, random_state=0)
    >>> warm_globals(est) is None
    True
    >>> sorted(warm_globals(est.fit(X)))
    ['components', 'weights']
    """
    if not (getattr(est, "warm_start", False) and hasattr(est, "natural_params_")):
        return None
    return {name: tuple(np.asarray(a) for a in f) for name, f in est.natural_params_.items()}


class FitState:
    """Everything the engine keeps during and between the steps of a fit; no model reads it.

    Created at the start of ``fit`` (or of the first ``partial_fit``) and
    held by the estimator as ``_svi``: the settings, the schedule, step
    safety, the row groups' counters, the update rules' state, the stream's
    ``N``, the executor, the record of the fit, and the parameters the fit
    started with.
    """

    def __init__(self, est, settings, executor, random_state):
        self.settings = settings
        self.rng = random_state
        self.order = getattr(est, "update_order", "sequential")
        self.schedule = make_schedule(est.learning_rate, est.learning_offset, est.learning_decay)
        self.prior = None
        self.safety = StepSafety(est.step_safety, settings)
        self.stream = StreamTotal()
        self.rows = RowGroups()
        self.clock = PhaseClock()
        self.trace = _Table(TRACE_DTYPE)
        self.history = _Table(HISTORY_DTYPE)
        self.use(executor)
        self.rule_states = {}
        self.n_accepted = 0
        self.elapsed = 0.0
        self.samples = 0.0
        self.calls = 0
        self.last_step = None
        self.in_pass = False
        self.view_version = 0  # bumped when the model changes: workers' copies are stale
        self.context = FitContext()

    def set_factors(self, est, params):
        """Make ``params`` the estimator's global factors: the one place ``natural_params_`` is set.

        Every collaborator that decides a new value of the factors (a step's
        commit, a rollback of step safety, an extrapolated pass, the
        stream's rescaling, new rows of a row group) hands it here.
        """
        est.natural_params_ = params

    def set_factor(self, est, name, value):
        """Replace factor ``name`` alone (in place: the factors' other values and identity stay)."""
        est.natural_params_[name] = self.as_factor(name, value)

    def follow_parameters(self, est):
        """Before a further ``partial_fit``: take up changed parameters, or refuse them.

        The schedule's parameters take effect from the next step; those that
        only say how a call runs (``batch_size``, ``total_samples``,
        ``n_jobs``, ...) are read by every call.  Any other parameter fixed
        the model the posterior was started with (its structure, its priors,
        its inference), so a change is a ValueError naming it.
        """
        before = getattr(self, "parameters", None)
        if before is None:  # a state pickled before parameters were kept
            return
        now = est.get_params(deep=False)
        changed = [k for k in now if k in before and not _same_parameter(now[k], before[k])]
        fixed = [k for k in changed if k not in _CALL_PARAMETERS and k not in _SCHEDULE_PARAMETERS]
        if fixed:
            name = fixed[0]
            raise ValueError(
                f"{type(est).__name__}.partial_fit: {name}={now[name]!r}, but the posterior "
                f"being updated was started with {name}={before[name]!r}, which fixed the "
                "model it fits; call fit to start again with the new value (or set it back)."
            )
        if any(k in _SCHEDULE_PARAMETERS for k in changed):
            self.schedule = make_schedule(
                est.learning_rate, est.learning_offset, est.learning_decay
            )
        self.parameters = now

    def use(self, executor):
        """Run the next steps through ``executor`` (a fit's, or a ``partial_fit`` call's)."""
        self.executor = executor
        self.data_factors = tuple(n for n in self.settings.data_factors if not executor.resident(n))
        self.joint = self.order == "joint" or len(self.data_factors) <= 1

    def local_steps(self, est, X, params):
        return self.executor.local_steps(est, X, params, self.rng)

    def data_bound(self, est, X, local, params):
        return float(self.executor.sum(est, _fn.bound, X, local, params))

    def as_factor(self, name, natural):
        return self.settings.as_factor(name, natural)

    def portable(self):
        """A copy to pickle: no executor, no settings, no probe rows."""
        other = copy.copy(self)
        other.executor, other.settings = SerialExecutor(), None
        other.context = dataclasses.replace(self.context, warm=None)
        other.safety = copy.copy(self.safety)
        other.safety.settings = None
        other.safety.forget()
        return other

    def model_changed(self, est):
        """The model's own parameters moved: the prior, the workers' copies, the known bound."""
        self.prior = est._prior_natural()
        self.view_version += 1
        self.safety.known_bound = None
