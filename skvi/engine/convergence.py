"""When a fit stops: the convergence rules of batch and online fits.

A batch fit knows its full-data ELBO after every pass at no extra cost (the
pass's step computes the local step of every row), and stops when its
relative change falls below ``tol`` (or the model's own test).

An online fit does not: the exact ELBO would cost one more pass over the
data after every pass (a third of an online pass).  :class:`Convergence`
judges it instead on a fixed sample of training rows drawn once per fit
(:data:`CHECK_ROWS` at most, and about 1/80 of the rows): at every check, the ELBO with the sample standing
for all the rows, ``global part + N / |sample| * data part of the sample``.
The sample's rows are the same at every check, so the estimate moves only
when the globals do, but SVI's steps keep the globals jittering around the
optimum.  Checks come at the end of every pass and evenly within it, at most
:data:`CHECKS_PER_PASS` times a pass and no more often than their rows add
:data:`CHECK_COST` to the rows of the steps; the rule smooths them over a window of
:data:`WINDOW` checks and counts a window as an improvement when its mean
beats the best window mean so far by more than twice its standard error and
by more than ``tol`` (the model's convergence test).  The fit stops when :data:`WINDOW` checks in a row brought no
improvement: the ELBO has stopped improving beyond its own noise.  A fit
may stop within its first pass, since a long pass (at least eight checks,
``8 / CHECK_COST`` sample sizes of rows) has then shown that more rows no
longer move it, but not before every row of its row groups that has data
(matrix factorization's users and items, a network node's plate elements)
took a step.  A check within a pass is left out when the checks left
before ``max_iter`` passes could not stop the fit (too few to fill a
window and find it stale, or ``tol=0``): it could only have changed the
rule's state, which then decides nothing; the last check of every pass
still gives the pass's ELBO.  What it guarantees: the smoothed ELBO on the sample has
not risen beyond its noise or ``tol`` for a window, and every row with
data took a step where rows have their own factors; a fit that still
improves runs to ``max_iter``; ``tol=0`` keeps the estimates and never stops
the fit.  The sample is dropped when ``fit`` returns.

An estimator that takes scikit-learn's ``evaluate_every`` parameter (LDA's)
evaluates the exact full-data ELBO every that many passes, tested like a
batch fit's; 0 or less never evaluates it in a batch fit, which runs
``max_iter`` passes as scikit-learn's LDA does, and leaves an online fit to
the online rule.  Such a fit ends with the full-data ELBO at its final
globals (:func:`evaluates_every`).
"""

import numpy as np

from . import blocks as _fn
from .parameters import max_passes

__all__ = ["CHECK_ROWS", "CHECKS_PER_PASS", "Convergence", "WINDOW", "evaluates_every"]

#: Most training rows of an online fit's convergence sample.
CHECK_ROWS = 256
#: Most checks per online pass (a long pass's).  Eight checks are the least
#: a stop takes, so this bounds how early in a long first pass a fit can
#: stop (docs/benchmarks.md, "The engine's constants").
CHECKS_PER_PASS = 32
#: The largest share of the steps' rows that the checks' rows may add.
CHECK_COST = 0.03
#: Checks a window smooths; as many without improvement stop an online fit.
WINDOW = 4


def evaluates_every(est):
    """The estimator's ``evaluate_every`` parameter, or None when it takes none.

    Examples
    --------
    >>> from skvi import GaussianGammaVB, SVILatentDirichletAllocation
    >>> from skvi.engine.convergence import evaluates_every
    >>> evaluates_every(SVILatentDirichletAllocation()), evaluates_every(GaussianGammaVB())
    (-1, None)
    """
    return getattr(est, "evaluate_every", None)


def relative_change(tol):
    """The default test: ``|b - a| / |a| < tol``."""

    def converged(previous, current):
        change = abs(current - previous) / max(abs(previous), np.finfo(float).tiny)
        return change < tol

    return converged


class Convergence:
    """The convergence test of one ``fit``.

    Parameters
    ----------
    est : SVIEstimator
        The estimator being fitted.
    online : bool
        Whether the fit takes online steps.

    Attributes
    ----------
    mode : {'bound', 'sample', 'none'}
        ``'bound'``: the full-data ELBO of evaluated passes (batch fits,
        ``evaluate_every``); ``'sample'``: the online rule above;
        ``'none'``: ``max_iter`` passes.
    warns : bool
        Whether a fit that stops at ``max_iter`` without converging warns:
        not one that was never tested, nor one judged by the
        ``evaluate_every`` rule (scikit-learn's silence), nor one whose
        passes are Paquet's child samples (one step each).

    Examples
    --------
    >>> from skvi.engine.convergence import relative_change
    >>> relative_change(1e-3)(-100.0, -100.05)
    True
    """

    def __init__(self, est, online):
        settings = est._svi.settings
        self.est = est
        self.test = settings.convergence or relative_change(est.tol)
        # tol=0 asks for every pass: the estimates are kept, the fit not stopped.
        self.stops = getattr(est, "tol", None) != 0
        every = evaluates_every(est)
        if every is not None and every <= 0 and est.learning_method == "online":
            every = None  # the online rule
        if every is not None:
            self.mode = "bound" if every > 0 else "none"
            self.every = max(int(every), 1)
        elif online:
            self.mode = "sample"
            self.every = 1
        else:
            self.mode = "bound"
            self.every = 1
        self.previous = None
        self.sample = None
        self.best = None
        self.stale = 0
        self.last = None
        self.values = []
        self.checked = None
        self.spacing = None
        # Whether a fit that stops at max_iter unconverged says so: not when
        # it was never tested, nor when the evaluate_every rule judged it
        # (scikit-learn's LDA is silent), nor when its passes are Paquet's
        # child samples, one step each.
        self.warns = (
            self.mode != "none"
            and not (every is not None and self.mode == "bound")
            and settings.children_per_row is None
        )
        self.n_batches = None
        self.passes = 0

    # ------------------------------------------------------------ batch
    def evaluate(self, it):
        """Whether pass ``it`` computes the full-data ELBO."""
        return self.mode == "bound" and it % self.every == 0

    def end_pass(self, bound, moved):
        """After a pass with its ELBO (None when not evaluated); True when converged.

        A pass whose steps were all rejected left the parameters where they
        were: an unchanged ELBO says nothing about convergence.
        """
        if self.mode == "sample":
            self.passes += 1
            return self.stops and self.stale >= WINDOW
        if bound is None:
            return False
        converged = moved and self.previous is not None and self.test(self.previous, bound)
        if moved:
            self.previous = bound
        return converged

    # ------------------------------------------------------------ online
    def start(self, data, random_state, n_batches):
        """Draw the sample of an online fit (from a copy of the generator)."""
        if self.mode != "sample":
            return
        st = self.est._svi
        if any(st.executor.resident(name) for name in st.settings.row_groups):
            # The rows' own factors of a sample are on many blocks: no sample.
            self.mode = "none"
            return
        n = data.shape[0]
        size = min(n, CHECK_ROWS, max(32, n // 80))
        copy = np.random.RandomState()
        copy.set_state(random_state.get_state())
        copy.randint(2)  # not the draw of the step-safety probe
        rows = np.sort(copy.choice(n, size=size, replace=False))
        self.sample = self.est._svi.executor.sample(self.est, data, rows)
        executor = st.executor
        self.scale = executor.count(self.est, data) / max(
            executor.count(self.est, self.sample), 1e-300
        )
        # Checks at most CHECKS_PER_PASS times a pass, and no more often than
        # their rows cost CHECK_COST of the steps' rows.
        rows = max(n / CHECKS_PER_PASS, size / CHECK_COST)
        per_step = n / max(n_batches or 1, 1)
        self.spacing = max(1, int(round(rows / per_step)))
        self.n_batches = max(int(n_batches or 1), 1)

    def after_step(self, batch, first_pass):
        """After minibatch ``batch`` of a pass: check within long passes; True when converged."""
        if self.sample is None or self.spacing is None or batch % self.spacing:
            return False
        if not self.can_stop(batch):
            return False
        return self.check() and not (first_pass and self.rows_waiting())

    def can_stop(self, batch):
        """Whether the checks left from the one after minibatch ``batch`` could stop the fit.

        The checks left: this pass's from ``batch`` on and its last, and
        every later pass's up to ``max_iter`` (an upper bound: a check
        after rejected steps only is skipped).  A stop needs a full window
        and then :data:`WINDOW` stale checks.
        """
        if not self.stops:
            return False
        within = (self.n_batches - 1) // self.spacing  # checks within a pass
        left = within - batch // self.spacing + 2  # this one on, and the pass's last
        left += (max_passes(self.est) - self.passes - 1) * (within + 1)
        if self.best is None:
            needed = WINDOW - len(self.values) + WINDOW
        else:
            needed = WINDOW - self.stale
        return left >= needed

    def rows_waiting(self):
        """Whether a row of a row group that has data has not taken a step yet.

        Rows with their own factors (matrix factorization's users and items,
        a network node's plate elements) must each take a step before a fit
        stops within its first pass: a stop would leave them at their start.
        """
        st = self.est._svi
        return any(np.any((group.steps == 0) & (group.totals > 0)) for group in st.rows.values())

    def check(self):
        """The ELBO on the sample now; True when the fit has stopped improving."""
        if self.sample is None:
            return False
        est = self.est
        st = est._svi
        params = est.natural_params_
        if params is self.checked:
            # No step was accepted since the last check: an unchanged ELBO
            # says nothing about convergence.
            return False
        self.checked = params
        with st.clock.phase("bound"):
            data = st.executor.sum(est, _fn.bound, self.sample, None, params)
            value = float(est._global_bound(params) + self.scale * data)
        self.last = value
        if not np.isfinite(value):
            return False
        window = self.values = (self.values + [value])[-WINDOW:]
        if len(window) < WINDOW:
            return False
        mean = float(np.mean(window))
        noise = 2.0 * float(np.std(window, ddof=1)) / np.sqrt(WINDOW)
        if self.best is None or (mean > self.best + noise and not self.test(self.best, mean)):
            self.best = mean
            self.stale = 0
        else:
            self.stale += 1
        return self.stops and self.stale >= WINDOW

    def forget(self):
        """Drop the sample: a fitted estimator keeps no training rows."""
        self.sample = None
