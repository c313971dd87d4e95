"""Benchmark skvi.GaussianGammaVB against BayesPy on the Gaussian-Gamma model.

What it measures
----------------
Both libraries fit, per feature ``j`` independently, the conjugate model::

    x_ij    ~ N(mu_j, 1 / gamma_j)
    mu_j    ~ N(m0, 1 / b0)
    gamma_j ~ Gamma(shape=a0, rate=c0)

with the mean-field posterior ``q(mu_j) q(gamma_j)``, by variational message
passing (coordinate ascent), from the same data, the same priors and the same
tight tolerance on the relative change of the evidence lower bound (ELBO).

The script reports

* the wall time (``time.perf_counter``) of each library's fit to convergence,
  best and median over ``--repeats`` runs, and the speed-up
  ``bayespy_time / skvi_time`` (how many times faster skvi is);
* the full ELBO found by each library, next to an independent closed-form
  ELBO written out below from the model (scipy.special), evaluated at skvi's
  posterior and at BayesPy's posterior, with relative differences to BayesPy
  (the target is agreement to 1e-6 relative);
* the largest differences between the two libraries' posterior means
  ``E[mu_j]`` and ``E[gamma_j]``.

BayesPy's side is timed from building its nodes to the end of ``VB.update``,
since that is what a user runs to fit; skvi's side is ``fit(X)``.  The
posterior is initialised from the prior in both, and BayesPy updates ``mu``
then ``gamma`` in each iteration.  The coupling between q(mu) and q(gamma)
shrinks like 1/n_samples, so both reach the fixed point in a few iterations
(more BayesPy iterations change none of the printed digits).  BayesPy forms
sum_i (x_ij - m_j)^2 from uncentred sums, so for features whose mean is large
against their spread its E[gamma] carries rounding of order 1e-10 relative; the
closed-form ELBO below uses centred sums.

How to run
----------
BayesPy is only needed for this benchmark (``pip install skvi[bench]`` or
``pip install bayespy``).  Keep it out of the development environment, e.g.::

    python3 -m venv /path/to/venv
    /path/to/venv/bin/pip install bayespy numpy scipy scikit-learn joblib
    /path/to/venv/bin/pip install -e .
    /path/to/venv/bin/python benchmarks/gaussian_gamma.py
    /path/to/venv/bin/python benchmarks/gaussian_gamma.py --n-samples 100000 --repeats 5

Notes on versions: bayespy 0.6.6 (the newest release) imports and runs with
numpy 2.x and scipy 1.17, so no pin is needed.  Its dependencies h5py and
truncnorm are pulled in by pip.
"""

import argparse
import platform
import statistics
import sys
import time
import warnings

import numpy as np
from scipy import special

LOG_2PI = np.log(2.0 * np.pi)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time skvi.GaussianGammaVB against BayesPy (batch VMP) "
        "and compare their ELBOs and posteriors."
    )
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=10)
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed fits per library (best and median reported)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of skvi")
    parser.add_argument("--m0", type=float, default=0.0, help="prior mean of mu")
    parser.add_argument("--b0", type=float, default=1e-3, help="prior precision of mu")
    parser.add_argument("--a0", type=float, default=1e-2, help="prior shape of gamma")
    parser.add_argument("--c0", type=float, default=1e-2, help="prior rate of gamma")
    parser.add_argument(
        "--tol", type=float, default=1e-12, help="relative ELBO change at which both stop"
    )
    parser.add_argument("--max-iter", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.n_samples < 2 or args.n_features < 1 or args.repeats < 1 or args.max_iter < 1:
        parser.error("--n-samples >= 2, --n-features >= 1, --repeats >= 1, --max-iter >= 1")
    if args.b0 <= 0 or args.a0 <= 0 or args.c0 <= 0:
        parser.error("--b0, --a0 and --c0 must be positive")
    return args


def import_libraries():
    """Import skvi's estimator and BayesPy, or exit with what to install."""
    try:
        import bayespy  # noqa: F401
        from bayespy.inference import VB
        from bayespy.nodes import Gamma, GaussianARD
    except ImportError as exc:
        sys.exit(
            "This benchmark needs BayesPy, which is not installed here "
            f"({exc}).\nInstall it with `pip install skvi[bench]` or "
            "`pip install bayespy` (ideally in a separate virtual environment)."
        )
    try:
        import skvi
        estimator = skvi.GaussianGammaVB
    except (ImportError, AttributeError) as exc:
        sys.exit(
            f"skvi.GaussianGammaVB is not available ({exc}).\n"
            "Install skvi, at a version that has it, into this environment, e.g. from\n"
            "the checkout: `pip install -e .`"
        )
    return skvi, estimator, bayespy, (GaussianARD, Gamma, VB)


def make_data(n_samples, n_features, seed):
    """Draw X from the model with per-feature true mean and precision."""
    rng = np.random.default_rng(seed)
    true_mean = rng.uniform(-10.0, 10.0, size=n_features)
    # standard deviations log-uniform in [0.1, 10], i.e. precisions in [0.01, 100]
    true_std = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size=n_features))
    X = true_mean + true_std * rng.standard_normal((n_samples, n_features))
    return X, true_mean, 1.0 / true_std**2


def closed_form_elbo(X, m, beta, a, c, m0, b0, a0, c0):
    """Full ELBO of the model at q(mu)=N(m, 1/beta), q(gamma)=Gamma(a, rate c).

    Summed over features, with every normalising constant:
    E[log p(X|mu,gamma)] + E[log p(mu)] + E[log p(gamma)] - E[log q(mu)] - E[log q(gamma)].
    """
    n = X.shape[0]
    m = np.asarray(m, dtype=float)
    beta = np.asarray(beta, dtype=float)
    a = np.broadcast_to(np.asarray(a, dtype=float), m.shape)
    c = np.broadcast_to(np.asarray(c, dtype=float), m.shape)

    xbar = X.mean(axis=0)
    scatter = ((X - xbar) ** 2).sum(axis=0)  # sum_i (x_ij - xbar_j)^2
    e_gamma = a / c
    e_log_gamma = special.digamma(a) - np.log(c)
    # sum_i E[(x_ij - mu_j)^2] = scatter + n (xbar - m)^2 + n / beta
    e_sq = scatter + n * (xbar - m) ** 2 + n / beta

    log_lik = 0.5 * n * (e_log_gamma - LOG_2PI) - 0.5 * e_gamma * e_sq
    log_p_mu = 0.5 * (np.log(b0) - LOG_2PI) - 0.5 * b0 * ((m - m0) ** 2 + 1.0 / beta)
    log_p_gamma = (
        a0 * np.log(c0) - special.gammaln(a0) + (a0 - 1.0) * e_log_gamma - c0 * e_gamma
    )
    entropy_mu = 0.5 * (1.0 + LOG_2PI - np.log(beta))
    entropy_gamma = a - np.log(c) + special.gammaln(a) + (1.0 - a) * special.digamma(a)
    return float(np.sum(log_lik + log_p_mu + log_p_gamma + entropy_mu + entropy_gamma))


def fit_skvi(estimator, X, args):
    model = estimator(
        mean_prior=args.m0,
        mean_precision_prior=args.b0,
        precision_shape_prior=args.a0,
        precision_rate_prior=args.c0,
        learning_method="batch",
        max_iter=args.max_iter,
        tol=args.tol,
        random_state=args.seed,
        verbose=0,
    )
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    n_features = X.shape[1]
    result = {
        "m": np.asarray(model.mean_, dtype=float),
        "beta": np.asarray(model.mean_precision_, dtype=float),
        "a": np.broadcast_to(np.asarray(model.precision_shape_, dtype=float), (n_features,)),
        "c": np.broadcast_to(np.asarray(model.precision_rate_, dtype=float), (n_features,)),
        "elbo": float(model.lower_bound_),
        "n_iter": int(model.n_iter_),
    }
    result["converged"] = bool(getattr(model, "converged_", result["n_iter"] < args.max_iter))
    return seconds, result


def fit_bayespy(nodes, X, args):
    GaussianARD, Gamma, VB = nodes
    n_samples, n_features = X.shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        # Gamma(a, b) in BayesPy is shape a and *rate* b, as in the model above.
        mu = GaussianARD(args.m0, args.b0, plates=(n_features,), name="mu")
        gamma = Gamma(args.a0, args.c0, plates=(n_features,), name="gamma")
        # mu and gamma (plates (n_features,)) broadcast over the sample plate.
        Y = GaussianARD(mu, gamma, plates=(n_samples, n_features), name="Y")
        Y.observe(X)
        # Nodes start from their prior; each iteration updates mu, then gamma.
        Q = VB(Y, mu, gamma, tol=args.tol)
        Q.update(mu, gamma, repeat=args.max_iter, tol=args.tol, verbose=False)
        seconds = time.perf_counter() - start
    elbo = float(Q.compute_lowerbound())
    # q(mu): natural parameters [beta m, -beta / 2]; q(gamma): [-c, a]
    beta = -2.0 * np.asarray(mu.phi[1], dtype=float)
    result = {
        "m": np.asarray(mu.phi[0], dtype=float) / beta,
        "beta": beta,
        "a": np.broadcast_to(np.asarray(gamma.phi[1], dtype=float), (n_features,)),
        "c": -np.broadcast_to(np.asarray(gamma.phi[0], dtype=float), (n_features,)),
        "elbo": elbo,
        "n_iter": int(Q.iter),
        "converged": bool(Q.converged),
        "warnings": [str(w.message) for w in caught],
    }
    return seconds, result


def rel(x, ref):
    return abs(x - ref) / abs(ref)


def main(argv=None):
    args = parse_args(argv)
    skvi, estimator, bayespy, nodes = import_libraries()

    X, _, _ = make_data(args.n_samples, args.n_features, args.seed)

    skvi_times, bayespy_times = [], []
    skvi_res = bayespy_res = None
    # Alternate the libraries so that drifts of the machine hit both alike.
    for _ in range(args.repeats):
        seconds, skvi_res = fit_skvi(estimator, X, args)
        skvi_times.append(seconds)
        seconds, bayespy_res = fit_bayespy(nodes, X, args)
        bayespy_times.append(seconds)

    prior = (args.m0, args.b0, args.a0, args.c0)
    cf_skvi = closed_form_elbo(
        X, skvi_res["m"], skvi_res["beta"], skvi_res["a"], skvi_res["c"], *prior
    )
    cf_bayespy = closed_form_elbo(
        X, bayespy_res["m"], bayespy_res["beta"], bayespy_res["a"], bayespy_res["c"], *prior
    )

    ref = bayespy_res["elbo"]
    elbo_rel = rel(skvi_res["elbo"], ref)
    mean_diff = np.max(np.abs(skvi_res["m"] - bayespy_res["m"]))
    e_gamma_skvi = skvi_res["a"] / skvi_res["c"]
    e_gamma_bayespy = bayespy_res["a"] / bayespy_res["c"]
    gamma_diff = np.max(np.abs(e_gamma_skvi - e_gamma_bayespy))
    gamma_rel = np.max(np.abs(e_gamma_skvi - e_gamma_bayespy) / np.abs(e_gamma_bayespy))

    best_s, best_b = min(skvi_times), min(bayespy_times)
    med_s, med_b = statistics.median(skvi_times), statistics.median(bayespy_times)

    def yes(flag):
        return "yes" if flag else "NO"

    print("Gaussian-Gamma mean-field VB, batch VMP: skvi vs BayesPy")
    print(
        f"  data     n_samples={args.n_samples:,}  n_features={args.n_features}  "
        f"seed={args.seed}  ({X.nbytes / 2**20:.1f} MiB float64)"
    )
    print(
        f"  priors   m0={args.m0:g}  b0={args.b0:g}  a0={args.a0:g}  c0={args.c0:g} (rate)"
    )
    print(f"  stop     relative ELBO change < {args.tol:g}, max_iter={args.max_iter}")
    print(
        f"  versions skvi {skvi.__version__}, bayespy {bayespy.__version__}, "
        f"numpy {np.__version__}, python {platform.python_version()}"
    )
    print()
    print(f"Wall time to convergence ({args.repeats} repeat{'s' if args.repeats > 1 else ''})")
    print(f"  {'library':<10}{'best [s]':>12}{'median [s]':>14}{'iterations':>13}{'converged':>12}")
    for name, times, res in (
        ("skvi", skvi_times, skvi_res),
        ("bayespy", bayespy_times, bayespy_res),
    ):
        print(
            f"  {name:<10}{min(times):>12.4f}{statistics.median(times):>14.4f}"
            f"{res['n_iter']:>13d}{yes(res['converged']):>12}"
        )
    print(
        f"  speed-up bayespy/skvi: {best_b / best_s:.2f}x (best), "
        f"{med_b / med_s:.2f}x (median)"
    )
    print()
    print("Evidence lower bound (full ELBO, summed over features)")
    print(f"  {'source':<34}{'ELBO':>24}{'rel. diff to bayespy':>23}")
    rows = (
        ("skvi  lower_bound_", skvi_res["elbo"]),
        ("bayespy  compute_lowerbound()", ref),
        ("closed form at skvi posterior", cf_skvi),
        ("closed form at bayespy posterior", cf_bayespy),
    )
    for name, value in rows:
        print(f"  {name:<34}{value:>24.12e}{rel(value, ref):>23.3e}")
    print(
        f"  skvi lower_bound_ vs closed form at skvi posterior: "
        f"{rel(skvi_res['elbo'], cf_skvi):.3e} relative"
    )
    print()
    print("Posterior agreement, skvi vs bayespy")
    print(f"  max |E[mu] difference|     {mean_diff:.3e}")
    print(f"  max |E[gamma] difference|  {gamma_diff:.3e}  ({gamma_rel:.3e} relative)")
    verdict = "PASS" if elbo_rel <= 1e-6 else "FAIL"
    print(f"  ELBO agreement within 1e-6 relative: {verdict} ({elbo_rel:.3e})")
    if bayespy_res["warnings"]:
        print()
        print(f"BayesPy warned {len(bayespy_res['warnings'])} time(s) in its last fit, first:")
        print(f"  {bayespy_res['warnings'][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
