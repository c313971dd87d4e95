"""Linear maps of a Gaussian variable: what a change of basis does to the factor's terms.

Mapping ``x`` to ``R x`` maps ``N(m, Sigma)`` to ``N(R m, R Sigma R^T)``: the
natural parameters go through ``R^{-1}`` and the entropy rises by
``log|det R|``.  The networks' rotations of a factor model's latent space
(Luttinen and Ilin, "Transformations in variational Bayesian factor
analysis to speed up learning") need both for the map and its inverse.
"""

# The factorisation lives with the others, in linalg.
from .linalg import inverse_and_logdet

__all__ = ["inverse_and_logdet"]
