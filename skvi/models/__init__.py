"""Estimators: one module per model, each built on :mod:`skvi.engine`."""

from .ctm import SVICorrelatedTopicModel
from .gaussian_gamma import GaussianGammaVB
from .hdp import SVIHierarchicalDirichletProcess
from .glm import SVILogisticRegression, SVIPoissonRegression
from .lda import SVILatentDirichletAllocation
from .linear import SVILinearRegression
from .matrix_factorization import SVIMatrixFactorization
from .mixture import SVIBayesianGaussianMixture
from .overdispersed_poisson import SVIOverdispersedPoissonRegression
from .sparse_gp import SVISparseGPClassifier, SVISparseGPRegressor

__all__ = [
    "SVIBayesianGaussianMixture",
    "SVICorrelatedTopicModel",
    "GaussianGammaVB",
    "SVIHierarchicalDirichletProcess",
    "SVILatentDirichletAllocation",
    "SVILinearRegression",
    "SVILogisticRegression",
    "SVIMatrixFactorization",
    "SVIOverdispersedPoissonRegression",
    "SVIPoissonRegression",
    "SVISparseGPClassifier",
    "SVISparseGPRegressor",
]
