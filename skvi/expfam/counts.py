"""Log base measures and supports of the count families whose conjugate priors live here.

A Poisson count has the :class:`~skvi.expfam.Gamma` as its rate's conjugate
prior and multinomial counts the :class:`~skvi.expfam.Dirichlet`; their
base measures (the terms of the log density in the counts alone) are these,
and their supports (with a categorical's) are tested here.
"""

import numpy as np
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


def categorical_probabilities(phi):
    """The probabilities and log-normaliser of a categorical of natural parameters ``phi``.

    ``p = exp(phi - A)`` with ``A = log sum_k exp(phi_k)``, computed from
    ``phi - max(phi)``, so that the probabilities sum to 1 and ``A`` keeps
    its digits however large ``phi`` is (``logsumexp`` subtracted from
    ``phi`` rounds ``phi_k - A`` to 0 for ties near 1e17, making every tied
    probability 1).

    Parameters
    ----------
    phi : array_like of shape (..., K)
        Natural parameters (log probabilities up to a constant) over the
        last axis.

    Returns
    -------
    p : ndarray of shape (..., K)
        The probabilities, summing to 1 over the last axis.
    log_normalizer : ndarray of shape phi.shape[:-1]
        ``A = log sum_k exp(phi_k)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.counts import categorical_probabilities
    >>> p, a = categorical_probabilities([1e17, 1e17])
    >>> print(p, a == 1e17)
    [0.5 0.5] True
    >>> p, a = categorical_probabilities([0.0, np.log(3.0)])
    >>> print(np.round(p, 6), round(float(a), 6), round(np.log(4.0), 6))
    [0.25 0.75] 1.386294 1.386294
    """
    phi = _as_float(phi)
    top = np.max(phi, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(phi - top)
    total = e.sum(axis=-1, keepdims=True)
    return e / total, np.log(total[..., 0]) + top[..., 0]


def count_in_support(x):
    """True where ``x`` is a count (a Poisson's support): a finite non-negative integer.

    Parameters
    ----------
    x : array_like
        Values (any shape).

    Returns
    -------
    ndarray of bool of shape x.shape
        True where the value is a finite non-negative integer.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.counts import count_in_support
    >>> count_in_support([0.0, 3.0, 2.5, -1.0, np.inf, np.nan])
    array([ True,  True, False, False, False, False])
    """
    x = _as_float(x)
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (x >= 0) & (x == np.round(x))


def multinomial_in_support(x, n):
    """True where the counts over the last axis are a multinomial's: counts summing to ``n``.

    Parameters
    ----------
    x : array_like of shape (..., K)
        Counts of the ``K`` categories.
    n : array_like
        The number of draws, broadcastable to ``x.shape[:-1]``.

    Returns
    -------
    ndarray of bool of the broadcast shape of ``x.shape[:-1]`` and ``n``
        True where every count is a non-negative integer and they sum to ``n``.

    Examples
    --------
    >>> from skvi.expfam.counts import multinomial_in_support
    >>> multinomial_in_support([[1, 3], [2, 1], [-1, 5]], 4)
    array([ True, False, False])
    """
    x = _as_float(x)
    return np.all(count_in_support(x), axis=-1) & (x.sum(axis=-1) == _as_float(n))


def category_in_support(x, K):
    """True where ``x`` is one of ``K`` categories (a categorical's support): an integer in [0, K).

    Parameters
    ----------
    x : array_like
        Category indices (any shape).
    K : int
        The number of categories.

    Returns
    -------
    ndarray of bool of shape x.shape
        True where the value is an integer in ``[0, K)``.

    Examples
    --------
    >>> from skvi.expfam.counts import category_in_support
    >>> category_in_support([0, 2, 3, 1.5], 3)
    array([ True,  True, False, False])
    """
    x = _as_float(x)
    with np.errstate(invalid="ignore"):
        return count_in_support(x) & (x < K)
