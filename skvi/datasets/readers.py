"""Readers for the standard formats of ratings, bag-of-words and LIBSVM data.

Every reader refuses a file that is not in its format with a ValueError that
names the file (and the line, where there is one) and says what a valid file
is, rather than reading it in another way: fields that are missing or empty,
numbers that are NaN, infinite or negative where a count is meant, ids that
are not exact integers, and truncated or corrupt ``.gz`` / ``.bz2`` files.
"""

import io
import math
import os
import warnings

import numpy as np
import scipy.sparse as sp

from ._validation import MAX_INDEX, check_count, check_finite, named_errors, open_text

__all__ = ["read_ldac", "read_libsvm", "read_movielens", "read_uci_bag_of_words"]


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


_RATINGS_VALID = (
    "a MovieLens ratings file has one rating per line: the user id, the item id, the "
    "rating and (optionally) the timestamp, ids and timestamps integers in the int64 "
    "range and ratings finite numbers, separated by tabs (u.data), by '::' "
    "(ratings.dat) or by commas after the header userId,movieId,rating,timestamp "
    "(ratings.csv)"
)


def _read_ratings(path):
    """(X, y, timestamps) of a MovieLens ratings file or folder; timestamps may be None."""
    path = _ratings_file(path)
    with named_errors(path, _RATINGS_VALID), open_text(path) as fh:
        first = fh.readline()
        header = first.lower().startswith("userid")
        sample = fh.readline() if header else first
        if header:
            sep = ","
        elif "::" in sample:
            sep = "::"
        elif "\t" in sample:
            sep = "\t"
        else:
            sep = None  # whitespace: no field can be empty
        if not sample.strip():
            raise ValueError(f"{path}: no ratings (line {1 + header} is empty); {_RATINGS_VALID}.")
        n_fields = len(sample.split(sep))
        if n_fields < 3:  # checked on the first line, before the file is read
            raise ValueError(
                f"{path}, line {1 + header}: {n_fields} fields, not a MovieLens ratings line; "
                f"{_RATINGS_VALID}."
            )
        text = sample + fh.read()
    if sep == "::":
        text, sep = text.replace("::", "\t"), "\t"
    # Ids and timestamps are read as int64 (an id of 1e30 or 2**63, an empty
    # field or NaN is refused, never wrapped); ratings as float64.
    names = ("user", "item", "rating", "timestamp")[: min(n_fields, 4)]
    dtype = [(n, np.float64 if n == "rating" else np.int64) for n in names]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            # numpy 1.23 still reads "1.5" as the int 1, with a DeprecationWarning.
            warnings.simplefilter("error", DeprecationWarning)
            table = np.loadtxt(
                io.StringIO(text),
                dtype=dtype,
                delimiter=sep,
                usecols=range(len(names)),
                comments=None,
                ndmin=1,
            )
    except (ValueError, OverflowError, DeprecationWarning) as exc:
        raise ValueError(
            f"{path}: not a MovieLens ratings file ({exc}); {_RATINGS_VALID}."
        ) from None
    if table.shape[0] == 0:
        raise ValueError(f"{path}: no ratings; {_RATINGS_VALID}.")
    X = np.column_stack([table["user"], table["item"]])
    y = np.ascontiguousarray(table["rating"])
    check_finite(y, path, "rating")
    stamps = np.ascontiguousarray(table["timestamp"]) if "timestamp" in names else None
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
        The ratings file (optionally compressed, ``.gz`` or ``.bz2``), or a
        folder holding one (``u.data``, ``ratings.dat`` or ``ratings.csv``,
        looked for in this order).

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
        If the file is not one of the three layouts, naming the file: a line
        with a missing or empty field, a user or item id (or timestamp) that
        is not written as an integer of the int64 range (``1.5``, ``1.0``,
        ``1e30``, ``2**63``, ``nan``: ids are never rounded nor wrapped), a
        rating that is NaN or infinite, no ratings at all, or a truncated or
        corrupt compressed file.

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


_LDAC_VALID = (
    "an lda-c file has one line per document, 'N id:count ...' with its N distinct word "
    "ids (integers from 0) and their counts (finite, non-negative); an empty document "
    "is the line '0'"
)


def read_ldac(path, n_words=None):
    """Read a corpus in Blei's lda-c format: ``N w1:c1 w2:c2 ...`` per document.

    Line ``d`` of the file is document ``d``, row ``d`` of the matrix: ``N``
    is the number of distinct words that follow, each as ``id:count`` with
    ids from 0.  An empty document is the line ``0`` (it is a row of zeros,
    wherever it is, trailing ones included).  A blank line is not a
    document: it is refused, as it would shift every later row against the
    corpus it came from.

    Parameters
    ----------
    path : str or path-like
        The ``.ldac`` / ``.dat`` file (optionally compressed, ``.gz`` or
        ``.bz2``).
    n_words : int or None, default=None
        Vocabulary size; None uses the largest word index plus one.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_words)
        Word counts (float64), ready for
        :class:`skvi.SVILatentDirichletAllocation`.

    Raises
    ------
    ValueError
        If a line is blank or not ``N id:count ...`` with ``N`` pairs, an id
        is not an integer in ``[0, n_words)`` (with ``n_words=None``, below
        2**31 - 1), a count is negative, NaN or infinite, or a compressed
        file is truncated or corrupt; the message names the file and the
        line.

    Examples
    --------
    >>> import tempfile, os
    >>> from skvi.datasets import read_ldac
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.ldac")
    >>> _ = open(path, "w").write("2 0:3 4:1\\n1 2:2\\n0\\n")
    >>> read_ldac(path).toarray()
    array([[3., 0., 0., 0., 1.],
           [0., 0., 2., 0., 0.],
           [0., 0., 0., 0., 0.]])
    """
    if n_words is not None:
        n_words = check_count(n_words, "n_words")
    width = MAX_INDEX if n_words is None else n_words
    rows, cols, vals = [], [], []
    n_docs = 0
    with named_errors(path, _LDAC_VALID), open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            where = f"{path}, line {number}"
            parts = line.split()
            if not parts:
                raise ValueError(f"{where}: a blank line is not a document; {_LDAC_VALID}.")
            try:
                n = int(parts[0])
                pairs = [p.split(":") for p in parts[1:]]
                ids = [int(w) for w, _ in pairs]
                counts = [float(c) for _, c in pairs]
            except ValueError:
                raise ValueError(f"{where}: not 'N id:count ...'; {_LDAC_VALID}.") from None
            if n != len(pairs):
                raise ValueError(f"{where}: not 'N w:c ...' with N pairs ({n} for {len(pairs)}).")
            if ids and (min(ids) < 0 or max(ids) >= width):
                bad = min(ids) if min(ids) < 0 else max(ids)
                raise ValueError(f"{where}: the word index {bad} is outside [0, {width}).")
            if not all(math.isfinite(c) and c >= 0 for c in counts):
                bad = next(c for c in counts if not (math.isfinite(c) and c >= 0))
                raise ValueError(
                    f"{where}: the count {bad}; counts are finite and non-negative numbers."
                )
            rows.extend([n_docs] * n)
            cols.extend(ids)
            vals.extend(counts)
            n_docs += 1
    if n_words is None:
        width = max(cols) + 1 if cols else 0
    return sp.csr_matrix(
        (
            np.asarray(vals, dtype=np.float64),
            (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)),
        ),
        shape=(n_docs, width),
    )


_UCI_VALID = (
    "a UCI docword file has three header lines, the integers D (documents), W (words) "
    "and NNZ, then NNZ lines 'docID wordID count' of integers, ids from 1 and counts "
    "non-negative"
)


def _uci_header(fh, path):
    """(D, W, NNZ) of a docword file's header, checked before the lines are read."""
    lines = [fh.readline() for _ in range(3)]
    try:
        n_docs, n_words, nnz = (int(line) for line in lines)
    except ValueError:
        raise ValueError(
            f"{path}: the three header lines D, W, NNZ are missing or not integers "
            f"({''.join(lines)[:80]!r}); {_UCI_VALID}."
        ) from None
    n_docs = check_count(n_docs, "D (the first header line)", path)
    n_words = check_count(n_words, "W (the second header line)", path)
    if not 0 <= nnz <= n_docs * n_words:
        raise ValueError(
            f"{path}: NNZ (the third header line) is {nnz}, not between 0 and D x W = "
            f"{n_docs * n_words}; {_UCI_VALID}."
        )
    return n_docs, n_words, nnz


def read_uci_bag_of_words(docword_path, vocab_path=None):
    """Read the UCI bag-of-words format: ``docword.*.txt`` (and ``vocab.*.txt``).

    ``docword`` holds three header lines (documents D, words W, non-zeros
    NNZ) then one ``docID wordID count`` triple per line, both ids from 1.
    A corpus of no counts (NNZ = 0: the header alone) is read as a matrix
    of zeros.

    Parameters
    ----------
    docword_path : str or path-like
        The ``docword`` file (optionally compressed, ``.gz`` or ``.bz2``).
    vocab_path : str or path-like or None, default=None
        The ``vocab`` file, one word per line in wordID order.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (D, W)
        Word counts (float64).
    vocabulary : list of str or None
        The words, when ``vocab_path`` is given.

    Raises
    ------
    ValueError
        If the header is not three integers (D and W in ``[0, 2**31 - 1]``,
        NNZ in ``[0, D x W]``: checked before the counts are read), the file
        does not have NNZ lines of three integers, an id is outside ``1..D``
        or ``1..W``, a count is negative, the vocabulary does not have W
        words (or has a blank line among them), or a compressed file is
        truncated or corrupt; the message names the file.

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
    with named_errors(docword_path, _UCI_VALID), open_text(docword_path) as fh:
        n_docs, n_words, nnz = _uci_header(fh, docword_path)
        if nnz == 0:  # the header alone: loadtxt would read "no data" as one column
            n_lines = sum(1 for line in fh if line.strip())
            data = np.zeros((0, 3), dtype=np.int64)
            if n_lines:
                raise ValueError(
                    f"{docword_path}: expected 0 lines 'docID wordID count', got {n_lines}."
                )
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
                    warnings.simplefilter("error", DeprecationWarning)  # numpy 1.23: "1.5" as 1
                    data = np.loadtxt(fh, dtype=np.int64, ndmin=2)
            except (ValueError, OverflowError, DeprecationWarning) as exc:
                raise ValueError(
                    f"{docword_path}: after the header, not lines of three integers ({exc}); "
                    f"{_UCI_VALID}."
                ) from None
    if data.shape[0] and data.shape[1] != 3:
        raise ValueError(
            f"{docword_path}: lines of {data.shape[1]} numbers, not 'docID wordID count'; "
            f"{_UCI_VALID}."
        )
    if data.shape[0] != nnz:
        raise ValueError(
            f"{docword_path}: expected {nnz} lines 'docID wordID count', got {data.shape[0]}."
        )
    if nnz and (data[:, :2].min() < 1 or data[:, 0].max() > n_docs or data[:, 1].max() > n_words):
        raise ValueError(f"{docword_path}: an id is outside 1..D or 1..W.")
    if nnz and data[:, 2].min() < 0:
        raise ValueError(f"{docword_path}: the count {data[:, 2].min()} is negative; {_UCI_VALID}.")
    X = sp.csr_matrix(
        (data[:, 2].astype(np.float64), (data[:, 0] - 1, data[:, 1] - 1)), shape=(n_docs, n_words)
    )
    vocabulary = None
    if vocab_path is not None:
        with named_errors(vocab_path, "a vocab file has one word per line"):
            with open_text(vocab_path) as fh:
                vocabulary = [line.strip() for line in fh]
        while vocabulary and not vocabulary[-1]:
            vocabulary.pop()  # trailing blank lines
        if "" in vocabulary:
            raise ValueError(
                f"{vocab_path}, line {vocabulary.index('') + 1}: a blank line, where each "
                "line is the word of the next column."
            )
        if len(vocabulary) != n_words:
            raise ValueError(f"{vocab_path}: {len(vocabulary)} words for W = {n_words}.")
    return X, vocabulary


_LIBSVM_VALID = (
    "a LIBSVM/svmlight file has one line 'label index:value ...' per row, with "
    "increasing integer indices from 1 (or 0) below 2**31 and finite numbers"
)


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
    ValueError
        If the file is not one scikit-learn's reader can read (a malformed
        line, a feature index of 2**31 or more, more features than
        ``n_features``), a value or label is NaN or infinite, or a
        compressed file is truncated or corrupt; the message names the file.

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
    if n_features is not None:
        n_features = check_count(n_features, "n_features")
    with named_errors(path, _LIBSVM_VALID):
        try:
            X, y = load_svmlight_file(path, n_features=n_features, dtype=np.float64)
        except (ValueError, OverflowError) as exc:  # a malformed line, an index beyond int32
            if isinstance(exc, UnicodeDecodeError):
                raise
            raise ValueError(
                f"{path}: not a LIBSVM/svmlight file ({type(exc).__name__}: {exc}); "
                f"{_LIBSVM_VALID}."
            ) from None
    check_finite(X.data, path, "feature value")
    check_finite(y, path, "label")
    X = sp.csr_matrix(X, dtype=np.float64)
    if X.nnz < np.iinfo(np.int32).max and max(X.shape) < np.iinfo(np.int32).max:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X, np.asarray(y, dtype=np.float64)
