"""Paquet's Figure 2: Alg. 1 on MovieLens 100k diverges for small C, and step safety.

Reproduces Figure 2 of U. Paquet, "On the Convergence of Stochastic
Variational Inference in Bayesian Networks" (section 3): the evidence lower
bound (ELBO) of a Gaussian bilinear matrix factorization,
``r_mn ~ N(u_m . v_n, 1)`` with ``N(0, 1)`` priors on every entry of
``u_m`` and ``v_n``, ``K = 5`` and a fully factorised Gaussian posterior,
against the number of ratings accessed (log x-axis).  skvi's model also
has the global mean and the user and item biases (one more dimension per
node); ``noise_precision=1`` and ``factor_precision=1`` fix the rest as in
the paper.  Each iteration of
Paquet's Alg. 1 updates every user and every item from ``C`` of its own
ratings (eq. 6-7), for ``C`` in 1, 2, 5, 10, 20, with
``rho_t = t ** -0.6`` starting at ``rho_1 = 1``; option (a) (each group of
factors from the groups already updated, ``update_order='sequential'``) is
the left column and option (b) (every target from one snapshot,
``update_order='joint'``) the right one.  Full batch VB (coordinate ascent,
which reads every rating twice per iteration: users, then items) is the
black reference line.

The figure has a second row that Paquet's has not: the top row runs with
``step_safety=False``, the plain algorithm of the paper, whose small-C runs
overshoot with steps this large: the bound dips far below its start and, for
option (b) with ``C = 1``, "diverges" (it falls by eight orders of magnitude
and never comes back; the paper sees this for option (a) too, skvi's run of
option (a) dips but recovers); the bottom row runs the same steps with
skvi's default ``step_safety=True``, which rejects a step that would make a
factor invalid or overshoot, halves ``rho`` and retries, so every run
recovers.  The ELBO is the exact full-data bound after every Alg. 1
iteration (:class:`skvi.SVIMatrixFactorization` with
``children_per_node=C``, ``lower_bounds_``).  Diverged values would squash
the panels, so the y-axis is linear down to a floor and every value below it
(or not finite) is drawn on the floor, in the shaded band.

The script also prints, for every (step safety, option, C), the final and the
smallest ELBO along the run and the number of rejected steps.

Data.  MovieLens 100k, read by :func:`skvi.datasets.fetch_movielens` (the
ratings of ``u.data``, in file order; all 100,000 are used unless
``--max-ratings`` says otherwise): from ``movielens-100k/`` in
``skvi.datasets.get_data_home()`` (``$SKVI_DATA``, else ``../shared/data``
beside a checkout, else ``~/skvi_data``), or from ``DATA``, the release's
folder (the one with ``u.data``) or the one holding ``movielens-100k/``.
Nothing is copied, and nothing downloaded unless ``--download`` is given (it
downloads GroupLens's ``ml-100k.zip`` into ``movielens-100k/`` there).

Run::

    python examples/paquet_figure2.py [DATA] [--iterations T]
                                      [--batch-iterations TB]
                                      [--max-ratings N] [--out PATH]
                                      [--download]

``--max-ratings N`` uses only the first ``N`` lines of ``u.data`` (default:
all); ``--iterations 3 --batch-iterations 3 --max-ratings 20000 --out ''``
is a check that runs in seconds.

The figure (default ``paquet_figure2.png`` in the current directory;
``--out ''`` for none) needs matplotlib (``pip install matplotlib``); without
it the script prints a note and the table.  The defaults (60 Alg. 1
iterations for each of the 20 runs) take about 2-2.5 minutes on two cores.
"""

import argparse
import math
import pathlib
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skvi import SVIMatrixFactorization
from skvi.datasets import DataNotFoundError, fetch_movielens, get_data_home

CHILDREN = [1, 2, 5, 10, 20]  # Paquet's C: ratings per user and item per step
ORDERS = [("sequential", "option (a)"), ("joint", "option (b)")]
SAFETY = [False, True]
SEED = 0
# Paquet's model: K = 5, a fully factorised q, tau = 1 and N(0, 1) priors.
MODEL = dict(n_components=5, covariance="diagonal", noise_precision=1.0,
             factor_precision=1.0, random_state=SEED)


def _load_ratings(folder=None, max_ratings=None, download=False):
    """Return the (user, item) pairs and ratings of MovieLens 100k, and its folder.

    Only the first ``max_ratings`` ratings of ``u.data`` when it is not None.
    """
    try:
        ml = fetch_movielens("100k", data_home=folder, download_if_missing=download)
    except DataNotFoundError as exc:
        raise SystemExit(
            f"error: {exc}\nPass the MovieLens 100k folder (the one with u.data) as "
            "the first argument, e.g. "
            "'python examples/paquet_figure2.py /path/to/movielens-100k', or "
            "set SKVI_DATA to the folder that holds movielens-100k/ "
            f"(now {get_data_home()}), or add --download."
        ) from None
    X, y = ml.data[:max_ratings], ml.target[:max_ratings]
    return X, y, pathlib.Path(ml.filenames[0]).parent


def _fit(X, y, **params):
    """Fit one model; return it and the seconds it took."""
    t = time.perf_counter()
    with warnings.catch_warnings():
        # With step safety on, the small-C runs have steps rejected, which
        # skvi reports with a ConvergenceWarning; here the rejections are
        # the point of the experiment and are counted in the table instead.
        # (tol=0 runs every iteration, so no "did not converge" either.)
        warnings.simplefilter("ignore", ConvergenceWarning)
        # The diverging runs (step safety off) overflow on purpose.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            model = SVIMatrixFactorization(**MODEL, **params).fit(X, y)
    return model, time.perf_counter() - t


def _accessed_per_iteration(model, C):
    """Ratings that one Alg. 1 iteration reads: up to C per user and per item."""
    return int(np.minimum(C, model.user_counts_).sum()
               + np.minimum(C, model.item_counts_).sum())


def _floor(runs, batch):
    """The y floor: just under the dips of the runs that recover.

    A run counts as diverged when it becomes non-finite or falls more than
    100 times the batch VB gain (last minus first batch ELBO) below the first
    batch ELBO; the floor is 8% of the panel under the lowest value of the
    other runs, rounded down to a multiple of 50,000.
    """
    gain = max(batch[-1] - batch[0], 1.0)
    lows = [r["bounds"].min() for r in runs.values()
            if np.all(np.isfinite(r["bounds"]))
            and r["bounds"].min() > batch[0] - 100 * gain]
    low = min(lows + [batch[0] - 10 * gain])
    low -= 0.08 * (batch[-1] - low)
    return -50_000 * math.ceil(-low / 50_000)


def _plot(runs, batch, n_ratings, path, floor):
    """Save the 2 x 2 figure to ``path``; return False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(CHILDREN)))
    top = max(max(np.max(batch), *(np.nanmax(np.where(np.isfinite(r["bounds"]),
                                                      r["bounds"], -np.inf))
                                   for r in runs.values())), floor)
    top += 0.03 * (top - floor)
    band = 0.025 * (top - floor)
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharex=True, sharey=True)
    batch_x = 2 * n_ratings * np.arange(1, len(batch) + 1)
    for row, safety in enumerate(SAFETY):
        for col, (order, option) in enumerate(ORDERS):
            ax = axes[row, col]
            ax.axhspan(floor - band, floor, color="0.85", zorder=0)
            for C, color in zip(CHILDREN, colors):
                run = runs[safety, order, C]
                b = run["bounds"]
                clipped = ~np.isfinite(b) | (b < floor)
                shown = np.where(clipped, floor, b)
                ax.plot(run["x"], shown, color=color, lw=1.6, label=f"C = {C}")
                if clipped.any():
                    ax.plot(run["x"][clipped], shown[clipped], ls="none",
                            marker="v", ms=4, color=color)
                    finite = b[np.isfinite(b)]
                    low = (f"{finite.min():.1e}" if finite.size == b.size
                           else "non-finite")
                    first = np.flatnonzero(clipped)[0]
                    ax.annotate(f"C = {C} falls off the axis (ELBO down to {low})",
                                (run["x"][first], floor), xytext=(4, 8),
                                textcoords="offset points", color=color, fontsize=9)
            ax.plot(batch_x, batch, color="black", lw=2.0, label="full batch VB")
            ax.set_xscale("log")
            ax.set_ylim(floor - band, top)
            ax.yaxis.set_major_formatter(
                matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
            ax.grid(alpha=0.3, which="both")
            ax.set_title(f"{option} (update_order='{order}'), "
                         f"step safety {'ON' if safety else 'OFF'}", fontsize=11)
            if row == 1:
                ax.set_xlabel("ratings accessed")
            if col == 0:
                ax.set_ylabel("ELBO" + (" (paper: no step safety)" if not safety
                                        else " (skvi default)"))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.85"))
    labels.append(f"ELBO below {floor:,.0f} or non-finite: clipped, drawn as \u25bc")
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=10,
               frameon=False)
    fig.suptitle(
        "Paquet (2015), Fig. 2: Alg. 1 on MovieLens 100k, K = 5, "
        r"$\rho_t = t^{-0.6}$, C children per node"
        f"\nELBO axis clipped at {floor:,.0f}; top row: step safety off "
        "(divergence), bottom row: skvi's step safety on (recovery)",
        fontsize=12,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _fmt(value):
    return f"{value:14.6g}" if np.isfinite(value) else f"{value!s:>14}"


def main(argv=None):
    """Run Alg. 1 for every (step safety, option, C) and full batch VB.

    Parameters
    ----------
    argv : list of str or None, default=None
        Command-line arguments (None reads ``sys.argv``); see the module
        docstring.

    Returns
    -------
    results : dict
        ``'runs'``: for each ``(step_safety, update_order, C)`` a dict with
        ``'x'`` (cumulative ratings accessed), ``'bounds'`` (ELBO after
        every iteration) and ``'rejected'``; ``'batch'``: the batch VB ELBOs.
    """
    parser = argparse.ArgumentParser(
        description="Paquet's Fig. 2 with skvi: Alg. 1, options (a) and (b), "
                    "with and without step safety."
    )
    parser.add_argument("data", nargs="?", default=None,
                        help="MovieLens 100k folder with u.data, or the one holding "
                             "movielens-100k/ (default: skvi.datasets.get_data_home())")
    parser.add_argument("--download", action="store_true",
                        help="download MovieLens 100k from GroupLens when it is not found")
    parser.add_argument("--iterations", type=int, default=60,
                        help="Alg. 1 iterations per run (default: 60)")
    parser.add_argument("--batch-iterations", type=int, default=None,
                        help="full batch VB iterations (default: enough to read "
                             "as many ratings as the longest Alg. 1 run)")
    parser.add_argument("--max-ratings", type=int, default=None,
                        help="use only the first N ratings of u.data "
                             "(default: all 100,000)")
    parser.add_argument("--out", default="paquet_figure2.png",
                        help="PNG file for the figure ('' for none)")
    args = parser.parse_args(argv)
    for name in ("iterations", "batch_iterations", "max_ratings"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    t0 = time.perf_counter()
    X, y, folder = _load_ratings(args.data or None, args.max_ratings, args.download)
    n = X.shape[0]
    first = "" if args.max_ratings is None else f" (its first {args.max_ratings})"
    print(f"MovieLens from {folder}: {n} ratings{first}, {np.unique(X[:, 0]).size} "
          f"users, {np.unique(X[:, 1]).size} items; {args.iterations} Alg. 1 "
          f"iterations per run")

    runs = {}
    for safety in SAFETY:
        for order, option in ORDERS:
            for C in CHILDREN:
                model, seconds = _fit(
                    X, y, children_per_node=C, learning_method="online",
                    learning_offset=0.0, learning_decay=0.6,  # rho_t = t^-0.6
                    max_iter=args.iterations, tol=0.0, step_safety=safety,
                    update_order=order,
                )
                bounds = np.asarray(model.lower_bounds_, dtype=float)
                per_iter = _accessed_per_iteration(model, C)
                runs[safety, order, C] = dict(
                    x=per_iter * np.arange(1, bounds.size + 1), bounds=bounds,
                    rejected=model.n_rejected_steps_,
                )
                print(f"  step safety {'on ' if safety else 'off'} {option} "
                      f"C = {C:2d}: {per_iter} ratings per iteration, "
                      f"{seconds:.1f} s")

    longest = max(r["x"][-1] for r in runs.values())
    n_batch = args.batch_iterations or max(2, math.ceil(longest / (2 * n)))
    batch_model, seconds = _fit(X, y, learning_method="batch",
                                children_per_node=None, max_iter=n_batch, tol=0.0)
    batch = np.asarray(batch_model.lower_bounds_, dtype=float)
    print(f"  full batch VB: {n_batch} iterations of {2 * n} ratings, {seconds:.1f} s")

    print(f"\nELBO after {args.iterations} Alg. 1 iterations "
          "(min: the lowest value along the run)")
    print(f"{'step safety':>11} {'option':>16} {'C':>3} {'final ELBO':>14} "
          f"{'min ELBO':>14} {'rejected':>9}")
    for (safety, order, C), run in runs.items():
        b = run["bounds"]
        low = -np.inf if not np.all(np.isfinite(b)) else b.min()
        option = f"({dict(ORDERS)[order][-2]}) {order}"
        print(f"{'on' if safety else 'off':>11} {option:>16} "
              f"{C:3d} {_fmt(b[-1])} {_fmt(low)} {run['rejected']:9d}")
    print(f"{'full batch VB':>32} {_fmt(batch[-1])} {_fmt(batch.min())} "
          f"{'':>9}  ({n_batch} iterations)")

    if args.out:
        floor = _floor(runs, batch)
        if _plot(runs, batch, n, args.out, floor):
            print(f"\nfigure saved to {args.out} (ELBO axis clipped at {floor:,.0f})")
        else:
            print("\nmatplotlib is not installed: no figure (pip install matplotlib)")
    print(f"total time {time.perf_counter() - t0:.1f} s")
    return dict(runs=runs, batch=batch)


if __name__ == "__main__":
    main()
