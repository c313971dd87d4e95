"""The ``N`` of a stream of unknown length: ``total_samples='auto'``.

SVI's globals are ``prior + N * (average statistics)``: a step scales its
minibatch's statistics by ``N / |S|``.  A stream does not know ``N``;
:class:`StreamTotal` follows the samples seen so far by ``partial_fit``.
Early in a stream the globals also hold what remains of their initial value
(weight ``W = prod(1 - rho_t)`` over the steps so far), so ``N`` is the
running count divided by ``1 - W``: the data part of the globals is then
exactly the rows seen so far, the first minibatch counting as its own rows
rather than ``rho_1`` of them.  When ``N`` grows, the data part already in
the globals is scaled with it before the step (otherwise each step blends a
posterior for fewer rows into the new one and the stream ends far below its
row count); the initial part is not data and is not scaled.
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
        self.parts = {}     # factor -> what the initial globals add to the prior
        self.weight = {}    # factor -> prod(1 - rho_t): what remains of that part
        self.nonzero = {}   # factor -> whether the part is not all zero
        self.total = None   # N of the last step

    def remember(self, est, all_data):
        """Keep what the initial globals add to the prior, with its weight 1.

        Globals fitted to the first rows (``initial_globals_are_data``), or
        adopted from a fit elsewhere (``all_data=True``), keep an initial
        part of zero: all of them is data.
        """
        st = est._svi
        for name in st.settings.names:
            if name in st.settings.row_groups or name in st.settings.hierarchical:
                continue
            prior, current = st.prior[name], est.natural_params_[name]
            self.parts[name] = tuple(
                np.zeros_like(np.asarray(c)) if all_data else np.asarray(c) - p
                for p, c in zip(prior, current)
            )
            self.weight[name] = 1.0
            self.nonzero[name] = any(np.any(part != 0) for part in self.parts[name])

    def decay(self, rho):
        """An accepted step of size ``rho``: the initial parts fade by ``1 - rho``."""
        for name in self.weight:
            self.weight[name] *= 1.0 - rho

    def next_total(self, est, n_seen):
        """``N`` of the next step, ``n_seen`` samples seen including its minibatch."""
        st = est._svi
        weights = [self.weight[name] for name in self.parts if self.nonzero.get(name)]
        if not weights:
            return float(n_seen)
        rho = min(st.schedule(est.n_batch_iter_ + 1) * st.safety.backoff, 1.0)
        remaining = max(weights) * (1.0 - rho)
        return float(n_seen) / max(1.0 - remaining, 1e-12)

    def step_total(self, est, n_seen, seen_before):
        """``N`` for the step about to be taken, the data part rescaled to it first."""
        total = self.next_total(est, n_seen)
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
                est.natural_params_[name] = st.as_factor(name, scaled)
