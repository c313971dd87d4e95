"""The base class of the likelihoods and the helpers they share."""

import numpy as np
from scipy.special import logsumexp
from sklearn.utils import check_random_state

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
