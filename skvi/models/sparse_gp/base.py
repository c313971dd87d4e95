"""What the sparse GPs share: the kernel, the inducing points and the whitened features."""

import numbers

import numpy as np
import scipy.linalg as sla
from sklearn.base import clone
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Kernel
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import ModelSettings, SVIEstimator
from ...expfam import MultivariateGaussian
from ...validation import check_feature_magnitude
from .._design import row_quadratic
from .._kernels import kernel_evaluator
from .hyperparameters import _Hyperparameters

#: Rows the k-means of the inducing points takes at most (a random sample of them).
_KMEANS_ROWS = 20_000
#: Relative jitters tried in turn on the diagonal of K_uu until it factorises
#: well (no pivot below MIN_PIVOT_RATIO of the largest, squared).
JITTERS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
#: A Cholesky factor whose squared smallest-to-largest pivot ratio is below
#: this is treated as failed: K_uu with condition number 1.5e16 factorised
#: without error, and the collapsed bound's finite differences were noise.
MIN_PIVOT_RATIO = 1e-12


class _SparseGP(_Hyperparameters, SVIEstimator):
    """What the sparse-GP estimators share: kernel, inducing points, whitened features.

    ``q(v)`` over the whitened inducing values is the one global factor;
    subclasses give the per-row objective (``_local_step``,
    ``_expected_stats``, ``_local_bound``) and, through ``_hyper_vector``,
    the hyperparameters besides the kernel's.
    """

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "n_inducing": [Interval(numbers.Integral, 1, None, closed="left")],
        "inducing_points": [None, "array-like"],
        "optimizer": [None, StrOptions({"fmin_l_bfgs_b"})],
        "hyperparameter_learning_rate": [Interval(numbers.Real, 0, None, closed="left")],
    }

    # -------------------------------------------------------------- features
    def _set_kernel(self, kernel, theta=None):
        """Adopt a kernel: it, its ``theta`` (read once: scikit-learn builds it anew each time)
        and the Cholesky factor of K_uu.

        ``theta`` is given for ``kernel_.clone_with_theta(theta)``: its bounds
        and evaluator are the current kernel's.
        """
        if theta is None:
            self._theta = kernel.theta
            self._kernel_bounds = np.reshape(kernel.bounds, (-1, 2))
            # The kernel as a function of theta (None for kernels _kernels
            # does not know): the features of every pass without
            # scikit-learn's per-call overhead.
            self._evaluator = kernel_evaluator(kernel)
        else:
            self._theta = np.array(theta, dtype=np.float64)
            if self._evaluator is not None:
                self._evaluator = self._evaluator.with_kernel(kernel)
        self.kernel_ = kernel
        Kuu = None
        if self._evaluator is not None:
            Kuu = self._evaluator(self._theta, self.inducing_points_)[0]
        self._chol, self.jitter_ = self._cholesky(kernel, with_jitter=True, Kuu=Kuu)

    def _cholesky(self, kernel, with_jitter=False, Kuu=None):
        """Cholesky factor of ``K_uu + j mean(diag K_uu) I`` with the smallest working ``j``.

        ``Kuu`` is the kernel's ``K_uu`` if already computed.
        """
        if Kuu is None:
            Kuu = kernel(self.inducing_points_)
        scale = max(float(np.mean(np.diag(Kuu))), 1e-300)
        for jitter in JITTERS:
            try:
                chol = np.linalg.cholesky(Kuu + jitter * scale * np.eye(Kuu.shape[0]))
            except np.linalg.LinAlgError:
                continue
            pivots = np.diag(chol)
            if (
                np.all(np.isfinite(chol))
                and np.min(pivots) > 0
                and (np.min(pivots) / np.max(pivots)) ** 2 > MIN_PIVOT_RATIO
            ):
                return (chol, jitter) if with_jitter else chol
        raise np.linalg.LinAlgError(
            "K_uu is not (well) positive definite even with a relative jitter of "
            f"{JITTERS[-1]}: are inducing points repeated?"
        )

    def _features(self, X, kernel=None, chol=None):
        """Whitened features ``phi = (L^-1 K_uX)^T`` and the prior variances ``k_ii``."""
        chol = self._chol if chol is None else chol
        evaluator = getattr(self, "_evaluator", None)
        if kernel is None and evaluator is not None:
            kxu = evaluator(self._theta, X, self.inducing_points_)[0]
            phi = sla.solve_triangular(chol, kxu.T, lower=True).T
            return phi, np.full(X.shape[0], evaluator.diag(self._theta)[0])
        kernel = self.kernel_ if kernel is None else kernel
        phi = sla.solve_triangular(chol, kernel(self.inducing_points_, X), lower=True).T
        return phi, kernel.diag(X)

    def _choose_inducing(self, data, random_state):
        X = data.X
        if self.inducing_points is not None:
            Z = np.asarray(self.inducing_points, dtype=np.float64)
            if Z.ndim != 2 or Z.shape[1] != X.shape[1]:
                raise ValueError(
                    f"inducing_points must have shape (n_inducing, {X.shape[1]}), got {Z.shape}."
                )
            if Z.shape[0] == 0:
                raise ValueError(
                    "inducing_points holds no points: pass at least one row, or None for "
                    "k-means centres of the data."
                )
            if not np.all(np.isfinite(Z)):
                raise ValueError("inducing_points must be finite (they hold NaN or infinity).")
            # Their squared distances to the rows must not overflow (K_uf
            # would be 0: the prior's predictions).
            check_feature_magnitude(Z, type(self).__name__, name="inducing_points")
            return Z.copy()
        weight = data.weight
        if weight is not None:  # rows of weight 0 are not data
            X, weight = X[weight > 0], weight[weight > 0]
        distinct = np.unique(X, axis=0)
        if distinct.shape[0] <= self.n_inducing:
            return distinct
        from sklearn.cluster import KMeans

        if X.shape[0] > _KMEANS_ROWS:
            rows = random_state.choice(X.shape[0], _KMEANS_ROWS, replace=False)
            X, weight = X[rows], None if weight is None else weight[rows]
        km = KMeans(self.n_inducing, n_init=1, random_state=random_state.randint(2**31 - 1))
        return km.fit(X, sample_weight=weight).cluster_centers_

    def _q_moments(self, params=None):
        """Mean and covariance of the whitened q(v); the covariance cached with the factor."""
        factor = (self.natural_params_ if params is None else params)["inducing"]
        return factor.distribution.loc, factor.cached(
            "covariance", lambda f: f.distribution.covariance
        )

    def _latent_moments(self, X):
        """Validated X's whitened features and the mean and variance of f under q."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        check_feature_magnitude(X, type(self).__name__)
        phi, kdiag = self._features(X)
        loc, cov = self._q_moments()
        var = kdiag - np.sum(phi * phi, axis=1) + row_quadratic(phi, cov)
        return X, phi, phi @ loc, np.maximum(var, 0.0)

    def _start(self, data, random_state, ctx=None):
        """The inducing points and a copy of the kernel for a new fit; how it steps."""
        # The engine takes batch steps in an online fit whose rows fit in one
        # minibatch (``batch_size >= n``): the step size is then 1 at every
        # pass, and the hyperparameters' gradient steps, sized for a
        # decaying schedule, went back and forth between two kernels for
        # ever.  Such a fit learns them as a batch fit does: the fit's
        # context says so.  A fit on a cluster and a stream (partial_fit)
        # follow learning_method.
        in_memory_fit = ctx is not None and not (ctx.partial or ctx.on_cluster)
        self._batch_steps = (
            ctx.only_batch_steps if in_memory_fit else self.learning_method == "batch"
        )
        self.inducing_points_ = self._choose_inducing(data, random_state)
        self._hyper_metric = None  # the batch hyperparameter steps' curvature (_warm_minimize)
        return clone(self.kernel) if self.kernel is not None else ConstantKernel() * RBF()

    # ----------------------------------------------------------- model hooks
    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        if vocabulary is not None:  # one block of a fit on a cluster
            if getattr(self, "objective", None) == "optimal":
                raise NotImplementedError(
                    "objective='optimal' factorises an N x N matrix of all the rows and does "
                    "not decompose over blocks: on a cluster use 'titsias', 'fitc' or "
                    "'predictive'."
                )
            if self.optimizer is not None and self.learning_method == "batch":
                raise NotImplementedError(
                    "A batch fit with optimizer='fmin_l_bfgs_b' fits the kernel by L-BFGS over "
                    "all the rows at its start, which a fit on a cluster does not gather: use "
                    "learning_method='online' (the kernel learned by steps), or fit the kernel "
                    "on a sample in memory and pass it with optimizer=None."
                )
            classes = vocabulary.get("classes")
        if partial and getattr(self, "objective", None) == "optimal":
            raise ValueError(
                "objective='optimal' does not decompose over rows: it has no partial_fit. "
                "Use 'titsias', 'fitc' or 'predictive' on a stream."
            )
        data = self._rows(X, y, reset, sample_weight, classes)
        if vocabulary is None and partial:  # each call's steps follow learning_method
            self._batch_steps = self.learning_method == "batch"
        return data

    def _hyperparameters_in_batch(self):
        """Whether the hyperparameters are learned as in a batch fit (see ``_start``)."""
        return getattr(self, "_batch_steps", self.learning_method == "batch")

    def _settings_for(self, **kwargs):
        # The inducing points' k-means of a fit on a cluster takes at most
        # _KMEANS_ROWS rows drawn over the blocks.
        return ModelSettings(
            {"inducing": MultivariateGaussian}, start_sample_size=_KMEANS_ROWS, **kwargs
        )

    def _prior_natural(self):
        m = self.inducing_points_.shape[0]
        return {"inducing": (np.zeros(m), -0.5 * np.eye(m))}

    def _global_bound(self, params):
        q = params["inducing"].distribution
        m = q.loc.size
        return float(-q.kl(MultivariateGaussian(np.zeros(m), np.eye(m))))

    def _on_params_updated(self):
        q = self.natural_params_["inducing"].distribution
        L = self._chol
        self.q_mean_ = L @ q.loc
        self.q_covariance_ = L @ q.covariance @ L.T
