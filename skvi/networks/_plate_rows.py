"""Rows and plate elements: which elements of a global node each data row reaches, and how often.

A network's rows are the elements of its observed node's leading plate; a
global node's plate element ``m`` is a row of the engine's row group for
that node, and its ``N_m`` counts the observed elements of its local
children whose messages it receives (Paquet, "On the convergence of
stochastic variational inference in Bayesian networks", Alg. 1).
"""

import math

import numpy as np

from ._mixture import Mixture
from ._plates import NetworkError
from ._stochastic import Stochastic

__all__ = ["child_counts", "row_axes_of_children"]


def _full_plates(node, index):
    """The plates of ``node``'s message to parent ``index`` (before summing to its plates)."""
    return node._plates_to_parent(index) if isinstance(node, Stochastic) else node.plates


def row_axes_of_children(a, b, glob):
    """For each global node, ``(child, parent index, row axis)`` of its local children.

    ``a`` and ``b`` are builds for 2 and 3 rows: the row axis of a child's
    message is the axis of its full plates that differs between them.
    """
    names_a = {id(v): k for k, v in a.items()}
    out = {}
    for g in glob:
        entries = []
        for child, index in a[g].children:
            key = names_a.get(id(child))
            if key is None or key in glob:
                continue
            fa, fb = _full_plates(child, index), _full_plates(b[key], index)
            axis = [i for i, (x, y) in enumerate(zip(fa, fb)) if x != y]
            if len(fa) != len(fb) or len(axis) != 1:
                raise NetworkError(
                    f"{child.describe()}: its plates {fa} do not have one axis of "
                    f"rows (builds of 2 and 3 rows give {fa} and {fb})"
                )
            entries.append((key, index, axis[0]))
        out[g] = entries
    return out


def child_counts(child, index, axis, parent, weight):
    """The (weighted) elements of ``child`` that each element of ``parent`` reaches: its C_m.

    Paquet's children of a node are single variables: an element of the
    parent counts every observed element of ``child`` whose message it
    receives (a masked element sends none).  ``axis`` is the row axis of
    the child's full plates; ``weight`` the rows' weights or None.
    """
    full = _full_plates(child, index)
    L = len(full)
    off = L - len(parent.plates)
    pplates = (1,) * max(-off, 0) + tuple(parent.plates)
    off = max(off, 0)
    reduce = tuple(i for i in range(L) if i < off or pplates[i - off] == 1)
    m = child._mask
    clusters_elsewhere = isinstance(child, Mixture) and index > 0 and child._cluster_plate != -1
    if m is None:
        rows = float(full[axis] if weight is None else np.sum(weight))
        per_row = math.prod(full[i] for i in reduce if i != axis)
        if clusters_elsewhere:
            per_row = math.prod(child.plates) // max(child.plates[axis], 1)
        return np.full(parent.plates, rows * per_row)
    m = (np.asarray(m) > 0).astype(np.float64)
    if clusters_elsewhere:
        # Clusters on another axis of the parameters: every element of
        # theirs counts every observed element of the rows.
        if weight is not None:
            m = m * np.asarray(weight).reshape((-1,) + (1,) * (m.ndim - axis - 1))
        return np.full(parent.plates, float(m.sum()))
    m = np.broadcast_to(m.reshape(m.shape + (1,) * (L - m.ndim)), full)
    if weight is not None:
        m = m * np.asarray(weight, dtype=np.float64).reshape((-1,) + (1,) * (L - axis - 1))
    c = m.sum(axis=reduce, keepdims=True) if reduce else m
    c = c.reshape(c.shape[off:])
    return np.broadcast_to(c, parent.plates)
