"""What matrix factorization tells the engine about itself, and what a fit leaves.

:class:`ModelStructure` holds the engine's ``_settings`` (the factors,
their families and order, the per-row groups, the convergence test) and
``_on_params_updated`` (the fitted attributes); :func:`alg1_passes` is
how far Paquet's Alg. 1 has shown the nodes their ratings.
"""

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ...engine import ModelSettings, RowGroupSpec
from ...expfam import Gamma, MultivariateGaussian, UnivariateGaussian, WishartByScale
from .nodes import SIDES

__all__ = ["ALG1_MIN_PASSES", "ModelStructure", "alg1_passes"]

#: Passes over its ratings that Paquet's Alg. 1 should give the median node
#: before fit stops without a warning.
ALG1_MIN_PASSES = 5.0


def alg1_passes(n_iter, children_per_node, totals):
    """How often ``n_iter`` iterations of Paquet's Alg. 1 have shown the median node its ratings.

    Parameters
    ----------
    n_iter : int
        Iterations so far; each shows a node at most ``children_per_node``
        of its ratings.
    children_per_node : int
        ``C``.
    totals : ndarray
        Each node's number of ratings ``N_i`` (users and items).

    Returns
    -------
    passes : float
        The median of ``n_iter * min(C, N_i) / N_i`` over the rated nodes
        (infinite when none is rated).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.structure import alg1_passes
    >>> alg1_passes(10, 2, np.array([4.0, 20.0, 40.0, 0.0]))
    1.0
    """
    totals = totals[totals > 0]
    if not totals.size:
        return np.inf
    seen = n_iter * np.minimum(children_per_node, totals)
    return float(np.median(seen / totals))


class ModelStructure:
    """The settings and fitted attributes of :class:`~skvi.SVIMatrixFactorization`.

    A part of the estimator: the engine's ``_settings`` and
    ``_on_params_updated``, and the convergence test of Paquet's Alg. 1.

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.structure import ModelStructure
    >>> issubclass(SVIMatrixFactorization, ModelStructure)
    True
    """

    @property
    def _settings(self):
        families = self._factor_families
        # The users and items are per-row groups; the prior precisions'
        # children are the nodes, all in memory.  The Monte Carlo
        # likelihoods redo their local step each step (it carries the step's
        # seed of their draws), and their fixed-point steps can jump
        # (MC-SSVI's means can overflow on the binary MovieLens task, see
        # docs/matrix_factorization_benchmark.md): batch steps are tested
        # on the probe too; the conjugate coordinate ascent never lowers the
        # ELBO.  Paquet's Alg. 1 (children_per_node) says itself when its
        # fit is far from converged.
        nodes = RowGroupSpec(
            ids=self._node_ids,
            grow=self._new_nodes,
            children=self.children_per_node if self.learning_method == "online" else None,
        )
        return ModelSettings(
            {name: families[name] for name in self._global_factors},
            row_groups={name: nodes for name in ("users", "items")},
            hierarchical=("user_precision", "item_precision"),
            update_rules={"users": self._node_rule, "items": self._node_rule},
            local_depends_on_globals=not self._conjugate,
            batch_steps="blend" if self._conjugate else "probe",
            convergence=self._converged,
            transient=("_prep",),
        )

    @property
    def _global_factors(self):
        # The scalars first: in online steps their statistics then come
        # from the minibatch before the nodes are fitted to it, an unbiased
        # (held-out) view of the residuals; fitted-to residuals are too
        # small and make tau overconfident.
        # The prior precisions last: a batch fit's first node update then
        # uses their initial value, not one fitted to the random initial
        # nodes (whose small covariances would make it large and shrink
        # every factor towards zero).
        names = ["mean", *self._strategy.scalar_factors(self), "users", "items"]
        if self.factor_precision is None:
            names += ["user_precision", "item_precision"]
        return tuple(names)

    @property
    def _factor_families(self):
        node = MultivariateGaussian if self.covariance == "full" else UnivariateGaussian
        precision = WishartByScale if self.factor_prior == "wishart" else Gamma
        return {
            "users": node,
            "items": node,
            "mean": UnivariateGaussian,
            "noise": Gamma,
            "user_precision": precision,
            "item_precision": precision,
        }

    def _alg1_passes(self):
        """How often Paquet's Alg. 1 has shown the median node its ratings (None otherwise)."""
        if self.learning_method != "online" or self.children_per_node is None:
            return None
        totals = np.concatenate([self._row_totals("users"), self._row_totals("items")])
        return alg1_passes(self.n_iter_, self.children_per_node, totals)

    def _converged(self, previous, bound):
        # Alg. 1's ELBO changes little per iteration when C is small: do not
        # stop before the median node has seen its ratings a few times.
        passes = self._alg1_passes()
        if passes is not None and passes < ALG1_MIN_PASSES:
            return False
        change = abs(bound - previous) / max(abs(previous), np.finfo(float).tiny)
        return change < self.tol

    def _warn_alg1(self):
        """Say when Paquet's Alg. 1 has not seen each node's ratings often enough.

        With ``C`` children per node an iteration shows each node at most
        ``C`` of its ``N_i`` ratings, so ``max_iter`` iterations with a small
        ``C`` can be less than one pass over the data: the means then stay
        far from the batch answer while every step is valid and the ELBO
        still climbs (docs/matrix_factorization_benchmark.md).
        """
        passes = self._alg1_passes()
        if passes is not None and passes < ALG1_MIN_PASSES:
            self._warn(
                f"{type(self).__name__}: after {self.n_iter_} Alg. 1 iterations with "
                f"children_per_node={self.children_per_node}, the median node has seen its "
                f"ratings {passes:.2g} times, so the fit is far from converged. Raise "
                "children_per_node or max_iter, or use minibatches (children_per_node=None).",
                ConvergenceWarning,
            )

    def _on_params_updated(self):
        self._prep = None
        if self.__dict__.get("_in_partial_fit") is False and self._alg1_passes() is not None:
            self._warn_alg1()
        params = self.natural_params_
        self.user_counts_ = self._row_totals("users").copy()
        self.item_counts_ = self._row_totals("items").copy()
        self.n_users_, self.n_items_ = self.user_counts_.shape[0], self.item_counts_.shape[0]
        k = self.n_components
        for name, side in SIDES.items():
            mom = self._node_moments(name, params, np.arange(params[name][0].shape[0]))
            cov = mom.second - mom.mean[..., :, None] * mom.mean[..., None, :]
            setattr(self, f"{side.prefix}_mean_", mom.mean)
            setattr(self, f"{side.prefix}_covariance_", cov)
            setattr(self, f"{side.prefix}_factors_", mom.mean[:, :k])
            setattr(self, f"{side.prefix}_bias_", mom.mean[:, k])
            setattr(self, f"{side.prefix}_precision_", self._prior_precision(name, params))
        self.global_mean_, self.global_mean_variance_ = self._global_mean(params)
        self.noise_precision_ = self._strategy.noise(self, params)[0] if self._conjugate else None
        if "noise" in params:
            q = params["noise"].distribution
            self.noise_shape_ = float(q.shape)
            self.noise_rate_ = float(q.rate)
