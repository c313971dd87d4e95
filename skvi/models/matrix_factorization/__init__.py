"""Bayesian matrix factorization: the estimator, its parts by concern, strategies and kernel."""

from .estimator import SVIMatrixFactorization

__all__ = ["SVIMatrixFactorization"]
