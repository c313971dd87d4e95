"""skvi: scikit-learn estimators for stochastic variational inference."""

__version__ = "0.1.0.dev0"
