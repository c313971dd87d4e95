"""Bayesian matrix factorization: the estimator, its non-conjugate statistics and kernel."""

from .estimator import SVIMatrixFactorization

__all__ = ["SVIMatrixFactorization"]
