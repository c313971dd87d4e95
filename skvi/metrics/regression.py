"""Held-out evaluation of regression and rating predictions.

Point error (:func:`rmse`) says nothing about the uncertainty a Bayesian
model reports; :func:`gaussian_nlpd` scores the whole Gaussian predictive
``N(mean, std**2)`` and :func:`gaussian_interval_coverage` checks that its
central intervals hold the stated share of the held-out targets.
"""

import numpy as np
from scipy.special import ndtri
from sklearn.utils import check_consistent_length

__all__ = ["gaussian_interval_coverage", "gaussian_nlpd", "rmse"]

_LOG_2PI = np.log(2.0 * np.pi)


def _check(y_true, *columns):
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in (y_true, *columns)]
    check_consistent_length(*arrays)
    for a in arrays:
        if not np.all(np.isfinite(a)):
            raise ValueError("Inputs must be finite (no NaN or inf).")
    if arrays[0].size == 0:
        raise ValueError("Inputs must hold at least one target.")
    return arrays


def rmse(y_true, y_pred):
    """Root mean squared error of point predictions.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Held-out targets.
    y_pred : array-like of shape (n_samples,)
        Predictions (for a Bayesian model, the predictive mean).

    Returns
    -------
    float
        ``sqrt(mean((y_true - y_pred) ** 2))``.

    Examples
    --------
    >>> from skvi.metrics import rmse
    >>> rmse([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])  # doctest: +ELLIPSIS
    1.1547...
    """
    y, p = _check(y_true, y_pred)
    return float(np.sqrt(np.mean((y - p) ** 2)))


def gaussian_nlpd(y_true, mean, std):
    """Mean negative log predictive density of Gaussian predictions.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Held-out targets.
    mean, std : array-like of shape (n_samples,)
        Predictive mean and standard deviation (positive) of each target,
        e.g. ``model.predict(X, return_std=True)``.

    Returns
    -------
    float
        ``-mean(log N(y_true; mean, std**2))`` (lower is better).

    Examples
    --------
    >>> from skvi.metrics import gaussian_nlpd
    >>> round(gaussian_nlpd([0.0], [0.0], [1.0]), 6)  # log(2 pi) / 2
    0.918939
    """
    y, m, s = _check(y_true, mean, std)
    if np.any(s <= 0):
        raise ValueError("std must be positive.")
    z = (y - m) / s
    return float(np.mean(0.5 * _LOG_2PI + np.log(s) + 0.5 * z * z))


def gaussian_interval_coverage(y_true, mean, std, level=0.9):
    """Share of targets inside the central ``level`` predictive interval.

    A calibrated predictive distribution covers about ``level`` of held-out
    targets; much less means overconfident, much more underconfident.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Held-out targets.
    mean, std : array-like of shape (n_samples,)
        Predictive mean and standard deviation (non-negative).
    level : float, default=0.9
        Probability mass of the central interval, in (0, 1).

    Returns
    -------
    float
        Fraction of ``y_true`` within ``mean +- z * std``, where ``z`` is
        the ``(1 + level) / 2`` quantile of the standard normal.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.metrics import gaussian_interval_coverage
    >>> y = np.random.RandomState(0).normal(size=100_000)
    >>> round(gaussian_interval_coverage(y, np.zeros_like(y), np.ones_like(y), 0.9), 2)
    0.9
    """
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    y, m, s = _check(y_true, mean, std)
    if np.any(s < 0):
        raise ValueError("std must be non-negative.")
    z = ndtri(0.5 * (1.0 + float(level)))
    return float(np.mean(np.abs(y - m) <= z * s))
