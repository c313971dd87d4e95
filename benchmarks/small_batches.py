"""What a step costs against its batch size: the GLMs' online steps from 1 row to 2,000.

Each estimator takes one pass (``max_iter=1, tol=0``) over simulated data
(10 standard normal features, Poisson counts with a log-normal random
effect, their indicator ``y > 2`` for the logistic model) at each batch size;
the table gives the median time per step over ``--repeats`` passes, its
split by phase from ``history_`` (local step, global step, step safety,
everything else), and the time per row.  A step whose cost is proportional
to its batch has a time per row that does not grow as the batch shrinks
beyond the fixed cost of a global step (about 0.1 ms).

    python benchmarks/small_batches.py [--repeats 3] [--rows 2000]
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 5, 100, 2000])
    return p.parse_args(argv)


def data(n):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n, 10))
    y = rng.poisson(np.exp(0.5 + X @ rng.normal(0.0, 0.3, 10) + rng.normal(0.0, 0.5, n)))
    return X, y


def main(argv=None):
    args = parse_args(argv)
    from skvi import (SVILogisticRegression, SVIOverdispersedPoissonRegression,
                      SVIPoissonRegression)

    X, y = data(args.rows)
    models = [
        ("Poisson", SVIPoissonRegression, {}, X, y),
        ("Poisson, features x 1e8", SVIPoissonRegression, {}, X * 1e8, y),
        ("logistic", SVILogisticRegression, {}, X, (y > 2).astype(int)),
        ("overdispersed Poisson", SVIOverdispersedPoissonRegression, {}, X, y),
        ("overdispersed Poisson, S-DSVI", SVIOverdispersedPoissonRegression,
         {"algorithm": "s-dsvi"}, X, y),
    ]
    rows = []
    for name, cls, extra, Xm, ym in models:
        for size in args.batch_sizes:
            rows_of_pass = Xm if size > 5 else Xm[:500]  # small batches: 500 rows a pass
            targets = ym[: rows_of_pass.shape[0]]
            per_step, phases = [], []
            for _ in range(args.repeats):
                est = cls(batch_size=size, max_iter=1, tol=0, random_state=0, **extra)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    est.fit(rows_of_pass, targets)
                    seconds = time.perf_counter() - start
                steps = est.n_batch_iter_
                per_step.append(seconds / steps)
                h = est.history_
                phases.append([float(np.sum(h[k])) / steps
                               for k in ("local_time", "global_time", "safety_time")])
            ms = statistics.median(per_step) * 1e3
            local, glob, safety = (1e3 * statistics.median(p) for p in zip(*phases))
            rows.append([name, str(size), "%.3f" % ms, "%.3f" % local, "%.3f" % glob,
                         "%.3f" % safety, "%.3f" % max(ms - local - glob - safety, 0.0),
                         "%.1f" % (1e3 * ms / size)])
            print("  ".join(rows[-1]), flush=True)
    print()
    print(format_table(["model", "batch", "ms/step", "local", "global", "safety", "other",
                        "us/row"], rows, [False] + [True] * 7))


if __name__ == "__main__":
    main()
