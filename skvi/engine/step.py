"""One natural-gradient step of the globals: update orders, factor updates, commit.

``take_step`` is the body of every step of every fit::

    stats   <- the minibatch's statistics of each global factor (summed over its blocks)
    lam_hat <- prior + (N / |S|) * stats                      (the factor's target)
    lam     <- (1 - rho) * lam + rho * lam_hat                 (or the factor's update rule)

with Paquet's two orders ("On the convergence of stochastic variational
inference in Bayesian networks", Alg. 1): ``'sequential'`` updates each
factor from statistics computed with the factors already updated,
``'joint'`` computes every target from one snapshot.  Step safety
(:mod:`skvi.engine.safety`) judges each attempt; an accepted one is
committed with its row counters, update-rule state and the model's own
step (``_update_hyperparameters``).
"""

import numpy as np

from . import blocks as _fn
from .rows import ResidentRows
from .settings import settings_of
from .statistics import RowStatistics

__all__ = ["StepContext", "blend", "factor_target", "take_step", "update_factor"]

#: Largest number of times one step's size is halved before the step is
#: skipped (its minibatch then leaves the globals unchanged).
MAX_BACKOFF = 30


class StepContext:
    """What the hooks of one step are told: online or batch, ``t``, ``rho``.

    The engine builds one per attempt of a step (a rejected step is retried
    with a smaller ``rho`` and a new context) and hands it to
    ``_update_factor`` and ``_update_hyperparameters``.

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
        True for the steps of an online pass of ``fit`` or of a
        ``partial_fit`` call.
    n_batch : float or None, default=None
        The minibatch's (weighted) rows ``|S|``: ``scale * n_batch`` is the
        step's ``N``.  Counted only when a row group counts shares of the
        data (a :class:`~skvi.engine.RowGroupSpec` with ``share``).
    end_of_pass : bool, default=False
        True for the model's step after the last step of such a pass, which
        ``_update_hyperparameters`` receives with ``hyper=None``: ``rho`` is
        then 1 and ``scale`` 1 in ``fit``, and in ``partial_fit`` the
        call's schedule value and ``N`` over the call's samples.
    fit : FitContext or None, default=None
        The fit's :class:`~skvi.engine.FitContext` (whether it takes batch
        steps only, ...); None for a step outside a fit's state (a block's
        rows on a cluster's worker).

    Attributes
    ----------
    params : dict
        The natural parameters of the step so far (with
        ``update_order='sequential'``, the factors already updated).
    row_scale, row_rho : ndarray or None
        For a factor of a row group, while its update runs: each updated
        row's ``N_i / C_i`` and its own step size.
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

    def __init__(
        self,
        online,
        t,
        rho,
        backoff,
        scale,
        prior,
        grads=None,
        in_pass=False,
        end_of_pass=False,
        n_batch=None,
        fit=None,
    ):
        self.online = online
        self.fit = fit
        self.n_batch = n_batch
        self.in_pass = in_pass
        self.end_of_pass = end_of_pass
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


def per_row(rho, a):
    """``rho`` shaped to broadcast over the rows (leading axis) of ``a``."""
    if np.ndim(rho) == 0:
        return rho
    return np.reshape(rho, np.shape(rho) + (1,) * (np.ndim(a) - np.ndim(rho)))


def blend(current, target, rho, grads=None):
    """Return ``(1 - rho) * current + rho * target`` for a tuple of arrays.

    The convex form: exact at ``rho = 0`` and ``rho = 1``, and a convex
    combination of two valid natural parameters stays valid even when their
    scales differ by many orders (``current + rho * (target - current)``
    cancelled a precision of 1e25 against a target's 1e6 to zero).  ``rho``
    is a scalar or one value per row (leading axis).  When ``grads`` is a
    list, the natural gradients ``target - current`` are appended to it.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.step import blend
    >>> blend((np.array([0.0, 2.0]),), (np.array([1.0, 0.0]),), 0.5)
    (array([0.5, 1. ]),)
    """
    out = []
    for c, g in zip(current, target):
        if grads is not None:
            grads.append(np.subtract(g, c))
        r = per_row(rho, np.asarray(c))
        new = np.multiply(c, 1.0 - r)
        new += np.multiply(g, r)
        out.append(new)
    return tuple(out)


def all_finite(params):
    """Whether every array of every factor in ``params`` is finite."""
    return all(
        value.finite
        if isinstance(value, ResidentRows)
        else all(np.all(np.isfinite(a)) for a in value)
        for value in params.values()
    )


# ------------------------------------------------------------ default updates
def update_factor(est, name, current, stats, ctx, target=None):
    """The engine's update of one factor (the default of ``_update_factor``).

    For a row group, ``stats`` is a :class:`RowStatistics`: only its rows
    move, each by ``ctx.row_rho`` towards its prior (its
    :class:`~skvi.engine.RowGroupSpec`'s) plus ``ctx.row_scale`` times its
    statistics; any other factor moves by ``ctx.rho`` towards ``target``.
    The factor's update rule (its ``settings``) or the natural-gradient
    blend makes the step.

    Parameters
    ----------
    est : SVIEstimator
        The model.
    name : str
        The factor.
    current : Factor
        Its value before the step.
    stats : tuple of arrays or RowStatistics
        Its statistics of the step's rows.
    ctx : StepContext
        The step.
    target : tuple of arrays or None, default=None
        The target of a factor that is not a row group, when the model
        computes its own (a target not linear in the statistics: a
        closed-form optimum, a trust region, a hierarchical prior's
        message); None: :func:`factor_target`, ``prior + scale * stats``.

    Returns
    -------
    new : tuple of arrays
        The factor's new natural parameters.
    valid : bool
        Whether they are valid for its family.
    """
    settings = settings_of(est)
    rule = settings.update_rules.get(name)
    shapes = None
    if isinstance(stats, RowStatistics) and name in settings.row_groups:
        rows = stats.rows
        spec = settings.row_groups[name]
        shapes, current = as_rows(current, spec.axes)
        prior = spec.prior_of(name, rows, ctx)
        target = tuple(p + per_row(ctx.row_scale, s) * s for p, s in zip(prior, stats.values))
        every = rows.shape[0] == current[0].shape[0]  # distinct rows: all of them, in order
        old = current if every else tuple(c[rows] for c in current)
        rho = ctx.row_rho
    else:
        if target is None:
            target = factor_target(name, stats, ctx)
        old, rows, rho = current, None, ctx.rho
    if rule is None:
        new = blend(old, target, rho, ctx.grads)
    else:
        if ctx.grads is not None:
            ctx.grads.extend(np.subtract(t, c) for c, t in zip(old, target))
        new, state = rule.step(old, target, rho, ctx.backoff, ctx.rule_state)
        ctx.keep_rule_state(state)
    valid = settings.is_valid(name, new, old)
    if rows is not None:
        full = new if every else tuple(c.copy() for c in current)
        if not every:
            for f, n in zip(full, new):
                f[rows] = n
        new = tuple(np.reshape(f, shape) for f, shape in zip(full, shapes))
    return new, valid


def as_rows(arrays, axes):
    """The shapes of ``arrays`` and the arrays with their first ``axes`` axes as one row axis."""
    arrays = tuple(np.asarray(a) for a in arrays)
    if axes == 1:
        return tuple(a.shape for a in arrays), arrays
    return (
        tuple(a.shape for a in arrays),
        tuple(a.reshape((-1,) + a.shape[axes:]) for a in arrays),
    )


def factor_target(name, stats, ctx):
    """``prior + scale * stats``: the target of a factor (the default of :func:`update_factor`)."""
    return tuple(p + ctx.scale * s for p, s in zip(ctx.prior[name], stats))


# ---------------------------------------------------------------- the step
def _statistics_of(est, st, name, X, local, params, stats):
    """One factor's statistics: given (a step from summed statistics) or computed."""
    if name in st.settings.hierarchical:
        return est._expected_stats(name, None, None, params)
    if stats is not None:
        return stats.factors[name]
    return st.executor.sum(est, _fn.factor_statistics, X, local, name, params)


def _factor_step(est, st, name, params, stats, ctx, pending):
    """Update one factor inside a step; returns (new, valid)."""
    settings = st.settings
    if isinstance(stats, RowStatistics) and name in settings.row_groups:
        st.rows[name].prepare(
            stats.rows, stats.counts, ctx, st.schedule, settings.row_groups[name].scheduled
        )
    else:
        ctx.row_scale = ctx.row_rho = None
        ctx.rule_state = st.rule_states.get(name)
    ctx.new_rule_state = None
    hook_scale = ctx.scale
    if name in settings.hierarchical:
        ctx.scale = 1.0  # the children are all in memory
    try:
        new, valid = est._update_factor(name, params[name], stats, ctx)
    finally:
        ctx.scale = hook_scale
    new = settings.as_factor(name, new)
    if ctx.new_rule_state is not None:
        pending[name] = (stats.rows if ctx.row_rho is not None else None, ctx.new_rule_state)
    return new, valid


def _global_update(est, st, X, local, ctx, stats):
    """One update of every global factor; returns (params, pending rule states, ok)."""
    params = dict(est.natural_params_)
    ctx.params = params
    pending = {}
    executor = st.executor
    names = st.settings.names

    def step_of(name, at, s):
        if executor.resident(name):
            return executor.row_step(est, name, X, local, at, ctx, st.schedule)
        if s is None:
            s = _statistics_of(est, st, name, X, local, params, stats)
        return _factor_step(est, st, name, params, s, ctx, pending)

    if stats is not None or st.joint:
        # Option (b): every target from the same snapshot (a copy: the
        # statistics may refer to it after ``params`` moves on).
        snapshot = dict(params)
        if stats is None and X is not None and local is not None:
            # On a cluster the hyperparameters' statistics come in the same
            # round trip, from the snapshot; in memory after the step.
            stats = st.executor.sum(
                est, _fn.all_statistics, X, local, st.data_factors, snapshot, st.executor.remote
            )
        ok = True
        for name in names:
            s = None if stats is None else stats.factors.get(name)
            params[name], valid = step_of(name, snapshot, s)
            ok = ok and valid
        return params, pending, ok, stats
    # Option (a): each target from the factors already updated.
    for name in names:
        params[name], valid = step_of(name, params, None)
        if not valid:
            return params, pending, False, None
    return params, pending, True, None


def take_step(est, X, scale, online, local=None, stats=None, rho=None):
    """Take one step on X (or from summed ``stats``); return the local step.

    ``rho`` is the step size of an online step before step safety's
    backoff; None takes the schedule's (a stream of unknown length has its own).
    """
    st = est._svi
    safety = st.safety
    if local is None and stats is None:
        with st.clock.phase("local"):
            local = st.local_steps(est, X, est.natural_params_)
    t = est.n_batch_iter_ + 1
    n_batch = None
    if any(spec.share for spec in st.settings.row_groups.values()):
        # Only a share of the step's N needs |S|.
        n_batch = st.executor.count(est, X) if X is not None else getattr(stats, "n_samples", None)
    base_rho = (st.schedule(t) if rho is None else rho) if online else 1.0
    line_search = not online and st.settings.batch_steps in ("line_search", "extrapolate")
    backoff_before = safety.begin_step(line_search)
    rejected_before = est.n_rejected_steps_
    accepted = False
    want_grads = online and st.schedule.needs_gradient
    summed = stats
    try:
        for _ in range(MAX_BACKOFF + 1):
            ctx = StepContext(
                online,
                t,
                base_rho * safety.backoff,
                safety.backoff,
                scale,
                st.prior,
                [] if want_grads else None,
                in_pass=st.in_pass,
                n_batch=n_batch,
                fit=st.context,
            )
            with st.clock.phase("global"):
                params, pending, ok, summed = _global_update(est, st, X, local, ctx, summed)
            with st.clock.phase("safety"):
                ok = safety.acceptable(est, X, params, online, ok)
            if ok:
                if _commit(est, st, params, pending, ctx, X, local, summed):
                    local = None  # the model moved the factors: the local step is stale
                safety.accepted()
                accepted = True
                break
            est.n_rejected_steps_ += 1
            safety.rejected(line_search)
            if not est.step_safety:
                break  # a non-finite step is skipped, not retried smaller
        else:
            # No step size helped (the target itself is invalid): the
            # minibatch is skipped and later steps keep their step size.
            safety.backoff = backoff_before
        if not est.step_safety:
            safety.backoff = backoff_before
    finally:
        for group in st.rows.values():
            group.pending = None
    est.n_batch_iter_ += 1
    rejected = est.n_rejected_steps_ - rejected_before
    st.last_step = (ctx.rho, rejected, accepted)
    st.trace.append((t, ctx.rho, rejected, accepted), flagged=rejected > 0)
    return local


def _commit(est, st, params, pending, ctx, X, local, stats):
    """Accept a step: parameters, rule states, row counters, schedule, the model's own step.

    Returns whether the model's own step moved the factors.
    """
    st.set_factors(est, params)
    st.n_accepted += 1
    st.stream.decay(ctx.rho)
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
    if X is None or stats is not None and st.executor.remote:
        # From summed statistics (apply_statistics), or a cluster's snapshot.
        hyper = None if stats is None else stats.hyper
    else:
        # The model's own step reads the rows with the globals just accepted.
        hyper = st.executor.sum(est, _fn.hyper_statistics, X, local)
    changed = est._update_hyperparameters(hyper, ctx)
    if isinstance(changed, dict):
        # A move of some factors that the ELBO does not fall under (a
        # reparametrisation the likelihood does not see), committed here.
        if changed:
            moved = dict(est.natural_params_)
            moved.update((name, st.as_factor(name, value)) for name, value in changed.items())
            st.set_factors(est, moved)
            st.safety.known_bound = None
        return bool(changed)
    if changed:
        st.model_changed(est)
    return False


def end_of_pass(est, t, rho, scale):
    """The model's step after the last step of a pass (``ctx.end_of_pass``)."""
    st = est._svi
    ctx = StepContext(
        online=True,
        t=t,
        rho=rho,
        backoff=1.0,
        scale=scale,
        prior=st.prior,
        end_of_pass=True,
        fit=st.context,
    )
    if est._update_hyperparameters(None, ctx):
        st.model_changed(est)
