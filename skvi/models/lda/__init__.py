"""Latent Dirichlet allocation: the estimator, its E-step and the compiled kernel."""

from .estimator import SVILatentDirichletAllocation

__all__ = ["SVILatentDirichletAllocation"]
