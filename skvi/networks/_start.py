"""The start of :class:`SVIBayesianNetwork`'s fit: VMP sweeps of random draws on subsamples.

As BayesPy's ``initialize_from_random``: the local nodes from random draws,
each swept by VMP on a subsample of the rows; the best draw's globals are
refined on a larger subsample, then scaled to all the rows.  The draws race:
each of them is swept ``RACE_SWEEPS`` times, and only the one with the
highest bound then sweeps on to the tolerance.

A mixture's draw (one local ``Categorical`` over the rows) can instead be
seeded as k-means++ seeds k-means (Arthur and Vassilvitskii, "k-means++:
the advantages of careful seeding"): each category's globals from one row,
the next row drawn with a weight that grows with how much worse the
categories seeded so far explain it than the row they explain best (their
log-likelihood, which for a Gaussian cluster is the squared distance
k-means++ weighs by).  Random assignments start every cluster at the mean
of the data, a saddle that many draws leave towards merged clusters;
seeded clusters start apart, and a few sweeps settle them.
"""

import numpy as np

from ..engine.data import Rows
from ._discrete import Categorical
from ._links import has_links

__all__ = [
    "INIT_FAST",
    "INIT_TOL",
    "ONLINE_INIT_TOL",
    "RACE_SWEEPS",
    "RANDOM_DRAWS",
    "REFINE_ROWS",
    "SEEDED_DRAWS",
    "SEEDED_RACE_SWEEPS",
    "Sweeps",
    "row_sample",
    "seed_categories",
    "seeded_node",
    "start",
]

#: The start's sweeps on a subsample stop at this relative change of its bound.
INIT_TOL = 1e-6
#: An online fit's start stops sooner: its steps go on refining the globals
#: from fresh minibatches at the cost of a sweep each, while a pass of a
#: batch fit over all the rows costs many sweeps of the start.
ONLINE_INIT_TOL = 1e-4
#: A start's sweep whose bound changes by more than one of these (relative)
#: is far from the start's tolerance: the bounds of as many sweeps after it are not
#: computed, and the test that follows compares the change over all of them
#: (never a looser test than sweep by sweep).
INIT_FAST = (1e-3, 1e-2)
#: The draws' race: every draw sweeps this many times, its bound computed
#: only after the last (a bound costs about a sweep), then only the draw with
#: the highest bound sweeps on, to the start's tolerance.  A draw that leaves a saddle
#: late can still be behind after fewer sweeps, and win in the end.
RACE_SWEEPS = 20
#: Draws of ``init_draws='auto'``: random draws of the local nodes, and
#: seeded ones, which land near the best mode far more often.
RANDOM_DRAWS = 5
SEEDED_DRAWS = 2
#: The race's sweeps of seeded draws, which start near a mode: enough to
#: settle the seeds' clusters before their bounds are compared.
SEEDED_RACE_SWEEPS = 3
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


def seeded_node(est):
    """The local node whose categories the start seeds from rows, or None where it cannot.

    A network whose one local latent node is a :class:`Categorical` over
    the rows alone (one plate) and has no link nodes: a mixture, whose
    children's message to it is each row's log-likelihood per category.
    """
    nodes, _, latent_local, _ = est._template()
    if len(latent_local) != 1 or has_links(nodes.values()):
        return None
    node = nodes[latent_local[0]]
    if type(node) is not Categorical or len(node.plates) != 1 or node.dims[0][0] < 2:
        return None
    return latent_local[0]


def seed_categories(est, net, params, name, rows, random_state, trials=None):
    """k-means++'s seeding of categorical node ``name`` of ``net``, the globals ``params`` in place.

    Category ``k`` takes one row (``q(z)`` of that row one-hot at ``k``,
    of every row not seeded zero), and the globals are updated from the
    seeded rows.  Each row weighs ``max_j l_j - l_i``, ``l_i`` its highest
    log-likelihood under the categories seeded so far (times its weight; 0
    for a row already drawn), and the next category's row is the best of
    ``trials`` rows drawn with those weights: the one that leaves the
    smallest total weight.  This is greedy k-means++, as scikit-learn's
    ``kmeans_plusplus`` (``trials=None``: ``2 + log(K)``, as there; 1: the
    original k-means++).  Then the rows' ``q(z)`` from the seeded globals.
    Returns the seeds: the row of each seeded category, in its order.
    """
    glob = est._template()[3]
    n, K = net[name].plates[0], net[name].dims[0][0]
    trials = 2 + int(np.log(K)) if trials is None else trials
    plain = net
    w = np.ones(n)
    if rows.weight is not None:
        # k-means++'s seeds are points: each category's globals come from its
        # row once, whatever the row's weight (a heavy row would seed a
        # tighter category, and the log-likelihoods under the categories
        # would no longer weigh alike); the weights weigh the draws.
        w = np.asarray(rows.weight, dtype=np.float64)
        unweighted = Rows(rows.X, rows.y, None, rows.design)
        plain = est._local_network(unweighted, params, remember=False, start_locals=False)
    node = plain[name]
    counted = w > 0

    def seed(z, k, i):
        # Row i in category k: a new q(z) array (the messages keep sums keyed
        # on its arrays), every global updated from it and set on the network
        # before the rows' log-likelihoods under category k read them.
        z = z.copy()
        z[i, k] = 1.0
        node.u = [z]
        found = dict(params)
        est._globals_from(plain, found, 1.0)
        est._set_globals(plain, glob, found)
        loglik = est._local_children_messages(plain, name)[0].reshape(n, -1)[:, k]
        return z, found, loglik

    i = random_state.choice(n, p=w / w.sum())
    z, found, best = seed(np.zeros((n, K)), 0, i)
    chosen = np.zeros(n, dtype=bool)
    chosen[i] = True
    seeds = [i]
    # Fewer rows than categories: each row seeds one, the rest stay at their prior.
    for k in range(1, min(K, n)):
        top = best[counted].max()
        far = (top - best) * w
        far[chosen] = 0.0
        cumulative = np.cumsum(far)
        if cumulative[-1] > 0 and np.isfinite(cumulative[-1]):
            u = random_state.uniform(size=trials) * cumulative[-1]
            drawn = np.minimum(np.searchsorted(cumulative, u), n - 1)
        else:
            # Every row explained alike (repeated rows): any row not drawn yet.
            left = ~chosen & counted
            drawn = [random_state.choice(np.flatnonzero(left if left.any() else ~chosen))]
        kept = None
        for row in drawn:
            seeded = seed(z, k, row)
            nearest = np.maximum(best, seeded[2])
            left_over = float(np.sum(w[counted] * (top - nearest[counted])))
            if kept is None or left_over < kept[0]:
                kept = (left_over, row, seeded[0], seeded[1], nearest)
        _, i, z, found, best = kept
        chosen[i] = True
        seeds.append(i)
    params.update(found)
    net[name].u = [z]
    est._set_globals(net, glob, params)
    est._local_sweeps(net, [name])
    return np.array(seeds, dtype=np.int64)


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


def _race(est, rows, start_params, random_state, seeded, tol):
    """The draws' race on ``rows``: the network and globals of the draw with the highest bound.

    ``seeded``: the categorical node whose categories each draw seeds, or
    None for random draws of the local nodes; the kept draw sweeps to ``tol``.
    """
    draws = est.init_draws
    if draws == "auto":
        draws = RANDOM_DRAWS if seeded is None else SEEDED_DRAWS
    draws = draws if est.init_max_iter else 1
    sweeps = RACE_SWEEPS if seeded is None else SEEDED_RACE_SWEEPS
    best = None
    for _ in range(draws):
        params = dict(start_params)
        if seeded is None:
            net = est._local_network(rows, params, init_random=random_state)
        else:
            net = est._local_network(rows, params, start_locals=False)
            seed_categories(est, net, params, seeded, rows, random_state)
        run = Sweeps(est, net, rows, params, est.init_max_iter, tol)
        if draws == 1:
            break
        run.quiet(min(sweeps, est.init_max_iter))
        if best is None or run.bound > best.bound:  # the first of equal bounds
            best = run
    run = run if best is None else best
    run.run()
    return run.net, run.params


def start(est, X, rows, params, random_state, summary, seeded=None, tol=INIT_TOL):
    """The globals from random draws of the locals swept on ``rows``, refined, scaled to X.

    BayesPy's start: the local nodes from a random draw, then sweeps of VMP
    on a subsample (where random assignments break symmetry fast), the best
    draw's refined on a larger subsample, then the globals from its locals,
    scaled to all the rows.  ``seeded``: the categorical node whose
    categories the draws seed (:func:`seed_categories`), or None; ``tol``:
    the relative change of the bound that ends the sweeps.
    """
    n_all = X.shape[0]
    net, params = _race(est, rows, params, random_state, seeded, tol)
    more = min(n_all, REFINE_ROWS * est.init_rows)
    if est.init_max_iter and more > rows.shape[0]:
        # The kept globals, from the small subsample's locals scaled to the
        # larger one's rows, start its sweeps.
        wider = X[row_sample(random_state, n_all, more)]
        est._globals_from(net, params, wider.count() / rows.count())
        rows = wider
        net = est._local_network(rows, params)
        Sweeps(est, net, rows, params, est.init_max_iter, tol).run()
    # Scaled to all the rows (on a cluster, X is a sample drawn over every block).
    total = X.count() if summary is None else float(summary)
    est._globals_from(net, params, total / rows.count())
    return params
