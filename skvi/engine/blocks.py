"""The loop's operations on one block of data, with the globals held fixed.

Every function here takes the estimator (or a worker's copy of it), a block
of validated rows and, where the loop has one, the block's local step; their
results add over blocks (:func:`~skvi.engine.add_statistics`).  Executors
(:mod:`skvi.engine.executor`) map them over the blocks of a minibatch, in
memory or where the blocks are held; they need nothing but numpy.
"""

import copy
import inspect

import numpy as np
import scipy.sparse as sp

from .rows import RowGroup, RowsOfBlock, counts_of_ids, row_weights
from .settings import settings_of
from .statistics import Statistics

__all__ = [
    "all_statistics",
    "block_row_counts",
    "bound",
    "factor_statistics",
    "hyper_statistics",
    "initialize",
    "local_step",
    "row_counts",
    "row_weights",
]


def row_counts(est, data, sizes):
    """Each row group's (weighted) count of the data points of rows, as a tuple.

    ``sizes`` holds ``(name, number of rows of the group)`` pairs.
    """
    counts = counts_of_ids(settings_of(est).row_groups, data, dict(sizes))
    return tuple(counts[name] for name, _ in sizes)


def block_row_counts(est, data, local, sizes):
    """:func:`row_counts` as a block function (summed over blocks)."""
    return row_counts(est, data, sizes)


def sample_count(est, data):
    """``_sample_count`` of a block: its rows, or their total weight."""
    return float(est._sample_count(data))


def initialize(est, data, random_state, summary, context=None):
    """The model's ``_initialize_globals``, told the fit's context when it takes one.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.blocks import initialize
    >>> est = GaussianGammaVB()
    >>> data = est._prepare_data(np.ones((5, 2)), None, None, reset=True)
    >>> sorted(initialize(est, data, None, est._data_summary(data)))
    ['mean', 'precision']
    """
    hook = est._initialize_globals
    if context is not None and "ctx" in inspect.signature(hook).parameters:
        return hook(data, random_state, summary, ctx=context)
    return hook(data, random_state, summary)


def local_step(est, data, params, draws=None, rows=None):
    """The local step of a block at ``params``, with its rows' random draws (if any).

    ``rows`` holds the block's rows of resident row groups (a dict of
    :class:`~skvi.engine.rows.RowsOfBlock`), which join the globals.
    """
    params = with_rows(params, rows)
    if draws is None:
        return est._local_step(data, params)
    return est._local_step(data, params, draws)


def factor_statistics(est, data, local, name, params):
    """One factor's expected sufficient statistics of a block."""
    return est._expected_stats(name, data, local, params)


def all_statistics(est, data, local, names, params, hyper=True):
    """Every named factor's statistics (and the hyperparameters') of a block, as Statistics."""
    factors = {name: est._expected_stats(name, data, local, params) for name in names}
    return Statistics(
        est._sample_count(data),
        factors,
        hyper_statistics(est, data, local) if hyper else None,
    )


def bound(est, data, local, params):
    """The data part of the ELBO of a block (its local step done by the model when None)."""
    return float(est._local_bound(data, local, params))


def hyper_statistics(est, data, local):
    """What the model's own step needs of a block: ``_data_summary`` with its local step.

    A block without a local step has none (the start's summary is the
    call with ``local`` None).
    """
    return None if local is None else est._data_summary(data, local)


def data_summary(est, data, local):
    """``_data_summary`` of a block at the start (summed over blocks before the start)."""
    return est._data_summary(data, None)


def probe_loss(est, probe, params):
    """The probe's loss under ``params``."""
    loss = est._probe_loss(probe, params)
    return None if loss is None else float(loss)


def take_rows(data, rows):
    """The given rows of a block (a minibatch's piece or a sample's share)."""
    return data[rows]


def concatenate(*parts):
    """Rows of several blocks stacked (a sample, from each block's share)."""
    parts = [p for p in parts if p.shape[0]]
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    if hasattr(type(first), "concatenate"):  # a model's own container (Rows)
        return type(first).concatenate(parts)
    if sp.issparse(first):
        return sp.vstack(parts, format=first.format)
    return np.concatenate(parts)


# -------------------------------------------------- resident row groups
def with_rows(params, rows):
    """The globals ``params`` joined by a block's resident rows (None: none)."""
    if not rows:
        return params
    params = dict(params)
    params.update({name: part.natural for name, part in rows.items()})
    return params


def with_block_rows(function, est, data, local, rows, *args):
    """``function(est, data, local, *args)`` with the block's resident rows in every globals dict."""
    args = [with_rows(a, rows) if isinstance(a, dict) else a for a in args]
    return function(est, data, local, *args)


def start_rows(est, data, names, seed):
    """A block's rows of the resident groups ``names`` at their start, and their summaries.

    Returns ``(rows, reports)``: the :class:`~skvi.engine.rows.RowsOfBlock`
    of each group, and of each a report ``{"summary", "invalid",
    "nonfinite"}`` (see :func:`row_step`), summed over the blocks.
    """
    random_state = np.random.RandomState(seed)
    n = data.shape[0]
    totals = row_counts(est, data, tuple((name, n) for name in names))
    settings = settings_of(est)
    rows, reports = {}, {}
    for name, total in zip(names, totals):
        group = RowGroup(n)
        group.totals = total
        natural = settings.row_groups[name].grow_rows(name, n, np.ones(n, dtype=bool), random_state)
        rows[name] = RowsOfBlock(settings.as_factor(name, natural), group)
        reports[name] = _row_report(est, name, rows[name], True)
    return rows, reports


def _row_report(est, name, part, valid):
    finite = all(np.all(np.isfinite(a)) for a in part.natural)
    summary = None
    if finite:
        try:
            spec = settings_of(est).row_groups[name]
            summary = spec.summary_of(name, part.natural, part.group.steps, part.group.totals)
        except np.linalg.LinAlgError:
            # Rows the model cannot summarise (a covariance that is not
            # positive definite): a step no fit may keep.
            valid = finite = False
    return {
        "summary": summary,
        "invalid": 0.0 if valid else 1.0,
        "nonfinite": 0.0 if finite else 1.0,
    }


def row_step(est, data, local, rows, params, name, ctx, schedule):
    """One step of a block's rows of the resident group ``name``, as the engine steps a group.

    Returns the block's new :class:`~skvi.engine.rows.RowsOfBlock` (kept on
    the worker) and its report, ``{"summary", "invalid", "nonfinite"}``.
    """
    settings = settings_of(est)
    part = rows[name]
    group = part.group.copy()  # the old rows stay as they are if the step is rejected
    params = with_rows(params, rows)
    ctx = copy.copy(ctx)
    ctx.params = params
    stats = est._expected_stats(name, data, local, params)
    group.prepare(stats.rows, stats.counts, ctx, schedule, settings.row_groups[name].scheduled)
    ctx.new_rule_state = None
    new, valid = est._update_factor(name, part.natural, stats, ctx)
    if ctx.new_rule_state is not None:
        group.keep_rule_state(stats.rows, ctx.new_rule_state)
    group.commit()
    new_part = RowsOfBlock(settings.as_factor(name, new), group)
    return new_part, _row_report(est, name, new_part, valid)
