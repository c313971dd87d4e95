"""Benchmark skvi's Bayesian logistic regression against scikit-learn and a Laplace fit on a9a.

Issue target (checked on the printed summary):
  * skvi's test NLL no worse than scikit-learn's at equal accuracy (accuracy within
    ``--acc-tol``, default 0.002 = 0.2 percentage points, about 33 of the 16,281 test rows).

What it measures
----------------
Every method is fitted, in one process, on the LIBSVM ``a9a`` training file (32,561 rows,
123 binary features, labels -1/+1 mapped to 0/1) and scored on ``a9a.t`` (16,281 rows):

``sklearn``
    ``LogisticRegression(C=C*, solver='lbfgs', max_iter=1000)``, the MAP under the prior
    ``w ~ N(0, C I)`` with an unpenalised intercept (lbfgs does not penalise it).  ``C*``
    is chosen by 5-fold stratified cross-validation (``StratifiedKFold(5, shuffle=True,
    random_state=0)``, ``GridSearchCV(..., scoring='neg_log_loss', refit=False)``) over
    ``np.logspace(-3, 2, 11)``.  The CV search and the final fit are timed separately; the
    "fit [s]" column and every ratio use the final fit only.
``laplace``
    The Laplace approximation with the same prior as the skvi rows: ``w ~ N(0, C* I)`` and
    intercept ``b ~ N(0, 100)`` (skvi's ``intercept_prior_variance``).  The MAP is the
    scikit-learn fit above with the intercept folded into the weights as a constant column of
    value ``s = sqrt(100 / C*)`` and ``fit_intercept=False``: its penalty ``w_s^2 / (2 C*)``
    is then exactly ``b^2 / (2 * 100)`` for ``b = s w_s``.  Then
    ``H = diag(1 / prior variances) + X~^T diag(p (1 - p)) X~`` at the mode (``X~`` = X with
    a column of ones), posterior ``N(w_map, H^-1)``, and ``p(y=1|x) = E[sigmoid(f)]`` with
    ``f ~ N(x~ . w_map, x~^T H^-1 x~)`` by 40-point Gauss-Hermite quadrature
    (``skvi.likelihoods.Bernoulli().predictive_mean``).  Fit time = MAP + Hessian + inverse.
    Its train ELBO is computed like skvi's ``elbo`` (20-point Gauss-Hermite expected
    log-likelihood minus ``KL(q || prior)``).
``skvi-<algorithm>``
    ``skvi.SVILogisticRegression(algorithm=..., prior_variance=C*, random_state=0,
    max_iter=--max-iter, **--opt)`` for 'h-mc-ssvi', 'mc-ssvi' and 's-dsvi'; every other
    argument keeps the estimator default (printed at the start of the run; at the time of
    writing: algorithm 'mc-ssvi', online, batch_size 2000 (a pass in 17 near-equal
    minibatches), max_iter 20, tol 1e-4, Monte-Carlo expectations with 10 draws,
    rho_t = (t + 1)^-0.7, AdaGrad gradient_learning_rate 0.5 for the other two algorithms,
    intercept_prior_variance 100).  A fit that raises (e.g. ``LinAlgError``) is reported as
    failed and its row left out.
``skvi-auto``
    The same with the default algorithm (MC-SSVI) and ``prior_variance='auto'`` (empirical Bayes; the
    learned value is printed), i.e. without the cross-validated ``C*``.
``skvi-batch``
    ``prior_variance=C*, algorithm='mc-ssvi', learning_method='batch',
    expectation='quadrature'``: the deterministic full-data fixed-point iteration (every
    step on all rows, rho = 1, a step that lowers the ELBO rejected and halved), the setting
    that reached the highest ELBO fastest when this benchmark was written.

Scores on the test set: accuracy (threshold 1/2), negative log-likelihood (mean log loss,
``sklearn.metrics.log_loss``) and the expected calibration error of the *top-label
confidence* ``max(p, 1 - p)``: 15 equal-width bins on [0.5, 1], ECE = sum over bins of
(bin size / n) * |accuracy in bin - mean confidence in bin|.  "train ELBO" is the
full-training-set ELBO (``SVILogisticRegression.elbo``, deterministic) for skvi and Laplace.
Fit time is ``time.perf_counter`` around the fit alone, the median over ``--repeats`` runs;
the repetitions are interleaved (every method once, then every method again), so that the
machine's slow spells fall on all of them (the metrics come from the last run; with fixed
seeds all runs are identical).  BLAS and
OpenMP get one thread (environment variables set before numpy is imported, and threadpoolctl
when installed), so the comparison is single-threaded.  The summary gives per row
``fit s / sklearn fit s`` and ``NLL - sklearn NLL`` from this run.

How to run ::

    /path/to/venv/bin/pip install -e .          # scikit-learn comes with skvi
    python benchmarks/glm.py                    # all rows, C* by cross-validation
    python benchmarks/glm.py --methods sklearn,skvi-mc-ssvi --C 0.316 --repeats 3
    python benchmarks/glm.py --max-iter 50 --opt tol=0 --opt gradient_learning_rate=0.3
    python benchmarks/glm.py --data /path/to/a9a-adult-libsvm
    python benchmarks/glm.py --download         # fetch a9a and a9a.t from the LIBSVM page first

The data are read by ``skvi.datasets.fetch_libsvm("a9a")`` (``subset="train"`` and
``"test"``): from ``a9a-adult-libsvm`` in ``skvi.datasets.get_data_home()``
(``$SKVI_DATA``, or ``../shared/data`` beside a checkout, else ``~/skvi_data``; never the
working directory), or from ``--data``, the folder holding ``a9a`` and ``a9a.t`` (or the one
holding ``a9a-adult-libsvm/``).  Nothing is downloaded unless ``--download`` is given.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from _common import Skipped, format_table, key_value, one_blas_thread, version  # noqa: E402

from skvi.datasets import DataNotFoundError, fetch_libsvm, get_data_home  # noqa: E402

SEED = 0
N_FEATURES = 123
CV_GRID = np.logspace(-3, 2, 11)
INTERCEPT_PRIOR_VARIANCE = 100.0  # skvi's default; used by the Laplace row too
ALGORITHMS = ("h-mc-ssvi", "mc-ssvi", "s-dsvi")
ALL_METHODS = (("sklearn", "laplace") + tuple("skvi-" + a for a in ALGORITHMS)
               + ("skvi-auto", "skvi-batch"))


def parse_args(argv=None):
    data_root = str(get_data_home())
    p = argparse.ArgumentParser(
        description="a9a: test accuracy, NLL, ECE and fit time of scikit-learn logistic "
        "regression, a Laplace approximation and skvi's SVILogisticRegression, in one process."
    )
    p.add_argument("--data", default=None, help="folder with a9a and a9a.t, or the one holding "
                   "a9a-adult-libsvm/ (default: skvi.datasets.get_data_home(), $SKVI_DATA or "
                   "../shared/data beside the repository; now %s)" % data_root)
    p.add_argument("--download", action="store_true",
                   help="download a9a and a9a.t from the LIBSVM page when they are not found")
    p.add_argument("--methods", nargs="+", default=[",".join(ALL_METHODS)],
                   help="subset of: %s, comma- or space-separated (default: all)"
                   % ", ".join(ALL_METHODS))
    p.add_argument("--max-iter", type=int, default=20,
                   help="skvi max_iter, passes over the data (default %(default)s, the "
                   "estimator default; its tol=1e-4 may stop it earlier)")
    p.add_argument("--repeats", type=int, default=1,
                   help="fit every method this many times, interleaved, and report the median "
                        "(default 1)")
    p.add_argument("--C", type=float, default=None,
                   help="skip the cross-validation and use this C (= prior variance)")
    p.add_argument("--opt", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="extra SVILogisticRegression argument for every skvi row (repeatable), "
                   "e.g. --opt gradient_learning_rate=0.3 --opt tol=0")
    p.add_argument("--acc-tol", type=float, default=0.002,
                   help="'equal accuracy' means |acc - sklearn acc| <= this (default 0.002)")
    args = p.parse_args(argv)
    methods = {m.strip() for item in args.methods for m in item.split(",") if m.strip()}
    unknown = sorted(methods - set(ALL_METHODS))
    if unknown or not methods:
        p.error("unknown method(s) %s; choose from %s"
                % (", ".join(unknown), ", ".join(ALL_METHODS)))
    args.methods = [m for m in ALL_METHODS if m in methods]
    if args.max_iter < 1 or args.repeats < 1:
        p.error("--max-iter and --repeats must be at least 1")
    if args.C is not None and not args.C > 0:
        p.error("--C must be positive")
    args.opt = dict(args.opt)
    return args


def load_data(data_dir=None, download=False, files=None):
    """a9a and a9a.t: CSR (float64, 32-bit indices, which scikit-learn's
    LogisticRegression needs) and 0/1 labels; the paths read are appended to ``files``."""
    parts = []
    for subset in ("train", "test"):
        try:
            bunch = fetch_libsvm("a9a", subset=subset, data_home=data_dir,
                                 download_if_missing=download)
        except DataNotFoundError as exc:
            sys.exit("error: %s\nPass the folder that holds a9a and a9a.t, e.g.\n"
                     "    python benchmarks/glm.py --data /path/to/a9a-adult-libsvm\n"
                     "or set SKVI_DATA to the folder that holds a9a-adult-libsvm/, or add "
                     "--download." % exc)
        assert bunch.data.shape[1] == N_FEATURES
        parts += [bunch.data, (bunch.target > 0).astype(np.int64)]
        if files is not None:
            files += bunch.filenames
    return tuple(parts)


# --------------------------------------------------------------------- metrics
def expected_calibration_error(y, p, n_bins=15):
    """Top-label ECE: equal-width bins of the confidence max(p, 1-p) on [0.5, 1]."""
    y = np.asarray(y)
    p = np.asarray(p, dtype=np.float64)
    confidence = np.maximum(p, 1.0 - p)
    correct = ((p > 0.5).astype(int) == y).astype(np.float64)
    edges = np.linspace(0.5, 1.0, n_bins + 1)
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = which == b
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - confidence[mask].mean())
    return float(ece)


def scores(y, p):
    from sklearn.metrics import log_loss

    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return {
        "acc": float(np.mean((p > 0.5).astype(int) == y)),
        "nll": float(log_loss(y, p, labels=[0, 1])),
        "ece": expected_calibration_error(y, p),
    }


def timed(fit):
    """Run ``fit()`` once; return (result, seconds)."""
    start = time.perf_counter()
    result = fit()
    return result, time.perf_counter() - start


# --------------------------------------------------------------------- methods
def choose_C(X, y):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    search = GridSearchCV(
        LogisticRegression(solver="lbfgs", max_iter=1000),
        {"C": CV_GRID},
        scoring="neg_log_loss",
        cv=StratifiedKFold(5, shuffle=True, random_state=SEED),
        refit=False,
    )
    start = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - start
    return float(search.best_params_["C"]), search.cv_results_["mean_test_score"], seconds


# Each method is a plan: ``fit()`` (timed) and ``finish(result)``, which gives the test
# probabilities and the method's extra columns outside the clock.
def plan_sklearn(C, X, y, X_test):
    from sklearn.linear_model import LogisticRegression

    def fit():
        return LogisticRegression(C=C, solver="lbfgs", max_iter=1000).fit(X, y)

    return fit, lambda model: (model.predict_proba(X_test)[:, 1], {})


def _with_ones(X, value=1.0):
    return sp.hstack([X, sp.csr_matrix(np.full((X.shape[0], 1), value))], format="csr")


def _gaussian_elbo(X1, y, mean, cov, prior_var):
    """ELBO of q = N(mean, cov) under the logistic model, as skvi's ``elbo`` computes it."""
    from skvi.likelihoods import Bernoulli

    f_mean = X1 @ mean
    f_var = np.maximum(np.asarray(X1.multiply(X1 @ cov).sum(axis=1)).ravel(), 0.0)
    e_log, _, _ = Bernoulli().expectations(y.astype(np.float64), f_mean, f_var,
                                           method="quadrature", n_samples=20)
    d = mean.size
    _, logdet = np.linalg.slogdet(cov)
    kl = 0.5 * (np.sum(np.diag(cov) / prior_var) + np.sum(mean**2 / prior_var) - d
                + np.sum(np.log(prior_var)) - logdet)
    return float(np.sum(e_log) - kl)


def plan_laplace(C, X, y, X_test):
    from sklearn.linear_model import LogisticRegression

    from skvi.likelihoods import Bernoulli

    scale = np.sqrt(INTERCEPT_PRIOR_VARIANCE / C)
    prior_var = np.r_[np.full(X.shape[1], C), INTERCEPT_PRIOR_VARIANCE]
    X_scaled = _with_ones(X, scale)  # built outside the clock, like the data

    def fit():
        lr = LogisticRegression(C=C, solver="lbfgs", max_iter=1000, fit_intercept=False)
        lr.fit(X_scaled, y)
        w = lr.coef_.ravel().copy()
        w[-1] *= scale  # the intercept b = s * w_s
        X1 = _with_ones(X)
        p = 1.0 / (1.0 + np.exp(-(X1 @ w)))
        H = (X1.T @ X1.multiply((p * (1.0 - p))[:, None]).tocsr()).toarray()
        H[np.diag_indices_from(H)] += 1.0 / prior_var
        L = np.linalg.cholesky(H)
        L_inv = np.linalg.inv(L)
        return w, L_inv.T @ L_inv

    def finish(result):
        w, cov = result
        X1_test = _with_ones(X_test)
        f_var = np.maximum(np.asarray(X1_test.multiply(X1_test @ cov).sum(axis=1)).ravel(), 0.0)
        p = Bernoulli().predictive_mean(X1_test @ w, f_var)
        return p, {"elbo": _gaussian_elbo(_with_ones(X), y, w, cov, prior_var)}

    return fit, finish


def plan_skvi(method, C, X, y, X_test, args):
    try:
        from skvi import SVILogisticRegression
    except ImportError as exc:
        raise Skipped("skvi has no SVILogisticRegression (%s)" % exc)
    params = dict(random_state=SEED, max_iter=args.max_iter)
    if method == "skvi-auto":
        params["prior_variance"] = "auto"
    elif method == "skvi-batch":
        params.update(algorithm="mc-ssvi", learning_method="batch", expectation="quadrature",
                      prior_variance=C)
    else:
        params.update(algorithm=method[len("skvi-"):], prior_variance=C)
    params.update(args.opt)  # may override
    caught = []

    def fit():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            model = SVILogisticRegression(**params).fit(X, y)
        caught[:] = [str(x.message).split(". ")[0] for x in w]
        return model

    def guarded():
        try:
            return fit()
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            raise Skipped("fit failed with %s: %s" % (type(exc).__name__, exc))

    def finish(model):
        extra = {
            "elbo": float(model.elbo(X, y)),
            "passes": model.n_iter_,
            "converged": bool(model.converged_),
            "rejected": model.n_rejected_steps_,
            "warnings": sorted(set(caught)),
        }
        if method == "skvi-auto":
            extra["prior_var"] = float(model.prior_variance_)
        return model.predict_proba(X_test)[:, 1], extra

    return guarded, finish


# ----------------------------------------------------------------------- output
def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    files = []
    X, y, X_test, y_test = load_data(args.data, args.download, files)

    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "threadpoolctl"):
        print("  %-13s %s" % (name, version(name)))
    print("data: %s" % ", ".join(os.path.abspath(f) for f in files))
    print("  train %d x %d (%.1f%% positive), test %d (%.1f%% positive)"
          % (X.shape[0], X.shape[1], 100 * y.mean(), X_test.shape[0], 100 * y_test.mean()))
    print("skvi: max_iter=%d, extra options %s; repeats=%d; one BLAS thread"
          % (args.max_iter, args.opt or "none", args.repeats))
    try:
        from skvi import SVILogisticRegression

        defaults = SVILogisticRegression().get_params()
        print("  SVILogisticRegression defaults: " + ", ".join(
            "%s=%r" % (k, defaults[k]) for k in (
                "batch_size", "tol", "expectation", "n_mc_samples", "gradient_learning_rate",
                "learning_offset", "learning_decay", "intercept_prior_variance")))
    except ImportError:
        pass
    print()

    with one_blas_thread():
        needs_C = [m for m in args.methods if m != "skvi-auto"]
        C, cv_seconds = args.C, None
        if C is None and needs_C:
            C, cv_scores, cv_seconds = choose_C(X, y)
            print("5-fold CV of LogisticRegression(lbfgs) over C in logspace(-3, 2, 11), "
                  "neg_log_loss: %.1f s" % cv_seconds)
            print("  " + "  ".join("C=%.3g:%.4f" % (c, -s) for c, s in zip(CV_GRID, cv_scores)))
            print("  chosen C* = %.6g (the prior variance of every Bayesian row)" % C)
        elif C is not None:
            print("C* = %.6g given on the command line (no cross-validation)" % C)
        print()

        plans = {}
        for method in args.methods:
            try:
                if method == "sklearn":
                    plans[method] = plan_sklearn(C, X, y, X_test)
                elif method == "laplace":
                    plans[method] = plan_laplace(C, X, y, X_test)
                else:
                    plans[method] = plan_skvi(method, C, X, y, X_test, args)
            except Skipped as exc:
                print("%-15s skipped: %s" % (method, exc), flush=True)
        times = {m: [] for m in plans}
        last = {}
        for _ in range(args.repeats):  # interleaved: every method once per round
            for method in list(plans):
                try:
                    last[method], seconds = timed(plans[method][0])
                except Skipped as exc:
                    print("%-15s skipped: %s" % (method, exc), flush=True)
                    del plans[method], times[method]
                    continue
                times[method].append(seconds)
        results = {}
        for method in plans:
            p, extra = plans[method][1](last[method])
            seconds = float(np.median(times[method]))
            row = scores(y_test, p)
            row.update(extra, seconds=seconds)
            results[method] = row
            notes = []
            if "passes" in row:
                notes.append("%d passes (converged_=%s), %d rejected steps"
                             % (row["passes"], row["converged"], row["rejected"]))
            if "prior_var" in row:
                notes.append("learned prior variance %.4g" % row["prior_var"])
            notes += ["warning: %s" % w for w in row.get("warnings", [])]
            print("%-15s fit %7.2f s  acc %.4f  NLL %.4f  ECE %.4f%s"
                  % (method, seconds, row["acc"], row["nll"], row["ece"],
                     "".join("; " + n for n in notes)), flush=True)
    print()
    if not results:
        print("no method ran")
        return 0

    ref = results.get("sklearn")
    body = []
    for m, r in results.items():
        prior = ("%.4g" % r["prior_var"]) if "prior_var" in r else (
            "%.4g" % C if m != "sklearn" else "C=%.4g" % C)
        cells = [m, prior, str(r.get("passes", "")), "%.4f" % r["acc"], "%.4f" % r["nll"],
                 "%.4f" % r["ece"], ("%.1f" % r["elbo"]) if "elbo" in r else "",
                 "%.2f" % r["seconds"], "", ""]
        if ref is not None and m != "sklearn":
            cells[8] = "%.2f" % (r["seconds"] / ref["seconds"])
            cells[9] = "%+.5f" % (r["nll"] - ref["nll"])
        body.append(cells)
    print("Test set a9a.t; ECE over 15 equal-width bins of the top-label confidence")
    print(format_table(("method", "prior var", "passes", "accuracy", "NLL", "ECE", "train ELBO",
                        "fit [s]", "fit/sklearn", "NLL-sklearn"), body,
                       (False,) + (True,) * 9))
    if cv_seconds is not None:
        print("(sklearn's CV search over 11 C values took %.1f s more, not in its fit time)"
              % cv_seconds)
    print()
    if ref is not None:
        for m, r in results.items():
            if not m.startswith("skvi"):
                continue
            same_acc = abs(r["acc"] - ref["acc"]) <= args.acc_tol
            met = same_acc and r["nll"] <= ref["nll"]
            print("target %s: test NLL no worse than sklearn's at equal accuracy: %s "
                  "(NLL %.6f vs %.6f, accuracy %.4f vs %.4f, |diff| %s %.3f; fit %.2fx sklearn's)"
                  % (m, "met" if met else "NOT met", r["nll"], ref["nll"], r["acc"], ref["acc"],
                     "<=" if same_acc else ">", args.acc_tol, r["seconds"] / ref["seconds"]))
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
