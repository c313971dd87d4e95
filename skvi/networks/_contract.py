"""Sums of products of labelled arrays (``numpy.einsum``), their contraction order planned once.

A sum of products over plates and variable axes is cheapest as a chain of
matrix products, each summing over the axes two arrays share: the scores
and loadings of a factor model meet in one product over the components,
and a message to the scores sums the loadings over the rows in another.
``numpy.einsum`` finds such an order when asked (``optimize``), at a cost
of its own on every call; the order depends only on the shapes and labels,
so it is found once for each and kept.
"""

import functools

import numpy as np

#: The labels ``numpy.einsum`` takes in its list form: 0 to 51.
MAX_LABELS = 52


@functools.lru_cache(maxsize=1024)
def _path(spec, out):
    """The contraction order of arrays of these ``(shape, labels)`` into labels ``out``."""
    args = []
    for shape, labels in spec:
        args += [np.broadcast_to(np.zeros(()), shape), list(labels)]
    return np.einsum_path(*args, list(out), optimize="greedy")[0]


def contract(arrays, labels, out):
    """``einsum`` of ``arrays``, whose axes carry the integer ``labels``, into the labels ``out``.

    Parameters
    ----------
    arrays : list of ndarray
        The factors.
    labels : list of list of int
        Each array's label per axis (below :data:`MAX_LABELS`); a label
        repeated across arrays is one axis, summed unless in ``out``.
    out : list of int
        The result's axes.

    Returns
    -------
    ndarray
        The sum over every label not in ``out`` of the product of the arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks._contract import contract
    >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    >>> contract([a, b], [[0, 1], [1]], [0])
    array([ 5., 14.])
    """
    spec = tuple((a.shape, tuple(lab)) for a, lab in zip(arrays, labels))
    path = _path(spec, tuple(out))
    args = []
    for a, lab in zip(arrays, labels):
        args += [a, list(lab)]
    return np.einsum(*args, list(out), optimize=path)
