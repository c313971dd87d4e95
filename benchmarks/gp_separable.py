"""Sparse GP classification of separable classes with the default arguments.

The case: 100 rows of two standard-normal features (the first two of 20 drawn
per row with ``RandomState(0)``), the label the sign of the first feature, so
the classes are separable; ``SVISparseGPClassifier(n_inducing=10)`` with every
other argument at its default (the kernel learned with the log-normal prior of
``kernel_prior_scale=1``, ``random_state=None``: each repetition places its own
k-means inducing points).  Rows, in one process, repetitions interleaved:

* skvi defaults;
* skvi ``optimizer=None`` (the kernel kept at its start: the speed and
  accuracy the learned kernel must not fall below);
* skvi ``kernel_prior_scale=None`` (type-II maximum likelihood, without the
  prior: the signal variance grows without bound), unless ``--skip-flat``;
* scikit-learn's ``GaussianProcessClassifier(1.0 * RBF(1.0))`` (Laplace, all
  rows, its own type-II maximum likelihood) for reference.

Printed per row: the median fit time and its ratio to ``optimizer=None``'s,
the median passes, how many fits converged without a warning, the median
learned signal variance and length scale (the largest signal variance seen in
brackets) and the median training accuracy.  One BLAS thread.

Usage::

    python benchmarks/gp_separable.py [--repeats 5] [--skip-flat]
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table, one_blas_thread  # noqa: E402


def data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(100, 20))[:, :2]
    return X, (X[:, 0] > 0).astype(int)


def methods(skip_flat):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF

    from skvi import SVISparseGPClassifier

    out = {
        "skvi defaults": lambda: SVISparseGPClassifier(n_inducing=10),
        "skvi optimizer=None": lambda: SVISparseGPClassifier(n_inducing=10, optimizer=None),
    }
    if not skip_flat:
        out["skvi kernel_prior_scale=None"] = lambda: SVISparseGPClassifier(
            n_inducing=10, kernel_prior_scale=None)
    out["scikit-learn GPC (Laplace)"] = lambda: GaussianProcessClassifier(1.0 * RBF(1.0))
    return out


def hyperparameters(model):
    """Signal variance and length scale of a ``C * RBF`` kernel."""
    theta = np.exp(model.kernel_.theta)
    return float(theta[0]), float(theta[1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5, help="interleaved repetitions (%(default)s)")
    p.add_argument("--skip-flat", action="store_true",
                   help="leave out kernel_prior_scale=None (a fit of several seconds)")
    args = p.parse_args(argv)
    X, y = data()
    makers = methods(args.skip_flat)
    runs = {m: [] for m in makers}
    with one_blas_thread():
        for _ in range(args.repeats):
            for method, make in makers.items():  # interleaved
                model = make()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    start = time.perf_counter()
                    model.fit(X, y)
                    seconds = time.perf_counter() - start
                clean = not caught and getattr(model, "converged_", True)
                runs[method].append((seconds, getattr(model, "n_iter_", np.nan), clean,
                                     *hyperparameters(model), model.score(X, y)))
    base = statistics.median(r[0] for r in runs["skvi optimizer=None"])
    body = []
    for method, rs in runs.items():
        col = list(zip(*rs))
        seconds = statistics.median(col[0])
        body.append([
            method, "%.3f" % seconds, "%.1f" % (seconds / base),
            "%g" % statistics.median(col[1]), "%d/%d" % (sum(col[2]), len(rs)),
            "%.3g (%.3g)" % (statistics.median(col[3]), max(col[3])),
            "%.3g" % statistics.median(col[4]), "%.3f" % statistics.median(col[5]),
        ])
    print("Separable classes, 100 rows, 2 features; %d interleaved repetitions, one BLAS thread"
          % args.repeats)
    print(format_table(
        ["method", "fit s", "/ optimizer=None", "passes", "clean", "signal var (max)",
         "length scale", "train acc"],
        body, [False, True, True, True, True, True, True, True]))


if __name__ == "__main__":
    main()
