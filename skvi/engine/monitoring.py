"""Watching a fit: callbacks, the verbose display and log, history and step trace.

Every estimator runs its ``fit``, ``partial_fit`` and ``apply_statistics``
through the engine, so one mechanism serves them all:

* :func:`monitor` registers a callback, for the fits run inside its ``with``
  block on this thread, that the engine calls after every step and every
  pass with a :class:`FitRecord`; returning ``False`` (or raising
  ``StopIteration``) ends the fit there, cleanly.
* ``verbose=1`` draws a progress line on standard error (on a terminal, one
  line rewritten with carriage returns, finished with a newline at the end
  of a pass and of a call; when standard error is not a terminal, only the
  finished lines, one per pass and per ``partial_fit`` call; a notebook's
  standard error redraws as a terminal does); ``verbose=2`` logs instead,
  through the :mod:`logging` logger ``"skvi"``: one INFO record per pass of
  ``fit`` and per ``partial_fit`` call, INFO records of the progress within
  a long pass (every :data:`LOG_INTERVAL` seconds), and one DEBUG record per
  step.
* Every fitted estimator has ``history_`` (time, samples seen, steps and
  ELBO per pass or ``partial_fit`` call) and ``step_trace_`` (the step size
  of every step, and its rejections by step safety), both bounded tables of
  numbers (see :data:`TRACE_SIZE`); :mod:`skvi.plotting` draws them.
"""

import logging
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager

import joblib
import numpy as np
import sklearn

from .parameters import max_passes

__all__ = ["FitRecord", "monitor"]

#: The logger of ``verbose=2`` (INFO per pass and per ``partial_fit`` call,
#: DEBUG per step).
logger = logging.getLogger("skvi")

#: Most rows kept by a fit's ``step_trace_`` and ``history_``.  The first
#: quarter is kept exactly; after that one row in ``k`` (``k`` doubling each
#: time the table fills), rejected steps while they take at most three
#: quarters of the table, and always the latest row.
TRACE_SIZE = 10_000
#: Seconds between two redraws of the progress line within a pass.
PROGRESS_INTERVAL = 0.1
#: Seconds between two INFO records of ``verbose=2`` within a pass: a long
#: pass logs its progress a few times a second, a short one not at all.
LOG_INTERVAL = 0.5

#: The phases of a pass whose wall seconds ``history_`` records.
PHASES = ("local", "global", "bound", "safety")

HISTORY_DTYPE = np.dtype(
    [("time", "f8"), ("samples", "f8"), ("steps", "i8"), ("elbo", "f8")]
    + [(f"{phase}_time", "f8") for phase in PHASES]
    + [("transfer_time", "f8"), ("serial_time", "f8")]
)
TRACE_DTYPE = np.dtype([("t", "i8"), ("rho", "f8"), ("rejected", "i4"), ("accepted", "?")])

_local = threading.local()


def _callbacks():
    """The callbacks of the :func:`monitor` blocks active on this thread."""
    return getattr(_local, "callbacks", ())


@contextmanager
def monitor(callback):
    """Call ``callback`` after every step and pass of the fits in the block.

    Every skvi estimator fitted inside the ``with`` block on this thread
    (``fit``, ``partial_fit`` or ``apply_statistics``, also inside a
    pipeline or a single-process search) calls ``callback(record)`` with a
    :class:`FitRecord` after each step, after each pass of ``fit`` and at
    the end of each ``partial_fit`` call.  When it returns ``False`` or
    raises ``StopIteration``, the fit ends after that step or pass: the
    estimator keeps the parameters it reached and its fitted attributes are
    valid, with ``converged_ = False``, ``n_iter_`` counting the passes begun
    and no "did not converge" warning.  A stop inside a pass ends the pass
    there without computing its ELBO.  Any other exception propagates.
    Blocks nest: every active callback is called, and any of them can stop.
    The callback is the engine's, not the estimator's: it is not a
    hyperparameter, is not cloned, and fits on other threads or processes
    (``n_jobs`` of a search) do not see it.

    Parameters
    ----------
    callback : callable
        ``callback(record)``, with ``record`` a :class:`FitRecord`; its
        return value ``False`` stops the fit (None or True continue).

    Yields
    ------
    callback : callable
        The callback, unchanged.

    See Also
    --------
    FitRecord : what the callback receives.
    skvi.plotting.plot_elbo : the ELBO curves of fitted estimators.

    Examples
    --------
    Stop a fit after two passes, and collect the ELBO of each pass:

    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine import monitor
    >>> X = np.random.RandomState(0).normal(size=(200, 2))
    >>> seen = []
    >>> def two_passes(record):
    ...     if record.event == "pass":
    ...         seen.append(record.elbo)
    ...         return record.pass_index < 2
    >>> est = GaussianGammaVB(learning_method="online", batch_size=50, max_iter=10)
    >>> with monitor(two_passes):
    ...     est = est.fit(X)
    >>> est.n_iter_, est.converged_, seen == est.lower_bounds_
    (2, False, True)
    """
    if not callable(callback):
        raise TypeError(f"monitor needs a callable, got {callback!r}")
    previous = _callbacks()
    _local.callbacks = previous + (callback,)
    try:
        yield callback
    finally:
        _local.callbacks = previous


class FitRecord:
    """What a :func:`monitor` callback is told after a step or a pass.

    Parameters
    ----------
    estimator : SVIEstimator
        The estimator being fitted (a search or a pipeline may fit several).
    event : {'step', 'pass', 'partial_fit'}
        ``'step'``: after a step (of ``fit``, ``partial_fit`` or
        ``apply_statistics``); ``'pass'``: after a pass of ``fit``, its
        ELBO computed; ``'partial_fit'``: at the end of a ``partial_fit``
        call.
    t : int
        Steps taken so far (``n_batch_iter_``).
    rho : float
        Step size of the last step (the schedule's value times the step
        safety's reduction; of its last attempt when it was skipped).
    elbo : float or None
        The ELBO when the engine knows it, else None: after a pass of
        ``fit``, the value appended to ``lower_bounds_`` (None when the pass
        is not evaluated); after a ``partial_fit`` step, its minibatch
        estimate (the value appended to ``lower_bounds_``); at the end of a
        ``partial_fit`` call, ``lower_bound_``; None after a step of ``fit``.
    elapsed : float
        Seconds spent in the engine's calls since ``fit`` began (the
        ``history_`` clock: it continues over ``partial_fit`` calls).
    samples_seen : float
        Samples processed by the steps since ``fit`` began (weighted by
        ``sample_weight``; each pass counts its rows again).
    pass_index : int
        The pass of ``fit`` (from 1); for ``partial_fit``, the call (from 1
        since ``fit`` or the first ``partial_fit``); 0 for
        ``apply_statistics``.
    batch : int
        The minibatch within the pass or call, from 1 (0 for a pass or
        call record).
    n_batches : int or None
        Minibatches of the pass or call, None while unknown (a model with
        its own minibatch scheme, in its first pass).
    rejected : int
        Attempts of the step rejected by step safety (0 when the first was
        accepted); for a pass or call, those of all its steps.
    accepted : bool
        Whether the step was taken (False when every attempt was rejected
        and the minibatch skipped); True for a pass or call record.

    See Also
    --------
    monitor : registers the callbacks that receive these records.

    Examples
    --------
    >>> from skvi.engine import FitRecord
    >>> r = FitRecord(None, "step", t=3, rho=0.5, elbo=None, elapsed=0.01,
    ...               samples_seen=30.0, pass_index=1, batch=3, n_batches=10)
    >>> r.event, r.t, r.rho, r.rejected, r.accepted
    ('step', 3, 0.5, 0, True)
    """

    __slots__ = (
        "estimator",
        "event",
        "t",
        "rho",
        "elbo",
        "elapsed",
        "samples_seen",
        "pass_index",
        "batch",
        "n_batches",
        "rejected",
        "accepted",
    )

    def __init__(
        self,
        estimator,
        event,
        t,
        rho,
        elbo,
        elapsed,
        samples_seen,
        pass_index,
        batch=0,
        n_batches=None,
        rejected=0,
        accepted=True,
    ):
        self.estimator = estimator
        self.event = event
        self.t = t
        self.rho = rho
        self.elbo = elbo
        self.elapsed = elapsed
        self.samples_seen = samples_seen
        self.pass_index = pass_index
        self.batch = batch
        self.n_batches = n_batches
        self.rejected = rejected
        self.accepted = accepted

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__[1:])
        return f"FitRecord({type(self.estimator).__name__}, {fields})"


class PhaseClock:
    """Wall seconds of a fit's phases (local steps, global step, bounds, step safety).

    Phases nest; each counts its own time only (a bound computed by the step
    safety's test is bound time, not safety time).

    Examples
    --------
    >>> from skvi.engine.monitoring import PhaseClock
    >>> clock = PhaseClock()
    >>> with clock.phase("local"):
    ...     pass
    >>> sorted(clock.totals)
    ['bound', 'global', 'local', 'safety']
    """

    def __init__(self):
        self.totals = dict.fromkeys(PHASES, 0.0)
        self._stack = []

    @contextmanager
    def phase(self, name):
        now = time.perf_counter()
        stack = self._stack
        if stack:  # the enclosing phase pauses
            outer, since = stack[-1]
            self.totals[outer] += now - since
        stack.append([name, now])
        try:
            yield
        finally:
            end = time.perf_counter()
            _, since = stack.pop()
            self.totals[name] += end - since
            if stack:
                stack[-1][1] = end

    def snapshot(self, executor):
        """The phases' totals and the executor's parallel and transfer seconds so far."""
        return (dict(self.totals), executor.parallel_seconds, executor.transfer_seconds)

    def since(self, before, executor, wall):
        """``history_``'s time fields of a pass since ``before``: phases, transfer, serial.

        The serial time is the pass's wall time spent outside the
        executor's parallel maps (``wall`` minus their seconds).
        """
        totals, parallel, transfer = before
        return tuple(
            [self.totals[p] - totals[p] for p in PHASES]
            + [
                executor.transfer_seconds - transfer,
                max(wall - (executor.parallel_seconds - parallel), 0.0),
            ]
        )


class _Table:
    """Rows of numbers appended one at a time, thinned to at most ``TRACE_SIZE``.

    The first quarter of the rows is kept exactly; later rows are kept when
    their index is a multiple of the stride (doubled whenever the table is
    full), or when flagged (a rejected step) while the flagged rows fit, and
    the latest row is always there (it is replaced by the next if it is
    neither).  Appending is amortised O(1) and the memory is bounded.
    """

    def __init__(self, dtype):
        self.size = max(int(TRACE_SIZE), 8)
        self.head = self.size // 4
        # Zeros, not np.empty: the rows not yet used travel in a pickle, and
        # uninitialised memory may hold whatever the process freed (the
        # training rows among it).
        self.rows = np.zeros(min(64, self.size), dtype)
        self.keys = np.zeros(self.rows.shape[0], np.int64)
        self.flags = np.zeros(self.rows.shape[0], bool)
        self.n = 0  # rows stored
        self.count = 0  # rows appended
        self.stride = 1
        self.provisional = False  # whether the last stored row is only the latest

    def append(self, values, flagged=False):
        key = self.count
        self.count += 1
        if self.provisional:
            self.n -= 1
            self.provisional = False
        if self.n == self.rows.shape[0]:
            self._make_room()
        keep = key < self.head or key % self.stride == 0 or flagged
        self.rows[self.n] = values
        self.keys[self.n] = key
        self.flags[self.n] = flagged
        self.n += 1
        self.provisional = not keep

    def _make_room(self):
        if self.rows.shape[0] < self.size:
            new = min(2 * self.rows.shape[0], self.size)
            self.rows = np.resize(self.rows, new)
            self.keys = np.resize(self.keys, new)
            self.flags = np.resize(self.flags, new)
            return
        keys, flags = self.keys[: self.n], self.flags[: self.n]
        limit = 3 * self.size // 4
        while True:
            self.stride *= 2
            grid = (keys < self.head) | (keys % self.stride == 0)
            keep = grid | flags
            if np.count_nonzero(keep) > limit:
                keep = grid  # too many rejected steps to keep them all
            if np.count_nonzero(keep) <= limit:
                break
        n = int(np.count_nonzero(keep))
        self.rows[:n] = self.rows[: self.n][keep]
        self.keys[:n] = keys[keep]
        self.flags[:n] = flags[keep]
        self.n = n

    def array(self):
        """The rows kept, a structured array (a copy)."""
        return self.rows[: self.n].copy()


def _seconds(s):
    """A duration for the progress line."""
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def _isatty(stream):
    """Whether ``stream`` is a terminal (False when it cannot tell)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _redraws(stream):
    """Whether a line written to ``stream`` can be redrawn with a carriage return.

    A terminal can, and so can a Jupyter notebook's standard error (the
    kernel's stream object, which is no terminal), whose output area
    honours ``\\r``; a file or a pipe cannot.
    """
    if _isatty(stream):
        return True
    return type(stream).__module__.split(".")[0] in ("ipykernel", "google")


class _ProgressLine:
    """The progress of ``verbose=1`` on standard error.

    On a terminal or in a notebook, one line redrawn with carriage returns
    while a pass runs and finished with a newline at its end.  Elsewhere (standard error
    redirected to a file or a pipe, as in a log or a batch job) a redrawn
    line would pile up as one long line of ``\\r``-separated updates, so
    only the finished lines are written, one newline-terminated line each,
    and nothing in between.
    """

    def __init__(self, start):
        self.stream = sys.stderr
        self.tty = _redraws(self.stream)
        self.width = 0
        self.last = start  # the first redraw waits PROGRESS_INTERVAL from the start
        self.open = False

    def _write(self, text):
        stream = self.stream
        if stream is None:
            return
        try:
            stream.write(text)
            stream.flush()
        except (AttributeError, OSError, ValueError):
            self.stream = None

    def update(self, text, now):
        self.last = now
        if not self.tty:  # no redraws in a log
            return
        self._write("\r" + text.ljust(self.width))
        self.width = len(text)
        self.open = True

    def finish(self, text):
        if not self.tty:
            self._write(text + "\n")
            return
        self._write("\r" + text.ljust(self.width) + "\n")
        self.width = 0
        self.open = False

    def close(self):
        if self.open:
            self._write("\n")
            self.width = 0
            self.open = False


class _Run:
    """The monitoring of one engine call: callbacks, display, log, clock.

    ``kind`` is ``'fit'``, ``'partial_fit'`` or ``'apply_statistics'``;
    ``start`` the ``perf_counter`` at the call's start and ``offset`` the
    engine seconds of earlier calls.
    """

    def __init__(self, est, kind, start, offset=0.0):
        self.est = est
        self.name = type(est).__name__
        self.kind = kind
        self.start = start
        self.offset = offset
        self.callbacks = _callbacks()
        verbose = int(getattr(est, "verbose", 0) or 0)
        self.line = _ProgressLine(start) if verbose == 1 and kind != "apply_statistics" else None
        self.log = verbose >= 2 and logger.isEnabledFor(logging.INFO)
        self.debug = verbose >= 2 and logger.isEnabledFor(logging.DEBUG)
        # Whether anything wants to hear about every step (a progress line
        # that is not on a terminal shows only finished passes; the log
        # takes a record within a pass every LOG_INTERVAL seconds).
        redraws = self.line is not None and self.line.tty
        self.per_step = bool(self.callbacks) or redraws or self.log
        self.last_log = start
        self.stopped = False
        self.interval = max(int(getattr(est, "verbose_interval", 1) or 1), 1)
        self.pass_index = 0
        self.pass_start = start
        self.steps_before = 0
        self.rejected_before = 0
        self.n_batches = None
        self.pass_seconds = []
        self.known_elbo = None  # (pass, ELBO) of the last evaluated pass

    # ------------------------------------------------------------- helpers
    def elapsed(self, now=None):
        """Engine seconds since ``fit`` began (this call's and the earlier ones')."""
        return self.offset + ((time.perf_counter() if now is None else now) - self.start)

    def _ask(self, record):
        """Hand ``record`` to every callback; True when one of them stops the fit."""
        for callback in self.callbacks:
            try:
                answer = callback(record)
            except StopIteration:
                answer = False
            if answer is not None and not answer:
                self.stopped = True
        return self.stopped

    def _record(self, event, now, elbo, batch, rejected, accepted, rho=None):
        est = self.est
        st = est._svi
        if rho is None:
            rho = st.last_step[0] if st.last_step is not None else np.nan
        return FitRecord(
            est,
            event,
            t=est.n_batch_iter_,
            rho=float(rho),
            elbo=elbo,
            elapsed=self.elapsed(now),
            samples_seen=float(st.samples),
            pass_index=self.pass_index,
            batch=batch,
            n_batches=self.n_batches,
            rejected=int(rejected),
            accepted=bool(accepted),
        )

    def _eta(self, now, batch):
        """Seconds to the end of ``max_iter`` passes (fit) or of the call, or None."""
        in_pass = now - self.pass_start
        if self.kind == "fit":
            remaining = max_passes(self.est) - self.pass_index
            if self.pass_seconds:
                per_pass = float(np.mean(self.pass_seconds))
            elif self.n_batches and batch:
                per_pass = in_pass * self.n_batches / batch
            else:
                return None
            return max(per_pass - in_pass, 0.0) + remaining * per_pass
        if self.n_batches and batch:
            return in_pass * (self.n_batches - batch) / batch
        return None

    # --------------------------------------------------------------- events
    def begin_pass(self, index, n_batches):
        """A pass of ``fit`` (or a ``partial_fit`` call) starts."""
        self.pass_index = index
        self.n_batches = n_batches
        self.pass_start = self.last_log = time.perf_counter()
        self.steps_before = self.est.n_batch_iter_
        self.rejected_before = self.est.n_rejected_steps_

    def step(self, batch, elbo=None):
        """After a step; True when a callback stops the fit."""
        now = time.perf_counter()
        st = self.est._svi
        rho, rejected, accepted = st.last_step
        if self.callbacks or self.debug:
            record = self._record("step", now, elbo, batch, rejected, accepted, rho)
            if self.debug:
                logger.debug(
                    "[%s] step %d: rho = %.6g%s%s",
                    self.name,
                    record.t,
                    rho,
                    f", {rejected} attempt(s) rejected" if rejected else "",
                    "" if accepted else ", skipped",
                    extra={"skvi": record},
                )
            if self.callbacks:
                self._ask(record)
        line = self.line
        if line is not None and line.tty and now - line.last >= PROGRESS_INTERVAL:
            line.update(self._step_text(now, batch, elbo), now)
        if self.log and now - self.last_log >= LOG_INTERVAL and batch != self.n_batches:
            # Progress within a pass: plain records (a handler draws them as
            # it draws every record), the pass's own record ends it.
            self.last_log = now
            logger.info(
                self._step_text(now, batch, elbo),
                extra={"skvi": self._record("step", now, elbo, batch, rejected, accepted, rho)},
            )
        return self.stopped

    def _step_text(self, now, batch, elbo):
        est = self.est
        steps = est.n_batch_iter_ - self.steps_before
        rate = steps / max(now - self.pass_start, 1e-12)
        of = f"/{self.n_batches}" if self.n_batches else ""
        if self.kind == "fit":
            where = f"pass {self.pass_index}/{max_passes(est)}, minibatch {batch}{of}"
        else:
            where = f"partial_fit, minibatch {batch}{of}"
        text = f"[{self.name}] {where}: {rate:.1f} steps/s, elapsed {self.elapsed(now):.2f} s"
        eta = self._eta(now, batch)
        if eta is not None:
            text += f", ETA {_seconds(eta)}"
        if elbo is not None:
            text += f", minibatch ELBO = {elbo:.6g}"
        elif self.known_elbo is not None:
            text += f", ELBO = {self.known_elbo[1]:.10g} (pass {self.known_elbo[0]})"
        return text

    def end_pass(self, bound, converged, interrupted):
        """After a pass of ``fit``; True when a callback stops the fit."""
        est = self.est
        now = time.perf_counter()
        seconds = now - self.pass_start
        self.pass_seconds.append(seconds)
        it = self.pass_index
        if bound is not None:
            self.known_elbo = (it, bound)
        rejected = est.n_rejected_steps_ - self.rejected_before
        if self.callbacks and not self.stopped:
            self._ask(self._record("pass", now, bound, 0, rejected, True))
        done = converged or self.stopped or it >= max_passes(est)
        if self.line is None and not self.log:
            return self.stopped
        rate = (est.n_batch_iter_ - self.steps_before) / max(seconds, 1e-12)
        shown = "not evaluated" if bound is None else f"{bound:.10g}"
        text = (
            f"[{self.name}] pass {it}/{max_passes(est)}: ELBO = {shown}, "
            f"{rate:.1f} steps/s, elapsed {self.elapsed(now):.2f} s"
        )
        if not done:
            text += f", ETA {_seconds((max_passes(est) - it) * float(np.mean(self.pass_seconds)))}"
        if rejected:
            text += f", {rejected} step(s) rejected"
        if converged:
            text += ", converged"
        elif interrupted or self.stopped:
            text += ", stopped by monitor"
        if self.line is not None:
            if done or it % self.interval == 0:
                self.line.finish(text)
            else:
                self.line.update(text, now)
        if self.log:
            logger.info(text, extra={"skvi": self._record("pass", now, bound, 0, rejected, True)})
        return self.stopped

    def end_call(self, elbo, call_index):
        """At the end of a ``partial_fit`` call."""
        est = self.est
        now = time.perf_counter()
        self.pass_index = call_index
        rejected = est.n_rejected_steps_ - self.rejected_before
        record = None
        if self.callbacks or self.log:
            record = self._record("partial_fit", now, elbo, 0, rejected, True)
        if self.callbacks and not self.stopped:
            self._ask(record)
        if self.line is None and not self.log:
            return
        steps = est.n_batch_iter_ - self.steps_before
        rate = steps / max(now - self.pass_start, 1e-12)
        shown = "unknown" if elbo is None else f"{elbo:.10g}"
        text = (
            f"[{self.name}] partial_fit: {steps} step(s), ELBO = {shown}, "
            f"{rate:.1f} steps/s, {est._svi.samples:.10g} samples seen, "
            f"elapsed {self.elapsed(now):.2f} s"
        )
        if rejected:
            text += f", {rejected} step(s) rejected"
        if self.stopped:
            text += ", stopped by monitor"
        if self.line is not None:
            self.line.finish(text)
        if self.log:
            logger.info(text, extra={"skvi": record})

    def close(self):
        """Finish an unfinished progress line (also when the call raised)."""
        if self.line is not None:
            self.line.close()


# ---------------------------------------------------------------- warnings
def _package_dir(module):
    return os.path.join(os.path.dirname(os.path.abspath(module.__file__)), "")


_INTERNAL_DIRS = (
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ""),
    _package_dir(sklearn),
    _package_dir(joblib),
)


def warn_user(message, category=UserWarning):
    """Warn at the user's line: the first frame outside skvi, scikit-learn and joblib.

    An estimator's ``fit`` reaches the engine through a varying number of
    frames (scikit-learn's ``_fit_context`` wrapper, a mixture's restarts,
    a pipeline or a search), so no fixed ``stacklevel`` is right for all.
    """
    level = 1
    frame = sys._getframe(0)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.isabs(filename):
            filename = os.path.abspath(filename)
        if not filename.startswith(_INTERNAL_DIRS):
            break
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
