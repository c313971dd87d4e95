"""Per-row factor groups: the engine's bookkeeping of each row, and rows kept with their blocks.

Some global factors are stacks of per-row factors (the users and items of
matrix factorization, the documents of a correlated topic model).  Each row
has its own step counter, its own ``N_i / C_i`` scaling and its own update
rule state (Paquet, Winther and Opper, "A stochastic algorithm for
probabilistic matrix factorization", Alg. 1).  :class:`RowGroup` keeps them
and prepares one step of some rows; the engine uses it for a group held in
memory, and a worker for the rows of its block.

A model's ``_resident_row_groups`` are groups whose row ``i`` is data row
``i``'s own factor (a document's ``q(eta_d)``): on a cluster they stay with
their blocks, and the client holds a :class:`ResidentRows` in their place,
what the blocks hold and the summed summary the model's closed forms need.
"""

import numpy as np

__all__ = ["ResidentRows", "RowGroup", "RowsOfBlock"]


class RowGroup:
    """Step counters, ``N_i`` and update-rule state of the rows of one per-row factor group.

    Parameters
    ----------
    n_rows : int
        Rows of the group.

    Attributes
    ----------
    steps : ndarray of shape (n_rows,)
        Accepted updates of each row.
    totals : ndarray of shape (n_rows,)
        ``N_i``: the data points of each row.
    rule_state : dict
        The update rule's state of every row (AdaGrad accumulators).
    pending : ndarray of int or None
        The rows updated by the step being tried.

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

    __slots__ = ("steps", "totals", "rule_state", "pending")

    def __init__(self, n_rows):
        self.steps = np.zeros(n_rows)
        self.totals = np.zeros(n_rows)
        self.rule_state = {}
        self.pending = None

    def grow(self, n_new):
        """Add ``n_new`` rows that have seen no data and no step."""
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
        return other

    def prepare(self, rows, counts, ctx, schedule, scheduled):
        """Tell ``ctx`` each row's scale, step size and rule state for a step of ``rows``.

        Parameters
        ----------
        rows : ndarray of int
            The rows the step updates.
        counts : ndarray or None
            ``C_i``, the data points behind each row's statistics (None:
            every row takes the minibatch's ``ctx.scale``).
        ctx : StepContext
            Gets ``row_scale`` (``N_i / C_i``), ``row_rho`` and ``rule_state``.
        schedule : callable
            The step-size schedule, ``schedule(t)``.
        scheduled : bool
            Whether batch steps follow each row's schedule too
            (``_scheduled_row_steps``).
        """
        if counts is None:
            ctx.row_scale = np.full(rows.shape[0], ctx.scale)
        else:
            ctx.row_scale = self.totals[rows] / np.maximum(counts, 1e-300)
        if ctx.online or scheduled:
            steps, inverse = np.unique(self.steps[rows] + 1.0, return_inverse=True)
            values = np.array([schedule(int(t)) for t in steps])
            ctx.row_rho = values[inverse] * ctx.backoff
        else:
            ctx.row_rho = np.full(rows.shape[0], ctx.backoff)
        ctx.rule_state = (
            {k: v[rows] for k, v in self.rule_state.items()} if self.rule_state else None
        )
        self.pending = rows

    def keep_rule_state(self, rows, state):
        """Store the rule state of ``rows`` after an accepted step."""
        for key, value in state.items():
            full = self.rule_state.get(key)
            if full is None:
                full = np.zeros((self.steps.shape[0],) + value.shape[1:])
                self.rule_state[key] = full
            full[rows] = value

    def commit(self):
        """Count an accepted step of the pending rows."""
        if self.pending is not None:
            self.steps[self.pending] += 1
            self.pending = None


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
        ``_row_summary`` summed over every block.
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
        return {"states": [], "reports": [], "summary": self.summary, "finite": self.finite,
                "backend": None}

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
