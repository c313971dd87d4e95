"""What a full-covariance Gaussian over the weights costs in memory.

A GLM's posterior ``q(w)`` holds a dense ``D x D`` covariance (and its
precision and factorisations), ``D`` the weights of every linear predictor.
:func:`check_covariance_size` refuses, before anything is allocated, a fit
whose covariance alone would pass :data:`MAX_COVARIANCE_BYTES`.
"""

import numpy as np

__all__ = ["MAX_COVARIANCE_BYTES", "check_covariance_size"]

#: The largest dense covariance of the weights a GLM fit allocates (bytes);
#: a fit keeps a few matrices of this size (precision, covariance, factor).
MAX_COVARIANCE_BYTES = 2**30


def _format_bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024.0


def check_covariance_size(whom, n_features, n_outputs=1, intercept=True, alternative=None):
    """Raise a ValueError when the weights' dense covariance would pass ``MAX_COVARIANCE_BYTES``.

    Computed from the shape alone, before any allocation: ``D = (n_features
    + intercept) * n_outputs`` weights, a ``D x D`` float64 matrix.

    Parameters
    ----------
    whom : str
        The estimator the message names.
    n_features : int
        Columns of X.
    n_outputs : int, default=1
        Linear predictors (the classes of a softmax).
    intercept : bool, default=True
        Whether each predictor has an intercept weight.
    alternative : str or None, default=None
        A scikit-learn estimator the message proposes instead.

    Returns
    -------
    nbytes : int
        The covariance's size in bytes.

    Examples
    --------
    >>> from skvi.models.glm.resources import check_covariance_size
    >>> check_covariance_size("Example", 100)
    81608
    >>> check_covariance_size("Example", 10**6)
    Traceback (most recent call last):
    ...
    ValueError: Example: X has 1000000 features, so the posterior's full covariance of ...
    """
    d = (int(n_features) + int(bool(intercept))) * int(n_outputs)
    nbytes = d * d * np.dtype(np.float64).itemsize
    if nbytes > MAX_COVARIANCE_BYTES:
        per = f" ({d // n_outputs} per class)" if n_outputs > 1 else ""
        instead = (
            f", or use {alternative}, a point estimate that keeps no covariance"
            if alternative
            else ""
        )
        raise ValueError(
            f"{whom}: X has {n_features} features, so the posterior's full covariance of "
            f"its {d} weights{per} is a {d} x {d} float64 matrix of {_format_bytes(nbytes)}, "
            f"more than the {_format_bytes(MAX_COVARIANCE_BYTES)} this estimator allows it "
            "(a fit keeps several such matrices). Reduce the features first, e.g. with "
            "sklearn.feature_selection (SelectKBest, VarianceThreshold) or "
            f"sklearn.decomposition.TruncatedSVD{instead}."
        )
    return nbytes
