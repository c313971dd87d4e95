"""Plots of fitted skvi estimators: ELBO curves, step sizes, topics.

Every function imports matplotlib when it is called (``pip install
skvi[plot]``), so ``import skvi`` never does; each draws on the given
``ax`` or on a new figure, and returns what it drew on.

:func:`plot_elbo`
    The ELBO of one or several fitted estimators against fit time, samples
    seen or steps, from their ``history_``.
:func:`plot_step_sizes`
    The step size of every step, the steps with rejections marked, from
    ``step_trace_``.
:func:`plot_top_words`
    The most probable words of each topic of a fitted
    :class:`~skvi.SVILatentDirichletAllocation`.
:func:`plot_hinton`
    A Hinton diagram of a :mod:`skvi.networks` node's posterior mean (or
    of a matrix), as BayesPy's ``bayespy.plot.hinton``.
:func:`plot_pdf`
    The posterior density of each scalar element of a Gaussian, Gamma or
    Beta node of :mod:`skvi.networks`, as BayesPy's ``bayespy.plot.pdf``.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["plot_elbo", "plot_hinton", "plot_pdf", "plot_step_sizes", "plot_top_words"]

_X_AXES = {
    "time": ("time", "fit time [s]"),
    "samples": ("samples", "samples seen"),
    "steps": ("steps", "steps"),
}


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "skvi.plotting needs matplotlib: pip install matplotlib (or skvi[plot])"
        ) from exc
    return plt


def _new_axes(ax, **subplots):
    if ax is not None:
        return ax
    return _pyplot().subplots(**subplots)[1]


def _history(est):
    try:
        return est.history_
    except AttributeError:
        check_is_fitted(est)  # raises NotFittedError naming the estimator
        raise


def plot_elbo(estimators, x="time", ax=None, labels=None):
    """Plot the ELBO of fitted estimators against fit time or samples seen.

    One line per estimator, from its ``history_``: a point per evaluated
    pass of ``fit`` (the exact full-data ELBO, ``lower_bounds_``) and per
    ``partial_fit`` call (its last minibatch's estimate).  Passes whose ELBO
    was not computed (an LDA's ``evaluate_every``) are left out.

    Parameters
    ----------
    estimators : SVIEstimator or list of SVIEstimator
        Fitted skvi estimators.
    x : {'time', 'samples', 'steps'}, default='time'
        The horizontal axis: seconds since ``fit`` began, samples processed
        (a pass counts its rows again) or steps taken.
    ax : matplotlib.axes.Axes or None, default=None
        Where to draw; None draws on a new figure.
    labels : list of str or None, default=None
        A legend label per estimator; None labels each by its class name
        (numbered when several share one).

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on; ``ax.get_lines()[i]`` is the ``i``-th
        estimator's curve.

    Raises
    ------
    ValueError
        When ``x`` is unknown, the labels do not match the estimators, or
        an estimator's history holds no ELBO.

    See Also
    --------
    plot_step_sizes : the step sizes of a fit.
    skvi.engine.monitor : watch the ELBO while a fit runs.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.plotting import plot_elbo
    >>> X = np.random.RandomState(0).normal(size=(500, 2))
    >>> svi = GaussianGammaVB(learning_method="online", batch_size=50, max_iter=4, tol=0)
    >>> batch = GaussianGammaVB(max_iter=4, tol=0)
    >>> ax = plot_elbo([svi.fit(X), batch.fit(X)], x="samples", labels=["SVI", "batch"])
    >>> ax.get_lines()[0].get_xdata()
    array([ 500., 1000., 1500., 2000.])
    >>> bool(np.all(ax.get_lines()[1].get_ydata() == batch.lower_bounds_))
    True
    """
    if x not in _X_AXES:
        raise ValueError(f"x must be one of {sorted(_X_AXES)}, got {x!r}")
    field, xlabel = _X_AXES[x]
    if not isinstance(estimators, (list, tuple)):
        estimators = [estimators]
    names = [type(est).__name__ for est in estimators]
    if labels is None:
        labels = [
            name if names.count(name) == 1 else f"{name} ({names[: i + 1].count(name)})"
            for i, name in enumerate(names)
        ]
    elif len(labels) != len(estimators):
        raise ValueError(f"{len(labels)} labels for {len(estimators)} estimators")
    histories = []
    for est in estimators:
        history = _history(est)
        shown = np.isfinite(history["elbo"])
        if not shown.any():
            raise ValueError(
                f"{type(est).__name__} has no ELBO in its history_: no pass computed "
                "it (for SVILatentDirichletAllocation set evaluate_every)."
            )
        histories.append(history[shown])
    ax = _new_axes(ax)
    for history, label in zip(histories, labels):
        ax.plot(history[field], history["elbo"], marker=".", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ELBO")
    if len(estimators) > 1 or labels is not None:
        ax.legend()
    return ax


def plot_step_sizes(estimator, ax=None):
    """Plot the step size of every step of a fit, the rejected steps marked.

    From ``step_trace_``: the step size ``rho_t`` of each step (the
    schedule's value times the step safety's reduction) on log-log axes,
    a cross on every step with attempts rejected by step safety (the size
    shown is the one finally taken) and a triangle on every step skipped
    (all its attempts rejected).  Beyond ``skvi.engine.monitoring.TRACE_SIZE``
    steps the trace is thinned (see ``step_trace_``).

    Parameters
    ----------
    estimator : SVIEstimator
        A fitted skvi estimator.
    ax : matplotlib.axes.Axes or None, default=None
        Where to draw; None draws on a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on: ``ax.get_lines()[0]`` is the step-size curve,
        then the rejected and the skipped steps, when there are any.

    See Also
    --------
    plot_elbo : the ELBO curves of fits.
    skvi.schedules : the step-size schedules.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skvi import GaussianGammaVB
    >>> from skvi.plotting import plot_step_sizes
    >>> X = np.random.RandomState(0).normal(size=(500, 2))
    >>> est = GaussianGammaVB(learning_method="online", batch_size=50, max_iter=2, tol=0)
    >>> ax = plot_step_sizes(est.fit(X))
    >>> rho = ax.get_lines()[0].get_ydata()
    >>> bool(np.allclose(rho, (np.arange(1, 21) + 10.0) ** -0.7))  # the default schedule
    True
    """
    try:
        trace = estimator.step_trace_
    except AttributeError:
        check_is_fitted(estimator)
        raise
    ax = _new_axes(ax)
    ax.plot(trace["t"], trace["rho"], label="step size")
    rejected = (trace["rejected"] > 0) & trace["accepted"]
    if rejected.any():
        n = int(estimator.n_rejected_steps_)
        ax.plot(
            trace["t"][rejected],
            trace["rho"][rejected],
            ls="none",
            marker="x",
            color="C3",
            label=f"steps with rejections ({n} attempts rejected)",
        )
    skipped = ~trace["accepted"]
    if skipped.any():
        ax.plot(
            trace["t"][skipped],
            trace["rho"][skipped],
            ls="none",
            marker="v",
            color="C1",
            label="skipped steps (every attempt rejected)",
        )
    if trace.shape[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"step size $\rho_t$")
    if rejected.any() or skipped.any():
        ax.legend()
    return ax


def plot_top_words(lda, feature_names, n_words=10, ax=None, topics=None):
    """Bar charts of the most probable words of each topic of a fitted LDA.

    One horizontal bar chart per topic: its ``n_words`` most probable
    words under the posterior mean of the topic,
    ``E[beta_k] = components_[k] / components_[k].sum()``, the most
    probable at the top.

    Parameters
    ----------
    lda : SVILatentDirichletAllocation
        A fitted topic model (or any estimator with a ``components_`` of
        shape ``(n_topics, n_features)`` holding Dirichlet parameters or
        word weights).
    feature_names : array-like of str of shape (n_features,) or None
        The words, e.g. ``vectorizer.get_feature_names_out()``; None uses
        ``lda.feature_names_in_`` if it exists, else the column numbers.
    n_words : int, default=10
        Words shown per topic.
    ax : matplotlib.axes.Axes, array of Axes or None, default=None
        One axes per topic shown; None draws on a new figure, a grid of
        at most five topics a row.
    topics : array-like of int or None, default=None
        The topics to show, in this order; None shows them all.

    Returns
    -------
    axes : ndarray of matplotlib.axes.Axes
        One axes per topic shown; ``axes[i].patches`` are the bars of its
        words, the most probable first.

    Raises
    ------
    ValueError
        When ``feature_names`` or ``ax`` do not match the model.

    See Also
    --------
    skvi.SVILatentDirichletAllocation : the topic model.
    skvi.metrics.topic_coherence : how coherent the top words are.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn.datasets import make_multilabel_classification
    >>> from skvi import SVILatentDirichletAllocation
    >>> from skvi.plotting import plot_top_words
    >>> X, _ = make_multilabel_classification(n_features=12, random_state=0)
    >>> lda = SVILatentDirichletAllocation(n_components=3, random_state=0).fit(X)
    >>> words = np.array([f"w{j}" for j in range(12)])
    >>> axes = plot_top_words(lda, words, n_words=4)
    >>> len(axes), len(axes[0].patches)
    (3, 4)
    >>> p = lda.components_[0] / lda.components_[0].sum()
    >>> bool(np.allclose([bar.get_width() for bar in axes[0].patches],
    ...                  np.sort(p)[::-1][:4]))
    True
    """
    check_is_fitted(lda, "components_")
    weights = np.asarray(lda.components_, dtype=float)
    n_topics, n_features = weights.shape
    if feature_names is None:
        feature_names = getattr(lda, "feature_names_in_", None)
        if feature_names is None:
            feature_names = [str(j) for j in range(n_features)]
    feature_names = np.asarray(feature_names, dtype=object)
    if feature_names.shape != (n_features,):
        raise ValueError(
            f"feature_names has shape {feature_names.shape}; the model has {n_features} features"
        )
    topics = np.arange(n_topics) if topics is None else np.asarray(topics, dtype=int).ravel()
    n_words = min(int(n_words), n_features)
    if ax is None:
        n_cols = min(5, topics.size)
        n_rows = -(-topics.size // n_cols)
        # Room for the words left of each chart, and for each row's title,
        # tick labels and axis label: the constrained layout then keeps a
        # row's titles clear of the tick labels of the row above.
        longest = max((len(str(w)) for w in feature_names), default=1)
        width = 1.8 + 0.075 * min(longest, 30)
        _, grid = _pyplot().subplots(
            n_rows,
            n_cols,
            squeeze=False,
            layout="constrained",
            figsize=(width * n_cols, (0.24 * n_words + 1.3) * n_rows),
        )
        grid = grid.ravel()
        for extra in grid[topics.size :]:
            extra.set_visible(False)
        axes = grid[: topics.size]
    else:
        axes = np.ravel(np.asarray(ax, dtype=object))
        if axes.size < topics.size:
            raise ValueError(f"{topics.size} topics to show need as many axes, got {axes.size}")
        axes = axes[: topics.size]
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    for axis, k in zip(axes, topics):
        p = probabilities[k]
        top = np.argsort(-p, kind="stable")[:n_words]
        axis.barh(np.arange(n_words), p[top], height=0.7)
        axis.set_yticks(np.arange(n_words))
        axis.set_yticklabels([str(w) for w in feature_names[top]])
        axis.invert_yaxis()
        axis.set_title(f"Topic {k}")
        axis.set_xlabel("probability")
        axis.locator_params(axis="x", nbins=3)  # few, unclipped probability ticks
    return axes


def _posterior_mean(node):
    """``E_q[x]`` of a network node (probabilities for a Dirichlet or Beta)."""
    from .networks import Dirichlet, Node  # noqa: PLC0415

    if not isinstance(node, Node):
        return None
    if isinstance(node, Dirichlet) and getattr(node, "phi", None) is not None:
        alpha = np.asarray(node.phi[0], dtype=float)  # q's concentration
        return alpha / alpha.sum(axis=-1, keepdims=True)
    return np.asarray(node.get_moments()[0], dtype=float)


def plot_hinton(node, ax=None):
    """A Hinton diagram of a network node's posterior mean, or of a matrix.

    One square per element: its area proportional to the element's size
    relative to the largest, white for a positive value and black for a
    negative one, on grey; rows top to bottom.  A node shows ``E_q[x]``
    (for a Dirichlet or Beta node the expected probabilities
    ``alpha / sum(alpha)``), so that, as in BayesPy's ``hinton``, the
    loadings of a PCA or the probabilities of a mixture are read at a
    glance.

    Parameters
    ----------
    node : skvi.networks node or array-like of shape (n_rows, n_cols) or (n,)
        The node (its posterior mean is drawn) or the values; a vector is
        drawn as one row, a node's plates and dimensions must make at most
        two axes.
    ax : matplotlib.axes.Axes or None, default=None
        The axes to draw on; None draws on a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        Its ``patches`` are the squares, row by row.

    Raises
    ------
    ValueError
        When the values are empty, not finite or have more than two axes.

    See Also
    --------
    plot_pdf : the posterior density of a scalar node.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skvi.networks import Categorical, Dirichlet, VB
    >>> p = Dirichlet(np.ones(3))
    >>> z = Categorical(p, plates=(6,))
    >>> _ = z.observe(np.array([0, 0, 0, 1, 1, 2]))
    >>> VB(z, p).update(repeat=1, verbose=False)
    >>> from skvi.plotting import plot_hinton
    >>> ax = plot_hinton(p)               # E[p] = (4, 3, 2) / 9
    >>> [float(round(square.get_width() ** 2, 3)) for square in ax.patches]
    [1.0, 0.75, 0.5]
    """
    mean = _posterior_mean(node)
    values = np.asarray(node if mean is None else mean, dtype=float)
    values = np.squeeze(values) if values.ndim > 2 else values
    if values.ndim > 2:
        raise ValueError(
            f"plot_hinton draws at most two axes; the values have shape {values.shape}: "
            "draw a slice of them"
        )
    values = np.atleast_2d(values)
    if values.size == 0:
        raise ValueError(f"plot_hinton has nothing to draw: the values have shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("plot_hinton needs finite values; they contain NaN or infinity")
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    ax = _new_axes(ax)
    largest = np.max(np.abs(values), initial=0.0)
    ax.set_facecolor("grey")
    n_rows, n_cols = values.shape
    for (i, j), v in np.ndenumerate(values):
        side = np.sqrt(abs(v) / largest) if largest > 0 else 0.0
        ax.add_patch(
            Rectangle(
                (j - side / 2, i - side / 2),
                side,
                side,
                facecolor="white" if v > 0 else "black",
                edgecolor="none",
            )
        )
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def plot_pdf(node, x=None, ax=None, max_lines=20):
    """The posterior density of each scalar element of a network node.

    One line per element (at most ``max_lines``, the first in C order),
    labelled by its index: for a ``GaussianARD`` or ``Gaussian`` node the
    normal density of each element's marginal mean and variance (from the
    moments ``E[x]`` and ``E[x x^T]``), for a ``Gamma`` node its Gamma
    density, and for a ``Beta`` node the density of the probability of the
    first outcome; as BayesPy's ``pdf`` for one variable.

    Parameters
    ----------
    node : GaussianARD, Gaussian, Gamma or Beta node of :mod:`skvi.networks`
        The node; its current ``q``.
    x : array-like of shape (n_points,) or None, default=None
        Where to evaluate the densities; None: 400 points covering every
        element's posterior (mean plus and minus 4 standard deviations, or
        the Gamma's 0.1% to 99.9% quantiles, or (0, 1) for a Beta).
    ax : matplotlib.axes.Axes or None, default=None
        The axes to draw on; None draws on a new figure.
    max_lines : int, default=20
        Elements drawn at most.

    Returns
    -------
    ax : matplotlib.axes.Axes
        Its ``lines`` are the densities, one per element.

    Raises
    ------
    ValueError
        When the node is of another family, or ``x`` is not finite.

    See Also
    --------
    plot_hinton : the posterior means of many elements at once.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from scipy import stats
    >>> from skvi.networks import GaussianARD, VB
    >>> mu = GaussianARD(0.0, 1.0)
    >>> y = GaussianARD(mu, 1.0, plates=(3,))
    >>> _ = y.observe(np.array([1.0, 2.0, 3.0]))
    >>> VB(y, mu).update(repeat=1, verbose=False)
    >>> from skvi.plotting import plot_pdf
    >>> ax = plot_pdf(mu, x=np.linspace(0, 3, 7))
    >>> line = ax.lines[0]                # q(mu) = N(6 / 4, 1 / 4)
    >>> bool(np.allclose(line.get_ydata(), stats.norm.pdf(line.get_xdata(), 1.5, 0.5)))
    True
    """
    from scipy import stats  # noqa: PLC0415

    from .networks import Beta, Gamma, Gaussian, GaussianARD, Node  # noqa: PLC0415

    if not isinstance(node, (GaussianARD, Gaussian, Gamma, Beta)):
        kind = type(node).__name__ if isinstance(node, Node) else type(node).__name__
        raise ValueError(
            f"plot_pdf draws a GaussianARD, Gaussian, Gamma or Beta node of skvi.networks; "
            f"got {kind}. plot_hinton draws the posterior mean of any node."
        )
    u = node.get_moments()
    if isinstance(node, Gamma):
        phi = node.phi
        if phi is None:
            raise ValueError("plot_pdf draws a latent node; this Gamma node is observed")
        shape, rate = np.broadcast_arrays(np.asarray(phi[1], float), -np.asarray(phi[0], float))
        dists = stats.gamma(shape.ravel(), scale=1.0 / rate.ravel())
        low, high = dists.ppf(1e-3).min(), dists.ppf(1 - 1e-3).max()
    elif isinstance(node, Beta):
        if node.phi is None:
            raise ValueError("plot_pdf draws a latent node; this Beta node is observed")
        alpha = np.asarray(node.phi[0], dtype=float).reshape(-1, 2)
        dists = stats.beta(alpha[:, 0], alpha[:, 1])
        low, high = 0.0, 1.0
    else:
        mean = np.asarray(u[0], dtype=float)
        second = np.asarray(u[1], dtype=float)
        if isinstance(node, Gaussian):  # the marginals of the vector's elements
            second = np.diagonal(second, axis1=-2, axis2=-1)
        sd = np.sqrt(np.maximum(second - mean**2, 0.0)).ravel()
        mean = mean.ravel()
        dists = stats.norm(mean, sd)
        low, high = np.min(mean - 4 * sd), np.max(mean + 4 * sd)
    if x is None:
        x = np.linspace(low, high, 400)
    x = np.asarray(x, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite; it contains NaN or infinity")
    with np.errstate(over="ignore", under="ignore"):  # far tails: a density of 0
        density = dists.pdf(x[:, None])  # (n_points, elements)
    ax = _new_axes(ax)
    shape = np.asarray(u[0]).shape
    n_lines = min(int(max_lines), density.shape[1])
    for index in range(n_lines):
        label = str(np.unravel_index(index, shape)) if len(shape) else None
        ax.plot(x, density[:, index], label=label)
    ax.set_xlabel(node.name or "x")
    ax.set_ylabel("posterior density")
    if 1 < n_lines <= 10:
        ax.legend()
    return ax
