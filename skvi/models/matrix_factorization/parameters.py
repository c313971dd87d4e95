"""The parameters of matrix factorization: their constraints, defaults and checks.

What the estimator's parameters allow (:data:`PARAMETER_CONSTRAINTS`, read
by scikit-learn's validation), the defaults of the precision priors, the
checks that need more than one parameter, and what a ``likelihood``
parameter says about the model.  Plain functions of the parameters' values:
none reads or writes an estimator.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ...likelihoods import Bernoulli, Likelihood, Ordinal
from ...update_rules import ALGORITHMS, UPDATE_RULE_PARAMETER_CONSTRAINTS

__all__ = [
    "GAMMA_PRIOR",
    "PARAMETER_CONSTRAINTS",
    "WISHART_RATE",
    "check_bool",
    "check_cluster_fit",
    "check_prior_params",
    "has_proba",
    "is_conjugate",
    "is_ordinal",
]

#: ``(a0, b0)`` of the Gamma priors of ``precision_prior=None``: the noise
#: precision and ARD's per-component precisions (vague).
GAMMA_PRIOR = (1e-3, 1e-3)
#: ``b0`` of the Wishart prior of ``precision_prior=None`` (``a0`` is
#: :data:`GAMMA_PRIOR`'s).  In a direction the ratings do not use, coordinate
#: ascent multiplies the prior precision by about ``(df + n) / n`` a pass
#: (``n`` users or items) until it reaches ``df / (2 b0)``: with ``b0 =
#: 1e-3`` a fit with more components than the ratings need climbs for
#: hundreds of passes; this rate ends the climb within ``max_iter`` at
#: nearly the same test error (docs/matrix_factorization_benchmark.md, "The
#: Wishart prior on every task").
WISHART_RATE = 0.05

#: scikit-learn's constraints on the model's own parameters (the engine's
#: are added by :class:`~skvi.engine.SVIEstimator`).
PARAMETER_CONSTRAINTS = {
    "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
    "covariance": [StrOptions({"full", "diagonal"})],
    "noise_precision": [None, Interval(numbers.Real, 0, None, closed="neither")],
    # Online and non-Gaussian fits start the nodes at the prior: a
    # variance beyond 1e100 makes E[(u . v)^2] overflow (an ELBO of -inf,
    # infinite standard deviations, from 1e-160 on).
    "factor_precision": [None, Interval(numbers.Real, 1e-100, None, closed="left")],
    "factor_prior": [StrOptions({"ard", "wishart"})],
    "precision_prior": [None, tuple, list],
    "mean_prior": [numbers.Real],
    "mean_precision_prior": [Interval(numbers.Real, 0, None, closed="neither")],
    "init_scale": [Interval(numbers.Real, 0, None, closed="left")],
    "children_per_node": [None, Interval(numbers.Integral, 1, None, closed="left")],
    "likelihood": [
        StrOptions({"gaussian", "bernoulli", "poisson", "poisson-softplus", "ordinal"}),
        Likelihood,
    ],
    "algorithm": [StrOptions({"auto", *ALGORITHMS})],
    "gradient_learning_rate": UPDATE_RULE_PARAMETER_CONSTRAINTS["gradient_learning_rate"],
    "expectation": [StrOptions({"auto", "gaussian", "mc", "quadrature"})],
    "n_mc_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "learn_thresholds": ["boolean"],
}


def check_prior_params(precision_prior, mean_prior, init_scale):
    """The ``(a0, b0)`` of the Gamma priors and of the Wishart, once the values are checked.

    Parameters
    ----------
    precision_prior : tuple of (float, float) or None
        The estimator's ``precision_prior``; None for the defaults
        (:data:`GAMMA_PRIOR`, and :data:`WISHART_RATE` as the Wishart's ``b0``).
    mean_prior : float
        The prior mean of the global mean, which must be finite.
    init_scale : float
        The scale of the initial factor means, whose fourth power and its
        inverse, times 1e16, must be finite.

    Returns
    -------
    gamma : tuple of (float, float)
        ``(a0, b0)`` of the noise's and ARD's Gamma priors.
    wishart : tuple of (float, float)
        ``(a0, b0)`` of the Wishart prior.

    Raises
    ------
    ValueError
        When a value cannot be used.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.parameters import check_prior_params
    >>> check_prior_params(None, 0.0, 0.1)
    ((0.001, 0.001), (0.001, 0.05))
    >>> check_prior_params((2, 3), 0.0, 0.1)
    ((2.0, 3.0), (2.0, 3.0))
    """
    explicit = precision_prior is not None
    prior = tuple(precision_prior) if explicit else GAMMA_PRIOR
    if len(prior) != 2 or not all(
        isinstance(v, numbers.Real) and np.isfinite(v) and v > 0 for v in prior
    ):
        raise ValueError(
            f"precision_prior must be two positive numbers (shape, rate); got {precision_prior!r}."
        )
    if not np.isfinite(mean_prior):
        raise ValueError(f"mean_prior must be finite; got {mean_prior!r}.")
    scale = np.float64(init_scale)
    with np.errstate(all="ignore"):
        fourth = (scale * scale) ** 2
        # 1e16 of room for the sums over ratings and components.
        usable = fourth > 0 and np.isfinite(1e16 * fourth) and np.isfinite(1e16 / fourth)
    if scale > 0 and not usable:
        # The tight start's precision is init_scale**-2, the nodes'
        # second moments init_scale**2, and a prediction's E[(u . v)^2]
        # init_scale**4 (init_scale=1e77 gave an ELBO of -inf and NaN
        # standard deviations): all must be finite numbers.
        raise ValueError(
            f"init_scale={init_scale!r} is too large or too small: its fourth power "
            "and the inverse of its fourth power, times 1e16, must be finite (the scale "
            "of the initial factor means, like the ratings')."
        )
    wishart = prior if explicit else (prior[0], WISHART_RATE)
    return (float(prior[0]), float(prior[1])), (float(wishart[0]), float(wishart[1]))


def is_conjugate(likelihood):
    """Whether ``likelihood`` is the closed-form Gaussian model (learned noise).

    Parameters
    ----------
    likelihood : str or Likelihood
        The estimator's ``likelihood``; an instance, even a Gaussian one,
        goes through the Monte Carlo updates.

    Returns
    -------
    conjugate : bool

    Examples
    --------
    >>> from skvi.models.matrix_factorization.parameters import is_conjugate
    >>> is_conjugate("gaussian"), is_conjugate("bernoulli")
    (True, False)
    """
    return isinstance(likelihood, str) and likelihood == "gaussian"


def is_ordinal(likelihood):
    """Whether ``likelihood`` is the ordinal (cumulative-logit) one.

    Parameters
    ----------
    likelihood : str or Likelihood
        The estimator's ``likelihood``.

    Returns
    -------
    ordinal : bool

    Examples
    --------
    >>> from skvi.likelihoods import Ordinal
    >>> from skvi.models.matrix_factorization.parameters import is_ordinal
    >>> is_ordinal("ordinal"), is_ordinal(Ordinal(n_categories=3)), is_ordinal("poisson")
    (True, True, False)
    """
    return (isinstance(likelihood, str) and likelihood == "ordinal") or isinstance(
        likelihood, Ordinal
    )


def has_proba(likelihood):
    """Whether ``likelihood`` is categorical, so that the model has ``predict_proba``.

    Parameters
    ----------
    likelihood : str or Likelihood
        The estimator's ``likelihood``.

    Returns
    -------
    categorical : bool

    Examples
    --------
    >>> from skvi.models.matrix_factorization.parameters import has_proba
    >>> has_proba("bernoulli"), has_proba("gaussian")
    (True, False)
    """
    return likelihood in ("bernoulli", "ordinal") or isinstance(likelihood, (Bernoulli, Ordinal))


def check_cluster_fit(learning_method, children_per_node, learn_thresholds, likelihood):
    """Refuse, naming the way out, what a fit on a cluster cannot do.

    Parameters
    ----------
    learning_method : {'batch', 'online'}
    children_per_node : int or None
    learn_thresholds : bool
    likelihood : str or Likelihood
        The estimator's parameters of these names.

    Raises
    ------
    NotImplementedError
        For Paquet's Alg. 1 (each node's ratings drawn from all of them)
        and for a batch fit that learns ordinal thresholds (from every
        rating at every step).

    Examples
    --------
    >>> from skvi.models.matrix_factorization.parameters import check_cluster_fit
    >>> check_cluster_fit("online", None, True, "ordinal")  # minibatches: allowed
    """
    if learning_method == "online" and children_per_node is not None:
        raise NotImplementedError(
            "children_per_node (Paquet's Alg. 1) draws each node's ratings from all "
            "of them, which a fit on a cluster does not gather: use minibatches "
            "(children_per_node=None) or learning_method='batch'."
        )
    if (
        learning_method == "batch"
        and learn_thresholds
        and not is_conjugate(likelihood)
        and is_ordinal(likelihood)
    ):
        raise NotImplementedError(
            "A batch fit learns the ordinal thresholds from every rating at every "
            "step, which a fit on a cluster does not gather: use "
            "learning_method='online' (the thresholds learned from each minibatch) "
            "or learn_thresholds=False."
        )


def check_bool(value, name):
    """``value`` as a bool, or a clear ValueError naming the argument.

    Parameters
    ----------
    value : object
        A flag (Python's or numpy's bool).
    name : str
        The argument's name, for the error.

    Returns
    -------
    flag : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.parameters import check_bool
    >>> check_bool(np.True_, "clip")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}.")
    return bool(value)
