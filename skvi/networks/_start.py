"""The start of :class:`SVIBayesianNetwork`'s fit: VMP sweeps of random draws on subsamples.

As BayesPy's ``initialize_from_random``: the local nodes from random draws,
each swept by VMP on a subsample of the rows; the best draw's globals are
refined on a larger subsample, then scaled to all the rows.  The draws race:
each of them is swept ``RACE_SWEEPS`` times, and only the one with the
highest bound then sweeps on to the tolerance.
"""

import numpy as np

__all__ = ["INIT_FAST", "INIT_TOL", "RACE_SWEEPS", "REFINE_ROWS", "Sweeps", "row_sample", "start"]

#: The start's sweeps on a subsample stop at this relative change of its bound.
INIT_TOL = 1e-6
#: A start's sweep whose bound changes by more than one of these (relative)
#: is far from ``INIT_TOL``: the bounds of as many sweeps after it are not
#: computed, and the test that follows compares the change over all of them
#: (never a looser test than sweep by sweep).
INIT_FAST = (1e-3, 1e-2)
#: The draws' race: every draw sweeps this many times, its bound computed
#: only after the last (a bound costs about a sweep), then only the draw with
#: the highest bound sweeps on, to ``INIT_TOL``.  A draw that leaves a saddle
#: late can still be behind after fewer sweeps, and win in the end.
RACE_SWEEPS = 20
#: The kept draw then sweeps on this many times ``init_rows`` rows (all of
#: them when there are fewer): a start whose globals carry the sampling error
#: of a larger subsample takes fewer passes over all the rows.
REFINE_ROWS = 10


def row_sample(random_state, n, k):
    """``k`` of ``n`` rows, sorted, every set of ``k`` rows as likely.

    ``choice(n, k, replace=False)`` permutes all ``n`` rows; for ``k`` well
    below ``n``, the first ``k`` distinct rows of draws with replacement are
    such a sample too (sequential sampling, the repeats rejected), at a cost
    in ``k`` rather than ``n``.
    """
    if 4 * k > n:
        return np.sort(random_state.choice(n, k, replace=False))
    drawn = np.empty(0, dtype=np.int64)
    while True:
        more = random_state.randint(n, size=k + k // 4 + 8).astype(np.int64)
        drawn = np.concatenate([drawn, more])
        values, first = np.unique(drawn, return_index=True)
        if values.size >= k:
            return np.sort(values[np.argsort(first, kind="stable")[:k]])


class Sweeps:
    """VMP sweeps of a rows' network ``net`` and its globals ``params`` (in place), one at a time.

    Each :meth:`step` is one sweep: every global from the locals, then the
    locals.  The bound is tested against ``tol`` after the sweeps that
    ``INIT_FAST`` does not skip; ``done`` once it is met or after
    ``max_iter`` sweeps, ``bound`` the last bound computed.
    """

    def __init__(self, est, net, rows, params, max_iter, tol):
        self.est, self.net, self.rows, self.params = est, net, rows, params
        self.max_iter, self.tol = max_iter, tol
        self.it = 0
        self.bound = self.last = None
        self.skip = 0
        self.done = max_iter <= 0

    def _bound(self):
        est = self.est
        return est._local_bound(self.rows, self.net, self.params) + est._global_bound(self.params)

    def step(self):
        est, it = self.est, self.it
        self.it += 1
        est._globals_from(self.net, self.params, 1.0)
        est._local_sweeps(self.net, est._template()[2])
        self.done = self.it >= self.max_iter
        if self.skip and it < self.max_iter - 1:
            self.skip -= 1
            return
        bound = self.bound = self._bound()
        if self.last is not None:
            change = abs(bound - self.last)
            if change <= self.tol * abs(bound):
                self.done = True
                return
            self.skip = sum(change > f * abs(bound) for f in INIT_FAST)
        self.last = bound

    def quiet(self, sweeps):
        """``sweeps`` sweeps, the bound computed after the last only; the next sweep tests from it."""
        for _ in range(sweeps):
            self.est._globals_from(self.net, self.params, 1.0)
            self.est._local_sweeps(self.net, self.est._template()[2])
        self.it += sweeps
        self.bound = self.last = self._bound()
        self.done = self.it >= self.max_iter

    def run(self):
        """Sweeps to the end; the last bound computed."""
        while not self.done:
            self.step()
        return self.bound


def _race(est, rows, start_params, random_state):
    """The draws' race on ``rows``: the network and globals of the draw with the highest bound."""
    draws = est.init_draws if est.init_max_iter else 1
    best = None
    for _ in range(draws):
        params = dict(start_params)
        net = est._local_network(rows, params, init_random=random_state)
        run = Sweeps(est, net, rows, params, est.init_max_iter, INIT_TOL)
        if draws == 1:
            break
        run.quiet(min(RACE_SWEEPS, est.init_max_iter))
        if best is None or run.bound > best.bound:  # the first of equal bounds
            best = run
    run = run if best is None else best
    run.run()
    return run.net, run.params


def start(est, X, rows, params, random_state, summary):
    """The globals from random draws of the locals swept on ``rows``, refined, scaled to X.

    BayesPy's start: the local nodes from a random draw, then sweeps of VMP
    on a subsample (where random assignments break symmetry fast), the best
    draw's refined on a larger subsample, then the globals from its locals,
    scaled to all the rows.
    """
    n_all = X.shape[0]
    net, params = _race(est, rows, params, random_state)
    more = min(n_all, REFINE_ROWS * est.init_rows)
    if est.init_max_iter and more > rows.shape[0]:
        # The kept globals, from the small subsample's locals scaled to the
        # larger one's rows, start its sweeps.
        wider = X[row_sample(random_state, n_all, more)]
        est._globals_from(net, params, wider.count() / rows.count())
        rows = wider
        net = est._local_network(rows, params)
        Sweeps(est, net, rows, params, est.init_max_iter, INIT_TOL).run()
    # Scaled to all the rows (on a cluster, X is a sample drawn over every block).
    total = X.count() if summary is None else float(summary)
    est._globals_from(net, params, total / rows.count())
    return params
