"""The node of a Bayesian network: its plates, the kind of its moments, parents and children.

Every stochastic node ``x`` with parents ``theta`` has a density of the form

    log p(x | theta) = phi(theta) . u(x) + g(theta) + f(x)

with natural parameters ``phi``, sufficient statistics (moments) ``u``, log
normaliser ``g`` and base measure ``f``.  Variational message passing
(Winn and Bishop; Langseth and Nielsen, "Variational inference: scalable
solutions") keeps ``q(x)`` in the same family: its natural parameters are
the expected ``phi`` from the parents' moments plus one message from each
child, the child's expected log density as a function of ``u(x)``.  Every
message a node sends is linear in its own moments and a count ``n`` (the
weight of each element), so that a mixture can send summed, weighted
statistics instead of one message per row.

Arrays carry plates first and the variable's own axes last; plates
broadcast right-aligned, as in BayesPy.
"""

import copy
import math
import threading

import numpy as np

from ._plates import NetworkError, plate_total, sum_to_plates

# Counters that let caches know whether they still hold: ``_CLOCK[0]`` counts
# the nodes made (a graph's shape changes only when a node is made and linked
# to its parents), ``_CLOCK[1]`` the times a stochastic node's moments were
# set (a deterministic node's moments hold while it has not moved).
_CLOCK = [0, 0]


def _post_order(start, neighbours):
    """The nodes reachable from ``start`` by ``neighbours``, each after those it reaches.

    An explicit stack rather than recursion: a network may be deeper than
    Python's recursion limit (a chain of thousands of nodes).
    """
    order, seen = [], {id(start)}
    stack = [(start, iter(neighbours(start)))]
    while stack:
        node, todo = stack[-1]
        for nxt in todo:
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, iter(neighbours(nxt))))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def _ready_parents(node):
    """Compute, parents first, the moments that reading ``node.u`` would compute above it.

    A node's moments may be computed when first read (a stochastic node's
    prior, a sum of products): reading them from the top of the graph down
    keeps each read one level deep.
    """
    order = _post_order(node, lambda n: [p for p in n._sources() if p._lazy()])
    for n in order[:-1]:
        n.u


#: The children's summed messages to deterministic nodes, while one message
#: through them is computed (keyed by the node's id), per thread: networks
#: of a threaded scheduler's tasks pass messages at the same time.
_INCOMING = threading.local()


def _children_total(node):
    """The messages of ``node``'s children summed (None without children), without recursion.

    A deterministic node passes its children's messages on to its parents;
    below a chain of them, the messages are summed from the bottom up.
    """
    key = id(node)
    cache = _INCOMING.__dict__.setdefault("totals", {})
    if key in cache:
        return cache[key]
    owner = not cache
    try:
        below = _post_order(
            node,
            lambda n: [c for c, _ in n.children if c._deterministic and id(c) not in cache],
        )
        for n in below:
            total = None
            for child, index in n.children:
                m = child._message_to_parent(index)
                total = m if total is None else [a + b for a, b in zip(total, m)]
            cache[id(n)] = total
        return cache[key]
    finally:
        if owner:
            cache.clear()


class _Ref(int):
    """A node's place in a flattened graph (see :class:`_Graph`)."""


def _swap(value, swap):
    """``value`` with every node in it (or in its lists, tuples and dicts) replaced by ``swap(node)``."""
    if isinstance(value, (Node, _Ref)):
        return swap(value)
    kind = type(value)
    if kind is list:
        return [_swap(v, swap) for v in value]
    if kind is tuple:
        return tuple(_swap(v, swap) for v in value)
    if kind is dict:
        return {k: _swap(v, swap) for k, v in value.items()}
    return value


def _neighbours(node):
    """Every node that ``node``'s state refers to (parents, children, a mixture's family)."""
    found = []
    _swap(node.__getstate__(), lambda n: found.append(n) or n)
    return found


class _Graph:
    """The connected nodes of a network, which pickle and copy as one flat object.

    Each node's state holds its parents and children; pickling it as is
    would recurse once per node of a chain.  Flattened, the links are
    indices into the list of nodes, and a node pickles as (its graph, its
    index): the graph is written once, however many of its nodes are
    pickled together, and they come back as one graph.
    """

    def __init__(self, nodes):
        self.nodes = list(nodes)
        self.index = {id(n): i for i, n in enumerate(self.nodes)}

    @classmethod
    def of(cls, node):
        """The graph of ``node``, shared by every node of it while no node is made."""
        cached = node.__dict__.get("_graph")
        if cached is not None and cached[1] == _CLOCK[0]:
            return cached[0]
        graph = cls([node])
        graph._grow()
        return graph

    def _grow(self):
        """Take in every node linked to the graph's nodes, and share the graph with them."""
        i = 0
        while i < len(self.nodes):
            for n in _neighbours(self.nodes[i]):
                if id(n) not in self.index:
                    self.index[id(n)] = len(self.nodes)
                    self.nodes.append(n)
            i += 1
        for n in self.nodes:
            n.__dict__["_graph"] = (self, _CLOCK[0])

    def _flat(self):
        """``(class, state)`` of every node, nodes replaced by their indices."""
        self._grow()
        return [
            (type(n), _swap(n.__getstate__(), lambda m: _Ref(self.index[id(m)])))
            for n in self.nodes
        ]

    def __reduce__(self):
        return (_rebuild_graph, (self._flat(),))

    def __deepcopy__(self, memo):
        return _rebuild_graph(copy.deepcopy(self._flat(), memo))


def _rebuild_graph(flat):
    """The :class:`_Graph` of a flattened one."""
    nodes = [cls.__new__(cls) for cls, _ in flat]
    for node, (_, state) in zip(nodes, flat):
        node.__dict__.update(_swap(state, lambda i: nodes[i]))
    graph = _Graph(nodes)
    for n in nodes:
        n.__dict__["_graph"] = (graph, _CLOCK[0])
    return graph


def _node_of(graph, index):
    """Node ``index`` of ``graph`` (a node's unpickling)."""
    return graph.nodes[index]


def _diag(a, ndim):
    """Diagonal matrices over the last ``ndim`` axes: ``plates + shape -> plates + shape + shape``."""
    if ndim == 0:
        return a
    shape = a.shape[a.ndim - ndim :]
    plates = a.shape[: a.ndim - ndim]
    D = int(math.prod(shape))
    flat = a.reshape(plates + (D,))
    out = np.zeros(plates + (D, D))
    idx = np.arange(D)
    out[..., idx, idx] = flat
    return out.reshape(plates + shape + shape)


def _get_diag(a, ndim):
    """The diagonal of ``plates + shape + shape`` matrices: ``plates + shape``."""
    if ndim == 0:
        return a
    shape = a.shape[a.ndim - ndim :]
    plates = a.shape[: a.ndim - 2 * ndim]
    D = int(math.prod(shape))
    flat = a.reshape(plates + (D, D))
    return np.diagonal(flat, axis1=-2, axis2=-1).reshape(plates + shape)


def _expand_n(n, ndim):
    """A count per plate element, with ``ndim`` trailing axes for the variable."""
    n = np.asarray(n, dtype=np.float64)
    return n.reshape(n.shape + (1,) * ndim)


class Node:
    """A node of a Bayesian network: plates, the kind of its moments, its parents and children.

    Not used directly: see :class:`Stochastic`'s families and
    :class:`Constant`.  ``plates`` are the node's replications (the axes
    before the variable's own), ``dims`` the shape of each moment array.

    Parameters
    ----------
    kind : MomentsKind
        The kind of moments the node hands its children.
    plates : tuple of int
        The node's plates.
    name : str
        A name for messages and for :attr:`skvi.networks.VB` look-ups.

    Examples
    --------
    >>> from skvi.networks import Gamma
    >>> tau = Gamma(2.0, 1.0, plates=(3,), name="tau")
    >>> tau.plates, tau.dims
    ((3,), ((), ()))
    """

    #: Whether the node computes its moments from its parents' (and passes
    #: its children's messages on): a sum of products, a view of axes.
    _deterministic = True

    def __init__(self, kind, plates, name=""):
        _CLOCK[0] += 1
        self._kind = kind
        self.plates = tuple(int(p) for p in plates)
        self.name = name
        self.parents = []
        self.children = []

    @property
    def dims(self):
        """The variable shape of each moment array."""
        return self._kind.dims

    def describe(self):
        """How the node is named in messages.

        Returns
        -------
        str
            Its class and its name.
        """
        label = f"'{self.name}'" if self.name else "(unnamed)"
        return f"{type(self).__name__} {label}"

    _row_weight = None
    #: 1 at the observed elements and 0 elsewhere (plates-shaped) after
    #: ``observe(x, mask)`` with a mask that leaves some out; None otherwise.
    _mask = None

    def _weights_to(self, parent):
        """The weights (plates-shaped) of the elements' messages to ``parent``, or None for ones.

        Row weights when the message sums over weighted rows (a parent without
        them), times the observation mask: an element left out sends nothing.
        """
        w = self._row_weight
        if w is not None and parent._row_weight is not None:
            w = None
        m = self._mask
        if m is None:
            return w
        return m if w is None else w * m

    def _mask_to_parent(self, index):
        """The elements of parent ``index`` that this node's counted elements use (bool), or None for all."""
        m = self._mask
        if m is None:
            return None
        parent = self.parents[index]
        full = self._plates_to_parent(index)
        m = np.broadcast_to(m.reshape(m.shape + (1,) * (len(full) - m.ndim)), full)
        return sum_to_plates(m, parent.plates, 0, full) > 0

    def _plates_to_parent(self, index):
        """The plates of this node as parent ``index`` sees them (a message's full plates)."""
        return self.plates

    def _total(self, a):
        """``a`` (broadcastable to the plates) summed over the plates, rows weighted, masked."""
        w, m = self._row_weight, self._mask
        if w is None and m is None:
            return plate_total(a, self.plates)
        weight = m if w is None else (w if m is None else w * m)
        return float(np.sum(np.broadcast_to(a, self.plates) * weight))

    def observe(self, x):
        """Observing is for stochastic nodes: a fixed or deterministic node raises.

        Parameters
        ----------
        x : array-like
            The data.
        """
        raise NetworkError(
            f"{self.describe()}: only a stochastic node can be observed; this "
            "one is fixed or computed from its parents"
        )

    def get_moments(self):
        """The node's current moments ``E_q[u(x)]``, BayesPy's convention (a list of arrays).

        Returns
        -------
        list of ndarray
            One array per moment, of shape ``plates + dims[i]``.
        """
        return [np.broadcast_to(u, self.plates + d) for u, d in zip(self.u, self.dims)]

    def _lazy(self):
        """Whether reading the moments may compute them from the parents' (see ``_ready_parents``)."""
        return True

    def _sources(self):
        """The nodes whose moments this node's are computed from: its parents."""
        return self.parents

    def _view_as(self, name):
        """The node as a parent that needs moments of kind ``name``: itself, or a view.

        A Markov chain gives a view of its states one at a time to a child
        that takes a state's moments (BayesPy's moment converters).
        """
        return self

    def __repr__(self):
        return f"<{self.describe()} plates={self.plates}>"

    # Pickling and copying go through the node's whole graph at once (see
    # :class:`_Graph`), so that neither recurses along a deep network.
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_graph", None)
        return state

    def __reduce_ex__(self, protocol):
        graph = _Graph.of(self)
        return (_node_of, (graph, graph.index[id(self)]))

    def __deepcopy__(self, memo):
        graph = _Graph.of(self)
        return copy.deepcopy(graph, memo).nodes[graph.index[id(self)]]

    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__getstate__())
        return new


class Constant(Node):
    """A fixed value as a parent: its moments are those of the value.

    Parameters
    ----------
    kind : MomentsKind
        The moments the child's slot needs.
    value : array-like
        The value; its leading axes beyond the variable's shape are plates.
    name : str, default=''
        A name.

    Examples
    --------
    >>> from skvi.networks._moments import MomentsKind
    >>> from skvi.networks import Constant
    >>> c = Constant(MomentsKind.gamma(), [1.0, np.e])
    >>> c.plates, c.get_moments()[1]
    ((2,), array([0., 1.]))
    """

    def __init__(self, kind, value, name=""):
        try:
            u = kind.fixed(value)
        except ValueError as err:
            raise NetworkError(f"{name or 'a fixed parent'}: {err}") from None
        plates = u[0].shape[: u[0].ndim - len(kind.dims[0])]
        super().__init__(kind, plates, name)
        self.u = u
        self.observed = True

    _deterministic = False

    def _lazy(self):
        return False

    def update(self):
        """Nothing to update: the value is fixed."""

    def set_value(self, x):
        """Give the fixed parent another value of the same plates (BayesPy's: a new minibatch).

        Parameters
        ----------
        x : array-like
            The value, its plates broadcastable to the node's.

        Examples
        --------
        >>> from skvi.networks import CategoricalMoments, Constant
        >>> docs = Constant(CategoricalMoments(3), [0, 2])
        >>> docs.set_value([1, 1])
        >>> docs.get_moments()[0]
        array([[0., 1., 0.],
               [0., 1., 0.]])
        """
        try:
            u = self._kind.fixed(x)
        except ValueError as err:
            raise NetworkError(f"{self.describe()}: {err}") from None
        for ui, d in zip(u, self.dims):
            try:
                ok = np.broadcast_shapes(np.shape(ui), self.plates + d) == self.plates + d
            except ValueError:
                ok = False
            if not ok:
                raise NetworkError(
                    f"{self.describe()}: a value of plates {np.shape(ui)[: np.ndim(ui) - len(d)]} "
                    f"does not fit the node's plates {self.plates}"
                )
        self.u = u
        _CLOCK[1] += 1  # the moments moved: cached moments below are stale


def _as_parent(child, slot, value, kind):
    """A node for the parent ``slot`` of ``child``: the node itself, or a Constant of the value."""
    if isinstance(value, Node):
        if value._kind.name != kind.name:
            value = value._view_as(kind.name)
        if value._kind.name == kind.name and value._kind != kind:
            raise NetworkError(
                f"{child}: parent '{slot}' is {value.describe()} of {value._kind.describe}, "
                f"but the node needs a {kind.describe}: shapes do not match"
            )
        if value._kind != kind:
            raise NetworkError(
                f"{child}: parent '{slot}' is {value.describe()} with "
                f"{value._kind.describe} moments, but a {child.split()[0]} is conjugate only "
                f"to a parent with {kind.describe} moments (a node of that family or an array)"
            )
        return value
    try:
        return Constant(kind, value, name=slot)
    except NetworkError as err:
        raise NetworkError(f"{child}: parent '{slot}': {str(err).split(': ', 1)[1]}") from None
