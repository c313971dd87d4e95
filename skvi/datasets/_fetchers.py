"""Fetchers of standard public data sets: MovieLens, LIBSVM's binary sets, UCI bag of words.

Each fetcher looks for the set's files in :func:`skvi.datasets.get_data_home`
(in the set's own folder there, e.g. ``movielens-100k/``, or in the folder
itself), downloads them from the publisher when they are missing, and reads
them with the readers of :mod:`skvi.datasets.readers`.  A download goes to a
temporary folder beside the cache and is kept only once it is checked: the
MD5 checksum GroupLens publishes for MovieLens, else the size announced by
the server and the shape of the parsed data.  What is read is checked
against the published shape wherever it came from: a file already in the
folder (never sent anywhere nor rewritten) is refused with a ValueError
naming it when it is not the published one (too few rows, other labels or
ratings), as a download of the wrong shape is not kept.
"""

import shutil
import zipfile

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._download import (
    DataNotFoundError,
    _check,
    _download,
    _missing,
    _published_md5,
    _Staging,
)
from ._validation import (
    corpus_problem,
    libsvm_problem,
    named_errors,
    open_text,
    ratings_problem,
    refuse,
)
from .readers import _read_ratings, read_libsvm, read_uci_bag_of_words

__all__ = ["DataNotFoundError", "fetch_libsvm", "fetch_movielens", "fetch_uci_bag_of_words"]

#: Where each publisher serves its files (a fetcher adds the file's name).
MOVIELENS_URL = "https://files.grouplens.org/datasets/movielens/"
LIBSVM_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
UCI_BAG_OF_WORDS_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/bag-of-words/"


def _read_checked(read, problem_of, path, what, url=None):
    """``read(path)``, refused unless ``problem_of`` (of what was read) is None.

    A file just downloaded from ``url`` that cannot be read or is not the
    published one raises :class:`OSError` (it is not kept); one found in the
    data folder raises the reader's ValueError, or one naming it and the
    published shape.
    """
    try:
        result = read(path)
    except ValueError as exc:
        if url is None:
            raise
        raise OSError(
            f"{what}: the file downloaded from {url} is not valid ({exc}); it was not kept."
        ) from None
    refuse(problem_of(result), what, path, url)
    return result


# ------------------------------------------------------------------ helpers
def _root(data_home):
    from . import get_data_home

    return get_data_home(data_home)


def _find(root, folder, names):
    """The first of ``root / folder`` and ``root`` that holds a file of every name.

    ``names`` is a sequence of alternatives, one tuple of accepted file names
    per file; returns ``(directory, [path of each file])`` or None.
    """
    for directory in (root / folder, root):
        paths = []
        for accepted in names:
            path = next((directory / n for n in accepted if (directory / n).is_file()), None)
            if path is None:
                break
            paths.append(path)
        else:
            return directory, paths
    return None


# ----------------------------------------------------------------- MovieLens
_MOVIELENS_TERMS = """\
Terms (GroupLens): research use only; acknowledge the use by citing F. Maxwell Harper
and Joseph A. Konstan, "The MovieLens Datasets: History and Context", ACM Transactions
on Interactive Intelligent Systems 5(4), 2015; do not redistribute the data; no
commercial use without permission; no implied endorsement by the University of
Minnesota or GroupLens."""

_MOVIELENS = {
    "100k": dict(
        folder="movielens-100k",
        archive="ml-100k.zip",
        member="ml-100k",
        md5="0e33842e24a9c977be4e0107933c0723",
        ratings="u.data",
        items="u.item",
        splits=tuple(f"u{k}.{part}" for k in range(1, 6) for part in ("base", "test")),
        shape=(100_000, 943, 1682),
        scale=(1.0, 5.0, 1.0),
        about="100,000 ratings (1 to 5 stars) of 1,682 movies by 943 users, collected "
        "from September 1997 to April 1998; every user rated at least 20 movies.",
    ),
    "1m": dict(
        folder="movielens-1m",
        archive="ml-1m.zip",
        member="ml-1m",
        md5="c4d9eecfca2ab87c1945afe126590906",
        ratings="ratings.dat",
        items="movies.dat",
        splits=(),
        shape=(1_000_209, 6040, 3706),
        scale=(1.0, 5.0, 1.0),
        about="1,000,209 ratings (1 to 5 stars) of about 3,900 movies by 6,040 users "
        "who joined MovieLens in 2000; every user rated at least 20 movies.",
    ),
    "latest-small": dict(
        folder="movielens-latest-small",
        archive="ml-latest-small.zip",
        member="ml-latest-small",
        md5=None,  # changes with each release: the published .md5
        ratings="ratings.csv",
        items="movies.csv",
        splits=(),
        shape=None,
        scale=(0.5, 5.0, 0.5),
        about="The small version of GroupLens's latest release (about 100,000 ratings, "
        "0.5 to 5 stars in half stars, of about 9,700 movies by about 600 users); "
        "GroupLens updates it from time to time, so results may change between "
        "downloads.",
    ),
}


def _titles(path):
    """{movie id: title} of ``u.item``, ``movies.dat`` or ``movies.csv``."""
    name = path.name
    if name.endswith(".csv"):
        import csv

        with named_errors(path, "movies.csv is UTF-8 text"), open_text(path) as fh:
            rows = list(csv.reader(fh))[1:]
    else:
        sep = "|" if name.startswith("u.") else "::"
        with open(path, encoding="latin-1") as fh:
            rows = [line.rstrip("\n").split(sep) for line in fh if line.strip()]
    try:
        return {int(row[0]): row[1] for row in rows}
    except (IndexError, ValueError):
        raise ValueError(f"{path}: not a MovieLens movie list (id, title per line).") from None


def _official_folds(folder, X, y, names):
    """(train, test) row indices of ``X`` for each official split, in the files' order."""
    # Each (user, item) pair is keyed by the ranks of its ids, so that no id,
    # however large, can overflow the key and match another pair.
    users, items = np.unique(X[:, 0]), np.unique(X[:, 1])
    keys = np.searchsorted(users, X[:, 0]) * items.size + np.searchsorted(items, X[:, 1])
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    if np.any(ordered[1:] == ordered[:-1]):
        raise ValueError(f"{folder}: a (user, item) pair is rated twice; no splits are made.")

    def rows_of(name):
        Xs, ys, _ = _read_ratings(folder / name)
        u = np.minimum(np.searchsorted(users, Xs[:, 0]), users.size - 1)
        i = np.minimum(np.searchsorted(items, Xs[:, 1]), items.size - 1)
        k = u * items.size + i
        pos = np.minimum(np.searchsorted(ordered, k), ordered.size - 1)
        index = order[pos]
        if not (
            np.array_equal(users[u], Xs[:, 0])
            and np.array_equal(items[i], Xs[:, 1])
            and np.array_equal(ordered[pos], k)
            and np.array_equal(y[index], ys)
        ):
            raise ValueError(f"{folder / name}: a rating is not in the full ratings file.")
        return index

    folds = []
    for base, test in zip(names[::2], names[1::2]):
        train_index, test_index = rows_of(base), rows_of(test)
        seen = np.zeros(X.shape[0], dtype=np.int64)
        np.add.at(seen, train_index, 1)
        np.add.at(seen, test_index, 1)
        if not np.all(seen == 1):
            raise ValueError(f"{folder}: {base} and {test} do not split the ratings in two.")
        folds.append((train_index, test_index))
    return folds


def _download_movielens(variant, spec, folder, what):
    url = MOVIELENS_URL + spec["archive"]
    md5 = spec["md5"] or _published_md5(url + ".md5", what, folder)
    with _Staging(folder) as stage:
        archive = stage.path / spec["archive"]
        _download(url, archive, what, folder, md5=md5, extract=True)
        names = []
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    parts = info.filename.split("/")
                    # Only the plain files of the release's folder (no paths elsewhere).
                    if (
                        len(parts) == 2
                        and parts[0] == spec["member"]
                        and parts[1]
                        and not info.is_dir()
                        and parts[1] not in (".", "..")
                    ):
                        with zf.open(info) as src, open(stage.path / parts[1], "wb") as dst:
                            shutil.copyfileobj(src, dst)
                        names.append(parts[1])
        except zipfile.BadZipFile as exc:
            raise OSError(f"{what}: {url} is not a zip archive ({exc}); it was not kept.") from None
        needed = (spec["ratings"], spec["items"]) + spec["splits"]
        absent = [n for n in needed if n not in names]
        _check(not absent, what, url, f"lacks {', '.join(absent)}")
        _read_release(stage.path, spec, what, url)
        stage.keep(names)


def _read_release(folder, spec, what, url=None):
    """(X, y, timestamps) of the release's ratings file, checked against its shape."""
    return _read_checked(
        _read_ratings, lambda r: ratings_problem(*r, spec), folder / spec["ratings"], what, url
    )


def fetch_movielens(variant="100k", *, data_home=None, download_if_missing=True, return_X_y=False):
    """Load a MovieLens ratings data set (GroupLens), downloading it if needed.

    The ratings of one MovieLens release, as ``(user, item)`` id pairs and
    their ratings, ready for :class:`skvi.SVIMatrixFactorization`; for
    ``'100k'`` also the five official 80/20 splits ``u1`` .. ``u5``.

    ==================  ===========  ======  ======  ==================
    variant             ratings      users   movies  rating scale
    ==================  ===========  ======  ======  ==================
    ``'100k'``          100,000      943     1,682   1 .. 5
    ``'1m'``            1,000,209    6,040   3,706   1 .. 5
    ``'latest-small'``  ~100,000     ~600    ~9,700  0.5 .. 5 (halves)
    ==================  ===========  ======  ======  ==================

    The files are looked for in ``data_home`` (see
    :func:`skvi.datasets.get_data_home`), in the folder ``movielens-100k``,
    ``movielens-1m`` or ``movielens-latest-small`` there, or in
    ``data_home`` itself; they are those of the release's zip archive
    (``u.data``, ``u.item`` and ``u1.base`` .. ``u5.test`` for 100k;
    ``ratings.dat`` and ``movies.dat`` for 1m; ``ratings.csv`` and
    ``movies.csv`` for latest-small).  When missing, the archive is
    downloaded from https://files.grouplens.org/datasets/movielens/, its
    MD5 checksum is checked against GroupLens's, and its files are
    extracted into that folder.  Whether found or downloaded, the ratings
    are checked against the release: the numbers of ratings, users and
    movies of the table, its rating scale (whole stars for 100k and 1m,
    half stars for latest-small), ids from 1 and a timestamp per rating;
    GroupLens publishes the checksum of the archive only, so files found
    already extracted are checked by these numbers.  Note GroupLens's terms
    (in ``DESCR``): the data may not be redistributed.

    Parameters
    ----------
    variant : {'100k', '1m', 'latest-small'}, default='100k'
        The release.
    data_home : str, path-like or None, default=None
        The folder that holds the data sets (or the release's files); None
        uses ``$SKVI_DATA``, else :func:`skvi.datasets.get_data_home`'s
        default.  An explicit folder overrides ``$SKVI_DATA``.
    download_if_missing : bool, default=True
        Download the release when its files are not found; with False a
        missing release raises :class:`DataNotFoundError`.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of the Bunch.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        With the ratings in file order:

        data : ndarray of shape (n_ratings, 2)
            The ``(user id, movie id)`` of each rating, int64, as in the file
            (ids start at 1).
        target : ndarray of shape (n_ratings,)
            The ratings, float64.
        timestamps : ndarray of shape (n_ratings,)
            Unix seconds of each rating, int64.
        user_ids, item_ids : ndarray
            The distinct user and movie ids, sorted.
        item_titles : ndarray of object
            The title of each movie of ``item_ids`` (with its year).
        feature_names : list of str
            ``['user_id', 'item_id']``.
        target_names : list of str
            ``['rating']``.
        filenames : list of str
            The files read: the ratings, the movies, then the splits.
        cv : list of (ndarray, ndarray) or None
            For ``'100k'``, the official splits ``u1`` .. ``u5``: five
            ``(train_index, test_index)`` pairs of row indices into ``data``,
            in the order of the rows of ``uN.base`` and ``uN.test``
            (``data[train_index]`` is ``uN.base``).  The five test sets are
            disjoint and cover all ratings: pass ``cv=dataset.cv`` to
            :func:`~sklearn.model_selection.cross_validate`, and report the
            mean over the five.  None for the other releases.
        DESCR : str
            The source, the shape and GroupLens's terms of use.

    (data, target) : tuple of ndarray
        When ``return_X_y`` is True.

    Raises
    ------
    ValueError
        If a file found in the data folder is not the release's: another
        number of ratings, users or movies than the table's (for
        ``'latest-small'``, no ratings), ratings off the release's scale, ids
        below 1, no timestamps, or splits that do not split the ratings; or
        if it cannot be read (see :func:`skvi.datasets.read_movielens`).  The
        message names the file.
    DataNotFoundError
        If the release is missing and ``download_if_missing`` is False, or
        the download failed; the message names the URL and the folder.
    OSError
        If the downloaded archive does not match GroupLens's checksum, or
        its ratings are not the release's (it is not kept).

    See Also
    --------
    skvi.datasets.read_movielens : reads one ratings file.
    skvi.SVIMatrixFactorization : the model these data are for.

    Examples
    --------
    The release ``latest-small`` is two CSV files; a folder holding them
    (here two made-up ratings) is read without any download:

    >>> import os, tempfile
    >>> from skvi.datasets import fetch_movielens
    >>> home = tempfile.mkdtemp()
    >>> folder = os.path.join(home, "movielens-latest-small")
    >>> os.mkdir(folder)
    >>> with open(os.path.join(folder, "ratings.csv"), "w") as fh:
    ...     _ = fh.write("userId,movieId,rating,timestamp\\n1,1,4.0,964982703\\n"
    ...                  "2,3,3.5,964981247\\n")
    >>> with open(os.path.join(folder, "movies.csv"), "w") as fh:
    ...     _ = fh.write("movieId,title,genres\\n1,Toy Story (1995),Comedy\\n"
    ...                  '3,"American President, The (1995)",Drama\\n')
    >>> ml = fetch_movielens("latest-small", data_home=home, download_if_missing=False)
    >>> ml.data.tolist(), ml.target.tolist()
    ([[1, 1], [2, 3]], [4.0, 3.5])
    >>> ml.item_titles.tolist()
    ['Toy Story (1995)', 'American President, The (1995)']

    With the data in ``$SKVI_DATA`` (or a network), the official splits of
    100k score a model the usual way:

    >>> from sklearn.model_selection import cross_validate
    >>> from skvi import SVIMatrixFactorization
    >>> ml = fetch_movielens("100k")  # doctest: +SKIP
    >>> scores = cross_validate(SVIMatrixFactorization(n_components=10), ml.data,
    ...                         ml.target, cv=ml.cv,
    ...                         scoring="neg_root_mean_squared_error")  # doctest: +SKIP
    """
    spec = _MOVIELENS.get(variant) if isinstance(variant, str) else None
    if spec is None:
        raise ValueError(f"variant must be one of {sorted(_MOVIELENS)}, got {variant!r}.")
    what = f"fetch_movielens({variant!r})"
    root = _root(data_home)
    needed = (spec["ratings"], spec["items"]) + spec["splits"]
    found = _find(root, spec["folder"], [(n,) for n in needed])
    if found is None:
        folder = root / spec["folder"]
        if not download_if_missing:
            raise _missing(what, [MOVIELENS_URL + spec["archive"]], folder, root, extract=True)
        _download_movielens(variant, spec, folder, what)
    else:
        folder = found[0]
    X, y, stamps = _read_release(folder, spec, what)
    if return_X_y:
        return X, y
    titles = _titles(folder / spec["items"])
    user_ids, item_ids = np.unique(X[:, 0]), np.unique(X[:, 1])
    cv = _official_folds(folder, X, y, spec["splits"]) if spec["splits"] else None
    descr = (
        f"MovieLens {variant} (GroupLens Research, University of Minnesota)\n\n"
        f"{spec['about']}\nRead from {folder}: {X.shape[0]} ratings by {user_ids.size} "
        f"users of {item_ids.size} movies.\nSource: {MOVIELENS_URL}{spec['archive']}\n\n"
        f"{_MOVIELENS_TERMS}\n"
    )
    return Bunch(
        data=X,
        target=y,
        timestamps=stamps,
        user_ids=user_ids,
        item_ids=item_ids,
        item_titles=np.array([titles.get(int(i), "") for i in item_ids], dtype=object),
        feature_names=["user_id", "item_id"],
        target_names=["rating"],
        cv=cv,
        filenames=[str(folder / name) for name in needed],
        DESCR=descr,
    )


# -------------------------------------------------------------------- LIBSVM
_LIBSVM_TERMS = (
    'From the LIBSVM data sets page of Chih-Chung Chang and Chih-Jen Lin ("LIBSVM: a '
    'library for support vector machines", ACM Transactions on Intelligent Systems and '
    "Technology 2(3), 2011), which asks users to cite the original source."
)

_LIBSVM = {
    "a9a": dict(
        folder="a9a-adult-libsvm",
        train="a9a",
        test="a9a.t",
        n_features=123,
        n_train=32_561,
        n_test=16_281,
        labels=(-1.0, 1.0),
        about="UCI Adult (census income > 50K USD; Ronny Kohavi and Barry Becker), "
        'binarised by John C. Platt ("Fast training of support vector machines '
        'using sequential minimal optimization", 1998): 123 binary features.',
    ),
    "w8a": dict(
        folder="w8a-libsvm",
        train="w8a",
        test="w8a.t",
        n_features=300,
        n_train=49_749,
        n_test=14_951,
        labels=(-1.0, 1.0),
        about='Web page classification (John C. Platt, "Fast training of support vector '
        'machines using sequential minimal optimization", 1998): 300 binary '
        "keyword features.",
    ),
    "covtype.binary": dict(
        folder="covtype-binary-libsvm",
        train="covtype.libsvm.binary.bz2",
        test=None,
        n_features=54,
        n_train=581_012,
        labels=(1.0, 2.0),
        about="UCI Covertype (Jock A. Blackard and Denis J. Dean), forest cover type 2 "
        "against the others: 54 features (10 quantitative, 44 binary), unscaled; "
        "labels 1 and 2.",
    ),
    "rcv1.binary": dict(
        folder="rcv1-binary-libsvm",
        train="rcv1_train.binary.bz2",
        test="rcv1_test.binary.bz2",
        n_features=47_236,
        n_train=20_242,
        n_test=677_399,
        labels=(-1.0, 1.0),
        about="Reuters RCV1 news (David D. Lewis, Yiming Yang, Tony G. Rose and Fan Li, "
        '"RCV1: A new benchmark collection for text categorization research", '
        "JMLR 2004), categories CCAT and ECAT against GCAT and MCAT: 47,236 "
        "cosine-normalised log TF-IDF features.  The test file is the larger one.",
    ),
    "real-sim": dict(
        folder="real-sim-libsvm",
        train="real-sim.bz2",
        test=None,
        n_features=20_958,
        n_train=72_309,
        labels=(-1.0, 1.0),
        about="Usenet articles on real against simulated autos and aviation (Andrew "
        "McCallum's SRAA collection): 20,958 normalised word features.",
    ),
    "news20.binary": dict(
        folder="news20-binary-libsvm",
        train="news20.binary.bz2",
        test=None,
        n_features=1_355_191,
        n_train=19_996,
        labels=(-1.0, 1.0),
        about="20 Newsgroups in two balanced halves (S. Sathiya Keerthi and Dennis "
        'DeCoste, "A modified finite Newton method for fast solution of large '
        'scale linear SVMs", JMLR 2005): 1,355,191 normalised features.',
    ),
    "ijcnn1": dict(
        folder="ijcnn1-libsvm",
        train="ijcnn1.bz2",
        test="ijcnn1.t.bz2",
        n_features=22,
        n_train=49_990,
        n_test=91_701,
        labels=(-1.0, 1.0),
        about="The IJCNN 2001 neural network competition (Danil Prokhorov): 22 features; "
        "the training file holds the training and validation sets.",
    ),
}


def _accepted(name):
    """The names a LIBSVM file may have on disk: as published, and (de)compressed."""
    if name.endswith(".bz2"):
        return (name, name[: -len(".bz2")])
    return (name, name + ".bz2")


def _read_libsvm_checked(path, spec, n_rows, what, url):
    return _read_checked(
        lambda p: read_libsvm(p, n_features=spec["n_features"]),
        lambda r: libsvm_problem(*r, spec, n_rows),
        path,
        what,
        url,
    )


def fetch_libsvm(
    name, *, subset="train", data_home=None, download_if_missing=True, return_X_y=False
):
    """Load a binary classification set of the LIBSVM data sets page, downloading it if needed.

    The sets from https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/
    that are the usual benchmarks of logistic regression and linear models,
    read by :func:`skvi.datasets.read_libsvm` into a CSR matrix (float64,
    int32 indices) with the published number of features, so that the
    training and test files have the same columns:

    ====================  =========  ========  ==========  ==========
    name                  train      test      features    labels
    ====================  =========  ========  ==========  ==========
    ``'a9a'``             32,561     16,281    123         -1, +1
    ``'w8a'``             49,749     14,951    300         -1, +1
    ``'covtype.binary'``  581,012    --        54          1, 2
    ``'rcv1.binary'``     20,242     677,399   47,236      -1, +1
    ``'real-sim'``        72,309     --        20,958      -1, +1
    ``'news20.binary'``   19,996     --        1,355,191   -1, +1
    ``'ijcnn1'``          49,990     91,701    22          -1, +1
    ====================  =========  ========  ==========  ==========

    The files are looked for in ``data_home`` (see
    :func:`skvi.datasets.get_data_home`), in the set's folder there
    (``a9a-adult-libsvm``, ``w8a-libsvm``, ``covtype-binary-libsvm``,
    ``rcv1-binary-libsvm``, ``real-sim-libsvm``, ``news20-binary-libsvm``,
    ``ijcnn1-libsvm``) or in ``data_home`` itself, under the published name
    (e.g. ``a9a``, ``rcv1_train.binary.bz2``) or its (de)compressed form.
    When missing, the file is downloaded into that folder; LIBSVM publishes
    no checksums, so a download is kept only when it has the size the
    server announced and the published number of rows, labels and
    features.  A file found in the folder is held to the same numbers: one
    that is not the published file (truncated, another set's, labels
    recoded to 0/1) is refused, never returned as a9a.

    Parameters
    ----------
    name : str
        The set, one of the table's names.
    subset : {'train', 'test', 'all'}, default='train'
        The training file, the test file (only for the sets that have one)
        or both, stacked (training rows first; for a set without a test
        file, the training file).
    data_home : str, path-like or None, default=None
        The folder that holds the data sets (or the set's files); None uses
        ``$SKVI_DATA``, else :func:`skvi.datasets.get_data_home`'s default.
        An explicit folder overrides ``$SKVI_DATA``.
    download_if_missing : bool, default=True
        Download the files that are not found; with False a missing file
        raises :class:`DataNotFoundError`.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of the Bunch.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_samples, n_features)
            The features, float64, with int32 indices.
        target : ndarray of shape (n_samples,)
            The labels as in the file, float64 (see the table; e.g.
            ``(target > 0).astype(int)`` gives 0/1 classes for -1/+1).
        target_names : ndarray
            The two label values, sorted.
        filenames : list of str
            The files read.
        DESCR : str
            The source and the reference to cite.

    (data, target) : tuple
        When ``return_X_y`` is True.

    Raises
    ------
    ValueError
        For an unknown ``name`` or ``subset``, or ``subset='test'`` for a
        set without a test file; or if a file found in the data folder is
        not the published one (another number of rows, labels other than
        the table's, more features) or cannot be read; the message names
        the file.
    DataNotFoundError
        If a file is missing and ``download_if_missing`` is False, or the
        download failed; the message names the URL and the folder.
    OSError
        If a downloaded file is incomplete or does not have the published
        shape (it is not kept).

    See Also
    --------
    skvi.datasets.read_libsvm : reads one LIBSVM file.
    skvi.SVILogisticRegression : Bayesian logistic regression.

    Examples
    --------
    A folder ``a9a-adult-libsvm`` holding files named ``a9a`` and ``a9a.t``
    is read without any download, and what is read is checked against the
    published shape: a file of two made-up rows is not LIBSVM's a9a.

    >>> import os, tempfile
    >>> from skvi.datasets import fetch_libsvm
    >>> home = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(home, "a9a-adult-libsvm"))
    >>> with open(os.path.join(home, "a9a-adult-libsvm", "a9a"), "w") as fh:
    ...     _ = fh.write("-1 3:1 123:1\\n+1 1:1\\n")
    >>> fetch_libsvm("a9a", data_home=home, download_if_missing=False)
    Traceback (most recent call last):
        ...
    ValueError: fetch_libsvm('a9a'): .../a9a has 2 rows, not the published 32561, so ...

    With the data in ``$SKVI_DATA`` (or a network):

    >>> X, y = fetch_libsvm("a9a", return_X_y=True)  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (32561, 123)
    """
    spec = _LIBSVM.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"name must be one of {sorted(_LIBSVM)}, got {name!r}.")
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    if subset == "test" and spec["test"] is None:
        raise ValueError(f"LIBSVM publishes no test file for {name!r}: use subset='train'.")
    what = f"fetch_libsvm({name!r})"
    root = _root(data_home)
    parts = [("train", spec["train"], spec["n_train"])]
    if subset != "train" and spec["test"] is not None:
        parts = parts if subset == "all" else []
        parts.append(("test", spec["test"], spec["n_test"]))
    found = [_find(root, spec["folder"], [_accepted(file)]) for _, file, _ in parts]
    missing = [file for (_, file, _), hit in zip(parts, found) if hit is None]
    folder = root / spec["folder"]
    if missing and not download_if_missing:
        raise _missing(what, [LIBSVM_URL + f for f in missing], folder, root)
    blocks, paths = [], []
    for (_, file, n_rows), hit in zip(parts, found):
        if hit is not None:
            path = hit[1][0]
            X, y = _read_libsvm_checked(path, spec, n_rows, what, None)
        else:
            url = LIBSVM_URL + file
            with _Staging(folder) as stage:
                _download(url, stage.path / file, what, folder)
                X, y = _read_libsvm_checked(stage.path / file, spec, n_rows, what, url)
                stage.keep([file])
            path = folder / file
        blocks.append((X, y))
        paths.append(str(path))
    if len(blocks) == 1:
        X, y = blocks[0]
    else:
        X = sp.vstack([b[0] for b in blocks], format="csr")
        if X.nnz < np.iinfo(np.int32).max:
            X.indices = X.indices.astype(np.int32)
            X.indptr = X.indptr.astype(np.int32)
        y = np.concatenate([b[1] for b in blocks])
    if return_X_y:
        return X, y
    descr = (
        f"LIBSVM binary data set {name!r} ({subset}): {X.shape[0]} rows x "
        f"{X.shape[1]} features.\n\n{spec['about']}\nSource: {LIBSVM_URL}\n"
        f"{_LIBSVM_TERMS}\n"
    )
    return Bunch(
        data=X,
        target=y,
        target_names=np.array(spec["labels"]),
        filenames=paths,
        DESCR=descr,
    )


# ------------------------------------------------------- UCI bag of words
_UCI = {
    "kos": dict(
        n_docs=3430, n_words=6906, n_tokens=467_714, about="KOS blog entries (dailykos.com)."
    ),
    "nips": dict(
        n_docs=1500,
        n_words=12_419,
        n_tokens=None,
        about="NIPS full papers (books.nips.cc), about 1.9 million tokens.",
    ),
    "enron": dict(
        n_docs=39_861,
        n_words=28_102,
        n_tokens=None,
        about="Enron e-mails (www.cs.cmu.edu/~enron), about 6.4 million tokens.",
    ),
    "nytimes": dict(
        n_docs=300_000,
        n_words=102_660,
        n_tokens=None,
        about="New York Times news articles (LDC), about 100 million tokens "
        "(some 70 million non-zero counts: several GB of memory).",
    ),
    "pubmed": dict(
        n_docs=8_200_000,
        n_words=141_043,
        n_tokens=None,
        about="PubMed abstracts, about 730 million tokens (some 480 million "
        "non-zero counts: reading it needs tens of GB of memory).",
    ),
}
_UCI_FOLDER = "uci-bag-of-words"


def fetch_uci_bag_of_words(name, *, data_home=None, download_if_missing=True):
    """Load a corpus of the UCI "Bag of Words" data set, downloading it if needed.

    Five text collections of David Newman (UCI Machine Learning
    Repository) as document-word count matrices, the classic corpora of
    topic models, read by :func:`skvi.datasets.read_uci_bag_of_words`:

    =============  ==========  =========  ================================
    name           documents   words      source
    =============  ==========  =========  ================================
    ``'kos'``      3,430       6,906      KOS blog entries (dailykos.com)
    ``'nips'``     1,500       12,419     NIPS full papers
    ``'enron'``    39,861      28,102     Enron e-mails
    ``'nytimes'``  300,000     102,660    New York Times articles
    ``'pubmed'``   8,200,000   141,043    PubMed abstracts
    =============  ==========  =========  ================================

    Stop words were removed and only words occurring more than ten times
    kept; the collections have no labels and no document names.  The files
    ``docword.<name>.txt.gz`` (or uncompressed, ``docword.<name>.txt``) and
    ``vocab.<name>.txt`` are looked for in ``data_home`` (see
    :func:`skvi.datasets.get_data_home`), in its folder
    ``uci-bag-of-words`` or in ``data_home`` itself; when missing, they are
    downloaded from
    https://archive.ics.uci.edu/ml/machine-learning-databases/bag-of-words/
    into that folder.  UCI publishes no checksums, so a download is kept
    only when it has the size the server announced and the published
    numbers of documents and words; files found in the folder are held to
    the same numbers.  ``nytimes`` and ``pubmed`` are large (hundreds of MB
    and several GB compressed).

    Parameters
    ----------
    name : {'kos', 'nips', 'enron', 'nytimes', 'pubmed'}
        The collection.
    data_home : str, path-like or None, default=None
        The folder that holds the data sets (or the files); None uses
        ``$SKVI_DATA``, else :func:`skvi.datasets.get_data_home`'s default.
        An explicit folder overrides ``$SKVI_DATA``.
    download_if_missing : bool, default=True
        Download the files that are not found; with False a missing file
        raises :class:`DataNotFoundError`.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, n_words)
            Word counts, float64, ready for
            :class:`skvi.SVILatentDirichletAllocation`.
        feature_names : ndarray of object of shape (n_words,)
            The vocabulary: column ``j`` counts ``feature_names[j]`` (as
            ``CountVectorizer.get_feature_names_out()``).
        filenames : list of str
            The files read.
        DESCR : str
            The source.

    Raises
    ------
    ValueError
        For an unknown ``name``; or if the files found in the data folder
        are not the published corpus (another number of documents or words,
        or for ``'kos'`` of tokens) or cannot be read; the message names the
        file.
    DataNotFoundError
        If a file is missing and ``download_if_missing`` is False, or the
        download failed; the message names the URL and the folder.
    OSError
        If a downloaded file is incomplete or does not have the published
        shape (it is not kept).

    See Also
    --------
    skvi.datasets.read_uci_bag_of_words : reads one pair of files.
    skvi.SVILatentDirichletAllocation : the topic model.

    Examples
    --------
    A folder holding the two files is read without any download, and what
    is read is checked against the published shape: a made-up corpus of two
    documents over three words is not KOS.

    >>> import os, tempfile
    >>> from skvi.datasets import fetch_uci_bag_of_words
    >>> home = tempfile.mkdtemp()
    >>> with open(os.path.join(home, "docword.kos.txt"), "w") as fh:
    ...     _ = fh.write("2\\n3\\n3\\n1 1 4\\n1 3 1\\n2 2 2\\n")
    >>> with open(os.path.join(home, "vocab.kos.txt"), "w") as fh:
    ...     _ = fh.write("bush\\nkerry\\npoll\\n")
    >>> fetch_uci_bag_of_words("kos", data_home=home, download_if_missing=False)
    Traceback (most recent call last):
        ...
    ValueError: fetch_uci_bag_of_words('kos'): .../docword.kos.txt has 2 documents x 3 words, ...

    With the data in ``$SKVI_DATA`` (or a network):

    >>> kos = fetch_uci_bag_of_words("kos")  # doctest: +SKIP
    >>> kos.data.shape  # doctest: +SKIP
    (3430, 6906)
    """
    spec = _UCI.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"name must be one of {list(_UCI)}, got {name!r}.")
    what = f"fetch_uci_bag_of_words({name!r})"
    root = _root(data_home)
    docword, vocab = f"docword.{name}.txt.gz", f"vocab.{name}.txt"
    accepted = [(docword, docword[: -len(".gz")]), (vocab,)]
    found = _find(root, _UCI_FOLDER, accepted)
    folder = root / _UCI_FOLDER
    if found is not None:
        paths = found[1]
        X, words = _read_checked(
            lambda p: read_uci_bag_of_words(p, paths[1]),
            lambda r: corpus_problem(r[0], spec),
            paths[0],
            what,
        )
    else:
        urls = [UCI_BAG_OF_WORDS_URL + docword, UCI_BAG_OF_WORDS_URL + vocab]
        if not download_if_missing:
            raise _missing(what, urls, folder, root)
        with _Staging(folder) as stage:
            for url, file in zip(urls, (docword, vocab)):
                _download(url, stage.path / file, what, folder)
            X, words = _read_checked(
                lambda p: read_uci_bag_of_words(p, stage.path / vocab),
                lambda r: corpus_problem(r[0], spec),
                stage.path / docword,
                what,
                urls[0],
            )
            stage.keep([docword, vocab])
        paths = [folder / docword, folder / vocab]
    descr = (
        f"UCI bag of words {name!r}: {X.shape[0]} documents x {X.shape[1]} words, "
        f"{int(X.sum())} tokens.\n\n{spec['about']}\nCollected by David Newman for the "
        "UCI Machine Learning Repository (Dheeru Dua and Casey Graff); stop words removed, "
        f"words occurring more than ten times kept.\nSource: {UCI_BAG_OF_WORDS_URL}\n"
    )
    return Bunch(
        data=X,
        feature_names=np.array(words, dtype=object),
        filenames=[str(p) for p in paths],
        DESCR=descr,
    )
