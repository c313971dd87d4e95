"""Extrapolated sweeps of variational message passing (SQUAREM on the nodes' natural parameters).

A sweep of :class:`~skvi.networks.VB` maps the natural parameters ``p`` of
every latent node to ``F(p)``, and plain sweeps iterate it.  Where the
factors of ``q`` are strongly coupled (the scores and loadings of a factor
model, which may rotate together at almost no cost to the bound) the
iteration creeps along a ridge: each sweep raises the bound a little and
the next almost as much.  Varadhan and Roland ("Simple and globally
convergent methods for accelerating the convergence of any EM algorithm",
2008) extrapolate along the path: from ``p1 = F(p0)`` and ``p2 = F(p1)``,
with ``r = p1 - p0``, ``v = p2 - 2 p1 + p0`` and ``alpha = -|r| / |v|``, the
point::

    p' = p0 - 2 alpha r + alpha^2 v

(``alpha = -1`` gives ``p2``), then one more sweep ``p3 = F(p')``, kept when
its bound is at least ``p2``'s; otherwise ``q`` goes back to ``p2``, so that
the bound never falls from pass to pass.  The engine's batch fits take the
same passes (:mod:`skvi.engine.acceleration`); as there, the lengths are
measured in each factor's Fisher metric, ``|r|^2 = <r_phi, r_u>``, the
pairing of the natural-parameter and moment differences.  A point outside
a factor's natural parameter space (a precision no longer positive
definite) is pulled back towards ``p2`` by halving ``alpha + 1``.
"""

import numpy as np

from ._stochastic import Stochastic

#: The most halvings of ``alpha + 1`` that pull a jump back into the
#: natural parameter space before the pass gives up its jump.
_BACKTRACKS = 6


def latent(nodes):
    """The nodes among ``nodes`` whose ``q`` a sweep sets: stochastic, not observed."""
    return [n for n in nodes if isinstance(n, Stochastic) and not n.observed]


def snapshot(nodes):
    """Each node's ``(phi, u, g)``; None when one of them is a point mass (no ``phi``).

    Updates replace these arrays and never write into them, so the
    references keep the state.
    """
    state = []
    for n in nodes:
        if n.phi is None:
            return None
        state.append((n.phi, n.u, n.g))
    return state


def restore(nodes, state):
    """Put ``q`` of each node back to a :func:`snapshot`."""
    for n, (phi, u, g) in zip(nodes, state):
        n.phi = phi
        n.u = u
        n.g = g


def _pairing(a, b):
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.sum(a * b))


def jump(nodes, s0, s1, s2):
    """Set the nodes to SQUAREM's point from three sweeps' states; False when there is none.

    Returns False (the nodes left at ``s2``) when the iterates did not move,
    the metric is not positive and finite, ``alpha`` would not go past
    ``p2``, or no pulled-back point is a valid one.
    """
    moves = []
    rr = vv = 0.0
    for k in range(len(nodes)):
        (phi0, u0, _), (phi1, u1, _), (phi2, u2, _) = s0[k], s1[k], s2[k]
        arrays = []
        for a0, a1, a2, m0, m1, m2 in zip(phi0, phi1, phi2, u0, u1, u2):
            r = a1 - a0
            v = (a2 - a1) - r
            rr += _pairing(r, m1 - m0)
            vv += _pairing(v, (m2 - m1) - (m1 - m0))
            arrays.append((a0, r, v))
        moves.append(arrays)
    if not (rr > 0.0 and vv > 0.0 and np.isfinite(rr) and np.isfinite(vv)):
        return False
    alpha = -np.sqrt(rr / vv)
    for _ in range(_BACKTRACKS + 1):
        if alpha >= -1.0:
            return False
        points = [
            [a0 - (2.0 * alpha) * r + (alpha * alpha) * v for a0, r, v in arrays]
            for arrays in moves
        ]
        if all(n._valid_natural(p) for n, p in zip(nodes, points)):
            for n, p in zip(nodes, points):
                n._set_phi(p)
            return True
        alpha = 0.5 * (alpha - 1.0)
    return False
