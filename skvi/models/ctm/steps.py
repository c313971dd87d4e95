"""The documents' steps of the correlated topic model, in a fit and in the fold-in of new ones.

Each document's Gaussian ``q(eta_d)`` moves towards the fixed-point target
of its Monte Carlo (or quadrature) gradient and curvature by the update
rule of ``algorithm``; a step that leaves a document's Gaussian invalid is
halved, document by document.
"""

import numpy as np

from ...engine import Factor, RowStatistics
from ...expfam import symmetric_eigenvalues
from ...schedules import make_schedule
from . import kernels
from .bounds import _BOUND_SEED
from .documents import _covariances, _gaussian_moments, _set_state_rows, _state_rows

#: The smallest eigenvalue of a document's precision, relative to its
#: largest, that a step may leave: its covariance is inverted and factorised
#: (an S-DSVI step through a nearly singular Cholesky factor left
#: precisions with eigenvalues from -6e5 to 4e21).
_MIN_PRECISION_RATIO = 1e-12
#: Halvings of a fold-in document's step before the document keeps its q.
_FOLD_IN_HALVINGS = 30
#: The largest magnitude of a document's logits' mean that a step may
#: leave (a bound on it: |m| <= |Lambda m| / lambda_min): an AdaGrad step of
#: gradient_learning_rate=1e300 left means of 1e300, and Sigma inf.
_MAX_LOGIT = 1e100


class _DocumentSteps:
    """The documents' moments, steps and fold-in of :class:`SVICorrelatedTopicModel`."""

    def _moments(self, eta1, eta2):
        """Means and scales of documents: Cholesky factors (full) or standard deviations."""
        return _gaussian_moments(eta1, eta2, self.covariance == "diagonal")

    def _covariances(self, scale):
        return _covariances(scale, self.covariance == "diagonal")

    def _document_moments(self, params, ids):
        eta1, eta2 = params["documents"]
        return self._moments(eta1[ids], eta2[ids])

    @staticmethod
    def _draw(mean, scale, rng):
        # The same draw for every document: a document's estimate does not
        # depend on the others in its batch (common random numbers).
        eps = np.broadcast_to(rng.standard_normal(mean.shape[-1]), mean.shape)
        if scale.ndim == mean.ndim:
            return mean + scale * eps
        return mean + (scale @ eps[..., None])[..., 0]

    # ------------------------------------------------------------- the step
    def _expectations(
        self, X, mean, scale, eps=None, topic_counts=False, hessian=True, document_weights=None
    ):
        """Gradient, curvature and data bound of each document, under ``bound``.

        By Monte Carlo on the standard normal draws ``eps``, or by the
        quadrature rule (``expectation='quadrature'``).  ``document_weights``
        weigh the documents in the topic counts alone: the rest is each
        document's own.
        """
        if self.bound == "mean_field":
            expected = kernels.mean_field_bound_derivatives(
                X,
                mean,
                scale * scale,
                self.topic_word_,
                topic_counts=topic_counts,
                document_weights=document_weights,
            )
            # Its curvature is diagonal already.
            return expected._replace(H_hat=np.diagonal(expected.H_hat, axis1=-2, axis2=-1))
        if hessian and self.covariance == "diagonal":
            hessian = "diagonal"  # all a diagonal q's step uses
        weights = None
        if self.expectation == "quadrature":
            eps, weights = self._quadrature_rule()
        function = (
            kernels.expected_gradient_hessian
            if self.bound == "optimal"
            else kernels.simple_bound_derivatives
        )
        return function(
            X,
            mean,
            scale,
            self.topic_word_,
            eps.shape[0],
            hessian=hessian,
            topic_counts=topic_counts,
            eps=eps,
            weights=weights,
            document_weights=document_weights,
        )

    def _quadrature_rule(self):
        """The Gauss-Hermite nodes, shaped (S, 1, K - 1) as common draws, and weights."""
        rule = getattr(self, "_rule_cache", None)
        if (
            rule is None
            or rule[0].shape[-1] != self._dim
            or rule[1].size != (self.n_mc_samples**self._dim)
        ):
            nodes, weights = kernels.gauss_hermite_rule(self._dim, self.n_mc_samples)
            rule = self._rule_cache = (nodes[:, None, :], weights)
        return rule

    def _local_draws(self, X, random_state):
        # The minibatch's Monte Carlo draws, (documents, samples, K - 1): one
        # generator in one order, whatever n_jobs cuts the minibatch into.
        if self.bound == "mean_field" or self.expectation != "mc":
            return None
        return random_state.standard_normal((X.shape[0], self.n_mc_samples, self._dim))

    def _local_step(self, X, params, draws=None):
        mean, scale = self._document_moments(params, X.ids)
        eps = None if draws is None else np.ascontiguousarray(np.moveaxis(draws, 0, 1))
        expected = self._expectations(
            X.X, mean, scale, eps=eps, topic_counts=True, document_weights=X.weight
        )
        return {"mean": mean, "expected": expected}

    @staticmethod
    def _statistics_parts(expected, mean):
        """What the data add to a document's target.

        ``(g - Gamma m, P_psd(-Gamma))`` for a full ``q``; for a diagonal one,
        from the curvature's diagonal alone, ``(g + D m, D)`` with ``D =
        max(-diag(Gamma), 0)``: the fixed point of the diagonal family's
        bound, ``1 / v_k = (Sigma^-1)_kk - E[H_kk]``.
        """
        gamma = expected.H_hat
        if gamma.ndim == mean.ndim:
            curvature = np.maximum(-gamma, 0.0)
            return expected.g_hat + curvature * mean, curvature
        return (expected.g_hat - (gamma @ mean[..., None])[..., 0], kernels.psd_projection(-gamma))

    def _move_documents(self, old, parts, prior, rho, backoff, state):
        """Step documents ``old`` towards ``prior + parts`` by the update rule.

        The one document step of a fit and of the fold-in of new documents.
        Returns the new natural parameters, the target and the rule's state.
        """
        old1, old2 = old
        if self.covariance == "diagonal":
            # The prior's precision couples the coordinates (the Jacobi form
            # of diagonal_target); the data's curvature is diagonal.
            precision = -2.0 * prior[1]
            diag = np.diagonal(precision)
            mean = old1 / (-2.0 * old2)
            tgt1 = prior[0] + parts[0] - (mean @ precision.T - diag * mean)
            tgt2 = -0.5 * (diag + parts[1])
        else:
            tgt1 = prior[0] + parts[0]
            tgt2 = prior[1] - 0.5 * parts[1]
        rule = self._rule
        if rule is None:
            shape = rho.shape + (1,) * (old2.ndim - 1)
            new = (old1 + rho[:, None] * (tgt1 - old1), old2 + rho.reshape(shape) * (tgt2 - old2))
        else:
            new, state = rule.step((old1, old2), (tgt1, tgt2), rho, backoff, state)
        return new, (tgt1, tgt2), state

    def _expected_stats(self, name, X, local, params):
        # A document of weight w stands for w copies, each with its own
        # q(eta_d) and its words once: its statistics are one copy's, and
        # its count C_d is w, as its N_d, so that its target scales them by
        # N_d / C_d = 1 as each copy's.
        parts = self._statistics_parts(local["expected"], local["mean"])
        counts = np.ones(X.ids.shape[0]) if X.weight is None else X.weight
        return RowStatistics(X.ids, parts, counts)

    def _update_factor(self, name, current, stats, ctx):
        rows = stats.rows
        old1, old2 = current[0][rows], current[1][rows]
        (new1, new2), (tgt1, tgt2), state = self._move_documents(
            (old1, old2),
            stats.values,
            ctx.prior["documents"],
            ctx.row_rho,
            ctx.backoff,
            ctx.rule_state,
        )
        if self._rule is not None:
            ctx.keep_rule_state(state)
        if ctx.grads is not None:
            ctx.grads.extend([tgt1 - old1, tgt2 - old2])
        eta1, eta2 = current[0].copy(), current[1].copy()
        eta1[rows], eta2[rows] = new1, new2
        family = current.family
        valid = bool(np.all(self._valid_documents(new1, new2)))
        return Factor((eta1, eta2), family), valid

    def _valid_documents(self, eta1, eta2):
        """Whether each document's natural parameters are finite and well conditioned.

        A full precision's eigenvalues must all be positive, the smallest at
        least ``_MIN_PRECISION_RATIO`` times the largest: the document's
        covariance is then its inverse, factorised.  The mean must stay
        within ``_MAX_LOGIT`` (``Sigma``, the means' spread, stays finite).
        """
        n = eta1.shape[0]
        finite = np.all(np.isfinite(eta1), axis=1) & np.all(
            np.isfinite(eta2.reshape(n, -1)), axis=1
        )
        with np.errstate(all="ignore"):
            if self.covariance == "diagonal":
                precision = np.where(finite[:, None], -2.0 * eta2, 1.0)
                mean = np.where(finite[:, None], eta1, 0.0) / precision
                return (
                    finite
                    & np.all(precision > 0, axis=1)
                    & np.all(np.abs(mean) <= _MAX_LOGIT, axis=1)
                )
            precision = -(eta2 + np.swapaxes(eta2, -1, -2))
            # A sum that overflows is no precision either.
            finite &= np.all(np.isfinite(precision.reshape(n, -1)), axis=1)
            precision = np.where(finite[:, None, None], precision, np.eye(eta1.shape[1]))
            w = symmetric_eigenvalues(precision)
            bound = np.linalg.norm(np.where(finite[:, None], eta1, 0.0), axis=1) / w[:, 0]
            return finite & (w[:, 0] > _MIN_PRECISION_RATIO * w[:, -1]) & (bound <= _MAX_LOGIT)

    def _safe_document_step(self, eta, parts, prior, rho, state):
        """One step of every document, each with its own step safety.

        A document whose step leaves invalid natural parameters (see
        :meth:`_valid_documents`) retries it with the step size halved (rho
        and the rule's backoff), at most ``_FOLD_IN_HALVINGS`` times, and
        then keeps its ``q``; the others move at once.  Returns the new
        natural parameters and the rule's state.
        """
        new, _, new_state = self._move_documents(eta, parts, prior, rho, 1.0, state)
        new = (np.array(new[0]), np.array(new[1]))
        bad = ~self._valid_documents(*new)
        backoff = 1.0
        for _ in range(_FOLD_IN_HALVINGS):
            if not bad.any():
                break
            backoff *= 0.5
            rows = np.flatnonzero(bad)
            retry, _, retry_state = self._move_documents(
                (eta[0][rows], eta[1][rows]),
                (parts[0][rows], parts[1][rows]),
                prior,
                rho[rows] * backoff,
                backoff,
                _state_rows(state, rows),
            )
            ok = self._valid_documents(*retry)
            kept = rows[ok]
            new[0][kept], new[1][kept] = retry[0][ok], retry[1][ok]
            new_state = _set_state_rows(new_state, kept, _state_rows(retry_state, ok))
            bad[kept] = False
        new[0][bad], new[1][bad] = eta[0][bad], eta[1][bad]
        return new, new_state

    # -------------------------------------------------------------- fold-in
    def _fold_in(self, X):
        """``q(eta_d)`` of new documents, the model held fixed: means and scales.

        The documents are independent and share the draws of each step, so
        blocks of them fold in on ``n_jobs`` threads to the same result.
        """
        parts = self._map_row_blocks(self._fold_in_rows, X)
        return (
            np.concatenate([mean for mean, _ in parts]),
            np.concatenate([scale for _, scale in parts]),
        )

    def _fold_in_rows(self, X):
        n = X.shape[0]
        prior = self._prior_natural()["documents"]
        eta = self._prior_documents(n)
        state = None
        schedule = make_schedule(self.learning_rate, self.learning_offset, self.learning_decay)
        rng = np.random.RandomState(_BOUND_SEED)
        for t in range(1, self.transform_max_iter + 1):
            mean, scale = self._moments(*eta)
            # Draws shared by the documents: each one's fit is its own.
            eps = rng.standard_normal((self.n_mc_samples, 1, self._dim))
            parts = self._statistics_parts(self._expectations(X, mean, scale, eps=eps), mean)
            # The schedule of the fit, restarted for the new documents; an
            # invalid step is halved, as the fit's step safety does.
            eta, state = self._safe_document_step(eta, parts, prior, np.full(n, schedule(t)), state)
        return self._moments(*eta)
