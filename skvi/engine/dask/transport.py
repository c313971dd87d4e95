"""What travels between the client and the workers of a fit on a dask cluster.

The channel (``_Channel``) sends the model's worker copy and the
globals to the workers and gathers results, counting the bytes
(:func:`record_traffic`) and the seconds; a worker lost on the way is a
:class:`WorkerLostError`.  The worker copy of an estimator
(:func:`worker_view`) holds nothing of the engine but its
:class:`~skvi.engine.executor.WorkerState`.  dask is imported only by the
functions that use it.
"""

import pickle
import time
from concurrent.futures import CancelledError

import numpy as np

from ..executor import WorkerState
from ..rows import ResidentRows
from ..statistics import add_statistics

__all__ = [
    "Traffic",
    "WorkerLostError",
    "changed_attributes",
    "record_traffic",
    "scatter_array",
    "traffic",
    "worker_view",
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


class record_traffic:  # noqa: N801 (a context manager, named for what its block does)
    """A context manager: record the traffic of the fits on a cluster run inside its block.

    ``with record_traffic() as sent:`` gives a :class:`Traffic` that the fits
    inside the ``with`` block add their bytes to; it stops counting when
    the block ends.  ``traffic`` is its former name.

    Examples
    --------
    >>> from skvi.distributed import record_traffic
    >>> with record_traffic() as sent:
    ...     pass
    >>> sent.bytes_in
    0
    """

    def __enter__(self):
        self.record = Traffic()
        _RECORDERS.append(self.record)
        return self.record

    def __exit__(self, *exc):
        _RECORDERS.remove(self.record)
        return False


#: The former name of :class:`record_traffic`.
traffic = record_traffic


def scatter_array(X, rows_per_block, client=None):
    """A dask array of X's rows whose blocks are scattered to the workers.

    ``da.from_array(X)`` of an array in the client's memory puts the whole
    array into the task graph, and distributed warns of a large graph once
    it passes a few megabytes; the blocks made here travel once, as data,
    and the graph only names them.  Data that already lives where the
    workers can read it (files, a database) is better loaded there.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, n_features)
        The rows, in the client's memory.
    rows_per_block : int
        Rows of each block (the last takes the rest).
    client : distributed.Client or None, default=None
        The client; None uses the active one.

    Returns
    -------
    dask.array.Array
        X, in blocks of rows held by the workers (a sparse X in blocks of
        CSR matrices).

    Examples
    --------
    >>> import numpy as np
    >>> from distributed import Client
    >>> from skvi.distributed import scatter_array
    >>> X = np.arange(12.0).reshape(6, 2)
    >>> with Client(processes=False, n_workers=1, dashboard_address=":0") as client:
    ...     Xd = scatter_array(X, 4, client=client)
    ...     print(Xd.chunks, bool((Xd.compute() == X).all()))
    ((4, 2), (2,)) True
    """
    import scipy.sparse as sp  # noqa: PLC0415

    da, _ = _import_dask()
    client = _client(client)
    if not (isinstance(rows_per_block, (int, np.integer)) and rows_per_block >= 1):
        raise ValueError(f"rows_per_block must be a positive integer, got {rows_per_block!r}")
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        meta = sp.csr_matrix((0, X.shape[1]), dtype=X.dtype)
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
        meta = np.empty((0, X.shape[1]), dtype=X.dtype)
    starts = range(0, X.shape[0], rows_per_block)
    blocks = [X[s : s + rows_per_block] for s in starts]
    futures = client.scatter(blocks)
    parts = [
        da.from_delayed(f, shape=b.shape, dtype=X.dtype, meta=meta) for f, b in zip(futures, blocks)
    ]
    return da.concatenate(parts, axis=0) if parts else da.from_array(X)


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


class WorkerLostError(RuntimeError):
    """A worker died mid-fit and its results could not be recomputed: no model was fitted.

    Examples
    --------
    >>> from skvi.distributed import WorkerLostError
    >>> issubclass(WorkerLostError, RuntimeError)
    True
    """


def _add(a, b):
    return add_statistics(a, b)


# ------------------------------------------------- what travels to a worker
def _transient(estimator):
    st = getattr(estimator, "_svi", None)
    settings = st.settings if st is not None and st.settings is not None else estimator._settings
    return WorkerState.ENGINE_ATTRIBUTES | frozenset(settings.transient)


def worker_view(estimator):
    """A shallow copy of ``estimator`` to ship to workers: no engine state, no globals.

    The model's settings list in ``transient`` what never travels: what it
    keeps only for the duration of an in-memory fit (buffers, the data).
    Of the engine the copy holds only its
    :class:`~skvi.engine.executor.WorkerState`: the row groups' ``N_i``
    (``_row_totals``), which are the size of the globals.

    Parameters
    ----------
    estimator : SVIEstimator
        The estimator (left unchanged).

    Returns
    -------
    SVIEstimator
        The copy.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.dask.transport import worker_view
    >>> est = GaussianGammaVB().fit(np.random.RandomState(0).normal(size=(20, 2)))
    >>> view = worker_view(est)
    >>> sorted(set(est.__dict__) ^ set(view.__dict__))  # what it lacks, and holds beyond
    ['_svi', '_worker_state', 'natural_params_']
    """
    st = getattr(estimator, "_svi", None)
    totals = {}
    if st is not None and st.rows:
        totals = {name: group.totals for name, group in st.rows.items()}
    return WorkerState(totals).copy_of(estimator, drop=_transient(estimator))


def changed_attributes(before, estimator, data=None):
    """The attributes ``estimator`` gained or replaced since ``before`` (a dict copy).

    What a block function set on its copy of the model, for the client to
    set on the estimator; never the engine's attributes, the model's
    transient ones, or the block's data.

    Parameters
    ----------
    before : dict
        A copy of the model's ``__dict__`` before.
    estimator : SVIEstimator
        The model after.
    data : object, default=None
        The block's data, which is never an attribute to send back.

    Returns
    -------
    dict
        The new or replaced attributes, by name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVILogisticRegression
    >>> from skvi.engine.dask.transport import changed_attributes
    >>> est = SVILogisticRegression()
    >>> before = dict(est.__dict__)
    >>> est.classes_ = np.array([0, 1])
    >>> list(changed_attributes(before, est))
    ['classes_']
    """
    drop = _transient(estimator)
    return {
        k: v
        for k, v in estimator.__dict__.items()
        if k not in drop and (k not in before or before[k] is not v) and v is not data
    }


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

    def check_open(self):
        """Refuse to go on once the client is closed (distributed then fails inside itself)."""
        status = getattr(self.client, "status", "running")
        if status in ("closing", "closed"):
            raise RuntimeError(
                f"The dask client was {status} during the fit, which cannot go on without "
                "it: the estimator was not fitted. Keep the client open until fit returns."
            )

    def _scatter(self, obj):
        self.check_open()
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
        # Resident groups' members stay with their blocks (DaskBlocks._rows).
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
        self.check_open()
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


def _as_dask_array(da, X, name):
    if hasattr(X, "to_dask_array"):  # a dask dataframe or series
        return X.to_dask_array(lengths=True)
    if isinstance(X, da.Array):
        return X
    raise TypeError(f"{name} must be a dask array or dataframe, got {type(X).__name__}.")
