"""Readers for the standard formats of ratings, bag-of-words and LIBSVM data."""

import gzip
import io
import os
import warnings

import numpy as np
import scipy.sparse as sp

__all__ = ["read_ldac", "read_libsvm", "read_movielens", "read_uci_bag_of_words"]


def _open(path):
    path = os.fspath(path)
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


#: The ratings file of each MovieLens layout, looked for in this order in a folder.
MOVIELENS_RATINGS = ("u.data", "ratings.dat", "ratings.csv")


def _ratings_file(path):
    """``path``, or the ratings file inside it when it is a release's folder."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return path
    for name in MOVIELENS_RATINGS:
        for candidate in (os.path.join(path, name), os.path.join(path, name + ".gz")):
            if os.path.isfile(candidate):
                return candidate
    raise FileNotFoundError(
        f"{path} is a folder without a MovieLens ratings file (looked for "
        f"{', '.join(MOVIELENS_RATINGS[:-1])} or {MOVIELENS_RATINGS[-1]}, optionally .gz)."
    )


def _read_ratings(path):
    """(X, y, timestamps) of a MovieLens ratings file or folder; timestamps may be None."""
    path = _ratings_file(path)
    with _open(path) as fh:
        first = fh.readline()
        rest = fh.read()
    if "::" in first:
        text = (first + rest).replace("::", "\t")
    elif first.lower().startswith("userid"):  # the CSV header
        text = rest.replace(",", "\t")
    else:
        text = first + rest
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            table = np.loadtxt(io.StringIO(text), dtype=np.float64, ndmin=2, comments=None)
    except ValueError as exc:
        raise ValueError(f"{path}: not a MovieLens ratings file ({exc}).") from None
    if table.shape[0] == 0 or table.shape[1] < 3:
        raise ValueError(f"{path}: not a MovieLens ratings file (user, item, rating per line).")
    ids = table[:, :2]
    if not np.all(np.isfinite(ids)) or np.any(ids != np.round(ids)):
        raise ValueError(f"{path}: a user or item id is not an integer.")
    X = ids.astype(np.int64)
    y = np.ascontiguousarray(table[:, 2])
    stamps = table[:, 3].astype(np.int64) if table.shape[1] > 3 else None
    return X, y, stamps


def read_movielens(path):
    """Read MovieLens ratings: ``u.data``, ``ratings.dat`` or ``ratings.csv``.

    The three layouts GroupLens ships: tab-separated ``user item rating
    timestamp`` (100k), ``user::item::rating::timestamp`` (1M, 10M), and a
    CSV with the header ``userId,movieId,rating,timestamp`` (20M and
    later).  The layout is told by the file's first line.  A release's
    folder (``ml-100k/``, ``ml-1m/``, ...) may be given instead of the file:
    its ratings file is read.  :func:`skvi.datasets.fetch_movielens` also
    downloads a release and returns its splits and titles.

    Parameters
    ----------
    path : str or path-like
        The ratings file (optionally gzip-compressed, ``.gz``), or a folder
        holding one (``u.data``, ``ratings.dat`` or ``ratings.csv``, looked
        for in this order).

    Returns
    -------
    X : ndarray of shape (n_ratings, 2)
        (user, item) ids, int64, as in the file: ready for
        :class:`skvi.SVIMatrixFactorization`.
    y : ndarray of shape (n_ratings,)
        The ratings, float64.

    Raises
    ------
    FileNotFoundError
        If ``path`` is a folder without a ratings file.
    ValueError
        If the file is not one of the three layouts.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_movielens
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "ratings.dat")
    >>> _ = open(path, "w").write("1::10::4::978300760\\n2::10::5::978302109\\n")
    >>> X, y = read_movielens(path)
    >>> X.tolist(), y.tolist()
    ([[1, 10], [2, 10]], [4.0, 5.0])
    >>> read_movielens(folder)[1].tolist()  # the folder that holds it
    [4.0, 5.0]
    """
    X, y, _ = _read_ratings(path)
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
            raise ValueError(
                f"{docword_path}: the three header lines D, W, NNZ are missing."
            ) from None
        data = np.loadtxt(fh, dtype=np.int64, ndmin=2)
    if data.shape != (nnz, 3):
        raise ValueError(
            f"{docword_path}: expected {nnz} lines 'docID wordID count', got {data.shape[0]}."
        )
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


def read_libsvm(path, n_features=None):
    """Read a LIBSVM / svmlight file: ``label index:value ...`` per line.

    The format of the LIBSVM data sets page (a9a, covtype, rcv1, ...), read
    by scikit-learn's :func:`~sklearn.datasets.load_svmlight_file` with its
    defaults (``#`` comments are skipped; whether the feature indices start
    at 0 or 1 is told from the file: 1-based unless some index is 0).  The
    matrix is returned as scikit-learn's estimators want it: CSR with
    float64 values and int32 ``indices`` and ``indptr`` (scikit-learn's
    :class:`~sklearn.linear_model.LogisticRegression` rejects a CSR matrix
    with 64-bit indices, which ``load_svmlight_file`` returns); int64 is
    kept only for a matrix too large for int32.

    Parameters
    ----------
    path : str or path-like
        The file; a name ending in ``.gz`` or ``.bz2`` is decompressed, as
        ``load_svmlight_file`` does.
    n_features : int or None, default=None
        Number of columns; None uses the largest feature index in the file.
        Give it when a file lacks the last features (a9a's test file
        ``a9a.t`` never uses feature 123 of 123).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        The features, float64, with int32 indices.
    y : ndarray of shape (n_samples,)
        The labels as in the file, float64 (LIBSVM's binary sets use -1 and
        +1: ``(y > 0).astype(int)`` gives 0/1 classes).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist; the message names it and where skvi's
        examples look for data (:func:`skvi.datasets.get_data_home`).

    See Also
    --------
    sklearn.datasets.load_svmlight_file : The reader used.
    skvi.datasets.get_data_home : The folder of the larger data sets.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_libsvm
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.libsvm")
    >>> _ = open(path, "w").write("+1 1:0.5 3:2\\n-1 2:1\\n")
    >>> X, y = read_libsvm(path, n_features=4)
    >>> X.toarray()
    array([[0.5, 0. , 2. , 0. ],
           [0. , 1. , 0. , 0. ]])
    >>> y, X.indices.dtype
    (array([ 1., -1.]), dtype('int32'))
    """
    from sklearn.datasets import load_svmlight_file

    path = os.fspath(path)
    if not os.path.exists(path):
        from . import get_data_home

        raise FileNotFoundError(
            f"{path} not found: read_libsvm needs an existing LIBSVM/svmlight file "
            "(optionally .gz or .bz2).  skvi's examples and benchmarks read their data "
            f"sets from skvi.datasets.get_data_home(), now {get_data_home()}: set the "
            "environment variable SKVI_DATA to the folder that holds them, or pass "
            "data_home=... to get_data_home(), and build the path from it."
        )
    X, y = load_svmlight_file(path, n_features=n_features, dtype=np.float64)
    X = sp.csr_matrix(X, dtype=np.float64)
    if X.nnz < np.iinfo(np.int32).max and max(X.shape) < np.iinfo(np.int32).max:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X, np.asarray(y, dtype=np.float64)
