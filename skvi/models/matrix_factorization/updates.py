"""The step of the user and item nodes: targets, blends, update rules.

Each node moves towards ``prior + (N_i / C_i) * stats_i`` (Paquet, "On the
convergence of stochastic variational inference in Bayesian networks",
eq. 6) by its own step size: the functions here form the target
(:func:`node_target`), take the step (:func:`update_nodes`: the compiled
:func:`natural_step`, the numpy blend, an update rule of
:mod:`skvi.update_rules`, or the coordinate-wise :func:`diagonal_update`
of the fully factorised family) and put the moved nodes back into their
side (:func:`with_nodes`).  :class:`NodeHooks` holds the engine's hooks of
the step: the statistics of every factor, the update of the two sides and
the ordinal thresholds' step.
"""

import zlib

import numpy as np

from ...engine import Factor, RowStatistics
from ...engine.step import blend
from ...update_rules import diagonal_target, make_update_rule
from .nodes import SIDES, SideMoments
from .posterior import safe_moments

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None

__all__ = [
    "NodeHooks",
    "all_rows",
    "block_draws",
    "diagonal_update",
    "natural_step",
    "node_target",
    "update_nodes",
    "with_nodes",
]


def all_rows(rows, n):
    """Whether ``rows`` is ``0, 1, ..., n - 1`` (every node, in order).

    Parameters
    ----------
    rows : ndarray of int
        Node indices.
    n : int
        The number of nodes of the side.

    Returns
    -------
    every : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.updates import all_rows
    >>> all_rows(np.arange(3), 3), all_rows(np.array([0, 2]), 3)
    (True, False)
    """
    return rows.shape[0] == n and (
        n == 0 or (rows[0] == 0 and rows[-1] == n - 1 and np.array_equal(rows, np.arange(n)))
    )


def block_draws(prep, name):
    """The generator of one factor's draws on a block of a cluster (None in memory).

    A fresh generator from the block's seed of this step and the factor:
    no state that a copy of the block on another worker could hold
    differently, so a fit draws the same numbers wherever its tasks run.

    Parameters
    ----------
    prep : dict
        The indexed block, with its ``'seed'`` (None in memory).
    name : str
        The factor.

    Returns
    -------
    rng : numpy.random.Generator or None

    Examples
    --------
    >>> from skvi.models.matrix_factorization.updates import block_draws
    >>> block_draws({"seed": None}, "users") is None
    True
    """
    seed = prep.get("seed")
    if seed is None:
        return None
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def node_target(alpha, h, P, weight, node_scale):
    """Natural parameters of ``prior + scale_i * stats_i`` for nodes of one side.

    Parameters
    ----------
    alpha : ndarray of shape (d,) or (d, d)
        The expected prior precision of the side (a vector: its diagonal).
    h, P : ndarray of shapes (n, d) and (n, d, d)
        The nodes' unscaled statistics.
    weight : float or ndarray of shape (n,)
        The statistics' weight (the noise precision, or 1).
    node_scale : ndarray of shape (n,)
        Each node's ``N_i / C_i``.

    Returns
    -------
    eta1, eta2 : ndarray
        ``s_i h_i`` and ``-(alpha + s_i P_i) / 2`` with ``s_i = weight * node_scale_i``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.updates import node_target
    >>> eta1, eta2 = node_target(np.ones(1), np.array([[3.0]]), np.array([[[2.0]]]), 1.0,
    ...                          np.array([2.0]))
    >>> eta1, eta2
    (array([[6.]]), array([[[-2.5]]]))
    """
    s = (weight * node_scale)[:, None]
    eta1 = s * h
    prec = s[:, :, None] * P
    if alpha.ndim == 2:
        prec += alpha
    else:
        idx = np.arange(alpha.shape[0])
        prec[:, idx, idx] += alpha
    return eta1, -0.5 * prec


def natural_step(alpha, old1, old2, h, P, row_scale, row_rho):
    """Compiled natural-gradient step of full-covariance nodes.

    The same numbers as the numpy branch of :func:`update_nodes`
    (:func:`node_target`, the convex blend with each node's ``rho_i``,
    :func:`~skvi.models.matrix_factorization.posterior.safe_moments`).

    Parameters
    ----------
    alpha : ndarray of shape (d,) or (d, d)
        The expected prior precision of the side.
    old1, old2 : ndarray of shapes (n, d) and (n, d, d)
        The nodes' natural parameters.
    h, P : ndarray of shapes (n, d) and (n, d, d)
        Their unscaled statistics.
    row_scale, row_rho : float or ndarray of shape (n,)
        Each node's ``N_i / C_i`` and step size.

    Returns
    -------
    new1, new2 : ndarray
        The new natural parameters.
    moments : SideMoments or None
        Their moments; None when a node is not a valid Gaussian.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.updates import natural_step
    >>> new1, new2, m = natural_step(np.ones(1), np.zeros((1, 1)), -0.5 * np.ones((1, 1, 1)),
    ...                              np.array([[3.0]]), np.array([[[2.0]]]), 1.0, 1.0)
    >>> m.mean  # precision 1 + 2
    array([[1.]])
    """
    if alpha.ndim == 1:
        alpha = np.diag(alpha)
    n, d = old1.shape
    new1, new2 = np.empty((n, d)), np.empty((n, d, d))
    sub = SideMoments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty(n))
    c = np.ascontiguousarray
    failed = _gaussian_fast.natural_step(
        c(old1, dtype=np.float64),
        c(old2, dtype=np.float64),
        c(h, dtype=np.float64),
        c(P, dtype=np.float64),
        c(np.broadcast_to(row_scale, (n,)), dtype=np.float64),
        c(alpha, dtype=np.float64),
        c(np.broadcast_to(row_rho, (n,)), dtype=np.float64),
        new1,
        new2,
        sub.mean,
        sub.second,
        sub.var,
        sub.logdet,
    )
    valid = (
        failed == 0
        and np.all(np.isfinite(sub.logdet))
        and np.all(np.isfinite(new1))
        and np.all(np.isfinite(new2))
    )
    return new1, new2, sub if valid else None


def diagonal_update(old1, old2, tgt1, tgt2, rho, sequential=True):
    """Fully factorised update: one coordinate at a time (Paquet's eq. 7).

    ``tgt2`` holds ``-(diag(alpha) + tau s A) / 2``, the full target
    precision; coordinate k's target uses the off-diagonal couplings with
    the other coordinates' current means: Gauss-Seidel when ``sequential``
    (``update_order='sequential'``), the snapshot otherwise.  Each
    coordinate moves by the engine's convex blend ``(1 - rho) old + rho
    target`` (:func:`skvi.engine.step.blend`).

    Parameters
    ----------
    old1, old2 : ndarray of shape (n, d)
        The nodes' natural parameters.
    tgt1, tgt2 : ndarray of shapes (n, d) and (n, d, d)
        The full-covariance target.
    rho : float or ndarray of shape (n,)
        The step sizes.
    sequential : bool, default=True
        Each coordinate's target from the coordinates already updated.

    Returns
    -------
    new1, new2 : ndarray of shape (n, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.updates import diagonal_update
    >>> tgt2 = -0.5 * np.array([[[2.0, 0.0], [0.0, 4.0]]])
    >>> diagonal_update(np.zeros((1, 2)), -0.5 * np.ones((1, 2)), np.ones((1, 2)), tgt2, 1.0)
    (array([[1., 1.]]), array([[-1., -2.]]))
    """
    d = old1.shape[1]
    prec_full = -2.0 * tgt2
    mean = old1 / (-2.0 * old2)
    new1, new2 = old1.copy(), old2.copy()
    snap = mean.copy()
    r = rho
    for k in range(d):
        src = mean if sequential else snap
        coupling = np.einsum("nj,nj->n", prec_full[:, k, :], src) - prec_full[:, k, k] * src[:, k]
        t1 = tgt1[:, k] - coupling
        t2 = -0.5 * prec_full[:, k, k]
        new1[:, k] = (1.0 - r) * old1[:, k] + r * t1
        new2[:, k] = (1.0 - r) * old2[:, k] + r * t2
        mean[:, k] = new1[:, k] / (-2.0 * new2[:, k])
    return new1, new2


def with_nodes(current, nodes, new1, new2, sub, old_moments):
    """The side's factor with ``nodes`` replaced, carrying its moments; and validity.

    Parameters
    ----------
    current : Factor
        The side's factor before the step.
    nodes : ndarray of int
        The updated nodes.
    new1, new2 : ndarray
        Their new natural parameters.
    sub : SideMoments or None
        Their moments; None when one is not a valid Gaussian.
    old_moments : callable
        Returns the moments of every node of ``current`` (called only when
        some nodes did not move).

    Returns
    -------
    factor : Factor or tuple
        The side's new value (a plain tuple when invalid).
    valid : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import Factor
    >>> from skvi.models.matrix_factorization.updates import with_nodes
    >>> current = Factor((np.zeros((2, 1)), -0.5 * np.ones((2, 1))))
    >>> new, valid = with_nodes(current, np.array([1]), np.ones((1, 1)), -np.ones((1, 1)),
    ...                         None, None)
    >>> new[0].ravel(), valid
    (array([0., 1.]), False)
    """
    if all_rows(nodes, current[0].shape[0]):
        # Every node moved (a batch step): the new arrays are the factor.
        if sub is None:
            return (new1, new2), False
        return Factor((new1, new2), current.family, {"moments": sub}), True
    eta1, eta2 = current[0].copy(), current[1].copy()
    eta1[nodes] = new1
    eta2[nodes] = new2
    if sub is None:
        return (eta1, eta2), False
    # The new value carries its moments: those of the updated nodes were
    # computed by the validity test, the others are unchanged.
    old = old_moments()
    moments = SideMoments(old.mean.copy(), old.second.copy(), old.var.copy(), old.logdet.copy())
    moments.mean[nodes], moments.second[nodes] = sub.mean, sub.second
    moments.var[nodes], moments.logdet[nodes] = sub.var, sub.logdet
    return Factor((eta1, eta2), current.family, {"moments": moments}), True


def update_nodes(current, stats, ctx, alpha, rule, covariance, sequential, old_moments):
    """One step of the nodes of one side in ``stats``; the side's new value and validity.

    The engine gives every node its own ``N_i / C_i`` (``ctx.row_scale``)
    and step size (``ctx.row_rho``); the target's prior part is the side's
    current expected prior precision ``alpha``.  Without an update rule the
    nodes move by the engine's convex blend (:func:`skvi.engine.step.blend`),
    as in the engine's default update; what this adds to it is the
    compiled step, the moments carried by the new factor, and the diagonal
    family's coordinate-wise step from the full target.

    Parameters
    ----------
    current : Factor
        The side's natural parameters.
    stats : RowStatistics
        The nodes of the step and their statistics ``(h, P)``.
    ctx : StepContext
        The step.
    alpha : ndarray of shape (d,) or (d, d)
        The expected prior precision of the side.
    rule : UpdateRule or None
        The nodes' update rule; None for the natural-gradient blend.
    covariance : {'full', 'diagonal'}
        The nodes' variational family.
    sequential : bool
        Gauss-Seidel order of the diagonal family's coordinates.
    old_moments : callable
        Returns the moments of every node of ``current``.

    Returns
    -------
    new : Factor or tuple
        The side's new value.
    valid : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import Factor, RowStatistics, StepContext
    >>> from skvi.models.matrix_factorization.updates import update_nodes
    >>> ctx = StepContext(online=False, t=1, rho=1.0, backoff=1.0, scale=1.0, prior={})
    >>> ctx.row_scale, ctx.row_rho = np.ones(1), np.ones(1)
    >>> stats = RowStatistics(np.array([0]), (np.array([[3.0]]), np.array([[[2.0]]])),
    ...                       np.ones(1))
    >>> current = Factor((np.zeros((1, 1)), -0.5 * np.ones((1, 1, 1))))
    >>> new, valid = update_nodes(current, stats, ctx, np.ones(1), None, "full", True, None)
    >>> new[0], valid
    (array([[3.]]), True)
    """
    nodes = stats.rows
    h, P = stats.values
    rho_i = ctx.row_rho
    if all_rows(nodes, current[0].shape[0]):
        old1, old2 = current[0], current[1]  # read only: no gathered copy
    else:
        old1, old2 = current[0][nodes], current[1][nodes]
    if _gaussian_fast is not None and rule is None and covariance == "full" and ctx.grads is None:
        # The compiled step: target, blend and moments in one loop.
        new1, new2, sub = natural_step(alpha, old1, old2, h, P, ctx.row_scale, rho_i)
        return with_nodes(current, nodes, new1, new2, sub, old_moments)
    tgt1, tgt2 = node_target(alpha, h, P, 1.0, ctx.row_scale)
    if rule is not None:
        if covariance == "diagonal":
            tgt1, tgt2 = diagonal_target(tgt1, tgt2, old1 / (-2.0 * old2))
        (new1, new2), state = rule.step(
            (old1, old2), (tgt1, tgt2), rho_i, ctx.backoff, ctx.rule_state
        )
        ctx.keep_rule_state(state)
    elif covariance == "full" and np.all(rho_i == 1.0):
        new1, new2 = tgt1, tgt2  # coordinate ascent
    elif covariance == "full":
        new1, new2 = blend((old1, old2), (tgt1, tgt2), rho_i)
    else:
        new1, new2 = diagonal_update(old1, old2, tgt1, tgt2, rho_i, sequential)
    if ctx.grads is not None:
        ctx.grads.extend([tgt1 - old1, tgt2 - old2])
    sub = safe_moments(new1, new2, covariance)
    return with_nodes(current, nodes, new1, new2, sub, old_moments)


class NodeHooks:
    """The engine's hooks of :class:`~skvi.SVIMatrixFactorization`'s step.

    A part of the estimator: the statistics of every factor
    (``_expected_stats``), the update of the user and item nodes
    (``_update_factor``) and the step of the ordinal thresholds
    (``_update_hyperparameters``, from the ``_data_summary`` of a step).

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.updates import NodeHooks
    >>> issubclass(SVIMatrixFactorization, NodeHooks)
    True
    """

    def _expected_stats(self, name, data, prep, params):
        if name in SIDES:
            h, P, weight = self._node_stats(name, prep, params, rng=block_draws(prep, name))
            side = prep[name]
            return RowStatistics(side.nodes, (weight * h, weight * P), side.counts)
        if name in ("mean", "noise"):
            return self._strategy.scalar_stats(
                self, name, prep, params, rng=block_draws(prep, name)
            )
        # A prior precision: its children are the fitted nodes of its side.
        side = "users" if name == "user_precision" else "items"
        n, second, _ = self._fitted_sums(side, params)
        if self.factor_prior == "wishart":
            return (-0.5 * second, np.array(0.5 * n))
        return (-0.5 * np.diagonal(second).copy(), np.full(self._dim, 0.5 * n))

    def _node_stats(self, name, prep, params, rng=None):
        """Unscaled statistics ``(h, P, w)`` of the side's nodes in the batch.

        The target of node ``i`` is ``eta1 = w s_i h_i`` and precision
        ``alpha + w s_i P_i`` (``s_i = N_i / C_i``); see the strategies.
        """
        return self._strategy.node_stats(self, name, prep, params, rng=rng)

    def _node_target(self, name, h, P, weight, params, node_scale):
        """Natural parameters of ``prior + scale_i * stats_i`` (:func:`node_target`)."""
        return node_target(self._prior_precision(name, params), h, P, weight, node_scale)

    @property
    def _node_rule(self):
        """Update rule of the user and item nodes; None for the natural blend."""
        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = self._strategy.default_algorithm
        if algorithm == "mc-ssvi":
            return None
        return make_update_rule(algorithm, self.gradient_learning_rate)

    def _update_factor(self, name, current, stats, ctx):
        if name not in SIDES:
            return super()._update_factor(name, current, stats, ctx)
        return update_nodes(
            current,
            stats,
            ctx,
            self._prior_precision(name, ctx.params),
            self._node_rule,
            self.covariance,
            getattr(self, "update_order", "sequential") == "sequential",
            lambda: self._moments(name, {name: current}),
        )

    def _update_hyperparameters(self, hyper, ctx):
        """Learn the ordinal thresholds after each accepted step (the prior is unchanged)."""
        if hyper is None:
            return False
        self._strategy.update_thresholds(self, hyper, ctx.rho)
        return True  # the likelihood changed: the workers need the new thresholds
