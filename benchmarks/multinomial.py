"""Multi-class Bayesian logistic regression against scikit-learn's multinomial LogisticRegression.

Every method is fitted in one process, repetitions interleaved (method A,
method B, method A, ...), medians quoted, on one BLAS thread.

Part ``defaults`` (the default): the estimators as most users call them.
scikit-learn's ``digits`` (1,797 images of 64 pixels, 10 classes; ships with
scikit-learn), pixels divided by 16 (to [0, 1]), a stratified 70/30 split
(``train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)``):

* ``SVILogisticRegression()``, every argument at its default (Böhning's
  bound, extrapolated batch passes), with ``prior_variance=1.0`` (the default
  before it became 5 for a softmax), and with ``expectation='quadrature'``
  (the 512-point rule, the default before the bound);
* ``LogisticRegression(max_iter=1000)`` (``C=1``, lbfgs), the time reference;
* ``LogisticRegressionCV(max_iter=3000)`` (``C`` by 5-fold cross-validation
  over its default grid of 10 values, then refitted), the NLL reference.

Printed: test NLL and its ratio to ``LogisticRegressionCV``'s, accuracy, the
median fit time (wall clock) and its ratio to ``LogisticRegression``'s, the
same for the process's CPU time (steadier on a machine shared with other
work), skvi's passes and whether it converged (and the prior variance it
used), ``LogisticRegressionCV``'s ``C``.

Part ``prior``: the same prior for all (``C = prior_variance = 1``) on

* ``digits`` standardised (``StandardScaler``), 70/30 split with ``random_state=0``;
* ``a9a`` (the binary task of ``benchmarks/glm.py``; 32,561 training and
  16,281 test rows), when ``skvi.datasets.fetch_libsvm("a9a")`` finds its files in
  ``skvi.datasets.get_data_home()`` (nothing is downloaded).

Methods: scikit-learn's ``LogisticRegression(C=1)`` (lbfgs; multinomial for
more than two classes), skvi's ``SVILogisticRegression(prior_variance=1)`` with
its other defaults, and, on digits, ``learning_method='batch'``.

Usage::

    python benchmarks/multinomial.py [--part defaults|prior|all] [--repeats 5] [--skip-a9a]
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
        "skvi prior_variance=1": lambda: SVILogisticRegression(prior_variance=1.0,
                                                               random_state=0),
    }
    if n_classes > 2:
        out["skvi batch"] = lambda: SVILogisticRegression(
            prior_variance=1.0, learning_method="batch", random_state=0)
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


def digits_over_16():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return X_tr, y_tr, X_te, y_te


def run_defaults(repeats):
    """Part ``defaults``: skvi's, LogisticRegression's and LogisticRegressionCV's defaults."""
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
    from sklearn.metrics import accuracy_score, log_loss

    from skvi import SVILogisticRegression

    X_tr, y_tr, X_te, y_te = digits_over_16()
    makers = {
        "skvi SVILogisticRegression()": SVILogisticRegression,
        "skvi prior_variance=1.0": lambda: SVILogisticRegression(prior_variance=1.0),
        "skvi expectation='quadrature'": lambda: SVILogisticRegression(
            expectation="quadrature"),
        "LogisticRegression(max_iter=1000)": lambda: LogisticRegression(max_iter=1000),
        "LogisticRegressionCV(max_iter=3000)": lambda: LogisticRegressionCV(max_iter=3000),
    }
    times = {m: [] for m in makers}
    cpu = {m: [] for m in makers}
    results = {}
    for _ in range(repeats):
        for method, make in makers.items():  # interleaved
            est = make()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start, start_cpu = time.perf_counter(), time.process_time()
                est.fit(X_tr, y_tr)
                times[method].append(time.perf_counter() - start)
                cpu[method].append(time.process_time() - start_cpu)
            proba = est.predict_proba(X_te)
            skvi_warnings = [w for w in caught if "skvi" in str(w.filename)
                             or type(w.message).__name__ == "ConvergenceWarning"]
            if hasattr(est, "converged_"):
                note = "%d passes, %s, prior variance %.4g%s" % (
                    est.n_iter_, "converged" if est.converged_ else "NOT converged",
                    est.prior_variance_, ", warned" if skvi_warnings else "")
            elif hasattr(est, "C_"):
                note = "C = %.4g" % np.ravel(est.C_)[0]
            else:
                note = "%d iterations" % np.max(est.n_iter_)
            results[method] = (log_loss(y_te, proba, labels=est.classes_),
                               accuracy_score(y_te, est.classes_[proba.argmax(axis=1)]), note)
    t_ref = statistics.median(times["LogisticRegression(max_iter=1000)"])
    c_ref = statistics.median(cpu["LogisticRegression(max_iter=1000)"])
    nll_ref = results["LogisticRegressionCV(max_iter=3000)"][0]
    body = []
    for method in makers:
        med, med_cpu = statistics.median(times[method]), statistics.median(cpu[method])
        nll, acc, note = results[method]
        body.append([method, "%.4f" % nll, "%.3f" % (nll / nll_ref), "%.4f" % acc,
                     "%.4f" % med, "%.1fx" % (med / t_ref), "%.4f" % med_cpu,
                     "%.1fx" % (med_cpu / c_ref), note])
    print("\ndigits / 16, stratified 70/30 split: %d training rows, %d test rows, %d features, "
          "%d classes; %d interleaved repetitions, one BLAS thread"
          % (X_tr.shape[0], X_te.shape[0], X_tr.shape[1], np.unique(y_tr).size, repeats))
    print(format_table(
        ["method", "test NLL", "NLL / CV's", "accuracy", "median fit s", "/ LR",
         "median CPU s", "CPU / LR", "notes"],
        body, [False, True, True, True, True, True, True, True, False]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("defaults", "prior", "all"), default="defaults")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-a9a", action="store_true")
    args = p.parse_args(argv)
    with one_blas_thread():
        if args.part in ("defaults", "all"):
            run_defaults(args.repeats)
        if args.part in ("prior", "all"):
            run("digits", digits(), args.repeats)
            data = None if args.skip_a9a else a9a()
            if data is None and not args.skip_a9a:
                print("\na9a: files not found (skvi.datasets.get_data_home()); skipped")
            elif data is not None:
                run("a9a", data, args.repeats)


if __name__ == "__main__":
    main()
