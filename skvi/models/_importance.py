"""Importance sampling of a document's evidence, shared by the topic models.

What :func:`skvi.models.lda.evidence.lda_log_evidence` and
:func:`skvi.models.ctm.evidence.ctm_log_evidence` have in common: the
average of the weights over chunks of draws, and the checks of their
arguments.
"""

import numbers

import numpy as np
from scipy.special import logsumexp

#: Entries of one chunk of importance draws.
CHUNK_ENTRIES = 2**22


def importance_average(log_weights, n_samples, entries_per_draw):
    """``log mean_s exp(w_s)`` of ``n_samples`` draws, made in chunks of bounded memory."""
    chunk = max(1, CHUNK_ENTRIES // max(entries_per_draw, 1))
    parts = [log_weights(min(chunk, n_samples - start)) for start in range(0, n_samples, chunk)]
    return logsumexp(np.concatenate(parts, axis=0), axis=0) - np.log(n_samples)


def check_sampling(n_samples, inflation, whom):
    if not (
        isinstance(n_samples, numbers.Integral)
        and not isinstance(n_samples, bool)
        and n_samples >= 1
    ):
        raise ValueError(f"n_samples passed to {whom} must be a positive int, got {n_samples!r}.")
    if not (isinstance(inflation, numbers.Real) and 0 <= inflation < np.inf):
        raise ValueError(
            f"inflation passed to {whom} must be a finite non-negative number, got {inflation!r}."
        )


def check_topics(topic_word, n_words, whom):
    beta = np.asarray(topic_word, dtype=np.float64)
    if beta.ndim != 2 or beta.shape[1] != n_words or beta.shape[0] < 2:
        raise ValueError(
            f"topic_word passed to {whom} must have shape (n_topics >= 2, {n_words}); "
            f"got {beta.shape}."
        )
    if not (np.all(beta > 0) and np.allclose(beta.sum(axis=1), 1.0, rtol=1e-6)):
        raise ValueError(f"topic_word passed to {whom} must hold positive rows that sum to 1.")
    return beta
