"""Variational message passing over a declared network: BayesPy's ``VB`` object."""

import logging
import numbers
import warnings

import numpy as np

from . import _extrapolate, _rotate
from ._links import links_below
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


def _check_accelerate(accelerate):
    """``accelerate``, refused unless one of its values."""
    if accelerate is False or accelerate in ("rotate", "extrapolate"):
        return accelerate
    raise ValueError(f"accelerate must be 'rotate', 'extrapolate' or False, got {accelerate!r}")


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


class _Sweeps:
    """The bookkeeping of one :meth:`VB.update`: its sweeps, bounds, callback, log and bar."""

    def __init__(self, vb, nodes, repeat, bar, verbose, rotations=()):
        self.vb, self.nodes, self.repeat = vb, nodes, repeat
        self.rotations = rotations
        self.bar, self.verbose = bar, verbose
        self.history = list(vb.L)
        self.done = 0

    def left(self):
        """Sweeps left to run (infinite without a ``repeat``)."""
        return np.inf if self.repeat is None else self.repeat - self.done

    def sweep(self, record=True):
        """Update every node once and return the bound (recorded unless ``record`` is False)."""
        for node in self.nodes:
            node.update()
        for X, C in self.rotations:
            _rotate.rotate(X, C)
        L = self.vb.compute_lowerbound()
        if record:
            self.record(L)
        return L

    def record(self, L):
        """Count a sweep that ended at bound ``L``: history, callback, log, bar, a fall warned."""
        vb = self.vb
        # A link's message makes an update a Newton-like fixed-point step,
        # which may lower the bound: not a disagreement to warn about.
        checked = not vb.ignore_bound_checks and not getattr(vb, "_nonconjugate", False)
        if checked and self.history and np.isfinite(self.history[-1]) and np.isfinite(L):
            _warn_fall(self.history[-1], L, vb.iter + 1)
        self.history.append(L)
        self.done += 1
        vb.iter += 1
        if self.bar is not None:
            self.bar.update()
        if vb.callback is not None:
            vb.callback()
        if self.verbose:
            _LOG.info("VB iteration %d: lower bound %.10g", vb.iter, L)

    def finite(self, L):
        """Whether the bound ``L`` is finite; warns that the sweeps stop when it is not."""
        if np.isfinite(L):
            return True
        if self.vb.ignore_bound_checks:
            return False
        warnings.warn(
            f"VB.update: the lower bound is {L} after sweep {self.vb.iter}; the "
            "sweeps stop (a node's parameters or data are not finite, or out "
            "of its support).",
            RuntimeWarning,
            stacklevel=3,
        )
        return False


def _warn_fall(L0, L1, sweep):
    """Warn when a sweep lowered the bound from ``L0`` to ``L1`` beyond rounding."""
    scale = 0.5 * (abs(L0) + abs(L1))
    if L0 - L1 > _ROUNDING * max(scale, 1.0):
        warnings.warn(
            f"VB.update: the lower bound decreased by {L0 - L1:.6g} (from {L0:.10g} to "
            f"{L1:.10g}) in sweep {sweep}: a node's update disagrees with its bound "
            "term, or the numbers lost precision.",
            RuntimeWarning,
            stacklevel=5,
        )


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
    accelerate : {'rotate', 'extrapolate'} or False, default='rotate'
        How :meth:`update` speeds up the sweeps; each keeps the bound from
        falling.  ``'rotate'``: after each sweep, every factor model
        ``SumMultiply('d,d->', X, C)`` of zero-mean :class:`GaussianARD`
        vectors with per-component precisions (BayesPy's PCA) has its
        latent space rotated to the bound's maximum, ``x -> R x`` and
        ``c -> R^{-T} c`` (Luttinen and Ilin's parameter expansion, what
        BayesPy's ``RotateGaussianARD`` and ``RotationOptimizer`` do when
        set as the callback); networks without one sweep plainly.
        ``'extrapolate'``: passes of two sweeps, a jump along them and a
        third sweep, kept when it raises the bound (Varadhan and Roland's
        SQUAREM, as the engine's batch fits), for any network.  ``False``:
        plain sweeps, BayesPy's without a callback, sweep for sweep.

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

    #: The default of ``accelerate`` (also that of a VB unpickled from before it).
    accelerate = "rotate"
    #: BayesPy's switch for SVI written by hand, whose bound may fall: True
    #: silences the warnings of a falling or non-finite bound.
    ignore_bound_checks = False

    def __init__(self, *nodes, tol=1e-5, accelerate="rotate"):
        for n in nodes:
            if not isinstance(n, Node):
                raise NetworkError(f"VB takes nodes, got {n!r}")
        check_acyclic(nodes)
        self.model = list(nodes)
        self.tol = tol
        self.accelerate = _check_accelerate(accelerate)
        self.L = np.empty(0)
        self.iter = 0
        self.converged = False
        self.callback = None
        self.ignore_bound_checks = False

    def __getitem__(self, name):
        for n in self.model:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in this VB")

    def update(
        self, *nodes, repeat=1, plot=False, tol=None, verbose=False, tqdm=None, accelerate=None
    ):
        """Run ``repeat`` sweeps of VMP updates, stopping early at the tolerance.

        After each sweep the bound is computed, the callback (if set) is
        called, and a bound that fell beyond rounding is warned about (a
        message containing "lower bound decreased", as BayesPy's): a VMP
        sweep never lowers the bound, so a fall says that a node's update
        and its bound term disagree.  A bound that is not finite stops the
        sweeps with a warning.  Above a link (:class:`~skvi.networks.Logistic`,
        :class:`~skvi.networks.Exp`, :class:`~skvi.networks.Softmax`) an
        update is a Monte Carlo structured SVI step, a full Newton-like
        fixed-point step that may lower the bound: a fall is not warned
        about, and the sweeps stop when the bound changes by at most the
        tolerance either way (:class:`~skvi.networks.SVIBayesianNetwork`
        damps those steps so that the bound never falls).

        Parameters
        ----------
        *nodes : Stochastic or str
            The nodes to update (or their names, as BayesPy's), in order
            (default: all, in the order given to :class:`VB`).
        repeat : int or None, default=1
            The most sweeps (None: until converged).
        plot : bool, default=False
            BayesPy's keyword, taken so that its code runs; nothing is drawn
            (:func:`skvi.plotting.plot_pdf` and :func:`~skvi.plotting.plot_hinton` draw a node's posterior).
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
        accelerate : {'rotate', 'extrapolate'}, False or None, default=None
            How to speed up the sweeps (None: the object's ``accelerate``).
            Every sweep counts in ``repeat``, ``iter`` and ``L`` (an
            extrapolated pass is three); with ``'extrapolate'`` the
            tolerance applies to the rise over a whole pass, and a pass's
            last entry in ``L`` is the bound of the state it keeps.

        Raises
        ------
        ValueError
            ``repeat`` is not None or a positive integer, ``tol`` is NaN, or
            ``tol`` is negative with ``repeat=None`` (the sweeps would never
            stop), or ``accelerate`` is none of its values.

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
        accelerate = _check_accelerate(self.accelerate if accelerate is None else accelerate)
        bar = None if tqdm is None else tqdm(total=repeat)
        self.converged = False
        rotations = _rotate.find_rotations(nodes) if accelerate == "rotate" else ()
        extrapolate = accelerate == "extrapolate"
        self._nonconjugate = links_below(nodes)
        run = _Sweeps(self, nodes, repeat, bar, verbose, rotations)
        try:
            while run.left():
                if extrapolate and run.left() >= 3 and run.history:
                    stop = self._extrapolated_pass(run, tol)
                else:
                    L = run.sweep()
                    stop = not run.finite(L) or self._stop(run.history, -2, tol)
                if stop:
                    break
        finally:
            self.L = np.asarray(run.history)
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

    def _stop(self, history, start, tol):
        """Whether the sweeps since ``history[start]`` rose by at most the tolerance (they stop)."""
        if (start < 0 and len(history) < -start) or not np.isfinite(history[start]):
            return False
        L0, L1 = history[start], history[-1]
        if getattr(self, "_nonconjugate", False):
            # Non-conjugate steps may lower the bound: they converge when it
            # changes by at most the tolerance either way.
            L0, L1 = L1 - abs(L1 - L0), L1
        if self._converged(L0, L1, tol):
            self.converged = True
            return True
        return False

    def _extrapolated_pass(self, run, tol):
        """Two sweeps, a jump along them and one more sweep (see ``_extrapolate``); True: stop.

        The bound of the pass's last sweep is that of the state kept: the
        jump's, or the second sweep's again when the jump lowered it.  The
        pass converges when it raised the bound by at most ``tol`` from
        where it started: its plain sweeps alone may each rise by less on a
        ridge that the jump climbs.
        """
        start = len(run.history) - 1
        nodes = _extrapolate.latent(run.nodes)
        s0 = _extrapolate.snapshot(nodes)
        L = run.sweep()
        if not run.finite(L):
            return True
        s1 = _extrapolate.snapshot(nodes)
        L2 = run.sweep()
        if not run.finite(L2):
            return True
        s2 = _extrapolate.snapshot(nodes)
        if s0 is None or s1 is None or s2 is None or not _extrapolate.jump(nodes, s0, s1, s2):
            return self._stop(run.history, start, tol)
        L3 = run.sweep(record=False)
        if not L3 >= L2:
            _extrapolate.restore(nodes, s2)
            L3 = L2
        run.record(L3)
        return self._stop(run.history, start, tol)

    @staticmethod
    def _converged(L0, L1, tol):
        """The stopping test of sweeps from bound ``L0`` to ``L1``."""
        return L1 - L0 <= tol * 0.5 * (abs(L0) + abs(L1))

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
