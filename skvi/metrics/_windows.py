"""Word occurrences in the sliding windows of tokenised texts (for c_v coherence).

Röder, Both and Hinneburg ("Exploring the space of topic coherence
measures") estimate word probabilities by boolean sliding windows: a window
of ``window_size`` consecutive tokens moves over each document one token
per step, every window is a virtual document, and a word occurs in it when
one of its tokens does.  A document of ``L <= window_size`` tokens is one
window (an empty document too, as gensim counts it).

The counts are computed without a loop over documents or windows: every
window in which a word occurs is assigned to the last of the word's tokens
inside it, so each token covers an interval of consecutive windows, found
with array arithmetic.  A word's intervals merge into runs of consecutive
windows.  The windows two words share are counted from the runs of the
word with fewer runs, each intersected with the other word's runs through
the cumulative count of its windows (a binary search at each end of a run), so
the cost grows with the number of runs, not with the number of windows.
"""

import itertools

import numpy as np

__all__ = ["encode_texts", "window_cooccurrences"]

#: Most run intersections computed at once; more are computed in groups of
#: word pairs, which bounds the memory.
_MAX_QUERIES = 1 << 22


def encode_texts(texts, tokens):
    """Each token of ``texts`` as its index in ``tokens`` (-1 if absent), and the lengths.

    Parameters
    ----------
    texts : iterable of sequences of str
        The tokenised documents.
    tokens : sequence of str
        Distinct tokens whose occurrences are counted.

    Returns
    -------
    codes : ndarray of int64 of shape (n_tokens,)
        The documents' tokens one after the other.
    lengths : ndarray of int64 of shape (n_docs,)
        The number of tokens of each document.
    """
    if isinstance(texts, (str, bytes)) or not hasattr(texts, "__iter__"):
        raise TypeError(
            "texts must be a list of documents, each a list of tokens (str); got "
            f"{type(texts).__name__}."
        )
    docs = list(texts)
    if not docs:
        raise ValueError("texts is empty: c_v coherence needs at least one document.")
    sequence = (list, tuple, np.ndarray)
    if not all(issubclass(kind, sequence) for kind in set(map(type, docs))):
        first = next(i for i, doc in enumerate(docs) if not isinstance(doc, sequence))
        raise TypeError(
            "texts must be a list of documents, each a list of tokens (str); document "
            f"{first} is a {type(docs[first]).__name__}."
        )
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    flat = list(itertools.chain.from_iterable(docs))
    if not all(issubclass(kind, str) for kind in set(map(type, flat))):
        at = next(i for i, token in enumerate(flat) if not isinstance(token, str))
        doc = int(np.searchsorted(np.cumsum(lengths), at, side="right"))
        raise TypeError(
            f"texts must hold tokens of type str; document {doc} holds a "
            f"{type(flat[at]).__name__} ({flat[at]!r})."
        )
    if not flat:
        raise ValueError("texts hold no tokens: every document is empty.")
    lookup = {token: i for i, token in enumerate(tokens)}
    codes = np.fromiter(
        map(lookup.get, flat, itertools.repeat(-1, len(flat))), dtype=np.int64, count=len(flat)
    )
    return codes, lengths


def window_cooccurrences(codes, lengths, n_words, window_size, pairs, counting="gensim"):
    """Count the sliding windows and the windows in which words (co-)occur.

    Parameters
    ----------
    codes : ndarray of int64 of shape (n_tokens,)
        Word index of every token in ``[0, n_words)``, or -1 for a token not
        counted; the documents one after the other.
    lengths : ndarray of int64 of shape (n_docs,)
        The number of tokens of each document.
    n_words : int
        Number of counted words.
    window_size : int
        Tokens per window.
    pairs : tuple of two ndarrays of int64 of shape (n_pairs,)
        The word pairs whose shared windows are counted.
    counting : {'gensim', 'boolean'}, default='gensim'
        ``'boolean'``: a word occurs in a window when one of its tokens
        lies in it.  ``'gensim'``: as gensim's ``WordOccurrenceAccumulator``
        (gensim 4), which updates the set of words of a window as it slides
        by removing the word of the token that leaves and adding the word of
        the token that enters; a word whose token leaves is therefore
        missing from the following windows, though another of its tokens is
        still inside, until one of its tokens enters.

    Returns
    -------
    n_windows : int
        ``sum_d max(1, L_d - window_size + 1)``.
    occurrences : ndarray of int64 of shape (n_words,)
        The number of windows in which each word occurs.
    joint : ndarray of int64 of shape (n_pairs,)
        The number of windows in which both words of each pair occur.
    """
    windows_of = np.maximum(lengths - window_size + 1, 1)
    n_windows = int(windows_of.sum())
    doc_end = np.cumsum(lengths)
    doc_start = doc_end - lengths
    window_start = np.cumsum(windows_of) - windows_of

    # The counted tokens in (word, position in the corpus) order.
    where = np.flatnonzero(codes >= 0)
    where = where[np.argsort(codes[where], kind="stable")]
    word = codes[where]
    doc = np.searchsorted(doc_end, where, side="right")
    pos = where - doc_start[doc]

    # The next token of the same word in the same document, if any.
    nxt = np.full(word.shape, np.iinfo(np.int64).max // 4)
    same = (word[1:] == word[:-1]) & (doc[1:] == doc[:-1])
    nxt[:-1][same] = pos[1:][same]

    # Token p is the word's last token in the windows k with p - W + 1 <= k
    # <= p (it lies in them) and k <= next - W (the next token does not).
    first = np.maximum(pos - window_size + 1, 0)
    last = np.minimum(nxt - window_size, windows_of[doc] - 1)
    if counting == "gensim":
        # gensim sets the word when token p enters (at window `first`) and
        # clears it when any of its tokens leaves; the first token of the
        # word at or after position `first` leaves after window `earliest`.
        key = word * codes.shape[0] + where
        earliest = pos[np.searchsorted(key, key - pos + first)]
        last = np.minimum(last, earliest)
    else:
        last = np.minimum(last, pos)
    keep = last >= first
    word = word[keep]
    start = window_start[doc[keep]] + first[keep]
    end = window_start[doc[keep]] + last[keep]

    # Merge each word's intervals, disjoint and in order, into runs.
    opens = np.ones(word.shape, dtype=bool)
    opens[1:] = (word[1:] != word[:-1]) | (start[1:] != end[:-1] + 1)
    closes = np.ones(word.shape, dtype=bool)
    closes[:-1] = opens[1:]
    run_word, run_start, run_end = word[opens], start[opens], end[closes]
    run_total = np.concatenate([[0], np.cumsum(run_end - run_start + 1)])
    run_of = np.searchsorted(run_word, np.arange(n_words + 1))
    occurrences = run_total[run_of[1:]] - run_total[run_of[:-1]]
    run_key = run_word * (n_windows + 1) + run_start

    def windows_up_to(w, t):
        """Windows ``<= t`` in which word ``w`` occurs (``t >= -1``)."""
        at = np.searchsorted(run_key, w * (n_windows + 1) + t, side="right") - 1
        inside = at >= run_of[w]
        at = np.where(inside, at, run_of[w])  # any valid index; masked below
        covered = run_total[at + 1] - run_total[run_of[w]] - np.maximum(run_end[at] - t, 0)
        return np.where(inside, covered, 0)

    # Each pair is counted over the runs of its word with fewer runs.
    u, v = pairs
    n_runs = np.diff(run_of)
    swap = n_runs[u] > n_runs[v]
    u, v = np.where(swap, v, u), np.where(swap, u, v)
    queries = n_runs[u]
    joint = np.zeros(u.shape, dtype=np.int64)
    done = 0
    while done < u.shape[0]:
        upto = np.cumsum(queries[done:])
        stop = done + max(int(np.searchsorted(upto, _MAX_QUERIES, side="right")), 1)
        counts = queries[done:stop]
        pair = np.repeat(np.arange(stop - done), counts)
        run = np.repeat(run_of[u[done:stop]] - (np.cumsum(counts) - counts), counts)
        run += np.arange(pair.shape[0])
        other = v[done:stop][pair]
        shared = windows_up_to(other, run_end[run]) - windows_up_to(other, run_start[run] - 1)
        joint[done:stop] = np.bincount(pair, weights=shared, minlength=stop - done).round()
        done = stop
    return n_windows, occurrences, joint
