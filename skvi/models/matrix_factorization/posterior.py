"""The posterior of the user and item nodes as the strategies and predictions read it.

:func:`moments_from_natural` and :func:`safe_moments` map the nodes'
natural parameters to their moments; :class:`NodePosterior` gives the
estimator the moments of its nodes under given parameters (cached by the
factor), the prior's for unknown or unrated ids, and the exact mean and
variance of each rating's linear predictor.  The likelihood strategies
(:mod:`~skvi.models.matrix_factorization.conjugate`,
:mod:`~skvi.models.matrix_factorization.nonconjugate`) read the model
through these methods.
"""

import numpy as np
from sklearn.utils import gen_batches

from ...engine import Factor
from ...expfam import MultivariateGaussian
from .nodes import SideMoments, moments_diag, moments_full, moments_full_numpy

try:  # the compiled kernel is optional (built when a C compiler exists)
    from . import _gaussian_fast
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_fast = None

__all__ = ["NodePosterior", "moments_from_natural", "safe_moments"]

#: Ratings per chunk when per-rating d x d products are formed (predict).
_CHUNK = 8192


def moments_from_natural(eta1, eta2, covariance):
    """Moments of nodes of the ``covariance`` family from their natural parameters.

    Parameters
    ----------
    eta1, eta2 : ndarray
        Natural parameters: shapes (n, d) and (n, d, d) for ``'full'``,
        (n, d) and (n, d) for ``'diagonal'``.
    covariance : {'full', 'diagonal'}
        The nodes' variational family.

    Returns
    -------
    moments : SideMoments

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.posterior import moments_from_natural
    >>> m = moments_from_natural(np.array([[2.0]]), np.array([[-1.0]]), "diagonal")
    >>> m.mean, m.var
    (array([[1.]]), array([[0.5]]))
    """
    if covariance == "full":
        return moments_full(eta1, eta2)
    return moments_diag(eta1, eta2)


def safe_moments(eta1, eta2, covariance):
    """Moments of nodes, or None when one is not a valid Gaussian.

    Parameters
    ----------
    eta1, eta2 : ndarray
        Natural parameters of the nodes (see :func:`moments_from_natural`).
    covariance : {'full', 'diagonal'}
        The nodes' variational family.

    Returns
    -------
    moments : SideMoments or None

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.posterior import safe_moments
    >>> safe_moments(np.array([[2.0]]), np.array([[1.0]]), "diagonal") is None
    True
    """
    if not (np.all(np.isfinite(eta1)) and np.all(np.isfinite(eta2))):
        return None
    if covariance == "diagonal":
        if not np.all(eta2 < 0):
            return None
        return moments_diag(eta1, eta2)
    if _gaussian_fast is None:
        if not np.all(MultivariateGaussian.valid_natural(eta1, eta2)):
            return None
        return moments_full_numpy(eta1, eta2)
    moments = moments_full(eta1, eta2)
    if not np.all(np.isfinite(moments.logdet)):
        return None
    return moments


class NodePosterior:
    """The moments of :class:`~skvi.SVIMatrixFactorization`'s nodes and predictors.

    A part of the estimator: its methods read ``covariance``,
    ``n_components``, the engine's row counters and the prior precision
    (:class:`~skvi.models.matrix_factorization.priors.PriorHooks`).

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.posterior import NodePosterior
    >>> issubclass(SVIMatrixFactorization, NodePosterior)
    True
    """

    def _factor_of(self, name, natural):
        """``natural`` as a :class:`~skvi.engine.Factor` (a plain tuple is wrapped)."""
        if isinstance(natural, Factor):
            return natural
        return Factor(natural, self._factor_families.get(name))

    def _moments(self, name, params):
        """Moments of every node of side ``name`` under ``params`` (cached by the factor)."""
        factor = self._factor_of(name, params[name])
        return factor.cached("moments", lambda f: moments_from_natural(*f, self.covariance))

    def _known(self, name, params, nodes):
        """Mask of the ``nodes`` that are fitted and rated (the others take the prior)."""
        n_fitted = params[name][0].shape[0]
        counts = self._row_totals(name)
        known = (nodes >= 0) & (nodes < n_fitted)
        inside = known & (nodes < counts.shape[0])
        known[inside] &= counts[nodes[inside]] > 0
        return known

    def _node_moments(self, name, params, nodes):
        """Moments of the given nodes; unknown ids (-1) and unrated rows get the prior."""
        known = self._known(name, params, nodes)
        moments = self._moments(name, params)
        if np.all(known):
            n = moments.mean.shape[0]
            if nodes.shape[0] == n and np.array_equal(nodes, np.arange(n)):
                return moments  # every node, in order: no copy
            return moments.take(nodes)
        d = self._dim
        out = SideMoments(
            np.zeros((nodes.shape[0], d)),
            np.zeros((nodes.shape[0], d, d)),
            np.zeros((nodes.shape[0], d)),
            np.zeros(nodes.shape[0]),
        )
        idx = np.flatnonzero(known)
        sub = moments.take(nodes[idx])
        out.mean[idx], out.second[idx], out.var[idx] = sub.mean, sub.second, sub.var
        alpha = self._prior_precision(name, params)
        cov = np.linalg.inv(alpha) if alpha.ndim == 2 else np.diag(1.0 / alpha)
        unknown = np.flatnonzero(~known)
        out.var[unknown] = np.diagonal(cov)
        out.second[unknown] = cov
        return out

    def _partner_moments(self, name, params, nodes):
        """Moments holding the given nodes of side ``name``, and each node's row in them.

        When every node is fitted and rated: the side's moments of all its
        nodes (cached by the factor, no copy) and ``nodes``; otherwise
        :meth:`_node_moments` of the nodes (unknown and unrated ones at the
        prior) and None.
        """
        n_fitted = params[name][0].shape[0]
        counts = self._row_totals(name)
        if (
            nodes.size
            and nodes[0] >= 0
            and nodes[-1] < min(n_fitted, counts.shape[0])
            and np.all(counts[nodes] > 0)
        ):
            return self._moments(name, params), nodes
        return self._node_moments(name, params, nodes), None

    def _fitted(self, name):
        """Mask of the nodes of side ``name`` updated from ratings so far.

        They are the children of the prior precisions.  The others, nodes
        without ratings and (online) nodes not yet visited, are integrated
        out: the ratings say nothing about them, and a node still at its
        random start would pass its small initial covariance to the
        precisions.  The nodes being updated in the current step count.
        """
        return self._row_steps(name) > 0

    def _fitted_sums(self, name, params):
        """Count, sum of ``E[w w^T]`` and of ``log|precision|`` over the
        fitted nodes of side ``name`` (see :meth:`_fitted`)."""
        mom = self._moments(name, params)
        weight = self._fitted(name).astype(np.float64)
        d = self._dim
        second = (weight @ mom.second.reshape(-1, d * d)).reshape(d, d)
        return float(np.sum(weight)), second, float(weight @ mom.logdet)

    def _global_mean(self, params):
        """E[mu] and Var[mu]."""
        q = params["mean"].distribution
        return float(q.loc), float(1.0 / q.precision)

    def _f_moments(self, users, items, params):
        """Exact posterior mean and variance of ``f = mu + u.v + b + c``."""
        mu, var_mu = self._global_mean(params)
        n = users.shape[0]
        mean = np.empty(n)
        var = np.empty(n)
        k = self.n_components
        if (
            _gaussian_fast is not None
            and np.all(self._known("users", params, users))
            and np.all(self._known("items", params, items))
        ):
            # The compiled loop reads each pair's moments in place: the
            # gathered d x d copies below were most of a binary fit's time.
            w, y = self._moments("users", params), self._moments("items", params)
            c64 = np.ascontiguousarray
            _gaussian_fast.rating_moments(
                c64(users, dtype=np.int64),
                c64(items, dtype=np.int64),
                c64(w.mean, dtype=np.float64),
                c64(w.second, dtype=np.float64),
                c64(y.mean, dtype=np.float64),
                c64(y.second, dtype=np.float64),
                mean,
                var,
            )
            return mean + mu, var + var_mu
        for chunk in gen_batches(n, _CHUNK):
            w = self._node_moments("users", params, users[chunk])
            y = self._node_moments("items", params, items[chunk])
            # g = u.v + b + c; w = (u, b), y = (v, c).
            e_g = np.sum(w.mean[:, :k] * y.mean[:, :k], axis=1) + w.mean[:, k] + y.mean[:, k]
            e_uv2 = np.einsum("nij,nij->n", w.second[:, :k, :k], y.second[:, :k, :k])
            e_b2 = w.second[:, k, k]
            e_c2 = y.second[:, k, k]
            # Cross terms: E[(u.v) b] = E[u b] . E[v], E[(u.v) c] = E[u] . E[v c].
            e_uvb = np.sum(w.second[:, :k, k] * y.mean[:, :k], axis=1)
            e_uvc = np.sum(w.mean[:, :k] * y.second[:, :k, k], axis=1)
            e_bc = w.mean[:, k] * y.mean[:, k]
            e_g2 = e_uv2 + e_b2 + e_c2 + 2.0 * (e_uvb + e_uvc + e_bc)
            mean[chunk] = mu + e_g
            var[chunk] = var_mu + np.maximum(e_g2 - e_g * e_g, 0.0)
        return mean, var
