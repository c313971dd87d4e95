"""Test NLL against time of the overdispersed Poisson (GME) model: algorithms, bounds, GLM.

A smaller, synthetic version of Fig. 2a (section 4.2) of "Monte Carlo structured SVI for
two-level non-conjugate models": the generalised mixed-effects model ::

    w ~ N(0, prior_variance I),  sigma ~ Rayleigh(s0) (a variance),
    f_i ~ N(x_i . w + b, sigma),  y_i ~ Poisson(softplus(f_i))

(``skvi.SVIOverdispersedPoissonRegression``, see ``docs/glm.md``, "Overdispersed counts"),
fitted by SVI on minibatches of 2000 rows with AdaGrad rate 1.0, mean test NLL per pass.
The paper reports (on the epsilon features, labels drawn from the model):

  (1) H-MC-SSVI converges best, then MC-SSVI; S-DSVI is slow;
  (2) the GME model beats a trained Poisson GLM;
  (3) the optimal bound beats the simple bound and the mean-field bound.

Each is checked at the end of a run and printed as "holds" / "does not hold" with the
numbers (final test NLL after ``--passes`` passes; the difference of two methods comes with
its paired standard error over the test rows, ``std(lpd_a - lpd_b) / sqrt(n_test)``).

Data
----
The epsilon data set is not used.  ``--n`` rows (default 20,000) of ``--d`` (100) Gaussian
features with AR(1) correlation ``corr(x_j, x_k) = r^|j-k|`` (``--feature-correlation`` r,
0.5), split 80/20 into training and test rows at random, then z-scored with the training
rows' mean and standard deviation.  Labels are drawn from the model on the z-scored
features: ``w ~ N(0, prior_variance I)`` with ``prior_variance = 1 / d`` by default (so
``Var(x . w)`` is about 1 and the counts moderate), intercept ``b = --intercept`` (1.0),
noise variance ``sigma = --noise-variance`` (fixed, 1.0 by default, near the median 1.18 of
the Rayleigh(1) prior; printed), ``y ~ Poisson(softplus(f))``.  The fits use the same
``prior_variance`` and ``noise_prior_scale = --noise-prior-scale`` (1.0), i.e. the
generating model.  The "true model" row is the test NLL of the generating parameters,
``-mean log int N(f; x . w + b, sigma) Poisson(y | softplus(f)) df`` (40-point
Gauss-Hermite quadrature, ``skvi.likelihoods.Poisson('softplus').predictive_logpdf``): the
floor that no fitted method can beat in expectation.

What it measures
----------------
Methods (every estimator ``link='softplus'``, ``batch_size=--batch-size``,
``gradient_learning_rate=--adagrad-rate`` (1.0, the paper's; unused by MC-SSVI),
``total_samples=n_train``, ``random_state=--seed``, its other arguments at their defaults,
e.g. quadrature expectations, ``learning_decay=0.7``, step safety on).  AdaGrad's first
steps move each weight by up to about the rate, large against true weights of standard
deviation ``sqrt(1 / d)`` (0.1 at d = 100); step safety retries a rejected step with
smaller steps (``skvi.engine``), so the rate is not the only control of the step length.

``GME optimal, <algorithm>``
    ``SVIOverdispersedPoissonRegression(bound='optimal', algorithm=...)`` for
    'h-mc-ssvi', 'mc-ssvi' and 's-dsvi'.
``GME simple, <A>`` and ``GME mean-field, <A>``
    ``bound='simple'`` and ``bound='mean_field'`` with ``A = --compare-algorithm``
    ('mc-ssvi' by default, the estimator's default algorithm).
``Poisson GLM, <A>``
    ``SVIPoissonRegression(link='softplus', expectation='quadrature', algorithm=A)``
    (no random effect).  Its predictive density per row is
    ``Poisson('softplus').predictive_logpdf(y, *glm._predictive_moments(X))``.
``true model``
    Above; no fit.

Every fitted method makes ``--passes`` passes of ``partial_fit``: before each pass the
training rows are shuffled (one generator seeded from ``--seed``, so every method sees the
same orders), and ``partial_fit(X_shuffled, y_shuffled)`` cuts them into
``ceil(n_train / batch_size)`` near-equal minibatches, one SVI step each, the step size
schedule running on across calls.  (A warm-started ``fit`` one pass at a time is not
available, and ``fit(max_iter=k)`` for ``k = 1..passes`` would cost quadratically many
passes.)  ``partial_fit`` also evaluates the minibatch's ELBO after each step and tests
each step on the previous minibatch (step safety), like online ``fit``'s per-pass ELBO and
probe; that is part of the time.  Only the ``partial_fit`` calls are timed
(``time.perf_counter``); the test NLL after every pass
(``-mean log_predictive_density(X_test, y_test)``) and the shuffling are not.  BLAS and
OpenMP get one thread (environment variables set before numpy is imported, and
threadpoolctl when installed).

The table gives per method the final test NLL, its excess over the true model, the total
fit time and seconds per pass, the final ``noise_variance_`` (posterior mean of sigma; the
true value is printed), the number of steps rejected by step safety, and the test NLL
after every pass.  "S-DSVI is slow" is judged by the mean of the per-pass test NLLs (the
area under the NLL-per-pass curve; the seconds per pass of the three algorithms are
close, so passes stand for time).

How to run ::

    python benchmarks/gme.py                                # 20,000 x 100, 6 passes
    python benchmarks/gme.py --n 5000 --d 30 --passes 3     # quick check, under a minute
    python benchmarks/gme.py --passes 10 --compare-algorithm h-mc-ssvi \\
        --markdown gme.md --figure gme.png

Only skvi and its dependencies are needed (matplotlib for ``--figure``, threadpoolctl
when installed).  At the default size a pass of the optimal bound takes about 6 s on one
core and the test NLL about 1.3 s, so a default run takes about 3 minutes; the cost grows
linearly in ``--n`` and ``--passes``.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _common import format_table, one_blas_thread, version  # noqa: E402

ALGORITHMS = ("h-mc-ssvi", "mc-ssvi", "s-dsvi")
ALGORITHM_LABELS = {"h-mc-ssvi": "H-MC-SSVI", "mc-ssvi": "MC-SSVI", "s-dsvi": "S-DSVI"}
LINK = "softplus"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Synthetic version of Fig. 2a of 'Monte Carlo structured SVI for two-level "
        "non-conjugate models': test NLL per pass and fit time of "
        "SVIOverdispersedPoissonRegression (three algorithms, three bounds) and a Poisson GLM.")
    p.add_argument("--n", type=int, default=20000, help="rows, 80%% train (default %(default)s)")
    p.add_argument("--d", type=int, default=100, help="features (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data, the orders and the fits")
    p.add_argument("--passes", type=int, default=6, help="passes per method (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=2000, help="rows per minibatch (default "
                   "%(default)s, the paper's)")
    p.add_argument("--test-fraction", type=float, default=0.2, help="default %(default)s")
    p.add_argument("--feature-correlation", type=float, default=0.5,
                   help="AR(1) correlation r of neighbouring features (default %(default)s)")
    p.add_argument("--prior-variance", type=float, default=None,
                   help="variance of the true weights and of the fits' prior (default 1/d)")
    p.add_argument("--intercept", type=float, default=1.0, help="true intercept (default "
                   "%(default)s)")
    p.add_argument("--noise-variance", type=float, default=1.0,
                   help="true noise variance sigma (default %(default)s)")
    p.add_argument("--noise-prior-scale", type=float, default=1.0,
                   help="scale s0 of the fits' Rayleigh prior of sigma (default %(default)s)")
    p.add_argument("--adagrad-rate", type=float, default=1.0,
                   help="gradient_learning_rate of H-MC-SSVI and S-DSVI (default %(default)s)")
    p.add_argument("--compare-algorithm", choices=ALGORITHMS, default="mc-ssvi",
                   help="algorithm of the simple and mean-field bounds and of the GLM "
                   "(default %(default)s)")
    p.add_argument("--methods", default=None,
                   help="comma-separated subset of: %s (default: all)" % ", ".join(
                       list(ALGORITHMS) + ["simple", "mean-field", "glm"]))
    p.add_argument("--markdown", metavar="PATH", help="also write the table and verdicts here")
    p.add_argument("--figure", metavar="PATH",
                   help="also plot test NLL against fit time (needs matplotlib)")
    args = p.parse_args(argv)
    if args.n < 10 or args.d < 1 or args.passes < 1 or args.batch_size < 1:
        p.error("--n, --d, --passes and --batch-size must be positive (--n at least 10)")
    if not 0.0 < args.test_fraction < 1.0:
        p.error("--test-fraction must be in (0, 1)")
    if not -1.0 < args.feature_correlation < 1.0:
        p.error("--feature-correlation must be in (-1, 1)")
    if args.noise_variance < 0 or args.noise_prior_scale <= 0 or args.adagrad_rate <= 0:
        p.error("--noise-variance must be >= 0, --noise-prior-scale and --adagrad-rate > 0")
    if args.prior_variance is None:
        args.prior_variance = 1.0 / args.d
    elif args.prior_variance <= 0:
        p.error("--prior-variance must be positive")
    known = list(ALGORITHMS) + ["simple", "mean-field", "glm"]
    if args.methods is None:
        args.methods = known
    else:
        chosen = {m.strip() for m in args.methods.split(",") if m.strip()}
        unknown = sorted(chosen - set(known))
        if unknown or not chosen:
            p.error("unknown method(s) %s; choose from %s" % (unknown, ", ".join(known)))
        args.methods = [m for m in known if m in chosen]
    return args


# ------------------------------------------------------------------------ data
def make_data(args):
    """z-scored correlated Gaussian features and counts drawn from the GME model."""
    rng = np.random.RandomState(args.seed)
    n, d, r = args.n, args.d, args.feature_correlation
    X = np.empty((n, d))
    X[:, 0] = rng.standard_normal(n)
    for j in range(1, d):  # AR(1) across the columns: corr(x_j, x_k) = r^|j-k|
        X[:, j] = r * X[:, j - 1] + np.sqrt(1.0 - r * r) * rng.standard_normal(n)
    order = rng.permutation(n)
    n_test = max(1, int(round(args.test_fraction * n)))
    test, train = order[:n_test], order[n_test:]
    mu, sd = X[train].mean(axis=0), X[train].std(axis=0)
    X = (X - mu) / np.where(sd > 0, sd, 1.0)
    w = rng.normal(0.0, np.sqrt(args.prior_variance), d)
    f_mean = X @ w + args.intercept
    f = f_mean + np.sqrt(args.noise_variance) * rng.standard_normal(n)
    y = rng.poisson(np.logaddexp(0.0, f)).astype(np.float64)
    return {"X_train": X[train], "y_train": y[train], "X_test": X[test], "y_test": y[test],
            "f_mean_test": f_mean[test], "w": w}


def true_log_density(data, args):
    from skvi.likelihoods import Poisson

    var = np.full(data["y_test"].shape, float(args.noise_variance))
    return Poisson(LINK).predictive_logpdf(data["y_test"], data["f_mean_test"], var)


# --------------------------------------------------------------------- methods
def method_specs(args, n_train):
    """(key, label, estimator factory, log-density function) per requested method."""
    from skvi import SVIOverdispersedPoissonRegression, SVIPoissonRegression
    from skvi.likelihoods import Poisson

    common = dict(link=LINK, prior_variance=args.prior_variance, batch_size=args.batch_size,
                  gradient_learning_rate=args.adagrad_rate, total_samples=n_train,
                  random_state=args.seed)

    def gme(bound, algorithm):
        return lambda: SVIOverdispersedPoissonRegression(
            bound=bound, algorithm=algorithm, noise_prior_scale=args.noise_prior_scale, **common)

    def gme_lpd(model, X, y):
        return model.log_predictive_density(X, y)

    def glm_lpd(model, X, y):
        mean, var = model._predictive_moments(X)
        return Poisson(LINK).predictive_logpdf(y, mean, var)

    a = args.compare_algorithm
    specs = {}
    for alg in ALGORITHMS:
        specs[alg] = ("GME optimal, %s" % ALGORITHM_LABELS[alg], gme("optimal", alg), gme_lpd)
    specs["simple"] = ("GME simple, %s" % ALGORITHM_LABELS[a], gme("simple", a), gme_lpd)
    specs["mean-field"] = ("GME mean-field, %s" % ALGORITHM_LABELS[a], gme("mean_field", a),
                           gme_lpd)
    specs["glm"] = ("Poisson GLM, %s" % ALGORITHM_LABELS[a], lambda: SVIPoissonRegression(
        expectation="quadrature", algorithm=a, **common), glm_lpd)
    return [(key,) + specs[key] for key in args.methods]


def run_method(make, lpd, data, args):
    """``--passes`` shuffled passes of partial_fit; the test NLL and the fit time after each."""
    X, y = data["X_train"], data["y_train"]
    X_test, y_test = data["X_test"], data["y_test"]
    orders = np.random.RandomState([args.seed, 1])  # the same orders for every method
    model = make()
    out = {"nll": [], "seconds": [], "warnings": set(), "error": None, "lpd": None}
    elapsed = 0.0
    for _ in range(args.passes):
        perm = orders.permutation(X.shape[0])
        Xp, yp = X[perm], y[perm]
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                model.partial_fit(Xp, yp)
                elapsed += time.perf_counter() - start
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            out["error"] = "%s: %s" % (type(exc).__name__, exc)
            break
        out["warnings"].update(str(w.message).split(" (")[0].split(". ")[0] for w in caught)
        out["lpd"] = np.asarray(lpd(model, X_test, y_test), dtype=float)
        out["nll"].append(-float(np.mean(out["lpd"])))
        out["seconds"].append(elapsed)
    out["noise"] = getattr(model, "noise_variance_", None)
    out["rejected"] = getattr(model, "n_rejected_steps_", None)
    out["steps"] = getattr(model, "n_batch_iter_", None)
    return out


# --------------------------------------------------------------------- verdicts
def paired(results, a, b):
    """NLL_a - NLL_b and its paired standard error over the test rows."""
    diff = results[b]["lpd"] - results[a]["lpd"]
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(diff.size))


def verdicts(results, args):
    ok = {k for k, r in results.items() if r["nll"] and r["lpd"] is not None}
    lines = []

    short = dict(ALGORITHM_LABELS, simple="simple", glm="GLM", **{"mean-field": "mean-field"})
    short[args.compare_algorithm] = "optimal/" + short[args.compare_algorithm]

    def diff_text(a, b):
        d, se = paired(results, a, b)
        return "%s - %s = %+.4f +- %.4f (%s)" % (
            short[a], short[b], d, se,
            "within 2 se" if abs(d) < 2 * se else "%.1f se" % (abs(d) / se))

    def line(claim, holds, detail):
        lines.append("%s: %s -- %s" % (claim, "holds" if holds else "does not hold", detail))

    final = {k: results[k]["nll"][-1] for k in ok}
    algs = [a for a in ALGORITHMS if a in ok]
    if "h-mc-ssvi" in ok and len(algs) > 1:
        others = [a for a in algs if a != "h-mc-ssvi"]
        best_other = min(others, key=final.get)
        line("(1a) H-MC-SSVI has the lowest final test NLL of the three algorithms",
             final["h-mc-ssvi"] < final[best_other],
             ", ".join("%s %.4f" % (ALGORITHM_LABELS[a], final[a]) for a in algs)
             + "; " + diff_text("h-mc-ssvi", best_other))
    if "mc-ssvi" in ok and "s-dsvi" in ok:
        line("(1b) MC-SSVI's final test NLL is below S-DSVI's", final["mc-ssvi"] < final["s-dsvi"],
             "%.4f vs %.4f; %s" % (final["mc-ssvi"], final["s-dsvi"],
                                   diff_text("mc-ssvi", "s-dsvi")))
    if "s-dsvi" in ok and len(algs) > 1:
        area = {a: float(np.mean(results[a]["nll"])) for a in algs}
        per_pass = {a: results[a]["seconds"][-1] / len(results[a]["seconds"]) for a in algs}
        line("(1c) S-DSVI is the slowest: the highest mean test NLL over the passes",
             all(area["s-dsvi"] > area[a] for a in algs if a != "s-dsvi"),
             ", ".join("%s %.4f (%.2f s/pass)" % (ALGORITHM_LABELS[a], area[a], per_pass[a])
                       for a in algs))
    a = args.compare_algorithm
    if a in ok and "glm" in ok:
        line("(2) GME (optimal bound) beats the Poisson GLM", final[a] < final["glm"],
             "%.4f vs %.4f; %s" % (final[a], final["glm"], diff_text(a, "glm")))
    for other, claim in (("simple", "(3a) the optimal bound beats the simple bound"),
                         ("mean-field", "(3b) the optimal bound beats the mean-field bound")):
        if a in ok and other in ok:
            line(claim, final[a] < final[other],
                 "%.4f vs %.4f; %s" % (final[a], final[other], diff_text(a, other)))
    return lines


# ----------------------------------------------------------------------- output
def markdown_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines)


def plot(path, results, labels, floor, args, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = args.compare_algorithm
    panels = (("Algorithms (optimal bound)", list(ALGORITHMS)),
              ("Model and bound (%s)" % ALGORITHM_LABELS[a], [a, "simple", "mean-field", "glm"]))
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2), sharey=True)
    for ax, (name, keys) in zip(axes, panels):
        for key in keys:
            r = results.get(key)
            if r is None or not r["nll"]:
                continue
            ax.plot(r["seconds"], r["nll"], marker="o", markersize=3, label=labels[key])
        ax.axhline(floor, color="k", linestyle="--", linewidth=1, label="true model")
        ax.set_xlabel("fit time [s] (partial_fit only)")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("mean test NLL")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)

    def say(line=""):
        print(line, flush=True)

    say("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "threadpoolctl"):
        say("  %-13s %s" % (name, version(name)))

    data = make_data(args)
    y_tr = data["y_train"]
    data_line = (
        "data: %d train + %d test rows, %d AR(1) Gaussian features (r=%.2f), z-scored; "
        "w ~ N(0, %.4g I), b=%.3g, noise variance sigma=%.4g (fixed), y ~ Poisson(softplus(f)); "
        "train counts: mean %.3f, variance/mean %.3f, %.1f%% zeros, max %d"
        % (y_tr.size, data["y_test"].size, args.d, args.feature_correlation,
           args.prior_variance, args.intercept, args.noise_variance, y_tr.mean(),
           y_tr.var() / max(y_tr.mean(), 1e-12), 100 * np.mean(y_tr == 0), int(y_tr.max())))
    say(data_line)
    fit_line = ("fits: link=%s, prior_variance=%.4g, noise_prior_scale=%.3g, batch_size=%d "
                "(%d steps/pass), AdaGrad rate %.3g, %d passes of partial_fit "
                "(total_samples=%d), random_state=%d; one BLAS thread"
                % (LINK, args.prior_variance, args.noise_prior_scale, args.batch_size,
                   -(-y_tr.size // args.batch_size), args.adagrad_rate, args.passes,
                   y_tr.size, args.seed))
    say(fit_line)
    say()

    with one_blas_thread():
        floor_lpd = true_log_density(data, args)
        floor = -float(np.mean(floor_lpd))
        results, labels = {}, {}
        for key, label, make, lpd in method_specs(args, y_tr.size):
            labels[key] = label
            r = run_method(make, lpd, data, args)
            results[key] = r
            notes = []
            if r["error"]:
                notes.append("FAILED after %d pass(es): %s" % (len(r["nll"]), r["error"]))
            notes += ["warning: %s" % w for w in sorted(r["warnings"])]
            say("%-24s %s%s" % (label, "  ".join(
                "%.4f@%.1fs" % (v, s) for v, s in zip(r["nll"], r["seconds"])),
                "".join("\n    " + n for n in notes)))
    say()

    header = ("method", "final NLL", "- true", "fit [s]", "s/pass", "noise var", "rejected",
              "test NLL per pass")
    body = []
    for key, r in results.items():
        if not r["nll"]:
            body.append([labels[key], "failed", "", "", "", "", "", ""])
            continue
        body.append([
            labels[key], "%.4f" % r["nll"][-1], "%+.4f" % (r["nll"][-1] - floor),
            "%.1f" % r["seconds"][-1], "%.2f" % (r["seconds"][-1] / len(r["seconds"])),
            "" if r["noise"] is None else "%.3f" % r["noise"],
            "" if r["rejected"] is None else "%d/%d" % (r["rejected"], r["steps"]),
            " ".join("%.4f" % v for v in r["nll"])])
    body.append(["true model", "%.4f" % floor, "+0.0000", "", "", "%.3f" % args.noise_variance,
                 "", ""])
    title = ("Mean test NLL (%d test rows), %d x %d synthetic counts, seed %d"
             % (data["y_test"].size, args.n, args.d, args.seed))
    say(title)
    say(format_table(header, body, (False,) + (True,) * 6 + (False,)))
    say("(noise var: the posterior mean of sigma, noise_variance_; rejected: steps rejected by "
        "step safety / steps taken)")
    say()
    lines = verdicts(results, args)
    for line in lines:
        say(line)
    wall = time.perf_counter() - wall_start
    say()
    say("total wall time %.1f s" % wall)

    if args.markdown:
        text = "\n".join([
            "# " + title, "", data_line, "", fit_line, "",
            markdown_table(header, body), "",
            ("Fit time is partial_fit alone; the test NLL is evaluated after every pass. "
             "Paired differences are NLL_a - NLL_b +- the standard error over the test rows."),
            ""]
            + ["- " + line for line in lines] + ["", "Total wall time %.1f s." % wall, ""])
        with open(args.markdown, "w") as handle:
            handle.write(text)
        say("wrote %s" % args.markdown)
    if args.figure:
        try:
            plot(args.figure, results, labels, floor, args, title)
            say("wrote %s" % args.figure)
        except ImportError as exc:
            say("no figure: matplotlib not available (%s)" % exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
