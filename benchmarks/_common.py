"""Helpers shared by the benchmark scripts (they import it as a sibling module)."""

import argparse
import ast
import contextlib

import numpy as np
import scipy.sparse as sp

__all__ = ["Skipped", "key_value", "version", "format_table", "one_blas_thread",
           "token_lists", "tomotopy_topic_counts"]


class Skipped(Exception):
    """A method that cannot run here; the message says why."""


def key_value(text):
    """``KEY=VALUE`` -> (key, value), VALUE a Python literal or else a bare string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("wants KEY=VALUE, got %r" % text)
    try:
        return key.strip(), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key.strip(), value


def version(name):
    try:
        return getattr(__import__(name), "__version__", "unknown")
    except Exception as exc:  # report why, do not fail
        return "not available (%s)" % type(exc).__name__


def format_table(header, body, right):
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]

    def fmt(row):
        return "  ".join(c.rjust(w) if r else c.ljust(w)
                         for c, w, r in zip(row, widths, right)).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body])


def one_blas_thread():
    """A context that holds BLAS and OpenMP to one thread (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


def token_lists(X):
    """Each row of a count matrix as a list of column names, repeated ``count`` times.

    tomotopy's documents: its vocabulary then maps back to the columns.
    """
    X = sp.csr_matrix(X)
    names = np.array([str(j) for j in range(X.shape[1])], dtype=object)
    for d in range(X.shape[0]):
        lo, hi = X.indptr[d], X.indptr[d + 1]
        yield np.repeat(names[X.indices[lo:hi]], X.data[lo:hi].astype(np.int64)).tolist()


def tomotopy_topic_counts(model, n_words):
    """A tomotopy model's ``n_kw + eta`` over all ``n_words`` columns of the matrix.

    ``get_topic_word_dist(k)`` is ``(n_kw + eta) / (n_k + V_used eta)`` over
    the ``V_used`` words tomotopy saw; multiplied back and put in column
    order through ``used_vocabs`` (documents from :func:`token_lists`), a
    column tomotopy never saw getting ``eta``.
    """
    eta = float(model.eta)
    columns = np.array([int(w) for w in model.used_vocabs], dtype=np.int64)
    n_k = np.asarray(model.get_count_by_topics(), dtype=np.float64)
    lam = np.full((model.k, n_words), eta)
    for k in range(model.k):
        dist = np.asarray(model.get_topic_word_dist(k), dtype=np.float64)
        lam[k, columns] = dist * (n_k[k] + columns.size * eta)
    return lam
