"""Benchmark skvi's Bayesian Gaussian mixture against scikit-learn's, batch, online and streamed.

Targets (printed as PASS/FAIL lines at the end)
-----------------------------------------------
(a) ``skvi online``: held-out mean log-likelihood (plug-in density) no more than 0.5%
    below that of scikit-learn batch's posterior, in at most 1/10 of its fit time (one
    line per online setting; the predictive density's difference is shown too).
(b) ``skvi batch``: at least 2x faster than scikit-learn batch at the same ELBO: the
    time at which a skvi batch fit first has an ELBO per sample within 1e-3 of
    scikit-learn's final one (or above) is at most half the time at which
    scikit-learn's own fit first does.  The ratio to scikit-learn's whole fit, and
    the whole fits with skvi's default ``tol``, are printed too.
(c) stream: ``partial_fit`` over ``--stream-n`` rows peaks below 1 GiB of resident
    memory, and its held-out mean log-likelihood is no more than 1% below that of
    skvi batch fitted on the training set (plug-in and predictive densities both).

Data
----
A known mixture of K = 10 Gaussians in d = 10, drawn from ``--seed``: weights
proportional to uniform(0.5, 3) draws (unequal, largest/smallest at most 6), means
``N(0, I)`` (spread so that the clusters overlap moderately: the Bayes classifier of
the true mixture mislabels several percent of the held-out rows, printed as "Bayes
error"), and full covariances ``Q diag(e) Q^T`` with a random rotation ``Q`` and
eigenvalues log-uniform on [0.3, 3].  ``--n`` training rows (default 10^6) and
``--test-n`` held-out rows (10^5) are drawn from independent generators; the held-out
mean log-density of the true mixture is printed as the ceiling of every score.

What it measures
----------------
One process, one BLAS thread (environment variables set before numpy is imported,
and threadpoolctl when installed).  Every row is fitted ``--reps`` times, the rows
taking turns (round robin, the order reversed on every other round, so that skvi and
scikit-learn meet the same drift of a shared machine); the fit time is the median
of the wall times (``time.perf_counter`` around ``fit`` alone) with their min-max.
The fits are seeded, so every repetition gives the same model; the first is scored.

``sklearn batch``
    ``sklearn.mixture.BayesianGaussianMixture(n_components=10,
    covariance_type='full', random_state=seed)``: its defaults otherwise (tol=1e-3
    on its *total* lower bound, max_iter=100, k-means initialisation on all rows,
    Dirichlet-process prior).
``skvi batch``
    ``SVIBayesianGaussianMixture`` with the same arguments and its defaults
    (``learning_method='batch'``; its ``tol`` bounds the change of the ELBO *per
    sample*, so on large data it may stop before scikit-learn; the defaults are
    printed at the start of a run).
``skvi batch, sklearn's tol``
    The same with ``tol=1e-3 / n``: scikit-learn's stopping rule in skvi's terms.
    For ``covariance_type='full'`` the two libraries' batch updates are the same, so
    this row runs scikit-learn's iterations and stops at the same pass.
``skvi online bs=B x P``
    ``learning_method='online', batch_size=B, max_iter=P, tol=0`` (exactly P passes
    of SVI steps on minibatches of B rows; the initialisation is k-means on a random
    20,000-row subsample; the exact ELBO of all rows is evaluated after every pass,
    which is part of the time).  Default settings ``--online 1000x1,1000x3,5000x1``; see
    "Choice of the online settings" below.

For every row: the number of passes (``n_iter_``, "nc" when not converged), the
median seconds per pass and the initialisation time, both estimates: the time of
the first pass minus the median time between passes (skvi: the pass times of its
``history_``; scikit-learn: its verbose iteration lines, captured and time-stamped
line by line).
Then the held-out mean log-likelihood (skvi's ``score`` on the held-out rows) with
the plug-in density (``set_params(density='plug-in')``: the Gaussian mixture at the
posterior means ``weights_``, ``means_``, ``covariances_``) and with skvi's default
posterior predictive (a Student-t mixture), each relative to scikit-learn's in %
(``100 (ll - ll_sk) / |ll_sk|``, positive = better), and the exact ELBO of the
training set per sample (``elbo(X_train) / n``, all constants).  scikit-learn's
posterior is scored by the same functions, through
``SVIBayesianGaussianMixture.from_sklearn(bgm)``, so that the differences are those
of the posteriors alone.  scikit-learn's own ``score`` is printed too, but it is not
the plug-in density: ``BayesianGaussianMixture.score_samples`` is ``log sum_k
exp(E[log pi_k] + E[log N(x | mu_k, Lambda_k)])`` (its E-step's normaliser), which
lies below the plug-in density (by 0.01-0.1% of the value at the sizes tried, less
with more data).

Time to scikit-learn's ELBO: the goal is scikit-learn's final exact ELBO per sample
minus 1e-3.  For a skvi batch fit, ``lower_bounds_`` (one exact ELBO per pass) give
the first pass at the goal, and the time stamp of that pass's verbose line its time
(median over the repetitions).  scikit-learn's ``lower_bounds_`` drop the terms that
do not change during its fit; they are shifted by the gap between its final exact
ELBO and its last lower bound, and its first pass at the goal timed the same way.
The largest deviation of scikit-learn's per-pass lower bounds from skvi's plus a
constant is printed: for 'full' the two fits run the same iterations.

Stream: in a child process (``multiprocessing``, 'forkserver'), ``--stream-n`` rows
(10^7) are drawn from the same mixture in chunks of ``--chunk`` rows (10^5; never
more than one chunk in memory) and fed to ``partial_fit`` of
``SVIBayesianGaussianMixture(total_samples='auto', batch_size=--stream-batch-size,
random_state=seed)``.  The child reports its peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, KiB on Linux; also the value right
before the stream, after the imports, and ``VmHWM`` from ``/proc/self/status`` as a
check), the seconds spent in ``partial_fit`` and those spent drawing the chunks; the
fitted estimator is sent back and scored in the parent against ``skvi batch``
(fitted on the ``--n`` training rows).  The child is not started by 'spawn' (nor
by ``subprocess``): on Linux a process started by fork or vfork and exec inherits
its parent's peak in ``ru_maxrss``, so it would report the peak of this process,
which holds the training set and scikit-learn's fit.  A forkserver's children fork
from a small server process and count their own memory ('spawn' is used where
there is no forkserver).

Choice of the online settings
-----------------------------
Measured while writing this script with ``--n 200000 --reps 1 --skip-stream --online
500x1,...,5000x3`` (seed 0): scikit-learn and skvi batch reach held-out -15.7523
(plug-in) after 100 passes, 0.36 s and 0.13 s a pass; the online fits after P
passes of minibatches of B rows (held-out plug-in, seconds per pass including the
full-data ELBO at its end):

    B \\ P      1         2         3        s/pass
    500     -15.7574  -15.7542  -15.7535    0.43
    1000    -15.7646  -15.7555  -15.7539    0.36
    2000    -15.7818  -15.7635  -15.7572    0.33
    5000    -15.8005  -15.7864  -15.7768    0.30

More steps (smaller B, more passes) help more than they cost; all were within
0.31% of the batch fits, in at most 1/25 of scikit-learn's time.  A pass over
10^6 rows holds five times as many steps.  The defaults keep B = 1000 (the
estimator's default; 1 and 3 passes) and B = 5000 (1 pass) as the cheap end; pass
others with ``--online``.  The result also depends on the k-means start (on a
20,000-row subsample for online fits): other ``random_state`` values can land in a
different local optimum, for the batch fits as well.

How to run
----------
::

    python benchmarks/gmm.py                                   # full sizes, --reps 3
    python benchmarks/gmm.py --n 20000 --stream-n 100000 --reps 1   # quick check
    python benchmarks/gmm.py --skip-stream --markdown docs/gmm_benchmark.md
    python benchmarks/gmm.py --online 500x1,1000x2 --stream-batch-size 500

The full run fits scikit-learn (up to 100 iterations on 10^6 rows) and two skvi
batch rows three times each, and streams 10^7 rows once; from the per-pass times at
smaller sizes, expect roughly 20-30 minutes on one core.  Only scikit-learn and skvi
are needed (threadpoolctl is used when installed).
"""

import os

# Single-threaded everywhere: set before numpy (or anything that loads BLAS).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table, one_blas_thread, version  # noqa: E402

K = 10
D = 10
SPREAD = 1.0  # standard deviation of the component means around the origin
ELBO_TOL = 1e-3  # "the same ELBO": per sample, absolute
ONLINE_LL_TOL = 0.5  # target (a), % of |held-out log-likelihood|
ONLINE_TIME_FRACTION = 0.1  # target (a)
BATCH_SPEEDUP = 2.0  # target (b)
STREAM_RSS_KIB = 1024 * 1024  # target (c): 1 GiB
STREAM_LL_TOL = 1.0  # target (c), %


# ------------------------------------------------------------------------ data
def make_mixture(seed):
    """Weights, means and covariances of the true mixture."""
    rng = np.random.default_rng([seed, 0])
    weights = rng.uniform(0.5, 3.0, size=K)
    weights = np.sort(weights / weights.sum())[::-1]
    means = rng.normal(scale=SPREAD, size=(K, D))
    covariances = np.empty((K, D, D))
    for k in range(K):
        q, _ = np.linalg.qr(rng.normal(size=(D, D)))
        eigenvalues = np.exp(rng.uniform(np.log(0.3), np.log(3.0), size=D))
        covariances[k] = (q * eigenvalues) @ q.T
    return weights, means, covariances


def draw(mixture, n, rng):
    """``n`` rows of the mixture, in random order, and their components."""
    weights, means, covariances = mixture
    z = rng.choice(K, size=n, p=weights)
    X = rng.standard_normal((n, D))
    chol = np.linalg.cholesky(covariances)
    for k in range(K):
        rows = z == k
        X[rows] = X[rows] @ chol[k].T + means[k]
    return X, z


def true_log_joint(mixture, X):
    """``log w_k + log N(x | mu_k, Sigma_k)``, shape (n, K)."""
    weights, means, covariances = mixture
    out = np.empty((X.shape[0], K))
    for k in range(K):
        chol = np.linalg.cholesky(covariances[k])
        y = np.linalg.solve(chol, (X - means[k]).T)
        out[:, k] = (np.log(weights[k]) - 0.5 * np.einsum("ij,ij->j", y, y)
                     - np.log(np.diag(chol)).sum() - 0.5 * D * np.log(2.0 * np.pi))
    return out


# ------------------------------------------------------------------ utilities
def count(text):
    """A row count; accepts 1e6 as well as 1000000."""
    value = float(text)
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError("wants a positive whole number, got %r" % text)
    return int(value)


def online_settings(text):
    """``"1000x1,5000x2"`` -> [(1000, 1), (5000, 2)] (batch size x passes)."""
    settings = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        size, sep, passes = item.partition("x")
        try:
            size, passes = int(size), int(passes)
        except ValueError:
            size = passes = 0
        if not sep or size < 1 or passes < 1:
            raise argparse.ArgumentTypeError("wants BATCHxPASSES items, got %r" % item)
        settings.append((size, passes))
    return settings


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Bayesian Gaussian mixture (K=10, d=10, full covariances): fit time, "
        "held-out log-likelihood and ELBO of scikit-learn's BayesianGaussianMixture and "
        "skvi's SVIBayesianGaussianMixture (batch, online, and a stream in a child process).")
    p.add_argument("--n", type=count, default=1_000_000, help="training rows (default 1e6)")
    p.add_argument("--test-n", type=count, default=100_000, help="held-out rows (default 1e5)")
    p.add_argument("--stream-n", type=count, default=10_000_000,
                   help="rows fed to partial_fit in the stream (default 1e7)")
    p.add_argument("--chunk", type=count, default=100_000,
                   help="rows per partial_fit call in the stream (default 1e5)")
    p.add_argument("--stream-batch-size", type=count, default=1000,
                   help="batch_size of the streamed estimator (default 1000)")
    p.add_argument("--online", type=online_settings,
                   default=online_settings("1000x1,1000x3,5000x1"),
                   help="skvi online rows as BATCHxPASSES, comma-separated "
                   "(default 1000x1,1000x3,5000x1)")
    p.add_argument("--reps", type=int, default=3,
                   help="fits per row, round robin; the median time is reported (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and of every fit")
    p.add_argument("--markdown", metavar="PATH", help="also write the tables to this file")
    p.add_argument("--figure", metavar="PATH",
                   help="also plot the exact ELBO per sample against time (needs matplotlib)")
    p.add_argument("--skip-stream", action="store_true", help="leave out the stream")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be at least 1")
    if args.n < K or args.test_n < 1:
        p.error("--n must be at least %d" % K)
    return args


class StampedLines(io.TextIOBase):
    """A stdout replacement that keeps every printed line with its time stamp."""

    def __init__(self):
        self.lines = []
        self._partial = ""

    def writable(self):
        return True

    def write(self, text):
        now = time.perf_counter()
        self._partial += text
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self.lines.append((now, line))
        return len(text)


_SK_ITER = re.compile(r"^\s*Iteration (\d+)\b")


def timed_fit(estimator, X):
    """Fit with verbose output captured; return the time and the pass time stamps.

    ``pass_times[i]`` is the time from the start of ``fit`` to the end of pass
    ``i + 1``; ``init`` the initialisation time (see the module docstring).
    """
    lines = StampedLines()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(lines):
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(X)
        seconds = time.perf_counter() - start
    pass_times = [stamp - start for stamp, line in lines.lines if _SK_ITER.search(line)]
    init = per_pass = None
    history = getattr(estimator, "history_", None)
    if history is not None:
        # skvi: the end of every pass, in seconds since fit began (its
        # initialisation included), from the fit's own history.
        pass_times = [float(t) for t in history["time"]]
        per_pass = float(np.median(np.diff(pass_times))) if len(pass_times) >= 2 else None
        init = pass_times[0] - per_pass if per_pass is not None else None
    elif len(pass_times) >= 2:  # scikit-learn: its first iteration includes it
        per_pass = float(np.median(np.diff(pass_times)))
        init = pass_times[0] - per_pass
    messages = sorted({str(w.message).split(". ")[0] for w in caught})
    return {"seconds": seconds, "pass_times": pass_times, "init": init, "per_pass": per_pass,
            "warnings": messages}


# ---------------------------------------------------------------------- rows
def row_specs(args):
    specs = [("sklearn batch", "sklearn", {}),
             ("skvi batch", "skvi", {}),
             ("skvi batch, sklearn's tol", "skvi", {"tol": 1e-3 / args.n})]
    for size, passes in args.online:
        specs.append(("skvi online bs=%d x %d" % (size, passes), "skvi",
                      {"learning_method": "online", "batch_size": size, "max_iter": passes,
                       "tol": 0.0}))
    return specs


def make_estimator(library, extra, seed):
    if library == "sklearn":
        from sklearn.mixture import BayesianGaussianMixture

        return BayesianGaussianMixture(n_components=K, covariance_type="full", random_state=seed,
                                       verbose=2, verbose_interval=1, **extra)
    from skvi.models.mixture import SVIBayesianGaussianMixture

    return SVIBayesianGaussianMixture(n_components=K, covariance_type="full", random_state=seed,
                                      **extra)


def as_skvi(model):
    """skvi's view of a fitted model (scikit-learn's through ``from_sklearn``)."""
    from skvi.models.mixture import SVIBayesianGaussianMixture

    if isinstance(model, SVIBayesianGaussianMixture):
        return model
    return SVIBayesianGaussianMixture.from_sklearn(model, verbose=0)


def held_out(model, X_test):
    """(plug-in, predictive) held-out mean log-likelihood of the model's posterior.

    Both through skvi's ``score`` (scikit-learn's posterior through
    ``from_sklearn``), so that every row is scored by the same density functions.
    """
    est = as_skvi(model)
    density = est.density
    try:
        est.set_params(density="plug-in")
        plug_in = est.score(X_test)
        est.set_params(density="predictive")
        predictive = est.score(X_test)
    finally:
        est.set_params(density=density)
    return float(plug_in), float(predictive)


def relative(value, reference):
    return 100.0 * (value - reference) / abs(reference)


# -------------------------------------------------------------------- stream
def stream_child(seed, stream_n, chunk, batch_size):
    """Runs in a fresh process: the stream through ``partial_fit``, chunk by chunk."""
    with one_blas_thread():
        from skvi.models.mixture import SVIBayesianGaussianMixture

        mixture = make_mixture(seed)
        rng = np.random.default_rng([seed, 3])
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        est = SVIBayesianGaussianMixture(n_components=K, covariance_type="full",
                                         total_samples="auto", batch_size=batch_size,
                                         random_state=seed)
        fit_seconds = draw_seconds = 0.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for first in range(0, stream_n, chunk):
                start = time.perf_counter()
                X, _ = draw(mixture, min(chunk, stream_n - first), rng)
                middle = time.perf_counter()
                est.partial_fit(X)
                fit_seconds += time.perf_counter() - middle
                draw_seconds += middle - start
                del X
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":  # bytes there, KiB on Linux
        peak, rss_before = peak // 1024, rss_before // 1024
    return {"model": est, "fit_seconds": fit_seconds, "draw_seconds": draw_seconds,
            "peak_kib": peak, "before_kib": rss_before, "vm_hwm_kib": vm_hwm_kib(),
            "warnings": sorted({str(w.message).split(". ")[0] for w in caught})}


def vm_hwm_kib():
    """The peak resident set of this process's memory map (Linux), or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def start_method():
    # Not 'spawn': on Linux a process started by fork (or vfork) and exec keeps
    # the parent's peak RSS in its ru_maxrss, so a child spawned by this large
    # process would report this process's peak.  A forkserver's children fork
    # from a small server process and start their count afresh.
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


def run_stream(args):
    context = multiprocessing.get_context(start_method())
    with context.Pool(1) as pool:
        return pool.apply(stream_child, (args.seed, args.stream_n, args.chunk,
                                         args.stream_batch_size))


# -------------------------------------------------------------------- output
def plot_elbo_against_time(path, fits, specs, sk_exact, n, median_stamp):
    """ELBO per sample after every pass against the time of that pass, one line per fit.

    skvi's ``lower_bounds_`` are exact ELBOs; scikit-learn's are shifted to its
    final exact ELBO (see the module docstring).  Online fits: one point per pass.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, library, _ in specs:
        fit = fits[name]
        bounds = sk_exact if library == "sklearn" else \
            np.asarray(fit["model"].lower_bounds_, dtype=float) / n
        if len(fit["pass_times"]) != bounds.size:
            continue
        stamps = [median_stamp(fit, k) for k in range(bounds.size)]
        ax.plot(stamps, bounds, marker="o" if bounds.size <= 5 else None, markersize=4,
                label=name)
    top = float(np.max(sk_exact))
    ax.set_ylim(top - 0.15, top + 0.01)
    ax.set_xscale("log")
    ax.set_xlabel("seconds since the start of fit (log scale)")
    ax.set_ylabel("ELBO per training sample")
    ax.set_title("Gaussian mixture, K = %d, d = %d, %d rows" % (K, D, n))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines)


def seconds_cell(times):
    median = float(np.median(times))
    if len(times) == 1:
        return "%.2f" % median
    return "%.2f (%.2f-%.2f)" % (median, min(times), max(times))


def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    report = []  # lines for the markdown file

    def say(line=""):
        print(line, flush=True)

    say("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "threadpoolctl"):
        say("  %-14s %s" % (name, version(name)))

    mixture = make_mixture(args.seed)
    X_train, _ = draw(mixture, args.n, np.random.default_rng([args.seed, 1]))
    X_test, z_test = draw(mixture, args.test_n, np.random.default_rng([args.seed, 2]))
    log_joint = true_log_joint(mixture, X_test)
    true_ll = float(special.logsumexp(log_joint, axis=1).mean())
    bayes_error = float(np.mean(log_joint.argmax(axis=1) != z_test))
    data_line = ("data: K=%d Gaussians in d=%d (seed %d), weights %s; %d training rows, %d held "
                 "out; true mixture: held-out mean log-density %.4f, Bayes error %.1f%%"
                 % (K, D, args.seed, np.array2string(mixture[0], precision=3), args.n,
                    args.test_n, true_ll, 100 * bayes_error))
    say(data_line)
    say("%d repetition(s) per row, round robin; one BLAS thread" % args.reps)
    from skvi.models.mixture import SVIBayesianGaussianMixture

    defaults = SVIBayesianGaussianMixture().get_params()
    say("SVIBayesianGaussianMixture defaults: " + ", ".join(
        "%s=%r" % (key, defaults[key]) for key in (
            "tol", "max_iter", "init_params", "batch_size", "learning_offset", "learning_decay",
            "density")))
    say()

    specs = row_specs(args)
    times = {name: [] for name, _, _ in specs}
    fits = {}
    with one_blas_thread():
        for rep in range(args.reps):
            order = specs if rep % 2 == 0 else specs[::-1]
            for name, library, extra in order:
                est = make_estimator(library, extra, args.seed)
                result = timed_fit(est, X_train)
                times[name].append(result["seconds"])
                if name not in fits:
                    result["model"] = est
                    fits[name] = result
                else:
                    # the same passes every repetition: keep the pass times of each
                    fits[name].setdefault("more_pass_times", []).append(result["pass_times"])
                say("%-28s fit %8.2f s  %3d passes  (run %d of %d)%s"
                    % (name, result["seconds"], est.n_iter_, rep + 1, args.reps,
                       "".join("; warning: " + w for w in result["warnings"])))
        say()

        # ------------------------------------------------------------ scores
        n = args.n
        rows = {}
        for name, _, _ in specs:
            fit = fits[name]
            model = fit["model"]
            plug_in, predictive = held_out(model, X_test)
            elbo = as_skvi(model).elbo(X_train) / n
            rows[name] = {"seconds": float(np.median(times[name])), "times": times[name],
                          "plug_in": plug_in, "predictive": predictive, "elbo": elbo,
                          "n_iter": model.n_iter_,
                          "converged": bool(model.converged_) or model.tol == 0,
                          "init": fit["init"], "per_pass": fit["per_pass"]}
        sk_score = float(fits["sklearn batch"]["model"].score(X_test))

    ref = rows["sklearn batch"]
    header = ("method", "fit s (min-max)", "init s", "passes", "s/pass", "sk/skvi time",
              "held-out plug-in", "vs sk %", "held-out predictive", "vs sk %", "ELBO/n",
              "ELBO/n - sk")
    body = []
    for name, _, _ in specs:
        r = rows[name]
        is_ref = name == "sklearn batch"
        body.append([
            name,
            seconds_cell(r["times"]),
            "" if r["init"] is None else ("%s%.2f" % ("~" if is_ref else "", r["init"])),
            "%d%s" % (r["n_iter"], "" if r["converged"] else " nc"),
            "" if r["per_pass"] is None else "%.3f" % r["per_pass"],
            "" if is_ref else "%.2f" % (ref["seconds"] / r["seconds"]),
            "%.4f" % r["plug_in"],
            "" if is_ref else "%+.3f" % relative(r["plug_in"], ref["plug_in"]),
            "%.4f" % r["predictive"],
            "" if is_ref else "%+.3f" % relative(r["predictive"], ref["predictive"]),
            "%.5f" % r["elbo"],
            "" if is_ref else "%+.5f" % (r["elbo"] - ref["elbo"]),
        ])
    right = (False,) + (True,) * (len(header) - 1)
    say(format_table(header, body, right))
    notes = [
        "held-out: mean log-likelihood of the %d held-out rows under each posterior's plug-in and "
        "predictive densities (skvi's score; sklearn's posterior through from_sklearn); 'vs sk %%' "
        "= 100 (ll - ll_sklearn) / |ll_sklearn| (positive = better)" % args.test_n,
        "scikit-learn's own score() of the held-out rows is %.4f: it averages log sum_k "
        "exp(E[log pi_k] + E[log N(x | mu_k, Lambda_k)]) (its E-step), neither density above"
        % sk_score,
        "ELBO/n: exact ELBO of the training rows per sample (skvi's elbo); passes 'nc' = not "
        "converged within max_iter (the online rows run a fixed number of passes, tol=0); "
        "init: skvi measured, sklearn (~) estimated",
    ]
    for note in notes:
        say("  " + note)
    say()

    # ------------------------------------------------- time to sklearn's ELBO
    goal = ref["elbo"] - ELBO_TOL

    def median_stamp(fit, k):
        """Median over the repetitions of the time stamp of pass k + 1."""
        runs = [fit["pass_times"]] + fit.get("more_pass_times", [])
        return float(np.median([run[k] for run in runs if len(run) > k]))

    # scikit-learn's lower bounds drop constant terms: shift them by the gap
    # between its final exact ELBO and its last lower bound.
    sk_fit = fits["sklearn batch"]
    sk_bounds = np.asarray(sk_fit["model"].lower_bounds_, dtype=float)
    sk_exact = (sk_bounds + (ref["elbo"] * n - sk_bounds[-1])) / n
    reach_lines = []
    reach = {}
    sk_hit = np.flatnonzero(sk_exact >= goal)
    sk_reach = None
    if sk_hit.size and len(sk_fit["pass_times"]) == sk_bounds.size:
        k = int(sk_hit[0])
        sk_reach = (k + 1, median_stamp(sk_fit, k))
        reach_lines.append("%-28s pass %d of %d at %.2f s (its whole fit: %.2f s)"
                           % ("sklearn batch", k + 1, sk_bounds.size, sk_reach[1], ref["seconds"]))
    for name, library, extra in specs:
        if library != "skvi" or extra.get("learning_method") == "online":
            continue
        fit = fits[name]
        bounds = np.asarray(fit["model"].lower_bounds_, dtype=float) / n
        hit = np.flatnonzero(bounds >= goal)
        if hit.size == 0 or len(fit["pass_times"]) != bounds.size:
            reach_lines.append("%-28s does not reach it: final ELBO/n %.5f after %d passes"
                               % (name, bounds[-1], bounds.size))
            continue
        k = int(hit[0])
        t = median_stamp(fit, k)
        reach[name] = (k + 1, t)
        line = "%-28s pass %d of %d at %.2f s: " % (name, k + 1, bounds.size, t)
        if sk_reach is not None:
            line += "%.2fx faster than sklearn to the same ELBO, " % (sk_reach[1] / t)
        line += "%.2fx faster than sklearn's whole fit" % (ref["seconds"] / t)
        common = min(bounds.size, sk_bounds.size)
        shift = bounds[:common] * n - sk_bounds[:common]
        line += ("; per pass, sklearn's lower bounds = skvi's + a constant within %.1e per sample "
                 "over %d passes" % (float(np.max(np.abs(shift - np.median(shift)))) / n, common))
        reach_lines.append(line)
    if args.figure:
        plot_elbo_against_time(args.figure, fits, specs, sk_exact, n, median_stamp)
        say("wrote %s" % args.figure)
    say("Time to sklearn's final ELBO/n %.5f (within %g): first pass within it, and its time"
        % (ref["elbo"], ELBO_TOL))
    for line in reach_lines:
        say("  " + line)
    say()

    # ----------------------------------------------------------------- stream
    stream = None
    stream_body = []
    stream_header = ("fit", "rows", "fit s", "draw s", "peak RSS MiB", "held-out plug-in",
                     "vs batch %", "held-out predictive", "vs batch %", "ELBO/n train")
    if not args.skip_stream:
        say("stream: %d rows in chunks of %d, batch_size %d, total_samples='auto', in a child "
            "process ..." % (args.stream_n, args.chunk, args.stream_batch_size))
        stream = run_stream(args)
        model = stream["model"]
        with one_blas_thread():
            plug_in, predictive = held_out(model, X_test)
            elbo = model.elbo(X_train) / n
        stream.update(plug_in=plug_in, predictive=predictive, elbo=elbo)
        batch = rows["skvi batch"]
        stream_body = [
            ["skvi batch (training set)", "%d" % n, seconds_cell(batch["times"]), "", "",
             "%.4f" % batch["plug_in"], "", "%.4f" % batch["predictive"], "",
             "%.5f" % batch["elbo"]],
            ["skvi partial_fit stream", "%d" % model.n_samples_seen_,
             "%.2f" % stream["fit_seconds"],
             "%.2f" % stream["draw_seconds"], "%.1f" % (stream["peak_kib"] / 1024.0),
             "%.4f" % plug_in, "%+.3f" % relative(plug_in, batch["plug_in"]),
             "%.4f" % predictive, "%+.3f" % relative(predictive, batch["predictive"]),
             "%.5f" % elbo],
        ]
        say(format_table(stream_header, stream_body, (False,) + (True,) * 9))
        hwm = stream["vm_hwm_kib"]
        stream_note = (
            "child process (%s): ru_maxrss %.1f MiB before the stream (after the imports), "
            "%.1f MiB at the end%s; %d steps, %d rejected%s"
            % (start_method(), stream["before_kib"] / 1024.0, stream["peak_kib"] / 1024.0,
               "" if hwm is None else " (VmHWM %.1f MiB)" % (hwm / 1024.0), model.n_batch_iter_,
               model.n_rejected_steps_, "".join("; warning: " + w for w in stream["warnings"])))
        say("  " + stream_note)
        say()

    # ---------------------------------------------------------------- targets
    targets = []
    for name, _, extra in specs:
        if extra.get("learning_method") != "online":
            continue
        r = rows[name]
        diff = relative(r["plug_in"], ref["plug_in"])
        diff_pred = relative(r["predictive"], ref["predictive"])
        fraction = r["seconds"] / ref["seconds"]
        ok = diff >= -ONLINE_LL_TOL and fraction <= ONLINE_TIME_FRACTION
        targets.append("%s (a) %s: held-out plug-in %+.3f%% vs sklearn (>= -%g%%; predictive "
                       "%+.3f%%), time %.3f of sklearn's (<= %g)"
                       % ("PASS" if ok else "FAIL", name, diff, ONLINE_LL_TOL, diff_pred, fraction,
                          ONLINE_TIME_FRACTION))
    if reach and sk_reach is not None:
        name, (k, t) = min(reach.items(), key=lambda item: item[1][1])
        speedup = sk_reach[1] / t
        targets.append("%s (b) skvi batch at sklearn's ELBO (within %g per sample): %.2f s (%s, "
                       "pass %d) vs sklearn's %.2f s to the same ELBO (pass %d), %.2fx faster "
                       "(>= %gx); %.2fx faster than sklearn's whole fit (%.2f s)"
                       % ("PASS" if speedup >= BATCH_SPEEDUP else "FAIL", ELBO_TOL, t, name, k,
                          sk_reach[1], sk_reach[0], speedup, BATCH_SPEEDUP, ref["seconds"] / t,
                          ref["seconds"]))
    else:
        targets.append("FAIL (b) no skvi batch fit reached sklearn's ELBO within %g per sample"
                       % ELBO_TOL)
    default = rows["skvi batch"]
    targets.append("info (b) whole fits, skvi batch with its default tol=%g: ELBO/n %+.5f vs "
                   "sklearn's (%s), fit time %.2fx faster"
                   % (fits["skvi batch"]["model"].tol, default["elbo"] - ref["elbo"],
                      "the same ELBO" if default["elbo"] >= goal else "below the same-ELBO band",
                      ref["seconds"] / default["seconds"]))
    if stream is not None:
        batch = rows["skvi batch"]
        diffs = (relative(stream["plug_in"], batch["plug_in"]),
                 relative(stream["predictive"], batch["predictive"]))
        targets.append("%s (c) stream peak RSS %.1f MiB (< %d MiB)"
                       % ("PASS" if stream["peak_kib"] < STREAM_RSS_KIB else "FAIL",
                          stream["peak_kib"] / 1024.0, STREAM_RSS_KIB // 1024))
        targets.append("%s (c) stream held-out vs skvi batch: plug-in %+.3f%%, predictive %+.3f%% "
                       "(both >= -%g%%)"
                       % ("PASS" if min(diffs) >= -STREAM_LL_TOL else "FAIL", diffs[0], diffs[1],
                          STREAM_LL_TOL))
    say("Targets")
    for line in targets:
        say("  " + line)
    total = time.perf_counter() - wall_start
    say()
    say("total wall time %.1f s" % total)

    if args.markdown:
        report += [
            "# Bayesian Gaussian mixture: skvi against scikit-learn",
            "",
            "Written by `benchmarks/gmm.py` (`%s`)." % " ".join(
                ["python benchmarks/gmm.py"] + (sys.argv[1:] if argv is None else list(argv))),
            "",
            "Python %s on %s; numpy %s, scipy %s, scikit-learn %s, skvi %s; one BLAS thread."
            % (platform.python_version(), platform.platform(), version("numpy"), version("scipy"),
               version("sklearn"), version("skvi")),
            "",
            data_line[0].upper() + data_line[1:] + ".",
            "",
            "## Fits (median of %d round-robin repetitions)" % args.reps,
            "",
            markdown_table(header, body),
            "",
        ]
        report += ["- " + note + "." for note in notes]
        report += ["", "## Time to scikit-learn's final ELBO", ""]
        report += ["- " + line.strip() for line in reach_lines]
        if stream is not None:
            report += ["", "## Stream (`partial_fit`, child process)", "",
                       "%d rows in chunks of %d, batch_size %d, total_samples='auto'."
                       % (args.stream_n, args.chunk, args.stream_batch_size), "",
                       markdown_table(stream_header, stream_body), "", stream_note[0].upper()
                       + stream_note[1:] + "."]
        report += ["", "## Targets", ""] + ["- " + line.strip() for line in targets]
        report += ["", "Total wall time %.0f s." % total, ""]
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(report))
        say("wrote %s" % args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
