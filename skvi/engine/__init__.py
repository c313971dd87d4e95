"""The shared stochastic natural-gradient engine.

:mod:`skvi.engine.base`
    :class:`SVIEstimator`, the loop every estimator runs, and the hooks a
    model implements.
:mod:`skvi.engine.factor`
    :class:`Factor`, a global factor's current value with its moments.
:mod:`skvi.engine.statistics`
    Summed sufficient statistics: the map-reduce split's currency.
:mod:`skvi.engine.monitoring`
    :func:`monitor`, a callback after every step and pass of any fit (which
    may stop it), and the ``verbose`` display and log; every fitted
    estimator's ``history_`` and ``step_trace_``.
"""

from .base import (
    ENGINE_PARAMETER_CONSTRAINTS,
    MAX_BACKOFF,
    OPTIONAL_HOOKS,
    PROBE_SIZE,
    REQUIRED_HOOKS,
    StepContext,
    SVIEstimator,
    even_batches,
)
from .factor import Factor
from .monitoring import FitRecord, monitor
from .statistics import Distinct, Moments, RowStatistics, Samples, Statistics, add_statistics

__all__ = [
    "Distinct",
    "ENGINE_PARAMETER_CONSTRAINTS",
    "Factor",
    "FitRecord",
    "MAX_BACKOFF",
    "OPTIONAL_HOOKS",
    "PROBE_SIZE",
    "REQUIRED_HOOKS",
    "Moments",
    "RowStatistics",
    "SVIEstimator",
    "Samples",
    "Statistics",
    "StepContext",
    "add_statistics",
    "even_batches",
    "monitor",
]
