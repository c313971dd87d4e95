"""Update rules for Gaussian global factors: the three algorithms of the Monte Carlo structured SVI paper.

The engine computes, for every global factor, the target
``lam_hat = eta_prior + (N / |S|) * stats`` and hands it to the factor's
update rule together with the current natural parameters ``lam``.  For a
Gaussian factor with mean ``m`` and covariance ``V`` the difference
``g = lam_hat - lam`` is the natural gradient of the ELBO and, because the
natural gradient in natural coordinates is the ordinary gradient in mean
coordinates ``(m, V + m m^T)``, it also gives the ordinary gradients in the
standard coordinates (Monte Carlo structured SVI, section 2.3)::

    dL/dV = g2                      (g2 is the second natural component)
    dL/dm = g1 + 2 g2 m

(:class:`SecantFixedPoint` serves a non-conjugate factor of another family,
such as a Rayleigh noise variance, whose fixed-point map needs damping.)

So one set of statistics serves all three rules:

``'mc-ssvi'`` (:class:`NaturalGradient`)
    ``lam <- lam + rho g``: natural-gradient (fixed-point) steps on both the
    mean and the covariance (Monte Carlo structured SVI, eqs. 24-25).  For a conjugate factor
    this is the usual SVI blend, and ``rho = 1`` is coordinate ascent.
``'h-mc-ssvi'`` (:class:`HybridGradient`)
    The covariance by the natural-gradient step (eq. 24), the mean by an
    ordinary gradient step with AdaGrad (eq. 63): the hybrid the paper
    finds best.
``'s-dsvi'`` (:class:`StandardGradient`)
    Ordinary gradient steps with AdaGrad on the mean and on the triangular
    factor ``C`` of the covariance (``V = C C^T``, eqs. 63-64):
    ``dL/dC = 2 triu(g2 C)`` for the Monte Carlo structured SVI paper's upper-triangular ``C``.

Every rule works on a batch of factors at once: full covariance (natural
parameters of shapes ``(..., d)`` and ``(..., d, d)``) or diagonal (both
``(..., d)``).  A rule keeps its AdaGrad accumulators in a small state that
the engine stores per factor and commits only when the step is accepted.
"""

import numbers

from sklearn.utils._param_validation import Interval, StrOptions

# The private helpers stay importable from the package, as from the module it replaced.
from .base import (  # noqa: F401
    UpdateRule,
    _adagrad,
    _is_diagonal,
    _mean_gradient,
    _natural,
    _per_factor,
    _standard,
    diagonal_target,
)
from .hybrid_gradient import HybridGradient
from .natural_gradient import NaturalGradient
from .secant import SecantFixedPoint
from .standard_gradient import StandardGradient

__all__ = [
    "UpdateRule",
    "diagonal_target",
    "NaturalGradient",
    "HybridGradient",
    "StandardGradient",
    "SecantFixedPoint",
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


_RULES = {cls.name: cls for cls in (NaturalGradient, HybridGradient, StandardGradient)}


def make_update_rule(algorithm, gradient_learning_rate=1.0):
    """The update rule object for an ``algorithm`` name.

    Parameters
    ----------
    algorithm : {'mc-ssvi', 'h-mc-ssvi', 's-dsvi'}
        Which of the three algorithms of the Monte Carlo structured SVI paper.
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
        raise ValueError(f"algorithm must be one of {sorted(_RULES)}, got {algorithm!r}.") from None
    return cls(gradient_learning_rate)
