"""Rotations of a factor model's latent space in the batch fits of ``SVIBayesianNetwork``.

:class:`~skvi.networks.VB` rotates, after each sweep, the latent space of
every rotatable product ``SumMultiply('d,d->', X, C)`` (:mod:`._rotate`).
A batch pass of the estimator is the same sweep (the local nodes, then the
globals), so it takes the same rotation, but the rows' scores ``X`` are a
local node: their ``q`` lives in the pass's local step, block by block.
The rotation needs of them only their count and ``sum E[x x^T]``, sums that
add over blocks (:meth:`FitRotations.summary`, the estimator's
``_data_summary`` of a step); from those and the global side's ``q`` it
finds ``R`` (:func:`._rotate.best_rotation`) and moves the global side
(and its ``Gamma`` precisions) by ``R^{-T}``.  The scores are not kept:
the next local step computes them from the rotated globals, which can only
raise the bound further.

A pair qualifies as in :func:`._rotate.find_rotations`; its local side (if
any) must have a fixed prior precision (a ``Gamma`` of a local node's
precisions would be fitted to the rows of one block), and a product of two
local nodes is left to the local step.
"""

import numpy as np

from ._rotate import _Side, best_rotation, find_rotations

__all__ = ["FitRotations"]


class FitRotations:
    """The rotatable products of a declared network, by node name.

    Parameters
    ----------
    nodes : dict
        The declared network's nodes by name.
    local, glob : list of str
        Its local latent nodes and its global nodes.
    """

    def __init__(self, nodes, local, glob):
        names = {id(v): k for k, v in nodes.items()}
        local = set(local)
        self.pairs = []  # (local side's name or None, first side's name, second's)
        for X, C in find_rotations([nodes[n] for n in list(local) + list(glob)]):
            x, c = names[id(X.node)], names[id(C.node)]
            if x in local and c in local:
                continue
            if c in local:
                x, c, X = c, x, C
            if x in local and X.gamma is not None:
                continue
            self.pairs.append((x if x in local else None, x, c))

    def __bool__(self):
        return bool(self.pairs)

    def summary(self, net):
        """``(count, sum E[x x^T])`` of each pair's local side in the rows' network ``net``.

        A tuple of arrays that adds over blocks; None when a local side has
        no ``q`` yet (a random draw) or there is no local side.  Rows count
        their weight, and elements the masks leave out count nothing, as in
        the bound.
        """
        out = []
        for name, _, _ in self.pairs:
            if name is None:
                continue
            node = net[name]
            if node.phi is None:
                return None
            u1 = node.u[1]
            D = u1.shape[-1]
            w, m = node._row_weight, node._mask
            if w is None and m is None:
                count = float(np.prod(node.plates))
                second = np.broadcast_to(u1, node.plates + (D, D)).reshape(-1, D, D).sum(axis=0)
            else:
                weight = m if w is None else (w if m is None else w * m)
                weight = np.broadcast_to(weight, node.plates).reshape(-1)
                count = float(weight.sum())
                stack = np.broadcast_to(u1, node.plates + (D, D)).reshape(-1, D, D)
                second = np.tensordot(weight, stack, axes=1)
            out += [np.asarray(count), second]
        return tuple(out) if out else None

    def move(self, nodes, summary):
        """Rotate each pair of ``nodes`` (globals set) to the bound's maximum; the moved ``q``.

        ``summary`` is :meth:`summary` summed over the rows (None when a pair
        has a local side: nothing moves).  The global sides' nodes (and their
        ``Gamma`` precisions) are moved in place; returns their natural
        parameters by name, an empty dict when nothing rose.
        """
        moved = {}
        k = 0
        for local, x, c in self.pairs:
            D = nodes[x].dims[0][0]
            X, C = _Side(nodes[x], D), _Side(nodes[c], D)
            if local is not None:
                if summary is None:
                    return {}
                X.count, XX = float(summary[k]), np.asarray(summary[k + 1])
                k += 2
            else:
                XX = X.second_moment()
            if C.node.phi is None or (local is None and X.node.phi is None):
                continue
            found = best_rotation(X, C, XX, C.second_moment())
            if found is None:
                continue
            R, Rinv, logdet = found
            sides = [(C, Rinv.T, R.T, -logdet)]
            if local is None:
                sides.append((X, R, Rinv, logdet))
            for side, T, Tinv, ld in sides:
                side.apply(T, Tinv, ld)
                for node in (side.node, side.gamma):
                    if node is not None:
                        moved[_name_of(nodes, node)] = tuple(np.array(a) for a in node.phi)
        return moved


def _name_of(nodes, node):
    return next(k for k, v in nodes.items() if v is node)
