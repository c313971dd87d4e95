"""Data held in blocks elsewhere: what the engine maps over when a fit is distributed.

A fit on a cluster keeps its rows where they are, in blocks on the workers;
only the globals travel out and summed statistics travel back (Hoffman et
al., "Stochastic variational inference", on parallelisation).  The engine
sees such data as a :class:`BlockedData` and runs the same loop as for an
in-memory array: every operation it needs on "all of X" (the local step,
each factor's statistics, the data part of the ELBO, the hyperparameters'
statistics, the row count, a probe sample and the minibatches of an online
pass) is one of a block with the globals fixed, and the results add.

This module holds the interface and the block functions, which need nothing
but numpy; :mod:`skvi.distributed` implements the interface on dask.
"""

import copy

import numpy as np
import scipy.sparse as sp

from .rows import RowGroup, RowsOfBlock

__all__ = ["BlockedData", "backend_for", "register_backend"]

# Attributes of an estimator that never travel to a worker: the engine's
# state (the trace, the probe) and the globals, which are sent on their own.
_ENGINE_ATTRIBUTES = frozenset((
    "_svi", "natural_params_", "_blocks_pool", "_blocks_threads", "_worker_row_totals",
    "_worker_prior",
))


_BACKENDS = []


def register_backend(backend):
    """Make ``fit`` and the blockwise methods accept the collections of ``backend``.

    A backend knows one kind of data held elsewhere (:mod:`skvi.distributed`
    registers dask's when ``skvi`` is imported, without importing dask). It
    has ``accepts(X) -> bool``, ``fit(estimator, X, y, sample_weight)`` (a
    fit on the blocks where they are, through a :class:`BlockedData`) and
    ``blockwise(estimator, method, X, *args, **kwargs)`` (``method`` of each
    block, lazily).

    Parameters
    ----------
    backend : object
        The backend.

    Returns
    -------
    backend : object
        The same, registered.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.blocks import backend_for
    >>> backend_for(np.zeros(3)) is None  # in memory: no backend
    True
    """
    _BACKENDS.append(backend)
    return backend


def backend_for(X):
    """The registered backend whose collections X is one of, or None (X is in memory).

    Parameters
    ----------
    X : object
        Anything a ``fit`` or ``predict`` may receive.

    Returns
    -------
    backend or None

    Examples
    --------
    >>> from skvi.engine.blocks import backend_for
    >>> backend_for([[1.0, 2.0]]) is None
    True
    """
    for backend in _BACKENDS:
        if backend.accepts(X):
            return backend
    return None


def worker_view(estimator):
    """A shallow copy of ``estimator`` to ship to workers: no engine state, no globals.

    A model lists in ``_transient_attributes`` what never travels: what it
    keeps only for the duration of an in-memory fit (buffers, thread pools,
    the data itself) and fitted attributes of the size of the data.
    """
    view = copy.copy(estimator)
    drop = _ENGINE_ATTRIBUTES | frozenset(getattr(estimator, "_transient_attributes", ()))
    view.__dict__ = {k: v for k, v in estimator.__dict__.items() if k not in drop}
    st = getattr(estimator, "_svi", None)
    if st is not None:
        view._worker_prior = st.prior  # (``_prior_message``)
        if st.rows:
            # Per-row factors' N_i (``_row_totals``) are the size of the globals.
            view._worker_row_totals = {name: group.totals for name, group in st.rows.items()}
    return view


def changed_attributes(before, estimator, data=None):
    """The attributes ``estimator`` gained or replaced since ``before`` (a dict copy).

    What a model's ``_validate_input(reset=True)`` or ``_initialize_globals``
    set on a worker's copy, to be set on the client's estimator: never the
    block itself nor a transient attribute.
    """
    drop = _ENGINE_ATTRIBUTES | frozenset(getattr(estimator, "_transient_attributes", ()))
    return {
        k: v for k, v in estimator.__dict__.items()
        if k not in drop and (k not in before or before[k] is not v) and v is not data
    }


# ------------------------------------------------- functions run on a block
def block_prepare(estimator, X, y, sample_weight, vocabulary):
    """Validate one block as ``fit`` validates its input; returns (data, attributes set)."""
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    data = est._validate_input(est._fit_data(X, y, sample_weight, vocabulary), reset=True)
    return data, changed_attributes(before, est, data)


def block_initialize(estimator, data, random_state):
    """The model's initial globals from one block (or sample of rows).

    Returns (globals, attributes set, the generator's state after the
    start): the client's generator continues from there, as in memory.
    """
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    natural = est._initialize_globals(data, random_state)
    # A resident group's rows start on their own blocks (block_start_rows).
    natural = {k: tuple(np.asarray(a) for a in v) for k, v in natural.items()
               if k not in est._resident_row_groups}
    return natural, changed_attributes(before, est, data), random_state.get_state()


def block_data_summary(estimator, data, local):
    """``_data_summary`` of a block (summed over blocks before the start)."""
    return estimator._data_summary(data)


def block_vocabulary(estimator, X, y, sample_weight):
    """``_data_vocabulary`` of a raw block (merged over blocks before validation)."""
    return estimator._data_vocabulary(X, y, sample_weight)


def block_row_totals(estimator, data, local, sizes):
    """Each row group's count of a block's data points (``N_i``, summed over blocks)."""
    return estimator._row_counts(data, sizes)


def block_count(estimator, data):
    """``_sample_count`` of a block: its rows, or their total weight."""
    return float(estimator._sample_count(data))


def block_rows(data, rows):
    """The given rows of a block (a minibatch or a probe's share)."""
    return data[rows]


def block_concatenate(*parts):
    """Rows of several blocks stacked (the probe, from each block's share)."""
    parts = [p for p in parts if p.shape[0]]
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    if hasattr(type(first), "concatenate"):  # a model's own container (Rows)
        return type(first).concatenate(parts)
    if sp.issparse(first):
        return sp.vstack(parts, format=first.format)
    return np.concatenate(parts)


def block_local_step(estimator, data, params, seed, rows=None):
    """The local step of a block, its random draws (if any) from ``seed``.

    ``rows`` holds the block's rows of resident row groups (a dict of
    :class:`~skvi.engine.rows.RowsOfBlock`), which join the globals.
    """
    estimator = copy.copy(estimator)  # the model may keep the step's draws
    if seed is not None:
        estimator._seed_local_steps(np.random.RandomState(seed))
    params = with_rows(params, rows)
    estimator._prepare_local_steps(data, params)
    return estimator._local_step(data, params)


def with_rows(params, rows):
    """The globals ``params`` joined by a block's resident rows (None: none)."""
    if not rows:
        return params
    params = dict(params)
    params.update({name: part.natural for name, part in rows.items()})
    return params


def block_with_rows(function, estimator, data, local, rows, *args):
    """``function(estimator, data, local, *args)`` with the block's resident rows in every globals dict."""
    args = [with_rows(a, rows) if isinstance(a, dict) else a for a in args]
    return function(estimator, data, local, *args)


def block_start_rows(estimator, data, names, seed):
    """A block's rows of the resident groups ``names`` at their start, and their summaries.

    Returns ``(rows, reports)``: the :class:`~skvi.engine.rows.RowsOfBlock`
    of each group, and of each a report ``{"summary", "invalid",
    "nonfinite"}`` (see :func:`block_row_step`), summed over the blocks.
    """
    random_state = np.random.RandomState(seed)
    n = data.shape[0]
    totals = estimator._row_counts(data, tuple((name, n) for name in names))
    rows, reports = {}, {}
    for name, total in zip(names, totals):
        group = RowGroup(n)
        group.totals = total
        natural = estimator._as_factor(
            name, estimator._grow_rows(name, n, np.ones(n, dtype=bool), random_state))
        rows[name] = RowsOfBlock(natural, group)
        reports[name] = _row_report(estimator, name, rows[name], True)
    return rows, reports


def _row_report(estimator, name, part, valid):
    finite = all(np.all(np.isfinite(a)) for a in part.natural)
    summary = None
    if finite:
        try:
            summary = estimator._row_summary(
                name, part.natural, part.group.steps, part.group.totals)
        except np.linalg.LinAlgError:
            # Rows the model cannot summarise (a covariance that is not
            # positive definite): a step no fit may keep, even without
            # step safety.
            valid = finite = False
    return {
        "summary": summary,
        "invalid": 0.0 if valid else 1.0,
        "nonfinite": 0.0 if finite else 1.0,
    }


def block_row_step(estimator, data, local, rows, params, name, ctx, schedule):
    """One step of a block's rows of the resident group ``name``, as the engine steps a group.

    Returns the block's new :class:`~skvi.engine.rows.RowsOfBlock` (kept
    on the worker; the block's rows are the parent block's for a
    minibatch's piece) and its report, ``{"summary", "invalid",
    "nonfinite"}``.
    """
    part = rows[name]
    group = part.group.copy()  # the old rows stay as they are if the step is rejected
    params = with_rows(params, rows)
    ctx = copy.copy(ctx)
    ctx.params = params
    stats = estimator._expected_stats(name, data, local, params)
    group.prepare(stats.rows, stats.counts, ctx, schedule, estimator._scheduled_row_steps)
    ctx.new_rule_state = None
    new, valid = estimator._update_factor(name, part.natural, stats, ctx)
    if ctx.new_rule_state is not None:
        group.keep_rule_state(stats.rows, ctx.new_rule_state)
    group.commit()
    new_part = RowsOfBlock(estimator._as_factor(name, new), group)
    return new_part, _row_report(estimator, name, new_part, valid)


def block_statistics(estimator, data, local, name, params):
    """One factor's expected sufficient statistics of a block."""
    return estimator._expected_stats(name, data, local, params)


def block_all_statistics(estimator, data, local, names, params):
    """Every named factor's statistics and the hyperparameters' of a block, as Statistics."""
    from .statistics import Statistics  # noqa: PLC0415

    factors = {name: estimator._expected_stats(name, data, local, params) for name in names}
    return Statistics(
        estimator._sample_count(data), factors, estimator._hyperparameter_statistics(data, local)
    )


def block_bound(estimator, data, local, params):
    """The data part of the ELBO of a block (its local step redone when ``local`` is None)."""
    return float(estimator._local_bound(data, local, params))


def block_hyper_statistics(estimator, data, local):
    """The hyperparameters' statistics of a block."""
    return estimator._hyperparameter_statistics(data, local)


def block_probe(estimator, data):
    """The model's probe prepared from the probe rows."""
    return estimator._prepare_probe(data)


def block_probe_loss(estimator, probe, params):
    """The probe's loss under ``params``."""
    loss = estimator._probe_loss(probe, params)
    return None if loss is None else float(loss)


def block_call(estimator, data, method, *args):
    """Any further per-block sum a model needs (``getattr(estimator, method)(data, *args)``)."""
    return getattr(estimator, method)(data, *args)


class BlockedData:
    """The rows of a fit, held as blocks where they are and never gathered.

    The interface the engine's loop uses for data that is not in memory;
    :class:`skvi.distributed.DaskBlocks` implements it on a dask cluster.
    Every method takes the estimator, whose globals it sends out at most
    once per distinct value and whose other attributes (the worker view,
    see :func:`worker_view`) once per fit and after each hyperparameter
    update.

    Attributes
    ----------
    shape : tuple of int
        ``(n_rows, n_features)``.
    n_blocks : int
        The number of blocks.

    Examples
    --------
    >>> from skvi.engine.blocks import BlockedData
    >>> hasattr(BlockedData, "local_steps")
    True
    """

    shape = (0, 0)
    n_blocks = 0

    def count(self, estimator):
        """The total ``_sample_count`` of the rows (their weights' sum)."""
        raise NotImplementedError

    def initialize(self, estimator, random_state):
        """The model's initial globals, from the first block or a sample of rows.

        The rows are the model's ``_start_sample_size()`` drawn uniformly
        over all the blocks (None: the first block); ``random_state``
        continues as after an in-memory start.
        """
        raise NotImplementedError

    def local_steps(self, estimator, params):
        """Each block's local step at ``params``, kept with its block; a handle."""
        raise NotImplementedError

    def sum_over(self, estimator, function, locals_, *args):
        """``function(view, block, local, *args)`` of every block, summed."""
        raise NotImplementedError

    def probe(self, estimator, rows):
        """The model's probe from the given rows (global row numbers); a handle."""
        raise NotImplementedError

    def minibatches(self, estimator, random_state):
        """Yield ``(minibatch, N / |S|)`` for one online pass; each minibatch is a BlockedData."""
        raise NotImplementedError


class RemoteProbe:
    """A probe kept on a worker; its loss is computed there."""

    __slots__ = ("data", "handle")

    def __init__(self, data, handle):
        self.data = data
        self.handle = handle

    def loss(self, estimator, params):
        return self.data.probe_loss(estimator, self.handle, params)
