"""The executor: how the engine runs its operations over the blocks of the data.

A minibatch is always a set of blocks.  Every operation the loop needs on
"all of X" (the local step, the statistics of each factor, the data part of
the ELBO, the hyperparameters' statistics, the row count, a probe sample and
the minibatches of a pass) is a function of one block with the globals held
fixed, and the results add (Hoffman et al., "Stochastic variational
inference", on parallelisation).  An executor maps those block functions and
adds their results; the loop never asks where the blocks are.

* :class:`SerialExecutor`: the data in memory, one block, on the calling
  thread.
* :class:`ThreadExecutor`: the data in memory, each minibatch cut into
  blocks that run on ``n_jobs`` threads (for a model whose settings say
  ``parallel``); the global step's column blocks run on them too
  (:meth:`Executor.map`).
* ``skvi.engine.dask.DaskExecutor``: the data in blocks on a dask cluster,
  kept there (found by :func:`backend_for` the first time a dask collection
  is met, which is when :mod:`skvi.engine.dask` is imported; dask itself
  only when it is used).

Another executor (processes, Ray) implements the same methods and is
returned by a backend registered with :func:`register_backend`; the loop
does not change.  A copy of the estimator sent to remote workers carries
nothing of the engine but a :class:`WorkerState`.
"""

import copy
import importlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

from . import blocks as _fn
from .statistics import sum_statistics

__all__ = [
    "Executor",
    "SerialExecutor",
    "ThreadExecutor",
    "WorkerState",
    "backend_for",
    "even_batches",
    "local_executor",
    "register_backend",
]

#: Fewest rows of a dense minibatch block worth a thread of its own.
MIN_BLOCK_ROWS = 2048
#: Fewest stored values of a sparse minibatch block worth a thread of its own:
#: waking a thread and adding its statistics cost a fixed time a step, which
#: a smaller block does not repay (docs/benchmarks.md, "The engine's
#: constants"); 6,000 still lets a minibatch of 2048 documents feed 16 threads.
MIN_BLOCK_NNZ = 6000
#: Blocks per thread a minibatch is cut into (when they are worth a thread;
#: the threads take them as they finish).  More balance uneven blocks, but
#: each adds a merge of statistics (docs/benchmarks.md, "The engine's
#: constants").
BLOCKS_PER_WORKER = 1
#: Rows of a sparse X gathered at once by the default online batching.
SPARSE_GATHER_ROWS = 8192

_BACKENDS = []
_BACKENDS_LOCK = threading.Lock()
#: Whether this thread runs a task of a thread executor's map.
_inside = threading.local()


def register_backend(backend):
    """Make ``fit`` and the blockwise methods accept the collections of ``backend``.

    A backend knows one kind of data held elsewhere (dask's,
    :mod:`skvi.engine.dask`, is known to :func:`backend_for` without being
    registered). It has ``accepts(X) -> bool``, ``executor(estimator, X,
    y, sample_weight)`` (an :class:`Executor` and the fit's data as that
    executor holds it) and ``blockwise(estimator, method, X, *args,
    **kwargs)`` (``method`` of each block, lazily).

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
    >>> from skvi.engine.executor import backend_for
    >>> backend_for(np.zeros(3)) is None  # in memory: no backend
    True
    """
    with _BACKENDS_LOCK:
        _BACKENDS.append(backend)
    return backend


def _is_dask_collection(X):
    # Without importing dask: its collections' types define __dask_graph__.
    return callable(getattr(type(X), "__dask_graph__", None))


#: Backends the engine knows by their module, imported the first time their
#: data is met, so that ``import skvi`` imports neither them nor what they
#: need: (whether X is of theirs, their module, which exposes ``BACKEND``).
_KNOWN_BACKENDS = [(_is_dask_collection, "skvi.engine.dask")]


def backend_for(X):
    """The registered backend whose collections X is one of, or None (X is in memory).

    A backend the engine knows by its module (dask's) is imported and
    registered the first time its data is met.

    Parameters
    ----------
    X : object
        Anything a ``fit`` or ``predict`` may receive.

    Returns
    -------
    backend or None

    Examples
    --------
    >>> from skvi.engine.executor import backend_for
    >>> backend_for([[1.0, 2.0]]) is None
    True
    """
    for backend in list(_BACKENDS):
        if backend.accepts(X):
            return backend
    for known in list(_KNOWN_BACKENDS):
        accepts, module = known
        if accepts(X):
            backend = importlib.import_module(module).BACKEND
            with _BACKENDS_LOCK:
                if known in _KNOWN_BACKENDS:  # another thread may have registered it
                    _KNOWN_BACKENDS.remove(known)
                    _BACKENDS.append(backend)
            return backend
    return None


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


def _indptr(data):
    """The row pointer of a sparse X (or of the sparse design of rows), else None."""
    for X in (data, getattr(data, "design", None)):
        if X is not None and sp.issparse(X) and X.format == "csr":
            return X.indptr
    return None


def cut(data, n_blocks, by="work"):
    """Contiguous slices of ``data``'s rows for at most ``n_blocks`` blocks worth a thread.

    A sparse X (or rows whose design is sparse) is balanced by stored
    values, at least ``MIN_BLOCK_NNZ`` each; other data, or any with
    ``by='rows'``, by rows, at least ``MIN_BLOCK_ROWS`` each.  One slice
    (the whole) when fewer than two blocks are worth it.

    Examples
    --------
    >>> import numpy as np
    >>> [(s.start, s.stop) for s in cut(np.zeros((5000, 2)), 4)]
    [(0, 2500), (2500, 5000)]
    """
    n = int(data.shape[0])
    indptr = _indptr(data) if n_blocks > 1 and by == "work" else None
    if indptr is not None:
        n_blocks = min(n_blocks, int(indptr[-1]) // MIN_BLOCK_NNZ, n // 2)
        if n_blocks < 2:
            return [slice(0, n)]
        targets = np.linspace(0, indptr[-1], n_blocks + 1)[1:-1]
        cuts = np.clip(np.searchsorted(indptr, targets), 0, n)
        bounds = np.unique(np.concatenate([[0], cuts, [n]]))
        return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    n_blocks = min(n_blocks, n // MIN_BLOCK_ROWS)
    if n_blocks < 2:
        return [slice(0, n)]
    return even_batches(n, -(-n // n_blocks))


def _rows_of(draws, rows):
    """The draws of some rows (a slice): arrays sliced on their leading axis, in any nesting."""
    if draws is None:
        return None
    if isinstance(draws, tuple):
        return tuple(_rows_of(d, rows) for d in draws)
    if isinstance(draws, dict):
        return {k: _rows_of(v, rows) for k, v in draws.items()}
    if isinstance(draws, np.ndarray) and draws.ndim:
        return draws[rows]
    return draws


class WorkerState:
    """The engine's part of a copy of an estimator sent to remote workers.

    An executor whose blocks are held elsewhere sends the model to them
    without the fit's state (``_svi``: the executor, the schedule, the step
    safety's probe, the row groups' counters) and without the globals, which
    travel on their own.  The one thing of that state a model's hooks read
    on a block is each row group's ``N_i`` (``_row_totals``): the copy made
    by :meth:`copy_of` carries it in this object, under :attr:`ATTRIBUTE`,
    and nothing else is written onto it.

    Parameters
    ----------
    row_totals : dict of str to ndarray or None, default=None
        ``N_i`` of each row group of the fit (none before the fit counted
        its rows).

    Attributes
    ----------
    row_totals : dict of str to ndarray
        ``N_i`` of each row group, by name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.engine.executor import WorkerState
    >>> est = SVIMatrixFactorization()
    >>> view = WorkerState({"users": np.array([2.0, 1.0])}).copy_of(est)
    >>> view._row_totals("users")
    array([2., 1.])
    >>> WorkerState.of(est) is None  # the estimator itself is left as it was
    True
    """

    __slots__ = ("row_totals",)

    #: The attribute of the copy that holds its worker state.
    ATTRIBUTE = "_worker_state"
    #: The engine's attributes of an estimator, none of which a copy inherits.
    ENGINE_ATTRIBUTES = frozenset(("_svi", "natural_params_", ATTRIBUTE))

    def __init__(self, row_totals=None):
        self.row_totals = {} if row_totals is None else dict(row_totals)

    def copy_of(self, estimator, drop=()):
        """A shallow copy of ``estimator`` without the engine's attributes, holding this state.

        Parameters
        ----------
        estimator : SVIEstimator
            The estimator (left unchanged).
        drop : iterable of str, default=()
            The model's own attributes that do not travel either (its
            settings' ``transient``).

        Returns
        -------
        SVIEstimator
            The copy to send.
        """
        drop = self.ENGINE_ATTRIBUTES | frozenset(drop)
        view = copy.copy(estimator)
        state = {k: v for k, v in estimator.__dict__.items() if k not in drop}
        state[self.ATTRIBUTE] = self
        view.__dict__ = state
        return view

    @classmethod
    def of(cls, estimator):
        """The worker state a copy holds, or None for an estimator that is no such copy.

        Parameters
        ----------
        estimator : SVIEstimator
            An estimator or a copy made by :meth:`copy_of`.

        Returns
        -------
        WorkerState or None
        """
        return estimator.__dict__.get(cls.ATTRIBUTE)


class Locals:
    """The local steps of a minibatch's blocks, where they were computed.

    Attributes
    ----------
    blocks : list
        The blocks (for an in-memory executor, the minibatch's row slices).
    values : list
        Each block's local step.
    params : dict
        The globals the local steps were computed at.
    """

    __slots__ = ("blocks", "values", "params")

    def __init__(self, blocks, values, params):
        self.blocks = blocks
        self.values = values
        self.params = params


class Executor:
    """The interface the engine's loop runs its block operations through.

    Every method takes the estimator; ``data`` is the fit's data as the
    executor holds it (validated rows in memory, handles of blocks on a
    cluster).  :attr:`parallel_seconds` and :attr:`transfer_seconds` count
    the wall time inside the parallel maps and spent moving data, for
    ``history_``.

    Examples
    --------
    >>> from skvi.engine.executor import Executor, SerialExecutor
    >>> issubclass(SerialExecutor, Executor)
    True
    """

    #: Workers the maps use at once.
    n_workers = 1
    #: Whether the blocks are held elsewhere (each sum is a round trip).
    remote = False

    def __init__(self):
        self.parallel_seconds = 0.0
        self.transfer_seconds = 0.0

    # ------------------------------------------------------------- in process
    def map(self, function, items):
        """``[function(item) for item in items]``, in parallel where the executor can."""
        start = time.perf_counter()
        try:
            return [function(item) for item in items]
        finally:
            self.parallel_seconds += time.perf_counter() - start

    def column_blocks(self, n_columns, min_columns=4096):
        """Slices of ``n_columns`` for the global step's column blocks (one per worker)."""
        n = min(self.n_workers, max(1, n_columns // min_columns))
        return even_batches(n_columns, -(-n_columns // n)) if n_columns else []

    def close(self):
        """Release the workers (threads) the executor holds."""

    # ------------------------------------------------------------ the data
    def count(self, est, data):
        """``_sample_count`` of the rows: their number, or their total weight."""
        return float(est._sample_count(data))

    def summary(self, est, data):
        """``_data_summary`` of all the rows (summed over blocks)."""
        return est._data_summary(data, None)

    def initialize(self, est, data, random_state, summary, context=None):
        """The model's initial globals (``_initialize_globals``) from the fit's rows.

        ``context`` is the fit's :class:`~skvi.engine.FitContext`, which a
        hook that takes ``ctx`` receives.
        """
        return _fn.initialize(est, data, random_state, summary, context)

    def row_counts(self, est, data, sizes):
        """Each row group's ``N_i`` from all the rows, summed over blocks (see
        :func:`~skvi.engine.blocks.row_counts`)."""
        return self.sum(est, _fn.block_row_counts, data, None, sizes)

    def blocks(self, est, data):
        """The blocks of a minibatch and the slices of its rows they hold."""
        return [data], [slice(0, data.shape[0])]

    def local_steps(self, est, data, params, random_state):
        """Every block's local step at ``params``, its draws made first from ``random_state``."""
        draws = est._local_draws(data, random_state)
        blocks, slices = self.blocks(est, data)
        if len(blocks) == 1:
            pieces = [(data, draws)]
        else:
            pieces = [(b, _rows_of(draws, s)) for b, s in zip(blocks, slices)]
        values = self.map(lambda piece: _fn.local_step(est, piece[0], params, piece[1]), pieces)
        return Locals(blocks, values, params)

    def sum(self, est, function, data, locals_, *args):
        """``function(est, block, local, *args)`` of every block, summed."""
        if locals_ is None:
            pairs = [(b, None) for b in self.blocks(est, data)[0]]
        else:
            pairs = list(zip(locals_.blocks, locals_.values))
        parts = self.map(lambda pair: function(est, pair[0], pair[1], *args), pairs)
        return sum_statistics(parts)

    def minibatches(self, est, data, random_state, batch_size):
        """Yield ``(minibatch, N / |S|)`` for one online pass: shuffled near-equal minibatches.

        Equal sizes matter: a short last minibatch, e.g. 561 of a9a's 32,561
        rows after sixteen of 2000, would be weighted ``N / |S|`` = 58 and
        take the noisiest step of the pass.  A sparse X is gathered a block
        of minibatches at a time (scipy's fancy row indexing costs a fixed
        ~0.5 ms a call).
        """
        n_samples = data.shape[0]
        total = est._sample_count(data)
        order = random_state.permutation(n_samples)
        batches = even_batches(n_samples, batch_size)
        per_block = max(1, SPARSE_GATHER_ROWS // max(batch_size, 1)) if sp.issparse(data) else 1
        for first in range(0, len(batches), per_block):
            group = batches[first : first + per_block]
            offset = group[0].start
            rows = data[order[offset : group[-1].stop]]
            for batch in group:
                Xb = rows[batch.start - offset : batch.stop - offset]
                count = est._sample_count(Xb)
                yield Xb, (total / count if count else 0.0)

    def sample(self, est, data, rows):
        """The given rows of the data (a probe sample), gathered where the loop can use them."""
        return data[rows]

    def probe_loss(self, est, probe, params):
        """The model's probe loss of the sample ``probe`` under ``params`` (None: no probe)."""
        loss = est._probe_loss(probe, params)
        return None if loss is None else float(loss)

    def resident(self, name):
        """Whether row group ``name`` stays with the blocks (never in memory)."""
        return False

    def row_step(self, est, name, data, locals_, params, ctx, schedule):
        """The step of a resident row group, where its members are (only on a cluster)."""
        raise NotImplementedError


class SerialExecutor(Executor):
    """The data in memory; every block function on the calling thread.

    Examples
    --------
    >>> from skvi.engine.executor import SerialExecutor
    >>> SerialExecutor().map(lambda x: x * x, [2, 3])
    [4, 9]
    """


class ThreadExecutor(SerialExecutor):
    """The data in memory; a minibatch's blocks and the global step's columns on threads.

    A minibatch is cut (:func:`cut`) into at most ``n_threads`` blocks when
    the model's settings allow (``parallel``); the calling thread takes the
    first block itself.

    Parameters
    ----------
    n_threads : int
        Threads, at least 2.
    parallel : bool, default=True
        Whether minibatches may be cut into blocks.

    Examples
    --------
    >>> from skvi.engine.executor import ThreadExecutor
    >>> ex = ThreadExecutor(2)
    >>> ex.map(lambda x: x * x, [1, 2, 3])
    [1, 4, 9]
    >>> ex.close()
    """

    def __init__(self, n_threads, parallel=True):
        super().__init__()
        self.n_workers = int(n_threads)
        self.parallel = parallel
        self._pool = ThreadPoolExecutor(self.n_workers - 1)
        self._cut_of = (None, None)
        self._closed = False

    def map(self, function, items):
        items = list(items)
        # After its fit, or from inside one of its own tasks (a block
        # function that maps again), the map runs on the calling thread:
        # a task waiting for the pool's only other thread would deadlock.
        if len(items) < 2 or self._closed or getattr(_inside, "map", False):
            return super().map(function, items)
        start = time.perf_counter()

        def task(item):
            _inside.map = True
            try:
                return function(item)
            finally:
                _inside.map = False

        # Every thread (the calling one too) takes the next item until none
        # is left: blocks of uneven cost (documents whose E-steps take more
        # iterations) balance over the threads.
        results = [None] * len(items)
        taken = iter(range(len(items)))
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    i = next(taken, None)
                if i is None:
                    return
                results[i] = task(items[i])

        try:
            futures = [
                self._pool.submit(worker) for _ in range(min(self.n_workers, len(items)) - 1)
            ]
            worker()
            for f in futures:
                f.result()
            return results
        finally:
            self.parallel_seconds += time.perf_counter() - start

    def blocks(self, est, data):
        if not self.parallel:
            return super().blocks(est, data)
        if self._cut_of[0] is not data:  # the same minibatch is cut once
            slices = cut(data, BLOCKS_PER_WORKER * self.n_workers)
            blocks = [data] if len(slices) == 1 else [data[s] for s in slices]
            self._cut_of = (data, (blocks, slices))
        return self._cut_of[1]

    def close(self):
        self._pool.shutdown()
        self._cut_of = (None, None)
        self._closed = True


def local_executor(n_jobs, parallel=True):
    """The in-memory executor for ``n_jobs`` (None: one thread, joblib's convention).

    Examples
    --------
    >>> type(local_executor(None)).__name__
    'SerialExecutor'
    """
    threads = max(1, effective_n_jobs(n_jobs)) if n_jobs is not None else 1
    if threads < 2:
        return SerialExecutor()
    return ThreadExecutor(threads, parallel)
