"""Sparse Gaussian-process regression by (stochastic) variational inference.

The inducing-point model of Titsias ("Variational learning of inducing
variables in sparse Gaussian processes") and Hensman, Fusi and Lawrence
("Gaussian processes for big data"), with the four objectives compared in
"Monte Carlo structured SVI for two-level non-conjugate models"::

    u = f(Z) ~ N(0, K_uu),   f | u ~ N(A u, K_ff - Q_ff),   y | f ~ N(f, s2 I)

with ``A = K_fu K_uu^-1`` and ``Q_ff = A K_uf``.  Whitened, ``u = L v`` with
``L L^T = K_uu`` and ``v ~ N(0, I)``: each row has features
``phi_i = L^-1 k_u(x_i)`` and ``f_i | v ~ N(phi_i . v, c_i)``,
``c_i = k_ii - |phi_i|^2``, so every objective is a Bayesian linear model in
``phi`` with per-row noise, fitted by the engine's natural-gradient steps on
one full-covariance Gaussian ``q(v) = N(m, V)``.
"""

from .base import JITTERS, MIN_PIVOT_RATIO, _SparseGP  # noqa: F401
from .classifier import SVISparseGPClassifier
from .hyperparameters import HYPER_BLOCK  # noqa: F401
from .regressor import MAX_OPTIMAL_ROWS, SVISparseGPRegressor  # noqa: F401

__all__ = ["SVISparseGPClassifier", "SVISparseGPRegressor"]
