"""The shared stochastic natural-gradient engine.

:mod:`skvi.engine.base`
    :class:`SVIEstimator`, the loop every estimator runs, and the hooks a
    model implements.
:mod:`skvi.engine.factor`
    :class:`Factor`, a global factor's current value with its moments.
:mod:`skvi.engine.statistics`
    Summed sufficient statistics: the map-reduce split's currency.
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
from .statistics import RowStatistics, Samples, Statistics, add_statistics

__all__ = [
    "ENGINE_PARAMETER_CONSTRAINTS",
    "Factor",
    "MAX_BACKOFF",
    "OPTIONAL_HOOKS",
    "PROBE_SIZE",
    "REQUIRED_HOOKS",
    "RowStatistics",
    "SVIEstimator",
    "Samples",
    "Statistics",
    "StepContext",
    "add_statistics",
    "even_batches",
]
