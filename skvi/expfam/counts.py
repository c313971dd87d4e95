"""Log base measures of the count families whose conjugate priors live here.

A Poisson count has the :class:`~skvi.expfam.Gamma` as its rate's conjugate
prior and multinomial counts the :class:`~skvi.expfam.Dirichlet`; their
base measures (the terms of the log density in the counts alone) are these.
"""

from scipy import special

from .base import _as_float


def poisson_log_base_measure(x):
    """``log h(x) = -log x!`` of the Poisson density ``exp(x log r - r) / x!``.

    Parameters
    ----------
    x : array_like
        Non-negative integer counts (any shape).

    Returns
    -------
    ndarray of shape x.shape
        ``-log x!``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.counts import poisson_log_base_measure
    >>> print(np.round(poisson_log_base_measure([0, 3]), 6), round(-np.log(6.0), 6))
    [-0.       -1.791759] -1.791759
    """
    return -special.gammaln(_as_float(x) + 1.0)


def multinomial_log_coefficient(x, n=None):
    """``log(n! / prod_k x_k!)``, the multinomial coefficient of counts over the last axis.

    Parameters
    ----------
    x : array_like of shape (..., K)
        Non-negative integer counts of the ``K`` categories.
    n : array_like or None, default=None
        The number of draws, broadcastable to ``x.shape[:-1]``; None for
        ``x.sum(axis=-1)``.

    Returns
    -------
    ndarray of shape x.shape[:-1]
        The log multinomial coefficient.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.counts import multinomial_log_coefficient
    >>> print(round(float(multinomial_log_coefficient([2, 1, 1])), 6), round(np.log(12.0), 6))
    2.484907 2.484907
    """
    x = _as_float(x)
    n = x.sum(axis=-1) if n is None else _as_float(n)
    return special.gammaln(n + 1.0) - special.gammaln(x + 1.0).sum(axis=-1)
