"""What a model declares about itself: its factors and how the engine treats them.

A model's hooks (:class:`~skvi.engine.SVIEstimator`) say how to compute; its
:class:`ModelSettings` say what the engine should do with the results: which
global factors there are and in which order a step updates them, which are
stacks of per-row factors, how batch steps are judged, what a fit on a
cluster must never ship.  One object, read once at the start of every fit,
instead of a dozen overridable flags.
"""

import numpy as np

from .factor import Factor
from .rows import ResidentRows, RowGroupSpec

__all__ = ["BATCH_STEPS", "ModelSettings", "settings_of"]

#: How batch steps may be taken and judged (``ModelSettings(batch_steps=...)``).
BATCH_STEPS = ("blend", "no_decrease", "line_search", "extrapolate", "probe")


class ModelSettings:
    """A model's declarative settings for the engine.

    Parameters
    ----------
    factors : dict
        Global factor name to its exponential family (a class of
        :mod:`skvi.expfam`, whose ``valid_natural`` is the step-safety test),
        in the order ``update_order='sequential'`` updates them.
    row_groups : dict or tuple of str, default=()
        Factors that are stacks of per-row factors along their first axis
        (users and items of matrix factorization), each name to its
        :class:`~skvi.engine.RowGroupSpec` (a name alone: the default
        spec).  The engine keeps per-row step counters (row ``i`` steps by
        ``rho(t_i)``), per-row totals ``N_i`` (counted as the spec says),
        scales row ``i``'s statistics by ``N_i / C_i`` (Paquet's Alg. 1),
        and commits counters and update-rule state only with an accepted
        step.
    hierarchical : tuple of str, default=()
        Factors whose children are other global factors (prior
        precisions): their statistics come from the globals alone, once per
        step, unscaled.
    update_rules : dict, default=None
        Factor name to an update rule of :mod:`skvi.update_rules` (absent
        or None: the natural-gradient blend).
    local_depends_on_globals : bool, default=True
        False when the local step only summarises the data: batch fits
        compute it once.
    parallel : bool, default=False
        Whether the executor may cut a minibatch into blocks whose local
        steps and statistics run concurrently.  Say True when the local step
        is vectorised or releases the GIL, and its random numbers (if any)
        are drawn by ``_local_draws`` before the blocks run.
    initial_globals_are_data : bool, default=False
        ``_initialize_globals`` fits the globals to its rows (a k-means
        start): with ``total_samples='auto'`` they count as data.  One
        model's setting so far (the Bayesian Gaussian mixture's).
    batch_steps : {'blend', 'no_decrease', 'line_search', 'extrapolate', 'probe'}, default='blend'
        How batch steps are taken and judged beyond the factors' validity:
        ``'blend'`` not at all (coordinate ascent never lowers the ELBO);
        ``'no_decrease'`` rejects a step that lowers the full-data ELBO (a
        Newton-like fixed point can overshoot) and keeps a reduced step size;
        ``'line_search'`` likewise, but each batch step starts again from
        the full step (a damped Newton iteration on a deterministic target);
        ``'extrapolate'`` as ``'line_search'``, each pass of a batch fit an
        extrapolated pass (:func:`skvi.engine.acceleration.batch_pass`: two
        steps, a jump along them, a third step, kept only when it ends above
        the two), for batch steps that converge linearly (majorize-minimize
        steps) and carry no state beyond the factors (no hyperparameter or
        update-rule state); ``'probe'`` judges them on the probe sample, as
        online steps are (Monte Carlo fixed points).
    elbo_tolerance : float, default=1e-9
        The relative fall of the ELBO that a batch step tested by the ELBO
        still passes.  One model's setting so far (the sparse GP
        regressor's predictive objective, tested to stationarity).
    probe_growth : float, default=1.0
        The fraction of its best value by which a step may raise the probe's
        loss before it is rejected.
    batches : {'even', 'remainder'}, default='even'
        How ``partial_fit`` cuts its rows: ``'even'`` into near-equal
        minibatches (:func:`~skvi.engine.even_batches`); ``'remainder'``
        into ``batch_size`` rows and a last one with the rest (scikit-learn's
        ``gen_batches``, for a drop-in's identical steps).  One model's
        setting so far (LDA's, scikit-learn's drop-in).
    convergence : callable or None, default=None
        ``convergence(previous, current) -> bool`` between two evaluated
        full-data ELBOs of a batch fit (None: relative change below
        ``tol``).
    warn_not_converged : bool, default=True
        Warn when ``fit`` stops at ``max_iter`` without converging.
    start_sample_size : int or None, default=None
        Rows, drawn uniformly over the blocks of a fit on a cluster, that
        ``_initialize_globals`` receives (None: the first block).
    transient : tuple of str, default=()
        Attributes kept for the duration of a fit only (buffers, the data):
        never shipped to a worker.
    stream_steps : {'schedule', 'bayes'}, default='schedule'
        The step sizes of a ``partial_fit`` stream with
        ``total_samples='auto'``: the schedule's, or streaming variational
        Bayes' ``|S| / (n0 + n_seen)`` (every minibatch weighs the same; see
        :mod:`skvi.engine.stream` for when each is better).  One model's
        setting so far (LDA's).

    Examples
    --------
    >>> from skvi.engine import ModelSettings
    >>> from skvi.expfam import Gamma, UnivariateGaussian
    >>> s = ModelSettings({"precision": Gamma, "mean": UnivariateGaussian})
    >>> s.names, s.batch_steps
    (('precision', 'mean'), 'blend')
    """

    def __init__(
        self,
        factors,
        *,
        row_groups=(),
        hierarchical=(),
        update_rules=None,
        local_depends_on_globals=True,
        parallel=False,
        initial_globals_are_data=False,
        batch_steps="blend",
        elbo_tolerance=1e-9,
        probe_growth=1.0,
        batches="even",
        convergence=None,
        warn_not_converged=True,
        start_sample_size=None,
        transient=(),
        stream_steps="schedule",
    ):
        if batch_steps not in BATCH_STEPS:
            raise ValueError(
                f"batch_steps must be one of {', '.join(map(repr, BATCH_STEPS))}, "
                f"got {batch_steps!r}."
            )
        if batches not in ("even", "remainder"):
            raise ValueError(f"batches must be 'even' or 'remainder', got {batches!r}.")
        if stream_steps not in ("schedule", "bayes"):
            raise ValueError(f"stream_steps must be 'schedule' or 'bayes', got {stream_steps!r}.")
        self.factors = dict(factors)
        if not isinstance(row_groups, dict):
            row_groups = {name: RowGroupSpec() for name in row_groups}
        self.row_groups = dict(row_groups)
        self.hierarchical = tuple(hierarchical)
        self.update_rules = dict(update_rules or {})
        self.local_depends_on_globals = bool(local_depends_on_globals)
        self.parallel = bool(parallel)
        self.initial_globals_are_data = bool(initial_globals_are_data)
        self.batch_steps = batch_steps
        self.elbo_tolerance = float(elbo_tolerance)
        self.probe_growth = float(probe_growth)
        self.batches = batches
        self.convergence = convergence
        self.warn_not_converged = bool(warn_not_converged)
        self.start_sample_size = start_sample_size
        self.transient = tuple(transient)
        self.stream_steps = stream_steps

    @property
    def names(self):
        """The global factors' names, in sequential update order."""
        return tuple(self.factors)

    @property
    def resident_row_groups(self):
        """The row groups whose rows stay with their blocks on a cluster."""
        return tuple(n for n, spec in self.row_groups.items() if spec.resident)

    @property
    def children_per_row(self):
        """Paquet's Alg. 1: the data points an online step draws of every row (None: minibatches)."""
        return next(
            (spec.children for spec in self.row_groups.values() if spec.children is not None), None
        )

    @property
    def batch_steps_tested_by_bound(self):
        """Whether step safety tests a batch step by the full-data ELBO."""
        return self.batch_steps in ("no_decrease", "line_search", "extrapolate")

    @property
    def data_factors(self):
        """The factors whose statistics come from the data (not the hierarchical ones)."""
        return tuple(n for n in self.factors if n not in self.hierarchical)

    def as_factor(self, name, natural):
        """``natural`` as a :class:`~skvi.engine.Factor` of factor ``name``'s family.

        Parameters
        ----------
        name : str
            The factor.
        natural : tuple of array-like, Factor or ResidentRows
            Its natural parameters; a factor (or a cluster's resident rows)
            is returned unchanged.

        Returns
        -------
        Factor or ResidentRows
            The value, knowing its family.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.engine import ModelSettings
        >>> from skvi.expfam import Gamma
        >>> f = ModelSettings({"g": Gamma}).as_factor("g", (np.array([-2.0]), np.array([2.0])))
        >>> f.distribution.mean()
        array([1.5])
        """
        if isinstance(natural, (Factor, ResidentRows)):
            return natural
        return Factor(natural, self.factors.get(name))

    def is_valid(self, name, natural, current=None):
        """Whether natural parameters are valid for factor ``name``'s family.

        Parameters
        ----------
        name : str
            The factor.
        natural : tuple of array-like
            Its natural parameters.
        current : tuple of array-like or None, default=None
            The factor's valid parameters before the step, if any: the
            family's ``valid_step`` may then test only what changed.

        Returns
        -------
        bool
            The family's ``valid_natural`` test, over every element.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.engine import ModelSettings
        >>> from skvi.expfam import Gamma
        >>> ModelSettings({"g": Gamma}).is_valid("g", (np.array([1.0]), np.array([0.0])))
        False
        """
        family = self.factors[name]
        if current is not None and hasattr(family, "valid_step"):
            return bool(np.all(family.valid_step(tuple(current), tuple(natural))))
        return bool(np.all(family.valid_natural(*natural)))

    def __repr__(self):
        return f"ModelSettings(factors={list(self.factors)})"


def settings_of(est):
    """The settings of the fit under way (read once at its start), else the model's own.

    Examples
    --------
    >>> from skvi import GaussianGammaVB
    >>> from skvi.engine.settings import settings_of
    >>> settings_of(GaussianGammaVB()).names
    ('precision', 'mean')
    """
    st = getattr(est, "_svi", None)
    return est._settings if st is None or st.settings is None else st.settings
