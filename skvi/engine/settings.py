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

__all__ = ["BATCH_STEPS", "STREAM", "TOLERANCES", "ModelSettings", "settings_of"]

#: How batch steps may be taken and judged (``ModelSettings(batch_steps=...)``).
BATCH_STEPS = ("blend", "no_decrease", "line_search", "extrapolate", "probe")
#: Step safety's tolerances and their defaults (``ModelSettings(tolerance=...)``).
TOLERANCES = {"elbo": 1e-9, "probe": 1.0}
#: The choices of a stream, the default first (``ModelSettings(stream=...)``).
STREAM = {
    "batches": ("even", "remainder"),
    "steps": ("schedule", "bayes"),
    "start": ("guess", "data"),
}


def _choices(setting, given, allowed):
    """``given`` (a dict or None) checked against the keys and values ``allowed``."""
    given = dict(given or {})
    for key, value in given.items():
        if key not in allowed:
            raise ValueError(
                f"{setting} takes the keys {', '.join(map(repr, allowed))}, got {key!r}."
            )
        choices = allowed[key]
        if isinstance(choices, tuple) and value not in choices:
            raise ValueError(
                f"{setting}[{key!r}] must be one of {', '.join(map(repr, choices))}, got {value!r}."
            )
        if not isinstance(choices, tuple):
            given[key] = float(value)
    return given


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
    tolerance : dict, default=None
        How far a step that step safety tests may worsen its test and still
        pass, a key for each test whose default does not suit the model:
        ``'elbo'``, the relative fall of the full-data ELBO that a batch step
        tested by the ELBO still passes (default ``1e-9``; a model tested to
        stationarity asks for less, the sparse GP regressor's predictive
        objective ``1e-12``); ``'probe'``, the fraction of its best value by
        which a step may raise the probe's loss (default ``1.0``; the GLMs'
        Monte Carlo steps ``0.25``).
    convergence : callable or None, default=None
        ``convergence(previous, current) -> bool`` between two evaluated
        full-data ELBOs of a batch fit (None: relative change below
        ``tol``).  A fit that stops at ``max_iter`` without converging
        warns, unless the estimator's ``evaluate_every`` rule judged it
        (scikit-learn's LDA is silent then) or its passes are Paquet's
        child samples (a row group's ``children``), whose ``max_iter``
        counts single steps.
    start_sample_size : int or None, default=None
        Rows, drawn uniformly over the blocks of a fit on a cluster, that
        ``_initialize_globals`` receives (None: the first block).
    transient : tuple of str, default=()
        Attributes kept for the duration of a fit only (buffers, the data):
        never shipped to a worker.
    stream : dict, default=None
        How ``partial_fit`` takes a stream, a key for each choice that
        differs from the default: ``'batches'``, how a call's rows are cut:
        ``'even'`` (default) into near-equal minibatches
        (:func:`~skvi.engine.even_batches`), ``'remainder'`` into
        ``batch_size`` rows and a last one with the rest (scikit-learn's
        ``gen_batches``: LDA's, a drop-in's identical steps); ``'steps'``,
        the step sizes with ``total_samples='auto'``: ``'schedule'``
        (default) or ``'bayes'``, streaming variational Bayes'
        ``|S| / (n0 + n_seen)`` (every minibatch weighs the same; LDA's);
        ``'start'``, what the initial globals are to such a stream:
        ``'guess'`` (default), a part beyond the prior that is not data and
        fades as steps are taken (LDA's random topics), or ``'data'``,
        fitted to the first rows (the mixture's k-means start), which count
        as data.  See :mod:`skvi.engine.stream` for when each is better.

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
        batch_steps="blend",
        tolerance=None,
        convergence=None,
        start_sample_size=None,
        transient=(),
        stream=None,
    ):
        if batch_steps not in BATCH_STEPS:
            raise ValueError(
                f"batch_steps must be one of {', '.join(map(repr, BATCH_STEPS))}, "
                f"got {batch_steps!r}."
            )
        tolerance = _choices("tolerance", tolerance, TOLERANCES)
        stream = _choices("stream", stream, STREAM)
        self.factors = dict(factors)
        if not isinstance(row_groups, dict):
            row_groups = {name: RowGroupSpec() for name in row_groups}
        self.row_groups = dict(row_groups)
        self.hierarchical = tuple(hierarchical)
        self.update_rules = dict(update_rules or {})
        self.local_depends_on_globals = bool(local_depends_on_globals)
        self.parallel = bool(parallel)
        self.batch_steps = batch_steps
        self.tolerance = tolerance
        self.convergence = convergence
        self.start_sample_size = start_sample_size
        self.transient = tuple(transient)
        self.stream = stream

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
    def elbo_tolerance(self):
        """The relative fall of the ELBO that a batch step tested by it still passes."""
        return self.tolerance.get("elbo", TOLERANCES["elbo"])

    @property
    def probe_growth(self):
        """The fraction of its best value by which a step may raise the probe's loss."""
        return self.tolerance.get("probe", TOLERANCES["probe"])

    def stream_choice(self, key):
        """The stream's choice ``key``, the default when the model made none.

        Parameters
        ----------
        key : {'batches', 'steps', 'start'}
            The choice (see the ``stream`` parameter).

        Returns
        -------
        str
            The model's value, or the default (the first of ``STREAM[key]``).

        Examples
        --------
        >>> from skvi.engine import ModelSettings
        >>> from skvi.expfam import Dirichlet
        >>> s = ModelSettings({"topics": Dirichlet}, stream={"steps": "bayes"})
        >>> s.stream_choice("steps"), s.stream_choice("batches")
        ('bayes', 'even')
        """
        return self.stream.get(key, STREAM[key][0])

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
            Its natural parameters; a factor (or a cluster's resident members)
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
