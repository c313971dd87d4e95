"""The ``N`` and the step sizes of a stream of unknown length: ``total_samples='auto'``.

SVI's globals are ``prior + N * (average statistics)``: a step scales its
minibatch's statistics by ``N / |S|``.  A stream does not know ``N``;
:class:`StreamTotal` follows the samples seen so far by ``partial_fit``.

The step sizes are the schedule's, or, for a model whose settings say
``stream={'steps': 'bayes'}``, those of streaming variational Bayes (Broderick,
Boyd, Wibisono, Wilson and Jordan, "Streaming variational Bayes"): the
posterior after a minibatch is the one before it, taken as the prior,
updated by the minibatch's statistics.  In SVI's terms the step size is the
minibatch's share of the rows, ``rho = |S| / (n0 + n_seen)``, and ``N = n0 +
n_seen``: every minibatch weighs the same in the data part of the globals,
which is exactly the rows seen.  Initial globals that are not data (LDA's
random topics) count as ``n0`` rows, so that their share fades as ``n0 / (n0
+ n_seen)``; ``n0`` is what the schedule's first step gives the first
minibatch, ``|S_1| (1 / rho_1 - 1)``.  Initial globals fitted to the data, or
a fitted model continued, have ``n0 = 0``.

Which is better depends on the model (``benchmarks/streaming.py``, one pass
in chunks, held-out scores against the true ``N``).  The schedule weighs
recent minibatches more, which forgets a stream's early chunks: LDA on 20
Newsgroups in its file order (the newsgroups one after another) had a
document-completion perplexity 7% (first 6,000 documents) and 25% (all
11,314) worse than with the true ``N``; with streaming Bayes it is 9% and 6%
better, and on shuffled documents the two rules tie.  But streaming Bayes
never forgets statistics computed early, under a poor value of another
factor: the Gaussian-Gamma model's first minibatch, scored under the prior's
vague precision, stays in its posterior (held-out log-likelihood 6% worse),
and a Gaussian mixture's early clusters stay (0.1% worse on 60,000 shuffled
rows, 0.2% on 200,000; 5% better on rows sorted by cluster).  So LDA takes
streaming Bayes and the other models the schedule.
When ``N`` grows, the data part already in the globals is scaled with it
before the step; the initial part is not data and is not scaled.
"""

import numpy as np

__all__ = ["StreamTotal"]


class StreamTotal:
    """What ``total_samples='auto'`` keeps of a stream: the initial part of each factor, its weight.

    Examples
    --------
    >>> from skvi.engine.stream import StreamTotal
    >>> s = StreamTotal()
    >>> s.decay(0.5); s.parts
    {}
    """

    def __init__(self):
        self.parts = {}  # factor -> what the initial globals add to the prior
        self.weight = {}  # factor -> prod(1 - rho_t): what remains of that part
        self.nonzero = {}  # factor -> whether the part is not all zero
        self.total = None  # N of the last step
        self.initial_rows = None  # n0: the rows the initial part counts for

    def remember(self, est, all_data):
        """Keep what the initial globals add to the prior, with its weight 1.

        Globals fitted to the first rows (``stream={'start': 'data'}``), or
        adopted from a fit elsewhere (``all_data=True``), keep an initial
        part of zero: all of them is data.
        """
        st = est._svi
        for name in st.settings.names:
            spec = st.settings.row_groups.get(name)
            per_row = spec is not None and not spec.share
            if per_row or name in st.settings.hierarchical:
                continue
            prior, current = st.prior[name], est.natural_params_[name]
            self.parts[name] = tuple(
                np.zeros_like(np.asarray(c)) if all_data else np.asarray(c) - p
                for p, c in zip(prior, current)
            )
            self.weight[name] = 1.0
            self.nonzero[name] = any(np.any(part != 0) for part in self.parts[name])
        self.initial_rows = None

    def decay(self, rho):
        """An accepted step of size ``rho``: the initial parts fade by ``1 - rho``."""
        for name in self.weight:
            self.weight[name] *= 1.0 - rho

    def step_size(self, est, n_batch, n_seen):
        """The next step's ``rho``, ``n_seen`` including its minibatch.

        Streaming Bayes' ``|S| / (n0 + n_seen)`` for a model whose settings
        say ``stream={'steps': 'bayes'}``; otherwise the schedule's value.
        """
        st = est._svi
        if st.settings.stream_choice("steps") != "bayes":
            return min(st.schedule(est.n_batch_iter_ + 1), 1.0)
        if self.initial_rows is None:
            if any(self.nonzero.get(name) for name in self.parts):
                first = min(st.schedule(est.n_batch_iter_ + 1), 1.0)
                self.initial_rows = n_batch * (1.0 / first - 1.0)
            else:
                self.initial_rows = 0.0
        return min(1.0, n_batch / (self.initial_rows + n_seen))

    def next_total(self, est, n_seen, rho):
        """``N`` of the next step of size ``rho``, ``n_seen`` samples seen including its minibatch."""
        weights = [self.weight[name] for name in self.parts if self.nonzero.get(name)]
        if not weights:
            return float(n_seen)
        rho = min(rho * est._svi.safety.backoff, 1.0)
        remaining = max(weights) * (1.0 - rho)
        return float(n_seen) / max(1.0 - remaining, 1e-12)

    def step_total(self, est, n_seen, seen_before, rho):
        """``N`` for a step of size ``rho``, the data part rescaled to it first."""
        total = self.next_total(est, n_seen, rho)
        previous = self.total or seen_before
        if previous and total != previous:
            self._rescale(est, total / previous)
        self.total = total
        return total

    def _rescale(self, est, growth):
        """Grow the data part of the globals (all but the initial part) by ``growth``."""
        st = est._svi
        prior = st.prior
        for name, init in self.parts.items():
            current = est.natural_params_[name]
            w = self.weight[name]
            scaled = tuple(
                np.asarray(c + (growth - 1.0) * (c - p - w * i), dtype=np.result_type(c))
                for p, c, i in zip(prior[name], current, init)
            )
            # A factor the scaling would make invalid is left as it is.
            if st.settings.is_valid(name, scaled):
                st.set_factor(est, name, scaled)
