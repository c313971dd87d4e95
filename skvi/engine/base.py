"""The shared stochastic natural-gradient engine: the loop every estimator runs.

Every estimator in skvi is the same loop with a different model plugged in::

    for t = 1, 2, ...
        S       <- a minibatch
        local   <- the local step on S with the globals held fixed   (E-step)
        stats   <- expected sufficient statistics of S for each global factor
        lam_hat <- eta_prior + (N / |S|) * stats                     (target)
        lam     <- (1 - rho_t) * lam + rho_t * lam_hat               (step)

Batch coordinate ascent (CAVI / VMP) is the case ``S = all data`` and
``rho = 1``.  :class:`SVIEstimator` owns ``fit``, ``partial_fit``, the passes
and the steps; it composes collaborators, each in a module of its own: the
executor that maps block functions over the data (:mod:`.executor`), the
step of the globals (:mod:`.step`), step safety (:mod:`.safety`), per-row
factor groups (:mod:`.rows`), a stream's ``N`` (:mod:`.stream`), the
convergence test (:mod:`.convergence`) and monitoring (:mod:`.monitoring`).
A model supplies hooks and declarative :class:`~skvi.engine.ModelSettings`
(``docs/engine.md``).
"""

import copy
import functools
import inspect
import time

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state, gen_batches

from . import blocks as _fn
from .acceleration import batch_pass
from .convergence import Convergence, evaluates_every
from .executor import WorkerState, backend_for, cut, even_batches, local_executor
from .monitoring import _Run, warn_user
from .parameters import document_engine_parameters, learning_decay_warning, max_passes
from .rows import ChildSample, ResidentRows, sample_children
from .settings import settings_of
from .step import end_of_pass, take_step, update_factor
from .state import FitContext, FitState, warm_globals

__all__ = ["REQUIRED_HOOKS", "OPTIONAL_HOOKS", "SVIEstimator"]

#: The hooks every model implements (each has a stub that raises).
REQUIRED_HOOKS = (
    "_prepare_data",
    "_initialize_globals",
    "_prior_natural",
    "_local_step",
    "_expected_stats",
    "_local_bound",
    "_global_bound",
)
#: The hooks a model may override; each has a documented default.
OPTIONAL_HOOKS = (
    "_settings",
    "_on_params_updated",
    "_local_draws",
    "_update_factor",
    "_data_summary",
    "_update_hyperparameters",
    "_probe_loss",
)

#: Methods that take rows and return one value (or row of values) per row:
#: on a dask collection they run blockwise and return a dask array.
BLOCKWISE_METHODS = ("transform", "predict", "predict_proba", "predict_log_proba", "score_samples")


def blockwise_elsewhere(method):
    """Decorate a method of rows so that rows held elsewhere (dask) are mapped blockwise.

    The engine wraps every estimator's ``transform``, ``predict``,
    ``predict_proba``, ``predict_log_proba`` and ``score_samples`` so; a
    model decorates any other method of rows that returns one value per
    row (one that exists only in some fits, say).

    Parameters
    ----------
    method : callable
        ``method(self, X, ...)``, returning one value (or row) per row of X.

    Returns
    -------
    callable
        ``method(self, X, ...)`` for rows in memory, the backend's lazy
        blockwise result for a collection held elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import blockwise_elsewhere
    >>> class Doubler:
    ...     @blockwise_elsewhere
    ...     def double(self, X):
    ...         return 2 * np.asarray(X)
    >>> Doubler().double([1.0, 2.0])
    array([2., 4.])
    """

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        backend = backend_for(X)
        if backend is not None:
            return backend.blockwise(self, method, X, *args, **kwargs)
        return method(self, X, *args, **kwargs)

    wrapper._blockwise_elsewhere = True
    return wrapper


class SVIEstimator(BaseEstimator):
    """Base of every skvi estimator: stochastic (and batch) variational inference.

    An estimator inherits from this class (after scikit-learn's mixins),
    stores its hyperparameters in its ``__init__`` and implements the model
    hooks (``docs/engine.md``).  ``fit``, ``partial_fit`` and the map-reduce
    split, :meth:`compute_statistics` and :meth:`apply_statistics`, come with
    the base.  The engine's hyperparameters a model's ``__init__`` takes
    (``learning_method``, ``batch_size``, ``max_iter``, ``tol``,
    ``learning_offset``, ``learning_decay``, ``learning_rate``,
    ``total_samples``, ``update_order``, ``step_safety``, ``random_state``,
    ``n_jobs``, ``verbose``) are documented and constrained once, in
    :mod:`skvi.engine.parameters`.

    Attributes
    ----------
    natural_params_ : dict
        Natural parameters of every global factor (:class:`~skvi.engine.Factor`).
    lower_bounds_ : list of float
        The ELBO after each evaluated pass of ``fit`` (the exact full-data
        ELBO of a batch fit; an online fit's estimate on its convergence
        sample) and after each ``partial_fit`` minibatch (the global part
        plus ``N / |S|`` times the minibatch's data part).
    lower_bound_ : float or None
        The last entry of ``lower_bounds_``.
    n_iter_ : int
        Passes over the data begun by the last ``fit``.
    n_batch_iter_ : int
        Natural-gradient steps ``t`` taken so far.
    n_samples_seen_ : float
        Samples processed by the last ``fit`` or by all ``partial_fit`` calls.
    converged_ : bool
        Whether the last ``fit`` stopped by its convergence test.
    n_rejected_steps_ : int
        Step attempts rejected by step safety.
    history_ : ndarray
        One row per pass of ``fit`` and per ``partial_fit`` call (see the
        property).
    step_trace_ : ndarray
        One row per step (see the property).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine import SVIEstimator
    >>> est = GaussianGammaVB(learning_method="online", batch_size=10, max_iter=2, tol=0)
    >>> isinstance(est, SVIEstimator)
    True
    >>> X = np.random.RandomState(0).normal(size=(100, 2))
    >>> est.fit(X).n_batch_iter_
    20
    >>> sorted(est.natural_params_)
    ['mean', 'precision']
    >>> est.history_["samples"]  # one row per pass
    array([100., 200.])
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        document_engine_parameters(cls)
        # transform / predict / ... of every model accept data held elsewhere.
        for name in BLOCKWISE_METHODS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and not getattr(method, "_blockwise_elsewhere", False):
                setattr(cls, name, blockwise_elsewhere(method))

    # --------------------------------------------------------- required hooks
    def _missing_hook(self, hook, what):
        raise NotImplementedError(
            f"{type(self).__name__} must implement the engine hook {hook}: {what} "
            "(see docs/engine.md)."
        )

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        """Validated rows of (X, y, sample_weight) for the engine (``reset``: a new fit)."""
        self._missing_hook(
            "_prepare_data(X, y, sample_weight, reset, ...)", "the validated rows of the input"
        )

    def _initialize_globals(self, X, random_state, summary):
        """Initial natural parameters of every global factor, ``{name: tuple of arrays}``."""
        self._missing_hook(
            "_initialize_globals(X, random_state, summary)",
            "the initial natural parameters of every global factor",
        )

    def _prior_natural(self):
        """Natural parameters of every global factor's prior."""
        self._missing_hook("_prior_natural()", "the natural parameters of every factor's prior")

    def _local_step(self, X, params):
        """The E-step of the rows X with the globals ``params`` fixed."""
        self._missing_hook(
            "_local_step(X, params)", "the E-step of a minibatch (return None if there is none)"
        )

    def _expected_stats(self, name, X, local, params):
        """Expected sufficient statistics of X for factor ``name``, summed over its rows."""
        self._missing_hook(
            "_expected_stats(name, X, local, params)",
            "the expected sufficient statistics of X for one global factor",
        )

    def _local_bound(self, X, local, params):
        """The data part of the ELBO of the rows X (``local`` None: the model's own local step)."""
        self._missing_hook("_local_bound(X, local, params)", "the data part of the ELBO of X")

    def _global_bound(self, params):
        """Minus the KL divergence of the global factors to their priors."""
        self._missing_hook(
            "_global_bound(params)", "minus the KL of the global factors to their priors"
        )

    # --------------------------------------------------------- optional hooks
    @property
    def _settings(self):
        """The model's :class:`~skvi.engine.ModelSettings`."""
        self._missing_hook("_settings", "the model's ModelSettings (at least its factors)")

    def _on_params_updated(self):
        """Refresh the fitted attributes from ``natural_params_`` (after every call)."""

    def _local_draws(self, X, random_state):
        """The random draws of the local steps of X, made before its blocks run (default None)."""
        return None

    def _update_factor(self, name, current, stats, ctx):
        """The update of one factor and its validity (default: the engine's, towards its target)."""
        return update_factor(self, name, current, stats, ctx)

    def _data_summary(self, X, local=None):
        """What the model's own code needs from the rows X, added over blocks (default None).

        At the start of a fit (``local`` None), of all the rows: the
        ``summary`` that ``_initialize_globals`` receives.  After each
        accepted step, of the step's rows with their local step: the
        ``hyper`` that ``_update_hyperparameters`` receives.
        """
        return None

    def _update_hyperparameters(self, hyper, ctx):
        """The model's own step after each accepted step or pass; True when the model changed.

        After an accepted step it may instead return a dict of new natural
        parameters of some global factors: a move that does not lower the
        ELBO (a reparametrisation the likelihood does not see), which the
        engine commits; the step's local step is then not reused.
        """
        return False

    def _probe_loss(self, probe, params):
        """Expected loss per row of the probe rows under ``params`` (default None: no probe)."""
        return None

    # ------------------------------------------------------------ public API
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the variational posterior to the data.

        Batch coordinate ascent or online passes (``learning_method``),
        until the convergence test or ``max_iter`` passes.  A dask array or
        dataframe fits on the active dask cluster, its blocks staying there
        (:mod:`skvi.distributed`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The data, as the estimator's class documents it.
        y : array-like of shape (n_samples,) or None, default=None
            Targets of a supervised model; ignored by the others.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights, for a model that takes them: a row of
            weight 2 counts as the row twice (in its statistics, its ELBO
            term and ``N / |S|``).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        backend = backend_for(X)
        if backend is not None:
            executor, data = backend.executor(self, X, y, sample_weight)
        else:
            data = self._prepare_data(X, y, sample_weight, reset=True)
            executor = None
        return self._fit_prepared(data, executor)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        """Take stochastic natural-gradient steps on a chunk of data, one per minibatch.

        The rows are cut into ``ceil(n / batch_size)`` near-equal
        minibatches.  The first call initialises the posterior from its
        rows; later calls continue it with ``N = total_samples`` (or, with
        ``'auto'``, the samples seen so far).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            A chunk of the stream.
        y : array-like of shape (n_samples,) or None, default=None
            Its targets, for a supervised model.
        classes : array-like or None, default=None
            Every value the targets of the stream can take, for a model with
            categorical targets; needed on the first call unless its chunk
            holds them all.  Ignored by the other models.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights, as in :meth:`fit`; they count in the
            running count of ``total_samples='auto'``.

        Returns
        -------
        self : object
            The updated estimator.
        """
        first = not hasattr(self, "natural_params_")
        if not first:
            self._svi.follow_parameters(self)
        data = self._prepare_data(X, y, sample_weight, reset=first, classes=classes, partial=True)
        return self._partial_fit_data(data)

    def compute_statistics(self, X, y=None):
        """Summed sufficient statistics of a block of data, globals held fixed.

        The map step of the map-reduce split: the local step of X with the
        current global factors, and the expected sufficient statistics of
        every factor summed over X's rows.  Statistics of two blocks add
        (``a + b``), and :meth:`apply_statistics` takes one step from any
        sum.  All factors' statistics come from one snapshot of the globals
        (Hoffman et al.'s joint update).

        Parameters
        ----------
        X : array-like or sparse matrix
            A block of data, as ``partial_fit`` takes it.
        y : array-like or None, default=None
            Its targets, for a supervised estimator.

        Returns
        -------
        Statistics
            The block's statistics and its number of rows.
        """
        self._check_engine_ready("compute_statistics")
        data = self._prepare_data(X, y, None, reset=False)
        st = self._svi
        executor = local_executor(getattr(self, "n_jobs", None), st.settings.parallel)
        try:
            params = self.natural_params_
            local = executor.local_steps(self, data, params, st.rng)
            return executor.sum(self, _fn.all_statistics, data, local, st.data_factors, params)
        finally:
            executor.close()

    def elbo(self, X, y=None):
        """The evidence lower bound of the current posterior on the rows (X, y).

        The global part (minus the KL divergence of the global factors to
        their priors) plus the data part of the rows, with their local
        factors fitted at the current globals.  On the training rows it is
        the exact ELBO that an online fit's convergence test estimates on a
        sample; for a model with per-row factors (the correlated topic
        model's documents, matrix factorization's users and items) the rows'
        ids must be known to the model.

        Parameters
        ----------
        X : array-like or sparse matrix
            Rows, as ``partial_fit`` takes them.
        y : array-like or None, default=None
            Their targets, for a supervised model.

        Returns
        -------
        elbo : float
            ``E_q[log p(data, latent)] - E_q[log q]``, every constant included.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi import GaussianGammaVB
        >>> X = np.random.RandomState(0).normal(size=(500, 2))
        >>> est = GaussianGammaVB().fit(X)
        >>> bool(np.isclose(est.elbo(X), est.lower_bound_))
        True
        """
        self._check_engine_ready("elbo")
        data = self._prepare_data(X, y, None, reset=False)
        params = self.natural_params_
        executor = local_executor(getattr(self, "n_jobs", None), self._settings.parallel)
        try:
            data_part = executor.sum(self, _fn.bound, data, None, params)
        finally:
            executor.close()
        return float(self._global_bound(params) + data_part)

    def apply_statistics(self, statistics, total_samples=None):
        """One natural-gradient step of every global factor from summed statistics.

        The reduce step of the map-reduce split: ``lam <- (1 - rho_t) lam +
        rho_t (eta_prior + N / |S| stats)`` with ``rho_t`` from the schedule,
        step safety and every other rule of a ``partial_fit`` step.

        Parameters
        ----------
        statistics : Statistics
            From :meth:`compute_statistics`, possibly summed over blocks.
        total_samples : float or None, default=None
            ``N``; None uses the estimator's ``total_samples`` (a number),
            or, for ``'auto'``, the rows seen so far by ``partial_fit``.

        Returns
        -------
        self : object
            The updated estimator.
        """
        start = time.perf_counter()
        self._check_engine_ready("apply_statistics")
        st = self._svi
        run = _Run(self, "apply_statistics", start, st.elapsed)
        n = statistics.n_samples
        if total_samples is None:
            total_samples = (
                max(self.n_samples_seen_, n)
                if self.total_samples == "auto"
                else float(self.total_samples)
            )
        scale = float(total_samples) / n if n else 0.0
        take_step(self, None, scale, online=True, stats=statistics)
        st.samples += n
        st.elapsed = run.elapsed()
        if run.per_step:
            run.n_batches = 1
            run.step(1)
        self._on_params_updated()
        return self

    # ------------------------------------------------------------ fit
    def _fit_prepared(self, data, executor=None):
        """``fit`` on prepared data: ``n_init`` restarts (a model's parameter), keeping the best."""
        settings = self._settings
        own = executor is None
        if own:
            executor = local_executor(getattr(self, "n_jobs", None), settings.parallel)
        warm = warm_globals(self)
        n_init = 1 if warm is not None else int(getattr(self, "n_init", 1))
        # A warm start continues the previous fit: its first pass is compared
        # with that fit's last ELBO, as scikit-learn's warm start does.
        previous = getattr(self, "lower_bound_", None) if warm is not None else None
        random_state = check_random_state(self.random_state)
        try:
            best = None
            for _ in range(n_init):
                self._fit_once(data, executor, settings, random_state, previous, warm)
                if n_init > 1 and (best is None or self.lower_bound_ > best["lower_bound_"]):
                    best = dict(self.__dict__)
            if best is not None:
                self.__dict__.update(best)
        finally:
            if own:
                executor.close()
        return self

    def _start_fit(self, data, executor, settings, random_state, scheduled, context):
        """A fresh engine state, the data summary, the initial globals and the rows' counts.

        ``scheduled``: whether the steps to come follow the schedule (an
        online ``fit``, or ``partial_fit``), so that its parameters matter;
        ``context``: the fit's :class:`FitContext`, which the start and the
        steps are told.
        """
        if scheduled and (message := learning_decay_warning(self)):
            self._warn(message, ConvergenceWarning)
        self._svi = st = FitState(self, settings, executor, random_state)
        st.context = context
        st.parameters = self.get_params(deep=False)
        summary = executor.summary(self, data)
        natural = executor.initialize(self, data, random_state, summary, context)
        st.set_factors(self, {name: st.as_factor(name, value) for name, value in natural.items()})
        st.prior = self._prior_natural()
        st.rows.start(self.natural_params_, settings)
        self.lower_bounds_ = []
        self.n_batch_iter_ = 0
        self.n_rejected_steps_ = 0
        return st

    def _fit_once(self, data, executor, settings, random_state, previous=None, warm=None):
        start = time.perf_counter()  # the clock of fit: its start counts
        n_samples = data.shape[0]
        child = settings.children_per_row
        online = not self._only_batch_steps(n_samples, child)
        context = FitContext(only_batch_steps=not online, on_cluster=executor.remote, warm=warm)
        st = self._start_fit(data, executor, settings, random_state, online, context)
        run = _Run(self, "fit", start)
        conv = None
        try:
            st.rows.count(self, executor, data)
            st.view_version += 1  # the workers' copies carry N_i
            n_count = executor.count(self, data)
            self.n_samples_seen_ = n_count
            if self.step_safety and (online or settings.batch_steps == "probe"):
                st.safety.set_probe(self, data, random_state)
            n_batches = (
                (1 if child is not None else len(even_batches(n_samples, self.batch_size)))
                if online
                else 1
            )
            conv = Convergence(self, online)
            conv.start(data, random_state, n_batches if online else None)
            if conv.mode == "bound":
                conv.previous = previous
            self.converged_ = False
            self.n_iter_ = 0
            local = None
            for it in range(1, max_passes(self) + 1):
                accepted_before = st.n_accepted
                run.begin_pass(it, n_batches)
                times = st.clock.snapshot(executor)
                pass_start = time.perf_counter()
                if online:
                    bound, stopped = self._online_pass(data, random_state, run, conv, it, n_batches)
                else:
                    local = batch_pass(self, data, local, n_count)
                    stopped = run.per_step and run.step(1)
                    bound = None
                    if conv.evaluate(it) and not stopped:
                        bound = self._pass_bound(data, local)
                self.n_iter_ = it
                if bound is not None:
                    bound = float(bound)
                    self.lower_bounds_.append(bound)
                converged = not stopped and conv.end_pass(bound, st.n_accepted != accepted_before)
                wall = time.perf_counter() - pass_start
                st.history.append(
                    (
                        run.elapsed(),
                        st.samples,
                        self.n_batch_iter_,
                        np.nan if bound is None else bound,
                    )
                    + st.clock.since(times, executor, wall)
                )
                if run.end_pass(bound, converged, stopped):
                    stopped = True
                if converged:
                    self.converged_ = True
                    break
                if stopped:
                    break
            if evaluates_every(self) is not None:
                # The full-data ELBO at the final globals by the model's own
                # local step, for the model's fitted attributes (scikit-learn's
                # LDA's bound_, whose ELBO is evaluated every evaluate_every
                # passes).
                with st.clock.phase("bound"):
                    self._final_bound = st.data_bound(
                        self, data, None, self.natural_params_
                    ) + self._global_bound(self.natural_params_)
            self.lower_bound_ = self.lower_bounds_[-1] if self.lower_bounds_ else None
        finally:
            st.safety.forget()
            if conv is not None:
                conv.forget()
            st.elapsed = run.elapsed()
            run.close()
        if (
            not self.converged_
            and not run.stopped
            and conv.warns
            and self.tol > 0
            and max_passes(self) > 1
        ):
            self._warn(
                f"{type(self).__name__} did not converge in {max_passes(self)} passes "
                f"(max_iter={self.max_iter}) "
                f"(ELBO change above tol={self.tol}). Increase max_iter or tol.",
                ConvergenceWarning,
            )
        st.safety.warn(self, 0, settled=self.converged_)
        self._on_params_updated()

    def _pass_bound(self, data, local):
        """The full-data ELBO at the current globals (with ``local``, a step's local step)."""
        st = self._svi
        known = st.safety.known_bound
        params = self.natural_params_
        if known is not None and known[0] is params:
            return known[1]  # the step's test computed it
        with st.clock.phase("bound"):
            return st.data_bound(self, data, local, params) + self._global_bound(params)

    def _online_pass(self, data, random_state, run, conv, it, n_batches):
        """One online pass of ``fit``; returns (its ELBO or None, whether a callback stopped it)."""
        st = self._svi
        batch = 0
        stopped = converged = False
        st.in_pass = True
        try:
            for Xb, scale in self._minibatches(data, random_state):
                batch += 1
                if not scale > 0:  # a minibatch of zero total weight has no data
                    continue
                take_step(self, Xb, scale, online=True)
                st.samples += st.executor.count(self, Xb)
                if run.per_step and run.step(batch):
                    stopped = True
                    break
                if batch < n_batches and conv.after_step(batch, it == 1):
                    converged = True
                    break
        finally:
            st.in_pass = False
        if stopped:
            return None, True
        end_of_pass(self, it, 1.0, 1.0)
        if conv.mode == "sample":
            if not converged:
                conv.check()
            return conv.last, False
        if conv.evaluate(it):
            return self._pass_bound(data, None), False
        return None, False

    def _minibatches(self, data, random_state):
        """The minibatches of an online pass: the executor's, or Paquet's child samples."""
        st = self._svi
        child = st.settings.children_per_row
        if child is None:
            yield from st.executor.minibatches(self, data, random_state, self.batch_size)
            return
        # Paquet's Alg. 1: one step updates every row of each group from up to
        # C of its own data points, so a "pass" over the rows is one step.
        samples = {
            name: data[sample_children(spec.ids_of(name, data), spec.children, random_state)]
            for name, spec in st.settings.row_groups.items()
        }
        sample = ChildSample(samples)
        yield sample, self._sample_count(data) / self._sample_count(sample)

    # ------------------------------------------------------------ partial_fit
    def _partial_fit_data(self, data):
        start = time.perf_counter()
        if not hasattr(self, "natural_params_"):
            settings = self._settings
            rng = check_random_state(self.random_state)
            executor = local_executor(getattr(self, "n_jobs", None), settings.parallel)
            # A stream of unknown length whose model takes streaming Bayes'
            # steps uses the schedule for its first step's weight only.
            bayes = self.total_samples == "auto" and settings.stream_choice("steps") == "bayes"
            context = FitContext(partial=True, on_cluster=executor.remote)
            st = self._start_fit(data, executor, settings, rng, not bayes, context)
            st.stream.remember(self, settings.stream_choice("start") == "data")
            self.n_samples_seen_ = 0
            self.n_iter_ = 0
            self.converged_ = False
        st = self._svi
        st.use(local_executor(getattr(self, "n_jobs", None), st.settings.parallel))
        run = _Run(self, "partial_fit", start, st.elapsed)
        st.calls += 1
        n = data.shape[0]
        if st.settings.stream_choice("batches") == "remainder":
            batches = list(gen_batches(n, self.batch_size))
        else:
            batches = even_batches(n, self.batch_size)
        run.begin_pass(st.calls, len(batches))
        times = st.clock.snapshot(st.executor)
        try:
            stopped = False
            samples_before = st.samples
            st.in_pass = True
            try:
                for index, batch in enumerate(batches, 1):
                    self._stream_step(data[batch])
                    if run.per_step and run.step(index, elbo=self.lower_bound_):
                        stopped = True
                        break
            finally:
                st.in_pass = False
            n_call = st.samples - samples_before
            if n_call > 0 and not stopped:
                total = st.stream.total if self.total_samples == "auto" else self.total_samples
                end_of_pass(
                    self, st.calls, min(st.schedule(st.calls), 1.0), float(total or n_call) / n_call
                )
            st.elapsed = run.elapsed()
            elbo = getattr(self, "lower_bound_", None)
            st.history.append(
                (st.elapsed, st.samples, self.n_batch_iter_, np.nan if elbo is None else elbo)
                + st.clock.since(times, st.executor, time.perf_counter() - start)
            )
            run.end_call(elbo, st.calls)
        finally:
            st.safety.forget()
            st.executor.close()
            st.elapsed = run.elapsed()
            run.close()
        st.safety.warn(self, run.rejected_before)
        self._on_params_updated()
        return self

    def _stream_step(self, X):
        """One ``partial_fit`` step on the minibatch X (validated)."""
        st = self._svi
        n_batch = self._sample_count(X)
        if not n_batch > 0:
            # No data (zero total weight): no step, as online fit skips it.
            return
        st.rows.grow_and_count(self, X, st.rng, st.settings)
        seen_before = self.n_samples_seen_
        self.n_samples_seen_ += n_batch
        st.samples += n_batch
        rho = None  # the schedule's
        if self.total_samples == "auto":
            rho = st.stream.step_size(self, n_batch, self.n_samples_seen_)
            total = st.stream.step_total(self, self.n_samples_seen_, seen_before, rho)
        else:
            total = float(self.total_samples)
        scale = total / n_batch
        if self.step_safety:
            st.safety.stream_probe(self, X)
        local = take_step(self, X, scale, online=True, rho=rho)
        # The minibatch's data part at the new globals, with its local steps.
        params = self.natural_params_
        with st.clock.phase("bound"):
            bound = self._global_bound(params) + scale * st.data_bound(self, X, local, params)
        self.lower_bounds_.append(float(bound))
        self.lower_bound_ = float(bound)

    # -------------------------------------------------------------- services
    def _only_batch_steps(self, n_rows, children=None):
        """Whether a ``fit`` on ``n_rows`` rows takes batch steps only: the engine's rule.

        A batch fit, or an online fit whose rows fit in one minibatch (and
        that draws no child samples, ``children``).  A model that tunes
        itself to it reads ``only_batch_steps`` of the :class:`FitContext`
        its start is told, or asks here, rather than copy the rule.
        """
        return self.learning_method != "online" or (children is None and n_rows <= self.batch_size)

    def _sample_count(self, X):
        """How many samples the rows of X count for: ``X.count()`` when it has weights."""
        return X.count() if hasattr(X, "count") else X.shape[0]

    def _check_engine_ready(self, method):
        if not hasattr(self, "natural_params_"):
            # scikit-learn's error of a call before fit (an AttributeError
            # and a ValueError too, as callers of earlier versions caught).
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet: {method} needs "
                "initialised global factors; call fit or partial_fit first."
            )

    def _row_steps(self, name):
        """Accepted updates of each row of group ``name``, the current step's rows counted."""
        group = self._svi.rows[name]
        if group.pending is None:
            return group.steps
        steps = group.steps.copy()
        steps[group.pending] += 1
        return steps

    def _row_totals(self, name):
        """``N_i``: the data points of each row of group ``name``."""
        st = getattr(self, "_svi", None)
        if st is None:  # a worker's copy of the model
            return WorkerState.of(self).row_totals[name]
        return st.rows[name].totals

    def _rows_summary(self, name, params=None):
        """The group's ``summary`` of every row of group ``name`` in ``params`` (default: the current).

        In memory it is computed from the rows; on a cluster the blocks
        computed it where the rows are, with their step.
        """
        factor = (self.natural_params_ if params is None else params)[name]
        if isinstance(factor, ResidentRows):
            return factor.summary
        spec = settings_of(self).row_groups[name]
        return spec.summary_of(name, factor, self._row_steps(name), self._row_totals(name))

    def _map_row_blocks(self, function, X, by="rows"):
        """``function`` of X, or of blocks of its rows on ``n_jobs`` threads: a list in row order.

        For work on new rows outside a fit (a fold-in) whose rows do not
        depend on each other; the threads are the call's own, so that
        concurrent calls do not share them.  ``by='work'`` balances a sparse
        X's blocks by stored values (see :func:`~skvi.engine.executor.cut`).
        """
        executor = local_executor(getattr(self, "n_jobs", None))
        try:
            slices = cut(X, executor.n_workers, by)
            return executor.map(function, [X] if len(slices) == 1 else [X[s] for s in slices])
        finally:
            executor.close()

    def _map_columns(self, function, n_columns):
        """``[function(columns) for columns in blocks]`` over column slices, on the fit's executor.

        For a global step over a wide factor (LDA's words): each slice of
        the ``n_columns`` columns is one task of the executor's parallel
        map, so that the step's serial part stays small.
        """
        st = getattr(self, "_svi", None)
        executor = None if st is None else st.executor
        if executor is None:
            return [function(slice(0, n_columns))]
        return executor.map(function, executor.column_blocks(n_columns))

    def _adopt_globals(self, natural, n_samples_seen):
        """Start from given global factors, as a fit on ``n_samples_seen`` rows would end.

        For a model that imports a posterior fitted elsewhere: the engine's
        state is fresh, and the whole of each factor beyond the prior counts
        as data, so that ``partial_fit`` with ``total_samples='auto'`` grows
        it with the running count that starts at ``n_samples_seen``.
        """
        settings = self._settings
        rng = check_random_state(self.random_state)
        self._svi = st = FitState(self, settings, local_executor(None), rng)
        st.set_factors(self, {name: st.as_factor(name, value) for name, value in natural.items()})
        st.prior = self._prior_natural()
        self.lower_bounds_ = []
        self.n_batch_iter_ = self.n_rejected_steps_ = 0
        st.stream.remember(self, all_data=True)
        self.lower_bound_ = None
        self.n_iter_ = 0
        self.converged_ = False
        self.n_samples_seen_ = n_samples_seen
        self._on_params_updated()

    def _warn(self, message, category=UserWarning):
        """Warn at the user's line (the first frame outside skvi and scikit-learn)."""
        warn_user(message, category)

    # ------------------------------------------------------------ monitoring
    def _monitoring_state(self, attribute):
        st = getattr(self, "_svi", None)
        if st is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance has no {attribute}: call fit or "
                "partial_fit first."
            )
        return st

    @property
    def history_(self):
        """Time, samples, steps, ELBO and where the time went, per pass or ``partial_fit`` call.

        A structured array with one row per pass of ``fit`` and per
        ``partial_fit`` call (``fit`` starts it anew, ``partial_fit``
        continues it): ``time`` (engine seconds since ``fit`` began, its
        start included), ``samples`` (samples processed by the steps),
        ``steps`` (``n_batch_iter_``), ``elbo`` (the pass's entry of
        ``lower_bounds_``, NaN when none), and the pass's wall seconds in
        ``local_time`` (local steps), ``global_time`` (the step of the
        globals), ``bound_time`` (ELBOs), ``safety_time`` (step safety's
        tests), ``transfer_time`` (moving data to and from a cluster's
        workers) and ``serial_time`` (outside the executor's parallel maps,
        on one thread whatever ``n_jobs`` is).  At most
        ``skvi.engine.monitoring.TRACE_SIZE`` rows are kept.  Numbers only:
        no training rows.
        """
        return self._monitoring_state("history_").history.array()

    @property
    def step_trace_(self):
        """The step size of every step, and its rejections by step safety.

        A structured array with fields ``t``, ``rho`` (the schedule's value
        times the step-safety reduction, of the last attempt for a skipped
        step), ``rejected`` (attempts rejected) and ``accepted`` (False when
        every attempt was rejected).  ``fit`` starts it anew; ``partial_fit``
        and ``apply_statistics`` continue it.  At most
        ``skvi.engine.monitoring.TRACE_SIZE`` steps are kept.
        """
        return self._monitoring_state("step_trace_").trace.array()

    def __getstate__(self):
        return self._state_to_copy(keep_resident_rows=False)

    def __deepcopy__(self, memo):
        # A copy in memory is the same fit, resident members included; a pickle
        # (a model stored or shipped) keeps their summary only.
        other = type(self).__new__(type(self))
        memo[id(self)] = other
        other.__setstate__(copy.deepcopy(self._state_to_copy(keep_resident_rows=True), memo))
        return other

    def _state_to_copy(self, keep_resident_rows):
        state = dict(super().__getstate__())
        st = state.get("_svi")
        if st is not None:
            # Neither the executor's threads, the settings (which may hold the model's
            # functions; made again) nor the model's buffers of a fit travel.
            state["_svi"] = st.portable()
            for name in st.settings.transient if st.settings is not None else ():
                state.pop(name, None)
            if st.settings is not None and not keep_resident_rows:
                self._pickle_resident_rows_as_summaries(state, st.settings)
        return state

    def _pickle_resident_rows_as_summaries(self, state, settings):
        """A resident row group travels as its summary, as after a fit on a cluster.

        Its members are the training rows' own factors (a document's
        ``q(eta_d)``), not the model's: a pickle that kept them would grow
        with the training data and carry it.  What the model needs of them
        (the summary its closed forms and bound read) stays.
        """
        natural = state.get("natural_params_")
        resident = [
            name
            for name in settings.resident_row_groups
            if natural is not None and not isinstance(natural.get(name), ResidentRows)
        ]
        if not resident:
            return
        natural = dict(natural)
        for name in resident:
            natural[name] = ResidentRows([], [], summary=self._rows_summary(name))
        state["natural_params_"] = natural
        st = state["_svi"] = copy.copy(state["_svi"])
        st.rows = type(st.rows)({k: v for k, v in st.rows.items() if k not in resident})

    def __setstate__(self, state):
        super().__setstate__(state)
        st = self.__dict__.get("_svi")
        if st is not None and st.settings is None:
            st.settings = st.safety.settings = self._settings
