"""Non-Gaussian ratings without partner draws: each predictor taken as a Gaussian.

Under the mean-field posterior the linear predictor of a rating,
``f = mu + b + c + u . v``, has an exact mean and variance
(``SVIMatrixFactorization._f_moments``) but is not Gaussian (``u . v`` is a
product of Gaussians).  Monte Carlo structured SVI
(:mod:`~skvi.models.matrix_factorization.nonconjugate`) draws the partner
node so that ``f`` is Gaussian given the draw.  Here ``f`` is instead taken
as the Gaussian of its exact moments, ``N(m_f, v_f)``, and the expected
log-likelihood of each rating is that Gaussian's, by Gauss-Hermite
quadrature: no draws, the same approximation by which ``predict_proba``
integrates out ``f``.

A node's natural-gradient target under this objective is, rating by rating
(``d1 = E[l']``, ``d2 = E[l'']`` under ``N(m_f, v_f)``, ``x`` the partner's
``(v, 1)`` and ``c`` its bias)::

    Lambda_hat = Lambda_0 + sum_j tau_j E[x x^T],                 tau_j = -d2_j
    eta1_hat   = sum_j (d1_j + tau_j (m_f,j - E[mu])) E[x] - tau_j E[x c]

which is the Gaussian model's closed-form update for the pseudo-ratings
``rt_j = m_f,j + d1_j / tau_j`` of noise precision ``tau_j``: Newton's
working responses (IRLS), with the curvature averaged over ``f``.  So the
compiled Gaussian aggregation does the work, and a batch step with the
natural-gradient rule is coordinate ascent by closed-form updates at fixed
pseudo-ratings (the fixed-point iterations of Knowles and Minka,
"Non-conjugate variational message passing for multinomial and binary
regression").  The pseudo-ratings are recomputed at the start of every
step from the current posterior.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from ...likelihoods.base import _hermite
from .conjugate import GaussianRatings
from .nonconjugate import GLMRatings

__all__ = ["GAUSS_HERMITE_NODES", "MomentMatchedRatings"]

#: Gauss-Hermite nodes of the expectations under each ``N(m_f, v_f)``.
GAUSS_HERMITE_NODES = 10
#: Smallest curvature ``tau`` of a pseudo-rating (relative to the largest).
_TINY_CURVATURE = 1e-12

_GAUSSIAN = GaussianRatings()
_MONTE_CARLO = GLMRatings()


class MomentMatchedRatings(GLMRatings):
    """Strategy of :class:`~skvi.SVIMatrixFactorization` for ``expectation='gaussian'``.

    Every batch's ratings become Gaussian pseudo-ratings at the current
    posterior (:meth:`pseudo`), whose closed-form statistics the Gaussian
    strategy takes with unit noise precision.  Predictions, the probe loss
    of step safety, the start of ``mu`` and the ordinal thresholds are the
    Monte Carlo strategy's, which use the same Gaussian ``f``.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.moment_matched import MomentMatchedRatings
    >>> MomentMatchedRatings().default_algorithm
    'mc-ssvi'
    """

    #: The natural-gradient blend: at rho = 1 the closed-form update.
    default_algorithm = "mc-ssvi"
    closed_form = True

    def local_step(self, mf, data, params, draws=None):
        """The batch's index with its pseudo-ratings at ``params`` (a fit's rows indexed once)."""
        base = mf._prep_of(data) if mf._indexing_once else super().local_step(mf, data, params)
        return self.pseudo(mf, base, params)

    def pseudo(self, mf, prep, params):
        """``prep`` (an indexed batch) with its pseudo-ratings at ``params``.

        A dict like ``prep`` whose sides carry ``rt = m_f + d1 / tau`` as
        ratings and ``tau`` (times the rating's weight) as weights, with the
        weighted count and sums of the pseudo-ratings and ``e_log``, the
        weighted sum of the global side's ``E[log p(r | f)]``.  With
        ``params=None``, ``prep`` itself must be such a dict (a step's
        pseudo-ratings, kept for all its updates).  Cached in the indexed
        batch for the parameters it was computed at (the nodes' and the
        global mean's values).
        """
        if params is None:
            return prep
        base = prep.get("base", prep)
        # The ordinal thresholds are replaced, not changed in place, when learned.
        key = (
            params["users"],
            params["items"],
            params["mean"],
            getattr(mf.likelihood_, "thresholds", None),
        )
        hit = base.get("_pseudo")
        if hit is not None and all(a is b for a, b in zip(hit[0], key)):
            return hit[1]
        out = {k: base[k] for k in ("global_side", "same_sides", "data")}
        out["base"] = base
        done = None
        for name in ("users", "items"):
            side = base[name]
            if done is None or not base["same_sides"]:
                done = self._pseudo_ratings(mf, name, side, params)
            out[name] = side.reweighted(done[0], done[1])
            if name == base["global_side"]:
                rt, w, e_log = done
                out["n"] = float(np.sum(w))
                out["sum_r"] = float(np.dot(w, rt))
                out["sum_r2"] = float(np.dot(w * rt, rt))
                out["e_log"] = e_log
        base["_pseudo"] = (key, out)
        return out

    @staticmethod
    def _pseudo_ratings(mf, name, side, params):
        """Pseudo-ratings, their weights and ``sum E[log p]`` of one side's ratings."""
        nodes, partners = side.nodes[side.row], side.other_nodes[side.col]
        users, items = (nodes, partners) if name == "users" else (partners, nodes)
        m_f, v_f = mf._f_moments(users, items, params)
        z, w = _hermite(GAUSS_HERMITE_NODES)
        f = m_f[:, None] + np.sqrt(v_f)[:, None] * z
        value, d1, d2 = mf.likelihood_.logpdf_and_derivatives(side.ratings[:, None], f)
        e_log, d1, d2 = value @ w, d1 @ w, d2 @ w
        # A log-concave likelihood has tau > 0; the floor keeps rt finite
        # where the curvature vanishes (its weight then vanishes with it).
        tau = np.maximum(-d2, _TINY_CURVATURE * max(float(np.max(-d2, initial=0.0)), 1.0))
        rt = m_f + d1 / tau
        a = side.weights
        if a is None:
            return rt, tau, float(np.sum(e_log))
        return rt, a * tau, float(np.dot(a, e_log))

    def start_nodes(self, mf, data, params, random_state):
        """A batch fit's rated nodes start at the ratings' spectral factors.

        The factor means of the rated users and items are the rank-K
        truncated SVD of the sparse matrix of the centred (encoded)
        ratings, ``U sqrt(S)`` and ``V sqrt(S)`` (Keshavan, Montanari and
        Oh, "Matrix completion from a few entries"), their covariances the
        tight start's.  From random means, coordinate ascent can keep a
        component shrunk; from this start it did not in the fits of
        docs/matrix_factorization_benchmark.md.  Only when
        ``data`` holds every rating of the fit (not one block of a
        cluster's) and ``K`` is below the matrix's smaller side.
        """
        k = mf.n_components
        shape = (params["users"][0].shape[0], params["items"][0].shape[0])
        if k >= min(shape) or data.shape[0] != mf._rating_moments.n_rows:
            return params
        r = np.asarray(data.ratings, dtype=np.float64)
        w = np.ones_like(r) if data.weights is None else data.weights
        r = r - np.dot(w, r) / max(float(np.sum(w)), 1e-300)
        matrix = sp.csr_matrix((w * r, (data.users, data.items)), shape=shape)
        if min(shape) <= 4 * k + 20:
            u, sv, vt = np.linalg.svd(matrix.toarray(), full_matrices=False)
            u, sv, vt = u[:, :k], sv[:k], vt[:k]
        else:
            v0 = random_state.uniform(-1.0, 1.0, size=min(shape))
            u, sv, vt = svds(matrix, k=k, v0=v0)
        root = np.sqrt(np.maximum(sv, 0.0))
        # The directions, at the random start's scale: the ratings' own scale
        # is not the predictor's (Poisson counts' factors overflowed exp(f)).
        u, vt = u * root, vt * root[:, None]
        rms = np.sqrt(0.5 * (np.mean(u * u) + np.mean(vt * vt)))
        scale = mf.init_scale / rms if rms > 0 else 0.0
        out = dict(params)
        for name, factors in (("users", scale * u), ("items", scale * vt.T)):
            eta1, eta2 = params[name]
            rated = getattr(mf, "user_counts_" if name == "users" else "item_counts_") > 0
            precision = -2.0 * eta2
            if precision.ndim == 2:  # diagonal nodes: a precision per coordinate
                mean = eta1 / precision
                mean[rated, :k] = factors[rated]
                out[name] = (precision * mean, eta2)
            else:
                mean = np.linalg.solve(precision, eta1[..., None])[..., 0]
                mean[rated, :k] = factors[rated]
                out[name] = ((precision @ mean[..., None])[..., 0], eta2)
        return out

    # ---------------------------------------------------------- statistics
    def node_stats(self, mf, name, prep, params, rng=None):
        """``(h, P, 1)``: the Gaussian node statistics of the pseudo-ratings (unit noise).

        A step's pseudo-ratings (made by its local step, at the posterior
        as the step began) serve all its updates; others (a fold-in) are
        made at ``params``.
        """
        pseudo = self.pseudo(mf, prep, None if "base" in prep else params)
        agg = _GAUSSIAN.side_aggregates(mf, pseudo, name, params)
        mu, _ = mf._global_mean(params)
        return agg.rx - mu * agg.sx - agg.B, agg.A, 1.0

    def scalar_stats(self, mf, name, prep, params, rng=None):
        """The global mean's closed-form statistics from the pseudo-ratings."""
        pseudo = self.pseudo(mf, prep, None if "base" in prep else params)
        s_g, _, _ = _GAUSSIAN.prediction_sums(mf, pseudo, params)
        return (np.array(pseudo["sum_r"] - s_g), np.array(-0.5 * pseudo["n"]))

    def fold_in(self, mf, prep, params):
        """Means of new users by the Monte Carlo strategy's damped fixed point.

        With partner draws and Gauss-Hermite quadrature given each: the
        pseudo-ratings' fixed point oscillated without settling on nearly
        separable ratings (noise-free binary or ordinal ratings folded in
        up to 72 away from the fitted factors, the draws' 1.0).
        """
        return _MONTE_CARLO.fold_in(mf, prep, params)

    # ---------------------------------------------------------------- ELBO
    def local_bound(self, mf, prep, params):
        """``sum_j E[log p(r_j | f_j)]`` with ``f_j ~ N(m_f, v_f)`` at ``params`` (quadrature)."""
        return self.pseudo(mf, prep.get("base", prep), params)["e_log"]

    def hyperparameter_statistics(self, mf, prep):
        """The batch's real ratings (not its pseudo-ratings), for the ordinal thresholds."""
        return super().hyperparameter_statistics(mf, prep.get("base", prep))
