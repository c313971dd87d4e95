"""The correlated topic model: the estimator and its per-document kernels."""

from .estimator import SVICorrelatedTopicModel

__all__ = ["SVICorrelatedTopicModel"]
