"""ELBO against fit time of H-MC-SSVI, MC-SSVI and S-DSVI on a9a (Monte Carlo structured SVI, Figure 1).

The Monte Carlo structured SVI paper ("Monte Carlo structured SVI for two-level non-conjugate models") fits Bayesian logistic regression with a full-covariance Gaussian posterior by three
stochastic algorithms and finds, in ELBO against time, H-MC-SSVI faster than MC-SSVI faster
than S-DSVI.  This example repeats that ordering experiment with
:class:`skvi.SVILogisticRegression` on the LIBSVM ``a9a`` training set (32,561 rows, 123
binary features, used as they are unless ``--standardize`` z-scores them as the paper
does):

* every run has the prior ``w ~ N(0, v I)``, intercept ``N(0, 100)``, with
  ``v = --prior-variance`` (default 0.316, the C chosen by 5-fold cross-validation in
  ``benchmarks/glm.py``), and starts from the estimator's own initialisation (see
  ``docs/glm.md``), the same for every algorithm;
* online runs are driven by ``partial_fit`` over the same shuffled minibatches of at most
  ``--batch-size`` rows (2000; a pass is cut into near-equal minibatches by
  ``skvi.engine.even_batches``, as online ``fit`` cuts it), the same order for every
  algorithm (one ``RandomState(--seed)`` permutation per pass), with ``classes=[0, 1]`` on
  the first call and ``total_samples`` = the training-set size, so ``N / |S|`` is exact;
* all runs share the schedule ``rho_t = (t + learning_offset) ** -learning_decay`` of the
  natural-gradient parts (defaults 1.0 and 0.7, the estimator's) and, for the AdaGrad parts
  (the mean in H-MC-SSVI; mean and Cholesky factor in S-DSVI), every value of
  ``--gradient-rates`` is run and shown (default: 0.1, the estimator's default
  ``gradient_learning_rate`` (0.5 at the time of writing) and 1.0, the paper's value on
  z-scored features).  MC-SSVI has no AdaGrad part and is run once.  Expectations are the
  estimator default (10 Monte-Carlo draws per row);
* optionally (on by default) batch runs: ``fit`` with ``learning_method='batch'`` (every
  step on all rows, ``rho = 1``; with step safety a step that lowers the ELBO is rejected
  and halved), ``tol=0``, the same number of passes, for H-MC-SSVI at every rate and for
  MC-SSVI (the fixed-point iteration of Sheth and Khardon).  Their per-pass times and ELBOs
  are the estimator's ``history_`` (seconds since ``fit`` began, its initialisation
  included as the online runs' clocks include their first ``partial_fit`` call, and the
  ELBO the batch step computes itself, ``lower_bounds_``: the exact full-data ELBO in batch
  mode).

An online run whose ELBO falls below ``--diverged-factor`` (100) times its value after the
first step is stopped and marked ``[stopped]`` (a diverging S-DSVI run otherwise spends most
of the time in rejected and retried steps).  The online runs are interleaved minibatch by
minibatch, so that load from other processes on a shared machine hits all of them alike;
each run's clock counts only its own ``partial_fit`` calls.  The ELBO is the full
training-set ELBO ``clf.elbo(X, y)`` (20-point Gauss-Hermite, deterministic), evaluated
*outside* the timed region after minibatches 1, 2, 4 and 8 and at the end of every pass.
BLAS runs on one thread.

It prints (1) the ELBO and elapsed fit seconds of every run after each pass, (2) the ELBO
of every run at common times (the last evaluation at or before the time), and (3) when each
run first came within ``--threshold`` (relative, default 1% and 0.1%) of the best ELBO any
run reached, and which run got there first.  With matplotlib installed it saves the curves
to ``--output`` (default ``glm_convergence.png`` in the current directory, Agg backend);
without it the tables are printed and the plot is skipped with a message.

How to run (about a minute with the defaults)::

    python examples/glm_convergence.py
    python examples/glm_convergence.py --passes 20 --gradient-rates 0.1 0.3 1.0
    python examples/glm_convergence.py --no-batch --output /tmp/fig1.png
    python examples/glm_convergence.py --standardize --prior-variance 1   # paper's scaling
    python examples/glm_convergence.py --data /path/to/a9a-adult-libsvm
    python examples/glm_convergence.py --download      # fetch a9a from the LIBSVM page first
    python examples/glm_convergence.py --max-rows 2000 --passes 1 --no-batch  # seconds

The data are read by :func:`skvi.datasets.fetch_libsvm` (``"a9a"``, the training file):
from ``a9a-adult-libsvm/`` in ``skvi.datasets.get_data_home()`` (``$SKVI_DATA``, else
``../shared/data`` beside a checkout, else ``~/skvi_data``), or from ``--data``, the
folder holding ``a9a`` (or the one holding ``a9a-adult-libsvm/``).  Nothing is downloaded
unless ``--download`` is given (it downloads into ``a9a-adult-libsvm/`` there).
``--max-rows N`` keeps the first ``N`` rows (and ``total_samples`` is then ``N``).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from skvi import SVILogisticRegression  # noqa: E402
from skvi.datasets import DataNotFoundError, fetch_libsvm, get_data_home  # noqa: E402
from skvi.engine import even_batches  # noqa: E402


def parse_args(argv=None):
    data_root = str(get_data_home())
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--data", default=None,
                   help="folder with the a9a training file, or the one holding "
                   "a9a-adult-libsvm/ (default: skvi.datasets.get_data_home(), now %s)" % data_root)
    p.add_argument("--download", action="store_true",
                   help="download a9a from the LIBSVM page when it is not found")
    p.add_argument("--passes", type=int, default=10, help="passes over the data (default 10)")
    p.add_argument("--max-rows", type=int, default=None,
                   help="use only the first N rows of a9a (default: all 32,561); with "
                   "--passes 1 --no-batch a quick check that runs in seconds")
    p.add_argument("--batch-size", type=int, default=2000, help="minibatch rows (default 2000)")
    p.add_argument("--prior-variance", type=float, default=0.316,
                   help="prior variance of the weights (default 0.316)")
    default_rates = sorted({0.1, float(SVILogisticRegression().gradient_learning_rate), 1.0})
    p.add_argument("--gradient-rates", type=float, nargs="+", default=default_rates,
                   help="AdaGrad gradient_learning_rate values, each run for H-MC-SSVI and "
                   "S-DSVI (default %s)" % " ".join("%g" % r for r in default_rates))
    p.add_argument("--learning-offset", type=float, default=1.0)
    p.add_argument("--learning-decay", type=float, default=0.7)
    p.add_argument("--intercept-prior-variance", type=float, default=100.0)
    p.add_argument("--no-batch", action="store_true", help="skip the batch runs")
    p.add_argument("--standardize", action="store_true",
                   help="z-score the features (dense), as the Monte Carlo structured SVI paper does, instead of using "
                   "a9a's binary features as they are")
    p.add_argument("--threshold", type=float, nargs="+", default=[0.01, 0.001],
                   help="relative distances to the best ELBO for the time-to-reach table")
    p.add_argument("--diverged-factor", type=float, default=100.0,
                   help="stop an online run once its ELBO is below this many times its value "
                   "after the first step (default 100; 0 never stops)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="glm_convergence.png", help="PNG path")
    args = p.parse_args(argv)
    if args.passes < 1 or args.batch_size < 1:
        p.error("--passes and --batch-size must be at least 1")
    if args.max_rows is not None and args.max_rows < 2:
        p.error("--max-rows must be at least 2")
    return args


def load(data_dir=None, max_rows=None, download=False):
    """a9a's training rows (CSR, float64, int32 indices) and 0/1 labels."""
    try:
        X, y = fetch_libsvm("a9a", data_home=data_dir, download_if_missing=download,
                            return_X_y=True)
    except DataNotFoundError as exc:
        sys.exit("error: %s\nPass the folder that holds the LIBSVM file a9a, e.g.\n"
                 "    python examples/glm_convergence.py --data /path/to/a9a-adult-libsvm\n"
                 "or set SKVI_DATA to the folder that holds a9a-adult-libsvm/ (now %s), "
                 "or add --download." % (exc, get_data_home()))
    if max_rows is not None:
        X, y = X[:max_rows], y[:max_rows]
    return X, (y > 0).astype(np.int64)


class OnlineRun:
    """One algorithm driven by partial_fit; keeps its own clock and ELBO trace."""

    def __init__(self, label, X, y, diverged_factor, **params):
        self.label, self.X, self.y = label, X, y
        self.diverged_factor = diverged_factor
        self.clf = SVILogisticRegression(total_samples=X.shape[0], **params)
        self.seconds = 0.0
        self.steps = 0
        self.trace = []  # (seconds, passes, ELBO)
        self.failed = None  # why the run stopped early, if it did

    def step(self, rows):
        if self.failed:
            return
        start = time.perf_counter()
        try:
            if self.steps == 0:
                self.clf.partial_fit(self.X[rows], self.y[rows], classes=[0, 1])
            else:
                self.clf.partial_fit(self.X[rows], self.y[rows])
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            self.failed = "step %d raised %s: %s" % (self.steps + 1, type(exc).__name__, exc)
            return
        self.seconds += time.perf_counter() - start
        self.steps += 1

    def record(self, passes):
        if self.failed:
            return
        elbo = float(self.clf.elbo(self.X, self.y))
        self.trace.append((self.seconds, passes, elbo))
        first = self.trace[0][2]
        if not np.isfinite(elbo) or (
                self.diverged_factor > 0 and elbo < -self.diverged_factor * abs(first)):
            self.failed = ("diverged after %d steps: ELBO %.4g is below %g x its value %.4g "
                           "after the first step" % (self.steps, elbo, self.diverged_factor,
                                                      first))


def run_online(args, X, y):
    common = dict(prior_variance=args.prior_variance, random_state=args.seed,
                  diverged_factor=args.diverged_factor,
                  intercept_prior_variance=args.intercept_prior_variance,
                  learning_offset=args.learning_offset, learning_decay=args.learning_decay)
    runs = []
    for rate in args.gradient_rates:
        runs.append(OnlineRun("H-MC-SSVI lr=%g" % rate, X, y, algorithm="h-mc-ssvi",
                              gradient_learning_rate=rate, **common))
    runs.append(OnlineRun("MC-SSVI", X, y, algorithm="mc-ssvi", **common))
    for rate in args.gradient_rates:
        runs.append(OnlineRun("S-DSVI lr=%g" % rate, X, y, algorithm="s-dsvi",
                              gradient_learning_rate=rate, **common))
    n = X.shape[0]
    rng = np.random.RandomState(args.seed)
    batches = even_batches(n, args.batch_size)
    per_pass = len(batches)
    early = {1, 2, 4, 8}
    for p in range(args.passes):
        order = rng.permutation(n)
        for b, batch in enumerate(batches):
            rows = order[batch]
            for run in runs:  # interleaved: machine noise hits every run alike
                run.step(rows)
                if run.steps in early or b == per_pass - 1:
                    run.record(p + (b + 1) / per_pass)
        print("  pass %d/%d done" % (p + 1, args.passes), flush=True)
    return runs


def run_batch(args, X, y, algorithm, rate):
    """``fit`` in batch mode; per-pass times and ELBOs from its ``history_``."""
    label = "batch %s" % algorithm.upper() + (" lr=%g" % rate if rate is not None else "")
    clf = SVILogisticRegression(
        algorithm=algorithm, learning_method="batch", max_iter=args.passes, tol=0,
        prior_variance=args.prior_variance, intercept_prior_variance=args.intercept_prior_variance,
        random_state=args.seed,
        **({} if rate is None else {"gradient_learning_rate": rate}))
    try:
        clf.fit(X, y)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
        return label, [], 0, "fit raised %s: %s" % (type(exc).__name__, exc)
    history = clf.history_
    trace = [(float(t), k + 1, float(b))
             for k, (t, b) in enumerate(zip(history["time"], history["elbo"]))]
    return label, trace, clf.n_rejected_steps_, None


def elbo_at(trace, t):
    """Last evaluated ELBO at or before time t (nan before the first evaluation)."""
    value = np.nan
    for seconds, _, elbo in trace:
        if seconds <= t:
            value = elbo
    return value


def format_table(header, body):
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    fmt = lambda row: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body])


def plot(traces, best, path, batch_size):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plot skipped (the tables above have the numbers)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, trace in traces.items():
        t = [s for s, _, _ in trace]
        e = np.array([v for _, _, v in trace])
        style = "--" if label.startswith("batch") else "-"
        axes[0].plot(t, e, style, marker=".", label=label)
        axes[1].semilogy(t, np.maximum(best - e, 1e-1), style, marker=".", label=label)
    finals = [trace[-1][2] for trace in traces.values()]
    low = max(min(finals), best - abs(best))  # at most 100% below the best
    axes[0].set(xlabel="fit time [s]", ylabel="training-set ELBO",
                ylim=(low - 0.02 * (best - low) - 1.0, best + 0.02 * (best - low) + 1.0),
                title="a9a, minibatches of %d: ELBO vs fit time" % batch_size)
    axes[1].set(xlabel="fit time [s]", ylabel="best ELBO - ELBO (log scale)",
                title="distance to the best ELBO reached")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("saved %s" % os.path.abspath(path))


def main(argv=None):
    args = parse_args(argv)
    X, y = load(args.data, args.max_rows, args.download)
    if args.standardize:  # the paper's z-scored features (dense; constant columns kept at 0)
        X = X.toarray()
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    print("a9a%s: %d rows x %d features; %d passes of minibatches of %d; prior variance %g, "
          "intercept %g; rho_t = (t + %g)^-%g; AdaGrad rates %s; seed %d"
          % ((" (its first %d rows)" % X.shape[0] if args.max_rows is not None else "")
             + (" (z-scored)" if args.standardize else ""), X.shape[0], X.shape[1], args.passes,
             args.batch_size, args.prior_variance, args.intercept_prior_variance,
             args.learning_offset, args.learning_decay,
             " ".join("%g" % r for r in args.gradient_rates), args.seed))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        runs = run_online(args, X, y)
        traces = {run.label: run.trace for run in runs}
        rejected = {run.label: getattr(run.clf, "n_rejected_steps_", 0) for run in runs}
        failed = {run.label: run.failed for run in runs if run.failed}
        if not args.no_batch:
            batch_runs = [("h-mc-ssvi", rate) for rate in args.gradient_rates]
            for algorithm, rate in batch_runs + [("mc-ssvi", None)]:
                label, trace, n_rej, why = run_batch(args, X, y, algorithm, rate)
                traces[label], rejected[label] = trace, n_rej
                if why:
                    failed[label] = why
    messages = sorted({str(w.message).split(". ")[0] for w in caught})
    for label, why in failed.items():
        print("%s stopped: %s" % (label, why))
    traces = {label + (" [stopped]" if label in failed else ""): trace
              for label, trace in traces.items() if trace}
    rejected = {label + (" [stopped]" if label in failed else ""): n
                for label, n in rejected.items()}
    if not traces:
        print("no run produced an ELBO")
        return 1
    best = max(e for trace in traces.values() for _, _, e in trace)

    print()
    shown = sorted({k for k in (1, 2, 3, 5, 10, 20, 50, 100) if k <= args.passes} | {args.passes})
    print("ELBO [fit seconds] after passes %s (rejected steps in the last column)"
          % ", ".join(map(str, shown)))
    body = []
    for label, trace in traces.items():
        at_pass = {round(p, 9): (s, e) for s, p, e in trace}
        cells = [label]
        for k in shown:
            s, e = at_pass.get(k, (np.nan, np.nan))
            cells.append("%.1f [%.2f]" % (e, s) if np.isfinite(s) else "stopped")
        body.append(cells + [str(rejected[label])])
    print(format_table(["run"] + ["pass %d" % k for k in shown]
                       + ["rej"], body))

    complete = [trace for label, trace in traces.items() if not label.endswith("[stopped]")]
    t_min = min(trace[-1][0] for trace in (complete or list(traces.values())))
    times = [t_min * f for f in (0.125, 0.25, 0.5, 1.0)]
    print()
    print("ELBO at common fit times (last evaluation at or before; the shortest run took "
          "%.2f s)" % t_min)
    body = [[label] + ["%.1f" % elbo_at(trace, t) for t in times]
            + ["%.1f" % trace[-1][2], "%.2f" % trace[-1][0]] for label, trace in traces.items()]
    print(format_table(["run"] + ["t=%.2fs" % t for t in times] + ["final", "total s"], body))

    print()
    print("First evaluation within a relative distance of the best ELBO (%.1f, any run)" % best)
    reached = {label: [] for label in traces}
    firsts = []
    for thr in args.threshold:
        target = best - thr * abs(best)
        got = {}
        for label, trace in traces.items():
            hit = [(s, p) for s, p, e in trace if e >= target]
            reached[label].append("%.2f s / %.2f passes" % hit[0] if hit else "not reached")
            if hit:
                got[label] = hit[0][0]
        first = min(got, key=got.get) if got else "no run"
        firsts.append("within %g%% (ELBO >= %.1f): %s first" % (100 * thr, target, first))
    print(format_table(["run"] + ["within %g%%" % (100 * thr) for thr in args.threshold],
                       [[label] + cells for label, cells in reached.items()]))
    for line in firsts:
        print(line)
    if messages:
        print()
        print("warnings raised during the runs:")
        for m in messages:
            print("  " + m)
    print()
    plot(traces, best, args.output, args.batch_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
