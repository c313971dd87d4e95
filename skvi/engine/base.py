"""The shared stochastic natural-gradient engine.

Every estimator in skvi is the same loop with a different model plugged in::

    for t = 1, 2, ...
        S       <- a minibatch
        local   <- the local step on S with the globals held fixed   (E-step)
        stats   <- expected sufficient statistics of S for each global factor
        lam_hat <- eta_prior + (N / |S|) * stats                     (target)
        lam     <- (1 - rho_t) * lam + rho_t * lam_hat               (step)

Batch coordinate ascent (CAVI / VMP) is the case ``S = all data`` and
``rho = 1``.  :class:`SVIEstimator` owns this loop: minibatches and passes,
the step counters, the schedule, the ``N / |S|`` scaling, Paquet's update
orders, per-row factor groups, the ELBO history and convergence test, step
safety, verbose output and ``random_state``.  A model supplies the hooks
listed in :class:`SVIEstimator`.

The current value of a global factor is a :class:`~skvi.engine.Factor`: the
tuple of its natural parameters (for a Gaussian: ``(precision * mean,
-precision / 2)``, see :mod:`skvi.expfam`) that also knows its family and
caches its moments.  The engine keeps them in ``natural_params_``, a dict
from factor name to factor; a model asks ``params[name].distribution`` or
``params[name].cached(key, compute)`` for moments.
"""

import functools
import inspect
import numbers
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..schedules import make_schedule
from .factor import Factor
from .rows import ResidentRows, RowGroup
from .monitoring import HISTORY_DTYPE, TRACE_DTYPE, _Run, _Table, warn_user
from . import blocks as _block_fns
from .blocks import BlockedData, RemoteProbe, backend_for
from .statistics import Distinct, RowStatistics, Statistics, add_statistics

__all__ = [
    "ENGINE_PARAMETER_CONSTRAINTS",
    "MAX_BACKOFF",
    "PROBE_SIZE",
    "REQUIRED_HOOKS",
    "OPTIONAL_HOOKS",
    "StepContext",
    "SVIEstimator",
    "even_batches",
]

#: Largest number of times one step's size is halved before the step is
#: skipped (its minibatch then leaves the globals unchanged).
MAX_BACKOFF = 30
#: Accepted steps in a row after which a reduced step size is doubled back
#: (each recovery that is followed by a rejection doubles this run).
RECOVERY_STEPS = 20
#: Rows of the probe sample that online ``fit`` tests its steps on.
PROBE_SIZE = 2000
# Rows of a sparse X gathered at once by the default online batching.
SPARSE_GATHER_ROWS = 8192
#: Fewest rows of a minibatch block worth a thread of its own (``n_jobs``).
MIN_BLOCK_ROWS = 2048

ENGINE_PARAMETER_CONSTRAINTS = {
    "learning_method": [StrOptions({"batch", "online"})],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_offset": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_decay": [Interval(numbers.Real, 0, 1, closed="both")],
    "learning_rate": [
        None,
        Interval(numbers.Real, 0, 1, closed="right"),
        HasMethods(["__call__", "validate", "observe"]),
    ],
    "total_samples": [
        StrOptions({"auto"}),
        Interval(numbers.Real, 0, None, closed="neither"),
    ],
    "update_order": [StrOptions({"sequential", "joint"})],
    "step_safety": ["boolean"],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

#: The hooks every model must implement (each has a stub that raises).
REQUIRED_HOOKS = (
    "_initialize_globals",
    "_prior_natural",
    "_local_step",
    "_expected_stats",
    "_local_bound",
    "_global_bound",
)
#: The hooks a model may override; each has a documented default.
OPTIONAL_HOOKS = (
    "_global_factors",
    "_factor_families",
    "_row_groups",
    "_resident_row_groups",
    "_row_summary",
    "_hierarchical_factors",
    "_local_depends_on_globals",
    "_initial_globals_are_data",
    "_scheduled_row_steps",
    "_validate_input",
    "_prepare_block",
    "_row_ids",
    "_row_weights",
    "_grow_rows",
    "_online_batches",
    "_prior_message",
    "_update_factor",
    "_factor_target",
    "_update_rule",
    "_pass_lower_bound",
    "_step_acceptable",
    "_probe_loss",
    "_prepare_probe",
    "_probe_growth",
    "_probe_batch_steps",
    "_batch_steps_raise_elbo",
    "_elbo_tolerance",
    "_local_step_and_bound",
    "_batch_line_search",
    "_hyperparameter_statistics",
    "_update_hyperparameters",
    "_end_of_pass",
    "_parallel_local_step",
    "_prepare_local_steps",
    "_sample_count",
    "_evaluate_pass",
    "_pass_converged",
    "_warn_not_converged",
    "_on_params_updated",
    "_data_vocabulary",
    "_fit_data",
    "_seed_local_steps",
    "_transient_attributes",
    "_data_summary",
    "_adopt_data_summary",
    "_start_sample_size",
)


def _blend(current, target, rho, grads=None):
    """Return ``current + rho * (target - current)`` for a tuple of arrays.

    ``rho`` is a scalar or one value per row (leading axis).  When
    ``grads`` is a list, the natural gradients ``target - current`` are
    appended to it.
    """
    out = []
    for c, g in zip(current, target):
        diff = np.subtract(g, c)
        if grads is not None:
            grads.append(diff.copy())
        diff *= _per_row(rho, diff)
        diff += c
        out.append(diff)
    return tuple(out)


def _all_finite(params):
    """Whether every array of every factor in ``params`` is finite."""
    return all(
        value.finite if isinstance(value, ResidentRows) else all(np.all(np.isfinite(a)) for a in value)
        for value in params.values()
    )


def _per_row(rho, a):
    """``rho`` shaped to broadcast over the rows (leading axis) of ``a``."""
    if np.ndim(rho) == 0:
        return rho
    return np.reshape(rho, np.shape(rho) + (1,) * (np.ndim(a) - np.ndim(rho)))


def _row_blocks(X, threads):
    """X cut into at most ``threads`` contiguous blocks of ``MIN_BLOCK_ROWS`` rows or more.

    None when fewer than two such blocks fit: X is then worked on whole.
    """
    if threads < 2:  # (X need not have a shape then: a model's own minibatch)
        return None
    n_blocks = min(threads, X.shape[0] // MIN_BLOCK_ROWS)
    if n_blocks < 2:
        return None
    size = -(-X.shape[0] // n_blocks)
    return [X[s] for s in even_batches(X.shape[0], size)]


def even_batches(n_samples, batch_size):
    """Slices cutting ``n_samples`` rows into near-equal minibatches.

    ``ceil(n_samples / batch_size)`` slices whose sizes differ by at most
    one, none larger than ``batch_size`` (unlike
    :func:`sklearn.utils.gen_batches`, whose last slice takes the
    remainder, however small).

    Parameters
    ----------
    n_samples : int
        Number of rows.
    batch_size : int
        Largest minibatch size, at least 1.

    Returns
    -------
    list of slice
        Consecutive slices covering ``range(n_samples)``; empty for no rows.

    Examples
    --------
    >>> from skvi.engine import even_batches
    >>> [(s.start, s.stop) for s in even_batches(10, 4)]
    [(0, 4), (4, 7), (7, 10)]
    """
    n_samples, batch_size = int(n_samples), int(batch_size)
    n_batches = -(-n_samples // batch_size)
    if n_batches == 0:
        return []
    sizes = np.full(n_batches, n_samples // n_batches)
    sizes[: n_samples % n_batches] += 1
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class StepContext:
    """What the hooks of one step are told: online or batch, ``t``, ``rho``.

    The engine builds one per attempt of a step (a rejected step is retried
    with a smaller ``rho`` and a new context) and hands it to
    :meth:`~SVIEstimator._update_factor`,
    :meth:`~SVIEstimator._step_acceptable` and
    :meth:`~SVIEstimator._update_hyperparameters`.

    Parameters
    ----------
    online : bool
        False for a batch (coordinate-ascent) step, ``rho = 1``.
    t : int
        The step's number, counting from 1 over the fit.
    rho : float
        The step size of factors with one counter: the schedule's value at
        ``t`` times :attr:`backoff`.
    backoff : float
        The step-safety factor in ``(0, 1]`` (halved at each rejection).
    scale : float
        ``N / |S|``: the scaling of the minibatch's statistics.
    prior : dict
        Natural parameters of every factor's prior.
    grads : list or None, default=None
        When the schedule needs the natural gradient (``AdaptiveRate``),
        a list to which the updates append ``target - current``.
    in_pass : bool, default=False
        True when the step is one of an online pass of ``fit`` or of a
        ``partial_fit`` call, after which the engine calls
        :meth:`~SVIEstimator._end_of_pass`; False for a batch step and for
        ``apply_statistics``.

    Attributes
    ----------
    params : dict
        The natural parameters of the step so far (with
        ``update_order='sequential'``, the factors already updated).
    row_scale, row_rho : ndarray or None
        For a factor of a per-row group, while :meth:`~SVIEstimator._update_factor`
        runs: each updated row's ``N_i / C_i`` and its own step size.
    rule_state : dict or None
        The update rule's state (AdaGrad accumulators) of the factor being
        updated, for its rows when it is a row group.

    Examples
    --------
    >>> from skvi.engine import StepContext
    >>> ctx = StepContext(online=True, t=3, rho=0.5, backoff=1.0, scale=10.0, prior={})
    >>> ctx.online, ctx.t, ctx.rho
    (True, 3, 0.5)
    """

    def __init__(self, online, t, rho, backoff, scale, prior, grads=None, in_pass=False):
        self.online = online
        self.in_pass = in_pass
        self.t = t
        self.rho = rho
        self.backoff = backoff
        self.scale = scale
        self.prior = prior
        self.grads = grads
        self.params = None
        self.row_scale = None
        self.row_rho = None
        self.rule_state = None
        self.new_rule_state = None

    def keep_rule_state(self, state):
        """Record the update rule's new state, kept if the step is accepted.

        Parameters
        ----------
        state : dict or None
            The rule's state after this step (for a row group: of the
            updated rows, in the order of their statistics).
        """
        self.new_rule_state = state


class _Blocks:
    """The local steps of a minibatch's blocks (``n_jobs`` threads)."""

    __slots__ = ("data", "locals")

    def __init__(self, data, locals_):
        self.data = data
        self.locals = locals_


class _EngineState:
    """Everything the engine keeps between steps; no model reads it."""

    def __init__(self, schedule, prior):
        self.schedule = schedule
        self.prior = prior
        self.backoff = 1.0
        self.accepted_run = 0  # accepted steps since the last rejection
        self.recovery_steps = RECOVERY_STEPS
        self.recovered = False  # whether the backoff was last raised by a recovery
        self.n_accepted = 0
        self.rejection_warned = False
        # Rejections that were a batch line search's backtracking (normal
        # operation of a damped Newton step, not worth a warning).
        self.backtracks = 0
        # (parameters, their full-data ELBO) from the last batch-step test,
        # and (parameters, local step) when the model computed both at once.
        self.known_bound = None
        self.known_local = None
        self.rule_states = {}
        self.init_parts = {}
        self.init_weight = {}
        self.init_nonzero = {}
        self.auto_total = None  # N of the last 'auto' step
        self.view_version = 0  # bumped when the model's attributes change mid-fit
        self.in_pass = False  # inside an online pass of fit or a partial_fit call
        self.rows = {}
        self.probe = None
        self.probe_best = None
        self.last_batch = None
        self.rng = None
        # Monitoring (skvi.engine.monitoring): the per-step trace of rho and
        # rejections, the per-pass history, the engine's clock and the
        # samples processed since fit began, and the last step's
        # (rho, rejected attempts, accepted).
        self.trace = _Table(TRACE_DTYPE)
        self.history = _Table(HISTORY_DTYPE)
        self.elapsed = 0.0
        self.samples = 0.0
        self.calls = 0
        self.last_step = None


#: Methods that take rows and return one value (or row of values) per row:
#: on a dask collection they run blockwise and return a dask array.
BLOCKWISE_METHODS = ("transform", "predict", "predict_proba", "predict_log_proba", "score_samples")


def _blockwise_elsewhere(method):
    """``method(X, ...)``, or its lazy blockwise result when X is held elsewhere (dask)."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        backend = backend_for(X)
        if backend is not None:
            return backend.blockwise(self, method, X, *args, **kwargs)
        return method(self, X, *args, **kwargs)

    wrapper._blockwise_elsewhere = True
    return wrapper


class SVIEstimator(BaseEstimator):
    """Base of every skvi estimator: stochastic (and batch) variational inference.

    An estimator inherits from this class (after scikit-learn's mixins),
    stores the engine's hyperparameters in its ``__init__`` (names below)
    and implements the model hooks.  Its ``fit`` and ``partial_fit`` call
    :meth:`_engine_fit` and :meth:`_engine_partial_fit`; the map-reduce
    split, :meth:`compute_statistics` and :meth:`apply_statistics`, comes
    with the base.

    **Engine hyperparameters** (read from ``self``):

    learning_method : {'batch', 'online'}
        ``'batch'``: coordinate ascent, every step uses all the data with
        ``rho = 1``.  ``'online'``: stochastic natural-gradient steps on
        shuffled minibatches of at most ``batch_size`` rows; when one
        minibatch holds all the rows, ``fit`` takes the batch steps (the
        SVI step with ``S`` = all data is coordinate ascent at ``rho = 1``,
        and smaller steps would stop short of the optimum on small data).
    batch_size : int
        Largest number of rows per minibatch, in online ``fit`` and in
        ``partial_fit``: both cut their rows into ``ceil(n / batch_size)``
        near-equal minibatches (:func:`even_batches`).
    max_iter : int
        Maximum number of passes over the data in ``fit`` (0, where a model
        allows it, initialises the globals only).
    tol : float
        ``fit`` stops when the relative change of the ELBO between two
        passes, ``|L_k - L_{k-1}| / |L_{k-1}|``, falls below ``tol``.
    learning_offset, learning_decay : float
        ``tau`` and ``kappa`` of the default schedule
        ``rho_t = (t + tau) ** -kappa``.
    learning_rate : None, float or :class:`~skvi.schedules.Schedule`
        Overrides the two above when given: a schedule object, or a float
        for a constant step.
    total_samples : 'auto' or float
        The ``N`` in ``N / |S|`` for ``partial_fit`` (``fit`` always uses
        the number of rows it is given).  ``'auto'`` follows the rows seen
        so far by ``partial_fit``, including the current minibatch: the
        right choice for a stream of unknown length, where the data part of
        the globals then describes the data seen so far (``N`` is the
        running count divided by ``1 -`` the initial globals' remaining
        weight, and the data part grows with it: ``_auto_total``,
        ``_rescale_data_parts``).
        Every call counts its rows: a second pass over the same data counts
        them again, so for several passes over a data set give its size.
    update_order : {'sequential', 'joint'}
        With several global factors: ``'sequential'`` (Paquet's option (a))
        updates each factor in turn, each target computed from the factors
        already updated in this step; ``'joint'`` (option (b), Hoffman et
        al.) computes every target from the same snapshot, then updates all.
        Only ``'sequential'`` is coordinate ascent, which guarantees a
        non-decreasing ELBO in batch mode.  Estimators without this
        parameter use ``'sequential'``.
    step_safety : bool
        When True, a step that makes a global factor invalid (non-finite,
        non-positive precision, Gamma shape or rate, or a covariance that is
        not positive definite), that the model's ``_step_acceptable``
        flags as an overshoot, or (online, for models with a
        ``_probe_loss``) that raises the expected loss per row of a probe
        sample too far, is rejected: the previous parameters are
        restored, ``rho`` is halved for this and later steps, and the step is
        retried, up to ``MAX_BACKOFF`` halvings, after which the minibatch
        is skipped.  After ``RECOVERY_STEPS`` accepted steps in a row the
        step size doubles back (up to the schedule's); when a recovered size
        is rejected again before as many steps, the wait doubles, so a fit
        does not oscillate.  With ``step_safety=False`` invalid factors are
        accepted, but a step with a non-finite value is always skipped: NaN
        never leaves a fit.  Rejections are counted in
        ``n_rejected_steps_`` and reported once with a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    random_state : int, RandomState or None
        Seeds initialisation and the minibatch shuffling of online ``fit``.
    verbose : int
        ``1``: a progress line on standard error, redrawn in place during
        a pass (minibatch, steps per second, elapsed time, an ETA for
        ``max_iter`` passes and the last known ELBO) and finished with a
        newline after each pass (ELBO, steps per second, elapsed time); a
        model with a ``verbose_interval`` parameter keeps every that many
        pass lines, and the last pass's always.  Each ``partial_fit`` call
        draws the same over its minibatches and ends with one line.
        ``2`` or more: no display; the :mod:`logging` logger ``"skvi"``
        gets one INFO record per pass and per ``partial_fit`` call, and one
        DEBUG record per step (each record's ``skvi`` attribute is its
        :class:`~skvi.engine.FitRecord`); configure logging to see them,
        e.g. ``logging.basicConfig(level=logging.INFO)``.  See also
        :func:`skvi.engine.monitor`.
    n_jobs : int or None
        For a model whose ``_parallel_local_step()`` is True: threads over
        which a minibatch is split into blocks of at least
        ``MIN_BLOCK_ROWS`` rows (the map-reduce split: each block's local
        step and statistics on its thread, their sum for the step).  None
        means 1 (joblib's convention).  Estimators without the parameter
        run on one thread.

    **Required model hooks** (each stub raises ``NotImplementedError``
    naming the hook):

    _initialize_globals(X, random_state) -> dict
        Initial natural parameters of every global factor,
        ``{name: tuple of arrays}``.
    _prior_natural() -> dict
        Natural parameters of the prior of every global factor
        (broadcastable to the posterior's).
    _local_step(X, params) -> local
        The E-step on minibatch X with the globals ``params`` fixed:
        whatever the other hooks need about X (None when there are no
        local latent variables and nothing to precompute).
    _expected_stats(name, X, local, params) -> statistics
        Expected sufficient statistics of X for factor ``name``, summed
        over the rows of X, given ``params``: a tuple of arrays shaped like
        the natural parameters, or a
        :class:`~skvi.engine.RowStatistics` for the rows they touch.  With
        ``update_order='sequential'`` ``params`` holds the factors already
        updated in this step.  For a factor of ``_hierarchical_factors``
        X and local are None.
    _local_bound(X, local, params) -> float
        The data part of the ELBO for the rows of X (expected log joint of
        data and local variables minus the local entropies), unscaled.
    _global_bound(params) -> float
        The global part of the ELBO: minus the KL divergence of every global
        factor to its prior.

    **Optional model hooks** (with their defaults):

    _global_factors : tuple of str
        Names of the global factors, in sequential update order (default:
        the keys of ``_factor_families``).
    _factor_families : dict
        Factor name to an exponential family of :mod:`skvi.expfam` (its
        ``valid_natural`` is the step-safety test).
    _row_groups : tuple of str
        Factors that are stacks of per-row factors along their first axis
        (users and items of matrix factorization).  For each the engine
        keeps per-row step counters (step ``t_i``, size ``rho(t_i)``),
        per-row totals ``N_i`` (from ``_row_ids``) and update-rule state,
        scales row ``i``'s statistics by ``N_i / C_i`` (Paquet's Alg. 1),
        tests every updated row's validity, and commits counters and state
        only with an accepted step.  Default: none.
    _resident_row_groups : tuple of str
        Row groups whose row ``i`` is data row ``i``'s own factor (the
        documents' ``q(eta_d)`` of a correlated topic model).  In memory
        they are row groups like any other; on a cluster each block keeps
        its rows, their counters and rule state, and takes their step where
        it is, so that nothing of the size of the data travels.  Default:
        none.
    _row_summary(name, natural, steps, totals)
        What the model needs of every row of a resident group, as
        statistics that add over blocks (:func:`~skvi.engine.add_statistics`),
        which its closed forms over the rows and its part of the ELBO read
        (a service, below).  ``natural`` holds the rows' natural
        parameters, ``steps`` and ``totals`` their accepted steps and
        ``N_i``.
    _hierarchical_factors : tuple of str
        Factors whose children are other global factors rather than data
        (the prior precisions of matrix factorization's nodes): their
        statistics come from ``params`` alone, once per step, unscaled.
        Default: none.
    _local_depends_on_globals : bool
        False when the local step only summarises the data, so batch mode
        computes it once (default True).
    _scheduled_row_steps : bool
        True when batch steps of per-row factors follow each row's schedule
        too, as online steps do (targets that are Monte Carlo estimates,
        whose noise a full step would never average out); default False:
        a batch step moves every row by ``rho = 1``.
    _initial_globals_are_data : bool
        True when ``_initialize_globals`` fits the globals to the rows it is
        given (a mixture's k-means start): with ``total_samples='auto'``
        they are then those rows' data part and grow with the running
        count, instead of a start that the steps forget (default False).
    _validate_input(X, reset)
        Check and convert X; ``reset=True`` on the first fit.  It may return
        any object with ``shape[0]`` and row indexing (``X[rows]``), e.g.
        a small container of aligned arrays for supervised data.  Default:
        X unchanged.
    _prepare_block(X, y) -> data
        Check and convert a block of :meth:`compute_statistics` as
        ``partial_fit`` does after its first call (default:
        ``_validate_input(X, reset=False)``).
    _row_ids(X) -> dict
        For each row group, the row of every data point of X (an int array
        of length ``X.shape[0]``): the engine counts them into ``N_i`` and
        grows the group when an id is new.  Default: no row groups.
    _row_weights(X) -> ndarray or None
        The weight of every data point of X in the rows' counts ``N_i``
        (a point of weight 2 counts twice, as in ``_sample_count``).
        Default None: every point counts once.
    _grow_rows(name, n_new, rated, random_state) -> tuple of arrays
        Natural parameters of ``n_new`` rows appended to group ``name`` by
        ``partial_fit`` (``rated``: which of them the minibatch rates).
    _online_batches(X, random_state)
        Yield ``(minibatch, N / |S|)`` for one online pass (default:
        shuffled near-equal minibatches of at most ``batch_size`` rows).
    _prior_message(name, params, rows) -> tuple of arrays
        The prior part of factor ``name``'s target under ``params`` (for a
        row group: of ``rows``).  Default: the fixed prior; a factor with a
        hierarchical prior returns its parent's expected natural
        parameters.
    _update_factor(name, current, stats, ctx) -> (new, valid)
        The update of one factor towards ``prior + scale * stats`` (for a
        row group, each row by its own ``ctx.row_scale`` and
        ``ctx.row_rho``) with its update rule, and its validity.
        Override it for a cheaper representation of the statistics (LDA's
        words of the minibatch) or a factor-specific update.
    _factor_target(name, current, stats, ctx) -> tuple of arrays
        The target ``prior + scale * stats`` of a factor that is not a row
        group; the default :meth:`_update_factor` moves towards it with the
        factor's update rule.  Override it for a target that is not linear
        in the statistics (a closed-form optimum, a trust region) and keep
        the engine's step, rule state and validity test.
    _update_rule(name) -> UpdateRule or None
        A rule from :mod:`skvi.update_rules` for a Gaussian factor
        (default None: the natural-gradient blend).  Its state (AdaGrad
        accumulators) is kept by the engine and committed only with an
        accepted step.
    _pass_lower_bound(X) -> float
        The full-data ELBO after a pass of ``fit`` (default:
        ``_global_bound`` plus ``_local_bound`` of a fresh ``_local_step``
        on X).
    _step_acceptable(X, params, ctx) -> bool
        With ``step_safety``, a model's test of a proposed step whose
        factors are all valid (``params``; the current ones are still in
        ``natural_params_``).  False rejects it like an invalid step.
        Default True.  X is None for a step from summed statistics.
    _probe_loss(probe, params) -> float or None
        The expected negative log-likelihood per row of the probe under
        ``params`` (default None: no probe test).  With ``step_safety``, an
        online step is rejected when this loss is not finite or exceeds the
        smallest value seen after an accepted step by more than
        ``_probe_growth`` times that value.  The probe is a fixed random
        sample of ``PROBE_SIZE`` rows in online ``fit`` (drawn from a copy
        of the random state, so the minibatches are unchanged) and, in
        ``partial_fit``, the previous minibatch of the call (the minibatch
        itself for the first).  The probe is dropped when the call returns:
        a fitted estimator keeps no training rows.
    _prepare_probe(X) -> probe
        Index the probe rows once for ``_probe_loss`` (default: as they are).
    _probe_growth : float
        The fraction of its best value by which a step may raise the
        probe's loss (default 1.0: rejected when the loss more than
        doubles).
    _batch_steps_raise_elbo() -> bool
        Whether, with ``step_safety``, a batch step that lowers the
        full-data ELBO (``_global_bound`` plus ``_local_bound``) is rejected
        (default False): for Newton-like fixed-point steps, which can
        overshoot while every factor stays valid.  The accepted step's ELBO
        is the pass's.  ``_elbo_tolerance`` (default 1e-9) is the relative
        fall still accepted.
    _local_step_and_bound(X, params) -> (local, bound) or None
        The local step at ``params`` and its data bound from one pass over
        the rows (default None): the ELBO test above keeps ``local`` for the
        next batch E-step at the accepted ``params`` (single-threaded).
    _probe_batch_steps() -> bool
        Whether batch ``fit`` tests its steps on the probe too (default
        False): for fixed-point steps that are not guaranteed to increase
        the ELBO and whose exact ELBO is costly.
    _batch_line_search() -> bool
        Whether a rejected batch step's halving is a line search that the
        next batch step starts again from the full step (default False: the
        reduced size is kept and recovers after accepted steps).  For
        deterministic batch targets (Newton-like fixed-point steps), where a
        persistent halving turns quadratic convergence into a crawl.
    _hyperparameter_statistics(X, local) -> statistics or None
        What the empirical-Bayes step needs from a block (added over
        blocks like the factors' statistics; default None).
    _update_hyperparameters(hyper, ctx) -> bool
        An empirical-Bayes step on the prior (or on the likelihood's own
        parameters) after each accepted step, from the summed
        ``_hyperparameter_statistics``; return True when it changed the
        model, to have the engine re-read ``_prior_natural()`` and send the
        workers of a fit on a cluster a fresh copy (default: no step).
    _end_of_pass(ctx) -> bool
        A step of the model after the last step of each online pass of
        ``fit`` and of each ``partial_fit`` call, for a model that moves
        some parameters once per pass rather than once per minibatch (the
        correlated topic model's ``update_model_every='pass'``).  ``ctx``
        describes the pass as one step: in ``fit`` it covers every row
        (``rho = 1``, ``scale = 1``, ``t`` the pass); in ``partial_fit``
        it is the call's (``t`` the call's number, ``rho`` the schedule
        there, ``scale = N`` over the call's samples).  Not called after a
        pass or call that a callback stopped; the steps of a pass carry
        ``ctx.in_pass``.  ``partial_fit``'s ``lower_bound_`` is its last
        minibatch's, from before this step.  Return True when the model
        changed, as ``_update_hyperparameters`` (default: no step).
    _sample_count(X) -> float
        How many samples the rows of X count for in ``N / |S|`` and the
        running count (default ``X.shape[0]``; a model with row weights
        returns their sum).
    _parallel_local_step() -> bool
        Whether ``n_jobs`` may split a minibatch into blocks whose local
        steps and statistics run on threads (default False).  A model says
        True when its local step releases the GIL or is vectorised, and is
        deterministic (a Monte-Carlo local step drawing from one generator
        would make the fit depend on the threads' timing, unless it draws
        in ``_prepare_local_steps``).
    _prepare_local_steps(X, params)
        Called on the calling thread before the local steps of an
        in-memory minibatch run, whole or in blocks on threads: draw here
        what must not depend on how ``n_jobs`` cuts the minibatch (the
        correlated topic model's Monte Carlo draws, from one generator in
        one order).  Default: nothing.
    _evaluate_pass(it) -> bool
        Whether ``fit`` computes the ELBO after pass ``it`` (default:
        every pass).  Passes not evaluated add nothing to
        ``lower_bounds_`` and are not tested for convergence.
    _pass_converged(previous, bound) -> bool
        The convergence test between two evaluated passes (default:
        relative ELBO change below ``tol``).
    _warn_not_converged() -> bool
        Whether ``fit`` warns when it stops at ``max_iter`` (default: when
        ``tol > 0`` and ``max_iter > 1``).
    _on_params_updated()
        Refresh derived fitted attributes after fit and partial_fit.
    _data_vocabulary(X, y, sample_weight) -> dict or None
        The distinct values that every block of a fit on a cluster must
        agree on before any block is validated, as a dict of
        :class:`~skvi.engine.Distinct` (merged over the blocks by union).
        Default: a classifier's labels, ``{"classes": Distinct(y)}``;
        matrix factorization adds its user and item ids.
    _fit_data(X, y, sample_weight, vocabulary) -> data
        What ``fit`` makes of its input before the engine's loop (the
        validated rows, targets and weights), for one block of a fit on a
        cluster (:mod:`skvi.distributed`); ``vocabulary`` holds the values
        of ``_data_vocabulary`` over every block (a dict of sorted arrays;
        None in memory).  A model without it cannot fit on a cluster.
    _seed_local_steps(random_state)
        Draw the local step's random numbers (LDA's initial gamma, Monte
        Carlo samples) from ``random_state``: each block of a fit on a
        cluster gets its own generator (default: nothing to seed).
    _transient_attributes : tuple of str
        Attributes an in-memory fit keeps for its duration only (buffers,
        thread pools, the data); they never travel to a worker.
    _data_summary(X) -> summary or None
        What the start of a fit needs from all of its rows (a
        :class:`~skvi.engine.Moments`, say: the defaults of a prior taken
        from the data), in a form that adds over blocks of rows (see
        :func:`~skvi.engine.add_statistics`).  Computed before
        ``_initialize_globals`` on the whole of X, or summed over the
        blocks of a fit on a cluster, and handed to
        ``_adopt_data_summary``.  Default None: nothing.
    _adopt_data_summary(summary)
        Set what the summary decides (priors, checks of the row count)
        before ``_initialize_globals`` runs.  Default: nothing.
    _start_sample_size() -> int or None
        How many rows, drawn uniformly over all the blocks of a fit on a
        cluster, ``_initialize_globals`` receives (a k-means start on a
        subsample); the draw is ``random_state.choice(n, size,
        replace=False)`` sorted, as an in-memory start subsamples.  Default
        None: the first block, as a first ``partial_fit`` minibatch.

    **Services for models**: ``_row_steps(name)`` (accepted updates of each
    row, counting the rows of the step being tried),
    ``_row_totals(name)`` (each row's ``N_i``),
    ``_rows_summary(name, params=None)`` (``_row_summary`` of every row of a
    resident group: computed from the rows in memory, summed by the blocks
    that hold them on a cluster) and ``_warn(message, category)`` (a warning attributed to the user's line,
    however many frames of skvi and scikit-learn lie between).

    Attributes
    ----------
    natural_params_ : dict
        Natural parameters of every global factor.
    lower_bounds_ : list of float
        ELBO after each evaluated pass of ``fit`` (the exact full-data
        ELBO), and after each ``partial_fit`` minibatch (the global part
        plus ``N / |S|`` times the minibatch's data part).
    lower_bound_ : float
        The last entry of ``lower_bounds_``.
    n_iter_ : int
        Passes over the data made by the last ``fit``.
    n_batch_iter_ : int
        Natural-gradient steps ``t`` taken so far.
    n_samples_seen_ : int
        Rows processed by ``fit`` (last call) or all ``partial_fit`` calls.
    converged_ : bool
        Whether the last ``fit`` met ``tol`` before ``max_iter``.
    n_rejected_steps_ : int
        Steps rejected by step safety.
    history_ : ndarray
        Structured array of ``time``, ``samples``, ``steps`` and ``elbo``
        after each pass of ``fit`` and each ``partial_fit`` call (see the
        property).
    step_trace_ : ndarray
        Structured array of ``t``, ``rho``, ``rejected`` and ``accepted``
        for each step (thinned beyond ``TRACE_SIZE`` steps; see the
        property).

    See Also
    --------
    skvi.GaussianGammaVB : a complete model built on this base.
    skvi.engine.monitor : a callback after every step and pass.
    skvi.plotting : ELBO curves and step sizes from ``history_`` and
        ``step_trace_``.

    Examples
    --------
    Every skvi estimator is an ``SVIEstimator``; its ``fit`` is the engine's
    loop.

    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine import SVIEstimator
    >>> est = GaussianGammaVB(learning_method="online", batch_size=10, max_iter=2, tol=0)
    >>> isinstance(est, SVIEstimator)
    True
    >>> X = np.random.RandomState(0).normal(size=(100, 2))
    >>> est.fit(X).n_batch_iter_
    20
    >>> sorted(est.natural_params_)
    ['mean', 'precision']
    >>> est.history_["samples"]  # one row per pass
    array([100., 200.])
    """

    _factor_families = {}
    _row_groups = ()
    _resident_row_groups = ()
    _hierarchical_factors = ()
    _local_depends_on_globals = True
    _probe_growth = 1.0

    # --------------------------------------------------------- required hooks
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # transform / predict / ... of every model accept data held elsewhere.
        for name in BLOCKWISE_METHODS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and not getattr(method, "_blockwise_elsewhere", False):
                setattr(cls, name, _blockwise_elsewhere(method))

    def _missing_hook(self, hook, what):
        raise NotImplementedError(
            f"{type(self).__name__} must implement the engine hook {hook}: {what} "
            "(see skvi.engine.SVIEstimator)."
        )

    def _initialize_globals(self, X, random_state):
        self._missing_hook(
            "_initialize_globals(X, random_state)",
            "the initial natural parameters of every global factor",
        )

    def _prior_natural(self):
        self._missing_hook("_prior_natural()", "the natural parameters of every factor's prior")

    def _local_step(self, X, params):
        self._missing_hook(
            "_local_step(X, params)", "the E-step of a minibatch (return None if there is none)"
        )

    def _expected_stats(self, name, X, local, params):
        self._missing_hook(
            "_expected_stats(name, X, local, params)",
            "the expected sufficient statistics of X for one global factor",
        )

    def _local_bound(self, X, local, params):
        self._missing_hook("_local_bound(X, local, params)", "the data part of the ELBO of X")

    def _global_bound(self, params):
        self._missing_hook("_global_bound(params)", "minus the KL of the global factors to their priors")

    # --------------------------------------------------------- optional hooks
    @property
    def _global_factors(self):
        return tuple(self._factor_families)

    _initial_globals_are_data = False
    _scheduled_row_steps = False

    def _validate_input(self, X, reset):
        return X

    def _row_ids(self, X):
        return {}

    def _row_weights(self, X):
        return None

    def _grow_rows(self, name, n_new, rated, random_state):
        raise NotImplementedError(
            f"{type(self).__name__} has the row group {name!r} but no _grow_rows hook "
            "to add the rows partial_fit meets for the first time."
        )

    def _prior_message(self, name, params, rows=None):
        st = getattr(self, "_svi", None)
        if st is None:  # a worker's copy of the model (engine.blocks.worker_view)
            return self._worker_prior[name]
        return st.prior[name]

    def _row_summary(self, name, natural, steps, totals):
        self._missing_hook(
            "_row_summary(name, natural, steps, totals)",
            f"what the model needs of every row of the resident group {name!r}",
        )

    def _update_rule(self, name):
        return None

    def _pass_lower_bound(self, X):
        params = self.natural_params_
        local = self._e_step(X, params)
        return self._global_bound(params) + self._data_bound(X, local, params)

    def _step_acceptable(self, X, params, ctx):
        return True

    def _batch_steps_raise_elbo(self):
        return False

    #: Relative fall of the ELBO that ``_batch_steps_raise_elbo`` still
    #: accepts (rounding in the ELBO's sums).
    _elbo_tolerance = 1e-9

    def _local_step_and_bound(self, X, params):
        """The local step of X at ``params`` and its data bound, or None.

        For ``_batch_steps_raise_elbo``: the test evaluates the ELBO at the
        tried parameters, and if they are accepted the next batch E-step is
        at the same parameters.  A model that gets both from one pass over
        the rows returns ``(local, bound)`` and the engine reuses ``local``
        for that E-step (of each block when ``n_jobs`` threads split the
        rows; not for data held elsewhere); the default None keeps
        ``_local_bound`` and a separate E-step.
        """
        return None

    def _probe_loss(self, probe, params):
        return None

    def _data_vocabulary(self, X, y, sample_weight):
        if y is None or not is_classifier(self):
            return None
        return {"classes": Distinct(np.asarray(y).ravel())}

    def _fit_data(self, X, y, sample_weight, vocabulary):
        raise NotImplementedError(f"{type(self).__name__} cannot yet fit on a cluster.")

    def _seed_local_steps(self, random_state):
        pass

    _transient_attributes = ()

    def _data_summary(self, X):
        return None

    def _adopt_data_summary(self, summary):
        pass

    def _start_sample_size(self):
        return None

    def _fit_blocks(self, data):
        """``fit`` on validated blocks held elsewhere (a model may add its own end)."""
        return self._engine_fit(data)

    def _fit_elsewhere(self, X, y=None, sample_weight=None):
        """``fit`` when X is held elsewhere (``backend_for(X)``: a dask collection):
        the engine's loop with the blocks kept where they are, or None for data in memory.
        """
        backend = backend_for(X)
        if backend is None:
            return None
        if type(self)._fit_data is SVIEstimator._fit_data:
            raise NotImplementedError(
                f"{type(self).__name__} cannot yet fit on a dask cluster; call "
                ".compute() on the data to fit it in memory."
            )
        schedule = make_schedule(self.learning_rate, self.learning_offset, self.learning_decay)
        if self._resident_row_groups and self.learning_method == "online" and (
                schedule.needs_gradient):
            raise NotImplementedError(
                f"{type(self).__name__} keeps its {', '.join(self._resident_row_groups)} "
                "factors on the workers of a cluster, where a schedule that needs the "
                "natural gradient (AdaptiveRate) cannot see them; use a Robbins-Monro "
                "schedule on a cluster."
            )
        return backend.fit(self, X, y, sample_weight)

    def _prepare_probe(self, X):
        return X

    def _hyperparameter_statistics(self, X, local):
        return None

    def _update_hyperparameters(self, hyper, ctx):
        return False

    def _end_of_pass(self, ctx):
        return False

    @contextmanager
    def _in_pass(self):
        """The steps inside are those of a pass that ``_end_of_pass`` ends (``ctx.in_pass``)."""
        st = self._svi
        st.in_pass = True
        try:
            yield
        finally:
            st.in_pass = False

    def _pass_step(self, t, rho, scale):
        """The model's step at the end of a pass (``_end_of_pass``), and its consequences."""
        st = self._svi
        ctx = StepContext(online=True, t=t, rho=rho, backoff=1.0, scale=scale, prior=st.prior)
        if self._end_of_pass(ctx):
            self._model_changed()

    def _model_changed(self):
        """The model's own parameters moved: the prior, the workers' copies, the cached bounds."""
        st = self._svi
        st.prior = self._prior_natural()
        st.view_version += 1  # workers' copies of the model are stale
        st.known_bound = st.known_local = None  # the objective moved with the model

    def _parallel_local_step(self):
        return False

    def _prepare_local_steps(self, X, params):
        pass

    def _sample_count(self, X):
        return X.shape[0]

    def _probe_batch_steps(self):
        return False

    def _batch_line_search(self):
        return False

    def _evaluate_pass(self, it):
        return True

    def _pass_converged(self, previous, bound):
        change = abs(bound - previous) / max(abs(previous), np.finfo(float).tiny)
        return change < self.tol

    def _warn_not_converged(self):
        return self.tol > 0 and self.max_iter > 1

    def _on_params_updated(self):
        pass

    # -------------------------------------------------------------- services
    def _row_steps(self, name):
        """Accepted updates of each row of group ``name``, the current step's rows counted."""
        group = self._svi.rows[name]
        if group.pending is None:
            return group.steps
        steps = group.steps.copy()
        steps[group.pending] += 1
        return steps

    def _rows_summary(self, name, params=None):
        """``_row_summary`` of every row of group ``name`` in ``params`` (default: the current).

        In memory it is computed from the rows; on a cluster the blocks
        computed it where the rows are, with their step.
        """
        factor = (self.natural_params_ if params is None else params)[name]
        if isinstance(factor, ResidentRows):
            return factor.summary
        return self._row_summary(name, factor, self._row_steps(name), self._row_totals(name))

    def _resident(self, name, X):
        """Whether factor ``name`` stays with the blocks of X (a resident group on a cluster)."""
        return name in self._resident_row_groups and isinstance(X, BlockedData)

    def _row_totals(self, name):
        """``N_i``: the data points of each row of group ``name``."""
        st = getattr(self, "_svi", None)
        if st is None:  # a worker's copy of the model (engine.blocks.worker_view)
            return self._worker_row_totals[name]
        return st.rows[name].totals

    def _warn(self, message, category=UserWarning):
        """Warn at the user's line (the first frame outside skvi and scikit-learn)."""
        warn_user(message, category)

    # ------------------------------------------------------------ monitoring
    def _monitoring_state(self, attribute):
        st = getattr(self, "_svi", None)
        if st is None or not hasattr(st, "history"):
            raise NotFittedError(
                f"This {type(self).__name__} instance has no {attribute}: call fit or "
                "partial_fit first."
            )
        return st

    @property
    def history_(self):
        """Time, samples seen, steps and ELBO after each pass or ``partial_fit`` call.

        A structured array with one row per pass of ``fit`` and per
        ``partial_fit`` call (``fit`` starts it anew, ``partial_fit``
        continues it), fields ``time`` (engine seconds since ``fit`` began,
        its validation and initialisation included; ``partial_fit`` calls
        add their own), ``samples`` (samples processed by the steps: a pass
        counts its rows again, weighted by ``sample_weight``), ``steps``
        (``n_batch_iter_``) and ``elbo`` (the pass's entry of
        ``lower_bounds_``, NaN for a pass not evaluated or stopped by a
        :func:`~skvi.engine.monitor` callback; after a call, its last
        minibatch estimate, ``lower_bound_``).  At most
        ``skvi.engine.monitoring.TRACE_SIZE`` rows are kept (the first
        quarter exactly, then thinned, always with the latest).  A copy, of
        numbers only: no training rows.
        """
        return self._monitoring_state("history_").history.array()

    @property
    def step_trace_(self):
        """The step size of every step, and its rejections by step safety.

        A structured array with fields ``t`` (the step), ``rho`` (its step
        size: the schedule's value times the step-safety reduction, of the
        last attempt for a skipped step), ``rejected`` (its attempts
        rejected by step safety) and ``accepted`` (False when every attempt
        was rejected and its minibatch skipped).  ``fit`` starts it anew;
        ``partial_fit`` and ``apply_statistics`` continue it.  At most
        ``skvi.engine.monitoring.TRACE_SIZE`` steps are kept: the first
        quarter exactly, then one in ``k`` (``k`` doubling whenever the
        table fills), the steps with rejections while they take at most
        three quarters of it, and always the latest.
        """
        return self._monitoring_state("step_trace_").trace.array()

    # ------------------------------------------------------------ public API
    def compute_statistics(self, X, y=None):
        """Summed sufficient statistics of a block of data, globals held fixed.

        The map step of the map-reduce split: the E-step of X with the
        current global factors, and the expected sufficient statistics of
        every factor summed over X's rows.  Statistics of two blocks add
        (``a + b``), and :meth:`apply_statistics` takes one step from any
        sum: computing blocks on several workers and adding their
        statistics gives the step of the blocks stacked.  All factors'
        statistics come from one snapshot of the globals (Hoffman et al.'s
        joint update, ``update_order='joint'``).

        Parameters
        ----------
        X : array-like or sparse matrix
            A block of data, as ``partial_fit`` takes it.
        y : array-like or None, default=None
            Its targets, for a supervised estimator.

        Returns
        -------
        Statistics
            The block's statistics and its number of rows.
        """
        self._check_engine_ready("compute_statistics")
        data = self._prepare_block(X, y)
        params = self.natural_params_
        with self._thread_pool():
            local = self._e_step(data, params)
            factors = {
                name: self._block_statistics(name, data, local, params)
                for name in self._global_factors
                if name not in self._hierarchical_factors
            }
            hyper = self._hyper_statistics(data, local)
        return Statistics(data.shape[0], factors, hyper)

    def apply_statistics(self, statistics, total_samples=None):
        """One natural-gradient step of every global factor from summed statistics.

        The reduce step of the map-reduce split: ``lam <- (1 - rho_t) lam +
        rho_t (eta_prior + N / |S| stats)`` with ``rho_t`` from the schedule,
        step safety and every other rule of a ``partial_fit`` step.

        Parameters
        ----------
        statistics : Statistics
            From :meth:`compute_statistics`, possibly summed over blocks.
        total_samples : float or None, default=None
            ``N``; None uses the estimator's ``total_samples`` (a number),
            or, for ``'auto'``, the rows seen so far by ``partial_fit``.

        Returns
        -------
        self : object
            The updated estimator.
        """
        start = time.perf_counter()
        self._check_engine_ready("apply_statistics")
        st = self._svi
        run = _Run(self, "apply_statistics", start, st.elapsed)
        n = statistics.n_samples
        if total_samples is None:
            if self.total_samples == "auto":
                total_samples = max(self.n_samples_seen_, n)
            else:
                total_samples = float(self.total_samples)
        scale = float(total_samples) / n if n else 0.0
        self._step(None, scale, online=True, stats=statistics)
        st.samples += n
        st.elapsed = run.elapsed()
        if run.per_step:
            run.n_batches = 1
            run.step(1)  # a single step: a stop has nothing left to stop
        self._on_params_updated()
        return self

    # ------------------------------------------------------- fit / partial_fit
    def _engine_fit(self, X, random_state=None):
        """Run ``fit``: batch coordinate ascent or online passes.

        ``random_state`` (a ``RandomState``) overrides the estimator's, so
        that a model's restarts (a mixture's ``n_init``) draw different
        initialisations from one generator.
        """
        with self._thread_pool():
            return self._fit_passes(X, random_state)

    def _fit_passes(self, X, random_state=None):
        start = time.perf_counter()  # the clock of fit: its validation and start count
        blocked = isinstance(X, BlockedData)
        if not blocked:  # blocks were validated where they are held
            X = self._validate_input(X, reset=True)
        if random_state is None:
            random_state = check_random_state(self.random_state)
        self._reset_engine(X, random_state)
        st = self._svi
        run = _Run(self, "fit", start)
        try:
            self._count_rows(X)
            n_samples = X.shape[0]
            n_count = self._count_of(X)
            self.n_samples_seen_ = n_count
            online = self.learning_method == "online" and not self._one_minibatch(n_samples)
            if self.step_safety and (online or self._probe_batch_steps()):
                self._set_probe(X, random_state)
            if not online:
                n_batches = 1
            elif type(self)._online_batches is SVIEstimator._online_batches:
                n_batches = len(even_batches(n_samples, self.batch_size))
            else:
                n_batches = None  # the model's own scheme: known after a pass
            previous = None
            self.converged_ = False
            self.n_iter_ = 0
            local = None
            for it in range(1, self.max_iter + 1):
                accepted_before = st.n_accepted
                run.begin_pass(it, n_batches)
                evaluate = self._evaluate_pass(it)
                stopped = False
                if online:
                    batch = 0
                    passes = X.minibatches(self, random_state) if blocked else (
                        self._online_batches(X, random_state))
                    with self._in_pass():
                        for Xb, scale in passes:
                            batch += 1
                            if scale > 0:  # a minibatch of zero total weight has no data
                                self._step(Xb, scale, online=True)
                                st.samples += self._count_of(Xb)
                                if run.per_step and run.step(batch):
                                    stopped = True
                                    break
                    if not stopped:
                        n_batches = batch
                        self._pass_step(it, 1.0, 1.0)
                    if not evaluate or stopped:
                        bound = None
                    elif blocked:  # a model's own full-data pass is in-memory code
                        bound = SVIEstimator._pass_lower_bound(self, X)
                    else:
                        bound = self._pass_lower_bound(X)
                else:
                    if local is None or self._local_depends_on_globals:
                        known = st.known_local
                        if known is not None and known[0] is self.natural_params_:
                            local = known[1]  # the last step's ELBO test computed it
                        else:
                            local = self._e_step_for_test(X)
                        st.known_local = None
                    self._step(X, 1.0, online=False, local=local)
                    st.samples += n_count
                    stopped = run.per_step and run.step(1)
                    if evaluate and not stopped:
                        params = self.natural_params_
                        known = st.known_bound
                        if known is not None and known[0] is params:
                            bound = known[1]  # the step's test computed it
                        else:
                            bound = self._data_bound(X, local, params) + self._global_bound(params)
                    else:
                        bound = None
                self.n_iter_ = it
                if bound is not None:
                    bound = float(bound)
                    self.lower_bounds_.append(bound)
                # A pass whose steps were all rejected left the parameters
                # where they were: an unchanged ELBO says nothing about
                # convergence.
                moved = st.n_accepted != accepted_before
                converged = (
                    bound is not None and moved and previous is not None
                    and self._pass_converged(previous, bound)
                )
                if bound is not None and moved:
                    previous = bound
                st.history.append((
                    run.elapsed(), st.samples, self.n_batch_iter_,
                    np.nan if bound is None else bound,
                ))
                if run.end_pass(bound, converged, stopped):
                    stopped = True
                if converged:
                    self.converged_ = True
                    break
                if stopped:
                    break
            self.lower_bound_ = self.lower_bounds_[-1] if self.lower_bounds_ else None
        finally:
            self._forget_probe()
            st.elapsed = run.elapsed()
            run.close()
        if not self.converged_ and not run.stopped and self._warn_not_converged():
            self._warn(
                f"{type(self).__name__} did not converge in max_iter="
                f"{self.max_iter} passes (ELBO change above "
                f"tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
            )
        self._warn_rejections(0)
        self._on_params_updated()
        return self

    def _engine_partial_fit(self, X, batches=None):
        """Run ``partial_fit``: one step per minibatch of at most ``batch_size`` rows.

        ``batches`` (slices of the validated X) overrides the default cut,
        :func:`even_batches`; LDA passes scikit-learn's.
        """
        with self._thread_pool():
            return self._partial_fit_steps(X, batches)

    def _partial_fit_steps(self, X, batches):
        start = time.perf_counter()
        first = not hasattr(self, "natural_params_")
        X = self._validate_input(X, reset=first)
        if first:
            rng = check_random_state(self.random_state)
            self._reset_engine(X, rng)
            self._svi.rng = rng
            if self.total_samples == "auto":
                self._remember_initial_globals()
            self.n_samples_seen_ = 0
            self.n_iter_ = 0
            self.converged_ = False
        st = self._svi
        run = _Run(self, "partial_fit", start, st.elapsed)
        st.calls += 1
        if batches is None:
            batches = even_batches(X.shape[0], self.batch_size)
        batches = list(batches)
        run.begin_pass(st.calls, len(batches))
        try:
            stopped = False
            samples_before = st.samples
            with self._in_pass():
                for index, batch in enumerate(batches, 1):
                    self._partial_step(X[batch])
                    if run.per_step and run.step(index, elbo=self.lower_bound_):
                        stopped = True
                        break
            n_call = st.samples - samples_before  # the samples of the call's steps
            if n_call > 0 and not stopped:
                total = st.auto_total if self.total_samples == "auto" else self.total_samples
                self._pass_step(st.calls, min(st.schedule(st.calls), 1.0),
                                float(total or n_call) / n_call)
            st.elapsed = run.elapsed()
            elbo = getattr(self, "lower_bound_", None)
            st.history.append(
                (st.elapsed, st.samples, self.n_batch_iter_, np.nan if elbo is None else elbo)
            )
            run.end_call(elbo, st.calls)
        finally:
            self._forget_probe()
            st.elapsed = run.elapsed()
            run.close()
        self._warn_rejections(run.rejected_before)
        self._on_params_updated()
        return self

    def _partial_step(self, X):
        """One ``partial_fit`` step on the minibatch X (already validated)."""
        st = self._svi
        n_batch = self._sample_count(X)
        if not n_batch > 0:
            # A minibatch of zero total weight holds no data: no step (a
            # step with scale 0 would pull the globals towards the prior),
            # as online fit skips it.
            return
        self._grow_and_count(X)
        seen_before = self.n_samples_seen_
        self.n_samples_seen_ += n_batch
        st.samples += n_batch
        if self.total_samples == "auto":
            total = self._auto_total()
            previous = st.auto_total or seen_before
            if previous and total != previous:
                self._rescale_data_parts(total / previous)
            st.auto_total = total
        else:
            total = float(self.total_samples)
        scale = total / n_batch if n_batch else 0.0
        if self.step_safety:
            # The probe of a stream is the previous minibatch of this call,
            # or the minibatch itself for the first: no training rows are
            # kept between calls.
            last = X if st.last_batch is None else st.last_batch
            st.last_batch = X
            self._use_probe(self._prepare_probe(last))
        local = self._step(X, scale, online=True)
        # The minibatch's data part at the new globals, with its local
        # factors from the step.
        params = self.natural_params_
        bound = self._global_bound(params) + scale * self._data_bound(X, local, params)
        self.lower_bounds_.append(float(bound))
        self.lower_bound_ = float(bound)

    def _prepare_block(self, X, y=None):
        return self._validate_input(X, reset=False)

    def _remember_initial_globals(self, all_data=None):
        """Keep what the initial globals add to the prior, with its weight 1.

        Globals fitted to the first rows (``_initial_globals_are_data``), or
        adopted from a fit elsewhere (``all_data=True``), keep an initial
        part of zero: all of them is data.
        """
        if all_data is None:
            all_data = self._initial_globals_are_data
        st = self._svi
        for name in self._global_factors:
            if name in self._row_groups or name in self._hierarchical_factors:
                continue
            prior, current = st.prior[name], self.natural_params_[name]
            st.init_parts[name] = tuple(
                np.zeros_like(np.asarray(c)) if all_data else np.asarray(c) - p
                for p, c in zip(prior, current)
            )
            st.init_weight[name] = 1.0
            st.init_nonzero[name] = any(np.any(part != 0) for part in st.init_parts[name])

    def _auto_total(self):
        """``N`` of the next ``partial_fit`` step with ``total_samples='auto'``.

        After the step the globals are the prior, what remains of the
        initial globals (weight ``W = prod(1 - rho_t)`` over the steps so
        far and this one) and a data part of ``N (1 - W)`` rows' worth of
        averaged statistics.  ``N = n_seen / (1 - W)`` makes the data part
        exactly the rows seen so far: the first minibatch, which enters with
        weight ``rho_1``, counts as its own rows rather than ``rho_1`` of
        them.  ``N`` tends to the running count as ``W`` decays; with
        initial globals that are all prior or all data (``W`` plays no
        part) it is the running count.  (The running count itself left the
        early topics of an LDA stream blunt: ``docs/engine.md``.)
        """
        st = self._svi
        weights = [st.init_weight[name] for name in st.init_parts if st.init_nonzero.get(name)]
        if not weights:
            return float(self.n_samples_seen_)
        rho = min(st.schedule(self.n_batch_iter_ + 1) * st.backoff, 1.0)
        remaining = max(weights) * (1.0 - rho)
        return float(self.n_samples_seen_) / max(1.0 - remaining, 1e-12)

    def _rescale_data_parts(self, growth):
        """With ``total_samples='auto'``: grow the data part of the globals with N.

        The globals of SVI are ``prior + N * (average statistics)``, plus,
        early in a stream, what remains of the initial globals: their part
        ``lam_0 - prior`` times ``prod(1 - rho_t)`` over the steps so far.
        When N (``_auto_total``) grows by ``growth``, the data part (the
        rest) is scaled by it before the step, so that it and the new target
        describe the same N: otherwise each step blends a posterior for
        fewer rows into the new one and the stream ends far below its row
        count.  The initial part is not data and is not scaled (scaling it
        amplified LDA's random initial topics).  Per-row groups keep their
        own running counts; a factor the scaling would make invalid is left
        as it is.
        """
        st = self._svi
        prior = st.prior
        for name in self._global_factors:
            if name in self._row_groups or name in self._hierarchical_factors:
                continue
            current = self.natural_params_[name]
            init = st.init_parts.get(name)
            if init is None:
                continue
            w = st.init_weight[name]
            scaled = tuple(
                np.asarray(c + (growth - 1.0) * (c - p - w * i), dtype=np.result_type(c))
                for p, c, i in zip(prior[name], current, init)
            )
            if self._is_valid(name, scaled):
                self.natural_params_[name] = self._as_factor(name, scaled)

    def _check_engine_ready(self, method):
        if not hasattr(self, "natural_params_"):
            raise AttributeError(
                f"{type(self).__name__}.{method} needs initialised global factors: "
                "call fit or partial_fit first."
            )

    # ---------------------------------------------- minibatch blocks on threads
    def _n_threads(self):
        """The threads ``n_jobs`` asks for (None: one)."""
        n_jobs = getattr(self, "n_jobs", None)
        return max(1, effective_n_jobs(n_jobs)) if n_jobs is not None else 1

    @contextmanager
    def _thread_pool(self):
        """Threads for the blocks of a minibatch while a fit or statistics call runs."""
        threads = self._n_threads()
        if threads < 2 or not self._parallel_local_step() or getattr(self, "_blocks_pool", None):
            yield
            return
        self._blocks_pool = ThreadPoolExecutor(threads)
        self._blocks_threads = threads
        try:
            yield
        finally:
            pool, self._blocks_pool = self._blocks_pool, None
            pool.shutdown()

    def _e_step(self, X, params):
        """The local step of X: of the whole minibatch, or of its blocks on threads or workers."""
        if isinstance(X, BlockedData):
            return _Blocks(X, X.local_steps(self, params))
        self._prepare_local_steps(X, params)
        blocks, out = self._on_fit_threads(X, lambda b: self._local_step(b, params))
        return out if blocks is None else _Blocks(blocks, out)

    def _on_fit_threads(self, X, function):
        """``(None, function(X))``, or ``(blocks, [function(block), ...])`` on the fit's threads.

        The minibatch is cut into blocks when a fit holds ``n_jobs``
        threads and X has rows enough for two (``MIN_BLOCK_ROWS`` each).
        """
        pool = getattr(self, "_blocks_pool", None)
        blocks = _row_blocks(X, 0 if pool is None else self._blocks_threads)
        if blocks is None:
            return None, function(X)
        return blocks, list(pool.map(function, blocks))

    def _map_row_blocks(self, function, X):
        """``function`` of X, or of its rows in blocks on ``n_jobs`` threads: a list in row order.

        For work on new rows outside a fit (a correlated topic model's
        fold-in of new documents) whose rows do not depend on each other.
        The pool is the call's own, so that concurrent calls do not share
        it.
        """
        blocks = _row_blocks(X, self._n_threads())
        if blocks is None:
            return [function(X)]
        with ThreadPoolExecutor(len(blocks)) as pool:
            return list(pool.map(function, blocks))

    def _sum_over_blocks(self, local, function, *args):
        """``function(self, X_block, local_block, *args)`` of every block, summed.

        The blocks are a minibatch's on threads (``n_jobs``), or data held
        elsewhere (:class:`~skvi.engine.blocks.BlockedData`), whose sum is
        computed where the blocks are.
        """
        if isinstance(local.data, BlockedData):
            return local.data.sum_over(self, function, local.locals, *args)
        pool = self._blocks_pool
        parts = list(pool.map(lambda bl: function(self, *bl, *args), zip(local.data, local.locals)))
        total = None
        for part in parts:
            total = add_statistics(total, part)
        return total

    def _block_statistics(self, name, X, local, params):
        if not isinstance(local, _Blocks):
            return self._expected_stats(name, X, local, params)
        return self._sum_over_blocks(local, _block_fns.block_statistics, name, params)

    def _data_bound(self, X, local, params):
        if isinstance(X, BlockedData) and local is None:
            return float(X.sum_over(self, _block_fns.block_bound, None, params))
        if not isinstance(local, _Blocks):
            return self._local_bound(X, local, params)
        return float(self._sum_over_blocks(local, _block_fns.block_bound, params))

    def _hyper_statistics(self, X, local):
        if not isinstance(local, _Blocks):
            return self._hyperparameter_statistics(X, local)
        if isinstance(local.data, BlockedData):
            return self._sum_over_blocks(local, _block_fns.block_hyper_statistics)
        total = None
        for b, lb in zip(local.data, local.locals):
            total = add_statistics(total, self._hyperparameter_statistics(b, lb))
        return total

    # -------------------------------------------------------------- internals
    def _reset_engine(self, X, random_state):
        blocked = isinstance(X, BlockedData)
        if type(self)._data_summary is not SVIEstimator._data_summary:
            if blocked:
                summary = X.sum_over(self, _block_fns.block_data_summary, None)
            else:
                summary = self._data_summary(X)
            self._adopt_data_summary(summary)
        if blocked:
            self._start_engine(X.initialize(self, random_state))
        else:
            self._start_engine(self._initialize_globals(X, random_state))

    def _count_of(self, X):
        """``_sample_count`` of X, summed over its blocks when they are held elsewhere."""
        return X.count(self) if isinstance(X, BlockedData) else self._sample_count(X)

    def _start_engine(self, natural):
        """Fresh engine state (schedule at its first step) around the globals ``natural``."""
        schedule = make_schedule(self.learning_rate, self.learning_offset, self.learning_decay)
        self.natural_params_ = {name: self._as_factor(name, value) for name, value in natural.items()}
        self._svi = _EngineState(schedule, self._prior_natural())
        for name in self._row_groups:
            rows = self.natural_params_[name]
            if not isinstance(rows, ResidentRows):  # resident: kept by the blocks
                self._svi.rows[name] = RowGroup(rows[0].shape[0])
        self.lower_bounds_ = []
        self.n_batch_iter_ = 0
        self.n_rejected_steps_ = 0

    def _adopt_globals(self, natural, n_samples_seen):
        """Start from given global factors, as a fit on ``n_samples_seen`` rows would end.

        For a model that imports a posterior fitted elsewhere: the engine's
        state is fresh (schedule at its first step, no rejections), and the
        whole of each factor beyond the prior counts as data, so that
        ``partial_fit`` with ``total_samples='auto'`` grows it with the
        running count that starts at ``n_samples_seen``.
        """
        self._start_engine(natural)
        self._svi.rng = check_random_state(self.random_state)
        self._remember_initial_globals(all_data=True)
        self.lower_bound_ = None
        self.n_iter_ = 0
        self.converged_ = False
        self.n_samples_seen_ = n_samples_seen
        self._on_params_updated()

    def _count_rows(self, X):
        """``N_i`` of every row group from the whole of X (fit), summed over its blocks."""
        groups = self._svi.rows
        sizes = tuple((name, groups[name].totals.shape[0]) for name in self._row_groups
                      if name in groups)  # (a resident group's blocks counted their rows)
        if not sizes:
            return
        if isinstance(X, BlockedData):
            totals = X.sum_over(self, _block_fns.block_row_totals, None, sizes)
            # The workers' copies of the model carry N_i (``_row_totals``).
            self._svi.view_version += 1
        else:
            totals = self._row_counts(X, sizes)
        for (name, _), total in zip(sizes, totals):
            groups[name].totals = total

    def _row_counts(self, X, sizes):
        """Each row group's weighted count of the data points of X, as a tuple."""
        weights = self._row_weights(X)
        ids = self._row_ids(X)
        return tuple(
            np.bincount(ids[name], weights=weights, minlength=size).astype(float)
            for name, size in sizes
        )

    def _grow_and_count(self, X):
        """Add the rows X meets for the first time; add X's points to ``N_i``."""
        weights = self._row_weights(X)
        for name, ids in self._row_ids(X).items():
            group = self._svi.rows[name]
            n_old = group.totals.shape[0]
            n_new = max(n_old, int(ids.max(initial=-1)) + 1) - n_old
            if n_new:
                rated = np.zeros(n_new, dtype=bool)
                rated[ids[ids >= n_old] - n_old] = True
                extra = self._grow_rows(name, n_new, rated, self._svi.rng)
                self.natural_params_[name] = self._as_factor(
                    name,
                    [np.concatenate([a, b]) for a, b in zip(self.natural_params_[name], extra)],
                )
                group.grow(n_new)
            group.totals += np.bincount(ids, weights=weights, minlength=group.totals.shape[0])

    def _one_minibatch(self, n_samples):
        """Whether an online pass would be a single minibatch holding all the data.

        SVI's step on ``S`` = all the data with ``rho = 1`` is the coordinate
        ascent step, so online ``fit`` then runs batch steps: smaller ones
        would only stop short of the optimum.  Models with their own
        minibatch scheme (``_online_batches``) keep it.
        """
        default = type(self)._online_batches is SVIEstimator._online_batches
        return default and n_samples <= self.batch_size

    def _forget_probe(self):
        """Drop the probe rows and any kept local step: a fitted estimator keeps no training rows."""
        st = self._svi
        st.probe = st.probe_best = st.last_batch = st.known_local = None

    def _set_probe(self, X, random_state):
        """Draw the fixed probe sample of online ``fit`` (see ``_probe_loss``)."""
        if type(self)._probe_loss is SVIEstimator._probe_loss:
            return  # the model has no probe: no rows to gather
        # From a copy of the generator, so that step safety leaves the
        # minibatch sequence unchanged: without rejections the fit is the same.
        copy = np.random.RandomState()
        copy.set_state(random_state.get_state())
        n = X.shape[0]
        rows = np.sort(copy.choice(n, size=min(n, PROBE_SIZE), replace=False))
        if isinstance(X, BlockedData):
            self._use_probe(X.probe(self, rows))
        else:
            self._use_probe(self._prepare_probe(X[rows]))

    def _use_probe(self, probe):
        """Make ``probe`` the probe, its loss under the current parameters the best."""
        st = self._svi
        best = self._loss_of_probe(probe, self.natural_params_)
        if best is None:
            st.probe = None
            return
        st.probe, st.probe_best = probe, best

    def _loss_of_probe(self, probe, params):
        if isinstance(probe, RemoteProbe):
            return probe.loss(self, params)
        return self._probe_loss(probe, params)

    def _probe_acceptable(self, params):
        """The probe test of an online step (see ``_probe_loss``)."""
        st = self._svi
        loss = self._loss_of_probe(st.probe, params)
        best = st.probe_best
        too_far = np.isfinite(best) and loss > best + self._probe_growth * abs(best)
        if not np.isfinite(loss) or too_far:
            return False
        st.probe_best = min(best, loss) if np.isfinite(best) else loss
        return True

    def _online_batches(self, X, random_state):
        """Yield ``(minibatch, N / |S|)`` for one online pass over X.

        The default shuffles the rows and cuts them into
        ``ceil(N / batch_size)`` minibatches of near-equal size (they differ
        by at most one row, none larger than ``batch_size``).  Equal sizes
        matter: a short last minibatch, e.g. 561 of a9a's 32,561 rows after
        sixteen of 2000, would be weighted ``N / |S|`` = 58 and take the
        noisiest step of the pass, right where a pass's ELBO is measured and
        a fit stops.  ``X`` is whatever ``_validate_input`` returned: an
        array, a sparse matrix, or any object with ``shape[0]`` and row
        indexing.  A model with its own sampling scheme (e.g. a fixed number
        of children per node) overrides this.
        """
        n_samples = X.shape[0]
        total = self._sample_count(X)
        order = random_state.permutation(n_samples)
        batches = even_batches(n_samples, self.batch_size)
        if sp.issparse(X):
            # Gather a block of minibatches at once and slice it: scipy's
            # fancy row indexing costs a fixed ~0.5 ms per call, and the
            # block bounds the extra memory to a few minibatches' rows.
            per_block = max(1, SPARSE_GATHER_ROWS // max(self.batch_size, 1))
            for first in range(0, len(batches), per_block):
                group = batches[first : first + per_block]
                offset = group[0].start
                rows = X[order[offset : group[-1].stop]]
                for batch in group:
                    Xb = rows[batch.start - offset : batch.stop - offset]
                    yield Xb, total / self._sample_count(Xb)
            return
        for batch in batches:
            Xb = X[order[batch]]
            count = self._sample_count(Xb)
            yield Xb, total / count if count else 0.0

    def _update_factor(self, name, current, stats, ctx):
        """Step factor ``name`` towards ``prior + scale * stats``.

        Returns the new natural parameters and whether they are valid.  For
        a row group, ``stats`` is a :class:`RowStatistics`: only its rows
        move, each by ``ctx.row_rho`` towards its prior message plus
        ``ctx.row_scale`` times its statistics.
        """
        rule = self._update_rule(name)
        if isinstance(stats, RowStatistics) and name in self._row_groups:
            rows = stats.rows
            prior = self._prior_message(name, ctx.params, rows)
            scale = ctx.row_scale
            target = tuple(p + _per_row(scale, s) * s for p, s in zip(prior, stats.values))
            old = tuple(c[rows] for c in current)
            rho = ctx.row_rho
        else:
            target = self._factor_target(name, current, stats, ctx)
            old, rows, rho = current, None, ctx.rho
        if rule is None:
            new = _blend(old, target, rho, ctx.grads)
        else:
            if ctx.grads is not None:
                ctx.grads.extend(np.subtract(t, c) for c, t in zip(old, target))
            new, state = rule.step(old, target, rho, ctx.backoff, ctx.rule_state)
            ctx.keep_rule_state(state)
        valid = self._is_valid(name, new)
        if rows is not None:
            full = tuple(c.copy() for c in current)
            for f, n in zip(full, new):
                f[rows] = n
            new = full
        return new, valid

    def _factor_target(self, name, current, stats, ctx):
        prior = self._prior_message(name, ctx.params)
        return tuple(p + ctx.scale * s for p, s in zip(prior, stats))

    def _as_factor(self, name, natural):
        """``natural`` as a :class:`Factor` of its family (unchanged if it is one)."""
        if isinstance(natural, (Factor, ResidentRows)):
            return natural
        return Factor(natural, self._factor_families.get(name))

    def _is_valid(self, name, natural):
        family = self._factor_families[name]
        return bool(np.all(family.valid_natural(*natural)))

    def _statistics_of(self, name, X, local, params, stats):
        """One factor's statistics: given (a step from summed statistics) or computed."""
        if name in self._hierarchical_factors:
            return self._expected_stats(name, None, None, params)
        if stats is not None:
            return stats.factors[name]
        return self._block_statistics(name, X, local, params)

    def _factor_step(self, name, params, stats, ctx, pending):
        """Update one factor inside a step; returns (new, valid)."""
        st = self._svi
        if isinstance(stats, RowStatistics) and name in self._row_groups:
            st.rows[name].prepare(stats.rows, stats.counts, ctx, st.schedule,
                                  self._scheduled_row_steps)
        else:
            ctx.row_scale = ctx.row_rho = None
            ctx.rule_state = st.rule_states.get(name)
        ctx.new_rule_state = None
        hook_scale = ctx.scale
        if name in self._hierarchical_factors:
            ctx.scale = 1.0  # the children are all in memory
        try:
            new, valid = self._update_factor(name, params[name], stats, ctx)
        finally:
            ctx.scale = hook_scale
        new = self._as_factor(name, new)
        if ctx.new_rule_state is not None:
            pending[name] = (stats.rows if ctx.row_rho is not None else None, ctx.new_rule_state)
        return new, valid

    def _data_factors(self, X=None):
        """The global factors whose statistics come from the data (to the client, for X)."""
        return tuple(
            n for n in self._global_factors
            if n not in self._hierarchical_factors and not self._resident(n, X)
        )

    def _one_snapshot(self):
        """Whether a step computes every factor's statistics from the same globals."""
        joint = getattr(self, "update_order", "sequential") == "joint"
        return joint or len(self._data_factors()) <= 1

    def _global_update(self, X, local, ctx, stats=None):
        """One update of every global factor; returns (params, pending rule states, ok)."""
        params = dict(self.natural_params_)
        ctx.params = params
        pending = {}
        names = self._global_factors
        joint = stats is not None or getattr(self, "update_order", "sequential") == "joint"
        if joint:
            # Option (b): every target from the same snapshot (a copy: the
            # statistics may refer to it after ``params`` moves on).
            snapshot = dict(params)
            all_stats = {
                name: self._statistics_of(name, X, local, snapshot, stats)
                for name in names
                if name not in self._hierarchical_factors and not self._resident(name, X)
            }
            ok = True
            for name in names:
                if self._resident(name, X):
                    params[name], valid = self._resident_step(name, X, local, snapshot, ctx)
                else:
                    s = all_stats.get(name)
                    if s is None:
                        s = self._statistics_of(name, X, local, params, stats)
                    params[name], valid = self._factor_step(name, params, s, ctx, pending)
                ok = ok and valid
            return params, pending, ok
        # Option (a): each target from the factors already updated.
        for name in names:
            if self._resident(name, X):
                params[name], valid = self._resident_step(name, X, local, params, ctx)
            else:
                s = self._statistics_of(name, X, local, params, None)
                params[name], valid = self._factor_step(name, params, s, ctx, pending)
            if not valid:
                return params, pending, False
        return params, pending, True

    def _resident_step(self, name, X, local, params, ctx):
        """The step of a resident row group, taken by the blocks of X where its rows are.

        Each block steps its rows as :meth:`_factor_step` steps a group in
        memory and keeps the result; the client gets a new
        :class:`~skvi.engine.rows.ResidentRows` (adopted only if the step is
        accepted) and whether every row is valid.
        """
        return X.row_step(self, name, local.locals, params, ctx, self._svi.schedule)

    def _step(self, X, scale, online, local=None, stats=None):
        """Take one step on X (or from summed ``stats``); return the local step."""
        st = self._svi
        if local is None and stats is None:
            local = self._e_step(X, self.natural_params_)
        if stats is None and isinstance(X, BlockedData) and self._one_snapshot():
            # Every factor's and the hyperparameters' statistics in one
            # round trip to the blocks (one snapshot of the globals: the
            # joint order, or a single factor).
            stats = self._sum_over_blocks(
                local, _block_fns.block_all_statistics, self._data_factors(X),
                self.natural_params_,
            )
        t = self.n_batch_iter_ + 1
        base_rho = st.schedule(t) if online else 1.0
        line_search = not online and self._batch_line_search()
        if line_search:
            # A deterministic batch target: halving is a line search within
            # this step, and the next step tries the full step again (a
            # damped Newton iteration, not a shrunken one).
            st.backoff = 1.0
        backoff_before = st.backoff
        rejected_before = self.n_rejected_steps_
        accepted = False
        want_grads = online and st.schedule.needs_gradient
        try:
            for _ in range(MAX_BACKOFF + 1):
                ctx = StepContext(
                    online, t, base_rho * st.backoff, st.backoff, scale, st.prior,
                    [] if want_grads else None, in_pass=st.in_pass,
                )
                params, pending, ok = self._global_update(X, local, ctx, stats)
                if self.step_safety:
                    if ok and not online and X is not None and self._batch_steps_raise_elbo():
                        ok = self._raises_elbo(X, params)
                    if ok:
                        ok = self._step_acceptable(X, params, ctx)
                    if ok and st.probe is not None:
                        ok = self._probe_acceptable(params)
                else:
                    # Without step safety an invalid factor is accepted (to
                    # show Paquet's divergence), but never a non-finite one:
                    # NaN or inf never leaves a fit.
                    ok = _all_finite(params)
                if ok:
                    self._commit(params, pending, ctx, X, local, stats)
                    self._recover_step_size()
                    accepted = True
                    break
                # Reject: the previous parameters stay in natural_params_.
                self.n_rejected_steps_ += 1
                if line_search:
                    st.backtracks += 1
                self._reduce_step_size()
                if not self.step_safety:
                    break  # a non-finite step is skipped, not retried smaller
            else:
                # No step size helped (the target itself is invalid, e.g. not
                # finite): the minibatch is skipped and later steps keep the
                # step size they had.
                st.backoff = backoff_before
            if not self.step_safety:
                st.backoff = backoff_before
        finally:
            for group in st.rows.values():
                group.pending = None
        self.n_batch_iter_ += 1
        rejected = self.n_rejected_steps_ - rejected_before
        st.last_step = (ctx.rho, rejected, accepted)
        st.trace.append((t, ctx.rho, rejected, accepted), flagged=rejected > 0)
        return local

    def _reduce_step_size(self):
        """Halve the step size after a rejection; a failed recovery lengthens the next wait."""
        st = self._svi
        st.backoff *= 0.5
        if st.recovered and st.accepted_run < st.recovery_steps:
            # The size just won back was too large: wait twice as long before
            # trying it again, so that the fit does not oscillate.
            st.recovery_steps *= 2
        st.recovered = False
        st.accepted_run = 0

    def _recover_step_size(self):
        """Double a reduced step size after ``recovery_steps`` accepted steps in a row."""
        st = self._svi
        st.accepted_run += 1
        if st.backoff < 1.0 and st.accepted_run >= st.recovery_steps:
            st.backoff = min(1.0, 2.0 * st.backoff)
            st.accepted_run = 0
            st.recovered = True

    def _commit(self, params, pending, ctx, X, local, stats):
        """Accept a step: parameters, rule states, row counters, schedule, priors."""
        st = self._svi
        self.natural_params_ = params
        st.n_accepted += 1
        for name in st.init_weight:
            st.init_weight[name] *= 1.0 - ctx.rho
        for name, (rows, state) in pending.items():
            if rows is None:
                st.rule_states[name] = state
            else:
                st.rows[name].keep_rule_state(rows, state)
        for group in st.rows.values():
            group.commit()
        if ctx.grads is not None:
            sq = float(sum(np.vdot(g, g).real for g in ctx.grads))
            st.schedule.observe(sq, ctx.grads)
        hyper = stats.hyper if stats is not None else self._hyper_statistics(X, local)
        if self._update_hyperparameters(hyper, ctx):
            self._model_changed()

    def _local_and_bound(self, X, params):
        """``(local, data bound)`` of X at ``params`` from one pass, or None.

        The model's ``_local_step_and_bound`` on X, or on its blocks in the
        ``n_jobs`` threads (``local`` is then their ``_Blocks`` and the
        bound their sum).  None for data held elsewhere, or when the model
        has no such shortcut.
        """
        if isinstance(X, BlockedData) or (
                type(self)._local_step_and_bound is SVIEstimator._local_step_and_bound):
            return None
        self._prepare_local_steps(X, params)
        blocks, out = self._on_fit_threads(X, lambda b: self._local_step_and_bound(b, params))
        if blocks is None:
            return out
        if any(part is None for part in out):
            return None
        return _Blocks(blocks, [p[0] for p in out]), float(sum(p[1] for p in out))

    def _e_step_for_test(self, X):
        """A batch E-step at the current parameters, with their ELBO when a step test needs it.

        The first step of a batch fit (and one after a model change) has
        no test to reuse: a model whose ``_local_step_and_bound`` gives
        both from one pass remembers the bound for ``_raises_elbo``, which
        would otherwise make a second pass over the rows.
        """
        st = self._svi
        params = self.natural_params_
        if self.step_safety and self._batch_steps_raise_elbo():
            both = self._local_and_bound(X, params)
            if both is not None:
                local, bound = both
                st.known_bound = (params, bound + self._global_bound(params))
                return local
        return self._e_step(X, params)

    def _raises_elbo(self, X, params):
        """Whether a batch step's ``params`` do not lower the full-data ELBO.

        The current parameters' ELBO is remembered from the last test (it
        is the accepted step's, or the rejected step's old one), and the
        accepted one serves as the pass's ELBO: one evaluation per try.
        """
        st = self._svi
        both = self._local_and_bound(X, params)
        if both is None:
            new = self._global_bound(params) + self._data_bound(X, None, params)
        else:
            local, new = both
            new += self._global_bound(params)
        known = st.known_bound
        if known is not None and known[0] is self.natural_params_:
            old = known[1]
        else:
            old = self._global_bound(self.natural_params_) + self._data_bound(
                X, None, self.natural_params_
            )
        if not np.isfinite(new) or new < old - self._elbo_tolerance * abs(old):
            st.known_bound = (self.natural_params_, old)
            return False
        st.known_bound = (params, new)
        st.known_local = None if both is None else (params, local)
        return True

    def _warn_rejections(self, rejected_before):
        st = self._svi
        unexpected = self.n_rejected_steps_ - getattr(st, "backtracks", 0)
        if unexpected > rejected_before and not st.rejection_warned:
            st.rejection_warned = True
            now = ("is back to its schedule" if st.backoff >= 1.0
                   else f"is now scaled by {st.backoff:g}")
            self._warn(
                f"{type(self).__name__}: {self.n_rejected_steps_} step(s) were "
                "rejected by step safety (an invalid global factor or an "
                f"overshoot); the step size {now}. Consider a smaller "
                "initial step (larger learning_offset), a warm-up schedule or a "
                "larger batch_size.",
                ConvergenceWarning,
            )
