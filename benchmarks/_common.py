"""Helpers shared by the benchmark scripts (they import it as a sibling module)."""

import argparse
import ast
import contextlib

__all__ = ["Skipped", "key_value", "version", "format_table", "one_blas_thread"]


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
