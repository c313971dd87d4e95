"""Row groups: the engine's bookkeeping of each member, and resident members kept with their blocks.

Some global factors are stacks of per-row factors, a *row group* whose
*members* are the users and items of matrix factorization, the documents'
own factors of a correlated topic model, a network node's plate elements
(*rows* are always the data's rows).  Each member has its own step counter,
its own ``N_i / C_i`` scaling and its own update rule state (Paquet, Winther
and Opper, "A stochastic algorithm for probabilistic matrix factorization",
Alg. 1).  :class:`RowGroup` keeps them and prepares one step of some
members; the engine uses it for a group held in memory, and a worker for the
members of its block.

A model describes each of its row groups once, with a :class:`RowGroupSpec`
in its settings' ``row_groups``: which member the points of each row fall
on, how many points each member has, the members' prior and the members a
stream adds.  Resident row groups (``RowGroupSpec(resident=True)``) are
groups whose member ``i`` is data row ``i``'s own factor (a document's
``q(eta_d)``): on a cluster they stay with their blocks, and the client
holds a :class:`ResidentRows` in their place, what the blocks hold and the
summed summary the model's closed forms need.
"""

import numpy as np

__all__ = [
    "ChildSample",
    "ResidentRows",
    "RowGroup",
    "RowGroupSpec",
    "RowGroups",
    "RowsOfBlock",
    "counts_of_ids",
    "sample_children",
]


class RowGroup:
    """Step counters, ``N_i`` and update-rule state of the members of one row group.

    Parameters
    ----------
    n_members : int
        Members of the group.

    Attributes
    ----------
    steps : ndarray of shape (n_members,)
        Accepted updates of each member.
    totals : ndarray of shape (n_members,)
        ``N_i``: the data points of each member.
    rule_state : dict
        The update rule's state of every member (AdaGrad accumulators).
    pending : ndarray of int or None
        The members updated by the step being tried.
    share : bool
        Whether ``totals`` count shares of the data (the settings'
        spec's ``share``): a step scales them to its ``N``.
    counted : float
        The (weighted) data rows behind ``totals``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import RowGroup
    >>> group = RowGroup(3)
    >>> group.pending = np.array([0, 2])
    >>> group.commit()
    >>> group.steps
    array([1., 0., 1.])
    """

    __slots__ = ("steps", "totals", "rule_state", "pending", "share", "counted")

    def __init__(self, n_members, share=False):
        self.steps = np.zeros(n_members)
        self.totals = np.zeros(n_members)
        self.rule_state = {}
        self.pending = None
        self.share = share
        self.counted = 0.0

    def grow(self, n_new):
        """Add ``n_new`` members that have seen no data and no step."""
        self.steps = np.concatenate([self.steps, np.zeros(n_new)])
        self.totals = np.concatenate([self.totals, np.zeros(n_new)])
        self.rule_state = {
            k: np.concatenate([v, np.zeros((n_new,) + v.shape[1:])])
            for k, v in self.rule_state.items()
        }

    def copy(self):
        """An independent copy (a tried step changes the copy only)."""
        other = RowGroup.__new__(RowGroup)
        other.steps = self.steps.copy()
        other.totals = self.totals.copy()
        other.rule_state = {k: v.copy() for k, v in self.rule_state.items()}
        other.pending = None if self.pending is None else self.pending.copy()
        other.share, other.counted = self.share, self.counted
        return other

    def prepare(self, members, counts, ctx, schedule, scheduled):
        """Tell ``ctx`` each member's scale, step size and rule state for a step of ``members``.

        Parameters
        ----------
        members : ndarray of int
            The members the step updates.
        counts : ndarray or None
            ``C_i``, the data points behind each member's statistics (None:
            every member takes the minibatch's ``ctx.scale``).  A member
            with ``C_i = 0`` keeps its counter and gets step size 0 (every
            update rule then keeps its value and rule state) unless
            ``N_i = 0`` (no data yet: it follows its prior).
        ctx : StepContext
            Gets ``row_scale`` (``N_i / C_i``), ``row_rho`` and ``rule_state``.
        schedule : callable
            The step-size schedule, ``schedule(t)``.
        scheduled : bool
            Whether batch steps follow each member's schedule too
            (the group spec's ``scheduled``).
        """
        if ctx.online or scheduled:
            # One schedule call for every member's own counter.
            ctx.row_rho = schedule.at(self.steps[members] + 1.0) * ctx.backoff
        else:
            ctx.row_rho = np.full(members.shape[0], ctx.backoff)
        if counts is None:
            ctx.row_scale = np.full(members.shape[0], ctx.scale)
            self.pending = members
        else:
            totals = self.totals[members]
            if self.share:  # N_i = N * n_i / n: a share of the step's N
                totals = totals * (ctx.scale * ctx.n_batch / max(self.counted, 1e-300))
            reached = counts > 0
            ctx.row_scale = np.where(reached, totals / np.where(reached, counts, 1.0), 0.0)
            # A member no point of the minibatch reaches keeps its value and
            # its counter (Paquet's Alg. 1 updates the nodes whose children
            # it sampled); one that no data have reached yet follows its
            # prior, its counter still at 0.
            if not reached.all():
                ctx.row_rho = np.where(reached | (totals <= 0), ctx.row_rho, 0.0)
            self.pending = members if reached.all() else members[reached]
        ctx.rule_state = (
            {k: v[members] for k, v in self.rule_state.items()} if self.rule_state else None
        )

    def keep_rule_state(self, members, state):
        """Store the rule state of ``members`` after an accepted step."""
        for key, value in state.items():
            full = self.rule_state.get(key)
            if full is None:
                full = np.zeros((self.steps.shape[0],) + value.shape[1:])
                self.rule_state[key] = full
            full[members] = value

    def commit(self):
        """Count an accepted step of the pending members."""
        if self.pending is not None:
            self.steps[self.pending] += 1
            self.pending = None


class RowGroupSpec:
    """What the engine needs to know of one row group, declared in the model's settings.

    A row group is a global factor that is a stack of per-row factors along
    its first axis, its *members* (the users and items of matrix
    factorization, the documents of a correlated topic model, a network
    node's plate elements; *rows* are the data's).  Each callable is the
    model's own code and receives the group's name first, so that one method
    may serve several groups.

    Parameters
    ----------
    ids : callable or None, default=None
        ``ids(name, X)``: the member of every data point of X (an int
        array).  A group without ids is counted by ``counts`` alone and
        never grows.
    counts : callable or None, default=None
        ``counts(name, X, size)``: the (weighted) data points of X behind
        each of the group's ``size`` members, its ``N_i``.  None: the
        weighted count of ``ids``.  A model whose data point reaches several
        members (a network's row reaches every plate element of a global
        node it observes) counts them here.
    prior : callable or None, default=None
        ``prior(name, rows, ctx)``: the part of the target of the members
        ``rows`` (their indices) that the minibatch does not scale, members
        first.  None: ``ctx.prior[name]``, one fixed prior for every member;
        a model whose members' prior follows other factors (a network node's
        parents, at ``ctx.params``) returns each member's.
    grow : callable or None, default=None
        ``grow(name, n_new, rated, random_state)``: the natural parameters
        of ``n_new`` members that ``partial_fit`` meets for the first time
        (``rated``: whether each has a data point in the call), and of a
        resident group's members at the start of each block.
    summary : callable or None, default=None
        ``summary(name, natural, steps, totals)``: for a resident group,
        what the model's closed forms and ELBO need of all its members, as
        statistics that add over blocks; models read it through the
        engine's ``_rows_summary(name, params=None)``.
    axes : int, default=1
        The number of leading axes of the factor that index its members: a
        network node's members are the elements of all its plates, member
        ``i`` element ``i`` of the plates in C order.
    share : bool, default=False
        Whether ``N_i`` is a share of the data (a network node's plate
        elements, which every row may reach): ``N_i = N * n_i / n``, with
        ``n_i / n`` the share of the rows counted so far that reach member
        ``i`` and ``N`` the step's total (all the rows in ``fit``; in
        ``partial_fit``, ``total_samples`` or the stream's estimate, whose
        growth rescales it as it does any factor).  Otherwise ``N_i`` is the
        count itself (a user's ratings seen so far).
    resident : bool, default=False
        Whether member ``i`` is data row ``i``'s own factor (a document's
        ``q(eta_d)``): on a cluster the members stay with their blocks, and
        a pickle keeps their ``summary`` only (a copy in memory keeps them).
    scheduled : bool, default=False
        Whether batch steps of the members follow each member's schedule too
        (Monte Carlo targets, whose noise a unit step never averages out).
    children : int or None, default=None
        Paquet's Alg. 1: an online step draws this many data points of
        every member of the group (all of a member's points when it has
        fewer) instead of a minibatch; a pass is then one step.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import ModelSettings, RowGroupSpec
    >>> from skvi.expfam import Gamma
    >>> spec = RowGroupSpec(ids=lambda name, X: X[:, 0].astype(int))
    >>> s = ModelSettings({"rates": Gamma}, row_groups={"rates": spec})
    >>> s.row_groups["rates"].counts_of("rates", np.array([[0.0], [2.0], [2.0]]), 3)
    array([1., 0., 2.])
    """

    __slots__ = (
        "ids",
        "counts",
        "prior",
        "grow",
        "summary",
        "axes",
        "share",
        "resident",
        "scheduled",
        "children",
    )

    def __init__(
        self,
        ids=None,
        counts=None,
        prior=None,
        grow=None,
        summary=None,
        *,
        axes=1,
        share=False,
        resident=False,
        scheduled=False,
        children=None,
    ):
        self.ids = ids
        self.counts = counts
        self.prior = prior
        self.grow = grow
        self.summary = summary
        self.axes = int(axes)
        self.share = bool(share)
        self.resident = bool(resident)
        self.scheduled = bool(scheduled)
        self.children = children

    def ids_of(self, name, X):
        """The row of every data point of X, or None when the group has no ids.

        Parameters
        ----------
        name : str
            The group.
        X : object
            Validated rows (``_prepare_data``'s).

        Returns
        -------
        ndarray of int or None
            The row of the group that each data point of X reaches.
        """
        return None if self.ids is None else np.asarray(self.ids(name, X))

    def counts_of(self, name, X, size):
        """``N_i`` of X: ``counts``, or the weighted count of ``ids``.

        Parameters
        ----------
        name : str
            The group.
        X : object
            Validated rows (``_prepare_data``'s).
        size : int
            The group's number of rows.

        Returns
        -------
        ndarray of shape (size,)
            The (weighted) data points of X behind each row.
        """
        if self.counts is not None:
            return self.counts(name, X, size)
        return np.bincount(self.ids_of(name, X), weights=row_weights(X), minlength=size).astype(
            float
        )

    def prior_of(self, name, rows, ctx):
        """The unscaled part of the target of ``rows``: ``prior``, or ``ctx.prior[name]``.

        Parameters
        ----------
        name : str
            The group.
        rows : ndarray of int
            The rows the step updates.
        ctx : StepContext
            The step (``ctx.params``: the globals so far).

        Returns
        -------
        tuple of ndarray
            Natural parameters, one fixed prior or each row's (rows first).
        """
        if self.prior is None:
            return ctx.prior[name]
        return self.prior(name, rows, ctx)

    def grow_rows(self, name, n_new, rated, random_state):
        """The natural parameters of ``n_new`` new rows (``grow``).

        Parameters
        ----------
        name : str
            The group.
        n_new : int
            Rows to add.
        rated : ndarray of bool or None
            Whether each new row has a data point in the call.
        random_state : RandomState
            The fit's generator.

        Returns
        -------
        tuple of ndarray
            The new rows' natural parameters, rows first.
        """
        if self.grow is None:
            raise NotImplementedError(
                f"The row group {name!r} meets new rows, but its RowGroupSpec has no grow "
                "(see docs/engine.md)."
            )
        return self.grow(name, n_new, rated, random_state)

    def summary_of(self, name, natural, steps, totals):
        """What the model needs of every row of a resident group (``summary``).

        Parameters
        ----------
        name : str
            The group.
        natural : Factor
            The rows' natural parameters.
        steps, totals : ndarray
            Each row's accepted steps and ``N_i``.

        Returns
        -------
        object
            Statistics of the rows that add over blocks.
        """
        if self.summary is None:
            raise NotImplementedError(
                f"The resident row group {name!r} needs a summary in its RowGroupSpec "
                "(see docs/engine.md)."
            )
        return self.summary(name, natural, steps, totals)

    def __repr__(self):
        return f"RowGroupSpec(axes={self.axes}, share={self.share}, resident={self.resident})"


class RowsOfBlock:
    """The factor of a block's rows and their :class:`RowGroup`: what a worker keeps.

    Parameters
    ----------
    natural : Factor
        The natural parameters of the block's rows (in the block's order).
    group : RowGroup
        Their step counters, ``N_i`` and rule state.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import RowGroup, RowsOfBlock
    >>> RowsOfBlock((np.zeros(2),), RowGroup(2)).group.steps
    array([0., 0.])
    """

    __slots__ = ("natural", "group")

    def __init__(self, natural, group):
        self.natural = natural
        self.group = group


class ResidentRows:
    """What the client holds of a resident row group on a cluster: handles and a summary.

    The rows themselves stay with their blocks; a step replaces this object
    by one of the new rows (kept only if the step is accepted).  A pickled
    copy keeps the summary only.

    Parameters
    ----------
    states : list
        One handle per block of the data (a dask future of its
        :class:`RowsOfBlock`).
    reports : list
        One handle per block of its rows' summary report.
    summary : object
        The group spec's ``summary``, summed over every block.
    finite : bool, default=True
        Whether every row's natural parameters are finite.
    backend : object or None, default=None
        What made the handles; builds lazy arrays of per-row values
        (:meth:`map_rows`).

    Examples
    --------
    >>> from skvi.engine.rows import ResidentRows
    >>> ResidentRows([], [], summary=None).finite
    True
    """

    __slots__ = ("states", "reports", "summary", "finite", "backend")

    def __init__(self, states, reports, summary, finite=True, backend=None):
        self.states = list(states)
        self.reports = list(reports)
        self.summary = summary
        self.finite = finite
        self.backend = backend

    def __copy__(self):
        return ResidentRows(self.states, self.reports, self.summary, self.finite, self.backend)

    def __deepcopy__(self, memo):
        return self.__copy__()  # the rows are the cluster's: a copy shares them

    def __getstate__(self):
        # The handles live with the fit's cluster: a copy keeps the summary.
        return {
            "states": [],
            "reports": [],
            "summary": self.summary,
            "finite": self.finite,
            "backend": None,
        }

    def __setstate__(self, state):
        for key, value in state.items():
            setattr(self, key, value)

    def map_rows(self, function, tail_shape):
        """``function(natural)`` of every block's rows, stacked in row order, lazily.

        Parameters
        ----------
        function : callable
            Maps a block's natural parameters to one row of values per row.
        tail_shape : tuple of int
            The shape of each row's values.

        Returns
        -------
        array
            A lazy array (a dask array on a dask cluster).
        """
        return self.backend.map_rows(self, function, tail_shape)


def row_weights(data):
    """The weight of every data point of rows in their row groups' counts ``N_i`` (None: 1 each)."""
    return getattr(data, "weight", None)


def counts_of_ids(specs, data, sizes):
    """Each group's ``N_i`` of the rows ``data``, ``{name: counts}`` (``sizes``: name to rows).

    Each group's :class:`RowGroupSpec` in ``specs`` (a model's settings'
    ``row_groups``) counts them: its ``counts``, or the weighted count of
    its ``ids``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import RowGroupSpec, counts_of_ids
    >>> spec = RowGroupSpec(ids=lambda name, X: X[:, 0].astype(int))
    >>> counts_of_ids({"g": spec}, np.array([[0.0], [2.0], [2.0]]), {"g": 3})
    {'g': array([1., 0., 2.])}
    """
    return {name: specs[name].counts_of(name, data, size) for name, size in sizes.items()}


class RowGroups(dict):
    """The :class:`RowGroup` of each per-row factor group of a fit, by name.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import RowGroups
    >>> groups = RowGroups({"users": RowGroup(2)})
    >>> groups["users"].totals
    array([0., 0.])
    """

    def start(self, natural, settings):
        """A fresh :class:`RowGroup` for each row group in ``natural`` (resident ones stay out)."""
        for name, spec in settings.row_groups.items():
            rows = natural[name]
            if not isinstance(rows, ResidentRows):  # resident: kept by the blocks
                self[name] = RowGroup(int(np.prod(rows[0].shape[: spec.axes])), share=spec.share)

    def count(self, est, executor, data):
        """``N_i`` of every group in memory from all the rows of the fit, summed over blocks."""
        sizes = tuple((name, group.totals.shape[0]) for name, group in self.items())
        if not sizes:
            return
        totals = executor.row_counts(est, data, sizes)
        counted = executor.count(est, data)
        for (name, _), total in zip(sizes, totals):
            self[name].totals = total
            self[name].counted = counted

    def grow_and_count(self, est, X, random_state, settings):
        """Add the rows X meets for the first time (the groups' ``grow``); add X's points to ``N_i``."""
        for name, spec in settings.row_groups.items():
            ids = spec.ids_of(name, X)
            if ids is None:
                continue
            group = self[name]
            n_old = group.totals.shape[0]
            n_new = max(n_old, int(ids.max(initial=-1)) + 1) - n_old
            if n_new:
                rated = np.zeros(n_new, dtype=bool)
                rated[ids[ids >= n_old] - n_old] = True
                extra = spec.grow_rows(name, n_new, rated, random_state)
                est._svi.set_factor(
                    est,
                    name,
                    [np.concatenate([a, b]) for a, b in zip(est.natural_params_[name], extra)],
                )
                group.grow(n_new)
        sizes = {name: group.totals.shape[0] for name, group in self.items()}
        if sizes:
            rows = est._sample_count(X)
            for name, counts in counts_of_ids(settings.row_groups, X, sizes).items():
                self[name].totals += counts
                self[name].counted += rows


def sample_children(ids, n_children, random_state):
    """Positions of up to ``n_children`` random data points of every row (Paquet's Alg. 1).

    Parameters
    ----------
    ids : ndarray of int
        The row of each data point.
    n_children : int
        Points drawn per row (all of a row's points when it has fewer).
    random_state : RandomState
        The generator.

    Returns
    -------
    ndarray of int
        The chosen positions, increasing.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import sample_children
    >>> ids = np.array([0, 0, 0, 1])
    >>> pos = sample_children(ids, 2, np.random.RandomState(0))
    >>> np.bincount(ids[pos]).tolist()
    [2, 1]
    """
    order = np.lexsort((random_state.random_sample(ids.shape[0]), ids))
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    rank = np.arange(ids.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, ids.shape[0]]))
    return np.sort(order[rank < n_children])


class ChildSample:
    """Paquet's Alg. 1 minibatch: for each row group, up to ``C`` data points of each of its rows.

    The global factors' statistics use the first group's sample (:attr:`main`).

    Parameters
    ----------
    samples : dict
        Group name to its sample of the data (in the groups' order).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine.rows import ChildSample
    >>> s = ChildSample({"users": np.zeros((3, 2)), "items": np.zeros((2, 2))})
    >>> s.shape
    (3, 2)
    """

    __slots__ = ("samples",)

    def __init__(self, samples):
        self.samples = dict(samples)

    @property
    def main(self):
        """The sample of the first group: the global factors' minibatch."""
        return next(iter(self.samples.values()))

    @property
    def shape(self):
        return self.main.shape

    @property
    def weight(self):
        return getattr(self.main, "weight", None)

    def count(self):
        """The main sample's number of points, or their total weight."""
        main = self.main
        return main.count() if hasattr(main, "count") else main.shape[0]
