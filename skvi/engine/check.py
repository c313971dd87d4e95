"""``check_model``: the engine's contract, checked on data.

scikit-learn's ``check_estimator`` tells an estimator's author where the
estimator API is broken; :func:`check_model` does the same for the engine's
contract with a model (docs/engine.md, "What a model supplies").  Each check
compares what the model's hooks return with an independent consequence of
the mathematics, and raises :class:`ContractError` naming the hooks that
disagree, before step safety can turn a contract error into a tuning
problem (a wrong sign in the statistics makes every step look like a step
that is too long).
"""

import copy
import pickle
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state

from . import blocks as _fn
from .executor import local_executor
from .settings import settings_of
from .state import FitContext
from ..schedules import Constant
from .statistics import RowStatistics
from .step import take_step

__all__ = ["ContractError", "check_model"]


class ContractError(AssertionError):
    """A model's hooks break the engine's contract; the message names them.

    Examples
    --------
    >>> from skvi.engine import ContractError
    >>> issubclass(ContractError, AssertionError)
    True
    """


def check_model(estimator, X, y=None, *, sample_weight=True, rtol=1e-3):
    """Check that a model keeps the engine's contract on the data ``(X, y)``.

    Fits clones of ``estimator`` (its parameters kept, the engine's set as
    each check needs) on a few hundred rows of its own kind of data and
    raises :class:`ContractError`, naming the hooks, when

    1. the natural gradient the hooks define, ``F(lam) (lam_hat - lam)``
       with ``lam_hat`` the target of a unit step on all of X
       (``_expected_stats``, ``_prior_natural``, ``_update_factor``), is not
       the gradient of the ELBO they define (``_local_bound``,
       ``_global_bound``), measured by central finite differences along
       ``lam_hat - lam`` for every factor that the natural-gradient blend
       steps (a factor with an update rule is left out);
    2. a batch fit's closed-form steps (a model whose settings say
       ``batch_steps='blend'``) lower the ELBO: coordinate ascent never
       does;
    3. an online fit whose minibatch is all of X, with a step size of 1,
       differs from the batch fit;
    4. the statistics or the data part of the ELBO of X with integer row
       weights differ from those of X with each row repeated that often
       (``_prepare_data``, ``_expected_stats``, ``_local_bound``), for a
       model that takes ``sample_weight`` and has no row group of one row
       per data row;
    5. the pickle of a fitted estimator grows with the training rows (an
       attribute keeps them, or something per row).

    Parameters
    ----------
    estimator : SVIEstimator
        The model, unfitted; clones of it are fitted.
    X : array-like or sparse matrix
        A few hundred rows of the model's kind of data.
    y : array-like or None, default=None
        Their targets, for a supervised model.
    sample_weight : bool, default=True
        Run check 4 (weights against repeated rows) when the model takes
        weights.
    rtol : float, default=1e-3
        Relative tolerance of check 1's finite differences; the other checks
        compare to rounding.

    Returns
    -------
    estimator : SVIEstimator
        The clone fitted by check 1, for inspection.

    Raises
    ------
    ContractError
        The first check that fails, with the hooks it implicates.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine import check_model
    >>> X = np.random.RandomState(0).normal(3.0, 2.0, size=(300, 2))
    >>> est = check_model(GaussianGammaVB(random_state=0), X)
    """
    with warnings.catch_warnings():
        # The verdict is the exception: step safety's and convergence
        # warnings of the checks' short fits say nothing about the contract.
        warnings.simplefilter("ignore")
        est = _check_gradients(estimator, X, y, rtol)
        _check_batch_ascent(estimator, X, y)
        _check_one_minibatch_is_batch(est, X, y)
        if sample_weight:
            _check_weights_are_repeats(est, X, y)
        _check_pickle_keeps_no_rows(estimator, X, y)
    return est


# ------------------------------------------------------------------ helpers
def _with_engine_params(estimator, **params):
    """A clone of ``estimator`` with those of ``params`` it has."""
    est = clone(estimator)
    own = est.get_params(deep=False)
    est.set_params(**{k: v for k, v in params.items() if k in own})
    return est


def _fit(est, X, y, **kw):
    return est.fit(X, **kw) if y is None else est.fit(X, y, **kw)


def _flat(arrays):
    return np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in arrays])


def _inner(a, b):
    return float(sum(np.vdot(np.asarray(u, float), np.asarray(v, float)) for u, v in zip(a, b)))


def _fresh(estimator, X, y):
    """A clone at the start of a fit on (X, y), before its first step, and its prepared rows.

    The checks of the hooks' mathematics are made where a fit starts: one
    step would already reach the fixed point of a model whose statistics do
    not depend on the globals, where the natural gradient is zero.
    """
    est = clone(estimator)
    data = est._prepare_data(X, y, None, reset=True)
    executor = local_executor(None)
    rng = check_random_state(est.random_state)
    settings = settings_of(est)
    batch = est._only_batch_steps(data.shape[0], settings.children_per_row)
    st = est._start_fit(data, executor, settings, rng, False, FitContext(only_batch_steps=batch))
    st.rows.count(est, executor, data)
    est.n_samples_seen_ = executor.count(est, data)
    est.n_iter_, est.converged_ = 0, False
    return est, data


def _local(est, data, params):
    """The local step of the prepared rows at ``params``."""
    executor = local_executor(None)
    try:
        return executor.local_steps(est, data, params, est._svi.rng)
    finally:
        executor.close()


def _bound(est, data, params, local=None):
    """The ELBO of the prepared rows at ``params``: global part plus data part.

    With ``local`` the local factors are held at it; without, the model
    fits them at ``params``.
    """
    executor = local_executor(None)
    try:
        part = executor.sum(est, _fn.bound, data, local, params)
    finally:
        executor.close()
    return float(est._global_bound(params)) + float(part)


def _statistics(est, data, params, local=None):
    """Every factor's statistics of the prepared rows (with their local step at ``params``)."""
    if local is None:
        local = _local(est, data, params)
    executor = local_executor(None)
    try:
        return executor.sum(est, _fn.all_statistics, data, local, est._svi.data_factors, params)
    finally:
        executor.close()


def _targets(est, stats):
    """Every blended factor's target ``lam_hat`` of a unit step from ``stats``.

    The engine's own step (``apply_statistics``) on a copy, with a step size
    of 1 and step safety off: for a factor stepped by the blend, the new
    value is the target.
    """
    copy_ = copy.deepcopy(est)
    st = copy_._svi
    st.schedule = Constant(1.0)
    copy_.step_safety = False
    st.safety.enabled = False
    copy_.apply_statistics(stats, total_samples=stats.n_samples)
    return copy_.natural_params_


# ------------------------------------------------------------------- checks
def _check_gradients(estimator, X, y, rtol):
    """Check 1: the hooks' natural gradient against finite differences of their ELBO."""
    est, data = _fresh(estimator, X, y)
    settings = settings_of(est)
    params = dict(est.natural_params_)
    here = _bound(est, data, params)
    if not np.isfinite(here):
        raise ContractError(
            f"{type(est).__name__}: the ELBO of valid factors is {here}: _local_bound or "
            "_global_bound returns a value that is not finite."
        )
    # The local factors stay at their optimum for ``params``: the statistics
    # and the bound then define the same function of the globals exactly,
    # without the local step's own tolerance in the differences.
    local = _local(est, data, params)
    targets = _targets(est, _statistics(est, data, params, local))
    for name in settings.names:
        if name in settings.update_rules or name not in est._svi.data_factors:
            continue
        current = params[name]
        if not settings.is_valid(name, targets[name]):
            raise ContractError(
                f"{type(est).__name__}: factor {name!r}: the target of a closed-form step from "
                "valid factors, _prior_natural + N / |S| _expected_stats (through "
                "_update_factor), is not a valid distribution of its family: expected "
                "statistics of the data never make one, so a sign or a factor of the "
                "statistics is wrong."
            )
        step = tuple(
            np.asarray(t, float) - np.asarray(c, float) for t, c in zip(targets[name], current)
        )
        size = np.linalg.norm(_flat(step))
        if not size:
            continue
        eps = 1e-5 * (np.linalg.norm(_flat(current)) + 1.0) / size
        ends = []
        for sign in (1.0, -1.0):
            moved = settings.as_factor(
                name, tuple(c + sign * eps * d for c, d in zip(current, step))
            )
            if not settings.is_valid(name, moved):
                break
            at = dict(params)
            at[name] = moved
            which = range(len(moved))
            ends.append((_bound(est, data, at, local), moved.mean_parameters(which)))
        if len(ends) < 2:
            continue
        (up, mean_up), (down, mean_down) = ends
        measured = (up - down) / (2 * eps)
        predicted = _inner(step, [(a - b) / (2 * eps) for a, b in zip(mean_up, mean_down)])
        if not abs(measured - predicted) <= rtol * max(abs(measured), abs(predicted)) + 1e-8:
            raise ContractError(
                f"{type(est).__name__}: factor {name!r}: the ELBO's derivative along the "
                f"natural gradient is {measured:.6g} by finite differences of _local_bound + "
                f"_global_bound, but the hooks' step predicts {predicted:.6g} "
                "(F(lam) (lam_hat - lam), with lam_hat = _prior_natural + N / |S| "
                "_expected_stats through _update_factor): a sign or a factor of the "
                "statistics, the prior or the bound is wrong."
            )
    return est


def _check_batch_ascent(estimator, X, y):
    """Check 2: closed-form batch steps never lower the ELBO."""
    est = _with_engine_params(
        estimator, learning_method="batch", max_iter=4, tol=0.0, step_safety=False
    )
    if settings_of(est).batch_steps_tested_by_bound:
        return
    _fit(est, X, y)
    bounds = np.asarray(est.lower_bounds_, dtype=float)
    if not np.all(np.isfinite(bounds)):
        raise ContractError(
            f"{type(est).__name__}: a batch fit's closed-form steps reached an ELBO of "
            f"{bounds[~np.isfinite(bounds)][0]}: _expected_stats, _prior_natural or "
            "_update_factor make factors whose _local_bound + _global_bound is not finite."
        )
    for i in range(1, bounds.size):
        drop = bounds[i - 1] - bounds[i]
        if drop > 1e-9 * max(1.0, abs(bounds[i - 1])):
            raise ContractError(
                f"{type(est).__name__}: a closed-form batch step (pass {i + 1} of a fresh fit) "
                f"lowered the ELBO from {bounds[i - 1]:.10g} to {bounds[i]:.10g}; coordinate "
                "ascent never does, so _expected_stats, _prior_natural or _update_factor "
                "disagrees with _local_bound + _global_bound."
            )


def _check_one_minibatch_is_batch(est, X, y):
    """Check 3: an online step whose minibatch is all the rows, at step size 1, is a batch step."""
    data = est._prepare_data(X, y, None, reset=False)
    batch, online = _unit_step(est, data, online=False), _unit_step(est, data, online=True)
    for name in settings_of(est).names:
        a, b = _flat(batch[name]), _flat(online[name])
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-9 * np.abs(a).max()):
            raise ContractError(
                f"{type(est).__name__}: factor {name!r} after an online step whose one "
                "minibatch is all the rows, at step size 1, differs from the batch step's from "
                "the same factors; the hooks (_local_step, _local_draws, _expected_stats, "
                "_update_factor) must not depend on how the engine cut the data."
            )


def _unit_step(est, data, online):
    """The factors after one step on all the rows of ``data``, at step size 1, on a copy."""
    copy_ = copy.deepcopy(est)
    st = copy_._svi
    st.use(local_executor(None))
    st.schedule = Constant(1.0)
    copy_.step_safety = False
    st.safety.enabled = False
    take_step(copy_, data, 1.0, online=online, rho=1.0 if online else None)
    return copy_.natural_params_


def _check_weights_are_repeats(est, X, y):
    """Check 4: weighted rows are repeated rows, in the statistics and the bound.

    Left out for a model whose row group has one row per data row (the
    settings' resident row groups, a correlated topic model's
    documents): a repeated row is a new row of that group, with no factor
    in the fitted model to compare.
    """
    if settings_of(est).resident_row_groups:
        return
    n = X.shape[0]
    repeats = np.arange(n) % 3 + 1
    # Prepared as a fit prepares its rows (on a copy: a fit's preparation
    # resets what the model learnt of its data, the same again for these rows).
    prep = copy.deepcopy(est)
    try:
        weighted = prep._prepare_data(X, y, repeats.astype(float), reset=True)
    except (TypeError, ValueError) as exc:
        if "weight" in str(exc):
            return  # the model takes no weights
        raise
    index = np.repeat(np.arange(n), repeats)
    repeated = prep._prepare_data(
        X[index], None if y is None else np.asarray(y)[index], None, reset=True
    )
    params = est.natural_params_
    # Common random numbers: a repeated row's local step gets its row's draws.
    draws = est._local_draws(weighted, np.random.RandomState(0))
    local_w = _fn.local_step(est, weighted, params, draws)
    local_r = _fn.local_step(est, repeated, params, _take_rows(draws, index, n))
    names = est._svi.data_factors
    got = _fn.all_statistics(est, weighted, local_w, names, params)
    want = _fn.all_statistics(est, repeated, local_r, names, params)
    if not np.isclose(got.n_samples, want.n_samples):
        raise ContractError(
            f"{type(est).__name__}: rows with weights 1, 2, 3 count for {got.n_samples} samples, "
            f"the rows repeated for {want.n_samples}: _prepare_data's rows must count their "
            "weights (count())."
        )
    for name, value in want.factors.items():
        a, b = _dense(got.factors[name]), _dense(value)
        if a.shape != b.shape or not _close(a, b):
            raise ContractError(
                f"{type(est).__name__}: factor {name!r}: the statistics of weighted rows differ "
                "from those of the rows repeated as often: _expected_stats must weigh each "
                "row's statistics by its weight."
            )
    a = float(_fn.bound(est, weighted, local_w, params))
    b = float(_fn.bound(est, repeated, local_r, params))
    if not _close(a, b):
        raise ContractError(
            f"{type(est).__name__}: the ELBO of weighted rows is {a:.10g}, of the rows repeated "
            f"as often {b:.10g}: _local_bound must weigh each row's term by its weight."
        )


def _close(a, b):
    """Equal to rounding, as norms: the repeated rows' terms are summed in another order."""
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    return np.linalg.norm(a - b) <= 1e-8 * max(np.linalg.norm(b), 1e-300)


def _take_rows(draws, index, n):
    """The random draws of rows ``index``: arrays whose leading axis is the ``n`` rows."""
    if isinstance(draws, np.ndarray) and draws.ndim and draws.shape[0] == n:
        return draws[index]
    if isinstance(draws, (tuple, list)):
        return type(draws)(_take_rows(d, index, n) for d in draws)
    if isinstance(draws, dict):
        return {k: _take_rows(d, index, n) for k, d in draws.items()}
    return draws


def _dense(stats):
    if isinstance(stats, RowStatistics):
        return np.concatenate([np.ravel(stats.rows).astype(float), _flat(stats.values)])
    return _flat(stats)


def _check_pickle_keeps_no_rows(estimator, X, y):
    """Check 5: a fitted estimator's pickle does not grow with its training rows."""
    n = X.shape[0]
    common = dict(learning_method="batch", max_iter=2, tol=0.0)
    one = _fit(_with_engine_params(estimator, **common), X, y)
    index = np.concatenate([np.arange(n), np.arange(n)])
    two = _fit(
        _with_engine_params(estimator, **common),
        X[index],
        None if y is None else np.asarray(y)[index],
    )
    small, large = _pickled_sizes(one), _pickled_sizes(two)
    grown = {k: large[k] - small.get(k, 0) for k in large if large[k] - small.get(k, 0) >= 2 * n}
    if grown:
        where = ", ".join(f"{k} (+{v} bytes)" for k, v in sorted(grown.items()))
        raise ContractError(
            f"{type(one).__name__}: fitted on its {n} rows twice over, its pickle grows in "
            f"{where}: a fitted estimator must keep no training rows or per-row state "
            "(list what a fit needs only while it runs in the settings' transient)."
        )


def _pickled_sizes(est):
    state = est.__getstate__()
    return {k: len(pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)) for k, v in state.items()}
