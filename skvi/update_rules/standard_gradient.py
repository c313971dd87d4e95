"""S-DSVI: AdaGrad on the mean and the Cholesky factor of the covariance."""

import numpy as np

from .base import (
    UpdateRule,
    _adagrad,
    _hold_unstepped,
    _is_diagonal,
    _mean_gradient,
    _natural,
    _standard,
)


class StandardGradient(UpdateRule):
    """S-DSVI: AdaGrad on the mean and the Cholesky factor (Monte Carlo structured SVI, eqs. 63-64).

    With ``V = C C^T`` (``C`` upper triangular, as the Monte Carlo structured SVI paper's triu mask;
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
            # Cholesky factor L of the precision (as the Monte Carlo structured SVI paper's triu mask):
            # stable whenever the precision is, unlike a factorisation of V.
            eta1, eta2 = current
            precision = -(eta2 + np.swapaxes(eta2, -1, -2))
            chol = np.swapaxes(np.linalg.inv(np.linalg.cholesky(precision)), -1, -2)
            mean = (chol @ (np.swapaxes(chol, -1, -2) @ eta1[..., None]))[..., 0]
            g2 = 0.5 * (g2 + np.swapaxes(g2, -1, -2))
            grad_c = np.triu(2.0 * (g2 @ chol))
        grad_m = _mean_gradient(g1, g2, mean, diagonal)
        old_state = state
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
        return _hold_unstepped(rho, current, new, old_state, {"mean": acc_m, "chol": acc_c})
