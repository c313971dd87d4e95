"""The sparse GPs' hyperparameters: their exact gradient, their steps and the collapsed L-BFGS.

``_Hyperparameters`` (every sparse GP) gives the gradient of the rows'
objective in the log hyperparameters with ``q`` fixed, carried back through
the whitening's Cholesky factor, and the batch (quasi-Newton with ``q``
fixed, warm-started across passes) and online (gradient) steps of the
engine's hyperparameter hooks.
``_CollapsedHyperparameters`` (the regressor) maximises the collapsed
objective over the kernel and the noise before ``q`` is fitted.
"""

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from .._design import row_quadratic
from .._kernels import cross_covariance, diagonal_gradient

_LOG_2PI = np.log(2.0 * np.pi)
#: Halvings of a quasi-Newton step that finds no decrease before the batch
#: hyperparameter step falls back on L-BFGS-B (``_Hyperparameters._quasi_newton``).
_HALVINGS = 10
#: Rows per block (at least the number of inducing points) when the kernel's
#: gradient is taken on ``[X_block; Z]`` for the hyperparameters' gradient.
HYPER_BLOCK = 256


def _cholesky_backward(chol, chol_inv, chol_bar):
    """Gradient in a symmetric ``A`` of a function of ``L = cholesky(A)``, given its gradient in ``L``.

    ``A_bar = sym(L^-T Phi(L^T L_bar) L^-1)``, ``Phi`` the lower triangle with
    the diagonal halved (Murray, "Differentiation of the Cholesky
    decomposition"); only ``L_bar``'s lower triangle counts.  ``chol_inv``
    is ``L^-1``.
    """
    middle = np.tril(chol.T @ np.tril(chol_bar))
    middle[np.diag_indices_from(middle)] *= 0.5
    outer = chol_inv.T @ middle @ chol_inv
    return 0.5 * (outer + outer.T)


def _bfgs_inverse_hessian(inverse, history):
    """BFGS updates of the inverse Hessian ``inverse`` (None: none yet) by consecutive pairs.

    ``history`` is the evaluations ``(p, gradient)`` in their order; a pair
    whose curvature ``s . y`` is not positive is skipped, and the first
    usable pair starts from the scaled identity ``(s . y / y . y) I``.
    """
    for (p0, g0), (p1, g1) in zip(history[:-1], history[1:]):
        step, change = p1 - p0, g1 - g0
        curvature = float(step @ change)
        if not (
            np.all(np.isfinite(change))
            and curvature > 1e-12 * np.linalg.norm(step) * np.linalg.norm(change)
        ):
            continue
        if inverse is None:
            inverse = curvature / float(change @ change) * np.eye(step.size)
        rho = 1.0 / curvature
        left = np.eye(step.size) - rho * np.outer(step, change)
        inverse = left @ inverse @ left.T + rho * np.outer(step, step)
    return inverse


class _Hyperparameters:
    """The hyperparameter hooks of :class:`_SparseGP`: gradients and steps."""

    def _hyper_vector(self):
        """The learned hyperparameters in log space: the kernel's theta (and more in subclasses)."""
        return self._theta.copy()

    def _hyper_bounds(self):
        # (0, 2) for a kernel with no free hyperparameter (scikit-learn's
        # bounds are then of shape (0,)).
        return self._kernel_bounds

    def _set_hyper_vector(self, params):
        theta = params[: self._theta.size]
        self._set_kernel(self.kernel_.clone_with_theta(theta), theta=theta)

    def _log_hyperprior(self, params):
        """Log density of the hyperparameters' prior at ``params`` (log space) and its gradient.

        Zero (a flat prior: type-II maximum likelihood) unless a subclass
        sets one; its value joins the objective the hyperparameters
        maximise, its gradient the online hyperparameter steps'.
        """
        return 0.0, np.zeros(np.size(params))

    def _row_partials(self, data, mean, s, c, extra, objective=None):
        """Each row's objective and its derivatives, given q and the hyperparameters.

        The objective of row ``i`` depends on the hyperparameters only
        through ``mean_i = phi_i . m``, ``s_i = phi_i^T V phi_i``,
        ``c_i = k_ii - |phi_i|^2`` and the subclass's own hyperparameters
        ``extra`` (log space).  Returns the values and their derivatives in
        ``mean``, ``s`` and ``c``, each of shape (n,), and in ``extra``, of
        shape (n, len(extra)).
        """
        raise NotImplementedError  # pragma: no cover - each estimator has its own

    def _data_term(self, data, params, q=None, gradient=False, objective=None, features=None):
        """The rows' objective with q fixed at the hyperparameters ``params``, and its gradient.

        ``q`` is ``(m, V)`` of the whitened ``q(v)`` (default: the current
        one).  Held fixed in the whitened coordinates, where the KL does not
        depend on the hyperparameters, the ELBO's gradient is this term's;
        at the optimal ``q`` of ``params`` it is also the gradient of the
        collapsed objective (the envelope theorem).  The gradient is exact:
        the rows' derivatives (``_row_partials``) carried back through
        ``phi = L^-1 K_uX`` and the Cholesky factor to ``K_uX``, ``K_uu`` and
        ``diag K_XX``, and contracted with the kernel's gradients.
        scikit-learn's kernels give gradients of ``K(X, X)`` only, so those of
        a block of rows are contracted on the fly (``_kernels.cross_covariance``)
        or, for other kernels, taken from ``K([X_block; Z])``, ``HYPER_BLOCK``
        rows (at least ``M``) per block.  ``objective`` is passed on to
        ``_row_partials`` (the regressor's hyperparameters for V2 are FITC's);
        ``features`` are the rows' ``phi`` at ``params`` if already known.
        """
        n_theta = self._theta.size
        extra = np.asarray(params[n_theta:], dtype=np.float64)
        Z = self.inducing_points_
        m = Z.shape[0]
        loc, cov = self._q_moments() if q is None else q
        # The kernel as a function of theta when it is built from the kernels
        # _kernels knows: no kernel object per evaluation of an optimiser.
        evaluator = self._evaluator if gradient else None
        theta = params[:n_theta]
        current = np.array_equal(theta, self._theta)
        kernel = None
        if evaluator is not None:
            Kuu, kuu_backward = evaluator(theta, Z)
        else:
            kernel = self.kernel_ if current else self.kernel_.clone_with_theta(theta)
            Kuu = None
        if current:
            chol, jitter = self._chol, self.jitter_
        else:
            chol, jitter = self._cholesky(kernel, with_jitter=True, Kuu=Kuu)
        if not gradient:
            phi, kdiag = self._features(data.X, kernel, chol)
            c = kdiag - np.sum(phi * phi, axis=1)
            value = self._row_partials(
                data, phi @ loc, row_quadratic(phi, cov), np.maximum(c, 0.0), extra, objective
            )[0]
            return float(np.sum(data.weighted(value)))
        value, grad = 0.0, np.zeros(params.size)
        chol_bar = np.zeros((m, m))
        # kxu_bar = phi_bar L^-1 with the explicit inverse: a product, not a
        # triangular solve (L's condition number is below 1e6, MIN_PIVOT_RATIO).
        chol_inv = sla.solve_triangular(chol, np.eye(m), lower=True)
        if evaluator is not None:
            diag_value, diag_grad = evaluator.diag(theta)
        else:
            diag_grad = diagonal_gradient(kernel, data.X)
        block = max(HYPER_BLOCK, m)
        for start in range(0, data.shape[0], block):
            part = data[start : start + block]
            nb = part.shape[0]
            if evaluator is not None:
                fast = evaluator(theta, part.X, Z)
            else:
                fast = cross_covariance(kernel, part.X, Z) if diag_grad is not None else None
            if fast is not None:
                kxu, backward = fast
                if evaluator is not None:
                    kdiag = np.full(nb, diag_value)
                else:
                    kdiag = kernel.diag(part.X)
            else:  # the gradient of K([X_block; Z]): the cross block and the diagonal
                K, dK = kernel(np.vstack([part.X, Z]), eval_gradient=True)
                kxu, kdiag = K[:nb, nb:], np.diag(K)[:nb]
            if features is None:
                phi = sla.solve_triangular(chol, kxu.T, lower=True).T
            else:
                phi = features[start : start + block]
            phi_cov = phi @ cov
            c = kdiag - np.sum(phi * phi, axis=1)
            values, d_mean, d_s, d_c, d_extra = self._row_partials(
                part, phi @ loc, np.sum(phi_cov * phi, axis=1), np.maximum(c, 0.0), extra, objective
            )
            d_c = np.where(c < 0.0, 0.0, d_c)  # clipped: c does not move
            d_mean, d_s, d_c = part.weighted(d_mean), part.weighted(d_s), part.weighted(d_c)
            value += float(np.sum(part.weighted(values)))
            grad[n_theta:] += np.sum(part.weighted(d_extra), axis=0)
            # The rows' gradient in phi, then in K_Xu = phi L^T and in L.
            phi_bar = (
                d_mean[:, None] * loc + 2.0 * d_s[:, None] * phi_cov - 2.0 * d_c[:, None] * phi
            )
            kxu_bar = phi_bar @ chol_inv
            chol_bar -= kxu_bar.T @ phi
            # Contract with the kernel's gradients: K_Xu and diag K_XX.
            if fast is not None:
                grad[:n_theta] += backward(kxu_bar) + np.sum(d_c) * diag_grad
            else:
                weights = np.zeros((nb + m, nb + m))
                weights[:nb, nb:] = kxu_bar
                weights[np.arange(nb), np.arange(nb)] = d_c
                grad[:n_theta] += np.tensordot(weights, dK, axes=([0, 1], [0, 1]))
        kuu_bar = _cholesky_backward(chol, chol_inv, chol_bar)
        if evaluator is not None:
            scale = float(np.mean(np.diag(Kuu)))
            # A stationary kernel: diag K_uu's gradient is k(x, x)'s.
            d_scale = diag_grad if scale > 1e-300 else 0.0
            grad[:n_theta] += kuu_backward(kuu_bar) + jitter * np.trace(kuu_bar) * d_scale
            return value, grad
        Kuu, dKuu = kernel(Z, eval_gradient=True)
        scale = float(np.mean(np.diag(Kuu)))
        # K_uu's jitter, jitter * mean(diag K_uu), moves with the kernel too
        # (unless the mean hit its floor in _cholesky).
        d_scale = np.mean(np.diagonal(dKuu), axis=-1) if scale > 1e-300 else 0.0
        grad[:n_theta] += (
            np.tensordot(kuu_bar, dKuu, axes=([0, 1], [0, 1]))
            + jitter * np.trace(kuu_bar) * d_scale
        )
        return value, grad

    def _learns_hyperparameters_by_steps(self):
        return (
            self.optimizer is not None
            and not self._hyperparameters_in_batch()
            and self._hyper_vector().size > 0
        )

    def _data_summary(self, data, local=None):
        # The start needs nothing of all the rows; a step, the hyperparameters'
        # statistics of its rows.
        return None if local is None else self._hyperparameter_statistics(data, local)

    def _hyperparameter_statistics(self, data, local):
        """What the hyperparameters' step needs of the rows ``data`` (added over blocks)."""
        if data is None or not self._learns_hyperparameters_by_steps():
            return None
        if self._hyperparameters_in_batch():
            # Coordinate ascent: the hyperparameters that maximise the
            # objective with the q just updated fixed (L-BFGS, exact
            # gradients); all the rows at once, so never on a cluster's
            # blocks (see _prepare_data).
            q = self._q_moments()
            rows = max(self._sample_count(data), 1e-300)

            def objective(p):
                value, grad = self._data_term(data, p, q=q, gradient=True)
                prior, prior_grad = self._log_hyperprior(p)
                return -(value + prior) / rows, -(grad + prior_grad) / rows

            return {"target": self._warm_minimize(objective, self._hyper_vector())}
        # The gradient of the objective in the log hyperparameters with q
        # fixed (whitened, so the KL does not depend on them), summed over
        # the rows with their count, so that blocks add; q is the local
        # step's (a worker has no other), and the kernel has not moved since
        # the local step computed the features.
        _, grad = self._data_term(
            data, self._hyper_vector(), q=local["q"], gradient=True, features=local["phi"]
        )
        return (grad, np.asarray(float(self._sample_count(data))))

    def _warm_minimize(self, objective, start):
        """The minimum of ``objective`` from ``start``: BFGS warm-started by the earlier passes.

        Between passes of the coordinate ascent the objective moves little,
        but an L-BFGS run starts from the identity metric, and its first
        step has length 1 in log space, whatever the gradient: it spent most
        of its evaluations finding the scale of a step that the previous
        runs had measured.  The secant pairs of every evaluation are kept in
        a BFGS inverse Hessian ``H`` (Nocedal and Wright, "Numerical
        optimization", 6.1), and the next run is BFGS from it
        (``_quasi_newton``): its first step is the Newton step ``-H g``, and
        near the optimum one step meets its test, a Newton decrement
        ``(g^T H g)^(1/2)`` of at most 1e-5, about L-BFGS's gradient test of
        1e-5 where ``H`` is near the identity.  It runs only while the start
        is at least 1 inside the bounds; L-BFGS-B (at most 20 iterations)
        runs at the first pass and where it fails (a step that leaves the
        bounds or finds no decrease, or no convergence in 20 steps: on
        separable classes without a prior the objective has no maximum).
        """
        bounds = self._hyper_bounds()
        history = []

        def recorded(p):
            value, grad = objective(p)
            history.append((np.array(p, dtype=np.float64), np.asarray(grad, dtype=np.float64)))
            return value, grad

        metric = getattr(self, "_hyper_metric", None)
        result = None
        if (
            metric is not None
            and metric.shape == (start.size, start.size)
            and np.all(start - bounds[:, 0] > 1.0)
            and np.all(bounds[:, 1] - start > 1.0)
        ):
            result = self._quasi_newton(recorded, start, bounds, metric)
        if result is None:
            result = minimize(
                recorded,
                start,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={"maxiter": 20},
            ).x
        self._hyper_metric = _bfgs_inverse_hessian(metric, history)
        return result

    @staticmethod
    def _quasi_newton(objective, start, bounds, metric, maxiter=20, gtol=1e-5):
        """BFGS from ``start`` with the inverse Hessian ``metric`` (see ``_warm_minimize``).

        Steps ``-H g`` halved until the objective falls enough (Armijo's
        condition), ``H`` updated by each step's secant pair, until the
        Newton decrement ``(g^T H g)^(1/2)`` is at most ``gtol``.  None if a
        step leaves the bounds, finds no decrease, or ``maxiter`` steps do
        not converge.
        """
        inverse = metric
        p = start
        value, grad = objective(p)
        for _ in range(maxiter + 1):
            if not (np.isfinite(value) and np.all(np.isfinite(grad))):
                return None
            direction = -(inverse @ grad)
            slope = float(grad @ direction)
            if -slope <= gtol * gtol:  # the squared Newton decrement
                return p
            if slope >= 0.0:  # H lost its positive definiteness to rounding
                return None
            size = 1.0
            for _ in range(_HALVINGS):
                trial = p + size * direction
                if np.any(trial <= bounds[:, 0]) or np.any(trial >= bounds[:, 1]):
                    return None
                new_value, new_grad = objective(trial)
                if not (np.isfinite(new_value) and np.all(np.isfinite(new_grad))):
                    size *= 0.5
                    continue
                if new_value <= value + 1e-4 * size * slope:
                    break
                # K_uu's jitter changes level (base._cholesky) where its
                # pivots cross MIN_PIVOT_RATIO, and the objective jumps by
                # about 1e-8 of its size: a step onto the other side can meet
                # the gradient test without a decrease.
                near = abs(new_value - value) <= 1e-8 * max(abs(value), 1.0)
                if near and float(new_grad @ inverse @ new_grad) <= gtol * gtol:
                    return trial
                size *= 0.5
            else:
                return None
            inverse = _bfgs_inverse_hessian(inverse, [(p, grad), (trial, new_grad)])
            p, value, grad = trial, new_value, new_grad
        return None

    def _update_hyperparameters(self, hyper, ctx):
        if hyper is None:
            return False
        bounds = self._hyper_bounds()
        if isinstance(hyper, dict):  # batch: the maximiser given q
            new = hyper["target"]
        else:  # online: a step along the per-row gradient, at most 0.5 in log space
            grad, count = hyper
            # The prior's gradient is the whole data's (N = scale * count
            # rows): its share per row is grad / (scale * count).
            prior_grad = self._log_hyperprior(self._hyper_vector())[1]
            grad = grad + prior_grad / max(float(ctx.scale), 1e-300)
            # A batch step of the engine (an online fit on a cluster whose rows
            # fit in one minibatch) has rho = 1 at every pass: a gradient
            # step of constant size need not converge, so it takes the
            # schedule's decaying size instead.
            rho = ctx.rho if ctx.online else self._hyper_schedule(ctx.t)
            step = rho * self.hyperparameter_learning_rate * grad / max(float(count), 1e-300)
            new = self._hyper_vector() + np.clip(step, -0.5, 0.5)
        self._set_hyper_vector(np.clip(new, bounds[:, 0], bounds[:, 1]))
        return True

    def _hyper_schedule(self, t):
        """The estimator's schedule at step ``t`` (Robbins-Monro's for one that needs gradients)."""
        from ...schedules import RobbinsMonro, make_schedule

        schedule = make_schedule(self.learning_rate, self.learning_offset, self.learning_decay)
        if schedule.needs_gradient:  # fed the factors' gradients only in online steps
            schedule = RobbinsMonro(offset=self.learning_offset, decay=self.learning_decay)
        return min(float(schedule(t)), 1.0)


class _CollapsedHyperparameters:
    """The regressor's L-BFGS on its collapsed objective, before ``q`` is fitted."""

    @staticmethod
    def _exact_log_marginal(data, kernel, noise):
        """'optimal' at its optimum: the exact GP's ``log N(y; 0, K + s2 I)``."""
        K = kernel(data.X)
        K[np.diag_indices_from(K)] += noise
        chol = sla.cho_factor(K, lower=True)
        logdet = 2.0 * np.sum(np.log(np.diag(chol[0])))
        y = data.y
        return -0.5 * (y.size * _LOG_2PI + logdet + y @ sla.cho_solve(chol, y))

    def _collapsed_and_gradient(self, data, params):
        """The collapsed objective ('titsias', or FITC for 'fitc' and 'predictive') and its gradient.

        The optimal whitened q of ``params`` in closed form (one batch step),
        then the rows' term there with its exact gradient (``_data_term``):
        by the envelope theorem the collapsed objective's gradient is the
        ELBO's with q held at its optimum, where the KL does not move.
        """
        objective = "titsias" if self.objective == "titsias" else "fitc"
        kernel = self.kernel_.clone_with_theta(params[:-1])
        noise = float(np.exp(params[-1]))
        phi, kdiag = self._features(data.X, kernel, self._cholesky(kernel))
        d = np.full(data.shape[0], noise)
        if objective == "fitc":
            d += np.maximum(kdiag - np.sum(phi * phi, axis=1), 0.0)
        wd = data.weighted(1.0 / d)
        precision = np.eye(phi.shape[1]) + (phi * wd[:, None]).T @ phi
        chol = sla.cho_factor(precision, lower=True)
        mean = sla.cho_solve(chol, phi.T @ (wd * data.y))
        cov = sla.cho_solve(chol, np.eye(phi.shape[1]))
        value, grad = self._data_term(
            data, params, q=(mean, cov), gradient=True, objective=objective, features=phi
        )
        # KL(N(mean, cov) || N(0, I)), with log det cov = -log det precision.
        kl = 0.5 * (
            np.trace(cov) + mean @ mean - mean.size + 2.0 * np.sum(np.log(np.diag(chol[0])))
        )
        return value - kl, grad

    def _optimize_hyperparameters(self, data, kernel, noise, random_state):
        bounds = np.vstack([np.reshape(kernel.bounds, (-1, 2)), [np.log(1e-6), np.log(1e6)]])
        # Per row: the sum over 10,000 rows made L-BFGS's finite-difference
        # first step jump to the bounds, and it stopped (ABNORMAL) at its start.
        rows = max(self._sample_count(data), 1.0)
        self._set_kernel(kernel)
        exact = self.objective == "optimal"  # N x N: finite differences by L-BFGS

        def objective(params):
            try:
                if exact:
                    k = kernel.clone_with_theta(params[:-1])
                    return -self._exact_log_marginal(data, k, float(np.exp(params[-1]))) / rows
                value, grad = self._collapsed_and_gradient(data, params)
                return -value / rows, -grad / rows
            except (np.linalg.LinAlgError, ValueError):
                return np.inf if exact else (np.inf, np.zeros(params.size))

        starts = [np.append(kernel.theta, np.log(noise))]
        for _ in range(self.n_restarts_optimizer):
            starts.append(random_state.uniform(bounds[:, 0], bounds[:, 1]))
        best = None
        for start in starts:
            res = minimize(objective, start, jac=not exact, method="L-BFGS-B", bounds=bounds)
            if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
                best = res
        if best is None:
            raise ValueError("The hyperparameter optimisation found no finite objective.")
        if not best.success:
            self._warn(
                f"{type(self).__name__}: L-BFGS on the hyperparameters stopped without "
                f"converging ({best.message}); the kernel is {kernel.clone_with_theta(best.x[:-1])} "
                f"and the noise variance {np.exp(best.x[-1]):.4g}. Try other starting "
                "values or n_restarts_optimizer.",
                ConvergenceWarning,
            )
        return kernel.clone_with_theta(best.x[:-1]), float(np.exp(best.x[-1]))
