"""The ordinal likelihood with a cumulative logit link."""

import numbers

import numpy as np
from scipy.special import expit

from .base import Likelihood, _log_sigmoid


class Ordinal(Likelihood):
    """Ordered categories ``y in {0, ..., K-1}`` with a cumulative logit link.

    ``p(y = k | f) = sigmoid(s (b_k - f)) - sigmoid(s (b_{k-1} - f))`` with
    thresholds ``b_0 < ... < b_{K-2}`` (``b_{-1} = -inf``,
    ``b_{K-1} = +inf``) and slope ``s``: the ordinal likelihood of the Monte Carlo structured SVI paper's
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
        return -(self.slope**2) * (expit(a) * expit(-a) + expit(c) * expit(-c))

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
