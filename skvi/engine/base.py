"""The shared stochastic natural-gradient engine.

Every estimator in skvi is the same loop with a different model plugged in::

    for t = 1, 2, ...
        S       <- a minibatch
        local   <- the local step on S with the globals held fixed   (E-step)
        stats   <- expected sufficient statistics of S for each global factor
        lam_hat <- eta_prior + (N / |S|) * stats                     (target)
        lam     <- (1 - rho_t) * lam + rho_t * lam_hat               (step)

Batch coordinate ascent (CAVI / VMP) is the case ``S = all data`` and
``rho = 1``.  :class:`SVIMixin` owns this loop: minibatches and passes, the
step counter, the schedule, the ``N / |S|`` scaling, Paquet's update orders,
the ELBO history and convergence test, step safety, verbose output and
``random_state``.  A model supplies only the hooks listed in
:class:`SVIMixin`.

Natural parameters of a global factor are a tuple of arrays (for a Gaussian:
``(precision * mean, -precision / 2)``), see :mod:`skvi.expfam`; the engine
keeps them in ``natural_params_``, a dict from factor name to that tuple.
"""

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..schedules import make_schedule

__all__ = ["SVIMixin", "ENGINE_PARAMETER_CONSTRAINTS", "even_batches"]

#: Largest number of times one step's size is halved before the step is
#: skipped (its minibatch then leaves the globals unchanged).
MAX_BACKOFF = 30
#: Rows of the probe sample that online ``fit`` tests its steps on.
PROBE_SIZE = 2000
# Rows of a sparse X gathered at once by the default online batching.
SPARSE_GATHER_ROWS = 8192

ENGINE_PARAMETER_CONSTRAINTS = {
    "learning_method": [StrOptions({"batch", "online"})],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_offset": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_decay": [Interval(numbers.Real, 0, 1, closed="both")],
    "learning_rate": [
        None,
        Interval(numbers.Real, 0, 1, closed="right"),
        HasMethods(["__call__", "validate", "observe"]),
    ],
    "total_samples": [
        StrOptions({"auto"}),
        Interval(numbers.Real, 0, None, closed="neither"),
    ],
    "update_order": [StrOptions({"sequential", "joint"})],
    "step_safety": ["boolean"],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


def _blend(current, target, rho, grads=None):
    """Return ``current + rho * (target - current)`` for a tuple of arrays.

    Computed in place in fresh arrays (``current`` and ``target`` are left
    untouched).  When ``grads`` is a list, the natural gradients
    ``target - current`` are appended to it.
    """
    out = []
    for c, g in zip(current, target):
        diff = np.subtract(g, c)
        if grads is not None:
            grads.append(diff.copy())
        diff *= rho
        diff += c
        out.append(diff)
    return tuple(out)


def even_batches(n_samples, batch_size):
    """Slices cutting ``n_samples`` rows into near-equal minibatches.

    ``ceil(n_samples / batch_size)`` slices whose sizes differ by at most
    one, none larger than ``batch_size`` (unlike
    :func:`sklearn.utils.gen_batches`, whose last slice takes the
    remainder, however small).

    Parameters
    ----------
    n_samples : int
        Number of rows.
    batch_size : int
        Largest minibatch size, at least 1.

    Returns
    -------
    list of slice
        Consecutive slices covering ``range(n_samples)``; empty for no rows.

    Examples
    --------
    >>> from skvi.engine import even_batches
    >>> [(s.start, s.stop) for s in even_batches(10, 4)]
    [(0, 4), (4, 7), (7, 10)]
    """
    n_samples, batch_size = int(n_samples), int(batch_size)
    n_batches = -(-n_samples // batch_size)
    if n_batches == 0:
        return []
    sizes = np.full(n_batches, n_samples // n_batches)
    sizes[: n_samples % n_batches] += 1
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class SVIMixin:
    """Mixin that runs stochastic (and batch) variational inference.

    An estimator inherits from this mixin and from
    :class:`sklearn.base.BaseEstimator`, stores the engine's
    hyperparameters in its ``__init__`` (names below) and implements the
    model hooks.  ``fit`` and ``partial_fit`` come from the mixin.

    **Engine hyperparameters** (read from ``self``):

    learning_method : {'batch', 'online'}
        ``'batch'``: coordinate ascent, every step uses all the data with
        ``rho = 1``.  ``'online'``: stochastic natural-gradient steps on
        shuffled minibatches of ``batch_size`` rows.
    batch_size : int
        Largest number of rows per minibatch in online ``fit``: a pass cuts
        the shuffled rows into ``ceil(N / batch_size)`` near-equal minibatches.
    max_iter : int
        Maximum number of passes over the data in ``fit``.
    tol : float
        ``fit`` stops when the relative change of the ELBO between two
        passes, ``|L_k - L_{k-1}| / |L_{k-1}|``, falls below ``tol``.
    learning_offset, learning_decay : float
        ``tau`` and ``kappa`` of the default schedule
        ``rho_t = (t + tau) ** -kappa``.
    learning_rate : None, float or :class:`~skvi.schedules.Schedule`
        Overrides the two above when given: a schedule object, or a float
        for a constant step.
    total_samples : 'auto' or float
        The ``N`` in ``N / |S|`` for ``partial_fit`` (``fit`` always uses
        the number of rows it is given).  ``'auto'`` uses the running count
        of rows seen so far by ``partial_fit``, including the current
        minibatch: the right choice for a stream of unknown length, where
        the posterior then describes the data seen so far.
    update_order : {'sequential', 'joint'}
        With several global factors: ``'sequential'`` (Paquet's option (a))
        updates each factor in turn, each target computed from the factors
        already updated in this step; ``'joint'`` (option (b), Hoffman et
        al.) computes every target from the same snapshot, then updates all.
        Only ``'sequential'`` is coordinate ascent, which guarantees a
        non-decreasing ELBO in batch mode.
    step_safety : bool
        When True, a step that makes a global factor invalid (non-finite,
        non-positive precision, Gamma shape or rate, or a covariance that is
        not positive definite), that the model's ``_step_acceptable``
        flags as an overshoot, or (online, for models with a
        ``_probe_loss``) that raises the expected loss per row of a probe
        sample too far, is rejected: the previous parameters are
        restored, ``rho`` is halved for this and every later step, and the
        step is retried, up to ``MAX_BACKOFF`` halvings, after which the
        minibatch is skipped.  Rejections are counted in
        ``n_rejected_steps_`` and reported once with a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    random_state : int, RandomState or None
        Seeds initialisation and the minibatch shuffling of online ``fit``.
    verbose : int
        Print one line per pass (ELBO, steps per second, elapsed time).

    **Model hooks**:

    _global_factors : tuple of str
        Names of the global factors, in sequential update order.
    _factor_families : dict
        Factor name to an exponential family of :mod:`skvi.expfam` (its
        ``valid_natural`` is the step-safety test).
    _local_depends_on_globals : bool
        False when the local step only summarises the data (no local
        latent variables), so batch mode computes it once.
    _exact_pass_bound : bool
        True when the model overrides ``_pass_lower_bound`` with the exact
        full-data ELBO after each online pass.
    _validate_input(X, reset)
        Check and convert X; ``reset=True`` on the first fit.  It may return
        any object with ``shape[0]`` and row indexing (``X[rows]``), e.g.
        a small container of aligned arrays for supervised data.
    _online_batches(X, random_state)
        Optional: yield ``(minibatch, N / |S|)`` for one online pass
        (default: shuffled near-equal minibatches of at most ``batch_size`` rows).
    _initialize_globals(X, random_state) -> dict
        Initial natural parameters of every global factor.
    _prior_natural() -> dict
        Natural parameters of the prior of every global factor
        (broadcastable to the posterior's).
    _local_step(X, params) -> local
        The E-step on minibatch X with the globals ``params`` fixed.
    _update_factor(name, current, stats, scale, rho, grads) -> (new, valid)
        Optional: the update of one factor (default: the factor's update
        rule towards ``prior + scale * stats`` and the family's validity
        test).
    _update_rule(name) -> UpdateRule or None
        Optional: a pluggable rule from :mod:`skvi.update_rules` for a Gaussian
        factor (default None: the natural-gradient blend).  Its per-factor
        state (AdaGrad accumulators) is kept by the engine and committed
        only with an accepted step.
    _expected_stats(name, X, local, params) -> tuple of arrays
        Expected sufficient statistics of X for factor ``name``, summed
        over the rows of X, given the current ``params`` (which, with
        ``update_order='sequential'``, hold the factors already updated
        in this step).
    _local_bound(X, local, params) -> float
        The data part of the ELBO for the rows of X (expected log joint of
        data and local variables minus the local entropies), unscaled.
    _global_bound(params) -> float
        The global part of the ELBO: minus the KL divergence of every global
        factor to its prior.
    _on_params_updated()
        Optional: refresh derived fitted attributes after fit/partial_fit.
    _step_acceptable(X, params) -> bool
        Optional: with ``step_safety``, a model-specific test of a proposed
        step whose factors are all valid (``params``; the current ones are
        still in ``natural_params_``), online or batch.  False rejects it
        like an invalid step.  Models whose steps can overshoot without
        leaving the valid set use it to detect the overshoot, e.g. the
        non-conjugate fixed-point steps of seed 002 in batch mode, which
        are not guaranteed to increase the ELBO (online steps have the probe
        test of ``_probe_loss``).
    _probe_loss(probe, params) -> float or None
        Optional: the expected negative log-likelihood per row of the probe
        under ``params`` (default None: no probe test).  With
        ``step_safety``, an online step is rejected when this loss is not
        finite or exceeds the smallest value seen after an accepted step by
        more than ``_probe_growth`` times that value.  The probe is a
        fixed random sample of ``PROBE_SIZE`` rows in
        online ``fit`` (drawn from a copy of the random state, so the
        minibatches are unchanged) and the previous minibatch in
        ``partial_fit``.  A noisy step that merely jitters the parameters
        never comes close; an overshoot along an unstable direction (the
        growing means of Paquet's divergence, seed 000 Fig. 2, or a
        fixed-point mean step of seed 002 that jumps) does at once, while
        every factor stays valid.
    _probe_growth : float
        The fraction of its best value by which a step may raise the
        probe's loss (default 1.0: rejected when the loss more than
        doubles).
    _prepare_probe(X) -> probe
        Optional: index the probe rows once for ``_probe_loss`` (default:
        the rows as they are).
    _update_hyperparameters(X, local, rho) -> bool
        Optional: an empirical-Bayes step on the prior after each accepted
        step (the engine then re-reads ``_prior_natural()`` when it returns
        True).
    _evaluate_pass(it) -> bool
        Optional: whether ``fit`` computes the ELBO after pass ``it``
        (default: every pass).  Passes not evaluated add nothing to
        ``lower_bounds_`` and are not tested for convergence.
    _pass_converged(previous, bound) -> bool
        Optional: the convergence test between two evaluated passes
        (default: relative ELBO change below ``tol``).
    _warn_not_converged() -> bool
        Optional: whether ``fit`` warns when it stops at ``max_iter``
        (default: when ``tol > 0`` and ``max_iter > 1``).

    Attributes
    ----------
    natural_params_ : dict
        Natural parameters of every global factor.
    lower_bounds_ : list of float
        ELBO after each pass of ``fit`` (in online mode, the running
        estimate: the global part plus the data parts of the minibatches as
        they were visited), and after each ``partial_fit`` call (the global
        part plus ``N / |S|`` times the minibatch's data part).
    lower_bound_ : float
        The last entry of ``lower_bounds_``.
    n_iter_ : int
        Passes over the data made by the last ``fit``.
    n_batch_iter_ : int
        Natural-gradient steps ``t`` taken so far.
    n_samples_seen_ : int
        Rows processed by ``fit`` (last call) or all ``partial_fit`` calls.
    converged_ : bool
        Whether the last ``fit`` met ``tol`` before ``max_iter``.
    n_rejected_steps_ : int
        Steps rejected by step safety.

    See Also
    --------
    skvi.GaussianGammaVB : a complete model built on this mixin.

    Examples
    --------
    Every skvi estimator is an ``SVIMixin``; its ``fit`` is the engine's loop.

    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine import SVIMixin
    >>> est = GaussianGammaVB(learning_method="online", batch_size=10, max_iter=2, tol=0)
    >>> isinstance(est, SVIMixin)
    True
    >>> X = np.random.RandomState(0).normal(size=(100, 2))
    >>> est.fit(X).n_batch_iter_
    20
    >>> sorted(est.natural_params_)
    ['mean', 'precision']
    """

    _global_factors = ()
    _factor_families = {}
    _local_depends_on_globals = True
    _exact_pass_bound = False

    # ------------------------------------------------------------------ hooks
    def _local_step(self, X, params):
        return None

    def _on_params_updated(self):
        pass

    def _update_hyperparameters(self, X, local, rho):
        return False

    def _evaluate_pass(self, it):
        return True

    def _step_acceptable(self, X, params):
        return True

    _probe_growth = 1.0

    def _probe_loss(self, probe, params):
        return None

    def _prepare_probe(self, X):
        return X

    def _pass_converged(self, previous, bound):
        change = abs(bound - previous) / max(abs(previous), np.finfo(float).tiny)
        return change < self.tol

    def _warn_not_converged(self):
        return self.tol > 0 and self.max_iter > 1

    # ------------------------------------------------------------ public API
    def _engine_fit(self, X):
        """Run ``fit``: batch coordinate ascent or online passes."""
        X = self._validate_input(X, reset=True)
        random_state = check_random_state(self.random_state)
        self._reset_engine(X, random_state)
        n_samples = X.shape[0]
        self.n_samples_seen_ = n_samples
        online = self.learning_method == "online"
        if online and self.step_safety:
            self._set_probe(X, random_state)
        start = time.perf_counter()
        previous = None
        self.converged_ = False
        self.n_iter_ = 0
        local = None
        for it in range(1, self.max_iter + 1):
            steps_before = self.n_batch_iter_
            accepted_before = self._n_accepted_steps
            pass_start = time.perf_counter()
            evaluate = self._evaluate_pass(it)
            if online:
                running = 0.0
                want_bound = evaluate and not self._exact_pass_bound
                for Xb, scale in self._online_batches(X, random_state):
                    _, bound = self._step(Xb, scale, online=True, want_bound=want_bound)
                    running += bound
                bound = self._pass_lower_bound(X, running) if evaluate else None
            else:
                if local is None or self._local_depends_on_globals:
                    local = self._local_step(X, self.natural_params_)
                _, bound = self._step(X, 1.0, online=False, local=local, want_bound=evaluate)
                bound = bound + self._global_bound(self.natural_params_) if evaluate else None
            self.n_iter_ = it
            if bound is not None:
                self.lower_bounds_.append(float(bound))
            if self.verbose:
                now = time.perf_counter()
                rate = (self.n_batch_iter_ - steps_before) / max(now - pass_start, 1e-12)
                shown = "not evaluated" if bound is None else f"{bound:.10g}"
                print(
                    f"[{type(self).__name__}] pass {it}/{self.max_iter}: "
                    f"ELBO = {shown}, {rate:.1f} steps/s, "
                    f"elapsed {now - start:.2f} s"
                )
            if bound is None:
                continue
            if self._n_accepted_steps == accepted_before:
                # Every step of the pass was rejected: the parameters did not
                # move, so an unchanged ELBO says nothing about convergence.
                continue
            if previous is not None and self._pass_converged(previous, bound):
                self.converged_ = True
                break
            previous = bound
        self.lower_bound_ = self.lower_bounds_[-1] if self.lower_bounds_ else None
        if not self.converged_ and self._warn_not_converged():
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter="
                f"{self.max_iter} passes (relative ELBO change above "
                f"tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
            )
        self._warn_rejections(0)
        self._on_params_updated()
        return self

    def _engine_partial_fit(self, X):
        """Run one natural-gradient step on minibatch X."""
        first = not hasattr(self, "natural_params_")
        X = self._validate_input(X, reset=first)
        if first:
            self._partial_fit_rng = check_random_state(self.random_state)
            self._reset_engine(X, self._partial_fit_rng)
            self.n_samples_seen_ = 0
            self.n_iter_ = 0
            self.converged_ = False
        rejected_before = self.n_rejected_steps_
        n_batch = X.shape[0]
        self.n_samples_seen_ += n_batch
        if self.total_samples == "auto":
            total = self.n_samples_seen_
        else:
            total = float(self.total_samples)
        scale = total / n_batch if n_batch else 0.0
        if self.step_safety:
            # The probe of a stream is the previous minibatch.
            last, self._last_batch = self._last_batch, X
            self._probe = None
            if last is not None:
                self._use_probe(self._prepare_probe(last))
        _, bound = self._step(X, scale, online=True)
        bound = self._global_bound(self.natural_params_) + scale * bound
        self.lower_bounds_.append(float(bound))
        self.lower_bound_ = float(bound)
        self._warn_rejections(rejected_before)
        self._on_params_updated()
        return self

    # -------------------------------------------------------------- internals
    def _reset_engine(self, X, random_state):
        self._schedule = make_schedule(
            self.learning_rate, self.learning_offset, self.learning_decay
        )
        self.natural_params_ = {
            name: tuple(np.asarray(a) for a in value)
            for name, value in self._initialize_globals(X, random_state).items()
        }
        self._prior = self._prior_natural()
        self.lower_bounds_ = []
        self.n_batch_iter_ = 0
        self.n_rejected_steps_ = 0
        self._rho_backoff = 1.0
        self._n_accepted_steps = 0
        self._rejection_warned = False
        self._rule_states = {}
        self._pending_rule_states = {}
        self._probe = None
        self._probe_best = None
        self._last_batch = None

    def _set_probe(self, X, random_state):
        """Draw the fixed probe sample of online ``fit`` (see ``_probe_loss``)."""
        # From a copy of the generator, so that step safety leaves the
        # minibatch sequence unchanged: without rejections the fit is the same.
        copy = np.random.RandomState()
        copy.set_state(random_state.get_state())
        n = X.shape[0]
        rows = np.sort(copy.choice(n, size=min(n, PROBE_SIZE), replace=False))
        self._use_probe(self._prepare_probe(X[rows]))

    def _use_probe(self, probe):
        """Make ``probe`` the probe, its loss under the current parameters the best."""
        best = self._probe_loss(probe, self.natural_params_)
        if best is None:
            self._probe = None
            return
        self._probe, self._probe_best = probe, best

    def _probe_acceptable(self, params):
        """The probe test of an online step (see ``_probe_loss``)."""
        loss = self._probe_loss(self._probe, params)
        best = self._probe_best
        too_far = np.isfinite(best) and loss > best + self._probe_growth * abs(best)
        if not np.isfinite(loss) or too_far:
            return False
        self._probe_best = min(best, loss) if np.isfinite(best) else loss
        return True

    def _online_batches(self, X, random_state):
        """Yield ``(minibatch, N / |S|)`` for one online pass over X.

        The default shuffles the rows and cuts them into
        ``ceil(N / batch_size)`` minibatches of near-equal size (they differ
        by at most one row, none larger than ``batch_size``).  Equal sizes
        matter: a short last minibatch, e.g. 561 of a9a's 32,561 rows after
        sixteen of 2000, would be weighted ``N / |S|`` = 58 and take the
        noisiest step of the pass, right where a pass's ELBO is measured and
        a fit stops.  ``X`` is whatever ``_validate_input`` returned: an
        array, a sparse matrix, or any object with ``shape[0]`` and row
        indexing.  A model with its own sampling scheme (e.g. a fixed number
        of children per node) overrides this.
        """
        n_samples = X.shape[0]
        order = random_state.permutation(n_samples)
        batches = even_batches(n_samples, self.batch_size)
        if sp.issparse(X):
            # Gather a block of minibatches at once and slice it: scipy's
            # fancy row indexing costs a fixed ~0.5 ms per call, and the
            # block bounds the extra memory to a few minibatches' rows.
            per_block = max(1, SPARSE_GATHER_ROWS // max(self.batch_size, 1))
            for first in range(0, len(batches), per_block):
                group = batches[first : first + per_block]
                offset = group[0].start
                rows = X[order[offset : group[-1].stop]]
                for batch in group:
                    Xb = rows[batch.start - offset : batch.stop - offset]
                    yield Xb, n_samples / Xb.shape[0]
            return
        for batch in batches:
            Xb = X[order[batch]]
            yield Xb, n_samples / Xb.shape[0]

    def _pass_lower_bound(self, X, running_local):
        """ELBO reported after an online pass.

        The running estimate by default.  A model whose full-data ELBO is
        cheap sets ``_exact_pass_bound = True`` (the engine then skips the
        per-step data bounds) and overrides this to compute it exactly.
        """
        return self._global_bound(self.natural_params_) + running_local

    def _update_factor(self, name, current, stats, scale, rho, grads=None):
        """Step factor ``name`` towards ``prior + scale * stats``.

        Returns the new natural parameters and whether they are valid.  The
        default blends every array and tests the family's
        ``valid_natural``; a model overrides this for a factor with its own
        update rule or a cheaper representation of ``stats`` (e.g. LDA's
        statistics, non-zero only at the words of the minibatch).  When
        ``grads`` is a list, the natural gradients are appended to it.
        """
        target = tuple(p + scale * s for p, s in zip(self._prior[name], stats))
        rule = self._update_rule(name)
        if rule is None:
            new = _blend(current, target, rho, grads)
        else:
            if grads is not None:
                grads.extend(np.subtract(t, c) for c, t in zip(current, target))
            new, state = rule.step(
                current, target, rho, self._rho_backoff, self._rule_states.get(name)
            )
            self._pending_rule_states[name] = state
        return new, self._is_valid(name, new)

    def _update_rule(self, name):
        """The :class:`~skvi.update_rules.UpdateRule` of factor ``name``, or None.

        None (the default) is the natural-gradient blend.  Models with
        Gaussian factors and an ``algorithm`` hyperparameter return the
        rule of that algorithm (seed 002: MC-SSVI, H-MC-SSVI, S-DSVI).
        """
        return None

    def _is_valid(self, name, natural):
        family = self._factor_families[name]
        return bool(np.all(family.valid_natural(*natural)))

    def _global_update(self, X, local, scale, rho, want_grads):
        """One update of every global factor; returns (params, grads, ok)."""
        params = dict(self.natural_params_)
        grads = [] if want_grads else None
        names = self._global_factors
        if getattr(self, "update_order", "sequential") == "joint":
            # Option (b): every target from the same snapshot (a copy: the
            # statistics may refer to it after ``params`` moves on).
            snapshot = dict(params)
            stats = {name: self._expected_stats(name, X, local, snapshot) for name in names}
            ok = True
            for name in names:
                params[name], valid = self._update_factor(
                    name, params[name], stats[name], scale, rho, grads
                )
                ok = ok and valid
            return params, grads, ok
        # Option (a): each target from the factors already updated.
        for name in names:
            stats = self._expected_stats(name, X, local, params)
            params[name], valid = self._update_factor(name, params[name], stats, scale, rho, grads)
            if not valid:
                return params, grads, False
        return params, grads, True

    def _step(self, X, scale, online, local=None, want_bound=True):
        """Take one step on X; return (local, data part of the ELBO or 0)."""
        if local is None:
            local = self._local_step(X, self.natural_params_)
        rho = self._schedule(self.n_batch_iter_ + 1) if online else 1.0
        backoff_before = self._rho_backoff
        want_grads = online and self._schedule.needs_gradient
        for _ in range(MAX_BACKOFF + 1):
            rho_eff = rho * self._rho_backoff
            self._pending_rule_states = {}
            params, grads, ok = self._global_update(X, local, scale, rho_eff, want_grads)
            if ok and self.step_safety:
                ok = self._step_acceptable(X, params)
                if ok and online and self._probe is not None:
                    ok = self._probe_acceptable(params)
            if ok or not self.step_safety:
                self.natural_params_ = params
                self._n_accepted_steps += 1
                self._rule_states.update(self._pending_rule_states)
                if want_grads:
                    sq = float(sum(np.vdot(g, g).real for g in grads))
                    self._schedule.observe(sq, grads)
                if self._update_hyperparameters(X, local, rho_eff):
                    self._prior = self._prior_natural()
                break
            # Reject: the previous parameters stay in natural_params_.
            self.n_rejected_steps_ += 1
            self._rho_backoff *= 0.5
        else:
            # No step size helped (the target itself is invalid, e.g. not
            # finite): the minibatch is skipped and later steps keep the
            # step size they had.
            self._rho_backoff = backoff_before
        self.n_batch_iter_ += 1
        if not want_bound:
            return local, 0.0
        return local, self._local_bound(X, local, self.natural_params_)

    def _warn_rejections(self, rejected_before):
        if self.n_rejected_steps_ > rejected_before and not self._rejection_warned:
            self._rejection_warned = True
            warnings.warn(
                f"{type(self).__name__}: {self.n_rejected_steps_} step(s) were "
                "rejected by step safety (an invalid global factor or an "
                "overshoot); the step "
                f"size is now scaled by {self._rho_backoff:g}. Consider a smaller "
                "initial step (larger learning_offset), a warm-up schedule or a "
                "larger batch_size.",
                ConvergenceWarning,
            )
