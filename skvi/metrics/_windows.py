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
with array arithmetic.  The windows times words occurrence matrix is built
from these intervals, and its Gram matrix counts co-occurrences.
"""

import itertools

import numpy as np
import scipy.sparse as sp

__all__ = ["encode_texts", "window_cooccurrences"]

#: Most window-word entries held at once; larger corpora are counted in
#: groups of whole documents, which bounds the memory.
_MAX_ENTRIES = 1 << 22


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


def window_cooccurrences(codes, lengths, n_words, window_size, counting="gensim"):
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
    counts : ndarray of int64 of shape (n_words, n_words)
        ``counts[i, j]``: windows in which words ``i`` and ``j`` both occur;
        ``counts[i, i]``: windows in which word ``i`` occurs.
    """
    n_docs = lengths.shape[0]
    windows_of = np.maximum(lengths - window_size + 1, 1)
    n_windows = int(windows_of.sum())
    doc_end = np.cumsum(lengths)
    doc_start = doc_end - lengths
    window_start = np.cumsum(windows_of) - windows_of

    # The counted tokens in (word, position in the corpus) order.
    where = np.flatnonzero(codes >= 0)
    order = np.argsort(codes[where], kind="stable")
    where = where[order]
    word = codes[where]
    doc = np.searchsorted(doc_end, where, side="right")
    pos = where - doc_start[doc]

    # The next token of the same word in the same document, if any.
    no_next = np.iinfo(np.int64).max // 4
    nxt = np.full(word.shape, no_next)
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
    span = np.maximum(last - first + 1, 0)

    # Count in groups of whole documents (intervals never cross one).
    by_doc = np.argsort(doc, kind="stable")
    doc, word, first, span = doc[by_doc], word[by_doc], first[by_doc], span[by_doc]
    per_doc = np.bincount(doc, weights=span, minlength=n_docs).cumsum()
    counts = np.zeros((n_words, n_words), dtype=np.int64)
    lo = 0
    while lo < n_docs:
        base = per_doc[lo - 1] if lo else 0.0
        hi = max(int(np.searchsorted(per_doc, base + _MAX_ENTRIES, side="right")), lo + 1)
        a, b = np.searchsorted(doc, [lo, hi])
        counts += _gram(
            word[a:b],
            window_start[doc[a:b]] + first[a:b] - window_start[lo],
            span[a:b],
            int(window_start[hi - 1] + windows_of[hi - 1] - window_start[lo]),
            n_words,
        )
        lo = hi
    return n_windows, counts


def _gram(word, start, span, n_rows, n_words):
    """``M^T M`` for the windows-by-words 0/1 matrix M with word runs [start, start + span)."""
    total = int(span.sum())
    if total == 0:
        return np.zeros((n_words, n_words), dtype=np.int64)
    offset = np.cumsum(span) - span
    rows = np.repeat(start - offset, span) + np.arange(total)
    cols = np.repeat(word, span)
    occurs = sp.csr_matrix((np.ones(total, dtype=np.int64), (rows, cols)), shape=(n_rows, n_words))
    return (occurs.T @ occurs).toarray()
