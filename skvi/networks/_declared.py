"""A network declared once by its builder, checked, and given each block's rows.

``SVIBayesianNetwork`` calls the user's builder a few times, at a few
numbers of rows, only to learn the network: which nodes have the rows'
plate (and on which axis), which fixed values are the rows' inputs, and
that nothing else changes with the rows.  Every block of rows then gets a
copy of that declared network with the rows' plates resized and the
block's inputs put in the fixed values that hold them, instead of a fresh
call of the builder: the builder's Python (node construction, checks of
plates and parents) runs a few times per fit, not once per block.

A builder that cannot be declared this way is refused here, with a
message naming ``model``: one whose network changes with the number of
rows other than by the rows' plate, one that reuses nodes between calls
(a node made outside the builder would collect the children of every
call, and with them every block's rows), one whose observed node does not
have the rows as its leading plate (a builder that closes over inputs it
was not given).
"""

import copy

import numpy as np

from ._node import Constant, Node
from ._plates import NetworkError
from ._stochastic import Stochastic

#: Numbers of rows the builder is called at to find the rows' axes.
PROBE_SIZES = (2, 3, 5)
#: Further numbers of rows the declaration is checked at.
CHECK_SIZES = (1, 7)
#: The per-block state of a node, cleared in each block's copy.
_BLOCK_STATE = ("_u", "_phi", "_g", "f", "_point_f", "_u_cache", "_fixed")


def discover(observed):
    """The nodes above ``observed`` (fixed values aside), parents before children, by name."""
    order, seen = [], set()

    def visit(node):
        if id(node) in seen or isinstance(node, Constant):
            return
        seen.add(id(node))
        for p in node.parents:
            visit(p)
        order.append(node)

    visit(observed)
    names, counts = [], {}
    for node in order:
        base = node.name or type(node).__name__
        counts[base] = counts.get(base, 0) + 1
        names.append(base if node.name else f"{base}_{counts[base]}")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise NetworkError(f"nodes named {dup} more than once: give every node its own name")
    return dict(zip(names, order))


class _Network(dict):
    """A block's network, nodes by name: one object, so that it pickles whole.

    (dask's serialisation takes a plain dict apart and pickles its values
    one by one, which would give each node its own copy of its neighbours.)
    """


def _constants(nodes):
    """Every fixed value of the network: ``{(child name, parent index): Constant}``."""
    out = {}
    for name, node in nodes.items():
        for i, p in enumerate(node.parents):
            if isinstance(p, Constant):
                out[(name, i)] = p
    return out


def _value_of(const):
    """The value behind a fixed node's moments, or None where it cannot be read back."""
    kind, u = const._kind, const.u
    name = kind.name
    if name in ("gaussian", "gamma", "poisson", "bernoulli", "multinomial", "index"):
        value = np.asarray(u[0])
    elif name == "categorical":
        value = np.argmax(u[0], axis=-1).astype(np.float64)
    elif name == "dirichlet":
        value = np.exp(u[0])
    else:
        return None
    try:
        again = kind.fixed(value)
    except ValueError:
        return None
    same = len(again) == len(u) and all(
        np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)
        for a, b in zip(again, u)
    )
    return value if same else None


def _row_axis(owner, plates, sizes):
    """The one plate axis of ``owner`` that is the rows (its plates at each probe size)."""
    first = plates[0]
    if any(len(p) != len(first) for p in plates):
        raise _refuse(
            f"{owner} has plates {plates[0]} for {sizes[0]} rows and {plates[1]} for {sizes[1]}"
        )
    axes = [a for a in range(len(first)) if len({p[a] for p in plates}) > 1]
    if len(axes) != 1 or any(p[axes[0]] != n for p, n in zip(plates, sizes)):
        shown = ", ".join(f"{p} for {n} rows" for p, n in zip(plates, sizes))
        raise _refuse(f"{owner} has plates {shown}: no one axis of them is the rows")
    return axes[0]


def _refuse(what):
    return NetworkError(
        f"model: the builder declares a different network for different numbers of rows "
        f"({what}); only the rows' plate may change with them"
    )


def _shapes_of(node):
    """A node's tuples of ints (plates and the like), its helper nodes' plates among them."""
    out = {}
    for key, value in vars(node).items():
        if key in ("parents", "children") or key in _BLOCK_STATE:
            continue
        if isinstance(value, tuple) and all(isinstance(v, (int, np.integer)) for v in value):
            out[key] = tuple(int(v) for v in value)
        elif isinstance(value, Node) and key != "parents":
            out[key] = value.plates
    return out


def _resized(plates, axis, n):
    return plates[:axis] + (n,) + plates[axis + 1 :]


class Declaration:
    """A builder's network, declared once: the template every block's network is copied from.

    Parameters
    ----------
    call : callable
        ``call(n_rows, inputs)``: the builder's observed node for ``n_rows``
        rows (``inputs`` their inputs, or None).
    probe_inputs : callable or None
        ``probe_inputs(n)``: the inputs of ``n`` rows to call the builder
        with (None: a builder of the number of rows).
    check_sizes : iterable of int
        Further numbers of rows to check the declaration at.
    """

    def __init__(self, call, probe_inputs=None, check_sizes=()):
        builds = []
        sizes = PROBE_SIZES
        for n in sizes:
            inputs = None if probe_inputs is None else probe_inputs(n)
            builds.append(self._checked_build(call, n, inputs, builds))
        first = builds[0]
        for other, n in zip(builds[1:], sizes[1:]):
            if list(other) != list(first):
                raise _refuse(
                    f"nodes {list(first)} for {sizes[0]} rows, {list(other)} for {n} rows"
                )
        self.local, self.row_axis = [], {}
        for name in first:
            plates = [b[name].plates for b in builds]
            kinds = {(type(b[name]), b[name]._kind) for b in builds}
            if len(kinds) != 1:
                raise _refuse(f"node {first[name].describe()} changes its kind")
            if len(set(plates)) > 1:
                self.row_axis[name] = _row_axis(first[name].describe(), plates, sizes)
                self.local.append(name)
        # The fixed values: the rows' inputs (or values repeated per row), or fixed.
        consts = [_constants(b) for b in builds]
        self.feeds = {}
        for key, const in consts[0].items():
            if any(key not in c for c in consts[1:]):
                raise _refuse(f"the parents of node '{key[0]}' change")
            plates = [c[key].plates for c in consts]
            owner = f"the fixed parent {key[1]} of node '{key[0]}'"
            if len(set(plates)) == 1:
                for c in consts[1:]:
                    if not all(
                        np.array_equal(a, b, equal_nan=True) for a, b in zip(const.u, c[key].u)
                    ):
                        raise _refuse(f"{owner} has a value that depends on the rows")
                continue
            axis = _row_axis(owner, plates, sizes)
            self.feeds[key] = self._feed_plan(
                key, axis, [c[key] for c in consts], sizes, probe_inputs
            )
        self.nodes = first
        # Clear the template's per-row values: no training row stays in it.
        for key, (axis, _, _) in self.feeds.items():
            const = self.nodes[key[0]].parents[key[1]]
            const.u = [np.zeros_like(a) for a in const.u]
        self.size = sizes[0]
        self.rebuild = any(plan is None for _, plan, _ in self.feeds.values())
        for n in check_sizes:
            self.check(call, n, None if probe_inputs is None else probe_inputs(n))

    @staticmethod
    def _checked_build(call, n, inputs, earlier):
        observed = call(n, inputs)
        if not isinstance(observed, Stochastic):
            raise NetworkError(
                f"the model must return the observed node (a stochastic node), got {observed!r}"
            )
        nodes = _Network(discover(observed))
        seen = {}
        for b in earlier:
            for name, node in b.items():
                seen[id(node)] = name
                for p in node.parents:
                    seen[id(p)] = f"a fixed parent of '{name}'"
        for name, node in nodes.items():
            for obj, label in [(node, name)] + [(p, f"a parent of '{name}'") for p in node.parents]:
                if id(obj) in seen:
                    raise NetworkError(
                        f"model: the builder returns the same node ({obj.describe()}, "
                        f"{label}) on two calls; it must make every node on each call "
                        "(a node made outside it would collect every block's rows)"
                    )
        return nodes

    @staticmethod
    def _feed_plan(key, axis, consts, sizes, probe_inputs):
        """How a block's fixed value is made: ``(axis, columns, kind)``; columns None: rebuild.

        Each column of the value (its row axis first, the rest flattened) is
        a column of the inputs or a number repeated on every row, the same
        at every probe size; anything else is rebuilt from the builder.
        """
        kind = consts[0]._kind
        columns = None
        for const, n in zip(consts, sizes):
            value = _value_of(const)
            if value is None:
                return axis, None, kind
            flat = np.moveaxis(value, axis, 0).reshape(n, -1)
            inputs = None if probe_inputs is None else probe_inputs(n)
            found = []
            for j in range(flat.shape[1]):
                col = flat[:, j]
                match = (
                    []
                    if inputs is None
                    else [c for c in range(inputs.shape[1]) if np.array_equal(inputs[:, c], col)]
                )
                if len(match) == 1:
                    found.append(("input", match[0]))
                elif not match and np.all(col == col[0]):
                    found.append(("value", float(col[0])))
                else:
                    return axis, None, kind
            if columns is None:
                columns = found
            elif columns != found:
                return axis, None, kind
        shape = np.moveaxis(_value_of(consts[0]), axis, 0).shape[1:]
        return axis, (columns, shape), kind

    # ------------------------------------------------------------ checks
    def check(self, call, n, inputs):
        """Refuse the builder if its network for ``n`` rows is not the declared one resized."""
        built = self._checked_build(call, n, inputs, [self.nodes])
        if list(built) != list(self.nodes):
            raise _refuse(f"nodes {list(self.nodes)} for {self.size} rows, {list(built)} for {n}")
        for name, node in self.nodes.items():
            want = node.plates
            if name in self.row_axis:
                want = _resized(want, self.row_axis[name], n)
            other = built[name]
            if type(other) is not type(node) or other._kind != node._kind:
                raise _refuse(f"node {node.describe()} changes its kind for {n} rows")
            if other.plates != want:
                raise _refuse(
                    f"node {node.describe()} has plates {other.plates} for {n} rows, "
                    f"where {want} follow from its plates {node.plates} for {self.size}"
                )
        # What a node computed from its plates at construction must follow too.
        copy_ = self.network(n, feed=False)
        for name, node in built.items():
            if _shapes_of(node) != _shapes_of(copy_[name]):
                raise NetworkError(
                    f"model: node {node.describe()} keeps shapes of the rows "
                    f"({_shapes_of(node)} for {n} rows) that a block of rows cannot change; "
                    "declare it so that only its plates follow the rows"
                )
        consts, declared = _constants(built), _constants(self.nodes)
        if set(consts) != set(declared):
            raise _refuse(f"the fixed parents of the nodes change for {n} rows")
        for key, const in declared.items():
            if key not in self.feeds and not all(
                np.array_equal(a, b, equal_nan=True) for a, b in zip(const.u, consts[key].u)
            ):
                raise _refuse(
                    f"the fixed parent {key[1]} of node '{key[0]}' has another value for {n} rows"
                )
        # Each fed value checked against the builder's own, on these rows:
        # a column read as repeated that is an input (or the reverse) is
        # rebuilt from the builder instead.
        for key, (axis, plan, kind) in list(self.feeds.items()):
            if plan is None:
                continue
            fed = kind.fixed(self._fed_value(plan, axis, n, inputs))
            # A Gaussian's second moment follows from its first: not compared
            # (a design matrix's outer products are never made).
            own = consts[key].u
            if kind.name == "gaussian":
                fed, own = [fed[0]], [own[0]]
            if not all(
                np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)
                for a, b in zip(fed, own)
            ):
                self.feeds[key] = (axis, None, kind)
                self.rebuild = True

    @staticmethod
    def _fed_value(plan, axis, n, inputs):
        """The fixed value of ``n`` rows: the plan's columns of the inputs and numbers."""
        columns, shape = plan
        flat = np.empty((n, len(columns)))
        for j, (what, c) in enumerate(columns):
            flat[:, j] = inputs[:, c] if what == "input" else c
        return np.moveaxis(flat.reshape((n,) + shape), 0, axis)

    # ------------------------------------------------------------ blocks
    def _copy(self):
        """The declared nodes, each copied, linked to each other's copies.

        A block's nodes hold its state (q, observations, masks), so each is
        its own; fixed values and a mixture's family formulas are read
        only, and shared, but for the fixed values of the rows.
        """
        fed = {id(self.nodes[k[0]].parents[k[1]]) for k in self.feeds}
        new = {}
        for node in self.nodes.values():
            new[id(node)] = copy.copy(node)
            for p in node.parents:
                if id(p) in fed and id(p) not in new:
                    new[id(p)] = copy.copy(p)
        for node in new.values():
            node.parents = [new.get(id(p), p) for p in node.parents]
            node.children = [(new[id(c)], i) for c, i in node.children if id(c) in new]
            node.__dict__.pop("_u_cache", None)
        return _Network((name, new[id(node)]) for name, node in self.nodes.items())

    def network(self, n, inputs=None, feed=True, call=None):
        """A copy of the declared network for ``n`` rows, the rows' inputs in its fixed values.

        ``feed=False``: the plates only (the fixed values of the rows left
        at zero), for counting elements.  ``call`` is the builder's call,
        for fixed values that are not columns of the inputs.
        """
        nodes = self._copy()
        for name in self.local:
            node = nodes[name]
            node.plates = _resized(node.plates, self.row_axis[name], n)
            for attr in _BLOCK_STATE:
                node.__dict__.pop(attr, None)
            node._mask = None
            node._row_weight = None
            if isinstance(node, Stochastic):
                node.observed = False
        fresh = None
        if feed and self.rebuild:
            fresh = _constants(_Network(discover(call(n, inputs))))
        for key, (axis, plan, kind) in self.feeds.items():
            const = nodes[key[0]].parents[key[1]]
            const.plates = _resized(const.plates, axis, n)
            if not feed:
                const.u = [np.zeros(const.plates + d) for d in kind.dims]
            elif plan is None:
                const.u = fresh[key].u
            else:
                const.u = kind.fixed(self._fed_value(plan, axis, n, inputs))
        return nodes
