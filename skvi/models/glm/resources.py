"""What a full-covariance Gaussian over the weights costs: its memory, and its BLAS threads.

A GLM's posterior ``q(w)`` holds a dense ``D x D`` covariance (and its
precision and factorisations), ``D`` the weights of every linear predictor.
:func:`check_covariance_size` refuses, before anything is allocated, a fit
whose covariance alone would pass :data:`MAX_COVARIANCE_BYTES`.

Each step of a fit with few weights is many small BLAS calls (the
minibatch's Gram matrix, a few ``D x D`` products and factorisations) among
element-wise work.  OpenBLAS splits each call over all the cores and waits
for the slowest thread at its end: on a loaded machine that wait, once per
call, costs more than the call.  :func:`blas_limited` holds BLAS to one
thread during the fits of :data:`SMALL_BLAS_FEATURES` features or fewer,
where splitting a call could gain little even on idle cores
(``docs/glm_benchmark.md``, "BLAS threads").
"""

import functools
import threading
from contextlib import contextmanager

import numpy as np

__all__ = ["MAX_COVARIANCE_BYTES", "SMALL_BLAS_FEATURES", "blas_limited", "check_covariance_size"]

#: The largest dense covariance of the weights a GLM fit allocates (bytes);
#: a fit keeps a few matrices of this size (precision, covariance, factor).
MAX_COVARIANCE_BYTES = 2**30
#: The most features for which a fit holds BLAS to one thread.
SMALL_BLAS_FEATURES = 256


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


_lock = threading.Lock()
_holders = 0
_limiter = None
_controller = None


def _n_columns(X):
    shape = getattr(X, "shape", None)
    try:
        if shape is None:
            shape = np.shape(X)
        return int(shape[1])
    except Exception:  # not a table: validation says why
        return None


@contextmanager
def _one_blas_thread():
    """BLAS at one thread while any fit holds it (thread-safe: the last one out restores)."""
    global _holders, _limiter, _controller
    with _lock:
        if _holders == 0:
            if _controller is None:
                # Finding the loaded libraries takes milliseconds: once per
                # process (numpy's and scipy's BLAS are loaded by then).
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
            _limiter = _controller.limit(limits=1, user_api="blas")
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _limiter.restore_original_limits()
                _limiter = None


def blas_limited(method):
    """``method(self, X, ...)`` with BLAS at one thread when X has few columns.

    Parameters
    ----------
    method : callable
        A fitting method whose first argument after ``self`` is X.

    Returns
    -------
    callable
        The method, run under a one-thread BLAS limit when X has at most
        :data:`SMALL_BLAS_FEATURES` columns.

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> from skvi.models.glm.resources import blas_limited
    >>> def threads(self, X):
    ...     return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    >>> blas_limited(threads)(None, [[1.0, 2.0]])
    {1}
    """

    @functools.wraps(method)
    def limited(self, X, *args, **kwargs):
        n = _n_columns(X)
        if n is None or n > SMALL_BLAS_FEATURES:
            return method(self, X, *args, **kwargs)
        with _one_blas_thread():
            return method(self, X, *args, **kwargs)

    return limited
