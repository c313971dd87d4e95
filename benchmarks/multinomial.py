"""Multi-class Bayesian logistic regression against scikit-learn's multinomial LogisticRegression.

Two data sets, each fitted in one process by every method, repetitions
interleaved (method A, method B, method A, ...), medians quoted:

* scikit-learn's ``digits`` (1,797 images, 64 pixels, 10 classes; ships with
  scikit-learn), standardised, 70/30 split with ``random_state=0``;
* ``a9a`` (the binary task of ``benchmarks/glm.py``; 32,561 training and
  16,281 test rows), when ``skvi.datasets.fetch_libsvm("a9a")`` finds its files in
  ``skvi.datasets.get_data_home()`` (nothing is downloaded).

Methods: scikit-learn's ``LogisticRegression(C=1)`` (lbfgs; multinomial for
more than two classes), skvi's ``SVILogisticRegression(prior_variance=1)`` with
its defaults (the same prior: ``C`` is the prior variance of every weight),
and, on digits, ``learning_method='batch'``.  Printed: test NLL, accuracy, the
median fit time and its ratio to scikit-learn's, on one BLAS thread.

Usage::

    python benchmarks/multinomial.py [--repeats 3] [--skip-a9a]
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


def digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), y_tr, scaler.transform(X_te), y_te


def a9a():
    """a9a and a9a.t (CSR, 0/1 labels) from skvi.datasets.fetch_libsvm, or None if absent."""
    from skvi.datasets import DataNotFoundError, fetch_libsvm

    parts = []
    for subset in ("train", "test"):
        try:
            X, y = fetch_libsvm("a9a", subset=subset, download_if_missing=False, return_X_y=True)
        except DataNotFoundError:
            return None
        parts += [X, (y > 0).astype(np.int64)]
    return tuple(parts)


def methods(n_classes):
    from sklearn.linear_model import LogisticRegression

    from skvi import SVILogisticRegression

    out = {
        "scikit-learn LogisticRegression(C=1)": lambda: LogisticRegression(C=1.0, max_iter=5000),
        "skvi defaults": lambda: SVILogisticRegression(random_state=0),
    }
    if n_classes > 2:
        out["skvi batch"] = lambda: SVILogisticRegression(learning_method="batch", random_state=0)
    return out


def run(name, data, repeats):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score, log_loss

    X_tr, y_tr, X_te, y_te = data
    makers = methods(np.unique(y_tr).size)
    times = {m: [] for m in makers}
    results = {}
    for _ in range(repeats):
        for method, make in makers.items():  # interleaved
            est = make()
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(X_tr, y_tr)
            times[method].append(time.perf_counter() - start)
            proba = est.predict_proba(X_te)
            results[method] = (log_loss(y_te, proba, labels=est.classes_),
                               accuracy_score(y_te, est.classes_[proba.argmax(axis=1)]),
                               getattr(est, "n_iter_", None))
    ref = statistics.median(times["scikit-learn LogisticRegression(C=1)"])
    body = []
    for method in makers:
        med = statistics.median(times[method])
        nll, acc, n_iter = results[method]
        n_iter = np.max(n_iter) if n_iter is not None else ""
        body.append([method, "%.4f" % nll, "%.4f" % acc, "%.3f" % med, "%.1fx" % (med / ref),
                     str(n_iter)])
    print("\n%s: %d training rows, %d test rows, %d features, %d classes"
          % (name, X_tr.shape[0], X_te.shape[0], X_tr.shape[1], np.unique(y_tr).size))
    print(format_table(["method", "test NLL", "accuracy", "median s", "time / sklearn", "passes"],
                       body, [False, True, True, True, True, True]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-a9a", action="store_true")
    args = p.parse_args(argv)
    with one_blas_thread():
        run("digits", digits(), args.repeats)
        data = None if args.skip_a9a else a9a()
        if data is None and not args.skip_a9a:
            print("\na9a: files not found (skvi.datasets.get_data_home()); skipped")
        elif data is not None:
            run("a9a", data, args.repeats)


if __name__ == "__main__":
    main()
