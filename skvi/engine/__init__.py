"""The shared stochastic natural-gradient engine.

:mod:`skvi.engine.base`
    :class:`SVIEstimator`: ``fit``, ``partial_fit``, the passes and steps
    every estimator runs, and the hooks a model implements.
:mod:`skvi.engine.state`
    :class:`~skvi.engine.state.FitState`: what the engine keeps during and
    between the steps of a fit, and :class:`FitContext`, what the hooks
    are told of it.
:mod:`skvi.engine.settings`
    :class:`ModelSettings`: what a model declares (its factors, row groups,
    how batch steps are judged, ...).
:mod:`skvi.engine.executor`
    Executors: the loop's block operations mapped over the data, serially,
    on threads, or (:mod:`skvi.engine.dask`) on a dask cluster.
:mod:`skvi.engine.dask`
    The dask backend: the blocks on the workers, the executor over them and
    the blockwise predictions (imported the first time dask input is met).
:mod:`skvi.engine.step`
    One step of the globals: update orders, factor updates, commit.
:mod:`skvi.engine.safety`, :mod:`skvi.engine.rows`, :mod:`skvi.engine.stream`, :mod:`skvi.engine.convergence`
    The loop's collaborators: step safety, per-row factor groups, the ``N``
    of a stream, and when a fit stops.
:mod:`skvi.engine.data`
    :class:`Rows`: the data as the engine sees it (X, y, row weights).
:mod:`skvi.engine.factor`, :mod:`skvi.engine.statistics`
    A global factor's value with its moments, and summed statistics: the
    map-reduce split's currency.
:mod:`skvi.engine.check`
    :func:`check_model`: a model's hooks checked against the engine's
    contract, naming the hook that breaks it.
:mod:`skvi.engine.monitoring`
    :func:`monitor`, the ``verbose`` display and log, ``history_`` and
    ``step_trace_``.
"""

from ..expfam.base import _renamed
from .base import OPTIONAL_HOOKS, REQUIRED_HOOKS, SVIEstimator, blockwise_elsewhere
from .check import ContractError, check_model
from .data import Rows, check_row_weights
from .executor import even_batches
from .factor import Factor
from .monitoring import FitRecord, monitor
from .parameters import ENGINE_PARAMETER_CONSTRAINTS
from .rows import RowGroupSpec
from .safety import PROBE_SIZE
from .settings import ModelSettings
from .state import FitContext
from .statistics import Distinct, DataMoments, RowStatistics, Samples, Statistics, add_statistics
from .step import MAX_BACKOFF, StepContext

__all__ = [
    "ContractError",
    "Distinct",
    "ENGINE_PARAMETER_CONSTRAINTS",
    "Factor",
    "FitContext",
    "FitRecord",
    "MAX_BACKOFF",
    "ModelSettings",
    "DataMoments",
    "OPTIONAL_HOOKS",
    "PROBE_SIZE",
    "REQUIRED_HOOKS",
    "RowGroupSpec",
    "RowStatistics",
    "Rows",
    "SVIEstimator",
    "Samples",
    "Statistics",
    "StepContext",
    "add_statistics",
    "blockwise_elsewhere",
    "check_model",
    "check_row_weights",
    "even_batches",
    "monitor",
]


_RENAMED = {"Moments": "DataMoments"}


def __getattr__(name):
    # DataMoments was called Moments, a word the networks (BayesPy's kinds of
    # moments) and the family layer also use; the old name works for one
    # release, with a FutureWarning.
    return _renamed(__name__, _RENAMED, name)
