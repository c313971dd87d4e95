"""skvi: scikit-learn estimators for stochastic variational inference.

Every estimator runs on one shared stochastic natural-gradient engine
(:mod:`skvi.engine`), with step-size schedules from :mod:`skvi.schedules`
and variational factors from :mod:`skvi.expfam`.
"""

from ._versions import kernels, show_versions, warn_if_kernels_missing
from .models import (
    GaussianGammaVB,
    SVIBayesianGaussianMixture,
    SVICorrelatedTopicModel,
    SVIHierarchicalDirichletProcess,
    SVILatentDirichletAllocation,
    SVILinearRegression,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIOverdispersedPoissonRegression,
    SVIPoissonRegression,
    SVISparseGPClassifier,
    SVISparseGPRegressor,
)

__version__ = "0.1.0.dev0"

warn_if_kernels_missing()

__all__ = [
    "GaussianGammaVB",
    "SVIBayesianGaussianMixture",
    "SVICorrelatedTopicModel",
    "SVIHierarchicalDirichletProcess",
    "SVILatentDirichletAllocation",
    "SVILinearRegression",
    "SVILogisticRegression",
    "SVIMatrixFactorization",
    "SVIOverdispersedPoissonRegression",
    "SVIPoissonRegression",
    "SVISparseGPClassifier",
    "SVISparseGPRegressor",
    "__version__",
    "kernels",
    "show_versions",
]


def __getattr__(name):
    # ``skvi.distributed`` without importing it first, as when ``import skvi``
    # imported it; it is no longer imported eagerly (nothing needs registering).
    if name == "distributed":
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"{__name__}.distributed")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
