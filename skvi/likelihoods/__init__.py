"""Observation models for non-conjugate latent Gaussian models ("Monte Carlo structured SVI for two-level non-conjugate models").

A likelihood ``p(y | f)`` is a small class with the log-density and its first
and second derivatives in the linear predictor ``f``.  The base class turns
them into what the Monte-Carlo structured SVI updates need: the expectations
``E_q[log p]``, ``E_q[d log p / df]`` and ``E_q[d^2 log p / df^2]`` under a
univariate Gaussian ``q(f) = N(mean, var)`` per observation, by Monte Carlo
(``method='mc'``, the paper's 10 samples) or by Gauss-Hermite quadrature
(``method='quadrature'``), and the predictive quantities (mean, log-density)
by quadrature.  Adding a likelihood is one subclass with ``logpdf``,
``dlogpdf``, ``d2logpdf`` and ``conditional_mean`` (and
``validate_targets``).  :class:`Softmax` is the one multi-output likelihood:
a K-vector ``f`` per observation with a K x K covariance.

All functions broadcast: ``y`` has shape ``(n,)`` and ``f`` shape ``(n,)``
or ``(n, s)`` (``s`` samples or quadrature nodes per observation).
"""

# The private helpers stay importable from the package, as from the module it replaced.
from .base import _EXPECTATION_METHODS, Likelihood, _hermite, _log_sigmoid  # noqa: F401
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .ordinal import Ordinal
from .poisson import Poisson
from .softmax import Softmax

__all__ = [
    "Likelihood",
    "Gaussian",
    "Bernoulli",
    "Poisson",
    "Ordinal",
    "Softmax",
    "get_likelihood",
]


_NAMES = {
    "gaussian": Gaussian,
    "bernoulli": Bernoulli,
    "poisson": Poisson,
    "poisson-softplus": lambda: Poisson(link="softplus"),
    "ordinal": Ordinal,
}


def get_likelihood(likelihood):
    """A :class:`Likelihood` from a name or an instance.

    Parameters
    ----------
    likelihood : str or Likelihood
        ``'gaussian'``, ``'bernoulli'``, ``'poisson'`` (exp link),
        ``'poisson-softplus'`` or ``'ordinal'`` (with default parameters), or
        an instance, returned as is.

    Returns
    -------
    Likelihood

    Examples
    --------
    >>> from skvi.likelihoods import get_likelihood
    >>> get_likelihood("poisson")
    Poisson(link='exp')
    """
    if isinstance(likelihood, Likelihood):
        return likelihood
    try:
        return _NAMES[likelihood]()
    except (KeyError, TypeError):
        raise ValueError(
            f"likelihood must be one of {sorted(_NAMES)} or a Likelihood instance, "
            f"got {likelihood!r}."
        ) from None
