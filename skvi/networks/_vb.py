"""Variational message passing over a declared network: BayesPy's ``VB`` object."""

import logging
import numbers
import warnings

import numpy as np

from ._node import Node
from ._stochastic import Stochastic
from ._plates import NetworkError

__all__ = ["VB"]

_LOG = logging.getLogger("skvi")
#: A sweep that lowers the bound by more than this share of it is warned
#: about: below it, the sums of the nodes' terms differ by rounding only.
_ROUNDING = 1e-9


def _check_sweeps(repeat, tol):
    """``update``'s ``repeat`` and ``tol``, refused when the sweeps could not stop or mean nothing."""
    if repeat is not None and (
        isinstance(repeat, bool) or not isinstance(repeat, numbers.Integral) or repeat < 1
    ):
        raise ValueError(f"repeat must be a positive integer or None, got {repeat!r}")
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise ValueError(f"tol must be a number, got {tol!r}") from None
    if np.isnan(tol):
        raise ValueError("tol must be a number, got nan")
    if repeat is None and not tol >= 0:
        raise ValueError(
            f"tol={tol} with repeat=None would never stop: give a tol of at least 0 "
            "(0 stops at an exact fixed point) or a number of sweeps"
        )


def check_acyclic(nodes):
    """Raise a NetworkError naming a node that is its own ancestor.

    A depth-first search with an explicit stack: a network may be deeper
    than Python's recursion limit.
    """
    state = {}
    for start in nodes:
        if state.get(id(start)) == 2:
            continue
        state[id(start)] = 1
        path, todo = [start], [iter(start.parents)]
        while todo:
            for p in todo[-1]:
                mark = state.get(id(p))
                if mark == 1:
                    cycle = " -> ".join(n.describe() for n in path + [p])
                    raise NetworkError(
                        f"{p.describe()}: the network has a cycle ({cycle}); a "
                        "Bayesian network must be a directed acyclic graph"
                    )
                if mark is None:
                    state[id(p)] = 1
                    path.append(p)
                    todo.append(iter(p.parents))
                    break
            else:
                state[id(path.pop())] = 2
                todo.pop()


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
        self.callback = None
        #: BayesPy's switch for SVI written by hand, whose bound may fall:
        #: True silences the warning of a falling bound.
        self.ignore_bound_checks = False

    def __getitem__(self, name):
        for n in self.model:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in this VB")

    def update(self, *nodes, repeat=1, plot=False, tol=None, verbose=False, tqdm=None):
        """Run ``repeat`` sweeps of VMP updates, stopping early at the tolerance.

        After each sweep the bound is computed, the callback (if set) is
        called, and a bound that fell beyond rounding is warned about (a
        message containing "lower bound decreased", as BayesPy's): a VMP
        sweep never lowers the bound, so a fall says that a node's update
        and its bound term disagree.  A bound that is not finite stops the
        sweeps with a warning.

        Parameters
        ----------
        *nodes : Stochastic or str
            The nodes to update (or their names, as BayesPy's), in order
            (default: all, in the order given to :class:`VB`).
        repeat : int or None, default=1
            The most sweeps (None: until converged).
        plot : bool, default=False
            BayesPy's keyword, taken so that its code runs; nothing is drawn
            (:func:`skvi.plotting.plot_node` draws a node's posterior).
        tol : float or None, default=None
            Stop when the relative rise of the bound,
            ``(L1 - L0) / mean(|L0|, |L1|)``, is at most ``tol`` (None: the
            object's ``tol``); ``0`` stops at an exact fixed point, and with a
            finite ``repeat``, ``-np.inf`` runs every sweep.  With
            ``repeat=None`` it must be a number of at least 0.
        verbose : bool, default=False
            Log the bound after each sweep to the ``"skvi"`` logger (INFO),
            as every estimator's ``verbose=2``.
        tqdm : callable or None, default=None
            BayesPy's progress bar: a factory such as ``tqdm.tqdm``, called
            with ``total=repeat`` and updated once per sweep.

        Raises
        ------
        ValueError
            ``repeat`` is not None or a positive integer, ``tol`` is NaN, or
            ``tol`` is negative with ``repeat=None`` (the sweeps would never
            stop).

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import VB, Gamma, GaussianARD
        >>> y = GaussianARD(GaussianARD(0, 1e-6), Gamma(1e-3, 1e-3), plates=(20,))
        >>> _ = y.observe(np.random.RandomState(0).normal(3.0, 2.0, 20))
        >>> Q = VB(y, *y.parents)
        >>> Q.update(repeat=None, tol=0.0)   # to an exact fixed point
        >>> Q.has_converged()
        True
        """
        nodes = self._nodes(nodes)
        tol = self.tol if tol is None else tol
        _check_sweeps(repeat, tol)
        bar = None if tqdm is None else tqdm(total=repeat)
        self.converged = False
        history = list(self.L)
        i = 0
        try:
            while repeat is None or i < repeat:
                for node in nodes:
                    node.update()
                L = self.compute_lowerbound()
                history.append(L)
                i += 1
                self.iter += 1
                if bar is not None:
                    bar.update()
                if self.callback is not None:
                    self.callback()
                if verbose:
                    _LOG.info("VB iteration %d: lower bound %.10g", self.iter, L)
                if not np.isfinite(L):
                    if self.ignore_bound_checks:
                        break
                    warnings.warn(
                        f"VB.update: the lower bound is {L} after sweep {self.iter}; the "
                        "sweeps stop (a node's parameters or data are not finite, or out "
                        "of its support).",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    break
                if len(history) > 1 and np.isfinite(history[-2]):
                    if self._converged(history[-2], L, tol):
                        self.converged = True
                        break
        finally:
            self.L = np.asarray(history)
            if bar is not None and hasattr(bar, "close"):
                bar.close()

    def _nodes(self, nodes):
        """The nodes given (nodes or their names, BayesPy's), or every node of the model."""
        return tuple(self[n] if isinstance(n, str) else n for n in nodes) or tuple(self.model)

    def gradient_step(self, *nodes, scale=1.0):
        """One natural-gradient step of each node's ``q`` (BayesPy's, for SVI written by hand).

        The natural parameters move ``scale`` of the way to the VMP update's:
        ``phi <- phi + scale (phi_vmp - phi)``, with the children's current
        messages (a minibatch's, counted by its plates multiplier).

        Parameters
        ----------
        *nodes : Stochastic or str
            The nodes (or their names); default: every latent node.
        scale : float, default=1.0
            The step size, in (0, 1].

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import VB, Gamma, GaussianARD
        >>> mu = GaussianARD(0.0, 1.0, name="mu")
        >>> y = GaussianARD(mu, 1.0, plates=(4,))
        >>> _ = y.observe([1.0, 2.0, 3.0, 2.0])
        >>> Q = VB(y, mu)
        >>> Q.gradient_step("mu", scale=0.5)
        >>> round(float(mu.get_moments()[0]), 4)   # precision 1 -> 3, precision x mean 0 -> 4
        1.3333
        """
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise ValueError(f"scale must be a number, got {scale!r}") from None
        if not 0.0 < scale <= 1.0:
            raise ValueError(f"scale must be in (0, 1], got {scale}")
        for node in self._nodes(nodes):
            if not isinstance(node, Stochastic) or node.observed:
                continue
            old = node.phi
            node.update()
            if old is not None and scale != 1.0:
                node._set_phi([a + scale * (b - a) for a, b in zip(old, node.phi)])

    def _converged(self, L0, L1, tol):
        """The stopping test of a sweep from ``L0`` to ``L1``; warns when the bound fell."""
        scale = 0.5 * (abs(L0) + abs(L1))
        if L0 - L1 > _ROUNDING * max(scale, 1.0) and not self.ignore_bound_checks:
            warnings.warn(
                f"VB.update: the lower bound decreased by {L0 - L1:.6g} (from {L0:.10g} to "
                f"{L1:.10g}) in sweep {self.iter}: a node's update disagrees with its bound "
                "term, or the numbers lost precision.",
                RuntimeWarning,
                stacklevel=3,
            )
        return L1 - L0 <= tol * scale

    def set_callback(self, callback):
        """Call ``callback()`` once after every sweep of :meth:`update` (BayesPy's).

        Parameters
        ----------
        callback : callable or None
            Called with no argument; None removes it.

        Examples
        --------
        >>> from skvi.networks import VB, Gamma, GaussianARD
        >>> y = GaussianARD(GaussianARD(0, 1e-6), Gamma(1e-3, 1e-3), plates=(5,))
        >>> _ = y.observe([1.0, 2.0, 3.0, 2.0, 1.0])
        >>> Q = VB(y, *y.parents)
        >>> sweeps = []
        >>> Q.set_callback(lambda: sweeps.append(Q.iter))
        >>> Q.update(repeat=3, tol=-float("inf"))
        >>> sweeps
        [1, 2, 3]
        """
        if callback is not None and not callable(callback):
            raise TypeError(f"set_callback takes a callable or None, got {callback!r}")
        self.callback = callback

    def has_converged(self, tol=None):
        """Whether the last :meth:`update` stopped by its tolerance (BayesPy's).

        Parameters
        ----------
        tol : None
            BayesPy's keyword, ignored as BayesPy ignores it.

        Returns
        -------
        bool
            True when the last ``update`` stopped because a sweep raised
            the bound by at most its tolerance.

        Examples
        --------
        >>> from skvi.networks import VB, GaussianARD
        >>> x = GaussianARD(0, 1)
        >>> Q = VB(x)
        >>> Q.update(repeat=2)
        >>> Q.has_converged()
        True
        """
        return self.converged

    def compute_lowerbound_terms(self, *nodes):
        """Each node's term of the lower bound, a dict node -> float (BayesPy's).

        Parameters
        ----------
        *nodes : Node
            The nodes (default: every node of the model).

        Returns
        -------
        dict
            Node to its term; over every node they sum to
            :meth:`compute_lowerbound`.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.networks import VB, Gamma, GaussianARD
        >>> y = GaussianARD(GaussianARD(0, 1e-6), Gamma(1e-3, 1e-3), plates=(5,))
        >>> _ = y.observe([1.0, 2.0, 3.0, 2.0, 1.0])
        >>> Q = VB(y, *y.parents)
        >>> Q.update(repeat=10)
        >>> terms = Q.compute_lowerbound_terms()
        >>> bool(np.isclose(sum(terms.values()), Q.compute_lowerbound()))
        True
        """
        nodes = nodes or tuple(self.model)
        return {
            n: float(n.lower_bound_contribution()) if isinstance(n, Stochastic) else 0.0
            for n in nodes
        }

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
