"""Readers for the standard formats of ratings and bag-of-words data."""

import gzip
import os

import numpy as np
import scipy.sparse as sp

__all__ = ["read_ldac", "read_movielens", "read_uci_bag_of_words"]


def _open(path):
    path = os.fspath(path)
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def read_movielens(path):
    """Read MovieLens ratings: ``u.data``, ``ratings.dat`` or ``ratings.csv``.

    The three layouts GroupLens ships: tab-separated ``user item rating
    timestamp`` (100k), ``user::item::rating::timestamp`` (1M, 10M), and a
    CSV with the header ``userId,movieId,rating,timestamp`` (20M and
    later).  The layout is told by the file's first line.

    Parameters
    ----------
    path : str or path-like
        The ratings file (optionally gzip-compressed, ``.gz``).

    Returns
    -------
    X : ndarray of shape (n_ratings, 2)
        (user, item) ids, int64, as in the file: ready for
        :class:`skvi.SVIMatrixFactorization`.
    y : ndarray of shape (n_ratings,)
        The ratings, float64.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_movielens
    >>> path = os.path.join(tempfile.mkdtemp(), "ratings.dat")
    >>> _ = open(path, "w").write("1::10::4::978300760\\n2::10::5::978302109\\n")
    >>> X, y = read_movielens(path)
    >>> X.tolist(), y.tolist()
    ([[1, 10], [2, 10]], [4.0, 5.0])
    """
    with _open(path) as fh:
        first = fh.readline()
        rest = fh.read()
    if "::" in first:
        text, sep = first + rest, "::"
    elif first.lower().startswith("userid"):  # the CSV header
        text, sep = rest, ","
    else:
        text, sep = first + rest, None
    rows = [line.split(sep) for line in text.splitlines() if line.strip()]
    if not rows or any(len(r) < 3 for r in rows):
        raise ValueError(f"{path}: not a MovieLens ratings file (user, item, rating per line).")
    try:
        X = np.array([[int(r[0]), int(r[1])] for r in rows], dtype=np.int64)
        y = np.array([float(r[2]) for r in rows], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: unreadable rating line ({exc}).") from None
    return X, y


def read_ldac(path, n_words=None):
    """Read a corpus in Blei's lda-c format: ``M w1:c1 w2:c2 ...`` per document.

    Parameters
    ----------
    path : str or path-like
        The ``.ldac`` / ``.dat`` file (optionally ``.gz``).
    n_words : int or None, default=None
        Vocabulary size; None uses the largest word index plus one.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_words)
        Word counts (float64), ready for
        :class:`skvi.SVILatentDirichletAllocation`.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_ldac
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.ldac")
    >>> _ = open(path, "w").write("2 0:3 4:1\\n1 2:2\\n")
    >>> read_ldac(path).toarray()
    array([[3., 0., 0., 0., 1.],
           [0., 0., 2., 0., 0.]])
    """
    rows, cols, vals = [], [], []
    with _open(path) as fh:
        for d, line in enumerate(fh):
            parts = line.split()
            if not parts:
                continue
            pairs = [p.split(":") for p in parts[1:]]
            if int(parts[0]) != len(pairs) or any(len(p) != 2 for p in pairs):
                raise ValueError(f"{path}, line {d + 1}: not 'M w:c ...' with M pairs.")
            for w, c in pairs:
                rows.append(d)
                cols.append(int(w))
                vals.append(float(c))
    n_docs = (rows[-1] + 1) if rows else 0
    width = (max(cols) + 1 if cols else 0) if n_words is None else int(n_words)
    if cols and (min(cols) < 0 or max(cols) >= width):
        raise ValueError(f"{path}: a word index is outside [0, {width}).")
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_docs, width))


def read_uci_bag_of_words(docword_path, vocab_path=None):
    """Read the UCI bag-of-words format: ``docword.*.txt`` (and ``vocab.*.txt``).

    ``docword`` holds three header lines (documents D, words W, non-zeros)
    then one ``docID wordID count`` triple per line, both ids from 1.

    Parameters
    ----------
    docword_path : str or path-like
        The ``docword`` file (optionally ``.gz``).
    vocab_path : str or path-like or None, default=None
        The ``vocab`` file, one word per line in wordID order.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (D, W)
        Word counts (float64).
    vocabulary : list of str or None
        The words, when ``vocab_path`` is given.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_uci_bag_of_words
    >>> path = os.path.join(tempfile.mkdtemp(), "docword.toy.txt")
    >>> _ = open(path, "w").write("2\\n3\\n3\\n1 1 4\\n1 3 1\\n2 2 2\\n")
    >>> X, vocab = read_uci_bag_of_words(path)
    >>> X.toarray(), vocab
    (array([[4., 0., 1.],
           [0., 2., 0.]]), None)
    """
    with _open(docword_path) as fh:
        try:
            n_docs, n_words, nnz = (int(fh.readline()) for _ in range(3))
        except ValueError:
            raise ValueError(f"{docword_path}: the three header lines D, W, NNZ are missing.") from None
        data = np.loadtxt(fh, dtype=np.int64, ndmin=2)
    if data.shape != (nnz, 3):
        raise ValueError(f"{docword_path}: expected {nnz} lines 'docID wordID count', got {data.shape[0]}.")
    if nnz and (data[:, :2].min() < 1 or data[:, 0].max() > n_docs or data[:, 1].max() > n_words):
        raise ValueError(f"{docword_path}: an id is outside 1..D or 1..W.")
    X = sp.csr_matrix(
        (data[:, 2].astype(np.float64), (data[:, 0] - 1, data[:, 1] - 1)), shape=(n_docs, n_words)
    )
    vocabulary = None
    if vocab_path is not None:
        with _open(vocab_path) as fh:
            vocabulary = [line.strip() for line in fh if line.strip()]
        if len(vocabulary) != n_words:
            raise ValueError(f"{vocab_path}: {len(vocabulary)} words for W = {n_words}.")
    return X, vocabulary
