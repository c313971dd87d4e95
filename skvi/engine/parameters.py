"""The engine's hyperparameters: their constraints and their documentation, written once.

Every estimator takes the engine's hyperparameters in its own ``__init__``
(scikit-learn's ``get_params`` and ``clone`` need explicit signatures).  Their
constraints and their documentation live here only: an estimator class gets
the constraints of the engine parameters its ``__init__`` takes, and the
documentation of those its docstring does not document itself, with the
default read from its signature (see :func:`document_engine_parameters`).
"""

import inspect
import math
import numbers
import re

from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

__all__ = [
    "ENGINE_PARAMETER_CONSTRAINTS",
    "ENGINE_PARAMETER_DOCS",
    "document_engine_parameters",
    "learning_decay_warning",
    "max_passes",
]

#: Passes of a ``fit`` with ``max_iter=None``: scikit-learn's customary 10
#: for batch coordinate ascent, and room for an online fit, whose stopping
#: rule ends it when it stops improving.
DEFAULT_PASSES = {"batch": 10, "online": 50}
#: The rows an online fit with ``max_iter='auto'`` sees (:func:`max_passes`):
#: one pass over a long corpus, as Hoffman et al.'s and Wang et al.'s online
#: algorithms make over a stream, and several over a short one.
AUTO_PASS_ROWS = 10_000

ENGINE_PARAMETER_CONSTRAINTS = {
    "learning_method": [StrOptions({"batch", "online"})],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "max_iter": [None, Interval(numbers.Integral, 1, None, closed="left")],
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
    "n_jobs": [None, numbers.Integral],
    "verbose": ["verbose"],
}

#: ``(type, description)`` of every engine parameter, in numpydoc form.
ENGINE_PARAMETER_DOCS = {
    "learning_method": (
        "{'batch', 'online'}",
        """
        ``'batch'``: coordinate ascent, every step on all the rows with
        ``rho = 1``.  ``'online'``: stochastic natural-gradient steps on
        shuffled minibatches of at most ``batch_size`` rows (when one
        minibatch would hold all the rows, ``fit`` takes batch steps).""",
    ),
    "batch_size": (
        "int",
        """
        Largest number of rows per minibatch: ``fit`` (online) and
        ``partial_fit`` cut their rows into ``ceil(n / batch_size)``
        near-equal minibatches.""",
    ),
    "max_iter": (
        "int or None",
        """
        Most passes over the data in ``fit``.  None: 10 for a batch fit and
        50 for an online fit, which its stopping rule (``tol``) ends when it
        stops improving.""",
    ),
    "tol": (
        "float",
        """
        A batch ``fit`` stops when the ELBO's relative change between two
        passes falls below ``tol``; an online ``fit`` when the smoothed ELBO
        on a small sample of its rows has stopped improving beyond its noise
        and ``tol`` (``docs/watching.md``); 0 runs ``max_iter`` passes.""",
    ),
    "learning_offset": (
        "float",
        """
        ``tau`` of the schedule ``rho_t = (t + tau) ** -kappa`` (Hoffman et
        al.'s ``tau0``, gensim's ``offset``).""",
    ),
    "learning_decay": (
        "float",
        """
        ``kappa`` of that schedule, in ``(0.5, 1]`` for Robbins-Monro
        convergence (Hoffman et al.'s ``kappa``, gensim's ``decay``).  A
        value of 0.5 or less is accepted with a ``ConvergenceWarning`` when
        the steps follow it (an online ``fit``, ``partial_fit``).""",
    ),
    "learning_rate": (
        "None, float or Schedule",
        """
        A :mod:`skvi.schedules` object, or a float for a constant step, that
        replaces ``learning_offset`` and ``learning_decay``.""",
    ),
    "total_samples": (
        "'auto' or float",
        """
        The ``N`` of the ``N / |S|`` scaling in ``partial_fit`` (``fit``
        uses its number of rows).  ``'auto'`` follows the samples seen so
        far: the choice for a stream of unknown length
        (``docs/streaming.md``).""",
    ),
    "update_order": (
        "{'sequential', 'joint'}",
        """
        With several global factors: ``'sequential'`` (Paquet's option (a))
        updates each from statistics computed with the ones already updated;
        ``'joint'`` (option (b)) computes every target from one snapshot.""",
    ),
    "step_safety": (
        "bool",
        """
        Reject a step that makes a factor invalid or overshoots, halve the
        step size and retry (``docs/step_safety.md``).  Without it invalid
        factors are accepted, but a non-finite step is always skipped.""",
    ),
    "random_state": (
        "int, RandomState instance or None",
        """
        Seeds the initialisation, the minibatches and any Monte Carlo
        draws.""",
    ),
    "n_jobs": (
        "int or None",
        """
        Threads for a fit's blocks of rows and its global step's column
        blocks (None: one; -1: all cores).""",
    ),
    "verbose": (
        "int",
        """
        0: quiet; 1: progress on standard error (a line redrawn in place on
        a terminal, one line per pass otherwise); 2: records to the
        ``skvi`` logger (``docs/watching.md``).""",
    ),
}

_SECTION = re.compile(r"\n([ \t]*)Parameters\n[ \t]*-+\n")
_NEXT_SECTION = re.compile(
    r"\n\s*(Attributes|Returns|Yields|Raises|See Also|Notes|References|"
    r"Examples)\n\s*-+\n"
)


def document_engine_parameters(cls):
    """Add the engine parameters ``cls.__init__`` takes to its docstring and constraints.

    Parameters already documented in the class's ``Parameters`` section, or
    already constrained in its ``_parameter_constraints``, are left as they
    are; the others are appended from :data:`ENGINE_PARAMETER_DOCS` and
    :data:`ENGINE_PARAMETER_CONSTRAINTS`, in the signature's order.

    Parameters
    ----------
    cls : type
        An estimator class.

    Returns
    -------
    cls : type
        The same class.

    Examples
    --------
    >>> from skvi import GaussianGammaVB
    >>> "learning_offset : float, default=10.0" in GaussianGammaVB.__doc__
    True
    """
    if cls.__init__ is object.__init__:
        return cls
    signature = inspect.signature(cls.__init__)
    names = [n for n in signature.parameters if n in ENGINE_PARAMETER_CONSTRAINTS]
    constraints = getattr(cls, "_parameter_constraints", None)
    if constraints is not None:
        cls._parameter_constraints = {
            **constraints,
            **{n: ENGINE_PARAMETER_CONSTRAINTS[n] for n in names if n not in constraints},
        }
    doc = cls.__doc__
    match = _SECTION.search(doc or "")
    if match is None:
        return cls
    indent = match.group(1)
    end = _NEXT_SECTION.search(doc, match.end())
    end = len(doc) if end is None else end.start()
    section = doc[match.end() : end]
    missing = [
        n
        for n in names
        if not re.search(rf"^{indent}{n}\b.* :", section, flags=re.MULTILINE)
        and not re.search(rf"^{indent}(\w+, )*{n}(, \w+)* :", section, flags=re.MULTILINE)
    ]
    if not missing:
        return cls
    lines = []
    for name in missing:
        kind, text = ENGINE_PARAMETER_DOCS[name]
        default = signature.parameters[name].default
        lines.append(f"{indent}{name} : {kind}, default={default!r}")
        body = inspect.cleandoc(text)
        lines.extend(f"{indent}    {line}" for line in body.splitlines())
    added = "\n".join(lines)
    cls.__doc__ = doc[:end].rstrip("\n") + "\n" + added + "\n" + doc[end:]
    return cls


def learning_decay_warning(estimator):
    """The warning for a ``learning_decay`` of 0.5 or less that the steps follow, or None.

    With ``learning_rate=None`` the step sizes are ``rho_t = (t +
    learning_offset) ** -learning_decay``: a sum that diverges while the
    sum of their squares converges (the Robbins-Monro conditions, which
    make the stochastic steps converge) needs ``learning_decay`` in
    ``(0.5, 1]``.  Values down to 0 are accepted, as scikit-learn's LDA
    accepts them, with a :class:`~sklearn.exceptions.ConvergenceWarning`
    (the warning of a fit that may not converge, so that the filters that
    silence those silence this one); above 1 the parameter's constraint
    rejects them.  A schedule given as ``learning_rate`` is the user's
    explicit choice and is not checked.

    Examples
    --------
    >>> from skvi import GaussianGammaVB
    >>> learning_decay_warning(GaussianGammaVB(learning_decay=0.7)) is None
    True
    >>> learning_decay_warning(GaussianGammaVB(learning_decay=0.5))[:40]
    'GaussianGammaVB: learning_decay=0.5 is o'
    """
    decay = estimator.learning_decay
    if estimator.learning_rate is not None or decay > 0.5:
        return None
    return (
        f"{type(estimator).__name__}: learning_decay={decay!r} is outside (0.5, 1]: the "
        "step sizes rho_t = (t + learning_offset) ** -learning_decay shrink too slowly "
        "for the Robbins-Monro conditions, and the stochastic steps need not converge. "
        "Set learning_decay in (0.5, 1] (0.7, say), or pass learning_rate "
        "(a constant or a skvi.schedules object) to choose the step sizes explicitly."
    )


def max_passes(estimator):
    """The most passes ``fit`` takes: ``max_iter``, or its default for the learning method.

    Parameters
    ----------
    estimator : SVIEstimator
        The estimator.

    Returns
    -------
    int
        ``estimator.max_iter``, or when it is None :data:`DEFAULT_PASSES`
        of its ``learning_method``.  ``'auto'`` (an estimator that accepts
        it): an online fit takes ``ceil(AUTO_PASS_ROWS / n)`` passes over
        its ``n`` rows (its ``n_samples_seen_``), at least one and at most
        ``DEFAULT_PASSES['batch']``; a batch fit ``DEFAULT_PASSES['batch']``.

    Examples
    --------
    >>> from skvi import SVILatentDirichletAllocation
    >>> from skvi.engine.parameters import max_passes
    >>> max_passes(SVILatentDirichletAllocation(learning_method="online", max_iter=None))
    50
    >>> max_passes(SVILatentDirichletAllocation(max_iter=7))
    7
    >>> from skvi import SVIHierarchicalDirichletProcess
    >>> hdp = SVIHierarchicalDirichletProcess(max_iter="auto")
    >>> hdp.n_samples_seen_ = 4000  # fit counts its rows before its passes
    >>> max_passes(hdp)
    3
    """
    max_iter = estimator.max_iter
    method = getattr(estimator, "learning_method", "batch")
    if isinstance(max_iter, str):  # 'auto'
        seen = getattr(estimator, "n_samples_seen_", None)  # the fit's rows, counted first
        if method == "online" and seen:
            return min(DEFAULT_PASSES["batch"], max(1, math.ceil(AUTO_PASS_ROWS / seen)))
        return DEFAULT_PASSES["batch"]
    if max_iter is not None:
        return int(max_iter)
    return DEFAULT_PASSES.get(method, 10)
