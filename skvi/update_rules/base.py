"""The base class of the update rules and the helpers they share."""

import numpy as np


def _is_diagonal(eta1, eta2):
    return np.ndim(eta2) == np.ndim(eta1)


def _standard(eta1, eta2):
    """Mean, covariance and precision of Gaussians in natural parameters."""
    if _is_diagonal(eta1, eta2):
        precision = -2.0 * eta2
        return eta1 / precision, 1.0 / precision, precision
    precision = -(eta2 + np.swapaxes(eta2, -1, -2))
    chol = np.linalg.cholesky(precision)
    chol_inv = np.linalg.inv(chol)
    cov = np.swapaxes(chol_inv, -1, -2) @ chol_inv
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    mean = (cov @ eta1[..., None])[..., 0]
    return mean, cov, precision


def _natural(mean, precision, diagonal):
    if diagonal:
        return precision * mean, -0.5 * precision
    return (precision @ mean[..., None])[..., 0], -0.5 * precision


def _mean_gradient(g1, g2, mean, diagonal):
    """Ordinary gradient in the mean from the natural gradient ``(g1, g2)``."""
    if diagonal:
        return g1 + 2.0 * g2 * mean
    return g1 + 2.0 * (g2 @ mean[..., None])[..., 0]


def diagonal_target(tgt1, tgt2, mean):
    """Natural target of a fully factorised Gaussian from its full-covariance one.

    For ``q`` diagonal, coordinate ``k``'s natural-gradient target is the
    precision ``Lambda_kk`` and ``eta1_k - sum_{j != k} Lambda_kj m_j`` (``m``
    the current means, ``Lambda = -2 tgt2``): the Jacobi form of a
    coordinate-wise update.  Matrix factorization's diagonal nodes and the
    correlated topic model's diagonal documents take their steps towards it.

    Parameters
    ----------
    tgt1 : ndarray of shape (..., d)
        First natural parameter of the full target.
    tgt2 : ndarray of shape (..., d, d)
        Its second natural parameter, ``-Lambda / 2``.
    mean : ndarray of shape (..., d)
        The current means.

    Returns
    -------
    tgt1, tgt2 : ndarray of shape (..., d)
        The diagonal target's natural parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.update_rules import diagonal_target
    >>> precision = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> diagonal_target(np.array([1.0, 1.0]), -0.5 * precision, np.array([1.0, 2.0]))
    (array([0. , 0.5]), array([-1. , -0.5]))
    """
    prec = -2.0 * tgt2
    diag = np.diagonal(prec, axis1=-2, axis2=-1)
    coupling = (prec @ mean[..., None])[..., 0] - diag * mean
    return tgt1 - coupling, -0.5 * diag


def _per_factor(rho, array):
    """``rho`` broadcast against one natural component of a batch of factors.

    ``rho`` is a scalar or holds one step size per factor (the batch shape
    of the natural parameters); trailing axes are added to match ``array``.
    """
    rho = np.asarray(rho, dtype=float)
    if rho.ndim == 0:
        return rho
    return rho.reshape(rho.shape + (1,) * (np.ndim(array) - rho.ndim))


def _hold_unstepped(rho, current, new, old_state, new_state):
    """Factors of a batch whose step size is 0 keep their value and their rule state.

    A step size of 0 is no step.  A row group's row that no point of the
    minibatch reaches gets ``rho = 0``
    (:meth:`skvi.engine.rows.RowGroup.prepare`): the natural-gradient blend
    keeps it by itself, but an AdaGrad mean step would move it towards its
    prior (its target without data) and count the step in its
    accumulators.  A state that did not exist before the step is zero.
    """
    rho = np.asarray(rho)
    if not np.any(rho == 0):
        return new, new_state
    still = np.broadcast_to(rho == 0, np.shape(current[0])[: np.ndim(current[0]) - 1])

    def where(array):
        return still.reshape(still.shape + (1,) * (np.ndim(array) - still.ndim))

    new = tuple(np.where(where(n), c, n) for c, n in zip(current, new))
    kept = {}
    for key, value in new_state.items():
        old = None if old_state is None else old_state.get(key)
        kept[key] = np.where(where(value), 0.0 if old is None else old, value)
    return new, kept


def _adagrad(grad, accumulated, learning_rate, eps=1e-8):
    """One AdaGrad step; returns (step, new accumulator)."""
    accumulated = (0.0 if accumulated is None else accumulated) + grad * grad
    return learning_rate * grad / (np.sqrt(accumulated) + eps), accumulated


class UpdateRule:
    """Base class: how a Gaussian factor moves given its natural gradient.

    Subclasses implement :meth:`step`.  Rules are stateless objects; their
    per-factor state (AdaGrad accumulators) is passed in and returned, so the
    engine can discard it with a rejected step.

    Parameters
    ----------
    gradient_learning_rate : float, default=1.0
        Global learning rate of the AdaGrad steps (unused by
        :class:`NaturalGradient`).  The Monte Carlo structured SVI paper uses 1.0 throughout.

    Examples
    --------
    A unit natural-gradient step lands on the target:

    >>> import numpy as np
    >>> from skvi.update_rules import NaturalGradient
    >>> current = (np.zeros(2), -0.5 * np.eye(2))
    >>> target = (np.ones(2), -np.eye(2))
    >>> new, _ = NaturalGradient().step(current, target, 1.0, 1.0, None)
    >>> new[0], np.diag(new[1])
    (array([1., 1.]), array([-1., -1.]))
    """

    name = None

    def __init__(self, gradient_learning_rate=1.0):
        self.gradient_learning_rate = gradient_learning_rate

    def step(self, current, target, rho, backoff, state):
        """Move ``current`` towards ``target``.

        Parameters
        ----------
        current, target : tuple of ndarray
            Natural parameters ``(eta1, eta2)`` of a batch of Gaussians: the
            current ones and the engine's target ``prior + scale * stats``.
        rho : float or ndarray
            The natural-gradient step size (the schedule's value times the
            engine's step-safety backoff); an array gives one step size per
            factor of the batch (shape ``eta1.shape[:-1]``).  Every rule
            leaves a factor whose step size is 0 as it is, state included
            (a row group's row that the minibatch does not reach).
        backoff : float
            The engine's step-safety backoff factor in ``(0, 1]``; ordinary
            gradient steps are scaled by it, so a rejected step is retried
            smaller whatever the rule.
        state : dict or None
            This factor's state from the last accepted step.

        Returns
        -------
        new : tuple of ndarray
            The proposed natural parameters.
        state : dict or None
            The state to keep if the step is accepted.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def __repr__(self):
        return f"{type(self).__name__}(gradient_learning_rate={self.gradient_learning_rate!r})"
