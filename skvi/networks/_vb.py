"""Variational message passing over a declared network: BayesPy's ``VB`` object."""

import numpy as np

from ._node import Node
from ._stochastic import Stochastic
from ._plates import NetworkError

__all__ = ["VB"]


def check_acyclic(nodes):
    """Raise a NetworkError naming a node that is its own ancestor."""
    state = {}

    def visit(node, path):
        mark = state.get(id(node))
        if mark == 1:
            cycle = " -> ".join(n.describe() for n in path + [node])
            raise NetworkError(
                f"{node.describe()}: the network has a cycle ({cycle}); a "
                "Bayesian network must be a directed acyclic graph"
            )
        if mark == 2:
            return
        state[id(node)] = 1
        for p in node.parents:
            visit(p, path + [node])
        state[id(node)] = 2

    for n in nodes:
        visit(n, [])


class VB:
    """Variational Bayes by message passing over the given nodes (BayesPy's ``VB``).

    ``update`` sweeps the nodes in the order given (observed ones are
    skipped), each update the exact coordinate-ascent step of its factor,
    and computes the lower bound after each sweep; the bound is the sum of
    every node's :meth:`~skvi.networks.Stochastic.lower_bound_contribution`,
    with every constant, the same number BayesPy computes.

    Parameters
    ----------
    *nodes : Stochastic
        The nodes of the model (their bound terms are summed; the latent
        ones are updated).
    tol : float, default=1e-5
        Default relative tolerance of :meth:`update` (BayesPy's).

    Attributes
    ----------
    L : ndarray
        The lower bound after each sweep so far.
    iter : int
        Sweeps done.
    converged : bool
        Whether the last :meth:`update` stopped by its tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.networks import VB, Gamma, GaussianARD
    >>> np.random.seed(1)
    >>> data = np.random.normal(5, 10, 10)
    >>> mu = GaussianARD(0, 1e-6, name="mu")
    >>> tau = Gamma(1e-6, 1e-6, name="tau")
    >>> y = GaussianARD(mu, tau, plates=(10,), name="y")
    >>> _ = y.observe(data)
    >>> Q = VB(y, mu, tau)
    >>> Q.update(repeat=100)
    >>> print(np.round(Q["mu"].get_moments()[0], 3), Q.converged)
    4.029 True
    """

    def __init__(self, *nodes, tol=1e-5):
        for n in nodes:
            if not isinstance(n, Node):
                raise NetworkError(f"VB takes nodes, got {n!r}")
        check_acyclic(nodes)
        self.model = list(nodes)
        self.tol = tol
        self.L = np.empty(0)
        self.iter = 0
        self.converged = False

    def __getitem__(self, name):
        for n in self.model:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in this VB")

    def update(self, *nodes, repeat=1, plot=False, tol=None, verbose=False):
        """Run ``repeat`` sweeps of VMP updates, stopping early at the tolerance.

        Parameters
        ----------
        *nodes : Stochastic
            The nodes to update, in order (default: all, in the order given
            to :class:`VB`).
        repeat : int or None, default=1
            The most sweeps (None: until converged).
        plot : bool, default=False
            BayesPy's keyword, taken so that its code runs; nothing is drawn.
        tol : float or None, default=None
            Stop when the relative rise of the bound,
            ``(L1 - L0) / mean(|L0|, |L1|)``, falls below it (None: the
            object's ``tol``).
        verbose : bool, default=False
            Print the bound after each sweep.
        """
        nodes = nodes or tuple(self.model)
        tol = self.tol if tol is None else tol
        self.converged = False
        history = list(self.L)
        i = 0
        while repeat is None or i < repeat:
            for node in nodes:
                node.update()
            L = self.compute_lowerbound()
            history.append(L)
            i += 1
            self.iter += 1
            if verbose:
                print(f"Iteration {self.iter}: loglike={L:e}")
            if len(history) > 1:
                L0, L1 = history[-2], history[-1]
                div = 0.5 * (abs(L0) + abs(L1))
                if (L1 - L0) / div < tol:
                    self.converged = True
                    break
        self.L = np.asarray(history)

    def compute_lowerbound(self, ignore_masked=True):
        """The lower bound on the log evidence, with every constant.

        Parameters
        ----------
        ignore_masked : bool, default=True
            BayesPy's keyword: masked elements add nothing to the bound.
            Only True is supported (they are integrated out).

        Returns
        -------
        float
            The sum of every node's term.
        """
        if not ignore_masked:
            raise NetworkError(
                "compute_lowerbound(ignore_masked=False) is not supported: "
                "masked elements are integrated out"
            )
        return float(
            sum(n.lower_bound_contribution() for n in self.model if isinstance(n, Stochastic))
        )
