"""Step safety: rejecting a step that would spoil the posterior, and backing off.

SVI goes wrong in a few known ways: a step makes a factor invalid (a
negative precision or Gamma shape, a covariance that is not positive
definite, a NaN), a Newton-like fixed-point step overshoots, or, as in
Paquet's divergence ("On the convergence of stochastic variational inference
in Bayesian networks", Fig. 2), every factor stays valid while the means run
away.  :class:`StepSafety` judges every attempt of a step:

* every factor's validity, at every step;
* a batch step of a model whose settings say ``batch_steps='no_decrease'``
  or ``'line_search'``: it must not lower the full-data ELBO (the value is
  then the pass's ELBO, so the test costs nothing extra);
* an online step of a model with ``_probe_loss``: the expected loss per row
  of a fixed probe sample (:data:`PROBE_SIZE` rows) must not grow by more
  than ``tolerance["probe"]`` of its best value.  The probe is tested at every step until
  :data:`PROBE_CALM` steps in a row pass, then at every second, fourth, ...
  step, at most :data:`PROBE_EVERY` apart; any failure makes it test every
  step again.  So at most ``PROBE_EVERY - 1`` steps in a row go without a
  probe, and only after a long run of accepted ones.  When a test fails
  after untested steps and the current parameters fail it too, those steps
  went too far together: the parameters go back to the last ones that
  passed (the checkpoint; the engine's steps make new factors, so it is
  kept without a copy), and the step is retried from there.  Without
  the rollback, every later step, however small, would start beyond the
  probe's bound and be rejected.

A rejected attempt leaves the parameters as they were, halves the step size
(for this and later steps) and is retried, up to ``MAX_BACKOFF`` times; after
:data:`RECOVERY_STEPS` accepted steps in a row the size doubles back, and a
recovered size that is rejected again doubles the wait.
"""

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .step import all_finite

__all__ = ["PROBE_SIZE", "StepSafety"]

#: Accepted steps in a row after which a reduced step size is doubled back.
RECOVERY_STEPS = 20
#: Rows of the probe sample of online ``fit``.  A probe costs about half a
#: local step per row, so a large one is a large share of a short fit;
#: fewer rows miss rare features (docs/benchmarks.md, "The engine's
#: constants").
PROBE_SIZE = 500
#: Accepted probed steps in a row after which the probe is tested less often.
PROBE_CALM = 4
#: Most steps between two probe tests once the steps are calm.
PROBE_EVERY = 16


class StepSafety:
    """The step-safety state of one fit: step-size backoff, the probe, the batch ELBO test.

    Parameters
    ----------
    enabled : bool
        The estimator's ``step_safety``.
    settings : ModelSettings
        The model's settings (``batch_steps``, ``tolerance``, ...).

    Attributes
    ----------
    backoff : float
        The factor in ``(0, 1]`` the schedule's step size is multiplied by.

    Examples
    --------
    >>> from skvi.engine.safety import StepSafety
    >>> from skvi.engine import ModelSettings
    >>> s = StepSafety(True, ModelSettings({}))
    >>> s.rejected(line_search=False); s.backoff
    0.5
    """

    def __init__(self, enabled, settings):
        self.enabled = bool(enabled)
        self.settings = settings
        self.backoff = 1.0
        self.accepted_run = 0
        self.recovery_steps = RECOVERY_STEPS
        self.recovered = False
        self.rejection_warned = False
        self.backtracks = 0  # rejections that were a line search's backtracking
        self.probe = None
        self.probe_best = None
        self.last_batch = None
        self.probe_every = 1
        self.since_probe = 0
        self.calm = 0
        # The last parameters that passed the probe, and rollbacks to them.
        self.checkpoint = None
        self.rollbacks = 0
        # (parameters, their full-data ELBO) from the last batch-step test.
        self.known_bound = None

    # ------------------------------------------------------ step size
    def begin_step(self, line_search):
        """Before the first attempt: a line search starts from the full step."""
        if line_search:
            self.backoff = 1.0
        return self.backoff

    def accepted(self):
        """Double a reduced step size after ``recovery_steps`` accepted steps in a row."""
        self.accepted_run += 1
        if self.backoff < 1.0 and self.accepted_run >= self.recovery_steps:
            self.backoff = min(1.0, 2.0 * self.backoff)
            self.accepted_run = 0
            self.recovered = True

    def rejected(self, line_search):
        """Halve the step size; a failed recovery lengthens the next wait."""
        if line_search:
            self.backtracks += 1
        self.backoff *= 0.5
        if self.recovered and self.accepted_run < self.recovery_steps:
            self.recovery_steps *= 2
        self.recovered = False
        self.accepted_run = 0

    # ------------------------------------------------------ judging a step
    def acceptable(self, est, X, params, online, valid):
        """Whether an attempt with valid-or-not factors ``params`` is accepted."""
        if not self.enabled:
            # Invalid factors are accepted (to show Paquet's divergence),
            # but never a non-finite one: NaN or inf never leaves a fit.
            return all_finite(params)
        if not valid:
            return False
        if not online and X is not None and self.settings.batch_steps_tested_by_bound:
            if not self._raises_elbo(est, X, params):
                return False
        if self.probe is not None and (online or self.settings.batch_steps == "probe"):
            return self._probe_acceptable(est, params)
        return True

    def _raises_elbo(self, est, X, params):
        """Whether a batch step's ``params`` do not lower the full-data ELBO.

        The current parameters' ELBO is remembered from the last test, and
        the accepted one serves as the pass's ELBO: one evaluation per try.
        """
        st = est._svi
        with st.clock.phase("bound"):
            known = self.known_bound
            current = est.natural_params_
            if known is not None and known[0] is current:
                old = known[1]
            else:
                old = est._global_bound(current) + st.data_bound(est, X, None, current)
            # Last: a model may keep the local step this bound makes for the
            # next batch step at the same globals.
            new = est._global_bound(params) + st.data_bound(est, X, None, params)
        tolerance = self.settings.elbo_tolerance
        if not np.isfinite(new) or new < old - tolerance * abs(old):
            self.known_bound = (current, old)
            return False
        self.known_bound = (params, new)
        return True

    def remember_bound(self, params, bound):
        """The full-data ELBO of ``params``, known from elsewhere (the batch start)."""
        self.known_bound = (params, bound)

    # ------------------------------------------------------ the probe
    def set_probe(self, est, data, random_state):
        """Draw the fixed probe sample of online ``fit`` (for a model with ``_probe_loss``)."""
        # From a copy of the generator, so that step safety leaves the
        # minibatch sequence unchanged.
        copy = np.random.RandomState()
        copy.set_state(random_state.get_state())
        n = data.shape[0]
        rows = np.sort(copy.choice(n, size=min(n, PROBE_SIZE), replace=False))
        self.use_probe(est, est._svi.executor.sample(est, data, rows))

    def use_probe(self, est, probe):
        """Make ``probe`` the probe, its loss under the current parameters the best.

        A model without ``_probe_loss`` (its loss is None) has no probe.
        """
        best = self._loss(est, probe, est.natural_params_)
        self.probe, self.probe_best = (None, None) if best is None else (probe, best)
        self.probe_every, self.since_probe, self.calm = 1, 0, 0
        self.checkpoint = est.natural_params_

    def _loss(self, est, probe, params):
        return est._svi.executor.probe_loss(est, probe, params)

    def _probe_acceptable(self, est, params):
        self.since_probe += 1
        if self.since_probe < self.probe_every:
            return True
        self.since_probe = 0
        loss = self._loss(est, self.probe, params)
        if not self._passes(loss):
            self.probe_every, self.calm = 1, 0
            self._roll_back_untested(est)
            return False
        best = self.probe_best
        self.checkpoint = params
        self.probe_best = min(best, loss) if np.isfinite(best) else loss
        self.calm += 1
        if self.calm >= PROBE_CALM:
            self.probe_every = min(2 * self.probe_every, PROBE_EVERY)
            self.calm = 0
        return True

    def _passes(self, loss):
        best = self.probe_best
        too_far = np.isfinite(best) and loss > best + self.settings.probe_growth * abs(best)
        return bool(np.isfinite(loss)) and not too_far

    def _roll_back_untested(self, est):
        """Back to the checkpoint when the steps accepted untested since it fail the probe."""
        current, checkpoint = est.natural_params_, self.checkpoint
        if checkpoint is None or current is checkpoint:
            return
        if self._passes(self._loss(est, self.probe, current)):
            self.checkpoint = current  # only the step tried now went too far
            return
        est._svi.set_factors(est, checkpoint)
        self.rollbacks += 1

    def stream_probe(self, est, X):
        """``partial_fit``'s probe: the previous minibatch of the call (the first: itself)."""
        last = X if self.last_batch is None else self.last_batch
        self.last_batch = X
        self.use_probe(est, last)

    def forget(self):
        """Drop the probe rows and any kept local step: a fitted estimator keeps no rows."""
        self.probe = self.probe_best = self.last_batch = self.checkpoint = None

    # ------------------------------------------------------ reporting
    def warn(self, est, rejected_before, settled=False):
        """Warn once per fit when steps were rejected (not a line search's backtracking).

        ``settled``: ``fit`` converged.  With the step size back to its
        schedule's by then, the rejections were the early overshoots that
        step safety absorbs (the first steps of a schedule are its largest)
        and nothing is left for the user to change: no warning, and
        ``n_rejected_steps_`` and ``step_trace_`` still record them.
        """
        if settled and self.backoff >= 1.0:
            return
        unexpected = est.n_rejected_steps_ - self.backtracks
        if unexpected > rejected_before and not self.rejection_warned:
            self.rejection_warned = True
            now = (
                "is back to its schedule"
                if self.backoff >= 1.0
                else f"is now scaled by {self.backoff:g}"
            )
            est._warn(
                f"{type(est).__name__}: {est.n_rejected_steps_} step(s) were "
                "rejected by step safety (an invalid global factor or an "
                f"overshoot); the step size {now}. Consider a smaller "
                "initial step (larger learning_offset), a warm-up schedule or a "
                "larger batch_size.",
                ConvergenceWarning,
            )
