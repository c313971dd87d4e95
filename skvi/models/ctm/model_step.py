"""The correlated topic model's own step: the topics, ``mu`` and ``Sigma``.

After each accepted step of the documents ``mu`` and ``Sigma`` take their
closed forms over every document's ``q`` (eqs. 60-61 of "Monte Carlo
structured SVI for two-level non-conjugate models") and the topics move
towards their expected word counts.
"""

import numpy as np

from ...engine import DataMoments


class _ModelStep:
    """The hyperparameter hooks of :class:`SVICorrelatedTopicModel`: topics, ``mu``, ``Sigma``."""

    def _data_summary(self, X, local=None):
        # After a step, the documents' expected word counts per topic (the
        # topics' step); the start needs nothing of all the rows.
        if local is None:
            return None
        return (local["expected"].topic_counts,)

    def _update_hyperparameters(self, hyper, ctx):
        if ctx.end_of_pass:  # update_model_every='pass': the pass's counts
            counts, self._pass_counts = getattr(self, "_pass_counts", None), None
            if counts is None:
                return False
            self._model_step(counts, ctx.scale, ctx.rho)
            return True
        counts = None if hyper is None else hyper[0]
        if ctx.in_pass and self.update_model_every == "pass":
            # Held until the pass ends: the pass's expected word counts add up.
            if counts is not None:
                pending = getattr(self, "_pass_counts", None)
                self._pass_counts = counts if pending is None else pending + counts
            return False
        # After every accepted step (each minibatch; the paper's Fig. 8
        # updates after each document).
        self._model_step(counts, ctx.scale, ctx.rho)
        return True

    def _model_step(self, topic_counts, scale, rho):
        """``mu`` and ``Sigma`` in closed form; the topics towards ``prior + scale * counts``."""
        self._update_prior()
        if topic_counts is None:
            return
        target = self.topic_word_prior + scale * topic_counts
        if getattr(self, "_topics_started", True):
            rho = min(float(rho), 1.0)
            target = (1.0 - rho) * self.components_ + rho * target
        self._topics_started = True  # the first step replaces the start
        self._set_topics(target)

    def _update_prior(self):
        """``mu`` and ``Sigma`` in closed form over every document's ``q`` (eqs. 60-61)."""
        moments, cov_sum = self._rows_summary("documents")[:2]
        if moments.n_rows == 0:
            return
        cov_sum = cov_sum if cov_sum.ndim == 2 else np.diag(cov_sum)
        sigma = (cov_sum + moments.scatter) / moments.total
        sigma = 0.5 * (sigma + sigma.T) + 1e-8 * np.eye(self._dim)
        self._mu, self._sigma = moments.mean.copy(), sigma

    def _documents_summary(self, name, natural, steps, totals):
        """What ``mu``, ``Sigma`` and the KL part of the ELBO need of the documents.

        ``(moments, covariance sum)`` of the documents stepped at least
        once (the closed forms), then ``(moments, covariance sum, sum of
        log det V_d)`` of every document seen (the KL divergences):
        sums that add over blocks of documents.  Each document counts
        ``N_d`` times, its weight (1 without weights), as its copies would.
        """
        mean, scale = self._moments(*natural)
        cov = self._covariances(scale)
        if self.covariance == "diagonal":
            logdet = 2.0 * np.sum(np.log(scale), axis=1)
        else:
            logdet = 2.0 * np.sum(np.log(np.diagonal(scale, axis1=1, axis2=2)), axis=1)
        fitted, seen = steps > 0, totals > 0
        if np.all(totals[seen] == 1.0):  # no weights: plain sums
            return (
                DataMoments.of(mean[fitted]),
                np.sum(cov[fitted], axis=0),
                DataMoments.of(mean[seen]),
                np.sum(cov[seen], axis=0),
                float(np.sum(logdet[seen])),
            )
        return (
            DataMoments.of(mean[fitted], totals[fitted]),
            np.tensordot(totals[fitted], cov[fitted], axes=1),
            DataMoments.of(mean[seen], totals[seen]),
            np.tensordot(totals[seen], cov[seen], axes=1),
            float(totals[seen] @ logdet[seen]),
        )
