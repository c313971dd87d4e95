"""Checks of data files: the readers' guards and the fetchers' published shapes.

A file that cannot be what it claims to be is refused with an error that
names it and says what would be valid, before anything large is built from
it; nothing is read silently in another way.  The readers of
:mod:`skvi.datasets.readers` use :func:`named_errors` and :func:`open_text`;
the fetchers compare what they read with the shape the publisher states
(:func:`ratings_problem`, :func:`libsvm_problem`, :func:`corpus_problem`),
whether the file was already in the data folder or was just downloaded
(:func:`refuse`).
"""

import bz2
import contextlib
import gzip
import numbers
import os
import zlib

import numpy as np

#: The largest count of rows or columns a header may announce, and the
#: largest feature index: the int32 range that scikit-learn's sparse
#: estimators need, so that a corrupt header allocates nothing huge.
MAX_INDEX = np.iinfo(np.int32).max


def open_text(path):
    """Open ``path`` as UTF-8 text, decompressing a ``.gz`` or ``.bz2`` file."""
    path = os.fspath(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    if path.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


@contextlib.contextmanager
def named_errors(path, valid):
    """Turn the errors of decoding a bad file into a ValueError naming it.

    A truncated (even to nothing) or corrupt ``.gz`` / ``.bz2`` file
    (``EOFError``, ``zlib.error``, gzip's ``BadGzipFile``, bz2's
    ``OSError``) and a file
    that is not UTF-8 text raise a :class:`ValueError` that names ``path``
    and says what a valid file is (``valid``).  A file that is missing or
    unreadable for its permissions keeps its own ``OSError``, which names it.
    """
    path = os.fspath(path)
    compressed = path.endswith((".gz", ".bz2"))
    kind = "gzip" if path.endswith(".gz") else "bzip2"
    # gzip and bz2 read an empty file as empty data; no compressor writes one
    # (even no data compress to a header and a checksum): it is a truncated file.
    if compressed and os.path.isfile(path) and os.path.getsize(path) == 0:
        raise ValueError(
            f"{path}: an empty file, not a complete {kind} file; the file is truncated: "
            f"{valid}, compressed whole."
        )
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
        raise
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: not a text file ({exc}); {valid} (a compressed file's name must end "
            "in .gz or .bz2)."
        ) from None
    except (EOFError, zlib.error, OSError) as exc:
        if not compressed:
            raise
        raise ValueError(
            f"{path}: not a complete {kind} file ({type(exc).__name__}: {exc}); the file is "
            f"truncated or corrupt: {valid}, compressed whole."
        ) from None


def check_count(value, name, path=None):
    """``value`` as an int when it is a non-negative integer (a size), else a ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
    if value < 0 or value > MAX_INDEX:
        where = f"{path}: " if path is not None else ""
        raise ValueError(f"{where}{name} must be an integer in [0, {MAX_INDEX}], got {value}.")
    return int(value)


def check_finite(values, path, what):
    """A ValueError naming ``path`` when some of ``values`` is NaN or infinite."""
    values = np.asarray(values)
    if values.size and not np.all(np.isfinite(values)):
        bad = values[~np.isfinite(values)][0]
        raise ValueError(f"{path}: a {what} is {bad}; every {what} must be a finite number.")


# ------------------------------------------------- the fetchers' published shapes
def refuse(problem, what, path, url=None):
    """Raise when ``problem`` (a sentence's end, or None when the file is fine).

    A file just downloaded from ``url`` is an :class:`OSError` (it is not
    kept); a file found in the data folder is a :class:`ValueError` naming it:
    the fetchers never return data of another shape than the published one.
    """
    if problem is None:
        return
    if url is not None:
        raise OSError(f"{what}: the file downloaded from {url} {problem}; it was not kept.")
    raise ValueError(
        f"{what}: {path} {problem}, so it is not the published file. Replace it with the "
        "published one (or remove it, and the fetcher downloads it)."
    )


def ratings_problem(X, y, stamps, spec):
    """What keeps MovieLens ratings from being the release of ``spec``, or None."""
    lo, hi, step = spec["scale"]
    if spec["shape"] is not None:
        got = (X.shape[0], np.unique(X[:, 0]).size, np.unique(X[:, 1]).size)
        want = spec["shape"]
        if any(w is not None and g != w for g, w in zip(got, want)):
            items = "" if want[2] is None else f" of {want[2]} movies"
            return (
                f"has {got[0]} ratings by {got[1]} users of {got[2]} movies, not the "
                f"release's {want[0]} by {want[1]} users{items}"
            )
    if X.shape[0] == 0:
        return "has no ratings"
    if X.min() < 1:
        return f"has the id {X.min()}, where the release's user and movie ids start at 1"
    steps = (y - lo) / step
    if y.min() < lo or y.max() > hi or np.any(steps != np.round(steps)):
        bad = y[(y < lo) | (y > hi) | (steps != np.round(steps))][0]
        return f"has the rating {bad}, not one of the release's {lo:g}, {lo + step:g}, .. {hi:g}"
    if stamps is None:
        return "has no timestamps (the release's lines are user, item, rating, timestamp)"
    return None


def libsvm_problem(X, y, spec, n_rows):
    """What keeps a LIBSVM file from being the published one, or None."""
    if X.shape[0] != n_rows:
        return f"has {X.shape[0]} rows, not the published {n_rows}"
    if not np.all(np.isin(y, spec["labels"])):
        bad = np.setdiff1d(np.unique(y), spec["labels"])
        return (
            f"has labels other than the published {[float(v) for v in spec['labels']]} "
            f"(also {bad.tolist()})"
        )
    return None


def corpus_problem(X, spec):
    """What keeps a UCI bag of words from being the published corpus, or None."""
    want = (spec["n_docs"], spec["n_words"])
    if X.shape != want:
        return (
            f"has {X.shape[0]} documents x {X.shape[1]} words, not the published "
            f"{want[0]} x {want[1]}"
        )
    if spec["n_tokens"] is not None and int(X.sum()) != spec["n_tokens"]:
        return f"has {int(X.sum())} tokens, not the published {spec['n_tokens']}"
    return None
