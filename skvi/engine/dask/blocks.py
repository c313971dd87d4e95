"""The fit's data as blocks on the workers of a dask cluster, and what runs on a block.

:class:`DaskBlocks` holds the validated blocks (futures) in row order and
runs the loop's block operations (:mod:`skvi.engine.blocks`) where they
are: only the globals go out and summed statistics come back, added in a
tree on the workers.  Per-row factors of the data's own rows (a model's
resident row groups) live with their blocks.  An operation that meets a
lost worker is redone (:data:`RETRIES`) while what it needs can be rebuilt.
"""

import copy
import operator
import time

import numpy as np

from .. import blocks as _fn
from ..rows import ResidentRows
from ..statistics import Distinct
from ..step import StepContext
from .transport import (
    WorkerLostError,
    _count,
    _import_dask,
    _lost_results,
    changed_attributes,
    worker_view,
)

__all__ = [
    "DaskBlocks",
    "RECOMPUTE_SECONDS",
    "RETRIES",
    "RETRY_PAUSE",
    "block_count",
    "block_initialize",
    "block_local_step",
    "block_prepare",
    "block_probe_loss",
    "block_vocabulary",
    "default_vocabulary",
]

#: How often an operation on the blocks is redone after a worker was lost.
RETRIES = 5
#: Seconds before the first redo, doubled before each next one (at most 8).
RETRY_PAUSE = 0.5

#: How long a lost worker's resident members are waited for (recomputed if they can be).
RECOMPUTE_SECONDS = 30


def _n_rows(data):
    return int(data.shape[0])


def default_vocabulary(estimator, X, y, sample_weight):
    """What every block must agree on before it is validated: a classifier's labels.

    Parameters
    ----------
    estimator : SVIEstimator
        The model (a classifier has labels to agree on).
    X : array-like
        A raw block of rows (unused).
    y : array-like or None
        The block's targets.
    sample_weight : array-like or None
        The block's row weights (unused).

    Returns
    -------
    dict of str to Distinct or None
        ``{"classes": the block's labels}`` for a classifier with targets,
        else None (nothing to agree on).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVILogisticRegression
    >>> from skvi.engine.dask.blocks import default_vocabulary
    >>> vocabulary = default_vocabulary(SVILogisticRegression(), None, np.array([1, 0, 1]), None)
    >>> vocabulary["classes"].values
    array([0, 1])
    """
    from sklearn.base import is_classifier  # noqa: PLC0415

    if y is None or not is_classifier(estimator):
        return None
    return {"classes": Distinct(np.asarray(y).ravel())}


# ------------------------------------------------- functions run on a block
def block_vocabulary(estimator, X, y, sample_weight):
    """The model's vocabulary of a raw block (``_data_vocabulary``; merged over blocks).

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model.
    X : array-like
        A raw block of rows.
    y : array-like or None
        The block's targets.
    sample_weight : array-like or None
        The block's row weights.

    Returns
    -------
    dict of str to Distinct or None
        What the block holds of each vocabulary (a classifier's labels,
        matrix factorization's user and item ids); None for none.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.engine.dask.blocks import block_vocabulary
    >>> X, y = np.array([[0, 7], [2, 7]]), np.array([1.0, 2.0])
    >>> ids = block_vocabulary(SVIMatrixFactorization(), X, y, None)
    >>> ids["users"].values, ids["items"].values
    (array([0, 2]), array([7]))
    """
    own = getattr(estimator, "_data_vocabulary", None)
    if own is not None:
        return own(X, y, sample_weight)
    return default_vocabulary(estimator, X, y, sample_weight)


def block_prepare(estimator, X, y, sample_weight, vocabulary):
    """Validate one block as ``fit`` validates its input.

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model (left unchanged: a copy validates).
    X : array-like
        A raw block of rows.
    y : array-like or None
        The block's targets.
    sample_weight : array-like or None
        The block's row weights.
    vocabulary : dict
        What every block agreed on (merged :func:`block_vocabulary`; empty
        for nothing).

    Returns
    -------
    data : object
        The validated block, as the model's fit holds its data.
    attributes : dict
        The attributes validation set on the model (``n_features_in_``,
        ...), which the client sets on the estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.blocks import block_prepare
    >>> data, attributes = block_prepare(GaussianGammaVB(), np.zeros((5, 2)), None, None, {})
    >>> data.shape[0], attributes["n_features_in_"]
    (5, 2)
    """
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    data = est._prepare_data(X, y, sample_weight, reset=True, vocabulary=vocabulary)
    return data, changed_attributes(before, est, data)


def block_initialize(estimator, data, random_state, summary, context=None):
    """The model's initial globals from one block (or sample of rows).

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model, its data's attributes set.
    data : object
        A validated block (:func:`block_prepare`).
    random_state : numpy.random.RandomState
        The fit's generator, as the client holds it.
    summary : object or None
        ``_data_summary`` of all the blocks.
    context : FitContext or None, default=None
        The fit's context, which a hook that takes ``ctx`` is told.

    Returns
    -------
    natural : dict
        The initial globals (a resident row group's start on each block).
    attributes : dict
        The attributes the start set on the model.
    state : tuple
        The generator's state after the start: the client's generator
        continues from there, as in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.blocks import block_initialize, block_prepare
    >>> est = GaussianGammaVB()
    >>> data, attributes = block_prepare(est, np.ones((5, 2)), None, None, {})
    >>> est.__dict__.update(attributes)  # as the client does
    >>> natural, _, _ = block_initialize(est, data, np.random.RandomState(0), None)
    >>> sorted(natural)
    ['mean', 'precision']
    """
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    natural = _fn.initialize(est, data, random_state, summary, context)
    resident = est._settings.resident_row_groups
    # A resident group's members start on their own blocks (block_start_rows).
    natural = {k: tuple(np.asarray(a) for a in v) for k, v in natural.items() if k not in resident}
    return natural, changed_attributes(before, est, data), random_state.get_state()


def block_local_step(estimator, data, params, seed, rows=None):
    """The local step of a block, its random draws (if any) from ``seed``.

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model (a copy of it steps: the model may
        keep the step's draws).
    data : object
        A validated block.
    params : dict
        The globals.
    seed : int
        The seed of the block's generator for this step.
    rows : dict or None, default=None
        The block's members of resident row groups.

    Returns
    -------
    object
        The block's local step, as ``_local_step`` returns it.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.blocks import block_local_step, block_prepare
    >>> from skvi.engine.dask.transport import worker_view
    >>> X = np.random.RandomState(0).normal(size=(6, 2))
    >>> est = GaussianGammaVB().fit(X)
    >>> data, _ = block_prepare(worker_view(est), X, None, None, {})
    >>> local = block_local_step(worker_view(est), data, est.natural_params_, seed=0)
    """
    estimator = copy.copy(estimator)  # the model may keep the step's draws
    draws = estimator._local_draws(data, np.random.RandomState(seed))
    return _fn.local_step(estimator, data, params, draws, rows)


def block_count(estimator, data):
    """``_sample_count`` of a block: its rows, or their total weight.

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model.
    data : object
        A validated block.

    Returns
    -------
    float
        The block's count.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.blocks import block_count, block_prepare
    >>> data, _ = block_prepare(GaussianGammaVB(), np.ones((5, 2)), None, [2.0] * 5, {})
    >>> block_count(GaussianGammaVB(), data)
    10.0
    """
    return _fn.sample_count(estimator, data)


def block_probe_loss(estimator, data, params):
    """The probe's loss under ``params``, where the probe's rows are.

    Parameters
    ----------
    estimator : SVIEstimator
        The worker copy of the model.
    data : object
        The probe's rows, one validated block.
    params : dict
        The globals.

    Returns
    -------
    float or None
        The model's ``_probe_loss`` (None: the model has no probe loss).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.blocks import block_prepare, block_probe_loss
    >>> X = np.random.RandomState(0).normal(size=(6, 2))
    >>> est = GaussianGammaVB().fit(X)
    >>> data, _ = block_prepare(est, X, None, None, {})
    >>> block_probe_loss(est, data, est.natural_params_) is None  # judged by the bound
    True
    """
    return _fn.probe_loss(estimator, data, params)


class _Locals:
    """The local steps of a fit's blocks (futures on the workers) and how they were made."""

    __slots__ = ("futures", "params", "seeds")

    def __init__(self, futures, params, seeds):
        self.futures = futures
        self.params = params
        self.seeds = seeds


def _natural_map(function, rows):
    return np.asarray(function(rows.natural), dtype=np.float64)


def _stack(*values):
    return np.asarray(values, dtype=np.float64)


class DaskBlocks:
    """A fit's rows as blocks on a dask cluster (futures of validated blocks).

    Built by :func:`fit_on_cluster`; :class:`DaskExecutor` runs the loop's
    operations on them where they are.

    Parameters
    ----------
    channel : _Channel
        The client and what was last sent to the workers.
    blocks : list of distributed.Future
        The validated blocks, in row order.
    sizes : list of int
        Rows of each block.
    n_features : int
        Columns of the data.
    parents : list of int or None, default=None
        For a minibatch (pieces of the fit's blocks), the fit's block of
        each piece: its resident members are that block's.  None: the blocks
        are the fit's.

    Examples
    --------
    >>> from skvi.distributed import DaskBlocks
    >>> DaskBlocks.__name__
    'DaskBlocks'
    """

    def __init__(self, channel, blocks, sizes, n_features, parents=None):
        self.channel = channel
        self.blocks = list(blocks)
        self.parents = list(range(len(self.blocks))) if parents is None else list(parents)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.shape = (int(self.sizes.sum()), int(n_features))
        self.n_blocks = len(self.blocks)
        self._count = None

    def _map(self, function, *columns):
        self.channel.check_open()
        return self.channel.client.map(function, *columns, pure=False)

    def _repeat(self, value):
        return [value] * self.n_blocks

    def count(self, estimator):
        """``_sample_count`` of all the rows, summed over the blocks (computed once).

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.

        Returns
        -------
        float
            The rows' number, or their total weight.
        """
        if self._count is None:

            def attempt():
                view = self.channel.view(estimator)
                counts = self._map(block_count, self._repeat(view), self.blocks)
                return float(self.channel.tree_sum(counts))

            self._count = self._retrying(attempt, estimator)
        return self._count

    def initialize(self, estimator, random_state, summary, context=None):
        """The model's initial globals, from the first block or a sample over every block.

        The settings' ``start_sample_size`` chooses: None starts from the
        first block (as a first ``partial_fit`` minibatch would), a size
        from that many rows drawn over every block.  Resident row groups
        start on their own blocks.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted (it receives the attributes the
            start sets).
        random_state : numpy.random.RandomState
            The fit's generator; it continues from the start's state.
        summary : object or None
            ``_data_summary`` of all the blocks.
        context : FitContext or None, default=None
            The fit's context, sent with the start to its worker.

        Returns
        -------
        dict
            The initial globals by name (a resident group's as
            :class:`~skvi.engine.rows.ResidentRows`).
        """
        size = estimator._settings.start_sample_size
        if size is None:
            data = self.blocks[0]
        else:
            n = self.shape[0]
            # The draw of an in-memory start that subsamples (sorted rows).
            rows = (
                np.arange(n) if size >= n else np.sort(random_state.choice(n, size, replace=False))
            )
            data = self._rows_future(rows)
        view = self.channel._scatter(worker_view(estimator))  # before the engine state exists
        future = self.channel.client.submit(
            block_initialize, view, data, random_state, summary, context, pure=False
        )
        natural, attributes, state = self.channel.gather(future)
        random_state.set_state(state)
        estimator.__dict__.update(attributes)
        names = tuple(estimator._settings.resident_row_groups)
        if names:
            # Every block starts its own rows (as fit grows a group in memory).
            view = self.channel._scatter(worker_view(estimator))
            seeds = list(self.channel.rng.randint(0, 2**31 - 1, size=self.n_blocks))
            started = self._map(
                _fn.start_rows, self._repeat(view), self.blocks, self._repeat(names), seeds
            )
            rows = self._map(operator.getitem, started, self._repeat(0))
            reports = self._map(operator.getitem, started, self._repeat(1))
            summed = self.channel.tree_sum(reports)
            for name in names:
                natural[name] = ResidentRows(
                    self._map(operator.getitem, rows, self._repeat(name)),
                    self._map(operator.getitem, reports, self._repeat(name)),
                    summed[name]["summary"],
                    backend=self,
                )
        return natural

    def _rows(self, params):
        """Each block's resident members in ``params`` (dicts of futures), or None for none."""
        handles = {k: v for k, v in params.items() if isinstance(v, ResidentRows)}
        if not handles:
            return None
        return [{k: h.states[p] for k, h in handles.items()} for p in self.parents]

    def row_step(self, estimator, name, locals_, params, ctx, schedule):
        """The step of a resident group's members, each block stepping its own where it is.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.
        name : str
            The resident row group.
        locals_ : _Locals
            The blocks' local steps at ``params``.
        params : dict
            The globals, ``params[name]`` the group's current rows.
        ctx : StepContext
            The step's context (the numbers of it travel).
        schedule : object
            The step-size schedule.

        Returns
        -------
        rows : ResidentRows
            The blocks' new rows, kept until the step is accepted or
            forgotten.
        valid : bool
            Whether every new row is valid.
        """
        handle = params[name]
        sent = StepContext(
            ctx.online, ctx.t, ctx.rho, ctx.backoff, ctx.scale, ctx.prior, in_pass=ctx.in_pass
        )
        for _ in self.blocks:  # sent with each block's task
            _count("bytes_out", (sent, schedule))

        def attempt():
            results = self._map(
                _fn.row_step,
                self._repeat(self.channel.view(estimator)),
                self.blocks,
                locals_.futures,
                self._rows(params),
                self._repeat(self.channel.params(params)),
                self._repeat(name),
                self._repeat(sent),
                self._repeat(schedule),
            )
            # The blocks' new rows and reports replace their parents'; the rows
            # of blocks this minibatch does not touch stay as they were.
            states, reports = list(handle.states), list(handle.reports)
            new_states = self._map(operator.getitem, results, self._repeat(0))
            new_reports = self._map(operator.getitem, results, self._repeat(1))
            for parent, state, report in zip(self.parents, new_states, new_reports):
                states[parent], reports[parent] = state, report
            return states, reports, self.channel.tree_sum(reports)

        states, reports, total = self._retrying(attempt, estimator, locals_, params)
        rows = ResidentRows(
            states,
            reports,
            total["summary"],
            finite=total["nonfinite"] == 0,
            backend=handle.backend,
        )
        return rows, bool(total["invalid"] == 0)

    def map_rows(self, handle, function, tail_shape):
        """``function`` of every block's resident members, as a lazy dask array in row order.

        Parameters
        ----------
        handle : ResidentRows
            The rows (one future per block).
        function : callable
            ``function(natural)`` of a block's rows' natural parameters, one
            row of values per row.
        tail_shape : tuple of int
            The shape of each row of values.

        Returns
        -------
        dask.array.Array
            Of shape ``(n_rows,) + tail_shape``.
        """
        da, _ = _import_dask()
        import dask  # noqa: PLC0415

        parts = [
            da.from_delayed(
                dask.delayed(_natural_map)(function, state),
                shape=(int(size),) + tuple(tail_shape),
                dtype=np.float64,
            )
            for state, size in zip(handle.states, self.sizes)
        ]
        return da.concatenate(parts, axis=0)

    def local_steps(self, estimator, params):
        """Every block's local step at ``params``, kept on its worker.

        Each block draws from a generator seeded for it and this step, so
        that a step redone after a lost worker draws the same numbers.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.
        params : dict
            The globals.

        Returns
        -------
        _Locals
            The local steps' futures, with the globals and seeds they were
            made with.
        """
        seeds = list(self.channel.rng.randint(0, 2**31 - 1, size=self.n_blocks))
        # Sending the view and globals may meet a worker that just died: retried.
        futures = self._retrying(
            lambda: self._local_futures(estimator, params, seeds), estimator, None, params
        )
        return _Locals(futures, params, seeds)

    def _local_futures(self, estimator, params, seeds):
        rows = self._rows(params) or self._repeat(None)
        return self._map(
            block_local_step,
            self._repeat(self.channel.view(estimator)),
            self.blocks,
            self._repeat(self.channel.params(params)),
            seeds,
            rows,
        )

    def sum_over(self, estimator, function, locals_, *args):
        """``function(est, block, local, *args)`` of every block, summed in a tree on the workers.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.
        function : callable
            A block function of :mod:`skvi.engine.blocks`.
        locals_ : _Locals or None
            The blocks' local steps (None: the function needs none).
        *args
            Its further arguments; dicts are globals, sent once per value
            and joined by each block's resident members.

        Returns
        -------
        object
            The sum, gathered to the client.
        """
        rows = None
        for a in args:
            if isinstance(a, dict):
                rows = rows or self._rows(a)

        def attempt():
            # Inside the attempt: a lost worker may have held the globals
            # sent before, and a retry sends them again.
            columns = [
                self._repeat(self.channel.params(a) if isinstance(a, dict) else a) for a in args
            ]
            futures = self._repeat(None) if locals_ is None else locals_.futures
            view = self._repeat(self.channel.view(estimator))
            if rows is None:
                parts = self._map(function, view, self.blocks, futures, *columns)
            else:  # the globals joined by each block's resident members
                parts = self._map(
                    _fn.with_block_rows,
                    self._repeat(function),
                    view,
                    self.blocks,
                    futures,
                    rows,
                    *columns,
                )
            return self.channel.tree_sum(parts)

        return self._retrying(attempt, estimator, locals_, *args)

    def _retrying(self, attempt, estimator, locals_=None, *params):
        """``attempt()``, redone after a lost worker while what it needs can be rebuilt.

        A lost worker takes with it what the scheduler cannot recompute:
        the scattered model and globals, which are sent again, and the
        local steps, which are redone (same globals, same seeds: the same
        results); the blocks themselves are rebuilt from their graph.  Rows
        of a resident group that lived only there are recomputed from their
        lineage while every object they came from has a copy elsewhere;
        otherwise they are lost for good and the error names them.
        """
        redo_locals = False
        for retry in range(RETRIES + 1):
            try:
                if redo_locals:
                    # Inside the try: resending may meet a lost worker too.
                    locals_.futures = self._local_futures(estimator, locals_.params, locals_.seeds)
                return attempt()
            except WorkerLostError as exc:
                lost = self._lost_rows(params + ((locals_.params,) if locals_ else ()))
                if lost:
                    raise WorkerLostError(
                        f"A dask worker was lost during the fit and with it the {lost} "
                        f"({type(estimator).__name__} keeps them only on the workers); no "
                        "model was fitted. Fit again once the cluster has its workers back."
                    ) from exc
                if retry == RETRIES:
                    raise
                self.channel.forget()
                # A moment for the lost worker's nanny to restart it and for
                # the scheduler to notice, before the work is sent again.
                time.sleep(min(RETRY_PAUSE * 2**retry, 8.0))
                redo_locals = locals_ is not None
        raise AssertionError("unreachable")  # pragma: no cover

    def _lost_rows(self, params):
        """Which resident members in ``params`` (dicts) are gone with a worker, in words, or ''."""
        from distributed import wait  # noqa: PLC0415

        lost = []
        for p in params:
            if not isinstance(p, dict):
                continue
            for name, handle in p.items():
                if not isinstance(handle, ResidentRows):
                    continue
                # What can be recomputed finishes; what cannot is cancelled.
                try:
                    wait(handle.states, timeout=RECOMPUTE_SECONDS)
                except (TimeoutError, *_lost_results()):
                    pass  # the status of each says what
                gone = [b for b, f in enumerate(handle.states) if f.status != "finished"]
                if gone:
                    # Numbered in the fit's rows (the handle's blocks are the fit's).
                    fit = handle.backend if isinstance(handle.backend, DaskBlocks) else self
                    starts = np.concatenate([[0], np.cumsum(fit.sizes)])
                    spans = ", ".join(f"{starts[b]}-{starts[b + 1] - 1}" for b in gone)
                    lost.append(f"'{name}' factors of rows {spans}")
        return " and ".join(dict.fromkeys(lost))

    def _pieces(self, rows):
        """Split global row numbers (increasing) into each block's local rows."""
        starts = np.concatenate([[0], np.cumsum(self.sizes)])
        cut = np.searchsorted(rows, starts)
        return [rows[cut[b] : cut[b + 1]] - starts[b] for b in range(self.n_blocks)]

    def _rows_future(self, rows):
        """The given rows (global numbers, increasing) stacked on a worker: a future."""
        client = self.channel.client
        parts = [
            client.submit(_fn.take_rows, block, local, pure=False)
            for block, local in zip(self.blocks, self._pieces(np.asarray(rows)))
            if local.size
        ]
        return client.submit(_fn.concatenate, *parts, pure=False)

    def sample(self, rows):
        """The given rows gathered into one block on a worker (a probe, a convergence sample).

        Parameters
        ----------
        rows : array-like of int
            Row numbers of the fit's rows, increasing.

        Returns
        -------
        DaskBlocks
            One block holding those rows.
        """
        rows = np.asarray(rows)
        return DaskBlocks(
            self.channel, [self._rows_future(rows)], [rows.size], self.shape[1], parents=[None]
        )

    def probe_loss(self, estimator, params):
        """The model's probe loss of these rows (a probe sample) under ``params``.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.
        params : dict
            The globals.

        Returns
        -------
        float or None
            The loss (None: the model has no probe loss).
        """

        def attempt():
            future = self.channel.client.submit(
                block_probe_loss,
                self.channel.view(estimator),
                self.blocks[0],
                self.channel.params(params),
                pure=False,
            )
            return self.channel.gather(future)

        return self._retrying(attempt, estimator, None, params)

    def minibatches(self, estimator, random_state, batch_size):
        """Yield ``(minibatch, N / |S|)`` for one online pass over the blocks.

        Every block's rows are shuffled and cut into the same number of
        near-equal pieces; step ``j`` takes piece ``j`` of every block, so
        that every worker works at every step.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator being fitted.
        random_state : numpy.random.RandomState
            The fit's generator (the shuffles).
        batch_size : int
            The rows of a step, about.

        Yields
        ------
        minibatch : DaskBlocks
            The pieces of one step.
        scale : float
            ``N / |S|``: the count of all the rows over the minibatch's.
        """
        n_batches = max(1, -(-self.shape[0] // int(batch_size)))
        client = self.channel.client
        # Each block's rows shuffled and cut into n_batches near-equal pieces;
        # step j takes piece j of every block.
        pieces = [np.array_split(random_state.permutation(size), n_batches) for size in self.sizes]
        steps = []
        for j in range(n_batches):
            parts, sizes, parents = [], [], []
            for b, (block, own) in enumerate(zip(self.blocks, pieces)):
                if own[j].size:
                    parts.append(client.submit(_fn.take_rows, block, own[j], pure=False))
                    sizes.append(own[j].size)
                    parents.append(self.parents[b])
            steps.append(DaskBlocks(self.channel, parts, sizes, self.shape[1], parents))

        # Every piece's count (its weights' sum) in one round trip per pass.
        def attempt():
            view = self.channel.view(estimator)
            counts = client.map(
                block_count,
                [view] * sum(s.n_blocks for s in steps),
                [p for s in steps for p in s.blocks],
                pure=False,
            )
            return self.channel.gather(client.submit(_stack, *counts, pure=False))

        counts = self._retrying(attempt, estimator)
        total = self.count(estimator)
        first = 0
        for step in steps:
            step._count = float(np.sum(counts[first : first + step.n_blocks]))
            first += step.n_blocks
            yield step, (total / step._count if step._count else 0.0)
