"""Fitting on a dask cluster: the map-reduce of sufficient statistics.

``est.fit(X)`` with a dask array (or dataframe) X runs the estimator's usual
loop with X's blocks kept on the workers (Hoffman et al., "Stochastic
variational inference", on parallelisation):

* each block is validated where it is, as ``fit`` validates its input;
* at every step the globals are scattered to the workers once, each worker
  computes the local step and the summed statistics of its blocks, the
  statistics are added in a tree on the workers, and the client applies the
  step from their sum;
* the local steps stay with their blocks; only the globals go out and the
  statistics (and a few numbers: counts, the ELBO's data part, the probe's
  loss) come back.  Nothing of the data is gathered to the client;
* per-row factors of the data's own rows (a model's resident row groups:
  the correlated topic model's documents) live on the workers with their
  blocks, which step them there and keep the new rows until the client
  accepts the step (:meth:`DaskBlocks.row_step`); the client holds their
  summed summary (:class:`skvi.engine.rows.ResidentRows`).

Batch fits (``learning_method='batch'``) use every block at every step.  What
is equal to an in-memory fit: the steps of a model whose local step draws no
random numbers (Gaussian-Gamma, linear regression, the mixture, the GLMs and
sparse GPs with quadrature expectations, matrix factorization's Gaussian
model, the correlated topic model with quadrature), to rounding.  What is
not: a local step's random draws (LDA's initial ``gamma`` of each E-step,
Monte Carlo expectations) come from a generator seeded per block and step,
so those fits agree with the in-memory one within their own noise (LDA's
``components_`` after one pass differ by a few percent, as two in-memory
fits of different seeds do).  An online pass cuts every block
into the same number of pieces and takes one step per piece index, on the
union of the pieces of every block (so that every worker works at every
step), with ``N / |S|`` for that union.  The first block initialises the
globals (as a first ``partial_fit`` minibatch would).

dask and distributed are an optional extra (``pip install skvi[dask]``),
imported only here; ``import skvi`` never imports them.  ``n_jobs`` keeps
its own threads on one machine (see the "Scaling out" page of the docs).
"""

import operator
import pickle
from concurrent.futures import CancelledError

import numpy as np
from sklearn.utils import check_random_state

import copy
import time

from .engine import blocks as _fn
from .engine.executor import Executor, register_backend
from .schedules import make_schedule
from .engine.rows import ResidentRows
from .engine.statistics import Distinct, add_statistics
from .engine.step import StepContext

__all__ = [
    "DaskBlocks",
    "DaskExecutor",
    "Traffic",
    "WorkerLostError",
    "blockwise",
    "fit_on_cluster",
    "traffic",
]

_RECORDERS = []


class Traffic:
    """What fits on a cluster sent to and gathered from the workers, in pickled bytes.

    Attributes
    ----------
    bytes_out : int
        Scattered by the client: the globals and the worker copies of the
        estimator (never data).
    bytes_in : int
        Gathered by the client: summed statistics, counts, bounds, probe losses.
    round_trips : int
        Results the client waited for.

    Examples
    --------
    >>> from skvi.distributed import Traffic
    >>> Traffic().bytes_out
    0
    """

    def __init__(self):
        self.bytes_out = 0
        self.bytes_in = 0
        self.round_trips = 0


class traffic:  # noqa: N801 (used as a function: ``with traffic() as t``)
    """Record the traffic of the fits on a cluster run inside the block.

    Examples
    --------
    >>> from skvi.distributed import traffic
    >>> with traffic() as t:
    ...     pass
    >>> t.bytes_in
    0
    """

    def __enter__(self):
        self.record = Traffic()
        _RECORDERS.append(self.record)
        return self.record

    def __exit__(self, *exc):
        _RECORDERS.remove(self.record)
        return False


def _count(kind, obj):
    if _RECORDERS:
        size = len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        for record in _RECORDERS:
            setattr(record, kind, getattr(record, kind) + size)
            if kind == "bytes_in":
                record.round_trips += 1


def _import_dask():
    try:
        import dask.array as da  # noqa: PLC0415
        import distributed  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "Fitting on dask collections needs dask and distributed: pip install 'skvi[dask]'."
        ) from exc
    return da, distributed


def _client(client):
    _, distributed = _import_dask()
    if client is not None:
        return client
    try:
        return distributed.default_client()
    except ValueError:
        raise ValueError(
            "fit received a dask collection but no dask.distributed Client is "
            "active: start one (distributed.Client(...)) or call .compute() on "
            "the data to fit in memory."
        ) from None


def _lost_results():
    """The exceptions of results a lost worker took with it, or of a connection it closed."""
    from distributed.comm.core import CommClosedError  # noqa: PLC0415
    from distributed.scheduler import KilledWorker  # noqa: PLC0415

    return (CancelledError, KilledWorker, CommClosedError)


def _worker_lost(exc):
    """The error of a fit that lost a worker and could not recover."""
    return WorkerLostError(
        "A dask worker was lost during the fit and its results could not be "
        f"recomputed ({type(exc).__name__}: {exc}); no model was fitted. Fit again "
        "once the cluster has its workers back."
    )


def _add(a, b):
    return add_statistics(a, b)


def _n_rows(data):
    return int(data.shape[0])


# ------------------------------------------------- what travels to a worker
#: Attributes of an estimator that never travel to a worker: the engine's
#: state and the globals, which are sent on their own.
_ENGINE_ATTRIBUTES = frozenset(("_svi", "natural_params_", "_worker_row_totals"))


def _transient(estimator):
    st = getattr(estimator, "_svi", None)
    settings = st.settings if st is not None and st.settings is not None else estimator._settings
    return _ENGINE_ATTRIBUTES | frozenset(settings.transient)


def worker_view(estimator):
    """A shallow copy of ``estimator`` to ship to workers: no engine state, no globals.

    The model's settings list in ``transient`` what never travels: what it
    keeps only for the duration of an in-memory fit (buffers, the data).
    """
    view = copy.copy(estimator)
    drop = _transient(estimator)
    view.__dict__ = {k: v for k, v in estimator.__dict__.items() if k not in drop}
    st = getattr(estimator, "_svi", None)
    if st is not None and st.rows:
        # Per-row factors' N_i (``_row_totals``) are the size of the globals.
        view._worker_row_totals = {name: group.totals for name, group in st.rows.items()}
    return view


def changed_attributes(before, estimator, data=None):
    """The attributes ``estimator`` gained or replaced since ``before`` (a dict copy)."""
    drop = _transient(estimator)
    return {
        k: v
        for k, v in estimator.__dict__.items()
        if k not in drop and (k not in before or before[k] is not v) and v is not data
    }


def default_vocabulary(estimator, X, y, sample_weight):
    """What every block must agree on before it is validated: a classifier's labels."""
    from sklearn.base import is_classifier  # noqa: PLC0415

    if y is None or not is_classifier(estimator):
        return None
    return {"classes": Distinct(np.asarray(y).ravel())}


# ------------------------------------------------- functions run on a block
def block_vocabulary(estimator, X, y, sample_weight):
    """The model's vocabulary of a raw block (``_data_vocabulary``; merged over blocks)."""
    own = getattr(estimator, "_data_vocabulary", None)
    if own is not None:
        return own(X, y, sample_weight)
    return default_vocabulary(estimator, X, y, sample_weight)


def block_prepare(estimator, X, y, sample_weight, vocabulary):
    """Validate one block as ``fit`` validates its input; returns (data, attributes set)."""
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    data = est._prepare_data(X, y, sample_weight, reset=True, vocabulary=vocabulary)
    return data, changed_attributes(before, est, data)


def block_initialize(estimator, data, random_state, summary):
    """The model's initial globals from one block (or sample of rows).

    Returns (globals, attributes set, the generator's state after the
    start): the client's generator continues from there, as in memory.
    """
    est = copy.copy(estimator)
    before = dict(est.__dict__)
    natural = est._initialize_globals(data, random_state, summary)
    resident = est._settings.resident_row_groups
    # A resident group's rows start on their own blocks (block_start_rows).
    natural = {k: tuple(np.asarray(a) for a in v) for k, v in natural.items() if k not in resident}
    return natural, changed_attributes(before, est, data), random_state.get_state()


def block_local_step(estimator, data, params, seed, rows=None):
    """The local step of a block, its random draws (if any) from ``seed``."""
    estimator = copy.copy(estimator)  # the model may keep the step's draws
    draws = estimator._local_draws(data, np.random.RandomState(seed))
    return _fn.local_step(estimator, data, params, draws, rows)


def block_count(estimator, data):
    """``_sample_count`` of a block: its rows, or their total weight."""
    return _fn.sample_count(estimator, data)


def block_probe_loss(estimator, data, params):
    """The probe's loss under ``params``, where the probe's rows are."""
    return _fn.probe_loss(estimator, data, params)


class _Channel:
    """The client and what was last sent to the workers, shared by a fit's data and minibatches.

    The worker view of the estimator is scattered once per engine state and
    view version (a hyperparameter step bumps it); the globals once per
    distinct value.  :func:`traffic` records the bytes; ``seconds`` the
    wall time spent sending and waiting for results.
    """

    def __init__(self, client, seed):
        self.client = client
        self.rng = np.random.RandomState(seed)
        self._view = (None, None)
        self._params = []
        self.seconds = 0.0

    def _scatter(self, obj):
        _count("bytes_out", obj)
        # A one-element list: scatter would split a dict into its values.
        # Not broadcast: the workers fetch it from each other (faster, and a
        # scatter never waits on a dying worker).  A scatter to a worker that
        # just died is a lost worker too: the sums over blocks retry it.
        start = time.perf_counter()
        try:
            return self.client.scatter([obj], hash=False)[0]
        except _lost_results() as exc:
            raise _worker_lost(exc) from exc
        finally:
            self.seconds += time.perf_counter() - start

    def forget(self):
        """Drop what was sent: a lost worker may have held it."""
        self._view = (None, None)
        self._params = []

    def gather(self, future):
        start = time.perf_counter()
        try:
            value = future.result()
        except _lost_results() as exc:
            raise _worker_lost(exc) from exc
        finally:
            self.seconds += time.perf_counter() - start
        _count("bytes_in", value)
        return value

    def view(self, estimator):
        st = getattr(estimator, "_svi", None)
        key = (id(st), getattr(st, "view_version", None))
        if self._view[0] != key or self._view[1] is None:
            self._view = (key, self._scatter(worker_view(estimator)))
        return self._view[1]

    def params(self, params):
        # The engine updates a step's dict of factors in place (one factor
        # after another), and never a factor: the factors are the key.
        # Resident rows stay with their blocks (DaskBlocks._rows).
        factors = [(k, f) for k, f in params.items() if not isinstance(f, ResidentRows)]
        for value, future in self._params:
            if len(value) == len(factors) and all(
                k1 == k2 and f1 is f2 for (k1, f1), (k2, f2) in zip(value, factors)
            ):
                return future
        future = self._scatter(dict(factors))
        # The current globals and one tried step are all a step needs.
        self._params = [(factors, future)] + self._params[:1]
        return future

    def tree_sum(self, futures):
        client = self.client
        futures = list(futures)
        while len(futures) > 1:
            pairs = [
                client.submit(_add, a, b, pure=False) for a, b in zip(futures[0::2], futures[1::2])
            ]
            if len(futures) % 2:
                pairs.append(futures[-1])
            futures = pairs
        return self.gather(futures[0])


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
        each piece: its resident rows are that block's.  None: the blocks
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
        return self.channel.client.map(function, *columns, pure=False)

    def _repeat(self, value):
        return [value] * self.n_blocks

    def count(self, estimator):
        if self._count is None:

            def attempt():
                view = self.channel.view(estimator)
                counts = self._map(block_count, self._repeat(view), self.blocks)
                return float(self.channel.tree_sum(counts))

            self._count = self._retrying(attempt, estimator)
        return self._count

    def initialize(self, estimator, random_state, summary):
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
            block_initialize, view, data, random_state, summary, pure=False
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
        """Each block's resident rows in ``params`` (dicts of futures), or None for none."""
        handles = {k: v for k, v in params.items() if isinstance(v, ResidentRows)}
        if not handles:
            return None
        return [{k: h.states[p] for k, h in handles.items()} for p in self.parents]

    def row_step(self, estimator, name, locals_, params, ctx, schedule):
        """The step of a resident group's rows, each block stepping its own where it is.

        Returns the new :class:`~skvi.engine.rows.ResidentRows` (the
        blocks' new rows, kept until the step is accepted or forgotten)
        and whether every row is valid.
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
        """``function`` of every block's resident rows, as a lazy dask array in row order."""
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
            else:  # the globals joined by each block's resident rows
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
        """Which resident rows in ``params`` (dicts) are gone with a worker, in words, or ''."""
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
        """The given rows gathered into one block on a worker (a probe, a convergence sample)."""
        rows = np.asarray(rows)
        return DaskBlocks(
            self.channel, [self._rows_future(rows)], [rows.size], self.shape[1], parents=[None]
        )

    def probe_loss(self, estimator, params):
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


class DaskExecutor(Executor):
    """The engine's executor for data held in blocks on a dask cluster.

    Every block operation runs where the block is; only the globals go out
    (once per distinct value) and summed statistics come back, added in a
    tree on the workers.  The column blocks of the global step run on the
    client.  Each block's local step draws its random numbers from a
    generator seeded per block and step (``_local_draws``), so a fit on a
    cluster does not draw the same numbers as one in memory: batch fits of
    models without random draws equal the in-memory fit to rounding; the
    others agree within their Monte Carlo noise.

    Parameters
    ----------
    channel : _Channel
        The client and what was last sent to the workers.
    settings : ModelSettings
        The model's settings (which row groups stay with their blocks).

    Examples
    --------
    >>> from skvi.distributed import DaskExecutor
    >>> from skvi.engine.executor import Executor
    >>> issubclass(DaskExecutor, Executor)
    True
    """

    remote = True

    def __init__(self, channel, settings):
        super().__init__()
        self.channel = channel
        self.settings = settings

    @property
    def transfer_seconds(self):
        return self.channel.seconds

    @transfer_seconds.setter
    def transfer_seconds(self, value):
        pass

    def count(self, est, data):
        return data.count(est)

    def summary(self, est, data):
        return self.sum(est, _fn.data_summary, data, None)

    def initialize(self, est, data, random_state, summary):
        return data.initialize(est, random_state, summary)

    def local_steps(self, est, data, params, random_state):
        return data.local_steps(est, params)

    def sum(self, est, function, data, locals_, *args):
        start = time.perf_counter()
        try:
            return data.sum_over(est, function, locals_, *args)
        finally:
            self.parallel_seconds += time.perf_counter() - start

    def minibatches(self, est, data, random_state, batch_size):
        return data.minibatches(est, random_state, batch_size)

    def sample(self, est, data, rows):
        return data.sample(rows)

    def probe_loss(self, est, probe, params):
        return probe.probe_loss(est, params)

    def resident(self, name):
        return name in self.settings.resident_row_groups

    def row_step(self, est, name, data, locals_, params, ctx, schedule):
        return data.row_step(est, name, locals_, params, ctx, schedule)


#: How often an operation on the blocks is redone after a worker was lost.
RETRIES = 5
#: Seconds before the first redo, doubled before each next one (at most 8).
RETRY_PAUSE = 0.5

#: How long a lost worker's resident rows are waited for (recomputed if they can be).
RECOMPUTE_SECONDS = 30


class WorkerLostError(RuntimeError):
    """A worker died mid-fit and its results could not be recomputed: no model was fitted.

    Examples
    --------
    >>> from skvi.distributed import WorkerLostError
    >>> issubclass(WorkerLostError, RuntimeError)
    True
    """


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


def _as_dask_array(da, X, name):
    if hasattr(X, "to_dask_array"):  # a dask dataframe or series
        return X.to_dask_array(lengths=True)
    if isinstance(X, da.Array):
        return X
    raise TypeError(f"{name} must be a dask array or dataframe, got {type(X).__name__}.")


def _aligned_parts(da, values, chunks, name):
    """Delayed blocks of y or sample_weight with X's row chunks (None: no such input)."""
    if values is None:
        return [None] * len(chunks)
    if hasattr(values, "__dask_graph__"):
        values = _as_dask_array(da, values, name)
    else:
        values = da.from_array(
            np.asarray(values), chunks=(chunks,) + tuple((s,) for s in np.shape(values)[1:])
        )
    if values.shape[0] != sum(chunks):
        raise ValueError(f"{name} has {values.shape[0]} rows, X has {sum(chunks)}.")
    values = values.rechunk((chunks,) + tuple((s,) for s in values.shape[1:]))
    return list(values.to_delayed().ravel())


def _apply_method(block, estimator, method, args, kwargs):
    return method(estimator, block, *args, **kwargs)


def blockwise(estimator, method, X, *args, **kwargs):
    """``method(estimator, X_block, ...)`` of every block of X, as a lazy dask array.

    What ``transform``, ``predict``, ``predict_proba``, ``predict_log_proba``
    and ``score_samples`` of every skvi estimator return for a dask
    collection: one task per block of rows, the fitted estimator sent once
    (a single node of the graph), nothing computed until asked.

    Parameters
    ----------
    estimator : SVIEstimator
        A fitted estimator.
    method : callable
        The unbound method, ``method(estimator, X, *args, **kwargs)``,
        returning one value or one row of values per row of X.
    X : dask.array.Array or dask.dataframe.DataFrame
        Rows in blocks.
    *args, **kwargs
        Further arguments of the method.

    Returns
    -------
    dask.array.Array
        One entry (1-D) or row (2-D) per row of X, blocked like X's rows.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from skvi import SVILinearRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 2))
    >>> est = SVILinearRegression().fit(X, X @ [1.0, -2.0] + 0.1 * rng.normal(size=200))
    >>> y = est.predict(da.from_array(X, chunks=(50, 2)))  # a lazy dask array
    >>> bool(np.allclose(y.compute(), est.predict(X)))
    True
    """
    da, _ = _import_dask()
    import dask  # noqa: PLC0415

    X = _as_dask_array(da, X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimension(s).")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    # The output's width from one row of zeros (no data is computed).
    sample = method(estimator, np.zeros((1, X.shape[1]), dtype=X.dtype), *args, **kwargs)
    if isinstance(sample, tuple):
        raise NotImplementedError(
            f"{method.__name__} returning several arrays is not supported on dask "
            "input; compute the blocks you need in memory."
        )
    sample = np.asarray(sample)
    est = dask.delayed(estimator, traverse=False)
    if sample.ndim == 1:
        return X.map_blocks(
            _apply_method,
            est,
            method,
            args,
            kwargs,
            drop_axis=1,
            dtype=sample.dtype,
            meta=np.empty((0,), dtype=sample.dtype),
        )
    return X.map_blocks(
        _apply_method,
        est,
        method,
        args,
        kwargs,
        chunks=(X.chunks[0], sample.shape[1:]),
        dtype=sample.dtype,
        meta=np.empty((0,) * sample.ndim, dtype=sample.dtype),
    )


def _compute_optional(client, parts):
    if parts[0] is None:
        return parts
    return client.compute(parts)


def fit_on_cluster(estimator, X, y=None, sample_weight=None, client=None):
    """Fit ``estimator`` to dask collections on a dask cluster, the data staying on the workers.

    What ``estimator.fit(X, y)`` runs when X is a dask array or dataframe;
    call it directly to name the client.

    Parameters
    ----------
    estimator : SVIEstimator
        An skvi estimator (its ``fit`` parameters are used as they are).
    X : dask.array.Array or dask.dataframe.DataFrame
        The data, in blocks of rows (chunks along the columns are merged).
        Blocks of scipy sparse matrices are accepted where ``fit`` accepts
        sparse input.
    y : dask or numpy array or None, default=None
        Targets, cut like X's rows.
    sample_weight : dask or numpy array or None, default=None
        Row weights, cut like X's rows.
    client : distributed.Client or None, default=None
        None uses the active client.

    Returns
    -------
    estimator : SVIEstimator
        The fitted estimator (in memory on the client: the globals only).

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from distributed import Client
    >>> from skvi import GaussianGammaVB
    >>> X = da.from_array(np.random.RandomState(0).normal(2.0, 1.0, (400, 2)), chunks=(100, 2))
    >>> with Client(processes=False, n_workers=1, dashboard_address=None) as client:
    ...     est = GaussianGammaVB(learning_method="batch").fit(X)
    >>> in_memory = GaussianGammaVB(learning_method="batch").fit(X.compute())
    >>> bool(np.allclose(est.mean_, in_memory.mean_, rtol=1e-12))
    True
    """
    executor, blocks = prepare_on_cluster(estimator, X, y, sample_weight, client)
    return estimator._fit_prepared(blocks, executor)


def prepare_on_cluster(estimator, X, y=None, sample_weight=None, client=None):
    """Validate the blocks of dask collections where they are; the executor of a fit on them.

    Each block is validated as ``fit`` validates its input (after every
    block's vocabulary, a classifier's labels or matrix factorization's
    ids, was merged), and stays on its worker.

    Returns
    -------
    executor : DaskExecutor
    blocks : DaskBlocks
    """
    schedule = make_schedule(
        estimator.learning_rate, estimator.learning_offset, estimator.learning_decay
    )
    if (
        estimator._settings.resident_row_groups
        and estimator.learning_method == "online"
        and schedule.needs_gradient
    ):
        raise NotImplementedError(
            f"{type(estimator).__name__} keeps its "
            f"{', '.join(estimator._settings.resident_row_groups)} factors on the workers of a "
            "cluster, where a schedule that needs the natural gradient (AdaptiveRate) cannot "
            "see them; use a Robbins-Monro schedule on a cluster."
        )
    da, _ = _import_dask()
    client = _client(client)
    X = _as_dask_array(da, X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimension(s).")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    chunks = X.chunks[0]
    x_parts = list(X.to_delayed().ravel())
    y_parts = _aligned_parts(da, y, chunks, "y")
    w_parts = _aligned_parts(da, sample_weight, chunks, "sample_weight")
    x_f = client.compute(x_parts)
    y_f = _compute_optional(client, y_parts)
    w_f = _compute_optional(client, w_parts)
    # The blocks' local steps draw from generators seeded from this one,
    # and the fit's initialisation and minibatches from random_state as in memory.
    channel = _Channel(client, check_random_state(estimator.random_state).randint(0, 2**31 - 1))
    # The model goes with each task, not scattered: a block whose worker dies
    # is rebuilt from its graph, which a scattered value lost with it would break.
    view = worker_view(estimator)
    n = len(x_f)
    # What every block must agree on before it is validated (a classifier's
    # labels, matrix factorization's ids): the union over the blocks.
    merged = channel.tree_sum(client.map(block_vocabulary, [view] * n, x_f, y_f, w_f, pure=False))
    # A dict (empty for a model with nothing to agree on) tells each block it
    # is one of a fit on a cluster.
    vocabulary = {} if merged is None else {k: v.values for k, v in merged.items()}
    prepared = client.map(block_prepare, [view] * n, x_f, y_f, w_f, [vocabulary] * n, pure=False)
    for future in prepared:
        if future.exception() is not None:
            future.result()  # raises the block's validation error here
    data = client.map(operator.getitem, prepared, [0] * n, pure=False)
    attributes = channel.gather(client.submit(operator.getitem, prepared[0], 1, pure=False))
    sizes = client.gather(client.map(_n_rows, data, pure=False))
    del prepared
    estimator.__dict__.update(attributes)
    blocks = DaskBlocks(channel, data, sizes, X.shape[1])
    return DaskExecutor(channel, estimator._settings), blocks


class _DaskBackend:
    """dask collections for the engine: fit on the cluster, blockwise methods."""

    @staticmethod
    def accepts(X):
        # Without importing dask: its collections define __dask_graph__.
        return callable(getattr(type(X), "__dask_graph__", None))

    @staticmethod
    def executor(estimator, X, y, sample_weight):
        return prepare_on_cluster(estimator, X, y, sample_weight)

    @staticmethod
    def blockwise(estimator, method, X, *args, **kwargs):
        return blockwise(estimator, method, X, *args, **kwargs)


register_backend(_DaskBackend())
