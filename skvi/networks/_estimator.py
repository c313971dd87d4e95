"""``SVIBayesianNetwork``: a user-declared network as a scikit-learn estimator on the engine.

The user's ``builder(n_rows)`` (or, with ``fit(X, y)``, ``builder(X_rows)`` of
the rows' inputs) returns the observed node; its leading plate is the rows.
The builder declares the network once (:mod:`._declared`): each block of
rows gets a copy with its rows' plates and inputs, not a fresh call.  Nodes
whose plates change with the number of rows are local
(re-optimised on every minibatch with the globals fixed); the other latent
nodes are the engine's global factors, their natural parameters the
engine's parameters.  A step of the engine is then Paquet's Alg. 1 ("On the
convergence of stochastic variational inference in Bayesian networks") on
the network: the local step is variational message passing over the local
nodes; a global node's statistics are the messages of its local children,
summed over the minibatch and scaled by ``N / |S|``; its target adds its
prior (from its parents' current moments) and the messages of its global
children, unscaled.  A batch fit with ``update_order='sequential'`` is the
VMP sweep of :class:`~skvi.networks.VB` (locals first, then the globals).
"""

import inspect
import math
import numbers
import weakref

import numpy as np
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    validate_data,
)

from ..engine import Factor, ModelSettings, RowGroupSpec, RowStatistics, SVIEstimator
from ..engine.data import Rows, check_row_weights
from ..engine.step import update_factor
from ..update_rules import UPDATE_RULE_PARAMETER_CONSTRAINTS
from ._declared import CHECK_SIZES, Declaration, _Network
from ._fit_rotate import FitRotations
from ._links import has_links, link_update_rules, narrowed_start
from ._node import Constant
from ._plate_rows import child_counts, row_axes_of_children
from ._plates import NetworkError
from ._predictive import NetworkPredictions
from ._start import INIT_TOL, ONLINE_INIT_TOL, REFINE_ROWS, row_sample, seeded_node, start
from ._stochastic import Stochastic, _propagate_masks

__all__ = ["SVIBayesianNetwork"]

#: Rows whose masks ``_row_counts`` (the plate elements' ``N_m``) propagates at once.
COUNT_ROWS = 4096


def _takes_features(builder):
    """Whether ``builder`` takes ``(n_rows, n_features)`` rather than ``(n_rows)``."""
    try:
        params = list(inspect.signature(builder).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


class _NodeFamily:
    """The engine's view of a global node's family: its step-safety test and moments."""

    def __init__(self, owner, name):
        self.owner = owner
        self.name = name

    def valid_natural(self, *phi):
        node = self.owner._template()[0][self.name]
        return node._valid_natural([np.asarray(a) for a in phi])

    def from_natural(self, *phi):
        return _NodeMoments(self.owner._template()[0][self.name], phi)

    def __reduce__(self):
        return (_NodeFamily, (self.owner, self.name))


class _NodeMoments:
    """A global node's q at natural parameters ``phi``, as far as the engine reads it."""

    def __init__(self, node, phi):
        self.node = node
        self.phi = [np.asarray(a) for a in phi]

    def expected_stats(self):
        # The node's moments, which pair with its natural parameters.
        moments, _ = self.node._moments_and_cgf(self.phi)
        return tuple(moments)


class SVIBayesianNetwork(NetworkPredictions, SVIEstimator):
    """A Bayesian network of your own, fitted by VMP (batch) or SVI (online, streams).

    ``model`` is a function ``builder(n_rows)`` that declares the network
    with :mod:`skvi.networks`' nodes and returns the observed node, whose
    leading plate is the rows of X (its other plates and its shape take X's
    columns, row-major).  NaN in X marks a missing element of that node,
    integrated out as ``observe(x, mask)`` does.  Nodes whose plates depend on ``n_rows`` are
    local: a mixture's assignments, a factor model's scores.  The others
    are global: their posteriors are the estimator's parameters.

    With ``fit(X, y)``, a builder of one argument receives the rows' inputs
    instead, ``builder(X_rows)`` (an array with one row per observation,
    used where BayesPy takes an array: ``SumMultiply('d,d->', X_rows, w)``,
    a mixture's index ``X_rows[:, 0]``), and the observed node observes y;
    :meth:`predict` and :meth:`predict_proba` then give its posterior
    predictive mean and class probabilities for new inputs.

    The builder declares the structure: it is called at a few numbers of
    rows (with inputs, a few of the rows), and every block of rows is then
    fitted in a copy of that network, its rows' plates resized and its
    inputs put in.  A builder whose network changes with the number of rows
    other than by the rows' plate, or that returns a node of an earlier call,
    is refused before anything is fitted.

    Parameters
    ----------
    model : callable
        ``builder(n_rows) -> observed node``, or ``builder(n_rows,
        n_features)`` when it takes two arguments (a network that adapts
        to the width of X; it ignores y), or with ``fit(X, y)``
        ``builder(X_rows) -> observed node`` of the rows' inputs.  It must
        make every node on each call, build the same network for every
        number of rows (but for the rows' plate) and be picklable for
        cluster fits (a function defined at module level).
    local_max_iter : int, default=50
        Most sweeps of the local step when there are several local latent
        nodes (one sweep is exact for one).
    local_tol : float, default=1e-8
        The local step stops when the relative change of the local bound
        falls below it.
    transform_node : str or None, default=None
        The local node whose first moment :meth:`transform` returns (None:
        the first local latent node).
    init_params : {'auto', 'k-means++', 'random', 'model'}, default='auto'
        The start.  ``'random'``: BayesPy's, below (a random draw of the
        local nodes, then VMP on a subsample).  ``'k-means++'``: for a
        mixture (one local :class:`Categorical` over the rows, no link
        nodes), each draw instead seeds every category's globals from one
        row, chosen as scikit-learn's ``kmeans_plusplus`` chooses its
        centres (the best of ``2 + log(K)`` rows drawn with weights that
        grow with how much worse the categories seeded so far explain them
        than the row they explain best), then VMP on the subsample;
        random assignments start every cluster at the data's mean, and
        many draws then merge clusters.  ``'auto'``: ``'k-means++'`` for
        a mixture, else ``'random'``.  ``'model'``: the global
        nodes' ``q`` as the builder leaves them (set by
        ``initialize_from_parameters``; a node it does not set starts at
        its prior), the first pass's local step from them, nothing random:
        two fits from the same ``q`` take the same steps.  When it sets
        nodes to a value (``initialize_from_random``,
        ``initialize_from_value``), the start is then one sweep of VMP over
        the global nodes in their order, each updated from the others'
        moments, the values of those not updated yet: BayesPy's first
        ``Q.update()``.
    init_rows : int, default=1000
        The start fits VMP to a random subsample of this many rows (all of
        them when there are fewer), from a random draw of the local nodes
        (BayesPy's ``initialize_from_random``), then refines the draw it
        keeps on a subsample ten times as large.
    init_max_iter : int, default=100
        Most VMP sweeps of each draw and of the refinement (0: the globals
        are one update from the random draw, as BayesPy's first sweep).
        They stop sooner at a relative change of the bound of 1e-6, or of
        1e-4 in a fit of online steps, which go on refining the globals.
    init_draws : int or 'auto', default='auto'
        Random draws the start fits on the subsample; the one with the
        highest bound there is kept.  The draws race: each is swept twenty
        times (three when seeded by k-means++), then only the one with the
        highest bound sweeps on.  ``'auto'``: five random draws, or two
        seeded ones (as scikit-learn's ``KMeans(n_init='auto')`` runs
        k-means++ fewer times than random starts).
    n_init : int, default=1
        Starts; the fit with the highest bound is kept.
    accelerate : {'rotate'} or False, default='rotate'
        How batch passes speed up where plain VMP creeps.  ``'rotate'``: after each pass, the latent space of every
        factor model ``SumMultiply('d,d->', X, C)`` of zero-mean
        ``GaussianARD`` vectors (as :class:`~skvi.networks.VB` rotates
        them; the rows' scores with a fixed prior precision) is rotated
        to the bound's maximum, ``x -> R x`` and ``c -> R^{-T} c``, with
        ``C``'s ``Gamma`` precisions updated; the bound never falls, and
        the pass's bound is taken with the rows' local step at the rotated
        globals.  A network without such a product takes plain passes.
        ``False``: plain passes.  Online steps and the start's sweeps (from
        random draws, where a rotation can lead the column precisions to
        switch off columns the data need) are not rotated.
    algorithm : {'mc-ssvi', 'h-mc-ssvi', 's-dsvi'}, default='mc-ssvi'
        How the global Gaussian nodes above a link (:class:`Logistic`,
        :class:`Exp`, :class:`Softmax`, :class:`Ordinal`) step, the Monte
        Carlo structured SVI paper's algorithms as in the GLM estimators:
        natural-gradient steps on mean and covariance (the VMP update, for
        every other node too), a natural-gradient covariance and an AdaGrad
        mean, or AdaGrad on the mean and the Cholesky factor
        (:mod:`skvi.update_rules`).
    gradient_learning_rate : float, default=0.5
        AdaGrad's global learning rate for ``'h-mc-ssvi'`` and ``'s-dsvi'``.

    Attributes
    ----------
    nodes_ : dict
        The global nodes by name, their ``q`` the fitted posterior
        (``nodes_[name].get_moments()``).
    local_nodes_ : list of str
        The local latent nodes.
    global_nodes_ : list of str
        The global latent nodes, in their update order.
    n_features_in_ : int
        Columns of X.

    See Also
    --------
    skvi.networks.VB : the same network fitted by plain VMP.

    Examples
    --------
    A Gaussian mixture declared in BayesPy's vocabulary:

    >>> import numpy as np
    >>> from skvi.networks import (Categorical, Dirichlet, Gaussian, Mixture,
    ...                            SVIBayesianNetwork, Wishart)
    >>> def mixture(n_rows, K=3, D=2):
    ...     alpha = Dirichlet(np.ones(K), name="alpha")
    ...     z = Categorical(alpha, plates=(n_rows,), name="z")
    ...     mu = Gaussian(np.zeros(D), 0.01 * np.eye(D), plates=(K,), name="mu")
    ...     Lambda = Wishart(D, np.eye(D), plates=(K,), name="Lambda")
    ...     return Mixture(z, Gaussian, mu, Lambda, name="y")
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.normal(c, 0.5, size=(100, 2)) for c in (-4, 0, 4)])
    >>> net = SVIBayesianNetwork(model=mixture, random_state=0).fit(X)
    >>> np.sort(np.round(net.nodes_["mu"].get_moments()[0][:, 0]))
    array([-4., -0.,  4.])
    >>> net.transform(X[:2]).max(axis=1).round(3)      # responsibilities
    array([1., 1.])

    A regression, its builder a function of the rows' inputs:

    >>> from skvi.networks import Gamma, GaussianARD, SumMultiply
    >>> def regression(X_rows):
    ...     w = GaussianARD(0, 1e-6, shape=(X_rows.shape[1],), name="w")
    ...     tau = Gamma(1e-3, 1e-3, name="tau")
    ...     return GaussianARD(SumMultiply("d,d->", X_rows, w), tau, name="y")
    >>> inputs = np.column_stack([np.arange(10.0), np.ones(10)])
    >>> y = 2 * inputs[:, 0] + 5 + rng.normal(0, 0.01, size=10)
    >>> reg = SVIBayesianNetwork(model=regression).fit(inputs, y)
    >>> reg.nodes_["w"].get_moments()[0].round(1)      # slope and bias
    array([2., 5.])
    >>> reg.predict([[20.0, 1.0]]).round(1)             # E[y] = x E[w]
    array([45.])
    """

    _parameter_constraints = {
        "model": [callable],
        "local_max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "local_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "transform_node": [None, str],
        "init_params": [StrOptions({"auto", "k-means++", "random", "model"})],
        "init_rows": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "init_draws": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "accelerate": [StrOptions({"rotate"}), Options(bool, {False})],
        **UPDATE_RULE_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        model=None,
        *,
        local_max_iter=50,
        local_tol=1e-8,
        transform_node=None,
        init_params="auto",
        init_rows=1000,
        init_max_iter=100,
        init_draws="auto",
        n_init=1,
        accelerate="rotate",
        algorithm="mc-ssvi",
        gradient_learning_rate=0.5,
        learning_method="batch",
        batch_size=1000,
        max_iter=200,
        tol=1e-7,
        learning_offset=10.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.model = model
        self.local_max_iter = local_max_iter
        self.local_tol = local_tol
        self.transform_node = transform_node
        self.init_params = init_params
        self.init_rows = init_rows
        self.init_max_iter = init_max_iter
        self.init_draws = init_draws
        self.n_init = n_init
        self.accelerate = accelerate
        self.algorithm = algorithm
        self.gradient_learning_rate = gradient_learning_rate
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.update_order = update_order
        self.step_safety = step_safety
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------ structure
    def _call_builder(self, n_rows, inputs):
        """The builder's observed node for ``n_rows`` rows (``inputs``: their inputs, or None)."""
        if self.model is None:
            raise ValueError(
                "SVIBayesianNetwork needs model=builder, a function of n_rows "
                "(or of the rows' inputs X, with fit(X, y)) that returns the observed node."
            )
        if inputs is not None:
            try:
                return self.model(inputs)
            except TypeError as err:
                raise TypeError(
                    f"model: fit(X, y) calls the builder with the rows' inputs (an array of "
                    f"shape {inputs.shape}), and it failed ({err}); a builder of n_rows "
                    "fits X alone: fit(X)"
                ) from err
        if _takes_features(self.model):
            return self.model(n_rows, self.n_features_in_)
        return self.model(n_rows)

    def _declare(self, X=None, sizes=()):
        """Declare the network from the builder (``X``: rows whose inputs it takes, if any)."""
        probe = None
        if self._takes_inputs:
            # Rows spread over the data, different ones at each size, so that
            # an input column is told from a value repeated on every row.
            inputs = np.asarray(X.X, dtype=np.float64)

            def probe(n):
                return inputs[np.linspace(0, inputs.shape[0] - 1, n).round().astype(np.intp)]

        decl = Declaration(self._call_builder, probe, sizes)
        a = decl.nodes
        y_name = list(a)[-1]
        observed = a[y_name]
        if y_name not in decl.local or decl.row_axis[y_name] != 0:
            raise NetworkError(
                f"{observed.describe()}: the observed node's leading plate must "
                f"be the rows (n_rows), got plates {observed.plates} for {decl.size} rows"
                + (
                    "; a builder of inputs must build the node from the inputs it is given, "
                    "not from arrays of its own"
                    if self._takes_inputs
                    else ""
                )
            )
        if observed.children:
            raise NetworkError(
                f"{observed.describe()}: the observed node must be a leaf; it has "
                f"children {[c.describe() for c, _ in observed.children]}"
            )
        latent_local = [n for n in decl.local if n != y_name and isinstance(a[n], Stochastic)]
        glob = [n for n in a if n not in decl.local]
        for n in glob:
            if not isinstance(a[n], Stochastic) or a[n].observed:
                raise NetworkError(f"{a[n].describe()}: a global node must be latent")
        # The q the builder sets (init_params='model'), before any fit moves it.
        decl.initial = {
            n: None if a[n].phi is None else tuple(np.array(v, dtype=np.float64) for v in a[n].phi)
            for n in glob
        }
        # And the moments of those it sets to a value (initialize_from_random, say).
        decl.values = {
            n: ([np.array(v, dtype=np.float64) for v in a[n].u], np.array(a[n].g, dtype=np.float64))
            for n in glob
            if a[n].phi is None
        }
        self._declaration = decl
        self._reach = row_axes_of_children(a, decl.network(3, feed=False), glob)
        self._structure = (a, y_name, latent_local, glob)

    @property
    def _takes_inputs(self):
        """Whether the builder takes the rows' inputs (a fit on X and y)."""
        return bool(self.__dict__.get("_with_inputs", False))

    def _template(self):
        """The declared network: (nodes, observed node's name, local latent, globals)."""
        cached = self.__dict__.get("_structure")
        if cached is None:
            if self._takes_inputs:
                raise NetworkError("the network of inputs is declared by fit(X, y)")
            self._declare()
        return self._structure

    def _declaration_network(self, n_rows):
        """The declared network's plates for ``n_rows`` rows (no inputs: for counting)."""
        self._template()
        return self._declaration.network(n_rows, feed=False)

    def _network(self, X, feed=True):
        """The declared network for the rows of ``X``, their inputs fed in."""
        self._template()
        inputs = None
        if self._takes_inputs and feed:
            inputs = np.asarray(X.X, dtype=np.float64)
        return self._declaration.network(X.shape[0], inputs, feed=feed, call=self._call_builder)

    @property
    def _settings(self):
        try:
            nodes, _, _, glob = self._template()
        except (TypeError, ValueError, AttributeError, IndexError):
            # Not declared yet, and the builder not of n_rows alone (one of
            # the inputs, which fit declares from its rows): no factors yet.
            return ModelSettings({}, parallel=True, start_sample_size=REFINE_ROWS * self.init_rows)
        # A global node with local children is a row group of its plate
        # elements: each element is scaled by its own N_m / C_m and steps by
        # its own counter (Paquet's Alg. 1).
        groups = {
            n: RowGroupSpec(
                counts=self._element_counts,
                prior=self._element_prior,
                axes=len(nodes[n].plates),
                share=True,
            )
            for n in glob
            if self._reach[n]
        }
        return ModelSettings(
            {n: _NodeFamily(self, n) for n in glob},
            row_groups=groups,
            local_depends_on_globals=True,
            parallel=True,
            # A link's message makes a Gaussian's update a Newton-like
            # fixed-point step (Monte Carlo structured SVI), which can
            # overshoot: a batch step must not lower the ELBO, each starting
            # again from the full step (a damped Newton iteration).
            batch_steps="line_search" if has_links(nodes.values()) else "blend",
            transient=("_bound_memo", "_observed_memo"),
            update_rules=link_update_rules(
                nodes, glob, self.algorithm, self.gradient_learning_rate
            ),
            # On a cluster, the start's rows: its draws' subsample and the
            # larger one it refines the kept draw on.
            start_sample_size=REFINE_ROWS * self.init_rows,
        )

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _set_globals(nodes, glob, params):
        # A step reads a network at the same factors many times (each
        # factor's statistics and target): set each node once, and again only
        # when its factor moved (a sequential update moves one at a time) or
        # another hand has changed its q since.
        factors = tuple(params[n] for n in glob)
        last = nodes.__dict__.get("_globals_set") if isinstance(nodes, _Network) else None
        kept = (None,) * len(factors), (None,) * len(factors)
        if last is not None:
            kept = last
        changed = False
        for n, factor, was, phi in zip(glob, factors, kept[0], kept[1]):
            node = nodes[n]
            if was is factor and node.__dict__.get("_phi") is phi:
                continue
            changed = True
            u, g = factor.cached(
                "network_moments", lambda f: node._moments_and_cgf([np.asarray(a) for a in f])
            )
            node.phi = [np.asarray(a) for a in factor]
            node.u, node.g = u, g
        if changed and isinstance(nodes, _Network):
            nodes._globals_set = (factors, [nodes[n].__dict__.get("_phi") for n in glob])

    def _observations(self, X):
        """The observed node's values of the rows: y with inputs, else X itself."""
        values = X.y if self._takes_inputs else X.X
        values = np.asarray(values, dtype=np.float64)
        return values[:, None] if values.ndim == 1 else values

    def _shape_rows(self, X, observed):
        want = observed.plates[1:] + observed._kind.value_shape()
        if observed._kind.name in ("categorical", "poisson", "bernoulli", "beta"):
            want = observed.plates[1:]
        if int(math.prod(want)) != X.shape[1]:
            raise ValueError(
                f"{'y' if self._takes_inputs else 'X'} has {X.shape[1]} columns, but the "
                "observed node "
                f"{observed.describe()} takes {int(math.prod(want))} per row "
                f"(plates and shape {want})."
            )
        return X.reshape((X.shape[0],) + want)

    @staticmethod
    def _observed_mask(values, observed):
        """The elements of the observed node that X gives (NaN: missing), or True for all."""
        missing = np.isnan(values)
        if not missing.any():
            return True
        axes = tuple(range(len(observed.plates), values.ndim))
        if axes and np.any(missing.any(axis=axes) & ~missing.all(axis=axes)):
            raise ValueError(
                f"X has NaN in some but not all of the {values.shape[-1]} values "
                f"of an element of {observed.describe()}; an element is missing "
                "whole or not at all."
            )
        return ~missing.all(axis=axes) if axes else ~missing

    def _local_network(self, X, params, init_random=None, remember=True, start_locals=True):
        """A network of X's rows with the globals at ``params``, its local step done.

        ``remember=False`` (``transform``) leaves the estimator as it was: the
        rows' observed moments are not kept for a later network of them.
        ``start_locals=False`` leaves the local nodes unset, for a caller
        that sets them (the start's seeded draws).
        """
        _, y_name, latent_local, glob = self._template()
        nodes = self._network(X)
        self._set_globals(nodes, glob, params)
        observed = nodes[y_name]
        self._observe_rows(X, observed, remember)
        if X.weight is not None:
            # Row i's terms count w_i times: in the local bound and in every
            # message that sums rows into a global node.
            rows = len(observed.plates)
            local = set(self._template()[0]) - set(self._template()[3])
            for n in local:
                node = nodes[n]
                tail = len(node.plates) - (len(node.plates) - rows) - 1
                node._row_weight = np.broadcast_to(
                    X.weight.reshape((-1,) + (1,) * tail), node.plates[len(node.plates) - rows :]
                ).copy()
        if not start_locals:
            return nodes
        for n in latent_local:
            if init_random is not None:
                nodes[n].initialize_from_random(init_random)
            elif len(latent_local) == 1 and not has_links(nodes.values()):
                # One local node: its update reads messages that never depend
                # on its own moments, so its start is not computed (zeros
                # stand for it until the update sets q).  A link's message
                # does depend on them: its fixed point is iterated.
                node = nodes[n]
                node.u = [np.broadcast_to(0.0, node.plates + d) for d in node.dims]
            else:
                nodes[n].initialize_from_prior()
        if init_random is None:
            self._local_sweeps(nodes, latent_local)
        return nodes

    def _observe_rows(self, X, observed, remember=True):
        """``observed.observe`` of the rows of X, reusing the moments of a network of the same rows.

        A batch fit's passes observe the same rows in each pass's network
        (the last pass's still alive): the data's moments (a Gaussian's outer
        products), the support check and the mask are computed once and
        shared, read only.  Only weak references are kept, so that nothing
        of the rows outlives the networks that hold them.
        """
        memo = self.__dict__.get("_observed_memo")
        if memo is not None and memo[0]() is X:
            kept = [ref() if isinstance(ref, weakref.ref) else ref for ref in memo[1]]
            if not any(a is None for a in kept):
                *u, f, mask = kept
                observed._fixed = None
                observed._mask = None if mask is False else mask
                observed.u, observed.f = u, f
                observed.phi = observed.g = None
                observed.observed = True
                _propagate_masks(observed)
                return
        values = self._shape_rows(self._observations(X), observed)
        observed.observe(values, mask=self._observed_mask(values, observed))
        if observed.observed and remember:
            kept = [*observed.u, observed.f, False if observed._mask is None else observed._mask]
            for a in kept:
                if isinstance(a, np.ndarray) and a.flags.owndata:
                    a.setflags(write=False)
            refs = [weakref.ref(a) if isinstance(a, np.ndarray) else a for a in kept]
            self._observed_memo = (weakref.ref(X), refs)

    def _local_sweeps(self, nodes, latent_local):
        if not latent_local:
            return
        if len(latent_local) == 1 and not has_links(nodes.values()):
            nodes[latent_local[0]].update()
            return
        last = None
        local = [n for n in nodes if n in latent_local]
        for _ in range(self.local_max_iter):
            for n in local:
                nodes[n].update()
            bound = sum(nodes[n].lower_bound_contribution() for n in nodes if n in local)
            if last is not None and abs(bound - last) <= self.local_tol * abs(bound):
                break
            last = bound

    def _local_children_messages(self, nodes, name):
        """The messages of ``name``'s local children, summed, at the node's full shape."""
        node = nodes[name]
        total = [np.zeros(node.plates + d) for d in node.dims]
        for child, index in self._local_children(nodes, name):
            for i, m in enumerate(child._message_to_parent(index)):
                total[i] = total[i] + m
        return tuple(total)

    def _local_children(self, nodes, name):
        """``name``'s children in ``nodes`` that are local: ``(child, index)``, kept per network."""
        kept = (
            nodes.__dict__.setdefault("_local_children", {}) if isinstance(nodes, _Network) else {}
        )
        found = kept.get(name)
        if found is None:
            glob = set(self._template()[3])
            names = {id(v): k for k, v in nodes.items()}
            found = kept[name] = [
                (child, index)
                for child, index in nodes[name].children
                # not a global, nor a node of another network
                if names.get(id(child)) not in glob and id(child) in names
            ]
        return found

    def _global_base(self, name, params, copy=True):
        """Prior from the parents at ``params`` + global children's messages: the unscaled part.

        ``copy=False``: a caller that only reads it may be given the kept prior itself.
        """
        nodes, _, _, glob = self._template()
        node = nodes[name]
        fixed = self.__dict__.setdefault("_fixed_bases", {})
        if name in fixed:  # fixed parents and no global child: the prior alone, once
            return [a.copy() for a in fixed[name]] if copy else fixed[name]
        self._set_globals(nodes, glob, params)
        phi = node._full(node._phi_from_parents(node._parent_moments()))
        gset = set(glob)
        names = {id(v): k for k, v in nodes.items()}
        neighbours = False
        for child, index in node.children:
            if names.get(id(child)) in gset:
                neighbours = True
                for i, m in enumerate(child._message_to_parent(index)):
                    phi[i] = phi[i] + m
        if not neighbours and all(isinstance(p, Constant) for p in node.parents):
            fixed[name] = [a.copy() for a in phi]
        return phi

    def _global_target(self, name, params, stats, scale):
        """:meth:`_global_base` + scale * stats (the messages of the local children)."""
        phi = self._global_base(name, params, copy=False)
        return tuple(p + scale * np.asarray(s) for p, s in zip(phi, stats))

    def _counts(self, nodes, name, weight):
        """``C_m``: the observed child elements of ``nodes`` that each element of global ``name`` reaches.

        The children are the node's local children; an element left out by
        the masks that ``observe`` propagated sends nothing and counts
        nothing.  Rows count ``weight`` times.
        """
        self._template()  # the structure, ``_reach`` with it (a worker's copy has neither)
        node = nodes[name]
        total = np.zeros(node.plates)
        for key, index, axis in self._reach[name]:
            total = total + child_counts(nodes[key], index, axis, node, weight)
        return total

    # ------------------------------------------------------------ engine hooks
    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        if reset:
            # A builder of (n_rows, n_features) fits X alone, whatever y is.
            self._with_inputs = y is not None and not _takes_features(self.model)
            for name in (
                "_structure",
                "_declaration",
                "_reach",
                "_fixed_bases",
                "_rotations",
                "_observed_memo",
            ):
                self.__dict__.pop(name, None)
        elif self._takes_inputs != (y is not None) and self._takes_inputs:
            raise ValueError(
                "this network was fitted on (X, y), its builder a function of the inputs X: "
                "pass y too"
            )
        if self._takes_inputs:
            # NaN in y marks a missing observation, as NaN in X does without inputs.
            X = validate_data(self, X, reset=reset, dtype=np.float64)
            y = check_array(y, ensure_2d=False, dtype=np.float64, ensure_all_finite="allow-nan")
            check_consistent_length(X, y)
            y = np.asarray(y, dtype=np.float64)
            if reset:
                self._y_1d = y.ndim == 1
        else:
            X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite="allow-nan")
        weight = check_row_weights(sample_weight, X)
        data = Rows(X, y if self._takes_inputs else None, weight)
        if reset:
            sizes = list(CHECK_SIZES)
            if vocabulary is None:
                # The sizes this fit calls it at, too: all the rows, a minibatch.
                sizes += [X.shape[0], min(self.batch_size, X.shape[0])]
            self._declare(data, sorted(set(sizes)))
        nodes, y_name, _, _ = self._template()
        self._shape_rows(self._observations(data[:0]), nodes[y_name])
        return data

    def _data_summary(self, X, local=None):
        # The samples of all the rows: a start on a sample counts for them;
        # after a step, what its rotations need of the rows' local nodes.
        if local is None:
            return float(X.count())
        rotations = self._fit_rotations()
        return rotations.summary(local) if rotations else None

    def _update_hyperparameters(self, hyper, ctx):
        # A batch pass ends with the rotations of the factor models it has
        # (the moved globals, for the engine to commit); online steps do not.
        rotations = self._fit_rotations()
        if ctx.online or ctx.end_of_pass or not rotations:
            return False
        nodes, _, _, glob = self._template()
        self._set_globals(nodes, glob, self.natural_params_)
        return rotations.move(nodes, hyper)

    def _fit_rotations(self):
        """The rotatable factor models of the network (empty with ``accelerate=False``)."""
        rotations = self.__dict__.get("_rotations")
        if rotations is None:
            nodes, _, latent_local, glob = self._template()
            rotations = FitRotations(nodes, latent_local, glob)
            if getattr(self, "accelerate", "rotate") is False:
                rotations.pairs = []
            self._rotations = rotations
        return rotations

    def _prior_natural(self):
        nodes, _, _, glob = self._template()
        return {
            n: tuple(nodes[n]._full(nodes[n]._phi_from_parents(nodes[n]._parent_moments())))
            for n in glob
        }

    def _initialize_globals(self, X, random_state, summary, ctx=None):
        nodes, _, latent_local, glob = self._template()
        if self.init_params == "model":
            # The q its builder sets, or the prior; with nodes it sets to a
            # value, one sweep from them.
            params = {
                n: tuple(np.array(a) for a in q)
                for n, q in self._declaration.initial.items()
                if q is not None
            }
            if len(params) < len(glob):
                params = self._sweep_from_values(X, params, summary)
            return params
        seeded = self._seeded_node()
        params = {}
        for n in glob:  # q from the prior, parents first
            node = nodes[n]
            node.initialize_from_prior()
            params[n] = tuple(node.phi)
        params = {n: Factor(v) for n, v in params.items()}
        n_all = X.shape[0]
        rows = X
        if n_all > self.init_rows:
            rows = X[row_sample(random_state, n_all, self.init_rows)]
        if has_links(nodes.values()):
            net = self._network(rows)
            self._set_globals(net, glob, params)
            for n in latent_local:
                net[n].initialize_from_prior()
            params = {n: Factor(v) for n, v in narrowed_start(net, params, glob).items()}
        if latent_local:
            online = ctx is not None and not ctx.only_batch_steps
            tol = ONLINE_INIT_TOL if online else INIT_TOL
            params = start(self, X, rows, params, random_state, summary, seeded, tol)
        return {n: tuple(v) for n, v in params.items()}

    def _seeded_node(self):
        """The categorical node the start seeds (``init_params``), or None for random draws."""
        if self.init_params == "random":
            return None
        seeded = seeded_node(self)
        if seeded is None and self.init_params == "k-means++":
            raise ValueError(
                "init_params='k-means++' seeds the categories of a mixture: a network "
                "whose one local latent node is a Categorical over the rows alone, "
                f"without link nodes; this network's local latent nodes are "
                f"{self._template()[2]}. Use init_params='random' or 'auto'."
            )
        return seeded

    def _sweep_from_values(self, X, params, summary):
        """The start from the nodes the builder sets to a value: one sweep of VMP, in order.

        As BayesPy's first ``Q.update()``: every global node updated once,
        in the network's order, from the others' moments, the values of
        those not updated yet (its factor carries them until then, with its
        prior's natural parameters, which nothing reads); on the rows of X,
        scaled to all the rows.
        """
        nodes, _, _, glob = self._template()
        params = {n: Factor(q) for n, q in params.items()}
        for n, (u, g) in self._declaration.values.items():
            node = nodes[n]
            prior = node._full(node._phi_from_parents(node._parent_moments()))
            params[n] = Factor(tuple(prior), cache={"network_moments": (u, g)})
        params = {n: params[n] for n in glob}
        net = self._local_network(X, params)
        total = X.count() if summary is None else float(summary)
        self._globals_from(net, params, total / X.count())
        return {n: tuple(v) for n, v in params.items()}

    def _globals_from(self, net, params, scale):
        """One sequential update of every global from the locals of ``net`` (in place)."""
        _, _, _, glob = self._template()
        for n in glob:
            self._set_globals(net, glob, params)
            stats = self._local_children_messages(net, n)
            params[n] = Factor(self._global_target(n, params, stats, scale))

    def _local_step(self, X, params):
        memo = self.__dict__.get("_bound_memo")
        if memo is not None and memo[0] is X:
            glob = self._template()[3]
            if all(a is params[n] for a, n in zip(memo[1], glob)):
                self.__dict__.pop("_bound_memo", None)
                return memo[2]
        return self._local_network(X, params)

    def _expected_stats(self, name, X, local, params):
        _, _, _, glob = self._template()
        self._set_globals(local, glob, params)
        stats = self._local_children_messages(local, name)
        if not self._reach[name]:
            return stats
        # Every element, with C_m: the engine scales each by N_m / C_m.
        node = local[name]
        size = int(math.prod(node.plates))
        # The counts of a network's elements stay what its observation made
        # them: kept on the network, for each of its steps' statistics.
        memo = local.__dict__.setdefault("_counts_memo", {}) if isinstance(local, _Network) else {}
        found = memo.get(name)
        if found is None or found[0] is not X.weight:
            found = memo[name] = (X.weight, self._counts(local, name, X.weight).reshape(size))
            found[1].setflags(write=False)  # shared by the steps: read only
        counts = found[1]
        return RowStatistics(
            np.arange(size),
            tuple(np.asarray(v).reshape((size,) + d) for v, d in zip(stats, node.dims)),
            counts,
        )

    def _element_counts(self, name, X, size):
        """``N_m`` of the plate elements of global node ``name``: the rows that reach each."""
        return self._row_counts(X, {name: size})[name]

    def _row_counts(self, X, sizes):
        """The rows of X that reach each plate element of the global nodes of ``sizes``."""
        if not sizes:
            return {}
        values = self._observations(X)
        if not np.isnan(values).any():  # every row's elements: one row's, times the rows
            nodes = self._declaration_network(1)
            return {
                name: float(X.count()) * self._counts(nodes, name, None).reshape(size)
                for name, size in sizes.items()
            }
        _, y_name, _, _ = self._template()
        out = {name: np.zeros(size) for name, size in sizes.items()}
        for rows in gen_batches(values.shape[0], COUNT_ROWS):
            # The masks alone, a bounded block of rows at a time: no moments.
            nodes = self._declaration_network(rows.stop - rows.start)
            observed = nodes[y_name]
            mask = self._observed_mask(self._shape_rows(values[rows], observed), observed)
            if mask is not True:
                observed._mask = mask.astype(np.float64)
                _propagate_masks(observed)
            weight = None if X.weight is None else X.weight[rows]
            for name, size in sizes.items():
                out[name] += self._counts(nodes, name, weight).reshape(size)
        return out

    def _element_prior(self, name, rows, ctx):
        node = self._template()[0][name]
        size = int(math.prod(node.plates))
        every = rows.shape[0] == size
        prior = (
            p.reshape((size,) + d) for p, d in zip(self._global_base(name, ctx.params), node.dims)
        )
        return tuple(p if every else p[rows] for p in prior)

    def _update_factor(self, name, current, stats, ctx):
        if isinstance(stats, RowStatistics):
            return update_factor(self, name, current, stats, ctx)
        target = self._global_target(name, ctx.params, stats, ctx.scale)
        return update_factor(self, name, current, stats, ctx, target=target)

    def _local_bound(self, X, local, params):
        _, y_name, latent_local, glob = self._template()
        if local is None:
            local = self._local_network(X, params)
            if has_links(local.values()):
                # A batch step's test of the ELBO made the next local step at
                # these globals (the links' expectations, the rows' moments):
                # kept for it (``_local_step``).
                self._bound_memo = (X, tuple(params[n] for n in glob), local)
        self._set_globals(local, glob, params)
        return float(sum(local[n].lower_bound_contribution() for n in latent_local + [y_name]))

    def _global_bound(self, params):
        nodes, _, _, glob = self._template()
        self._set_globals(nodes, glob, params)
        return float(sum(nodes[n].lower_bound_contribution() for n in glob))

    def _on_params_updated(self):
        self.__dict__.pop("_bound_memo", None)  # a fit's: it holds the rows
        self.__dict__.pop("_observed_memo", None)
        nodes, _, latent_local, glob = self._template()
        self._set_globals(nodes, glob, self.natural_params_)
        self.nodes_ = {n: nodes[n] for n in glob}
        self.global_nodes_ = list(glob)
        self.local_nodes_ = list(latent_local)
