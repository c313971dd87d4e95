"""Benchmark skvi's matrix factorization against Surprise and myFM on MovieLens-100k.

Issue targets (checked on the printed summary):
  * skvi-batch: mean test RMSE at or below myFM's, in at most 1/3 of myFM's fit time;
  * skvi-online (one pass over the ratings): mean test RMSE below Surprise SVD's.

What it measures
----------------
For each official split u1..u5 (fit on ``uN.base``, score on ``uN.test``), in one
process, every method fits K = 10 latent factors:

``baseline``     Surprise ``BaselineOnly()`` (defaults; ``verbose=False`` only);
``svd``          Surprise ``SVD(n_factors=10, random_state=0)`` (biased MF by SGD);
``myfm``         ``myfm.MyFMRegressor(rank=10, random_seed=0)``, Gibbs sampling with
                 ``n_iter=n_kept_samples=--myfm-iter`` (200) on the user and item one-hot
                 columns (``OneHotEncoder(handle_unknown='ignore')``, CSR), as in myFM's
                 MovieLens tutorial;
``skvi-batch``   ``skvi.SVIMatrixFactorization(n_components=10, factor_prior="wishart",
                 learning_method="batch", random_state=0, **--batch-opt)``: the
                 Bayesian-PMF prior (a Wishart on each side's prior precision),
                 every argument at its default without ``--batch-opt``;
``skvi-online``  the same with ``learning_method="online", max_iter=1, batch_size=
                 --batch-size`` (200; one pass in minibatches) and ``**--online-opt``;
``skvi-batch-ard`` skvi-batch with ``factor_prior="ard"`` (a Gamma per
                 component) instead, and ``**--batch-opt``;
``skvi-online-default`` ``SVIMatrixFactorization(learning_method="online", max_iter=1,
                 random_state=0)``: one online pass with every other argument at its
                 default (``--online-opt`` is not applied), predictions clipped to [1, 5].

skvi gets ``X``, an (n, 2) int64 array of the (user, item) ids as in the file
(1-based: slot 0 stays at the prior), and the float ratings ``y``.  u5.test holds
item 1682 while u5.base stops at 1679, so ``predict`` must take ids unseen in ``fit``.
Predictions are used as returned (Surprise clips to [1, 5] by default; others not,
except skvi-online-default).  ``--repeat R`` fits every method R times, the methods
interleaved within each round, and reports the median fit time (the RMSE is that of the
first fit; the fits are seeded); so do the binary and ordinal tasks.
Fit time is ``time.perf_counter`` around ``fit(X, y)`` for skvi, building the
``Trainset`` plus ``fit`` for Surprise, one-hot encoding plus ``fit`` for myFM.
BLAS/OpenMP get one thread unless OMP_NUM_THREADS etc. are set.  The summary gives
per method the mean test RMSE and fit seconds over the splits run, and for skvi rows
RMSE / myFM RMSE, RMSE / SVD RMSE and the speed-ups myFM s / skvi s and SVD s /
skvi s, all from this run; a second table lists the RMSE of every split.

How to run ::

    /path/to/venv/bin/pip install -e . scikit-surprise myfm   # peers: keep them out of dev
    python benchmarks/movielens.py [DATA_DIR]                  # all rows, u1..u5
    python benchmarks/movielens.py --methods baseline,svd,myfm --splits 1
    python benchmarks/movielens.py --methods skvi-batch,skvi-online --batch-size 10000
    python benchmarks/movielens.py --batch-opt max_iter=50 --online-opt learning_offset=10

Non-Gaussian likelihoods (Monte Carlo structured SVI, section 4.4: generalised PMF) ::

    python benchmarks/movielens.py --task binary     # ratings 1 vs 5, 80/20 split
    python benchmarks/movielens.py --task ordinal    # 5 ordered categories, 80/20 split

Both read ``u.data`` (all 100k ratings) and split it 80/20 at random (``--seed``,
default 0).  ``--task binary`` keeps the ratings 1 and 5 (1 negative, 5 positive) and
prints the test zero-one error (predicted probability > 1/2) and the test NLL (mean
``-log p(r)``) of ``myfm`` (``MyFMClassifier(rank=10)``, ``--myfm-iter`` Gibbs
iterations) and of ``SVIMatrixFactorization(likelihood='bernoulli')`` with each
algorithm (``skvi-h-mc-ssvi``, ``skvi-s-dsvi``, ``skvi-mc-ssvi``), and with every other
argument at its default (``skvi-default``: batch, ``expectation='gaussian'``, ``max_iter=100``,
``tol=1e-4``), and so with ``expectation='mc'`` (``skvi-default-mc``: partner draws and
H-MC-SSVI, the default before ``expectation='gaussian'``).
The algorithm rows draw partners (``expectation='mc'``).
``--task ordinal`` keeps every rating and prints the test mean absolute error of the expected rating and
the NLL of ``myfm`` (``MyFMOrderedProbit(rank=10)``), of ``skvi-gaussian`` (the
conjugate model, batch, MAE only) and of ``likelihood='ordinal'`` with each algorithm.
The algorithm rows use ``learning_method=--learning-method`` (default batch) and
``max_iter=--passes`` (default 20, ``tol=0``); ``--pmf-opt KEY=VALUE`` adds arguments to
every skvi row.  ``--trace`` prints, after every pass of each skvi fit, its fit time
so far (the time of the trace's own predictions left out), the test metric, the test
NLL and the ELBO: where a fit reaches its held-out quality, against where it stops.

The data are read by ``skvi.datasets.fetch_movielens("100k")``: the rows of u.data
(``user item rating timestamp``) and the official splits, whose rows are those of u1.base,
u1.test, ..., u5.test in file order.  They are found in ``movielens-100k`` in
``skvi.datasets.get_data_home()`` (``$SKVI_DATA``, else ``../shared/data`` beside a
checkout, else ``~/skvi_data``), or in DATA_DIR, the release's folder (or the one holding
``movielens-100k/``); nothing is downloaded unless ``--download`` is given.  A missing
library or skvi estimator skips its row.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TQDM_DISABLE", "1")  # myFM's progress bar

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import Skipped, format_table, key_value, version  # noqa: E402

from skvi.datasets import DataNotFoundError, fetch_movielens, get_data_home  # noqa: E402

K = 10
SEED = 0
ALL_METHODS = ("baseline", "svd", "myfm", "skvi-batch", "skvi-online", "skvi-batch-ard",
               "skvi-online-default")
ALGORITHM_ROWS = ("skvi-default", "skvi-default-mc", "skvi-h-mc-ssvi", "skvi-s-dsvi",
                  "skvi-mc-ssvi")
TASK_METHODS = {
    "binary": ("myfm",) + ALGORITHM_ROWS,
    "ordinal": ("myfm", "skvi-gaussian") + ALGORITHM_ROWS,
}


def parse_args(argv=None):
    data_root = str(get_data_home())
    p = argparse.ArgumentParser(
        description="MovieLens-100k u1..u5: test RMSE and fit time of Surprise, myFM and "
        "skvi matrix factorization (K=10), in one process."
    )
    p.add_argument("--task", choices=("rmse", "binary", "ordinal"), default="rmse",
                   help="rmse: the u1..u5 regression table (default); binary/ordinal: the "
                   "non-Gaussian likelihood tasks on an 80/20 split of u.data")
    p.add_argument("--seed", type=int, default=0, help="80/20 split seed (binary/ordinal)")
    p.add_argument("--passes", type=int, default=20, help="skvi max_iter (binary/ordinal)")
    p.add_argument("--learning-method", choices=("batch", "online"), default="batch",
                   help="skvi learning_method (binary/ordinal)")
    p.add_argument("--trace", action="store_true",
                   help="binary/ordinal: the held-out metric after every pass of each skvi fit")
    p.add_argument("--pmf-opt", action="append", default=[], type=key_value,
                   metavar="KEY=VALUE", help="extra SVIMatrixFactorization argument for the "
                   "binary/ordinal skvi rows (repeatable)")
    p.add_argument("data_dir", nargs="?", default=None, help="folder with u.data and u1.base "
                   "... u5.test, or the one holding movielens-100k/ (default: "
                   "skvi.datasets.get_data_home(), $SKVI_DATA defaulting to ../shared/data "
                   "beside the repository; now %s)" % data_root)
    p.add_argument("--download", action="store_true",
                   help="download MovieLens 100k from GroupLens when it is not found")
    p.add_argument("--splits", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                   choices=[1, 2, 3, 4, 5], help="splits to run (default: 1 2 3 4 5)")
    p.add_argument("--methods", nargs="+", default=[",".join(ALL_METHODS)],
                   help="subset of: %s, comma- or space-separated (default: all)"
                   % ", ".join(ALL_METHODS))
    p.add_argument("--myfm-iter", type=int, default=200, help="myFM Gibbs iterations")
    p.add_argument("--batch-size", type=int, default=200, help="skvi-online minibatch size")
    p.add_argument("--repeat", type=int, default=1,
                   help="fits per method and split, interleaved; the median time is reported")
    for row in ("batch", "online"):
        p.add_argument("--%s-opt" % row, action="append", default=[], type=key_value,
                       metavar="KEY=VALUE", help="extra SVIMatrixFactorization argument "
                       "for skvi-%s (repeatable)"
                       % ("batch and skvi-batch-ard" if row == "batch" else row))
    args = p.parse_args(argv)
    choices = TASK_METHODS.get(args.task, ALL_METHODS)
    if args.methods == [",".join(ALL_METHODS)]:
        args.methods = [",".join(choices)]
    methods = {m.strip() for item in args.methods for m in item.split(",") if m.strip()}
    unknown = sorted(methods - set(choices))
    if unknown or not methods:
        p.error("unknown method(s) %s; choose from %s"
                % (", ".join(unknown), ", ".join(choices)))
    args.methods = [m for m in choices if m in methods]
    args.pmf_opt = dict(args.pmf_opt)
    args.splits = sorted(set(args.splits))
    if args.myfm_iter < 1 or args.batch_size < 1 or args.repeat < 1:
        p.error("--myfm-iter, --batch-size and --repeat must be at least 1")
    args.batch_opt, args.online_opt = dict(args.batch_opt), dict(args.online_opt)
    return args


def load_ratings(data_dir=None, download=False):
    """The rows (user, item, rating, timestamp) of u.data, the splits u1..u5, the folder."""
    try:
        ml = fetch_movielens("100k", data_home=data_dir, download_if_missing=download)
    except DataNotFoundError as exc:
        sys.exit("error: %s\nPass the MovieLens-100k folder (u.data, u1.base ... u5.test) as "
                 "DATA_DIR, e.g.\n    python benchmarks/movielens.py /path/to/movielens-100k\n"
                 "or set SKVI_DATA to the folder that holds movielens-100k/, or add --download."
                 % exc)
    rows = np.column_stack([ml.data, ml.target.astype(np.int64), ml.timestamps])
    return rows, ml.cv, os.path.dirname(ml.filenames[0])


def load_split(rows, cv, split):
    """(uN.base, uN.test) rows, in the files' order."""
    train, test = cv[split - 1]
    return [rows[train], rows[test]]


def fit_surprise(method, train, test):
    try:
        from surprise import SVD, BaselineOnly, Dataset, Reader
    except ImportError as exc:
        raise Skipped("scikit-surprise is not installed (%s)" % exc)
    dataset = Dataset(Reader("ml-100k"))  # only its reader (rating scale 1..5) is used
    raw = [(str(u), str(i), float(r), None) for u, i, r, _ in train.tolist()]
    testset = [(str(u), str(i), float(r)) for u, i, r, _ in test.tolist()]
    if method == "baseline":
        algo = BaselineOnly(verbose=False)
    else:
        algo = SVD(n_factors=K, random_state=SEED)
    start = time.perf_counter()
    algo.fit(dataset.construct_trainset(raw))
    seconds = time.perf_counter() - start
    return np.array([pred.est for pred in algo.test(testset)]), seconds


def fit_myfm(train, test, n_iter):
    try:
        import myfm
        from sklearn.preprocessing import OneHotEncoder
    except ImportError as exc:
        raise Skipped("myfm (or scikit-learn) is not installed (%s)" % exc)
    fm = myfm.MyFMRegressor(rank=K, random_seed=SEED)
    start = time.perf_counter()
    ohe = OneHotEncoder(handle_unknown="ignore")  # user one-hot | item one-hot, CSR
    fm.fit(ohe.fit_transform(train[:, :2]), train[:, 2].astype(np.float64),
           n_iter=n_iter, n_kept_samples=n_iter)
    seconds = time.perf_counter() - start
    return fm.predict(ohe.transform(test[:, :2])), seconds


def fit_skvi(method, train, test, args):
    try:
        from skvi import SVIMatrixFactorization
    except ImportError as exc:
        raise Skipped("skvi has no SVIMatrixFactorization yet (%s)" % exc)
    params = dict(n_components=K, factor_prior="wishart", learning_method="batch",
                  random_state=SEED)
    if method == "skvi-batch-ard":
        params.update(factor_prior="ard")
    if method == "skvi-online":
        params.update(learning_method="online", max_iter=1, batch_size=args.batch_size)
    if method == "skvi-online-default":
        params = dict(learning_method="online", max_iter=1, random_state=SEED)
    elif method == "skvi-online":
        params.update(args.online_opt)  # may override
    else:
        params.update(args.batch_opt)
    model = SVIMatrixFactorization(**params)
    X, y = np.ascontiguousarray(train[:, :2]), train[:, 2].astype(np.float64)  # 1-based ids
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    try:
        pred = model.predict(np.ascontiguousarray(test[:, :2]))
    except Exception as exc:  # e.g. an id beyond those seen in fit
        raise Skipped("predict failed (%s: %s)" % (type(exc).__name__, exc))
    pred = np.asarray(pred, dtype=np.float64)
    if method == "skvi-online-default":
        pred = np.clip(pred, 1.0, 5.0)
    return pred, seconds


def load_task(rows, task, seed):
    """(train, test) rows of u.data for the binary or ordinal task."""
    if task == "binary":
        rows = rows[(rows[:, 2] == 1) | (rows[:, 2] == 5)]
    test = np.random.RandomState(seed).rand(rows.shape[0]) < 0.2
    return rows[~test], rows[test]


def fit_task_myfm(task, train, test, n_iter):
    """myFM's classifier or ordered probit: (test probabilities, seconds)."""
    try:
        import myfm
        from sklearn.preprocessing import OneHotEncoder
    except ImportError as exc:
        raise Skipped("myfm (or scikit-learn) is not installed (%s)" % exc)
    if task == "binary":
        fm, y = myfm.MyFMClassifier(rank=K, random_seed=SEED), (train[:, 2] == 5).astype(int)
    else:
        fm, y = myfm.MyFMOrderedProbit(rank=K, random_seed=SEED), train[:, 2] - 1
    start = time.perf_counter()
    ohe = OneHotEncoder(handle_unknown="ignore")
    fm.fit(ohe.fit_transform(train[:, :2]), y, n_iter=n_iter, n_kept_samples=n_iter)
    seconds = time.perf_counter() - start
    proba = fm.predict_proba(ohe.transform(test[:, :2]))
    if task == "binary":
        proba = np.column_stack([1.0 - proba, proba]) if proba.ndim == 1 else proba
    return np.asarray(proba, dtype=np.float64), seconds


def fit_task_skvi(task, method, train, test, args):
    """skvi's non-Gaussian (or, for skvi-gaussian, conjugate) model on the task."""
    try:
        from skvi import SVIMatrixFactorization
        from skvi.engine import monitor
    except ImportError as exc:
        raise Skipped("skvi is not importable (%s)" % exc)
    X, y = np.ascontiguousarray(train[:, :2]), train[:, 2].astype(np.float64)
    likelihood = "bernoulli" if task == "binary" else "ordinal"
    if method == "skvi-gaussian":
        model = SVIMatrixFactorization(n_components=K, random_state=SEED)
    elif method in ("skvi-default", "skvi-default-mc"):
        extra = {"expectation": "mc"} if method == "skvi-default-mc" else {}
        model = SVIMatrixFactorization(n_components=K, random_state=SEED,
                                       likelihood=likelihood, **extra, **args.pmf_opt)
    else:
        # The algorithm rows are Monte Carlo structured SVI's: partner draws.
        params = dict(n_components=K, random_state=SEED, tol=0, max_iter=args.passes,
                      learning_method=args.learning_method, likelihood=likelihood,
                      algorithm=method[len("skvi-"):], expectation="mc")
        params.update(args.pmf_opt)
        model = SVIMatrixFactorization(**params)
    Xt = np.ascontiguousarray(test[:, :2])
    trace = _PassTrace(task, model, Xt, test) if args.trace and method != "skvi-gaussian" else None
    start = time.perf_counter()
    if trace is None:
        model.fit(X, y)
    else:
        with monitor(trace):
            model.fit(X, y)
    seconds = time.perf_counter() - start - (0.0 if trace is None else trace.spent)
    if method == "skvi-gaussian":
        return None, model.predict(Xt), seconds
    return model.predict_proba(Xt), None, seconds


def task_scores(task, proba, test):
    """(metric, NLL) of class probabilities on the test rows: 0/1 error or MAE of the mean."""
    truth = (test[:, 2] == 5).astype(int) if task == "binary" else test[:, 2] - 1
    p_true = np.clip(proba[np.arange(truth.shape[0]), truth], 1e-300, None)
    point = proba @ (np.array([0.0, 1.0]) if task == "binary" else np.arange(1.0, 6.0))
    if task == "binary":
        metric = float(np.mean((point > 0.5) != truth))
    else:
        metric = float(np.mean(np.abs(point - test[:, 2])))
    return metric, float(-np.mean(np.log(p_true)))


class _PassTrace:
    """A ``skvi.engine.monitor`` callback: the test scores after every pass, its own time kept."""

    def __init__(self, task, model, Xt, test):
        self.task, self.model, self.Xt, self.test = task, model, Xt, test
        self.spent = 0.0

    def __call__(self, record):
        if record.event != "pass":
            return
        start = time.perf_counter()
        metric, nll = task_scores(self.task, self.model.predict_proba(self.Xt), self.test)
        name = "error" if self.task == "binary" else "MAE"
        elbo = "-" if record.elbo is None else f"{record.elbo:.2f}"
        print(f"    pass {record.pass_index:3d}  {record.elapsed - self.spent:7.2f} s  "
              f"{name} {metric:.4f}  NLL {nll:.4f}  ELBO {elbo}", flush=True)
        self.spent += time.perf_counter() - start


def main_task(args):
    """The binary or ordinal table."""
    wall_start = time.perf_counter()
    rows, _, _ = load_ratings(args.data_dir, args.download)
    train, test = load_task(rows, args.task, args.seed)
    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "sklearn", "skvi", "myfm"):
        print("  %-9s %s" % (name, version(name)))
    print("task %s: %d train / %d test ratings (u.data, 80/20 split, seed %d); K=%d, myFM %d "
          "Gibbs iterations, skvi %s with max_iter=%d (skvi-default: its defaults), extra %s"
          % (args.task, train.shape[0], test.shape[0], args.seed, K, args.myfm_iter,
             args.learning_method, args.passes, args.pmf_opt))
    print()
    rows, times, skipped = {}, {}, set()
    # --repeat R: the methods interleaved R times (A, B, A, B, ...); the
    # median fit time is reported (every fit gives the same scores).
    for _ in range(args.repeat):
        for method in args.methods:
            if method in skipped:
                continue
            try:
                if method == "myfm":
                    proba, seconds = fit_task_myfm(args.task, train, test, args.myfm_iter)
                    point = None
                else:
                    proba, point, seconds = fit_task_skvi(args.task, method, train, test, args)
            except Skipped as exc:
                print("%-15s skipped: %s" % (method, exc), flush=True)
                skipped.add(method)
                continue
            if proba is not None:
                metric, nll = task_scores(args.task, proba, test)
            else:  # the conjugate model's predicted ratings: MAE only
                metric, nll = float(np.mean(np.abs(point - test[:, 2]))), None
            times.setdefault(method, []).append(seconds)
            rows[method] = (metric, nll, float(np.median(times[method])))
            print("%-15s fit %8.2f s  %s %.4f  NLL %s" % (
                method, seconds if seconds is not None else float("nan"),
                "error" if args.task == "binary" else "MAE", metric,
                "-" if nll is None else "%.4f" % nll), flush=True)
    print()
    if args.repeat > 1:
        print("fit [s]: the median of %d interleaved fits" % args.repeat)
    name = "0/1 error" if args.task == "binary" else "MAE"
    body = []
    for m, (metric, nll, sec) in rows.items():
        cells = [m, "%.4f" % metric, "-" if nll is None else "%.4f" % nll, "%.2f" % sec, "", ""]
        if m != "myfm" and "myfm" in rows:
            cells[4] = "%+.4f" % (metric - rows["myfm"][0])
            cells[5] = "%.2fx" % (rows["myfm"][2] / sec)
        body.append(cells)
    print(format_table(("method", name, "test NLL", "fit [s]", "%s - myFM" % name,
                        "myFM s/skvi s"), body, (False,) + (True,) * 5))
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))
    return 0


def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    if args.task != "rmse":
        return main_task(args)
    rows, cv, folder = load_ratings(args.data_dir, args.download)
    data = {s: load_split(rows, cv, s) for s in args.splits}

    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "sklearn", "skvi", "surprise", "myfm"):
        print("  %-9s %s" % (name, version(name)))
    splits = " ".join("u%d" % s for s in args.splits)
    print("data: %s, splits %s" % (os.path.abspath(folder), splits))
    print("K=%d, myFM %d Gibbs iterations, skvi-online batch_size=%d, batch opts %s, "
          "online opts %s" % (K, args.myfm_iter, args.batch_size, args.batch_opt, args.online_opt))
    print()

    results = {m: {} for m in args.methods}  # method -> split -> (rmse, seconds)
    times = {m: {} for m in args.methods}  # method -> split -> [seconds of each fit]
    for split in args.splits:
        train, test = data[split]
        for round_ in range(args.repeat):
            for method in [m for m in args.methods if m in results]:
                try:
                    if method in ("baseline", "svd"):
                        pred, seconds = fit_surprise(method, train, test)
                    elif method == "myfm":
                        pred, seconds = fit_myfm(train, test, args.myfm_iter)
                    else:
                        pred, seconds = fit_skvi(method, train, test, args)
                except Skipped as exc:
                    print("%-14s u%d skipped: %s" % (method, split, exc), flush=True)
                    del results[method]
                    continue
                rmse = float(np.sqrt(np.mean((test[:, 2] - pred) ** 2)))
                runs = times[method].setdefault(split, [])
                runs.append(seconds)
                rmse = results[method].get(split, (rmse,))[0]  # the first fit's
                results[method][split] = (rmse, float(np.median(runs)))
                print("%-19s u%d  fit %8.2f s  RMSE %.4f" % (method, split, seconds, rmse),
                      flush=True)
    print()
    if not results:
        print("no method ran")
        return 0

    mean = {m: tuple(np.mean([r[split][j] for split in args.splits]) for j in (0, 1))
            for m, r in results.items()}

    body = []
    for m, (rmse, sec) in mean.items():
        cells = [m, "%.4f" % rmse, "%.2f" % sec, "", "", "", ""]
        if m.startswith("skvi"):
            if "myfm" in mean:
                cells[3] = "%.3f" % (rmse / mean["myfm"][0])
                cells[5] = "%.2fx" % (mean["myfm"][1] / sec)
            if "svd" in mean:
                cells[4] = "%.3f" % (rmse / mean["svd"][0])
                cells[6] = "%.2fx" % (mean["svd"][1] / sec)
        body.append(cells)
    print("Mean over splits %s" % splits)
    print(format_table(("method", "RMSE", "fit [s]", "RMSE/myFM", "RMSE/SVD",
                        "myFM s/skvi s", "SVD s/skvi s"), body, (False,) + (True,) * 6))
    print()
    print("Test RMSE per split")
    print(format_table(("method",) + tuple("u%d" % s for s in args.splits),
                       [[m] + ["%.4f" % r[s][0] for s in args.splits] for m, r in results.items()],
                       (False,) + (True,) * len(args.splits)))
    print()
    targets = (
        ("skvi-batch", "myfm", "RMSE <= myFM's in <= 1/3 of its time",
         lambda r, s, r_ref, s_ref: r <= r_ref and 3 * s <= s_ref),
        ("skvi-batch", "myfm", "RMSE < myFM's at >= 10x its speed",
         lambda r, s, r_ref, s_ref: r < r_ref and 10 * s <= s_ref),
        ("skvi-online", "svd", "RMSE < SVD's", lambda r, s, r_ref, s_ref: r < r_ref),
        ("skvi-online-default", "svd", "RMSE <= 0.935 in <= SVD's time",
         lambda r, s, r_ref, s_ref: r <= 0.935 and s <= s_ref),
    )
    for row, ref, what, test_ in targets:
        if row in mean and ref in mean:
            (r, s), (r_ref, s_ref) = mean[row], mean[ref]
            print("target %s %s: %s (RMSE %.4f vs %.4f, %s s / skvi s = %.2f)"
                  % (row, what, "met" if test_(r, s, r_ref, s_ref) else "NOT met", r, r_ref,
                     ref, s_ref / s))
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
