"""The hierarchical Dirichlet process topic model (online variational inference)."""

from .estimator import SVIHierarchicalDirichletProcess

__all__ = ["SVIHierarchicalDirichletProcess"]
