"""Fitting on a dask cluster: the public face of the dask backend.

``est.fit(X)`` with a dask array (or dataframe) X and an active
``distributed.Client`` runs the estimator's usual loop with X's blocks kept
on the workers: only the global factors go out and the blocks' summed
statistics come back.  ``transform``, ``predict``, ``predict_proba``,
``predict_log_proba`` and ``score_samples`` of dask input return lazy dask
arrays, one task per block.  Nothing needs importing for that: the engine
finds its dask backend, :mod:`skvi.engine.dask`, the first time it meets a
dask collection.  This module gathers what a user may want by name:

:func:`fit_on_cluster`
    The same fit with a named client.
:func:`blockwise`
    A method of every block of a dask collection, lazily.
:func:`record_traffic`, :class:`Traffic`
    A context manager: the bytes the fits inside its ``with`` block sent
    and gathered (``traffic`` is its former name).
:func:`scatter_array`
    An in-memory array as a dask array whose blocks are on the workers,
    without putting the array into the task graph.
:class:`WorkerLostError`
    A fit that lost a worker and could not recover (no model was fitted).
:data:`RETRIES`, :data:`RETRY_PAUSE`, :data:`RECOMPUTE_SECONDS`
    How a fit that loses a worker retries; setting them here sets the
    backend's.
:class:`DaskExecutor`, :class:`DaskBlocks`, :func:`prepare_on_cluster`
    The executor and the blocks behind such a fit (see :mod:`skvi.engine.dask`).

dask and distributed are an optional extra (``pip install 'skvi[dask]'``);
neither ``import skvi`` nor this module imports them.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> from distributed import Client
>>> from skvi import GaussianGammaVB
>>> from skvi.distributed import fit_on_cluster, record_traffic
>>> X = np.random.RandomState(0).normal(2.0, 1.0, (400, 2))
>>> with Client(processes=False, n_workers=2, dashboard_address=":0") as client:
...     with record_traffic() as sent:
...         est = fit_on_cluster(
...             GaussianGammaVB(learning_method="batch"), da.from_array(X, chunks=(100, 2)),
...             client=client,
...         )
>>> bool(np.allclose(est.mean_, GaussianGammaVB(learning_method="batch").fit(X).mean_))
True
>>> sent.bytes_in > 0  # summed statistics came back, never the rows
True
"""

import sys
import types

from .engine.dask import blocks as _blocks
from .engine.dask.blocks import (
    DaskBlocks,
    block_count,
    block_initialize,
    block_local_step,
    block_prepare,
    block_probe_loss,
    block_vocabulary,
    default_vocabulary,
)
from .engine.dask.executor import DaskExecutor, fit_on_cluster, prepare_on_cluster
from .engine.dask.predict import blockwise
from .engine.dask.transport import (
    Traffic,
    WorkerLostError,
    changed_attributes,
    record_traffic,
    scatter_array,
    traffic,
    worker_view,
)

__all__ = [
    "DaskBlocks",
    "DaskExecutor",
    "Traffic",
    "WorkerLostError",
    "blockwise",
    "fit_on_cluster",
    "record_traffic",
    "scatter_array",
    "traffic",
]

#: The backend's settings of a fit that loses a worker, read and set through this module.
_SETTINGS = ("RETRIES", "RETRY_PAUSE", "RECOMPUTE_SECONDS")
#: Importable from here as before; documented where they live.
_REEXPORTED = (
    block_count,
    block_initialize,
    block_local_step,
    block_prepare,
    block_probe_loss,
    block_vocabulary,
    changed_attributes,
    default_vocabulary,
    prepare_on_cluster,
    worker_view,
)


def _setting(name):
    return property(
        lambda module: getattr(_blocks, name),
        lambda module, value: setattr(_blocks, name, value),
        doc=f"``skvi.engine.dask.blocks.{name}``, read and set through this module.",
    )


class _PublicFace(types.ModuleType):
    """``skvi.distributed.RETRIES = 10`` sets the backend's value, which its fits read."""

    RETRIES = _setting("RETRIES")
    RETRY_PAUSE = _setting("RETRY_PAUSE")
    RECOMPUTE_SECONDS = _setting("RECOMPUTE_SECONDS")


def __dir__():
    return sorted(set(globals()) | set(_SETTINGS))


sys.modules[__name__].__class__ = _PublicFace
