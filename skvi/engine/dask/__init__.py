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

The backend's modules, by concern:

:mod:`skvi.engine.dask.transport`
    What travels between the client and the workers: the channel, the
    worker copy of the estimator, the traffic record, a lost worker's error.
:mod:`skvi.engine.dask.blocks`
    The data side: :class:`DaskBlocks`, the fit's blocks on the workers,
    and the functions run on a block.
:mod:`skvi.engine.dask.executor`
    The executor side: :class:`DaskExecutor`, :func:`prepare_on_cluster`,
    :func:`fit_on_cluster` and the backend the engine finds for dask input.
:mod:`skvi.engine.dask.predict`
    The prediction side: :func:`blockwise` methods of dask input.

The engine imports this package the first time it meets a dask collection
(:func:`skvi.engine.executor.backend_for`); nothing registers it on import.
dask and distributed are an optional extra (``pip install skvi[dask]``),
imported only by the functions that use them; neither ``import skvi`` nor
this package imports them.  :mod:`skvi.distributed` is the public face.
``n_jobs`` keeps its own threads on one machine (see the "Scaling out"
page of the docs).
"""

from .blocks import RECOMPUTE_SECONDS, RETRIES, RETRY_PAUSE, DaskBlocks
from .executor import BACKEND, DaskExecutor, fit_on_cluster, prepare_on_cluster
from .predict import blockwise
from .transport import Traffic, WorkerLostError, traffic, worker_view

__all__ = [
    "BACKEND",
    "DaskBlocks",
    "DaskExecutor",
    "RECOMPUTE_SECONDS",
    "RETRIES",
    "RETRY_PAUSE",
    "Traffic",
    "WorkerLostError",
    "blockwise",
    "fit_on_cluster",
    "prepare_on_cluster",
    "traffic",
    "worker_view",
]
