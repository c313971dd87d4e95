"""Plates: broadcasting node shapes, and summing messages back to a parent's plates."""

import math

import numpy as np

__all__ = ["NetworkError", "broadcast_plates", "sum_to_plates", "plate_total"]


class NetworkError(ValueError):
    """A network that cannot be declared or fitted as asked; the message names the node.

    Examples
    --------
    >>> from skvi.networks import Gamma, GaussianARD, NetworkError
    >>> try:
    ...     GaussianARD(Gamma(1, 1, name="tau"), 1, name="x")
    ... except NetworkError as err:
    ...     print(str(err)[:45])
    GaussianARD 'x': parent 'mu' is Gamma 'tau'...
    """


def broadcast_plates(owner, *plates):
    """The broadcast of several plate shapes (right-aligned), or a NetworkError naming ``owner``."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(p) for p in plates]))
    except ValueError:
        shown = ", ".join(str(tuple(p)) for p in plates)
        raise NetworkError(f"{owner}: plates {shown} do not broadcast together") from None


def sum_to_plates(m, plates, ndim, full=None):
    """Sum a message over the plates its parent does not have.

    Parameters
    ----------
    m : ndarray
        The message, of shape broadcastable to ``full + dims`` (``dims`` its
        last ``ndim`` axes).
    plates : tuple of int
        The parent's plates (right-aligned with ``full``).
    ndim : int
        The number of variable axes at the end of ``m``.
    full : tuple of int or None
        The plates the message stands for.  An axis of size 1 in ``m`` that
        stands for ``full[i] > 1`` elements, summed, counts ``full[i]`` times.
        None: the shape of ``m`` itself.

    Returns
    -------
    ndarray
        The summed message, broadcastable to ``plates + dims``.
    """
    m = np.asarray(m, dtype=np.float64)
    mp = m.shape[: m.ndim - ndim]
    if full is None:
        full = mp
    L = max(len(full), len(mp), len(plates))
    full = (1,) * (L - len(full)) + tuple(full)
    m = m.reshape((1,) * (L - len(mp)) + m.shape)
    mp = m.shape[:L]
    off = L - len(plates)
    mult = 1
    axes = []
    for i in range(L):
        target = plates[i - off] if i >= off else 1
        if target == 1:
            if mp[i] == 1:
                mult *= full[i]
            else:
                axes.append(i)
    if axes:
        m = m.sum(axis=tuple(axes), keepdims=True)
    m = m.reshape(m.shape[off:])
    return m * mult if mult != 1 else m


def plate_total(a, plates):
    """The sum of ``a`` broadcast to ``plates`` (an axis of size 1 counts for the whole plate)."""
    a = np.asarray(a, dtype=np.float64)
    return float(a.sum()) * (math.prod(plates) / max(a.size, 1)) if a.size else 0.0
