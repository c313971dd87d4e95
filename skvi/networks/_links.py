"""Link nodes: non-conjugate children of Gaussian nodes, fitted by Monte Carlo structured SVI.

``Bernoulli(Logistic(f))``, ``Poisson(Exp(f))``, ``Categorical(Softmax(F))``
and ``Categorical(Ordinal(f))`` put a Gaussian linear predictor under a
non-Gaussian observation, the
generalised linear models of "Monte Carlo structured SVI for two-level
non-conjugate models".  A link is a deterministic node whose moments are the
ones its child's family takes from a conjugate parent: a Bernoulli's
``[E log p, E log(1 - p)]``, a Poisson's ``[E lambda, E log lambda]``, a
categorical's ``E log p``, here expectations under the Gaussian ``q(f)`` of
``p = sigmoid(f)``, ``lambda = exp(f)``, ``p = softmax(F)``, the cumulative
logit's category probabilities.  The child's
bound term is then the expected log-likelihood, with every constant.

The child's message to the link is linear in those moments, coefficients
``c``: the expected log-likelihood is ``L(q(f)) = c . u(q(f))``.  The link
sends its parent the gradient of ``L`` in the Gaussian's mean parameters
``(E f, E f f^T)``, which is the natural gradient in its natural parameters
(Khan and Lin, "Conjugate-computation variational inference"; the Monte
Carlo structured SVI paper, section 2.3)::

    [dL/dm - 2 (dL/dS) m,  dL/dS],   dL/dm = E[d log p / df],
                                     dL/dS = E[d^2 log p / df df^T] / 2

(Bonnet's and Price's theorems).  Summed through a ``SumMultiply`` into the
weights, they are the statistics of the GLM estimators' natural-gradient
target, ``X^T (E1 - E2 m)`` and ``X^T diag(E2) X / 2``: a conjugate VMP update
of the weights is a Monte Carlo structured SVI step (a unit step, a
Newton-like fixed-point iteration).  The expectations are those of
:mod:`skvi.likelihoods`: Gauss-Hermite quadrature for the logistic link, the
closed form ``E[e^f] = exp(m + v / 2)`` for the exponential, the fixed
quasi-Monte-Carlo rule for the softmax, Gauss-Hermite quadrature per
category for the ordinal link.
"""

import numpy as np

from ..likelihoods import Bernoulli as _BernoulliLikelihood
from ..likelihoods import Ordinal as _OrdinalLikelihood
from ..likelihoods import Poisson as _PoissonLikelihood
from ..likelihoods import Softmax as _SoftmaxLikelihood
from ..likelihoods.softmax import PREDICTIVE_POINTS
from ._deterministic import _CachedMoments
from ._moments import MomentsKind
from ._node import Node, _as_parent, _children_total
from ._plates import NetworkError, sum_to_plates

__all__ = ["Exp", "Logistic", "Ordinal", "Softmax"]

#: Gauss-Hermite nodes of the logistic link's expectations: the GLMs' rule
#: for the ELBO and for a deterministic step (``skvi.models.glm``).
QUADRATURE_POINTS = 20


def _label(kind, name):
    return f"{kind} '{name}'" if name else f"{kind} (unnamed)"


class _Link(_CachedMoments):
    """A deterministic node ``g(f)`` of one Gaussian parent, its child non-conjugate to ``f``.

    A subclass gives the moments' kind, the parent's variable shape, and
    ``_expectations(m, S)``: the moments and what the message needs.
    """

    def __init__(self, f, kind, vector, name):
        self.name = name
        label = _label(type(self).__name__, name)
        if isinstance(f, Node):
            f = f._view_as("gaussian")
            if f._kind.name != "gaussian":
                raise NetworkError(
                    f"{label}: f is {f.describe()} with {f._kind.describe} moments, but a "
                    f"{type(self).__name__} link takes a Gaussian node (GaussianARD, "
                    "Gaussian, a SumMultiply or Add of them) as its linear predictor"
                )
            shape = tuple(f._kind.dims[0])
        else:
            value = np.asarray(f, dtype=np.float64)
            shape = value.shape[-1:] if vector and value.ndim else ()
        if (len(shape) == 1 and shape[0] >= 2) != vector or len(shape) > 1:
            raise NetworkError(f"{label}: {self._shape_error(shape)}")
        parent = _as_parent(label, "f", f, MomentsKind.gaussian(shape))
        self._shape = shape
        super().__init__(kind, parent.plates, name)
        self.parents = [parent]
        parent.children.append((self, 0))

    def _shape_error(self, shape):
        return f"f has the variable shape {tuple(shape)}, but a link takes a scalar f"

    def update(self):
        """Nothing to update: the moments follow ``f``."""

    def _f_moments(self, up):
        """Mean and variance (covariance) of f, broadcast to the plates."""
        u0, u1 = (np.asarray(a, dtype=np.float64) for a in up[0])
        d = self._shape
        m = np.broadcast_to(u0, self.plates + d)
        if d:
            S = u1 - m[..., :, None] * m[..., None, :]
            return m, np.broadcast_to(S, self.plates + d + d)
        return m, np.maximum(np.broadcast_to(u1, self.plates) - m * m, 0.0)

    def _expected(self, up):
        """The link's expectations at the parent's moments ``up``, kept while they are the same."""
        key = tuple(up[0])
        cached = self.__dict__.get("_expected_cache")
        if cached is not None and all(a is b for a, b in zip(cached[0], key)):
            return cached[1]
        out = self._expectations(*self._f_moments(up))
        self._expected_cache = (key, out)
        return out

    def _compute(self, up):
        return self._moments_of(self._expected(up))

    def _message_to_parent(self, index):
        parent = self.parents[0]
        d = self._shape
        total = _children_total(self)
        up = [parent.u]
        m, _ = self._f_moments(up)
        # The children's coefficients of each moment array.
        coef = [
            np.broadcast_to(
                np.zeros(()) if total is None else np.asarray(total[i], dtype=np.float64),
                self.plates + dims,
            )
            for i, dims in enumerate(self.dims)
        ]
        w = self._weights_to(parent)
        if w is not None:
            coef = [c * w.reshape(w.shape + (1,) * len(dims)) for c, dims in zip(coef, self.dims)]
        grad_m, grad_S = self._gradients(coef, self._expected(up))
        if d:
            m0 = grad_m - 2.0 * np.einsum("...ij,...j->...i", grad_S, m)
        else:
            m0 = grad_m - 2.0 * grad_S * m
        return [
            sum_to_plates(m0, parent.plates, len(d), self.plates),
            sum_to_plates(grad_S, parent.plates, 2 * len(d), self.plates),
        ]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_expected_cache", None)
        return state


class Logistic(_Link):
    """The logistic link: ``p = sigmoid(f)`` of a Gaussian ``f``, the probability of a :class:`Bernoulli`.

    ``Bernoulli(Logistic(f))`` is the logistic likelihood of a latent
    Gaussian ``f``; with ``f = SumMultiply('d,d->', X, w)`` it is Bayesian
    logistic regression, :class:`skvi.SVILogisticRegression` declared as a
    network.  The moments are ``[E log sigmoid(f), E log sigmoid(-f)]`` under
    ``q(f)`` (Gauss-Hermite quadrature of 20 nodes, as the GLM's), so the
    Bernoulli's bound term is the expected log-likelihood; the message to
    ``f`` is the natural gradient of that term (the module's notes), which
    makes ``f``'s Gaussian ancestors take Monte Carlo structured SVI steps.
    BayesPy has no such node.

    Parameters
    ----------
    f : node
        A Gaussian node of scalar variables (``GaussianARD`` of shape
        ``()``, a ``SumMultiply`` with a scalar output, an ``Add`` of them).
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import VB, Bernoulli, GaussianARD, Logistic, SumMultiply
    >>> rng = np.random.RandomState(0)
    >>> X = np.column_stack([rng.normal(size=200), np.ones(200)])
    >>> y = (rng.uniform(size=200) < 1 / (1 + np.exp(-(2 * X[:, 0] - 1)))).astype(float)
    >>> w = GaussianARD(0.0, 1.0, shape=(2,), name="w")
    >>> obs = Bernoulli(Logistic(SumMultiply("d,d->", X, w)), name="y")
    >>> _ = obs.observe(y)
    >>> Q = VB(obs, w)
    >>> Q.update(repeat=50)
    >>> w.get_moments()[0].round(2)            # the posterior mean of the weights
    array([ 1.47, -0.68])
    """

    def __init__(self, f, name=""):
        super().__init__(f, MomentsKind.beta(), False, name)

    def _expectations(self, m, v):
        e_log, d1, d2 = _BernoulliLikelihood().expectations(
            np.ones(m.shape), m, v, method="quadrature", n_samples=QUADRATURE_POINTS
        )
        return m, e_log, d1, d2

    def _moments_of(self, expected):
        m, e_log, _, _ = expected
        # log sigmoid(-f) = log sigmoid(f) - f.
        return [np.stack([e_log, e_log - m], axis=-1)]

    def _gradients(self, coef, expected):
        # L = a E log sigmoid(f) + b E log sigmoid(-f) = (a + b) E log sigmoid(f) - b m.
        _, _, d1, d2 = expected
        a, b = coef[0][..., 0], coef[0][..., 1]
        n = a + b
        return n * d1 - b, 0.5 * n * d2

    def _mean_probabilities(self):
        """``[E sigmoid(f), 1 - E sigmoid(f)]``: the posterior predictive of a Bernoulli child."""
        m, v = self._f_moments([self.parents[0].u])
        p = _BernoulliLikelihood().predictive_mean(m, v)
        return np.stack([p, 1.0 - p], axis=-1)


class Exp(_Link):
    """The exponential link: a rate ``lambda = exp(f)`` of a Gaussian ``f``, for a :class:`Poisson`.

    ``Poisson(Exp(f))`` is Poisson regression when ``f = SumMultiply('d,d->',
    X, w)``, and with a Gaussian random effect per count,
    ``f = Add(SumMultiply('d,d->', X, w), e)``, the overdispersed model of
    :class:`skvi.SVIOverdispersedPoissonRegression` (a log-normal
    Poisson).  The moments ``[E exp(f), E f] = [exp(m + v / 2), m]`` are
    exact, as are the message's derivatives (:mod:`skvi.likelihoods`'
    Poisson).  BayesPy has no such node.

    Parameters
    ----------
    f : node
        A Gaussian node of scalar variables.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Exp, GaussianARD
    >>> rate = Exp(GaussianARD(1.0, 4.0, plates=(2,)))
    >>> rate.get_moments()[0].round(4)              # exp(1 + 1 / 8)
    array([3.0802, 3.0802])
    """

    def __init__(self, f, name=""):
        super().__init__(f, MomentsKind.gamma(), False, name)

    def _expectations(self, m, v):
        # E[log p(0 | f)] = -E[e^f], its derivatives -E[e^f]: the exact rate.
        _, d1, _ = _PoissonLikelihood().expectations(np.zeros(m.shape), m, v, method="quadrature")
        return m, -d1

    def _moments_of(self, expected):
        m, rate = expected
        return [rate, m]

    def _gradients(self, coef, expected):
        # L = a E exp(f) + b E f.
        _, rate = expected
        a, b = coef
        return a * rate + b, 0.5 * a * rate


class Softmax(_Link):
    """The softmax link: probabilities ``p = softmax(F)`` of a Gaussian K-vector ``F``, for a :class:`Categorical`.

    ``Categorical(Softmax(F))`` is multinomial logistic regression when
    ``F = SumMultiply('kd,d->k', W, X)`` (the weights ``W`` a Gaussian node
    of shape ``(K, D)``), the model of :class:`skvi.SVILogisticRegression`
    with more than two classes.  The moments are ``E log softmax(F)_k =
    E F_k - E log sum_j exp(F_j)``; the log-sum-exp's expectation and its
    derivatives come from :class:`skvi.likelihoods.Softmax`'s fixed
    quasi-Monte-Carlo rule (512 points, the GLM's).  BayesPy has no such
    node.

    Parameters
    ----------
    F : node
        A Gaussian node of K-vectors (``Gaussian``, ``GaussianARD`` of shape
        ``(K,)``, a ``SumMultiply`` with one output key), K at least 2.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Categorical, GaussianARD, Softmax
    >>> F = GaussianARD(np.array([0.0, 1.0, 2.0]), 1e6, shape=(3,))
    >>> p = Categorical(Softmax(F), name="class")
    >>> p.get_moments()[0].round(3)                 # softmax of the mean
    array([0.09 , 0.245, 0.665])
    """

    def __init__(self, F, name=""):
        if isinstance(F, Node):
            dims = F._kind.dims[0] if F._kind.name == "gaussian" else ()
        else:
            dims = np.shape(F)[-1:]
        self.K = dims[-1] if len(dims) else 0
        super().__init__(F, MomentsKind.dirichlet(max(self.K, 1)), True, name)

    def _shape_error(self, shape):
        return (
            f"F has the variable shape {tuple(shape)}, but a softmax takes a Gaussian node "
            "of K-vectors, K >= 2 (shape (K,))"
        )

    def _expectations(self, m, S):
        flat_m = m.reshape(-1, self.K)
        flat_S = S.reshape(-1, self.K, self.K)
        e_log, e1, e2 = _SoftmaxLikelihood().expectations(
            np.zeros(flat_m.shape[0]),
            flat_m,
            flat_S,
            method="quadrature",
            n_samples=PREDICTIVE_POINTS,
        )
        # With class 0 observed: E log p_0 = m_0 - E lse(F), E d1 = e_0 - E p.
        lse = flat_m[:, 0] - e_log
        p = -e1
        p[:, 0] += 1.0
        plates = m.shape[:-1]
        return m, lse.reshape(plates), p.reshape(m.shape), e2.reshape(S.shape)

    def _moments_of(self, expected):
        m, lse, _, _ = expected
        return [m - lse[..., None]]

    def _gradients(self, coef, expected):
        # L = c . m - (sum c) E lse(F).
        _, _, p, e2 = expected
        n = coef[0].sum(axis=-1)
        return coef[0] - n[..., None] * p, 0.5 * n[..., None, None] * e2

    def _mean_probabilities(self):
        """``E softmax(F)``: the posterior predictive of a categorical child."""
        m, S = self._f_moments([self.parents[0].u])
        flat = _SoftmaxLikelihood().predictive_proba(
            m.reshape(-1, self.K), S.reshape(-1, self.K, self.K)
        )
        return flat.reshape(m.shape)


def _above(links):
    """The ids of the nodes above ``links`` (their ancestors), without recursion."""
    above = set()
    stack = [p for link in links for p in link.parents]
    while stack:
        node = stack.pop()
        if id(node) not in above:
            above.add(id(node))
            stack.extend(node.parents)
    return above


def has_links(nodes):
    """Whether any of ``nodes`` (an iterable of nodes) is a non-conjugate link."""
    return any(isinstance(n, _Link) for n in nodes)


class Ordinal(_Link):
    """The cumulative-logit link: probabilities of ``K`` ordered categories for a :class:`Categorical`.

    ``p(y = k | f) = sigmoid(s (b_k - f)) - sigmoid(s (b_{k-1} - f))`` of a
    Gaussian ``f``, with increasing thresholds ``b`` and slope ``s``
    (:class:`skvi.likelihoods.Ordinal`, the ordinal likelihood of the Monte
    Carlo structured SVI paper's experiments).  ``Categorical(Ordinal(f))``
    is ordinal regression when ``f = SumMultiply('d,d->', X, w)``.  The
    moments are ``E log p(y = k | f)`` for every ``k`` (Gauss-Hermite
    quadrature of 20 nodes), so that the categorical's bound term is the
    expected log-likelihood.  BayesPy has no such node.

    Parameters
    ----------
    f : node
        A Gaussian node of scalar variables.
    thresholds : array-like of shape (K - 1,) or None, default=None
        Increasing cut points (None: ``0.5, 1.5, ..., K - 1.5``).
    n_categories : int, default=5
        ``K``, when ``thresholds`` is None.
    slope : float, default=1.0
        ``s``.
    name : str, default=''
        The node's name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import Categorical, GaussianARD, Ordinal
    >>> f = GaussianARD(np.array([0.0, 2.0]), 1e8)
    >>> grade = Categorical(Ordinal(f, n_categories=3), name="grade")
    >>> grade.get_moments()[0].round(3)         # sigmoid(0.5 - f), ..., at the means
    array([[0.622, 0.195, 0.182],
           [0.182, 0.195, 0.622]])
    """

    def __init__(self, f, thresholds=None, n_categories=5, slope=1.0, name=""):
        try:
            self._likelihood = _OrdinalLikelihood(thresholds, n_categories, slope)
        except ValueError as err:
            raise NetworkError(f"{_label('Ordinal', name)}: {err}") from None
        self.K = self._likelihood.n_categories
        super().__init__(f, MomentsKind.dirichlet(self.K), False, name)

    def _expectations(self, m, v):
        shape = m.shape + (self.K,)
        e_log, d1, d2 = self._likelihood.expectations(
            np.broadcast_to(np.arange(self.K, dtype=np.float64), shape),
            np.broadcast_to(m[..., None], shape),
            np.broadcast_to(v[..., None], shape),
            method="quadrature",
            n_samples=QUADRATURE_POINTS,
        )
        return e_log, d1, d2

    def _moments_of(self, expected):
        return [expected[0]]

    def _gradients(self, coef, expected):
        # L = sum_k c_k E log p(k | f).
        _, d1, d2 = expected
        return np.sum(coef[0] * d1, axis=-1), 0.5 * np.sum(coef[0] * d2, axis=-1)

    def _mean_probabilities(self):
        """``E p(y = k | f)`` for every ``k``: the posterior predictive of a categorical child."""
        m, v = self._f_moments([self.parents[0].u])
        shape = m.shape + (self.K,)
        log_p = self._likelihood.predictive_logpdf(
            np.broadcast_to(np.arange(self.K, dtype=np.float64), shape),
            np.broadcast_to(m[..., None], shape),
            np.broadcast_to(v[..., None], shape),
        )
        return np.exp(log_p)


def narrowed_start(net, params, glob):
    """The globals ``params`` with the Gaussians above a link narrowed, for a first step near Newton's.

    From a wide prior (an intercept's, unscaled inputs) the linear predictor's
    variance is large, the sigmoid's curvature averaged over it nearly zero
    and ``E[e^f] = exp(m + v / 2)`` huge: the first natural-gradient step
    jumps far, and the damped steps spend passes coming back (as the GLM
    estimators' start notes).  Every global Gaussian node above a link keeps
    its mean and has its precision scaled by the links' mean predictor
    variance in ``net`` (the rows' network at ``params``) when it is above
    1: the first step is then close to an IRLS step.

    Parameters
    ----------
    net : dict
        The rows' network at ``params``, nodes by name.
    params : dict
        The global nodes' natural parameters.
    glob : list of str
        The global nodes.

    Returns
    -------
    dict
        ``params``, those nodes' natural parameters scaled.
    """
    links = [node for node in net.values() if isinstance(node, _Link)]
    if not links:
        return params
    spread = []
    for link in links:
        _, v = link._f_moments([link.parents[0].u])
        if link._shape:
            v = np.trace(v, axis1=-2, axis2=-1) / link._shape[0]
        spread.append(float(np.mean(v)) if np.size(v) else 0.0)
    scale = max(spread)
    if not scale > 1.0 or not np.isfinite(scale):
        return params
    above = _above(links)
    out = dict(params)
    for name in glob:
        node = net[name]
        if id(node) in above and node._kind.name == "gaussian":
            out[name] = tuple(scale * np.asarray(a) for a in params[name])
    return out


def links_below(nodes):
    """Whether a link is a child of any of ``nodes``, directly or through deterministic nodes."""
    stack, seen = list(nodes), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, _Link):
            return True
        stack.extend(c for c, _ in node.children if c._deterministic)
    return False


class _FlatRule:
    """An update rule of :mod:`skvi.update_rules` for a Gaussian node of any variable shape.

    The rules take a batch of Gaussians over one axis, ``(..., D)`` and
    ``(..., D, D)``; a node's natural parameters have its variable axes
    (none for a scalar, ``(K, D)`` for a matrix), flattened on the way in
    and restored on the way out.
    """

    def __init__(self, rule, shape):
        self.rule = rule
        self.shape = tuple(shape)

    def step(self, current, target, rho, backoff, state):
        nd = len(self.shape)
        size = int(np.prod(self.shape, dtype=np.int64))

        def flat(pair):
            a0, a1 = (np.asarray(a) for a in pair)
            lead = a0.shape[: a0.ndim - nd]
            return (a0.reshape(lead + (size,)), a1.reshape(lead + (size, size))), lead

        (cur, lead), (tgt, _) = flat(current), flat(target)
        new, state = self.rule.step(cur, tgt, rho, backoff, state)
        return (
            new[0].reshape(lead + self.shape),
            new[1].reshape(lead + self.shape + self.shape),
        ), state


def link_update_rules(nodes, glob, algorithm, gradient_learning_rate):
    """The update rule of each global Gaussian node above a link, for ``algorithm``.

    ``'mc-ssvi'`` is the natural-gradient blend every node takes (no rule);
    ``'h-mc-ssvi'`` and ``'s-dsvi'`` move the Gaussians above a link by
    AdaGrad mean (and Cholesky-factor) steps (the Monte Carlo structured
    SVI paper's algorithms); the other nodes keep the blend.
    """
    if algorithm == "mc-ssvi":
        return {}
    from ..update_rules import make_update_rule

    above = _above([node for node in nodes.values() if isinstance(node, _Link)])
    return {
        name: _FlatRule(make_update_rule(algorithm, gradient_learning_rate), nodes[name].dims[0])
        for name in glob
        if id(nodes[name]) in above and nodes[name]._kind.name == "gaussian"
    }
