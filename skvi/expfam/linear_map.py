"""Linear maps of a Gaussian variable: what a change of basis does to the factor's terms.

Mapping ``x`` to ``R x`` maps ``N(m, Sigma)`` to ``N(R m, R Sigma R^T)``: the
natural parameters go through ``R^{-1}`` and the entropy rises by
``log|det R|``.  The networks' rotations of a factor model's latent space
(Luttinen and Ilin, "Transformations in variational Bayesian factor
analysis to speed up learning") need both for the map and its inverse.
"""

import numpy as np

__all__ = ["inverse_and_logdet"]


def inverse_and_logdet(R):
    """``R^{-1}`` and ``log|det R|`` of a square matrix, or ``(None, -inf)`` when it is singular.

    Parameters
    ----------
    R : array_like of shape (d, d)
        The map.

    Returns
    -------
    inverse : ndarray of shape (d, d) or None
        ``R^{-1}``.
    logdet : float
        ``log|det R|`` (the rise of a Gaussian's entropy under ``x -> R x``).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.linear_map import inverse_and_logdet
    >>> inv, logdet = inverse_and_logdet(np.array([[2.0, 1.0], [0.0, 0.5]]))
    >>> inv
    array([[ 0.5, -1. ],
           [ 0. ,  2. ]])
    >>> float(logdet)
    0.0
    """
    R = np.asarray(R, dtype=np.float64)
    sign, logdet = np.linalg.slogdet(R)
    if sign == 0 or not np.isfinite(logdet):
        return None, -np.inf
    return np.linalg.inv(R), float(logdet)
