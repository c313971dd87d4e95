"""Update rules for Gaussian global factors: the three algorithms of seed 002.

The engine computes, for every global factor, the target
``lam_hat = eta_prior + (N / |S|) * stats`` and hands it to the factor's
update rule together with the current natural parameters ``lam``.  For a
Gaussian factor with mean ``m`` and covariance ``V`` the difference
``g = lam_hat - lam`` is the natural gradient of the ELBO and, because the
natural gradient in natural coordinates is the ordinary gradient in mean
coordinates ``(m, V + m m^T)``, it also gives the ordinary gradients in the
standard coordinates (seed 002, section 2.3)::

    dL/dV = g2                      (g2 is the second natural component)
    dL/dm = g1 + 2 g2 m

So one set of statistics serves all three rules:

``'mc-ssvi'`` (:class:`NaturalGradient`)
    ``lam <- lam + rho g``: natural-gradient (fixed-point) steps on both the
    mean and the covariance (seed 002 eqs. 24-25).  For a conjugate factor
    this is the usual SVI blend, and ``rho = 1`` is coordinate ascent.
``'h-mc-ssvi'`` (:class:`HybridGradient`)
    The covariance by the natural-gradient step (eq. 24), the mean by an
    ordinary gradient step with AdaGrad (eq. 63): the hybrid the paper
    finds best.
``'s-dsvi'`` (:class:`StandardGradient`)
    Ordinary gradient steps with AdaGrad on the mean and on the triangular
    factor ``C`` of the covariance (``V = C C^T``, eqs. 63-64):
    ``dL/dC = 2 triu(g2 C)`` for seed 002's upper-triangular ``C``.

Every rule works on a batch of factors at once: full covariance (natural
parameters of shapes ``(..., d)`` and ``(..., d, d)``) or diagonal (both
``(..., d)``).  A rule keeps its AdaGrad accumulators in a small state that
the engine stores per factor and commits only when the step is accepted.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

__all__ = [
    "UpdateRule",
    "NaturalGradient",
    "HybridGradient",
    "StandardGradient",
    "make_update_rule",
    "ALGORITHMS",
    "UPDATE_RULE_PARAMETER_CONSTRAINTS",
]

#: The values of the estimators' ``algorithm`` hyperparameter.
ALGORITHMS = ("mc-ssvi", "h-mc-ssvi", "s-dsvi")

UPDATE_RULE_PARAMETER_CONSTRAINTS = {
    "algorithm": [StrOptions(set(ALGORITHMS))],
    "gradient_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
}


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


def _per_factor(rho, array):
    """``rho`` broadcast against one natural component of a batch of factors.

    ``rho`` is a scalar or holds one step size per factor (the batch shape
    of the natural parameters); trailing axes are added to match ``array``.
    """
    rho = np.asarray(rho, dtype=float)
    if rho.ndim == 0:
        return rho
    return rho.reshape(rho.shape + (1,) * (np.ndim(array) - rho.ndim))


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
        :class:`NaturalGradient`).  Seed 002 uses 1.0 throughout.

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
            factor of the batch (shape ``eta1.shape[:-1]``).
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


class NaturalGradient(UpdateRule):
    """MC-SSVI: natural-gradient steps on mean and covariance (seed 002 eqs. 24-25).

    ``lam <- lam + rho (lam_hat - lam)``.  In standard coordinates the mean
    moves by ``rho V_new dL/dm``: a Newton-like step preconditioned by the
    new covariance.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.update_rules import NaturalGradient
    >>> new, _ = NaturalGradient().step((np.zeros(1), -np.ones(1)),
    ...                                 (np.ones(1), -2 * np.ones(1)), 0.5, 1.0, None)
    >>> new
    (array([0.5]), array([-1.5]))
    """

    name = "mc-ssvi"

    def step(self, current, target, rho, backoff, state):
        # (1 - rho) c + rho t is exact at rho = 0 and rho = 1.
        return tuple(
            (1.0 - _per_factor(rho, c)) * c + _per_factor(rho, c) * t
            for c, t in zip(current, target)
        ), state


class HybridGradient(UpdateRule):
    """H-MC-SSVI: natural-gradient covariance, AdaGrad mean (seed 002, section 3.1).

    The precision blends as in :class:`NaturalGradient`; the mean takes an
    ordinary gradient step ``m <- m + lr * backoff * AdaGrad(dL/dm)``, with
    ``dL/dm`` evaluated at the current factor.

    Examples
    --------
    The covariance lands on the target with ``rho = 1``; the mean moves by
    ``gradient_learning_rate`` along the sign of the gradient on the first
    AdaGrad step:

    >>> import numpy as np
    >>> from skvi.update_rules import HybridGradient
    >>> rule = HybridGradient(gradient_learning_rate=0.1)
    >>> new, state = rule.step((np.zeros(1), -0.5 * np.ones(1)),
    ...                        (np.ones(1), -np.ones(1)), 1.0, 1.0, None)
    >>> precision = -2 * new[1]
    >>> precision, np.round(new[0] / precision, 6)
    (array([2.]), array([0.1]))
    """

    name = "h-mc-ssvi"

    def step(self, current, target, rho, backoff, state):
        diagonal = _is_diagonal(*current)
        if diagonal:
            mean = current[0] / (-2.0 * current[1])
        else:
            # Only the mean is needed: one batched solve, no inverse.
            old_precision = -(current[1] + np.swapaxes(current[1], -1, -2))
            mean = np.linalg.solve(old_precision, current[0][..., None])[..., 0]
        g1 = target[0] - current[0]
        g2 = target[1] - current[1]
        grad_m = _mean_gradient(g1, g2, mean, diagonal)
        eta2 = current[1] + _per_factor(rho, g2) * g2
        precision = -2.0 * eta2 if diagonal else -(eta2 + np.swapaxes(eta2, -1, -2))
        if not diagonal:
            eta2 = -0.5 * precision
        acc = None if state is None else state.get("mean")
        delta, acc = _adagrad(grad_m, acc, self.gradient_learning_rate * backoff)
        new = _natural(mean + delta, precision, diagonal)
        return new, {"mean": acc}


class StandardGradient(UpdateRule):
    """S-DSVI: AdaGrad on the mean and the Cholesky factor (seed 002 eqs. 63-64).

    With ``V = C C^T`` (``C`` upper triangular, as seed 002's triu mask;
    ``C = L^{-T}`` for the Cholesky factor ``L`` of the precision),
    ``dL/dC = 2 triu(g2 C)`` where ``g2 = dL/dV`` is the second component of
    the natural gradient;
    for a diagonal factor ``C = sqrt(V)`` and ``dL/dC = 2 g2 C``.  Every
    covariance it produces is positive semi-definite by construction.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.update_rules import StandardGradient
    >>> rule = StandardGradient(gradient_learning_rate=0.1)
    >>> new, state = rule.step((np.zeros(1), -0.5 * np.ones(1)),
    ...                        (np.ones(1), -np.ones(1)), 1.0, 1.0, None)
    >>> sd = np.sqrt(1 / (-2 * new[1]))     # the Cholesky factor shrank by 0.1
    >>> np.round(sd, 6), np.round(new[0] / (-2 * new[1]), 6)
    (array([0.9]), array([0.1]))
    """

    name = "s-dsvi"

    def step(self, current, target, rho, backoff, state):
        diagonal = _is_diagonal(*current)
        g1 = target[0] - current[0]
        g2 = target[1] - current[1]
        if diagonal:
            mean, cov, _ = _standard(*current)
            chol = np.sqrt(cov)
            grad_c = 2.0 * g2 * chol
        else:
            # The upper-triangular factor C = L^{-T} of V = C C^T, from the
            # Cholesky factor L of the precision (as seed 002's triu mask):
            # stable whenever the precision is, unlike a factorisation of V.
            eta1, eta2 = current
            precision = -(eta2 + np.swapaxes(eta2, -1, -2))
            chol = np.swapaxes(np.linalg.inv(np.linalg.cholesky(precision)), -1, -2)
            mean = (chol @ (np.swapaxes(chol, -1, -2) @ eta1[..., None]))[..., 0]
            g2 = 0.5 * (g2 + np.swapaxes(g2, -1, -2))
            grad_c = np.triu(2.0 * (g2 @ chol))
        grad_m = _mean_gradient(g1, g2, mean, diagonal)
        state = {} if state is None else state
        rate = self.gradient_learning_rate * backoff
        delta_m, acc_m = _adagrad(grad_m, state.get("mean"), rate)
        delta_c, acc_c = _adagrad(grad_c, state.get("chol"), rate)
        chol = chol + delta_c
        # A Cholesky diagonal that steps (nearly) through zero makes the
        # covariance singular: propose NaN, which the engine's step safety
        # rejects and retries with a smaller step.
        diag = np.abs(chol) if diagonal else np.abs(np.diagonal(chol, axis1=-2, axis2=-1))
        singular = np.min(diag, axis=-1) <= 1e-7 * np.max(diag, axis=-1)
        with np.errstate(all="ignore"):
            if diagonal:
                precision = 1.0 / (chol * chol)
            else:
                # Lambda = C^{-T} C^{-1}: symmetric positive definite whenever
                # C is non-singular (C is upper triangular).
                eye = np.broadcast_to(np.eye(chol.shape[-1]), chol.shape)
                chol_inv = np.linalg.solve(np.where(singular[..., None, None], eye, chol), eye)
                precision = np.swapaxes(chol_inv, -1, -2) @ chol_inv
        precision = np.where(
            singular[..., None, None] if not diagonal else singular[..., None], np.nan, precision
        )
        new = _natural(mean + delta_m, precision, diagonal)
        return new, {"mean": acc_m, "chol": acc_c}


_RULES = {cls.name: cls for cls in (NaturalGradient, HybridGradient, StandardGradient)}


def make_update_rule(algorithm, gradient_learning_rate=1.0):
    """The update rule object for an ``algorithm`` name.

    Parameters
    ----------
    algorithm : {'mc-ssvi', 'h-mc-ssvi', 's-dsvi'}
        Which of the three algorithms of seed 002.
    gradient_learning_rate : float, default=1.0
        AdaGrad's global learning rate for the ordinary-gradient parts.

    Returns
    -------
    UpdateRule

    Examples
    --------
    >>> from skvi.update_rules import make_update_rule
    >>> make_update_rule("h-mc-ssvi", 0.5)
    HybridGradient(gradient_learning_rate=0.5)
    """
    try:
        cls = _RULES[algorithm]
    except KeyError:
        raise ValueError(
            f"algorithm must be one of {sorted(_RULES)}, got {algorithm!r}."
        ) from None
    return cls(gradient_learning_rate)
