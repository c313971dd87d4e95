"""The shared stochastic natural-gradient engine (see :mod:`skvi.engine.base`)."""

from .base import ENGINE_PARAMETER_CONSTRAINTS, MAX_BACKOFF, PROBE_SIZE, SVIMixin, even_batches

__all__ = ["ENGINE_PARAMETER_CONSTRAINTS", "MAX_BACKOFF", "PROBE_SIZE", "SVIMixin", "even_batches"]
