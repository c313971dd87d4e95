"""Rotations of a factor model's latent space: a parameter expansion of VMP sweeps.

In ``F = SumMultiply('d,d->', X, C)`` the product is unchanged when every
``x`` becomes ``R x`` and every ``c`` becomes ``R^{-T} c``, for any invertible
``R``: the likelihood does not see ``R``, but the priors and entropies of
``q(X)`` and ``q(C)`` do.  VMP sweeps move along this direction only
slowly, each factor's update held by the other's; after a sweep, the ``R``
that maximises the bound is found directly (a small optimisation over a
``D x D`` matrix from the sums of ``E[x x^T]`` and ``E[c c^T]``) and
applied, as in Luttinen and Ilin, "Transformations in variational Bayesian
factor analysis to speed up learning", and BayesPy's ``RotateGaussianARD``.

A pair qualifies when ``X`` and ``C`` are latent :class:`GaussianARD`
vectors with zero prior means, each the operand of that product alone
(its only child), and each with a prior precision per component: a fixed
array shared by its plates, or a :class:`Gamma` node with fixed parameters
and this node its only child, whose ``q`` is then updated with the rotated
node (the bound is taken at that ``q``'s optimum).
"""

import numpy as np
from scipy.optimize import minimize

from .. import expfam
from ..expfam.linear_map import inverse_and_logdet
from ._deterministic import SumMultiply
from ._gamma import Gamma
from ._gaussian import GaussianARD, _shared
from ._node import Constant
from ._stochastic import Stochastic

#: The most L-BFGS iterations of one rotation; most stop sooner, converged.
_MAXITER = 30
#: The share of the prior terms below which a rotation's rise is rounding.
_ROUNDING = 1e-12


class _Side:
    """One operand of a rotatable product: the node, its prior precision and counts."""

    def __init__(self, node, D):
        self.node = node
        self.count = int(np.prod(node.plates))
        alpha = node.parents[1]
        self.gamma = None
        if isinstance(alpha, Constant):
            a = np.asarray(alpha.u[0], dtype=np.float64)
            self.fixed = np.broadcast_to(a.reshape(-1)[-D:] if a.size >= D else a, (D,))
        else:
            self.gamma = alpha
            shape = np.broadcast_to(np.asarray(alpha.parents[0].u[0]), alpha.plates)
            rate = np.broadcast_to(np.asarray(alpha.parents[1].u[0]), alpha.plates)
            # The shape of q(alpha) after its update: the prior's plus half
            # the elements of this node per component.
            self.shape = shape.reshape(-1)[-D:] + 0.5 * self.count
            self.rate = rate.reshape(-1)[-D:]

    def second_moment(self):
        u1 = self.node.u[1]
        D = u1.shape[-1]
        return u1.reshape(-1, D, D).sum(axis=0)

    def term(self, T, S):
        """The side's prior terms at ``x -> T x`` from ``S = sum E[x x^T]``, and their gradient in T."""
        TS = T @ S
        b = np.einsum("ij,ij->i", TS, T)
        if self.gamma is None:
            h = -0.5 * self.fixed
            value = float(np.dot(h, b))
        else:
            rate = self.rate + 0.5 * b
            if np.any(rate <= 0):
                return -np.inf, None
            value = -float(np.dot(self.shape, np.log(rate)))
            h = -0.5 * self.shape / rate
        return value, 2.0 * h[:, None] * TS

    def apply(self, T, Tinv, logdet):
        """Map ``q(x)`` to that of ``T x``: its moments, natural parameters and normaliser."""
        n = self.node
        phi0, phi1 = n.phi
        shared = _shared(phi1, phi1.ndim - 2)
        if shared.shape != phi1.shape:
            # One precision for every plate element (a factor model without
            # missing values): mapped once, its covariance computed once.
            mapped = _sandwich(Tinv.T, shared)
            zero = np.zeros(mapped.shape[:-1])
            _, cov, _ = expfam.MultivariateGaussian.moments_from_natural(zero, mapped)
            mean = n.u[0] @ T.T
            n.phi = [phi0 @ Tinv, np.broadcast_to(mapped, phi1.shape)]
            n.g = n.g - logdet
            u1 = mean[..., :, None] * mean[..., None, :]
            u1 += cov
            n.u = [mean, u1]
        else:
            u0, u1 = n.u
            n.phi = [phi0 @ Tinv, _sandwich(Tinv.T, phi1)]
            n.g = n.g - logdet
            n.u = [u0 @ T.T, _sandwich(T, u1)]
        if self.gamma is not None:
            self.gamma.update()


def _sandwich(T, A):
    """``T A T^T`` of each matrix of the stack ``A``, as two matrix products over the whole stack."""
    D = T.shape[0]
    shape = A.shape
    right = (A.reshape(-1, D) @ T.T).reshape(shape)  # A T^T
    # T (A T^T) = ((A T^T)^T T^T)^T, the transposes within each matrix.
    left = np.swapaxes(right, -1, -2).reshape(-1, D) @ T.T
    return np.swapaxes(left.reshape(shape), -1, -2)


def _qualifies(node, D, F, ids):
    """Whether ``node`` is a latent zero-mean ARD vector whose only child is ``F``.

    A Gamma node of its precisions must be among the nodes updated (``ids``):
    the rotation updates it with the node.
    """
    if not isinstance(node, GaussianARD) or node.shape != (D,) or node.observed:
        return False
    if node._fixed is not None or node._mask is not None:
        return False
    if len(node.children) != 1 or node.children[0][0] is not F:
        return False
    mu, alpha = node.parents
    if not (isinstance(mu, Constant) and not np.any(mu.u[0])):
        return False
    if isinstance(alpha, Constant):
        a = np.asarray(alpha.u[0])
        return a.ndim <= 1 or all(n == 1 for n in a.shape[:-1])
    if not isinstance(alpha, Gamma) or alpha.observed or alpha.children != [(node, 1)]:
        return False
    if id(alpha) not in ids:
        return False
    if alpha._mask is not None or alpha._fixed is not None:
        return False
    if not all(isinstance(p, Constant) for p in alpha.parents):
        return False
    return alpha.plates[-1:] == (D,) and all(n == 1 for n in alpha.plates[:-1])


def find_rotations(nodes):
    """The rotatable products among the parents of ``nodes``' children: a list of side pairs."""
    found, seen = [], set()
    ids = {id(n) for n in nodes}
    for node in nodes:
        for F, _ in getattr(node, "children", []):
            if id(F) in seen or not isinstance(F, SumMultiply) or len(F.parents) != 2:
                continue
            seen.add(id(F))
            if F._out or any(len(k) != 1 for k in F._keys) or F._keys[0] != F._keys[1]:
                continue
            X, C = F.parents
            if id(X) not in ids or id(C) not in ids:
                continue
            D = X.dims[0][0] if len(X.dims[0]) == 1 else 0
            if D and all(_qualifies(n, D, F, ids) for n in (X, C)):
                found.append((_Side(X, D), _Side(C, D)))
    return found


def rotate(X, C):
    """Rotate ``X`` by the ``R`` that maximises the bound and ``C`` by ``R^{-T}``.

    The bound changes by ``(N_X - N_C) log|det R|`` plus the priors'
    terms (the likelihood's do not move), exactly: the change is found by
    L-BFGS from ``R = I`` and applied only when it is a rise (returns
    whether it was).  A Gamma node of a side, updated after the map, can
    only add to it.
    """
    if not isinstance(X.node, Stochastic) or X.node.phi is None or C.node.phi is None:
        return False
    found = best_rotation(X, C, X.second_moment(), C.second_moment())
    if found is None:
        return False
    R, Rinv, logdet = found
    X.apply(R, Rinv, logdet)
    C.apply(Rinv.T, R.T, -logdet)
    return True


def best_rotation(X, C, XX, CC):
    """``(R, R^{-1}, log|det R|)`` that maximises the bound, or None when no rise is found.

    ``X`` and ``C`` are the sides (their counts and prior terms), ``XX`` and
    ``CC`` their sums of ``E[x x^T]`` and ``E[c c^T]``: the bound's change
    depends on nothing else.
    """
    D = XX.shape[0]
    diff = X.count - C.count

    def cost(r):
        R = r.reshape(D, D)
        Rinv, logdet = inverse_and_logdet(R)
        if Rinv is None:
            return np.inf, np.zeros_like(r)
        fx, gx = X.term(R, XX)
        fc, gt = C.term(Rinv.T, CC)
        if gx is None or gt is None:
            return np.inf, np.zeros_like(r)
        value = diff * logdet + fx + fc
        # d/dR of a term in T = R^{-T}: -R^{-T} G_T^T R^{-T}, transposed.
        grad = diff * Rinv.T + gx - Rinv.T @ gt.T @ Rinv.T
        return -value, -grad.ravel()

    start = np.eye(D).ravel()
    f0 = cost(start)[0]
    res = minimize(cost, start, jac=True, method="L-BFGS-B", options={"maxiter": _MAXITER})
    # A rise within the rounding of the terms is no rise: the map is skipped.
    if not (np.isfinite(res.fun) and f0 - res.fun > _ROUNDING * max(1.0, abs(f0))):
        return None
    R = res.x.reshape(D, D)
    Rinv, logdet = inverse_and_logdet(R)
    if Rinv is None:
        return None
    return R, Rinv, logdet
