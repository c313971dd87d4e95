"""Predictions of dask input: a fitted estimator's methods mapped over the blocks, lazily."""

import numpy as np

from .transport import _as_dask_array, _import_dask

__all__ = ["blockwise"]


def _apply_method(block, estimator, method, args, kwargs):
    return method(estimator, block, *args, **kwargs)


def blockwise(estimator, method, X, *args, **kwargs):
    """``method(estimator, X_block, ...)`` of every block of X, as a lazy dask array.

    What ``transform``, ``predict``, ``predict_proba``, ``predict_log_proba``
    and ``score_samples`` of every skvi estimator return for a dask
    collection: one task per block of rows, the fitted estimator sent once
    (a single node of the graph), nothing computed until asked.

    Parameters
    ----------
    estimator : SVIEstimator
        A fitted estimator.
    method : callable
        The unbound method, ``method(estimator, X, *args, **kwargs)``,
        returning one value or one row of values per row of X.
    X : dask.array.Array or dask.dataframe.DataFrame
        Rows in blocks.
    *args, **kwargs
        Further arguments of the method.

    Returns
    -------
    dask.array.Array
        One entry (1-D) or row (2-D) per row of X, blocked like X's rows.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from skvi import SVILinearRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 2))
    >>> est = SVILinearRegression().fit(X, X @ [1.0, -2.0] + 0.1 * rng.normal(size=200))
    >>> y = est.predict(da.from_array(X, chunks=(50, 2)))  # a lazy dask array
    >>> bool(np.allclose(y.compute(), est.predict(X)))
    True
    """
    da, _ = _import_dask()
    import dask  # noqa: PLC0415

    X = _as_dask_array(da, X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimension(s).")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    # The output's width from one row of zeros (no data is computed), or,
    # where zeros are not a valid row (ids of strings, say), from X's first.
    try:
        sample = method(estimator, np.zeros((1, X.shape[1]), dtype=X.dtype), *args, **kwargs)
    except (ValueError, TypeError):
        sample = method(estimator, np.asarray(X[:1].compute()), *args, **kwargs)
    if isinstance(sample, tuple):
        raise NotImplementedError(
            f"{method.__name__} returning several arrays is not supported on dask "
            "input; compute the blocks you need in memory."
        )
    sample = np.asarray(sample)
    est = dask.delayed(estimator, traverse=False)
    if sample.ndim == 1:
        return X.map_blocks(
            _apply_method,
            est,
            method,
            args,
            kwargs,
            drop_axis=1,
            dtype=sample.dtype,
            meta=np.empty((0,), dtype=sample.dtype),
        )
    return X.map_blocks(
        _apply_method,
        est,
        method,
        args,
        kwargs,
        chunks=(X.chunks[0], sample.shape[1:]),
        dtype=sample.dtype,
        meta=np.empty((0,) * sample.ndim, dtype=sample.dtype),
    )
