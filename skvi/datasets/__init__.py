"""Small data sets that ship with skvi, fetchers of public ones, and readers of their formats."""

import os
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._fetchers import DataNotFoundError, fetch_libsvm, fetch_movielens, fetch_uci_bag_of_words
from .readers import read_ldac, read_libsvm, read_movielens, read_uci_bag_of_words

__all__ = [
    "DataNotFoundError",
    "fetch_libsvm",
    "fetch_movielens",
    "fetch_uci_bag_of_words",
    "get_data_home",
    "load_newcomb",
    "load_topics_sample",
    "read_ldac",
    "read_libsvm",
    "read_movielens",
    "read_uci_bag_of_words",
]


def get_data_home(data_home=None):
    """The folder that skvi's fetchers, examples and benchmarks read larger data sets from.

    skvi ships only small data sets; the fetchers (:func:`fetch_movielens`,
    :func:`fetch_libsvm`, :func:`fetch_uci_bag_of_words`) read the standard
    ones from one folder, and download there the ones it lacks; the
    examples and benchmarks read it too (20 Newsgroups, MovieLens 100k,
    a9a, ...).  The folder is found in this order:

    1. ``data_home``, when given;
    2. the environment variable ``SKVI_DATA``;
    3. ``shared/data`` beside a source checkout of skvi (the folder above the
       one that holds ``pyproject.toml`` and ``skvi/``), when it exists: the
       layout of the project's development machines;
    4. ``~/skvi_data``.

    It depends on where skvi is installed, never on the current directory,
    so the scripts run from any folder.  This function creates and
    downloads nothing.

    Parameters
    ----------
    data_home : str, path-like or None, default=None
        An explicit folder (``~`` is expanded).

    Returns
    -------
    pathlib.Path
        The folder (which may not exist).

    Examples
    --------
    >>> from skvi.datasets import get_data_home
    >>> str(get_data_home("/data/skvi"))
    '/data/skvi'
    >>> get_data_home().name in ("data", "skvi_data") or "SKVI_DATA" in os.environ
    True
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("SKVI_DATA")
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parents[2]
    beside = checkout.parent / "shared" / "data"
    if (checkout / "pyproject.toml").is_file() and (checkout / "skvi").is_dir() and beside.is_dir():
        return beside
    return Path.home() / "skvi_data"


def load_newcomb(*, return_X_y=False):
    """Load Simon Newcomb's 1882 speed-of-light measurements.

    Sixty-six measurements of the time light took to travel 7442 metres,
    recorded as nanoseconds above 24800 ns (Stigler 1977, "Do robust
    estimators deal with real data?", Table 5).  Two of them (-44 and -2)
    are famous outliers.  The classic textbook example for inferring the
    mean and precision of a normal model; the data are in the public domain
    and ship with skvi as ``skvi/datasets/data/newcomb.csv``.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return only the data array.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or ndarray of shape (66, 1)
        A Bunch with ``data`` (float64 array of shape (66, 1)),
        ``feature_names`` and ``DESCR``; or just the array when
        ``return_X_y`` is True.

    Examples
    --------
    >>> from skvi.datasets import load_newcomb
    >>> X = load_newcomb(return_X_y=True)
    >>> X.shape, round(float(X.mean()), 3)
    ((66, 1), 26.212)
    """
    path = resources.files(__name__).joinpath("data", "newcomb.csv")
    with path.open("r") as fh:
        lines = [line.strip() for line in fh if not line.startswith("#")]
    header, values = lines[0], lines[1:]
    X = np.array([float(v) for v in values if v], dtype=np.float64)[:, None]
    if return_X_y:
        return X
    return Bunch(
        data=X,
        feature_names=[header],
        DESCR=load_newcomb.__doc__,
    )


def load_topics_sample(*, return_X_y=False):
    """Load a small corpus of 180 short English texts on six themes.

    Thirty documents on each of astronomy, cooking, football (soccer),
    finance, medicine and computing; each is two to four plain sentences
    (25 to 60 words).  Some words recur across themes ("team", "market",
    "system", "cell", "record"), so the themes are not perfectly separable by
    single words.  The text was written for skvi, is distributed under the
    BSD-3-Clause license, and ships with the package as
    ``skvi/datasets/data/topics_sample.tsv`` (one ``theme<TAB>text`` line per
    document, after a ``#`` header line).  It is small enough for examples
    and tests of topic models on raw text, e.g. a
    :class:`~sklearn.pipeline.Pipeline` of a
    :class:`~sklearn.feature_extraction.text.CountVectorizer` and a topic
    model.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple of (list of str, ndarray)
        A Bunch with ``data`` (list of 180 str, in file order), ``target``
        (int array of shape (180,), the index of each document's theme in
        ``target_names``), ``target_names`` (list of the 6 theme names, in
        order of first appearance in the file) and ``DESCR``; or just
        ``(data, target)`` when ``return_X_y`` is True.

    Examples
    --------
    >>> from skvi.datasets import load_topics_sample
    >>> corpus = load_topics_sample()
    >>> len(corpus.data), corpus.target.shape
    (180, (180,))
    >>> corpus.target_names
    ['astronomy', 'cooking', 'football', 'finance', 'medicine', 'computing']
    >>> corpus.data[0][:34]
    'The Andromeda galaxy is the neares'
    >>> from sklearn.feature_extraction.text import CountVectorizer
    >>> texts, y = load_topics_sample(return_X_y=True)
    >>> CountVectorizer(stop_words="english").fit_transform(texts).shape
    (180, ...)
    """
    path = resources.files(__name__).joinpath("data", "topics_sample.tsv")
    with path.open("r", encoding="utf-8") as fh:
        rows = [
            line.rstrip("\n").split("\t", 1)
            for line in fh
            if line.strip() and not line.startswith("#")
        ]
    target_names = list(dict.fromkeys(theme for theme, _ in rows))
    index = {name: i for i, name in enumerate(target_names)}
    data = [text for _, text in rows]
    target = np.array([index[theme] for theme, _ in rows], dtype=np.int64)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        target_names=target_names,
        DESCR=load_topics_sample.__doc__,
    )
