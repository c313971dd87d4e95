"""Observation models for non-conjugate latent Gaussian models (seed 002).

A likelihood ``p(y | f)`` is a small class with the log-density and its first
and second derivatives in the linear predictor ``f``.  The base class turns
them into what the Monte-Carlo structured SVI updates need: the expectations
``E_q[log p]``, ``E_q[d log p / df]`` and ``E_q[d^2 log p / df^2]`` under a
univariate Gaussian ``q(f) = N(mean, var)`` per observation, by Monte Carlo
(``method='mc'``, the paper's 10 samples) or by Gauss-Hermite quadrature
(``method='quadrature'``), and the predictive quantities (mean, log-density)
by quadrature.  Adding a likelihood is one subclass with ``logpdf``,
``dlogpdf``, ``d2logpdf`` and ``conditional_mean`` (and
``validate_targets``).

All functions broadcast: ``y`` has shape ``(n,)`` and ``f`` shape ``(n,)``
or ``(n, s)`` (``s`` samples or quadrature nodes per observation).
"""

import numbers

import numpy as np
from scipy.special import expit, gammaln, logsumexp
from sklearn.utils import check_random_state

__all__ = [
    "Likelihood",
    "Gaussian",
    "Bernoulli",
    "Poisson",
    "Ordinal",
    "get_likelihood",
]

_EXPECTATION_METHODS = ("mc", "quadrature")


def _log_sigmoid(x):
    """``log(1 / (1 + exp(-x)))``, stable for large ``|x|`` and for +-inf."""
    return -np.logaddexp(0.0, -x)


def _hermite(n_points):
    """Gauss-Hermite nodes and weights for ``E_{N(0,1)}[g(z)]``."""
    x, w = np.polynomial.hermite.hermgauss(n_points)
    return np.sqrt(2.0) * x, w / np.sqrt(np.pi)


class Likelihood:
    """Base class of observation models ``p(y | f)``.

    Subclasses implement :meth:`logpdf`, :meth:`dlogpdf`, :meth:`d2logpdf`
    and :meth:`conditional_mean`; the expectations under a Gaussian ``q(f)``
    come from here.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Bernoulli
    >>> lik = Bernoulli()
    >>> e_log, e_d1, e_d2 = lik.expectations(np.array([1.0]), np.array([0.0]),
    ...                                      np.array([1.0]), method="quadrature")
    >>> round(float(e_d1[0]), 4)            # E[1 - sigmoid(f)] with f ~ N(0, 1)
    0.5
    """

    #: Whether the targets are discrete (classification-like).
    discrete = True

    def logpdf(self, y, f):
        """``log p(y | f)``, broadcasting ``y`` over trailing axes of ``f``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def dlogpdf(self, y, f):
        """``d log p(y | f) / df``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def d2logpdf(self, y, f):
        """``d^2 log p(y | f) / df^2``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def conditional_mean(self, f):
        """``E[y | f]``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def conditional_variance(self, f):
        """``Var[y | f]``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def validate_targets(self, y):
        """Check the targets; return them as a float array.

        Raises ``ValueError`` naming the problem for values outside the
        support.
        """
        y = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{type(self).__name__} likelihood: y contains NaN or inf.")
        return y

    # ----------------------------------------------------------- expectations
    def _nodes(self, mean, var, method, n_samples, random_state):
        """Points ``f`` of shape (n, s) and weights of shape (s,)."""
        mean = np.asarray(mean, dtype=float)
        sd = np.sqrt(np.maximum(np.asarray(var, dtype=float), 0.0))
        if method == "quadrature":
            z, w = _hermite(n_samples)
        elif method == "mc":
            rng = (
                random_state
                if isinstance(random_state, np.random.Generator)
                else check_random_state(random_state)
            )
            z = rng.standard_normal(mean.shape + (n_samples,))
            w = np.full(n_samples, 1.0 / n_samples)
        else:
            raise ValueError(
                f"method must be one of {_EXPECTATION_METHODS}, got {method!r}."
            )
        return mean[..., None] + sd[..., None] * z, w

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        """``E_q[log p]``, ``E_q[d log p/df]`` and ``E_q[d^2 log p/df^2]``.

        Parameters
        ----------
        y : ndarray of shape (n,)
            Observations.
        mean, var : ndarray of shape (n,)
            Mean and variance of the Gaussian ``q(f)`` of each observation.
        method : {'mc', 'quadrature'}, default='mc'
            Monte Carlo with ``n_samples`` draws per observation, or
            Gauss-Hermite quadrature with ``n_samples`` nodes.
        n_samples : int, default=10
            Draws or nodes.
        random_state : int, RandomState, Generator or None
            For ``method='mc'``.

        Returns
        -------
        e_log, e_d1, e_d2 : ndarray of shape (n,)
        """
        f, w = self._nodes(mean, var, method, n_samples, random_state)
        y = np.asarray(y, dtype=float)[..., None]
        return (
            self.logpdf(y, f) @ w,
            self.dlogpdf(y, f) @ w,
            self.d2logpdf(y, f) @ w,
        )

    def predictive_mean(self, mean, var, n_points=40):
        """``E[y]`` under ``f ~ N(mean, var)``, by Gauss-Hermite quadrature."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        return self.conditional_mean(f) @ w

    def predictive_variance(self, mean, var, n_points=40):
        """``Var[y]`` under ``f ~ N(mean, var)``: ``E[Var[y|f]] + Var[E[y|f]]``."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        cm = self.conditional_mean(f)
        first = cm @ w
        return self.conditional_variance(f) @ w + (cm * cm) @ w - first * first

    def predictive_logpdf(self, y, mean, var, n_points=40):
        """``log int p(y | f) N(f | mean, var) df`` by Gauss-Hermite quadrature."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        y = np.asarray(y, dtype=float)[..., None]
        return logsumexp(self.logpdf(y, f) + np.log(w), axis=-1)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self):
        return {}

    def __eq__(self, other):
        return type(self) is type(other) and all(
            np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(self._params().values(), other._params().values())
        )

    __hash__ = None


class Gaussian(Likelihood):
    """``y ~ N(f, noise_variance)``: the conjugate case.

    Its expectations are exact in closed form whatever ``method``:
    ``E[d log p/df] = (y - mean) / s2`` and ``E[d^2 log p/df^2] = -1 / s2``.

    Parameters
    ----------
    noise_variance : float, default=1.0

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Gaussian
    >>> Gaussian(0.5).expectations(np.array([1.0]), np.array([0.0]), np.array([1.0]))[2]
    array([-2.])
    """

    discrete = False

    def __init__(self, noise_variance=1.0):
        if not isinstance(noise_variance, numbers.Real) or not noise_variance > 0:
            raise ValueError(f"noise_variance must be positive, got {noise_variance!r}.")
        self.noise_variance = float(noise_variance)

    def _params(self):
        return {"noise_variance": self.noise_variance}

    def logpdf(self, y, f):
        s2 = self.noise_variance
        return -0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - f) ** 2 / s2

    def dlogpdf(self, y, f):
        return (y - f) / self.noise_variance

    def d2logpdf(self, y, f):
        return np.broadcast_to(-1.0 / self.noise_variance, np.broadcast_shapes(np.shape(y), np.shape(f)))

    def conditional_mean(self, f):
        return f

    def conditional_variance(self, f):
        return np.full_like(f, self.noise_variance)

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        y = np.asarray(y, dtype=float)
        s2 = self.noise_variance
        e_log = -0.5 * np.log(2 * np.pi * s2) - 0.5 * ((y - mean) ** 2 + var) / s2
        return e_log, (y - mean) / s2, np.full(np.shape(y), -1.0 / s2)

    def predictive_mean(self, mean, var, n_points=40):
        return np.asarray(mean, dtype=float)

    def predictive_variance(self, mean, var, n_points=40):
        return np.asarray(var, dtype=float) + self.noise_variance

    def predictive_logpdf(self, y, mean, var, n_points=40):
        total = np.asarray(var, dtype=float) + self.noise_variance
        return -0.5 * np.log(2 * np.pi * total) - 0.5 * (np.asarray(y) - mean) ** 2 / total


class Bernoulli(Likelihood):
    """``y in {0, 1}``, ``p(y = 1 | f) = sigmoid(f)`` (logistic regression).

    ``log p = y f - log(1 + e^f)``, ``d/df = y - sigmoid(f)``,
    ``d^2/df^2 = -sigmoid(f) (1 - sigmoid(f))``: log-concave, so every
    natural-gradient target precision is positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Bernoulli
    >>> float(np.exp(Bernoulli().logpdf(1.0, 0.0)))
    0.5
    """

    def logpdf(self, y, f):
        # log sigmoid(f) for y = 1 and log sigmoid(-f) for y = 0, each
        # computed without cancellation.
        return np.where(y == 1, _log_sigmoid(f), _log_sigmoid(-f))

    def dlogpdf(self, y, f):
        return y - expit(f)

    def d2logpdf(self, y, f):
        p = expit(f)
        return -p * (1.0 - p) + 0.0 * y

    def conditional_mean(self, f):
        return expit(f)

    def conditional_variance(self, f):
        p = expit(f)
        return p * (1.0 - p)

    def validate_targets(self, y):
        y = super().validate_targets(y)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("Bernoulli likelihood: y must contain only 0 and 1.")
        return y


class Poisson(Likelihood):
    """``y ~ Poisson(lambda(f))`` for counts ``y = 0, 1, 2, ...``.

    Parameters
    ----------
    link : {'exp', 'logistic'}, default='exp'
        ``lambda = exp(f)`` (the canonical link) or ``lambda = sigmoid(f)``,
        the bounded rate of seed 002's GME and count-PMF experiments.

    Notes
    -----
    Exp link: ``d/df = y - e^f``, ``d^2/df^2 = -e^f`` (log-concave).
    Logistic link, with ``s = sigmoid(f)``: ``d/df = (y - s)(1 - s)`` and
    ``d^2/df^2 = -s (1 - s) (1 + y - 2 s)``, which is positive for ``y = 0``
    and ``f > 0``: that likelihood is not log-concave, so a natural-gradient
    target precision can be indefinite; the engine's step safety rejects
    such a step.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Poisson
    >>> lik = Poisson()
    >>> round(float(lik.predictive_mean(np.array([0.0]), np.array([1.0]))[0]), 6)
    1.648721
    """

    def __init__(self, link="exp"):
        if link not in ("exp", "logistic"):
            raise ValueError(f"link must be 'exp' or 'logistic', got {link!r}.")
        self.link = link

    def _params(self):
        return {"link": self.link}

    def logpdf(self, y, f):
        if self.link == "exp":
            return y * f - np.exp(f) - gammaln(y + 1.0)
        return y * _log_sigmoid(f) - expit(f) - gammaln(y + 1.0)

    def dlogpdf(self, y, f):
        if self.link == "exp":
            return y - np.exp(f)
        s = expit(f)
        # d/df [y log s - s] = y (1 - s) - s (1 - s)
        return (y - s) * (1.0 - s)

    def d2logpdf(self, y, f):
        if self.link == "exp":
            return -np.exp(f) + 0.0 * y
        s = expit(f)
        return -s * (1.0 - s) * (1.0 + y - 2.0 * s)

    def conditional_mean(self, f):
        return np.exp(f) if self.link == "exp" else expit(f)

    def conditional_variance(self, f):
        return self.conditional_mean(f)

    def expectations(self, y, mean, var, method="mc", n_samples=10, random_state=None):
        if self.link == "exp" and method == "quadrature":
            # Exact: E[e^f] = exp(mean + var / 2).
            y = np.asarray(y, dtype=float)
            rate = np.exp(mean + 0.5 * np.asarray(var))
            return y * mean - rate - gammaln(y + 1.0), y - rate, -rate
        return super().expectations(y, mean, var, method, n_samples, random_state)

    def validate_targets(self, y):
        y = super().validate_targets(y)
        if np.any(y < 0) or np.any(y != np.round(y)):
            raise ValueError("Poisson likelihood: y must be non-negative integer counts.")
        return y


class Ordinal(Likelihood):
    """Ordered categories ``y in {0, ..., K-1}`` with a cumulative logit link.

    ``p(y = k | f) = sigmoid(s (b_k - f)) - sigmoid(s (b_{k-1} - f))`` with
    thresholds ``b_0 < ... < b_{K-2}`` (``b_{-1} = -inf``,
    ``b_{K-1} = +inf``) and slope ``s``: the ordinal likelihood of seed 002's
    PMF experiments.  With ``a = s (b_k - f)`` and ``c = s (b_{k-1} - f)``::

        log p       = log sigmoid(a) + log sigmoid(-c) + log(1 - exp(c - a))
        d log p/df  = s (sigmoid(c) - sigmoid(-a))
        d2 log p/df2 = -s^2 (sigmoid(a) sigmoid(-a) + sigmoid(c) sigmoid(-c))

    (the last term of ``log p`` does not depend on ``f``), so the likelihood
    is log-concave and every form is stable in the tails.

    Parameters
    ----------
    thresholds : array_like of shape (K-1,), default=None
        Increasing cut points; default ``0.5, 1.5, ..., K-1.5`` for
        ``n_categories=K``, so that ``f`` lives on the scale of the category
        index.
    n_categories : int, default=5
        ``K``; used only when ``thresholds`` is None.
    slope : float, default=1.0
        ``s``: larger means sharper category boundaries.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.likelihoods import Ordinal
    >>> lik = Ordinal(n_categories=3)
    >>> p = np.exp(lik.logpdf(np.arange(3.0), 1.0))
    >>> round(float(p.sum()), 12)
    1.0
    """

    def __init__(self, thresholds=None, n_categories=5, slope=1.0):
        if thresholds is None:
            if not isinstance(n_categories, numbers.Integral) or n_categories < 2:
                raise ValueError(f"n_categories must be an integer >= 2, got {n_categories!r}.")
            thresholds = np.arange(n_categories - 1) + 0.5
        thresholds = np.asarray(thresholds, dtype=float).ravel()
        if thresholds.size < 1 or not np.all(np.isfinite(thresholds)):
            raise ValueError("thresholds must be a non-empty array of finite numbers.")
        if np.any(np.diff(thresholds) <= 0):
            raise ValueError("thresholds must be strictly increasing.")
        if not isinstance(slope, numbers.Real) or not slope > 0:
            raise ValueError(f"slope must be positive, got {slope!r}.")
        self.thresholds = thresholds
        self.slope = float(slope)

    def _params(self):
        return {"thresholds": self.thresholds, "slope": self.slope}

    @property
    def n_categories(self):
        """Number of categories ``K``."""
        return self.thresholds.size + 1

    def _cuts(self, y, f):
        k = np.asarray(y).astype(np.intp)
        edges = np.concatenate(([-np.inf], self.thresholds, [np.inf]))
        a = self.slope * (edges[k + 1] - f)
        c = self.slope * (edges[k] - f)
        return a, c

    def logpdf(self, y, f):
        a, c = self._cuts(y, f)
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isinf(c) | np.isinf(a), 0.0, np.log(-np.expm1(c - a)))
        return _log_sigmoid(a) + _log_sigmoid(-c) + gap

    def dlogpdf(self, y, f):
        a, c = self._cuts(y, f)
        return self.slope * (expit(c) - expit(-a))

    def d2logpdf(self, y, f):
        a, c = self._cuts(y, f)
        return -self.slope**2 * (expit(a) * expit(-a) + expit(c) * expit(-c))

    def dlogpdf_dthresholds(self, y, f):
        """``d log p(y | f) / d b_j`` for every threshold ``b_j``.

        Only the two thresholds around category ``y`` enter ``p(y | f)``:
        ``d/db_y = s sigmoid(-a) / (sigmoid(-c) (1 - exp(c - a)))`` and
        ``d/db_{y-1} = -s sigmoid(c) / (sigmoid(a) (1 - exp(c - a)))``.

        Returns
        -------
        ndarray of shape ``broadcast(y, f).shape + (K-1,)``

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.likelihoods import Ordinal
        >>> lik = Ordinal(thresholds=[0.0, 1.0])
        >>> g = lik.dlogpdf_dthresholds(np.array(1.0), np.array(0.5))
        >>> eps = 1e-6
        >>> up = Ordinal(thresholds=[0.0, 1.0 + eps]).logpdf(1.0, 0.5)
        >>> bool(np.isclose(g[1], (up - lik.logpdf(1.0, 0.5)) / eps, rtol=1e-4))
        True
        """
        a, c = self._cuts(y, f)
        k = np.broadcast_to(np.asarray(y).astype(np.intp), a.shape)
        upper, lower = self._threshold_terms(a, c)
        j = np.arange(self.thresholds.size)
        return (j == k[..., None]) * upper[..., None] + (j == (k - 1)[..., None]) * lower[..., None]

    def _threshold_terms(self, a, c):
        """``d log p / d b_y`` and ``d log p / d b_{y-1}`` from the cuts ``a``, ``c``."""
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = -np.expm1(c - a)
            upper = self.slope * expit(-a) / (expit(-c) * gap)
            lower = -self.slope * expit(c) / (expit(a) * gap)
        # An infinite cut (the first or last category) has no threshold.
        return np.where(np.isfinite(upper), upper, 0.0), np.where(np.isfinite(lower), lower, 0.0)

    def threshold_objective(self, y, f, weights):
        """``sum_n sum_s w_s log p(y_n | f_ns)`` and its gradient in the thresholds.

        The same numbers as :meth:`logpdf` and :meth:`dlogpdf_dthresholds`
        contracted with ``weights``, summed per threshold with ``bincount``
        instead of a one-hot array: the cost of fitting the thresholds to
        many ratings.

        Parameters
        ----------
        y : ndarray of shape (n,)
            Category indices.
        f : ndarray of shape (n, s)
            Points (e.g. Gauss-Hermite nodes) of each linear predictor.
        weights : ndarray of shape (s,)

        Returns
        -------
        value : float
        gradient : ndarray of shape (K-1,)

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.likelihoods import Ordinal
        >>> lik = Ordinal(thresholds=[0.0, 1.0])
        >>> y, f, w = np.array([0.0, 1.0, 2.0]), np.array([[0.2], [0.4], [1.5]]), np.ones(1)
        >>> value, grad = lik.threshold_objective(y, f, w)
        >>> full = np.einsum("nsk,s->k", lik.dlogpdf_dthresholds(y[:, None], f), w)
        >>> bool(np.allclose(grad, full))
        True
        """
        k = np.asarray(y).astype(np.intp)
        value = float(np.sum(self.logpdf(k[:, None], f) @ weights))
        a, c = self._cuts(k[:, None], f)
        upper, lower = self._threshold_terms(a, c)
        upper, lower = upper @ weights, lower @ weights
        n_thresholds = self.thresholds.size
        grad = np.bincount(k, weights=upper, minlength=n_thresholds + 1)[:n_thresholds]
        grad += np.bincount(k, weights=lower, minlength=n_thresholds + 1)[1:]
        return value, grad

    def category_probabilities(self, f):
        """``p(y = k | f)`` for every ``k``: shape ``f.shape + (K,)``."""
        # exp(logpdf): the product form does not underflow in the tails as a
        # difference of two sigmoids near 1 would.
        f = np.asarray(f, dtype=float)[..., None]
        return np.exp(self.logpdf(np.arange(self.n_categories), f))

    def predictive_probabilities(self, mean, var, n_points=40):
        """``p(y = k)`` under ``f ~ N(mean, var)``: shape ``(n, K)``."""
        f, w = self._nodes(mean, var, "quadrature", n_points, None)
        return np.einsum("nsk,s->nk", self.category_probabilities(f), w)

    def conditional_mean(self, f):
        return self.category_probabilities(f) @ np.arange(self.n_categories, dtype=float)

    def conditional_variance(self, f):
        k = np.arange(self.n_categories, dtype=float)
        p = self.category_probabilities(f)
        mean = p @ k
        return p @ (k * k) - mean * mean

    def validate_targets(self, y):
        y = super().validate_targets(y)
        if np.any(y != np.round(y)) or np.any(y < 0) or np.any(y > self.n_categories - 1):
            raise ValueError(
                f"Ordinal likelihood: y must be integers in [0, {self.n_categories - 1}] "
                "(category indices)."
            )
        return y


_NAMES = {"gaussian": Gaussian, "bernoulli": Bernoulli, "poisson": Poisson, "ordinal": Ordinal}


def get_likelihood(likelihood):
    """A :class:`Likelihood` from a name or an instance.

    Parameters
    ----------
    likelihood : str or Likelihood
        ``'gaussian'``, ``'bernoulli'``, ``'poisson'`` or ``'ordinal'`` (with
        default parameters), or an instance, returned as is.

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
