"""The executor of a fit on a dask cluster, and how a fit on dask collections starts.

:func:`prepare_on_cluster` validates each block of a dask array or
dataframe where it is and returns :class:`DaskExecutor` over the blocks
(:class:`~skvi.engine.dask.blocks.DaskBlocks`); the engine's loop then runs
as in memory.  :data:`BACKEND` is what the engine's
:func:`~skvi.engine.executor.backend_for` finds for dask input.
"""

import operator
import time

import numpy as np
from sklearn.utils import check_random_state

from ...schedules import make_schedule
from .. import blocks as _fn
from ..executor import Executor
from ..monitoring import warn_user
from ..state import warm_globals
from .blocks import DaskBlocks, _n_rows, block_prepare, block_vocabulary
from .predict import blockwise
from .transport import _as_dask_array, _Channel, _client, _import_dask, worker_view

__all__ = ["BACKEND", "DaskExecutor", "fit_on_cluster", "prepare_on_cluster"]


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
        """Seconds spent sending to the workers and waiting for their results."""
        return self.channel.seconds

    @transfer_seconds.setter
    def transfer_seconds(self, value):
        pass

    def count(self, est, data):
        """``_sample_count`` of all the rows, summed over the blocks.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).

        Returns
        -------
        float
            The rows' number, or their total weight.
        """
        return data.count(est)

    def summary(self, est, data):
        """``_data_summary`` of all the rows, summed over the blocks on the workers.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).

        Returns
        -------
        object
            The summed summary (None for a model without one).
        """
        return self.sum(est, _fn.data_summary, data, None)

    def initialize(self, est, data, random_state, summary, context=None):
        """The model's initial globals (see :meth:`DaskBlocks.initialize`).

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        random_state : numpy.random.RandomState
            The fit's generator.
        summary : object or None
            ``_data_summary`` of all the rows.
        context : FitContext or None, default=None
            The fit's context, which the start is told.

        Returns
        -------
        dict
            The initial globals by name.
        """
        return data.initialize(est, random_state, summary, context)

    def local_steps(self, est, data, params, random_state):
        """Every block's local step at ``params``, kept on its worker.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        params : dict
            The globals.
        random_state : numpy.random.RandomState
            Unused: each block draws from a generator of its own.

        Returns
        -------
        object
            The local steps' handles, for :meth:`sum` and :meth:`row_step`.
        """
        return data.local_steps(est, params)

    def sum(self, est, function, data, locals_, *args):
        """``function(est, block, local, *args)`` of every block, summed on the workers.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        function : callable
            A block function of :mod:`skvi.engine.blocks`.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        locals_ : object or None
            The blocks' local steps (:meth:`local_steps`), or None.
        *args
            The function's further arguments.

        Returns
        -------
        object
            The sum, gathered to the client.
        """
        start = time.perf_counter()
        try:
            return data.sum_over(est, function, locals_, *args)
        finally:
            self.parallel_seconds += time.perf_counter() - start

    def minibatches(self, est, data, random_state, batch_size):
        """The minibatches of one online pass (see :meth:`DaskBlocks.minibatches`).

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        random_state : numpy.random.RandomState
            The fit's generator.
        batch_size : int
            The rows of a step, about.

        Returns
        -------
        iterator of (DaskBlocks, float)
            Each minibatch and its ``N / |S|``.
        """
        return data.minibatches(est, random_state, batch_size)

    def sample(self, est, data, rows):
        """The given rows gathered into one block on a worker.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        rows : array-like of int
            Row numbers, increasing.

        Returns
        -------
        DaskBlocks
            One block holding those rows.
        """
        return data.sample(rows)

    def probe_loss(self, est, probe, params):
        """The model's probe loss of the sample ``probe`` under ``params``, where it is.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        probe : DaskBlocks
            The probe's rows (:meth:`sample`).
        params : dict
            The globals.

        Returns
        -------
        float or None
            The loss (None: the model has no probe loss).
        """
        return probe.probe_loss(est, params)

    def resident(self, name):
        """Whether row group ``name`` stays with the blocks on the workers.

        Parameters
        ----------
        name : str
            A row group of the model.

        Returns
        -------
        bool
            True for the settings' resident row groups (``RowGroupSpec(resident=True)``).
        """
        return name in self.settings.resident_row_groups

    def row_step(self, est, name, data, locals_, params, ctx, schedule):
        """The step of a resident group's members, each block stepping its own where it is.

        Parameters
        ----------
        est : SVIEstimator
            The estimator being fitted.
        name : str
            The resident row group.
        data : DaskBlocks
            The fit's blocks (or a minibatch's).
        locals_ : object
            The blocks' local steps at ``params``.
        params : dict
            The globals.
        ctx : StepContext
            The step's context.
        schedule : object
            The step-size schedule.

        Returns
        -------
        rows : ResidentRows
            The blocks' new rows.
        valid : bool
            Whether every new row is valid.
        """
        return data.row_step(est, name, locals_, params, ctx, schedule)


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
    >>> with Client(processes=False, n_workers=1, dashboard_address=":0") as client:
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
    ids, was merged), and stays on its worker.  The estimator receives the
    attributes validation sets (``n_features_in_``, a classifier's
    ``classes_``, ...); :meth:`SVIEstimator.fit` then runs the loop on the
    blocks through the executor.

    Parameters
    ----------
    estimator : SVIEstimator
        An skvi estimator.
    X : dask.array.Array or dask.dataframe.DataFrame
        The data, in blocks of rows.
    y : dask or numpy array or None, default=None
        Targets, cut like X's rows.
    sample_weight : dask or numpy array or None, default=None
        Row weights, cut like X's rows.
    client : distributed.Client or None, default=None
        None uses the active client.

    Returns
    -------
    executor : DaskExecutor
        The executor of the fit.
    blocks : DaskBlocks
        The validated blocks, on the workers.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from distributed import Client
    >>> from skvi import GaussianGammaVB
    >>> from skvi.distributed import prepare_on_cluster
    >>> X = da.from_array(np.ones((300, 2)), chunks=(100, 2))
    >>> with Client(processes=False, n_workers=1, dashboard_address=":0") as client:
    ...     executor, blocks = prepare_on_cluster(GaussianGammaVB(), X, client=client)
    ...     print(blocks.n_blocks, blocks.shape)
    3 (300, 2)
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
        executor, blocks = prepare_on_cluster(estimator, X, y, sample_weight)
        size = estimator._settings.start_sample_size
        if (
            sample_weight is not None
            and size is not None
            and blocks.shape[0] > size
            and warm_globals(estimator) is None
        ):
            # The start's sample (DaskBlocks.initialize) is a uniform draw of
            # rows; a warm start continues the previous fit instead.
            advice = (
                " A warm_start from a fit on a weighted sample avoids it."
                if "warm_start" in estimator.get_params(deep=False)
                else ""
            )
            warn_user(
                f"{type(estimator).__name__}: on a cluster the start's {size} rows are drawn "
                "uniformly over the rows (each with its weight), not in proportion to the "
                "weights; with a few rows holding much of the weight the start may miss "
                f"them.{advice}",
                UserWarning,
            )
        return executor, blocks

    @staticmethod
    def blockwise(estimator, method, X, *args, **kwargs):
        return blockwise(estimator, method, X, *args, **kwargs)


#: The engine's backend for dask collections.
BACKEND = _DaskBackend()
