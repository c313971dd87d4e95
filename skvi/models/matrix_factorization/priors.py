"""The priors of matrix factorization and the start of a fit.

The prior precision of each side's nodes (a Wishart matrix ``Lambda``, ARD's
Gamma precisions ``alpha`` or a fixed value), the priors of the global mean
and the noise precision, and the natural parameters a fit starts from.
:func:`precision_prior_natural`, :func:`initial_precision_natural` and
:func:`initial_node_natural` are the mathematics; :class:`PriorHooks` holds
the engine's hooks that read them (``_initialize_globals``,
``_prior_natural``).
"""

import numpy as np

from .nodes import SIDES

__all__ = [
    "PriorHooks",
    "initial_node_natural",
    "initial_precision_natural",
    "precision_prior_natural",
]


def precision_prior_natural(factor_prior, d, gamma, wishart):
    """Natural parameters of the prior of ``Lambda_u`` or ``alpha_u`` (and the items').

    ARD: ``Gamma(a0, rate=b0)`` per component.  Wishart: ``(-b0 I, a0 -
    1)``, the Wishart with ``df = d - 1 + 2 a0`` and scale ``I / (2 b0)``,
    which is ``Gamma(a0, rate=b0)`` when ``d = 1``.

    Parameters
    ----------
    factor_prior : {'wishart', 'ard'}
        The estimator's ``factor_prior``.
    d : int
        The nodes' dimension, ``n_components + 1``.
    gamma, wishart : tuple of (float, float)
        ``(a0, b0)`` of the Gamma priors and of the Wishart.

    Returns
    -------
    natural : tuple of ndarray

    Examples
    --------
    >>> from skvi.models.matrix_factorization.priors import precision_prior_natural
    >>> precision_prior_natural("ard", 2, (1.0, 2.0), (1.0, 0.5))
    (array([-2., -2.]), array([0., 0.]))
    """
    if factor_prior == "wishart":
        a0, b0 = wishart
        return (-b0 * np.eye(d), np.array(a0 - 1.0))
    a0, b0 = gamma
    return (np.full(d, -b0), np.full(d, a0 - 1.0))


def initial_precision_natural(factor_prior, d, gamma, wishart):
    """Initial ``q`` of ``Lambda_u`` or ``alpha_u`` (and the items'): mean ``a0 / b0``.

    For ARD that is the prior.  The Wishart prior's mean, ``(d - 1 + 2 a0)
    / (2 b0) I``, would start the nodes far tighter than ARD's; its
    initial ``q`` keeps the prior's degrees of freedom and has the same
    mean as ARD's, ``(a0 / b0) I`` of the Gamma priors' ``(a0, b0)`` (``I``
    with ``precision_prior=None``).

    Parameters
    ----------
    factor_prior : {'wishart', 'ard'}
        The estimator's ``factor_prior``.
    d : int
        The nodes' dimension, ``n_components + 1``.
    gamma, wishart : tuple of (float, float)
        ``(a0, b0)`` of the Gamma priors and of the Wishart.

    Returns
    -------
    natural : tuple of ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.priors import initial_precision_natural
    >>> eta1, eta2 = initial_precision_natural("wishart", 2, (1e-3, 1e-3), (1e-3, 0.05))
    >>> np.diag(eta1)  # -df / 2 times the inverse scale: a Wishart of mean I
    array([-0.501, -0.501])
    """
    eta1, eta2 = precision_prior_natural(factor_prior, d, gamma, wishart)
    if factor_prior != "wishart":
        return eta1, eta2
    a0, b0 = gamma
    df = 2.0 * float(eta2) + d + 1.0
    return -0.5 * df * (b0 / a0) * np.eye(d), eta2


def initial_node_natural(alpha, rng, rated, init_scale, covariance, tight=False):
    """Natural parameters of new nodes, one per entry of ``rated``.

    A node with ratings (``rated``) starts at random factor means of scale
    ``init_scale``, a node without at the prior mean (zero), where fitting
    would leave it; the bias starts at zero.  The precision is the prior's,
    ``alpha``, or, with ``tight``, ``init_scale**-2 I`` for the rated nodes:
    coordinate ascent's first sweep then sees partners' ``E[x x^T]`` of the
    scale of their random means instead of being swamped by the prior
    variance.  (Online steps and the gradient rules of the other
    likelihoods blend a node's start into its later value, so there the
    start must be the prior.)

    Parameters
    ----------
    alpha : ndarray of shape (d,) or (d, d)
        The expected prior precision of the side (a vector: its diagonal).
    rng : numpy.random.RandomState
        The source of the random means.
    rated : ndarray of bool, shape (n,)
        Whether each node has ratings.
    init_scale : float
        Standard deviation of the random means.
    covariance : {'full', 'diagonal'}
        The nodes' variational family.
    tight : bool, default=False
        Start the rated nodes at precision ``init_scale**-2 I``.

    Returns
    -------
    eta1, eta2 : ndarray
        Shapes (n, d) and (n, d, d), or (n, d) twice for ``'diagonal'``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.priors import initial_node_natural
    >>> eta1, eta2 = initial_node_natural(np.ones(3), np.random.RandomState(0),
    ...                                   np.array([False]), 0.1, "diagonal")
    >>> eta1, eta2
    (array([[0., 0., 0.]]), array([[-0.5, -0.5, -0.5]]))
    """
    n, d = rated.shape[0], alpha.shape[0]
    k = d - 1
    mean = np.zeros((n, d))
    mean[:, :k] = init_scale * rng.standard_normal((n, k))
    mean[~rated] = 0.0
    matrix = alpha if alpha.ndim == 2 else np.diag(alpha)
    prec = np.broadcast_to(matrix, (n, d, d)).copy()
    if tight and init_scale > 0:
        prec[rated] = init_scale**-2.0 * np.eye(d)
    if covariance == "full":
        return (prec @ mean[..., None])[..., 0], -0.5 * prec
    prec = np.diagonal(prec, axis1=-2, axis2=-1).copy()
    return prec * mean, -0.5 * prec


class PriorHooks:
    """The priors and the start of :class:`~skvi.SVIMatrixFactorization`'s factors.

    A part of the estimator: the engine's ``_initialize_globals`` and
    ``_prior_natural``, and the expected prior precision of each side that
    the node updates and predictions read.

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.priors import PriorHooks
    >>> issubclass(SVIMatrixFactorization, PriorHooks)
    True
    """

    def _precision_hypers(self):
        """``(a0, b0)`` of the Gamma priors and of the Wishart."""
        # A model fitted before the Wishart had a rate of its own used the
        # Gamma priors' (a0, b0).
        return self._hyper, getattr(self, "_wishart_hyper", self._hyper)

    def _prior_precision(self, name, params=None):
        """E[prior precision] of side ``name``'s nodes (factors then bias).

        A vector (the diagonal) for ``factor_prior='ard'`` or a fixed
        ``factor_precision``, a matrix for ``'wishart'``.
        """
        if self.factor_precision is not None:
            return np.full(self._dim, float(self.factor_precision))
        params = self.natural_params_ if params is None else params
        factor = params.get(SIDES[name].precision)
        if factor is None:
            initial = initial_precision_natural(
                self.factor_prior, self._dim, *self._precision_hypers()
            )
            factor = self._factor_of(SIDES[name].precision, initial)
        return factor.cached("mean", lambda f: f.distribution.mean())

    def _initial_nodes(self, name, n, rng, rated, tight=False):
        """Natural parameters of ``n`` new nodes of side ``name`` (:func:`initial_node_natural`)."""
        alpha = self._prior_precision(name, getattr(self, "natural_params_", {}))
        return initial_node_natural(alpha, rng, rated, self.init_scale, self.covariance, tight)

    def _initialize_globals(self, data, random_state, summary):
        self._adopt_data_summary(summary)
        params = {}
        # The tight start helps coordinate ascent, whose first sweep replaces
        # every node; the gradient rules of the other likelihoods step away
        # from the start instead (measured worse on the binary MovieLens task).
        tight = (
            self._strategy.closed_form
            and self.learning_method == "batch"
            and not self._in_partial_fit
        )
        for name in ("users", "items"):
            counts = getattr(self, f"{SIDES[name].prefix}_counts_")
            params[name] = self._initial_nodes(
                name, counts.shape[0], random_state, counts > 0, tight
            )
        if tight:
            params = self._strategy.start_nodes(self, data, params, random_state)
        params.update(
            self._strategy.initial_scalars(self, self._rating_moments, data, random_state)
        )
        if self.factor_precision is None:
            for name in ("users", "items"):
                params[SIDES[name].precision] = initial_precision_natural(
                    self.factor_prior, self._dim, *self._precision_hypers()
                )
        return params

    def _prior_natural(self):
        a0, b0 = self._hyper
        b = self.mean_precision_prior
        prior = {"mean": (np.array(b * self.mean_prior), np.array(-0.5 * b))}
        prior["noise"] = (np.array(-b0), np.array(a0 - 1.0))
        prior["user_precision"] = precision_prior_natural(
            self.factor_prior, self._dim, *self._precision_hypers()
        )
        prior["item_precision"] = prior["user_precision"]
        return prior
